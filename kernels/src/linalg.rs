//! The dense linear-algebra chunk ops: block products, QR and SVD of blocks, the pieces of
//! a tall-and-skinny QR (TSQR), and sums. Every operand and result is a 2-D `f64` tensor
//! (1-D for singular values); the runtime casts other dtypes first.

use crate::expr::FusedKernel;
use serde::{Deserialize, Serialize};

/// Bytes of `x` a [`LinalgOp::RangeQr`] reads per panel: small enough to stay in a core's
/// cache between the two products that read it.
pub const RANGE_PANEL_BYTES: usize = 1 << 20;

/// A task input, or a part of a multi-part input, optionally only a range of its rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRef {
    /// Index into the task's inputs.
    pub input: usize,
    /// Which part of a [`crate::ChunkData::Parts`] input (`None`: the input is a tensor).
    pub part: Option<usize>,
    /// Rows `start..start + len` only (`None`: every row).
    pub rows: Option<(usize, usize)>,
}

impl InputRef {
    /// The whole tensor input `input`.
    pub fn whole(input: usize) -> InputRef {
        InputRef {
            input,
            part: None,
            rows: None,
        }
    }

    /// Part `part` of multi-part input `input`.
    pub fn part(input: usize, part: usize) -> InputRef {
        InputRef {
            input,
            part: Some(part),
            rows: None,
        }
    }
}

/// A matrix operand of a product: an input, or a block computed inside the task (a
/// generated or gathered block that is cheaper to recompute than to keep).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MatOperand {
    /// Read from an input.
    Input(InputRef),
    /// Computed by a fused kernel (its leaves read the task's inputs).
    Fused(Box<FusedKernel>),
}

/// One dense linear-algebra chunk op.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LinalgOp {
    /// `Σ_t a_t · b_t` over the pairs (all products must have the same shape).
    MatMul {
        /// The `(a, b)` operand pairs.
        pairs: Vec<(MatOperand, MatOperand)>,
    },
    /// Thin QR of one block `a` (m × n): `Parts[Q (m × r), R (r × n)]` with `r = min(m, n)`,
    /// R upper triangular with a non-negative diagonal. A computed block (the centred data
    /// of a PCA) is evaluated in the task, so it is never a chunk of its own.
    Qr(MatOperand),
    /// Thin QR of the blocks stacked vertically (the R factors of a TSQR level):
    /// `Parts[Q (Σ rows × n), R (n' × n)]`, same conventions as [`LinalgOp::Qr`].
    StackedQr(Vec<InputRef>),
    /// Thin SVD of one block `a` (m × n): `Parts[U (m × r), S (r), Vt (r × n)]`, `r = min(m, n)`,
    /// singular values descending; each singular vector pair's sign is chosen so that the
    /// largest-magnitude entry of the column of U is positive (deterministic results).
    Svd(InputRef),
    /// The range of `x · omega` and `x` projected onto it, in one pass over `x` (the sketch
    /// of a randomized SVD): `Parts[Q (m × r), R (r × l), P = xᵀ · Q (n × r)]` where
    /// `Q · R = x · omega` (`x` m × n, `omega` n × l, `r = min(m, l)`), R as
    /// [`LinalgOp::Qr`]'s. `x` is read a panel of rows at a time, each panel folded into a
    /// running QR while it is still in cache.
    RangeQr {
        /// The matrix, read once.
        x: MatOperand,
        /// The test matrix.
        omega: InputRef,
    },
    /// The referenced (part of an) input as a tensor.
    Take(InputRef),
    /// Elementwise sum of same-shaped operands.
    Sum(Vec<InputRef>),
}

impl LinalgOp {
    /// A short name for logs and statistics.
    pub fn name(&self) -> &'static str {
        match self {
            LinalgOp::MatMul { .. } => "matmul",
            LinalgOp::Qr(_) => "qr",
            LinalgOp::StackedQr(_) => "stacked_qr",
            LinalgOp::Svd(_) => "svd",
            LinalgOp::RangeQr { .. } => "range_qr",
            LinalgOp::Take(_) => "take",
            LinalgOp::Sum(_) => "sum",
        }
    }
}
