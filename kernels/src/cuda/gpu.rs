//! One CUDA device running generated kernels: its context, a pool of streams (one per
//! concurrent caller), the module cache keyed by the kernel's source hash, and the
//! launcher — inputs copied in, outputs allocated, the parameters pushed in the kernel's
//! order, the `faults` word checked after the launch, the outputs copied back and
//! assembled into the chunk the CPU evaluator returns for the same task.
//!
//! Every CUDA call is checked; cudarc panics (a driver without a symbol it expects) are
//! contained and become [`KernelError::DeviceUnavailable`]. Nothing here runs where no
//! driver exists: [`Gpu::open`] says why instead.

use super::codegen::{fault_error, fused_source, CudaKernel, ParamKind};
use super::launch::{assemble, input_buffers, launch_shape, output_lengths};
use super::{nvrtc, probe, GpuProbe};
use crate::dtype::DType;
use crate::expr::FusedKernel;
use crate::tensor::Buffer;
use crate::{ChunkData, ChunkOp, KernelError};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchArgs, LaunchConfig,
    PushKernelArg,
};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A CUDA device opened for running chunk kernels (shared by the threads that drive it).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    name: String,
    arch: String,
    sms: u32,
    memory: usize,
    streams: Mutex<Vec<Arc<CudaStream>>>,
    functions: Mutex<HashMap<String, Arc<CudaFunction>>>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

fn driver(what: &str) -> impl FnOnce(DriverError) -> KernelError + '_ {
    move |e| KernelError::DeviceUnavailable(format!("CUDA {what}: {e}"))
}

/// Runs `f`, turning a panic inside cudarc into `DeviceUnavailable` naming `what`.
fn contained<T>(what: &str, f: impl FnOnce() -> Result<T, KernelError>) -> Result<T, KernelError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(KernelError::DeviceUnavailable(format!(
            "the CUDA driver panicked during {what}"
        )))
    })
}

impl Gpu {
    /// Opens device `ordinal`: its primary context, compute capability, multiprocessor
    /// count and memory. `DeviceUnavailable` names the cause where there is no driver, no
    /// such device, or the driver refuses.
    pub fn open(ordinal: usize) -> Result<Gpu, KernelError> {
        match probe() {
            GpuProbe::Devices(n) if ordinal < n => {}
            GpuProbe::Devices(n) => {
                return Err(KernelError::DeviceUnavailable(format!(
                    "no CUDA device {ordinal}: the driver reports {n}"
                )))
            }
            GpuProbe::NoDriver => {
                return Err(KernelError::DeviceUnavailable(
                    "no CUDA driver (libcuda.so) could be loaded".into(),
                ))
            }
            GpuProbe::DriverError(e) => {
                return Err(KernelError::DeviceUnavailable(format!(
                    "the CUDA driver could not be queried: {e}"
                )))
            }
        }
        contained("opening a device", || {
            let ctx = CudaContext::new(ordinal).map_err(driver("context"))?;
            let (major, minor) = ctx.compute_capability().map_err(driver("query"))?;
            let sms = ctx
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(driver("query"))?;
            Ok(Gpu {
                name: ctx.name().map_err(driver("query"))?,
                memory: ctx.total_mem().map_err(driver("query"))?,
                arch: format!("compute_{major}{minor}"),
                sms: u32::try_from(sms).unwrap_or(1),
                ordinal,
                ctx,
                streams: Mutex::default(),
                functions: Mutex::default(),
            })
        })
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Bytes of device memory.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// Multiprocessors on the device.
    pub fn multiprocessors(&self) -> u32 {
        self.sms
    }

    /// "cuda:N (name, compute_XY, S SMs, M GiB)".
    pub fn describe(&self) -> String {
        format!(
            "cuda:{} ({}, {}, {} SMs, {:.0} GiB)",
            self.ordinal,
            self.name,
            self.arch,
            self.sms,
            self.memory as f64 / f64::from(1u32 << 30)
        )
    }

    /// True for the ops this device has kernels for (today fused elementwise expressions
    /// and their trailing reductions); the rest run on the CPU.
    pub fn runs(op: &ChunkOp) -> bool {
        matches!(op, ChunkOp::Fused(_))
    }

    /// Runs one chunk task on the device and returns what the CPU evaluator returns for
    /// it (see `codegen`'s docs for which values are bit-identical). Ops [`Gpu::runs`]
    /// refuses are `DeviceUnavailable`; the kernel's own errors are the CPU's.
    pub fn execute(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
    ) -> Result<ChunkData, KernelError> {
        self.execute_timed(op, inputs).map(|(data, _)| data)
    }

    /// [`Gpu::execute`], also returning the kernel's own time on the device (CUDA events
    /// around the launch: no compilation, copies or host work).
    pub fn execute_timed(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
    ) -> Result<(ChunkData, Duration), KernelError> {
        match op {
            ChunkOp::Fused(kernel) => contained("a launch", || self.run_fused(kernel, inputs)),
            other => Err(KernelError::DeviceUnavailable(format!(
                "{} has no CUDA kernel",
                other.name()
            ))),
        }
    }

    /// Compiles and loads `kernel` unless a kernel of the same source was loaded before.
    pub fn function(&self, kernel: &CudaKernel) -> Result<Arc<CudaFunction>, KernelError> {
        let cached = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = cached.get(&kernel.name) {
            return Ok(Arc::clone(f));
        }
        drop(cached);
        let ptx = nvrtc::compile(kernel, &self.arch)?;
        let module = self.ctx.load_module(ptx).map_err(driver("module load"))?;
        let f = Arc::new(
            module
                .load_function(&kernel.name)
                .map_err(driver("function lookup"))?,
        );
        let mut cached = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(cached.entry(kernel.name.clone()).or_insert(f)))
    }

    /// Kernels compiled and loaded so far.
    pub fn cached_kernels(&self) -> usize {
        self.functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    fn run_fused(
        &self,
        kernel: &FusedKernel,
        inputs: &[Arc<ChunkData>],
    ) -> Result<(ChunkData, Duration), KernelError> {
        let cuda = fused_source(kernel)?;
        let (root, _) = kernel.root_instr()?;
        let host_inputs = input_buffers(&cuda, inputs)?;
        let function = self.function(&cuda)?;
        self.ctx.bind_to_thread().map_err(driver("context"))?;
        let stream = self.take_stream()?;
        let result = launch(&stream, &function, &cuda, self.sms, &host_inputs);
        self.give_back(stream);
        let (outputs, splits, took) = result?;
        Ok((assemble(&cuda, &root.shape, splits, outputs)?, took))
    }

    fn take_stream(&self) -> Result<Arc<CudaStream>, KernelError> {
        let pooled = self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match pooled {
            Some(s) => Ok(s),
            None => self.ctx.new_stream().map_err(driver("stream")),
        }
    }

    fn give_back(&self, stream: Arc<CudaStream>) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stream);
    }
}

/// Copies the inputs in, launches, checks the faults and copies the outputs back:
/// the outputs in parameter order, the record count, and the kernel's time.
fn launch(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    cuda: &CudaKernel,
    sms: u32,
    host_inputs: &[&Buffer],
) -> Result<(Vec<Buffer>, usize, Duration), KernelError> {
    let shape = launch_shape(cuda, sms);
    let ins = host_inputs
        .iter()
        .map(|b| DevBuf::upload(stream, b))
        .collect::<Result<Vec<_>, _>>()
        .map_err(driver("copy to the device"))?;
    let out_dtypes = cuda.params.iter().filter_map(|p| match p {
        ParamKind::Values { dtype, .. } | ParamKind::Part { dtype, .. } => Some(*dtype),
        _ => None,
    });
    let outs = out_dtypes
        .zip(output_lengths(cuda, shape.splits))
        .map(|(d, n)| DevBuf::alloc(stream, d, n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(driver("allocation"))?;
    let faults = stream.alloc_zeros::<i32>(1).map_err(driver("allocation"))?;
    let splits = i64::try_from(shape.splits)
        .map_err(|_| KernelError::SizeOverflow(format!("{} records", shape.splits)))?;
    let ctx = stream.context();
    // Timing events (cudarc's default flags disable timing).
    let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let start = ctx.new_event(timing).map_err(driver("event"))?;
    let end = ctx.new_event(timing).map_err(driver("event"))?;
    {
        let mut args = stream.launch_builder(function);
        let (mut i, mut o) = (ins.iter(), outs.iter());
        for p in &cuda.params {
            let buf = match p {
                ParamKind::Input { .. } => i.next(),
                ParamKind::Values { .. } | ParamKind::Part { .. } => o.next(),
                ParamKind::Splits => {
                    args.arg(&splits);
                    continue;
                }
                ParamKind::I64(v) => {
                    args.arg(v);
                    continue;
                }
                ParamKind::U64(v) => {
                    args.arg(v);
                    continue;
                }
                ParamKind::F64(v) => {
                    args.arg(v);
                    continue;
                }
                ParamKind::Faults => {
                    args.arg(&faults);
                    continue;
                }
            };
            buf.ok_or_else(|| {
                KernelError::BadInput(format!("{}: a buffer parameter has no buffer", cuda.name))
            })?
            .push(&mut args);
        }
        let config = LaunchConfig {
            grid_dim: (shape.grid, 1, 1),
            block_dim: (cuda.block_dim, 1, 1),
            shared_mem_bytes: 0,
        };
        start.record(stream).map_err(driver("event"))?;
        // SAFETY: the parameters were pushed in the order and with the types the generated
        // signature declares (`CudaKernel::params`), every buffer holds the elements the
        // kernel indexes (inputs checked by `input_buffers`, outputs sized by
        // `output_lengths`), and all of them outlive the launch's stream work, which is
        // synchronised below before they drop.
        unsafe { args.launch(config) }.map_err(driver("launch"))?;
        end.record(stream).map_err(driver("event"))?;
    }
    let fault = stream.clone_dtoh(&faults).map_err(driver("kernel run"))?;
    let took = start.elapsed_ms(&end).map_err(driver("event"))?;
    if let Some(e) = fault.first().copied().and_then(fault_error) {
        return Err(e);
    }
    let outputs = outs
        .iter()
        .map(|d| d.download(stream))
        .collect::<Result<Vec<_>, _>>()
        .map_err(driver("copy from the device"))?;
    let took = Duration::from_secs_f64(f64::from(took.max(0.0)) / 1e3);
    Ok((outputs, shape.splits, took))
}

/// A device buffer of any chunk dtype.
enum DevBuf {
    Bool(CudaSlice<bool>),
    U8(CudaSlice<u8>),
    I32(CudaSlice<i32>),
    I64(CudaSlice<i64>),
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

macro_rules! with_dev {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            DevBuf::Bool($v) => $body,
            DevBuf::U8($v) => $body,
            DevBuf::I32($v) => $body,
            DevBuf::I64($v) => $body,
            DevBuf::F32($v) => $body,
            DevBuf::F64($v) => $body,
        }
    };
}

impl DevBuf {
    fn upload(stream: &Arc<CudaStream>, b: &Buffer) -> Result<DevBuf, DriverError> {
        Ok(match b {
            Buffer::Bool(v) => DevBuf::Bool(stream.clone_htod(v)?),
            Buffer::U8(v) => DevBuf::U8(stream.clone_htod(v)?),
            Buffer::I32(v) => DevBuf::I32(stream.clone_htod(v)?),
            Buffer::I64(v) => DevBuf::I64(stream.clone_htod(v)?),
            Buffer::F32(v) => DevBuf::F32(stream.clone_htod(v)?),
            Buffer::F64(v) => DevBuf::F64(stream.clone_htod(v)?),
        })
    }

    /// `len` elements, at least one (a zero-length allocation is not a valid pointer).
    fn alloc(stream: &Arc<CudaStream>, dtype: DType, len: usize) -> Result<DevBuf, DriverError> {
        let n = len.max(1);
        Ok(match dtype {
            DType::Bool => DevBuf::Bool(stream.alloc_zeros(n)?),
            DType::U8 => DevBuf::U8(stream.alloc_zeros(n)?),
            DType::I32 => DevBuf::I32(stream.alloc_zeros(n)?),
            DType::I64 => DevBuf::I64(stream.alloc_zeros(n)?),
            DType::F32 => DevBuf::F32(stream.alloc_zeros(n)?),
            DType::F64 => DevBuf::F64(stream.alloc_zeros(n)?),
        })
    }

    fn download(&self, stream: &Arc<CudaStream>) -> Result<Buffer, DriverError> {
        Ok(match self {
            DevBuf::Bool(s) => Buffer::Bool(stream.clone_dtoh(s)?),
            DevBuf::U8(s) => Buffer::U8(stream.clone_dtoh(s)?),
            DevBuf::I32(s) => Buffer::I32(stream.clone_dtoh(s)?),
            DevBuf::I64(s) => Buffer::I64(stream.clone_dtoh(s)?),
            DevBuf::F32(s) => Buffer::F32(stream.clone_dtoh(s)?),
            DevBuf::F64(s) => Buffer::F64(stream.clone_dtoh(s)?),
        })
    }

    fn push<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        with_dev!(self, s => { args.arg(s); });
    }
}
