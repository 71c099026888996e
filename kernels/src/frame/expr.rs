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
    /// `expr` under another name.
    Alias {
        /// The values.
        expr: Box<Expr>,
        /// The name.
        name: String,
    },
}

/// A column by name: `col("fare_amount")`.
pub fn col(name: &str) -> Expr {
    Expr::Column(name.to_string())
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
            Expr::Alias { expr, .. } => expr.data_type(schema),
        }
    }

    /// Evaluates it on `batch`; the result has `batch.num_rows()` rows (literals broadcast).
    pub fn evaluate(&self, batch: &RecordBatch) -> FrameResult<ArrayRef> {
        self.eval(batch)?.into_array(batch.num_rows())
    }

    fn eval(&self, batch: &RecordBatch) -> FrameResult<Value> {
        match self {
            Expr::Column(name) => Ok(Value::Array(column(batch, name)?.clone())),
            Expr::Literal(l) => Ok(Value::Scalar(l.to_array())),
            Expr::Binary { op, left, right } => {
                let (l, r) = (left.eval(batch)?, right.eval(batch)?);
                let plan = self.plan_binary(*op, l.data_type(), r.data_type(), left, right)?;
                plan.run(*op, l, r)
            }
            Expr::Not(e) => {
                let v = e.eval(batch)?;
                self.not_type(v.data_type())?;
                v.cast(&DataType::Boolean)?
                    .map(|a| Ok(Arc::new(boolean::not(as_boolean(a)?)?)))
            }
            Expr::Negate(e) => {
                let v = e.eval(batch)?;
                let to = self.negate_type(v.data_type())?;
                match to {
                    DataType::Null => Ok(v),
                    _ => v.cast(&to)?.map(|a| Ok(numeric::neg_wrapping(a)?)),
                }
            }
            Expr::IsNull(e) => e.eval(batch)?.map(|a| Ok(Arc::new(boolean::is_null(a)?))),
            Expr::IsNotNull(e) => e
                .eval(batch)?
                .map(|a| Ok(Arc::new(boolean::is_not_null(a)?))),
            Expr::FillNull { expr, value } => {
                let (e, v) = (expr.eval(batch)?, value.eval(batch)?);
                let to = self.fill_type(e.data_type(), v.data_type(), value.literal())?;
                fill_null(e.cast(&to)?, v.cast(&to)?)
            }
            Expr::Cast { expr, to } => {
                let v = expr.eval(batch)?;
                self.cast_type(v.data_type(), to)?;
                v.cast_strict(to)
            }
            Expr::StrContains { expr, pattern } => {
                let v = expr.eval(batch)?;
                self.contains_type(v.data_type())?;
                str_contains(v, pattern)
            }
            Expr::DatePart { expr, part } => {
                let v = expr.eval(batch)?;
                let to = self.date_part_type(v.data_type())?;
                if v.data_type() == &DataType::Null {
                    return v.cast(&to);
                }
                let part = part.to_arrow();
                v.map(|a| Ok(date_part(a, part)?))
            }
            Expr::Alias { expr, .. } => expr.eval(batch),
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

    fn date_part_type(&self, dt: &DataType) -> FrameResult<DataType> {
        match dt {
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, None) | DataType::Null => {
                Ok(DataType::Int32)
            }
            _ => Err(self.mismatch(format_args!(
                "date parts need a Date32, Date64 or Timestamp without time zone, not {dt}"
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

/// Casts that fail on a value that does not convert.
const STRICT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: arrow::util::display::FormatOptions::new(),
};

/// How a binary operator runs once the operand types are known.
enum Plan {
    /// The result is a null constant (an operand is the null literal).
    Null,
    /// Arithmetic with both operands converted to this type.
    Arithmetic(DataType),
    /// A comparison with the operands converted to these types.
    Compare(DataType, DataType),
    /// Kleene `&` or `|` on booleans.
    Logical,
}

impl Plan {
    fn output_type(&self, op: BinaryOperator) -> DataType {
        match self {
            Plan::Null if is_arithmetic(op) => DataType::Null,
            Plan::Arithmetic(DataType::Timestamp(unit, _)) => DataType::Duration(*unit),
            Plan::Arithmetic(t) => t.clone(),
            Plan::Null | Plan::Compare(..) | Plan::Logical => DataType::Boolean,
        }
    }

    fn run(&self, op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
        match self {
            Plan::Null => Ok(Value::Scalar(new_null_array(&self.output_type(op), 1))),
            Plan::Arithmetic(t) => arithmetic(op, l.cast(t)?, r.cast(t)?),
            Plan::Compare(lt, rt) => compare(op, l.cast(lt)?, r.cast(rt)?),
            Plan::Logical => logical(op, l, r),
        }
    }
}

fn is_arithmetic(op: BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Add | Sub | Mul | Div | Mod)
}

/// A value during evaluation: a column-long array, or a one-row constant that Arrow's kernels
/// take as a scalar `Datum`.
#[derive(Clone, Debug)]
enum Value {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Datum for Value {
    fn get(&self) -> (&dyn Array, bool) {
        match self {
            Value::Array(a) => (a.as_ref(), false),
            Value::Scalar(a) => (a.as_ref(), true),
        }
    }
}

impl Value {
    fn array(&self) -> &ArrayRef {
        match self {
            Value::Array(a) | Value::Scalar(a) => a,
        }
    }

    fn data_type(&self) -> &DataType {
        self.array().data_type()
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Value::Scalar(_))
    }

    /// `f` applied to the array, keeping a constant a constant.
    fn map(self, f: impl FnOnce(&dyn Array) -> FrameResult<ArrayRef>) -> FrameResult<Value> {
        Ok(match self {
            Value::Array(a) => Value::Array(f(a.as_ref())?),
            Value::Scalar(a) => Value::Scalar(f(a.as_ref())?),
        })
    }

    /// Converted to `to` (values that do not fit become null).
    fn cast(self, to: &DataType) -> FrameResult<Value> {
        self.cast_with(to, &CastOptions::default())
    }

    /// Converted to `to`, failing on a value that does not convert.
    fn cast_strict(self, to: &DataType) -> FrameResult<Value> {
        self.cast_with(to, &STRICT)
    }

    fn cast_with(self, to: &DataType, options: &CastOptions) -> FrameResult<Value> {
        if self.data_type() == to {
            return Ok(self);
        }
        let from = self.data_type().clone();
        self.map(|a| {
            cast_with_options(a, to, options)
                .map_err(|e| FrameError::TypeMismatch(format!("cannot cast {from} to {to}: {e}")))
        })
    }

    /// The values as an array of `len` rows, a constant repeated.
    fn into_array(self, len: usize) -> FrameResult<ArrayRef> {
        match self {
            Value::Array(a) => Ok(a),
            Value::Scalar(a) => broadcast(&a, len),
        }
    }

    /// The number of rows of an array operand of `self` and `other` (1 if both are constants).
    fn rows(&self, other: &Value) -> usize {
        match self {
            Value::Scalar(_) => other.array().len(),
            Value::Array(a) => a.len(),
        }
    }

    /// Wraps a kernel's result: a constant if both operands were constants.
    fn wrap(&self, other: &Value, result: ArrayRef) -> Value {
        match self.is_scalar() && other.is_scalar() {
            true => Value::Scalar(result),
            false => Value::Array(result),
        }
    }
}

/// One-row array `a` repeated `len` times.
fn broadcast(a: &ArrayRef, len: usize) -> FrameResult<ArrayRef> {
    if a.data_type() == &DataType::Null || a.is_null(0) {
        return Ok(new_null_array(a.data_type(), len));
    }
    let len = u32::try_from(len).map_err(|_| {
        FrameError::InvalidArgument(format!("{len} rows is too many for a constant"))
    })?;
    Ok(take(
        a.as_ref(),
        &UInt32Array::from_value(0, len as usize),
        None,
    )?)
}

fn as_boolean(a: &dyn Array) -> FrameResult<&BooleanArray> {
    a.as_boolean_opt()
        .ok_or_else(|| FrameError::TypeMismatch(format!("expected Boolean, got {}", a.data_type())))
}

fn as_primitive<T: ArrowPrimitiveType>(a: &dyn Array) -> FrameResult<&PrimitiveArray<T>> {
    a.as_primitive_opt::<T>().ok_or_else(|| {
        FrameError::TypeMismatch(format!("expected {}, got {}", T::DATA_TYPE, a.data_type()))
    })
}

/// The one value of a one-row constant, `None` if it is null.
fn scalar_value<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Option<T::Native> {
    a.values().first().copied().filter(|_| a.is_valid(0))
}

/// `l op r` with both operands of the same numeric (or timestamp) type.
fn arithmetic(op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
    let result = match op {
        BinaryOperator::Add => numeric::add_wrapping(&l, &r)?,
        BinaryOperator::Sub if matches!(l.data_type(), DataType::Timestamp(..)) => {
            numeric::sub(&l, &r)?
        }
        BinaryOperator::Sub => numeric::sub_wrapping(&l, &r)?,
        BinaryOperator::Mul => numeric::mul_wrapping(&l, &r)?,
        BinaryOperator::Div => numeric::div(&l, &r)?,
        _ => modulo(&l, &r)?,
    };
    Ok(l.wrap(&r, result))
}

/// Floored `a % b` (sign of the divisor, as Python); 0 for a zero divisor (made null by the caller).
fn floor_mod_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let m = a.wrapping_rem(b);
    if m != 0 && (m < 0) != (b < 0) {
        m + b
    } else {
        m
    }
}

/// Floored `a % b` (sign of the divisor, as Python); NaN for a zero divisor.
fn floor_mod_f64(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m != 0.0 && (m < 0.0) != (b < 0.0) {
        m + b
    } else {
        m
    }
}

/// Floored modulo of two `Int64` or two `Float64` operands; an integer divisor of zero gives null.
fn modulo(l: &Value, r: &Value) -> FrameResult<ArrayRef> {
    match l.data_type() {
        DataType::Int64 => {
            let out = binary_values::<Int64Type>(l, r, floor_mod_i64)?;
            Ok(Arc::new(null_where_zero(out, r)?))
        }
        _ => Ok(Arc::new(binary_values::<Float64Type>(l, r, floor_mod_f64)?)),
    }
}

/// `f` on each pair of values of `l` and `r` (arrays or constants) of type `T`; null where either is.
fn binary_values<T: ArrowPrimitiveType>(
    l: &Value,
    r: &Value,
    f: impl Fn(T::Native, T::Native) -> T::Native,
) -> FrameResult<PrimitiveArray<T>> {
    let (la, ra) = (as_primitive::<T>(l.array())?, as_primitive::<T>(r.array())?);
    Ok(match (l.is_scalar(), r.is_scalar()) {
        (true, false) => match scalar_value(la) {
            Some(a) => ra.unary(|b| f(a, b)),
            None => PrimitiveArray::new_null(ra.len()),
        },
        (false, true) => match scalar_value(ra) {
            Some(b) => la.unary(|a| f(a, b)),
            None => PrimitiveArray::new_null(la.len()),
        },
        _ => arity::binary(la, ra, f)?,
    })
}

/// `out` with nulls where `divisor` is zero.
fn null_where_zero(out: Int64Array, divisor: &Value) -> FrameResult<Int64Array> {
    let d = as_primitive::<Int64Type>(divisor.array())?.values();
    if !d.contains(&0) {
        return Ok(out);
    }
    if divisor.is_scalar() {
        return Ok(Int64Array::new_null(out.len()));
    }
    let nonzero = NullBuffer::new(BooleanBuffer::collect_bool(d.len(), |i| d[i] != 0));
    let nulls = NullBuffer::union(out.nulls(), Some(&nonzero));
    Ok(Int64Array::try_new(out.values().clone(), nulls)?)
}

/// `l op r` with operands of the same type (or a dictionary and its value type).
fn compare(op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
    use BinaryOperator::*;
    let result = match l.data_type() {
        DataType::Float16 => float_compare::<Float16Type>(op, &l, &r)?,
        DataType::Float32 => float_compare::<Float32Type>(op, &l, &r)?,
        DataType::Float64 => float_compare::<Float64Type>(op, &l, &r)?,
        _ => match op {
            Eq => cmp::eq(&l, &r)?,
            NotEq => cmp::neq(&l, &r)?,
            Lt => cmp::lt(&l, &r)?,
            LtEq => cmp::lt_eq(&l, &r)?,
            Gt => cmp::gt(&l, &r)?,
            _ => cmp::gt_eq(&l, &r)?,
        },
    };
    Ok(l.wrap(&r, Arc::new(result)))
}

/// A float comparison with IEEE semantics (Arrow's `cmp` uses the total order, where NaN is
/// the largest value and equal to itself).
fn float_compare<T: ArrowPrimitiveType>(
    op: BinaryOperator,
    l: &Value,
    r: &Value,
) -> FrameResult<BooleanArray>
where
    T::Native: PartialOrd,
{
    use BinaryOperator::*;
    match op {
        Eq => compare_values::<T>(l, r, |a, b| a == b),
        NotEq => compare_values::<T>(l, r, |a, b| a != b),
        Lt => compare_values::<T>(l, r, |a, b| a < b),
        LtEq => compare_values::<T>(l, r, |a, b| a <= b),
        Gt => compare_values::<T>(l, r, |a, b| a > b),
        _ => compare_values::<T>(l, r, |a, b| a >= b),
    }
}

/// `f` on each pair of values of `l` and `r` (arrays or constants); null where either is.
fn compare_values<T: ArrowPrimitiveType>(
    l: &Value,
    r: &Value,
    f: impl Fn(T::Native, T::Native) -> bool,
) -> FrameResult<BooleanArray> {
    let (la, ra) = (as_primitive::<T>(l.array())?, as_primitive::<T>(r.array())?);
    Ok(match (l.is_scalar(), r.is_scalar()) {
        (true, false) => match scalar_value(la) {
            Some(a) => compare_scalar(ra, |b| f(a, b)),
            None => BooleanArray::new_null(ra.len()),
        },
        (false, true) => match scalar_value(ra) {
            Some(b) => compare_scalar(la, |a| f(a, b)),
            None => BooleanArray::new_null(la.len()),
        },
        _ => {
            if la.len() != ra.len() {
                return Err(FrameError::InvalidArgument(format!(
                    "cannot compare arrays of {} and {} rows",
                    la.len(),
                    ra.len()
                )));
            }
            let (lv, rv) = (la.values().iter(), ra.values().iter());
            let words = lv.as_slice().chunks(64).zip(rv.as_slice().chunks(64));
            let words = words.map(|(l, r)| pack(l.iter().zip(r).map(|(&a, &b)| f(a, b))));
            let values = BooleanBuffer::new(words.collect::<Vec<u64>>().into(), 0, la.len());
            BooleanArray::new(values, NullBuffer::union(la.nulls(), ra.nulls()))
        }
    })
}

/// `f` on each value of `a`; null where `a` is.
fn compare_scalar<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    f: impl Fn(T::Native) -> bool,
) -> BooleanArray {
    let words = a.values().chunks(64).map(|c| pack(c.iter().map(|&v| f(v))));
    let values = BooleanBuffer::new(words.collect::<Vec<u64>>().into(), 0, a.len());
    BooleanArray::new(values, a.nulls().cloned())
}

/// Up to 64 bits packed into a word, the first in the lowest bit.
#[inline(always)]
fn pack(bits: impl Iterator<Item = bool>) -> u64 {
    bits.enumerate()
        .fold(0, |word, (i, bit)| word | (u64::from(bit) << i))
}

/// Kleene `l & r` or `l | r`.
fn logical(op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
    let rows = l.rows(&r);
    let la = l.clone().cast(&DataType::Boolean)?.into_array(rows)?;
    let ra = r.clone().cast(&DataType::Boolean)?.into_array(rows)?;
    let (la, ra) = (as_boolean(&la)?, as_boolean(&ra)?);
    let result = match op {
        BinaryOperator::And => boolean::and_kleene(la, ra)?,
        _ => boolean::or_kleene(la, ra)?,
    };
    Ok(l.wrap(&r, Arc::new(result)))
}

/// `e` with its nulls replaced by `v` (both of the same type).
fn fill_null(e: Value, v: Value) -> FrameResult<Value> {
    let nulls = match e.array().logical_nulls() {
        None => return Ok(e),
        Some(n) if n.null_count() == 0 => return Ok(e),
        Some(n) => n,
    };
    if e.is_scalar() {
        return Ok(v);
    }
    if v.is_scalar() && v.array().logical_null_count() > 0 {
        return Ok(e);
    }
    let mask = BooleanArray::new(nulls.into_inner(), None);
    Ok(Value::Array(zip(&mask, &e, &v)?))
}

/// Whether each string of `v` contains `pattern`.
fn str_contains(v: Value, pattern: &str) -> FrameResult<Value> {
    if v.data_type() == &DataType::Null {
        return Ok(Value::Scalar(new_null_array(&DataType::Boolean, 1)));
    }
    let value_type = scalar_type(v.data_type()).clone();
    let needle = Value::Scalar(Literal::Str(pattern.to_string()).to_array()).cast(&value_type)?;
    let result = contains(&v, &needle)?;
    Ok(v.wrap(&needle, Arc::new(result)))
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
            Expr::Alias { expr, name } => write!(f, "{expr}.alias({name:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        Date32Array, Date64Array, DictionaryArray, Float32Array, Int32Array, Int8Array,
        LargeStringArray, ListArray, StringViewArray, TimestampMicrosecondArray,
        TimestampMillisecondArray, UInt8Array,
    };
    use arrow::datatypes::{Field, Int32Type};

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    /// Evaluates `e`, checking that the result has the type `data_type` predicts and one
    /// value per row.
    fn eval(e: &Expr, b: &RecordBatch) -> ArrayRef {
        let out = e.evaluate(b).unwrap();
        assert_eq!(
            &e.data_type(b.schema_ref()).unwrap(),
            out.data_type(),
            "{e}"
        );
        assert_eq!(out.len(), b.num_rows(), "{e}");
        out
    }

    fn ints(e: &Expr, b: &RecordBatch) -> Vec<Option<i64>> {
        let out = eval(e, b);
        assert_eq!(out.data_type(), &DataType::Int64, "{e}");
        out.as_primitive::<Int64Type>().iter().collect()
    }

    fn floats(e: &Expr, b: &RecordBatch) -> Vec<Option<f64>> {
        let out = eval(e, b);
        assert_eq!(out.data_type(), &DataType::Float64, "{e}");
        out.as_primitive::<Float64Type>().iter().collect()
    }

    fn bools(e: &Expr, b: &RecordBatch) -> Vec<Option<bool>> {
        eval(e, b).as_boolean().iter().collect()
    }

    fn int32s(e: &Expr, b: &RecordBatch) -> Vec<Option<i32>> {
        eval(e, b).as_primitive::<Int32Type>().iter().collect()
    }

    fn mismatch(e: &Expr, b: &RecordBatch, words: &[&str]) {
        let err = e.data_type(b.schema_ref()).unwrap_err();
        let FrameError::TypeMismatch(message) = &err else {
            panic!("{e}: expected a type mismatch, got {err:?}");
        };
        for w in words {
            assert!(message.contains(w), "{message:?} lacks {w:?}");
        }
        assert_eq!(e.evaluate(b).unwrap_err(), err, "{e}");
    }

    /// a: Int32 [1, -7, 3, null], b: Int64 [2, 3, 0, 5], f: Float64 [1.5, -7.5, 0.0, NaN].
    fn numbers() -> RecordBatch {
        batch(vec![
            (
                "a",
                Arc::new(Int32Array::from(vec![Some(1), Some(-7), Some(3), None])) as ArrayRef,
            ),
            ("b", Arc::new(Int64Array::from(vec![2, 3, 0, 5]))),
            (
                "f",
                Arc::new(Float64Array::from(vec![1.5, -7.5, 0.0, f64::NAN])),
            ),
        ])
    }

    #[test]
    fn integer_arithmetic_widens_to_int64() {
        let b = numbers();
        assert_eq!(
            ints(&(col("a") + col("b")), &b),
            [Some(3), Some(-4), Some(3), None]
        );
        assert_eq!(
            ints(&(col("a") - col("b")), &b),
            [Some(-1), Some(-10), Some(3), None]
        );
        assert_eq!(
            ints(&(col("a") * col("b")), &b),
            [Some(2), Some(-21), Some(0), None]
        );
        // Floored modulo as Python; by zero is null.
        assert_eq!(
            ints(&(col("a") % col("b")), &b),
            [Some(1), Some(2), None, None]
        );
        assert_eq!(
            ints(&(col("a") % -3), &b),
            [Some(-2), Some(-1), Some(0), None]
        );
        assert_eq!(ints(&(col("a") % 0), &b), [None, None, None, None]);
        assert_eq!(
            ints(&(lit(-6) % col("b")), &b),
            [Some(0), Some(0), None, Some(4)]
        );
        // Literals on either side.
        assert_eq!(
            ints(&(lit(10) - col("a")), &b),
            [Some(9), Some(17), Some(7), None]
        );
        assert_eq!(
            ints(&(col("a") * 2), &b),
            [Some(2), Some(-14), Some(6), None]
        );
        // Wrapping.
        let max = batch(vec![(
            "m",
            Arc::new(Int64Array::from(vec![i64::MAX])) as ArrayRef,
        )]);
        assert_eq!(ints(&(col("m") + 1), &max), [Some(i64::MIN)]);
        assert_eq!(ints(&(col("m") * 2), &max), [Some(-2)]);
    }

    #[test]
    fn division_is_true_division() {
        let b = numbers();
        let q = floats(&(col("a") / col("b")), &b);
        assert_eq!(q[0], Some(0.5));
        assert!((q[1].unwrap() + 7.0 / 3.0).abs() < 1e-15);
        assert_eq!(q[2], Some(f64::INFINITY));
        assert_eq!(q[3], None);
        let z = floats(&(col("f") / 0), &b);
        assert_eq!(&z[..2], [Some(f64::INFINITY), Some(f64::NEG_INFINITY)]);
        assert!(z[2].unwrap().is_nan() && z[3].unwrap().is_nan());
        assert_eq!(floats(&(lit(7) / lit(2)), &b), [Some(3.5); 4]);
    }

    #[test]
    fn float_arithmetic_and_mixed_operands() {
        let b = numbers();
        let sum = floats(&(col("a") + col("f")), &b);
        assert_eq!(&sum[..3], [Some(2.5), Some(-14.5), Some(3.0)]);
        assert_eq!(sum[3], None);
        assert_eq!(
            floats(&(col("b") * 0.5), &b),
            [Some(1.0), Some(1.5), Some(0.0), Some(2.5)]
        );
        let m = floats(&(col("f") % 2.0), &b);
        assert_eq!(&m[..3], [Some(1.5), Some(0.5), Some(0.0)]);
        assert!(m[3].unwrap().is_nan());
        assert_eq!(floats(&(lit(7.5) % -2.0), &b), [Some(-0.5); 4]);
        let f32s = batch(vec![(
            "x",
            Arc::new(Float32Array::from(vec![0.5f32, 2.0])) as ArrayRef,
        )]);
        assert_eq!(floats(&(col("x") - 1), &f32s), [Some(-0.5), Some(1.0)]);
    }

    #[test]
    fn negation() {
        let b = batch(vec![
            (
                "i",
                Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            ("u", Arc::new(UInt8Array::from(vec![200, 0]))),
        ]);
        let n = eval(&-col("i"), &b);
        assert_eq!(
            n.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
            [Some(-1), None]
        );
        assert_eq!(ints(&-col("u"), &b), [Some(-200), Some(0)]);
        assert_eq!(-lit(5), lit(-5));
        assert_eq!(-lit(2.5), lit(-2.5));
        mismatch(&-lit("x"), &b, &["negate", "Utf8"]);
    }

    #[test]
    fn null_literals_propagate() {
        let b = numbers();
        assert_eq!(ints(&(col("a") + lit(Literal::Null)), &b), [None; 4]);
        assert_eq!(floats(&(lit(Literal::Null) / col("b")), &b), [None; 4]);
        assert_eq!(bools(&col("a").gt(Literal::Null), &b), [None; 4]);
        assert_eq!(bools(&lit(Literal::Null).eq(col("f")), &b), [None; 4]);
        let n = eval(&(lit(Literal::Null) + lit(Literal::Null)), &b);
        assert_eq!(
            (n.data_type(), n.logical_null_count()),
            (&DataType::Null, 4)
        );
    }

    #[test]
    fn numeric_comparisons() {
        let b = numbers();
        assert_eq!(
            bools(&col("a").lt(col("b")), &b),
            [Some(true), Some(true), Some(false), None]
        );
        assert_eq!(
            bools(&col("a").ge(1), &b),
            [Some(true), Some(false), Some(true), None]
        );
        assert_eq!(
            bools(&lit(2).le(col("b")), &b),
            [Some(true), Some(true), Some(false), Some(true)]
        );
        assert_eq!(
            bools(&col("a").ne(3), &b),
            [Some(true), Some(true), Some(false), None]
        );
        // Int against float compares as floats; NaN is unequal to everything; -0.0 == 0.
        assert_eq!(
            bools(&col("a").gt(col("f")), &b),
            [Some(false), Some(true), Some(true), None]
        );
        assert_eq!(
            bools(&col("f").gt(0), &b),
            [Some(true), Some(false), Some(false), Some(false)]
        );
        assert_eq!(
            bools(&col("f").eq(col("f")), &b),
            [Some(true), Some(true), Some(true), Some(false)]
        );
        assert_eq!(
            bools(&col("f").ne(-7.5), &b),
            [Some(true), Some(false), Some(true), Some(true)]
        );
        assert_eq!(
            bools(&col("f").eq(-0.0), &b),
            [Some(false), Some(false), Some(true), Some(false)]
        );
        assert_eq!(
            bools(&lit(0.25).lt(col("a")), &b),
            [Some(true), Some(false), Some(true), None]
        );
        // A literal outside the column's range widens the column instead of wrapping.
        let small = batch(vec![(
            "s",
            Arc::new(Int8Array::from(vec![-5, 100])) as ArrayRef,
        )]);
        assert_eq!(bools(&col("s").lt(300), &small), [Some(true), Some(true)]);
        assert_eq!(bools(&col("s").gt(-300), &small), [Some(true), Some(true)]);
        assert_eq!(
            bools(&col("s").eq(100.0), &small),
            [Some(false), Some(true)]
        );
        assert_eq!(bools(&col("s").lt(99.5), &small), [Some(true), Some(false)]);
        let f32s = batch(vec![(
            "x",
            Arc::new(Float32Array::from(vec![0.1f32])) as ArrayRef,
        )]);
        // 0.1f32 is 0.100000001490116..., above 0.1f64: compared in f64.
        assert_eq!(bools(&col("x").gt(0.1), &f32s), [Some(true)]);
        assert_eq!(bools(&col("x").eq(0.5), &f32s), [Some(false)]);
    }

    #[test]
    fn float_comparisons_match_a_naive_loop() {
        // 200 values cycling through negatives, zeros of both signs, NaN, infinities and nulls,
        // sliced so that neither the offset nor the length is a multiple of 64.
        let pool = [-1.5, -0.0, 0.0, 2.0, f64::NAN, f64::INFINITY, 7.25];
        let l: Float64Array = (0..200)
            .map(|i| (i % 11 != 5).then(|| pool[i % pool.len()]))
            .collect();
        let r: Float64Array = (0..200)
            .map(|i| (i % 13 != 2).then(|| pool[(i * 3 + 1) % pool.len()]))
            .collect();
        let b = batch(vec![("l", Arc::new(l) as ArrayRef), ("r", Arc::new(r))]).slice(3, 130);
        let (lv, rv) = (
            b.column(0).as_primitive::<Float64Type>(),
            b.column(1).as_primitive::<Float64Type>(),
        );
        type Naive = fn(&f64, &f64) -> bool;
        type Build = fn(Expr, Expr) -> Expr;
        let ops: [(Build, Naive); 6] = [
            (Expr::eq, f64::eq),
            (Expr::ne, f64::ne),
            (Expr::lt, f64::lt),
            (Expr::le, f64::le),
            (Expr::gt, f64::gt),
            (Expr::ge, f64::ge),
        ];
        for (build, naive) in ops {
            let expect = |x: Option<f64>, y: Option<f64>| Some(naive(&x?, &y?));
            let want: Vec<_> = lv
                .iter()
                .zip(rv.iter())
                .map(|(x, y)| expect(x, y))
                .collect();
            assert_eq!(bools(&build(col("l"), col("r")), &b), want);
            let want: Vec<_> = lv.iter().map(|x| expect(x, Some(2.0))).collect();
            assert_eq!(bools(&build(col("l"), lit(2.0)), &b), want);
            let want: Vec<_> = rv.iter().map(|y| expect(Some(-0.0), y)).collect();
            assert_eq!(bools(&build(lit(-0.0), col("r")), &b), want);
        }
    }

    #[test]
    fn modulo_matches_python() {
        let xs = [i64::MIN, -7, -6, -1, 0, 1, 5, 7, i64::MAX];
        let (l, r): (Vec<i64>, Vec<i64>) = xs
            .iter()
            .flat_map(|&x| xs.iter().map(move |&y| (x, y)))
            .unzip();
        let b = batch(vec![
            ("l", Arc::new(Int64Array::from(l.clone())) as ArrayRef),
            ("r", Arc::new(Int64Array::from(r.clone()))),
        ]);
        // Python's floored modulo, ((x % y) + y) % y, in i128 (no overflow).
        let python = |x: i64, y: i64| {
            let (x, y) = (i128::from(x), i128::from(y));
            (y != 0).then(|| (((x % y) + y) % y) as i64)
        };
        let want: Vec<_> = l.iter().zip(&r).map(|(&x, &y)| python(x, y)).collect();
        assert_eq!(ints(&(col("l") % col("r")), &b), want);
    }

    #[test]
    fn kleene_logic() {
        let t = [Some(true), Some(false), None];
        let (l, r): (Vec<_>, Vec<_>) = t
            .iter()
            .flat_map(|&x| t.iter().map(move |&y| (x, y)))
            .unzip();
        let b = batch(vec![
            ("l", Arc::new(BooleanArray::from(l)) as ArrayRef),
            ("r", Arc::new(BooleanArray::from(r))),
        ]);
        let (tt, ff) = (Some(true), Some(false));
        assert_eq!(
            bools(&(col("l") & col("r")), &b),
            [tt, ff, None, ff, ff, ff, None, ff, None]
        );
        assert_eq!(
            bools(&(col("l") | col("r")), &b),
            [tt, tt, tt, tt, ff, None, tt, None, None]
        );
        // Rows 0, 3, 6 of `l` are true, false, null.
        let b = b.slice(0, 7);
        let every_third = |e: Expr| bools(&e, &b).into_iter().step_by(3).collect::<Vec<_>>();
        assert_eq!(every_third(col("l").and_(Literal::Null)), [None, ff, None]);
        assert_eq!(every_third(col("l").or_(Literal::Null)), [tt, None, None]);
        assert_eq!(every_third(lit(true) & col("l")), [tt, ff, None]);
        assert_eq!(every_third(lit(false) | col("l")), [tt, ff, None]);
        assert_eq!(every_third(!col("l")), [ff, tt, None]);
        assert_eq!(every_third(col("l").not()), [ff, tt, None]);
        assert_eq!(every_third(col("l").eq(true)), [tt, ff, None]);
        assert_eq!(bools(&(lit(true) | lit(false)), &b), [tt; 7]);
    }

    #[test]
    fn null_tests_and_fill() {
        let b = numbers();
        assert_eq!(
            bools(&col("a").is_null(), &b),
            [Some(false), Some(false), Some(false), Some(true)]
        );
        // NaN is a value, not null.
        assert_eq!(bools(&col("f").is_not_null(), &b), [Some(true); 4]);
        assert_eq!(bools(&lit(Literal::Null).is_null(), &b), [Some(true); 4]);
        // A fitting literal keeps the column's type.
        let filled = eval(&col("a").fill_null(0), &b);
        assert_eq!(filled.data_type(), &DataType::Int32);
        let filled: Vec<_> = filled.as_primitive::<Int32Type>().iter().collect();
        assert_eq!(filled, [Some(1), Some(-7), Some(3), Some(0)]);
        assert_eq!(
            floats(&col("a").fill_null(0.5), &b),
            [Some(1.0), Some(-7.0), Some(3.0), Some(0.5)]
        );
        assert_eq!(
            ints(&col("a").fill_null(col("b")), &b),
            [Some(1), Some(-7), Some(3), Some(5)]
        );
        assert_eq!(
            ints(&(col("a") % col("b")).fill_null(-1), &b),
            [Some(1), Some(2), Some(-1), Some(-1)]
        );
        let same = eval(&col("a").fill_null(Literal::Null), &b);
        assert_eq!(same.null_count(), 1);
        mismatch(&col("a").fill_null("x"), &b, &["fill", "Int32", "Utf8"]);
    }

    fn strings() -> RecordBatch {
        let values = vec![Some("abc"), Some("xbz"), None, Some("b")];
        let dict: DictionaryArray<Int32Type> = values.iter().copied().collect();
        batch(vec![
            ("s", Arc::new(StringArray::from(values.clone())) as ArrayRef),
            (
                "l",
                Arc::new(LargeStringArray::from(vec![
                    Some("abc"),
                    Some("q"),
                    Some("z"),
                    Some("b"),
                ])),
            ),
            ("d", Arc::new(dict)),
            ("v", Arc::new(StringViewArray::from(values))),
        ])
    }

    #[test]
    fn string_comparisons_over_every_encoding() {
        let b = strings();
        for c in ["s", "d", "v"] {
            assert_eq!(
                bools(&col(c).eq("xbz"), &b),
                [Some(false), Some(true), None, Some(false)],
                "{c}"
            );
            assert_eq!(
                bools(&lit("b").lt(col(c)), &b),
                [Some(false), Some(true), None, Some(false)],
                "{c}"
            );
            assert_eq!(
                bools(&col(c).str_contains("b"), &b),
                [Some(true), Some(true), None, Some(true)],
                "{c}"
            );
            assert_eq!(
                bools(&col(c).str_contains("bc"), &b),
                [Some(true), Some(false), None, Some(false)],
                "{c}"
            );
            assert_eq!(
                bools(&col(c).eq(col("l")), &b),
                [Some(true), Some(false), None, Some(true)],
                "{c}"
            );
        }
        assert_eq!(
            bools(&col("l").ne("q"), &b),
            [Some(true), Some(false), Some(true), Some(true)]
        );
        assert_eq!(bools(&col("l").str_contains(""), &b), [Some(true); 4]);
        assert_eq!(
            bools(&col("d").ge(col("s")), &b),
            [Some(true), Some(true), None, Some(true)]
        );
        assert_eq!(
            bools(&col("v").gt(col("d")), &b),
            [Some(false), Some(false), None, Some(false)]
        );
        let filled = eval(&col("d").fill_null("n"), &b);
        assert_eq!(filled.data_type(), &DataType::Utf8);
        let filled: Vec<_> = filled.as_string::<i32>().iter().collect();
        assert_eq!(filled, [Some("abc"), Some("xbz"), Some("n"), Some("b")]);
        let filled = eval(&col("l").fill_null(col("s")), &b);
        assert_eq!(filled.data_type(), &DataType::LargeUtf8);
    }

    /// d32: Date32 [2021-03-04, 2020-02-29, null]; d64: the same as Date64;
    /// ts: Timestamp(µs) [2021-03-04 05:06:07, 1969-12-31 23:59:58, null].
    fn dates() -> RecordBatch {
        let days = vec![Some(18690), Some(18321), None];
        let ms: Vec<_> = days
            .iter()
            .map(|d| d.map(|d: i32| i64::from(d) * 86_400_000))
            .collect();
        let ts = vec![Some(1_614_834_367_000_000), Some(-2_000_000), None];
        batch(vec![
            ("d32", Arc::new(Date32Array::from(days)) as ArrayRef),
            ("d64", Arc::new(Date64Array::from(ms))),
            ("ts", Arc::new(TimestampMicrosecondArray::from(ts))),
        ])
    }

    #[test]
    fn date_parts() {
        let b = dates();
        let d = col("d32");
        assert_eq!(
            int32s(&d.clone().dt_year(), &b),
            [Some(2021), Some(2020), None]
        );
        assert_eq!(int32s(&d.clone().dt_month(), &b), [Some(3), Some(2), None]);
        assert_eq!(int32s(&d.clone().dt_day(), &b), [Some(4), Some(29), None]);
        assert_eq!(
            int32s(&d.clone().dt_weekday(), &b),
            [Some(3), Some(5), None]
        );
        assert_eq!(int32s(&d.clone().dt_hour(), &b), [Some(0), Some(0), None]);
        assert_eq!(int32s(&d.dt_second(), &b), [Some(0), Some(0), None]);
        assert_eq!(int32s(&col("d64").dt_day(), &b), [Some(4), Some(29), None]);
        assert_eq!(
            int32s(&col("d64").dt_minute(), &b),
            [Some(0), Some(0), None]
        );
        let t = col("ts");
        assert_eq!(
            int32s(&t.clone().dt_year(), &b),
            [Some(2021), Some(1969), None]
        );
        assert_eq!(int32s(&t.clone().dt_month(), &b), [Some(3), Some(12), None]);
        assert_eq!(int32s(&t.clone().dt_day(), &b), [Some(4), Some(31), None]);
        assert_eq!(int32s(&t.clone().dt_hour(), &b), [Some(5), Some(23), None]);
        assert_eq!(
            int32s(&t.clone().dt_minute(), &b),
            [Some(6), Some(59), None]
        );
        assert_eq!(
            int32s(&t.clone().dt_second(), &b),
            [Some(7), Some(58), None]
        );
        assert_eq!(int32s(&t.dt_weekday(), &b), [Some(3), Some(2), None]);
        assert_eq!(int32s(&lit(Literal::Null).dt_hour(), &b), [None; 3]);
    }

    #[test]
    fn temporal_comparisons_and_differences() {
        let b = dates();
        assert_eq!(
            bools(&col("d32").eq(col("d64")), &b),
            [Some(true), Some(true), None]
        );
        assert_eq!(
            bools(&col("d32").ge("2021-03-01"), &b),
            [Some(true), Some(false), None]
        );
        assert_eq!(
            bools(&lit("1970-01-01").gt(col("ts")), &b),
            [Some(false), Some(true), None]
        );
        assert_eq!(
            bools(&col("ts").lt("2021-03-04T05:06:08"), &b),
            [Some(true), Some(true), None]
        );
        mismatch(
            &col("d32").lt("yesterday"),
            &b,
            &["\"yesterday\"", "Date32"],
        );
        mismatch(
            &col("d32").lt(col("ts")),
            &b,
            &["compare", "Date32", "Timestamp"],
        );
        let ms = TimestampMillisecondArray::from(vec![1_614_834_367_000, 0, 0]);
        let mixed = batch(vec![
            ("ts", b.column(2).clone()),
            ("ms", Arc::new(ms) as ArrayRef),
        ]);
        assert_eq!(
            bools(&col("ts").eq(col("ms")), &mixed),
            [Some(true), Some(false), None]
        );
        let diff = eval(&(col("ts") - col("ts")), &b);
        assert_eq!(diff.data_type(), &DataType::Duration(TimeUnit::Microsecond));
        assert_eq!(diff.null_count(), 1);
        let tz = DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into()));
        mismatch(
            &col("ts").cast(tz).dt_hour(),
            &b,
            &["date parts", "Timestamp"],
        );
    }

    #[test]
    fn casts() {
        let b = numbers();
        let s = eval(&col("a").cast(DataType::Utf8), &b);
        let s: Vec<_> = s.as_string::<i32>().iter().collect();
        assert_eq!(s, [Some("1"), Some("-7"), Some("3"), None]);
        let text = batch(vec![(
            "t",
            Arc::new(StringArray::from(vec!["12", "-3"])) as ArrayRef,
        )]);
        assert_eq!(
            int32s(&col("t").cast(DataType::Int32), &text),
            [Some(12), Some(-3)]
        );
        assert_eq!(
            ints(
                &col("f").cast(DataType::Int64).fill_null(0),
                &numbers().slice(0, 3)
            ),
            [Some(1), Some(-7), Some(0)]
        );
        let bad = batch(vec![(
            "t",
            Arc::new(StringArray::from(vec!["12", "abc"])) as ArrayRef,
        )]);
        let err = col("t").cast(DataType::Int32).evaluate(&bad).unwrap_err();
        let FrameError::TypeMismatch(m) = err else {
            panic!("{err:?}")
        };
        assert!(m.contains("Utf8") && m.contains("Int32"), "{m}");
        mismatch(
            &lit(true).cast(DataType::Date32),
            &b,
            &["cast", "Boolean", "Date32"],
        );
    }

    #[test]
    fn type_errors_name_the_types() {
        let b = numbers();
        let s = strings();
        let bd = batch(vec![
            ("s", s.column(0).clone()),
            ("n", b.column(1).clone()),
            (
                "t",
                Arc::new(BooleanArray::from(vec![true, false, true, false])) as ArrayRef,
            ),
        ]);
        mismatch(
            &(col("s") + col("n")),
            &bd,
            &["+", "Utf8", "Int64", "col(\"s\")"],
        );
        mismatch(&(col("t") * 2), &bd, &["*", "Boolean", "Int64"]);
        mismatch(&col("n").str_contains("x"), &bd, &["str_contains", "Int64"]);
        mismatch(&col("n").dt_hour(), &bd, &["date parts", "Int64"]);
        mismatch(&(col("n") & col("t")), &bd, &["&", "Int64", "Boolean"]);
        mismatch(&col("t").or_(1), &bd, &["|", "Boolean", "Int64"]);
        mismatch(&!col("n"), &bd, &["not", "Int64"]);
        mismatch(&col("s").gt(col("n")), &bd, &["compare", "Utf8", "Int64"]);
        mismatch(&col("s").eq(1), &bd, &["compare", "Utf8", "Int64"]);
        mismatch(&col("t").eq(1), &bd, &["compare", "Boolean", "Int64"]);
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1)])]);
        let lb = batch(vec![("x", Arc::new(list) as ArrayRef)]);
        mismatch(&col("x").eq(col("x")), &lb, &["compare", "List"]);
        let err = (col("nope") + 1).data_type(bd.schema_ref()).unwrap_err();
        assert!(
            matches!(err, FrameError::ColumnNotFound { ref name, .. } if name == "nope"),
            "{err:?}"
        );
        assert!(matches!(
            col("nope").evaluate(&bd),
            Err(FrameError::ColumnNotFound { .. })
        ));
    }

    #[test]
    fn names_and_columns() {
        let e = (col("b") + col("a") * col("b")).alias("x");
        assert_eq!(e.output_name(), "x");
        assert_eq!(e.columns(), ["b", "a"]);
        assert_eq!((lit(1) + col("c")).output_name(), "c");
        assert_eq!((lit(1) + 2).output_name(), "literal");
        assert_eq!(col("a").fill_null(col("z")).columns(), ["a", "z"]);
        let shown = (col("tip").gt(0) & col("n").str_contains("a").not()).to_string();
        assert_eq!(
            shown,
            "((col(\"tip\") > 0) & !col(\"n\").str_contains(\"a\"))"
        );
    }

    #[test]
    fn constants_broadcast_and_empty_batches() {
        let b = numbers();
        assert_eq!(ints(&(lit(1) + lit(2)), &b), [Some(3); 4]);
        let s = eval(&lit("x"), &b);
        assert_eq!(
            s.as_string::<i32>().iter().collect::<Vec<_>>(),
            [Some("x"); 4]
        );
        let empty = b.slice(0, 0);
        for e in [
            col("a") + col("b"),
            col("f").gt(0) & col("a").lt(col("b")),
            lit(1) + lit(2),
            col("a") % 0,
        ] {
            assert_eq!(eval(&e, &empty).len(), 0);
        }
        let strs = strings().slice(0, 0);
        assert_eq!(eval(&col("d").str_contains("a"), &strs).len(), 0);
        let one = b.slice(1, 1);
        assert_eq!(ints(&(col("a") % col("b")), &one), [Some(2)]);
        let none = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(2)),
        )
        .unwrap();
        assert_eq!(floats(&lit(1.5), &none), [Some(1.5); 2]);
    }

    #[test]
    fn serde_round_trip() {
        let e = (col("a").cast(DataType::Float32) / 2 + lit(Literal::Null))
            .fill_null(0.5)
            .gt(col("t").dt_weekday())
            .or_(col("s").str_contains("x").not() & col("n").is_null())
            .alias("keep");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(serde_json::from_str::<Expr>(&json).unwrap(), e);
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("t", DataType::Date32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("n", DataType::Float64, true),
        ]);
        assert_eq!(e.data_type(&schema).unwrap(), DataType::Boolean);
    }
}
