//! Decimal aggregation: exact sums in `i128` (an overflow past 38 digits is an error), and
//! decimals as floats for var and std.

use super::accumulators::{
    add_laned_with, for_each_valid, state_column, Accumulator, Rows, LANED_MAX_GROUPS,
};
use super::*;
use crate::expr::decimal::{Dec, MAX_PRECISION};
use arrow::datatypes::Decimal128Type;

/// The type of a decimal sum over decimals of type `dt`: `Decimal128(38, s)`, as DuckDB's
/// and Arrow SQL's; `None` for other types and decimals of more than 38 digits.
pub(super) fn sum_type(dt: &DataType) -> Option<DataType> {
    let d = Dec::of(dt).filter(|d| d.precision <= MAX_PRECISION)?;
    Some(DataType::Decimal128(MAX_PRECISION, d.scale))
}

/// Decimal column `values` as a `Decimal128` of its scale (a `Decimal32`, `Decimal64` or
/// narrow `Decimal256` widened).
fn as_decimal128(values: &ArrayRef, scale: i8) -> FrameResult<ArrayRef> {
    match values.data_type() {
        DataType::Decimal128(_, s) if *s == scale => Ok(values.clone()),
        _ => Ok(cast(values, &DataType::Decimal128(MAX_PRECISION, scale))?),
    }
}

/// Decimal columns as `Float64` (for var and std); other columns as they are.
pub(super) fn decimal_to_f64(values: &ArrayRef) -> FrameResult<ArrayRef> {
    match Dec::of(values.data_type()) {
        Some(_) => Ok(cast(values, &DataType::Float64)?),
        None => Ok(values.clone()),
    }
}

/// Exact per-group sums of decimals of scale `scale`, as `Decimal128(38, scale)`.
pub(super) struct DecimalSumAcc {
    sum: Vec<i128>,
    scale: i8,
}

impl DecimalSumAcc {
    /// For decimal input (or sum states) of type `dt`.
    pub(super) fn new(dt: &DataType) -> FrameResult<Self> {
        match Dec::of(dt) {
            Some(d) => Ok(DecimalSumAcc {
                sum: Vec::new(),
                scale: d.scale,
            }),
            None => Err(FrameError::TypeMismatch(format!(
                "a decimal sum of a column of type {dt}"
            ))),
        }
    }

    fn overflow(&self) -> FrameError {
        FrameError::Overflow(format!(
            "a decimal sum past the 38 digits of Decimal128({MAX_PRECISION}, {})",
            self.scale
        ))
    }
}

impl Accumulator for DecimalSumAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, 0);
        let values = as_decimal128(values, self.scale)?;
        let Some(a) = values.as_primitive_opt::<Decimal128Type>() else {
            return Err(FrameError::TypeMismatch(format!(
                "a decimal sum of a column of type {}",
                values.data_type()
            )));
        };
        let mut overflow = false;
        if rows.single {
            let total = a.iter().flatten().try_fold(0i128, i128::checked_add);
            match (self.sum.first_mut(), total) {
                (Some(s), Some(t)) => match s.checked_add(t) {
                    Some(v) => *s = v,
                    None => overflow = true,
                },
                (_, None) => overflow = true,
                (None, _) => {}
            }
        } else if a.null_count() == 0
            && rows.n_groups <= LANED_MAX_GROUPS
            && rows.n_groups * 8 <= rows.ids.len()
        {
            let overflowed = std::cell::Cell::new(false);
            let add = |s: i128, v: i128| {
                s.checked_add(v).unwrap_or_else(|| {
                    overflowed.set(true);
                    s
                })
            };
            add_laned_with(&mut self.sum, rows.ids, a.values(), |v| v, add);
            overflow = overflowed.get();
        } else {
            let sum = &mut self.sum;
            for_each_valid(a, rows.ids, |g, v| {
                if let Some(s) = sum.get_mut(g) {
                    match s.checked_add(v) {
                        Some(x) => *s = x,
                        None => overflow = true,
                    }
                }
            });
        }
        match overflow {
            true => Err(self.overflow()),
            false => Ok(()),
        }
    }

    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }

    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let sum = PrimitiveArray::<Decimal128Type>::from(std::mem::take(&mut self.sum))
            .with_precision_and_scale(MAX_PRECISION, self.scale)?;
        if sum.validate_decimal_precision(MAX_PRECISION).is_err() {
            return Err(self.overflow());
        }
        Ok(vec![Arc::new(sum)])
    }
}
