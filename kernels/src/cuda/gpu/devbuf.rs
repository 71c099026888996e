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

    /// `len` elements left unset, for a kernel that writes every one of them: no memset
    /// on the stream. An empty buffer is one zeroed element instead (a zero-length
    /// allocation is not a valid pointer, and the element may be copied back).
    ///
    /// # Safety
    /// Every one of the `len` elements must be written on the device before the buffer is
    /// read (copied back or passed to a kernel that reads it): reading an unset element is
    /// undefined (a `bool` that is neither 0 nor 1).
    pub(super) unsafe fn alloc_unset(
        stream: &Arc<CudaStream>,
        dtype: DType,
        len: usize,
    ) -> Result<DevBuf, DriverError> {
        if len == 0 {
            return Ok(match dtype {
                DType::Bool => DevBuf::Bool(stream.alloc_zeros(1)?),
                DType::U8 => DevBuf::U8(stream.alloc_zeros(1)?),
                DType::I32 => DevBuf::I32(stream.alloc_zeros(1)?),
                DType::I64 => DevBuf::I64(stream.alloc_zeros(1)?),
                DType::F32 => DevBuf::F32(stream.alloc_zeros(1)?),
                DType::F64 => DevBuf::F64(stream.alloc_zeros(1)?),
            });
        }
        // SAFETY: the caller writes every element before any is read (this fn's contract).
        Ok(unsafe {
            match dtype {
                DType::Bool => DevBuf::Bool(stream.alloc(len)?),
                DType::U8 => DevBuf::U8(stream.alloc(len)?),
                DType::I32 => DevBuf::I32(stream.alloc(len)?),
                DType::I64 => DevBuf::I64(stream.alloc(len)?),
                DType::F32 => DevBuf::F32(stream.alloc(len)?),
                DType::F64 => DevBuf::F64(stream.alloc(len)?),
            }
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
