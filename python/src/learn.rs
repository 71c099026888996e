//! `tessera::learn` for the Python package's `tessera.learn`: each function runs an
//! estimator's fit (or one pass) on a session without the GIL and returns its small
//! results as NumPy arrays and Python numbers; the classes with scikit-learn's API are
//! Python.

use crate::array::PyTensor;
use crate::convert::host_to_numpy;
use crate::errors::raise;
use crate::session::{run_job, PySession};
use pyo3::prelude::*;
use tessera::learn::{
    self, KMeans, KMeansInit, LeastSquares, LogisticRegression, Pca, PcaSolver, SvdFit,
    TruncatedSvd,
};

/// The `k` rows of the matrix `x` nearest to each row of `queries`, computed on `session`:
/// (Euclidean distances, row numbers), NumPy arrays of queries × `k`, nearest first.
#[pyfunction]
fn learn_kneighbors<'py>(
    py: Python<'py>,
    x: &PyTensor,
    queries: &PyTensor,
    k: usize,
    session: &PySession,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let s = session.get()?;
    let (x, q) = (x.t.clone(), queries.t.clone());
    let found = run_job(py, Some(s.clone()), move || {
        learn::kneighbors(&s, &x, &q, k)
    })?;
    Ok((
        host_to_numpy(py, found.distances)?,
        host_to_numpy(py, found.indices)?,
    ))
}

/// The total squared distance of the rows of the matrix `x` to their nearest row of
/// `centres` (k-means' inertia), computed on `session`.
#[pyfunction]
fn learn_inertia(
    py: Python<'_>,
    x: &PyTensor,
    centres: &PyTensor,
    session: &PySession,
) -> PyResult<f64> {
    let s = session.get()?;
    let (x, c) = (x.t.clone(), centres.t.clone());
    let stats = run_job(py, Some(s.clone()), move || {
        learn::cluster_stats(&s, &x, &c)
    })?;
    Ok(stats.cost)
}

/// The squared distance of every row of `x` to every row of `centres` (lazy).
#[pyfunction]
fn learn_squared_distances(x: &PyTensor, centres: &PyTensor) -> PyResult<PyTensor> {
    PyTensor::wrap(learn::squared_distances(&x.t, &centres.t))
}

/// `KMeans(...).fit(x)` on `session`: (centres, inertia, iterations). `init` is
/// `"k-means||"` or `"random"`; `centres`, when given, are the starting centres instead.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (x, session, n_clusters, init, centres, n_init, max_iter, tol, seed, oversampling_factor, init_rounds))]
fn learn_kmeans<'py>(
    py: Python<'py>,
    x: &PyTensor,
    session: &PySession,
    n_clusters: usize,
    init: &str,
    centres: Option<&PyTensor>,
    n_init: usize,
    max_iter: usize,
    tol: f64,
    seed: u64,
    oversampling_factor: f64,
    init_rounds: Option<usize>,
) -> PyResult<(Bound<'py, PyAny>, f64, usize)> {
    let s = session.get()?;
    let start = centres.map(|c| c.t.clone());
    let init = match (init, &start) {
        (_, Some(_)) => None,
        ("k-means||", None) => Some(KMeansInit::Parallel),
        ("random", None) => Some(KMeansInit::Random),
        (other, None) => {
            return Err(raise(
                "TesseraValueError",
                format!("init must be 'k-means||', 'random' or an array, got {other:?}"),
            ))
        }
    };
    let x = x.t.clone();
    let fit = run_job(py, Some(s.clone()), move || {
        let init = match (init, start) {
            (Some(init), _) => init,
            (None, Some(c)) => KMeansInit::Centres(c.execute(&s)?),
            (None, None) => KMeansInit::Parallel,
        };
        let model = KMeans {
            n_clusters,
            init,
            n_init,
            max_iter,
            tol,
            seed,
            oversampling_factor,
            init_rounds,
        };
        model.fit(&s, &x)
    })?;
    Ok((host_to_numpy(py, fit.centres)?, fit.inertia, fit.n_iter))
}

/// `LinearRegression`/`Ridge(alpha)` fitted to `x` and `y` on `session`: (coefficients,
/// targets × features; intercepts).
#[pyfunction]
fn learn_least_squares<'py>(
    py: Python<'py>,
    x: &PyTensor,
    y: &PyTensor,
    session: &PySession,
    alpha: f64,
    fit_intercept: bool,
) -> PyResult<(Bound<'py, PyAny>, Vec<f64>)> {
    let s = session.get()?;
    let (x, y) = (x.t.clone(), y.t.clone());
    let model = LeastSquares {
        alpha,
        fit_intercept,
    };
    let fit = run_job(py, Some(s.clone()), move || model.fit(&s, &x, &y))?;
    Ok((host_to_numpy(py, fit.coef)?, fit.intercept))
}

/// `LogisticRegression(C, tol, max_iter, fit_intercept)` fitted to `x` and 0/1 labels `y`
/// on `session`: (coefficients, intercept, Newton steps).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn learn_logistic(
    py: Python<'_>,
    x: &PyTensor,
    y: &PyTensor,
    session: &PySession,
    c: f64,
    tol: f64,
    max_iter: usize,
    fit_intercept: bool,
) -> PyResult<(Vec<f64>, f64, usize)> {
    let s = session.get()?;
    let (x, y) = (x.t.clone(), y.t.clone());
    let model = LogisticRegression {
        c,
        tol,
        max_iter,
        fit_intercept,
    };
    let fit = run_job(py, Some(s.clone()), move || model.fit(&s, &x, &y))?;
    Ok((fit.coef, fit.intercept, fit.n_iter))
}

/// The fitted values of a PCA or a truncated SVD: components, singular values, explained
/// variances and their ratios (and a PCA's means).
type Decomposition<'py> = (Bound<'py, PyAny>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

/// `PCA(n_components, svd_solver)` fitted to `x` on `session`; `randomized` as
/// `(power_iters, oversamples, seed)`, else the exact SVD: (components, singular values,
/// explained variances, their ratios, means).
#[pyfunction]
fn learn_pca<'py>(
    py: Python<'py>,
    x: &PyTensor,
    session: &PySession,
    n_components: Option<usize>,
    randomized: Option<(usize, usize, u64)>,
) -> PyResult<Decomposition<'py>> {
    let solver = match randomized {
        Some((power_iters, oversamples, seed)) => PcaSolver::Randomized {
            power_iters,
            oversamples,
            seed,
        },
        None => PcaSolver::Full,
    };
    let model = Pca {
        n_components,
        solver,
    };
    decompose(py, x, session, move |s, x| {
        let fit = model.fit(s, x)?;
        Ok((fit.svd, fit.mean))
    })
}

/// `TruncatedSVD(n_components, n_iter, n_oversamples, random_state)` fitted to `x` on
/// `session`: (components, singular values, explained variances, their ratios, no means).
#[pyfunction]
fn learn_truncated_svd<'py>(
    py: Python<'py>,
    x: &PyTensor,
    session: &PySession,
    n_components: usize,
    n_iter: usize,
    n_oversamples: usize,
    seed: u64,
) -> PyResult<Decomposition<'py>> {
    let model = TruncatedSvd {
        n_components,
        n_iter,
        n_oversamples,
        seed,
    };
    decompose(py, x, session, move |s, x| {
        Ok((model.fit(s, x)?, Vec::new()))
    })
}

/// Runs the decomposition `fit` of `x` on `session` (its values and the means) without the
/// GIL and gives them to Python, the components as a NumPy array.
fn decompose<'py>(
    py: Python<'py>,
    x: &PyTensor,
    session: &PySession,
    fit: impl FnOnce(&tessera::Session, &tessera::Tensor) -> tessera::Result<(SvdFit, Vec<f64>)>
        + Send
        + 'static,
) -> PyResult<Decomposition<'py>> {
    let s = session.get()?;
    let x = x.t.clone();
    let (fit, mean) = run_job(py, Some(s.clone()), move || fit(&s, &x))?;
    Ok((
        host_to_numpy(py, fit.components)?,
        fit.singular_values,
        fit.explained_variance,
        fit.explained_variance_ratio,
        mean,
    ))
}

/// Adds the learn functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(learn_kneighbors, m)?)?;
    m.add_function(wrap_pyfunction!(learn_inertia, m)?)?;
    m.add_function(wrap_pyfunction!(learn_squared_distances, m)?)?;
    m.add_function(wrap_pyfunction!(learn_kmeans, m)?)?;
    m.add_function(wrap_pyfunction!(learn_least_squares, m)?)?;
    m.add_function(wrap_pyfunction!(learn_logistic, m)?)?;
    m.add_function(wrap_pyfunction!(learn_pca, m)?)?;
    m.add_function(wrap_pyfunction!(learn_truncated_svd, m)?)
}
