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
        let xm = self.materialize(x, Some(grid.clone()))?;
        let op = ChunkOp::Array(ArrayOp::Sort { axis, arg });
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
    let unique = || ChunkOp::Array(ArrayOp::Unique);
    let mut level: Vec<ChunkKey> = xm.keys.iter().map(|&k| t.add(unique(), vec![k])).collect();
    while level.len() > 1 {
        level = level
            .chunks(FAN_IN)
            .map(|g| t.add(unique(), g.to_vec()))
            .collect();
    }
    Ok(t.into_graph(level))
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
    let whole_rows = |node: &Node, rows: Vec<usize>| -> Grid {
        std::iter::once(rows)
            .chain(node.shape.get(1).map(|&cols| vec![cols]))
            .collect()
    };
    let x_rows = t.natural_grid(x)?.into_iter().next().unwrap_or_default();
    let starts = grid::starts(&x_rows);
    let xm = t.materialize(x, Some(whole_rows(x, x_rows)))?;
    let q_rows = grid::split(
        queries.shape.first().copied().unwrap_or(0),
        QUERY_BLOCK_ROWS,
    );
    let qm = t.materialize(queries, Some(whole_rows(queries, q_rows)))?;
    let mut outputs = Vec::with_capacity(qm.keys.len());
    for &block in &qm.keys {
        let mut level: Vec<ChunkKey> = xm
            .keys
            .iter()
            .zip(&starts)
            .map(|(&key, &start)| {
                let op = ArrayOp::Nearest {
                    k,
                    offset: start as u64,
                };
                t.add(ChunkOp::Array(op), vec![key, block])
            })
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(FAN_IN)
                .map(|g| t.add(ChunkOp::Array(ArrayOp::NearestMerge { k }), g.to_vec()))
                .collect();
        }
        outputs.extend(level);
    }
    Ok(t.into_graph(outputs))
}
