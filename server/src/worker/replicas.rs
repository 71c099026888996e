//! Copies of peers' chunks that this worker's tasks read more than once.
//!
//! A chunk many tasks read (the sketch matrix of `svd_compressed`, a broadcast join's
//! small side) was fetched again for every one of them: on two workers, one 800 KB chunk
//! crossed 60 times per run. A fetched chunk is kept here from its second fetch on (so
//! shuffle parts, each read once, never take room), up to a byte budget, least recently
//! used first out. A copy is named by job, chunk and attempt, and an attempt's output
//! never changes, so a kept copy is never stale; the scheduler does not know of it, and
//! it is dropped by eviction or when its job is cancelled here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tessera_kernels::ChunkData;

/// The most bytes of copies a worker keeps (less under a small memory limit: see
/// [`Replicas::new`]).
pub(super) const REPLICA_BYTES: u64 = 64 << 20;

/// How many chunks' first fetches are remembered; past it, the memory starts afresh.
const SEEN_LIMIT: usize = 1 << 16;

/// A chunk copy: job, chunk, attempt.
pub(super) type CopyId = (u64, u64, u64);

/// The kept copies and the chunks fetched once (see the module docs).
pub(super) struct Replicas {
    budget: u64,
    bytes: u64,
    /// Each copy with the tick of its last use.
    kept: HashMap<CopyId, (Arc<ChunkData>, u64)>,
    seen: HashSet<CopyId>,
    tick: u64,
}

impl Replicas {
    /// Keeps at most [`REPLICA_BYTES`], and at most a sixteenth of `memory_limit`.
    pub fn new(memory_limit: u64) -> Replicas {
        Replicas {
            budget: REPLICA_BYTES.min(memory_limit / 16),
            bytes: 0,
            kept: HashMap::new(),
            seen: HashSet::new(),
            tick: 0,
        }
    }

    /// The kept copy of `id`, if any.
    pub fn get(&mut self, id: CopyId) -> Option<Arc<ChunkData>> {
        self.tick += 1;
        let tick = self.tick;
        self.kept.get_mut(&id).map(|(data, used)| {
            *used = tick;
            Arc::clone(data)
        })
    }

    /// `data` was fetched as `id`: kept if it was fetched before and fits the budget,
    /// the least recently used copies making room.
    pub fn fetched(&mut self, id: CopyId, data: &Arc<ChunkData>) {
        let nbytes = data.nbytes() as u64;
        if self.kept.contains_key(&id) || nbytes > self.budget / 4 {
            return;
        }
        if self.seen.len() >= SEEN_LIMIT {
            self.seen.clear();
        }
        if self.seen.insert(id) {
            return;
        }
        while self.bytes + nbytes > self.budget {
            let Some((&oldest, _)) = self.kept.iter().min_by_key(|(_, (_, used))| *used) else {
                break;
            };
            self.remove(oldest);
        }
        self.tick += 1;
        self.bytes += nbytes;
        self.kept.insert(id, (Arc::clone(data), self.tick));
    }

    /// Drops every copy of `job`'s chunks.
    pub fn forget_job(&mut self, job: u64) {
        let ids: Vec<CopyId> = self.kept.keys().filter(|id| id.0 == job).copied().collect();
        for id in ids {
            self.remove(id);
        }
        self.seen.retain(|id| id.0 != job);
    }

    fn remove(&mut self, id: CopyId) {
        if let Some((data, _)) = self.kept.remove(&id) {
            self.bytes -= data.nbytes() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_kernels::{Buffer, HostTensor};

    fn chunk(bytes: usize) -> Arc<ChunkData> {
        let t = HostTensor::new(vec![bytes], Buffer::U8(vec![7; bytes])).unwrap();
        Arc::new(ChunkData::Tensor(t))
    }

    #[test]
    fn a_copy_is_kept_from_its_second_fetch_and_the_least_recently_used_goes_first() {
        let mut r = Replicas::new(16 * 1200);
        assert_eq!(r.budget, 1200);
        let (a, b, c, d, e) = ((1, 1, 1), (1, 2, 1), (2, 3, 1), (2, 4, 1), (3, 5, 1));
        r.fetched(a, &chunk(300));
        assert!(r.get(a).is_none(), "fetched once: not kept");
        r.fetched(a, &chunk(300));
        assert_eq!(r.get(a).map(|d| d.nbytes()), Some(300));
        // Another attempt of the same chunk is another copy.
        assert!(r.get((1, 1, 2)).is_none());
        for id in [b, b, c, c, d, d] {
            r.fetched(id, &chunk(300));
        }
        assert_eq!(r.bytes, 1200, "full");
        // a is used again, so b is the least recently used: it makes room for e.
        assert!(r.get(a).is_some());
        r.fetched(e, &chunk(300));
        r.fetched(e, &chunk(300));
        assert!(r.get(b).is_none());
        for id in [a, c, d, e] {
            assert!(r.get(id).is_some(), "{id:?}");
        }
        assert_eq!(r.bytes, 1200);
        // Over a quarter of the budget: never kept.
        let big = (4, 6, 1);
        r.fetched(big, &chunk(301));
        r.fetched(big, &chunk(301));
        assert!(r.get(big).is_none());
        // A cancelled job's copies go.
        r.forget_job(2);
        assert!(r.get(c).is_none() && r.get(d).is_none());
        assert!(r.get(a).is_some() && r.get(e).is_some());
        assert_eq!(r.bytes, 600);
    }
}
