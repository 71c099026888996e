//! Monte Carlo estimate of pi, the expression of the Mars README:
//! draw N points uniform in [-1, 1)^2, count those inside the unit circle, pi ~ 4 * inside / N.
//!
//! ```text
//! cargo run --release -p tessera-examples --example monte_carlo_pi -- --points 1e8
//! RUST_LOG=tessera=info cargo run --release -p tessera-examples --example monte_carlo_pi -- --points 1e9 --chunk-rows 10000000
//! cargo run --release -p tessera-examples --example monte_carlo_pi -- --points 1e10 --backend cuda
//! ```

/// Keeps freed chunk buffers instead of unmapping them (see tessera-bench).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;
use tessera::{tensor, DType, Progress, Session};
use tessera_examples::{
    exit_code, init_logging, parse_count, print_job_summary, BackendArgs, SightArgs,
};

/// Estimate pi from random points with a chunked Tessera tensor expression.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Number of random points (`100000000` or `1e8`).
    #[arg(long, default_value = "1e8", value_parser = parse_count)]
    points: usize,
    /// Rows per chunk of the (points, 2) input (default: sized automatically).
    #[arg(long, value_parser = parse_count)]
    chunk_rows: Option<usize>,
    /// Worker threads (default: every core this process may use).
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// Seed of the random generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Where to compute.
    #[command(flatten)]
    backend: BackendArgs,
    /// Where to write a performance report and a trace of the run.
    #[command(flatten)]
    sight: SightArgs,
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let mut builder = Session::builder().progress(Progress::Auto);
    if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    let builder = args.backend.configure(builder);
    let session = args.sight.configure(builder).build()?;
    let recordings = args.sight.start(&session)?;
    let n = args.points;

    let started = Instant::now();
    let rng = tensor::random::default_rng(args.seed);
    let mut data = rng.uniform(-1.0, 1.0, &[n, 2]);
    if let Some(rows) = args.chunk_rows {
        data = data.rechunk(&[rows, 2]);
    }
    let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
    let pi = inside.astype(DType::F64) * 4.0 / n as f64;
    let (result, stats) = session.execute_with_stats(&pi)?;
    let elapsed = started.elapsed();

    let estimate = result
        .item()
        .ok_or("the result is not a single value")?
        .as_f64();
    println!("points:   {n}");
    println!("devices:  {}", session.config().devices.join(", "));
    println!("pi ~      {estimate:.8}");
    println!("error:    {:+.3e}", estimate - std::f64::consts::PI);
    print_job_summary(elapsed, &stats, session.config().threads);
    recordings.finish()?;
    args.sight.hold(&session);
    Ok(())
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    let args = Args::parse();
    init_logging();
    exit_code("monte_carlo_pi", run(&args))
}
