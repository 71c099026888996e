//! Chunks a frame job hands from one stage to the next (a groupby's partials, while it
//! chooses a merge tree or a shuffle from their rows) are kept in the session's storage:
//! under its memory budget and spilled when larger, freed when the job ends, and when
//! storage loses them (its actor killed, a spill file damaged) the job still gives the
//! right answer.

use crate::common::{builder, eventually, session_from, SpillParent};
use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera::dataframe::{from_arrow, Agg, DataFrame, How};
use tessera::{FaultInjector, FaultKind, JobStats, SessionBuilder};

/// Below the partials handed on (0.8 to 1 MB here: up to 40,000 partial rows of three
/// 8-byte columns), so many of them are spilled.
const BUDGET: u64 = 512 << 10;

/// Asserts that a job's peak of reserved host memory stayed within the budget plus the
/// work in flight, which spilling cannot free (the partials handed on are not part of it:
/// they spill). The work in flight is bounded by the largest merge, whose inputs are
/// `largest` bytes (one of the four shuffle parts: about a quarter of all partials): one
/// merge is let past the budget when nothing else runs, holding its inputs and reserving
/// its output and working memory (each its inputs' size), and one more may have its
/// inputs read back while it starts.
fn assert_within_budget(stats: &JobStats, label: &str) {
    let largest = stats
        .stream
        .iter()
        .flat_map(|s| s.tasks.iter())
        .filter(|t| t.op == "group_merge")
        .map(|t| t.bytes_in)
        .max()
        .unwrap_or(0);
    assert!(largest > 0, "{label}: no merge in the task stream");
    let in_flight = 4 * largest;
    assert!(
        stats.peak_host_reserved <= BUDGET + in_flight,
        "{label}: {} reserved of {BUDGET}, {largest} bytes the largest merge's inputs",
        stats.peak_host_reserved
    );
}

/// `rows` rows: key `k` (`groups` distinct values, most in many chunks), `a` = the row
/// number plus `seed`.
fn table(rows: i64, groups: i64, seed: i64) -> RecordBatch {
    let k: Vec<i64> = (0..rows).map(|i| (i * 7919 + seed) % groups).collect();
    let a: Vec<i64> = (0..rows).map(|i| i + seed).collect();
    RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
    ])
    .unwrap()
}

fn ints(b: &RecordBatch, name: &str) -> Vec<i64> {
    let col = b.column_by_name(name).unwrap();
    let col = col.as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(col.null_count(), 0, "{name}");
    col.values().to_vec()
}

/// Per key: sum of `a` and count — row by row.
fn reference(b: &RecordBatch) -> BTreeMap<i64, (i64, i64)> {
    let mut out = BTreeMap::new();
    for (k, a) in ints(b, "k").into_iter().zip(ints(b, "a")) {
        let e = out.entry(k).or_insert((0, 0));
        e.0 += a;
        e.1 += 1;
    }
    out
}

/// The groupby `k → (sum of a, count of a)` over `data` in chunks of `per_chunk` rows.
fn sums(data: &RecordBatch, per_chunk: usize) -> DataFrame {
    from_arrow(data.clone(), Some(per_chunk))
        .groupby(&["k"])
        .agg(&[("a", &[Agg::Sum, Agg::Count])])
}

/// The rows of a `k, a_sum, a_count` table by key (each key once).
fn by_key(b: &RecordBatch) -> BTreeMap<i64, (i64, i64)> {
    let (k, s, c) = (ints(b, "k"), ints(b, "a_sum"), ints(b, "a_count"));
    let out: BTreeMap<i64, (i64, i64)> = k.iter().copied().zip(s.into_iter().zip(c)).collect();
    assert_eq!(out.len(), k.len(), "a key twice");
    out
}

/// Every groupby stage hands its partials on (no merge tree), every join shuffles, under
/// `BUDGET` spilling into `spill`.
fn tight(spill: &SpillParent) -> SessionBuilder {
    builder()
        .shuffle_rows(0)
        .broadcast_bytes(0)
        .memory_budget(BUDGET)
        .spill_dir(&spill.0)
}

/// The spill segment files under `spill` (its session's spill folder also holds a lock
/// file; emptied segments are kept until nothing has been spilled or read back for a
/// second).
fn spill_files(spill: &SpillParent) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "spill") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&spill.0, &mut out);
    out
}

#[test]
fn a_frame_groupby_handing_on_more_than_its_budget_spills_it_and_frees_it() {
    let spill = SpillParent::new("handover-groupby");
    let data = table(40_000, 16_000, 3);
    let want = reference(&data);
    let s = session_from(tight(&spill));
    for per_chunk in [1_000, 2_500, 6_000] {
        let (got, stats) = sums(&data, per_chunk).execute_with_stats(&s).unwrap();
        assert_eq!(by_key(&got), want, "{per_chunk} rows a chunk");
        let chunks = 40_000usize.div_ceil(per_chunk) as u64;
        // One partial task each, its rows counted beside it.
        assert_eq!(stats.chunks_by_op.get("group_partial"), Some(&chunks));
        let st = &stats.storage;
        assert!(st.bytes_spilled > BUDGET / 4, "{per_chunk}: {st:?}");
        assert_within_budget(&stats, &format!("{per_chunk} rows a chunk"));
        // After the job nothing is kept: no memory reserved, no spilled data left.
        assert!(
            eventually(|| s.reserved_bytes() == 0 && spill_files(&spill).is_empty()),
            "{per_chunk}: {} reserved, spill files {:?}",
            s.reserved_bytes(),
            spill_files(&spill)
        );
    }
}

#[test]
fn a_join_of_two_spilling_groupbys_hands_both_on_and_equals_the_reference() {
    // The left groupby's merges are planned before the right's partials run: the stage
    // that runs them hands their results on beside the right partials.
    let spill = SpillParent::new("handover-join");
    let (l, r) = (table(24_000, 9_000, 5), table(12_000, 9_000, 11));
    let (lw, rw) = (reference(&l), reference(&r));
    let mut want: Vec<(i64, i64, i64)> = lw
        .iter()
        .filter_map(|(k, (a, _))| rw.get(k).map(|(b, _)| (*k, *a, *b)))
        .collect();
    want.sort();
    assert!(!want.is_empty());
    let s = session_from(tight(&spill));
    for per_chunk in [1_500, 5_000] {
        let frame = sums(&l, per_chunk).merge(&sums(&r, per_chunk), &["k"], How::Inner);
        let (got, stats) = frame.execute_with_stats(&s).unwrap();
        let mut rows: Vec<(i64, i64, i64)> = ints(&got, "k")
            .into_iter()
            .zip(ints(&got, "a_sum_x"))
            .zip(ints(&got, "a_sum_y"))
            .map(|((k, a), b)| (k, a, b))
            .collect();
        rows.sort();
        assert_eq!(rows, want, "{per_chunk} rows a chunk");
        assert!(stats.storage.bytes_spilled > 0, "{:?}", stats.storage);
        assert_within_budget(&stats, &format!("join, {per_chunk} rows a chunk"));
        assert!(eventually(
            || s.reserved_bytes() == 0 && spill_files(&spill).is_empty()
        ));
    }
}

#[test]
fn a_frame_job_whose_storage_loses_a_handed_on_chunk_still_answers_right() {
    let data = table(30_000, 12_000, 7);
    let want = reference(&data);
    // The storage actor dies while the second stage runs (the partials handed on are
    // lost with it); a partial's spilled bytes are damaged or wiped.
    let faults = [
        (Some("group_merge"), 1, FaultKind::KillStorage),
        (Some("group_merge"), 3, FaultKind::KillStorage),
        (Some("group_partial"), 3, FaultKind::DeleteSpill),
        (Some("group_partial"), 5, FaultKind::CorruptSpill),
    ];
    for (op, nth, kind) in faults {
        for per_chunk in [1_000, 4_000] {
            let spill = SpillParent::new("handover-faults");
            let injector = Arc::new(FaultInjector::new().on_nth(op, nth, kind));
            let s = session_from(tight(&spill).faults(Arc::clone(&injector)));
            let got = sums(&data, per_chunk).execute(&s).unwrap();
            let label = format!("{kind:?} at {op:?} {nth}, {per_chunk} rows a chunk");
            assert_eq!(injector.injected_of(kind), 1, "{label}");
            assert_eq!(by_key(&got), want, "{label}");
            assert!(eventually(|| s.reserved_bytes() == 0), "{label}");
        }
    }
}
