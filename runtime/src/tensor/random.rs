//! Counter-based random tensors (NumPy's `default_rng(seed).uniform(...)` and friends).
//!
//! Element `i` of a random tensor is a pure function of (seed, stream, i) — Philox4x32-10,
//! see `tessera_kernels::cpu::philox` — so values do not depend on chunking or device, a
//! lost chunk is recomputed bit for bit, and a sliced random tensor generates only the
//! elements it keeps.

use super::create::check_shape;
use super::node::{Node, NodeKind};
use super::Tensor;
use crate::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use tessera_kernels::{DType, Distribution};

/// A seeded generator: each draw takes the next stream, so two draws differ and the
/// sequence of draws is reproducible from the seed.
#[derive(Debug)]
pub struct Generator {
    seed: u64,
    next_stream: AtomicU64,
}

/// A generator seeded with `seed` (NumPy's `default_rng`).
pub fn default_rng(seed: u64) -> Generator {
    Generator {
        seed,
        next_stream: AtomicU64::new(0),
    }
}

impl Generator {
    fn draw(&self, dist: Distribution, dtype: DType, shape: &[usize]) -> Tensor {
        if let Err(e) = check_shape(shape, dtype) {
            return Tensor::failed(e);
        }
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        Tensor::from_node(Node::new(
            shape.to_vec(),
            dtype,
            NodeKind::Random {
                dist,
                seed: self.seed,
                stream,
            },
        ))
    }

    /// `float64` uniform in `[low, high)`.
    pub fn uniform(&self, low: f64, high: f64, shape: &[usize]) -> Tensor {
        if !(low.is_finite() && high.is_finite() && low <= high) {
            return Tensor::failed(Error::InvalidArgument(format!(
                "uniform needs finite low <= high, got [{low}, {high})"
            )));
        }
        self.draw(Distribution::Uniform { low, high }, DType::F64, shape)
    }

    /// `float64` uniform in `[0, 1)`.
    pub fn random(&self, shape: &[usize]) -> Tensor {
        self.uniform(0.0, 1.0, shape)
    }

    /// `float64` normal with mean `mean` and standard deviation `std`.
    pub fn normal(&self, mean: f64, std: f64, shape: &[usize]) -> Tensor {
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Tensor::failed(Error::InvalidArgument(format!(
                "normal needs a finite mean and std >= 0, got ({mean}, {std})"
            )));
        }
        self.draw(Distribution::Normal { mean, std }, DType::F64, shape)
    }

    /// `int64` uniform in `[low, high)`.
    pub fn randint(&self, low: i64, high: i64, shape: &[usize]) -> Tensor {
        if low >= high {
            return Tensor::failed(Error::InvalidArgument(format!(
                "randint needs low < high, got [{low}, {high})"
            )));
        }
        self.draw(Distribution::RandInt { low, high }, DType::I64, shape)
    }
}
