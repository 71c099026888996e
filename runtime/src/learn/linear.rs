//! Linear models: least squares with an optional L2 penalty by the normal equations (one
//! job for the Gram matrix of the data with its targets), and binary logistic regression
//! by Newton's method (one job per iteration for the gradient and the Hessian together).
//! Only `d × d` numbers come back to this process; the data stays in chunks.

use super::host::{fetch, host_matrix, kept_f64, least_norm, matrix_shape, solve_symmetric};
use super::passes::logistic_terms;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::tensor::{concatenate, ones, Tensor};
use tessera_kernels::{DType, HostTensor};

/// Least squares with an L2 penalty `alpha` on the coefficients, not the intercept:
/// scikit-learn's `LinearRegression` (`alpha` 0: the least-norm solution where the
/// normal equations are singular, as NumPy's `lstsq`) and `Ridge` (`alpha > 0`, its
/// `solver="cholesky"`).
#[derive(Clone, Debug, PartialEq)]
pub struct LeastSquares {
    /// The penalty on the squared norm of the coefficients (0 for none).
    pub alpha: f64,
    /// Fit an intercept (the data and targets centred) or not.
    pub fit_intercept: bool,
}

/// A fitted [`LeastSquares`].
#[derive(Clone, Debug, PartialEq)]
pub struct LeastSquaresFit {
    /// The coefficients, `targets × features` (`float64`).
    pub coef: HostTensor,
    /// One intercept per target (zeros without `fit_intercept`).
    pub intercept: Vec<f64>,
}

impl LeastSquares {
    /// Fits the coefficients to the rows of the matrix `x` and the targets `y` (one per
    /// row: a vector, or a matrix of one column per target) on `session`, from one job's
    /// `[x | y | 1]ᵀ [x | y | 1]`.
    ///
    /// Shape for a non-matrix `x` or targets of other rows; InvalidArgument for a negative
    /// or non-finite `alpha`, or a solution that is not finite.
    pub fn fit(&self, session: &Session, x: &Tensor, y: &Tensor) -> Result<LeastSquaresFit> {
        let (n, d) = matrix_shape(x, "least squares: the data")?;
        let y = match y.shape()?[..] {
            [m] if m == n => y.reshape(&[-1, 1]),
            [m, _] if m == n => y.clone(),
            ref other => {
                return Err(Error::Shape(format!(
                    "least squares: targets of shape {other:?} for {n} samples"
                )))
            }
        };
        if !(self.alpha >= 0.0 && self.alpha.is_finite()) {
            return Err(Error::InvalidArgument(format!(
                "least squares: alpha must be finite and non-negative, got {}",
                self.alpha
            )));
        }
        let t = y.shape()?[1];
        let a = concatenate(
            &[
                &x.astype(DType::F64),
                &y.astype(DType::F64),
                &ones(&[n, 1], DType::F64),
            ],
            1,
        );
        let w = d + t + 1;
        let m = fetch(&a.transpose().matmul(&a), session)?;
        let at = |i: usize, j: usize| m[i * w + j];
        // Means (zero without an intercept) from the column of ones.
        let mean = |j: usize| match self.fit_intercept {
            true => at(d + t, j) / n as f64,
            false => 0.0,
        };
        let centred = |i: usize, j: usize| at(i, j) - n as f64 * mean(i) * mean(j);
        let mut gram: Vec<f64> = (0..d)
            .flat_map(|i| (0..d).map(move |j| (i, j)))
            .map(|(i, j)| centred(i, j))
            .collect();
        let xy: Vec<f64> = (0..d)
            .flat_map(|i| (0..t).map(move |j| (i, d + j)))
            .map(|(i, j)| centred(i, j))
            .collect();
        let coef = if self.alpha > 0.0 {
            (0..d).for_each(|i| gram[i * d + i] += self.alpha);
            solve_symmetric(&gram, &xy, d, t)?
        } else {
            least_norm(&gram, &xy, d, t)?
        };
        let intercept = (0..t)
            .map(|j| mean(d + j) - (0..d).map(|i| mean(i) * coef[i * t + j]).sum::<f64>())
            .collect();
        // coef is features × targets; scikit-learn's coef_ is targets × features.
        let transposed = (0..t)
            .flat_map(|j| (0..d).map(move |i| (i, j)))
            .map(|(i, j)| coef[i * t + j])
            .collect();
        Ok(LeastSquaresFit {
            coef: host_matrix(transposed, t, d)?,
            intercept,
        })
    }
}

/// Binary logistic regression with an L2 penalty (scikit-learn's
/// `LogisticRegression(penalty="l2")`: minimises `½‖w‖² + C Σ log(1 + e^{−yᵢ(xᵢw + b)})`,
/// the intercept unpenalised) by Newton's method: each iteration is one
/// [`logistic_terms`] job giving the gradient and the Hessian together.
///
/// `tol` means what it means in scikit-learn: the iterations stop once the largest entry
/// of the objective's gradient divided by `C n` (the mean loss plus `‖w‖² / 2Cn`) is at
/// most `tol` (that step is still taken), or after `max_iter`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogisticRegression {
    /// The inverse of the penalty's strength.
    pub c: f64,
    /// The convergence threshold on the scaled gradient.
    pub tol: f64,
    /// Newton steps at most.
    pub max_iter: usize,
    /// Fit an (unpenalised) intercept or not.
    pub fit_intercept: bool,
}

impl Default for LogisticRegression {
    /// scikit-learn's defaults: `C` 1, `tol` 1e-4, 100 iterations, an intercept.
    fn default() -> Self {
        LogisticRegression {
            c: 1.0,
            tol: 1e-4,
            max_iter: 100,
            fit_intercept: true,
        }
    }
}

/// A fitted [`LogisticRegression`].
#[derive(Clone, Debug, PartialEq)]
pub struct LogisticFit {
    /// One coefficient per feature.
    pub coef: Vec<f64>,
    /// The intercept (0 without `fit_intercept`).
    pub intercept: f64,
    /// Newton steps taken.
    pub n_iter: usize,
}

impl LogisticRegression {
    /// Fits the model to the rows of the matrix `x` and the labels `y` (0 or 1, one per
    /// row) on `session`.
    ///
    /// Shape for a non-matrix `x` or labels of another length; InvalidArgument for `C`
    /// not positive and finite, `max_iter` of 0, or a step that is not finite.
    pub fn fit(&self, session: &Session, x: &Tensor, y: &Tensor) -> Result<LogisticFit> {
        let (n, d) = matrix_shape(x, "logistic regression: the data")?;
        if !matches!(y.shape()?[..], [m] if m == n) {
            return Err(Error::Shape(format!(
                "logistic regression: labels of shape {:?} for {n} samples",
                y.shape()?
            )));
        }
        if !(self.c > 0.0 && self.c.is_finite()) || self.max_iter == 0 {
            return Err(Error::InvalidArgument(format!(
                "logistic regression: C must be positive and finite (got {}) and max_iter \
                 at least 1 (got {})",
                self.c, self.max_iter
            )));
        }
        // The rows kept for the iterations once, where they are if already stored; the
        // intercept is the pass's extra weight, not a stored column of ones.
        let a = kept_f64(x, session)?;
        let y = kept_f64(y, session)?;
        let k = d + usize::from(self.fit_intercept);
        let penalised = |i: usize| !(self.fit_intercept && i == d);
        let mut w = vec![0.0; k];
        let mut steps = 0;
        for it in 1..=self.max_iter {
            steps = it;
            let w_tensor = crate::tensor::from_vec(w.clone(), &[k]);
            let terms = logistic_terms(session, &a, &y, &w_tensor)?;
            let h = terms.hessian.to_f64_vec();
            let grad: Vec<f64> = (0..k)
                .map(|i| self.c * terms.gradient[i] + if penalised(i) { w[i] } else { 0.0 })
                .collect();
            let hess: Vec<f64> = (0..k * k)
                .map(|ij| {
                    let diagonal = ij / k == ij % k && penalised(ij % k);
                    self.c * h[ij] + if diagonal { 1.0 } else { 0.0 }
                })
                .collect();
            let step = solve_symmetric(&hess, &grad, k, 1)?;
            w.iter_mut().zip(&step).for_each(|(wi, s)| *wi -= s);
            let largest = grad.iter().fold(0.0f64, |m, g| m.max(g.abs()));
            if largest <= self.tol * self.c * n as f64 {
                break;
            }
        }
        let intercept = if self.fit_intercept { w[d] } else { 0.0 };
        w.truncate(d);
        Ok(LogisticFit {
            coef: w,
            intercept,
            n_iter: steps,
        })
    }
}
