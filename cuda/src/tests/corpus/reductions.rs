//! Run folds inside expressions and trailing reductions over every axis set.

use super::*;

pub(super) fn trailing(out: &mut Vec<Case>) {
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

pub(super) fn reductions(out: &mut Vec<Case>) {
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
                            finalize: None,
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
                finalize: None,
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
                finalize: None,
            }),
        ),
    });
}
