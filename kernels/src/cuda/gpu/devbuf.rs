//! Device buffers of every chunk dtype: copied in from host [`Buffer`]s, allocated for
//! outputs, pushed as kernel parameters, copied back.

use crate::dtype::DType;
use crate::tensor::Buffer;
use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchArgs, PushKernelArg};
use std::sync::Arc;

/// A device buffer of any chunk dtype.
pub(super) enum DevBuf {
    Bool(CudaSlice<bool>),
    U8(CudaSlice<u8>),
    I32(CudaSlice<i32>),
    I64(CudaSlice<i64>),
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
}

macro_rules! with_dev {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            DevBuf::Bool($v) => $body,
            DevBuf::U8($v) => $body,
            DevBuf::I32($v) => $body,
            DevBuf::I64($v) => $body,
            DevBuf::F32($v) => $body,
            DevBuf::F64($v) => $body,
        }
    };
}

impl DevBuf {
    pub(super) fn upload(stream: &Arc<CudaStream>, b: &Buffer) -> Result<DevBuf, DriverError> {
        Ok(match b {
            Buffer::Bool(v) => DevBuf::Bool(stream.clone_htod(v)?),
            Buffer::U8(v) => DevBuf::U8(stream.clone_htod(v)?),
            Buffer::I32(v) => DevBuf::I32(stream.clone_htod(v)?),
            Buffer::I64(v) => DevBuf::I64(stream.clone_htod(v)?),
            Buffer::F32(v) => DevBuf::F32(stream.clone_htod(v)?),
            Buffer::F64(v) => DevBuf::F64(stream.clone_htod(v)?),
        })
    }

    /// `len` elements, at least one (a zero-length allocation is not a valid pointer).
    pub(super) fn alloc(
        stream: &Arc<CudaStream>,
        dtype: DType,
        len: usize,
    ) -> Result<DevBuf, DriverError> {
        let n = len.max(1);
        Ok(match dtype {
            DType::Bool => DevBuf::Bool(stream.alloc_zeros(n)?),
            DType::U8 => DevBuf::U8(stream.alloc_zeros(n)?),
            DType::I32 => DevBuf::I32(stream.alloc_zeros(n)?),
            DType::I64 => DevBuf::I64(stream.alloc_zeros(n)?),
            DType::F32 => DevBuf::F32(stream.alloc_zeros(n)?),
            DType::F64 => DevBuf::F64(stream.alloc_zeros(n)?),
        })
    }

    pub(super) fn download(&self, stream: &Arc<CudaStream>) -> Result<Buffer, DriverError> {
        Ok(match self {
            DevBuf::Bool(s) => Buffer::Bool(stream.clone_dtoh(s)?),
            DevBuf::U8(s) => Buffer::U8(stream.clone_dtoh(s)?),
            DevBuf::I32(s) => Buffer::I32(stream.clone_dtoh(s)?),
            DevBuf::I64(s) => Buffer::I64(stream.clone_dtoh(s)?),
            DevBuf::F32(s) => Buffer::F32(stream.clone_dtoh(s)?),
            DevBuf::F64(s) => Buffer::F64(stream.clone_dtoh(s)?),
        })
    }

    pub(super) fn push<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        with_dev!(self, s => { args.arg(s); });
    }

    /// The `f64` slice, if this is one.
    pub(super) fn into_f64(self) -> Option<CudaSlice<f64>> {
        match self {
            DevBuf::F64(s) => Some(s),
            _ => None,
        }
    }
}
