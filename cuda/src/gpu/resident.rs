//! Device copies of chunks, kept between tasks: a chunk a GPU task read stays on the
//! device while its host chunk lives, so the next task that reads it (another block
//! product with the same operand, another query on a persisted table, the next pass of an
//! iterative job) skips the copy in.
//!
//! The host chunk stays the authoritative copy: an entry is only a cache of it, keyed by
//! the chunk's allocation (held by a [`Weak`] so that the address cannot be reused while
//! the entry exists) and the piece of it that was copied ([`Piece`]). An entry whose chunk
//! was dropped by the store (freed, spilled, dropped to be recomputed) is forgotten at the
//! next insert; under its byte limit the least recently used entries no task is reading are
//! freed first. Freeing an entry never loses data, so this tier spills by dropping.
//!
//! A task's outputs enter the same cache: the device values a task made that equal a piece
//! of its output chunk (a fused kernel's tensor, a product, a QR's Q) are kept as that
//! chunk's copy when the chunk is made ([`Gpu::keep_made`]), so a GPU task reading the
//! output of another skips the copy in. The copy back still happens: the host chunk stays
//! the authoritative one.

use super::devbuf::DevBuf;
use super::{driver, Gpu};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tessera_kernels::linalg::InputRef;
use tessera_kernels::tensor::HostTensor;
use tessera_kernels::{ChunkData, KernelError};

/// Device memory held by a value.
pub(super) trait DeviceBytes {
    /// Bytes of device memory it holds.
    fn device_bytes(&self) -> u64;
}

impl<T> DeviceBytes for CudaSlice<T> {
    fn device_bytes(&self) -> u64 {
        (self.len() * std::mem::size_of::<T>()) as u64
    }
}

/// A device copy made by some task on its stream, complete once `ready` has passed there.
pub(super) struct DeviceCopy<T> {
    /// The copy.
    pub value: T,
    ready: CudaEvent,
}

/// What a task reads on the device: a kept copy of an input's piece, or a value made for
/// this task alone (one no input holds as it is: computed by the task, or concatenated
/// from several inputs).
pub(super) enum OnDevice<T> {
    Kept(Arc<DeviceCopy<T>>),
    Made(T),
}

impl<T> std::ops::Deref for OnDevice<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match self {
            OnDevice::Kept(copy) => &copy.value,
            OnDevice::Made(value) => value,
        }
    }
}

impl Gpu {
    /// The device copy of `piece` of `chunk` for a task on `stream`: a kept one, which `stream` first waits for (another task's stream may
    /// still be copying it in), or a new one that `upload` makes on `stream`, then kept for
    /// later tasks where it fits (see [`Resident::keep`]). The task holds the copy while
    /// it uses it, so it is not freed under it.
    pub(super) fn resident<T: Any + Send + Sync + DeviceBytes>(
        &self,
        stream: &Arc<CudaStream>,
        chunk: &Arc<ChunkData>,
        piece: Piece,
        upload: impl FnOnce() -> Result<T, KernelError>,
    ) -> Result<Arc<DeviceCopy<T>>, KernelError> {
        if let Some(copy) = self.resident.get::<DeviceCopy<T>>(chunk, piece) {
            stream.wait(&copy.ready).map_err(driver("event"))?;
            return Ok(copy);
        }
        let value = upload()?;
        let bytes = value.device_bytes();
        let ready = stream.record_event(None).map_err(driver("event"))?;
        Ok(self
            .resident
            .keep(chunk, piece, bytes, DeviceCopy { value, ready }))
    }

    /// The device copy of a linear-algebra operand on `stream`: `values`, the rows `r`
    /// names of its input (as `input_rows` gave them), kept for that input's piece.
    pub(super) fn operand(
        &self,
        stream: &Arc<CudaStream>,
        inputs: &[Arc<ChunkData>],
        r: &InputRef,
        values: &[f64],
    ) -> Result<Arc<DeviceCopy<DevBuf>>, KernelError> {
        let chunk = inputs.get(r.input).ok_or_else(|| {
            KernelError::BadInput(format!(
                "input {} is missing ({} given)",
                r.input,
                inputs.len()
            ))
        })?;
        let piece = Piece::Values {
            part: r.part,
            rows: r.rows,
        };
        self.resident(stream, chunk, piece, || {
            Ok(DevBuf::F64(self.to_device(stream, values)?))
        })
    }

    /// Bytes of device memory the kept copies of chunks hold.
    pub fn resident_bytes(&self) -> u64 {
        self.resident.bytes()
    }

    /// `ran`'s chunk, shared, with each device value it made kept as the copy of its piece
    /// of that chunk (where it fits, see [`Resident::keep`]; a value whose size is not the
    /// piece's is dropped), so that later tasks on this device reading the chunk skip the
    /// copy in.
    pub(super) fn keep_made(
        &self,
        stream: &Arc<CudaStream>,
        ran: Ran,
    ) -> Result<(Arc<ChunkData>, Duration), KernelError> {
        let data = Arc::new(ran.data);
        for (piece, value) in ran.made {
            let bytes = value.device_bytes();
            if piece_of(&data, piece).map(|t| (t.dtype(), t.nbytes() as u64))
                != Some((value.dtype(), bytes))
            {
                continue;
            }
            let ready = stream.record_event(None).map_err(driver("event"))?;
            self.resident
                .keep(&data, piece, bytes, DeviceCopy { value, ready });
        }
        Ok((data, ran.took))
    }
}

/// What a task run on the device gives back: its chunk (copied to host memory), the
/// device time of its kernels, and the device values it made that equal pieces of that
/// chunk as an input's copy would hold them (see [`Gpu::keep_made`]).
pub(super) struct Ran {
    /// The chunk.
    pub data: ChunkData,
    /// The device time of its kernels (zero when untimed).
    pub took: Duration,
    /// Device values holding pieces of `data`, each with the piece it holds.
    pub made: Vec<(Piece, DevBuf)>,
}

impl Ran {
    /// A chunk that keeps nothing on the device.
    pub(super) fn host(data: ChunkData, took: Duration) -> Ran {
        Ran {
            data,
            took,
            made: Vec::new(),
        }
    }
}

/// The tensor whose values `piece` of `chunk` is: a whole tensor chunk or one whole part
/// (`None` for other pieces, which outputs do not give, and for an empty tensor, whose
/// device copy is one element: no allocation is empty).
fn piece_of(chunk: &ChunkData, piece: Piece) -> Option<&HostTensor> {
    let tensor = match (chunk, piece) {
        (
            ChunkData::Tensor(t),
            Piece::Values {
                part: None,
                rows: None,
            },
        ) => t,
        (
            ChunkData::Parts(parts),
            Piece::Values {
                part: Some(p),
                rows: None,
            },
        ) => parts.get(p)?,
        _ => return None,
    };
    (!tensor.is_empty()).then_some(tensor)
}

/// Which piece of a chunk a device copy holds.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(super) enum Piece {
    /// The values of a tensor chunk, or of part `part` of a multi-part one.
    Values {
        /// The part (`None` for a tensor chunk).
        part: Option<usize>,
        /// The row range `(start, len)` along axis 0, or `None` for every row.
        rows: Option<(usize, usize)>,
    },
    /// Column `index` of a table chunk, copied as `layout` describes (a code of the
    /// caller's).
    Column {
        /// The column's index in the table.
        index: usize,
        /// How it was laid out on the device.
        layout: u8,
    },
}

/// All of a tensor chunk's values.
pub(super) const WHOLE: Piece = Piece::Values {
    part: None,
    rows: None,
};

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Key {
    /// The address of the chunk's allocation (kept alive by the entry's `Weak`).
    chunk: usize,
    piece: Piece,
}

struct Entry {
    owner: Weak<ChunkData>,
    value: Arc<dyn Any + Send + Sync>,
    bytes: u64,
    used: u64,
}

/// What the cache holds.
#[derive(Default)]
struct Held {
    entries: HashMap<Key, Entry>,
    bytes: u64,
    clock: u64,
}

/// A GPU's device copies of chunks, at most `limit` bytes of them.
pub(super) struct Resident {
    limit: u64,
    held: Mutex<Held>,
}

impl Resident {
    /// A cache of at most `limit` bytes.
    pub(super) fn new(limit: u64) -> Resident {
        Resident {
            limit,
            held: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The device copy of `piece` of `chunk`, if one is kept (and of type `T`); where none
    /// is, the caller copies the piece in and offers it with [`Resident::keep`].
    pub(super) fn get<T: Any + Send + Sync>(
        &self,
        chunk: &Arc<ChunkData>,
        piece: Piece,
    ) -> Option<Arc<T>> {
        let key = key(chunk, piece);
        let mut held = self.lock();
        held.clock += 1;
        let clock = held.clock;
        let entry = held.entries.get_mut(&key)?;
        let same = entry
            .owner
            .upgrade()
            .is_some_and(|owner| Arc::ptr_eq(&owner, chunk));
        match Arc::clone(&entry.value).downcast::<T>() {
            Ok(value) if same => {
                entry.used = clock;
                Some(value)
            }
            _ => {
                held.remove(&key);
                None
            }
        }
    }

    /// Keeps `value`, the device copy of `piece` of `chunk` (`bytes` of device memory),
    /// and returns it for the caller's use. It is kept only where it fits in the limit once
    /// the entries of dropped chunks and then the least recently used ones no task holds
    /// are freed; otherwise it is freed when the caller is done with it.
    pub(super) fn keep<T: Any + Send + Sync>(
        &self,
        chunk: &Arc<ChunkData>,
        piece: Piece,
        bytes: u64,
        value: T,
    ) -> Arc<T> {
        let value = Arc::new(value);
        if bytes > self.limit {
            return value;
        }
        let mut held = self.lock();
        held.forget_dropped();
        while held.bytes + bytes > self.limit {
            let idle = held
                .entries
                .iter()
                .filter(|(_, e)| Arc::strong_count(&e.value) == 1)
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| *k);
            match idle {
                Some(k) => held.remove(&k),
                None => return value,
            }
        }
        held.clock += 1;
        let entry = Entry {
            owner: Arc::downgrade(chunk),
            value: Arc::clone(&value) as Arc<dyn Any + Send + Sync>,
            bytes,
            used: held.clock,
        };
        held.bytes += bytes;
        if let Some(old) = held.entries.insert(key(chunk, piece), entry) {
            held.bytes -= old.bytes;
        }
        value
    }

    /// Bytes of device memory the cache holds.
    pub(super) fn bytes(&self) -> u64 {
        self.lock().bytes
    }

    /// Entries kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

impl Held {
    fn remove(&mut self, key: &Key) {
        if let Some(e) = self.entries.remove(key) {
            self.bytes -= e.bytes;
        }
    }

    /// Frees the entries whose host chunk is gone.
    fn forget_dropped(&mut self) {
        let mut freed = 0;
        self.entries.retain(|_, e| {
            let live = e.owner.strong_count() > 0;
            if !live {
                freed += e.bytes;
            }
            live
        });
        self.bytes -= freed;
    }
}

fn key(chunk: &Arc<ChunkData>, piece: Piece) -> Key {
    Key {
        chunk: Arc::as_ptr(chunk) as usize,
        piece,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_kernels::tensor::{Buffer, HostTensor};

    fn chunk(v: i64) -> Arc<ChunkData> {
        Arc::new(ChunkData::Tensor(HostTensor::scalar(
            tessera_kernels::Scalar::I64(v),
        )))
    }

    fn hit<T: Any + Send + Sync + Copy>(r: &Resident, c: &Arc<ChunkData>, p: Piece) -> Option<T> {
        r.get::<T>(c, p).map(|v| *v)
    }

    #[test]
    fn a_kept_copy_is_found_for_its_chunk_and_piece_only() {
        let r = Resident::new(100);
        let (a, twin) = (chunk(1), chunk(1));
        assert_eq!(hit::<u32>(&r, &a, WHOLE), None);
        assert_eq!(*r.keep(&a, WHOLE, 10, 7u32), 7);
        assert_eq!(hit::<u32>(&r, &a, WHOLE), Some(7));
        // Equal values in another allocation are another chunk.
        assert_eq!(hit::<u32>(&r, &twin, WHOLE), None);
        let rows = Piece::Values {
            part: None,
            rows: Some((0, 1)),
        };
        assert_eq!(hit::<u32>(&r, &a, rows), None);
        let column = Piece::Column {
            index: 0,
            layout: 1,
        };
        assert_eq!(hit::<u32>(&r, &a, column), None);
        // A lookup of another type is a miss, and forgets the entry.
        assert_eq!(hit::<u64>(&r, &a, WHOLE), None);
        assert_eq!((r.len(), r.bytes()), (0, 0));
    }

    #[test]
    fn the_copy_of_a_dropped_chunk_is_freed() {
        let r = Resident::new(100);
        let a = chunk(1);
        r.keep(&a, WHOLE, 60, 1u32);
        drop(a);
        // The next copy kept frees it, though both would not fit.
        let b = chunk(2);
        r.keep(&b, WHOLE, 60, 2u32);
        assert_eq!((r.len(), r.bytes()), (1, 60));
        assert_eq!(hit::<u32>(&r, &b, WHOLE), Some(2));
    }

    #[test]
    fn the_least_recently_used_idle_copies_make_room() {
        let r = Resident::new(100);
        let (a, b, c) = (chunk(1), chunk(2), chunk(3));
        r.keep(&a, WHOLE, 40, 1u32);
        r.keep(&b, WHOLE, 40, 2u32);
        assert_eq!(hit::<u32>(&r, &a, WHOLE), Some(1));
        r.keep(&c, WHOLE, 40, 3u32);
        // b was used longest ago.
        assert_eq!(hit::<u32>(&r, &b, WHOLE), None);
        assert_eq!(hit::<u32>(&r, &a, WHOLE), Some(1));
        assert_eq!(hit::<u32>(&r, &c, WHOLE), Some(3));
        assert_eq!(r.bytes(), 80);
    }

    #[test]
    fn copies_in_use_stay_and_what_does_not_fit_is_not_kept() {
        let r = Resident::new(100);
        let (a, b, c) = (chunk(1), chunk(2), chunk(3));
        let in_use = r.keep(&a, WHOLE, 70, 1u32);
        // No idle entry to free: b is handed back for its task but not kept.
        assert_eq!(*r.keep(&b, WHOLE, 40, 2u32), 2);
        assert_eq!(hit::<u32>(&r, &b, WHOLE), None);
        // Larger than the whole cache: never kept.
        r.keep(&c, WHOLE, 101, 3u32);
        assert_eq!(hit::<u32>(&r, &c, WHOLE), None);
        // Once its task let go, a's copy can make room.
        drop(in_use);
        r.keep(&b, WHOLE, 40, 2u32);
        assert_eq!(hit::<u32>(&r, &a, WHOLE), None);
        assert_eq!(hit::<u32>(&r, &b, WHOLE), Some(2));
        assert_eq!(r.bytes(), 40);
    }

    #[test]
    fn keeping_a_piece_again_replaces_its_copy() {
        let r = Resident::new(100);
        let a = Arc::new(ChunkData::Parts(vec![
            HostTensor::new(vec![2], Buffer::F64(vec![1.0, 2.0])).unwrap(),
            HostTensor::new(vec![1], Buffer::F64(vec![3.0])).unwrap(),
        ]));
        let part = |p| Piece::Values {
            part: Some(p),
            rows: None,
        };
        r.keep(&a, part(0), 16, 1u32);
        r.keep(&a, part(1), 8, 2u32);
        r.keep(&a, part(0), 16, 3u32);
        assert_eq!(hit::<u32>(&r, &a, part(0)), Some(3));
        assert_eq!(hit::<u32>(&r, &a, part(1)), Some(2));
        assert_eq!((r.len(), r.bytes()), (2, 24));
    }

    #[test]
    fn an_output_is_kept_only_as_a_whole_tensor_or_part_with_values() {
        let t = |n: usize| HostTensor::new(vec![n], Buffer::F64(vec![1.0; n])).unwrap();
        let tensor = ChunkData::Tensor(t(3));
        let parts = ChunkData::Parts(vec![t(2), t(0)]);
        let part = |p| Piece::Values {
            part: Some(p),
            rows: None,
        };
        let nbytes = |c, p| piece_of(c, p).map(HostTensor::nbytes);
        assert_eq!(nbytes(&tensor, WHOLE), Some(24));
        assert_eq!(nbytes(&parts, part(0)), Some(16));
        // An empty part, a part of a tensor, a tensor of parts, some rows, a column: none.
        assert_eq!(nbytes(&parts, part(1)), None);
        assert_eq!(nbytes(&tensor, part(0)), None);
        assert_eq!(nbytes(&parts, WHOLE), None);
        let rows = Piece::Values {
            part: None,
            rows: Some((0, 3)),
        };
        assert_eq!(nbytes(&tensor, rows), None);
        let column = Piece::Column {
            index: 0,
            layout: 0,
        };
        assert_eq!(nbytes(&tensor, column), None);
    }
}
