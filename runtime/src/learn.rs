//! Machine learning on chunked tensors, in scikit-learn's manner: the parts that need
//! kernels of their own (the Python package's `tessera.learn` builds the other estimators
//! from tensor operations).
//!
//! [`kneighbors`] is brute-force nearest neighbours: every row chunk of the indexed
//! matrix is searched against all the queries in parallel, and the chunks' best `k` are
//! merged in a tree (Mars' and scikit-learn's `algorithm="brute"`).

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
/// matrix product only screens the candidates). `queries` is one chunk in every task, so
/// it should be small beside `x`; split a large query set and call this per part.
///
/// Shape for a `queries` or `x` that is not a matrix, or of other column counts;
/// InvalidArgument for `k` of 0 or above the rows of `x`, no query, or a query with fewer
/// than `k` rows at a finite distance (NaN or infinite values).
pub fn kneighbors(session: &Session, x: &Tensor, queries: &Tensor, k: usize) -> Result<Neighbors> {
    let (xn, qn) = (x.node()?, queries.node()?);
    let (rows, cols) = match xn.shape[..] {
        [r, c] => (r, c),
        _ => return Err(shape("the indexed data", &xn.shape)),
    };
    let (n_queries, q_cols) = match qn.shape[..] {
        [r, c] => (r, c),
        _ => return Err(shape("the queries", &qn.shape)),
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
    let parts = match out.first().map(|c| c.as_ref()) {
        Some(ChunkData::Parts(p)) => p,
        _ => {
            return Err(Error::Runtime(
                "nearest neighbours: the job returned no neighbours".into(),
            ))
        }
    };
    let (Some(squared), Some(indices)) = (
        parts.first().and_then(|d| d.as_slice::<f64>()),
        parts.get(1).filter(|i| i.as_slice::<i64>().is_some()),
    ) else {
        return Err(Error::Runtime(
            "nearest neighbours: the job returned no distances and rows".into(),
        ));
    };
    if let Some(at) = indices
        .as_slice::<i64>()
        .and_then(|r| r.iter().position(|&r| r < 0))
    {
        return Err(Error::InvalidArgument(format!(
            "nearest neighbours: query row {} has fewer than k = {k} rows at a finite \
             distance (NaN or infinite values)",
            at / k
        )));
    }
    let distances = squared.iter().map(|d| d.sqrt()).collect();
    Ok(Neighbors {
        distances: HostTensor::new(vec![n_queries, k], Buffer::F64(distances))?,
        indices: indices.clone(),
    })
}

fn shape(what: &str, shape: &[usize]) -> Error {
    Error::Shape(format!(
        "nearest neighbours: {what} must be a matrix, got shape {shape:?}"
    ))
}
