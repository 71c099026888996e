//! Column expressions: what users write to filter rows and compute columns, pandas/Polars
//! style (`col("tip") / col("fare")`, `col("tip").gt(0) & col("fare").gt(0)`).
//!
//! An [`Expr`] is type-checked against a schema with [`Expr::data_type`] when a lazy frame is
//! built, crosses the chunk-op boundary with serde, and is evaluated on each chunk with
//! [`Expr::evaluate`] by Arrow's compute kernels. Literals stay one-row constants (Arrow's
//! `Datum` scalars) until the end, so `col("x").gt(0)` never materializes a column of zeros.
//!
//! Type rules (pandas/NumPy-like):
//! - `+ - * %` on two integers give `Int64` (wrapping on overflow); any float operand gives
//!   `Float64`; `/` always gives `Float64`. Narrower integers and floats widen first.
//!   Booleans and strings in arithmetic are a [`FrameError::TypeMismatch`].
//! - `%` is floored modulo (the result has the sign of the divisor, as in Python); an integer
//!   `%` by zero is null. Float division by zero follows IEEE (inf or NaN, as pandas).
//! - `timestamp - timestamp` (same type) gives a `Duration`; dates, timestamps, durations
//!   and calendar offsets (`Literal::Interval`) add and subtract as the `temporal` module
//!   says (`date - duration_of_whole_days` is a date, `date - date` a duration).
//! - Comparisons: numbers with numbers (any widths; an integer against a float compares as
//!   floats), strings with strings (any encoding: Utf8, LargeUtf8, Utf8View, dictionary),
//!   dates with dates, timestamps with timestamps, booleans with booleans. A date or timestamp
//!   column also compares with a string literal, parsed as that type (`col("day").ge("2021-03-01")`),
//!   and with a date or timestamp literal as instants (a date is its midnight), read in the
//!   column's type (see the `temporal` module).
//!   Floats compare as IEEE (NaN is unequal to everything, `-0.0 == 0.0`), as pandas.
//! - Nulls: arithmetic and comparisons with null give null; `&` and `|` are Kleene
//!   (`null & false` is false, `null | true` is true).
//!
//! Decimals (`Decimal128(p, s)`, as warehouse exports and TPC-H's money columns are; also
//! `Decimal32/64`, and `Decimal256` of precision up to 38 in arithmetic) compute exactly,
//! with DuckDB's and Arrow's result types:
//! - An integer operand counts as the decimal of its type's digits (`Int8` `(3, 0)`, `Int16`
//!   `(5, 0)`, `Int32` `(10, 0)`, `Int64` `(19, 0)`, `UInt64` `(20, 0)`); an integer or
//!   decimal *constant* as the decimal of its own digits (`1` is `(1, 0)`, so
//!   `1 - l_discount` is `Decimal128(16, 2)` for a `Decimal128(15, 2)` column).
//! - `a + b`, `a - b`: scale `max(s1, s2)`, precision `max(p1 - s1, p2 - s2) + max(s1, s2) + 1`;
//!   `a * b`: scale `s1 + s2`, precision `p1 + p2 + 1`; `a % b`: scale `max(s1, s2)`,
//!   precision `(p2 - s2) + max(s1, s2)` (floored, as for integers: the sign of the divisor,
//!   where Python's `decimal.Decimal` truncates; a zero divisor gives null). Precisions are
//!   capped at 38; a scale past 38 (a product of scales 20 and 20) is a
//!   [`FrameError::TypeMismatch`] when the expression is typed.
//! - A result value with more digits than its precision is a [`FrameError::Overflow`],
//!   never a wrapped or rounded value. Negation keeps the type.
//! - `/` gives `Float64`, as for every number; a float operand makes the result `Float64`.
//! - Comparisons are exact: both sides meet at scale `max(s1, s2)` (in a `Decimal256` where
//!   that needs more than 38 digits). A float constant compares as its shortest decimal
//!   spelling (`col("l_discount").between(0.05, 0.07)` selects a stored 0.05), where it has
//!   one of at most 38 digits; a float column compares as floats.
//! - `fill_null` and `if_else` meet a decimal and an integer or another decimal in the
//!   decimal that holds both (scale `max(s1, s2)`, `max(p1 - s1, p2 - s2) + max(s1, s2)`
//!   digits), and a decimal and a float in `Float64`; casts (to and from floats, integers,
//!   strings and other decimals) are Arrow's, strict: a value that does not fit is an error.

use std::fmt;
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Rem, Sub};
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, Datum,
    Decimal128Array, Float64Array, Int64Array, NullArray, PrimitiveArray, StringArray, UInt32Array,
};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::kernels::comparison::contains;
use arrow::compute::kernels::temporal::{date_part, DatePart as ArrowDatePart};
use arrow::compute::kernels::{arity, boolean, cmp, numeric, zip::zip};
use arrow::compute::{can_cast_types, cast_with_options, take, CastOptions};
use arrow::datatypes::{
    DataType, Decimal128Type, DecimalType, Float16Type, Float32Type, Float64Type, Int64Type,
    IntervalUnit, Schema, TimeUnit,
};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::error::{FrameError, FrameResult};
use super::schema::{column, column_index, is_numeric, is_string};
use decimal::Dec;
use eval::Plan;
pub use functions::{FloorUnit, Function, StrFunction};
pub use math::MathFunction;
pub use strings::Pattern;

/// A scalar constant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Literal {
    /// The missing value; compatible with every type.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (`Int64`).
    Int(i64),
    /// A float (`Float64`).
    Float(f64),
    /// A string (`Utf8`).
    Str(String),
    /// A decimal (`Decimal128(precision, scale)`): `value` unscaled, so 1.50 is
    /// `{ value: 150, precision: 3, scale: 2 }` ([`Literal::decimal`] checks one).
    Decimal {
        /// The value times `10^scale`.
        value: i128,
        /// Significant digits, 1 to 38.
        precision: u8,
        /// Digits after the point.
        scale: i8,
    },
    /// A date: days since 1970-01-01 (`Date32`; Python's `datetime.date`).
    Date(i32),
    /// A timestamp: `value` ticks of `unit` since 1970-01-01 00:00 UTC, in time zone `tz`;
    /// without one, a wall-clock time (pandas' tz-naive `Timestamp`).
    Timestamp {
        /// Ticks since the epoch.
        value: i64,
        /// The tick.
        unit: TimeUnit,
        /// The zone (a name from the zone database or an offset such as `+05:30`).
        tz: Option<Arc<str>>,
    },
    /// A length of time: `value` ticks of `unit` (`Duration`; pandas' `Timedelta`).
    Duration {
        /// Ticks.
        value: i64,
        /// The tick.
        unit: TimeUnit,
    },
    /// A calendar offset: `months`, then `days` (`Interval(MonthDayNano)`; pandas'
    /// `DateOffset(years=, months=, weeks=, days=)`). A month past Jan 31 ends on the last
    /// day of February, as in pandas.
    Interval {
        /// Calendar months (12 a year).
        months: i32,
        /// Days (7 a week).
        days: i32,
    },
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinaryOperator {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (true division: always `Float64`)
    Div,
    /// `%` (floored modulo)
    Mod,
    /// `==`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// Kleene `&`
    And,
    /// Kleene `|`
    Or,
}

/// A field of a date or timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DatePart {
    /// The year, e.g. 2021.
    Year,
    /// The month, 1 to 12.
    Month,
    /// The day of the month, 1 to 31.
    Day,
    /// The hour, 0 to 23 (0 for dates).
    Hour,
    /// The minute, 0 to 59 (0 for dates).
    Minute,
    /// The second, 0 to 59 (0 for dates).
    Second,
    /// The day of the week, Monday = 0 to Sunday = 6, as pandas.
    Weekday,
    /// The day of the year, 1 to 366.
    DayOfYear,
    /// The quarter, 1 to 4.
    Quarter,
}

/// An expression over the columns of a frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A column by name.
    Column(String),
    /// A constant, broadcast to every row.
    Literal(Literal),
    /// `left op right`.
    Binary {
        /// The operator.
        op: BinaryOperator,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
    },
    /// Logical not (null stays null).
    Not(Box<Expr>),
    /// Arithmetic negation.
    Negate(Box<Expr>),
    /// True where the value is null (a float NaN is not null, as in Arrow).
    IsNull(Box<Expr>),
    /// True where the value is not null.
    IsNotNull(Box<Expr>),
    /// `expr` with its nulls replaced by `value`.
    FillNull {
        /// The values.
        expr: Box<Expr>,
        /// What replaces their nulls.
        value: Box<Expr>,
    },
    /// `expr` converted to type `to` (an unconvertible value is an error).
    Cast {
        /// The values.
        expr: Box<Expr>,
        /// The target type.
        to: DataType,
    },
    /// True where the string contains `pattern` (a plain substring, not a regex).
    StrContains {
        /// The strings.
        expr: Box<Expr>,
        /// The substring searched for.
        pattern: String,
    },
    /// A field of a date or timestamp, as `Int32`.
    DatePart {
        /// The dates or timestamps.
        expr: Box<Expr>,
        /// The field.
        part: DatePart,
    },
    /// A function of several expressions (`if_else`, the `str` functions, `dt.floor`).
    Function {
        /// What it computes.
        func: Function,
        /// Its arguments.
        args: Vec<Expr>,
    },
    /// `expr` under another name.
    Alias {
        /// The values.
        expr: Box<Expr>,
        /// The name.
        name: String,
    },
}

/// Casts that fail on a value that does not convert.
const STRICT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: arrow::util::display::FormatOptions::new(),
};

pub(crate) mod decimal;
#[cfg(test)]
mod decimal_tests;
mod dictionary;
mod eval;
mod functions;
mod math;
mod strings;
mod temporal;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dates;
mod typing;
pub mod zone;

/// A column by name: `col("fare_amount")`.
pub fn col(name: &str) -> Expr {
    Expr::Column(name.to_string())
}

/// The start of a conditional column (NumPy's `where` for columns):
/// `when(cond).then(a).otherwise(b)`, and `when(c1).then(a).when(c2).then(b).otherwise(c)`
/// for several conditions, taken in order (a null condition counts as false).
pub fn when(condition: Expr) -> When {
    When {
        branches: Vec::new(),
        condition,
    }
}

/// A conditional waiting for the value its last condition selects ([`when`]).
#[derive(Clone, Debug)]
pub struct When {
    branches: Vec<(Expr, Expr)>,
    condition: Expr,
}

/// A conditional with a value for each condition so far ([`when`]).
#[derive(Clone, Debug)]
pub struct Then {
    branches: Vec<(Expr, Expr)>,
}

impl When {
    /// The value where the condition holds.
    pub fn then(self, value: impl Into<Expr>) -> Then {
        let mut branches = self.branches;
        branches.push((self.condition, value.into()));
        Then { branches }
    }
}

impl Then {
    /// Another condition, tested where the earlier ones do not hold.
    pub fn when(self, condition: Expr) -> When {
        When {
            branches: self.branches,
            condition,
        }
    }

    /// The value where no condition holds.
    pub fn otherwise(self, value: impl Into<Expr>) -> Expr {
        self.branches
            .into_iter()
            .rev()
            .fold(value.into(), |rest, (condition, value)| Expr::Function {
                func: Function::IfElse,
                args: vec![condition, value, rest],
            })
    }
}

/// A constant: `lit(0)`, `lit(2.5)`, `lit("abc")`, `lit(Literal::Null)`.
pub fn lit(value: impl Into<Literal>) -> Expr {
    Expr::Literal(value.into())
}

macro_rules! literal_from {
    ($($t:ty => $variant:ident($conv:expr)),* $(,)?) => {$(
        impl From<$t> for Literal {
            fn from(v: $t) -> Self {
                Literal::$variant($conv(v))
            }
        }
        impl From<$t> for Expr {
            fn from(v: $t) -> Self {
                Expr::Literal(Literal::from(v))
            }
        }
    )*};
}

literal_from!(
    bool => Bool(|v| v),
    i32 => Int(i64::from),
    i64 => Int(|v| v),
    f64 => Float(|v| v),
    &str => Str(str::to_string),
    String => Str(|v| v),
);

impl From<Literal> for Expr {
    fn from(v: Literal) -> Self {
        Expr::Literal(v)
    }
}

impl Literal {
    /// The Arrow type of the constant (`Null` for [`Literal::Null`]).
    pub fn data_type(&self) -> DataType {
        match self {
            Literal::Null => DataType::Null,
            Literal::Bool(_) => DataType::Boolean,
            Literal::Int(_) => DataType::Int64,
            Literal::Float(_) => DataType::Float64,
            Literal::Str(_) => DataType::Utf8,
            Literal::Decimal {
                precision, scale, ..
            } => DataType::Decimal128(*precision, *scale),
            Literal::Date(_) => DataType::Date32,
            Literal::Timestamp { unit, tz, .. } => DataType::Timestamp(*unit, tz.clone()),
            Literal::Duration { unit, .. } => DataType::Duration(*unit),
            Literal::Interval { .. } => DataType::Interval(IntervalUnit::MonthDayNano),
        }
    }

    /// The constant as a one-row array (an invalid decimal is an error).
    fn to_array(&self) -> FrameResult<ArrayRef> {
        Ok(match self {
            Literal::Null => Arc::new(NullArray::new(1)),
            Literal::Bool(v) => Arc::new(BooleanArray::from(vec![*v])),
            Literal::Int(v) => Arc::new(Int64Array::from(vec![*v])),
            Literal::Float(v) => Arc::new(Float64Array::from(vec![*v])),
            Literal::Str(v) => Arc::new(StringArray::from(vec![v.as_str()])),
            Literal::Decimal {
                value,
                precision,
                scale,
            } => {
                self.check()?;
                Arc::new(
                    Decimal128Array::from(vec![*value])
                        .with_precision_and_scale(*precision, *scale)?,
                )
            }
            Literal::Date(_)
            | Literal::Timestamp { .. }
            | Literal::Duration { .. }
            | Literal::Interval { .. } => self.time_array()?,
        })
    }

    /// Whether the constant converts to `dt` without loss, so that a column of type `dt`
    /// is compared with it as is rather than widened.
    fn fits(&self, dt: &DataType) -> bool {
        match (self, dt) {
            (Literal::Null, _) => true,
            (Literal::Bool(_), DataType::Boolean) => true,
            (Literal::Str(_), dt) => is_string(dt),
            (Literal::Int(v), dt) if dt.is_integer() => int_fits(i128::from(*v), dt),
            (Literal::Float(v), dt) if dt.is_integer() => {
                v.fract() == 0.0 && v.abs() < 9.2e18 && int_fits(*v as i128, dt)
            }
            (Literal::Int(v), DataType::Float64) => v.unsigned_abs() <= 1 << 53,
            (Literal::Int(v), DataType::Float32) => v.unsigned_abs() <= 1 << 24,
            (Literal::Float(_), DataType::Float64) => true,
            (Literal::Float(v), DataType::Float32) => v.is_nan() || f64::from(*v as f32) == *v,
            (Literal::Decimal { value, scale, .. }, dt) if dt.is_integer() => {
                decimal::rescale(*value, *scale, 0).is_some_and(|v| int_fits(v, dt))
            }
            (l, dt) if l.time_value().is_some() => matches!(l.ticks_in(dt), Some(Ok((_, true)))),
            (lit, dt) => Dec::of(dt).is_some_and(|d| lit.fits_decimal(d)),
        }
    }
}

/// Whether integer `v` is in the range of integer type `dt`.
fn int_fits(v: i128, dt: &DataType) -> bool {
    match dt {
        DataType::Int8 => i8::try_from(v).is_ok(),
        DataType::Int16 => i16::try_from(v).is_ok(),
        DataType::Int32 => i32::try_from(v).is_ok(),
        DataType::Int64 => i64::try_from(v).is_ok(),
        DataType::UInt8 => u8::try_from(v).is_ok(),
        DataType::UInt16 => u16::try_from(v).is_ok(),
        DataType::UInt32 => u32::try_from(v).is_ok(),
        DataType::UInt64 => u64::try_from(v).is_ok(),
        _ => false,
    }
}

impl Expr {
    /// `self op right`; dates, times and offsets added to or subtracted from each other as
    /// constants give the constant result (so that `date + offset` compares as a constant).
    fn binary(self, op: BinaryOperator, right: impl Into<Expr>) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(self),
            right: Box::new(right.into()),
        }
        .fold_time_constants()
    }

    /// `self > other`.
    pub fn gt(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::Gt, other)
    }

    /// `self >= other`.
    pub fn ge(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::GtEq, other)
    }

    /// `self < other`.
    pub fn lt(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::Lt, other)
    }

    /// `self <= other`.
    pub fn le(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::LtEq, other)
    }

    /// `self == other` (null where either side is null).
    pub fn eq(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::Eq, other)
    }

    /// `self != other` (null where either side is null).
    pub fn ne(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::NotEq, other)
    }

    /// Kleene `self & other` (also the `&` operator).
    pub fn and_(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::And, other)
    }

    /// Kleene `self | other` (also the `|` operator).
    pub fn or_(self, other: impl Into<Expr>) -> Expr {
        self.binary(BinaryOperator::Or, other)
    }

    /// Logical not (also the `!` operator); null stays null.
    #[allow(clippy::should_implement_trait)] // `Not` is implemented too; this reads better in chains.
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    /// True where the value is null. A float NaN is a value, not null (Arrow semantics,
    /// unlike pandas' `isna`).
    pub fn is_null(self) -> Expr {
        Expr::IsNull(Box::new(self))
    }

    /// True where the value is not null (a float NaN counts as not null).
    pub fn is_not_null(self) -> Expr {
        Expr::IsNotNull(Box::new(self))
    }

    /// The values with nulls replaced by `value`. A literal that fits the column's type keeps
    /// that type (`fill_null(0)` on `Int32` stays `Int32`); otherwise both widen as in arithmetic.
    pub fn fill_null(self, value: impl Into<Expr>) -> Expr {
        Expr::FillNull {
            expr: Box::new(self),
            value: Box::new(value.into()),
        }
    }

    /// True where the value is null or a float NaN (pandas' `isna`); never null.
    pub fn is_na(self) -> Expr {
        self.function(Function::Math(MathFunction::IsNa), vec![])
    }

    /// True where the value is neither null nor a float NaN (pandas' `notna`).
    pub fn not_na(self) -> Expr {
        self.is_na().not()
    }

    /// The absolute value (pandas' `abs`; integers wrap at their minimum, as NumPy's).
    pub fn abs(self) -> Expr {
        self.function(Function::Math(MathFunction::Abs), vec![])
    }

    /// Rounded to `decimals` places, halves to even (pandas' `round`, NumPy's rule);
    /// integers and decimals keep their type.
    pub fn round(self, decimals: i32) -> Expr {
        self.function(Function::Math(MathFunction::Round(decimals)), vec![])
    }

    /// The values converted to `to` with Arrow's cast; a value that does not convert (such as
    /// `"abc"` to `Int64`) is an error, not null.
    pub fn cast(self, to: DataType) -> Expr {
        Expr::Cast {
            expr: Box::new(self),
            to,
        }
    }

    /// True where the string contains `pattern` as a substring.
    pub fn str_contains(self, pattern: &str) -> Expr {
        Expr::StrContains {
            expr: Box::new(self),
            pattern: pattern.to_string(),
        }
    }

    fn date_part(self, part: DatePart) -> Expr {
        Expr::DatePart {
            expr: Box::new(self),
            part,
        }
    }

    /// The year of a date or timestamp.
    pub fn dt_year(self) -> Expr {
        self.date_part(DatePart::Year)
    }

    /// The month (1 to 12) of a date or timestamp.
    pub fn dt_month(self) -> Expr {
        self.date_part(DatePart::Month)
    }

    /// The day of the month (1 to 31) of a date or timestamp.
    pub fn dt_day(self) -> Expr {
        self.date_part(DatePart::Day)
    }

    /// The hour (0 to 23) of a timestamp; 0 for a date.
    pub fn dt_hour(self) -> Expr {
        self.date_part(DatePart::Hour)
    }

    /// The minute (0 to 59) of a timestamp; 0 for a date.
    pub fn dt_minute(self) -> Expr {
        self.date_part(DatePart::Minute)
    }

    /// The second (0 to 59) of a timestamp; 0 for a date.
    pub fn dt_second(self) -> Expr {
        self.date_part(DatePart::Second)
    }

    /// The day of the week, Monday = 0 to Sunday = 6 (as pandas' `dt.weekday`).
    pub fn dt_weekday(self) -> Expr {
        self.date_part(DatePart::Weekday)
    }

    /// The day of the year, 1 to 366 (pandas' `dt.dayofyear`).
    pub fn dt_dayofyear(self) -> Expr {
        self.date_part(DatePart::DayOfYear)
    }

    /// The quarter, 1 to 4 (pandas' `dt.quarter`).
    pub fn dt_quarter(self) -> Expr {
        self.date_part(DatePart::Quarter)
    }

    /// A timestamp rounded down to a whole `unit` (pandas' `dt.floor`); dates stay as they are.
    pub fn dt_floor(self, unit: FloorUnit) -> Expr {
        self.function(Function::Floor(unit), vec![])
    }

    /// pandas' `dt.tz_localize`: a zoneless timestamp read as the wall clock of time zone
    /// `tz` (a name from the zone database or an offset such as `+05:30`; a time the zone
    /// skips or repeats is an error, as pandas raises by default), or with `None` a zoned
    /// timestamp's wall clock without its zone.
    pub fn dt_tz_localize(self, tz: Option<&str>) -> Expr {
        self.function(Function::Localize(tz.map(str::to_string)), vec![])
    }

    /// pandas' `dt.tz_convert`: a zoned timestamp's instants in time zone `tz`, whose wall
    /// clock its date parts then read.
    pub fn dt_tz_convert(self, tz: &str) -> Expr {
        self.function(Function::Convert(tz.to_string()), vec![])
    }

    /// A string function of this column (pandas' `str` accessor); null stays null.
    pub fn str(self, func: StrFunction) -> Expr {
        self.function(Function::Str(func), vec![])
    }

    /// SQL `LIKE`: `%` stands for any run of characters, `_` for one character; case
    /// counts; null for null (`!` gives `NOT LIKE`). `%text%` becomes
    /// [`Expr::str_contains`].
    pub fn like(self, pattern: &str) -> Expr {
        self.like_with(pattern, None)
    }

    /// SQL `LIKE ... ESCAPE escape`: as [`Expr::like`], where `escape` before `%`, `_` or
    /// itself makes it plain text.
    pub fn like_escape(self, pattern: &str, escape: char) -> Expr {
        self.like_with(pattern, Some(escape))
    }

    fn like_with(self, pattern: &str, escape: Option<char>) -> Expr {
        match strings::like_substring(pattern, escape) {
            Some(text) => self.str_contains(&text),
            None => self.str(StrFunction::Like {
                pattern: pattern.to_string(),
                escape,
            }),
        }
    }

    /// Whether the value equals one of `values` (pandas' `isin`): false for null.
    pub fn isin(self, values: &[Literal]) -> Expr {
        let any = values
            .iter()
            .map(|v| self.clone().eq(Expr::Literal(v.clone())))
            .reduce(|a, b| a.or_(b))
            .unwrap_or_else(|| self.clone().is_null().and_(lit(false)));
        any.fill_null(false)
    }

    /// Whether `low <= value <= high` (pandas' `between`, both ends included); null for null.
    pub fn between(self, low: impl Into<Expr>, high: impl Into<Expr>) -> Expr {
        self.clone().ge(low).and_(self.le(high))
    }

    /// The value mapped through `pairs` (pandas' `map` with a dict): a value no pair names,
    /// or null, becomes null.
    pub fn map_values(self, pairs: &[(Literal, Literal)]) -> Expr {
        pairs
            .iter()
            .rev()
            .fold(lit(Literal::Null), |rest, (from, to)| {
                when(self.clone().eq(Expr::Literal(from.clone())))
                    .then(Expr::Literal(to.clone()))
                    .otherwise(rest)
            })
    }

    fn function(self, func: Function, more: Vec<Expr>) -> Expr {
        let mut args = vec![self];
        args.extend(more);
        Expr::Function { func, args }
    }

    /// The same values under the name `name`.
    pub fn alias(self, name: &str) -> Expr {
        Expr::Alias {
            expr: Box::new(self),
            name: name.to_string(),
        }
    }

    /// The name of the column this expression produces: an alias, else the first column it
    /// reads, else `"literal"`.
    pub fn output_name(&self) -> String {
        match self {
            Expr::Alias { name, .. } => name.clone(),
            _ => self
                .columns()
                .into_iter()
                .next()
                .unwrap_or_else(|| "literal".to_string()),
        }
    }

    /// How many expressions it is made of (itself included): a measure of its work per row.
    pub(crate) fn size(&self) -> usize {
        let mut n = 0;
        self.walk(&mut |_| n += 1);
        n
    }

    /// Calls `f` on it and on every expression it is made of, parents first.
    pub(crate) fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        match self {
            Expr::Column(_) | Expr::Literal(_) => {}
            Expr::Binary { left, right, .. }
            | Expr::FillNull {
                expr: left,
                value: right,
            } => {
                left.walk(f);
                right.walk(f);
            }
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::Cast { expr: e, .. }
            | Expr::StrContains { expr: e, .. }
            | Expr::DatePart { expr: e, .. }
            | Expr::Alias { expr: e, .. } => e.walk(f),
            Expr::Function { args, .. } => args.iter().for_each(|a| a.walk(f)),
        }
    }

    /// The columns it reads, each once, in first-seen order.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Column(name) = e {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
        });
        out
    }

    /// The expression with each column `c` read as `rename(c)` instead.
    pub fn rename_columns(mut self, rename: &dyn Fn(&str) -> String) -> Expr {
        self.visit_columns(&mut |name| *name = rename(name));
        self
    }

    /// Calls `f` on the name of every column read, in order.
    fn visit_columns(&mut self, f: &mut dyn FnMut(&mut String)) {
        match self {
            Expr::Column(name) => f(name),
            Expr::Literal(_) => {}
            Expr::Binary { left, right, .. }
            | Expr::FillNull {
                expr: left,
                value: right,
            } => {
                left.visit_columns(f);
                right.visit_columns(f);
            }
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::Cast { expr: e, .. }
            | Expr::StrContains { expr: e, .. }
            | Expr::DatePart { expr: e, .. }
            | Expr::Alias { expr: e, .. } => e.visit_columns(f),
            Expr::Function { args, .. } => args.iter_mut().for_each(|a| a.visit_columns(f)),
        }
    }
}

impl DatePart {
    fn to_arrow(self) -> ArrowDatePart {
        match self {
            DatePart::Year => ArrowDatePart::Year,
            DatePart::Month => ArrowDatePart::Month,
            DatePart::Day => ArrowDatePart::Day,
            DatePart::Hour => ArrowDatePart::Hour,
            DatePart::Minute => ArrowDatePart::Minute,
            DatePart::Second => ArrowDatePart::Second,
            DatePart::Weekday => ArrowDatePart::DayOfWeekMonday0,
            DatePart::DayOfYear => ArrowDatePart::DayOfYear,
            DatePart::Quarter => ArrowDatePart::Quarter,
        }
    }

    fn method(self) -> &'static str {
        match self {
            DatePart::Year => "dt_year",
            DatePart::Month => "dt_month",
            DatePart::Day => "dt_day",
            DatePart::Hour => "dt_hour",
            DatePart::Minute => "dt_minute",
            DatePart::Second => "dt_second",
            DatePart::Weekday => "dt_weekday",
            DatePart::DayOfYear => "dt_dayofyear",
            DatePart::Quarter => "dt_quarter",
        }
    }
}

macro_rules! binary_operator {
    ($($trait:ident $method:ident $op:ident),*) => {$(
        impl<R: Into<Expr>> $trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                self.binary(BinaryOperator::$op, rhs)
            }
        }
    )*};
}

binary_operator!(
    Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Mod,
    BitAnd bitand And, BitOr bitor Or
);

impl Neg for Expr {
    type Output = Expr;
    /// Negation; a numeric literal is negated in place (so `-lit(5)` stays a literal).
    fn neg(self) -> Expr {
        match self {
            Expr::Literal(Literal::Int(v)) => Expr::Literal(Literal::Int(v.wrapping_neg())),
            Expr::Literal(Literal::Float(v)) => Expr::Literal(Literal::Float(-v)),
            Expr::Literal(Literal::Decimal {
                value,
                precision,
                scale,
            }) if value != i128::MIN => Expr::Literal(Literal::Decimal {
                value: -value,
                precision,
                scale,
            }),
            e => Expr::Negate(Box::new(e)),
        }
    }
}

impl Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

impl BinaryOperator {
    /// The comparison with its operands swapped (`a < b` is `b > a`); `None` for an
    /// operator that is no comparison.
    pub(crate) fn swapped(self) -> Option<BinaryOperator> {
        use BinaryOperator::*;
        Some(match self {
            Eq => Eq,
            NotEq => NotEq,
            Lt => Gt,
            LtEq => GtEq,
            Gt => Lt,
            GtEq => LtEq,
            Add | Sub | Mul | Div | Mod | And | Or => return None,
        })
    }
}

impl fmt::Display for BinaryOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BinaryOperator::*;
        f.write_str(match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            Eq => "==",
            NotEq => "!=",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            And => "&",
            Or => "|",
        })
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("null"),
            Literal::Bool(v) => write!(f, "{v}"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Float(v) => write!(f, "{v:?}"),
            Literal::Str(v) => write!(f, "{v:?}"),
            Literal::Decimal {
                value,
                precision,
                scale,
            } => {
                let text = Decimal128Type::format_decimal(*value, *precision, *scale);
                write!(f, "decimal({text:?}, {precision})")
            }
            Literal::Date(_)
            | Literal::Timestamp { .. }
            | Literal::Duration { .. }
            | Literal::Interval { .. } => self.fmt_time(f),
        }
    }
}

/// Written as the Rust that builds it, e.g. `(col("tip") / col("fare"))`.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column(name) => write!(f, "col({name:?})"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Binary { op, left, right } => write!(f, "({left} {op} {right})"),
            Expr::Not(e) => write!(f, "!{e}"),
            Expr::Negate(e) => write!(f, "-{e}"),
            Expr::IsNull(e) => write!(f, "{e}.is_null()"),
            Expr::IsNotNull(e) => write!(f, "{e}.is_not_null()"),
            Expr::FillNull { expr, value } => write!(f, "{expr}.fill_null({value})"),
            Expr::Cast { expr, to } => write!(f, "{expr}.cast({to})"),
            Expr::StrContains { expr, pattern } => write!(f, "{expr}.str_contains({pattern:?})"),
            Expr::DatePart { expr, part } => write!(f, "{expr}.{}()", part.method()),
            Expr::Function { func, args } => {
                let args: Vec<String> = args.iter().map(ToString::to_string).collect();
                write!(f, "{func}({})", args.join(", "))
            }
            Expr::Alias { expr, name } => write!(f, "{expr}.alias({name:?})"),
        }
    }
}
