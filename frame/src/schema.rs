//! Column lookup and type classes shared by the dataframe kernels.

use super::error::{FrameError, FrameResult};
use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;

/// The position of column `name` in `schema`, or [`FrameError::ColumnNotFound`].
pub fn column_index(schema: &Schema, name: &str) -> FrameResult<usize> {
    schema
        .index_of(name)
        .map_err(|_| FrameError::ColumnNotFound {
            name: name.to_string(),
            available: schema.fields().iter().map(|f| f.name().clone()).collect(),
        })
}

/// Column `name` of `batch`, or [`FrameError::ColumnNotFound`].
pub fn column<'a>(batch: &'a RecordBatch, name: &str) -> FrameResult<&'a ArrayRef> {
    column_index(batch.schema_ref(), name).map(|i| batch.column(i))
}

/// True for integer, floating-point and decimal types.
pub fn is_numeric(dt: &DataType) -> bool {
    dt.is_integer() || dt.is_floating() || is_decimal(dt)
}

/// True for decimal types (`Decimal32`, `Decimal64`, `Decimal128`, `Decimal256`).
pub fn is_decimal(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    )
}

/// True for UTF-8 strings, plain, large, view or dictionary-encoded.
pub fn is_string(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string(value),
        _ => false,
    }
}

/// The class of key types that compare equal across frames (for joins and concatenation):
/// every string encoding is one class, every signed or unsigned integer another; other
/// types only match themselves.
pub fn key_class(dt: &DataType) -> DataType {
    if is_string(dt) {
        DataType::Utf8
    } else if dt.is_integer() {
        DataType::Int64
    } else {
        dt.clone()
    }
}
