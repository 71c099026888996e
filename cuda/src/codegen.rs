//! CUDA C for fused chunk tasks: one `extern "C" __global__` kernel per [`FusedKernel`],
//! generated from the same IR the CPU evaluator (`cpu::fused`) runs.
//!
//! # The kernel
//!
//! Without a reduction, a grid-stride loop over the root's elements evaluates the
//! instruction list in registers (no intermediate reaches memory) and stores each root
//! value. An `InstrKind::ReduceTrailing` becomes a loop over its run, evaluating its
//! operand's instructions per element. With a reduction (`FusedKernel::reduce`), the
//! root's elements are grouped by output slot (the kept axes) and each slot's elements
//! are cut into `splits` contiguous ranges of its reduction index; one block reduces
//! one `(slot, range)` pair at a time (per-thread fold, warp shuffles, shared memory) and
//! writes one *partial record* in the layout of [`tessera_kernels::Partial`]. Each record is a valid
//! partial of its own (parts shaped like [`ReduceLayout::out_shape`]), so the existing CPU
//! `ChunkOp::Combine` merges GPU partials with CPU ones.
//!
//! Shapes, strides, dtypes, constants and the chunk layout relative to where a leaf reads
//! are baked into the source; the values that move from chunk to chunk of one expression
//! (random seeds and streams, distribution parameters, a leaf's flat base, ramp starts,
//! an arg-reduction's global offset) and the element counts (`n`, or `S` slots of `R`)
//! are kernel parameters ([`ParamKind`]). Equal sources have equal names, so a module
//! cache keyed on [`CudaKernel::name`] compiles the kernel of one chunk shape once and
//! reuses it for every chunk of that shape, and for every length of a chunk whose axes
//! merge into one contiguous run (a 1-D chunk, rows of full width, a whole reduction):
//! an array's last, shorter chunk needs no kernel of its own.
//!
//! # Supported
//!
//! Every IR the CPU evaluator accepts, with the same errors for the IR it rejects
//! (`KernelError::BadInput`, `UnsupportedDType`, `InvalidValue`, `SizeOverflow`, raised
//! at generation time): all six dtypes; every [`tessera_kernels::UnaryOp`] and [`tessera_kernels::BinaryOp`]
//! on the dtypes the CPU supports (integer arithmetic wraps; integer `pow` faults on a
//! negative exponent; NaN-propagating `maximum` / `minimum`; NumPy's integer
//! `floor_divide` / `remainder` / `fmod` with 0 by zero and `MIN // -1` wrapping, its
//! shifts with 0 (or -1 for `>>` of a negative) past the width or for negative counts,
//! bitwise ops on bool as logical ones, roundings that keep integers, float `divmod` as
//! `npy_divmod`); `Where`; every `Cast`
//! (Rust `as` semantics: truncating, saturating, NaN to 0); `ReduceTrailing` with the
//! CPU's op / dtype pairs; leaves `Const`, `Random` (Uniform, Normal, RandInt), `Ramp`
//! (integer and float, with a pin) and `Chunks` (one chunk through a flat map, several
//! through a search in the CPU's order; any steps, reversed, broadcast or transposed
//! axes); and every [`ReduceOp`] as the trailing reduction, over any set of axes.
//!
//! The generator takes the CPU evaluator's shortcuts (`cpu::shortcuts`), which give the
//! same values bit for bit: an `f64` `sin` and `cos` of one operand share one argument
//! reduction (`ts_sincos64`), and `sqrt(x) < c` (or `<= c`) for a constant `c > 0` is
//! `0 <= x && x < t` with no square root.
//!
//! Errors the CPU finds only while running (a negative integer power, a source index no
//! input chunk holds) are reported through the `faults` word: see [`fault_error`].
//! Instructions the root does not use are checked but not evaluated.
//!
//! # Values
//!
//! * Bit-identical to the CPU: integer and bool results; casts; `+ - * /`, `sqrt`, `abs`,
//!   `maximum` / `minimum`, comparisons (`__d*_rn` / `__f*_rn` intrinsics, never
//!   contracted into FMA); `f64` `exp`, `log`, `sin`, `cos` (ports of `cpu::vmath`, for
//!   `|x| < 2^17` in the case of `sin` / `cos`); every random value (Philox4x32-10 with
//!   `cpu::philox`'s counter layout and value maps, Box–Muller through the same `vmath`
//!   polynomials); ramps; `ReduceTrailing` runs (same order).
//! * May differ in the last ulps: `f32` `exp` / `log` / `sin` / `cos` and `pow` of both
//!   float types (CUDA's libdevice against Rust's libm), `f64` `sin` / `cos` beyond
//!   `2^17` and of non-finite values; the libdevice functions standing for the CPU's
//!   libm calls, within CUDA's documented maximum ulp errors (CUDA Programming Guide,
//!   "Mathematical Functions"; the CPU's glibc adds its own, at most a few ulps) — `f64`:
//!   `asinh acosh` 3, `tan asin acos atan sinh atanh atan2 hypot` 2, `cosh tanh log2
//!   log10 log1p expm1 exp2` 1; `f32`: `tanf acoshf` 4, `sinhf asinhf atanhf atan2f
//!   hypotf` 3, `asinf acosf atanf coshf tanhf log10f exp2f` 2, `log2f log1pf expm1f` 1;
//!   `copysign` is exact. `floor ceil trunc rint fmod` and the float
//!   `floor_divide` / `remainder` are exact (0 ulp), so bit-identical;
//!   float sums, products, means and variances of the
//!   trailing reduction (a tree instead of the CPU's order; Welford per thread, Chan's
//!   merge across threads); which NaN (payload) and which zero (sign) min / max return.

pub(crate) mod cexpr;
mod index;
mod leaves;
pub(super) mod reduce;

use super::launch::i64_of;
use index::{c_strides_i64, Affine};
use std::collections::{BTreeMap, BTreeSet};
use tessera_kernels::cpu::shortcuts::{self, Shortcut};
use tessera_kernels::dtype::DType;
use tessera_kernels::expr::{FusedKernel, Instr, InstrKind, ReduceOp, UnaryOp};
use tessera_kernels::tensor::checked_numel;
use tessera_kernels::KernelError;
use twox_hash::XxHash3_64;

/// Threads per block every generated kernel is written for (`__launch_bounds__`).
pub const BLOCK_DIM: u32 = 256;

/// Fault bit: an integer was raised to a negative power (the CPU's `InvalidValue`).
pub const FAULT_NEGATIVE_POWER: i32 = 1;
/// Fault bit: no input chunk holds an index a leaf reads (the CPU's `BadInput`).
pub const FAULT_NO_CHUNK: i32 = 2;
/// Fault bit: the launch broke the kernel's contract (`splits` outside `1..=per_slot`).
pub const FAULT_BAD_LAUNCH: i32 = 4;

/// The error a kernel's `faults` word stands for (`None` for 0): the error the CPU
/// evaluator returns for the same inputs.
pub fn fault_error(bits: i32) -> Option<KernelError> {
    if bits == 0 {
        None
    } else if bits & FAULT_NEGATIVE_POWER != 0 {
        Some(KernelError::InvalidValue(
            "integers to negative integer powers are not allowed".into(),
        ))
    } else if bits & FAULT_NO_CHUNK != 0 {
        Some(KernelError::BadInput(
            "no input chunk holds a source index the kernel reads".into(),
        ))
    } else {
        Some(KernelError::BadInput(format!(
            "the kernel was launched against its contract (faults {bits:#x})"
        )))
    }
}

/// What the launcher passes for one kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// `const T*`: the data of the task's input `slot`, a C-order chunk of `dtype` and
    /// `shape` (the launcher checks the chunk it has against both).
    Input {
        /// Index into the task's inputs.
        slot: usize,
        /// Element type.
        dtype: DType,
        /// Chunk shape.
        shape: Vec<usize>,
    },
    /// `T*`: the root's values, `len` elements in C order (kernels without a reduction).
    Values {
        /// Element type.
        dtype: DType,
        /// Element count.
        len: usize,
    },
    /// `T*`: part `part` of the partial records, `splits * slots` elements; slot `s` of
    /// record `p` is element `p * slots + s` (see [`ReduceLayout`]).
    Part {
        /// Which part of the partial (see [`tessera_kernels::Partial`]).
        part: usize,
        /// Element type.
        dtype: DType,
    },
    /// `long long`: the number of partial records, chosen by the launcher in
    /// `1..=per_slot` (more records give more blocks work).
    Splits,
    /// `long long` with this value.
    I64(i64),
    /// `unsigned long long` with this value.
    U64(u64),
    /// `double` with this value.
    F64(f64),
    /// `int*`: one int, zero before the launch, that the kernel ORs fault bits into
    /// (see [`fault_error`]).
    Faults,
}

/// Where a reducing kernel's partial records go.
#[derive(Clone, Debug, PartialEq)]
pub struct ReduceLayout {
    /// The reduction.
    pub op: ReduceOp,
    /// The dtype of the reduced values (the root's).
    pub input_dtype: DType,
    /// Shape of each record's parts: the root's shape without the reduced axes.
    pub out_shape: Vec<usize>,
    /// Elements of `out_shape`.
    pub slots: usize,
    /// Elements reduced into each slot.
    pub per_slot: usize,
    /// The parts' dtypes, in [`tessera_kernels::Partial`] order.
    pub parts: Vec<DType>,
}

/// One generated kernel and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaKernel {
    /// The `extern "C"` symbol: `tessera_fused_` and the XXH3-64 of the source (hex).
    pub name: String,
    /// CUDA C++17 source for NVRTC (`-default-device`).
    pub source: String,
    /// The kernel's parameters in order: inputs (by slot), outputs, `splits`, the counts
    /// (`n` elements, or `S` slots of `R` elements each), the leaves' scalars (in
    /// instruction order), the arg-reduction offset, `faults`.
    pub params: Vec<ParamKind>,
    /// Threads per block to launch with (any grid size works: the loops are
    /// grid-stride).
    pub block_dim: u32,
    /// Elements of the root.
    pub elements: usize,
    /// The partial layout, for kernels with a trailing reduction.
    pub reduce: Option<ReduceLayout>,
}

/// Stands for the kernel's name until the source is hashed.
const NAME_TOKEN: &str = "TS_KERNEL_NAME";

/// The kernel-independent part of every source (its first bytes).
pub(crate) const PRELUDE: &str = include_str!("prelude.cuh");

fn bad(msg: String) -> KernelError {
    KernelError::BadInput(msg)
}

/// Generates the CUDA kernel of `kernel` (see the module docs for what is supported).
pub fn fused_source(kernel: &FusedKernel) -> Result<CudaKernel, KernelError> {
    Gen::new(kernel)?.finish()
}

/// True for the six dtypes the generator writes kernels for (bool, uint8, int32, int64,
/// float32, float64); kernels with any other dtype run on the CPU ([`crate::Gpu::runs`]).
pub fn generated(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::Bool | DType::U8 | DType::I32 | DType::I64 | DType::F32 | DType::F64
    )
}

/// The operands of an instruction (a `ReduceTrailing`'s operand included).
fn operands(kind: &InstrKind) -> Vec<usize> {
    match kind {
        InstrKind::Leaf(_) => vec![],
        InstrKind::Unary { x, .. } | InstrKind::Cast { x } => vec![*x],
        InstrKind::Binary { a, b, .. } => vec![*a, *b],
        InstrKind::Where { cond, a, b } => vec![*cond, *a, *b],
        InstrKind::ReduceTrailing { x, .. } => vec![*x],
    }
}

/// A kernel being generated: validated instructions and their C.
struct Gen<'a> {
    kernel: &'a FusedKernel,
    root_len: usize,
    /// Per instruction: its leaf plan, if a leaf.
    leaves: Vec<Option<leaves::Leaf>>,
    /// Per instruction: the value expression (elementwise instructions).
    exprs: Vec<Option<String>>,
    /// Per instruction: the run fold (`ReduceTrailing`).
    folds: Vec<Option<cexpr::RunFold>>,
    /// Per instruction: the CPU evaluator's shortcut (`cpu::shortcuts`), taken here too.
    how: Vec<Shortcut>,
    /// Instructions the root depends on.
    live: BTreeSet<usize>,
    /// The partial layout, for kernels with a trailing reduction.
    layout: Option<ReduceLayout>,
}

impl<'a> Gen<'a> {
    /// Checks `kernel` as `cpu::fused::Plan::new` and the evaluator do, and prepares
    /// every instruction's C.
    fn new(kernel: &'a FusedKernel) -> Result<Gen<'a>, KernelError> {
        let instrs = &kernel.instrs;
        if let Some(ins) = instrs.iter().find(|i| !generated(i.dtype)) {
            return Err(KernelError::UnsupportedDType {
                op: "a GPU kernel".into(),
                dtype: ins.dtype,
            });
        }
        let (_, root_len) = kernel.root_instr()?;
        let mut g = Gen {
            kernel,
            root_len,
            leaves: Vec::with_capacity(instrs.len()),
            exprs: Vec::with_capacity(instrs.len()),
            folds: Vec::with_capacity(instrs.len()),
            how: shortcuts::plan(instrs, kernel.root),
            live: BTreeSet::new(),
            layout: None,
        };
        // The CPU's order: shapes and leaves per instruction, the reduction, then operands.
        for (i, ins) in instrs.iter().enumerate() {
            g.check_shapes(i, ins)?;
            g.leaves.push(match &ins.kind {
                InstrKind::Leaf(src) => Some(leaves::plan(i, src, &ins.shape, ins.dtype)?),
                _ => None,
            });
        }
        if let Some(r) = &kernel.reduce {
            g.layout = Some(g.reduce_layout(r)?);
        }
        for (i, ins) in instrs.iter().enumerate() {
            g.prepare(i, ins)?;
            if let Shortcut::SqrtBelow { x, limit } = g.how[i] {
                let limit = cexpr::f64_lit(limit);
                g.exprs[i] = Some(format!("(0.0 <= v{x} && v{x} < {limit})"));
            }
        }
        let mut stack = vec![kernel.root];
        while let Some(i) = stack.pop() {
            if g.live.insert(i) {
                stack.extend(operands(&instrs[i].kind));
            }
        }
        Ok(g)
    }

    fn check_shapes(&self, i: usize, ins: &Instr) -> Result<(), KernelError> {
        let instrs = &self.kernel.instrs;
        let root = &instrs[self.kernel.root];
        let n = checked_numel(&ins.shape)?;
        if n % self.root_len != 0 {
            return Err(bad(format!(
                "instruction {i} has shape {:?}, not a multiple of the root's {:?}",
                ins.shape, root.shape
            )));
        }
        if let InstrKind::ReduceTrailing { x, k, .. } = &ins.kind {
            let want = n.checked_mul(*k);
            if *k == 0 || instrs.get(*x).map(|o| checked_numel(&o.shape).ok()) != Some(want) {
                return Err(bad(format!(
                    "instruction {i} reduces runs of {k} of a mismatched operand"
                )));
            }
        }
        let ops = operands(&ins.kind);
        if let Some(&o) = ops.iter().find(|&&o| o >= i) {
            return Err(bad(format!("instruction {i} uses later instruction {o}")));
        }
        for &o in &ops {
            if instrs[o].shape != ins.shape && !matches!(ins.kind, InstrKind::ReduceTrailing { .. })
            {
                return Err(bad(format!(
                    "instruction {i} mixes shapes {:?} and {:?}",
                    ins.shape, instrs[o].shape
                )));
            }
        }
        Ok(())
    }

    /// Writes instruction `i`'s expression or run fold, with the CPU's errors for bad
    /// operands.
    fn prepare(&mut self, i: usize, ins: &Instr) -> Result<(), KernelError> {
        let instrs = &self.kernel.instrs;
        let dt = |o: usize| instrs[o].dtype;
        let v = |o: usize| format!("v{o}");
        let (mut expr, mut fold) = (None, None);
        match &ins.kind {
            InstrKind::Leaf(_) => {}
            InstrKind::Unary { op, x } => {
                if dt(*x) != ins.dtype {
                    return Err(KernelError::UnsupportedDType {
                        op: op.name().to_string(),
                        dtype: dt(*x),
                    });
                }
                expr = Some(cexpr::unary(*op, &v(*x), ins.dtype)?);
            }
            InstrKind::Binary { op, a, b } => {
                if dt(*a) != dt(*b) {
                    return Err(bad(format!(
                        "{} got operands of {} and {}",
                        op.name(),
                        dt(*a),
                        dt(*b)
                    )));
                }
                expr = Some(cexpr::binary(*op, &v(*a), &v(*b), dt(*a), ins.dtype)?);
            }
            InstrKind::Where { cond, a, b } => {
                if dt(*cond) != DType::Bool {
                    return Err(KernelError::UnsupportedDType {
                        op: "where (condition)".into(),
                        dtype: dt(*cond),
                    });
                }
                if dt(*a) != ins.dtype || dt(*b) != ins.dtype {
                    return Err(KernelError::UnsupportedDType {
                        op: "where (mixed operands)".into(),
                        dtype: dt(*a),
                    });
                }
                expr = Some(format!("({} ? {} : {})", v(*cond), v(*a), v(*b)));
            }
            InstrKind::Cast { x } => expr = Some(cexpr::convert(&v(*x), dt(*x), ins.dtype)),
            InstrKind::ReduceTrailing { op, x, .. } => {
                let (acc, t) = (v(i), format!("t{i}"));
                fold = Some(cexpr::run_fold(*op, dt(*x), ins.dtype, &acc, &v(*x), &t)?);
            }
        }
        self.exprs.push(expr);
        self.folds.push(fold);
        Ok(())
    }

    /// The operands instruction `i` reads as emitted: a rewritten `sqrt(x) < c` reads `x`.
    fn reads(&self, i: usize) -> Vec<usize> {
        match self.how[i] {
            Shortcut::SqrtBelow { x, .. } => vec![x],
            _ => operands(&self.kernel.instrs[i].kind),
        }
    }

    /// The instructions `v{target}` is computed from in its scope (a `ReduceTrailing` is
    /// in its reader's scope, its operands in its own).
    fn cone(&self, target: usize) -> BTreeSet<usize> {
        let instrs = &self.kernel.instrs;
        let mut cone = BTreeSet::new();
        let mut stack = vec![target];
        while let Some(i) = stack.pop() {
            if cone.insert(i) && !matches!(instrs[i].kind, InstrKind::ReduceTrailing { .. }) {
                stack.extend(self.reads(i));
            }
        }
        cone
    }

    /// Lines computing a value at local flat index `ix` from its `cone` ([`Self::cone`]):
    /// the instructions of the same shape in order, each `ReduceTrailing` as a loop over its run; an `f64`
    /// `sin` and `cos` of one operand in the same scope as one `ts_sincos64` call. With
    /// `lane`, the random leaves in its set read their primed block's lane (see
    /// [`Self::trailing`]).
    fn scope(
        &self,
        cone: &BTreeSet<usize>,
        ix: &str,
        indent: usize,
        lane: Option<(&BTreeSet<usize>, usize)>,
        out: &mut Vec<String>,
    ) {
        let instrs = &self.kernel.instrs;
        let pad = "    ".repeat(indent);
        let mut paired = BTreeSet::new();
        for &i in cone {
            let ins = &instrs[i];
            let t = cexpr::ctype(ins.dtype);
            if paired.contains(&i) {
                continue;
            }
            if let (Shortcut::SinCos { gap }, InstrKind::Unary { op, x }) = (self.how[i], &ins.kind)
            {
                let j = i + gap;
                if cone.contains(&j) {
                    let (s, c) = if *op == UnaryOp::Sin { (i, j) } else { (j, i) };
                    out.push(format!("{pad}double v{i}, v{j};"));
                    out.push(format!("{pad}ts_sincos64(v{x}, &v{s}, &v{c});"));
                    paired.insert(j);
                    continue;
                }
            }
            if let Some(leaf) = &self.leaves[i] {
                let lane = lane.and_then(|(primed, t)| primed.contains(&i).then_some(t));
                for line in leaves::emit(leaf, i, &ins.shape, ins.dtype, ix, lane) {
                    out.push(format!("{pad}{line}"));
                }
            } else if let Some(e) = &self.exprs[i] {
                out.push(format!("{pad}const {t} v{i} = {e};"));
            } else if let Some(f) = &self.folds[i] {
                out.push(format!("{pad}{t} v{i} = {};", f.init));
                self.trailing(i, ix, indent, out);
            }
        }
    }

    /// The run of `ReduceTrailing` `i` over `k` values of `x` at run index `ix`: a loop;
    /// for runs of two, whose random leaves read both elements of each Philox block (an
    /// even base, trailing stride 1, even strides elsewhere: a point's two coordinates),
    /// the block computed once before the two steps (`ts_prime`, no cache check), which
    /// NVRTC cannot see for itself since the base is a parameter.
    fn trailing(&self, i: usize, ix: &str, indent: usize, out: &mut Vec<String>) {
        let (Some(f), InstrKind::ReduceTrailing { x, k, .. }) =
            (&self.folds[i], &self.kernel.instrs[i].kind)
        else {
            return;
        };
        let (x, k) = (*x, *k);
        let pad = "    ".repeat(indent);
        let first = format!("({ix} * 2)");
        let cone = self.cone(x);
        let primes: Vec<(usize, String)> = if k == 2 {
            cone.iter()
                .copied()
                .filter_map(|j| {
                    let leaf = self.leaves[j].as_ref()?;
                    Some((
                        j,
                        leaves::prime(leaf, j, &self.kernel.instrs[j].shape, &first)?,
                    ))
                })
                .collect()
        } else {
            Vec::new()
        };
        if primes.is_empty() {
            let k = cexpr::i64_lit(k as i64);
            out.push(format!("{pad}for (ts_i64 t{i} = 0; t{i} < {k}; ++t{i}) {{"));
            out.push(format!("{pad}    const ts_i64 ix{i} = {ix} * {k} + t{i};"));
            self.scope(&cone, &format!("ix{i}"), indent + 1, None, out);
            out.push(format!("{pad}    v{i} = {};", f.step));
            out.push(format!("{pad}}}"));
            return;
        }
        let primed: BTreeSet<usize> = primes.iter().map(|(j, _)| *j).collect();
        out.extend(primes.into_iter().map(|(_, line)| format!("{pad}{line}")));
        for t in 0..2 {
            out.push(format!("{pad}{{"));
            out.push(format!("{pad}    const ts_i64 t{i} = {t}LL;"));
            out.push(format!("{pad}    const ts_i64 ix{i} = {ix} * 2LL + t{i};"));
            self.scope(
                &cone,
                &format!("ix{i}"),
                indent + 1,
                Some((&primed, t)),
                out,
            );
            out.push(format!("{pad}    v{i} = {};", f.step));
            out.push(format!("{pad}}}"));
        }
    }

    /// The source, name and parameters.
    fn finish(self) -> Result<CudaKernel, KernelError> {
        let k = self.kernel;
        let root = &k.instrs[k.root];
        // Inputs, by slot, with one dtype and shape each.
        let mut inputs: BTreeMap<usize, (DType, Vec<usize>)> = BTreeMap::new();
        let mut scalars = Vec::new();
        for &i in &self.live {
            let Some(leaf) = &self.leaves[i] else {
                continue;
            };
            for (slot, shape) in &leaf.inputs {
                let dtype = k.instrs[i].dtype;
                match inputs.get(slot) {
                    Some((d, s)) if (*d, s) != (dtype, shape) => {
                        return Err(bad(format!(
                            "input {slot} is read as {d} {s:?} and as {dtype} {shape:?}"
                        )))
                    }
                    _ => {
                        inputs.insert(*slot, (dtype, shape.clone()));
                    }
                }
            }
            scalars.extend(leaf.scalars.iter().cloned());
        }
        let mut params = Vec::new();
        let mut decls = Vec::new();
        for (slot, (dtype, shape)) in &inputs {
            decls.push(format!(
                "const {}* __restrict__ in{slot}",
                cexpr::ctype(*dtype)
            ));
            params.push(ParamKind::Input {
                slot: *slot,
                dtype: *dtype,
                shape: shape.clone(),
            });
        }
        // Each random leaf's per-thread cache of its last Philox block.
        let mut body: Vec<String> = self
            .live
            .iter()
            .filter_map(|&i| {
                self.leaves[i]
                    .as_ref()
                    .and_then(|l| leaves::cache_decl(l, i))
            })
            .collect();
        let mut helpers = String::new();
        let reduce = match &k.reduce {
            None => {
                decls.push(format!("{}* __restrict__ out", cexpr::ctype(root.dtype)));
                params.push(ParamKind::Values {
                    dtype: root.dtype,
                    len: self.root_len,
                });
                // Counts are parameters, not constants: chunks of one expression that
                // differ only in length (an array's last, shorter chunk) share one kernel.
                decls.push("const ts_i64 n".into());
                params.push(ParamKind::I64(i64_of(self.root_len)?));
                for (name, kind) in &scalars {
                    decls.push(leaves::scalar_decl(name, kind));
                    params.push(kind.clone());
                }
                self.elementwise_body(&mut body);
                None
            }
            Some(r) => {
                let layout = self
                    .layout
                    .clone()
                    .ok_or_else(|| bad("reduction without a layout".into()))?;
                for (part, dtype) in layout.parts.iter().enumerate() {
                    decls.push(format!("{}* __restrict__ part{part}", cexpr::ctype(*dtype)));
                    params.push(ParamKind::Part {
                        part,
                        dtype: *dtype,
                    });
                }
                decls.push("const ts_i64 splits".into());
                params.push(ParamKind::Splits);
                decls.push("const ts_i64 S".into());
                params.push(ParamKind::I64(i64_of(layout.slots)?));
                decls.push("const ts_i64 R".into());
                params.push(ParamKind::I64(i64_of(layout.per_slot)?));
                for (name, kind) in &scalars {
                    decls.push(leaves::scalar_decl(name, kind));
                    params.push(kind.clone());
                }
                let idx0 = self.reduce_body(r, &layout, &mut body);
                if let Some(v) = idx0 {
                    decls.push("const ts_i64 idx0".into());
                    params.push(ParamKind::I64(v));
                }
                helpers = reduce::accumulator(r.op, root.dtype);
                Some(layout)
            }
        };
        decls.push("int* __restrict__ faults".into());
        params.push(ParamKind::Faults);

        let mut text = String::with_capacity(PRELUDE.len() + 4096);
        text.push_str(PRELUDE);
        text.push_str(&format!(
            "\n// ---- generated ----\nnamespace {NAME_TOKEN}_k {{\n{helpers}}}\n\n"
        ));
        text.push_str(&format!(
            "extern \"C\" __global__ void __launch_bounds__({BLOCK_DIM}) {NAME_TOKEN}(\n    {})\n{{\n    using namespace {NAME_TOKEN}_k;\n",
            decls.join(",\n    ")
        ));
        for line in body {
            text.push_str("    ");
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("}\n");
        let name = format!(
            "tessera_fused_{:016x}",
            XxHash3_64::oneshot(text.as_bytes())
        );
        Ok(CudaKernel {
            source: text.replace(NAME_TOKEN, &name),
            name,
            params,
            block_dim: BLOCK_DIM,
            elements: self.root_len,
            reduce,
        })
    }

    fn elementwise_body(&self, body: &mut Vec<String>) {
        let root = self.kernel.root;
        body.push("const ts_i64 stride = (ts_i64)gridDim.x * blockDim.x;".into());
        body.push(
            "for (ts_i64 ix0 = (ts_i64)blockIdx.x * blockDim.x + threadIdx.x; ix0 < n; ix0 += stride) {"
                .into(),
        );
        self.scope(&self.cone(root), "ix0", 1, None, body);
        body.push(format!("    out[ix0] = v{root};"));
        body.push("}".into());
    }

    /// `cpu::fused::Reducer::new`'s checks and the partial layout.
    fn reduce_layout(
        &self,
        r: &tessera_kernels::expr::ChunkReduce,
    ) -> Result<ReduceLayout, KernelError> {
        let root = &self.kernel.instrs[self.kernel.root];
        let nd = root.shape.len();
        if r.axes.iter().any(|&a| a >= nd)
            || r.global_start.len() != nd
            || r.global_shape.len() != nd
        {
            return Err(bad(format!(
                "reduction {r:?} does not fit a rank-{nd} chunk"
            )));
        }
        let out_shape: Vec<usize> = (0..nd)
            .filter(|d| !r.axes.contains(d))
            .map(|d| root.shape[d])
            .collect();
        let slots = checked_numel(&out_shape)?;
        Ok(ReduceLayout {
            op: r.op,
            input_dtype: root.dtype,
            out_shape,
            slots,
            per_slot: self.root_len / slots,
            parts: reduce::part_dtypes(r.op, root.dtype),
        })
    }

    /// The reducing kernel's body; returns the arg-reduction offset parameter's value.
    fn reduce_body(
        &self,
        r: &tessera_kernels::expr::ChunkReduce,
        layout: &ReduceLayout,
        body: &mut Vec<String>,
    ) -> Option<i64> {
        let root = &self.kernel.instrs[self.kernel.root];
        let shape = &root.shape;
        let nd = shape.len();
        let cs = c_strides_i64(shape);
        let reduced: Vec<bool> = (0..nd).map(|d| r.axes.contains(&d)).collect();
        // Reduction-index strides over the global shape's reduced axes (as the CPU's).
        let mut idx_strides = vec![0i64; nd];
        let mut s = 1i64;
        for d in (0..nd).rev().filter(|&d| reduced[d]) {
            idx_strides[d] = s;
            s = s.wrapping_mul(r.global_shape[d] as i64);
        }
        let is_arg = matches!(r.op, ReduceOp::ArgMin | ReduceOp::ArgMax);
        let idx0 = is_arg.then(|| {
            (0..nd)
                .map(|d| (r.global_start[d] as i64).wrapping_mul(idx_strides[d]))
                .fold(0i64, i64::wrapping_add)
        });
        let kept_dims: Vec<usize> = (0..nd).filter(|&d| !reduced[d]).collect();
        let red_dims: Vec<usize> = (0..nd).filter(|&d| reduced[d]).collect();
        let pick = |dims: &[usize], v: &[i64]| -> Vec<i64> { dims.iter().map(|&d| v[d]).collect() };
        let sizes = |dims: &[usize]| -> Vec<usize> { dims.iter().map(|&d| shape[d]).collect() };
        let slot_e = Affine::new(&sizes(&kept_dims), &[pick(&kept_dims, &cs)]).expr("slot");
        let red = Affine::new(
            &sizes(&red_dims),
            &[pick(&red_dims, &cs), pick(&red_dims, &idx_strides)],
        )
        .exprs("r");
        let parts: Vec<String> = (0..layout.parts.len())
            .map(|p| format!("part{p}"))
            .collect();
        let lines = [
            "if (splits < 1 || splits > R) {".into(),
            "    if (blockIdx.x == 0 && threadIdx.x == 0) ts_fault(faults, TS_FAULT_BAD_LAUNCH);"
                .into(),
            "    return;".into(),
            "}".into(),
            "__shared__ ts_acc sh[32];".into(),
            "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;".into(),
            "const int nwarps = (blockDim.x + 31) >> 5;".into(),
            "const int width = min(32, (int)blockDim.x - warp * 32);".into(),
            "const ts_i64 q = R / splits, rem = R % splits;".into(),
            "for (ts_i64 w = blockIdx.x; w < S * splits; w += gridDim.x) {".into(),
            "    const ts_i64 slot = w / splits, rec = w % splits;".into(),
            "    const ts_i64 r0 = rec * q + (rec < rem ? rec : rem);".into(),
            "    const ts_i64 r1 = r0 + q + (rec < rem ? 1 : 0);".into(),
            format!("    const ts_i64 ebase = {slot_e};"),
            "    ts_acc acc;".into(),
            "    ts_acc_init(acc);".into(),
            "    for (ts_i64 r = r0 + threadIdx.x; r < r1; r += blockDim.x) {".into(),
            format!("        const ts_i64 ix0 = ebase + {};", red[0]),
        ];
        body.extend(lines);
        let aidx = if is_arg {
            body.push(format!("        const ts_i64 aidx = idx0 + {};", red[1]));
            "aidx"
        } else {
            "0"
        };
        self.scope(&self.cone(self.kernel.root), "ix0", 2, None, body);
        let root_v = format!("v{}", self.kernel.root);
        let tail = [
            format!("        ts_acc_fold(acc, {root_v}, {aidx});"),
            "    }".into(),
            "    for (int o = 16; o > 0; o >>= 1) {".into(),
            "        const ts_acc other = ts_acc_shfl(acc, o);".into(),
            "        if (lane + o < width) ts_acc_merge(acc, other);".into(),
            "    }".into(),
            "    if (lane == 0) sh[warp] = acc;".into(),
            "    __syncthreads();".into(),
            "    if (warp == 0) {".into(),
            "        if (lane < nwarps) acc = sh[lane]; else ts_acc_init(acc);".into(),
            "        for (int o = 16; o > 0; o >>= 1) {".into(),
            "            const ts_acc other = ts_acc_shfl(acc, o);".into(),
            "            if (lane + o < nwarps) ts_acc_merge(acc, other);".into(),
            "        }".into(),
            format!(
                "        if (lane == 0) ts_acc_store(acc, {}, rec * S + slot);",
                parts.join(", ")
            ),
            "    }".into(),
            "    __syncthreads();".into(),
            "}".into(),
        ];
        body.extend(tail);
        idx0
    }
}
