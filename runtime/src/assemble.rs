//! Joining a job's output chunks into one host tensor.

use crate::error::{Error, Result};
use crate::plan::grid::{self, Grid};
use std::sync::Arc;
use tessera_kernels::{c_strides, with_buffer, Buffer, ChunkData, DType, Element, HostTensor};

/// Copies chunks laid out on `grid` (C-order) into one tensor of `shape`.
pub(crate) fn assemble(
    shape: &[usize],
    dtype: DType,
    grid: &Grid,
    chunks: Vec<Arc<ChunkData>>,
) -> Result<HostTensor> {
    let bad = |m: &str| Error::Runtime(format!("job output: {m}"));
    let boxes = grid::chunk_boxes(grid);
    if boxes.len() != chunks.len() {
        return Err(bad("chunk count does not match the grid"));
    }
    if chunks.len() == 1 {
        let only = chunks.into_iter().next().ok_or_else(|| bad("no chunk"))?;
        let t = match Arc::try_unwrap(only) {
            Ok(ChunkData::Tensor(t)) => t,
            Ok(_) => return Err(bad("a partial where a tensor was expected")),
            Err(shared) => shared
                .as_tensor()
                .cloned()
                .ok_or_else(|| bad("a partial where a tensor was expected"))?,
        };
        return t.reshaped(shape.to_vec()).map_err(Error::from);
    }
    let n: usize = shape.iter().product();
    let strides = c_strides(shape);
    let mut out = Buffer::with_capacity(dtype, n);
    with_buffer!(&mut out, o => {
        o.resize(n, Default::default());
        for ((start, ext), chunk) in boxes.iter().zip(&chunks) {
            let t = chunk.as_tensor().ok_or_else(|| bad("a partial where a tensor was expected"))?;
            let src = Element::slice(t.data()).ok_or_else(|| bad("chunk dtype differs"))?;
            copy_box(o, &strides, start, ext, src);
        }
    });
    HostTensor::new(shape.to_vec(), out).map_err(Error::from)
}

/// Copies a C-order block `src` of extent `ext` into `dst` (strides `strides`) at `start`.
fn copy_box<T: Element>(
    dst: &mut [T],
    strides: &[usize],
    start: &[usize],
    ext: &[usize],
    src: &[T],
) {
    let nd = ext.len();
    if nd == 0 {
        dst[0] = src[0];
        return;
    }
    let row = ext[nd - 1];
    let rows = src.len() / row.max(1);
    let mut idx = vec![0usize; nd - 1];
    for r in 0..rows {
        let base: usize = (0..nd - 1)
            .map(|d| (start[d] + idx[d]) * strides[d])
            .sum::<usize>()
            + start[nd - 1];
        dst[base..base + row].copy_from_slice(&src[r * row..(r + 1) * row]);
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            if idx[d] < ext[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
