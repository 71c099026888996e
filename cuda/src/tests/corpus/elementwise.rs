//! Elementwise cases: every unary and binary op on every dtype the CPU accepts, `where`,
//! casts, a longer expression, and constant leaves.

use super::*;

/// Every unary op; issue 13's start at `Floor`, index 8 (see `numpy_ops`).
pub(super) const UNARY: [UnaryOp; 28] = [
    UnaryOp::Neg,
    UnaryOp::Abs,
    UnaryOp::Sqrt,
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Not,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Trunc,
    UnaryOp::Rint,
    UnaryOp::Tan,
    UnaryOp::Arcsin,
    UnaryOp::Arccos,
    UnaryOp::Arctan,
    UnaryOp::Sinh,
    UnaryOp::Cosh,
    UnaryOp::Tanh,
    UnaryOp::Log2,
    UnaryOp::Log10,
    UnaryOp::Log1p,
    UnaryOp::Expm1,
    UnaryOp::Exp2,
    UnaryOp::BitNot,
    UnaryOp::Arcsinh,
    UnaryOp::Arccosh,
    UnaryOp::Arctanh,
];

/// Every binary op; issue 13's start at `FloorDiv`, index 15 (see `numpy_ops`).
pub(super) const BINARY: [BinaryOp; 27] = [
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
    BinaryOp::FloorDiv,
    BinaryOp::Remainder,
    BinaryOp::Fmod,
    BinaryOp::BitAnd,
    BinaryOp::BitOr,
    BinaryOp::BitXor,
    BinaryOp::Shl,
    BinaryOp::Shr,
    BinaryOp::Arctan2,
    BinaryOp::Hypot,
    BinaryOp::Copysign,
    BinaryOp::Nextafter,
];

/// The CPU evaluator's support for `op` on `dtype` (see `cpu::elementwise::unary`).
pub fn unary_supported(op: UnaryOp, dtype: DType) -> bool {
    match dtype {
        DType::F32 | DType::F64 => !matches!(op, UnaryOp::Not | UnaryOp::BitNot),
        DType::Bool => matches!(op, UnaryOp::Not | UnaryOp::BitNot),
        _ => matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::BitNot) || op.is_rounding(),
    }
}

/// The CPU evaluator's support for `op` on operands of `dtype` (`cpu::elementwise::binary`).
pub fn binary_supported(op: BinaryOp, dtype: DType) -> bool {
    if op.is_comparison() {
        return true;
    }
    match dtype {
        DType::F32 | DType::F64 => !op.is_logical() && !op.is_bitwise(),
        DType::Bool => matches!(
            op,
            BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Maximum
                | BinaryOp::Minimum
                | BinaryOp::BitAnd
                | BinaryOp::BitOr
                | BinaryOp::BitXor
        ),
        _ => {
            !op.is_logical()
                && !matches!(
                    op,
                    BinaryOp::Div
                        | BinaryOp::Arctan2
                        | BinaryOp::Hypot
                        | BinaryOp::Copysign
                        | BinaryOp::Nextafter
                )
        }
    }
}

pub(super) fn elementwise(out: &mut Vec<Case>) {
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

pub(super) fn constants(out: &mut Vec<Case>) {
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
