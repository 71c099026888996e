//! Cumulative sums and products, differences, sorting, gathering by index, membership,
//! outer products, distinct values and boolean-mask selection (NumPy's names).

use super::node::{Node, NodeKind};
use super::reduce::normalize_axes;
use super::{create, Slice, Tensor};
use crate::error::{Error, Result};
use crate::session::Session;
use std::sync::Arc;
use tessera_kernels::{DType, ScanOp};

fn build(f: impl FnOnce() -> Result<Tensor>) -> Tensor {
    f().unwrap_or_else(Tensor::failed)
}

/// One axis of `x`, normalized (negative counts from the end).
fn one_axis(x: &Node, axis: isize) -> Result<usize> {
    Ok(normalize_axes(&[axis], x.shape.len())?[0])
}

/// NumPy's `outer`: `a` and `b` flattened, `out[i, j] = a[i] * b[j]` (fused).
pub fn outer(a: &Tensor, b: &Tensor) -> Tensor {
    a.reshape(&[-1, 1]) * b.reshape(&[1, -1])
}

impl Tensor {
    /// NumPy's `cumsum` of the flattened tensor (integers and bools accumulate in `int64`).
    pub fn cumsum(&self) -> Tensor {
        self.reshape(&[-1]).cumsum_axis(0)
    }

    /// The running sum along `axis`.
    pub fn cumsum_axis(&self, axis: isize) -> Tensor {
        self.scan(ScanOp::Sum, axis)
    }

    /// NumPy's `cumprod` of the flattened tensor (integers and bools accumulate in `int64`).
    pub fn cumprod(&self) -> Tensor {
        self.reshape(&[-1]).cumprod_axis(0)
    }

    /// The running product along `axis`.
    pub fn cumprod_axis(&self, axis: isize) -> Tensor {
        self.scan(ScanOp::Prod, axis)
    }

    fn scan(&self, op: ScanOp, axis: isize) -> Tensor {
        build(|| {
            let x = self.node()?;
            let axis = one_axis(x, axis)?;
            let kind = NodeKind::Scan {
                x: x.clone(),
                op,
                axis,
            };
            let dtype = op.result_dtype(x.dtype);
            Ok(Tensor::from_node(Node::new(x.shape.clone(), dtype, kind)))
        })
    }

    /// NumPy's `diff(x, n, axis)`: the `n`-th difference along `axis` (`x[1:] - x[:-1]`,
    /// `!=` for bools); `n` at least the axis' length gives an empty axis.
    pub fn diff(&self, n: usize, axis: isize) -> Tensor {
        build(|| {
            let axis = one_axis(self.node()?, axis)?;
            let cut = |start: Option<isize>, stop: Option<isize>| {
                let mut s = vec![Slice::all(); axis];
                s.push(Slice::new(start, stop, 1));
                s
            };
            let mut out = self.clone();
            for _ in 0..n {
                let (hi, lo) = (
                    out.slice(&cut(Some(1), None)),
                    out.slice(&cut(None, Some(-1))),
                );
                out = match out.dtype()? {
                    DType::Bool => hi.ne(&lo),
                    _ => &hi - &lo,
                };
            }
            Ok(out)
        })
    }

    /// NumPy's `sort(x, axis)`: ascending along `axis`, NaN last. Each lane along the axis
    /// is sorted inside one chunk, so the axis is made whole in every chunk.
    pub fn sort(&self, axis: isize) -> Tensor {
        self.sorted(axis, false)
    }

    /// NumPy's `argsort(x, axis, kind="stable")`: the `int64` positions that sort each lane
    /// along `axis` (ties in index order, NaN last).
    pub fn argsort(&self, axis: isize) -> Tensor {
        self.sorted(axis, true)
    }

    fn sorted(&self, axis: isize, arg: bool) -> Tensor {
        build(|| {
            let x = self.node()?;
            let axis = one_axis(x, axis)?;
            let dtype = if arg { DType::I64 } else { x.dtype };
            let kind = NodeKind::Sort {
                x: x.clone(),
                axis,
                arg,
            };
            Ok(Tensor::from_node(Node::new(x.shape.clone(), dtype, kind)))
        })
    }

    /// NumPy's `take(x, indices)` of the flattened tensor.
    pub fn take(&self, indices: &[i64]) -> Tensor {
        self.reshape(&[-1]).take_axis(indices, 0)
    }

    /// NumPy's `take(x, indices, axis)`: the positions `indices` along `axis` (negative
    /// ones count from the end; repeats allowed); an index outside the axis is
    /// [`Error::IndexOutOfRange`].
    pub fn take_axis(&self, indices: &[i64], axis: isize) -> Tensor {
        build(|| {
            let x = self.node()?;
            let axis = one_axis(x, axis)?;
            let size = x.shape[axis];
            let positions = indices
                .iter()
                .map(|&i| {
                    let p = if i < 0 { i + size as i64 } else { i };
                    usize::try_from(p)
                        .ok()
                        .filter(|&p| p < size)
                        .ok_or(Error::IndexOutOfRange {
                            index: i,
                            axis,
                            size,
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            let mut shape = x.shape.clone();
            shape[axis] = positions.len();
            let kind = NodeKind::Take {
                x: x.clone(),
                axis,
                indices: Arc::new(positions),
            };
            Ok(Tensor::from_node(Node::new(shape, x.dtype, kind)))
        })
    }

    /// NumPy's `isin(x, test, invert=invert)`: `bool`, whether each element equals some
    /// element of `test` (any shape, compared in the promoted dtype; NaN matches nothing).
    /// `test` is gathered into one chunk, so it should be small next to `x`.
    pub fn isin(&self, test: &Tensor, invert: bool) -> Tensor {
        build(|| {
            let x = self.node()?;
            let test = test.reshape(&[-1]);
            let kind = NodeKind::IsIn {
                x: x.clone(),
                test: test.node()?.clone(),
                invert,
            };
            Ok(Tensor::from_node(Node::new(
                x.shape.clone(),
                DType::Bool,
                kind,
            )))
        })
    }

    /// NumPy's `unique(x)`: the sorted distinct values of the flattened tensor, NaNs as one
    /// (NumPy 2's `equal_nan=True`). Its length depends on the data, so this runs a job on
    /// `session` (each chunk's distinct values, merged in a tree) and returns a tensor over
    /// the result, as [`Tensor::persist`] does.
    pub fn unique(&self, session: &Session) -> Result<Tensor> {
        let x = self.node()?;
        let settings = session.inner.tile_settings();
        let chunk = session
            .run_chunk_graph(&[x], || crate::plan::unique_graph(x, settings))?
            .into_iter()
            .next()
            .and_then(|c| c.as_tensor().cloned())
            .ok_or_else(|| Error::Runtime("unique: the job returned no tensor".into()))?;
        Ok(create::from_host(chunk))
    }

    /// NumPy's `x[mask]` for a `bool` mask of `x`'s shape: the selected elements in C
    /// order, as a 1-D tensor. The mask is computed on `session` first (the result's length
    /// depends on it); the selection itself stays lazy.
    pub fn boolean_mask(&self, mask: &Tensor, session: &Session) -> Result<Tensor> {
        let (x, m) = (self.node()?, mask.node()?);
        if m.dtype != DType::Bool || m.shape != x.shape {
            return Err(Error::Shape(format!(
                "a boolean mask must be bool of the tensor's shape {:?}, got {} of shape {:?}",
                x.shape, m.dtype, m.shape
            )));
        }
        let values = mask.execute(session)?;
        let picked: Vec<i64> = values
            .as_slice::<bool>()
            .ok_or_else(|| Error::Runtime("boolean_mask: mask values are not bool".into()))?
            .iter()
            .enumerate()
            .filter_map(|(i, &keep)| keep.then_some(i as i64))
            .collect();
        let taken = self.take(&picked);
        match taken.error() {
            Some(e) => Err(e.clone()),
            None => Ok(taken),
        }
    }
}
