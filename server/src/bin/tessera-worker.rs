//! `tessera-worker --scheduler HOST:PORT`: a worker process (CPU pool, storage with its
//! memory budget and spill folder, Flight service). Runs until its scheduler goes away.

// A program, not the library: its address line and fatal errors are its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tessera_cluster::Secret;
use tessera_server::{run_worker, WorkerConfig};

/// Freed chunk buffers stay with the allocator instead of going back to the kernel: glibc
/// unmaps every large buffer (a chunk of tens of MB is one), and each unmap costs page
/// faults when the next is made.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A Tessera worker: runs chunk tasks for a scheduler and serves the chunks it holds.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The scheduler's address, HOST:PORT.
    #[arg(long)]
    scheduler: String,
    /// Address of this worker's Flight service (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// HOST:PORT that peers and clients reach this worker's Flight service at (default:
    /// the listen address, or this host's name when listening on every interface).
    #[arg(long)]
    advertise: Option<String>,
    /// Threads of the CPU pool (default: every core).
    #[arg(long)]
    nthreads: Option<usize>,
    /// Bytes of chunk data held in memory before spilling (suffixes K, M, G, T, with or
    /// without "iB"/"B", powers of 1024); default: no limit.
    #[arg(long, value_parser = parse_bytes)]
    memory_limit: Option<u64>,
    /// Bytes that may be spilled to disk (same suffixes); default: no limit.
    #[arg(long, value_parser = parse_bytes)]
    disk_limit: Option<u64>,
    /// Folder for the spill folder (default: the system's temporary folder).
    #[arg(long)]
    spill_dir: Option<PathBuf>,
    /// Name in logs and errors (default: worker-PID).
    #[arg(long)]
    name: Option<String>,
    /// File whose first line is the cluster's shared secret (default: $TESSERA_SECRET).
    /// Needed to listen on any address other than loopback.
    #[arg(long)]
    secret_file: Option<PathBuf>,
}

/// `512`, `64K`, `2GiB`, `1.5G` as bytes.
fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 512M, 2GiB)"))?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit = unit.trim_end_matches("IB").trim_end_matches('B');
    let scale: u64 = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    Ok((number * scale as f64) as u64)
}

fn main() -> ExitCode {
    tessera_core::keep_freed_memory();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let secret = match Secret::from_file_or_env(args.secret_file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tessera-worker: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = WorkerConfig {
        scheduler: args.scheduler,
        listen: args.listen,
        advertise: args.advertise,
        name: args
            .name
            .unwrap_or_else(|| format!("worker-{}", std::process::id())),
        nthreads: args
            .nthreads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        memory_limit: args.memory_limit.unwrap_or(u64::MAX),
        disk_budget: args.disk_limit.unwrap_or(u64::MAX),
        spill_dir: args.spill_dir.unwrap_or_else(std::env::temp_dir),
        connect_timeout: Duration::from_secs(10),
        secret,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tessera-worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_worker(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("512"), Ok(512));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes("3 MB"), Ok(3 << 20));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5X").is_err());
    }
}
