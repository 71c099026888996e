//! Dataframes end to end: CSV and Parquet input, expressions, groupby (tree and shuffle),
//! joins (broadcast and shuffle), sorting and the rest, checked against hand-computed
//! tables and plain Rust references, under several chunkings; and every bad input.

use crate::common::{builder, session, session_from};
use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::display::array_value_to_string;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use tessera::dataframe::{
    self, col, concat, from_arrow, read_csv, read_csv_with, read_parquet_with, Agg, CsvOptions,
    DataFrame, FrameError, How, ReadCsv, ReadParquet,
};
use tessera::{Error, Session};

/// A fresh folder for one test's files, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("tessera-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub(crate) fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every row of a table as strings ("" for null), in order.
pub(crate) fn rows(b: &RecordBatch) -> Vec<Vec<String>> {
    (0..b.num_rows())
        .map(|r| {
            b.columns()
                .iter()
                .map(|c| {
                    if c.is_null(r) {
                        String::new()
                    } else {
                        array_value_to_string(c, r).unwrap()
                    }
                })
                .collect()
        })
        .collect()
}

/// The rows, sorted (for results whose order is unspecified).
pub(crate) fn sorted_rows(b: &RecordBatch) -> Vec<Vec<String>> {
    let mut r = rows(b);
    r.sort();
    r
}

pub(crate) fn table(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

fn names(b: &RecordBatch) -> Vec<String> {
    b.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

const SMALL_CSV: &str = "k,v,x\na,1,0.5\nb,2,1.5\na,3,\nc,,2.0\nb,5,4.0\na,6,1.0\n";

#[test]
fn csv_groupby_matches_a_hand_computed_table_under_every_chunking() {
    let s = session();
    let dir = TempDir::new("csv-groupby");
    let path = dir.file("small.csv", SMALL_CSV);
    let want = table(&[
        &["a", "10", "3.3333333333333335", "6", "1", "3", "1.5"],
        &["b", "7", "3.5", "5", "2", "2", "5.5"],
        &["c", "0", "", "", "", "0", "2.0"],
    ]);
    for chunk_bytes in [1, 7, 16, 40, 1 << 20] {
        let df = read_csv_with(
            &path,
            ReadCsv {
                chunk_bytes: Some(chunk_bytes),
                ..ReadCsv::default()
            },
        );
        let out = df
            .groupby(&["k"])
            .agg(&[
                ("v", &[Agg::Sum, Agg::Mean, Agg::Max, Agg::Min, Agg::Count]),
                ("x", &[Agg::Sum]),
            ])
            .execute(&s)
            .unwrap();
        assert_eq!(
            names(&out),
            ["k", "v_sum", "v_mean", "v_max", "v_min", "v_count", "x"],
            "chunk_bytes {chunk_bytes}"
        );
        assert_eq!(rows(&out), want, "chunk_bytes {chunk_bytes}");
    }
}

/// A deterministic table: key `g` with `groups` values (some null), int `v` (some null),
/// float `x`.
fn synthetic(n: usize, groups: i64) -> RecordBatch {
    let mut state = 12345u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut g = Vec::with_capacity(n);
    let mut v = Vec::with_capacity(n);
    let mut x = Vec::with_capacity(n);
    for _ in 0..n {
        let r = next();
        g.push((r % 17 != 0).then(|| format!("g{}", r as i64 % groups)));
        v.push((r % 11 != 0).then_some((next() % 100) as i64 - 50));
        x.push((next() % 10_000) as f64 / 100.0);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("g", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
        Field::new("x", DataType::Float64, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(g)) as ArrayRef,
            Arc::new(Int64Array::from(v)),
            Arc::new(Float64Array::from(x)),
        ],
    )
    .unwrap()
}

/// Per key: sum, count, min, max of v; size; sum of x.
type Expected = BTreeMap<String, (i64, i64, Option<i64>, Option<i64>, i64, f64)>;

/// groupby g: sum, count, min, max of v; size; sum of x — computed row by row.
fn reference_groupby(b: &RecordBatch) -> Expected {
    let g = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
    let v = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
    let x = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
    let mut out = BTreeMap::new();
    for i in 0..b.num_rows() {
        if g.is_null(i) {
            continue;
        }
        let e = out
            .entry(g.value(i).to_string())
            .or_insert((0, 0, None, None, 0, 0.0));
        if v.is_valid(i) {
            let val = v.value(i);
            e.0 += val;
            e.1 += 1;
            e.2 = Some(e.2.map_or(val, |m: i64| m.min(val)));
            e.3 = Some(e.3.map_or(val, |m: i64| m.max(val)));
        }
        e.4 += 1;
        e.5 += x.value(i);
    }
    out
}

/// Checks the groupby of `df` on `s` against `want`; the merges it ran.
fn check_groupby(s: &Session, df: &DataFrame, want: &Expected, label: &str) -> u64 {
    let (out, stats) = df
        .groupby(&["g"])
        .agg(&[
            ("v", &[Agg::Sum, Agg::Count, Agg::Min, Agg::Max, Agg::Size]),
            ("x", &[Agg::Sum]),
        ])
        .execute_with_stats(s)
        .unwrap();
    assert_eq!(out.num_rows(), want.len(), "{label}");
    let col = |i: usize| out.column(i).clone();
    let keys = col(0);
    let keys = keys.as_any().downcast_ref::<StringArray>().unwrap();
    let ints = |i: usize| {
        col(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .clone()
    };
    let (sum, count, min, max, size) = (ints(1), ints(2), ints(3), ints(4), ints(5));
    let xs = col(6);
    let xs = xs.as_any().downcast_ref::<Float64Array>().unwrap();
    for (r, (k, w)) in want.iter().enumerate() {
        assert_eq!(keys.value(r), k, "{label}: rows sorted by key");
        assert_eq!(sum.value(r), w.0, "{label} {k} sum");
        assert_eq!(count.value(r), w.1, "{label} {k} count");
        assert_eq!(
            min.is_valid(r).then(|| min.value(r)),
            w.2,
            "{label} {k} min"
        );
        assert_eq!(
            max.is_valid(r).then(|| max.value(r)),
            w.3,
            "{label} {k} max"
        );
        assert_eq!(size.value(r), w.4, "{label} {k} size");
        assert!(
            (xs.value(r) - w.5).abs() <= 1e-9 * w.5.abs().max(1.0),
            "{label} {k} x"
        );
    }
    stats.chunks_by_op.get("group_merge").copied().unwrap_or(0)
}

#[test]
fn groupby_agrees_with_a_row_by_row_reference_by_one_merge_by_tree_and_by_shuffle() {
    let batch = synthetic(5000, 40);
    let want = reference_groupby(&batch);
    let tree = session();
    let shuffle = session_from(builder().shuffle_rows(0));
    for rows_per_chunk in [1, 333, 1000, 5000] {
        let df = from_arrow(batch.clone(), Some(rows_per_chunk));
        let label = format!("unshuffled, {rows_per_chunk} rows per chunk");
        let merges = check_groupby(&tree, &df, &want, &label);
        // Partials of few rows in all merge in one task, unless there are too many of them
        // for one task (5,000 here): then in a tree.
        if rows_per_chunk == 1 {
            assert!(merges > 5000 / 8, "{label}: {merges} merges");
        } else {
            assert_eq!(merges, 1, "{label}");
        }
        check_groupby(
            &shuffle,
            &df,
            &want,
            &format!("shuffle, {rows_per_chunk} rows per chunk"),
        );
    }
}

#[test]
fn csv_and_parquet_files_give_the_same_groupby_as_memory() {
    let s = session();
    let dir = TempDir::new("roundtrip");
    let batch = synthetic(3000, 25);
    let want = reference_groupby(&batch);
    let frame = from_arrow(batch, Some(700));
    let csv = dir.0.join("t.csv");
    let parquet = dir.0.join("t.parquet");
    assert_eq!(frame.to_csv(&s, &csv, false).unwrap(), 3000);
    assert_eq!(frame.to_parquet(&s, &parquet, false).unwrap(), 3000);
    let options = ReadCsv {
        csv: CsvOptions {
            dtypes: vec![("v".into(), DataType::Int64)],
            ..CsvOptions::default()
        },
        chunk_bytes: Some(4096),
    };
    check_groupby(&s, &read_csv_with(&csv, options), &want, "csv");
    let pq = read_parquet_with(
        &parquet,
        ReadParquet {
            chunk_bytes: Some(1),
            ..ReadParquet::default()
        },
    );
    check_groupby(&s, &pq, &want, "parquet");
    // One file per chunk, read back by a glob.
    assert_eq!(
        frame.to_csv(&s, dir.0.join("part.csv"), true).unwrap(),
        3000
    );
    let parts = read_csv_with(
        dir.0.join("part-*.csv"),
        ReadCsv {
            csv: CsvOptions {
                dtypes: vec![("v".into(), DataType::Int64)],
                ..CsvOptions::default()
            },
            chunk_bytes: None,
        },
    );
    check_groupby(&s, &parts, &want, "csv parts");
}

#[test]
fn parquet_predicates_prune_row_groups_and_filter_rows() {
    let s = session();
    let dir = TempDir::new("pushdown");
    let n = 4000;
    let ids: Vec<i64> = (0..n).collect();
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let batch =
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids)) as ArrayRef]).unwrap();
    let path = dir.0.join("ids.parquet");
    // Four chunks of 1000 rows: one file of four row groups.
    assert_eq!(
        from_arrow(batch, Some(1000))
            .to_parquet(&s, &path, false)
            .unwrap(),
        4000
    );
    let read = |filter| {
        read_parquet_with(
            &path,
            ReadParquet {
                filter: Some(filter),
                chunk_bytes: Some(1),
                ..ReadParquet::default()
            },
        )
    };
    let df = read(col("id").ge(3990).and_(col("id").lt(3995)));
    let (out, stats) = df.execute_with_stats(&s).unwrap();
    assert_eq!(
        rows(&out),
        table(&[&["3990"], &["3991"], &["3992"], &["3993"], &["3994"]])
    );
    // Three of the four row groups are ruled out by their statistics and not read.
    assert_eq!(stats.chunks_by_op.get("read_parquet"), Some(&1));
    assert_eq!(df.len(&s).unwrap(), 5);

    // Every row group pruned: an empty frame of the schema, whose sum is 0 and whose
    // groupby has no groups (as pandas).
    let none = read(col("id").gt(10_000));
    let (out, stats) = none.execute_with_stats(&s).unwrap();
    assert_eq!((out.num_rows(), out.num_columns()), (0, 1));
    assert_eq!(stats.chunks_by_op.get("read_parquet"), None);
    assert_eq!(rows(&none.sum().execute(&s).unwrap()), table(&[&["0"]]));
    let grouped = none.groupby(&["id"]).size().execute(&s).unwrap();
    assert_eq!(grouped.num_rows(), 0);

    // A filter written after a join: pushed down to the file, it prunes its row groups too.
    let whole = read_parquet_with(
        &path,
        ReadParquet {
            chunk_bytes: Some(1),
            ..ReadParquet::default()
        },
    );
    let tens = from_arrow(
        RecordBatch::try_from_iter([(
            "id",
            Arc::new(Int64Array::from_iter_values((0..n).step_by(10))) as ArrayRef,
        )])
        .unwrap(),
        None,
    );
    let joined = whole
        .merge(&tens, &["id"], How::Inner)
        .filter(col("id").ge(3950).and_(col("id").lt(3990)));
    assert!(joined.explain().unwrap().contains("(1 row groups)"));
    let (out, stats) = joined.execute_with_stats(&s).unwrap();
    assert_eq!(
        rows(&out),
        table(&[&["3950"], &["3960"], &["3970"], &["3980"]])
    );
    assert_eq!(stats.chunks_by_op.get("read_parquet"), Some(&1));
}

/// Left and right tables for the join tests: duplicate keys, a null key, keys on one side only.
fn join_inputs() -> (RecordBatch, RecordBatch) {
    let left = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("a", DataType::Utf8, false),
            Field::new("v", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                Some(2),
                Some(3),
                None,
            ])) as ArrayRef,
            Arc::new(StringArray::from(vec!["l0", "l1", "l2", "l3", "l4"])),
            Arc::new(Int64Array::from(vec![10, 20, 21, 30, 40])),
        ],
    )
    .unwrap();
    let right = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("v", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![Some(2), Some(4), Some(2), None])) as ArrayRef,
            Arc::new(Int64Array::from(vec![200, 400, 201, 900])),
        ],
    )
    .unwrap();
    (left, right)
}

#[test]
fn joins_of_every_kind_match_hand_computed_tables_broadcast_or_shuffled() {
    let (left, right) = join_inputs();
    // pandas semantics: one key column `k`, suffixes _x/_y on `v`, null keys match.
    let inner = table(&[
        &["", "l4", "40", "900"],
        &["2", "l1", "20", "200"],
        &["2", "l1", "20", "201"],
        &["2", "l2", "21", "200"],
        &["2", "l2", "21", "201"],
    ]);
    let mut left_join = inner.clone();
    left_join.extend(table(&[&["1", "l0", "10", ""], &["3", "l3", "30", ""]]));
    left_join.sort();
    let mut right_join = inner.clone();
    right_join.extend(table(&[&["4", "", "", "400"]]));
    right_join.sort();
    let mut outer = left_join.clone();
    outer.extend(table(&[&["4", "", "", "400"]]));
    outer.sort();
    let broadcast = session();
    let shuffle = session_from(builder().broadcast_bytes(0));
    for s in [&*broadcast, &*shuffle] {
        for chunk in [1, 2, 5] {
            let l = from_arrow(left.clone(), Some(chunk));
            let r = from_arrow(right.clone(), Some(chunk.min(3)));
            for (how, want) in [
                (How::Inner, &inner),
                (How::Left, &left_join),
                (How::Right, &right_join),
                (How::Outer, &outer),
            ] {
                let out = l.merge(&r, &["k"], how).execute(s).unwrap();
                assert_eq!(names(&out), ["k", "a", "v_x", "v_y"]);
                assert_eq!(&sorted_rows(&out), want, "{how:?}, chunks of {chunk}");
            }
        }
    }
}

#[test]
fn sort_value_counts_drop_duplicates_concat_and_head() {
    let s = session();
    let dir = TempDir::new("misc");
    let path = dir.file("small.csv", SMALL_CSV);
    let df = read_csv_with(
        &path,
        ReadCsv {
            chunk_bytes: Some(12),
            ..ReadCsv::default()
        },
    );
    let sorted = df.sort_values(&["v"], false).execute(&s).unwrap();
    assert_eq!(
        rows(&sorted),
        table(&[
            &["a", "6", "1.0"],
            &["b", "5", "4.0"],
            &["a", "3", ""],
            &["b", "2", "1.5"],
            &["a", "1", "0.5"],
            &["c", "", "2.0"],
        ])
    );
    let counts = df.value_counts("k").execute(&s).unwrap();
    assert_eq!(
        rows(&counts),
        table(&[&["a", "3"], &["b", "2"], &["c", "1"]])
    );
    let distinct = df.drop_duplicates(Some(&["k"])).execute(&s).unwrap();
    assert_eq!(
        rows(&distinct),
        table(&[&["a", "1", "0.5"], &["b", "2", "1.5"], &["c", "", "2.0"]])
    );
    let twice = concat(&[df.clone(), df.clone()]);
    assert_eq!(twice.len(&s).unwrap(), 12);
    let head = df.head(2).execute(&s).unwrap();
    assert_eq!(
        rows(&head),
        table(&[&["a", "1", "0.5"], &["b", "2", "1.5"]])
    );
}

#[test]
fn reductions_and_describe_match_hand_computed_values() {
    let s = session();
    let dir = TempDir::new("reduce");
    let path = dir.file("small.csv", SMALL_CSV);
    let df = read_csv_with(
        &path,
        ReadCsv {
            chunk_bytes: Some(10),
            ..ReadCsv::default()
        },
    );
    assert_eq!(
        rows(&df.sum().execute(&s).unwrap()),
        table(&[&["17", "9.0"]])
    );
    assert_eq!(
        rows(&df.count().execute(&s).unwrap()),
        table(&[&["6", "5", "5"]])
    );
    assert_eq!(
        rows(&df.min().execute(&s).unwrap()),
        table(&[&["a", "1", "0.5"]])
    );
    assert_eq!(
        rows(&df.max().execute(&s).unwrap()),
        table(&[&["c", "6", "4.0"]])
    );
    assert_eq!(
        rows(&df.nunique().execute(&s).unwrap()),
        table(&[&["3", "5", "5"]])
    );
    // v: 1 2 3 5 6 → mean 3.4, sample variance 4.3.
    let var = df.select(&["v"]).var().execute(&s).unwrap();
    let var = var
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .value(0);
    assert!((var - 4.3).abs() < 1e-12, "{var}");
    let d = df.describe(&s).unwrap();
    assert_eq!(names(&d), ["statistic", "v", "x"]);
    let v = d.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
    assert_eq!(v.value(0), 5.0);
    assert!((v.value(1) - 3.4).abs() < 1e-12);
    assert!((v.value(2) - 4.3f64.sqrt()).abs() < 1e-12);
    assert_eq!((v.value(3), v.value(4)), (1.0, 6.0));
}

#[test]
fn expressions_filter_derive_and_group_by_date_parts() {
    let s = session();
    let dir = TempDir::new("expr");
    let path = dir.file(
        "trips.csv",
        "pickup,tip,fare,note\n\
         2021-03-04 05:06:07,1.0,10.0,card\n\
         2021-03-04 05:30:00,0.0,8.0,cash\n\
         2021-03-04 06:00:00,2.0,8.0,card extra\n\
         2021-03-05 05:59:59,3.0,12.0,\n\
         2021-03-05 07:00:00,1.0,0.0,card\n",
    );
    let taxi = read_csv_with(
        &path,
        ReadCsv {
            chunk_bytes: Some(50),
            ..ReadCsv::default()
        },
    );
    let tips = taxi
        .filter(col("tip").gt(0) & col("fare").gt(0))
        .with_column("tip_fraction", col("tip") / col("fare"))
        .groupby_expr(vec![col("pickup").dt_hour().alias("hour")])
        .agg(&[("tip_fraction", &[Agg::Mean])])
        .execute(&s)
        .unwrap();
    assert_eq!(names(&tips), ["hour", "tip_fraction"]);
    assert_eq!(rows(&tips), table(&[&["5", "0.175"], &["6", "0.25"]]));
    let cards = taxi
        .filter(col("note").str_contains("card"))
        .len(&s)
        .unwrap();
    assert_eq!(cards, 3);
    let nulls = taxi.filter(col("note").is_null()).len(&s).unwrap();
    assert_eq!(nulls, 1);
}

/// The error of a frame (carried from building, or from executing).
pub(crate) fn frame_error(s: &Session, df: &DataFrame) -> FrameError {
    match df.execute(s) {
        Err(Error::Frame(e)) => e,
        other => panic!("expected a frame error, got {other:?}"),
    }
}

#[test]
fn bad_input_gives_typed_errors_and_the_session_stays_usable() {
    let s = session();
    let dir = TempDir::new("errors");
    // A row with a missing field, on line 4.
    let ragged = dir.file("ragged.csv", "a,b\n1,2\n3,4\n5\n7,8\n");
    match frame_error(
        &s,
        &read_csv_with(
            &ragged,
            ReadCsv {
                chunk_bytes: Some(5),
                ..ReadCsv::default()
            },
        ),
    ) {
        FrameError::FieldCount {
            path,
            line,
            expected,
            found,
        } => {
            assert!(path.ends_with("ragged.csv"));
            assert_eq!((line, expected, found), (4, 2, 1));
        }
        other => panic!("{other:?}"),
    }
    // An unparsable number in a column declared Int64, on line 3.
    let bad = dir.file("bad.csv", "a,b\n1,2\n3,x4\n");
    let options = ReadCsv {
        csv: CsvOptions {
            dtypes: vec![("b".into(), DataType::Int64)],
            ..CsvOptions::default()
        },
        chunk_bytes: None,
    };
    match frame_error(&s, &read_csv_with(&bad, options)) {
        FrameError::Parse {
            path, line, column, ..
        } => {
            assert!(path.ends_with("bad.csv"));
            assert_eq!((line, column.as_str()), (3, "b"));
        }
        other => panic!("{other:?}"),
    }
    let good = read_csv(dir.file("good.csv", "k,v\nx,1\ny,2\n"));
    // Unknown columns and type mismatches are errors when the frame is built.
    let unknown = good.select(&["nope"]);
    assert!(matches!(
        unknown.error(),
        Some(Error::Frame(FrameError::ColumnNotFound { .. }))
    ));
    let mixed = good.with_column("z", col("k") + 1);
    assert!(matches!(
        mixed.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    let other = read_csv(dir.file("other.csv", "k,w\n1,2\n"));
    let join = good.merge(&other, &["k"], How::Inner);
    assert!(matches!(
        join.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    let sum_of_strings = good.groupby(&["v"]).agg(&[("k", &[Agg::Sum])]);
    assert!(matches!(
        sum_of_strings.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    // Empty and missing files.
    let empty = read_csv(dir.file("empty.csv", ""));
    assert!(matches!(
        empty.error(),
        Some(Error::Frame(FrameError::EmptyFile { .. }))
    ));
    let missing = read_csv(dir.0.join("missing.csv"));
    assert!(matches!(
        missing.error(),
        Some(Error::Frame(FrameError::Io { .. }))
    ));
    let missing_parquet = dataframe::read_parquet(dir.0.join("missing.parquet"));
    assert!(matches!(
        missing_parquet.error(),
        Some(Error::Frame(FrameError::Io { .. }))
    ));
    // The session still runs the next job.
    let out = good
        .groupby(&["k"])
        .agg(&[("v", &[Agg::Sum])])
        .execute(&s)
        .unwrap();
    assert_eq!(rows(&out), table(&[&["x", "1"], &["y", "2"]]));
}

/// Quoted fields holding line ends (LF and CRLF), delimiters and doubled quotes, in the
/// header too: every chunk size, down to one byte (range boundaries inside those fields),
/// reads the same rows as one range, and those rows are the hand-written ones.
#[test]
fn csv_with_multiline_quoted_fields_reads_the_same_under_every_chunk_size() {
    let s = session();
    let dir = TempDir::new("csv-multiline");
    let mut text = String::from("id,\"note,\nheader\",v\n");
    let mut want = Vec::new();
    for i in 0..12 {
        text += &format!("{i},\"one\r\ntwo \"\"q\"\", {i}\n\",{i}.5\n");
        want.push(vec![
            i.to_string(),
            format!("one\r\ntwo \"q\", {i}\n"),
            format!("{i}.5"),
        ]);
        if i % 5 == 0 {
            text += &format!("{},\"\",\n", 100 + i);
            want.push(vec![(100 + i).to_string(), String::new(), String::new()]);
        }
    }
    let path = dir.file("multi.csv", &text);
    let read = |chunk_bytes| {
        read_csv_with(
            &path,
            ReadCsv {
                chunk_bytes: Some(chunk_bytes),
                ..ReadCsv::default()
            },
        )
        .execute(&s)
        .unwrap()
    };
    let whole = read(1 << 20);
    assert_eq!(names(&whole), ["id", "note,\nheader", "v"]);
    assert_eq!(rows(&whole), want);
    for chunk_bytes in [1, 2, 3, 7, 16, 41, 100] {
        assert_eq!(rows(&read(chunk_bytes)), want, "chunk_bytes {chunk_bytes}");
    }
}
