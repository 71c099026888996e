//! Hash shuffles under a small memory budget (issue 13): a partition task's parts are chunks
//! of their own, so the merge or join of one part reads back only that part. A spilling
//! groupby or join gives the unlimited run's (and a row-by-row reference's) answer, and
//! reads back from disk at most what it spilled, not that times the number of parts.

use crate::common::{builder, session_from, SpillParent};
use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tessera::dataframe::{from_arrow, Agg, DataFrame, How};
use tessera::{FaultInjector, FaultKind, JobStats, SessionBuilder};

/// Far below the shuffled partials (about 1.5 MB here), so most parts are spilled.
const BUDGET: u64 = 128 << 10;

/// `rows` rows: key `k` (about `groups` distinct values, most in many chunks), `a` = the
/// row number plus `seed`, `x` a small multiple of 0.5 (sums exact in f64).
fn table(rows: i64, groups: i64, seed: i64) -> RecordBatch {
    let k: Vec<i64> = (0..rows).map(|i| (i * 7919 + seed) % groups).collect();
    let a: Vec<i64> = (0..rows).map(|i| i + seed).collect();
    let x: Vec<f64> = (0..rows).map(|i| (i % 100) as f64 * 0.5).collect();
    RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
        ("x", Arc::new(Float64Array::from(x)) as ArrayRef),
    ])
    .unwrap()
}

fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    let col = b.column_by_name(name).unwrap();
    col.as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .values()
        .to_vec()
}

fn floats(b: &RecordBatch, name: &str) -> Vec<f64> {
    let col = b.column_by_name(name).unwrap();
    col.as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .values()
        .to_vec()
}

/// Shuffle every groupby and join; `threads` sets the number of parts (twice as many).
fn shuffling(threads: usize) -> SessionBuilder {
    builder()
        .threads(threads)
        .shuffle_rows(0)
        .broadcast_bytes(0)
}

/// Runs `frame` on a session from `b`; its answer and statistics.
fn run(frame: &DataFrame, b: SessionBuilder) -> (RecordBatch, JobStats) {
    let s = session_from(b);
    frame.execute_with_stats(&s).unwrap()
}

/// Spilled, the job read back at most what it spilled: each part once, by its one reader
/// (reading every partition whole for each part would read back `parts` times as much).
fn assert_read_back_once(stats: &JobStats, label: &str) {
    let st = &stats.storage;
    assert!(st.bytes_spilled > 0, "{label} did not spill: {st:?}");
    assert!(st.bytes_read_back > 0, "{label} read nothing back: {st:?}");
    assert!(
        st.bytes_read_back <= st.bytes_spilled,
        "{label}: read back {} of {} spilled bytes",
        st.bytes_read_back,
        st.bytes_spilled
    );
    assert!(
        st.bytes_read_back <= stats.bytes_produced,
        "{label}: read back {} bytes, produced {}",
        st.bytes_read_back,
        stats.bytes_produced
    );
}

/// Per key: sum of a, count, max of a, sum of x — row by row.
fn reference_groupby(b: &RecordBatch) -> BTreeMap<i64, (i64, i64, i64, f64)> {
    let (k, a, x) = (ints(b, "k"), ints(b, "a"), floats(b, "x"));
    let mut out = BTreeMap::new();
    for i in 0..k.len() {
        let e = out.entry(k[i]).or_insert((0, 0, i64::MIN, 0.0));
        e.0 += a[i];
        e.1 += 1;
        e.2 = e.2.max(a[i]);
        e.3 += x[i];
    }
    out
}

#[test]
fn a_spilling_groupby_shuffle_reads_each_part_back_once_and_equals_the_reference() {
    let spill = SpillParent::new("shuffle-groupby");
    let data = table(40_000, 16_000, 3);
    let frame = from_arrow(data.clone(), Some(2_000))
        .groupby(&["k"])
        .agg(&[("a", &[Agg::Sum, Agg::Count, Agg::Max]), ("x", &[Agg::Sum])]);
    let (plain, plain_stats) = run(&frame, shuffling(4));
    let budget = || shuffling(4).memory_budget(BUDGET).spill_dir(&spill.0);
    let (tight, stats) = run(&frame, budget());
    assert_eq!(tight, plain);
    assert_read_back_once(&stats, "groupby");
    // Eight partitions (twice the threads), each one part of each of 20 partials, which
    // their own tasks cut into parts: no partition task. Without a budget, one merge a
    // partition; under 128 KB (5 KB a merge for 4 threads), each merges in runs first.
    assert_eq!(stats.chunks_by_op.get("group_partial"), Some(&20));
    assert_eq!(stats.chunks_by_op.get("partition"), None);
    let merges = |stats: &JobStats| stats.chunks_by_op.get("group_merge").copied();
    assert_eq!(merges(&plain_stats), Some(8));
    assert!(merges(&stats) > Some(16), "{:?}", merges(&stats));

    let want = reference_groupby(&data);
    assert_eq!(tight.num_rows(), want.len());
    let cols = |i: usize| {
        let c = tight.column(i);
        c.as_any().downcast_ref::<Int64Array>().unwrap().clone()
    };
    let (keys, sum, count, max) = (cols(0), cols(1), cols(2), cols(3));
    let xs = tight.column(4);
    let xs = xs.as_any().downcast_ref::<Float64Array>().unwrap();
    for (r, (k, w)) in want.iter().enumerate() {
        assert_eq!(keys.value(r), *k, "rows sorted by key");
        assert_eq!(
            (sum.value(r), count.value(r), max.value(r), xs.value(r)),
            *w,
            "key {k}"
        );
    }

    // A part dropped by storage is computed again (its partial task runs again).
    let faults =
        Arc::new(FaultInjector::new().on_nth(Some("group_partial"), 3, FaultKind::DropChunk));
    let (lossy, stats) = run(&frame, budget().faults(faults.clone()));
    assert_eq!(faults.injected(), 1);
    assert!(stats.chunks_recomputed >= 1, "{stats:?}");
    assert_eq!(lossy, plain);
    assert!(spill.entries().is_empty(), "{:?}", spill.entries());
}

#[test]
fn a_spilling_join_shuffle_reads_each_part_back_once_and_equals_the_reference() {
    let spill = SpillParent::new("shuffle-join");
    let (l, r) = (table(30_000, 12_000, 5), table(6_000, 12_000, 11));
    let frame = from_arrow(l.clone(), Some(2_000))
        .merge(&from_arrow(r.clone(), Some(2_000)), &["k"], How::Inner)
        .sort_values(&["k", "a_x", "a_y"], true);
    let (plain, plain_stats) = run(&frame, shuffling(2));
    let (tight, stats) = run(
        &frame,
        shuffling(2).memory_budget(BUDGET).spill_dir(&spill.0),
    );
    assert_eq!(tight, plain);
    assert_read_back_once(&stats, "join");
    // One partition task per chunk of either side; as many joins as the larger side has
    // chunks, and under the budget as many more as make each join's inputs fit a task's
    // share of it (the most a shuffle has: 256).
    assert_eq!(stats.chunks_by_op.get("partition"), Some(&18));
    assert_eq!(plain_stats.chunks_by_op.get("join"), Some(&15));
    let joins = stats.chunks_by_op.get("join").copied().unwrap_or(0);
    assert!((16..=256).contains(&joins), "{joins} joins");

    let mut right: HashMap<i64, Vec<i64>> = HashMap::new();
    for (k, a) in ints(&r, "k").into_iter().zip(ints(&r, "a")) {
        right.entry(k).or_default().push(a);
    }
    let mut want: Vec<(i64, i64, i64)> = Vec::new();
    for (k, a) in ints(&l, "k").into_iter().zip(ints(&l, "a")) {
        for &b in right.get(&k).map_or(&[][..], Vec::as_slice) {
            want.push((k, a, b));
        }
    }
    want.sort();
    let got: Vec<(i64, i64, i64)> = ints(&tight, "k")
        .into_iter()
        .zip(ints(&tight, "a_x"))
        .zip(ints(&tight, "a_y"))
        .map(|((k, a), b)| (k, a, b))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    assert!(spill.entries().is_empty(), "{:?}", spill.entries());
}
