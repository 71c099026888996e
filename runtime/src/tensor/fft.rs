//! NumPy's `fft.fft` and `fft.ifft`: discrete Fourier transforms along one axis, which is
//! made whole in every chunk (each lane is transformed inside one chunk task); the other
//! axes stay chunked as they are. The Python package's `fft` namespace builds the real,
//! Hermitian and n-dimensional transforms from these two.

use super::node::{Node, NodeKind};
use super::reduce::normalize_axes;
use super::{concatenate, zeros, Slice, Tensor};
use crate::error::{Error, Result};

/// The scaling of a transform pair (NumPy's `norm`): which direction divides by `n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FftNorm {
    /// The inverse divides by `n` (NumPy's default).
    #[default]
    Backward,
    /// Both directions divide by `√n` (unitary).
    Ortho,
    /// The forward transform divides by `n`.
    Forward,
}

impl FftNorm {
    /// The norm of NumPy's name (`"backward"`, `"ortho"`, `"forward"`).
    pub fn from_name(name: &str) -> Option<FftNorm> {
        match name {
            "backward" => Some(FftNorm::Backward),
            "ortho" => Some(FftNorm::Ortho),
            "forward" => Some(FftNorm::Forward),
            _ => None,
        }
    }
}

impl Tensor {
    /// NumPy's `fft.fft(x, n, axis, norm)`: the discrete Fourier transform along `axis`,
    /// `X_k = Σ x_j e^(-2πi jk/n)`, of the values as complex numbers (`float32` and
    /// `complex64` in `complex64`, anything else in `complex128`), the axis first cut or
    /// padded with zeros to `n` values when `n` is given.
    pub fn fft(&self, n: Option<usize>, axis: isize, norm: FftNorm) -> Tensor {
        self.dft(n, axis, norm, false)
            .unwrap_or_else(Tensor::failed)
    }

    /// NumPy's `fft.ifft(x, n, axis, norm)`: the inverse of [`Tensor::fft`] (`e^(+2πi jk/n)`,
    /// divided by `n` under the default norm).
    pub fn ifft(&self, n: Option<usize>, axis: isize, norm: FftNorm) -> Tensor {
        self.dft(n, axis, norm, true).unwrap_or_else(Tensor::failed)
    }

    fn dft(&self, n: Option<usize>, axis: isize, norm: FftNorm, inverse: bool) -> Result<Tensor> {
        let x = self.node()?;
        let axis = normalize_axes(&[axis], x.shape.len())?[0];
        let len = n.unwrap_or(x.shape[axis]);
        if len == 0 {
            return Err(Error::InvalidArgument(format!(
                "fft: {len} points along axis {axis}; a transform needs at least one"
            )));
        }
        let dtype = x.dtype.float_result().complex();
        let input = self.astype(dtype).resized(axis, len)?;
        let input = input.node()?;
        let kind = NodeKind::Fft {
            x: input.clone(),
            axis,
            inverse,
        };
        let out = Tensor::from_node(Node::new(input.shape.clone(), dtype, kind));
        let n = len as f64;
        Ok(match (norm, inverse) {
            (FftNorm::Backward, false) | (FftNorm::Forward, true) => out,
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => out.mul(1.0 / n),
            (FftNorm::Ortho, _) => out.mul(1.0 / n.sqrt()),
        })
    }

    /// `self` with `len` values along `axis`: its first `len`, or all of them followed by
    /// zeros.
    fn resized(&self, axis: usize, len: usize) -> Result<Tensor> {
        let x = self.node()?;
        let have = x.shape[axis];
        if len <= have {
            let mut slices = vec![Slice::all(); axis + 1];
            slices[axis] = Slice::new(None, Some(len as isize), 1);
            return Ok(if len == have {
                self.clone()
            } else {
                self.slice(&slices)
            });
        }
        let mut pad = x.shape.clone();
        pad[axis] = len - have;
        Ok(concatenate(&[self, &zeros(&pad, x.dtype)], axis as isize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norms_have_numpys_names() {
        assert_eq!(FftNorm::from_name("ortho"), Some(FftNorm::Ortho));
        assert_eq!(FftNorm::from_name("backward"), Some(FftNorm::default()));
        assert_eq!(FftNorm::from_name("unitary"), None);
    }
}
