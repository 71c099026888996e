//! Hash joins of two tables on key columns, with pandas `merge` semantics.
//!
//! The build side (the right table, or the left one for a right join) is encoded into dense key
//! ids with a [`KeyEncoder`], its rows are listed per id (counts, prefix sum, row indices: a CSR
//! list), and the other side probes it with [`KeyEncoder::lookup`]. The result is two row index
//! arrays, one per side (null where that side has no row), gathered with `take`.
//!
//! Like pandas, a null key equals another null key: rows with null keys join with each other.
//! Key columns of different encodings of one class (`schema::key_class`) compare by value:
//! `Utf8`, `LargeUtf8`, `Utf8View` and dictionary strings alike, and integers of any width.

use super::error::{FrameError, FrameResult};
use super::keys::KeyEncoder;
use super::schema::{column_index, key_class};
use arrow::array::{Array, ArrayRef, BooleanArray, UInt32Array};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::kernels::zip::zip;
use arrow::compute::{cast, cast_with_options, take, CastOptions};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

/// Which rows a join keeps (pandas `how`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JoinHow {
    /// Only pairs of rows whose keys match; left row order.
    Inner,
    /// Every left row (once with nulls on the right when nothing matches); left row order.
    Left,
    /// Every right row (once with nulls on the left when nothing matches); right row order.
    Right,
    /// The left join, then the right rows that matched nothing, in right order.
    Outer,
}

/// A join of a left and a right table on key columns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JoinSpec {
    /// The key columns of the left table.
    pub left_on: Vec<String>,
    /// The key columns of the right table, paired with `left_on` in order.
    pub right_on: Vec<String>,
    /// Which rows the join keeps.
    pub how: JoinHow,
    /// Appended to a non-key column name present on both sides (pandas' default: `_x`, `_y`).
    pub suffixes: (String, String),
}

/// Where one output column comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// Left column `i`, gathered with the left row indices.
    Left(usize),
    /// Right column `j`, gathered with the right row indices.
    Right(usize),
    /// A key shared by name: left column `i`, or right column `j` where the left row is missing.
    Coalesce(usize, usize),
}

/// The resolved columns of a join.
struct Plan {
    left_keys: Vec<usize>,
    right_keys: Vec<usize>,
    sources: Vec<Source>,
    schema: Schema,
}

impl JoinSpec {
    /// A join on `left_on` = `right_on` with pandas' default suffixes `_x` and `_y`.
    pub fn new(left_on: Vec<String>, right_on: Vec<String>, how: JoinHow) -> JoinSpec {
        JoinSpec {
            left_on,
            right_on,
            how,
            suffixes: ("_x".into(), "_y".into()),
        }
    }

    /// The result's schema; checks that key columns exist (ColumnNotFound), that left_on and right_on
    /// have the same length ≥ 1 (InvalidArgument) and that paired key types are of the same class
    /// (`schema::key_class`; else TypeMismatch naming both columns and both types).
    ///
    /// Also InvalidArgument when the suffixes leave two output columns with one name.
    pub fn output_schema(&self, left: &Schema, right: &Schema) -> FrameResult<Schema> {
        Ok(self.plan(left, right)?.schema)
    }

    fn plan(&self, left: &Schema, right: &Schema) -> FrameResult<Plan> {
        let (left_keys, right_keys) = self.key_indices(left, right)?;
        // Right key columns named like their paired left key are shown once (the left one).
        let mut shared: Vec<Option<usize>> = vec![None; right.fields().len()];
        for (k, (&i, &j)) in left_keys.iter().zip(&right_keys).enumerate() {
            if self.left_on[k] == self.right_on[k] && shared[j].is_none() {
                shared[j] = Some(i);
            }
        }
        let kept_right: Vec<usize> = (0..shared.len()).filter(|&j| shared[j].is_none()).collect();
        let right_names: HashSet<&str> = kept_right
            .iter()
            .map(|&j| right.field(j).name().as_str())
            .collect();
        let overlap: HashSet<&str> = left
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| right_names.contains(n))
            .collect();
        let (lsuf, rsuf) = (&self.suffixes.0, &self.suffixes.1);
        if !overlap.is_empty() && lsuf.is_empty() && rsuf.is_empty() {
            return Err(FrameError::InvalidArgument(format!(
                "columns {overlap:?} are on both sides of the join but no suffix is given"
            )));
        }
        let rename = |f: &Field, suffix: &str, nullable: bool| {
            let name = if overlap.contains(f.name().as_str()) {
                format!("{}{suffix}", f.name())
            } else {
                f.name().clone()
            };
            f.clone().with_name(name).with_nullable(nullable)
        };
        let left_missing = matches!(self.how, JoinHow::Right | JoinHow::Outer);
        let right_missing = matches!(self.how, JoinHow::Left | JoinHow::Outer);
        let mut sources = Vec::with_capacity(left.fields().len() + kept_right.len());
        let mut fields = Vec::with_capacity(sources.capacity());
        for (i, f) in left.fields().iter().enumerate() {
            let partner = shared.iter().position(|&s| s == Some(i));
            match partner.filter(|_| left_missing) {
                Some(j) => {
                    let nullable = f.is_nullable() || right.field(j).is_nullable();
                    fields.push(rename(f, lsuf, nullable));
                    sources.push(Source::Coalesce(i, j));
                }
                None => {
                    fields.push(rename(f, lsuf, f.is_nullable() || left_missing));
                    sources.push(Source::Left(i));
                }
            }
        }
        for &j in &kept_right {
            let f = right.field(j);
            fields.push(rename(f, rsuf, f.is_nullable() || right_missing));
            sources.push(Source::Right(j));
        }
        check_unique_names(&fields)?;
        Ok(Plan {
            left_keys,
            right_keys,
            sources,
            schema: Schema::new(fields),
        })
    }

    /// The positions of the key columns on each side, with their count and classes checked.
    fn key_indices(&self, left: &Schema, right: &Schema) -> FrameResult<(Vec<usize>, Vec<usize>)> {
        if self.left_on.len() != self.right_on.len() || self.left_on.is_empty() {
            return Err(FrameError::InvalidArgument(format!(
                "a join needs as many left keys as right keys, at least one: got {:?} and {:?}",
                self.left_on, self.right_on
            )));
        }
        let lk = names_to_indices(left, &self.left_on)?;
        let rk = names_to_indices(right, &self.right_on)?;
        for (k, (&i, &j)) in lk.iter().zip(&rk).enumerate() {
            let (lt, rt) = (left.field(i).data_type(), right.field(j).data_type());
            if key_class(lt) != key_class(rt) {
                return Err(FrameError::TypeMismatch(format!(
                    "join key {:?} ({lt}) cannot be compared with {:?} ({rt})",
                    self.left_on[k], self.right_on[k]
                )));
            }
        }
        Ok((lk, rk))
    }
}

fn names_to_indices(schema: &Schema, names: &[String]) -> FrameResult<Vec<usize>> {
    names.iter().map(|n| column_index(schema, n)).collect()
}

fn check_unique_names(fields: &[Field]) -> FrameResult<()> {
    let mut seen = HashSet::with_capacity(fields.len());
    let dups: Vec<&str> = fields
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| !seen.insert(*n))
        .collect();
    if dups.is_empty() {
        Ok(())
    } else {
        Err(FrameError::InvalidArgument(format!(
            "the join result would have duplicate columns {dups:?}; choose other suffixes"
        )))
    }
}

/// Joins one left table with one right table.
///
/// Rows: inner and left joins follow left row order, each left row followed by its matches in
/// right order; a right join is the mirror; an outer join is the left join followed by the
/// unmatched right rows. A key shared by name appears once, with the left type. Null keys
/// match each other (pandas semantics).
pub fn hash_join(
    spec: &JoinSpec,
    left: &RecordBatch,
    right: &RecordBatch,
) -> FrameResult<RecordBatch> {
    hash_join_with(
        spec,
        left,
        right,
        &|_: &[ArrayRef], _: &[ArrayRef], _: bool| Ok(None),
    )
}

/// The matching rows of a join, from a device: for each output row, the probe (left) row
/// and the build (right) row, `u32::MAX` where a left join's row has none; in the CPU's
/// order (probe rows in order, each one's build rows in order).
pub type Matches = (Vec<u32>, Vec<u32>);

/// A device's matcher of build keys against probe keys (`keep_unmatched`: a left join's
/// probe rows without a match are kept); `None` leaves the matching to the CPU.
pub type MatchFn<'a, E> = &'a dyn Fn(&[ArrayRef], &[ArrayRef], bool) -> Result<Option<Matches>, E>;

/// [`hash_join`], with inner and left joins' rows matched by `matcher` where it takes
/// them: keys without nulls, none of them cast into unmatchable values.
pub fn hash_join_with<E: From<FrameError>>(
    spec: &JoinSpec,
    left: &RecordBatch,
    right: &RecordBatch,
    matcher: MatchFn<'_, E>,
) -> Result<RecordBatch, E> {
    let plan = spec.plan(left.schema_ref(), right.schema_ref())?;
    let (lside, rside) = key_sides(&plan, left, right)?;
    let plain = |s: &Side| s.unmatchable.is_none() && s.keys.iter().all(|k| k.null_count() == 0);
    let device = match spec.how {
        JoinHow::Inner | JoinHow::Left if plain(&lside) && plain(&rside) => {
            matcher(&rside.keys, &lside.keys, spec.how == JoinHow::Left)?
        }
        _ => None,
    };
    let (left_rows, right_rows) = match (device, spec.how) {
        (Some((probe, build)), _) => Pairs {
            probe: Some(probe),
            build,
            probe_rows: lside.rows,
            build_rows: rside.rows,
        }
        .into_sides(),
        (None, JoinHow::Inner) => match_rows(&rside, &lside, false, false)?.into_sides(),
        (None, JoinHow::Left) => match_rows(&rside, &lside, true, false)?.into_sides(),
        (None, JoinHow::Right) => match_rows(&lside, &rside, true, false)?.swap(),
        (None, JoinHow::Outer) => match_rows(&rside, &lside, true, true)?.into_sides(),
    };
    let len = left_rows.len();
    let columns = plan
        .sources
        .iter()
        .map(|s| match *s {
            Source::Left(i) => left_rows.gather(left.column(i)),
            Source::Right(j) => right_rows.gather(right.column(j)),
            Source::Coalesce(i, j) => {
                coalesce_key(left.column(i), right.column(j), &left_rows, &right_rows)
            }
        })
        .collect::<FrameResult<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(len));
    let batch = RecordBatch::try_new_with_options(Arc::new(plan.schema), columns, &options);
    Ok(batch.map_err(FrameError::from)?)
}

/// The key columns of one side (a UInt64 key paired with a signed one cast to Int64).
struct Side {
    keys: Vec<ArrayRef>,
    rows: usize,
    /// Rows whose key a cast could not represent: they equal no key on the other side.
    unmatchable: Option<Vec<bool>>,
}

fn key_sides(plan: &Plan, left: &RecordBatch, right: &RecordBatch) -> FrameResult<(Side, Side)> {
    for (what, rows) in [("left", left.num_rows()), ("right", right.num_rows())] {
        if u32::try_from(rows).is_err() {
            return Err(FrameError::InvalidArgument(format!(
                "hash_join supports at most {} rows per side, the {what} side has {rows}",
                u32::MAX
            )));
        }
    }
    let mut lside = Side::new(left.num_rows());
    let mut rside = Side::new(right.num_rows());
    for (&i, &j) in plan.left_keys.iter().zip(&plan.right_keys) {
        let (l, r) = (left.column(i), right.column(j));
        lside.push(l, r.data_type())?;
        rside.push(r, l.data_type())?;
    }
    Ok((lside, rside))
}

impl Side {
    fn new(rows: usize) -> Side {
        Side {
            keys: Vec::new(),
            rows,
            unmatchable: None,
        }
    }

    /// Adds key `col`, paired with a key of type `other`.
    ///
    /// The key encoder compares any encodings of one key class, integers by their value
    /// extended to 64 bits; a UInt64 value above i64::MAX would then equal a negative signed
    /// value, so a UInt64 key paired with a signed one is cast to Int64, and the rows it cannot
    /// hold (they equal no signed value) are marked unmatchable.
    fn push(&mut self, col: &ArrayRef, other: &DataType) -> FrameResult<()> {
        if *col.data_type() == DataType::UInt64 && other.is_signed_integer() {
            self.push_cast(col, &DataType::Int64)
        } else {
            self.keys.push(Arc::clone(col));
            Ok(())
        }
    }

    /// Adds `col` cast to `to`; rows the cast turns to null are marked unmatchable.
    fn push_cast(&mut self, col: &ArrayRef, to: &DataType) -> FrameResult<()> {
        let cast_col = cast(col, to)?;
        if cast_col.logical_null_count() > col.logical_null_count() {
            let mask = self
                .unmatchable
                .get_or_insert_with(|| vec![false; self.rows]);
            let before = col.logical_nulls();
            let after = cast_col.logical_nulls();
            for (row, lost) in mask.iter_mut().enumerate() {
                let was_valid = before.as_ref().is_none_or(|n| n.is_valid(row));
                let is_null = after.as_ref().is_some_and(|n| n.is_null(row));
                *lost |= was_valid && is_null;
            }
        }
        self.keys.push(cast_col);
        Ok(())
    }
}

/// No row on this side (an unmatched row of the other side).
const NONE: u32 = u32::MAX;

/// The matched rows: for each output row, the probe row and the build row (`NONE` when missing).
struct Pairs {
    /// `None` when the probe side is every probe row once, in order.
    probe: Option<Vec<u32>>,
    build: Vec<u32>,
    probe_rows: usize,
    /// The build side's row count (set by `match_rows`).
    build_rows: usize,
}

impl Pairs {
    /// (probe rows, build rows).
    fn into_sides(self) -> (RowIndex, RowIndex) {
        // Every build row once, in order (a one-to-one join of aligned tables): no gather.
        let in_order =
            self.build.len() == self.build_rows && (0u32..).zip(&self.build).all(|(i, &b)| i == b);
        let build = match in_order {
            true => RowIndex::All(self.build_rows),
            false => RowIndex::Take(index_array(self.build)),
        };
        let probe = match self.probe {
            None => RowIndex::All(self.probe_rows),
            Some(p) => RowIndex::Take(index_array(p)),
        };
        (probe, build)
    }

    /// (build rows, probe rows).
    fn swap(self) -> (RowIndex, RowIndex) {
        let (probe, build) = self.into_sides();
        (build, probe)
    }
}

/// Rows of one side of the output.
enum RowIndex {
    /// Every row of the side once, in order (no gather needed).
    All(usize),
    /// Row indices; null where the side has no row.
    Take(UInt32Array),
}

impl RowIndex {
    fn len(&self) -> usize {
        match self {
            RowIndex::All(n) => *n,
            RowIndex::Take(a) => a.len(),
        }
    }

    fn gather(&self, col: &ArrayRef) -> FrameResult<ArrayRef> {
        match self {
            RowIndex::All(_) => Ok(Arc::clone(col)),
            RowIndex::Take(idx) => Ok(take(col.as_ref(), idx, None)?),
        }
    }

    /// Where the side has a row, when it lacks some.
    fn present(&self) -> Option<&NullBuffer> {
        match self {
            RowIndex::All(_) => None,
            RowIndex::Take(idx) => idx.nulls().filter(|n| n.null_count() > 0),
        }
    }
}

/// A UInt32 index array with nulls where `v` holds `NONE` (their values become 0).
fn index_array(mut v: Vec<u32>) -> UInt32Array {
    if !v.contains(&NONE) {
        return UInt32Array::from(v);
    }
    let valid = BooleanBuffer::collect_bool(v.len(), |i| v[i] != NONE);
    v.iter_mut().filter(|x| **x == NONE).for_each(|x| *x = 0);
    UInt32Array::new(v.into(), Some(NullBuffer::new(valid)))
}

/// A key shared by name: the left value, or the right value (cast to the left type) where the
/// output row has no left row.
fn coalesce_key(
    lcol: &ArrayRef,
    rcol: &ArrayRef,
    left_rows: &RowIndex,
    right_rows: &RowIndex,
) -> FrameResult<ArrayRef> {
    let l = left_rows.gather(lcol)?;
    let Some(present) = left_rows.present() else {
        return Ok(l);
    };
    let mut r = right_rows.gather(rcol)?;
    if r.data_type() != l.data_type() {
        let strict = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        r = cast_with_options(&r, l.data_type(), &strict)?;
    }
    let mask = BooleanArray::new(present.inner().clone(), None);
    Ok(zip(&mask, &l, &r)?)
}

/// Matches every probe row with the build rows of equal key.
///
/// `keep_unmatched`: a probe row without matches is output once with no build row.
/// `add_unmatched_build`: then the build rows that matched nothing follow, in build order.
fn match_rows(
    build: &Side,
    probe: &Side,
    keep_unmatched: bool,
    add_unmatched_build: bool,
) -> FrameResult<Pairs> {
    let types: Vec<DataType> = build.keys.iter().map(|k| k.data_type().clone()).collect();
    let mut encoder = KeyEncoder::new(&types)?;
    let build_ids = encoder.encode(&build.keys)?;
    let mut probe_ids = encoder.lookup(&probe.keys)?;
    if build_ids.len() != build.rows || probe_ids.len() != probe.rows {
        return Err(FrameError::InvalidArgument(format!(
            "the key encoder returned {} and {} ids for {} and {} rows",
            build_ids.len(),
            probe_ids.len(),
            build.rows,
            probe.rows
        )));
    }
    if let Some(lost) = &probe.unmatchable {
        for (id, &l) in probe_ids.iter_mut().zip(lost) {
            if l {
                *id = None;
            }
        }
    }
    let n_ids = encoder.len();
    let mut pairs = if build.unmatchable.is_none() && n_ids == build.rows {
        // Every build row has its own key, and ids are given in row order: id = row.
        probe_unique(&probe_ids, keep_unmatched)
    } else {
        let csr = Csr::new(&build_ids, n_ids, build.unmatchable.as_deref());
        csr.probe(&probe_ids, keep_unmatched)
    };
    pairs.build_rows = build.rows;
    if add_unmatched_build {
        append_unmatched_build(&mut pairs, &build_ids, n_ids, build.unmatchable.as_deref());
    }
    Ok(pairs)
}

/// Probing a build side whose rows all have distinct keys (row = id).
fn probe_unique(probe_ids: &[Option<u32>], keep_unmatched: bool) -> Pairs {
    let build: Vec<u32> = probe_ids.iter().map(|id| id.unwrap_or(NONE)).collect();
    if keep_unmatched || !build.contains(&NONE) {
        return Pairs {
            probe: None,
            build,
            probe_rows: probe_ids.len(),
            build_rows: 0,
        };
    }
    let (probe, build): (Vec<u32>, Vec<u32>) =
        (0u32..).zip(build).filter(|&(_, b)| b != NONE).unzip();
    Pairs {
        probe: Some(probe),
        build,
        probe_rows: probe_ids.len(),
        build_rows: 0,
    }
}

/// The build rows of each key id, in row order (a CSR list): `rows[offsets[id]..offsets[id + 1]]`.
struct Csr {
    offsets: Vec<u32>,
    rows: Vec<u32>,
}

impl Csr {
    /// Lists the rows per id, leaving out unmatchable rows. Every id is below `n_ids`.
    fn new(ids: &[u32], n_ids: usize, unmatchable: Option<&[bool]>) -> Csr {
        let skip = |row: usize| unmatchable.is_some_and(|u| u[row]);
        // offsets[id] = the end of id's rows (inclusive prefix sum of the counts) ...
        let mut offsets = vec![0u32; n_ids + 1];
        for (row, &id) in ids.iter().enumerate() {
            if !skip(row) {
                offsets[id as usize] += 1;
            }
        }
        let mut total = 0;
        for o in &mut offsets {
            total += *o;
            *o = total;
        }
        // ... then filled back to front, which leaves offsets[id] = the start of id's rows and
        // the rows of each id in increasing order. Row numbers fit u32 (checked in `key_sides`).
        let mut rows = vec![0u32; total as usize];
        for (row, &id) in ids.iter().enumerate().rev() {
            if !skip(row) {
                let slot = &mut offsets[id as usize];
                *slot -= 1;
                rows[*slot as usize] = row as u32;
            }
        }
        Csr { offsets, rows }
    }

    /// The start and count of key `id`'s rows (count 0 when none).
    #[inline(always)]
    fn span(&self, id: Option<u32>) -> (u32, u32) {
        let Some(id) = id else { return (0, 0) };
        let id = id as usize;
        match (self.offsets.get(id), self.offsets.get(id + 1)) {
            (Some(&s), Some(&e)) => (s, e - s),
            _ => (0, 0),
        }
    }

    fn probe(&self, probe_ids: &[Option<u32>], keep_unmatched: bool) -> Pairs {
        let n = probe_ids.len();
        // Pass 1 gathers each probe row's span (independent loads that overlap their cache
        // misses) and the output size; pass 2 reads the spans in order.
        let spans: Vec<(u32, u32)> = probe_ids.iter().map(|&id| self.span(id)).collect();
        let unmatched = usize::from(keep_unmatched);
        let total: usize = spans
            .iter()
            .map(|&(_, count)| match count {
                0 => unmatched,
                k => k as usize,
            })
            .sum();
        // Exact sizes, then plain stores: no per-row capacity checks or small memcpy calls.
        let mut probe = vec![0u32; total];
        let mut build = vec![0u32; total];
        let mut pos = 0;
        let mut dropped = false;
        for (&(at, count), p) in spans.iter().zip(0u32..) {
            match count {
                0 if keep_unmatched => {
                    probe[pos] = p;
                    build[pos] = NONE;
                    pos += 1;
                }
                0 => dropped = true,
                _ => {
                    let rows = &self.rows[at as usize..(at + count) as usize];
                    let end = pos + rows.len();
                    // One loop for both sides: a `copy_from_slice` of a few rows would be a
                    // memcpy call per probe row.
                    let out = probe[pos..end].iter_mut().zip(&mut build[pos..end]);
                    for ((dp, db), &r) in out.zip(rows) {
                        *dp = p;
                        *db = r;
                    }
                    pos = end;
                }
            }
        }
        // Each probe row gave at least one output row, and n in all: exactly one each.
        let identity = !dropped && total == n;
        Pairs {
            probe: (!identity).then_some(probe),
            build,
            probe_rows: n,
            build_rows: 0,
        }
    }
}

/// Appends the build rows that matched nothing (no probe row).
fn append_unmatched_build(
    pairs: &mut Pairs,
    build_ids: &[u32],
    n_ids: usize,
    unmatchable: Option<&[bool]>,
) {
    let mut hit = vec![false; n_ids];
    for &b in pairs.build.iter().filter(|&&b| b != NONE) {
        if let Some(&id) = build_ids.get(b as usize) {
            hit[id as usize] = true;
        }
    }
    let lost = |row: usize| unmatchable.is_some_and(|u| u[row]);
    let missing: Vec<u32> = (0u32..)
        .zip(build_ids)
        .enumerate()
        .filter(|&(row, (_, &id))| lost(row) || !hit[id as usize])
        .map(|(_, (r, _))| r)
        .collect();
    if missing.is_empty() {
        return;
    }
    let n = pairs.probe_rows as u32;
    let probe = pairs.probe.get_or_insert_with(|| (0..n).collect());
    probe.extend(std::iter::repeat_n(NONE, missing.len()));
    pairs.build.extend(missing);
}

#[cfg(test)]
mod tests {
    use super::super::partition::hash_partition;
    use super::*;
    use arrow::array::{
        DictionaryArray, Float64Array, Int32Array, Int64Array, LargeStringArray, StringArray,
        UInt64Array,
    };
    use arrow::datatypes::Int32Type;
    use arrow::util::display::{ArrayFormatter, FormatOptions};

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    fn strs(v: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(v.to_vec()))
    }

    fn table(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        let fields: Vec<Field> = cols
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        let arrays = cols.into_iter().map(|(_, a)| a).collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn spec(l: &[&str], r: &[&str], how: JoinHow) -> JoinSpec {
        JoinSpec::new(names(l), names(r), how)
    }

    fn fmt(a: &ArrayRef, i: usize) -> String {
        let options = FormatOptions::default().with_null("∅");
        ArrayFormatter::try_new(a.as_ref(), &options)
            .unwrap()
            .value(i)
            .to_string()
    }

    /// Each row as "v1,v2,..." (null as ∅).
    fn rows(b: &RecordBatch) -> Vec<String> {
        (0..b.num_rows())
            .map(|i| {
                let vals: Vec<String> = b.columns().iter().map(|c| fmt(c, i)).collect();
                vals.join(",")
            })
            .collect()
    }

    fn col_names(b: &RecordBatch) -> Vec<String> {
        b.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    fn dup_tables() -> (RecordBatch, RecordBatch) {
        let left = table(vec![
            ("k", ints(&[Some(1), Some(2), Some(2), Some(3), None])),
            (
                "a",
                strs(&[Some("a0"), Some("a1"), Some("a2"), Some("a3"), Some("a4")]),
            ),
        ]);
        let right = table(vec![
            ("k", ints(&[Some(2), Some(4), Some(2), None, Some(1), None])),
            (
                "b",
                ints(&[Some(10), Some(11), Some(12), Some(13), Some(14), Some(15)]),
            ),
        ]);
        (left, right)
    }

    #[test]
    fn duplicates_and_null_keys_every_how() {
        let (left, right) = dup_tables();
        let run = |how| hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap();
        let inner = [
            "1,a0,14",
            "2,a1,10",
            "2,a1,12",
            "2,a2,10",
            "2,a2,12",
            "∅,a4,13",
            "∅,a4,15",
        ];
        assert_eq!(rows(&run(JoinHow::Inner)), inner);
        let left_rows = [
            "1,a0,14",
            "2,a1,10",
            "2,a1,12",
            "2,a2,10",
            "2,a2,12",
            "3,a3,∅",
            "∅,a4,13",
            "∅,a4,15",
        ];
        assert_eq!(rows(&run(JoinHow::Left)), left_rows);
        let right_rows = [
            "2,a1,10",
            "2,a2,10",
            "4,∅,11",
            "2,a1,12",
            "2,a2,12",
            "∅,a4,13",
            "1,a0,14",
            "∅,a4,15",
        ];
        assert_eq!(rows(&run(JoinHow::Right)), right_rows);
        let mut outer = left_rows.to_vec();
        outer.push("4,∅,11");
        let out = run(JoinHow::Outer);
        assert_eq!(rows(&out), outer);
        assert_eq!(col_names(&out), ["k", "a", "b"]);
    }

    #[test]
    fn unique_right_keys() {
        let left = table(vec![
            (
                "k",
                strs(&[Some("x"), Some("y"), Some("q"), Some("x"), None]),
            ),
            ("v", ints(&[Some(1), Some(2), Some(3), Some(4), Some(5)])),
        ]);
        let right = table(vec![
            ("k", strs(&[Some("y"), Some("x"), Some("z")])),
            ("w", ints(&[Some(20), Some(10), Some(30)])),
        ]);
        let run = |how| rows(&hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap());
        assert_eq!(run(JoinHow::Inner), ["x,1,10", "y,2,20", "x,4,10"]);
        assert_eq!(
            run(JoinHow::Left),
            ["x,1,10", "y,2,20", "q,3,∅", "x,4,10", "∅,5,∅"]
        );
        assert_eq!(
            run(JoinHow::Right),
            ["y,2,20", "x,1,10", "x,4,10", "z,∅,30"]
        );
        assert_eq!(
            run(JoinHow::Outer),
            ["x,1,10", "y,2,20", "q,3,∅", "x,4,10", "∅,5,∅", "z,∅,30"]
        );
    }

    #[test]
    fn no_matches() {
        let left = table(vec![
            ("k", ints(&[Some(1), Some(2)])),
            ("a", ints(&[Some(7), None])),
        ]);
        let right = table(vec![("k", ints(&[Some(3)])), ("b", ints(&[Some(9)]))]);
        let run = |how| rows(&hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap());
        assert!(run(JoinHow::Inner).is_empty());
        assert_eq!(run(JoinHow::Left), ["1,7,∅", "2,∅,∅"]);
        assert_eq!(run(JoinHow::Right), ["3,∅,9"]);
        assert_eq!(run(JoinHow::Outer), ["1,7,∅", "2,∅,∅", "3,∅,9"]);
    }

    #[test]
    fn empty_sides() {
        let (left, right) = dup_tables();
        let (l0, r0) = (left.slice(0, 0), right.slice(0, 0));
        for how in [
            JoinHow::Inner,
            JoinHow::Left,
            JoinHow::Right,
            JoinHow::Outer,
        ] {
            let s = spec(&["k"], &["k"], how);
            let expect_schema = s.output_schema(&left.schema(), &right.schema()).unwrap();
            let both = hash_join(&s, &l0, &r0).unwrap();
            assert_eq!(both.num_rows(), 0);
            assert_eq!(*both.schema(), expect_schema);
            let no_right = hash_join(&s, &left, &r0).unwrap();
            let no_left = hash_join(&s, &l0, &right).unwrap();
            let keeps_left = matches!(how, JoinHow::Left | JoinHow::Outer);
            let keeps_right = matches!(how, JoinHow::Right | JoinHow::Outer);
            assert_eq!(no_right.num_rows(), if keeps_left { 5 } else { 0 });
            assert_eq!(no_left.num_rows(), if keeps_right { 6 } else { 0 });
            if keeps_left {
                assert_eq!(rows(&no_right)[3], "3,a3,∅");
            }
            if keeps_right {
                assert_eq!(rows(&no_left)[1], "4,∅,11");
            }
        }
    }

    #[test]
    fn single_rows() {
        let left = table(vec![("k", ints(&[Some(1)])), ("a", ints(&[Some(2)]))]);
        let right = table(vec![("k", ints(&[Some(1)])), ("b", ints(&[Some(3)]))]);
        for how in [
            JoinHow::Inner,
            JoinHow::Left,
            JoinHow::Right,
            JoinHow::Outer,
        ] {
            let out = hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap();
            assert_eq!(rows(&out), ["1,2,3"]);
        }
    }

    #[test]
    fn two_keys_and_value_suffixes() {
        let left = table(vec![
            ("k1", ints(&[Some(1), Some(1), Some(2), None])),
            ("k2", strs(&[Some("a"), Some("b"), Some("a"), Some("a")])),
            ("v", ints(&[Some(0), Some(1), Some(2), Some(3)])),
        ]);
        let right = table(vec![
            ("v", ints(&[Some(10), Some(11), Some(12), Some(13)])),
            ("k2", strs(&[Some("b"), Some("a"), Some("a"), Some("a")])),
            ("k1", ints(&[Some(1), Some(1), Some(3), None])),
        ]);
        let s = spec(&["k1", "k2"], &["k1", "k2"], JoinHow::Outer);
        let out = hash_join(&s, &left, &right).unwrap();
        assert_eq!(col_names(&out), ["k1", "k2", "v_x", "v_y"]);
        assert_eq!(
            rows(&out),
            ["1,a,0,11", "1,b,1,10", "2,a,2,∅", "∅,a,3,13", "3,a,∅,12"]
        );
        let inner = hash_join(
            &spec(&["k1", "k2"], &["k1", "k2"], JoinHow::Inner),
            &left,
            &right,
        );
        assert_eq!(rows(&inner.unwrap()), ["1,a,0,11", "1,b,1,10", "∅,a,3,13"]);
    }

    #[test]
    fn differently_named_keys_are_both_kept() {
        let left = table(vec![
            ("a", ints(&[Some(1), Some(2)])),
            ("b", ints(&[Some(5), Some(6)])),
            ("v", ints(&[Some(7), Some(8)])),
        ]);
        let right = table(vec![
            ("b", ints(&[Some(2), Some(9)])),
            ("a", ints(&[Some(0), Some(0)])),
            ("v", ints(&[Some(3), Some(4)])),
        ]);
        let s = spec(&["a"], &["b"], JoinHow::Outer);
        let out = hash_join(&s, &left, &right).unwrap();
        assert_eq!(col_names(&out), ["a_x", "b_x", "v_x", "b_y", "a_y", "v_y"]);
        assert_eq!(rows(&out), ["1,5,7,∅,∅,∅", "2,6,8,2,0,3", "∅,∅,∅,9,0,4"]);
        let mut custom = spec(&["a"], &["b"], JoinHow::Inner);
        custom.suffixes = ("_l".into(), "".into());
        let out = hash_join(&custom, &left, &right).unwrap();
        assert_eq!(col_names(&out), ["a_l", "b_l", "v_l", "b", "a", "v"]);
    }

    #[test]
    fn output_schema_nullability() {
        let f = |n: &str, dt, nullable| Field::new(n, dt, nullable);
        let left = Schema::new(vec![
            f("k", DataType::Int64, false),
            f("a", DataType::Utf8, false),
        ]);
        let right = Schema::new(vec![
            f("k", DataType::Int32, false),
            f("b", DataType::Float64, false),
        ]);
        let nullable = |how| {
            let s = spec(&["k"], &["k"], how)
                .output_schema(&left, &right)
                .unwrap();
            assert_eq!(s.field(0).data_type(), &DataType::Int64);
            s.fields()
                .iter()
                .map(|f| f.is_nullable())
                .collect::<Vec<bool>>()
        };
        assert_eq!(nullable(JoinHow::Inner), [false, false, false]);
        assert_eq!(nullable(JoinHow::Left), [false, false, true]);
        assert_eq!(nullable(JoinHow::Right), [false, true, false]);
        assert_eq!(nullable(JoinHow::Outer), [false, true, true]);
    }

    #[test]
    fn string_encodings_and_int_widths_match() {
        let left = table(vec![
            ("k", strs(&[Some("x"), Some("y"), None, Some("w")])),
            ("n", ints(&[Some(1), Some(2), Some(3), Some(4)])),
        ]);
        let large: ArrayRef = Arc::new(LargeStringArray::from(vec![Some("y"), Some("z"), None]));
        let dict: ArrayRef = Arc::new(
            vec![Some("y"), Some("z"), None]
                .into_iter()
                .collect::<DictionaryArray<Int32Type>>(),
        );
        let narrow: ArrayRef = Arc::new(Int32Array::from(vec![Some(2), Some(9), Some(1)]));
        for rk in [large, dict] {
            let right = table(vec![("k", rk), ("n", narrow.clone())]);
            let out = hash_join(&spec(&["k"], &["k"], JoinHow::Outer), &left, &right).unwrap();
            assert_eq!(out.column(0).data_type(), &DataType::Utf8);
            assert_eq!(col_names(&out), ["k", "n_x", "n_y"]);
            assert_eq!(rows(&out), ["x,1,∅", "y,2,2", "∅,3,1", "w,4,∅", "z,∅,9"]);
            // Integer keys of different widths, output in the left type.
            let by_n = hash_join(&spec(&["n"], &["n"], JoinHow::Right), &right, &left).unwrap();
            assert_eq!(by_n.column(1).data_type(), &DataType::Int32);
            assert_eq!(col_names(&by_n), ["k_x", "n", "k_y"]);
            assert_eq!(rows(&by_n), ["∅,1,x", "y,2,y", "∅,3,∅", "∅,4,w"]);
        }
    }

    #[test]
    fn dictionary_left_key_takes_right_values() {
        let dict: ArrayRef = Arc::new(
            vec![Some("b"), Some("a"), Some("b")]
                .into_iter()
                .collect::<DictionaryArray<Int32Type>>(),
        );
        let left = table(vec![("k", dict), ("l", ints(&[Some(0), Some(1), Some(2)]))]);
        let right = table(vec![
            ("k", strs(&[Some("c"), Some("b"), None])),
            ("r", ints(&[Some(5), Some(6), Some(7)])),
        ]);
        let out = hash_join(&spec(&["k"], &["k"], JoinHow::Outer), &left, &right).unwrap();
        assert!(matches!(
            out.column(0).data_type(),
            DataType::Dictionary(_, _)
        ));
        assert_eq!(rows(&out), ["b,0,6", "a,1,∅", "b,2,6", "c,∅,5", "∅,∅,7"]);
        let out = hash_join(&spec(&["k"], &["k"], JoinHow::Right), &left, &right).unwrap();
        assert_eq!(rows(&out), ["c,∅,5", "b,0,6", "b,2,6", "∅,∅,7"]);
    }

    #[test]
    fn aligned_one_to_one_join() {
        let ids = ints(&[Some(4), Some(1), Some(9)]);
        let left = table(vec![
            ("id", ids.clone()),
            ("a", ints(&[Some(0), Some(1), Some(2)])),
        ]);
        let right = table(vec![
            ("id", ids),
            ("b", strs(&[Some("x"), None, Some("z")])),
        ]);
        for how in ALL_HOWS {
            let out = hash_join(&spec(&["id"], &["id"], how), &left, &right).unwrap();
            assert_eq!(rows(&out), ["4,0,x", "1,1,∅", "9,2,z"]);
        }
    }

    #[test]
    fn unsigned_beyond_i64_matches_nothing() {
        let left = table(vec![("k", ints(&[Some(-1), Some(5), None]))]);
        let big: ArrayRef = Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(5), None]));
        let right = table(vec![("k", big), ("r", ints(&[Some(0), Some(1), Some(2)]))]);
        let s = spec(&["k"], &["k"], JoinHow::Left);
        assert_eq!(
            rows(&hash_join(&s, &left, &right).unwrap()),
            ["-1,∅", "5,1", "∅,2"]
        );
        let s = spec(&["k"], &["k"], JoinHow::Inner);
        assert_eq!(rows(&hash_join(&s, &right, &left).unwrap()), ["5,1", "∅,2"]);
        // The unmatched right value cannot be shown in the left key's type.
        let s = spec(&["k"], &["k"], JoinHow::Outer);
        assert!(matches!(
            hash_join(&s, &left, &right),
            Err(FrameError::Arrow(_))
        ));
    }

    #[test]
    fn errors() {
        let (left, right) = dup_tables();
        let err = |s: JoinSpec| hash_join(&s, &left, &right).unwrap_err();
        match err(spec(&["nope"], &["k"], JoinHow::Inner)) {
            FrameError::ColumnNotFound { name, .. } => assert_eq!(name, "nope"),
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            err(spec(&["k"], &["zz"], JoinHow::Left)),
            FrameError::ColumnNotFound { .. }
        ));
        match err(spec(&["a"], &["k"], JoinHow::Inner)) {
            FrameError::TypeMismatch(m) => {
                assert!(m.contains("\"a\"") && m.contains("\"k\""), "{m}");
                assert!(m.contains("Utf8") && m.contains("Int64"), "{m}");
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            err(spec(&["k", "a"], &["k"], JoinHow::Inner)),
            FrameError::InvalidArgument(_)
        ));
        assert!(matches!(
            err(spec(&[], &[], JoinHow::Inner)),
            FrameError::InvalidArgument(_)
        ));
        let mut no_suffix = spec(&["a"], &["b"], JoinHow::Inner);
        no_suffix.suffixes = (String::new(), String::new());
        let l2 = table(vec![("a", ints(&[Some(1)])), ("x", ints(&[Some(1)]))]);
        let r2 = table(vec![("b", ints(&[Some(1)])), ("x", ints(&[Some(1)]))]);
        assert!(matches!(
            hash_join(&no_suffix, &l2, &r2),
            Err(FrameError::InvalidArgument(_))
        ));
        // A suffixed name clashing with an existing column.
        let l3 = table(vec![
            ("a", ints(&[Some(1)])),
            ("x", ints(&[Some(1)])),
            ("x_x", ints(&[Some(1)])),
        ]);
        let s = spec(&["a"], &["b"], JoinHow::Inner);
        assert!(matches!(
            hash_join(&s, &l3, &r2),
            Err(FrameError::InvalidArgument(_))
        ));
        let f64s: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
        let r4 = table(vec![("b", f64s)]);
        assert!(matches!(
            spec(&["a"], &["b"], JoinHow::Inner).output_schema(&l2.schema(), &r4.schema()),
            Err(FrameError::TypeMismatch(_))
        ));
    }

    // ---- random tables against a naive nested-loop join ----

    use crate::frame::test_rng::Rng;

    type Key = (Option<i64>, Option<&'static str>);

    fn random_keys(rng: &mut Rng, n: usize, range: u64) -> Vec<Key> {
        const WORDS: [&str; 4] = ["p", "qq", "", "rrr"];
        (0..n)
            .map(|_| {
                let k1 = match rng.next() % (range + 1) {
                    0 => None,
                    v => Some(v as i64 - 3),
                };
                let k2 = match rng.next() % 5 {
                    4 => None,
                    v => Some(WORDS[v as usize]),
                };
                (k1, k2)
            })
            .collect()
    }

    /// A table with key columns k1 (Int64 or Int32), k2 (Utf8 or LargeUtf8) and row ids `id`.
    fn keyed_table(keys: &[Key], id: &str, narrow: bool) -> RecordBatch {
        let k1: ArrayRef = if narrow {
            Arc::new(
                keys.iter()
                    .map(|k| k.0.map(|v| v as i32))
                    .collect::<Int32Array>(),
            )
        } else {
            Arc::new(keys.iter().map(|k| k.0).collect::<Int64Array>())
        };
        let k2: ArrayRef = if narrow {
            Arc::new(keys.iter().map(|k| k.1).collect::<LargeStringArray>())
        } else {
            Arc::new(keys.iter().map(|k| k.1).collect::<StringArray>())
        };
        let ids = ints(&(0..keys.len() as i64).map(Some).collect::<Vec<_>>());
        table(vec![("k1", k1), ("k2", k2), (id, ids)])
    }

    /// (left row, right row) pairs in the documented order.
    fn naive(l: &[Key], r: &[Key], on: &[usize], how: JoinHow) -> Vec<(Option<i64>, Option<i64>)> {
        let eq = |a: &Key, b: &Key| {
            on.iter()
                .all(|&c| if c == 0 { a.0 == b.0 } else { a.1 == b.1 })
        };
        let mut out = Vec::new();
        let (outer, inner, flip) = match how {
            JoinHow::Right => (r, l, true),
            _ => (l, r, false),
        };
        for (i, a) in outer.iter().enumerate() {
            let mut any = false;
            for (j, b) in inner.iter().enumerate() {
                if eq(a, b) {
                    any = true;
                    out.push((Some(i as i64), Some(j as i64)));
                }
            }
            if !any && how != JoinHow::Inner {
                out.push((Some(i as i64), None));
            }
        }
        if flip {
            out = out.into_iter().map(|(a, b)| (b, a)).collect();
        }
        if how == JoinHow::Outer {
            for (j, b) in r.iter().enumerate() {
                if !l.iter().any(|a| eq(a, b)) {
                    out.push((None, Some(j as i64)));
                }
            }
        }
        out
    }

    fn id_pairs(b: &RecordBatch) -> Vec<(Option<i64>, Option<i64>)> {
        let get = |n: &str| {
            let c = b.column_by_name(n).unwrap();
            c.as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .iter()
                .collect::<Vec<_>>()
        };
        get("lid").into_iter().zip(get("rid")).collect()
    }

    /// Shared key columns show the left key, or the right one where the left row is missing.
    fn check_keys(out: &RecordBatch, l: &RecordBatch, r: &RecordBatch, on: &[&str]) {
        for (row, (li, ri)) in id_pairs(out).into_iter().enumerate() {
            for k in on {
                let got = fmt(out.column_by_name(k).unwrap(), row);
                let want = match (li, ri) {
                    (Some(i), _) => fmt(l.column_by_name(k).unwrap(), i as usize),
                    (None, Some(j)) => fmt(r.column_by_name(k).unwrap(), j as usize),
                    (None, None) => panic!("row {row} has no side"),
                };
                assert_eq!(got, want);
            }
        }
    }

    const ALL_HOWS: [JoinHow; 4] = [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::Right,
        JoinHow::Outer,
    ];

    #[test]
    fn random_tables_match_nested_loops() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for round in 0..12 {
            let (nl, nr) = (rng.next() % 120, rng.next() % 90);
            let range = [2, 6, 40][round % 3];
            let lk = random_keys(&mut rng, nl as usize, range);
            let rk = random_keys(&mut rng, nr as usize, range);
            let left = keyed_table(&lk, "lid", false);
            let right = keyed_table(&rk, "rid", round % 2 == 1);
            for (on, cols) in [
                (&[0][..], &["k1"][..]),
                (&[1], &["k2"]),
                (&[0, 1], &["k1", "k2"]),
            ] {
                for how in ALL_HOWS {
                    let out = hash_join(&spec(cols, cols, how), &left, &right).unwrap();
                    assert_eq!(
                        id_pairs(&out),
                        naive(&lk, &rk, on, how),
                        "{how:?} on {cols:?}"
                    );
                    check_keys(&out, &left, &right, cols);
                }
            }
        }
    }

    #[test]
    fn unique_build_side_matches_nested_loops() {
        let mut rng = Rng(99);
        let lk = random_keys(&mut rng, 300, 30);
        let rk: Vec<Key> = (-3..30)
            .map(|v| (Some(v), Some("p")))
            .chain([(None, None)])
            .collect();
        let (left, right) = (
            keyed_table(&lk, "lid", false),
            keyed_table(&rk, "rid", false),
        );
        for how in ALL_HOWS {
            let out = hash_join(&spec(&["k1"], &["k1"], how), &left, &right).unwrap();
            assert_eq!(id_pairs(&out), naive(&lk, &rk, &[0], how), "{how:?}");
            check_keys(&out, &left, &right, &["k1"]);
        }
    }

    #[test]
    fn partitioned_join_equals_whole_join() {
        let mut rng = Rng(0xfeed_beef);
        let lk = random_keys(&mut rng, 400, 25);
        let rk = random_keys(&mut rng, 300, 25);
        let left = keyed_table(&lk, "lid", false);
        let right = keyed_table(&rk, "rid", true);
        let on = names(&["k1", "k2"]);
        for how in ALL_HOWS {
            let s = JoinSpec::new(on.clone(), on.clone(), how);
            let mut whole = id_pairs(&hash_join(&s, &left, &right).unwrap());
            whole.sort();
            for n in [1, 2, 5] {
                let lp = hash_partition(&left, &on, n).unwrap();
                let rp = hash_partition(&right, &on, n).unwrap();
                let mut parts: Vec<_> = lp
                    .iter()
                    .zip(&rp)
                    .flat_map(|(l, r)| id_pairs(&hash_join(&s, l, r).unwrap()))
                    .collect();
                parts.sort();
                assert_eq!(parts, whole, "{how:?} in {n} parts");
            }
        }
    }
}
