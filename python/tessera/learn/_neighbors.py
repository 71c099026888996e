"""``NearestNeighbors``: brute-force k nearest neighbours, one job over the chunked data
(``tessera::learn::kneighbors``: each row chunk searched against the queries, the chunks'
best merged in a tree)."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import numpy as np

from .. import _tessera
from .._array import Array
from .._session import get_session
from ..errors import TesseraValueError
from ._common import _matrix, samples

_EUCLIDEAN = {("minkowski", 2), ("euclidean", None), ("l2", None)}


class NearestNeighbors:
    """Unsupervised nearest neighbours (scikit-learn's ``NearestNeighbors`` API), by brute
    force on the chunked data: Euclidean distance (``metric="minkowski"`` with ``p=2``,
    ``"euclidean"`` or ``"l2"``) and ``algorithm`` ``"auto"`` or ``"brute"``.

    ``fit`` keeps the rows in the session's storage; ``kneighbors`` is one job. Distances
    are summed term by term in ``float64``, so the neighbours do not depend on the
    chunking; ties go to the lower row. Fitted: ``n_samples_fit_``, ``n_features_in_``.
    """

    def __init__(
        self,
        n_neighbors: int = 5,
        *,
        algorithm: str = "auto",
        metric: str = "minkowski",
        p: Optional[float] = 2,
    ) -> None:
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.metric = metric
        self.p = p

    def fit(self, X: Any, y: Any = None) -> "NearestNeighbors":
        """Indexes the rows of ``X`` (kept in the session's storage)."""
        if self.algorithm not in ("auto", "brute"):
            raise TesseraValueError(f"algorithm must be 'auto' or 'brute' (brute force), got {self.algorithm!r}")
        p = None if self.metric != "minkowski" else self.p
        if (self.metric, p) not in _EUCLIDEAN:
            raise TesseraValueError(
                f"only the Euclidean distance is supported (metric='minkowski' with p=2, 'euclidean'), "
                f"got metric={self.metric!r}, p={self.p!r}"
            )
        X = _matrix(X).persist()
        self._fit_X: Optional[Array] = X
        self.n_samples_fit_, self.n_features_in_ = X.shape
        return self

    def kneighbors(
        self, X: Any = None, n_neighbors: Optional[int] = None, return_distance: bool = True
    ) -> Union[Tuple[np.ndarray, np.ndarray], np.ndarray]:
        """The ``n_neighbors`` nearest fitted rows of each row of ``X``: (distances, row
        numbers), NumPy arrays of ``len(X) × n_neighbors``, nearest first (only the row
        numbers without ``return_distance``). With ``X=None``, the neighbours of each
        fitted row among the others (a row is not its own neighbour, as in scikit-learn).
        """
        fit_X = getattr(self, "_fit_X", None)
        if fit_X is None:
            raise TesseraValueError("this NearestNeighbors is not fitted yet: call fit first")
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise TesseraValueError(f"n_neighbors must be a positive integer, got {k!r}")
        k = int(k)
        if X is not None:
            queries = samples(X, self.n_features_in_)
            dist, ind = _tessera.learn_kneighbors(fit_X._a, queries._a, k, get_session()._native)
        else:
            if k >= self.n_samples_fit_:
                raise TesseraValueError(
                    f"n_neighbors={k} must be below the {self.n_samples_fit_} fitted rows when X is None"
                )
            dist, ind = _tessera.learn_kneighbors(fit_X._a, fit_X._a, k + 1, get_session()._native)
            dist, ind = _without_self(dist, ind)
        return (dist, ind) if return_distance else ind


def _without_self(dist: np.ndarray, ind: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each row's neighbours with the row itself taken out (scikit-learn's rule: where
    duplicates crowd it out of the list, the first neighbour goes instead)."""
    n, k1 = ind.shape
    keep = ind != np.arange(n)[:, None]
    crowded = keep.all(axis=1)
    keep[crowded, 0] = False
    return dist[keep].reshape(n, k1 - 1), ind[keep].reshape(n, k1 - 1)
