//! TPC-H on Tessera: writes the eight tables with the `tpchgen` generators, and runs the 22
//! queries (`tessera_examples::tpch::queries`, or their SQL texts through `Session::sql`
//! with `--sql`) on a folder of them, printing each answer's rows, digest and time, the
//! most host memory its jobs reserved and what they spilled, and writing the answers as
//! Parquet when asked.
//!
//! ```text
//! cargo run --release -p tessera-examples --example tpch -- gen --sf 1 --out /tmp/tpch-sf1
//! cargo run --release -p tessera-examples --example tpch -- run --data /tmp/tpch-sf1
//! cargo run --release -p tessera-examples --example tpch -- run --data /tmp/tpch-sf1 --query 3 --show 10
//! cargo run --release -p tessera-examples --example tpch -- run --data /tmp/tpch-sf1 --query 19 --explain
//! cargo run --release -p tessera-examples --example tpch -- run --data /tmp/tpch-sf1 --sql
//! cargo run --release -p tessera-examples --example tpch -- run --data /tmp/tpch-sf1 --workers 2
//! ```

/// Keeps freed chunk buffers instead of unmapping them (see tessera-bench).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use arrow::util::pretty::pretty_format_batches;
use clap::{Parser, Subcommand};
use parquet::arrow::ArrowWriter;
use std::error::Error;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tessera::{fmt_bytes, LocalCluster, Session};
use tessera_examples::tpch::{self, digest, gen, queries, Tables};
use tessera_examples::{exit_code, init_logging, parse_bytes, parse_count};

/// TPC-H data and queries on Tessera.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write the eight tables as Parquet (`<out>/<table>.parquet`).
    Gen {
        /// The scale factor (1: about 1 GB of data, 6 million lineitems).
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// The folder to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Run queries on a folder of tables.
    Run {
        /// The folder of `<table>.parquet` files.
        #[arg(long)]
        data: PathBuf,
        /// The queries (1 to 22), repeatable [default: all].
        #[arg(long = "query")]
        queries: Vec<usize>,
        /// Write each answer to `<out>/q<N>.parquet`.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Answer rows printed per query.
        #[arg(long, default_value_t = 0)]
        show: usize,
        /// Worker threads (default: every core this process may use).
        #[arg(long, value_parser = parse_count)]
        threads: Option<usize>,
        /// Host memory budget (`2G`) [default: the session's]; with `--workers`, each
        /// worker's memory limit.
        #[arg(long, value_parser = parse_bytes)]
        memory_budget: Option<u64>,
        /// Run on a local cluster of this many worker processes (`tessera-scheduler` and
        /// `tessera-worker` next to this program, one folder up, or in $TESSERA_BIN_DIR).
        #[arg(long, value_parser = parse_count)]
        workers: Option<usize>,
        /// Bytes per chunk (`64K`: many chunks even at small scale) [default: the session's].
        #[arg(long, value_parser = parse_bytes)]
        chunk_bytes: Option<u64>,
        /// Print each query's optimised plan (`DataFrame::explain`) before running it.
        #[arg(long)]
        explain: bool,
        /// Run the specification's SQL texts through `Session::sql` instead of the
        /// queries written in the dataframe API.
        #[arg(long)]
        sql: bool,
    },
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    init_logging();
    let args = Args::parse();
    exit_code("tpch", run(args))
}

fn run(args: Args) -> Result<(), Box<dyn Error>> {
    match args.command {
        Command::Gen { sf, out } => {
            let start = Instant::now();
            for (table, rows) in gen::write_tables(&out, sf)? {
                println!("{table:<9} {rows:>10} rows");
            }
            println!(
                "written to {} in {:.1} s",
                out.display(),
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Run {
            data,
            queries: wanted,
            out,
            show,
            threads,
            memory_budget,
            workers,
            chunk_bytes,
            explain,
            sql,
        } => {
            // The cluster (when asked for) lives until the queries are done.
            let cluster = match workers {
                Some(n) => {
                    let mut b = LocalCluster::builder().workers(n);
                    if let Some(t) = threads {
                        b = b.threads_per_worker(t);
                    }
                    if let Some(bytes) = memory_budget {
                        b = b.memory_limit(bytes);
                    }
                    Some(b.start()?)
                }
                None => None,
            };
            let mut builder = match &cluster {
                Some(c) => c.session_builder(),
                None => Session::builder(),
            };
            if let (None, Some(t)) = (&cluster, threads) {
                builder = builder.threads(t);
            }
            if let Some(b) = memory_budget {
                builder = builder.memory_budget(b);
            }
            if let Some(b) = chunk_bytes {
                builder = builder.chunk_bytes(usize::try_from(b)?);
            }
            let session = builder.build()?;
            let tables = Tables::read(&data);
            let wanted = if wanted.is_empty() {
                (1..=22).collect()
            } else {
                wanted
            };
            if let Some(dir) = &out {
                std::fs::create_dir_all(dir)?;
            }
            for n in wanted {
                let missing = || format!("no query {n}: TPC-H has queries 1 to 22");
                let query = match sql {
                    true => {
                        let text = tpch::sql(n).ok_or_else(missing)?;
                        session
                            .sql(text, &tables.named())
                            .map_err(|e| format!("Q{n}: {e}"))?
                    }
                    false => queries::query(n, &tables).ok_or_else(missing)?,
                };
                if explain {
                    println!("Q{n} plan:\n{}", query.explain()?);
                }
                let start = Instant::now();
                let (answer, stats) = query
                    .execute_with_stats(&session)
                    .map_err(|e| format!("Q{n}: {e}"))?;
                let seconds = start.elapsed().as_secs_f64();
                let (rows, sum) = digest(std::slice::from_ref(&answer))?;
                let budget = session.config().memory_budget.max(1);
                println!(
                    "Q{n:<2} {rows:>6} rows  digest {sum:<16} {seconds:.3} s  peak reserved {} ({:.0}% of the budget)  spilled {}",
                    fmt_bytes(stats.peak_host_reserved),
                    stats.peak_host_reserved as f64 * 100.0 / budget as f64,
                    fmt_bytes(stats.storage.bytes_spilled)
                );
                if show > 0 {
                    println!(
                        "{}",
                        pretty_format_batches(&[answer.slice(0, show.min(rows))])?
                    );
                }
                if let Some(dir) = &out {
                    write_parquet(&dir.join(format!("q{n}.parquet")), &answer)?;
                }
            }
            Ok(())
        }
    }
}

/// Writes one answer as a Parquet file.
fn write_parquet(path: &Path, batch: &arrow::array::RecordBatch) -> Result<(), Box<dyn Error>> {
    let mut writer = ArrowWriter::try_new(File::create(path)?, batch.schema(), None)?;
    writer.write(batch)?;
    writer.close()?;
    Ok(())
}
