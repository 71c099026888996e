"""What the estimators share: their input as a float64 Tessera matrix."""

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
