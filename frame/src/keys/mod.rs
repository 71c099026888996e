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
//! - a column after the first that the columns before it determine (a customer's name
//!   beside its key) is not encoded at all while it stays so: each tuple keeps one value,
//!   and rows are compared with it (see `dependent.rs`);
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
use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, PrimitiveArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::*;
use foldhash::fast::FixedState;
use hashbrown::HashTable;
use std::hash::{BuildHasher, Hasher};

mod decimal;
mod dependent;
mod pairs;
mod prim;
mod strings;
#[cfg(test)]
mod tests;

use dependent::Dependent;
use pairs::PairEncoder;
use prim::{bool_as_u8, map_prim, with_key_type, KeyNative, PrimEncoder};
use strings::{
    dict_values, map_strs, with_dict_key_type, with_dict_keys, with_str_rows, words, StrEncoder,
};

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

/// [`with_key_type`] for the other dataframe kernels.
pub(crate) use prim::with_key_type as with_primitive_type;

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

/// A validity mask of `len` rows with only `null_id` null.
fn null_mask(len: usize, null_id: Option<u32>) -> Option<NullBuffer> {
    let null_id = null_id? as usize;
    Some((0..len).map(|i| i != null_id).collect::<Vec<bool>>().into())
}

fn unsupported(dt: &DataType) -> FrameError {
    FrameError::TypeMismatch(format!("unsupported key type {dt}"))
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
        if let Some(view) = decimal::view_type(dt) {
            return ColEncoder::new(&view);
        }
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
        if let Some(view) = decimal::to_view(a)? {
            return self.encode(view.as_ref());
        }
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
        if let Some(view) = decimal::to_view(a)? {
            return self.lookup(view.as_ref());
        }
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
        if let Some(view) = decimal::view_type(dt) {
            return decimal::from_view(&self.keys(&view)?, dt);
        }
        match self {
            ColEncoder::Prim(e) => e.keys(dt),
            ColEncoder::Str(e) => e.keys(dt),
        }
    }
}

/// Distinct key tuples seen so far, each with a dense id (0, 1, 2, ... in order of first appearance).
pub struct KeyEncoder {
    types: Vec<DataType>,
    first: ColEncoder,
    /// `rest[i]` combines the tuple ids of columns `0..=i` with column `i + 1`.
    rest: Vec<Step>,
}

/// How a key column after the first joins the tuples of the columns before it.
enum Step {
    /// Its values so far are determined by the tuple before it (see [`Dependent`]): the
    /// tuple ids pass through.
    Dependent(Dependent),
    /// Its values are interned and paired with the tuple ids before it.
    Paired(ColEncoder, PairEncoder),
}

impl Step {
    /// Number of distinct tuples up to this column.
    fn len(&self) -> usize {
        match self {
            Step::Dependent(d) => d.len(),
            Step::Paired(_, pair) => pair.len(),
        }
    }

    /// Ends [`Step::Dependent`] for column type `dt`: the values of the `n` tuples so far
    /// are interned and paired with their tuple ids (which keep their ids).
    fn pair_up(&mut self, dt: &DataType) -> FrameResult<()> {
        let Step::Dependent(d) = self else {
            return Ok(());
        };
        let mut enc = ColEncoder::new(dt)?;
        let mut pair = PairEncoder::new();
        let n = d.len();
        if n > 0 {
            let col_ids = enc.encode(d.values()?.as_ref())?;
            let tuples: Vec<u32> = (0..n as u32).collect();
            pair.encode(&tuples, &col_ids, n, enc.len())?;
        }
        *self = Step::Paired(enc, pair);
        Ok(())
    }
}

impl KeyEncoder {
    /// An encoder for key columns of these types (any integer width, UTF-8 string in any encoding:
    /// Utf8, LargeUtf8, Utf8View, Dictionary<_, Utf8|LargeUtf8>; Boolean, Date32, Timestamp, Float64).
    ///
    /// Also Float32, Date64, Time32/64, Duration and decimals (keyed exactly: see
    /// `decimal.rs`). Columns given to [`KeyEncoder::encode`]
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
            first: ColEncoder::new(&key_types[0])?,
            rest: key_types[1..]
                .iter()
                .map(|dt| {
                    ColEncoder::new(dt)?; // the type is checked now, not when paired
                    Ok(Step::Dependent(Dependent::new(dt)))
                })
                .collect::<FrameResult<_>>()?,
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
        let Some((col, rest)) = columns.split_first() else {
            return Ok(Vec::new());
        };
        let mut ids = self.first.encode(col.as_ref())?;
        let mut n = self.first.len();
        for ((step, col), dt) in self.rest.iter_mut().zip(rest).zip(&self.types[1..]) {
            if let Step::Dependent(d) = step {
                if d.extend(&ids, n, col) {
                    continue;
                }
                step.pair_up(dt)?;
            }
            if let Step::Paired(enc, pair) = step {
                let col_ids = enc.encode(col.as_ref())?;
                ids = pair.encode(&ids, &col_ids, n, enc.len())?;
                n = pair.len();
            }
        }
        Ok(ids)
    }

    /// The id of each row's key without inserting; `None` where the key was never seen (join probe).
    pub fn lookup(&self, columns: &[ArrayRef]) -> FrameResult<Vec<Option<u32>>> {
        self.check(columns)?;
        let Some((col, rest)) = columns.split_first() else {
            return Ok(Vec::new());
        };
        let mut ids = self.first.lookup(col.as_ref())?;
        for (step, col) in self.rest.iter().zip(rest) {
            ids = match step {
                Step::Dependent(d) => d.lookup(&ids, col)?,
                Step::Paired(enc, pair) => pair.lookup(&ids, &enc.lookup(col.as_ref())?),
            };
        }
        Ok(ids
            .into_iter()
            .map(|id| (id != MISSING).then_some(id))
            .collect())
    }

    /// The keys are all in (a join's build side): lookups of an integer first column may
    /// then rule keys out by a bitmap before the hash table. The next `encode` undoes it.
    pub fn seal(&mut self) {
        if let ColEncoder::Prim(e) = &mut self.first {
            e.seal();
        }
    }

    /// Bytes of what [`KeyEncoder::seal`] built.
    pub fn sealed_bytes(&self) -> usize {
        match &self.first {
            ColEncoder::Prim(e) => e.sealed_bytes(),
            ColEncoder::Str(_) => 0,
        }
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.rest.last().map_or(self.first.len(), Step::len)
    }

    /// True when no key was seen.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distinct keys in id order, one array per key column, with the types given to `new`
    /// (strings come back as the same string type that was given).
    pub fn keys(&self) -> FrameResult<Vec<ArrayRef>> {
        if self.rest.is_empty() {
            return Ok(vec![self.first.keys(&self.types[0])?]);
        }
        // Each column's values by the tuple ids up to it, unpacked from the last column.
        let mut out: Vec<ArrayRef> = Vec::with_capacity(self.types.len());
        let mut tuple: Vec<u32> = (0..self.len() as u32).collect();
        for (step, dt) in self.rest.iter().zip(&self.types[1..]).rev() {
            let (distinct, col_ids) = match step {
                Step::Dependent(d) => (d.values()?, tuple.clone()),
                Step::Paired(enc, pair) => {
                    let packed: Vec<u64> = tuple
                        .iter()
                        .map(|&id| pair.pairs.get(id as usize).copied().unwrap_or_default())
                        .collect();
                    tuple = packed.iter().map(|&p| (p >> 32) as u32).collect();
                    (enc.keys(dt)?, packed.iter().map(|&p| p as u32).collect())
                }
            };
            let ids = PrimitiveArray::<UInt32Type>::from(col_ids);
            out.push(arrow::compute::take(distinct.as_ref(), &ids, None)?);
        }
        let distinct = self.first.keys(&self.types[0])?;
        let ids = PrimitiveArray::<UInt32Type>::from(tuple);
        out.push(arrow::compute::take(distinct.as_ref(), &ids, None)?);
        out.reverse();
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// Routing hashes

/// The routing hash of each row of one key column.
fn column_hashes(a: &dyn Array) -> FrameResult<Vec<u64>> {
    if let Some(view) = decimal::to_view(a)? {
        return column_hashes(view.as_ref());
    }
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
