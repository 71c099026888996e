//! Joins that broadcast a side hashed once (the left or the right) against a nested-loop
//! join of the same rows, under several chunkings and beside the shuffled plan; their row
//! order; a hashed side lost, or spilled and read back.

use crate::common::{builder, session, session_from};
use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch};
use std::sync::Arc;
use tessera::dataframe::{from_arrow, How};
use tessera::{FaultInjector, FaultKind, JobStats, Session};

/// `n` rows: key `(i · step) mod keys` (null every 13th row) and the row number `id`.
fn keyed(n: i64, keys: i64, step: i64, id: &str) -> (RecordBatch, Vec<Option<i64>>) {
    let k: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 13 != 5).then_some((i * step) % keys))
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("k", Arc::new(Int64Array::from(k.clone()))),
        (id, Arc::new(Int64Array::from((0..n).collect::<Vec<_>>()))),
    ];
    (RecordBatch::try_from_iter(columns).unwrap(), k)
}

/// A join's (left id, right id) pairs.
type Pairs = Vec<(Option<i64>, Option<i64>)>;

/// The (left id, right id) pairs of a join, by nested loops (null keys match each other,
/// as in pandas), sorted.
fn nested_loops(l: &[Option<i64>], r: &[Option<i64>], how: How) -> Pairs {
    let mut out = Vec::new();
    for (i, a) in l.iter().enumerate() {
        let matches: Vec<usize> = (0..r.len()).filter(|&j| r[j] == *a).collect();
        out.extend(matches.iter().map(|&j| (Some(i as i64), Some(j as i64))));
        if matches.is_empty() && matches!(how, How::Left | How::Outer) {
            out.push((Some(i as i64), None));
        }
    }
    if matches!(how, How::Right | How::Outer) {
        for (j, b) in r.iter().enumerate() {
            if !l.contains(b) {
                out.push((None, Some(j as i64)));
            }
        }
    }
    out.sort();
    out
}

fn ids(out: &RecordBatch, name: &str) -> Vec<Option<i64>> {
    let c = out.column_by_name(name).unwrap();
    let c = c.as_any().downcast_ref::<Int64Array>().unwrap();
    (0..c.len())
        .map(|i| c.is_valid(i).then(|| c.value(i)))
        .collect()
}

fn pairs(out: &RecordBatch) -> Pairs {
    ids(out, "lid").into_iter().zip(ids(out, "rid")).collect()
}

fn hashed_sides(stats: &JobStats) -> u64 {
    stats.chunks_by_op.get("hash_side").copied().unwrap_or(0)
}

#[test]
fn either_side_hashed_once_joins_as_nested_loops_under_every_chunking() {
    let (small, sk) = keyed(60, 25, 7, "lid");
    let (large, lk) = keyed(900, 40, 11, "rid");
    let broadcast = session();
    let shuffle = session_from(builder().broadcast_bytes(0));
    for (s, plan) in [(&*broadcast, "broadcast"), (&*shuffle, "shuffle")] {
        for (small_rows, large_rows) in [(60, 900), (7, 100), (25, 33)] {
            let l = from_arrow(small.clone(), Some(small_rows));
            let r = from_arrow(large.clone(), Some(large_rows));
            for how in [How::Inner, How::Left, How::Right, How::Outer] {
                let label = format!("{plan}, {how:?}, chunks of {small_rows} and {large_rows}");
                let (out, stats) = l.merge(&r, &["k"], how).execute_with_stats(s).unwrap();
                let mut got = pairs(&out);
                got.sort();
                assert_eq!(got, nested_loops(&sk, &lk, how), "{label}");
                // Inner: the small left side hashed; left: the right side; right and
                // outer joins, and the shuffle session, hash none.
                let want = match (plan, how) {
                    ("broadcast", How::Inner | How::Left) => 1,
                    _ => 0,
                };
                assert_eq!(hashed_sides(&stats), want, "{label}");
            }
        }
    }
}

#[test]
fn an_inner_join_hashing_its_left_side_follows_the_right_side_s_chunks() {
    let (small, _) = keyed(30, 10, 3, "lid");
    let (large, _) = keyed(400, 10, 7, "rid");
    let s = session();
    let rows_per_chunk = 50;
    let (out, stats) = from_arrow(small, Some(30))
        .merge(&from_arrow(large, Some(rows_per_chunk)), &["k"], How::Inner)
        .execute_with_stats(&s)
        .unwrap();
    assert_eq!(hashed_sides(&stats), 1);
    // The right chunk of each row, then its left row, then its right row: in order.
    let order: Vec<(i64, i64, i64)> = pairs(&out)
        .into_iter()
        .map(|(l, r)| {
            let (l, r) = (l.unwrap(), r.unwrap());
            (r / rows_per_chunk as i64, l, r)
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    assert!(order.len() > 400, "{} rows", order.len());
}

/// The inner join of a 5,000-row left and a 40,000-row right on `s`, as sorted id pairs.
fn join_on(s: &Session) -> (Pairs, JobStats) {
    let (l, _) = keyed(5_000, 300, 7, "lid");
    let (r, _) = keyed(40_000, 500, 3, "rid");
    let (out, stats) = from_arrow(l, Some(1_000))
        .merge(&from_arrow(r, Some(2_000)), &["k"], How::Inner)
        .execute_with_stats(s)
        .unwrap();
    let mut got = pairs(&out);
    got.sort();
    (got, stats)
}

#[test]
fn a_hashed_side_lost_is_hashed_again_and_one_spilled_is_read_back() {
    let (_, lk) = keyed(5_000, 300, 7, "lid");
    let (_, rk) = keyed(40_000, 500, 3, "rid");
    let want = nested_loops(&lk, &rk, How::Inner);
    // Storage drops the hashed side as it arrives: lineage hashes it again.
    let faults = Arc::new(FaultInjector::new().on_nth(Some("hash_side"), 1, FaultKind::DropChunk));
    let s = session_from(builder().faults(faults.clone()));
    let (got, stats) = join_on(&s);
    assert_eq!(got, want, "dropped");
    assert_eq!(faults.injected(), 1);
    assert!(stats.chunks_recomputed >= 1, "{stats:?}");
    // A budget that holds about one chunk: the hashed side and the chunks probing it are
    // spilled and read back (the index is built again from the table).
    let s = session_from(
        builder()
            .threads(1)
            .memory_budget(400 << 10)
            .chunk_bytes(16 << 10)
            .broadcast_bytes(1 << 20),
    );
    let (got, stats) = join_on(&s);
    assert_eq!(got, want, "spilled");
    assert_eq!(hashed_sides(&stats), 1);
    assert!(stats.storage.chunks_spilled >= 1, "{stats:?}");
}

#[test]
fn a_side_past_a_chunk_is_broadcast_only_where_it_is_small_beside_the_other() {
    // Chunks of 16 KiB; sides of 80 KB (5,000 rows of two Int64 columns), 640 KB and 80 KB.
    let s = session_from(
        builder()
            .threads(2)
            .chunk_bytes(16 << 10)
            .broadcast_bytes(1 << 20),
    );
    let (small, sk) = keyed(5_000, 300, 7, "lid");
    let (large, lk) = keyed(40_000, 500, 3, "rid");
    let (same, mk) = keyed(5_000, 300, 11, "rid");
    for (right, rk, hashed) in [(large, lk, 1), (same, mk, 0)] {
        let (out, stats) = from_arrow(small.clone(), Some(1_000))
            .merge(&from_arrow(right, Some(1_000)), &["k"], How::Inner)
            .execute_with_stats(&s)
            .unwrap();
        let mut got = pairs(&out);
        got.sort();
        assert_eq!(got, nested_loops(&sk, &rk, How::Inner));
        // An eighth of the other side's rows (hashing a row costs about six partitions of
        // one per key, with one thread waiting): hashed once; as many: shuffled.
        assert_eq!(hashed_sides(&stats), hashed, "{} right rows", rk.len());
    }
}
