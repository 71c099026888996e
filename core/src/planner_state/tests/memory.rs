//! Memory: reservations, working memory, room asked of storage, both tiers full.

use super::*;

#[test]
fn reservations_hold_back_work_beyond_the_budget() {
    // Four chunks of 80 bytes each; room for two at once.
    let pool = HostPool::new(160);
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
    // The third is held back: storage is asked to make room for its reservation.
    let first = room_asked(&a).expect("storage is asked to make room");
    assert_eq!(pool.wanted(), 80, "the held-back task's reservation");
    // Storage answers before anything frees memory: with tasks running the planner waits.
    let a = p.on_room_made(first);
    assert!(dispatched(&a).is_empty() && room_asked(&a).is_none());
    // Chunk 1 is computed: its bytes stay reserved on their way to storage, so the third
    // still waits, and storage is asked again, behind the chunk.
    let a = done(&mut p, job, 1, 10);
    assert!(
        dispatched(&a).is_empty(),
        "chunk 1 is reserved until stored"
    );
    assert_eq!(pool.used(), 160);
    let behind = room_asked(&a).expect("asked again behind the chunk");
    drop(a); // storage spilled chunk 1: its reservation is given back
    let a = p.on_room_made(behind);
    assert_eq!(dispatched(&a), vec![3]);
    assert_eq!(room_asked(&a), None, "the fourth wants as much: answered");
    // Nothing frees memory here (storage holds what it cannot spill): with a task running
    // the planner waits, whatever storage answers.
    let stored = Reservation::new(pool.clone(), 1000);
    let a = done(&mut p, job, 2, 10);
    assert!(dispatched(&a).is_empty());
    let ask = room_asked(&a).expect("asked again behind chunk 2");
    drop(a);
    let a = p.on_room_made(ask);
    assert!(dispatched(&a).is_empty() && room_asked(&a).is_none());
    // Once none runs it asks again, and when storage has made what room it could, it
    // dispatches anyway: the job must progress.
    let a = done(&mut p, job, 3, 10);
    assert!(dispatched(&a).is_empty(), "not before storage answers");
    let idle = room_asked(&a).expect("asked again with nothing running");
    drop(a);
    assert_eq!(
        dispatched(&p.on_room_made(idle)),
        vec![4],
        "nothing running: progress is forced"
    );
    assert_eq!(pool.wanted(), 0, "nothing held back");
    let a = done(&mut p, job, 4, 10);
    let stats = deliver(&mut p, job, &a);
    assert!(stats.held_back >= 1);
    // 1000 stored, chunk 2 on its way to storage, task 3 running.
    assert_eq!(stats.peak_host_reserved, 1000 + 80 + 80);
    drop(stored);
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
    crate::graph::ChunkTask::new(ChunkKey(k), crate::testing::const_op(1, 10), Vec::new())
}

#[test]
fn a_task_that_gathers_its_inputs_reserves_their_sum() {
    // Three chunks of 10, 20 and 30 eight-byte elements; a concat of them holds all their
    // rows.
    let pool = HostPool::new(1 << 20);
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
    let pool = HostPool::new(1 << 20);
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
    done(&mut p, job, 1, 10); // its chunk stored at once: this reservation stands for it
    let stored = Reservation::new(pool.clone(), 80);
    let a = done(&mut p, job, 2, 20);
    assert_eq!(dispatched(&a), vec![3]);
    assert_eq!(
        pool.used(),
        80 + 160 + 2 * 240,
        "chunk 1 stored, chunk 2 reserved on its way to storage, the sort's output and working memory"
    );
    let a = done(&mut p, job, 3, 30);
    assert_eq!(
        pool.used(),
        80 + 160 + 240,
        "its working memory given back when the task ends; its output reserved until stored"
    );
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.peak_host_reserved, 720);
    drop(stored);
}

#[test]
fn with_both_tiers_full_a_job_that_cannot_progress_fails_naming_both_budgets() {
    let pool = HostPool::new(100);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 1);
    let (job, a) = p.submit(graph(&[(1, &[]), (2, &[1])], &[2]), Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    // The stored chunks fill the host budget, 400 bytes past it, and the disk tier has
    // room for 300 (whether or not the store has spilled yet).
    let stored = Reservation::new(pool.clone(), 500);
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
fn outputs_read_back_for_delivery_are_not_counted_in_the_job_s_peak() {
    let pool = HostPool::new(1 << 20);
    let mut p = PlannerState::new(pool.clone());
    p.add_device(CPU, 1);
    let g = ChunkGraph {
        tasks: vec![source(1), source(2)],
        outputs: keys(&[1, 2]),
        ..Default::default()
    };
    let (job, a) = p.submit(g, Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    let a = done(&mut p, job, 1, 10);
    assert_eq!(dispatched(&a), vec![2]);
    drop(a); // chunk 1 stored; its reservation given back as if spilled
    let last = done(&mut p, job, 2, 10);
    // Storage reads the spilled outputs back for the caller while a late event (a device
    // added, storage's answer to an old ask) runs a dispatch pass.
    let read_back = Reservation::new(pool.clone(), 5000);
    assert!(p.add_device(DeviceId(9), 1).is_empty());
    let stats = deliver(&mut p, job, &last);
    assert_eq!(
        stats.peak_host_reserved, 160,
        "chunk 1 on its way to storage and task 2 running, never the read-back"
    );
    drop(read_back);
}
