//! The same expression under several chunkings (explicit `rechunk` shapes and session
//! `chunk_bytes`) gives the same answer — bitwise for integers, bools and random values —
//! and the sequential reference executor agrees with the actor execution.

use crate::common::*;
use tessera::reference::execute_sequential;
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, HostTensor, Slice, Tensor};

const CHUNK_BYTES: [usize; 4] = [8, 8 * 13, 8 * 1000, 32 << 20];

/// Integer, bool and float expressions over a (24, 30) input cut into `chunks` (automatic
/// chunks from the session's byte budget for `None`).
fn expressions(chunks: Option<&[usize]>) -> Vec<(&'static str, Tensor)> {
    let pin = |t: Tensor| match chunks {
        Some(c) => t.rechunk(c),
        None => t,
    };
    let a = pin(tensor::arange(-300, 420, 1).reshape(&[24, 30]));
    let b = tensor::from_vec((0..30).map(|i| (i * 7 % 11) - 5).collect(), &[30]);
    let f = pin(tensor::linspace(-2.0, 3.0, 720).reshape(&[24, 30]));
    let ai = &a * &b + 7i64;
    vec![
        ("int elementwise", ai.clone()),
        ("int sum axis 0", ai.sum_axis(0)),
        ("int sum axis 1", ai.sum_axis(-1)),
        ("int sum", ai.sum()),
        (
            "int prod of small values",
            (a.gt(-1000i64).astype(DType::I64) + 1i64)
                .slice(&[Slice::from(0..2)])
                .prod(),
        ),
        ("int max", ai.max_axis(1)),
        ("int argmax", ai.argmax_axis(0)),
        ("int argmin all", ai.argmin()),
        ("int count_nonzero", ai.count_nonzero_axis(0)),
        ("bool compare", ai.gt(100i64)),
        ("bool any", ai.gt(1000i64).any_axis(1)),
        ("bool all", ai.gt(-5000i64).all_axis(0)),
        (
            "sliced transpose",
            ai.transpose()
                .slice(&[Slice::all().step(-3), Slice::new(Some(1), None, 5)]),
        ),
        (
            "reshape",
            ai.reshape(&[-1, 8]).slice(&[Slice::all().step(7)]),
        ),
        ("float elementwise", &f * &f - 2.0 * &f + 1.0),
        ("float sum", (&f * &f).sum()),
        ("float mean axis", f.mean_axis(0)),
        ("float var", f.var(1)),
        ("float std axis", f.std_axis(1, 0)),
        ("float min", f.min_axis(0)),
        (
            "where",
            tensor::where_(&f.gt(0.5f64), &f, ai.astype(DType::F64)),
        ),
        (
            "concat",
            tensor::concatenate(&[&a, &a.slice(&[Slice::from(0..5)])], 0),
        ),
    ]
}

fn is_float_reduction(name: &str) -> bool {
    matches!(
        name,
        "float sum" | "float mean axis" | "float var" | "float std axis"
    )
}

fn compare(name: &str, got: &HostTensor, want: &HostTensor, what: &str) {
    if is_float_reduction(name) {
        assert_eq!(got.shape(), want.shape(), "{name} ({what})");
        assert_eq!(got.dtype(), want.dtype(), "{name} ({what})");
        for (g, w) in got.to_f64_vec().into_iter().zip(want.to_f64_vec()) {
            assert!(close(g, w, 1e-12, 1e-12), "{name} ({what}): {g} vs {w}");
        }
    } else {
        assert_eq!(got, want, "{name} ({what}) differs");
        if got.dtype() == DType::F64 {
            assert_bitwise(got, want);
        }
    }
}

#[test]
fn same_answer_under_every_chunking() {
    let s = session();
    let base: Vec<(&str, HostTensor)> = expressions(Some(&[24, 30]))
        .into_iter()
        .map(|(n, t)| (n, run(&s, &t)))
        .collect();
    // Spot-check the base against a plain computation.
    let a: Vec<i64> = (-300..420).collect();
    let b: Vec<i64> = (0..30).map(|i| (i * 7 % 11) - 5).collect();
    let ai: Vec<i64> = (0..720).map(|k| a[k] * b[k % 30] + 7).collect();
    assert_eq!(i64s(&base[0].1), ai);
    assert_eq!(item(&base[3].1).as_i64(), ai.iter().sum::<i64>());
    assert_eq!(item(&base[4].1).as_i64(), 1i64 << 60);
    let col_sums: Vec<i64> = (0..30)
        .map(|j| (0..24).map(|i| ai[i * 30 + j]).sum())
        .collect();
    assert_eq!(i64s(&base[1].1), col_sums);
    for chunks in [
        vec![1, 1],
        vec![5, 7],
        vec![24, 1],
        vec![1, 30],
        vec![7, 30],
        vec![13, 17],
    ] {
        for ((name, t), (_, want)) in expressions(Some(&chunks)).into_iter().zip(&base) {
            compare(name, &run(&s, &t), want, &format!("chunks {chunks:?}"));
        }
    }
    drop(s);
    for chunk_bytes in CHUNK_BYTES {
        let s = session_with_chunks(chunk_bytes);
        for ((name, t), (_, want)) in expressions(None).into_iter().zip(&base) {
            compare(
                name,
                &run(&s, &t),
                want,
                &format!("chunk_bytes {chunk_bytes}"),
            );
        }
    }
}

#[test]
fn a_reduction_with_one_partial_per_output_chunk_runs_no_combine() {
    let s = session();
    let x = tensor::arange(0, 720, 1).reshape(&[24, 30]);
    let ops = |t: &Tensor| {
        s.execute_with_stats(t)
            .map(|(h, stats)| (h, stats.chunks_by_op))
            .unwrap_or_else(|e| panic!("execution failed: {e}"))
    };
    // One chunk: its task finishes the sum.
    let (sum, by_op) = ops(&x.rechunk(&[24, 30]).sum());
    assert_eq!(item(&sum).as_i64(), (0..720).sum::<i64>());
    assert_eq!(by_op.get("fused_reduce"), Some(&1), "{by_op:?}");
    assert_eq!(by_op.get("combine"), None, "{by_op:?}");
    // Full-height column blocks: each column block's task finishes its sums (a mean too).
    let (sums, by_op) = ops(&x.rechunk(&[24, 7]).sum_axis(0));
    let want: Vec<i64> = (0..30).map(|j| (0..24).map(|i| i * 30 + j).sum()).collect();
    assert_eq!(i64s(&sums), want);
    assert_eq!(by_op.get("fused_reduce"), Some(&5), "{by_op:?}");
    assert_eq!(by_op.get("combine"), None, "{by_op:?}");
    let (means, _) = ops(&x.rechunk(&[24, 7]).mean_axis(0));
    let want: Vec<f64> = want.iter().map(|&v| v as f64 / 24.0).collect();
    assert_eq!(means.to_f64_vec(), want);
    // Row blocks reduced over their rows: partials from several tasks are combined.
    let (sums, by_op) = ops(&x.rechunk(&[5, 30]).sum_axis(0));
    assert_eq!(i64s(&sums).len(), 30);
    assert!(by_op.get("combine").is_some_and(|&n| n >= 1), "{by_op:?}");
}

#[test]
fn reference_executor_agrees_with_actors() {
    let s = session();
    for chunks in [vec![24, 30], vec![5, 7], vec![1, 3]] {
        for (name, t) in expressions(Some(&chunks)) {
            let actor = run(&s, &t);
            let seq = execute_sequential(&t, 8 * 64)
                .unwrap_or_else(|e| panic!("{name}: sequential execution failed: {e}"));
            compare(
                name,
                &seq,
                &actor,
                &format!("sequential vs actors, chunks {chunks:?}"),
            );
        }
    }
    // Random expressions too, under the sequential executor's own automatic chunking.
    let g = default_rng(5);
    let u = g.normal(0.0, 1.0, &[50, 40]);
    let e = (&u * &u).sum_axis(0);
    let actor = run(&s, &e);
    for chunk_bytes in [8, 8 * 77, 1 << 20] {
        compare(
            "float sum",
            &execute_sequential(&e, chunk_bytes).unwrap(),
            &actor,
            "sequential random",
        );
    }
    // A failing kernel fails the same way in the reference executor.
    match execute_sequential(&tensor::arange(1, 5, 1).pow(-1i64), 1024) {
        Err(tessera::Error::ChunkFailed { .. }) => {}
        other => panic!("expected ChunkFailed from the sequential executor, got {other:?}"),
    }
}

/// The Monte Carlo pi estimate of the crate docs.
fn pi_expression(n: usize, chunk: Option<usize>) -> Tensor {
    let rng = default_rng(7);
    let mut data = rng.uniform(-1.0, 1.0, &[n, 2]);
    if let Some(c) = chunk {
        data = data.rechunk(&[c, 2]);
    }
    let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
    inside.astype(DType::F64) * 4.0 / n as f64
}

#[test]
fn monte_carlo_pi() {
    let n = 1_000_000;
    let mut estimates = Vec::new();
    {
        // Explicit chunk shapes on the random points.
        let s = session();
        for chunk in [None, Some(100_000), Some(333_333)] {
            let h = run(&s, &pi_expression(n, chunk));
            assert_eq!(h.shape(), &[] as &[usize]);
            assert_eq!(h.dtype(), DType::F64);
            estimates.push(item_f64(&h));
        }
    }
    // Automatic chunks of three sizes: these jobs must really run in several chunks.
    for chunk_bytes in [8 * 65_536, 8 * 100_000, 8 * 333_333] {
        let s = session_with_chunks(chunk_bytes);
        let (h, stats) = s
            .execute_with_stats(&pi_expression(n, None))
            .expect("pi job");
        assert!(stats.chunks_run > 2, "chunk_bytes {chunk_bytes}: {stats:?}");
        estimates.push(item_f64(&h));
    }
    for e in &estimates {
        assert!((e - std::f64::consts::PI).abs() < 0.01, "pi estimate {e}");
        assert_eq!(
            e.to_bits(),
            estimates[0].to_bits(),
            "pi estimates differ across chunkings: {estimates:?}"
        );
    }
    // Cross-check the count against the same points computed in plain Rust from the tensor.
    let s = session();
    let pts = f64s(&run(&s, &default_rng(7).uniform(-1.0, 1.0, &[n, 2])));
    let inside = pts
        .chunks(2)
        .filter(|p| (p[0] * p[0] + p[1] * p[1]).sqrt() < 1.0)
        .count();
    assert_eq!(estimates[0], inside as f64 * 4.0 / n as f64);
}

/// `rechunk` promises the given chunk shape; an elementwise operation on a rechunked tensor
/// should keep it (Dask does), so a job over 10 explicit chunks runs at least 10 tasks.
#[test]
fn explicit_chunks_survive_elementwise_operations() {
    let s = session();
    let g = default_rng(1);
    let cases: Vec<(&str, Tensor)> = vec![
        (
            "ones.rechunk([100]).sum()",
            tensor::ones(&[1000], DType::F64).rechunk(&[100]).sum(),
        ),
        (
            "ones.rechunk([100]) * 3.0",
            tensor::ones(&[1000], DType::F64).rechunk(&[100]) * 3.0,
        ),
        (
            "(ones.rechunk([100]) * 3.0).sum()",
            (tensor::ones(&[1000], DType::F64).rechunk(&[100]) * 3.0).sum(),
        ),
        (
            "arange.rechunk([100]) * 3",
            tensor::arange(0, 1000, 1).rechunk(&[100]) * 3i64,
        ),
        (
            "arange.rechunk([100]).neg().sum()",
            tensor::arange(0, 1000, 1).rechunk(&[100]).neg().sum(),
        ),
        (
            "random.rechunk([100]) + 1.0",
            g.random(&[1000]).rechunk(&[100]) + 1.0,
        ),
        (
            "from_vec.rechunk([100]) * 3",
            tensor::from_vec((0..1000i64).collect(), &[1000]).rechunk(&[100]) * 3i64,
        ),
    ];
    let mut failures = Vec::new();
    for (what, t) in cases {
        let (_, stats) = s.execute_with_stats(&t).expect("job runs");
        let kernel_tasks: u64 = stats
            .chunks_by_op
            .iter()
            .filter(|(op, _)| op.as_str() != "literal" && op.as_str() != "combine")
            .map(|(_, n)| n)
            .sum();
        if kernel_tasks < 10 {
            failures.push(format!(
                "{what}: {} chunk tasks {:?}",
                stats.chunks_run, stats.chunks_by_op
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "explicit chunks were dropped:\n{}",
        failures.join("\n")
    );
}
