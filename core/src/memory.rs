//! Memory accounting by reservation (DataFusion's `MemoryPool` / `MemoryReservation`
//! pattern): one [`MemoryPool`] per tier holds a byte budget; the planner reserves a
//! task's estimated output and working memory before it runs (given back when it ends),
//! then the chunk it produced from then until the store takes that reservation over (so a
//! chunk queued for a busy storage thread still counts), the store reserves every chunk it
//! keeps in memory, and each [`Reservation`] gives its bytes back when dropped.
//!
//! The pool also carries the store's word on the disk tier: its budget and the room left in
//! it ([`MemoryPool::set_disk_room`]). With nothing running and the budget full, the
//! planner reserves past it for one more task only while the disk tier can take what is
//! over ([`MemoryPool::past_both_tiers`]); else it fails the job instead of growing the
//! process past both budgets.
//!
//! And it carries the planner's word to the store: the reservation the next task waits for
//! ([`MemoryPool::set_wanted`]). The store spills ahead to make that room, where spilling
//! can, so that a task held back for memory starts as soon as the store has written
//! what it must, not only after the tasks running before it end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_kernels::ChunkOp;

/// A tier's byte budget and what is reserved against it.
#[derive(Debug)]
pub struct MemoryPool {
    budget: u64,
    used: AtomicU64,
    peak: AtomicU64,
    disk_budget: AtomicU64,
    disk_room: AtomicU64,
    wanted: AtomicU64,
}

impl MemoryPool {
    /// A pool of `budget` bytes, nothing reserved.
    pub fn new(budget: u64) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            budget,
            used: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            disk_budget: AtomicU64::new(u64::MAX),
            disk_room: AtomicU64::new(u64::MAX),
            wanted: AtomicU64::new(0),
        })
    }

    /// Reserves `bytes` if they fit in the budget.
    pub fn try_reserve(self: &Arc<Self>, bytes: u64) -> Option<Reservation> {
        let granted = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes)
                    .filter(|&after| after <= self.budget)
            });
        granted
            .ok()
            .map(|before| self.granted(before + bytes, bytes))
    }

    /// Reserves `bytes` whether or not they fit: for data that exists already (a chunk
    /// handed to the store) and for the one task that must run for a job to progress.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Reservation {
        let before = self.used.fetch_add(bytes, Ordering::AcqRel);
        self.granted(before.saturating_add(bytes), bytes)
    }

    fn granted(self: &Arc<Self>, after: u64, bytes: u64) -> Reservation {
        self.peak.fetch_max(after, Ordering::AcqRel);
        Reservation {
            pool: Arc::clone(self),
            bytes,
        }
    }

    /// The budget in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// True while more is reserved than the budget allows.
    pub fn over_budget(&self) -> bool {
        self.used() > self.budget
    }

    /// The most bytes ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }

    /// Records the disk tier's budget and the bytes it can still take from memory (its
    /// free space, plus chunks in memory whose file is still on disk: those leave memory
    /// without writing). Until the store says, the disk tier is unlimited.
    pub fn set_disk_room(&self, budget: u64, room: u64) {
        self.disk_budget.store(budget, Ordering::Release);
        self.disk_room.store(room, Ordering::Release);
    }

    /// Records the bytes the task the planner holds back for memory would reserve (0: none
    /// is held back).
    pub fn set_wanted(&self, bytes: u64) {
        self.wanted.store(bytes, Ordering::Release);
    }

    /// The bytes the task the planner holds back for memory would reserve (0: none).
    pub fn wanted(&self) -> u64 {
        self.wanted.load(Ordering::Acquire)
    }

    /// The disk tier's budget when reserving `bytes` more would put more past this pool's
    /// budget than the disk tier has room for (both tiers full), else `None`.
    ///
    /// Everything reserved past the budget must go to disk eventually, so the test does not
    /// depend on how far the store has got with spilling.
    pub fn past_both_tiers(&self, bytes: u64) -> Option<u64> {
        let over = self
            .used()
            .saturating_add(bytes)
            .saturating_sub(self.budget);
        (over > self.disk_room.load(Ordering::Acquire))
            .then(|| self.disk_budget.load(Ordering::Acquire))
    }
}

/// Bytes reserved in a [`MemoryPool`], given back on drop.
#[derive(Debug)]
pub struct Reservation {
    pool: Arc<MemoryPool>,
    bytes: u64,
}

impl Reservation {
    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Bytes to reserve for a task of `op` on inputs of `input_bytes` while it runs: its
/// output ([`ChunkOp::output_estimate`]; the largest input for a task that runs no op, a
/// stored part; `unknown_output` where neither says) and its kernel's working memory
/// ([`ChunkOp::working_estimate`]), which the task gives back when it ends. The planner
/// and a cluster worker's direct tasks reserve by this rule.
pub fn task_estimate(op: Option<&ChunkOp>, input_bytes: &[u64], unknown_output: u64) -> u64 {
    let sizes = input_bytes.iter().copied();
    let output = match op {
        Some(op) => op.output_estimate(sizes.clone()),
        None => sizes.clone().max(),
    };
    let working = op.map_or(0, |op| op.working_estimate(sizes));
    output.unwrap_or(unknown_output).saturating_add(working)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_fit_the_budget_and_return_on_drop() {
        let pool = MemoryPool::new(100);
        let a = pool.try_reserve(60).expect("fits");
        assert!(pool.try_reserve(41).is_none(), "would exceed the budget");
        let b = pool.try_reserve(40).expect("fits exactly");
        assert_eq!((pool.used(), pool.over_budget()), (100, false));
        let forced = pool.reserve(30);
        assert_eq!((pool.used(), pool.over_budget()), (130, true));
        assert!(
            pool.try_reserve(0).is_none(),
            "nothing fits while over budget"
        );
        drop((a, forced));
        assert_eq!((pool.used(), pool.peak()), (40, 130));
        assert_eq!(b.bytes(), 40);
        drop(b);
        assert_eq!(pool.used(), 0);
        assert!(pool.try_reserve(u64::MAX).is_none(), "no overflow");
    }

    #[test]
    fn past_both_tiers_counts_what_is_over_the_budget_against_the_disk_room() {
        let pool = MemoryPool::new(100);
        assert_eq!(pool.past_both_tiers(u64::MAX), None, "unlimited until told");
        pool.set_disk_room(500, 50);
        let _held = pool.reserve(120);
        assert_eq!(pool.past_both_tiers(30), None, "50 over: fits on disk");
        assert_eq!(pool.past_both_tiers(31), Some(500), "51 over: does not");
        pool.set_disk_room(500, 0);
        assert_eq!(pool.past_both_tiers(0), Some(500), "20 over and no room");
    }
}
