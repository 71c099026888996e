//! Array operations on whole chunks that are neither elementwise nor reductions: cumulative
//! sums and products, sorting along an axis, gathering by index, membership tests,
//! distinct values, and the passes of nearest neighbours, k-means and logistic regression. [`crate::cpu`] implements them.

use crate::dtype::DType;
use serde::{Deserialize, Serialize};

/// A cumulative operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScanOp {
    /// Running sum (NumPy's `cumsum`).
    Sum,
    /// Running product (NumPy's `cumprod`).
    Prod,
}

impl ScanOp {
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
        }
    }

    /// The dtype values accumulate in: signed integers and bools in `int64`, unsigned
    /// integers in `uint64`, floats and complex values as they are (NumPy's).
    pub fn result_dtype(self, dtype: DType) -> DType {
        match dtype {
            d if d.is_inexact() => dtype,
            d if d.is_unsigned() => DType::U64,
            _ => DType::I64,
        }
    }
}

/// One array operation on chunks (see each variant for its inputs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ArrayOp {
    /// The running `op` along `axis` of input 0, starting from input 1 (the carry: the
    /// chunk's shape without `axis`, in the result dtype) when there is one.
    Scan {
        /// Sum or product.
        op: ScanOp,
        /// The axis the values accumulate along.
        axis: usize,
    },
    /// The carry after a chunk: the `op` of the last input along `axis`, combined with the
    /// carry before it (the first input) when there are two inputs.
    ScanCarry {
        /// Sum or product.
        op: ScanOp,
        /// The axis the values accumulate along.
        axis: usize,
    },
    /// Every lane along `axis` sorted ascending, NaN last, ties in index order (stable);
    /// with `arg`, the `int64` positions that sort it instead of the values.
    Sort {
        /// The axis sorted along (whole in the chunk).
        axis: usize,
        /// Positions instead of values (NumPy's `argsort`).
        arg: bool,
    },
    /// The discrete Fourier transform of every lane along `axis` (whole in the chunk) of a
    /// complex input, unnormalized both ways (the inverse does not divide by the length).
    Fft {
        /// The axis transformed along (whole in the chunk).
        axis: usize,
        /// The inverse transform (`exp(+2πi jk/n)`).
        inverse: bool,
    },
    /// Gathers along `axis`: output position `p` is position `sources[p].1` of input
    /// `sources[p].0` (inputs are chunks that agree on every other axis).
    Take {
        /// The axis gathered along.
        axis: usize,
        /// Per output position: (input, position in that input along `axis`).
        sources: Vec<(u32, u64)>,
    },
    /// `bool`: whether each element of input 0 equals some element of input 1 (compared
    /// in the two dtypes' promoted type; NaN equals nothing), negated with `invert`.
    IsIn {
        /// NumPy's `invert`.
        invert: bool,
    },
    /// The distinct values of all inputs (same dtype), sorted, as one 1-D chunk; NaNs
    /// collapse into one, last (NumPy 2's `unique`, `equal_nan=True`).
    Unique,
    /// Input 0 unchanged if every element of input 1 (`bool`) is true; otherwise the task
    /// fails with `message` (a check that depends on the data, such as an all-NaN slice).
    Require {
        /// Why the data is refused.
        message: String,
    },
    /// The `k` rows of input 0 (a matrix whose rows are numbered from `offset`) nearest to
    /// each row of input 1 (the queries, a matrix of as many columns) by Euclidean
    /// distance, as [`crate::ChunkData::Parts`]: the squared distances (`float64`, queries
    /// × `k`, ascending) and the row numbers (`int64`). Ties go to the lower row number; a
    /// query with fewer than `k` rows at a finite distance gets `inf` and `-1` for the
    /// rest.
    Nearest {
        /// Neighbours per query.
        k: usize,
        /// The number of input 0's first row.
        offset: u64,
    },
    /// The `k` nearest of the [`ArrayOp::Nearest`] results of several row blocks for the
    /// same queries (by distance, then row number), in the same form.
    NearestMerge {
        /// Neighbours per query.
        k: usize,
    },
    /// Each row of input 0 (a matrix) assigned to its nearest row of input 1 (the centres,
    /// as many columns; squared Euclidean distance summed term by term, ties to the lower
    /// centre), as [`crate::ChunkData::Parts`] (`float64`): per centre the sum of its rows
    /// (centres × columns) and their count (centres), and the sum of every row's squared
    /// distance to its centre (one value; NaN where a row has NaN).
    ClusterStats,
    /// Binary logistic regression's data terms at the weights input 2 (a vector of the
    /// columns of input 0, or of one more, the intercept's, as if each row ended in a
    /// one): with `p = 1 / (1 + e^(−a·w))` for each row `a` of input 0 (a matrix) and its
    /// label `y` in input 1 (`0` or `1`, a vector or a column), as
    /// [`crate::ChunkData::Parts`] (`float64`): the gradient `Σ (p − y) a` (weights) and
    /// the Hessian `Σ p (1 − p) a aᵀ` (weights × weights).
    LogisticTerms,
    /// The elementwise sum of several [`ArrayOp::ClusterStats`] or
    /// [`ArrayOp::LogisticTerms`] results (the same number of `float64` parts, of equal
    /// shapes).
    SumParts,
}

impl ArrayOp {
    /// A short name for logs, statistics and fault injection.
    pub fn name(&self) -> &'static str {
        match self {
            ArrayOp::Scan { op, .. } => op.name(),
            ArrayOp::ScanCarry { .. } => "scan_carry",
            ArrayOp::Sort { arg: false, .. } => "sort",
            ArrayOp::Sort { arg: true, .. } => "argsort",
            ArrayOp::Fft { inverse: false, .. } => "fft",
            ArrayOp::Fft { inverse: true, .. } => "ifft",
            ArrayOp::Take { .. } => "take",
            ArrayOp::IsIn { .. } => "isin",
            ArrayOp::Unique => "unique",
            ArrayOp::Require { .. } => "require",
            ArrayOp::Nearest { .. } => "nearest",
            ArrayOp::NearestMerge { .. } => "nearest_merge",
            ArrayOp::ClusterStats => "cluster_stats",
            ArrayOp::LogisticTerms => "logistic_terms",
            ArrayOp::SumParts => "sum_parts",
        }
    }
}
