//! The sequential reference executor: runs a tensor's chunk graph task by task with the
//! CPU kernels on the calling thread, without actors. Tests use it as the reference answer.

use crate::assemble::assemble;
use crate::error::{Error, Result};
use crate::plan;
use crate::tensor::node::Node;
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::{cpu, ChunkOp, HostTensor};

/// Computes `t` sequentially with chunks of about `chunk_bytes`.
pub fn execute_sequential(t: &Tensor, chunk_bytes: usize) -> Result<HostTensor> {
    let node = t.node()?;
    run_tiled(
        node,
        plan::tile(node, plan::TileSettings::unbounded(chunk_bytes))?,
    )
}

/// Runs `node`'s tiled graph task by task on the calling thread.
pub(crate) fn run_tiled(node: &Node, tiled: plan::Tiled) -> Result<HostTensor> {
    let mut done = HashMap::new();
    for task in &tiled.graph.tasks {
        let inputs = task
            .inputs
            .iter()
            .map(|k| {
                done.get(k).cloned().ok_or_else(|| {
                    Error::Runtime(format!("input {k} of chunk {} missing", task.key))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let out = match &task.op {
            ChunkOp::Literal(data) => data.clone(),
            op => Arc::new(
                cpu::execute(op, &inputs).map_err(|cause| Error::ChunkFailed {
                    key: task.key.0,
                    op: op.name().to_string(),
                    cause,
                })?,
            ),
        };
        done.insert(task.key, out);
    }
    let outputs = tiled
        .graph
        .outputs
        .iter()
        .map(|k| {
            done.get(k)
                .cloned()
                .ok_or_else(|| Error::Runtime(format!("output {k} missing")))
        })
        .collect::<Result<Vec<_>>>()?;
    assemble(&node.shape, node.dtype, &tiled.grid, outputs)
}
