//! How a task runs: its kernel runs on a thread of the worker's own pool and its output
//! goes straight into the worker's storage as a kept chunk
//! ([`ActorSystem::store`](tessera_actors::ActorSystem::store)). A task costs one hand-off
//! to the pool and one message to storage (two more to read held inputs).
//!
//! A kernel failure is a typed kernel error, reported once: the scheduler's planner runs a
//! retryable one again (on this or another worker). A split task's output is stored one
//! chunk per part; a task of a job cancelled here before it starts is not run. The task
//! runs only once its estimate ([`task_estimate`], the planner's rule) is reserved in the
//! worker's memory budget ([`super::room`]), and holds that reservation until storage has
//! the output. So tasks running at once on the pool cannot together overrun the budget.

use super::held::{Held, HeldChunk};
use crate::scheduler::kernel_error_payload;
use std::sync::Arc;
use std::time::Instant;
use tessera_actors::{
    run_cpu_kernel, run_gpu_kernel, split_parts, KeptChunk, ReadError, StorageError,
};
use tessera_cuda::Gpu;
use tessera_kernels::{ChunkData, ChunkOp, KernelError};
use tessera_proto::pb::{self, TaskState};

/// A task's input, as the worker found it.
#[derive(Clone)]
pub(super) enum Input {
    /// Held in this worker's storage.
    Held(HeldChunk),
    /// Fetched from the peer that holds it.
    Fetched(Arc<ChunkData>),
}

/// The status of a task that ended without output (boxed: it is large).
pub(super) type Ended = Box<pb::TaskStatus>;

/// A task ready to run directly: its op, its inputs in the op's order with where the
/// scheduler said they are, the number of parts it splits into (0: not split), and
/// whether its output may be dropped.
pub(super) struct DirectTask {
    /// The scheduler's job.
    pub job: u64,
    /// What to compute.
    pub op: ChunkOp,
    /// Its inputs, in the op's order (a repeated input appears again).
    pub inputs: Vec<Input>,
    /// Where the scheduler said each input is, in the same order (`RunTask.inputs`).
    pub locations: Vec<pb::ChunkLocation>,
    /// How many parts its output splits into (0: one chunk).
    pub parts: usize,
    /// Whether its output may be dropped from memory (`RunTask.droppable`).
    pub droppable: bool,
    /// The GPU it runs on (`None`: the CPU kernels).
    pub gpu: Option<Arc<Gpu>>,
}

/// Bytes to reserve for a task of `op` on `inputs` while it runs, by the planner's rule
/// ([`tessera_actors::task_estimate`]: its output, 0 where nothing estimates it, and its
/// kernel's working memory).
pub(super) fn task_estimate(op: &ChunkOp, inputs: &[Input]) -> u64 {
    let sizes: Vec<u64> = inputs
        .iter()
        .map(|input| match input {
            Input::Held(h) => h.kept.nbytes(),
            Input::Fetched(data) => data.nbytes() as u64,
        })
        .collect();
    tessera_actors::task_estimate(Some(op), &sizes, 0)
}

/// Runs `task` on the calling thread and keeps its output in `held`'s storage: the kept
/// chunks (one, or one per part), or the status that reports why there are none.
pub(super) fn run(held: &Held, task: DirectTask) -> Result<Vec<Arc<KeptChunk>>, Ended> {
    if held.is_cancelled(task.job) {
        return Err(Box::new(cancelled()));
    }
    let data = read_inputs(held, &task.inputs, &task.locations)?;
    let started = Instant::now();
    let output = match &task.gpu {
        Some(gpu) => run_gpu_kernel(gpu, &task.op, &data),
        None => run_cpu_kernel(&task.op, &data),
    }
    .map_err(|e| Box::new(kernel_failed(&e)))?;
    let took = started.elapsed();
    drop(data);
    let pieces = if task.parts == 0 {
        vec![output]
    } else {
        split_parts(output, task.parts).map_err(|e| Box::new(kernel_failed(&e)))?
    };
    // A task the scheduler can run again offers its outputs for dropping as it stores
    // them, so storage weighs a drop before it would spill them.
    let recompute = task.droppable.then_some(took);
    pieces
        .into_iter()
        .map(|piece| {
            held.system()
                .store_with(piece, recompute)
                .map(Arc::new)
                .map_err(|e| Box::new(failed(e.to_string(), true)))
        })
        .collect()
}

/// The inputs' data: held ones read from storage in one request, fetched ones as they are.
/// Held ones storage no longer has end the task with their inputs missing (see
/// [`inputs_gone`]).
fn read_inputs(
    held: &Held,
    inputs: &[Input],
    locations: &[pb::ChunkLocation],
) -> Result<Vec<Arc<ChunkData>>, Ended> {
    let stored: Vec<&KeptChunk> = inputs
        .iter()
        .filter_map(|input| match input {
            Input::Held(h) => Some(h.kept.as_ref()),
            Input::Fetched(_) => None,
        })
        .collect();
    let mut read = held
        .system()
        .read_kept(&stored)
        .map_err(|e| match e {
            ReadError::Lost(gone) => Box::new(inputs_gone(&gone, inputs, locations)),
            e => Box::new(failed(format!("reading a held input: {e}"), true)),
        })?
        .into_iter();
    inputs
        .iter()
        .map(|input| match input {
            Input::Held(_) => read
                .next()
                .ok_or_else(|| Box::new(failed("storage handed out too few inputs".into(), true))),
            Input::Fetched(data) => Ok(Arc::clone(data)),
        })
        .collect()
}

/// The status of a task whose held inputs storage no longer has (`gone` names them, by
/// their ids in storage; `inputs` and their `locations` in the same order): missing, so
/// that the scheduler computes them again, counting no loss where storage dropped them.
/// A task whose missing inputs are not among its own failed, to be run again.
pub(super) fn inputs_gone(
    gone: &StorageError,
    inputs: &[Input],
    locations: &[pb::ChunkLocation],
) -> pb::TaskStatus {
    let mut missing: Vec<pb::ChunkLocation> = Vec::new();
    for (input, location) in inputs.iter().zip(locations) {
        if let Input::Held(h) = input {
            if gone.ids().contains(&h.kept.id()) && !missing.contains(location) {
                missing.push(location.clone());
            }
        }
    }
    if missing.is_empty() {
        return failed(format!("reading a held input: {gone}"), true);
    }
    pb::TaskStatus {
        state: TaskState::InputMissing as i32,
        error: gone.to_string(),
        missing,
        dropped: matches!(gone, StorageError::Dropped { .. }),
        ..Default::default()
    }
}

/// The status of a task whose kernel failed with `error`.
pub(super) fn kernel_failed(error: &KernelError) -> pb::TaskStatus {
    pb::TaskStatus {
        kernel_error: kernel_error_payload(error),
        ..failed(error.to_string(), error.is_retryable())
    }
}

/// The status of a task that failed for `error`.
pub(super) fn failed(error: String, retryable: bool) -> pb::TaskStatus {
    pb::TaskStatus {
        state: TaskState::Failed as i32,
        error,
        retryable,
        ..Default::default()
    }
}

/// The status of a task of a job cancelled here.
pub(super) fn cancelled() -> pb::TaskStatus {
    pb::TaskStatus {
        state: TaskState::Cancelled as i32,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
