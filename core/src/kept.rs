//! [`KeptChunk`]: the caller's handle on a chunk kept in storage after its job (persisted
//! data). The chunk lives in the store like any other, under the host memory budget and
//! spilled to disk when memory is short; dropping the last handle drops it from storage.

use crate::ids::ChunkId;
use std::fmt;
use std::sync::Arc;

/// Who gives a kept chunk up when its last handle is dropped: the planner of an actor
/// system, or a cluster client that tells the scheduler.
pub trait KeptOwner: Send + Sync {
    /// The handle on chunk `id` was dropped.
    fn unkeep(&self, id: ChunkId);
}

/// A chunk kept in storage for the caller; later graphs read it through
/// [`crate::graph::StoredInput`]. Dropping the handle gives the chunk up.
pub struct KeptChunk {
    id: ChunkId,
    nbytes: u64,
    owner: Arc<dyn KeptOwner>,
    /// Given to a job ([`KeptChunk::give`]): dropping the handle gives nothing up.
    given: bool,
}

impl KeptChunk {
    /// A handle on chunk `id` (of `nbytes` bytes) that tells `owner` when it is dropped.
    pub fn new(id: ChunkId, nbytes: u64, owner: Arc<dyn KeptOwner>) -> KeptChunk {
        KeptChunk {
            id,
            nbytes,
            owner,
            given: false,
        }
    }

    /// Gives this handle's hold on the chunk to the job about to read it, as a stored input
    /// with [`crate::graph::StoredInput::given`] set: the job's planner gives the chunk up
    /// after its last read, so the handle no longer does. A graph that is never submitted
    /// leaves the chunk kept until its storage ends (its session, or on a cluster, the
    /// client's session).
    pub fn give(mut self, key: crate::graph::ChunkKey) -> crate::graph::StoredInput {
        self.given = true;
        crate::graph::StoredInput {
            key,
            id: self.id,
            nbytes: self.nbytes,
            given: true,
        }
    }

    /// Where storage keeps the chunk.
    pub fn id(&self) -> ChunkId {
        self.id
    }

    /// The chunk's size in bytes.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }
}

impl fmt::Debug for KeptChunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeptChunk({}, {} bytes)", self.id, self.nbytes)
    }
}

impl Drop for KeptChunk {
    /// Gives the chunk up unless the handle was given to a job (nothing happens once the
    /// actor system has stopped: its store and spill folder are gone already).
    fn drop(&mut self) {
        if !self.given {
            self.owner.unkeep(self.id);
        }
    }
}

/// The op name a job failure gives a kept chunk that storage lost
/// ([`crate::JobError::ChunkLost`]): its owner computes it again from its own lineage.
pub const KEPT_OP: &str = "persisted";
