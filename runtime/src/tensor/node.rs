//! The lazy graph: each [`Node`] is one logical tensor operation with a known shape and dtype.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_kernels::{
    AxisMap, BinaryOp, ChunkData, DType, Distribution, ReduceOp, Scalar, UnaryOp,
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
    pub chunks: Vec<Arc<ChunkData>>,
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
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Node {
    /// A new node with a fresh id.
    pub fn new(shape: Vec<usize>, dtype: DType, kind: NodeKind) -> Arc<Node> {
        Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
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
}
