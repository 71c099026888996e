//! The inverse hyperbolic functions of the platform's C math library, the ones NumPy calls.
//! Rust's std computes `asinh`, `acosh` and `atanh` with formulas of its own, which differ
//! from libm's in the last ulps (and lose precision for huge `asinh`/`acosh` arguments);
//! the other float functions std offers are libm's already.

extern "C" {
    fn asinh(x: f64) -> f64;
    fn acosh(x: f64) -> f64;
    fn atanh(x: f64) -> f64;
    fn asinhf(x: f32) -> f32;
    fn acoshf(x: f32) -> f32;
    fn atanhf(x: f32) -> f32;
}

/// libm's inverse hyperbolic functions for `f64` and `f32`.
pub(crate) trait Hyperbolic: Sized {
    /// Inverse hyperbolic sine.
    fn libm_asinh(self) -> Self;
    /// Inverse hyperbolic cosine (NaN below 1).
    fn libm_acosh(self) -> Self;
    /// Inverse hyperbolic tangent (infinite at ±1, NaN beyond).
    fn libm_atanh(self) -> Self;
}

macro_rules! hyperbolic {
    ($t:ty, $asinh:ident, $acosh:ident, $atanh:ident) => {
        impl Hyperbolic for $t {
            // SAFETY (all three): C99 <math.h> functions, defined for every argument, with
            // no effect besides their result (and errno).
            fn libm_asinh(self) -> $t {
                unsafe { $asinh(self) }
            }
            fn libm_acosh(self) -> $t {
                unsafe { $acosh(self) }
            }
            fn libm_atanh(self) -> $t {
                unsafe { $atanh(self) }
            }
        }
    };
}
hyperbolic!(f64, asinh, acosh, atanh);
hyperbolic!(f32, asinhf, acoshf, atanhf);

#[cfg(test)]
mod tests {
    use super::Hyperbolic;

    #[test]
    fn libm_inverse_hyperbolics_at_known_points() {
        // asinh(sinh(1)) == 1; acosh(1) == 0; atanh(±1) == ±inf; asinh(1e300) == ln(2e300).
        assert!((1.1752011936438014f64.libm_asinh() - 1.0).abs() <= f64::EPSILON);
        assert_eq!(1.0f64.libm_acosh().to_bits(), 0);
        assert!(0.5f64.libm_acosh().is_nan() && 2.0f32.libm_atanh().is_nan());
        assert_eq!(1.0f32.libm_atanh(), f32::INFINITY);
        assert_eq!((-1.0f64).libm_atanh(), f64::NEG_INFINITY);
        let big = 1e300f64.libm_asinh();
        assert!((big - (2e300f64.ln())).abs() <= 4.0 * f64::EPSILON * big);
        assert_eq!((-0.0f64).libm_asinh().to_bits(), (-0.0f64).to_bits());
    }
}
