//! Chunk payloads and the chunk-level operation set.

use crate::array::ArrayOp;
use crate::dtype::DType;
use crate::expr::{CombineSpec, FusedKernel, ReduceOp, ReshapeSpec};
use crate::frame::join::HashedSide;
use crate::frame::ops::FrameOp;
use crate::frame::table::batch_bytes;
use crate::linalg::LinalgOp;
use crate::tensor::HostTensor;
use arrow::array::RecordBatch;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The partial state of a reduction over part of the data, merged by [`ChunkOp::Combine`].
///
/// Parts by op: Sum/Prod/Min/Max/All/Any/CountNonzero `[acc]`; Mean `[sum, count]`;
/// Var/Std `[count, mean, m2]`; ArgMin/ArgMax `[value, index]`. Every part has the shape
/// of the output without the reduced axes (counts are per element too).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Partial {
    /// The reduction.
    pub op: ReduceOp,
    /// The dtype of the values that were reduced.
    pub input_dtype: DType,
    /// The state tensors (see the type's docs).
    pub parts: Vec<HostTensor>,
}

/// What a chunk holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ChunkData {
    /// A block of a tensor.
    Tensor(HostTensor),
    /// A partial reduction.
    Partial(Partial),
    /// Several tensors produced together (the factors of a QR or an SVD).
    Parts(Vec<HostTensor>),
    /// A block of rows of a dataframe (or a groupby partial).
    Table(#[serde(with = "crate::frame::table::ipc_one")] RecordBatch),
    /// A table cut into parts (a hash partition, read part by part by later tasks).
    Tables(#[serde(with = "crate::frame::table::ipc_many")] Vec<RecordBatch>),
    /// A table hashed on join keys, probed by the joins that read it.
    Hashed(HashedSide),
}

impl ChunkData {
    /// Bytes held.
    pub fn nbytes(&self) -> usize {
        match self {
            ChunkData::Tensor(t) => t.nbytes(),
            ChunkData::Partial(p) => p.parts.iter().map(HostTensor::nbytes).sum(),
            ChunkData::Parts(parts) => parts.iter().map(HostTensor::nbytes).sum(),
            ChunkData::Table(t) => batch_bytes(t),
            ChunkData::Tables(parts) => parts.iter().map(batch_bytes).sum(),
            ChunkData::Hashed(h) => h.nbytes(),
        }
    }

    /// What kind of chunk this is, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            ChunkData::Tensor(_) => "tensor",
            ChunkData::Partial(_) => "partial reduction",
            ChunkData::Parts(_) => "multi-part tensor",
            ChunkData::Table(_) => "table",
            ChunkData::Tables(_) => "partitioned table",
            ChunkData::Hashed(_) => "hashed join side",
        }
    }

    /// The tensor, if this chunk is one.
    pub fn as_tensor(&self) -> Option<&HostTensor> {
        match self {
            ChunkData::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// One chunk-level operation: what a chunk task runs on a device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ChunkOp {
    /// A fused elementwise program, optionally ending in a reduction.
    Fused(FusedKernel),
    /// Merge partial reductions.
    Combine(CombineSpec),
    /// Gather a reshape.
    Reshape(ReshapeSpec),
    /// Dense linear algebra on blocks.
    Linalg(LinalgOp),
    /// Scans, sorts, gathers, membership and distinct values.
    Array(ArrayOp),
    /// A dataframe op.
    Frame(FrameOp),
    /// Data the user supplied (or an earlier step computed). Devices hand the same `Arc`
    /// on; [`crate::cpu::execute`] alone, having to return an owned chunk, copies it.
    Literal(Arc<ChunkData>),
}

impl ChunkOp {
    /// A short name for logs, statistics and fault injection.
    pub fn name(&self) -> &'static str {
        match self {
            ChunkOp::Fused(k) if k.reduce.is_some() => "fused_reduce",
            ChunkOp::Fused(_) => "fused",
            ChunkOp::Combine(_) => "combine",
            ChunkOp::Reshape(_) => "reshape",
            ChunkOp::Literal(_) => "literal",
            ChunkOp::Linalg(op) => op.name(),
            ChunkOp::Array(op) => op.name(),
            ChunkOp::Frame(op) => op.name(),
        }
    }

    /// The new bytes this op allocates for its chunk, where the op alone says: an
    /// elementwise program's output, nothing for literal data (it exists already); `None`
    /// where it depends on the inputs or the data.
    pub fn output_bytes_hint(&self) -> Option<u64> {
        match self {
            ChunkOp::Fused(k) if k.reduce.is_none() => {
                let root = k.instrs.get(k.root)?;
                let numel = root
                    .shape
                    .iter()
                    .try_fold(1u64, |n, &d| n.checked_mul(d as u64))?;
                numel.checked_mul(root.dtype.size_bytes() as u64)
            }
            ChunkOp::Literal(_) => Some(0),
            _ => None,
        }
    }

    /// True when the output holds about all of its inputs' rows (a frame op: a shuffle merge,
    /// a concat, a join, a sort), so that the inputs' sum, not the largest of them, bounds
    /// its size when the planner reserves memory for it.
    pub fn gathers_inputs(&self) -> bool {
        matches!(self, ChunkOp::Frame(_))
    }

    /// The bytes of this op's output from inputs of `input_bytes`: what the op says
    /// ([`ChunkOp::output_bytes_hint`]), else the sum of the inputs for an op that gathers
    /// them (a shuffle merge of many parts), else the largest input (elementwise ops produce
    /// about a chunk, reductions less); `None` with neither a hint nor inputs. Memory
    /// reservations, the host's and a GPU's, are sized by this rule.
    pub fn output_estimate(&self, input_bytes: impl IntoIterator<Item = u64>) -> Option<u64> {
        if let Some(bytes) = self.output_bytes_hint() {
            return Some(bytes);
        }
        let mut sizes = input_bytes.into_iter().peekable();
        sizes.peek()?;
        Some(if self.gathers_inputs() {
            sizes.sum()
        } else {
            sizes.max().unwrap_or(0)
        })
    }

    /// The bytes this op's kernel holds while it runs beyond its inputs and its output,
    /// from inputs of `input_bytes`: for a dataframe op what [`FrameOp::working_estimate`]
    /// says; a copy of the block for a QR; for a range QR its `Yᵀ x` and projection (each
    /// the size of `omega`) and a panel of `x`; nothing for the rest (elementwise programs
    /// stream through blocks, products write their output in place). Reservations for
    /// running tasks add it to [`ChunkOp::output_estimate`].
    pub fn working_estimate(&self, input_bytes: impl IntoIterator<Item = u64>) -> u64 {
        let mut sizes = input_bytes.into_iter();
        match self {
            ChunkOp::Frame(op) => op.working_estimate(sizes.sum()),
            ChunkOp::Linalg(LinalgOp::Qr(_)) => sizes.sum(),
            ChunkOp::Linalg(LinalgOp::RangeQr { omega, .. }) => sizes
                .nth(omega.input)
                .unwrap_or(0)
                .saturating_mul(2)
                .saturating_add(crate::linalg::RANGE_PANEL_BYTES as u64),
            _ => 0,
        }
    }
}
