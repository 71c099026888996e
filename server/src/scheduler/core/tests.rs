//! The scheduler's state driven by hand: workers are channels, reports are written here.

use super::*;
use std::time::Duration;
use tessera_core::testing::const_op;
use tessera_core::{ChunkTask, MAX_DROPS};
use tessera_cuda::GPU_MIN_ELEMENTS;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

type Down = UnboundedReceiver<Result<SchedulerMessage, Status>>;
type Events = UnboundedReceiver<Result<pb::JobEvent, Status>>;

fn config() -> SchedulerConfig {
    SchedulerConfig {
        heartbeat_interval: Duration::from_millis(100),
        heartbeat_ttl: Duration::from_secs(1),
        no_worker_grace: Duration::from_secs(2),
        secret: None,
    }
}

fn request(name: &str, version: u32) -> pb::RegisterWorkerRequest {
    pb::RegisterWorkerRequest {
        protocol_version: version,
        worker_name: name.into(),
        flight_address: format!("http://{name}:1"),
        nthreads: 1,
        memory_limit: 1 << 30,
        gpus: 0,
    }
}

/// Registers worker `name` and opens its stream: its incarnation and the stream's far end.
fn worker(core: &mut Core, name: &str) -> (u64, Down) {
    let incarnation = core
        .register(&request(name, PROTOCOL_VERSION))
        .expect("registered")
        .incarnation;
    let (tx, rx) = unbounded_channel();
    core.open_stream(incarnation, tx).expect("stream opens");
    (incarnation, rx)
}

/// Registers worker `name` with one GPU and opens its stream, as [`worker`].
fn gpu_worker(core: &mut Core, name: &str) -> (u64, Down) {
    let request = pb::RegisterWorkerRequest {
        gpus: 1,
        ..request(name, PROTOCOL_VERSION)
    };
    let incarnation = core.register(&request).expect("registered").incarnation;
    let (tx, rx) = unbounded_channel();
    core.open_stream(incarnation, tx).expect("stream opens");
    (incarnation, rx)
}

/// 1 a scalar (not worth a GPU), 2 a constant of GPU size; 3 reads both and is the output.
fn scalar_and_gpu_sized() -> ChunkGraph {
    let task = |key: u64, len: usize, inputs: &[u64]| {
        let inputs = inputs.iter().map(|&k| ChunkKey(k)).collect();
        ChunkTask::new(ChunkKey(key), const_op(key as i64, len), inputs)
    };
    ChunkGraph {
        tasks: vec![
            task(1, 1, &[]),
            task(2, GPU_MIN_ELEMENTS, &[]),
            task(3, 1, &[1, 2]),
        ],
        outputs: vec![ChunkKey(3)],
        ..ChunkGraph::default()
    }
}

/// 1 and 2 from nothing, 3 from both; 3 is the output.
fn graph() -> ChunkGraph {
    let task = |key: u64, inputs: &[u64]| {
        ChunkTask::new(
            ChunkKey(key),
            const_op(key as i64, 1),
            inputs.iter().map(|&k| ChunkKey(k)).collect(),
        )
    };
    ChunkGraph {
        tasks: vec![task(1, &[]), task(2, &[]), task(3, &[1, 2])],
        outputs: vec![ChunkKey(3)],
        ..ChunkGraph::default()
    }
}

/// The RunTasks waiting on a worker's stream.
fn tasks(down: &mut Down) -> Vec<pb::RunTask> {
    let mut out = Vec::new();
    while let Ok(Ok(m)) = down.try_recv() {
        if let Some(scheduler_message::Kind::RunTask(t)) = m.kind {
            out.push(t);
        }
    }
    out
}

fn done(incarnation: u64, t: &pb::RunTask) -> TaskStatus {
    TaskStatus {
        incarnation,
        job_id: t.job_id,
        chunk_key: t.chunk_key,
        attempt: t.attempt,
        state: TaskState::Done as i32,
        output_bytes: 8,
        ..TaskStatus::default()
    }
}

/// The last event of a job's stream, skipping acceptance and progress.
fn outcome(events: &mut Events) -> Option<job_event::Kind> {
    let mut last = None;
    while let Ok(Ok(e)) = events.try_recv() {
        match e.kind {
            Some(job_event::Kind::Accepted(_)) | Some(job_event::Kind::Progress(_)) => {}
            other => last = other,
        }
    }
    last
}

#[test]
fn a_worker_of_another_protocol_version_is_refused_naming_both() {
    let mut core = Core::new(config());
    let reason = core
        .register(&request("old", PROTOCOL_VERSION + 98))
        .err()
        .expect("refused");
    assert!(
        reason.contains(&(PROTOCOL_VERSION + 98).to_string()),
        "{reason}"
    );
    assert!(reason.contains(&PROTOCOL_VERSION.to_string()), "{reason}");
    assert_eq!(core.info().workers, 0);
    let (tx, _rx) = unbounded_channel();
    assert!(core.open_stream(77, tx).is_none(), "unknown incarnation");
}

#[test]
fn a_workers_gpu_takes_the_tasks_with_gpu_kernels_until_the_worker_is_lost() {
    let mut core = Core::new(config());
    let (inc_g, mut g) = gpu_worker(&mut core, "g");
    assert_eq!(core.info().worker_list[0].gpus, 1);
    // 1 is a scalar (not worth a GPU), 2 a constant of GPU size; 3 reads both.
    let (events, _rx) = unbounded_channel();
    core.submit(scalar_and_gpu_sized(), events, 0);
    let placed = |sent: Vec<pb::RunTask>| -> Vec<(u64, u32)> {
        let mut p: Vec<(u64, u32)> = sent.iter().map(|t| (t.chunk_key, t.gpu)).collect();
        p.sort_unstable();
        p
    };
    // The scalar on the worker's CPU pool, the large constant on its GPU.
    assert_eq!(placed(tasks(&mut g)), vec![(1, 0), (2, 1)]);
    // A CPU-only worker joins and g is lost: both run again there, on its CPU pool.
    let (_, mut c) = worker(&mut core, "c");
    core.worker_lost(inc_g, "killed");
    assert_eq!(placed(tasks(&mut c)), vec![(1, 0), (2, 0)]);
    assert_eq!(core.info().worker_list.len(), 1);
}

#[test]
fn a_workers_queue_depth_follows_its_cpu_tasks_not_its_gpus() {
    let mut core = Core::new(config());
    let (inc, mut down) = gpu_worker(&mut core, "g");
    let (events, _rx) = unbounded_channel();
    core.submit(scalar_and_gpu_sized(), events, 0);
    let mut sent = tasks(&mut down);
    sent.sort_by_key(|t| t.chunk_key);
    assert_eq!((sent[0].gpu, sent[1].gpu), (0, 1));
    let depth = |core: &Core| core.workers.values().map(|w| w.per_thread).sum::<usize>();
    let tiny = |t: &pb::RunTask| TaskStatus {
        run_micros: 10,
        ..done(inc, t)
    };
    // A tiny task on the GPU leaves the CPU queue's depth alone; one on the CPU pool
    // deepens it to the most.
    core.on_status(tiny(&sent[1]));
    assert_eq!(depth(&core), depth::DEFAULT_PER_THREAD);
    core.on_status(tiny(&sent[0]));
    assert_eq!(depth(&core), depth::MAX_PER_THREAD);
}

#[test]
fn inputs_go_out_as_locations_and_a_lost_holder_is_recomputed_elsewhere() {
    let mut core = Core::new(config());
    let (inc_a, mut a) = worker(&mut core, "a");
    let (inc_b, mut b) = worker(&mut core, "b");
    let (events, mut rx) = unbounded_channel();
    let job = core.submit(graph(), events, 0);
    let (mut on_a, mut on_b) = (tasks(&mut a), tasks(&mut b));
    assert_eq!(on_a.len() + on_b.len(), 2, "1 and 2 run, 3 waits");
    // Put chunk 1 on a and chunk 2 on b, whichever got which.
    let all: Vec<pb::RunTask> = on_a.drain(..).chain(on_b.drain(..)).collect();
    let one = all.iter().find(|t| t.chunk_key == 1).expect("task 1");
    let two = all.iter().find(|t| t.chunk_key == 2).expect("task 2");
    core.on_status(done(inc_a, one));
    core.on_status(done(inc_b, two));
    let three: Vec<pb::RunTask> = tasks(&mut a).into_iter().chain(tasks(&mut b)).collect();
    assert_eq!(three.len(), 1);
    let three = &three[0];
    assert_eq!(three.chunk_key, 3);
    let places: Vec<(u64, &str, u64)> = three
        .inputs
        .iter()
        .map(|l| (l.chunk_key, l.flight_address.as_str(), l.incarnation))
        .collect();
    assert_eq!(
        places,
        vec![(1, "http://a:1", inc_a), (2, "http://b:1", inc_b)]
    );

    // a dies before 3 reports: 1 is computed again on b; 3 (wherever it ran) is redone
    // or reported missing its input, and the job still ends with 3 on b.
    core.worker_lost(inc_a, "killed");
    // A late report of the dead incarnation changes nothing.
    core.on_status(done(inc_a, three));
    let again = tasks(&mut b);
    let redo_one = again
        .iter()
        .find(|t| t.chunk_key == 1)
        .expect("1 again on b");
    assert!(redo_one.attempt > one.attempt);
    if let Some(t3) = again.iter().find(|t| t.chunk_key == 3) {
        // 3 was running on a: it runs again once 1 is back.
        assert!(t3.attempt > three.attempt);
    } else {
        // 3 was running on b, reading 1 from a: it reports the input missing.
        core.on_status(TaskStatus {
            state: TaskState::InputMissing as i32,
            missing: vec![three.inputs[0].clone()],
            error: "connection refused".into(),
            ..done(inc_b, three)
        });
    }
    core.on_status(done(inc_b, redo_one));
    let last = tasks(&mut b)
        .into_iter()
        .find(|t| t.chunk_key == 3)
        .expect("3 runs again on b");
    assert_eq!(last.inputs[0].flight_address, "http://b:1");
    core.on_status(done(inc_b, &last));
    match outcome(&mut rx) {
        Some(job_event::Kind::Done(d)) => {
            assert_eq!(d.outputs.len(), 1);
            assert_eq!(d.outputs[0].flight_address, "http://b:1");
            assert_eq!(d.outputs[0].job_id, job.0);
            assert_eq!(d.outputs[0].chunk_key, 3);
        }
        other => panic!("{other:?}"),
    }
    // The gathered output is released once, then is unknown.
    let out = pb::ChunkRef {
        job_id: job.0,
        chunk_key: 3,
    };
    assert_eq!(core.release(std::slice::from_ref(&out)), 1);
    assert_eq!(core.release(&[out]), 0);
}

#[test]
fn a_silent_worker_is_lost_after_the_ttl_and_jobs_fail_after_the_grace() {
    let mut core = Core::new(config());
    let (_, mut a) = worker(&mut core, "a");
    let (events, mut rx) = unbounded_channel();
    core.submit(graph(), events, 0);
    assert_eq!(tasks(&mut a).len(), 2);
    let now = Instant::now();
    core.check_liveness(now + Duration::from_millis(500));
    assert_eq!(core.info().workers, 1, "within the TTL");
    core.check_liveness(now + Duration::from_millis(1500));
    assert_eq!(core.info().workers, 0, "silent past the TTL");
    assert!(outcome(&mut rx).is_none(), "the job waits for a worker");
    core.check_liveness(now + Duration::from_secs(5));
    match outcome(&mut rx) {
        Some(job_event::Kind::Failed(f)) => {
            assert_eq!(f.kind, "actor_lost");
            assert!(f.op.contains("every worker"), "{}", f.op);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_task_that_kills_three_workers_fails_the_job_as_killed_worker() {
    let mut core = Core::new(config());
    let (events, mut rx) = unbounded_channel();
    let graph = ChunkGraph {
        tasks: vec![ChunkTask::new(ChunkKey(1), const_op(1, 1), Vec::new())],
        outputs: vec![ChunkKey(1)],
        ..ChunkGraph::default()
    };
    core.submit(graph, events, 0);
    for i in 0..3 {
        let (inc, mut down) = worker(&mut core, &format!("w{i}"));
        assert_eq!(tasks(&mut down).len(), 1, "run {i}");
        core.worker_lost(inc, "killed");
    }
    match outcome(&mut rx) {
        Some(job_event::Kind::Failed(f)) => {
            assert!(f.killed_worker, "{f:?}");
            assert_eq!(f.chunk_key, 1);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_late_missing_input_report_naming_a_replaced_copy_loses_nothing_more() {
    let mut core = Core::new(config());
    let (inc_a, a) = worker(&mut core, "a");
    let (inc_b, b) = worker(&mut core, "b");
    let (incs, mut downs) = ([inc_a, inc_b], [a, b]);
    let (events, mut rx) = unbounded_channel();
    core.submit(graph(), events, 0);
    let first: Vec<pb::RunTask> = downs.iter_mut().flat_map(tasks).collect();
    let one = first.iter().find(|t| t.chunk_key == 1).expect("task 1");
    let two = first.iter().find(|t| t.chunk_key == 2).expect("task 2");
    core.on_status(done(inc_a, one));
    core.on_status(done(inc_b, two));
    // 3 runs on worker r and reads input x from the other worker, v.
    let on: Vec<Vec<pb::RunTask>> = downs.iter_mut().map(tasks).collect();
    let r = usize::from(on[0].is_empty());
    let v = 1 - r;
    let three = on[r].first().expect("3 dispatched").clone();
    let x = three
        .inputs
        .iter()
        .find(|l| l.incarnation == incs[v])
        .expect("an input held by the other worker")
        .clone();

    // v dies; x is computed again on r; only then does r's report of the old copy
    // arrive (twice: late and repeated).
    core.worker_lost(incs[v], "killed");
    let redo = tasks(&mut downs[r]);
    let redo_x = redo
        .iter()
        .find(|t| t.chunk_key == x.chunk_key)
        .expect("x recomputed on r");
    core.on_status(done(incs[r], redo_x));
    for _ in 0..2 {
        core.on_status(TaskStatus {
            state: TaskState::InputMissing as i32,
            missing: vec![x.clone()],
            error: "connection refused".into(),
            ..done(incs[r], &three)
        });
    }
    // 3 runs again reading the new copy, and the job ends: the stale reports lost
    // neither the new copy nor the job (which gives up after 2 losses of one chunk).
    let last = tasks(&mut downs[r])
        .into_iter()
        .find(|t| t.chunk_key == 3)
        .expect("3 runs again");
    assert!(last.inputs.iter().all(|l| l.incarnation == incs[r]));
    core.on_status(done(incs[r], &last));
    match outcome(&mut rx) {
        Some(job_event::Kind::Done(d)) => assert_eq!(d.outputs[0].chunk_key, 3),
        other => panic!("{other:?}"),
    }
}

#[test]
fn generated_chunks_go_out_droppable_and_a_dropped_input_is_recomputed_without_a_loss() {
    let mut core = Core::new(config());
    let (inc, mut down) = worker(&mut core, "a");
    let (events, mut rx) = unbounded_channel();
    core.submit(graph(), events, 0);
    // The RunTasks and the releases (job, key, attempt) waiting on the worker's stream.
    let mut drain = || {
        let (mut runs, mut released) = (Vec::new(), Vec::new());
        while let Ok(Ok(m)) = down.try_recv() {
            match m.kind {
                Some(scheduler_message::Kind::RunTask(t)) => runs.push(t),
                Some(scheduler_message::Kind::Release(r)) => {
                    released.push((r.job_id, r.chunk_key, r.attempt))
                }
                _ => {}
            }
        }
        (runs, released)
    };
    let (first, _) = drain();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|t| t.droppable), "1 and 2 read nothing");
    for t in &first {
        core.on_status(done(inc, t));
    }
    let (mut three, _) = drain();
    let mut three = three.pop().expect("3 runs");
    assert!(
        !three.droppable,
        "3 reads chunks, and it is the job's output"
    );
    // The worker's storage drops chunk 1 more often than a chunk may be lost: each time
    // the stale copy is released and 1 runs again, offered for dropping until MAX_DROPS.
    for drop in 1..=MAX_DROPS {
        let one = three.inputs[0].clone();
        core.on_status(TaskStatus {
            state: TaskState::InputMissing as i32,
            missing: vec![one.clone()],
            error: "dropped".into(),
            dropped: true,
            ..done(inc, &three)
        });
        let (runs, released) = drain();
        assert_eq!(released, vec![(one.job_id, 1, one.attempt)], "drop {drop}");
        let again = runs
            .iter()
            .find(|t| t.chunk_key == 1)
            .expect("1 runs again");
        assert_eq!(again.droppable, drop < MAX_DROPS, "drop {drop}");
        core.on_status(done(inc, again));
        let (mut runs, _) = drain();
        three = runs.pop().expect("3 runs again");
        assert_eq!(three.inputs[0].attempt, again.attempt);
    }
    core.on_status(done(inc, &three));
    let stats: tessera_core::JobStats = match outcome(&mut rx) {
        Some(job_event::Kind::Done(d)) => {
            assert_eq!(d.outputs[0].chunk_key, 3);
            tessera_proto::decode_payload(&d.stats).expect("stats")
        }
        other => panic!("the drops cost no loss, and the job ends: {other:?}"),
    };
    let drops = u64::from(MAX_DROPS);
    assert_eq!(stats.chunks_lost, 0);
    assert_eq!(stats.chunks_recomputed, drops);
    let dropped = (stats.storage.chunks_dropped, stats.storage.bytes_dropped);
    assert_eq!(
        dropped,
        (drops, 8 * drops),
        "counted as a local store counts them"
    );
}

#[test]
fn the_survivors_hear_that_a_worker_was_lost() {
    let mut core = Core::new(config());
    let (inc_a, _a) = worker(&mut core, "a");
    let (_, mut b) = worker(&mut core, "b");
    core.worker_lost(inc_a, "stopped");
    let mut notices = Vec::new();
    while let Ok(Ok(m)) = b.try_recv() {
        if let Some(scheduler_message::Kind::PeerLost(p)) = m.kind {
            notices.push((p.flight_address, p.incarnation));
        }
    }
    assert_eq!(notices, vec![("http://a:1".to_string(), inc_a)]);
    assert_eq!(core.info().workers, 1);
}

/// The chunks announced on a job's stream so far: key, holder, attempt.
fn announced(events: &mut Events) -> Vec<(u64, String, u64)> {
    let mut out = Vec::new();
    while let Ok(Ok(e)) = events.try_recv() {
        if let Some(job_event::Kind::ChunkFinished(f)) = e.kind {
            let l = f.location.expect("an announcement names its location");
            assert_eq!((l.chunk_key, l.nbytes), (f.chunk_key, f.bytes));
            out.push((l.chunk_key, l.flight_address, l.attempt));
        }
    }
    out
}

#[test]
fn outputs_handed_out_are_announced_with_their_location_as_soon_as_they_are_computed() {
    for keep in [false, true] {
        let mut core = Core::new(config());
        let (inc, mut a) = worker(&mut core, "a");
        let (events, mut rx) = unbounded_channel();
        let g = ChunkGraph {
            outputs: vec![ChunkKey(2), ChunkKey(3)],
            keep_outputs: keep,
            ..graph()
        };
        core.submit(g, events, 0);
        let first = tasks(&mut a);
        assert_eq!(first.len(), 2, "1 and 2 run");
        let by_key = |ts: &[pb::RunTask], k: u64| ts.iter().find(|t| t.chunk_key == k).cloned();
        let (one, two) = (by_key(&first, 1).expect("1"), by_key(&first, 2).expect("2"));
        core.on_status(done(inc, &one));
        assert_eq!(announced(&mut rx), vec![], "1 is not an output");
        core.on_status(done(inc, &two));
        let three = by_key(&tasks(&mut a), 3).expect("3 runs");
        let expect = |t: &pb::RunTask| match keep {
            false => vec![(t.chunk_key, "http://a:1".to_string(), t.attempt)],
            true => vec![],
        };
        assert_eq!(announced(&mut rx), expect(&two), "keep_outputs: {keep}");
        core.on_status(done(inc, &three));
        let mut rest = Vec::new();
        let mut finished = false;
        while let Ok(Ok(e)) = rx.try_recv() {
            match e.kind {
                Some(job_event::Kind::ChunkFinished(f)) => {
                    assert!(!finished, "announced after the job was done");
                    rest.push(f.chunk_key);
                }
                Some(job_event::Kind::Done(_)) => finished = true,
                _ => {}
            }
        }
        assert!(finished);
        let announced_three: Vec<u64> = expect(&three).into_iter().map(|(k, ..)| k).collect();
        assert_eq!(
            rest, announced_three,
            "3 is announced before the job is done"
        );
    }
}

/// The chunks a worker was told to release.
fn releases(down: &mut Down) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    while let Ok(Ok(m)) = down.try_recv() {
        if let Some(scheduler_message::Kind::Release(r)) = m.kind {
            out.push((r.job_id, r.chunk_key));
        }
    }
    out
}

#[test]
fn a_session_that_ends_releases_the_kept_outputs_and_placed_chunks_it_did_not_release() {
    let mut core = Core::new(config());
    let (inc, mut w) = worker(&mut core, "w");
    let session = core.open_session();
    let other = core.open_session();
    // A job whose output (3) is kept on the worker, as persisted data is.
    let (events, mut rx) = unbounded_channel();
    let kept = ChunkGraph {
        keep_outputs: true,
        ..graph()
    };
    let job = core.submit(kept, events, session);
    for _ in 0..2 {
        for t in tasks(&mut w) {
            core.on_status(done(inc, &t));
        }
    }
    assert!(matches!(outcome(&mut rx), Some(job_event::Kind::Done(_))));
    // Two chunks placed by this session, one by the other, one by no session.
    let placed = core.place_chunks(&[8, 8], session).expect("placed");
    let theirs = core.place_chunks(&[8], other).expect("placed");
    let nobodys = core.place_chunks(&[8], 0).expect("placed");
    // The client releases one placed chunk itself before it goes.
    let first = pb::ChunkRef {
        job_id: placed[0].job_id,
        chunk_key: placed[0].chunk_key,
    };
    assert_eq!(core.release(&[first]), 1);
    releases(&mut w);
    assert_eq!(core.info().worker_list[0].chunks_held, 4);

    assert_eq!(core.close_session(session), 2);
    let mut released = releases(&mut w);
    released.sort_unstable();
    let mut want = vec![(job.0, 3), (placed[1].job_id, placed[1].chunk_key)];
    want.sort_unstable();
    assert_eq!(released, want);
    assert_eq!(
        core.info().worker_list[0].chunks_held,
        2,
        "the others' stay"
    );
    assert_eq!(core.close_session(session), 0, "closed once");
    assert_eq!(core.close_session(other), 1);
    assert_eq!(
        releases(&mut w),
        vec![(theirs[0].job_id, theirs[0].chunk_key)]
    );
    assert_eq!(core.info().worker_list[0].chunks_held, 1);
    assert_eq!(nobodys.len(), 1);
}
