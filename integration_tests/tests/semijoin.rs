//! Semi, anti and mark joins end to end, and what pandas spells with them (`isin` with another
//! series, `merge(indicator=True)`): against nested loops over keys with nulls and duplicates,
//! under several chunkings, broadcast (the right's distinct keys) and shuffled; masks from a
//! mark join filtering their own frame, combined with other masks; typed errors.

use crate::common::{builder, session, session_from, TestSession};
use crate::dataframes::{rows, sorted_rows, table};
use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use std::sync::Arc;
use tessera::dataframe::{col, from_arrow, DataFrame, FrameError, How};
use tessera::{Error, Session};

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// `n` keys in `0..range` (xorshift), about one in `null_every` null.
fn keys(seed: u64, n: usize, range: u64, null_every: u64) -> Vec<Option<i64>> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (!x.is_multiple_of(null_every)).then_some(((x >> 8) % range) as i64)
        })
        .collect()
}

/// A left table `k`, `a` (row ids) and a right table `k`, `w` (whose rows must not show).
fn tables(right_nulls: bool) -> (RecordBatch, Vec<Option<i64>>, RecordBatch, Vec<Option<i64>>) {
    let lk = keys(0x9e37_79b9, 200, 40, 9);
    let mut rk = keys(0x85eb_ca6b, 90, 60, 7);
    if !right_nulls {
        rk.retain(Option::is_some);
    }
    let left = batch(vec![
        ("k", Arc::new(Int64Array::from(lk.clone()))),
        (
            "a",
            Arc::new(Int64Array::from_iter_values(0..lk.len() as i64)),
        ),
    ]);
    let right = batch(vec![
        ("k", Arc::new(Int64Array::from(rk.clone()))),
        (
            "w",
            Arc::new(Int64Array::from_iter_values(0..rk.len() as i64)),
        ),
    ]);
    (left, lk, right, rk)
}

/// The sessions of both plans: broadcast (every right here is small) and shuffle.
fn both_plans() -> [(TestSession, &'static str); 2] {
    [
        (session(), "broadcast"),
        (session_from(builder().broadcast_bytes(0)), "shuffle"),
    ]
}

/// Rows of `df` (sorted) and checks that the join was planned as `plan` says.
fn run(s: &Session, df: &DataFrame, plan: &str) -> Vec<Vec<String>> {
    let (out, stats) = df.execute_with_stats(s).unwrap();
    let ops = &stats.chunks_by_op;
    match plan {
        "broadcast" => assert!(
            ops.contains_key("distinct_keys") && !ops.contains_key("partition"),
            "{ops:?}"
        ),
        _ => assert!(
            ops.contains_key("partition") && !ops.contains_key("distinct_keys"),
            "{ops:?}"
        ),
    }
    sorted_rows(&out)
}

/// The left rows `(k, a)` whose key is (`want`) or is not among `right` (nulls equal).
fn by_hand(left: &[Option<i64>], right: &[Option<i64>], want: bool) -> Vec<Vec<String>> {
    let show = |k: &Option<i64>| k.map_or(String::new(), |v| v.to_string());
    let mut out: Vec<Vec<String>> = left
        .iter()
        .enumerate()
        .filter(|(_, k)| right.contains(k) == want)
        .map(|(i, k)| vec![show(k), i.to_string()])
        .collect();
    out.sort();
    out
}

#[test]
fn semi_anti_and_mark_joins_match_nested_loops_across_chunkings_and_plans() {
    for (s, plan) in both_plans() {
        for right_nulls in [true, false] {
            let (left, lk, right, rk) = tables(right_nulls);
            let (semi, anti) = (by_hand(&lk, &rk, true), by_hand(&lk, &rk, false));
            let mut marked: Vec<Vec<String>> = Vec::new();
            for (rows, mark) in [(&semi, "true"), (&anti, "false")] {
                marked.extend(rows.iter().map(|r| [r.clone(), vec![mark.into()]].concat()));
            }
            marked.sort();
            for chunk in [1, 7, 64] {
                let label = format!("{plan}, right nulls {right_nulls}, chunks of {chunk}");
                let l = from_arrow(left.clone(), Some(chunk));
                let r = from_arrow(right.clone(), Some(chunk.min(30)));
                assert_eq!(
                    run(&s, &l.semi_join(&r, &["k"], &["k"]), plan),
                    semi,
                    "{label}"
                );
                assert_eq!(
                    run(&s, &l.anti_join(&r, &["k"], &["k"]), plan),
                    anti,
                    "{label}"
                );
                let merged = l.merge(&r, &["k"], How::LeftSemi);
                assert_eq!(run(&s, &merged, plan), semi, "{label}");
                let mark = l.mark_join(&r, &["k"], &["k"], "found");
                assert_eq!(mark.columns().unwrap(), ["k", "a", "found"]);
                assert_eq!(run(&s, &mark, plan), marked, "{label}");
            }
        }
    }
}

#[test]
fn broadcast_joins_keep_left_order_within_chunks() {
    let (left, lk, right, rk) = tables(true);
    let s = session();
    let out = from_arrow(left, Some(16))
        .semi_join(&from_arrow(right, Some(16)), &["k"], &["k"])
        .execute(&s)
        .unwrap();
    let ids: Vec<i64> = rows(&out).iter().map(|r| r[1].parse().unwrap()).collect();
    let want: Vec<i64> = (0..lk.len() as i64)
        .filter(|&i| rk.contains(&lk[i as usize]))
        .collect();
    assert_eq!(ids, want);
}

#[test]
fn multi_column_and_numeric_keys_match_by_value() {
    let left = batch(vec![
        (
            "id",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(1),
                Some(2),
                None,
                Some(3),
            ])),
        ),
        (
            "s",
            Arc::new(StringArray::from(vec!["x", "y", "x", "x", "x"])),
        ),
    ]);
    let right = batch(vec![
        (
            "rid",
            Arc::new(Float64Array::from(vec![
                Some(1.0),
                Some(2.5),
                None,
                Some(1.0),
            ])),
        ),
        ("rs", Arc::new(StringArray::from(vec!["y", "x", "x", "y"]))),
        ("w", Arc::new(Int64Array::from(vec![0, 1, 2, 3]))),
    ]);
    for (s, plan) in both_plans() {
        for chunk in [1, 2, 5] {
            let l = from_arrow(left.clone(), Some(chunk));
            let r = from_arrow(right.clone(), Some(chunk));
            let semi = l.semi_join(&r, &["id", "s"], &["rid", "rs"]);
            // The left key stays Int64 (compared as Float64 through a hidden copy).
            assert_eq!(
                semi.schema().unwrap().field(0).data_type(),
                &DataType::Int64
            );
            assert_eq!(run(&s, &semi, plan), table(&[&["", "x"], &["1", "y"]]));
            let anti = l.anti_join(&r, &["id", "s"], &["rid", "rs"]);
            assert_eq!(
                run(&s, &anti, plan),
                table(&[&["1", "x"], &["2", "x"], &["3", "x"]])
            );
        }
    }
}

#[test]
fn isin_with_a_lazy_series_filters_its_own_frame_and_combines_with_other_masks() {
    let (left, lk, right, rk) = tables(true);
    let b: Vec<i64> = (0..lk.len() as i64).map(|i| (i * 7) % 10).collect();
    let left = batch(vec![
        ("k", Arc::clone(left.column(0))),
        ("a", Arc::clone(left.column(1))),
        ("b", Arc::new(Int64Array::from(b.clone()))),
    ]);
    // The values: a filtered lazy frame's column (keys of rows with even w).
    let rk_even: Vec<Option<i64>> = rk.iter().step_by(2).copied().collect();
    let want = |keep: &dyn Fn(usize) -> bool| {
        let mut out: Vec<Vec<String>> = (0..lk.len())
            .filter(|&i| keep(i))
            .map(|i| {
                let k = lk[i].map_or(String::new(), |v| v.to_string());
                vec![k, i.to_string(), b[i].to_string()]
            })
            .collect();
        out.sort();
        out
    };
    let isin = |i: usize| rk_even.contains(&lk[i]);
    let in_all = |i: usize| rk.contains(&lk[i]);
    for (s, plan) in both_plans() {
        for chunk in [3, 50] {
            let df = from_arrow(left.clone(), Some(chunk));
            let other = from_arrow(right.clone(), Some(chunk));
            let even = other.filter((col("w") % 2).eq(0));
            let mask = df.column("k").isin_series(&even.column("k"));
            assert!(mask.error().is_none(), "{:?}", mask.error());
            let label = format!("{plan}, chunks of {chunk}");
            assert_eq!(
                run(&s, &df.filter_series(&mask), plan),
                want(&isin),
                "{label}"
            );
            assert_eq!(
                run(&s, &df.filter_series(&!&mask), plan),
                want(&|i| !isin(i)),
                "{label}"
            );
            // With a plain mask of the frame, and with a second mark.
            let either = mask.or_(df.column("b").gt(6));
            assert_eq!(
                run(&s, &df.filter_series(&either), plan),
                want(&|i| isin(i) || b[i] > 6),
                "{label}"
            );
            let both = mask.and_(!&df.column("k").isin_series(&other.column("k")));
            assert!(
                run(&s, &df.filter_series(&both), plan).is_empty(),
                "{label}"
            );
            let xor = df.column("k").isin_series(&other.column("k")).and_(!&mask);
            assert_eq!(
                run(&s, &df.filter_series(&xor), plan),
                want(&|i| in_all(i) && !isin(i)),
                "{label}"
            );
            // Added as a column: the hidden mark columns are gone.
            let flagged = df.with_series("in_even", &mask);
            assert_eq!(flagged.columns().unwrap(), ["k", "a", "b", "in_even"]);
            let got = run(&s, &flagged, plan);
            let mut expect: Vec<Vec<String>> = want(&|_| true)
                .into_iter()
                .map(|mut r| {
                    let i: usize = r[1].parse().unwrap();
                    r.push(isin(i).to_string());
                    r
                })
                .collect();
            expect.sort();
            assert_eq!(got, expect, "{label}");
            // Its values alone, and a reduction of them.
            let count = mask.sum().item(&s).unwrap();
            let n = (0..lk.len()).filter(|&i| isin(i)).count() as i64;
            assert_eq!(count, tessera::dataframe::Literal::Int(n), "{label}");
        }
    }
}

#[test]
fn merge_indicator_gives_pandas_merge_values_and_left_only_is_the_anti_join() {
    let (left, lk, right, rk) = tables(true);
    for (s, plan) in [
        (session(), "broadcast"),
        (session_from(builder().broadcast_bytes(0)), "shuffle"),
    ] {
        for chunk in [5, 64] {
            let l = from_arrow(left.clone(), Some(chunk));
            let r = from_arrow(right.clone(), Some(chunk));
            let left_join =
                l.merge_indicator(&r, &["k"], &["k"], How::Left, ("_x", "_y"), "_merge");
            let left_only = left_join
                .filter(col("_merge").eq("left_only"))
                .select(&["k", "a"]);
            let (out, stats) = left_only.execute_with_stats(&s).unwrap();
            assert_eq!(
                sorted_rows(&out),
                by_hand(&lk, &rk, false),
                "{plan}, {chunk}"
            );
            assert_eq!(
                stats.chunks_by_op.contains_key("partition"),
                plan == "shuffle"
            );
            // Outer: each value counted by hand.
            let outer = l
                .merge_indicator(&r, &["k"], &["k"], How::Outer, ("_x", "_y"), "_merge")
                .execute(&s)
                .unwrap();
            let merge = outer.column(3);
            assert!(matches!(merge.data_type(), DataType::Dictionary(_, _)));
            let count = |v: &str| rows(&outer).iter().filter(|r| r[3] == v).count();
            let matches_of = |k: &Option<i64>| rk.iter().filter(|r| *r == k).count();
            let both: usize = lk.iter().map(matches_of).sum();
            let lonely_left = lk.iter().filter(|k| !rk.contains(k)).count();
            let lonely_right = rk.iter().filter(|k| !lk.contains(k)).count();
            assert_eq!(
                (count("both"), count("left_only"), count("right_only")),
                (both, lonely_left, lonely_right)
            );
            assert_eq!(merge.null_count(), 0);
        }
    }
}

/// The frame error `df` carries or its job returns.
fn error_of(s: &Session, df: &DataFrame) -> FrameError {
    match df.execute(s) {
        Err(Error::Frame(e)) => e,
        other => panic!("expected a frame error, got {other:?}"),
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let s = session();
    let (left, _, right, _) = tables(true);
    let df = from_arrow(left, Some(50));
    let other = from_arrow(right, Some(50));
    let strings = from_arrow(
        batch(vec![("k", Arc::new(StringArray::from(vec!["1", "2"])))]),
        None,
    );
    // A mask of another frame, for filtering or as a column.
    let foreign = other.column("k").isin_series(&df.column("k"));
    for bad in [df.filter_series(&foreign), df.with_series("x", &foreign)] {
        assert!(matches!(error_of(&s, &bad), FrameError::InvalidArgument(_)));
    }
    // Combining masks of different frames.
    let mixed = df.column("k").isin_series(&other.column("k")).or_(foreign);
    assert!(matches!(
        mixed.error(),
        Some(Error::Frame(FrameError::InvalidArgument(_)))
    ));
    // Values of another class, as for merge keys.
    let typed = df.column("k").isin_series(&strings.column("k"));
    assert!(matches!(
        typed.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    assert!(matches!(
        error_of(&s, &df.semi_join(&strings, &["k"], &["k"])),
        FrameError::TypeMismatch(_)
    ));
    // Unknown keys, a mark named like a column, an indicator on a semi join, a mark join
    // without a name.
    assert!(matches!(
        error_of(&s, &df.anti_join(&other, &["k"], &["nope"])),
        FrameError::ColumnNotFound { .. }
    ));
    assert!(matches!(
        error_of(&s, &df.mark_join(&other, &["k"], &["k"], "a")),
        FrameError::InvalidArgument(_)
    ));
    let semi_indicator = df.merge_indicator(
        &other,
        &["k"],
        &["k"],
        How::LeftSemi,
        ("_x", "_y"),
        "_merge",
    );
    assert!(matches!(
        error_of(&s, &semi_indicator),
        FrameError::InvalidArgument(_)
    ));
    assert!(matches!(
        error_of(&s, &df.merge(&other, &["k"], How::LeftMark)),
        FrameError::InvalidArgument(_)
    ));
    // The session still works.
    assert!(df.semi_join(&other, &["k"], &["k"]).len(&s).unwrap() > 0);
}
