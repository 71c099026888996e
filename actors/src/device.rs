//! `DeviceActor`: one for the CPU pool and one per GPU. Each runs its chunk kernels on a
//! [`WorkerPool`] of host threads of its own, never on the actor's event loop — the CPU
//! pool's threads compute, a GPU's few threads each drive the device through
//! [`Gpu::execute`] (the `Gpu` keeps a CUDA stream per concurrent caller). What runs the
//! kernels is the actor's [`Executor`]; everything else is shared: a kernel panic becomes
//! [`KernelError::Panicked`], the fault injector strikes before the kernel, the recorder
//! times it, and every task is reported with [`ChunkFinished`]. An injected
//! [`FaultKind::KillDevice`] stops the actor (its queued tasks are dropped, running ones
//! finish and report to a planner that no longer waits for them); it then reports
//! [`ActorDied`] to its supervisor.

use crate::faults::{FaultInjector, FaultKind, FaultPoint};
use crate::messages::{ActorDied, ActorName, ChunkFinished, DeviceId, DeviceKind, ExecuteChunk};
use crate::planner_state::GpuOps;
use crate::pool::{worker_index, WorkerPool};
use crate::recorder::{Recorder, RunSpan};
use actix::{Actor, ActorContext, Context, Handler, Recipient};
use std::any::Any;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_cuda::Gpu;
use tessera_kernels::{cpu, ChunkData, ChunkOp, KernelError};

/// The id of the CPU pool's device actor.
pub const CPU_DEVICE: DeviceId = DeviceId(0);

/// Host threads driving one GPU: enough to overlap one task's copies and host-side
/// assembly with another's kernel, few enough to leave the cores to the CPU pool.
pub const GPU_HOST_THREADS: usize = 4;

/// Which ops a GPU runs, as the CUDA crate says ([`Gpu::runs`], [`Gpu::pays`],
/// [`Gpu::shares`]): what a planner with GPU devices places by.
pub const CUDA_OPS: GpuOps = GpuOps {
    runs: Gpu::runs,
    pays: Gpu::pays,
    shares: Gpu::shares,
};

/// Tasks queued per worker thread, so a thread never idles waiting for the planner.
const SLOTS_PER_THREAD: usize = 2;

/// The id of the device actor of CUDA device `ordinal` (after the CPU pool's).
pub fn gpu_device_id(ordinal: usize) -> DeviceId {
    DeviceId(u32::try_from(ordinal).map_or(u32::MAX, |o| o.saturating_add(1)))
}

/// What a device actor runs its kernels with.
#[derive(Clone, Debug)]
pub enum Executor {
    /// The CPU kernels ([`tessera_kernels::cpu::execute`]).
    Cpu,
    /// A GPU, for the ops it has kernels for ([`Gpu::runs`]); the planner sends it no
    /// other op, and one that came anyway would run on the CPU kernels of the host thread.
    Cuda(Arc<Gpu>),
}

impl Executor {
    /// The kind of device this is.
    pub fn kind(&self) -> DeviceKind {
        match self {
            Executor::Cpu => DeviceKind::Cpu,
            Executor::Cuda(_) => DeviceKind::Cuda,
        }
    }

    /// Runs `op` on the calling thread, on the GPU where it has a kernel for it, with the
    /// CPU kernels as its fallback ([`with_cpu_fallback`]).
    fn execute(
        &self,
        op: &ChunkOp,
        inputs: &[Arc<ChunkData>],
    ) -> Result<Arc<ChunkData>, KernelError> {
        match self {
            Executor::Cuda(gpu) if Gpu::runs(op) => {
                with_cpu_fallback(op, inputs, || gpu.describe(), || gpu.execute(op, inputs))
            }
            _ => cpu::execute(op, inputs).map(Arc::new),
        }
    }
}

/// Returns `gpu_attempt`'s result for `op`, except where the GPU itself failed (a driver
/// error, device memory exhausted, a kernel NVRTC refuses: `DeviceUnavailable`,
/// `DeviceCompile`): then the task runs on the CPU kernels instead, with a warning naming
/// the device (`describe`) — they compute the same values, and a retry on the GPU would
/// likely fail the same way. The kernel's own errors (bad input, invalid values) are the
/// CPU's and are returned as they are, not run again.
fn with_cpu_fallback(
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
    describe: impl FnOnce() -> String,
    gpu_attempt: impl FnOnce() -> Result<Arc<ChunkData>, KernelError>,
) -> Result<Arc<ChunkData>, KernelError> {
    match gpu_attempt() {
        Err(e @ (KernelError::DeviceUnavailable(_) | KernelError::DeviceCompile(_))) => {
            tracing::warn!(
                device = %describe(),
                op = op.name(),
                "the GPU failed ({e}); running the task on the CPU"
            );
            cpu::execute(op, inputs).map(Arc::new)
        }
        other => other,
    }
}

/// Executes chunk tasks on its own host threads.
#[derive(Debug)]
pub struct DeviceActor {
    id: DeviceId,
    executor: Executor,
    pool: WorkerPool,
    faults: Option<Arc<FaultInjector>>,
    recorder: Arc<Recorder>,
    supervisor: Option<Recipient<ActorDied>>,
    killed: bool,
}

impl DeviceActor {
    /// A CPU pool of `threads` workers named `{prefix}-cpu{i}`, injecting `faults` if given
    /// and timing each kernel with `recorder`'s clock (while recording is on).
    pub fn cpu(
        prefix: &str,
        threads: usize,
        faults: Option<Arc<FaultInjector>>,
        recorder: Arc<Recorder>,
    ) -> io::Result<DeviceActor> {
        let pool = WorkerPool::new(threads, |i| format!("{prefix}-cpu{i}"))?;
        Ok(DeviceActor::new(
            CPU_DEVICE,
            Executor::Cpu,
            pool,
            faults,
            recorder,
        ))
    }

    /// The actor of `gpu` ([`gpu_device_id`] of its ordinal), driving it from
    /// [`GPU_HOST_THREADS`] threads named `{prefix}-g{ordinal}.{i}`, with the CPU pool's
    /// fault injection and recording.
    pub fn cuda(
        prefix: &str,
        gpu: Arc<Gpu>,
        faults: Option<Arc<FaultInjector>>,
        recorder: Arc<Recorder>,
    ) -> io::Result<DeviceActor> {
        let ordinal = gpu.ordinal();
        let pool = WorkerPool::new(GPU_HOST_THREADS, |i| format!("{prefix}-g{ordinal}.{i}"))?;
        let id = gpu_device_id(ordinal);
        Ok(DeviceActor::new(
            id,
            Executor::Cuda(gpu),
            pool,
            faults,
            recorder,
        ))
    }

    fn new(
        id: DeviceId,
        executor: Executor,
        pool: WorkerPool,
        faults: Option<Arc<FaultInjector>>,
        recorder: Arc<Recorder>,
    ) -> DeviceActor {
        DeviceActor {
            id,
            executor,
            pool,
            faults,
            recorder,
            supervisor: None,
            killed: false,
        }
    }

    /// Reports this actor's death (from an injected kill) to `supervisor`.
    pub fn supervised_by(mut self, supervisor: Recipient<ActorDied>) -> DeviceActor {
        self.supervisor = Some(supervisor);
        self
    }

    /// How many tasks the planner may have in flight here.
    pub fn slots(&self) -> usize {
        SLOTS_PER_THREAD * self.pool.threads()
    }

    /// This device's id.
    pub fn id(&self) -> DeviceId {
        self.id
    }

    /// What runs its kernels.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }
}

impl Actor for DeviceActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Self::Context) {
        if let (true, Some(supervisor)) = (self.killed, &self.supervisor) {
            supervisor.do_send(ActorDied {
                actor: ActorName::Device(self.id),
            });
        }
    }
}

impl Handler<ExecuteChunk> for DeviceActor {
    type Result = ();

    fn handle(&mut self, msg: ExecuteChunk, ctx: &mut Self::Context) {
        let ExecuteChunk {
            job,
            key,
            attempt,
            op,
            inputs,
            reply_to,
        } = msg;
        let fault = self
            .faults
            .as_ref()
            .and_then(|f| f.at(FaultPoint::Kernel, op.name()));
        if fault == Some(FaultKind::KillDevice) {
            tracing::warn!(device = %self.id, %job, %key, "injected: device actor killed");
            self.killed = true;
            ctx.stop();
            return;
        }
        let on_refusal = reply_to.clone();
        let recorder = self.recorder.enabled().then(|| Arc::clone(&self.recorder));
        let (executor, device) = (self.executor.clone(), self.id);
        let task = Box::new(move || {
            let trace = tracing::debug_span!("chunk", %device, %job, %key, op = op.name());
            let started = Instant::now();
            let (result, span) = RunSpan::time(recorder.as_deref(), worker_index(), || {
                trace.in_scope(|| run_kernel(&executor, &op, &inputs, fault))
            });
            reply_to.do_send(ChunkFinished {
                job,
                key,
                attempt,
                result,
                span,
                took: started.elapsed(),
            });
        });
        if self.pool.execute(task).is_err() {
            let error = KernelError::DeviceUnavailable(format!("{} has no worker left", self.id));
            on_refusal.do_send(ChunkFinished {
                job,
                key,
                attempt,
                result: Err(error),
                span: RunSpan::default(),
                took: Duration::ZERO,
            });
        }
    }
}

/// Runs one CPU kernel on the calling thread, as the CPU pool's device actor does (a panic
/// becomes [`KernelError::Panicked`]; literal data is handed over as the same allocation).
/// For callers that run a task outside a job, such as a cluster worker's direct path.
pub fn run_cpu_kernel(
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
) -> Result<Arc<ChunkData>, KernelError> {
    run_kernel(&Executor::Cpu, op, inputs, None)
}

/// Runs one kernel on the calling thread as `gpu`'s device actor does: on the GPU where it
/// has a kernel for `op`, else (or where the GPU itself fails) on the CPU kernels. For
/// callers that run a task outside a job, such as a cluster worker's GPU tasks.
pub fn run_gpu_kernel(
    gpu: &Arc<Gpu>,
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
) -> Result<Arc<ChunkData>, KernelError> {
    run_kernel(&Executor::Cuda(Arc::clone(gpu)), op, inputs, None)
}

/// Runs one kernel on the calling thread with `executor`, striking the injected `fault`
/// first; a panic becomes [`KernelError::Panicked`]. Literal data is handed over as the
/// same allocation.
fn run_kernel(
    executor: &Executor,
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
    fault: Option<FaultKind>,
) -> Result<Arc<ChunkData>, KernelError> {
    catch_panic(|| {
        if let Some(kind) = fault {
            FaultInjector::strike(kind, op.name())?;
        }
        match op {
            ChunkOp::Literal(data) => Ok(Arc::clone(data)),
            op => executor.execute(op, inputs),
        }
    })
}

fn catch_panic<T>(f: impl FnOnce() -> Result<T, KernelError>) -> Result<T, KernelError> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|payload| Err(KernelError::Panicked(panic_message(&*payload))))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_kernels::{Buffer, HostTensor, InputRef, LinalgOp, MatOperand};

    fn matrix(v: [f64; 4]) -> Arc<ChunkData> {
        let t = HostTensor::new(vec![2, 2], Buffer::F64(v.to_vec())).unwrap();
        Arc::new(ChunkData::Tensor(t))
    }

    /// `[[1, 2], [3, 4]] @ [[5, 6], [7, 8]]`, an op the GPU has a kernel for.
    fn product() -> (ChunkOp, Vec<Arc<ChunkData>>) {
        let input = |i| MatOperand::Input(InputRef::whole(i));
        let op = ChunkOp::Linalg(LinalgOp::MatMul {
            pairs: vec![(input(0), input(1))],
        });
        (
            op,
            vec![matrix([1.0, 2.0, 3.0, 4.0]), matrix([5.0, 6.0, 7.0, 8.0])],
        )
    }

    #[test]
    fn a_failing_gpu_falls_back_to_the_cpu_kernels() {
        let (op, inputs) = product();
        for error in [
            KernelError::DeviceUnavailable("CUDA allocation: out of memory".into()),
            KernelError::DeviceCompile("NVRTC: error: identifier undefined".into()),
        ] {
            let got = with_cpu_fallback(&op, &inputs, || "fake gpu".into(), || Err(error));
            // By hand: [[1·5 + 2·7, 1·6 + 2·8], [3·5 + 4·7, 3·6 + 4·8]].
            assert_eq!(got, Ok(matrix([19.0, 22.0, 43.0, 50.0])));
        }
        // The CPU's own verdict stands when it fails too: here the shapes do not fit.
        let mismatched = vec![
            matrix([1.0; 4]),
            Arc::new(ChunkData::Tensor(
                HostTensor::new(vec![3, 1], Buffer::F64(vec![1.0; 3])).unwrap(),
            )),
        ];
        let got = with_cpu_fallback(
            &op,
            &mismatched,
            || "fake gpu".into(),
            || Err(KernelError::DeviceUnavailable("no driver".into())),
        );
        assert!(matches!(got, Err(KernelError::ShapeMismatch(_))), "{got:?}");
    }

    #[test]
    fn the_gpus_result_and_the_kernels_own_errors_are_not_run_again_on_the_cpu() {
        let (op, inputs) = product();
        // A result the CPU would not give, and errors where the CPU would succeed: each
        // comes back as the GPU gave it, so the CPU never ran (nor was a warning logged).
        for outcome in [
            Ok(matrix([0.0; 4])),
            Err(KernelError::InvalidValue(
                "integer to a negative power".into(),
            )),
            Err(KernelError::BadInput("input 0 is missing".into())),
            Err(KernelError::ShapeMismatch("inner dimensions differ".into())),
            Err(KernelError::Panicked("index out of bounds".into())),
            Err(KernelError::Injected("injected Error at matmul".into())),
        ] {
            let got = with_cpu_fallback(
                &op,
                &inputs,
                || unreachable!("no warning"),
                || outcome.clone(),
            );
            assert_eq!(got, outcome);
        }
    }

    #[test]
    fn panics_become_kernel_errors() {
        let r: Result<(), _> = catch_panic(|| panic!("bad index {}", 3));
        assert_eq!(r, Err(KernelError::Panicked("bad index 3".into())));
        let r: Result<(), _> = catch_panic(|| panic!("static"));
        assert_eq!(r, Err(KernelError::Panicked("static".into())));
        let r: Result<(), _> = catch_panic(|| std::panic::panic_any(7));
        assert_eq!(
            r,
            Err(KernelError::Panicked("a panic without a message".into()))
        );
        assert_eq!(catch_panic(|| Ok(5)), Ok(5));
    }
}
