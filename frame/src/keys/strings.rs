//! String keys: the [`StrRows`] view of Arrow's string layouts, dictionary arrays, and
//! [`StrEncoder`], which interns strings by hash (short ones compared as two words).

use super::prim::{map_prim, KeyNative};
use super::{hash_str, id_of, null_mask, sparse, unsupported, Growth, MISSING, TABLE_SEED};
use crate::error::{FrameError, FrameResult};
use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, DictionaryArray, GenericStringArray,
    OffsetSizeTrait, PrimitiveArray, StringViewArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::*;
use hashbrown::HashTable;
use std::sync::Arc;

/// Rows of UTF-8 strings, in any of Arrow's layouts.
pub(super) trait StrRows {
    fn n_rows(&self) -> usize;
    /// The nulls, if there are any.
    fn valid_mask(&self) -> Option<&NullBuffer>;
    /// The bytes of row `i < len()`.
    fn bytes(&self, i: usize) -> &[u8];
}

impl<O: OffsetSizeTrait> StrRows for GenericStringArray<O> {
    fn n_rows(&self) -> usize {
        Array::len(self)
    }
    fn valid_mask(&self) -> Option<&NullBuffer> {
        Array::nulls(self).filter(|n| n.null_count() > 0)
    }
    #[inline(always)]
    fn bytes(&self, i: usize) -> &[u8] {
        let offsets = self.value_offsets();
        let (start, end) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
        self.value_data().get(start..end).unwrap_or_default()
    }
}

impl StrRows for StringViewArray {
    fn n_rows(&self) -> usize {
        Array::len(self)
    }
    fn valid_mask(&self) -> Option<&NullBuffer> {
        Array::nulls(self).filter(|n| n.null_count() > 0)
    }
    #[inline(always)]
    fn bytes(&self, i: usize) -> &[u8] {
        self.value(i).as_bytes()
    }
}

/// Calls `f` with each row's bytes (`None` for a null) and collects what it returns.
#[inline(always)]
pub(super) fn map_strs<S: StrRows, R>(s: &S, mut f: impl FnMut(Option<&[u8]>) -> R) -> Vec<R> {
    match s.valid_mask() {
        None => (0..s.n_rows()).map(|i| f(Some(s.bytes(i)))).collect(),
        Some(nulls) => (0..s.n_rows())
            .map(|i| f(nulls.is_valid(i).then(|| s.bytes(i))))
            .collect(),
    }
}

/// Runs `$body` with `$s` the [`StrRows`] view of string array `$a`; `$other` for a
/// non-string array.
macro_rules! with_str_rows {
    ($a:expr, $s:ident => $body:expr, $other:ident => $fallback:expr) => {
        match $a.data_type() {
            DataType::Utf8 => {
                let $s = $a.as_string::<i32>();
                $body
            }
            DataType::LargeUtf8 => {
                let $s = $a.as_string::<i64>();
                $body
            }
            DataType::Utf8View => {
                let $s = $a.as_string_view();
                $body
            }
            $other => $fallback,
        }
    };
}

/// Runs `$body` with `$K` the arrow type of dictionary key type `$dt`; `$other` otherwise.
macro_rules! with_dict_key_type {
    ($dt:expr, $K:ident => $body:expr, $other:ident => $fallback:expr) => {
        match $dt {
            DataType::Int8 => {
                type $K = Int8Type;
                $body
            }
            DataType::Int16 => {
                type $K = Int16Type;
                $body
            }
            DataType::Int32 => {
                type $K = Int32Type;
                $body
            }
            DataType::Int64 => {
                type $K = Int64Type;
                $body
            }
            DataType::UInt8 => {
                type $K = UInt8Type;
                $body
            }
            DataType::UInt16 => {
                type $K = UInt16Type;
                $body
            }
            DataType::UInt32 => {
                type $K = UInt32Type;
                $body
            }
            DataType::UInt64 => {
                type $K = UInt64Type;
                $body
            }
            $other => $fallback,
        }
    };
}

/// Runs `$body` with `$k` the keys (a `PrimitiveArray` of a dictionary key type) of
/// dictionary array `$a`; `$other` for a non-dictionary array.
macro_rules! with_dict_keys {
    ($a:expr, $k:ident => $body:expr, $other:ident => $fallback:expr) => {
        match $a.data_type() {
            DataType::Dictionary(key, _) => with_dict_key_type!(key.as_ref(), K => {
                let $k = $a.as_dictionary::<K>().keys();
                $body
            }, $other => $fallback),
            $other => $fallback,
        }
    };
}
pub(super) use {with_dict_key_type, with_dict_keys, with_str_rows};

/// The values array of dictionary array `a` (any key type).
pub(super) fn dict_values(a: &dyn Array) -> Option<&ArrayRef> {
    a.as_any_dictionary_opt().map(|d| d.values())
}

/// Bytes `at..at + W` of `s` as a little-endian number.
#[inline(always)]
fn word<const W: usize>(s: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let (Some(dst), Some(src)) = (w.get_mut(..W), s.get(at..at + W)) {
        dst.copy_from_slice(src);
    }
    u64::from_le_bytes(w)
}

/// Two words that, with the length, determine a string of up to 16 bytes (overlapping
/// loads from both ends); for longer strings its first and last 8 bytes.
#[inline(always)]
pub(super) fn words(b: &[u8]) -> [u64; 2] {
    let n = b.len();
    match n {
        0 => [0, 0],
        1..=3 => {
            let byte = |i: usize| u64::from(b.get(i).copied().unwrap_or(0));
            [byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16, 0]
        }
        4..=7 => [word::<4>(b, 0), word::<4>(b, n - 4)],
        _ => [word::<8>(b, 0), word::<8>(b, n - 8)],
    }
}

/// An interned string in the table: its full hash, id, length and [`words`]; bytes are
/// compared only for strings longer than 16 bytes whose hash, length and words match.
#[derive(Clone, Copy)]
struct StrEntry {
    hash: u64,
    words: [u64; 2],
    id: u32,
    len: u32,
}

/// Distinct strings, interned by hash.
pub(super) struct StrEncoder {
    bytes: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` are the bytes of id (empty for the null key).
    offsets: Vec<usize>,
    table: HashTable<StrEntry>,
    /// A direct-mapped cache of table entries by the low bits of their hash, while there
    /// are few keys: a hit costs one load instead of a probe of the table.
    memo: Vec<StrEntry>,
    null_id: Option<u32>,
}

/// Slots of [`StrEncoder::memo`] (a power of two).
const MEMO_SLOTS: usize = 1 << 10;
/// The memo is dropped beyond this many keys (it would mostly miss).
const MEMO_MAX_KEYS: usize = MEMO_SLOTS / 2;
/// An empty memo slot (its length matches no string).
const MEMO_EMPTY: StrEntry = StrEntry {
    hash: 0,
    words: [0, 0],
    id: MISSING,
    len: u32::MAX,
};

impl StrEncoder {
    pub(super) fn new() -> Self {
        StrEncoder {
            bytes: Vec::new(),
            offsets: vec![0],
            table: HashTable::new(),
            memo: vec![MEMO_EMPTY; MEMO_SLOTS],
            null_id: None,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    #[inline(always)]
    fn value(&self, id: u32) -> &[u8] {
        let id = id as usize;
        match (self.offsets.get(id), self.offsets.get(id + 1)) {
            (Some(&s), Some(&e)) => self.bytes.get(s..e).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Appends `b`; its id.
    #[inline(always)]
    fn push(bytes: &mut Vec<u8>, offsets: &mut Vec<usize>, b: &[u8]) -> u32 {
        bytes.extend_from_slice(b);
        offsets.push(bytes.len());
        (offsets.len() - 2) as u32
    }

    #[inline(always)]
    fn null(&mut self) -> u32 {
        match self.null_id {
            Some(id) => id,
            None => {
                let id = Self::push(&mut self.bytes, &mut self.offsets, &[]);
                self.null_id = Some(id);
                id
            }
        }
    }

    /// Whether table entry `e` is `b` (whose hash is `h` and words `w`).
    #[inline(always)]
    fn is(&self, e: &StrEntry, h: u64, w: [u64; 2], b: &[u8]) -> bool {
        e.hash == h
            && e.words == w
            && e.len as usize == b.len()
            && (b.len() <= 16 || self.value(e.id) == b)
    }

    /// The id of `b` (whose table hash is `h`), added if unseen.
    #[inline(always)]
    fn intern(&mut self, (h, w): (u64, [u64; 2]), b: &[u8]) -> u32 {
        let slot = h as usize & (MEMO_SLOTS - 1);
        if let Some(m) = self.memo.get(slot).filter(|m| self.is(m, h, w, b)) {
            return m.id;
        }
        if let Some(&e) = self.table.find(h, |e| self.is(e, h, w, b)) {
            if let Some(m) = self.memo.get_mut(slot) {
                *m = e;
            }
            return e.id;
        }
        let id = Self::push(&mut self.bytes, &mut self.offsets, b);
        let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
        let entry = StrEntry {
            hash: h,
            words: w,
            id,
            len,
        };
        self.table.insert_unique(h, entry, |e| e.hash);
        sparse(&mut self.table, |e| e.hash);
        match self.memo.get_mut(slot) {
            Some(m) if self.table.len() <= MEMO_MAX_KEYS => *m = entry,
            _ => self.memo = Vec::new(),
        }
        id
    }

    #[inline(always)]
    fn find(&self, (h, w): (u64, [u64; 2]), b: &[u8]) -> u32 {
        let slot = h as usize & (MEMO_SLOTS - 1);
        if let Some(m) = self.memo.get(slot).filter(|m| self.is(m, h, w, b)) {
            return m.id;
        }
        self.table
            .find(h, |e| self.is(e, h, w, b))
            .map_or(MISSING, |e| e.id)
    }

    pub(super) fn encode(&mut self, a: &dyn Array) -> FrameResult<Vec<u32>> {
        id_of(self.len() + a.len())?;
        if let Some(values) = dict_values(a) {
            return with_dict_keys!(a, k => self.encode_dict(k, values), other => Err(unsupported(other)));
        }
        let mut growth = Growth::new(a.len(), self.len());
        if let Some(views) = a.as_string_view_opt() {
            return Ok(self.encode_views(views, growth));
        }
        let mut row = 0;
        with_str_rows!(a, s => Ok(map_strs(s, |b| {
            if let Some(more) = growth.at(row, self.len()) {
                self.table.reserve(more, |e| e.hash);
            }
            row += 1;
            match b {
                Some(b) => self.intern(hash_str(TABLE_SEED, b), b),
                None => self.null(),
            }
        })), other => Err(unsupported(other)))
    }

    /// [`Self::encode`] of a string view array: a row whose view equals the previous
    /// row's (the same inline string, or the same bytes of the same buffer) takes its id
    /// unhashed, so a run of one key (clustered or sorted data) costs a comparison per row.
    fn encode_views(&mut self, a: &StringViewArray, mut growth: Growth) -> Vec<u32> {
        let nulls = a.valid_mask().cloned();
        let mut previous: Option<(u128, u32)> = None;
        a.views()
            .iter()
            .enumerate()
            .map(|(row, &view)| {
                if let Some(more) = growth.at(row, self.len()) {
                    self.table.reserve(more, |e| e.hash);
                }
                if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                    return self.null();
                }
                match previous {
                    Some((v, id)) if v == view => id,
                    _ => {
                        let b = a.value(row).as_bytes();
                        let id = self.intern(hash_str(TABLE_SEED, b), b);
                        previous = Some((view, id));
                        id
                    }
                }
            })
            .collect()
    }

    pub(super) fn lookup(&self, a: &dyn Array) -> FrameResult<Vec<u32>> {
        if let Some(values) = dict_values(a) {
            return with_dict_keys!(a, k => self.lookup_dict(k, values), other => Err(unsupported(other)));
        }
        let null_id = self.null_id.unwrap_or(MISSING);
        with_str_rows!(a, s => Ok(map_strs(s, |b| match b {
            Some(b) => self.find(hash_str(TABLE_SEED, b), b),
            None => null_id,
        })), other => Err(unsupported(other)))
    }

    /// Encodes dictionary keys `k` over string `values`: each used dictionary value is
    /// interned once.
    fn encode_dict<K>(&mut self, k: &PrimitiveArray<K>, values: &ArrayRef) -> FrameResult<Vec<u32>>
    where
        K: ArrowPrimitiveType,
        K::Native: KeyNative,
    {
        with_str_rows!(values, s => {
            let mut cache = vec![MISSING; s.n_rows()];
            let mut bad = false;
            let ids = map_prim(k, |key| {
                let Some(key) = key else { return self.null() };
                let i = key as usize;
                match cache.get(i) {
                    Some(&id) if id != MISSING => id,
                    Some(_) => {
                        let id = match s.valid_mask().is_some_and(|n| n.is_null(i)) {
                            true => self.null(),
                            false => self.intern(hash_str(TABLE_SEED, s.bytes(i)), s.bytes(i)),
                        };
                        cache[i] = id;
                        id
                    }
                    None => {
                        bad = true;
                        MISSING
                    }
                }
            });
            match bad {
                true => Err(FrameError::InvalidArgument(format!(
                    "dictionary key out of range (dictionary of {} values)",
                    s.n_rows()
                ))),
                false => Ok(ids),
            }
        }, other => Err(unsupported(other)))
    }

    fn lookup_dict<K>(&self, k: &PrimitiveArray<K>, values: &ArrayRef) -> FrameResult<Vec<u32>>
    where
        K: ArrowPrimitiveType,
        K::Native: KeyNative,
    {
        let ids = self.lookup(values.as_ref())?;
        let null_id = self.null_id.unwrap_or(MISSING);
        Ok(map_prim(k, |key| {
            key.and_then(|key| ids.get(usize::try_from(key).ok()?))
                .copied()
                .unwrap_or(null_id)
        }))
    }

    pub(super) fn keys(&self, dt: &DataType) -> FrameResult<ArrayRef> {
        let nulls = null_mask(self.len(), self.null_id);
        match dt {
            DataType::Utf8 => self.string_array::<i32>(nulls),
            DataType::LargeUtf8 => self.string_array::<i64>(nulls),
            DataType::Utf8View => Ok(Arc::new(StringViewArray::from_iter(
                (0..self.len() as u32).map(|id| {
                    (Some(id) != self.null_id)
                        .then(|| std::str::from_utf8(self.value(id)).unwrap_or_default())
                }),
            ))),
            DataType::Dictionary(key, value) => {
                let values = self.keys(value)?;
                with_dict_key_type!(key.as_ref(), K => dictionary::<K>(self.len(), nulls, values, dt), other => Err(unsupported(other)))
            }
            other => Err(unsupported(other)),
        }
    }

    fn string_array<O: OffsetSizeTrait>(&self, nulls: Option<NullBuffer>) -> FrameResult<ArrayRef> {
        let offsets = self
            .offsets
            .iter()
            .map(|&o| O::from_usize(o))
            .collect::<Option<ScalarBuffer<O>>>()
            .ok_or_else(|| {
                FrameError::InvalidArgument("string keys too long for 32-bit offsets".to_string())
            })?;
        let array = GenericStringArray::<O>::try_new(
            OffsetBuffer::new(offsets),
            Buffer::from(self.bytes.as_slice()),
            nulls,
        )?;
        Ok(Arc::new(array))
    }
}

/// A dictionary array of type `dt` with keys `0..n` (null at `nulls`) over `values`.
fn dictionary<K>(
    n: usize,
    nulls: Option<NullBuffer>,
    values: ArrayRef,
    dt: &DataType,
) -> FrameResult<ArrayRef>
where
    K: ArrowDictionaryKeyType,
{
    let keys = (0..n)
        .map(K::Native::from_usize)
        .collect::<Option<ScalarBuffer<K::Native>>>()
        .ok_or_else(|| {
            FrameError::InvalidArgument(format!(
                "{n} distinct keys do not fit the dictionary type {dt}"
            ))
        })?;
    let keys = PrimitiveArray::<K>::try_new(keys, nulls)?;
    let array = DictionaryArray::<K>::try_new(keys, values)?;
    Ok(Arc::new(array))
}
