//! NumPy's other elementwise functions: integer-style division (`floor_divide`, `remainder`,
//! `fmod`, `divmod`), bitwise operations and shifts, roundings, `clip`, `sign`, the float
//! classifications (`isnan isinf isfinite`) and the trigonometric, hyperbolic and
//! logarithmic functions. Each is one fusable elementwise step (or a few) and follows
//! NumPy 2's type promotion.

use super::ops::{where_, Operand};
use super::Tensor;
use crate::error::Error;
use tessera_kernels::{BinaryOp, DType, UnaryOp};

macro_rules! unary_fns {
    ($($name:ident, $op:expr, $what:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!($what, " (integers give `float64`).")]
            pub fn $name(&self) -> Tensor {
                self.unary($op)
            }
        )*}
    };
}

unary_fns! {
    tan, UnaryOp::Tan, "Tangent";
    arcsin, UnaryOp::Arcsin, "Inverse sine";
    arccos, UnaryOp::Arccos, "Inverse cosine";
    arctan, UnaryOp::Arctan, "Inverse tangent";
    sinh, UnaryOp::Sinh, "Hyperbolic sine";
    cosh, UnaryOp::Cosh, "Hyperbolic cosine";
    tanh, UnaryOp::Tanh, "Hyperbolic tangent";
    log2, UnaryOp::Log2, "Base-2 logarithm";
    log10, UnaryOp::Log10, "Base-10 logarithm";
    log1p, UnaryOp::Log1p, "`ln(1 + self)`, accurate near 0";
    expm1, UnaryOp::Expm1, "`e ** self - 1`, accurate near 0";
    exp2, UnaryOp::Exp2, "`2 ** self`";
    arcsinh, UnaryOp::Arcsinh, "Inverse hyperbolic sine";
    arccosh, UnaryOp::Arccosh, "Inverse hyperbolic cosine (NaN below 1)";
    arctanh, UnaryOp::Arctanh, "Inverse hyperbolic tangent (infinite at ±1, NaN beyond)";
}

macro_rules! binary_fns {
    ($($name:ident, $op:expr, $what:literal;)*) => {
        impl Tensor {$(
            #[doc = $what]
            pub fn $name(&self, rhs: impl Into<Operand>) -> Tensor {
                self.binary($op, rhs)
            }
        )*}
    };
}

binary_fns! {
    floor_divide, BinaryOp::FloorDiv,
        "`self // rhs`, rounded toward minus infinity; integers stay integers and an integer divided by 0 gives 0 (NumPy's result, which also warns).";
    remainder, BinaryOp::Remainder,
        "`self % rhs` with the sign of `rhs` (Python's and NumPy's rule); an integer remainder by 0 is 0.";
    fmod, BinaryOp::Fmod,
        "C's `fmod`: the remainder with the sign of `self`; an integer remainder by 0 is 0.";
    bitwise_and, BinaryOp::BitAnd, "Bitwise and of integers (logical and of bools; floats are an error).";
    bitwise_or, BinaryOp::BitOr, "Bitwise or of integers (logical or of bools; floats are an error).";
    bitwise_xor, BinaryOp::BitXor, "Bitwise exclusive or of integers (of bools too; floats are an error).";
    left_shift, BinaryOp::Shl,
        "`self << rhs` for integers; shifting by the bit width or more, or by a negative amount, gives 0 (NumPy).";
    right_shift, BinaryOp::Shr,
        "Arithmetic `self >> rhs` for integers; shifting by the width or more gives 0, or -1 for negative values (NumPy).";
    arctan2, BinaryOp::Arctan2, "The angle of the point `(rhs, self)` in `[-pi, pi]` (integers give `float64`).";
    hypot, BinaryOp::Hypot, "`sqrt(self² + rhs²)` without undue overflow (integers give `float64`).";
    copysign, BinaryOp::Copysign,
        "The magnitude of `self` with the sign bit of `rhs` (of `-0.0` and a negative NaN too; integers give `float64`).";
    nextafter, BinaryOp::Nextafter,
        "The next representable value after `self` towards `rhs` (`rhs` where they are equal, NaN where either is; integers give `float64`).";
}

impl Tensor {
    /// `(self // rhs, self % rhs)`, NumPy's `divmod`.
    pub fn divmod(&self, rhs: impl Into<Operand>) -> (Tensor, Tensor) {
        let rhs = rhs.into();
        (self.floor_divide(rhs.clone()), self.remainder(rhs))
    }

    /// Bitwise not of integers, logical not of bools (NumPy's `~`, also the `!` operator);
    /// floats are an error.
    pub fn bitwise_not(&self) -> Tensor {
        match self.dtype() {
            Ok(DType::Bool) => self.unary(UnaryOp::Not),
            _ => self.unary(UnaryOp::BitNot),
        }
    }

    /// A rounding of floats; integers are returned as they are (NumPy 2 keeps their dtype).
    fn rounding(&self, op: UnaryOp) -> Tensor {
        match self.dtype() {
            Ok(d) if d.is_int() => self.clone(),
            _ => self.unary(op),
        }
    }

    /// The largest integer not above each value (integers unchanged).
    pub fn floor(&self) -> Tensor {
        self.rounding(UnaryOp::Floor)
    }
    /// The smallest integer not below each value (integers unchanged).
    pub fn ceil(&self) -> Tensor {
        self.rounding(UnaryOp::Ceil)
    }
    /// The integer part, rounding toward zero (integers unchanged).
    pub fn trunc(&self) -> Tensor {
        self.rounding(UnaryOp::Trunc)
    }
    /// The nearest integer, halves to even (integers unchanged).
    pub fn rint(&self) -> Tensor {
        self.rounding(UnaryOp::Rint)
    }
    /// NumPy's `round(x)`: the nearest integer, halves to even (`rint`).
    pub fn round(&self) -> Tensor {
        self.rint()
    }

    /// NumPy's `round(x, decimals)`: `rint(x * 10**d) / 10**d` (for negative `d`,
    /// `rint(x / 10**-d) * 10**-d`), so halves go to even as far as the scaled value is
    /// exact. Integers are unchanged for `d >= 0`; for `d < 0` they are rounded through
    /// `float64` (exact below 2**53) and keep their dtype.
    pub fn round_decimals(&self, decimals: i32) -> Tensor {
        let dtype = match self.dtype() {
            Ok(d) => d,
            Err(e) => return Tensor::failed(e),
        };
        if decimals == 0 {
            return self.round();
        }
        if dtype.is_int() {
            return if decimals > 0 {
                self.clone()
            } else {
                self.astype(DType::F64)
                    .round_decimals(decimals)
                    .astype(dtype)
            };
        }
        let scale = 10f64.powi(decimals.unsigned_abs().min(400) as i32);
        if decimals > 0 {
            self.mul(scale).rint().div(scale)
        } else {
            self.div(scale).rint().mul(scale)
        }
    }

    /// Values limited to `[lo, hi]`: `minimum(maximum(self, lo), hi)` (NaN propagates).
    pub fn clip(&self, lo: impl Into<Operand>, hi: impl Into<Operand>) -> Tensor {
        self.maximum(lo).minimum(hi)
    }

    /// -1, 0 or 1 by the sign of each value (NaN stays NaN; a complex value's is `z / |z|`);
    /// bools are an error.
    pub fn sign(&self) -> Tensor {
        match self.dtype() {
            Ok(DType::Bool) => Tensor::failed(Error::UnsupportedDType {
                op: "sign".into(),
                dtype: DType::Bool,
            }),
            // The array API's sign of a complex value: `z / |z|`, 0 for 0.
            Ok(d) if d.is_complex() => where_(&self.eq(0), 0, self.div(self.abs())),
            // `self + 0` is `+0.0` for `-0.0` (NumPy's sign of either zero) and NaN for NaN.
            _ => where_(&self.gt(0), 1, where_(&self.lt(0), -1, self + 0)),
        }
    }

    /// True where the value is NaN (never for integers or bools).
    pub fn isnan(&self) -> Tensor {
        self.ne(self)
    }

    /// True where the value is infinite (never for integers or bools).
    pub fn isinf(&self) -> Tensor {
        match self.dtype() {
            // A complex value's modulus is infinite where either part is.
            Ok(d) if d.is_inexact() => self.abs().eq(f64::INFINITY),
            _ => self.ne(self),
        }
    }

    /// True where the value is neither NaN nor infinite (always for integers or bools).
    pub fn isfinite(&self) -> Tensor {
        match self.dtype() {
            Ok(d) if d.is_inexact() => self.sub(self).eq(0.0),
            _ => self.eq(self),
        }
    }
}
