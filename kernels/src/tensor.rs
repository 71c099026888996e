//! Host tensors: a shape plus a typed, contiguous (C-order) buffer.

use crate::complex::{Complex, C128, C64};
use crate::dtype::{DType, Scalar};
use crate::error::KernelError;
use serde::{Deserialize, Serialize};

/// A typed, contiguous vector of elements.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Buffer {
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `u8` elements.
    U8(Vec<u8>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
    /// `i8` elements.
    I8(Vec<i8>),
    /// `i16` elements.
    I16(Vec<i16>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `u64` elements.
    U64(Vec<u64>),
    /// `complex64` elements.
    C64(Vec<C64>),
    /// `complex128` elements.
    C128(Vec<C128>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a [`Buffer`] (by value, ref or ref mut).
#[macro_export]
macro_rules! with_buffer {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::Buffer::Bool($v) => $body,
            $crate::Buffer::U8($v) => $body,
            $crate::Buffer::I32($v) => $body,
            $crate::Buffer::I64($v) => $body,
            $crate::Buffer::F32($v) => $body,
            $crate::Buffer::F64($v) => $body,
            $crate::Buffer::I8($v) => $body,
            $crate::Buffer::I16($v) => $body,
            $crate::Buffer::U16($v) => $body,
            $crate::Buffer::U32($v) => $body,
            $crate::Buffer::U64($v) => $body,
            $crate::Buffer::C64($v) => $body,
            $crate::Buffer::C128($v) => $body,
        }
    };
}

impl Buffer {
    /// Elements `range` as a new buffer of the same dtype (`None` past the end).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Option<Buffer> {
        Some(with_buffer!(self, v => Element::into_buffer(v.get(range)?.to_vec())))
    }

    /// An empty buffer of `dtype` with room for `capacity` elements.
    pub fn with_capacity(dtype: DType, capacity: usize) -> Buffer {
        match dtype {
            DType::Bool => Buffer::Bool(Vec::with_capacity(capacity)),
            DType::U8 => Buffer::U8(Vec::with_capacity(capacity)),
            DType::I32 => Buffer::I32(Vec::with_capacity(capacity)),
            DType::I64 => Buffer::I64(Vec::with_capacity(capacity)),
            DType::F32 => Buffer::F32(Vec::with_capacity(capacity)),
            DType::F64 => Buffer::F64(Vec::with_capacity(capacity)),
            DType::I8 => Buffer::I8(Vec::with_capacity(capacity)),
            DType::I16 => Buffer::I16(Vec::with_capacity(capacity)),
            DType::U16 => Buffer::U16(Vec::with_capacity(capacity)),
            DType::U32 => Buffer::U32(Vec::with_capacity(capacity)),
            DType::U64 => Buffer::U64(Vec::with_capacity(capacity)),
            DType::C64 => Buffer::C64(Vec::with_capacity(capacity)),
            DType::C128 => Buffer::C128(Vec::with_capacity(capacity)),
        }
    }

    /// `len` copies of `value` (converted to its own dtype).
    pub fn filled(value: Scalar, len: usize) -> Buffer {
        match value {
            Scalar::Bool(v) => Buffer::Bool(vec![v; len]),
            Scalar::U8(v) => Buffer::U8(vec![v; len]),
            Scalar::I32(v) => Buffer::I32(vec![v; len]),
            Scalar::I64(v) => Buffer::I64(vec![v; len]),
            Scalar::F32(v) => Buffer::F32(vec![v; len]),
            Scalar::F64(v) => Buffer::F64(vec![v; len]),
            Scalar::I8(v) => Buffer::I8(vec![v; len]),
            Scalar::I16(v) => Buffer::I16(vec![v; len]),
            Scalar::U16(v) => Buffer::U16(vec![v; len]),
            Scalar::U32(v) => Buffer::U32(vec![v; len]),
            Scalar::U64(v) => Buffer::U64(vec![v; len]),
            Scalar::C64(v) => Buffer::C64(vec![v; len]),
            Scalar::C128(v) => Buffer::C128(vec![v; len]),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        fn of<T: Element>(_: &[T]) -> DType {
            T::DTYPE
        }
        with_buffer!(self, v => of(v))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        with_buffer!(self, v => v.len())
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every element, keeping the allocation.
    pub fn clear(&mut self) {
        with_buffer!(self, v => v.clear())
    }

    /// Element `i` as a [`Scalar`], or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        with_buffer!(self, v => v.get(i).map(|&x| Scalar::from(x)))
    }

    /// Every element converted to `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_buffer!(self, v => v.iter().map(|&x| x.to_f64()).collect())
    }

    /// The values converted to `dtype` with NumPy's `astype` semantics (a copy).
    pub fn cast(&self, dtype: DType) -> Buffer {
        let mut out = Buffer::with_capacity(dtype, self.len());
        crate::cpu::elementwise::cast(self, self.len(), &mut out);
        out
    }

    /// The values as an Arrow array of [`DType::arrow_type`] (one copy).
    pub fn to_arrow(&self) -> arrow::array::ArrayRef {
        use arrow::array::{BooleanArray, PrimitiveArray};
        use arrow::datatypes as t;
        use std::sync::Arc;
        fn prim<A: t::ArrowPrimitiveType>(v: &[A::Native]) -> arrow::array::ArrayRef {
            Arc::new(PrimitiveArray::<A>::from_iter_values(v.iter().copied()))
        }
        match self {
            Buffer::Bool(v) => Arc::new(BooleanArray::new(v.iter().copied().collect(), None)),
            Buffer::U8(v) => prim::<t::UInt8Type>(v),
            Buffer::I32(v) => prim::<t::Int32Type>(v),
            Buffer::I64(v) => prim::<t::Int64Type>(v),
            Buffer::F32(v) => prim::<t::Float32Type>(v),
            Buffer::F64(v) => prim::<t::Float64Type>(v),
            Buffer::I8(v) => prim::<t::Int8Type>(v),
            Buffer::I16(v) => prim::<t::Int16Type>(v),
            Buffer::U16(v) => prim::<t::UInt16Type>(v),
            Buffer::U32(v) => prim::<t::UInt32Type>(v),
            Buffer::U64(v) => prim::<t::UInt64Type>(v),
            Buffer::C64(v) => complex::<t::Float32Type>(v),
            Buffer::C128(v) => complex::<t::Float64Type>(v),
        }
    }
}

/// Complex values as an Arrow fixed-size list of their two parts (Arrow has no complex type).
fn complex<A: arrow::datatypes::ArrowPrimitiveType>(
    v: &[Complex<A::Native>],
) -> arrow::array::ArrayRef {
    use arrow::array::{FixedSizeListArray, PrimitiveArray};
    use arrow::datatypes::Field;
    use std::sync::Arc;
    let parts = PrimitiveArray::<A>::from_iter_values(v.iter().flat_map(|z| [z.re, z.im]));
    let item = Arc::new(Field::new_list_field(A::DATA_TYPE, false));
    Arc::new(FixedSizeListArray::new(item, 2, Arc::new(parts), None))
}

/// A Rust type that is the storage of one [`DType`].
pub trait Element:
    Copy + PartialOrd + Default + Send + Sync + std::fmt::Debug + Into<Scalar> + 'static
{
    /// The dtype this type stores.
    const DTYPE: DType;
    /// The typed vector inside `buf`, if it holds this type.
    fn slice(buf: &Buffer) -> Option<&[Self]>;
    /// The typed vector inside `buf`, if it holds this type.
    fn vec_mut(buf: &mut Buffer) -> Option<&mut Vec<Self>>;
    /// Wraps a vector of this type.
    fn into_buffer(v: Vec<Self>) -> Buffer;
    /// Converts to `f64` (`true` is 1).
    fn to_f64(self) -> f64;
    /// Converts from `f64` with `astype` semantics (truncation, wrapping for integers).
    fn from_f64(v: f64) -> Self;
    /// Converts to `i64` (truncating floats).
    fn to_i64(self) -> i64;
    /// Converts from `i64` with `astype` semantics (wrapping).
    fn from_i64(v: i64) -> Self;
    /// True for a floating-point NaN (a complex value with a NaN part).
    fn is_nan(self) -> bool;
    /// True unless the value is zero (or `false`).
    fn is_nonzero(self) -> bool;
    /// Converts to `complex128` (a real value with a zero imaginary part).
    #[inline(always)]
    fn to_c128(self) -> C128 {
        C128::new(self.to_f64(), 0.0)
    }
    /// Converts from `complex128` with `astype` semantics (a real type keeps the real part).
    #[inline(always)]
    fn from_c128(v: C128) -> Self {
        Self::from_f64(v.re)
    }
}

/// [`Element`]'s three accessors of the [`Buffer`] variant `$variant`.
macro_rules! buffer_access {
    ($variant:ident) => {
        fn slice(buf: &Buffer) -> Option<&[Self]> {
            match buf {
                Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
        fn vec_mut(buf: &mut Buffer) -> Option<&mut Vec<Self>> {
            match buf {
                Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
        fn into_buffer(v: Vec<Self>) -> Buffer {
            Buffer::$variant(v)
        }
    };
}

macro_rules! complex_element {
    ($t:ty, $variant:ident) => {
        impl Element for Complex<$t> {
            const DTYPE: DType = DType::$variant;
            buffer_access!($variant);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self.re)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                Complex::new(v as $t, 0.0)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self.re as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                Complex::new(v as $t, 0.0)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self.re != 0.0 || self.im != 0.0
            }
            #[inline(always)]
            fn to_c128(self) -> C128 {
                C128::new(f64::from(self.re), f64::from(self.im))
            }
            #[inline(always)]
            fn from_c128(v: C128) -> Self {
                Complex::new(v.re as $t, v.im as $t)
            }
        }
    };
}
complex_element!(f32, C64);
complex_element!(f64, C128);

macro_rules! int_element {
    ($t:ty, $variant:ident) => {
        int_element!($t, $variant, |v: f64| (v as i64) as $t);
    };
    ($t:ty, $variant:ident, $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            buffer_access!($variant);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // NumPy's float -> int cast truncates; out-of-range values wrap through i64.
                $from_f64(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0
            }
        }
    };
}
int_element!(u8, U8);
int_element!(i32, I32);
int_element!(i64, I64);
int_element!(i8, I8);
int_element!(i16, I16);
int_element!(u16, U16);
int_element!(u32, U32);
// Above i64::MAX a float becomes a uint64 directly (NumPy's cast), not through i64.
int_element!(u64, U64, |v: f64| if v >= 0.0 {
    v as u64
} else {
    (v as i64) as u64
});

macro_rules! float_element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            buffer_access!($variant);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn is_nonzero(self) -> bool {
                self != 0.0
            }
        }
    };
}
float_element!(f32, F32);
float_element!(f64, F64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    buffer_access!(Bool);
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn is_nonzero(self) -> bool {
        self
    }
}

/// A tensor in host memory: shape plus C-order data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostTensor {
    shape: Vec<usize>,
    data: Buffer,
}

impl HostTensor {
    /// A tensor from a shape and a buffer whose length is the product of the shape.
    pub fn new(shape: Vec<usize>, data: Buffer) -> Result<HostTensor, KernelError> {
        let expected = checked_numel(&shape)?;
        if expected != data.len() {
            return Err(KernelError::ShapeMismatch(format!(
                "{} values do not fill shape {:?} ({} elements)",
                data.len(),
                shape,
                expected
            )));
        }
        Ok(HostTensor { shape, data })
    }

    /// A 0-dimensional tensor holding one value.
    pub fn scalar(value: Scalar) -> HostTensor {
        HostTensor {
            shape: Vec::new(),
            data: Buffer::filled(value, 1),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tensor holds no element.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes held by the elements.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size_bytes()
    }

    /// The typed buffer.
    pub fn data(&self) -> &Buffer {
        &self.data
    }

    /// Consumes the tensor, returning its buffer.
    pub fn into_data(self) -> Buffer {
        self.data
    }

    /// The elements as a typed slice, if `T` is the tensor's element type.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::slice(&self.data)
    }

    /// The element at a multi-index, or `None` if the index is out of bounds.
    pub fn get(&self, index: &[usize]) -> Option<Scalar> {
        if index.len() != self.shape.len() || index.iter().zip(&self.shape).any(|(i, n)| i >= n) {
            return None;
        }
        let flat = index
            .iter()
            .zip(&self.shape)
            .fold(0usize, |acc, (&i, &n)| acc * n + i);
        self.data.get(flat)
    }

    /// The single value of a tensor with exactly one element.
    pub fn item(&self) -> Option<Scalar> {
        if self.len() == 1 {
            self.data.get(0)
        } else {
            None
        }
    }

    /// Every element converted to `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.data.to_f64_vec()
    }

    /// The same data seen with another shape of the same element count.
    pub fn reshaped(self, shape: Vec<usize>) -> Result<HostTensor, KernelError> {
        HostTensor::new(shape, self.data)
    }
}

/// The number of elements of `shape`, or an error if it overflows `usize`.
pub fn checked_numel(shape: &[usize]) -> Result<usize, KernelError> {
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| KernelError::SizeOverflow(format!("shape {shape:?}")))
}

/// C-order strides (in elements) of `shape`.
pub fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_length_and_get_indexes_c_order() {
        let t = HostTensor::new(vec![2, 3], Buffer::I64((0..6).collect())).unwrap();
        assert_eq!(t.get(&[1, 2]), Some(Scalar::I64(5)));
        assert_eq!(t.get(&[2, 0]), None);
        assert!(HostTensor::new(vec![2, 2], Buffer::I64(vec![1])).is_err());
    }

    #[test]
    fn numel_overflow_is_an_error() {
        assert!(checked_numel(&[usize::MAX, 2]).is_err());
        assert_eq!(c_strides(&[2, 3, 4]), vec![12, 4, 1]);
    }
}
