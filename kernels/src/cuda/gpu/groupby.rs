//! Groupby partials on the device: `frame.cu`'s hash kernels over the batch's Arrow
//! buffers (keys and aggregated columns copied in as they are laid out), with the plan and
//! the result table from [`crate::cuda::frame_plan`]. Specs and types the kernels lack run
//! on the CPU (`groupby::partial`), on the calling thread.

use super::{driver, elapsed, timing_events, Gpu};
use crate::cuda::frame_plan::{ColKind, GroupPlan};
use crate::cuda::nvrtc;
use crate::frame::groupby::{self, GroupBySpec};
use crate::KernelError;
use arrow::array::{Array, ArrayRef, RecordBatch};
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchArgs, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

/// The source of the dataframe kernels.
const FRAME_SOURCE: &str = include_str!("../frame.cu");

/// Rows per tile of the numbering scan (`TS_TILE` in `frame.cu`).
const TILE: usize = 4096;

/// Most groups whose states a block keeps in shared memory (8 bytes each).
const SHARED_GROUPS: usize = 4096;

/// Threads per block of every frame kernel but the scan.
const BLOCK: u32 = 256;

/// The compiled entry points of `frame.cu`.
pub(super) struct FrameFns {
    fill: CudaFunction,
    insert: CudaFunction,
    count_firsts: CudaFunction,
    scan: CudaFunction,
    number: CudaFunction,
    agg: CudaFunction,
}

/// NVRTC's check of `frame.cu` for `arch` (also run by the CI's compile test).
pub fn compile_frame_kernels(arch: &str) -> Result<cudarc::nvrtc::Ptx, KernelError> {
    nvrtc::compile_source("tessera_frame", FRAME_SOURCE, arch)
}

/// One column on the device: its buffers (kept alive while launches read them) and the
/// five words of `frame.cu`'s `ts_col`.
struct DevCol {
    _buffers: Vec<CudaSlice<u8>>,
    words: [u64; 5],
}

/// Copies `bytes` in (one zero byte for none: an empty allocation is no valid pointer).
fn upload(stream: &Arc<CudaStream>, bytes: &[u8]) -> Result<CudaSlice<u8>, KernelError> {
    let bytes = if bytes.is_empty() { &[0u8][..] } else { bytes };
    stream
        .clone_htod(bytes)
        .map_err(driver("copy to the device"))
}

fn address(stream: &CudaStream, s: &CudaSlice<u8>) -> u64 {
    let (ptr, _sync) = s.device_ptr(stream);
    ptr
}

/// The device copy of `array`, read as `kind`.
fn dev_col(
    stream: &Arc<CudaStream>,
    array: &ArrayRef,
    kind: ColKind,
) -> Result<DevCol, KernelError> {
    let data = array.to_data();
    let (offset, len) = (data.offset(), data.len());
    let bad = || {
        KernelError::BadInput(format!(
            "a {} column without its buffers",
            array.data_type()
        ))
    };
    let mut buffers = Vec::new();
    let (values, offsets) = match kind {
        ColKind::Utf8 | ColKind::LargeUtf8 => {
            let width = if kind == ColKind::Utf8 { 4 } else { 8 };
            let offs = data.buffers().first().ok_or_else(bad)?.as_slice();
            let offs = offs
                .get(offset * width..(offset + len + 1) * width)
                .ok_or_else(bad)?;
            let bytes = data.buffers().get(1).ok_or_else(bad)?.as_slice();
            (upload(stream, bytes)?, Some(upload(stream, offs)?))
        }
        _ => {
            let width = array.data_type().primitive_width().ok_or_else(bad)?;
            let all = data.buffers().first().ok_or_else(bad)?.as_slice();
            let bytes = all
                .get(offset * width..(offset + len) * width)
                .ok_or_else(bad)?;
            (upload(stream, bytes)?, None)
        }
    };
    let mut words = [kind as i64 as u64, address(stream, &values), 0, 0, 0];
    buffers.push(values);
    if let Some(o) = offsets {
        words[2] = address(stream, &o);
        buffers.push(o);
    }
    if let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) {
        let bits = nulls.inner();
        let valid = upload(stream, bits.values())?;
        words[3] = address(stream, &valid);
        words[4] = bits.offset() as u64;
        buffers.push(valid);
    }
    Ok(DevCol {
        _buffers: buffers,
        words,
    })
}

/// The `ts_col` array of `cols` on the device.
fn descriptors(stream: &Arc<CudaStream>, cols: &[&DevCol]) -> Result<CudaSlice<u64>, KernelError> {
    let words: Vec<u64> = cols.iter().flat_map(|c| c.words).collect();
    stream
        .clone_htod(&words)
        .map_err(driver("copy to the device"))
}

fn i64_of(n: usize) -> Result<i64, KernelError> {
    i64::try_from(n).map_err(|_| KernelError::SizeOverflow(format!("{n} rows")))
}

/// Launches `args` with `grid` blocks of `block` threads and `shared` bytes.
fn launch(
    mut args: LaunchArgs<'_>,
    grid: usize,
    block: u32,
    shared: u32,
) -> Result<(), KernelError> {
    let config = LaunchConfig {
        grid_dim: (u32::try_from(grid.max(1)).unwrap_or(u32::MAX), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared,
    };
    // SAFETY: every caller pushes the parameters `frame.cu` declares for its kernel, in
    // order and with its types; the buffers hold the elements those kernels index (sized
    // from the same row and slot counts) and outlive the launch, since the stream's copies
    // back (which wait for it) happen before they drop.
    unsafe { args.launch(config) }.map_err(driver("launch"))?;
    Ok(())
}

impl Gpu {
    /// `frame.cu`, compiled and loaded on first use.
    fn frame_fns(&self) -> Result<Arc<FrameFns>, KernelError> {
        let mut slot = self.frame.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = slot.as_ref() {
            return Ok(Arc::clone(f));
        }
        let ptx = compile_frame_kernels(&self.arch)?;
        let module = self.ctx.load_module(ptx).map_err(driver("module load"))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(driver("function lookup"))
        };
        let fns = Arc::new(FrameFns {
            fill: f("ts_gb_fill")?,
            insert: f("ts_gb_insert")?,
            count_firsts: f("ts_gb_count_firsts")?,
            scan: f("ts_gb_scan")?,
            number: f("ts_gb_number")?,
            agg: f("ts_gb_agg")?,
        });
        *slot = Some(Arc::clone(&fns));
        Ok(fns)
    }

    /// The groupby partial of `batch`: on the device where the plan allows, else on the
    /// CPU. Also returns the device time of the kernels (zero on the CPU).
    pub(super) fn group_partial(
        &self,
        stream: &Arc<CudaStream>,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<(RecordBatch, Duration), KernelError> {
        let plan = GroupPlan::new(spec, batch.schema_ref())?;
        match plan {
            Some(plan) if batch.num_rows() > 0 && batch.num_rows() < (1 << 30) => {
                self.group_on_device(stream, &plan, spec, batch)
            }
            _ => Ok((groupby::partial(spec, batch)?, Duration::ZERO)),
        }
    }

    fn group_on_device(
        &self,
        stream: &Arc<CudaStream>,
        plan: &GroupPlan,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<(RecordBatch, Duration), KernelError> {
        let fns = self.frame_fns()?;
        let rows = batch.num_rows();
        let n = i64_of(rows)?;
        let alloc = |len: usize| -> Result<CudaSlice<u64>, KernelError> {
            stream
                .alloc_zeros::<u64>(len.max(1))
                .map_err(driver("allocation"))
        };
        let fill_grid = |len: usize| (len.div_ceil(BLOCK as usize)).min(self.sms as usize * 8);
        let fill = |buf: &mut CudaSlice<u64>, len: usize, value: u64| {
            let len64 = i64_of(len)?;
            let mut args = stream.launch_builder(&fns.fill);
            args.arg(buf).arg(&len64).arg(&value);
            launch(args, fill_grid(len), BLOCK, 0)
        };
        let grid = rows.div_ceil(BLOCK as usize).min(self.sms as usize * 8);
        let keys = plan
            .keys
            .iter()
            .map(|&(at, kind)| dev_col(stream, batch.column(at), kind))
            .collect::<Result<Vec<_>, _>>()?;
        let key_desc = descriptors(stream, &keys.iter().collect::<Vec<_>>())?;
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
                    let col = dev_col(stream, column, kind)?;
                    let desc = descriptors(stream, &[&col])?;
                    e.insert((col, desc));
                }
            }
        }
        let slots = (2 * rows).next_power_of_two().max(1024);
        let mask = (slots - 1) as u64;
        let tiles = rows.div_ceil(TILE);
        let mut table = alloc(slots)?;
        let mut first = alloc(slots)?;
        let slot_of_row = stream
            .alloc_zeros::<u32>(rows)
            .map_err(driver("allocation"))?;
        let counts = alloc(tiles + 1)?;
        let group_of_slot = stream
            .alloc_zeros::<u32>(slots)
            .map_err(driver("allocation"))?;
        let (start, end) = timing_events(stream)?;
        start.record(stream).map_err(driver("event"))?;
        fill(&mut table, slots, u64::MAX)?;
        fill(&mut first, slots, i64::MAX as u64)?;
        let ncols = i32::try_from(keys.len()).unwrap_or(i32::MAX);
        let mut args = stream.launch_builder(&fns.insert);
        args.arg(&key_desc)
            .arg(&ncols)
            .arg(&n)
            .arg(&table)
            .arg(&mask)
            .arg(&first)
            .arg(&slot_of_row);
        launch(args, grid, BLOCK, 0)?;
        let tile_grid = tiles.min(self.sms as usize * 8);
        let mut args = stream.launch_builder(&fns.count_firsts);
        args.arg(&n).arg(&slot_of_row).arg(&first).arg(&counts);
        launch(args, tile_grid, BLOCK, 0)?;
        let tiles64 = i64_of(tiles)?;
        let mut args = stream.launch_builder(&fns.scan);
        args.arg(&counts).arg(&tiles64);
        launch(args, 1, 1024, 0)?;
        let total = stream
            .clone_dtoh(&counts.slice(tiles..tiles + 1))
            .map_err(driver("copy from the device"))?;
        let groups = total.first().copied().unwrap_or(0) as usize;
        let first_rows = alloc(groups)?;
        let mut args = stream.launch_builder(&fns.number);
        args.arg(&n)
            .arg(&slot_of_row)
            .arg(&first)
            .arg(&counts)
            .arg(&group_of_slot)
            .arg(&first_rows);
        launch(args, tile_grid, BLOCK, 0)?;
        let groups64 = i64_of(groups)?;
        let in_shared = groups <= SHARED_GROUPS;
        let shared = if in_shared { (groups * 8) as u32 } else { 0 };
        let mut states = Vec::with_capacity(plan.launches.len());
        for l in &plan.launches {
            let mut state = alloc(groups)?;
            fill(&mut state, groups, l.code.identity())?;
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
            launch(args, grid, BLOCK, shared)?;
            states.push(state);
        }
        end.record(stream).map_err(driver("event"))?;
        let back = |s: &CudaSlice<u64>| -> Result<Vec<u64>, KernelError> {
            let mut v = stream
                .clone_dtoh(s)
                .map_err(driver("copy from the device"))?;
            v.truncate(groups);
            Ok(v)
        };
        let first_rows: Vec<i64> = back(&first_rows)?.into_iter().map(|r| r as i64).collect();
        let words = states.iter().map(back).collect::<Result<Vec<_>, _>>()?;
        let took = elapsed(&start, &end)?;
        Ok((plan.assemble(spec, batch, &first_rows, &words)?, took))
    }
}
