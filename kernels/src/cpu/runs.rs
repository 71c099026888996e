//! Index runs: how a contiguous range of a leaf's local (C-order) flat indices maps onto
//! its source, split into runs that are affine in the source (`start + k * stride`).

use crate::expr::{AxisMap, FlatMap, SourceChunk};
use crate::tensor::c_strides;
use crate::KernelError;

/// One run: `len` outputs from `out` on, read from source positions `src + k * stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// Offset in the output range.
    pub out: usize,
    /// Source flat index of the first element.
    pub src: i64,
    /// Source step between consecutive elements.
    pub stride: i64,
    /// Number of elements.
    pub len: usize,
}

/// A [`FlatMap`] over a local shape, with adjacent axes merged where the map allows.
#[derive(Clone, Debug)]
pub(crate) struct FlatRuns {
    shape: Vec<usize>,
    strides: Vec<i64>,
    base: i64,
}

impl FlatRuns {
    /// Coalesces `map` over `shape` (merging axes keeps C-order flat indices unchanged).
    pub fn new(shape: &[usize], map: &FlatMap) -> Result<FlatRuns, KernelError> {
        if map.strides.len() != shape.len() {
            return Err(KernelError::BadInput(format!(
                "flat map has {} strides for a rank-{} leaf",
                map.strides.len(),
                shape.len()
            )));
        }
        let mut dims: Vec<(usize, i64)> = Vec::with_capacity(shape.len().max(1));
        for (&n, &s) in shape.iter().zip(&map.strides) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some((pn, ps)) if *ps == s * n as i64 => {
                    *pn *= n;
                    *ps = s;
                }
                _ => dims.push((n, s)),
            }
        }
        if dims.is_empty() {
            dims.push((1, 0));
        }
        Ok(FlatRuns {
            shape: dims.iter().map(|d| d.0).collect(),
            strides: dims.iter().map(|d| d.1).collect(),
            base: map.base,
        })
    }

    /// Calls `f` for each run covering local flat indices `lo..hi`.
    #[inline(always)]
    pub fn for_each(&self, lo: usize, hi: usize, mut f: impl FnMut(Run)) {
        let nd = self.shape.len();
        let last = nd - 1;
        let mut m = unravel(lo, &self.shape);
        let mut pos = lo;
        while pos < hi {
            let len = (self.shape[last] - m[last]).min(hi - pos);
            let src = self.base
                + m.iter()
                    .zip(&self.strides)
                    .map(|(&i, &s)| i as i64 * s)
                    .sum::<i64>();
            f(Run {
                out: pos - lo,
                src,
                stride: self.strides[last],
                len,
            });
            pos += len;
            advance(&mut m, &self.shape, len);
        }
    }
}

/// The multi-index of C-order flat index `flat` in `shape`.
pub(crate) fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut m = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            m[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    m
}

/// Advances multi-index `m` by `by` steps along the last axis, carrying into earlier axes.
pub(crate) fn advance(m: &mut [usize], shape: &[usize], by: usize) {
    let Some(last) = m.len().checked_sub(1) else {
        return;
    };
    m[last] += by;
    let mut d = last;
    while m[d] >= shape[d] && d > 0 {
        let carry = m[d] / shape[d];
        m[d] %= shape[d];
        d -= 1;
        m[d] += carry;
    }
}

/// Gathers a leaf's values from the chunks of a materialized source.
#[derive(Clone, Debug)]
pub(crate) struct ChunkRuns {
    local_shape: Vec<usize>,
    axes: Vec<AxisMap>,
    chunks: Vec<(SourceChunk, Vec<usize>)>,
    /// The source axis driven by the last local axis, if any.
    moving: Option<usize>,
}

impl ChunkRuns {
    /// Checks the map (each local axis drives at most one source axis) and the chunks.
    pub fn new(
        local_shape: &[usize],
        axes: &[AxisMap],
        chunks: &[SourceChunk],
    ) -> Result<ChunkRuns, KernelError> {
        let mut driven = vec![false; local_shape.len()];
        for a in axes {
            if let Some(k) = a.local_axis {
                if k >= local_shape.len() || std::mem::replace(&mut driven[k], true) {
                    return Err(KernelError::BadInput(format!(
                        "axis map {a:?} does not fit a rank-{} leaf",
                        local_shape.len()
                    )));
                }
            }
        }
        if chunks.is_empty() || chunks.iter().any(|c| c.start.len() != axes.len()) {
            return Err(KernelError::BadInput(format!(
                "leaf over {} source axes got chunks {chunks:?}",
                axes.len()
            )));
        }
        let last = local_shape.len().checked_sub(1);
        Ok(ChunkRuns {
            local_shape: local_shape.to_vec(),
            axes: axes.to_vec(),
            chunks: chunks
                .iter()
                .map(|c| (c.clone(), c_strides(&c.shape)))
                .collect(),
            moving: last.and_then(|l| axes.iter().position(|a| a.local_axis == Some(l))),
        })
    }

    /// Calls `f(input slot, run)` for each run covering local flat indices `lo..hi`; `run.src`
    /// is a flat index into that input chunk.
    pub fn for_each(
        &self,
        lo: usize,
        hi: usize,
        mut f: impl FnMut(usize, Run),
    ) -> Result<(), KernelError> {
        let shape: &[usize] = if self.local_shape.is_empty() {
            &[1]
        } else {
            &self.local_shape
        };
        let last = shape.len() - 1;
        let mut m = unravel(lo, shape);
        let mut pos = lo;
        let mut src = vec![0i64; self.axes.len()];
        while pos < hi {
            let run_len = (shape[last] - m[last]).min(hi - pos);
            for (s, a) in src.iter_mut().zip(&self.axes) {
                *s = a.offset + a.local_axis.map_or(0, |k| a.step * m[k] as i64);
            }
            let mut done = 0;
            while done < run_len {
                let (chunk, strides) = self.find(&src)?;
                let rel: i64 = src
                    .iter()
                    .zip(&chunk.start)
                    .zip(strides)
                    .map(|((&s, &c0), &st)| (s - c0 as i64) * st as i64)
                    .sum();
                let (fit, stride) = match self.moving {
                    None => (run_len - done, 0),
                    Some(d) => {
                        let step = self.axes[d].step;
                        let lo_d = chunk.start[d] as i64;
                        let hi_d = lo_d + chunk.shape[d] as i64;
                        let fit = if step > 0 {
                            (hi_d - src[d] + step - 1) / step
                        } else if step < 0 {
                            (src[d] - lo_d) / -step + 1
                        } else {
                            i64::MAX
                        };
                        let fit = (fit.max(1) as usize).min(run_len - done);
                        (fit, step * strides[d] as i64)
                    }
                };
                f(
                    chunk.input,
                    Run {
                        out: pos - lo + done,
                        src: rel,
                        stride,
                        len: fit,
                    },
                );
                done += fit;
                if let Some(d) = self.moving {
                    src[d] += self.axes[d].step * fit as i64;
                }
            }
            pos += run_len;
            advance(&mut m, shape, run_len);
        }
        Ok(())
    }

    fn find(&self, src: &[i64]) -> Result<(&SourceChunk, &[usize]), KernelError> {
        self.chunks
            .iter()
            .find(|(c, _)| {
                src.iter()
                    .zip(c.start.iter().zip(&c.shape))
                    .all(|(&s, (&c0, &n))| s >= c0 as i64 && s < (c0 + n) as i64)
            })
            .map(|(c, s)| (c, s.as_slice()))
            .ok_or_else(|| {
                KernelError::BadInput(format!("no input chunk holds source index {src:?}"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(r: &FlatRuns, lo: usize, hi: usize) -> Vec<Run> {
        let mut v = Vec::new();
        r.for_each(lo, hi, |run| v.push(run));
        v
    }

    #[test]
    fn contiguous_axes_merge_into_one_run() {
        let map = FlatMap {
            base: 10,
            strides: vec![2, 1],
        };
        let r = FlatRuns::new(&[5, 2], &map).unwrap();
        assert_eq!(
            collect(&r, 3, 9),
            vec![Run {
                out: 0,
                src: 13,
                stride: 1,
                len: 6
            }]
        );
    }

    #[test]
    fn strided_slices_give_one_run_per_row() {
        // x[::2, ::2] of a 4x6 tensor: local shape 2x3.
        let map = FlatMap {
            base: 0,
            strides: vec![12, 2],
        };
        let r = FlatRuns::new(&[2, 3], &map).unwrap();
        let runs = collect(&r, 1, 6);
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].src, runs[0].stride, runs[0].len), (2, 2, 2));
        assert_eq!((runs[1].out, runs[1].src, runs[1].len), (2, 12, 3));
    }

    #[test]
    fn chunk_runs_split_at_chunk_borders() {
        // A length-10 source in chunks [0,4) and [4,10), read reversed: src = 9 - m.
        let chunks = vec![
            SourceChunk {
                start: vec![0],
                shape: vec![4],
                input: 0,
            },
            SourceChunk {
                start: vec![4],
                shape: vec![6],
                input: 1,
            },
        ];
        let axes = vec![AxisMap {
            offset: 9,
            local_axis: Some(0),
            step: -1,
        }];
        let g = ChunkRuns::new(&[10], &axes, &chunks).unwrap();
        let mut runs = Vec::new();
        g.for_each(0, 10, |slot, run| runs.push((slot, run)))
            .unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            runs[0],
            (
                1,
                Run {
                    out: 0,
                    src: 5,
                    stride: -1,
                    len: 6
                }
            )
        );
        assert_eq!(
            runs[1],
            (
                0,
                Run {
                    out: 6,
                    src: 3,
                    stride: -1,
                    len: 4
                }
            )
        );
    }

    #[test]
    fn advance_carries() {
        let mut m = vec![0, 2];
        advance(&mut m, &[3, 3], 1);
        assert_eq!(m, vec![1, 0]);
        assert_eq!(unravel(7, &[3, 3]), vec![2, 1]);
    }
}
