"""``KMeans``: k-means|| initialisation (Bahmani et al., as Mars and dask-ml) and Lloyd
iterations, each one job over the chunked data (``tessera::learn::cluster_stats``: every
row's nearest centre, and per centre the sum and count of its rows, in one pass). Data
stays in the session's storage; only the centres (``k`` rows) travel to this process.
Deterministic under any chunking for a given ``random_state``: the random draws are
Tessera's counter-based generator, each row's distances are summed term by term, and the
sums differ across chunkings only in the last bits.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from .. import array_api as xp
from .._array import Array, asarray
from .._session import get_session
from ..errors import TesseraValueError
from ..random import default_rng
from ._common import _matrix, fitted, samples


def _squared_distances(X: Array, sq_norms: Array, centers: np.ndarray) -> Array:
    """The squared distance of every row of ``X`` to every centre (``n × k``, lazy)."""
    c = asarray(centers)
    cross = X @ xp.matrix_transpose(c)
    d = sq_norms.reshape((X.shape[0], 1)) - 2.0 * cross + asarray((centers**2).sum(axis=1)).reshape((1, len(centers)))
    return xp.maximum(d, 0.0)


def _stats(X: Array, centers: np.ndarray) -> Tuple[np.ndarray, np.ndarray, float]:
    """One job: every row of ``X`` assigned to its nearest centre; per centre the sum and
    count of its rows, and the total squared distance (the inertia)."""
    sums, counts, cost = X._a.cluster_stats(asarray(centers)._a, get_session()._native)
    if math.isnan(cost):
        raise TesseraValueError("k-means: the data holds NaN")
    return np.asarray(sums), np.asarray(counts), cost


class KMeans:
    """K-means clustering (scikit-learn's ``KMeans`` API).

    ``init`` is ``"k-means||"`` (default), ``"random"`` (``n_clusters`` distinct rows) or an
    array of initial centres. ``n_init`` runs keep the one of least inertia. Each Lloyd
    iteration is one job; iterations stop once the centres move less than ``tol`` times
    the data's mean variance (squared), or after ``max_iter``. An empty cluster keeps its
    centre. Fitted: ``cluster_centers_``, ``labels_`` (a Tessera array), ``inertia_``,
    ``n_iter_``.
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
        X = _matrix(X).persist()
        n = X.shape[0]
        k = int(self.n_clusters)
        if not 1 <= k <= n:
            raise TesseraValueError(f"n_clusters={k} must be between 1 and the {n} samples")
        if self.n_init < 1 or self.max_iter < 1:
            raise TesseraValueError("n_init and max_iter must be at least 1")
        sq_norms = (X * X).sum(axis=1).persist()
        variance = float(xp.mean(xp.var(X, axis=0)))
        seed = 0 if self.random_state is None else int(self.random_state)
        best = None
        for run in range(int(self.n_init)):
            centers = self._initial(X, sq_norms, k, seed + 7919 * run)
            centers, inertia, n_iter = self._lloyd(X, centers, self.tol * variance)
            if best is None or inertia < best[1]:
                best = (centers, inertia, n_iter)
        self.cluster_centers_, self.inertia_, self.n_iter_ = best
        self.labels_ = self.predict(X)
        self.n_features_in_ = X.shape[1]
        return self

    def _initial(self, X: Array, sq_norms: Array, k: int, seed: int) -> np.ndarray:
        """The starting centres of one run."""
        if not isinstance(self.init, str):
            centers = np.asarray(self.init.compute() if isinstance(self.init, Array) else self.init, dtype=np.float64)
            if centers.shape != (k, X.shape[1]):
                raise TesseraValueError(f"init has shape {centers.shape}, expected {(k, X.shape[1])}")
            return centers.copy()
        rng = np.random.default_rng(seed)
        if self.init == "random":
            rows = np.sort(rng.choice(X.shape[0], size=k, replace=False))
            return np.asarray(X.take(rows, 0).compute())
        if self.init != "k-means||":
            raise TesseraValueError(f"init must be 'k-means||', 'random' or an array, got {self.init!r}")
        return self._kmeans_parallel(X, sq_norms, k, rng, seed)

    def _kmeans_parallel(self, X: Array, sq_norms: Array, k: int, rng: Any, seed: int) -> np.ndarray:
        """k-means||: oversample ``oversampling_factor × k`` rows per round by their share of
        the cost, weight the candidates by the rows nearest each, and reduce them to ``k``
        by k-means++ on the candidates here."""
        n = X.shape[0]
        first = int(rng.integers(n))
        centers = np.asarray(X.take(np.array([first]), 0).compute())
        draws = default_rng(seed)
        cost = _stats(X, centers)[2]
        rounds = self.init_max_iter or max(1, min(8, int(math.ceil(math.log(max(cost, 2.0))))))
        ell = self.oversampling_factor * k
        for _ in range(rounds):
            if cost <= 0.0:
                break
            nearest = xp.min(_squared_distances(X, sq_norms, centers), axis=1)
            picked = draws.uniform(size=n) < nearest * (ell / cost)
            centers = np.concatenate([centers, np.asarray(X[picked].compute()).reshape(-1, X.shape[1])])
            cost = _stats(X, centers)[2]
        if len(centers) <= k:
            extra = k - len(centers)
            rows = np.sort(rng.choice(n, size=extra, replace=False)) if extra else np.array([], dtype=np.int64)
            return np.concatenate([centers, np.asarray(X.take(rows, 0).compute())]) if extra else centers
        weights = _stats(X, centers)[1]
        return _weighted_kmeans_pp(centers, weights, k, rng)

    def _lloyd(self, X: Array, centers: np.ndarray, tol: float):
        """Lloyd iterations from ``centers``: (centres, inertia, iterations)."""
        for it in range(1, int(self.max_iter) + 1):
            sums, counts, _ = _stats(X, centers)
            moved = centers.copy()
            filled = counts > 0
            moved[filled] = sums[filled] / counts[filled, None]
            shift = float(((moved - centers) ** 2).sum())
            centers = moved
            if shift <= tol:
                break
        return centers, _stats(X, centers)[2], it

    # --- using the fit ---------------------------------------------------------------------
    def predict(self, X: Any) -> Array:
        """The index of the nearest centre of each row of ``X`` (a lazy array)."""
        centers = fitted(self, "cluster_centers_")
        X = samples(X, centers.shape[1])
        return xp.argmin(_squared_distances(X, (X * X).sum(axis=1), centers), axis=1)

    def transform(self, X: Any) -> Array:
        """The distance of each row of ``X`` to each centre (``n × k``, lazy)."""
        centers = fitted(self, "cluster_centers_")
        X = samples(X, centers.shape[1])
        return xp.sqrt(_squared_distances(X, (X * X).sum(axis=1), centers))

    def fit_predict(self, X: Any, y: Any = None) -> Array:
        """``fit(X)``, then its ``labels_``."""
        return self.fit(X).labels_

    def score(self, X: Any, y: Any = None) -> float:
        """Minus the inertia of ``X`` against the fitted centres."""
        centers = fitted(self, "cluster_centers_")
        X = samples(X, centers.shape[1])
        return -_stats(X, centers)[2]


def _weighted_kmeans_pp(points: np.ndarray, weights: np.ndarray, k: int, rng: Any) -> np.ndarray:
    """k-means++ over a few weighted ``points`` (the k-means|| candidates), in this process."""
    chosen = [int(rng.choice(len(points), p=weights / weights.sum()))] if weights.sum() > 0 else [0]
    nearest = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        mass = weights * nearest
        total = mass.sum()
        if total <= 0:
            rest = [i for i in range(len(points)) if i not in chosen]
            chosen.append(rest[0])
        else:
            chosen.append(int(rng.choice(len(points), p=mass / total)))
        nearest = np.minimum(nearest, ((points - points[chosen[-1]]) ** 2).sum(axis=1))
    return points[chosen].copy()
