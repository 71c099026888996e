"""What the estimators share: their input as a float64 Tessera matrix, and their fitted
state."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import Array, asarray
from ..errors import TesseraValueError


def _matrix(X: Any) -> Array:
    """``X`` as a float64 Tessera matrix."""
    X = asarray(X)
    if X.ndim != 2:
        raise TesseraValueError(f"expected a 2-d array of samples, got {X.ndim} dimensions")
    return X if X.dtype == np.float64 else X.astype(np.float64)


def fitted(model: Any, attribute: str) -> np.ndarray:
    """``model``'s fitted ``attribute`` (a typed error before ``fit``)."""
    value = getattr(model, attribute, None)
    if value is None:
        raise TesseraValueError(f"this {type(model).__name__} is not fitted yet: call fit first")
    return value


def samples(X: Any, n_features: int) -> Array:
    """``X`` as a float64 matrix of rows with the fit's ``n_features`` columns."""
    X = _matrix(X)
    if X.shape[1] != n_features:
        raise TesseraValueError(f"X has {X.shape[1]} features, the fit had {n_features}")
    return X
