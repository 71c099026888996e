//! Every message the actors exchange, as plain typed structs.
//!
//! Messages without a channel or payload are serde-serializable (see [`crate::codec`]) so
//! they can cross a process boundary later; those carrying chunk data keep it as
//! `Arc<ChunkData>` inside the process.

use crate::graph::{ChunkGraph, ChunkKey};
use crate::job::{JobEvent, JobId};
use crate::store::{ChunkId, StorageError};
use actix::{Message, Recipient};
use crossbeam_channel::Sender;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// Names one device actor (the CPU pool or a GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DeviceId(pub u32);

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device{}", self.0)
    }
}

/// User → planner: run a validated graph, reporting to `events`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SubmitJob {
    /// The job's chunk graph.
    pub graph: ChunkGraph,
    /// Where progress and the result go.
    pub events: Sender<JobEvent>,
}

/// Supervisor → planner: a device can now take `slots` tasks at once.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AddDevice {
    /// The device's id.
    pub id: DeviceId,
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
    /// The chunk's data, or why the kernel failed.
    pub result: Result<Arc<ChunkData>, KernelError>,
}

/// Planner → storage: keep a chunk.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct PutChunk {
    /// The chunk's id.
    pub id: ChunkId,
    /// Its data.
    pub data: Arc<ChunkData>,
}

/// Planner → storage: hand out chunks (and drop them from storage with `release`).
#[derive(Debug, Message, Serialize, Deserialize)]
#[rtype(result = "Result<Vec<Arc<ChunkData>>, StorageError>")]
pub struct GetChunks {
    /// The chunks, in the order wanted.
    pub ids: Vec<ChunkId>,
    /// Remove them from storage once handed out.
    pub release: bool,
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
