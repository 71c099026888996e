//! Tiling of matrix products and TSQR factorizations.
//!
//! A product `a · b` becomes one task per output block summing `a_ik · b_kj` over the
//! shared axis (groups of [`FAN_IN`] pairs, then sums). An operand that is generated (random,
//! ranges) and larger than a quarter of the memory budget is not kept: each task computes
//! its block again from lineage, inside the product, so a pass over data far larger than
//! memory streams. A tall-and-skinny QR factors each row block, factors the stacked R
//! factors once, and rebuilds Q blockwise; the SVD adds an SVD of the small R. The range of
//! a randomized SVD (`Q` of `x · Ω` and `xᵀ Q`) is the same TSQR with each row block's QR
//! and projection computed from one read of the block.

use super::fuse::FuseBuilder;
use super::grid::{self, Grid};
use super::tile::{Materialized, Tiler, FAN_IN};
use crate::error::Result;
use crate::tensor::node::{FactorKind, Factorization, Node, NodeKind};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_actors::ChunkKey;
use tessera_kernels::{ChunkOp, InputRef, InstrKind, LeafSource, LinalgOp, MatOperand};

/// The inputs of one task under construction, each key once.
#[derive(Default)]
struct TaskInputs {
    keys: Vec<ChunkKey>,
    slots: HashMap<ChunkKey, usize>,
}

impl TaskInputs {
    fn slot(&mut self, key: ChunkKey) -> usize {
        let next = self.keys.len();
        let slot = *self.slots.entry(key).or_insert(next);
        if slot == next {
            self.keys.push(key);
        }
        slot
    }
}

/// A sum of same-shaped tensors built as its terms are emitted: every [`FAN_IN`] terms of
/// a level are summed at once, so the planner (lowest task first) adds them up and releases
/// them early instead of holding every term until the end.
#[derive(Default)]
struct SumTree {
    levels: Vec<Vec<ChunkKey>>,
}

impl SumTree {
    fn push(&mut self, t: &mut Tiler, key: ChunkKey) {
        self.push_at(t, 0, key);
    }

    fn push_at(&mut self, t: &mut Tiler, level: usize, key: ChunkKey) {
        if self.levels.len() == level {
            self.levels.push(Vec::new());
        }
        self.levels[level].push(key);
        if self.levels[level].len() == FAN_IN {
            let terms = std::mem::take(&mut self.levels[level]);
            let sum = Self::sum(t, terms);
            self.push_at(t, level + 1, sum);
        }
    }

    fn sum(t: &mut Tiler, terms: Vec<ChunkKey>) -> ChunkKey {
        match terms.as_slice() {
            [one] => *one,
            _ => {
                let refs = (0..terms.len()).map(InputRef::whole).collect();
                t.add(ChunkOp::Linalg(LinalgOp::Sum(refs)), terms)
            }
        }
    }

    /// The key of the whole sum (at least one term was pushed).
    fn finish(self, t: &mut Tiler) -> ChunkKey {
        let rest: Vec<ChunkKey> = self.levels.into_iter().flatten().collect();
        if rest.len() <= FAN_IN {
            Self::sum(t, rest)
        } else {
            let mut again = SumTree::default();
            for k in rest {
                again.push(t, k);
            }
            again.finish(t)
        }
    }
}

/// True for nodes computed by fused kernels (as opposed to materialized stages).
fn is_fusable(node: &Node) -> bool {
    !matches!(
        node.kind,
        NodeKind::Data(_)
            | NodeKind::Reduce { .. }
            | NodeKind::Reshape(_)
            | NodeKind::Concat(..)
            | NodeKind::MatMul(..)
            | NodeKind::Factor(..)
    )
}

/// True for a view (a transpose, a slice) of a node that is materialized: a product that
/// reads a block of it once copies that block in its own task, as the view's own task
/// would, so the view needs no task (`q.T @ x` of a TSQR factor: one task a block fewer).
fn is_view_of_materialized(node: &Node) -> bool {
    matches!(&node.kind, NodeKind::View(x, _) if !is_fusable(x))
}

impl Tiler {
    /// Block `(idx)` of `node` as a product operand, on `grid`; `once` if the product
    /// reads this block in one task only.
    fn operand(
        &mut self,
        node: &Arc<Node>,
        grid: &Grid,
        idx: &[usize],
        once: bool,
        inputs: &mut TaskInputs,
    ) -> Result<MatOperand> {
        let bytes = (node.numel() as u64).saturating_mul(8);
        let generate = bytes > self.memory_budget / 4 || once && is_view_of_materialized(node);
        if is_fusable(node) && generate {
            let start: Vec<usize> = idx
                .iter()
                .enumerate()
                .map(|(d, &i)| grid::starts(&grid[d])[i])
                .collect();
            let shape: Vec<usize> = idx.iter().enumerate().map(|(d, &i)| grid[d][i]).collect();
            if !self.generated.insert((node.id, start.clone())) {
                self.recomputed += 1;
            }
            let mut b = FuseBuilder::new(self);
            let root = b.visit(node, &super::fuse::box_view(&start), &shape)?;
            let (mut instrs, local) = (b.instrs, b.inputs);
            let map: Vec<usize> = local.into_iter().map(|k| inputs.slot(k)).collect();
            for ins in &mut instrs {
                if let InstrKind::Leaf(LeafSource::Chunks { chunks, .. }) = &mut ins.kind {
                    for c in chunks {
                        c.input = map[c.input];
                    }
                }
            }
            let kernel = tessera_kernels::FusedKernel {
                instrs,
                root,
                reduce: None,
            };
            return Ok(MatOperand::Fused(Box::new(kernel)));
        }
        let m = self.materialize(node, Some(grid.clone()))?;
        let key = m.keys[grid::flat_index(idx, &grid::counts(grid))];
        Ok(MatOperand::Input(InputRef::whole(inputs.slot(key))))
    }

    /// The split of the shared axis: as the larger operand is split, so it is read in place.
    fn k_grid(&self, a: &Node, b: &Node) -> Result<Vec<usize>> {
        Ok(if a.numel() >= b.numel() {
            self.natural_grid(a)?[1].clone()
        } else {
            self.natural_grid(b)?[0].clone()
        })
    }

    /// The grid of a product's output. Each output block reads a whole panel of both
    /// operands, so an axis stays whole when the *other* operand is the larger one (it is
    /// then read once, not once per block) and the operand blocks stay a few chunks;
    /// otherwise it follows the operand's own split.
    pub(super) fn matmul_grid(&self, a: &Node, b: &Node) -> Result<Grid> {
        let k_max = self.k_grid(a, b)?.into_iter().max().unwrap_or(1);
        let fits = |side: usize| side.saturating_mul(k_max) <= self.chunk_elems.saturating_mul(4);
        let (m, n) = (a.shape[0], b.shape[1]);
        let rows = if b.numel() >= a.numel() && fits(m) {
            vec![m]
        } else {
            self.natural_grid(a)?[0].clone()
        };
        let cols = if a.numel() >= b.numel() && fits(n) {
            vec![n]
        } else {
            self.natural_grid(b)?[1].clone()
        };
        Ok(vec![rows, cols])
    }

    /// Pairs of operand blocks one product task multiplies and adds up: [`FAN_IN`], so that
    /// fewer partial blocks are held and summed, unless the output block is small beside
    /// the operand blocks (a skinny product such as `Qᵀ · X`): then one pair per task, so a
    /// task reads one large block, on a cluster where that block is held, and only the small
    /// partials travel to be summed.
    fn pairs_per_task(out_block: usize, a_rows: usize, b_cols: usize, k_grid: &[usize]) -> usize {
        let smallest_pair = k_grid
            .iter()
            .map(|&k| {
                k.saturating_mul(a_rows)
                    .saturating_add(k.saturating_mul(b_cols))
            })
            .min()
            .unwrap_or(0);
        if out_block.saturating_mul(FAN_IN) <= smallest_pair {
            1
        } else {
            FAN_IN
        }
    }

    /// One task per output block of `a · b` (or per pair of operand blocks, see
    /// [`Self::pairs_per_task`]), summing over the shared axis in a tree.
    pub(super) fn matmul(
        &mut self,
        a: &Arc<Node>,
        b: &Arc<Node>,
        out: Grid,
    ) -> Result<Materialized> {
        let k_grid = self.k_grid(a, b)?;
        let a_grid = vec![out[0].clone(), k_grid.clone()];
        let b_grid = vec![k_grid.clone(), out[1].clone()];
        // A block of `a` is read by each output column block, one of `b` by each row block.
        let (a_once, b_once) = (out[1].len() == 1, out[0].len() == 1);
        let mut keys = Vec::new();
        for i in 0..out[0].len() {
            for j in 0..out[1].len() {
                let mut sum = SumTree::default();
                let ks: Vec<usize> = (0..k_grid.len()).collect();
                let (rows, cols) = (out[0][i], out[1][j]);
                let per_task = Self::pairs_per_task(rows * cols, rows, cols, &k_grid);
                for group in ks.chunks(per_task) {
                    let mut inputs = TaskInputs::default();
                    let mut pairs = Vec::with_capacity(group.len());
                    for &kk in group {
                        let x = self.operand(a, &a_grid, &[i, kk], a_once, &mut inputs)?;
                        let y = self.operand(b, &b_grid, &[kk, j], b_once, &mut inputs)?;
                        pairs.push((x, y));
                    }
                    let partial =
                        self.add(ChunkOp::Linalg(LinalgOp::MatMul { pairs }), inputs.keys);
                    sum.push(self, partial);
                }
                keys.push(sum.finish(self));
            }
        }
        Ok(Materialized { grid: out, keys })
    }

    /// The grids of a factorization's outputs.
    pub(super) fn factor_grid(&self, f: &Factorization, output: usize) -> Result<Grid> {
        let n = f.x.shape[1];
        let rows = self.natural_grid(&f.x)?[0].clone();
        Ok(match (&f.kind, output) {
            (FactorKind::Range { omega }, 0) => vec![rows, vec![omega.shape[1]]],
            (FactorKind::Range { omega }, _) => vec![vec![n], vec![omega.shape[1]]],
            (_, 0) => vec![rows, vec![n]],
            (FactorKind::Svd, 1) => vec![vec![n]],
            _ => vec![vec![n], vec![n]],
        })
    }

    /// Output `output` of a factorization, tiled once per job. Only the outputs a job
    /// reads get tasks: an SVD's U, or a QR's Q, is not built where only its small factors
    /// are asked for (a range's two outputs are built together).
    pub(super) fn factor(&mut self, f: &Arc<Factorization>, output: usize) -> Result<Materialized> {
        if let Some(m) = self.factors.get(&(f.id, output)) {
            return Ok(m.clone());
        }
        let built = match &f.kind {
            FactorKind::Range { omega } => {
                let outputs = if self.range_in_one_pass(f, omega)? {
                    self.range_tsqr(f)?
                } else {
                    self.range_in_two_passes(f, omega)?
                };
                outputs.into_iter().enumerate().collect()
            }
            _ => vec![(output, self.tsqr_output(f, output)?)],
        };
        for (i, m) in built {
            self.factors.insert((f.id, i), m);
        }
        self.factors
            .get(&(f.id, output))
            .cloned()
            .ok_or_else(|| no_output(output))
    }

    /// Whether [`FactorKind::Range`] reads `x` once ([`LinalgOp::RangeQr`], CPU only): not
    /// where GPUs compute the products, nor where the row blocks' projections (each
    /// `min(rows, l) × n`, all held until the stacked QR is done) would be larger than a
    /// quarter of `x` or of the memory budget: then the second pass costs less.
    fn range_in_one_pass(&self, f: &Factorization, omega: &Node) -> Result<bool> {
        let (n, l) = (f.x.shape[1] as u64, omega.shape[1] as u64);
        let projections: u64 = self.natural_grid(&f.x)?[0]
            .iter()
            .map(|&rows| (rows as u64).min(l).saturating_mul(n).saturating_mul(8))
            .sum();
        let x_bytes = (f.x.numel() as u64).saturating_mul(8);
        Ok(!self.gpu_products
            && projections <= x_bytes / 4
            && projections <= self.memory_budget / 4)
    }

    /// [`FactorKind::Range`] in two passes over `x`, as Dask computes it: `Y = x · omega`,
    /// `Q` from Y's TSQR, then `P = (Qᵀ · x)ᵀ`, each product tiled as any other (on GPUs
    /// where the session has them).
    fn range_in_two_passes(
        &mut self,
        f: &Factorization,
        omega: &Arc<Node>,
    ) -> Result<Vec<Materialized>> {
        let x = Tensor::from_node(f.x.clone());
        let (q, _) = crate::linalg::qr(&x.matmul(&Tensor::from_node(omega.clone())));
        let p = q.transpose().matmul(&x).transpose();
        let mut outputs = Vec::with_capacity(2);
        for (i, t) in [q, p].iter().enumerate() {
            let grid = self.factor_grid(f, i)?;
            outputs.push(self.materialize(t.node()?, Some(grid))?);
        }
        Ok(outputs)
    }

    /// TSQR's shared part, tiled once per job: a QR of each row block (or, for a range,
    /// [`LinalgOp::RangeQr`] of it), the QR of the leaves' stacked R factors, and for an
    /// SVD the SVD of that R.
    fn tsqr_base(&mut self, f: &Factorization) -> Result<TsqrBase> {
        if let Some(base) = self.tsqr_bases.get(&f.id) {
            return Ok(base.clone());
        }
        let n = f.x.shape[1];
        let rows = self.natural_grid(&f.x)?[0].clone();
        let x_grid = vec![rows.clone(), vec![n]];
        // A range's test matrix, one chunk every leaf reads.
        let omega = match &f.kind {
            FactorKind::Range { omega } => {
                let m = self.materialize(omega, Some(vec![vec![n], vec![omega.shape[1]]]))?;
                let key = m.keys.first().copied().ok_or_else(|| {
                    crate::error::Error::Runtime("the range's test matrix has no chunk".into())
                })?;
                Some((key, omega.shape[1]))
            }
            FactorKind::Qr | FactorKind::Svd => None,
        };
        let width = omega.map_or(n, |(_, l)| l);
        let (mut leaves, mut rs) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        for i in 0..rows.len() {
            // The block is read in the leaf's task where it is computed (`x − mean`) and
            // too large to keep: as chunks of its own, ready at once, it would run ahead of
            // the leaves and spill beside `x`.
            let mut inputs = TaskInputs::default();
            let op = match omega {
                Some((om, _)) => {
                    let omega = InputRef::whole(inputs.slot(om));
                    let x = self.operand(&f.x, &x_grid, &[i, 0], true, &mut inputs)?;
                    LinalgOp::RangeQr { x, omega }
                }
                None => LinalgOp::Qr(self.operand(&f.x, &x_grid, &[i, 0], true, &mut inputs)?),
            };
            let leaf = self.add(lin(op), inputs.keys);
            // Each leaf's R is taken out next in graph order (so before the next leaves
            // run), and the stacked QR holds only the R factors: a leaf, Q and all, is freed
            // as soon as its R is out unless Q or U is asked for; on a cluster, only the R
            // factors travel.
            rs.push(self.add(lin(LinalgOp::Take(InputRef::part(0, 1))), vec![leaf]));
            leaves.push(leaf);
        }
        let stacked = (0..rs.len()).map(InputRef::whole).collect();
        let st = self.add(lin(LinalgOp::StackedQr(stacked)), rs);
        let svd = matches!(f.kind, FactorKind::Svd)
            .then(|| self.add(lin(LinalgOp::Svd(InputRef::part(0, 1))), vec![st]));
        let heights: Vec<usize> = rows.iter().map(|&m| m.min(width)).collect();
        let base = TsqrBase {
            offsets: grid::starts(&heights),
            heights,
            rows,
            leaves,
            width,
            st,
            svd,
        };
        self.tsqr_bases.insert(f.id, base.clone());
        Ok(base)
    }

    /// Row block `i` of the product of each block's Q with the rows of `right` it owns
    /// (`part` of it, or all of it).
    fn blockwise(
        &mut self,
        base: &TsqrBase,
        right: ChunkKey,
        part: Option<usize>,
    ) -> Vec<ChunkKey> {
        (0..base.leaves.len())
            .map(|i| {
                let rows = InputRef {
                    part,
                    ..base.stacked_rows(1, i)
                };
                let pairs = vec![(
                    MatOperand::Input(InputRef::part(0, 0)),
                    MatOperand::Input(rows),
                )];
                self.add(lin(LinalgOp::MatMul { pairs }), vec![base.leaves[i], right])
            })
            .collect()
    }

    /// Output `output` of a QR (Q, R) or an SVD (U, S, Vt) by TSQR: Q and U blockwise.
    fn tsqr_output(&mut self, f: &Factorization, output: usize) -> Result<Materialized> {
        let base = self.tsqr_base(f)?;
        let width = base.width;
        let (grid, keys) = match (&f.kind, output, base.svd) {
            (FactorKind::Qr, 0, _) => (base.left(), self.blockwise(&base, base.st, Some(0))),
            (FactorKind::Qr, 1, _) => {
                let r = self.add(lin(LinalgOp::Take(InputRef::part(0, 1))), vec![base.st]);
                (vec![vec![width], vec![width]], vec![r])
            }
            (FactorKind::Svd, 0, Some(svd)) => {
                let pairs = vec![(
                    MatOperand::Input(InputRef::part(0, 0)),
                    MatOperand::Input(InputRef::part(1, 0)),
                )];
                let w = self.add(lin(LinalgOp::MatMul { pairs }), vec![base.st, svd]);
                (base.left(), self.blockwise(&base, w, None))
            }
            (FactorKind::Svd, 1 | 2, Some(svd)) => {
                let part = InputRef::part(0, output);
                let key = self.add(lin(LinalgOp::Take(part)), vec![svd]);
                let grid = match output {
                    1 => vec![vec![width]],
                    _ => vec![vec![width], vec![width]],
                };
                (grid, vec![key])
            }
            _ => return Err(no_output(output)),
        };
        Ok(Materialized { grid, keys })
    }

    /// The range of a randomized SVD in one pass: Q blockwise, and `P = Σᵢ Pᵢ · Sᵢ`
    /// ([`FAN_IN`] blocks a task), each block's `Pᵢ` times its rows of the stacked Q.
    fn range_tsqr(&mut self, f: &Factorization) -> Result<Vec<Materialized>> {
        let n = f.x.shape[1];
        let base = self.tsqr_base(f)?;
        let st = base.st;
        let q = self.blockwise(&base, st, Some(0));
        let mut sum = SumTree::default();
        let blocks: Vec<usize> = (0..base.leaves.len()).collect();
        for group in blocks.chunks(FAN_IN) {
            let mut keys = vec![st];
            let pairs = group
                .iter()
                .enumerate()
                .map(|(j, &i)| {
                    keys.push(base.leaves[i]);
                    (
                        MatOperand::Input(InputRef::part(j + 1, 2)),
                        MatOperand::Input(base.stacked_rows(0, i)),
                    )
                })
                .collect();
            let partial = self.add(lin(LinalgOp::MatMul { pairs }), keys);
            sum.push(self, partial);
        }
        Ok(vec![
            Materialized {
                grid: base.left(),
                keys: q,
            },
            Materialized {
                grid: vec![vec![n], vec![base.width]],
                keys: vec![sum.finish(self)],
            },
        ])
    }
}

/// The error for an output a factorization does not have.
fn no_output(output: usize) -> crate::error::Error {
    crate::error::Error::Runtime(format!("a factorization has no output {output}"))
}

/// A chunk operation of the linear-algebra kernels.
fn lin(op: LinalgOp) -> ChunkOp {
    ChunkOp::Linalg(op)
}

/// The part of a TSQR every output of its factorization reads (see [`Tiler::tsqr_base`]).
#[derive(Clone)]
pub(super) struct TsqrBase {
    /// The leaves: a QR (or range QR) per row block.
    leaves: Vec<ChunkKey>,
    /// The row blocks' heights in `x`.
    rows: Vec<usize>,
    /// Each block's rows in the stacked R factors, and where they start.
    heights: Vec<usize>,
    offsets: Vec<usize>,
    /// The factor's width (columns of Q).
    width: usize,
    /// The QR of the stacked R factors.
    st: ChunkKey,
    /// For an SVD, the SVD of that R.
    svd: Option<ChunkKey>,
}

impl TsqrBase {
    /// Block `i`'s rows of the stacked Q (part 0 of input `input`).
    fn stacked_rows(&self, input: usize, i: usize) -> InputRef {
        InputRef {
            input,
            part: Some(0),
            rows: Some((self.offsets[i], self.heights[i])),
        }
    }

    /// The grid of Q or U: the row blocks, the width whole.
    fn left(&self) -> Grid {
        vec![self.rows.clone(), vec![self.width]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skinny_product_takes_one_pair_per_task_and_a_square_one_groups_them() {
        // Qᵀ · X: a 20 × 5000 output from row blocks of 838 × 20 and 838 × 5000.
        assert_eq!(Tiler::pairs_per_task(20 * 5000, 20, 5000, &[838; 120]), 1);
        // A square product: 1000 × 1000 blocks of every operand.
        assert_eq!(
            Tiler::pairs_per_task(1000 * 1000, 1000, 1000, &[1000; 16]),
            FAN_IN
        );
        // The smallest block of the shared axis decides.
        assert_eq!(
            Tiler::pairs_per_task(20 * 5000, 20, 5000, &[838, 838, 1]),
            FAN_IN
        );
    }

    /// Only the outputs a job reads get tasks: an SVD's S and Vt, or a QR's R, need no
    /// blockwise product (U and Q do), also when S and Vt are read together.
    #[test]
    fn a_factorization_tiles_only_the_outputs_it_is_asked_for() {
        let x = crate::tensor::random::default_rng(3).random(&[400, 6]);
        let (u, s, vt) = crate::linalg::svd(&x.rechunk(&[100, 6]));
        let (q, r) = crate::linalg::qr(&x.rechunk(&[100, 6]));
        let products = |t: &Tensor| {
            let tiled = super::super::tile(
                t.node().unwrap(),
                super::super::TileSettings::unbounded(400 * 6 * 8),
            )
            .unwrap();
            let matmuls = |g: &tessera_actors::ChunkGraph| {
                g.tasks
                    .iter()
                    .filter(|t| matches!(t.op, ChunkOp::Linalg(LinalgOp::MatMul { .. })))
                    .count()
            };
            matmuls(&tiled.graph)
        };
        let both = crate::tensor::concatenate(&[&vt, &s.reshape(&[-1, 1])], 1);
        for small in [&s, &vt, &both, &r] {
            assert_eq!(products(small), 0);
        }
        // Four row blocks: a product each, and U's the product of the stacked Q with the
        // small SVD's U first.
        assert_eq!((products(&q), products(&u)), (4, 5));
    }

    /// A computed block too large to keep (a PCA's `x − mean`) is computed in its leaf's QR
    /// task and never becomes a chunk of its own; the factors are those of the kept block;
    /// each leaf's R is taken right after the leaf.
    #[test]
    fn a_leaf_qr_computes_a_large_derived_block_in_its_task() {
        let x = crate::tensor::random::default_rng(9).random(&[400, 6]);
        let mean = crate::tensor::from_vec(vec![0.5, 0.25, 0.5, 0.75, 0.5, 0.5], &[1, 6]);
        let centred = x.rechunk(&[100, 6]).sub(mean);
        let (_, s, vt) = crate::linalg::svd(&centred);
        let bytes = 400 * 6 * 8;
        let run = |t: &Tensor, memory_budget: u64| {
            let node = t.node().unwrap();
            let settings = super::super::TileSettings {
                memory_budget,
                ..super::super::TileSettings::unbounded(bytes)
            };
            let tiled = super::super::tile(node, settings).unwrap();
            let (mut computed, mut fused) = (0, 0);
            let tasks = &tiled.graph.tasks;
            for (i, task) in tasks.iter().enumerate() {
                match &task.op {
                    ChunkOp::Linalg(LinalgOp::Qr(a)) => {
                        computed += usize::from(matches!(a, MatOperand::Fused(_)));
                        // Its R is taken next (the planner dispatches in graph order), so
                        // a leaf's Q is freed before later leaves run.
                        let next = &tasks[i + 1];
                        assert!(matches!(next.op, ChunkOp::Linalg(LinalgOp::Take(_))));
                        assert_eq!(next.inputs, vec![task.key]);
                    }
                    ChunkOp::Fused(_) => fused += 1,
                    _ => {}
                }
            }
            let host = crate::reference::run_tiled(node, tiled).unwrap();
            (host.as_slice::<f64>().unwrap().to_vec(), computed, fused)
        };
        for t in [&s, &vt] {
            // A budget the block's bytes exceed a quarter of: computed in the leaves.
            let (inside, computed, fused) = run(t, bytes as u64);
            assert_eq!((computed, fused), (4, 0));
            let (kept, computed, fused) = run(t, u64::MAX);
            assert_eq!(computed, 0);
            assert!(fused >= 4, "{fused} fused tasks");
            assert_eq!(inside, kept);
        }
    }

    /// The range of a randomized SVD planned for GPUs (two passes of ordinary products and
    /// a TSQR, no `range_qr`) gives what the one-pass plan gives, and only the one-pass
    /// plan has `range_qr` tasks.
    #[test]
    fn the_range_in_two_passes_agrees_with_the_one_pass_range() {
        let x = crate::tensor::random::default_rng(5).random(&[400, 30]);
        let (_, s, vt) = crate::linalg::svd_compressed(&x, 3, 0, 5, 6);
        let values = |t: &Tensor, gpu: bool| {
            let node = t.node().unwrap();
            let settings = super::super::TileSettings {
                gpu_products: gpu,
                ..super::super::TileSettings::unbounded(400 * 30 * 8 / 4)
            };
            let tiled = super::super::tile(node, settings).unwrap();
            let ranges = tiled
                .graph
                .tasks
                .iter()
                .filter(|t| matches!(t.op, ChunkOp::Linalg(LinalgOp::RangeQr { .. })))
                .count();
            let host = crate::reference::run_tiled(node, tiled).unwrap();
            (host.as_slice::<f64>().unwrap().to_vec(), ranges)
        };
        for t in [&s, &vt] {
            let ((one, ranges), (two, none)) = (values(t, false), values(t, true));
            assert_eq!((ranges, none), (4, 0));
            let scale = one.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (a, b) in one.iter().zip(&two) {
                assert!((a - b).abs() <= 1e-10 * scale, "{one:?} vs {two:?}");
            }
        }
    }
}
