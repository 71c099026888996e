//! Sorting tables by several columns.

use super::error::{FrameError, FrameResult};
use super::schema::column;
use super::table::concat;
use arrow::array::{ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::{take_record_batch, SortOptions};
use arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type, Schema, SchemaRef};
use arrow::row::{RowConverter, SortField};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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

/// Concatenates `batches` and sorts the rows by `by`, keeping the first `limit` rows when
/// given.
///
/// The sort is stable: rows with equal keys keep their input order (the order of `batches`,
/// then of the rows in each), so a frame sorted in chunks gives one answer whatever its
/// chunking. Float NaNs count as missing (pandas' NA), so they go where `nulls_first` puts
/// nulls in either direction, and `-0.0` ties with `0.0`.
///
/// With a limit, each batch longer than it is first cut to its own first `limit` rows, so
/// that only those are copied into the table sorted (a top-k of a large groupby's parts,
/// strings and all, gathers a few rows of each part rather than concatenating them all).
/// The rows kept are the same: a row among the first `limit` of all is among the first
/// `limit` of its batch, and each cut keeps its batch's ties in their order.
pub fn sort_batches(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    by: &[SortKey],
    limit: Option<usize>,
) -> FrameResult<RecordBatch> {
    check_keys(schema, by)?;
    let table = match limit {
        Some(k) if batches.len() > 1 && batches.iter().any(|b| b.num_rows() > k) => {
            let cut = batches
                .iter()
                .map(|b| match b.num_rows() > k {
                    true => Ok(take_record_batch(b, &sorted_indices(b, by, limit)?)?),
                    false => Ok(b.clone()),
                })
                .collect::<FrameResult<Vec<_>>>()?;
            concat(schema, &cut)?
        }
        _ => concat(schema, batches)?,
    };
    let indices = sorted_indices(&table, by, limit)?;
    Ok(take_record_batch(&table, &indices)?)
}

/// The row order of a stable sort of `table` by `by` (the first `limit` rows when given).
fn sorted_indices(
    table: &RecordBatch,
    by: &[SortKey],
    limit: Option<usize>,
) -> FrameResult<UInt32Array> {
    let n = table.num_rows();
    let n32 = u32::try_from(n).map_err(|_| {
        FrameError::InvalidArgument(format!("cannot sort {n} rows in one table (at most 2^32)"))
    })?;
    let (fields, columns): (Vec<SortField>, Vec<ArrayRef>) = by
        .iter()
        .map(|k| {
            let values = nan_as_null(column(table, &k.column)?);
            let options = SortOptions {
                descending: k.descending,
                nulls_first: k.nulls_first,
            };
            Ok((
                SortField::new_with_options(values.data_type().clone(), options),
                values,
            ))
        })
        .collect::<FrameResult<Vec<_>>>()?
        .into_iter()
        .unzip();
    // Arrow's row format compares several keys, directions and null placements as plain
    // bytes; the row index breaks ties, which makes the (unstable, fast) sort stable.
    let rows = RowConverter::new(fields)?.convert_columns(&columns)?;
    let order = |a: &u32, b: &u32| {
        rows.row(*a as usize)
            .cmp(&rows.row(*b as usize))
            .then(a.cmp(b))
    };
    let mut indices: Vec<u32> = (0..n32).collect();
    match limit {
        Some(k) if k < n => {
            if k > 0 {
                indices.select_nth_unstable_by(k - 1, order);
            }
            indices.truncate(k);
            indices.sort_unstable_by(order);
        }
        _ => indices.sort_unstable_by(order),
    }
    Ok(UInt32Array::from(indices))
}

/// A float column with its NaNs as nulls and `-0.0` as `0.0` (pandas orders both so); other
/// columns as they are.
fn nan_as_null(values: &ArrayRef) -> ArrayRef {
    macro_rules! clean {
        ($t:ty) => {{
            let zero = Default::default();
            Arc::new(
                values.as_primitive::<$t>().unary_opt::<_, $t>(|v| {
                    (!v.is_nan()).then_some(if v == zero { zero } else { v })
                }),
            ) as ArrayRef
        }};
    }
    match values.data_type() {
        DataType::Float16 => clean!(Float16Type),
        DataType::Float32 => clean!(Float32Type),
        DataType::Float64 => clean!(Float64Type),
        _ => values.clone(),
    }
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

    /// A stable sort by hand: `Vec::sort_by` is stable; keys compared as pandas does, NaN
    /// and null last in both directions.
    fn stable_by_hand(k: &[Option<f64>], v: &[i64], asc: (bool, bool)) -> Vec<usize> {
        let key = |x: Option<f64>| x.filter(|x| !x.is_nan());
        let mut order: Vec<usize> = (0..k.len()).collect();
        order.sort_by(|&a, &b| {
            let first = match (key(k[a]), key(k[b])) {
                (None, None) => std::cmp::Ordering::Equal,
                (None, _) => std::cmp::Ordering::Greater,
                (_, None) => std::cmp::Ordering::Less,
                (Some(x), Some(y)) => {
                    let o = x.partial_cmp(&y).unwrap();
                    if asc.0 {
                        o
                    } else {
                        o.reverse()
                    }
                }
            };
            let second = if asc.1 {
                v[a].cmp(&v[b])
            } else {
                v[b].cmp(&v[a])
            };
            first.then(second)
        });
        order
    }

    #[test]
    fn ties_keep_input_order_across_batches_and_directions_mix() {
        // Many ties (4 key values, 3 payloads) over 20,000 rows in uneven batches: an
        // unstable sort reorders ties; the row id column records the input order.
        let n = 20_000usize;
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let k: Vec<Option<f64>> = (0..n)
            .map(|_| match next() % 6 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-0.0),
                r => Some(r as f64 - 3.0),
            })
            .collect();
        let v: Vec<i64> = (0..n).map(|_| (next() % 3) as i64).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Float64, true),
            Field::new("v", DataType::Int64, false),
            Field::new("id", DataType::Int64, false),
        ]));
        let cuts = [0, 1, 777, 5000, 5001, 13_000, n];
        let batches: Vec<RecordBatch> = cuts
            .windows(2)
            .map(|w| {
                RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(Float64Array::from(k[w[0]..w[1]].to_vec())),
                        Arc::new(Int64Array::from(v[w[0]..w[1]].to_vec())),
                        Arc::new(Int64Array::from_iter_values(w[0] as i64..w[1] as i64)),
                    ],
                )
                .unwrap()
            })
            .collect();
        for asc in [(true, true), (false, true), (true, false), (false, false)] {
            let key = |c: &str, up: bool| {
                if up {
                    SortKey::ascending(c)
                } else {
                    SortKey::descending(c)
                }
            };
            let by = [key("k", asc.0), key("v", asc.1)];
            let want: Vec<i64> = stable_by_hand(&k, &v, asc)
                .into_iter()
                .map(|i| i as i64)
                .collect();
            let out = sort_batches(&schema, &batches, &by, None).unwrap();
            let ids = out.column(2).as_primitive::<arrow::datatypes::Int64Type>();
            assert_eq!(ids.values().to_vec(), want, "directions {asc:?}");
            for limit in [0, 1, 2500, n] {
                let top = sort_batches(&schema, &batches, &by, Some(limit)).unwrap();
                let ids = top.column(2).as_primitive::<arrow::datatypes::Int64Type>();
                assert_eq!(ids.values().to_vec(), want[..limit], "limit {limit}");
            }
        }
    }
}
