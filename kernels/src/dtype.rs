//! Element types and scalar values, with NumPy's promotion rules.

use crate::complex::{C128, C64};
use crate::tensor::Element;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum DType {
    /// `bool`
    Bool,
    /// `u8`
    U8,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `complex64`: two `f32`s
    C64,
    /// `complex128`: two `f64`s
    C128,
}

impl DType {
    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// NumPy's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// Every dtype, in the order NumPy lists them (bool, signed, unsigned, floats, complex).
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// The Arrow type of the same values (Arrow has no complex type: a complex value is a
    /// fixed-size list of its two parts).
    pub fn arrow_type(self) -> arrow::datatypes::DataType {
        use arrow::datatypes::DataType as A;
        match self {
            DType::C64 | DType::C128 => A::new_fixed_size_list(self.real().arrow_type(), 2, false),
            DType::Bool => A::Boolean,
            DType::U8 => A::UInt8,
            DType::I32 => A::Int32,
            DType::I64 => A::Int64,
            DType::F32 => A::Float32,
            DType::F64 => A::Float64,
            DType::I8 => A::Int8,
            DType::I16 => A::Int16,
            DType::U16 => A::UInt16,
            DType::U32 => A::UInt32,
            DType::U64 => A::UInt64,
        }
    }

    /// The dtype of a NumPy name (`"float64"`, `"uint16"`…), if Tessera has it.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// True for `complex64` and `complex128`.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// True for the real and complex floating-point types (the array API's "floating-point").
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The type of a complex type's parts (`complex64` → `float32`); any other type itself.
    pub fn real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex type whose parts are this float type (`float32` → `complex64`; any
    /// other non-complex type → `complex128`).
    pub fn complex(self) -> DType {
        match self {
            DType::F32 | DType::C64 => DType::C64,
            _ => DType::C128,
        }
    }

    /// True for the integer types (not `bool`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned()
    }

    /// True for `int8` to `int64`.
    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// True for `uint8` to `uint64`.
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// The signed integer type of `bytes` bytes (1, 2, 4 or 8).
    fn signed_of(bytes: usize) -> Option<DType> {
        match bytes {
            1 => Some(DType::I8),
            2 => Some(DType::I16),
            4 => Some(DType::I32),
            8 => Some(DType::I64),
            _ => None,
        }
    }

    /// The common type of two array operands: NumPy's `result_type`, which is the array
    /// API's promotion table where that defines one (`uint8` with `int8` is `int16`…).
    /// `uint64` with a signed integer is `float64` (NumPy's answer; the standard leaves
    /// it open), as is an integer wider than 16 bits with `float32`.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        let bytes = |d: DType| d.size_bytes();
        match (a, b) {
            (x, y) if x == y => x,
            (Bool, y) | (y, Bool) => y,
            (x, y) if x.is_complex() || y.is_complex() => {
                // The complex type whose parts hold both: the promotion of the parts.
                DType::promote(x.real(), y.real()).complex()
            }
            (F64, _) | (_, F64) => F64,
            (F32, i) | (i, F32) => {
                if bytes(i) <= 2 {
                    F32
                } else {
                    F64
                }
            }
            (x, y) if x.is_unsigned() == y.is_unsigned() => {
                if bytes(x) >= bytes(y) {
                    x
                } else {
                    y
                }
            }
            (x, y) => {
                let (u, s) = if x.is_unsigned() { (x, y) } else { (y, x) };
                if bytes(s) > bytes(u) {
                    s
                } else {
                    DType::signed_of(2 * bytes(u)).unwrap_or(F64)
                }
            }
        }
    }

    /// The type floating-point functions (`sqrt`, `exp`, true division…) return for this
    /// input: complex types and `float32` keep theirs, any other is `float64`.
    pub fn float_result(self) -> DType {
        match self {
            DType::F32 | DType::C64 | DType::C128 => self,
            _ => DType::F64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A single value of some [`DType`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An unsigned byte.
    U8(u8),
    /// A 32-bit integer.
    I32(i32),
    /// A 64-bit integer.
    I64(i64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// An 8-bit integer.
    I8(i8),
    /// A 16-bit integer.
    I16(i16),
    /// A 16-bit unsigned integer.
    U16(u16),
    /// A 32-bit unsigned integer.
    U32(u32),
    /// A 64-bit unsigned integer.
    U64(u64),
    /// A complex number of two 32-bit floats.
    C64(C64),
    /// A complex number of two 64-bit floats.
    C128(C128),
}

/// Runs `$body` with `$v` bound to the value inside a [`Scalar`].
macro_rules! with_scalar {
    ($s:expr, $v:ident => $body:expr) => {
        match $s {
            Scalar::Bool($v) => $body,
            Scalar::U8($v) => $body,
            Scalar::I32($v) => $body,
            Scalar::I64($v) => $body,
            Scalar::F32($v) => $body,
            Scalar::F64($v) => $body,
            Scalar::I8($v) => $body,
            Scalar::I16($v) => $body,
            Scalar::U16($v) => $body,
            Scalar::U32($v) => $body,
            Scalar::U64($v) => $body,
            Scalar::C64($v) => $body,
            Scalar::C128($v) => $body,
        }
    };
}

impl Scalar {
    /// The value's type.
    pub fn dtype(self) -> DType {
        with_scalar!(self, v => dtype_of(v))
    }

    /// The value as `f64` (`true` is 1; a complex value's real part).
    pub fn as_f64(self) -> f64 {
        with_scalar!(self, v => v.to_f64())
    }

    /// The value as `i64` (floats truncate toward zero, as NumPy's `astype` does; a
    /// `uint64` above `i64::MAX` wraps).
    pub fn as_i64(self) -> i64 {
        with_scalar!(self, v => v.to_i64())
    }

    /// The value converted to `dtype` with NumPy's `astype` semantics (the elementwise
    /// kernels' conversion, value for value).
    pub fn cast(self, dtype: DType) -> Scalar {
        fn to<U: Element>(s: Scalar) -> Scalar {
            with_scalar!(s, v => crate::cpu::elementwise::convert::<_, U>(v).into())
        }
        match dtype {
            DType::Bool => to::<bool>(self),
            DType::U8 => to::<u8>(self),
            DType::I32 => to::<i32>(self),
            DType::I64 => to::<i64>(self),
            DType::F32 => to::<f32>(self),
            DType::F64 => to::<f64>(self),
            DType::I8 => to::<i8>(self),
            DType::I16 => to::<i16>(self),
            DType::U16 => to::<u16>(self),
            DType::U32 => to::<u32>(self),
            DType::U64 => to::<u64>(self),
            DType::C64 => to::<C64>(self),
            DType::C128 => to::<C128>(self),
        }
    }
}

fn dtype_of<T: Element>(_: T) -> DType {
    T::DTYPE
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        with_scalar!(self, v => write!(f, "{v}"))
    }
}

macro_rules! scalar_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Scalar {
            fn from(v: $t) -> Self {
                Scalar::$v(v)
            }
        }
    )*};
}
scalar_from!(
    bool => Bool, u8 => U8, i32 => I32, i64 => I64, f32 => F32, f64 => F64,
    i8 => I8, i16 => I16, u16 => U16, u32 => U32, u64 => U64, C64 => C64, C128 => C128
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_numpy() {
        use DType::*;
        assert_eq!(DType::promote(U8, I32), I32);
        assert_eq!(DType::promote(I32, F32), F64);
        assert_eq!(DType::promote(U8, F32), F32);
        assert_eq!(DType::promote(Bool, I64), I64);
        assert_eq!(DType::promote(I64, F64), F64);
        assert_eq!(DType::promote(F32, F32), F32);
    }

    /// The array API standard's promotion table (2023.12, "Type Promotion Rules") for
    /// every pair of integer types it defines, and NumPy's answer for the mixed kinds.
    #[test]
    fn promotion_follows_the_array_api_table() {
        use DType::*;
        let ints = [I8, I16, I32, I64, U8, U16, U32, U64];
        #[rustfmt::skip]
        let table: [[DType; 8]; 8] = [
            //  i1   i2   i4   i8   u1   u2   u4   u8
            [I8,  I16, I32, I64, I16, I32, I64, F64], // i1
            [I16, I16, I32, I64, I16, I32, I64, F64], // i2
            [I32, I32, I32, I64, I32, I32, I64, F64], // i4
            [I64, I64, I64, I64, I64, I64, I64, F64], // i8
            [I16, I16, I32, I64, U8,  U16, U32, U64], // u1
            [I32, I32, I32, I64, U16, U16, U32, U64], // u2
            [I64, I64, I64, I64, U32, U32, U32, U64], // u4
            [F64, F64, F64, F64, U64, U64, U64, U64], // u8
        ];
        for (a, row) in ints.iter().zip(table) {
            for (b, want) in ints.iter().zip(row) {
                assert_eq!(DType::promote(*a, *b), want, "{a} with {b}");
            }
            assert_eq!(DType::promote(*a, Bool), *a);
            assert_eq!(DType::promote(*a, F64), F64);
            let with_f32 = if a.size_bytes() <= 2 { F32 } else { F64 };
            assert_eq!(DType::promote(F32, *a), with_f32, "{a} with float32");
        }
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        assert_eq!(DType::from_name("complex32"), None);
    }

    /// NumPy's `result_type` with the complex types: the complex type whose parts hold
    /// both operands' parts (`complex64` with `int32` or `float64` is `complex128`).
    #[test]
    fn complex_promotion_follows_numpy() {
        use DType::*;
        for d in [Bool, I8, I16, U8, U16, F32, C64] {
            assert_eq!(DType::promote(C64, d), C64, "complex64 with {d}");
            assert_eq!(DType::promote(d, C64), C64, "{d} with complex64");
        }
        for d in [I32, I64, U32, U64, F64] {
            assert_eq!(DType::promote(C64, d), C128, "complex64 with {d}");
        }
        for d in DType::ALL {
            assert_eq!(DType::promote(d, C128), C128, "{d} with complex128");
        }
        assert_eq!(C64.float_result(), C64);
        assert_eq!(C128.real(), F64);
        assert_eq!(F32.complex(), C64);
        assert_eq!(DType::from_name("complex128"), Some(C128));
    }

    #[test]
    fn casts_to_uint64_keep_values_above_i64() {
        assert_eq!(
            Scalar::F64(1.5e19).cast(DType::U64),
            Scalar::U64(15_000_000_000_000_000_000)
        );
        assert_eq!(Scalar::F64(-1.0).cast(DType::U64), Scalar::U64(u64::MAX));
        assert_eq!(
            Scalar::U64(u64::MAX).cast(DType::F64),
            Scalar::F64(u64::MAX as f64)
        );
        assert_eq!(Scalar::U64(u64::MAX).cast(DType::I8), Scalar::I8(-1));
        assert_eq!(Scalar::I16(-2).cast(DType::U16), Scalar::U16(65534));
        assert_eq!(Scalar::U32(70_000).cast(DType::I16), Scalar::I16(4464));
    }

    #[test]
    fn casts_truncate_like_astype() {
        assert_eq!(Scalar::F64(-2.7).cast(DType::I64), Scalar::I64(-2));
        assert_eq!(Scalar::I64(300).cast(DType::U8), Scalar::U8(44));
        assert_eq!(Scalar::F64(0.5).cast(DType::Bool), Scalar::Bool(true));
    }
}
