//! pandas' `Series`: one column of a frame (`df.column("fare")`, pandas' `df["fare"]`), as an
//! expression over that frame, with arithmetic, comparisons, reductions, the `str` and `dt`
//! accessors, and `to_frame`.
//!
//! Tessera frames have no index, so two series combine only when they come from the same
//! frame (`df.column("a") + df.column("b")`); series of different frames are a
//! `FrameError::InvalidArgument` rather than pandas' alignment on the index.

use super::{col, when, DataFrame, Expr, FloorUnit, FrameError, Literal, StrFunction};
use crate::error::{Error, Result};
use crate::session::Session;
use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use std::sync::Arc;
use tessera_kernels::frame::groupby::AggFunc;

/// One column of a frame, lazy (see the module docs).
#[derive(Clone, Debug)]
pub struct Series {
    frame: DataFrame,
    expr: Expr,
    name: String,
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
            expr: col(name),
            name: name.to_string(),
        }
    }
}

impl Series {
    /// The series' name (its column's, until renamed).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The expression computing it over its frame (to filter or extend that frame:
    /// `df.filter(s.expr())`, `df.with_column("x", s.expr())`).
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

    /// A one-column frame of it (pandas' `to_frame`).
    pub fn to_frame(&self) -> DataFrame {
        self.frame
            .select_exprs(vec![self.expr.clone().alias(&self.name)])
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
            expr: col(&self.name),
            name: self.name.clone(),
        }
    }

    /// The same frame with another expression.
    fn map(&self, f: impl FnOnce(Expr) -> Expr) -> Series {
        Series {
            frame: self.frame.clone(),
            expr: f(self.expr.clone()),
            name: self.name.clone(),
        }
    }

    /// `f(self, rhs)` for a constant or a series of the same frame.
    fn binary(&self, rhs: impl Into<SeriesOperand>, f: impl FnOnce(Expr, Expr) -> Expr) -> Series {
        match rhs.into() {
            SeriesOperand::Expr(e) => self.map(|x| f(x, e)),
            SeriesOperand::Series(other) => match self.same_frame(&other) {
                Ok(()) => self.map(|x| f(x, other.expr)),
                Err(e) => self.failed(e),
            },
        }
    }

    /// `Ok` when `other` is a series of this series' frame, else why not.
    fn same_frame(&self, other: &Series) -> Result<()> {
        let (a, b) = (self.frame.node()?, other.frame.node()?);
        if Arc::ptr_eq(a, b) {
            return Ok(());
        }
        Err(Error::Frame(FrameError::InvalidArgument(format!(
            "series {:?} and {:?} come from different frames; Tessera has no index to align them on (combine columns of one frame, or merge the frames first)",
            self.name, other.name
        ))))
    }

    /// The values where `cond` (a boolean series of the same frame) is true, `other` (a
    /// constant or a series of the same frame) where it is false or null (pandas'
    /// `where`).
    pub fn where_(&self, cond: &Series, other: impl Into<SeriesOperand>) -> Series {
        if let Err(e) = self.same_frame(cond) {
            return self.failed(e);
        }
        let cond = cond.expr.clone();
        self.binary(other, |x, o| when(cond).then(x).otherwise(o))
    }

    fn failed(&self, e: Error) -> Series {
        Series {
            frame: DataFrame::failed(e),
            ..self.clone()
        }
    }

    /// Whether each value is one of `values` (pandas' `isin`; false for null).
    pub fn isin(&self, values: &[Literal]) -> Series {
        self.map(|x| x.isin(values))
    }

    /// Whether `low <= value <= high` (pandas' `between`).
    pub fn between(&self, low: impl Into<Expr>, high: impl Into<Expr>) -> Series {
        self.map(|x| x.between(low, high))
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
    /// Whether it contains `pattern` (plain text, not a regex).
    pub fn contains(&self, pattern: &str) -> Series {
        self.0.map(|x| x.str_contains(pattern))
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
