//! Leaves: where a fused kernel's values come from (constants, random streams, ramps and
//! input chunks), planned once and then written as C at any index.

use super::cexpr::{convert, ctype, i64_lit, scalar_lit};
use super::index::{axis_index, c_strides_i64, Affine};
use super::ParamKind;
use tessera_kernels::dtype::{DType, Scalar};
use tessera_kernels::expr::{AxisMap, Distribution, FlatMap, LeafSource, SourceChunk};
use tessera_kernels::KernelError;

fn bad(msg: String) -> KernelError {
    KernelError::BadInput(msg)
}

/// A source chunk as a many-chunk leaf reads it: bounds relative to the leaf's axis
/// offsets (so the code does not change when the whole read moves).
#[derive(Clone, Debug)]
struct ChunkBox {
    slot: usize,
    /// `start - offset` per source axis.
    lo: Vec<i64>,
    shape: Vec<usize>,
}

/// How one leaf is evaluated.
#[derive(Clone, Debug)]
enum Plan {
    Const(Scalar),
    Random {
        dist: Distribution,
        map: FlatMap,
    },
    Ramp {
        int: bool,
        pin: bool,
        map: FlatMap,
    },
    /// Every read falls in one chunk: a flat map into its data.
    OneChunk {
        slot: usize,
        map: FlatMap,
    },
    ManyChunks {
        axes: Vec<AxisMap>,
        chunks: Vec<ChunkBox>,
    },
}

/// A validated leaf with the parameters and inputs it needs.
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    plan: Plan,
    /// `(C name, kind)` of its scalar parameters, in launch order.
    pub scalars: Vec<(String, ParamKind)>,
    /// `(slot, shape)` of the input chunks it reads.
    pub inputs: Vec<(usize, Vec<usize>)>,
}

/// Checks leaf `i` (`src` over `shape` of `dtype`) as the CPU evaluator does and plans it.
pub(crate) fn plan(
    i: usize,
    src: &LeafSource,
    shape: &[usize],
    dtype: DType,
) -> Result<Leaf, KernelError> {
    let mut scalars = Vec::new();
    let mut inputs = Vec::new();
    let flat_map = |map: &FlatMap| -> Result<FlatMap, KernelError> {
        if map.strides.len() != shape.len() {
            return Err(bad(format!(
                "flat map has {} strides for a rank-{} leaf",
                map.strides.len(),
                shape.len()
            )));
        }
        Ok(map.clone())
    };
    let plan = match src {
        LeafSource::Const(v) => Plan::Const(v.cast(dtype)),
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
            scalars.push((format!("seed{i}"), ParamKind::U64(*seed)));
            scalars.push((format!("stream{i}"), ParamKind::U64(*stream)));
            scalars.push((format!("base{i}"), ParamKind::I64(map.base)));
            match *dist {
                Distribution::Uniform { low, high } => {
                    scalars.push((format!("lo{i}"), ParamKind::F64(low)));
                    scalars.push((format!("range{i}"), ParamKind::F64(high - low)));
                }
                Distribution::Normal { mean, std } => {
                    scalars.push((format!("mean{i}"), ParamKind::F64(mean)));
                    scalars.push((format!("sd{i}"), ParamKind::F64(std)));
                }
                Distribution::RandInt { low, high } => {
                    scalars.push((format!("lo{i}"), ParamKind::I64(low)));
                    scalars.push((
                        format!("range{i}"),
                        ParamKind::U64(high.wrapping_sub(low) as u64),
                    ));
                }
            }
            Plan::Random {
                dist: *dist,
                map: flat_map(map)?,
            }
        }
        LeafSource::Ramp {
            start,
            step,
            pin,
            map,
        } => {
            let int = matches!((start, step), (Scalar::I64(_), Scalar::I64(_)));
            scalars.push((format!("base{i}"), ParamKind::I64(map.base)));
            if int {
                scalars.push((format!("start{i}"), ParamKind::I64(start.as_i64())));
                scalars.push((format!("step{i}"), ParamKind::I64(step.as_i64())));
            } else {
                scalars.push((format!("start{i}"), ParamKind::F64(start.as_f64())));
                scalars.push((format!("step{i}"), ParamKind::F64(step.as_f64())));
            }
            if let Some((at, v)) = pin {
                scalars.push((format!("pinat{i}"), ParamKind::I64(*at)));
                scalars.push((format!("pinval{i}"), ParamKind::F64(*v)));
            }
            Plan::Ramp {
                int,
                pin: pin.is_some(),
                map: flat_map(map)?,
            }
        }
        LeafSource::Chunks { chunks, axes } => {
            for c in chunks {
                if c.start.len() != c.shape.len() {
                    return Err(bad(format!("source chunk {c:?} has a mismatched box")));
                }
                inputs.push((c.input, c.shape.clone()));
            }
            match one_chunk_map(shape, axes, chunks) {
                Some((slot, map)) => Plan::OneChunk { slot, map },
                None => many_chunks(shape, axes, chunks)?,
            }
        }
    };
    Ok(Leaf {
        plan,
        scalars,
        inputs,
    })
}

/// `cpu::fused::one_chunk_map`: if every source index the leaf reads lies in its only
/// chunk, the flat map into that chunk's data.
fn one_chunk_map(
    shape: &[usize],
    axes: &[AxisMap],
    chunks: &[SourceChunk],
) -> Option<(usize, FlatMap)> {
    let [c] = chunks else { return None };
    if c.start.len() != axes.len() || shape.contains(&0) {
        return None;
    }
    let cs = c_strides_i64(&c.shape);
    let mut base = 0i64;
    let mut strides = vec![0i64; shape.len()];
    for (d, a) in axes.iter().enumerate() {
        let span = match a.local_axis {
            Some(k) => a.step.checked_mul(*shape.get(k)? as i64 - 1)?,
            None => 0,
        };
        let end = a.offset.checked_add(span)?;
        let (lo, hi) = (a.offset.min(end), a.offset.max(end));
        if lo < c.start[d] as i64 || hi >= (c.start[d] + c.shape[d]) as i64 {
            return None;
        }
        base += (a.offset - c.start[d] as i64) * cs[d];
        if let Some(k) = a.local_axis {
            strides[k] += a.step * cs[d];
        }
    }
    Some((c.input, FlatMap { base, strides }))
}

/// `cpu::runs::ChunkRuns::new`'s checks, then every chunk's box relative to the offsets.
fn many_chunks(
    shape: &[usize],
    axes: &[AxisMap],
    chunks: &[SourceChunk],
) -> Result<Plan, KernelError> {
    let mut driven = vec![false; shape.len()];
    for a in axes {
        if let Some(k) = a.local_axis {
            if k >= shape.len() || std::mem::replace(&mut driven[k], true) {
                return Err(bad(format!(
                    "axis map {a:?} does not fit a rank-{} leaf",
                    shape.len()
                )));
            }
        }
    }
    if chunks.is_empty() || chunks.iter().any(|c| c.start.len() != axes.len()) {
        return Err(bad(format!(
            "leaf over {} source axes got chunks {chunks:?}",
            axes.len()
        )));
    }
    let chunks = chunks
        .iter()
        .map(|c| ChunkBox {
            slot: c.input,
            lo: c
                .start
                .iter()
                .zip(axes)
                .map(|(&s, a)| s as i64 - a.offset)
                .collect(),
            shape: c.shape.clone(),
        })
        .collect();
    Ok(Plan::ManyChunks {
        axes: axes.to_vec(),
        chunks,
    })
}

/// The declaration of random leaf `i`'s Philox block cache (`None` for other leaves): a
/// thread that reads both elements of one block (the two coordinates of a point in a
/// trailing run, say) computes the block once.
pub(crate) fn cache_decl(leaf: &Leaf, i: usize) -> Option<String> {
    matches!(leaf.plan, Plan::Random { .. })
        .then(|| format!("ts_block_cache pc{i} = {{~0ULL, 0ULL, 0ULL}};"))
}

/// The C expression of the offset `map` gives local flat index `ix` (over `shape`).
fn flat_index(map: &FlatMap, shape: &[usize], ix: &str) -> String {
    Affine::new(shape, std::slice::from_ref(&map.strides)).expr(ix)
}

/// For a random leaf whose elements pair up in Philox blocks along its last axis (length
/// 2, stride 1, an even base and even strides elsewhere, so elements `2m` and `2m + 1` of
/// the local order share one block): the line computing the block of the pair starting at
/// local flat index `first` into the leaf's cache (`ts_prime`); `None` for other leaves.
pub(crate) fn prime(leaf: &Leaf, i: usize, shape: &[usize], first: &str) -> Option<String> {
    let Plan::Random { map, .. } = &leaf.plan else {
        return None;
    };
    let (last, rest) = map.strides.split_last()?;
    let even = |v: i64| v.rem_euclid(2) == 0;
    let pairs =
        *last == 1 && shape.last() == Some(&2) && even(map.base) && rest.iter().all(|&s| even(s));
    pairs.then(|| {
        let at = flat_index(map, shape, first);
        format!("ts_prime(seed{i}, stream{i}, (ts_u64)(base{i} + {at}), &pc{i});")
    })
}

/// Lines declaring `v{i}`, leaf `i`'s value at local flat index `ix` (over `shape`); a
/// random leaf primed by [`prime`] reads lane `lane` (0 or 1) of its cached block instead.
pub(crate) fn emit(
    leaf: &Leaf,
    i: usize,
    shape: &[usize],
    dtype: DType,
    ix: &str,
    lane: Option<usize>,
) -> Vec<String> {
    let t = ctype(dtype);
    let flat = |map: &FlatMap| flat_index(map, shape, ix);
    match &leaf.plan {
        Plan::Const(v) => vec![format!("const {t} v{i} = {};", scalar_lit(*v))],
        Plan::Random { dist, map } => {
            let (name, params) = match dist {
                Distribution::Uniform { .. } => ("uniform", format!("lo{i}, range{i}")),
                Distribution::Normal { .. } => ("normal", format!("mean{i}, sd{i}")),
                Distribution::RandInt { .. } => ("randint", format!("lo{i}, range{i}")),
            };
            let call = match lane {
                Some(lane) => format!("ts_{name}_lane(&pc{i}, {lane}, {params})"),
                None => format!(
                    "ts_{name}(seed{i}, stream{i}, (ts_u64)(base{i} + {}), {params}, &pc{i})",
                    flat(map)
                ),
            };
            vec![format!("const {t} v{i} = {call};")]
        }
        Plan::Ramp { int, pin, map } => {
            let mut lines = vec![format!("const ts_i64 f{i} = base{i} + {};", flat(map))];
            let value = if *int {
                convert(
                    &format!("ts_wadd(start{i}, ts_wmul(step{i}, f{i}))"),
                    DType::I64,
                    dtype,
                )
            } else {
                convert(
                    &format!("ts_add(start{i}, ts_mul(ts_i64_to_f64(f{i}), step{i}))"),
                    DType::F64,
                    dtype,
                )
            };
            let value = if *pin {
                format!(
                    "(f{i} == pinat{i} ? {} : {value})",
                    convert(&format!("pinval{i}"), DType::F64, dtype)
                )
            } else {
                value
            };
            lines.push(format!("const {t} v{i} = {value};"));
            lines
        }
        Plan::OneChunk { slot, map } => vec![format!(
            "const {t} v{i} = in{slot}[{} + {}];",
            i64_lit(map.base),
            flat(map)
        )],
        Plan::ManyChunks { axes, chunks } => many_lines(axes, chunks, i, shape, dtype, ix),
    }
}

/// The chunk search of a many-chunk leaf: the first chunk holding the source index
/// (the CPU's order), or a `TS_FAULT_NO_CHUNK` fault.
fn many_lines(
    axes: &[AxisMap],
    chunks: &[ChunkBox],
    i: usize,
    shape: &[usize],
    dtype: DType,
    ix: &str,
) -> Vec<String> {
    let t = ctype(dtype);
    let mut lines = vec![format!("{t} v{i};"), "{".to_string()];
    // q_d = step_d * m[k_d]: the source index along axis d minus the axis offset, with the
    // range it spans.
    let mut q: Vec<Option<(String, i64, i64)>> = Vec::with_capacity(axes.len());
    for (d, a) in axes.iter().enumerate() {
        match a.local_axis {
            Some(k) if shape[k] > 1 && a.step != 0 => {
                let name = format!("q{i}_{d}");
                lines.push(format!(
                    "    const ts_i64 {name} = {} * {};",
                    axis_index(ix, shape, k),
                    i64_lit(a.step)
                ));
                let end = a.step.saturating_mul(shape[k] as i64 - 1);
                q.push(Some((name, end.min(0), end.max(0))));
            }
            _ => q.push(None),
        }
    }
    let mut first = true;
    let mut closed = false;
    for c in chunks {
        let mut conds = Vec::new();
        let mut reachable = true;
        let cs = c_strides_i64(&c.shape);
        let mut offset = 0i64;
        let mut terms = Vec::new();
        for (d, qd) in q.iter().enumerate() {
            let (lo, hi) = (c.lo[d], c.lo[d] + c.shape[d] as i64);
            offset -= lo * cs[d];
            match qd {
                None => reachable &= lo <= 0 && 0 < hi,
                Some((name, qmin, qmax)) => {
                    if *qmax < lo || *qmin >= hi {
                        reachable = false;
                    } else if *qmin < lo || *qmax >= hi {
                        conds.push(format!(
                            "{name} >= {} && {name} < {}",
                            i64_lit(lo),
                            i64_lit(hi)
                        ));
                    }
                    terms.push(format!("{name} * {}", i64_lit(cs[d])));
                }
            }
        }
        if !reachable {
            continue;
        }
        terms.insert(0, i64_lit(offset));
        let read = format!("v{i} = in{}[{}];", c.slot, terms.join(" + "));
        let kw = if first { "if" } else { "else if" };
        first = false;
        if conds.is_empty() {
            if kw == "if" {
                lines.push(format!("    {read}"));
            } else {
                lines.push(format!("    else {read}"));
            }
            closed = true;
            break;
        }
        lines.push(format!("    {kw} ({}) {read}", conds.join(" && ")));
    }
    if !closed {
        let zero = scalar_lit(Scalar::I64(0).cast(dtype));
        let fail = format!("{{ v{i} = {zero}; ts_fault(faults, TS_FAULT_NO_CHUNK); }}");
        if first {
            lines.push(format!("    {fail}"));
        } else {
            lines.push(format!("    else {fail}"));
        }
    }
    lines.push("}".to_string());
    lines
}

/// C declarations of a leaf's scalar parameters, in launch order.
pub(crate) fn scalar_decl(name: &str, kind: &ParamKind) -> String {
    match kind {
        ParamKind::I64(_) => format!("const ts_i64 {name}"),
        ParamKind::U64(_) => format!("const ts_u64 {name}"),
        _ => format!("const double {name}"),
    }
}
