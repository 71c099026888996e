//! pandas semantics at the edges of dataframes: join keys of different numeric types match
//! by value (broadcast and shuffled, under several chunkings), a string key against a numeric
//! one is a typed error naming both, and a frame a filter emptied flows on.

use crate::common::{builder, session, session_from};
use crate::dataframes::{sorted_rows, table};
use arrow::array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema};
use std::sync::Arc;
use tessera::dataframe::{col, concat, from_arrow, Agg, FrameError, How};
use tessera::Error;

/// The rows of a hand-written table, sorted like `sorted_rows`.
fn sorted_table(rows: &[&[&str]]) -> Vec<Vec<String>> {
    let mut t = table(rows);
    t.sort();
    t
}

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap()
}

#[test]
fn int_and_float_keys_join_by_value_broadcast_or_shuffled() {
    // Integer ids (one null) against float ids, as pandas reads an id column with a gap.
    let left = batch(vec![
        (
            "k",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                Some(2),
                Some(3),
                None,
            ])),
        ),
        ("v", Arc::new(Int64Array::from(vec![10, 20, 21, 30, 40]))),
    ]);
    let right = batch(vec![
        (
            "k",
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                Some(1.5),
                Some(2.0),
                None,
            ])),
        ),
        ("w", Arc::new(Int64Array::from(vec![100, 150, 200, 900]))),
    ]);
    // By hand (pandas: 1 == 1.0, 1.5 matches no integer, null keys match each other).
    let inner: &[&[&str]] = &[
        &["1.0", "10", "100"],
        &["2.0", "20", "200"],
        &["2.0", "21", "200"],
        &["", "40", "900"],
    ];
    let left_only: &[&str] = &["3.0", "30", ""];
    let right_only: &[&str] = &["1.5", "", "150"];
    let with = |extra: &[&[&str]]| {
        let mut t = inner.to_vec();
        t.extend_from_slice(extra);
        sorted_table(&t)
    };
    let broadcast = session();
    let shuffle = session_from(builder().broadcast_bytes(0));
    for s in [&*broadcast, &*shuffle] {
        for chunk in [1, 2, 5] {
            for swap in [false, true] {
                let (l, r) = (
                    from_arrow(left.clone(), Some(chunk)),
                    from_arrow(right.clone(), Some(chunk.min(3))),
                );
                let (l, r) = if swap { (r, l) } else { (l, r) };
                for (how, want) in [
                    (How::Inner, with(&[])),
                    (
                        How::Left,
                        with(&[if swap { right_only } else { left_only }]),
                    ),
                    (
                        How::Right,
                        with(&[if swap { left_only } else { right_only }]),
                    ),
                    (How::Outer, with(&[left_only, right_only])),
                ] {
                    let out = l.merge(&r, &["k"], how).execute(s).unwrap();
                    let label = format!("{how:?}, chunks of {chunk}, swapped {swap}");
                    assert_eq!(
                        out.schema().field(0).data_type(),
                        &DataType::Float64,
                        "{label}"
                    );
                    // Columns come left first; put them back in (k, v, w) order to compare.
                    let out = if swap {
                        out.project(&[0, 2, 1]).unwrap()
                    } else {
                        out
                    };
                    assert_eq!(sorted_rows(&out), want, "{label}");
                }
            }
        }
    }
}

#[test]
fn integer_keys_of_different_widths_join_by_value() {
    let left = batch(vec![
        ("k", Arc::new(Int32Array::from(vec![1, 2, 3]))),
        ("v", Arc::new(Int64Array::from(vec![10, 20, 30]))),
    ]);
    let right = batch(vec![
        ("k", Arc::new(Int64Array::from(vec![3, 1, 7]))),
        ("w", Arc::new(Int64Array::from(vec![300, 100, 700]))),
    ]);
    let shuffle = session_from(builder().broadcast_bytes(0));
    for s in [&*session(), &*shuffle] {
        for chunk in [1, 2] {
            let out = from_arrow(left.clone(), Some(chunk))
                .merge(&from_arrow(right.clone(), Some(chunk)), &["k"], How::Inner)
                .execute(s)
                .unwrap();
            assert_eq!(
                sorted_rows(&out),
                sorted_table(&[&["1", "10", "100"], &["3", "30", "300"]])
            );
        }
    }
}

#[test]
fn a_string_key_against_a_numeric_key_is_a_typed_error_naming_both() {
    let s = session();
    let left = batch(vec![("id", Arc::new(StringArray::from(vec!["1", "2"])))]);
    let right = batch(vec![("key", Arc::new(Float64Array::from(vec![1.0, 2.0])))]);
    let merged = from_arrow(left, None).merge_on(
        &from_arrow(right, None),
        &["id"],
        &["key"],
        How::Inner,
        ("_x", "_y"),
    );
    match merged.execute(&s) {
        Err(Error::Frame(FrameError::TypeMismatch(m))) => {
            for part in ["id", "key", "Utf8", "Float64"] {
                assert!(m.contains(part), "{m:?} should name {part}");
            }
        }
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    // The session stays usable.
    let ok = batch(vec![("k", Arc::new(Int64Array::from(vec![1])))]);
    assert_eq!(from_arrow(ok, None).len(&s).unwrap(), 1);
}

#[test]
fn a_filter_that_keeps_nothing_flows_through_merge_sort_groupby_and_concat() {
    let s = session();
    let data = batch(vec![
        ("k", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("v", Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5]))),
    ]);
    let df = from_arrow(data.clone(), Some(2));
    let none = df.filter(col("v").gt(100.0));
    let sorted = none.sort_values(&["v"], true).execute(&s).unwrap();
    assert_eq!(sorted.num_rows(), 0);
    assert_eq!(sorted.schema().fields().len(), 2);
    let merged = none.merge(&df, &["k"], How::Inner).execute(&s).unwrap();
    assert_eq!(merged.num_rows(), 0);
    let left = none.merge(&df, &["k"], How::Right).execute(&s).unwrap();
    assert_eq!(
        sorted_rows(&left),
        sorted_table(&[&["1", "", "0.5"], &["2", "", "1.5"], &["3", "", "2.5"]])
    );
    let grouped = none
        .groupby(&["k"])
        .agg(&[("v", &[Agg::Sum, Agg::Mean, Agg::Count])])
        .execute(&s)
        .unwrap();
    assert_eq!(grouped.num_rows(), 0);
    assert_eq!(grouped.schema().fields().len(), 4);
    let both = concat(&[none.clone(), df.clone()]).execute(&s).unwrap();
    assert_eq!(sorted_rows(&both), sorted_rows(&data));
}
