//! Chunk grids: how a tensor is cut into chunks (Dask's `chunks` tuple: per axis, the
//! extent of each chunk).

use crate::error::{Error, Result};

/// Per axis, the chunk extents along it.
pub(crate) type Grid = Vec<Vec<usize>>;

/// Cuts `n` into pieces of `c` (the last may be smaller).
pub(crate) fn split(n: usize, c: usize) -> Vec<usize> {
    let c = c.clamp(1, n.max(1));
    let mut v = vec![c; n / c];
    if !n.is_multiple_of(c) {
        v.push(n % c);
    }
    v
}

/// The grid for `shape`: the user's chunk shape if given, else chunks of about
/// `chunk_elems` elements that keep trailing axes whole (C-order blocks, so a chunk is
/// contiguous in the tensor's flat order as far as possible).
pub(crate) fn grid_for(
    shape: &[usize],
    user: Option<&[usize]>,
    chunk_elems: usize,
) -> Result<Grid> {
    if let Some(c) = user {
        if c.len() != shape.len() || c.contains(&0) {
            return Err(Error::InvalidChunks(format!(
                "chunk shape {c:?} for shape {shape:?}"
            )));
        }
        return Ok(shape.iter().zip(c).map(|(&n, &c)| split(n, c)).collect());
    }
    let mut chunk = vec![1usize; shape.len()];
    let mut elems = 1usize;
    for d in (0..shape.len()).rev() {
        if elems.saturating_mul(shape[d]) <= chunk_elems {
            chunk[d] = shape[d];
            elems *= shape[d];
        } else {
            chunk[d] = (chunk_elems / elems).max(1);
            break;
        }
    }
    Ok(shape
        .iter()
        .zip(&chunk)
        .map(|(&n, &c)| split(n, c))
        .collect())
}

/// Start offsets of the chunks along one axis.
pub(crate) fn starts(extents: &[usize]) -> Vec<usize> {
    extents
        .iter()
        .scan(0, |acc, &e| {
            let s = *acc;
            *acc += e;
            Some(s)
        })
        .collect()
}

/// Every chunk of `grid` in C order: (start per axis, shape).
pub(crate) fn chunk_boxes(grid: &Grid) -> Vec<(Vec<usize>, Vec<usize>)> {
    let starts: Vec<Vec<usize>> = grid.iter().map(|e| starts(e)).collect();
    let mut out = vec![(Vec::new(), Vec::new())];
    for (ext, st) in grid.iter().zip(&starts) {
        out = out
            .into_iter()
            .flat_map(|(s, e)| {
                ext.iter().zip(st).map(move |(&x, &y)| {
                    let (mut s, mut e) = (s.clone(), e.clone());
                    s.push(y);
                    e.push(x);
                    (s, e)
                })
            })
            .collect();
    }
    out
}

/// Number of chunks along each axis.
pub(crate) fn counts(grid: &Grid) -> Vec<usize> {
    grid.iter().map(Vec::len).collect()
}

/// C-order position of chunk multi-index `idx` in a grid with `counts` chunks per axis.
pub(crate) fn flat_index(idx: &[usize], counts: &[usize]) -> usize {
    idx.iter().zip(counts).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// Indices of the chunks along one axis that intersect `lo..=hi`.
pub(crate) fn touching(extents: &[usize], lo: usize, hi: usize) -> std::ops::Range<usize> {
    let st = starts(extents);
    let first = st.partition_point(|&s| s <= lo).saturating_sub(1);
    let last = st.partition_point(|&s| s <= hi);
    first..last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_grid_keeps_trailing_axes_whole() {
        assert_eq!(
            grid_for(&[10, 2], None, 8).unwrap(),
            vec![vec![4, 4, 2], vec![2]]
        );
        assert_eq!(
            grid_for(&[3, 100], None, 30).unwrap(),
            vec![vec![1, 1, 1], vec![30, 30, 30, 10]]
        );
        assert_eq!(grid_for(&[], None, 8).unwrap(), Vec::<Vec<usize>>::new());
        assert!(grid_for(&[4], Some(&[0]), 8).is_err());
    }

    #[test]
    fn boxes_and_touching() {
        let g = vec![vec![2, 1], vec![3]];
        assert_eq!(
            chunk_boxes(&g),
            vec![(vec![0, 0], vec![2, 3]), (vec![2, 0], vec![1, 3])]
        );
        assert_eq!(touching(&[4, 4, 2], 3, 4), 0..2);
        assert_eq!(touching(&[4, 4, 2], 8, 9), 2..3);
        assert_eq!(flat_index(&[1, 2], &[2, 3]), 5);
    }
}
