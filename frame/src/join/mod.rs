//! Hash joins of two tables on key columns, with pandas `merge` semantics.
//!
//! The build side (the right table; the left one for a right join, and for an inner join whose
//! right has more than twice the left's rows) is encoded into dense key
//! ids with a [`KeyEncoder`], its rows are listed per id (counts, prefix sum, row indices: a CSR
//! list), and the other side probes it with [`KeyEncoder::lookup`]. The result is two row index
//! arrays, one per side (null where that side has no row), gathered with `take`. A device
//! may match the rows and gather the columns itself instead ([`hash_join_with`]). A side
//! may come as several tables (a shuffle's parts, [`hash_join_tables`]): only its key
//! columns are concatenated, its output columns gathered from the tables themselves. A
//! side may also come hashed already ([`HashedSide`], [`hash_join_inputs`]): the small
//! side of a broadcast join is hashed once and probed by the task of every chunk of the
//! other side.
//!
//! Semi, anti and mark joins ([`JoinHow::LeftSemi`], [`JoinHow::LeftAnti`],
//! [`JoinHow::LeftMark`]) only ask whether a left row's key occurs on the right: the right
//! keys go into a key set, each left row is looked up once, and the output is the left rows
//! (kept at most once, in left order) without any right column (see `existence`).
//!
//! Like pandas, a null key equals another null key: rows with null keys join with each other,
//! and a left row with a null key is kept by a semi join (and marked true) where the right
//! side has a null key too. SQL's `IN` and `EXISTS` never match a null key: filter the null
//! keys out first for those. Key columns of different encodings of one class (`schema::key_class`) compare by value:
//! `Utf8`, `LargeUtf8`, `Utf8View` and dictionary strings alike, and integers of any width.
//!
//! [`KeyEncoder`]: super::keys::KeyEncoder
//! [`KeyEncoder::lookup`]: super::keys::KeyEncoder::lookup

use super::error::{FrameError, FrameResult};
use super::schema::{column_index, key_class};
use arrow::array::{Array, ArrayRef, BooleanArray, DictionaryArray, Int8Array, StringArray};
use arrow::buffer::NullBuffer;
use arrow::compute::kernels::zip::zip;
use arrow::compute::{cast, cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field, Int8Type, Schema};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

mod hashed;
#[cfg(test)]
mod hashed_tests;
mod matching;
mod tables;
#[cfg(test)]
mod tests;

use hashed::Hashed;
use matching::{match_rows, Index, Pairs, RowIndex};
use tables::{Gather, Tables};

pub use hashed::HashedSide;

pub use existence::distinct_keys;

mod existence;
#[cfg(test)]
mod existence_tests;

/// An inner join builds on its left side when the right has more than this many times its
/// rows (its output is put back in left order).
const BUILD_LEFT_RATIO: usize = 2;

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
    /// Each left row once where its key occurs on the right, left columns only; left row
    /// order (a SQL `EXISTS` / `IN` semi join, but null keys match each other).
    LeftSemi,
    /// Each left row once where its key does not occur on the right, left columns only;
    /// left row order (`NOT EXISTS`; null keys match each other, so a null left key is
    /// dropped where the right has a null key).
    LeftAnti,
    /// Every left row once, left columns only, and a non-null boolean column named by the
    /// spec's `indicator` saying whether its key occurs on the right; left row order (what
    /// pandas' `isin` with another column computes).
    LeftMark,
}

impl JoinHow {
    /// Whether the join only asks whether each left row's key occurs on the right (semi,
    /// anti and mark joins): its output has the left columns only, each left row at most
    /// once, and the right side counts only through its distinct keys.
    pub fn is_existence(self) -> bool {
        matches!(
            self,
            JoinHow::LeftSemi | JoinHow::LeftAnti | JoinHow::LeftMark
        )
    }
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
    /// A column of this name added last. For [`JoinHow::LeftMark`] (where it is required)
    /// the boolean mark; for inner, left, right and outer joins pandas' `indicator`: a
    /// dictionary of strings (pandas' categorical), `"left_only"`, `"right_only"` or
    /// `"both"`, with those three values in that order as its dictionary. Semi and anti
    /// joins take none.
    #[serde(default)]
    pub indicator: Option<String>,
}

/// Where a join's output column comes from ([`JoinSpec::output_origins`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColumnOrigin {
    /// The left column of this name: on every output row with a left row, its value.
    Left(String),
    /// The right column of this name: on every output row with a right row, its value.
    Right(String),
    /// A key shared by name, from whichever side has the row (right and outer joins).
    Either,
    /// Made by the join: pandas' indicator or a mark join's mark.
    Made,
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
    /// pandas' `_merge`: where the output row has a left row, a right row, or both.
    Indicator,
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
            indicator: None,
        }
    }

    /// The result's schema; checks that key columns exist (ColumnNotFound), that left_on and right_on
    /// have the same length ≥ 1 (InvalidArgument) and that paired key types are of the same class
    /// (`schema::key_class`; else TypeMismatch naming both columns and both types).
    ///
    /// Also InvalidArgument when the suffixes leave two output columns with one name, when
    /// the indicator's name is taken by another output column, when a mark join has no
    /// indicator name and when a semi or anti join has one.
    pub fn output_schema(&self, left: &Schema, right: &Schema) -> FrameResult<Schema> {
        Ok(self.plan(left, right)?.schema)
    }

    /// Each output column's name and where its values come from, in output order. Errors
    /// as [`JoinSpec::output_schema`].
    pub fn output_origins(
        &self,
        left: &Schema,
        right: &Schema,
    ) -> FrameResult<Vec<(String, ColumnOrigin)>> {
        let plan = self.plan(left, right)?;
        let origin = |source: Option<&Source>| match source {
            Some(&Source::Left(i)) => ColumnOrigin::Left(left.field(i).name().clone()),
            Some(&Source::Right(j)) => ColumnOrigin::Right(right.field(j).name().clone()),
            Some(Source::Coalesce(..)) => ColumnOrigin::Either,
            // The indicator, and a mark join's mark (which has no source).
            Some(Source::Indicator) | None => ColumnOrigin::Made,
        };
        Ok(plan
            .schema
            .fields()
            .iter()
            .enumerate()
            .map(|(k, f)| (f.name().clone(), origin(plan.sources.get(k))))
            .collect())
    }

    /// The columns of each side (in their side's order) that a join whose output columns
    /// named in `wanted` are read needs: the keys, the columns those outputs are made of,
    /// and both copies of a name on both sides where either copy is wanted (dropping one
    /// would take the suffix off the other). Narrowing the sides to these leaves the wanted
    /// outputs as they were. Errors as [`JoinSpec::output_schema`].
    pub fn input_columns(
        &self,
        left: &Schema,
        right: &Schema,
        wanted: &HashSet<String>,
    ) -> FrameResult<(Vec<String>, Vec<String>)> {
        let plan = self.plan(left, right)?;
        let mut l: HashSet<usize> = plan.left_keys.iter().copied().collect();
        let mut r: HashSet<usize> = plan.right_keys.iter().copied().collect();
        for (source, field) in plan.sources.iter().zip(plan.schema.fields()) {
            if !wanted.contains(field.name()) {
                continue;
            }
            match *source {
                Source::Left(i) => l.insert(i),
                Source::Right(j) => r.insert(j),
                Source::Coalesce(i, j) => l.insert(i) | r.insert(j),
                Source::Indicator => false,
            };
        }
        // Names shown with a suffix: the right columns kept as their own, named as a left one.
        for source in &plan.sources {
            let Source::Right(j) = *source else { continue };
            if let Ok(i) = left.index_of(right.field(j).name()) {
                if l.contains(&i) || r.contains(&j) {
                    l.insert(i);
                    r.insert(j);
                }
            }
        }
        let names = |schema: &Schema, kept: &HashSet<usize>| {
            (0..schema.fields().len())
                .filter(|i| kept.contains(i))
                .map(|i| schema.field(i).name().clone())
                .collect()
        };
        Ok((names(left, &l), names(right, &r)))
    }

    fn plan(&self, left: &Schema, right: &Schema) -> FrameResult<Plan> {
        let (left_keys, right_keys) = self.key_indices(left, right)?;
        if self.how.is_existence() {
            return existence::plan(self, left, left_keys, right_keys);
        }
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
        if let Some(name) = &self.indicator {
            check_indicator_name(name, &fields)?;
            fields.push(Field::new(name, indicator_type(), false));
            sources.push(Source::Indicator);
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

/// InvalidArgument when the indicator column `name` would take the name of another output
/// column.
fn check_indicator_name(name: &str, fields: &[Field]) -> FrameResult<()> {
    match fields.iter().any(|f| f.name() == name) {
        true => Err(FrameError::InvalidArgument(format!(
            "the join already has a column {name:?}: name the indicator column otherwise"
        ))),
        false => Ok(()),
    }
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

/// The table a device gathers a column of: the probe side is the left table, the build
/// side the right one (devices match only inner and left joins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchSide {
    /// The left table.
    Probe,
    /// The right table.
    Build,
}

/// A device's [`Matches`], kept where the device computed them.
pub trait JoinMatches<E> {
    /// The output's row count.
    fn len(&self) -> usize;

    /// Whether the join has no output rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The output rows' values of `col`, a column of the `side` table, gathered where the
    /// matches are (null where a left join's row has no build row); `None` leaves the
    /// column to the CPU.
    fn gather(&self, side: MatchSide, col: &ArrayRef) -> Result<Option<ArrayRef>, E>;

    /// The matches, on the host.
    fn into_pairs(self: Box<Self>) -> Result<Matches, E>;
}

/// Matches already on the host: every column is gathered by the CPU.
impl<E> JoinMatches<E> for Matches {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn gather(&self, _side: MatchSide, _col: &ArrayRef) -> Result<Option<ArrayRef>, E> {
        Ok(None)
    }

    fn into_pairs(self: Box<Self>) -> Result<Matches, E> {
        Ok(*self)
    }
}

/// A device's matcher of build keys against probe keys (`keep_unmatched`: a left join's
/// probe rows without a match are kept); `None` leaves the matching to the CPU.
pub type MatchFn<'a, E> =
    &'a dyn Fn(&[ArrayRef], &[ArrayRef], bool) -> Result<Option<Box<dyn JoinMatches<E> + 'a>>, E>;

/// [`hash_join`], with inner and left joins' rows matched by `matcher` where it takes
/// them (keys without nulls, none of them cast into unmatchable values), and their columns
/// gathered by it where it can. Semi, anti and mark joins never reach `matcher`: the CPU
/// computes them (a device has no kernel for them).
pub fn hash_join_with<E: From<FrameError>>(
    spec: &JoinSpec,
    left: &RecordBatch,
    right: &RecordBatch,
    matcher: MatchFn<'_, E>,
) -> Result<RecordBatch, E> {
    hash_join_tables(
        spec,
        std::slice::from_ref(left),
        std::slice::from_ref(right),
        matcher,
    )
}

/// [`hash_join_with`] of the left table made of `left`'s tables and the right one made of
/// `right`'s (each at least one table, all of one schema), as though each were
/// concatenated first. Only the key columns are: an inner or left join on the CPU gathers
/// its output straight from the tables, never copying the rows it drops.
pub fn hash_join_tables<E: From<FrameError>>(
    spec: &JoinSpec,
    left: &[RecordBatch],
    right: &[RecordBatch],
    matcher: MatchFn<'_, E>,
) -> Result<RecordBatch, E> {
    hash_join_inputs(
        spec,
        JoinInput::Tables(left),
        JoinInput::Tables(right),
        matcher,
    )
}

/// One side of a join: its tables, or a side hashed already.
#[derive(Clone, Copy, Debug)]
pub enum JoinInput<'a> {
    /// Tables of one schema (at least one), joined as though concatenated.
    Tables(&'a [RecordBatch]),
    /// A side hashed on the join's keys: probed, not hashed again, where the join can
    /// (the hashed right side of an inner, left, semi, anti or mark join, the hashed left
    /// side of an inner join: see [`HashedSide`]); its table otherwise.
    Hashed(&'a HashedSide),
}

impl<'a> JoinInput<'a> {
    fn tables(self) -> FrameResult<Tables<'a>> {
        match self {
            JoinInput::Tables(t) => Tables::new(t),
            JoinInput::Hashed(h) => Tables::new(std::slice::from_ref(h.table())),
        }
    }
}

/// [`hash_join_tables`] of sides given as tables or hashed ([`JoinInput`]). An inner join
/// probing its hashed left side gives, for each row of the left, its matches in right
/// order, as one built on its left side always does.
pub fn hash_join_inputs<E: From<FrameError>>(
    spec: &JoinSpec,
    left_input: JoinInput<'_>,
    right_input: JoinInput<'_>,
    matcher: MatchFn<'_, E>,
) -> Result<RecordBatch, E> {
    let (left, right) = (left_input.tables()?, right_input.tables()?);
    let plan = spec.plan(left.schema(), right.schema())?;
    let hashed: Option<(&Index, Hashed)> = match (left_input, right_input) {
        (JoinInput::Hashed(h), JoinInput::Tables(_)) => h
            .index_for(spec, &plan, Hashed::Left, right.schema())
            .map(|ix| (ix, Hashed::Left)),
        (_, JoinInput::Hashed(h)) => h
            .index_for(spec, &plan, Hashed::Right, left.schema())
            .map(|ix| (ix, Hashed::Right)),
        _ => None,
    };
    let (lside, rside) = key_sides(&plan, &left, &right)?;
    let plain = |s: &Side| s.unmatchable.is_none() && s.keys.iter().all(|k| k.null_count() == 0);
    let device = match spec.how {
        JoinHow::Inner | JoinHow::Left if plain(&lside) && plain(&rside) => {
            matcher(&rside.keys, &lside.keys, spec.how == JoinHow::Left)?
        }
        _ => None,
    };
    let (len, columns) = match device {
        Some(m) => {
            let (left, right) = (left.concat()?, right.concat()?);
            (m.len(), device_columns(&plan, &left, &right, m)?)
        }
        None => {
            let (left_rows, right_rows) = match (hashed, spec.how) {
                (hashed, how @ (JoinHow::LeftSemi | JoinHow::LeftAnti | JoinHow::LeftMark)) => {
                    let right_index = hashed.filter(|(_, side)| *side == Hashed::Right);
                    let (left, index) = (left.concat()?, right_index.map(|(ix, _)| ix));
                    return Ok(existence::join(how, plan, &left, &lside, &rside, index)?);
                }
                (Some((index, Hashed::Right)), how) => {
                    index.probe(&lside, how == JoinHow::Left)?.into_sides()
                }
                (Some((index, Hashed::Left)), _) => index.probe(&rside, false)?.in_build_order(),
                // The smaller side is built (a hash table that stays in cache, probed by
                // the larger), the output still in left order.
                (None, JoinHow::Inner) if rside.rows > BUILD_LEFT_RATIO * lside.rows => {
                    match_rows(&lside, &rside, false, false)?.in_build_order()
                }
                (None, JoinHow::Inner) => match_rows(&rside, &lside, false, false)?.into_sides(),
                (None, JoinHow::Left) => match_rows(&rside, &lside, true, false)?.into_sides(),
                (None, JoinHow::Right) => match_rows(&lside, &rside, true, false)?.swap(),
                (None, JoinHow::Outer) => match_rows(&rside, &lside, true, true)?.into_sides(),
            };
            let (l, r) = (
                Gather::new(&left, &left_rows),
                Gather::new(&right, &right_rows),
            );
            let columns = plan
                .sources
                .iter()
                .map(|s| cpu_column(*s, &l, &r))
                .collect::<FrameResult<Vec<_>>>()?;
            (left_rows.len(), columns)
        }
    };
    let options = RecordBatchOptions::new().with_row_count(Some(len));
    let batch = RecordBatch::try_new_with_options(Arc::new(plan.schema), columns, &options);
    Ok(batch.map_err(FrameError::from)?)
}

/// The output columns of a device's matches: gathered by the device where it can, the
/// others by the CPU from the matches brought to the host.
fn device_columns<E: From<FrameError>>(
    plan: &Plan,
    left: &RecordBatch,
    right: &RecordBatch,
    matches: Box<dyn JoinMatches<E> + '_>,
) -> Result<Vec<ArrayRef>, E> {
    let gathered = plan
        .sources
        .iter()
        .map(|s| match *s {
            Source::Left(i) => matches.gather(MatchSide::Probe, left.column(i)),
            Source::Right(j) => matches.gather(MatchSide::Build, right.column(j)),
            Source::Coalesce(..) | Source::Indicator => Ok(None),
        })
        .collect::<Result<Vec<_>, E>>()?;
    if gathered.iter().all(Option::is_some) {
        return Ok(gathered.into_iter().flatten().collect());
    }
    let (probe, build) = matches.into_pairs()?;
    let (left_rows, right_rows) = Pairs {
        probe: Some(probe),
        build,
        probe_rows: left.num_rows(),
        build_rows: right.num_rows(),
    }
    .into_sides();
    let (left, right) = (
        Tables::new(std::slice::from_ref(left))?,
        Tables::new(std::slice::from_ref(right))?,
    );
    let (l, r) = (
        Gather::new(&left, &left_rows),
        Gather::new(&right, &right_rows),
    );
    Ok(plan
        .sources
        .iter()
        .zip(gathered)
        .map(|(s, col)| match col {
            Some(col) => Ok(col),
            None => cpu_column(*s, &l, &r),
        })
        .collect::<FrameResult<Vec<_>>>()?)
}

/// Output column `source`, gathered by the CPU.
fn cpu_column(source: Source, left: &Gather, right: &Gather) -> FrameResult<ArrayRef> {
    match source {
        Source::Left(i) => left.column(i),
        Source::Right(j) => right.column(j),
        Source::Coalesce(i, j) => coalesce_key(i, j, left, right),
        Source::Indicator => indicator(left.rows(), right.rows()),
    }
}

/// The values of pandas' `_merge`, in its categories' order.
const INDICATOR_VALUES: [&str; 3] = ["left_only", "right_only", "both"];

/// The type of pandas' `_merge` column: a dictionary of [`INDICATOR_VALUES`].
fn indicator_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))
}

/// pandas' `_merge` of each output row: `left_only`, `right_only` or `both`.
fn indicator(left_rows: &RowIndex, right_rows: &RowIndex) -> FrameResult<ArrayRef> {
    let (l, r) = (left_rows.present(), right_rows.present());
    let has = |side: Option<&NullBuffer>, row: usize| side.is_none_or(|p| p.is_valid(row));
    let codes: Int8Array = (0..left_rows.len())
        .map(|row| match (has(l, row), has(r, row)) {
            (true, false) => 0,
            (false, _) => 1,
            (true, true) => 2,
        })
        .collect();
    let values = Arc::new(StringArray::from(INDICATOR_VALUES.to_vec()));
    Ok(Arc::new(DictionaryArray::<Int8Type>::try_new(
        codes, values,
    )?))
}

/// The key columns of one side (a UInt64 key paired with a signed one cast to Int64).
struct Side {
    keys: Vec<ArrayRef>,
    rows: usize,
    /// Rows whose key a cast could not represent: they equal no key on the other side.
    unmatchable: Option<Vec<bool>>,
}

/// InvalidArgument where the `what` side of a join has more rows than row numbers of
/// `u32` can give.
fn check_rows(what: &str, rows: usize) -> FrameResult<()> {
    match u32::try_from(rows) {
        Ok(_) => Ok(()),
        Err(_) => Err(FrameError::InvalidArgument(format!(
            "hash_join supports at most {} rows per side, the {what} side has {rows}",
            u32::MAX
        ))),
    }
}

fn key_sides(plan: &Plan, left: &Tables, right: &Tables) -> FrameResult<(Side, Side)> {
    check_rows("left", left.rows())?;
    check_rows("right", right.rows())?;
    let mut lside = Side::new(left.rows());
    let mut rside = Side::new(right.rows());
    for (&i, &j) in plan.left_keys.iter().zip(&plan.right_keys) {
        let (l, r) = (left.column(i)?, right.column(j)?);
        lside.push(&l, r.data_type())?;
        rside.push(&r, l.data_type())?;
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

/// A key shared by name: the left value, or the right value (cast to the left type) where the
/// output row has no left row.
fn coalesce_key(i: usize, j: usize, left: &Gather, right: &Gather) -> FrameResult<ArrayRef> {
    let l = left.column(i)?;
    let Some(present) = left.rows().present() else {
        return Ok(l);
    };
    let mut r = right.column(j)?;
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
