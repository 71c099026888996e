//! Unit tests of the planner state machine.

use super::*;
use crate::graph::tests::graph;
use crate::store::tests::chunk;

const CPU: DeviceId = DeviceId(0);

fn keys(ks: &[u64]) -> Vec<ChunkKey> {
    ks.iter().map(|&k| ChunkKey(k)).collect()
}

/// The keys dispatched by `actions`, in order.
fn dispatched(actions: &[PlannerAction]) -> Vec<u64> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Dispatch { key, .. } => Some(key.0),
            _ => None,
        })
        .collect()
}

/// The keys released by `actions`, in order.
fn released(actions: &[PlannerAction]) -> Vec<u64> {
    actions
        .iter()
        .flat_map(|a| match a {
            PlannerAction::Release { keys, .. } => keys.iter().map(|k| k.0).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn planner(slots: usize) -> PlannerState {
    let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
    assert!(p.add_device(CPU, slots).is_empty());
    p
}

/// The attempt number of `key`'s dispatch in flight (an unused one if none is).
pub(super) fn attempt(p: &PlannerState, job: JobId, key: u64) -> u64 {
    p.in_flight
        .get(&(job, ChunkKey(key)))
        .map_or(u64::MAX, |f| f.attempt)
}

pub(super) fn done(p: &mut PlannerState, job: JobId, key: u64, n: usize) -> Vec<PlannerAction> {
    let attempt = attempt(p, job, key);
    p.on_chunk_done(
        job,
        ChunkKey(key),
        attempt,
        chunk(n),
        Duration::ZERO,
        Instant::now(),
    )
}

fn failed(p: &mut PlannerState, job: JobId, key: u64, cause: KernelError) -> Vec<PlannerAction> {
    let attempt = attempt(p, job, key);
    p.on_chunk_failed(job, ChunkKey(key), attempt, cause)
}

/// The delivery `actions` start, as (outputs, attempt).
fn delivery(actions: &[PlannerAction]) -> Option<(Vec<u64>, u64)> {
    actions.iter().find_map(|a| match a {
        PlannerAction::Deliver {
            outputs, attempt, ..
        } => Some((outputs.iter().map(|k| k.key.0).collect(), *attempt)),
        _ => None,
    })
}

/// The error of the job failure in `actions`.
fn failure(actions: &[PlannerAction]) -> Option<&JobError> {
    actions.iter().find_map(|a| match a {
        PlannerAction::JobFailed { error, .. } => Some(error),
        _ => None,
    })
}

/// Delivers `job` as the store would, returning its statistics.
pub(super) fn deliver(p: &mut PlannerState, job: JobId, actions: &[PlannerAction]) -> JobStats {
    let (_, attempt) = delivery(actions).expect("delivery starts");
    p.on_delivered(job, attempt, Instant::now())
        .expect("delivered")
}

#[test]
fn dispatches_in_depth_first_priority_within_slots() {
    // a0 a1 -> s ; b0 b1 -> t ; s t -> r
    let g = graph(
        &[
            (10, &[]),
            (11, &[]),
            (12, &[10, 11]),
            (20, &[]),
            (21, &[]),
            (22, &[20, 21]),
            (30, &[12, 22]),
        ],
        &[30],
    );
    let mut p = planner(2);
    let (job, actions) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&actions), vec![10, 11]);
    assert_eq!(dispatched(&done(&mut p, job, 10, 1)), vec![20]);
    // s (position 2) is now ready and goes before b1 (position 4).
    assert_eq!(dispatched(&done(&mut p, job, 11, 1)), vec![12]);
    assert_eq!(dispatched(&done(&mut p, job, 20, 1)), vec![21]);
    assert_eq!(dispatched(&done(&mut p, job, 12, 1)), Vec::<u64>::new());
    assert_eq!(dispatched(&done(&mut p, job, 21, 1)), vec![22]);
    assert_eq!(dispatched(&done(&mut p, job, 22, 1)), vec![30]);
    assert_eq!(p.in_flight(), 1);
}

#[test]
fn releases_after_last_consumer_and_keeps_outputs() {
    // 1 -> 2, 1 -> 3 ; 2 3 -> 4 ; outputs: 4 and 1 (1 is also read).
    let g = graph(&[(1, &[]), (2, &[1]), (3, &[1]), (4, &[2, 3])], &[4, 1]);
    let mut p = planner(4);
    let (job, actions) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&actions), vec![1]);
    let a = done(&mut p, job, 1, 1);
    assert!(matches!(
        a[0],
        PlannerAction::Store {
            key: ChunkKey(1),
            ..
        }
    ));
    assert_eq!(dispatched(&a), vec![2, 3]);
    assert_eq!(released(&done(&mut p, job, 2, 1)), Vec::<u64>::new());
    // 3 done: 1 has no readers left but is an output, so it stays.
    assert_eq!(released(&done(&mut p, job, 3, 1)), Vec::<u64>::new());
    let a = done(&mut p, job, 4, 1);
    assert_eq!(released(&a), vec![2, 3]);
    assert_eq!(delivery(&a).unwrap().0, vec![4, 1]);
    assert!(p.is_running(job), "running until delivered");
    deliver(&mut p, job, &a);
    assert!(!p.is_running(job));
}

#[test]
fn unread_non_output_chunk_is_released_at_once() {
    let g = graph(&[(1, &[]), (2, &[])], &[2]);
    let mut p = planner(2);
    let (job, _) = p.submit(g, Instant::now());
    let a = done(&mut p, job, 1, 1);
    assert!(matches!(a[0], PlannerAction::Store { .. }));
    assert_eq!(released(&a), vec![1]);
}

#[test]
fn statistics_count_chunks_bytes_ops_and_peak() {
    let g = graph(&[(1, &[]), (2, &[]), (3, &[1, 2])], &[3]);
    let mut p = planner(2);
    let t0 = Instant::now();
    let (job, _) = p.submit(g, t0);
    let a1 = attempt(&p, job, 1);
    p.on_chunk_done(job, ChunkKey(1), a1, chunk(10), Duration::ZERO, t0);
    let a2 = attempt(&p, job, 2);
    p.on_chunk_done(job, ChunkKey(2), a2, chunk(20), Duration::ZERO, t0);
    let a3 = attempt(&p, job, 3);
    let a = p.on_chunk_done(job, ChunkKey(3), a3, chunk(5), Duration::ZERO, t0);
    let (_, delivery) = delivery(&a).unwrap();
    let stats = &p
        .on_delivered(job, delivery, t0 + Duration::from_millis(7))
        .unwrap();
    assert_eq!(stats.chunks_run, 3);
    assert_eq!(stats.bytes_produced, 8 * 35);
    // 1 and 2 are stored together with 3 before the release.
    assert_eq!(stats.peak_stored_bytes, 8 * 35);
    assert_eq!(stats.chunks_by_op.get("fused"), Some(&3));
    assert_eq!(stats.wall_time, Duration::from_millis(7));
}

#[test]
fn failure_names_key_op_and_cause_and_releases_stored_chunks() {
    let g = graph(&[(1, &[]), (2, &[]), (3, &[]), (4, &[1, 2, 3])], &[4]);
    let mut p = planner(2);
    let (job, _) = p.submit(g, Instant::now());
    let a = done(&mut p, job, 1, 1);
    assert_eq!(dispatched(&a), vec![3]);
    let cause = KernelError::BadInput("boom".into());
    let a = failed(&mut p, job, 2, cause.clone());
    let err = failure(&a).unwrap().clone();
    assert_eq!(
        err,
        JobError::ChunkFailed {
            key: ChunkKey(2),
            op: "fused".into(),
            source: cause
        }
    );
    assert_eq!(
        err.to_string(),
        "chunk 2 (fused) failed: bad kernel input: boom"
    );
    assert!(!p.is_running(job));
    // The sibling still running reports later: ignored, its slot freed.
    assert!(done(&mut p, job, 3, 1).is_empty());
    assert_eq!(p.in_flight(), 0);
}

#[test]
fn retryable_failures_run_the_task_again_until_the_attempt_limit() {
    let g = graph(&[(1, &[])], &[1]);
    let mut p = planner(1);
    let (job, a) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    for attempt in 1..MAX_ATTEMPTS {
        let a = failed(
            &mut p,
            job,
            1,
            KernelError::Panicked(format!("try {attempt}")),
        );
        assert_eq!(dispatched(&a), vec![1], "attempt {attempt} is retried");
        assert!(failure(&a).is_none());
    }
    let a = failed(&mut p, job, 1, KernelError::Injected("last".into()));
    let err = failure(&a).unwrap().clone();
    assert!(matches!(
        err,
        JobError::ChunkFailed {
            source: KernelError::Injected(_),
            ..
        }
    ));
    assert!(!p.is_running(job));
    assert_eq!(p.in_flight(), 0);

    // One retry, then success: the statistics count it.
    let g = graph(&[(1, &[])], &[1]);
    let (job, _) = p.submit(g, Instant::now());
    let a = failed(
        &mut p,
        job,
        1,
        KernelError::DeviceUnavailable("gone".into()),
    );
    assert_eq!(dispatched(&a), vec![1]);
    let a = done(&mut p, job, 1, 8);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.retries, stats.chunks_run), (1, 1));
}

#[test]
fn stale_and_replayed_reports_are_ignored() {
    let g = graph(&[(1, &[]), (2, &[1])], &[2]);
    let mut p = planner(1);
    let (job, _) = p.submit(g, Instant::now());
    assert!(done(&mut p, JobId(99), 1, 1).is_empty(), "unknown job");
    assert!(done(&mut p, job, 42, 1).is_empty(), "unknown key");
    assert!(done(&mut p, job, 2, 1).is_empty(), "not dispatched yet");
    assert!(failed(&mut p, job, 2, KernelError::Panicked("x".into())).is_empty());
    let a1 = attempt(&p, job, 1);
    assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
    assert!(
        p.on_chunk_done(
            job,
            ChunkKey(1),
            a1,
            chunk(1),
            Duration::ZERO,
            Instant::now()
        )
        .is_empty(),
        "replayed completion"
    );
    let a2 = attempt(&p, job, 2);
    assert!(
        p.on_chunk_done(
            job,
            ChunkKey(2),
            a2 + 1,
            chunk(1),
            Duration::ZERO,
            Instant::now()
        )
        .is_empty(),
        "a report of another dispatch"
    );
    let a = done(&mut p, job, 2, 1);
    deliver(&mut p, job, &a);
    assert!(
        p.on_chunk_done(
            job,
            ChunkKey(2),
            a2,
            chunk(1),
            Duration::ZERO,
            Instant::now()
        )
        .is_empty(),
        "completion after the job finished"
    );
    assert!(p
        .on_inputs_lost(job, ChunkKey(2), a2, &keys(&[1]), "gone")
        .is_empty());
    let (_, d) = delivery(&a).unwrap();
    assert!(
        p.on_delivered(job, d, Instant::now()).is_none(),
        "replayed delivery"
    );
}

#[test]
fn concurrent_jobs_share_slots_oldest_first() {
    let mut p = planner(1);
    let (a, acts) = p.submit(graph(&[(1, &[]), (2, &[1])], &[2]), Instant::now());
    assert_eq!(dispatched(&acts), vec![1]);
    let (b, acts) = p.submit(graph(&[(1, &[]), (5, &[])], &[1, 5]), Instant::now());
    assert_ne!(a, b);
    assert!(dispatched(&acts).is_empty(), "no free slot");
    // a's chunk 2 becomes ready and wins over b's older-positioned tasks.
    let acts = done(&mut p, a, 1, 1);
    assert!(
        matches!(acts.last(), Some(PlannerAction::Dispatch { job, key: ChunkKey(2), .. }) if *job == a)
    );
    let acts = done(&mut p, a, 2, 1);
    assert_eq!(delivery(&acts).unwrap().0, vec![2]);
    assert!(
        matches!(acts.last(), Some(PlannerAction::Dispatch { job, key: ChunkKey(1), .. }) if *job == b)
    );
    assert_eq!(dispatched(&done(&mut p, b, 1, 1)), vec![5]);
    let acts = done(&mut p, b, 5, 1);
    assert_eq!(delivery(&acts).unwrap().0, vec![1, 5]);
    assert_eq!(p.in_flight(), 0);
}

#[test]
fn progress_is_throttled() {
    let g = graph(&[(1, &[]), (2, &[]), (3, &[]), (4, &[])], &[4]);
    let mut p = planner(4);
    let t0 = Instant::now();
    let (job, _) = p.submit(g, t0);
    let progress = |a: &[PlannerAction]| {
        a.iter().find_map(|a| match a {
            PlannerAction::Progress { done, total, .. } => Some((*done, *total)),
            _ => None,
        })
    };
    let ms = Duration::from_millis;
    let at = |p: &mut PlannerState, key: u64, t: Duration| {
        let attempt = attempt(p, job, key);
        p.on_chunk_done(
            job,
            ChunkKey(key),
            attempt,
            chunk(1),
            Duration::ZERO,
            t0 + t,
        )
    };
    assert_eq!(progress(&at(&mut p, 1, ms(10))), None);
    assert_eq!(progress(&at(&mut p, 2, ms(60))), Some((2, 4)));
    assert_eq!(progress(&at(&mut p, 3, ms(70))), None);
    let a = at(&mut p, 4, ms(200));
    assert_eq!(progress(&a), None, "the last chunk starts delivery instead");
    assert!(delivery(&a).is_some());
}

#[test]
fn invalid_and_empty_graphs_finish_at_once() {
    let mut p = planner(1);
    let (_, a) = p.submit(graph(&[(1, &[2])], &[1]), Instant::now());
    assert!(matches!(failure(&a), Some(JobError::InvalidGraph(_))));
    let (job, a) = p.submit(ChunkGraph::default(), Instant::now());
    assert_eq!(delivery(&a).unwrap().0, Vec::<u64>::new());
    deliver(&mut p, job, &a);
    assert!(!p.is_running(job));
}

#[test]
fn tasks_wait_for_a_device() {
    let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
    let (_, acts) = p.submit(graph(&[(1, &[]), (2, &[])], &[1, 2]), Instant::now());
    assert!(acts.is_empty());
    assert_eq!(dispatched(&p.add_device(DeviceId(3), 1)), vec![1]);
    assert_eq!(dispatched(&p.add_device(DeviceId(4), 1)), vec![2]);
}

/// The chunk graph used by the recovery tests: 1 -> 2 -> 3 (output), 1 -> 3.
fn chain(p: &mut PlannerState) -> JobId {
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[1]), (3, &[2, 1])], &[3]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(p, job, 1, 2)), vec![2]);
    job
}

#[test]
fn lost_inputs_are_recomputed_from_lineage() {
    let mut p = planner(2);
    let job = chain(&mut p);
    // 2 completes, so 3 is dispatched; then 3 finds 1 missing from storage.
    assert_eq!(dispatched(&done(&mut p, job, 2, 3)), vec![3]);
    let a3 = attempt(&p, job, 3);
    let a = p.on_inputs_lost(job, ChunkKey(3), a3, &keys(&[1]), "not in storage");
    assert_eq!(dispatched(&a), vec![1], "1 runs again; 3 waits for it");
    assert!(done(&mut p, job, 3, 1).is_empty(), "3 is not in flight now");
    assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![3]);
    let a = done(&mut p, job, 3, 4);
    assert_eq!(released(&a), vec![2, 1]);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 1));
    assert_eq!(stats.chunks_run, 4);
}

#[test]
fn released_inputs_of_a_lost_chunk_are_recomputed_too() {
    // 1 -> 2 -> 3 -> 4 (output); 2 is released once 3 is done, then 3 is lost.
    let mut p = planner(1);
    let (job, _) = p.submit(
        graph(&[(1, &[]), (2, &[1]), (3, &[2]), (4, &[3])], &[4]),
        Instant::now(),
    );
    done(&mut p, job, 1, 1);
    done(&mut p, job, 2, 1);
    assert_eq!(released(&done(&mut p, job, 3, 1)), vec![2]);
    let a4 = attempt(&p, job, 4);
    let a = p.on_inputs_lost(job, ChunkKey(4), a4, &keys(&[3]), "corrupt spill file");
    // 1 was released too: the walk goes back to the source.
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
    assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
    assert_eq!(dispatched(&done(&mut p, job, 3, 1)), vec![4]);
    let a = done(&mut p, job, 4, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 3));
}

#[test]
fn a_chunk_lost_twice_fails_its_job_naming_it() {
    let mut p = planner(1);
    let job = chain(&mut p);
    for round in 1..=MAX_LOSSES {
        let a2 = attempt(&p, job, 2);
        let a = p.on_inputs_lost(job, ChunkKey(2), a2, &keys(&[1]), "dropped");
        if round < MAX_LOSSES {
            assert_eq!(dispatched(&a), vec![1]);
            assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![2]);
        } else {
            let err = failure(&a).unwrap();
            assert!(
                matches!(err, JobError::ChunkLost { key: ChunkKey(1), losses, .. } if *losses == MAX_LOSSES)
            );
            assert!(err.to_string().contains("dropped"), "{err}");
        }
    }
    assert!(!p.is_running(job));
}

#[test]
fn lost_outputs_are_recomputed_and_delivered_again() {
    let mut p = planner(1);
    let job = chain(&mut p);
    done(&mut p, job, 2, 1);
    let a = done(&mut p, job, 3, 1);
    let (_, first) = delivery(&a).unwrap();
    let a = p.on_delivery_failed(job, first, &keys(&[3]), Gone::Lost("checksum mismatch"));
    assert_eq!(
        dispatched(&a),
        vec![1],
        "3 and, back along its lineage, 2 and 1"
    );
    assert!(
        p.on_delivered(job, first, Instant::now()).is_none(),
        "stale delivery"
    );
    done(&mut p, job, 1, 1);
    done(&mut p, job, 2, 1);
    let a = done(&mut p, job, 3, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 3));
}

#[test]
fn a_dead_device_s_tasks_run_again_and_its_late_reports_are_ignored() {
    let mut p = planner(2);
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[]), (3, &[1, 2])], &[3]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1, 2]);
    let old = attempt(&p, job, 1);
    let a = p.on_actor_down(ActorName::Device(CPU), true, 1);
    assert!(dispatched(&a).is_empty(), "no device until the restart");
    assert_eq!(p.in_flight(), 0);
    assert_eq!(dispatched(&p.add_device(CPU, 2)), vec![1, 2]);
    assert!(
        p.on_chunk_done(
            job,
            ChunkKey(1),
            old,
            chunk(1),
            Duration::ZERO,
            Instant::now()
        )
        .is_empty(),
        "a completion from before the restart"
    );
    done(&mut p, job, 1, 1);
    assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
    let a = done(&mut p, job, 3, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.retries, stats.restarts, stats.chunks_run), (2, 1, 3));
}

#[test]
fn a_storage_restart_recomputes_what_is_still_needed() {
    let mut p = planner(1);
    let job = chain(&mut p); // 1 stored, 2 running
    let a = p.on_actor_down(ActorName::Storage, true, 1);
    assert!(a.is_empty());
    // 2 finishes while storage is down: stored (to the dead actor), nothing dispatched.
    assert!(dispatched(&done(&mut p, job, 2, 1)).is_empty());
    let a = p.on_storage_restarted();
    // Both 1 and 2 were lost and are needed by 3.
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
    assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
    let a = done(&mut p, job, 3, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.chunks_lost, stats.restarts), (2, 1));
}

#[test]
fn an_actor_given_up_on_fails_running_and_later_jobs() {
    let mut p = planner(1);
    let job = chain(&mut p);
    let a = p.on_actor_down(ActorName::Device(CPU), false, 3);
    let err = failure(&a).unwrap().clone();
    assert_eq!(
        err.to_string(),
        "device0 died and was restarted 3 times; giving up"
    );
    assert!(!p.is_running(job));
    let (_, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
    assert_eq!(failure(&a), Some(&err));
}

#[test]
fn reservations_hold_back_work_beyond_the_budget() {
    // Four chunks of 80 bytes each; room for two at once.
    let pool = MemoryPool::new(160);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 4);
    let g = ChunkGraph {
        tasks: (1..=4).map(source).collect(),
        outputs: keys(&[1, 2, 3, 4]),
        ..Default::default()
    };
    let (job, a) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&a), vec![1, 2], "two fit the budget");
    assert_eq!(pool.used(), 160);
    // The third is held back: storage is asked to make room for its reservation, once.
    let running = room_asked(&a).expect("storage is asked to make room");
    assert_eq!(pool.wanted(), 80, "the held-back task's reservation");
    let a = done(&mut p, job, 1, 10);
    assert_eq!(dispatched(&a), vec![3]);
    assert_eq!(
        room_asked(&a),
        None,
        "the fourth wants as much: asked already"
    );
    // Nothing frees memory here (the store would spill): with a task running the planner
    // waits, whatever storage answers.
    let _stored = pool.reserve(1000);
    assert!(dispatched(&done(&mut p, job, 2, 10)).is_empty());
    let a = p.on_room_made(running);
    assert!(dispatched(&a).is_empty() && room_asked(&a).is_none());
    // Once none runs it asks again, and when storage has made what room it could, it
    // dispatches anyway: the job must progress.
    let a = done(&mut p, job, 3, 10);
    assert!(dispatched(&a).is_empty(), "not before storage answers");
    let idle = room_asked(&a).expect("asked again with nothing running");
    assert_eq!(
        dispatched(&p.on_room_made(idle)),
        vec![4],
        "nothing running: progress is forced"
    );
    assert_eq!(pool.wanted(), 0, "nothing held back");
    let a = done(&mut p, job, 4, 10);
    let stats = deliver(&mut p, job, &a);
    assert!(stats.held_back >= 1);
    assert_eq!(stats.peak_host_reserved, 1080);
}

/// The number of the ask for room among `actions`, if there is one.
fn room_asked(actions: &[PlannerAction]) -> Option<u64> {
    actions.iter().find_map(|a| match a {
        PlannerAction::MakeRoom { ask } => Some(*ask),
        _ => None,
    })
}

/// A task `k` with no inputs making ten elements.
fn source(k: u64) -> crate::graph::ChunkTask {
    crate::graph::ChunkTask::new(
        ChunkKey(k),
        crate::graph::tests::const_op(1, 10),
        Vec::new(),
    )
}

#[test]
fn a_task_that_gathers_its_inputs_reserves_their_sum() {
    // Three chunks of 10, 20 and 30 eight-byte elements; a concat of them holds all their
    // rows.
    let pool = MemoryPool::new(1 << 20);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 4);
    let concat = crate::graph::ChunkTask::new(
        ChunkKey(4),
        ChunkOp::Frame(tessera_kernels::frame::ops::FrameOp::Concat { limit: None }),
        keys(&[1, 2, 3]),
    );
    let g = ChunkGraph {
        tasks: vec![source(1), source(2), source(3), concat],
        outputs: keys(&[4]),
        ..Default::default()
    };
    let (job, a) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&a), vec![1, 2, 3]);
    done(&mut p, job, 1, 10);
    done(&mut p, job, 2, 20);
    assert_eq!(dispatched(&done(&mut p, job, 3, 30)), vec![4]);
    assert_eq!(
        pool.used(),
        8 * 60,
        "the sum of the inputs, not the largest"
    );
}

#[test]
fn a_running_task_reserves_its_working_memory_and_gives_it_back() {
    // A sort of two chunks (80 and 160 bytes) holds them concatenated while it runs: it
    // reserves its output and that much again, and only its output is stored after.
    let pool = MemoryPool::new(1 << 20);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 4);
    let sort = crate::graph::ChunkTask::new(
        ChunkKey(3),
        ChunkOp::Frame(tessera_kernels::frame::ops::FrameOp::Sort {
            by: vec![],
            limit: None,
        }),
        keys(&[1, 2]),
    );
    let g = ChunkGraph {
        tasks: vec![source(1), source(2), sort],
        outputs: keys(&[3]),
        ..Default::default()
    };
    let (job, a) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&a), vec![1, 2]);
    done(&mut p, job, 1, 10);
    let stored = pool.reserve(240); // what the store holds of the two
    assert_eq!(dispatched(&done(&mut p, job, 2, 20)), vec![3]);
    assert_eq!(pool.used(), 240 + 2 * 240, "output and working memory");
    let a = done(&mut p, job, 3, 30);
    assert_eq!(pool.used(), 240, "given back when the task ends");
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.peak_host_reserved, 720);
    drop(stored);
}

#[test]
fn with_both_tiers_full_a_job_that_cannot_progress_fails_naming_both_budgets() {
    let pool = MemoryPool::new(100);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 1);
    let (job, a) = p.submit(graph(&[(1, &[]), (2, &[1])], &[2]), Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    // The stored chunks fill the host budget, 400 bytes past it, and the disk tier has
    // room for 300 (whether or not the store has spilled yet).
    let stored = pool.reserve(500);
    pool.set_disk_room(64, 300);
    let a = done(&mut p, job, 1, 10);
    let ask = room_asked(&a).expect("storage is asked to make room first");
    let a = p.on_room_made(ask);
    assert!(dispatched(&a).is_empty(), "nothing over both budgets");
    let err = failure(&a).expect("the job fails once storage has answered");
    assert!(matches!(
        err,
        JobError::OutOfMemory(OutOfMemory {
            host_budget: 100,
            disk_budget: 64,
            reserved: 500..,
            ..
        })
    ));
    let text = err.to_string();
    assert!(
        text.contains("100 bytes") && text.contains("64 bytes"),
        "{text}"
    );
    assert!(!p.is_running(job));
    // Once the disk tier has room for what is past the budget, a new job is forced
    // through (the one task that lets it progress).
    pool.set_disk_room(64, 500);
    let (_, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
    let ask = room_asked(&a).expect("storage is asked to make room first");
    assert_eq!(dispatched(&p.on_room_made(ask)), vec![1]);
    drop(stored);
}

#[test]
fn an_unreachable_device_takes_no_tasks_until_it_is_back() {
    let mut p = planner(1);
    let (job, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    let first = attempt(&p, job, 1);
    // No attempt is counted, and nothing is dispatched to the stopped device.
    assert!(p
        .on_device_unreachable(job, ChunkKey(1), first, CPU)
        .is_empty());
    assert!(p.on_actor_down(ActorName::Device(CPU), true, 1).is_empty());
    assert_eq!(dispatched(&p.add_device(CPU, 1)), vec![1]);
    let a = done(&mut p, job, 1, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.retries, stats.restarts), (0, 1));
}

#[test]
fn a_device_added_again_counts_its_dispatches_still_in_flight() {
    // A cluster worker whose task could not be sent is taken out; a report it sent before
    // (a finished task) may still arrive, and the device may be added again meanwhile.
    let mut p = planner(2);
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[]), (3, &[])], &[1, 2, 3]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1, 2]);
    let first = attempt(&p, job, 1);
    assert!(p
        .on_device_unreachable(job, ChunkKey(1), first, CPU)
        .is_empty());
    assert!(!p.has_device(CPU));
    // Added again: task 2 still holds a slot, so one is free (task 1 goes back on it).
    assert_eq!(dispatched(&p.add_device(CPU, 2)), vec![1]);
    assert!(p.has_device(CPU));
    // Task 2's report frees its slot for task 3 (before, the count restarted at 0 and
    // this report took it below 0).
    assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
    done(&mut p, job, 1, 1);
    let a = done(&mut p, job, 3, 1);
    deliver(&mut p, job, &a);
    assert_eq!(p.devices[&CPU].used, 0);
}

#[test]
fn nothing_is_dispatched_or_delivered_while_storage_is_gone() {
    let mut p = planner(2);
    let job = chain(&mut p); // 1 stored, 2 dispatched
    let a2 = attempt(&p, job, 2);
    p.storage_gone();
    assert!(
        p.on_storage_unreachable(job, ChunkKey(2), a2).is_empty(),
        "no spin"
    );
    let a = p.on_storage_restarted();
    // 1 was lost with the storage actor and is computed again first.
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
    assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
    let a = done(&mut p, job, 3, 1);
    let (_, d) = delivery(&a).unwrap();
    p.storage_gone();
    assert!(p
        .on_delivery_failed(job, d, &[], Gone::Lost("storage unreachable"))
        .is_empty());
    let a = p.on_storage_restarted();
    assert_eq!(dispatched(&a), vec![1], "the outputs died with storage");
}

/// A graph reading the kept chunk `id` (as key 100, 40 bytes) in task 1 (output 2 = 1's
/// consumer), keeping its outputs when `keep`.
fn reading_kept(id: ChunkId, keep: bool) -> ChunkGraph {
    let mut g = graph(&[(1, &[100]), (2, &[1, 100])], &[2]);
    g.stored = vec![crate::graph::StoredInput {
        key: ChunkKey(100),
        id,
        nbytes: 40,
    }];
    g.keep_outputs = keep;
    g
}

#[test]
fn kept_inputs_are_read_by_their_storage_id_and_never_released_or_run() {
    let mut p = planner(4);
    let kept = ChunkId {
        job: JobId(77),
        key: ChunkKey(5),
    };
    let (job, a) = p.submit(reading_kept(kept, true), Instant::now());
    let inputs = a.iter().find_map(|a| match a {
        PlannerAction::Dispatch { key, inputs, .. } if key.0 == 1 => Some(inputs.clone()),
        _ => None,
    });
    assert_eq!(
        inputs,
        Some(vec![kept]),
        "only task 1 is ready; it reads the kept chunk"
    );
    assert_eq!(p.keys_of(job, &[kept]), keys(&[100]));
    let a = done(&mut p, job, 1, 3);
    let inputs = a.iter().find_map(|a| match a {
        PlannerAction::Dispatch { inputs, .. } => Some(inputs.clone()),
        _ => None,
    });
    let own = ChunkId {
        job,
        key: ChunkKey(1),
    };
    assert_eq!(inputs, Some(vec![own, kept]));
    let a = done(&mut p, job, 2, 1);
    assert_eq!(
        released(&a),
        vec![1],
        "the job's own chunk goes, the kept one stays"
    );
    let keep = a
        .iter()
        .any(|a| matches!(a, PlannerAction::Deliver { keep: true, .. }));
    assert!(keep, "the outputs are kept, not taken");
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.chunks_run, 2, "the kept chunk was not computed");
}

#[test]
fn a_lost_kept_input_fails_the_job_naming_it_for_the_caller_to_recompute() {
    let mut p = planner(4);
    let kept = ChunkId {
        job: JobId(77),
        key: ChunkKey(5),
    };
    let (job, _) = p.submit(reading_kept(kept, false), Instant::now());
    let attempt = attempt(&p, job, 1);
    let lost = p.keys_of(job, &[kept]);
    let a = p.on_inputs_lost(job, ChunkKey(1), attempt, &lost, "not in storage");
    match failure(&a) {
        Some(JobError::ChunkLost { key, op, .. }) => {
            assert_eq!((key.0, op.as_str()), (100, "persisted"));
        }
        other => panic!("expected ChunkLost, got {other:?}"),
    }
    assert!(!p.is_running(job));
}

/// A partitioned table whose parts have `rows[i]` rows of one i64 column (8 bytes a row).
fn partitioned(rows: &[i64]) -> Arc<ChunkData> {
    let table = |n: i64| {
        let col = arrow::array::Int64Array::from((0..n).collect::<Vec<i64>>());
        arrow::array::RecordBatch::try_from_iter([("k", Arc::new(col) as arrow::array::ArrayRef)])
            .unwrap()
    };
    Arc::new(ChunkData::Tables(rows.iter().map(|&n| table(n)).collect()))
}

fn done_with(
    p: &mut PlannerState,
    job: JobId,
    key: u64,
    data: Arc<ChunkData>,
) -> Vec<PlannerAction> {
    let attempt = attempt(p, job, key);
    p.on_chunk_done(
        job,
        ChunkKey(key),
        attempt,
        data,
        Duration::ZERO,
        Instant::now(),
    )
}

/// The chunks `actions` store, as (key, rows of its table, next use).
fn stored(actions: &[PlannerAction]) -> Vec<(u64, usize, u64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Store {
                key, data, info, ..
            } => match data.as_ref() {
                ChunkData::Table(t) => Some((key.0, t.num_rows(), info.next_use)),
                _ => Some((key.0, usize::MAX, info.next_use)),
            },
            _ => None,
        })
        .collect()
}

/// 1 -> 2, split into 21 22 23; 31 32 33 read one part each; 4 reads 31 32 33.
fn shuffle(p: &mut PlannerState) -> JobId {
    let g = graph(
        &[
            (1, &[]),
            (2, &[1]),
            (31, &[21]),
            (32, &[22]),
            (33, &[23]),
            (4, &[31, 32, 33]),
        ],
        &[4],
    );
    let (job, actions) = p.submit(
        crate::graph::tests::split(g, 2, &[21, 22, 23]),
        Instant::now(),
    );
    assert_eq!(dispatched(&actions), vec![1]);
    assert_eq!(dispatched(&done(p, job, 1, 4)), vec![2]);
    job
}

#[test]
fn a_split_task_s_parts_are_stored_apart_and_each_released_after_its_reader() {
    let mut p = planner(4);
    let job = shuffle(&mut p);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    // Each part is a table of its own, with its reader's position (5, 6, 7) as next use.
    assert_eq!(stored(&a), vec![(21, 1, 5), (22, 2, 6), (23, 3, 7)]);
    assert_eq!(released(&a), vec![1]);
    assert_eq!(dispatched(&a), vec![31, 32, 33]);
    let inputs = |a: &[PlannerAction], k: u64| {
        a.iter().find_map(|a| match a {
            PlannerAction::Dispatch { key, inputs, .. } if key.0 == k => {
                Some(inputs.iter().map(|i| i.key.0).collect::<Vec<_>>())
            }
            _ => None,
        })
    };
    assert_eq!(inputs(&a, 32), Some(vec![22]));
    assert_eq!(released(&done(&mut p, job, 32, 1)), vec![22]);
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    let a = done(&mut p, job, 33, 1);
    assert_eq!(released(&a), vec![23]);
    assert_eq!(dispatched(&a), vec![4]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(released(&a), vec![31, 32, 33]);
    let stats = deliver(&mut p, job, &a);
    // The split task ran once; its parts are chunks, not runs.
    assert_eq!(stats.chunks_run, 6);
    assert_eq!(stats.bytes_produced, 4 * 8 + 6 * 8 + 3 * 8 + 8);
}

#[test]
fn parts_a_later_stage_reads_are_needed_in_part_order_after_this_stage() {
    // A stage ending in a shuffle hands its parts on: no task of its own reads them.
    let mut p = planner(4);
    let g = graph(&[(1, &[]), (2, &[1])], &[21, 22, 23]);
    let (job, a) = p.submit(
        crate::graph::tests::split(g, 2, &[21, 22, 23]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    // The next stage reads them partition by partition: storage spills the last first.
    let later = super::job::LATER_STAGE;
    assert_eq!(
        stored(&a),
        vec![(21, 1, later), (22, 2, later + 1), (23, 3, later + 2)]
    );
    assert!(later + 2 < u64::MAX, "before chunks only the caller reads");
}

#[test]
fn a_lost_part_reruns_its_task_which_stores_only_the_parts_still_needed() {
    let mut p = planner(4);
    let job = shuffle(&mut p);
    done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    // 32 cannot read part 22: it, the split task and that task's released input run again.
    let attempt_32 = attempt(&p, job, 32);
    let a = p.on_inputs_lost(job, ChunkKey(32), attempt_32, &keys(&[22]), "gone");
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    // The task's output again has three parts: 21 was read and released, 23 is still
    // stored; only 22 is stored again.
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(stored(&a), vec![(22, 2, 6)]);
    assert_eq!(released(&a), vec![1]);
    assert_eq!(dispatched(&a), vec![32]);
    assert_eq!(released(&done(&mut p, job, 32, 1)), vec![22]);
    assert_eq!(released(&done(&mut p, job, 33, 1)), vec![23]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(delivery(&a).unwrap().0, vec![4]);
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.chunks_lost, 1);
    assert_eq!(stats.chunks_recomputed, 3);
    assert_eq!(stats.chunks_run, 8);
}

#[test]
fn a_storage_restart_recomputes_the_lost_parts_with_one_run_of_their_task() {
    let mut p = planner(1);
    let job = shuffle(&mut p);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(dispatched(&a), vec![31]);
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    // 22 and 23 are stored, 32 is running (it has its input); storage restarts empty.
    p.storage_gone();
    assert!(
        dispatched(&p.on_storage_restarted()).is_empty(),
        "the one slot is busy"
    );
    assert_eq!(dispatched(&done(&mut p, job, 32, 1)), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    // 31's chunk was lost too: one run of the split task stores 21 for it and 23 for 33.
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    let keys: Vec<u64> = stored(&a).iter().map(|s| s.0).collect();
    assert!(keys.contains(&21) && keys.contains(&23), "{keys:?}");
    assert_eq!(dispatched(&a), vec![31]);
    assert_eq!(dispatched(&done(&mut p, job, 31, 1)), vec![33]);
    let a = done(&mut p, job, 33, 1);
    assert_eq!(dispatched(&a), vec![4]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(delivery(&a).unwrap().0, vec![4]);
}

#[test]
fn a_split_task_whose_output_has_the_wrong_parts_fails_its_job_naming_it() {
    for data in [chunk(4), partitioned(&[1, 2])] {
        let mut p = planner(4);
        let job = shuffle(&mut p);
        let a = done_with(&mut p, job, 2, data);
        match failure(&a) {
            Some(JobError::ChunkFailed { key, source, .. }) => {
                assert_eq!(*key, ChunkKey(2));
                assert!(source.to_string().contains("3 parts"), "{source}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!p.is_running(job));
    }
}

/// The device each key of `actions` was dispatched to.
pub(super) fn placed(actions: &[PlannerAction]) -> Vec<(u64, DeviceId)> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Dispatch { key, device, .. } => Some((key.0, *device)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_task_goes_where_most_of_its_input_bytes_are_unless_that_device_is_full() {
    let (a, b) = (DeviceId(0), DeviceId(1));
    let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
    p.add_device(a, 1);
    p.add_device(b, 1);
    // 1 and 2 from nothing; 3 reads 1 and 2; 4 reads 2 only.
    let (job, first) = p.submit(
        graph(&[(1, &[]), (2, &[]), (3, &[1, 2]), (4, &[2])], &[3, 4]),
        Instant::now(),
    );
    // Without locations: the freest device, ties to the lowest id.
    assert_eq!(placed(&first), vec![(1, a), (2, b)]);
    let id = |k| ChunkId {
        job,
        key: ChunkKey(k),
    };
    // 1 (small) is held by a, 2 (large) by b: 3 and 4 both prefer b.
    let one = attempt(&p, job, 1);
    let two = attempt(&p, job, 2);
    p.chunk_at(id(1), a, 10);
    p.chunk_at(id(2), b, 1000);
    let after_one = p.on_chunk_held(job, ChunkKey(1), one, vec![10], Instant::now());
    assert!(dispatched(&after_one).is_empty(), "3 and 4 wait for 2");
    let after_two = p.on_chunk_held(job, ChunkKey(2), two, vec![1000], Instant::now());
    // 3 takes b's one slot; 4 would prefer b too, but b is full: it runs on a.
    assert_eq!(placed(&after_two), vec![(3, b), (4, a)]);
}

#[test]
fn a_task_with_large_inputs_waits_for_their_busy_holder_unless_another_device_is_idle() {
    let (a, b) = (DeviceId(0), DeviceId(1));
    let big = MOVE_BYTES * 2;
    let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
    p.add_device(a, 1);
    p.add_device(b, 2);
    let g = graph(
        &[(1, &[]), (2, &[]), (5, &[]), (3, &[1]), (4, &[1])],
        &[2, 3, 4, 5],
    );
    let (job, first) = p.submit(g, Instant::now());
    assert_eq!(placed(&first), vec![(1, b), (2, a), (5, b)]);
    let id = |k| ChunkId {
        job,
        key: ChunkKey(k),
    };
    let held = |p: &mut PlannerState, key: u64, bytes: u64| {
        let attempt = attempt(p, job, key);
        p.on_chunk_held(job, ChunkKey(key), attempt, vec![bytes], Instant::now())
    };
    // 1's large output sits on a, which is busy with 2; b has a slot but is busy with 5.
    p.chunk_at(id(1), a, big);
    assert!(
        placed(&held(&mut p, 1, big)).is_empty(),
        "3 and 4 wait for a"
    );
    // a frees its slot: 3 goes there; 4 waits again.
    p.chunk_at(id(2), a, 8);
    assert_eq!(placed(&held(&mut p, 2, 8)), vec![(3, a)]);
    // b goes idle: it takes 4 and fetches the input.
    p.chunk_at(id(5), b, 8);
    assert_eq!(placed(&held(&mut p, 5, 8)), vec![(4, b)]);
}

#[test]
fn an_idle_device_moves_large_inputs_only_when_the_move_beats_the_work_ahead_of_their_holder() {
    // 1 -> 2 on a; readers 11..=20 of 2's large output, each expected to run as long as 2
    // did. Two workers of one thread, each queuing one more task.
    let placed_after_two = |took: Duration| {
        let (a, b) = (DeviceId(0), DeviceId(1));
        let big = MOVE_BYTES * 2;
        let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
        assert!(p.add_queued_device(a, 1, 2).is_empty());
        assert!(p.add_queued_device(b, 1, 2).is_empty());
        let readers: Vec<(u64, &[u64])> = (11..=20).map(|k| (k, &[2][..])).collect();
        let mut tasks: Vec<(u64, &[u64])> = vec![(1, &[]), (2, &[1])];
        tasks.extend(readers);
        let outputs: Vec<u64> = (11..=20).collect();
        let (job, first) = p.submit(graph(&tasks, &outputs), Instant::now());
        assert_eq!(placed(&first), vec![(1, a)]);
        let mut held = |key: u64, took: Duration| {
            let attempt = attempt(&p, job, key);
            let id = ChunkId {
                job,
                key: ChunkKey(key),
            };
            p.chunk_at(id, a, big);
            let took_ns = u64::try_from(took.as_nanos()).expect("a short run");
            let span = RunSpan {
                start_ns: 0,
                end_ns: took_ns,
                thread: 0,
            };
            p.record_run(job, ChunkKey(key), attempt, span, big, true);
            p.on_chunk_held(job, ChunkKey(key), attempt, vec![big], Instant::now())
        };
        assert_eq!(placed(&held(1, Duration::ZERO)), vec![(2, a)]);
        placed(&held(2, took))
    };
    // Moving 16 MiB takes 64 ms at MOVE_RATE. At 10 ms a task, a has 20 ms of work ahead
    // of the first reader it cannot take, 30 ms ahead of the next…: idle b takes the
    // first with more than 64 ms ahead (18), then is busy.
    let (a, b) = (DeviceId(0), DeviceId(1));
    assert_eq!(
        placed_after_two(Duration::from_millis(10)),
        vec![(11, a), (12, a), (18, b)]
    );
    // At 40 ms a task, 80 ms are ahead of 13 already.
    assert_eq!(
        placed_after_two(Duration::from_millis(40)),
        vec![(11, a), (12, a), (13, b)]
    );
}

/// The recompute cost each Store action in `actions` offers storage, by chunk key.
fn offered(actions: &[PlannerAction]) -> Vec<(u64, Option<Duration>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Store { key, info, .. } => Some((key.0, info.recompute)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_dropped_input_is_recomputed_without_counting_a_loss() {
    let mut p = planner(2);
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[1]), (3, &[2, 1])], &[3]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1]);
    // 1 reads no chunk: storage may drop it, knowing what it took; 2 reads 1: it may not.
    let ms = Duration::from_millis;
    let a1 = attempt(&p, job, 1);
    let a = p.on_chunk_done(job, ChunkKey(1), a1, chunk(2), ms(3), Instant::now());
    assert_eq!(offered(&a), vec![(1, Some(ms(3)))]);
    let a2 = attempt(&p, job, 2);
    let a = p.on_chunk_done(job, ChunkKey(2), a2, chunk(2), ms(5), Instant::now());
    assert_eq!(offered(&a), vec![(2, None)]);
    assert_eq!(dispatched(&a), vec![3]);
    // Storage drops 1 more often than a chunk may be lost: each time it is run again,
    // and offered for dropping until it was dropped MAX_DROPS times.
    const { assert!(MAX_DROPS > MAX_LOSSES) };
    for drop in 1..=MAX_DROPS {
        let a3 = attempt(&p, job, 3);
        let a = p.on_inputs_gone(job, ChunkKey(3), a3, &keys(&[1]), Gone::Dropped);
        assert_eq!(dispatched(&a), vec![1], "1 runs again; 3 waits for it");
        let a = done(&mut p, job, 1, 2);
        assert_eq!(dispatched(&a), vec![3]);
        let offer = (drop < MAX_DROPS).then_some(Duration::ZERO);
        assert_eq!(offered(&a), vec![(1, offer)], "after drop {drop}");
    }
    // The output is never offered for dropping.
    let a = done(&mut p, job, 3, 4);
    assert_eq!(offered(&a), vec![(3, None)]);
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.chunks_lost, 0);
    assert_eq!(stats.chunks_recomputed, u64::from(MAX_DROPS));
}
