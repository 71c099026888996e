//! The command lines of `tessera-scheduler` and `tessera-worker`: parsed with `clap` and
//! run until the server stops. The two programs (`src/bin/`) are these functions, and so
//! are the commands of the Python package (`tessera-scheduler`, `python -m
//! tessera.worker`), which run them in the extension module: one build, no second copy
//! of the servers.

// The programs' bodies: their address lines, usage and fatal errors are their output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use crate::{run_worker, serve_scheduler, GpuChoice, SchedulerConfig, WebListeners, WorkerConfig};
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tessera_cluster::Secret;

/// The exit status of a run that failed (a clap usage error exits with 2, as clap does).
const FAILURE: u8 = 1;

/// The exit status of a worker that stopped because its resident memory grew by more than
/// 1.5× its memory limit: its nanny starts it again.
pub const EXHAUSTED: u8 = 3;

/// The least time between two starts of a nanny's worker.
const RESTART_GAP: Duration = Duration::from_secs(1);

/// Tessera's scheduler: workers register with it, clients run jobs on it.
#[derive(Parser, Debug)]
#[command(name = "tessera-scheduler", version)]
struct SchedulerArgs {
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
    /// File to write the address the scheduler listens at to (`HOST:PORT` and a newline),
    /// once it listens: how a launcher that does not read the scheduler's output learns the
    /// port (`--listen HOST:0`). Written whole (to a temporary file, then renamed).
    #[arg(long)]
    address_file: Option<PathBuf>,
}

/// A Tessera worker: runs chunk tasks for a scheduler and serves the chunks it holds.
#[derive(Parser, Debug)]
#[command(name = "tessera-worker", version)]
struct WorkerArgs {
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
    /// Bytes of resident memory the worker process keeps to: its chunks spill, and new
    /// tasks wait, as the process nears it (suffixes K, M, G, T, with or without "iB"/"B",
    /// powers of 1024); default: no limit.
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
    /// Run the worker as a child process and start it again whenever it ends because its
    /// resident memory grew by more than 1.5× --memory-limit (and 256 MiB), or is killed by a
    /// signal (Dask's
    /// nanny); any other exit ends this process with the child's status.
    #[arg(long)]
    nanny: bool,
    /// GPUs to run the tasks that have GPU kernels on: `all`, `auto` (all, or none where
    /// none can be used), `none`, or ordinals such as `0,1` (default: by
    /// $TESSERA_BACKEND: `cuda` all, `auto` auto, else none).
    #[arg(long)]
    gpus: Option<GpuChoice>,
    /// Fault drill: bytes every task leaks, in the first worker a nanny starts only.
    #[arg(long, hide = true, default_value_t = 0)]
    leak_per_task: usize,
}

/// Logs to stderr, filtered by `RUST_LOG` (default `info`), as the programs log; does
/// nothing where the process already has a `tracing` subscriber.
pub fn log_to_stderr() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
}

/// Runs `tessera-scheduler` with the command line `args` (the program's name first):
/// prints `tessera-scheduler listening on HOST:PORT` once it listens (then, with
/// `--metrics`, `tessera-scheduler metrics on HOST:PORT`, and with `--dashboard`,
/// `tessera-scheduler dashboard on HOST:PORT`); returns the exit status once it stops on
/// Ctrl-C, or at once for `--help`, `--version` and a usage error.
pub fn scheduler<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match SchedulerArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let secret = match Secret::from_file_or_env(args.secret_file.as_deref()) {
        Ok(s) => s,
        Err(e) => return fail("tessera-scheduler", &e),
    };
    let config = SchedulerConfig {
        heartbeat_interval: Duration::from_millis(args.heartbeat_interval_ms),
        heartbeat_ttl: Duration::from_millis(args.heartbeat_ttl_ms),
        no_worker_grace: Duration::from_secs(args.no_worker_grace_s),
        secret,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return fail("tessera-scheduler: cannot start the async runtime", &e),
    };
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        let address = listener.local_addr()?;
        if let Some(file) = &args.address_file {
            write_whole(file, &format!("{address}\n"))?;
        }
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
        Ok(()) => 0,
        Err(e) => fail("tessera-scheduler", &e),
    }
}

/// Runs `tessera-worker` with the command line `args` (the program's name first) until
/// its scheduler goes away; returns the exit status (at once for `--help`, `--version`
/// and a usage error). Freed memory is kept for reuse while the worker works
/// ([`tessera_core::keep_freed_memory`]).
pub fn worker<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match WorkerArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    if args.nanny {
        return nanny();
    }
    tessera_core::keep_freed_memory();
    let secret = match Secret::from_file_or_env(args.secret_file.as_deref()) {
        Ok(s) => s,
        Err(e) => return fail("tessera-worker", &e),
    };
    let gpus = match args.gpus {
        Some(choice) => choice,
        None => match tessera_cuda::DeviceBackend::from_env() {
            Ok(backend) => backend.map_or(GpuChoice::None, GpuChoice::from),
            Err(e) => {
                eprintln!("tessera-worker: {e}");
                return FAILURE;
            }
        },
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
        leak_per_task: args.leak_per_task,
        gpus,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return fail("tessera-worker: cannot start the async runtime", &e),
    };
    match runtime.block_on(run_worker(config)) {
        Ok(()) => 0,
        Err(e @ tessera_cluster::ClusterError::ResidentMemoryExhausted { .. }) => {
            fail("tessera-worker", &e);
            EXHAUSTED
        }
        Err(e) => fail("tessera-worker", &e),
    }
}

/// `tessera-worker --nanny`: runs this process's own command line (its `argv[0]` and
/// arguments) without `--nanny` as a child (this program, or `python -m tessera.worker`),
/// again after each exit with
/// [`EXHAUSTED`] or death by a signal (the leak drill's flag dropped), at most once per
/// [`RESTART_GAP`]; returns the child's status otherwise. The child dies with the nanny.
fn nanny() -> u8 {
    let mut argv = std::env::args_os();
    // As invoked, not `current_exe`: a virtualenv's python is a link that resolves to an
    // interpreter without the venv's packages.
    let program = argv.next().filter(|p| !p.is_empty()).map(PathBuf::from);
    let own: Vec<OsString> = argv.collect();
    if !own.iter().any(|a| a == "--nanny") {
        eprintln!("tessera-worker: --nanny must be on this process's command line");
        return FAILURE;
    }
    let program = match program.map_or_else(std::env::current_exe, Ok) {
        Ok(p) => p,
        Err(e) => return fail("tessera-worker: cannot find this program", &e),
    };
    let mut child_args: Vec<OsString> = own.into_iter().filter(|a| a != "--nanny").collect();
    let mut restarts = 0u32;
    loop {
        let started = std::time::Instant::now();
        let mut command = std::process::Command::new(&program);
        command.args(&child_args);
        die_with_parent(&mut command);
        let status = match command.status() {
            Ok(s) => s,
            Err(e) => return fail("tessera-worker: cannot start the worker", &e),
        };
        match status.code() {
            Some(code) if code != i32::from(EXHAUSTED) => {
                return u8::try_from(code).unwrap_or(FAILURE)
            }
            _ => {}
        }
        restarts += 1;
        tracing::warn!(%status, restarts, "the worker ended; the nanny starts it again");
        child_args = without_drill(child_args);
        std::thread::sleep(RESTART_GAP.saturating_sub(started.elapsed()));
    }
}

/// `args` without the leak drill's flag and its value.
fn without_drill(args: Vec<OsString>) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(args.len());
    let mut skip_value = false;
    for arg in args {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if arg == "--leak-per-task" {
            skip_value = true;
        } else if !arg.to_string_lossy().starts_with("--leak-per-task=") {
            kept.push(arg);
        }
    }
    kept
}

/// Makes `command`'s process die when this one does (Linux), so that a nanny's worker
/// never outlives it.
fn die_with_parent(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // prctl, which is async-signal-safe and takes no pointers.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Writes `text` to `file` so that no reader sees a part of it: to a temporary file beside
/// it, then renamed.
fn write_whole(file: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut partial = file.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, file)
}

/// Prints clap's usage error, help or version; its exit status (0 for help and version).
fn usage(e: &clap::Error) -> u8 {
    let _ = e.print();
    u8::try_from(e.exit_code()).unwrap_or(FAILURE)
}

/// Prints `what: error`; the failure status.
fn fail(what: &str, e: &dyn std::fmt::Display) -> u8 {
    eprintln!("{what}: {e}");
    FAILURE
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

#[cfg(test)]
mod tests {
    use super::{parse_bytes, scheduler, worker};
    use std::ffi::OsString;

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

    #[test]
    fn help_and_version_succeed_and_usage_errors_fail_with_clap_status() {
        assert_eq!(scheduler(["tessera-scheduler", "--help"]), 0);
        assert_eq!(worker(["tessera-worker", "--version"]), 0);
        // The worker needs --scheduler; an unknown flag is a usage error too.
        assert_eq!(worker(["tessera-worker"]), 2);
        assert_eq!(scheduler(["tessera-scheduler", "--no-such-flag"]), 2);
        assert_eq!(
            worker(["tessera-worker", "--scheduler", "x", "--memory-limit", "5X"]),
            2
        );
        assert_eq!(
            worker(["tessera-worker", "--scheduler", "x", "--gpus", "0,x"]),
            2
        );
    }

    #[test]
    fn a_worker_asked_for_a_gpu_it_cannot_open_fails_before_registering() {
        // No scheduler listens there: the GPU is opened first, and its failure ends the
        // worker at once.
        let args = [
            "tessera-worker",
            "--scheduler",
            "127.0.0.1:1",
            "--gpus",
            "4096",
        ];
        assert_eq!(worker(args), 1);
    }

    #[test]
    fn the_address_file_holds_the_listening_address_and_a_bad_one_fails() {
        let dir = std::env::temp_dir().join(format!("tessera-cli-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A folder that does not exist: the write fails, and so does the scheduler, at once.
        let missing = dir.join("no-such-folder").join("address");
        let args = [
            "tessera-scheduler",
            "--listen",
            "127.0.0.1:0",
            "--address-file",
            missing.to_str().unwrap(),
        ];
        assert_eq!(scheduler(args), 1);
        // (The file a running scheduler writes is checked by tests/programs.rs.)
        let file = dir.join("address");
        super::write_whole(&file, "127.0.0.1:1234\n").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "127.0.0.1:1234\n");
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the address file: {leftovers:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_nanny_drops_the_leak_drill_from_a_restarted_worker() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            super::without_drill(args(&[
                "--scheduler",
                "x",
                "--leak-per-task",
                "9",
                "--nthreads",
                "1"
            ])),
            args(&["--scheduler", "x", "--nthreads", "1"])
        );
        assert_eq!(
            super::without_drill(args(&["--leak-per-task=9", "--name", "w"])),
            args(&["--name", "w"])
        );
    }

    #[test]
    fn a_secret_file_that_cannot_be_read_fails_before_listening() {
        let args = [
            "tessera-scheduler",
            "--listen",
            "127.0.0.1:0",
            "--secret-file",
            "/nonexistent/tessera-secret",
        ];
        assert_eq!(scheduler(args), 1);
    }
}
