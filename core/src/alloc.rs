//! The setting of mimalloc that Tessera's programs (the benchmark, the examples, the
//! scheduler, the worker and the Python module) make, having installed it as their global
//! allocator.
//!
//! mimalloc (version 3, which `libmimalloc-sys` builds) returns memory that stays free for
//! a second to the operating system. Chunk tasks free buffers of megabytes that later tasks
//! allocate again, and each returned page comes back zeroed by the kernel: on TPC-H at SF10
//! `perf` put up to 41% of the time in the kernel's page clearing (Q5). Kept for 10 s —
//! jemalloc's default decay, which Polars ships — more of the pages are reused (the 22
//! queries' geometric mean 7% lower); memory a process stops using still goes back to the
//! system 10 s later.

/// mimalloc's `mi_option_purge_delay`: its place in `mi_option_t` (the same in mimalloc 2
/// and 3; `libmimalloc-sys` names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Milliseconds that memory mimalloc freed stays with it (see [`keep_freed_memory`]).
pub const KEEP_FREED_MS: i32 = 10_000;

/// Makes mimalloc keep freed memory for [`KEEP_FREED_MS`] before returning it to the
/// operating system (its default: 1 s). For a program that installs mimalloc as its
/// global allocator, at its start; elsewhere it changes nothing the program uses.
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set takes no pointers and may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, KEEP_FREED_MS.into()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // mimalloc's default purge delay is 1,000 ms, a default no option beside it has: a
        // wrong index fails here.
        // SAFETY: mi_option_get takes no pointers.
        let before = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(before, 1000);
        }
        keep_freed_memory();
        // SAFETY: as above.
        let after = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(after, KEEP_FREED_MS.into());
    }
}
