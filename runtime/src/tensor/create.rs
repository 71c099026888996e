//! Creation functions: constants, ranges and tensors from host data.

use super::node::{Node, NodeKind, Stored, StoredChunks};
use super::Tensor;
use crate::error::{Error, Result};
use std::sync::Arc;
use tessera_kernels::{checked_numel, ChunkData, DType, Element, HostTensor, Scalar};

/// Checks that the element and byte counts of `shape` fit (zero extents are allowed).
pub(crate) fn check_shape(shape: &[usize], dtype: DType) -> Result<()> {
    let n = checked_numel(shape)
        .map_err(|_| Error::Overflow(format!("shape {shape:?} has too many elements")))?;
    n.checked_mul(dtype.size_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::Overflow(format!(
                "shape {shape:?} of {dtype} needs more bytes than fit in memory"
            ))
        })?;
    Ok(())
}

fn source(shape: &[usize], dtype: DType, kind: NodeKind) -> Tensor {
    match check_shape(shape, dtype) {
        Ok(()) => Tensor::from_node(Node::new(shape.to_vec(), dtype, kind)),
        Err(e) => Tensor::failed(e),
    }
}

/// A tensor of `shape` filled with `value` (its dtype is the value's).
pub fn full(shape: &[usize], value: impl Into<Scalar>) -> Tensor {
    let value = value.into();
    source(shape, value.dtype(), NodeKind::Full(value))
}

/// Zeros of `dtype`.
pub fn zeros(shape: &[usize], dtype: DType) -> Tensor {
    full(shape, Scalar::I64(0).cast(dtype))
}

/// Ones of `dtype`.
pub fn ones(shape: &[usize], dtype: DType) -> Tensor {
    full(shape, Scalar::I64(1).cast(dtype))
}

/// `int64` values `start, start + step, …` below `stop` (above, for a negative step).
pub fn arange(start: i64, stop: i64, step: i64) -> Tensor {
    if step == 0 {
        return Tensor::failed(Error::InvalidArgument(
            "arange step must not be zero".into(),
        ));
    }
    let span = i128::from(stop) - i128::from(start);
    let n = ((span + i128::from(step) - i128::from(step.signum())) / i128::from(step)).max(0);
    let Ok(n) = usize::try_from(n) else {
        return Tensor::failed(Error::Overflow(format!("arange({start}, {stop}, {step})")));
    };
    source(
        &[n],
        DType::I64,
        NodeKind::Ramp {
            start: Scalar::I64(start),
            step: Scalar::I64(step),
            pin: None,
        },
    )
}

/// `float64` values `start + i * step` below `stop` (NumPy's `arange` with floats).
pub fn arange_f64(start: f64, stop: f64, step: f64) -> Tensor {
    if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
        return Tensor::failed(Error::InvalidArgument(format!(
            "arange({start}, {stop}, {step}) needs finite bounds and a non-zero step"
        )));
    }
    let n = ((stop - start) / step).ceil().max(0.0);
    if n > usize::MAX as f64 / 16.0 {
        return Tensor::failed(Error::Overflow(format!("arange({start}, {stop}, {step})")));
    }
    source(
        &[n as usize],
        DType::F64,
        NodeKind::Ramp {
            start: Scalar::F64(start),
            step: Scalar::F64(step),
            pin: None,
        },
    )
}

/// `num` evenly spaced `float64` values from `start` to `stop` inclusive (none for 0).
pub fn linspace(start: f64, stop: f64, num: usize) -> Tensor {
    let step = if num > 1 {
        (stop - start) / (num - 1) as f64
    } else {
        0.0
    };
    let pin = (num > 1).then(|| ((num - 1) as i64, stop));
    source(
        &[num],
        DType::F64,
        NodeKind::Ramp {
            start: Scalar::F64(start),
            step: Scalar::F64(step),
            pin,
        },
    )
}

/// A tensor holding `data` with `shape` (one chunk; use [`Tensor::rechunk`] to cut it).
pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Tensor {
    if let Err(e) = check_shape(shape, T::DTYPE) {
        return Tensor::failed(e);
    }
    match HostTensor::new(shape.to_vec(), T::into_buffer(data)) {
        Ok(t) => from_host(t),
        Err(e) => Tensor::failed(Error::Shape(e.to_string())),
    }
}

/// A tensor holding a copy of `data` with `shape`.
pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Tensor {
    from_vec(data.to_vec(), shape)
}

/// A tensor over already-computed host data, stored as one chunk.
pub(crate) fn from_host(t: HostTensor) -> Tensor {
    let grid = t.shape().iter().map(|&n| vec![n]).collect();
    let (shape, dtype) = (t.shape().to_vec(), t.dtype());
    Tensor::from_node(Node::new(
        shape,
        dtype,
        NodeKind::Data(Stored {
            grid,
            chunks: StoredChunks::Held(vec![Arc::new(ChunkData::Tensor(t))]),
        }),
    ))
}
