"""The Python array API standard (version 2024.12) over :class:`tessera.Array`.

``x.__array_namespace__()`` returns this module, so code written against the standard
(SciPy, scikit-learn's array API mode, ``array_api_compat``) runs on Tessera's lazy,
chunked arrays::

    >>> import tessera as ts
    >>> x = ts.asarray([[1.0, 2.0], [3.0, 4.0]])
    >>> xp = x.__array_namespace__()
    >>> float(xp.sum(xp.matrix_transpose(x) @ x))
    52.0

Everything stays lazy except where the standard's answer is data (a value such as
``bool(x)``, or a shape that depends on values: ``nonzero``, ``unique_*``, boolean-mask
indexing); those run a job on the default session.

What differs from the standard, and why:

* **Data types.** Tessera computes in ``bool``, the eight integer types, ``float32``,
  ``float64``, ``complex64`` and ``complex128`` (complex values stay on the CPU in a GPU
  session). Complex values compare and sort as NumPy's do (by the real part, then the
  imaginary), where the standard leaves their order unspecified. Sums and products of the
  signed integers accumulate in ``int64``, of the unsigned ones in ``uint64``, as the
  standard says. Mixed kinds promote as NumPy does (``uint64`` with a signed integer is
  ``float64``).
* **Devices.** One device, ``"cpu"``: the session puts chunks on its CPU pool or GPUs
  itself (see :meth:`tessera.Array.to_backend`).
* **Mutation.** Arrays are expressions: ``x[key] = v`` and in-place operators
  (``x += y``) rebind ``x`` to a new array; arrays built from ``x`` before keep its old
  values. A boolean mask with an array of values computes the mask and the values at
  once (how many elements a mask selects is data).
* **Extensions.** ``linalg`` (see :mod:`tessera._linalg_ext`: what runs in chunks, and
  what is gathered into one process up to ``linalg.GATHER_LIMIT``) and ``fft`` (see
  :mod:`tessera._fft_ext`: each transformed axis is made whole per chunk).
* ``take_along_axis`` and integer array indexing (``x[i, j]``: integers and integer
  arrays, one per leading axis, broadcast together; slices beside arrays are an
  ``IndexError``) read their indices into this process, as ``take`` does.
* ``floor_divide`` (and ``//``) gives Python's and NumPy's answers where the standard lets
  a library choose them: an infinity divided by a finite number is NaN, and a finite
  number divided by an infinity of the other sign is ``-1``.
* ``searchsorted`` compares every needle with every element (``O(len(x1) * x2.size)``
  work and memory); it is meant for modest sorted arrays.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections import namedtuple
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _functions as _f
from ._array import SUPPORTED_DTYPES, Array, _operand
from ._array import asarray as _asarray
from .errors import TesseraTypeError, TesseraValueError

__array_api_version__ = "2024.12"

# --- data types and constants ------------------------------------------------------------
bool = np.dtype("bool")  # noqa: A001 - the standard's name
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

_DTYPES = {name: np.dtype(name) for name in SUPPORTED_DTYPES}
_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "integral": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
    "numeric": (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "complex64", "complex128",
    ),
}
_DEVICE = "cpu"

Axis = Union[None, int, Tuple[int, ...]]


def _dtype(dtype: Any) -> np.dtype:
    """The supported dtype ``dtype`` names (a TypeError for any other)."""
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise TesseraTypeError(f"{dtype!r} is not a dtype") from e
    if d.name not in _DTYPES:
        raise TesseraTypeError(f"dtype {d.name} is not supported; Tessera has {SUPPORTED_DTYPES}")
    return d


def _check_device(device: Any) -> None:
    if device is not None and device != _DEVICE:
        raise TesseraValueError(f"unknown device {device!r}; Tessera's array API has 'cpu'")


def _norm_axis(axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


# --- inspection ------------------------------------------------------------------------------
class _Info:
    """What this namespace supports (``__array_namespace_info__()``)."""

    def capabilities(self) -> dict:
        """Boolean indexing and data-dependent shapes are supported (each runs a job); at
        most 64 dimensions, NumPy's limit, since results come back as NumPy arrays."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        """The one device, ``"cpu"``."""
        return _DEVICE

    def default_dtypes(self, *, device: Any = None) -> dict:
        """float64 for reals, complex128 for complex values, int64 for integers and indices."""
        _check_device(device)
        return {
            "real floating": float64,
            "complex floating": complex128,
            "integral": int64,
            "indexing": int64,
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        """The supported dtypes by name, those of ``kind`` (as :func:`isdtype` takes it)."""
        _check_device(device)
        return {n: d for n, d in _DTYPES.items() if kind is None or isdtype(d, kind)}

    def devices(self) -> List[str]:
        """``["cpu"]``."""
        return [_DEVICE]


def __array_namespace_info__() -> _Info:
    """The inspection namespace of the standard."""
    return _Info()


# --- creation --------------------------------------------------------------------------------
def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: Optional[builtins.bool] = None) -> Array:
    """An array from ``obj`` (an array, a Python scalar or nested sequence, or anything with
    the buffer protocol). Data from outside Tessera is always copied once, so ``copy=False``
    is refused for it."""
    _check_device(device)
    if isinstance(obj, Array):
        if dtype is not None and _dtype(dtype) != obj.dtype:
            if copy is False:
                raise TesseraValueError("asarray(copy=False) cannot change the dtype")
            return obj.astype(_dtype(dtype))
        # A new array object unless copy=False: assigning to it leaves ``obj`` as it is.
        return obj if copy is False else Array(obj._a, obj._op, obj._chunks)
    if copy is False:
        raise TesseraValueError("asarray(copy=False): data from outside Tessera must be copied")
    return _asarray(obj, None if dtype is None else _dtype(dtype))


def arange(start: Union[int, float], /, stop: Union[int, float, None] = None, step: Union[int, float] = 1, *, dtype: Any = None, device: Any = None) -> Array:
    """Evenly spaced values in ``[start, stop)``."""
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    if dtype is not None and _dtype(dtype).kind == "f":
        start, stop, step = builtins.float(start), builtins.float(stop), builtins.float(step)
    return _f.arange(start, stop, step, None if dtype is None else _dtype(dtype))


def empty(shape: Union[int, Tuple[int, ...]], *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` (zeros: Tessera has no uninitialised memory)."""
    return zeros(shape, dtype=dtype, device=device)


def empty_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """An array like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype, device=device)


def zeros(shape: Union[int, Tuple[int, ...]], *, dtype: Any = None, device: Any = None) -> Array:
    """Zeros (float64 unless ``dtype`` is given)."""
    _check_device(device)
    return _f.zeros(shape, float64 if dtype is None else _dtype(dtype))


def ones(shape: Union[int, Tuple[int, ...]], *, dtype: Any = None, device: Any = None) -> Array:
    """Ones (float64 unless ``dtype`` is given)."""
    _check_device(device)
    return _f.ones(shape, float64 if dtype is None else _dtype(dtype))


def full(shape: Union[int, Tuple[int, ...]], fill_value: Union[builtins.bool, int, float], *, dtype: Any = None, device: Any = None) -> Array:
    """``shape`` filled with ``fill_value`` (its dtype bool, int64 or float64 unless
    ``dtype`` is given)."""
    _check_device(device)
    return _f.full(shape, fill_value, None if dtype is None else _dtype(dtype))


def _like(x: Array, dtype: Any) -> np.dtype:
    return x.dtype if dtype is None else _dtype(dtype)


def zeros_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """Zeros of ``x``'s shape (and dtype unless ``dtype`` is given)."""
    return zeros(x.shape, dtype=_like(x, dtype), device=device)


def ones_like(x: Array, /, *, dtype: Any = None, device: Any = None) -> Array:
    """Ones of ``x``'s shape (and dtype unless ``dtype`` is given)."""
    return ones(x.shape, dtype=_like(x, dtype), device=device)


def full_like(x: Array, /, fill_value: Union[builtins.bool, int, float], *, dtype: Any = None, device: Any = None) -> Array:
    """``fill_value`` in ``x``'s shape (and dtype unless ``dtype`` is given)."""
    return full(x.shape, fill_value, dtype=_like(x, dtype), device=device)


def linspace(start: Union[int, float], stop: Union[int, float], /, num: int, *, dtype: Any = None, device: Any = None, endpoint: builtins.bool = True) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included with
    ``endpoint``)."""
    _check_device(device)
    num = operator.index(num)
    if num < 0:
        raise TesseraValueError(f"linspace needs num >= 0, not {num}")
    if endpoint:
        out = _f.linspace(start, stop, num)
    else:
        out = _f.linspace(start, stop, num + 1)[:num]
    return out if dtype is None else out.astype(_dtype(dtype))


def eye(n_rows: int, n_cols: Optional[int] = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Array:
    """Ones on the ``k``-th diagonal of an ``n_rows`` × ``n_cols`` matrix, zeros elsewhere."""
    _check_device(device)
    n_cols = n_rows if n_cols is None else n_cols
    mask = _diagonal_mask(operator.index(n_rows), operator.index(n_cols), operator.index(k), operator.eq)
    return mask.astype(float64 if dtype is None else _dtype(dtype))


def _diagonal_mask(rows: int, cols: int, k: int, cmp: Any) -> Array:
    """``cmp(col - row, k)`` for every position of a ``rows`` × ``cols`` matrix."""
    # ``col - row`` lies in (-rows, cols): a k beyond gives the same mask as the bound
    # (and fits in int64 whatever k the caller passed).
    k = builtins.max(builtins.min(k, cols), -rows)
    r = _f.arange(0, rows).reshape(rows, 1)
    c = _f.arange(0, cols).reshape(1, cols)
    return cmp(c - r, k)


def _triangle(x: Array, k: int, cmp: Any) -> Array:
    if x.ndim < 2:
        raise TesseraValueError("tril and triu need an array of at least 2 dimensions")
    mask = _diagonal_mask(x.shape[-2], x.shape[-1], operator.index(k), cmp)
    return where(mask, x, zeros_like(x))


def tril(x: Array, /, *, k: int = 0) -> Array:
    """``x`` with the elements above the ``k``-th diagonal zeroed (last two axes)."""
    return _triangle(x, k, operator.le)


def triu(x: Array, /, *, k: int = 0) -> Array:
    """``x`` with the elements below the ``k``-th diagonal zeroed (last two axes)."""
    return _triangle(x, k, operator.ge)


def meshgrid(*arrays: Array, indexing: str = "xy") -> List[Array]:
    """Coordinate matrices from 1-d coordinate arrays (``"xy"`` Cartesian or ``"ij"``
    matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise TesseraValueError(f"indexing must be 'xy' or 'ij', not {indexing!r}")
    if builtins.any(a.ndim != 1 for a in arrays):
        raise TesseraValueError("meshgrid takes 1-d arrays")
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and len(arrays) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrays):
        axis = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            axis = 1 - i
        lead = [1] * len(arrays)
        lead[axis] = a.shape[0]
        out.append(broadcast_to(a.reshape(lead), tuple(shape)))
    return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: Optional[builtins.bool] = None) -> Array:
    """An array from a DLPack-exporting object (copied into Tessera's buffer)."""
    if isinstance(x, Array):
        return x
    return asarray(np.from_dlpack(x), device=device, copy=copy)


# --- data type functions ---------------------------------------------------------------------
def astype(x: Array, dtype: Any, /, *, copy: builtins.bool = True, device: Any = None) -> Array:
    """``x`` converted to ``dtype``."""
    _check_device(device)
    d = _dtype(dtype)
    if not copy and x.dtype == d:
        return x
    return x.astype(d)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is ``kind``: a dtype, one of the standard's kind names (``"bool"``,
    ``"signed integer"``, ``"unsigned integer"``, ``"integral"``, ``"real floating"``,
    ``"complex floating"``, ``"numeric"``), or a tuple of them."""
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    d = np.dtype(dtype)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise TesseraValueError(f"unknown dtype kind {kind!r}")
        return d.name in _KINDS[kind]
    return d == np.dtype(kind)


def _python_scalar(a: Any) -> builtins.bool:
    return isinstance(a, (builtins.bool, int, float, complex)) and not isinstance(a, np.generic)


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype the standard's promotion gives ``arrays_and_dtypes`` (arrays, dtypes, and
    from 2024.12 Python scalars, which take the others' dtype where they fit its kind)."""
    typed = [a for a in arrays_and_dtypes if not _python_scalar(a)]
    if not typed:
        raise TesseraValueError("result_type needs at least one array or dtype")
    dtypes = [a.dtype if isinstance(a, Array) else _dtype(a) for a in typed]
    scalars = [a for a in arrays_and_dtypes if _python_scalar(a)]
    return _dtype(np.result_type(*dtypes, *scalars))


def can_cast(from_: Any, to: Any, /) -> builtins.bool:
    """Whether ``from_`` (an array or dtype) converts to ``to`` without losing values
    (NumPy's ``"safe"`` casting, as :meth:`Array.astype` and promotion follow it)."""
    a = from_.dtype if isinstance(from_, Array) else _dtype(from_)
    return builtins.bool(np.can_cast(a, _dtype(to), casting="safe"))


class _FInfo:
    """Machine limits of a float dtype, as Python numbers (what :func:`finfo` returns)."""

    def __init__(self, dtype: np.dtype):
        f = np.finfo(dtype)
        self.bits = builtins.int(f.bits)
        self.eps = builtins.float(f.eps)
        self.max = builtins.float(f.max)
        self.min = builtins.float(f.min)
        self.smallest_normal = builtins.float(f.smallest_normal)
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype.name}, eps={self.eps}, max={self.max})"


def finfo(type: Any, /) -> _FInfo:  # noqa: A002 - the standard's name
    """Machine limits of a float dtype (``bits eps max min smallest_normal dtype``); of a
    complex dtype, those of its parts' float type (``dtype`` is that float type)."""
    d = type.dtype if isinstance(type, Array) else _dtype(type)
    if d.kind == "c":
        d = np.dtype(f"float{d.itemsize * 4}")
    if d.kind != "f":
        raise TesseraTypeError(f"finfo needs a floating dtype, not {d.name}")
    return _FInfo(d)


def iinfo(type: Any, /) -> Any:  # noqa: A002 - the standard's name
    """Limits of an integer dtype (``bits max min dtype``)."""
    d = type.dtype if isinstance(type, Array) else _dtype(type)
    if d.kind not in "iu":
        raise TesseraTypeError(f"iinfo needs an integer dtype, not {d.name}")
    return np.iinfo(d)


# --- elementwise -----------------------------------------------------------------------------
def _unary(name: str, native: str, doc: str):
    def f(x: Array, /) -> Array:
        return x._unary(native)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _binary(name: str, native: str, doc: str):
    def f(x1: Union[Array, int, float, complex], x2: Union[Array, int, float, complex], /) -> Array:
        # A Python scalar operand takes the array's dtype (2024.12's scalar operands).
        if isinstance(x2, Array) and not isinstance(x1, Array):
            return x2._binary(native, x1, True)
        return _asarray(x1)._binary(native, x2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


abs = _unary("abs", "abs", "Absolute value.")  # noqa: A001
acos = _unary("acos", "arccos", "Inverse cosine.")
asin = _unary("asin", "arcsin", "Inverse sine.")
atan = _unary("atan", "arctan", "Inverse tangent.")
ceil = _unary("ceil", "ceil", "Smallest integer not below ``x`` (integers unchanged).")
cos = _unary("cos", "cos", "Cosine.")
cosh = _unary("cosh", "cosh", "Hyperbolic cosine.")
exp = _unary("exp", "exp", "Exponential.")
expm1 = _unary("expm1", "expm1", "``exp(x) - 1``, accurate near 0.")
floor = _unary("floor", "floor", "Largest integer not above ``x`` (integers unchanged).")
isfinite = _unary("isfinite", "isfinite", "Whether ``x`` is finite.")
isinf = _unary("isinf", "isinf", "Whether ``x`` is infinite.")
isnan = _unary("isnan", "isnan", "Whether ``x`` is NaN.")
log = _unary("log", "log", "Natural logarithm.")
log1p = _unary("log1p", "log1p", "``log(1 + x)``, accurate near 0.")
log2 = _unary("log2", "log2", "Base-2 logarithm.")
log10 = _unary("log10", "log10", "Base-10 logarithm.")
logical_not = _unary("logical_not", "logical_not", "Logical not.")
negative = _unary("negative", "neg", "``-x``.")
bitwise_invert = _unary("bitwise_invert", "invert", "Bitwise not (``~x``).")
sign = _unary("sign", "sign", "-1, 0 or 1 by the sign of ``x`` (NaN stays NaN).")
sin = _unary("sin", "sin", "Sine.")
sinh = _unary("sinh", "sinh", "Hyperbolic sine.")
sqrt = _unary("sqrt", "sqrt", "Square root.")
tan = _unary("tan", "tan", "Tangent.")
tanh = _unary("tanh", "tanh", "Hyperbolic tangent.")
trunc = _unary("trunc", "trunc", "Rounded toward zero (integers unchanged).")

add = _binary("add", "add", "``x1 + x2``.")
atan2 = _binary("atan2", "arctan2", "The angle of the point ``(x2, x1)``.")
bitwise_and = _binary("bitwise_and", "bitwise_and", "``x1 & x2``.")
bitwise_or = _binary("bitwise_or", "bitwise_or", "``x1 | x2``.")
bitwise_xor = _binary("bitwise_xor", "bitwise_xor", "``x1 ^ x2``.")
bitwise_left_shift = _binary("bitwise_left_shift", "left_shift", "``x1 << x2``.")
bitwise_right_shift = _binary("bitwise_right_shift", "right_shift", "``x1 >> x2``.")
divide = _binary("divide", "div", "``x1 / x2``.")
equal = _binary("equal", "eq", "``x1 == x2``.")
floor_divide = _binary("floor_divide", "floor_divide", "``x1 // x2``.")
greater = _binary("greater", "gt", "``x1 > x2``.")
greater_equal = _binary("greater_equal", "ge", "``x1 >= x2``.")
hypot = _binary("hypot", "hypot", "``sqrt(x1**2 + x2**2)`` without undue overflow.")
less = _binary("less", "lt", "``x1 < x2``.")
less_equal = _binary("less_equal", "le", "``x1 <= x2``.")
logical_and = _binary("logical_and", "logical_and", "Logical and.")
logical_or = _binary("logical_or", "logical_or", "Logical or.")
maximum = _binary("maximum", "maximum", "The larger value (NaN if either is NaN).")
minimum = _binary("minimum", "minimum", "The smaller value (NaN if either is NaN).")
multiply = _binary("multiply", "mul", "``x1 * x2``.")
not_equal = _binary("not_equal", "ne", "``x1 != x2``.")
pow = _binary("pow", "pow", "``x1 ** x2``.")  # noqa: A001
remainder = _binary("remainder", "remainder", "``x1 % x2``, with the sign of ``x2``.")
subtract = _binary("subtract", "sub", "``x1 - x2``.")


def logical_xor(x1: Array, x2: Array, /) -> Array:
    """Logical exclusive or (bools)."""
    return not_equal(x1, x2)


def positive(x: Array, /) -> Array:
    """``+x``."""
    return x


def square(x: Array, /) -> Array:
    """``x * x``."""
    return x * x


def round(x: Array, /) -> Array:  # noqa: A001 - the standard's name
    """Rounded to the nearest integer, halves to even (integers unchanged)."""
    return x.round(0)


def clip(x: Array, /, min: Any = None, max: Any = None) -> Array:  # noqa: A002
    """``x`` limited to ``[min, max]`` (either may be ``None``)."""
    if min is None and max is None:
        return x
    return x.clip(min, max)


conj = _unary("conj", "conj", "The complex conjugate (a real ``x`` itself).")
real = _unary("real", "real", "The real part, of the parts' float type (a real ``x`` itself).")
imag = _unary("imag", "imag", "The imaginary part, of the parts' float type.")


def signbit(x: Array, /) -> Array:
    """Whether the sign bit of ``x`` is set (true for ``-0.0`` and a negative NaN)."""
    if x.dtype.kind != "f":
        return x < 0
    return x._binary("copysign", 1.0, True) < 0


copysign = _binary("copysign", "copysign", "The magnitude of ``x1`` with the sign bit of ``x2``.")
nextafter = _binary(
    "nextafter", "nextafter",
    "The next representable value after ``x1`` towards ``x2`` (``x2`` where they are equal) (2024.12).",
)


def logaddexp(x1: Array, x2: Array, /) -> Array:
    """``log(exp(x1) + exp(x2))`` without overflow (a Python scalar takes the other's dtype)."""
    if not isinstance(x1, Array):
        x1 = _asarray(x1, dtype=x2.dtype)
    if not isinstance(x2, Array):
        x2 = _asarray(x2, dtype=x1.dtype)
    big = maximum(x1, x2)
    rest = big + log1p(exp(-abs(x1 - x2)))
    return where(x1 == x2, x1 + math.log(2.0), rest)


acosh = _unary("acosh", "arccosh", "Inverse hyperbolic cosine.")
asinh = _unary("asinh", "arcsinh", "Inverse hyperbolic sine.")
atanh = _unary("atanh", "arctanh", "Inverse hyperbolic tangent.")


# --- manipulation ----------------------------------------------------------------------------
def broadcast_to(x: Array, /, shape: Tuple[int, ...]) -> Array:
    """``x`` broadcast to ``shape``."""
    return Array(x._a.broadcast_to([operator.index(n) for n in shape]), "broadcast_to")


def broadcast_arrays(*arrays: Array) -> List[Array]:
    """The arrays broadcast to one shape."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return [broadcast_to(a, shape) for a in arrays]


def concat(arrays: Union[Tuple[Array, ...], List[Array]], /, *, axis: Optional[int] = 0) -> Array:
    """The arrays joined along ``axis`` (flattened first when ``None``), promoted to one
    dtype."""
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [reshape(a, (-1,)) for a in arrays], 0
    d = result_type(*arrays)
    return _f.concatenate([a.astype(d) if a.dtype != d else a for a in arrays], axis)


def expand_dims(x: Array, /, axis: int = 0) -> Array:
    """``x`` with a new axis of length 1 at ``axis``."""
    axis = _norm_axis(axis, x.ndim + 1)
    shape = list(x.shape)
    shape.insert(axis, 1)
    return x.reshape(shape)


def flip(x: Array, /, *, axis: Axis = None) -> Array:
    """``x`` with the order of elements reversed along ``axis`` (every axis when ``None``)."""
    axes = range(x.ndim) if axis is None else _axes(axis, x.ndim)
    key = tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(x.ndim))
    return x[key]


def _axes(axis: Union[int, Tuple[int, ...]], ndim: int) -> List[int]:
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = [_norm_axis(a, ndim) for a in axes]
    if len(set(out)) != len(out):
        raise TesseraValueError(f"repeated axis in {axis}")
    return out


def permute_dims(x: Array, /, axes: Tuple[int, ...]) -> Array:
    """``x`` with its axes permuted."""
    return x.transpose(tuple(axes))


def moveaxis(x: Array, source: Union[int, Tuple[int, ...]], destination: Union[int, Tuple[int, ...]], /) -> Array:
    """``x`` with the axes ``source`` moved to ``destination``."""
    src, dst = _axes(source, x.ndim), _axes(destination, x.ndim)
    if len(src) != len(dst):
        raise TesseraValueError("source and destination need the same number of axes")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(tuple(order))


def reshape(x: Array, /, shape: Tuple[int, ...], *, copy: Optional[builtins.bool] = None) -> Array:
    """``x`` in another shape (one ``-1`` is inferred)."""
    return x.reshape(tuple(shape))


def squeeze(x: Array, /, axis: Union[int, Tuple[int, ...]]) -> Array:
    """``x`` without the axes ``axis``, which must have length 1."""
    axes = _axes(axis, x.ndim)
    if builtins.any(x.shape[a] != 1 for a in axes):
        raise TesseraValueError(f"cannot squeeze axes {axis} of shape {x.shape}: not of length 1")
    return x.reshape([n for d, n in enumerate(x.shape) if d not in axes])


def stack(arrays: Union[Tuple[Array, ...], List[Array]], /, *, axis: int = 0) -> Array:
    """The arrays (of one shape) joined along a new axis ``axis``."""
    arrays = list(arrays)
    if len({a.shape for a in arrays}) > 1:
        raise TesseraValueError("stack needs arrays of one shape")
    axis = _norm_axis(axis, arrays[0].ndim + 1)
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def unstack(x: Array, /, *, axis: int = 0) -> Tuple[Array, ...]:
    """The slices of ``x`` along ``axis``."""
    axis = _norm_axis(axis, x.ndim)
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))


def roll(x: Array, /, shift: Union[int, Tuple[int, ...]], *, axis: Axis = None) -> Array:
    """``x`` with its elements shifted by ``shift`` along ``axis`` (of the flattened array
    when ``None``), wrapping around."""
    if axis is None:
        return roll(reshape(x, (-1,)), shift, axis=0).reshape(x.shape)
    shifts = [shift] if isinstance(shift, (int, np.integer)) else list(shift)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if len(shifts) != len(axes):
        raise TesseraValueError("roll needs one shift per axis")
    for s, a in zip(shifts, axes):
        a = _norm_axis(a, x.ndim)
        n = x.shape[a]
        s = operator.index(s) % n if n else 0
        if s:
            lead = (slice(None),) * a
            x = concat([x[lead + (slice(n - s, None),)], x[lead + (slice(0, n - s),)]], axis=a)
    return x


def repeat(x: Array, repeats: Union[int, Array], /, *, axis: Optional[int] = None) -> Array:
    """Each element of ``x`` repeated ``repeats`` times (an int, or one count per element
    along ``axis``) along ``axis`` (of the flattened array when ``None``)."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    axis = _norm_axis(axis, x.ndim)
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iu" or (counts < 0).any():
        raise TesseraValueError("repeats must be non-negative integers")
    index = np.repeat(np.arange(x.shape[axis]), counts)
    return x.take(index, axis)


def tile(x: Array, repetitions: Tuple[int, ...], /) -> Array:
    """``x`` repeated ``repetitions[i]`` times along each axis ``i`` (leading axes are
    added where ``repetitions`` is longer)."""
    reps = [operator.index(r) for r in repetitions]
    ndim = builtins.max(len(reps), x.ndim)
    reps = [1] * (ndim - len(reps)) + reps
    x = x.reshape([1] * (ndim - x.ndim) + list(x.shape))
    for axis, r in enumerate(reps):
        if r != 1:
            x = concat([x] * r, axis=axis) if r else x[(slice(None),) * axis + (slice(0, 0),)]
    return x


# --- indexing, searching, sets, sorting ----------------------------------------------------
def take(x: Array, indices: Array, /, *, axis: Optional[int] = None) -> Array:
    """The elements at ``indices`` (a 1-d integer array) along ``axis`` (needed unless
    ``x`` is 1-d)."""
    if axis is None:
        if x.ndim != 1:
            raise TesseraValueError("take needs axis for an array of more than one dimension")
        axis = 0
    idx = np.asarray(indices)
    return x.take(idx, axis)


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """The elements of ``x`` at ``indices`` along ``axis``, position by position
    (2024.12; NumPy's ``take_along_axis``): ``indices`` has ``x``'s dimensions, the other
    axes broadcasting. The indices are read into this process (as :func:`take` reads
    them) and become one gather from the flattened ``x``."""
    idx = np.asarray(indices)
    if idx.ndim != x.ndim or (idx.size and idx.dtype.kind not in "iu"):
        raise IndexError(
            f"take_along_axis needs integer indices of {x.ndim} dimensions, got {idx.dtype} of {idx.ndim}")
    axis = _norm_axis(axis, x.ndim)
    n = x.shape[axis]
    shape = []
    for d, (a, b) in enumerate(zip(x.shape, idx.shape)):
        if d == axis:
            shape.append(b)
        elif a == b or 1 in (a, b):
            shape.append(a if b == 1 else b)
        else:
            raise ValueError(f"take_along_axis: shapes {x.shape} and {idx.shape} do not broadcast")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"take_along_axis: an index is out of range for axis {axis} of length {n}")
    idx = np.broadcast_to(np.where(idx < 0, idx + n, idx), shape)
    # Each position's offset into x's elements (C order); x's axes of length 1 broadcast.
    strides = np.cumprod((x.shape[1:] + (1,))[::-1])[::-1]
    flat = np.zeros(shape, np.int64)
    for d, (length, stride) in enumerate(zip(x.shape, strides)):
        if d == axis:
            flat += idx * stride
        elif length > 1:
            flat += np.arange(length).reshape([-1 if e == d else 1 for e in range(x.ndim)]) * stride
    return x.reshape((-1,)).take(flat.reshape(-1)).reshape(tuple(shape))


def where(condition: Array, x1: Any, x2: Any, /) -> Array:
    """Elements of ``x1`` where ``condition`` holds, else of ``x2`` (broadcast together)."""
    return _f.where(condition, x1, x2)


def argmax(x: Array, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> Array:
    """Index of the first maximum along ``axis`` (flat when ``None``)."""
    return x.argmax(axis=axis, keepdims=keepdims)


def argmin(x: Array, /, *, axis: Optional[int] = None, keepdims: builtins.bool = False) -> Array:
    """Index of the first minimum along ``axis`` (flat when ``None``)."""
    return x.argmin(axis=axis, keepdims=keepdims)


def nonzero(x: Array, /) -> Tuple[Array, ...]:
    """The indices of the non-zero elements, one int64 array per axis, in C order (a job
    runs: their number is data)."""
    if x.ndim == 0:
        raise TesseraValueError("nonzero needs an array of at least one dimension")
    mask = x != 0 if x.dtype != bool else x
    out = []
    for axis, n in enumerate(x.shape):
        shape = [1] * x.ndim
        shape[axis] = n
        grid = broadcast_to(_f.arange(0, n).reshape(shape), x.shape)
        out.append(grid[mask])
    return tuple(out)


def searchsorted(x1: Array, x2: Array, /, *, side: str = "left", sorter: Optional[Array] = None) -> Array:
    """Where the values ``x2`` would go in the sorted 1-d ``x1`` (before equal elements
    with ``side="left"``, after them with ``"right"``)."""
    if side not in ("left", "right"):
        raise TesseraValueError(f"side must be 'left' or 'right', not {side!r}")
    if x1.ndim != 1:
        raise TesseraValueError("searchsorted needs a 1-d x1")
    if sorter is not None:
        x1 = take(x1, sorter)
    needles = x2.reshape(tuple(x2.shape) + (1,))
    before = x1 < needles if side == "left" else x1 <= needles
    return before.astype(int64).sum(axis=-1)


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


_Runs = namedtuple("_Runs", ["order", "values", "starts", "runs"])


def _sorted_runs(x: Array, with_order: builtins.bool) -> Optional[_Runs]:
    """Of the flattened ``x`` (``None`` when it is empty): the stable sorting order (only
    ``with_order``), the sorted values, where each run of equal values starts (NaNs are
    never equal) and the int64 run number of each sorted element. The order and the values
    are persisted: the masks that pick from them (each a job) read them instead of sorting
    again."""
    flat = reshape(x, (-1,))
    if flat.shape[0] == 0:
        return None
    values = _f.sort(flat, 0).persist()
    starts = concat([ones((1,), dtype=bool), values[1:] != values[:-1]])
    runs = starts.astype(int64).cumsum() - 1
    return _Runs(flat.argsort().persist() if with_order else None, values, starts, runs)


def _counts(r: _Runs) -> Array:
    """How many elements each run holds."""
    n = r.values.shape[0]
    first = _f.arange(0, n)[r.starts]
    return concat([first[1:], full((1,), n, dtype=int64)]) - first


def _inverse(r: _Runs, shape: Tuple[int, ...]) -> Array:
    """For each element of the array (in ``shape``), the number of its value's run."""
    return r.runs.take(np.asarray(r.order.argsort()), 0).reshape(shape)


def unique_values(x: Array, /) -> Array:
    """The distinct elements of ``x``, sorted (every NaN is distinct, as the standard
    says)."""
    r = _sorted_runs(x, False)
    return reshape(x, (-1,)) if r is None else r.values[r.starts]


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """``(values, counts)``: the distinct elements and how often each occurs."""
    r = _sorted_runs(x, False)
    if r is None:
        return UniqueCountsResult(reshape(x, (-1,)), zeros((0,), dtype=int64))
    return UniqueCountsResult(r.values[r.starts], _counts(r))


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """``(values, inverse_indices)``: the distinct elements, and for each element of ``x``
    the position of its value among them (in ``x``'s shape)."""
    r = _sorted_runs(x, True)
    if r is None:
        return UniqueInverseResult(reshape(x, (-1,)), zeros(x.shape, dtype=int64))
    return UniqueInverseResult(r.values[r.starts], _inverse(r, x.shape))


def unique_all(x: Array, /) -> UniqueAllResult:
    """``(values, indices, inverse_indices, counts)``: the distinct elements, the flat
    index of each one's first occurrence, the inverse indices and the counts."""
    r = _sorted_runs(x, True)
    if r is None:
        none = zeros((0,), dtype=int64)
        return UniqueAllResult(reshape(x, (-1,)), none, zeros(x.shape, dtype=int64), none)
    return UniqueAllResult(r.values[r.starts], r.order[r.starts], _inverse(r, x.shape), _counts(r))


def sort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Array:
    """``x`` sorted along ``axis`` (NaN last ascending, first descending)."""
    out = _f.sort(x, axis)
    return flip(out, axis=axis) if descending else out


def argsort(x: Array, /, *, axis: int = -1, descending: builtins.bool = False, stable: builtins.bool = True) -> Array:
    """The positions that sort ``x`` along ``axis`` (stable: equal elements keep their
    order, also when ``descending``)."""
    if not descending:
        return x.argsort(axis)
    axis = _norm_axis(axis, x.ndim)
    # Ascending order of the reversed lane, reversed again: descending, ties in order.
    back = flip(flip(x, axis=axis).argsort(axis), axis=axis)
    return (x.shape[axis] - 1) - back


# --- statistics ------------------------------------------------------------------------------
def _in_dtype(x: Array, dtype: Any, op: Any) -> Array:
    """``op(x)`` computed in ``dtype`` when it is given (the result has that dtype, integers
    wrapping as NumPy's do), else in Tessera's accumulation dtype."""
    if dtype is None:
        return op(x)
    d = _dtype(dtype)
    return op(x.astype(d)).astype(d)


def sum(x: Array, /, *, axis: Axis = None, dtype: Any = None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Sum over ``axis`` (signed integers in int64, unsigned in uint64; in ``dtype`` when
    given)."""
    return _in_dtype(x, dtype, lambda v: v.sum(axis=axis, keepdims=keepdims))


def prod(x: Array, /, *, axis: Axis = None, dtype: Any = None, keepdims: builtins.bool = False) -> Array:
    """Product over ``axis`` (signed integers in int64, unsigned in uint64; in ``dtype``
    when given)."""
    return _in_dtype(x, dtype, lambda v: v.prod(axis=axis, keepdims=keepdims))


def _cumulative(name: str, x: Array, axis: Optional[int], dtype: Any, include_initial: builtins.bool) -> Array:
    """The running ``sum`` or ``prod`` along ``axis`` (required unless ``x`` is 1-d),
    starting with the identity when ``include_initial``."""
    if axis is None:
        if x.ndim != 1:
            raise TesseraValueError(f"cumulative_{name} needs axis for an array of more than one dimension")
        axis = 0
    axis = _norm_axis(axis, x.ndim)
    out = _in_dtype(x, dtype, lambda v: v.cumsum(axis) if name == "sum" else v.cumprod(axis))
    if include_initial:
        shape = list(out.shape)
        shape[axis] = 1
        identity = zeros if name == "sum" else ones
        out = concat([identity(tuple(shape), dtype=out.dtype), out], axis=axis)
    return out


def cumulative_sum(x: Array, /, *, axis: Optional[int] = None, dtype: Any = None, include_initial: builtins.bool = False) -> Array:
    """Running sum along ``axis`` (required unless ``x`` is 1-d), starting with 0 when
    ``include_initial``."""
    return _cumulative("sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis: Optional[int] = None, dtype: Any = None, include_initial: builtins.bool = False) -> Array:
    """Running product along ``axis`` (required unless ``x`` is 1-d), starting with 1 when
    ``include_initial`` (2024.12)."""
    return _cumulative("prod", x, axis, dtype, include_initial)


def count_nonzero(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:
    """The number of non-zero elements over ``axis``, as int64 (2024.12)."""
    return _f.count_nonzero(x, axis, keepdims)


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Optional[Array] = None, append: Optional[Array] = None) -> Array:
    """The ``n``-th forward difference along ``axis``, of ``x`` with ``prepend`` before it
    and ``append`` after it along that axis (2024.12)."""
    axis = _norm_axis(axis, x.ndim)
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    return _f.diff(x, n, axis)


def reciprocal(x: Array, /) -> Array:
    """``1 / x`` (2024.12)."""
    return divide(1.0, x)


def mean(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:
    """Mean over ``axis`` (NaN over nothing)."""
    return x.mean(axis=axis, keepdims=keepdims)


def max(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Maximum over ``axis`` (NaN if any element is NaN)."""
    return x.max(axis=axis, keepdims=keepdims)


def min(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Minimum over ``axis`` (NaN if any element is NaN)."""
    return x.min(axis=axis, keepdims=keepdims)


def _spread(x: Array, op: str, axis: Axis, correction: Union[int, float], keepdims: builtins.bool) -> Array:
    """``x.var`` or ``x.std`` with ``correction`` degrees of freedom removed: Tessera's own
    ``ddof`` when it is an integer, else the population variance scaled by
    ``n / (n - correction)``."""
    if correction < 0:
        raise TesseraValueError(f"correction must not be negative, not {correction}")
    if builtins.int(correction) == correction:
        return getattr(x, op)(axis=axis, keepdims=keepdims, ddof=builtins.int(correction))
    axes = range(x.ndim) if axis is None else _axes(axis, x.ndim)
    n = builtins.int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    scale = n / (n - correction) if n > correction else math.inf
    v = x.var(axis=axis, keepdims=keepdims) * scale
    return sqrt(v) if op == "std" else v


def std(x: Array, /, *, axis: Axis = None, correction: Union[int, float] = 0.0, keepdims: builtins.bool = False) -> Array:
    """Standard deviation over ``axis`` with ``correction`` degrees of freedom removed."""
    return _spread(x, "std", axis, correction, keepdims)


def var(x: Array, /, *, axis: Axis = None, correction: Union[int, float] = 0.0, keepdims: builtins.bool = False) -> Array:
    """Variance over ``axis`` with ``correction`` degrees of freedom removed."""
    return _spread(x, "var", axis, correction, keepdims)


def all(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Whether every element over ``axis`` is non-zero."""
    return x.all(axis=axis, keepdims=keepdims)


def any(x: Array, /, *, axis: Axis = None, keepdims: builtins.bool = False) -> Array:  # noqa: A001
    """Whether any element over ``axis`` is non-zero."""
    return x.any(axis=axis, keepdims=keepdims)


# --- linear algebra --------------------------------------------------------------------------
def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product ``x1 @ x2`` in the promoted dtype, batched over leading axes
    (broadcast), a 1-d operand taken as a row (first) or column (second) vector.

    Float and complex matrices go to Tessera's chunked matrix product (computed in
    float64, a complex one from four real products, then rounded to float32 or complex64
    where both operands are). Integer and batched products are summed
    products over a broadcast ``(..., m, k, n)`` expression, exact with NumPy's wrapping
    integer arithmetic."""
    if x1.ndim == 0 or x2.ndim == 0:
        raise TesseraValueError("matmul does not take 0-d arrays")
    d = result_type(x1, x2)
    a = x1.reshape(1, -1) if x1.ndim == 1 else x1
    b = x2.reshape(-1, 1) if x2.ndim == 1 else x2
    if a.shape[-1] != b.shape[-2]:
        raise TesseraValueError(f"matmul: inner dimensions differ ({x1.shape} @ {x2.shape})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if not batch and d.kind in "fc":
        out = Array(a._a.binary("matmul", b._a, False), "matmul").astype(d)
    else:
        # (..., m, k, 1) * (..., 1, k, n) summed over k.
        left = a.astype(d).reshape(a.shape + (1,))
        right = b.astype(d).reshape(b.shape[:-2] + (1,) + b.shape[-2:])
        out = sum(left * right, axis=-2, dtype=d if d.kind in "fc" else None).astype(d)
    if x1.ndim == 1:
        out = squeeze(out, -2)
    if x2.ndim == 1:
        out = squeeze(out, -1)
    return out


def matrix_transpose(x: Array, /) -> Array:
    """``x`` with its last two axes swapped."""
    if x.ndim < 2:
        raise TesseraValueError("matrix_transpose needs an array of at least 2 dimensions")
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return x.transpose(tuple(axes))


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot product of ``x1`` and ``x2`` along ``axis`` (the other axes broadcast), in
    the promoted dtype; a complex ``x1`` is conjugated (``sum(conj(x1) * x2)``)."""
    if x1.ndim == 0 or x2.ndim == 0:
        raise TesseraValueError("vecdot does not take 0-d arrays")
    if x1.shape[_norm_axis(axis, x1.ndim)] != x2.shape[_norm_axis(axis, x2.ndim)]:
        raise TesseraValueError(f"vecdot: axis {axis} differs in length ({x1.shape}, {x2.shape})")
    d = result_type(x1, x2)
    x1, x2 = broadcast_arrays(conj(x1), x2)
    return sum(x1 * x2, axis=axis).astype(d)


def tensordot(x1: Array, x2: Array, /, *, axes: Union[int, Tuple[Sequence[int], Sequence[int]]] = 2) -> Array:
    """The sum of products over the axes ``axes`` (the last ``axes`` of ``x1`` with the
    first of ``x2``, or two lists of axes)."""
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        a1 = list(range(x1.ndim - n, x1.ndim))
        a2 = list(range(n))
    else:
        a1 = [_norm_axis(a, x1.ndim) for a in axes[0]]
        a2 = [_norm_axis(a, x2.ndim) for a in axes[1]]
    if len(a1) != len(a2) or builtins.any(x1.shape[i] != x2.shape[j] for i, j in zip(a1, a2)):
        raise TesseraValueError("tensordot: the contracted axes differ in number or length")
    free1 = [d for d in range(x1.ndim) if d not in a1]
    free2 = [d for d in range(x2.ndim) if d not in a2]
    k = int(np.prod([x1.shape[d] for d in a1], dtype=np.int64))
    m = int(np.prod([x1.shape[d] for d in free1], dtype=np.int64))
    n = int(np.prod([x2.shape[d] for d in free2], dtype=np.int64))
    left = x1.transpose(tuple(free1 + a1)).reshape(m, k)
    right = x2.transpose(tuple(a2 + free2)).reshape(k, n)
    shape = [x1.shape[d] for d in free1] + [x2.shape[d] for d in free2]
    return matmul(left, right).reshape(shape)


from . import _linalg_ext as linalg  # noqa: E402 - the standard's extension, after its base
from . import _fft_ext as fft  # noqa: E402 - the standard's extension, after its base

__all__ = [name for name in dir() if not name.startswith("_") and name not in (
    "annotations", "builtins", "math", "operator", "np", "Any", "List", "Optional", "Sequence",
    "Tuple", "Union", "Array", "SUPPORTED_DTYPES", "TesseraTypeError", "TesseraValueError",
    "Axis", "namedtuple",
)] + ["__array_namespace_info__"]
