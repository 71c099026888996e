//! Gives freed memory back to the operating system: as spilling frees it, and once the
//! store has been idle for a while.
//!
//! A spilled chunk's buffers were allocated by a pool thread and are freed by the storage
//! actor's. glibc's allocator keeps such freed blocks in the allocating thread's arena,
//! where they count in the process's resident memory until that arena reuses them: measured
//! on `tessera-bench groupby_keyed --size 1e7 --memory-budget 200M` with the system
//! allocator, peak RSS was 640–740 MB against a peak of 380 MB of live heap. After every
//! [`TRIM_EVERY`] bytes spilled, the store asks the allocator to return its free pages
//! (`malloc_trim`), and at most every [`SPILL_RELEASE_GAP`] mimalloc too
//! ([`tessera_core::release_freed_memory`], for the programs that install it, which keep
//! freed memory while they work: see `tessera_core::alloc`); each release makes the kernel
//! zero the pages again as they are reused (after every 64 MiB: TPC-H SF10 under a 2 GB
//! budget 15% slower). Both happen once no chunk has been stored or released for
//! [`tessera_core::KEEP_FREED_MS`]: a process that stopped working gives its memory back.

use std::time::{Duration, Instant};

/// Spilled bytes between two trims (each walks every arena of the allocator).
pub(crate) const TRIM_EVERY: u64 = 64 << 20;

/// The least time between two of mimalloc's releases as the store spills.
pub(crate) const SPILL_RELEASE_GAP: Duration = Duration::from_secs(1);

/// How long the store rests before freed memory goes back to the system.
pub(crate) const IDLE_RELEASE: Duration = Duration::from_millis(tessera_core::KEEP_FREED_MS as u64);

/// Counts the bytes spilling freed and trims the allocator after every [`TRIM_EVERY`]
/// (mimalloc at most every [`SPILL_RELEASE_GAP`]); trims once after each stretch of use
/// that the store then rests from.
#[derive(Debug, Default)]
pub(crate) struct Trimmer {
    freed: u64,
    /// When mimalloc last gave memory back.
    last_release: Option<Instant>,
    /// When the store last stored or released a chunk, if memory has not gone back since.
    used: Option<Instant>,
}

impl Trimmer {
    /// Notes `bytes` freed; true when this call trimmed.
    pub(crate) fn freed(&mut self, bytes: u64) -> bool {
        self.freed = self.freed.saturating_add(bytes);
        if self.freed < TRIM_EVERY {
            return false;
        }
        self.freed = 0;
        trim_glibc();
        if self
            .last_release
            .is_none_or(|at| at.elapsed() >= SPILL_RELEASE_GAP)
        {
            self.release();
        }
        true
    }

    /// Notes that the store is in use (a chunk stored or released).
    pub(crate) fn used(&mut self) {
        self.used = Some(Instant::now());
    }

    /// Trims if the store has rested for `idle` since it was last used and nothing went
    /// back since; true when this call trimmed.
    pub(crate) fn release_if_idle(&mut self, idle: Duration) -> bool {
        if self.used.is_none_or(|at| at.elapsed() < idle) {
            return false;
        }
        self.used = None;
        trim_glibc();
        self.release();
        true
    }

    /// Trims glibc and releases mimalloc's freed memory now.
    pub(crate) fn release_now(&mut self) {
        trim_glibc();
        self.release();
    }

    fn release(&mut self) {
        tessera_core::release_freed_memory();
        self.last_release = Some(Instant::now());
    }
}

fn trim_glibc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and may be called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_per_threshold_of_freed_bytes() {
        let mut t = Trimmer::default();
        assert!(!t.freed(TRIM_EVERY - 1));
        assert!(t.freed(1), "the threshold is reached");
        assert!(!t.freed(TRIM_EVERY / 2), "counting starts again");
        assert!(t.freed(u64::MAX), "no overflow");
    }

    #[test]
    fn trims_once_per_rest_after_use() {
        let mut t = Trimmer::default();
        assert!(!t.release_if_idle(Duration::ZERO), "nothing used yet");
        t.used();
        assert!(
            !t.release_if_idle(Duration::from_secs(3600)),
            "not rested long enough"
        );
        assert!(t.release_if_idle(Duration::ZERO), "rested");
        assert!(!t.release_if_idle(Duration::ZERO), "already given back");
        t.used();
        assert!(t.release_if_idle(Duration::ZERO), "used again, then rested");
    }
}
