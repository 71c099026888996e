//! Tests of the CUDA generator and its NVRTC compilation over the corpus.

use super::corpus::{self, inputs_for};
use crate::codegen::{self, fused_source, CudaKernel, ParamKind};
use crate::nvrtc;
use std::collections::HashMap;
use std::mem::discriminant;
use tessera_kernels::dtype::{DType, Scalar};
use tessera_kernels::expr::{
    AxisMap, ChunkReduce, Distribution, FlatMap, FusedKernel, Instr, InstrKind, LeafSource,
    ReduceOp, SourceChunk,
};
use tessera_kernels::{ChunkOp, KernelError};

fn generate_all() -> Vec<(String, CudaKernel)> {
    corpus::cases()
        .into_iter()
        .map(|c| match fused_source(&c.kernel) {
            Ok(k) => (c.label, k),
            Err(e) => panic!("{}: generation failed: {e}", c.label),
        })
        .collect()
}

#[test]
fn cuda_corpus_generates_deterministic_kernels_with_distinct_names() {
    let cases = corpus::cases();
    assert!(cases.len() > 250, "{} cases", cases.len());
    let mut by_name: HashMap<String, (String, String)> = HashMap::new();
    for c in &cases {
        let a = fused_source(&c.kernel).unwrap_or_else(|e| panic!("{}: {e}", c.label));
        let b = fused_source(&c.kernel.clone()).unwrap();
        assert_eq!(a, b, "{}: generation is not deterministic", c.label);
        assert!(
            a.name.starts_with("tessera_fused_") && a.name.len() == "tessera_fused_".len() + 16,
            "{}",
            a.name
        );
        assert!(a
            .source
            .contains(&format!("void __launch_bounds__(256) {}(", a.name)));
        assert!(!a.source.contains("TS_KERNEL_NAME"), "{}", c.label);
        assert_eq!(a.params.last(), Some(&ParamKind::Faults), "{}", c.label);
        // Equal names only for equal sources (IR that means the same thing).
        if let Some((label, source)) = by_name.get(&a.name) {
            assert_eq!(source, &a.source, "{} and {label} share a name", c.label);
        }
        by_name.insert(a.name.clone(), (c.label.clone(), a.source.clone()));
    }
    // Cases differing only in parameters (seeds, starts, ddof) or in constants that
    // cast to the same value share kernels; the rest are distinct.
    assert!(
        by_name.len() > 350,
        "{} names for {} cases",
        by_name.len(),
        cases.len()
    );
}

#[test]
fn cuda_corpus_is_ir_the_cpu_runs() {
    for c in corpus::cases() {
        let inputs = inputs_for(&c.kernel);
        if let Err(e) = tessera_kernels::cpu::execute(&ChunkOp::Fused(c.kernel.clone()), &inputs) {
            panic!("{}: the CPU rejects this corpus case: {e}", c.label);
        }
    }
}

#[test]
fn cuda_refused_ir_fails_with_the_cpus_error() {
    let refused = corpus::refused();
    assert!(refused.len() > 30, "{}", refused.len());
    for r in refused {
        let got = match fused_source(&r.kernel) {
            Ok(_) => panic!("{}: generated a kernel for IR the CPU refuses", r.label),
            Err(e) => e,
        };
        assert_eq!(
            discriminant(&got),
            discriminant(&r.error),
            "{}: {got:?}",
            r.label
        );
        let cpu = tessera_kernels::cpu::execute(
            &ChunkOp::Fused(r.kernel.clone()),
            &inputs_for(&r.kernel),
        );
        match cpu {
            Err(e) => assert_eq!(
                discriminant(&e),
                discriminant(&got),
                "{}: CPU {e:?}",
                r.label
            ),
            Ok(_) => panic!("{}: the CPU accepts this IR", r.label),
        }
    }
}

fn random_leaf(seed: u64, stream: u64, base: i64, low: f64) -> Instr {
    Instr {
        shape: vec![4, 8],
        dtype: DType::F64,
        kind: InstrKind::Leaf(LeafSource::Random {
            dist: Distribution::Uniform { low, high: 2.0 },
            seed,
            stream,
            map: FlatMap {
                base,
                strides: vec![8, 1],
            },
        }),
    }
}

fn shifted_read(start: usize, offset: i64) -> Instr {
    Instr {
        shape: vec![4, 8],
        dtype: DType::F32,
        kind: InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![
                SourceChunk {
                    start: vec![start, 0],
                    shape: vec![3, 8],
                    input: 0,
                },
                SourceChunk {
                    start: vec![start + 3, 0],
                    shape: vec![3, 8],
                    input: 1,
                },
            ],
            axes: vec![
                AxisMap {
                    offset,
                    local_axis: Some(0),
                    step: 1,
                },
                AxisMap {
                    offset: 0,
                    local_axis: Some(1),
                    step: 1,
                },
            ],
        }),
    }
}

#[test]
fn cuda_kernel_names_ignore_where_a_chunk_sits() {
    let one = |leaf: Instr| FusedKernel {
        instrs: vec![leaf],
        root: 0,
        reduce: None,
    };
    let a = fused_source(&one(random_leaf(1, 0, 0, -1.0))).unwrap();
    let b = fused_source(&one(random_leaf(99, 7, 4096, 0.5))).unwrap();
    assert_eq!(a.name, b.name);
    assert_eq!(a.source, b.source);
    assert_ne!(a.params, b.params);
    let c = fused_source(&one(shifted_read(0, 1))).unwrap();
    let d = fused_source(&one(shifted_read(600, 601))).unwrap();
    assert_eq!(c.name, d.name);
    // A read that straddles the chunks differently is another kernel.
    let e = fused_source(&one(shifted_read(0, 2))).unwrap();
    assert_ne!(c.name, e.name);
    // So is another shape.
    let mut wide = random_leaf(1, 0, 0, -1.0);
    wide.shape = vec![8, 4];
    assert_ne!(a.name, fused_source(&one(wide)).unwrap().name);
}

#[test]
fn cuda_params_follow_the_documented_order() {
    let k = FusedKernel {
        instrs: vec![
            shifted_read(0, 1),
            Instr {
                shape: vec![4, 8],
                dtype: DType::F64,
                kind: InstrKind::Cast { x: 0 },
            },
            random_leaf(5, 6, 7, 0.5),
            Instr {
                shape: vec![4, 8],
                dtype: DType::F64,
                kind: InstrKind::Binary {
                    op: tessera_kernels::BinaryOp::Add,
                    a: 1,
                    b: 2,
                },
            },
        ],
        root: 3,
        reduce: Some(ChunkReduce {
            op: ReduceOp::ArgMax,
            axes: vec![1],
            global_start: vec![8, 16],
            global_shape: vec![40, 32],
            finalize: None,
        }),
    };
    let g = fused_source(&k).unwrap();
    use ParamKind::*;
    assert_eq!(
        g.params,
        vec![
            Input {
                slot: 0,
                dtype: DType::F32,
                shape: vec![3, 8]
            },
            Input {
                slot: 1,
                dtype: DType::F32,
                shape: vec![3, 8]
            },
            Part {
                part: 0,
                dtype: DType::F64
            },
            Part {
                part: 1,
                dtype: DType::I64
            },
            Splits,
            I64(4),
            I64(8),
            U64(5),
            U64(6),
            I64(7),
            F64(0.5),
            F64(1.5),
            I64(16),
            Faults,
        ]
    );
    let layout = g.reduce.unwrap();
    assert_eq!((layout.slots, layout.per_slot), (4, 8));
    assert_eq!(layout.out_shape, vec![4]);
    assert_eq!(g.elements, 32);
    assert_eq!(g.block_dim, codegen::BLOCK_DIM);
}

#[test]
fn cuda_fault_bits_map_to_the_cpus_errors() {
    assert_eq!(codegen::fault_error(0), None);
    assert!(matches!(
        codegen::fault_error(codegen::FAULT_NEGATIVE_POWER),
        Some(KernelError::InvalidValue(_))
    ));
    assert!(matches!(
        codegen::fault_error(codegen::FAULT_NO_CHUNK),
        Some(KernelError::BadInput(_))
    ));
    assert!(matches!(
        codegen::fault_error(codegen::FAULT_BAD_LAUNCH),
        Some(KernelError::BadInput(_))
    ));
}

#[test]
fn cuda_constants_are_baked_after_the_cpus_cast() {
    let k = FusedKernel {
        instrs: vec![Instr {
            shape: vec![2],
            dtype: DType::U8,
            kind: InstrKind::Leaf(LeafSource::Const(Scalar::I64(300))),
        }],
        root: 0,
        reduce: None,
    };
    let g = fused_source(&k).unwrap();
    assert!(
        g.source.contains("const ts_u8 v0 = ((ts_u8)44);"),
        "{}",
        g.source
    );
}

/// Whether CI demands NVRTC (`TESSERA_REQUIRE_NVRTC=1`, set by `.ci/nvrtc.sh`).
fn nvrtc_required() -> bool {
    std::env::var("TESSERA_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
}

/// NVRTC's version, or `None` after saying the test skipped (failing instead when CI
/// requires NVRTC).
#[allow(clippy::print_stderr)]
pub(crate) fn nvrtc_or_skip(test: &str) -> Option<(i32, i32)> {
    let v = nvrtc::nvrtc_version();
    if v.is_none() {
        assert!(
            !nvrtc_required(),
            "TESSERA_REQUIRE_NVRTC=1 but NVRTC could not be loaded (LD_LIBRARY_PATH={:?})",
            std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
        );
        eprintln!(
            "SKIPPED {test}: NVRTC (libnvrtc.so.13) is not on the loader path, so nothing was \
             compiled; run .ci/nvrtc.sh or set LD_LIBRARY_PATH to enable it"
        );
    }
    v
}

#[test]
fn cuda_nvrtc_probe_does_not_panic() {
    let available = nvrtc::nvrtc_available();
    assert_eq!(available, nvrtc::nvrtc_version().is_some());
    if nvrtc_required() {
        assert!(
            available,
            "TESSERA_REQUIRE_NVRTC=1 but NVRTC is unavailable"
        );
    }
    let k = fused_source(&corpus::cases()[0].kernel).unwrap();
    assert!(matches!(
        nvrtc::compile(&k, "sm_90"),
        Err(KernelError::BadInput(_))
    ));
    if !available {
        assert!(matches!(
            nvrtc::compile(&k, "compute_90"),
            Err(KernelError::DeviceUnavailable(_))
        ));
    }
}

#[test]
#[allow(clippy::print_stderr)]
fn cuda_every_generated_kernel_compiles_with_nvrtc() {
    let Some((major, minor)) = nvrtc_or_skip("cuda_every_generated_kernel_compiles_with_nvrtc")
    else {
        return;
    };
    let kernels = generate_all();
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(8);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((label, k)) = kernels.get(i) else {
                    break;
                };
                let outcome = nvrtc::compile(k, "compute_90").map(|ptx| ptx.to_src());
                let problem = match outcome {
                    Ok(ptx) if ptx.contains(&format!(".entry {}(", k.name)) => None,
                    Ok(_) => Some(format!("{label}: the PTX lacks entry {}", k.name)),
                    Err(e) => Some(format!("{label}: {e}")),
                };
                if let Some(p) = problem {
                    failures.lock().unwrap().push(p);
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} kernels failed to compile:\n{}",
        failures.len(),
        kernels.len(),
        failures.join("\n\n")
    );
    eprintln!(
        "compiled {} generated kernels with NVRTC {major}.{minor} for compute_90",
        kernels.len()
    );
}

#[test]
fn cuda_nvrtc_errors_carry_the_log() {
    if nvrtc_or_skip("cuda_nvrtc_errors_carry_the_log").is_none() {
        return;
    }
    let mut k = fused_source(&corpus::cases()[0].kernel).unwrap();
    k.source.push_str("\nthis is not C++;\n");
    match nvrtc::compile(&k, "compute_90") {
        Err(KernelError::DeviceCompile(msg)) => {
            assert!(msg.contains(&k.name) && msg.contains("error"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cuda_frame_kernels_compile_with_nvrtc() {
    if nvrtc_or_skip("cuda_frame_kernels_compile_with_nvrtc").is_none() {
        return;
    }
    for arch in ["compute_80", "compute_90"] {
        let ptx = crate::compile_frame_kernels(arch)
            .unwrap_or_else(|e| panic!("frame.cu for {arch}: {e}"))
            .to_src();
        for entry in [
            "ts_gb_fill",
            "ts_gb_insert",
            "ts_gb_count_firsts",
            "ts_gb_scan",
            "ts_gb_number",
            "ts_gb_agg",
            "ts_tile_sums",
            "ts_tile_scan",
            "ts_tile_sums32",
            "ts_tile_scan32",
            "ts_join_fill",
            "ts_join_insert",
            "ts_join_ranges",
            "ts_join_place",
            "ts_join_sort",
            "ts_join_probe",
            "ts_join_emit",
            "ts_gather1",
            "ts_gather2",
            "ts_gather4",
            "ts_gather8",
            "ts_gather_valid",
            "ts_gather_str_len",
            "ts_gather_str_bytes",
            "ts_narrow_offsets",
            "ts_filter_place",
        ] {
            assert!(
                ptx.contains(&format!(".entry {entry}(")),
                "{arch}: no {entry}"
            );
        }
    }
}

#[test]
fn cuda_the_benchmark_kernels_take_the_cpus_shortcuts() {
    // pi's sqrt(x) < 1 becomes 0 <= x < 1: no square root left.
    let pi = fused_source(&crate::workloads::pi(1000, 1)).unwrap();
    assert!(!pi.source.contains("ts_sqrt(v"), "{}", pi.source);
    assert!(pi
        .source
        .contains("(0.0 <= v2 && v2 < (0x1.0000000000000p+0))"));
    // pi's points: each Philox block computed once for both coordinates, no cache check.
    let body = |source: &str| source[source.find("extern \"C\"").unwrap()..].to_string();
    let pi_body = body(&pi.source);
    assert!(pi_body.contains("ts_prime(seed0"), "{pi_body}");
    assert!(!pi_body.contains("ts_uniform(seed0"), "{pi_body}");
    // Elsewhere the cached reads stay: an odd base or an odd row stride splits the pairs.
    let pairs: Vec<_> = corpus::cases()
        .into_iter()
        .filter(|c| c.label.starts_with("random_pairs/"))
        .collect();
    assert_eq!(pairs.len(), 12);
    for case in pairs {
        let source = body(&fused_source(&case.kernel).unwrap().source);
        let paired = case.label.ends_with("/pairs") || case.label.ends_with("/pairs_far");
        assert_eq!(source.contains("ts_prime("), paired, "{}", case.label);
        assert_eq!(source.contains("_lane(&pc0, 1,"), paired, "{}", case.label);
    }
    // sincos: one ts_sincos64 call for sin and cos of one operand.
    let sc = body(
        &fused_source(&crate::workloads::sincos(100, 1))
            .unwrap()
            .source,
    );
    assert_eq!(sc.matches("ts_sincos64(v0, &v1, &v3)").count(), 1, "{sc}");
    assert!(!sc.contains("ts_sin64") && !sc.contains("ts_cos64"), "{sc}");
}

/// An elementwise `sin` of `len` uniform values (a 1-D chunk of one expression).
fn sin_of_uniform(len: usize, seed: u64) -> FusedKernel {
    let leaf = crate::workloads::uniform(&[len], 0.0, 1.0, seed);
    let sin = Instr {
        shape: vec![len],
        dtype: DType::F64,
        kind: InstrKind::Unary {
            op: tessera_kernels::expr::UnaryOp::Sin,
            x: 0,
        },
    };
    FusedKernel {
        instrs: vec![leaf, sin],
        root: 1,
        reduce: None,
    }
}

/// Sums of the 8 values of each of `rows` rows of uniform values (a reduction keeping
/// the row axis).
fn row_sums(rows: usize) -> FusedKernel {
    FusedKernel {
        instrs: vec![crate::workloads::uniform(&[rows, 8], 0.0, 1.0, 3)],
        root: 0,
        reduce: Some(ChunkReduce {
            op: ReduceOp::Sum,
            axes: vec![1],
            global_start: vec![0, 0],
            global_shape: vec![rows, 8],
            finalize: None,
        }),
    }
}

#[test]
fn chunks_of_one_expression_differing_in_length_share_one_kernel() {
    use crate::workloads::{pi, sincos};
    // Elementwise (`n`), whole reductions of 2-D chunks of full rows and of pi's rows (`R`),
    // and row sums (`S`): one source per expression whatever the length, the counts
    // passed as parameters (`n` after the output, `S` and `R` after `splits`).
    let counts = |k: &CudaKernel| -> Vec<ParamKind> {
        let at = k
            .params
            .iter()
            .position(|p| matches!(p, ParamKind::Values { .. } | ParamKind::Splits))
            .unwrap();
        let n = if k.reduce.is_some() { 2 } else { 1 };
        k.params[at + 1..at + 1 + n].to_vec()
    };
    use ParamKind::I64;
    for (what, kernels, want) in [
        (
            "elementwise",
            [sin_of_uniform(1000, 1), sin_of_uniform(37, 1)],
            [vec![I64(1000)], vec![I64(37)]],
        ),
        (
            "sincos",
            [sincos(100, 42), sincos(7, 42)],
            [vec![I64(1), I64(10_000)], vec![I64(1), I64(49)]],
        ),
        (
            "pi",
            [pi(1 << 20, 5), pi(12_345, 5)],
            [vec![I64(1), I64(1 << 20)], vec![I64(1), I64(12_345)]],
        ),
        (
            "row sums",
            [row_sums(100), row_sums(3)],
            [vec![I64(100), I64(8)], vec![I64(3), I64(8)]],
        ),
    ] {
        let [a, b] = kernels.map(|k| fused_source(&k).unwrap());
        assert_eq!(a.name, b.name, "{what}: one kernel for both lengths");
        assert_eq!(a.source, b.source, "{what}");
        assert_eq!(
            [counts(&a), counts(&b)],
            want,
            "{what}: the counts as parameters"
        );
    }
    // Chunks whose index arithmetic differs still get kernels of their own: a block of 5
    // or of 6 columns of a 10-column array (its rows are not contiguous).
    let block = |cols: usize| {
        let mut leaf = crate::workloads::uniform(&[4, cols], 0.0, 1.0, 1);
        if let InstrKind::Leaf(LeafSource::Random { map, .. }) = &mut leaf.kind {
            map.strides = vec![10, 1];
        }
        FusedKernel {
            instrs: vec![leaf],
            root: 0,
            reduce: None,
        }
    };
    assert_ne!(
        fused_source(&block(5)).unwrap().name,
        fused_source(&block(6)).unwrap().name
    );
}
