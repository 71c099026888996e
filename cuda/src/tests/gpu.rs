//! The GPU suite: generated kernels run on a real device by [`Gpu`] and judged against the
//! CPU evaluator (`compare::check`): the whole corpus, the fault cases, reductions large
//! enough to spread over every multiprocessor, the benchmark kernels, concurrent callers
//! and bad input. Each test runs where device 0 opens; where none does it checks that the
//! error says why, unless `TESSERA_REQUIRE_GPU=1`, which makes a missing device a failure
//! (the device machine's script sets it, so a broken driver setup cannot pass as a skip).

use super::compare::{self, Agreement, Judge};
use super::corpus::{self, inputs_for};
use crate::codegen::fused_source;
use crate::workloads::{self, reduce_all, uniform};
use crate::Gpu;
use std::mem::discriminant;
use std::sync::Arc;
use tessera_kernels::dtype::DType;
use tessera_kernels::expr::{
    ChunkReduce, Distribution, FusedKernel, InstrKind, LeafSource, ReduceOp,
};
use tessera_kernels::linalg::{InputRef, LinalgOp, MatOperand};
use tessera_kernels::tensor::{Buffer, HostTensor};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// Device 0, or `None` (after checking the error) where this machine has none.
pub(crate) fn device() -> Option<Gpu> {
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            let required = std::env::var("TESSERA_REQUIRE_GPU").is_ok_and(|v| v == "1");
            assert!(!required, "TESSERA_REQUIRE_GPU=1, but no GPU opened: {e}");
            assert!(matches!(e, KernelError::DeviceUnavailable(_)), "{e:?}");
            None
        }
    }
}

/// `Gpu::execute`'s chunk, taken out of its `Arc` to be compared.
pub(crate) fn run(
    gpu: &Gpu,
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
) -> Result<ChunkData, KernelError> {
    gpu.execute(op, inputs).map(Arc::unwrap_or_clone)
}

/// `Gpu::execute_timed`'s chunk, taken out of its `Arc`, and device time.
pub(crate) fn run_timed(
    gpu: &Gpu,
    op: &ChunkOp,
    inputs: &[Arc<ChunkData>],
) -> Result<(ChunkData, std::time::Duration), KernelError> {
    gpu.execute_timed(op, inputs)
        .map(|(data, took)| (Arc::unwrap_or_clone(data), took))
}

/// Runs every `(label, kernel)` on `gpu` and judges it; panics listing the disagreements.
#[allow(clippy::print_stderr)]
fn judge_all(gpu: &Gpu, what: &str, cases: Vec<(String, FusedKernel)>) {
    // Compile on every core first (NVRTC takes tens of milliseconds a kernel); a kernel
    // that does not compile fails below, in its own case.
    let sources: Vec<_> = cases
        .iter()
        .filter_map(|(_, k)| fused_source(k).ok())
        .collect();
    let per_thread = sources
        .len()
        .div_ceil(std::thread::available_parallelism().map_or(4, |n| n.get()))
        .max(1);
    std::thread::scope(|s| {
        for part in sources.chunks(per_thread) {
            s.spawn(|| part.iter().for_each(|k| drop(gpu.function(k))));
        }
    });
    let (mut exact, mut close, mut failures) = (0, Vec::new(), Vec::new());
    for (label, kernel) in &cases {
        let inputs = inputs_for(kernel);
        let got = run(gpu, &ChunkOp::Fused(kernel.clone()), &inputs);
        match compare::check(kernel, &inputs, got, Judge::Device) {
            Ok(Agreement::Exact) => exact += 1,
            Ok(Agreement::Close) => close.push(label.clone()),
            Err(m) => failures.push(format!("{label}: {m}")),
        }
    }
    eprintln!(
        "{what} on {}: {exact} bit-identical, {} within tolerance, {} differ; {} kernels compiled",
        gpu.describe(),
        close.len(),
        failures.len(),
        gpu.cached_kernels()
    );
    if !close.is_empty() {
        eprintln!("within tolerance: {}", close.join(", "));
    }
    assert!(
        failures.is_empty(),
        "{} of {} kernels differ from the CPU on the GPU:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn gpu_runs_the_corpus_like_the_cpu() {
    let Some(gpu) = device() else { return };
    let mut cases: Vec<_> = corpus::cases()
        .into_iter()
        .map(|c| (c.label, c.kernel))
        .collect();
    cases.extend(compare::fault_cases());
    judge_all(&gpu, "corpus", cases);
}

/// A random `(rows, cols)` leaf of `dist` as `dtype`, reduced by `op` over `axes`.
fn random_reduce(
    rows: usize,
    cols: usize,
    dist: Distribution,
    op: ReduceOp,
    axes: Vec<usize>,
) -> FusedKernel {
    let shape = [rows, cols];
    let mut leaf = uniform(&shape, 0.0, 1.0, 7);
    let InstrKind::Leaf(LeafSource::Random { dist: d, .. }) = &mut leaf.kind else {
        unreachable!("uniform() is a random leaf")
    };
    *d = dist;
    if matches!(dist, Distribution::RandInt { .. }) {
        leaf.dtype = DType::I64;
    }
    FusedKernel {
        root: 0,
        instrs: vec![leaf],
        reduce: Some(ChunkReduce {
            axes,
            ..reduce_all(&shape, op)
        }),
    }
}

#[test]
fn gpu_reductions_over_many_blocks_match_the_cpu() {
    let Some(gpu) = device() else { return };
    let normal = Distribution::Normal {
        mean: 1.5,
        std: 2.0,
    };
    let ints = Distribution::RandInt {
        low: -1000,
        high: 1000,
    };
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Var { ddof: 1 },
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::ArgMin,
        ReduceOp::ArgMax,
        ReduceOp::CountNonzero,
    ];
    let mut cases = Vec::new();
    // One slot of 3e6 (many records), 1e3 slots of 3e3 (one record each), and the
    // leading axis of a tall matrix (strided slots).
    for (rows, cols, axes) in [
        (3_000, 1_000, vec![0, 1]),
        (1_000, 3_001, vec![1]),
        (20_011, 7, vec![0]),
    ] {
        for op in ops {
            for (name, dist) in [("normal", normal), ("int", ints)] {
                let label = format!(
                    "{rows}x{cols} {name} {} over {axes:?}",
                    corpus::op_label(op)
                );
                let partial = random_reduce(rows, cols, dist, op, axes.clone());
                // The same reduction finished by its task (a one-chunk reduction's plan):
                // the GPU's partial, finished on the host, against the CPU's.
                if let Some(finished) = corpus::finished(&partial) {
                    cases.push((format!("{label}, finished"), finished));
                }
                cases.push((label, partial));
            }
        }
    }
    judge_all(&gpu, "large reductions", cases);
}

#[test]
fn gpu_benchmark_kernels_match_the_cpu() {
    let Some(gpu) = device() else { return };
    judge_all(
        &gpu,
        "benchmark kernels",
        vec![
            ("pi 1e7".into(), workloads::pi(10_000_000, 42)),
            ("pi 999_983".into(), workloads::pi(999_983, 3)),
            ("sincos 2000".into(), workloads::sincos(2_000, 42)),
        ],
    );
}

#[test]
fn gpu_serves_concurrent_callers_and_compiles_each_kernel_once() {
    let Some(gpu) = device() else { return };
    let gpu = Arc::new(gpu);
    let kernel = ChunkOp::Fused(workloads::pi(1_000_000, 5));
    let want = tessera_kernels::cpu::execute(&kernel, &[]).unwrap();
    let before = gpu.cached_kernels();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let (gpu, kernel) = (Arc::clone(&gpu), kernel.clone());
            std::thread::spawn(move || (0..5).map(|_| run(&gpu, &kernel, &[])).collect::<Vec<_>>())
        })
        .collect();
    for t in threads {
        for got in t.join().unwrap() {
            assert_eq!(got.as_ref(), Ok(&want));
        }
    }
    assert_eq!(gpu.cached_kernels(), before + 1);
}

#[test]
fn gpu_refuses_what_it_cannot_run_with_typed_errors() {
    let Some(gpu) = device() else {
        return;
    };
    let missing = Gpu::open(4096).unwrap_err();
    assert!(
        matches!(&missing, KernelError::DeviceUnavailable(m) if m.contains("4096")),
        "{missing:?}"
    );
    // An input of another dtype than the kernel was generated for.
    let case = corpus::cases()
        .into_iter()
        .find(|c| !inputs_for(&c.kernel).is_empty())
        .unwrap();
    let wrong: Vec<_> = inputs_for(&case.kernel)
        .iter()
        .map(|_| {
            Arc::new(ChunkData::Tensor(HostTensor::scalar(
                tessera_kernels::Scalar::Bool(true),
            )))
        })
        .collect();
    let got = run(&gpu, &ChunkOp::Fused(case.kernel), &wrong);
    assert!(matches!(got, Err(KernelError::BadInput(_))), "{got:?}");
    // Ops without a CUDA kernel are refused, not run somewhere else.
    assert!(Gpu::runs(&ChunkOp::Linalg(LinalgOp::MatMul {
        pairs: vec![]
    })));
    let literal = ChunkOp::Literal(Arc::new(ChunkData::Tensor(HostTensor::scalar(
        tessera_kernels::Scalar::I64(1),
    ))));
    assert!(!Gpu::runs(&literal));
    assert!(matches!(
        run(&gpu, &literal, &[]),
        Err(KernelError::DeviceUnavailable(_))
    ));
}

/// A deterministic `rows × cols` `f64` tensor (a splitmix sequence in `[-1, 1)`).
fn matrix(rows: usize, cols: usize, seed: u64) -> HostTensor {
    let mut s = seed;
    let values = (0..rows * cols)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let z = (s ^ (s >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect();
    HostTensor::new(vec![rows, cols], Buffer::F64(values)).unwrap()
}

/// `‖got − want‖ / ‖want‖` (Frobenius), or `None` when the shapes differ.
fn relative_error(got: &ChunkData, want: &ChunkData) -> Option<f64> {
    let (ChunkData::Tensor(g), ChunkData::Tensor(w)) = (got, want) else {
        return None;
    };
    (g.shape() == w.shape()).then(|| {
        let (g, w) = (g.to_f64_vec(), w.to_f64_vec());
        let diff: f64 = g.iter().zip(&w).map(|(a, b)| (a - b) * (a - b)).sum();
        let norm: f64 = w.iter().map(|b| b * b).sum();
        (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
    })
}

/// A QR of a block the task computes (a PCA's centred rows) has no device kernel: it is
/// the CPU's, while a QR of an input block is the device's.
#[test]
fn a_qr_of_a_computed_block_is_left_to_the_cpu() {
    let computed = MatOperand::Fused(Box::new(FusedKernel {
        root: 0,
        instrs: vec![uniform(&[8, 3], -1.0, 1.0, 7)],
        reduce: None,
    }));
    assert!(!Gpu::runs(&ChunkOp::Linalg(LinalgOp::Qr(computed))));
    let stored = MatOperand::Input(InputRef::whole(0));
    assert!(Gpu::runs(&ChunkOp::Linalg(LinalgOp::Qr(stored))));
}

#[test]
fn gpu_products_match_the_cpu() {
    let Some(gpu) = device() else { return };
    let input = |i| MatOperand::Input(InputRef::whole(i));
    let generated = |rows, cols, seed| {
        let shape = [rows, cols];
        MatOperand::Fused(Box::new(FusedKernel {
            root: 0,
            instrs: vec![uniform(&shape, -1.0, 1.0, seed)],
            reduce: None,
        }))
    };
    let inputs: Vec<Arc<ChunkData>> = vec![
        Arc::new(ChunkData::Tensor(matrix(300, 200, 1))),
        Arc::new(ChunkData::Tensor(matrix(200, 100, 2))),
        Arc::new(ChunkData::Tensor(matrix(300, 50, 3))),
        Arc::new(ChunkData::Parts(vec![matrix(2, 2, 4), matrix(80, 100, 5)])),
        Arc::new(ChunkData::Tensor(matrix(300, 0, 6))),
        Arc::new(ChunkData::Tensor(matrix(0, 100, 7))),
    ];
    let rows_of_part = MatOperand::Input(InputRef {
        input: 3,
        part: Some(1),
        rows: Some((30, 50)),
    });
    let cases: Vec<(&str, Vec<(MatOperand, MatOperand)>)> = vec![
        ("one pair", vec![(input(0), input(1))]),
        (
            "two pairs, a part's row range",
            vec![(input(0), input(1)), (input(2), rows_of_part)],
        ),
        ("generated left", vec![(generated(300, 200, 9), input(1))]),
        ("generated right", vec![(input(0), generated(200, 100, 10))]),
        (
            "both generated",
            vec![(generated(64, 4096, 11), generated(4096, 64, 12))],
        ),
        ("inner size 0", vec![(input(4), input(5))]),
        ("inner sizes differ", vec![(input(1), input(1))]),
        (
            "products differ",
            vec![(input(0), input(1)), (input(1), input(1))],
        ),
        ("no pairs", vec![]),
    ];
    for (label, pairs) in cases {
        let op = ChunkOp::Linalg(LinalgOp::MatMul { pairs });
        let want = tessera_kernels::cpu::execute(&op, &inputs);
        let got = run(&gpu, &op, &inputs);
        match (&want, &got) {
            (Ok(w), Ok(g)) => {
                let err = relative_error(g, w);
                assert!(
                    err.is_some_and(|e| e <= 1e-13),
                    "{label}: relative error {err:?}"
                );
            }
            (Err(w), Err(g)) => {
                assert_eq!(discriminant(w), discriminant(g), "{label}: {g:?} vs {w:?}")
            }
            _ => panic!("{label}: GPU {got:?}, CPU {want:?}"),
        }
    }
}

/// The parts of a QR result: `(Q, R)` as tensors.
fn q_and_r(data: &ChunkData) -> (&HostTensor, &HostTensor) {
    match data {
        ChunkData::Parts(p) if p.len() == 2 => (&p[0], &p[1]),
        other => panic!("a QR gave {}", other.kind_name()),
    }
}

#[test]
fn gpu_qr_blocks_match_the_cpu_and_factor_their_block() {
    let Some(gpu) = device() else { return };
    let inputs: Vec<Arc<ChunkData>> = vec![
        Arc::new(ChunkData::Tensor(matrix(2_000, 20, 21))),
        Arc::new(ChunkData::Tensor(matrix(60, 60, 22))),
        Arc::new(ChunkData::Tensor(matrix(12, 40, 23))),
        Arc::new(ChunkData::Parts(vec![matrix(2, 2, 24), matrix(500, 7, 25)])),
        Arc::new(ChunkData::Tensor(matrix(0, 5, 26))),
        Arc::new(ChunkData::Tensor(
            HostTensor::new(vec![2, 2], Buffer::F64(vec![1.0, f64::NAN, 0.0, 1.0])).unwrap(),
        )),
    ];
    let cases = [
        ("tall", InputRef::whole(0)),
        ("square", InputRef::whole(1)),
        ("wide", InputRef::whole(2)),
        (
            "a part's row range",
            InputRef {
                input: 3,
                part: Some(1),
                rows: Some((100, 300)),
            },
        ),
        ("empty", InputRef::whole(4)),
        ("not finite", InputRef::whole(5)),
        ("no such part", InputRef::part(0, 1)),
    ];
    for (label, a) in cases {
        let op = ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(a.clone())));
        assert!(Gpu::runs(&op));
        let want = tessera_kernels::cpu::execute(&op, &inputs);
        let got = run(&gpu, &op, &inputs);
        let (w, g) = match (&want, &got) {
            (Ok(w), Ok(g)) => (w, g),
            (Err(w), Err(g)) => {
                assert_eq!(discriminant(w), discriminant(g), "{label}: {g:?} vs {w:?}");
                continue;
            }
            _ => panic!("{label}: GPU {got:?}, CPU {want:?}"),
        };
        let ((gq, gr), (wq, wr)) = (q_and_r(g), q_and_r(w));
        // Full-rank blocks have one QR with R's diagonal non-negative: the CPU's.
        for (what, gt, wt) in [("Q", gq, wq), ("R", gr, wr)] {
            let err = relative_error(
                &ChunkData::Tensor(gt.clone()),
                &ChunkData::Tensor(wt.clone()),
            );
            assert!(
                err.is_some_and(|e| e <= 1e-11),
                "{label}: {what}'s relative error {err:?}"
            );
        }
        // Independently of the CPU: R is upper triangular with a non-negative diagonal and
        // Q · R gives back the block.
        let (m, r) = (gq.shape()[0], gq.shape()[1]);
        let n = gr.shape()[1];
        let (q, rr) = (gq.to_f64_vec(), gr.to_f64_vec());
        for i in 0..r {
            assert!(
                rr[i * n + i] >= 0.0,
                "{label}: R[{i}][{i}] = {}",
                rr[i * n + i]
            );
            assert!(
                (0..i.min(n)).all(|j| rr[i * n + j] == 0.0),
                "{label}: row {i} of R"
            );
        }
        let block = match a.part {
            Some(p) => match inputs[a.input].as_ref() {
                ChunkData::Parts(parts) => parts[p].clone(),
                _ => unreachable!(),
            },
            None => match inputs[a.input].as_ref() {
                ChunkData::Tensor(t) => t.clone(),
                _ => unreachable!(),
            },
        };
        let start = a.rows.map_or(0, |(s, _)| s);
        let values = block.to_f64_vec();
        for i in 0..m {
            for j in 0..n {
                let qr: f64 = (0..r).map(|k| q[i * r + k] * rr[k * n + j]).sum();
                let x = values[(start + i) * n + j];
                assert!(
                    (qr - x).abs() <= 1e-12 * (1.0 + x.abs()),
                    "{label}: (QR)[{i}][{j}] = {qr}, not {x}"
                );
            }
        }
    }
}

#[test]
fn gpu_kept_input_copies_serve_later_tasks_on_every_stream() {
    let Some(gpu) = device() else { return };
    let input = |i| MatOperand::Input(InputRef::whole(i));
    let product = ChunkOp::Linalg(LinalgOp::MatMul {
        pairs: vec![(input(0), input(1))],
    });
    // `x · 2` over input 0: a fused kernel reading it.
    let f64_leaf = |kind| tessera_kernels::expr::Instr {
        shape: vec![300, 200],
        dtype: DType::F64,
        kind,
    };
    let scaled = ChunkOp::Fused(FusedKernel {
        root: 2,
        instrs: vec![
            corpus::chunk_leaf(&[300, 200], DType::F64, 0),
            f64_leaf(InstrKind::Leaf(LeafSource::Const(
                tessera_kernels::Scalar::F64(2.0),
            ))),
            f64_leaf(InstrKind::Binary {
                op: tessera_kernels::expr::BinaryOp::Mul,
                a: 0,
                b: 1,
            }),
        ],
        reduce: None,
    });
    for seed in [40, 50] {
        // New chunks each round: the first round's copies must not serve them.
        let inputs: Vec<Arc<ChunkData>> = vec![
            Arc::new(ChunkData::Tensor(matrix(300, 200, seed))),
            Arc::new(ChunkData::Tensor(matrix(200, 100, seed + 1))),
        ];
        let want_product = tessera_kernels::cpu::execute(&product, &inputs).unwrap();
        let want_scaled = tessera_kernels::cpu::execute(&scaled, &inputs).unwrap();
        // Six threads, each on a stream of its own, read the copies the first made.
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    for _ in 0..4 {
                        let got = run(&gpu, &product, &inputs).unwrap();
                        let err = relative_error(&got, &want_product);
                        assert!(err.is_some_and(|e| e <= 1e-13), "{err:?}");
                        assert_eq!(run(&gpu, &scaled, &inputs).unwrap(), want_scaled);
                    }
                });
            }
        });
        // Both inputs are kept, once each (the product and the fused kernel read input 0's
        // values whole: one piece).
        assert!(gpu.resident_bytes() >= (300 * 200 + 200 * 100) * 8);
    }
}

#[test]
fn gpu_task_outputs_stay_on_the_device_for_the_tasks_that_read_them() {
    let Some(gpu) = device() else { return };
    let (m, n, k) = (3000, 40, 7);
    let bytes = |elements: usize| (elements * 8) as u64;
    let generated = |shape: &[usize]| {
        ChunkOp::Fused(FusedKernel {
            root: 0,
            instrs: vec![workloads::uniform(shape, -1.0, 1.0, 7)],
            reduce: None,
        })
    };
    // A generated block (Philox: bit for bit the CPU's) stays on the device as its chunk's
    // copy.
    let block = gpu.execute(&generated(&[m, n]), &[]).unwrap();
    assert_eq!(
        *block,
        tessera_kernels::cpu::execute(&generated(&[m, n]), &[]).unwrap()
    );
    assert_eq!(gpu.resident_bytes(), bytes(m * n));
    // Its QR reads that copy (nothing is copied in) and keeps Q (m × n).
    let qr = ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(InputRef::whole(0))));
    let factors = gpu.execute(&qr, &[Arc::clone(&block)]).unwrap();
    let want = tessera_kernels::cpu::execute(&qr, &[Arc::clone(&block)]).unwrap();
    let (ChunkData::Parts(got), ChunkData::Parts(want)) = (&*factors, &want) else {
        panic!("{factors:?}")
    };
    for (g, w) in got.iter().zip(want) {
        let err = relative_error(&ChunkData::Tensor(g.clone()), &ChunkData::Tensor(w.clone()));
        assert!(err.is_some_and(|e| e <= 1e-11), "{err:?}");
    }
    assert_eq!(gpu.resident_bytes(), bytes(2 * m * n));
    // Q times a host matrix: only that matrix is copied in; the product (m × k) is kept.
    let q = MatOperand::Input(InputRef {
        input: 0,
        part: Some(0),
        rows: None,
    });
    let product = ChunkOp::Linalg(LinalgOp::MatMul {
        pairs: vec![(q, MatOperand::Input(InputRef::whole(1)))],
    });
    let inputs = [
        Arc::clone(&factors),
        Arc::new(ChunkData::Tensor(matrix(n, k, 3))),
    ];
    let c = gpu.execute(&product, &inputs).unwrap();
    let err = relative_error(
        &c,
        &tessera_kernels::cpu::execute(&product, &inputs).unwrap(),
    );
    assert!(err.is_some_and(|e| e <= 1e-13), "{err:?}");
    assert_eq!(gpu.resident_bytes(), bytes(2 * m * n + n * k + m * k));
    // A fused kernel over the product reads its kept copy: `c · 2`, exact.
    let leaf = |kind| tessera_kernels::expr::Instr {
        shape: vec![m, k],
        dtype: DType::F64,
        kind,
    };
    let doubled = ChunkOp::Fused(FusedKernel {
        root: 2,
        instrs: vec![
            corpus::chunk_leaf(&[m, k], DType::F64, 0),
            leaf(InstrKind::Leaf(LeafSource::Const(
                tessera_kernels::Scalar::F64(2.0),
            ))),
            leaf(InstrKind::Binary {
                op: tessera_kernels::expr::BinaryOp::Mul,
                a: 0,
                b: 1,
            }),
        ],
        reduce: None,
    });
    let twice = gpu.execute(&doubled, &[Arc::clone(&c)]).unwrap();
    assert_eq!(
        *twice,
        tessera_kernels::cpu::execute(&doubled, &[Arc::clone(&c)]).unwrap()
    );
    assert_eq!(gpu.resident_bytes(), bytes(2 * m * n + n * k + 2 * m * k));
    // Once its chunk is dropped, a kept output's copy is freed at the next keep.
    drop((block, factors, inputs, twice));
    let again = gpu.execute(&doubled, &[Arc::clone(&c)]).unwrap();
    assert_eq!(gpu.resident_bytes(), bytes(2 * m * k));
    drop(again);
}
