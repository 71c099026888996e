//! Copies of peers' chunks that this worker's tasks read more than once.
//!
//! A chunk many tasks read (the sketch matrix of `svd_compressed`, a broadcast join's
//! small side) was fetched again for every one of them: on two workers, one 800 KB chunk
//! crossed 60 times per run. A fetched chunk is kept here from its second fetch on (so
//! shuffle parts, each read once, never take room), up to a byte budget, least recently
//! used first out. A hashed join side — read by every probe of the other side, and hashed
//! again where it arrives — is kept from its first fetch, in a budget of its own; a large
//! chunk is fetched by one task at a time ([`Replicas::turn`]), so tasks queued together
//! wait for the first one's copy rather than fetch and hash it each. A copy is named by
//! job, chunk and attempt, and an attempt's output never changes, so a kept copy is never
//! stale; the scheduler does not know of it, and it is dropped by eviction or when its job
//! is cancelled here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tessera_kernels::ChunkData;

/// The most bytes of copies a worker keeps (less under a small memory limit: see
/// [`Replicas::new`]).
pub(super) const REPLICA_BYTES: u64 = 64 << 20;

/// The share of the memory limit hashed join sides may take (see [`Replicas::new`]).
const HASHED_SHARE: u64 = 8;

/// How many chunks' first fetches are remembered; past it, the memory starts afresh.
const SEEN_LIMIT: usize = 1 << 16;

/// A chunk copy: job, chunk, attempt.
pub(super) type CopyId = (u64, u64, u64);

/// Copies within a byte budget, each with the tick of its last use.
struct Pool {
    budget: u64,
    bytes: u64,
    kept: HashMap<CopyId, (Arc<ChunkData>, u64)>,
}

impl Pool {
    fn new(budget: u64) -> Pool {
        Pool {
            budget,
            bytes: 0,
            kept: HashMap::new(),
        }
    }

    /// Keeps `data` as `id`, the least recently used copies making room (`tick` is now).
    fn keep(&mut self, id: CopyId, data: &Arc<ChunkData>, tick: u64) {
        let nbytes = data.nbytes() as u64;
        while self.bytes + nbytes > self.budget {
            let Some((&oldest, _)) = self.kept.iter().min_by_key(|(_, (_, used))| *used) else {
                break;
            };
            self.remove(oldest);
        }
        self.bytes += nbytes;
        self.kept.insert(id, (Arc::clone(data), tick));
    }

    /// The copy of `id`, if kept here, marked as used at `tick`.
    fn used(&mut self, id: CopyId, tick: u64) -> Option<Arc<ChunkData>> {
        self.kept.get_mut(&id).map(|(data, used)| {
            *used = tick;
            Arc::clone(data)
        })
    }

    fn remove(&mut self, id: CopyId) {
        if let Some((data, _)) = self.kept.remove(&id) {
            self.bytes -= data.nbytes() as u64;
        }
    }

    fn forget_job(&mut self, job: u64) {
        let ids: Vec<CopyId> = self.kept.keys().filter(|id| id.0 == job).copied().collect();
        for id in ids {
            self.remove(id);
        }
    }
}

/// The kept copies, the chunks fetched once and the large fetches under way (see the
/// module docs).
pub(super) struct Replicas {
    /// Chunks fetched twice.
    again: Pool,
    /// Hashed join sides.
    hashed: Pool,
    seen: HashSet<CopyId>,
    tick: u64,
    turns: HashMap<CopyId, Arc<tokio::sync::Mutex<()>>>,
}

impl Replicas {
    /// Keeps at most [`REPLICA_BYTES`] (and at most a sixteenth of `memory_limit`) of
    /// chunks fetched again, and hashed join sides up to an eighth of `memory_limit`.
    pub fn new(memory_limit: u64) -> Replicas {
        Replicas {
            again: Pool::new(REPLICA_BYTES.min(memory_limit / 16)),
            hashed: Pool::new(memory_limit / HASHED_SHARE),
            seen: HashSet::new(),
            tick: 0,
            turns: HashMap::new(),
        }
    }

    /// The kept copy of `id`, if any.
    pub fn get(&mut self, id: CopyId) -> Option<Arc<ChunkData>> {
        self.tick += 1;
        let tick = self.tick;
        self.hashed
            .used(id, tick)
            .or_else(|| self.again.used(id, tick))
    }

    /// `data` was fetched as `id`: a hashed join side is kept if it fits its budget; any
    /// other chunk if it was fetched before and takes at most a quarter of its budget. The
    /// least recently used copies make room.
    pub fn fetched(&mut self, id: CopyId, data: &Arc<ChunkData>) {
        let nbytes = data.nbytes() as u64;
        if self.again.kept.contains_key(&id) || self.hashed.kept.contains_key(&id) {
            return;
        }
        self.tick += 1;
        if matches!(**data, ChunkData::Hashed(_)) {
            if nbytes <= self.hashed.budget {
                self.hashed.keep(id, data, self.tick);
            }
            return;
        }
        if nbytes > self.again.budget / 4 {
            return;
        }
        if self.seen.len() >= SEEN_LIMIT {
            self.seen.clear();
        }
        if self.seen.insert(id) {
            return;
        }
        self.again.keep(id, data, self.tick);
    }

    /// The lock a task holds while it fetches `id`, so that one task at a time fetches a
    /// large chunk; give it back with [`Replicas::end_turn`].
    pub fn turn(&mut self, id: CopyId) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(self.turns.entry(id).or_default())
    }

    /// A task is done with the turn it took for `id`: forgotten once no one else holds it.
    pub fn end_turn(&mut self, id: CopyId, turn: Arc<tokio::sync::Mutex<()>>) {
        drop(turn);
        if self
            .turns
            .get(&id)
            .is_some_and(|t| Arc::strong_count(t) == 1)
        {
            self.turns.remove(&id);
        }
    }

    /// Drops every copy of `job`'s chunks, and its fetches' turns.
    pub fn forget_job(&mut self, job: u64) {
        self.again.forget_job(job);
        self.hashed.forget_job(job);
        self.seen.retain(|id| id.0 != job);
        // A fetch cancelled with its job never ended its turn.
        self.turns.retain(|id, _| id.0 != job);
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
        assert_eq!(r.again.budget, 1200);
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
        assert_eq!(r.again.bytes, 1200, "full");
        // a is used again, so b is the least recently used: it makes room for e.
        assert!(r.get(a).is_some());
        r.fetched(e, &chunk(300));
        r.fetched(e, &chunk(300));
        assert!(r.get(b).is_none());
        for id in [a, c, d, e] {
            assert!(r.get(id).is_some(), "{id:?}");
        }
        assert_eq!(r.again.bytes, 1200);
        // Over a quarter of the budget: never kept.
        let big = (4, 6, 1);
        r.fetched(big, &chunk(301));
        r.fetched(big, &chunk(301));
        assert!(r.get(big).is_none());
        // A cancelled job's copies go.
        r.forget_job(2);
        assert!(r.get(c).is_none() && r.get(d).is_none());
        assert!(r.get(a).is_some() && r.get(e).is_some());
        assert_eq!(r.again.bytes, 600);
    }

    fn hashed(rows: i64) -> Arc<ChunkData> {
        let keys = arrow::array::Int64Array::from_iter_values(0..rows);
        let table = arrow::array::RecordBatch::try_from_iter([(
            "k",
            Arc::new(keys) as arrow::array::ArrayRef,
        )])
        .unwrap();
        let side = tessera_kernels::frame::join::HashedSide::new(&[table], vec!["k".to_string()]);
        Arc::new(ChunkData::Hashed(side.unwrap()))
    }

    #[test]
    fn a_hashed_join_side_is_kept_from_its_first_fetch_in_a_budget_of_its_own() {
        let side = hashed(1000);
        let bytes = side.nbytes() as u64;
        // Room for two sides; small copies take a sixteenth of the limit.
        let mut r = Replicas::new(HASHED_SHARE * (2 * bytes + 1));
        let (a, b, c) = ((1, 1, 1), (1, 2, 1), (2, 3, 1));
        r.fetched(a, &side);
        assert!(r.get(a).is_some(), "kept from the first fetch");
        r.fetched(b, &hashed(1000));
        r.fetched(c, &hashed(1000));
        assert!(r.get(a).is_none(), "the least recently used side made room");
        assert!(r.get(b).is_some() && r.get(c).is_some());
        assert_eq!(r.hashed.bytes, 2 * bytes);
        assert_eq!(
            r.again.bytes, 0,
            "the sides took none of the other copies' room"
        );
        // A side over the budget is not kept.
        let big = (3, 4, 1);
        r.fetched(big, &hashed(4000));
        assert!(r.get(big).is_none());
        r.forget_job(1);
        assert!(r.get(b).is_none() && r.get(c).is_some());
        assert_eq!(r.hashed.bytes, bytes);
    }

    #[test]
    fn a_turn_is_forgotten_when_its_last_holder_ends_it() {
        let mut r = Replicas::new(1 << 20);
        let id = (1, 1, 1);
        let first = r.turn(id);
        let second = r.turn(id);
        assert!(Arc::ptr_eq(&first, &second), "one lock per copy");
        r.end_turn(id, first);
        assert!(r.turns.contains_key(&id), "still held by the second");
        r.end_turn(id, second);
        assert!(r.turns.is_empty());
    }
}
