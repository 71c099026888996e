//! Host↔device copies, the large ones through page-locked staging buffers.
//!
//! The driver copies pageable host memory through a staging buffer of its own, on the
//! calling thread, taking the page faults of a new host vector one by one: about 1.2 GB/s
//! device→host on an H100 host (docs/log/gpu.md, stop 32). A copy of at least [`STAGED_FROM`]
//! bytes goes instead through two page-locked buffers of [`STAGE`] bytes: while the
//! device's DMA engine fills (or drains) one, host threads move the other into (or out of)
//! place, [`COPY_THREADS`] at a time, so that page faults are taken in parallel. The
//! buffers are kept per device for the next copy.

use super::{driver, Gpu};
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice};
use std::mem::{size_of, MaybeUninit};
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};
use tessera_kernels::KernelError;

/// Bytes per staging buffer.
const STAGE: usize = 32 << 20;

/// Copies of fewer bytes go through the driver's own staging.
pub(super) const STAGED_FROM: usize = 8 << 20;

/// Host threads moving one staging buffer's bytes.
const COPY_THREADS: usize = 4;

/// Two page-locked buffers of [`STAGE`] bytes.
pub(super) struct Stage {
    bufs: [PinnedHostSlice<u8>; 2],
}

impl Stage {
    fn new(ctx: &Arc<CudaContext>) -> Result<Stage, KernelError> {
        // Flags 0: cached memory, which the host reads fast (write-combined, the default of
        // `alloc_pinned`, is slow to read).
        // SAFETY: a buffer's bytes are read only after a copy wrote them.
        let one = || unsafe { ctx.alloc_pinned_with_flags::<u8>(STAGE, 0) };
        Ok(Stage {
            bufs: [
                one().map_err(driver("pinned allocation"))?,
                one().map_err(driver("pinned allocation"))?,
            ],
        })
    }

    /// The buffers' addresses, once no copy uses them.
    fn pointers(&mut self) -> Result<[*mut u8; 2], KernelError> {
        let [a, b] = &mut self.bufs;
        Ok([
            a.as_mut_ptr().map_err(driver("staging"))?,
            b.as_mut_ptr().map_err(driver("staging"))?,
        ])
    }
}

/// The pieces of a copy of `bytes` bytes, one staging buffer each.
fn pieces(bytes: usize) -> Vec<Range<usize>> {
    (0..bytes)
        .step_by(STAGE)
        .map(|a| a..(a + STAGE).min(bytes))
        .collect()
}

/// Copies `src` to `dst` (of equal lengths) in parts taken by up to [`COPY_THREADS`]
/// threads, this one among them (alone where no other can be started).
fn spread_copy(src: &[u8], dst: &mut [MaybeUninit<u8>]) {
    let part = src.len().div_ceil(COPY_THREADS).max(1);
    let parts = Mutex::new(src.chunks(part).zip(dst.chunks_mut(part)));
    let drain = || loop {
        let next = parts.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((from, to)) = next else { break };
        let n = from.len().min(to.len());
        // SAFETY: both ranges hold `n` bytes and do not overlap (one is a staging buffer
        // or a source the caller borrows, the other a destination it borrows mutably).
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_mut_ptr().cast::<u8>(), n) }
    };
    std::thread::scope(|s| {
        for _ in 1..COPY_THREADS {
            if let Err(e) = std::thread::Builder::new().spawn_scoped(s, drain) {
                tracing::debug!("no copy thread ({e}); copying on fewer");
                break;
            }
        }
        drain();
    });
}

/// `len` bytes from `ptr` as a slice.
///
/// # Safety
/// `ptr` points to `len` initialized bytes that nothing writes while the slice lives.
unsafe fn bytes_at<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// `len` bytes at `ptr` as a mutable slice.
///
/// # Safety
/// `ptr` points to `len` bytes nothing else reads or writes while the slice lives.
unsafe fn bytes_at_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

impl Gpu {
    /// Runs `copy` with the two staging buffers' addresses (a kept pair, else a new one),
    /// keeping the pair for the next copy when it succeeds. When it fails, the stream is
    /// waited for before the pair is freed: a copy from or into it may still be queued.
    fn staged<R>(
        &self,
        stream: &CudaStream,
        copy: impl FnOnce([*mut u8; 2]) -> Result<R, KernelError>,
    ) -> Result<R, KernelError> {
        let kept = self
            .stages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut stage = match kept {
            Some(s) => s,
            None => Stage::new(&self.ctx)?,
        };
        let done = stage.pointers().and_then(copy);
        match done {
            Ok(_) => self
                .stages
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(stage),
            Err(_) => {
                if let Err(e) = stream.synchronize() {
                    tracing::warn!("a failed staged copy's stream did not finish ({e})");
                }
            }
        }
        done
    }

    /// A device copy of `src`, complete when this returns.
    pub(super) fn to_device<T: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        src: &[T],
    ) -> Result<CudaSlice<T>, KernelError> {
        let bytes = std::mem::size_of_val(src);
        if bytes < STAGED_FROM {
            return stream.clone_htod(src).map_err(driver("copy to the device"));
        }
        // SAFETY: every byte is written by the copies below before any kernel reads it.
        let mut out = unsafe { stream.alloc::<T>(src.len()) }.map_err(driver("allocation"))?;
        // SAFETY: T is plain data (DeviceRepr), so its bytes may be read as bytes.
        let from = unsafe { bytes_at(src.as_ptr().cast::<u8>(), bytes) };
        // SAFETY: the device buffer holds `bytes` bytes of plain data.
        let mut to = unsafe { out.transmute_mut::<u8>(bytes) }
            .ok_or_else(|| KernelError::SizeOverflow(format!("{bytes} bytes")))?;
        self.staged(stream, |bufs| {
            let mut sent: [Option<CudaEvent>; 2] = [None, None];
            for (k, r) in pieces(bytes).into_iter().enumerate() {
                if let Some(e) = sent[k % 2].take() {
                    e.synchronize().map_err(driver("copy to the device"))?;
                }
                // SAFETY: the staging buffer holds STAGE bytes, no copy reads it (its last
                // one was waited for just above), and this is its only slice.
                let buf = unsafe { bytes_at_mut(bufs[k % 2], r.len()) };
                // SAFETY: u8 is valid for any bytes; MaybeUninit<u8> has u8's layout.
                let buf_uninit =
                    unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), buf.len()) };
                spread_copy(&from[r.clone()], buf_uninit);
                // The staging memory is page-locked, so the copy is asynchronous.
                stream
                    .memcpy_htod(&*buf, &mut to.slice_mut(r))
                    .map_err(driver("copy to the device"))?;
                sent[k % 2] = Some(stream.record_event(None).map_err(driver("event"))?);
            }
            for e in sent.into_iter().flatten() {
                e.synchronize().map_err(driver("copy to the device"))?;
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The first `len` elements of `src` (at most its length), copied to the host.
    pub(super) fn to_host<T: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        src: &CudaSlice<T>,
        len: usize,
    ) -> Result<Vec<T>, KernelError> {
        let len = len.min(src.len());
        let bytes = len * size_of::<T>();
        if bytes < STAGED_FROM {
            return stream
                .clone_dtoh(&src.slice(..len))
                .map_err(driver("copy from the device"));
        }
        let mut out: Vec<T> = Vec::with_capacity(len);
        // SAFETY: T is plain data; `out`'s spare capacity holds `len` of them.
        let to = unsafe {
            std::slice::from_raw_parts_mut(
                out.spare_capacity_mut()
                    .as_mut_ptr()
                    .cast::<MaybeUninit<u8>>(),
                bytes,
            )
        };
        // SAFETY: T is plain data, readable as its bytes.
        let from = unsafe { src.transmute::<u8>(bytes) }
            .ok_or_else(|| KernelError::SizeOverflow(format!("{bytes} bytes")))?;
        self.staged(stream, |bufs| {
            let parts = pieces(bytes);
            // Piece j, once its copy into buffer j % 2 (`arrived`) is complete, moved into
            // place.
            let mut drain = |arrived: (CudaEvent, usize)| -> Result<(), KernelError> {
                let (e, j) = arrived;
                e.synchronize().map_err(driver("copy from the device"))?;
                let p = &parts[j];
                // SAFETY: piece j's copy into buffer j % 2 is complete (its event).
                spread_copy(
                    unsafe { bytes_at(bufs[j % 2], p.len()) },
                    &mut to[p.clone()],
                );
                Ok(())
            };
            // Piece k is copied into buffer k % 2 while the host drains piece k - 1.
            let mut arrived = None;
            for (k, r) in parts.iter().enumerate() {
                // SAFETY: buffer k % 2 holds STAGE bytes; the host finished draining it
                // (piece k - 2) before this loop's previous turn ended; this is its only
                // slice.
                let buf = unsafe { bytes_at_mut(bufs[k % 2], r.len()) };
                stream
                    .memcpy_dtoh(&from.slice(r.clone()), buf)
                    .map_err(driver("copy from the device"))?;
                let event = stream.record_event(None).map_err(driver("event"))?;
                if let Some(previous) = arrived.replace((event, k)) {
                    drain(previous)?;
                }
            }
            arrived.map_or(Ok(()), drain)
        })?;
        // SAFETY: every one of the `bytes` bytes of the first `len` elements was written.
        unsafe { out.set_len(len) };
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::gpu::device;

    #[test]
    fn gpu_large_copies_round_trip_through_the_staging_buffers() {
        let Some(gpu) = device() else { return };
        // Below the staging threshold, at it, and over three buffers with a ragged end.
        for n in [1_000, STAGED_FROM / 8, (3 * STAGE + 12_345) / 8] {
            let values: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            gpu.with_lease(|l| {
                let on_device = gpu.to_device(&l.stream, &values)?;
                assert_eq!(gpu.to_host(&l.stream, &on_device, n)?, values, "{n} words");
                // A prefix, and a length past the end (cut to the slice).
                assert_eq!(gpu.to_host(&l.stream, &on_device, n / 2)?, values[..n / 2]);
                assert_eq!(gpu.to_host(&l.stream, &on_device, n + 5)?.len(), n);
                Ok(())
            })
            .unwrap();
        }
        // The buffers are kept for the next copies.
        assert!(!gpu.stages.lock().unwrap().is_empty());
    }

    #[test]
    fn pieces_cover_a_copy_once_in_order() {
        assert!(pieces(0).is_empty());
        assert_eq!(pieces(5), vec![0..5]);
        assert_eq!(pieces(STAGE), vec![0..STAGE]);
        assert_eq!(
            pieces(2 * STAGE + 3),
            vec![0..STAGE, STAGE..2 * STAGE, 2 * STAGE..2 * STAGE + 3]
        );
    }

    #[test]
    fn a_spread_copy_moves_every_byte() {
        for n in [0, 1, 3, 4, 5, 1_000_003] {
            let src: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
            let mut dst = vec![MaybeUninit::new(0u8); n];
            spread_copy(&src, &mut dst);
            // SAFETY: every byte was initialized (by `new` and the copy).
            let got: Vec<u8> = dst.iter().map(|b| unsafe { b.assume_init() }).collect();
            assert_eq!(got, src, "{n} bytes");
        }
    }
}
