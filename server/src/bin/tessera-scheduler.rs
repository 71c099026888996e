//! `tessera-scheduler`: the cluster's scheduler (planner, lineage, which worker holds
//! which chunk). Prints `tessera-scheduler listening on HOST:PORT` once it listens (then,
//! with `--metrics`, `tessera-scheduler metrics on HOST:PORT`, and with `--dashboard`,
//! `tessera-scheduler dashboard on HOST:PORT`); stops on Ctrl-C or SIGTERM. The command
//! line is `tessera_server::cli::scheduler`'s.

use std::process::ExitCode;

/// Freed buffers stay with the allocator instead of going back to the kernel: glibc unmaps
/// every large buffer, and each unmap costs page faults when the next is made. (The
/// scheduler holds no chunks and has no storage actor to give freed memory back when idle:
/// it keeps mimalloc's own purge timer, not `tessera_core::keep_freed_memory`.)
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tessera_server::cli::log_to_stderr();
    ExitCode::from(tessera_server::cli::scheduler(std::env::args_os()))
}
