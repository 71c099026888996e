//! Every message the actors exchange, as plain typed structs.
//!
//! Messages without a channel or payload are serde-serializable; those carrying chunk
//! data keep it as `Arc<ChunkData>` inside the process. The ids they name (devices,
//! actors, chunks) are `tessera_core`'s.

use crate::graph::{ChunkGraph, ChunkKey};
use crate::job::{JobEvent, JobId};
use crate::kept::KeptOwner;
use crate::memory::Reservation;
use crate::recorder::{RunSpan, StorageLog};
use crate::storage::StorageActor;
use crate::store::{ChunkId, PutInfo, StorageError, StorageStats};
use actix::{Addr, Message, Recipient};
use crossbeam_channel::Sender;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
pub use tessera_core::ids::{ActorName, DeviceId, DeviceKind};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// User → planner: run a validated graph, reporting to `events`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SubmitJob {
    /// The job's chunk graph.
    pub graph: ChunkGraph,
    /// Where progress and the result go.
    pub events: Sender<JobEvent>,
    /// Names the job in [`CancelJob`] (unique within the actor system).
    pub token: u64,
}

/// User → planner: end the job submitted with `token` now (its owner gave up waiting):
/// queued tasks are dropped, running ones finish unheeded, its chunks are forgotten, and
/// the owner gets `JobError::SystemStopped("cancelled …")`. Nothing if it already ended.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct CancelJob {
    /// The token the job was submitted with.
    pub token: u64,
}

/// Supervisor → planner: a device can now take `slots` tasks at once.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AddDevice {
    /// The device's id.
    pub id: DeviceId,
    /// What it runs (which tasks the planner sends it).
    pub kind: DeviceKind,
    /// Tasks it may have in flight.
    pub slots: usize,
    /// Where its tasks go.
    pub device: Recipient<ExecuteChunk>,
}

/// Planner → device: compute one chunk and report to `reply_to`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ExecuteChunk {
    /// The job.
    pub job: JobId,
    /// The chunk to compute.
    pub key: ChunkKey,
    /// Which dispatch of the chunk this is (a report of an older one is stale).
    pub attempt: u64,
    /// The op.
    pub op: Arc<ChunkOp>,
    /// Its input chunks, in the op's order.
    pub inputs: Vec<Arc<ChunkData>>,
    /// Who receives the [`ChunkFinished`] report.
    pub reply_to: Recipient<ChunkFinished>,
}

/// Device → planner: a chunk task ended, with its data or the kernel's error.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ChunkFinished {
    /// The job.
    pub job: JobId,
    /// The chunk.
    pub key: ChunkKey,
    /// The dispatch this reports on ([`ExecuteChunk::attempt`]).
    pub attempt: u64,
    /// The chunk's data, or why the kernel failed.
    pub result: Result<Arc<ChunkData>, KernelError>,
    /// When and on which worker thread the kernel ran (0s when not recorded).
    pub span: RunSpan,
    /// How long the kernel ran (measured whether or not recording is on).
    pub took: Duration,
}

/// Planner → storage: keep a chunk.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PutChunk {
    /// The chunk's id.
    pub id: ChunkId,
    /// Its data.
    pub data: Arc<ChunkData>,
    /// Its op, next reader, sharing and recompute cost.
    pub info: PutInfo,
    /// Its bytes, reserved by the sender until storage takes the chunk over (reserved on
    /// arrival when `None`).
    pub reservation: Option<Reservation>,
}

/// Planner → storage: hand out chunks (and drop them from storage with `release`).
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "Result<Vec<Arc<ChunkData>>, StorageError>")]
pub struct GetChunks {
    /// The job reading them (its statistics count the bytes read back from disk).
    pub reader: JobId,
    /// The chunks, in the order wanted.
    pub ids: Vec<ChunkId>,
    /// Remove them from storage once handed out.
    pub release: bool,
}

/// Planner → storage: hand out a finished job's output chunks, remove them, and report what
/// storage did for the job (its counters and events are then forgotten).
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "Result<(Vec<Arc<ChunkData>>, StorageStats, StorageLog), StorageError>")]
pub struct TakeOutputs {
    /// The job.
    pub job: JobId,
    /// Its output chunks, in delivery order.
    pub ids: Vec<ChunkId>,
}

/// Planner → storage: keep a finished job's output chunks in storage for the caller
/// (persisted data), report their sizes in bytes and what storage did for the job.
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "Result<(Vec<u64>, StorageStats, StorageLog), StorageError>")]
pub struct KeepOutputs {
    /// The job.
    pub job: JobId,
    /// Its output chunks, in delivery order.
    pub ids: Vec<ChunkId>,
}

/// A dropped [`crate::KeptChunk`] handle → planner → storage: give up one hold on kept
/// chunks (dropped when nobody holds them).
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct Unkeep {
    /// The chunks.
    pub ids: Vec<ChunkId>,
}

/// The planner as the owner of kept chunks: a dropped handle sends it an [`Unkeep`].
pub struct UnkeepRecipient(pub Recipient<Unkeep>);

impl KeptOwner for UnkeepRecipient {
    fn unkeep(&self, id: ChunkId) {
        self.0.do_send(Unkeep { ids: vec![id] });
    }
}

/// Caller → planner → storage: keep `data` as chunk `id` outside any job (see
/// [`crate::ActorSystem::store`]): stored like a job's chunk (reserved, spillable) and
/// kept at once, as if a job had kept it as its output.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StoreKept {
    /// The chunk's id (of the system's own job, [`crate::system::STORED_JOB`]).
    pub id: ChunkId,
    /// Its data.
    pub data: Arc<ChunkData>,
    /// Its bytes, reserved by the sender until storage takes the chunk over.
    pub reservation: Reservation,
    /// What computing it again costs its owner, where storage may drop it rather than
    /// spill it (see [`crate::ActorSystem::allow_drop`]); `None`: never dropped.
    pub recompute: Option<Duration>,
}

/// Caller → planner → storage: the owner of kept chunks can compute them again, so
/// storage may drop them (see [`crate::ActorSystem::allow_drop`]).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct AllowDrop {
    /// The kept chunks.
    pub ids: Vec<ChunkId>,
    /// What computing one again takes.
    pub recompute: Duration,
}

/// Caller → planner → storage: hand out kept chunks (read back from disk if spilled),
/// leaving them kept (see [`crate::ActorSystem::read_kept`]). The answer goes to `reply`;
/// a storage actor that is gone drops it, which the caller sees as a closed channel.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReadKept {
    /// The chunks, in the order wanted.
    pub ids: Vec<ChunkId>,
    /// Where the chunks (or the error naming those lost) go.
    pub reply: ReadReply,
}

/// Caller → planner → storage: answered once storage has handled everything the planner
/// sent it before (kept chunks whose handles were dropped are freed by then; see
/// [`crate::ActorSystem::settle`]).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Settle {
    /// Where the answer goes.
    pub reply: Sender<()>,
}

/// Planner (or [`crate::ActorSystem::make_room`] through it) → storage: a task is held back
/// for memory; spill ahead to make room for it (see [`crate::MemoryPool::set_wanted`]).
/// Answered when storage has done what it can.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct MakeRoom;

/// Where a [`ReadKept`] answer goes.
pub type ReadReply = Sender<Result<Vec<Arc<ChunkData>>, StorageError>>;

/// Planner → storage: a job ended without a result; drop its chunks and counters.
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct ForgetJob {
    /// The job.
    pub job: JobId,
}

/// Planner → storage: drop chunks no longer needed.
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct ReleaseChunks {
    /// The chunks.
    pub ids: Vec<ChunkId>,
}

/// System → supervisor: stop every actor and the actor system.
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct Shutdown;

/// Storage or device → supervisor: the actor stopped without being asked to.
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct ActorDied {
    /// Which actor.
    pub actor: ActorName,
}

/// Supervisor → planner: an actor died; its tasks and chunks are gone. A restart (if any)
/// follows as [`AddDevice`] or [`StorageRestarted`].
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "()")]
pub struct ActorDown {
    /// Which actor.
    pub actor: ActorName,
    /// False once the supervisor has given up restarting it.
    pub restarting: bool,
    /// Restarts made so far.
    pub restarts: u32,
}

/// Supervisor → planner: a new, empty storage actor replaced the one that died.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StorageRestarted {
    /// The new storage actor.
    pub storage: Addr<StorageActor>,
}
