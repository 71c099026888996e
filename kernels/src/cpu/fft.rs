//! The discrete Fourier transform along one axis of a complex chunk, by `rustfft` (mixed
//! radix, with Rader's and Bluestein's algorithms for prime lengths: O(n log n) for every
//! length), in the chunk's own precision as NumPy 2's pocketfft computes.

use super::array::lanes;
use crate::complex::Complex;
use crate::{Buffer, HostTensor, KernelError};
use rustfft::num_complex::Complex as Nc;
use rustfft::{FftNum, FftPlanner};

/// Every lane along `axis` of `x` (complex64 or complex128) transformed, unnormalized.
pub(super) fn transform(
    x: &HostTensor,
    axis: usize,
    inverse: bool,
) -> Result<HostTensor, KernelError> {
    let (outer, n, inner) = lanes(x.shape(), axis)?;
    let data = match x.data() {
        Buffer::C64(v) => Buffer::C64(lanes_of(v, (outer, n, inner), inverse)),
        Buffer::C128(v) => Buffer::C128(lanes_of(v, (outer, n, inner), inverse)),
        other => {
            return Err(KernelError::UnsupportedDType {
                op: "fft (of a complex chunk)".into(),
                dtype: other.dtype(),
            })
        }
    };
    HostTensor::new(x.shape().to_vec(), data)
}

fn lanes_of<T: FftNum>(
    v: &[Complex<T>],
    (outer, n, inner): (usize, usize, usize),
    inverse: bool,
) -> Vec<Complex<T>> {
    let mut out = v.to_vec();
    if n == 0 {
        return out;
    }
    let mut planner = FftPlanner::<T>::new();
    let plan = if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    };
    let mut scratch = vec![Nc::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
    let mut lane = vec![Nc::new(T::zero(), T::zero()); n];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            for (k, z) in lane.iter_mut().enumerate() {
                let c = out[at(k)];
                *z = Nc::new(c.re, c.im);
            }
            plan.process_with_scratch(&mut lane, &mut scratch);
            for (k, z) in lane.iter().enumerate() {
                out[at(k)] = Complex::new(z.re, z.im);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complex::C128;

    /// The transform against the definition `X_k = Σ x_j e^(∓2πi jk/n)`, along each axis
    /// of a 3 × 5 chunk (5 is prime: Rader's or Bluestein's path).
    #[test]
    fn lanes_match_the_definition() {
        let shape = [3usize, 5];
        let x: Vec<C128> = (0..15)
            .map(|i| C128::new((i as f64 * 0.7).sin(), (i as f64 * 1.3).cos()))
            .collect();
        let t = HostTensor::new(shape.to_vec(), Buffer::C128(x.clone())).unwrap();
        for (axis, &n) in shape.iter().enumerate() {
            for inverse in [false, true] {
                let got = transform(&t, axis, inverse).unwrap();
                let got = got.as_slice::<C128>().unwrap();
                let sign = if inverse { 1.0 } else { -1.0 };
                for r in 0..3 {
                    for c in 0..5 {
                        let k = if axis == 0 { r } else { c };
                        let mut want = C128::new(0.0, 0.0);
                        for j in 0..n {
                            let xj = if axis == 0 {
                                x[j * 5 + c]
                            } else {
                                x[r * 5 + j]
                            };
                            let w = sign * 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                            want.re += xj.re * w.cos() - xj.im * w.sin();
                            want.im += xj.re * w.sin() + xj.im * w.cos();
                        }
                        let g = got[r * 5 + c];
                        assert!(
                            (g.re - want.re).abs() < 1e-12 && (g.im - want.im).abs() < 1e-12,
                            "axis {axis} inverse {inverse} [{r}, {c}]: {g} vs {want}"
                        );
                    }
                }
            }
        }
        let real = HostTensor::new(vec![2], Buffer::F64(vec![1.0, 2.0])).unwrap();
        assert!(matches!(
            transform(&real, 0, false),
            Err(KernelError::UnsupportedDType { .. })
        ));
    }
}
