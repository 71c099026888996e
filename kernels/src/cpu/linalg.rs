//! CPU implementations of [`LinalgOp`] (dense kernels through faer).
//!
//! Tensors are C-order (row-major); faer's matrices are strided views, so a row-major
//! `m × n` buffer is viewed in place as a matrix with row stride `n` and column stride 1.
//! Every faer call runs sequentially ([`Par::Seq`]): the worker pool already runs one task
//! per core.

use super::fused;
use crate::linalg::{InputRef, LinalgOp, MatOperand};
use crate::tensor::{checked_numel, Buffer, HostTensor};
use crate::{ChunkData, KernelError};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::borrow::Cow;
use std::sync::Arc;

mod range;

/// Runs one linear-algebra op.
pub(crate) fn run(op: &LinalgOp, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    match op {
        LinalgOp::MatMul { pairs } => matmul_sum(pairs, inputs).map(ChunkData::Tensor),
        LinalgOp::Qr(a) => {
            let a = operand(inputs, a, "qr operand")?;
            check_finite(&a.data, "qr operand")?;
            qr(a.view())
        }
        LinalgOp::StackedQr(refs) => stacked_qr(refs, inputs),
        LinalgOp::Svd(a) => {
            let a = input_matrix(inputs, a, "svd operand")?;
            check_finite(&a.data, "svd operand")?;
            svd(a.view())
        }
        LinalgOp::RangeQr { x, omega } => range::range_qr(x, omega, inputs),
        LinalgOp::Take(r) => take(r, inputs).map(ChunkData::Tensor),
        LinalgOp::Sum(refs) => sum(refs, inputs).map(ChunkData::Tensor),
    }
}

fn bad(msg: String) -> KernelError {
    KernelError::BadInput(msg)
}

/// A row-major `f64` matrix, borrowed from an input or computed in the task.
struct Matrix<'a> {
    data: Cow<'a, [f64]>,
    rows: usize,
    cols: usize,
}

impl Matrix<'_> {
    fn view(&self) -> MatRef<'_, f64> {
        MatRef::from_row_major_slice(&self.data, self.rows, self.cols)
    }
}

/// The tensor an [`InputRef`] names (before its row range is applied).
fn input_tensor<'a>(
    inputs: &'a [Arc<ChunkData>],
    r: &InputRef,
    what: &str,
) -> Result<&'a HostTensor, KernelError> {
    let data = inputs.get(r.input).ok_or_else(|| {
        bad(format!(
            "{what}: input {} is missing ({} inputs)",
            r.input,
            inputs.len()
        ))
    })?;
    match (data.as_ref(), r.part) {
        (ChunkData::Tensor(t), None) => Ok(t),
        (ChunkData::Parts(parts), Some(p)) => parts.get(p).ok_or_else(|| {
            bad(format!(
                "{what}: input {} has {} parts, part {p} is missing",
                r.input,
                parts.len()
            ))
        }),
        (ChunkData::Tensor(_), Some(p)) => Err(bad(format!(
            "{what}: expected a multi-part input for part {p}, input {} is a tensor",
            r.input
        ))),
        (ChunkData::Parts(parts), None) => Err(bad(format!(
            "{what}: expected a tensor, input {} has {} parts",
            r.input,
            parts.len()
        ))),
        (other, _) => Err(bad(format!(
            "{what}: expected a tensor, input {} is a {}",
            r.input,
            other.kind_name()
        ))),
    }
}

/// The `f64` elements and shape an [`InputRef`] selects: `rows` keeps a range along axis 0
/// of a tensor of rank 2 or more.
fn input_f64<'a>(
    inputs: &'a [Arc<ChunkData>],
    r: &InputRef,
    what: &str,
) -> Result<(&'a [f64], Vec<usize>), KernelError> {
    let t = input_tensor(inputs, r, what)?;
    let data = t
        .as_slice::<f64>()
        .ok_or_else(|| bad(format!("{what}: expected f64 values, got {}", t.dtype())))?;
    let shape = t.shape();
    let Some((start, len)) = r.rows else {
        return Ok((data, shape.to_vec()));
    };
    if shape.len() < 2 {
        return Err(bad(format!(
            "{what}: a row range needs a matrix, got shape {shape:?}"
        )));
    }
    let nrows = shape[0];
    let end = start
        .checked_add(len)
        .filter(|&end| end <= nrows)
        .ok_or_else(|| {
            bad(format!(
                "{what}: rows {start}..{start}+{len} out of range for {nrows} rows"
            ))
        })?;
    let row_len = checked_numel(&shape[1..])?;
    let mut sel_shape = shape.to_vec();
    sel_shape[0] = len;
    Ok((&data[start * row_len..end * row_len], sel_shape))
}

/// A 2-D `f64` input as a matrix (borrowed).
fn input_matrix<'a>(
    inputs: &'a [Arc<ChunkData>],
    r: &InputRef,
    what: &str,
) -> Result<Matrix<'a>, KernelError> {
    let (data, rows, cols) = input_rows(inputs, r, what)?;
    Ok(Matrix {
        data: Cow::Borrowed(data),
        rows,
        cols,
    })
}

/// Input `r` as a row-major `f64` matrix: its values, rows and columns (for other
/// devices' products, which check their operands as the CPU does).
pub fn input_rows<'a>(
    inputs: &'a [Arc<ChunkData>],
    r: &InputRef,
    what: &str,
) -> Result<(&'a [f64], usize, usize), KernelError> {
    let (data, shape) = input_f64(inputs, r, what)?;
    match shape[..] {
        [rows, cols] => Ok((data, rows, cols)),
        _ => Err(KernelError::ShapeMismatch(format!(
            "{what}: expected a 2-D matrix, got shape {shape:?}"
        ))),
    }
}

/// A product operand: an input, or the (2-D, `f64`) result of a fused kernel.
fn operand<'a>(
    inputs: &'a [Arc<ChunkData>],
    op: &MatOperand,
    what: &str,
) -> Result<Matrix<'a>, KernelError> {
    match op {
        MatOperand::Input(r) => input_matrix(inputs, r, what),
        MatOperand::Fused(kernel) => {
            let t = match fused::run(kernel, inputs)? {
                ChunkData::Tensor(t) => t,
                _ => {
                    return Err(bad(format!(
                        "{what}: expected the fused kernel to produce a tensor"
                    )))
                }
            };
            let (rows, cols) = match t.shape() {
                &[rows, cols] => (rows, cols),
                shape => {
                    return Err(KernelError::ShapeMismatch(format!(
                        "{what}: expected the fused kernel to produce a 2-D matrix, got shape \
                         {shape:?}"
                    )))
                }
            };
            match t.into_data() {
                Buffer::F64(v) => Ok(Matrix {
                    data: Cow::Owned(v),
                    rows,
                    cols,
                }),
                other => Err(bad(format!(
                    "{what}: expected the fused kernel to produce f64 values, got {}",
                    other.dtype()
                ))),
            }
        }
    }
}

/// `InvalidValue` naming `what` where `data` holds a NaN or an infinity (the factorizations'
/// inputs must be finite).
pub fn check_finite(data: &[f64], what: &str) -> Result<(), KernelError> {
    if data.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(KernelError::InvalidValue(format!(
            "{what} contains NaN or infinite values"
        )))
    }
}

fn tensor(shape: Vec<usize>, data: Vec<f64>) -> Result<HostTensor, KernelError> {
    HostTensor::new(shape, Buffer::F64(data))
}

fn zeros(rows: usize, cols: usize) -> Result<Vec<f64>, KernelError> {
    let len = rows
        .checked_mul(cols)
        .ok_or_else(|| KernelError::SizeOverflow(format!("{rows} × {cols} matrix")))?;
    Ok(vec![0.0; len])
}

/// Elements of a generated operand evaluated at a time (4 MiB): the strip is consumed by the
/// product while it is still in cache, and its buffer is reused.
const STRIP_ELEMS: usize = 512 * 1024;
/// Fewest rows per strip, so each strip is a real matrix product.
const MIN_STRIP_ROWS: usize = 16;

/// The output of `Σ a_t · b_t`: created by the first pair, checked against by the others.
struct Accumulator {
    shape: Option<(usize, usize)>,
    data: Vec<f64>,
}

impl Accumulator {
    fn for_product(
        &mut self,
        t: usize,
        m: usize,
        k: usize,
        k2: usize,
        n: usize,
    ) -> Result<MatMut<'_, f64>, KernelError> {
        if k != k2 {
            return Err(KernelError::ShapeMismatch(format!(
                "matmul pair {t}: inner dimensions differ ({m} × {k} times {k2} × {n})"
            )));
        }
        match self.shape {
            Some((om, on)) if (om, on) != (m, n) => {
                return Err(KernelError::ShapeMismatch(format!(
                    "matmul pair {t}: product is {m} × {n}, earlier products are {om} × {on}"
                )))
            }
            Some(_) => {}
            None => {
                self.data = zeros(m, n)?;
                self.shape = Some((m, n));
            }
        }
        Ok(MatMut::from_row_major_slice_mut(
            self.data.as_mut_slice(),
            m,
            n,
        ))
    }
}

/// Rows per strip of a generated operand with `cols` columns.
fn strip_rows(cols: usize) -> usize {
    (STRIP_ELEMS / cols.max(1)).max(MIN_STRIP_ROWS)
}

/// `Σ a_t · b_t`, accumulated in place into one row-major output. A generated operand
/// ([`MatOperand::Fused`]) next to an input is evaluated and multiplied strip by strip.
fn matmul_sum(
    pairs: &[(MatOperand, MatOperand)],
    inputs: &[Arc<ChunkData>],
) -> Result<HostTensor, KernelError> {
    let mut acc = Accumulator {
        shape: None,
        data: Vec::new(),
    };
    let mut strip = Vec::new();
    for (t, (a, b)) in pairs.iter().enumerate() {
        match (a, b) {
            (MatOperand::Fused(ka), MatOperand::Input(rb)) => {
                let src = fused::RowSource::new(ka, inputs)?;
                let b = input_matrix(inputs, rb, &format!("matmul pair {t} right operand"))?;
                let ((m, k), n) = (src.shape, b.cols);
                let mut dst = acc.for_product(t, m, k, b.rows, n)?;
                for r0 in (0..m).step_by(strip_rows(k)) {
                    let r1 = (r0 + strip_rows(k)).min(m);
                    src.rows(r0, r1, &mut strip)?;
                    let a = MatRef::from_row_major_slice(&strip, r1 - r0, k);
                    matmul(
                        dst.as_mut().subrows_mut(r0, r1 - r0),
                        Accum::Add,
                        a,
                        b.view(),
                        1.0,
                        Par::Seq,
                    );
                }
            }
            (MatOperand::Input(ra), MatOperand::Fused(kb)) => {
                let a = input_matrix(inputs, ra, &format!("matmul pair {t} left operand"))?;
                let src = fused::RowSource::new(kb, inputs)?;
                let (m, (k, n)) = (a.rows, src.shape);
                let mut dst = acc.for_product(t, m, a.cols, k, n)?;
                for r0 in (0..k).step_by(strip_rows(n)) {
                    let r1 = (r0 + strip_rows(n)).min(k);
                    src.rows(r0, r1, &mut strip)?;
                    let b = MatRef::from_row_major_slice(&strip, r1 - r0, n);
                    matmul(
                        dst.as_mut(),
                        Accum::Add,
                        a.view().subcols(r0, r1 - r0),
                        b,
                        1.0,
                        Par::Seq,
                    );
                }
            }
            (a, b) => {
                let a = operand(inputs, a, &format!("matmul pair {t} left operand"))?;
                let b = operand(inputs, b, &format!("matmul pair {t} right operand"))?;
                let dst = acc.for_product(t, a.rows, a.cols, b.rows, b.cols)?;
                if a.rows > 0 && b.cols > 0 && a.cols > 0 {
                    matmul(dst, Accum::Add, a.view(), b.view(), 1.0, Par::Seq);
                }
            }
        }
    }
    let (m, n) = acc
        .shape
        .ok_or_else(|| bad("matmul needs at least one operand pair".into()))?;
    tensor(vec![m, n], acc.data)
}

/// A faer matrix written out row-major.
fn row_major(a: MatRef<'_, f64>) -> Result<Vec<f64>, KernelError> {
    let (m, n) = a.shape();
    let mut out = zeros(m, n)?;
    if m > 0 && n > 0 {
        MatMut::from_row_major_slice_mut(out.as_mut_slice(), m, n).copy_from(a);
    }
    Ok(out)
}

/// Thin QR of a finite matrix: `Parts[Q (m × r), R (r × n)]`, R's diagonal non-negative.
fn qr(a: MatRef<'_, f64>) -> Result<ChunkData, KernelError> {
    let (m, n) = a.shape();
    let (q, rr, r) = qr_factors(a)?;
    Ok(ChunkData::Parts(vec![
        tensor(vec![m, r], q)?,
        tensor(vec![r, n], rr)?,
    ]))
}

/// Thin QR of a finite `m × n` matrix as row-major `Q (m × r)` and `R (r × n)` with R's
/// diagonal non-negative, and `r = min(m, n)`.
fn qr_factors(a: MatRef<'_, f64>) -> Result<(Vec<f64>, Vec<f64>, usize), KernelError> {
    let (m, n) = a.shape();
    let r = m.min(n);
    if r == 0 {
        return Ok((Vec::new(), zeros(0, n)?, 0));
    }
    let f = a.qr();
    let mut q = row_major(f.compute_thin_Q().as_ref())?;
    let rf = f.thin_R();
    let mut rr = zeros(r, n)?;
    for (i, row) in rr.chunks_exact_mut(n).enumerate() {
        // The strict lower part is zero: copy only the upper trapezoid.
        for (j, x) in row.iter_mut().enumerate().skip(i) {
            *x = rf[(i, j)];
        }
        if row[i].is_sign_negative() {
            row[i..].iter_mut().for_each(|x| *x = -*x);
            q.chunks_exact_mut(r).for_each(|qrow| qrow[i] = -qrow[i]);
        }
    }
    Ok((q, rr, r))
}

/// Thin QR of the referenced blocks stacked vertically.
fn stacked_qr(refs: &[InputRef], inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let blocks = refs
        .iter()
        .enumerate()
        .map(|(i, r)| input_matrix(inputs, r, &format!("stacked_qr block {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    let n = blocks
        .first()
        .ok_or_else(|| bad("stacked_qr needs at least one block".into()))?
        .cols;
    let mut total = 0usize;
    for (i, b) in blocks.iter().enumerate() {
        if b.cols != n {
            return Err(KernelError::ShapeMismatch(format!(
                "stacked_qr block {i} has {} columns, block 0 has {n}",
                b.cols
            )));
        }
        check_finite(&b.data, &format!("stacked_qr block {i}"))?;
        total = total
            .checked_add(b.rows)
            .ok_or_else(|| KernelError::SizeOverflow("stacked_qr rows".into()))?;
    }
    if let [only] = &blocks[..] {
        return qr(only.view());
    }
    zeros(total, n)?; // checks the size before faer allocates
    let mut stack = Mat::<f64>::zeros(total, n);
    let mut row = 0;
    for b in &blocks {
        stack
            .as_mut()
            .submatrix_mut(row, 0, b.rows, n)
            .copy_from(b.view());
        row += b.rows;
    }
    qr(stack.as_ref())
}

/// Thin SVD of a finite matrix: `Parts[U (m × r), S (r), Vt (r × n)]`.
fn svd(a: MatRef<'_, f64>) -> Result<ChunkData, KernelError> {
    let (m, n) = a.shape();
    let r = m.min(n);
    if r == 0 {
        return Ok(ChunkData::Parts(vec![
            tensor(vec![m, 0], Vec::new())?,
            tensor(vec![0], Vec::new())?,
            tensor(vec![0, n], Vec::new())?,
        ]));
    }
    let f = a
        .thin_svd()
        .map_err(|e| KernelError::InvalidValue(format!("svd did not converge ({e:?})")))?;
    let mut u = row_major(f.U())?;
    let mut vt = row_major(f.V().transpose())?;
    let s: Vec<f64> = f.S().column_vector().iter().copied().collect();
    for i in 0..r {
        // The entry of U[:, i] with the largest magnitude (the first on ties) is made positive.
        let mut best = 0.0f64;
        let mut best_val = 0.0f64;
        for urow in u.chunks_exact(r) {
            let x = urow[i];
            if x.abs() > best {
                best = x.abs();
                best_val = x;
            }
        }
        if best_val < 0.0 {
            u.chunks_exact_mut(r).for_each(|urow| urow[i] = -urow[i]);
            vt[i * n..(i + 1) * n].iter_mut().for_each(|x| *x = -*x);
        }
    }
    Ok(ChunkData::Parts(vec![
        tensor(vec![m, r], u)?,
        tensor(vec![r], s)?,
        tensor(vec![r, n], vt)?,
    ]))
}

/// The referenced (1-D or 2-D) tensor, copied.
fn take(r: &InputRef, inputs: &[Arc<ChunkData>]) -> Result<HostTensor, KernelError> {
    let (data, shape) = input_f64(inputs, r, "take operand")?;
    if !matches!(shape.len(), 1 | 2) {
        return Err(KernelError::ShapeMismatch(format!(
            "take operand: expected a 1-D or 2-D tensor, got shape {shape:?}"
        )));
    }
    tensor(shape, data.to_vec())
}

/// The elementwise sum of same-shaped tensors.
fn sum(refs: &[InputRef], inputs: &[Arc<ChunkData>]) -> Result<HostTensor, KernelError> {
    let mut out: Option<(Vec<usize>, Vec<f64>)> = None;
    for (i, r) in refs.iter().enumerate() {
        let what = format!("sum operand {i}");
        let (data, shape) = input_f64(inputs, r, &what)?;
        match &mut out {
            None => out = Some((shape, data.to_vec())),
            Some((s, _)) if *s != shape => {
                return Err(KernelError::ShapeMismatch(format!(
                    "{what} has shape {shape:?}, operand 0 has {s:?}"
                )))
            }
            Some((_, acc)) => acc.iter_mut().zip(data).for_each(|(a, &b)| *a += b),
        }
    }
    let (shape, data) = out.ok_or_else(|| bad("sum needs at least one operand".into()))?;
    tensor(shape, data)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
