//! A joined table's columns gathered on the device: each output row's value of a column of
//! 1, 2, 4 or 8-byte values at the probe or build row its matches name (`ts_gather1/2/4/8`),
//! and its validity where the column has nulls or a left join's build row may be missing
//! (`ts_gather_valid`, an Arrow bitmap). The key columns the matching copied in are reused;
//! other columns are copied in once. Strings, booleans and wider values stay the CPU's.

use super::frame::{i64_of, launch, DevCol, FrameFns, GpuFrames, BLOCK};
use super::join::DevMatches;
use super::{driver, Gpu, Timer};
use crate::frame::join::{JoinMatches, MatchSide, Matches};
use crate::{ChunkData, KernelError};
use arrow::array::{make_array, Array, ArrayData, ArrayRef};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow::datatypes::ArrowNativeType;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, PushKernelArg};
use std::sync::Arc;
use std::time::Duration;

/// Matches on the device, gathering through a [`GpuFrames`] (whose device time they add to).
pub(super) struct GpuMatches<'a> {
    pub frames: &'a GpuFrames<'a>,
    pub matches: DevMatches,
}

impl JoinMatches<KernelError> for GpuMatches<'_> {
    fn len(&self) -> usize {
        self.matches.total
    }

    fn gather(&self, side: MatchSide, col: &ArrayRef) -> Result<Option<ArrayRef>, KernelError> {
        let f = self.frames;
        let found = f
            .gpu
            .gather(f.stream, f.owners, &self.matches, side, col, f.timed)?;
        Ok(found.map(|(array, took)| {
            f.took.set(f.took.get() + took);
            array
        }))
    }

    fn into_pairs(self: Box<Self>) -> Result<Matches, KernelError> {
        self.matches
            .pairs_on_host(self.frames.gpu, self.frames.stream)
    }
}

impl Gpu {
    /// `col` (of the `side` table) at the output rows of `m`, with the kernels' device time
    /// when `timed`; `None` where its layout is not one the kernels gather.
    pub(super) fn gather(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        m: &DevMatches,
        side: MatchSide,
        col: &ArrayRef,
        timed: bool,
    ) -> Result<Option<(ArrayRef, Duration)>, KernelError> {
        let width = match col.data_type().primitive_width() {
            Some(w @ (1 | 2 | 4 | 8)) => w,
            _ => return Ok(None),
        };
        let uploaded;
        let src = match m.key_copy(side, col) {
            Some(key) => key,
            None => match self.col_copy(stream, owners, col, None)? {
                Some(c) => {
                    uploaded = c;
                    &*uploaded
                }
                None => return Ok(None),
            },
        };
        let fns = self.frame_fns()?;
        let mut g = Gathering {
            gpu: self,
            stream,
            fns: &fns,
            src,
            idx: match side {
                MatchSide::Probe => &m.probe,
                MatchSide::Build => &m.build,
            },
            total: m.total,
            may_miss: side == MatchSide::Build && m.unmatched,
            timer: Timer::new(stream, timed)?,
        };
        let (values, nulls) = match width {
            1 => g.run::<u8>(&fns.gather1)?,
            2 => g.run::<u16>(&fns.gather2)?,
            4 => g.run::<u32>(&fns.gather4)?,
            _ => g.run::<u64>(&fns.gather8)?,
        };
        let data = ArrayData::builder(col.data_type().clone())
            .len(m.total)
            .add_buffer(values)
            .nulls(nulls)
            .build()
            .map_err(|e| KernelError::BadInput(format!("a gathered join column: {e}")))?;
        Ok(Some((make_array(data), g.timer.elapsed()?)))
    }
}

/// One column's gather.
struct Gathering<'a> {
    gpu: &'a Gpu,
    stream: &'a Arc<CudaStream>,
    fns: &'a FrameFns,
    src: &'a DevCol,
    /// The output rows' rows of the column's table.
    idx: &'a CudaSlice<u32>,
    total: usize,
    /// Whether `idx` may name no row.
    may_miss: bool,
    timer: Timer,
}

impl Gathering<'_> {
    /// Gathers the values as `T` with `gather` (and the validity where some may be null),
    /// timing the kernels alone, then copies them back.
    fn run<T: DeviceRepr + ArrowNativeType>(
        &mut self,
        gather: &CudaFunction,
    ) -> Result<(Buffer, Option<NullBuffer>), KernelError> {
        let (stream, total) = (self.stream, self.total);
        let n = i64_of(total)?;
        self.timer.start(stream)?;
        // SAFETY: ts_gather writes all `total` elements; the one allocated for an empty
        // output is truncated away unread.
        let out = unsafe { stream.alloc::<T>(total.max(1)) }.map_err(driver("allocation"))?;
        let mut args = stream.launch_builder(gather);
        let at = self.src.values();
        args.arg(&at).arg(self.idx).arg(&n).arg(&out);
        launch(args, self.gpu.grid(total), BLOCK, 0)?;
        let (valid, valid_offset) = self.src.validity();
        let words = total.div_ceil(32);
        let bits = if valid != 0 || self.may_miss {
            // SAFETY: ts_gather_valid writes all `words` words, one warp each.
            let bits =
                unsafe { stream.alloc::<u32>(words.max(1)) }.map_err(driver("allocation"))?;
            let offset = i64::try_from(valid_offset)
                .map_err(|_| KernelError::SizeOverflow(format!("bit offset {valid_offset}")))?;
            let mut args = stream.launch_builder(&self.fns.gather_valid);
            args.arg(&valid)
                .arg(&offset)
                .arg(self.idx)
                .arg(&n)
                .arg(&bits);
            launch(args, self.gpu.grid(words * 32), BLOCK, 0)?;
            Some(bits)
        } else {
            None
        };
        self.timer.mark(stream, "join: gather a column")?;
        self.timer.stop(stream)?;
        let values = Buffer::from_vec(self.gpu.to_host(stream, &out, total)?);
        let nulls = match bits {
            Some(b) => {
                let b = BooleanBuffer::new(
                    Buffer::from_vec(self.gpu.to_host(stream, &b, words)?),
                    0,
                    total,
                );
                Some(NullBuffer::new(b)).filter(|n| n.null_count() > 0)
            }
            None => None,
        };
        Ok((values, nulls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::tests_gpu::device;
    use crate::frame::join_matcher_tests::join_tables;
    use crate::frame::ops::FrameDevice;
    use arrow::array::UInt32Array;
    use arrow::compute::take;
    use std::cell::Cell;

    #[test]
    fn gpu_join_columns_of_fixed_width_are_gathered_on_the_device() {
        let Some(gpu) = device() else { return };
        let (left, right) = join_tables(3_000, 2_000, 4);
        for (l, r) in [
            (left.clone(), right.clone()),
            (left.slice(700, 2_000), right.slice(300, 1_500)),
        ] {
            // Without inputs to keep copies for, then twice with them (copied in, then the
            // kept copies read).
            let tables = [
                Arc::new(ChunkData::Table(l.clone())),
                Arc::new(ChunkData::Table(r.clone())),
            ];
            for (keep_unmatched, owners) in [
                (false, &[][..]),
                (true, &[][..]),
                (false, &tables[..]),
                (true, &tables[..]),
                (true, &tables[..]),
            ] {
                gpu.with_lease(|lease| {
                    let frames = GpuFrames {
                        gpu: &gpu,
                        stream: &lease.stream,
                        owners,
                        timed: true,
                        took: Cell::new(Duration::ZERO),
                    };
                    let (lk, rk) = (l.column(0), r.column(0));
                    // The left key is Int32, the right Int64: both are matched as integers.
                    let m = frames
                        .match_keys(
                            std::slice::from_ref(rk),
                            std::slice::from_ref(lk),
                            keep_unmatched,
                        )?
                        .expect("the device matches integer keys");
                    let mut got = Vec::new();
                    for (side, t) in [(MatchSide::Probe, &l), (MatchSide::Build, &r)] {
                        for name in ["k", "s", "x", "w", "y", "z"] {
                            if let Some(col) = t.column_by_name(name) {
                                got.push((side, name, m.gather(side, col)?));
                            }
                        }
                    }
                    let (probe, build) = m.into_pairs()?;
                    let index = |rows: Vec<u32>| {
                        UInt32Array::from_iter(
                            rows.into_iter().map(|r| (r != u32::MAX).then_some(r)),
                        )
                    };
                    let (probe, build) = (index(probe), index(build));
                    assert!(!probe.is_empty());
                    assert_eq!(build.null_count() > 0, keep_unmatched);
                    for (side, name, col) in got {
                        let (t, rows) = match side {
                            MatchSide::Probe => (&l, &probe),
                            MatchSide::Build => (&r, &build),
                        };
                        let source = t.column_by_name(name).unwrap();
                        match col {
                            Some(col) => {
                                let want = take(source.as_ref(), rows, None).unwrap();
                                assert_eq!(
                                    &col, &want,
                                    "{side:?} {name}, unmatched kept: {keep_unmatched}"
                                );
                            }
                            None => assert_eq!(name, "s", "{side:?} {name} was left to the CPU"),
                        }
                    }
                    assert!(frames.took.get() > Duration::ZERO);
                    assert!(owners.is_empty() || gpu.resident_bytes() > 0);
                    Ok(())
                })
                .unwrap();
            }
        }
    }
}
