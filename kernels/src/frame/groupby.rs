//! Groupby aggregation in three steps: `partial` per chunk, `merge` of partial tables, and
//! `finalize` of a merged table (pandas' `df.groupby(keys).agg(...)`; with zero keys, a column
//! reduction such as `df.sum()`).
//!
//! A partial table holds the key columns, then the state columns of each aggregation:
//!
//! | func          | state columns (named `{output}.{state}`)          |
//! |---------------|---------------------------------------------------|
//! | sum           | `sum`: Int64 (integer/boolean input) or Float64    |
//! | mean          | `sum`: Float64, `count`: Int64                     |
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

use super::error::{FrameError, FrameResult};
use super::keys::{with_primitive_type, KeyEncoder};
use super::schema::{column_index, is_string};
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
            AggFunc::First => &["first"],
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

/// Integers, Float32/64 and booleans: what sum, mean, var and std accept.
fn is_summable(dt: &DataType) -> bool {
    dt.is_integer()
        || matches!(
            dt,
            DataType::Float32 | DataType::Float64 | DataType::Boolean
        )
}

/// Types with a min and max: numbers, booleans, strings, dates, times, timestamps, durations.
fn is_orderable(dt: &DataType) -> bool {
    dt == &DataType::Boolean
        || is_string(dt)
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
        AggFunc::Count | AggFunc::Size | AggFunc::First | AggFunc::Last => true,
    };
    if !ok {
        return Err(type_error(func, column, dt));
    }
    Ok(match func {
        AggFunc::Sum if dt.is_floating() => DataType::Float64,
        AggFunc::Sum | AggFunc::Count | AggFunc::Size | AggFunc::NUnique => DataType::Int64,
        AggFunc::Mean | AggFunc::Std | AggFunc::Var => DataType::Float64,
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => dt.clone(),
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
        AggFunc::Mean => vec![DataType::Float64, DataType::Int64],
        AggFunc::Std | AggFunc::Var => vec![DataType::Int64, DataType::Float64, DataType::Float64],
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => vec![dt.clone()],
        AggFunc::NUnique => vec![DataType::List(list_item(dt))],
    })
}

/// An input type that gives the same state types as the states `types` of `func` (what
/// `merge` builds its accumulators from).
fn input_type_of_states(func: AggFunc, types: &[DataType]) -> FrameResult<DataType> {
    let first = types.first().cloned().unwrap_or(DataType::Null);
    Ok(match (func, first) {
        (AggFunc::Sum, dt) | (AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last, dt) => {
            dt
        }
        (AggFunc::NUnique, DataType::List(item)) => item.data_type().clone(),
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
// Typed loops

/// A primitive native value as an accumulator operand.
trait Num: ArrowNativeType + PartialOrd {
    fn as_i64(self) -> i64;
    fn as_f64(self) -> f64;
    fn is_nan(self) -> bool;
}

macro_rules! num {
    ($($t:ty: $is_nan:expr),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn as_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn as_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn is_nan(self) -> bool {
                let is_nan: fn($t) -> bool = $is_nan;
                is_nan(self)
            }
        }
    )*};
}
num!(i8: |_| false, i16: |_| false, i32: |_| false, i64: |_| false);
num!(u8: |_| false, u16: |_| false, u32: |_| false, u64: |_| false);
num!(f32: f32::is_nan, f64: f64::is_nan);

/// A sum accumulator: i64 (wrapping) or f64.
trait AccNum: Num + Default {
    type Arrow: ArrowPrimitiveType<Native = Self>;
    fn from_num<N: Num>(n: N) -> Self;
    fn add(self, other: Self) -> Self;
}

impl AccNum for i64 {
    type Arrow = Int64Type;
    #[inline(always)]
    fn from_num<N: Num>(n: N) -> Self {
        n.as_i64()
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl AccNum for f64 {
    type Arrow = Float64Type;
    #[inline(always)]
    fn from_num<N: Num>(n: N) -> Self {
        n.as_f64()
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
}

/// Calls `f(group, value)` for each non-null row of `a`, row `i` being in group `ids[i]`.
#[inline(always)]
fn for_each_valid<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    ids: &[u32],
    mut f: impl FnMut(usize, T::Native),
) {
    let values = a.values();
    match a.nulls().filter(|n| n.null_count() > 0) {
        None => ids
            .iter()
            .zip(values.iter())
            .for_each(|(&g, &v)| f(g as usize, v)),
        Some(nulls) => nulls.valid_indices().for_each(|i| {
            if let (Some(&g), Some(&v)) = (ids.get(i), values.get(i)) {
                f(g as usize, v)
            }
        }),
    }
}

/// The sum of `f` of the non-null values of `a`; in 8 independent lanes (which vectorize)
/// when there are no nulls.
fn sum_lanes<T, A>(a: &PrimitiveArray<T>, f: impl Fn(T::Native) -> A) -> A
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    let values = a.values();
    if let Some(nulls) = a.nulls().filter(|n| n.null_count() > 0) {
        let valid = nulls.valid_indices().filter_map(|i| values.get(i));
        return valid.fold(A::default(), |s, &v| s.add(f(v)));
    }
    let chunks = values.chunks_exact(8);
    let rest = chunks
        .remainder()
        .iter()
        .fold(A::default(), |s, &v| s.add(f(v)));
    let lanes = chunks.fold([A::default(); 8], |mut lanes, chunk| {
        lanes
            .iter_mut()
            .zip(chunk)
            .for_each(|(l, &v)| *l = l.add(f(v)));
        lanes
    });
    lanes.into_iter().fold(rest, A::add)
}

/// Adds the non-null values of `a` into `acc[group]`.
fn add_into<T, A>(acc: &mut [A], rows: &Rows, a: &PrimitiveArray<T>)
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    if rows.single {
        if let Some(s) = acc.first_mut() {
            *s = s.add(sum_lanes(a, A::from_num));
        }
        return;
    }
    let no_nulls = a.nulls().is_none_or(|n| n.null_count() == 0);
    if no_nulls && rows.n_groups <= LANED_MAX_GROUPS && rows.n_groups * 8 <= rows.ids.len() {
        return add_laned(acc, rows, a);
    }
    for_each_valid(a, rows.ids, |g, v| {
        if let Some(s) = acc.get_mut(g) {
            *s = s.add(A::from_num(v));
        }
    });
}

/// Most groups for [`add_laned`]: its `LANES` copies of the sums stay in the L2 cache.
const LANED_MAX_GROUPS: usize = 1 << 15;

/// [`add_into`] for a column without nulls and few groups: row `i` adds into copy `i % LANES`
/// of its group's sum, so runs of rows of one group (sorted keys, few groups) do not wait on
/// each other's additions; the copies are then added in lane order (deterministic).
fn add_laned<T, A>(acc: &mut [A], rows: &Rows, a: &PrimitiveArray<T>)
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    const LANES: usize = 4;
    let mut lanes = vec![A::default(); acc.len() * LANES];
    let ids = rows.ids.chunks_exact(LANES);
    let values = a.values().chunks_exact(LANES);
    let (id_tail, value_tail) = (ids.remainder(), values.remainder());
    for (g, v) in ids.zip(values) {
        for lane in 0..LANES {
            if let Some(s) = lanes.get_mut(g[lane] as usize * LANES + lane) {
                *s = s.add(A::from_num(v[lane]));
            }
        }
    }
    for (&g, &v) in id_tail.iter().zip(value_tail) {
        if let Some(s) = lanes.get_mut(g as usize * LANES) {
            *s = s.add(A::from_num(v));
        }
    }
    for (s, l) in acc.iter_mut().zip(lanes.chunks_exact(LANES)) {
        *s = l.iter().fold(*s, |s, &x| s.add(x));
    }
}

/// Runs `$body` with `$a` the `PrimitiveArray<T>` view of `$values`, for a numeric (or
/// temporal) array; a type error otherwise.
macro_rules! with_primitive_array {
    ($values:expr, $a:ident => $body:expr) => {{
        let values: &ArrayRef = $values;
        with_primitive_type!(values.data_type(), T => {
            let $a = values.as_primitive::<T>();
            $body
        }, other => return Err(FrameError::TypeMismatch(format!("unexpected column type {other}"))))
    }};
}

/// Booleans as 0/1 bytes with the same nulls; other arrays as they are.
fn bool_to_u8(a: &ArrayRef) -> ArrayRef {
    match a.as_boolean_opt() {
        Some(b) => {
            let values: ScalarBuffer<u8> = b.values().iter().map(u8::from).collect();
            Arc::new(PrimitiveArray::<UInt8Type>::new(values, b.nulls().cloned()))
        }
        None => a.clone(),
    }
}

/// Float NaNs made nulls (pandas treats NaN as missing); other arrays as they are.
fn nan_to_null(a: &ArrayRef) -> ArrayRef {
    fn go<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Option<ArrayRef>
    where
        T::Native: Num,
    {
        // Blocks folded without short-circuit vectorize; stop at the first block with a NaN.
        let has_nan = a.values().chunks(1024).any(|block| {
            block
                .iter()
                .fold(0u8, |seen, &v| seen | u8::from(v.is_nan()))
                != 0
        });
        if !has_nan {
            return None;
        }
        let valid: NullBuffer = a.values().iter().map(|v| !v.is_nan()).collect();
        let nulls = NullBuffer::union(a.nulls(), Some(&valid));
        Some(Arc::new(PrimitiveArray::<T>::new(
            a.values().clone(),
            nulls,
        )))
    }
    let converted = match a.data_type() {
        DataType::Float32 => go(a.as_primitive::<arrow::datatypes::Float32Type>()),
        DataType::Float64 => go(a.as_primitive::<Float64Type>()),
        _ => None,
    };
    converted.unwrap_or_else(|| a.clone())
}

/// The rows an accumulator is given: row `i` is in group `ids[i] < n_groups`.
struct Rows<'a> {
    ids: &'a [u32],
    n_groups: usize,
    /// Every row is in group 0 (no key columns): reductions take their fast paths.
    single: bool,
    /// Rows per group, computed when first asked.
    sizes: OnceCell<Vec<i64>>,
}

impl Rows<'_> {
    fn sizes(&self) -> &[i64] {
        self.sizes.get_or_init(|| {
            let mut sizes = vec![0i64; self.n_groups];
            if self.single {
                sizes.fill(self.ids.len() as i64);
                return sizes;
            }
            for &g in self.ids {
                if let Some(s) = sizes.get_mut(g as usize) {
                    *s += 1;
                }
            }
            sizes
        })
    }
}

/// The per-group state of one aggregation.
trait Accumulator {
    /// Adds the rows of one chunk; `values` is the aggregation's input column.
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()>;
    /// Adds the rows of one partial table; `states` are the aggregation's state columns.
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()>;
    /// The state columns, one row per group.
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>>;
}

fn state_column(states: &[ArrayRef], i: usize) -> FrameResult<&ArrayRef> {
    states
        .get(i)
        .ok_or_else(|| FrameError::InvalidArgument("missing state column".to_string()))
}

/// The non-null values of state column `a` (of `A`'s type) added into `acc`.
fn add_state<A: AccNum>(acc: &mut [A], rows: &Rows, a: &ArrayRef) -> FrameResult<()> {
    match a.as_primitive_opt::<A::Arrow>() {
        Some(a) => {
            add_into(acc, rows, a);
            Ok(())
        }
        None => Err(FrameError::TypeMismatch(format!(
            "state column of type {}, expected {}",
            a.data_type(),
            A::Arrow::DATA_TYPE
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Accumulators

/// Sum into i64 (integers, booleans) or f64 (floats).
struct SumAcc<A> {
    sum: Vec<A>,
}

impl<A: AccNum> Accumulator for SumAcc<A> {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, A::default());
        let values = bool_to_u8(values);
        with_primitive_array!(&values, a => add_into(&mut self.sum, rows, a));
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, A::default());
        add_state(&mut self.sum, rows, state_column(states, 0)?)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let sum = std::mem::take(&mut self.sum);
        Ok(vec![Arc::new(PrimitiveArray::<A::Arrow>::new(
            sum.into(),
            None,
        ))])
    }
}

/// Count of non-null values (or of rows, for size).
struct CountAcc {
    count: Vec<i64>,
    /// Counts rows, nulls included.
    size: bool,
}

impl Accumulator for CountAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.count.resize(rows.n_groups, 0);
        match values
            .logical_nulls()
            .filter(|n| !self.size && n.null_count() > 0)
        {
            None => self
                .count
                .iter_mut()
                .zip(rows.sizes())
                .for_each(|(c, s)| *c += s),
            Some(nulls) => nulls.valid_indices().for_each(|i| {
                if let Some(c) = rows
                    .ids
                    .get(i)
                    .and_then(|&g| self.count.get_mut(g as usize))
                {
                    *c += 1;
                }
            }),
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.count.resize(rows.n_groups, 0);
        add_state(&mut self.count, rows, state_column(states, 0)?)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let count = std::mem::take(&mut self.count);
        Ok(vec![Arc::new(PrimitiveArray::<Int64Type>::from(count))])
    }
}

/// Sum and count for the mean.
struct MeanAcc {
    sum: Vec<f64>,
    count: CountAcc,
}

impl Accumulator for MeanAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, 0.0);
        let values = bool_to_u8(values);
        with_primitive_array!(&values, a => add_into(&mut self.sum, rows, a));
        self.count.update(&values, rows)
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, 0.0);
        add_state(&mut self.sum, rows, state_column(states, 0)?)?;
        self.count.merge(states.get(1..).unwrap_or_default(), rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let sum = std::mem::take(&mut self.sum);
        let mut out: Vec<ArrayRef> = vec![Arc::new(PrimitiveArray::<Float64Type>::from(sum))];
        out.extend(self.count.state()?);
        Ok(out)
    }
}

/// Count, mean and sum of squared deviations (M2) per group, for var and std.
#[derive(Default)]
struct MomentsAcc {
    n: Vec<i64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl MomentsAcc {
    fn resize(&mut self, n: usize) {
        self.n.resize(n, 0);
        self.mean.resize(n, 0.0);
        self.m2.resize(n, 0.0);
    }

    /// Combines `(n, mean, m2)` of more values into group `g` (Chan et al.'s formula).
    #[inline(always)]
    fn combine(&mut self, g: usize, n_b: i64, mean_b: f64, m2_b: f64) {
        let (Some(n), Some(mean), Some(m2)) =
            (self.n.get_mut(g), self.mean.get_mut(g), self.m2.get_mut(g))
        else {
            return;
        };
        if n_b == 0 {
            return;
        }
        let n_a = *n as f64;
        let total = *n + n_b;
        let delta = mean_b - *mean;
        let share = n_b as f64 / total as f64;
        *mean += delta * share;
        *m2 += m2_b + delta * delta * n_a * share;
        *n = total;
    }
}

impl Accumulator for MomentsAcc {
    /// Two passes over the chunk (sums, then squared deviations from the chunk's group
    /// means), then one combination per group: stable, and no division per row.
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.resize(rows.n_groups);
        let values = bool_to_u8(values);
        let mut n = vec![0i64; rows.n_groups];
        let mut mean = vec![0f64; rows.n_groups];
        let mut m2 = vec![0f64; rows.n_groups];
        with_primitive_array!(&values, a => {
            if rows.single {
                let n = (a.len() - a.null_count()) as i64;
                let mean = sum_lanes(a, |v| v.as_f64()) / n.max(1) as f64;
                let m2 = sum_lanes(a, |v| (v.as_f64() - mean) * (v.as_f64() - mean));
                self.combine(0, n, mean, m2);
                return Ok(());
            }
            for_each_valid(a, rows.ids, |g, v| {
                if let (Some(n), Some(s)) = (n.get_mut(g), mean.get_mut(g)) {
                    *n += 1;
                    *s += v.as_f64();
                }
            });
            mean.iter_mut().zip(&n).for_each(|(m, &n)| *m /= n.max(1) as f64);
            for_each_valid(a, rows.ids, |g, v| {
                if let (Some(m), Some(q)) = (mean.get(g), m2.get_mut(g)) {
                    let d = v.as_f64() - m;
                    *q += d * d;
                }
            });
        });
        for (g, ((n, mean), m2)) in n.into_iter().zip(mean).zip(m2).enumerate() {
            self.combine(g, n, mean, m2);
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.resize(rows.n_groups);
        let typed = (
            state_column(states, 0)?.as_primitive_opt::<Int64Type>(),
            state_column(states, 1)?.as_primitive_opt::<Float64Type>(),
            state_column(states, 2)?.as_primitive_opt::<Float64Type>(),
        );
        let (Some(n), Some(mean), Some(m2)) = typed else {
            return Err(FrameError::TypeMismatch(
                "var/std states must be Int64, Float64, Float64".to_string(),
            ));
        };
        let rows_iter = rows
            .ids
            .iter()
            .zip(n.values())
            .zip(mean.values())
            .zip(m2.values());
        for (((&g, &n), &mean), &m2) in rows_iter {
            self.combine(g as usize, n, mean, m2);
        }
        Ok(())
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let MomentsAcc { n, mean, m2 } = std::mem::take(self);
        Ok(vec![
            Arc::new(PrimitiveArray::<Int64Type>::from(n)),
            Arc::new(PrimitiveArray::<Float64Type>::from(mean)),
            Arc::new(PrimitiveArray::<Float64Type>::from(m2)),
        ])
    }
}

/// The validity of groups whose flag is set.
fn valid_where(has: &[bool]) -> Option<NullBuffer> {
    has.contains(&false).then(|| has.iter().copied().collect())
}

/// Min or max of primitive values (booleans as 0/1), kept as native values.
struct MinMaxAcc<T: ArrowPrimitiveType, const MAX: bool> {
    best: Vec<T::Native>,
    has: Vec<bool>,
    /// The input (and result) type.
    out: DataType,
}

impl<T, const MAX: bool> Accumulator for MinMaxAcc<T, MAX>
where
    T: ArrowPrimitiveType,
    T::Native: Num,
{
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.best.resize(rows.n_groups, T::Native::default());
        self.has.resize(rows.n_groups, false);
        let values = bool_to_u8(values);
        let Some(a) = values.as_primitive_opt::<T>() else {
            return Err(FrameError::TypeMismatch(format!(
                "min/max of a column of type {}, expected {}",
                values.data_type(),
                self.out
            )));
        };
        let (best, has) = (&mut self.best, &mut self.has);
        for_each_valid(a, rows.ids, |g, v| {
            if let (Some(b), Some(h)) = (best.get_mut(g), has.get_mut(g)) {
                if !*h || (MAX && v > *b) || (!MAX && v < *b) {
                    *b = v;
                    *h = true;
                }
            }
        });
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let nulls = valid_where(&self.has);
        let best = ScalarBuffer::from(std::mem::take(&mut self.best));
        let array = PrimitiveArray::<T>::try_new(best, nulls)?;
        let out: ArrayRef = match self.out {
            DataType::Boolean => cast(&array, &DataType::Boolean)?,
            _ => Arc::new(array.with_data_type(self.out.clone())),
        };
        Ok(vec![out])
    }
}

/// Min or max of strings (byte order, which is code point order), kept in an arena.
struct StrMinMaxAcc<const MAX: bool> {
    arena: Vec<u8>,
    /// The arena range of each group's extreme, if any.
    best: Vec<Option<(usize, usize)>>,
    /// The input (and result) type.
    out: DataType,
}

impl<const MAX: bool> StrMinMaxAcc<MAX> {
    fn update_strings<O: OffsetSizeTrait>(&mut self, a: &GenericStringArray<O>, ids: &[u32]) {
        let (arena, best) = (&mut self.arena, &mut self.best);
        let mut visit = |i: usize| {
            let Some(b) = ids.get(i).and_then(|&g| best.get_mut(g as usize)) else {
                return;
            };
            let s = a.value(i).as_bytes();
            let better = match *b {
                None => true,
                Some((start, end)) => {
                    let cur = arena.get(start..end).unwrap_or_default();
                    if MAX {
                        s > cur
                    } else {
                        s < cur
                    }
                }
            };
            if better {
                let start = arena.len();
                arena.extend_from_slice(s);
                *b = Some((start, arena.len()));
            }
        };
        match a.nulls().filter(|n| n.null_count() > 0) {
            None => (0..a.len()).for_each(&mut visit),
            Some(nulls) => nulls.valid_indices().for_each(&mut visit),
        }
    }
}

impl<const MAX: bool> Accumulator for StrMinMaxAcc<MAX> {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.best.resize(rows.n_groups, None);
        match values.data_type() {
            DataType::Utf8 => self.update_strings(values.as_string::<i32>(), rows.ids),
            DataType::LargeUtf8 => self.update_strings(values.as_string::<i64>(), rows.ids),
            _ => {
                let large = cast(values, &DataType::LargeUtf8)?;
                self.update_strings(large.as_string::<i64>(), rows.ids)
            }
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let arena = &self.arena;
        let strings: LargeStringArray = self
            .best
            .iter()
            .map(|b| b.and_then(|(s, e)| std::str::from_utf8(arena.get(s..e)?).ok()))
            .collect();
        let strings: ArrayRef = Arc::new(strings);
        Ok(vec![match self.out {
            DataType::LargeUtf8 => strings,
            _ => cast(&strings, &self.out)?,
        }])
    }
}

/// No row picked yet.
const NO_ROW: (u32, u32) = (u32::MAX, u32::MAX);

/// First or last non-null value of any type: remembers (chunk, row) and gathers at the end.
struct PickAcc {
    rows: Vec<(u32, u32)>,
    sources: Vec<ArrayRef>,
    last: bool,
    /// The input (and result) type.
    out: DataType,
}

impl Accumulator for PickAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.rows.resize(rows.n_groups, NO_ROW);
        let chunk = u32::try_from(self.sources.len())
            .map_err(|_| FrameError::InvalidArgument("too many chunks".to_string()))?;
        self.sources.push(values.clone());
        let (picked, last) = (&mut self.rows, self.last);
        let mut visit = |i: usize| {
            if let Some(p) = rows.ids.get(i).and_then(|&g| picked.get_mut(g as usize)) {
                if last || *p == NO_ROW {
                    *p = (chunk, i as u32);
                }
            }
        };
        match values.logical_nulls().filter(|n| n.null_count() > 0) {
            None => (0..values.len()).for_each(&mut visit),
            Some(nulls) => nulls.valid_indices().for_each(&mut visit),
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let null = new_null_array(&self.out, 1);
        let mut sources: Vec<&dyn Array> = self.sources.iter().map(|s| s.as_ref()).collect();
        sources.push(null.as_ref());
        let null_at = (sources.len() - 1, 0);
        let indices: Vec<(usize, usize)> = self
            .rows
            .iter()
            .map(|&(c, r)| match (c, r) {
                NO_ROW => null_at,
                (c, r) => (c as usize, r as usize),
            })
            .collect();
        let out = interleave(&sources, &indices)?;
        self.sources.clear();
        Ok(vec![out])
    }
}

/// The distinct (group, value) pairs, for nunique.
struct NUniqueAcc {
    pairs: KeyEncoder,
    item: DataType,
    n_groups: usize,
}

impl NUniqueAcc {
    /// Adds `values`, value `i` in group `ids[i]` (nulls skipped).
    fn add(&mut self, values: &ArrayRef, ids: Vec<u32>) -> FrameResult<()> {
        let mut ids: ArrayRef = Arc::new(UInt32Array::from(ids));
        let mut values = values.clone();
        if let Some(nulls) = values.logical_nulls().filter(|n| n.null_count() > 0) {
            let keep = BooleanArray::new(nulls.inner().clone(), None);
            ids = arrow::compute::filter(&ids, &keep)?;
            values = arrow::compute::filter(&values, &keep)?;
        }
        self.pairs.encode(&[ids, values])?;
        Ok(())
    }
}

impl Accumulator for NUniqueAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.n_groups = rows.n_groups;
        self.add(values, rows.ids.to_vec())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.n_groups = rows.n_groups;
        let state = state_column(states, 0)?;
        let Some(lists) = state.as_list_opt::<i32>() else {
            return Err(FrameError::TypeMismatch(format!(
                "nunique state of type {}, not a list",
                state.data_type()
            )));
        };
        let offsets = lists.value_offsets();
        let (start, end) = match (offsets.first(), offsets.last()) {
            (Some(&s), Some(&e)) => (s.as_usize(), e.as_usize()),
            _ => return Ok(()),
        };
        let ids: Vec<u32> = offsets
            .windows(2)
            .zip(rows.ids)
            .flat_map(|(w, &g)| std::iter::repeat_n(g, (w[1] - w[0]).as_usize()))
            .collect();
        self.add(&lists.values().slice(start, end - start), ids)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let n = self.n_groups;
        let (groups, values) = match self.pairs.keys()?.as_slice() {
            [g, v] => (g.clone(), v.clone()),
            _ => return Err(FrameError::InvalidArgument("nunique keys".to_string())),
        };
        let groups = groups
            .as_primitive::<arrow::datatypes::UInt32Type>()
            .values();
        // Counting sort of the pairs by group.
        let mut offsets = vec![0usize; n + 1];
        for &g in groups.iter() {
            if let Some(o) = offsets.get_mut(g as usize + 1) {
                *o += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        let mut order = vec![0u32; groups.len()];
        for (i, &g) in groups.iter().enumerate() {
            if let Some(at) = next.get_mut(g as usize) {
                if let Some(o) = order.get_mut(*at) {
                    *o = i as u32;
                }
                *at += 1;
            }
        }
        let values = take(&values, &UInt32Array::from(order), None)?;
        let offsets = offsets
            .into_iter()
            .map(i32::from_usize)
            .collect::<Option<ScalarBuffer<i32>>>()
            .ok_or_else(|| FrameError::InvalidArgument("too many distinct values".to_string()))?;
        let list = ListArray::try_new(
            list_item(&self.item),
            OffsetBuffer::new(offsets),
            values,
            None,
        )?;
        Ok(vec![Arc::new(list)])
    }
}

/// The accumulator of `func` over input values of type `dt`.
fn accumulator(func: AggFunc, dt: &DataType) -> FrameResult<Box<dyn Accumulator>> {
    let count = |size| CountAcc {
        count: Vec::new(),
        size,
    };
    let pick = |last| PickAcc {
        rows: Vec::new(),
        sources: Vec::new(),
        last,
        out: dt.clone(),
    };
    Ok(match func {
        AggFunc::Sum if dt.is_floating() => Box::new(SumAcc::<f64> { sum: Vec::new() }),
        AggFunc::Sum => Box::new(SumAcc::<i64> { sum: Vec::new() }),
        AggFunc::Mean => Box::new(MeanAcc {
            sum: Vec::new(),
            count: count(false),
        }),
        AggFunc::Count => Box::new(count(false)),
        AggFunc::Size => Box::new(count(true)),
        AggFunc::Std | AggFunc::Var => Box::new(MomentsAcc::default()),
        AggFunc::Min => min_max::<false>(dt)?,
        AggFunc::Max => min_max::<true>(dt)?,
        AggFunc::First => Box::new(pick(false)),
        AggFunc::Last => Box::new(pick(true)),
        AggFunc::NUnique => Box::new(NUniqueAcc {
            pairs: KeyEncoder::new(&[DataType::UInt32, dt.clone()])?,
            item: dt.clone(),
            n_groups: 0,
        }),
    })
}

fn min_max<const MAX: bool>(dt: &DataType) -> FrameResult<Box<dyn Accumulator>> {
    fn prim<T: ArrowPrimitiveType, const MAX: bool>(dt: &DataType) -> Box<dyn Accumulator>
    where
        T::Native: Num,
    {
        Box::new(MinMaxAcc::<T, MAX> {
            best: Vec::new(),
            has: Vec::new(),
            out: dt.clone(),
        })
    }
    if is_string(dt) {
        return Ok(Box::new(StrMinMaxAcc::<MAX> {
            arena: Vec::new(),
            best: Vec::new(),
            out: dt.clone(),
        }));
    }
    if dt == &DataType::Boolean {
        return Ok(prim::<UInt8Type, MAX>(dt));
    }
    with_primitive_type!(dt, T => Ok(prim::<T, MAX>(dt)), other => Err(FrameError::TypeMismatch(format!("cannot compute min/max of type {other}"))))
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
    let schema = Arc::new(spec.partial_schema(batch.schema_ref())?);
    let input = batch.schema_ref();
    let key_at = spec
        .keys
        .iter()
        .map(|k| column_index(input, k))
        .collect::<FrameResult<Vec<_>>>()?;
    let (batch, keys) = drop_null_keys(batch, &key_at)?;
    let mut encoder = key_encoder(keys.iter().map(|k| k.data_type().clone()).collect())?;
    let n = batch.num_rows();
    let mut accs = spec
        .aggs
        .iter()
        .map(|agg| match agg.func {
            AggFunc::Size => accumulator(agg.func, &DataType::Null),
            _ => accumulator(
                agg.func,
                batch.column(column_index(input, &agg.column)?).data_type(),
            ),
        })
        .collect::<FrameResult<Vec<_>>>()?;
    // Without keys every row is in group 0: the rows go through in cache-sized blocks (the
    // NaN scan and every aggregation of a column read it from cache, not memory), with one
    // block of zero ids. With keys, the whole chunk at once.
    let (ids, n_groups, block) = match &mut encoder {
        Some(e) => (e.encode(&keys)?, e.len(), n.max(1)),
        None => (vec![0; n.min(BLOCK_ROWS)], 1, BLOCK_ROWS),
    };
    let mut start = 0;
    loop {
        let len = block.min(n - start);
        let rows = Rows {
            ids: match encoder {
                Some(_) => ids.get(start..start + len).unwrap_or_default(),
                None => ids.get(..len).unwrap_or_default(),
            },
            n_groups,
            single: keys.is_empty(),
            sizes: OnceCell::new(),
        };
        // Each input column made NaN-free once, however many aggregations read it.
        let mut cleaned: Vec<Option<ArrayRef>> = vec![None; batch.num_columns()];
        for (agg, acc) in spec.aggs.iter().zip(&mut accs) {
            let values = match agg.func {
                AggFunc::Size => new_null_array(&DataType::Null, len),
                _ => {
                    let at = column_index(input, &agg.column)?;
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
    batch_of(schema, partial_columns(encoder, &mut accs)?, n_groups)
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
            let (sum, count) = (float(0)?, int(1)?);
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
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
    use arrow::datatypes::Int32Type;
    use std::collections::HashMap;

    use crate::frame::test_rng::Rng;

    /// A cell of a table, for the naive implementation and for comparing results.
    #[derive(Clone, Debug, PartialEq, PartialOrd)]
    enum Val {
        Null,
        I(i64),
        F(f64),
        S(String),
        B(bool),
    }

    impl Val {
        fn is_null(&self) -> bool {
            matches!(self, Val::Null) || matches!(self, Val::F(f) if f.is_nan())
        }
        fn num(&self) -> f64 {
            match self {
                Val::I(i) => *i as f64,
                Val::F(f) => *f,
                Val::B(b) => f64::from(u8::from(*b)),
                _ => f64::NAN,
            }
        }
        /// A hashable identity of the value.
        fn id(&self) -> String {
            match self {
                Val::F(f) => format!("F{}", f.to_bits()),
                other => format!("{other:?}"),
            }
        }
    }

    /// The value of row `i` of `a`.
    fn val_at(a: &ArrayRef, i: usize) -> Val {
        if a.is_null(i) {
            return Val::Null;
        }
        match a.data_type() {
            DataType::Int64 => Val::I(a.as_primitive::<Int64Type>().value(i)),
            DataType::Int32 => Val::I(a.as_primitive::<Int32Type>().value(i).into()),
            DataType::Float64 => Val::F(a.as_primitive::<Float64Type>().value(i)),
            DataType::Boolean => Val::B(a.as_boolean().value(i)),
            DataType::Utf8 => Val::S(a.as_string::<i32>().value(i).to_string()),
            _ => val_at(&cast(a, &DataType::Utf8).unwrap(), i),
        }
    }

    fn close(a: &Val, b: &Val) -> bool {
        match (a, b) {
            (Val::F(x), Val::F(y)) => {
                (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0) || (x.is_nan() && y.is_nan())
            }
            _ => a == b,
        }
    }

    /// pandas' result of `func` over one group's values (`int_sum`: the sum is an integer).
    fn naive_agg(func: AggFunc, values: &[Val], int_sum: bool) -> Val {
        let present: Vec<&Val> = values.iter().filter(|v| !v.is_null()).collect();
        let n = present.len();
        let mean = present.iter().map(|v| v.num()).sum::<f64>() / n as f64;
        let var = present
            .iter()
            .map(|v| (v.num() - mean).powi(2))
            .sum::<f64>()
            / (n as f64 - 1.0);
        let extreme = |max: bool| {
            present
                .iter()
                .copied()
                .fold(None::<&Val>, |best, v| match best {
                    Some(b) if (max && v <= b) || (!max && v >= b) => Some(b),
                    _ => Some(v),
                })
                .cloned()
                .unwrap_or(Val::Null)
        };
        match func {
            AggFunc::Sum if int_sum => Val::I(present.iter().map(|v| v.num() as i64).sum()),
            AggFunc::Sum => Val::F(present.iter().map(|v| v.num()).sum()),
            AggFunc::Mean if n == 0 => Val::Null,
            AggFunc::Mean => Val::F(mean),
            AggFunc::Min => extreme(false),
            AggFunc::Max => extreme(true),
            AggFunc::Count => Val::I(n as i64),
            AggFunc::Size => Val::I(values.len() as i64),
            AggFunc::Var | AggFunc::Std if n < 2 => Val::Null,
            AggFunc::Var => Val::F(var),
            AggFunc::Std => Val::F(var.sqrt()),
            AggFunc::First => present.first().map_or(Val::Null, |v| (*v).clone()),
            AggFunc::Last => present.last().map_or(Val::Null, |v| (*v).clone()),
            AggFunc::NUnique => {
                Val::I(present.iter().map(|v| v.id()).collect::<HashSet<_>>().len() as i64)
            }
        }
    }

    /// pandas' groupby over the rows of `batch`, as rows of values.
    fn naive(spec: &GroupBySpec, batch: &RecordBatch) -> Vec<Vec<Val>> {
        let col = |name: &str| batch.column(column_index(batch.schema_ref(), name).unwrap());
        let mut order: Vec<Vec<Val>> = Vec::new();
        let mut groups: HashMap<Vec<String>, Vec<usize>> = HashMap::new();
        for i in 0..batch.num_rows() {
            let key: Vec<Val> = spec.keys.iter().map(|k| val_at(col(k), i)).collect();
            if key.iter().any(|v| v.is_null()) {
                continue;
            }
            let id: Vec<String> = key.iter().map(|v| v.id()).collect();
            if !groups.contains_key(&id) {
                order.push(key);
            }
            groups.entry(id).or_default().push(i);
        }
        if spec.keys.is_empty() {
            order = vec![vec![]];
            groups.insert(vec![], (0..batch.num_rows()).collect());
        }
        order
            .into_iter()
            .map(|key| {
                let rows = &groups[&key.iter().map(|v| v.id()).collect::<Vec<_>>()];
                let mut out = key.clone();
                for agg in &spec.aggs {
                    let values: Vec<Val> = match agg.func {
                        AggFunc::Size => rows.iter().map(|_| Val::Null).collect(),
                        _ => rows.iter().map(|&i| val_at(col(&agg.column), i)).collect(),
                    };
                    let dt = col(&agg.column).data_type();
                    out.push(naive_agg(agg.func, &values, !dt.is_floating()));
                }
                out
            })
            .collect()
    }

    fn assert_same(got: &RecordBatch, want: &[Vec<Val>], what: &str) {
        assert_eq!(got.num_rows(), want.len(), "{what}: rows");
        for (i, row) in want.iter().enumerate() {
            for (j, w) in row.iter().enumerate() {
                let g = val_at(got.column(j), i);
                assert!(
                    close(&g, w),
                    "{what}: row {i} column {j}: got {g:?}, want {w:?}"
                );
            }
        }
    }

    fn dict(values: Vec<Option<String>>) -> ArrayRef {
        let strings = StringArray::from(values);
        Arc::new(
            cast(
                &strings,
                &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            )
            .unwrap(),
        )
    }

    fn random_batch(rng: &mut Rng, n: usize) -> RecordBatch {
        let k_int: Int64Array = (0..n)
            .map(|_| rng.maybe(10, |r| r.below(6) as i64 - 2))
            .collect();
        let k_str: Vec<Option<String>> = (0..n)
            .map(|_| rng.maybe(10, |r| format!("k{}", r.below(5))))
            .collect();
        let k_dict = dict(
            (0..n)
                .map(|_| rng.maybe(12, |r| format!("d{}", r.below(4))))
                .collect(),
        );
        let k_f: Float64Array = (0..n)
            .map(|_| {
                rng.maybe(10, |r| match r.below(8) {
                    0 => f64::NAN,
                    x => x as f64 * 0.5 - 1.0,
                })
            })
            .collect();
        let v_int: Int64Array = (0..n)
            .map(|_| rng.maybe(4, |r| r.below(100) as i64 - 50))
            .collect();
        let v_i32: Int32Array = (0..n)
            .map(|_| rng.maybe(4, |r| r.below(7) as i32))
            .collect();
        let v_f: Float64Array = (0..n)
            .map(|_| {
                rng.maybe(4, |r| match r.below(20) {
                    0 => f64::NAN,
                    x => (x as f64 - 10.0) * 1.25 + 1e6,
                })
            })
            .collect();
        let v_str: Vec<Option<String>> = (0..n)
            .map(|_| rng.maybe(3, |r| format!("s{}", r.below(9))))
            .collect();
        let v_bool: BooleanArray = (0..n).map(|_| rng.maybe(3, |r| r.below(2) == 0)).collect();
        let v_dict = dict(
            (0..n)
                .map(|_| rng.maybe(3, |r| format!("v{}", r.below(6))))
                .collect(),
        );
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("k_int", Arc::new(k_int)),
            ("k_str", Arc::new(StringArray::from(k_str))),
            ("k_dict", k_dict),
            ("k_f", Arc::new(k_f)),
            ("v_int", Arc::new(v_int)),
            ("v_i32", Arc::new(v_i32)),
            ("v_f", Arc::new(v_f)),
            ("v_str", Arc::new(StringArray::from(v_str))),
            ("v_bool", Arc::new(v_bool)),
            ("v_dict", v_dict),
        ];
        RecordBatch::try_from_iter(columns).unwrap()
    }

    const ALL: [AggFunc; 11] = [
        AggFunc::Sum,
        AggFunc::Mean,
        AggFunc::Min,
        AggFunc::Max,
        AggFunc::Count,
        AggFunc::Size,
        AggFunc::Std,
        AggFunc::Var,
        AggFunc::First,
        AggFunc::Last,
        AggFunc::NUnique,
    ];

    /// Every aggregation that applies to each value column.
    fn all_aggs() -> Vec<AggSpec> {
        let mut aggs = Vec::new();
        for column in ["v_int", "v_i32", "v_f", "v_str", "v_bool", "v_dict"] {
            for func in ALL {
                let numeric = !matches!(column, "v_str" | "v_dict");
                if !numeric
                    && matches!(
                        func,
                        AggFunc::Sum | AggFunc::Mean | AggFunc::Std | AggFunc::Var
                    )
                {
                    continue;
                }
                aggs.push(AggSpec {
                    column: column.to_string(),
                    func,
                    output: format!("{column}_{}", func.name()),
                });
            }
        }
        aggs
    }

    fn spec(keys: &[&str]) -> GroupBySpec {
        GroupBySpec {
            keys: keys.iter().map(|k| k.to_string()).collect(),
            aggs: all_aggs(),
        }
    }

    const KEY_SETS: [&[&str]; 7] = [
        &[],
        &["k_int"],
        &["k_str"],
        &["k_dict"],
        &["k_f"],
        &["k_int", "k_str"],
        &["k_dict", "k_int", "k_str"],
    ];

    /// One partial over the whole table, finalized, against the naive groupby; the schemas
    /// match `output_schema` and `partial_schema`.
    #[test]
    fn whole_table_matches_naive() {
        let mut rng = Rng(1);
        for n in [1, 7, 300] {
            let batch = random_batch(&mut rng, n);
            for keys in KEY_SETS {
                let spec = spec(keys);
                let p = partial(&spec, &batch).unwrap();
                assert_eq!(
                    p.schema().as_ref(),
                    &spec.partial_schema(batch.schema_ref()).unwrap()
                );
                let out = finalize(&spec, &p).unwrap();
                assert_eq!(
                    out.schema().as_ref(),
                    &spec.output_schema(batch.schema_ref()).unwrap()
                );
                assert_same(&out, &naive(&spec, &batch), &format!("{keys:?} n={n}"));
            }
        }
        // Without keys, rows go through in blocks: several blocks and a partial one.
        let batch = random_batch(&mut rng, 2 * BLOCK_ROWS + 5);
        let spec = GroupBySpec {
            keys: Vec::new(),
            aggs: all_aggs()
                .into_iter()
                .filter(|a| matches!(a.column.as_str(), "v_int" | "v_f" | "v_str"))
                .collect(),
        };
        let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
        assert_same(&out, &naive(&spec, &batch), "no keys, blocks");
    }

    /// Null-free columns with many rows per group take the laned sum: sorted runs of keys
    /// and random keys, a length not a multiple of the lane count, against sums by hand
    /// (values are multiples of 1/4, so float sums are exact in any order).
    #[test]
    fn laned_sums_match_sequential_sums() {
        let mut rng = Rng(3);
        let n = 1003;
        for sorted in [true, false] {
            let keys: Vec<i64> = (0..n)
                .map(|i| if sorted { i / 50 } else { rng.below(7) as i64 })
                .collect();
            let ints: Vec<i64> = (0..n).map(|_| rng.below(1000) as i64 - 500).collect();
            let floats: Vec<f64> = ints.iter().map(|&v| v as f64 * 0.25).collect();
            let mut want: std::collections::BTreeMap<i64, (i64, f64, i64)> = Default::default();
            for ((&k, &i), &f) in keys.iter().zip(&ints).zip(&floats) {
                let e = want.entry(k).or_default();
                e.0 += i;
                e.1 += f;
                e.2 += 1;
            }
            let batch = RecordBatch::try_from_iter(vec![
                ("k", Arc::new(Int64Array::from(keys)) as ArrayRef),
                ("i", Arc::new(Int64Array::from(ints))),
                ("f", Arc::new(Float64Array::from(floats))),
            ])
            .unwrap();
            let spec = GroupBySpec {
                keys: vec!["k".into()],
                aggs: vec![agg("i", AggFunc::Sum), agg("f", AggFunc::Mean)],
            };
            let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
            let mut got = std::collections::BTreeMap::new();
            for r in 0..out.num_rows() {
                let k = out.column(0).as_primitive::<Int64Type>().value(r);
                let i = out.column(1).as_primitive::<Int64Type>().value(r);
                let m = out.column(2).as_primitive::<Float64Type>().value(r);
                got.insert(k, (i, m));
            }
            let want: std::collections::BTreeMap<i64, (i64, f64)> = want
                .into_iter()
                .map(|(k, (i, f, c))| (k, (i, f / c as f64)))
                .collect();
            assert_eq!(got, want, "sorted keys: {sorted}");
        }
    }

    /// Partials of any split of the rows, merged flat or as a tree, give the partial of the
    /// whole (first/last across chunks included).
    #[test]
    fn merge_of_any_split_matches_naive() {
        let mut rng = Rng(2);
        for round in 0..6 {
            let n = 400;
            let batch = random_batch(&mut rng, n);
            let mut cuts: Vec<usize> = (0..round + 1)
                .map(|_| rng.below(n as u64) as usize)
                .collect();
            cuts.extend([0, n]);
            cuts.sort();
            for keys in KEY_SETS {
                let spec = spec(keys);
                let parts: Vec<RecordBatch> = cuts
                    .windows(2)
                    .map(|w| partial(&spec, &batch.slice(w[0], w[1] - w[0])).unwrap())
                    .collect();
                let want = naive(&spec, &batch);
                let flat = merge(&spec, &parts).unwrap();
                assert_same(
                    &finalize(&spec, &flat).unwrap(),
                    &want,
                    &format!("flat {keys:?}"),
                );
                let half = parts.len() / 2;
                let tree = [
                    merge(&spec, &parts[..half.max(1)]).unwrap(),
                    merge(&spec, &parts[half.max(1)..]).unwrap_or_else(|_| parts[0].slice(0, 0)),
                ];
                let tree = merge(&spec, &tree).unwrap();
                assert_same(
                    &finalize(&spec, &tree).unwrap(),
                    &want,
                    &format!("tree {keys:?}"),
                );
            }
        }
    }

    #[test]
    fn empty_batches() {
        let batch = random_batch(&mut Rng(3), 0);
        for keys in KEY_SETS {
            let spec = spec(keys);
            let p = partial(&spec, &batch).unwrap();
            let merged = merge(&spec, &[p.clone(), p]).unwrap();
            let out = finalize(&spec, &merged).unwrap();
            assert_same(&out, &naive(&spec, &batch), &format!("{keys:?}"));
            assert_eq!(out.num_rows(), usize::from(keys.is_empty()));
        }
        // Zero keys and zero aggregations: still one row.
        let spec = GroupBySpec {
            keys: vec![],
            aggs: vec![],
        };
        let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
        assert_eq!((out.num_rows(), out.num_columns()), (1, 0));
    }

    fn agg(column: &str, func: AggFunc) -> AggSpec {
        AggSpec {
            column: column.to_string(),
            func,
            output: func.name().to_string(),
        }
    }

    /// Hand-computed values: an all-null group, a one-value group, wrapping, NaN skipped.
    #[test]
    fn hand_computed_groups() {
        let k: ArrayRef = Arc::new(StringArray::from(vec![
            Some("a"),
            Some("b"),
            Some("a"),
            None,
            Some("c"),
            Some("c"),
            Some("a"),
        ]));
        let v: ArrayRef = Arc::new(Float64Array::from(vec![
            None,
            Some(2.0),
            None,
            Some(100.0),
            Some(1.0),
            Some(f64::NAN),
            None,
        ]));
        let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
        let funcs = [
            AggFunc::Sum,
            AggFunc::Mean,
            AggFunc::Var,
            AggFunc::Std,
            AggFunc::Count,
            AggFunc::Size,
            AggFunc::Min,
            AggFunc::NUnique,
        ];
        let spec = GroupBySpec {
            keys: vec!["k".into()],
            aggs: funcs.iter().map(|&f| agg("v", f)).collect(),
        };
        let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
        use Val::*;
        let want = vec![
            vec![
                S("a".into()),
                F(0.0),
                Null,
                Null,
                Null,
                I(0),
                I(3),
                Null,
                I(0),
            ],
            vec![
                S("b".into()),
                F(2.0),
                F(2.0),
                Null,
                Null,
                I(1),
                I(1),
                F(2.0),
                I(1),
            ],
            vec![
                S("c".into()),
                F(1.0),
                F(1.0),
                Null,
                Null,
                I(1),
                I(2),
                F(1.0),
                I(1),
            ],
        ];
        assert_same(&out, &want, "hand");

        let v: ArrayRef = Arc::new(Int64Array::from(vec![i64::MAX, 1, 2, 4]));
        let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 2, 2]));
        let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
        let spec = GroupBySpec {
            keys: vec!["k".into()],
            aggs: vec![
                agg("v", AggFunc::Sum),
                agg("v", AggFunc::Var),
                agg("v", AggFunc::Std),
            ],
        };
        let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
        assert_same(
            &out,
            &[
                vec![
                    I(1),
                    I(i64::MIN),
                    F(4.253529586511731e37),
                    F(6.521908912666392e18),
                ],
                vec![I(2), I(6), F(2.0), F(2f64.sqrt())],
            ],
            "wrap",
        );
    }

    /// Var of values with a large mean and a tiny spread, merged from many partials: the
    /// states keep it exact where sum-of-squares would not.
    #[test]
    fn var_is_numerically_stable() {
        let values: Vec<f64> = (0..1000).map(|i| 1e9 + (i % 10) as f64).collect();
        let v: ArrayRef = Arc::new(Float64Array::from(values.clone()));
        let batch = RecordBatch::try_from_iter([("v", v)]).unwrap();
        let spec = GroupBySpec {
            keys: vec![],
            aggs: vec![agg("v", AggFunc::Var)],
        };
        let parts: Vec<RecordBatch> = (0..10)
            .map(|i| partial(&spec, &batch.slice(i * 100, 100)).unwrap())
            .collect();
        let out = finalize(&spec, &merge(&spec, &parts).unwrap()).unwrap();
        let mean = values.iter().sum::<f64>() / 1000.0;
        let want = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 999.0;
        let got = out.column(0).as_primitive::<Float64Type>().value(0);
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }

    #[test]
    fn typed_errors() {
        let batch = random_batch(&mut Rng(4), 10);
        let schema = batch.schema();
        let bad = |spec: GroupBySpec| {
            let e = spec.output_schema(&schema).unwrap_err();
            assert_eq!(partial(&spec, &batch).unwrap_err(), e);
            e
        };
        let e = bad(GroupBySpec {
            keys: vec!["nope".into()],
            aggs: vec![],
        });
        assert!(matches!(e, FrameError::ColumnNotFound { name, .. } if name == "nope"));
        let e = bad(GroupBySpec {
            keys: vec![],
            aggs: vec![agg("missing", AggFunc::Sum)],
        });
        assert!(matches!(e, FrameError::ColumnNotFound { .. }));
        for f in [AggFunc::Sum, AggFunc::Mean, AggFunc::Std, AggFunc::Var] {
            let e = bad(GroupBySpec {
                keys: vec![],
                aggs: vec![agg("v_str", f)],
            });
            assert!(matches!(e, FrameError::TypeMismatch(_)), "{f:?}");
        }
        let e = bad(GroupBySpec {
            keys: vec!["k_int".into()],
            aggs: vec![agg("v_int", AggFunc::Sum), agg("v_f", AggFunc::Sum)],
        });
        assert!(matches!(e, FrameError::InvalidArgument(_)));
        let e = bad(GroupBySpec {
            keys: vec!["k_int".into()],
            aggs: vec![AggSpec {
                column: "v_int".into(),
                func: AggFunc::Sum,
                output: "k_int".into(),
            }],
        });
        assert!(matches!(e, FrameError::InvalidArgument(_)));
        // Size ignores its column.
        let size = GroupBySpec {
            keys: vec![],
            aggs: vec![agg("whatever", AggFunc::Size)],
        };
        assert_eq!(
            finalize(&size, &partial(&size, &batch).unwrap())
                .unwrap()
                .column(0)
                .as_primitive::<Int64Type>()
                .value(0),
            10
        );
        // merge and finalize check the partial tables.
        let spec = spec(&["k_int"]);
        assert!(matches!(
            merge(&spec, &[]),
            Err(FrameError::InvalidArgument(_))
        ));
        assert!(matches!(
            finalize(&spec, &batch),
            Err(FrameError::InvalidArgument(_))
        ));
        let other = partial(&self::spec(&["k_str"]), &batch).unwrap();
        assert!(merge(&spec, &[partial(&spec, &batch).unwrap(), other]).is_err());
    }

    #[test]
    fn names() {
        let names: Vec<&str> = ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "sum", "mean", "min", "max", "count", "size", "std", "var", "first", "last",
                "nunique"
            ]
        );
    }
}
