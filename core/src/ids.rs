//! The ids every layer names: devices, supervised actors, stored chunks.

use crate::graph::ChunkKey;
use crate::job::JobId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Names one device actor (the CPU pool or a GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DeviceId(pub u32);

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device{}", self.0)
    }
}

/// What kind of device an actor drives: the planner sends a task to a CUDA device when its
/// op has a GPU kernel (`tessera_cuda::Gpu::runs`, given as the planner's `GpuOps`), every
/// other task to a CPU one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeviceKind {
    /// A pool of CPU worker threads (also each worker of a cluster).
    #[default]
    Cpu,
    /// One CUDA GPU.
    Cuda,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
        })
    }
}

/// A supervised actor, as the supervisor names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ActorName {
    /// The storage actor.
    Storage,
    /// A device actor.
    Device(DeviceId),
}

impl fmt::Display for ActorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ActorName::Storage => write!(f, "storage"),
            ActorName::Device(id) => write!(f, "{id}"),
        }
    }
}

/// A stored chunk's id: chunk keys are only unique within one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkId {
    /// The job owning the chunk.
    pub job: JobId,
    /// The chunk within the job.
    pub key: ChunkKey,
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/chunk{}", self.job, self.key)
    }
}
