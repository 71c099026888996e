//! Lazy chunked dataframes with pandas' names, on Arrow record batches.
//!
//! A [`DataFrame`] is a handle on a node of a lazy graph whose schema is known when it is
//! built: unknown columns and type mismatches are errors at once (the frame carries the
//! error, and `execute` returns it), before anything runs. `execute` plans chunk tasks —
//! reading CSV byte ranges or Parquet row groups in parallel, row-wise steps fused into the
//! reads, groupby partials merged by a tree or a hash shuffle, broadcast or shuffle joins —
//! and returns one Arrow `RecordBatch`.
//!
//! ```no_run
//! use tessera::dataframe::{self, col, Agg};
//! # fn main() -> tessera::Result<()> {
//! let session = tessera::Session::local()?;
//! let ratings = dataframe::read_csv("ratings.csv");
//! let out = ratings
//!     .groupby(&["userId"])
//!     .agg(&[("rating", &[Agg::Sum, Agg::Mean, Agg::Max, Agg::Min])])
//!     .execute(&session)?;
//! let good = ratings.filter(col("rating").ge(4.0)).len(&session)?;
//! # Ok(())
//! # }
//! ```
//!
//! Row order: a frame keeps the order of its chunks (file order for reads) and, within a
//! chunk, of its rows; groupby results come sorted by their keys unless `.sort(false)` is
//! asked (then their order is unspecified). A join that broadcasts its right side keeps
//! the order of the left side's chunks; an inner join that broadcasts its smaller left
//! side follows the order of the right side's chunks (each chunk's matches in left order);
//! a shuffled join's rows come in no particular order.

mod concat;
mod estimate;
mod explain;
mod groupby;
mod io;
mod limit;
pub(crate) mod node;
pub(crate) mod plan;
mod prune;
mod pushdown;
mod reduce;
mod series;
mod shared;
#[cfg(test)]
pub(crate) mod testing;

pub use concat::concat;
pub use groupby::GroupBy;
pub use io::{
    from_arrow, from_batches, from_columns, read_csv, read_csv_with, read_parquet,
    read_parquet_with, ReadCsv, ReadParquet,
};
pub use series::{where_, DtAccessor, Series, SeriesOperand, StrAccessor};
pub use tessera_kernels::frame::csv::CsvOptions;
pub use tessera_kernels::frame::expr::{
    col, lit, when, BinaryOperator, DatePart, Expr, FloorUnit, Literal, Pattern, StrFunction, Then,
    When,
};
pub use tessera_kernels::frame::groupby::{AggFunc as Agg, AggSpec};
pub use tessera_kernels::frame::join::JoinHow as How;
pub use tessera_kernels::frame::sort::SortKey;
pub use tessera_kernels::frame::FrameError;

use crate::error::{Error, Result};
use crate::kept::Kept;
use crate::session::Session;
use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use node::{FrameKind, FrameNode};
use std::path::Path;
use std::sync::Arc;
use tessera_actors::JobStats;
use tessera_kernels::frame::groupby::AggFunc;
use tessera_kernels::frame::join::JoinSpec;
use tessera_kernels::frame::map::{steps_schema, MapStep};
use tessera_kernels::frame::ops::FileFormat;
use tessera_kernels::frame::schema::is_numeric;
use tessera_kernels::frame::sort::check_keys;

/// A lazy, chunked table.
#[derive(Clone, Debug)]
pub struct DataFrame {
    node: Result<Arc<FrameNode>>,
}

impl DataFrame {
    /// A frame from a node builder, carrying its error if it fails.
    fn build(f: impl FnOnce() -> Result<Arc<FrameNode>>) -> DataFrame {
        DataFrame { node: f() }
    }

    /// A frame that carries `error`.
    fn failed(error: Error) -> DataFrame {
        DataFrame { node: Err(error) }
    }

    fn node(&self) -> Result<&Arc<FrameNode>> {
        self.node.as_ref().map_err(Clone::clone)
    }

    /// A new frame from this one's node, or this one's error.
    fn derive(&self, f: impl FnOnce(&Arc<FrameNode>) -> Result<Arc<FrameNode>>) -> DataFrame {
        DataFrame {
            node: self.node().and_then(f),
        }
    }

    /// The error this frame carries, if building it failed.
    pub fn error(&self) -> Option<&Error> {
        self.node.as_ref().err()
    }

    /// The schema (column names and Arrow types), or the error this frame carries.
    pub fn schema(&self) -> Result<SchemaRef> {
        Ok(self.node()?.schema.clone())
    }

    /// The optimizer's estimate of its rows (0 for a frame that carries an error; see
    /// `estimate.rs`): what the SQL join order compares.
    pub(crate) fn estimated_rows(&self) -> f64 {
        self.node
            .as_ref()
            .map_or(0.0, |n| estimate::Estimates::default().of(n).rows)
    }

    /// The column names.
    pub fn columns(&self) -> Result<Vec<String>> {
        Ok(self
            .node()?
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect())
    }

    /// Each column's name and type (pandas' `dtypes`).
    pub fn dtypes(&self) -> Result<Vec<(String, DataType)>> {
        Ok(self
            .node()?
            .schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect())
    }

    /// Applies row-wise steps, checking them against the schema now.
    fn map(&self, step: MapStep) -> DataFrame {
        self.derive(|node| {
            let schema = steps_schema(&node.schema, std::slice::from_ref(&step))?;
            // Consecutive row-wise steps share one node.
            let (input, mut steps) = match &node.kind {
                FrameKind::Map { input, steps } => (input.clone(), steps.clone()),
                _ => (node.clone(), Vec::new()),
            };
            steps.push(step);
            Ok(FrameNode::new(
                Arc::new(schema),
                FrameKind::Map { input, steps },
            ))
        })
    }

    /// The rows where `predicate` is true (null counts as false).
    pub fn filter(&self, predicate: Expr) -> DataFrame {
        self.map(MapStep::Filter(predicate))
    }

    /// These columns, in this order.
    pub fn select(&self, columns: &[&str]) -> DataFrame {
        self.select_exprs(columns.iter().map(|c| col(c)).collect())
    }

    /// Columns computed by expressions (each named by its alias, or the column it reads).
    pub fn select_exprs(&self, exprs: Vec<Expr>) -> DataFrame {
        self.map(MapStep::Select(exprs))
    }

    /// Adds column `name` (or replaces it) with the values of `expr`.
    pub fn with_column(&self, name: &str, expr: Expr) -> DataFrame {
        self.map(MapStep::WithColumn {
            name: name.to_string(),
            expr,
        })
    }

    /// Without these columns.
    pub fn drop(&self, columns: &[&str]) -> DataFrame {
        self.map(MapStep::Drop(
            columns.iter().map(|c| c.to_string()).collect(),
        ))
    }

    /// With columns renamed, `(old, new)`.
    pub fn rename(&self, pairs: &[(&str, &str)]) -> DataFrame {
        self.map(MapStep::Rename(
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        ))
    }

    /// The first `n` rows.
    pub fn head(&self, n: usize) -> DataFrame {
        self.derive(|node| {
            Ok(FrameNode::new(
                node.schema.clone(),
                FrameKind::Head {
                    input: node.clone(),
                    n,
                },
            ))
        })
    }

    /// Groups rows by the values of these columns.
    pub fn groupby(&self, keys: &[&str]) -> GroupBy {
        GroupBy::new(self.clone(), keys.iter().map(|k| col(k)).collect())
    }

    /// Groups rows by computed keys (each named by its alias or the column it reads).
    pub fn groupby_expr(&self, keys: Vec<Expr>) -> GroupBy {
        GroupBy::new(self.clone(), keys)
    }

    /// Joins with `right` on columns of the same name (pandas' `merge(on=…)`), suffixes
    /// `_x` and `_y` for other shared names.
    pub fn merge(&self, right: &DataFrame, on: &[&str], how: How) -> DataFrame {
        self.merge_on(right, on, on, how, ("_x", "_y"))
    }

    /// Joins with `right` where `left_on` equals `right_on`, with suffixes for shared names.
    ///
    /// Keys match by value across numeric types, as in pandas: integers of any width and
    /// signedness match each other, and an integer or float key paired with a float key of
    /// another type is promoted to `Float64` on both sides (so `1` matches `1.0`, `1.5`
    /// matches no integer, and the output key column is `Float64`). A string key paired with
    /// a numeric one is a `TypeMismatch` naming both columns and both types. Null keys match
    /// each other, as in pandas.
    ///
    /// `How::LeftSemi` and `How::LeftAnti` are [`DataFrame::semi_join`] and
    /// [`DataFrame::anti_join`] (the suffixes are unused); `How::LeftMark` needs the name
    /// of its mark column: use [`DataFrame::mark_join`].
    pub fn merge_on(
        &self,
        right: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: How,
        suffixes: (&str, &str),
    ) -> DataFrame {
        self.join(right, left_on, right_on, how, suffixes, None)
    }

    /// [`DataFrame::merge_on`] with pandas' `indicator`: a last column `indicator` saying
    /// where each row comes from, `"left_only"`, `"right_only"` or `"both"`. It is a
    /// dictionary of strings (pandas' categorical, whose categories it has in pandas' order).
    /// A column of that name in the output is an `InvalidArgument`, and so is an indicator
    /// on a semi or anti join; a mark join's indicator is its boolean mark column.
    pub fn merge_indicator(
        &self,
        right: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: How,
        suffixes: (&str, &str),
        indicator: &str,
    ) -> DataFrame {
        self.join(right, left_on, right_on, how, suffixes, Some(indicator))
    }

    /// The rows whose `left_on` key occurs among `right`'s `right_on` keys, each row once
    /// however many right rows hold its key, with this frame's columns only (SQL's `EXISTS`
    /// or `IN` subquery; Tessera's addition to pandas, which spells it
    /// `df[df.k.isin(right.k)]`). Only `right`'s key columns are read: they are broadcast as
    /// their distinct values to every chunk when `right` is small, and hash-shuffled with
    /// this frame otherwise. Rows keep their order within a chunk when broadcast, and come
    /// in no particular order after a shuffle, as with [`DataFrame::merge`].
    ///
    /// Keys are compared as in [`DataFrame::merge_on`]. Nulls: a null key matches a null
    /// key, as in pandas (`isin`, `merge`), where SQL's `IN` and `EXISTS` match no null;
    /// to get SQL's answer, drop the null keys of this frame first
    /// (`filter(col(k).is_not_null())`).
    pub fn semi_join(&self, right: &DataFrame, left_on: &[&str], right_on: &[&str]) -> DataFrame {
        self.existence_join(right, left_on, right_on, How::LeftSemi, None)
    }

    /// The rows whose `left_on` key does not occur among `right`'s `right_on` keys, each
    /// once, with this frame's columns only (SQL's `NOT EXISTS`; pandas'
    /// `df[~df.k.isin(right.k)]`). Planned and ordered as [`DataFrame::semi_join`].
    ///
    /// Nulls: a null key matches a null key, as in pandas: a row with a null key is kept
    /// unless `right` holds a null key. SQL's `NOT EXISTS` keeps such rows always; its
    /// `NOT IN` keeps no row at all where the right holds a null, and drops the rows with a
    /// null key: filter for those answers explicitly.
    pub fn anti_join(&self, right: &DataFrame, left_on: &[&str], right_on: &[&str]) -> DataFrame {
        self.existence_join(right, left_on, right_on, How::LeftAnti, None)
    }

    /// Every row once, with a last boolean column `name`, never null, saying whether the
    /// row's `left_on` key occurs among `right`'s `right_on` keys (a mark join: what
    /// [`Series::isin_series`] computes). Planned, ordered and null-matched as
    /// [`DataFrame::semi_join`]; a column `name` already here is an `InvalidArgument`.
    pub fn mark_join(
        &self,
        right: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        name: &str,
    ) -> DataFrame {
        self.existence_join(right, left_on, right_on, How::LeftMark, Some(name))
    }

    /// A join node of this frame and `right` (see [`DataFrame::merge_on`]).
    fn join(
        &self,
        right: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: How,
        suffixes: (&str, &str),
        indicator: Option<&str>,
    ) -> DataFrame {
        if how.is_existence() {
            return self.existence_join(right, left_on, right_on, how, indicator);
        }
        let (left, right) = promote_float_keys(self, right, left_on, right_on);
        let spec = JoinSpec {
            left_on: left_on.iter().map(|c| c.to_string()).collect(),
            right_on: right_on.iter().map(|c| c.to_string()).collect(),
            how,
            suffixes: (suffixes.0.to_string(), suffixes.1.to_string()),
            indicator: indicator.map(str::to_string),
        };
        left.join_node(&right, spec)
    }

    /// A semi, anti or mark join (`how`) of this frame and `right`'s keys: `right` is
    /// reduced to its key columns, and where a key pair needs `Float64` (see
    /// [`promote_float_keys`]) this frame's key is compared through a hidden cast copy,
    /// dropped after the join, so its own columns come out unchanged.
    fn existence_join(
        &self,
        right: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: How,
        indicator: Option<&str>,
    ) -> DataFrame {
        let (mut left, mut right) = (self.clone(), right.select(right_on));
        let mut left_keys: Vec<String> = left_on.iter().map(|c| c.to_string()).collect();
        let mut hidden = Vec::new();
        if let (Ok(ls), Ok(rs)) = (left.schema(), right.schema()) {
            for (k, r) in left_keys.iter_mut().zip(right_on) {
                let (Ok(lf), Ok(rf)) = (ls.field_with_name(k), rs.field_with_name(r)) else {
                    continue;
                };
                if needs_float_keys(lf.data_type(), rf.data_type()) {
                    let copy = format!("\u{1f}key\u{1f}{k}");
                    left = left.with_column(&copy, col(k.as_str()).cast(DataType::Float64));
                    right = right.with_column(r, col(r).cast(DataType::Float64));
                    hidden.push(copy.clone());
                    *k = copy;
                }
            }
        }
        let spec = JoinSpec {
            left_on: left_keys,
            right_on: right_on.iter().map(|c| c.to_string()).collect(),
            how,
            suffixes: ("_x".into(), "_y".into()),
            indicator: indicator.map(str::to_string),
        };
        let joined = left.join_node(&right, spec);
        match hidden.is_empty() {
            true => joined,
            false => joined.drop(&hidden.iter().map(String::as_str).collect::<Vec<_>>()),
        }
    }

    /// The node joining this frame with `right` by `spec`, its schema checked now.
    fn join_node(&self, right: &DataFrame, spec: JoinSpec) -> DataFrame {
        self.derive(|left| {
            let right = right.node()?;
            let schema = spec.output_schema(&left.schema, &right.schema)?;
            Ok(FrameNode::new(
                Arc::new(schema),
                FrameKind::Join {
                    left: left.clone(),
                    right: right.clone(),
                    spec,
                },
            ))
        })
    }

    /// Sorted by these columns (pandas' `sort_values`, nulls and NaNs last): `ascending` is
    /// one direction for every key (`true`) or one per key (`[false, true]`); a list of
    /// another length than `by` is an `InvalidArgument`. The sort is stable.
    pub fn sort_values(&self, by: &[&str], ascending: impl Into<Ascending>) -> DataFrame {
        self.sort_values_with(by, ascending, NaPosition::Last)
    }

    /// [`sort_values`](Self::sort_values) with pandas' `na_position`: where nulls (and float
    /// NaNs) go, in either direction.
    pub fn sort_values_with(
        &self,
        by: &[&str],
        ascending: impl Into<Ascending>,
        na_position: NaPosition,
    ) -> DataFrame {
        match ascending.into().per_key(by.len()) {
            Ok(directions) => self.sort_by(
                by.iter()
                    .zip(directions)
                    .map(|(c, up)| SortKey {
                        column: c.to_string(),
                        descending: !up,
                        nulls_first: na_position == NaPosition::First,
                    })
                    .collect(),
            ),
            Err(e) => DataFrame::failed(e.into()),
        }
    }

    /// Sorted by several keys, each with its own direction and null placement.
    pub fn sort_by(&self, by: Vec<SortKey>) -> DataFrame {
        self.sort_limit(by, None)
    }

    /// The first `limit` rows of the stable sort by `by` (all when `None`).
    fn sort_limit(&self, by: Vec<SortKey>, limit: Option<usize>) -> DataFrame {
        self.derive(|node| {
            check_keys(&node.schema, &by)?;
            Ok(FrameNode::new(
                node.schema.clone(),
                FrameKind::Sort {
                    input: node.clone(),
                    by,
                    limit,
                },
            ))
        })
    }

    /// The `n` rows with the largest values of `columns` (compared in order), largest first;
    /// of tied rows the first ones (pandas' `nlargest` with `keep="first"`). Rows with a null
    /// or NaN there come last, as in pandas: only where fewer than `n` rows have values.
    pub fn nlargest(&self, n: usize, columns: &[&str]) -> DataFrame {
        self.sort_limit(
            columns.iter().map(|c| SortKey::descending(c)).collect(),
            Some(n),
        )
    }

    /// The `n` rows with the smallest values of `columns`, smallest first (pandas'
    /// `nsmallest` with `keep="first"`; missing values last, as in [`Self::nlargest`]).
    pub fn nsmallest(&self, n: usize, columns: &[&str]) -> DataFrame {
        self.sort_limit(
            columns.iter().map(|c| SortKey::ascending(c)).collect(),
            Some(n),
        )
    }

    /// How often each value of `column` occurs: columns `column` and `count`, most
    /// frequent first (nulls not counted, as in pandas).
    pub fn value_counts(&self, column: &str) -> DataFrame {
        self.groupby(&[column])
            .sort(false)
            .agg_named(vec![AggSpec {
                column: column.to_string(),
                func: AggFunc::Size,
                output: "count".to_string(),
            }])
            .sort_by(vec![
                SortKey::descending("count"),
                SortKey::ascending(column),
            ])
    }

    /// One row per distinct combination of `subset` (all columns when `None`), keeping the
    /// first such row as it is, nulls included (pandas' `keep="first"`). Null and NaN keys
    /// are kept and equal each other, as in pandas. Rows come sorted by `subset`, missing
    /// keys last.
    pub fn drop_duplicates(&self, subset: Option<&[&str]>) -> DataFrame {
        let schema = match self.schema() {
            Ok(s) => s,
            Err(e) => return DataFrame::failed(e),
        };
        let columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let keys: Vec<String> = match subset {
            Some(s) => s.iter().map(|c| c.to_string()).collect(),
            None => columns.clone(),
        };
        // A groupby drops missing keys, so each key is grouped as (which kind of missing,
        // the value with a placeholder where missing) and put back together afterwards.
        let mut prepared = self.clone();
        let mut grouped_by = Vec::new();
        let mut restore = Vec::new();
        for k in &keys {
            let Some(t) = schema
                .field_with_name(k)
                .ok()
                .map(|f| f.data_type().clone())
            else {
                grouped_by.push(k.clone());
                continue;
            };
            let Some(placeholder) = missing_placeholder(&t) else {
                grouped_by.push(k.clone());
                continue;
            };
            let flag = format!("\u{1f}missing\u{1f}{k}");
            let missing = when(col(k).is_null())
                .then(lit(1))
                .when(col(k).ne(col(k)))
                .then(lit(2))
                .otherwise(lit(0));
            let filled = when(missing.clone().ne(0))
                .then(placeholder.cast(t.clone()))
                .otherwise(col(k));
            prepared = prepared.with_column(&flag, missing).with_column(k, filled);
            let mut back = when(col(&flag).eq(1)).then(lit(Literal::Null).cast(t.clone()));
            if t.is_floating() {
                back = back
                    .when(col(&flag).eq(2))
                    .then(lit(f64::NAN).cast(t.clone()));
            }
            restore.push((k.clone(), back.otherwise(col(k))));
            grouped_by.push(flag);
            grouped_by.push(k.clone());
        }
        let aggs = columns
            .iter()
            .filter(|c| !keys.contains(c))
            .map(|c| AggSpec {
                column: c.clone(),
                func: AggFunc::FirstRow,
                output: c.clone(),
            })
            .collect();
        let key_refs: Vec<&str> = grouped_by.iter().map(String::as_str).collect();
        let mut out = prepared.groupby(&key_refs).agg_named(aggs);
        for (k, e) in restore {
            out = out.with_column(&k, e);
        }
        let col_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        out.select(&col_refs)
    }

    /// Reduces columns to one row: `func` of every column it applies to (numeric columns
    /// for sum, mean, std and var; every column for min, max, count and nunique).
    fn reduce_all(&self, func: AggFunc) -> DataFrame {
        let schema = match self.schema() {
            Ok(s) => s,
            Err(e) => return DataFrame::failed(e),
        };
        let numeric_only = matches!(
            func,
            AggFunc::Sum | AggFunc::Mean | AggFunc::Std | AggFunc::Var
        );
        let aggs = schema
            .fields()
            .iter()
            .filter(|f| {
                !numeric_only || is_numeric(f.data_type()) || *f.data_type() == DataType::Boolean
            })
            .map(|f| AggSpec {
                column: f.name().clone(),
                func,
                output: f.name().clone(),
            })
            .collect();
        self.groupby(&[]).agg_named(aggs)
    }

    /// The sum of each numeric column, as a one-row frame.
    pub fn sum(&self) -> DataFrame {
        self.reduce_all(AggFunc::Sum)
    }

    /// The mean of each numeric column, as a one-row frame.
    pub fn mean(&self) -> DataFrame {
        self.reduce_all(AggFunc::Mean)
    }

    /// The minimum of each column, as a one-row frame.
    pub fn min(&self) -> DataFrame {
        self.reduce_all(AggFunc::Min)
    }

    /// The maximum of each column, as a one-row frame.
    pub fn max(&self) -> DataFrame {
        self.reduce_all(AggFunc::Max)
    }

    /// The non-null count of each column, as a one-row frame.
    pub fn count(&self) -> DataFrame {
        self.reduce_all(AggFunc::Count)
    }

    /// The sample standard deviation (ddof 1) of each numeric column, as a one-row frame.
    pub fn std(&self) -> DataFrame {
        self.reduce_all(AggFunc::Std)
    }

    /// The sample variance (ddof 1) of each numeric column, as a one-row frame.
    pub fn var(&self) -> DataFrame {
        self.reduce_all(AggFunc::Var)
    }

    /// The number of distinct non-null values of each column, as a one-row frame.
    pub fn nunique(&self) -> DataFrame {
        self.reduce_all(AggFunc::NUnique)
    }

    /// Several aggregations over the whole frame, as one row (`(column, funcs)` pairs,
    /// named as in [`GroupBy::agg`]).
    pub fn agg(&self, aggs: &[(&str, &[Agg])]) -> DataFrame {
        self.groupby(&[]).agg(aggs)
    }

    /// The number of rows (runs a job).
    pub fn len(&self, session: &Session) -> Result<usize> {
        let counts = self
            .groupby(&[])
            .agg_named(vec![AggSpec {
                column: String::new(),
                func: AggFunc::Size,
                output: "rows".into(),
            }])
            .execute(session)?;
        scalar_i64(&counts, "rows").map(|n| n.max(0) as usize)
    }

    /// True when the frame has no rows (runs a job).
    pub fn is_empty(&self, session: &Session) -> Result<bool> {
        Ok(self.len(session)? == 0)
    }

    /// Summary statistics of the numeric columns (runs a job): a column `statistic` with
    /// the rows count, mean, std, min and max, then one Float64 column per numeric column.
    pub fn describe(&self, session: &Session) -> Result<RecordBatch> {
        describe(self, session)
    }

    /// The plan a job of this frame runs, after the optimizer (filters pushed down toward
    /// the sources, columns nothing reads pruned), as an indented tree with each node's
    /// output columns; runs nothing. A node read twice is shown once and computed once.
    pub fn explain(&self) -> Result<String> {
        explain::explain(self.node()?)
    }

    /// Computes the frame and returns its rows as one Arrow table.
    pub fn execute(&self, session: &Session) -> Result<RecordBatch> {
        self.execute_with_stats(session).map(|(b, _)| b)
    }

    /// Computes the frame and returns its rows with the statistics of the job's stages.
    pub fn execute_with_stats(&self, session: &Session) -> Result<(RecordBatch, JobStats)> {
        let node = self.node()?;
        let (batches, stats) = session.run_frame(node)?;
        // The chunks are this function's alone now: concatenated a column at a time, the
        // result needs about one column beside them, not a second table.
        let batch = tessera_kernels::frame::table::concat_owned(&node.schema, batches)
            .map_err(Error::Frame)?;
        // Chunks may carry equivalent schemas with other metadata; present the frame's.
        let batch = RecordBatch::try_new(node.schema.clone(), batch.columns().to_vec())
            .map_err(|e| Error::Frame(e.into()))?;
        Ok((batch, stats))
    }

    /// Computes the frame and returns its chunks as they came (no concatenation).
    pub fn execute_chunks(&self, session: &Session) -> Result<Vec<RecordBatch>> {
        Ok(session.run_frame(self.node()?)?.0)
    }

    /// Computes the frame and returns a frame over its chunks (Dask's `persist`): later
    /// queries read them instead of computing them again. The chunks stay in the session's
    /// storage, under its memory budget and spilled to disk when memory is short; if
    /// storage loses them, or another session reads them, they are computed again from
    /// this frame's query. Dropping the frame frees them.
    pub fn persist(&self, session: &Session) -> Result<DataFrame> {
        let node = self.node()?;
        let (chunks, _) = session.persist_frame(node)?;
        let kept = Kept::new(Arc::clone(node), session.inner.id, chunks);
        Ok(DataFrame {
            node: Ok(FrameNode::new(
                node.schema.clone(),
                FrameKind::Kept(Arc::new(kept)),
            )),
        })
    }

    /// Writes the frame's chunks (see `to_csv` / `to_parquet`).
    fn write(
        &self,
        session: &Session,
        path: &Path,
        format: FileFormat,
        per_chunk: bool,
    ) -> Result<usize> {
        if !per_chunk {
            let node = self.node()?;
            let batches = self.execute_chunks(session)?;
            let p = path.display().to_string();
            match format {
                FileFormat::Csv => tessera_kernels::frame::csv::write_csv(&p, &batches)?,
                FileFormat::Parquet => {
                    tessera_kernels::frame::parquet::write(&p, &node.schema, &batches)?
                }
            }
            return Ok(batches.iter().map(RecordBatch::num_rows).sum());
        }
        let node = self.node()?;
        let written = session.write_frame(node, path, format)?;
        Ok(written)
    }
}

/// A value of type `t` that stands in for a missing key while grouping, if `t` has one.
fn missing_placeholder(t: &DataType) -> Option<Expr> {
    let numeric = is_numeric(t) || t.is_temporal();
    match t {
        _ if numeric => Some(lit(0)),
        DataType::Boolean => Some(lit(false)),
        _ if tessera_kernels::frame::schema::is_string(t) => Some(lit("")),
        _ => None,
    }
}

/// The one value of an Int64 column of a one-row table.
fn scalar_i64(batch: &RecordBatch, name: &str) -> Result<i64> {
    let column = tessera_kernels::frame::schema::column(batch, name)?;
    column
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .filter(|a| a.len() == 1 && a.is_valid(0))
        .map(|a| a.value(0))
        .ok_or_else(|| Error::Runtime(format!("expected one Int64 value in column {name:?}")))
}

fn describe(df: &DataFrame, session: &Session) -> Result<RecordBatch> {
    use arrow::array::{Float64Array, StringArray};
    use arrow::compute::cast;
    use arrow::datatypes::{Field, Schema};
    const STATS: [AggFunc; 5] = [
        AggFunc::Count,
        AggFunc::Mean,
        AggFunc::Std,
        AggFunc::Min,
        AggFunc::Max,
    ];
    let schema = df.schema()?;
    let numeric: Vec<String> = schema
        .fields()
        .iter()
        .filter(|f| is_numeric(f.data_type()))
        .map(|f| f.name().clone())
        .collect();
    let aggs = numeric
        .iter()
        .flat_map(|c| {
            STATS.iter().map(move |f| AggSpec {
                column: c.clone(),
                func: *f,
                output: format!("{c}\u{1f}{}", f.name()),
            })
        })
        .collect();
    let row = df.groupby(&[]).agg_named(aggs).execute(session)?;
    let mut fields = vec![Field::new("statistic", DataType::Utf8, false)];
    let mut columns: Vec<arrow::array::ArrayRef> = vec![Arc::new(StringArray::from(
        STATS.iter().map(|f| f.name()).collect::<Vec<_>>(),
    ))];
    for c in &numeric {
        let mut values = Vec::with_capacity(STATS.len());
        for f in STATS {
            let array =
                tessera_kernels::frame::schema::column(&row, &format!("{c}\u{1f}{}", f.name()))?;
            let array = cast(array, &DataType::Float64).map_err(|e| Error::Frame(e.into()))?;
            let array = array
                .as_any()
                .downcast_ref::<Float64Array>()
                .ok_or_else(|| Error::Runtime("describe: cast to Float64 failed".into()))?;
            values.push(array.is_valid(0).then(|| array.value(0)));
        }
        fields.push(Field::new(c, DataType::Float64, true));
        columns.push(Arc::new(Float64Array::from(values)));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| Error::Frame(e.into()))
}

/// Casts each paired join key to `Float64` on both sides where the two are numeric of
/// different types and at least one is a float (pandas' common type for such keys), so
/// hashing and comparison see the same value on both sides, broadcast or shuffled. Other
/// pairs are left as they are (the join checks them); a frame carrying an error is returned
/// unchanged.
fn promote_float_keys(
    left: &DataFrame,
    right: &DataFrame,
    left_on: &[&str],
    right_on: &[&str],
) -> (DataFrame, DataFrame) {
    let (Ok(ls), Ok(rs)) = (left.schema(), right.schema()) else {
        return (left.clone(), right.clone());
    };
    let (mut left, mut right) = (left.clone(), right.clone());
    for (l, r) in left_on.iter().zip(right_on) {
        let (Ok(lf), Ok(rf)) = (ls.field_with_name(l), rs.field_with_name(r)) else {
            continue;
        };
        if needs_float_keys(lf.data_type(), rf.data_type()) {
            left = left.with_column(l, col(l).cast(DataType::Float64));
            right = right.with_column(r, col(r).cast(DataType::Float64));
        }
    }
    (left, right)
}

/// The direction of each sort key ([`DataFrame::sort_values`]): one for all keys, or one per
/// key, as pandas' `ascending=True` and `ascending=[False, True]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ascending {
    /// Every key in this direction (`true`: smallest first).
    All(bool),
    /// One direction per key, in the order of the keys.
    Each(Vec<bool>),
}

impl Ascending {
    /// One direction for each of `keys` keys.
    fn per_key(self, keys: usize) -> std::result::Result<Vec<bool>, FrameError> {
        match self {
            Ascending::All(up) => Ok(vec![up; keys]),
            Ascending::Each(v) if v.len() == keys => Ok(v),
            Ascending::Each(v) => Err(FrameError::InvalidArgument(format!(
                "length of ascending ({}) != length of by ({keys})",
                v.len()
            ))),
        }
    }
}

impl From<bool> for Ascending {
    fn from(up: bool) -> Self {
        Ascending::All(up)
    }
}

impl From<Vec<bool>> for Ascending {
    fn from(v: Vec<bool>) -> Self {
        Ascending::Each(v)
    }
}

impl From<&[bool]> for Ascending {
    fn from(v: &[bool]) -> Self {
        Ascending::Each(v.to_vec())
    }
}

impl<const N: usize> From<[bool; N]> for Ascending {
    fn from(v: [bool; N]) -> Self {
        Ascending::Each(v.to_vec())
    }
}

impl<const N: usize> From<&[bool; N]> for Ascending {
    fn from(v: &[bool; N]) -> Self {
        Ascending::Each(v.to_vec())
    }
}

/// Where a sort puts nulls and float NaNs (pandas' `na_position`), whatever the direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NaPosition {
    /// Before every value.
    First,
    /// After every value (pandas' default).
    #[default]
    Last,
}

/// Whether join keys of types `lt` and `rt` are compared as `Float64`: numeric of different
/// types, at least one a float (pandas' common type for such keys).
fn needs_float_keys(lt: &DataType, rt: &DataType) -> bool {
    let numeric = |t: &DataType| t.is_integer() || t.is_floating();
    lt != rt && numeric(lt) && numeric(rt) && (lt.is_floating() || rt.is_floating())
}
