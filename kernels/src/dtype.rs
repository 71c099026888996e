//! Element types and scalar values, with NumPy's promotion rules.

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
}

impl DType {
    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
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
        }
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// True for the integer types (not `bool`).
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I32 | DType::I64)
    }

    /// The common type of two array operands (NumPy's `result_type` for these six types).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        match (a, b) {
            (x, y) if x == y => x,
            (Bool, y) | (y, Bool) => y,
            // NumPy: an int32/int64 with float32 needs float64 to hold every value.
            (F32, I32 | I64) | (I32 | I64, F32) => F64,
            (x, y) => x.max(y),
        }
    }

    /// The type floating-point functions (`sqrt`, `exp`, true division…) return for this input.
    pub fn float_result(self) -> DType {
        match self {
            DType::F32 => DType::F32,
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
}

impl Scalar {
    /// The value's type.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::U8(_) => DType::U8,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// The value as `f64` (`true` is 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(v) => f64::from(u8::from(v)),
            Scalar::U8(v) => f64::from(v),
            Scalar::I32(v) => f64::from(v),
            Scalar::I64(v) => v as f64,
            Scalar::F32(v) => f64::from(v),
            Scalar::F64(v) => v,
        }
    }

    /// The value as `i64` (floats truncate toward zero, as NumPy's `astype` does).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(v) => i64::from(v),
            Scalar::U8(v) => i64::from(v),
            Scalar::I32(v) => i64::from(v),
            Scalar::I64(v) => v,
            Scalar::F32(v) => v as i64,
            Scalar::F64(v) => v as i64,
        }
    }

    /// The value converted to `dtype` with NumPy's `astype` semantics.
    pub fn cast(self, dtype: DType) -> Scalar {
        match dtype {
            DType::Bool => Scalar::Bool(self.as_f64() != 0.0),
            DType::U8 => Scalar::U8(self.as_i64() as u8),
            DType::I32 => Scalar::I32(self.as_i64() as i32),
            DType::I64 => Scalar::I64(self.as_i64()),
            DType::F32 => Scalar::F32(self.as_f64() as f32),
            DType::F64 => Scalar::F64(self.as_f64()),
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::U8(v) => write!(f, "{v}"),
            Scalar::I32(v) => write!(f, "{v}"),
            Scalar::I64(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
        }
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
scalar_from!(bool => Bool, u8 => U8, i32 => I32, i64 => I64, f32 => F32, f64 => F64);

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

    #[test]
    fn casts_truncate_like_astype() {
        assert_eq!(Scalar::F64(-2.7).cast(DType::I64), Scalar::I64(-2));
        assert_eq!(Scalar::I64(300).cast(DType::U8), Scalar::U8(44));
        assert_eq!(Scalar::F64(0.5).cast(DType::Bool), Scalar::Bool(true));
    }
}
