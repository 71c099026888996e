"""Linear models, fitted by ``tessera::learn`` in Rust: ``LinearRegression`` and ``Ridge``
by the normal equations (one job for the Gram matrix of the data with its targets),
``LogisticRegression`` by Newton's method (one job per iteration for the gradient and the
Hessian together). Only ``d × d`` numbers come back to this process; the data stays in
chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _tessera
from .. import array_api as xp
from .._array import Array, asarray
from .._session import get_session
from ..errors import TesseraValueError
from ._common import _matrix, fitted, samples


def _targets(y: Any, n: int) -> Array:
    """``y`` as an ``n × t`` float64 matrix (a vector is one column)."""
    y = asarray(y)
    if y.ndim not in (1, 2) or y.shape[0] != n:
        raise TesseraValueError(f"y must have one row per sample ({n}), got shape {y.shape}")
    y = y if y.dtype == np.float64 else y.astype(np.float64)
    return y.reshape((n, 1)) if y.ndim == 1 else y


class _LeastSquares:
    """Least squares with an L2 penalty ``alpha`` on the coefficients (not the intercept)."""

    alpha = 0.0

    def __init__(self, *, fit_intercept: bool = True) -> None:
        self.fit_intercept = fit_intercept

    def fit(self, X: Any, y: Any) -> "_LeastSquares":
        """Fits the coefficients to the rows of ``X`` and the targets ``y``."""
        X = _matrix(X)
        n, d = X.shape
        vector = asarray(y).ndim == 1
        Y = _targets(y, n)
        if self.alpha < 0:
            raise TesseraValueError(f"alpha must be non-negative, got {self.alpha}")
        coef, intercept = _tessera.learn_least_squares(X._a, Y._a, get_session()._native, float(self.alpha), bool(self.fit_intercept))
        self.coef_ = coef[0].copy() if vector else coef
        self.intercept_ = float(intercept[0]) if vector else np.asarray(intercept)
        self.n_features_in_ = d
        return self

    def predict(self, X: Any) -> Array:
        """``X @ coef_ + intercept_`` (lazy)."""
        coef = fitted(self, "coef_")
        X = samples(X, self.n_features_in_)
        if coef.ndim == 1:
            return X @ asarray(coef) + self.intercept_
        return X @ asarray(coef.T.copy()) + asarray(self.intercept_).reshape((1, len(self.intercept_)))

    def score(self, X: Any, y: Any) -> float:
        """The coefficient of determination R² of the prediction."""
        y = _targets(y, _matrix(X).shape[0])
        pred = self.predict(X)
        pred = pred.reshape(y.shape)
        residual = float(xp.sum((y - pred) ** 2))
        total = float(xp.sum((y - xp.mean(y, axis=0)) ** 2))
        return 1.0 - residual / total if total > 0 else 0.0


class LinearRegression(_LeastSquares):
    """Ordinary least squares (scikit-learn's ``LinearRegression``): the normal equations
    from one job, solved (least-norm where singular) here. Fitted: ``coef_``,
    ``intercept_``."""


class Ridge(_LeastSquares):
    """Least squares with an L2 penalty ``alpha`` (scikit-learn's ``Ridge``; its
    ``solver="cholesky"``, from one job's Gram matrix). Fitted: ``coef_``, ``intercept_``."""

    def __init__(self, alpha: float = 1.0, *, fit_intercept: bool = True) -> None:
        super().__init__(fit_intercept=fit_intercept)
        self.alpha = float(alpha)


class LogisticRegression:
    """Binary logistic regression with an L2 penalty (scikit-learn's
    ``LogisticRegression(penalty="l2")``: minimises ``½‖w‖² + C Σ log(1 + e^{-yᵢ(xᵢw + b)})``,
    the intercept unpenalised) by Newton's method (``tessera::learn::LogisticRegression``):
    each iteration is one job giving the gradient and the Hessian together.
    ``tol`` means what it means in scikit-learn: the iterations stop once the largest entry
    of the gradient of the objective scaled as scikit-learn scales it (divided by ``C n``:
    the mean loss plus ``‖w‖² / 2Cn``) is at most ``tol`` (that step is still taken), or
    after ``max_iter``. Fitted: ``coef_`` (``1 × d``), ``intercept_``, ``classes_``,
    ``n_iter_``."""

    def __init__(self, *, C: float = 1.0, tol: float = 1e-4, max_iter: int = 100, fit_intercept: bool = True) -> None:
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept

    def fit(self, X: Any, y: Any) -> "LogisticRegression":
        """Fits the model to the rows of ``X`` and their labels ``y`` (two classes)."""
        X = _matrix(X)
        n, d = X.shape
        labels = asarray(y)
        if labels.ndim != 1 or labels.shape[0] != n:
            raise TesseraValueError(f"y must be a vector of {n} labels, got shape {labels.shape}")
        classes = np.asarray(xp.unique_values(labels).compute())
        if len(classes) != 2:
            raise TesseraValueError(f"LogisticRegression here is binary: y has {len(classes)} classes")
        if self.C <= 0:
            raise TesseraValueError(f"C must be positive, got {self.C}")
        target = xp.astype(labels == asarray(classes[1:]).reshape(()), np.float64)
        if self.max_iter < 1:
            raise TesseraValueError(f"max_iter must be at least 1, got {self.max_iter}")
        coef, intercept, n_iter = _tessera.learn_logistic(
            X._a, target._a, get_session()._native, float(self.C), float(self.tol), int(self.max_iter), bool(self.fit_intercept)
        )
        self.coef_ = np.asarray(coef).reshape(1, d)
        self.intercept_ = np.array([intercept])
        self.classes_ = classes
        self.n_iter_ = np.array([n_iter])
        self.n_features_in_ = d
        return self

    def decision_function(self, X: Any) -> Array:
        """``X @ coef_ᵀ + intercept_`` (lazy)."""
        coef = fitted(self, "coef_")
        X = samples(X, coef.shape[1])
        return X @ asarray(coef[0].copy()) + float(self.intercept_[0])

    def predict_proba(self, X: Any) -> Array:
        """The two classes' probabilities of each row (``n × 2``, lazy)."""
        p = 1.0 / (1.0 + xp.exp(-self.decision_function(X)))
        p = p.reshape((p.shape[0], 1))
        return xp.concat([1.0 - p, p], axis=1)

    def predict(self, X: Any) -> Array:
        """The more probable class of each row (lazy)."""
        positive = self.decision_function(X) > 0
        return xp.where(positive, asarray(self.classes_[1:]).reshape(()), asarray(self.classes_[:1]).reshape(()))

    def score(self, X: Any, y: Any) -> float:
        """The share of rows whose class ``predict`` gives right."""
        return float(xp.mean(xp.astype(self.predict(X) == asarray(y), np.float64)))
