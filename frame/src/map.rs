//! The fused row-wise steps of one chunk: filters, new columns, selections, drops and
//! renames, applied in order to a `RecordBatch` by [`apply_steps`], with the schema they
//! produce known in advance from [`steps_schema`].
//!
//! A filter followed by other steps filters only the columns that those steps read or
//! that reach the output; the others are dropped at the filter instead of being copied.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, UInt32Array};
use arrow::compute::kernels::boolean::and;
use arrow::compute::{filter, filter_record_batch, prep_null_mask_filter};
use arrow::datatypes::{DataType, Field, FieldRef, Schema, UInt32Type};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use serde::{Deserialize, Serialize};

use super::error::{FrameError, FrameResult};
use super::expr::{BinaryOperator, Expr};
use super::schema::column_index;

/// The rows of `over` where `predicate` is true (null counts as false).
///
/// The conjuncts of `a & b & c` are evaluated in order; where those so far dropped half
/// the rows or more and the ones left are large ([`NARROW_FOR_SIZE`]), the rows are
/// narrowed to those kept first: TPC-H Q19 keeps one lineitem row in seven by its ship
/// mode, then tests three ranges of quantities (six decimal comparisons) on that seventh
/// only. Cheap conjuncts are all evaluated on every row and their answers combined:
/// narrowing the rows for a few comparisons cost more than it saved (Q6, Q12).
fn filter_mask(predicate: &Expr, over: &RecordBatch) -> FrameResult<BooleanArray> {
    let mut conjuncts = Vec::new();
    conjuncts_of(predicate, &mut conjuncts);
    let mut current = over.clone();
    // The rows of `over` that `current` holds (`None`: all of them), and the conjuncts'
    // answers on them not yet applied.
    let mut rows: Option<UInt32Array> = None;
    let mut pending: Option<BooleanArray> = None;
    for (i, conjunct) in conjuncts.iter().enumerate() {
        let mask = conjunct.evaluate(&current)?;
        let mask = mask.as_boolean_opt().ok_or_else(|| {
            FrameError::TypeMismatch(format!(
                "a filter needs a Boolean predicate, `{predicate}` is {}",
                mask.data_type()
            ))
        })?;
        let mask = nulls_false(mask);
        let mask = match pending.take() {
            Some(before) => and(&before, &mask)?,
            None => mask,
        };
        let last = i + 1 == conjuncts.len();
        let later: usize = conjuncts[i + 1..].iter().map(|c| c.size()).sum();
        if !last && (mask.true_count() * 2 > mask.len() || later < NARROW_FOR_SIZE) {
            pending = Some(mask);
            continue;
        }
        if rows.is_none() && last {
            return Ok(mask);
        }
        let all = || UInt32Array::from_iter_values(0..current.num_rows() as u32);
        let kept = filter(&rows.take().unwrap_or_else(all), &mask)?;
        rows = Some(kept.as_primitive::<UInt32Type>().clone());
        if !last {
            // Only the columns the conjuncts after this one read.
            let later: HashSet<String> = conjuncts[i + 1..]
                .iter()
                .flat_map(|c| c.columns())
                .collect();
            let schema = current.schema();
            let needed: Vec<usize> = (0..schema.fields().len())
                .filter(|&c| later.contains(schema.field(c).name()))
                .collect();
            current = match needed.is_empty() {
                false => filter_record_batch(&current.project(&needed)?, &mask)?,
                true => {
                    let rows = RecordBatchOptions::new().with_row_count(Some(mask.true_count()));
                    RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &rows)?
                }
            };
        }
    }
    let mut out = BooleanBufferBuilder::new(over.num_rows());
    out.append_n(over.num_rows(), false);
    for row in rows.iter().flat_map(|r| r.values().iter()) {
        out.set_bit(*row as usize, true);
    }
    Ok(BooleanArray::new(out.finish(), None))
}

/// The size ([`Expr::size`]) of the conjuncts left for which the rows are narrowed to
/// those kept so far.
const NARROW_FOR_SIZE: usize = 16;

/// `mask` with its nulls false.
fn nulls_false(mask: &BooleanArray) -> BooleanArray {
    match mask.nulls() {
        Some(_) => prep_null_mask_filter(mask),
        None => mask.clone(),
    }
}

/// The conjuncts of `e` (`a & b & c` gives `a`, `b`, `c`), in order.
fn conjuncts_of<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Binary {
            op: BinaryOperator::And,
            left,
            right,
        } => {
            conjuncts_of(left, out);
            conjuncts_of(right, out);
        }
        e => out.push(e),
    }
}

/// One row-wise step on a frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MapStep {
    /// Keep the rows where the predicate is true (null counts as false, as in pandas boolean indexing).
    Filter(Expr),
    /// Add or replace a column.
    WithColumn {
        /// The column's name: an existing column is replaced in place, a new one appended.
        name: String,
        /// Its values.
        expr: Expr,
    },
    /// Keep these columns, in this order (expressions allowed: each named by its output_name).
    Select(Vec<Expr>),
    /// Remove these columns.
    Drop(Vec<String>),
    /// Rename columns (old, new), all at once (so `[(a, b), (b, a)]` swaps two names).
    Rename(Vec<(String, String)>),
}

/// A device's filter (see `ops::FrameDevice::filter`): the rows of `keep` where the
/// predicate, evaluated over `over` (a table of the same rows), is true; `None` leaves the
/// filter to the CPU.
pub type DeviceFilter<'a, E> =
    dyn Fn(&Expr, &RecordBatch, &RecordBatch) -> Result<Option<RecordBatch>, E> + 'a;

/// Applies `steps` in order to `batch`.
pub fn apply_steps(batch: &RecordBatch, steps: &[MapStep]) -> FrameResult<RecordBatch> {
    apply_steps_with(batch, steps, &|_, _, _| Ok(None))
}

/// [`apply_steps`], offering each filter to `device` first.
pub fn apply_steps_with<E: From<FrameError>>(
    batch: &RecordBatch,
    steps: &[MapStep],
    device: &DeviceFilter<'_, E>,
) -> Result<RecordBatch, E> {
    if steps.is_empty() {
        return Ok(batch.clone());
    }
    let live = live_after_filters(batch.schema_ref(), steps)?;
    let mut frame = Frame::new(batch);
    for (step, live) in steps.iter().zip(&live) {
        frame = frame.apply(step, live.as_ref(), device)?;
    }
    Ok(frame.into_batch(batch.schema_ref())?)
}

/// The schema after `steps` over an input of schema `input` (the same checks as
/// [`Expr::data_type`], plus [`FrameError::ColumnNotFound`] for a drop or rename of an unknown
/// column and [`FrameError::InvalidArgument`] for duplicate names after a select or rename).
pub fn steps_schema(input: &Schema, steps: &[MapStep]) -> FrameResult<Schema> {
    let mut fields: Vec<FieldRef> = input.fields().iter().cloned().collect();
    for step in steps {
        let schema = Schema::new(fields.clone());
        fields = match step {
            MapStep::Filter(predicate) => {
                check_predicate(predicate, &schema)?;
                fields
            }
            MapStep::WithColumn { name, expr } => {
                let field = expr_field(expr, &schema, name)?;
                with_field(fields, field)
            }
            MapStep::Select(exprs) => select_fields(exprs, &schema)?,
            MapStep::Drop(names) => kept_positions(&schema, names)?
                .into_iter()
                .filter_map(|i| fields.get(i).cloned())
                .collect(),
            MapStep::Rename(pairs) => renamed(&schema, pairs)?,
        };
    }
    Ok(Schema::new_with_metadata(fields, input.metadata().clone()))
}

/// Checks that `predicate` is a boolean expression over `schema`.
fn check_predicate(predicate: &Expr, schema: &Schema) -> FrameResult<()> {
    match predicate.data_type(schema)? {
        DataType::Boolean => Ok(()),
        dt => Err(FrameError::TypeMismatch(format!(
            "a filter needs a Boolean predicate, `{predicate}` is {dt}"
        ))),
    }
}

/// The field of column `name` computed by `expr`: a plain column keeps its field (nullability
/// and metadata), anything else is a new nullable field.
fn expr_field(expr: &Expr, schema: &Schema, name: &str) -> FrameResult<FieldRef> {
    let mut inner = expr;
    while let Expr::Alias { expr, .. } = inner {
        inner = expr;
    }
    if let Expr::Column(source) = inner {
        let field = schema.field(column_index(schema, source)?);
        return Ok(Arc::new(field.clone().with_name(name)));
    }
    Ok(Arc::new(Field::new(name, expr.data_type(schema)?, true)))
}

/// `fields` with `field` replacing the one of the same name, or appended.
fn with_field(mut fields: Vec<FieldRef>, field: FieldRef) -> Vec<FieldRef> {
    match fields.iter_mut().find(|f| f.name() == field.name()) {
        Some(slot) => *slot = field,
        None => fields.push(field),
    }
    fields
}

/// The fields a select of `exprs` produces.
fn select_fields(exprs: &[Expr], schema: &Schema) -> FrameResult<Vec<FieldRef>> {
    let fields = exprs
        .iter()
        .map(|e| expr_field(e, schema, &e.output_name()))
        .collect::<FrameResult<Vec<_>>>()?;
    check_unique(&fields, "select")?;
    Ok(fields)
}

/// The positions of the columns of `schema` that a drop of `names` keeps.
fn kept_positions(schema: &Schema, names: &[String]) -> FrameResult<Vec<usize>> {
    let dropped = names
        .iter()
        .map(|n| column_index(schema, n))
        .collect::<FrameResult<HashSet<_>>>()?;
    Ok((0..schema.fields().len())
        .filter(|i| !dropped.contains(i))
        .collect())
}

/// The fields of `schema` after renaming each `(old, new)` of `pairs`.
fn renamed(schema: &Schema, pairs: &[(String, String)]) -> FrameResult<Vec<FieldRef>> {
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    for (old, new) in pairs {
        let i = column_index(schema, old)?;
        let renamed = schema.field(i).clone().with_name(new);
        if let Some(slot) = fields.get_mut(i) {
            *slot = Arc::new(renamed);
        }
    }
    check_unique(&fields, "rename")?;
    Ok(fields)
}

/// [`FrameError::InvalidArgument`] if two of `fields` share a name.
fn check_unique(fields: &[FieldRef], step: &str) -> FrameResult<()> {
    let mut seen = HashSet::new();
    match fields.iter().find(|f| !seen.insert(f.name())) {
        Some(f) => Err(FrameError::InvalidArgument(format!(
            "duplicate column name {:?} after {step}",
            f.name()
        ))),
        None => Ok(()),
    }
}

/// For each step, the columns that later steps or the output need, if the step is a filter
/// (`None` for other steps). Also checks the whole pipeline against `input`.
fn live_after_filters(
    input: &Schema,
    steps: &[MapStep],
) -> FrameResult<Vec<Option<HashSet<String>>>> {
    let output = steps_schema(input, steps)?;
    let mut live: HashSet<String> = output.fields().iter().map(|f| f.name().clone()).collect();
    let mut out = Vec::with_capacity(steps.len());
    for step in steps.iter().rev() {
        out.push(matches!(step, MapStep::Filter(_)).then(|| live.clone()));
        live = live_before(step, live);
    }
    out.reverse();
    Ok(out)
}

/// The columns needed before `step` given those needed after it.
fn live_before(step: &MapStep, mut live: HashSet<String>) -> HashSet<String> {
    match step {
        MapStep::Filter(e) => live.extend(e.columns()),
        MapStep::WithColumn { name, expr } => {
            live.remove(name);
            live.extend(expr.columns());
        }
        MapStep::Select(exprs) => return exprs.iter().flat_map(Expr::columns).collect(),
        MapStep::Drop(_) => {}
        MapStep::Rename(pairs) => {
            return live
                .into_iter()
                .map(|name| match pairs.iter().find(|(_, new)| *new == name) {
                    Some((old, _)) => old.clone(),
                    None => name,
                })
                .collect()
        }
    }
    live
}

/// A batch between steps: every column keeps its field, but a column that no later step
/// needs may have lost its values (`None`) at a filter.
struct Frame {
    fields: Vec<FieldRef>,
    columns: Vec<Option<ArrayRef>>,
    rows: usize,
}

impl Frame {
    fn new(batch: &RecordBatch) -> Frame {
        Frame {
            fields: batch.schema_ref().fields().iter().cloned().collect(),
            columns: batch.columns().iter().cloned().map(Some).collect(),
            rows: batch.num_rows(),
        }
    }

    /// The schema of all columns, values or not.
    fn schema(&self) -> Schema {
        Schema::new(self.fields.clone())
    }

    /// The columns that have values, as a batch.
    fn live_batch(&self) -> FrameResult<RecordBatch> {
        let (fields, columns): (Vec<FieldRef>, Vec<ArrayRef>) = self
            .fields
            .iter()
            .zip(&self.columns)
            .filter_map(|(f, c)| Some((f.clone(), c.clone()?)))
            .unzip();
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            columns,
            &options,
        )?)
    }

    /// `step` applied; `live` names the columns needed after it if it is a filter, which
    /// `device` is offered first.
    fn apply<E: From<FrameError>>(
        self,
        step: &MapStep,
        live: Option<&HashSet<String>>,
        device: &DeviceFilter<'_, E>,
    ) -> Result<Frame, E> {
        match step {
            MapStep::Filter(predicate) => self.filter(predicate, live, device),
            MapStep::WithColumn { name, expr } => {
                let batch = self.live_batch()?;
                let values = expr.evaluate(&batch)?;
                let field = expr_field(expr, batch.schema_ref(), name)?;
                let mut frame = self;
                match frame.fields.iter().position(|f| f.name() == name) {
                    Some(i) => {
                        if let (Some(f), Some(c)) =
                            (frame.fields.get_mut(i), frame.columns.get_mut(i))
                        {
                            *f = field;
                            *c = Some(values);
                        }
                    }
                    None => {
                        frame.fields.push(field);
                        frame.columns.push(Some(values));
                    }
                }
                Ok(frame)
            }
            MapStep::Select(exprs) => {
                let batch = self.live_batch()?;
                let fields = select_fields(exprs, batch.schema_ref())?;
                let columns = exprs
                    .iter()
                    .map(|e| e.evaluate(&batch).map(Some))
                    .collect::<FrameResult<Vec<_>>>()?;
                Ok(Frame {
                    fields,
                    columns,
                    rows: self.rows,
                })
            }
            MapStep::Drop(names) => {
                let keep = kept_positions(&self.schema(), names)?;
                let pick =
                    |i: &usize| Some((self.fields.get(*i)?.clone(), self.columns.get(*i)?.clone()));
                let (fields, columns) = keep.iter().filter_map(pick).unzip();
                Ok(Frame {
                    fields,
                    columns,
                    rows: self.rows,
                })
            }
            MapStep::Rename(pairs) => Ok(Frame {
                fields: renamed(&self.schema(), pairs)?,
                ..self
            }),
        }
    }

    /// The rows where `predicate` is true, of the columns in `live` only (all if `None`):
    /// by `device` where it takes the filter, else by Arrow's kernels.
    fn filter<E: From<FrameError>>(
        self,
        predicate: &Expr,
        live: Option<&HashSet<String>>,
        device: &DeviceFilter<'_, E>,
    ) -> Result<Frame, E> {
        let over = self.live_batch()?;
        let kept: Vec<usize> = (0..self.fields.len())
            .filter(|&i| {
                let has_values = matches!(self.columns.get(i), Some(Some(_)));
                let field = self.fields.get(i);
                has_values && field.is_some_and(|f| live.is_none_or(|l| l.contains(f.name())))
            })
            .collect();
        let keep = self.project(&kept)?;
        let filtered = match device(predicate, &over, &keep)? {
            Some(filtered) => filtered,
            None => filter_record_batch(&keep, &filter_mask(predicate, &over)?)
                .map_err(FrameError::from)?,
        };
        let mut columns = vec![None; self.fields.len()];
        for (&i, values) in kept.iter().zip(filtered.columns()) {
            if let Some(slot) = columns.get_mut(i) {
                *slot = Some(values.clone());
            }
        }
        Ok(Frame {
            fields: self.fields,
            columns,
            rows: filtered.num_rows(),
        })
    }

    /// The columns at `positions` (all with values), as a batch.
    fn project(&self, positions: &[usize]) -> FrameResult<RecordBatch> {
        let frame = Frame {
            fields: positions
                .iter()
                .filter_map(|&i| self.fields.get(i).cloned())
                .collect(),
            columns: positions
                .iter()
                .filter_map(|&i| self.columns.get(i).cloned())
                .collect(),
            rows: self.rows,
        };
        frame.live_batch()
    }

    /// The final batch, with the metadata of `input`.
    fn into_batch(self, input: &Schema) -> FrameResult<RecordBatch> {
        let columns = self
            .fields
            .iter()
            .zip(self.columns)
            .map(|(f, c)| {
                c.ok_or_else(|| {
                    FrameError::InvalidArgument(format!(
                        "column {:?} was dropped by a filter",
                        f.name()
                    ))
                })
            })
            .collect::<FrameResult<Vec<_>>>()?;
        let schema = Schema::new_with_metadata(self.fields, input.metadata().clone());
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(schema),
            columns,
            &options,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::expr::{col, lit, Literal};
    use super::*;
    use arrow::array::{Float64Array, Int32Array, StringArray};
    use arrow::datatypes::{Float64Type, Int32Type, Int64Type};
    use std::collections::HashMap;

    /// a: Int32 [1, -2, 3, null, 5], b: Float64 [0.5, 1.5, 2.5, 3.5, 4.5] (a non-nullable
    /// field), s: Utf8 ["p", "q", "r", "s", "t"]; schema metadata origin = test.
    fn frame() -> RecordBatch {
        let schema = Schema::new_with_metadata(
            vec![
                Field::new("a", DataType::Int32, true),
                Field::new("b", DataType::Float64, false),
                Field::new("s", DataType::Utf8, true),
            ],
            HashMap::from([("origin".to_string(), "test".to_string())]),
        );
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int32Array::from(vec![
                    Some(1),
                    Some(-2),
                    Some(3),
                    None,
                    Some(5),
                ])),
                Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5, 4.5])),
                Arc::new(StringArray::from(vec!["p", "q", "r", "s", "t"])),
            ],
        )
        .unwrap()
    }

    /// Applies `steps`, checking the result's schema against `steps_schema`.
    fn run(batch: &RecordBatch, steps: &[MapStep]) -> RecordBatch {
        let out = apply_steps(batch, steps).unwrap();
        assert_eq!(
            out.schema().as_ref(),
            &steps_schema(batch.schema_ref(), steps).unwrap()
        );
        out
    }

    fn names(b: &RecordBatch) -> Vec<String> {
        b.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    fn int32s(b: &RecordBatch, name: &str) -> Vec<Option<i32>> {
        b.column_by_name(name)
            .unwrap()
            .as_primitive::<Int32Type>()
            .iter()
            .collect()
    }

    fn strs(b: &RecordBatch, name: &str) -> Vec<Option<String>> {
        let c = b.column_by_name(name).unwrap();
        c.as_string::<i32>()
            .iter()
            .map(|s| s.map(str::to_string))
            .collect()
    }

    fn error(batch: &RecordBatch, steps: &[MapStep]) -> FrameError {
        let err = steps_schema(batch.schema_ref(), steps).unwrap_err();
        assert_eq!(apply_steps(batch, steps).unwrap_err(), err);
        err
    }

    #[test]
    fn filter_then_with_column() {
        let steps = [
            MapStep::Filter(col("a").gt(0)),
            MapStep::WithColumn {
                name: "c".into(),
                expr: col("a") * col("b"),
            },
        ];
        let out = run(&frame(), &steps);
        assert_eq!(names(&out), ["a", "b", "s", "c"]);
        assert_eq!(int32s(&out, "a"), [Some(1), Some(3), Some(5)]);
        let c: Vec<_> = out
            .column(3)
            .as_primitive::<Float64Type>()
            .values()
            .to_vec();
        assert_eq!(c, [0.5, 7.5, 22.5]);
        assert_eq!(out.schema().metadata()["origin"], "test");
        // Null predicates drop the row; a non-null column keeps its field.
        assert!(!out.schema().field(1).is_nullable() && out.schema().field(3).is_nullable());
    }

    #[test]
    fn with_column_replaces_in_place() {
        let steps = [MapStep::WithColumn {
            name: "a".into(),
            expr: (col("a") + 1).cast(DataType::Int32),
        }];
        let out = run(&frame(), &steps);
        assert_eq!(names(&out), ["a", "b", "s"]);
        assert_eq!(
            int32s(&out, "a"),
            [Some(2), Some(-1), Some(4), None, Some(6)]
        );
    }

    #[test]
    fn select_drop_and_rename() {
        let steps = [
            MapStep::Select(vec![col("s"), (col("a") * 2).alias("twice"), col("a")]),
            MapStep::Rename(vec![("s".into(), "a".into()), ("a".into(), "s".into())]),
            MapStep::Drop(vec!["twice".into()]),
        ];
        let out = run(&frame(), &steps);
        assert_eq!(names(&out), ["a", "s"]);
        assert_eq!(
            strs(&out, "a")[..2],
            [Some("p".to_string()), Some("q".to_string())]
        );
        assert_eq!(
            int32s(&out, "s"),
            [Some(1), Some(-2), Some(3), None, Some(5)]
        );
    }

    #[test]
    fn filter_keeps_only_needed_columns_until_the_end() {
        let b = frame();
        // `s` is not needed after the filter (dropped later); `b` is renamed then read.
        let steps = [
            MapStep::Filter(col("a").ge(-2) & col("s").ne("r")),
            MapStep::Rename(vec![("b".into(), "x".into())]),
            MapStep::Drop(vec!["s".into()]),
            MapStep::Filter(col("x").lt(4)),
            MapStep::WithColumn {
                name: "y".into(),
                expr: col("x") - 1,
            },
        ];
        let out = run(&b, &steps);
        assert_eq!(names(&out), ["a", "x", "y"]);
        assert_eq!(int32s(&out, "a"), [Some(1), Some(-2)]);
        // A dead column replaced by a new one keeps its position.
        let steps = [
            MapStep::Filter(col("a").is_not_null()),
            MapStep::WithColumn {
                name: "b".into(),
                expr: lit("k"),
            },
            MapStep::Select(vec![col("b"), col("s")]),
        ];
        let out = run(&b, &steps);
        assert_eq!(strs(&out, "b"), vec![Some("k".to_string()); 4]);
        assert_eq!(
            strs(&out, "s"),
            ["p", "q", "r", "t"].map(|s| Some(s.to_string()))
        );
        // Only constants after a filter: the row count survives.
        let steps = [
            MapStep::Filter(col("a").gt(2)),
            MapStep::Select(vec![lit(7).alias("k")]),
        ];
        let out = run(&b, &steps);
        let k: Vec<_> = out.column(0).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(k, [7, 7]);
    }

    #[test]
    fn constant_filters_and_empty_batches() {
        let b = frame();
        assert_eq!(run(&b, &[MapStep::Filter(lit(true))]).num_rows(), 5);
        assert_eq!(run(&b, &[MapStep::Filter(lit(false))]).num_rows(), 0);
        assert_eq!(
            run(&b, &[MapStep::Filter(col("a").gt(Literal::Null))]).num_rows(),
            0
        );
        let steps = [
            MapStep::Filter(col("a").gt(100)),
            MapStep::WithColumn {
                name: "c".into(),
                expr: col("s").str_contains("p"),
            },
            MapStep::Filter(col("c")),
        ];
        let out = run(&b, &steps);
        assert_eq!((out.num_rows(), out.num_columns()), (0, 4));
        let out = run(&b.slice(0, 0), &steps);
        assert_eq!(out.num_rows(), 0);
        assert_eq!(run(&b, &[]), b);
    }

    #[test]
    fn errors() {
        let b = frame();
        let err = error(&b, &[MapStep::Filter(col("a") + 1)]);
        assert!(
            matches!(&err, FrameError::TypeMismatch(m) if m.contains("Int64")),
            "{err:?}"
        );
        let err = error(&b, &[MapStep::Drop(vec!["zz".into()])]);
        assert!(
            matches!(&err, FrameError::ColumnNotFound { name, .. } if name == "zz"),
            "{err:?}"
        );
        let err = error(&b, &[MapStep::Rename(vec![("zz".into(), "y".into())])]);
        assert!(
            matches!(&err, FrameError::ColumnNotFound { name, .. } if name == "zz"),
            "{err:?}"
        );
        let err = error(&b, &[MapStep::Rename(vec![("a".into(), "b".into())])]);
        assert!(
            matches!(&err, FrameError::InvalidArgument(m) if m.contains("\"b\"")),
            "{err:?}"
        );
        let err = error(&b, &[MapStep::Select(vec![col("a"), col("a") + 1])]);
        assert!(
            matches!(&err, FrameError::InvalidArgument(m) if m.contains("\"a\"")),
            "{err:?}"
        );
        let steps = [
            MapStep::Drop(vec!["a".into()]),
            MapStep::Filter(col("a").gt(1)),
        ];
        assert!(matches!(
            error(&b, &steps),
            FrameError::ColumnNotFound { .. }
        ));
        let steps = [MapStep::WithColumn {
            name: "n".into(),
            expr: col("s") + 1,
        }];
        assert!(matches!(error(&b, &steps), FrameError::TypeMismatch(_)));
    }

    #[test]
    fn serde_round_trip() {
        let steps = vec![
            MapStep::Filter(col("a").gt(0)),
            MapStep::WithColumn {
                name: "c".into(),
                expr: col("b").cast(DataType::Int64),
            },
            MapStep::Select(vec![col("c")]),
            MapStep::Drop(vec!["x".into()]),
            MapStep::Rename(vec![("c".into(), "d".into())]),
        ];
        let json = serde_json::to_string(&steps).unwrap();
        assert_eq!(serde_json::from_str::<Vec<MapStep>>(&json).unwrap(), steps);
    }

    /// Conjunctions whose conjuncts keep most rows (answers combined), few (rows narrowed)
    /// or none, over nullable columns (a null conjunct drops its row), give the rows the
    /// whole predicate gives; the filtered frame keeps every column's values.
    #[test]
    fn conjuncts_evaluated_in_turn_keep_what_the_whole_predicate_keeps() {
        let mut rng = crate::test_rng::Rng(17);
        let n = 3000;
        let a: Vec<Option<i32>> = (0..n)
            .map(|_| rng.maybe(10, |r| r.below(100) as i32))
            .collect();
        let s: Vec<Option<&str>> = (0..n)
            .map(|_| rng.maybe(7, |r| ["x", "y", "z"][r.below(3) as usize]))
            .collect();
        let b: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int32Array::from(a)) as ArrayRef),
            ("s", Arc::new(StringArray::from(s)) as ArrayRef),
            ("b", Arc::new(Float64Array::from(b)) as ArrayRef),
        ])
        .unwrap();
        let range = |lo: i32, hi: i32| col("a").ge(lo).and_(col("a").le(hi));
        let ranges = range(1, 5)
            .or_(range(10, 20))
            .or_(range(30, 40).and_(col("s").ne("y")));
        assert!(ranges.size() >= NARROW_FOR_SIZE);
        let predicates = [
            col("a")
                .ge(5)
                .and_(col("s").ne("z"))
                .and_(col("b").lt(2500.0)),
            col("s")
                .eq("x")
                .and_(col("a").lt(50))
                .and_(col("b").ge(100.0)),
            col("a")
                .is_null()
                .or_(col("s").eq("y"))
                .and_(col("a").gt(90).or_(col("s").is_null())),
            lit(true).and_(col("a").gt(1000)).and_(col("s").eq("x")),
            col("b")
                .ge(0.0)
                .and_(col("a").is_not_null())
                .and_(lit(true)),
            // Large conjuncts after selective ones: the rows are narrowed first.
            col("s")
                .eq("x")
                .and_(ranges.clone())
                .and_(col("b").lt(2000.0)),
            col("b")
                .ge(10.0)
                .and_(col("s").ne("z"))
                .and_(ranges.clone())
                .and_(ranges),
        ];
        for p in predicates {
            let whole = p.evaluate(&batch).unwrap();
            let whole = nulls_false(whole.as_boolean());
            let by_conjuncts = filter_mask(&p, &batch).unwrap();
            assert_eq!(by_conjuncts, whole, "{p}");
            let out = run(&batch, &[MapStep::Filter(p.clone())]);
            assert_eq!(out, filter_record_batch(&batch, &whole).unwrap(), "{p}");
        }
    }
}
