//! The passes of the learn estimators that are sums over rows: logistic regression's
//! gradient and Hessian ([`ArrayOp::LogisticTerms`](crate::ArrayOp::LogisticTerms)), and
//! the merge of such sums ([`ArrayOp::SumParts`](crate::ArrayOp::SumParts)).

use super::nearest::{matrix, values};
use crate::{Buffer, ChunkData, HostTensor, KernelError};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use std::sync::Arc;

/// [`ArrayOp::LogisticTerms`](crate::ArrayOp::LogisticTerms): the gradient and Hessian of
/// the rows `a` with labels `y` at the weights `w`.
pub(super) fn logistic_terms(
    a: &HostTensor,
    y: &HostTensor,
    w: &HostTensor,
) -> Result<ChunkData, KernelError> {
    let (n, k) = matrix(a, "logistic regression: the rows")?;
    if y.len() != n || w.len() != k {
        return Err(KernelError::ShapeMismatch(format!(
            "logistic regression: {n} rows of {k} columns, {} labels, {} weights",
            y.len(),
            w.len()
        )));
    }
    let (rows, labels, weights) = (values(a)?, values(y)?, values(w)?);
    let mut gradient = vec![0.0; k];
    // Each row scaled by p (1 − p): the Hessian is Aᵀ times them.
    let mut scaled = vec![0.0; n * k];
    for ((row, &label), out) in rows
        .chunks_exact(k.max(1))
        .zip(labels.iter())
        .zip(scaled.chunks_exact_mut(k.max(1)))
    {
        let z = row
            .iter()
            .zip(weights.iter())
            .fold(0.0, |s, (&x, &v)| s + x * v);
        let p = 1.0 / (1.0 + (-z).exp());
        let (r, s) = (p - label, p * (1.0 - p));
        for ((g, o), &x) in gradient.iter_mut().zip(out.iter_mut()).zip(row) {
            *g += r * x;
            *o = s * x;
        }
    }
    let mut hessian = vec![0.0; k * k];
    if n > 0 && k > 0 {
        let lhs = MatRef::from_row_major_slice(&rows, n, k);
        let rhs = MatRef::from_row_major_slice(&scaled, n, k);
        let dst = MatMut::from_row_major_slice_mut(&mut hessian, k, k);
        matmul(dst, Accum::Replace, lhs.transpose(), rhs, 1.0, Par::Seq);
    }
    Ok(ChunkData::Parts(vec![
        HostTensor::new(vec![k], Buffer::F64(gradient))?,
        HostTensor::new(vec![k, k], Buffer::F64(hessian))?,
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
