//! The host memory tier's pool, and the word it carries between the planner and the store
//! about the disk tier below it.

use super::{Counter, MemoryPool};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The host memory tier: a budget that admits a reservation only while it fits.
///
/// It also carries the store's word on the disk tier: its budget and the room left in it
/// ([`HostPool::set_disk_room`]). With nothing running and the budget full, the planner
/// reserves past it for one more task only while the disk tier can take what is over
/// ([`MemoryPool::past_both_tiers`]); else it fails the job instead of growing the process
/// past both budgets.
///
/// And it carries the planner's word to the store: the reservation the next task waits for
/// ([`MemoryPool::set_wanted`]). The store spills ahead to make that room, where spilling
/// can, so that a task held back for memory starts as soon as the store has written what
/// it must, not only after the tasks running before it end.
#[derive(Debug)]
pub struct HostPool {
    /// The budget reservations are admitted within now: the limit, or less while the
    /// process's resident memory runs above what is reserved ([`HostPool::set_budget`]).
    budget: AtomicU64,
    /// The configured limit.
    limit: u64,
    counter: Counter,
    disk_budget: AtomicU64,
    disk_room: AtomicU64,
    wanted: AtomicU64,
    exhausted: AtomicBool,
}

impl HostPool {
    /// A pool of `budget` bytes, nothing reserved, and an unlimited disk tier below until
    /// the store says otherwise.
    pub fn new(budget: u64) -> Arc<HostPool> {
        Arc::new(HostPool {
            budget: AtomicU64::new(budget),
            limit: budget,
            counter: Counter::default(),
            disk_budget: AtomicU64::new(u64::MAX),
            disk_room: AtomicU64::new(u64::MAX),
            wanted: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
        })
    }

    /// Records the disk tier's budget and the bytes it can still take from memory (its
    /// free space, plus chunks in memory whose file is still on disk: those leave memory
    /// without writing).
    pub fn set_disk_room(&self, budget: u64, room: u64) {
        self.disk_budget.store(budget, Ordering::Release);
        self.disk_room.store(room, Ordering::Release);
    }

    /// The bytes the task the planner holds back for memory would reserve (0: none).
    pub fn wanted(&self) -> u64 {
        self.wanted.load(Ordering::Acquire)
    }

    /// The budget the pool was made with: a limit on the process's resident memory where
    /// the storage actor watches it (`tessera_actors`' resident-memory controller).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Admits reservations within `bytes` from now on (at most the limit): the resident
    /// memory controller lowers it by what the process holds beyond its reservations.
    pub fn set_budget(&self, bytes: u64) {
        self.budget.store(bytes.min(self.limit), Ordering::Release);
    }

    /// The resident memory controller's word that the process outgrew its limit past what
    /// spilling and pausing answer: the process should end (a worker's nanny restarts it).
    pub fn set_exhausted(&self) {
        self.exhausted.store(true, Ordering::Release);
    }

    /// True once [`HostPool::set_exhausted`] was called.
    pub fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::Acquire)
    }
}

impl MemoryPool for HostPool {
    fn try_grow(&self, bytes: u64) -> bool {
        self.counter.add_within(bytes, self.budget())
    }

    fn grow(&self, bytes: u64) {
        self.counter.add(bytes);
    }

    fn shrink(&self, bytes: u64) {
        self.counter.sub(bytes);
    }

    fn budget(&self) -> u64 {
        self.budget.load(Ordering::Acquire)
    }

    fn used(&self) -> u64 {
        self.counter.used()
    }

    fn peak(&self) -> u64 {
        self.counter.peak()
    }

    /// Everything reserved past the budget must go to disk eventually, so the test does not
    /// depend on how far the store has got with spilling.
    fn past_both_tiers(&self, bytes: u64) -> Option<u64> {
        let over = self
            .used()
            .saturating_add(bytes)
            .saturating_sub(self.budget());
        (over > self.disk_room.load(Ordering::Acquire))
            .then(|| self.disk_budget.load(Ordering::Acquire))
    }

    fn set_wanted(&self, bytes: u64) {
        self.wanted.store(bytes, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Reservation;

    #[test]
    fn reservations_fit_the_budget_and_return_on_drop() {
        let pool = HostPool::new(100);
        let try_reserve = |bytes| Reservation::try_new(pool.clone(), bytes);
        let a = try_reserve(60).expect("fits");
        assert!(try_reserve(41).is_none(), "would exceed the budget");
        let b = try_reserve(40).expect("fits exactly");
        assert_eq!((pool.used(), pool.over_budget()), (100, false));
        let forced = Reservation::new(pool.clone(), 30);
        assert_eq!((pool.used(), pool.over_budget()), (130, true));
        assert!(try_reserve(0).is_none(), "nothing fits while over budget");
        drop((a, forced));
        assert_eq!((pool.used(), pool.peak()), (40, 130));
        assert_eq!(b.bytes(), 40);
        drop(b);
        assert_eq!(pool.used(), 0);
        assert!(try_reserve(u64::MAX).is_none(), "no overflow");
    }

    #[test]
    fn a_lowered_budget_admits_less_and_never_passes_the_limit() {
        let pool = HostPool::new(100);
        let _held = Reservation::try_new(pool.clone(), 50).expect("fits");
        pool.set_budget(60);
        assert_eq!((pool.budget(), pool.limit()), (60, 100));
        assert!(
            Reservation::try_new(pool.clone(), 11).is_none(),
            "past the lowered budget"
        );
        assert!(Reservation::try_new(pool.clone(), 10).is_some());
        pool.set_budget(40);
        assert!(pool.over_budget(), "50 reserved, 40 allowed");
        pool.set_budget(1000);
        assert_eq!(pool.budget(), 100, "never above the limit");
    }

    #[test]
    fn past_both_tiers_counts_what_is_over_the_budget_against_the_disk_room() {
        let pool = HostPool::new(100);
        assert_eq!(pool.past_both_tiers(u64::MAX), None, "unlimited until told");
        pool.set_disk_room(500, 50);
        let _held = Reservation::new(pool.clone(), 120);
        assert_eq!(pool.past_both_tiers(30), None, "50 over: fits on disk");
        assert_eq!(pool.past_both_tiers(31), Some(500), "51 over: does not");
        pool.set_disk_room(500, 0);
        assert_eq!(pool.past_both_tiers(0), Some(500), "20 over and no room");
    }
}
