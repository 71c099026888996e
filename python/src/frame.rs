//! `tessera._tessera._Frame` and `_Series`: the native lazy dataframe and column under
//! `tessera.DataFrame` and `tessera.Series`.
//!
//! Tables cross the language boundary as Arrow streams through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, read by pyarrow >= 14): the record batches' buffers are
//! shared, never copied row by row.

use crate::errors::{to_py, type_error, value_error};
use crate::session::{run_job, PySession};
use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::{DataType, TimeUnit};
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyFloat, PyInt, PyString};
use std::ffi::CStr;
use tessera::dataframe::{
    self as df, Agg, DataFrame, How, Literal, Pattern, Series, SeriesOperand,
};
use tessera::Session;
use tessera_kernels::frame::groupby::AggSpec;

/// The capsule name the Arrow PyCapsule interface gives an `ArrowArrayStream`.
const STREAM: &CStr = c"arrow_array_stream";

/// A lazy, chunked table (wrapped by `tessera.DataFrame`).
#[pyclass(name = "_Frame", module = "tessera._tessera", frozen)]
pub struct PyFrame {
    df: DataFrame,
}

/// A column of a frame, or an expression over its columns (wrapped by `tessera.Series`).
#[pyclass(name = "_Series", module = "tessera._tessera", frozen)]
pub struct PySeries {
    s: Series,
}

impl PyFrame {
    /// Wraps `df`, raising the error it carries if building it failed.
    pub(crate) fn wrap(df: DataFrame) -> PyResult<PyFrame> {
        match df.error() {
            Some(e) => Err(to_py(e.clone())),
            None => Ok(PyFrame { df }),
        }
    }

    /// The lazy frame.
    pub(crate) fn frame(&self) -> &DataFrame {
        &self.df
    }

    /// Runs `job` over this frame on `session`'s Rust session (see [`run_job`]).
    fn run<T: Send + 'static>(
        &self,
        py: Python<'_>,
        session: &PySession,
        job: impl FnOnce(&DataFrame, &Session) -> tessera::Result<T> + Send + 'static,
    ) -> PyResult<T> {
        let s = session.get()?;
        let frame = self.df.clone();
        run_job(py, Some(s.clone()), move || job(&frame, &s))
    }
}

impl PySeries {
    /// Wraps `s`, raising the error it carries if building it failed.
    fn wrap(s: Series) -> PyResult<PySeries> {
        match s.error() {
            Some(e) => Err(to_py(e.clone())),
            None => Ok(PySeries { s }),
        }
    }
}

/// A Python scalar (`None`, bool, int, float, str, `decimal.Decimal`, or a NumPy number,
/// a date, time or offset: see [`crate::scalars`]) as a literal.
fn literal(obj: &Bound<'_, PyAny>) -> PyResult<Literal> {
    if obj.is_none() {
        Ok(Literal::Null)
    } else if obj.is_instance_of::<PyBool>() {
        Ok(Literal::Bool(obj.extract()?))
    } else if obj.is_instance_of::<PyInt>() {
        Ok(Literal::Int(obj.extract().map_err(|_| {
            value_error(format!("integer {obj} does not fit in int64"))
        })?))
    } else if obj.is_instance_of::<PyFloat>() {
        Ok(Literal::Float(obj.extract()?))
    } else if obj.is_instance_of::<PyString>() {
        Ok(Literal::Str(obj.extract()?))
    } else if obj.is_instance(&decimal_class(obj.py())?)? {
        decimal_literal(obj)
    } else if let Some(other) = crate::scalars::literal(obj)? {
        Ok(other)
    } else {
        Err(type_error(format!(
            "{} is neither a series nor a scalar",
            obj.get_type()
        )))
    }
}

/// Python's `decimal.Decimal` class.
fn decimal_class(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("decimal")?.getattr("Decimal")
}

/// A `decimal.Decimal` as a decimal literal of its own digits (`Decimal("1.50")` is 1.50 of
/// precision 3, scale 2); NaN, the infinities and more than 38 digits are a `ValueError`.
fn decimal_literal(obj: &Bound<'_, PyAny>) -> PyResult<Literal> {
    let (sign, digits, exponent): (i64, Vec<u32>, Bound<'_, PyAny>) =
        obj.call_method0("as_tuple")?.extract()?;
    let exponent: i64 = exponent
        .extract()
        .map_err(|_| value_error(format!("{obj} is not a finite decimal")))?;
    let too_wide = || value_error(format!("{obj} has more than 38 digits"));
    // A positive exponent (Decimal("1E+2")) becomes trailing zeros at scale 0.
    let zeros = usize::try_from(exponent.max(0)).map_err(|_| too_wide())?;
    let mut value: i128 = 0;
    for d in digits.iter().copied().chain(std::iter::repeat_n(0, zeros)) {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i128::from(d)))
            .ok_or_else(too_wide)?;
    }
    if sign == 1 {
        value = -value;
    }
    let scale = i8::try_from(-exponent.min(0)).map_err(|_| too_wide())?;
    let digits = value
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as i64 + 1);
    let precision = u8::try_from(digits.max(i64::from(scale)).max(1)).map_err(|_| too_wide())?;
    Literal::decimal(value, precision, scale).map_err(|_| too_wide())
}

/// The right side of a series operation: a `_Series` or a scalar.
fn series_operand(obj: &Bound<'_, PyAny>) -> PyResult<SeriesOperand> {
    match obj.cast::<PySeries>() {
        Ok(s) => Ok(SeriesOperand::Series(s.get().s.clone())),
        Err(_) => Ok(literal(obj)?.into()),
    }
}

/// A pattern from pandas' arguments: its text, whether it is a regular expression, and
/// the flags `_accessors.py` reads from `case` and `re`'s flags: ignore case, multiline,
/// dot-all, verbose.
fn pattern(text: &str, regex: bool, flags: (bool, bool, bool, bool)) -> Pattern {
    let (ignore_case, multiline, dot_all, verbose) = flags;
    let p = match regex {
        true => Pattern::regex(text),
        false => Pattern::plain(text),
    };
    p.ignore_case(ignore_case)
        .multiline(multiline)
        .dot_all(dot_all)
        .verbose(verbose)
}

/// An aggregation by its pandas name.
fn agg(name: &str) -> PyResult<Agg> {
    Ok(match name {
        "sum" => Agg::Sum,
        "mean" => Agg::Mean,
        "min" => Agg::Min,
        "max" => Agg::Max,
        "count" => Agg::Count,
        "size" => Agg::Size,
        "std" => Agg::Std,
        "var" => Agg::Var,
        "first" => Agg::First,
        "last" => Agg::Last,
        "nunique" => Agg::NUnique,
        other => {
            return Err(value_error(format!(
            "no aggregation {other:?}; use sum mean min max count size std var first last nunique"
        )))
        }
    })
}

/// A join kind by its pandas name, or Tessera's `leftsemi` and `leftanti`.
fn how(name: &str) -> PyResult<How> {
    match name {
        "inner" => Ok(How::Inner),
        "left" => Ok(How::Left),
        "right" => Ok(How::Right),
        "outer" => Ok(How::Outer),
        "leftsemi" => Ok(How::LeftSemi),
        "leftanti" => Ok(How::LeftAnti),
        other => Err(value_error(format!(
            "how={other:?}; use 'inner', 'left', 'right', 'outer', 'leftsemi' or 'leftanti'"
        ))),
    }
}

/// `batches` as an Arrow PyCapsule stream.
fn export_stream<'py>(
    py: Python<'py>,
    schema: arrow::datatypes::SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    // The consumer moves the stream out; the capsule's destructor drops what is left
    // (releasing the stream if nobody took it).
    PyCapsule::new_with_value(py, stream, STREAM)
}

/// Reads every batch of an object with `__arrow_c_stream__` (a pyarrow table, …).
fn import_stream(
    obj: &Bound<'_, PyAny>,
) -> PyResult<(arrow::datatypes::SchemaRef, Vec<RecordBatch>)> {
    let capsule = obj
        .call_method0("__arrow_c_stream__")
        .map_err(|_| type_error(format!("{} has no __arrow_c_stream__", obj.get_type())))?;
    let capsule = capsule.cast_into::<PyCapsule>().map_err(PyErr::from)?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named "arrow_array_stream", so by the Arrow PyCapsule
    // interface it points to an FFI_ArrowArrayStream, which `from_raw` moves out of
    // (leaving a released stream for the capsule's destructor).
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr.cast().as_ptr()) }
        .map_err(|e| value_error(format!("cannot read the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| value_error(format!("cannot read the Arrow stream: {e}")))?;
    Ok((schema, batches))
}

/// A frame over the Arrow stream `data` (a pyarrow table), one chunk per batch, or cut
/// into chunks of `rows_per_chunk` rows (slices of the batches, no copy).
#[pyfunction]
#[pyo3(signature = (data, rows_per_chunk=None))]
fn from_arrow(data: &Bound<'_, PyAny>, rows_per_chunk: Option<usize>) -> PyResult<PyFrame> {
    let (schema, batches) = import_stream(data)?;
    let batches: Vec<RecordBatch> = match rows_per_chunk {
        Some(0) => return Err(value_error("rows_per_chunk must be positive")),
        Some(step) => batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows())
                    .step_by(step)
                    .map(move |s| b.slice(s, step.min(b.num_rows() - s)))
            })
            .collect(),
        None => batches.into_iter().filter(|b| b.num_rows() > 0).collect(),
    };
    let batches = if batches.is_empty() {
        vec![RecordBatch::new_empty(schema)]
    } else {
        batches
    };
    PyFrame::wrap(df::from_batches(batches))
}

/// Reads a CSV file (or a glob of files) lazily.
#[pyfunction]
fn read_csv(path: &str) -> PyResult<PyFrame> {
    PyFrame::wrap(df::read_csv(path))
}

/// Reads a Parquet file lazily, optionally only `columns`.
#[pyfunction]
#[pyo3(signature = (path, columns=None))]
fn read_parquet(path: &str, columns: Option<Vec<String>>) -> PyResult<PyFrame> {
    let options = df::ReadParquet {
        columns,
        ..Default::default()
    };
    PyFrame::wrap(df::read_parquet_with(path, options))
}

/// `names` as string slices.
fn strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

#[pymethods]
impl PyFrame {
    /// The column names.
    #[getter]
    fn columns(&self) -> PyResult<Vec<String>> {
        self.df.columns().map_err(to_py)
    }

    /// The optimised plan a job of this frame runs, as text (runs nothing).
    fn explain(&self) -> PyResult<String> {
        self.df.explain().map_err(to_py)
    }

    /// Each column's name and Arrow type, as text.
    #[getter]
    fn dtypes(&self) -> PyResult<Vec<(String, String)>> {
        let types = self.df.dtypes().map_err(to_py)?;
        Ok(types.into_iter().map(|(n, t)| (n, t.to_string())).collect())
    }

    /// The column `name`.
    fn column(&self, name: &str) -> PyResult<PySeries> {
        PySeries::wrap(self.df.column(name))
    }

    /// Only `columns`, in that order.
    fn select(&self, columns: Vec<String>) -> PyResult<PyFrame> {
        PyFrame::wrap(self.df.select(&strs(&columns)))
    }

    /// The rows where the boolean series `mask`, a series of this frame, is true.
    fn filter(&self, mask: &PySeries) -> PyResult<PyFrame> {
        PyFrame::wrap(self.df.filter_series(&mask.s))
    }

    /// With columns added or replaced: each `(name, series of this frame or scalar)` in
    /// order.
    fn with_columns(&self, columns: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<PyFrame> {
        let columns = columns
            .into_iter()
            .map(|(name, value)| Ok((name, series_operand(&value)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PyFrame::wrap(self.df.assign(columns))
    }

    /// Groups by `keys` and aggregates `(column, function, output name)` triples.
    #[pyo3(signature = (keys, specs, sort=true))]
    fn groupby_agg(
        &self,
        keys: Vec<String>,
        specs: Vec<(String, String, String)>,
        sort: bool,
    ) -> PyResult<PyFrame> {
        let aggs = specs
            .into_iter()
            .map(|(column, func, output)| {
                Ok(AggSpec {
                    column,
                    func: agg(&func)?,
                    output,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyFrame::wrap(self.df.groupby(&strs(&keys)).sort(sort).agg_named(aggs))
    }

    /// Groups by `keys` and applies `func` to every other column (numeric ones for sum,
    /// mean, std and var); `size` counts each group's rows.
    #[pyo3(signature = (keys, func, sort=true))]
    fn groupby_each(&self, keys: Vec<String>, func: &str, sort: bool) -> PyResult<PyFrame> {
        let g = self.df.groupby(&strs(&keys)).sort(sort);
        PyFrame::wrap(match func {
            "sum" => g.sum(),
            "mean" => g.mean(),
            "min" => g.min(),
            "max" => g.max(),
            "count" => g.count(),
            "size" => g.size(),
            other => return Err(value_error(format!("no groupby method {other:?}"))),
        })
    }

    /// Joins with `right` on `left_on` = `right_on` (pandas' `merge`), with pandas'
    /// indicator column when `indicator` names one.
    #[pyo3(signature = (right, left_on, right_on, how_, suffixes, indicator=None))]
    fn merge(
        &self,
        right: &PyFrame,
        left_on: Vec<String>,
        right_on: Vec<String>,
        how_: &str,
        suffixes: (String, String),
        indicator: Option<String>,
    ) -> PyResult<PyFrame> {
        let (left_on, right_on) = (strs(&left_on), strs(&right_on));
        let suffixes = (suffixes.0.as_str(), suffixes.1.as_str());
        let how = how(how_)?;
        PyFrame::wrap(match indicator {
            Some(name) => self
                .df
                .merge_indicator(&right.df, &left_on, &right_on, how, suffixes, &name),
            None => self
                .df
                .merge_on(&right.df, &left_on, &right_on, how, suffixes),
        })
    }

    /// Sorted by the columns `by`, one direction per key, nulls first or last.
    fn sort_values(
        &self,
        by: Vec<String>,
        ascending: Vec<bool>,
        nulls_first: bool,
    ) -> PyResult<PyFrame> {
        let na = if nulls_first {
            df::NaPosition::First
        } else {
            df::NaPosition::Last
        };
        PyFrame::wrap(self.df.sort_values_with(&strs(&by), ascending, na))
    }

    /// The first `n` rows.
    fn head(&self, n: usize) -> PyResult<PyFrame> {
        PyFrame::wrap(self.df.head(n))
    }

    /// With columns renamed, `(old, new)` pairs.
    fn rename(&self, pairs: Vec<(String, String)>) -> PyResult<PyFrame> {
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        PyFrame::wrap(self.df.rename(&pairs))
    }

    /// Without these columns.
    fn drop(&self, columns: Vec<String>) -> PyResult<PyFrame> {
        PyFrame::wrap(self.df.drop(&strs(&columns)))
    }

    /// The `n` rows with the largest (`largest`) or smallest values of `columns`.
    fn nextreme(&self, n: usize, columns: Vec<String>, largest: bool) -> PyResult<PyFrame> {
        let columns = strs(&columns);
        PyFrame::wrap(if largest {
            self.df.nlargest(n, &columns)
        } else {
            self.df.nsmallest(n, &columns)
        })
    }

    /// The count of each value of `column`, most frequent first.
    fn value_counts(&self, column: &str) -> PyResult<PyFrame> {
        PyFrame::wrap(self.df.value_counts(column))
    }

    /// Without repeated rows (judged on `subset` when given).
    #[pyo3(signature = (subset=None))]
    fn drop_duplicates(&self, subset: Option<Vec<String>>) -> PyResult<PyFrame> {
        let subset = subset.as_deref().map(strs);
        PyFrame::wrap(self.df.drop_duplicates(subset.as_deref()))
    }

    /// Computes the frame on `session`; returns its chunks as an Arrow stream capsule.
    fn compute_stream<'py>(
        &self,
        py: Python<'py>,
        session: &PySession,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = self.df.schema().map_err(to_py)?;
        let batches = self.run(py, session, |f, s| f.execute_chunks(s))?;
        export_stream(py, schema, batches)
    }

    /// Summary statistics of the numeric columns (pandas' `describe`) as an Arrow stream.
    fn describe<'py>(
        &self,
        py: Python<'py>,
        session: &PySession,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let batch = self.run(py, session, |f, s| f.describe(s))?;
        export_stream(py, batch.schema(), vec![batch])
    }

    /// The number of rows (runs a job).
    fn len(&self, py: Python<'_>, session: &PySession) -> PyResult<usize> {
        self.run(py, session, |f, s| f.len(s))
    }

    /// Computes the frame and keeps its chunks in `session`.
    fn persist(&self, py: Python<'_>, session: &PySession) -> PyResult<PyFrame> {
        PyFrame::wrap(self.run(py, session, |f, s| f.persist(s))?)
    }

    /// Writes the frame to `path` as CSV (`parquet=False`) or Parquet; returns the rows.
    fn write(
        &self,
        py: Python<'_>,
        session: &PySession,
        path: String,
        parquet: bool,
    ) -> PyResult<usize> {
        self.run(py, session, move |f, s| match parquet {
            true => f.to_parquet(s, &path, false),
            false => f.to_csv(s, &path, false),
        })
    }
}

#[pymethods]
impl PySeries {
    /// The series' name.
    #[getter]
    fn name(&self) -> &str {
        self.s.name()
    }

    /// `op(self, other)` (or `op(other, self)` with `reflected`): arithmetic `add sub mul
    /// div mod`, comparisons `eq ne lt le gt ge`, Kleene `and or`.
    #[pyo3(signature = (op, other, reflected=false))]
    fn binary(&self, op: &str, other: &Bound<'_, PyAny>, reflected: bool) -> PyResult<PySeries> {
        let rhs = series_operand(other)?;
        let s = &self.s;
        let out = match (op, reflected) {
            ("add", false) => s + rhs,
            ("mul", _) => s * rhs,
            ("sub", false) => s - rhs,
            ("div", false) => s / rhs,
            ("mod", false) => s % rhs,
            ("add", true) => s + rhs,
            ("sub", true) => s.reflected(rhs, |a, b| a - b),
            ("div", true) => s.reflected(rhs, |a, b| a / b),
            ("mod", true) => s.reflected(rhs, |a, b| a % b),
            ("eq", _) => s.eq(rhs),
            ("ne", _) => s.ne(rhs),
            ("lt", false) | ("gt", true) => s.lt(rhs),
            ("le", false) | ("ge", true) => s.le(rhs),
            ("gt", false) | ("lt", true) => s.gt(rhs),
            ("ge", false) | ("le", true) => s.ge(rhs),
            ("and", _) => s.and_(rhs),
            ("or", _) => s.or_(rhs),
            (other, reflected) => {
                return Err(type_error(format!(
                    "series operation {other:?} (reflected: {reflected}) is not supported"
                )))
            }
        };
        PySeries::wrap(out)
    }

    /// `not self` (booleans) or `-self` (numbers).
    fn unary(&self, op: &str) -> PyResult<PySeries> {
        PySeries::wrap(match op {
            "not" => !&self.s,
            "neg" => -&self.s,
            other => return Err(value_error(format!("no series operation {other:?}"))),
        })
    }

    /// A frame of the columns `index` and then this series.
    fn to_frame_with(&self, index: Vec<String>) -> PyResult<PyFrame> {
        PyFrame::wrap(self.s.to_frame_with(&strs(&index)))
    }

    /// The same values under another name.
    fn rename(&self, name: &str) -> PyResult<PySeries> {
        PySeries::wrap(self.s.rename(name))
    }

    /// `isna`, `notna`, `abs`: the numeric functions without arguments.
    fn math(&self, func: &str) -> PyResult<PySeries> {
        PySeries::wrap(match func {
            "isna" => self.s.isna(),
            "notna" => self.s.notna(),
            "abs" => self.s.abs(),
            other => return Err(value_error(format!("no series function {other:?}"))),
        })
    }

    /// Rounded to `decimals` places, halves to even.
    fn round(&self, decimals: i32) -> PyResult<PySeries> {
        PySeries::wrap(self.s.round(decimals))
    }

    /// pandas' `case_when`: `(condition, value)` pairs, first match wins, else own value.
    fn case_when(&self, cases: Vec<(PyRef<'_, PySeries>, Bound<'_, PyAny>)>) -> PyResult<PySeries> {
        let cases = cases
            .into_iter()
            .map(|(c, v)| Ok((c.s.clone(), series_operand(&v)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PySeries::wrap(self.s.case_when(cases))
    }

    /// Whether each value is one of `values`.
    fn isin(&self, values: Vec<Bound<'_, PyAny>>) -> PyResult<PySeries> {
        let values = values.iter().map(literal).collect::<PyResult<Vec<_>>>()?;
        PySeries::wrap(self.s.isin(&values))
    }

    /// Whether each value occurs among the values of `values`, a series of any frame (a
    /// mark join; a null is among values holding a null, as in pandas).
    fn isin_series(&self, values: &PySeries) -> PyResult<PySeries> {
        PySeries::wrap(self.s.isin_series(&values.s))
    }

    /// Nulls replaced by `value`.
    fn fillna(&self, value: &Bound<'_, PyAny>) -> PyResult<PySeries> {
        PySeries::wrap(self.s.fillna(literal(value)?))
    }

    /// The series as a one-column frame.
    fn to_frame(&self) -> PyResult<PyFrame> {
        PyFrame::wrap(self.s.to_frame())
    }

    /// Whether `low <= value <= high`.
    fn between(&self, low: &Bound<'_, PyAny>, high: &Bound<'_, PyAny>) -> PyResult<PySeries> {
        PySeries::wrap(self.s.between(literal(low)?, literal(high)?))
    }

    /// Converted to the type named `dtype` (see [`frame_type`]).
    fn astype(&self, dtype: &str) -> PyResult<PySeries> {
        PySeries::wrap(self.s.astype(frame_type(dtype)?))
    }

    /// Each value mapped through the `(from, to)` pairs; unmatched values become null.
    fn map_values(&self, pairs: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)>) -> PyResult<PySeries> {
        let pairs = pairs
            .iter()
            .map(|(from, to)| Ok((literal(from)?, literal(to)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PySeries::wrap(self.s.map_values(&pairs))
    }

    /// The values where `cond` holds, `other` (a series or a scalar) elsewhere.
    fn where_(&self, cond: &PySeries, other: &Bound<'_, PyAny>) -> PyResult<PySeries> {
        PySeries::wrap(self.s.where_(&cond.s, series_operand(other)?))
    }

    /// The distinct values.
    fn unique(&self) -> PyResult<PySeries> {
        PySeries::wrap(self.s.unique())
    }

    /// A `str` function without arguments: `lower upper len strip`.
    fn str_unary(&self, func: &str) -> PyResult<PySeries> {
        let s = self.s.str();
        PySeries::wrap(match func {
            "lower" => s.lower(),
            "upper" => s.upper(),
            "len" => s.len(),
            "strip" => s.strip(),
            other => return Err(value_error(format!("no str function {other:?}"))),
        })
    }

    /// A `str` test against a text: `startswith endswith`.
    fn str_test(&self, func: &str, text: &str) -> PyResult<PySeries> {
        let s = self.s.str();
        PySeries::wrap(match func {
            "startswith" => s.startswith(text),
            "endswith" => s.endswith(text),
            other => return Err(value_error(format!("no str test {other:?}"))),
        })
    }

    /// Every `old` replaced by `new` (plain text).
    fn str_replace(&self, old: &str, new: &str) -> PyResult<PySeries> {
        PySeries::wrap(self.s.str().replace(old, new))
    }

    /// A pattern test: `contains`, `match` or `fullmatch` (see [`pattern`]).
    fn str_pattern_test(
        &self,
        func: &str,
        pat: &str,
        regex: bool,
        flags: (bool, bool, bool, bool),
    ) -> PyResult<PySeries> {
        let (s, p) = (self.s.str(), pattern(pat, regex, flags));
        PySeries::wrap(match func {
            "contains" => s.contains(p),
            "match" => s.match_(p),
            "fullmatch" => s.fullmatch(p),
            other => return Err(value_error(format!("no str pattern test {other:?}"))),
        })
    }

    /// The capture groups of the regular expression `pat`'s first match, a column each.
    fn str_extract(&self, pat: &str, flags: (bool, bool, bool, bool)) -> PyResult<PyFrame> {
        PyFrame::wrap(self.s.str().extract_frame(pattern(pat, true, flags)))
    }

    /// The one capture group of `pat`'s first match.
    fn str_extract_one(&self, pat: &str, flags: (bool, bool, bool, bool)) -> PyResult<PySeries> {
        PySeries::wrap(self.s.str().extract(pattern(pat, true, flags)))
    }

    /// Every match of `pat` replaced by `repl` (a Python `re.sub` template).
    fn str_replace_regex(
        &self,
        pat: &str,
        repl: &str,
        regex: bool,
        flags: (bool, bool, bool, bool),
    ) -> PyResult<PySeries> {
        PySeries::wrap(self.s.str().replace_regex(pattern(pat, regex, flags), repl))
    }

    /// SQL `LIKE`, with an optional escape character.
    #[pyo3(signature = (pattern, escape=None))]
    fn str_like(&self, pattern: &str, escape: Option<char>) -> PyResult<PySeries> {
        let s = self.s.str();
        PySeries::wrap(match escape {
            Some(e) => s.like_escape(pattern, e),
            None => s.like(pattern),
        })
    }

    /// Characters `start..stop` with Python's slice bounds.
    #[pyo3(signature = (start, stop=None))]
    fn str_slice(&self, start: i64, stop: Option<i64>) -> PyResult<PySeries> {
        PySeries::wrap(self.s.str().slice(start, stop))
    }

    /// A date field: `year month day hour minute second weekday dayofyear quarter`.
    fn dt_field(&self, field: &str) -> PyResult<PySeries> {
        let d = self.s.dt();
        PySeries::wrap(match field {
            "year" => d.year(),
            "month" => d.month(),
            "day" => d.day(),
            "hour" => d.hour(),
            "minute" => d.minute(),
            "second" => d.second(),
            "weekday" => d.weekday(),
            "dayofyear" => d.dayofyear(),
            "quarter" => d.quarter(),
            other => return Err(value_error(format!("no date field {other:?}"))),
        })
    }

    /// Timestamps rounded down to a whole `unit`: pandas' frequencies `D`, `h`, `min`, `s`.
    fn dt_floor(&self, unit: &str) -> PyResult<PySeries> {
        let unit = match unit {
            "D" | "d" => df::FloorUnit::Day,
            "h" | "H" => df::FloorUnit::Hour,
            "min" | "T" => df::FloorUnit::Minute,
            "s" | "S" => df::FloorUnit::Second,
            other => {
                return Err(value_error(format!(
                    "floor to {other:?} is not supported; use 'D', 'h', 'min' or 's'"
                )))
            }
        };
        PySeries::wrap(self.s.dt().floor(unit))
    }

    /// Zoneless timestamps read as the wall clock of zone `tz`, or (`None`) zoned ones'
    /// wall clocks without their zone.
    #[pyo3(signature = (tz=None))]
    fn dt_tz_localize(&self, tz: Option<&str>) -> PyResult<PySeries> {
        PySeries::wrap(self.s.dt().tz_localize(tz))
    }

    /// Zoned timestamps' instants in zone `tz`.
    fn dt_tz_convert(&self, tz: &str) -> PyResult<PySeries> {
        PySeries::wrap(self.s.dt().tz_convert(tz))
    }
}

/// The Arrow type for a pandas or NumPy dtype name: `bool`, `int8`..`int64`,
/// `uint8`..`uint64`, `float32`, `float64`, `string` (or `str`, `object`), `category` (a
/// dictionary of strings), `datetime64[s|ms|us|ns]`, and `decimal(p, s)` (also spelled
/// `decimal128(p, s)`, pyarrow's name, with pandas' `[pyarrow]` suffix or without).
fn frame_type(name: &str) -> PyResult<DataType> {
    if let Some(decimal) = decimal_type(name) {
        return decimal;
    }
    Ok(match name {
        "bool" | "boolean" => DataType::Boolean,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" | "int" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float32" => DataType::Float32,
        "float64" | "float" => DataType::Float64,
        "string" | "str" | "object" => DataType::Utf8,
        "category" => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        "datetime64[s]" => DataType::Timestamp(TimeUnit::Second, None),
        "datetime64[ms]" => DataType::Timestamp(TimeUnit::Millisecond, None),
        "datetime64[us]" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "datetime64[ns]" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        other => {
            return Err(type_error(format!(
                "astype to {other:?} is not supported; use bool, int8..int64, uint8..uint64, \
                 float32, float64, string, category, datetime64[s|ms|us|ns] or decimal(p, s)"
            )))
        }
    })
}

/// `decimal(p, s)` or `decimal128(p, s)` (optionally `[pyarrow]`) as a `Decimal128`; `None`
/// for other names.
fn decimal_type(name: &str) -> Option<PyResult<DataType>> {
    let name = name.trim().strip_suffix("[pyarrow]").unwrap_or(name).trim();
    let args = name
        .strip_prefix("decimal128(")
        .or_else(|| name.strip_prefix("decimal("))?
        .strip_suffix(')')?;
    let parsed = args
        .split_once(',')
        .and_then(|(p, s)| Some((p.trim().parse::<u8>().ok()?, s.trim().parse::<i8>().ok()?)));
    Some(match parsed {
        Some((p, s)) if (1..=38).contains(&p) && s >= 0 && s as u8 <= p => {
            Ok(DataType::Decimal128(p, s))
        }
        _ => Err(type_error(format!(
            "astype to {name:?}: a decimal needs a precision of 1 to 38 and a scale of 0 to \
             the precision, as decimal(15, 2)"
        ))),
    })
}

/// Adds the dataframe classes and functions to the native module.
/// Frames stacked in order, columns matched by name (pandas' `concat`).
#[pyfunction]
fn concat(frames: Vec<PyRef<'_, PyFrame>>) -> PyResult<PyFrame> {
    let frames: Vec<DataFrame> = frames.iter().map(|f| f.df.clone()).collect();
    PyFrame::wrap(df::concat(&frames))
}

/// NumPy's `where` on columns: `x` where `cond` holds, else `y`.
#[pyfunction]
fn series_where(cond: &PySeries, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<PySeries> {
    PySeries::wrap(df::where_(&cond.s, series_operand(x)?, series_operand(y)?))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFrame>()?;
    m.add_class::<PySeries>()?;
    m.add_function(wrap_pyfunction!(concat, m)?)?;
    m.add_function(wrap_pyfunction!(series_where, m)?)?;
    m.add_function(wrap_pyfunction!(from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(read_csv, m)?)?;
    m.add_function(wrap_pyfunction!(read_parquet, m)?)?;
    Ok(())
}
