//! Primitive keys (integers, floats, booleans, dates and times): their 64-bit key bits, the
//! slot table of small integer ranges ([`Direct`]) and the hash table of the others
//! ([`U64Table`]), combined in [`PrimEncoder`].

use super::{
    direct_ok, hash_u64, id_of, null_mask, sparse, unsupported, Growth, MISSING, TABLE_SEED,
};
use crate::error::{FrameError, FrameResult};
use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, BooleanArray, PrimitiveArray};
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::datatypes::*;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use std::sync::Arc;

/// A primitive key value as 64 bits: integers sign- or zero-extended (so equal values of any
/// width give equal bits), floats widened to f64 with -0.0 and every NaN made one value.
pub(super) trait KeyNative: ArrowNativeType {
    /// Whether the value range can index a slot table (integers, not floats).
    const DIRECT: bool;
    fn to_bits(self) -> u64;
    /// The value back from its bits, or `None` when it does not fit this type.
    fn from_bits(bits: u64) -> Option<Self>;
}

macro_rules! key_native_int {
    ($wide:ty; $($t:ty),*) => {$(
        impl KeyNative for $t {
            const DIRECT: bool = true;
            #[inline(always)]
            fn to_bits(self) -> u64 {
                self as $wide as u64
            }
            fn from_bits(bits: u64) -> Option<Self> {
                <$t>::try_from(bits as $wide).ok()
            }
        }
    )*};
}
key_native_int!(i64; i8, i16, i32, i64);
key_native_int!(u64; u8, u16, u32, u64);

#[inline(always)]
fn f64_key_bits(v: f64) -> u64 {
    if v.is_nan() {
        f64::NAN.to_bits()
    } else if v == 0.0 {
        0
    } else {
        v.to_bits()
    }
}

impl KeyNative for f64 {
    const DIRECT: bool = false;
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64_key_bits(self)
    }
    fn from_bits(bits: u64) -> Option<Self> {
        Some(f64::from_bits(bits))
    }
}

impl KeyNative for f32 {
    const DIRECT: bool = false;
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64_key_bits(f64::from(self))
    }
    fn from_bits(bits: u64) -> Option<Self> {
        Some(f64::from_bits(bits) as f32)
    }
}

/// Runs `$body` with `$T` the arrow primitive type of data type `$dt` (integers, floats,
/// dates, times, timestamps and durations: native types are integers and floats, each a
/// [`KeyNative`]); `$other` for any other type.
macro_rules! with_key_type {
    ($dt:expr, $T:ident => $body:expr, $other:ident => $fallback:expr) => {{
        use arrow::datatypes::DataType as D;
        use arrow::datatypes::TimeUnit as U;
        match $dt {
            D::Int8 => {
                type $T = arrow::datatypes::Int8Type;
                $body
            }
            D::Int16 => {
                type $T = arrow::datatypes::Int16Type;
                $body
            }
            D::Int32 => {
                type $T = arrow::datatypes::Int32Type;
                $body
            }
            D::Int64 => {
                type $T = arrow::datatypes::Int64Type;
                $body
            }
            D::UInt8 => {
                type $T = arrow::datatypes::UInt8Type;
                $body
            }
            D::UInt16 => {
                type $T = arrow::datatypes::UInt16Type;
                $body
            }
            D::UInt32 => {
                type $T = arrow::datatypes::UInt32Type;
                $body
            }
            D::UInt64 => {
                type $T = arrow::datatypes::UInt64Type;
                $body
            }
            D::Float32 => {
                type $T = arrow::datatypes::Float32Type;
                $body
            }
            D::Float64 => {
                type $T = arrow::datatypes::Float64Type;
                $body
            }
            D::Date32 => {
                type $T = arrow::datatypes::Date32Type;
                $body
            }
            D::Date64 => {
                type $T = arrow::datatypes::Date64Type;
                $body
            }
            D::Time32(U::Second) => {
                type $T = arrow::datatypes::Time32SecondType;
                $body
            }
            D::Time32(U::Millisecond) => {
                type $T = arrow::datatypes::Time32MillisecondType;
                $body
            }
            D::Time64(U::Microsecond) => {
                type $T = arrow::datatypes::Time64MicrosecondType;
                $body
            }
            D::Time64(U::Nanosecond) => {
                type $T = arrow::datatypes::Time64NanosecondType;
                $body
            }
            D::Timestamp(U::Second, _) => {
                type $T = arrow::datatypes::TimestampSecondType;
                $body
            }
            D::Timestamp(U::Millisecond, _) => {
                type $T = arrow::datatypes::TimestampMillisecondType;
                $body
            }
            D::Timestamp(U::Microsecond, _) => {
                type $T = arrow::datatypes::TimestampMicrosecondType;
                $body
            }
            D::Timestamp(U::Nanosecond, _) => {
                type $T = arrow::datatypes::TimestampNanosecondType;
                $body
            }
            D::Duration(U::Second) => {
                type $T = arrow::datatypes::DurationSecondType;
                $body
            }
            D::Duration(U::Millisecond) => {
                type $T = arrow::datatypes::DurationMillisecondType;
                $body
            }
            D::Duration(U::Microsecond) => {
                type $T = arrow::datatypes::DurationMicrosecondType;
                $body
            }
            D::Duration(U::Nanosecond) => {
                type $T = arrow::datatypes::DurationNanosecondType;
                $body
            }
            $other => $fallback,
        }
    }};
}
pub(crate) use with_key_type;

/// Calls `f` with each row's key bits (`None` for a null) and collects what it returns.
#[inline(always)]
pub(super) fn map_prim<T, R>(a: &PrimitiveArray<T>, mut f: impl FnMut(Option<u64>) -> R) -> Vec<R>
where
    T: ArrowPrimitiveType,
    T::Native: KeyNative,
{
    let values = a.values();
    match a.nulls().filter(|n| n.null_count() > 0) {
        None => values.iter().map(|v| f(Some(v.to_bits()))).collect(),
        Some(nulls) => values
            .iter()
            .zip(nulls.iter())
            .map(|(v, ok)| f(ok.then(|| v.to_bits())))
            .collect(),
    }
}

/// The smallest and largest non-null key of `a` (as signed values), if any.
fn prim_range<T>(a: &PrimitiveArray<T>) -> Option<(i64, i64)>
where
    T: ArrowPrimitiveType,
    T::Native: KeyNative,
{
    let fold = |(lo, hi): (i64, i64), v: i64| (lo.min(v), hi.max(v));
    let values = a.values();
    let (lo, hi) = match a.nulls().filter(|n| n.null_count() > 0) {
        None => values
            .iter()
            .map(|v| v.to_bits() as i64)
            .fold((i64::MAX, i64::MIN), fold),
        Some(nulls) => values
            .iter()
            .zip(nulls.iter())
            .filter(|(_, ok)| *ok)
            .map(|(v, _)| v.to_bits() as i64)
            .fold((i64::MAX, i64::MIN), fold),
    };
    (lo <= hi).then_some((lo, hi))
}

/// The booleans of `b` as 0/1 bytes (same nulls), so they go through the integer paths.
pub(super) fn bool_as_u8(b: &BooleanArray) -> PrimitiveArray<UInt8Type> {
    let values: ScalarBuffer<u8> = b.values().iter().map(u8::from).collect();
    PrimitiveArray::new(values, b.nulls().cloned())
}

/// Appends key bits `v` to `values`; its id.
#[inline(always)]
fn push_id(values: &mut Vec<u64>, v: u64) -> u32 {
    values.push(v);
    (values.len() - 1) as u32
}

/// Ids of `u64` keys by hash; entries hold the key, so a probe touches only the table.
#[derive(Default)]
pub(super) struct U64Table {
    table: HashTable<(u64, u32)>,
}

impl U64Table {
    /// A table of `values` (key of id `i` at `values[i]`), except id `skip`.
    pub(super) fn build(values: &[u64], skip: Option<u32>) -> Self {
        let mut table = HashTable::with_capacity(values.len());
        for (id, &v) in values.iter().enumerate() {
            if Some(id as u32) != skip {
                table.insert_unique(hash_u64(TABLE_SEED, v), (v, id as u32), |e| {
                    hash_u64(TABLE_SEED, e.0)
                });
            }
        }
        U64Table { table }
    }

    /// The id of `v`, appended to `values` (and given the next id) if unseen.
    #[inline(always)]
    pub(super) fn intern(&mut self, values: &mut Vec<u64>, v: u64) -> u32 {
        let h = hash_u64(TABLE_SEED, v);
        match self
            .table
            .entry(h, |e| e.0 == v, |e| hash_u64(TABLE_SEED, e.0))
        {
            Entry::Occupied(e) => e.get().1,
            Entry::Vacant(e) => {
                let id = push_id(values, v);
                e.insert((v, id));
                sparse(&mut self.table, |e| hash_u64(TABLE_SEED, e.0));
                id
            }
        }
    }

    #[inline(always)]
    pub(super) fn find(&self, v: u64) -> u32 {
        self.table
            .find(hash_u64(TABLE_SEED, v), |e| e.0 == v)
            .map_or(MISSING, |e| e.1)
    }

    fn reserve(&mut self, additional: usize) {
        self.table
            .reserve(additional, |e| hash_u64(TABLE_SEED, e.0));
    }
}

/// A slot table: `slots[v - lo]` is 1 + the id of key `v`, or 0 (so a new table is zeroed
/// memory, which the allocator gets cheaply).
struct Direct {
    lo: i64,
    slots: Vec<u32>,
}

impl Direct {
    /// Whether `[lo, hi]` is inside the table.
    fn covers(&self, lo: i64, hi: i64) -> bool {
        lo >= self.lo && (hi as i128 - self.lo as i128) < self.slots.len() as i128
    }

    /// The slot of `v`, if in the table (the wrapping difference of two `i64`s is below the
    /// table's length only for values inside it).
    #[inline(always)]
    fn slot(&self, v: i64) -> usize {
        v.wrapping_sub(self.lo) as usize
    }

    #[inline(always)]
    fn get(&self, v: i64) -> u32 {
        let slot = self.slots.get(self.slot(v)).copied().unwrap_or(0);
        slot.wrapping_sub(1)
    }

    /// The id of key bits `v` (inside the table), appended to `values` if unseen.
    #[inline(always)]
    fn intern(&mut self, values: &mut Vec<u64>, v: u64) -> u32 {
        let at = self.slot(v as i64);
        match self.slots.get_mut(at) {
            Some(slot) if *slot != 0 => *slot - 1,
            Some(slot) => {
                let id = push_id(values, v);
                *slot = id + 1;
                id
            }
            None => MISSING,
        }
    }
}

/// The keys of a finished encoder whose keys use the hash table (a join's build side,
/// probed by every chunk of the other side), indexed by value: a bitmap over their range
/// with the count of keys before each word, and, where the keys are dense enough, the id
/// of each key in value order. A probe key whose bit is clear is missing at once, without
/// the hash lookup that missed the cache on every row; with the ids, a held key's id is a
/// popcount away, with no hash, and the sorted keys of a probe side (lineitem by order
/// key) read the index in order. See [`PrimEncoder::seal`].
struct Present {
    lo: i64,
    words: Vec<Word>,
    /// The id of each key, in key order (empty where the keys are too sparse).
    ids: Vec<u32>,
}

/// 64 bits of a [`Present`] bitmap and the keys before them, read together.
#[derive(Clone, Copy, Default)]
struct Word {
    bits: u64,
    before: u32,
}

/// The largest [`Present`] bitmap, in bits (32 MiB of words).
const PRESENT_MAX_BITS: u64 = 1 << 27;

/// A [`Present`] bitmap of up to this many bits per key (or of up to
/// [`PRESENT_FREE_BITS`] bits) is built.
const PRESENT_BITS_PER_KEY: u64 = 256;

/// With up to this many bits per key (or up to [`PRESENT_FREE_BITS`] bits) the ids
/// are indexed too: with the words, 8 bytes a key, and no hash lookup.
const RANKED_BITS_PER_KEY: u64 = 64;

/// Indexes of up to this many bits (512 KiB of words) are built whatever the number of
/// keys.
const PRESENT_FREE_BITS: u64 = 1 << 18;

impl Present {
    /// The index of `keys` (each with its id; integer keys as signed values), if their
    /// range is small enough.
    fn of(keys: impl Iterator<Item = (u32, i64)> + Clone) -> Option<Present> {
        let (lo, hi, n) = keys
            .clone()
            .fold((i64::MAX, i64::MIN, 0u64), |(lo, hi, n), (_, k)| {
                (lo.min(k), hi.max(k), n + 1)
            });
        let span = u64::try_from(hi as i128 - lo as i128 + 1).ok()?;
        let within = |per_key: u64| span <= PRESENT_FREE_BITS || span <= per_key.saturating_mul(n);
        if n == 0 || !within(PRESENT_BITS_PER_KEY) || span > PRESENT_MAX_BITS {
            return None;
        }
        let mut words = vec![Word::default(); span.div_ceil(64) as usize];
        for (_, k) in keys.clone() {
            let at = k.wrapping_sub(lo) as u64;
            words[(at / 64) as usize].bits |= 1 << (at % 64);
        }
        let mut count = 0u32;
        for w in &mut words {
            w.before = count;
            count += w.bits.count_ones();
        }
        let mut present = Present {
            lo,
            words,
            ids: Vec::new(),
        };
        if within(RANKED_BITS_PER_KEY) {
            let mut ids = vec![MISSING; n as usize];
            for (id, k) in keys {
                if let Some(slot) = present.rank(k).and_then(|r| ids.get_mut(r)) {
                    *slot = id;
                }
            }
            present.ids = ids;
        }
        Some(present)
    }

    /// The position of key `v` in key order, if it is held.
    #[inline(always)]
    fn rank(&self, v: i64) -> Option<usize> {
        let at = v.wrapping_sub(self.lo) as u64;
        let w = self.words.get((at / 64) as usize)?;
        let bit = 1u64 << (at % 64);
        (w.bits & bit != 0).then(|| w.before as usize + (w.bits & (bit - 1)).count_ones() as usize)
    }

    fn bytes(&self) -> usize {
        self.words.len() * std::mem::size_of::<Word>() + self.ids.len() * 4
    }
}

/// Distinct primitive keys (and booleans), by their [`KeyNative`] bits.
pub(super) struct PrimEncoder {
    /// The key bits of each id (0 for the null key).
    values: Vec<u64>,
    null_id: Option<u32>,
    /// The slot table, while the keys' range is small enough.
    direct: Option<Direct>,
    /// Ids of the non-null keys by hash; used once `direct` is `None` (after the first
    /// non-null key).
    table: U64Table,
    /// Whether the keys may use a slot table (integers); false for floats.
    may_direct: bool,
    rows_seen: usize,
    /// The keys' index by value, from [`PrimEncoder::seal`] until the next `encode`.
    present: Option<Present>,
}

impl PrimEncoder {
    pub(super) fn new(may_direct: bool) -> Self {
        PrimEncoder {
            values: Vec::new(),
            null_id: None,
            direct: None,
            table: U64Table::default(),
            may_direct,
            rows_seen: 0,
            present: None,
        }
    }

    /// The keys are all in: lookups of integer keys that use the hash table go through an
    /// index of the keys by value instead, where their range is small enough
    /// ([`Present`]). The next `encode` drops it.
    pub(super) fn seal(&mut self) {
        if !self.may_direct || self.direct.is_some() || self.present.is_some() {
            return;
        }
        let null_id = self.null_id;
        let keys = (0u32..)
            .zip(&self.values)
            .filter(move |&(id, _)| Some(id) != null_id)
            .map(|(id, &bits)| (id, bits as i64));
        self.present = Present::of(keys);
    }

    /// Bytes of the index [`PrimEncoder::seal`] built.
    pub(super) fn sealed_bytes(&self) -> usize {
        self.present.as_ref().map_or(0, Present::bytes)
    }

    pub(super) fn len(&self) -> usize {
        self.values.len()
    }

    fn has_table(&self) -> bool {
        self.direct.is_none() && self.values.len() > usize::from(self.null_id.is_some())
    }

    /// Makes the slot table cover `[lo, hi]`, or drops it for the hash table when the range
    /// is too large. Call before adding keys of that range.
    fn prepare_direct(&mut self, lo: i64, hi: i64) {
        let (lo, hi) = match &self.direct {
            Some(d) if d.covers(lo, hi) => return,
            Some(d) => (
                lo.min(d.lo),
                hi.max((d.lo as i128 + d.slots.len() as i128 - 1) as i64),
            ),
            None if self.has_table() => return,
            None => (lo, hi),
        };
        let span = (hi as i128 - lo as i128 + 1) as u128;
        let fits = u64::try_from(span).is_ok_and(|s| direct_ok(s, self.rows_seen));
        let old = self.direct.take();
        if !fits {
            self.table = U64Table::build(&self.values, self.null_id);
            return;
        }
        let mut slots = vec![0; span as usize];
        if let Some(old) = old {
            let shift = (old.lo as i128 - lo as i128) as usize;
            if let Some(dst) = slots.get_mut(shift..shift + old.slots.len()) {
                dst.copy_from_slice(&old.slots);
            }
        }
        self.direct = Some(Direct { lo, slots });
    }

    pub(super) fn encode<T>(&mut self, a: &PrimitiveArray<T>) -> FrameResult<Vec<u32>>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        self.rows_seen += a.len();
        self.present = None;
        id_of(self.values.len() + a.len())?;
        if self.may_direct && T::Native::DIRECT {
            if let Some((lo, hi)) = prim_range(a) {
                self.prepare_direct(lo, hi);
            }
        }
        // Two passes: look every key up (independent loads, which overlap even when they
        // miss the cache), then add the keys not found, in row order. (A new encoder
        // would find nothing: it only adds.)
        let mut ids = match self.values.is_empty() {
            true => vec![MISSING; a.len()],
            false => self.lookup(a),
        };
        if !ids.contains(&MISSING) {
            return Ok(ids);
        }
        let (keys, nulls) = (a.values(), a.nulls());
        let mut null_id = self.null_id;
        let PrimEncoder {
            table,
            values,
            direct,
            ..
        } = self;
        let mut growth = Growth::new(ids.len(), values.len());
        for (i, id) in ids.iter_mut().enumerate() {
            if let Some(more) = growth.at(i, values.len()).filter(|_| direct.is_none()) {
                table.reserve(more);
            }
            if *id != MISSING {
                continue;
            }
            let key = keys.get(i).filter(|_| nulls.is_none_or(|n| n.is_valid(i)));
            *id = match (key, direct.as_mut()) {
                (None, _) => *null_id.get_or_insert_with(|| push_id(values, 0)),
                (Some(k), Some(d)) => d.intern(values, k.to_bits()),
                (Some(k), None) => table.intern(values, k.to_bits()),
            };
        }
        self.null_id = null_id;
        Ok(ids)
    }

    pub(super) fn lookup<T>(&self, a: &PrimitiveArray<T>) -> Vec<u32>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        let null_id = self.null_id.unwrap_or(MISSING);
        match (&self.direct, &self.present) {
            (Some(d), _) => map_prim(a, |k| k.map_or(null_id, |v| d.get(v as i64))),
            // Dense keys: the id from the index; sparser ones: the hash table for keys
            // whose bit is set.
            (None, Some(p)) if !p.ids.is_empty() => map_prim(a, |k| match k {
                None => null_id,
                Some(v) => p
                    .rank(v as i64)
                    .and_then(|r| p.ids.get(r).copied())
                    .unwrap_or(MISSING),
            }),
            (None, Some(p)) => map_prim(a, |k| match k {
                None => null_id,
                Some(v) if p.rank(v as i64).is_some() => self.table.find(v),
                Some(_) => MISSING,
            }),
            (None, None) => map_prim(a, |k| k.map_or(null_id, |v| self.table.find(v))),
        }
    }

    /// The distinct keys as an array of type `dt` (which has native type `T`).
    fn keys_as<T>(&self, dt: &DataType) -> FrameResult<ArrayRef>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        // Collected into a vector of the exact length (collecting through `Option` grows it by
        // doubling): the keys are stored as they are, and slack would be memory no budget sees.
        let mut values = Vec::with_capacity(self.values.len());
        for &v in &self.values {
            values.push(T::Native::from_bits(v).ok_or_else(|| {
                FrameError::TypeMismatch(format!("a key does not fit the key type {dt}"))
            })?);
        }
        let values = ScalarBuffer::from(values);
        let array = PrimitiveArray::<T>::try_new(values, self.nulls())?;
        Ok(Arc::new(array.with_data_type(dt.clone())))
    }

    fn nulls(&self) -> Option<NullBuffer> {
        null_mask(self.values.len(), self.null_id)
    }

    pub(super) fn keys(&self, dt: &DataType) -> FrameResult<ArrayRef> {
        if dt == &DataType::Boolean {
            let values = self.values.iter().map(|&v| v != 0).collect();
            return Ok(Arc::new(BooleanArray::new(values, self.nulls())));
        }
        with_key_type!(dt, T => self.keys_as::<T>(dt), other => Err(unsupported(other)))
    }
}
