//! pandas' elementwise numeric methods beyond the operators: `abs`, `round` (NumPy's
//! half-to-even rounding), and `isna`, which unlike [`Expr::is_null`] also counts a float
//! NaN as missing.

use super::{Expr, FrameError, FrameResult};
use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Decimal128Type, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A numeric function of one column (see [`super::Function::Math`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MathFunction {
    /// The absolute value (integers wrap at their minimum, as NumPy's).
    Abs,
    /// Rounded to this many decimal places (negative: to tens, hundreds…), halves to
    /// even as NumPy's `round`; integers and decimals keep their type.
    Round(i32),
    /// True where the value is null or a float NaN (pandas' `isna`); never null.
    IsNa,
}

impl MathFunction {
    /// The result type for an argument of type `t`.
    pub(super) fn data_type(self, t: &DataType, expr: &Expr) -> FrameResult<DataType> {
        match self {
            MathFunction::IsNa => Ok(DataType::Boolean),
            _ if t.is_integer()
                || t.is_floating()
                || matches!(t, DataType::Decimal128(..) | DataType::Null) =>
            {
                Ok(t.clone())
            }
            _ => Err(FrameError::TypeMismatch(format!(
                "{self} of {t} (numbers only) in `{expr}`"
            ))),
        }
    }

    /// Evaluates on a column `x`.
    pub(super) fn evaluate(self, x: &ArrayRef) -> FrameResult<ArrayRef> {
        match self {
            MathFunction::IsNa => Ok(is_na(x)),
            MathFunction::Abs => abs(x),
            MathFunction::Round(d) => round(x, d),
        }
    }
}

/// Null or NaN, as a Boolean column without nulls.
fn is_na(x: &ArrayRef) -> ArrayRef {
    let missing = |i: usize| x.is_null(i);
    let nan = |i: usize| match x.data_type() {
        DataType::Float16 => x.as_primitive::<Float16Type>().value(i).is_nan(),
        DataType::Float32 => x.as_primitive::<Float32Type>().value(i).is_nan(),
        DataType::Float64 => x.as_primitive::<Float64Type>().value(i).is_nan(),
        _ => false,
    };
    let values = BooleanBuffer::collect_bool(x.len(), |i| missing(i) || nan(i));
    Arc::new(BooleanArray::new(values, None))
}

/// `f` of each valid value of a primitive column, nulls kept.
fn map<T: ArrowPrimitiveType>(x: &ArrayRef, f: impl Fn(T::Native) -> T::Native) -> ArrayRef {
    let a: &PrimitiveArray<T> = x.as_primitive::<T>();
    Arc::new(a.unary::<_, T>(f).with_data_type(x.data_type().clone()))
}

fn abs(x: &ArrayRef) -> FrameResult<ArrayRef> {
    Ok(match x.data_type() {
        DataType::Int8 => map::<Int8Type>(x, i8::wrapping_abs),
        DataType::Int16 => map::<Int16Type>(x, i16::wrapping_abs),
        DataType::Int32 => map::<Int32Type>(x, i32::wrapping_abs),
        DataType::Int64 => map::<Int64Type>(x, i64::wrapping_abs),
        DataType::Float16 => map::<Float16Type>(x, |v| if v.is_sign_negative() { -v } else { v }),
        DataType::Float32 => map::<Float32Type>(x, f32::abs),
        DataType::Float64 => map::<Float64Type>(x, f64::abs),
        // A decimal's magnitude fits its own precision.
        DataType::Decimal128(..) => map::<Decimal128Type>(x, i128::abs),
        // Unsigned integers and nulls are their own absolute values.
        t if t.is_unsigned_integer() || *t == DataType::Null => x.clone(),
        t => return Err(FrameError::TypeMismatch(format!("abs of {t}"))),
    })
}

fn round(x: &ArrayRef, d: i32) -> FrameResult<ArrayRef> {
    Ok(match x.data_type() {
        DataType::Float32 => map::<Float32Type>(x, |v| round_f64(f64::from(v), d) as f32),
        DataType::Float64 => map::<Float64Type>(x, |v| round_f64(v, d)),
        DataType::Float16 => {
            let wide = arrow::compute::cast(x, &DataType::Float64)?;
            let rounded = map::<Float64Type>(&wide, |v| round_f64(v, d));
            arrow::compute::cast(&rounded, &DataType::Float16)?
        }
        &DataType::Decimal128(_, scale) => {
            let digits = i32::from(scale) - d;
            match pow10(digits) {
                Some(step) if digits > 0 => map::<Decimal128Type>(x, |v| round_i128(v, step)),
                // Rounding past the type's own digits: zero; to more digits: unchanged.
                None if digits > 0 => map::<Decimal128Type>(x, |_| 0),
                _ => x.clone(),
            }
        }
        t if t.is_integer() && d < 0 => {
            // Every integer is below 10^20: a step past 10^38 rounds it to 0 like 10^38 does.
            let step = pow10(-d).unwrap_or(10i128.pow(38));
            let wide = arrow::compute::cast(x, &DataType::Decimal128(38, 0))?;
            let rounded = map::<Decimal128Type>(&wide, |v| round_i128(v, step));
            arrow::compute::cast_with_options(&rounded, t, &super::STRICT)?
        }
        t if t.is_integer() || *t == DataType::Null => x.clone(),
        t => return Err(FrameError::TypeMismatch(format!("round of {t}"))),
    })
}

/// 10^`n` as an `i128`, for `0 <= n <= 38`.
fn pow10(n: i32) -> Option<i128> {
    u32::try_from(n).ok().and_then(|n| 10i128.checked_pow(n))
}

/// `v` rounded to a multiple of `step`, halves to the even multiple.
fn round_i128(v: i128, step: i128) -> i128 {
    let (q, r) = (v.div_euclid(step), v.rem_euclid(step));
    // r against step - r: which multiple is nearer, without doubling past i128.
    let up = match r.cmp(&(step - r)) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => q % 2 != 0,
    };
    (q + i128::from(up)).saturating_mul(step)
}

/// NumPy's `round(v, d)`: scale by 10^d, round half to even, scale back.
fn round_f64(v: f64, d: i32) -> f64 {
    if d >= 0 {
        let f = 10f64.powi(d);
        let y = (v * f).round_ties_even() / f;
        // Scaling past f64's range (a huge `d`) leaves the value as it is, as NumPy does.
        if y.is_finite() || !v.is_finite() {
            y
        } else {
            v
        }
    } else {
        let f = 10f64.powi(-d);
        (v / f).round_ties_even() * f
    }
}

impl fmt::Display for MathFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MathFunction::Abs => write!(f, "abs"),
            MathFunction::Round(d) => write!(f, "round[{d}]"),
            MathFunction::IsNa => write!(f, "isna"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{col, Expr};
    use super::*;
    use arrow::array::{Decimal128Array, Float64Array, Int64Array, Int8Array, RecordBatch};

    fn eval(e: Expr, column: ArrayRef) -> ArrayRef {
        let b = RecordBatch::try_from_iter([("x", column)]).unwrap();
        let out = e.evaluate(&b).unwrap();
        assert_eq!(&e.data_type(b.schema_ref()).unwrap(), out.data_type());
        out
    }

    #[test]
    fn round_halves_to_even_as_numpy() {
        // NumPy: np.round([0.5, 1.5, 2.5, -0.5, -2.5, 1.25, 2.675], d) and to tens.
        let x: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(0.5),
            Some(1.5),
            Some(2.5),
            Some(-0.5),
            Some(-2.5),
            None,
            Some(f64::NAN),
        ]));
        let out = eval(col("x").round(0), x);
        let v: Vec<Option<f64>> = out.as_primitive::<Float64Type>().iter().collect();
        assert_eq!(
            &v[..6],
            &[
                Some(0.0),
                Some(2.0),
                Some(2.0),
                Some(-0.0),
                Some(-2.0),
                None
            ]
        );
        assert!(v[6].unwrap().is_nan());
        let x: ArrayRef = Arc::new(Float64Array::from(vec![1.25, 2.675, 15.0, 25.0, 1234.5]));
        let two = eval(col("x").round(1), x.clone());
        assert_eq!(
            two.as_primitive::<Float64Type>().values(),
            &[1.2, 2.7, 15.0, 25.0, 1234.5]
        );
        let tens = eval(col("x").round(-1), x);
        assert_eq!(
            tens.as_primitive::<Float64Type>().values(),
            &[0.0, 0.0, 20.0, 20.0, 1230.0]
        );
    }

    #[test]
    fn integers_and_decimals_round_in_their_own_type() {
        let x: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(15),
            Some(25),
            Some(-15),
            None,
            Some(7),
        ]));
        let out = eval(col("x").round(-1), x.clone());
        let v: Vec<Option<i64>> = out.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(v, vec![Some(20), Some(20), Some(-20), None, Some(10)]);
        assert_eq!(&eval(col("x").round(2), x.clone()), &x);
        let far = eval(col("x").round(-40), x);
        let v: Vec<Option<i64>> = far.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(v, vec![Some(0), Some(0), Some(0), None, Some(0)]);
        // 1.25, 1.35, -1.25, 0.05 at scale 2, to one place: 1.20, 1.40, -1.20, 0.00.
        let d: ArrayRef = Arc::new(
            Decimal128Array::from(vec![125, 135, -125, 5])
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let out = eval(col("x").round(1), d.clone());
        assert_eq!(out.data_type(), &DataType::Decimal128(15, 2));
        assert_eq!(
            out.as_primitive::<Decimal128Type>().values(),
            &[120, 140, -120, 0]
        );
        let abs = eval(col("x").abs(), d);
        assert_eq!(
            abs.as_primitive::<Decimal128Type>().values(),
            &[125, 135, 125, 5]
        );
        // Rounding an Int8 past its range is an error, not a null or a wrap.
        let small: ArrayRef = Arc::new(Int8Array::from(vec![-128i8]));
        let b = RecordBatch::try_from_iter([("x", small)]).unwrap();
        assert!(col("x").round(-1).evaluate(&b).is_err());
    }

    #[test]
    fn isna_counts_nan_and_null_abs_keeps_types_and_strings_are_refused() {
        let x: ArrayRef = Arc::new(Float64Array::from(vec![Some(-1.5), None, Some(f64::NAN)]));
        let na = eval(col("x").is_na(), x.clone());
        assert_eq!(
            na.as_boolean().iter().collect::<Vec<_>>(),
            vec![Some(false), Some(true), Some(true)]
        );
        let ok = eval(col("x").not_na(), x.clone());
        assert_eq!(ok.null_count(), 0);
        let abs = eval(col("x").abs(), x);
        assert_eq!(abs.as_primitive::<Float64Type>().value(0), 1.5);
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(-3), None, Some(i64::MIN)]));
        let abs = eval(col("x").abs(), ints);
        let v: Vec<Option<i64>> = abs.as_primitive::<Int64Type>().iter().collect();
        assert_eq!(v, vec![Some(3), None, Some(i64::MIN)]);
        let s: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["a"]));
        let b = RecordBatch::try_from_iter([("x", s)]).unwrap();
        let e = col("x").abs().data_type(b.schema_ref()).unwrap_err();
        assert!(matches!(e, FrameError::TypeMismatch(m) if m.contains("abs of Utf8")));
    }
}
