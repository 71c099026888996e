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
//! ```
//!
//! Dataframe workloads (`read_csv`, `groupby_q1`…`groupby_q5`, `ratings_groupby`,
//! `join_g1_y`, `join_self`, `reduce_mean`, `groupby_mean`) read the files that the peers'
//! `gen_data.py` writes (`--data`, default `$PEERS_DATA` or `/tmp/peers-data`); see
//! `frames.rs` for what is timed.
//!
//! The timed region is building the expression plus executing it (random generation
//! included, as in the peers; the SVDs' input is generated and persisted before the first
//! run, as the peers do); the session is started before the first run and kept, so run
//! 0 includes warm-up as a peer's run 0 does. `RUST_LOG=tessera=info` logs each job's chunk
//! count and wall time on stderr.

mod frames;
mod record;
mod workloads;

/// Freed chunk buffers stay with the allocator instead of going back to the kernel: glibc
/// unmaps every large buffer, and each unmap costs page faults and TLB shootdowns.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use frames::FrameWorkload;
use record::{rss_mb, Record};
use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;
use tessera::{Progress, Session};
use tessera_examples::parse_count;
use workloads::{parse_size, Size, Workload};

/// Run a peers' array workload on Tessera and print one JSON result line per run.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The workload: pi, sincos, slice_sum, svd_tall, svd_compressed, read_csv,
    /// groupby_q1..groupby_q5, ratings_groupby, join_g1_y, join_self, reduce_mean,
    /// groupby_mean.
    #[arg(value_parser = parse_job)]
    workload: Job,
    /// Engine name written in the result lines: `tessera`, or `tessera-SUFFIX` to label a variant.
    #[arg(long, default_value = "tessera", value_parser = parse_engine)]
    engine: String,
    /// Problem size: points for `pi` (`1e8`), the matrix side for `sincos` and `slice_sum`
    /// (`10000`), `ROWSxCOLS` for the SVDs (`2000000x20`) [default: the peers' default for
    /// the workload].
    #[arg(long, value_parser = parse_size)]
    size: Option<Size>,
    /// Timed runs in this process (one JSON line each).
    #[arg(long, default_value_t = 1, value_parser = parse_count)]
    repeat: usize,
    /// Chunk extent: rows for `pi`, the long side for the SVDs, the side of a square chunk
    /// otherwise [default: automatic].
    #[arg(long, value_parser = parse_count)]
    chunk: Option<usize>,
    /// Worker threads [default: every core this process may use].
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// Folder of the peers' data files (dataframe workloads) [default: $PEERS_DATA, else
    /// /tmp/peers-data].
    #[arg(long)]
    data: Option<String>,
}

/// An array or a dataframe workload.
#[derive(Clone, Copy, Debug)]
enum Job {
    Array(Workload),
    Frame(FrameWorkload),
}

impl Job {
    fn name(self) -> &'static str {
        match self {
            Job::Array(w) => w.name(),
            Job::Frame(w) => w.name(),
        }
    }
}

fn parse_job(s: &str) -> Result<Job, String> {
    use clap::ValueEnum;
    Workload::from_str(s, false)
        .map(Job::Array)
        .or_else(|_| FrameWorkload::from_str(s, false).map(Job::Frame))
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
    if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    let session = builder.build()?;
    let workload = match args.workload {
        Job::Array(w) => w,
        Job::Frame(w) => {
            let rows = args.size.map_or(w.default_size(), |s| s.rows);
            let data = args.data.clone().unwrap_or_else(|| {
                std::env::var("PEERS_DATA").unwrap_or_else(|_| "/tmp/peers-data".into())
            });
            return w.run(&session, &args.engine, rows, args.repeat, &data);
        }
    };
    let n = args.size.unwrap_or_else(|| workload.default_size());
    workload.check_size(n)?;
    let input = workload.prepare(&session, n, args.chunk)?;

    for run in 0..args.repeat {
        let before = rss_mb();
        let started = Instant::now();
        let result = workload
            .build(n, args.chunk, input.as_ref())
            .execute(&session)?;
        let seconds = started.elapsed().as_secs_f64();
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
    Ok(())
}

fn main() -> ExitCode {
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
