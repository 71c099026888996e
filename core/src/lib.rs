//! Tessera's shared vocabulary, without actix: what the planner, the actors, the cluster's
//! scheduler and workers, the dashboard and the user API all name.
//!
//! - [`ChunkGraph`]: chunk tasks and their inputs (the lineage), validated and indexed;
//! - [`JobId`], [`JobStats`], [`JobError`]: a job's identity, what it did, how it failed;
//!   [`JobHandle`]: a submitted job's events, end and cancel, wherever it runs;
//! - [`ids`]: devices, supervised actors and stored chunks;
//! - the [`MemoryPool`] trait and its [`Reservation`]s, with the host tier's [`HostPool`] and
//!   the scheduler's [`UnboundedPool`] (a GPU's device pool, in `tessera-cuda`, is one too);
//! - [`TaskStream`] and the [`Recorder`]: what every task and storage event did, when;
//! - [`PlannerState`]: the scheduler as a plain state machine (dispatch, placement,
//!   memory reservations, retries, lineage recomputation), driven by an actor system's
//!   planner actor in process and by the cluster's scheduler across processes;
//! - [`KeptChunk`]: a handle on a chunk kept in storage after its job.

mod alloc;
pub mod graph;
pub mod handle;
pub mod ids;
pub mod job;
pub mod kept;
pub mod memory;
pub mod metrics;
pub mod planner_state;
pub mod recorder;
pub mod storage;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use alloc::{keep_freed_memory, release_freed_memory, resident_bytes, KEEP_FREED_MS};
pub use graph::{ChunkGraph, ChunkKey, ChunkTask, GraphError, StoredInput};
pub use handle::{ActorError, JobHandle};
pub use ids::{ActorName, ChunkId, DeviceId, DeviceKind};
pub use job::{JobError, JobEvent, JobId, JobOutput, JobStats, OutOfMemory};
pub use kept::{KeptChunk, KeptOwner, KEPT_OP};
pub use memory::{task_estimate, HostPool, MemoryPool, Reservation, UnboundedPool};
pub use metrics::{Exposition, Totals};
pub use planner_state::{
    split_parts, Gone, GpuOps, PlannerAction, PlannerState, MAX_ATTEMPTS, MAX_DROPS, MAX_LOSSES,
};
pub use recorder::{
    MemorySample, OpName, OpSummary, Recorder, RunSpan, StorageEvent, StorageEventKind, StorageLog,
    TaskRecord, TaskStream, DEFAULT_CAPACITY as DEFAULT_TASK_RECORDS,
};
pub use storage::{PutInfo, StorageStats};
