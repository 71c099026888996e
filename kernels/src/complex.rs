//! Complex elements (`complex64`, `complex128`): a pair of floats laid out as C and NumPy
//! lay them out (real part, then imaginary), ordered as NumPy sorts them (by the real part,
//! then the imaginary). Their functions are in `cpu::complex`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A complex number of two `T`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd, Serialize, Deserialize)]
#[repr(C)]
pub struct Complex<T> {
    /// The real part.
    pub re: T,
    /// The imaginary part.
    pub im: T,
}

/// NumPy's `complex64`: two `f32`s.
pub type C64 = Complex<f32>;
/// NumPy's `complex128`: two `f64`s.
pub type C128 = Complex<f64>;

impl<T> Complex<T> {
    /// `re + im·i`.
    pub const fn new(re: T, im: T) -> Self {
        Complex { re, im }
    }
}

/// Complex addition, part by part.
impl<T: std::ops::Add<Output = T>> std::ops::Add for Complex<T> {
    type Output = Self;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        Complex::new(self.re + b.re, self.im + b.im)
    }
}

/// Complex subtraction, part by part.
impl<T: std::ops::Sub<Output = T>> std::ops::Sub for Complex<T> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        Complex::new(self.re - b.re, self.im - b.im)
    }
}

/// The complex product `(ac - bd) + (ad + bc)i`.
impl<T> std::ops::Mul for Complex<T>
where
    T: Copy + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
{
    type Output = Self;
    #[inline(always)]
    fn mul(self, b: Self) -> Self {
        Complex::new(
            self.re * b.re - self.im * b.im,
            self.re * b.im + self.im * b.re,
        )
    }
}

/// Python's spelling: `(1+2j)`, `-3j` when the real part is zero, `(nan+infj)`.
impl<T: fmt::Display + Copy + Into<f64>> fmt::Display for Complex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (re, im): (f64, f64) = (self.re.into(), self.im.into());
        let part = |v: f64| {
            if v.is_nan() {
                "nan".to_string()
            } else if v.is_infinite() {
                if v > 0.0 { "inf" } else { "-inf" }.to_string()
            } else {
                format!("{v}")
            }
        };
        if re == 0.0 && re.is_sign_positive() {
            return write!(f, "{}j", part(im));
        }
        let sign = if im.is_sign_negative() && !im.is_nan() {
            ""
        } else {
            "+"
        };
        write!(f, "({}{sign}{}j)", part(re), part(im))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_numpys_real_then_imaginary() {
        let mut v = [
            C128::new(1.0, 2.0),
            C128::new(0.0, 5.0),
            C128::new(1.0, -1.0),
        ];
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        assert_eq!(
            v,
            [
                C128::new(0.0, 5.0),
                C128::new(1.0, -1.0),
                C128::new(1.0, 2.0)
            ]
        );
    }

    #[test]
    fn prints_as_python_does() {
        assert_eq!(C128::new(1.0, 2.0).to_string(), "(1+2j)");
        assert_eq!(C128::new(1.5, -2.0).to_string(), "(1.5-2j)");
        assert_eq!(C128::new(0.0, -3.0).to_string(), "-3j");
        assert_eq!(C64::new(f32::NAN, f32::INFINITY).to_string(), "(nan+infj)");
    }

    #[test]
    fn layout_is_two_floats() {
        assert_eq!(std::mem::size_of::<C64>(), 8);
        assert_eq!(std::mem::size_of::<C128>(), 16);
    }
}
