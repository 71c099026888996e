//! C-order reshape of a materialized tensor: each output chunk gathers its elements by
//! flat index from the source chunks that hold them.

use super::runs::{advance, unravel};
use crate::chunk::ChunkData;
use crate::expr::ReshapeSpec;
use crate::tensor::{c_strides, checked_numel, Buffer, Element, HostTensor};
use crate::{with_buffer, KernelError};
use std::sync::Arc;

/// Gathers the output chunk `spec` describes.
pub(crate) fn run(spec: &ReshapeSpec, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let bad = |m: String| KernelError::BadInput(m);
    let first = spec
        .chunks
        .first()
        .ok_or_else(|| bad("reshape without source chunks".into()))?;
    let dtype = inputs
        .get(first.input)
        .and_then(|c| c.as_tensor())
        .ok_or_else(|| bad("reshape input is not a tensor".into()))?
        .dtype();
    let n = checked_numel(&spec.out_shape)?;
    let dst_strides = c_strides(&spec.dst_shape);
    let src_shape: &[usize] = if spec.src_shape.is_empty() {
        &[1]
    } else {
        &spec.src_shape
    };
    let last = src_shape.len() - 1;
    let out_shape: &[usize] = if spec.out_shape.is_empty() {
        &[1]
    } else {
        &spec.out_shape
    };
    let mut out = Buffer::with_capacity(dtype, n);
    with_buffer!(&mut out, o => {
        let mut m_out = vec![0usize; out_shape.len()];
        let mut pos = 0;
        while pos < n {
            let run = (out_shape[out_shape.len() - 1] - m_out[m_out.len() - 1]).min(n - pos);
            let flat: usize = m_out
                .iter()
                .zip(spec.out_start.iter().chain(std::iter::repeat(&0)))
                .zip(dst_strides.iter().chain(std::iter::repeat(&1)))
                .map(|((&m, &s0), &st)| (m + s0) * st)
                .sum();
            let mut m_src = unravel(flat, src_shape);
            let mut done = 0;
            while done < run {
                let c = spec
                    .chunks
                    .iter()
                    .find(|c| m_src.iter().zip(c.start.iter().zip(&c.shape)).all(|(&i, (&s, &len))| i >= s && i < s + len))
                    .ok_or_else(|| bad(format!("no reshape input holds index {m_src:?}")))?;
                let t = inputs
                    .get(c.input)
                    .and_then(|x| x.as_tensor())
                    .ok_or_else(|| bad(format!("reshape input {} missing", c.input)))?;
                let data = Element::slice(t.data()).ok_or_else(|| bad("reshape inputs differ in dtype".into()))?;
                // A 0-d source is read as the one-element vector it holds, as above.
                let (c_start, c_shape): (&[usize], &[usize]) = if spec.src_shape.is_empty() {
                    (&[0], &[1])
                } else {
                    (&c.start, &c.shape)
                };
                let cs = c_strides(c_shape);
                let local: usize = m_src.iter().zip(c_start).zip(&cs).map(|((&i, &s), &st)| (i - s) * st).sum();
                let fit = (c_start[last] + c_shape[last] - m_src[last]).min(run - done);
                o.extend_from_slice(data.get(local..local + fit).ok_or_else(|| bad("reshape read past a chunk".into()))?);
                done += fit;
                advance(&mut m_src, src_shape, fit);
            }
            pos += run;
            advance(&mut m_out, out_shape, run);
        }
    });
    Ok(ChunkData::Tensor(HostTensor::new(
        spec.out_shape.clone(),
        out,
    )?))
}
