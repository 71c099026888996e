//! A joined or filtered table's columns gathered on the device: each output row's value of
//! a column of 1, 2, 4 or 8-byte values at the row it names (a join's probe or build row,
//! a filter's kept row: `ts_gather1/2/4/8`);
//! of a `Utf8` or `LargeUtf8` column, each row's length (`ts_gather_str_len`), a prefix sum
//! into the offsets, then the bytes, a warp a row (`ts_gather_str_bytes`); and the validity
//! where the column has nulls or a left join's build row may be missing
//! (`ts_gather_valid`, an Arrow bitmap). The key columns the matching copied in are reused;
//! other columns are copied in once (and kept: `resident`). Booleans, wider values and
//! other layouts stay the CPU's.

use super::frame::{fixed_width, launch, DevCol, FrameFns, GpuFrames, BLOCK};
use super::join::DevMatches;
use super::{driver, Gpu, Timer};
use crate::frame_plan::{ColKind, ColPart};
use crate::launch::i64_of;
use arrow::array::{make_array, Array, ArrayData, ArrayRef};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow::datatypes::ArrowNativeType;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, PushKernelArg};
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::frame::join::{JoinMatches, MatchSide, Matches};
use tessera_kernels::{ChunkData, KernelError};

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

/// How a column is gathered: values of this many bytes, or strings (with 8-byte offsets
/// for `LargeUtf8`).
#[derive(Clone, Copy)]
enum Layout {
    Fixed(usize),
    Strings { wide: bool },
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
        let rows = Rows {
            idx: match side {
                MatchSide::Probe => &m.probe,
                MatchSide::Build => &m.build,
            },
            total: m.total,
            may_miss: side == MatchSide::Build && m.unmatched,
        };
        self.gather_rows(stream, owners, m.key_copy(side, col), &rows, col, timed)
    }

    /// `col` at `rows`, read from `copied` where the column is already on the device (else
    /// copied in, and kept where it is a column of one of `owners`), with the kernels'
    /// device time when `timed`; `None` where its layout is not one the kernels gather.
    pub(super) fn gather_rows(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        copied: Option<&DevCol>,
        rows: &Rows<'_>,
        col: &ArrayRef,
        timed: bool,
    ) -> Result<Option<(ArrayRef, Duration)>, KernelError> {
        let (layout, kind) = match (fixed_width(col.data_type()), ColKind::key(col.data_type())) {
            (Some(w), _) => (Layout::Fixed(w), None),
            (_, Some(k @ ColKind::Utf8)) => (Layout::Strings { wide: false }, Some(k)),
            (_, Some(k @ ColKind::LargeUtf8)) => (Layout::Strings { wide: true }, Some(k)),
            _ => return Ok(None),
        };
        let uploaded;
        let src = match copied {
            Some(key) => key,
            None => match self.col_copy(stream, owners, col, ColPart::Rows, kind)? {
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
            idx: rows.idx,
            total: rows.total,
            may_miss: rows.may_miss,
            timer: Timer::new(stream, timed)?,
        };
        g.timer.start(stream)?;
        let (buffers, nulls) = match layout {
            Layout::Fixed(1) => g.run::<u8>(&fns.gather1)?,
            Layout::Fixed(2) => g.run::<u16>(&fns.gather2)?,
            Layout::Fixed(4) => g.run::<u32>(&fns.gather4)?,
            Layout::Fixed(_) => g.run::<u64>(&fns.gather8)?,
            Layout::Strings { wide } => match g.strings(wide)? {
                Some(gathered) => gathered,
                None => return Ok(None),
            },
        };
        let data = ArrayData::builder(col.data_type().clone())
            .len(rows.total)
            .buffers(buffers)
            .nulls(nulls)
            .build()
            .map_err(|e| KernelError::BadInput(format!("a gathered column: {e}")))?;
        Ok(Some((make_array(data), g.timer.elapsed()?)))
    }
}

/// The rows a gather takes: `total` row numbers on the device, `u32::MAX` for none where
/// `may_miss`.
pub(super) struct Rows<'a> {
    pub idx: &'a CudaSlice<u32>,
    pub total: usize,
    pub may_miss: bool,
}

/// A gathered column's buffers and nulls.
type Gathered = (Vec<Buffer>, Option<NullBuffer>);

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
    /// Gathers the values as `T` with `gather` and their validity, then copies them back:
    /// the column's one buffer and its nulls. (The timer, started by the caller, stops
    /// after the last kernel.)
    fn run<T: DeviceRepr + ArrowNativeType>(
        &mut self,
        gather: &CudaFunction,
    ) -> Result<Gathered, KernelError> {
        let (stream, total) = (self.stream, self.total);
        let n = i64_of(total)?;
        // SAFETY: ts_gather writes all `total` elements; the one allocated for an empty
        // output is truncated away unread.
        let out = unsafe { stream.alloc::<T>(total.max(1)) }.map_err(driver("allocation"))?;
        let mut args = stream.launch_builder(gather);
        let at = self.src.values();
        args.arg(&at).arg(self.idx).arg(&n).arg(&out);
        launch(args, self.gpu.grid(total), BLOCK, 0)?;
        self.timer.mark(stream, "gather a column")?;
        let bits = self.validity()?;
        let values = Buffer::from_vec(self.gpu.to_host(stream, &out, total)?);
        Ok((vec![values], self.nulls(bits)?))
    }

    /// Gathers a string column's rows (their lengths, a prefix sum into the offsets, then
    /// the bytes, a warp a row) and their validity, then copies them back: its offsets and
    /// bytes buffers and its nulls, or `None` where a `Utf8` column's gathered bytes would
    /// pass its 32-bit offsets.
    fn strings(&mut self, wide: bool) -> Result<Option<Gathered>, KernelError> {
        let (stream, total, fns) = (self.stream, self.total, self.fns);
        let n = i64_of(total)?;
        let wide_flag = i32::from(wide);
        let offs = self.src.offsets();
        // SAFETY: ts_gather_str_len writes all `total + 1` words.
        let mut lens = unsafe { stream.alloc::<u64>(total + 1) }.map_err(driver("allocation"))?;
        let mut args = stream.launch_builder(&fns.gather_str_len);
        args.arg(&offs)
            .arg(&wide_flag)
            .arg(self.idx)
            .arg(&n)
            .arg(&lens);
        launch(args, self.gpu.grid(total + 1), BLOCK, 0)?;
        let bytes = self.gpu.prefix_sum(stream, fns, &mut lens, total + 1)? as usize;
        if !wide && i32::try_from(bytes).is_err() {
            return Ok(None);
        }
        // SAFETY: the offsets partition [0, bytes): ts_gather_str_bytes writes every output
        // row's bytes, so every byte is written (one more is allocated for none).
        let out = unsafe { stream.alloc::<u8>(bytes.max(1)) }.map_err(driver("allocation"))?;
        let values = self.src.values();
        let mut args = stream.launch_builder(&fns.gather_str_bytes);
        args.arg(&values)
            .arg(&offs)
            .arg(&wide_flag)
            .arg(self.idx)
            .arg(&n)
            .arg(&lens)
            .arg(&out);
        launch(args, self.gpu.grid(total.saturating_mul(32)), BLOCK, 0)?;
        let narrow = if wide {
            None
        } else {
            // SAFETY: ts_narrow_offsets writes all `total + 1` offsets.
            let narrow = unsafe { stream.alloc::<i32>(total + 1) }.map_err(driver("allocation"))?;
            let n1 = i64_of(total + 1)?;
            let mut args = stream.launch_builder(&fns.narrow_offsets);
            args.arg(&lens).arg(&n1).arg(&narrow);
            launch(args, self.gpu.grid(total + 1), BLOCK, 0)?;
            Some(narrow)
        };
        self.timer.mark(stream, "gather a string column")?;
        let bits = self.validity()?;
        let offsets = match narrow {
            Some(narrow) => Buffer::from_vec(self.gpu.to_host(stream, &narrow, total + 1)?),
            // The prefix sum's words are the LargeUtf8 offsets (none passes i64::MAX).
            None => Buffer::from_vec(self.gpu.to_host(stream, &lens, total + 1)?),
        };
        let bytes = Buffer::from_vec(self.gpu.to_host(stream, &out, bytes)?);
        Ok(Some((vec![offsets, bytes], self.nulls(bits)?)))
    }

    /// Launches the gathered rows' validity where the column has nulls or a row may name
    /// none (`ts_gather_valid`), and stops the timer after it.
    fn validity(&mut self) -> Result<Option<CudaSlice<u32>>, KernelError> {
        let (stream, total) = (self.stream, self.total);
        let (valid, valid_offset) = self.src.validity();
        if valid == 0 && !self.may_miss {
            self.timer.stop(stream)?;
            return Ok(None);
        }
        let n = i64_of(total)?;
        let words = total.div_ceil(32);
        // SAFETY: ts_gather_valid writes all `words` words, one warp each.
        let bits = unsafe { stream.alloc::<u32>(words.max(1)) }.map_err(driver("allocation"))?;
        let offset = i64::try_from(valid_offset)
            .map_err(|_| KernelError::SizeOverflow(format!("bit offset {valid_offset}")))?;
        let mut args = stream.launch_builder(&self.fns.gather_valid);
        args.arg(&valid)
            .arg(&offset)
            .arg(self.idx)
            .arg(&n)
            .arg(&bits);
        launch(args, self.gpu.grid(words * 32), BLOCK, 0)?;
        self.timer.mark(stream, "gather a column's validity")?;
        self.timer.stop(stream)?;
        Ok(Some(bits))
    }

    /// The validity `bits` launched, copied back (none where every row is valid).
    fn nulls(&self, bits: Option<CudaSlice<u32>>) -> Result<Option<NullBuffer>, KernelError> {
        let Some(bits) = bits else { return Ok(None) };
        let total = self.total;
        let words = total.div_ceil(32);
        let b = BooleanBuffer::new(
            Buffer::from_vec(self.gpu.to_host(self.stream, &bits, words)?),
            0,
            total,
        );
        Ok(Some(NullBuffer::new(b)).filter(|n| n.null_count() > 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::gpu::device;
    use arrow::array::{LargeStringArray, RecordBatch, StringArray, UInt32Array};
    use arrow::compute::take;
    use arrow::datatypes::{Field, Schema};
    use std::cell::Cell;
    use tessera_frame::testing::join_tables;
    use tessera_kernels::frame::ops::FrameDevice;

    /// `batch` with a nullable string column `name` appended (`Utf8`, or `LargeUtf8` when
    /// `large`), of lengths 0 to 12.
    fn with_strings(batch: RecordBatch, name: &str, large: bool) -> RecordBatch {
        let values = (0..batch.num_rows())
            .map(|i| (i % 7 != 3).then(|| "é".repeat(i % 6) + &"t".repeat(i % 3)));
        let column: ArrayRef = if large {
            Arc::new(LargeStringArray::from_iter(values))
        } else {
            Arc::new(StringArray::from_iter(values))
        };
        let mut columns = batch.columns().to_vec();
        columns.push(column);
        let mut fields: Vec<_> = batch.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(
            name,
            columns[columns.len() - 1].data_type().clone(),
            true,
        )));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    #[test]
    fn gpu_join_columns_are_gathered_on_the_device() {
        let Some(gpu) = device() else { return };
        let (left, right) = join_tables(3_000, 2_000, 4);
        let (left, right) = (
            with_strings(left, "t", false),
            with_strings(right, "u", true),
        );
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
                        for name in ["k", "s", "x", "w", "t", "y", "z", "u"] {
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
                        let col =
                            col.unwrap_or_else(|| panic!("{side:?} {name} was left to the CPU"));
                        let want = take(source.as_ref(), rows, None).unwrap();
                        assert_eq!(
                            &col, &want,
                            "{side:?} {name}, unmatched kept: {keep_unmatched}"
                        );
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
