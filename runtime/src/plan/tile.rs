//! The tiler: materializes lazy nodes as chunk tasks, memoized per node, emitting tasks in
//! dependency order.

use super::fuse::{box_view, FuseBuilder};
use super::grid::{self, Grid};
use crate::error::{Error, Result};
use crate::kept::StoredInputs;
use crate::tensor::node::{Node, NodeKind, StoredChunks};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tessera_actors::{ChunkGraph, ChunkKey, ChunkTask, DeviceKind, KeptChunk};
use tessera_kernels::{
    ArrayOp, Buffer, ChunkData, ChunkOp, ChunkReduce, CombineSpec, FusedKernel, HostTensor,
    ReduceOp, ReshapeSpec, SourceChunk,
};

/// Partials merged per combine task in a reduction tree (and products per sum).
pub(crate) const FAN_IN: usize = 8;

/// A node cut into chunk tasks: its grid and the key of each chunk (C-order over the grid).
#[derive(Clone, Debug)]
pub(crate) struct Materialized {
    pub grid: Grid,
    pub keys: Vec<ChunkKey>,
}

/// A tiled job: the graph and how its outputs form the root tensor.
pub(crate) struct Tiled {
    pub graph: ChunkGraph,
    /// Handles on the persisted chunks the graph reads, to hold while its job runs.
    pub holds: Vec<Arc<KeptChunk>>,
    pub grid: Grid,
    /// Chunks the plan computes again rather than keeps.
    pub recomputed: u64,
}

/// What tiling takes from the session.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileSettings {
    /// Target bytes per chunk.
    pub chunk_bytes: usize,
    /// Generated operands larger than a quarter of this are recomputed, not kept.
    pub memory_budget: u64,
    /// Whether the session's GPUs run the products (then products stay products, not
    /// fused into CPU-only ops).
    pub gpu_products: bool,
}

impl TileSettings {
    /// Sequential reference runs: chunks of `chunk_bytes`, no budget, no GPU.
    pub fn unbounded(chunk_bytes: usize) -> TileSettings {
        TileSettings {
            chunk_bytes,
            memory_budget: u64::MAX,
            gpu_products: false,
        }
    }
}

/// Turns lazy nodes into chunk tasks.
pub(crate) struct Tiler {
    pub(super) chunk_elems: usize,
    /// Generated operands larger than a quarter of this are recomputed, not kept.
    pub(super) memory_budget: u64,
    /// Whether the session's GPUs run the products (then products stay products, not
    /// fused into CPU-only ops).
    pub(super) gpu_products: bool,
    tasks: Vec<ChunkTask>,
    stored: StoredInputs,
    done: HashMap<(u64, Grid), Materialized>,
    /// The outputs of factorizations tiled so far, by (factorization id, output).
    pub(super) factors: HashMap<(u64, usize), Materialized>,
    /// The shared part of each TSQR tiled so far, by factorization id.
    pub(super) tsqr_bases: HashMap<u64, super::linalg::TsqrBase>,
    /// Blocks of recomputed operands generated so far (node id, block start).
    pub(super) generated: HashSet<(u64, Vec<usize>)>,
    pub(super) recomputed: u64,
}

/// Tiles `root` into a chunk graph whose outputs are its chunks in C order (see
/// [`TileSettings`] for what the session's settings change).
pub(crate) fn tile(root: &Arc<Node>, settings: TileSettings) -> Result<Tiled> {
    let _span = tracing::debug_span!("tile", node = root.id).entered();
    let mut t = Tiler::new(settings);
    let out = t.materialize(root, None)?;
    tracing::debug!(
        tasks = t.tasks.len(),
        chunks = out.keys.len(),
        recomputed = t.recomputed,
        "tiled"
    );
    let recomputed = t.recomputed;
    Ok(Tiled {
        holds: t.stored.holds(),
        graph: t.into_graph(out.keys),
        grid: out.grid,
        recomputed,
    })
}

impl Tiler {
    /// An empty plan with chunks of about `chunk_bytes`.
    pub(super) fn new(settings: TileSettings) -> Tiler {
        Tiler {
            chunk_elems: (settings.chunk_bytes / 8).max(1),
            memory_budget: settings.memory_budget,
            gpu_products: settings.gpu_products,
            tasks: Vec::new(),
            stored: StoredInputs::default(),
            done: HashMap::new(),
            factors: HashMap::new(),
            tsqr_bases: HashMap::new(),
            generated: HashSet::new(),
            recomputed: 0,
        }
    }

    /// The tasks added so far, as a graph whose outputs are `outputs`.
    pub(super) fn into_graph(self, outputs: Vec<ChunkKey>) -> ChunkGraph {
        ChunkGraph {
            stored: self.stored.inputs(),
            tasks: self.tasks,
            outputs,
            keep_outputs: false,
        }
    }

    pub(super) fn add(&mut self, op: ChunkOp, inputs: Vec<ChunkKey>) -> ChunkKey {
        let key = ChunkKey(self.tasks.len() as u64);
        self.tasks.push(ChunkTask::new(key, op, inputs));
        key
    }

    /// `x` over `grid`, the tasks added for it pinned to `device` (a pin nearer the data,
    /// already set, stays). Tasks an earlier part of the job made for `x` are reused as
    /// they are.
    fn on_device(&mut self, x: &Arc<Node>, device: DeviceKind, grid: Grid) -> Result<Materialized> {
        let before = self.tasks.len();
        let m = self.materialize(x, Some(grid))?;
        for task in &mut self.tasks[before..] {
            task.device.get_or_insert(device);
        }
        Ok(m)
    }

    /// The grid a node has when nothing asks for another.
    pub(super) fn natural_grid(&self, node: &Node) -> Result<Grid> {
        if node.numel() == 0 {
            return Ok(node.shape.iter().map(|&n| vec![n]).collect());
        }
        match &node.kind {
            NodeKind::Data(s) if node.chunks.is_none() => Ok(s.grid.clone()),
            NodeKind::Reduce {
                x, axes, keepdims, ..
            } => {
                let xg = self.natural_grid(x)?;
                Ok((0..x.shape.len())
                    .filter_map(|d| match (axes.contains(&d), keepdims) {
                        (false, _) => Some(xg[d].clone()),
                        (true, true) => Some(vec![1]),
                        (true, false) => None,
                    })
                    .collect())
            }
            NodeKind::Concat(xs, axis) => {
                let mut g = self.natural_grid(&xs[0])?;
                g[*axis] = xs
                    .iter()
                    .map(|x| self.natural_grid(x).map(|xg| xg[*axis].clone()))
                    .collect::<Result<Vec<_>>>()?
                    .concat();
                Ok(g)
            }
            // Elementwise results keep the chunks of an operand of the same shape (as Dask's
            // blockwise operations do), so a user's `rechunk` carries through a chain.
            NodeKind::Unary(_, x) | NodeKind::Cast(x) if node.chunks.is_none() => {
                self.natural_grid(x)
            }
            NodeKind::Binary(_, a, b) if node.chunks.is_none() => self.operand_grid(node, &[a, b]),
            NodeKind::MatMul(a, b) if node.chunks.is_none() => self.matmul_grid(a, b),
            NodeKind::Scan { x, .. }
            | NodeKind::IsIn { x, .. }
            | NodeKind::Require { x, .. }
            | NodeKind::OnDevice { x, .. }
                if node.chunks.is_none() =>
            {
                self.natural_grid(x)
            }
            NodeKind::Sort { x, axis, .. } | NodeKind::Fft { x, axis, .. } => {
                let mut g = self.natural_grid(x)?;
                g[*axis] = vec![x.shape[*axis]];
                Ok(g)
            }
            NodeKind::Take { x, axis, indices } => {
                // Chunks along the axis as long as the input's longest: its first can be a
                // sliver (a concat's one-element head), which made a chunk per index.
                let mut g = self.natural_grid(x)?;
                let extent = g[*axis].iter().copied().max().unwrap_or(1);
                g[*axis] = grid::split(indices.len(), extent);
                Ok(g)
            }
            NodeKind::Factor(f, output) => self.factor_grid(f, *output),
            NodeKind::Where(c, a, b) if node.chunks.is_none() => {
                self.operand_grid(node, &[c, a, b])
            }
            _ => grid::grid_for(&node.shape, node.chunks.as_deref(), self.chunk_elems),
        }
    }

    /// The grid of the first operand as large as `node`, or the automatic one.
    fn operand_grid(&self, node: &Node, operands: &[&Arc<Node>]) -> Result<Grid> {
        match operands.iter().find(|x| x.shape == node.shape) {
            Some(x) => self.natural_grid(x),
            None => grid::grid_for(&node.shape, None, self.chunk_elems),
        }
    }

    /// Cuts `node` into chunks on `want` (or its natural grid), adding the tasks that
    /// compute them once per node and grid.
    pub fn materialize(&mut self, node: &Arc<Node>, want: Option<Grid>) -> Result<Materialized> {
        let natural = self.natural_grid(node)?;
        let grid = want.unwrap_or_else(|| natural.clone());
        if let Some(m) = self.done.get(&(node.id, grid.clone())) {
            return Ok(m.clone());
        }
        let m = if node.numel() == 0 {
            self.empty(node, &grid, &natural)?
        } else if grid != natural {
            // Another grid than the node's own: copy through a fused identity over it.
            self.fused(node, grid.clone())?
        } else {
            match &node.kind {
                NodeKind::Data(s) if node.chunks.is_none() => {
                    let keys = match &s.chunks {
                        StoredChunks::Held(chunks) => chunks
                            .iter()
                            .map(|c| self.add(ChunkOp::Literal(c.clone()), Vec::new()))
                            .collect(),
                        StoredChunks::Kept(kept) => {
                            kept.chunks()?.iter().map(|c| self.stored.add(c)).collect()
                        }
                    };
                    Materialized {
                        grid: grid.clone(),
                        keys,
                    }
                }
                NodeKind::Reduce {
                    x,
                    op,
                    axes,
                    keepdims,
                } => self.reduce(x, *op, axes, *keepdims, grid.clone())?,
                NodeKind::Reshape(x) => self.reshape(x, &node.shape, grid.clone())?,
                NodeKind::Concat(xs, axis) => self.concat(xs, *axis, grid.clone())?,
                NodeKind::MatMul(a, b) => self.matmul(a, b, grid.clone())?,
                NodeKind::Factor(f, output) => self.factor(f, *output)?,
                NodeKind::Scan { x, op, axis } => self.scan(x, *op, *axis, grid.clone())?,
                NodeKind::Sort { x, axis, arg } => self.sort(x, *axis, *arg, grid.clone())?,
                NodeKind::Fft { x, axis, inverse } => {
                    let op = ArrayOp::Fft {
                        axis: *axis,
                        inverse: *inverse,
                    };
                    self.along_whole_axis(x, op, grid.clone())?
                }
                NodeKind::Take { x, axis, indices } => {
                    self.take(x, *axis, indices, grid.clone())?
                }
                NodeKind::IsIn { x, test, invert } => self.isin(x, test, *invert, grid.clone())?,
                NodeKind::Require { x, ok, message } => {
                    self.require(x, ok, message, grid.clone())?
                }
                NodeKind::OnDevice { x, device } => self.on_device(x, *device, grid.clone())?,
                // Elementwise programs and views: one fused kernel per chunk (named one by
                // one, so that a new kind of node cannot fall in here unplanned).
                NodeKind::Data(_)
                | NodeKind::Full(_)
                | NodeKind::Random { .. }
                | NodeKind::Ramp { .. }
                | NodeKind::Unary(..)
                | NodeKind::Binary(..)
                | NodeKind::Where(..)
                | NodeKind::Cast(_)
                | NodeKind::View(..) => self.fused(node, grid.clone())?,
            }
        };
        self.done.insert((node.id, grid), m.clone());
        Ok(m)
    }

    /// A tensor with no elements: one empty literal chunk. Constructors keep empty operands
    /// away from every other chunk op, so only the job's root can be empty here.
    fn empty(&mut self, node: &Node, grid: &Grid, natural: &Grid) -> Result<Materialized> {
        if grid != natural {
            return Err(Error::InvalidChunks(format!(
                "an empty tensor of shape {:?} has one chunk, not the grid {grid:?}",
                node.shape
            )));
        }
        let empty = HostTensor::new(node.shape.clone(), Buffer::with_capacity(node.dtype, 0))?;
        let key = self.add(
            ChunkOp::Literal(Arc::new(ChunkData::Tensor(empty))),
            Vec::new(),
        );
        Ok(Materialized {
            grid: grid.clone(),
            keys: vec![key],
        })
    }

    /// One fused kernel per chunk of `grid` computing `node`.
    fn fused(&mut self, node: &Arc<Node>, grid: Grid) -> Result<Materialized> {
        let keys = grid::chunk_boxes(&grid)
            .into_iter()
            .map(|(start, shape)| self.fused_chunk(node, &start, &shape, None))
            .collect::<Result<_>>()?;
        Ok(Materialized { grid, keys })
    }

    fn fused_chunk(
        &mut self,
        node: &Arc<Node>,
        start: &[usize],
        shape: &[usize],
        reduce: Option<ChunkReduce>,
    ) -> Result<ChunkKey> {
        let mut b = FuseBuilder::new(self);
        let root = if node.shape.is_empty() {
            b.visit(node, &[], &[])?
        } else {
            b.visit(node, &box_view(start), shape)?
        };
        let (instrs, inputs) = (b.instrs, b.inputs);
        Ok(self.add(
            ChunkOp::Fused(FusedKernel {
                instrs,
                root,
                reduce,
            }),
            inputs,
        ))
    }

    /// A fused partial per chunk of `x`, then a tree of combines per output chunk; where
    /// each output chunk has one partial, its fused task finishes the reduction itself
    /// (`ChunkReduce::finalize`) and no combine runs.
    fn reduce(
        &mut self,
        x: &Arc<Node>,
        op: ReduceOp,
        axes: &[usize],
        keepdims: bool,
        out_grid: Grid,
    ) -> Result<Materialized> {
        let xgrid = self.natural_grid(x)?;
        let counts = grid::counts(&xgrid);
        let kept: Vec<usize> = (0..x.shape.len()).filter(|d| !axes.contains(d)).collect();
        // The shape of the output chunk that input chunk `idx` (its indices along the
        // kept axes) reduces into.
        let out_shape = |idx: &[usize]| -> Vec<usize> {
            let mut k = 0;
            (0..x.shape.len())
                .filter_map(|d| match (axes.contains(&d), keepdims) {
                    (false, _) => {
                        let e = xgrid[d][idx[k]];
                        k += 1;
                        Some(e)
                    }
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect()
        };
        let one_partial_each = axes.iter().all(|&d| counts[d] == 1);
        let mut finished = Vec::new();
        let mut groups: HashMap<Vec<usize>, Vec<ChunkKey>> = HashMap::new();
        let mut order: Vec<Vec<usize>> = Vec::new();
        for (f, (start, shape)) in grid::chunk_boxes(&xgrid).into_iter().enumerate() {
            let chunk_idx = unflatten(f, &counts);
            let idx: Vec<usize> = kept.iter().map(|&d| chunk_idx[d]).collect();
            let spec = ChunkReduce {
                op,
                axes: axes.to_vec(),
                global_start: start.clone(),
                global_shape: x.shape.clone(),
                finalize: one_partial_each.then(|| out_shape(&idx)),
            };
            let key = self.fused_chunk(x, &start, &shape, Some(spec))?;
            if one_partial_each {
                finished.push(key);
                continue;
            }
            groups
                .entry(idx.clone())
                .or_insert_with(|| {
                    order.push(idx);
                    Vec::new()
                })
                .push(key);
        }
        if one_partial_each {
            return Ok(Materialized {
                grid: out_grid,
                keys: finished,
            });
        }
        let mut keys = Vec::with_capacity(order.len());
        for idx in order {
            let mut level = groups.remove(&idx).unwrap_or_default();
            let combine = |finalize: Option<Vec<usize>>| {
                ChunkOp::Combine(CombineSpec {
                    op,
                    input_dtype: x.dtype,
                    finalize,
                })
            };
            while level.len() > FAN_IN {
                level = level
                    .chunks(FAN_IN)
                    .map(|g| self.add(combine(None), g.to_vec()))
                    .collect();
            }
            keys.push(self.add(combine(Some(out_shape(&idx))), level));
        }
        Ok(Materialized {
            grid: out_grid,
            keys,
        })
    }

    /// Reshape tasks: each output chunk gathers from the source chunks whose flat ranges
    /// overlap its own.
    fn reshape(&mut self, x: &Arc<Node>, shape: &[usize], out_grid: Grid) -> Result<Materialized> {
        let src = self.materialize(x, None)?;
        let flat = |idx: &[usize], dims: &[usize]| {
            idx.iter()
                .zip(dims)
                .fold(0usize, |acc, (&i, &n)| acc * n + i)
        };
        let last_of = |start: &[usize], ext: &[usize]| {
            start
                .iter()
                .zip(ext)
                .map(|(s, e)| s + e - 1)
                .collect::<Vec<_>>()
        };
        let src_boxes = grid::chunk_boxes(&src.grid);
        let mut keys = Vec::new();
        for (start, ext) in grid::chunk_boxes(&out_grid) {
            let (lo, hi) = (flat(&start, shape), flat(&last_of(&start, &ext), shape));
            let mut inputs = Vec::new();
            let mut chunks = Vec::new();
            for ((s, e), key) in src_boxes.iter().zip(&src.keys) {
                let (a, b) = (flat(s, &x.shape), flat(&last_of(s, e), &x.shape));
                if a <= hi && b >= lo {
                    chunks.push(SourceChunk {
                        start: s.clone(),
                        shape: e.clone(),
                        input: inputs.len(),
                    });
                    inputs.push(*key);
                }
            }
            let spec = ReshapeSpec {
                src_shape: x.shape.clone(),
                chunks,
                dst_shape: shape.to_vec(),
                out_start: start,
                out_shape: ext,
            };
            keys.push(self.add(ChunkOp::Reshape(spec), inputs));
        }
        Ok(Materialized {
            grid: out_grid,
            keys,
        })
    }

    /// Concatenation: inputs are cut to the first one's grid on the other axes, and their
    /// chunks are laid side by side (no data moves).
    fn concat(&mut self, xs: &[Arc<Node>], axis: usize, out_grid: Grid) -> Result<Materialized> {
        let first = self.natural_grid(&xs[0])?;
        let mut parts = Vec::with_capacity(xs.len());
        for x in xs {
            let mut g = first.clone();
            g[axis] = self.natural_grid(x)?[axis].clone();
            parts.push(self.materialize(x, Some(g))?);
        }
        let counts = grid::counts(&out_grid);
        let total: usize = counts.iter().product();
        let mut keys = Vec::with_capacity(total);
        for f in 0..total {
            let mut idx = unflatten(f, &counts);
            let mut part = 0;
            while idx[axis] >= parts[part].grid[axis].len() {
                idx[axis] -= parts[part].grid[axis].len();
                part += 1;
                if part == parts.len() {
                    return Err(Error::Runtime(
                        "concatenate: chunk index past the inputs".into(),
                    ));
                }
            }
            let p = &parts[part];
            keys.push(p.keys[grid::flat_index(&idx, &grid::counts(&p.grid))]);
        }
        Ok(Materialized {
            grid: out_grid,
            keys,
        })
    }
}

/// Chunk multi-index of C-order position `f` in a grid with `counts` chunks per axis.
pub(crate) fn unflatten(mut f: usize, counts: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; counts.len()];
    for d in (0..counts.len()).rev() {
        idx[d] = f % counts[d];
        f /= counts[d];
    }
    idx
}
