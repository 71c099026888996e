"""Machine learning on Tessera arrays, with scikit-learn's API (``tessera.learn``), as
Mars shipped ``mars.learn`` and Dask has dask-ml: estimators whose passes over the data are
chunked jobs, and whose small results (centres, components, coefficients) come back to
this process.

- :class:`KMeans`: k-means|| and Lloyd iterations, one job each.
- :class:`PCA`: the SVD of the centred data by TSQR or randomized; :class:`TruncatedSVD`.
- :class:`LinearRegression`, :class:`Ridge`: the normal equations from one job.
- :class:`LogisticRegression`: Newton's method, one job per iteration.
- :class:`NearestNeighbors`: brute-force k nearest neighbours, one job.
"""

from ._cluster import KMeans
from ._decomposition import PCA, TruncatedSVD
from ._linear import LinearRegression, LogisticRegression, Ridge
from ._neighbors import NearestNeighbors

__all__ = ["KMeans", "LinearRegression", "LogisticRegression", "NearestNeighbors", "PCA", "Ridge", "TruncatedSVD"]
