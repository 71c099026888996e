//! Categorical (dictionary-encoded) string columns: produced by `astype` to Arrow's
//! dictionary type or read from Parquet, kept encoded through filter, groupby, merge, sort,
//! value_counts, drop_duplicates and a Parquet round trip, with the same rows as plain
//! strings, under several chunkings. Also a frame joined with a groupby of itself (pandas'
//! `df.merge(df.groupby(k).agg(...), on=k)`), which once failed to plan.

use crate::common::session;
use crate::dataframes::{sorted_rows, TempDir};
use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::DataType;
use std::sync::Arc;
use tessera::dataframe::{col, from_arrow, read_parquet, Agg, DataFrame, How};

fn category() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

fn plain(per_chunk: usize) -> DataFrame {
    let b = RecordBatch::try_from_iter(vec![
        (
            "city",
            Arc::new(StringArray::from(vec![
                Some("paris"),
                Some("rome"),
                Some("paris"),
                None,
                Some("oslo"),
                Some("rome"),
                Some("paris"),
            ])) as ArrayRef,
        ),
        (
            "v",
            Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5, 6, 7])) as ArrayRef,
        ),
    ])
    .unwrap();
    from_arrow(b, Some(per_chunk))
}

/// The same frame with `city` as a category (pandas' `astype("category")`).
fn categorical(per_chunk: usize) -> DataFrame {
    plain(per_chunk).with_column("city", col("city").cast(category()))
}

#[test]
fn categories_stay_encoded_and_answer_like_strings() {
    let s = session();
    for per_chunk in [1, 3, 7] {
        let (p, c) = (plain(per_chunk), categorical(per_chunk));
        let cases: Vec<(&str, DataFrame, DataFrame)> = vec![
            (
                "filter",
                p.filter(col("city").eq("paris")),
                c.filter(col("city").eq("paris")),
            ),
            (
                "groupby",
                p.groupby(&["city"]).agg(&[("v", &[Agg::Sum, Agg::Count])]),
                c.groupby(&["city"]).agg(&[("v", &[Agg::Sum, Agg::Count])]),
            ),
            (
                "sort",
                p.sort_values(&["city", "v"], false),
                c.sort_values(&["city", "v"], false),
            ),
            (
                "value_counts",
                p.value_counts("city"),
                c.value_counts("city"),
            ),
            (
                "drop_duplicates",
                p.select(&["city"]).drop_duplicates(None),
                c.select(&["city"]).drop_duplicates(None),
            ),
            (
                "merge with itself",
                p.merge(
                    &p.select(&["city"]).drop_duplicates(None),
                    &["city"],
                    How::Inner,
                ),
                c.merge(
                    &c.select(&["city"]).drop_duplicates(None),
                    &["city"],
                    How::Inner,
                ),
            ),
            (
                "merge category with strings",
                p.merge(
                    &p.select(&["city"]).drop_duplicates(None),
                    &["city"],
                    How::Left,
                ),
                c.merge(
                    &p.select(&["city"]).drop_duplicates(None),
                    &["city"],
                    How::Left,
                ),
            ),
        ];
        for (what, want, got) in cases {
            let (want, got) = (want.execute(&s).unwrap(), got.execute(&s).unwrap());
            assert_eq!(
                sorted_rows(&got),
                sorted_rows(&want),
                "{what}, {per_chunk} rows per chunk"
            );
            let city = got
                .schema()
                .field_with_name("city")
                .unwrap()
                .data_type()
                .clone();
            assert_eq!(city, category(), "{what} keeps the encoding");
        }
        // Sorting categories sorts by their strings (nulls last), as in pandas with
        // unordered categories' lexical order.
        let sorted = c.sort_values(&["city"], true).execute(&s).unwrap();
        let cities = arrow::compute::cast(sorted.column(0), &DataType::Utf8).unwrap();
        let cities: Vec<Option<&str>> = cities
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(
            cities,
            vec![
                Some("oslo"),
                Some("paris"),
                Some("paris"),
                Some("paris"),
                Some("rome"),
                Some("rome"),
                None
            ]
        );
    }
}

#[test]
fn parquet_keeps_categories_and_a_frame_joins_its_own_groupby() {
    let s = session();
    let dir = TempDir::new("categorical");
    let path = dir.0.join("cities.parquet");
    categorical(3).to_parquet(&s, &path, false).unwrap();
    let back = read_parquet(&path);
    assert_eq!(
        back.schema()
            .unwrap()
            .field_with_name("city")
            .unwrap()
            .data_type(),
        &category()
    );
    // df.merge(df.groupby("city").agg(total=("v", "sum")), on="city"): every row with a
    // city gets its city's total.
    for df in [plain(2), back] {
        let totals = df.groupby(&["city"]).agg(&[("v", &[Agg::Sum])]);
        let joined = df
            .merge(&totals, &["city"], How::Inner)
            .execute(&s)
            .unwrap();
        let rows = sorted_rows(&joined);
        assert_eq!(rows.len(), 6, "the null city matches nothing: {rows:?}");
        assert!(
            rows.contains(&vec!["paris".into(), "1".into(), "11".into()]),
            "{rows:?}"
        );
        assert!(
            rows.contains(&vec!["oslo".into(), "5".into(), "5".into()]),
            "{rows:?}"
        );
    }
}
