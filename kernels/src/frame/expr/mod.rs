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
//! - `timestamp - timestamp` (same type) gives a `Duration`.
//! - Comparisons: numbers with numbers (any widths; an integer against a float compares as
//!   floats), strings with strings (any encoding: Utf8, LargeUtf8, Utf8View, dictionary),
//!   dates with dates, timestamps with timestamps, booleans with booleans. A date or timestamp
//!   column also compares with a string literal, parsed as that type (`col("day").ge("2021-03-01")`).
//!   Floats compare as IEEE (NaN is unequal to everything, `-0.0 == 0.0`), as pandas.
//! - Nulls: arithmetic and comparisons with null give null; `&` and `|` are Kleene
//!   (`null & false` is false, `null | true` is true).

use std::fmt;
use std::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Rem, Sub};
use std::sync::Arc;

use arrow::array::timezone::Tz;
use arrow::array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, Datum,
    Float64Array, Int64Array, NullArray, PrimitiveArray, StringArray, UInt32Array,
};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::kernels::comparison::contains;
use arrow::compute::kernels::temporal::{date_part, DatePart as ArrowDatePart};
use arrow::compute::kernels::{arity, boolean, cmp, numeric, zip::zip};
use arrow::compute::{can_cast_types, cast_with_options, take, CastOptions};
use arrow::datatypes::{
    DataType, Float16Type, Float32Type, Float64Type, Int64Type, Schema, TimeUnit,
};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use super::error::{FrameError, FrameResult};
use super::schema::{column, column_index, is_numeric, is_string};
use eval::Plan;
pub use functions::{FloorUnit, Function, StrFunction};

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

mod eval;
mod functions;
#[cfg(test)]
mod tests;

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
        }
    }

    /// The constant as a one-row array.
    fn to_array(&self) -> ArrayRef {
        match self {
            Literal::Null => Arc::new(NullArray::new(1)),
            Literal::Bool(v) => Arc::new(BooleanArray::from(vec![*v])),
            Literal::Int(v) => Arc::new(Int64Array::from(vec![*v])),
            Literal::Float(v) => Arc::new(Float64Array::from(vec![*v])),
            Literal::Str(v) => Arc::new(StringArray::from(vec![v.as_str()])),
        }
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
            _ => false,
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
    fn binary(self, op: BinaryOperator, right: impl Into<Expr>) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(self),
            right: Box::new(right.into()),
        }
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

    /// The columns it reads, each once, in first-seen order.
    pub fn columns(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns(&self, out: &mut Vec<String>) {
        match self {
            Expr::Column(name) => {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
            Expr::Literal(_) => {}
            Expr::Binary { left, right, .. }
            | Expr::FillNull {
                expr: left,
                value: right,
            } => {
                left.collect_columns(out);
                right.collect_columns(out);
            }
            Expr::Not(e)
            | Expr::Negate(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::Cast { expr: e, .. }
            | Expr::StrContains { expr: e, .. }
            | Expr::DatePart { expr: e, .. }
            | Expr::Alias { expr: e, .. } => e.collect_columns(out),
            Expr::Function { args, .. } => args.iter().for_each(|a| a.collect_columns(out)),
        }
    }

    /// The constant this expression is, if it is one (looking through aliases).
    fn literal(&self) -> Option<&Literal> {
        match self {
            Expr::Literal(l) => Some(l),
            Expr::Alias { expr, .. } => expr.literal(),
            _ => None,
        }
    }

    /// A [`FrameError::TypeMismatch`] that names this expression.
    fn mismatch(&self, message: impl fmt::Display) -> FrameError {
        FrameError::TypeMismatch(format!("{message} in `{self}`"))
    }

    /// Its result type over a frame of schema `schema`: [`FrameError::ColumnNotFound`] for
    /// unknown names, [`FrameError::TypeMismatch`] for operands it cannot combine (such as a
    /// string plus an integer, `str_contains` on a number, `dt_hour` on an integer, `&` on
    /// non-booleans).
    pub fn data_type(&self, schema: &Schema) -> FrameResult<DataType> {
        match self {
            Expr::Column(name) => Ok(schema
                .field(column_index(schema, name)?)
                .data_type()
                .clone()),
            Expr::Literal(l) => Ok(l.data_type()),
            Expr::Binary { op, left, right } => {
                let (l, r) = (left.data_type(schema)?, right.data_type(schema)?);
                Ok(self.plan_binary(*op, &l, &r, left, right)?.output_type(*op))
            }
            Expr::Not(e) => self.not_type(&e.data_type(schema)?),
            Expr::Negate(e) => self.negate_type(&e.data_type(schema)?),
            Expr::IsNull(e) | Expr::IsNotNull(e) => e.data_type(schema).map(|_| DataType::Boolean),
            Expr::FillNull { expr, value } => {
                let (e, v) = (expr.data_type(schema)?, value.data_type(schema)?);
                self.fill_type(&e, &v, value.literal())
            }
            Expr::Cast { expr, to } => {
                let from = expr.data_type(schema)?;
                self.cast_type(&from, to)
            }
            Expr::StrContains { expr, .. } => self.contains_type(&expr.data_type(schema)?),
            Expr::DatePart { expr, .. } => self.date_part_type(&expr.data_type(schema)?),
            Expr::Function { func, args } => {
                let types = args
                    .iter()
                    .map(|a| a.data_type(schema))
                    .collect::<FrameResult<Vec<_>>>()?;
                func.data_type(&types, self)
            }
            Expr::Alias { expr, .. } => expr.data_type(schema),
        }
    }

    /// How `left op right` runs on operands of types `l` and `r`.
    fn plan_binary(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        left: &Expr,
        right: &Expr,
    ) -> FrameResult<Plan> {
        use BinaryOperator::*;
        match op {
            Add | Sub | Mul | Div | Mod => self.plan_arithmetic(op, l, r),
            Eq | NotEq | Lt | LtEq | Gt | GtEq => {
                self.plan_compare(op, l, r, left.literal(), right.literal())
            }
            And | Or => match (is_boolish(l), is_boolish(r)) {
                (true, true) => Ok(Plan::Logical),
                _ => Err(self.mismatch(format_args!("cannot apply {op} to {l} and {r}"))),
            },
        }
    }

    fn plan_arithmetic(&self, op: BinaryOperator, l: &DataType, r: &DataType) -> FrameResult<Plan> {
        let numberish = |t: &DataType| is_numeric(t) || *t == DataType::Null;
        match (l, r) {
            (DataType::Null, DataType::Null) => Ok(Plan::Null),
            (l, r) if numberish(l) && numberish(r) => {
                let float = op == BinaryOperator::Div || l.is_floating() || r.is_floating();
                Ok(Plan::Arithmetic(if float {
                    DataType::Float64
                } else {
                    DataType::Int64
                }))
            }
            (DataType::Timestamp(..), DataType::Timestamp(..))
                if op == BinaryOperator::Sub && l == r =>
            {
                Ok(Plan::Arithmetic(l.clone()))
            }
            _ => Err(self.mismatch(format_args!("cannot apply {op} to {l} and {r}"))),
        }
    }

    fn plan_compare(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> FrameResult<Plan> {
        use DataType::*;
        if *l == Null || *r == Null {
            return Ok(Plan::Null);
        }
        // A literal that converts without loss takes the other side's type.
        // (A dictionary column compares with a constant of its value type.)
        if r_lit.is_some_and(|lit| lit.fits(l)) {
            return Ok(Plan::Compare(l.clone(), scalar_type(l).clone()));
        }
        if l_lit.is_some_and(|lit| lit.fits(r)) {
            return Ok(Plan::Compare(scalar_type(r).clone(), r.clone()));
        }
        // A string literal against a date or timestamp is parsed as that type.
        if let (Some(Literal::Str(s)), true) = (r_lit, l.is_temporal()) {
            return self
                .parse_literal(s, l)
                .map(|()| Plan::Compare(l.clone(), l.clone()));
        }
        if let (Some(Literal::Str(s)), true) = (l_lit, r.is_temporal()) {
            return self
                .parse_literal(s, r)
                .map(|()| Plan::Compare(r.clone(), r.clone()));
        }
        let common = match (l, r) {
            _ if l == r && !l.is_nested() => l.clone(),
            (l, r) if is_numeric(l) && is_numeric(r) => {
                if l.is_floating() || r.is_floating() {
                    Float64
                } else {
                    Int64
                }
            }
            (l, r) if is_string(l) && is_string(r) => {
                if string_value_type(l) == string_value_type(r) {
                    return Ok(Plan::Compare(l.clone(), r.clone()));
                }
                common_string_type(l, r)
            }
            (Date32 | Date64, Date32 | Date64) => Date64,
            (Timestamp(lu, ltz), Timestamp(ru, rtz)) if ltz.is_some() == rtz.is_some() => {
                Timestamp(finer_unit(*lu, *ru), ltz.clone())
            }
            _ => return Err(self.mismatch(format_args!("cannot compare {l} with {r} ({op})"))),
        };
        Ok(Plan::Compare(common.clone(), common))
    }

    /// Checks that string literal `s` parses as temporal type `dt`.
    fn parse_literal(&self, s: &str, dt: &DataType) -> FrameResult<()> {
        let array = StringArray::from(vec![s]);
        cast_with_options(&array, dt, &STRICT)
            .map(|_| ())
            .map_err(|e| self.mismatch(format_args!("cannot read {s:?} as {dt}: {e}")))
    }

    fn not_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match is_boolish(dt) {
            true => Ok(DataType::Boolean),
            false => Err(self.mismatch(format_args!("cannot apply not to {dt}"))),
        }
    }

    fn negate_type(&self, dt: &DataType) -> FrameResult<DataType> {
        use DataType::*;
        match dt {
            Int8 | Int16 | Int32 | Int64 | Float16 | Float32 | Float64 | Duration(_) | Null => {
                Ok(dt.clone())
            }
            UInt8 | UInt16 | UInt32 | UInt64 => Ok(Int64),
            _ => Err(self.mismatch(format_args!("cannot negate {dt}"))),
        }
    }

    fn fill_type(
        &self,
        e: &DataType,
        v: &DataType,
        v_lit: Option<&Literal>,
    ) -> FrameResult<DataType> {
        let keep = |dt: &DataType| Ok(string_value_type(dt).clone());
        match (e, v) {
            (e, DataType::Null) => Ok(e.clone()),
            (DataType::Null, v) => keep(v),
            (e, _) if v_lit.is_some_and(|lit| lit.fits(e)) => keep(e),
            (e, v) if string_value_type(e) == string_value_type(v) => keep(e),
            (e, v) if is_numeric(e) && is_numeric(v) => match e.is_floating() || v.is_floating() {
                true => Ok(DataType::Float64),
                false => Ok(DataType::Int64),
            },
            (e, v) if is_string(e) && is_string(v) => Ok(common_string_type(e, v)),
            _ => Err(self.mismatch(format_args!("cannot fill nulls of {e} with {v}"))),
        }
    }

    fn cast_type(&self, from: &DataType, to: &DataType) -> FrameResult<DataType> {
        match can_cast_types(from, to) {
            true => Ok(to.clone()),
            false => Err(self.mismatch(format_args!("cannot cast {from} to {to}"))),
        }
    }

    fn contains_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match is_string(dt) || *dt == DataType::Null {
            true => Ok(DataType::Boolean),
            false => Err(self.mismatch(format_args!("str_contains needs strings, not {dt}"))),
        }
    }

    /// A date part's type: of a date, or of a timestamp on its zone's wall clock (a zone
    /// the database does not hold is a mismatch, found before any row is read).
    fn date_part_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match dt {
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, None) | DataType::Null => {
                Ok(DataType::Int32)
            }
            DataType::Timestamp(_, Some(tz)) => match tz.parse::<Tz>() {
                Ok(_) => Ok(DataType::Int32),
                Err(e) => Err(self.mismatch(format_args!("date parts of {dt}: {e}"))),
            },
            _ => Err(self.mismatch(format_args!(
                "date parts need a Date32, Date64 or Timestamp, not {dt}"
            ))),
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

/// Boolean, or the type of a null literal.
fn is_boolish(dt: &DataType) -> bool {
    matches!(dt, DataType::Boolean | DataType::Null)
}

/// The value type of a dictionary, else the type itself.
fn scalar_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, value) => value,
        dt => dt,
    }
}

/// The value type of a string dictionary, else the type itself.
fn string_value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, value) if is_string(value) => value,
        dt => dt,
    }
}

/// The string type two different string encodings convert to: a view if either is one
/// (cheap to build from offsets), else `LargeUtf8` (which holds any `Utf8`).
fn common_string_type(l: &DataType, r: &DataType) -> DataType {
    let view = [l, r]
        .iter()
        .any(|t| *string_value_type(t) == DataType::Utf8View);
    match view {
        true => DataType::Utf8View,
        false => DataType::LargeUtf8,
    }
}

/// The finer of two time units.
fn finer_unit(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
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
