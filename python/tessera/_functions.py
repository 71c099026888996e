"""NumPy-style module functions: creation, elementwise math, joining."""

from __future__ import annotations

import builtins
import operator
from typing import Any, Sequence, Union

import numpy as np

from . import _tessera
from ._array import Array, _dtype_name, _operand, _shape, asarray
from ._session import get_session


def full(shape: Union[int, Sequence[int]], fill_value: Any, dtype: Any = None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (its dtype is the value's: int64,
    float64 or bool, unless ``dtype`` is given)."""
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    d = None if dtype is None else _dtype_name(dtype)
    return Array(_tessera.full(_shape(shape), fill_value, d), "full")


def zeros(shape: Union[int, Sequence[int]], dtype: Any = "float64") -> Array:
    """An array of zeros (float64 unless ``dtype`` is given)."""
    return Array(_tessera.full(_shape(shape), 0, _dtype_name(dtype)), "zeros")


def ones(shape: Union[int, Sequence[int]], dtype: Any = "float64") -> Array:
    """An array of ones (float64 unless ``dtype`` is given)."""
    return Array(_tessera.full(_shape(shape), 1, _dtype_name(dtype)), "ones")


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Array:
    """Evenly spaced values in ``[start, stop)`` (``arange(n)`` is ``0..n``): int64 when
    every bound is an integer, float64 otherwise."""
    if stop is None:
        start, stop = 0, start
    ints = builtins.all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    if ints:
        out = Array(_tessera.arange_int(int(start), int(stop), int(step)), "arange")
    else:
        out = Array(_tessera.arange_float(float(start), float(stop), float(step)), "arange")
    return out if dtype is None else out.astype(dtype)


def linspace(start: float, stop: float, num: int = 50) -> Array:
    """``num`` evenly spaced float64 values from ``start`` to ``stop`` inclusive."""
    return Array(_tessera.linspace(float(start), float(stop), operator.index(num)), "linspace")


def concatenate(arrays: Sequence[Any], axis: int = 0) -> Array:
    """The arrays joined along ``axis``."""
    natives = [asarray(a)._a for a in arrays]
    return Array(_tessera.concatenate(natives, operator.index(axis)), "concatenate")


def where(condition: Any, x: Any, y: Any) -> Any:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (arrays or scalars,
    broadcast together). With a boolean :class:`Series` as ``condition``, the same on
    columns: a Series of its frame (``x`` and ``y`` scalars or Series of that frame)."""
    from ._frame import Series, series_where

    if isinstance(condition, Series):
        return series_where(condition, x, y)
    return Array(_tessera.where_(asarray(condition)._a, _operand(x), _operand(y)), "where")


def _unary(name: str, doc: str):
    def f(x: Any) -> Array:
        return asarray(x)._unary(name)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{doc}, elementwise (NumPy's ``{name}``)."
    return f


def _binary(name: str, doc: str):
    def f(x1: Any, x2: Any) -> Array:
        if isinstance(x2, Array) and not isinstance(x1, Array):
            return x2._binary(name, x1, True)
        return asarray(x1)._binary(name, x2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{doc}, elementwise with broadcasting (NumPy's ``{name}``)."
    return f


sqrt = _unary("sqrt", "Square root")
exp = _unary("exp", "Exponential")
log = _unary("log", "Natural logarithm")
log2 = _unary("log2", "Base-2 logarithm")
log10 = _unary("log10", "Base-10 logarithm")
log1p = _unary("log1p", "ln(1 + x)")
expm1 = _unary("expm1", "exp(x) - 1")
sin = _unary("sin", "Sine")
cos = _unary("cos", "Cosine")
tan = _unary("tan", "Tangent")
arcsin = _unary("arcsin", "Inverse sine")
arccos = _unary("arccos", "Inverse cosine")
arctan = _unary("arctan", "Inverse tangent")
sinh = _unary("sinh", "Hyperbolic sine")
cosh = _unary("cosh", "Hyperbolic cosine")
tanh = _unary("tanh", "Hyperbolic tangent")
arcsinh = _unary("arcsinh", "Inverse hyperbolic sine")
arccosh = _unary("arccosh", "Inverse hyperbolic cosine")
arctanh = _unary("arctanh", "Inverse hyperbolic tangent")
abs = _unary("abs", "Absolute value (of a complex value, its modulus)")  # noqa: A001 - NumPy's name
real = _unary("real", "The real part")
imag = _unary("imag", "The imaginary part")
conj = _unary("conj", "The complex conjugate")
conjugate = conj
floor = _unary("floor", "Floor")
ceil = _unary("ceil", "Ceiling")
trunc = _unary("trunc", "Truncation toward zero")
rint = _unary("rint", "Round to the nearest integer (half to even)")
sign = _unary("sign", "Sign (-1, 0, 1)")
isnan = _unary("isnan", "Whether the value is NaN")
isinf = _unary("isinf", "Whether the value is infinite")
isfinite = _unary("isfinite", "Whether the value is finite")
logical_not = _unary("logical_not", "Logical not")
maximum = _binary("maximum", "The larger value (NaN if either is NaN)")
minimum = _binary("minimum", "The smaller value (NaN if either is NaN)")
arctan2 = _binary("arctan2", "The angle of the point (x2, x1)")
hypot = _binary("hypot", "sqrt(x1**2 + x2**2)")
copysign = _binary("copysign", "The magnitude of x1 with the sign bit of x2")
nextafter = _binary("nextafter", "The next representable value after x1 towards x2")
logical_and = _binary("logical_and", "Logical and")
logical_or = _binary("logical_or", "Logical or")


def matmul(x1: Any, x2: Any) -> Array:
    """Matrix product (``x1 @ x2``: batched, in the promoted dtype, as NumPy's)."""
    return asarray(x1) @ x2


def _reduction(name: str):
    def f(x: Any, axis: Any = None, keepdims: bool = False) -> Array:
        return getattr(asarray(x), name)(axis=axis, keepdims=keepdims)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``x.{name}(axis, keepdims)`` (NumPy's ``{name}``)."
    return f


sum = _reduction("sum")  # noqa: A001
prod = _reduction("prod")
mean = _reduction("mean")
min = _reduction("min")  # noqa: A001
max = _reduction("max")  # noqa: A001
argmin = _reduction("argmin")
argmax = _reduction("argmax")
any = _reduction("any")  # noqa: A001
all = _reduction("all")  # noqa: A001


def std(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Array:
    """Standard deviation (NumPy's ``std``)."""
    return asarray(x).std(axis=axis, keepdims=keepdims, ddof=ddof)


def var(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Array:
    """Variance (NumPy's ``var``)."""
    return asarray(x).var(axis=axis, keepdims=keepdims, ddof=ddof)


def reshape(x: Any, shape: Sequence[int]) -> Array:
    """``x`` in another shape."""
    return asarray(x).reshape(shape)


def transpose(x: Any, axes: Any = None) -> Array:
    """``x`` with its axes permuted (reversed by default)."""
    return asarray(x).transpose() if axes is None else asarray(x).transpose(axes)


def _nan_reduction(name: str, doc: str):
    def f(x: Any, axis: Any = None, keepdims: bool = False) -> Array:
        return asarray(x)._nan(name, axis, keepdims)

    f.__name__ = f.__qualname__ = "nan" + name
    f.__doc__ = f"{doc}, skipping NaN (NumPy's ``nan{name}``)."
    return f


nansum = _nan_reduction("sum", "Sum (0 where nothing is left)")
nanmean = _nan_reduction("mean", "Mean (NaN where nothing is left)")
nanmin = _nan_reduction("min", "Minimum (NaN where nothing is left)")
nanmax = _nan_reduction("max", "Maximum (NaN where nothing is left)")
nanargmin = _nan_reduction("argmin", "Index of the first minimum (an all-NaN slice raises)")
nanargmax = _nan_reduction("argmax", "Index of the first maximum (an all-NaN slice raises)")


def nanstd(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Array:
    """Standard deviation skipping NaN (NumPy's ``nanstd``)."""
    return asarray(x)._nan("std", axis, keepdims, ddof)


def nanvar(x: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Array:
    """Variance skipping NaN (NumPy's ``nanvar``)."""
    return asarray(x)._nan("var", axis, keepdims, ddof)


def count_nonzero(x: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """The number of non-zero elements over ``axis`` (NumPy's ``count_nonzero``)."""
    return asarray(x)._reduce("count_nonzero", axis, keepdims)


def cumsum(x: Any, axis: Any = None) -> Array:
    """Running sum along ``axis`` (NumPy's ``cumsum``)."""
    return asarray(x).cumsum(axis)


def cumprod(x: Any, axis: Any = None) -> Array:
    """Running product along ``axis`` (NumPy's ``cumprod``)."""
    return asarray(x).cumprod(axis)


def diff(x: Any, n: int = 1, axis: int = -1) -> Array:
    """The ``n``-th difference along ``axis`` (NumPy's ``diff``)."""
    a = asarray(x)
    return Array(a._a.diff(operator.index(n), operator.index(axis)), "diff")


def sort(x: Any, axis: Any = -1) -> Array:
    """Sorted along ``axis``, NaN last (NumPy's ``sort``; the flattened array when
    ``axis`` is ``None``)."""
    return asarray(x)._sort(axis, False)


def argsort(x: Any, axis: Any = -1) -> Array:
    """The positions that sort ``x`` along ``axis`` (NumPy's ``argsort`` with a stable
    sort)."""
    return asarray(x).argsort(axis)


def unique(x: Any) -> Array:
    """The sorted distinct elements of the flattened array, NaN once (NumPy's ``unique``).
    Their number is data, so this runs a job on the default session."""
    return Array(asarray(x)._a.unique(get_session()._native), "unique")


def take(x: Any, indices: Any, axis: Any = None) -> Array:
    """The elements at ``indices`` along ``axis`` (NumPy's ``take``)."""
    return asarray(x).take(indices, axis)


def isin(element: Any, test_elements: Any, invert: bool = False) -> Array:
    """Whether each element of ``element`` is in ``test_elements`` (NumPy's ``isin``)."""
    return Array(asarray(element)._a.isin(asarray(test_elements)._a, invert), "isin")


def outer(a: Any, b: Any) -> Array:
    """The outer product of ``a`` and ``b`` flattened (NumPy's ``outer``)."""
    return Array(asarray(a)._a.outer(asarray(b)._a), "outer")


def clip(x: Any, a_min: Any = None, a_max: Any = None) -> Array:
    """``x`` limited to ``[a_min, a_max]`` (NumPy's ``clip``)."""
    return asarray(x).clip(a_min, a_max)


def round(x: Any, decimals: int = 0) -> Array:  # noqa: A001 - NumPy's name
    """``x`` rounded to ``decimals`` decimals, half to even (NumPy's ``round``)."""
    return asarray(x).round(decimals)


around = round
