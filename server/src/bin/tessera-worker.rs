//! `tessera-worker --scheduler HOST:PORT`: a worker process (CPU pool, storage with its
//! memory budget and spill folder, Flight service). Runs until its scheduler goes away.
//! The command line is `tessera_server::cli::worker`'s.

use std::process::ExitCode;

/// Freed chunk buffers stay with the allocator instead of going back to the kernel: glibc
/// unmaps every large buffer (a chunk of tens of MB is one), and each unmap costs page
/// faults when the next is made.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tessera_server::cli::log_to_stderr();
    ExitCode::from(tessera_server::cli::worker(std::env::args_os()))
}
