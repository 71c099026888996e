//! A dataframe filter on the device: the predicate's generated kernel
//! ([`crate::filter_gen`]) flags the rows it keeps, `frame.cu`'s prefix sum and
//! `ts_filter_place` list them in row order, and [`super::gather`] gathers the kept
//! columns by that list (a predicate column's copy is reused). Columns the gathers do not
//! take (booleans, say) are taken on the host from a copy of the list. A filter that feeds
//! a groupby partial gathers nothing: the groupby reads the flags and leaves the dropped
//! rows out of every group.

use super::frame::{descriptors, launch, ColCopy, BLOCK};
use super::gather::Rows;
use super::groupby::Grouped;
use super::{driver, Gpu, Timer};
use crate::filter_gen::{filter_source, FilterKernel, KernelCol, FILTER_BLOCK};
use crate::frame_plan::{ColPart, GroupPlan};
use crate::launch::i64_of;
use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::compute::take;
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::frame::expr::Expr;
use tessera_kernels::frame::groupby::GroupBySpec;
use tessera_kernels::{ChunkData, KernelError};

/// A column a predicate read, the part of it read, and that part's device copy.
type Read<'a> = (&'a ArrayRef, ColPart, ColCopy);

/// What a predicate's launch leaves: its `n + 1` flags, the columns it read with their
/// device copies, and its faults word.
struct Flagged<'a> {
    flags: CudaSlice<u32>,
    read: Vec<Read<'a>>,
    faults: CudaSlice<i32>,
}

/// The kernel the device runs for `predicate` over `batch`: none where the generator does
/// not take the predicate, nor for an empty table with a kernel that may fault (no row can
/// fault there, but a constant's cast may fail on the CPU all the same).
fn device_kernel(predicate: &Expr, batch: &RecordBatch) -> Option<FilterKernel> {
    filter_source(predicate, batch.schema_ref()).filter(|k| batch.num_rows() > 0 || !k.may_fault)
}

impl Gpu {
    /// The rows of `keep` where `predicate` over `over` (the same rows) is true, with the
    /// kernels' device time when `timed`; `None` where the generator does not take the
    /// predicate ([`device_kernel`]), the table has more rows than 32-bit row numbers
    /// hold, or a row faulted (the CPU then evaluates the predicate and reports its error).
    pub(super) fn filter(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        predicate: &Expr,
        over: &RecordBatch,
        keep: &RecordBatch,
        timed: bool,
    ) -> Result<Option<(RecordBatch, Duration)>, KernelError> {
        let n = over.num_rows();
        let Some(kernel) = device_kernel(predicate, over) else {
            return Ok(None);
        };
        if u32::try_from(n).is_err() {
            return Ok(None);
        }
        let fns = self.frame_fns()?;
        let mut timer = Timer::new(stream, timed)?;
        let Flagged {
            mut flags,
            read,
            faults,
        } = self.flags(stream, owners, &kernel, over, &mut timer)?;
        if self.faulted(stream, &kernel, &faults)? {
            return Ok(None);
        }
        let kept = usize::try_from(self.prefix_sum(stream, &fns, &mut flags, n + 1)?)
            .map_err(|_| KernelError::SizeOverflow("a filter's kept rows".into()))?;
        // SAFETY: the flags' sums step up `kept` times, and ts_filter_place writes a row at
        // each step's place, every one of `0..kept` (one more is allocated for none).
        let rows = unsafe { stream.alloc::<u32>(kept.max(1)) }.map_err(driver("allocation"))?;
        let n64 = i64_of(n)?;
        let mut args = stream.launch_builder(&fns.filter_place);
        args.arg(&flags).arg(&n64).arg(&rows);
        launch(args, self.grid(n), BLOCK, 0)?;
        timer.mark(stream, "filter: list the kept rows")?;
        timer.stop(stream)?;
        let mut took = timer.elapsed()?;
        let rows = Rows {
            idx: &rows,
            total: kept,
            may_miss: false,
        };
        let mut on_host: Option<UInt32Array> = None;
        let mut columns = Vec::with_capacity(keep.num_columns());
        for col in keep.columns() {
            let copied = read
                .iter()
                .find(|(c, part, _)| *part == ColPart::Rows && Arc::ptr_eq(c, col))
                .map(|(_, _, copy)| &**copy);
            match self.gather_rows(stream, owners, copied, &rows, col, timed)? {
                Some((gathered, t)) => {
                    took += t;
                    columns.push(gathered);
                }
                None => {
                    let list = match &mut on_host {
                        Some(list) => list,
                        empty => {
                            empty.insert(UInt32Array::from(self.to_host(stream, rows.idx, kept)?))
                        }
                    };
                    columns.push(take(col.as_ref(), list, None).map_err(|e| {
                        KernelError::BadInput(format!("a filtered column's rows: {e}"))
                    })?);
                }
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(kept));
        let table = RecordBatch::try_new_with_options(keep.schema(), columns, &options)
            .map_err(|e| KernelError::BadInput(format!("a filtered table: {e}")))?;
        Ok(Some((table, took)))
    }

    /// The groupby partial of the rows of `batch` where `predicate` is true, with the
    /// kernels' device time when `timed`: the predicate's flags make the rows they drop
    /// join no group, so no row is gathered or copied back. `None` where the device does
    /// not take the predicate ([`device_kernel`]) or the kernels the spec (the caller then filters and
    /// groups apart), or where a row faulted.
    pub(super) fn filtered_group_partial(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        spec: &GroupBySpec,
        predicate: &Expr,
        batch: &RecordBatch,
        timed: bool,
    ) -> Result<Option<(RecordBatch, Duration)>, KernelError> {
        let (Some(kernel), Some(plan)) = (
            device_kernel(predicate, batch),
            GroupPlan::new(spec, batch.schema_ref())?,
        ) else {
            return Ok(None);
        };
        let Some(keys) = plan.keys_for(batch) else {
            return Ok(None);
        };
        let mut timer = Timer::new(stream, timed)?;
        let Flagged { flags, faults, .. } =
            self.flags(stream, owners, &kernel, batch, &mut timer)?;
        if self.faulted(stream, &kernel, &faults)? {
            return Ok(None);
        }
        timer.stop(stream)?;
        let grouped = Grouped {
            plan: &plan,
            keys: &keys,
            spec,
            batch,
        };
        let (partial, took) =
            self.group_on_device(stream, owners, &grouped, Some(&flags), timed)?;
        Ok(Some((partial, took + timer.elapsed()?)))
    }

    /// Launches `kernel` over `over` (started on `timer`, its end marked).
    fn flags<'a>(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        kernel: &FilterKernel,
        over: &'a RecordBatch,
        timer: &mut Timer,
    ) -> Result<Flagged<'a>, KernelError> {
        let n = over.num_rows();
        let function = self.function_of(&kernel.name, &kernel.source)?;
        // The predicate's columns on the device, as the kernel reads them.
        let mut read: Vec<Read<'_>> = Vec::with_capacity(kernel.columns.len());
        for KernelCol { name, part, kind } in &kernel.columns {
            let col = over.column_by_name(name).ok_or_else(|| {
                KernelError::BadInput(format!("a filter reads a column {name:?} it was not given"))
            })?;
            let copy = self
                .col_copy(stream, owners, col, *part, Some(*kind))?
                .ok_or_else(|| {
                    KernelError::BadInput(format!("no device layout for {}", col.data_type()))
                })?;
            read.push((col, *part, copy));
        }
        let descs = descriptors(
            stream,
            &read.iter().map(|(_, _, c)| &**c).collect::<Vec<_>>(),
        )?;
        timer.start(stream)?;
        // SAFETY: the predicate kernel writes all `n + 1` flags before anything reads them.
        let flags = unsafe { stream.alloc::<u32>(n + 1) }.map_err(driver("allocation"))?;
        // OR-ed into: it must start at 0.
        let faults = stream.alloc_zeros::<i32>(1).map_err(driver("allocation"))?;
        let n64 = i64_of(n)?;
        let mut args = stream.launch_builder(&function);
        args.arg(&descs).arg(&n64).arg(&flags).arg(&faults);
        launch(args, self.grid(n + 1), FILTER_BLOCK, 0)?;
        timer.mark(stream, "filter: the predicate")?;
        Ok(Flagged {
            flags,
            read,
            faults,
        })
    }

    /// Whether a row of `kernel`'s launch faulted (read only for a kernel that may fault).
    fn faulted(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &FilterKernel,
        faults: &CudaSlice<i32>,
    ) -> Result<bool, KernelError> {
        if !kernel.may_fault {
            return Ok(false);
        }
        let word = stream.clone_dtoh(faults).map_err(driver("kernel run"))?;
        let faulted = word.first().is_some_and(|&w| w != 0);
        if faulted {
            tracing::debug!(kernel = %kernel.name, "a row faulted: the CPU evaluates the filter");
        }
        Ok(faulted)
    }
}
