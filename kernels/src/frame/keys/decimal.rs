//! Decimal keys, encoded as a type the encoder keys on: a decimal of up to 18 digits as its
//! unscaled value (`Int64`), a wider one as its text at its scale (`Utf8`, one spelling per
//! value). Both are exact, so equal decimals of one type are equal keys.

use crate::frame::error::FrameResult;
use crate::frame::schema::is_decimal;
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
    let (DataType::Decimal32(p, _)
    | DataType::Decimal64(p, _)
    | DataType::Decimal128(p, _)
    | DataType::Decimal256(p, _)) = dt
    else {
        return None;
    };
    Some(match *p <= INT64_DIGITS {
        true => DataType::Int64,
        false => DataType::Utf8,
    })
}

/// Decimal column `a` as its key view ([`view_type`]); `None` for other columns.
pub(super) fn to_view(a: &dyn Array) -> FrameResult<Option<ArrayRef>> {
    let dt = a.data_type();
    let (Some(view), true) = (view_type(dt), is_decimal(dt)) else {
        return Ok(None);
    };
    if view == DataType::Utf8 {
        return Ok(Some(cast(a, &DataType::Utf8)?));
    }
    let (DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s)) = *dt
    else {
        return Ok(Some(cast(a, &DataType::Utf8)?));
    };
    let wide = cast_with_options(a, &DataType::Decimal128(p, s), &STRICT)?;
    let unscaled = wide
        .as_primitive::<Decimal128Type>()
        .try_unary::<_, Int64Type, _>(|v| {
            i64::try_from(v).map_err(|_| {
                ArrowError::InvalidArgumentError(format!(
                    "decimal key {v} (unscaled) has more than the {p} digits of {dt}"
                ))
            })
        })?;
    Ok(Some(Arc::new(unscaled)))
}

/// Keys `view` (of decimal type `dt`'s [`view_type`]) back as decimals of type `dt`.
pub(super) fn from_view(view: &ArrayRef, dt: &DataType) -> FrameResult<ArrayRef> {
    match (view.as_primitive_opt::<Int64Type>(), dt) {
        (
            Some(unscaled),
            DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s),
        ) => {
            let wide = unscaled
                .unary::<_, Decimal128Type>(i128::from)
                .with_precision_and_scale(*p, *s)?;
            Ok(cast_with_options(&wide, dt, &STRICT)?)
        }
        _ => Ok(cast_with_options(view, dt, &STRICT)?),
    }
}
