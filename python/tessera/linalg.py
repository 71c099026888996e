"""Linear algebra on tall-and-skinny (or short-and-fat) matrices (``tessera.linalg``)."""

from __future__ import annotations

from typing import Any, Tuple

from . import _tessera
from ._array import Array, asarray


def qr(a: Any) -> Tuple[Array, Array]:
    """Thin QR by TSQR: ``(Q, R)``, Q with orthonormal columns, R upper triangular with a
    non-negative diagonal (signs may differ from NumPy's)."""
    q, r = _tessera.qr(asarray(a)._a)
    return Array(q, "linalg.qr"), Array(r, "linalg.qr")


def svd(a: Any) -> Tuple[Array, Array, Array]:
    """Thin SVD ``(U, S, Vt)``, singular values descending (NumPy's
    ``svd(full_matrices=False)``; singular vectors' signs may differ)."""
    u, s, vt = _tessera.svd(asarray(a)._a)
    return Array(u, "linalg.svd"), Array(s, "linalg.svd"), Array(vt, "linalg.svd")


def svd_compressed(
    a: Any, k: int, n_power_iter: int = 0, n_oversamples: int = 10, seed: int = 0
) -> Tuple[Array, Array, Array]:
    """Randomized SVD of the top ``k`` singular triplets (Dask's ``svd_compressed``)."""
    u, s, vt = _tessera.svd_compressed(asarray(a)._a, k, n_power_iter, n_oversamples, seed)
    return (
        Array(u, "linalg.svd_compressed"),
        Array(s, "linalg.svd_compressed"),
        Array(vt, "linalg.svd_compressed"),
    )


def norm(x: Any) -> Array:
    """The Frobenius norm of a matrix, the 2-norm of a vector."""
    return Array(_tessera.norm(asarray(x)._a), "linalg.norm")


__all__ = ["qr", "svd", "svd_compressed", "norm"]
