//! Join matching on the device: the build side's keys go into `frame.cu`'s hash table
//! (open addressing, each slot holding its key's hash beside the word counting its rows,
//! so that a one-column integer key is matched without reading a build row), its rows are
//! laid out per slot in row order (each slot given a range of a row list, in no particular
//! order, whose start its word then holds, so no group numbering or scan over the slots;
//! each row placed by the rank its slot's count gave it, then each range sorted), and each probe
//! row's matches are counted, prefix-summed and written in probe row order: the CPU's
//! `(probe row, build row)` pairs, kept on the device, where [`super::gather`] gathers the
//! joined table's fixed-width and string columns by them (the CPU the others, from a copy
//! of the pairs). Key columns of integer and string types without nulls; a key whose build
//! rows number more than [`MOST_PER_KEY`] leaves the matching to the CPU (the per-key sort
//! is a short insertion sort).

use super::frame::{descriptors, launch, ColCopy, DevCol, BLOCK};
use super::{driver, Gpu, Timer};
use crate::frame_plan::{ColKind, ColPart};
use crate::launch::i64_of;
use arrow::array::{Array, ArrayData, ArrayRef};
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, PushKernelArg};
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::frame::join::{MatchSide, Matches};
use tessera_kernels::{ChunkData, KernelError};

/// Most build rows of one key the device lays out in order.
pub(super) const MOST_PER_KEY: u64 = 256;

/// Slots per thread of `ts_join_ranges` (`TS_RANGE_SLOTS` in `frame.cu`).
const RANGE_SLOTS: usize = 4;

/// A join's matches on the device: each output row's probe and build row (`u32::MAX` for
/// none), and the key columns copied in to find them, which gathers reuse.
pub(super) struct DevMatches {
    pub probe: CudaSlice<u32>,
    pub build: CudaSlice<u32>,
    /// Output rows.
    pub total: usize,
    /// Whether some build rows may be missing (a left join).
    pub unmatched: bool,
    /// Each key column as given, with its side and its device copy.
    pub keys: Vec<(MatchSide, ArrayData, ColCopy)>,
}

impl DevMatches {
    /// The device copy of `col` of `side` where it is one of the keys.
    pub(super) fn key_copy(&self, side: MatchSide, col: &ArrayRef) -> Option<&DevCol> {
        let data = col.to_data();
        self.keys
            .iter()
            .find(|(s, d, _)| *s == side && d.ptr_eq(&data))
            .map(|(_, _, c)| &**c)
    }

    /// The matches, copied to the host.
    pub(super) fn pairs_on_host(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
    ) -> Result<Matches, KernelError> {
        Ok((
            gpu.to_host(stream, &self.probe, self.total)?,
            gpu.to_host(stream, &self.build, self.total)?,
        ))
    }
}

/// The device copies of key columns whose kinds the kernels read, or `None`.
fn key_cols(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    owners: &[Arc<ChunkData>],
    keys: &[ArrayRef],
) -> Result<Option<Vec<ColCopy>>, KernelError> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let copy = match ColKind::key(k.data_type()) {
            Some(kind) => gpu.col_copy(stream, owners, k, ColPart::Rows, Some(kind))?,
            None => None,
        };
        match copy {
            Some(c) => out.push(c),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// `len` (at least one) device elements left unset, without the memset of `alloc_zeros`.
///
/// # Safety
/// Every element read later is first written by a kernel ordered before the read on
/// `stream`.
unsafe fn unset<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, KernelError> {
    // SAFETY: the caller's contract.
    unsafe { stream.alloc::<T>(len.max(1)) }.map_err(driver("allocation"))
}

fn is_string(k: &ArrayRef) -> bool {
    matches!(
        ColKind::key(k.data_type()),
        Some(ColKind::Utf8 | ColKind::LargeUtf8)
    )
}

impl Gpu {
    /// The matches of `probe` keys against `build` keys (see the module docs), left on the
    /// device, with the kernels' device time when `timed`; `None` where the keys are not the
    /// kernels' to match.
    pub(super) fn match_keys(
        &self,
        stream: &Arc<CudaStream>,
        owners: &[Arc<ChunkData>],
        build: &[ArrayRef],
        probe: &[ArrayRef],
        keep_unmatched: bool,
        timed: bool,
    ) -> Result<Option<(DevMatches, Duration)>, KernelError> {
        let same_class = build.len() == probe.len()
            && build
                .iter()
                .zip(probe)
                .all(|(b, p)| is_string(b) == is_string(p));
        let (nb, np) = (
            build.first().map_or(0, |k| k.len()),
            probe.first().map_or(0, |k| k.len()),
        );
        if !same_class || build.is_empty() || nb == 0 || np == 0 || nb >= 1 << 30 || np >= 1 << 31 {
            return Ok(None);
        }
        let (Some(bcols), Some(pcols)) = (
            key_cols(self, stream, owners, build)?,
            key_cols(self, stream, owners, probe)?,
        ) else {
            return Ok(None);
        };
        let fns = self.frame_fns()?;
        let (bdesc, pdesc) = (
            descriptors(stream, &bcols.iter().map(|c| &**c).collect::<Vec<_>>())?,
            descriptors(stream, &pcols.iter().map(|c| &**c).collect::<Vec<_>>())?,
        );
        let ncols = i32::try_from(build.len()).unwrap_or(i32::MAX);
        let (nb64, np64) = (i64_of(nb)?, i64_of(np)?);
        let slots = (2 * nb).next_power_of_two().max(1024);
        let mask = (slots - 1) as u64;
        // SAFETY: ts_join_insert writes slot_of_row[i] for every row i < nb.
        let slot_of_row = unsafe { unset::<u32>(stream, nb) }?;
        let mut timer = Timer::new(stream, timed)?;
        timer.start(stream)?;
        // The build side: each row's slot and rank in it (the table's words count the
        // slots' rows), then each slot's rows laid out in row order.
        // SAFETY: ts_join_fill writes both words of every slot before the insert reads them.
        let table = unsafe { unset::<u64>(stream, 2 * slots) }?;
        let slots64 = i64_of(slots)?;
        let mut args = stream.launch_builder(&fns.join_fill);
        args.arg(&table).arg(&slots64);
        launch(args, self.grid(slots), BLOCK, 0)?;
        // SAFETY: ts_join_insert writes rank[i] for every row i of a slot, the only rows
        // ts_join_place reads it for.
        let rank = unsafe { unset::<u32>(stream, nb) }?;
        let mut args = stream.launch_builder(&fns.join_insert);
        args.arg(&bdesc)
            .arg(&ncols)
            .arg(&nb64)
            .arg(&table)
            .arg(&mask)
            .arg(&slot_of_row)
            .arg(&rank);
        launch(args, self.grid(nb), BLOCK, 0)?;
        timer.mark(
            stream,
            "join: fill the table, insert and rank the build keys",
        )?;
        // Each slot's range of `rows` (its word now holds it), then the rows placed and sorted.
        let ranged = self.zeros::<u32>(stream, 1)?;
        let most = self.zeros::<u32>(stream, 1)?;
        let mut args = stream.launch_builder(&fns.join_ranges);
        args.arg(&table).arg(&slots64).arg(&ranged).arg(&most);
        launch(args, self.grid(slots.div_ceil(RANGE_SLOTS)), BLOCK, 0)?;
        timer.mark(stream, "join: a range of rows per slot")?;
        let most = stream
            .clone_dtoh(&most)
            .map_err(driver("copy from the device"))?;
        if u64::from(most.first().copied().unwrap_or(0)) > MOST_PER_KEY {
            return Ok(None);
        }
        // SAFETY: ts_join_place writes the positions [0, placed rows) of `rows` (each row of
        // a slot at its range's start plus its rank), which the slots' ranges cover exactly;
        // the sort and the emit read only inside the ranges.
        let rows = unsafe { unset::<u32>(stream, nb) }?;
        let mut args = stream.launch_builder(&fns.join_place);
        args.arg(&nb64)
            .arg(&slot_of_row)
            .arg(&rank)
            .arg(&table)
            .arg(&rows);
        launch(args, self.grid(nb), BLOCK, 0)?;
        timer.mark(stream, "join: place build rows")?;
        let mut args = stream.launch_builder(&fns.join_sort);
        args.arg(&table).arg(&slots64).arg(&rows);
        launch(args, self.grid(slots), BLOCK, 0)?;
        timer.mark(stream, "join: sort each slot's rows")?;
        // The probe side: each row's first build row and output rows, their offsets, the
        // pairs.
        let keep = i32::from(keep_unmatched);
        // SAFETY: ts_join_probe writes match_start[i] for every probe row i < np.
        let match_start = unsafe { unset::<u64>(stream, np) }?;
        let mut offsets = self.zeros::<u64>(stream, np + 1)?;
        let mut args = stream.launch_builder(&fns.join_probe);
        args.arg(&pdesc)
            .arg(&bdesc)
            .arg(&ncols)
            .arg(&np64)
            .arg(&table)
            .arg(&mask)
            .arg(&rows)
            .arg(&keep)
            .arg(&match_start)
            .arg(&offsets);
        launch(args, self.grid(np), BLOCK, 0)?;
        timer.mark(stream, "join: probe")?;
        let total = self.prefix_sum(stream, &fns, &mut offsets, np + 1)? as usize;
        timer.mark(stream, "join: prefix sum over the probe rows")?;
        if u32::try_from(total).is_err() {
            return Ok(None);
        }
        // SAFETY: the offsets partition [0, total): ts_join_emit writes each probe row's
        // positions from its offset, so every output position is written.
        let (probe_out, build_out) =
            unsafe { (unset::<u32>(stream, total)?, unset::<u32>(stream, total)?) };
        let mut args = stream.launch_builder(&fns.join_emit);
        args.arg(&np64)
            .arg(&match_start)
            .arg(&offsets)
            .arg(&rows)
            .arg(&probe_out)
            .arg(&build_out);
        launch(args, self.grid(np), BLOCK, 0)?;
        timer.mark(stream, "join: emit the pairs")?;
        timer.stop(stream)?;
        let took = timer.elapsed()?;
        let keys = (build
            .iter()
            .zip(bcols)
            .map(|(a, c)| (MatchSide::Build, a.to_data(), c)))
        .chain(
            probe
                .iter()
                .zip(pcols)
                .map(|(a, c)| (MatchSide::Probe, a.to_data(), c)),
        )
        .collect();
        let matches = DevMatches {
            probe: probe_out,
            build: build_out,
            total,
            unmatched: keep_unmatched,
            keys,
        };
        Ok(Some((matches, took)))
    }
}
