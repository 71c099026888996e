//! Evaluation of expressions on a chunk: how a binary operator runs, scalar and array
//! values, and the arithmetic, comparison and logical kernels.

use super::temporal;
use super::typing::scalar_type;
use super::*;
use arrow::datatypes::ArrowNativeTypeOp;

impl Expr {
    /// Evaluates it on `batch`; the result has `batch.num_rows()` rows (literals broadcast).
    pub fn evaluate(&self, batch: &RecordBatch) -> FrameResult<ArrayRef> {
        self.eval(batch)?.into_array(batch.num_rows())
    }

    fn eval(&self, batch: &RecordBatch) -> FrameResult<Value> {
        if let Some(answers) = self.eval_on_dictionary(batch)? {
            return Ok(Value::Array(answers));
        }
        match self {
            Expr::Column(name) => Ok(Value::Array(column(batch, name)?.clone())),
            Expr::Literal(l) => Ok(Value::Scalar(l.to_array()?)),
            Expr::Binary { op, left, right } => {
                let (l, r) = (left.eval(batch)?, right.eval(batch)?);
                let plan = self.plan_binary(*op, l.data_type(), r.data_type(), left, right)?;
                plan.run(*op, l, r).map_err(|e| match e {
                    FrameError::Overflow(m) => FrameError::Overflow(format!("{m} in `{self}`")),
                    e => e,
                })
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
                    // A decimal's negation always fits its precision.
                    _ if Dec::of(&to).is_some() => v.map(|a| Ok(numeric::neg(a)?)),
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
                // A zoned timestamp's parts are its wall clock's: read from the zone
                // database once a day rather than by chrono per value, where they can be.
                v.map(|a| match zone::wall_clocks(a)? {
                    Some(walls) => Ok(date_part(&walls, part)?),
                    None => Ok(date_part(a, part)?),
                })
            }
            Expr::Function { func, args } => {
                let values = args
                    .iter()
                    .map(|a| a.evaluate(batch))
                    .collect::<FrameResult<Vec<_>>>()?;
                let out = self.data_type(&batch.schema())?;
                Ok(Value::Array(func.evaluate(&values, &out)?))
            }
            Expr::Alias { expr, .. } => expr.eval(batch),
        }
    }
}

/// How a binary operator runs once the operand types are known.
pub(super) enum Plan {
    /// The result is a null constant (an operand is the null literal).
    Null,
    /// Arithmetic with both operands converted to this type.
    Arithmetic(DataType),
    /// Decimal arithmetic with the operands converted to `left` and `right` (`Decimal128`),
    /// giving `out`.
    Decimal {
        left: DataType,
        right: DataType,
        out: DataType,
    },
    /// A comparison with the operands converted to these types.
    Compare(DataType, DataType),
    /// Kleene `&` or `|` on booleans.
    Logical,
    /// A temporal value against a constant read in its type as `value`, rounded down
    /// (`exact` if that lost nothing); `flip`: the constant is the left operand.
    TimeConstant { value: i64, exact: bool, flip: bool },
    /// Temporal `+` or `-` (checked) with the operands converted to `left` and `right`.
    Temporal {
        left: DataType,
        right: DataType,
        out: DataType,
    },
    /// Dates of type `date` moved by a constant of `days` (the dates on the left if
    /// `date_left`).
    DateShift {
        days: i64,
        date: DataType,
        date_left: bool,
    },
}

impl Plan {
    pub(super) fn output_type(&self, op: BinaryOperator) -> DataType {
        match self {
            Plan::Null if is_arithmetic(op) => DataType::Null,
            Plan::Arithmetic(DataType::Timestamp(unit, _)) => DataType::Duration(*unit),
            Plan::Arithmetic(t) | Plan::Decimal { out: t, .. } => t.clone(),
            Plan::Temporal { out, .. } | Plan::DateShift { date: out, .. } => out.clone(),
            Plan::Null | Plan::Compare(..) | Plan::Logical | Plan::TimeConstant { .. } => {
                DataType::Boolean
            }
        }
    }

    fn run(&self, op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
        match self {
            Plan::Null => Ok(Value::Scalar(new_null_array(&self.output_type(op), 1))),
            Plan::Arithmetic(t) => arithmetic(op, l.cast(t)?, r.cast(t)?),
            Plan::Decimal { left, right, out } => {
                let fits = Dec::of(left)
                    .zip(Dec::of(right))
                    .is_some_and(|(a, b)| a.always_fits(op, b));
                let (l, r) = (l.cast_strict(left)?, r.cast_strict(right)?);
                decimal_arithmetic(op, l, r, out, fits)
            }
            Plan::Compare(lt, rt) => compare(op, l.cast(lt)?, r.cast(rt)?),
            Plan::Logical => logical(op, l, r),
            Plan::TimeConstant { value, exact, flip } => {
                temporal::run_time_constant(op, l, r, *value, *exact, *flip)
            }
            Plan::Temporal { left, right, .. } => temporal::run_temporal(op, l, r, left, right),
            Plan::DateShift {
                days, date_left, ..
            } => temporal::shift_days(if *date_left { l } else { r }, *days),
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
pub(super) enum Value {
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
    pub(super) fn array(&self) -> &ArrayRef {
        match self {
            Value::Array(a) | Value::Scalar(a) => a,
        }
    }

    pub(super) fn data_type(&self) -> &DataType {
        self.array().data_type()
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Value::Scalar(_))
    }

    /// `f` applied to the array, keeping a constant a constant.
    pub(super) fn map(
        self,
        f: impl FnOnce(&dyn Array) -> FrameResult<ArrayRef>,
    ) -> FrameResult<Value> {
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
    pub(super) fn cast_strict(self, to: &DataType) -> FrameResult<Value> {
        self.cast_with(to, &STRICT)
    }

    fn cast_with(self, to: &DataType, options: &CastOptions) -> FrameResult<Value> {
        if self.data_type() == to {
            return Ok(self);
        }
        let from = self.data_type().clone();
        // A float constant becomes a decimal by its shortest spelling (0.05 is exactly
        // 0.05), not by the float's binary value.
        let constant_to_decimal = self.is_scalar() && from.is_floating() && Dec::of(to).is_some();
        self.map(|a| {
            zone::check_zone_cast(a, to)?;
            let spelled;
            let a = match constant_to_decimal {
                true => {
                    spelled = float_spelling(a)?;
                    spelled.as_ref()
                }
                false => a,
            };
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
    pub(super) fn wrap(&self, other: &Value, result: ArrayRef) -> Value {
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

pub(super) fn as_primitive<T: ArrowPrimitiveType>(
    a: &dyn Array,
) -> FrameResult<&PrimitiveArray<T>> {
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

/// Floored integer `a % b` (sign of the divisor, as Python); 0 for a zero divisor (made null
/// by the caller).
fn floor_mod_int<T: ArrowNativeTypeOp>(a: T, b: T) -> T {
    if b.is_zero() {
        return T::ZERO;
    }
    let m = a.mod_wrapping(b);
    if !m.is_zero() && m.is_lt(T::ZERO) != b.is_lt(T::ZERO) {
        m.add_wrapping(b)
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

/// Floored modulo of two `Int64`, two `Decimal128` (of one scale) or two `Float64`
/// operands; an integer or decimal divisor of zero gives null.
fn modulo(l: &Value, r: &Value) -> FrameResult<ArrayRef> {
    match l.data_type() {
        DataType::Int64 => {
            let out = binary_values::<Int64Type>(l, r, floor_mod_int)?;
            Ok(Arc::new(null_where_zero(out, r)?))
        }
        DataType::Decimal128(p, s) => {
            let out = binary_values::<Decimal128Type>(l, r, floor_mod_int)?;
            let out = null_where_zero(out, r)?.with_precision_and_scale(*p, *s)?;
            Ok(Arc::new(out))
        }
        _ => Ok(Arc::new(binary_values::<Float64Type>(l, r, floor_mod_f64)?)),
    }
}

/// `l op r` (`+ - * %`) on decimals, as type `out`: exact, and a [`FrameError::Overflow`]
/// where a value does not fit (`%` meets both at `out`'s scale first); the values are not
/// checked where every one `fits`.
fn decimal_arithmetic(
    op: BinaryOperator,
    l: Value,
    r: Value,
    out: &DataType,
    fits: bool,
) -> FrameResult<Value> {
    if let Some(values) = decimal_exact(op, &l, &r, out, fits)? {
        return Ok(l.wrap(&r, values));
    }
    let overflow = |e: arrow::error::ArrowError| FrameError::Overflow(e.to_string());
    let result = match op {
        BinaryOperator::Add => numeric::add(&l, &r).map_err(overflow)?,
        BinaryOperator::Sub => numeric::sub(&l, &r).map_err(overflow)?,
        BinaryOperator::Mul => numeric::mul(&l, &r).map_err(overflow)?,
        _ => {
            let scale = Dec::of(out).map_or(0, |d| d.scale);
            let wide = DataType::Decimal128(decimal::MAX_PRECISION, scale);
            let widen = |v: Value| match v.cast_strict(&wide) {
                Err(FrameError::TypeMismatch(m)) => Err(FrameError::Overflow(m)),
                v => v,
            };
            modulo(&widen(l.clone())?, &widen(r.clone())?)?
        }
    };
    Ok(l.wrap(&r, decimal::fit(&result, out, !fits)?))
}

/// `l op r` (`+ - *`) on `Decimal128` operands as type `out`, in one pass over their
/// unscaled values: the operands brought to `out`'s scale (`+ -`) and combined in `i128`,
/// unchecked where every value `fits`, else each checked against `out`'s precision. `None`
/// where a value does not fit (the caller's path through Arrow's kernels then names it) or
/// for other operators; Arrow's checked kernels cost several times this pass (TPC-H's
/// `price * (1 - discount)`).
fn decimal_exact(
    op: BinaryOperator,
    l: &Value,
    r: &Value,
    out: &DataType,
    fits: bool,
) -> FrameResult<Option<ArrayRef>> {
    use BinaryOperator::{Add, Mul, Sub};
    let (Some(ld), Some(rd), Some(od)) =
        (Dec::of(l.data_type()), Dec::of(r.data_type()), Dec::of(out))
    else {
        return Ok(None);
    };
    // The factors that bring each operand to the result's scale (`+ -` only).
    let factor = |d: Dec| {
        u32::try_from(i16::from(od.scale) - i16::from(d.scale))
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
    };
    let (fl, fr) = match op {
        Add | Sub => match (factor(ld), factor(rd)) {
            (Some(fl), Some(fr)) => (fl, fr),
            _ => return Ok(None),
        },
        Mul => (1, 1),
        _ => return Ok(None),
    };
    let values = match (op, fits) {
        (Mul, true) => binary_values::<Decimal128Type>(l, r, i128::wrapping_mul)?,
        (Add, true) => binary_values::<Decimal128Type>(l, r, |a, b| {
            a.wrapping_mul(fl).wrapping_add(b.wrapping_mul(fr))
        })?,
        (Sub, true) => binary_values::<Decimal128Type>(l, r, |a, b| {
            a.wrapping_mul(fl).wrapping_sub(b.wrapping_mul(fr))
        })?,
        _ => {
            let invalid = std::cell::Cell::new(false);
            let exact = |a: i128, b: i128| match op {
                Mul => decimal::mul_exact(a, b),
                Add => a.checked_mul(fl)?.checked_add(b.checked_mul(fr)?),
                _ => a.checked_mul(fl)?.checked_sub(b.checked_mul(fr)?),
            };
            let values = binary_values::<Decimal128Type>(l, r, |a, b| {
                match exact(a, b)
                    .filter(|&v| Decimal128Type::is_valid_decimal_precision(v, od.precision))
                {
                    Some(v) => v,
                    None => {
                        invalid.set(true);
                        0
                    }
                }
            })?;
            if invalid.get() {
                return Ok(None);
            }
            values
        }
    };
    Ok(Some(Arc::new(
        values.with_precision_and_scale(od.precision, od.scale)?,
    )))
}

/// One-row float array `a` as its shortest decimal spelling (a one-row string array).
fn float_spelling(a: &dyn Array) -> FrameResult<ArrayRef> {
    let floats = cast_with_options(a, &DataType::Float64, &STRICT)?;
    let floats = as_primitive::<Float64Type>(&floats)?;
    Ok(Arc::new(
        floats
            .iter()
            .map(|v| v.map(|v| v.to_string()))
            .collect::<StringArray>(),
    ))
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

/// `out` with nulls where `divisor` (of the same type) is zero.
fn null_where_zero<T: ArrowPrimitiveType>(
    out: PrimitiveArray<T>,
    divisor: &Value,
) -> FrameResult<PrimitiveArray<T>> {
    let d = as_primitive::<T>(divisor.array())?.values();
    if !d.iter().any(|v| v.is_zero()) {
        return Ok(out);
    }
    if divisor.is_scalar() {
        return Ok(PrimitiveArray::new_null(out.len()).with_data_type(out.data_type().clone()));
    }
    let nonzero = NullBuffer::new(BooleanBuffer::collect_bool(d.len(), |i| !d[i].is_zero()));
    let nulls = NullBuffer::union(out.nulls(), Some(&nonzero));
    Ok(PrimitiveArray::try_new(out.values().clone(), nulls)?
        .with_data_type(out.data_type().clone()))
}

/// `l op r` with operands of the same type (or a dictionary and its value type).
pub(super) fn compare(op: BinaryOperator, l: Value, r: Value) -> FrameResult<Value> {
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
    let needle = Value::Scalar(Literal::Str(pattern.to_string()).to_array()?).cast(&value_type)?;
    let result = contains(&v, &needle)?;
    Ok(v.wrap(&needle, Arc::new(result)))
}
