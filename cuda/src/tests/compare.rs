//! Judging a device's result for a fused kernel against the CPU evaluator's (tests only):
//! shared by the host emulation (`host_emu`, where every value must be identical) and the
//! GPU suite (`tests_gpu`, where the libdevice functions listed in `codegen`'s docs may
//! differ in their last ulps); and the fault cases both run.

use super::corpus;
use std::mem::discriminant;
use std::sync::Arc;
use tessera_kernels::chunk::ChunkData;
use tessera_kernels::dtype::DType;
use tessera_kernels::expr::{
    AxisMap, BinaryOp, FusedKernel, Instr, InstrKind, LeafSource, ReduceOp, SourceChunk, UnaryOp,
};
use tessera_kernels::tensor::Buffer;
use tessera_kernels::{ChunkOp, KernelError};

/// Where the result under judgement was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Judge {
    /// The host emulation: the same libm as the CPU, so every value is identical.
    Host,
    /// A GPU: functions backed by libdevice may differ within their documented ulps.
    Device,
}

/// How a result agreed with the CPU's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Bit for bit (or the same error).
    Exact,
    /// Within the tolerance the kernel's ops allow (float accumulation order, libdevice).
    Close,
}

/// True when `fused` uses a function whose GPU value may differ from the CPU's in the
/// last ulps (see `codegen`'s docs): libdevice stand-ins for libm, `f32` `exp log sin cos`,
/// `f64` `sin cos` (outside `|x| < 2^17`), float `pow`, `arctan2`, `hypot`.
pub fn uses_libdevice(fused: &FusedKernel) -> bool {
    fused.instrs.iter().any(|i| match &i.kind {
        InstrKind::Unary { op, .. } => {
            i.dtype.is_float()
                && op.is_float_fn()
                && match op {
                    UnaryOp::Sqrt => false,
                    // f64 exp and log are ports of the CPU's own polynomials.
                    UnaryOp::Exp | UnaryOp::Log => i.dtype == DType::F32,
                    _ => true,
                }
        }
        InstrKind::Binary { op, a, .. } => {
            matches!(op, BinaryOp::Pow | BinaryOp::Arctan2 | BinaryOp::Hypot)
                && fused.instrs.get(*a).is_some_and(|x| x.dtype.is_float())
        }
        _ => false,
    })
}

/// `Ok` when `got` equals `want`: bit for bit when `bits` (NaN payloads aside; integers
/// exactly, `tol` and `floor` unused), else by value (`-0.0 == 0.0`, NaN equals NaN)
/// within relative error `tol` of the larger magnitude or of `floor`, whichever is larger.
pub fn compare(
    got: &Buffer,
    want: &Buffer,
    bits: bool,
    tol: f64,
    floor: f64,
) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.len() != want.len() {
        return Err(format!("{got:?} vs {want:?}"));
    }
    let equal = match (got, want) {
        (Buffer::F64(a), Buffer::F64(b)) if bits => a
            .iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())),
        (Buffer::F32(a), Buffer::F32(b)) if bits => a
            .iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())),
        _ if bits => got == want,
        _ => got
            .to_f64_vec()
            .iter()
            .zip(&want.to_f64_vec())
            .all(|(x, y)| {
                x == y
                    || (x.is_nan() && y.is_nan())
                    || (x - y).abs() <= tol * x.abs().max(y.abs()).max(floor)
            }),
    };
    if equal {
        Ok(())
    } else {
        Err(format!("\n  gpu {got:?}\n  cpu {want:?}"))
    }
}

/// Judges `got`, a device's result for `fused` on `inputs`, against the CPU evaluator:
/// the same error variant, or the same values (see [`Judge`] for the tolerances).
pub fn check(
    fused: &FusedKernel,
    inputs: &[Arc<ChunkData>],
    got: Result<ChunkData, KernelError>,
    judge: Judge,
) -> Result<Agreement, String> {
    let cpu = tessera_kernels::cpu::execute(&ChunkOp::Fused(fused.clone()), inputs);
    let (want, got) = match (cpu, got) {
        (Err(c), Err(g)) if discriminant(&c) == discriminant(&g) => return Ok(Agreement::Exact),
        (Err(c), g) => return Err(format!("CPU error {c:?}, device {g:?}")),
        (Ok(_), Err(g)) => return Err(format!("device error {g:?}; the CPU succeeds")),
        (Ok(w), Ok(g)) => (w, g),
    };
    let libdevice = judge == Judge::Device && uses_libdevice(fused);
    // (relative tolerance, magnitude floor) for values through libdevice functions.
    let ulps = |d: DType| match d {
        DType::F32 => (2e-6, 1e-30),
        _ => (1e-13, 1e-300),
    };
    match (want, got) {
        (ChunkData::Tensor(w), ChunkData::Tensor(g)) => {
            match compare(g.data(), w.data(), true, 0.0, 0.0) {
                Ok(()) => Ok(Agreement::Exact),
                Err(_) if libdevice && w.dtype().is_float() && g.shape() == w.shape() => {
                    let (tol, floor) = ulps(w.dtype());
                    compare(g.data(), w.data(), false, tol, floor).map(|()| Agreement::Close)
                }
                // A reduction its task finished: judged as its partial's parts are.
                Err(m) => match (&fused.reduce, fused.instrs.get(fused.root)) {
                    (Some(r), Some(root)) if g.shape() == w.shape() => {
                        let (float_acc, signed_zero_free) = leeway(r.op, root.dtype);
                        let tol = if float_acc && w.dtype() == DType::F64 {
                            1e-9
                        } else if signed_zero_free {
                            0.0
                        } else {
                            return Err(m);
                        };
                        compare(g.data(), w.data(), false, tol, 0.0).map(|()| Agreement::Close)
                    }
                    _ => Err(m),
                },
            }
        }
        (ChunkData::Partial(w), ChunkData::Partial(g)) => {
            if (w.op, w.input_dtype) != (g.op, g.input_dtype) || w.parts.len() != g.parts.len() {
                return Err(format!("partials differ in kind: {g:?} vs {w:?}"));
            }
            let (float_acc, signed_zero_free) = leeway(w.op, w.input_dtype);
            let mut agreement = Agreement::Exact;
            for (k, (g, w)) in g.parts.iter().zip(&w.parts).enumerate() {
                let Err(m) = compare(g.data(), w.data(), true, 0.0, 0.0) else {
                    continue;
                };
                agreement = Agreement::Close;
                let float = g.dtype().is_float();
                let (tol, floor) = if libdevice && float {
                    ulps(g.dtype())
                } else if float_acc && g.dtype() == DType::F64 {
                    (1e-9, 0.0)
                } else {
                    (0.0, 0.0)
                };
                if tol == 0.0 && !signed_zero_free {
                    // Bits were the test, and they differ.
                    return Err(format!("part {k}: {m}"));
                }
                compare(g.data(), w.data(), false, tol, floor)
                    .map_err(|m| format!("part {k}: {m}"))?;
            }
            Ok(agreement)
        }
        (w, g) => Err(format!("device gave {g:?}, the CPU {w:?}")),
    }
}

/// Where a device's reduction `op` over `input` values may differ from the CPU's: float
/// accumulations run in another order (first), and min / max may return either zero of a
/// tie between -0.0 and 0.0 (second); everything else is exact.
fn leeway(op: ReduceOp, input: DType) -> (bool, bool) {
    let float_acc = matches!(
        op,
        ReduceOp::Mean | ReduceOp::Var { .. } | ReduceOp::Std { .. }
    ) || (matches!(op, ReduceOp::Sum | ReduceOp::Prod) && input.is_float());
    (float_acc, matches!(op, ReduceOp::Min | ReduceOp::Max))
}

/// Cases whose kernels fault: faults the CPU reports as errors.
pub fn fault_cases() -> Vec<(String, FusedKernel)> {
    let s = corpus::SHAPE.to_vec();
    let leaf = |dtype| corpus::chunk_leaf(&s, dtype, 0);
    let gap = Instr {
        shape: s.clone(),
        dtype: DType::F64,
        kind: InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![
                SourceChunk {
                    start: vec![0, 0],
                    shape: vec![3, 2],
                    input: 0,
                },
                SourceChunk {
                    start: vec![0, 3],
                    shape: vec![3, 2],
                    input: 1,
                },
            ],
            axes: (0..2)
                .map(|d| AxisMap {
                    offset: 0,
                    local_axis: Some(d),
                    step: 1,
                })
                .collect(),
        }),
    };
    vec![
        (
            "fault/negative_power".into(),
            FusedKernel {
                instrs: vec![
                    leaf(DType::I64),
                    Instr {
                        shape: s.clone(),
                        dtype: DType::I64,
                        kind: InstrKind::Binary {
                            op: BinaryOp::Pow,
                            a: 0,
                            b: 0,
                        },
                    },
                ],
                root: 1,
                reduce: None,
            },
        ),
        (
            "fault/gap_between_chunks".into(),
            FusedKernel {
                instrs: vec![gap],
                root: 0,
                reduce: None,
            },
        ),
    ]
}

#[test]
fn buffers_compare_by_bits_or_by_value_once() {
    let f = |v: &[f64]| Buffer::F64(v.to_vec());
    let nan2 = f64::from_bits(f64::NAN.to_bits() | 1);
    // Bits: NaN payloads aside, every bit counts, the zeros' signs included.
    assert!(compare(&f(&[1.0, f64::NAN]), &f(&[1.0, nan2]), true, 0.0, 0.0).is_ok());
    assert!(compare(&f(&[-0.0]), &f(&[0.0]), true, 0.0, 0.0).is_err());
    assert!(compare(&f(&[1.0]), &f(&[1.0 + f64::EPSILON]), true, 0.0, 0.0).is_err());
    let f32s = |v: f32| Buffer::F32(vec![v]);
    assert!(compare(&f32s(-0.0), &f32s(0.0), true, 0.0, 0.0).is_err());
    assert!(compare(&f32s(2.5), &f32s(2.5), true, 0.0, 0.0).is_ok());
    // Integers exactly, even where f64 cannot tell them apart.
    let big = 1i64 << 53;
    let i = |v: i64| Buffer::I64(vec![v]);
    assert!(compare(&i(big + 1), &i(big), true, 0.0, 0.0).is_err());
    assert!(compare(&i(big + 1), &i(big + 1), true, 0.0, 0.0).is_ok());
    // By value: zeros equal, within tol of the larger magnitude or the floor.
    assert!(compare(&f(&[-0.0]), &f(&[0.0]), false, 0.0, 0.0).is_ok());
    assert!(compare(&f(&[1.0]), &f(&[1.0 + 1e-10]), false, 1e-9, 0.0).is_ok());
    assert!(compare(&f(&[1.0]), &f(&[1.0 + 1e-8]), false, 1e-9, 0.0).is_err());
    assert!(compare(&f(&[1e-20]), &f(&[2e-20]), false, 1e-9, 1e-10).is_ok());
    // Dtype or length differ: never equal.
    assert!(compare(&f(&[1.0]), &Buffer::F32(vec![1.0]), false, 1.0, 1.0).is_err());
    assert!(compare(&f(&[1.0]), &f(&[1.0, 1.0]), false, 1.0, 1.0).is_err());
}
