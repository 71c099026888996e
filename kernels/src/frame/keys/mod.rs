//! Key encoding: dense ids for the distinct key tuples of a frame, and routing hashes.
//!
//! [`KeyEncoder`] gives every distinct key tuple a dense `u32` id (0, 1, 2, ... in order of
//! first appearance), which groupby uses to index its accumulators and joins use as build-side
//! row ids. It keeps its keys across calls, so the chunks of a frame (or the partial tables of
//! a groupby) can be encoded one after the other.
//!
//! Fast paths:
//! - integer-like keys whose range is small use a slot table indexed by `value - min`
//!   instead of hashing;
//! - string keys are hashed once per row (foldhash, fixed seed) and interned in a
//!   [`hashbrown::HashTable`] of ids; bytes are compared only when the full hashes match;
//! - dictionary-encoded strings hash each dictionary value at most once per call;
//! - several key columns are encoded column by column, then the pairs of ids are combined
//!   (a dense grid of slots while the product of the cardinalities is small, a hash table of
//!   packed `u64` pairs otherwise);
//! - strings of up to 16 bytes are compared (and hashed) as two words and a length; while
//!   there are few distinct strings a direct-mapped memo answers before the table;
//! - encoding into a non-empty integer encoder first looks every row up (independent loads),
//!   then inserts the misses in row order; large batches reserve table room once, from an
//!   estimate of their distinct keys.
//!
//! [`hash_rows`] hashes rows to route them to partitions; it uses a different seed than the
//! encoder's tables, so the rows of one partition still spread over a table's buckets.

use super::error::{FrameError, FrameResult};
use super::schema::{is_string, key_class};
use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, DictionaryArray,
    GenericStringArray, OffsetSizeTrait, PrimitiveArray, StringViewArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::*;
use foldhash::fast::FixedState;
use hashbrown::hash_table::Entry;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// An id that is not there (a key [`KeyEncoder::lookup`] did not find).
const MISSING: u32 = u32::MAX;
/// Seed of the encoder's own hash tables.
const TABLE_SEED: u64 = 0x5be4_1c3a_9d27_e861;
/// Seed of [`hash_rows`] (different from the tables', see the module doc).
const ROUTE_SEED: u64 = 0x0f6b_75ab_2bc4_71c7;
/// The routing hash of a null key.
const NULL_HASH: u64 = 0x9e37_79b9_7f4a_7c15;
/// The largest slot table of the direct-indexing paths (64 MiB of ids).
const DIRECT_MAX_SLOTS: u64 = 1 << 24;
/// Slot tables up to this size are used whatever the number of rows.
const DIRECT_FREE_SLOTS: u64 = 1 << 16;
/// Beyond [`DIRECT_FREE_SLOTS`], at most this many slots per row seen.
const DIRECT_SLOTS_PER_ROW: u64 = 16;

/// Whether a slot table of `slots` entries is worth it after `rows` rows.
fn direct_ok(slots: u64, rows: usize) -> bool {
    slots <= DIRECT_MAX_SLOTS
        && (slots <= DIRECT_FREE_SLOTS || slots <= DIRECT_SLOTS_PER_ROW.saturating_mul(rows as u64))
}

#[inline(always)]
fn hash_u64(seed: u64, v: u64) -> u64 {
    let mut h = FixedState::with_seed(seed).build_hasher();
    h.write_u64(v);
    h.finish()
}

/// The hash (with `seed`) and [`words`] of string `b`. Strings of up to 16 bytes are hashed
/// from their words and length with one foldhash step (the words and length determine the
/// string); longer ones with foldhash over all bytes.
#[inline(always)]
fn hash_str(seed: u64, b: &[u8]) -> (u64, [u64; 2]) {
    let w = words(b);
    let mut h = FixedState::with_seed(seed).build_hasher();
    if b.len() <= 16 {
        h.write_u128((u128::from(w[0]) << 64) | u128::from(w[1] ^ b.len() as u64));
    } else {
        h.write(b);
    }
    (h.finish(), w)
}

/// Combines the routing hash of the columns so far with the next column's.
#[inline(always)]
fn hash_combine(a: u64, b: u64) -> u64 {
    let mut h = FixedState::with_seed(ROUTE_SEED).build_hasher();
    h.write_u64(a);
    h.write_u64(b);
    h.finish()
}

fn too_many_keys() -> FrameError {
    FrameError::InvalidArgument("more than 2^32 - 2 distinct keys".to_string())
}

fn id_of(n: usize) -> FrameResult<u32> {
    u32::try_from(n)
        .ok()
        .filter(|&id| id < MISSING)
        .ok_or_else(too_many_keys)
}

// ---------------------------------------------------------------------------------------------
// Primitive keys

/// A primitive key value as 64 bits: integers sign- or zero-extended (so equal values of any
/// width give equal bits), floats widened to f64 with -0.0 and every NaN made one value.
trait KeyNative: ArrowNativeType {
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
/// [`with_key_type`] for the other dataframe kernels.
pub(crate) use with_key_type as with_primitive_type;

/// Calls `f` with each row's key bits (`None` for a null) and collects what it returns.
#[inline(always)]
fn map_prim<T, R>(a: &PrimitiveArray<T>, mut f: impl FnMut(Option<u64>) -> R) -> Vec<R>
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
fn bool_as_u8(b: &BooleanArray) -> PrimitiveArray<UInt8Type> {
    let values: ScalarBuffer<u8> = b.values().iter().map(u8::from).collect();
    PrimitiveArray::new(values, b.nulls().cloned())
}

/// Appends key bits `v` to `values`; its id.
#[inline(always)]
fn push_id(values: &mut Vec<u64>, v: u64) -> u32 {
    values.push(v);
    (values.len() - 1) as u32
}

/// Estimates, early in a batch, how many keys the batch will add, so that a table growing
/// by many keys is resized once rather than doubling its way up one insert at a time.
///
/// It counts the keys added by the first sixteenth of the rows (`d1`) and by the first
/// eighth (`d2`). With keys drawn at random from `D` values, `d(k) = D (1 - q^(k / k1))`,
/// so `q = (d2 - d1) / d1` and the whole batch adds about `d1 (1 - q^16) / (1 - q)`.
struct Growth {
    n: usize,
    start: usize,
    d1: usize,
}

impl Growth {
    /// For a batch of `n` rows, into a table of `start` keys. Small batches estimate nothing.
    fn new(n: usize, start: usize) -> Self {
        Growth { n, start, d1: 0 }
    }

    /// Called before row `i` with `len` keys in the table; the number of keys to reserve
    /// room for, at the row that decides.
    #[inline(always)]
    fn at(&mut self, i: usize, len: usize) -> Option<usize> {
        let k1 = self.n / 16;
        if self.n < 1 << 16 || (i != k1 && i != 2 * k1) {
            return None;
        }
        let added = len - self.start;
        if i == k1 {
            self.d1 = added;
            return None;
        }
        let (d1, d2) = (self.d1 as f64, added as f64);
        let left = (self.n - i) as f64;
        let more = match (d2 - d1) / d1.max(1.0) {
            q if q >= 0.999 => left * (d2 - d1) / k1 as f64,
            q => d1 * (1.0 - q.powi(16)) / (1.0 - q) - d2,
        };
        Some(more.clamp(0.0, left) as usize)
    }
}

/// Keeps small tables at most half full: probes then end at the first group more often,
/// which saves mispredicted branches (random keys make probe lengths unpredictable).
#[inline(always)]
fn sparse<T>(table: &mut HashTable<T>, hasher: impl Fn(&T) -> u64) {
    let len = table.len();
    if len <= SPARSE_MAX && table.capacity() < 2 * len {
        table.reserve(len, hasher);
    }
}

/// Tables of up to this many keys are kept sparse (see [`sparse`]).
const SPARSE_MAX: usize = 1 << 12;

/// Ids of `u64` keys by hash; entries hold the key, so a probe touches only the table.
#[derive(Default)]
struct U64Table {
    table: HashTable<(u64, u32)>,
}

impl U64Table {
    /// A table of `values` (key of id `i` at `values[i]`), except id `skip`.
    fn build(values: &[u64], skip: Option<u32>) -> Self {
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
    fn intern(&mut self, values: &mut Vec<u64>, v: u64) -> u32 {
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
    fn find(&self, v: u64) -> u32 {
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

/// Distinct primitive keys (and booleans), by their [`KeyNative`] bits.
struct PrimEncoder {
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
}

impl PrimEncoder {
    fn new(may_direct: bool) -> Self {
        PrimEncoder {
            values: Vec::new(),
            null_id: None,
            direct: None,
            table: U64Table::default(),
            may_direct,
            rows_seen: 0,
        }
    }

    fn len(&self) -> usize {
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

    fn encode<T>(&mut self, a: &PrimitiveArray<T>) -> FrameResult<Vec<u32>>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        self.rows_seen += a.len();
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

    fn lookup<T>(&self, a: &PrimitiveArray<T>) -> Vec<u32>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        let null_id = self.null_id.unwrap_or(MISSING);
        match &self.direct {
            Some(d) => map_prim(a, |k| k.map_or(null_id, |v| d.get(v as i64))),
            None => map_prim(a, |k| k.map_or(null_id, |v| self.table.find(v))),
        }
    }

    /// The distinct keys as an array of type `dt` (which has native type `T`).
    fn keys_as<T>(&self, dt: &DataType) -> FrameResult<ArrayRef>
    where
        T: ArrowPrimitiveType,
        T::Native: KeyNative,
    {
        let values = self
            .values
            .iter()
            .map(|&v| T::Native::from_bits(v))
            .collect::<Option<ScalarBuffer<T::Native>>>()
            .ok_or_else(|| {
                FrameError::TypeMismatch(format!("a key does not fit the key type {dt}"))
            })?;
        let array = PrimitiveArray::<T>::try_new(values, self.nulls())?;
        Ok(Arc::new(array.with_data_type(dt.clone())))
    }

    fn nulls(&self) -> Option<NullBuffer> {
        null_mask(self.values.len(), self.null_id)
    }

    fn keys(&self, dt: &DataType) -> FrameResult<ArrayRef> {
        if dt == &DataType::Boolean {
            let values = self.values.iter().map(|&v| v != 0).collect();
            return Ok(Arc::new(BooleanArray::new(values, self.nulls())));
        }
        with_key_type!(dt, T => self.keys_as::<T>(dt), other => Err(unsupported(other)))
    }
}

/// A validity mask of `len` rows with only `null_id` null.
fn null_mask(len: usize, null_id: Option<u32>) -> Option<NullBuffer> {
    let null_id = null_id? as usize;
    Some((0..len).map(|i| i != null_id).collect::<Vec<bool>>().into())
}

fn unsupported(dt: &DataType) -> FrameError {
    FrameError::TypeMismatch(format!("unsupported key type {dt}"))
}

// ---------------------------------------------------------------------------------------------
// String keys

/// Rows of UTF-8 strings, in any of Arrow's layouts.
trait StrRows {
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
fn map_strs<S: StrRows, R>(s: &S, mut f: impl FnMut(Option<&[u8]>) -> R) -> Vec<R> {
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

/// The values array of dictionary array `a` (any key type).
fn dict_values(a: &dyn Array) -> Option<&ArrayRef> {
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
fn words(b: &[u8]) -> [u64; 2] {
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
struct StrEncoder {
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
    fn new() -> Self {
        StrEncoder {
            bytes: Vec::new(),
            offsets: vec![0],
            table: HashTable::new(),
            memo: vec![MEMO_EMPTY; MEMO_SLOTS],
            null_id: None,
        }
    }

    fn len(&self) -> usize {
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

    fn encode(&mut self, a: &dyn Array) -> FrameResult<Vec<u32>> {
        id_of(self.len() + a.len())?;
        if let Some(values) = dict_values(a) {
            return with_dict_keys!(a, k => self.encode_dict(k, values), other => Err(unsupported(other)));
        }
        let mut growth = Growth::new(a.len(), self.len());
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

    fn lookup(&self, a: &dyn Array) -> FrameResult<Vec<u32>> {
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

    fn keys(&self, dt: &DataType) -> FrameResult<ArrayRef> {
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

// ---------------------------------------------------------------------------------------------
// Pairs of ids

/// Distinct pairs `(a, b)` of ids of two encoders.
struct PairEncoder {
    /// The pair of each id, packed as `a << 32 | b`.
    pairs: Vec<u64>,
    /// While `rows * stride` is small: `slots[a * stride + b]` is the id of pair `(a, b)`.
    grid: Option<Grid>,
    /// Ids by hash, once the grid is given up.
    table: U64Table,
    rows_seen: usize,
}

struct Grid {
    stride: usize,
    rows: usize,
    slots: Vec<u32>,
}

impl Grid {
    #[inline(always)]
    fn slot(&self, a: u32, b: u32) -> Option<usize> {
        let (a, b) = (a as usize, b as usize);
        (a < self.rows && b < self.stride).then_some(a * self.stride + b)
    }
}

impl PairEncoder {
    fn new() -> Self {
        PairEncoder {
            pairs: Vec::new(),
            grid: Some(Grid {
                stride: 0,
                rows: 0,
                slots: Vec::new(),
            }),
            table: U64Table::default(),
            rows_seen: 0,
        }
    }

    fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Makes the grid cover ids `a < n_a`, `b < n_b`, or gives it up for the hash table.
    fn prepare(&mut self, n_a: usize, n_b: usize) {
        let Some(grid) = &self.grid else { return };
        if n_a <= grid.rows && n_b <= grid.stride {
            return;
        }
        let stride = n_b.max(grid.stride).next_power_of_two();
        let rows = n_a.max(grid.rows).max(1).next_power_of_two();
        let size = (stride as u64).saturating_mul(rows as u64);
        if !direct_ok(size, self.rows_seen) {
            self.grid = None;
            self.table = U64Table::build(&self.pairs, None);
            return;
        }
        let mut grid = Grid {
            stride,
            rows,
            slots: vec![MISSING; stride * rows],
        };
        for (id, &p) in self.pairs.iter().enumerate() {
            if let Some(s) = grid.slot((p >> 32) as u32, p as u32) {
                grid.slots[s] = id as u32;
            }
        }
        self.grid = Some(grid);
    }

    /// The pair ids of rows with ids `a` and `b` (all below `n_a`, `n_b`), adding new pairs.
    fn encode(&mut self, a: &[u32], b: &[u32], n_a: usize, n_b: usize) -> FrameResult<Vec<u32>> {
        self.rows_seen += a.len();
        id_of(self.pairs.len() + a.len())?;
        self.prepare(n_a, n_b);
        let PairEncoder {
            pairs, grid, table, ..
        } = self;
        let pack = |x: u32, y: u32| (u64::from(x) << 32) | u64::from(y);
        let ids = match grid {
            Some(grid) => a
                .iter()
                .zip(b)
                .map(|(&x, &y)| {
                    let Some(slot) = grid.slot(x, y).and_then(|s| grid.slots.get_mut(s)) else {
                        return MISSING;
                    };
                    if *slot == MISSING {
                        *slot = pairs.len() as u32;
                        pairs.push(pack(x, y));
                    }
                    *slot
                })
                .collect(),
            None => a
                .iter()
                .zip(b)
                .map(|(&x, &y)| table.intern(pairs, pack(x, y)))
                .collect(),
        };
        Ok(ids)
    }

    fn lookup(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let pack = |x: u32, y: u32| (u64::from(x) << 32) | u64::from(y);
        a.iter()
            .zip(b)
            .map(
                |(&x, &y)| match (&self.grid, x == MISSING || y == MISSING) {
                    (_, true) => MISSING,
                    (Some(g), false) => g
                        .slot(x, y)
                        .and_then(|s| g.slots.get(s))
                        .copied()
                        .unwrap_or(MISSING),
                    (None, false) => self.table.find(pack(x, y)),
                },
            )
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The encoder

/// The encoder of one key column.
enum ColEncoder {
    Prim(PrimEncoder),
    Str(StrEncoder),
}

impl ColEncoder {
    fn new(dt: &DataType) -> FrameResult<Self> {
        if is_string(dt) {
            return Ok(ColEncoder::Str(StrEncoder::new()));
        }
        if dt == &DataType::Boolean {
            return Ok(ColEncoder::Prim(PrimEncoder::new(true)));
        }
        with_key_type!(dt, T => Ok(ColEncoder::Prim(PrimEncoder::new(<<T as ArrowPrimitiveType>::Native as KeyNative>::DIRECT))), other => Err(unsupported(other)))
    }

    fn len(&self) -> usize {
        match self {
            ColEncoder::Prim(e) => e.len(),
            ColEncoder::Str(e) => e.len(),
        }
    }

    fn encode(&mut self, a: &dyn Array) -> FrameResult<Vec<u32>> {
        match self {
            ColEncoder::Str(e) => e.encode(a),
            ColEncoder::Prim(e) => match a.as_boolean_opt() {
                Some(b) => e.encode(&bool_as_u8(b)),
                None => {
                    with_key_type!(a.data_type(), T => e.encode(a.as_primitive::<T>()), other => Err(unsupported(other)))
                }
            },
        }
    }

    fn lookup(&self, a: &dyn Array) -> FrameResult<Vec<u32>> {
        match self {
            ColEncoder::Str(e) => e.lookup(a),
            ColEncoder::Prim(e) => match a.as_boolean_opt() {
                Some(b) => Ok(e.lookup(&bool_as_u8(b))),
                None => {
                    with_key_type!(a.data_type(), T => Ok(e.lookup(a.as_primitive::<T>())), other => Err(unsupported(other)))
                }
            },
        }
    }

    fn keys(&self, dt: &DataType) -> FrameResult<ArrayRef> {
        match self {
            ColEncoder::Prim(e) => e.keys(dt),
            ColEncoder::Str(e) => e.keys(dt),
        }
    }
}

/// Distinct key tuples seen so far, each with a dense id (0, 1, 2, ... in order of first appearance).
pub struct KeyEncoder {
    types: Vec<DataType>,
    columns: Vec<ColEncoder>,
    /// `pairs[i]` combines the tuple ids of columns `0..=i` with the ids of column `i + 1`.
    pairs: Vec<PairEncoder>,
}

impl KeyEncoder {
    /// An encoder for key columns of these types (any integer width, UTF-8 string in any encoding:
    /// Utf8, LargeUtf8, Utf8View, Dictionary<_, Utf8|LargeUtf8>; Boolean, Date32, Timestamp, Float64).
    ///
    /// Also Float32, Date64, Time32/64 and Duration. Columns given to [`KeyEncoder::encode`]
    /// and [`KeyEncoder::lookup`] may have any type of the same [`key_class`] (an Int32
    /// column can be looked up in an Int64 encoder; any string encoding in any other).
    pub fn new(key_types: &[DataType]) -> FrameResult<KeyEncoder> {
        if key_types.is_empty() {
            return Err(FrameError::InvalidArgument(
                "a key encoder needs at least one key column".to_string(),
            ));
        }
        Ok(KeyEncoder {
            types: key_types.to_vec(),
            columns: key_types
                .iter()
                .map(ColEncoder::new)
                .collect::<FrameResult<_>>()?,
            pairs: (1..key_types.len()).map(|_| PairEncoder::new()).collect(),
        })
    }

    /// Checks that `columns` match the key types and have equal lengths.
    fn check(&self, columns: &[ArrayRef]) -> FrameResult<()> {
        if columns.len() != self.types.len() {
            return Err(FrameError::InvalidArgument(format!(
                "{} key columns given to an encoder of {}",
                columns.len(),
                self.types.len()
            )));
        }
        let len = columns.first().map_or(0, |c| c.len());
        for (c, dt) in columns.iter().zip(&self.types) {
            if key_class(c.data_type()) != key_class(dt) {
                return Err(FrameError::TypeMismatch(format!(
                    "key column of type {} given to an encoder of type {dt}",
                    c.data_type()
                )));
            }
            if c.len() != len {
                return Err(FrameError::InvalidArgument(format!(
                    "key columns of different lengths ({len} and {})",
                    c.len()
                )));
            }
        }
        Ok(())
    }

    /// Assigns each row of `columns` (the key columns, equal lengths) its group id, adding unseen keys.
    /// A null key is a key like any other (callers that drop null keys filter first).
    pub fn encode(&mut self, columns: &[ArrayRef]) -> FrameResult<Vec<u32>> {
        self.check(columns)?;
        let mut encoders = self.columns.iter_mut().zip(columns);
        let Some((first, col)) = encoders.next() else {
            return Ok(Vec::new());
        };
        let mut ids = first.encode(col.as_ref())?;
        let mut n = first.len();
        for ((enc, col), pair) in encoders.zip(&mut self.pairs) {
            let col_ids = enc.encode(col.as_ref())?;
            ids = pair.encode(&ids, &col_ids, n, enc.len())?;
            n = pair.len();
        }
        Ok(ids)
    }

    /// The id of each row's key without inserting; `None` where the key was never seen (join probe).
    pub fn lookup(&self, columns: &[ArrayRef]) -> FrameResult<Vec<Option<u32>>> {
        self.check(columns)?;
        let mut encoders = self.columns.iter().zip(columns);
        let Some((first, col)) = encoders.next() else {
            return Ok(Vec::new());
        };
        let mut ids = first.lookup(col.as_ref())?;
        for ((enc, col), pair) in encoders.zip(&self.pairs) {
            ids = pair.lookup(&ids, &enc.lookup(col.as_ref())?);
        }
        Ok(ids
            .into_iter()
            .map(|id| (id != MISSING).then_some(id))
            .collect())
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        match self.pairs.last() {
            Some(p) => p.len(),
            None => self.columns.first().map_or(0, ColEncoder::len),
        }
    }

    /// True when no key was seen.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct keys in id order, one array per key column, with the types given to `new`
    /// (strings come back as the same string type that was given).
    pub fn keys(&self) -> FrameResult<Vec<ArrayRef>> {
        // The column-local id of each key, per column, unpacked from the pairs (last first).
        let mut col_ids: Vec<Vec<u32>> = Vec::with_capacity(self.columns.len());
        let mut tuple: Vec<u32> = (0..self.len() as u32).collect();
        for pair in self.pairs.iter().rev() {
            let packed: Vec<u64> = tuple
                .iter()
                .map(|&id| pair.pairs.get(id as usize).copied().unwrap_or_default())
                .collect();
            col_ids.push(packed.iter().map(|&p| p as u32).collect());
            tuple = packed.iter().map(|&p| (p >> 32) as u32).collect();
        }
        col_ids.push(tuple);
        col_ids.reverse();
        self.columns
            .iter()
            .zip(&self.types)
            .zip(col_ids)
            .map(|((enc, dt), ids)| {
                let distinct = enc.keys(dt)?;
                if self.pairs.is_empty() {
                    return Ok(distinct);
                }
                let ids = PrimitiveArray::<UInt32Type>::from(ids);
                Ok(arrow::compute::take(distinct.as_ref(), &ids, None)?)
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Routing hashes

/// The routing hash of each row of one key column.
fn column_hashes(a: &dyn Array) -> FrameResult<Vec<u64>> {
    if let Some(values) = dict_values(a) {
        let value_hashes = column_hashes(values.as_ref())?;
        return with_dict_keys!(a, k => Ok(map_prim(k, |key| {
            key.and_then(|key| value_hashes.get(usize::try_from(key).ok()?))
                .copied()
                .unwrap_or(NULL_HASH)
        })), other => Err(unsupported(other)));
    }
    if let Some(b) = a.as_boolean_opt() {
        return Ok(map_prim(&bool_as_u8(b), prim_hash));
    }
    if is_string(a.data_type()) {
        return with_str_rows!(a, s => Ok(map_strs(s, |b| b.map_or(NULL_HASH, |b| hash_str(ROUTE_SEED, b).0))), other => Err(unsupported(other)));
    }
    with_key_type!(a.data_type(), T => Ok(map_prim(a.as_primitive::<T>(), prim_hash)), other => Err(unsupported(other)))
}

#[inline(always)]
fn prim_hash(k: Option<u64>) -> u64 {
    k.map_or(NULL_HASH, |v| hash_u64(ROUTE_SEED, v))
}

/// A hash per row of the key columns; equal keys hash equal whatever their encoding
/// (Utf8 / LargeUtf8 / dictionary strings; i32 / i64 / u32 integers with equal values), and the
/// hash is the same in every process and run (fixed seed), so it can route rows to partitions.
///
/// Every bit is well mixed, so `hash % n` (or the top bits) picks a partition; the encoder's
/// tables use another seed, so a partition's rows do not crowd its table's buckets.
pub fn hash_rows(columns: &[ArrayRef]) -> FrameResult<Vec<u64>> {
    let len = columns.first().map_or(0, |c| c.len());
    let mut out: Option<Vec<u64>> = None;
    for c in columns {
        if c.len() != len {
            return Err(FrameError::InvalidArgument(format!(
                "key columns of different lengths ({len} and {})",
                c.len()
            )));
        }
        let h = column_hashes(c.as_ref())?;
        out = Some(match out {
            None => h,
            Some(mut acc) => {
                acc.iter_mut()
                    .zip(&h)
                    .for_each(|(a, &b)| *a = hash_combine(*a, b));
                acc
            }
        });
    }
    out.ok_or_else(|| {
        FrameError::InvalidArgument("hash_rows needs at least one key column".to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        Float64Array, Int32Array, Int64Array, LargeStringArray, StringArray,
        TimestampMillisecondArray, UInt32Array,
    };
    use std::collections::HashMap;

    use crate::frame::test_rng::Rng;

    /// Ids in order of first appearance, by a hash map over the rows.
    fn naive_ids<K: std::hash::Hash + Eq + Clone>(
        rows: &[K],
        seen: &mut HashMap<K, u32>,
    ) -> Vec<u32> {
        rows.iter()
            .map(|r| {
                let n = seen.len() as u32;
                *seen.entry(r.clone()).or_insert(n)
            })
            .collect()
    }

    fn arr(a: impl Array + 'static) -> ArrayRef {
        Arc::new(a)
    }

    fn ints(rng: &mut Rng, n: usize, lo: i64, span: u64, null_every: u64) -> Vec<Option<i64>> {
        (0..n)
            .map(|_| (rng.below(null_every) != 0).then(|| lo + rng.below(span) as i64))
            .collect()
    }

    #[test]
    fn int_keys_in_order_of_first_appearance() {
        let mut e = KeyEncoder::new(&[DataType::Int64]).unwrap();
        let ids = e
            .encode(&[arr(Int64Array::from(vec![
                Some(7),
                None,
                Some(3),
                Some(7),
                None,
                Some(-2),
            ]))])
            .unwrap();
        assert_eq!(ids, vec![0, 1, 2, 0, 1, 3]);
        let ids = e
            .encode(&[arr(Int64Array::from(vec![Some(3), Some(100), Some(-50)]))])
            .unwrap();
        assert_eq!(ids, vec![2, 4, 5]);
        assert_eq!(e.len(), 6);
        let keys = e.keys().unwrap();
        let want = Int64Array::from(vec![Some(7), None, Some(3), Some(-2), Some(100), Some(-50)]);
        assert_eq!(keys[0].as_ref(), &want as &dyn Array);
        let found = e
            .lookup(&[arr(Int64Array::from(vec![
                Some(100),
                Some(5),
                None,
                Some(i64::MIN),
            ]))])
            .unwrap();
        assert_eq!(found, vec![Some(4), None, Some(1), None]);
    }

    /// Random batches whose ranges go from small (slot table) to huge (hash table), against
    /// the naive ids; lookups of seen and unseen keys.
    #[test]
    fn int_keys_match_naive_across_modes() {
        let mut rng = Rng(42);
        for (spans, null_every) in [
            (vec![10u64, 20, 1000, 1 << 40, 5], 5u64),
            (vec![1 << 40, 10, 10], 1000),
            (vec![100_000, 100_000], 3),
            (vec![3, 3, 3], 2),
        ] {
            let mut e = KeyEncoder::new(&[DataType::Int32]).unwrap();
            let mut seen = HashMap::new();
            for (b, span) in spans.iter().enumerate() {
                let lo = if b % 2 == 0 { -5 } else { 1000 };
                let span = (*span).min(1 << 30);
                let rows: Vec<Option<i32>> = ints(&mut rng, 500, lo, span, null_every)
                    .into_iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect();
                let ids = e.encode(&[arr(Int32Array::from(rows.clone()))]).unwrap();
                assert_eq!(ids, naive_ids(&rows, &mut seen));
                // Lookup of a wider type of the same class.
                let probe: Vec<Option<i64>> =
                    rows.iter().map(|v| v.map(|v| v as i64 + 1)).collect();
                let found = e.lookup(&[arr(Int64Array::from(probe.clone()))]).unwrap();
                for (p, f) in probe.iter().zip(found) {
                    let want = seen.get(&p.map(|v| v as i32)).copied();
                    assert_eq!(f, want, "probe {p:?}");
                }
            }
            let keys = e.keys().unwrap();
            let keys = keys[0].as_primitive::<Int32Type>();
            assert_eq!(keys.len(), seen.len());
            for (k, id) in &seen {
                let got = keys
                    .is_valid(*id as usize)
                    .then(|| keys.value(*id as usize));
                assert_eq!(got, *k);
            }
        }
    }

    #[test]
    fn extreme_integers_and_unsigned() {
        let mut e = KeyEncoder::new(&[DataType::Int64]).unwrap();
        let ids = e
            .encode(&[arr(Int64Array::from(vec![i64::MIN, i64::MAX, 0, i64::MIN]))])
            .unwrap();
        assert_eq!(ids, vec![0, 1, 2, 0]);
        let mut e = KeyEncoder::new(&[DataType::UInt64]).unwrap();
        let col = arr(arrow::array::UInt64Array::from(vec![
            u64::MAX,
            0,
            u64::MAX,
            1,
        ]));
        assert_eq!(
            e.encode(std::slice::from_ref(&col)).unwrap(),
            vec![0, 1, 0, 2]
        );
        let want = arrow::array::UInt64Array::from(vec![u64::MAX, 0, 1]);
        assert_eq!(e.keys().unwrap()[0].as_ref(), &want as &dyn Array);
    }

    #[test]
    fn float_bool_and_temporal_keys() {
        let mut e = KeyEncoder::new(&[DataType::Float64]).unwrap();
        let col = Float64Array::from(vec![
            Some(0.0),
            Some(-0.0),
            Some(f64::NAN),
            Some(-f64::NAN),
            None,
            Some(1.5),
        ]);
        assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 0, 1, 1, 2, 3]);
        let keys = e.keys().unwrap();
        let keys = keys[0].as_primitive::<Float64Type>();
        assert!(keys.value(1).is_nan() && keys.is_null(2) && keys.value(3) == 1.5);

        let mut e = KeyEncoder::new(&[DataType::Boolean]).unwrap();
        let col = BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]);
        assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 1, 2, 0]);
        let want = BooleanArray::from(vec![Some(true), None, Some(false)]);
        assert_eq!(e.keys().unwrap()[0].as_ref(), &want as &dyn Array);

        let dt = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        let mut e = KeyEncoder::new(std::slice::from_ref(&dt)).unwrap();
        let col = TimestampMillisecondArray::from(vec![5, 9, 5]).with_timezone("UTC");
        assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 1, 0]);
        let keys = e.keys().unwrap();
        assert_eq!(keys[0].data_type(), &dt);
        assert_eq!(
            keys[0]
                .as_primitive::<TimestampMillisecondType>()
                .values()
                .as_ref(),
            &[5, 9]
        );
    }

    fn strings(rng: &mut Rng, n: usize, distinct: u64, null_every: u64) -> Vec<Option<String>> {
        (0..n)
            .map(|_| (rng.below(null_every) != 0).then(|| format!("id{:03}", rng.below(distinct))))
            .collect()
    }

    fn dict(rows: &[Option<String>]) -> ArrayRef {
        // A dictionary with unused values first, so dictionary order differs from row order.
        let mut values: Vec<&str> = vec!["unused-a", "unused-b"];
        let mut index: HashMap<&str, i32> = HashMap::new();
        let keys: Vec<Option<i32>> = rows
            .iter()
            .map(|r| {
                r.as_deref().map(|s| {
                    *index.entry(s).or_insert_with(|| {
                        values.push(s);
                        values.len() as i32 - 1
                    })
                })
            })
            .collect();
        let values = StringArray::from(values);
        arr(
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), Arc::new(values))
                .unwrap(),
        )
    }

    /// Every string layout, mixed in one encoder, against the naive ids; keys come back in the
    /// encoder's type; unused dictionary values are not keys.
    #[test]
    fn string_keys_in_every_layout() {
        let dict_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        for dt in [
            DataType::Utf8,
            DataType::LargeUtf8,
            DataType::Utf8View,
            dict_type,
        ] {
            let mut rng = Rng(7);
            let mut e = KeyEncoder::new(std::slice::from_ref(&dt)).unwrap();
            let mut seen = HashMap::new();
            for layout in 0..4 {
                let rows = strings(&mut rng, 300, 40 + 20 * layout as u64, 6);
                let col: ArrayRef = match layout {
                    0 => arr(StringArray::from(rows.clone())),
                    1 => arr(LargeStringArray::from(rows.clone())),
                    2 => arr(StringViewArray::from(rows.clone())),
                    _ => dict(&rows),
                };
                let ids = e.encode(std::slice::from_ref(&col)).unwrap();
                assert_eq!(ids, naive_ids(&rows, &mut seen), "{dt} layout {layout}");
                let found = e.lookup(&[col]).unwrap();
                assert_eq!(found, ids.iter().map(|&i| Some(i)).collect::<Vec<_>>());
            }
            let keys = e.keys().unwrap();
            assert_eq!(keys[0].data_type(), &dt);
            let plain = arrow::compute::cast(&keys[0], &DataType::Utf8).unwrap();
            let plain = plain.as_string::<i32>();
            for (k, id) in &seen {
                let got = plain
                    .is_valid(*id as usize)
                    .then(|| plain.value(*id as usize).to_string());
                assert_eq!(&got, k);
            }
            let unseen = e
                .lookup(&[arr(StringArray::from(vec!["unused-a", "zzz"]))])
                .unwrap();
            assert_eq!(unseen, vec![None, None]);
        }
    }

    /// Two and three key columns (int, string, dictionary), growing past the grid into the
    /// hash table, against the naive ids; keys() unpacks the tuples.
    #[test]
    fn several_key_columns_match_naive() {
        for (distinct, batches) in [(5u64, 3), (400, 4)] {
            let mut rng = Rng(99 + distinct);
            let dict_type =
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
            let types = [DataType::Int64, DataType::Utf8, dict_type];
            let mut e2 = KeyEncoder::new(&types[..2]).unwrap();
            let mut e3 = KeyEncoder::new(&types).unwrap();
            let (mut seen2, mut seen3) = (HashMap::new(), HashMap::new());
            for _ in 0..batches {
                let a = ints(&mut rng, 2000, 0, distinct, 9);
                let b = strings(&mut rng, 2000, distinct, 9);
                let c = strings(&mut rng, 2000, 3, 9);
                let cols = [
                    arr(Int64Array::from(a.clone())),
                    arr(StringArray::from(b.clone())),
                    dict(&c),
                ];
                let rows2: Vec<_> = a.iter().cloned().zip(b.iter().cloned()).collect();
                let rows3: Vec<_> = rows2.iter().cloned().zip(c.iter().cloned()).collect();
                assert_eq!(
                    e2.encode(&cols[..2]).unwrap(),
                    naive_ids(&rows2, &mut seen2)
                );
                assert_eq!(e3.encode(&cols).unwrap(), naive_ids(&rows3, &mut seen3));
                let found = e3.lookup(&cols).unwrap();
                assert!(found
                    .iter()
                    .zip(&rows3)
                    .all(|(f, r)| *f == seen3.get(r).copied()));
            }
            assert_eq!(e3.len(), seen3.len());
            let keys = e3.keys().unwrap();
            let (ka, kb) = (
                keys[0].as_primitive::<Int64Type>(),
                keys[1].as_string::<i32>(),
            );
            let kc = arrow::compute::cast(&keys[2], &DataType::Utf8).unwrap();
            assert_eq!(keys[2].data_type(), &types[2]);
            let kc = kc.as_string::<i32>();
            for ((a, b), c) in seen3.keys() {
                let id = seen3[&((*a, b.clone()), c.clone())] as usize;
                assert_eq!(ka.is_valid(id).then(|| ka.value(id)), *a);
                assert_eq!(kb.is_valid(id).then(|| kb.value(id).to_string()), *b);
                assert_eq!(kc.is_valid(id).then(|| kc.value(id).to_string()), *c);
            }
            let probe = [
                arr(Int64Array::from(vec![Some(-1), None])),
                arr(StringArray::from(vec!["id000", "nope"])),
                dict(&[None, None]),
            ];
            assert_eq!(e3.lookup(&probe).unwrap(), vec![None, None]);
        }
    }

    #[test]
    fn empty_input_and_errors() {
        let mut e = KeyEncoder::new(&[DataType::Utf8, DataType::Int32]).unwrap();
        let empty = [
            arr(StringArray::from(Vec::<&str>::new())),
            arr(Int32Array::from(Vec::<i32>::new())),
        ];
        assert!(e.encode(&empty).unwrap().is_empty());
        assert!(e.is_empty());
        let keys = e.keys().unwrap();
        assert_eq!((keys[0].len(), keys[0].data_type()), (0, &DataType::Utf8));
        assert!(matches!(
            KeyEncoder::new(&[]),
            Err(FrameError::InvalidArgument(_))
        ));
        let list = DataType::List(Arc::new(Field::new("x", DataType::Int32, true)));
        assert!(matches!(
            KeyEncoder::new(&[list]),
            Err(FrameError::TypeMismatch(_))
        ));
        assert!(matches!(
            e.encode(&empty[..1]),
            Err(FrameError::InvalidArgument(_))
        ));
        let swapped = [empty[1].clone(), empty[0].clone()];
        assert!(matches!(
            e.encode(&swapped),
            Err(FrameError::TypeMismatch(_))
        ));
        let uneven = [
            arr(StringArray::from(vec!["a"])),
            arr(Int32Array::from(Vec::<i32>::new())),
        ];
        assert!(matches!(
            e.lookup(&uneven),
            Err(FrameError::InvalidArgument(_))
        ));
        assert!(matches!(
            hash_rows(&uneven),
            Err(FrameError::InvalidArgument(_))
        ));
        assert!(hash_rows(&[]).is_err());
    }

    #[test]
    fn small_dictionary_key_type_overflow_is_an_error() {
        let dt = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
        let mut e = KeyEncoder::new(&[dt]).unwrap();
        let names: Vec<String> = (0..200).map(|i| format!("k{i}")).collect();
        e.encode(&[arr(StringArray::from(names))]).unwrap();
        assert!(matches!(e.keys(), Err(FrameError::InvalidArgument(_))));
    }

    #[test]
    fn hash_rows_is_encoding_independent_and_fixed() {
        let s = ["a", "bb", "a", "id042"];
        let h_utf8 = hash_rows(&[arr(StringArray::from(s.to_vec()))]).unwrap();
        let h_large = hash_rows(&[arr(LargeStringArray::from(s.to_vec()))]).unwrap();
        let h_view = hash_rows(&[arr(StringViewArray::from(s.to_vec()))]).unwrap();
        let h_dict = hash_rows(&[dict(
            &s.iter().map(|v| Some(v.to_string())).collect::<Vec<_>>(),
        )])
        .unwrap();
        assert_eq!(h_utf8, h_large);
        assert_eq!(h_utf8, h_view);
        assert_eq!(h_utf8, h_dict);
        assert_eq!(h_utf8[0], h_utf8[2]);
        assert_ne!(h_utf8[0], h_utf8[1]);
        let i = [-3i64, 0, 7, 1 << 20];
        let h64 = hash_rows(&[arr(Int64Array::from(i.to_vec()))]).unwrap();
        let h32 = hash_rows(&[arr(Int32Array::from(
            i.iter().map(|&v| v as i32).collect::<Vec<_>>(),
        ))])
        .unwrap();
        assert_eq!(h64, h32);
        let hu = hash_rows(&[arr(UInt32Array::from(vec![0u32, 7]))]).unwrap();
        assert_eq!(hu, h64[1..3].to_vec());
        // Fixed across processes and runs: a snapshot.
        let two = hash_rows(&[
            arr(Int64Array::from(vec![Some(1), None])),
            arr(StringArray::from(vec![Some("x"), None])),
        ])
        .unwrap();
        assert_eq!(
            two,
            hash_rows(&[
                arr(Int32Array::from(vec![Some(1), None])),
                arr(LargeStringArray::from(vec![Some("x"), None]))
            ])
            .unwrap()
        );
        assert_ne!(two[0], two[1]);
        assert_eq!(h_utf8[3], 15164453906853595097);
        assert_eq!(h64[2], 4430848737621667117);
    }
}
