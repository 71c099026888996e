//! CUDA C spellings of Tessera's element types, literals, conversions and elementwise
//! functions, each matching the CPU evaluator (`cpu::elementwise`) value for value.
//!
//! Every function takes operand expressions that are plain variable names (they may be
//! repeated in the result) and returns one C expression.

use tessera_kernels::dtype::{DType, Scalar};
use tessera_kernels::expr::{BinaryOp, ReduceOp, UnaryOp};
use tessera_kernels::KernelError;

/// The C type holding one element of `d` (`bool` is one byte, 0 or 1, like Rust's).
pub(crate) fn ctype(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::U8 => "ts_u8",
        DType::I32 => "ts_i32",
        DType::I64 => "ts_i64",
        DType::F32 => "float",
        DType::F64 => "double",
        // Not in kernels yet (`codegen::generated`): C's own names.
        DType::I8 => "signed char",
        DType::I16 => "short",
        DType::U16 => "unsigned short",
        DType::U32 => "unsigned int",
        DType::U64 => "unsigned long long",
        DType::C64 => "cuFloatComplex",
        DType::C128 => "cuDoubleComplex",
    }
}

/// An exact C literal of `v`: a hexadecimal float, or its bit pattern when not finite.
pub(crate) fn f64_lit(v: f64) -> String {
    if !v.is_finite() {
        return format!("ts_bits_f64(0x{:016X}ULL)", v.to_bits());
    }
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exp = ((bits >> 52) & 0x7FF) as i64;
    let mant = bits & 0x000F_FFFF_FFFF_FFFF;
    if exp == 0 {
        format!("({sign}0x0.{mant:013x}p-1022)")
    } else {
        format!("({sign}0x1.{mant:013x}p{:+})", exp - 1023)
    }
}

/// An exact C literal of `v` of type `float`.
pub(crate) fn f32_lit(v: f32) -> String {
    if !v.is_finite() {
        return format!("__int_as_float((int)0x{:08X}u)", v.to_bits());
    }
    // Every f32 is exactly an f64; the `f` suffix makes the literal a float.
    let s = f64_lit(f64::from(v));
    format!("{}f)", &s[..s.len() - 1])
}

/// A C literal of type `ts_i64` (`long long`).
pub(crate) fn i64_lit(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else if v < 0 {
        format!("({v}LL)")
    } else {
        format!("{v}LL")
    }
}

/// A C literal of `v`, which must already be of `dtype` (see [`Scalar::cast`]).
pub(crate) fn scalar_lit(v: Scalar) -> String {
    match v {
        Scalar::Bool(b) => if b { "true" } else { "false" }.into(),
        Scalar::U8(x) => format!("((ts_u8){x})"),
        Scalar::I32(x) => format!("((ts_i32){})", i64_lit(i64::from(x))),
        Scalar::I64(x) => i64_lit(x),
        Scalar::F32(x) => f32_lit(x),
        Scalar::F64(x) => f64_lit(x),
        Scalar::I8(x) => format!("(({})({x}))", ctype(DType::I8)),
        Scalar::I16(x) => format!("(({})({x}))", ctype(DType::I16)),
        Scalar::U16(x) => format!("(({}){x}u)", ctype(DType::U16)),
        Scalar::U32(x) => format!("{x}u"),
        Scalar::U64(x) => format!("{x}ULL"),
        Scalar::C64(z) => format!("make_cuFloatComplex({}, {})", f32_lit(z.re), f32_lit(z.im)),
        Scalar::C128(z) => format!("make_cuDoubleComplex({}, {})", f64_lit(z.re), f64_lit(z.im)),
    }
}

/// `x.to_f64()` (`true` is 1; `i64` rounds to nearest).
pub(crate) fn to_f64(x: &str, from: DType) -> String {
    match from {
        DType::Bool => format!("({x} ? 1.0 : 0.0)"),
        DType::U8 | DType::I8 | DType::I16 | DType::U16 | DType::U32 | DType::I32 | DType::F32 => {
            format!("((double){x})")
        }
        DType::I64 => format!("ts_i64_to_f64({x})"),
        DType::U64 => format!("__ull2double_rn({x})"),
        DType::F64 => x.to_string(),
        DType::C64 => format!("((double)cuCrealf({x}))"),
        DType::C128 => format!("cuCreal({x})"),
    }
}

/// `x.is_nonzero()` (NaN counts as non-zero).
pub(crate) fn nonzero(x: &str, from: DType) -> String {
    match from {
        DType::Bool => x.to_string(),
        DType::F32 => format!("({x} != 0.0f)"),
        DType::F64 => format!("({x} != 0.0)"),
        _ => format!("({x} != 0)"),
    }
}

/// `f64 as <to>` (Rust's `as`: truncating, saturating through `i64`, then wrapping).
pub(crate) fn from_f64(v: &str, to: DType) -> String {
    match to {
        DType::Bool => format!("({v} != 0.0)"),
        DType::I64 => format!("ts_f64_to_i64({v})"),
        DType::F32 => format!("ts_f64_to_f32({v})"),
        DType::F64 => v.to_string(),
        // Above i64's range a float becomes a uint64 directly, as on the CPU.
        DType::U64 => format!("({v} >= 0.0 ? __double2ull_rz({v}) : (ts_u64)ts_f64_to_i64({v}))"),
        small => format!("(({})ts_f64_to_i64({v}))", ctype(small)),
    }
}

/// `i64 as <to>` (wrapping for integers, rounding for floats).
pub(crate) fn from_i64(v: &str, to: DType) -> String {
    match to {
        DType::Bool => format!("({v} != 0)"),
        DType::I64 => v.to_string(),
        DType::F32 => format!("ts_f64_to_f32(ts_i64_to_f64({v}))"),
        DType::F64 => format!("ts_i64_to_f64({v})"),
        int => format!("(({}){v})", ctype(int)),
    }
}

/// `astype`: `cpu::elementwise::convert` for one value.
pub(crate) fn convert(x: &str, from: DType, to: DType) -> String {
    if from == to {
        x.to_string()
    } else if to == DType::Bool {
        nonzero(x, from)
    } else if to.is_float() || from.is_float() {
        from_f64(&to_f64(x, from), to)
    } else {
        from_i64(&format!("((ts_i64){x})"), to)
    }
}

fn unsupported(op: &str, dtype: DType) -> KernelError {
    KernelError::UnsupportedDType {
        op: op.to_string(),
        dtype,
    }
}

/// `op(x)` where `x` and the result are both of `dtype`.
pub(crate) fn unary(op: UnaryOp, x: &str, dtype: DType) -> Result<String, KernelError> {
    let t = ctype(dtype);
    let f64_fn = |name: &str| format!("{name}({x})");
    Ok(match (op, dtype) {
        (UnaryOp::Neg, DType::F32 | DType::F64) => format!("(-{x})"),
        (UnaryOp::Neg, DType::U8 | DType::I32 | DType::I64) => format!("ts_wsub(({t})0, {x})"),
        (UnaryOp::Abs, DType::F64) => format!("fabs({x})"),
        (UnaryOp::Abs, DType::F32) => format!("fabsf({x})"),
        (UnaryOp::Abs, DType::I32 | DType::I64) => {
            format!("({x} < 0 ? ts_wsub(({t})0, {x}) : {x})")
        }
        (UnaryOp::Abs, DType::U8) => x.to_string(),
        (UnaryOp::Sqrt, DType::F32 | DType::F64) => format!("ts_sqrt({x})"),
        (UnaryOp::Exp, DType::F64) => f64_fn("ts_exp64"),
        (UnaryOp::Log, DType::F64) => f64_fn("ts_ln64"),
        (UnaryOp::Sin, DType::F64) => f64_fn("ts_sin64"),
        (UnaryOp::Cos, DType::F64) => f64_fn("ts_cos64"),
        (UnaryOp::Exp, DType::F32) => f64_fn("expf"),
        (UnaryOp::Log, DType::F32) => f64_fn("logf"),
        (UnaryOp::Sin, DType::F32) => f64_fn("sinf"),
        (UnaryOp::Cos, DType::F32) => f64_fn("cosf"),
        (UnaryOp::Not | UnaryOp::BitNot, DType::Bool) => format!("(!{x})"),
        (UnaryOp::BitNot, DType::U8 | DType::I32 | DType::I64) => format!("(({t})~{x})"),
        // NumPy 2 keeps integers as they are under the roundings.
        (op, DType::U8 | DType::I32 | DType::I64) if op.is_rounding() => x.to_string(),
        (op, DType::F64) => match libdevice(op) {
            Some(name) => f64_fn(&name),
            None => return Err(unsupported(op.name(), dtype)),
        },
        (op, DType::F32) => match libdevice(op) {
            Some(name) => format!("{name}f({x})"),
            None => return Err(unsupported(op.name(), dtype)),
        },
        _ => return Err(unsupported(op.name(), dtype)),
    })
}

/// The libdevice function (its `f64` name; `f32` appends `f`) for the float functions
/// the CPU computes with the platform's libm, or exactly (the roundings): NumPy's name,
/// `arc` shortened to `a` (`arcsin` is `asin`).
fn libdevice(op: UnaryOp) -> Option<String> {
    (op.is_float_fn() || op.is_rounding()).then(|| op.name().replacen("arc", "a", 1))
}

/// NumPy's integer `op` in `i64` (`ts_i*` in the prelude), truncated back to `dtype`.
fn int_op(op: BinaryOp, a: &str, b: &str, dtype: DType) -> Option<String> {
    let t = ctype(dtype);
    let bits = 8 * dtype.size_bytes();
    let f = match op {
        BinaryOp::FloorDiv => "ts_ifloordiv",
        BinaryOp::Remainder => "ts_iremainder",
        BinaryOp::Fmod => "ts_ifmod",
        BinaryOp::BitAnd => return Some(format!("(({t})({a} & {b}))")),
        BinaryOp::BitOr => return Some(format!("(({t})({a} | {b}))")),
        BinaryOp::BitXor => return Some(format!("(({t})({a} ^ {b}))")),
        BinaryOp::Shl => return Some(format!("(({t})ts_ishl((ts_i64){a}, (ts_i64){b}, {bits}))")),
        BinaryOp::Shr => return Some(format!("(({t})ts_ishr((ts_i64){a}, (ts_i64){b}, {bits}))")),
        _ => return None,
    };
    Some(format!("(({t}){f}((ts_i64){a}, (ts_i64){b}))"))
}

/// NumPy's NaN-propagating `maximum` (`greater`) or `minimum`: `a` when `a` is NaN or
/// `a >= b` (`a <= b`), else `b` (`cpu::elementwise::nan_max` / `nan_min`).
pub(crate) fn nan_extreme(a: &str, b: &str, dtype: DType, max: bool) -> String {
    let cmp = if max { ">=" } else { "<=" };
    if dtype.is_float() {
        format!("(({a} != {a} || {a} {cmp} {b}) ? {a} : {b})")
    } else {
        format!("({a} {cmp} {b} ? {a} : {b})")
    }
}

/// `op(a, b)` for operands of `dtype`; `out` is the instruction's dtype. Errors are the
/// CPU evaluator's for the same operands.
pub(crate) fn binary(
    op: BinaryOp,
    a: &str,
    b: &str,
    dtype: DType,
    out: DType,
) -> Result<String, KernelError> {
    if op.is_comparison() {
        if out != DType::Bool {
            return Err(KernelError::BadInput(format!("{} returns bool", op.name())));
        }
        let c = match op {
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            _ => ">=",
        };
        return Ok(format!("({a} {c} {b})"));
    }
    if out != dtype {
        return Err(KernelError::BadInput(format!(
            "{} got operands of {dtype} and {dtype} for a {out} result",
            op.name()
        )));
    }
    if dtype.is_int() {
        if let Some(e) = int_op(op, a, b, dtype) {
            return Ok(e);
        }
    }
    let t = ctype(dtype);
    Ok(match (op, dtype) {
        (BinaryOp::Add, DType::F32 | DType::F64) => format!("ts_add({a}, {b})"),
        (BinaryOp::Sub, DType::F32 | DType::F64) => format!("ts_sub({a}, {b})"),
        (BinaryOp::Mul, DType::F32 | DType::F64) => format!("ts_mul({a}, {b})"),
        (BinaryOp::Div, DType::F32 | DType::F64) => format!("ts_div({a}, {b})"),
        (BinaryOp::Pow, DType::F64) => format!("pow({a}, {b})"),
        (BinaryOp::Pow, DType::F32) => format!("powf({a}, {b})"),
        (BinaryOp::Add, DType::U8 | DType::I32 | DType::I64) => format!("ts_wadd({a}, {b})"),
        (BinaryOp::Sub, DType::U8 | DType::I32 | DType::I64) => format!("ts_wsub({a}, {b})"),
        (BinaryOp::Mul, DType::U8 | DType::I32 | DType::I64) => format!("ts_wmul({a}, {b})"),
        (BinaryOp::Pow, DType::U8 | DType::I32 | DType::I64) => {
            format!("(({t})ts_ipow((ts_i64){a}, (ts_i64){b}, faults))")
        }
        (BinaryOp::Maximum | BinaryOp::Minimum, d) if d != DType::Bool => {
            nan_extreme(a, b, d, op == BinaryOp::Maximum)
        }
        (BinaryOp::FloorDiv, DType::F32 | DType::F64) => format!("ts_divmod({a}, {b}).q"),
        (BinaryOp::Remainder, DType::F32 | DType::F64) => format!("ts_divmod({a}, {b}).m"),
        (BinaryOp::Fmod, DType::F32 | DType::F64) => format!("ts_fmod({a}, {b})"),
        (BinaryOp::Arctan2, DType::F64) => format!("atan2({a}, {b})"),
        (BinaryOp::Arctan2, DType::F32) => format!("atan2f({a}, {b})"),
        (BinaryOp::Hypot, DType::F64) => format!("hypot({a}, {b})"),
        (BinaryOp::Hypot, DType::F32) => format!("hypotf({a}, {b})"),
        (BinaryOp::Copysign, DType::F64) => format!("copysign({a}, {b})"),
        (BinaryOp::Copysign, DType::F32) => format!("copysignf({a}, {b})"),
        (BinaryOp::Nextafter, DType::F64) => format!("nextafter({a}, {b})"),
        (BinaryOp::Nextafter, DType::F32) => format!("nextafterf({a}, {b})"),
        (BinaryOp::And | BinaryOp::Minimum | BinaryOp::BitAnd, DType::Bool) => {
            format!("({a} && {b})")
        }
        (BinaryOp::Or | BinaryOp::Maximum | BinaryOp::BitOr, DType::Bool) => {
            format!("({a} || {b})")
        }
        (BinaryOp::BitXor, DType::Bool) => format!("({a} != {b})"),
        _ => return Err(unsupported(op.name(), dtype)),
    })
}

/// One reduction of a run inside the expression (`InstrKind::ReduceTrailing`): the
/// accumulator's initial value and its update with element `v` (`t` is the position in
/// the run). Mirrors `cpu::elementwise::reduce_runs`.
pub(crate) struct RunFold {
    /// Initial accumulator value.
    pub init: String,
    /// New accumulator value from `acc`, `v` and `t`.
    pub step: String,
}

/// The fold of `op` over values of `from` into an accumulator of `out`.
pub(crate) fn run_fold(
    op: ReduceOp,
    from: DType,
    out: DType,
    acc: &str,
    v: &str,
    t: &str,
) -> Result<RunFold, KernelError> {
    let fold = |init: &str, step: String| RunFold {
        init: init.to_string(),
        step,
    };
    let nz = nonzero(v, from);
    Ok(match (op, out) {
        (ReduceOp::All, DType::Bool) => fold("true", format!("({acc} && {nz})")),
        (ReduceOp::Any, DType::Bool) => fold("false", format!("({acc} || {nz})")),
        (ReduceOp::CountNonzero, DType::I64) => {
            fold("0LL", format!("({acc} + ({nz} ? 1LL : 0LL))"))
        }
        (ReduceOp::Min | ReduceOp::Max, o) if o == from => {
            let pick = nan_extreme(acc, v, from, op == ReduceOp::Max);
            fold(
                &scalar_lit(Scalar::I64(0).cast(from)),
                format!("({t} == 0 ? {v} : {pick})"),
            )
        }
        (ReduceOp::Sum, DType::I64) if !from.is_float() => {
            fold("0LL", format!("ts_wadd({acc}, (ts_i64){v})"))
        }
        (ReduceOp::Prod, DType::I64) if !from.is_float() => {
            fold("1LL", format!("ts_wmul({acc}, (ts_i64){v})"))
        }
        (ReduceOp::Sum, DType::F64) => fold("0.0", format!("ts_add({acc}, {})", to_f64(v, from))),
        (ReduceOp::Prod, DType::F64) => fold("1.0", format!("ts_mul({acc}, {})", to_f64(v, from))),
        (ReduceOp::Sum, DType::F32) => fold(
            "0.0f",
            format!("ts_add({acc}, ts_f64_to_f32({}))", to_f64(v, from)),
        ),
        (ReduceOp::Prod, DType::F32) => fold(
            "1.0f",
            format!("ts_mul({acc}, ts_f64_to_f32({}))", to_f64(v, from)),
        ),
        (op, o) => {
            return Err(KernelError::BadInput(format!(
                "{} of {from} into {o} inside a fused kernel",
                op.name()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses the literals `f64_lit` writes for finite values.
    fn parse_hex(s: &str) -> f64 {
        let s = s.trim_start_matches('(').trim_end_matches(')');
        let s = s.trim_end_matches('f');
        let (neg, s) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let s = s.strip_prefix("0x").unwrap();
        let (mant, exp) = s.split_once('p').unwrap();
        let (int, frac) = mant.split_once('.').unwrap();
        let frac = u64::from_str_radix(frac, 16).unwrap();
        let m = (u64::from_str_radix(int, 16).unwrap() as f64) + frac as f64 * 2f64.powi(-52);
        let v = m * 2f64.powi(exp.parse::<i32>().unwrap());
        if neg {
            -v
        } else {
            v
        }
    }

    #[test]
    fn float_literals_are_exact() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::from_bits(0x000F_FFFF_FFFF_FFFF),
            std::f64::consts::PI,
            -1e-300,
        ] {
            let got = parse_hex(&f64_lit(v));
            assert_eq!(got.to_bits(), v.to_bits(), "{v:e}: {}", f64_lit(v));
        }
        assert_eq!(parse_hex(&f32_lit(0.1f32)), f64::from(0.1f32));
        assert!(f32_lit(1.5).ends_with("f)"), "{}", f32_lit(1.5));
        assert!(f64_lit(f64::NAN).contains("7FF8"));
        assert_eq!(
            f64_lit(f64::NEG_INFINITY),
            "ts_bits_f64(0xFFF0000000000000ULL)"
        );
        assert_eq!(i64_lit(i64::MIN), "(-9223372036854775807LL - 1)");
        assert_eq!(i64_lit(-3), "(-3LL)");
    }

    #[test]
    fn conversions_follow_astype_paths() {
        assert_eq!(convert("x", DType::F64, DType::F64), "x");
        assert_eq!(convert("x", DType::F64, DType::Bool), "(x != 0.0)");
        assert_eq!(
            convert("x", DType::I64, DType::F32),
            "ts_f64_to_f32(ts_i64_to_f64(x))"
        );
        assert_eq!(
            convert("x", DType::F32, DType::U8),
            "((ts_u8)ts_f64_to_i64(((double)x)))"
        );
        assert_eq!(convert("x", DType::I64, DType::U8), "((ts_u8)((ts_i64)x))");
        assert_eq!(convert("x", DType::Bool, DType::F64), "(x ? 1.0 : 0.0)");
    }
}
