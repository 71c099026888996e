//! Small graphs, chunks and put descriptions for tests, here and in the crates above
//! (the `testing` feature).

// Fixed, valid values: building them cannot fail.
#![allow(clippy::unwrap_used)]

use crate::graph::{ChunkGraph, ChunkKey, ChunkTask};
use crate::storage::PutInfo;
use std::sync::Arc;
use tessera_kernels::{
    Buffer, ChunkData, ChunkOp, DType, FusedKernel, HostTensor, Instr, InstrKind, LeafSource,
    Scalar,
};

/// A fused op producing a `[len]` i64 tensor of `value`s.
pub fn const_op(value: i64, len: usize) -> ChunkOp {
    ChunkOp::Fused(FusedKernel {
        instrs: vec![Instr {
            shape: vec![len],
            dtype: DType::I64,
            kind: InstrKind::Leaf(LeafSource::Const(Scalar::I64(value))),
        }],
        root: 0,
        reduce: None,
    })
}

/// A graph from `(key, inputs)` pairs (every op a constant) and output keys.
pub fn graph(tasks: &[(u64, &[u64])], outputs: &[u64]) -> ChunkGraph {
    ChunkGraph {
        tasks: tasks
            .iter()
            .map(|&(key, inputs)| {
                ChunkTask::new(
                    ChunkKey(key),
                    const_op(1, 1),
                    inputs.iter().map(|&k| ChunkKey(k)).collect(),
                )
            })
            .collect(),
        outputs: outputs.iter().map(|&k| ChunkKey(k)).collect(),
        ..Default::default()
    }
}

/// `graph`, with task `key` split into the parts `parts`.
pub fn split(mut g: ChunkGraph, key: u64, parts: &[u64]) -> ChunkGraph {
    if let Some(t) = g.tasks.iter_mut().find(|t| t.key == ChunkKey(key)) {
        t.parts = parts.iter().map(|&k| ChunkKey(k)).collect();
    }
    g
}

/// What a test puts with a chunk: its op, next use and sharing, with nothing said of
/// recomputing it.
pub fn info(op: &'static str, next_use: u64, shared: bool) -> PutInfo {
    PutInfo {
        op,
        next_use,
        shared,
        recompute: None,
    }
}

/// A chunk of `n` i64 values (8·n bytes).
pub fn chunk(n: usize) -> Arc<ChunkData> {
    Arc::new(ChunkData::Tensor(
        HostTensor::new(vec![n], Buffer::I64(vec![7; n])).unwrap(),
    ))
}
