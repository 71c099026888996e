//! Hand-built fused kernels covering every op, dtype, leaf source, distribution and
//! reduction the CUDA generator supports, and IR it must refuse (tests only).

use crate::dtype::{DType, Scalar};
use crate::expr::{
    AxisMap, BinaryOp, ChunkReduce, Distribution, FlatMap, FusedKernel, Instr, InstrKind,
    LeafSource, ReduceOp, SourceChunk, UnaryOp,
};
use crate::KernelError;

/// Every dtype.
pub const DTYPES: [DType; 6] = [
    DType::Bool,
    DType::U8,
    DType::I32,
    DType::I64,
    DType::F32,
    DType::F64,
];

const UNARY: [UnaryOp; 8] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sqrt,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Not,
];

const BINARY: [BinaryOp; 15] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Pow,
    BinaryOp::Maximum,
    BinaryOp::Minimum,
    BinaryOp::Eq,
    BinaryOp::Ne,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::And,
    BinaryOp::Or,
];

/// Every reduction, two of them with `ddof`.
pub const REDUCE_OPS: [ReduceOp; 13] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::Mean,
    ReduceOp::Var { ddof: 0 },
    ReduceOp::Std { ddof: 1 },
    ReduceOp::All,
    ReduceOp::Any,
    ReduceOp::CountNonzero,
    ReduceOp::ArgMin,
    ReduceOp::ArgMax,
    ReduceOp::Var { ddof: 1 },
];

/// A kernel the generator must accept.
pub struct Case {
    /// What it covers.
    pub label: String,
    /// The IR.
    pub kernel: FusedKernel,
}

/// A kernel the generator must refuse, with the error variant (the CPU's for the same IR).
pub struct Refused {
    /// What it covers.
    pub label: String,
    /// The IR.
    pub kernel: FusedKernel,
    /// An error of the expected variant.
    pub error: KernelError,
}

/// The shape most cases use: two axes, neither contiguous with a broadcast.
pub const SHAPE: [usize; 2] = [3, 5];

fn ins(shape: &[usize], dtype: DType, kind: InstrKind) -> Instr {
    Instr {
        shape: shape.to_vec(),
        dtype,
        kind,
    }
}

fn identity_axes(rank: usize) -> Vec<AxisMap> {
    (0..rank)
        .map(|d| AxisMap {
            offset: 0,
            local_axis: Some(d),
            step: 1,
        })
        .collect()
}

/// A leaf reading all of input `slot`, a chunk of `shape` at the origin.
pub fn chunk_leaf(shape: &[usize], dtype: DType, slot: usize) -> Instr {
    ins(
        shape,
        dtype,
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![SourceChunk {
                start: vec![0; shape.len()],
                shape: shape.to_vec(),
                input: slot,
            }],
            axes: identity_axes(shape.len()),
        }),
    )
}

fn kernel(instrs: Vec<Instr>, reduce: Option<ChunkReduce>) -> FusedKernel {
    FusedKernel {
        root: instrs.len() - 1,
        instrs,
        reduce,
    }
}

fn all_axes(shape: &[usize], op: ReduceOp) -> ChunkReduce {
    ChunkReduce {
        op,
        axes: (0..shape.len()).collect(),
        global_start: vec![0; shape.len()],
        global_shape: shape.to_vec(),
    }
}

fn c_strides(shape: &[usize]) -> Vec<i64> {
    crate::tensor::c_strides(shape)
        .into_iter()
        .map(|s| s as i64)
        .collect()
}

/// The CPU evaluator's support for `op` on `dtype` (see `cpu::elementwise::unary`).
pub fn unary_supported(op: UnaryOp, dtype: DType) -> bool {
    match dtype {
        DType::F32 | DType::F64 => op != UnaryOp::Not,
        DType::Bool => op == UnaryOp::Not,
        _ => matches!(op, UnaryOp::Neg | UnaryOp::Abs),
    }
}

/// The CPU evaluator's support for `op` on operands of `dtype` (`cpu::elementwise::binary`).
pub fn binary_supported(op: BinaryOp, dtype: DType) -> bool {
    if op.is_comparison() {
        return true;
    }
    match dtype {
        DType::F32 | DType::F64 => !op.is_logical(),
        DType::Bool => matches!(
            op,
            BinaryOp::And | BinaryOp::Or | BinaryOp::Maximum | BinaryOp::Minimum
        ),
        _ => !op.is_logical() && op != BinaryOp::Div,
    }
}

fn elementwise(out: &mut Vec<Case>) {
    let s = &SHAPE;
    for d in DTYPES {
        out.push(Case {
            label: format!("copy/{d}"),
            kernel: kernel(vec![chunk_leaf(s, d, 0)], None),
        });
        for op in UNARY.into_iter().filter(|&op| unary_supported(op, d)) {
            out.push(Case {
                label: format!("unary/{}/{d}", op.name()),
                kernel: kernel(
                    vec![
                        chunk_leaf(s, d, 0),
                        ins(s, d, InstrKind::Unary { op, x: 0 }),
                    ],
                    None,
                ),
            });
        }
        for op in BINARY.into_iter().filter(|&op| binary_supported(op, d)) {
            let od = if op.is_comparison() { DType::Bool } else { d };
            out.push(Case {
                label: format!("binary/{}/{d}", op.name()),
                kernel: kernel(
                    vec![
                        chunk_leaf(s, d, 0),
                        chunk_leaf(s, d, 1),
                        ins(s, od, InstrKind::Binary { op, a: 0, b: 1 }),
                    ],
                    None,
                ),
            });
        }
        out.push(Case {
            label: format!("where/{d}"),
            kernel: kernel(
                vec![
                    chunk_leaf(s, DType::Bool, 2),
                    chunk_leaf(s, d, 0),
                    chunk_leaf(s, d, 1),
                    ins(
                        s,
                        d,
                        InstrKind::Where {
                            cond: 0,
                            a: 1,
                            b: 2,
                        },
                    ),
                ],
                None,
            ),
        });
        for to in DTYPES {
            out.push(Case {
                label: format!("cast/{d}/{to}"),
                kernel: kernel(
                    vec![chunk_leaf(s, d, 0), ins(s, to, InstrKind::Cast { x: 0 })],
                    None,
                ),
            });
        }
    }
    // A longer expression: ((a + b) * sqrt(|a|)) where a > b else exp(-b), as f32.
    let f = DType::F64;
    out.push(Case {
        label: "expression/chain".into(),
        kernel: kernel(
            vec![
                chunk_leaf(s, f, 0),
                chunk_leaf(s, f, 1),
                ins(
                    s,
                    f,
                    InstrKind::Binary {
                        op: BinaryOp::Add,
                        a: 0,
                        b: 1,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Unary {
                        op: UnaryOp::Abs,
                        x: 0,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Unary {
                        op: UnaryOp::Sqrt,
                        x: 3,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Binary {
                        op: BinaryOp::Mul,
                        a: 2,
                        b: 4,
                    },
                ),
                ins(
                    s,
                    DType::Bool,
                    InstrKind::Binary {
                        op: BinaryOp::Gt,
                        a: 0,
                        b: 1,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Unary {
                        op: UnaryOp::Neg,
                        x: 1,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Unary {
                        op: UnaryOp::Exp,
                        x: 7,
                    },
                ),
                ins(
                    s,
                    f,
                    InstrKind::Where {
                        cond: 6,
                        a: 5,
                        b: 8,
                    },
                ),
                ins(s, DType::F32, InstrKind::Cast { x: 9 }),
            ],
            None,
        ),
    });
}

fn constants(out: &mut Vec<Case>) {
    let s = &SHAPE;
    let values = [
        Scalar::F64(f64::NAN),
        Scalar::F64(-0.0),
        Scalar::F64(f64::NEG_INFINITY),
        Scalar::F64(-2.7),
        Scalar::F64(1e300),
        Scalar::I64(i64::MIN),
        Scalar::I64(300),
        Scalar::Bool(true),
    ];
    for d in DTYPES {
        for (k, v) in values.iter().enumerate() {
            out.push(Case {
                label: format!("const/{d}/{k}"),
                kernel: kernel(
                    vec![ins(s, d, InstrKind::Leaf(LeafSource::Const(*v)))],
                    None,
                ),
            });
        }
        // A constant operand beside a chunk.
        let op = if d == DType::Bool {
            BinaryOp::Or
        } else {
            BinaryOp::Maximum
        };
        out.push(Case {
            label: format!("const/operand/{d}"),
            kernel: kernel(
                vec![
                    chunk_leaf(s, d, 0),
                    ins(
                        s,
                        d,
                        InstrKind::Leaf(LeafSource::Const(Scalar::F64(f64::NAN))),
                    ),
                    ins(s, d, InstrKind::Binary { op, a: 0, b: 1 }),
                ],
                None,
            ),
        });
    }
}

fn random(out: &mut Vec<Case>) {
    let s = &SHAPE;
    let dists = [
        (
            "uniform",
            Distribution::Uniform {
                low: -2.0,
                high: 3.5,
            },
        ),
        (
            "unit",
            Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
        ),
        (
            "normal",
            Distribution::Normal {
                mean: 1.5,
                std: 0.25,
            },
        ),
        ("randint", Distribution::RandInt { low: -5, high: 17 }),
        (
            "randint_full",
            Distribution::RandInt {
                low: i64::MIN,
                high: i64::MAX,
            },
        ),
    ];
    let maps = [
        (
            "contiguous",
            FlatMap {
                base: 7,
                strides: vec![5, 1],
            },
        ),
        (
            "transposed",
            FlatMap {
                base: 3,
                strides: vec![1, 3],
            },
        ),
        (
            "broadcast",
            FlatMap {
                base: 11,
                strides: vec![0, 1],
            },
        ),
        (
            "strided",
            FlatMap {
                base: 1_000_000_000_001,
                strides: vec![20, 2],
            },
        ),
    ];
    for (dn, dist) in dists {
        let dtype = match dist {
            Distribution::RandInt { .. } => DType::I64,
            _ => DType::F64,
        };
        for (mn, map) in &maps {
            out.push(Case {
                label: format!("random/{dn}/{mn}"),
                kernel: kernel(
                    vec![ins(
                        s,
                        dtype,
                        InstrKind::Leaf(LeafSource::Random {
                            dist,
                            seed: 0x0123_4567_89AB_CDEF,
                            stream: 0xFEDC_BA98_7654_3210,
                            map: map.clone(),
                        }),
                    )],
                    None,
                ),
            });
        }
    }
}

fn ramps(out: &mut Vec<Case>) {
    let s = &SHAPE;
    let map = FlatMap {
        base: 4,
        strides: vec![5, 1],
    };
    let ramps = [
        ("int", Scalar::I64(3), Scalar::I64(-2), None),
        (
            "int_wrapping",
            Scalar::I64(i64::MAX - 3),
            Scalar::I64(1),
            None,
        ),
        ("float", Scalar::F64(0.5), Scalar::F64(0.1), None),
        (
            "linspace",
            Scalar::F64(0.0),
            Scalar::F64(0.1),
            Some((18, 1.8)),
        ),
        ("mixed", Scalar::I64(2), Scalar::F64(0.25), None),
    ];
    for (name, start, step, pin) in ramps {
        for d in DTYPES {
            out.push(Case {
                label: format!("ramp/{name}/{d}"),
                kernel: kernel(
                    vec![ins(
                        s,
                        d,
                        InstrKind::Leaf(LeafSource::Ramp {
                            start,
                            step,
                            pin,
                            map: map.clone(),
                        }),
                    )],
                    None,
                ),
            });
        }
    }
}

/// Chunk leaves of [`SHAPE`] reading sources in every way the IR allows.
pub fn chunk_reads() -> Vec<(String, Instr)> {
    let s = &SHAPE;
    let one = |start: Vec<usize>, shape: Vec<usize>, axes: Vec<AxisMap>| {
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![SourceChunk {
                start,
                shape,
                input: 0,
            }],
            axes,
        })
    };
    let ax = |offset: i64, local_axis: Option<usize>, step: i64| AxisMap {
        offset,
        local_axis,
        step,
    };
    // A 2 x 2 grid of [3, 5] chunks over a [6, 10] source, slots 0..4.
    let grid: Vec<SourceChunk> = (0..4)
        .map(|c| SourceChunk {
            start: vec![(c / 2) * 3, (c % 2) * 5],
            shape: vec![3, 5],
            input: c,
        })
        .collect();
    let many = |axes: Vec<AxisMap>| {
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: grid.clone(),
            axes,
        })
    };
    let d = DType::F64;
    vec![
        (
            "offset".into(),
            ins(
                s,
                d,
                one(
                    vec![10, 20],
                    vec![4, 6],
                    vec![ax(11, Some(0), 1), ax(21, Some(1), 1)],
                ),
            ),
        ),
        (
            "transposed".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![5, 3],
                    vec![ax(0, Some(1), 1), ax(0, Some(0), 1)],
                ),
            ),
        ),
        (
            "reversed".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![3, 5],
                    vec![ax(0, Some(0), 1), ax(4, Some(1), -1)],
                ),
            ),
        ),
        (
            "broadcast".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![1, 5],
                    vec![ax(0, None, 0), ax(0, Some(1), 1)],
                ),
            ),
        ),
        (
            "index_axis".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0, 0],
                    vec![3, 4, 5],
                    vec![ax(0, Some(0), 1), ax(2, None, 0), ax(0, Some(1), 1)],
                ),
            ),
        ),
        (
            "grid".into(),
            ins(s, d, many(vec![ax(2, Some(0), 1), ax(3, Some(1), 1)])),
        ),
        (
            "grid_strided_reversed".into(),
            ins(s, d, many(vec![ax(5, Some(0), -2), ax(1, Some(1), 2)])),
        ),
        (
            "grid_transposed".into(),
            ins(&[5, 3], d, many(vec![ax(1, Some(1), 2), ax(2, Some(0), 1)])),
        ),
        (
            "grid_broadcast".into(),
            ins(s, d, many(vec![ax(4, None, 0), ax(1, Some(1), 2)])),
        ),
    ]
}

fn chunks(out: &mut Vec<Case>) {
    for (name, leaf) in chunk_reads() {
        out.push(Case {
            label: format!("chunks/{name}"),
            kernel: kernel(vec![leaf], None),
        });
    }
}

fn trailing(out: &mut Vec<Case>) {
    use DType::*;
    let combos: [(ReduceOp, DType, DType); 22] = [
        (ReduceOp::All, F64, Bool),
        (ReduceOp::All, Bool, Bool),
        (ReduceOp::Any, F32, Bool),
        (ReduceOp::Any, U8, Bool),
        (ReduceOp::CountNonzero, I32, I64),
        (ReduceOp::CountNonzero, F64, I64),
        (ReduceOp::Min, F64, F64),
        (ReduceOp::Min, I64, I64),
        (ReduceOp::Min, Bool, Bool),
        (ReduceOp::Max, F32, F32),
        (ReduceOp::Max, U8, U8),
        (ReduceOp::Max, I32, I32),
        (ReduceOp::Sum, U8, I64),
        (ReduceOp::Sum, Bool, I64),
        (ReduceOp::Prod, I32, I64),
        (ReduceOp::Sum, F32, F64),
        (ReduceOp::Sum, I64, F64),
        (ReduceOp::Prod, F64, F64),
        (ReduceOp::Sum, F32, F32),
        (ReduceOp::Sum, F64, F32),
        (ReduceOp::Prod, F32, F32),
        (ReduceOp::Prod, U8, F32),
    ];
    for (op, from, to) in combos {
        out.push(Case {
            label: format!("trailing/{}/{from}/{to}", op.name()),
            kernel: kernel(
                vec![
                    chunk_leaf(&[3, 5], from, 0),
                    ins(&[3], to, InstrKind::ReduceTrailing { op, x: 0, k: 5 }),
                ],
                None,
            ),
        });
    }
    // Runs of runs, with an elementwise step between them and after them.
    out.push(Case {
        label: "trailing/nested".into(),
        kernel: kernel(
            vec![
                chunk_leaf(&[2, 3, 4], F64, 0),
                ins(
                    &[2, 3, 4],
                    F64,
                    InstrKind::Unary {
                        op: UnaryOp::Abs,
                        x: 0,
                    },
                ),
                ins(
                    &[2, 3],
                    F64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Max,
                        x: 1,
                        k: 4,
                    },
                ),
                ins(
                    &[2, 3],
                    F64,
                    InstrKind::Unary {
                        op: UnaryOp::Sqrt,
                        x: 2,
                    },
                ),
                ins(
                    &[2],
                    F64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Sum,
                        x: 3,
                        k: 3,
                    },
                ),
                ins(
                    &[2],
                    F64,
                    InstrKind::Unary {
                        op: UnaryOp::Neg,
                        x: 4,
                    },
                ),
            ],
            None,
        ),
    });
    // k = 1, and an operand used both inside and outside a run.
    out.push(Case {
        label: "trailing/k1_shared".into(),
        kernel: kernel(
            vec![
                chunk_leaf(&[3], I64, 0),
                ins(
                    &[3],
                    I64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Sum,
                        x: 0,
                        k: 1,
                    },
                ),
                ins(
                    &[3],
                    I64,
                    InstrKind::Binary {
                        op: BinaryOp::Mul,
                        a: 1,
                        b: 0,
                    },
                ),
            ],
            None,
        ),
    });
    // Two runs over the same operand, then a reduction of the result.
    out.push(Case {
        label: "trailing/siblings_reduced".into(),
        kernel: kernel(
            vec![
                chunk_leaf(&[3, 5], F64, 0),
                ins(
                    &[3],
                    F64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Min,
                        x: 0,
                        k: 5,
                    },
                ),
                ins(
                    &[3],
                    F64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Max,
                        x: 0,
                        k: 5,
                    },
                ),
                ins(
                    &[3],
                    F64,
                    InstrKind::Binary {
                        op: BinaryOp::Sub,
                        a: 2,
                        b: 1,
                    },
                ),
            ],
            Some(all_axes(&[3], ReduceOp::Sum)),
        ),
    });
}

fn reductions(out: &mut Vec<Case>) {
    let s = &SHAPE;
    for op in REDUCE_OPS {
        for d in DTYPES {
            out.push(Case {
                label: format!("reduce/{}/{d}/all", op_label(op)),
                kernel: kernel(vec![chunk_leaf(s, d, 0)], Some(all_axes(s, op))),
            });
        }
    }
    // Some axes of a 3-D chunk that sits inside a larger tensor.
    let s3 = [2usize, 3, 4];
    let axes_sets: [&[usize]; 4] = [&[0], &[1], &[2], &[0, 2]];
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Min,
        ReduceOp::Mean,
        ReduceOp::Std { ddof: 0 },
        ReduceOp::ArgMin,
        ReduceOp::ArgMax,
        ReduceOp::Any,
    ];
    for axes in axes_sets {
        for op in ops {
            for d in [DType::F64, DType::I32] {
                out.push(Case {
                    label: format!("reduce/{}/{d}/axes{axes:?}", op_label(op)),
                    kernel: kernel(
                        vec![chunk_leaf(&s3, d, 0)],
                        Some(ChunkReduce {
                            op,
                            axes: axes.to_vec(),
                            global_start: vec![2, 3, 8],
                            global_shape: vec![6, 9, 20],
                        }),
                    ),
                });
            }
        }
    }
    // A scalar root, and no reduced axis at all.
    out.push(Case {
        label: "reduce/scalar".into(),
        kernel: kernel(
            vec![ins(
                &[],
                DType::F64,
                InstrKind::Leaf(LeafSource::Const(Scalar::F64(2.5))),
            )],
            Some(all_axes(&[], ReduceOp::ArgMax)),
        ),
    });
    out.push(Case {
        label: "reduce/no_axes".into(),
        kernel: kernel(
            vec![chunk_leaf(s, DType::I64, 0)],
            Some(ChunkReduce {
                op: ReduceOp::Sum,
                axes: vec![],
                global_start: vec![0, 0],
                global_shape: s.to_vec(),
            }),
        ),
    });
    // A reduction of a generated expression: mean of normal draws times a ramp.
    out.push(Case {
        label: "reduce/random_expression".into(),
        kernel: kernel(
            vec![
                ins(
                    s,
                    DType::F64,
                    InstrKind::Leaf(LeafSource::Random {
                        dist: Distribution::Normal {
                            mean: 0.0,
                            std: 1.0,
                        },
                        seed: 42,
                        stream: 1,
                        map: FlatMap {
                            base: 30,
                            strides: c_strides(s),
                        },
                    }),
                ),
                ins(
                    s,
                    DType::F64,
                    InstrKind::Leaf(LeafSource::Ramp {
                        start: Scalar::F64(1.0),
                        step: Scalar::F64(0.5),
                        pin: None,
                        map: FlatMap {
                            base: 0,
                            strides: c_strides(s),
                        },
                    }),
                ),
                ins(
                    s,
                    DType::F64,
                    InstrKind::Binary {
                        op: BinaryOp::Mul,
                        a: 0,
                        b: 1,
                    },
                ),
            ],
            Some(ChunkReduce {
                op: ReduceOp::Var { ddof: 1 },
                axes: vec![1],
                global_start: vec![3, 0],
                global_shape: vec![9, 5],
            }),
        ),
    });
}

/// A label-friendly name (`var(ddof=1)`).
pub fn op_label(op: ReduceOp) -> String {
    match op {
        ReduceOp::Var { ddof } | ReduceOp::Std { ddof } => format!("{}{ddof}", op.name()),
        _ => op.name().to_string(),
    }
}

/// Every kernel the generator must accept.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    elementwise(&mut out);
    constants(&mut out);
    random(&mut out);
    ramps(&mut out);
    chunks(&mut out);
    trailing(&mut out);
    reductions(&mut out);
    out
}

/// IR the generator must refuse, each with the CPU's error variant.
pub fn refused() -> Vec<Refused> {
    let s = &SHAPE;
    let bad = || KernelError::BadInput(String::new());
    let dtype_err = || KernelError::UnsupportedDType {
        op: String::new(),
        dtype: DType::Bool,
    };
    let mut out = Vec::new();
    let mut push = |label: &str, kernel: FusedKernel, error: KernelError| {
        out.push(Refused {
            label: label.into(),
            kernel,
            error,
        })
    };
    for d in DTYPES {
        for op in UNARY.into_iter().filter(|&op| !unary_supported(op, d)) {
            push(
                &format!("unary/{}/{d}", op.name()),
                kernel(
                    vec![
                        chunk_leaf(s, d, 0),
                        ins(s, d, InstrKind::Unary { op, x: 0 }),
                    ],
                    None,
                ),
                dtype_err(),
            );
        }
        for op in BINARY.into_iter().filter(|&op| !binary_supported(op, d)) {
            push(
                &format!("binary/{}/{d}", op.name()),
                kernel(
                    vec![
                        chunk_leaf(s, d, 0),
                        chunk_leaf(s, d, 1),
                        ins(s, d, InstrKind::Binary { op, a: 0, b: 1 }),
                    ],
                    None,
                ),
                dtype_err(),
            );
        }
    }
    let f = DType::F64;
    push(
        "unary/mixed_dtypes",
        kernel(
            vec![
                chunk_leaf(s, f, 0),
                ins(
                    s,
                    DType::F32,
                    InstrKind::Unary {
                        op: UnaryOp::Sqrt,
                        x: 0,
                    },
                ),
            ],
            None,
        ),
        dtype_err(),
    );
    push(
        "binary/comparison_not_bool",
        kernel(
            vec![
                chunk_leaf(s, f, 0),
                chunk_leaf(s, f, 1),
                ins(
                    s,
                    f,
                    InstrKind::Binary {
                        op: BinaryOp::Lt,
                        a: 0,
                        b: 1,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "binary/mixed_operands",
        kernel(
            vec![
                chunk_leaf(s, f, 0),
                chunk_leaf(s, DType::I64, 1),
                ins(
                    s,
                    f,
                    InstrKind::Binary {
                        op: BinaryOp::Add,
                        a: 0,
                        b: 1,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "where/not_bool",
        kernel(
            vec![
                chunk_leaf(s, f, 0),
                ins(
                    s,
                    f,
                    InstrKind::Where {
                        cond: 0,
                        a: 0,
                        b: 0,
                    },
                ),
            ],
            None,
        ),
        dtype_err(),
    );
    push(
        "where/mixed",
        kernel(
            vec![
                chunk_leaf(s, DType::Bool, 0),
                chunk_leaf(s, DType::I32, 1),
                ins(
                    s,
                    f,
                    InstrKind::Where {
                        cond: 0,
                        a: 1,
                        b: 1,
                    },
                ),
            ],
            None,
        ),
        dtype_err(),
    );
    let rand = |dist, dtype| {
        kernel(
            vec![ins(
                s,
                dtype,
                InstrKind::Leaf(LeafSource::Random {
                    dist,
                    seed: 1,
                    stream: 0,
                    map: FlatMap {
                        base: 0,
                        strides: vec![5, 1],
                    },
                }),
            )],
            None,
        )
    };
    push(
        "random/wrong_dtype",
        rand(
            Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            DType::F32,
        ),
        bad(),
    );
    push(
        "random/empty_range",
        rand(Distribution::RandInt { low: 3, high: 3 }, DType::I64),
        KernelError::InvalidValue(String::new()),
    );
    push(
        "ramp/short_map",
        kernel(
            vec![ins(
                s,
                f,
                InstrKind::Leaf(LeafSource::Ramp {
                    start: Scalar::F64(0.0),
                    step: Scalar::F64(1.0),
                    pin: None,
                    map: FlatMap {
                        base: 0,
                        strides: vec![1],
                    },
                }),
            )],
            None,
        ),
        bad(),
    );
    push(
        "trailing/mean",
        kernel(
            vec![
                chunk_leaf(&[3, 5], f, 0),
                ins(
                    &[3],
                    f,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Mean,
                        x: 0,
                        k: 5,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "trailing/float_sum_into_int",
        kernel(
            vec![
                chunk_leaf(&[3, 5], f, 0),
                ins(
                    &[3],
                    DType::I64,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Sum,
                        x: 0,
                        k: 5,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "trailing/wrong_k",
        kernel(
            vec![
                chunk_leaf(&[3, 5], f, 0),
                ins(
                    &[3],
                    f,
                    InstrKind::ReduceTrailing {
                        op: ReduceOp::Sum,
                        x: 0,
                        k: 4,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "structure/empty",
        kernel(vec![chunk_leaf(&[3, 0], f, 0)], None),
        bad(),
    );
    push(
        "structure/root_out_of_range",
        FusedKernel {
            instrs: vec![chunk_leaf(s, f, 0)],
            root: 1,
            reduce: None,
        },
        bad(),
    );
    push(
        "structure/later_operand",
        FusedKernel {
            instrs: vec![
                ins(
                    s,
                    f,
                    InstrKind::Unary {
                        op: UnaryOp::Neg,
                        x: 1,
                    },
                ),
                chunk_leaf(s, f, 0),
            ],
            root: 0,
            reduce: None,
        },
        bad(),
    );
    push(
        "structure/mixed_shapes",
        kernel(
            vec![
                chunk_leaf(&[3, 5], f, 0),
                chunk_leaf(&[5, 3], f, 1),
                ins(
                    &[3, 5],
                    f,
                    InstrKind::Binary {
                        op: BinaryOp::Add,
                        a: 0,
                        b: 1,
                    },
                ),
            ],
            None,
        ),
        bad(),
    );
    push(
        "reduce/axis_out_of_range",
        kernel(
            vec![chunk_leaf(s, f, 0)],
            Some(ChunkReduce {
                op: ReduceOp::Sum,
                axes: vec![2],
                global_start: vec![0, 0],
                global_shape: s.to_vec(),
            }),
        ),
        bad(),
    );
    push(
        "chunks/axis_driven_twice",
        kernel(
            vec![ins(
                s,
                f,
                InstrKind::Leaf(LeafSource::Chunks {
                    chunks: vec![
                        SourceChunk {
                            start: vec![0, 0],
                            shape: vec![3, 3],
                            input: 0,
                        },
                        SourceChunk {
                            start: vec![3, 3],
                            shape: vec![3, 3],
                            input: 1,
                        },
                    ],
                    axes: vec![
                        AxisMap {
                            offset: 0,
                            local_axis: Some(1),
                            step: 1,
                        },
                        AxisMap {
                            offset: 0,
                            local_axis: Some(1),
                            step: 1,
                        },
                    ],
                }),
            )],
            None,
        ),
        bad(),
    );
    out
}

/// Deterministic test values (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` values of `dtype` for input `slot`: slot 0 mixes extremes, NaN, infinities and
/// signed zeros into its values; the other slots hold small values (integers in `0..6`,
/// so integer powers stay defined).
pub fn values(dtype: DType, n: usize, slot: usize) -> crate::tensor::Buffer {
    use crate::tensor::Buffer;
    let mut rng = Rng(0x5EED ^ (slot as u64).wrapping_mul(0x1234_5678_9ABC));
    let wide = slot == 0;
    let f64s: Vec<f64> = (0..n)
        .map(|k| {
            let r = rng.next();
            let special = [
                f64::NAN,
                -0.0,
                0.0,
                f64::INFINITY,
                -1e300,
                2.5e-310,
                7.0,
                -3.5,
            ];
            if wide && k % 4 == 1 {
                special[(r % 8) as usize]
            } else {
                let u = (r >> 11) as f64 / 9_007_199_254_740_992.0;
                if wide {
                    -20.0 + 40.0 * u
                } else {
                    -3.0 + 6.0 * u
                }
            }
        })
        .collect();
    let ints: Vec<i64> = (0..n)
        .map(|k| {
            let r = rng.next();
            let special = [
                i64::MIN,
                i64::MAX,
                -1,
                0,
                i64::from(i32::MIN),
                255,
                256,
                -129,
            ];
            if !wide {
                (r % 6) as i64
            } else if k % 4 == 1 {
                special[(r % 8) as usize]
            } else {
                (r % 41) as i64 - 20
            }
        })
        .collect();
    match dtype {
        DType::Bool => Buffer::Bool(ints.iter().map(|v| v & 1 == 1).collect()),
        DType::U8 => Buffer::U8(ints.iter().map(|&v| v as u8).collect()),
        DType::I32 => Buffer::I32(ints.iter().map(|&v| v as i32).collect()),
        DType::I64 => Buffer::I64(ints),
        DType::F32 => Buffer::F32(f64s.iter().map(|&v| v as f32).collect()),
        DType::F64 => Buffer::F64(f64s),
    }
}

/// The inputs the kernel's chunk leaves read, filled by [`values`].
pub fn inputs_for(kernel: &FusedKernel) -> Vec<std::sync::Arc<crate::ChunkData>> {
    let mut slots: std::collections::BTreeMap<usize, (DType, Vec<usize>)> = Default::default();
    for i in &kernel.instrs {
        if let InstrKind::Leaf(LeafSource::Chunks { chunks, .. }) = &i.kind {
            for c in chunks {
                slots.entry(c.input).or_insert((i.dtype, c.shape.clone()));
            }
        }
    }
    let count = slots.keys().next_back().map_or(0, |&s| s + 1);
    (0..count)
        .map(|slot| {
            let (dtype, shape) = slots.get(&slot).cloned().unwrap_or((DType::F64, vec![0]));
            let n = shape.iter().product();
            let t = crate::HostTensor::new(shape, values(dtype, n, slot)).unwrap();
            std::sync::Arc::new(crate::ChunkData::Tensor(t))
        })
        .collect()
}
