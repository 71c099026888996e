"""``PCA`` (the SVD of the centred data by TSQR or randomized) and ``TruncatedSVD``
(randomized, not centred), in chunks: fitted by ``tessera::learn`` in Rust."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import _tessera
from .._array import Array, asarray
from .._session import get_session
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
        X = _matrix(X)
        n, d = X.shape
        k = min(n, d) if self.n_components is None else int(self.n_components)
        if not 1 <= k <= min(n, d):
            raise TesseraValueError(f"n_components={k} must be between 1 and min(n_samples, n_features)={min(n, d)}")
        if self.svd_solver not in ("auto", "full", "tsqr", "randomized"):
            raise TesseraValueError(f"svd_solver must be 'auto', 'full', 'tsqr' or 'randomized', got {self.svd_solver!r}")
        randomized = None
        if self.svd_solver == "randomized":
            seed = 0 if self.random_state is None else int(self.random_state) % 2**64
            randomized = (int(self.iterated_power), int(self.n_oversamples), seed)
        components, s, variance, ratio, mean = _tessera.learn_pca(X._a, get_session()._native, k, randomized)
        self.mean_ = np.asarray(mean)
        self.components_ = components
        self.singular_values_ = np.asarray(s)
        self.explained_variance_ = np.asarray(variance)
        self.explained_variance_ratio_ = np.asarray(ratio)
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
        X = _matrix(X)
        n, d = X.shape
        k = int(self.n_components)
        if not 1 <= k < min(n, d) + 1:
            raise TesseraValueError(f"n_components={k} must be between 1 and min(n_samples, n_features)={min(n, d)}")
        seed = 0 if self.random_state is None else int(self.random_state) % 2**64
        components, s, variance, ratio, _ = _tessera.learn_truncated_svd(
            X._a, get_session()._native, k, int(self.n_iter), int(self.n_oversamples), seed
        )
        self.components_, self.singular_values_ = components, np.asarray(s)
        self.explained_variance_ = np.asarray(variance)
        self.explained_variance_ratio_ = np.asarray(ratio)
        self.n_features_in_ = d
        return self.transform(X)

    def transform(self, X: Any) -> Array:
        """``X @ components_ᵀ`` (lazy)."""
        components = fitted(self, "components_")
        return samples(X, components.shape[1]) @ asarray(components.T.copy())

    def inverse_transform(self, Y: Any) -> Array:
        """Rows back in the features' coordinates (lazy)."""
        return _matrix(Y) @ asarray(fitted(self, "components_"))
