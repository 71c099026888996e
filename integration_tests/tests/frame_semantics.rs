//! pandas semantics at the edges of dataframes: join keys of different numeric types match
//! by value (broadcast and shuffled, under several chunkings), a string key against a numeric
//! one is a typed error naming both, and a frame a filter emptied flows on.

use crate::common::{builder, session, session_from};
use crate::dataframes::{rows, sorted_rows, table, TempDir};
use arrow::array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema};
use std::sync::Arc;
use tessera::dataframe::{
    col, concat, from_arrow, read_csv, read_parquet, Agg, DataFrame, FrameError, How,
};
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

/// A small frame and the same frame with every row filtered away, in chunks of `rows`.
fn frame_and_empty(rows: usize) -> (DataFrame, DataFrame) {
    let data = batch(vec![
        ("k", Arc::new(Int64Array::from(vec![1, 2, 2, 3]))),
        ("s", Arc::new(StringArray::from(vec!["a", "b", "b", "c"]))),
        ("v", Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5]))),
    ]);
    let df = from_arrow(data, Some(rows));
    let none = df.filter(col("v").gt(100.0));
    (df, none)
}

#[test]
fn merges_with_an_empty_side_for_every_how() {
    let s = session();
    for rows in [1, 3] {
        let (df, none) = frame_and_empty(rows);
        let other = df.select(&["k", "v"]).rename(&[("v", "w")]);
        let none_other = none.select(&["k", "v"]).rename(&[("v", "w")]);
        // pandas: an inner merge with an empty side is empty; left keeps the left rows with
        // NaN on the right; right mirrors it; outer keeps the non-empty side's rows.
        let n = |f: DataFrame| f.execute(&s).unwrap();
        for how in [How::Inner, How::Left, How::Right, How::Outer] {
            let both_empty = n(none.merge(&none_other, &["k"], how));
            assert_eq!(both_empty.num_rows(), 0, "{how:?} of two empties");
            assert_eq!(both_empty.num_columns(), 4, "{how:?}: k, s, v, w");
        }
        assert_eq!(n(none.merge(&other, &["k"], How::Inner)).num_rows(), 0);
        assert_eq!(n(df.merge(&none_other, &["k"], How::Inner)).num_rows(), 0);
        assert_eq!(n(none.merge(&other, &["k"], How::Left)).num_rows(), 0);
        assert_eq!(n(df.merge(&none_other, &["k"], How::Right)).num_rows(), 0);
        let kept = sorted_table(&[
            &["1", "a", "0.5", ""],
            &["2", "b", "1.5", ""],
            &["2", "b", "2.5", ""],
            &["3", "c", "3.5", ""],
        ]);
        assert_eq!(
            sorted_rows(&n(df.merge(&none_other, &["k"], How::Left))),
            kept
        );
        assert_eq!(
            sorted_rows(&n(df.merge(&none_other, &["k"], How::Outer))),
            kept
        );
        let right_kept = sorted_table(&[
            &["1", "", "", "0.5"],
            &["2", "", "", "1.5"],
            &["2", "", "", "2.5"],
            &["3", "", "", "3.5"],
        ]);
        assert_eq!(
            sorted_rows(&n(none.merge(&other, &["k"], How::Right))),
            right_kept
        );
        assert_eq!(
            sorted_rows(&n(none.merge(&other, &["k"], How::Outer))),
            right_kept
        );
    }
}

#[test]
fn every_aggregation_and_table_op_accepts_an_empty_frame() {
    let s = session();
    let (_, none) = frame_and_empty(2);
    let all = [
        Agg::Sum,
        Agg::Mean,
        Agg::Min,
        Agg::Max,
        Agg::Count,
        Agg::Size,
        Agg::Std,
        Agg::Var,
        Agg::First,
        Agg::Last,
        Agg::NUnique,
    ];
    let grouped = none
        .groupby(&["s"])
        .agg(&[("v", &all)])
        .execute(&s)
        .unwrap();
    assert_eq!(grouped.num_rows(), 0);
    assert_eq!(grouped.num_columns(), 1 + all.len());
    for t in [
        none.value_counts("s"),
        none.drop_duplicates(None),
        none.drop_duplicates(Some(&["k"])),
        none.head(5),
        none.sort_values(&["s", "v"], false),
        none.groupby(&["k", "s"]).size(),
    ] {
        assert_eq!(t.execute(&s).unwrap().num_rows(), 0);
    }
    assert_eq!(none.len(&s).unwrap(), 0);
    assert!(none.is_empty(&s).unwrap());
    // pandas: an empty frame sums to 0, counts 0, and its mean, min and max are NaN.
    let sum = none.sum().execute(&s).unwrap();
    assert_eq!(rows(&sum), table(&[&["0", "0.0"]]), "sum of k and v");
    let count = none.count().execute(&s).unwrap();
    assert_eq!(rows(&count), table(&[&["0", "0", "0"]]));
    for f in [none.mean(), none.min(), none.max(), none.std(), none.var()] {
        let r = f.execute(&s).unwrap();
        assert_eq!(r.num_rows(), 1);
        for c in r.columns() {
            assert!(c.is_null(0) || float_is_nan(c), "{r:?}");
        }
    }
    let described = none.describe(&s).unwrap();
    assert!(described.num_rows() >= 1);
    let persisted = none.persist(&s).unwrap();
    assert_eq!(persisted.len(&s).unwrap(), 0);
}

fn float_is_nan(c: &ArrayRef) -> bool {
    c.as_any()
        .downcast_ref::<Float64Array>()
        .is_some_and(|a| a.value(0).is_nan())
}

#[test]
fn empty_frames_write_and_read_back_in_both_formats() {
    let s = session();
    let dir = TempDir::new("empty-frames");
    let (_, none) = frame_and_empty(2);
    // Writing nothing writes the header (CSV) or the schema (Parquet), as pandas does.
    let csv = dir.0.join("none.csv");
    assert_eq!(none.to_csv(&s, &csv, false).unwrap(), 0);
    let back = read_csv(&csv).execute(&s).unwrap();
    assert_eq!(back.num_rows(), 0);
    assert_eq!(back.num_columns(), 3);
    let pq = dir.0.join("none.parquet");
    assert_eq!(none.to_parquet(&s, &pq, false).unwrap(), 0);
    let back = read_parquet(&pq).execute(&s).unwrap();
    assert_eq!(back.num_rows(), 0);
    assert_eq!(back.schema().field(2).data_type(), &DataType::Float64);
    // A CSV with a header and no rows reads as an empty frame with those columns, which
    // flows through groupby, sort, merge and write.
    for text in ["a,b\n", "a,b", "a,b\r\n"] {
        let p = dir.file("header.csv", text);
        let df = read_csv(&p);
        let got = df.execute(&s).unwrap();
        assert_eq!(got.num_rows(), 0, "{text:?}");
        assert_eq!(got.num_columns(), 2, "{text:?}");
        let g = df.groupby(&["a"]).agg(&[("b", &[Agg::Count])]);
        assert_eq!(g.execute(&s).unwrap().num_rows(), 0);
        assert_eq!(
            df.sort_values(&["a"], true).execute(&s).unwrap().num_rows(),
            0
        );
        assert_eq!(
            df.merge(&df, &["a"], How::Outer)
                .execute(&s)
                .unwrap()
                .num_rows(),
            0
        );
        assert_eq!(df.to_csv(&s, dir.0.join("out.csv"), false).unwrap(), 0);
    }
    // A file with no header at all has no columns to parse: a typed error naming the file.
    let p = dir.file("nothing.csv", "");
    match read_csv(&p).execute(&s) {
        Err(Error::Frame(e)) => assert!(e.to_string().contains("nothing.csv"), "{e}"),
        other => panic!("a zero-byte CSV: {other:?}"),
    }
}

#[test]
fn concat_aligns_columns_by_name_and_promotes_numbers() {
    let s = session();
    for per_chunk in [1, 2, 5] {
        let ints = from_arrow(
            batch(vec![
                ("k", Arc::new(Int32Array::from(vec![1, 2, 3]))),
                ("v", Arc::new(Int64Array::from(vec![10, 20, 30]))),
            ]),
            Some(per_chunk),
        );
        // Columns in another order, a float key, and a column the first frame lacks.
        let floats = from_arrow(
            batch(vec![
                ("x", Arc::new(StringArray::from(vec!["p", "q"]))),
                ("v", Arc::new(Int32Array::from(vec![40, 50]))),
                ("k", Arc::new(Float64Array::from(vec![1.5, 4.0]))),
            ]),
            Some(per_chunk),
        );
        // pandas: pd.concat([ints, floats]) has columns k (float64), v (int64), x (object,
        // NaN for the first frame's rows), rows in order.
        let got = concat(&[ints.clone(), floats.clone()]).execute(&s).unwrap();
        let types: Vec<_> = got
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect();
        assert_eq!(
            types,
            vec![
                ("k".to_string(), DataType::Float64),
                ("v".to_string(), DataType::Int64),
                ("x".to_string(), DataType::Utf8),
            ]
        );
        assert_eq!(
            rows(&got),
            table(&[
                &["1.0", "10", ""],
                &["2.0", "20", ""],
                &["3.0", "30", ""],
                &["1.5", "40", "p"],
                &["4.0", "50", "q"],
            ]),
            "rows per chunk {per_chunk}"
        );
        // The promoted key joins by value afterwards.
        let joined = concat(&[ints.clone(), floats.clone()])
            .merge(&ints.select(&["k"]), &["k"], How::Inner)
            .execute(&s)
            .unwrap();
        assert_eq!(
            joined.num_rows(),
            3,
            "1.0, 2.0 and 3.0 match; 1.5 and 4.0 do not"
        );
    }
    // A string column against a numeric one: a typed error naming the column and both types.
    let a = from_arrow(
        batch(vec![("k", Arc::new(Int64Array::from(vec![1])))]),
        None,
    );
    let b = from_arrow(
        batch(vec![("k", Arc::new(StringArray::from(vec!["1"])))]),
        None,
    );
    match concat(&[a, b]).execute(&s) {
        Err(Error::Frame(FrameError::TypeMismatch(m))) => {
            assert!(
                m.contains("\"k\"") && m.contains("Int64") && m.contains("Utf8"),
                "{m}"
            )
        }
        other => panic!("concat of Int64 and Utf8: {other:?}"),
    }
}

#[test]
fn drop_duplicates_keeps_null_and_nan_keys_as_pandas_does() {
    let s = session();
    let data = batch(vec![
        (
            "k",
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                None,
                Some(1.0),
                Some(f64::NAN),
                None,
                Some(f64::NAN),
            ])),
        ),
        (
            "s",
            Arc::new(StringArray::from(vec![
                Some("a"),
                None,
                Some("a"),
                Some("b"),
                None,
                Some("b"),
            ])),
        ),
        ("v", Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5, 6]))),
    ]);
    for per_chunk in [1, 2, 6] {
        let df = from_arrow(data.clone(), Some(per_chunk));
        // pd.DataFrame(...).drop_duplicates(subset=["k"]): 1.0, NaN and None (as NaN in
        // pandas) each once; here null and NaN stay distinct kinds of missing.
        let by_k = df.drop_duplicates(Some(&["k"])).execute(&s).unwrap();
        assert_eq!(
            sorted_rows(&by_k),
            sorted_table(&[&["", "", "2"], &["1.0", "a", "1"], &["NaN", "b", "4"]]),
            "rows per chunk {per_chunk}"
        );
        // On every column: the null string row and each (k, s) pair once.
        let all = df
            .select(&["k", "s"])
            .drop_duplicates(None)
            .execute(&s)
            .unwrap();
        assert_eq!(
            sorted_rows(&all),
            sorted_table(&[&["", ""], &["1.0", "a"], &["NaN", "b"]])
        );
    }
}

#[test]
fn drop_duplicates_keeps_the_first_row_as_it_is() {
    let s = session();
    let data = batch(vec![
        ("k", Arc::new(Int64Array::from(vec![1, 1, 2, 2, 1]))),
        (
            "a",
            Arc::new(Float64Array::from(vec![
                None,
                Some(5.0),
                Some(f64::NAN),
                Some(8.0),
                Some(9.0),
            ])),
        ),
        (
            "b",
            Arc::new(StringArray::from(vec![
                Some("x"),
                None,
                None,
                Some("y"),
                Some("z"),
            ])),
        ),
    ]);
    for per_chunk in [1, 2, 3, 5] {
        let df = from_arrow(data.clone(), Some(per_chunk));
        // pd.DataFrame(...).drop_duplicates(subset=["k"]): rows 0 and 2, nulls and NaN kept
        // (not the first non-null value of each column).
        let first = df.drop_duplicates(Some(&["k"])).execute(&s).unwrap();
        assert_eq!(
            sorted_rows(&first),
            sorted_table(&[&["1", "", "x"], &["2", "NaN", ""]]),
            "rows per chunk {per_chunk}"
        );
    }
}
