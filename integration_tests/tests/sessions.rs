//! Sessions: eager mode, job statistics, clean shutdown, and two sessions at once.

use crate::common::*;
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, Error, Session, Slice, Tensor};

/// Names of this process's threads that start with `prefix` followed by `-`.
fn threads_named(prefix: &str) -> Vec<String> {
    let want = format!("{prefix}-");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let Ok(entry) = entry else { continue };
        if let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) {
            let name = name.trim_end().to_string();
            if name.starts_with(&want) {
                out.push(name);
            }
        }
    }
    out
}

/// Waits up to about a second for every thread named `prefix-…` to end.
fn wait_gone(prefix: &str) -> Vec<String> {
    for _ in 0..100 {
        let left = threads_named(prefix);
        if left.is_empty() {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    threads_named(prefix)
}

#[test]
fn shutdown_and_drop_join_every_thread() {
    let s = session();
    let prefix = s.thread_prefix().to_string();
    assert!(!prefix.is_empty());
    good(&s);
    let running = threads_named(&prefix);
    assert!(
        running.len() >= 2,
        "expected the session's worker threads, found {running:?}"
    );
    assert!(running.iter().any(|n| n.contains("cpu")), "{running:?}");
    // Storage has a thread of its own: spill I/O never holds up planning.
    assert!(running.iter().any(|n| n.ends_with("-store")), "{running:?}");
    s.shutdown().expect("clean shutdown");
    // shutdown joins its threads: none may remain (no waiting needed, but tolerate the
    // kernel's bookkeeping lag).
    assert_eq!(
        threads_named(&prefix),
        Vec::<String>::new(),
        "threads left right after shutdown"
    );
    assert_eq!(wait_gone(&prefix), Vec::<String>::new());

    // Dropping does the same.
    let s = session();
    let prefix2 = s.thread_prefix().to_string();
    assert_ne!(prefix, prefix2, "each session has its own thread prefix");
    good(&s);
    assert!(!threads_named(&prefix2).is_empty());
    drop(s);
    assert_eq!(
        threads_named(&prefix2),
        Vec::<String>::new(),
        "threads left after drop"
    );

    // A session that never ran a job shuts down cleanly too.
    let s = session();
    let prefix3 = s.thread_prefix().to_string();
    s.shutdown().expect("clean shutdown");
    assert_eq!(wait_gone(&prefix3), Vec::<String>::new());

    // A session whose last job failed shuts down cleanly.
    let s = session();
    let prefix4 = s.thread_prefix().to_string();
    assert!(matches!(
        tensor::arange(1, 5, 1).pow(-1i64).execute(&s),
        Err(Error::ChunkFailed { .. })
    ));
    s.shutdown().expect("clean shutdown after a failed job");
    assert_eq!(wait_gone(&prefix4), Vec::<String>::new());
}

fn good(s: &Session) {
    let h = run(s, &tensor::arange(0, 1000, 1).rechunk(&[100]).sum());
    assert_eq!(h.item().unwrap().as_i64(), 499_500);
}

#[test]
fn job_statistics() {
    let s = session();
    assert!(s.last_job_stats().is_none(), "no job yet");
    let t = tensor::arange(0, 1000, 1).rechunk(&[100]).sum();
    let (h, stats) = s.execute_with_stats(&t).expect("job runs");
    assert_eq!(h.item().unwrap().as_i64(), 499_500);
    assert!(
        stats.chunks_run > 1,
        "a 10-chunk job runs several tasks: {stats:?}"
    );
    assert!(
        stats.chunks_run >= 10,
        "at least one task per input chunk: {stats:?}"
    );
    assert!(stats.bytes_produced > 0, "{stats:?}");
    assert_eq!(
        stats.chunks_by_op.values().sum::<u64>(),
        stats.chunks_run,
        "{stats:?}"
    );
    let last = s.last_job_stats().expect("stats of the last job");
    assert_eq!(last.chunks_run, stats.chunks_run);
    assert_eq!(last.bytes_produced, stats.bytes_produced);

    // A bigger job with more chunks runs more tasks; the stats follow the latest job.
    let t2 = tensor::arange(0, 4000, 1)
        .reshape(&[40, 100])
        .rechunk(&[1, 100])
        .sum_axis(1);
    let h2 = run(&s, &t2);
    assert_eq!(h2.shape(), &[40]);
    let stats2 = s.last_job_stats().unwrap();
    assert!(
        stats2.chunks_run > stats.chunks_run,
        "{stats2:?} vs {stats:?}"
    );
    assert!(
        stats2.bytes_produced >= 40 * 8,
        "the output alone is 320 bytes: {stats2:?}"
    );

    // A single-chunk job.
    let (_, one) = s
        .execute_with_stats(&tensor::ones(&[4], DType::F64))
        .unwrap();
    assert!(one.chunks_run >= 1 && one.bytes_produced >= 32, "{one:?}");
    // A failed job leaves the last good stats alone or replaces them, but never panics.
    let _ = tensor::arange(1, 3, 1).pow(-2i64).execute(&s);
    let _ = s.last_job_stats();
}

#[test]
fn two_sessions_run_side_by_side() {
    let a = session();
    let b = session_with_chunks(8 * 16);
    assert_ne!(a.thread_prefix(), b.thread_prefix());
    let t = default_rng(3).randint(0, 100, &[5000]);
    let ha = run(&a, &t.sum());
    let hb = run(&b, &t.sum());
    assert_eq!(ha, hb);
    std::thread::scope(|sc| {
        let ja = sc.spawn(|| run(&a, &(&t * 2i64).max()));
        let jb = sc.spawn(|| run(&b, &(&t * 2i64).max()));
        assert_eq!(ja.join().unwrap(), jb.join().unwrap());
    });
    // The config reflects the builder.
    assert_eq!(a.config().threads, 2);
    assert_eq!(b.config().chunk_bytes, 8 * 16);
    assert!(!a.config().eager);
}

/// Expressions evaluated both lazily and eagerly.
fn eager_exprs() -> Vec<Tensor> {
    let g = default_rng(99);
    let x = g.uniform(-1.0, 1.0, &[40, 30]);
    let k = g.randint(-10, 10, &[40, 30]);
    let y = (&x * 2.0 + 1.0).abs().sqrt();
    let z = &k * 3i64 - 1i64;
    vec![
        y.clone(),
        y.sum_axis(0),
        y.mean(),
        z.sum_axis(1),
        z.argmax_axis(0),
        z.gt(0i64).count_nonzero(),
        z.slice(&[Slice::all().step(-3), Slice::from(2..9)]),
        z.transpose().reshape(&[-1, 60]),
        tensor::concatenate(&[&z.astype(DType::F64), &y], 1),
        tensor::where_(&z.lt(0i64), &y, &x),
        (&x * &x).sum_axis(1).sqrt().lt(1.0).sum(),
        tensor::linspace(0.0, 1.0, 11).var(1),
    ]
}

#[test]
fn eager_mode_matches_lazy_results() {
    // Exclusive: while the eager session lives, every operation in the process runs on it.
    let _exclusive = exclusive();
    let lazy = builder().build().expect("lazy session");
    let want: Vec<_> = eager_exprs().iter().map(|t| run(&lazy, t)).collect();
    let wrong = tensor::ones(&[3], DType::F64) + tensor::ones(&[4], DType::F64);
    let wrong_err = wrong.error().cloned().expect("shape error");

    let eager = builder().eager(true).build().expect("eager session");
    assert!(eager.config().eager);
    let got: Vec<_> = eager_exprs().iter().map(|t| run(&eager, t)).collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "expression {i}");
        assert_eq!(g.dtype(), w.dtype(), "expression {i}");
        assert_same_close(g, w, 1e-12);
    }
    // Eager tensors already hold their values: executing them on the lazy session, or
    // with the sequential reference executor, gives the same answer.
    let exprs = eager_exprs();
    for (t, w) in exprs.iter().zip(&want) {
        assert_same_close(&run(&lazy, t), w, 1e-12);
        assert_same_close(
            &tessera::reference::execute_sequential(t, 1 << 20).expect("sequential"),
            w,
            1e-12,
        );
    }
    // A failing kernel fails when the operation is built.
    let bad = tensor::arange(1, 5, 1).pow(-1i64);
    assert!(
        matches!(bad.error(), Some(Error::ChunkFailed { .. })),
        "{:?}",
        bad.error()
    );
    // Each operation ran at once: a new eager session (which takes over eager execution
    // from the first) has job statistics without any execute.
    let fresh = builder().eager(true).build().expect("second eager session");
    assert!(fresh.last_job_stats().is_none());
    let _ = tensor::arange(0, 10, 1) * 2i64;
    assert!(
        fresh.last_job_stats().is_some(),
        "an operation in eager mode runs a job"
    );
    drop(fresh);
    // Dropping the newer eager session ends eager execution for the process.
    assert!((tensor::arange(0, 10, 1) * 2i64).execute(&lazy).is_ok());
    // Errors still come back typed, at once.
    let wrong = tensor::ones(&[3], DType::F64) + tensor::ones(&[4], DType::F64);
    assert_eq!(wrong.error(), Some(&wrong_err));
    let prefix = eager.thread_prefix().to_string();
    eager.shutdown().expect("eager session shuts down");
    assert!(threads_named(&prefix).is_empty());
    // After the eager session is gone, operations are lazy again.
    let t = tensor::arange(0, 10, 1) * 2i64;
    assert_eq!(
        i64s(&run(&lazy, &t)),
        (0..10).map(|v| v * 2).collect::<Vec<_>>()
    );
    lazy.shutdown().expect("lazy session shuts down");
}

#[test]
fn small_memory_budgets_give_the_same_results() {
    let _reader = session();
    let n = 200_000i64;
    let want_sum = 2 * (n - 1) * n / 2;
    for budget in [1u64 << 20, 64 << 10, 4 << 10] {
        let s = builder()
            .memory_budget(budget)
            .chunk_bytes(8 * 1024)
            .build()
            .expect("session with a small budget");
        let x = tensor::arange(0, n, 1);
        let h = run(&s, &(&x * 2i64).sum());
        assert_eq!(item(&h).as_i64(), want_sum, "budget {budget}");
        let h = run(&s, &(&x * 2i64));
        assert_eq!(
            i64s(&h),
            (0..n).map(|v| 2 * v).collect::<Vec<_>>(),
            "budget {budget}"
        );
        let h = run(&s, &x.reshape(&[400, 500]).transpose().sum_axis(1));
        let want: Vec<i64> = (0..500)
            .map(|j| (0..400).map(|i| i * 500 + j).sum())
            .collect();
        assert_eq!(i64s(&h), want, "budget {budget}");
    }
}

#[test]
fn concurrent_jobs_on_one_session() {
    let s = session();
    std::thread::scope(|sc| {
        let handles: Vec<_> = (0..4i64)
            .map(|k| {
                let s = &s;
                sc.spawn(move || {
                    let t = (tensor::arange(0, 10_000, 1).rechunk(&[333]) * k).sum();
                    (k, run(s, &t))
                })
            })
            .collect();
        for h in handles {
            let (k, got) = h.join().expect("job thread");
            assert_eq!(item(&got).as_i64(), k * 49_995_000);
        }
    });
    // A session with a single worker thread.
    let one = builder().threads(1).build().expect("one-thread session");
    assert_eq!(
        item(&run(&one, &tensor::arange(0, 1000, 1).rechunk(&[10]).max())).as_i64(),
        999
    );
}

/// `cancel_jobs` (a front end's Ctrl-C) ends a running job with a "cancelled" error, and
/// the session runs the next job. The cancel is repeated until the job ends, so it lands
/// whenever the job thread gets to submit.
#[test]
fn cancel_jobs_ends_a_running_job_and_the_session_stays_usable() {
    let s = builder().threads(1).build().expect("one-thread session");
    // Thousands of chunks of random numbers: far longer than the cancel takes to land.
    let long = default_rng(3)
        .uniform(0.0, 1.0, &[1 << 30])
        .rechunk(&[1 << 16])
        .sin()
        .sum();
    assert_cancelled(&s, &long);
    good(&s);
}
