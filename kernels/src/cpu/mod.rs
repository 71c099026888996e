//! CPU implementations of the chunk ops.

pub mod philox;
pub mod vmath;

use crate::{ChunkData, ChunkOp, KernelError};
use std::sync::Arc;

/// Runs one chunk op on the calling thread.
pub fn execute(op: &ChunkOp, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let _ = (op, inputs);
    Err(KernelError::BadInput("not yet implemented".into()))
}
