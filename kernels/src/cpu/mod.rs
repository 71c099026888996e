//! CPU implementations of the chunk ops.

mod array;
mod combine;
mod complex;
pub(crate) mod elementwise;
mod fft;
mod fused;
mod learn;
mod libm;
pub mod linalg;
mod nearest;
pub mod philox;
pub mod reduce;
mod reshape;
mod runs;
pub mod shortcuts;
pub mod vmath;

use crate::{ChunkData, ChunkOp, KernelError};
pub use combine::finish_reduction;
use std::sync::Arc;

/// Runs one chunk op on the calling thread.
pub fn execute(op: &ChunkOp, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    match op {
        ChunkOp::Fused(k) => fused::run(k, inputs),
        ChunkOp::Combine(spec) => combine::run(spec, inputs),
        ChunkOp::Reshape(spec) => reshape::run(spec, inputs),
        ChunkOp::Literal(data) => Ok(data.as_ref().clone()),
        ChunkOp::Linalg(op) => linalg::run(op, inputs),
        ChunkOp::Array(op) => array::run(op, inputs),
        ChunkOp::Frame(op) => crate::frame::ops::run(op, inputs),
    }
}
