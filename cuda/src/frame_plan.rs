//! The pure parts of a groupby partial on a CUDA device (`frame.cu`, driven by the
//! `Gpu`): which specs and column types the device kernels take ([`GroupPlan::new`]), the
//! aggregation launches they need, and the partial table built from what they computed
//! ([`GroupPlan::assemble`]), the same table `frame::groupby::partial` returns.
//!
//! The device takes key columns of integer, string, temporal, boolean and dictionary of
//! strings types (rows with a null key are dropped) and `sum`, `mean`, `count`, `size`, `min` and `max` over integer and float
//! columns (nulls and NaNs skipped); anything else stays on the CPU. Groups come out in
//! order of first appearance and integer states are exact. Float sums (and means) are
//! added in the order the device's atomics run, so they agree with the CPU's
//! left-to-right sums to rounding, not bit for bit, and may differ from run to run; a
//! float `min` or `max` of `-0.0` and `0.0` is `-0.0` and `0.0` respectively.

use arrow::array::{Array, ArrayRef, AsArray, Float32Array, Float64Array, Int64Array, UInt64Array};
use arrow::buffer::NullBuffer;
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use std::collections::HashSet;
use std::sync::Arc;
use tessera_kernels::frame::error::{FrameError, FrameResult};
use tessera_kernels::frame::groupby::{AggFunc, GroupBySpec};
use tessera_kernels::frame::schema::column_index;

/// How `frame.cu` reads a column (its `TS_COL_*` codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub enum ColKind {
    /// `Int8`.
    I8 = 0,
    /// `Int16`.
    I16 = 1,
    /// `Int32`.
    I32 = 2,
    /// `Int64`.
    I64 = 3,
    /// `UInt8`.
    U8 = 4,
    /// `UInt16`.
    U16 = 5,
    /// `UInt32`.
    U32 = 6,
    /// `UInt64` (compared by its bits; a key only).
    U64 = 7,
    /// `Float32` (a value only).
    F32 = 8,
    /// `Float64` (a value only).
    F64 = 9,
    /// `Utf8` (`i32` offsets; a key only).
    Utf8 = 10,
    /// `LargeUtf8` (`i64` offsets; a key only).
    LargeUtf8 = 11,
    /// `Boolean`, its bits packed from bit 0 of the first byte (a filter's operand or a
    /// groupby key, read as 0 or 1: `ColKind::of` gives no kind for it, so no join key
    /// or aggregate takes it).
    Bool = 12,
}

/// Which array of a table column a kernel reads: the column itself, or for a dictionary
/// its keys (one per row), its values (one per entry) or its canonical keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColPart {
    /// The column's rows.
    Rows,
    /// A dictionary column's keys.
    DictKeys,
    /// A dictionary column's values.
    DictValues,
    /// A dictionary of strings' keys made to name each string once (`canonical_keys`):
    /// `Int64`, computed on the host (once per chunk: the device copy is kept).
    DictCanonical,
}

impl ColPart {
    /// `part` of `column`, or `None` for a dictionary part of a column that is none.
    pub fn of(self, column: &ArrayRef) -> Option<ArrayRef> {
        match self {
            ColPart::Rows => Some(Arc::clone(column)),
            ColPart::DictKeys => column
                .as_any_dictionary_opt()
                .map(|d| arrow::array::make_array(d.keys().to_data())),
            ColPart::DictValues => column
                .as_any_dictionary_opt()
                .map(|d| Arc::clone(d.values())),
            ColPart::DictCanonical => canonical_keys(column),
        }
    }

    /// The type of `part` of `column` (without computing it), or `None` as for [`ColPart::of`].
    pub fn data_type(self, column: &ArrayRef) -> Option<DataType> {
        let dictionary = || match column.data_type() {
            DataType::Dictionary(key, value) => Some((key.as_ref(), value.as_ref())),
            _ => None,
        };
        match self {
            ColPart::Rows => Some(column.data_type().clone()),
            ColPart::DictKeys => dictionary().map(|(k, _)| k.clone()),
            ColPart::DictValues => dictionary().map(|(_, v)| v.clone()),
            ColPart::DictCanonical => dictionary().map(|_| DataType::Int64),
        }
    }
}

impl ColKind {
    /// The kind of a column of type `dt`, if the device kernels read that type.
    pub(crate) fn of(dt: &DataType) -> Option<ColKind> {
        Some(match dt {
            DataType::Int8 => ColKind::I8,
            DataType::Int16 => ColKind::I16,
            DataType::Int32 => ColKind::I32,
            DataType::Int64 => ColKind::I64,
            DataType::UInt8 => ColKind::U8,
            DataType::UInt16 => ColKind::U16,
            DataType::UInt32 => ColKind::U32,
            DataType::UInt64 => ColKind::U64,
            DataType::Float32 => ColKind::F32,
            DataType::Float64 => ColKind::F64,
            DataType::Utf8 => ColKind::Utf8,
            DataType::LargeUtf8 => ColKind::LargeUtf8,
            _ => return None,
        })
    }

    /// A key column's kind: integers and strings.
    pub fn key(dt: &DataType) -> Option<ColKind> {
        ColKind::of(dt).filter(|k| !matches!(k, ColKind::F32 | ColKind::F64))
    }

    /// The kinds of a dictionary of strings' keys (an integer kind) and values (`Utf8` or
    /// `LargeUtf8`), or `None` for any other type.
    pub fn dictionary(dt: &DataType) -> Option<(ColKind, ColKind)> {
        let DataType::Dictionary(key, value) = dt else {
            return None;
        };
        let values = match value.as_ref() {
            DataType::Utf8 => ColKind::Utf8,
            DataType::LargeUtf8 => ColKind::LargeUtf8,
            _ => return None,
        };
        let keys =
            ColKind::key(key).filter(|k| !matches!(k, ColKind::Utf8 | ColKind::LargeUtf8))?;
        Some((keys, values))
    }

    /// The integer kind a temporal column (`Date32 Date64 Timestamp Time32 Time64
    /// Duration`) is stored as, compared and hashed by: its values are plain `i32` or
    /// `i64` counts of a unit.
    pub fn temporal(dt: &DataType) -> Option<ColKind> {
        match dt {
            DataType::Date32 | DataType::Time32(_) => Some(ColKind::I32),
            DataType::Date64
            | DataType::Timestamp(..)
            | DataType::Time64(_)
            | DataType::Duration(_) => Some(ColKind::I64),
            _ => None,
        }
    }

    /// An aggregated column's kind: integers (not `UInt64`) and floats.
    pub fn value(dt: &DataType) -> Option<ColKind> {
        ColKind::of(dt).filter(|k| !matches!(k, ColKind::U64 | ColKind::Utf8 | ColKind::LargeUtf8))
    }

    /// Whether the values are floats.
    pub fn is_float(self) -> bool {
        matches!(self, ColKind::F32 | ColKind::F64)
    }
}

/// One state word per group, as `frame.cu`'s `TS_AGG_*` codes compute it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum AggCode {
    /// Wrapping `i64` sum of integers.
    SumInt = 0,
    /// `f64` sum (of floats, or of integers converted).
    SumFloat = 1,
    /// Non-null, non-NaN values.
    Count = 2,
    /// Rows.
    Size = 3,
    /// Least integer.
    MinInt = 4,
    /// Greatest integer.
    MaxInt = 5,
    /// Least float, as an order-preserving `i64` of its bits.
    MinFloat = 6,
    /// Greatest float, likewise.
    MaxFloat = 7,
}

impl AggCode {
    /// The word a group without values keeps.
    pub fn identity(self) -> u64 {
        match self {
            AggCode::MinInt | AggCode::MinFloat => i64::MAX as u64,
            AggCode::MaxInt | AggCode::MaxFloat => i64::MIN as u64,
            _ => 0,
        }
    }
}

/// One aggregation launch: `code` over input column `column` (`None` for `size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AggLaunch {
    /// The input column (index into the batch), if any.
    pub column: Option<usize>,
    /// What is folded.
    pub code: AggCode,
}

/// A groupby partial the device kernels can compute.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPlan {
    /// The key columns (indices into the batch), the part of each the device reads (a
    /// dictionary's keys, else its rows) and how.
    pub keys: Vec<(usize, ColPart, ColKind)>,
    /// The distinct launches, in first-needed order.
    pub launches: Vec<AggLaunch>,
    /// Per aggregation of the spec, how its states are built.
    aggs: Vec<PlannedAgg>,
}

/// An aggregation's input column and kind (`None` for `size`), its function, and the
/// launches (indices into [`GroupPlan::launches`]) its states are built from.
type PlannedAgg = (Option<(usize, ColKind)>, AggFunc, Vec<usize>);

/// Whether a dictionary column's entries are distinct strings, none of them null.
/// A dictionary of strings' keys, each replaced by the index of the first entry holding
/// its string, as `Int64`, and null where the key or its entry is null: equal keys are
/// then equal strings, as the CPU groups them. `None` for any other column.
pub(crate) fn canonical_keys(column: &ArrayRef) -> Option<ArrayRef> {
    let dictionary = column.as_any_dictionary_opt()?;
    let values = dictionary.values();
    let strings: Vec<Option<&str>> = match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
        _ => return None,
    };
    let mut first = std::collections::HashMap::with_capacity(strings.len());
    let canonical: Vec<Option<i64>> = strings
        .iter()
        .enumerate()
        .map(|(entry, s)| s.map(|s| *first.entry(s).or_insert(entry as i64)))
        .collect();
    let keys = cast(dictionary.keys(), &DataType::Int64).ok()?;
    let keys: Int64Array = keys
        .as_primitive::<arrow::datatypes::Int64Type>()
        .iter()
        .map(|k| {
            k.and_then(|k| usize::try_from(k).ok())
                .and_then(|k| canonical.get(k).copied().flatten())
        })
        .collect();
    Some(Arc::new(keys))
}

fn distinct_entries(column: &ArrayRef) -> bool {
    let Some(values) = column.as_any_dictionary_opt().map(|d| d.values()) else {
        return false;
    };
    if values.null_count() > 0 {
        return false;
    }
    let mut seen = HashSet::with_capacity(values.len());
    match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().all(|v| seen.insert(v)),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().all(|v| seen.insert(v)),
        _ => false,
    }
}

/// Float `min` / `max` words back to the value (the order-preserving map is its own inverse).
fn unordered(w: u64) -> f64 {
    let b = w as i64;
    f64::from_bits((b ^ ((b >> 63) & i64::MAX)) as u64)
}

impl GroupPlan {
    /// The plan for `spec` over a batch of `schema`, or `None` where a key or an
    /// aggregation has no device kernel (or there are no keys), so the CPU computes it.
    /// Names and types are checked by the CPU's `partial_schema` first (its errors).
    pub fn new(spec: &GroupBySpec, schema: &Schema) -> FrameResult<Option<GroupPlan>> {
        spec.partial_schema(schema)?;
        if spec.keys.is_empty() {
            return Ok(None);
        }
        let mut keys = Vec::new();
        for k in &spec.keys {
            let at = column_index(schema, k)?;
            // A temporal key groups by its integer, a boolean by 0 or 1, and a dictionary
            // of strings by its keys (where its entries are distinct: `takes`); the
            // partial's key column is taken from the input, so it keeps its type.
            let dt = schema.field(at).data_type();
            let key = match ColKind::dictionary(dt) {
                Some((keys, _)) => Some((ColPart::DictKeys, keys)),
                None if *dt == DataType::Boolean => Some((ColPart::Rows, ColKind::Bool)),
                None => ColKind::key(dt)
                    .or_else(|| ColKind::temporal(dt))
                    .map(|k| (ColPart::Rows, k)),
            };
            match key {
                Some((part, kind)) => keys.push((at, part, kind)),
                None => return Ok(None),
            }
        }
        let mut plan = GroupPlan {
            keys,
            launches: Vec::new(),
            aggs: Vec::new(),
        };
        for agg in &spec.aggs {
            let input = match agg.func {
                AggFunc::Size => None,
                _ => {
                    let at = column_index(schema, &agg.column)?;
                    match ColKind::value(schema.field(at).data_type()) {
                        Some(kind) => Some((at, kind)),
                        None => return Ok(None),
                    }
                }
            };
            let float = input.is_some_and(|(_, k)| k.is_float());
            let codes: &[AggCode] = match (agg.func, float) {
                (AggFunc::Sum, false) => &[AggCode::SumInt],
                (AggFunc::Sum, true) => &[AggCode::SumFloat],
                (AggFunc::Mean, _) => &[AggCode::SumFloat, AggCode::Count],
                (AggFunc::Count, _) => &[AggCode::Count],
                (AggFunc::Size, _) => &[AggCode::Size],
                (AggFunc::Min, false) => &[AggCode::MinInt, AggCode::Count],
                (AggFunc::Max, false) => &[AggCode::MaxInt, AggCode::Count],
                (AggFunc::Min, true) => &[AggCode::MinFloat, AggCode::Count],
                (AggFunc::Max, true) => &[AggCode::MaxFloat, AggCode::Count],
                _ => return Ok(None),
            };
            let used = codes
                .iter()
                .map(|&code| plan.launch(input.map(|(at, _)| at), code))
                .collect();
            plan.aggs.push((input, agg.func, used));
        }
        Ok(Some(plan))
    }

    /// The key columns the device reads for `batch` (each column's index, part and kind),
    /// or `None` where the kernels do not take it: it has no rows (an empty one is the
    /// CPU's) or 2^30 or more (row numbers would pass the hash table's slots). A dictionary
    /// key is read as its keys where its entries are distinct and not null, so that they
    /// stand for its strings as the CPU groups them, and otherwise as its canonical keys
    /// (`canonical_keys`).
    pub fn keys_for(&self, batch: &RecordBatch) -> Option<Vec<(usize, ColPart, ColKind)>> {
        let rows = batch.num_rows();
        if rows == 0 || rows >= (1 << 30) {
            return None;
        }
        Some(
            self.keys
                .iter()
                .map(|&(at, part, kind)| match part {
                    ColPart::DictKeys if !distinct_entries(batch.column(at)) => {
                        (at, ColPart::DictCanonical, ColKind::I64)
                    }
                    _ => (at, part, kind),
                })
                .collect(),
        )
    }

    /// The index of launch `(column, code)`, added when new.
    fn launch(&mut self, column: Option<usize>, code: AggCode) -> usize {
        let want = AggLaunch { column, code };
        match self.launches.iter().position(|l| *l == want) {
            Some(i) => i,
            None => {
                self.launches.push(want);
                self.launches.len() - 1
            }
        }
    }

    /// The partial table of `spec` over `batch`, from the first row of each group (in
    /// group order) and each launch's word per group.
    pub fn assemble(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
        first_rows: &[i64],
        words: &[Vec<u64>],
    ) -> FrameResult<RecordBatch> {
        let groups = first_rows.len();
        if words.len() != self.launches.len() || words.iter().any(|w| w.len() != groups) {
            return Err(FrameError::InvalidArgument(format!(
                "a device groupby returned {} state columns for {} launches of {groups} groups",
                words.len(),
                self.launches.len()
            )));
        }
        let schema = Arc::new(spec.partial_schema(batch.schema_ref())?);
        let rows = UInt64Array::from_iter_values(first_rows.iter().map(|&r| r as u64));
        let mut columns = Vec::with_capacity(schema.fields().len());
        for &(at, _, _) in &self.keys {
            columns.push(take(batch.column(at), &rows, None)?);
        }
        for (input, func, used) in &self.aggs {
            let word = |k: usize| &words[used[k]];
            let as_i64 = |k: usize| Int64Array::from_iter_values(word(k).iter().map(|&w| w as i64));
            match func {
                AggFunc::Sum | AggFunc::Count | AggFunc::Size => {
                    let float = input.is_some_and(|(_, k)| k.is_float());
                    columns.push(if float && *func == AggFunc::Sum {
                        Arc::new(Float64Array::from_iter_values(
                            word(0).iter().map(|&w| f64::from_bits(w)),
                        ))
                    } else {
                        Arc::new(as_i64(0))
                    });
                }
                AggFunc::Mean => {
                    columns.push(Arc::new(Float64Array::from_iter_values(
                        word(0).iter().map(|&w| f64::from_bits(w)),
                    )));
                    columns.push(Arc::new(as_i64(1)));
                }
                AggFunc::Min | AggFunc::Max => {
                    let (at, kind) = input.ok_or_else(|| {
                        FrameError::InvalidArgument("min or max without a column".into())
                    })?;
                    let seen = NullBuffer::from_iter(word(1).iter().map(|&c| c > 0));
                    let dt = batch.column(at).data_type();
                    columns.push(extreme_column(word(0), kind, dt, seen)?);
                }
                _ => {
                    return Err(FrameError::InvalidArgument(format!(
                        "{} has no device kernel",
                        func.name()
                    )))
                }
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(groups));
        Ok(RecordBatch::try_new_with_options(
            schema, columns, &options,
        )?)
    }
}

/// A `min` / `max` state column of type `dt` from its words (null where `seen` is not).
fn extreme_column(
    words: &[u64],
    kind: ColKind,
    dt: &DataType,
    seen: NullBuffer,
) -> FrameResult<ArrayRef> {
    let value = |i: usize, w: u64| if seen.is_valid(i) { w } else { 0 };
    let words = words.iter().enumerate().map(|(i, &w)| value(i, w));
    let nulls = Some(seen.clone()).filter(|n| n.null_count() > 0);
    Ok(match kind {
        ColKind::F64 => Arc::new(Float64Array::new(words.map(unordered).collect(), nulls)),
        ColKind::F32 => Arc::new(Float32Array::new(
            words.map(|w| unordered(w) as f32).collect(),
            nulls,
        )),
        // Every valid word is a value of `dt`, so the cast is exact.
        _ => cast(
            &Int64Array::new(words.map(|w| w as i64).collect(), nulls),
            dt,
        )?,
    })
}

/// Tables and checks shared by these tests and the GPU suite.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use arrow::array::{
        Array, Float32Array, Int32Array, Int8Array, LargeStringArray, StringArray, UInt64Array,
    };
    use arrow::datatypes::Field;
    use tessera_kernels::frame::groupby::AggSpec;

    /// `func` of `column`, named `{column}_{func}`.
    pub(crate) fn agg(column: &str, func: AggFunc) -> AggSpec {
        AggSpec {
            column: column.into(),
            func,
            output: format!("{column}_{}", func.name()),
        }
    }

    /// Groupbys of [`sample_batch`]: each key type alone and together, with every
    /// aggregation the device computes over every value column, and `size`.
    pub(crate) fn sample_specs() -> Vec<GroupBySpec> {
        let every = |col: &str| {
            [
                AggFunc::Sum,
                AggFunc::Mean,
                AggFunc::Count,
                AggFunc::Min,
                AggFunc::Max,
            ]
            .map(|f| agg(col, f))
        };
        let mut aggs: Vec<AggSpec> = ["v", "f", "g", "small"]
            .iter()
            .flat_map(|c| every(c))
            .collect();
        aggs.push(AggSpec {
            column: String::new(),
            func: AggFunc::Size,
            output: "rows".into(),
        });
        let keys: [&[&str]; 14] = [
            &["id"],
            &["name"],
            &["big"],
            &["wide"],
            &["many"],
            &["name", "id"],
            &["big", "wide", "id"],
            &["many", "name"],
            &["day"],
            &["ts", "name"],
            &["cat"],
            &["cat", "id"],
            &["flag"],
            &["flag", "name"],
        ];
        keys.iter()
            .map(|k| GroupBySpec {
                keys: k.iter().map(|s| s.to_string()).collect(),
                aggs: aggs.clone(),
            })
            .collect()
    }

    /// A `Dictionary(Int16, Utf8)` column of `n` rows over `entries`, a key null every
    /// ninth row.
    pub(crate) fn categories(n: usize, entries: &[&str]) -> ArrayRef {
        let keys: arrow::array::Int16Array = (0..n)
            .map(|i| (i % 9 != 4).then_some((i * 3 % entries.len()) as i16))
            .collect();
        let values = Arc::new(StringArray::from(entries.to_vec()));
        Arc::new(arrow::array::DictionaryArray::try_new(keys, values).unwrap())
    }

    /// [`sample_batch`] with its `cat` column replaced by `cat`.
    pub(crate) fn with_cat(batch: &RecordBatch, cat: ArrayRef) -> RecordBatch {
        let at = batch.schema().index_of("cat").unwrap();
        let mut columns = batch.columns().to_vec();
        columns[at] = cat;
        RecordBatch::try_new(batch.schema(), columns).unwrap()
    }

    /// A table of `n` rows: integer, string, 64-bit, date, timestamp, dictionary and
    /// boolean keys with nulls, a key of about `n / 3` values, and integer and float columns with nulls
    /// and NaNs.
    pub(crate) fn sample_batch(n: usize) -> RecordBatch {
        let id: Int32Array = (0..n)
            .map(|i| (i % 7 != 3).then_some((i * 37 % 11) as i32))
            .collect();
        let name: StringArray = (0..n).map(|i| Some(format!("k{}", i % 5))).collect();
        let big: LargeStringArray = (0..n)
            .map(|i| (i % 13 != 0).then(|| "x".repeat(i % 3 + 8)))
            .collect();
        let wide: UInt64Array = (0..n).map(|i| Some(u64::MAX - (i % 4) as u64)).collect();
        let v: arrow::array::Int64Array = (0..n)
            .map(|i| (i % 9 != 0).then_some(i as i64 * 1_000_003 - 50_000))
            .collect();
        let f: Float64Array = (0..n)
            .map(|i| match i % 10 {
                0 => None,
                1 => Some(f64::NAN),
                _ => Some((i as f64 * 0.37).sin() * 100.0),
            })
            .collect();
        let g: Float32Array = (0..n).map(|i| Some(i as f32 * -0.5)).collect();
        let small: Int8Array = (0..n).map(|i| Some((i % 200) as i8)).collect();
        let many: arrow::array::Int64Array = (0..n)
            .map(|i| Some((i as i64 * 7919) % (n as i64 / 3 + 1)))
            .collect();
        let day: arrow::array::Date32Array = (0..n)
            .map(|i| (i % 11 != 5).then_some(18_000 + (i * 13 % 29) as i32))
            .collect();
        let ts = arrow::array::TimestampMillisecondArray::from_iter(
            (0..n).map(|i| (i % 17 != 2).then_some(1_600_000_000_000 + (i % 6) as i64 * 3_600_000)),
        )
        .with_timezone("+02:00");
        let cat = categories(n, &["red", "", "green", "blue", "é"]);
        let flag: arrow::array::BooleanArray =
            (0..n).map(|i| (i % 7 != 1).then_some(i % 3 == 0)).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(id),
            Arc::new(name),
            Arc::new(big),
            Arc::new(wide),
            Arc::new(v),
            Arc::new(f),
            Arc::new(g),
            Arc::new(small),
            Arc::new(many),
            Arc::new(day),
            Arc::new(ts),
            cat,
            Arc::new(flag),
        ];
        let fields: Vec<Field> = [
            "id", "name", "big", "wide", "v", "f", "g", "small", "many", "day", "ts", "cat", "flag",
        ]
        .iter()
        .zip(&columns)
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), true))
        .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// Asserts two partial tables are equal: float columns to 1e-9 relative (equal
    /// infinities and NaN with NaN too), the rest exactly.
    pub(crate) fn assert_same(got: &RecordBatch, want: &RecordBatch) {
        assert_eq!(got.schema(), want.schema());
        assert_eq!(got.num_rows(), want.num_rows());
        for (c, (a, b)) in got.columns().iter().zip(want.columns()).enumerate() {
            match (
                a.as_any().downcast_ref::<Float64Array>(),
                b.as_any().downcast_ref::<Float64Array>(),
            ) {
                (Some(a), Some(b)) => {
                    assert_eq!(a.nulls(), b.nulls(), "column {c}");
                    for (x, y) in a.iter().zip(b.iter()) {
                        let (x, y) = (x.unwrap_or(0.0), y.unwrap_or(0.0));
                        assert!(
                            x == y
                                || (x - y).abs() <= 1e-9 * y.abs().max(1.0)
                                || (x.is_nan() && y.is_nan()),
                            "column {c}: {x} {y}"
                        );
                    }
                }
                _ => assert_eq!(a, b, "column {c}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{agg, assert_same, categories, sample_batch, sample_specs, with_cat};
    use super::*;
    use arrow::array::Array;
    use arrow::util::display::array_value_to_string;
    use std::collections::HashMap;
    use tessera_kernels::frame::groupby::{partial, AggSpec};

    /// The device's words, computed the simple way: each row in order.
    /// Groups by the values of the key parts the device reads (`keys_for`).
    fn simulate(plan: &GroupPlan, batch: &RecordBatch) -> (Vec<i64>, Vec<Vec<u64>>) {
        let mut group_of: HashMap<Vec<String>, usize> = HashMap::new();
        let mut first_rows = Vec::new();
        let mut groups = Vec::new();
        let read: Vec<ArrayRef> = plan
            .keys_for(batch)
            .unwrap()
            .iter()
            .map(|&(at, part, _)| part.of(batch.column(at)).unwrap())
            .collect();
        for i in 0..batch.num_rows() {
            let cols = read.iter();
            if cols.clone().any(|c| c.is_null(i)) {
                groups.push(None);
                continue;
            }
            let key: Vec<String> = cols.map(|c| array_value_to_string(c, i).unwrap()).collect();
            let next = group_of.len();
            let g = *group_of.entry(key).or_insert_with(|| {
                first_rows.push(i as i64);
                next
            });
            groups.push(Some(g));
        }
        let words = plan
            .launches
            .iter()
            .map(|l| {
                let mut w = vec![l.code.identity(); first_rows.len()];
                for (i, g) in groups.iter().enumerate() {
                    let Some(g) = *g else { continue };
                    let value = l.column.map(|c| batch.column(c));
                    let v = match value {
                        None => Some(1.0),
                        Some(c) if c.is_null(i) => None,
                        Some(c) => {
                            Some(array_value_to_string(c, i).unwrap().parse::<f64>().unwrap())
                        }
                    };
                    let Some(v) = v.filter(|v| !v.is_nan()) else {
                        continue;
                    };
                    let s = &mut w[g];
                    match l.code {
                        AggCode::SumInt => *s = (*s as i64).wrapping_add(v as i64) as u64,
                        AggCode::SumFloat => *s = (f64::from_bits(*s) + v).to_bits(),
                        AggCode::Count | AggCode::Size => *s += 1,
                        AggCode::MinInt => *s = (*s as i64).min(v as i64) as u64,
                        AggCode::MaxInt => *s = (*s as i64).max(v as i64) as u64,
                        AggCode::MinFloat | AggCode::MaxFloat => {
                            let b = v.to_bits() as i64;
                            let key = b ^ ((b >> 63) & i64::MAX);
                            *s = match l.code {
                                AggCode::MinFloat => (*s as i64).min(key),
                                _ => (*s as i64).max(key),
                            } as u64;
                        }
                    }
                }
                w
            })
            .collect();
        (first_rows, words)
    }

    #[test]
    fn the_device_words_assemble_into_the_cpu_partial() {
        let repeated = categories(300, &["red", "blue", "red", "green"]);
        for batch in [
            sample_batch(200),
            sample_batch(1000).slice(37, 900),
            with_cat(&sample_batch(300), repeated),
            with_cat(&sample_batch(300), null_entry(300)),
        ] {
            words_assemble_into_the_cpu_partial(&batch);
        }
    }

    /// A `Dictionary(Int16, Utf8)` column of `n` rows over `["red", null, "blue", "red"]`.
    fn null_entry(n: usize) -> ArrayRef {
        let values = Arc::new(arrow::array::StringArray::from(vec![
            Some("red"),
            None,
            Some("blue"),
            Some("red"),
        ]));
        let keys = arrow::array::Int16Array::from_iter_values((0..n).map(|i| (i % 4) as i16));
        Arc::new(arrow::array::DictionaryArray::try_new(keys, values).unwrap())
    }

    fn words_assemble_into_the_cpu_partial(batch: &RecordBatch) {
        for spec in sample_specs() {
            let plan = GroupPlan::new(&spec, batch.schema_ref()).unwrap().unwrap();
            // mean and count of one column share the count launch.
            assert!(plan.launches.len() < spec.aggs.len() * 2, "{:?}", spec.keys);
            let (first, words) = simulate(&plan, batch);
            let got = plan.assemble(&spec, batch, &first, &words).unwrap();
            assert_same(&got, &partial(&spec, batch).unwrap());
        }
    }

    #[test]
    fn a_dictionary_key_is_read_as_its_keys_where_its_entries_name_each_string_once() {
        let batch = sample_batch(200);
        let spec = GroupBySpec {
            keys: vec!["cat".into()],
            aggs: vec![agg("v", AggFunc::Sum)],
        };
        let plan = GroupPlan::new(&spec, batch.schema_ref()).unwrap().unwrap();
        assert_eq!(plan.keys, [(11, ColPart::DictKeys, ColKind::I16)]);
        assert_eq!(
            plan.keys_for(&batch),
            Some(vec![(11, ColPart::DictKeys, ColKind::I16)])
        );
        assert_eq!(plan.keys_for(&batch.slice(0, 0)), None);
        // Two keys naming "red" are one group on the CPU, and a key naming a null entry is
        // a null key: both read as canonical keys.
        let canonical = Some(vec![(11, ColPart::DictCanonical, ColKind::I64)]);
        let repeated = with_cat(&batch, categories(200, &["red", "blue", "red"]));
        assert_eq!(plan.keys_for(&repeated), canonical);
        let with_null = with_cat(&batch, null_entry(200));
        assert_eq!(plan.keys_for(&with_null), canonical);
        // By hand: entries [red, null, blue, red], keys 0 1 2 3 0 1 …: 0 null 2 0 0 null ….
        let keys = canonical_keys(with_null.column(11)).unwrap();
        let keys = keys.as_primitive::<arrow::datatypes::Int64Type>();
        let want: Vec<Option<i64>> = (0..200)
            .map(|i| [Some(0), None, Some(2), Some(0)][i % 4])
            .collect();
        assert_eq!(keys.iter().collect::<Vec<_>>(), want);
        assert_eq!(
            ColPart::DictCanonical.data_type(with_null.column(11)),
            Some(DataType::Int64)
        );
        // A null key stays null; another column has no canonical keys.
        let keys = canonical_keys(batch.column(11)).unwrap();
        assert_eq!(keys.null_count(), batch.column(11).null_count());
        assert!(canonical_keys(batch.column(0)).is_none());
        assert_eq!(ColPart::DictCanonical.data_type(batch.column(0)), None);
    }

    #[test]
    fn what_the_device_lacks_stays_on_the_cpu_and_bad_specs_are_the_cpus_errors() {
        let batch = sample_batch(200);
        let plan = |keys: &[&str], aggs: Vec<AggSpec>| {
            let spec = GroupBySpec {
                keys: keys.iter().map(|k| k.to_string()).collect(),
                aggs,
            };
            GroupPlan::new(&spec, batch.schema_ref())
        };
        assert_eq!(plan(&["f"], vec![agg("v", AggFunc::Sum)]).unwrap(), None);
        assert_eq!(plan(&[], vec![agg("v", AggFunc::Sum)]).unwrap(), None);
        assert_eq!(plan(&["id"], vec![agg("v", AggFunc::Std)]).unwrap(), None);
        assert_eq!(
            plan(&["id"], vec![agg("wide", AggFunc::Sum)]).unwrap(),
            None
        );
        assert_eq!(
            plan(&["id"], vec![agg("name", AggFunc::Max)]).unwrap(),
            None
        );
        assert!(matches!(
            plan(&["nope"], vec![agg("v", AggFunc::Sum)]),
            Err(FrameError::ColumnNotFound { .. })
        ));
        assert!(plan(&["id"], vec![agg("name", AggFunc::Sum)]).is_err());
        let p = plan(&["id"], vec![agg("v", AggFunc::Sum)])
            .unwrap()
            .unwrap();
        assert!(p
            .assemble(
                &GroupBySpec {
                    keys: vec!["id".into()],
                    aggs: vec![agg("v", AggFunc::Sum)]
                },
                &batch,
                &[0],
                &[]
            )
            .is_err());
    }
}
