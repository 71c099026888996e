//! What Tessera's command-line programs (the examples and `tessera-bench`) share: count
//! arguments in scientific notation, byte sizes with K/M/G suffixes, the keyed CSV table of
//! the out-of-core example and benchmarks, logging to stderr, a job summary, and exiting
//! with a message.

pub mod tpch;

use std::fmt::Display;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tessera::{DeviceBackend, JobStats, Recording, Session, SessionBuilder};
use tracing_subscriber::EnvFilter;

/// A positive count written plainly (`250000`) or in scientific notation (`1e9`, `2.5e7`).
pub fn parse_count(s: &str) -> Result<usize, String> {
    let n = match s.parse::<usize>() {
        Ok(n) => n,
        Err(_) => {
            let x: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
            if !(x.is_finite() && x.fract() == 0.0 && x >= 0.0 && x < usize::MAX as f64) {
                return Err(format!("{s:?} is not a whole number in range"));
            }
            x as usize
        }
    };
    if n == 0 {
        return Err(format!("{s:?}: must be at least 1"));
    }
    Ok(n)
}

/// A byte size written plainly (`33554432`), in scientific notation (`1e8`), or with a
/// binary suffix `K`, `M`, `G` or `T` (powers of 1024; `KiB`/`KB`/`k` are read alike and a
/// fraction is allowed: `32M`, `32MiB`, `1.5G`).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits_end = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(digits_end);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use K, M, G or T)")),
    };
    let x: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a byte size"))?;
    let bytes = x * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64 && bytes.fract() == 0.0) {
        return Err(format!("{s:?} is not a whole number of bytes in range"));
    }
    Ok(bytes as u64)
}

pub use tessera::fmt_bytes;

/// A small deterministic generator (SplitMix64) for synthetic tables.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Writes the keyed table to `path`: `rows` rows of `k,v1,v2,v3` with `k` uniform in
/// `0..groups`, `v1` in 1..=100, `v2` a quarter in [0, 100) (so every sum of it is exact
/// in `f64`), `v3` in 0..1e6; seeded, so the same arguments write the same file.
pub fn write_keyed_csv(path: &Path, rows: usize, groups: usize) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    writeln!(out, "k,v1,v2,v3")?;
    let mut rng = SplitMix(2024);
    let groups = groups.max(1) as u64;
    for _ in 0..rows {
        let k = rng.below(groups);
        let v1 = rng.below(100) + 1;
        let v2 = rng.below(400) as f64 / 4.0;
        let v3 = rng.below(1_000_000);
        writeln!(out, "{k},{v1},{v2},{v3}")?;
    }
    out.flush()
}

/// The keyed table of `rows` rows and `groups` keys in `dir`
/// (`tessera-keyed_{rows}_{groups}.csv`), written first (through a temporary name) if it
/// is not there yet; whether it was written.
pub fn keyed_csv(dir: &Path, rows: usize, groups: usize) -> std::io::Result<(PathBuf, bool)> {
    let path = dir.join(format!("tessera-keyed_{rows}_{groups}.csv"));
    if path.exists() {
        return Ok((path, false));
    }
    let partial = path.with_extension(format!("csv.part{}", std::process::id()));
    write_keyed_csv(&partial, rows, groups)?;
    std::fs::rename(&partial, &path)?;
    Ok((path, true))
}

/// `--backend cpu|cuda|auto`: where the examples' and `tessera-bench`'s sessions compute.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BackendArgs {
    /// Compute on the CPU pool (`cpu`), also on every GPU (`cuda`: an error where none can
    /// be used), or on the GPUs where they can be used (`auto`) [default: $TESSERA_BACKEND,
    /// else cpu].
    #[arg(long, value_name = "cpu|cuda|auto")]
    pub backend: Option<DeviceBackend>,
}

impl BackendArgs {
    /// `builder` with the backend asked for (none: the session's default).
    pub fn configure(&self, builder: SessionBuilder) -> SessionBuilder {
        match self.backend {
            Some(backend) => builder.backend(backend),
            None => builder,
        }
    }
}

/// `--report FILE` and `--trace FILE`: what the examples and `tessera-bench` write about
/// the jobs they run.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SightArgs {
    /// Write a self-contained HTML performance report of the run's jobs to FILE (task
    /// stream, progress, memory, time per op, occupancy, job statistics, plan).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the run's task stream to FILE as Chrome trace-event JSON (open it in
    /// Perfetto or chrome://tracing).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Serve the live dashboard at HOST:PORT while the program runs (its page at
    /// http://HOST:PORT/, Prometheus metrics at /metrics; loopback only).
    #[arg(long, value_name = "HOST:PORT")]
    pub dashboard: Option<String>,
    /// Keep serving the dashboard this many seconds after the work is done.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub dashboard_hold: f64,
}

impl SightArgs {
    /// `builder` with the dashboard asked for.
    pub fn configure(&self, builder: SessionBuilder) -> SessionBuilder {
        match &self.dashboard {
            Some(address) => builder.dashboard(address),
            None => builder,
        }
    }

    /// Opens the recordings asked for on `session` (finish them after the jobs), and
    /// prints where its dashboard is (on stderr).
    pub fn start(&self, session: &Session) -> tessera::Result<Recordings> {
        if let Some(address) = session.dashboard_address() {
            eprintln!("dashboard: http://{address}/");
        }
        let mut open = Vec::new();
        if let Some(path) = &self.report {
            open.push(session.performance_report(path)?);
        }
        if let Some(path) = &self.trace {
            open.push(session.trace(path)?);
        }
        Ok(Recordings(open))
    }
}

impl SightArgs {
    /// Waits `--dashboard-hold` seconds when `session` serves a dashboard, so that it can
    /// still be looked at after the work.
    pub fn hold(&self, session: &Session) {
        if session.dashboard_address().is_some() && self.dashboard_hold > 0.0 {
            eprintln!("dashboard: serving for {} s more", self.dashboard_hold);
            std::thread::sleep(std::time::Duration::from_secs_f64(self.dashboard_hold));
        }
    }
}

/// The recordings [`SightArgs::start`] opened.
#[derive(Debug)]
#[must_use = "finish the recordings to write their files and see errors"]
pub struct Recordings(Vec<Recording>);

impl Recordings {
    /// Writes every file (the first error is returned; the other files are still written).
    pub fn finish(self) -> tessera::Result<()> {
        let mut result = Ok(());
        for recording in self.0 {
            let written = recording.finish();
            if result.is_ok() {
                result = written;
            }
        }
        result
    }
}

/// Logs to stderr, filtered by `RUST_LOG` (default: warnings).
pub fn init_logging() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// Success, or the error on stderr after `context` and a failing exit code.
pub fn exit_code<E: Display>(context: &str, result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{context}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Prints the lines every example ends with: wall time, time in the job, threads, chunks.
pub fn print_job_summary(elapsed: Duration, stats: &JobStats, threads: usize) {
    println!(
        "time:     {:.3} s ({:.3} s in the job)",
        elapsed.as_secs_f64(),
        stats.wall_time.as_secs_f64()
    );
    println!("threads:  {threads}");
    println!("chunks:   {}", stats.chunks_run);
    if stats.chunks_on_gpu > 0 {
        println!("on GPUs:  {} chunks", stats.chunks_on_gpu);
    }
    println!("produced: {} bytes", stats.bytes_produced);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_plain_and_scientific() {
        assert_eq!(parse_count("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_count("2.5e7"), Ok(25_000_000));
        assert_eq!(parse_count("10000"), Ok(10_000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("x").is_err());
    }

    #[test]
    fn byte_sizes_parse_with_suffixes() {
        assert_eq!(parse_bytes("33554432"), Ok(32 << 20));
        assert_eq!(parse_bytes("32M"), Ok(32 << 20));
        assert_eq!(parse_bytes("32MiB"), Ok(32 << 20));
        assert_eq!(parse_bytes("32mb"), Ok(32 << 20));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("1e8"), Ok(100_000_000));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("12Q").is_err());
        assert!(parse_bytes("M").is_err());
        assert!(parse_bytes("0.3").is_err());
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(32 << 20), "32.0 MiB");
    }

    #[test]
    fn keyed_tables_are_seeded() {
        let dir = std::env::temp_dir().join(format!("tessera-keyed-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (a, written) = keyed_csv(&dir, 1000, 10).expect("written");
        assert!(written);
        let (b, again) = keyed_csv(&dir, 1000, 10).expect("found");
        assert!(!again && a == b);
        let text = std::fs::read_to_string(&a).expect("read");
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("k,v1,v2,v3"));
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 1000);
        for r in rows {
            let f: Vec<&str> = r.split(',').collect();
            assert!(f[0].parse::<u64>().expect("k") < 10);
            assert!((1..=100).contains(&f[1].parse::<u64>().expect("v1")));
            assert_eq!((f[2].parse::<f64>().expect("v2") * 4.0).fract(), 0.0);
        }
        std::fs::remove_dir_all(&dir).expect("cleaned");
    }
}
