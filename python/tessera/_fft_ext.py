"""The array API standard's ``fft`` extension (``tessera.array_api.fft``), lazy and chunked.

A transform along an axis runs each lane inside one chunk task: that axis is made whole
in every chunk (as ``sort`` does), the others stay as they are. ``fft`` and ``ifft`` are
Tessera's kernels (``rustfft``: O(n log n) for every length); the real, Hermitian and
n-dimensional transforms are built from them as NumPy defines them (``rfft`` keeps the
first ``n // 2 + 1`` frequencies; ``irfft`` completes the Hermitian spectrum and keeps the
real part; the n-dimensional ones transform one axis after another). ``float32`` and
``complex64`` transform in ``complex64``, everything else in ``complex128``, as NumPy 2.
"""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import array_api as _xp  # complete: array_api imports this module at its end
from ._array import Array
from .errors import TesseraTypeError, TesseraValueError

_NORMS = ("backward", "ortho", "forward")


def _norm(norm: str) -> str:
    if norm not in _NORMS:
        raise TesseraValueError(f"norm must be one of {_NORMS}, not {norm!r}")
    return norm


def _swapped(norm: str) -> str:
    """The norm of the opposite direction (NumPy's Hermitian transforms use it)."""
    return {"backward": "forward", "forward": "backward"}.get(_norm(norm), norm)


def _points(n: Optional[int]) -> Optional[int]:
    if n is None:
        return None
    n = operator.index(n)
    if n < 1:
        raise TesseraValueError(f"invalid number of FFT points {n}: it must be at least 1")
    return n


def _dft(x: Array, n: Optional[int], axis: int, norm: str, inverse: bool) -> Array:
    return Array(x._a.fft(_points(n), operator.index(axis), _norm(norm), inverse), "fft")


def fft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The one-dimensional discrete Fourier transform along ``axis``."""
    return _dft(x, n, axis, norm, False)


def ifft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`fft`."""
    return _dft(x, n, axis, norm, True)


def _real_input(x: Array, name: str) -> None:
    if x.dtype.kind == "c":
        raise TesseraTypeError(f"fft.{name} takes real values, not {x.dtype.name}")


def rfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The transform of real values along ``axis``: its ``n // 2 + 1`` non-negative
    frequencies (the others are their conjugates)."""
    _real_input(x, "rfft")
    full = fft(x, n=n, axis=axis, norm=norm)
    axis = _xp._norm_axis(axis, x.ndim)
    keep = full.shape[axis] // 2 + 1
    return full[(slice(None),) * axis + (slice(0, keep),)]


def irfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`rfft`: ``n`` real values (``2 * (m - 1)`` by default, for ``m``
    frequencies along ``axis``) from the non-negative frequencies."""
    axis = _xp._norm_axis(axis, x.ndim)
    n = _points(n) if n is not None else 2 * (x.shape[axis] - 1)
    if n < 1:
        raise TesseraValueError(f"invalid number of FFT points {n}: it must be at least 1")
    lead = (slice(None),) * axis
    half = _resized(_complex(x), axis, n // 2 + 1)
    # The negative frequencies: conjugates of the positive ones, in reverse order.
    tail = _xp.conj(_xp.flip(half[lead + (slice(1, n - n // 2),)], axis=axis))
    full = _xp.concat([half, tail], axis=axis)
    return _xp.real(ifft(full, n=n, axis=axis, norm=norm))


def hfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The transform of a signal with Hermitian symmetry (given by its non-negative half):
    ``n`` real values."""
    return irfft(_xp.conj(_complex(x)), n=n, axis=axis, norm=_swapped(norm))


def ihfft(x: Array, /, *, n: Optional[int] = None, axis: int = -1, norm: str = "backward") -> Array:
    """The inverse of :func:`hfft`: the non-negative half of a Hermitian spectrum."""
    _real_input(x, "ihfft")
    return _xp.conj(rfft(x, n=n, axis=axis, norm=_swapped(norm)))


def _axes_and_sizes(x: Array, s: Optional[Sequence[int]], axes: Optional[Sequence[int]]) -> Tuple[list, list]:
    """The axes an n-dimensional transform runs along and their sizes (the standard's
    rules: all axes by default; ``s`` and ``axes`` of one length when both are given)."""
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    axes = [_xp._norm_axis(a, x.ndim) for a in axes]
    if s is None:
        s = [x.shape[a] for a in axes]
    s = list(s)
    if len(s) != len(axes):
        raise TesseraValueError(f"s {s} and axes {axes} differ in length")
    return axes, [x.shape[a] if m == -1 else m for a, m in zip(axes, s)]


def fftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: str = "backward") -> Array:
    """The n-dimensional transform over ``axes`` (every axis by default)."""
    axes, sizes = _axes_and_sizes(x, s, axes)
    for a, m in zip(axes, sizes):
        x = fft(x, n=m, axis=a, norm=norm)
    return x if axes else _complex(x)


def ifftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: str = "backward") -> Array:
    """The inverse of :func:`fftn`."""
    axes, sizes = _axes_and_sizes(x, s, axes)
    for a, m in zip(axes, sizes):
        x = ifft(x, n=m, axis=a, norm=norm)
    return x if axes else _complex(x)


def rfftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: str = "backward") -> Array:
    """The n-dimensional transform of real values: :func:`rfft` over the last of ``axes``,
    then :func:`fft` over the others."""
    _real_input(x, "rfftn")
    axes, sizes = _axes_and_sizes(x, s, axes)
    if not axes:
        return _complex(x)
    x = rfft(x, n=sizes[-1], axis=axes[-1], norm=norm)
    for a, m in zip(axes[:-1], sizes[:-1]):
        x = fft(x, n=m, axis=a, norm=norm)
    return x


def irfftn(x: Array, /, *, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: str = "backward") -> Array:
    """The inverse of :func:`rfftn`: :func:`ifft` over all but the last of ``axes``, then
    :func:`irfft` over the last (``2 * (m - 1)`` values unless ``s`` says)."""
    axes, sizes = _axes_and_sizes(x, s, axes)
    if not axes:
        return _xp.real(_complex(x))
    if s is None:
        sizes[-1] = 2 * (x.shape[axes[-1]] - 1)
    for a, m in zip(axes[:-1], sizes[:-1]):
        x = ifft(x, n=m, axis=a, norm=norm)
    return irfft(x, n=sizes[-1], axis=axes[-1], norm=norm)


def _frequencies(k: np.ndarray, n: int, d: float, dtype: Any, device: Any) -> Array:
    """``k / (d * n)`` in ``dtype`` (a real floating dtype; float64 by default)."""
    _xp._check_device(device)
    dtype = _xp.float64 if dtype is None else _xp._dtype(dtype)
    if dtype.kind != "f":
        raise TesseraTypeError(f"frequencies are real floating values, not {dtype.name}")
    return _xp.asarray((k / (d * n)).astype(dtype))


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``:
    ``[0, 1, …, -(n // 2), …, -1] / (d * n)`` (``dtype`` as in the standard's 2024.12)."""
    n = _points(n)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)])
    return _frequencies(k, n, d, dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The non-negative sample frequencies of an ``n``-point real transform:
    ``[0, 1, …, n // 2] / (d * n)``."""
    n = _points(n)
    return _frequencies(np.arange(0, n // 2 + 1), n, d, dtype, device)


def _shifted(x: Array, axes: Any, sign: int) -> Array:
    if axes is None:
        axes = list(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = [_xp._norm_axis(a, x.ndim) for a in axes]
    if not axes:
        return x
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return _xp.roll(x, shifts, axis=tuple(axes))


def fftshift(x: Array, /, *, axes: Any = None) -> Array:
    """The zero frequency moved to the middle of ``axes`` (every axis by default)."""
    return _shifted(x, axes, 1)


def ifftshift(x: Array, /, *, axes: Any = None) -> Array:
    """The inverse of :func:`fftshift`."""
    return _shifted(x, axes, -1)


def _complex(x: Array) -> Array:
    """``x`` as complex values (``float32`` as ``complex64``, other reals ``complex128``)."""
    if x.dtype.kind == "c":
        return x
    return x.astype(_xp.complex64 if x.dtype == np.float32 else _xp.complex128)


def _resized(x: Array, axis: int, n: int) -> Array:
    """``x`` with ``n`` values along ``axis``: its first ``n``, or zeros after them."""
    have = x.shape[axis]
    if n <= have:
        return x[(slice(None),) * axis + (slice(0, n),)]
    pad = list(x.shape)
    pad[axis] = n - have
    return _xp.concat([x, _xp.zeros(tuple(pad), dtype=x.dtype)], axis=axis)


__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]
