//! Persisted data lives in the session's storage: under the host memory budget (spilled to
//! disk when larger, its memory freed), read by later jobs without computing it again,
//! freed when dropped, and computed again from its expression when storage loses it or
//! another session reads it.

use crate::common::{builder, eventually, exclusive, session_from, SpillParent, TestSession};
use crate::dataframes::sorted_rows;
use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use std::sync::Arc;
use tessera::dataframe::{col, from_arrow, lit, Agg, DataFrame};
use tessera::{
    tensor, FaultInjector, FaultKind, HostTensor, MemoryReading, SessionBuilder, Slice, Tensor,
};

/// A session spilling under `spill` with `chunk` bytes per chunk and a host budget of
/// `host` bytes (70% of a faked memory reading), with the fault rules of `faults`.
fn spilling(spill: &SpillParent, chunk: usize, host: u64, faults: FaultInjector) -> TestSession {
    spilling_with(spill, chunk, host, faults).0
}

/// [`spilling`], and the session's fault injector.
fn spilling_with(
    spill: &SpillParent,
    chunk: usize,
    host: u64,
    faults: FaultInjector,
) -> (TestSession, Arc<FaultInjector>) {
    let (b, faults) = spilling_builder(spill, chunk, host, faults);
    (session_from(b), faults)
}

/// The builder of [`spilling`]'s session, and its fault injector.
fn spilling_builder(
    spill: &SpillParent,
    chunk: usize,
    host: u64,
    faults: FaultInjector,
) -> (SessionBuilder, Arc<FaultInjector>) {
    let reading = MemoryReading {
        total: host / 7 * 10,
        available: host / 7 * 10,
    };
    let faults = Arc::new(faults.fake_memory(reading));
    let b = builder()
        .chunk_bytes(chunk)
        .spill_dir(&spill.0)
        .faults(Arc::clone(&faults));
    (b, faults)
}

/// `3·i + 1` for `i` in `0..n`.
pub(crate) fn line(n: usize) -> Tensor {
    let x = tensor::arange_f64(0.0, n as f64, 1.0);
    &(&x * 3.0) + 1.0
}

fn assert_line(out: &HostTensor, n: usize) {
    let v = out.as_slice::<f64>().expect("f64");
    assert_eq!(v.len(), n);
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(x, 3.0 * i as f64 + 1.0, "element {i}");
    }
}

/// The sum of `3·i + 1` for `i` in `0..n`, exactly.
pub(crate) fn line_sum(n: usize) -> f64 {
    let n = n as f64;
    3.0 * n * (n - 1.0) / 2.0 + n
}

/// Resident memory of this process (Linux), in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[test]
fn a_persisted_input_larger_than_memory_spills_frees_its_memory_and_is_reused() {
    // Alone in the process, so that resident memory is this test's.
    let _alone = exclusive();
    const N: usize = 24 << 20; // 192 MiB of f64
    const HOST: u64 = 7 << 22; // 28 MiB
    let spill = SpillParent::new("persist-large");
    // A session of its own (the others' hold the guard this test holds exclusively).
    let s = spilling_builder(&spill, 4 << 20, HOST, FaultInjector::new())
        .0
        .build()
        .unwrap();
    let before = rss();
    let p = line(N).persist(&s).unwrap();
    let held = rss().saturating_sub(before);
    // Kept under the budget: the rest is on disk, and its memory was given back.
    assert!(
        s.reserved_bytes() <= HOST,
        "{} reserved",
        s.reserved_bytes()
    );
    assert!(
        spill.bytes() >= (N as u64 * 8) - HOST,
        "{} on disk",
        spill.bytes()
    );
    assert!(
        held < 128 << 20,
        "persisting 192 MiB under a 28 MiB budget grew resident memory by {held} bytes"
    );
    // Later jobs read it (spilled chunks read back) without computing it again.
    for _ in 0..2 {
        let (sum, stats) = s.execute_with_stats(&p.sum()).unwrap();
        assert_eq!(sum.to_f64_vec(), [line_sum(N)]);
        assert!(stats.storage.bytes_read_back > 0, "{stats:?}");
        assert!(!stats.chunks_by_op.contains_key("fused"), "{stats:?}");
        assert!(s.reserved_bytes() <= HOST);
    }
    // Dropping the tensor frees its memory and its spill files.
    drop(p);
    assert!(eventually(
        || s.reserved_bytes() == 0 && spill.bytes() < 4096
    ));
}

#[test]
fn a_persisted_tensor_is_right_under_every_chunking_and_freed_when_dropped() {
    let spill = SpillParent::new("persist-chunkings");
    for chunk in [8usize, 24, 800, 1 << 20] {
        let s = spilling(&spill, chunk, 7 << 10, FaultInjector::new());
        let p = line(1000).persist(&s).unwrap();
        assert_line(&p.execute(&s).unwrap(), 1000);
        let twice = (&p + &p).execute(&s).unwrap();
        let v = twice.to_f64_vec();
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == 6.0 * i as f64 + 2.0));
        // A persisted tensor persisted again, and its slices.
        let again = p
            .slice(&[Slice::new(Some(10), Some(20), 1)])
            .persist(&s)
            .unwrap();
        let want: Vec<f64> = (10..20).map(|i| 3.0 * i as f64 + 1.0).collect();
        assert_eq!(again.execute(&s).unwrap().to_f64_vec(), want);
        drop((p, again));
        assert!(eventually(|| s.reserved_bytes() == 0), "chunk {chunk}");
    }
}

#[test]
fn persisted_data_lost_with_its_storage_is_computed_again() {
    // The first reduction's output kills the storage actor, losing every kept chunk.
    let spill = SpillParent::new("persist-kill");
    let faults = FaultInjector::new().on_nth(Some("fused_reduce"), 1, FaultKind::KillStorage);
    let (s, faults) = spilling_with(&spill, 8 << 10, 7 << 20, faults);
    let p = line(100_000).persist(&s).unwrap();
    let sum = p.sum().execute(&s).unwrap();
    assert_eq!(sum.to_f64_vec(), [line_sum(100_000)]);
    assert_eq!(faults.injected_of(FaultKind::KillStorage), 1);
    assert_line(&p.execute(&s).unwrap(), 100_000);
}

#[test]
fn a_damaged_spill_file_of_persisted_data_is_computed_again() {
    let spill = SpillParent::new("persist-corrupt");
    for kind in [FaultKind::CorruptSpill, FaultKind::DeleteSpill] {
        let faults = FaultInjector::new().on_nth(Some("fused"), 2, kind);
        let (s, faults) = spilling_with(&spill, 8 << 10, 7 << 12, faults);
        let p = line(100_000).persist(&s).unwrap();
        assert_line(&p.execute(&s).unwrap(), 100_000);
        assert_eq!(faults.injected_of(kind), 1);
        assert_eq!(
            p.sum().execute(&s).unwrap().to_f64_vec(),
            [line_sum(100_000)]
        );
    }
}

#[test]
fn another_session_computes_a_persisted_tensor_again_in_its_own_storage() {
    let spill = SpillParent::new("persist-foreign");
    let a = spilling(&spill, 8 << 10, 7 << 20, FaultInjector::new());
    let b = spilling(&spill, 8 << 10, 7 << 20, FaultInjector::new());
    let p = line(5000).persist(&a).unwrap();
    // b has jobs of its own with the same numbers as a's: its storage's chunk ids collide
    // with a's, so reading a's ids there would read the wrong data.
    let other = (&line(5000) * 0.0).persist(&b).unwrap();
    assert_line(&p.execute(&b).unwrap(), 5000);
    assert_line(&p.execute(&a).unwrap(), 5000);
    assert!(other
        .execute(&b)
        .unwrap()
        .to_f64_vec()
        .iter()
        .all(|&x| x == 0.0));
    drop(a);
    assert_line(&p.execute(&b).unwrap(), 5000);
}

/// `k` = `i mod 7`, `v` = `i` as f64, for `i` in `0..n`, in chunks of `per_chunk` rows.
pub(crate) fn frame(n: usize, per_chunk: usize) -> DataFrame {
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n as i64).map(|i| i % 7)));
    let v: ArrayRef = Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64)));
    from_arrow(
        RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap(),
        Some(per_chunk),
    )
}

/// Rows `k, sum of v` over `i` in `n/2..n`, by hand.
pub(crate) fn upper_sums(n: usize) -> Vec<Vec<String>> {
    let mut sums = [0.0f64; 7];
    for i in n / 2..n {
        sums[i % 7] += i as f64;
    }
    let mut rows: Vec<Vec<String>> = (0..7)
        .map(|k| vec![k.to_string(), format!("{:?}", sums[k])])
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_persisted_frame_spills_answers_like_the_query_and_survives_its_storage() {
    let spill = SpillParent::new("persist-frame");
    let n = 60_000;
    let faults = FaultInjector::new().on_nth(Some("group_partial"), 1, FaultKind::KillStorage);
    let (s, faults) = spilling_with(&spill, 8 << 10, 7 << 12, faults);
    let upper = frame(n, 1000).filter(col("v").gt(lit((n / 2) as f64 - 0.5)));
    let p = upper.persist(&s).unwrap();
    assert_eq!(p.len(&s).unwrap(), n / 2);
    let sums = |df: &DataFrame| {
        let b = df
            .groupby(&["k"])
            .agg(&[("v", &[Agg::Sum])])
            .execute(&s)
            .unwrap();
        sorted_rows(&b)
    };
    assert_eq!(sums(&p), upper_sums(n), "after the storage actor died");
    assert_eq!(sums(&p), sums(&upper));
    assert_eq!(faults.injected_of(FaultKind::KillStorage), 1);
    drop(p);
    assert!(eventually(|| s.reserved_bytes() == 0));
}
