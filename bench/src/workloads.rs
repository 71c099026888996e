//! The array workloads of the peers' harness (`shared/peers/{pi,sincos,slice_sum}.py`) as
//! Tessera expressions. Random input is drawn inside the expression (seed 42), as the peers
//! draw it inside their timed region.

use crate::record::{round_decimals, round_significant};
use clap::ValueEnum;
use serde_json::Value;
use tessera::tensor::random::default_rng;
use tessera::{DType, HostTensor, Scalar, Slice, Tensor};

/// Seed of every generated input (the peers' `common.SEED`).
pub const SEED: u64 = 42;

/// A workload: builds its expression for a size and digests the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// `4 * mean(sqrt((a**2).sum(axis=1)) < 1)` on an (N, 2) uniform [-1, 1) array.
    #[value(name = "pi")]
    Pi,
    /// `(sin(x)**2 + cos(x)**2 == 1).all()` on an n x n uniform [0, 1) array.
    #[value(name = "sincos")]
    Sincos,
    /// `(x + 1)[::2, ::2].sum()` on an n x n normal(10, 1) array.
    #[value(name = "slice_sum")]
    SliceSum,
}

impl Workload {
    /// The `workload` string of the result line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pi => "pi",
            Workload::Sincos => "sincos",
            Workload::SliceSum => "slice_sum",
        }
    }

    /// The peers' default `--size`.
    pub fn default_size(self) -> usize {
        match self {
            Workload::Pi => 100_000_000,
            Workload::Sincos => 10_000,
            Workload::SliceSum => 20_000,
        }
    }

    /// The `size` string of the result line: points as `1e8`, matrices as `NxN`.
    pub fn size_label(self, n: usize) -> String {
        match self {
            Workload::Pi => fmt_size(n),
            Workload::Sincos | Workload::SliceSum => format!("{n}x{n}"),
        }
    }

    /// The expression for size `n`; `chunk` is the chunk extent along every axis that has
    /// length `n` (rows for `pi`, the side of a square chunk for the matrices).
    pub fn build(self, n: usize, chunk: Option<usize>) -> Tensor {
        let rng = default_rng(SEED);
        let chunked = |t: Tensor, chunks: &[usize]| {
            if chunk.is_some() {
                t.rechunk(chunks)
            } else {
                t
            }
        };
        let c = chunk.unwrap_or(n);
        match self {
            Workload::Pi => {
                let data = chunked(rng.uniform(-1.0, 1.0, &[n, 2]), &[c, 2]);
                let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
                inside.astype(DType::F64) * 4.0 / n as f64
            }
            Workload::Sincos => {
                let x = chunked(rng.random(&[n, n]), &[c, c]);
                (x.sin().pow(2.0) + x.cos().pow(2.0)).eq(1.0).all()
            }
            Workload::SliceSum => {
                let x = chunked(rng.normal(10.0, 1.0, &[n, n]), &[c, c]);
                (x + 1.0)
                    .slice(&[Slice::all().step(2), Slice::all().step(2)])
                    .sum()
            }
        }
    }

    /// The `result_digest` of the peers: pi to 4 decimals, the boolean, the sum to 5
    /// significant digits.
    pub fn digest(self, result: &HostTensor) -> Result<Value, String> {
        let value = result
            .item()
            .ok_or_else(|| format!("{}: the result is not a single value", self.name()))?;
        Ok(match (self, value) {
            (Workload::Pi, v) => Value::from(round_decimals(v.as_f64(), 4)),
            (Workload::Sincos, Scalar::Bool(b)) => Value::from(b),
            (Workload::Sincos, other) => {
                return Err(format!("sincos: expected a boolean, got {other:?}"))
            }
            (Workload::SliceSum, v) => Value::from(round_significant(v.as_f64(), 5)),
        })
    }
}

/// A positive count written plainly (`20000`) or in scientific notation (`1e9`, `2.5e7`).
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

/// The peers' `fmt_size`: one mantissa digit where that is exact (`100000000` -> `1e8`,
/// `20000000` -> `2e7`), else the plain integer (`25000000`).
fn fmt_size(n: usize) -> String {
    let short = format!("{:.0e}", n as f64);
    match short.parse::<f64>() {
        Ok(x) if x == n as f64 => short,
        _ => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_peers() {
        assert_eq!(fmt_size(100_000_000), "1e8");
        assert_eq!(fmt_size(10_000_000_000), "1e10");
        assert_eq!(fmt_size(20_000_000), "2e7");
        assert_eq!(fmt_size(25_000_000), "25000000");
        assert_eq!(fmt_size(138_000), "138000");
        assert_eq!(Workload::SliceSum.size_label(20000), "20000x20000");
    }

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_count("2.5e7"), Ok(25_000_000));
        assert_eq!(parse_count("10000"), Ok(10_000));
        assert!(parse_count("0").is_err());
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("ten").is_err());
        assert!(parse_count("-3").is_err());
    }
}
