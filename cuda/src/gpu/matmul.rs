//! Block products through cuBLAS: `LinalgOp::MatMul`'s pairs summed into one row-major
//! `f64` result by DGEMM. An operand is an input block (its rows copied in, or the copy
//! kept from an earlier task: `resident`) or a fused kernel run on the device, whose
//! values never leave it. Shapes are checked with the CPU's errors; values differ from the
//! CPU's in rounding only (another summation order). The result stays on the device as
//! its chunk's copy for the tasks that read it there (see `resident`).

use super::devbuf::DevBuf;
use super::resident::{OnDevice, Ran, WHOLE};
use super::{blas_of, driver, Gpu, Lease, Timer};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::{CudaSlice, CudaStream};
use std::os::raw::c_int;
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::cpu::linalg::input_rows;
use tessera_kernels::dtype::DType;
use tessera_kernels::linalg::MatOperand;
use tessera_kernels::tensor::{Buffer, HostTensor};
use tessera_kernels::{ChunkData, KernelError};

/// A row-major `f64` matrix on the device: an input block's kept copy, or made by this
/// task (a fused operand, or an empty block's placeholder).
struct DeviceMatrix {
    data: OnDevice<DevBuf>,
    rows: usize,
    cols: usize,
}

impl DeviceMatrix {
    /// The values (an input's copy is `f64`: `input_rows` checked its chunk).
    fn values(&self) -> Result<&CudaSlice<f64>, KernelError> {
        self.data.f64_values("a matmul operand")
    }
}

fn dim(n: usize) -> Result<c_int, KernelError> {
    c_int::try_from(n.max(1)).map_err(|_| {
        KernelError::SizeOverflow(format!("a matrix side of {n} exceeds cuBLAS's int"))
    })
}

impl Gpu {
    /// `sum(a @ b for (a, b) in pairs)` on the device, with the device time of its kernels
    /// when `timed` (zero otherwise).
    pub(super) fn run_matmul(
        &self,
        lease: &mut Lease,
        pairs: &[(MatOperand, MatOperand)],
        inputs: &[Arc<ChunkData>],
        timed: bool,
    ) -> Result<Ran, KernelError> {
        let stream = Arc::clone(&lease.stream);
        let blas = blas_of(&mut lease.blas, &stream)?;
        let mut acc: Option<(CudaSlice<f64>, usize, usize)> = None;
        let mut took = Duration::ZERO;
        for (t, (a, b)) in pairs.iter().enumerate() {
            let left = format!("matmul pair {t} left operand");
            let (a, ta) = self.matrix(&stream, a, inputs, &left, timed)?;
            let right = format!("matmul pair {t} right operand");
            let (b, tb) = self.matrix(&stream, b, inputs, &right, timed)?;
            let (m, k, n) = (a.rows, a.cols, b.cols);
            if k != b.rows {
                return Err(KernelError::ShapeMismatch(format!(
                    "matmul pair {t}: inner dimensions differ ({m} × {k} times {} × {n})",
                    b.rows
                )));
            }
            let c = match &mut acc {
                Some((_, om, on)) if (*om, *on) != (m, n) => {
                    return Err(KernelError::ShapeMismatch(format!(
                        "matmul pair {t}: product is {m} × {n}, earlier products are {om} × {on}"
                    )))
                }
                Some((c, _, _)) => c,
                empty => {
                    let c = stream
                        .alloc_zeros::<f64>(m.saturating_mul(n).max(1))
                        .map_err(driver("allocation"))?;
                    &mut empty.insert((c, m, n)).0
                }
            };
            took += ta + tb;
            if m == 0 || n == 0 || k == 0 {
                continue;
            }
            // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: cuBLAS gets B first.
            let cfg = GemmConfig {
                transa: cublasOperation_t::CUBLAS_OP_N,
                transb: cublasOperation_t::CUBLAS_OP_N,
                m: dim(n)?,
                n: dim(m)?,
                k: dim(k)?,
                alpha: 1.0,
                lda: dim(n)?,
                ldb: dim(k)?,
                beta: 1.0,
                ldc: dim(n)?,
            };
            let timer = Timer::new(&stream, timed)?;
            timer.start(&stream)?;
            // SAFETY: B is k × n and A is m × k row-major (n·k and k·m elements, leading
            // dimensions n and k), C holds m·n elements; all live until the copy back,
            // which waits for the stream.
            unsafe { blas.gemm(cfg, b.values()?, a.values()?, c) }
                .map_err(|e| KernelError::DeviceUnavailable(format!("cuBLAS DGEMM: {e}")))?;
            timer.stop(&stream)?;
            took += timer.elapsed()?;
        }
        let (c, m, n) = acc.ok_or_else(|| {
            KernelError::BadInput("matmul needs at least one operand pair".into())
        })?;
        let values = self.to_host(&stream, &c, m * n)?;
        Ok(Ran {
            data: ChunkData::Tensor(HostTensor::new(vec![m, n], Buffer::F64(values))?),
            took,
            made: vec![(WHOLE, DevBuf::F64(c))],
        })
    }

    /// An operand on the device, and the device time it took to compute (when `timed`).
    fn matrix(
        &self,
        stream: &Arc<CudaStream>,
        op: &MatOperand,
        inputs: &[Arc<ChunkData>],
        what: &str,
        timed: bool,
    ) -> Result<(DeviceMatrix, Duration), KernelError> {
        match op {
            MatOperand::Input(r) => {
                let (values, rows, cols) = input_rows(inputs, r, what)?;
                let data = if values.is_empty() {
                    OnDevice::Made(DevBuf::F64(
                        stream.alloc_zeros::<f64>(1).map_err(driver("allocation"))?,
                    ))
                } else {
                    OnDevice::Kept(self.operand(stream, inputs, r, values)?)
                };
                Ok((DeviceMatrix { data, rows, cols }, Duration::ZERO))
            }
            MatOperand::Fused(kernel) => {
                let (root, _) = kernel.root_instr()?;
                let &[rows, cols] = root.shape.as_slice() else {
                    return Err(KernelError::ShapeMismatch(format!(
                        "{what}: expected the fused kernel to produce a 2-D matrix, got shape {:?}",
                        root.shape
                    )));
                };
                if kernel.reduce.is_some() {
                    return Err(KernelError::BadInput(format!(
                        "{what}: expected the fused kernel to produce a tensor"
                    )));
                }
                let launched = self.launch_fused(stream, kernel, inputs, timed)?;
                let dtype = root.dtype;
                let data = launched
                    .outputs
                    .into_iter()
                    .next()
                    .filter(|b| b.dtype() == DType::F64)
                    .ok_or_else(|| {
                        KernelError::BadInput(format!(
                            "{what}: expected the fused kernel to produce f64 values, got {dtype}"
                        ))
                    })?;
                let data = OnDevice::Made(data);
                Ok((DeviceMatrix { data, rows, cols }, launched.took))
            }
        }
    }
}
