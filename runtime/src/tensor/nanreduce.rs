//! NaN-skipping reductions (`nansum nanmean nanmin nanmax nanvar nanstd`), written with the
//! elementwise operations and plain reductions so they fuse and chunk like them. Integers
//! have no NaN: their nan-reductions are the plain ones (in float for mean, var and std).

use super::ops::where_;
use super::Tensor;
use tessera_kernels::ReduceOp;

/// Which NaN-skipping reduction.
#[derive(Clone, Copy)]
enum NanOp {
    Sum,
    Mean,
    Min,
    Max,
    Var(u32),
    Std(u32),
}

macro_rules! nan_reductions {
    ($($all:ident, $axis:ident, $op:expr, $what:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!("The ", $what, ".")]
            pub fn $all(&self) -> Tensor {
                self.nan_reduce($op, None, false)
            }
            #[doc = concat!("Along `axis` (negative counts from the end): the ", $what, ".")]
            pub fn $axis(&self, axis: isize) -> Tensor {
                self.nan_reduce($op, Some(&[axis]), false)
            }
        )*}
    };
}

nan_reductions! {
    nansum, nansum_axis, NanOp::Sum, "sum of the values that are not NaN (0 when there are none)";
    nanmean, nanmean_axis, NanOp::Mean, "mean of the values that are not NaN (NaN when there are none)";
    nanmin, nanmin_axis, NanOp::Min,
        "minimum of the values that are not NaN (NaN when there are none, where NumPy also warns)";
    nanmax, nanmax_axis, NanOp::Max,
        "maximum of the values that are not NaN (NaN when there are none, where NumPy also warns)";
}

impl Tensor {
    fn nan_reduce(&self, op: NanOp, axes: Option<&[isize]>, keepdims: bool) -> Tensor {
        let float = match self.dtype() {
            Ok(d) => d.is_float(),
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
