//! What Tessera's command-line programs (the examples and `tessera-bench`) share: count
//! arguments in scientific notation, logging to stderr, a job summary, and exiting with a
//! message.

use std::fmt::Display;
use std::process::ExitCode;
use std::time::Duration;
use tessera::JobStats;
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
}
