//! Reductions over all axes or some: sum, mean, min, max, prod, all, any, count_nonzero,
//! argmin, argmax, var and std.

use super::node::{Node, NodeKind};
use super::Tensor;
use crate::error::{Error, Result};
use tessera_kernels::{ReduceOp, Scalar};

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

/// NumPy's result of reducing no elements with `op`: the identity (`sum` 0, `prod` 1, `all`
/// true, `any` false, `count_nonzero` 0), NaN for the means and spreads, and an error for
/// the reductions without an identity (`min`, `max`, `argmin`, `argmax`).
fn empty_reduction(op: ReduceOp) -> Result<Scalar> {
    match op {
        ReduceOp::Sum | ReduceOp::Any | ReduceOp::CountNonzero => Ok(Scalar::I64(0)),
        ReduceOp::Prod | ReduceOp::All => Ok(Scalar::I64(1)),
        ReduceOp::Mean | ReduceOp::Var { .. } | ReduceOp::Std { .. } => Ok(Scalar::F64(f64::NAN)),
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax => {
            Err(Error::EmptyReduction { op: op.name() })
        }
    }
}

impl Tensor {
    /// Reduces with `op` over `axes` (`None`: all axes), keeping reduced axes as size 1 when
    /// `keepdims` is set. Reducing no elements gives NumPy's answer (see the named methods);
    /// `min`/`max`/`argmin`/`argmax` of nothing is [`Error::EmptyReduction`]. The named methods (`sum`, `mean_axis`, …) call this.
    pub fn reduce(&self, op: ReduceOp, axes: Option<&[isize]>, keepdims: bool) -> Tensor {
        let built = self.node().and_then(|x| {
            if matches!(op, ReduceOp::Var { .. } | ReduceOp::Std { .. }) && x.dtype.is_complex() {
                // The array API defines them on real values; take var(real) + var(imag).
                return Err(Error::UnsupportedDType {
                    op: op.name().to_string(),
                    dtype: x.dtype,
                });
            }
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
            let dtype = op.result_dtype(x.dtype);
            let reduced: usize = axes.iter().map(|&d| x.shape[d]).product();
            if reduced == 0 && shape.iter().product::<usize>() > 0 {
                let value = empty_reduction(op)?.cast(dtype);
                return Ok(Node::new(shape, dtype, NodeKind::Full(value)));
            }
            Ok(Node::new(
                shape,
                dtype,
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

/// Defines, per reduction, a method over all elements and an `_axis` one, both calling
/// `self.$via(op, axes, keepdims)` (the plain and the NaN-skipping reductions share it).
macro_rules! reductions {
    ($via:ident: $($all:ident, $axis:ident, $op:expr, $what:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!("The ", $what, " of all elements.")]
            pub fn $all(&self) -> Tensor {
                self.$via($op, None, false)
            }
            #[doc = concat!("The ", $what, " along `axis` (negative counts from the end).")]
            pub fn $axis(&self, axis: isize) -> Tensor {
                self.$via($op, Some(&[axis]), false)
            }
        )*}
    };
}
pub(crate) use reductions;

reductions! { reduce:
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
