//! Memory tiers and failover: every injectable fault, at random positions over seeded
//! trials, on a tensor reduction, a tensor job that keeps its input, a shuffled groupby and
//! a shuffled join. The result equals the fault-free one bit for bit, the injector says the
//! fault fired, and the statistics show the recovery. Repeated faults end in the documented
//! error; tiny budgets spill and finish; a session leaves no threads, spill files or
//! reservations behind.

use crate::common::{builder, session_from, SpillParent};
use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use tessera::dataframe::{from_arrow, Agg, How};
use tessera::{
    tensor, Error, FaultInjector, FaultKind, FaultPoint, HostTensor, JobStats, KernelError,
    MemoryReading, SessionBuilder, Tensor,
};

/// What a workload computes: a tensor or a table.
#[derive(Debug, PartialEq)]
enum Answer {
    Tensor(HostTensor),
    Table(RecordBatch),
}

#[derive(Clone, Copy, Debug)]
enum Workload {
    /// Monte Carlo pi's inside count: fused reductions and a combine tree.
    Pi,
    /// `x - x.mean(axis=0)` over user data: input chunks stored and read twice, a large
    /// output kept until delivery.
    Centered,
    /// Groupby sum/count/mean/max through a hash shuffle.
    Groupby,
    /// An inner join through a hash shuffle, sorted.
    Join,
}

const WORKLOADS: [Workload; 4] = [
    Workload::Pi,
    Workload::Centered,
    Workload::Groupby,
    Workload::Join,
];

fn pi() -> Tensor {
    let d = tensor::random::default_rng(7).uniform(-1.0, 1.0, &[40_000, 2]);
    (&d * &d).sum_axis(1).sqrt().lt(1.0).sum()
}

fn centered() -> Tensor {
    let (rows, cols) = (600, 16);
    let data: Vec<f64> = (0..rows * cols)
        .map(|i| ((i * 7919) % 1000) as f64 / 8.0)
        .collect();
    let x = tensor::from_vec(data, &[rows, cols]).rechunk(&[50, cols]);
    &x - &x.mean_axis(0)
}

/// `n` rows of an integer key with `groups` values, an integer and a float column whose
/// values are quarters (sums are exact in any order).
fn table(n: usize, groups: u64, seed: u64) -> RecordBatch {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let (mut k, mut a, mut x) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        k.push((next() % groups) as i64);
        a.push(next() as i64 % 1000 - 500);
        x.push((next() % 400) as f64 / 4.0);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("a", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(k)),
        Arc::new(Int64Array::from(a)),
        Arc::new(Float64Array::from(x)),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

impl Workload {
    /// Runs the workload on a session built from `b`, with its statistics.
    fn run(self, b: SessionBuilder) -> tessera::Result<(Answer, JobStats, u64)> {
        let s = session_from(b.chunk_bytes(8 << 10).shuffle_rows(0).broadcast_bytes(0));
        let (answer, stats) = match self {
            Workload::Pi => s
                .execute_with_stats(&pi())
                .map(|(t, st)| (Answer::Tensor(t), st))?,
            Workload::Centered => s
                .execute_with_stats(&centered())
                .map(|(t, st)| (Answer::Tensor(t), st))?,
            Workload::Groupby => from_arrow(table(6000, 50, 1), Some(500))
                .groupby(&["k"])
                .agg(&[
                    ("a", &[Agg::Sum, Agg::Count, Agg::Max]),
                    ("x", &[Agg::Mean]),
                ])
                .execute_with_stats(&s)
                .map(|(t, st)| (Answer::Table(t), st))?,
            Workload::Join => {
                let left = from_arrow(table(3000, 200, 2), Some(400));
                let right = from_arrow(table(400, 200, 3), Some(100));
                left.merge(&right, &["k"], How::Inner)
                    .sort_values(&["k", "a_x", "a_y"], true)
                    .execute_with_stats(&s)
                    .map(|(t, st)| (Answer::Table(t), st))?
            }
        };
        let reserved = s.reserved_bytes();
        Ok((answer, stats, reserved))
    }
}

/// A fault-free run of `w`, and how many events of each point it had.
fn reference(w: Workload) -> (Answer, [u64; 3]) {
    let counter = Arc::new(
        FaultInjector::new()
            .on_nth(None, u64::MAX, FaultKind::Error)
            .on_nth(None, u64::MAX, FaultKind::DropChunk)
            .on_nth(None, u64::MAX, FaultKind::SpillWriteFails),
    );
    let (answer, _, _) = w
        .run(
            builder()
                .threads(1)
                .memory_budget(SPILL_BUDGET)
                .faults(counter.clone()),
        )
        .unwrap();
    let (plain, _, _) = w.run(builder()).unwrap();
    assert_eq!(
        plain, answer,
        "{w:?}: a tiny budget does not change the answer"
    );
    let events =
        [FaultPoint::Kernel, FaultPoint::Put, FaultPoint::Spill].map(|p| counter.events(p));
    (answer, events)
}

/// A host budget far below every workload's working set (chunks are 8 KiB).
const SPILL_BUDGET: u64 = 24 << 10;

const KINDS: [FaultKind; 8] = [
    FaultKind::Error,
    FaultKind::Panic,
    FaultKind::KillDevice,
    FaultKind::KillStorage,
    FaultKind::DropChunk,
    FaultKind::CorruptSpill,
    FaultKind::DeleteSpill,
    FaultKind::SpillWriteFails,
];

/// Checks that the statistics show the recovery from one fault of `kind`.
fn assert_recovered(kind: FaultKind, stats: &JobStats, label: &str) {
    let shown = match kind {
        FaultKind::Error | FaultKind::Panic => stats.retries == 1,
        FaultKind::KillDevice => stats.restarts == 1 && stats.retries >= 1,
        FaultKind::KillStorage => stats.restarts == 1 && stats.chunks_lost >= 1,
        FaultKind::DropChunk => stats.chunks_lost == 1 && stats.chunks_recomputed >= 1,
        // A damaged spill file whose chunk is released unread loses nothing.
        FaultKind::CorruptSpill | FaultKind::DeleteSpill => {
            stats.chunks_lost == 0 || stats.chunks_recomputed >= 1
        }
        FaultKind::SpillWriteFails => stats.storage.spill_failures >= 1,
        // Not among KINDS: a session's jobs read kept chunks inside the actors, never
        // through `read_kept` (a cluster worker's reads; see the actors' system tests).
        FaultKind::StallRead => false,
    };
    assert!(
        shown,
        "{label}: statistics do not show the recovery: {stats:?}"
    );
}

#[test]
fn every_fault_at_random_positions_leaves_the_result_unchanged() {
    let spill = SpillParent::new("recovery-random");
    let references: Vec<(Answer, [u64; 3])> = WORKLOADS.iter().map(|&w| reference(w)).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut recovered_losses = HashSet::new();
    for trial in 0..48usize {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let kind = KINDS[trial % KINDS.len()];
        let point = kind.point() as usize;
        // The workloads in turn, skipping one without events where this kind strikes (pi
        // never spills).
        let w = (0..WORKLOADS.len())
            .map(|i| (trial / KINDS.len() + trial + i) % WORKLOADS.len())
            .find(|&w| references[w].1[point] > 0)
            .unwrap();
        let (want, events) = &references[w];
        // Spill counts depend on timing: strike within the first third of them.
        let span = if kind.point() == FaultPoint::Spill {
            (events[point] / 3).max(1)
        } else {
            events[point]
        };
        let nth = 1 + state % span;
        let label = format!(
            "trial {trial}: {kind:?} at event {nth} of {:?}",
            WORKLOADS[w]
        );
        let faults = Arc::new(FaultInjector::new().on_nth(None, nth, kind));
        let b = builder()
            .threads(1)
            .memory_budget(SPILL_BUDGET)
            .spill_dir(&spill.0)
            .faults(faults.clone());
        let (got, stats, reserved) = WORKLOADS[w]
            .run(b)
            .unwrap_or_else(|e| panic!("{label}: the job failed: {e}"));
        assert_eq!(&got, want, "{label}");
        assert_eq!(faults.injected_of(kind), 1, "{label}: the fault fired once");
        assert_recovered(kind, &stats, &label);
        if stats.chunks_lost > 0 {
            recovered_losses.insert(kind);
        }
        assert_eq!(reserved, 0, "{label}: reservations left after the job");
        assert!(
            spill.entries().is_empty(),
            "{label}: spill files left: {:?}",
            spill.entries()
        );
    }
    for kind in [
        FaultKind::DropChunk,
        FaultKind::CorruptSpill,
        FaultKind::DeleteSpill,
    ] {
        assert!(
            recovered_losses.contains(&kind),
            "no {kind:?} trial lost a chunk that was needed"
        );
    }
}

#[test]
fn a_budget_ten_times_below_the_working_set_spills_and_finishes() {
    let spill = SpillParent::new("recovery-budget");
    // Pi keeps only counters; every other workload stores much more than a chunk.
    for w in [Workload::Centered, Workload::Groupby, Workload::Join] {
        let (want, unlimited, _) = w.run(builder()).unwrap();
        // The working set the store manages: what the unlimited run had reserved at most
        // (user data handed in is neither reserved nor spillable).
        let budget = unlimited.peak_host_reserved / 10;
        let (got, stats, reserved) = w
            .run(builder().memory_budget(budget).spill_dir(&spill.0))
            .unwrap();
        let label = format!("{w:?} at {budget} bytes");
        assert_eq!(got, want, "{label}");
        assert_eq!(reserved, 0, "{label}");
        assert!(
            stats.storage.bytes_spilled > 0,
            "{label} did not spill: {stats:?}"
        );
        assert!(stats.storage.bytes_read_back > 0, "{label}: {stats:?}");
        assert!(spill.entries().is_empty(), "{label}");
    }
    // A fake memory reading sizes the default budget: 70% of 32 KiB, so it spills too.
    let faults = Arc::new(FaultInjector::new().fake_memory(MemoryReading {
        total: 32 << 10,
        available: 16 << 10,
    }));
    let (got, stats, _) = Workload::Centered
        .run(builder().spill_dir(&spill.0).faults(faults.clone()))
        .unwrap();
    assert_eq!(got, Workload::Centered.run(builder()).unwrap().0);
    assert!(
        stats.storage.bytes_spilled > 0 && faults.injected() == 1,
        "{stats:?}"
    );
}

#[test]
fn an_unwritable_spill_folder_holds_chunks_in_memory_and_finishes() {
    let spill = SpillParent::new("recovery-unwritable");
    let not_a_folder = spill.0.join("file");
    std::fs::write(&not_a_folder, b"x").unwrap();
    let (want, _, _) = Workload::Centered.run(builder()).unwrap();
    let (got, stats, _) = Workload::Centered
        .run(
            builder()
                .memory_budget(SPILL_BUDGET)
                .spill_dir(&not_a_folder),
        )
        .unwrap();
    assert_eq!(got, want);
    assert!(
        stats.storage.spill_failures > 0 && stats.storage.bytes_spilled == 0,
        "{stats:?}"
    );
    assert!(
        stats.held_back > 0,
        "back-pressure held work back: {stats:?}"
    );
}

#[test]
fn repeated_faults_end_in_the_documented_errors() {
    // Every put dropped: the first chunk read is lost, recomputed, and lost again.
    let drop_all = Arc::new(FaultInjector::new().on_nth(None, 0, FaultKind::DropChunk));
    match Workload::Centered.run(builder().faults(drop_all)) {
        Err(Error::ChunkLost {
            losses: 2, cause, ..
        }) => {
            assert_eq!(cause, "not in storage")
        }
        other => panic!("expected ChunkLost after two losses, got {other:?}"),
    }
    // Storage killed at every put: restarted, and the chunk it died with is lost twice.
    let kill_storage = Arc::new(FaultInjector::new().on_nth(None, 0, FaultKind::KillStorage));
    match Workload::Groupby.run(builder().faults(kill_storage.clone())) {
        Err(Error::ChunkLost {
            losses: 2, cause, ..
        }) => {
            assert_eq!(cause, "the storage actor died")
        }
        other => panic!("expected ChunkLost after two storage deaths, got {other:?}"),
    }
    assert_eq!(kill_storage.injected_of(FaultKind::KillStorage), 2);
    // The device killed at every task: a task runs three times at most, then the job fails.
    let kill_device = Arc::new(FaultInjector::new().on_nth(None, 0, FaultKind::KillDevice));
    match Workload::Join.run(builder().faults(kill_device.clone())) {
        Err(Error::ChunkFailed {
            cause: KernelError::DeviceUnavailable(m),
            ..
        }) => assert_eq!(m, "device0 died"),
        other => panic!("expected a lost device, got {other:?}"),
    }
    assert_eq!(kill_device.injected_of(FaultKind::KillDevice), 3);
}

#[test]
fn sessions_leave_no_threads_spill_files_or_reservations_behind() {
    let spill = SpillParent::new("recovery-cleanup");
    let faults = Arc::new(
        FaultInjector::new()
            .on_nth(None, 3, FaultKind::KillDevice)
            .on_nth(None, 5, FaultKind::KillStorage),
    );
    let s = session_from(
        builder()
            .memory_budget(SPILL_BUDGET)
            .chunk_bytes(8 << 10)
            .spill_dir(&spill.0)
            .faults(faults.clone()),
    );
    let prefix = s.thread_prefix().to_string();
    let out = centered().execute(&s).unwrap();
    assert_eq!(out.shape(), &[600, 16]);
    assert_eq!(faults.injected(), 2);
    assert_eq!(s.reserved_bytes(), 0);
    s.shutdown().unwrap();
    let threads: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(&format!("{prefix}-")))
        .collect();
    assert!(threads.is_empty(), "threads left: {threads:?}");
    assert!(
        spill.entries().is_empty(),
        "spill files left: {:?}",
        spill.entries()
    );
    assert!(Path::new(&spill.0).exists());
}
