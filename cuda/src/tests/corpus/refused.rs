//! IR the generator must refuse, each with the CPU evaluator's error variant.

use super::elementwise::{binary_supported, unary_supported, BINARY, UNARY};
use super::*;

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
                finalize: None,
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
