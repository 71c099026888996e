"""The array API standard's ``linalg`` extension (``tessera.array_api.linalg``).

Chunked, lazy: ``matmul``, ``matrix_power`` (non-negative), ``tensordot``, ``vecdot``,
``matrix_transpose``, ``outer``, ``cross``, ``diagonal``, ``trace``, ``vector_norm``, the
Frobenius, 1 and infinity ``matrix_norm``\\ s, and for one real matrix (not a stack; a
complex one is gathered) ``qr``
(TSQR, a matrix with no more columns than rows and at most 4096 of them), ``svd`` and
``svdvals`` (tall-and-skinny or short-and-fat, ``full_matrices=False``).

Gathered: the rest (``cholesky``, ``det``, ``eigh``, ``eigvalsh``, ``inv``, ``pinv``,
``matrix_rank``, ``slogdet``, ``solve``, the 2, -2 and nuclear ``matrix_norm``\\ s, stacks of
matrices, ``full_matrices=True``) compute their input, run NumPy's LAPACK on it in this
process and return the result as a new array. The input may hold at most
:data:`GATHER_LIMIT` bytes (a :class:`~tessera.errors.TesseraValueError` beyond it).
"""

from __future__ import annotations

import builtins
import operator
from collections import namedtuple
from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _tessera
from . import array_api as _xp  # complete: array_api imports this module at its end
from ._array import Array, asarray
from .errors import TesseraValueError

#: Most bytes a gathered function's input may hold (256 MiB).
GATHER_LIMIT = 256 << 20
#: Most columns of a matrix that ``qr``, ``svd`` and ``svdvals`` handle in chunks.
_TALL_COLUMNS = 4096

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def _gathered(x: Array, name: str) -> np.ndarray:
    """``x`` computed into this process, for ``name`` (refused past :data:`GATHER_LIMIT`)."""
    nbytes = x.size * x.dtype.itemsize
    if nbytes > GATHER_LIMIT:
        raise TesseraValueError(
            f"linalg.{name} gathers its input into one process: {nbytes} bytes is more than "
            f"GATHER_LIMIT ({GATHER_LIMIT} bytes)"
        )
    return np.asarray(x.compute())


def _matrices(x: Any, name: str) -> Array:
    """``x`` as an array of at least two dimensions (a stack of matrices)."""
    x = asarray(x)
    if x.ndim < 2:
        raise TesseraValueError(f"linalg.{name} needs an array of at least 2 dimensions, got {x.ndim}")
    return x


def _float(x: Array) -> Array:
    """``x`` in a floating dtype, real or complex (integers in float64)."""
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


def _chunked(x: Array) -> builtins.bool:
    """True for one real matrix whose small side fits TSQR (the chunked factorizations
    compute in float64; complex matrices are gathered)."""
    return x.ndim == 2 and x.dtype.kind == "f" and min(x.shape) <= _TALL_COLUMNS


def _tall(x: Array) -> builtins.bool:
    """True for one real matrix that TSQR factors: no more columns than rows, few columns."""
    return _chunked(x) and x.shape[1] <= x.shape[0]


def _in(dtype: np.dtype, *arrays: Array) -> Tuple[Array, ...]:
    """``arrays`` (the chunked factorizations compute in float64) in ``dtype``."""
    return tuple(a if a.dtype == dtype else a.astype(dtype) for a in arrays)


def _lapack(name: str, fn: Any, *arrays: Any) -> Any:
    """``fn`` over the gathered ``arrays`` (floating), as new arrays (tuples stay tuples)."""
    hosts = [_gathered(_float(_matrices(a, name)), name) for a in arrays]
    try:
        out = fn(*hosts)
    except np.linalg.LinAlgError as e:
        raise TesseraValueError(f"linalg.{name}: {e}") from None
    if isinstance(out, tuple):
        return tuple(asarray(np.asarray(o)) for o in out)
    return asarray(np.asarray(out))


# --- chunked -----------------------------------------------------------------------------
#: The matrix product, the tensor contraction, the dot product along an axis and the last
#: two axes swapped: the base namespace's functions, which the extension repeats.
matmul = _xp.matmul
tensordot = _xp.tensordot
vecdot = _xp.vecdot
matrix_transpose = _xp.matrix_transpose


def matrix_power(x: Array, n: int, /) -> Array:
    """``x`` multiplied by itself ``n`` times (by squaring; the identity for 0, powers of
    the gathered inverse for a negative ``n``)."""
    x = _matrices(x, "matrix_power")
    if x.shape[-1] != x.shape[-2]:
        raise TesseraValueError(f"linalg.matrix_power needs square matrices, got {x.shape}")
    n = operator.index(n)
    if n < 0:
        x, n = inv(x), -n
    eye = _xp.eye(x.shape[-1], dtype=x.dtype)
    result = _xp.broadcast_to(eye, x.shape) if n == 0 else None
    while n:
        if n & 1:
            result = x if result is None else _xp.matmul(result, x)
        n >>= 1
        if n:
            x = _xp.matmul(x, x)
    return result


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two vectors."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise TesseraValueError("linalg.outer needs two 1-d arrays")
    return x1.reshape((x1.shape[0], 1)) * x2.reshape((1, x2.shape[0]))


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The cross product of 3-element vectors along ``axis`` (broadcast together)."""
    x1, x2 = _xp.broadcast_arrays(asarray(x1), asarray(x2))
    if not -x1.ndim <= axis < x1.ndim or x1.shape[axis] != 3:
        raise TesseraValueError(f"linalg.cross needs vectors of 3 elements along axis {axis}")
    a = [_xp.take(x1, np.array([i]), axis=axis) for i in range(3)]
    b = [_xp.take(x2, np.array([i]), axis=axis) for i in range(3)]
    parts = [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    return _xp.concat(parts, axis=axis)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal ``offset`` (above the main one when positive) of each matrix."""
    x = _matrices(x, "diagonal")
    *batch, m, n = x.shape
    rows = np.arange(max(0, -offset), min(m, n - offset)) if offset < n and -offset < m else np.arange(0)
    flat = rows * n + rows + offset
    return x.reshape(tuple(batch) + (m * n,)).take(flat, x.ndim - 2)


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of each matrix's diagonal ``offset``."""
    d = diagonal(x, offset=offset)
    return _xp.sum(d, axis=-1, dtype=dtype)


def vector_norm(x: Array, /, *, axis: Union[None, int, Tuple[int, ...]] = None, keepdims: builtins.bool = False, ord: Union[int, float] = 2) -> Array:  # noqa: A002
    """The ``ord``-norm of the vectors along ``axis`` (all elements when ``None``)."""
    x = _float(asarray(x))
    a = _xp.abs(x)
    if ord == np.inf:
        return _xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _xp.sum(_xp.astype(x != 0, x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return _xp.sqrt(_xp.sum(_xp.real(x * _xp.conj(x)), axis=axis, keepdims=keepdims))
    p = float(ord)
    return _xp.sum(a**p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def matrix_norm(x: Array, /, *, keepdims: builtins.bool = False, ord: Union[int, float, str, None] = "fro") -> Array:  # noqa: A002
    """The ``ord``-norm of each matrix: ``"fro"``, 1, -1, ``inf`` and ``-inf`` chunked;
    2, -2 and ``"nuc"`` from the gathered singular values."""
    x = _float(_matrices(x, "matrix_norm"))
    axes = (x.ndim - 2, x.ndim - 1)
    a = _xp.abs(x)

    def kept(out: Array) -> Array:
        return out.reshape(out.shape + (1, 1)) if keepdims else out

    if ord in ("fro", None):
        return _xp.sqrt(_xp.sum(_xp.real(x * _xp.conj(x)), axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        sums = _xp.sum(a, axis=-2)
        return kept(_xp.max(sums, axis=-1) if ord == 1 else _xp.min(sums, axis=-1))
    if ord in (np.inf, -np.inf):
        sums = _xp.sum(a, axis=-1)
        return kept(_xp.max(sums, axis=-1) if ord == np.inf else _xp.min(sums, axis=-1))
    if ord in (2, -2, "nuc"):
        s = svdvals(x)
        if ord == "nuc":
            return kept(_xp.sum(s, axis=-1))
        return kept(_xp.max(s, axis=-1) if ord == 2 else _xp.min(s, axis=-1))
    raise TesseraValueError(f"linalg.matrix_norm: no norm {ord!r}")


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """``(Q, R)``: chunked (TSQR) for one tall matrix in ``"reduced"`` mode; R's diagonal
    is non-negative (signs may differ from NumPy's)."""
    x = _float(_matrices(x, "qr"))
    if mode not in ("reduced", "complete"):
        raise TesseraValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    if mode == "reduced" and _tall(x):
        q, r = _tessera.qr(x._a)
        return QRResult(*_in(x.dtype, Array(q, "linalg.qr"), Array(r, "linalg.qr")))
    return QRResult(*_lapack("qr", lambda a: np.linalg.qr(a, mode=mode), x))


def svd(x: Array, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """``(U, S, Vh)``, singular values descending; chunked for one tall or wide matrix
    with ``full_matrices=False`` (singular vectors' signs may differ from NumPy's)."""
    x = _float(_matrices(x, "svd"))
    if not full_matrices and _chunked(x):
        u, s, vt = _tessera.svd(x._a)
        parts = (Array(u, "linalg.svd"), Array(s, "linalg.svd"), Array(vt, "linalg.svd"))
        return SVDResult(*_in(x.dtype, *parts))
    return SVDResult(*_lapack("svd", lambda a: np.linalg.svd(a, full_matrices=full_matrices), x))


def svdvals(x: Array, /) -> Array:
    """The singular values of each matrix, descending."""
    x = _float(_matrices(x, "svdvals"))
    if _chunked(x):
        return svd(x, full_matrices=False).S
    return _lapack("svdvals", lambda a: np.linalg.svd(a, compute_uv=False), x)


# --- gathered ----------------------------------------------------------------------------
def cholesky(x: Array, /, *, upper: builtins.bool = False) -> Array:
    """The Cholesky factor of each symmetric positive-definite matrix (lower, or upper)."""
    return _lapack("cholesky", lambda a: np.linalg.cholesky(a, upper=upper), x)


def det(x: Array, /) -> Array:
    """The determinant of each square matrix."""
    return _lapack("det", np.linalg.det, x)


def slogdet(x: Array, /) -> SlogdetResult:
    """``(sign, logabsdet)`` of each square matrix's determinant."""
    return SlogdetResult(*_lapack("slogdet", lambda a: tuple(np.linalg.slogdet(a)), x))


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix."""
    return EighResult(*_lapack("eigh", lambda a: tuple(np.linalg.eigh(a)), x))


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (ascending) of each symmetric matrix."""
    return _lapack("eigvalsh", np.linalg.eigvalsh, x)


def inv(x: Array, /) -> Array:
    """The inverse of each square matrix."""
    return _lapack("inv", np.linalg.inv, x)


def pinv(x: Array, /, *, rtol: Optional[Union[float, Array]] = None) -> Array:
    """The Moore-Penrose pseudo-inverse (singular values below ``rtol`` times the largest
    dropped; by default ``max(M, N)`` times the dtype's epsilon)."""
    x = _matrices(x, "pinv")
    if rtol is None:
        rtol = max(x.shape[-2:]) * np.finfo(_float(x).dtype).eps
    elif isinstance(rtol, Array):
        rtol = _gathered(rtol, "pinv")
    return _lapack("pinv", lambda a: np.linalg.pinv(a, rtol=rtol), x)


def matrix_rank(x: Array, /, *, rtol: Optional[Union[float, Array]] = None) -> Array:
    """The number of singular values above ``rtol`` times the largest (as ``pinv``)."""
    x = _matrices(x, "matrix_rank")
    s = _gathered(svdvals(x), "matrix_rank")
    if rtol is None:
        rtol = max(x.shape[-2:]) * np.finfo(s.dtype).eps
    elif isinstance(rtol, Array):
        rtol = _gathered(rtol, "matrix_rank")
    largest = s.max(axis=-1, keepdims=True, initial=0.0)
    return asarray(np.count_nonzero(s > np.asarray(rtol)[..., None] * largest, axis=-1).astype(np.int64))


def solve(x1: Array, x2: Array, /) -> Array:
    """``x`` with ``x1 @ x == x2`` for each square matrix ``x1`` (``x2`` a vector or a stack
    of matrices, as the standard says)."""
    a = _gathered(_float(_matrices(x1, "solve")), "solve")
    b = _gathered(_float(asarray(x2)), "solve")
    try:
        if b.ndim == 1:
            return asarray(np.linalg.solve(a, b[..., None])[..., 0])
        return asarray(np.linalg.solve(a, b))
    except np.linalg.LinAlgError as e:
        raise TesseraValueError(f"linalg.solve: {e}") from None


__all__ = [
    "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet",
    "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
    "EighResult", "QRResult", "SlogdetResult", "SVDResult", "GATHER_LIMIT",
]
