//! Merging partial reductions (one level of a reduction tree) and finishing them.

use super::reduce::Accumulator;
use crate::chunk::{ChunkData, Partial};
use crate::expr::CombineSpec;
use crate::KernelError;
use std::sync::Arc;

/// Merges the partials in `inputs`; finishes them into a tensor when `spec.finalize` is set.
pub(crate) fn run(spec: &CombineSpec, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let (first, rest) = inputs
        .split_first()
        .ok_or_else(|| KernelError::BadInput("combine without inputs".into()))?;
    let first = partial(spec, first)?;
    let mut acc = Accumulator::from_partial(first)?;
    for c in rest {
        acc.merge(partial(spec, c)?)?;
    }
    match &spec.finalize {
        Some(shape) => Ok(ChunkData::Tensor(acc.finish(shape.clone())?)),
        None => {
            let shape = first
                .parts
                .first()
                .map(|t| t.shape().to_vec())
                .unwrap_or_default();
            Ok(ChunkData::Partial(acc.into_partial(&shape)?))
        }
    }
}

fn partial<'a>(spec: &CombineSpec, c: &'a ChunkData) -> Result<&'a Partial, KernelError> {
    match c {
        ChunkData::Partial(p) if p.op == spec.op && p.input_dtype == spec.input_dtype => Ok(p),
        _ => Err(KernelError::BadInput(format!(
            "combine of {} got a chunk that is not its partial",
            spec.op.name()
        ))),
    }
}
