//! The array workloads of the peers' harness (`shared/peers/{pi,sincos,slice_sum,svd}.py`)
//! as Tessera expressions. Random input is drawn inside the expression (seed 42), as the
//! peers draw it inside their timed region — except for the SVDs, whose input the peers
//! generate (and Dask persists) before timing: [`Workload::prepare`] persists it.

use crate::record::{round_decimals, round_significant};
use clap::ValueEnum;
use serde_json::Value;
use tessera::tensor::random::default_rng;
use tessera::{linalg, tensor, DType, HostTensor, Scalar, Session, Slice, Tensor};
use tessera_examples::parse_count;

/// Seed of every generated input (the peers' `common.SEED`).
pub const SEED: u64 = 42;

/// `svd_compressed`'s rank, oversampling and power iterations (the peers' `k=10` and Dask's
/// defaults).
pub const COMPRESSED_K: usize = 10;
const COMPRESSED_OVERSAMPLES: usize = 10;
const COMPRESSED_POWER_ITERS: usize = 0;

/// Singular values in an SVD digest (the top ten, 4 significant digits).
const DIGEST_VALUES: usize = 10;

/// A problem size: a count (`1e8` points, `10000` for an n x n matrix) or a matrix shape
/// written `ROWSxCOLS` (`2000000x20`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// The count, or the rows.
    pub rows: usize,
    /// The columns, when the size was written `ROWSxCOLS`.
    pub cols: Option<usize>,
}

impl Size {
    fn count(n: usize) -> Size {
        Size {
            rows: n,
            cols: None,
        }
    }

    fn matrix(rows: usize, cols: usize) -> Size {
        Size {
            rows,
            cols: Some(cols),
        }
    }
}

/// A size written as a count (`20000`, `1e8`) or as `ROWSxCOLS` (`2000000x20`, `1e5x5000`).
pub fn parse_size(s: &str) -> Result<Size, String> {
    match s.split_once(['x', 'X']) {
        Some((r, c)) => Ok(Size::matrix(parse_count(r)?, parse_count(c)?)),
        None => parse_count(s).map(Size::count),
    }
}

/// A workload: builds its expression for a size and digests the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// `4 * mean(sqrt((a**2).sum(axis=1)) < 1)` on an (N, 2) uniform [-1, 1) array.
    #[value(name = "pi")]
    Pi,
    /// `uniform(-1, 1, (N, 2)).max()`: `pi`'s random numbers alone, chunked as `pi` (the
    /// generator's share of `pi`; no peer runs it).
    #[value(name = "pi_rng")]
    PiRng,
    /// `(sin(x)**2 + cos(x)**2 == 1).all()` on an n x n uniform [0, 1) array.
    #[value(name = "sincos")]
    Sincos,
    /// `(x + 1)[::2, ::2].sum()` on an n x n normal(10, 1) array.
    #[value(name = "slice_sum")]
    SliceSum,
    /// Thin SVD (U, S and Vt all computed) of a tall-and-skinny uniform [0, 1) matrix,
    /// persisted before timing (the peers' `svd.py --query tall`).
    #[value(name = "svd_tall")]
    SvdTall,
    /// `svd_compressed(x, k=10, n_power_iter=0, n_oversamples=10)` (U, S and Vt computed)
    /// of a uniform [0, 1) matrix persisted before timing (`svd.py --query compressed`).
    #[value(name = "svd_compressed")]
    SvdCompressed,
    /// `arange(N).sum()` in chunks of `--chunk` elements (default 1): as many tiny tasks as
    /// elements plus the reduction's, to measure the scheduler (tasks per second: its
    /// `--stats` `chunks_run` over the time; `--size 1` is one task's round trip). Tessera's
    /// own; no peer runs it.
    #[value(name = "noop_tasks")]
    NoopTasks,
    /// The result of one chunk of N f64 persisted before timing (`--size 8388608`: 64 MiB),
    /// gathered: on a cluster, one Flight `do_get` from a worker. Tessera's own.
    #[value(name = "gather")]
    Gather,
}

impl Workload {
    /// The `workload` string of the result line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Pi => "pi",
            Workload::PiRng => "pi_rng",
            Workload::Sincos => "sincos",
            Workload::SliceSum => "slice_sum",
            Workload::SvdTall => "svd_tall",
            Workload::SvdCompressed => "svd_compressed",
            Workload::NoopTasks => "noop_tasks",
            Workload::Gather => "gather",
        }
    }

    /// The peers' default `--size`.
    pub fn default_size(self) -> Size {
        match self {
            Workload::Pi | Workload::PiRng => Size::count(100_000_000),
            Workload::Sincos => Size::count(10_000),
            Workload::SliceSum => Size::count(20_000),
            Workload::SvdTall => Size::matrix(2_000_000, 20),
            Workload::SvdCompressed => Size::matrix(100_000, 5_000),
            Workload::NoopTasks => Size::count(10_000),
            Workload::Gather => Size::count(8 << 20),
        }
    }

    /// Checks that `size` fits the workload: a count for `pi`, a side (or a square
    /// `NxN`) for `sincos` and `slice_sum`, `ROWSxCOLS` for the SVDs (tall-and-skinny or
    /// short-and-fat for `svd_tall`, at least `k` on both sides for `svd_compressed`).
    pub fn check_size(self, size: Size) -> Result<(), String> {
        let name = self.name();
        match (self, size.cols) {
            (Workload::Pi | Workload::PiRng | Workload::NoopTasks | Workload::Gather, None) => {
                Ok(())
            }
            (Workload::Pi | Workload::PiRng | Workload::NoopTasks | Workload::Gather, Some(_)) => {
                Err(format!("{name}: --size is a number of elements"))
            }
            (Workload::Sincos | Workload::SliceSum, Some(c)) if c != size.rows => Err(format!(
                "{name}: the matrix is square; give its side (--size {})",
                size.rows
            )),
            (Workload::Sincos | Workload::SliceSum, _) => Ok(()),
            (Workload::SvdTall | Workload::SvdCompressed, None) => Err(format!(
                "{name}: give the matrix shape as ROWSxCOLS (e.g. --size 2000000x20)"
            )),
            (Workload::SvdTall, Some(c)) => {
                if size.rows.min(c) > linalg::MAX_TSQR_COLUMNS {
                    Err(format!(
                        "{name}: {}x{c} is not tall-and-skinny or short-and-fat (one side at most {}); use svd_compressed",
                        size.rows,
                        linalg::MAX_TSQR_COLUMNS
                    ))
                } else {
                    Ok(())
                }
            }
            (Workload::SvdCompressed, Some(c)) => {
                if size.rows.min(c) < COMPRESSED_K {
                    Err(format!(
                        "{name}: both sides must be at least k = {COMPRESSED_K}"
                    ))
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The `size` string of the result line: points as `1e8`, matrices as `ROWSxCOLS`.
    pub fn size_label(self, size: Size) -> String {
        match self {
            Workload::Pi | Workload::PiRng | Workload::NoopTasks | Workload::Gather => {
                fmt_size(size.rows)
            }
            _ => format!("{}x{}", size.rows, size.cols.unwrap_or(size.rows)),
        }
    }

    /// The input generated and kept before timing (the SVDs' persisted matrix, its long
    /// side cut into chunks of `chunk`, or chunked automatically), or `None` for workloads that draw
    /// their input inside the timed region.
    pub fn prepare(
        self,
        session: &Session,
        size: Size,
        chunk: Option<usize>,
    ) -> tessera::Result<Option<Tensor>> {
        match self {
            Workload::SvdTall | Workload::SvdCompressed => {
                let mut x = svd_input(size);
                if let Some(c) = chunk {
                    // Cut the long side (the TSQR's blocks), keep the short one whole.
                    let (m, n) = (size.rows, size.cols.unwrap_or(size.rows));
                    x = x.rechunk(&if m >= n { [c, n] } else { [m, c] });
                }
                x.persist(session).map(Some)
            }
            Workload::Gather => {
                let n = size.rows;
                let x = tensor::arange_f64(0.0, n as f64, 1.0).rechunk(&[n.max(1)]);
                x.persist(session).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The expression for `size`; `chunk` is the chunk extent along every axis that has
    /// length `n` (rows for `pi`, the side of a square chunk for the matrices; the SVDs'
    /// chunks are set by [`Workload::prepare`]), `input` what `prepare` returned (without
    /// it, an SVD draws its input inside the expression).
    ///
    /// The SVDs compute U, S and Vt in one job and return them together, S first: `svd_tall`
    /// as the rows of `[S; U; Vt]`, `svd_compressed` flattened as `[S, U.ravel(), Vt.ravel()]`.
    pub fn build(self, size: Size, chunk: Option<usize>, input: Option<&Tensor>) -> Tensor {
        let n = size.rows;
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
            Workload::PiRng => chunked(rng.uniform(-1.0, 1.0, &[n, 2]), &[c, 2]).max(),
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
            Workload::SvdTall => {
                let x = input.cloned().unwrap_or_else(|| svd_input(size));
                let (u, s, vt) = linalg::svd(&x);
                // U (m x r), Vt (r x n) and S (r) share no side unless one of U's is r.
                match (u.shape(), vt.shape()) {
                    (Ok(us), Ok(vs)) if us[1] == vs[1] => {
                        tensor::concatenate(&[&s.reshape(&[1, -1]), &u, &vt], 0)
                    }
                    _ => flat_concat(&s, &u, &vt),
                }
            }
            Workload::SvdCompressed => {
                let x = input.cloned().unwrap_or_else(|| svd_input(size));
                let (u, s, vt) = linalg::svd_compressed(
                    &x,
                    COMPRESSED_K,
                    COMPRESSED_POWER_ITERS,
                    COMPRESSED_OVERSAMPLES,
                    SEED,
                );
                flat_concat(&s, &u, &vt)
            }
            Workload::NoopTasks => {
                let c = chunk.unwrap_or(1).max(1);
                tensor::arange_f64(0.0, n as f64, 1.0).rechunk(&[c]).sum()
            }
            Workload::Gather => input
                .cloned()
                .unwrap_or_else(|| tensor::arange_f64(0.0, n as f64, 1.0)),
        }
    }

    /// The `result_digest` of the peers: pi to 4 decimals, the boolean, the sum to 5
    /// significant digits, the top ten singular values to 4 significant digits.
    pub fn digest(self, size: Size, result: &HostTensor) -> Result<Value, String> {
        let single = || {
            result
                .item()
                .ok_or_else(|| format!("{}: the result is not a single value", self.name()))
        };
        Ok(match self {
            Workload::Pi | Workload::PiRng => Value::from(round_decimals(single()?.as_f64(), 4)),
            Workload::Sincos => match single()? {
                Scalar::Bool(b) => Value::from(b),
                other => return Err(format!("sincos: expected a boolean, got {other:?}")),
            },
            Workload::SliceSum => Value::from(round_significant(single()?.as_f64(), 5)),
            // Sums of whole numbers below 2^53: exact.
            Workload::NoopTasks => Value::from(single()?.as_f64()),
            Workload::Gather => {
                let values = result.to_f64_vec();
                Value::from(vec![values.len() as f64, values.iter().sum::<f64>()])
            }
            Workload::SvdTall | Workload::SvdCompressed => {
                // S comes first in the result (see `build`).
                let r = match self {
                    Workload::SvdTall => size.rows.min(size.cols.unwrap_or(size.rows)),
                    _ => COMPRESSED_K,
                };
                let values = result.to_f64_vec();
                if values.len() < r {
                    return Err(format!(
                        "{}: the result holds {} values, fewer than S's {r}",
                        self.name(),
                        values.len()
                    ));
                }
                Value::from(
                    values[..r.min(DIGEST_VALUES)]
                        .iter()
                        .map(|&v| round_significant(v, 4))
                        .collect::<Vec<_>>(),
                )
            }
        })
    }
}

/// The SVDs' input: a uniform [0, 1) matrix of `size` (seed 42, as the peers').
fn svd_input(size: Size) -> Tensor {
    default_rng(SEED).random(&[size.rows, size.cols.unwrap_or(size.rows)])
}

/// `[S, U.ravel(), Vt.ravel()]`: the three outputs of an SVD in one tensor.
fn flat_concat(s: &Tensor, u: &Tensor, vt: &Tensor) -> Tensor {
    tensor::concatenate(&[s, &u.reshape(&[-1]), &vt.reshape(&[-1])], 0)
}

/// The peers' `fmt_size`: one mantissa digit where that is exact (`100000000` -> `1e8`,
/// `20000000` -> `2e7`), else the plain integer (`25000000`).
pub(crate) fn fmt_size(n: usize) -> String {
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
        assert_eq!(
            Workload::SliceSum.size_label(Size::count(20000)),
            "20000x20000"
        );
        assert_eq!(
            Workload::SvdTall.size_label(Workload::SvdTall.default_size()),
            "2000000x20"
        );
        assert_eq!(
            Workload::SvdCompressed.size_label(Workload::SvdCompressed.default_size()),
            "100000x5000"
        );
        assert_eq!(parse_size("2000000x20"), Ok(Size::matrix(2_000_000, 20)));
        assert_eq!(parse_size("1e5x5000"), Ok(Size::matrix(100_000, 5_000)));
        assert_eq!(parse_size("1e8"), Ok(Size::count(100_000_000)));
        assert!(parse_size("20x").is_err() && parse_size("0x5").is_err());
        assert!(Workload::SvdTall.check_size(Size::count(20)).is_err());
        assert!(Workload::SvdTall
            .check_size(Size::matrix(5000, 5000))
            .is_err());
        assert!(Workload::SvdTall
            .check_size(Size::matrix(20, 2_000_000))
            .is_ok());
        assert!(Workload::Pi.check_size(Size::matrix(2, 2)).is_err());
        assert!(Workload::Sincos.check_size(Size::matrix(20, 30)).is_err());
    }

    #[test]
    fn svd_workloads_digest_their_singular_values() {
        let session = Session::builder()
            .threads(2)
            .progress(tessera::Progress::Never)
            .build()
            .expect("session");
        for (w, size) in [
            (Workload::SvdTall, Size::matrix(3000, 12)),
            (Workload::SvdTall, Size::matrix(12, 3000)),
            (Workload::SvdCompressed, Size::matrix(400, 300)),
        ] {
            w.check_size(size).expect("size");
            let x = w
                .prepare(&session, size, Some(700))
                .expect("input")
                .expect("an input");
            let result = w
                .build(size, None, Some(&x))
                .execute(&session)
                .expect("runs");
            let (m, n) = (size.rows, size.cols.expect("cols"));
            let r = m.min(n);
            let k = if w == Workload::SvdTall {
                r
            } else {
                COMPRESSED_K
            };
            // S, U and Vt are all there.
            assert_eq!(
                result.to_f64_vec().len(),
                k + m * k + k * n,
                "{w:?} {size:?}"
            );
            let Value::Array(d) = w.digest(size, &result).expect("digest") else {
                panic!("digest is not a list")
            };
            assert_eq!(d.len(), 10);
            let s: Vec<f64> = d.iter().map(|v| v.as_f64().expect("number")).collect();
            assert!(s.windows(2).all(|p| p[0] >= p[1]), "{s:?}");
            // s1 of a uniform [0, 1) matrix is about sqrt(m n / 4).
            let s1 = ((m * n) as f64 / 4.0).sqrt();
            assert!(
                (s[0] / s1 - 1.0).abs() < 0.02,
                "{w:?}: s1 {} vs ~{s1}",
                s[0]
            );
        }
    }
}
