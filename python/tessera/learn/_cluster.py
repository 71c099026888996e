"""``KMeans``: k-means|| initialisation (Bahmani et al., as Mars and dask-ml) and Lloyd
iterations, fitted by ``tessera::learn::KMeans`` in Rust: each pass over the chunked data
is one job (every row's nearest centre, and per centre the sum and count of its rows).
Data stays in the session's storage; only the centres (``k`` rows) travel to this process.
Deterministic under any chunking for a given ``random_state``: the random draws are
Tessera's counter-based generator, each row's distances are summed term by term, and the
sums differ across chunkings only in the last bits.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import _tessera
from .. import array_api as xp
from .._array import Array, asarray
from .._session import get_session
from ..errors import TesseraValueError
from ._common import _matrix, fitted, samples


def _squared_distances(X: Array, centers: np.ndarray) -> Array:
    """The squared distance of every row of ``X`` to every centre (``n × k``, lazy)."""
    return Array(_tessera.learn_squared_distances(X._a, asarray(centers)._a), "kmeans_distances")


class KMeans:
    """K-means clustering (scikit-learn's ``KMeans`` API).

    ``init`` is ``"k-means||"`` (default), ``"random"`` (``n_clusters`` distinct rows) or an
    array of initial centres. ``n_init`` runs keep the one of least inertia. Each Lloyd
    iteration is one job; iterations stop once the centres move less than ``tol`` times
    the data's mean variance (squared), or after ``max_iter``. An empty cluster keeps its
    centre. Fitted: ``cluster_centers_``, ``labels_`` (a Tessera array), ``inertia_``,
    ``n_iter_``.

    The fit keeps its own float64 copy of ``X`` while it runs unless ``X`` is persisted
    already; ``labels_`` is lazy over ``X``, so persist an ``X`` that is costly to compute
    before fitting if ``labels_`` will be read.
    """

    def __init__(
        self,
        n_clusters: int = 8,
        *,
        init: Any = "k-means||",
        n_init: int = 1,
        max_iter: int = 300,
        tol: float = 1e-4,
        random_state: Optional[int] = None,
        oversampling_factor: float = 2.0,
        init_max_iter: Optional[int] = None,
    ) -> None:
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.oversampling_factor = oversampling_factor
        self.init_max_iter = init_max_iter

    # --- fitting -------------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> "KMeans":
        """Computes the clusters of the rows of ``X``."""
        X = _matrix(X)
        if isinstance(self.init, str):
            init, centres = self.init, None
        else:
            init, centres = "given", _matrix(self.init)._a
        if self.n_clusters < 1 or self.n_init < 1 or self.max_iter < 1:
            raise TesseraValueError("n_clusters, n_init and max_iter must be at least 1")
        seed = 0 if self.random_state is None else int(self.random_state) % 2**64
        self.cluster_centers_, self.inertia_, self.n_iter_ = _tessera.learn_kmeans(
            X._a, get_session()._native, int(self.n_clusters), init, centres, int(self.n_init),
            int(self.max_iter), float(self.tol), seed, float(self.oversampling_factor),
            None if self.init_max_iter is None else int(self.init_max_iter),
        )
        self.labels_ = self.predict(X)
        self.n_features_in_ = X.shape[1]
        return self

    # --- using the fit ---------------------------------------------------------------------
    def predict(self, X: Any) -> Array:
        """The index of the nearest centre of each row of ``X`` (a lazy array)."""
        centers = fitted(self, "cluster_centers_")
        return xp.argmin(_squared_distances(samples(X, centers.shape[1]), centers), axis=1)

    def transform(self, X: Any) -> Array:
        """The distance of each row of ``X`` to each centre (``n × k``, lazy)."""
        centers = fitted(self, "cluster_centers_")
        return xp.sqrt(_squared_distances(samples(X, centers.shape[1]), centers))

    def fit_predict(self, X: Any, y: Any = None) -> Array:
        """``fit(X)``, then its ``labels_``."""
        return self.fit(X).labels_

    def score(self, X: Any, y: Any = None) -> float:
        """Minus the inertia of ``X`` against the fitted centres."""
        centers = fitted(self, "cluster_centers_")
        X = samples(X, centers.shape[1])
        inertia = _tessera.learn_inertia(X._a, asarray(centers)._a, get_session()._native)
        if np.isnan(inertia):
            raise TesseraValueError("k-means: the data holds NaN")
        return -inertia
