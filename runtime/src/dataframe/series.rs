//! pandas' `Series`: one column of a frame (`df.column("fare")`, pandas' `df["fare"]`), as an
//! expression over that frame, with arithmetic, comparisons, reductions, the `str` and `dt`
//! accessors, and `to_frame`.
//!
//! Tessera frames have no index, so two series combine only when they come from the same
//! frame (`df.column("a") + df.column("b")`); series of different frames are a
//! `FrameError::InvalidArgument` rather than pandas' alignment on the index.
//!
//! The one exception is [`Series::isin_series`], whose values may come from any frame: its
//! result is a series of the same frame as `self`, computed over that frame extended by a
//! hidden boolean column (a mark join's). Such a series combines with any other series of
//! that frame (their marks are joined in turn), filters it with
//! [`DataFrame::filter_series`] and is added to it with [`DataFrame::with_series`], which
//! drop the hidden columns again; its [`Series::expr`] reads them, so it is no expression
//! for [`DataFrame::filter`] or [`DataFrame::with_column`].

use super::{col, when, DataFrame, Expr, FloorUnit, FrameError, Literal, Pattern, StrFunction};
use crate::error::{Error, Result};
use crate::session::Session;
use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_kernels::frame::groupby::AggFunc;

/// One column of a frame, lazy (see the module docs).
#[derive(Clone, Debug)]
pub struct Series {
    /// The frame it is a series of.
    frame: DataFrame,
    /// Mark joins extending `frame` before `expr` is evaluated, in order (empty but for
    /// [`Series::isin_series`] and what is computed from it).
    marks: Vec<Arc<Mark>>,
    expr: Expr,
    name: String,
}

/// A mark join of a series' frame: a hidden boolean column saying whether a key computed
/// over the frame occurs among the values of another series.
#[derive(Debug)]
struct Mark {
    /// The hidden column's name, unique in the process.
    column: String,
    /// The key: an expression over the frame extended by the marks before this one.
    key: Expr,
    /// The values looked in, as a one-column frame.
    values: DataFrame,
}

/// Numbers the hidden columns of marks.
static NEXT_MARK: AtomicU64 = AtomicU64::new(0);

impl Mark {
    /// `frame` with this mark's column added (and its key's column dropped again).
    fn apply(&self, frame: &DataFrame) -> DataFrame {
        let key = format!("{}\u{1f}key", self.column);
        let values = match self.values.columns() {
            Ok(names) => names,
            Err(e) => return DataFrame::failed(e),
        };
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        frame
            .with_column(&key, self.key.clone())
            .mark_join(&self.values, &[key.as_str()], &values, &self.column)
            .drop(&[key.as_str()])
    }
}

/// The right side of a series operation: another series of the same frame, or a constant.
#[derive(Clone, Debug)]
pub enum SeriesOperand {
    /// A series (it must come from the same frame).
    Series(Series),
    /// A constant or an expression over the same frame.
    Expr(Expr),
}

impl From<&Series> for SeriesOperand {
    fn from(s: &Series) -> Self {
        SeriesOperand::Series(s.clone())
    }
}

impl From<Series> for SeriesOperand {
    fn from(s: Series) -> Self {
        SeriesOperand::Series(s)
    }
}

macro_rules! operand_from_literal {
    ($($t:ty),*) => {$(
        impl From<$t> for SeriesOperand {
            fn from(v: $t) -> Self {
                SeriesOperand::Expr(Expr::Literal(Literal::from(v)))
            }
        }
    )*};
}
operand_from_literal!(i64, i32, f64, bool, &str, Literal);

impl DataFrame {
    /// The column `name` as a [`Series`] (pandas' `df["name"]`); an unknown name is
    /// `ColumnNotFound`, carried by the series.
    pub fn column(&self, name: &str) -> Series {
        let frame = self.derive(|node| {
            tessera_kernels::frame::schema::column_index(&node.schema, name)?;
            Ok(node.clone())
        });
        Series {
            frame,
            marks: Vec::new(),
            expr: col(name),
            name: name.to_string(),
        }
    }

    /// The rows where `mask`, a boolean series of this frame, is true (null counts as
    /// false): pandas' `df[mask]`. The mask may be computed from
    /// [`Series::isin_series`] (then the rows come in the order of the mark join, see
    /// [`DataFrame::semi_join`]); a series of another frame is an `InvalidArgument`.
    pub fn filter_series(&self, mask: &Series) -> DataFrame {
        match mask.over(self) {
            Ok(marked) => mask.unmarked(marked.filter(mask.expr.clone())),
            Err(e) => DataFrame::failed(e),
        }
    }

    /// Adds column `name` (or replaces it) with the values of `series`, a series of this
    /// frame (pandas' `df.assign(name=series)`), which may be computed from
    /// [`Series::isin_series`]; a series of another frame is an `InvalidArgument`.
    pub fn with_series(&self, name: &str, series: &Series) -> DataFrame {
        self.assign(vec![(name.to_string(), series.into())])
    }

    /// Columns added or replaced in order, each a series of this frame (which may be
    /// computed from [`Series::isin_series`]) or a constant or expression (pandas'
    /// `assign`); a series of another frame is an `InvalidArgument`.
    pub fn assign(&self, columns: Vec<(String, SeriesOperand)>) -> DataFrame {
        // One frame extended by every series' marks.
        let mut all = Series {
            frame: self.clone(),
            marks: Vec::new(),
            expr: Expr::Literal(Literal::Null),
            name: String::new(),
        };
        for (_, value) in &columns {
            if let SeriesOperand::Series(s) = value {
                if let Err(e) = s.check_frame(self) {
                    return DataFrame::failed(e);
                }
                all.add_marks(s);
            }
        }
        let out = columns
            .into_iter()
            .fold(all.marked(), |out, (name, value)| match value {
                SeriesOperand::Series(s) => out.with_column(&name, s.expr),
                SeriesOperand::Expr(e) => out.with_column(&name, e),
            });
        all.unmarked(out)
    }
}

impl Series {
    /// The series' name (its column's, until renamed).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The expression computing it over its frame (to filter or extend that frame:
    /// `df.filter(s.expr())`, `df.with_column("x", s.expr())`). For a series computed from
    /// [`Series::isin_series`] it reads hidden columns of a mark join: use
    /// [`DataFrame::filter_series`] and [`DataFrame::with_series`] instead.
    pub fn expr(&self) -> Expr {
        self.expr.clone()
    }

    /// The error this series carries, if building it failed.
    pub fn error(&self) -> Option<&Error> {
        self.frame.error()
    }

    /// The same values under another name.
    pub fn rename(&self, name: &str) -> Series {
        Series {
            name: name.to_string(),
            ..self.clone()
        }
    }

    /// A one-column frame of it (pandas' `to_frame`). A series computed from
    /// [`Series::isin_series`] comes in the order of its mark join (see
    /// [`DataFrame::semi_join`]).
    pub fn to_frame(&self) -> DataFrame {
        self.marked()
            .select_exprs(vec![self.expr.clone().alias(&self.name)])
    }

    /// A frame of the columns `columns` of its frame and then the series (how pandas shows a
    /// series with its index).
    pub fn to_frame_with(&self, columns: &[&str]) -> DataFrame {
        let mut exprs: Vec<Expr> = columns.iter().map(|c| col(c)).collect();
        exprs.push(self.expr.clone().alias(&self.name));
        self.marked().select_exprs(exprs)
    }

    /// Its frame extended by its marks.
    fn marked(&self) -> DataFrame {
        self.marks
            .iter()
            .fold(self.frame.clone(), |frame, mark| mark.apply(&frame))
    }

    /// Its frame extended by its marks, where `frame` is its frame; else why not.
    fn over(&self, frame: &DataFrame) -> Result<DataFrame> {
        self.check_frame(frame)?;
        Ok(self.marked())
    }

    /// `Ok` when `frame` is this series' frame, else why not.
    fn check_frame(&self, frame: &DataFrame) -> Result<()> {
        let (a, b) = (self.frame.node()?, frame.node()?);
        match Arc::ptr_eq(a, b) {
            true => Ok(()),
            false => Err(Error::Frame(FrameError::InvalidArgument(format!(
                "series {:?} comes from another frame; Tessera has no index to align it on (use a series of this frame, or merge the frames first)",
                self.name
            )))),
        }
    }

    /// `frame` (its frame extended by its marks, then filtered or extended) without the
    /// marks' hidden columns.
    fn unmarked(&self, frame: DataFrame) -> DataFrame {
        if self.marks.is_empty() {
            return frame;
        }
        let hidden: Vec<&str> = self.marks.iter().map(|m| m.column.as_str()).collect();
        frame.drop(&hidden)
    }

    /// Whether each value occurs among the values of `values`, a series of any frame
    /// (pandas' `isin` with a Series, or `df.k.isin(other.k)` for SQL's `IN` subquery):
    /// a boolean series of this series' frame, never null, computed by a mark join of
    /// that frame with `values`' distinct values (broadcast when they are small,
    /// hash-shuffled with the frame otherwise; see [`DataFrame::mark_join`]). See the
    /// module docs for what it combines with.
    ///
    /// Nulls: as in pandas, a null value is in `values` when `values` holds a null (a NaN
    /// when it holds a NaN), where SQL's `IN` is never true for a null; the list form
    /// [`Series::isin`] is false for null. Values compare as join keys do (see
    /// [`DataFrame::merge_on`]): integers of any width with each other, integers with
    /// floats by value, any string encoding with any other; strings with numbers are a
    /// `TypeMismatch`.
    pub fn isin_series(&self, values: &Series) -> Series {
        if let Some(e) = values.error() {
            return self.failed(e.clone());
        }
        let n = NEXT_MARK.fetch_add(1, Ordering::Relaxed);
        let mark = Arc::new(Mark {
            column: format!("\u{1f}isin\u{1f}{n}"),
            key: self.expr.clone(),
            values: values.to_frame(),
        });
        let mut marks = self.marks.clone();
        marks.push(Arc::clone(&mark));
        let out = Series {
            frame: self.frame.clone(),
            marks,
            expr: col(&mark.column),
            name: self.name.clone(),
        };
        // Check the key types now, as other series operations do.
        match out.marked().error() {
            Some(e) => self.failed(e.clone()),
            None => out,
        }
    }

    /// Computes it and returns its values as one Arrow array.
    pub fn execute(&self, session: &Session) -> Result<ArrayRef> {
        Ok(self.to_frame().execute(session)?.column(0).clone())
    }

    /// Computes it and returns its first value as a [`Literal`] (for the one-row results of
    /// the reductions; null for nothing).
    pub fn item(&self, session: &Session) -> Result<Literal> {
        let values = self.execute(session)?;
        literal_at(&values, 0)
    }

    /// The number of values (runs a job).
    pub fn len(&self, session: &Session) -> Result<usize> {
        self.to_frame().len(session)
    }

    /// True when it has no values (runs a job).
    pub fn is_empty(&self, session: &Session) -> Result<bool> {
        Ok(self.len(session)? == 0)
    }

    /// The first `n` values.
    pub fn head(&self, n: usize) -> Series {
        self.on(self.to_frame().head(n))
    }

    /// A series over a frame whose one column is this series' values.
    fn on(&self, frame: DataFrame) -> Series {
        Series {
            frame,
            marks: Vec::new(),
            expr: col(&self.name),
            name: self.name.clone(),
        }
    }

    /// The same frame with another expression, typed now: a type mismatch or a bad
    /// pattern is the new series' error, not one found when it runs.
    fn map(&self, f: impl FnOnce(Expr) -> Expr) -> Series {
        let series = Series {
            frame: self.frame.clone(),
            marks: self.marks.clone(),
            expr: f(self.expr.clone()),
            name: self.name.clone(),
        };
        // Typed over the frame its expression reads: the marked one where it has marks.
        let schema = if self.marks.is_empty() {
            self.frame.schema()
        } else {
            self.marked().schema()
        };
        match schema.map(|schema| series.expr.data_type(&schema)) {
            Ok(Err(e)) => series.failed(Error::Frame(e)),
            _ => series,
        }
    }

    /// `f(self, rhs)` for a constant or a series of the same frame.
    fn binary(&self, rhs: impl Into<SeriesOperand>, f: impl FnOnce(Expr, Expr) -> Expr) -> Series {
        match self.with_operand(rhs.into()) {
            Ok((both, r)) => both.map(|x| f(x, r)),
            Err(e) => self.failed(e),
        }
    }

    /// This series with the marks of `other`, a series of the same frame, added after its
    /// own (so both expressions read the same extended frame); else why not.
    fn with_marks_of(&self, other: &Series) -> Result<Series> {
        let (a, b) = (self.frame.node()?, other.frame.node()?);
        if !Arc::ptr_eq(a, b) {
            return Err(Error::Frame(FrameError::InvalidArgument(format!(
                "series {:?} and {:?} come from different frames; Tessera has no index to align them on (combine columns of one frame, or merge the frames first)",
                self.name, other.name
            ))));
        }
        let mut both = self.clone();
        both.add_marks(other);
        Ok(both)
    }

    /// Adds the marks of `other` (a series of the same frame) that it lacks, after its own.
    fn add_marks(&mut self, other: &Series) {
        for m in &other.marks {
            if !self.marks.iter().any(|have| Arc::ptr_eq(have, m)) {
                self.marks.push(Arc::clone(m));
            }
        }
    }

    /// The values where `cond` (a boolean series of the same frame) is true, `other` (a
    /// constant or a series of the same frame) where it is false or null (pandas'
    /// `where`).
    pub fn where_(&self, cond: &Series, other: impl Into<SeriesOperand>) -> Series {
        match self.with_marks_of(cond) {
            Ok(both) => {
                let cond = cond.expr.clone();
                both.binary(other, |x, o| when(cond).then(x).otherwise(o))
            }
            Err(e) => self.failed(e),
        }
    }

    fn failed(&self, e: Error) -> Series {
        Series {
            frame: DataFrame::failed(e),
            ..self.clone()
        }
    }

    /// Whether each value is one of `values` (pandas' `isin` with a list; false for null,
    /// unlike pandas, which finds a null among values holding one). See
    /// [`Series::isin_series`] for values from another series.
    pub fn isin(&self, values: &[Literal]) -> Series {
        self.map(|x| x.isin(values))
    }

    /// Whether `low <= value <= high` (pandas' `between`).
    pub fn between(&self, low: impl Into<Expr>, high: impl Into<Expr>) -> Series {
        self.map(|x| x.between(low, high))
    }

    /// True where the value is null or a float NaN (pandas' `isna`, `isnull`).
    pub fn isna(&self) -> Series {
        self.map(Expr::is_na)
    }

    /// True where the value is neither null nor NaN (pandas' `notna`, `notnull`).
    pub fn notna(&self) -> Series {
        self.map(Expr::not_na)
    }

    /// The absolute values (pandas' `abs`).
    pub fn abs(&self) -> Series {
        self.map(Expr::abs)
    }

    /// Rounded to `decimals` places, halves to even (pandas' `round`).
    pub fn round(&self, decimals: i32) -> Series {
        self.map(|x| x.round(decimals))
    }

    /// pandas' `case_when`: the value of the first case whose condition (a boolean series
    /// of the same frame) holds, this series' own value where none does.
    pub fn case_when(&self, cases: Vec<(Series, SeriesOperand)>) -> Series {
        let mut out = self.clone();
        let mut branches = Vec::with_capacity(cases.len());
        for (cond, value) in cases {
            let step = out
                .with_marks_of(&cond)
                .and_then(|with_cond| with_cond.with_operand(value));
            match step {
                Ok((next, v)) => {
                    branches.push((cond.expr, v));
                    out = next;
                }
                Err(e) => return self.failed(e),
            }
        }
        out.map(|own| {
            branches
                .into_iter()
                .rev()
                .fold(own, |rest, (c, v)| when(c).then(v).otherwise(rest))
        })
    }

    /// `f(lhs, self)` for a constant or a series of the same frame on the left (Python's
    /// reflected operators: `1 / s`, `100 - s`).
    pub fn reflected(
        &self,
        lhs: impl Into<SeriesOperand>,
        f: impl FnOnce(Expr, Expr) -> Expr,
    ) -> Series {
        match self.with_operand(lhs.into()) {
            Ok((both, l)) => both.map(|x| f(l, x)),
            Err(e) => self.failed(e),
        }
    }

    /// This series (with the operand's marks) and the operand's expression: a constant as
    /// it is, a series when it is of this series' frame.
    fn with_operand(&self, operand: SeriesOperand) -> Result<(Series, Expr)> {
        match operand {
            SeriesOperand::Expr(e) => Ok((self.clone(), e)),
            SeriesOperand::Series(other) => {
                self.with_marks_of(&other).map(|both| (both, other.expr))
            }
        }
    }

    /// Nulls replaced by `value` (pandas' `fillna`).
    pub fn fillna(&self, value: impl Into<Expr>) -> Series {
        self.map(|x| x.fill_null(value))
    }

    /// Converted to `to` (pandas' `astype`).
    pub fn astype(&self, to: DataType) -> Series {
        self.map(|x| x.cast(to))
    }

    /// Each value mapped through `pairs` (pandas' `map` with a dict; unmatched values become
    /// null). Meant for small dicts: each pair is one comparison per row.
    pub fn map_values(&self, pairs: &[(Literal, Literal)]) -> Series {
        self.map(|x| x.map_values(pairs))
    }

    /// The number of occurrences of each value, most frequent first (a frame of the values
    /// and `count`).
    pub fn value_counts(&self) -> DataFrame {
        self.to_frame().value_counts(&self.name)
    }

    /// The distinct values (pandas' `unique`; in no particular order).
    pub fn unique(&self) -> Series {
        self.on(self.to_frame().drop_duplicates(None))
    }

    fn reduce(&self, func: AggFunc) -> Series {
        let frame = self.to_frame().groupby(&[]).agg_named(vec![
            tessera_kernels::frame::groupby::AggSpec {
                column: self.name.clone(),
                func,
                output: self.name.clone(),
            },
        ]);
        self.on(frame)
    }

    /// The `str` accessor: string functions (null stays null).
    pub fn str(&self) -> StrAccessor<'_> {
        StrAccessor(self)
    }

    /// The `dt` accessor: date and timestamp fields.
    pub fn dt(&self) -> DtAccessor<'_> {
        DtAccessor(self)
    }
}

macro_rules! reductions {
    ($($name:ident, $func:ident, $what:literal;)*) => {
        impl Series {$(
            #[doc = concat!("The ", $what, ", as a one-value series (`item` computes it).")]
            pub fn $name(&self) -> Series {
                self.reduce(AggFunc::$func)
            }
        )*}
    };
}

reductions! {
    sum, Sum, "sum of the non-null values (0 for none)";
    mean, Mean, "mean of the non-null values (null for none)";
    min, Min, "smallest non-null value";
    max, Max, "largest non-null value";
    count, Count, "number of non-null values";
    std, Std, "sample standard deviation (ddof 1)";
    var, Var, "sample variance (ddof 1)";
    nunique, NUnique, "number of distinct non-null values";
}

macro_rules! comparisons {
    ($($name:ident $what:literal),*) => {
        impl Series {$(
            #[doc = concat!("`", $what, "` elementwise, against a constant or a series of the same frame.")]
            pub fn $name(&self, rhs: impl Into<SeriesOperand>) -> Series {
                self.binary(rhs, Expr::$name)
            }
        )*}
    };
}

comparisons!(
    gt "self > rhs", ge "self >= rhs", lt "self < rhs", le "self <= rhs",
    eq "self == rhs", ne "self != rhs", and_ "self & rhs (Kleene)", or_ "self | rhs (Kleene)"
);

macro_rules! arithmetic {
    ($($trait:ident $method:ident $expr:ident),*) => {$(
        impl<R: Into<SeriesOperand>> std::ops::$trait<R> for &Series {
            type Output = Series;
            fn $method(self, rhs: R) -> Series {
                self.binary(rhs, |a, b| a.$expr(b))
            }
        }
        impl<R: Into<SeriesOperand>> std::ops::$trait<R> for Series {
            type Output = Series;
            fn $method(self, rhs: R) -> Series {
                self.binary(rhs, |a, b| a.$expr(b))
            }
        }
    )*};
}

arithmetic!(Add add add, Sub sub sub, Mul mul mul, Div div div, Rem rem rem);

impl std::ops::Not for &Series {
    type Output = Series;
    fn not(self) -> Series {
        self.map(Expr::not)
    }
}

impl std::ops::Neg for &Series {
    type Output = Series;
    fn neg(self) -> Series {
        self.map(|x| -x)
    }
}

/// pandas' `Series.str` (see [`Series::str`]).
#[derive(Clone, Copy, Debug)]
pub struct StrAccessor<'a>(&'a Series);

impl StrAccessor<'_> {
    fn apply(&self, f: StrFunction) -> Series {
        self.0.map(|x| x.str(f))
    }
    /// Lower case.
    pub fn lower(&self) -> Series {
        self.apply(StrFunction::Lower)
    }
    /// Upper case.
    pub fn upper(&self) -> Series {
        self.apply(StrFunction::Upper)
    }
    /// Length in characters (`Int64`).
    pub fn len(&self) -> Series {
        self.apply(StrFunction::Len)
    }
    /// Whether it starts with `prefix`.
    pub fn startswith(&self, prefix: &str) -> Series {
        self.apply(StrFunction::StartsWith(prefix.to_string()))
    }
    /// Whether it ends with `suffix`.
    pub fn endswith(&self, suffix: &str) -> Series {
        self.apply(StrFunction::EndsWith(suffix.to_string()))
    }
    /// Leading and trailing whitespace removed.
    pub fn strip(&self) -> Series {
        self.apply(StrFunction::Strip)
    }
    /// Every `from` replaced by `to` (plain text).
    pub fn replace(&self, from: &str, to: &str) -> Series {
        self.apply(StrFunction::Replace {
            from: from.to_string(),
            to: to.to_string(),
        })
    }
    /// Characters `start..stop` with Python's slice bounds (`stop` `None`: to the end).
    pub fn slice(&self, start: i64, stop: Option<i64>) -> Series {
        self.apply(StrFunction::Slice { start, stop })
    }

    /// Whether `pat` matches anywhere in each value (pandas' `str.contains`): a `&str` is
    /// a Python `re` regular expression, as pandas' default `regex=True`; a [`Pattern`]
    /// may be plain text, ignore case or carry flags. Plain text runs on the substring
    /// kernel. Null stays null (pandas' `na`: [`Series::fillna`]).
    pub fn contains(&self, pat: impl Into<Pattern>) -> Series {
        let pat = pat.into();
        match pat.literal() {
            Some(text) => self.0.map(|x| x.str_contains(text)),
            None => self.apply(StrFunction::Contains(pat)),
        }
    }

    /// Whether `pat` matches at the start of each value (pandas' `str.match`).
    pub fn match_(&self, pat: impl Into<Pattern>) -> Series {
        self.apply(StrFunction::Match(pat.into()))
    }

    /// Whether `pat` matches all of each value (pandas' `str.fullmatch`).
    pub fn fullmatch(&self, pat: impl Into<Pattern>) -> Series {
        self.apply(StrFunction::FullMatch(pat.into()))
    }

    /// The one capture group of `pat`'s first match in each value (pandas' `str.extract`
    /// with `expand=False`): null where it does not match. Named by the group's name, else
    /// the series'. A pattern with another number of groups is an error (see
    /// [`StrAccessor::extract_frame`]).
    pub fn extract(&self, pat: impl Into<Pattern>) -> Series {
        let pattern = pat.into();
        match pattern.group_names() {
            Ok(names) if names.len() == 1 => {
                let name = names[0].clone().unwrap_or_else(|| self.0.name.clone());
                let f = StrFunction::Extract { pattern, group: 1 };
                self.apply(f).rename(&name)
            }
            Ok(names) => self.0.failed(Error::Frame(pattern.error(format!(
                "str.extract to a series needs one capture group, not {} (use extract_frame)",
                names.len()
            )))),
            Err(e) => self.0.failed(Error::Frame(e)),
        }
    }

    /// Each capture group of `pat`'s first match in each value, a column per group named
    /// by the group's name, else its position from `"0"` (pandas' `str.extract`, whose
    /// labels are the integers): null where it does not match.
    pub fn extract_frame(&self, pat: impl Into<Pattern>) -> DataFrame {
        let pattern = pat.into();
        let names = match pattern.group_names() {
            Ok(names) if names.is_empty() => {
                let e = pattern.error("pattern contains no capture groups");
                return DataFrame::failed(Error::Frame(e));
            }
            Ok(names) => names,
            Err(e) => return DataFrame::failed(Error::Frame(e)),
        };
        let columns = names.into_iter().enumerate().map(|(i, name)| {
            let f = StrFunction::Extract {
                pattern: pattern.clone(),
                group: i + 1,
            };
            let name = name.unwrap_or_else(|| i.to_string());
            self.0.expr.clone().str(f).alias(&name)
        });
        self.0.frame.select_exprs(columns.collect())
    }

    /// Every match of `pat` replaced by `repl`, a Python `re.sub` template (`\1`,
    /// `\g<name>`): pandas' `str.replace` with `regex=True` (or `case=False`).
    pub fn replace_regex(&self, pat: impl Into<Pattern>, repl: &str) -> Series {
        self.apply(StrFunction::ReplaceRegex {
            pattern: pat.into(),
            repl: repl.to_string(),
        })
    }

    /// SQL `LIKE` (see [`Expr::like`]); `!` gives `NOT LIKE`.
    pub fn like(&self, pattern: &str) -> Series {
        self.0.map(|x| x.like(pattern))
    }

    /// SQL `LIKE ... ESCAPE escape` (see [`Expr::like_escape`]).
    pub fn like_escape(&self, pattern: &str, escape: char) -> Series {
        self.0.map(|x| x.like_escape(pattern, escape))
    }
}

/// pandas' `Series.dt` (see [`Series::dt`]).
#[derive(Clone, Copy, Debug)]
pub struct DtAccessor<'a>(&'a Series);

macro_rules! date_fields {
    ($($name:ident, $method:ident, $what:literal;)*) => {
        impl DtAccessor<'_> {$(
            #[doc = concat!("The ", $what, " (`Int32`).")]
            pub fn $name(&self) -> Series {
                self.0.map(Expr::$method)
            }
        )*}
    };
}

date_fields! {
    year, dt_year, "year";
    month, dt_month, "month, 1 to 12";
    day, dt_day, "day of the month, 1 to 31";
    hour, dt_hour, "hour, 0 to 23 (0 for dates)";
    minute, dt_minute, "minute, 0 to 59 (0 for dates)";
    second, dt_second, "second, 0 to 59 (0 for dates)";
    weekday, dt_weekday, "day of the week, Monday = 0";
    dayofyear, dt_dayofyear, "day of the year, 1 to 366";
    quarter, dt_quarter, "quarter, 1 to 4";
}

impl DtAccessor<'_> {
    /// Timestamps rounded down to a whole `unit` (dates stay as they are).
    pub fn floor(&self, unit: FloorUnit) -> Series {
        self.0.map(|x| x.dt_floor(unit))
    }

    /// Zoneless timestamps read as the wall clock of time zone `tz`, or with `None`
    /// zoned timestamps' wall clocks without their zone (see [`Expr::dt_tz_localize`]).
    pub fn tz_localize(&self, tz: Option<&str>) -> Series {
        self.0.map(|x| x.dt_tz_localize(tz))
    }

    /// Zoned timestamps' instants in time zone `tz` (see [`Expr::dt_tz_convert`]).
    pub fn tz_convert(&self, tz: &str) -> Series {
        self.0.map(|x| x.dt_tz_convert(tz))
    }
}

/// NumPy's `where` for columns: `x` where `cond` (a boolean series) is true, `y` where it is
/// false or null; `x` and `y` are constants or series of `cond`'s frame. The result is
/// named after the first series among `x` and `y` (else `cond`).
pub fn where_(cond: &Series, x: impl Into<SeriesOperand>, y: impl Into<SeriesOperand>) -> Series {
    let (x, y) = (x.into(), y.into());
    let name = [&x, &y]
        .into_iter()
        .find_map(|o| match o {
            SeriesOperand::Series(s) => Some(s.name.clone()),
            SeriesOperand::Expr(_) => None,
        })
        .unwrap_or_else(|| cond.name.clone());
    let both = cond
        .with_operand(x)
        .and_then(|(c, x)| c.with_operand(y).map(|(c, y)| (c, x, y)));
    match both {
        Ok((c, x, y)) => c.map(|c| when(c).then(x).otherwise(y)).rename(&name),
        Err(e) => cond.failed(e),
    }
}

/// The value at `i` of `values` as a [`Literal`].
fn literal_at(values: &ArrayRef, i: usize) -> Result<Literal> {
    use arrow::array::{BooleanArray, Decimal128Array, Float64Array, Int64Array, StringArray};
    use arrow::compute::cast;
    if values.len() <= i || values.is_null(i) {
        return Ok(Literal::Null);
    }
    let bad = |e: arrow::error::ArrowError| Error::Frame(e.into());
    let t = values.data_type();
    Ok(if *t == DataType::Boolean {
        let b = values.as_any().downcast_ref::<BooleanArray>();
        Literal::Bool(b.is_some_and(|b| b.value(i)))
    } else if t.is_integer() {
        let v = cast(values, &DataType::Int64).map_err(bad)?;
        let v = v.as_any().downcast_ref::<Int64Array>();
        v.map_or(Literal::Null, |v| Literal::Int(v.value(i)))
    } else if t.is_floating() {
        let v = cast(values, &DataType::Float64).map_err(bad)?;
        let v = v.as_any().downcast_ref::<Float64Array>();
        v.map_or(Literal::Null, |v| Literal::Float(v.value(i)))
    } else if let DataType::Decimal128(p, s) = *t {
        let v = values.as_any().downcast_ref::<Decimal128Array>();
        v.map_or(Literal::Null, |v| Literal::Decimal {
            value: v.value(i),
            precision: p,
            scale: s,
        })
    } else {
        let v = cast(values, &DataType::Utf8).map_err(bad)?;
        let v = v.as_any().downcast_ref::<StringArray>();
        v.map_or(Literal::Null, |v| Literal::Str(v.value(i).to_string()))
    })
}
