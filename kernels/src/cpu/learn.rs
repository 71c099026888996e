//! The passes of the learn estimators that are sums over rows: k-means' assignment to the
//! nearest centre ([`ArrayOp::ClusterStats`](crate::ArrayOp::ClusterStats)), logistic
//! regression's gradient and Hessian
//! ([`ArrayOp::LogisticTerms`](crate::ArrayOp::LogisticTerms)), and the merge of such sums
//! ([`ArrayOp::SumParts`](crate::ArrayOp::SumParts)).

use super::nearest::{matrix, values};
use super::vmath::{level, Level};
use crate::{Buffer, ChunkData, HostTensor, KernelError};
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, MatMut, MatRef, Par};
use std::sync::Arc;

/// Centres whose distances to a row run side by side, one vector of running sums.
const SIDE: usize = 8;

/// [`ArrayOp::ClusterStats`](crate::ArrayOp::ClusterStats): each row of `x` assigned to
/// its nearest row of `centres`; Parts [per-centre row sums, counts, total squared
/// distance].
pub(super) fn cluster_stats(
    x: &HostTensor,
    centres: &HostTensor,
) -> Result<ChunkData, KernelError> {
    let (_, cols) = matrix(x, "cluster assignment: the rows")?;
    let (k, ccols) = matrix(centres, "cluster assignment: the centres")?;
    if cols != ccols || k == 0 || cols == 0 {
        return Err(KernelError::ShapeMismatch(format!(
            "cluster assignment: rows of {cols} columns, {k} centres of {ccols}"
        )));
    }
    let (xs, cs) = (values(x)?, values(centres)?);
    let (sums, counts, cost) = match level() {
        // SAFETY: these levels are only used when the CPU supports them.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { assign_avx512(&xs, &cs, k, cols) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { assign_avx2(&xs, &cs, k, cols) },
        Level::Scalar => assign(&xs, &cs, k, cols),
    };
    stats_parts(k, cols, sums, counts, cost)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn assign_avx512(xs: &[f64], cs: &[f64], k: usize, cols: usize) -> (Vec<f64>, Vec<f64>, f64) {
    assign(xs, cs, k, cols)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn assign_avx2(xs: &[f64], cs: &[f64], k: usize, cols: usize) -> (Vec<f64>, Vec<f64>, f64) {
    assign(xs, cs, k, cols)
}

/// [`cluster_stats`] of the rows `xs` against the `k` centres `cs` (`cols` columns each):
/// (sums, counts, cost). The distances to [`SIDE`] centres at a time run side by side
/// (one vector of running sums, each still summed in column order), then the nearest is
/// picked in centre order.
#[inline(always)]
fn assign(xs: &[f64], cs: &[f64], k: usize, cols: usize) -> (Vec<f64>, Vec<f64>, f64) {
    let groups = k.div_ceil(SIDE);
    // Per group of centres, column by column, the group's values side by side; NaN pads
    // the last group (never nearer than anything).
    let mut across = vec![f64::NAN; groups * cols * SIDE];
    for (j, centre) in cs.chunks_exact(cols).enumerate() {
        for (c, &v) in centre.iter().enumerate() {
            across[((j / SIDE) * cols + c) * SIDE + j % SIDE] = v;
        }
    }
    let mut sums = vec![0.0; k * cols];
    let mut counts = vec![0.0; k];
    let mut cost = 0.0;
    let mut dist = vec![0.0; groups * SIDE];
    for row in xs.chunks_exact(cols) {
        for (group, out) in across
            .chunks_exact(cols * SIDE)
            .zip(dist.chunks_exact_mut(SIDE))
        {
            let mut acc = [0.0f64; SIDE];
            for (&v, centres) in row.iter().zip(group.chunks_exact(SIDE)) {
                for (a, &c) in acc.iter_mut().zip(centres) {
                    let t = v - c;
                    *a += t * t;
                }
            }
            out.copy_from_slice(&acc);
        }
        let (mut best, mut at) = (dist[0], 0);
        for (j, &d) in dist[..k].iter().enumerate().skip(1) {
            if d < best {
                best = d;
                at = j;
            }
        }
        cost += best;
        counts[at] += 1.0;
        for (s, &v) in sums[at * cols..(at + 1) * cols].iter_mut().zip(row) {
            *s += v;
        }
    }
    (sums, counts, cost)
}

fn stats_parts(
    k: usize,
    cols: usize,
    sums: Vec<f64>,
    counts: Vec<f64>,
    cost: f64,
) -> Result<ChunkData, KernelError> {
    Ok(ChunkData::Parts(vec![
        HostTensor::new(vec![k, cols], Buffer::F64(sums))?,
        HostTensor::new(vec![k], Buffer::F64(counts))?,
        HostTensor::new(vec![1], Buffer::F64(vec![cost]))?,
    ]))
}

/// The rows a block of [`logistic_terms`] takes at a time: its rows scaled by `p (1 − p)`
/// (`LOGISTIC_BLOCK × columns` values) stay in the cache for the Hessian's product.
const LOGISTIC_BLOCK: usize = 256;

/// [`ArrayOp::LogisticTerms`](crate::ArrayOp::LogisticTerms): the gradient and Hessian of
/// the rows `a` with labels `y` at the weights `w` — one per column, or one more for an
/// intercept (the rows then read as if a column of ones followed them).
pub(super) fn logistic_terms(
    a: &HostTensor,
    y: &HostTensor,
    w: &HostTensor,
) -> Result<ChunkData, KernelError> {
    let (n, k) = matrix(a, "logistic regression: the rows")?;
    if y.len() != n || (w.len() != k && w.len() != k + 1) {
        return Err(KernelError::ShapeMismatch(format!(
            "logistic regression: {n} rows of {k} columns, {} labels, {} weights",
            y.len(),
            w.len()
        )));
    }
    let (rows, labels, weights) = (values(a)?, values(y)?, values(w)?);
    // The terms' width: the columns, and the intercept's if there is one.
    let kk = weights.len();
    let (mut gradient, mut hessian) = (vec![0.0; kk], vec![0.0; kk * kk]);
    if n > 0 && k > 0 {
        let mut h = MatMut::from_row_major_slice_mut(&mut hessian, kk, kk);
        let mut g = MatMut::from_column_major_slice_mut(&mut gradient[..k], k, 1);
        let (w, intercept) = (&weights[..k], weights.get(k).copied());
        let w = MatRef::from_column_major_slice(w, k, 1);
        // The intercept's row of the Hessian (`Σ p (1 − p) a` and `Σ p (1 − p)`) and its
        // gradient entry `Σ (p − y)`, summed beside the products.
        let (mut h_intercept, mut g_intercept) = (vec![0.0; kk], 0.0);
        // A block of rows at a time, so that its rows scaled by p (1 − p) stay in the
        // cache for the Hessian's product: per block `z = A w`, the gradient `Aᵀ (p − y)`
        // and the lower half of `Aᵀ diag(p (1 − p)) A` (the Hessian is symmetric).
        let (mut z, mut scaled) = (vec![0.0; LOGISTIC_BLOCK], vec![0.0; LOGISTIC_BLOCK * k]);
        for (block, labels) in rows
            .chunks(LOGISTIC_BLOCK * k)
            .zip(labels.chunks(LOGISTIC_BLOCK))
        {
            let m = labels.len();
            let a = MatRef::from_row_major_slice(block, m, k);
            let zs = MatMut::from_column_major_slice_mut(&mut z[..m], m, 1);
            matmul(zs, Accum::Replace, a, w, 1.0, Par::Seq);
            for ((zi, &label), (row, out)) in z
                .iter_mut()
                .zip(labels)
                .zip(block.chunks_exact(k).zip(scaled.chunks_exact_mut(k)))
            {
                let p = 1.0 / (1.0 + (-(*zi + intercept.unwrap_or(0.0))).exp());
                let s = p * (1.0 - p);
                for (o, &x) in out.iter_mut().zip(row) {
                    *o = s * x;
                }
                // z now holds the residual p − y, the gradient's weights.
                *zi = p - label;
                if intercept.is_some() {
                    h_intercept
                        .iter_mut()
                        .zip(out.iter())
                        .for_each(|(t, v)| *t += v);
                    h_intercept[k] += s;
                    g_intercept += *zi;
                }
            }
            let r = MatRef::from_column_major_slice(&z[..m], m, 1);
            matmul(g.as_mut(), Accum::Add, a.transpose(), r, 1.0, Par::Seq);
            let rhs = MatRef::from_row_major_slice(&scaled[..m * k], m, k);
            triangular::matmul(
                h.as_mut().submatrix_mut(0, 0, k, k),
                BlockStructure::TriangularLower,
                Accum::Add,
                a.transpose(),
                BlockStructure::Rectangular,
                rhs,
                BlockStructure::Rectangular,
                1.0,
                Par::Seq,
            );
        }
        if intercept.is_some() {
            gradient[k] = g_intercept;
            hessian[k * kk..].copy_from_slice(&h_intercept);
        }
        for i in 0..kk {
            for j in 0..i {
                hessian[j * kk + i] = hessian[i * kk + j];
            }
        }
    } else if let [b] = weights[..] {
        // No columns, only the intercept: every row has the same p.
        let p = 1.0 / (1.0 + (-b).exp());
        gradient[0] = labels.iter().map(|&label| p - label).sum();
        hessian[0] = n as f64 * p * (1.0 - p);
    }
    Ok(ChunkData::Parts(vec![
        HostTensor::new(vec![kk], Buffer::F64(gradient))?,
        HostTensor::new(vec![kk, kk], Buffer::F64(hessian))?,
    ]))
}

/// [`ArrayOp::SumParts`](crate::ArrayOp::SumParts): the elementwise sum of `inputs`, each
/// the same number of `float64` parts of equal shapes.
pub(crate) fn sum_parts(inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let parts = |c: &ChunkData| -> Result<Vec<HostTensor>, KernelError> {
        match c {
            ChunkData::Parts(p) if p.iter().all(|t| t.as_slice::<f64>().is_some()) => Ok(p.clone()),
            _ => Err(KernelError::BadInput(
                "sum of parts: an input is not float64 parts".into(),
            )),
        }
    };
    let (first, rest) = inputs
        .split_first()
        .ok_or_else(|| KernelError::BadInput("sum of parts: no input".into()))?;
    let mut total: Vec<(Vec<usize>, Vec<f64>)> = parts(first)?
        .into_iter()
        .map(|t| {
            (
                t.shape().to_vec(),
                t.as_slice::<f64>().unwrap_or_default().to_vec(),
            )
        })
        .collect();
    for other in rest {
        let other = parts(other)?;
        if other.len() != total.len()
            || other
                .iter()
                .zip(&total)
                .any(|(t, (shape, _))| t.shape() != shape)
        {
            return Err(KernelError::ShapeMismatch(
                "sum of parts: inputs of different shapes".into(),
            ));
        }
        for (t, (_, sum)) in other.iter().zip(&mut total) {
            let v = t.as_slice::<f64>().unwrap_or_default();
            sum.iter_mut().zip(v).for_each(|(a, b)| *a += b);
        }
    }
    let summed = total
        .into_iter()
        .map(|(shape, v)| HostTensor::new(shape, Buffer::F64(v)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ChunkData::Parts(summed))
}

#[cfg(test)]
mod tests;
