"""Discrete Fourier transforms with NumPy's signatures (``tessera.fft``, as ``numpy.fft``).

Each function takes anything :func:`tessera.asarray` takes, with NumPy's positional
``n``/``s``, ``axis``/``axes`` and ``norm`` (``None`` is ``"backward"``), and returns a
lazy :class:`tessera.Array`: the array API's ``fft`` extension
(:mod:`tessera._fft_ext`) does the work, each transformed axis made whole per chunk.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _fft_ext as _x
from ._array import Array, asarray


def _norm(norm: Optional[str]) -> str:
    return "backward" if norm is None else norm


def _one(name: str, doc: str):
    f_ext = getattr(_x, name)

    def f(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Array:
        return f_ext(asarray(a), n=n, axis=axis, norm=_norm(norm))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{doc} (NumPy's ``fft.{name}(a, n, axis, norm)``)."
    return f


def _many(name: str, doc: str):
    f_ext = getattr(_x, name)

    def f(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None, norm: Optional[str] = None) -> Array:
        return f_ext(asarray(a), s=s, axes=axes, norm=_norm(norm))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{doc} (NumPy's ``fft.{name}(a, s, axes, norm)``)."
    return f


fft = _one("fft", "The one-dimensional discrete Fourier transform along ``axis``")
ifft = _one("ifft", "The inverse of :func:`fft`")
rfft = _one("rfft", "The transform of real values: the ``n // 2 + 1`` non-negative frequencies")
irfft = _one("irfft", "The inverse of :func:`rfft`: ``n`` real values")
hfft = _one("hfft", "The transform of a Hermitian signal given by its non-negative half")
ihfft = _one("ihfft", "The inverse of :func:`hfft`")
fftn = _many("fftn", "The n-dimensional transform over ``axes`` (every axis by default)")
ifftn = _many("ifftn", "The inverse of :func:`fftn`")
rfftn = _many("rfftn", "The n-dimensional transform of real values")
irfftn = _many("irfftn", "The inverse of :func:`rfftn`")


def fft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None) -> Array:
    """The transform over the last two axes (NumPy's ``fft.fft2``)."""
    return fftn(a, s, axes, norm)


def ifft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1), norm: Optional[str] = None) -> Array:
    """The inverse of :func:`fft2` (NumPy's ``fft.ifft2``)."""
    return ifftn(a, s, axes, norm)


def fftfreq(n: int, d: float = 1.0) -> Array:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    return _x.fftfreq(n, d=d)


def rfftfreq(n: int, d: float = 1.0) -> Array:
    """The non-negative sample frequencies of an ``n``-point real transform."""
    return _x.rfftfreq(n, d=d)


def fftshift(x: Any, axes: Any = None) -> Array:
    """The zero frequency moved to the middle of ``axes`` (every axis by default)."""
    return _x.fftshift(asarray(x), axes=axes)


def ifftshift(x: Any, axes: Any = None) -> Array:
    """The inverse of :func:`fftshift`."""
    return _x.ifftshift(asarray(x), axes=axes)


__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn",
    "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]
