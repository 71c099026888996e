//! The passes over chunked data that need kernels of their own, one job each:
//! [`kneighbors`] (brute-force nearest neighbours: every row chunk of the indexed matrix
//! searched against all the queries in parallel, the chunks' best `k` merged in a tree),
//! [`cluster_stats`] (k-means' pass: each row assigned to its nearest centre, the sums,
//! counts and cost per chunk, merged in a tree) and [`logistic_terms`] (a Newton step's
//! pass for logistic regression: the gradient and Hessian, summed per chunk and merged).

use crate::error::{Error, Result};
use crate::session::Session;
use crate::tensor::Tensor;
use tessera_kernels::{Buffer, ChunkData, HostTensor};

/// The neighbours of each query row, nearest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbors {
    /// Euclidean distances, `float64`, queries × k.
    pub distances: HostTensor,
    /// Row numbers in the indexed matrix, `int64`, queries × k.
    pub indices: HostTensor,
}

/// The `k` rows of the matrix `x` nearest to each row of the matrix `queries` (as many
/// columns) by Euclidean distance, computed on `session` (scikit-learn's
/// `NearestNeighbors(algorithm="brute").fit(x).kneighbors(queries, k)`).
///
/// Values are read as `float64`. Ties go to the lower row number, and the result does not
/// depend on how `x` is chunked: each distance is summed term by term in column order (a
/// matrix product only screens the candidates). One job: a task per row chunk of `x` and
/// block of queries (up to 16,384 queries, read whole by the task).
///
/// Shape for a `queries` or `x` that is not a matrix, or of other column counts;
/// InvalidArgument for `k` of 0 or above the rows of `x`, no query, or a query with fewer
/// than `k` rows at a finite distance (NaN or infinite values).
pub fn kneighbors(session: &Session, x: &Tensor, queries: &Tensor, k: usize) -> Result<Neighbors> {
    let (xn, qn) = (x.node()?, queries.node()?);
    let (rows, cols) = match xn.shape[..] {
        [r, c] => (r, c),
        _ => return Err(shape("nearest neighbours: the indexed data", &xn.shape)),
    };
    let (n_queries, q_cols) = match qn.shape[..] {
        [r, c] => (r, c),
        _ => return Err(shape("nearest neighbours: the queries", &qn.shape)),
    };
    if cols != q_cols {
        return Err(Error::Shape(format!(
            "nearest neighbours: queries of {q_cols} columns for data of {cols}"
        )));
    }
    if k == 0 || k > rows {
        return Err(Error::InvalidArgument(format!(
            "nearest neighbours: k = {k} must be between 1 and the {rows} indexed rows"
        )));
    }
    if n_queries == 0 {
        return Err(Error::InvalidArgument(
            "nearest neighbours: no query rows".into(),
        ));
    }
    let settings = session.inner.tile_settings();
    let out = session.run_chunk_graph(&[xn, qn], || {
        crate::plan::nearest_graph(xn, qn, k, settings)
    })?;
    // One result per block of queries, in order.
    let (mut squared, mut indices) = (
        Vec::with_capacity(n_queries * k),
        Vec::with_capacity(n_queries * k),
    );
    for chunk in &out {
        let (dist, rows) = match chunk.as_ref() {
            ChunkData::Parts(p) => match p.as_slice() {
                [d, r] => (d.as_slice::<f64>(), r.as_slice::<i64>()),
                _ => (None, None),
            },
            _ => (None, None),
        };
        let (Some(dist), Some(rows)) = (dist, rows) else {
            return Err(Error::Runtime(
                "nearest neighbours: the job returned no distances and rows".into(),
            ));
        };
        squared.extend_from_slice(dist);
        indices.extend_from_slice(rows);
    }
    if let Some(at) = indices.iter().position(|&r| r < 0) {
        return Err(Error::InvalidArgument(format!(
            "nearest neighbours: query row {} has fewer than k = {k} rows at a finite \
             distance (NaN or infinite values)",
            at / k
        )));
    }
    let distances = squared.iter().map(|d| d.sqrt()).collect();
    Ok(Neighbors {
        distances: HostTensor::new(vec![n_queries, k], Buffer::F64(distances))?,
        indices: HostTensor::new(vec![n_queries, k], Buffer::I64(indices))?,
    })
}

/// The rows of a matrix grouped by their nearest centre ([`cluster_stats`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterStats {
    /// Per centre, the sum of its rows (`float64`, centres × columns).
    pub sums: HostTensor,
    /// Per centre, its number of rows.
    pub counts: Vec<f64>,
    /// The sum over the rows of the squared distance to their centre (k-means' inertia;
    /// NaN where a row has NaN).
    pub cost: f64,
}

/// Each row of the matrix `x` assigned to its nearest row of the matrix `centres` (as
/// many columns; squared Euclidean distance summed term by term, ties to the lower centre),
/// computed on `session` in one job: one Lloyd step's statistics.
///
/// Values are read as `float64`; the assignment does not depend on the chunking (the sums
/// differ only in rounding). Shape for a non-matrix or other column counts;
/// InvalidArgument for no centre or no column.
pub fn cluster_stats(session: &Session, x: &Tensor, centres: &Tensor) -> Result<ClusterStats> {
    let (xn, cn) = (x.node()?, centres.node()?);
    let (k, cols) = match (&xn.shape[..], &cn.shape[..]) {
        ([_, cols], [k, ccols]) if cols == ccols => (*k, *cols),
        ([_, _], [_, _]) => {
            return Err(Error::Shape(format!(
                "cluster assignment: centres of shape {:?} for data of shape {:?}",
                cn.shape, xn.shape
            )))
        }
        ([_, _], _) => return Err(shape("cluster assignment: the centres", &cn.shape)),
        _ => return Err(shape("cluster assignment: the data", &xn.shape)),
    };
    if k == 0 || cols == 0 {
        return Err(Error::InvalidArgument(format!(
            "cluster assignment: {k} centres of {cols} columns"
        )));
    }
    let settings = session.inner.tile_settings();
    let out =
        session.run_chunk_graph(&[xn, cn], || crate::plan::cluster_graph(xn, cn, settings))?;
    let parts = match out.first().map(|c| c.as_ref()) {
        Some(ChunkData::Parts(p)) => p.as_slice(),
        _ => &[],
    };
    match parts {
        [sums, counts, cost] => match (counts.as_slice::<f64>(), cost.as_slice::<f64>()) {
            (Some(counts), Some(&[cost])) => Ok(ClusterStats {
                sums: sums.clone(),
                counts: counts.to_vec(),
                cost,
            }),
            _ => Err(Error::Runtime(
                "cluster assignment: malformed result".into(),
            )),
        },
        _ => Err(Error::Runtime(
            "cluster assignment: the job returned no statistics".into(),
        )),
    }
}

/// Binary logistic regression's data terms at weights `w`: the gradient and the Hessian
/// of `Σ log(1 + e^(−(2y−1) a·w))` over the rows `a`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogisticTerms {
    /// `Σ (p − y) a`, one entry per weight.
    pub gradient: Vec<f64>,
    /// `Σ p (1 − p) a aᵀ` (`float64`, weights × weights).
    pub hessian: HostTensor,
}

/// The gradient and Hessian of binary logistic regression's loss over the rows of the
/// matrix `a`, with labels `y` (0 or 1; a vector or a column of one per row) at the
/// weights `w` (one per column, or one more for an intercept: each row then read as if a
/// one followed it), computed on `session` in one job (`p = 1 / (1 + e^(−a·w))` per row):
/// one Newton step's pass.
///
/// Shape for a non-matrix `a`, or `y` or `w` of other lengths.
pub fn logistic_terms(
    session: &Session,
    a: &Tensor,
    y: &Tensor,
    w: &Tensor,
) -> Result<LogisticTerms> {
    let (an, yn, wn) = (a.node()?, y.node()?, w.node()?);
    let [rows, cols] = an.shape[..] else {
        return Err(shape("logistic regression: the rows", &an.shape));
    };
    let fits = |shape: &[usize], n: usize| matches!(shape, [m] | [m, 1] if *m == n);
    if !fits(&yn.shape, rows) || !(fits(&wn.shape, cols) || fits(&wn.shape, cols + 1)) {
        return Err(Error::Shape(format!(
            "logistic regression: {rows} rows of {cols} columns, labels of shape {:?}, \
             weights of shape {:?}",
            yn.shape, wn.shape
        )));
    }
    let settings = session.inner.tile_settings();
    let out = session.run_chunk_graph(&[an, yn, wn], || {
        crate::plan::logistic_graph(an, yn, wn, settings)
    })?;
    match out.first().map(|c| c.as_ref()) {
        Some(ChunkData::Parts(p)) => match p.as_slice() {
            [g, h] => match g.as_slice::<f64>() {
                Some(g) => Ok(LogisticTerms {
                    gradient: g.to_vec(),
                    hessian: h.clone(),
                }),
                None => Err(Error::Runtime(
                    "logistic regression: malformed result".into(),
                )),
            },
            _ => Err(Error::Runtime(
                "logistic regression: malformed result".into(),
            )),
        },
        _ => Err(Error::Runtime(
            "logistic regression: the job returned no terms".into(),
        )),
    }
}

fn shape(what: &str, shape: &[usize]) -> Error {
    Error::Shape(format!("{what} must be a matrix, got shape {shape:?}"))
}
