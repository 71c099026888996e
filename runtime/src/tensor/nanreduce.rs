//! NaN-skipping reductions (`nansum nanmean nanmin nanmax nanvar nanstd`), written with the
//! elementwise operations and plain reductions so they fuse and chunk like them. Integers
//! have no NaN: their nan-reductions are the plain ones (in float for mean, var and std).

use super::node::{Node, NodeKind};
use super::ops::where_;
use super::reduce::reductions;
use super::Tensor;
use crate::error::Error;
use tessera_kernels::ReduceOp;

/// Which NaN-skipping reduction ([`Tensor::nan_reduce`]): `Var` and `Std` carry `ddof`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanOp {
    /// `nansum`.
    Sum,
    /// `nanmean`.
    Mean,
    /// `nanmin`.
    Min,
    /// `nanmax`.
    Max,
    /// `nanargmin`.
    ArgMin,
    /// `nanargmax`.
    ArgMax,
    /// `nanvar` with `ddof`.
    Var(u32),
    /// `nanstd` with `ddof`.
    Std(u32),
}

reductions! { nan_reduce:
    nansum, nansum_axis, NanOp::Sum, "sum, skipping NaN (0 when nothing is left),";
    nanmean, nanmean_axis, NanOp::Mean, "mean, skipping NaN (NaN when nothing is left),";
    nanmin, nanmin_axis, NanOp::Min,
        "minimum, skipping NaN (NaN when nothing is left, where NumPy also warns),";
    nanmax, nanmax_axis, NanOp::Max,
        "maximum, skipping NaN (NaN when nothing is left, where NumPy also warns),";
    nanargmin, nanargmin_axis, NanOp::ArgMin,
        "index of the first minimum, skipping NaN (an all-NaN slice fails the job, as NumPy raises),";
    nanargmax, nanargmax_axis, NanOp::ArgMax,
        "index of the first maximum, skipping NaN (an all-NaN slice fails the job, as NumPy raises),";
}

impl Tensor {
    /// The NaN-skipping reduction `op` over `axes` (all when `None`), keeping the reduced
    /// axes as length 1 with `keepdims`: NumPy's `nansum(x, axis, keepdims=...)` and kin.
    pub fn nan_reduce(&self, op: NanOp, axes: Option<&[isize]>, keepdims: bool) -> Tensor {
        let float = match self.dtype() {
            // The standard's var/std are of real values (as `Tensor::var`).
            Ok(d) if d.is_complex() && matches!(op, NanOp::Var(_) | NanOp::Std(_)) => {
                let name = if matches!(op, NanOp::Var(_)) {
                    "nanvar"
                } else {
                    "nanstd"
                };
                return Tensor::failed(Error::UnsupportedDType {
                    op: name.into(),
                    dtype: d,
                });
            }
            Ok(d) => d.is_inexact(),
            Err(e) => return Tensor::failed(e),
        };
        // Number of values that are not NaN, and the values with NaN replaced by `fill`.
        let count = || self.eq(self).reduce(ReduceOp::CountNonzero, axes, keepdims);
        let filled = |fill: f64| where_(&self.isnan(), fill, self);
        let nan_where_empty = |r: Tensor| where_(&count().eq(0), f64::NAN, &r);
        match op {
            NanOp::Sum if float => filled(0.0).reduce(ReduceOp::Sum, axes, keepdims),
            NanOp::Sum => self.reduce(ReduceOp::Sum, axes, keepdims),
            NanOp::Mean if float => {
                let sum = self.nan_reduce(NanOp::Sum, axes, keepdims);
                let n = match sum.dtype() {
                    Ok(d) => count().astype(d),
                    Err(e) => return Tensor::failed(e),
                };
                sum.div(&n)
            }
            NanOp::Mean => self.reduce(ReduceOp::Mean, axes, keepdims),
            NanOp::Min if float => {
                nan_where_empty(filled(f64::INFINITY).reduce(ReduceOp::Min, axes, keepdims))
            }
            NanOp::Max if float => {
                nan_where_empty(filled(f64::NEG_INFINITY).reduce(ReduceOp::Max, axes, keepdims))
            }
            NanOp::Min => self.reduce(ReduceOp::Min, axes, keepdims),
            NanOp::Max => self.reduce(ReduceOp::Max, axes, keepdims),
            NanOp::ArgMin if float => self.nan_arg(NanOp::Min, axes, keepdims),
            NanOp::ArgMax if float => self.nan_arg(NanOp::Max, axes, keepdims),
            NanOp::ArgMin => self.reduce(ReduceOp::ArgMin, axes, keepdims),
            NanOp::ArgMax => self.reduce(ReduceOp::ArgMax, axes, keepdims),
            NanOp::Var(ddof) => {
                let x = match self.dtype() {
                    Ok(d) => self.astype(d.float_result()),
                    Err(e) => return Tensor::failed(e),
                };
                // Two passes: the mean, then the squared deviations of the values kept.
                let mean = x.nan_reduce(NanOp::Mean, axes, true);
                let dev = where_(&x.isnan(), 0.0, x.sub(&mean));
                let squares = dev.mul(&dev).reduce(ReduceOp::Sum, axes, keepdims);
                let dof = match squares.dtype() {
                    Ok(d) => x
                        .eq(&x)
                        .reduce(ReduceOp::CountNonzero, axes, keepdims)
                        .astype(d),
                    Err(e) => return Tensor::failed(e),
                }
                .sub(f64::from(ddof));
                where_(&dof.gt(0.0), squares.div(&dof), f64::NAN)
            }
            NanOp::Std(ddof) => self.nan_reduce(NanOp::Var(ddof), axes, keepdims).sqrt(),
        }
    }

    /// The first position of the NaN-skipping minimum (`extreme` Min) or maximum along
    /// `axes`: the first element that is not NaN and equals it. A slice with nothing but NaN
    /// fails the job (NumPy raises `ValueError: All-NaN slice encountered`).
    fn nan_arg(&self, extreme: NanOp, axes: Option<&[isize]>, keepdims: bool) -> Tensor {
        let valid = self.eq(self);
        let target = self.nan_reduce(extreme, axes, true);
        let hit = valid.logical_and(self.eq(&target));
        let index = hit.reduce(ReduceOp::ArgMax, axes, keepdims);
        let ok = valid.reduce(ReduceOp::Any, axes, keepdims);
        match (index.node(), ok.node()) {
            (Ok(x), Ok(ok)) => Tensor::from_node(Node::new(
                x.shape.clone(),
                x.dtype,
                NodeKind::Require {
                    x: x.clone(),
                    ok: ok.clone(),
                    message: "All-NaN slice encountered",
                },
            )),
            (Err(e), _) | (_, Err(e)) => Tensor::failed(e),
        }
    }

    /// The variance of the values that are not NaN with `ddof` delta degrees of freedom
    /// (NaN when no more than `ddof` values are left).
    pub fn nanvar(&self, ddof: u32) -> Tensor {
        self.nan_reduce(NanOp::Var(ddof), None, false)
    }
    /// `nanvar` along `axis`.
    pub fn nanvar_axis(&self, axis: isize, ddof: u32) -> Tensor {
        self.nan_reduce(NanOp::Var(ddof), Some(&[axis]), false)
    }
    /// The standard deviation of the values that are not NaN (`sqrt(nanvar)`).
    pub fn nanstd(&self, ddof: u32) -> Tensor {
        self.nan_reduce(NanOp::Std(ddof), None, false)
    }
    /// `nanstd` along `axis`.
    pub fn nanstd_axis(&self, axis: isize, ddof: u32) -> Tensor {
        self.nan_reduce(NanOp::Std(ddof), Some(&[axis]), false)
    }
}
