//! Groupby partials on the device: `frame.cu`'s hash kernels over the batch's Arrow
//! buffers (keys and aggregated columns copied in as they are laid out), with the plan and
//! the result table from [`crate::frame_plan`]. Specs and types the kernels lack run
//! on the CPU (`groupby::partial`), on the calling thread.

use super::frame::{descriptors, launch, BLOCK};
use super::{driver, Gpu, Timer};
use crate::frame_plan::{ColKind, ColPart, GroupPlan};
use crate::launch::i64_of;
use arrow::array::RecordBatch;
use cudarc::driver::{CudaSlice, CudaStream, PushKernelArg};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::frame::groupby::{self, GroupBySpec};
use tessera_kernels::{ChunkData, KernelError};

/// One groupby partial on the device: its plan, the key columns it reads for this batch
/// ([`GroupPlan::keys_for`]), its spec and the batch.
#[derive(Clone, Copy)]
pub(super) struct Grouped<'a> {
    pub plan: &'a GroupPlan,
    pub keys: &'a [(usize, ColPart, ColKind)],
    pub spec: &'a GroupBySpec,
    pub batch: &'a RecordBatch,
}

/// Most groups whose states a block keeps in shared memory (8 bytes each).
const SHARED_GROUPS: usize = 4096;

impl Gpu {
    /// The groupby partial of `batch`: on the device where the plan allows, else on the
    /// CPU. Also returns the device time of the kernels when `timed` (else zero, as on the
    /// CPU).
    pub(super) fn group_partial(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        spec: &GroupBySpec,
        batch: &RecordBatch,
        timed: bool,
    ) -> Result<(RecordBatch, Duration), KernelError> {
        let Some(plan) = GroupPlan::new(spec, batch.schema_ref())? else {
            return Ok((groupby::partial(spec, batch)?, Duration::ZERO));
        };
        match plan.keys_for(batch) {
            Some(keys) => {
                let grouped = Grouped {
                    plan: &plan,
                    keys: &keys,
                    spec,
                    batch,
                };
                self.group_on_device(stream, owners, &grouped, None, timed)
            }
            None => Ok((groupby::partial(spec, batch)?, Duration::ZERO)),
        }
    }

    /// The partial `grouped` describes, leaving out the rows `keep` (a filter's flags, one
    /// per row) flags 0.
    pub(super) fn group_on_device(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        grouped: &Grouped<'_>,
        keep: Option<&CudaSlice<u32>>,
        timed: bool,
    ) -> Result<(RecordBatch, Duration), KernelError> {
        let Grouped {
            plan,
            keys,
            spec,
            batch,
        } = *grouped;
        let fns = self.frame_fns()?;
        let rows = batch.num_rows();
        let n = i64_of(rows)?;
        let col = |at: usize, part, kind| {
            self.col_copy(stream, owners, batch.column(at), part, Some(kind))?
                .ok_or_else(|| KernelError::BadInput(format!("no device layout for column {at}")))
        };
        let keys = keys
            .iter()
            .map(|&(at, part, kind)| col(at, part, kind))
            .collect::<Result<Vec<_>, _>>()?;
        let key_desc = descriptors(stream, &keys.iter().map(|k| &**k).collect::<Vec<_>>())?;
        let mut values = HashMap::new();
        for l in &plan.launches {
            if let Some(c) = l.column {
                if let std::collections::hash_map::Entry::Vacant(e) = values.entry(c) {
                    let column = batch.column(c);
                    let kind = ColKind::value(column.data_type()).ok_or_else(|| {
                        KernelError::BadInput(format!(
                            "no device kernel for {}",
                            column.data_type()
                        ))
                    })?;
                    let col = col(c, ColPart::Rows, kind)?;
                    let desc = descriptors(stream, &[&*col])?;
                    e.insert((col, desc));
                }
            }
        }
        let slots = (2 * rows).next_power_of_two().max(1024);
        let mask = (slots - 1) as u64;
        let slot_of_row = stream
            .alloc_zeros::<u32>(rows)
            .map_err(driver("allocation"))?;
        let group_of_slot = stream
            .alloc_zeros::<u32>(slots)
            .map_err(driver("allocation"))?;
        let timer = Timer::new(stream, timed)?;
        timer.start(stream)?;
        let table = self.filled(stream, &fns, slots, u64::MAX)?;
        let first = self.filled(stream, &fns, slots, i64::MAX as u64)?;
        let ncols = i32::try_from(keys.len()).unwrap_or(i32::MAX);
        let mut args = stream.launch_builder(&fns.insert);
        args.arg(&key_desc)
            .arg(&ncols)
            .arg(&n)
            .arg(&table)
            .arg(&mask)
            .arg(&first)
            .arg(&slot_of_row);
        // A null pointer where every row counts.
        let every_row = 0u64;
        match keep {
            Some(flags) => args.arg(flags),
            None => args.arg(&every_row),
        };
        launch(args, self.grid(rows), BLOCK, 0)?;
        let (first_rows, groups) =
            self.number_groups(stream, &fns, rows, &slot_of_row, &first, &group_of_slot)?;
        let groups64 = i64_of(groups)?;
        let in_shared = groups <= SHARED_GROUPS;
        let shared = if in_shared { (groups * 8) as u32 } else { 0 };
        let mut states = Vec::with_capacity(plan.launches.len());
        for l in &plan.launches {
            let state = self.filled(stream, &fns, groups, l.code.identity())?;
            // `size` reads no column: any descriptor serves (the key columns').
            let desc = match l.column.and_then(|c| values.get(&c)) {
                Some((_, d)) => d,
                None => &key_desc,
            };
            let (code, flag) = (l.code as i32, i32::from(in_shared));
            let mut args = stream.launch_builder(&fns.agg);
            args.arg(desc)
                .arg(&code)
                .arg(&n)
                .arg(&slot_of_row)
                .arg(&group_of_slot)
                .arg(&groups64)
                .arg(&state)
                .arg(&flag);
            launch(args, self.grid(rows), BLOCK, shared)?;
            states.push(state);
        }
        timer.stop(stream)?;
        let back = |s: &CudaSlice<u64>| self.to_host(stream, s, groups);
        let first_rows: Vec<i64> = back(&first_rows)?.into_iter().map(|r| r as i64).collect();
        let words = states.iter().map(back).collect::<Result<Vec<_>, _>>()?;
        let took = timer.elapsed()?;
        Ok((plan.assemble(spec, batch, &first_rows, &words)?, took))
    }
}
