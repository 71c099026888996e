//! Module functions of `tessera._tessera`: array creation, NumPy input, random numbers,
//! joining arrays and linear algebra.

use crate::array::PyTensor;
use crate::convert::{numpy_to_tensor, parse_dtype, scalar_of};
use crate::errors::type_error;
use pyo3::prelude::*;
use tessera::linalg;
use tessera::tensor::{self, random, Operand, Tensor};

/// `shape` filled with `value` (a Python scalar), converted to `dtype` when given.
#[pyfunction]
#[pyo3(signature = (shape, value, dtype=None))]
fn full(shape: Vec<usize>, value: &Bound<'_, PyAny>, dtype: Option<&str>) -> PyResult<PyTensor> {
    let value = scalar_of(value)?
        .ok_or_else(|| type_error(format!("fill value {value} is not a number")))?;
    let value = match dtype {
        Some(d) => value.cast(parse_dtype(d)?),
        None => value,
    };
    PyTensor::wrap(tensor::full(&shape, value))
}

/// `int64` values from `start` below `stop` by `step`.
#[pyfunction]
fn arange_int(start: i64, stop: i64, step: i64) -> PyResult<PyTensor> {
    PyTensor::wrap(tensor::arange(start, stop, step))
}

/// `float64` values from `start` below `stop` by `step`.
#[pyfunction]
fn arange_float(start: f64, stop: f64, step: f64) -> PyResult<PyTensor> {
    PyTensor::wrap(tensor::arange_f64(start, stop, step))
}

/// `num` evenly spaced `float64` values from `start` to `stop` inclusive.
#[pyfunction]
fn linspace(start: f64, stop: f64, num: usize) -> PyResult<PyTensor> {
    PyTensor::wrap(tensor::linspace(start, stop, num))
}

/// A C-contiguous NumPy array of a Tessera dtype, copied into a lazy array.
#[pyfunction]
fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    PyTensor::wrap(numpy_to_tensor(array)?)
}

/// The arrays joined along `axis`.
#[pyfunction]
fn concatenate(arrays: Vec<PyRef<'_, PyTensor>>, axis: isize) -> PyResult<PyTensor> {
    let tensors: Vec<&Tensor> = arrays.iter().map(|a| &a.t).collect();
    PyTensor::wrap(tensor::concatenate(&tensors, axis))
}

/// Elements of `a` where `cond` is true, else of `b`.
#[pyfunction]
fn where_(cond: &PyTensor, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let side = |x: &Bound<'_, PyAny>| -> PyResult<Operand> {
        if let Ok(t) = x.cast::<PyTensor>() {
            return Ok(Operand::Tensor(t.get().t.clone()));
        }
        scalar_of(x)?
            .map(Operand::Scalar)
            .ok_or_else(|| type_error(format!("where: {x} is neither an array nor a number")))
    };
    PyTensor::wrap(tensor::where_(&cond.t, side(a)?, side(b)?))
}

/// A random number generator (Philox, counter based: values do not depend on chunking).
#[pyclass(name = "_Generator", module = "tessera._tessera", frozen)]
struct PyGenerator {
    rng: random::Generator,
}

#[pymethods]
impl PyGenerator {
    /// `float64` uniform in `[low, high)`.
    fn uniform(&self, low: f64, high: f64, shape: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.rng.uniform(low, high, &shape))
    }

    /// `float64` normal with mean `loc` and standard deviation `scale`.
    fn normal(&self, loc: f64, scale: f64, shape: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.rng.normal(loc, scale, &shape))
    }

    /// `int64` uniform in `[low, high)`.
    fn integers(&self, low: i64, high: i64, shape: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.rng.randint(low, high, &shape))
    }

    /// `float64` uniform in `[0, 1)`.
    fn random(&self, shape: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.rng.random(&shape))
    }
}

/// A generator seeded with `seed` (NumPy's `default_rng`).
#[pyfunction]
fn default_rng(seed: u64) -> PyGenerator {
    PyGenerator {
        rng: random::default_rng(seed),
    }
}

/// Thin QR of a tall-and-skinny matrix: `(Q, R)`.
#[pyfunction]
fn qr(x: &PyTensor) -> PyResult<(PyTensor, PyTensor)> {
    let (q, r) = linalg::qr(&x.t);
    Ok((PyTensor::wrap(q)?, PyTensor::wrap(r)?))
}

/// Thin SVD: `(U, S, Vt)`, singular values descending.
#[pyfunction]
fn svd(x: &PyTensor) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (u, s, vt) = linalg::svd(&x.t);
    Ok((PyTensor::wrap(u)?, PyTensor::wrap(s)?, PyTensor::wrap(vt)?))
}

/// Randomized SVD of the top `k` singular triplets (Dask's `svd_compressed`).
#[pyfunction]
#[pyo3(signature = (x, k, n_power_iter=linalg::DEFAULT_N_POWER_ITER,
    n_oversamples=linalg::DEFAULT_N_OVERSAMPLES, seed=0))]
fn svd_compressed(
    x: &PyTensor,
    k: usize,
    n_power_iter: usize,
    n_oversamples: usize,
    seed: u64,
) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (u, s, vt) = linalg::svd_compressed(&x.t, k, n_power_iter, n_oversamples, seed);
    Ok((PyTensor::wrap(u)?, PyTensor::wrap(s)?, PyTensor::wrap(vt)?))
}

/// The Frobenius norm of a matrix, the 2-norm of a vector.
#[pyfunction]
fn norm(x: &PyTensor) -> PyResult<PyTensor> {
    PyTensor::wrap(linalg::norm(&x.t))
}

/// Adds this file's functions and classes to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange_int, m)?)?;
    m.add_function(wrap_pyfunction!(arange_float, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(default_rng, m)?)?;
    m.add_function(wrap_pyfunction!(qr, m)?)?;
    m.add_function(wrap_pyfunction!(svd, m)?)?;
    m.add_function(wrap_pyfunction!(svd_compressed, m)?)?;
    m.add_function(wrap_pyfunction!(norm, m)?)?;
    Ok(())
}
