//! One CUDA device running chunk kernels: its context, a pool of streams (one per
//! concurrent caller, each with its cuBLAS and cuSOLVER handles once needed), the module
//! cache keyed by the generated kernel's source hash, and the launchers: fused kernels
//! ([`fused`]), block products through cuBLAS ([`matmul`]), a block's QR through cuSOLVER
//! ([`qr`]), groupby partials ([`groupby`]) and join matching ([`join`]) on `frame.cu`'s
//! hash kernels, and filters ([`filter`]) through generated predicate kernels (shared
//! parts in [`frame`]). Each returns the chunk the CPU kernels return
//! for the same task.
//!
//! Every CUDA call is checked; cudarc panics (a driver or library without a symbol it
//! expects) are contained and become [`KernelError::DeviceUnavailable`]. Nothing here runs
//! where no driver exists: [`Gpu::open`] says why instead.

mod budget;
mod devbuf;
mod filter;
mod frame;
mod fused;
mod gather;
mod groupby;
mod join;
mod matmul;
mod qr;
mod resident;
mod staging;

pub use frame::compile_frame_kernels;

use super::codegen::CudaKernel;
use super::filter_gen;
use super::{nvrtc, probe, GpuProbe};
use cudarc::cublas::CudaBlas;
use cudarc::driver::result;
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags, CUmemPool_attribute};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, DriverError};
use resident::Ran;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;
use tessera_kernels::frame::join::JoinHow;
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::ops::{self as frame_ops, FrameOp, Pipeline, Sink, Source};
use tessera_kernels::linalg::{LinalgOp, MatOperand};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// Elements under which a fused kernel is not worth a GPU task ([`Gpu::pays`]): a GPU
/// task's fixed cost through the runtime (launch, copies, synchronization, the actors'
/// messages) was 0.13–0.18 ms on an H100, where a CPU core evaluates 4,096 elements of
/// even a trigonometric expression in well under 0.1 ms (docs/log/gpu.md, stop 42).
pub const GPU_MIN_ELEMENTS: usize = 4096;

/// A CUDA device opened for running chunk kernels (shared by the threads that drive it).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    name: String,
    arch: String,
    sms: u32,
    memory: usize,
    /// Device memory for running tasks: nine tenths of it (the rest for the context, the
    /// modules and cuBLAS's workspaces) less the kept copies' share, which the memory
    /// pool also keeps once freed.
    budget: Arc<budget::DevicePool>,
    /// Device copies of chunks (read by tasks, or made by them) kept between tasks, in a
    /// fifth of the memory.
    resident: resident::Resident,
    leases: Mutex<Vec<Lease>>,
    /// Page-locked buffers for large copies, kept between them.
    stages: Mutex<Vec<staging::Stage>>,
    functions: Mutex<HashMap<String, Arc<CudaFunction>>>,
    frame: Mutex<Option<Arc<frame::FrameFns>>>,
}

/// A stream lent to one caller at a time, with its cuBLAS and cuSOLVER handles once a task
/// needed them.
struct Lease {
    stream: Arc<CudaStream>,
    blas: Option<CudaBlas>,
    solver: Option<cudarc::cusolver::DnHandle>,
}

/// The cuBLAS handle in `slot`, created on `stream` at first use (a lease keeps it).
fn blas_of<'a>(
    slot: &'a mut Option<CudaBlas>,
    stream: &Arc<CudaStream>,
) -> Result<&'a CudaBlas, KernelError> {
    match slot {
        Some(b) => Ok(b),
        empty => Ok(empty.insert(
            CudaBlas::new(Arc::clone(stream))
                .map_err(|e| KernelError::DeviceUnavailable(format!("cuBLAS: {e}")))?,
        )),
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Maps a driver error to `DeviceUnavailable` naming the step that failed.
fn driver(what: &str) -> impl FnOnce(DriverError) -> KernelError + '_ {
    move |e| KernelError::DeviceUnavailable(format!("CUDA {what}: {e}"))
}

/// Lets the device's default memory pool (where stream-ordered allocations come from) keep
/// up to `bytes` of freed memory across synchronizations, instead of its default of none:
/// memory given back to the driver is mapped again by the next allocation, and with the
/// staging copies' synchronizations that made the groupby's kernels at 1e8 rows take 9.8 ms
/// instead of 4.8 on an H100 (docs/log/gpu.md, stop 32).
fn keep_freed_memory(ctx: &CudaContext, bytes: u64) -> Result<(), KernelError> {
    let mut keep = bytes;
    // SAFETY: the device is the context's; the release threshold is a cuuint64_t, which
    // `keep` is and outlives the call.
    unsafe {
        let pool =
            result::device::get_default_mem_pool(ctx.cu_device()).map_err(driver("memory pool"))?;
        result::mem_pool::set_attribute(
            pool,
            CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut keep as *mut u64).cast(),
        )
    }
    .map_err(driver("memory pool"))
}

/// The error of an op this device has no kernel for.
fn no_kernel(op: &ChunkOp) -> KernelError {
    KernelError::DeviceUnavailable(format!("{} has no CUDA kernel", op.name()))
}

/// Runs `f`, turning a panic inside cudarc into `DeviceUnavailable` naming `what`.
fn contained<T>(what: &str, f: impl FnOnce() -> Result<T, KernelError>) -> Result<T, KernelError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(KernelError::DeviceUnavailable(format!(
            "the CUDA driver panicked during {what}"
        )))
    })
}

/// The device time of a launch, measured with CUDA events only when timing was asked
/// for ([`Gpu::execute_timed`]): [`Gpu::execute`] creates no events. Between start and
/// stop, [`Timer::mark`] can end named phases, logged at debug level by [`Timer::elapsed`].
struct Timer(Option<Events>);

/// A timed launch's events: start, the phases' ends, stop.
struct Events {
    start: CudaEvent,
    marks: Vec<(&'static str, CudaEvent)>,
    end: CudaEvent,
}

/// The milliseconds from `a` to `b` (waits for `b`).
fn between(a: &CudaEvent, b: &CudaEvent) -> Result<Duration, KernelError> {
    let ms = a.elapsed_ms(b).map_err(driver("event"))?;
    Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
}

impl Timer {
    /// Timing events on `stream`'s context when `timed` (cudarc's default flags disable
    /// timing), none otherwise.
    fn new(stream: &Arc<CudaStream>, timed: bool) -> Result<Timer, KernelError> {
        if !timed {
            return Ok(Timer(None));
        }
        let event = || {
            stream
                .context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver("event"))
        };
        Ok(Timer(Some(Events {
            start: event()?,
            marks: Vec::new(),
            end: event()?,
        })))
    }

    /// Records the start event on `stream` (nothing when untimed).
    fn start(&self, stream: &Arc<CudaStream>) -> Result<(), KernelError> {
        match &self.0 {
            Some(e) => e.start.record(stream).map_err(driver("event")),
            None => Ok(()),
        }
    }

    /// Ends phase `name` on `stream` (nothing when untimed).
    fn mark(&mut self, stream: &Arc<CudaStream>, name: &'static str) -> Result<(), KernelError> {
        let Some(e) = &mut self.0 else {
            return Ok(());
        };
        let event = stream
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("event"))?;
        event.record(stream).map_err(driver("event"))?;
        e.marks.push((name, event));
        Ok(())
    }

    /// Records the end event on `stream` (nothing when untimed).
    fn stop(&self, stream: &Arc<CudaStream>) -> Result<(), KernelError> {
        match &self.0 {
            Some(e) => e.end.record(stream).map_err(driver("event")),
            None => Ok(()),
        }
    }

    /// The time between start and stop (waits for the end event), each marked phase's
    /// logged at debug level; zero when untimed.
    fn elapsed(&self) -> Result<Duration, KernelError> {
        let Some(e) = &self.0 else {
            return Ok(Duration::ZERO);
        };
        let mut from = &e.start;
        for (name, mark) in &e.marks {
            let ms = between(from, mark)?.as_secs_f64() * 1e3;
            tracing::debug!(phase = name, ms, "device phase");
            from = mark;
        }
        between(&e.start, &e.end)
    }
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
            // SAFETY: every device buffer here lives on one stream, the one its task
            // allocated it on (a `Lease`'s), and is used, copied and freed (stream-ordered)
            // there alone; nothing is shared between two tasks' streams. So cudarc's
            // per-buffer events, which order uses across streams, would only cost two
            // event creations per allocation and a record and a wait per use.
            unsafe { ctx.disable_event_tracking() };
            let (major, minor) = ctx.compute_capability().map_err(driver("query"))?;
            let sms = ctx
                .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map_err(driver("query"))?;
            let memory = ctx.total_mem().map_err(driver("query"))?;
            let kept = memory as u64 / 5;
            let budget = memory as u64 / 10 * 9 - kept;
            keep_freed_memory(&ctx, budget + kept)?;
            Ok(Gpu {
                name: ctx.name().map_err(driver("query"))?,
                memory,
                budget: budget::DevicePool::new(budget),
                resident: resident::Resident::new(kept),
                arch: format!("compute_{major}{minor}"),
                sms: u32::try_from(sms).unwrap_or(1),
                ordinal,
                ctx,
                leases: Mutex::default(),
                stages: Mutex::default(),
                functions: Mutex::default(),
                frame: Mutex::default(),
            })
        })
    }

    /// Device `ordinal`, opened once per process and shared: every session of the process
    /// then shares its streams and its compiled kernels. Errors as [`Gpu::open`] (not
    /// remembered: a later call tries again).
    pub fn shared(ordinal: usize) -> Result<Arc<Gpu>, KernelError> {
        static OPENED: OnceLock<Mutex<HashMap<usize, Arc<Gpu>>>> = OnceLock::new();
        let mut opened = OPENED
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(gpu) = opened.get(&ordinal) {
            return Ok(Arc::clone(gpu));
        }
        let gpu = Arc::new(Gpu::open(ordinal)?);
        opened.insert(ordinal, Arc::clone(&gpu));
        Ok(gpu)
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

    /// True where an op this device has a kernel for ([`Gpu::runs`]) is worth a GPU task's
    /// fixed cost: every such op but a fused kernel whose instructions each evaluate fewer
    /// than [`GPU_MIN_ELEMENTS`] elements (a reduction's finishing arithmetic on a scalar,
    /// say), which a CPU core runs in microseconds.
    pub fn pays(op: &ChunkOp) -> bool {
        match op {
            ChunkOp::Fused(k) => k
                .instrs
                .iter()
                .filter_map(|i| tessera_kernels::checked_numel(&i.shape).ok())
                .any(|n| n >= GPU_MIN_ELEMENTS),
            op => Gpu::runs(op),
        }
    }

    /// True for the ops of [`Gpu::runs`] a CPU core runs in a time of the same order, so
    /// that an idle CPU pool may take them when it is expected to finish first: the
    /// dataframe ops, whose tasks spend much of their time on the host thread (reading
    /// columns, assembling the output table) on either device. Their answers are the CPU
    /// kernels' (float sums may round differently, as `docs/guide/gpu.md` says).
    pub fn shares(op: &ChunkOp) -> bool {
        matches!(op, ChunkOp::Frame(_)) && Gpu::runs(op)
    }

    /// True for the ops this device has kernels for: fused elementwise expressions with
    /// their trailing reductions, block products (cuBLAS), one block's QR (cuSOLVER),
    /// groupby partials of tables in memory, their filters and filters kept as tables
    /// (generated predicate kernels), and the matching of inner and left joins (hash
    /// kernels; a spec, predicate or column type they lack is computed by the CPU kernels
    /// on the calling thread); the rest run on the CPU.
    pub fn runs(op: &ChunkOp) -> bool {
        match op {
            ChunkOp::Fused(k) => k.instrs.iter().all(|i| crate::codegen::generated(i.dtype)),
            // A QR of a block computed in the task (a fused operand) runs on the CPU.
            ChunkOp::Linalg(LinalgOp::MatMul { .. } | LinalgOp::Qr(MatOperand::Input(_))) => true,
            // A join's matching; the steps and sink fused after it take the device's
            // kernels where it has them, else the CPU's.
            ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
                source: Source::Join { spec, .. },
                ..
            })) => matches!(spec.how, JoinHow::Inner | JoinHow::Left),
            ChunkOp::Frame(FrameOp::Pipeline(p)) => {
                // A table kept after filters goes to the device only where a predicate may
                // have a kernel there.
                let filters = p.steps.iter().any(|s| match s {
                    MapStep::Filter(e) => filter_gen::may_take(e),
                    _ => false,
                });
                matches!(p.source, Source::Input)
                    && match p.sink {
                        Sink::GroupPartial(_) | Sink::CountedPartial { .. } => true,
                        Sink::Table => filters,
                        Sink::Partition { .. } | Sink::Write { .. } => false,
                    }
            }
            _ => false,
        }
    }

    /// Runs one chunk task on the device and returns what the CPU evaluator returns for
    /// it (see `codegen`'s docs for which values are bit-identical; products differ from
    /// the CPU's in rounding, as two BLAS libraries do). Ops [`Gpu::runs`] refuses are
    /// `DeviceUnavailable`; the kernels' own errors are the CPU's. A task first reserves
    /// the device memory it is estimated to need, waiting while the tasks running on the
    /// device hold too much of it (see `budget`). The values of a fused kernel's tensor, a
    /// product and a QR's Q stay on the device as the returned chunk's copy while it lives
    /// (see `resident`), so a later task on this device reading that chunk skips the copy
    /// in.
    pub fn execute(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
    ) -> Result<Arc<ChunkData>, KernelError> {
        self.run_op(op, inputs, false).map(|(data, _)| data)
    }

    /// [`Gpu::execute`], also returning the device time of its kernels (CUDA events around
    /// the launches: no compilation, copies or host work).
    pub fn execute_timed(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
    ) -> Result<(Arc<ChunkData>, Duration), KernelError> {
        self.run_op(op, inputs, true)
    }

    /// Runs `op`, timing its kernels with CUDA events only when `timed` (else the time is
    /// zero and no event is created).
    fn run_op(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
        timed: bool,
    ) -> Result<(Arc<ChunkData>, Duration), KernelError> {
        let what = match op {
            ChunkOp::Fused(_) => "a launch",
            ChunkOp::Linalg(LinalgOp::MatMul { .. }) => "a product",
            ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(_))) => "a QR factorization",
            ChunkOp::Frame(_) if Gpu::runs(op) => "a dataframe op",
            other => return Err(no_kernel(other)),
        };
        let _held = self.budget.reserve(budget::device_estimate(op, inputs));
        contained(what, || {
            self.with_lease(|l| {
                let ran = match op {
                    ChunkOp::Fused(kernel) => self.run_fused(l, kernel, inputs, timed)?,
                    ChunkOp::Linalg(LinalgOp::MatMul { pairs }) => {
                        self.run_matmul(l, pairs, inputs, timed)?
                    }
                    ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(a))) => {
                        self.run_qr(l, a, inputs, timed)?
                    }
                    ChunkOp::Frame(frame) => {
                        let device = frame::GpuFrames {
                            gpu: self,
                            stream: &l.stream,
                            owners: inputs,
                            timed,
                            took: std::cell::Cell::new(Duration::ZERO),
                        };
                        let data = frame_ops::run_with(frame, inputs, &device)?;
                        Ran::host(data, device.took.get())
                    }
                    other => return Err(no_kernel(other)),
                };
                self.keep_made(&l.stream, ran)
            })
        })
    }

    /// Compiles and loads `kernel` unless a kernel of the same source was loaded before.
    pub fn function(&self, kernel: &CudaKernel) -> Result<Arc<CudaFunction>, KernelError> {
        self.function_of(&kernel.name, &kernel.source)
    }

    /// Compiles and loads the kernel `name` of `source` unless it was loaded before (a
    /// generated kernel's name is its source's hash).
    fn function_of(&self, name: &str, source: &str) -> Result<Arc<CudaFunction>, KernelError> {
        let cached = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = cached.get(name) {
            return Ok(Arc::clone(f));
        }
        drop(cached);
        let ptx = nvrtc::compile_source(name, source, &self.arch)?;
        let module = self.ctx.load_module(ptx).map_err(driver("module load"))?;
        let f = Arc::new(
            module
                .load_function(name)
                .map_err(driver("function lookup"))?,
        );
        let mut cached = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(cached.entry(name.to_string()).or_insert(f)))
    }

    /// Kernels compiled and loaded so far.
    pub fn cached_kernels(&self) -> usize {
        self.functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Runs `f` with a stream of its own (from the pool, or a new one), returned after.
    fn with_lease<T>(
        &self,
        f: impl FnOnce(&mut Lease) -> Result<T, KernelError>,
    ) -> Result<T, KernelError> {
        self.ctx.bind_to_thread().map_err(driver("context"))?;
        let pooled = self
            .leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut lease = match pooled {
            Some(l) => l,
            None => Lease {
                stream: self.ctx.new_stream().map_err(driver("stream"))?,
                blas: None,
                solver: None,
            },
        };
        let result = f(&mut lease);
        self.leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(lease);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untimed_launch_has_no_events_and_takes_zero_device_time() {
        // `Timer::new(stream, false)` returns this without touching the stream; its
        // start and stop record nothing.
        let untimed = Timer(None);
        assert_eq!(untimed.elapsed().unwrap(), Duration::ZERO);
    }
}
