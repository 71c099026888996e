//! [`crate::linalg::LinalgOp::RangeQr`]: the QR of `Y = x · omega` and the projection
//! `P = xᵀ · Q`, reading `x` once where that is accurate.
//!
//! A randomized SVD needs `Q` (an orthonormal basis of `Y`) and `Qᵀ · x`; computed one
//! after the other they read `x` twice, and for a large `x` that second pass from memory is
//! most of the cost. Here `x` is read a panel of rows at a time, and while a panel is in
//! cache both `Y_p = x_p · omega` and its term of `G = Yᵀ · x` are computed. Then
//! `Y = Q R` (Householder), and `Qᵀ x = R⁻ᵀ G`. That last step loses accuracy in proportion
//! to R's condition number, so it is taken only where `‖R‖_F ‖R⁻¹‖_F` (at least the
//! 2-norm condition number) is at most [`MAX_CONDITION`]: the projection then agrees with
//! the two-pass one to within that factor of rounding (a random `omega` keeps a block's `Y`
//! well-conditioned unless `x` is nearly rank-deficient: about 9 for a uniform random
//! block). Otherwise, and where a block has fewer rows than `omega` has columns, `x` is
//! read a second time to form `Qᵀ x` directly.

use super::{fused, input_matrix, qr_factors, tensor, zeros, Matrix};
use crate::linalg::{InputRef, MatOperand, RANGE_PANEL_BYTES};
use crate::{ChunkData, KernelError};
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_upper_triangular_in_place;
use faer::{Accum, MatMut, MatRef, Par};
use std::sync::Arc;

/// The largest `‖R‖_F ‖R⁻¹‖_F` for which `R⁻ᵀ G` stands in for a second read of `x`.
pub(super) const MAX_CONDITION: f64 = 1e3;

/// How [`range_qr_with`] reads `x`: panel heights and the condition bound.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tuning {
    /// Rows per panel (at least one).
    pub panel_rows: usize,
    /// The largest condition estimate of R for which `x` is read once.
    pub max_condition: f64,
}

/// Where the rows of `x` come from: an input, or a kernel generating them panel by panel.
enum Rows<'a> {
    Input(Matrix<'a>),
    Generated(fused::RowSource<'a>),
}

impl Rows<'_> {
    fn shape(&self) -> (usize, usize) {
        match self {
            Rows::Input(m) => (m.rows, m.cols),
            Rows::Generated(src) => src.shape,
        }
    }

    /// Calls `f(r0, x_p)` for each panel of `step` rows, generating a panel into a reused
    /// buffer where the rows are not an input's.
    fn for_panels(
        &self,
        step: usize,
        mut f: impl FnMut(usize, MatRef<'_, f64>),
    ) -> Result<(), KernelError> {
        let (m, n) = self.shape();
        let mut strip = Vec::new();
        for r0 in (0..m).step_by(step.max(1)) {
            let r1 = (r0 + step.max(1)).min(m);
            let rows = match self {
                Rows::Input(x) => &x.data[r0 * n..r1 * n],
                Rows::Generated(src) => {
                    src.rows(r0, r1, &mut strip)?;
                    &strip[..]
                }
            };
            f(r0, MatRef::from_row_major_slice(rows, r1 - r0, n));
        }
        Ok(())
    }
}

/// `Parts[Q, R, P = xᵀ Q]` with `Q R = x · omega` (see the module docs).
pub(super) fn range_qr(
    x: &MatOperand,
    omega: &InputRef,
    inputs: &[Arc<ChunkData>],
) -> Result<ChunkData, KernelError> {
    let (x, omega) = operands(x, omega, inputs)?;
    let tuning = Tuning {
        panel_rows: (RANGE_PANEL_BYTES / 8 / x.shape().1.max(1)).max(1),
        max_condition: MAX_CONDITION,
    };
    fold(&x, &omega, tuning)
}

/// [`range_qr`] read as `tuning` says (tests choose panel heights and the bound).
#[cfg(test)]
pub(super) fn range_qr_with(
    x: &MatOperand,
    omega: &InputRef,
    inputs: &[Arc<ChunkData>],
    tuning: Tuning,
) -> Result<ChunkData, KernelError> {
    let (x, omega) = operands(x, omega, inputs)?;
    fold(&x, &omega, tuning)
}

/// The op's `x` and `omega`, resolved once.
fn operands<'a>(
    x: &'a MatOperand,
    omega: &InputRef,
    inputs: &'a [Arc<ChunkData>],
) -> Result<(Rows<'a>, Matrix<'a>), KernelError> {
    let omega = input_matrix(inputs, omega, "range_qr omega")?;
    let x = match x {
        MatOperand::Input(r) => Rows::Input(input_matrix(inputs, r, "range_qr x")?),
        MatOperand::Fused(k) => Rows::Generated(fused::RowSource::new(k, inputs)?),
    };
    Ok((x, omega))
}

/// The op on resolved operands.
fn fold(x: &Rows<'_>, omega: &Matrix<'_>, tuning: Tuning) -> Result<ChunkData, KernelError> {
    let ((m, n), l) = (x.shape(), omega.cols);
    if omega.rows != n {
        return Err(KernelError::ShapeMismatch(format!(
            "range_qr: x is {m} × {n}, omega is {} × {l}",
            omega.rows
        )));
    }
    // One read of x: Y = x · omega and G = Yᵀ x, a panel at a time.
    let (mut y, mut g) = (zeros(m, l)?, zeros(l, n)?);
    if l > 0 && n > 0 {
        let mut gm = MatMut::from_row_major_slice_mut(&mut g, l, n);
        x.for_panels(tuning.panel_rows, |r0, xp| {
            let rows = xp.nrows();
            let yp = MatMut::from_row_major_slice_mut(&mut y[r0 * l..(r0 + rows) * l], rows, l);
            matmul(yp, Accum::Replace, xp, omega.view(), 1.0, Par::Seq);
            let yp = MatRef::from_row_major_slice(&y[r0 * l..(r0 + rows) * l], rows, l);
            matmul(gm.as_mut(), Accum::Add, yp.transpose(), xp, 1.0, Par::Seq);
        })?;
    }
    super::check_finite(&y, "range_qr: x · omega")?;
    let (q, r_fac, r) = qr_factors(MatRef::from_row_major_slice(&y, m, l))?;
    // P = xᵀ Q (n × r): from G where R is well-conditioned, else from a second read of x.
    let p = match projection_from_gram(&r_fac, r, l, &g, n, tuning.max_condition)? {
        Some(p) => p,
        None => {
            let mut p = zeros(n, r)?;
            if r > 0 && n > 0 {
                let mut pm = MatMut::from_row_major_slice_mut(&mut p, n, r);
                x.for_panels(tuning.panel_rows, |r0, xp| {
                    let rows = xp.nrows();
                    let qp = MatRef::from_row_major_slice(&q[r0 * r..(r0 + rows) * r], rows, r);
                    matmul(pm.as_mut(), Accum::Add, xp.transpose(), qp, 1.0, Par::Seq);
                })?;
            }
            p
        }
    };
    Ok(ChunkData::Parts(vec![
        tensor(vec![m, r], q)?,
        tensor(vec![r, l], r_fac)?,
        tensor(vec![n, r], p)?,
    ]))
}

/// `P = Gᵀ R⁻¹` (n × l, the transpose of `R⁻ᵀ G`) for a square R (`r == l`) whose
/// condition estimate `‖R‖_F ‖R⁻¹‖_F` is at most `max_condition`; `None` otherwise.
fn projection_from_gram(
    r_fac: &[f64],
    r: usize,
    l: usize,
    g: &[f64],
    n: usize,
    max_condition: f64,
) -> Result<Option<Vec<f64>>, KernelError> {
    if r != l || l == 0 {
        return Ok(None);
    }
    let mut inv = zeros(l, l)?;
    inv.iter_mut().step_by(l + 1).for_each(|d| *d = 1.0);
    let rm = MatRef::from_row_major_slice(r_fac, l, l);
    let mut im = MatMut::from_row_major_slice_mut(&mut inv, l, l);
    solve_upper_triangular_in_place(rm, im.as_mut(), Par::Seq);
    let fro = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let condition = fro(r_fac) * fro(&inv);
    if condition.is_nan() || condition > max_condition {
        return Ok(None);
    }
    let mut p = zeros(n, l)?;
    if n > 0 {
        matmul(
            MatMut::from_row_major_slice_mut(&mut p, n, l),
            Accum::Replace,
            MatRef::from_row_major_slice(g, l, n).transpose(),
            MatRef::from_row_major_slice(&inv, l, l),
            1.0,
            Par::Seq,
        );
    }
    Ok(Some(p))
}
