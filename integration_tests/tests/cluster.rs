//! The same jobs on a local cluster (a scheduler and worker processes on 127.0.0.1):
//! answers equal the in-process session's and hand-computed values, chunks travel between
//! workers, persisted data stays on the workers, and a killed worker loses nothing.

use crate::cluster_drills::program;
use crate::common::{
    assert_cancelled, builder, eventually, item_f64, session_from, SpillParent, TestSession,
    REPORT_PANELS,
};
use crate::dataframes::{frame_error, sorted_rows, TempDir};
use crate::persist::{frame, line, line_sum, upper_sums};
use arrow::datatypes::DataType;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tessera::dataframe::{
    col, lit, read_csv_with, Agg, CsvOptions, DataFrame, FrameError, ReadCsv,
};
use tessera::{linalg, tensor, Error, Launcher, LocalCluster, Progress, Session, Slice};

/// A cluster of `n` one-thread workers that notices a silent worker within 2 s.
fn cluster(n: usize) -> LocalCluster {
    LocalCluster::builder()
        .workers(n)
        .threads_per_worker(1)
        .heartbeat_ttl(Duration::from_secs(2))
        .no_worker_grace(Duration::from_secs(2))
        .start()
        .expect("the local cluster starts (cargo builds its programs with the tests)")
}

/// A session on `c` with `chunk` bytes per chunk.
fn on(c: &LocalCluster, chunk: usize) -> TestSession {
    session_from(
        c.session_builder()
            .chunk_bytes(chunk)
            .progress(Progress::Never),
    )
}

#[test]
fn tensor_jobs_on_two_workers_equal_hand_computed_and_local_answers() {
    let c = cluster(2);
    let s = on(&c, 8 << 10); // 1,024 f64 per chunk: ~100 chunks over both workers
    let n = 100_000;
    let total = s.execute(&line(n).sum()).unwrap();
    assert_eq!(item_f64(&total), line_sum(n));
    let stats = s.last_job_stats().expect("stats");
    assert!(stats.chunks_run >= 98, "{stats:?}");

    // Values, not just a reduction: every chunk gathered in order.
    let v = s.execute(&line(5000)).unwrap();
    let v = v.as_slice::<f64>().unwrap();
    assert!(v
        .iter()
        .enumerate()
        .all(|(i, &x)| x == 3.0 * i as f64 + 1.0));

    // Random data is a function of seed and position: bit-identical to a local session.
    let local = session_from(builder().chunk_bytes(8 << 10));
    let r = tensor::random::default_rng(7).uniform(-1.0, 1.0, &[300, 40]);
    let expr = (&r * &r).sum_axis(0);
    let here = local.execute(&expr).unwrap();
    let there = s.execute(&expr).unwrap();
    assert_eq!(
        here.as_slice::<f64>().unwrap(),
        there.as_slice::<f64>().unwrap()
    );
}

#[test]
fn linear_algebra_and_persisted_inputs_run_on_the_cluster() {
    let c = cluster(2);
    let s = on(&c, 32 << 10);
    let local = session_from(builder().chunk_bytes(32 << 10));
    let x = tensor::random::default_rng(3).uniform(0.0, 1.0, &[4000, 12]);
    let p = x.persist(&s).unwrap();
    let (_, sv, _) = linalg::svd(&p);
    let (_, sv_local, _) = linalg::svd(&x);
    let got = s.execute(&sv).unwrap();
    let want = local.execute(&sv_local).unwrap();
    for (a, b) in got
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .zip(want.as_slice::<f64>().unwrap())
    {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }
    // The persisted input is read again, not recomputed, and frees on drop.
    let sum = s.execute(&p.sum()).unwrap();
    let want_sum = local.execute(&x.sum()).unwrap();
    assert!((item_f64(&sum) - item_f64(&want_sum)).abs() < 1e-6);
    drop(p);
}

#[test]
fn dataframe_groupby_filter_and_persist_on_the_cluster() {
    let c = cluster(2);
    let s = on(&c, 8 << 10);
    let n = 30_000;
    let upper = frame(n, 1000).filter(col("v").gt(lit((n / 2) as f64 - 0.5)));
    let grouped = |df: &DataFrame| {
        let b = df
            .groupby(&["k"])
            .agg(&[("v", &[Agg::Sum])])
            .execute(&s)
            .unwrap();
        sorted_rows(&b)
    };
    assert_eq!(grouped(&upper), upper_sums(n));
    let p = upper.persist(&s).unwrap();
    assert_eq!(p.len(&s).unwrap(), n / 2);
    assert_eq!(grouped(&p), upper_sums(n));

    // A forced hash shuffle: each partition's parts are held on workers one by one.
    let shuffled = session_from(
        c.session_builder()
            .chunk_bytes(8 << 10)
            .shuffle_rows(0)
            .progress(Progress::Never),
    );
    let b = upper
        .groupby(&["k"])
        .agg(&[("v", &[Agg::Sum])])
        .execute(&shuffled)
        .unwrap();
    assert_eq!(sorted_rows(&b), upper_sums(n));
}

/// Per key `i * 7919 % groups` of `i` in `0..n`: the sum of `i` as f64, by hand.
fn many_groups(n: i64, groups: i64) -> (DataFrame, Vec<Vec<String>>) {
    let k = |i: i64| i * 7919 % groups;
    let columns: [(&str, arrow::array::ArrayRef); 2] = [
        (
            "k",
            std::sync::Arc::new(arrow::array::Int64Array::from_iter_values((0..n).map(k))),
        ),
        (
            "v",
            std::sync::Arc::new(arrow::array::Float64Array::from_iter_values(
                (0..n).map(|i| i as f64),
            )),
        ),
    ];
    let batch = arrow::array::RecordBatch::try_from_iter(columns).unwrap();
    let mut sums = BTreeMap::new();
    for i in 0..n {
        *sums.entry(k(i)).or_insert(0.0) += i as f64;
    }
    let mut rows: Vec<Vec<String>> = sums
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), format!("{v:?}")])
        .collect();
    rows.sort();
    (tessera::dataframe::from_arrow(batch, Some(1000)), rows)
}

#[test]
fn a_shuffle_merges_in_runs_within_the_workers_memory_limits() {
    let (frame, want) = many_groups(40_000, 16_000);
    let grouped = frame.groupby(&["k"]).agg(&[("v", &[Agg::Sum])]);
    let merges = |c: &LocalCluster| {
        let s = session_from(
            c.session_builder()
                .shuffle_rows(0)
                .progress(Progress::Never),
        );
        let (b, stats) = grouped.execute_with_stats(&s).unwrap();
        assert_eq!(sorted_rows(&b), want);
        stats.chunks_by_op.get("group_merge").copied().unwrap_or(0)
    };
    // With room: one merge a partition (4: two per thread).
    assert_eq!(merges(&cluster(2)), 4);
    // Workers of 256 KB each: a merge may take 512 KB / (2 * 3 * 2 threads), about 43 KB,
    // under the ~200 KB of partials a partition holds, so each merges in runs first. The
    // client's own budget (the default) plays no part.
    let tight = LocalCluster::builder()
        .workers(2)
        .threads_per_worker(1)
        .memory_limit(256 << 10)
        .start()
        .expect("cluster");
    assert!(merges(&tight) > 8);
}

#[test]
fn generated_chunks_a_worker_drops_under_pressure_are_computed_again_without_a_loss() {
    // A cumulative sum reads each generated chunk of `x` twice, far apart (its chunk sums
    // first, then the chunk again with the carry). Under workers of 56 KB the chunks wait
    // in the workers' storage, where computing one again costs less than a spill and a
    // read back: the worker drops it, its reader reports it dropped, and the scheduler
    // runs its producer again, which counts no loss.
    let n = 200_000;
    let job = tensor::arange_f64(0.0, n as f64, 1.0).cumsum();
    let run = |c: &LocalCluster| {
        let s = on(c, 8 << 10);
        let (out, stats) = s.execute_with_stats(&job).unwrap();
        let v = out.as_slice::<f64>().expect("f64 output").to_vec();
        (v, stats)
    };
    let tight = LocalCluster::builder()
        .workers(2)
        .threads_per_worker(1)
        .memory_limit(56 << 10)
        .start()
        .expect("cluster");
    let (v, stats) = run(&tight);
    assert_eq!(v.len(), n);
    let mut sum = 0.0;
    for (i, &got) in v.iter().enumerate() {
        sum += i as f64;
        assert_eq!(got, sum, "element {i}");
    }
    assert!(stats.storage.chunks_dropped > 0, "{stats:?}");
    assert!(stats.chunks_recomputed >= stats.storage.chunks_dropped);
    assert_eq!(stats.chunks_lost, 0);
    // With room nothing is dropped, and the answer is the same.
    let (plain, stats) = run(&cluster(2));
    assert_eq!(plain, v);
    assert_eq!((stats.chunks_recomputed, stats.chunks_lost), (0, 0));
    assert_eq!(stats.storage.chunks_dropped, 0);
}

#[test]
fn a_killed_worker_loses_no_result() {
    let mut c = cluster(2);
    let s = on(&c, 8 << 10);
    let n = 200_000;
    // Persisted chunks sit on both workers; killing one loses half of them.
    let p = line(n).persist(&s).unwrap();
    assert_eq!(item_f64(&s.execute(&p.sum()).unwrap()), line_sum(n));
    assert!(c.kill_worker(0));
    let after = s.execute(&p.sum()).unwrap();
    assert_eq!(item_f64(&after), line_sum(n), "recomputed from lineage");

    // A worker killed while a job runs: its tasks and chunks are redone elsewhere.
    c.restart_worker(0).unwrap();
    let job = {
        let expr = (&line(n) * 2.0).sum();
        // `s` holds the test guard for both sessions.
        let s2 = c
            .session_builder()
            .chunk_bytes(8 << 10)
            .progress(Progress::Never)
            .build()
            .unwrap();
        std::thread::spawn(move || s2.execute(&expr).map(|h| item_f64(&h)))
    };
    std::thread::sleep(Duration::from_millis(150));
    c.kill_worker(1);
    let got = job.join().unwrap().unwrap();
    assert_eq!(got, 2.0 * line_sum(n));
}

/// `cancel_jobs` (a front end's Ctrl-C) ends a job running on the cluster: the client drops
/// the job's event stream, which makes the scheduler cancel it on the workers. The session
/// and the cluster then run the next job. The cancel is repeated until the job ends, so it
/// lands whenever the job thread gets to submit.
#[test]
fn cancel_jobs_ends_a_cluster_job_and_the_cluster_runs_the_next() {
    let c = cluster(1);
    let s = on(&c, 512 << 10);
    // 4,096 chunks of random numbers on one one-thread worker: far longer than a cancel.
    let long = tensor::random::default_rng(3)
        .uniform(0.0, 1.0, &[1 << 28])
        .rechunk(&[1 << 16])
        .sin()
        .sum();
    assert_cancelled(&s, &long);
    let n = 10_000;
    assert_eq!(item_f64(&s.execute(&line(n).sum()).unwrap()), line_sum(n));
}

#[test]
fn a_cluster_without_workers_fails_jobs_in_bounded_time() {
    let mut c = cluster(1);
    let s = on(&c, 8 << 10);
    assert!(c.kill_worker(0));
    let started = Instant::now();
    let err = s.execute(&line(10_000).sum()).unwrap_err();
    assert!(
        matches!(&err, Error::ActorLost { actor, .. } if actor.contains("every worker")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn a_cluster_started_through_launchers_runs_jobs_and_a_bad_launcher_is_named() {
    // `env PROGRAM ARGS`: the launcher's own arguments come before the program's, as the
    // Python package's `python -m tessera.worker` does.
    let via_env = |name: &str| Launcher::new("env", [program(name)]);
    let s = LocalCluster::builder()
        .workers(2)
        .threads_per_worker(1)
        .programs(via_env("tessera-scheduler"), via_env("tessera-worker"))
        .start_session()
        .unwrap();
    let total = s.execute(&line(20_000).sum()).unwrap();
    assert_eq!(item_f64(&total), line_sum(20_000));
    assert_eq!(s.cluster_info().unwrap().unwrap().workers, 2);
    drop(s);

    let missing = Launcher::new("/nonexistent/tessera-launcher", ["-m", "tessera.scheduler"]);
    let err = LocalCluster::builder()
        .programs(missing.clone(), missing)
        .start()
        .unwrap_err();
    assert!(
        matches!(&err, Error::Cluster(m) if m.contains("/nonexistent/tessera-launcher -m tessera.scheduler")),
        "{err}"
    );
}

#[test]
fn connecting_to_nothing_is_a_typed_error() {
    // A port nobody listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = Session::connect(&format!("127.0.0.1:{port}")).unwrap_err();
    assert!(
        matches!(&err, Error::Cluster(m) if m.contains(&port.to_string())),
        "{err}"
    );
}

#[test]
fn data_made_in_this_process_goes_to_the_workers_by_flight_and_is_released_after() {
    let c = cluster(2);
    let s = on(&c, 8 << 20);
    // 72 MB made here: more than a job's graph may carry (64 MiB), so it travels by
    // Flight do_put to the workers, in 9 chunks.
    let n = 9_000_000;
    let values: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let big = tensor::from_vec(values, &[n]);
    let want = (n / 1000) as f64 * 499_500.0;
    assert_eq!(item_f64(&s.execute(&big.sum()).unwrap()), want);
    // The literal is the output itself: gathered back whole.
    let back = s.execute(&big.slice(&[Slice::from(-3..)])).unwrap();
    assert_eq!(back.as_slice::<f64>().unwrap(), &[997.0, 998.0, 999.0]);
    let whole = s.execute(&big).unwrap();
    assert_eq!(whole.as_slice::<f64>().unwrap().len(), n);
    assert_eq!(whole.as_slice::<f64>().unwrap()[n - 1], 999.0);
    // Released once each job ended: the workers hold nothing of them.
    assert_workers_hold_nothing_and_compute(&s);
}

/// Chunks the workers of `s`'s cluster hold, as the scheduler counts them.
fn chunks_held(s: &TestSession) -> u64 {
    let info = s.cluster_info().unwrap().expect("a cluster session");
    info.worker_list.iter().map(|w| w.chunks_held).sum()
}

/// Waits until the workers of `s`'s cluster hold no chunk, then checks that `s` still
/// computes.
fn assert_workers_hold_nothing_and_compute(s: &TestSession) {
    assert!(
        eventually(|| chunks_held(s) == 0),
        "{} chunks held",
        chunks_held(s)
    );
    assert_eq!(
        item_f64(&s.execute(&line(1000).sum()).unwrap()),
        line_sum(1000)
    );
}

#[test]
fn a_client_that_goes_away_without_releasing_leaves_nothing_on_the_workers() {
    let c = cluster(2);
    let watcher = on(&c, 1 << 20);
    {
        let s = on(&c, 1 << 20);
        let p = line(1_000_000).persist(&s).unwrap();
        assert!(
            chunks_held(&watcher) > 0,
            "the persisted chunks are on the workers"
        );
        assert_eq!(item_f64(&s.execute(&p.sum()).unwrap()), line_sum(1_000_000));
        // The client never releases them, as one that crashes or exits does not.
        std::mem::forget(p);
    }
    // Its session ended with it: the scheduler released what it owned.
    assert_workers_hold_nothing_and_compute(&watcher);
}

#[test]
fn a_worker_s_dataframe_error_keeps_its_type() {
    let c = cluster(2);
    let s = on(&c, 8 << 10);
    let dir = TempDir::new("cluster-frame-error");
    // An unparsable number in a column declared Int64, far into the file: a worker finds it.
    let mut text = String::from("a,b\n");
    for i in 0..5000 {
        text.push_str(&format!("{i},{i}\n"));
    }
    text.push_str("5000,x4\n");
    let path = dir.file("bad.csv", &text);
    let options = ReadCsv {
        csv: CsvOptions {
            dtypes: vec![("b".into(), DataType::Int64)],
            ..CsvOptions::default()
        },
        chunk_bytes: Some(4096),
    };
    match frame_error(&s, &read_csv_with(&path, options)) {
        FrameError::Parse { line, column, .. } => assert_eq!((line, column.as_str()), (5002, "b")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cluster_job_s_task_stream_shows_each_task_on_its_worker_and_reaches_the_report() {
    let c = cluster(2);
    let s = on(&c, 8 << 10);
    let spill = SpillParent::new("cluster-report");
    let path = spill.0.join("report.html");
    let recording = s.performance_report(&path).unwrap();
    let n = 100_000;
    let (total, stats) = s.execute_with_stats(&line(n).sum()).unwrap();
    assert_eq!(item_f64(&total), line_sum(n));
    recording.finish().unwrap();

    assert_eq!(stats.stream.len(), 1, "one stream: the scheduler's");
    let stream = &stats.stream[0];
    assert_eq!(
        stream.tasks.len() as u64,
        stats.chunks_run,
        "one record per task"
    );
    // Workers are the planner's devices, one thread each; where they run GPUs (the suite
    // on a GPU machine), each GPU is a device after its worker's, with 4 host threads.
    let info = s.cluster_info().unwrap().unwrap();
    let gpus: u32 = info.worker_list.iter().map(|w| w.gpus).sum();
    let (devices, threads) = (info.workers + gpus, if gpus == 0 { 1 } else { 4 });
    let mut per_op: BTreeMap<String, u64> = BTreeMap::new();
    for r in &stream.tasks {
        assert!(r.ok, "{r:?}");
        assert!((1..=devices).contains(&r.device.0), "{r:?}");
        assert!(r.span.thread < threads, "{r:?}");
        assert!(r.span.start_ns <= r.span.end_ns, "{r:?}");
        assert!(stream.submitted_ns <= r.span.end_ns && r.span.end_ns <= stream.finished_ns);
        *per_op.entry(r.op.to_string()).or_default() += 1;
    }
    let by_op: BTreeMap<String, u64> = stats
        .chunks_by_op
        .iter()
        .map(|(op, n)| (op.to_string(), *n))
        .collect();
    assert_eq!(per_op, by_op);
    let bytes_out: u64 = stream.tasks.iter().map(|r| r.bytes_out).sum();
    assert_eq!(bytes_out, stats.bytes_produced);

    let html = std::fs::read_to_string(&path).unwrap();
    for id in REPORT_PANELS {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "panel {id}"
        );
    }
    assert!(
        html.contains("fused_reduce"),
        "the task stream names the ops"
    );
}
