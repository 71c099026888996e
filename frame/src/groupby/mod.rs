//! Groupby aggregation in three steps: `partial` per chunk, `merge` of partial tables, and
//! `finalize` of a merged table (pandas' `df.groupby(keys).agg(...)`; with zero keys, a column
//! reduction such as `df.sum()`).
//!
//! A partial table holds the key columns, then the state columns of each aggregation:
//!
//! | func          | state columns (named `{output}.{state}`)          |
//! |---------------|---------------------------------------------------|
//! | sum           | `sum`: Int64 (integer/boolean input), Float64, or Decimal128(38, s) (decimal input of scale s) |
//! | mean          | `sum`: Float64 (Decimal128(38, s) for decimals), `count`: Int64 |
//! | count, size   | `count` / `size`: Int64                            |
//! | var, std      | `count`: Int64, `mean`, `m2`: Float64 (Chan et al.) |
//! | min, max      | the extreme value, input type (null if none)       |
//! | first, last   | the first / last non-null value, input type        |
//! | nunique       | `distinct`: List of the distinct values            |
//!
//! Semantics follow pandas' defaults: rows with a null key are dropped, groups come out in
//! order of first appearance, nulls (and float NaNs, which pandas treats as missing) are
//! skipped. Float sums are plain left-to-right sums per group within a chunk, then summed
//! across partials in chunk order (results match pandas to a relative tolerance, not bit for
//! bit). Group ids come from [`KeyEncoder`]; accumulators are typed loops over value slices.
//!
//! Decimals (up to 38 digits): `sum` is exact, a `Decimal128(38, s)` as DuckDB's and Arrow
//! SQL's (a sum past 38 digits is a [`FrameError::Overflow`]); `mean` is `Float64` (the
//! exact sum divided by the count; pandas' mean of `decimal.Decimal` objects is a
//! `Decimal`), `var` and `std` `Float64` over the values as floats; `min`, `max`, `first`,
//! `last` keep the decimal type; decimals are keys (and `nunique` values) like any other.

use super::error::{FrameError, FrameResult};
use super::keys::{with_primitive_type, KeyEncoder};
use super::schema::{column_index, is_decimal, is_string};
use arrow::array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, GenericStringArray,
    LargeStringArray, ListArray, OffsetSizeTrait, PrimitiveArray, UInt32Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::compute::{cast, filter_record_batch, interleave, take};
use arrow::datatypes::{
    ArrowNativeType, DataType, Field, FieldRef, Float64Type, Int64Type, Schema, SchemaRef,
    UInt8Type,
};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use serde::{Deserialize, Serialize};
use std::cell::OnceCell;
use std::collections::HashSet;
use std::sync::Arc;

mod accumulators;
mod decimal;
use accumulators::*;

/// An aggregation function (pandas names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AggFunc {
    /// Sum of the non-null values (0 for none).
    Sum,
    /// Mean of the non-null values (null for none).
    Mean,
    /// Smallest non-null value.
    Min,
    /// Largest non-null value.
    Max,
    /// Number of non-null values.
    Count,
    /// Number of rows, nulls included.
    Size,
    /// Sample standard deviation (ddof = 1).
    Std,
    /// Sample variance (ddof = 1).
    Var,
    /// First non-null value in row order.
    First,
    /// Last non-null value in row order.
    Last,
    /// The value of the group's first row, null or not (pandas' `nth(0)`, Polars'
    /// `first`): taken for every column, it keeps the first row as it is.
    FirstRow,
    /// Number of distinct non-null values.
    NUnique,
}

impl AggFunc {
    /// The pandas name ("sum", "mean", "nunique", ...).
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Sum => "sum",
            AggFunc::Mean => "mean",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Count => "count",
            AggFunc::Size => "size",
            AggFunc::Std => "std",
            AggFunc::Var => "var",
            AggFunc::First => "first",
            AggFunc::FirstRow => "first_row",
            AggFunc::Last => "last",
            AggFunc::NUnique => "nunique",
        }
    }

    /// The names of the state columns of a partial table.
    fn state_names(self) -> &'static [&'static str] {
        match self {
            AggFunc::Sum => &["sum"],
            AggFunc::Mean => &["sum", "count"],
            AggFunc::Min => &["min"],
            AggFunc::Max => &["max"],
            AggFunc::Count => &["count"],
            AggFunc::Size => &["size"],
            AggFunc::Std | AggFunc::Var => &["count", "mean", "m2"],
            AggFunc::First | AggFunc::FirstRow => &["first"],
            AggFunc::Last => &["last"],
            AggFunc::NUnique => &["distinct"],
        }
    }

    /// Whether the result can be null (no value in the group).
    fn nullable(self) -> bool {
        !matches!(
            self,
            AggFunc::Sum | AggFunc::Count | AggFunc::Size | AggFunc::NUnique
        )
    }
}

/// One output column: `func` over input `column` (ignored for Size), named `output`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AggSpec {
    /// The input column.
    pub column: String,
    /// The aggregation.
    pub func: AggFunc,
    /// The output column's name.
    pub output: String,
}

/// Group by the key columns `keys` (possibly none: one global group) and compute `aggs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupBySpec {
    /// The key columns.
    pub keys: Vec<String>,
    /// The aggregations, in output order.
    pub aggs: Vec<AggSpec>,
}

// ---------------------------------------------------------------------------------------------
// Types

/// Integers, Float32/64, booleans and decimals of up to 38 digits: what sum, mean, var and
/// std accept.
fn is_summable(dt: &DataType) -> bool {
    dt.is_integer()
        || matches!(
            dt,
            DataType::Float32 | DataType::Float64 | DataType::Boolean
        )
        || decimal::sum_type(dt).is_some()
}

/// Types with a min and max: numbers, booleans, strings, dates, times, timestamps,
/// durations, decimals.
fn is_orderable(dt: &DataType) -> bool {
    dt == &DataType::Boolean
        || is_string(dt)
        || is_decimal(dt)
        || with_primitive_type!(dt, T => T::DATA_TYPE.is_primitive(), _other => false)
}

fn type_error(func: AggFunc, column: &str, dt: &DataType) -> FrameError {
    FrameError::TypeMismatch(format!(
        "cannot compute {} of column {column:?} of type {dt}",
        func.name()
    ))
}

/// The result type of `func` over a column of type `dt`.
fn output_type(func: AggFunc, column: &str, dt: &DataType) -> FrameResult<DataType> {
    let ok = match func {
        AggFunc::Sum | AggFunc::Mean | AggFunc::Std | AggFunc::Var => is_summable(dt),
        AggFunc::Min | AggFunc::Max => is_orderable(dt),
        AggFunc::NUnique => KeyEncoder::new(std::slice::from_ref(dt)).is_ok(),
        AggFunc::Count | AggFunc::Size | AggFunc::First | AggFunc::Last | AggFunc::FirstRow => true,
    };
    if !ok {
        return Err(type_error(func, column, dt));
    }
    Ok(match func {
        AggFunc::Sum if is_decimal(dt) => decimal::sum_type(dt).unwrap_or(DataType::Null),
        AggFunc::Sum if dt.is_floating() => DataType::Float64,
        AggFunc::Sum | AggFunc::Count | AggFunc::Size | AggFunc::NUnique => DataType::Int64,
        AggFunc::Mean | AggFunc::Std | AggFunc::Var => DataType::Float64,
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last | AggFunc::FirstRow => {
            dt.clone()
        }
    })
}

/// The item field of the lists of nunique's state.
fn list_item(dt: &DataType) -> FieldRef {
    Arc::new(Field::new("item", dt.clone(), true))
}

/// The types of the state columns of `func` over a column of type `dt`.
fn state_types(func: AggFunc, column: &str, dt: &DataType) -> FrameResult<Vec<DataType>> {
    let out = output_type(func, column, dt)?;
    Ok(match func {
        AggFunc::Sum | AggFunc::Count | AggFunc::Size => vec![out],
        AggFunc::Mean => match decimal::sum_type(dt) {
            Some(sum) => vec![sum, DataType::Int64],
            None => vec![DataType::Float64, DataType::Int64],
        },
        AggFunc::Std | AggFunc::Var => vec![DataType::Int64, DataType::Float64, DataType::Float64],
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last | AggFunc::FirstRow => {
            vec![dt.clone()]
        }
        AggFunc::NUnique => vec![DataType::List(list_item(dt))],
    })
}

/// An input type that gives the same state types as the states `types` of `func` (what
/// `merge` builds its accumulators from).
fn input_type_of_states(func: AggFunc, types: &[DataType]) -> FrameResult<DataType> {
    let first = types.first().cloned().unwrap_or(DataType::Null);
    Ok(match (func, first) {
        (
            AggFunc::Sum
            | AggFunc::Min
            | AggFunc::Max
            | AggFunc::First
            | AggFunc::Last
            | AggFunc::FirstRow,
            dt,
        ) => dt,
        (AggFunc::NUnique, DataType::List(item)) => item.data_type().clone(),
        (AggFunc::Mean, dt) if is_decimal(&dt) => dt,
        (AggFunc::NUnique, dt) => {
            return Err(FrameError::TypeMismatch(format!(
                "nunique state of type {dt}, not a list"
            )))
        }
        _ => DataType::Float64,
    })
}

impl GroupBySpec {
    /// The key fields and, per aggregation, its input type.
    fn resolve(&self, input: &Schema) -> FrameResult<(Vec<Field>, Vec<DataType>)> {
        let keys = self
            .keys
            .iter()
            .map(|k| {
                let field = input.field(column_index(input, k)?);
                KeyEncoder::new(std::slice::from_ref(field.data_type()))?;
                Ok(field.clone())
            })
            .collect::<FrameResult<Vec<_>>>()?;
        let inputs = self
            .aggs
            .iter()
            .map(|a| match a.func {
                AggFunc::Size => Ok(DataType::Null),
                _ => Ok(input
                    .field(column_index(input, &a.column)?)
                    .data_type()
                    .clone()),
            })
            .collect::<FrameResult<Vec<_>>>()?;
        let mut names = HashSet::new();
        for name in self.keys.iter().chain(self.aggs.iter().map(|a| &a.output)) {
            if !names.insert(name) {
                return Err(FrameError::InvalidArgument(format!(
                    "duplicate output column {name:?}"
                )));
            }
        }
        Ok((keys, inputs))
    }

    /// The result's schema for an input of schema `input` (checks names and types: ColumnNotFound,
    /// TypeMismatch for sum/mean/std/var of a string column, duplicate output names → InvalidArgument).
    pub fn output_schema(&self, input: &Schema) -> FrameResult<Schema> {
        let (mut fields, inputs) = self.resolve(input)?;
        for (agg, dt) in self.aggs.iter().zip(&inputs) {
            let out = output_type(agg.func, &agg.column, dt)?;
            fields.push(Field::new(&agg.output, out, agg.func.nullable()));
        }
        Ok(Schema::new(fields))
    }

    /// The schema of partial tables.
    pub fn partial_schema(&self, input: &Schema) -> FrameResult<Schema> {
        let (mut fields, inputs) = self.resolve(input)?;
        for (agg, dt) in self.aggs.iter().zip(&inputs) {
            let types = state_types(agg.func, &agg.column, dt)?;
            for (name, t) in agg.func.state_names().iter().zip(types) {
                fields.push(Field::new(format!("{}.{name}", agg.output), t, true));
            }
        }
        Ok(Schema::new(fields))
    }

    /// Checks that `schema` is a partial table's: the keys, then each aggregation's states.
    /// Returns, per aggregation, the range of its state columns.
    fn partial_layout(&self, schema: &Schema) -> FrameResult<Vec<std::ops::Range<usize>>> {
        let mut at = self.keys.len();
        let layout: Vec<_> = self
            .aggs
            .iter()
            .map(|a| {
                let r = at..at + a.func.state_names().len();
                at = r.end;
                r
            })
            .collect();
        if schema.fields().len() != at {
            return Err(FrameError::InvalidArgument(format!(
                "a partial table of {} columns for a groupby of {} keys and {} state columns",
                schema.fields().len(),
                self.keys.len(),
                at - self.keys.len()
            )));
        }
        Ok(layout)
    }
}

// ---------------------------------------------------------------------------------------------
// partial, merge, finalize

/// The rows of `batch` whose key columns are all non-null and not NaN (pandas' dropna),
/// and those rows of the key columns (with the `keys` positions of `batch`).
fn drop_null_keys(
    batch: &RecordBatch,
    keys: &[usize],
) -> FrameResult<(RecordBatch, Vec<ArrayRef>)> {
    let columns: Vec<ArrayRef> = keys.iter().map(|&k| nan_to_null(batch.column(k))).collect();
    let nulls = columns
        .iter()
        .filter_map(|c| c.logical_nulls())
        .fold(None, |acc: Option<NullBuffer>, n| {
            NullBuffer::union(acc.as_ref(), Some(&n))
        });
    let Some(nulls) = nulls.filter(|n| n.null_count() > 0) else {
        return Ok((batch.clone(), columns));
    };
    let keep = BooleanArray::new(nulls.inner().clone(), None);
    let columns = columns
        .iter()
        .map(|c| arrow::compute::filter(c, &keep))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((filter_record_batch(batch, &keep)?, columns))
}

/// Group ids of `n` rows with key columns `keys` (all rows in group 0 without keys).
fn group_ids(
    encoder: &mut Option<KeyEncoder>,
    keys: &[ArrayRef],
    n: usize,
) -> FrameResult<(Vec<u32>, usize)> {
    match encoder {
        Some(e) => {
            let ids = e.encode(keys)?;
            Ok((ids, e.len()))
        }
        None => Ok((vec![0; n], 1)),
    }
}

fn key_encoder(types: Vec<DataType>) -> FrameResult<Option<KeyEncoder>> {
    match types.is_empty() {
        true => Ok(None),
        false => KeyEncoder::new(&types).map(Some),
    }
}

/// A batch of `schema` with `columns` and `rows` rows (which also works without columns).
fn batch_of(schema: SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> FrameResult<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema, columns, &options,
    )?)
}

/// The key columns of the distinct keys, then the state columns of `accs`.
fn partial_columns(
    encoder: Option<KeyEncoder>,
    accs: &mut [Box<dyn Accumulator>],
) -> FrameResult<Vec<ArrayRef>> {
    let mut columns = match encoder {
        Some(e) => e.keys()?,
        None => Vec::new(),
    };
    for acc in accs {
        columns.extend(acc.state()?);
    }
    Ok(columns)
}

/// Rows aggregated at a time when there are no keys.
const BLOCK_ROWS: usize = 1 << 14;

/// Aggregates one chunk into a partial table: the key columns, then the state columns of each agg.
pub fn partial(spec: &GroupBySpec, batch: &RecordBatch) -> FrameResult<RecordBatch> {
    let mut builder = PartialBuilder::new(spec, batch.schema_ref())?;
    builder.push(batch)?;
    builder.finish()
}

/// A partial table built from a chunk's rows one batch at a time (a scan's morsels, as they
/// are decoded): the same table as [`partial`] of the batches concatenated.
pub struct PartialBuilder<'a> {
    spec: &'a GroupBySpec,
    input: SchemaRef,
    schema: SchemaRef,
    key_at: Vec<usize>,
    agg_at: Vec<Option<usize>>,
    encoder: Option<KeyEncoder>,
    accs: Vec<Box<dyn Accumulator>>,
    n_groups: usize,
    pushed: bool,
}

impl<'a> PartialBuilder<'a> {
    /// For batches of schema `input`.
    pub fn new(spec: &'a GroupBySpec, input: &SchemaRef) -> FrameResult<Self> {
        let schema = Arc::new(spec.partial_schema(input)?);
        let key_at = spec
            .keys
            .iter()
            .map(|k| column_index(input, k))
            .collect::<FrameResult<Vec<_>>>()?;
        let agg_at = spec
            .aggs
            .iter()
            .map(|agg| match agg.func {
                AggFunc::Size => Ok(None),
                _ => column_index(input, &agg.column).map(Some),
            })
            .collect::<FrameResult<Vec<_>>>()?;
        let accs = spec
            .aggs
            .iter()
            .zip(&agg_at)
            .map(|(agg, at)| match at {
                None => accumulator(agg.func, &DataType::Null),
                Some(at) => accumulator(agg.func, input.field(*at).data_type()),
            })
            .collect::<FrameResult<Vec<_>>>()?;
        let types = key_at.iter().map(|&k| input.field(k).data_type().clone());
        Ok(PartialBuilder {
            spec,
            input: input.clone(),
            schema,
            encoder: key_encoder(types.collect())?,
            key_at,
            agg_at,
            accs,
            n_groups: 0,
            pushed: false,
        })
    }

    /// Aggregates `batch` (of the schema given to [`Self::new`]) into the groups so far.
    pub fn push(&mut self, batch: &RecordBatch) -> FrameResult<()> {
        if batch.schema_ref().fields() != self.input.fields() {
            return Err(FrameError::TypeMismatch(
                "a groupby's batches of different schemas".to_string(),
            ));
        }
        self.pushed = true;
        let (batch, keys) = drop_null_keys(batch, &self.key_at)?;
        let n = batch.num_rows();
        // Without keys every row is in group 0: the rows go through in cache-sized blocks
        // (the NaN scan and every aggregation of a column read it from cache, not memory),
        // with one block of zero ids. With keys, the whole batch at once.
        let (ids, block) = match &mut self.encoder {
            Some(e) => {
                let ids = e.encode(&keys)?;
                self.n_groups = e.len();
                (ids, n.max(1))
            }
            None => {
                self.n_groups = 1;
                (vec![0; n.min(BLOCK_ROWS)], BLOCK_ROWS)
            }
        };
        let mut start = 0;
        loop {
            let len = block.min(n - start);
            let rows = Rows {
                ids: match self.encoder {
                    Some(_) => ids.get(start..start + len).unwrap_or_default(),
                    None => ids.get(..len).unwrap_or_default(),
                },
                n_groups: self.n_groups,
                single: keys.is_empty(),
                sizes: OnceCell::new(),
            };
            // Each input column made NaN-free once, however many aggregations read it.
            let mut cleaned: Vec<Option<ArrayRef>> = vec![None; batch.num_columns()];
            for ((agg, acc), at) in self.spec.aggs.iter().zip(&mut self.accs).zip(&self.agg_at) {
                let values = match (agg.func, *at) {
                    (AggFunc::Size, _) | (_, None) => new_null_array(&DataType::Null, len),
                    // The row as it is: NaN stays NaN.
                    (AggFunc::FirstRow, Some(at)) => batch.column(at).slice(start, len),
                    (_, Some(at)) => {
                        let column = || nan_to_null(&batch.column(at).slice(start, len));
                        match cleaned.get_mut(at) {
                            Some(slot) => slot.get_or_insert_with(column).clone(),
                            None => column(),
                        }
                    }
                };
                acc.update(&values, &rows)?;
            }
            start += len;
            if start >= n {
                break;
            }
        }
        Ok(())
    }

    /// The partial table of the batches pushed (of none: as of an empty batch).
    pub fn finish(mut self) -> FrameResult<RecordBatch> {
        if !self.pushed {
            self.push(&RecordBatch::new_empty(self.input.clone()))?;
        }
        let columns = partial_columns(self.encoder, &mut self.accs)?;
        batch_of(self.schema, columns, self.n_groups)
    }
}

/// Merges partial tables, given in chunk order (so first/last stay right), into one partial table.
pub fn merge(spec: &GroupBySpec, partials: &[RecordBatch]) -> FrameResult<RecordBatch> {
    let first = partials.first().ok_or_else(|| {
        FrameError::InvalidArgument("merge needs at least one partial table".to_string())
    })?;
    let schema = first.schema();
    let layout = spec.partial_layout(&schema)?;
    if partials.len() == 1 {
        return Ok(first.clone());
    }
    let n_keys = spec.keys.len();
    let types: Vec<DataType> = schema
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    let mut encoder = key_encoder(types.get(..n_keys).unwrap_or_default().to_vec())?;
    let mut accs = spec
        .aggs
        .iter()
        .zip(&layout)
        .map(|(agg, r)| {
            accumulator(
                agg.func,
                &input_type_of_states(agg.func, types.get(r.clone()).unwrap_or_default())?,
            )
        })
        .collect::<FrameResult<Vec<_>>>()?;
    let mut n_groups = 0;
    for p in partials {
        if p.schema_ref().fields() != schema.fields() {
            return Err(FrameError::TypeMismatch(
                "partial tables of different schemas".to_string(),
            ));
        }
        let columns = p.columns();
        let keys = columns.get(..n_keys).unwrap_or_default();
        let (ids, n) = group_ids(&mut encoder, keys, p.num_rows())?;
        n_groups = n;
        let rows = Rows {
            ids: &ids,
            n_groups,
            single: n_keys == 0,
            sizes: OnceCell::new(),
        };
        for (acc, r) in accs.iter_mut().zip(&layout) {
            acc.merge(columns.get(r.clone()).unwrap_or_default(), &rows)?;
        }
    }
    batch_of(schema, partial_columns(encoder, &mut accs)?, n_groups)
}

/// Turns a (merged) partial table into the result: the key columns, then one column per agg named `output`.
pub fn finalize(spec: &GroupBySpec, partial: &RecordBatch) -> FrameResult<RecordBatch> {
    let schema = partial.schema();
    let layout = spec.partial_layout(&schema)?;
    let n_keys = spec.keys.len();
    let mut fields: Vec<FieldRef> = schema.fields().iter().take(n_keys).cloned().collect();
    let mut columns: Vec<ArrayRef> = partial.columns().iter().take(n_keys).cloned().collect();
    for (agg, r) in spec.aggs.iter().zip(layout) {
        let out = finish(agg.func, partial.columns().get(r).unwrap_or_default())?;
        fields.push(Arc::new(Field::new(
            &agg.output,
            out.data_type().clone(),
            agg.func.nullable(),
        )));
        columns.push(out);
    }
    batch_of(Arc::new(Schema::new(fields)), columns, partial.num_rows())
}

/// The result column of `func` from its state columns.
fn finish(func: AggFunc, states: &[ArrayRef]) -> FrameResult<ArrayRef> {
    let int = |i| {
        state_column(states, i)?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| FrameError::TypeMismatch(format!("{} state not Int64", func.name())))
    };
    let float = |i| {
        state_column(states, i)?
            .as_primitive_opt::<Float64Type>()
            .ok_or_else(|| FrameError::TypeMismatch(format!("{} state not Float64", func.name())))
    };
    Ok(match func {
        AggFunc::Mean => {
            let decimal_sum = decimal::decimal_to_f64(state_column(states, 0)?)?;
            let sum = decimal_sum
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(|| FrameError::TypeMismatch("mean state not Float64".to_string()))?;
            let count = int(1)?;
            let mean: PrimitiveArray<Float64Type> = sum
                .values()
                .iter()
                .zip(count.values())
                .map(|(&s, &c)| (c > 0).then(|| s / c as f64))
                .collect();
            Arc::new(mean)
        }
        AggFunc::Var | AggFunc::Std => {
            let (n, m2) = (int(0)?, float(2)?);
            let std = func == AggFunc::Std;
            let var: PrimitiveArray<Float64Type> = n
                .values()
                .iter()
                .zip(m2.values())
                .map(|(&n, &m2)| {
                    let var = (m2 / (n - 1) as f64).max(0.0);
                    (n >= 2).then(|| if std { var.sqrt() } else { var })
                })
                .collect();
            Arc::new(var)
        }
        AggFunc::NUnique => {
            let state = state_column(states, 0)?;
            let lists = state
                .as_list_opt::<i32>()
                .ok_or_else(|| FrameError::TypeMismatch("nunique state not a list".to_string()))?;
            let counts: PrimitiveArray<Int64Type> = lists
                .value_offsets()
                .windows(2)
                .map(|w| i64::from(w[1] - w[0]))
                .collect();
            Arc::new(counts)
        }
        _ => state_column(states, 0)?.clone(),
    })
}

#[cfg(test)]
mod decimal_tests;
#[cfg(test)]
mod tests;
