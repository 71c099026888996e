//! Memory accounting by reservation (DataFusion's `MemoryPool` / `MemoryReservation`
//! pattern): a [`MemoryPool`] holds a tier's byte budget and decides which reservations it
//! admits; each [`Reservation`] gives its bytes back when dropped. The pools:
//!
//! - [`HostPool`], the host memory tier. The planner reserves a task's estimated output
//!   and working memory before it runs (given back when it ends), then the chunk it
//!   produced from then until the store takes that reservation over (so a chunk queued for
//!   a busy storage thread still counts), and the store reserves every chunk it keeps in
//!   memory. It also carries word between the planner and the store about the tier below
//!   (see [`HostPool`]).
//! - [`UnboundedPool`], for a planner whose tasks run elsewhere (the cluster's scheduler:
//!   each worker holds its own host pool): it admits everything and only counts.
//! - A GPU's device pool (`tessera-cuda`): the device memory of the tasks running on it.

mod host;

pub use host::HostPool;

use crate::job::OutOfMemory;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_kernels::ChunkOp;

/// A tier's byte budget and what is reserved against it. Pools differ in which
/// reservations they admit ([`MemoryPool::try_grow`]); reserving is done through
/// [`Reservation::try_new`] and [`Reservation::new`], and the reservation gives the bytes
/// back when dropped.
pub trait MemoryPool: Debug + Send + Sync {
    /// Adds `bytes` to what is reserved if this pool admits them; false, adding nothing,
    /// if not.
    fn try_grow(&self, bytes: u64) -> bool;

    /// Adds `bytes` whether or not they are admitted: for data that exists already (a
    /// chunk handed to the store) and for the one task that must run for a job to progress.
    fn grow(&self, bytes: u64);

    /// Gives back `bytes` added before.
    fn shrink(&self, bytes: u64);

    /// The budget in bytes.
    fn budget(&self) -> u64;

    /// Bytes reserved now.
    fn used(&self) -> u64;

    /// The most bytes ever reserved at once.
    fn peak(&self) -> u64;

    /// True while more is reserved than the budget allows.
    fn over_budget(&self) -> bool {
        self.used() > self.budget()
    }

    /// For a pool with a tier below it to spill to: that tier's budget when reserving
    /// `bytes` more would put more past this pool's budget than the tier below has room
    /// for (both tiers full), else `None`. A pool with no such tier never fills both.
    fn past_both_tiers(&self, _bytes: u64) -> Option<u64> {
        None
    }

    /// For a pool with a tier below it: records the bytes the task held back for memory
    /// would reserve (0: none is), so that the tier's owner spills ahead to make that room.
    /// Other pools ignore it.
    fn set_wanted(&self, _bytes: u64) {}
}

/// Bytes reserved in a [`MemoryPool`], given back on drop.
#[derive(Debug)]
pub struct Reservation {
    pool: Arc<dyn MemoryPool>,
    bytes: u64,
}

impl Reservation {
    /// Reserves `bytes` in `pool` if it admits them (a reservation only exists for bytes
    /// added: dropping one gives them back).
    pub fn try_new(pool: Arc<dyn MemoryPool>, bytes: u64) -> Option<Reservation> {
        if pool.try_grow(bytes) {
            Some(Reservation { pool, bytes })
        } else {
            None
        }
    }

    /// Reserves `bytes` in `pool` whether or not they are admitted ([`MemoryPool::grow`]).
    pub fn new(pool: Arc<dyn MemoryPool>, bytes: u64) -> Reservation {
        pool.grow(bytes);
        Reservation { pool, bytes }
    }

    /// Reserves `bytes` in `pool` past its budget, for the one task that must run for its
    /// job to progress (nothing else is running and spilling has done what it can), unless
    /// what would be over the budget could not go to the tier below either
    /// ([`MemoryPool::past_both_tiers`]): then the [`OutOfMemory`] its job fails with.
    pub fn past_budget(pool: Arc<dyn MemoryPool>, bytes: u64) -> Result<Reservation, OutOfMemory> {
        match pool.past_both_tiers(bytes) {
            None => Ok(Reservation::new(pool, bytes)),
            Some(disk_budget) => Err(OutOfMemory {
                host_budget: pool.budget(),
                disk_budget,
                reserved: pool.used(),
                needed: bytes,
            }),
        }
    }

    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.shrink(self.bytes);
    }
}

/// Bytes reserved now and at most, shared by the pools' bookkeeping.
#[derive(Debug, Default)]
struct Counter {
    used: AtomicU64,
    peak: AtomicU64,
}

impl Counter {
    /// Adds `bytes` if what is used stays within `limit`.
    fn add_within(&self, bytes: u64, limit: u64) -> bool {
        let added = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&after| after <= limit)
            });
        match added {
            Ok(before) => {
                self.peak.fetch_max(before + bytes, Ordering::AcqRel);
                true
            }
            Err(_) => false,
        }
    }

    fn add(&self, bytes: u64) {
        let before = self.used.fetch_add(bytes, Ordering::AcqRel);
        self.peak
            .fetch_max(before.saturating_add(bytes), Ordering::AcqRel);
    }

    fn sub(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }
}

/// A pool that admits every reservation and only counts them: for a planner whose tasks
/// run where their own pools hold memory (the cluster's scheduler).
#[derive(Debug, Default)]
pub struct UnboundedPool {
    counter: Counter,
}

impl UnboundedPool {
    /// A pool with nothing reserved.
    pub fn new() -> Arc<UnboundedPool> {
        Arc::default()
    }
}

impl MemoryPool for UnboundedPool {
    fn try_grow(&self, bytes: u64) -> bool {
        self.counter.add_within(bytes, u64::MAX)
    }

    fn grow(&self, bytes: u64) {
        self.counter.add(bytes);
    }

    fn shrink(&self, bytes: u64) {
        self.counter.sub(bytes);
    }

    fn budget(&self) -> u64 {
        u64::MAX
    }

    fn used(&self) -> u64 {
        self.counter.used()
    }

    fn peak(&self) -> u64 {
        self.counter.peak()
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
    fn the_unbounded_pool_admits_everything_and_counts_it() {
        let pool = UnboundedPool::new();
        let a = Reservation::try_new(pool.clone(), u64::MAX - 1).expect("admitted");
        let b = Reservation::new(pool.clone(), 1);
        assert_eq!((pool.used(), pool.over_budget()), (u64::MAX, false));
        assert!(
            Reservation::try_new(pool.clone(), 1).is_none(),
            "no overflow"
        );
        drop((a, b));
        assert_eq!((pool.used(), pool.peak()), (0, u64::MAX));
        assert_eq!(pool.past_both_tiers(u64::MAX), None, "no tier below");
    }
}
