//! The setting of mimalloc that Tessera's programs (the benchmark, the examples, the
//! worker and the Python module) make, having installed it as their global allocator, and
//! the call that gives what it keeps back.
//!
//! mimalloc (version 3, which `libmimalloc-sys` builds) returns free memory to the
//! operating system on a timer: an arena's first free after a purge starts the delay (1 s
//! by default), and when it runs out *every* free page of the arena goes back, however
//! recently freed. Chunk tasks free buffers of megabytes that later tasks allocate again,
//! and each returned page comes back zeroed by the kernel (transparent huge pages: 2 MiB
//! at a time): at a 1 s delay `perf` put up to 41% of a TPC-H SF10 query's time in the
//! kernel's page clearing (Q5), at 10 s still 14% over the 22 queries. So mimalloc is told
//! to keep freed memory ([`keep_freed_memory`]), and the storage actor, which sees whether
//! the process is working, gives it back ([`release_freed_memory`]) once it has been idle
//! for [`KEEP_FREED_MS`] and as it spills under a memory budget.

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_t` (the same in mimalloc 2
/// and 3; `libmimalloc-sys` names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Milliseconds that a process that stopped working keeps the memory it freed before
/// storage gives it back to the operating system (jemalloc's default decay, which Polars
/// ships).
pub const KEEP_FREED_MS: i32 = 10_000;

/// mimalloc's own purge delay under [`keep_freed_memory`]: an hour, so that it purges
/// nothing while a process works; [`release_freed_memory`] purges before. (Not "never":
/// at a negative delay mimalloc no longer marks freed memory, and a forced purge finds
/// nothing to return.)
const HOLD_MS: i32 = 3_600_000;

/// Makes mimalloc keep the memory it freed until [`release_freed_memory`] (or an hour).
/// For a program that installs mimalloc as its global allocator, at its start; elsewhere
/// it changes nothing the program uses.
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, HOLD_MS.into()) }
}

/// Returns the free memory mimalloc holds in its arenas to the operating system now.
/// Harmless where mimalloc is not the global allocator (its arenas are then empty).
pub fn release_freed_memory() {
    // SAFETY: mi_collect takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// The process's resident bytes (`/proc/self/statm`'s second field, in pages); `None`
/// where it cannot be read.
pub fn resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf takes no pointers and may be called from any thread.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(page).ok().map(|p| pages * p)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn resident() -> usize {
        resident_bytes()
            .and_then(|b| usize::try_from(b).ok())
            .expect("statm")
    }

    /// One test: the purge delay is process-wide.
    #[cfg(target_os = "linux")]
    #[test]
    fn freed_memory_is_held_until_released() {
        // mimalloc's default purge delay is 1,000 ms, a default no option beside it has: a
        // wrong index fails here.
        // SAFETY: mi_option_get takes no pointers.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(before, 1000);
        }
        keep_freed_memory();
        // SAFETY: as above.
        assert_eq!(
            unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) },
            HOLD_MS.into()
        );
        const BYTES: usize = 256 << 20;
        let start = resident();
        // SAFETY: a block of BYTES bytes, written whole, then freed once.
        unsafe {
            let p = libmimalloc_sys::mi_malloc(BYTES).cast::<u8>();
            assert!(!p.is_null());
            std::ptr::write_bytes(p, 1, BYTES);
            libmimalloc_sys::mi_free(p.cast());
        }
        let held = resident();
        assert!(
            held >= start + BYTES / 2,
            "{start} resident bytes before, {held} freed and held"
        );
        release_freed_memory();
        let released = resident();
        assert!(
            held.saturating_sub(released) >= BYTES / 2,
            "{held} resident bytes held, {released} after the release"
        );
    }
}
