//! The storage actor's state: chunks in the host memory tier (each holding a
//! [`Reservation`] in the host [`HostPool`], made by the store or taken over from the
//! chunk's sender) and in the disk tier (segment files in a private [`SpillDir`], made on
//! first use; the disk budget counts the bytes they hold, freed chunks not yet given back
//! included).
//!
//! Whenever the pool is over budget (stored chunks, chunks on their way to storage, and the
//! planner's reservations for running tasks) the store spills the least valuable chunks: only chunks nobody else
//! holds (no running task reads them, so spilling really frees memory), the one needed
//! last first (largest next use, then largest); while the planner holds a task back for
//! memory, it spills ahead to make that task's room where it can ([`ChunkStore::make_room`]).
//! A spilled chunk is read back, checksum
//! verified, when it is asked for. A spill that fails (disk full, unwritable, over the
//! disk budget) leaves the chunk in memory; the planner's back-pressure then holds new work.
//! The store keeps the pool told of the room left in the disk tier
//! ([`HostPool::set_disk_room`]), for the planner to fail a job that cannot progress
//! within both budgets rather than reserve past them.
//! A chunk that cannot be read back is reported lost, for the planner to recompute.
//!
//! Drop or spill: a chunk whose producer reads no other chunk (generated data, a range of a
//! file) comes with what computing it took. Where that costs less than writing it and
//! reading it back at the disk tier's measured speed, making room drops it instead of
//! spilling it, and a read reports it [`StorageError::Dropped`]: the planner runs its
//! producer again, without counting a loss. A kept chunk is dropped only where its owner
//! said it can compute it again ([`ChunkStore::allow_drop`], or [`ChunkStore::put_kept`]
//! with its cost: a cluster worker's output of a task with no inputs, which the scheduler
//! recomputes).

use crate::disk::{self, SpillDir, SpillFile};
use crate::faults::{FaultInjector, FaultKind, FaultPoint};
use crate::job::JobId;
use crate::kept::KEPT_OP;
use crate::memory::{HostPool, MemoryPool, Reservation};
use crate::recorder::{Recorder, StorageEvent, StorageEventKind, StorageLog};
use crate::trim::Trimmer;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use tessera_core::ids::ChunkId;
pub use tessera_core::storage::{PutInfo, StorageStats};
use tessera_kernels::ChunkData;
use thiserror::Error;

/// Why storage could not serve a request.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// Chunks are not stored, or could not be read back from disk.
    #[error("{} chunk(s) lost from storage (first {}): {cause}", ids.len(), ids[0])]
    Lost {
        /// The lost chunks (never empty).
        ids: Vec<ChunkId>,
        /// Why: not in storage, or the disk tier's read error.
        cause: String,
    },
    /// Chunks were dropped to make room because recomputing them costs less than a spill
    /// and a read back (see [`ChunkStore::put_reserved`]): their producers must run again.
    #[error("{} chunk(s) dropped from memory to be recomputed (first {})", ids.len(), ids[0])]
    Dropped {
        /// The dropped chunks (never empty).
        ids: Vec<ChunkId>,
    },
}

impl StorageError {
    /// The chunks the error names.
    pub fn ids(&self) -> &[ChunkId] {
        match self {
            StorageError::Lost { ids, .. } | StorageError::Dropped { ids } => ids,
        }
    }
}

/// How a store is set up.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The host memory tier's pool (shared with the planner's reservations).
    pub pool: Arc<HostPool>,
    /// Where the private spill folder is made.
    pub spill_parent: PathBuf,
    /// Bytes the disk tier may hold.
    pub disk_budget: u64,
    /// Faults to inject at puts and spills.
    pub faults: Option<Arc<FaultInjector>>,
    /// The pool's limit bounds the process's resident memory, not only reservations: the
    /// storage actor lowers the budget by what the process holds beyond them
    /// ([`SystemConfig::limit_resident`](crate::system::SystemConfig::limit_resident)).
    pub limit_resident: bool,
    /// The clock and bound of the storage events kept per job.
    pub recorder: Arc<Recorder>,
}

/// What happened to a put chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Kept (in memory, or spilled).
    Stored,
    /// Discarded by an injected [`FaultKind::DropChunk`].
    Dropped,
    /// An injected [`FaultKind::KillStorage`]: the storage actor must die now.
    Kill,
}

/// Why a chunk was not spilled.
#[derive(Debug)]
enum SpillRefused {
    /// The disk tier's budget has no room for it.
    DiskBudget,
    /// Creating the folder or writing the file failed (the error's text).
    Failed(String),
}

impl fmt::Display for SpillRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpillRefused::DiskBudget => f.write_str("the disk tier's budget is full"),
            SpillRefused::Failed(cause) => f.write_str(cause),
        }
    }
}

#[derive(Debug)]
enum Place {
    /// In memory, with its reservation (none for data shared with the user), and, for a
    /// chunk read back from disk, its still valid spill file: spilling it again writes
    /// nothing.
    Memory {
        data: Arc<ChunkData>,
        _reservation: Option<Reservation>,
        file: Option<SpillFile>,
    },
    Disk(SpillFile),
}

#[derive(Debug)]
struct Entry {
    place: Place,
    nbytes: u64,
    op: &'static str,
    next_use: u64,
    /// What computing the chunk again costs, for one its producer can compute alone
    /// (no other chunk read); `None` for any other.
    recompute: Option<Duration>,
}

impl Entry {
    /// Its place in the victim order: the chunk needed last goes first (largest next use,
    /// then largest, then id), for one in memory; `None` for one on disk.
    fn victim_order(&self, id: ChunkId) -> Option<(u64, u64, ChunkId)> {
        matches!(self.place, Place::Memory { .. }).then_some((self.next_use, self.nbytes, id))
    }

    /// True for a chunk in memory, under a reservation, that nobody else holds: spilling
    /// or dropping it frees memory.
    fn can_go(&self) -> bool {
        matches!(&self.place, Place::Memory { data, _reservation: Some(_), .. } if Arc::strong_count(data) == 1)
    }
}

/// Disk throughput assumed (both ways) until the store has timed its own spills and reads.
const ASSUMED_DISK_BYTES_PER_S: f64 = 500e6;

/// The disk tier's measured throughput, each way: the mean of the last transfers
/// (smoothed, each new one weighing a quarter).
#[derive(Debug)]
struct DiskRates {
    write: f64,
    read: f64,
}

impl DiskRates {
    fn update(rate: &mut f64, bytes: u64, took: Duration) {
        let secs = took.as_secs_f64();
        if bytes > 0 && secs > 0.0 {
            *rate = 0.75 * *rate + 0.25 * (bytes as f64 / secs);
        }
    }

    /// What spilling `bytes` and reading them back would cost.
    fn spill_cost(&self, bytes: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 / self.write + bytes as f64 / self.read)
    }
}

/// Chunks held in the host memory and disk tiers (see the module docs).
#[derive(Debug)]
pub struct ChunkStore {
    config: StoreConfig,
    entries: HashMap<ChunkId, Entry>,
    /// The chunks in memory in victim order ([`Entry::victim_order`]), so that making room
    /// does not walk the chunks on disk (a shuffle under pressure spills thousands).
    in_memory: BTreeSet<(u64, u64, ChunkId)>,
    /// Chunks kept for the caller after their job (persisted data), with how many handles
    /// hold each: jobs' releases leave them alone; [`ChunkStore::unkeep`] drops them.
    kept: HashMap<ChunkId, u32>,
    dir: Option<SpillDir>,
    /// Bytes of chunks in memory whose spill file is still there (read back, unchanged):
    /// spilling them again writes nothing.
    reread_bytes: u64,
    jobs: HashMap<JobId, JobStorage>,
    /// The job whose put or read made room last, while its counters are not taken yet: a
    /// kept chunk spilled after its own job (handed on between a frame job's stages,
    /// persisted) counts for it, so that a job's counters show what it spilled beside what
    /// it read back.
    pressing: Option<JobId>,
    /// Spills of kept chunks while no job pressed: reported with the next job's counters.
    unclaimed: StorageStats,
    warned_spill_failure: bool,
    trimmer: Trimmer,
    /// Chunks dropped instead of spilled, until put again or released.
    dropped: HashSet<ChunkId>,
    /// Kept chunks their owner can compute again ([`Self::allow_drop`]), until released.
    recomputable: HashSet<ChunkId>,
    rates: DiskRates,
    /// When a chunk was last spilled or read back: spare segment files go once the disk
    /// tier has been idle for a while ([`Self::drop_idle_spares`]).
    last_disk_io: Option<Instant>,
}

/// What storage did for one job: counters, and the events while recording is on.
#[derive(Debug, Default)]
struct JobStorage {
    stats: StorageStats,
    log: StorageLog,
}

impl ChunkStore {
    /// An empty store; nothing is written to disk until a chunk is spilled.
    pub fn new(config: StoreConfig) -> ChunkStore {
        let store = ChunkStore {
            config,
            entries: HashMap::new(),
            in_memory: BTreeSet::new(),
            kept: HashMap::new(),
            dir: None,
            reread_bytes: 0,
            jobs: HashMap::new(),
            pressing: None,
            unclaimed: StorageStats::default(),
            warned_spill_failure: false,
            trimmer: Trimmer::default(),
            dropped: HashSet::new(),
            recomputable: HashSet::new(),
            rates: DiskRates {
                write: ASSUMED_DISK_BYTES_PER_S,
                read: ASSUMED_DISK_BYTES_PER_S,
            },
            last_disk_io: None,
        };
        store.publish_disk_room();
        store
    }

    /// Tells the pool how many bytes the disk tier can still take from memory.
    fn publish_disk_room(&self) {
        let budget = self.config.disk_budget;
        let room = budget
            .saturating_sub(self.disk_bytes())
            .saturating_add(self.reread_bytes);
        self.config.pool.set_disk_room(budget, room);
    }

    /// [`ChunkStore::put_reserved`] of a chunk nobody reserved (tests).
    #[cfg(test)]
    pub(crate) fn put(&mut self, id: ChunkId, data: Arc<ChunkData>, info: PutInfo) -> PutOutcome {
        self.put_reserved(id, data, info, None)
    }

    /// Stores chunk `id` (replacing one with the same id), then makes the room the budget
    /// asks for: the chunk needed last goes first, dropped where `info.recompute` costs
    /// less than spilling it and reading it back at the disk's measured speed (a read then
    /// reports it [`StorageError::Dropped`]), else spilled. A `shared` chunk is kept
    /// without a reservation and never spilled: that would free no memory. Its bytes'
    /// reservation is `reserved` where its producer made one (of `data.nbytes()` bytes),
    /// taken over so they stay counted between the producer and the store; else the store
    /// makes it.
    pub fn put_reserved(
        &mut self,
        id: ChunkId,
        data: Arc<ChunkData>,
        info: PutInfo,
        reserved: Option<Reservation>,
    ) -> PutOutcome {
        self.trimmer.used();
        let outcome = self.insert(id, data, info, reserved);
        if outcome == PutOutcome::Stored {
            self.make_room();
        }
        outcome
    }

    /// Stores chunk `id` as kept data ([`Self::keep`]) under the reservation its sender
    /// made, droppable from the start where `recompute` says what computing it again
    /// costs its owner ([`Self::allow_drop`]), then makes room as [`Self::put_reserved`] does.
    pub fn put_kept(
        &mut self,
        id: ChunkId,
        data: Arc<ChunkData>,
        reserved: Reservation,
        recompute: Option<Duration>,
    ) -> PutOutcome {
        let info = PutInfo {
            op: KEPT_OP,
            next_use: 0,
            shared: false,
            recompute: None,
        };
        self.trimmer.used();
        let outcome = self.insert(id, data, info, Some(reserved));
        if outcome == PutOutcome::Stored {
            *self.kept.entry(id).or_default() += 1;
            if let Some(recompute) = recompute {
                self.mark_recomputable(id, recompute);
            }
            self.make_room();
        }
        outcome
    }

    /// Stores chunk `id` (replacing one with the same id) without making room.
    fn insert(
        &mut self,
        id: ChunkId,
        data: Arc<ChunkData>,
        info: PutInfo,
        reserved: Option<Reservation>,
    ) -> PutOutcome {
        let PutInfo {
            op,
            next_use,
            shared,
            recompute,
        } = info;
        match self.fault(FaultPoint::Put, op) {
            Some(FaultKind::KillStorage) => return PutOutcome::Kill,
            Some(FaultKind::DropChunk) => return PutOutcome::Dropped,
            _ => {}
        }
        let nbytes = data.nbytes() as u64;
        self.pressing = Some(id.job);
        let entry = Entry {
            place: Place::Memory {
                _reservation: (!shared).then(|| {
                    reserved.unwrap_or_else(|| Reservation::new(self.config.pool.clone(), nbytes))
                }),
                data,
                file: None,
            },
            nbytes,
            op,
            next_use,
            recompute,
        };
        self.dropped.remove(&id);
        if let Some(old) = self.insert_entry(id, entry) {
            self.forget_file(old);
        }
        PutOutcome::Stored
    }

    /// The chunks `ids` in order (a repeated id yields the same chunk again), read back from
    /// disk where spilled; with `release`, they are removed from the store (kept ones stay). All or nothing:
    /// if any chunk is missing or unreadable, the error lists those (unreadable ones are
    /// forgotten) and nothing is removed.
    pub fn get(
        &mut self,
        ids: &[ChunkId],
        release: bool,
    ) -> Result<Vec<Arc<ChunkData>>, StorageError> {
        self.get_for(None, ids, release)
    }

    /// [`Self::get`] for job `reader`, whose statistics count the bytes read back (by
    /// default the statistics of each chunk's own job; a kept chunk's job is over).
    pub fn get_for(
        &mut self,
        reader: Option<JobId>,
        ids: &[ChunkId],
        release: bool,
    ) -> Result<Vec<Arc<ChunkData>>, StorageError> {
        let wanted = distinct(ids);
        self.all_stored(&wanted)?;
        self.pressing = reader.or(self.pressing);
        let mut unreadable = Vec::new();
        let mut cause = String::new();
        for id in wanted {
            if let Err(e) = self.read_back(id, reader.unwrap_or(id.job)) {
                unreadable.push(id);
                cause = e;
            }
        }
        if !unreadable.is_empty() {
            return Err(StorageError::Lost {
                ids: unreadable,
                cause,
            });
        }
        let found = ids
            .iter()
            .filter_map(|id| match self.entries.get(id).map(|e| &e.place) {
                Some(Place::Memory { data, .. }) => Some(Arc::clone(data)),
                _ => None,
            })
            .collect();
        if release {
            self.release(ids);
        } else {
            // Chunks just read back are held by the caller now, so only others can go.
            self.make_room();
        }
        Ok(found)
    }

    /// Keeps the chunks `ids` after their job (persisted data: spillable like any chunk, but
    /// dropped only by [`Self::unkeep`], once for every time they were kept) and returns
    /// their sizes in bytes. All or nothing: missing chunks are reported lost.
    pub fn keep(&mut self, ids: &[ChunkId]) -> Result<Vec<u64>, StorageError> {
        self.all_stored(&distinct(ids))?;
        Ok(ids
            .iter()
            .map(|id| {
                *self.kept.entry(*id).or_default() += 1;
                self.entries.get(id).map_or(0, |e| e.nbytes)
            })
            .collect())
    }

    /// Gives up one hold on each of the kept chunks `ids`; a chunk nobody keeps any more is
    /// dropped (its spill file freed).
    pub fn unkeep(&mut self, ids: &[ChunkId]) {
        let mut unused = Vec::new();
        for id in ids {
            if let Some(holds) = self.kept.get_mut(id) {
                *holds -= 1;
                if *holds == 0 {
                    self.kept.remove(id);
                    unused.push(*id);
                }
            }
        }
        self.release(&unused);
        // Counters of spills of kept chunks after their job ended go with the last of them.
        for id in unused {
            // (Scanning the entries only when there are counters to drop: a worker holds
            // thousands of kept chunks and gives them up one by one.)
            if self.jobs.contains_key(&id.job) && !self.entries.keys().any(|e| e.job == id.job) {
                self.jobs.remove(&id.job);
            }
        }
    }

    /// Lets the kept chunks `ids` be dropped from memory like a job's chunks, where
    /// computing one again (`recompute`) costs less than a spill and a read back: their
    /// owner can compute them again, and a read of one dropped reports it
    /// [`StorageError::Dropped`]. Chunks not kept, or no longer in memory, are left as
    /// they are.
    pub fn allow_drop(&mut self, ids: &[ChunkId], recompute: Duration) {
        for &id in ids {
            if self.kept.contains_key(&id) {
                self.mark_recomputable(id, recompute);
            }
        }
        self.make_room();
    }

    /// Marks the chunk `id`, if in memory, as one its owner computes again in `recompute`.
    fn mark_recomputable(&mut self, id: ChunkId, recompute: Duration) {
        if let Some(
            entry @ Entry {
                place: Place::Memory { .. },
                ..
            },
        ) = self.entries.get_mut(&id)
        {
            entry.recompute = Some(recompute);
            self.recomputable.insert(id);
        }
    }

    /// An error naming those of the distinct chunks `ids` that are not stored: the lost
    /// ones, else the dropped ones.
    fn all_stored(&self, ids: &[ChunkId]) -> Result<(), StorageError> {
        let (dropped, lost): (Vec<ChunkId>, Vec<ChunkId>) = ids
            .iter()
            .copied()
            .filter(|id| !self.entries.contains_key(id))
            .partition(|id| self.dropped.contains(id));
        if !lost.is_empty() {
            return Err(StorageError::Lost {
                ids: lost,
                cause: "not in storage".into(),
            });
        }
        if !dropped.is_empty() {
            return Err(StorageError::Dropped { ids: dropped });
        }
        Ok(())
    }

    /// Chunks kept for the caller (see [`Self::keep`]).
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Drops the chunks `ids` that are stored and not kept (freeing their spill files);
    /// returns how many were. Disk space freed is room again (published to the pool), and
    /// spilling resumes where the pool is still over budget.
    pub fn release(&mut self, ids: &[ChunkId]) -> usize {
        self.trimmer.used();
        let mut released = 0;
        for id in ids {
            if self.kept.contains_key(id) {
                continue;
            }
            self.dropped.remove(id);
            self.recomputable.remove(id);
            if let Some(old) = self.remove_entry(*id) {
                let now = self.config.recorder.now();
                self.log(StorageEventKind::Drop, *id, old.nbytes, now);
                self.forget_file(old);
                released += 1;
            }
        }
        if released > 0 {
            self.make_room();
        }
        released
    }

    /// Drops every chunk of `job` that is not kept and returns what storage did for it: its
    /// counters and (while recording is on) its events.
    pub fn forget_job(&mut self, job: JobId) -> (StorageStats, StorageLog) {
        let ids: Vec<ChunkId> = self
            .entries
            .keys()
            .filter(|id| id.job == job)
            .copied()
            .collect();
        self.release(&ids);
        self.dropped.retain(|id| id.job != job);
        if self.pressing == Some(job) {
            self.pressing = None;
        }
        let mut done = self.jobs.remove(&job).unwrap_or_default();
        done.stats.absorb(&std::mem::take(&mut self.unclaimed));
        (done.stats, done.log)
    }

    /// Chunks stored (in either tier).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Chunks now in the disk tier.
    pub fn spilled(&self) -> usize {
        let on_disk = |e: &&Entry| matches!(e.place, Place::Disk(_));
        self.entries.values().filter(on_disk).count()
    }

    /// Bytes the disk tier holds now: spilled chunks, and freed ones whose bytes the
    /// spill folder has not given back yet. Emptied segment files kept for reuse are not
    /// counted: a spill that needs their room deletes them first.
    pub fn disk_bytes(&self) -> u64 {
        self.dir.as_ref().map_or(0, SpillDir::held_bytes)
    }

    /// Deletes up to `most` of the spill folder's spare segment files once no chunk has
    /// been spilled or read back for `idle` (storage calls it on a timer): kept while the
    /// disk tier is in use, to be written over, they are given back once it rests, a few
    /// at a time (deleting one holds this thread 20–70 ms, and a new job may be waiting).
    pub fn drop_idle_spares(&mut self, idle: Duration, most: usize) {
        let quiet = self.last_disk_io.is_none_or(|at| at.elapsed() >= idle);
        if let (true, Some(dir)) = (quiet, &mut self.dir) {
            let dropped = dir.drop_spares(most);
            if dropped > 0 {
                tracing::debug!(dropped, "deleted spare spill segments");
            }
        }
    }

    /// The host memory pool the store spills for.
    pub fn pool(&self) -> &Arc<HostPool> {
        &self.config.pool
    }

    /// Gives the memory the allocators keep after frees back to the system now.
    pub fn release_freed_memory(&mut self) {
        self.trimmer.release_now();
    }

    /// Gives the memory the allocator holds free back to the operating system once nothing
    /// has been stored or released for `idle` (once per such rest; storage calls it on a
    /// timer).
    pub fn release_memory_if_idle(&mut self, idle: Duration) {
        if self.trimmer.release_if_idle(idle) {
            tracing::debug!("idle: freed memory given back");
        }
    }

    /// Bytes the spill folder's files take: [`Self::disk_bytes`] and the spare ones.
    fn disk_footprint(&self) -> u64 {
        self.dir
            .as_ref()
            .map_or(0, |dir| dir.held_bytes() + dir.spare_bytes())
    }

    /// The spill folder, once one was made.
    pub fn spill_dir(&self) -> Option<&std::path::Path> {
        self.dir.as_ref().map(SpillDir::path)
    }

    /// True if an injected fault stalls this read of kept chunks (its answer is never sent).
    pub fn read_stalls(&self) -> bool {
        self.fault(FaultPoint::Read, KEPT_OP) == Some(FaultKind::StallRead)
    }

    fn fault(&self, point: FaultPoint, op: &str) -> Option<FaultKind> {
        self.config.faults.as_ref().and_then(|f| f.at(point, op))
    }

    fn forget_file(&mut self, old: Entry) {
        let file = match old.place {
            Place::Disk(file) => file,
            Place::Memory {
                file: Some(file), ..
            } => {
                self.reread_bytes -= old.nbytes;
                file
            }
            Place::Memory { file: None, .. } => return,
        };
        if let Some(dir) = &mut self.dir {
            dir.remove(file);
        }
        self.publish_disk_room();
    }

    /// Drops or spills chunks while the pool is over budget and something can go (the disk
    /// room each spill leaves is published as it goes); and, while the planner holds a task
    /// back for memory ([`HostPool::wanted`]), until its reservation fits, if spilling
    /// every chunk that can go would make it fit (else waiting for running tasks to end
    /// frees the room, and spilling now would only cost reads later).
    pub fn make_room(&mut self) {
        let pool = Arc::clone(&self.config.pool);
        let (budget, wanted) = (pool.budget(), pool.wanted());
        let short = pool.used().saturating_add(wanted) > budget;
        // Only computed while short: it walks every entry.
        let can_fit = || {
            let kept = pool.used().saturating_sub(self.spillable_bytes());
            kept.saturating_add(wanted) <= budget
        };
        let headroom = if short && can_fit() { wanted } else { 0 };
        while pool.used().saturating_add(headroom) > budget {
            let Some(victim) = self.pick_victim() else {
                return;
            };
            if self.drop_cheaper(victim) {
                self.drop_chunk(victim);
                continue;
            }
            match self.spill(victim) {
                Ok(()) => {}
                Err(refused) => {
                    self.spill_stats(victim).spill_failures += 1;
                    if !std::mem::replace(&mut self.warned_spill_failure, true) {
                        tracing::warn!(chunk = %victim, cause = %refused, "cannot spill to disk; holding chunks in memory");
                    }
                    return;
                }
            }
        }
    }

    /// The job a spill of `id` (or its failure) counts for: its own, or for a kept chunk
    /// spilled after its job, the job that made room (`None`: no job presses now).
    fn spill_job(&self, id: ChunkId) -> Option<JobId> {
        match self.kept.contains_key(&id) {
            true => self.pressing,
            false => Some(id.job),
        }
    }

    /// The counters a spill of `id` (or its failure) goes into (see [`Self::spill_job`]).
    fn spill_stats(&mut self, id: ChunkId) -> &mut StorageStats {
        match self.spill_job(id) {
            Some(job) => self.stats(job),
            None => &mut self.unclaimed,
        }
    }

    /// True when computing chunk `id` again costs less than spilling it and reading it
    /// back (never for a kept chunk, whose lineage is its owner's, unless the owner allowed
    /// it; nor for one whose spill file is still there: spilling it writes nothing).
    fn drop_cheaper(&self, id: ChunkId) -> bool {
        let Some(entry) = self.entries.get(&id) else {
            return false;
        };
        let owners_only = self.kept.contains_key(&id) && !self.recomputable.contains(&id);
        if owners_only || matches!(entry.place, Place::Memory { file: Some(_), .. }) {
            return false;
        }
        let spill = self.rates.spill_cost(entry.nbytes);
        entry.recompute.is_some_and(|r| r < spill)
    }

    /// Frees an in-memory chunk's memory without writing it: a read reports it dropped.
    /// (Only a chunk without a spill file is dropped: see [`Self::drop_cheaper`].)
    fn drop_chunk(&mut self, id: ChunkId) {
        let Some(Entry { nbytes, .. }) = self.remove_entry(id) else {
            return;
        };
        self.trimmer.freed(nbytes);
        self.dropped.insert(id);
        let stats = self.spill_stats(id);
        stats.chunks_dropped += 1;
        stats.bytes_dropped += nbytes;
        tracing::debug!(chunk = %id, bytes = nbytes, "dropped: recomputing it costs less than a spill");
    }

    /// The in-memory chunk nobody else holds that is needed last (then the largest).
    fn pick_victim(&self) -> Option<ChunkId> {
        self.in_memory
            .iter()
            .rev()
            .map(|&(_, _, id)| id)
            .find(|id| self.entries.get(id).is_some_and(Entry::can_go))
    }

    /// Bytes of the in-memory chunks that spilling or dropping could free now.
    fn spillable_bytes(&self) -> u64 {
        let in_memory = self
            .in_memory
            .iter()
            .filter_map(|(_, _, id)| self.entries.get(id));
        in_memory.filter(|e| e.can_go()).map(|e| e.nbytes).sum()
    }

    /// Stores `entry` under `id`, in the victim order if in memory; the entry it replaces.
    fn insert_entry(&mut self, id: ChunkId, entry: Entry) -> Option<Entry> {
        let old = self.remove_entry(id);
        if let Some(order) = entry.victim_order(id) {
            self.in_memory.insert(order);
        }
        self.entries.insert(id, entry);
        old
    }

    /// True when the victim order holds exactly the chunks in memory (tests check it).
    #[cfg(test)]
    pub(crate) fn victim_order_holds(&self) -> bool {
        let orders = self
            .entries
            .iter()
            .filter_map(|(&id, e)| e.victim_order(id));
        orders.collect::<BTreeSet<_>>() == self.in_memory
    }

    /// Chunk `id` is now in `file` only: out of memory and of the victim order.
    fn move_to_disk(&mut self, id: ChunkId, file: SpillFile) {
        if let Some(entry) = self.entries.get_mut(&id) {
            if let Some(order) = entry.victim_order(id) {
                self.in_memory.remove(&order);
            }
            entry.place = Place::Disk(file);
        }
    }

    /// Removes chunk `id`'s entry, and its place in the victim order.
    fn remove_entry(&mut self, id: ChunkId) -> Option<Entry> {
        let old = self.entries.remove(&id)?;
        if let Some(order) = old.victim_order(id) {
            self.in_memory.remove(&order);
        }
        Some(old)
    }

    /// Writes one in-memory chunk to the disk tier and frees its memory.
    fn spill(&mut self, id: ChunkId) -> Result<(), SpillRefused> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Ok(());
        };
        // Read back earlier and unchanged since: its file is still there.
        if let Place::Memory { file, .. } = &mut entry.place {
            if let Some(file) = file.take() {
                let nbytes = entry.nbytes;
                self.move_to_disk(id, file);
                self.trimmer.freed(nbytes);
                self.reread_bytes -= nbytes;
                self.publish_disk_room();
                return Ok(());
            }
        }
        let Place::Memory { data, .. } = &entry.place else {
            return Ok(());
        };
        let (data, nbytes, op) = (Arc::clone(data), entry.nbytes, entry.op);
        let started = self.config.recorder.now();
        let over =
            |store: &Self| store.disk_footprint().saturating_add(nbytes) > store.config.disk_budget;
        if over(self) {
            // Freed chunks' bytes still on disk, and spare files, are given back first.
            if let Some(dir) = &mut self.dir {
                dir.reclaim();
            }
            if over(self) {
                return Err(SpillRefused::DiskBudget);
            }
        }
        let fault = self.fault(FaultPoint::Spill, op);
        if fault == Some(FaultKind::SpillWriteFails) {
            return Err(SpillRefused::Failed("injected: the disk is full".into()));
        }
        let failed = |e: disk::DiskError| SpillRefused::Failed(e.to_string());
        if self.dir.is_none() {
            self.dir = Some(SpillDir::create(&self.config.spill_parent).map_err(failed)?);
        }
        let Some(dir) = &mut self.dir else {
            return Ok(());
        };
        let writing = Instant::now();
        let file = dir.write(&data).map_err(failed)?;
        self.last_disk_io = Some(writing);
        DiskRates::update(&mut self.rates.write, nbytes, writing.elapsed());
        let damaged = match fault {
            Some(FaultKind::CorruptSpill) => disk::corrupt_file(&file),
            Some(FaultKind::DeleteSpill) => disk::delete_file(&file),
            _ => Ok(()),
        };
        if let Err(e) = damaged {
            tracing::warn!(chunk = %id, error = %e, "could not inject the spill-file fault");
        }
        self.publish_disk_room();
        let disk_now = self.disk_footprint();
        self.move_to_disk(id, file);
        drop(data);
        self.trimmer.freed(nbytes);
        let job = self.spill_job(id);
        let stats = self.spill_stats(id);
        stats.bytes_spilled += nbytes;
        stats.chunks_spilled += 1;
        stats.peak_disk_bytes = stats.peak_disk_bytes.max(disk_now);
        self.log_for(
            job.unwrap_or(id.job),
            StorageEventKind::Spill,
            id,
            nbytes,
            started,
        );
        tracing::debug!(chunk = %id, bytes = nbytes, "spilled");
        Ok(())
    }

    /// Brings a spilled chunk back into memory (reserving it; its file stays, so spilling
    /// it again writes nothing); on failure the chunk is forgotten and the error says why.
    fn read_back(&mut self, id: ChunkId, reader: JobId) -> Result<(), String> {
        let (Some(entry), Some(dir)) = (self.entries.get(&id), &self.dir) else {
            return Ok(());
        };
        let Place::Disk(file) = &entry.place else {
            return Ok(());
        };
        let started = self.config.recorder.now();
        let reading = Instant::now();
        self.last_disk_io = Some(reading);
        let read = dir.read(file);
        let took = reading.elapsed();
        let Some(Entry {
            place,
            nbytes,
            op,
            next_use,
            recompute,
        }) = self.remove_entry(id)
        else {
            return Ok(());
        };
        match (read, place) {
            (Ok(data), Place::Disk(file)) => {
                let place = Place::Memory {
                    _reservation: Some(Reservation::new(self.config.pool.clone(), nbytes)),
                    data: Arc::new(data),
                    file: Some(file),
                };
                let entry = Entry {
                    place,
                    nbytes,
                    op,
                    next_use,
                    recompute,
                };
                self.insert_entry(id, entry);
                DiskRates::update(&mut self.rates.read, nbytes, took);
                self.reread_bytes += nbytes;
                self.publish_disk_room();
                self.stats(reader).bytes_read_back += nbytes;
                self.log_for(reader, StorageEventKind::ReadBack, id, nbytes, started);
                Ok(())
            }
            (read, place) => {
                let cause = read.err().map_or_else(String::new, |e| e.to_string());
                tracing::warn!(chunk = %id, %cause, "spilled chunk lost");
                self.forget_file(Entry {
                    place,
                    nbytes,
                    op,
                    next_use,
                    recompute,
                });
                Err(cause)
            }
        }
    }

    fn stats(&mut self, job: JobId) -> &mut StorageStats {
        &mut self.jobs.entry(job).or_default().stats
    }

    /// Logs an event on chunk `id` (of `nbytes`) that began at `started`, for its own job.
    fn log(&mut self, kind: StorageEventKind, id: ChunkId, nbytes: u64, started: u64) {
        self.log_for(id.job, kind, id, nbytes, started);
    }

    /// Logs an event on chunk `id` for job `job`, while recording is on.
    fn log_for(
        &mut self,
        job: JobId,
        kind: StorageEventKind,
        id: ChunkId,
        nbytes: u64,
        started: u64,
    ) {
        let recorder = &self.config.recorder;
        if !recorder.enabled() {
            return;
        }
        let event = StorageEvent {
            kind,
            key: id.key,
            bytes: nbytes,
            start_ns: started,
            end_ns: recorder.now().max(started),
        };
        let capacity = recorder.capacity();
        self.jobs.entry(job).or_default().log.push(event, capacity);
    }
}

/// The ids of `ids` without repeats, in first-seen order.
fn distinct(ids: &[ChunkId]) -> Vec<ChunkId> {
    let mut seen = HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}

#[cfg(test)]
pub(crate) mod tests;
