//! Sorting tables by several columns.

use super::error::{FrameError, FrameResult};
use super::schema::column;
use super::table::concat;
use arrow::array::RecordBatch;
use arrow::compute::{lexsort_to_indices, take_record_batch, SortColumn, SortOptions};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

/// One sort key: a column, its direction, and where nulls go (pandas puts them last).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortKey {
    /// The column.
    pub column: String,
    /// Largest first.
    pub descending: bool,
    /// Nulls before the other values.
    pub nulls_first: bool,
}

impl SortKey {
    /// Ascending by `column`, nulls last.
    pub fn ascending(column: &str) -> SortKey {
        SortKey {
            column: column.to_string(),
            descending: false,
            nulls_first: false,
        }
    }

    /// Descending by `column`, nulls last.
    pub fn descending(column: &str) -> SortKey {
        SortKey {
            descending: true,
            ..SortKey::ascending(column)
        }
    }
}

/// Checks that every key names a sortable column of `schema`.
pub fn check_keys(schema: &Schema, by: &[SortKey]) -> FrameResult<()> {
    if by.is_empty() {
        return Err(FrameError::InvalidArgument(
            "sort needs at least one column".into(),
        ));
    }
    for key in by {
        let i = super::schema::column_index(schema, &key.column)?;
        let dt = schema.field(i).data_type();
        if matches!(
            dt,
            DataType::List(_) | DataType::Struct(_) | DataType::Map(..)
        ) {
            return Err(FrameError::TypeMismatch(format!(
                "cannot sort by column {:?} of type {dt}",
                key.column
            )));
        }
    }
    Ok(())
}

/// Concatenates `batches` and sorts the rows by `by` (stable: equal keys keep their order),
/// keeping the first `limit` rows when given.
pub fn sort_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    by: &[SortKey],
    limit: Option<usize>,
) -> FrameResult<RecordBatch> {
    check_keys(schema, by)?;
    let table = concat(schema, batches)?;
    let columns = by
        .iter()
        .map(|k| {
            Ok(SortColumn {
                values: column(&table, &k.column)?.clone(),
                options: Some(SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                }),
            })
        })
        .collect::<FrameResult<Vec<_>>>()?;
    let indices = lexsort_to_indices(&columns, limit)?;
    Ok(take_record_batch(&table, &indices)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use arrow::datatypes::Field;
    use std::sync::Arc;

    fn table() -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int64, true),
            Field::new("x", DataType::Float64, false),
        ]));
        let a = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("b"), None, Some("a")])),
                Arc::new(Int64Array::from(vec![Some(2), Some(1), None])),
                Arc::new(Float64Array::from(vec![0.0, 1.0, 2.0])),
            ],
        )
        .unwrap();
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![Some("a"), Some("b")])),
                Arc::new(Int64Array::from(vec![Some(5), Some(2)])),
                Arc::new(Float64Array::from(vec![3.0, 4.0])),
            ],
        )
        .unwrap();
        (schema, vec![a, b])
    }

    fn xs(b: &RecordBatch) -> Vec<f64> {
        let x = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        x.values().to_vec()
    }

    #[test]
    fn sorts_by_several_keys_with_nulls_last_and_stable_ties() {
        let (schema, batches) = table();
        let by = [SortKey::ascending("k"), SortKey::descending("v")];
        let out = sort_batches(&schema, &batches, &by, None).unwrap();
        // a:(None→last among a? no: v desc nulls last) a5(x3), a-null(x2), b2(x0), b2(x4), null k (x1)
        assert_eq!(xs(&out), vec![3.0, 2.0, 0.0, 4.0, 1.0]);
        let top = sort_batches(&schema, &batches, &by, Some(2)).unwrap();
        assert_eq!(xs(&top), vec![3.0, 2.0]);
    }

    #[test]
    fn rejects_unknown_and_empty_keys() {
        let (schema, batches) = table();
        let e = sort_batches(&schema, &batches, &[SortKey::ascending("nope")], None).unwrap_err();
        assert!(matches!(e, FrameError::ColumnNotFound { .. }));
        let e = sort_batches(&schema, &batches, &[], None).unwrap_err();
        assert!(matches!(e, FrameError::InvalidArgument(_)));
    }
}
