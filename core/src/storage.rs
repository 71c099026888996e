//! What the planner tells storage about a chunk it puts, and what storage reports of a
//! job's chunks: the contract between the planner and any store (an actor system's
//! storage actor, a cluster worker's).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What one put chunk is, beside its data.
#[derive(Clone, Copy, Debug)]
pub struct PutInfo {
    /// The name of the op that produced it (for fault rules and logs).
    pub op: &'static str,
    /// Graph position of the task that reads it next (larger: needed later).
    pub next_use: u64,
    /// The data is also held outside Tessera (user data): kept without a reservation and
    /// never spilled, which would free no memory.
    pub shared: bool,
    /// What computing it again costs, where its producer reads no other chunk.
    pub recompute: Option<Duration>,
}

/// What storage did for one job's chunks (reported in the job's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageStats {
    /// Chunk bytes written to the disk tier.
    pub bytes_spilled: u64,
    /// Chunk bytes read back from the disk tier.
    pub bytes_read_back: u64,
    /// Chunks written to the disk tier.
    pub chunks_spilled: u64,
    /// Spills that failed (the chunk stayed in memory).
    pub spill_failures: u64,
    /// The most bytes the disk tier's files held at once while the job spilled (spare
    /// segment files included).
    pub peak_disk_bytes: u64,
    /// Chunks dropped from memory instead of spilled, to be recomputed when read.
    pub chunks_dropped: u64,
    /// Their bytes.
    pub bytes_dropped: u64,
}

impl StorageStats {
    /// Adds the counters of a later stage of the same computation (peaks: the larger).
    pub fn absorb(&mut self, later: &StorageStats) {
        self.bytes_spilled += later.bytes_spilled;
        self.bytes_read_back += later.bytes_read_back;
        self.chunks_spilled += later.chunks_spilled;
        self.spill_failures += later.spill_failures;
        self.peak_disk_bytes = self.peak_disk_bytes.max(later.peak_disk_bytes);
        self.chunks_dropped += later.chunks_dropped;
        self.bytes_dropped += later.bytes_dropped;
    }
}
