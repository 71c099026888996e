//! Thin QR of one block (`LinalgOp::Qr`, a TSQR level's leaves) through cuSOLVER's
//! Householder QR (DGEQRF, then DORGQR to form Q), with cuBLAS transposing between the
//! chunks' row-major layout and LAPACK's column-major one on the device. The result has the
//! CPU's conventions (`Parts[Q (m × r), R (r × n)]`, `r = min(m, n)`, R's diagonal
//! non-negative), so it equals the CPU's up to rounding for a block of full rank.
//!
//! The block is read through its kept device copy where it has one (see `resident`), and Q
//! stays on the device as the copy of the result's first part.
//!
//! cuSOLVER is loaded at run time like the driver; where it is missing the task is
//! `DeviceUnavailable` and runs on the CPU kernels.

use super::devbuf::DevBuf;
use super::resident::{Piece, Ran};
use super::{blas_of, driver, Gpu, Lease, Timer};
use cudarc::cublas::sys::{self as blas_sys, cublasOperation_t};
use cudarc::cublas::CudaBlas;
use cudarc::cusolver::sys as solver_sys;
use cudarc::cusolver::DnHandle;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::os::raw::c_int;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tessera_kernels::cpu::linalg::{check_finite, input_rows};
use tessera_kernels::linalg::{InputRef, LinalgOp, MatOperand};
use tessera_kernels::tensor::{Buffer, HostTensor};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// Whether the cuSOLVER library can be loaded (asked once: loading it panics otherwise).
fn solver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open the library by its names.
    *PRESENT.get_or_init(|| unsafe { solver_sys::is_culib_present() })
}

fn blas_error(what: &str) -> impl FnOnce(cudarc::cublas::result::CublasError) -> KernelError + '_ {
    move |e| KernelError::DeviceUnavailable(format!("cuBLAS {what}: {e}"))
}

fn solver_error(
    what: &str,
) -> impl FnOnce(cudarc::cusolver::result::CusolverError) -> KernelError + '_ {
    move |e| KernelError::DeviceUnavailable(format!("cuSOLVER {what}: {e}"))
}

/// `n` as cuSOLVER's and cuBLAS's `int`; a larger block is left to the CPU.
fn int(n: usize) -> Result<c_int, KernelError> {
    c_int::try_from(n).map_err(|_| {
        KernelError::DeviceUnavailable(format!(
            "a QR block side or size of {n} exceeds cuSOLVER's 32-bit int"
        ))
    })
}

/// The device address of `s`, for cuBLAS and cuSOLVER calls on its own stream (the
/// context tracks no events, so nothing is recorded for the use).
fn ptr(stream: &CudaStream, s: &CudaSlice<f64>) -> *const f64 {
    let (p, _sync) = s.device_ptr(stream);
    p as *const f64
}

/// [`ptr`], to be written through.
fn ptr_mut<T>(stream: &CudaStream, s: &mut CudaSlice<T>) -> *mut T {
    let (p, _sync) = s.device_ptr_mut(stream);
    p as *mut T
}

/// `dst (cols × rows, column-major, leading dimension cols) = srcᵀ`, `src` being the
/// `rows × cols` column-major matrix at `src` with leading dimension `ld` (cuBLAS DGEAM).
///
/// # Safety
/// `src` holds `ld · (cols - 1) + rows` elements with `ld ≥ rows`, `dst` holds
/// `rows · cols`, both on `blas`'s stream, and neither is freed before the stream has run.
unsafe fn transpose(
    blas: &CudaBlas,
    (rows, cols): (usize, usize),
    src: *const f64,
    ld: usize,
    dst: *mut f64,
) -> Result<(), KernelError> {
    let (one, zero) = (1.0f64, 0.0f64);
    let (rows, cols, ld) = (int(rows)?, int(cols)?, int(ld)?);
    // C (cols × rows) = 1 · Aᵀ + 0 · C: with β = 0, C is the in-place "B" and is not read.
    // SAFETY: the caller's contract; the scalars are host values that outlive the call.
    unsafe {
        blas_sys::cublasDgeam(
            *blas.handle(),
            cublasOperation_t::CUBLAS_OP_T,
            cublasOperation_t::CUBLAS_OP_N,
            cols,
            rows,
            &one,
            src,
            ld,
            &zero,
            dst,
            cols,
            dst,
            cols,
        )
    }
    .result()
    .map_err(blas_error("transpose"))
}

impl Gpu {
    /// The thin QR of block `a` on the device, with the device time of its kernels when
    /// `timed` (zero otherwise). Checks and errors are the CPU's; an empty block is the
    /// CPU's (nothing to factor).
    pub(super) fn run_qr(
        &self,
        lease: &mut Lease,
        a: &InputRef,
        inputs: &[Arc<ChunkData>],
        timed: bool,
    ) -> Result<Ran, KernelError> {
        let (values, m, n) = input_rows(inputs, a, "qr operand")?;
        check_finite(values, "qr operand")?;
        let r = m.min(n);
        if r == 0 {
            let op = ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(a.clone())));
            let cpu = tessera_kernels::cpu::execute(&op, inputs)?;
            return Ok(Ran::host(cpu, Duration::ZERO));
        }
        if !solver_present() {
            return Err(KernelError::DeviceUnavailable(
                "no cuSOLVER library (libcusolver.so) could be loaded".into(),
            ));
        }
        let (mi, ni, ri) = (int(m)?, int(n)?, int(r)?);
        int(m.saturating_mul(n))?;
        let stream = Arc::clone(&lease.stream);
        let blas = blas_of(&mut lease.blas, &stream)?;
        let solver = match &mut lease.solver {
            Some(s) => &*s,
            empty => {
                &*empty.insert(DnHandle::new(Arc::clone(&stream)).map_err(solver_error("handle"))?)
            }
        };
        let alloc = |len: usize| {
            // SAFETY: every buffer below is written (by a copy, a transpose or cuSOLVER)
            // before it is read.
            unsafe { stream.alloc::<f64>(len) }.map_err(driver("allocation"))
        };
        // The row-major block is the column-major n × m matrix Aᵀ.
        let block = self.operand(&stream, inputs, a, values)?;
        let at = block.value.f64_values("qr operand")?;
        let mut fa = alloc(m * n)?;
        let mut tau = alloc(r)?;
        let mut rt = alloc(n * r)?;
        let mut qt = alloc(m * r)?;
        let mut info = stream
            .alloc_zeros::<c_int>(1)
            .map_err(driver("allocation"))?;
        let timer = Timer::new(&stream, timed)?;
        timer.start(&stream)?;
        let (fa_p, tau_p) = (ptr_mut(&stream, &mut fa), ptr_mut(&stream, &mut tau));
        let info_p = ptr_mut(&stream, &mut info);
        // SAFETY: `at` holds n · m values (column-major n × m, leading dimension n) and `fa`
        // m · n; both live until the copies back below, which wait for the stream.
        unsafe { transpose(blas, (n, m), ptr(&stream, at), n, fa_p)? };
        let mut lwork_qr: c_int = 0;
        let mut lwork_q: c_int = 0;
        // SAFETY: the sizes describe `fa` (m × n, leading dimension m) and `tau` (r values);
        // the out-parameters are host ints that outlive the calls.
        unsafe {
            solver_sys::cusolverDnDgeqrf_bufferSize(solver.cu(), mi, ni, fa_p, mi, &mut lwork_qr)
                .result()
                .map_err(solver_error("workspace query"))?;
            solver_sys::cusolverDnDorgqr_bufferSize(
                solver.cu(),
                mi,
                ri,
                ri,
                fa_p,
                mi,
                tau_p,
                &mut lwork_q,
            )
            .result()
            .map_err(solver_error("workspace query"))?;
        }
        let lwork = lwork_qr.max(lwork_q).max(1);
        let mut work = alloc(usize::try_from(lwork).unwrap_or(1))?;
        let work_p = ptr_mut(&stream, &mut work);
        // SAFETY: as above; `work` holds `lwork` values and `info` one int, all alive until
        // the stream has run (the copies back wait for it).
        unsafe {
            solver_sys::cusolverDnDgeqrf(
                solver.cu(),
                mi,
                ni,
                fa_p,
                mi,
                tau_p,
                work_p,
                lwork,
                info_p,
            )
            .result()
            .map_err(solver_error("DGEQRF"))?;
            // R is the upper trapezoid of `fa`'s first r rows: its transpose (n × r) is R
            // row-major, copied before DORGQR overwrites `fa` with Q.
            transpose(blas, (r, n), fa_p, m, ptr_mut(&stream, &mut rt))?;
        }
        let mut rr = self.to_host(&stream, &rt, n * r)?;
        // The strict lower part holds Householder vectors: R is zero there. A negative
        // diagonal entry turns its row of R and its column of Q (below) around.
        let mut flip = Vec::new();
        for (i, row) in rr.chunks_exact_mut(n).enumerate() {
            row[..i].iter_mut().for_each(|x| *x = 0.0);
            if row[i].is_sign_negative() {
                row[i..].iter_mut().for_each(|x| *x = -*x);
                flip.push(i);
            }
        }
        let minus_one = -1.0f64;
        // SAFETY: as above; column i of Q is the m values from `fa_p + i·m`, i < r.
        unsafe {
            solver_sys::cusolverDnDorgqr(
                solver.cu(),
                mi,
                ri,
                ri,
                fa_p,
                mi,
                tau_p,
                work_p,
                lwork,
                info_p,
            )
            .result()
            .map_err(solver_error("DORGQR"))?;
            for &i in &flip {
                blas_sys::cublasDscal_v2(
                    *blas.handle(),
                    mi,
                    &minus_one,
                    fa_p.wrapping_add(i * m),
                    1,
                )
                .result()
                .map_err(blas_error("scale"))?;
            }
            // Q (m × r, column-major) transposed is Q row-major.
            transpose(blas, (m, r), fa_p, m, ptr_mut(&stream, &mut qt))?;
        }
        timer.stop(&stream)?;
        let q = self.to_host(&stream, &qt, m * r)?;
        let failed = stream
            .clone_dtoh(&info)
            .map_err(driver("copy from the device"))?;
        if let Some(&code) = failed.first().filter(|&&c| c != 0) {
            return Err(KernelError::DeviceUnavailable(format!(
                "cuSOLVER QR refused parameter {} of a {m} × {n} block",
                -code
            )));
        }
        let took = timer.elapsed()?;
        let q_piece = Piece::Values {
            part: Some(0),
            rows: None,
        };
        Ok(Ran {
            data: ChunkData::Parts(vec![
                HostTensor::new(vec![m, r], Buffer::F64(q))?,
                HostTensor::new(vec![r, n], Buffer::F64(rr))?,
            ]),
            took,
            made: vec![(q_piece, DevBuf::F64(qt))],
        })
    }
}
