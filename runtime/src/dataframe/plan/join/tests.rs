use super::super::FramePlanner;
use crate::dataframe::{col, from_arrow, lit, Agg, DataFrame, How};
use crate::{Progress, Session};
use arrow::array::{Array, Int64Array, RecordBatch};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `k = 0..4000` and `p = 2k`, in chunks of `rows` rows: the probe side.
fn probe(rows: usize) -> DataFrame {
    let k: Vec<i64> = (0..4000).collect();
    let p: Vec<i64> = k.iter().map(|k| 2 * k).collect();
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as _),
        ("p", Arc::new(Int64Array::from(p)) as _),
    ])
    .unwrap();
    from_arrow(batch, Some(rows))
}

/// The groups `g` of 24,000 rows (`g = i mod 3000`, eight rows each) with their sums of
/// `x`, kept where the sum is over `above`: `x` is 1, and 100 for groups 7, 1500 and 2999
/// (sums 8 and 800). By the estimates a fair share of 6,000 groups survives either way.
fn totals(above: i64, rows: usize) -> DataFrame {
    let g: Vec<i64> = (0..24_000).map(|i| i % 3000).collect();
    let x: Vec<i64> = g
        .iter()
        .map(|g| if [7, 1500, 2999].contains(g) { 100 } else { 1 })
        .collect();
    let batch = RecordBatch::try_from_iter([
        ("g", Arc::new(Int64Array::from(g)) as _),
        ("x", Arc::new(Int64Array::from(x)) as _),
    ])
    .unwrap();
    from_arrow(batch, Some(rows))
        .groupby(&["g"])
        .agg_as(&[("total", "x", Agg::Sum)])
        .filter(col("total").gt(lit(above)))
}

/// `frame` run by a planner of its own: the rows as `column -> values` (nulls as `None`),
/// in key order, and how many tasks each op ran.
type Run = (BTreeMap<i64, Vec<Option<i64>>>, BTreeMap<String, u64>);

fn run(frame: &DataFrame, columns: &[&str]) -> Run {
    run_with(frame, columns, 1024)
}

/// [`run`] in a session whose chunks hold `chunk_bytes` (a side of at most that many bytes
/// is broadcast whatever the other's rows).
fn run_with(frame: &DataFrame, columns: &[&str], chunk_bytes: usize) -> Run {
    let session = Session::builder()
        .threads(2)
        .chunk_bytes(chunk_bytes)
        .progress(Progress::Never)
        .build()
        .unwrap();
    let mut planner = FramePlanner::new(&session.inner);
    let out = planner.execute(frame.node().unwrap()).unwrap();
    let mut rows = BTreeMap::new();
    for t in &out {
        let ints = |c: &str| {
            let a = t.column_by_name(c).unwrap();
            let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
            (0..a.len())
                .map(|i| a.is_valid(i).then(|| a.value(i)))
                .collect::<Vec<_>>()
        };
        let keys = ints("k");
        let values: Vec<Vec<Option<i64>>> = columns.iter().map(|c| ints(c)).collect();
        for (row, key) in keys.into_iter().enumerate() {
            let key = key.expect("keys are not null");
            rows.insert(key, values.iter().map(|v| v[row]).collect());
        }
    }
    (rows, planner.stats.chunks_by_op.clone())
}

#[test]
fn a_side_guessed_large_but_small_when_computed_is_broadcast() {
    for (probe_rows, group_rows) in [(500, 4000), (333, 24_000)] {
        let small = || totals(100, group_rows);
        let special = |k: i64| [7, 1500, 2999].contains(&k);
        // Inner (either side may be hashed), left (the right), semi (the right's keys).
        let inner = probe(probe_rows).merge_on(&small(), &["k"], &["g"], How::Inner, ("", "_y"));
        let (rows, ops) = run(&inner, &["p", "total"]);
        let want: BTreeMap<i64, Vec<Option<i64>>> = (0..4000)
            .filter(|&k| special(k))
            .map(|k| (k, vec![Some(2 * k), Some(800)]))
            .collect();
        assert_eq!(rows, want);
        assert_eq!(ops.get("partition"), None, "{ops:?}");
        assert_eq!(ops.get("hash_side"), Some(&1), "{ops:?}");

        let left = probe(probe_rows).merge_on(&small(), &["k"], &["g"], How::Left, ("", "_y"));
        let (rows, ops) = run(&left, &["p", "total"]);
        let want: BTreeMap<i64, Vec<Option<i64>>> = (0..4000)
            .map(|k| (k, vec![Some(2 * k), special(k).then_some(800)]))
            .collect();
        assert_eq!(rows, want);
        assert_eq!(ops.get("partition"), None, "{ops:?}");

        let semi = probe(probe_rows).semi_join(&small(), &["k"], &["g"]);
        let (rows, ops) = run(&semi, &["p"]);
        let want: BTreeMap<i64, Vec<Option<i64>>> = (0..4000)
            .filter(|&k| special(k))
            .map(|k| (k, vec![Some(2 * k)]))
            .collect();
        assert_eq!(rows, want);
        assert_eq!(ops.get("partition"), None, "{ops:?}");
        assert_eq!(ops.get("distinct_keys"), Some(&1), "{ops:?}");
    }
}

#[test]
fn a_side_computed_first_and_found_large_is_shuffled_from_its_chunks() {
    for (probe_rows, group_rows) in [(500, 4000), (333, 24_000)] {
        // Every group kept: 3,000 rows, too many to hash for 4,000 probe rows on 2 threads.
        let all = totals(0, group_rows);
        let inner = probe(probe_rows).merge_on(&all, &["k"], &["g"], How::Inner, ("", "_y"));
        let (rows, ops) = run(&inner, &["p", "total"]);
        let want: BTreeMap<i64, Vec<Option<i64>>> = (0..3000)
            .map(|k| {
                let total = if [7, 1500, 2999].contains(&k) { 800 } else { 8 };
                (k, vec![Some(2 * k), Some(total)])
            })
            .collect();
        assert_eq!(rows, want);
        assert!(ops.get("partition").is_some_and(|&n| n > 0), "{ops:?}");
    }
}

/// `g = 2i` for `i` in `0..24,000` (the even numbers below 48,000), in chunks of `rows`.
fn evens(rows: usize) -> DataFrame {
    let g: Vec<i64> = (0..24_000).map(|i| 2 * i).collect();
    let batch = RecordBatch::try_from_iter([("g", Arc::new(Int64Array::from(g)) as _)]).unwrap();
    from_arrow(batch, Some(rows))
}

/// The rows `k < 30` of [`probe`] semi- and anti-joined with [`evens`] under two chunkings,
/// in a session of `chunk_bytes` chunks, are right, and the right side is reduced by the
/// left's distinct keys and what is left broadcast: two broadcasts of distinct keys (the
/// left's to the right's chunks, then the reduced right's) and no shuffle.
fn assert_right_reduced(chunk_bytes: usize) {
    for (probe_rows, right_rows) in [(500, 4000), (333, 24_000)] {
        let small = || probe(probe_rows).filter(col("k").lt(lit(30i64)));
        for (how, odd) in [(How::LeftSemi, false), (How::LeftAnti, true)] {
            let frame = match how {
                How::LeftSemi => small().semi_join(&evens(right_rows), &["k"], &["g"]),
                _ => small().anti_join(&evens(right_rows), &["k"], &["g"]),
            };
            let (rows, ops) = run_with(&frame, &["p"], chunk_bytes);
            let want: BTreeMap<i64, Vec<Option<i64>>> = (0..30)
                .filter(|k| (k % 2 == 1) == odd)
                .map(|k| (k, vec![Some(2 * k)]))
                .collect();
            assert_eq!(rows, want, "{how:?}");
            assert_eq!(ops.get("partition"), None, "{how:?} {ops:?}");
            assert_eq!(ops.get("distinct_keys"), Some(&2), "{how:?} {ops:?}");
        }
    }
}

#[test]
fn a_large_right_of_a_semi_or_anti_join_is_reduced_by_its_small_left_s_keys() {
    // The left keeps k < 30 (a range: a third of 4,000 rows by the estimate), too many to
    // broadcast the right's 24,000 keys to, and few beside them.
    assert_right_reduced(1024);
}

#[test]
fn a_right_with_many_times_its_left_s_rows_is_reduced_even_where_it_could_be_broadcast() {
    // Chunks of 1 MiB: the right's 24,000 keys (192 KB) could be broadcast as they are,
    // but the left keeps a third of 4,000 rows by the estimate, under a quarter of them.
    assert_right_reduced(1 << 20);
    // A right with fewer than four times the left's rows is broadcast as it is.
    let frame = probe(500).semi_join(
        &evens(4000).filter(col("g").lt(lit(8000i64))),
        &["k"],
        &["g"],
    );
    let (rows, ops) = run_with(&frame, &["p"], 1 << 20);
    assert_eq!(rows.len(), 2000);
    assert_eq!(ops.get("distinct_keys"), Some(&1), "{ops:?}");
}
