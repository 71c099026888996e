//! Tessera's actors: the chunk graph, typed messages, and the Supervisor, GraphPlanner,
//! DeviceActor and StorageActor that run a graph's chunk tasks.
//!
//! Each actor's logic is a plain state machine tested without actix
//! ([`PlannerState`], [`ChunkStore`], [`WorkerPool`]); the actix actors
//! ([`GraphPlannerActor`], [`DeviceActor`], [`StorageActor`], [`Supervisor`]) are thin
//! wrappers feeding them messages. [`ActorSystem`] is the entry point: start it, submit
//! [`ChunkGraph`]s, wait on their [`JobHandle`]s, shut it down. A graph may keep its
//! outputs in storage for later graphs ([`KeptChunk`], [`StoredInput`]).

pub mod codec;
pub mod device;
pub mod disk;
pub mod faults;
pub mod graph;
pub mod job;
pub mod kept;
pub mod memory;
pub mod messages;
pub mod metrics;
pub mod planner;
pub mod planner_state;
pub mod pool;
pub mod recorder;
pub mod storage;
pub mod store;
pub mod supervisor;
pub mod system;
mod trim;

pub use device::{run_cpu_kernel, DeviceActor};
pub use faults::{FaultInjector, FaultKind, FaultPoint, FaultRule, MemoryReading};
pub use graph::{ChunkGraph, ChunkKey, ChunkTask, GraphError, StoredInput};
pub use job::{JobError, JobEvent, JobId, JobOutput, JobStats, OutOfMemory};
pub use kept::{KeptChunk, KeptOwner, KEPT_OP};
pub use memory::{task_estimate, MemoryPool, Reservation};
pub use messages::{ActorName, DeviceKind};
pub use metrics::{Exposition, Totals};
pub use planner::GraphPlannerActor;
pub use planner_state::{
    split_parts, Gone, PlannerAction, PlannerState, MAX_ATTEMPTS, MAX_DROPS, MAX_LOSSES,
};
pub use pool::{worker_index, WorkerPool};
pub use recorder::{
    MemorySample, OpName, OpSummary, Recorder, RunSpan, StorageEvent, StorageEventKind, StorageLog,
    TaskRecord, TaskStream, DEFAULT_CAPACITY as DEFAULT_TASK_RECORDS,
};
pub use storage::StorageActor;
pub use store::{ChunkId, ChunkStore, PutInfo, StorageError, StorageStats, StoreConfig};
pub use supervisor::{Supervisor, BACKOFF, MAX_RESTARTS, RESTART_WINDOW};
pub use system::{
    ActorError, ActorSystem, JobHandle, ReadError, SystemConfig, DEFAULT_READ_TIMEOUT, STORED_JOB,
};
