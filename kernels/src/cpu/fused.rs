//! The fused evaluator: runs a [`FusedKernel`] over one chunk in cache-sized blocks.
//!
//! For each block of the root's flat index range, every instruction is evaluated into a
//! block-sized buffer (an instruction over `f` times more elements than the root, because a
//! trailing reduction follows it, evaluates `f` times the range), then the root's block is
//! appended to the output or folded into the reduction state. Intermediates stay in cache.

use super::elementwise;
use super::philox;
use super::reduce::Accumulator;
use super::runs::{advance, unravel, ChunkRuns, FlatRuns, Run};
use super::shortcuts::{self, Shortcut};
use crate::chunk::ChunkData;
use crate::dtype::{DType, Scalar};
use crate::expr::{
    ChunkReduce, Distribution, FusedKernel, InstrKind, LeafSource, ReduceOp, SourceChunk,
};
use crate::tensor::{c_strides, checked_numel, Buffer, Element, HostTensor};
use crate::{with_buffer, KernelError};
use std::sync::Arc;

/// Elements evaluated per instruction and block: small enough that a block's buffers stay
/// in L2, large enough to amortise the per-block dispatch.
const BLOCK_ELEMS: usize = 1024;

/// A leaf, ready to produce any range of its values.
enum Leaf {
    Const(Scalar),
    Random {
        dist: Distribution,
        seed: u64,
        stream: u64,
        runs: FlatRuns,
    },
    Ramp {
        start: Scalar,
        step: Scalar,
        pin: Option<(i64, f64)>,
        runs: FlatRuns,
    },
    /// Every value comes from one input chunk, through a flat map into its data.
    OneChunk {
        input: usize,
        runs: FlatRuns,
    },
    ManyChunks(ChunkRuns),
}

/// A validated kernel with its leaves prepared.
struct Plan<'a> {
    kernel: &'a FusedKernel,
    inputs: &'a [Arc<ChunkData>],
    leaves: Vec<Option<Leaf>>,
    factors: Vec<usize>,
    /// How each instruction is evaluated.
    shortcuts: Vec<Shortcut>,
    root_len: usize,
}

fn bad(msg: String) -> KernelError {
    KernelError::BadInput(msg)
}

/// Runs a fused kernel over its chunk (a reduction's partial finished where the kernel
/// asks, see [`super::combine::finish_reduction`]).
pub(crate) fn run(
    kernel: &FusedKernel,
    inputs: &[Arc<ChunkData>],
) -> Result<ChunkData, KernelError> {
    let data = Plan::new(kernel, inputs)?.execute()?;
    super::combine::finish_reduction(kernel.reduce.as_ref(), data)
}

/// A fused kernel with a 2-D `f64` root, evaluated a range of rows at a time (a generated
/// matrix operand consumed in cache-sized strips instead of materialized whole).
pub(crate) struct RowSource<'a> {
    plan: Plan<'a>,
    /// Rows and columns of the root.
    pub shape: (usize, usize),
}

impl<'a> RowSource<'a> {
    /// Prepares `kernel`, whose root must be a 2-D `f64` matrix without a reduction.
    pub fn new(
        kernel: &'a FusedKernel,
        inputs: &'a [Arc<ChunkData>],
    ) -> Result<RowSource<'a>, KernelError> {
        let plan = Plan::new(kernel, inputs)?;
        let root = &kernel.instrs[kernel.root];
        match (root.shape.as_slice(), root.dtype, &kernel.reduce) {
            (&[m, n], DType::F64, None) => Ok(RowSource {
                plan,
                shape: (m, n),
            }),
            _ => Err(bad(format!(
                "a matrix operand needs a 2-D float64 kernel, got {} {:?}",
                root.dtype, root.shape
            ))),
        }
    }

    /// Rows `r0..r1` into `out` (row-major, resized to fit).
    pub fn rows(&self, r0: usize, r1: usize, out: &mut Vec<f64>) -> Result<(), KernelError> {
        let n = self.shape.1;
        out.clear();
        blocks(&self.plan, r0 * n, r1 * n, |vals, a, b| match vals {
            Buffer::F64(v) => {
                out.extend_from_slice(&v[..b - a]);
                Ok(())
            }
            other => Err(bad(format!("matrix operand produced {}", other.dtype()))),
        })
    }
}

/// [`Plan::run_blocks`] through the widest SIMD entry point this CPU supports.
fn blocks<F>(plan: &Plan<'_>, lo: usize, hi: usize, sink: F) -> Result<(), KernelError>
where
    F: FnMut(&Buffer, usize, usize) -> Result<(), KernelError>,
{
    #[cfg(target_arch = "x86_64")]
    {
        match simd_level() {
            // SAFETY: the CPU supports the features each entry point is compiled for.
            SimdLevel::Avx512 => return unsafe { blocks_avx512(plan, lo, hi, sink) },
            SimdLevel::Avx2 => return unsafe { blocks_avx2(plan, lo, hi, sink) },
            SimdLevel::Baseline => {}
        }
    }
    plan.run_blocks(lo, hi, sink)
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum SimdLevel {
    Avx512,
    Avx2,
    Baseline,
}

#[cfg(target_arch = "x86_64")]
fn simd_level() -> SimdLevel {
    static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
        {
            SimdLevel::Avx512
        } else if is_x86_feature_detected!("avx2") {
            SimdLevel::Avx2
        } else {
            SimdLevel::Baseline
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw,avx2,bmi2")]
unsafe fn blocks_avx512<F>(
    plan: &Plan<'_>,
    lo: usize,
    hi: usize,
    sink: F,
) -> Result<(), KernelError>
where
    F: FnMut(&Buffer, usize, usize) -> Result<(), KernelError>,
{
    plan.run_blocks(lo, hi, sink)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn blocks_avx2<F>(plan: &Plan<'_>, lo: usize, hi: usize, sink: F) -> Result<(), KernelError>
where
    F: FnMut(&Buffer, usize, usize) -> Result<(), KernelError>,
{
    plan.run_blocks(lo, hi, sink)
}

impl<'a> Plan<'a> {
    fn new(kernel: &'a FusedKernel, inputs: &'a [Arc<ChunkData>]) -> Result<Plan<'a>, KernelError> {
        let instrs = &kernel.instrs;
        let (root, root_len) = kernel.root_instr()?;
        let mut factors = Vec::with_capacity(instrs.len());
        let mut leaves = Vec::with_capacity(instrs.len());
        for (i, ins) in instrs.iter().enumerate() {
            let n = checked_numel(&ins.shape)?;
            if n % root_len != 0 {
                return Err(bad(format!(
                    "instruction {i} has shape {:?}, not a multiple of the root's {:?}",
                    ins.shape, root.shape
                )));
            }
            factors.push(n / root_len);
            let operands: Vec<usize> = match &ins.kind {
                InstrKind::Leaf(_) => vec![],
                InstrKind::Unary { x, .. } | InstrKind::Cast { x } => vec![*x],
                InstrKind::Binary { a, b, .. } => vec![*a, *b],
                InstrKind::Where { cond, a, b } => vec![*cond, *a, *b],
                InstrKind::ReduceTrailing { x, k, .. } => {
                    if *k == 0 || instrs.get(*x).map(|o| checked_numel(&o.shape)) != Some(Ok(n * k))
                    {
                        return Err(bad(format!(
                            "instruction {i} reduces runs of {k} of a mismatched operand"
                        )));
                    }
                    vec![*x]
                }
            };
            if let Some(&o) = operands.iter().find(|&&o| o >= i) {
                return Err(bad(format!("instruction {i} uses later instruction {o}")));
            }
            for &o in &operands {
                let same = instrs[o].shape == ins.shape;
                if !same && !matches!(ins.kind, InstrKind::ReduceTrailing { .. }) {
                    return Err(bad(format!(
                        "instruction {i} mixes shapes {:?} and {:?}",
                        ins.shape, instrs[o].shape
                    )));
                }
            }
            leaves.push(match &ins.kind {
                InstrKind::Leaf(src) => Some(Self::leaf(src, &ins.shape, ins.dtype, inputs)?),
                _ => None,
            });
        }
        let shortcuts = shortcuts::plan(instrs, kernel.root);
        Ok(Plan {
            kernel,
            inputs,
            leaves,
            factors,
            shortcuts,
            root_len,
        })
    }

    fn leaf(
        src: &LeafSource,
        shape: &[usize],
        dtype: DType,
        inputs: &[Arc<ChunkData>],
    ) -> Result<Leaf, KernelError> {
        Ok(match src {
            LeafSource::Const(v) => Leaf::Const(v.cast(dtype)),
            LeafSource::Random {
                dist,
                seed,
                stream,
                map,
            } => {
                let want = dist.dtype()?;
                if want != dtype {
                    return Err(bad(format!("random leaf of {dtype}, expected {want}")));
                }
                Leaf::Random {
                    dist: *dist,
                    seed: *seed,
                    stream: *stream,
                    runs: FlatRuns::new(shape, map)?,
                }
            }
            LeafSource::Ramp {
                start,
                step,
                pin,
                map,
            } => Leaf::Ramp {
                start: *start,
                step: *step,
                pin: *pin,
                runs: FlatRuns::new(shape, map)?,
            },
            LeafSource::Chunks { chunks, axes } => {
                for c in chunks {
                    let t = input_tensor(inputs, c.input)?;
                    if t.shape() != c.shape.as_slice() || t.dtype() != dtype {
                        return Err(bad(format!(
                            "input {} is {} {:?}, the kernel expects {dtype} {:?}",
                            c.input,
                            t.dtype(),
                            t.shape(),
                            c.shape
                        )));
                    }
                }
                match one_chunk_map(shape, axes, chunks) {
                    Some((input, map)) => Leaf::OneChunk {
                        input,
                        runs: FlatRuns::new(shape, &map)?,
                    },
                    None => Leaf::ManyChunks(ChunkRuns::new(shape, axes, chunks)?),
                }
            }
        })
    }

    /// Evaluates the root over its flat range `lo..hi` block by block, handing each block's
    /// values to `sink(values, block_start, block_end)`.
    #[inline(always)]
    fn run_blocks<F>(&self, lo: usize, hi: usize, mut sink: F) -> Result<(), KernelError>
    where
        F: FnMut(&Buffer, usize, usize) -> Result<(), KernelError>,
    {
        let k = self.kernel;
        let max_factor = self.factors.iter().copied().max().unwrap_or(1);
        let block = (BLOCK_ELEMS / max_factor).max(1).min(self.root_len);
        let mut bufs: Vec<Buffer> = k
            .instrs
            .iter()
            .zip(&self.factors)
            .map(|(ins, f)| Buffer::with_capacity(ins.dtype, block * f))
            .collect();
        for (i, leaf) in self.leaves.iter().enumerate() {
            if let Some(Leaf::Const(v)) = leaf {
                bufs[i] = Buffer::filled(*v, block * self.factors[i]);
            }
        }
        let mut a = lo;
        while a < hi {
            let b = (a + block).min(hi);
            for i in 0..k.instrs.len() {
                if self.shortcuts[i] != Shortcut::Skip {
                    self.eval(i, a * self.factors[i], b * self.factors[i], &mut bufs)?;
                }
            }
            sink(&bufs[k.root], a, b)?;
            a = b;
        }
        Ok(())
    }

    /// The whole chunk: its values, or its partial reduction.
    fn execute(&self) -> Result<ChunkData, KernelError> {
        let root = &self.kernel.instrs[self.kernel.root];
        match &self.kernel.reduce {
            Some(r) => {
                let mut reducer = Reducer::new(r, &root.shape, root.dtype)?;
                blocks(self, 0, self.root_len, |vals, a, b| {
                    reducer.fold(vals, a, b)
                })?;
                Ok(ChunkData::Partial(reducer.finish()?))
            }
            None => {
                let mut out = Buffer::with_capacity(root.dtype, self.root_len);
                blocks(self, 0, self.root_len, |vals, a, b| {
                    append(&mut out, vals, b - a)
                })?;
                Ok(ChunkData::Tensor(HostTensor::new(root.shape.clone(), out)?))
            }
        }
    }

    /// Evaluates instruction `i` over its local flat range `lo..hi` into `bufs[i]`.
    #[inline(always)]
    fn eval(&self, i: usize, lo: usize, hi: usize, bufs: &mut [Buffer]) -> Result<(), KernelError> {
        let (before, rest) = bufs.split_at_mut(i);
        let len = hi - lo;
        match (self.shortcuts[i], &self.kernel.instrs[i].kind) {
            (Shortcut::SinCos { gap }, InstrKind::Unary { op, x }) => {
                return shortcuts::sincos_into(*op, &before[*x], len, rest, gap);
            }
            (Shortcut::SqrtBelow { x, limit }, _) => {
                return shortcuts::sqrt_below_into(&before[x], limit, len, &mut rest[0]);
            }
            _ => {}
        }
        let out = &mut rest[0];
        match &self.kernel.instrs[i].kind {
            InstrKind::Leaf(_) => self.eval_leaf(i, lo, hi, out),
            InstrKind::Unary { op, x } => elementwise::unary(*op, &before[*x], len, out),
            InstrKind::Binary { op, a, b } => {
                elementwise::binary(*op, &before[*a], &before[*b], len, out)
            }
            InstrKind::Where { cond, a, b } => {
                elementwise::select(&before[*cond], &before[*a], &before[*b], len, out)
            }
            InstrKind::Cast { x } => {
                elementwise::cast(&before[*x], len, out);
                Ok(())
            }
            InstrKind::ReduceTrailing { op, x, k } => {
                elementwise::reduce_runs(*op, &before[*x], *k, len, out)
            }
        }
    }

    #[inline(always)]
    fn eval_leaf(
        &self,
        i: usize,
        lo: usize,
        hi: usize,
        out: &mut Buffer,
    ) -> Result<(), KernelError> {
        let len = hi - lo;
        match &self.leaves[i] {
            Some(Leaf::Const(_)) | None => Ok(()),
            Some(Leaf::Random {
                dist,
                seed,
                stream,
                runs,
            }) => {
                fill_random(*dist, *seed, *stream, runs, lo, hi, out);
                Ok(())
            }
            Some(Leaf::Ramp {
                start,
                step,
                pin,
                runs,
            }) => {
                with_buffer!(out, o => fill_ramp(*start, *step, *pin, runs, lo, hi, o));
                Ok(())
            }
            Some(Leaf::OneChunk { input, runs }) => {
                let src = input_tensor(self.inputs, *input)?.data();
                let mut result = Ok(());
                with_buffer!(out, o => {
                    o.resize(len, Default::default());
                    runs.for_each(lo, hi, |run| {
                        if result.is_ok() {
                            result = copy_run(o, src, run);
                        }
                    });
                });
                result
            }
            Some(Leaf::ManyChunks(g)) => {
                let mut result = Ok(());
                with_buffer!(out, o => {
                    o.resize(len, Default::default());
                    g.for_each(lo, hi, |slot, run| {
                        if result.is_ok() {
                            result = input_tensor(self.inputs, slot).and_then(|t| copy_run(o, t.data(), run));
                        }
                    })?;
                });
                result
            }
        }
    }
}

fn input_tensor(inputs: &[Arc<ChunkData>], slot: usize) -> Result<&HostTensor, KernelError> {
    inputs.get(slot).and_then(|c| c.as_tensor()).ok_or_else(|| {
        bad(format!(
            "input {slot} is missing or not a tensor ({} inputs)",
            inputs.len()
        ))
    })
}

/// If every source index the leaf reads lies in one chunk, the flat map into that chunk.
fn one_chunk_map(
    shape: &[usize],
    axes: &[crate::expr::AxisMap],
    chunks: &[SourceChunk],
) -> Option<(usize, crate::expr::FlatMap)> {
    let [c] = chunks else { return None };
    if c.start.len() != axes.len() || shape.contains(&0) {
        return None;
    }
    let cs = c_strides(&c.shape);
    let mut base = 0i64;
    let mut strides = vec![0i64; shape.len()];
    for (d, a) in axes.iter().enumerate() {
        let span = match a.local_axis {
            Some(k) => a.step * (*shape.get(k)? as i64 - 1),
            None => 0,
        };
        let (lo, hi) = (a.offset.min(a.offset + span), a.offset.max(a.offset + span));
        if lo < c.start[d] as i64 || hi >= (c.start[d] + c.shape[d]) as i64 {
            return None;
        }
        base += (a.offset - c.start[d] as i64) * cs[d] as i64;
        if let Some(k) = a.local_axis {
            strides[k] += a.step * cs[d] as i64;
        }
    }
    Some((c.input, crate::expr::FlatMap { base, strides }))
}

#[inline(always)]
fn copy_run<T: Element>(dst: &mut [T], src: &Buffer, run: Run) -> Result<(), KernelError> {
    let src = T::slice(src).ok_or_else(|| {
        bad(format!(
            "input of {} where {} was expected",
            src.dtype(),
            T::DTYPE
        ))
    })?;
    let last = run.src + run.stride * (run.len as i64 - 1);
    if run.src < 0 || last < 0 || run.src.max(last) as usize >= src.len() {
        return Err(bad(format!(
            "read past an input chunk of {} elements",
            src.len()
        )));
    }
    let dst = &mut dst[run.out..run.out + run.len];
    let start = run.src as usize;
    if run.stride == 1 {
        dst.copy_from_slice(&src[start..start + run.len]);
    } else {
        for (k, d) in dst.iter_mut().enumerate() {
            *d = src[(run.src + run.stride * k as i64) as usize];
        }
    }
    Ok(())
}

/// Fills `o` with local elements `lo..hi`, run by run, through `fill(first, stride, out)`.
fn fill_runs<T: Copy + Default>(
    runs: &FlatRuns,
    lo: usize,
    hi: usize,
    o: &mut Vec<T>,
    fill: impl Fn(u64, i64, &mut [T]),
) {
    o.resize(hi - lo, T::default());
    runs.for_each(lo, hi, |r| {
        fill(r.src as u64, r.stride, &mut o[r.out..r.out + r.len])
    });
}

fn fill_random(
    dist: Distribution,
    seed: u64,
    stream: u64,
    runs: &FlatRuns,
    lo: usize,
    hi: usize,
    out: &mut Buffer,
) {
    match (dist, out) {
        (Distribution::Uniform { low, high }, Buffer::F64(o)) => {
            fill_runs(runs, lo, hi, o, |start, stride, out| {
                philox::uniform_f64(seed, stream, low, high, start, stride, out)
            })
        }
        (Distribution::Normal { mean, std }, Buffer::F64(o)) => {
            fill_runs(runs, lo, hi, o, |start, stride, out| {
                philox::normal_f64(seed, stream, mean, std, start, stride, out)
            })
        }
        (Distribution::RandInt { low, high }, Buffer::I64(o)) => {
            fill_runs(runs, lo, hi, o, |start, stride, out| {
                philox::randint_i64(seed, stream, low, high, start, stride, out)
            })
        }
        // Plan::leaf checked the dtype.
        _ => {}
    }
}

#[inline(always)]
fn fill_ramp<T: Element>(
    start: Scalar,
    step: Scalar,
    pin: Option<(i64, f64)>,
    runs: &FlatRuns,
    lo: usize,
    hi: usize,
    o: &mut Vec<T>,
) {
    o.resize(hi - lo, T::default());
    runs.for_each(lo, hi, |r| {
        for t in 0..r.len {
            let flat = r.src + r.stride * t as i64;
            o[r.out + t] = match (start, step, pin) {
                (_, _, Some((p, v))) if p == flat => elementwise::convert(v),
                (Scalar::I64(s), Scalar::I64(d), _) => {
                    elementwise::convert(s.wrapping_add(d.wrapping_mul(flat)))
                }
                (s, d, _) => elementwise::convert(s.as_f64() + flat as f64 * d.as_f64()),
            };
        }
    });
}

fn append(out: &mut Buffer, vals: &Buffer, len: usize) -> Result<(), KernelError> {
    with_buffer!(out, o => {
        let v = Element::slice(vals).ok_or_else(|| bad("root values changed type".into()))?;
        o.extend_from_slice(&v[..len]);
    });
    Ok(())
}

/// Folds the root's values into a reduction over some of its axes.
struct Reducer {
    acc: Accumulator,
    shape: Vec<usize>,
    reduced: Vec<bool>,
    /// Slot stride per root axis (0 for reduced axes).
    slot_strides: Vec<usize>,
    /// Reduction-index stride per root axis (0 for kept axes), and the chunk's global start.
    idx_strides: Vec<i64>,
    global_start: Vec<usize>,
    out_shape: Vec<usize>,
    all_axes: bool,
    is_arg: bool,
}

impl Reducer {
    fn new(r: &ChunkReduce, shape: &[usize], dtype: DType) -> Result<Reducer, KernelError> {
        let nd = shape.len();
        if r.axes.iter().any(|&a| a >= nd)
            || r.global_start.len() != nd
            || r.global_shape.len() != nd
        {
            return Err(bad(format!(
                "reduction {r:?} does not fit a rank-{nd} chunk"
            )));
        }
        let reduced: Vec<bool> = (0..nd).map(|d| r.axes.contains(&d)).collect();
        let out_shape: Vec<usize> = (0..nd).filter(|&d| !reduced[d]).map(|d| shape[d]).collect();
        let mut slot_strides = vec![0; nd];
        let mut s = 1;
        for d in (0..nd).rev().filter(|&d| !reduced[d]) {
            slot_strides[d] = s;
            s *= shape[d];
        }
        let mut idx_strides = vec![0i64; nd];
        let mut s = 1i64;
        for d in (0..nd).rev().filter(|&d| reduced[d]) {
            idx_strides[d] = s;
            s *= r.global_shape[d] as i64;
        }
        let slots = checked_numel(&out_shape)?;
        Ok(Reducer {
            acc: Accumulator::new(r.op, dtype, slots)?,
            shape: shape.to_vec(),
            all_axes: reduced.iter().all(|&x| x),
            reduced,
            slot_strides,
            idx_strides,
            global_start: r.global_start.clone(),
            out_shape,
            is_arg: matches!(r.op, ReduceOp::ArgMin | ReduceOp::ArgMax),
        })
    }

    #[inline(always)]
    fn fold(&mut self, vals: &Buffer, a: usize, b: usize) -> Result<(), KernelError> {
        if self.all_axes && !self.is_arg {
            return self.acc.fold_segment(0, vals, 0, b - a, 0);
        }
        let shape: &[usize] = if self.shape.is_empty() {
            &[1]
        } else {
            &self.shape
        };
        let last = shape.len() - 1;
        let last_reduced = self.reduced.get(last).copied().unwrap_or(true);
        let mut m = unravel(a, shape);
        let mut pos = a;
        while pos < b {
            let len = (shape[last] - m[last]).min(b - pos);
            let slot: usize = m.iter().zip(&self.slot_strides).map(|(i, s)| i * s).sum();
            let idx: i64 = m
                .iter()
                .zip(&self.global_start)
                .zip(&self.idx_strides)
                .map(|((&i, &g), &s)| (i + g) as i64 * s)
                .sum();
            if last_reduced {
                self.acc.fold_segment(slot, vals, pos - a, len, idx)?;
            } else {
                self.acc.accumulate_run(slot, vals, pos - a, len, idx)?;
            }
            pos += len;
            advance(&mut m, shape, len);
        }
        Ok(())
    }

    fn finish(self) -> Result<crate::chunk::Partial, KernelError> {
        self.acc.into_partial(&self.out_shape)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpu::vmath;
    use crate::expr::{BinaryOp, FlatMap, Instr, UnaryOp};

    pub(crate) fn instr(n: usize, dtype: DType, kind: InstrKind) -> Instr {
        Instr {
            shape: vec![n],
            dtype,
            kind,
        }
    }

    pub(crate) fn unary(n: usize, op: UnaryOp, x: usize) -> Instr {
        instr(n, DType::F64, InstrKind::Unary { op, x })
    }

    /// `start + k * step` for `k` in `0..n`, as a kernel leaf.
    pub(crate) fn ramp(n: usize, start: f64, step: f64) -> Instr {
        instr(
            n,
            DType::F64,
            InstrKind::Leaf(LeafSource::Ramp {
                start: Scalar::F64(start),
                step: Scalar::F64(step),
                pin: None,
                map: FlatMap {
                    base: 0,
                    strides: vec![1],
                },
            }),
        )
    }

    fn values(kernel: &FusedKernel) -> Vec<f64> {
        let out = run(kernel, &[]).unwrap();
        match out.as_tensor().map(HostTensor::data) {
            Some(Buffer::F64(v)) => v.clone(),
            other => panic!("expected float64 values, got {other:?}"),
        }
    }

    /// `sqrt` and the roundings, inlined into the evaluator's SIMD entry points, equal
    /// std's values (negative inputs included: `sqrt` gives NaN).
    #[test]
    fn inlined_float_functions_in_a_kernel_equal_std() {
        let (n, start, step) = (1003, -250.25, 0.5);
        type Case = (UnaryOp, fn(f64) -> f64);
        let ops: [Case; 5] = [
            (UnaryOp::Sqrt, f64::sqrt),
            (UnaryOp::Floor, f64::floor),
            (UnaryOp::Ceil, f64::ceil),
            (UnaryOp::Trunc, f64::trunc),
            (UnaryOp::Rint, f64::round_ties_even),
        ];
        for (op, f) in ops {
            let kernel = FusedKernel {
                instrs: vec![ramp(n, start, step), unary(n, op, 0)],
                root: 1,
                reduce: None,
            };
            for (k, &got) in values(&kernel).iter().enumerate() {
                let want = f(start + k as f64 * step);
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{op:?} at {k}: {got} vs {want}"
                );
            }
        }
    }

    /// A kernel with `cos(x) - sin(x) * |x|` (cos first, something between) gives the
    /// same bits as `sin` and `cos` evaluated alone, in and beyond the reduction range.
    #[test]
    fn paired_sin_cos_equal_the_single_functions() {
        let n = 5000;
        let (start, step) = (-2.0e5, 81.3);
        let kernel = FusedKernel {
            instrs: vec![
                ramp(n, start, step),
                unary(n, UnaryOp::Cos, 0),
                unary(n, UnaryOp::Abs, 0),
                unary(n, UnaryOp::Sin, 0),
                instr(
                    n,
                    DType::F64,
                    InstrKind::Binary {
                        op: BinaryOp::Mul,
                        a: 3,
                        b: 2,
                    },
                ),
                instr(
                    n,
                    DType::F64,
                    InstrKind::Binary {
                        op: BinaryOp::Sub,
                        a: 1,
                        b: 4,
                    },
                ),
            ],
            root: 5,
            reduce: None,
        };
        assert_eq!(
            shortcuts::plan(&kernel.instrs, kernel.root)[1],
            Shortcut::SinCos { gap: 2 }
        );
        let got = values(&kernel);
        let x: Vec<f64> = (0..n).map(|k| start + k as f64 * step).collect();
        let (mut s, mut c) = (vec![0.0; n], vec![0.0; n]);
        vmath::sin(&x, &mut s);
        vmath::cos(&x, &mut c);
        assert_eq!(got.len(), n);
        for k in 0..n {
            let want = c[k] - s[k] * x[k].abs();
            assert_eq!(got[k].to_bits(), want.to_bits(), "x = {}", x[k]);
            // And close to libm's.
            let libm = x[k].cos() - x[k].sin() * x[k].abs();
            assert!(
                (got[k] - libm).abs() <= 1e-15 * x[k].abs().max(1.0),
                "x = {}",
                x[k]
            );
        }
    }

    /// `sqrt(x) < c` and `sqrt(x) <= c` give what the `sqrt` and the comparison give one
    /// after the other, around the limit, for negative numbers, -0.0, infinities and NaN,
    /// also reduced (a count, as in Monte Carlo pi).
    #[test]
    fn sqrt_comparisons_equal_sqrt_then_compare() {
        let mut xs = vec![
            -1.0,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-300,
        ];
        for c in [1.0f64, 0.3, 2.5, 1e-150, 7e150] {
            let t = c * c;
            let mut v = f64::from_bits(t.to_bits() - 4);
            for _ in 0..9 {
                xs.push(v);
                v = f64::from_bits(v.to_bits() + 1);
            }
        }
        let n = xs.len();
        let data = Arc::new(ChunkData::Tensor(
            HostTensor::new(vec![n], Buffer::F64(xs.clone())).unwrap(),
        ));
        let leaf = instr(
            n,
            DType::F64,
            InstrKind::Leaf(LeafSource::Chunks {
                chunks: vec![SourceChunk {
                    input: 0,
                    start: vec![0],
                    shape: vec![n],
                }],
                axes: vec![crate::expr::AxisMap {
                    local_axis: Some(0),
                    offset: 0,
                    step: 1,
                }],
            }),
        );
        for c in [1.0f64, 0.3, 2.5, 1e-150, 7e150] {
            for op in [BinaryOp::Lt, BinaryOp::Le] {
                let constant = instr(
                    n,
                    DType::F64,
                    InstrKind::Leaf(LeafSource::Const(Scalar::F64(c))),
                );
                let kernel = FusedKernel {
                    instrs: vec![
                        leaf.clone(),
                        unary(n, UnaryOp::Sqrt, 0),
                        constant,
                        instr(n, DType::Bool, InstrKind::Binary { op, a: 1, b: 2 }),
                    ],
                    root: 3,
                    reduce: None,
                };
                assert!(matches!(
                    shortcuts::plan(&kernel.instrs, kernel.root)[3],
                    Shortcut::SqrtBelow { x: 0, .. }
                ));
                let out = run(&kernel, std::slice::from_ref(&data)).unwrap();
                let Some(Buffer::Bool(got)) = out.as_tensor().map(HostTensor::data) else {
                    panic!("expected booleans");
                };
                let mut inside = 0;
                for (&g, &x) in got.iter().zip(&xs) {
                    let want = if op == BinaryOp::Lt {
                        x.sqrt() < c
                    } else {
                        x.sqrt() <= c
                    };
                    assert_eq!(g, want, "sqrt({x:e}) {op:?} {c:e}");
                    inside += i64::from(want);
                }
                // The same comparison counted by a reduction.
                let mut counted = kernel.clone();
                counted.reduce = Some(crate::expr::ChunkReduce {
                    op: ReduceOp::Sum,
                    axes: vec![0],
                    global_start: vec![0],
                    global_shape: vec![n],
                    finalize: None,
                });
                let partial = run(&counted, std::slice::from_ref(&data)).unwrap();
                let ChunkData::Partial(p) = partial else {
                    panic!("expected a partial reduction");
                };
                assert_eq!(p.parts[0].data(), &Buffer::I64(vec![inside]), "{c} {op:?}");
            }
        }
    }
}
