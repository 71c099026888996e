//! CPU implementations of [`ArrayOp`]: scans, sorts, gathers, membership and distinct values.

use super::{fft, learn, nearest};
use crate::array::{ArrayOp, ScanOp};
use crate::complex::Complex;
use crate::{with_buffer, Buffer, ChunkData, DType, Element, HostTensor, KernelError};
use std::cmp::Ordering;
use std::sync::Arc;

/// Runs one array op.
pub(crate) fn run(op: &ArrayOp, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let out = match op {
        ArrayOp::Scan { op, axis } => scan(*op, *axis, inputs)?,
        ArrayOp::ScanCarry { op, axis } => scan_carry(*op, *axis, inputs)?,
        ArrayOp::Sort { axis, arg } => sort(tensor(inputs, 0)?, *axis, *arg)?,
        ArrayOp::Fft { axis, inverse } => fft::transform(tensor(inputs, 0)?, *axis, *inverse)?,
        ArrayOp::Take { axis, sources } => take(inputs, *axis, sources)?,
        ArrayOp::IsIn { invert } => isin(tensor(inputs, 0)?, tensor(inputs, 1)?, *invert)?,
        ArrayOp::Unique => unique(inputs)?,
        ArrayOp::Require { message } => require(tensor(inputs, 0)?, tensor(inputs, 1)?, message)?,
        ArrayOp::Nearest { k, offset } => {
            return nearest::nearest(tensor(inputs, 0)?, tensor(inputs, 1)?, *k, *offset)
        }
        ArrayOp::NearestMerge { k } => return nearest::merge(inputs, *k),
        ArrayOp::ClusterStats => {
            return learn::cluster_stats(tensor(inputs, 0)?, tensor(inputs, 1)?)
        }
        ArrayOp::LogisticTerms => {
            let (a, y, w) = (tensor(inputs, 0)?, tensor(inputs, 1)?, tensor(inputs, 2)?);
            return learn::logistic_terms(a, y, w);
        }
        ArrayOp::SumParts => return learn::sum_parts(inputs),
    };
    Ok(ChunkData::Tensor(out))
}

fn tensor(inputs: &[Arc<ChunkData>], i: usize) -> Result<&HostTensor, KernelError> {
    inputs
        .get(i)
        .and_then(|c| c.as_tensor())
        .ok_or_else(|| KernelError::BadInput(format!("array op: input {i} is not a tensor")))
}

/// `(outer, n, inner)`: a C-order tensor of `shape` seen as lanes of `n` along `axis`.
pub(super) fn lanes(shape: &[usize], axis: usize) -> Result<(usize, usize, usize), KernelError> {
    let n = *shape
        .get(axis)
        .ok_or_else(|| KernelError::BadInput(format!("axis {axis} of shape {shape:?}")))?;
    Ok((
        shape[..axis].iter().product(),
        n,
        shape[axis + 1..].iter().product(),
    ))
}

fn without_axis(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    s.remove(axis);
    s
}

/// The arithmetic a scan accumulates with.
trait Accumulate: Element {
    fn combine(op: ScanOp, a: Self, b: Self) -> Self;
    fn identity(op: ScanOp) -> Self;
}

macro_rules! int_accumulate {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            fn combine(op: ScanOp, a: $t, b: $t) -> $t {
                match op {
                    ScanOp::Sum => a.wrapping_add(b),
                    ScanOp::Prod => a.wrapping_mul(b),
                }
            }
            fn identity(op: ScanOp) -> $t {
                match op {
                    ScanOp::Sum => 0,
                    ScanOp::Prod => 1,
                }
            }
        }
    )*};
}
int_accumulate!(i64, u64);

macro_rules! float_accumulate {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            fn combine(op: ScanOp, a: $t, b: $t) -> $t {
                match op {
                    ScanOp::Sum => a + b,
                    ScanOp::Prod => a * b,
                }
            }
            fn identity(op: ScanOp) -> $t {
                match op {
                    ScanOp::Sum => 0.0,
                    ScanOp::Prod => 1.0,
                }
            }
        }
    )*};
}
float_accumulate!(f32, f64);

macro_rules! complex_accumulate {
    ($($t:ty),*) => {$(
        impl Accumulate for Complex<$t> {
            fn combine(op: ScanOp, a: Self, b: Self) -> Self {
                match op {
                    ScanOp::Sum => a + b,
                    ScanOp::Prod => a * b,
                }
            }
            fn identity(op: ScanOp) -> Self {
                match op {
                    ScanOp::Sum => Complex::new(0.0, 0.0),
                    ScanOp::Prod => Complex::new(1.0, 0.0),
                }
            }
        }
    )*};
}
complex_accumulate!(f32, f64);

/// Runs `f` on the accumulation buffer's typed vector (int64, uint64, float32 or float64).
macro_rules! with_accumulator {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            Buffer::I64($v) => $body,
            Buffer::U64($v) => $body,
            Buffer::F32($v) => $body,
            Buffer::F64($v) => $body,
            Buffer::C64($v) => $body,
            Buffer::C128($v) => $body,
            other => {
                return Err(KernelError::UnsupportedDType {
                    op: "scan accumulator".into(),
                    dtype: other.dtype(),
                })
            }
        }
    };
}

/// The carry of each lane: `carry` (a slice of `outer * inner`) or the identity.
fn start<T: Accumulate>(op: ScanOp, carry: Option<&[T]>, o: usize, inner: usize) -> Vec<T> {
    match carry {
        Some(c) => c[o * inner..(o + 1) * inner].to_vec(),
        None => vec![T::identity(op); inner],
    }
}

fn scan_lanes<T: Accumulate>(
    op: ScanOp,
    v: &mut [T],
    carry: Option<&[T]>,
    (outer, n, inner): (usize, usize, usize),
    keep_running: bool,
) -> Vec<T> {
    let mut totals = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let mut acc = start(op, carry, o, inner);
        for k in 0..n {
            let row = &mut v[(o * n + k) * inner..][..inner];
            for (a, x) in acc.iter_mut().zip(row.iter_mut()) {
                *a = T::combine(op, *a, *x);
                if keep_running {
                    *x = *a;
                }
            }
        }
        totals.extend(acc);
    }
    totals
}

/// Typed view of the optional carry input, checked against the accumulator's dtype.
fn carry_of<T: Element>(
    carry: Option<&HostTensor>,
    want: usize,
) -> Result<Option<&[T]>, KernelError> {
    carry
        .map(|c| {
            c.as_slice::<T>()
                .filter(|s| s.len() == want)
                .ok_or_else(|| {
                    KernelError::BadInput("scan carry of the wrong dtype or size".into())
                })
        })
        .transpose()
}

fn scan(op: ScanOp, axis: usize, inputs: &[Arc<ChunkData>]) -> Result<HostTensor, KernelError> {
    let x = tensor(inputs, 0)?;
    let carry = inputs.get(1).map(|_| tensor(inputs, 1)).transpose()?;
    let shape = lanes(x.shape(), axis)?;
    let mut acc = x.data().cast(op.result_dtype(x.dtype()));
    with_accumulator!(&mut acc, v => {
        let c = carry_of(carry, shape.0 * shape.2)?;
        scan_lanes(op, v, c, shape, true);
    });
    HostTensor::new(x.shape().to_vec(), acc)
}

fn scan_carry(
    op: ScanOp,
    axis: usize,
    inputs: &[Arc<ChunkData>],
) -> Result<HostTensor, KernelError> {
    let (carry, x) = match inputs.len() {
        1 => (None, tensor(inputs, 0)?),
        _ => (Some(tensor(inputs, 0)?), tensor(inputs, 1)?),
    };
    let shape = lanes(x.shape(), axis)?;
    let mut acc = x.data().cast(op.result_dtype(x.dtype()));
    let totals = with_accumulator!(&mut acc, v => {
        let c = carry_of(carry, shape.0 * shape.2)?;
        Element::into_buffer(scan_lanes(op, v, c, shape, false))
    });
    HostTensor::new(without_axis(x.shape(), axis), totals)
}

/// Ascending with NaN after every number (NumPy's sort order).
fn nan_last<T: Element>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

fn sort(x: &HostTensor, axis: usize, arg: bool) -> Result<HostTensor, KernelError> {
    let (outer, n, inner) = lanes(x.shape(), axis)?;
    let data = with_buffer!(x.data(), v => {
        let mut order: Vec<usize> = (0..n).collect();
        let mut values = Vec::with_capacity(if arg { 0 } else { v.len() });
        let mut positions = vec![0i64; if arg { v.len() } else { 0 }];
        if !arg {
            values.resize(v.len(), v.first().copied().unwrap_or_default());
        }
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| (o * n + k) * inner + i;
                order.iter_mut().enumerate().for_each(|(k, p)| *p = k);
                order.sort_by(|&a, &b| nan_last(&v[at(a)], &v[at(b)]));
                for (k, &p) in order.iter().enumerate() {
                    if arg {
                        positions[at(k)] = p as i64;
                    } else {
                        values[at(k)] = v[at(p)];
                    }
                }
            }
        }
        if arg {
            Buffer::I64(positions)
        } else {
            Element::into_buffer(values)
        }
    });
    HostTensor::new(x.shape().to_vec(), data)
}

fn take(
    inputs: &[Arc<ChunkData>],
    axis: usize,
    sources: &[(u32, u64)],
) -> Result<HostTensor, KernelError> {
    let parts = (0..inputs.len())
        .map(|i| tensor(inputs, i))
        .collect::<Result<Vec<_>, _>>()?;
    let first = parts
        .first()
        .ok_or_else(|| KernelError::BadInput("take without inputs".into()))?;
    let (outer, _, inner) = lanes(first.shape(), axis)?;
    let mut shape = first.shape().to_vec();
    shape[axis] = sources.len();
    let mut out = Buffer::with_capacity(first.dtype(), outer * sources.len() * inner);
    with_buffer!(&mut out, o => {
        for outer_i in 0..outer {
            for &(src, pos) in sources {
                let part = parts
                    .get(src as usize)
                    .ok_or_else(|| KernelError::BadInput(format!("take: no input {src}")))?;
                let n = part.shape().get(axis).copied().unwrap_or(0);
                let values = Element::slice(part.data())
                    .ok_or_else(|| KernelError::BadInput("take: inputs differ in dtype".into()))?;
                let at = (outer_i * n + pos as usize) * inner;
                let run = values.get(at..at + inner).ok_or_else(|| {
                    KernelError::BadInput(format!("take: position {pos} past input {src}"))
                })?;
                o.extend_from_slice(run);
            }
        }
    });
    HostTensor::new(shape, out)
}

fn isin(x: &HostTensor, test: &HostTensor, invert: bool) -> Result<HostTensor, KernelError> {
    let dtype = DType::promote(x.dtype(), test.dtype());
    let (xs, ts) = (x.data().cast(dtype), test.data().cast(dtype));
    let hits: Vec<bool> = with_buffer!(&xs, v => {
        let mut set: Vec<_> = Element::slice(&ts)
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(|t| !Element::is_nan(*t))
            .collect();
        set.sort_by(nan_last);
        v.iter()
            .map(|a| set.binary_search_by(|t| nan_last(t, a)).is_ok() != invert)
            .collect()
    });
    HostTensor::new(x.shape().to_vec(), Buffer::Bool(hits))
}

fn unique(inputs: &[Arc<ChunkData>]) -> Result<HostTensor, KernelError> {
    let dtype = tensor(inputs, 0)?.dtype();
    let mut all = Buffer::with_capacity(dtype, 0);
    with_buffer!(&mut all, out => {
        for i in 0..inputs.len() {
            let values = Element::slice(tensor(inputs, i)?.data())
                .ok_or_else(|| KernelError::BadInput("unique: inputs differ in dtype".into()))?;
            out.extend_from_slice(values);
        }
        out.sort_by(nan_last);
        out.dedup_by(|a, b| nan_last(a, b) == Ordering::Equal);
    });
    HostTensor::new(vec![all.len()], all)
}

fn require(x: &HostTensor, ok: &HostTensor, message: &str) -> Result<HostTensor, KernelError> {
    let ok = ok
        .as_slice::<bool>()
        .ok_or_else(|| KernelError::BadInput("require: the condition is not bool".into()))?;
    if ok.iter().all(|&b| b) {
        Ok(x.clone())
    } else {
        Err(KernelError::InvalidValue(message.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(shape: &[usize], data: Buffer) -> Arc<ChunkData> {
        Arc::new(ChunkData::Tensor(
            HostTensor::new(shape.to_vec(), data).unwrap(),
        ))
    }

    fn out(op: ArrayOp, inputs: &[Arc<ChunkData>]) -> HostTensor {
        match run(&op, inputs).unwrap() {
            ChunkData::Tensor(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scans_carry_across_chunks_along_either_axis() {
        // [[1, 2, 3], [4, 5, 6]] as int32: cumsum along 0 and 1, in int64.
        let x = chunk(&[2, 3], Buffer::I32(vec![1, 2, 3, 4, 5, 6]));
        let along0 = out(
            ArrayOp::Scan {
                op: ScanOp::Sum,
                axis: 0,
            },
            std::slice::from_ref(&x),
        );
        assert_eq!(along0.data(), &Buffer::I64(vec![1, 2, 3, 5, 7, 9]));
        let along1 = out(
            ArrayOp::Scan {
                op: ScanOp::Prod,
                axis: 1,
            },
            std::slice::from_ref(&x),
        );
        assert_eq!(along1.data(), &Buffer::I64(vec![1, 2, 6, 4, 20, 120]));
        // The carry after x along axis 1 is the row totals; a second chunk starts there.
        let carry = Arc::new(ChunkData::Tensor(out(
            ArrayOp::ScanCarry {
                op: ScanOp::Sum,
                axis: 1,
            },
            std::slice::from_ref(&x),
        )));
        assert_eq!(carry.as_tensor().unwrap().data(), &Buffer::I64(vec![6, 15]));
        let next = out(
            ArrayOp::Scan {
                op: ScanOp::Sum,
                axis: 1,
            },
            &[x, carry.clone()],
        );
        assert_eq!(next.data(), &Buffer::I64(vec![7, 9, 12, 19, 24, 30]));
        let twice = out(
            ArrayOp::ScanCarry {
                op: ScanOp::Sum,
                axis: 1,
            },
            &[carry, chunk(&[2, 1], Buffer::I64(vec![100, 200]))],
        );
        assert_eq!(twice.data(), &Buffer::I64(vec![106, 215]));
    }

    #[test]
    fn sorts_put_nan_last_and_keep_ties_in_order() {
        let x = chunk(&[5], Buffer::F64(vec![3.0, f64::NAN, 1.0, 3.0, -2.0]));
        let s = out(
            ArrayOp::Sort {
                axis: 0,
                arg: false,
            },
            std::slice::from_ref(&x),
        );
        let v = s.as_slice::<f64>().unwrap();
        assert_eq!(&v[..4], &[-2.0, 1.0, 3.0, 3.0]);
        assert!(v[4].is_nan());
        let a = out(ArrayOp::Sort { axis: 0, arg: true }, &[x]);
        assert_eq!(a.data(), &Buffer::I64(vec![4, 2, 0, 3, 1]));
        // Along axis 0 of [[3, 1], [2, 5]]: columns sorted.
        let m = chunk(&[2, 2], Buffer::I64(vec![3, 1, 2, 5]));
        let cols = out(
            ArrayOp::Sort {
                axis: 0,
                arg: false,
            },
            &[m],
        );
        assert_eq!(cols.data(), &Buffer::I64(vec![2, 1, 3, 5]));
    }

    #[test]
    fn take_isin_and_unique() {
        let a = chunk(&[2, 2], Buffer::I64(vec![0, 1, 10, 11]));
        let b = chunk(&[2, 1], Buffer::I64(vec![2, 12]));
        let t = out(
            ArrayOp::Take {
                axis: 1,
                sources: vec![(1, 0), (0, 0), (0, 0)],
            },
            &[a, b],
        );
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.data(), &Buffer::I64(vec![2, 0, 0, 12, 10, 10]));
        let x = chunk(&[4], Buffer::I64(vec![1, 2, 3, 4]));
        let test = chunk(&[3], Buffer::F64(vec![2.0, 4.5, f64::NAN]));
        assert_eq!(
            out(ArrayOp::IsIn { invert: false }, &[x.clone(), test.clone()]).data(),
            &Buffer::Bool(vec![false, true, false, false])
        );
        assert_eq!(
            out(ArrayOp::IsIn { invert: true }, &[x, test]).data(),
            &Buffer::Bool(vec![true, false, true, true])
        );
        let u = out(
            ArrayOp::Unique,
            &[
                chunk(&[3], Buffer::F64(vec![2.0, f64::NAN, 1.0])),
                chunk(&[3], Buffer::F64(vec![f64::NAN, 2.0, -0.5])),
            ],
        );
        let v = u.as_slice::<f64>().unwrap();
        assert_eq!(&v[..3], &[-0.5, 1.0, 2.0]);
        assert!(v[3].is_nan() && v.len() == 4);
    }
}
