//! Elementwise loops of the complex types (`complex64`, `complex128`), out of line: the
//! functions NumPy and the array API define on complex values.
//!
//! The elementary functions are the C library's (`csqrt`, `cacos`, …), which NumPy calls
//! too: C99's Annex G fixes their branch cuts and their values at signed zeros,
//! infinities and NaNs, which are the array API's special cases. `abs`, `real` and `imag`
//! write real values (the complex type's part type); comparisons order by the real part,
//! then the imaginary (NumPy's order); `floor`, `ceil`, `trunc`, the integer divisions and
//! the bitwise functions are not defined on complex values.

use super::elementwise::{compare, nan_max, nan_min, set, unsupported};
use crate::complex::{Complex, C128};
use crate::dtype::DType;
use crate::expr::{BinaryOp, ReduceOp, UnaryOp};
use crate::tensor::{Buffer, Element};
use crate::KernelError;

/// Declares the C library's complex functions (`double complex` and `float complex`
/// versions) and [`CMath`], their safe methods on [`Complex`].
macro_rules! c_library {
    ($($f64:ident / $f32:ident),* $(,)?) => {
        // C's `double _Complex` and `float _Complex` are passed and returned as a
        // `#[repr(C)]` pair of their part type (x86-64 SysV and AArch64 alike).
        #[link(name = "m")]
        unsafe extern "C" {
            $(
                fn $f64(z: Complex<f64>) -> Complex<f64>;
                fn $f32(z: Complex<f32>) -> Complex<f32>;
            )*
        }

        /// The C library's complex functions, as methods named after the `double` ones.
        pub(crate) trait CMath: Sized {
            $(
                #[doc = concat!("C's `", stringify!($f64), "`.")]
                fn $f64(self) -> Self;
            )*
        }

        impl CMath for Complex<f64> {
            $(
                #[inline]
                fn $f64(self) -> Self {
                    // SAFETY: a pure function of one value, without pointers or state.
                    unsafe { $f64(self) }
                }
            )*
        }

        impl CMath for Complex<f32> {
            $(
                #[inline]
                fn $f64(self) -> Self {
                    // SAFETY: a pure function of one value, without pointers or state.
                    unsafe { $f32(self) }
                }
            )*
        }
    };
}
c_library!(
    csqrt / csqrtf,
    cexp / cexpf,
    clog / clogf,
    csin / csinf,
    ccos / ccosf,
    ctan / ctanf,
    casin / casinf,
    cacos / cacosf,
    catan / catanf,
    csinh / csinhf,
    ccosh / ccoshf,
    ctanh / ctanhf,
    casinh / casinhf,
    cacosh / cacoshf,
    catanh / catanhf,
);

/// The complex arithmetic and functions of one part type.
macro_rules! complex_math {
    ($m:ident, $t:ty) => {
        mod $m {
            use super::*;
            type Z = Complex<$t>;

            /// `z · k` for a real `k`.
            #[inline]
            fn scale(z: Z, k: $t) -> Z {
                Z::new(z.re * k, z.im * k)
            }

            /// Smith's division (NumPy's): no overflow of `|b|²` for large divisors.
            #[inline]
            fn div(a: Z, b: Z) -> Z {
                let (ar, ai, br, bi) = (a.re, a.im, b.re, b.im);
                if br.abs() >= bi.abs() {
                    if br == 0.0 && bi == 0.0 {
                        // NumPy divides each part by |b| = 0: inf or NaN by the numerator.
                        return Z::new(ar / br.abs(), ai / br.abs());
                    }
                    let r = bi / br;
                    let d = br + bi * r;
                    Z::new((ar + ai * r) / d, (ai - ar * r) / d)
                } else {
                    let r = br / bi;
                    let d = bi + br * r;
                    Z::new((ar * r + ai) / d, (ai * r - ar) / d)
                }
            }

            /// `a ** b`: `1` for a zero exponent, `0` for a zero base with a positive
            /// real exponent, small integer powers by multiplication (NumPy's exact
            /// path), otherwise `exp(b · ln a)`.
            pub(super) fn pow(a: Z, b: Z) -> Z {
                if b.re == 0.0 && b.im == 0.0 {
                    return Z::new(1.0, 0.0);
                }
                if a.re == 0.0 && a.im == 0.0 {
                    return if b.im == 0.0 && b.re > 0.0 {
                        Z::new(0.0, 0.0)
                    } else {
                        Z::new(<$t>::NAN, <$t>::NAN)
                    };
                }
                if b.im == 0.0 && b.re.fract() == 0.0 && b.re.abs() <= 100.0 {
                    let n = b.re.abs() as u32;
                    let mut acc = Z::new(1.0, 0.0);
                    let mut base = a;
                    let mut k = n;
                    while k > 0 {
                        if k & 1 == 1 {
                            acc = acc * base;
                        }
                        base = base * base;
                        k >>= 1;
                    }
                    return if b.re < 0.0 {
                        div(Z::new(1.0, 0.0), acc)
                    } else {
                        acc
                    };
                }
                (b * a.clog()).cexp()
            }

            /// `ln(1 + z)`, accurate near zero: `ln|1 + z| = ½ ln1p(2x + x² + y²)`; elsewhere
            /// (infinities and NaNs too) `clog(1 + z)`.
            pub(super) fn log1p(a: Z) -> Z {
                let (x, y) = (a.re, a.im);
                if x.abs() < 0.5 && y.abs() < 0.5 {
                    let re = 0.5 * (2.0 * x + x * x + y * y).ln_1p();
                    Z::new(re, y.atan2(1.0 + x))
                } else {
                    Z::new(1.0 + x, y).clog()
                }
            }

            /// `exp(z) - 1`, accurate near zero: the real part is
            /// `expm1(x) cos y - 2 sin²(y/2)`; elsewhere `cexp(z) - 1`.
            pub(super) fn expm1(a: Z) -> Z {
                let (x, y) = (a.re, a.im);
                if x.abs() < 0.5 && y.abs() < 0.5 {
                    let s = (y / 2.0).sin();
                    // `+ 0.0`: expm1(-0 + 0i) is +0 + 0i, as the standard says.
                    let re = x.exp_m1() * y.cos() - 2.0 * s * s + 0.0;
                    Z::new(re, x.exp() * y.sin())
                } else {
                    let e = a.cexp();
                    Z::new(e.re - 1.0, e.im)
                }
            }

            /// `tanh`: C's, but at an infinite real part and a finite imaginary one the
            /// standard's `±1 ± 0i` (the zero's sign that of the imaginary part), where
            /// C99 gives the zero the sign of `sin(2y)`.
            fn tanh(a: Z) -> Z {
                if a.re.is_infinite() && a.im.is_finite() {
                    Z::new((1.0 as $t).copysign(a.re), (0.0 as $t).copysign(a.im))
                } else {
                    a.ctanh()
                }
            }

            /// The complex functions; `None` for those complex values do not have.
            pub(super) fn unary(op: UnaryOp) -> Option<fn(Z) -> Z> {
                Some(match op {
                    UnaryOp::Neg => |a: Z| Z::new(-a.re, -a.im),
                    UnaryOp::Conj => |a: Z| Z::new(a.re, -a.im),
                    UnaryOp::Sqrt => CMath::csqrt,
                    UnaryOp::Exp => CMath::cexp,
                    UnaryOp::Log => CMath::clog,
                    // NumPy's: the natural logarithm scaled; 2^z as e^(z ln 2).
                    UnaryOp::Log2 => |a: Z| scale(a.clog(), std::f64::consts::LOG2_E as $t),
                    UnaryOp::Log10 => |a: Z| scale(a.clog(), std::f64::consts::LOG10_E as $t),
                    UnaryOp::Exp2 => |a: Z| scale(a, std::f64::consts::LN_2 as $t).cexp(),
                    UnaryOp::Log1p => log1p,
                    UnaryOp::Expm1 => expm1,
                    UnaryOp::Sin => CMath::csin,
                    UnaryOp::Cos => CMath::ccos,
                    UnaryOp::Tan => CMath::ctan,
                    UnaryOp::Arcsin => CMath::casin,
                    UnaryOp::Arccos => CMath::cacos,
                    UnaryOp::Arctan => CMath::catan,
                    UnaryOp::Sinh => CMath::csinh,
                    UnaryOp::Cosh => CMath::ccosh,
                    UnaryOp::Tanh => tanh,
                    UnaryOp::Arcsinh => CMath::casinh,
                    UnaryOp::Arccosh => CMath::cacosh,
                    UnaryOp::Arctanh => CMath::catanh,
                    // NumPy's rint rounds each part, ties to even.
                    UnaryOp::Rint => |a: Z| Z::new(a.re.round_ties_even(), a.im.round_ties_even()),
                    _ => return None,
                })
            }

            /// The real-valued functions of a complex value: `abs`, `real`, `imag`.
            pub(super) fn to_real(op: UnaryOp) -> Option<fn(Z) -> $t> {
                Some(match op {
                    UnaryOp::Abs => |a: Z| a.re.hypot(a.im),
                    UnaryOp::Real => |a: Z| a.re,
                    UnaryOp::Imag => |a: Z| a.im,
                    _ => return None,
                })
            }

            pub(super) fn binary(op: BinaryOp) -> Option<fn(Z, Z) -> Z> {
                Some(match op {
                    BinaryOp::Add => |a: Z, b: Z| a + b,
                    BinaryOp::Sub => |a: Z, b: Z| a - b,
                    BinaryOp::Mul => |a: Z, b: Z| a * b,
                    BinaryOp::Div => div,
                    BinaryOp::Pow => pow,
                    BinaryOp::Maximum => nan_max,
                    BinaryOp::Minimum => nan_min,
                    _ => return None,
                })
            }
        }
    };
}
complex_math!(c64, f32);
complex_math!(c128, f64);

/// `out = op(x)` for the first `len` values of a complex `x`.
pub(crate) fn unary(
    op: UnaryOp,
    x: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    macro_rules! each {
        ($($v:ident, $real:ident, $m:ident);*) => {
            match (x, out) {
                $(
                    (Buffer::$v(x), Buffer::$v(o)) => {
                        let f = $m::unary(op).ok_or_else(|| unsupported(op.name(), DType::$v))?;
                        set(o, x[..len].iter().map(|&v| f(v)));
                    }
                    (Buffer::$v(x), Buffer::$real(o)) => {
                        let f = $m::to_real(op).ok_or_else(|| unsupported(op.name(), DType::$v))?;
                        set(o, x[..len].iter().map(|&v| f(v)));
                    }
                )*
                (x, o) => {
                    return Err(KernelError::BadInput(format!(
                        "{} of {} into {}",
                        op.name(),
                        x.dtype(),
                        o.dtype()
                    )))
                }
            }
        };
    }
    each!(C64, F32, c64; C128, F64, c128);
    Ok(())
}

/// `out = op(a, b)` for the first `len` values of complex operands of one type.
pub(crate) fn binary(
    op: BinaryOp,
    a: &Buffer,
    b: &Buffer,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    macro_rules! each {
        ($($v:ident, $m:ident);*) => {
            match (a, b, out) {
                $(
                    (Buffer::$v(a), Buffer::$v(b), Buffer::Bool(o)) if op.is_comparison() => {
                        let (a, b) = (&a[..len], &b[..len]);
                        compare(op, a, b, o);
                    }
                    (Buffer::$v(a), Buffer::$v(b), Buffer::$v(o)) => {
                        let f = $m::binary(op).ok_or_else(|| unsupported(op.name(), DType::$v))?;
                        set(o, a[..len].iter().zip(&b[..len]).map(|(&x, &y)| f(x, y)));
                    }
                )*
                (a, b, o) => {
                    return Err(KernelError::BadInput(format!(
                        "{} of {} and {} into {}",
                        op.name(),
                        a.dtype(),
                        b.dtype(),
                        o.dtype()
                    )))
                }
            }
        };
    }
    each!(C64, c64; C128, c128);
    Ok(())
}

/// Sums or products of each run of `k` consecutive values into a complex `out` (worked in
/// `complex128`, then rounded to `out`'s type).
pub(crate) fn reduce_runs<T: Element>(
    op: ReduceOp,
    x: &[T],
    k: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    fn fold<T: Element, U: Element>(op: ReduceOp, x: &[T], k: usize, out: &mut Vec<U>) {
        set(
            out,
            x.chunks_exact(k).map(|run| {
                let z = if op == ReduceOp::Prod {
                    run.iter().fold(C128::new(1.0, 0.0), |a, v| a * v.to_c128())
                } else {
                    run.iter().fold(C128::default(), |a, v| a + v.to_c128())
                };
                U::from_c128(z)
            }),
        )
    }
    match out {
        Buffer::C64(o) => fold(op, x, k, o),
        Buffer::C128(o) => fold(op, x, k, o),
        o => return Err(unsupported(op.name(), o.dtype())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complex::C64;

    fn close(a: C128, b: C128) -> bool {
        (a.re - b.re).abs() <= 1e-12 * (1.0 + b.re.abs())
            && (a.im - b.im).abs() <= 1e-12 * (1.0 + b.im.abs())
    }

    fn un(op: UnaryOp, v: &[C128]) -> Vec<C128> {
        let mut out = Buffer::C128(vec![]);
        unary(op, &Buffer::C128(v.to_vec()), v.len(), &mut out).unwrap();
        let Buffer::C128(o) = out else { unreachable!() };
        o
    }

    fn bin(op: BinaryOp, a: C128, b: C128) -> C128 {
        let mut out = Buffer::C128(vec![]);
        binary(
            op,
            &Buffer::C128(vec![a]),
            &Buffer::C128(vec![b]),
            1,
            &mut out,
        )
        .unwrap();
        let Buffer::C128(o) = out else { unreachable!() };
        o[0]
    }

    /// Values worked by hand: (1+2i)(3-i) = 5+5i; (5+5i)/(3-i) = 1+2i; i² = -1;
    /// sqrt(-4) = 2i; exp(iπ) = -1; ln(-1) = iπ.
    #[test]
    fn arithmetic_and_functions_give_the_textbook_values() {
        let (a, b) = (C128::new(1.0, 2.0), C128::new(3.0, -1.0));
        assert_eq!(bin(BinaryOp::Mul, a, b), C128::new(5.0, 5.0));
        assert!(close(bin(BinaryOp::Div, C128::new(5.0, 5.0), b), a));
        assert_eq!(bin(BinaryOp::Add, a, b), C128::new(4.0, 1.0));
        assert_eq!(
            bin(BinaryOp::Pow, C128::new(0.0, 1.0), C128::new(2.0, 0.0)),
            C128::new(-1.0, 0.0)
        );
        assert!(close(
            bin(BinaryOp::Pow, C128::new(0.0, 1.0), C128::new(0.5, 0.0)),
            C128::new(0.5f64.sqrt(), 0.5f64.sqrt())
        ));
        let pi = std::f64::consts::PI;
        let got = un(UnaryOp::Sqrt, &[C128::new(-4.0, 0.0)]);
        assert_eq!(got, [C128::new(0.0, 2.0)]);
        assert!(close(
            un(UnaryOp::Exp, &[C128::new(0.0, pi)])[0],
            C128::new(-1.0, 0.0)
        ));
        assert!(close(
            un(UnaryOp::Log, &[C128::new(-1.0, 0.0)])[0],
            C128::new(0.0, pi)
        ));
        assert_eq!(un(UnaryOp::Conj, &[a]), [C128::new(1.0, -2.0)]);
        assert_eq!(
            un(UnaryOp::Rint, &[C128::new(2.5, -1.5)]),
            [C128::new(2.0, -2.0)]
        );
    }

    /// Values at zeros and infinities are C99 Annex G's (the array API's special cases).
    #[test]
    fn special_values_are_annex_g() {
        let (inf, pi) = (f64::INFINITY, std::f64::consts::PI);
        let one = |op: UnaryOp, z: C128| un(op, &[z])[0];
        let acos0 = one(UnaryOp::Arccos, C128::new(0.0, 0.0));
        assert_eq!((acos0.re, acos0.im), (pi / 2.0, -0.0));
        assert!(acos0.im.is_sign_negative());
        assert_eq!(one(UnaryOp::Exp, C128::new(inf, 0.0)), C128::new(inf, 0.0));
        assert_eq!(one(UnaryOp::Log, C128::new(-0.0, 0.0)), C128::new(-inf, pi));
        assert_eq!(
            one(UnaryOp::Arcsinh, C128::new(inf, inf)),
            C128::new(inf, pi / 4.0)
        );
        assert_eq!(
            one(UnaryOp::Sqrt, C128::new(-inf, 1.0)),
            C128::new(0.0, inf)
        );
        assert_eq!(
            one(UnaryOp::Expm1, C128::new(-inf, 0.0)),
            C128::new(-1.0, 0.0)
        );
        assert_eq!(
            one(UnaryOp::Log1p, C128::new(-1.0, 0.0)),
            C128::new(-inf, 0.0)
        );
        let mut out = Buffer::C64(vec![]);
        unary(
            UnaryOp::Tanh,
            &Buffer::C64(vec![C64::new(f32::INFINITY, 1.0)]),
            1,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, Buffer::C64(vec![C64::new(1.0, 0.0)]));
    }

    /// log1p and expm1 keep their accuracy near zero, where `ln(1 + z)` loses it.
    #[test]
    fn log1p_and_expm1_are_accurate_near_zero() {
        let tiny = C128::new(1e-12, 1e-12);
        let l = un(UnaryOp::Log1p, &[tiny])[0];
        // ln(1 + z) = z - z²/2 + …; z² = 2e-24 i.
        assert!((l.re - 1e-12).abs() < 1e-24 && (l.im - (1e-12 - 1e-24)).abs() < 1e-26);
        let e = un(UnaryOp::Expm1, &[tiny])[0];
        assert!((e.re - 1e-12).abs() < 1e-24 && (e.im - (1e-12 + 1e-24)).abs() < 1e-26);
    }

    #[test]
    fn abs_real_imag_are_real_and_comparisons_are_lexicographic() {
        let x = Buffer::C64(vec![C64::new(3.0, -4.0), C64::new(0.0, 1.0)]);
        for (op, want) in [
            (UnaryOp::Abs, vec![5.0, 1.0]),
            (UnaryOp::Real, vec![3.0, 0.0]),
            (UnaryOp::Imag, vec![-4.0, 1.0]),
        ] {
            let mut out = Buffer::F32(vec![]);
            unary(op, &x, 2, &mut out).unwrap();
            assert_eq!(out, Buffer::F32(want), "{op:?}");
        }
        let y = Buffer::C64(vec![C64::new(3.0, 0.0), C64::new(0.0, 1.0)]);
        let mut out = Buffer::Bool(vec![]);
        binary(BinaryOp::Lt, &x, &y, 2, &mut out).unwrap();
        assert_eq!(out, Buffer::Bool(vec![true, false]));
        binary(BinaryOp::Eq, &x, &y, 2, &mut out).unwrap();
        assert_eq!(out, Buffer::Bool(vec![false, true]));
        let mut out = Buffer::C64(vec![]);
        assert!(matches!(
            unary(UnaryOp::Floor, &x, 2, &mut out),
            Err(KernelError::UnsupportedDType { .. })
        ));
        assert!(matches!(
            binary(BinaryOp::FloorDiv, &x, &y, 2, &mut out),
            Err(KernelError::UnsupportedDType { .. })
        ));
    }

    #[test]
    fn division_by_large_and_zero_divisors_is_numpys() {
        let big = C128::new(1e300, 1e300);
        let q = bin(BinaryOp::Div, big, big);
        assert!(close(q, C128::new(1.0, 0.0)), "{q:?}");
        let q = bin(BinaryOp::Div, C128::new(1.0, 0.0), C128::new(0.0, 0.0));
        assert!(q.re.is_infinite() && q.im.is_nan());
    }
}
