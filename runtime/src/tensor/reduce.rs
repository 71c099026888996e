//! Reductions over all axes or some: sum, mean, min, max, prod, all, any, count_nonzero,
//! argmin, argmax, var and std.

use super::node::{Node, NodeKind};
use super::Tensor;
use crate::error::{Error, Result};
use tessera_kernels::ReduceOp;

/// Normalizes possibly negative axes to sorted, distinct positions.
pub(crate) fn normalize_axes(axes: &[isize], ndim: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = ndim as isize;
        if a < -n || a >= n {
            return Err(Error::AxisOutOfRange { axis: a, ndim });
        }
        let a = if a < 0 { (a + n) as usize } else { a as usize };
        if out.contains(&a) {
            return Err(Error::InvalidArgument(format!(
                "axis {a} repeated in {axes:?}"
            )));
        }
        out.push(a);
    }
    out.sort_unstable();
    Ok(out)
}

impl Tensor {
    /// Reduces with `op` over `axes` (`None`: all axes), keeping reduced axes as size 1 when
    /// `keepdims` is set. The named methods (`sum`, `mean_axis`, …) call this.
    pub fn reduce(&self, op: ReduceOp, axes: Option<&[isize]>, keepdims: bool) -> Tensor {
        let built = self.node().and_then(|x| {
            let nd = x.shape.len();
            let axes = match axes {
                Some(a) => normalize_axes(a, nd)?,
                None => (0..nd).collect(),
            };
            let is_arg = matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax);
            if is_arg && axes.len() != nd && axes.len() != 1 {
                return Err(Error::InvalidArgument(format!(
                    "{} takes one axis or all of them, got {axes:?}",
                    op.name()
                )));
            }
            let shape: Vec<usize> = (0..nd)
                .filter_map(|d| match (axes.contains(&d), keepdims) {
                    (false, _) => Some(x.shape[d]),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect();
            Ok(Node::new(
                shape,
                op.result_dtype(x.dtype),
                NodeKind::Reduce {
                    x: x.clone(),
                    op,
                    axes,
                    keepdims,
                },
            ))
        });
        match built {
            Ok(n) => Tensor::from_node(n),
            Err(e) => Tensor::failed(e),
        }
    }
}

macro_rules! reductions {
    ($($all:ident, $axis:ident, $op:expr, $what:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!("The ", $what, " of all elements.")]
            pub fn $all(&self) -> Tensor {
                self.reduce($op, None, false)
            }
            #[doc = concat!("The ", $what, " along `axis` (negative counts from the end).")]
            pub fn $axis(&self, axis: isize) -> Tensor {
                self.reduce($op, Some(&[axis]), false)
            }
        )*}
    };
}

reductions! {
    sum, sum_axis, ReduceOp::Sum, "sum";
    prod, prod_axis, ReduceOp::Prod, "product";
    mean, mean_axis, ReduceOp::Mean, "mean";
    min, min_axis, ReduceOp::Min, "minimum";
    max, max_axis, ReduceOp::Max, "maximum";
    all, all_axis, ReduceOp::All, "truth of every element (non-zero)";
    any, any_axis, ReduceOp::Any, "truth of some element (non-zero)";
    count_nonzero, count_nonzero_axis, ReduceOp::CountNonzero, "number of non-zero elements";
    argmin, argmin_axis, ReduceOp::ArgMin, "index of the first minimum (flat index over all axes)";
    argmax, argmax_axis, ReduceOp::ArgMax, "index of the first maximum (flat index over all axes)";
}

impl Tensor {
    /// Variance of all elements with `ddof` delta degrees of freedom (NumPy's default: 0).
    pub fn var(&self, ddof: u32) -> Tensor {
        self.reduce(ReduceOp::Var { ddof }, None, false)
    }
    /// Variance along `axis`.
    pub fn var_axis(&self, axis: isize, ddof: u32) -> Tensor {
        self.reduce(ReduceOp::Var { ddof }, Some(&[axis]), false)
    }
    /// Standard deviation of all elements with `ddof` delta degrees of freedom.
    pub fn std(&self, ddof: u32) -> Tensor {
        self.reduce(ReduceOp::Std { ddof }, None, false)
    }
    /// Standard deviation along `axis`.
    pub fn std_axis(&self, axis: isize, ddof: u32) -> Tensor {
        self.reduce(ReduceOp::Std { ddof }, Some(&[axis]), false)
    }
}
