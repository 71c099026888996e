//! Tiling of the array ops that are neither elementwise nor reductions: scans (a chain of
//! carries along the axis, the chunks themselves in parallel), sorts (the axis whole in
//! each chunk), gathers by index, membership tests, the distinct values of a tensor, and
//! nearest neighbours.

use super::grid::{self, Grid};
use super::tile::{unflatten, Materialized, TileSettings, Tiler, FAN_IN};
use crate::error::{Error, Result};
use crate::tensor::node::Node;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_actors::{ChunkGraph, ChunkKey};
use tessera_kernels::{ArrayOp, ChunkOp, ScanOp};

impl Tiler {
    /// `x`'s chunks on `grid`, scanned along `axis`: the chunk at position `j` along the
    /// axis starts from the carry of chunks `0..j`, a chain of small carry tasks.
    pub(super) fn scan(
        &mut self,
        x: &Arc<Node>,
        op: ScanOp,
        axis: usize,
        grid: Grid,
    ) -> Result<Materialized> {
        let xm = self.materialize(x, Some(grid.clone()))?;
        let counts = grid::counts(&grid);
        let mut keys = xm.keys.clone();
        for f in 0..xm.keys.len() {
            let mut idx = unflatten(f, &counts);
            if idx[axis] != 0 {
                continue;
            }
            let mut carry: Option<ChunkKey> = None;
            for j in 0..counts[axis] {
                idx[axis] = j;
                let at = grid::flat_index(&idx, &counts);
                let chunk = xm.keys[at];
                let scan_inputs = [chunk].into_iter().chain(carry).collect();
                keys[at] = self.add(ChunkOp::Array(ArrayOp::Scan { op, axis }), scan_inputs);
                if j + 1 < counts[axis] {
                    let carry_inputs = carry.into_iter().chain([chunk]).collect();
                    let next = ChunkOp::Array(ArrayOp::ScanCarry { op, axis });
                    carry = Some(self.add(next, carry_inputs));
                }
            }
        }
        Ok(Materialized { grid, keys })
    }

    /// `x` on `grid` (whose `axis` is one chunk), each chunk sorted along it.
    pub(super) fn sort(
        &mut self,
        x: &Arc<Node>,
        axis: usize,
        arg: bool,
        grid: Grid,
    ) -> Result<Materialized> {
        self.along_whole_axis(x, ArrayOp::Sort { axis, arg }, grid)
    }

    /// `x` on `grid` (whose axis that `op` works along is one chunk), `op` on each chunk.
    pub(super) fn along_whole_axis(
        &mut self,
        x: &Arc<Node>,
        op: ArrayOp,
        grid: Grid,
    ) -> Result<Materialized> {
        let xm = self.materialize(x, Some(grid.clone()))?;
        let op = ChunkOp::Array(op);
        let keys = xm
            .keys
            .iter()
            .map(|&k| self.add(op.clone(), vec![k]))
            .collect();
        Ok(Materialized { grid, keys })
    }

    /// Positions `indices` of `x` along `axis`: each output chunk gathers from the chunks
    /// of `x` its positions fall in (the same chunks on every other axis).
    pub(super) fn take(
        &mut self,
        x: &Arc<Node>,
        axis: usize,
        indices: &[usize],
        grid: Grid,
    ) -> Result<Materialized> {
        let mut xgrid = grid.clone();
        xgrid[axis] = self.natural_grid(x)?[axis].clone();
        let xm = self.materialize(x, Some(xgrid.clone()))?;
        let xcounts = grid::counts(&xgrid);
        let starts = grid::starts(&xgrid[axis]);
        // The chunk along the axis and the position in it of every source position.
        let locate = |p: usize| -> Result<(usize, u64)> {
            let j = starts.partition_point(|&s| s <= p).saturating_sub(1);
            match xgrid[axis].get(j) {
                Some(&len) if p < starts[j] + len => Ok((j, (p - starts[j]) as u64)),
                _ => Err(Error::Runtime(format!(
                    "take: position {p} outside the tensor"
                ))),
            }
        };
        let out_starts = grid::starts(&grid[axis]);
        let counts = grid::counts(&grid);
        let mut keys = Vec::with_capacity(counts.iter().product());
        for f in 0..counts.iter().product() {
            let idx = unflatten(f, &counts);
            let (lo, len) = (out_starts[idx[axis]], grid[axis][idx[axis]]);
            let mut inputs: Vec<ChunkKey> = Vec::new();
            let mut slot: HashMap<usize, u32> = HashMap::new();
            let mut sources = Vec::with_capacity(len);
            for &p in &indices[lo..lo + len] {
                let (j, pos) = locate(p)?;
                let input = *slot.entry(j).or_insert_with(|| {
                    let mut at = idx.clone();
                    at[axis] = j;
                    inputs.push(xm.keys[grid::flat_index(&at, &xcounts)]);
                    (inputs.len() - 1) as u32
                });
                sources.push((input, pos));
            }
            keys.push(self.add(ChunkOp::Array(ArrayOp::Take { axis, sources }), inputs));
        }
        Ok(Materialized { grid, keys })
    }

    /// Each chunk of `x` on `grid` tested against the whole of `test` (one chunk).
    pub(super) fn isin(
        &mut self,
        x: &Arc<Node>,
        test: &Arc<Node>,
        invert: bool,
        grid: Grid,
    ) -> Result<Materialized> {
        let xm = self.materialize(x, Some(grid.clone()))?;
        let whole = test.shape.iter().map(|&n| vec![n]).collect();
        let tm = self.materialize(test, Some(whole))?;
        let op = ChunkOp::Array(ArrayOp::IsIn { invert });
        let keys = xm
            .keys
            .iter()
            .map(|&k| self.add(op.clone(), vec![k, tm.keys[0]]))
            .collect();
        Ok(Materialized { grid, keys })
    }
}

impl Tiler {
    /// Each chunk of `x` on `grid`, passed on once the same chunk of `ok` is all true.
    pub(super) fn require(
        &mut self,
        x: &Arc<Node>,
        ok: &Arc<Node>,
        message: &str,
        grid: Grid,
    ) -> Result<Materialized> {
        let xm = self.materialize(x, Some(grid.clone()))?;
        let okm = self.materialize(ok, Some(grid.clone()))?;
        let op = ChunkOp::Array(ArrayOp::Require {
            message: message.to_string(),
        });
        let keys = xm
            .keys
            .iter()
            .zip(&okm.keys)
            .map(|(&k, &o)| self.add(op.clone(), vec![k, o]))
            .collect();
        Ok(Materialized { grid, keys })
    }
}

/// A job computing the sorted distinct values of `x` as one 1-D chunk: each chunk's
/// distinct values, merged in a tree.
pub(crate) fn unique_graph(x: &Arc<Node>, settings: TileSettings) -> Result<ChunkGraph> {
    let mut t = Tiler::new(settings);
    let xm = t.materialize(x, None)?;
    let unique = ChunkOp::Array(ArrayOp::Unique);
    let level = xm
        .keys
        .iter()
        .map(|&k| t.add(unique.clone(), vec![k]))
        .collect();
    let root = merged(&mut t, level, unique)?;
    Ok(t.into_graph(vec![root]))
}

/// `level` combined `FAN_IN` at a time by `op` until one is left.
fn merged(t: &mut Tiler, mut level: Vec<ChunkKey>, op: ChunkOp) -> Result<ChunkKey> {
    while level.len() > 1 {
        level = level
            .chunks(FAN_IN)
            .map(|g| t.add(op.clone(), g.to_vec()))
            .collect();
    }
    level
        .first()
        .copied()
        .ok_or_else(|| Error::Runtime(format!("{}: no chunk to merge", op.name())))
}

/// The chunks of the matrix `node` by rows, its columns whole: `rows` rows each, or its
/// own row chunks where `None`; with the first row of each.
fn row_chunks(
    t: &mut Tiler,
    node: &Arc<Node>,
    rows: Option<usize>,
) -> Result<(Vec<ChunkKey>, Vec<usize>)> {
    let extents = match rows {
        Some(r) => grid::split(node.shape.first().copied().unwrap_or(0), r),
        None => t.natural_grid(node)?.into_iter().next().unwrap_or_default(),
    };
    let starts = grid::starts(&extents);
    Ok((rows_as(t, node, extents)?, starts))
}

/// `node` (a vector or matrix, `what` in errors) as one chunk.
fn one_chunk(t: &mut Tiler, node: &Arc<Node>, what: &str) -> Result<ChunkKey> {
    let (keys, _) = row_chunks(t, node, Some(usize::MAX))?;
    keys.first()
        .copied()
        .ok_or_else(|| Error::Runtime(format!("{what} have no chunk")))
}

/// The chunks of `node` (a vector or matrix) cut by rows into `extents`, any other axis
/// whole.
fn rows_as(t: &mut Tiler, node: &Arc<Node>, extents: Vec<usize>) -> Result<Vec<ChunkKey>> {
    let grid = std::iter::once(extents)
        .chain(node.shape.iter().skip(1).map(|&n| vec![n]))
        .collect();
    Ok(t.materialize(node, Some(grid))?.keys)
}

/// Queries per block in a nearest-neighbour job: each block is one chunk, read whole by a
/// task per row chunk of the data.
pub(crate) const QUERY_BLOCK_ROWS: usize = 16_384;

/// A job finding the `k` rows of the matrix `x` nearest to each row of the matrix
/// `queries` (as many columns): each row chunk of `x` (its columns whole) against each
/// block of at most [`QUERY_BLOCK_ROWS`] queries, the results for a block merged in a
/// tree. Its outputs are one [`ChunkData::Parts`](tessera_kernels::ChunkData::Parts) of
/// squared distances and row numbers per query block, in order ([`ArrayOp::Nearest`]).
pub(crate) fn nearest_graph(
    x: &Arc<Node>,
    queries: &Arc<Node>,
    k: usize,
    settings: TileSettings,
) -> Result<ChunkGraph> {
    let mut t = Tiler::new(settings);
    let (x_keys, starts) = row_chunks(&mut t, x, None)?;
    let (blocks, _) = row_chunks(&mut t, queries, Some(QUERY_BLOCK_ROWS))?;
    let mut outputs = Vec::with_capacity(blocks.len());
    for block in blocks {
        let level = x_keys
            .iter()
            .zip(&starts)
            .map(|(&key, &start)| {
                let offset = start as u64;
                let op = ChunkOp::Array(ArrayOp::Nearest { k, offset });
                t.add(op, vec![key, block])
            })
            .collect();
        let merge = ChunkOp::Array(ArrayOp::NearestMerge { k });
        outputs.push(merged(&mut t, level, merge)?);
    }
    Ok(t.into_graph(outputs))
}

/// A job assigning each row of the matrix `x` to its nearest row of `centres` (one chunk):
/// an [`ArrayOp::ClusterStats`] per row chunk of `x` (its columns whole), merged in a tree
/// into one result.
pub(crate) fn cluster_graph(
    x: &Arc<Node>,
    centres: &Arc<Node>,
    settings: TileSettings,
) -> Result<ChunkGraph> {
    let mut t = Tiler::new(settings);
    let (x_keys, _) = row_chunks(&mut t, x, None)?;
    let all = one_chunk(&mut t, centres, "cluster assignment: the centres")?;
    let level = x_keys
        .iter()
        .map(|&key| t.add(ChunkOp::Array(ArrayOp::ClusterStats), vec![key, all]))
        .collect();
    let root = merged(&mut t, level, ChunkOp::Array(ArrayOp::SumParts))?;
    Ok(t.into_graph(vec![root]))
}

/// A job summing logistic regression's gradient and Hessian over the rows of the matrix
/// `a` with their labels `y` (a vector or column, cut as `a`'s rows) at the weights `w`
/// (one chunk): an [`ArrayOp::LogisticTerms`] per row chunk, merged in a tree.
pub(crate) fn logistic_graph(
    a: &Arc<Node>,
    y: &Arc<Node>,
    w: &Arc<Node>,
    settings: TileSettings,
) -> Result<ChunkGraph> {
    let mut t = Tiler::new(settings);
    let extents = t.natural_grid(a)?.into_iter().next().unwrap_or_default();
    let rows = rows_as(&mut t, a, extents.clone())?;
    let labels = rows_as(&mut t, y, extents)?;
    let weights = one_chunk(&mut t, w, "logistic regression: the weights")?;
    let level = rows
        .iter()
        .zip(&labels)
        .map(|(&r, &l)| t.add(ChunkOp::Array(ArrayOp::LogisticTerms), vec![r, l, weights]))
        .collect();
    let root = merged(&mut t, level, ChunkOp::Array(ArrayOp::SumParts))?;
    Ok(t.into_graph(vec![root]))
}
