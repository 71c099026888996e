//! Shortcuts the fused evaluator takes for some instruction patterns, with the same values
//! (bit for bit) as evaluating every instruction on its own:
//!
//! * `sin(x)` and `cos(x)` of one `f64` operand are computed together
//!   ([`vmath::sincos`]: one argument reduction, and either function needs both
//!   polynomials anyway), so the pair costs about what one of them did.
//! * `sqrt(x) < c` (or `<= c`) for a constant `c > 0` becomes `0 <= x < t`, `t` the least
//!   double whose rounded square root is `>= c` (`> c`), found once per kernel: `sqrt` is
//!   correctly rounded and monotone, so the two agree for every `x`, NaN, `-0.0`, negative
//!   numbers and infinities included. The `sqrt` itself is then skipped when nothing else
//!   reads it.

use super::vmath;
use crate::dtype::DType;
use crate::expr::{BinaryOp, Instr, InstrKind, LeafSource, UnaryOp};
use crate::tensor::Buffer;
use crate::KernelError;

/// How one instruction of a kernel is evaluated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shortcut {
    /// On its own.
    Plain,
    /// Not at all: an earlier instruction computes it, or nothing reads it any more.
    Skip,
    /// A `sin` or `cos` that also computes the other function of its operand into the
    /// instruction `gap` places later.
    SinCos {
        /// How many instructions later the other function's result goes.
        gap: usize,
    },
    /// `0 <= x && x < limit` (a rewritten `sqrt(x) < c` or `sqrt(x) <= c`).
    SqrtBelow {
        /// The instruction whose value is compared.
        x: usize,
        /// The bound on `x` that `c` becomes (about `c * c`).
        limit: f64,
    },
}

/// The shortcut of every instruction of a kernel whose result is instruction `root`.
pub fn plan(instrs: &[Instr], root: usize) -> Vec<Shortcut> {
    let mut how = vec![Shortcut::Plain; instrs.len()];
    pair_sin_cos(instrs, &mut how);
    let mut uses = vec![0usize; instrs.len()];
    if let Some(u) = uses.get_mut(root) {
        *u += 1;
    }
    for ins in instrs {
        for o in operands(&ins.kind) {
            if let Some(u) = uses.get_mut(o) {
                *u += 1;
            }
        }
    }
    for i in 0..instrs.len() {
        if let Some((sqrt, x, limit)) = sqrt_compare(instrs, i) {
            if uses[sqrt] == 1 && how[sqrt] == Shortcut::Plain {
                how[i] = Shortcut::SqrtBelow { x, limit };
                how[sqrt] = Shortcut::Skip;
            }
        }
    }
    how
}

fn operands(kind: &InstrKind) -> Vec<usize> {
    match kind {
        InstrKind::Leaf(_) => vec![],
        InstrKind::Unary { x, .. }
        | InstrKind::Cast { x }
        | InstrKind::ReduceTrailing { x, .. } => {
            vec![*x]
        }
        InstrKind::Binary { a, b, .. } => vec![*a, *b],
        InstrKind::Where { cond, a, b } => vec![*cond, *a, *b],
    }
}

/// Pairs each `f64` `sin`/`cos` with the first later opposite function of the same operand.
fn pair_sin_cos(instrs: &[Instr], how: &mut [Shortcut]) {
    let trig = |ins: &Instr| match ins.kind {
        InstrKind::Unary { op, x } if ins.dtype == DType::F64 => match op {
            UnaryOp::Sin => Some((x, true)),
            UnaryOp::Cos => Some((x, false)),
            _ => None,
        },
        _ => None,
    };
    for (i, ins) in instrs.iter().enumerate() {
        let Some((x, is_sin)) = trig(ins) else {
            continue;
        };
        if how[i] != Shortcut::Plain {
            continue;
        }
        let partner = (i + 1..instrs.len())
            .find(|&j| how[j] == Shortcut::Plain && trig(&instrs[j]) == Some((x, !is_sin)));
        if let Some(j) = partner {
            how[i] = Shortcut::SinCos { gap: j - i };
            how[j] = Shortcut::Skip;
        }
    }
}

/// If instruction `i` is `sqrt(x) < c` or `sqrt(x) <= c` on `f64` with a constant `c > 0`:
/// the `sqrt` instruction, `x`, and the limit.
fn sqrt_compare(instrs: &[Instr], i: usize) -> Option<(usize, usize, f64)> {
    let InstrKind::Binary { op, a, b } = instrs.get(i)?.kind else {
        return None;
    };
    let InstrKind::Unary {
        op: UnaryOp::Sqrt,
        x,
    } = instrs.get(a)?.kind
    else {
        return None;
    };
    if instrs.get(a)?.dtype != DType::F64 {
        return None;
    }
    let InstrKind::Leaf(LeafSource::Const(c)) = instrs.get(b)?.kind else {
        return None;
    };
    let c = c.cast(DType::F64).as_f64();
    let strict = match op {
        BinaryOp::Lt => true,
        BinaryOp::Le => false,
        _ => return None,
    };
    Some((a, x, sqrt_limit(c, strict)?))
}

/// The least `t` with `sqrt(t) >= c` (`strict`) or `sqrt(t) > c`, for a finite `c > 0`
/// whose square is a normal finite double; `None` otherwise.
pub(super) fn sqrt_limit(c: f64, strict: bool) -> Option<f64> {
    let reached = |t: f64| if strict { t.sqrt() >= c } else { t.sqrt() > c };
    let sq = c * c;
    if !(c > 0.0 && sq.is_normal()) {
        return None;
    }
    let up = |t: f64| f64::from_bits(t.to_bits() + 1);
    let down = |t: f64| f64::from_bits(t.to_bits() - 1);
    // `sqrt` is within half an ulp, so the limit is a few steps from `c * c`.
    let mut t = sq;
    for _ in 0..64 {
        match (reached(t), reached(down(t))) {
            (true, false) => return Some(t),
            (true, true) => t = down(t),
            (false, _) => t = up(t),
        }
    }
    None
}

/// [`Shortcut::SqrtBelow`]: `out = 0 <= x < limit` for the first `len` values.
#[inline(always)]
pub(super) fn sqrt_below_into(
    x: &Buffer,
    limit: f64,
    len: usize,
    out: &mut Buffer,
) -> Result<(), KernelError> {
    match (x, out) {
        (Buffer::F64(xs), Buffer::Bool(o)) => {
            o.resize(len, false);
            for (d, &v) in o.iter_mut().zip(&xs[..len]) {
                *d = (v >= 0.0) & (v < limit);
            }
            Ok(())
        }
        (x, o) => Err(KernelError::BadInput(format!(
            "sqrt comparison of {} into {}",
            x.dtype(),
            o.dtype()
        ))),
    }
}

/// [`Shortcut::SinCos`]: `rest[0]` gets `op(x)` (`op` is `sin` or `cos`) and `rest[gap]`
/// the other function of `x`, for the first `len` values.
#[inline(always)]
pub(super) fn sincos_into(
    op: UnaryOp,
    x: &Buffer,
    len: usize,
    rest: &mut [Buffer],
    gap: usize,
) -> Result<(), KernelError> {
    let (first, later) = rest.split_at_mut(gap.min(rest.len()));
    match (x, first.first_mut(), later.first_mut()) {
        (Buffer::F64(xs), Some(Buffer::F64(p)), Some(Buffer::F64(q))) => {
            let (s, c) = if op == UnaryOp::Sin { (p, q) } else { (q, p) };
            s.resize(len, 0.0);
            c.resize(len, 0.0);
            vmath::sincos(&xs[..len], s, c);
            Ok(())
        }
        _ => Err(KernelError::BadInput(format!(
            "a sin/cos pair of {} is not float64",
            x.dtype()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::fused::tests::{ramp, unary as unary_n};
    use crate::dtype::Scalar;

    fn instr(dtype: DType, kind: InstrKind) -> Instr {
        crate::cpu::fused::tests::instr(4, dtype, kind)
    }

    fn unary(op: UnaryOp, x: usize) -> Instr {
        unary_n(4, op, x)
    }

    fn leaf() -> Instr {
        ramp(4, 0.0, 1.0)
    }

    fn constant(v: Scalar) -> Instr {
        instr(DType::F64, InstrKind::Leaf(LeafSource::Const(v)))
    }

    fn compare(op: BinaryOp, a: usize, b: usize) -> Instr {
        instr(DType::Bool, InstrKind::Binary { op, a, b })
    }

    #[test]
    fn sin_and_cos_of_one_operand_are_paired_once() {
        let instrs = vec![
            leaf(),
            unary(UnaryOp::Cos, 0),
            unary(UnaryOp::Sin, 0),
            unary(UnaryOp::Sin, 0),
            unary(UnaryOp::Sin, 1),
            unary(UnaryOp::Cos, 0),
            unary(UnaryOp::Cos, 4),
            instr(DType::F32, InstrKind::Cast { x: 0 }),
            instr(
                DType::F32,
                InstrKind::Unary {
                    op: UnaryOp::Sin,
                    x: 7,
                },
            ),
            instr(
                DType::F32,
                InstrKind::Unary {
                    op: UnaryOp::Cos,
                    x: 7,
                },
            ),
        ];
        // cos(x0) with the first sin(x0); the second sin(x0) with the second cos(x0);
        // sin(x1) has no cos(x1); float32 is not paired.
        use Shortcut::{Plain, SinCos, Skip};
        assert_eq!(
            plan(&instrs, 9),
            vec![
                Plain,
                SinCos { gap: 1 },
                Skip,
                SinCos { gap: 2 },
                Plain,
                Skip,
                Plain,
                Plain,
                Plain,
                Plain
            ]
        );
    }

    #[test]
    fn sqrt_comparisons_are_rewritten_only_when_exact_and_sole_use() {
        let one = |op| {
            vec![
                leaf(),
                unary(UnaryOp::Sqrt, 0),
                constant(Scalar::F64(1.0)),
                compare(op, 1, 2),
            ]
        };
        assert_eq!(
            plan(&one(BinaryOp::Lt), 3)[1..],
            [
                Shortcut::Skip,
                Shortcut::Plain,
                Shortcut::SqrtBelow { x: 0, limit: 1.0 }
            ]
        );
        // An integer constant is cast to the compared dtype.
        let mut int = one(BinaryOp::Le);
        int[2] = constant(Scalar::I64(4));
        let limit = sqrt_limit(4.0, false).unwrap();
        assert!(limit > 16.0 && limit < 16.000_001);
        assert_eq!(plan(&int, 3)[3], Shortcut::SqrtBelow { x: 0, limit });
        // Other comparisons, the constant first, or a sqrt read elsewhere: unchanged.
        for (instrs, root) in [
            (one(BinaryOp::Gt), 3),
            (one(BinaryOp::Eq), 3),
            (
                vec![
                    leaf(),
                    unary(UnaryOp::Sqrt, 0),
                    constant(Scalar::F64(1.0)),
                    compare(BinaryOp::Lt, 2, 1),
                ],
                3,
            ),
            (one(BinaryOp::Lt), 1),
            (
                {
                    let mut v = one(BinaryOp::Lt);
                    v.push(unary(UnaryOp::Neg, 1));
                    v
                },
                4,
            ),
        ] {
            assert!(
                plan(&instrs, root).iter().all(|&s| s == Shortcut::Plain),
                "{instrs:?}"
            );
        }
        // Non-positive, NaN and infinite constants are left alone.
        for c in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e200, 1e-200] {
            assert_eq!(sqrt_limit(c, true), None, "{c}");
        }
    }

    /// The limit is exact: `sqrt(t) >= c > sqrt(t - ulp)` (or `>`), checked for many `c`.
    #[test]
    fn sqrt_limits_are_the_least_reaching_values() {
        let mut c = 1e-150;
        while c < 1e150 {
            for strict in [true, false] {
                let t = sqrt_limit(c, strict).unwrap();
                let below = f64::from_bits(t.to_bits() - 1);
                if strict {
                    assert!(t.sqrt() >= c && below.sqrt() < c, "{c:e}");
                } else {
                    assert!(t.sqrt() > c && below.sqrt() <= c, "{c:e}");
                }
            }
            c *= 1.0137;
        }
        assert_eq!(sqrt_limit(1.0, true), Some(1.0));
        assert_eq!(sqrt_limit(3.0, true), Some(9.0));
    }
}
