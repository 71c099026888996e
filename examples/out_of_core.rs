//! Out of core: a job whose data is several times the session's host memory budget
//! finishes with the same result as with no budget, by spilling chunks to disk, reading
//! them back when needed and holding new work back.
//!
//! By default a groupby: the program writes (or takes with `--csv`) a CSV of an integer
//! key `k` with many groups and value columns `v1` (integers), `v2` (quarters, so that
//! every sum is exact in `f64`) and `v3` (integers) (`tessera_examples::write_keyed_csv`),
//! and runs `groupby("k").agg(v1: sum, mean, count; v2: sum, mean; v3: sum, max)` sorted by
//! `(v2_sum, k)` descending twice: on a session limited to `--budget` bytes that spills
//! under `--spill-dir`, then on one with the default budget (70% of the machine's memory).
//! The two result tables must be equal, value for value. With many groups the partial
//! aggregates are large and their merge goes through a hash shuffle, whose chunks are what
//! spills.
//!
//! With `--svd`, instead, the randomized SVD (`linalg::svd_compressed`) of a tall random
//! matrix, under `--budget` and under the default budget; the singular values must agree
//! within 1e-9 relative. Its random input is not kept but generated again for each pass
//! when it is larger than a quarter of the budget, so what spills are the products (`m ×
//! (k + p)` panels); the output says whether anything did.
//!
//! Each run prints its wall time, what the memory tiers did (bytes spilled and read back,
//! the most memory reserved, how often ready work was held back) and the process's peak
//! resident memory during it. The program exits non-zero if the results differ.
//!
//! ```text
//! cargo run --release -p tessera-examples --example out_of_core
//! cargo run --release -p tessera-examples --example out_of_core -- --rows 2e7 --budget 64M
//! cargo run --release -p tessera-examples --example out_of_core -- --csv data.csv --key id --budget 1G
//! cargo run --release -p tessera-examples --example out_of_core -- --svd --svd-rows 4e6
//! ```
//!
//! Only data within one stage of a frame job is under the budget: each stage's outputs (the
//! partial aggregates before their shuffle, the merged groups) are handed to the program
//! between stages, as the final result is, so the groupby's peak memory stays close to the
//! unlimited run's even when most of its chunks spilled.

/// Keeps freed chunk buffers instead of unmapping them (see tessera-bench).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use clap::Parser;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::dataframe::{self, Agg, DataFrame, ReadCsv};
use tessera::tensor::random::default_rng;
use tessera::{linalg, JobStats, Progress, Session};
use tessera_examples::{fmt_bytes, init_logging, keyed_csv, parse_bytes, parse_count, SightArgs};

/// Run a groupby (or a randomized SVD) over data several times the host memory budget,
/// and check that the result is the one computed without the budget.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Host memory budget of the limited session (bytes, or with a K/M/G suffix).
    #[arg(long, default_value = "32M", value_parser = parse_bytes)]
    budget: u64,
    /// Folder in which the limited session makes its spill folder [default: the system's
    /// temporary folder].
    #[arg(long)]
    spill_dir: Option<PathBuf>,
    /// The CSV to read, with integer or float columns `v1`, `v2`, `v3` and the `--key`
    /// column (default: generate one in the system's temporary folder).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Rows of the generated CSV.
    #[arg(long, default_value = "8e6", value_parser = parse_count)]
    rows: usize,
    /// Distinct keys of the generated CSV.
    #[arg(long, default_value = "1e5", value_parser = parse_count)]
    groups: usize,
    /// The key column (with `--csv`).
    #[arg(long, default_value = "k")]
    key: String,
    /// Bytes of CSV per chunk (with a K/M/G suffix): many chunks of many groups make many
    /// partial rows, merged by a hash shuffle.
    #[arg(long, default_value = "4M", value_parser = parse_bytes)]
    chunk_bytes: u64,
    /// Worker threads [default: every core this process may use].
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// Result rows printed.
    #[arg(long, default_value_t = 5)]
    show: usize,
    /// Run the randomized SVD instead of the groupby.
    #[arg(long)]
    svd: bool,
    /// Rows of the SVD's random matrix.
    #[arg(long, default_value = "2e6", value_parser = parse_count)]
    svd_rows: usize,
    /// Columns of the SVD's random matrix.
    #[arg(long, default_value = "50", value_parser = parse_count)]
    svd_cols: usize,
    /// Singular values computed by the randomized SVD.
    #[arg(long, default_value = "10", value_parser = parse_count)]
    svd_k: usize,
    /// Where to write a performance report and a trace of the budget run.
    #[command(flatten)]
    sight: SightArgs,
}

/// The query: sums, means and counts per key, sorted by `(v2_sum, key)` descending (the
/// key makes the order total).
fn query(path: &Path, key: &str, chunk_bytes: u64) -> DataFrame {
    let csv = dataframe::read_csv_with(
        path,
        ReadCsv {
            chunk_bytes: Some(chunk_bytes),
            ..ReadCsv::default()
        },
    );
    csv.groupby(&[key])
        .sort(false)
        .agg(&[
            ("v1", &[Agg::Sum, Agg::Mean, Agg::Count]),
            ("v2", &[Agg::Sum, Agg::Mean]),
            ("v3", &[Agg::Sum, Agg::Max]),
        ])
        .sort_values(&["v2_sum", key], false)
}

/// A session with `budget` (the default one when `None`) spilling under `spill_dir`.
fn session(args: &Args, budget: Option<u64>) -> tessera::Result<Session> {
    let mut b = Session::builder().progress(Progress::Never);
    if let Some(t) = args.threads {
        b = b.threads(t);
    }
    if let Some(bytes) = budget {
        b = b.memory_budget(bytes);
    }
    if let Some(dir) = &args.spill_dir {
        b = b.spill_dir(dir);
    }
    b.build()
}

/// Resets the process's peak resident memory to its current one (Linux: `clear_refs` 5), so
/// that the next [`peak_rss`] is the peak since now; the resident memory now, if the reset
/// worked.
fn reset_peak_rss() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_bytes("VmRSS")
}

/// Peak resident memory of this process (`VmHWM`), where it can be read.
fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM")
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Prints one run's wall time and what the memory tiers did, and the process's peak RSS
/// (during the run when `rss_at_start`, the resident memory when it started, is known;
/// else over the process's life).
fn report(
    label: &str,
    budget: u64,
    elapsed: Duration,
    stats: &JobStats,
    rss_at_start: Option<u64>,
) {
    let s = &stats.storage;
    println!("{label}:");
    println!(
        "  time:               {:.2} s ({} chunk tasks)",
        elapsed.as_secs_f64(),
        stats.chunks_run
    );
    println!(
        "  peak host reserved: {} of a {} budget{}",
        fmt_bytes(stats.peak_host_reserved),
        fmt_bytes(budget),
        if stats.peak_host_reserved > budget {
            " (over it: a task runs alone, its inputs read back and its output reserved, \
             even when they exceed the budget)"
        } else {
            ""
        }
    );
    println!(
        "  peak stored:        {} (this job's chunks held at once, memory and disk)",
        fmt_bytes(stats.peak_stored_bytes)
    );
    println!(
        "  spilled:            {} in {} chunks ({} spill failures), {} read back, disk peak {}",
        fmt_bytes(s.bytes_spilled),
        s.chunks_spilled,
        s.spill_failures,
        fmt_bytes(s.bytes_read_back),
        fmt_bytes(s.peak_disk_bytes)
    );
    println!(
        "  held back:          {} times (ready tasks waiting for memory)",
        stats.held_back
    );
    if stats.chunks_recomputed > 0 {
        println!(
            "  recomputed:         {} chunks (generated again instead of kept)",
            stats.chunks_recomputed
        );
    }
    if let Some(rss) = peak_rss() {
        let during = match rss_at_start {
            Some(start) => format!("during the run, from {} at its start", fmt_bytes(start)),
            None => "of the process so far".to_string(),
        };
        println!("  peak RSS:           {} ({during})", fmt_bytes(rss));
    }
}

/// The groupby section; whether both runs gave the same table.
fn groupby(args: &Args) -> Result<bool, Box<dyn Error>> {
    let (path, key) = match &args.csv {
        Some(p) => (p.clone(), args.key.as_str()),
        None => {
            let started = Instant::now();
            let (p, written) = keyed_csv(&std::env::temp_dir(), args.rows, args.groups)?;
            if written {
                println!(
                    "wrote {} in {:.1} s",
                    p.display(),
                    started.elapsed().as_secs_f64()
                );
            }
            (p, "k")
        }
    };
    let size = std::fs::metadata(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    println!(
        "== groupby: {} ({}, {:.1}x the {} budget), chunks of {} ==",
        path.display(),
        fmt_bytes(size),
        size as f64 / args.budget as f64,
        fmt_bytes(args.budget),
        fmt_bytes(args.chunk_bytes)
    );

    // The limited run first, so that the process's peak RSS after it is its own.
    let limited = session(args, Some(args.budget))?;
    let recordings = args.sight.start(&limited)?;
    let reset = reset_peak_rss();
    let started = Instant::now();
    let (small, small_stats) = query(&path, key, args.chunk_bytes).execute_with_stats(&limited)?;
    recordings.finish()?;
    report(
        "budget run",
        args.budget,
        started.elapsed(),
        &small_stats,
        reset,
    );
    drop(limited);

    let unlimited = session(args, None)?;
    let default_budget = unlimited.config().memory_budget;
    let reset = reset_peak_rss();
    let started = Instant::now();
    let (full, full_stats) = query(&path, key, args.chunk_bytes).execute_with_stats(&unlimited)?;
    report(
        "default-budget run",
        default_budget,
        started.elapsed(),
        &full_stats,
        reset,
    );
    drop(unlimited);

    let same = small == full;
    println!(
        "{} groups; same result: {}",
        full.num_rows(),
        if same { "yes" } else { "NO" }
    );
    if !same {
        describe_difference(&small, &full);
    }
    println!(
        "{}",
        pretty_format_batches(&[full.slice(0, args.show.min(full.num_rows()))])?
    );
    Ok(same)
}

/// Prints where two result tables first differ.
fn describe_difference(a: &RecordBatch, b: &RecordBatch) {
    if a.schema() != b.schema() {
        println!("  schemas differ: {:?} vs {:?}", a.schema(), b.schema());
        return;
    }
    if a.num_rows() != b.num_rows() {
        println!("  rows differ: {} vs {}", a.num_rows(), b.num_rows());
        return;
    }
    for (i, field) in a.schema().fields().iter().enumerate() {
        let (x, y) = (a.column(i), b.column(i));
        if x != y {
            let row = (0..a.num_rows()).find(|&r| x.slice(r, 1) != y.slice(r, 1));
            println!("  column {} differs (first at row {row:?})", field.name());
        }
    }
}

/// The randomized SVD section; whether both runs agree within 1e-9 relative.
fn svd(args: &Args) -> Result<bool, Box<dyn Error>> {
    let budget = args.budget;
    let (m, n, k) = (args.svd_rows, args.svd_cols, args.svd_k);
    let oversamples = linalg::DEFAULT_N_OVERSAMPLES;
    println!(
        "== randomized SVD: {m} x {n} uniform [0, 1) ({}), k = {k}, {oversamples} oversamples; \
         panels of {} ==",
        fmt_bytes((m * n * 8) as u64),
        fmt_bytes((m * (k + oversamples) * 8) as u64),
    );
    let run = |label: &str, limit: Option<u64>| -> Result<(Vec<f64>, JobStats), Box<dyn Error>> {
        let s = session(args, limit)?;
        // The budget run is the one reported.
        let recordings = match limit {
            Some(_) => Some(args.sight.start(&s)?),
            None => None,
        };
        let x = default_rng(42).random(&[m, n]);
        let (_, sv, _) = linalg::svd_compressed(&x, k, 0, oversamples, 42);
        let reset = reset_peak_rss();
        let started = Instant::now();
        let (values, stats) = s.execute_with_stats(&sv)?;
        if let Some(recordings) = recordings {
            recordings.finish()?;
        }
        report(
            label,
            s.config().memory_budget,
            started.elapsed(),
            &stats,
            reset,
        );
        Ok((values.to_f64_vec(), stats))
    };
    let (small, small_stats) = run("budget run", Some(budget))?;
    let (full, _) = run("default-budget run", None)?;
    let worst = small
        .iter()
        .zip(&full)
        .map(|(a, b)| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE))
        .fold(0.0f64, f64::max);
    let same = small.len() == full.len() && worst <= 1e-9;
    println!(
        "singular values: {:?}",
        full.iter().take(args.show.max(1)).collect::<Vec<_>>()
    );
    println!(
        "same result: {} (largest relative difference {worst:.1e})",
        if same { "yes" } else { "NO" }
    );
    if small_stats.storage.bytes_spilled == 0 {
        println!(
            "note: nothing spilled under the {} budget: the input was generated again for each \
             pass instead of being kept, and the panels fit",
            fmt_bytes(budget)
        );
    }
    Ok(same)
}

fn run(args: &Args) -> Result<bool, Box<dyn Error>> {
    if args.svd {
        svd(args)
    } else {
        groupby(args)
    }
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    let args = Args::parse();
    init_logging();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("out_of_core: the limited run's result differs from the unlimited one");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("out_of_core: {e}");
            ExitCode::FAILURE
        }
    }
}
