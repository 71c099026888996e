//! Unit tests of the planner state machine.

use super::*;
use crate::job::OutOfMemory;
use crate::memory::{HostPool, UnboundedPool};
use crate::testing::graph;

mod memory;
mod split;
use crate::testing::chunk;

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
    let mut p = PlannerState::new(UnboundedPool::new());
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
    let mut p = PlannerState::new(UnboundedPool::new());
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
fn a_reader_dispatched_before_a_lost_chunk_was_made_again_counts_no_second_loss() {
    // 1 -> 2, 1 -> 3 (outputs 2 and 3): both readers find 1 gone, the second only after
    // 1 was recomputed (a broadcast side read by many tasks).
    let mut p = planner(3);
    let (job, a) = p.submit(
        graph(&[(1, &[]), (2, &[1]), (3, &[1])], &[2, 3]),
        Instant::now(),
    );
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![2, 3]);
    let (a2, a3) = (attempt(&p, job, 2), attempt(&p, job, 3));
    let a = p.on_inputs_lost(job, ChunkKey(2), a2, &keys(&[1]), "not in storage");
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![2]);
    // 3's report is of the copy lost before: it runs again, and nothing fails.
    let a = p.on_inputs_lost(job, ChunkKey(3), a3, &keys(&[1]), "not in storage");
    assert!(failure(&a).is_none(), "{:?}", failure(&a));
    assert_eq!(dispatched(&a), vec![3]);
    done(&mut p, job, 2, 1);
    let a = done(&mut p, job, 3, 1);
    let stats = deliver(&mut p, job, &a);
    assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 1));
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

/// A chunk an earlier job kept, as the kept-input tests read it.
const KEPT: ChunkId = ChunkId {
    job: JobId(77),
    key: ChunkKey(5),
};

/// A graph reading the kept chunk `id` (as key 100, 40 bytes) in task 1 (output 2 = 1's
/// consumer), keeping its outputs when `keep`.
fn reading_kept(id: ChunkId, keep: bool) -> ChunkGraph {
    let mut g = graph(&[(1, &[100]), (2, &[1, 100])], &[2]);
    g.stored = vec![crate::graph::StoredInput {
        key: ChunkKey(100),
        id,
        nbytes: 40,
        given: false,
    }];
    g.keep_outputs = keep;
    g
}

#[test]
fn kept_inputs_are_read_by_their_storage_id_and_never_released_or_run() {
    let mut p = planner(4);
    let kept = KEPT;
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

/// The kept chunks `actions` give up.
fn unkept(actions: &[PlannerAction]) -> Vec<ChunkId> {
    actions
        .iter()
        .flat_map(|a| match a {
            PlannerAction::Unkeep { ids } => ids.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// [`reading_kept`] with the kept chunk given to the job.
fn given_kept(id: ChunkId) -> ChunkGraph {
    let mut g = reading_kept(id, false);
    g.stored[0].given = true;
    g
}

#[test]
fn a_given_kept_input_is_given_up_after_its_last_reader_and_no_sooner() {
    let mut p = planner(4);
    let kept = KEPT;
    let (job, a) = p.submit(given_kept(kept), Instant::now());
    assert_eq!(unkept(&a), vec![]);
    let a = done(&mut p, job, 1, 3);
    assert_eq!(unkept(&a), vec![], "task 2 reads it too");
    let a = done(&mut p, job, 2, 1);
    assert_eq!(unkept(&a), vec![kept], "its last reader ran");
    deliver(&mut p, job, &a);
    // Not given: kept until the caller drops its handle.
    let (job, _) = p.submit(reading_kept(kept, false), Instant::now());
    done(&mut p, job, 1, 3);
    assert_eq!(unkept(&done(&mut p, job, 2, 1)), vec![]);
}

#[test]
fn a_job_that_ends_early_gives_up_what_it_was_given_and_still_holds() {
    let mut p = planner(4);
    let kept = KEPT;
    let (job, _) = p.submit(given_kept(kept), Instant::now());
    let a = p.cancel(job, JobError::SystemStopped("cancelled".into()));
    assert_eq!(unkept(&a), vec![kept], "cancelled before any read");
    // Refused: a given chunk cannot be an output.
    let mut g = given_kept(kept);
    g.outputs.push(ChunkKey(100));
    let (_, a) = p.submit(g, Instant::now());
    assert_eq!(unkept(&a), vec![kept]);
    assert!(matches!(
        a.last(),
        Some(PlannerAction::JobFailed {
            error: JobError::InvalidGraph(crate::graph::GraphError::GivenOutput(ChunkKey(100))),
            ..
        })
    ));
    // Read by no task: given up at once.
    let mut g = given_kept(kept);
    g.tasks
        .iter_mut()
        .for_each(|t| t.inputs.retain(|&k| k != ChunkKey(100)));
    let (_, a) = p.submit(g, Instant::now());
    assert_eq!(unkept(&a), vec![kept]);
}

#[test]
fn a_lost_kept_input_fails_the_job_naming_it_for_the_caller_to_recompute() {
    let mut p = planner(4);
    let kept = KEPT;
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

#[test]
fn a_task_goes_where_most_of_its_input_bytes_are_unless_that_device_is_full() {
    let (a, b) = (DeviceId(0), DeviceId(1));
    let mut p = PlannerState::new(UnboundedPool::new());
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
    let mut p = PlannerState::new(UnboundedPool::new());
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
        let mut p = PlannerState::new(UnboundedPool::new());
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
    // What a cluster scheduler tells the workers that hold them says the same.
    let droppable = |p: &PlannerState, k| p.droppable(job, ChunkKey(k));
    assert!(droppable(&p, 1) && !droppable(&p, 2) && !droppable(&p, 3));
    assert!(!p.droppable(JobId(job.0 + 1), ChunkKey(1)), "no such job");
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
        assert_eq!(droppable(&p, 1), drop < MAX_DROPS);
    }
    // The output is never offered for dropping.
    let a = done(&mut p, job, 3, 4);
    assert_eq!(offered(&a), vec![(3, None)]);
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.chunks_lost, 0);
    assert_eq!(stats.chunks_recomputed, u64::from(MAX_DROPS));
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
