"""``PCA`` (the SVD of the centred data by TSQR or randomized) and ``TruncatedSVD``
(randomized, not centred), in chunks."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import array_api as xp
from .._array import Array, asarray
from ..errors import TesseraValueError
from ._common import _matrix, fitted, samples


class PCA:
    """Principal component analysis (scikit-learn's ``PCA`` API) by the SVD of the centred
    data: TSQR (``svd_solver="full"``, ``"tsqr"`` or ``"auto"``; at most 4096 features) or
    randomized (``"randomized"``: ``n_oversamples`` extra columns, ``iterated_power`` power
    iterations, seeded by ``random_state``). Components' signs follow scikit-learn's
    (``svd_flip``: each component's largest loading is positive). Fitted: ``components_``,
    ``explained_variance_``, ``explained_variance_ratio_``, ``singular_values_``,
    ``mean_``, ``n_components_``, ``n_samples_``.
    """

    def __init__(
        self,
        n_components: Optional[int] = None,
        *,
        svd_solver: str = "auto",
        iterated_power: int = 2,
        n_oversamples: int = 10,
        random_state: Optional[int] = None,
    ) -> None:
        self.n_components = n_components
        self.svd_solver = svd_solver
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> "PCA":
        """Computes the principal components of the rows of ``X``."""
        from .. import linalg

        X = _matrix(X)
        n, d = X.shape
        k = min(n, d) if self.n_components is None else int(self.n_components)
        if not 1 <= k <= min(n, d):
            raise TesseraValueError(f"n_components={k} must be between 1 and min(n_samples, n_features)={min(n, d)}")
        if self.svd_solver not in ("auto", "full", "tsqr", "randomized"):
            raise TesseraValueError(f"svd_solver must be 'auto', 'full', 'tsqr' or 'randomized', got {self.svd_solver!r}")
        mean = np.asarray(xp.mean(X, axis=0).compute())
        centred = X - asarray(mean).reshape((1, d))
        if self.svd_solver == "randomized":
            seed = 0 if self.random_state is None else int(self.random_state)
            _, s, vt = linalg.svd_compressed(centred, k, self.iterated_power, self.n_oversamples, seed)
        else:
            _, s, vt = linalg.svd(centred)
        # One job: each right singular vector, its singular value and the total variance.
        m = s.shape[0]
        total = xp.broadcast_to(xp.sum(centred * centred).reshape((1, 1)), (m, 1))
        both = np.asarray(xp.concat([vt, s.reshape((m, 1)), total], axis=1).compute())
        vt, s, total = both[:, :d], both[:, d], float(both[0, d + 1])
        vt = _flip(vt)
        variance = s**2 / max(n - 1, 1)
        self.mean_ = mean
        self.components_ = vt[:k]
        self.singular_values_ = s[:k]
        self.explained_variance_ = variance[:k]
        self.explained_variance_ratio_ = variance[:k] / (total / max(n - 1, 1)) if total > 0 else np.zeros(k)
        self.n_components_, self.n_samples_, self.n_features_in_ = k, n, d
        return self

    def transform(self, X: Any) -> Array:
        """The rows of ``X`` in the components' coordinates (lazy)."""
        components = fitted(self, "components_")
        X = samples(X, components.shape[1])
        return (X - asarray(self.mean_).reshape((1, X.shape[1]))) @ asarray(components.T.copy())

    def fit_transform(self, X: Any, y: Any = None) -> Array:
        """``fit(X)``, then ``transform(X)``."""
        return self.fit(X).transform(X)

    def inverse_transform(self, Y: Any) -> Array:
        """Rows back in the features' coordinates (lazy)."""
        components = fitted(self, "components_")
        return _matrix(Y) @ asarray(components) + asarray(self.mean_).reshape((1, components.shape[1]))


class TruncatedSVD:
    """The top ``n_components`` singular triplets of the data, not centred (scikit-learn's
    ``TruncatedSVD``, for latent semantic analysis): randomized SVD in chunks
    (``n_iter`` power iterations, ``n_oversamples`` extra columns, seeded by
    ``random_state``), scikit-learn's component signs. Fitted: ``components_``,
    ``singular_values_``, ``explained_variance_``, ``explained_variance_ratio_``."""

    def __init__(self, n_components: int = 2, *, n_iter: int = 5, n_oversamples: int = 10, random_state: Optional[int] = None) -> None:
        self.n_components = n_components
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> "TruncatedSVD":
        """Computes the top singular vectors of ``X``."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> Array:
        """``fit(X)``, then ``transform(X)``."""
        from .. import linalg

        X = _matrix(X)
        n, d = X.shape
        k = int(self.n_components)
        if not 1 <= k < min(n, d) + 1:
            raise TesseraValueError(f"n_components={k} must be between 1 and min(n_samples, n_features)={min(n, d)}")
        seed = 0 if self.random_state is None else int(self.random_state)
        _, s, vt = linalg.svd_compressed(X, k, self.n_iter, self.n_oversamples, seed)
        both = np.asarray(xp.concat([vt, s.reshape((k, 1))], axis=1).compute())
        self.components_, self.singular_values_ = _flip(both[:, :d]), both[:, d]
        self.n_features_in_ = d
        projected = self.transform(X)
        # One job: the variances of the projection and of every feature.
        variances = np.asarray(xp.concat([xp.var(projected, axis=0), xp.var(X, axis=0)]).compute())
        self.explained_variance_ = variances[:k]
        total = variances[k:].sum()
        self.explained_variance_ratio_ = variances[:k] / total if total > 0 else np.zeros(k)
        return projected

    def transform(self, X: Any) -> Array:
        """``X @ components_ᵀ`` (lazy)."""
        components = fitted(self, "components_")
        return samples(X, components.shape[1]) @ asarray(components.T.copy())

    def inverse_transform(self, Y: Any) -> Array:
        """Rows back in the features' coordinates (lazy)."""
        return _matrix(Y) @ asarray(fitted(self, "components_"))


def _flip(vt: np.ndarray) -> np.ndarray:
    """``vt`` with each row's sign set so that its largest entry in magnitude is positive
    (scikit-learn's ``svd_flip`` on the right singular vectors)."""
    signs = np.sign(vt[np.arange(len(vt)), np.argmax(np.abs(vt), axis=1)])
    signs[signs == 0] = 1.0
    return vt * signs[:, None]
