//! Typed loops for one block of elementwise work: unary and binary functions, casts,
//! `where`, and reductions of consecutive runs. Each writes `len` values into `out`
//! (whose variant is the result dtype), reading the first `len` values of its operands.
//!
//! Everything here is `#[inline(always)]` so that the loops are compiled again inside
//! the fused evaluator's AVX2 / AVX-512 entry points.

use super::libm::Hyperbolic;
use super::vmath;
use crate::dtype::DType;
use crate::expr::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::{Buffer, Element};
use crate::{with_buffer, KernelError};

pub(super) fn unsupported(op: &str, dtype: DType) -> KernelError {
    KernelError::UnsupportedDType {
        op: op.to_string(),
        dtype,
    }
}

/// Writes `it` into `out` (resized to its length). Index writes, not `Vec::extend`, so the
/// loop is inlined into (and vectorized for) the evaluator's AVX2 / AVX-512 entry points.
#[inline(always)]
pub(super) fn set<T: Copy + Default>(out: &mut Vec<T>, it: impl ExactSizeIterator<Item = T>) {
    out.resize(it.len(), T::default());
    for (o, v) in out.iter_mut().zip(it) {
        *o = v;
    }
}

/// True for the dtypes whose loops run out of line (int8, int16, uint16, uint32, uint64,
/// and the complex types, whose functions are in [`super::complex`]): each entry point
/// below sends them to one `#[inline(never)]` copy, compiled once, so that the fused evaluator's AVX2 / AVX-512 entry points (which inline
/// everything here) hold loops for the six most used dtypes only — the inlined code, and
/// so the build, would otherwise grow with the square of the dtype count (casts).
#[inline(always)]
fn out_of_line(b: &Buffer) -> bool {
    matches!(
        b,
        Buffer::I8(_)
            | Buffer::I16(_)
            | Buffer::U16(_)
            | Buffer::U32(_)
            | Buffer::U64(_)
            | Buffer::C64(_)
            | Buffer::C128(_)
    )
}

/// [`with_buffer!`] over the six inlined dtypes; `$other` for the out-of-line ones.
macro_rules! with_inlined {
    ($buf:expr, $v:ident => $body:expr, $other:expr) => {
        match $buf {
            Buffer::Bool($v) => $body,
            Buffer::U8($v) => $body,
            Buffer::I32($v) => $body,
            Buffer::I64($v) => $body,
            Buffer::F32($v) => $body,
            Buffer::F64($v) => $body,
            _ => $other,
        }
    };
}

/// Wrapping integer and IEEE float arithmetic.
pub(crate) trait Arith: Element {
    fn add(a: Self, b: Self) -> Self;
    fn sub(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn neg(a: Self) -> Self;
    fn abs(a: Self) -> Self;
}

/// Wrapping arithmetic of integer types; `$abs` is the absolute value of `a`.
macro_rules! int_arith {
    ($abs:expr; $($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)] fn sub(a: Self, b: Self) -> Self { a.wrapping_sub(b) }
            #[inline(always)] fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            #[inline(always)] fn neg(a: Self) -> Self { a.wrapping_neg() }
            #[inline(always)] fn abs(a: Self) -> Self { $abs(a) }
        }
    )*};
}
int_arith!(|a: Self| a.wrapping_abs(); i8, i16, i32, i64);
int_arith!(|a: Self| a; u8, u16, u32, u64);

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(a: Self, b: Self) -> Self { a + b }
            #[inline(always)] fn sub(a: Self, b: Self) -> Self { a - b }
            #[inline(always)] fn mul(a: Self, b: Self) -> Self { a * b }
            #[inline(always)] fn neg(a: Self) -> Self { -a }
            #[inline(always)] fn abs(a: Self) -> Self { a.abs() }
        }
    )*};
}
float_arith!(f32, f64);

/// NaN-propagating maximum (NumPy's `maximum`).
#[inline(always)]
pub(crate) fn nan_max<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a >= b {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum (NumPy's `minimum`).
#[inline(always)]
pub(crate) fn nan_min<T: Element>(a: T, b: T) -> T {
    if a.is_nan() || a <= b {
        a
    } else {
        b
    }
}

/// `astype` for one value.
#[inline(always)]
pub(crate) fn convert<T: Element, U: Element>(t: T) -> U {
    if U::DTYPE == DType::Bool {
        U::from_i64(i64::from(t.is_nonzero()))
    } else if U::DTYPE.is_complex() || T::DTYPE.is_complex() {
        U::from_c128(t.to_c128())
    } else if U::DTYPE.is_float() || T::DTYPE.is_float() {
        U::from_f64(t.to_f64())
    } else {
        U::from_i64(t.to_i64())
    }
}

/// `out = x.astype(out's dtype)` for the first `len` values.
#[inline(always)]
pub(crate) fn cast(x: &Buffer, len: usize, out: &mut Buffer) {
    with_inlined!(x, xs => {
        let xs = &xs[..len];
        with_inlined!(out, o => set(o, xs.iter().map(|&v| convert(v))), cast_out_of_line(x, len, out))
    }, cast_out_of_line(x, len, out))
}

#[inline(never)]
fn cast_out_of_line(x: &Buffer, len: usize, out: &mut Buffer) {
    with_buffer!(x, xs => {
        let xs = &xs[..len];
        with_buffer!(out, o => set(o, xs.iter().map(|&v| convert(v))))
    })
}

#[inline(always)]
fn arith_unary<T: Arith>(op: UnaryOp, x: &[T], out: &mut Vec<T>) -> Result<(), KernelError> {
    match op {
        UnaryOp::Neg => set(out, x.iter().map(|&v| T::neg(v))),
        UnaryOp::Abs => set(out, x.iter().map(|&v| T::abs(v))),
        _ => return Err(unsupported(op.name(), T::DTYPE)),
    }
    Ok(())
}

/// Integer unary functions: the roundings leave integers as they are (NumPy 2).
#[inline(always)]
fn int_unary<T: Arith>(op: UnaryOp, x: &[T], out: &mut Vec<T>) -> Result<(), KernelError> {
    match op {
        UnaryOp::BitNot => set(out, x.iter().map(|&v| T::from_i64(!v.to_i64()))),
        _ if op.is_rounding() => set(out, x.iter().copied()),
        _ => arith_unary(op, x, out)?,
    }
    Ok(())
}

/// Returns from a float unary function after `out = x.map(method)`, the method inlined.
macro_rules! inline {
    ($out:ident, $x:ident, $m:ident) => {{
        set($out, $x.iter().map(|&v| v.$m()));
        return Ok(());
    }};
}

/// Float unary functions other than the [`vmath`] ones. Those with an instruction of their
/// own (`sqrt`, the roundings) are loops over the operation itself, which LLVM inlines and
/// vectorizes (`vsqrtpd`, `vroundpd`: correctly rounded, so every SIMD level gives the
/// same bits); the transcendental ones call the platform's libm (through Rust's std, or
/// [`super::libm`] for the inverse hyperbolics) value by value through a function pointer.
macro_rules! float_unary {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        fn $name(op: UnaryOp, x: &[$t], out: &mut Vec<$t>) -> Result<(), KernelError> {
            let f: fn($t) -> $t = match op {
                UnaryOp::Sqrt => inline!(out, x, sqrt),
                UnaryOp::Floor => inline!(out, x, floor),
                UnaryOp::Ceil => inline!(out, x, ceil),
                UnaryOp::Trunc => inline!(out, x, trunc),
                UnaryOp::Rint => inline!(out, x, round_ties_even),
                UnaryOp::Tan => <$t>::tan,
                UnaryOp::Arcsin => <$t>::asin,
                UnaryOp::Arccos => <$t>::acos,
                UnaryOp::Arctan => <$t>::atan,
                UnaryOp::Sinh => <$t>::sinh,
                UnaryOp::Cosh => <$t>::cosh,
                UnaryOp::Tanh => <$t>::tanh,
                UnaryOp::Log2 => <$t>::log2,
                UnaryOp::Log10 => <$t>::log10,
                UnaryOp::Log1p => <$t>::ln_1p,
                UnaryOp::Expm1 => <$t>::exp_m1,
                UnaryOp::Exp2 => <$t>::exp2,
                UnaryOp::Arcsinh => <$t>::libm_asinh,
                UnaryOp::Arccosh => <$t>::libm_acosh,
                UnaryOp::Arctanh => <$t>::libm_atanh,
                UnaryOp::Exp => <$t>::exp,
                UnaryOp::Log => <$t>::ln,
                UnaryOp::Sin => <$t>::sin,
                UnaryOp::Cos => <$t>::cos,
                _ => return arith_unary(op, x, out),
            };
            set(out, x.iter().map(|&v| f(v)));
            Ok(())
        }
    };
}
float_unary!(f64_unary, f64);
float_unary!(f32_unary, f32);

/// `out = op(x)` for the first `len` values; `out` has the result dtype.
#[inline(always)]
pub(crate) fn unary(
    op: UnaryOp,
    x: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    match (x, out) {
        (Buffer::F64(x), Buffer::F64(o)) => {
            let x = &x[..len];
            o.resize(len, 0.0);
            match op {
                UnaryOp::Exp => vmath::exp(x, o),
                UnaryOp::Log => vmath::ln(x, o),
                UnaryOp::Sin => vmath::sin(x, o),
                UnaryOp::Cos => vmath::cos(x, o),
                _ => f64_unary(op, x, o)?,
            }
        }
        (Buffer::F32(x), Buffer::F32(o)) => f32_unary(op, &x[..len], o)?,
        (Buffer::I64(x), Buffer::I64(o)) => int_unary(op, &x[..len], o)?,
        (Buffer::I32(x), Buffer::I32(o)) => int_unary(op, &x[..len], o)?,
        (Buffer::U8(x), Buffer::U8(o)) => int_unary(op, &x[..len], o)?,
        (x, o) if out_of_line(x) => unary_out_of_line(op, x, len, o)?,
        (Buffer::Bool(x), Buffer::Bool(o)) if matches!(op, UnaryOp::Not | UnaryOp::BitNot) => {
            set(o, x[..len].iter().map(|v| !v))
        }
        (x, _) => return Err(unsupported(op.name(), x.dtype())),
    }
    Ok(())
}

#[inline(never)]
fn unary_out_of_line(
    op: UnaryOp,
    x: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    match (x, out) {
        (Buffer::I8(x), Buffer::I8(o)) => int_unary(op, &x[..len], o),
        (Buffer::I16(x), Buffer::I16(o)) => int_unary(op, &x[..len], o),
        (Buffer::U16(x), Buffer::U16(o)) => int_unary(op, &x[..len], o),
        (Buffer::U32(x), Buffer::U32(o)) => int_unary(op, &x[..len], o),
        (Buffer::U64(x), Buffer::U64(o)) => int_unary(op, &x[..len], o),
        (x @ (Buffer::C64(_) | Buffer::C128(_)), o) => super::complex::unary(op, x, len, o),
        (x, _) => Err(unsupported(op.name(), x.dtype())),
    }
}

#[inline(always)]
fn zip<T: Element, U: Element>(a: &[T], b: &[T], out: &mut Vec<U>, f: impl Fn(T, T) -> U) {
    set(out, a.iter().zip(b).map(|(&x, &y)| f(x, y)));
}

/// `out = a op b` for a comparison `op`, in `T`'s order (NumPy's: complex values by the
/// real part, then the imaginary; a NaN compares false).
#[inline(always)]
pub(super) fn compare<T: Element>(op: BinaryOp, a: &[T], b: &[T], out: &mut Vec<bool>) {
    match op {
        BinaryOp::Eq => zip(a, b, out, |x, y| x == y),
        BinaryOp::Ne => zip(a, b, out, |x, y| x != y),
        BinaryOp::Lt => zip(a, b, out, |x, y| x < y),
        BinaryOp::Le => zip(a, b, out, |x, y| x <= y),
        BinaryOp::Gt => zip(a, b, out, |x, y| x > y),
        _ => zip(a, b, out, |x, y| x >= y),
    }
}

/// Integer power with NumPy's rule: negative exponents are an error.
trait IntPow: Arith {
    fn pow(a: Self, b: Self) -> Option<Self>;
}
macro_rules! int_pow {
    ($($t:ty),*) => {$(
        impl IntPow for $t {
            #[inline(always)]
            fn pow(a: Self, b: Self) -> Option<Self> {
                let e = i128::from(b);
                let e = u32::try_from(e.min(i128::from(u32::MAX))).ok()?;
                Some(a.wrapping_pow(e))
            }
        }
    )*};
}
int_pow!(u8, u16, u32, u64, i8, i16, i32, i64);

#[inline(always)]
fn arith<T: Arith>(op: BinaryOp, a: &[T], b: &[T], out: &mut Vec<T>) -> Result<(), KernelError> {
    match op {
        BinaryOp::Add => zip(a, b, out, T::add),
        BinaryOp::Sub => zip(a, b, out, T::sub),
        BinaryOp::Mul => zip(a, b, out, T::mul),
        BinaryOp::Maximum => zip(a, b, out, nan_max),
        BinaryOp::Minimum => zip(a, b, out, nan_min),
        _ => return Err(unsupported(op.name(), T::DTYPE)),
    }
    Ok(())
}

/// NumPy's integer `floor_divide`, `remainder` and `fmod` (by zero: 0; `MIN // -1` wraps),
/// and its shifts, in a type that holds every value of the operands' dtype (`i64`, or
/// `i128` for `uint64`): exact once truncated back to the dtype.
macro_rules! int_op {
    ($name:ident, $w:ty) => {
        #[inline(always)]
        fn $name(op: BinaryOp, a: $w, b: $w, bits: $w) -> $w {
            match op {
                _ if b == 0
                    && matches!(
                        op,
                        BinaryOp::FloorDiv | BinaryOp::Remainder | BinaryOp::Fmod
                    ) =>
                {
                    0
                }
                BinaryOp::FloorDiv => {
                    let q = a.wrapping_div(b);
                    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
                        q - 1
                    } else {
                        q
                    }
                }
                BinaryOp::Remainder => {
                    let r = a.wrapping_rem(b);
                    if r != 0 && ((r < 0) != (b < 0)) {
                        r + b
                    } else {
                        r
                    }
                }
                BinaryOp::Fmod => a.wrapping_rem(b),
                BinaryOp::BitAnd => a & b,
                BinaryOp::BitOr => a | b,
                BinaryOp::BitXor => a ^ b,
                BinaryOp::Shl if (0..bits).contains(&b) => a << b,
                BinaryOp::Shr if (0..bits).contains(&b) => a >> b,
                BinaryOp::Shr if a < 0 => -1,
                _ => 0,
            }
        }
    };
}
int_op!(int_op, i64);
int_op!(wide_int_op, i128);

#[inline(always)]
fn int_binary<T: IntPow>(
    op: BinaryOp,
    a: &[T],
    b: &[T],
    out: &mut Vec<T>,
) -> Result<(), KernelError> {
    match op {
        BinaryOp::Pow => {}
        BinaryOp::FloorDiv
        | BinaryOp::Remainder
        | BinaryOp::Fmod
        | BinaryOp::BitAnd
        | BinaryOp::BitOr
        | BinaryOp::BitXor
        | BinaryOp::Shl
        | BinaryOp::Shr => {
            let bits = 8 * T::DTYPE.size_bytes() as i64;
            if T::DTYPE == DType::U64 {
                // Truncating the i128 result keeps the low 64 bits, as `as u64` would.
                let wide = |v: T| i128::from(v.to_i64() as u64);
                zip(a, b, out, |x, y| {
                    T::from_i64(wide_int_op(op, wide(x), wide(y), i128::from(bits)) as i64)
                });
            } else {
                zip(a, b, out, |x, y| {
                    T::from_i64(int_op(op, x.to_i64(), y.to_i64(), bits))
                });
            }
            return Ok(());
        }
        _ => return arith(op, a, b, out),
    }
    out.clear();
    for (&x, &y) in a.iter().zip(b) {
        let v = T::pow(x, y).ok_or_else(|| {
            KernelError::InvalidValue(format!(
                "integers to negative integer powers are not allowed ({x:?} ** {y:?})"
            ))
        })?;
        out.push(v);
    }
    Ok(())
}

/// NumPy's float `divmod` (`npy_divmod`): the floored quotient and the remainder with the
/// sign of `b`; by zero, `a / b` and `fmod(a, b)` (NaN).
macro_rules! float_divmod {
    ($name:ident, $t:ty) => {
        #[inline(always)]
        fn $name(a: $t, b: $t) -> ($t, $t) {
            let m = a % b;
            if b == 0.0 {
                return (a / b, m);
            }
            let mut div = (a - m) / b;
            let mut m = m;
            if m != 0.0 {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(b);
            }
            let q = if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (q, m)
        }
    };
}
float_divmod!(f64_divmod, f64);
float_divmod!(f32_divmod, f32);

macro_rules! float_binary {
    ($name:ident, $t:ty, $divmod:ident) => {
        #[inline(always)]
        fn $name(op: BinaryOp, a: &[$t], b: &[$t], out: &mut Vec<$t>) -> Result<(), KernelError> {
            match op {
                BinaryOp::Div => zip(a, b, out, |x, y| x / y),
                BinaryOp::Pow => zip(a, b, out, |x: $t, y: $t| x.powf(y)),
                BinaryOp::FloorDiv => zip(a, b, out, |x, y| $divmod(x, y).0),
                BinaryOp::Remainder => zip(a, b, out, |x, y| $divmod(x, y).1),
                BinaryOp::Fmod => zip(a, b, out, |x, y| x % y),
                BinaryOp::Arctan2 => zip(a, b, out, |x: $t, y: $t| x.atan2(y)),
                BinaryOp::Hypot => zip(a, b, out, |x: $t, y: $t| x.hypot(y)),
                BinaryOp::Copysign => zip(a, b, out, |x: $t, y: $t| x.copysign(y)),
                BinaryOp::Nextafter => zip(a, b, out, |x: $t, y: $t| {
                    if x.is_nan() || y.is_nan() {
                        <$t>::NAN
                    } else if x == y {
                        y
                    } else if x < y {
                        x.next_up()
                    } else {
                        x.next_down()
                    }
                }),
                _ => arith(op, a, b, out)?,
            }
            Ok(())
        }
    };
}
float_binary!(f64_binary, f64, f64_divmod);
float_binary!(f32_binary, f32, f32_divmod);

/// `out = op(a, b)` for the first `len` values; `out` has the result dtype.
#[inline(always)]
pub(crate) fn binary(
    op: BinaryOp,
    a: &Buffer,
    b: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    if out_of_line(a) {
        return binary_out_of_line(op, a, b, len, out);
    }
    if op.is_comparison() {
        let Buffer::Bool(o) = out else {
            return Err(KernelError::BadInput(format!("{} returns bool", op.name())));
        };
        match (a, b) {
            (Buffer::F64(a), Buffer::F64(b)) => compare(op, &a[..len], &b[..len], o),
            (Buffer::F32(a), Buffer::F32(b)) => compare(op, &a[..len], &b[..len], o),
            (Buffer::I64(a), Buffer::I64(b)) => compare(op, &a[..len], &b[..len], o),
            (Buffer::I32(a), Buffer::I32(b)) => compare(op, &a[..len], &b[..len], o),
            (Buffer::U8(a), Buffer::U8(b)) => compare(op, &a[..len], &b[..len], o),
            (Buffer::Bool(a), Buffer::Bool(b)) => compare(op, &a[..len], &b[..len], o),
            _ => return Err(mismatch(op, a, b)),
        }
        return Ok(());
    }
    match (a, b, out) {
        (Buffer::F64(a), Buffer::F64(b), Buffer::F64(o)) => f64_binary(op, &a[..len], &b[..len], o),
        (Buffer::F32(a), Buffer::F32(b), Buffer::F32(o)) => f32_binary(op, &a[..len], &b[..len], o),
        (Buffer::I64(a), Buffer::I64(b), Buffer::I64(o)) => int_binary(op, &a[..len], &b[..len], o),
        (Buffer::I32(a), Buffer::I32(b), Buffer::I32(o)) => int_binary(op, &a[..len], &b[..len], o),
        (Buffer::U8(a), Buffer::U8(b), Buffer::U8(o)) => int_binary(op, &a[..len], &b[..len], o),
        (Buffer::Bool(a), Buffer::Bool(b), Buffer::Bool(o)) => {
            let (a, b) = (&a[..len], &b[..len]);
            match op {
                BinaryOp::And | BinaryOp::BitAnd | BinaryOp::Minimum => zip(a, b, o, |x, y| x & y),
                BinaryOp::Or | BinaryOp::BitOr | BinaryOp::Maximum => zip(a, b, o, |x, y| x | y),
                BinaryOp::BitXor => zip(a, b, o, |x, y| x ^ y),
                _ => return Err(unsupported(op.name(), DType::Bool)),
            }
            Ok(())
        }
        (a, b, _) => Err(mismatch(op, a, b)),
    }
}

#[inline(never)]
fn binary_out_of_line(
    op: BinaryOp,
    a: &Buffer,
    b: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    if a.dtype().is_complex() {
        return super::complex::binary(op, a, b, len, out);
    }
    macro_rules! each {
        ($($v:ident),*) => {
            match (a, b, out) {
                $((Buffer::$v(a), Buffer::$v(b), Buffer::Bool(o)) if op.is_comparison() => {
                    compare(op, &a[..len], &b[..len], o);
                    Ok(())
                })*
                $((Buffer::$v(a), Buffer::$v(b), Buffer::$v(o)) if !op.is_comparison() => {
                    int_binary(op, &a[..len], &b[..len], o)
                })*
                (_, _, o) if op.is_comparison() && o.dtype() != DType::Bool => {
                    Err(KernelError::BadInput(format!("{} returns bool", op.name())))
                }
                (a, b, _) => Err(mismatch(op, a, b)),
            }
        };
    }
    each!(I8, I16, U16, U32, U64)
}

fn mismatch(op: BinaryOp, a: &Buffer, b: &Buffer) -> KernelError {
    KernelError::BadInput(format!(
        "{} got operands of {} and {}",
        op.name(),
        a.dtype(),
        b.dtype()
    ))
}

/// `out = c ? a : b` for `c`'s length, where `a`, `b` and `out` are of one of the dtypes
/// listed.
macro_rules! pick {
    ($c:expr, $a:expr, $b:expr, $out:expr, $($v:ident),*) => {
        match ($a, $b, $out) {
            $((Buffer::$v(a), Buffer::$v(b), Buffer::$v(o)) => {
                let len = $c.len();
                set(o, $c.iter().zip(&a[..len]).zip(&b[..len]).map(|((&c, &x), &y)| if c { x } else { y }));
                Ok(())
            })*
            (a, _, _) => Err(unsupported("where (mixed operands)", a.dtype())),
        }
    };
}

/// `out = cond ? a : b` for the first `len` values.
#[inline(always)]
pub(crate) fn select(
    cond: &Buffer,
    a: &Buffer,
    b: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    let Buffer::Bool(c) = cond else {
        return Err(unsupported("where (condition)", cond.dtype()));
    };
    let c = &c[..len];
    if out_of_line(a) {
        return select_out_of_line(c, a, b, out);
    }
    pick!(c, a, b, out, Bool, U8, I32, I64, F32, F64)
}

#[inline(never)]
fn select_out_of_line(
    c: &[bool],
    a: &Buffer,
    b: &Buffer,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    pick!(c, a, b, out, I8, I16, U16, U32, U64, C64, C128)
}

#[inline(always)]
fn fold_runs<T: Element, U: Element>(
    x: &[T],
    k: usize,
    out: &mut Vec<U>,
    init: U,
    f: impl Fn(U, T) -> U,
) {
    match k {
        2 => fold_fixed::<2, T, U>(x, out, init, f),
        3 => fold_fixed::<3, T, U>(x, out, init, f),
        4 => fold_fixed::<4, T, U>(x, out, init, f),
        _ => set(
            out,
            x.chunks_exact(k)
                .map(|run| run.iter().fold(init, |acc, &v| f(acc, v))),
        ),
    }
}

/// Runs of 2 to 4 values (coordinate pairs, RGB…) get unrolled, vectorizable loops.
#[inline(always)]
fn fold_fixed<const K: usize, T: Element, U: Element>(
    x: &[T],
    out: &mut Vec<U>,
    init: U,
    f: impl Fn(U, T) -> U,
) {
    let (runs, _) = x.as_chunks::<K>();
    set(
        out,
        runs.iter()
            .map(|run| run.iter().fold(init, |acc, &v| f(acc, v))),
    );
}

#[inline(always)]
fn reduce_runs_typed<T: Element>(
    op: ReduceOp,
    x: &[T],
    k: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    match (op, out) {
        (ReduceOp::All, Buffer::Bool(o)) => fold_runs(x, k, o, true, |a, v| a & v.is_nonzero()),
        (ReduceOp::Any, Buffer::Bool(o)) => fold_runs(x, k, o, false, |a, v| a | v.is_nonzero()),
        (ReduceOp::CountNonzero, Buffer::I64(o)) => {
            fold_runs(x, k, o, 0, |a, v| a + i64::from(v.is_nonzero()))
        }
        (ReduceOp::Min, o) if o.dtype() == T::DTYPE => {
            let o = T::vec_mut(o).ok_or_else(|| unsupported("min", T::DTYPE))?;
            set(
                o,
                x.chunks_exact(k)
                    .map(|r| r.iter().copied().fold(r[0], nan_min)),
            );
        }
        (ReduceOp::Max, o) if o.dtype() == T::DTYPE => {
            let o = T::vec_mut(o).ok_or_else(|| unsupported("max", T::DTYPE))?;
            set(
                o,
                x.chunks_exact(k)
                    .map(|r| r.iter().copied().fold(r[0], nan_max)),
            );
        }
        (ReduceOp::Sum, Buffer::I64(o)) if !T::DTYPE.is_float() => {
            fold_runs(x, k, o, 0i64, |a, v| a.wrapping_add(v.to_i64()))
        }
        (ReduceOp::Prod, Buffer::I64(o)) if !T::DTYPE.is_float() => {
            fold_runs(x, k, o, 1i64, |a, v| a.wrapping_mul(v.to_i64()))
        }
        // Unsigned sums and products (in uint64): the same bits as the int64 ones.
        (ReduceOp::Sum, Buffer::U64(o)) if T::DTYPE.is_unsigned() => {
            fold_runs(x, k, o, 0u64, |a, v| a.wrapping_add(v.to_i64() as u64))
        }
        (ReduceOp::Prod, Buffer::U64(o)) if T::DTYPE.is_unsigned() => {
            fold_runs(x, k, o, 1u64, |a, v| a.wrapping_mul(v.to_i64() as u64))
        }
        (ReduceOp::Sum | ReduceOp::Prod, o) if o.dtype().is_complex() => {
            return super::complex::reduce_runs(op, x, k, o)
        }
        (ReduceOp::Sum, Buffer::F64(o)) => fold_runs(x, k, o, 0.0, |a, v| a + v.to_f64()),
        (ReduceOp::Prod, Buffer::F64(o)) => fold_runs(x, k, o, 1.0, |a, v| a * v.to_f64()),
        (ReduceOp::Sum, Buffer::F32(o)) => fold_runs(x, k, o, 0.0f32, |a, v| a + v.to_f64() as f32),
        (ReduceOp::Prod, Buffer::F32(o)) => {
            fold_runs(x, k, o, 1.0f32, |a, v| a * v.to_f64() as f32)
        }
        (op, o) => {
            return Err(KernelError::BadInput(format!(
                "{} of {} into {} inside a fused kernel",
                op.name(),
                T::DTYPE,
                o.dtype()
            )))
        }
    }
    Ok(())
}

/// Reduces each run of `k` consecutive values among the first `len * k` of `x` into `out`.
#[inline(always)]
pub(crate) fn reduce_runs(
    op: ReduceOp,
    x: &Buffer,
    k: usize,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    with_inlined!(
        x,
        xs => reduce_runs_typed(op, &xs[..len * k], k, out),
        reduce_runs_out_of_line(op, x, k, len, out)
    )
}

#[inline(never)]
fn reduce_runs_out_of_line(
    op: ReduceOp,
    x: &Buffer,
    k: usize,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    with_buffer!(x, xs => reduce_runs_typed(op, &xs[..len * k], k, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_wraps_like_numpy() {
        let mut out = Buffer::U8(vec![]);
        binary(
            BinaryOp::Add,
            &Buffer::U8(vec![250]),
            &Buffer::U8(vec![10]),
            1,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, Buffer::U8(vec![4]));
    }

    #[test]
    fn negative_integer_power_is_an_error() {
        let mut out = Buffer::I64(vec![]);
        let err = binary(
            BinaryOp::Pow,
            &Buffer::I64(vec![2]),
            &Buffer::I64(vec![-1]),
            1,
            &mut out,
        );
        assert!(matches!(err, Err(KernelError::InvalidValue(_))));
        binary(
            BinaryOp::Pow,
            &Buffer::I64(vec![3]),
            &Buffer::I64(vec![4]),
            1,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, Buffer::I64(vec![81]));
    }

    #[test]
    fn maximum_propagates_nan_and_comparisons_do_not_match_nan() {
        let mut out = Buffer::F64(vec![]);
        let a = Buffer::F64(vec![1.0, f64::NAN, 3.0]);
        let b = Buffer::F64(vec![2.0, 0.0, f64::NAN]);
        binary(BinaryOp::Maximum, &a, &b, 3, &mut out).unwrap();
        let Buffer::F64(v) = &out else { unreachable!() };
        assert_eq!(v[0], 2.0);
        assert!(v[1].is_nan() && v[2].is_nan());
        let mut cmp = Buffer::Bool(vec![]);
        binary(BinaryOp::Lt, &a, &b, 3, &mut cmp).unwrap();
        assert_eq!(cmp, Buffer::Bool(vec![true, false, false]));
    }

    #[test]
    fn casts_follow_astype() {
        let mut out = Buffer::I32(vec![]);
        cast(&Buffer::F64(vec![-1.9, 2.9]), 2, &mut out);
        assert_eq!(out, Buffer::I32(vec![-1, 2]));
        let mut b = Buffer::Bool(vec![]);
        cast(&Buffer::I64(vec![0, 5]), 2, &mut b);
        assert_eq!(b, Buffer::Bool(vec![false, true]));
    }

    #[test]
    fn bool_arithmetic_is_rejected() {
        let mut out = Buffer::Bool(vec![]);
        let t = Buffer::Bool(vec![true]);
        assert!(matches!(
            binary(BinaryOp::Add, &t, &t, 1, &mut out),
            Err(KernelError::UnsupportedDType { .. })
        ));
    }

    /// The inlined (vectorized) `sqrt` and roundings give std's values, specials included,
    /// for `f64` and `f32`, at lengths around the vector widths.
    #[test]
    fn inlined_float_functions_equal_std() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            1e300,
            -1e-310,
            4503599627370497.5,
        ];
        xs.extend([
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2.0,
            1e-320,
            7.25,
        ]);
        xs.extend((0..100).map(|i| (f64::from(i) - 50.0) * 0.37));
        let same64 = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let same32 = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        type Case = (UnaryOp, fn(f64) -> f64, fn(f32) -> f32);
        let cases: [Case; 5] = [
            (UnaryOp::Sqrt, f64::sqrt, f32::sqrt),
            (UnaryOp::Floor, f64::floor, f32::floor),
            (UnaryOp::Ceil, f64::ceil, f32::ceil),
            (UnaryOp::Trunc, f64::trunc, f32::trunc),
            (UnaryOp::Rint, f64::round_ties_even, f32::round_ties_even),
        ];
        for (op, f64_fn, f32_fn) in cases {
            for len in [1, 3, 4, 5, 8, 17, xs.len()] {
                let mut out = Buffer::F64(vec![]);
                unary(op, &Buffer::F64(xs.clone()), len, &mut out).unwrap();
                let Buffer::F64(got) = &out else {
                    unreachable!()
                };
                assert_eq!(got.len(), len);
                for (&g, &x) in got.iter().zip(&xs) {
                    assert!(same64(g, f64_fn(x)), "{op:?}({x:e}) = {g:e}");
                }
                let x32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
                let mut out = Buffer::F32(vec![]);
                unary(op, &Buffer::F32(x32.clone()), len, &mut out).unwrap();
                let Buffer::F32(got) = &out else {
                    unreachable!()
                };
                for (&g, &x) in got.iter().zip(&x32) {
                    assert!(same32(g, f32_fn(x)), "{op:?}({x:e}) = {g:e}");
                }
            }
        }
        // A sqrt of a negative number is NaN, as in NumPy.
        let mut out = Buffer::F64(vec![]);
        unary(UnaryOp::Sqrt, &Buffer::F64(vec![-4.0, 9.0]), 2, &mut out).unwrap();
        let Buffer::F64(got) = &out else {
            unreachable!()
        };
        assert!(got[0].is_nan() && got[1] == 3.0);
    }

    #[test]
    fn runs_reduce_pairs() {
        let mut out = Buffer::F64(vec![]);
        reduce_runs(
            ReduceOp::Sum,
            &Buffer::F64(vec![1.0, 2.0, 3.0, 4.0]),
            2,
            2,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, Buffer::F64(vec![3.0, 7.0]));
    }
}
