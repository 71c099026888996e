//! The chunks a worker holds for the cluster: each is a [`KeptChunk`] in the worker's own
//! actor system (so it is under the worker's memory budget and spills like any chunk, or
//! is dropped where the scheduler can compute it again: `RunTask.droppable`), named by the
//! scheduler's job, chunk and attempt. The Flight service serves them to peers and
//! clients from here; one storage dropped is refused as such ([`SourceError::Dropped`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tessera_actors::{ActorSystem, KeptChunk, ReadError, StorageError};
use tessera_cluster::server::{ChunkSink, ChunkSource, SourceError};
use tessera_kernels::ChunkData;
use tessera_proto::ChunkTicket;

/// One held chunk.
#[derive(Clone, Debug)]
pub(crate) struct HeldChunk {
    /// The dispatch that produced it.
    pub attempt: u64,
    /// The handle keeping it in the worker's storage.
    pub kept: Arc<KeptChunk>,
}

#[derive(Default)]
struct Table {
    chunks: HashMap<(u64, u64), HeldChunk>,
    /// Jobs cancelled here: a task of theirs that finishes late keeps nothing.
    cancelled: HashSet<u64>,
}

impl Table {
    /// Holds `chunk` unless a newer attempt's copy is held.
    fn keep_newest(&mut self, job: u64, key: u64, chunk: HeldChunk) {
        match self.chunks.get(&(job, key)) {
            Some(held) if held.attempt > chunk.attempt => {}
            _ => {
                self.chunks.insert((job, key), chunk);
            }
        }
    }

    /// Takes out the copy `attempt` produced, if that is the one held.
    fn remove_attempt(&mut self, job: u64, key: u64, attempt: u64) -> Option<HeldChunk> {
        match self.chunks.get(&(job, key)) {
            Some(held) if held.attempt == attempt => self.chunks.remove(&(job, key)),
            _ => None,
        }
    }
}

/// The worker's held chunks and its actor system.
pub(crate) struct Held {
    system: Arc<ActorSystem>,
    table: Mutex<Table>,
}

impl Held {
    pub fn new(system: Arc<ActorSystem>) -> Held {
        Held {
            system,
            table: Mutex::new(Table::default()),
        }
    }

    pub fn system(&self) -> &Arc<ActorSystem> {
        &self.system
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The chunk `key` of `job` as produced by `attempt`, if held.
    pub fn get(&self, job: u64, key: u64, attempt: u64) -> Option<HeldChunk> {
        self.table()
            .chunks
            .get(&(job, key))
            .filter(|h| h.attempt == attempt)
            .cloned()
    }

    /// Holds a computed chunk; false (and nothing kept) when its job was cancelled here.
    /// A copy from an older attempt than the one held is not kept: two dispatches of one
    /// chunk may both run here, and the later one is the one the scheduler counts on.
    pub fn insert(&self, job: u64, key: u64, chunk: HeldChunk) -> bool {
        let mut table = self.table();
        if table.cancelled.contains(&job) {
            return false;
        }
        table.keep_newest(job, key, chunk);
        true
    }

    /// Gives up the copy of a chunk that `attempt` produced, if that is the one held (its
    /// storage is freed once no running task reads it).
    pub fn release(&self, job: u64, key: u64, attempt: u64) {
        let dropped = self.table().remove_attempt(job, key, attempt);
        drop(dropped);
    }

    /// Gives up every chunk of a cancelled or failed job.
    pub fn cancel(&self, job: u64) {
        let mut table = self.table();
        table.cancelled.insert(job);
        table.chunks.retain(|&(j, _), _| j != job);
    }

    /// True once `job` was cancelled here.
    pub fn is_cancelled(&self, job: u64) -> bool {
        self.table().cancelled.contains(&job)
    }
}

impl ChunkSource for Held {
    fn chunk(&self, ticket: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError> {
        Ok(self.chunks(std::slice::from_ref(ticket))?.pop().flatten())
    }

    /// The held ones of `tickets` in one read from storage (a batch of a merge's parts
    /// cost a trip through the actors each). A chunk storage dropped (see
    /// [`ActorSystem::allow_drop`]) is reported as such, for the reader to say so.
    fn chunks(&self, tickets: &[ChunkTicket]) -> Result<Vec<Option<Arc<ChunkData>>>, SourceError> {
        let held: Vec<Option<HeldChunk>> = tickets
            .iter()
            .map(|t| self.get(t.job_id, t.chunk_key, t.attempt))
            .collect();
        let kept: Vec<&KeptChunk> = held.iter().flatten().map(|h| h.kept.as_ref()).collect();
        let mut read = self
            .system
            .read_kept(&kept)
            .map_err(|e| {
                let chunk = ChunkTicket::batch(tickets).map_or_else(String::new, |t| t.to_string());
                match e {
                    ReadError::Lost(StorageError::Dropped { .. }) => SourceError::Dropped { chunk },
                    e => SourceError::Unreadable {
                        chunk,
                        reason: e.to_string(),
                    },
                }
            })?
            .into_iter();
        Ok(held
            .iter()
            .map(|h| h.as_ref().and_then(|_| read.next()))
            .collect())
    }
}

/// Chunks a client sends (a job's large literals, placed by the scheduler): kept in the
/// worker's storage like any chunk it computes, under the ticket's job, chunk and attempt.
impl ChunkSink for Held {
    fn put(&self, ticket: &ChunkTicket, data: ChunkData) -> Result<(), SourceError> {
        let refused = |reason: String| SourceError::Refused {
            chunk: ticket.to_string(),
            reason,
        };
        let kept = self
            .system
            .store(Arc::new(data))
            .map_err(|e| refused(e.to_string()))?;
        let chunk = HeldChunk {
            attempt: ticket.attempt,
            kept: Arc::new(kept),
        };
        if !self.insert(ticket.job_id, ticket.chunk_key, chunk) {
            return Err(refused("its job was cancelled".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_actors::{ChunkId, ChunkKey, JobId, KeptOwner};

    struct Nobody;
    impl KeptOwner for Nobody {
        fn unkeep(&self, _: ChunkId) {}
    }

    fn copy(attempt: u64) -> HeldChunk {
        let id = ChunkId {
            job: JobId(1),
            key: ChunkKey(attempt),
        };
        HeldChunk {
            attempt,
            kept: Arc::new(KeptChunk::new(id, 8, Arc::new(Nobody))),
        }
    }

    #[test]
    fn a_late_older_attempt_neither_replaces_nor_releases_the_newer_copy() {
        let mut table = Table::default();
        table.keep_newest(1, 5, copy(7));
        // The superseded dispatch finishes after the current one, then is released.
        table.keep_newest(1, 5, copy(3));
        assert!(table.remove_attempt(1, 5, 3).is_none());
        assert_eq!(table.chunks.get(&(1, 5)).map(|h| h.attempt), Some(7));
        // A newer attempt replaces an older one; releasing it by its attempt removes it.
        table.keep_newest(1, 5, copy(9));
        assert!(table.remove_attempt(1, 5, 7).is_none());
        assert_eq!(table.remove_attempt(1, 5, 9).map(|h| h.attempt), Some(9));
        assert!(table.chunks.is_empty());
    }
}
