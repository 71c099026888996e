//! What a submitted job reports back: its id, progress and result events, its output
//! chunks with statistics, and the typed errors that end it.

use crate::graph::{ChunkKey, GraphError};
use crate::recorder::TaskStream;
use crate::storage::StorageStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::{ChunkData, KernelError};
use thiserror::Error;

/// Names one submitted job within an actor system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job{}", self.0)
    }
}

/// Counters kept while a job runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobStats {
    /// Chunk tasks that completed.
    pub chunks_run: u64,
    /// Bytes of all chunks produced.
    pub bytes_produced: u64,
    /// From submission to the last chunk.
    pub wall_time: Duration,
    /// Completed chunk tasks per op name ([`tessera_kernels::ChunkOp::name`]).
    pub chunks_by_op: BTreeMap<String, u64>,
    /// Of those, the tasks a GPU's device actor ran (0 in a CPU-only session).
    pub chunks_on_gpu: u64,
    /// The most bytes of this job's chunks held in storage at once.
    pub peak_stored_bytes: u64,
    /// Chunks computed again: by the plan, for a later pass instead of keeping them (added
    /// by the submitter, which knows its plan), and from lineage after a loss.
    pub chunks_recomputed: u64,
    /// Chunk tasks run again after a retryable failure.
    pub retries: u64,
    /// Stored chunks lost (dropped, unreadable spill files, a storage actor that died).
    pub chunks_lost: u64,
    /// Device or storage actors that died and were restarted while the job ran.
    pub restarts: u64,
    /// Times a ready task waited because the host memory budget was reserved (back-pressure).
    pub held_back: u64,
    /// The most host-memory bytes reserved at once while the job ran (stored chunks and
    /// running tasks' outputs, of every job), sampled at each chunk event until its
    /// delivery starts (outputs read back for the caller are not counted).
    pub peak_host_reserved: u64,
    /// What the storage tiers did for the job (spilled and read-back bytes, disk peak).
    pub storage: StorageStats,
    /// What the recorder saw, one stream per job that ran (a staged computation has one
    /// per stage); empty where nothing was recorded (recording off). Not serialized with
    /// the statistics: a cluster's scheduler sends its stream on its own. (Behind an
    /// `Arc`, so that copies of the statistics share it and a finished job's event stays
    /// small.)
    #[serde(skip)]
    pub stream: Arc<Vec<Arc<TaskStream>>>,
    /// Why the job failed, in the statistics of a failed job ([`JobEvent::FailedStats`]);
    /// `None` for one that finished. Not serialized, like [`Self::stream`].
    #[serde(skip)]
    pub failure: Option<Arc<str>>,
}

impl JobStats {
    /// Adds the counters of `later`, a job that ran after this one as a later stage of the
    /// same computation (wall times add; the peak is the larger of the two).
    pub fn absorb(&mut self, later: &JobStats) {
        self.chunks_run += later.chunks_run;
        self.chunks_on_gpu += later.chunks_on_gpu;
        self.bytes_produced += later.bytes_produced;
        self.wall_time += later.wall_time;
        for (op, n) in &later.chunks_by_op {
            *self.chunks_by_op.entry(op.clone()).or_default() += n;
        }
        self.peak_stored_bytes = self.peak_stored_bytes.max(later.peak_stored_bytes);
        self.chunks_recomputed += later.chunks_recomputed;
        self.retries += later.retries;
        self.chunks_lost += later.chunks_lost;
        self.restarts += later.restarts;
        self.held_back += later.held_back;
        self.peak_host_reserved = self.peak_host_reserved.max(later.peak_host_reserved);
        self.storage.absorb(&later.storage);
        if !later.stream.is_empty() {
            Arc::make_mut(&mut self.stream).extend(later.stream.iter().cloned());
        }
        if later.failure.is_some() {
            self.failure.clone_from(&later.failure);
        }
    }
}

/// A finished job's result.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// The output chunks, in `ChunkGraph::outputs` order (none when the graph keeps its
    /// outputs).
    pub outputs: Vec<(ChunkKey, Arc<ChunkData>)>,
    /// Handles on the outputs kept in storage, in `ChunkGraph::outputs` order (only when
    /// the graph keeps its outputs).
    pub kept: Vec<Arc<crate::KeptChunk>>,
    /// What it took.
    pub stats: JobStats,
}

/// What a job reports to its handle.
// One `Finished` per job: boxing its result would change every consumer to save nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum JobEvent {
    /// `done` of `total` chunk tasks have completed (sent at most every ~50 ms).
    Progress {
        /// Completed chunk tasks.
        done: u64,
        /// All chunk tasks of the job.
        total: u64,
    },
    /// What a job that failed had done (its task stream, counters, and the error in
    /// [`JobStats::failure`]), sent by the in-process planner just before the job's
    /// `Finished(Err(..))`, for performance reports.
    FailedStats(Box<JobStats>),
    /// The job ended; no event follows.
    Finished(Result<JobOutput, JobError>),
}

/// Both memory tiers were full: the host budget could not take the next task's output
/// and the disk tier's budget took no more spilled chunks, so the job ended rather than
/// grow past them.
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error(
    "out of memory after spilling: a task needs {needed} bytes, {reserved} of the host \
     memory budget of {host_budget} bytes are reserved, and the disk budget of \
     {disk_budget} bytes is full"
)]
pub struct OutOfMemory {
    /// The host memory budget in bytes.
    pub host_budget: u64,
    /// The disk tier's budget in bytes.
    pub disk_budget: u64,
    /// Bytes reserved in host memory when the job ended.
    pub reserved: u64,
    /// The estimated output of the task that did not fit.
    pub needed: u64,
}

/// Why a job ended without a result.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum JobError {
    /// A chunk kernel failed (or panicked).
    #[error("chunk {key} ({op}) failed: {source}")]
    ChunkFailed {
        /// The chunk whose task failed.
        key: ChunkKey,
        /// The op's name.
        op: String,
        /// The kernel's error.
        source: KernelError,
    },
    /// A chunk was lost more often than lineage recomputation allows.
    #[error("chunk {key} ({op}) was lost {losses} times; giving up (last cause: {cause})")]
    ChunkLost {
        /// The chunk.
        key: ChunkKey,
        /// The op that produces it.
        op: String,
        /// How often it was lost.
        losses: u32,
        /// Why it was lost the last time.
        cause: String,
    },
    /// A device or the storage actor kept dying and was not restarted again.
    #[error("{actor} died and was restarted {restarts} times; giving up")]
    ActorLost {
        /// Which actor (`storage`, `device0`…).
        actor: String,
        /// Restarts made before giving up.
        restarts: u32,
    },
    /// Both memory tiers are full (see [`OutOfMemory`]).
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
    /// The graph is malformed.
    #[error("invalid chunk graph: {0}")]
    InvalidGraph(#[from] GraphError),
    /// The actor system stopped before the job finished.
    #[error("the actor system stopped: {0}")]
    SystemStopped(String),
}
