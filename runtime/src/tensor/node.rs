//! The lazy graph: each [`Node`] is one logical tensor operation with a known shape and dtype.

use crate::kept::Kept;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_actors::DeviceKind;
use tessera_kernels::{
    AxisMap, BinaryOp, ChunkData, DType, Distribution, ReduceOp, Scalar, ScanOp, UnaryOp,
};

/// A logical tensor operation.
#[derive(Debug)]
pub(crate) struct Node {
    /// Unique within the process: identifies the node during tiling.
    pub id: u64,
    /// The tensor's shape.
    pub shape: Vec<usize>,
    /// The element type.
    pub dtype: DType,
    /// The chunk shape the user asked for, if any.
    pub chunks: Option<Vec<usize>>,
    /// What the node computes.
    pub kind: NodeKind,
}

/// Already-computed data: chunks on a regular grid (C-order over the grid).
#[derive(Debug)]
pub(crate) struct Stored {
    /// Chunk extents per axis (Dask's `chunks` tuple).
    pub grid: Vec<Vec<usize>>,
    /// The chunks, in C-order over the grid.
    pub chunks: StoredChunks,
}

/// Where already-computed chunks are.
#[derive(Debug)]
pub(crate) enum StoredChunks {
    /// In host memory, held outside Tessera too (user data, eager results).
    Held(Vec<Arc<ChunkData>>),
    /// Kept in a session's storage by `persist` (spillable), with their lineage.
    Kept(Kept<Node>),
}

/// What a node computes.
#[derive(Debug)]
pub(crate) enum NodeKind {
    /// Values held in memory.
    Data(Stored),
    /// A constant.
    Full(Scalar),
    /// A counter-based random stream.
    Random {
        dist: Distribution,
        seed: u64,
        stream: u64,
    },
    /// `start + step * flat`, with an optional pinned value (linspace's end).
    Ramp {
        start: Scalar,
        step: Scalar,
        pin: Option<(i64, f64)>,
    },
    /// Elementwise function of one operand.
    Unary(UnaryOp, Arc<Node>),
    /// Elementwise function of two operands, broadcast to this node's shape.
    Binary(BinaryOp, Arc<Node>, Arc<Node>),
    /// `cond ? a : b`, broadcast to this node's shape.
    Where(Arc<Node>, Arc<Node>, Arc<Node>),
    /// `x.astype(dtype)`.
    Cast(Arc<Node>),
    /// Slicing, transposing or broadcasting: per input axis, how it is indexed from this
    /// node's multi-index.
    View(Arc<Node>, Vec<AxisMap>),
    /// A reduction over `axes` (sorted).
    Reduce {
        x: Arc<Node>,
        op: ReduceOp,
        axes: Vec<usize>,
        keepdims: bool,
    },
    /// C-order reshape.
    Reshape(Arc<Node>),
    /// Concatenation along `axis`.
    Concat(Vec<Arc<Node>>, usize),
    /// Matrix product of two `f64` matrices.
    MatMul(Arc<Node>, Arc<Node>),
    /// Output `output` of a factorization computed once for all its outputs.
    Factor(Arc<Factorization>, usize),
    /// A running sum or product along `axis`.
    Scan {
        x: Arc<Node>,
        op: ScanOp,
        axis: usize,
    },
    /// Every lane along `axis` sorted (its sorting positions with `arg`).
    Sort {
        x: Arc<Node>,
        axis: usize,
        arg: bool,
    },
    /// The unnormalized discrete Fourier transform (or its inverse) of every lane along
    /// `axis` of a complex `x`.
    Fft {
        x: Arc<Node>,
        axis: usize,
        inverse: bool,
    },
    /// The positions `indices` (in range, non-negative) along `axis`.
    Take {
        x: Arc<Node>,
        axis: usize,
        indices: Arc<Vec<usize>>,
    },
    /// `x`, once every element of `ok` (`bool`, `x`'s shape) is true; otherwise the job
    /// fails with `message`.
    Require {
        x: Arc<Node>,
        ok: Arc<Node>,
        message: &'static str,
    },
    /// `x`, its tasks (those its job adds for it) run on `device`'s kind of device
    /// ([`crate::Tensor::to_backend`]).
    OnDevice { x: Arc<Node>, device: DeviceKind },
    /// Whether each element equals some element of the 1-D `test`.
    IsIn {
        x: Arc<Node>,
        test: Arc<Node>,
        invert: bool,
    },
}

/// A factorization of a tall-and-skinny `f64` matrix by TSQR, or the range of a sketch of
/// a matrix.
#[derive(Debug)]
pub(crate) struct Factorization {
    /// Unique within the process: the factorization is tiled once per job.
    pub id: u64,
    /// What to compute.
    pub kind: FactorKind,
    /// The matrix (m × n; m ≥ n for QR and SVD).
    pub x: Arc<Node>,
}

/// Which factorization.
#[derive(Clone, Debug)]
pub(crate) enum FactorKind {
    /// Outputs Q (m × n) and R (n × n).
    Qr,
    /// Outputs U (m × n), S (n) and Vt (n × n).
    Svd,
    /// Outputs Q (m × l), an orthonormal basis of `x · omega` (`omega` n × l, l ≤ m), and
    /// `P = xᵀ · Q` (n × l): the two passes of a randomized SVD before its small SVD.
    Range {
        /// The test matrix.
        omega: Arc<Node>,
    },
}

/// A fresh id for nodes and factorizations.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Node {
    /// A new node with a fresh id. A node with no elements becomes an empty constant
    /// whatever it computes, so that no chunk task ever sees a zero-size operand: the
    /// constructors whose result has elements while an operand has none (reductions, the
    /// matrix product over an empty inner axis, concatenation) resolve those cases first.
    pub fn new(shape: Vec<usize>, dtype: DType, kind: NodeKind) -> Arc<Node> {
        let kind = if shape.contains(&0) {
            NodeKind::Full(Scalar::I64(0).cast(dtype))
        } else {
            kind
        };
        Arc::new(Node {
            id: next_id(),
            shape,
            dtype,
            chunks: None,
            kind,
        })
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The nodes this one reads (a factorization's matrix for its outputs).
    fn operands(&self) -> Vec<&Arc<Node>> {
        match &self.kind {
            NodeKind::Data(_)
            | NodeKind::Full(_)
            | NodeKind::Random { .. }
            | NodeKind::Ramp { .. } => Vec::new(),
            NodeKind::Unary(_, x)
            | NodeKind::Cast(x)
            | NodeKind::View(x, _)
            | NodeKind::Reduce { x, .. }
            | NodeKind::Reshape(x)
            | NodeKind::Scan { x, .. }
            | NodeKind::Sort { x, .. }
            | NodeKind::Fft { x, .. }
            | NodeKind::Take { x, .. } => vec![x],
            NodeKind::Factor(f, _) => match &f.kind {
                FactorKind::Range { omega } => vec![&f.x, omega],
                FactorKind::Qr | FactorKind::Svd => vec![&f.x],
            },
            NodeKind::Binary(_, a, b) | NodeKind::MatMul(a, b) => vec![a, b],
            NodeKind::Require { x, ok, .. } => vec![x, ok],
            NodeKind::OnDevice { x, .. } => vec![x],
            NodeKind::IsIn { x, test, .. } => vec![x, test],
            NodeKind::Where(c, a, b) => vec![c, a, b],
            NodeKind::Concat(xs, _) => xs.iter().collect(),
        }
    }
}

impl crate::kept::Lineage for Node {
    fn node_id(&self) -> u64 {
        self.id
    }
    fn reads(&self) -> Vec<&Arc<Node>> {
        self.operands()
    }
    fn kept(&self) -> Option<&Kept<Node>> {
        match &self.kind {
            NodeKind::Data(Stored {
                chunks: StoredChunks::Kept(kept),
                ..
            }) => Some(kept),
            _ => None,
        }
    }
}
