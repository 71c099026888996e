//! What the dataframe kernels share on the device: `frame.cu` compiled once per device,
//! Arrow columns copied in as `ts_col` descriptors, launches, prefix sums, and
//! [`GpuFrames`], the [`FrameDevice`] that gives groupby partials, join matching, filters
//! and the joined or filtered columns' gathers to the device ([`super::groupby`],
//! [`super::join`], [`super::filter`], [`super::gather`]).

use super::gather::GpuMatches;
use super::resident::{DeviceBytes, OnDevice, Piece};
use super::{driver, Gpu};
use crate::frame_plan::{ColKind, ColPart};
use crate::launch::i64_of;
use crate::nvrtc;
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::DataType;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchArgs, LaunchConfig,
    PushKernelArg, ValidAsZeroBits,
};
use std::cell::Cell;
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use tessera_kernels::frame::expr::Expr;
use tessera_kernels::frame::groupby::GroupBySpec;
use tessera_kernels::frame::join::JoinMatches;
use tessera_kernels::frame::ops::FrameDevice;
use tessera_kernels::{ChunkData, KernelError};

/// The source of the dataframe kernels: the column readers, then the kernels.
const FRAME_SOURCE: &str = concat!(
    include_str!("../frame_cols.cuh"),
    include_str!("../frame.cu")
);

/// Rows per tile of the numbering scan (`TS_TILE` in `frame.cu`).
pub(super) const TILE: usize = 4096;

/// Threads per block of every frame kernel but the scan.
pub(super) const BLOCK: u32 = 256;

/// The compiled entry points of `frame.cu`.
pub(super) struct FrameFns {
    pub fill: CudaFunction,
    pub insert: CudaFunction,
    pub count_firsts: CudaFunction,
    pub scan: CudaFunction,
    pub number: CudaFunction,
    pub agg: CudaFunction,
    pub tile_sums: CudaFunction,
    pub tile_scan: CudaFunction,
    pub tile_sums32: CudaFunction,
    pub tile_scan32: CudaFunction,
    pub join_fill: CudaFunction,
    pub join_insert: CudaFunction,
    pub join_ranges: CudaFunction,
    pub join_place: CudaFunction,
    pub join_sort: CudaFunction,
    pub join_probe: CudaFunction,
    pub join_emit: CudaFunction,
    pub gather1: CudaFunction,
    pub gather2: CudaFunction,
    pub gather4: CudaFunction,
    pub gather8: CudaFunction,
    pub gather_valid: CudaFunction,
    pub gather_str_len: CudaFunction,
    pub gather_str_bytes: CudaFunction,
    pub narrow_offsets: CudaFunction,
    pub filter_place: CudaFunction,
}

/// A word type `Gpu::prefix_sum` scans: 64-bit (`ts_tile_sums`, `ts_tile_scan`) or 32-bit
/// (their `32` twins).
pub(super) trait Scanned: DeviceRepr {
    /// The tile-sums and tile-scan kernels for this word type.
    fn scan_fns(fns: &FrameFns) -> (&CudaFunction, &CudaFunction);
}

impl Scanned for u64 {
    fn scan_fns(fns: &FrameFns) -> (&CudaFunction, &CudaFunction) {
        (&fns.tile_sums, &fns.tile_scan)
    }
}

impl Scanned for u32 {
    fn scan_fns(fns: &FrameFns) -> (&CudaFunction, &CudaFunction) {
        (&fns.tile_sums32, &fns.tile_scan32)
    }
}

/// NVRTC's check of `frame.cu` for `arch` (also run by the CI's compile test).
pub fn compile_frame_kernels(arch: &str) -> Result<cudarc::nvrtc::Ptx, KernelError> {
    nvrtc::compile_source("tessera_frame", FRAME_SOURCE, arch)
}

/// One column on the device: its buffers (kept alive while launches read them) and the
/// five words of `frame.cu`'s `ts_col`.
pub(super) struct DevCol {
    _buffers: Vec<CudaSlice<u8>>,
    words: [u64; 5],
}

/// Copies `bytes` in (one zero byte for none: an empty allocation is no valid pointer).
fn upload(gpu: &Gpu, stream: &Arc<CudaStream>, bytes: &[u8]) -> Result<CudaSlice<u8>, KernelError> {
    let bytes = if bytes.is_empty() { &[0u8][..] } else { bytes };
    gpu.to_device(stream, bytes)
}

fn address(stream: &CudaStream, s: &CudaSlice<u8>) -> u64 {
    let (ptr, _sync) = s.device_ptr(stream);
    ptr
}

/// A column's device copy: kept for the input chunk it is a column of (see `resident`), or
/// made for this task alone.
pub(super) type ColCopy = OnDevice<DevCol>;

/// The width of a column type whose values the kernels copy and gather as they are: 1, 2,
/// 4 or 8 bytes.
pub(super) fn fixed_width(data_type: &DataType) -> Option<usize> {
    data_type
        .primitive_width()
        .filter(|w| matches!(w, 1 | 2 | 4 | 8))
}

/// The table chunk among `owners` that holds `array` as a column, with its index there.
fn owner_of<'a>(
    owners: &'a [Arc<ChunkData>],
    array: &ArrayRef,
) -> Option<(&'a Arc<ChunkData>, usize)> {
    owners.iter().find_map(|chunk| match chunk.as_ref() {
        ChunkData::Table(t) => t
            .columns()
            .iter()
            .position(|c| Arc::ptr_eq(c, array))
            .map(|at| (chunk, at)),
        _ => None,
    })
}

impl Gpu {
    /// The device copy of `part` of `column` read as `kind` ([`dev_col`]), or for `None`
    /// its values alone ([`fixed_col`]: `None` where they are not 1, 2, 4 or 8 bytes wide);
    /// kept between tasks where `column` is a column of one of the task's inputs, `owners`.
    pub(super) fn col_copy(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        column: &ArrayRef,
        part: ColPart,
        kind: Option<ColKind>,
    ) -> Result<Option<ColCopy>, KernelError> {
        let not_part =
            || KernelError::BadInput(format!("{part:?} of a {} column", column.data_type()));
        let data_type = part.data_type(column).ok_or_else(not_part)?;
        // The part is made only to be copied in (a canonical keys' column is computed).
        let make = || {
            let array = part.of(column).ok_or_else(not_part)?;
            match kind {
                Some(kind) => dev_col(self, stream, &array, kind).map(Some),
                None => fixed_col(self, stream, &array),
            }
        };
        let Some((chunk, index)) = owner_of(owners, column) else {
            return Ok(make()?.map(OnDevice::Made));
        };
        if kind.is_none() && fixed_width(&data_type).is_none() {
            return Ok(None);
        }
        let part_code = match part {
            ColPart::Rows => 0,
            ColPart::DictKeys => 64,
            ColPart::DictValues => 128,
            ColPart::DictCanonical => 192,
        };
        let layout = part_code + kind.map_or(0, |k| 1 + k as u8);
        let piece = Piece::Column { index, layout };
        let copy = self.resident(stream, chunk, piece, || {
            make()?
                .ok_or_else(|| KernelError::BadInput(format!("no device layout for {data_type}")))
        })?;
        Ok(Some(OnDevice::Kept(copy)))
    }
}

/// The device copy of `array`, read as `kind`.
pub(super) fn dev_col(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    array: &ArrayRef,
    kind: ColKind,
) -> Result<DevCol, KernelError> {
    let layout = match kind {
        ColKind::Utf8 => Layout::Strings(4),
        ColKind::LargeUtf8 => Layout::Strings(8),
        ColKind::Bool => Layout::Bits,
        _ => Layout::Values,
    };
    let mut col = upload_col(gpu, stream, array, layout)?;
    col.words[0] = kind as i64 as u64;
    Ok(col)
}

/// The device copy of a column of 1, 2, 4 or 8-byte values (its kind word unset, which
/// only gathers read), or `None` for any other layout.
pub(super) fn fixed_col(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    array: &ArrayRef,
) -> Result<Option<DevCol>, KernelError> {
    match fixed_width(array.data_type()) {
        Some(_) => upload_col(gpu, stream, array, Layout::Values).map(Some),
        None => Ok(None),
    }
}

/// How a column's values are copied in.
#[derive(Clone, Copy)]
enum Layout {
    /// Fixed-width values, as they are.
    Values,
    /// A string column's bytes and its offsets, of this many bytes each.
    Strings(usize),
    /// Booleans, their bits moved to start at bit 0.
    Bits,
}

/// The device copy of `array`'s rows, laid out as `layout`, and its validity bitmap where
/// it has nulls.
fn upload_col(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    array: &ArrayRef,
    layout: Layout,
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
    let (values, offsets) = match layout {
        Layout::Strings(width) => {
            let offs = data.buffers().first().ok_or_else(bad)?.as_slice();
            let offs = offs
                .get(offset * width..(offset + len + 1) * width)
                .ok_or_else(bad)?;
            let bytes = data.buffers().get(1).ok_or_else(bad)?.as_slice();
            (
                upload(gpu, stream, bytes)?,
                Some(upload(gpu, stream, offs)?),
            )
        }
        Layout::Bits => {
            let bits = array.as_boolean_opt().ok_or_else(bad)?.values().sliced();
            (upload(gpu, stream, bits.as_slice())?, None)
        }
        Layout::Values => {
            let width = array.data_type().primitive_width().ok_or_else(bad)?;
            let all = data.buffers().first().ok_or_else(bad)?.as_slice();
            let bytes = all
                .get(offset * width..(offset + len) * width)
                .ok_or_else(bad)?;
            (upload(gpu, stream, bytes)?, None)
        }
    };
    let mut words = [0, address(stream, &values), 0, 0, 0];
    buffers.push(values);
    if let Some(o) = offsets {
        words[2] = address(stream, &o);
        buffers.push(o);
    }
    if let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) {
        let bits = nulls.inner();
        let valid = upload(gpu, stream, bits.values())?;
        words[3] = address(stream, &valid);
        words[4] = bits.offset() as u64;
        buffers.push(valid);
    }
    Ok(DevCol {
        _buffers: buffers,
        words,
    })
}

impl DeviceBytes for DevCol {
    fn device_bytes(&self) -> u64 {
        self._buffers.iter().map(|b| b.len() as u64).sum()
    }
}

impl DevCol {
    /// The device address of the values (of row 0).
    pub(super) fn values(&self) -> u64 {
        self.words[1]
    }

    /// The device address of a string column's offsets (of row 0; 0 for other columns).
    pub(super) fn offsets(&self) -> u64 {
        self.words[2]
    }

    /// The device address of the validity bitmap (0 when every row is valid) and its bit
    /// of row 0.
    pub(super) fn validity(&self) -> (u64, u64) {
        (self.words[3], self.words[4])
    }
}

/// The `ts_col` array of `cols` on the device (one unused zero descriptor for none: an
/// empty allocation is no valid pointer).
pub(super) fn descriptors(
    stream: &Arc<CudaStream>,
    cols: &[&DevCol],
) -> Result<CudaSlice<u64>, KernelError> {
    let mut words: Vec<u64> = cols.iter().flat_map(|c| c.words).collect();
    if words.is_empty() {
        words = vec![0; 5];
    }
    stream
        .clone_htod(&words)
        .map_err(driver("copy to the device"))
}

/// Launches `args` with `grid` blocks of `block` threads and `shared` bytes.
pub(super) fn launch(
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
    pub(super) fn frame_fns(&self) -> Result<Arc<FrameFns>, KernelError> {
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
            tile_sums: f("ts_tile_sums")?,
            tile_scan: f("ts_tile_scan")?,
            tile_sums32: f("ts_tile_sums32")?,
            tile_scan32: f("ts_tile_scan32")?,
            join_fill: f("ts_join_fill")?,
            join_insert: f("ts_join_insert")?,
            join_ranges: f("ts_join_ranges")?,
            join_place: f("ts_join_place")?,
            join_sort: f("ts_join_sort")?,
            join_probe: f("ts_join_probe")?,
            join_emit: f("ts_join_emit")?,
            gather1: f("ts_gather1")?,
            gather2: f("ts_gather2")?,
            gather4: f("ts_gather4")?,
            gather8: f("ts_gather8")?,
            gather_valid: f("ts_gather_valid")?,
            gather_str_len: f("ts_gather_str_len")?,
            gather_str_bytes: f("ts_gather_str_bytes")?,
            narrow_offsets: f("ts_narrow_offsets")?,
            filter_place: f("ts_filter_place")?,
        });
        *slot = Some(Arc::clone(&fns));
        Ok(fns)
    }

    /// Zeroed device words (at least one).
    pub(super) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        stream: &Arc<CudaStream>,
        len: usize,
    ) -> Result<CudaSlice<T>, KernelError> {
        stream
            .alloc_zeros::<T>(len.max(1))
            .map_err(driver("allocation"))
    }

    /// `len` device words (at least one), every one set to `value` by a kernel: allocated
    /// without the memset of [`Gpu::zeros`], which the fill would overwrite.
    pub(super) fn filled(
        &self,
        stream: &Arc<CudaStream>,
        fns: &FrameFns,
        len: usize,
        value: u64,
    ) -> Result<CudaSlice<u64>, KernelError> {
        let n = len.max(1);
        // SAFETY: the fill below writes all `n` words before any kernel or copy reads one
        // (both are ordered after it on `stream`).
        let buf = unsafe { stream.alloc::<u64>(n) }.map_err(driver("allocation"))?;
        let n64 = i64_of(n)?;
        let mut args = stream.launch_builder(&fns.fill);
        args.arg(&buf).arg(&n64).arg(&value);
        launch(args, self.grid(n), BLOCK, 0)?;
        Ok(buf)
    }

    /// Numbers the groups `ts_gb_insert` found among `rows` rows in order of their first
    /// rows (`group_of_slot`); returns how many there are.
    pub(super) fn number_groups(
        &self,
        stream: &Arc<CudaStream>,
        fns: &FrameFns,
        rows: usize,
        slot_of_row: &CudaSlice<u32>,
        first: &CudaSlice<u64>,
        group_of_slot: &CudaSlice<u32>,
    ) -> Result<(CudaSlice<u64>, usize), KernelError> {
        let tiles = rows.div_ceil(TILE);
        let tile_grid = tiles.min(self.sms as usize * 8);
        let n = i64_of(rows)?;
        let counts = self.zeros::<u64>(stream, tiles + 1)?;
        let mut args = stream.launch_builder(&fns.count_firsts);
        args.arg(&n).arg(slot_of_row).arg(first).arg(&counts);
        launch(args, tile_grid, BLOCK, 0)?;
        let tiles64 = i64_of(tiles)?;
        let mut args = stream.launch_builder(&fns.scan);
        args.arg(&counts).arg(&tiles64);
        launch(args, 1, 1024, 0)?;
        let total = stream
            .clone_dtoh(&counts.slice(tiles..tiles + 1))
            .map_err(driver("copy from the device"))?;
        let groups = total.first().copied().unwrap_or(0) as usize;
        let first_rows = self.zeros::<u64>(stream, groups)?;
        let mut args = stream.launch_builder(&fns.number);
        args.arg(&n)
            .arg(slot_of_row)
            .arg(first)
            .arg(&counts)
            .arg(group_of_slot)
            .arg(&first_rows);
        launch(args, tile_grid, BLOCK, 0)?;
        Ok((first_rows, groups))
    }

    /// Blocks for a grid-stride loop over `len` items.
    pub(super) fn grid(&self, len: usize) -> usize {
        len.div_ceil(BLOCK as usize).min(self.sms as usize * 8)
    }

    /// Turns `x[..n]` into its exclusive prefix sum; returns the total (which the caller
    /// knows to fit in `T`).
    pub(super) fn prefix_sum<T: Scanned>(
        &self,
        stream: &Arc<CudaStream>,
        fns: &FrameFns,
        x: &mut CudaSlice<T>,
        n: usize,
    ) -> Result<u64, KernelError> {
        let tiles = n.div_ceil(TILE);
        let sums = self.zeros::<u64>(stream, tiles + 1)?;
        let (n64, tiles64) = (i64_of(n)?, i64_of(tiles)?);
        let tile_grid = tiles.min(self.sms as usize * 8);
        let (tile_sums, tile_scan) = T::scan_fns(fns);
        let mut args = stream.launch_builder(tile_sums);
        args.arg(&*x).arg(&n64).arg(&sums);
        launch(args, tile_grid, BLOCK, 0)?;
        let mut args = stream.launch_builder(&fns.scan);
        args.arg(&sums).arg(&tiles64);
        launch(args, 1, 1024, 0)?;
        let mut args = stream.launch_builder(tile_scan);
        args.arg(x).arg(&n64).arg(&sums);
        launch(args, tile_grid, BLOCK, 0)?;
        let total = stream
            .clone_dtoh(&sums.slice(tiles..tiles + 1))
            .map_err(driver("copy from the device"))?;
        Ok(total.first().copied().unwrap_or(0))
    }
}

/// The device as a [`FrameDevice`] on one stream, adding up its kernels' device time.
pub(super) struct GpuFrames<'a> {
    pub gpu: &'a Gpu,
    pub stream: &'a Arc<CudaStream>,
    /// The task's inputs, whose columns' device copies are kept between tasks.
    pub owners: &'a [Arc<ChunkData>],
    /// Whether to time the kernels (CUDA events).
    pub timed: bool,
    pub took: Cell<Duration>,
}

impl GpuFrames<'_> {
    /// What a kernel found, its device time added to the task's.
    fn counted<T>(&self, found: (T, Duration)) -> T {
        self.took.set(self.took.get() + found.1);
        found.0
    }
}

impl FrameDevice for GpuFrames<'_> {
    fn group_partial(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, KernelError> {
        let found = self
            .gpu
            .group_partial(self.stream, self.owners, spec, batch, self.timed)?;
        Ok(self.counted(found))
    }

    fn match_keys(
        &self,
        build: &[ArrayRef],
        probe: &[ArrayRef],
        keep_unmatched: bool,
    ) -> Result<Option<Box<dyn JoinMatches<KernelError> + '_>>, KernelError> {
        let found = self.gpu.match_keys(
            self.stream,
            self.owners,
            build,
            probe,
            keep_unmatched,
            self.timed,
        )?;
        Ok(found.map(|found| {
            Box::new(GpuMatches {
                frames: self,
                matches: self.counted(found),
            }) as Box<dyn JoinMatches<KernelError>>
        }))
    }

    fn filtered_group_partial(
        &self,
        spec: &GroupBySpec,
        predicate: &Expr,
        batch: &RecordBatch,
    ) -> Result<Option<RecordBatch>, KernelError> {
        let found = self.gpu.filtered_group_partial(
            self.stream,
            self.owners,
            spec,
            predicate,
            batch,
            self.timed,
        )?;
        Ok(found.map(|found| self.counted(found)))
    }

    fn filter(
        &self,
        predicate: &Expr,
        over: &RecordBatch,
        keep: &RecordBatch,
    ) -> Result<Option<RecordBatch>, KernelError> {
        let found = self
            .gpu
            .filter(self.stream, self.owners, predicate, over, keep, self.timed)?;
        Ok(found.map(|found| self.counted(found)))
    }
}
