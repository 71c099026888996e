//! Decimal keys, encoded as a type the encoder keys on: a decimal of up to 18 digits as its
//! unscaled value (`Int64`), a wider one as its text at its scale (`Utf8`, one spelling per
//! value). Both are exact, so equal decimals of one type are equal keys.

use crate::error::FrameResult;
use crate::expr::decimal::Dec;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::{cast, cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use arrow::error::ArrowError;
use std::sync::Arc;

/// Up to this many digits, an unscaled decimal is an `i64`.
const INT64_DIGITS: u8 = 18;

/// Casts that fail rather than make a null.
const STRICT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: arrow::util::display::FormatOptions::new(),
};

/// The type decimal type `dt` is keyed as; `None` for other types.
pub(super) fn view_type(dt: &DataType) -> Option<DataType> {
    Dec::of(dt).map(|d| match d.precision <= INT64_DIGITS {
        true => DataType::Int64,
        false => DataType::Utf8,
    })
}

/// Decimal column `a` as its key view ([`view_type`]); `None` for other columns.
pub(super) fn to_view(a: &dyn Array) -> FrameResult<Option<ArrayRef>> {
    let dt = a.data_type();
    let Some(Dec { precision, scale }) = Dec::of(dt) else {
        return Ok(None);
    };
    if precision > INT64_DIGITS {
        return Ok(Some(cast(a, &DataType::Utf8)?));
    }
    let wide = cast_with_options(a, &DataType::Decimal128(precision, scale), &STRICT)?;
    let unscaled = wide
        .as_primitive::<Decimal128Type>()
        .try_unary::<_, Int64Type, _>(|v| {
            i64::try_from(v).map_err(|_| {
                ArrowError::InvalidArgumentError(format!(
                    "decimal key {v} (unscaled) has more than the {precision} digits of {dt}"
                ))
            })
        })?;
    Ok(Some(Arc::new(unscaled)))
}

/// Keys `view` (of decimal type `dt`'s [`view_type`]) back as decimals of type `dt`.
pub(super) fn from_view(view: &ArrayRef, dt: &DataType) -> FrameResult<ArrayRef> {
    match (view.as_primitive_opt::<Int64Type>(), Dec::of(dt)) {
        (Some(unscaled), Some(d)) => {
            let wide = unscaled
                .unary::<_, Decimal128Type>(i128::from)
                .with_precision_and_scale(d.precision, d.scale)?;
            Ok(cast_with_options(&wide, dt, &STRICT)?)
        }
        _ => Ok(cast_with_options(view, dt, &STRICT)?),
    }
}
