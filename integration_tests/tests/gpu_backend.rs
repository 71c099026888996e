//! The device backend (issue 17): `SessionBuilder::backend`, `TESSERA_BACKEND` and
//! `Tensor::to_backend`, and sessions computing on GPUs, checked against CPU sessions
//! computing the same thing.
//!
//! The GPU tests run where a GPU can be used. Elsewhere they check nothing, unless
//! `TESSERA_REQUIRE_GPU=1` is set: then a missing GPU fails them (on a GPU machine, run
//! `TESSERA_REQUIRE_GPU=1 cargo test -p tessera-integration-tests --test integration gpu_backend`).

use crate::common::{
    assert_bitwise, assert_same_close, builder, run, session, session_from, try_session_from,
    TestSession,
};
use std::sync::Arc;
use tessera::{
    tensor, DType, DeviceBackend, Error, FaultInjector, FaultKind, HostTensor, JobStats,
    LocalCluster, Progress, Session, SessionBuilder, Tensor, BACKEND_VAR,
};

/// True when `TESSERA_REQUIRE_GPU=1`: a GPU test without a GPU fails.
fn gpu_required() -> bool {
    std::env::var("TESSERA_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A session on the GPUs (and the CPU pool) built from `b`; `None` where no GPU can be
/// used, unless one is required.
fn gpu_session(b: SessionBuilder) -> Option<TestSession> {
    match try_session_from(b.backend(DeviceBackend::Cuda)) {
        Ok(s) => Some(s),
        Err(Error::GpuUnavailable(cause)) if !gpu_required() => {
            eprintln!("no GPU, nothing checked: {cause}");
            None
        }
        Err(e) => panic!("a GPU session was required (TESSERA_REQUIRE_GPU=1): {e}"),
    }
}

/// A new GPU session, whose planner has timed no dataframe task yet: its first ones go to
/// the GPU, whereas a session that has timed the CPU pool finishing them first may leave
/// them all to it (the GPU shares dataframe tasks, see `docs/guide/gpu.md`).
fn untimed_gpu() -> TestSession {
    gpu_session(builder()).expect("a GPU, as the test found before")
}

/// A CPU-only session built from `b`.
fn cpu_session(b: SessionBuilder) -> TestSession {
    try_session_from(b.backend(DeviceBackend::Cpu)).expect("a CPU session starts")
}

/// Executes `t` on `s`, with the job's statistics.
fn run_stats(s: &Session, t: &Tensor) -> (HostTensor, JobStats) {
    s.execute_with_stats(t)
        .unwrap_or_else(|e| panic!("execution failed: {e} ({e:?})"))
}

/// Checks that a job of a GPU session ran `gpu_tasks` of its tasks on a GPU, that the task
/// stream shows as many on devices other than the CPU pool's, and that the CPU pool ran
/// the rest (`cpu_too`: at least one).
fn assert_ran_on_gpu(stats: &JobStats, cpu_too: bool) {
    assert!(stats.chunks_on_gpu > 0, "no task ran on a GPU: {stats:?}");
    let on_gpu_in_stream: u64 = stats
        .stream
        .iter()
        .flat_map(|s| s.tasks.iter())
        .filter(|t| t.ok && t.device.0 != 0)
        .count() as u64;
    assert_eq!(
        on_gpu_in_stream, stats.chunks_on_gpu,
        "task stream vs counter"
    );
    if cpu_too {
        assert!(stats.chunks_run > stats.chunks_on_gpu, "{stats:?}");
    }
}

/// Monte Carlo pi, as in `examples/monte_carlo_pi.rs`, over `n` points in chunks of `rows`.
fn pi(n: usize, rows: usize) -> Tensor {
    let data = tensor::random::default_rng(42)
        .uniform(-1.0, 1.0, &[n, 2])
        .rechunk(&[rows, 2]);
    let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
    inside.astype(DType::F64) * 4.0 / n as f64
}

#[test]
fn cuda_is_a_typed_error_naming_the_cause_where_no_gpu_can_be_used() {
    match try_session_from(builder().backend(DeviceBackend::Cuda)) {
        Ok(s) => {
            // A GPU machine: the session says which devices it computes on.
            assert_eq!(s.config().backend, DeviceBackend::Cuda);
            assert!(
                s.config().devices[0].starts_with("cpu ("),
                "{:?}",
                s.config()
            );
            assert!(
                s.config().devices[1].starts_with("cuda:0 ("),
                "{:?}",
                s.config()
            );
        }
        Err(Error::GpuUnavailable(cause)) => {
            assert!(!gpu_required(), "TESSERA_REQUIRE_GPU=1 but: {cause}");
            assert!(
                ["CUDA", "NVRTC"].iter().any(|w| cause.contains(w)),
                "the cause is named: {cause}"
            );
            let e = Error::GpuUnavailable(cause);
            assert!(e
                .to_string()
                .starts_with("the cuda backend cannot be used: "));
        }
        Err(e) => panic!("expected GpuUnavailable, got {e:?}"),
    }
}

#[test]
fn auto_computes_what_the_cpu_computes() {
    let auto = try_session_from(builder().backend(DeviceBackend::Auto)).expect("auto starts");
    assert_eq!(auto.config().backend, DeviceBackend::Auto);
    assert!(auto.config().devices[0].starts_with("cpu (2 threads)"));
    let cpu = cpu_session(builder());
    assert_eq!(cpu.config().devices, vec!["cpu (2 threads)".to_string()]);
    let x = tensor::random::default_rng(3).uniform(-10.0, 10.0, &[300, 70]);
    let sincos = &x.sin() * &x.sin() + &x.cos() * &x.cos();
    let on_gpus = auto.config().devices.len() > 1;
    for t in [pi(100_000, 30_000), sincos] {
        let (got, stats) = run_stats(&auto, &t);
        assert_bitwise(&got, &run(&cpu, &t));
        if on_gpus {
            assert_ran_on_gpu(&stats, false);
        } else {
            assert_eq!(stats.chunks_on_gpu, 0, "{stats:?}");
        }
    }
}

#[test]
fn the_backend_comes_from_code_else_the_environment_else_cpu() {
    // The test binary may run under TESSERA_BACKEND (then every default session follows it).
    let from_env = DeviceBackend::from_env().expect("TESSERA_BACKEND, if set, is valid");
    let s = session();
    assert_eq!(s.config().backend, from_env.unwrap_or(DeviceBackend::Cpu));
    drop(s);
    assert_eq!(
        cpu_session(builder()).config().backend,
        DeviceBackend::Cpu,
        "code wins over the environment"
    );
    let value = |v: &str| DeviceBackend::from_env_value(Some(std::ffi::OsStr::new(v)));
    assert_eq!(value("cuda").unwrap(), Some(DeviceBackend::Cuda));
    assert_eq!(value("AUTO").unwrap(), Some(DeviceBackend::Auto));
    assert_eq!(value("").unwrap(), None);
    assert_eq!(DeviceBackend::from_env_value(None).unwrap(), None);
    for bad in ["rocm", "cuda:0", "1"] {
        match value(bad) {
            Err(tessera::UnknownBackend(m)) => {
                assert!(m.contains(BACKEND_VAR) && m.contains(bad), "{m}");
            }
            other => panic!("{bad}: expected UnknownBackend, got {other:?}"),
        }
    }
}

/// A local cluster of two 2-thread workers started with `--gpus gpus`.
fn cluster_with_gpus(gpus: &str) -> LocalCluster {
    LocalCluster::builder()
        .workers(2)
        .threads_per_worker(2)
        .gpus(gpus)
        .start()
        .expect("the local cluster starts (cargo builds its programs with the tests)")
}

#[test]
fn a_cluster_session_on_cuda_needs_a_worker_that_runs_a_gpu() {
    let c = cluster_with_gpus("none");
    match c.session_builder().backend(DeviceBackend::Cuda).build() {
        Err(Error::GpuUnavailable(m)) => {
            assert!(m.contains("none of the cluster's 2 workers"), "{m}");
            assert!(m.contains("--gpus"), "{m}");
        }
        other => panic!("expected GpuUnavailable, got {other:?}"),
    }
    // The cluster's workers decide where work runs: a CPU session there computes.
    let s = session_from(c.session_builder().backend(DeviceBackend::Cpu));
    let info = s.cluster_info().expect("cluster info").expect("a cluster");
    assert!(info.worker_list.iter().all(|w| w.gpus == 0), "{info:?}");
    let got = run(&s, &pi(100_000, 30_000));
    assert_bitwise(&got, &run(&cpu_session(builder()), &pi(100_000, 30_000)));
}

#[test]
fn a_local_clusters_workers_compute_on_the_backend_it_is_given() {
    // Cpu: no worker opens a GPU, even under TESSERA_BACKEND=cuda (the GPU suite's).
    let c = LocalCluster::builder()
        .workers(1)
        .backend(DeviceBackend::Cpu)
        .start()
        .expect("a CPU cluster starts");
    let info = c.info().expect("cluster info");
    assert_eq!(info.worker_list.iter().map(|w| w.gpus).sum::<u32>(), 0);
    // Cuda: every worker opens the GPUs, or the start fails naming why.
    match LocalCluster::builder()
        .workers(1)
        .backend(DeviceBackend::Cuda)
        .start()
    {
        Ok(c) => {
            let info = c.info().expect("cluster info");
            assert!(info.worker_list.iter().all(|w| w.gpus >= 1), "{info:?}");
        }
        Err(Error::Cluster(m)) => {
            assert!(!gpu_required(), "a GPU was required: {m}");
            assert!(m.contains("GPUs cannot be used"), "{m}");
        }
        Err(other) => panic!("expected a cluster error naming the GPUs, got {other:?}"),
    }
}

#[test]
fn a_worker_asked_for_a_gpu_that_is_not_there_fails_the_clusters_start() {
    match LocalCluster::builder().workers(1).gpus("4096").start() {
        Err(Error::Cluster(m)) => assert!(m.contains("GPUs cannot be used"), "{m}"),
        other => panic!("expected a cluster error naming the GPUs, got {other:?}"),
    }
}

#[test]
fn gpu_cluster_workers_run_gpu_tasks_with_the_cpus_answer() {
    use tessera::dataframe::{col, from_arrow, Agg};
    if gpu_session(builder()).is_none() {
        return;
    }
    let c = cluster_with_gpus("all");
    let on = |chunk: usize| {
        session_from(
            c.session_builder()
                .backend(DeviceBackend::Cuda)
                .chunk_bytes(chunk)
                .progress(Progress::Never),
        )
    };
    let s = on(1 << 20);
    let info = s.cluster_info().expect("cluster info").expect("a cluster");
    assert!(info.worker_list.iter().all(|w| w.gpus >= 1), "{info:?}");
    assert!(
        s.config().devices.iter().any(|d| d.starts_with("cuda (")),
        "{:?}",
        s.config()
    );
    let cpu = cpu_session(builder().chunk_bytes(1 << 20));
    // Fused elementwise work and a reduction: bit for bit the CPU's, on the workers' GPUs.
    let x = tensor::random::default_rng(11).uniform(-1e5, 1e5, &[1000, 700]);
    let (sin, cos) = (x.sin(), x.cos());
    for t in [&sin * &sin + &cos * &cos, pi(3_000_000, 262_144)] {
        let (got, stats) = run_stats(&s, &t);
        assert_bitwise(&got, &run(&cpu, &t));
        assert!(stats.chunks_on_gpu > 0, "no task ran on a GPU: {stats:?}");
    }
    // A filter feeding a groupby, over chunks spread on both workers.
    let table = groupby_table(200_000);
    let q = from_arrow(table, Some(20_000))
        .filter(col("f").gt(1_000.0))
        .groupby(&["name"])
        .agg(&[("v", &[Agg::Sum, Agg::Max]), ("f", &[Agg::Mean])]);
    assert_groupby_on_gpu(&q, &s, &cpu, "filtered groupby on the cluster's GPUs");
}

#[test]
fn gpu_monte_carlo_pi_equals_the_cpu_bit_for_bit_at_two_chunkings() {
    let Some(gpu) = gpu_session(builder()) else {
        return;
    };
    let cpu = cpu_session(builder());
    let n = 3_000_000;
    let want = run(&cpu, &pi(n, 1_000_000));
    for rows in [1_000_000, 262_144] {
        let (got, stats) = run_stats(&gpu, &pi(n, rows));
        assert_bitwise(&got, &want);
        assert_ran_on_gpu(&stats, false);
    }
    let estimate = want.item().expect("a scalar").as_f64();
    assert!((estimate - std::f64::consts::PI).abs() < 0.01, "{estimate}");
}

#[test]
fn gpu_sin_squared_plus_cos_squared_equals_the_cpu_elementwise() {
    let Some(gpu) = gpu_session(builder().chunk_bytes(1 << 20)) else {
        return;
    };
    let cpu = cpu_session(builder().chunk_bytes(1 << 20));
    // |x| < 2^17: f64 sin and cos are bit-identical on the GPU there (codegen's docs).
    let x = tensor::random::default_rng(11).uniform(-1e5, 1e5, &[1000, 700]);
    let (s, c) = (x.sin(), x.cos());
    let t = &s * &s + &c * &c;
    let (got, stats) = run_stats(&gpu, &t);
    assert_bitwise(&got, &run(&cpu, &t));
    assert_ran_on_gpu(&stats, false);
    let values = got.as_slice::<f64>().expect("f64");
    assert!(values.iter().all(|v| (v - 1.0).abs() < 1e-15));
}

#[test]
fn gpu_reductions_equal_the_cpu() {
    let Some(gpu) = gpu_session(builder().chunk_bytes(1 << 20)) else {
        return;
    };
    let cpu = cpu_session(builder().chunk_bytes(1 << 20));
    let x = tensor::random::default_rng(5).normal(0.0, 1.0, &[4000, 300]);
    let exact = [
        x.min(),
        x.argmax(),
        x.min_axis(0),
        x.argmax_axis(0),
        x.gt(0.5).sum(),
    ];
    for t in &exact {
        let (got, stats) = run_stats(&gpu, t);
        assert_bitwise(&got, &run(&cpu, t));
        assert_ran_on_gpu(&stats, false);
    }
    for t in [x.sum(), x.mean(), x.sum_axis(0), x.mean_axis(0)] {
        let (got, stats) = run_stats(&gpu, &t);
        assert_same_close(&got, &run(&cpu, &t), 1e-12);
        assert_ran_on_gpu(&stats, false);
    }
}

#[test]
fn gpu_ops_feed_cpu_ops_in_one_graph() {
    let Some(gpu) = gpu_session(builder().chunk_bytes(1 << 18)) else {
        return;
    };
    let cpu = cpu_session(builder().chunk_bytes(1 << 18));
    let rng = tensor::random::default_rng(9);
    // Fused on the GPU, a product (cuBLAS), fused again; the reduction over the product's
    // 4 row blocks is combined on the CPU pool (over its rows, a block's task would finish
    // its sums itself).
    let a = (rng.uniform(-2.0, 2.0, &[600, 200]) * 3.0).sin();
    let b = rng.normal(0.0, 1.0, &[200, 50]).exp() - 1.0;
    let t = (a.dot(&b) * 0.5).abs().sum_axis(0);
    let (got, stats) = run_stats(&gpu, &t);
    assert_same_close(&got, &run(&cpu, &t), 1e-12);
    assert_ran_on_gpu(&stats, true);
    assert!(
        stats.chunks_by_op.keys().any(|op| op.contains("matmul")),
        "{stats:?}"
    );
}

#[test]
fn a_killed_gpu_actor_is_restarted_and_the_answer_is_unchanged() {
    let faults =
        Arc::new(FaultInjector::new().on_nth(Some("fused_reduce"), 3, FaultKind::KillDevice));
    let Some(gpu) = gpu_session(builder().faults(Arc::clone(&faults))) else {
        return;
    };
    let cpu = cpu_session(builder());
    let t = pi(2_000_000, 100_000);
    let (got, stats) = run_stats(&gpu, &t);
    assert_bitwise(&got, &run(&cpu, &t));
    assert_eq!(faults.injected_of(FaultKind::KillDevice), 1);
    assert_eq!(stats.restarts, 1, "{stats:?}");
    assert!(stats.retries >= 1, "{stats:?}");
    // The restarted GPU actor takes the next job.
    let (again, stats) = run_stats(&gpu, &t);
    assert_bitwise(&again, &got);
    assert_ran_on_gpu(&stats, false);
}

/// Points inside the unit circle among `n` (rows of `rows`), their generation pinned to
/// `backend`: the count is exact, whichever device adds it up.
fn pinned_inside(n: usize, rows: usize, backend: DeviceBackend) -> Tensor {
    let data = tensor::random::default_rng(7)
        .uniform(-1.0, 1.0, &[n, 2])
        .rechunk(&[rows, 2])
        .to_backend(backend);
    (&data * &data).sum_axis(1).lt(1.0).sum()
}

#[test]
fn to_backend_keeps_the_values_and_cuda_without_a_gpu_is_a_typed_error() {
    let cpu = cpu_session(builder());
    let plain = pinned_inside(200_000, 50_000, DeviceBackend::Auto);
    let want = run(&cpu, &plain);
    for rows in [50_000, 7_000] {
        let (got, stats) = run_stats(&cpu, &pinned_inside(200_000, rows, DeviceBackend::Cpu));
        assert_bitwise(&got, &want);
        assert_eq!(stats.chunks_on_gpu, 0);
    }
    // Chained elementwise work after the pin reads the pinned chunks: one more task per
    // chunk than the fused plain job.
    let (_, plain_stats) = run_stats(&cpu, &plain);
    let (_, pinned_stats) = run_stats(&cpu, &pinned_inside(200_000, 50_000, DeviceBackend::Cpu));
    assert_eq!(plain_stats.chunks_run, 4 + 1, "{plain_stats:?}");
    assert_eq!(pinned_stats.chunks_run, plain_stats.chunks_run + 4);
    let refused = cpu
        .execute(&pinned_inside(1000, 100, DeviceBackend::Cuda))
        .unwrap_err();
    assert!(
        matches!(&refused, Error::GpuUnavailable(m) if m.contains("to_backend")),
        "{refused:?}"
    );
    // The session is still usable.
    assert_bitwise(&run(&cpu, &plain), &want);
}

#[test]
fn gpu_a_tensor_pinned_to_the_cpu_is_generated_there_and_read_on_the_gpu() {
    let Some(gpu) = gpu_session(builder()) else {
        return;
    };
    let cpu = cpu_session(builder());
    let (n, rows) = (2_000_000, 250_000);
    let want = run(&cpu, &pinned_inside(n, rows, DeviceBackend::Auto));
    // Unpinned, generation fuses into the GPU's tasks: 8 of them, plus combines.
    let (got, all) = run_stats(&gpu, &pinned_inside(n, rows, DeviceBackend::Auto));
    assert_bitwise(&got, &want);
    assert_eq!(all.chunks_on_gpu, 8, "{all:?}");
    // Pinned to the CPU: 8 generation tasks on the CPU pool, then the GPU reads them.
    let (got, pinned) = run_stats(&gpu, &pinned_inside(n, rows, DeviceBackend::Cpu));
    assert_bitwise(&got, &want);
    assert_ran_on_gpu(&pinned, true);
    assert_eq!(pinned.chunks_on_gpu, 8, "{pinned:?}");
    assert_eq!(pinned.chunks_run, all.chunks_run + 8, "{pinned:?}");
    // Pinned to CUDA in a GPU session: generated on the GPU as its own tasks.
    let (got, on_cuda) = run_stats(&gpu, &pinned_inside(n, rows, DeviceBackend::Cuda));
    assert_bitwise(&got, &want);
    assert_eq!(on_cuda.chunks_on_gpu, 16, "{on_cuda:?}");
}

/// A table of `n` rows: string and integer keys (some null), integer and float values
/// (some null, some NaN).
fn groupby_table(n: usize) -> arrow::array::RecordBatch {
    use arrow::array::{ArrayRef, Float64Array, Int64Array, LargeStringArray};
    let name: LargeStringArray = (0..n)
        .map(|i| (i % 17 != 5).then(|| format!("id{:03}", i * 31 % 100)))
        .collect();
    let id: Int64Array = (0..n)
        .map(|i| (i % 23 != 0).then_some((i * 7 % 1000) as i64))
        .collect();
    let v: Int64Array = (0..n).map(|i| Some((i % 5 + 1) as i64)).collect();
    let f: Float64Array = (0..n)
        .map(|i| match i % 11 {
            0 => None,
            1 => Some(f64::NAN),
            _ => Some(i as f64 * 0.25),
        })
        .collect();
    // The names again, dictionary-encoded (a categorical column).
    let category = arrow::datatypes::DataType::Dictionary(
        Box::new(arrow::datatypes::DataType::Int32),
        Box::new(arrow::datatypes::DataType::Utf8),
    );
    let cat = arrow::compute::cast(&name, &category).expect("a dictionary of the names");
    arrow::array::RecordBatch::try_from_iter(vec![
        ("name", Arc::new(name) as ArrayRef),
        ("id", Arc::new(id) as ArrayRef),
        ("v", Arc::new(v) as ArrayRef),
        ("f", Arc::new(f) as ArrayRef),
        ("cat", cat),
    ])
    .expect("a table")
}

#[test]
fn gpu_backend_groupby_partials_run_on_the_gpu_with_the_cpus_answer() {
    use tessera::dataframe::{from_arrow, Agg};
    if gpu_session(builder()).is_none() {
        return;
    }
    let cpu = cpu_session(builder());
    let table = groupby_table(200_000);
    for per_chunk in [7_777, 50_000, 200_000] {
        let df = from_arrow(table.clone(), Some(per_chunk));
        for keys in [
            &["name"][..],
            &["id"],
            &["name", "id"],
            &["cat"],
            &["cat", "id"],
        ] {
            let q = df.groupby(keys).agg(&[
                ("v", &[Agg::Sum, Agg::Count, Agg::Min, Agg::Max]),
                ("f", &[Agg::Sum, Agg::Mean, Agg::Max]),
            ]);
            let what = format!("by {keys:?}, {per_chunk} rows a chunk");
            assert_groupby_on_gpu(&q, &untimed_gpu(), &cpu, &what);
        }
    }
}

/// Runs the groupby `q` on `gpu` and on `cpu`: some partial ran on a GPU, and the tables
/// agree ([`assert_tables_close`]).
fn assert_groupby_on_gpu(
    q: &tessera::dataframe::DataFrame,
    gpu: &Session,
    cpu: &Session,
    what: &str,
) {
    let (got, stats) = q.execute_with_stats(gpu).expect("the GPU session's query");
    assert!(
        stats.chunks_on_gpu > 0,
        "no partial ran on a GPU ({what}): {stats:?}"
    );
    let want = q.execute(cpu).expect("the CPU session's query");
    assert_tables_close(&got, &want, what);
}

/// Asserts two groupby results are equal: float columns to 1e-9 relative (the device adds
/// in another order), the rest exactly.
fn assert_tables_close(
    got: &arrow::array::RecordBatch,
    want: &arrow::array::RecordBatch,
    what: &str,
) {
    assert_eq!(got.schema(), want.schema(), "{what}");
    assert_eq!(got.num_rows(), want.num_rows(), "{what}");
    for (c, field) in want.schema().fields().iter().enumerate() {
        let (g, w) = (got.column(c), want.column(c));
        if field.data_type() == &arrow::datatypes::DataType::Float64 {
            let (g, w) = (
                arrow::array::AsArray::as_primitive::<arrow::datatypes::Float64Type>(g),
                arrow::array::AsArray::as_primitive::<arrow::datatypes::Float64Type>(w),
            );
            for (x, y) in g.iter().zip(w.iter()) {
                let (x, y) = (x.unwrap_or(0.0), y.unwrap_or(0.0));
                assert!(
                    x == y || (x - y).abs() <= 1e-9 * y.abs().max(1.0),
                    "{} {what}: {x} vs {y}",
                    field.name()
                );
            }
        } else {
            assert_eq!(g, w, "{} {what}", field.name());
        }
    }
}

#[test]
fn gpu_backend_filters_run_on_the_gpu_with_the_cpus_answer() {
    use tessera::dataframe::{col, from_arrow, lit, Agg};
    if gpu_session(builder()).is_none() {
        return;
    }
    let cpu = cpu_session(builder());
    let table = groupby_table(200_000);
    let predicate = (col("f").gt(1_000.0) & col("name").ne("id042")) | (col("id") % lit(7)).eq(3);
    for per_chunk in [7_777, 200_000] {
        let kept = from_arrow(table.clone(), Some(per_chunk)).filter(predicate.clone());
        // Kept as a table: filtered on the GPU, equal to the CPU's rows exactly.
        let (got, stats) = kept
            .execute_with_stats(&untimed_gpu())
            .expect("the GPU session's filter");
        assert!(
            stats.chunks_on_gpu > 0,
            "no filter ran on the GPU: {stats:?}"
        );
        assert_eq!(got, kept.execute(&cpu).expect("the CPU session's filter"));
        assert!(got.num_rows() > 0 && got.num_rows() < table.num_rows());
        // Feeding a groupby: the filter's flags go straight to the device's groupby.
        let q = kept
            .groupby(&["name"])
            .agg(&[("v", &[Agg::Sum, Agg::Max]), ("f", &[Agg::Mean])]);
        let what = format!("{per_chunk} rows a chunk");
        assert_groupby_on_gpu(&q, &untimed_gpu(), &cpu, &what);
    }
}
