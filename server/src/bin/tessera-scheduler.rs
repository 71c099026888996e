//! `tessera-scheduler`: the cluster's scheduler (planner, lineage, which worker holds
//! which chunk). Prints `tessera-scheduler listening on HOST:PORT` once it listens (then,
//! with `--metrics`, `tessera-scheduler metrics on HOST:PORT`, and with `--dashboard`,
//! `tessera-scheduler dashboard on HOST:PORT`); stops on Ctrl-C or SIGTERM.

// A program, not the library: its address line and fatal errors are its output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use clap::Parser;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tessera_cluster::Secret;
use tessera_server::{serve_scheduler, SchedulerConfig, WebListeners};

/// Freed buffers stay with the allocator instead of going back to the kernel: glibc unmaps
/// every large buffer, and each unmap costs page faults when the next is made. (The
/// scheduler holds no chunks and has no storage actor to give freed memory back when idle:
/// it keeps mimalloc's own purge timer, not `tessera_core::keep_freed_memory`.)
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Tessera's scheduler: workers register with it, clients run jobs on it.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8786")]
    listen: SocketAddr,
    /// Milliseconds between a worker's heartbeats.
    #[arg(long, default_value_t = 500)]
    heartbeat_interval_ms: u64,
    /// Milliseconds of silence after which a worker is lost.
    #[arg(long, default_value_t = 10_000)]
    heartbeat_ttl_ms: u64,
    /// Seconds running jobs wait for a worker when none is registered.
    #[arg(long, default_value_t = 30)]
    no_worker_grace_s: u64,
    /// File whose first line is the cluster's shared secret (default: $TESSERA_SECRET).
    /// Needed to listen on any address other than loopback.
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// Address to serve Prometheus metrics at, as `GET /metrics` (port 0: any free port).
    /// Off loopback only with the shared secret, which scrapers send as a bearer token.
    #[arg(long)]
    metrics: Option<SocketAddr>,
    /// Address to serve the live dashboard at (`http://HOST:PORT/`: running jobs, workers,
    /// totals, the last jobs' report panels; `/metrics` too). Off loopback only with the
    /// shared secret, which the page's URL then carries as `?token=SECRET`.
    #[arg(long)]
    dashboard: Option<SocketAddr>,
}

fn main() -> ExitCode {
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
            eprintln!("tessera-scheduler: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(args.heartbeat_interval_ms),
        heartbeat_ttl: Duration::from_millis(args.heartbeat_ttl_ms),
        no_worker_grace: Duration::from_secs(args.no_worker_grace_s),
        secret,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tessera-scheduler: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let address = listener.local_addr()?;
        println!("tessera-scheduler listening on {address}");
        let mut web = WebListeners::default();
        if let Some(at) = args.metrics {
            let metrics = tokio::net::TcpListener::bind(at).await?;
            println!("tessera-scheduler metrics on {}", metrics.local_addr()?);
            web.metrics = Some(metrics);
        }
        if let Some(at) = args.dashboard {
            let dashboard = std::net::TcpListener::bind(at)?;
            println!("tessera-scheduler dashboard on {}", dashboard.local_addr()?);
            web.dashboard = Some(dashboard);
        }
        std::io::stdout().flush()?;
        serve_scheduler(listener, web, config, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(std::io::Error::other)
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera-scheduler: {e}");
            ExitCode::FAILURE
        }
    }
}
