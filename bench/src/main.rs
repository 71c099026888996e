//! `tessera-bench`: the peers' array and dataframe workloads (`shared/peers/README.md`) on Tessera, one
//! JSON result line per timed run on stdout, in the peers' format, so that
//! `summarize.py peers.jsonl tessera.jsonl` lines them up.
//!
//! ```text
//! tessera-bench pi --engine tessera --size 1e9 --repeat 3 >> tessera.jsonl
//! tessera-bench slice_sum --size 20000 --chunk 5000 --threads 1
//! tessera-bench svd_tall --size 2000000x20 --repeat 3
//! tessera-bench svd_compressed --size 100000x5000 --chunk 10000
//! tessera-bench groupby_q1 --size 1e7 --repeat 3 --data /tmp/peers-data
//! tessera-bench tpch --sf 1 --repeat 3 --data /tmp/peers-data
//! tessera-bench tpch --sf 1 --repeat 3 --sql --engine tessera-sql
//! tessera-bench tpch --sf 10 --query 9 --query 21 --memory-budget 2G
//! tessera-bench learn_kmeans --size 1e7x16 --repeat 3
//! tessera-bench learn_kmeans --size 1e8x16 --memory-budget 4G --engine tessera-spill
//! tessera-bench groupby_keyed --size 1e7 --repeat 3 --data /tmp --stats
//! tessera-bench groupby_keyed --size 1e7 --engine tessera-spill --memory-budget 5G --spill-dir /tmp
//! tessera-bench pi --size 1e8 --engine tessera-kill --kill-device-at 28 --stats
//! tessera-bench pi --size 1e10 --engine tessera-cuda --backend cuda --repeat 3
//! ```
//!
//! Dataframe workloads (`read_csv`, `groupby_q1`…`groupby_q5`, `ratings_groupby`,
//! `join_g1_y`, `join_self`, `reduce_mean`, `groupby_mean`) read the files that the peers'
//! `gen_data.py` writes (`--data`, default `$PEERS_DATA` or `/tmp/peers-data`);
//! `groupby_keyed`, Tessera's own, writes its CSV there first if it is missing (no Python
//! needed). See `frames.rs` for what is timed. The learn workloads (`learn_kmeans`,
//! `learn_pca`, `learn_logistic`, `learn_knn`) generate the peers' blobs before timing and
//! time the fit (`learn.rs`).
//!
//! The timed region is building the expression plus executing it (random generation
//! included, as in the peers; the SVDs' input is generated and persisted before the first
//! run, as the peers do); the session is started before the first run and kept, so run
//! 0 includes warm-up as a peer's run 0 does. `RUST_LOG=tessera=info` logs each job's chunk
//! count and wall time on stderr.
//!
//! Memory tiers and recovery: `--memory-budget` and `--spill-dir` set the session's host
//! memory budget and where it spills; `--kill-device-at N` kills the CPU device actor at
//! the Nth kernel execution of every timed run (the fault rule is re-armed before each
//! run, and a run in which it did not fire exactly once is an error); `--stats` prints each
//! run's job statistics (spilled bytes, restarts, peak reserved memory…) as one JSON line
//! on stderr. Label such runs with `--engine tessera-spill`, `tessera-kill`…

mod frames;
mod killer;
mod learn;
mod record;
mod tpch;
mod workloads;

/// Freed chunk buffers stay with the allocator instead of going back to the kernel: glibc
/// unmaps every large buffer, and each unmap costs page faults and TLB shootdowns.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use frames::FrameWorkload;
use killer::WorkerKiller;
use learn::LearnWorkload;
use record::{rss_mb, Record};
use serde_json::json;
use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tessera::{FaultInjector, FaultKind, LocalCluster, Progress, Session};
use tessera_examples::{parse_bytes, parse_count, BackendArgs, SightArgs};
use workloads::{parse_size, Size, Workload};

/// Run a peers' array workload on Tessera and print one JSON result line per run.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The workload: pi, pi_rng, sincos, slice_sum, svd_tall, svd_compressed, read_csv,
    /// groupby_q1..groupby_q5, ratings_groupby, join_g1_y, join_self, reduce_mean,
    /// groupby_mean, groupby_keyed, learn_kmeans, learn_pca, learn_logistic, learn_knn, or
    /// tpch (the 22 TPC-H queries, or those of --query).
    #[arg(value_parser = parse_job)]
    workload: Job,
    /// Engine name written in the result lines: `tessera`, or `tessera-SUFFIX` to label a variant.
    #[arg(long, default_value = "tessera", value_parser = parse_engine)]
    engine: String,
    /// Problem size: points for `pi` (`1e8`), the matrix side for `sincos` and `slice_sum`
    /// (`10000`), `ROWSxCOLS` for the SVDs and the learn workloads (`2000000x20`)
    /// [default: the peers' default for the workload].
    #[arg(long, value_parser = parse_size)]
    size: Option<Size>,
    /// Timed runs in this process (one JSON line each).
    #[arg(long, default_value_t = 1, value_parser = parse_count)]
    repeat: usize,
    /// Chunk extent: rows for `pi`, the long side for the SVDs, rows for the learn
    /// workloads (default 62,500), the side of a square chunk otherwise [default:
    /// automatic].
    #[arg(long, value_parser = parse_count)]
    chunk: Option<usize>,
    /// Worker threads [default: every core this process may use].
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// The session's chunk size (bytes, or with a K/M/G suffix; `SessionBuilder::chunk_bytes`)
    /// [default: the session's, 32 MiB, or 1 GiB where it computes on GPUs].
    #[arg(long, value_parser = parse_bytes)]
    chunk_bytes: Option<u64>,
    /// TPC-H's scale factor, as in the folder `<data>/tpch-sf<SF>` that `gen_data.py --tpch
    /// SF` writes (`tpch` only).
    #[arg(long, default_value = "1")]
    sf: String,
    /// A TPC-H query to run (1 to 22), repeatable [default: all] (`tpch` only).
    #[arg(long = "query")]
    queries: Vec<usize>,
    /// Build each TPC-H query from the specification's SQL text (`Session::sql`) instead of
    /// the hand-written frames (`tpch` only).
    #[arg(long)]
    sql: bool,
    /// Folder of the peers' data files (dataframe workloads) [default: $PEERS_DATA, else
    /// /tmp/peers-data].
    #[arg(long)]
    data: Option<String>,
    /// Host memory budget of the session (bytes, or with a K/M/G suffix) [default: 70% of
    /// the memory this process may use].
    #[arg(long, value_parser = parse_bytes)]
    memory_budget: Option<u64>,
    /// The memory budget limits this process's resident memory, not only reserved chunks
    /// (`SessionBuilder::limit_resident_memory`; a local cluster's workers always do).
    #[arg(long)]
    limit_resident: bool,
    /// Folder in which the session makes its spill folder [default: the system's temporary
    /// folder].
    #[arg(long)]
    spill_dir: Option<PathBuf>,
    /// Bytes the session may spill to disk (bytes, or with a K/M/G suffix) [default: half
    /// of the spill folder's free space].
    #[arg(long, value_parser = parse_bytes)]
    disk_budget: Option<u64>,
    /// Kill the device actor running the Nth kernel execution of every timed run (it is
    /// restarted and its tasks run again); a run in which this did not happen exactly once
    /// fails. `--stats` shows a run's kernel executions (`chunks_run`). A session restarts
    /// an actor at most 3 times a minute, so at most 3 repeats; the count also runs while a
    /// persisted input is prepared, before the first run.
    #[arg(long, value_parser = parse_count)]
    kill_device_at: Option<usize>,
    /// Print each run's job statistics as one JSON line on stderr.
    #[arg(long)]
    stats: bool,
    /// Run on the cluster whose scheduler listens at HOST:PORT (`tessera-scheduler`).
    #[arg(long, conflicts_with = "local_cluster")]
    scheduler: Option<String>,
    /// Run on a local cluster of N worker processes started for this run (`--threads`
    /// threads each, default the cores shared out); `tessera-scheduler` and
    /// `tessera-worker` must sit next to this program (`cargo build --release --bins`).
    #[arg(long, visible_alias = "workers", value_parser = parse_count)]
    local_cluster: Option<usize>,
    /// With `--local-cluster`/`--workers`: SIGKILL one worker this many seconds into each
    /// timed run (the workers take turns; it is started again after the run). A run that
    /// ends before the kill is an error: choose a moment inside the run.
    #[arg(long, requires = "local_cluster")]
    kill_worker_at: Option<f64>,
    /// Task runs each job's task stream keeps at most (default 100,000; past them, per-op
    /// summaries); 0 switches the recorder off, to measure what it costs.
    #[arg(long)]
    task_stream: Option<usize>,
    /// Where to compute (with `--local-cluster`, the workers' GPUs too: their `--gpus`).
    #[command(flatten)]
    backend: BackendArgs,
    /// Where to write a performance report and a trace of the timed runs (and the input
    /// preparation before them).
    #[command(flatten)]
    sight: SightArgs,
}

/// Restarts of one actor a session allows within a minute (`tessera_actors::MAX_RESTARTS`).
const SESSION_RESTARTS: usize = 3;

/// What is done around each timed run: re-arming the fault drill before it, checking that
/// the drill fired and printing the job's statistics after it.
#[derive(Debug)]
pub struct RunChecks {
    workload: &'static str,
    engine: String,
    faults: Option<Arc<FaultInjector>>,
    killer: Option<WorkerKiller>,
    stats: bool,
}

impl RunChecks {
    /// Called just before a timed run: re-arms the fault rule; the faults injected so far.
    pub fn before(&self) -> u64 {
        if let Some(k) = &self.killer {
            k.arm();
        }
        self.faults.as_ref().map_or(0, |f| {
            f.rearm();
            f.injected()
        })
    }

    /// Called after timed run `run` (outside the timed region), with what
    /// [`RunChecks::before`] returned: an error unless the drill fired exactly once in the
    /// run; prints the job statistics when asked.
    pub fn after(&self, session: &Session, run: usize, injected_before: u64) -> Result<(), String> {
        let stats = session.last_job_stats();
        let killed = match &self.killer {
            Some(k) => match k.disarm()? {
                Some(worker) => Some(worker),
                None => {
                    return Err(format!(
                        "run {run} ended before --kill-worker-at: choose a moment inside the run"
                    ))
                }
            },
            None => None,
        };
        if self.stats {
            let line = json!({
                "workload": self.workload,
                "engine": self.engine,
                "run": run,
                "killed_worker": killed,
                "injected": self.faults.as_ref().map_or(0, |f| f.injected() - injected_before),
                "stats": stats,
            });
            eprintln!("{line}");
        }
        if let Some(f) = &self.faults {
            let fired = f.injected() - injected_before;
            if fired != 1 {
                return Err(format!(
                    "run {run}: --kill-device-at fired {fired} times instead of once (the run \
                     had {} kernel executions; see --stats)",
                    f.events(tessera::FaultPoint::Kernel)
                ));
            }
            let restarts = stats.map_or(0, |s| s.restarts);
            if restarts == 0 {
                return Err(format!(
                    "run {run}: the device actor was killed but the job reports no restart"
                ));
            }
        }
        Ok(())
    }
}

/// An array or a dataframe workload.
#[derive(Clone, Copy, Debug)]
enum Job {
    Array(Workload),
    Frame(FrameWorkload),
    Learn(LearnWorkload),
    Tpch,
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Array(w) => w.name(),
            Job::Frame(w) => w.name(),
            Job::Learn(w) => w.name(),
            Job::Tpch => "tpch",
        }
    }
}

fn parse_job(s: &str) -> Result<Job, String> {
    use clap::ValueEnum;
    if s == "tpch" {
        return Ok(Job::Tpch);
    }
    Workload::from_str(s, false)
        .map(Job::Array)
        .or_else(|_| FrameWorkload::from_str(s, false).map(Job::Frame))
        .or_else(|_| LearnWorkload::from_str(s, false).map(Job::Learn))
        .map_err(|_| format!("unknown workload {s:?}"))
}

fn parse_engine(s: &str) -> Result<String, String> {
    if s == "tessera" || s.strip_prefix("tessera-").is_some_and(|v| !v.is_empty()) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown engine {s:?}: this binary runs `tessera` (or `tessera-SUFFIX` as a label)"
        ))
    }
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let mut builder = Session::builder().progress(Progress::Never);
    let cluster = match args.local_cluster {
        Some(n) => {
            let mut b = LocalCluster::builder().workers(n);
            if let Some(t) = args.threads {
                b = b.threads_per_worker(t);
            }
            if let Some(bytes) = args.memory_budget {
                b = b.memory_limit(bytes);
            }
            // The workers compute where the run asks.
            if let Some(backend) = args.backend.backend {
                b = b.backend(backend);
            }
            Some(Arc::new(Mutex::new(b.start()?)))
        }
        None => None,
    };
    if let Some(c) = &cluster {
        builder = c
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .session_builder();
    } else if let Some(address) = &args.scheduler {
        builder = builder.scheduler(address);
    } else if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    if let Some(bytes) = args.chunk_bytes {
        builder = builder.chunk_bytes(usize::try_from(bytes)?);
    }
    if let Some(bytes) = args.memory_budget {
        builder = builder.memory_budget(bytes);
    }
    builder = builder.limit_resident_memory(args.limit_resident);
    if let Some(dir) = &args.spill_dir {
        builder = builder.spill_dir(dir);
    }
    if let Some(bytes) = args.disk_budget {
        builder = builder.disk_budget(bytes);
    }
    if let Some(capacity) = args.task_stream {
        builder = builder.task_stream(capacity);
    }
    if args.kill_device_at.is_some() && args.repeat > SESSION_RESTARTS {
        return Err(format!(
            "--kill-device-at with --repeat {}: a session restarts its device actor at most \
             {SESSION_RESTARTS} times a minute (then the next death fails the job); run \
             at most {SESSION_RESTARTS} repeats per process",
            args.repeat
        )
        .into());
    }
    let faults = args
        .kill_device_at
        .map(|n| Arc::new(FaultInjector::new().on_nth(None, n as u64, FaultKind::KillDevice)));
    if let Some(f) = &faults {
        builder = builder.faults(f.clone());
    }
    let builder = args.backend.configure(builder.progress(Progress::Never));
    let session = args.sight.configure(builder).build()?;
    let killer = match (&cluster, args.kill_worker_at) {
        (Some(c), Some(seconds)) => Some(WorkerKiller::new(
            Arc::clone(c),
            Duration::try_from_secs_f64(seconds)
                .map_err(|e| format!("--kill-worker-at {seconds}: {e}"))?,
        )),
        _ => None,
    };
    let recordings = args.sight.start(&session)?;
    let checks = RunChecks {
        workload: args.workload.name(),
        engine: args.engine.clone(),
        faults,
        killer,
        stats: args.stats,
    };
    let data = || {
        args.data.clone().unwrap_or_else(|| {
            std::env::var("PEERS_DATA").unwrap_or_else(|_| "/tmp/peers-data".into())
        })
    };
    let workload = match args.workload {
        Job::Array(w) => w,
        Job::Frame(w) => {
            let rows = args.size.map_or(w.default_size(), |s| s.rows);
            w.run(&session, &args.engine, rows, args.repeat, &data(), &checks)?;
            recordings.finish()?;
            args.sight.hold(&session);
            return Ok(());
        }
        Job::Learn(w) => {
            w.run(
                &session,
                &args.engine,
                args.size,
                args.chunk,
                args.repeat,
                &checks,
            )?;
            recordings.finish()?;
            args.sight.hold(&session);
            return Ok(());
        }
        Job::Tpch => {
            let options = tpch::Options {
                sf: &args.sf,
                queries: &args.queries,
                repeat: args.repeat,
                data: &data(),
                sql: args.sql,
            };
            tpch::run(&session, &args.engine, &options, &checks)?;
            recordings.finish()?;
            args.sight.hold(&session);
            return Ok(());
        }
    };
    let n = args.size.unwrap_or_else(|| workload.default_size());
    workload.check_size(n)?;
    let input = workload.prepare(&session, n, args.chunk)?;

    for run in 0..args.repeat {
        let injected = checks.before();
        let before = rss_mb();
        let started = Instant::now();
        let result = workload
            .build(n, args.chunk, input.as_ref())
            .execute(&session)?;
        let seconds = started.elapsed().as_secs_f64();
        checks.after(&session, run, injected)?;
        let record = Record::measured(
            workload.name(),
            args.engine.clone(),
            workload.size_label(n),
            run,
            seconds,
            before,
            workload.digest(n, &result)?,
        );
        drop(result);
        println!("{}", record.to_line()?);
    }
    recordings.finish()?;
    args.sight.hold(&session);
    Ok(())
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    let args = Args::parse();
    tessera_examples::init_logging();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tessera-bench: {}: {e}", args.workload.name());
            ExitCode::FAILURE
        }
    }
}
