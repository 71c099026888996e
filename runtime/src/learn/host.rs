//! What the estimators compute in this process: their few random choices, and the small
//! dense systems (`d × d`) their passes return.

use crate::error::{Error, Result};
use crate::session::Session;
use crate::tensor::Tensor;
use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use tessera_kernels::cpu::philox;
use tessera_kernels::{Buffer, DType, HostTensor};

/// The `(rows, columns)` of a matrix `x`; a Shape error naming `what` otherwise.
pub(super) fn matrix_shape(x: &Tensor, what: &str) -> Result<(usize, usize)> {
    match x.shape()?[..] {
        [rows, cols] => Ok((rows, cols)),
        ref other => Err(Error::Shape(format!(
            "{what} must be a matrix, got shape {other:?}"
        ))),
    }
}

/// `x` as `float64`, computed once and kept on `session` for the passes that read it again,
/// unless its chunks already are (persisted or held in memory): a persisted input is not
/// stored a second time, which out of core would double what is spilled.
pub(super) fn kept_f64(x: &Tensor, session: &Session) -> Result<Tensor> {
    let x = x.astype(DType::F64);
    match x.node()?.kind {
        crate::tensor::node::NodeKind::Data(_) => Ok(x),
        _ => x.persist(session),
    }
}

/// `x` computed on `session` as `float64` values (C order).
pub(super) fn fetch(x: &Tensor, session: &Session) -> Result<Vec<f64>> {
    Ok(x.execute(session)?.to_f64_vec())
}

/// A `rows × cols` `float64` host tensor of `values` (C order).
pub(super) fn host_matrix(values: Vec<f64>, rows: usize, cols: usize) -> Result<HostTensor> {
    Ok(HostTensor::new(vec![rows, cols], Buffer::F64(values))?)
}

/// The stream of an estimator's host draws: apart from the streams its tensors draw
/// (`default_rng(seed)` numbers those from 0 up).
const HOST_STREAM: u64 = u64::MAX;

/// Uniform draws in this process from Tessera's counter-based generator: the `i`th draw
/// is element `i` of the seed's host stream, so a fit is reproducible from its seed.
#[derive(Debug)]
pub(super) struct HostRng {
    seed: u64,
    next: u64,
}

impl HostRng {
    pub(super) fn new(seed: u64) -> Self {
        HostRng { seed, next: 0 }
    }

    /// A uniform `float64` in `[0, 1)`.
    pub(super) fn uniform(&mut self) -> f64 {
        let mut out = [0.0];
        philox::uniform_f64(self.seed, HOST_STREAM, 0.0, 1.0, self.next, 1, &mut out);
        self.next += 1;
        out[0]
    }

    /// An index in `0..n` (`n > 0`), uniformly.
    pub(super) fn below(&mut self, n: usize) -> usize {
        ((self.uniform() * n as f64) as usize).min(n - 1)
    }

    /// An index drawn with probability proportional to `weights` (non-negative, with a
    /// positive sum).
    pub(super) fn weighted(&mut self, weights: &[f64], total: f64) -> usize {
        let target = self.uniform() * total;
        let mut acc = 0.0;
        for (i, &w) in weights.iter().enumerate() {
            acc += w;
            if target < acc {
                return i;
            }
        }
        // Rounding left the target past the running sum: the last index of positive weight.
        weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
    }

    /// `count` distinct indices of `0..n` (`count <= n`), ascending (Floyd's sampling).
    pub(super) fn distinct(&mut self, n: usize, count: usize) -> Vec<usize> {
        let mut chosen = std::collections::BTreeSet::new();
        for j in n - count..n {
            let t = self.below(j + 1);
            if !chosen.insert(t) {
                chosen.insert(j);
            }
        }
        chosen.into_iter().collect()
    }
}

fn mat(values: &[f64], rows: usize, cols: usize) -> Mat<f64> {
    Mat::from_fn(rows, cols, |i, j| values[i * cols + j])
}

fn values(m: &Mat<f64>) -> Vec<f64> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .collect()
}

/// The solution `X` (`n × t`) of `A X = B` for a symmetric positive definite `A` (`n × n`),
/// by Cholesky; by LU where rounding left `A` indefinite. Values in C order.
pub(super) fn solve_symmetric(a: &[f64], b: &[f64], n: usize, t: usize) -> Result<Vec<f64>> {
    let (a, b) = (mat(a, n, n), mat(b, n, t));
    let x = match a.llt(Side::Lower) {
        Ok(f) => f.solve(&b),
        Err(_) => a.partial_piv_lu().solve(&b),
    };
    finite(values(&x), "a linear system")
}

/// The least-norm least-squares solution `X` (`n × t`) of `A X = B` (`A` is `n × n`,
/// possibly singular): NumPy's `lstsq`, by the pseudoinverse.
pub(super) fn least_norm(a: &[f64], b: &[f64], n: usize, t: usize) -> Result<Vec<f64>> {
    let svd = mat(a, n, n)
        .thin_svd()
        .map_err(|e| Error::Runtime(format!("least squares: the SVD failed: {e:?}")))?;
    finite(
        values(&(svd.pseudoinverse() * mat(b, n, t))),
        "least squares",
    )
}

fn finite(x: Vec<f64>, what: &str) -> Result<Vec<f64>> {
    match x.iter().all(|v| v.is_finite()) {
        true => Ok(x),
        false => Err(Error::InvalidArgument(format!(
            "{what}: the solution is not finite (NaN or infinite data?)"
        ))),
    }
}

/// Each row of `vt` (`rows × cols`) signed so that its largest entry in magnitude is
/// positive (scikit-learn's `svd_flip` on the right singular vectors).
pub(super) fn flip_signs(vt: &mut [f64], cols: usize) {
    for row in vt.chunks_mut(cols.max(1)) {
        let largest = row
            .iter()
            .copied()
            .fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m });
        if largest < 0.0 {
            row.iter_mut().for_each(|v| *v = -*v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_in_range() {
        let (mut a, mut b) = (HostRng::new(7), HostRng::new(7));
        let xs: Vec<f64> = (0..100).map(|_| a.uniform()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(xs, (0..100).map(|_| b.uniform()).collect::<Vec<_>>());
        let picked = HostRng::new(3).distinct(10, 10);
        assert_eq!(picked, (0..10).collect::<Vec<_>>());
        let some = HostRng::new(3).distinct(1000, 5);
        assert_eq!(some.len(), 5);
        assert!(some.windows(2).all(|w| w[0] < w[1]) && some[4] < 1000);
        // A zero weight is never drawn.
        let mut r = HostRng::new(1);
        for _ in 0..200 {
            assert_ne!(r.weighted(&[1.0, 0.0, 2.0], 3.0), 1);
        }
    }

    #[test]
    fn systems_solve_as_by_hand() {
        // [[4, 2], [2, 3]] x = [2, 1] has x = [0.5, 0].
        let x = solve_symmetric(&[4.0, 2.0, 2.0, 3.0], &[2.0, 1.0], 2, 1).unwrap();
        assert!((x[0] - 0.5).abs() < 1e-12 && x[1].abs() < 1e-12);
        // A singular [[1, 1], [1, 1]] x = [2, 2]: the least-norm answer is [1, 1].
        let x = least_norm(&[1.0, 1.0, 1.0, 1.0], &[2.0, 2.0], 2, 1).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 1.0).abs() < 1e-12);
        let mut vt = vec![0.1, -0.9, 0.3, 0.5, 0.2, -0.1];
        flip_signs(&mut vt, 3);
        assert_eq!(vt, vec![-0.1, 0.9, -0.3, 0.5, 0.2, -0.1]);
    }
}
