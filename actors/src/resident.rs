//! Holds the process's resident memory to the memory budget, as Dask's worker memory
//! manager does, not only the chunk reservations the planner and the store count.
//!
//! Reservations count the chunks tasks make and hold; the process holds more: buffers an
//! allocator keeps after they are freed, a task's scratch memory, what the program around
//! the session keeps. Issue 13 measured peak RSS at 1.8–2.5× the budget in a spilling
//! groupby with reservations within 4% of it. So the storage actor reads the resident size
//! (`/proc/self/statm`) every [`CHECK_EVERY`] and sets the reservations' budget to what the
//! limit leaves once the rest of the process is counted:
//!
//! - **budget** = [`TARGET`] × limit − *gap*, where *gap* is resident minus reserved bytes,
//!   remembered at its highest and let down slowly ([`GAP_DECAY`] of the limit per check),
//!   never under [`FLOOR`] × limit. A lower budget makes the store spill
//!   (`ChunkStore::make_room`) and the planner hold tasks back, as reservations would.
//! - **release**: above [`RELEASE_ABOVE`] × limit, the allocator is first asked to give freed
//!   memory back (at most every [`RELEASE_GAP`]), so that memory kept for reuse is not
//!   mistaken for memory in use.
//! - **pause**: above [`PAUSE`] × limit, no new reservation is admitted (the budget drops to
//!   what is reserved) until the resident size is under it again; a task still starts when
//!   nothing runs, as under any budget.
//!
//! The fractions were chosen on TPC-H SF10's five heaviest queries (5, 9, 17, 18, 21) under
//! a 2 GB budget: aiming at 0.9 of the limit (pausing at 1.0) held peak RSS to 1.04× the
//! budget at +32% time, 1.0 (pausing at 1.1) to 1.13× at +11%, 1.05 (1.15) to 1.21× at +8%;
//! without the control, 1.55×.
//!
//! - **terminate**: once the process has grown by more than [`TERMINATE`] × limit (and at
//!   least [`TERMINATE_AT_LEAST`]) since the control started (its own code and start-up
//!   not counted, so a limit below the program's size never ends it), it has outgrown
//!   what spilling and pausing can answer (a leak): the pool is marked exhausted
//!   (`HostPool::exhausted`), and a worker ends with its own exit status so that its nanny
//!   (`tessera-worker --nanny`) starts it again, as Dask's nanny does.
//!
//! A limit of `u64::MAX` (no budget) turns the control off; so does a platform without
//! `/proc/self/statm`.

use std::time::{Duration, Instant};
pub(crate) use tessera_core::resident_bytes;

/// How often the resident size is read.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(100);

/// The share of the limit the resident size is aimed at.
pub(crate) const TARGET: f64 = 1.0;

/// The share of the limit above which freed memory goes back before the size is judged.
pub(crate) const RELEASE_ABOVE: f64 = 0.9;

/// The share of the limit above which no new reservation is admitted.
pub(crate) const PAUSE: f64 = 1.1;

/// The share of the limit by which the process may grow before it should end (and be
/// started again).
pub(crate) const TERMINATE: f64 = 1.5;

/// The least growth that ends a process, whatever its limit: a small limit (a test's, a
/// drill's) is dwarfed by what the program's runtime adds as it starts serving.
pub(crate) const TERMINATE_AT_LEAST: u64 = 256 << 20;

/// The least share of the limit left to reservations, however large the gap.
pub(crate) const FLOOR: f64 = 0.125;

/// The share of the limit by which the remembered gap may fall at each check.
pub(crate) const GAP_DECAY: f64 = 0.02;

/// The least time between two releases of freed memory the control asks for.
pub(crate) const RELEASE_GAP: Duration = Duration::from_secs(1);

/// The control's state: the remembered gap and the last release.
#[derive(Debug)]
pub(crate) struct ResidentControl {
    limit: u64,
    /// The resident size when the control started (the program itself): growth past the
    /// limit is what ends a process, so a limit below a program's own size never does.
    baseline: u64,
    gap: u64,
    last_release: Option<Instant>,
}

/// What one check decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The reservations' budget from now on.
    pub(crate) budget: u64,
    /// True when above [`PAUSE`] of the limit: nothing new is admitted.
    pub(crate) paused: bool,
    /// True once the process grew by more than [`TERMINATE`] × the limit (and at least
    /// [`TERMINATE_AT_LEAST`]) since the control started: the process should end.
    pub(crate) terminate: bool,
}

impl ResidentControl {
    /// Control for a budget of `limit` bytes; `None` when there is nothing to control (no
    /// limit, or no way to read the resident size here).
    pub(crate) fn new(limit: u64) -> Option<ResidentControl> {
        let baseline = resident_bytes()?;
        (limit < u64::MAX).then_some(ResidentControl {
            limit,
            baseline,
            gap: 0,
            last_release: None,
        })
    }

    /// True when freed memory should go back before the resident size is judged: above
    /// [`RELEASE_ABOVE`] of the limit, and not released within [`RELEASE_GAP`]. Records the
    /// release.
    pub(crate) fn release_first(&mut self, resident: u64) -> bool {
        let due = self
            .last_release
            .is_none_or(|at| at.elapsed() >= RELEASE_GAP);
        if resident as f64 > RELEASE_ABOVE * self.limit as f64 && due {
            self.last_release = Some(Instant::now());
            return true;
        }
        false
    }

    /// The budget for a process `resident` bytes large with `reserved` bytes reserved.
    pub(crate) fn decide(&mut self, resident: u64, reserved: u64) -> Decision {
        let limit = self.limit as f64;
        let gap = resident.saturating_sub(reserved);
        let decayed = self.gap.saturating_sub((GAP_DECAY * limit) as u64);
        self.gap = gap.max(decayed);
        let floor = (FLOOR * limit) as u64;
        let aimed = ((TARGET * limit) as u64).saturating_sub(self.gap);
        let budget = aimed.clamp(floor, self.limit);
        let paused = resident as f64 > PAUSE * limit;
        Decision {
            budget: if paused {
                budget.min(reserved.max(floor))
            } else {
                budget
            },
            paused,
            terminate: resident.saturating_sub(self.baseline)
                > ((TERMINATE * limit) as u64).max(TERMINATE_AT_LEAST),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn control(limit: u64) -> ResidentControl {
        ResidentControl {
            limit,
            baseline: 0,
            gap: 0,
            last_release: None,
        }
    }

    #[test]
    fn the_budget_is_the_target_less_what_the_process_holds_beyond_reservations() {
        let mut c = control(1000 * MB);
        // 300 MB resident, 200 MB reserved: a 100 MB gap.
        let d = c.decide(300 * MB, 200 * MB);
        assert_eq!(
            d,
            Decision {
                budget: 900 * MB,
                paused: false,
                terminate: false
            }
        );
        // The gap grows to 500 MB: the budget follows at once.
        assert_eq!(c.decide(800 * MB, 300 * MB).budget, 500 * MB);
        // It shrinks back to 100 MB: the remembered gap falls 20 MB per check.
        assert_eq!(c.decide(400 * MB, 300 * MB).budget, 520 * MB);
        assert_eq!(c.decide(400 * MB, 300 * MB).budget, 540 * MB);
        for _ in 0..30 {
            c.decide(400 * MB, 300 * MB);
        }
        assert_eq!(c.decide(400 * MB, 300 * MB).budget, 900 * MB);
    }

    #[test]
    fn the_budget_keeps_a_floor_and_pauses_above_eleven_tenths_of_the_limit() {
        let mut c = control(1000 * MB);
        // A process holding 950 MB beyond 10 MB of reservations: the floor, 125 MB.
        let d = c.decide(960 * MB, 10 * MB);
        assert_eq!(
            d,
            Decision {
                budget: 125 * MB,
                paused: false,
                terminate: false
            }
        );
        // Above 1.1 × the limit: nothing new fits (the budget is what is reserved, or the
        // floor).
        let d = c.decide(1200 * MB, 600 * MB);
        assert_eq!(
            d,
            Decision {
                budget: 125 * MB,
                paused: true,
                terminate: false
            }
        );
        let mut c = control(1000 * MB);
        assert!(
            !c.decide(1100 * MB, 1000 * MB).paused,
            "at 1.1 × the limit, not above"
        );
        let d = c.decide(1101 * MB, 1000 * MB);
        assert!(d.paused && d.budget <= 1000 * MB, "{d:?}");
        assert!(
            !c.decide(1500 * MB, 1000 * MB).terminate,
            "grown 1.5 ×, not more"
        );
        assert!(c.decide(1501 * MB, 1000 * MB).terminate);
        // Growth counts, not the program's own size, and at least 256 MiB of it: a small
        // limit never ends a process that only started serving.
        let mut tiny = ResidentControl {
            baseline: 30 * MB,
            ..control(MB / 4)
        };
        assert!(!tiny.decide(30 * MB + 256 * MB, 0).terminate);
        assert!(tiny.decide(31 * MB + 256 * MB, 0).terminate);
    }

    #[test]
    fn release_is_asked_above_nine_tenths_of_the_limit_at_most_once_a_gap() {
        let mut c = control(1000 * MB);
        assert!(!c.release_first(900 * MB), "at 0.9 × the limit, not above");
        assert!(c.release_first(901 * MB));
        assert!(!c.release_first(990 * MB), "within the release gap");
        c.last_release = Instant::now().checked_sub(RELEASE_GAP);
        assert!(c.release_first(990 * MB));
    }

    #[test]
    fn no_control_without_a_limit_and_the_resident_size_reads() {
        assert!(ResidentControl::new(u64::MAX).is_none());
        #[cfg(target_os = "linux")]
        {
            assert!(ResidentControl::new(1 << 30).is_some());
            let held = vec![1u8; 64 << 20];
            let resident = resident_bytes().expect("statm");
            assert!(resident >= 64 << 20, "{resident} bytes with 64 MiB touched");
            drop(held);
        }
    }
}
