//! The h2o db-benchmark groupby queries on a CSV file, read in parallel byte ranges.
//!
//! Without `--csv`, a synthetic h2o-style G1 table (`id1`..`id6`, `v1`..`v3`; N rows, K
//! groups) is written first to the system's temporary folder.
//!
//! ```text
//! cargo run --release -p tessera-examples --example groupby -- --rows 1e6
//! cargo run --release -p tessera-examples --example groupby -- --csv /tmp/peers-data/G1_1e7_1e2_0_0.csv
//! ```

/// Keeps freed chunk buffers instead of unmapping them (see tessera-bench).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use arrow::util::pretty::pretty_format_batches;
use clap::Parser;
use std::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use tessera::dataframe::{self, Agg, DataFrame};
use tessera::{Progress, Session};
use tessera_examples::{exit_code, init_logging, parse_count, SightArgs, SplitMix};

/// Run the db-benchmark groupby queries on a CSV file with Tessera dataframes.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The G1-style CSV to read (default: generate one).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Rows of the generated table.
    #[arg(long, default_value = "1e6", value_parser = parse_count)]
    rows: usize,
    /// Distinct values of `id1`, `id2`, `id4`, `id5` in the generated table.
    #[arg(long, default_value = "100", value_parser = parse_count)]
    groups: usize,
    /// Worker threads (default: every core this process may use).
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// Result rows printed per query.
    #[arg(long, default_value_t = 5)]
    show: usize,
    /// Where to write a performance report and a trace of the run.
    #[command(flatten)]
    sight: SightArgs,
}

/// Writes an h2o G1-style table: `id1`,`id2` in id001..idK, `id3` in id0000000001..
/// (N/K values), `id4`,`id5` in 1..K, `id6` in 1..N/K, `v1` 1..5, `v2` 1..15, `v3` in
/// [0, 100) with 6 decimals.
fn generate(path: &PathBuf, rows: usize, k: usize) -> std::io::Result<()> {
    let mut out = BufWriter::new(File::create(path)?);
    writeln!(out, "id1,id2,id3,id4,id5,id6,v1,v2,v3")?;
    let mut rng = SplitMix(108);
    let nk = (rows / k).max(1);
    for _ in 0..rows {
        let v3 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 100.0;
        writeln!(
            out,
            "id{:03},id{:03},id{:010},{},{},{},{},{},{v3:.6}",
            rng.below(k as u64) + 1,
            rng.below(k as u64) + 1,
            rng.below(nk as u64) + 1,
            rng.below(k as u64) + 1,
            rng.below(k as u64) + 1,
            rng.below(nk as u64) + 1,
            rng.below(5) + 1,
            rng.below(15) + 1,
        )?;
    }
    out.flush()
}

/// The queries of the h2o groupby benchmark (q1–q5 as in the peers' harness, q6 as h2o's).
fn queries(x: &DataFrame) -> Vec<(&'static str, DataFrame)> {
    vec![
        (
            "q1: sum v1 by id1",
            x.groupby(&["id1"]).agg(&[("v1", &[Agg::Sum])]),
        ),
        (
            "q2: sum v1 by id1:id2",
            x.groupby(&["id1", "id2"]).agg(&[("v1", &[Agg::Sum])]),
        ),
        (
            "q3: sum v1 mean v3 by id3",
            x.groupby(&["id3"])
                .agg(&[("v1", &[Agg::Sum]), ("v3", &[Agg::Mean])]),
        ),
        (
            "q4: mean v1:v3 by id4",
            x.groupby(&["id4"]).agg(&[
                ("v1", &[Agg::Mean]),
                ("v2", &[Agg::Mean]),
                ("v3", &[Agg::Mean]),
            ]),
        ),
        (
            "q5: sum v1:v3 by id6",
            x.groupby(&["id6"]).agg(&[
                ("v1", &[Agg::Sum]),
                ("v2", &[Agg::Sum]),
                ("v3", &[Agg::Sum]),
            ]),
        ),
        (
            "q6: std and count of v3 by id4:id5",
            x.groupby(&["id4", "id5"])
                .agg(&[("v3", &[Agg::Std, Agg::Count])]),
        ),
    ]
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let mut builder = Session::builder().progress(Progress::Auto);
    if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    let session = args.sight.configure(builder).build()?;
    let recordings = args.sight.start(&session)?;
    let path = match &args.csv {
        Some(p) => p.clone(),
        None => {
            let p =
                std::env::temp_dir().join(format!("tessera-G1_{}_{}.csv", args.rows, args.groups));
            if !p.exists() {
                let started = Instant::now();
                generate(&p, args.rows, args.groups)?;
                println!(
                    "wrote {} ({} rows) in {:.2} s",
                    p.display(),
                    args.rows,
                    started.elapsed().as_secs_f64()
                );
            }
            p
        }
    };

    let started = Instant::now();
    let x = dataframe::read_csv(&path).persist(&session)?;
    println!(
        "read {} in {:.3} s: {} rows, columns {:?}",
        path.display(),
        started.elapsed().as_secs_f64(),
        x.len(&session)?,
        x.columns()?
    );
    for (name, query) in queries(&x) {
        let started = Instant::now();
        let (result, stats) = query.execute_with_stats(&session)?;
        println!(
            "\n{name}: {} groups in {:.3} s ({} chunk tasks)",
            result.num_rows(),
            started.elapsed().as_secs_f64(),
            stats.chunks_run
        );
        let shown = result.slice(0, args.show.min(result.num_rows()));
        println!("{}", pretty_format_batches(&[shown])?);
    }
    recordings.finish()?;
    args.sight.hold(&session);
    Ok(())
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    let args = Args::parse();
    init_logging();
    exit_code("groupby", run(&args))
}
