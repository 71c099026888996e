//! Semi, anti and mark joins: whether each left row's key occurs on the right.
//!
//! The right keys are encoded into a [`KeyEncoder`] (the set of their distinct tuples), each
//! left row's key is looked up once, and the left rows are filtered (semi, anti) or marked
//! (mark). No right row is gathered, so a right key held by many rows costs its rows' encoding
//! and nothing in the output. [`distinct_keys`] reduces a right side to its distinct keys
//! before it is broadcast to every left chunk.

use super::matching::Index;
use super::{check_indicator_name, names_to_indices, JoinHow, JoinSpec, Plan, Side, Source};
use crate::error::{FrameError, FrameResult};
use crate::keys::KeyEncoder;
use crate::schema::column_index;
use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat, take, FilterBuilder};
use arrow::datatypes::{DataType, Field, Schema};
use std::sync::Arc;

/// The columns of a semi, anti or mark join: the left ones, and a mark join's boolean mark.
pub(super) fn plan(
    spec: &JoinSpec,
    left: &Schema,
    left_keys: Vec<usize>,
    right_keys: Vec<usize>,
) -> FrameResult<Plan> {
    let mut fields: Vec<Field> = left.fields().iter().map(|f| f.as_ref().clone()).collect();
    match (spec.how, &spec.indicator) {
        (JoinHow::LeftMark, Some(name)) => {
            check_indicator_name(name, &fields)?;
            fields.push(Field::new(name, DataType::Boolean, false));
        }
        (JoinHow::LeftMark, None) => {
            return Err(FrameError::InvalidArgument(
                "a mark join needs a name for its mark column (the spec's indicator)".into(),
            ))
        }
        (how, Some(name)) => {
            return Err(FrameError::InvalidArgument(format!(
            "a {how:?} join takes no indicator column ({name:?}): its rows all come from the left"
        )))
        }
        (_, None) => {}
    }
    Ok(Plan {
        left_keys,
        right_keys,
        sources: (0..left.fields().len()).map(Source::Left).collect(),
        schema: Schema::new(fields),
    })
}

/// The semi, anti or mark join (`how`) of `left`, whose keys are `lside`, with the right
/// keys `rside`, looked up in `hashed` where the right side came hashed already.
pub(super) fn join(
    how: JoinHow,
    plan: Plan,
    left: &RecordBatch,
    lside: &Side,
    rside: &Side,
    hashed: Option<&Index>,
) -> FrameResult<RecordBatch> {
    let found = match hashed {
        Some(index) => found_in(index, lside)?,
        None => key_found(rside, lside)?,
    };
    let mut columns = plan
        .sources
        .iter()
        .map(|s| match *s {
            Source::Left(i) => Ok(Arc::clone(left.column(i))),
            other => Err(FrameError::InvalidArgument(format!(
                "a {how:?} join reads left columns only, not {other:?}"
            ))),
        })
        .collect::<FrameResult<Vec<_>>>()?;
    let rows = match how {
        JoinHow::LeftMark => {
            columns.push(Arc::new(BooleanArray::new(found, None)));
            left.num_rows()
        }
        JoinHow::LeftSemi | JoinHow::LeftAnti => {
            let keep = match how {
                JoinHow::LeftAnti => BooleanArray::new(!&found, None),
                _ => BooleanArray::new(found, None),
            };
            let rows = keep.true_count();
            if rows < left.num_rows() {
                let predicate = FilterBuilder::new(&keep).optimize().build();
                columns = columns
                    .iter()
                    .map(|c| predicate.filter(c.as_ref()))
                    .collect::<Result<_, _>>()?;
            }
            rows
        }
        other => {
            return Err(FrameError::InvalidArgument(format!(
                "{other:?} is not a semi, anti or mark join"
            )))
        }
    };
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(plan.schema),
        columns,
        &options,
    )?)
}

/// Whether each probe row's key is a key of the hashed side `index` (built from a side
/// without unmatchable rows); as [`key_found`].
fn found_in(index: &Index, probe: &Side) -> FrameResult<BooleanBuffer> {
    let ids = index.lookup(probe)?;
    let lost = |row: usize| {
        probe
            .unmatchable
            .as_ref()
            .is_some_and(|u| u.get(row) != Some(&false))
    };
    Ok(BooleanBuffer::collect_bool(probe.rows, |row| {
        ids[row].is_some() && !lost(row)
    }))
}

/// Whether each probe row's key equals the key of some build row (a null key equals a null
/// key; a row whose key a cast could not represent equals nothing).
fn key_found(build: &Side, probe: &Side) -> FrameResult<BooleanBuffer> {
    let types: Vec<DataType> = build.keys.iter().map(|k| k.data_type().clone()).collect();
    let mut encoder = KeyEncoder::new(&types)?;
    let build_ids = encoder.encode(&build.keys)?;
    let probe_ids = encoder.lookup(&probe.keys)?;
    let lengths_ok = |u: &Option<Vec<bool>>, rows| u.as_ref().is_none_or(|u| u.len() == rows);
    if build_ids.len() != build.rows
        || probe_ids.len() != probe.rows
        || !lengths_ok(&build.unmatchable, build.rows)
        || !lengths_ok(&probe.unmatchable, probe.rows)
    {
        return Err(FrameError::InvalidArgument(format!(
            "the key encoder returned {} and {} ids for {} and {} rows",
            build_ids.len(),
            probe_ids.len(),
            build.rows,
            probe.rows
        )));
    }
    // Where some build rows are unmatchable, the ids that a matchable row holds.
    let held: Option<Vec<bool>> = build.unmatchable.as_ref().map(|lost| {
        let mut held = vec![false; encoder.len()];
        for (&id, &lost) in build_ids.iter().zip(lost) {
            if !lost {
                held[id as usize] = true;
            }
        }
        held
    });
    let lost = |row: usize| probe.unmatchable.as_ref().is_some_and(|u| u[row]);
    Ok(BooleanBuffer::collect_bool(probe.rows, |row| {
        let id = probe_ids[row].filter(|_| !lost(row));
        id.is_some_and(|id| held.as_ref().is_none_or(|h| h[id as usize]))
    }))
}

/// The distinct tuples of the `keys` columns of `tables` (the chunks of one frame), each
/// once, from the row where it first occurs; a null is a value like any other. This is the
/// right side a semi, anti or mark join needs (columns `keys` only, with their types).
///
/// ColumnNotFound for a missing key; InvalidArgument for no keys or no tables, or more than
/// `u32::MAX` rows; TypeMismatch where the tables give a key different types.
pub fn distinct_keys(keys: &[String], tables: &[RecordBatch]) -> FrameResult<RecordBatch> {
    let first = tables.first().ok_or_else(|| {
        FrameError::InvalidArgument("distinct_keys needs at least one table".into())
    })?;
    let schema = first.schema();
    let fields: Vec<Field> = names_to_indices(&schema, keys)?
        .into_iter()
        .map(|i| schema.field(i).clone())
        .collect();
    let columns = keys
        .iter()
        .map(|k| {
            let parts = tables
                .iter()
                .map(|t| Ok(Arc::clone(t.column(column_index(t.schema_ref(), k)?))))
                .collect::<FrameResult<Vec<ArrayRef>>>()?;
            match &parts[..] {
                [one] => Ok(Arc::clone(one)),
                _ => {
                    let parts: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
                    concat(&parts).map_err(|e| {
                        FrameError::TypeMismatch(format!("key {k:?} differs between chunks: {e}"))
                    })
                }
            }
        })
        .collect::<FrameResult<Vec<ArrayRef>>>()?;
    let fields: Vec<Field> = fields
        .into_iter()
        .zip(&columns)
        .map(|(f, c)| {
            let nullable = f.is_nullable() || c.null_count() > 0;
            f.with_nullable(nullable)
        })
        .collect();
    let rows = columns.first().map_or(0, |c| c.len());
    if u32::try_from(rows).is_err() {
        return Err(FrameError::InvalidArgument(format!(
            "distinct_keys supports at most {} rows, got {rows}",
            u32::MAX
        )));
    }
    let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
    let mut encoder = KeyEncoder::new(&types)?;
    let ids = encoder.encode(&columns)?;
    // Ids are given in order of first appearance: a row is its key's first when its id is
    // the next one.
    let mut next = 0u32;
    let firsts: Vec<u32> = (0u32..)
        .zip(&ids)
        .filter_map(|(row, &id)| {
            let first = id == next;
            next += u32::from(first);
            first.then_some(row)
        })
        .collect();
    let columns = match firsts.len() == rows {
        true => columns,
        false => {
            let firsts = UInt32Array::from(firsts);
            columns
                .iter()
                .map(|c| take(c.as_ref(), &firsts, None))
                .collect::<Result<_, _>>()?
        }
    };
    let options = RecordBatchOptions::new().with_row_count(Some(next as usize));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &options,
    )?)
}
