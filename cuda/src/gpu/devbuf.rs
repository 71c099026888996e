//! Device buffers of every chunk dtype: copied in from host [`Buffer`]s, allocated for
//! outputs, pushed as kernel parameters, copied back.

use super::resident::DeviceBytes;
use super::Gpu;
use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchArgs, PushKernelArg};
use std::sync::Arc;
use tessera_kernels::dtype::DType;
use tessera_kernels::tensor::Buffer;
use tessera_kernels::KernelError;

/// Declares [`DevBuf`] and its conversions from one list of the chunk dtypes: each
/// `Variant(type)` is the [`DType`], [`Buffer`] and `DevBuf` variant of that name.
macro_rules! dev_buffers {
    ($($variant:ident($t:ty)),+ $(,)?) => {
        /// A device buffer of any chunk dtype.
        pub(super) enum DevBuf {
            $(
                #[doc = concat!("`", stringify!($t), "` elements.")]
                $variant(CudaSlice<$t>),
            )+
        }

        impl DevBuf {
            /// A copy of `b` on `gpu`.
            pub(super) fn upload(
                gpu: &Gpu,
                stream: &Arc<CudaStream>,
                b: &Buffer,
            ) -> Result<DevBuf, KernelError> {
                Ok(match b {
                    $(Buffer::$variant(v) => DevBuf::$variant(gpu.to_device(stream, v)?),)+
                    other => return Err(off_device(other.dtype())),
                })
            }

            /// The element type.
            pub(super) fn dtype(&self) -> DType {
                match self {
                    $(DevBuf::$variant(_) => DType::$variant,)+
                }
            }

            /// `len` zeroed elements of `dtype`.
            fn zeros(
                stream: &Arc<CudaStream>,
                dtype: DType,
                len: usize,
            ) -> Result<DevBuf, DriverError> {
                Ok(match dtype {
                    $(DType::$variant => DevBuf::$variant(stream.alloc_zeros(len)?),)+
                    _ => return Err(not_supported()),
                })
            }

            /// `len` unset elements of `dtype`.
            ///
            /// # Safety
            /// As [`DevBuf::alloc_unset`]: every element is written before any is read.
            unsafe fn unset(
                stream: &Arc<CudaStream>,
                dtype: DType,
                len: usize,
            ) -> Result<DevBuf, DriverError> {
                // SAFETY: the caller's contract.
                Ok(match dtype {
                    $(DType::$variant => DevBuf::$variant(unsafe { stream.alloc(len)? }),)+
                    _ => return Err(not_supported()),
                })
            }

            /// The values, copied back from `gpu` (waits for the stream).
            pub(super) fn download(
                &self,
                gpu: &Gpu,
                stream: &Arc<CudaStream>,
            ) -> Result<Buffer, KernelError> {
                Ok(match self {
                    $(DevBuf::$variant(s) => Buffer::$variant(gpu.to_host(stream, s, s.len())?),)+
                })
            }

            /// Pushes the buffer as the launch's next parameter.
            pub(super) fn push<'a>(&'a self, args: &mut LaunchArgs<'a>) {
                match self {
                    $(DevBuf::$variant(s) => {
                        args.arg(s);
                    })+
                }
            }
        }

        impl DeviceBytes for DevBuf {
            fn device_bytes(&self) -> u64 {
                match self {
                    $(DevBuf::$variant(s) => s.device_bytes(),)+
                }
            }
        }
    };
}

/// The complex types have no device buffer: the generator writes no kernel for them
/// (`codegen::generated`), so their tasks stay on the CPU.
fn off_device(dtype: DType) -> KernelError {
    KernelError::UnsupportedDType {
        op: "a GPU buffer".into(),
        dtype,
    }
}

/// [`off_device`] where the allocation returns the driver's error type.
fn not_supported() -> DriverError {
    DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_SUPPORTED)
}

dev_buffers!(
    Bool(bool),
    U8(u8),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    I8(i8),
    I16(i16),
    U16(u16),
    U32(u32),
    U64(u64)
);

impl DevBuf {
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
            return DevBuf::zeros(stream, dtype, 1);
        }
        // SAFETY: the caller writes every element before any is read (this fn's contract).
        unsafe { DevBuf::unset(stream, dtype, len) }
    }

    /// The `f64` slice of `what` (a linear-algebra operand), or `BadInput` naming it where
    /// this holds another dtype.
    pub(super) fn f64_values(&self, what: &str) -> Result<&CudaSlice<f64>, KernelError> {
        match self {
            DevBuf::F64(s) => Ok(s),
            other => Err(KernelError::BadInput(format!(
                "{what}: {} on the device, not f64",
                other.dtype()
            ))),
        }
    }
}
