//! `tessera._tessera._Array`: the native lazy array under `tessera.Array`.
//!
//! Operations are named by string (`unary("sqrt")`, `binary("add", other)`,
//! `reduce("sum", axes, keepdims, ddof)`) so the Python layer spells NumPy's API once, over
//! one native entry point per kind of operation. An operation Tessera rejects raises at once
//! (the Rust tensor carries the error; we do not wait for `compute`).

use crate::convert::{host_to_numpy, parse_dtype, scalar_of};
use crate::errors::{to_py, type_error, value_error};
use crate::session::{run_job, PySession};
use pyo3::prelude::*;
use tessera::tensor::{self, FftNorm, NanOp, Operand, Slice, Tensor};
use tessera::{DType, DeviceBackend, ReduceOp, Scalar};

/// A lazy, chunked n-dimensional array (wrapped by `tessera.Array`).
#[pyclass(name = "_Array", module = "tessera._tessera", frozen)]
pub struct PyTensor {
    pub(crate) t: Tensor,
}

impl PyTensor {
    /// Wraps `t`, raising the error it carries if building it failed.
    pub(crate) fn wrap(t: Tensor) -> PyResult<PyTensor> {
        match t.error() {
            Some(e) => Err(to_py(e.clone())),
            None => Ok(PyTensor { t }),
        }
    }

    fn dtype_of(&self) -> PyResult<DType> {
        self.t.dtype().map_err(to_py)
    }
}

/// 0 for bool, 1 for integers, 2 for floats (NumPy's kinds, in promotion order).
fn kind(d: DType) -> u8 {
    match d {
        DType::Bool => 0,
        d if d.is_int() => 1,
        _ => 2,
    }
}

/// A Python value on the left of an operation with `like`: a 0-d array of `like`'s dtype
/// where that dtype's kind holds the scalar (NEP 50's weak scalars), else of its own.
fn scalar_tensor(s: Scalar, like: DType) -> Tensor {
    let s = if kind(s.dtype()) <= kind(like) {
        s.cast(like)
    } else {
        s
    };
    tensor::full(&[], s)
}

/// A Python operand: a `_Array` or a scalar.
fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(a) = obj.cast::<PyTensor>() {
        return Ok(Operand::Tensor(a.get().t.clone()));
    }
    match scalar_of(obj)? {
        Some(s) => Ok(Operand::Scalar(s)),
        None => Err(type_error(format!(
            "unsupported operand type {}",
            obj.get_type()
        ))),
    }
}

/// The elementwise binary operation `name` of `a` and `b`.
fn binary_op(a: &Tensor, name: &str, b: Operand) -> PyResult<Tensor> {
    Ok(match name {
        "add" => a.add(b),
        "sub" => a.sub(b),
        "mul" => a.mul(b),
        "div" => a.div(b),
        "pow" => a.pow(b),
        "floor_divide" => a.floor_divide(b),
        "remainder" => a.remainder(b),
        "fmod" => a.fmod(b),
        "maximum" => a.maximum(b),
        "minimum" => a.minimum(b),
        "eq" => a.eq(b),
        "ne" => a.ne(b),
        "lt" => a.lt(b),
        "le" => a.le(b),
        "gt" => a.gt(b),
        "ge" => a.ge(b),
        "bitwise_and" => a.bitwise_and(b),
        "bitwise_or" => a.bitwise_or(b),
        "bitwise_xor" => a.bitwise_xor(b),
        "left_shift" => a.left_shift(b),
        "right_shift" => a.right_shift(b),
        "logical_and" => a.logical_and(b),
        "logical_or" => a.logical_or(b),
        "arctan2" => a.arctan2(b),
        "hypot" => a.hypot(b),
        "copysign" => a.copysign(b),
        "nextafter" => a.nextafter(b),
        "matmul" => match b {
            Operand::Tensor(b) => a.matmul(&b),
            Operand::Scalar(_) => return Err(value_error("matmul: operand is a scalar")),
        },
        other => return Err(value_error(format!("no binary operation {other:?}"))),
    })
}

/// The elementwise unary operation `name` of `a`.
fn unary_op(a: &Tensor, name: &str) -> PyResult<Tensor> {
    Ok(match name {
        "neg" => a.neg(),
        "abs" => a.abs(),
        "real" => a.real(),
        "imag" => a.imag(),
        "conj" => a.conj(),
        "sqrt" => a.sqrt(),
        "exp" => a.exp(),
        "log" => a.log(),
        "sin" => a.sin(),
        "cos" => a.cos(),
        "tan" => a.tan(),
        "arcsin" => a.arcsin(),
        "arccos" => a.arccos(),
        "arctan" => a.arctan(),
        "sinh" => a.sinh(),
        "cosh" => a.cosh(),
        "tanh" => a.tanh(),
        "log2" => a.log2(),
        "log10" => a.log10(),
        "log1p" => a.log1p(),
        "expm1" => a.expm1(),
        "exp2" => a.exp2(),
        "arcsinh" => a.arcsinh(),
        "arccosh" => a.arccosh(),
        "arctanh" => a.arctanh(),
        "floor" => a.floor(),
        "ceil" => a.ceil(),
        "trunc" => a.trunc(),
        "rint" => a.rint(),
        "sign" => a.sign(),
        "isnan" => a.isnan(),
        "isinf" => a.isinf(),
        "isfinite" => a.isfinite(),
        "logical_not" => a.logical_not(),
        "invert" => a.bitwise_not(),
        "transpose" => a.transpose(),
        other => return Err(value_error(format!("no unary operation {other:?}"))),
    })
}

/// The reduction `name` (with `ddof` for `var` and `std`).
fn reduce_op(name: &str, ddof: u32) -> PyResult<ReduceOp> {
    Ok(match name {
        "sum" => ReduceOp::Sum,
        "prod" => ReduceOp::Prod,
        "mean" => ReduceOp::Mean,
        "min" => ReduceOp::Min,
        "max" => ReduceOp::Max,
        "all" => ReduceOp::All,
        "any" => ReduceOp::Any,
        "count_nonzero" => ReduceOp::CountNonzero,
        "argmin" => ReduceOp::ArgMin,
        "argmax" => ReduceOp::ArgMax,
        "var" => ReduceOp::Var { ddof },
        "std" => ReduceOp::Std { ddof },
        other => return Err(value_error(format!("no reduction {other:?}"))),
    })
}

/// The NaN-skipping reduction named `name`.
fn nan_op(name: &str, ddof: u32) -> PyResult<NanOp> {
    Ok(match name {
        "sum" => NanOp::Sum,
        "mean" => NanOp::Mean,
        "min" => NanOp::Min,
        "max" => NanOp::Max,
        "argmin" => NanOp::ArgMin,
        "argmax" => NanOp::ArgMax,
        "var" => NanOp::Var(ddof),
        "std" => NanOp::Std(ddof),
        other => return Err(value_error(format!("no NaN-skipping reduction {other:?}"))),
    })
}

#[pymethods]
impl PyTensor {
    /// The shape.
    #[getter]
    fn shape(&self) -> PyResult<Vec<usize>> {
        self.t.shape().map_err(to_py)
    }

    /// The element type's NumPy name.
    #[getter]
    fn dtype(&self) -> PyResult<&'static str> {
        Ok(self.dtype_of()?.name())
    }

    /// `op(self)` elementwise (or `transpose`).
    fn unary(&self, op: &str) -> PyResult<PyTensor> {
        PyTensor::wrap(unary_op(&self.t, op)?)
    }

    /// `op(self, other)`, or `op(other, self)` with `reflected`.
    #[pyo3(signature = (op, other, reflected=false))]
    fn binary(&self, op: &str, other: &Bound<'_, PyAny>, reflected: bool) -> PyResult<PyTensor> {
        let rhs = operand(other)?;
        let t = match (reflected, rhs) {
            (false, rhs) => binary_op(&self.t, op, rhs)?,
            (true, Operand::Tensor(left)) => binary_op(&left, op, Operand::Tensor(self.t.clone()))?,
            (true, Operand::Scalar(s)) => {
                let left = scalar_tensor(s, self.dtype_of()?);
                binary_op(&left, op, Operand::Tensor(self.t.clone()))?
            }
        };
        PyTensor::wrap(t)
    }

    /// The reduction `op` over `axes` (all when `None`); with `skip_nan`, its NaN-skipping
    /// form (`sum mean min max argmin argmax var std`: NumPy's `nansum` and kin).
    #[pyo3(signature = (op, axes=None, keepdims=false, ddof=0, skip_nan=false))]
    fn reduce(
        &self,
        op: &str,
        axes: Option<Vec<isize>>,
        keepdims: bool,
        ddof: u32,
        skip_nan: bool,
    ) -> PyResult<PyTensor> {
        let axes = axes.as_deref();
        PyTensor::wrap(if skip_nan {
            self.t.nan_reduce(nan_op(op, ddof)?, axes, keepdims)
        } else {
            self.t.reduce(reduce_op(op, ddof)?, axes, keepdims)
        })
    }

    /// The running `op` (`sum` or `prod`) along `axis`, of the flattened array when `None`.
    #[pyo3(signature = (op, axis=None))]
    fn cumulative(&self, op: &str, axis: Option<isize>) -> PyResult<PyTensor> {
        PyTensor::wrap(match (op, axis) {
            ("sum", None) => self.t.cumsum(),
            ("sum", Some(a)) => self.t.cumsum_axis(a),
            ("prod", None) => self.t.cumprod(),
            ("prod", Some(a)) => self.t.cumprod_axis(a),
            (other, _) => return Err(value_error(format!("no running {other:?}"))),
        })
    }

    /// The `n`-th difference along `axis`.
    fn diff(&self, n: usize, axis: isize) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.diff(n, axis))
    }

    /// Sorted along `axis` (NaN last), or the stable sorting positions with `positions`.
    #[pyo3(signature = (axis, positions=false))]
    fn sort(&self, axis: isize, positions: bool) -> PyResult<PyTensor> {
        PyTensor::wrap(if positions {
            self.t.argsort(axis)
        } else {
            self.t.sort(axis)
        })
    }

    /// The elements at `indices` along `axis`, of the flattened array when `None`.
    #[pyo3(signature = (indices, axis=None))]
    fn take(&self, indices: Vec<i64>, axis: Option<isize>) -> PyResult<PyTensor> {
        PyTensor::wrap(match axis {
            Some(a) => self.t.take_axis(&indices, a),
            None => self.t.take(&indices),
        })
    }

    /// Whether each element is among `test`'s (not among them with `invert`).
    #[pyo3(signature = (test, invert=false))]
    fn isin(&self, test: &PyTensor, invert: bool) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.isin(&test.t, invert))
    }

    /// The outer product of both arrays flattened.
    fn outer(&self, other: &PyTensor) -> PyResult<PyTensor> {
        PyTensor::wrap(tensor::outer(&self.t, &other.t))
    }

    /// Limited to `[lo, hi]` (each an array or a scalar).
    fn clip(&self, lo: &Bound<'_, PyAny>, hi: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.clip(operand(lo)?, operand(hi)?))
    }

    /// The discrete Fourier transform along `axis` (its inverse with `inverse`), the axis
    /// cut or zero-padded to `n` points, scaled by NumPy's `norm`.
    fn fft(&self, n: Option<usize>, axis: isize, norm: &str, inverse: bool) -> PyResult<PyTensor> {
        let norm = FftNorm::from_name(norm).ok_or_else(|| {
            value_error(format!(
                "norm must be \"backward\", \"ortho\" or \"forward\", not {norm:?}"
            ))
        })?;
        PyTensor::wrap(if inverse {
            self.t.ifft(n, axis, norm)
        } else {
            self.t.fft(n, axis, norm)
        })
    }

    /// Rounded to `decimals` decimals (half to even, as NumPy).
    fn round(&self, decimals: i32) -> PyResult<PyTensor> {
        PyTensor::wrap(if decimals == 0 {
            self.t.round()
        } else {
            self.t.round_decimals(decimals)
        })
    }

    /// The sorted distinct elements, computed on `session` (their number is data).
    fn unique(&self, py: Python<'_>, session: &PySession) -> PyResult<PyTensor> {
        let s = session.get()?;
        let t = self.t.clone();
        PyTensor::wrap(run_job(py, Some(s.clone()), move || t.unique(&s))?)
    }

    /// The elements where `mask` (a bool array of the same shape) is true, in C order,
    /// computed on `session` (their number is data).
    fn boolean_mask(
        &self,
        py: Python<'_>,
        mask: &PyTensor,
        session: &PySession,
    ) -> PyResult<PyTensor> {
        let s = session.get()?;
        let (t, m) = (self.t.clone(), mask.t.clone());
        PyTensor::wrap(run_job(py, Some(s.clone()), move || {
            t.boolean_mask(&m, &s)
        })?)
    }

    /// A view through one `(start, stop, step)` per leading axis (NumPy's basic slicing).
    fn slice(&self, slices: Vec<(Option<isize>, Option<isize>, isize)>) -> PyResult<PyTensor> {
        let slices: Vec<Slice> = slices
            .into_iter()
            .map(|(start, stop, step)| Slice::new(start, stop, step))
            .collect();
        PyTensor::wrap(self.t.slice(&slices))
    }

    /// The same elements in another shape (one `-1` is inferred).
    fn reshape(&self, shape: Vec<isize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.reshape(&shape))
    }

    /// The axes permuted.
    fn permute(&self, axes: Vec<isize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.permute(&axes))
    }

    /// Broadcast to `shape`.
    fn broadcast_to(&self, shape: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.broadcast_to(&shape))
    }

    /// Converted to the dtype named `dtype`.
    fn astype(&self, dtype: &str) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.astype(parse_dtype(dtype)?))
    }

    /// The same array cut into chunks of `chunks` (one length per axis).
    fn rechunk(&self, chunks: Vec<usize>) -> PyResult<PyTensor> {
        PyTensor::wrap(self.t.rechunk(&chunks))
    }

    /// The same array computed on the devices of `backend` (`cpu`, `cuda` or `auto`; see
    /// `Tensor::to_backend`).
    fn to_backend(&self, backend: &str) -> PyResult<PyTensor> {
        let backend = backend
            .parse::<DeviceBackend>()
            .map_err(|e| to_py(e.into()))?;
        PyTensor::wrap(self.t.to_backend(backend))
    }

    /// Computes the array on `session` and returns it as a NumPy array that owns the
    /// result's buffer (no copy).
    fn compute<'py>(&self, py: Python<'py>, session: &PySession) -> PyResult<Bound<'py, PyAny>> {
        let s = session.get()?;
        let t = self.t.clone();
        let host = run_job(py, Some(s.clone()), move || t.execute(&s))?;
        host_to_numpy(py, host)
    }

    /// Computes the array on `session` and keeps its chunks there; returns an array that
    /// reads them.
    fn persist(&self, py: Python<'_>, session: &PySession) -> PyResult<PyTensor> {
        let s = session.get()?;
        let t = self.t.clone();
        PyTensor::wrap(run_job(py, Some(s.clone()), move || t.persist(&s))?)
    }
}
