//! The NumPy operators of issue 13: every new op on every dtype the CPU accepts, over the
//! cross product of the edge values (`values::EDGE_*`: by zero, `MIN // -1`, shift counts
//! past the width or negative, halves, NaN, infinities), and the compositions the Tensor
//! API builds from them (`round(x, d)`, `clip`, `sign`, `isnan` / `isinf` / `isfinite`,
//! `divmod`) fused with run folds and trailing reductions.

use super::elementwise::{binary_supported, unary_supported, BINARY, UNARY};
use super::values::{EDGE_INTS, EDGE_SLOT};
use super::*;

/// The unary ops issue 13 added (the tail of [`UNARY`]).
const NEW_UNARY: &[UnaryOp] = UNARY.split_at(8).1;

/// The binary ops issue 13 added (the tail of [`BINARY`]).
const NEW_BINARY: &[BinaryOp] = BINARY.split_at(15).1;

/// How many edge values there are (the float list has as many as the integer one).
const N: usize = EDGE_INTS.len();

/// The numeric dtypes.
const NUMERIC: [DType; 5] = [DType::U8, DType::I32, DType::I64, DType::F32, DType::F64];

/// A kernel under construction: instructions of one shape, operands by index.
struct Prog {
    shape: Vec<usize>,
    instrs: Vec<Instr>,
}

impl Prog {
    fn new(shape: &[usize]) -> Prog {
        Prog {
            shape: shape.to_vec(),
            instrs: Vec::new(),
        }
    }

    fn push(&mut self, dtype: DType, kind: InstrKind) -> usize {
        self.instrs.push(ins(&self.shape, dtype, kind));
        self.instrs.len() - 1
    }

    /// The edge values along local axis `axis`.
    fn edge(&mut self, dtype: DType, axis: usize) -> usize {
        self.push(
            dtype,
            InstrKind::Leaf(LeafSource::Chunks {
                chunks: vec![SourceChunk {
                    start: vec![0],
                    shape: vec![N],
                    input: EDGE_SLOT,
                }],
                axes: vec![AxisMap {
                    offset: 0,
                    local_axis: Some(axis),
                    step: 1,
                }],
            }),
        )
    }

    fn leaf(&mut self, dtype: DType, slot: usize) -> usize {
        let leaf = chunk_leaf(&self.shape, dtype, slot);
        self.instrs.push(leaf);
        self.instrs.len() - 1
    }

    fn constant(&mut self, v: f64, dtype: DType) -> usize {
        self.push(
            dtype,
            InstrKind::Leaf(LeafSource::Const(Scalar::F64(v).cast(dtype))),
        )
    }

    fn unary(&mut self, op: UnaryOp, x: usize) -> usize {
        let dtype = self.instrs[x].dtype;
        self.push(dtype, InstrKind::Unary { op, x })
    }

    fn binary(&mut self, op: BinaryOp, a: usize, b: usize) -> usize {
        let dtype = if op.is_comparison() {
            DType::Bool
        } else {
            self.instrs[a].dtype
        };
        self.push(dtype, InstrKind::Binary { op, a, b })
    }

    fn select(&mut self, cond: usize, a: usize, b: usize) -> usize {
        let dtype = self.instrs[a].dtype;
        self.push(dtype, InstrKind::Where { cond, a, b })
    }

    /// The largest of each run of `k` trailing values of `x`; later instructions have the
    /// runs' shape.
    fn max_of_runs(&mut self, x: usize, k: usize) -> usize {
        let dtype = self.instrs[x].dtype;
        let runs = self.shape.len() - 1;
        self.shape.truncate(runs);
        let op = ReduceOp::Max;
        self.push(dtype, InstrKind::ReduceTrailing { op, x, k })
    }

    /// The kernel whose root is the last instruction, reduced over all axes by `op`.
    fn done(self, label: String, reduce: Option<ReduceOp>, out: &mut Vec<Case>) {
        let reduce = reduce.map(|op| all_axes(&self.shape, op));
        out.push(Case {
            label,
            kernel: kernel(self.instrs, reduce),
        });
    }
}

/// Every new op on every dtype it accepts, over all pairs of edge values.
pub(super) fn edges(out: &mut Vec<Case>) {
    for d in DTYPES {
        for op in NEW_UNARY
            .iter()
            .copied()
            .filter(|&op| unary_supported(op, d))
        {
            let mut p = Prog::new(&[N]);
            let x = p.edge(d, 0);
            p.unary(op, x);
            p.done(format!("edge/unary/{}/{d}", op.name()), None, out);
        }
        for op in NEW_BINARY
            .iter()
            .copied()
            .filter(|&op| binary_supported(op, d))
        {
            let mut p = Prog::new(&[N, N]);
            let (a, b) = (p.edge(d, 0), p.edge(d, 1));
            p.binary(op, a, b);
            p.done(format!("edge/binary/{}/{d}", op.name()), None, out);
        }
    }
}

/// The Tensor API's compositions of the new ops, fused with reductions.
pub(super) fn compositions(out: &mut Vec<Case>) {
    for d in NUMERIC {
        // clip(x, -2, 3), summed (integers) or maximised (floats: exact in any order).
        let reduce = if d.is_float() {
            ReduceOp::Max
        } else {
            ReduceOp::Sum
        };
        // Value by value on the edge values (NaN stays NaN) and reduced on slot 0's.
        for reduce in [None, Some(reduce)] {
            let mut p = Prog::new(if reduce.is_some() { &SHAPE } else { &[N] });
            let x = if reduce.is_some() {
                p.leaf(d, 0)
            } else {
                p.edge(d, 0)
            };
            let (lo, hi) = (p.constant(-2.0, d), p.constant(3.0, d));
            let m = p.binary(BinaryOp::Maximum, x, lo);
            p.binary(BinaryOp::Minimum, m, hi);
            let suffix = if reduce.is_some() { "/reduced" } else { "" };
            p.done(format!("chain/clip/{d}{suffix}"), reduce, out);
        }

        // sign(x) = where(x > 0, 1, where(x < 0, -1, x)).
        let mut p = Prog::new(&[N]);
        let x = p.edge(d, 0);
        let (zero, one, minus) = (p.constant(0.0, d), p.constant(1.0, d), p.constant(-1.0, d));
        let (gt, lt) = (
            p.binary(BinaryOp::Gt, x, zero),
            p.binary(BinaryOp::Lt, x, zero),
        );
        let inner = p.select(lt, minus, x);
        p.select(gt, one, inner);
        p.done(format!("chain/sign/{d}"), None, out);

        // divmod: a // b * b + a % b, per run of 5 (a trailing fold), then over all runs.
        let mut p = Prog::new(&[3, 5]);
        let (a, b) = (p.leaf(d, 0), p.leaf(d, 1));
        let q = p.binary(BinaryOp::FloorDiv, a, b);
        let r = p.binary(BinaryOp::Remainder, a, b);
        let qb = p.binary(BinaryOp::Mul, q, b);
        let back = p.binary(BinaryOp::Add, qb, r);
        p.max_of_runs(back, 5);
        p.done(format!("chain/divmod/{d}"), Some(ReduceOp::Min), out);
    }
    for d in [DType::F32, DType::F64] {
        // round(x, 2) and round(x, -1) as NumPy scales them.
        for (decimals, label) in [(2, "2"), (-1, "-1")] {
            let scale = 10f64.powi(i32::abs(decimals));
            let (first, second) = if decimals > 0 {
                (BinaryOp::Mul, BinaryOp::Div)
            } else {
                (BinaryOp::Div, BinaryOp::Mul)
            };
            let mut p = Prog::new(&[N]);
            let x = p.edge(d, 0);
            let c = p.constant(scale, d);
            let scaled = p.binary(first, x, c);
            let rounded = p.unary(UnaryOp::Rint, scaled);
            p.binary(second, rounded, c);
            p.done(format!("chain/round{label}/{d}"), None, out);
        }
        // isnan, isinf and isfinite, counted, tested for any, tested for all.
        let mut p = Prog::new(&SHAPE);
        let x = p.leaf(d, 0);
        p.binary(BinaryOp::Ne, x, x);
        p.done(
            format!("chain/isnan/{d}"),
            Some(ReduceOp::CountNonzero),
            out,
        );
        let mut p = Prog::new(&SHAPE);
        let x = p.leaf(d, 0);
        let (abs, inf) = (p.unary(UnaryOp::Abs, x), p.constant(f64::INFINITY, d));
        p.binary(BinaryOp::Eq, abs, inf);
        p.done(format!("chain/isinf/{d}"), Some(ReduceOp::Any), out);
        let mut p = Prog::new(&SHAPE);
        let x = p.leaf(d, 0);
        let (diff, zero) = (p.binary(BinaryOp::Sub, x, x), p.constant(0.0, d));
        p.binary(BinaryOp::Eq, diff, zero);
        p.done(format!("chain/isfinite/{d}"), Some(ReduceOp::All), out);
        // hypot then arctan2 against a floored operand, the largest of each run of 5.
        let mut p = Prog::new(&[3, 5]);
        let (a, b) = (p.leaf(d, 0), p.leaf(d, 1));
        let h = p.binary(BinaryOp::Hypot, a, b);
        let f = p.unary(UnaryOp::Floor, b);
        let t = p.binary(BinaryOp::Arctan2, h, f);
        p.max_of_runs(t, 5);
        p.done(format!("chain/arctan2_hypot/{d}"), None, out);
        // sin(x)**2 + cos(x)**2 of one operand, over the edge values (beyond 2^17,
        // infinities, NaN) and over a chunk.
        for (label, edges) in [("edges", true), ("chunk", false)] {
            let mut p = Prog::new(&[N]);
            let x = if edges { p.edge(d, 0) } else { p.leaf(d, 0) };
            let (s, c) = (p.unary(UnaryOp::Sin, x), p.unary(UnaryOp::Cos, x));
            let (ss, cc) = (p.binary(BinaryOp::Mul, s, s), p.binary(BinaryOp::Mul, c, c));
            p.binary(BinaryOp::Add, ss, cc);
            p.done(format!("chain/sin_cos_shared/{label}/{d}"), None, out);
        }
        // cos before sin of one operand (the pair's first instruction is the cosine).
        let mut p = Prog::new(&[N]);
        let x = p.edge(d, 0);
        let (c, s) = (p.unary(UnaryOp::Cos, x), p.unary(UnaryOp::Sin, x));
        p.binary(BinaryOp::Sub, c, s);
        p.done(format!("chain/cos_sin_shared/{d}"), None, out);
        // sqrt(x) < c and sqrt(x) <= c, rewritten without the square root for f64.
        for (label, op, c) in [
            ("lt1", BinaryOp::Lt, 1.0),
            ("le2", BinaryOp::Le, 2.0),
            ("lt3", BinaryOp::Lt, 3.0),
        ] {
            for edges in [true, false] {
                let mut p = Prog::new(&[N]);
                let x = if edges { p.edge(d, 0) } else { p.leaf(d, 0) };
                let (r, k) = (p.unary(UnaryOp::Sqrt, x), p.constant(c, d));
                p.binary(op, r, k);
                p.done(format!("chain/sqrt_below/{label}/{edges}/{d}"), None, out);
            }
        }
    }
    for d in [DType::U8, DType::I32, DType::I64] {
        // ((a << b) ^ ~a) >> (b & 3), summed into i64.
        let mut p = Prog::new(&[N, N]);
        let (a, b) = (p.edge(d, 0), p.edge(d, 1));
        let shl = p.binary(BinaryOp::Shl, a, b);
        let not = p.unary(UnaryOp::BitNot, a);
        let x = p.binary(BinaryOp::BitXor, shl, not);
        let three = p.constant(3.0, d);
        let count = p.binary(BinaryOp::BitAnd, b, three);
        p.binary(BinaryOp::Shr, x, count);
        p.done(format!("chain/bits/{d}"), Some(ReduceOp::Sum), out);
    }
}
