//! The accumulator of a kernel's trailing reduction ([`tessera_kernels::expr::ChunkReduce`]): a C
//! struct with init / fold / merge / shuffle / store functions whose stored parts are the
//! CPU's [`tessera_kernels::Partial`] parts for the same op (see `cpu::reduce::Accumulator`).

use super::cexpr::{ctype, nonzero, to_f64};
use tessera_kernels::dtype::DType;
use tessera_kernels::expr::ReduceOp;

/// The dtypes of a partial's parts, in order (as `cpu::reduce::Accumulator::new` makes
/// them): Sum/Prod `[f64]` for float input else `[i64]`; Min/Max `[input]`; Mean
/// `[f64 sum, i64 count]`; Var/Std `[i64 count, f64 mean, f64 m2]`; All/Any `[bool]`;
/// CountNonzero `[i64]`; ArgMin/ArgMax `[input value, i64 index]`.
pub(crate) fn part_dtypes(op: ReduceOp, input: DType) -> Vec<DType> {
    let float = input.is_float();
    match op {
        ReduceOp::Sum | ReduceOp::Prod if float => vec![DType::F64],
        ReduceOp::Sum | ReduceOp::Prod => vec![DType::I64],
        ReduceOp::Min | ReduceOp::Max => vec![input],
        ReduceOp::Mean => vec![DType::F64, DType::I64],
        ReduceOp::Var { .. } | ReduceOp::Std { .. } => vec![DType::I64, DType::F64, DType::F64],
        ReduceOp::All | ReduceOp::Any => vec![DType::Bool],
        ReduceOp::CountNonzero => vec![DType::I64],
        ReduceOp::ArgMin | ReduceOp::ArgMax => vec![input, DType::I64],
    }
}

/// C source of `struct ts_acc` and its functions for `op` over values of `t`.
///
/// * `ts_acc_init(a)`: the empty state.
/// * `ts_acc_fold(a, v, idx)`: adds value `v`, whose reduction index is `idx` (used by
///   the arg-reductions only).
/// * `ts_acc_merge(a, b)`: `a` becomes the state of both (associative and commutative up
///   to floating-point rounding; an empty `b` leaves `a` unchanged).
/// * `ts_acc_shfl(a, o)`: the state of the lane `o` above (warp shuffle).
/// * `ts_acc_store(a, part0, ..., at)`: writes element `at` of every part.
pub(crate) fn accumulator(op: ReduceOp, t: DType) -> String {
    let vt = ctype(t);
    let parts = part_dtypes(op, t);
    let float = t.is_float();
    let x = to_f64("v", t);
    let nz = nonzero("v", t);
    // (fields, init, fold body, merge body); fields are f0.. in part order, then `seen`.
    let (init, fold, merge): (&str, String, String) = match op {
        ReduceOp::Sum | ReduceOp::Prod if float => {
            let f = if op == ReduceOp::Sum { "ts_add" } else { "ts_mul" };
            let id = if op == ReduceOp::Sum { "0.0" } else { "1.0" };
            (
                id,
                format!("a.f0 = {f}(a.f0, {x});"),
                format!("a.f0 = {f}(a.f0, b.f0);"),
            )
        }
        ReduceOp::Sum | ReduceOp::Prod => {
            let f = if op == ReduceOp::Sum { "ts_wadd" } else { "ts_wmul" };
            let id = if op == ReduceOp::Sum { "0LL" } else { "1LL" };
            (
                id,
                format!("a.f0 = {f}(a.f0, (ts_i64)v);"),
                format!("a.f0 = {f}(a.f0, b.f0);"),
            )
        }
        ReduceOp::Min | ReduceOp::Max => {
            let better = better_value("x", "best", t, op == ReduceOp::Max);
            (
                "0",
                format!(
                    "if (!a.seen) {{ a.f0 = v; a.seen = true; }} else {{ {vt} x = v, best = a.f0; \
                     if (best == best && ({better})) a.f0 = x; }}"
                ),
                format!(
                    "if (!b.seen) return; if (!a.seen) {{ a = b; return; }} \
                     {vt} x = b.f0, best = a.f0; if (best == best && ({better})) a.f0 = x;"
                ),
            )
        }
        ReduceOp::Mean => (
            "0",
            format!("a.f0 = ts_add(a.f0, {x}); a.f1 += 1;"),
            "a.f0 = ts_add(a.f0, b.f0); a.f1 += b.f1;".to_string(),
        ),
        ReduceOp::Var { .. } | ReduceOp::Std { .. } => (
            "0",
            // Welford's update: one element merged into (count, mean, m2).
            format!(
                "double x = {x}; a.f0 += 1; double d = ts_sub(x, a.f1); \
                 a.f1 = ts_add(a.f1, ts_div(d, ts_i64_to_f64(a.f0))); \
                 a.f2 = ts_add(a.f2, ts_mul(d, ts_sub(x, a.f1)));"
            ),
            // Chan et al.'s merge, operation for operation as `cpu::reduce::merge_moments`.
            "if (b.f0 == 0) return; if (a.f0 == 0) { a = b; return; } \
             ts_i64 n = a.f0 + b.f0; double nf = ts_i64_to_f64(n); double delta = ts_sub(b.f1, a.f1); \
             a.f1 = ts_add(a.f1, ts_div(ts_mul(delta, ts_i64_to_f64(b.f0)), nf)); \
             a.f2 = ts_add(a.f2, ts_add(b.f2, ts_div(ts_mul(ts_mul(ts_mul(delta, delta), \
             ts_i64_to_f64(a.f0)), ts_i64_to_f64(b.f0)), nf))); a.f0 = n;"
                .to_string(),
        ),
        ReduceOp::All => (
            "true",
            format!("a.f0 = a.f0 && {nz};"),
            "a.f0 = a.f0 && b.f0;".to_string(),
        ),
        ReduceOp::Any => (
            "false",
            format!("a.f0 = a.f0 || {nz};"),
            "a.f0 = a.f0 || b.f0;".to_string(),
        ),
        ReduceOp::CountNonzero => (
            "0",
            format!("a.f0 += {nz} ? 1 : 0;"),
            "a.f0 += b.f0;".to_string(),
        ),
        ReduceOp::ArgMin | ReduceOp::ArgMax => (
            "0",
            "if (!a.seen || ts_arg_better(v, idx, a.f0, a.f1)) { a.f0 = v; a.f1 = idx; a.seen = true; }"
                .to_string(),
            "if (b.seen && (!a.seen || ts_arg_better(b.f0, b.f1, a.f0, a.f1))) a = b;".to_string(),
        ),
    };
    let seen = matches!(
        op,
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax
    );
    let mut s = String::new();
    if matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
        s.push_str(&arg_better(t, op == ReduceOp::ArgMax));
    }
    s.push_str("struct ts_acc {\n");
    for (k, d) in parts.iter().enumerate() {
        s.push_str(&format!("    {} f{k};\n", ctype(*d)));
    }
    if seen {
        s.push_str("    bool seen;\n");
    }
    s.push_str("};\n");
    let inits: Vec<String> = (0..parts.len())
        .map(|k| {
            let v = if k == 0 { init } else { "0" };
            format!("a.f{k} = ({}){v};", ctype(parts[k]))
        })
        .collect();
    let seen_init = if seen { " a.seen = false;" } else { "" };
    s.push_str(&format!(
        "static __device__ __forceinline__ void ts_acc_init(ts_acc& a) {{ {}{seen_init} }}\n",
        inits.join(" ")
    ));
    s.push_str(&format!(
        "static __device__ __forceinline__ void ts_acc_fold(ts_acc& a, {vt} v, ts_i64 idx) {{ \
         (void)idx; {fold} }}\n"
    ));
    s.push_str(&format!(
        "static __device__ __forceinline__ void ts_acc_merge(ts_acc& a, const ts_acc& b) {{ {merge} }}\n"
    ));
    let mut shfl: Vec<String> = (0..parts.len())
        .map(|k| format!("r.f{k} = ts_shfl(a.f{k}, o);"))
        .collect();
    if seen {
        shfl.push("r.seen = ts_shfl(a.seen, o);".into());
    }
    s.push_str(&format!(
        "static __device__ __forceinline__ ts_acc ts_acc_shfl(const ts_acc& a, int o) {{ ts_acc r; {} return r; }}\n",
        shfl.join(" ")
    ));
    let args: Vec<String> = parts
        .iter()
        .enumerate()
        .map(|(k, d)| format!("{}* __restrict__ part{k}", ctype(*d)))
        .collect();
    let stores: Vec<String> = (0..parts.len())
        .map(|k| format!("part{k}[at] = a.f{k};"))
        .collect();
    s.push_str(&format!(
        "static __device__ __forceinline__ void ts_acc_store(const ts_acc& a, {}, ts_i64 at) {{ {} }}\n",
        args.join(", "),
        stores.join(" ")
    ));
    s
}

/// True when `x` replaces a non-NaN `best` for min (`max`: `x > best`), NaN-propagating:
/// the CPU's `extreme` keeps the first NaN and otherwise the strictly better value.
fn better_value(x: &str, best: &str, t: DType, max: bool) -> String {
    let cmp = if max { ">" } else { "<" };
    if t.is_float() {
        format!("{x} != {x} || {x} {cmp} {best}")
    } else {
        format!("{x} {cmp} {best}")
    }
}

/// `ts_arg_better(x, i, best, bi)`: `cpu::reduce::arg_better` (NaN wins, the first one;
/// then the strictly better value; then the lower index).
fn arg_better(t: DType, max: bool) -> String {
    let vt = ctype(t);
    let cmp = if max { ">" } else { "<" };
    let nan = if t.is_float() {
        "if (best != best) return x != x && i < bi; if (x != x) return true; "
    } else {
        ""
    };
    format!(
        "static __device__ __forceinline__ bool ts_arg_better({vt} x, ts_i64 i, {vt} best, ts_i64 bi) {{ \
         {nan}return x {cmp} best || (x == best && i < bi); }}\n"
    )
}
