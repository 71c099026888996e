//! The task-stream recorder: always on and cheap, it keeps what every job did — each chunk
//! task's run (device and worker thread, start and end, op, bytes in and out, attempt,
//! retry or lineage recompute), the storage events (spill, read back, drop) and the host
//! memory reserved over time — for the performance report and the trace export.
//!
//! Events are taken where they happen with one clock, [`Recorder::now`] (nanoseconds since
//! the actor system started): a device's worker thread times its kernel and sends the span
//! back in the `ChunkFinished` message it sends anyway; the storage actor keeps
//! its events per job and hands them over with the job's outputs; the planner, which owns
//! the job, files them in the job's [`TaskStream`]. No lock is taken on the hot path.
//!
//! Memory is bounded: a stream keeps at most [`Recorder::capacity`] task records (and as
//! many storage events); beyond that only the per-op summaries ([`OpSummary`]: tasks, busy
//! time, bytes) grow, and the memory samples are thinned to at most [`MEMORY_SAMPLES`]
//! over the whole job (each kept sample the peak of those it stands for).

use crate::graph::ChunkKey;
use crate::ids::DeviceId;
use crate::job::{JobId, JobStats};
use crate::storage::StorageStats;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Task records (and storage events) a job keeps by default; beyond them, summaries.
pub const DEFAULT_CAPACITY: usize = 100_000;

/// Samples of the reserved host memory a job keeps at most (thinned as the job runs).
pub const MEMORY_SAMPLES: usize = 4096;

/// Distinct op names a process takes from decoded task streams (a cluster's, sent by its
/// scheduler); past them a name decodes as [`OTHER_OP`].
const DECODED_OP_NAMES: usize = 1024;

/// An op's name, as records hold it. (An alias, not `&'static str` written out, so that
/// serde decodes it through `op_name` rather than borrowing from the input.)
pub type OpName = &'static str;

/// The op name of a decoded record whose name did not fit in [`DECODED_OP_NAMES`].
const OTHER_OP: &str = "other";

/// Decodes an op name as the `&'static str` records hold: each distinct name is leaked
/// once, and at most [`DECODED_OP_NAMES`] of them (op names are a small fixed set; a
/// peer sending more gets [`OTHER_OP`] for the rest).
fn op_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<OpName, D::Error> {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let name = String::deserialize(deserializer)?;
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&known) = names.get(name.as_str()) {
        return Ok(known);
    }
    if names.len() >= DECODED_OP_NAMES {
        return Ok(OTHER_OP);
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.insert(leaked);
    Ok(leaked)
}

/// The clock and the bound every actor of one system records with.
#[derive(Debug)]
pub struct Recorder {
    epoch: Instant,
    capacity: AtomicUsize,
    enabled: std::sync::atomic::AtomicBool,
}

impl Recorder {
    /// A recorder whose clock starts now, keeping up to `capacity` task records per job.
    pub fn new(capacity: usize) -> Arc<Recorder> {
        Arc::new(Recorder {
            epoch: Instant::now(),
            capacity: AtomicUsize::new(capacity),
            enabled: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Nanoseconds since the recorder was made (its actor system started).
    pub fn now(&self) -> u64 {
        self.since(Instant::now())
    }

    /// `t` as nanoseconds since the recorder was made (0 for an earlier instant).
    pub fn since(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant the clock counts from.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Task records a job keeps at most (jobs submitted later use a new value).
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Sets the task records a job keeps at most, for jobs submitted from now on.
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity.store(capacity, Ordering::Relaxed);
    }

    /// False when recording is switched off (to measure what it costs).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Switches recording on or off for jobs submitted from now on (devices stop timing
    /// kernels at once).
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }
}

/// When and on which worker thread a device ran one chunk task (0s when not recorded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSpan {
    /// Start, in [`Recorder::now`] nanoseconds.
    pub start_ns: u64,
    /// End, in [`Recorder::now`] nanoseconds.
    pub end_ns: u64,
    /// The device's worker thread (its index in the pool).
    pub thread: u32,
}

impl RunSpan {
    /// Times `f` with `recorder`'s clock on worker thread `thread`; no clock is read when
    /// `recorder` is `None` (recording is off).
    pub fn time<T>(recorder: Option<&Recorder>, thread: u32, f: impl FnOnce() -> T) -> (T, Self) {
        let Some(recorder) = recorder else {
            return (f(), RunSpan::default());
        };
        let start_ns = recorder.now();
        let out = f();
        let end_ns = recorder.now();
        let span = RunSpan {
            start_ns,
            end_ns,
            thread,
        };
        (out, span)
    }
}

/// One run of a chunk task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The chunk it computed.
    pub key: ChunkKey,
    /// The op's name ([`tessera_kernels::ChunkOp::name`], as progress and statistics show it).
    #[serde(deserialize_with = "op_name")]
    pub op: OpName,
    /// The device that ran it.
    pub device: DeviceId,
    /// When and on which thread.
    pub span: RunSpan,
    /// Bytes of its input chunks.
    pub bytes_in: u64,
    /// Bytes of the chunk it produced (0 when it failed).
    pub bytes_out: u64,
    /// Which run of the task this was (1: the first; more after retryable failures).
    pub attempt: u32,
    /// It ran again after a retryable failure.
    pub retry: bool,
    /// It ran again because its chunk was lost (recomputed from lineage).
    pub recompute: bool,
    /// It produced its chunk (false: it failed).
    pub ok: bool,
}

/// What a storage event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StorageEventKind {
    /// A chunk was written to the disk tier.
    Spill,
    /// A spilled chunk was read back into memory.
    ReadBack,
    /// A chunk was dropped from storage (released).
    Drop,
}

impl StorageEventKind {
    /// A short name (`spill`, `read_back`, `drop`).
    pub fn name(self) -> &'static str {
        match self {
            StorageEventKind::Spill => "spill",
            StorageEventKind::ReadBack => "read_back",
            StorageEventKind::Drop => "drop",
        }
    }
}

/// One storage event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageEvent {
    /// What happened.
    pub kind: StorageEventKind,
    /// The chunk.
    pub key: ChunkKey,
    /// Its bytes.
    pub bytes: u64,
    /// Start, in [`Recorder::now`] nanoseconds.
    pub start_ns: u64,
    /// End (the same as the start for a drop).
    pub end_ns: u64,
}

/// A storage actor's events for one job, bounded like task records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageLog {
    /// The events kept, in the order they happened.
    pub events: Vec<StorageEvent>,
    /// Events beyond the capacity (counted, not kept).
    pub dropped: u64,
}

impl StorageLog {
    /// Keeps `event` if fewer than `capacity` are kept, else counts it.
    pub fn push(&mut self, event: StorageEvent, capacity: usize) {
        if self.events.len() < capacity {
            self.events.push(event);
        } else {
            self.dropped += 1;
        }
    }
}

/// Host memory reserved at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySample {
    /// When, in [`Recorder::now`] nanoseconds.
    pub t_ns: u64,
    /// Bytes reserved then (the peak of the samples this one stands for).
    pub reserved: u64,
}

/// Every run of one op in a job, summed (kept for all runs, past the capacity too).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpSummary {
    /// The op's name.
    #[serde(deserialize_with = "op_name")]
    pub op: OpName,
    /// Runs that produced their chunk.
    pub tasks: u64,
    /// Runs that failed.
    pub failed: u64,
    /// Nanoseconds its runs took, summed.
    pub busy_ns: u64,
    /// Input bytes, summed.
    pub bytes_in: u64,
    /// Output bytes, summed.
    pub bytes_out: u64,
}

/// What the recorder saw of one job (one stage of a staged computation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStream {
    /// The job.
    pub job: JobId,
    /// When it was submitted, in [`Recorder::now`] nanoseconds.
    pub submitted_ns: u64,
    /// When it was delivered.
    pub finished_ns: u64,
    /// Its runs, in the order they ended, up to the capacity.
    pub tasks: Vec<TaskRecord>,
    /// Runs beyond the capacity (in the summaries only).
    pub tasks_dropped: u64,
    /// Per op, in the order ops first ended.
    pub ops: Vec<OpSummary>,
    /// The storage tiers' events for its chunks.
    pub storage: StorageLog,
    /// Reserved host memory over time, oldest first.
    pub memory: Vec<MemorySample>,
    capacity: usize,
    /// Memory samples offered since the last kept one, and how many make one kept sample.
    memory_pending: u64,
    memory_stride: u64,
}

impl TaskStream {
    /// An empty stream for `job`, submitted at `submitted_ns`, keeping up to `capacity`
    /// task records.
    pub fn new(job: JobId, submitted_ns: u64, capacity: usize) -> TaskStream {
        TaskStream {
            job,
            submitted_ns,
            finished_ns: submitted_ns,
            tasks: Vec::new(),
            tasks_dropped: 0,
            ops: Vec::new(),
            storage: StorageLog::default(),
            memory: Vec::new(),
            capacity,
            memory_pending: 0,
            memory_stride: 1,
        }
    }

    /// Files one run: into its op's summary, and as a record while under the capacity.
    pub fn record_task(&mut self, record: TaskRecord) {
        let summary = match self.ops.iter().position(|s| s.op == record.op) {
            Some(i) => &mut self.ops[i],
            None => {
                self.ops.push(OpSummary {
                    op: record.op,
                    tasks: 0,
                    failed: 0,
                    busy_ns: 0,
                    bytes_in: 0,
                    bytes_out: 0,
                });
                let last = self.ops.len() - 1;
                &mut self.ops[last]
            }
        };
        if record.ok {
            summary.tasks += 1;
        } else {
            summary.failed += 1;
        }
        summary.busy_ns += record.span.end_ns.saturating_sub(record.span.start_ns);
        summary.bytes_in += record.bytes_in;
        summary.bytes_out += record.bytes_out;
        if self.tasks.len() < self.capacity {
            self.tasks.push(record);
        } else {
            self.tasks_dropped += 1;
        }
    }

    /// Offers a reading of the reserved memory: every stride-th is kept (the peak of the
    /// stride); when [`MEMORY_SAMPLES`] are kept, pairs merge and the stride doubles.
    pub fn sample_memory(&mut self, t_ns: u64, reserved: u64) {
        let merge_into_last = self.memory_pending > 0;
        self.memory_pending = (self.memory_pending + 1) % self.memory_stride;
        if merge_into_last {
            if let Some(last) = self.memory.last_mut() {
                last.reserved = last.reserved.max(reserved);
                return;
            }
        }
        if self.memory.len() == MEMORY_SAMPLES {
            let merged = self
                .memory
                .chunks(2)
                .map(|pair| MemorySample {
                    t_ns: pair[0].t_ns,
                    reserved: pair.iter().map(|s| s.reserved).max().unwrap_or(0),
                })
                .collect();
            self.memory = merged;
            self.memory_stride *= 2;
            self.memory_pending = 1 % self.memory_stride;
        }
        self.memory.push(MemorySample { t_ns, reserved });
    }

    /// Runs filed (kept or summarised), failed ones included.
    pub fn runs(&self) -> u64 {
        self.ops.iter().map(|s| s.tasks + s.failed).sum()
    }
}

/// Files what storage did for a delivered job into its statistics: the counters, and the
/// events into the job's task stream (if it was recorded).
pub fn attach_storage(stats: &mut JobStats, counters: &StorageStats, log: StorageLog) {
    stats.storage.absorb(counters);
    let last = Arc::get_mut(&mut stats.stream).and_then(|streams| streams.last_mut());
    if let Some(stream) = last.and_then(Arc::get_mut) {
        stream.storage = log;
    }
}

#[cfg(test)]
mod tests;
