//! The peers' result line (`shared/peers/README.md`, "The result line") and the process
//! measurements it carries, read from `/proc`.

use serde::Serialize;
use serde_json::Value;
use std::fs;

/// One timed run, printed as one JSON line with the peers' keys in the peers' order.
#[derive(Debug, Serialize)]
pub struct Record {
    /// Workload name (`pi`, `sincos`, …).
    pub workload: &'static str,
    /// Engine name.
    pub engine: String,
    /// Problem size (`1e8`, `10000x10000`).
    pub size: String,
    /// Wall seconds around building and executing the expression: 4 decimals as the peers
    /// round, or 3 significant digits where that keeps more (a GPU job of a millisecond).
    pub seconds: f64,
    /// Peak resident memory of the process so far, MiB (1 decimal).
    pub peak_rss_mb: f64,
    /// A small value to check the answer.
    pub result_digest: Value,
    /// Index of the run within this process (run 0 includes warm-up).
    pub run: usize,
    /// Resident memory just before the timed region, MiB (1 decimal).
    pub rss_before_mb: f64,
    /// 1-minute load average when the run finished.
    pub load1: f64,
}

impl Record {
    /// The record of run `run` that took `seconds`, with `rss_before_mb` measured before
    /// it; rounds as the peers do and reads the peak memory and load now.
    pub fn measured(
        workload: &'static str,
        engine: String,
        size: String,
        run: usize,
        seconds: f64,
        rss_before_mb: f64,
        result_digest: Value,
    ) -> Record {
        Record {
            workload,
            engine,
            size,
            seconds: round_seconds(seconds),
            peak_rss_mb: round_decimals(peak_rss_mb(), 1),
            result_digest,
            run,
            rss_before_mb: round_decimals(rss_before_mb, 1),
            load1: load1(),
        }
    }

    /// The record as one line of JSON.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// Seconds to 4 decimals, or to 3 significant digits below 0.1 s (the peers' 4 decimals
/// would leave a job of 1.24 ms two digits).
pub fn round_seconds(s: f64) -> f64 {
    if s < 0.1 {
        round_significant(s, 3)
    } else {
        round_decimals(s, 4)
    }
}

/// `x` rounded to `d` decimals (Python's `round(x, d)`: the exact value, correctly rounded).
pub fn round_decimals(x: f64, d: usize) -> f64 {
    format!("{x:.d$}").parse().unwrap_or(x)
}

/// `x` to `d` significant digits (Python's `float(f"{x:.{d}g}")`).
pub fn round_significant(x: f64, d: usize) -> f64 {
    let p = d.saturating_sub(1);
    format!("{x:.p$e}").parse().unwrap_or(x)
}

/// A `kB` field of `/proc/self/status`, in MiB (NaN where it cannot be read).
fn status_mib(field: &str) -> f64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// Peak resident set size (`VmHWM`, what `getrusage` reports as `ru_maxrss`), MiB.
pub fn peak_rss_mb() -> f64 {
    status_mib("VmHWM")
}

/// Current resident set size (`VmRSS`, the same count as the peers' `/proc/self/statm`), MiB.
pub fn rss_mb() -> f64 {
    status_mib("VmRSS")
}

/// The 1-minute load average (first field of `/proc/loadavg`).
pub fn load1() -> f64 {
    let loadavg = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    loadavg
        .split_whitespace()
        .next()
        .and_then(|l| l.parse().ok())
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_round_like_python() {
        assert_eq!(round_decimals(1.234_567_8, 4), 1.2346);
        assert_eq!(round_decimals(0.123_456_78, 4), 0.1235);
        assert_eq!(round_significant(1_100_012_345.6, 5), 1_100_000_000.0);
        assert_eq!(round_significant(0.000_123_456, 5), 0.000_123_46);
        assert_eq!(round_seconds(1.234_567), 1.2346);
        assert_eq!(round_seconds(0.001_234_56), 0.001_23);
        assert_eq!(round_seconds(0.0), 0.0);
    }

    #[test]
    fn proc_readings_are_plausible() {
        let (rss, peak) = (rss_mb(), peak_rss_mb());
        assert!(rss > 0.0 && peak >= rss, "rss {rss} peak {peak}");
        assert!(load1() >= 0.0);
    }
}
