//! Machine learning on chunked tensors, in scikit-learn's manner (Mars' `mars.learn`,
//! dask-ml): estimators whose passes over the data are jobs on a session, while only small
//! results (centres, `d × d` matrices, singular vectors) come back to this process.
//!
//! - [`KMeans`]: k-means|| initialisation and Lloyd iterations, each a [`cluster_stats`]
//!   pass.
//! - [`Pca`] and [`TruncatedSvd`]: the SVD of the (centred) data by TSQR or randomized SVD.
//! - [`LeastSquares`] (`LinearRegression`, `Ridge`): the normal equations from one job.
//! - [`LogisticRegression`]: Newton's method, each step a [`logistic_terms`] pass.
//! - [`kneighbors`]: brute-force nearest neighbours.
//!
//! The data is read as `float64`. Results do not depend on the chunking beyond rounding,
//! and random choices are Tessera's counter-based draws from the estimator's seed. The
//! Python package's `tessera.learn` wraps these with scikit-learn's class API.

mod decomposition;
mod host;
mod kmeans;
mod linear;
mod passes;

pub use decomposition::{Pca, PcaFit, PcaSolver, SvdFit, TruncatedSvd};
pub use kmeans::{squared_distances, KMeans, KMeansFit, KMeansInit};
pub use linear::{LeastSquares, LeastSquaresFit, LogisticFit, LogisticRegression};
pub use passes::{
    cluster_stats, kneighbors, logistic_terms, ClusterStats, LogisticTerms, Neighbors,
};
