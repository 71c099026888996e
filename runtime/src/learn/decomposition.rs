//! Principal components ([`Pca`]: the SVD of the centred data by TSQR or randomized SVD)
//! and [`TruncatedSvd`] (randomized, not centred), in chunks.

use super::host::{fetch, flip_signs, host_matrix, matrix_shape};
use crate::error::{Error, Result};
use crate::linalg;
use crate::session::Session;
use crate::tensor::{concatenate, Tensor};
use tessera_kernels::{DType, HostTensor};

/// How [`Pca`] computes the SVD.
#[derive(Clone, Debug, PartialEq)]
pub enum PcaSolver {
    /// The exact thin SVD by TSQR (scikit-learn's `"full"`; tall-and-skinny data).
    Full,
    /// Randomized SVD (Halko et al.): `oversamples` extra columns, `power_iters` power
    /// iterations, the projection drawn from `seed`.
    Randomized {
        /// Power iterations.
        power_iters: usize,
        /// Extra columns of the random projection.
        oversamples: usize,
        /// The seed of the random projection.
        seed: u64,
    },
}

/// Principal component analysis with scikit-learn's meaning (`PCA(n_components,
/// svd_solver)`): the top right singular vectors of the centred data, signed as
/// scikit-learn signs them (each component's largest loading positive).
#[derive(Clone, Debug, PartialEq)]
pub struct Pca {
    /// Components kept [default: `min(rows, columns)`].
    pub n_components: Option<usize>,
    /// How the SVD is computed.
    pub solver: PcaSolver,
}

/// A fitted [`Pca`].
#[derive(Clone, Debug, PartialEq)]
pub struct PcaFit {
    /// The mean of each column.
    pub mean: Vec<f64>,
    /// The components of the centred data; their explained variance is `s² / (rows − 1)`.
    pub svd: SvdFit,
}

/// The fitted values [`Pca`] and [`TruncatedSvd`] share.
#[derive(Clone, Debug, PartialEq)]
pub struct SvdFit {
    /// The components, `k × columns` (`float64`).
    pub components: HostTensor,
    /// The `k` largest singular values.
    pub singular_values: Vec<f64>,
    /// The variance of the data along each component.
    pub explained_variance: Vec<f64>,
    /// Each component's share of the data's total variance.
    pub explained_variance_ratio: Vec<f64>,
}

impl Pca {
    /// Computes the principal components of the rows of the matrix `x` on `session`.
    ///
    /// Shape for a non-matrix; InvalidArgument for `n_components` outside
    /// `1..=min(rows, columns)`.
    pub fn fit(&self, session: &Session, x: &Tensor) -> Result<PcaFit> {
        let (n, d) = matrix_shape(x, "PCA: the data")?;
        let k = components(self.n_components.unwrap_or(n.min(d)), n, d, "PCA")?;
        let x = x.astype(DType::F64);
        let mean = fetch(&x.mean_axis(0), session)?;
        let centred = x.sub(crate::tensor::from_vec(mean.clone(), &[1, d]));
        let (_, s, vt) = match self.solver {
            PcaSolver::Full => linalg::svd(&centred),
            PcaSolver::Randomized {
                power_iters,
                oversamples,
                seed,
            } => linalg::svd_compressed(&centred, k, power_iters, oversamples, seed),
        };
        // One job: each right singular vector and its singular value, and for the
        // randomized solver the total variance. The full SVD's singular values are all of
        // them, so its total is `Σ s²` (as scikit-learn takes it) without another pass
        // over the data; the randomized SVD has only the top ones.
        let m = s.shape()?[0];
        let mut columns = vec![vt, s.reshape(&[-1, 1])];
        if !matches!(self.solver, PcaSolver::Full) {
            let total = centred.mul(&centred).sum().reshape(&[1, 1]);
            columns.push(total.broadcast_to(&[m, 1]));
        }
        let both = fetch(
            &concatenate(&columns.iter().collect::<Vec<_>>(), 1),
            session,
        )?;
        let (mut vt, s, total) = split_rows(&both, m, d);
        let total = match total.first() {
            Some(&t) => t,
            None => s.iter().map(|v| v * v).sum(),
        };
        flip_signs(&mut vt, d);
        vt.truncate(k * d);
        let dof = n.saturating_sub(1).max(1) as f64;
        let variance: Vec<f64> = s[..k].iter().map(|v| v * v / dof).collect();
        let ratio = variance
            .iter()
            .map(|v| if total > 0.0 { v / (total / dof) } else { 0.0 })
            .collect();
        Ok(PcaFit {
            mean,
            svd: SvdFit {
                components: host_matrix(vt, k, d)?,
                singular_values: s[..k].to_vec(),
                explained_variance: variance,
                explained_variance_ratio: ratio,
            },
        })
    }
}

/// The top `n_components` singular triplets of the data, not centred (scikit-learn's
/// `TruncatedSVD`, for latent semantic analysis): randomized SVD in chunks, scikit-learn's
/// component signs.
#[derive(Clone, Debug, PartialEq)]
pub struct TruncatedSvd {
    /// Components kept.
    pub n_components: usize,
    /// Power iterations.
    pub n_iter: usize,
    /// Extra columns of the random projection.
    pub n_oversamples: usize,
    /// The seed of the random projection.
    pub seed: u64,
}

impl TruncatedSvd {
    /// Computes the top singular vectors of the matrix `x` on `session`.
    ///
    /// Shape for a non-matrix; InvalidArgument for `n_components` outside
    /// `1..=min(rows, columns)`.
    pub fn fit(&self, session: &Session, x: &Tensor) -> Result<SvdFit> {
        let (n, d) = matrix_shape(x, "TruncatedSVD: the data")?;
        let k = components(self.n_components, n, d, "TruncatedSVD")?;
        let x = x.astype(DType::F64);
        let (_, s, vt) = linalg::svd_compressed(&x, k, self.n_iter, self.n_oversamples, self.seed);
        let both = fetch(&concatenate(&[&vt, &s.reshape(&[-1, 1])], 1), session)?;
        let (mut vt, s, _) = split_rows(&both, k, d);
        flip_signs(&mut vt, d);
        // One job: the variances of the projection and of every feature.
        let projected = x.matmul(&crate::tensor::from_vec(vt.clone(), &[k, d]).transpose());
        let variances = fetch(
            &concatenate(&[&projected.var_axis(0, 0), &x.var_axis(0, 0)], 0),
            session,
        )?;
        let total: f64 = variances[k..].iter().sum();
        Ok(SvdFit {
            components: host_matrix(vt, k, d)?,
            singular_values: s,
            explained_variance: variances[..k].to_vec(),
            explained_variance_ratio: variances[..k]
                .iter()
                .map(|v| if total > 0.0 { v / total } else { 0.0 })
                .collect(),
        })
    }
}

/// `n_components` checked against the data's `n × d`.
fn components(k: usize, n: usize, d: usize, what: &str) -> Result<usize> {
    match k >= 1 && k <= n.min(d) {
        true => Ok(k),
        false => Err(Error::InvalidArgument(format!(
            "{what}: n_components = {k} must be between 1 and min(samples, features) = {}",
            n.min(d)
        ))),
    }
}

/// Rows of `[vt | s | extra...]` (`m` rows, `vt` of `d` columns) split into `vt` (C order),
/// `s` and the first extra column.
fn split_rows(both: &[f64], m: usize, d: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let w = both.len() / m.max(1);
    let rows = || both.chunks(w.max(1));
    (
        rows().flat_map(|r| r[..d].to_vec()).collect(),
        rows().map(|r| r[d]).collect(),
        rows().filter_map(|r| r.get(d + 1).copied()).collect(),
    )
}
