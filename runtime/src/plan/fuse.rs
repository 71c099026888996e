//! Building one fused kernel: walks the lazy graph from an output chunk, pushing views down
//! to the leaves, sharing common subexpressions, and stopping at nodes that must be
//! materialized first (which become chunk-gathering leaves and task inputs).

use super::grid;
use super::tile::Tiler;
use crate::error::Result;
use crate::tensor::node::{Node, NodeKind};
use std::collections::HashMap;
use std::sync::Arc;
use tessera_actors::ChunkKey;
use tessera_kernels::{
    c_strides, AxisMap, BinaryOp, DType, FlatMap, Instr, InstrKind, LeafSource, ReduceOp, Scalar,
    SourceChunk,
};

/// The instructions and inputs of one fused kernel under construction.
pub(crate) struct FuseBuilder<'t> {
    tiler: &'t mut Tiler,
    pub instrs: Vec<Instr>,
    pub inputs: Vec<ChunkKey>,
    input_slots: HashMap<ChunkKey, usize>,
    memo: HashMap<(u64, Vec<AxisMap>, Vec<usize>), usize>,
}

/// The view of an output box: local index `m` is global index `start + m`.
pub(crate) fn box_view(start: &[usize]) -> Vec<AxisMap> {
    start
        .iter()
        .enumerate()
        .map(|(d, &s)| AxisMap {
            offset: s as i64,
            local_axis: Some(d),
            step: 1,
        })
        .collect()
}

/// `inner` (input axis from node index) composed with `outer` (node index from local index).
fn compose(inner: &[AxisMap], outer: &[AxisMap]) -> Vec<AxisMap> {
    inner
        .iter()
        .map(|a| match a.local_axis.map(|k| &outer[k]) {
            None => AxisMap {
                offset: a.offset,
                local_axis: None,
                step: 0,
            },
            Some(o) => AxisMap {
                offset: a.offset + a.step * o.offset,
                local_axis: o.local_axis,
                step: if o.local_axis.is_some() {
                    a.step * o.step
                } else {
                    0
                },
            },
        })
        .collect()
}

/// The view of an operand of shape `op_shape` broadcast to `shape`, seen through `view`.
pub(crate) fn broadcast_view(
    view: &[AxisMap],
    op_shape: &[usize],
    shape: &[usize],
) -> Vec<AxisMap> {
    let lead = shape.len() - op_shape.len();
    op_shape
        .iter()
        .enumerate()
        .map(|(j, &n)| {
            if n == 1 && shape[j + lead] != 1 {
                AxisMap {
                    offset: 0,
                    local_axis: None,
                    step: 0,
                }
            } else {
                view[j + lead].clone()
            }
        })
        .collect()
}

/// The flat map of a generated source of `shape` read through `view` over `local` axes.
fn flat_map(view: &[AxisMap], shape: &[usize], local: usize) -> FlatMap {
    let cs = c_strides(shape);
    let mut map = FlatMap {
        base: 0,
        strides: vec![0; local],
    };
    for (a, &s) in view.iter().zip(&cs) {
        map.base += a.offset * s as i64;
        if let Some(k) = a.local_axis {
            map.strides[k] += a.step * s as i64;
        }
    }
    map
}

/// Reductions over at most this many elements per output fuse into their consumer (like
/// the pairs of `sum_axis(1)` in Monte Carlo pi); larger ones run as partials per chunk and
/// a combine tree, which keeps every core busy.
const MAX_FUSED_REDUCE: usize = 256;

/// True when `axes` are the last `axes.len()` axes of `shape` and span few elements.
fn fusable_reduce(axes: &[usize], shape: &[usize]) -> bool {
    let nd = shape.len();
    let trailing = !axes.is_empty()
        && axes
            .iter()
            .enumerate()
            .all(|(i, &a)| a + axes.len() == nd + i);
    trailing && axes.iter().map(|&a| shape[a]).product::<usize>() <= MAX_FUSED_REDUCE
}

impl<'t> FuseBuilder<'t> {
    pub fn new(tiler: &'t mut Tiler) -> FuseBuilder<'t> {
        FuseBuilder {
            tiler,
            instrs: Vec::new(),
            inputs: Vec::new(),
            input_slots: HashMap::new(),
            memo: HashMap::new(),
        }
    }

    fn push(&mut self, shape: &[usize], dtype: DType, kind: InstrKind) -> usize {
        self.instrs.push(Instr {
            shape: shape.to_vec(),
            dtype,
            kind,
        });
        self.instrs.len() - 1
    }

    /// The instruction computing `node` through `view` over a block of local `shape`.
    pub fn visit(&mut self, node: &Arc<Node>, view: &[AxisMap], shape: &[usize]) -> Result<usize> {
        let key = (node.id, view.to_vec(), shape.to_vec());
        if let Some(&i) = self.memo.get(&key) {
            return Ok(i);
        }
        let dt = node.dtype;
        let i = match &node.kind {
            NodeKind::Full(v) => self.push(shape, dt, InstrKind::Leaf(LeafSource::Const(*v))),
            NodeKind::Random { dist, seed, stream } => {
                let map = flat_map(view, &node.shape, shape.len());
                self.push(
                    shape,
                    dt,
                    InstrKind::Leaf(LeafSource::Random {
                        dist: *dist,
                        seed: *seed,
                        stream: *stream,
                        map,
                    }),
                )
            }
            NodeKind::Ramp { start, step, pin } => {
                let map = flat_map(view, &node.shape, shape.len());
                self.push(
                    shape,
                    dt,
                    InstrKind::Leaf(LeafSource::Ramp {
                        start: *start,
                        step: *step,
                        pin: *pin,
                        map,
                    }),
                )
            }
            NodeKind::Unary(op, x) => {
                let x = self.visit(x, view, shape)?;
                self.push(shape, dt, InstrKind::Unary { op: *op, x })
            }
            NodeKind::Cast(x) => {
                let x = self.visit(x, view, shape)?;
                self.push(shape, dt, InstrKind::Cast { x })
            }
            NodeKind::Binary(op, a, b) => {
                let a = self.visit(a, &broadcast_view(view, &a.shape, &node.shape), shape)?;
                let b = self.visit(b, &broadcast_view(view, &b.shape, &node.shape), shape)?;
                self.push(shape, dt, InstrKind::Binary { op: *op, a, b })
            }
            NodeKind::Where(c, a, b) => {
                let c = self.visit(c, &broadcast_view(view, &c.shape, &node.shape), shape)?;
                let a = self.visit(a, &broadcast_view(view, &a.shape, &node.shape), shape)?;
                let b = self.visit(b, &broadcast_view(view, &b.shape, &node.shape), shape)?;
                self.push(shape, dt, InstrKind::Where { cond: c, a, b })
            }
            NodeKind::View(x, maps) => self.visit(x, &compose(maps, view), shape)?,
            NodeKind::Reduce {
                x,
                op,
                axes,
                keepdims: false,
            } if (op.is_simple() || *op == ReduceOp::Mean) && fusable_reduce(axes, &x.shape) => {
                self.trailing_reduce(x, *op, axes, view, shape, dt)?
            }
            _ => self.chunk_leaf(node, view, shape)?,
        };
        self.memo.insert(key, i);
        Ok(i)
    }

    /// A reduction over trailing axes, fused: the operand is evaluated over the local block
    /// extended by the reduced axes, then each run of `k` values is reduced.
    fn trailing_reduce(
        &mut self,
        x: &Arc<Node>,
        op: ReduceOp,
        axes: &[usize],
        view: &[AxisMap],
        shape: &[usize],
        dt: DType,
    ) -> Result<usize> {
        let mut xview = view.to_vec();
        let mut xshape = shape.to_vec();
        for &a in axes {
            xview.push(AxisMap {
                offset: 0,
                local_axis: Some(xshape.len()),
                step: 1,
            });
            xshape.push(x.shape[a]);
        }
        let k: usize = axes.iter().map(|&a| x.shape[a]).product();
        let xi = self.visit(x, &xview, &xshape)?;
        if op != ReduceOp::Mean {
            return Ok(self.push(shape, dt, InstrKind::ReduceTrailing { op, x: xi, k }));
        }
        let sum_dt = ReduceOp::Sum.result_dtype(x.dtype);
        let sum = self.push(
            shape,
            sum_dt,
            InstrKind::ReduceTrailing {
                op: ReduceOp::Sum,
                x: xi,
                k,
            },
        );
        let sum = if sum_dt == dt {
            sum
        } else {
            self.push(shape, dt, InstrKind::Cast { x: sum })
        };
        let n = self.push(
            shape,
            dt,
            InstrKind::Leaf(LeafSource::Const(Scalar::F64(k as f64).cast(dt))),
        );
        Ok(self.push(
            shape,
            dt,
            InstrKind::Binary {
                op: BinaryOp::Div,
                a: sum,
                b: n,
            },
        ))
    }

    /// A leaf reading a materialized node: the chunks its view touches become task inputs.
    fn chunk_leaf(&mut self, node: &Arc<Node>, view: &[AxisMap], shape: &[usize]) -> Result<usize> {
        let mat = self.tiler.materialize(node, None)?;
        let counts = grid::counts(&mat.grid);
        let mut ranges = Vec::with_capacity(view.len());
        for (d, a) in view.iter().enumerate() {
            let span = a.local_axis.map_or(0, |k| a.step * (shape[k] as i64 - 1));
            let (lo, hi) = (a.offset.min(a.offset + span), a.offset.max(a.offset + span));
            ranges.push(grid::touching(
                &mat.grid[d],
                lo.max(0) as usize,
                hi.max(0) as usize,
            ));
        }
        let starts: Vec<Vec<usize>> = mat.grid.iter().map(|e| grid::starts(e)).collect();
        let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
        for r in &ranges {
            combos = combos
                .into_iter()
                .flat_map(|c| r.clone().map(move |i| [c.clone(), vec![i]].concat()))
                .collect();
        }
        let mut chunks = Vec::with_capacity(combos.len());
        for idx in combos {
            let key = mat.keys[grid::flat_index(&idx, &counts)];
            let next = self.inputs.len();
            let input = *self.input_slots.entry(key).or_insert(next);
            if input == next {
                self.inputs.push(key);
            }
            chunks.push(SourceChunk {
                start: idx.iter().enumerate().map(|(d, &i)| starts[d][i]).collect(),
                shape: idx
                    .iter()
                    .enumerate()
                    .map(|(d, &i)| mat.grid[d][i])
                    .collect(),
                input,
            });
        }
        Ok(self.push(
            shape,
            node.dtype,
            InstrKind::Leaf(LeafSource::Chunks {
                chunks,
                axes: view.to_vec(),
            }),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composing_a_slice_with_a_box_offsets_and_scales() {
        // x[::2] seen from an output box starting at 3: local m -> x index 2 * (3 + m).
        let slice = vec![AxisMap {
            offset: 0,
            local_axis: Some(0),
            step: 2,
        }];
        let v = compose(&slice, &box_view(&[3]));
        assert_eq!(
            v,
            vec![AxisMap {
                offset: 6,
                local_axis: Some(0),
                step: 2
            }]
        );
        let fm = flat_map(&v, &[100], 1);
        assert_eq!((fm.base, fm.strides), (6, vec![2]));
    }

    #[test]
    fn only_small_trailing_reductions_fuse() {
        assert!(fusable_reduce(&[1], &[1000, 2]));
        assert!(fusable_reduce(&[1, 2], &[5, 3, 4]));
        assert!(!fusable_reduce(&[0], &[1000, 2]));
        assert!(!fusable_reduce(&[], &[3, 2]));
        assert!(!fusable_reduce(&[0], &[1000]));
    }
}
