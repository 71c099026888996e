//! Tessera's actors: typed messages, and the Supervisor, GraphPlanner, DeviceActor and
//! StorageActor that run a graph's chunk tasks.
//!
//! The vocabulary they share with the cluster and the dashboard (the chunk graph, jobs,
//! ids, memory pools, the task stream, the planner's state machine) is `tessera_core`'s,
//! re-exported here. Each actor's logic is a plain state machine tested without actix
//! ([`PlannerState`], [`ChunkStore`], [`WorkerPool`]); the actix actors
//! ([`GraphPlannerActor`], [`DeviceActor`], [`StorageActor`], [`Supervisor`]) are thin
//! wrappers feeding them messages. [`ActorSystem`] is the entry point: start it, submit
//! [`ChunkGraph`]s, wait on their [`JobHandle`]s, shut it down. A graph may keep its
//! outputs in storage for later graphs ([`KeptChunk`], [`StoredInput`]).

pub mod device;
pub mod disk;
pub mod faults;
pub mod messages;
pub mod planner;
pub mod pool;
mod resident;
pub mod storage;
pub mod store;
pub mod supervisor;
pub mod system;
mod trim;

pub use tessera_core::{graph, handle, ids, job, kept, memory, metrics, planner_state, recorder};
pub use tessera_core::{keep_freed_memory, KEEP_FREED_MS};

pub use device::{run_cpu_kernel, run_gpu_kernel, DeviceActor, CUDA_OPS, GPU_HOST_THREADS};
pub use faults::{FaultInjector, FaultKind, FaultPoint, FaultRule, MemoryReading};
pub use planner::GraphPlannerActor;
pub use pool::{worker_index, WorkerPool};
pub use storage::StorageActor;
pub use store::{ChunkStore, StorageError, StoreConfig};
pub use supervisor::{Supervisor, BACKOFF, MAX_RESTARTS, RESTART_WINDOW};
pub use system::{ActorSystem, ReadError, SystemConfig, DEFAULT_READ_TIMEOUT, STORED_JOB};
pub use tessera_core::{
    split_parts, task_estimate, ActorError, ActorName, ChunkGraph, ChunkId, ChunkKey, ChunkTask,
    DeviceKind, Exposition, Gone, GraphError, HostPool, JobError, JobEvent, JobHandle, JobId,
    JobOutput, JobStats, KeptChunk, KeptOwner, MemoryPool, MemorySample, OpName, OpSummary,
    OutOfMemory, PlannerAction, PlannerState, PutInfo, Recorder, Reservation, RunSpan,
    StorageEvent, StorageEventKind, StorageLog, StorageStats, StoredInput, TaskRecord, TaskStream,
    Totals, DEFAULT_TASK_RECORDS, KEPT_OP, MAX_ATTEMPTS, MAX_DROPS, MAX_LOSSES,
};
