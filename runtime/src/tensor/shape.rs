//! Shape operations: slicing with steps, transpose, broadcast, reshape and concatenation.

use super::node::{Node, NodeKind};
use super::ops::cast_node;
use super::reduce::normalize_axes;
use super::Tensor;
use crate::error::{Error, Result};
use std::sync::Arc;
use tessera_kernels::{AxisMap, DType};

/// One axis of a slice: NumPy's `start:stop:step` (negative positions count from the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First position (`None`: the beginning, or the end for a negative step).
    pub start: Option<isize>,
    /// Position to stop before (`None`: past the end, or before the beginning for a negative step).
    pub stop: Option<isize>,
    /// Step; not zero.
    pub step: isize,
}

impl Slice {
    /// The whole axis (`:`).
    pub fn all() -> Slice {
        Slice {
            start: None,
            stop: None,
            step: 1,
        }
    }
    /// `start:stop:step`.
    pub fn new(start: Option<isize>, stop: Option<isize>, step: isize) -> Slice {
        Slice { start, stop, step }
    }
    /// The same slice with another step (`::step`).
    pub fn step(self, step: isize) -> Slice {
        Slice { step, ..self }
    }

    /// (first index, number of elements) on an axis of length `n`, as Python computes them.
    fn resolve(self, n: usize) -> Result<(i64, i64)> {
        if self.step == 0 {
            return Err(Error::InvalidArgument("slice step cannot be zero".into()));
        }
        let (n, step) = (n as i64, self.step as i64);
        let clamp = |v: Option<isize>, default: i64, lo: i64, hi: i64| match v {
            None => default,
            Some(v) => {
                let v = v as i64;
                let v = if v < 0 { v + n } else { v };
                v.clamp(lo, hi)
            }
        };
        let (start, stop) = if step > 0 {
            (clamp(self.start, 0, 0, n), clamp(self.stop, n, 0, n))
        } else {
            (
                clamp(self.start, n - 1, -1, n - 1),
                clamp(self.stop, -1, -1, n - 1),
            )
        };
        let len = if step > 0 {
            (stop - start + step - 1).max(0) / step
        } else {
            (start - stop - step - 1).max(0) / -step
        };
        Ok((start, len))
    }
}

impl From<std::ops::Range<isize>> for Slice {
    fn from(r: std::ops::Range<isize>) -> Self {
        Slice::new(Some(r.start), Some(r.end), 1)
    }
}

impl From<std::ops::RangeFrom<isize>> for Slice {
    fn from(r: std::ops::RangeFrom<isize>) -> Self {
        Slice::new(Some(r.start), None, 1)
    }
}

impl From<std::ops::RangeTo<isize>> for Slice {
    fn from(r: std::ops::RangeTo<isize>) -> Self {
        Slice::new(None, Some(r.end), 1)
    }
}

impl From<std::ops::RangeFull> for Slice {
    fn from(_: std::ops::RangeFull) -> Self {
        Slice::all()
    }
}

/// The view that maps every axis to itself.
pub(crate) fn identity_view(shape: &[usize]) -> Vec<AxisMap> {
    (0..shape.len())
        .map(|d| AxisMap {
            offset: 0,
            local_axis: Some(d),
            step: 1,
        })
        .collect()
}

fn view(x: &Arc<Node>, shape: Vec<usize>, maps: Vec<AxisMap>) -> Tensor {
    Tensor::from_node(Node::new(shape, x.dtype, NodeKind::View(x.clone(), maps)))
}

/// The view that reshapes `from` into `to` where the two differ only by axes of extent 1
/// (NumPy's `x[:, None]`, `x.reshape(n, 1)`, a squeeze): the other axes keep their order
/// and the data its chunks, with no reshape task. `None` for any other reshape.
fn unit_axes_view(from: &[usize], to: &[usize]) -> Option<Vec<AxisMap>> {
    let wide = |s: &[usize]| -> Vec<(usize, usize)> {
        s.iter()
            .copied()
            .enumerate()
            .filter(|&(_, n)| n != 1)
            .collect()
    };
    let (a, b) = (wide(from), wide(to));
    if a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| x.1 != y.1) {
        return None;
    }
    let mut maps = vec![
        AxisMap {
            offset: 0,
            local_axis: None,
            step: 0,
        };
        from.len()
    ];
    for (&(d, _), &(k, _)) in a.iter().zip(&b) {
        maps[d] = AxisMap {
            offset: 0,
            local_axis: Some(k),
            step: 1,
        };
    }
    Some(maps)
}

fn build(r: Result<Tensor>) -> Tensor {
    r.unwrap_or_else(Tensor::failed)
}

impl Tensor {
    /// `x[s0, s1, …]`: one [`Slice`] per leading axis (missing trailing axes are whole).
    /// A slice that selects nothing (`x[5:5]`, `x[10:2]`) gives an empty axis, as in NumPy.
    pub fn slice(&self, slices: &[Slice]) -> Tensor {
        build((|| {
            let x = self.node()?;
            if slices.len() > x.shape.len() {
                return Err(Error::InvalidArgument(format!(
                    "{} slices for a {}-dimensional tensor",
                    slices.len(),
                    x.shape.len()
                )));
            }
            let mut shape = Vec::with_capacity(x.shape.len());
            let mut maps = Vec::with_capacity(x.shape.len());
            for (d, &n) in x.shape.iter().enumerate() {
                let s = slices.get(d).copied().unwrap_or_else(Slice::all);
                let (start, len) = s.resolve(n)?;
                shape.push(len as usize);
                maps.push(AxisMap {
                    offset: start,
                    local_axis: Some(d),
                    step: s.step as i64,
                });
            }
            Ok(view(x, shape, maps))
        })())
    }

    /// The axes reversed (`x.T`).
    pub fn transpose(&self) -> Tensor {
        match self.ndim() {
            Ok(n) => self.permute(&(0..n as isize).rev().collect::<Vec<_>>()),
            Err(e) => Tensor::failed(e),
        }
    }

    /// The axes in the order `axes` (NumPy's `transpose(axes)`).
    pub fn permute(&self, axes: &[isize]) -> Tensor {
        build((|| {
            let x = self.node()?;
            let nd = x.shape.len();
            let order: Vec<usize> = axes
                .iter()
                .map(|&a| normalize_axes(&[a], nd).map(|v| v[0]))
                .collect::<Result<_>>()?;
            let mut sorted = order.clone();
            sorted.sort_unstable();
            if sorted != (0..nd).collect::<Vec<_>>() {
                return Err(Error::InvalidArgument(format!(
                    "{axes:?} is not a permutation of the {nd} axes"
                )));
            }
            let shape = order.iter().map(|&d| x.shape[d]).collect();
            let mut maps = vec![
                AxisMap {
                    offset: 0,
                    local_axis: None,
                    step: 0
                };
                nd
            ];
            for (k, &d) in order.iter().enumerate() {
                maps[d] = AxisMap {
                    offset: 0,
                    local_axis: Some(k),
                    step: 1,
                };
            }
            Ok(view(x, shape, maps))
        })())
    }

    /// The values broadcast to `shape` (NumPy's `broadcast_to`).
    pub fn broadcast_to(&self, shape: &[usize]) -> Tensor {
        build((|| {
            let x = self.node()?;
            super::create::check_shape(shape, x.dtype)?;
            let out = super::ops::broadcast_shapes(&x.shape, shape)?;
            if out != shape {
                return Err(Error::Shape(format!(
                    "cannot broadcast {:?} to {shape:?}",
                    x.shape
                )));
            }
            let maps = crate::plan::fuse::broadcast_view(&identity_view(shape), &x.shape, shape);
            Ok(view(x, shape.to_vec(), maps))
        })())
    }

    /// The values in C order with a new shape; one extent may be -1 (inferred).
    pub fn reshape(&self, shape: &[isize]) -> Tensor {
        build((|| {
            let x = self.node()?;
            let n = x.numel();
            let known: usize = shape
                .iter()
                .filter(|&&d| d != -1)
                .map(|&d| d.max(0) as usize)
                .product();
            let inferred = shape.iter().filter(|&&d| d == -1).count();
            if inferred > 1 || shape.iter().any(|&d| d < -1) {
                return Err(Error::InvalidSize(format!(
                    "reshape to {shape:?}: extents must not be negative, with at most one -1"
                )));
            }
            if inferred == 1 && known == 0 {
                // NumPy: the -1 extent is ambiguous when the others multiply to zero.
                return Err(Error::Shape(format!(
                    "cannot reshape {:?} ({n} elements) into {shape:?}: -1 is ambiguous next to a zero extent",
                    x.shape
                )));
            }
            let new: Vec<usize> = shape
                .iter()
                .map(|&d| {
                    if d == -1 {
                        n / known.max(1)
                    } else {
                        d as usize
                    }
                })
                .collect();
            if new.iter().product::<usize>() != n {
                return Err(Error::Shape(format!(
                    "cannot reshape {:?} ({n} elements) into {shape:?}",
                    x.shape
                )));
            }
            if new == x.shape {
                return Ok(self.clone());
            }
            if let Some(maps) = unit_axes_view(&x.shape, &new) {
                return Ok(view(x, new, maps));
            }
            let kind = match &x.kind {
                // Values defined by their flat index keep them under any C-order reshape.
                NodeKind::Full(v) => NodeKind::Full(*v),
                NodeKind::Random { dist, seed, stream } => NodeKind::Random {
                    dist: *dist,
                    seed: *seed,
                    stream: *stream,
                },
                NodeKind::Ramp { start, step, pin } => NodeKind::Ramp {
                    start: *start,
                    step: *step,
                    pin: *pin,
                },
                _ => NodeKind::Reshape(x.clone()),
            };
            Ok(Tensor::from_node(Node::new(new, x.dtype, kind)))
        })())
    }
}

/// Joins tensors along `axis` (other extents must match; dtypes promote).
pub fn concatenate(tensors: &[&Tensor], axis: isize) -> Tensor {
    build((|| {
        let nodes: Vec<&Arc<Node>> = tensors.iter().map(|t| t.node()).collect::<Result<_>>()?;
        let first = nodes.first().ok_or_else(|| {
            Error::InvalidArgument("concatenate needs at least one tensor".into())
        })?;
        let nd = first.shape.len();
        let axis = normalize_axes(&[axis], nd)?[0];
        let mut shape = first.shape.clone();
        shape[axis] = 0;
        let mut dtype = first.dtype;
        for n in &nodes {
            let same_rank = n.shape.len() == nd;
            if !same_rank || (0..nd).any(|d| d != axis && n.shape[d] != first.shape[d]) {
                return Err(Error::Shape(format!(
                    "concatenate along axis {axis}: shape {:?} does not match {:?}",
                    n.shape, first.shape
                )));
            }
            shape[axis] += n.shape[axis];
            dtype = DType::promote(dtype, n.dtype);
        }
        // Empty pieces add nothing but their dtype (NumPy promotes over them too).
        let mut inputs: Vec<Arc<Node>> = nodes
            .iter()
            .filter(|n| n.numel() > 0)
            .map(|n| cast_node(n, dtype))
            .collect();
        if inputs.len() == 1 {
            return Ok(Tensor::from_node(inputs.remove(0)));
        }
        Ok(Tensor::from_node(Node::new(
            shape,
            dtype,
            NodeKind::Concat(inputs, axis),
        )))
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_resolve_like_python() {
        assert_eq!(Slice::all().step(2).resolve(5).unwrap(), (0, 3));
        assert_eq!(Slice::all().step(-1).resolve(5).unwrap(), (4, 5));
        assert_eq!(Slice::new(Some(-2), None, 1).resolve(5).unwrap(), (3, 2));
        assert_eq!(
            Slice::new(Some(1), Some(100), 3).resolve(10).unwrap(),
            (1, 3)
        );
        assert_eq!(Slice::new(Some(3), Some(1), 1).resolve(10).unwrap().1, 0);
        assert!(Slice::all().step(0).resolve(3).is_err());
    }
}
