//! Brute-force nearest neighbours ([`ArrayOp::Nearest`](crate::ArrayOp::Nearest) and
//! [`ArrayOp::NearestMerge`](crate::ArrayOp::NearestMerge)).
//!
//! A block of queries against a block of rows is one matrix product (faer), which screens:
//! `|q|² + |x|² − 2 q·x` approximates the squared distance. Each query keeps its `k` best
//! in a sorted list; a group of the product's row is looked at only where its least value
//! comes near the list's worst (a lane-wise test), and a row that does has its distance
//! summed term by term, in column order. The lists hold only such sums, which do not
//! depend on where a row falls in its chunk or block: the neighbours and their distances
//! are the same under any chunking, and free of the product's cancellation.

use super::vmath::{level, Level};
use crate::{Buffer, ChunkData, DType, HostTensor, KernelError};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use std::borrow::Cow;
use std::sync::Arc;

/// Queries per product block.
const QUERY_BLOCK: usize = 256;
/// Rows per product block: with [`QUERY_BLOCK`], a 2 MiB product.
const ROW_BLOCK: usize = 1024;
/// Distances tested together before any is offered to a query's list.
const LANES: usize = 8;
const GROUP: usize = 4 * LANES;

/// The product's distances are within `SLACK · (columns + 4) · (|q|² + |x|²)` of the
/// distances summed term by term (four times the rounding bound of both, ε for each term).
const SLACK: f64 = 4.0 * f64::EPSILON;

/// No row (a query with fewer than `k` rows at a finite distance).
const NO_ROW: i64 = -1;

/// `(rows, columns)` of a matrix, or BadInput naming `what`.
pub(super) fn matrix(t: &HostTensor, what: &str) -> Result<(usize, usize), KernelError> {
    match *t.shape() {
        [rows, cols] => Ok((rows, cols)),
        ref s => Err(KernelError::BadInput(format!(
            "{what} must be a matrix, got shape {s:?}"
        ))),
    }
}

/// The values of `t` as `float64` (borrowed when they are).
pub(super) fn values(t: &HostTensor) -> Result<Cow<'_, [f64]>, KernelError> {
    match t.as_slice::<f64>() {
        Some(v) => Ok(Cow::Borrowed(v)),
        None => match t.data().cast(DType::F64) {
            Buffer::F64(v) => Ok(Cow::Owned(v)),
            other => Err(KernelError::BadInput(format!(
                "{} values read as float64 gave {}",
                t.dtype(),
                other.dtype()
            ))),
        },
    }
}

/// The squared norm of each `cols`-long row of `v`, summed left to right.
fn square_norms(v: &[f64], cols: usize) -> Vec<f64> {
    if cols == 0 {
        return vec![0.0; v.len()];
    }
    v.chunks_exact(cols)
        .map(|r| r.iter().fold(0.0, |s, &a| s + a * a))
        .collect()
}

/// The `k` best (distance, row) pairs of each query so far, ascending by distance then row.
struct Best {
    k: usize,
    dist: Vec<f64>,
    row: Vec<i64>,
}

impl Best {
    fn new(queries: usize, k: usize) -> Best {
        Best {
            k,
            dist: vec![f64::INFINITY; queries * k],
            row: vec![NO_ROW; queries * k],
        }
    }

    /// The distance a pair must beat to enter query `q`'s list.
    #[inline]
    fn worst(&self, q: usize) -> f64 {
        match self.k {
            0 => f64::NEG_INFINITY,
            k => self.dist[q * k + k - 1],
        }
    }

    /// Puts (`d`, `r`) into query `q`'s list, which it beats (`d` below the worst).
    fn insert(&mut self, q: usize, d: f64, r: i64) {
        let (dist, row) = (
            &mut self.dist[q * self.k..(q + 1) * self.k],
            &mut self.row[q * self.k..(q + 1) * self.k],
        );
        let at = dist.partition_point(|&e| e <= d);
        dist.copy_within(at..self.k - 1, at + 1);
        row.copy_within(at..self.k - 1, at + 1);
        dist[at] = d;
        row[at] = r;
    }

    /// Offers `query` (number `q`, squared norm `q_norm`) the rows `first..` of `rows`
    /// (`cols` values each, squared norms `norms`), whose `−2 q·x` from the product are
    /// `partial` and whose least `|x|² − 2 q·x` per [`GROUP`] are `minima`. The product
    /// only screens: its rounding depends on where a row sits in its block, so a row within
    /// `slack` of the list's worst has its distance summed again, term by term, and enters
    /// on that distance where it is strictly nearer than the worst (among equal distances
    /// the lower row stays, rows coming in order).
    #[allow(clippy::too_many_arguments)]
    fn offer(
        &mut self,
        q: usize,
        query: &[f64],
        q_norm: f64,
        (partial, norms, minima): (&[f64], &[f64], &[f64]),
        rows: &[f64],
        first: i64,
        slack: f64,
    ) {
        let cols = query.len();
        for (g, &least) in minima.iter().enumerate() {
            if q_norm + least >= self.worst(q) + slack {
                continue;
            }
            let span = g * GROUP..((g + 1) * GROUP).min(partial.len());
            for i in span {
                if q_norm + norms[i] + partial[i] >= self.worst(q) + slack {
                    continue;
                }
                let d = squared_distance(query, &rows[i * cols..(i + 1) * cols]);
                if d < self.worst(q) {
                    self.insert(q, d, first + i as i64);
                }
            }
        }
    }

    fn into_parts(self, queries: usize) -> Result<ChunkData, KernelError> {
        let shape = vec![queries, self.k];
        Ok(ChunkData::Parts(vec![
            HostTensor::new(shape.clone(), Buffer::F64(self.dist))?,
            HostTensor::new(shape, Buffer::I64(self.row))?,
        ]))
    }
}

/// [`ArrayOp::Nearest`](crate::ArrayOp::Nearest): the `k` rows of `x` (numbered from
/// `offset`) nearest to each row of `queries`.
pub(super) fn nearest(
    x: &HostTensor,
    queries: &HostTensor,
    k: usize,
    offset: u64,
) -> Result<ChunkData, KernelError> {
    let (n, cols) = matrix(x, "nearest neighbours: the rows")?;
    let (m, qcols) = matrix(queries, "nearest neighbours: the queries")?;
    if cols != qcols {
        return Err(KernelError::ShapeMismatch(format!(
            "nearest neighbours: rows of {cols} columns, queries of {qcols}"
        )));
    }
    let first = i64::try_from(offset)
        .map_err(|_| KernelError::BadInput(format!("nearest neighbours: row {offset}")))?;
    let (xs, qs) = (values(x)?, values(queries)?);
    let (x_norms, q_norms) = (square_norms(&xs, cols), square_norms(&qs, cols));
    let mut best = Best::new(m, k);
    let mut product = vec![0.0; QUERY_BLOCK * ROW_BLOCK];
    let mut minima = Vec::with_capacity(ROW_BLOCK.div_ceil(GROUP));
    for r0 in (0..n).step_by(ROW_BLOCK) {
        let rows = (n - r0).min(ROW_BLOCK);
        let block = MatRef::from_row_major_slice(&xs[r0 * cols..(r0 + rows) * cols], rows, cols);
        let norms = &x_norms[r0..r0 + rows];
        let most = norms.iter().fold(0.0, |a: f64, &b| a.max(b));
        for q0 in (0..m).step_by(QUERY_BLOCK) {
            let qn = (m - q0).min(QUERY_BLOCK);
            let out = &mut product[..qn * rows];
            if cols == 0 {
                out.fill(0.0);
            } else {
                let qb = MatRef::from_row_major_slice(&qs[q0 * cols..(q0 + qn) * cols], qn, cols);
                let dst = MatMut::from_row_major_slice_mut(out, qn, rows);
                matmul(dst, Accum::Replace, qb, block.transpose(), -2.0, Par::Seq);
            }
            let block_rows = &xs[r0 * cols..(r0 + rows) * cols];
            for (i, line) in (q0..).zip(out.chunks_exact(rows)) {
                group_minima(line, norms, &mut minima);
                let query = &qs[i * cols..(i + 1) * cols];
                let slack = SLACK * (cols + 4) as f64 * (q_norms[i] + most);
                let screened = (line, norms, minima.as_slice());
                best.offer(
                    i,
                    query,
                    q_norms[i],
                    screened,
                    block_rows,
                    first + r0 as i64,
                    slack,
                );
            }
        }
    }
    best.into_parts(m)
}

/// The least `partial[i] + norms[i]` of each [`GROUP`] of positions, into `minima`: a
/// lane-wise minimum, compiled for the best vector level the CPU has.
fn group_minima(partial: &[f64], norms: &[f64], minima: &mut Vec<f64>) {
    minima.clear();
    match level() {
        // SAFETY: these levels are only used when the CPU supports them.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { group_minima_avx512(partial, norms, minima) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { group_minima_avx2(partial, norms, minima) },
        Level::Scalar => group_minima_generic(partial, norms, minima),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn group_minima_avx512(partial: &[f64], norms: &[f64], minima: &mut Vec<f64>) {
    group_minima_generic(partial, norms, minima);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn group_minima_avx2(partial: &[f64], norms: &[f64], minima: &mut Vec<f64>) {
    group_minima_generic(partial, norms, minima);
}

#[inline(always)]
fn group_minima_generic(partial: &[f64], norms: &[f64], minima: &mut Vec<f64>) {
    let least = |a: f64, b: f64| if b < a { b } else { a };
    for (p, n) in partial.chunks(GROUP).zip(norms.chunks(GROUP)) {
        let mut low = [f64::INFINITY; LANES];
        let (pl, nl) = (p.chunks_exact(LANES), n.chunks_exact(LANES));
        let tail = pl.remainder().iter().zip(nl.remainder());
        let tail = tail.fold(f64::INFINITY, |m, (&a, &b)| least(m, a + b));
        for (pv, nv) in pl.zip(nl) {
            for ((l, &a), &b) in low.iter_mut().zip(pv).zip(nv) {
                *l = least(*l, a + b);
            }
        }
        minima.push(low.into_iter().fold(tail, least));
    }
}

/// The (squared distances, row numbers) of an [`ArrayOp::Nearest`](crate::ArrayOp::Nearest)
/// result, checked to be `queries × k`.
fn parts(chunk: &ChunkData, k: usize) -> Result<(&[f64], &[i64], usize), KernelError> {
    let bad = || {
        KernelError::BadInput(format!(
            "nearest neighbours: a merge input is not a {k}-neighbour result"
        ))
    };
    let ChunkData::Parts(p) = chunk else {
        return Err(bad());
    };
    match p.as_slice() {
        [d, r] if d.shape() == r.shape() && d.shape().get(1) == Some(&k) => Ok((
            d.as_slice::<f64>().ok_or_else(bad)?,
            r.as_slice::<i64>().ok_or_else(bad)?,
            d.shape()[0],
        )),
        _ => Err(bad()),
    }
}

/// [`ArrayOp::NearestMerge`](crate::ArrayOp::NearestMerge): the `k` nearest of `inputs`.
pub(super) fn merge(inputs: &[Arc<ChunkData>], k: usize) -> Result<ChunkData, KernelError> {
    let all = inputs
        .iter()
        .map(|c| parts(c, k))
        .collect::<Result<Vec<_>, _>>()?;
    let m = all.first().map_or(0, |p| p.2);
    if all.iter().any(|p| p.2 != m) {
        return Err(KernelError::ShapeMismatch(
            "nearest neighbours: merge inputs for different numbers of queries".into(),
        ));
    }
    let mut best = Best::new(m, k);
    let mut pool: Vec<(f64, i64)> = Vec::with_capacity(k * all.len());
    for q in 0..m {
        pool.clear();
        for (dist, row, _) in &all {
            let span = q * k..(q + 1) * k;
            pool.extend(
                dist[span.clone()]
                    .iter()
                    .copied()
                    .zip(row[span].iter().copied()),
            );
        }
        // By distance, then row; a missing row (-1, at +inf) after any real one.
        pool.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then((a.1 == NO_ROW).cmp(&(b.1 == NO_ROW)))
                .then(a.1.cmp(&b.1))
        });
        for (slot, &(d, r)) in pool.iter().take(k).enumerate() {
            best.dist[q * k + slot] = d;
            best.row[q * k + slot] = r;
        }
    }
    best.into_parts(m)
}

/// `Σ (a − b)²` term by term, in column order.
#[inline(always)]
fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0, |s, (&x, &y)| s + (x - y) * (x - y))
}

#[cfg(test)]
pub(crate) mod tests;
