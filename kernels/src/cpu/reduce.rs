//! Reduction state: accumulate a chunk's values into per-output slots, merge partials from
//! other chunks (tree reduction), and finish into the result tensor.

use crate::chunk::Partial;
use crate::complex::C128;
use crate::dtype::DType;
use crate::expr::ReduceOp;
use crate::tensor::{Buffer, Element, HostTensor};
use crate::{with_buffer, KernelError};

/// Per-slot state of one reduction (see [`Partial`] for the parts of each op).
pub struct Accumulator {
    op: ReduceOp,
    dtype: DType,
    slots: usize,
    parts: Vec<Buffer>,
    /// Min/max/arg slots take their first value as is.
    seen: Vec<bool>,
}

fn wrong_state(op: ReduceOp) -> KernelError {
    KernelError::BadInput(format!(
        "partial state does not match reduction {}",
        op.name()
    ))
}

/// Sum of a float slice with eight running sums (vectorizes, and is more accurate).
#[inline(always)]
fn sum_f64<T: Element>(v: &[T]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x.to_f64();
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|x| x.to_f64()).sum();
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// Sum of a slice as `complex128` (each part summed as [`sum_f64`] sums).
#[inline(always)]
fn sum_c128<T: Element>(v: &[T]) -> C128 {
    let mut acc = [C128::default(); 4];
    let mut chunks = v.chunks_exact(4);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = *a + x.to_c128();
        }
    }
    let tail = chunks.remainder().iter().map(|x| x.to_c128());
    acc.into_iter()
        .chain(tail)
        .fold(C128::default(), |a, x| a + x)
}

impl Accumulator {
    /// Empty state for `slots` outputs of `op` over values of `dtype`.
    pub fn new(op: ReduceOp, dtype: DType, slots: usize) -> Result<Accumulator, KernelError> {
        let float = dtype.is_float();
        let (zero, one) = (C128::new(0.0, 0.0), C128::new(1.0, 0.0));
        let parts = match op {
            ReduceOp::Sum if dtype.is_complex() => vec![Buffer::C128(vec![zero; slots])],
            ReduceOp::Prod if dtype.is_complex() => vec![Buffer::C128(vec![one; slots])],
            ReduceOp::Mean if dtype.is_complex() => {
                vec![Buffer::C128(vec![zero; slots]), Buffer::I64(vec![0; slots])]
            }
            ReduceOp::Var { .. } | ReduceOp::Std { .. } if dtype.is_complex() => {
                return Err(KernelError::UnsupportedDType {
                    op: op.name().to_string(),
                    dtype,
                })
            }
            ReduceOp::Sum if float => vec![Buffer::F64(vec![0.0; slots])],
            ReduceOp::Sum => vec![Buffer::I64(vec![0; slots])],
            ReduceOp::Prod if float => vec![Buffer::F64(vec![1.0; slots])],
            ReduceOp::Prod => vec![Buffer::I64(vec![1; slots])],
            ReduceOp::Min | ReduceOp::Max => vec![zeros(dtype, slots)],
            ReduceOp::Mean => vec![Buffer::F64(vec![0.0; slots]), Buffer::I64(vec![0; slots])],
            ReduceOp::Var { .. } | ReduceOp::Std { .. } => vec![
                Buffer::I64(vec![0; slots]),
                Buffer::F64(vec![0.0; slots]),
                Buffer::F64(vec![0.0; slots]),
            ],
            ReduceOp::All => vec![Buffer::Bool(vec![true; slots])],
            ReduceOp::Any => vec![Buffer::Bool(vec![false; slots])],
            ReduceOp::CountNonzero => vec![Buffer::I64(vec![0; slots])],
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                vec![zeros(dtype, slots), Buffer::I64(vec![0; slots])]
            }
        };
        Ok(Accumulator {
            op,
            dtype,
            slots,
            parts,
            seen: vec![false; slots],
        })
    }

    /// Folds `vals[start..start + len]` into one slot; element `t` has reduction index `idx0 + t`.
    #[inline(always)]
    pub fn fold_segment(
        &mut self,
        slot: usize,
        vals: &Buffer,
        start: usize,
        len: usize,
        idx0: i64,
    ) -> Result<(), KernelError> {
        if vals.dtype() != self.dtype {
            return Err(wrong_state(self.op));
        }
        with_buffer!(vals, v => self.fold_typed(slot, &v[start..start + len], idx0))
    }

    #[inline(always)]
    fn fold_typed<T: Element>(
        &mut self,
        slot: usize,
        v: &[T],
        idx0: i64,
    ) -> Result<(), KernelError> {
        let op = self.op;
        let first = !std::mem::replace(&mut self.seen[slot], true);
        match (op, self.parts.as_mut_slice()) {
            (ReduceOp::Sum, [Buffer::C128(s)]) => s[slot] = s[slot] + sum_c128(v),
            (ReduceOp::Prod, [Buffer::C128(s)]) => {
                s[slot] = v.iter().fold(s[slot], |a, x| a * x.to_c128())
            }
            (ReduceOp::Mean, [Buffer::C128(s), Buffer::I64(n)]) => {
                s[slot] = s[slot] + sum_c128(v);
                n[slot] += v.len() as i64;
            }
            (ReduceOp::Sum, [Buffer::F64(s)]) => s[slot] += sum_f64(v),
            (ReduceOp::Sum, [Buffer::I64(s)]) => {
                s[slot] = v.iter().fold(s[slot], |a, x| a.wrapping_add(x.to_i64()))
            }
            (ReduceOp::Prod, [Buffer::F64(s)]) => {
                s[slot] = v.iter().fold(s[slot], |a, x| a * x.to_f64())
            }
            (ReduceOp::Prod, [Buffer::I64(s)]) => {
                s[slot] = v.iter().fold(s[slot], |a, x| a.wrapping_mul(x.to_i64()))
            }
            (ReduceOp::Min | ReduceOp::Max, [acc]) => {
                let acc = T::vec_mut(acc).ok_or_else(|| wrong_state(op))?;
                let init = if first { v[0] } else { acc[slot] };
                acc[slot] = if op == ReduceOp::Min {
                    extreme(v, init, |x, best| x < best)
                } else {
                    extreme(v, init, |x, best| x > best)
                };
            }
            (ReduceOp::Mean, [Buffer::F64(s), Buffer::I64(n)]) => {
                s[slot] += sum_f64(v);
                n[slot] += v.len() as i64;
            }
            (
                ReduceOp::Var { .. } | ReduceOp::Std { .. },
                [Buffer::I64(n), Buffer::F64(mean), Buffer::F64(m2)],
            ) => {
                let nb = v.len() as f64;
                let mb = sum_f64(v) / nb;
                let m2b: f64 = v
                    .iter()
                    .map(|x| (x.to_f64() - mb) * (x.to_f64() - mb))
                    .sum();
                merge_moments(
                    (&mut n[slot], &mut mean[slot], &mut m2[slot]),
                    (v.len() as i64, mb, m2b),
                );
            }
            (ReduceOp::All, [Buffer::Bool(s)]) => s[slot] &= v.iter().all(|x| x.is_nonzero()),
            (ReduceOp::Any, [Buffer::Bool(s)]) => s[slot] |= v.iter().any(|x| x.is_nonzero()),
            (ReduceOp::CountNonzero, [Buffer::I64(s)]) => {
                s[slot] += v.iter().filter(|x| x.is_nonzero()).count() as i64
            }
            (ReduceOp::ArgMin | ReduceOp::ArgMax, [val, Buffer::I64(idx)]) => {
                let val = T::vec_mut(val).ok_or_else(|| wrong_state(op))?;
                // The best so far in locals (registers), stored once per segment.
                let (mut best, mut at) = match first {
                    true => (v[0], idx0),
                    false => (val[slot], idx[slot]),
                };
                for (i, &x) in (idx0..).zip(v).skip(usize::from(first)) {
                    if arg_better(op, x, i, best, at) {
                        best = x;
                        at = i;
                    }
                }
                val[slot] = best;
                idx[slot] = at;
            }
            _ => return Err(wrong_state(op)),
        }
        Ok(())
    }

    /// Folds `vals[start + t]` into slot `slot0 + t` for `t < len`, all with reduction index `idx`.
    #[inline(always)]
    pub fn accumulate_run(
        &mut self,
        slot0: usize,
        vals: &Buffer,
        start: usize,
        len: usize,
        idx: i64,
    ) -> Result<(), KernelError> {
        if vals.dtype() != self.dtype {
            return Err(wrong_state(self.op));
        }
        with_buffer!(vals, v => {
            for (t, x) in v[start..start + len].iter().enumerate() {
                self.fold_typed(slot0 + t, std::slice::from_ref(x), idx)?;
            }
        });
        Ok(())
    }

    /// Merges another partial of the same op, dtype and slot count into this one.
    pub fn merge(&mut self, other: &Partial) -> Result<(), KernelError> {
        if other.op != self.op
            || other.input_dtype != self.dtype
            || other.parts.iter().any(|p| p.len() != self.slots)
        {
            return Err(wrong_state(self.op));
        }
        let o: Vec<&Buffer> = other.parts.iter().map(HostTensor::data).collect();
        self.merge_record(&o, 0)
    }

    /// Merges one record of this reduction's state held in `parts` (its parts in order,
    /// as a [`Partial`]'s): slot `s` of the record is element `at + s` of every part, so
    /// records laid end to end in one buffer merge without a partial each.
    pub fn merge_record(&mut self, parts: &[&Buffer], at: usize) -> Result<(), KernelError> {
        let op = self.op;
        let end = at.checked_add(self.slots).ok_or_else(|| wrong_state(op))?;
        if parts.len() != self.parts.len() || parts.iter().any(|p| p.len() < end) {
            return Err(wrong_state(op));
        }
        for (slot, i) in (at..end).enumerate() {
            let first = !std::mem::replace(&mut self.seen[slot], true);
            match (op, self.parts.as_mut_slice(), parts) {
                (ReduceOp::Sum | ReduceOp::Mean, [Buffer::F64(s), ..], [Buffer::F64(t), ..]) => {
                    s[slot] += t[i]
                }
                (ReduceOp::Sum | ReduceOp::Mean, [Buffer::C128(s), ..], [Buffer::C128(t), ..]) => {
                    s[slot] = s[slot] + t[i]
                }
                (ReduceOp::Prod, [Buffer::C128(s)], [Buffer::C128(t)]) => s[slot] = s[slot] * t[i],
                (ReduceOp::Sum | ReduceOp::CountNonzero, [Buffer::I64(s)], [Buffer::I64(t)]) => {
                    s[slot] = s[slot].wrapping_add(t[i])
                }
                (ReduceOp::Prod, [Buffer::F64(s)], [Buffer::F64(t)]) => s[slot] *= t[i],
                (ReduceOp::Prod, [Buffer::I64(s)], [Buffer::I64(t)]) => {
                    s[slot] = s[slot].wrapping_mul(t[i])
                }
                (ReduceOp::All, [Buffer::Bool(s)], [Buffer::Bool(t)]) => s[slot] &= t[i],
                (ReduceOp::Any, [Buffer::Bool(s)], [Buffer::Bool(t)]) => s[slot] |= t[i],
                (ReduceOp::Min | ReduceOp::Max, [acc], [t]) => with_buffer!(acc, a => {
                    let x = element(t, i).ok_or_else(|| wrong_state(op))?;
                    a[slot] = if first { x } else { merge_extreme(op, a[slot], x) };
                }),
                (
                    ReduceOp::ArgMin | ReduceOp::ArgMax,
                    [val, Buffer::I64(idx)],
                    [tv, Buffer::I64(ti)],
                ) => with_buffer!(val, v => {
                    let x = element(tv, i).ok_or_else(|| wrong_state(op))?;
                    if first || arg_better(op, x, ti[i], v[slot], idx[slot]) {
                        v[slot] = x;
                        idx[slot] = ti[i];
                    }
                }),
                (
                    ReduceOp::Var { .. } | ReduceOp::Std { .. },
                    [Buffer::I64(n), Buffer::F64(m), Buffer::F64(q)],
                    [Buffer::I64(tn), Buffer::F64(tm), Buffer::F64(tq)],
                ) => merge_moments(
                    (&mut n[slot], &mut m[slot], &mut q[slot]),
                    (tn[i], tm[i], tq[i]),
                ),
                _ => return Err(wrong_state(op)),
            }
            if let (ReduceOp::Mean, [_, Buffer::I64(n)], [_, Buffer::I64(tn)]) =
                (op, self.parts.as_mut_slice(), parts)
            {
                n[slot] += tn[i];
            }
        }
        Ok(())
    }

    /// The state as a [`Partial`] whose parts have `shape`.
    pub fn into_partial(self, shape: &[usize]) -> Result<Partial, KernelError> {
        Ok(Partial {
            op: self.op,
            input_dtype: self.dtype,
            parts: self
                .parts
                .into_iter()
                .map(|b| HostTensor::new(shape.to_vec(), b))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Resumes from a partial.
    pub fn from_partial(p: &Partial) -> Result<Accumulator, KernelError> {
        let slots = p.parts.first().map_or(0, HostTensor::len);
        let mut acc = Accumulator::new(p.op, p.input_dtype, slots)?;
        acc.merge(p)?;
        Ok(acc)
    }

    /// The finished result with `shape`.
    pub fn finish(self, shape: Vec<usize>) -> Result<HostTensor, KernelError> {
        let out_dtype = self.op.result_dtype(self.dtype);
        let data = match (self.op, self.parts) {
            (ReduceOp::Mean, parts) => match parts.as_slice() {
                [Buffer::F64(s), Buffer::I64(n)] => {
                    Buffer::F64(s.iter().zip(n).map(|(s, &n)| s / n as f64).collect())
                }
                [Buffer::C128(s), Buffer::I64(n)] => Buffer::C128(
                    s.iter()
                        .zip(n)
                        .map(|(s, &n)| C128::new(s.re / n as f64, s.im / n as f64))
                        .collect(),
                ),
                _ => return Err(wrong_state(self.op)),
            },
            (ReduceOp::Var { ddof } | ReduceOp::Std { ddof }, parts) => match parts.as_slice() {
                [Buffer::I64(n), _, Buffer::F64(m2)] => {
                    let sqrt = matches!(self.op, ReduceOp::Std { .. });
                    Buffer::F64(
                        n.iter()
                            .zip(m2)
                            .map(|(&n, m2)| {
                                let dof = n - i64::from(ddof);
                                let v = if dof > 0 { m2 / dof as f64 } else { f64::NAN };
                                if sqrt {
                                    v.sqrt()
                                } else {
                                    v
                                }
                            })
                            .collect(),
                    )
                }
                _ => return Err(wrong_state(self.op)),
            },
            (ReduceOp::ArgMin | ReduceOp::ArgMax, mut parts) => {
                parts.pop().ok_or_else(|| wrong_state(self.op))?
            }
            (_, mut parts) => parts.pop().ok_or_else(|| wrong_state(self.op))?,
        };
        let mut out = Buffer::with_capacity(out_dtype, data.len());
        super::elementwise::cast(&data, data.len(), &mut out);
        HostTensor::new(shape, out)
    }
}

/// The minimum or maximum (`better(x, best)`) of `init` and `v`, NaN-propagating: eight
/// running lanes and a separate NaN check, so the loop vectorizes.
#[inline(always)]
fn extreme<T: Element>(v: &[T], init: T, better: impl Fn(T, T) -> bool) -> T {
    if init.is_nan() {
        return init;
    }
    let mut lanes = [init; 8];
    let mut nan = false;
    let (blocks, tail) = v.as_chunks::<8>();
    for block in blocks {
        for (lane, &x) in lanes.iter_mut().zip(block) {
            nan |= x.is_nan();
            *lane = if better(x, *lane) { x } else { *lane };
        }
    }
    if nan {
        return v.iter().copied().find(|x| x.is_nan()).unwrap_or(init);
    }
    tail.iter().chain(&lanes).copied().fold(init, |best, x| {
        if x.is_nan() || better(x, best) {
            x
        } else {
            best
        }
    })
}

/// The minimum (for `ReduceOp::Min`) or maximum of two partial results, NaN-propagating.
fn merge_extreme<T: Element>(op: ReduceOp, acc: T, x: T) -> T {
    if op == ReduceOp::Min {
        extreme(&[x], acc, |x, best| x < best)
    } else {
        extreme(&[x], acc, |x, best| x > best)
    }
}

/// Chan et al.'s merge of (count, mean, M2) moments.
fn merge_moments(a: (&mut i64, &mut f64, &mut f64), b: (i64, f64, f64)) {
    let (na, ma, qa) = a;
    let (nb, mb, qb) = b;
    if nb == 0 {
        return;
    }
    if *na == 0 {
        (*na, *ma, *qa) = (nb, mb, qb);
        return;
    }
    let n = *na + nb;
    let delta = mb - *ma;
    *ma += delta * nb as f64 / n as f64;
    *qa += qb + delta * delta * (*na as f64) * (nb as f64) / n as f64;
    *na = n;
}

/// True when candidate `(x, i)` beats the current `(best, bi)` for argmin/argmax:
/// NaN wins (first one), then the extreme value, then the lower index.
#[inline(always)]
fn arg_better<T: Element>(op: ReduceOp, x: T, i: i64, best: T, bi: i64) -> bool {
    if best.is_nan() {
        return x.is_nan() && i < bi;
    }
    if x.is_nan() {
        return true;
    }
    let strictly = if op == ReduceOp::ArgMin {
        x < best
    } else {
        x > best
    };
    strictly || (x == best && i < bi)
}

fn zeros(dtype: DType, n: usize) -> Buffer {
    let mut b = Buffer::with_capacity(dtype, n);
    with_buffer!(&mut b, v => v.resize(n, Default::default()));
    b
}

fn element<T: Element>(b: &Buffer, i: usize) -> Option<T> {
    T::slice(b).and_then(|s| s.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_propagate_nan_from_the_body_or_the_tail() {
        let mut v: Vec<f64> = (0..21).map(|i| f64::from((i * 7) % 11)).collect();
        assert_eq!(extreme(&v, v[0], |x, b| x > b), 10.0);
        assert_eq!(extreme(&v, v[0], |x, b| x < b), 0.0);
        v[3] = f64::NAN;
        assert!(extreme(&v, 1.0, |x, b| x > b).is_nan());
        v[3] = 1.0;
        v[20] = f64::NAN;
        assert!(extreme(&v, 1.0, |x, b| x < b).is_nan());
        assert_eq!(extreme(&[3i64, -9, 4], 0, |x, b| x < b), -9);
    }

    #[test]
    fn partials_merge_like_one_pass() {
        let vals = Buffer::F64(vec![4.0, 1.0, 7.0, 2.0, 9.0, 3.0]);
        let mut whole = Accumulator::new(ReduceOp::Var { ddof: 1 }, DType::F64, 1).unwrap();
        whole.fold_segment(0, &vals, 0, 6, 0).unwrap();
        let mut a = Accumulator::new(ReduceOp::Var { ddof: 1 }, DType::F64, 1).unwrap();
        a.fold_segment(0, &vals, 0, 2, 0).unwrap();
        let mut b = Accumulator::new(ReduceOp::Var { ddof: 1 }, DType::F64, 1).unwrap();
        b.fold_segment(0, &vals, 2, 4, 2).unwrap();
        a.merge(&b.into_partial(&[]).unwrap()).unwrap();
        let (x, y) = (whole.finish(vec![]).unwrap(), a.finish(vec![]).unwrap());
        let (x, y) = (x.item().unwrap().as_f64(), y.item().unwrap().as_f64());
        // mean 13/3; squared deviations sum to 142/3; / (6 - 1)
        assert!(
            (x - 142.0 / 15.0).abs() < 1e-12 && (x - y).abs() < 1e-12,
            "{x} {y}"
        );
    }
}
