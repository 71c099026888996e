//! Unit tests of the recorder: what a stream keeps, in which order, and within which bound;
//! and what the planner files in it for a real (simulated) job.

use super::*;
use crate::memory::UnboundedPool;
use crate::planner_state::{PlannerAction, PlannerState};
use crate::testing::chunk;
use crate::testing::graph;
use std::time::Duration;
use tessera_kernels::KernelError;

fn record(key: u64, op: &'static str, start: u64, end: u64, ok: bool) -> TaskRecord {
    TaskRecord {
        key: ChunkKey(key),
        op,
        device: DeviceId(0),
        span: RunSpan {
            start_ns: start,
            end_ns: end,
            thread: (key % 2) as u32,
        },
        bytes_in: 10 * key,
        bytes_out: key,
        attempt: 1,
        retry: false,
        recompute: false,
        ok,
    }
}

#[test]
fn a_stream_keeps_every_run_in_order_and_sums_them_per_op() {
    let mut s = TaskStream::new(JobId(1), 5, 100);
    s.record_task(record(1, "fused", 10, 30, true));
    s.record_task(record(2, "combine", 20, 25, true));
    s.record_task(record(3, "fused", 31, 40, false));
    s.record_task(record(4, "fused", 41, 50, true));
    let keys: Vec<u64> = s.tasks.iter().map(|r| r.key.0).collect();
    assert_eq!(
        keys,
        vec![1, 2, 3, 4],
        "filed in the order they were reported"
    );
    assert_eq!(s.tasks_dropped, 0);
    assert_eq!(s.runs(), 4);
    assert_eq!(
        s.ops,
        vec![
            OpSummary {
                op: "fused",
                tasks: 2,
                failed: 1,
                busy_ns: 20 + 9 + 9,
                bytes_in: 10 + 30 + 40,
                bytes_out: 1 + 3 + 4,
            },
            OpSummary {
                op: "combine",
                tasks: 1,
                failed: 0,
                busy_ns: 5,
                bytes_in: 20,
                bytes_out: 2,
            },
        ]
    );
}

#[test]
fn past_the_capacity_only_summaries_grow() {
    let mut s = TaskStream::new(JobId(0), 0, 1000);
    for k in 0..1_000_000u64 {
        s.record_task(record(
            k,
            if k % 3 == 0 { "a" } else { "b" },
            k,
            k + 2,
            true,
        ));
    }
    assert_eq!(s.tasks.len(), 1000, "records stop at the capacity");
    assert_eq!(s.tasks[999].key, ChunkKey(999), "the first ones are kept");
    assert_eq!(s.tasks_dropped, 999_000);
    assert_eq!(s.runs(), 1_000_000, "every run is in the summaries");
    let a = s.ops.iter().find(|o| o.op == "a").unwrap();
    assert_eq!((a.tasks, a.busy_ns), (333_334, 2 * 333_334));
    let mut none = TaskStream::new(JobId(0), 0, 0);
    none.record_task(record(1, "a", 0, 1, true));
    assert!(none.tasks.is_empty());
    assert_eq!((none.tasks_dropped, none.runs()), (1, 1));
}

#[test]
fn memory_samples_are_thinned_to_a_bound_keeping_peaks_and_order() {
    let mut s = TaskStream::new(JobId(0), 0, 10);
    let n = 100_000u64;
    for t in 0..n {
        // One spike in the middle.
        let reserved = if t == 54_321 { 1 << 40 } else { t % 1000 };
        s.sample_memory(t, reserved);
    }
    assert!(s.memory.len() <= MEMORY_SAMPLES, "{}", s.memory.len());
    assert!(s.memory.len() > MEMORY_SAMPLES / 4, "{}", s.memory.len());
    assert!(s.memory.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
    assert_eq!(s.memory[0].t_ns, 0);
    let peak = s.memory.iter().map(|m| m.reserved).max();
    assert_eq!(peak, Some(1 << 40), "the spike survives thinning");
    // Few samples are kept as they come.
    let mut few = TaskStream::new(JobId(0), 0, 10);
    for t in 0..5 {
        few.sample_memory(t, 10 * t);
    }
    let kept: Vec<(u64, u64)> = few.memory.iter().map(|m| (m.t_ns, m.reserved)).collect();
    assert_eq!(kept, vec![(0, 0), (1, 10), (2, 20), (3, 30), (4, 40)]);
}

#[test]
fn storage_logs_are_bounded() {
    let mut log = StorageLog::default();
    for k in 0..5 {
        let event = StorageEvent {
            kind: StorageEventKind::Spill,
            key: ChunkKey(k),
            bytes: 8,
            start_ns: k,
            end_ns: k + 1,
        };
        log.push(event, 3);
    }
    assert_eq!(log.events.len(), 3);
    assert_eq!(log.dropped, 2);
    assert_eq!(log.events[2].key, ChunkKey(2));
}

#[test]
fn spans_read_the_clock_only_when_recording() {
    let recorder = Recorder::new(10);
    let (v, span) = RunSpan::time(Some(&recorder), 3, || 7);
    assert_eq!(v, 7);
    assert!(span.start_ns <= span.end_ns);
    assert_eq!(span.thread, 3);
    let (_, off) = RunSpan::time(None, 3, || ());
    assert_eq!(off, RunSpan::default());
    assert!(recorder.since(recorder.epoch()) == 0);
}

/// Keys dispatched by `actions`, with their attempt numbers.
fn dispatches(actions: &[PlannerAction]) -> Vec<(u64, u64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Dispatch { key, attempt, .. } => Some((key.0, *attempt)),
            _ => None,
        })
        .collect()
}

/// Runs `key` (dispatch `attempt`) as a device would: its span, then its report.
fn run(
    p: &mut PlannerState,
    job: JobId,
    (key, attempt): (u64, u64),
    t: u64,
    result: Result<usize, KernelError>,
) -> Vec<PlannerAction> {
    let span = RunSpan {
        start_ns: t,
        end_ns: t + 5,
        thread: key as u32 % 2,
    };
    let (bytes, ok) = match &result {
        Ok(n) => (8 * *n as u64, true),
        Err(_) => (0, false),
    };
    p.record_run(job, ChunkKey(key), attempt, span, bytes, ok);
    let now = std::time::Instant::now();
    match result {
        Ok(n) => p.on_chunk_done(job, ChunkKey(key), attempt, chunk(n), Duration::ZERO, now),
        Err(e) => p.on_chunk_failed(job, ChunkKey(key), attempt, e),
    }
}

/// Delivers `job`, whose delivery `actions` start, and returns its statistics.
fn delivered(p: &mut PlannerState, job: JobId, actions: &[PlannerAction]) -> JobStats {
    let attempt = actions
        .iter()
        .find_map(|a| match a {
            PlannerAction::Deliver { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .unwrap();
    p.on_delivered(job, attempt, std::time::Instant::now())
        .unwrap()
}

#[test]
fn a_lineage_recompute_is_marked() {
    let mut p = PlannerState::new(UnboundedPool::new());
    p.set_recorder(Recorder::new(100));
    assert!(p.add_device(DeviceId(0), 1).is_empty());
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[1])], &[2]),
        std::time::Instant::now(),
    );
    let a = run(&mut p, job, dispatches(&a)[0], 10, Ok(1));
    // 2 finds its input lost: 1 is computed again first.
    let (key, attempt) = dispatches(&a)[0];
    let a = p.on_inputs_lost(job, ChunkKey(key), attempt, &[ChunkKey(1)], "gone");
    let a = run(&mut p, job, dispatches(&a)[0], 20, Ok(1));
    let a = run(&mut p, job, dispatches(&a)[0], 30, Ok(1));
    let stats = delivered(&mut p, job, &a);
    let got: Vec<(u64, bool)> = stats.stream[0]
        .tasks
        .iter()
        .map(|r| (r.key.0, r.recompute))
        .collect();
    assert_eq!(got, vec![(1, false), (1, true), (2, false)]);
    assert_eq!(stats.chunks_recomputed, 1);
}

#[test]
fn the_planner_files_one_record_per_run_with_bytes_and_retries() {
    let recorder = Recorder::new(100);
    let mut p = PlannerState::new(UnboundedPool::new());
    p.set_recorder(Arc::clone(&recorder));
    assert!(p.add_device(DeviceId(0), 1).is_empty());
    // 1 -> 2 -> 3 (output); 2 panics once.
    let g = graph(&[(1, &[]), (2, &[1]), (3, &[2])], &[3]);
    let (job, a) = p.submit(g, std::time::Instant::now());
    let a = run(&mut p, job, dispatches(&a)[0], 10, Ok(4));
    let first = dispatches(&a)[0];
    let a = run(
        &mut p,
        job,
        first,
        20,
        Err(KernelError::Panicked("x".into())),
    );
    let second = dispatches(&a)[0];
    assert_eq!(second.0, 2, "retried");
    // A stale report of the failed dispatch is not filed.
    p.record_run(job, ChunkKey(2), first.1, RunSpan::default(), 0, true);
    let a = run(&mut p, job, second, 30, Ok(2));
    let a = run(&mut p, job, dispatches(&a)[0], 40, Ok(1));
    let stats = delivered(&mut p, job, &a);
    assert_eq!(stats.stream.len(), 1);
    let s = &stats.stream[0];
    let got: Vec<(u64, u64, u64, u32, bool, bool)> = s
        .tasks
        .iter()
        .map(|r| {
            let (k, i, o) = (r.key.0, r.bytes_in, r.bytes_out);
            (k, i, o, r.attempt, r.retry, r.ok)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 0, 32, 1, false, true),
            (2, 32, 0, 1, false, false),
            (2, 32, 16, 2, true, true),
            (3, 16, 8, 1, false, true),
        ]
    );
    let ok = s.tasks.iter().filter(|r| r.ok).count() as u64;
    assert_eq!(
        ok, stats.chunks_run,
        "one successful record per completed task"
    );
    assert!(s.tasks.iter().all(|r| !r.recompute));
    assert!(s
        .tasks
        .windows(2)
        .all(|w| w[0].span.end_ns <= w[1].span.end_ns));
    assert_eq!(s.memory.len(), 4, "a memory sample per run");
    assert!(s.finished_ns >= s.submitted_ns);

    // Switched off, the next job records nothing.
    recorder.set_enabled(false);
    let (job, a) = p.submit(graph(&[(1, &[])], &[1]), std::time::Instant::now());
    let a = run(&mut p, job, dispatches(&a)[0], 50, Ok(1));
    let stats = delivered(&mut p, job, &a);
    assert!(stats.stream.is_empty());
}

/// What recording costs per task, measured (not asserted): a job of 100,000 independent
/// tasks driven through the planner's state machine with the recorder on and off, the
/// device's two clock reads included. Run it in release:
/// `cargo test --release -p tessera-actors cost_per_task -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
#[allow(clippy::print_stderr)]
fn cost_per_task() {
    let n = 100_000u64;
    let tasks: Vec<(u64, &[u64])> = (0..n).map(|k| (k, &[][..])).collect();
    let data = chunk(1);
    for on in [false, true, false, true, false, true] {
        let recorder = Recorder::new(DEFAULT_CAPACITY);
        recorder.set_enabled(on);
        let mut p = PlannerState::new(UnboundedPool::new());
        p.set_recorder(Arc::clone(&recorder));
        assert!(p.add_device(DeviceId(0), 16).is_empty());
        let started = Instant::now();
        let (job, a) = p.submit(graph(&tasks, &[0]), started);
        let mut queue: std::collections::VecDeque<(u64, u64)> = dispatches(&a).into();
        let mut ran = 0;
        while let Some((key, attempt)) = queue.pop_front() {
            let (_, span) = RunSpan::time(on.then_some(&*recorder), 0, || ());
            p.record_run(job, ChunkKey(key), attempt, span, 8, true);
            let now = Instant::now();
            let a = p.on_chunk_done(
                job,
                ChunkKey(key),
                attempt,
                Arc::clone(&data),
                Duration::ZERO,
                now,
            );
            queue.extend(dispatches(&a));
            ran += 1;
        }
        assert_eq!(ran, n);
        let per_task = started.elapsed().as_nanos() as f64 / n as f64;
        eprintln!(
            "recorder {}: {per_task:.0} ns per task",
            if on { "on " } else { "off" }
        );
    }
}

#[test]
fn a_stream_survives_the_wire_and_op_names_are_taken_once() {
    let mut s = TaskStream::new(JobId(4), 5, 100);
    s.record_task(record(1, "fused", 10, 30, true));
    s.record_task(record(2, "combine", 20, 25, false));
    s.storage.push(
        StorageEvent {
            kind: StorageEventKind::Spill,
            key: ChunkKey(1),
            bytes: 64,
            start_ns: 31,
            end_ns: 33,
        },
        10,
    );
    s.sample_memory(30, 128);
    let config = bincode::config::standard();
    let bytes = bincode::serde::encode_to_vec(&s, config).unwrap();
    let (back, read): (TaskStream, usize) =
        bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(read, bytes.len());
    assert_eq!(back, s);
    // A name decoded twice is one leaked string, not two.
    let (again, _): (TaskStream, usize) =
        bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert!(std::ptr::eq(back.tasks[0].op, again.tasks[0].op));
    assert!(std::ptr::eq(back.ops[1].op, again.tasks[1].op));
}
