//! Decimals: the precision and scale of arithmetic on them (the rules are in the module
//! docs of [`super`]), the exact decimal value of a constant, and the checks that make an
//! overflow an error.

use super::{FrameError, FrameResult, Literal};
use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{i256, DataType, Decimal128Type, DecimalType};
use std::cmp::Ordering;

/// The largest precision of a `Decimal128`, which arithmetic results are capped at.
pub(crate) const MAX_PRECISION: u8 = Decimal128Type::MAX_PRECISION;

/// The precision and scale of a decimal type (`Decimal32/64/128/256`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dec {
    /// Significant digits.
    pub(crate) precision: u8,
    /// Digits after the point.
    pub(crate) scale: i8,
}

impl Dec {
    /// The precision and scale of decimal type `dt`, else `None`.
    pub(crate) fn of(dt: &DataType) -> Option<Dec> {
        match *dt {
            DataType::Decimal32(precision, scale)
            | DataType::Decimal64(precision, scale)
            | DataType::Decimal128(precision, scale)
            | DataType::Decimal256(precision, scale) => Some(Dec { precision, scale }),
            _ => None,
        }
    }

    /// A decimal that holds every value of integer type `dt` (`Int8` → `(3, 0)`, `Int64` →
    /// `(19, 0)`, `UInt64` → `(20, 0)`), else `None`.
    fn of_integer(dt: &DataType) -> Option<Dec> {
        let precision = match dt {
            DataType::Int8 | DataType::UInt8 => 3,
            DataType::Int16 | DataType::UInt16 => 5,
            DataType::Int32 | DataType::UInt32 => 10,
            DataType::Int64 => 19,
            DataType::UInt64 => 20,
            _ => return None,
        };
        Some(Dec {
            precision,
            scale: 0,
        })
    }

    /// An operand of decimal arithmetic or comparison as a decimal: a decimal type's own,
    /// an integer constant's digits (`1` → `(1, 0)`, as DuckDB types integer literals), an
    /// integer type's ([`Dec::of_integer`]), `(1, 0)` for the null constant. Floats are not
    /// decimals (`None`).
    pub(crate) fn of_operand(dt: &DataType, lit: Option<&Literal>) -> Option<Dec> {
        match lit {
            Some(Literal::Int(v)) => return Some(Dec::digits_of(i128::from(*v), 0)),
            Some(Literal::Decimal {
                precision, scale, ..
            }) => {
                return Some(Dec {
                    precision: *precision,
                    scale: *scale,
                })
            }
            _ => {}
        }
        match dt {
            DataType::Null => Some(Dec {
                precision: 1,
                scale: 0,
            }),
            dt => Dec::of(dt).or_else(|| Dec::of_integer(dt)),
        }
    }

    /// The smallest decimal of scale `scale` that holds `value` (unscaled).
    fn digits_of(value: i128, scale: i8) -> Dec {
        let digits = value.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1) as u8;
        Dec {
            precision: digits.max(scale.max(0) as u8).max(1),
            scale,
        }
    }

    /// Digits before the point.
    fn int_digits(self) -> i16 {
        i16::from(self.precision) - i16::from(self.scale)
    }

    /// The type in which both `self` and `other` compare exactly (without a cap: a
    /// precision past 38 is a `Decimal256`'s).
    pub(crate) fn common(self, other: Dec) -> Dec {
        let scale = self.scale.max(other.scale);
        let int = self.int_digits().max(other.int_digits());
        Dec {
            precision: (int + i16::from(scale)).clamp(1, 255) as u8,
            scale,
        }
    }

    /// `Decimal128` when the precision allows, else `Decimal256` (for comparisons).
    pub(crate) fn data_type(self) -> DataType {
        match self.precision <= MAX_PRECISION {
            true => DataType::Decimal128(self.precision, self.scale),
            false => DataType::Decimal256(self.precision, self.scale),
        }
    }

    /// The result of `self op other` for `+ - * %` ([`super::BinaryOperator`]), or why
    /// there is none.
    pub(crate) fn arithmetic(self, op: super::BinaryOperator, other: Dec) -> Result<Dec, String> {
        let (scale, precision) = self.exact_result(op, other)?;
        Ok(Dec {
            precision: precision.clamp(1, i16::from(MAX_PRECISION)) as u8,
            scale,
        })
    }

    /// Whether every value of `self op other` fits its [`Dec::arithmetic`] type: the exact
    /// result's digits were not capped at 38, so no value needs checking.
    pub(crate) fn always_fits(self, op: super::BinaryOperator, other: Dec) -> bool {
        self.exact_result(op, other)
            .is_ok_and(|(_, precision)| precision <= i16::from(MAX_PRECISION))
    }

    /// The scale of `self op other` and the digits its values can take, before the cap.
    fn exact_result(self, op: super::BinaryOperator, other: Dec) -> Result<(i8, i16), String> {
        use super::BinaryOperator::*;
        for d in [self, other] {
            if d.precision > MAX_PRECISION {
                return Err(format!(
                    "arithmetic on decimals of precision {} (past {MAX_PRECISION}): cast to \
                     Decimal128 or Float64 first",
                    d.precision
                ));
            }
        }
        let (s1, s2) = (i16::from(self.scale), i16::from(other.scale));
        let (scale, precision) = match op {
            Add | Sub => {
                let scale = s1.max(s2);
                (scale, self.int_digits().max(other.int_digits()) + scale + 1)
            }
            Mul => (
                s1 + s2,
                i16::from(self.precision) + i16::from(other.precision) + 1,
            ),
            // Floored: the result is smaller than the divisor and has its sign.
            Mod => {
                let scale = s1.max(s2);
                (scale, other.int_digits() + scale)
            }
            _ => return Err(format!("{op} does not give a decimal")),
        };
        let cap = i16::from(MAX_PRECISION);
        if !(-i16::from(i8::MAX)..=cap).contains(&scale) {
            return Err(format!(
                "the result's scale {scale} does not fit a Decimal128 (scale at most {cap})"
            ));
        }
        Ok((scale as i8, precision))
    }
}

impl Literal {
    /// The constant's exact decimal value (unscaled) and the smallest decimal type that
    /// holds it: an integer, a decimal, or a finite float by its shortest decimal spelling
    /// (the digits that print it and read back to the same float: `0.05` is exactly 0.05),
    /// where that fits a `Decimal128`.
    pub(crate) fn decimal_value(&self) -> Option<(i128, Dec)> {
        match self {
            Literal::Int(v) => Some((i128::from(*v), Dec::digits_of(i128::from(*v), 0))),
            Literal::Decimal {
                value,
                precision,
                scale,
            } => Some((
                *value,
                Dec {
                    precision: *precision,
                    scale: *scale,
                },
            )),
            Literal::Float(v) => float_decimal(*v),
            _ => None,
        }
    }

    /// Whether the constant is exactly a value of decimal type `to`.
    pub(super) fn fits_decimal(&self, to: Dec) -> bool {
        let Some((value, from)) = self.decimal_value() else {
            return false;
        };
        rescale(value, from.scale, to.scale).is_some_and(|v| fits_precision(v, to.precision))
    }

    /// A decimal constant, checked: a precision of 1 to 38, a scale of at most the precision
    /// and a value of at most `precision` digits (`value` is unscaled: 1.50 is
    /// `decimal(150, 3, 2)`).
    pub fn decimal(value: i128, precision: u8, scale: i8) -> FrameResult<Literal> {
        let literal = Literal::Decimal {
            value,
            precision,
            scale,
        };
        literal.check()?;
        Ok(literal)
    }

    /// An [`FrameError::InvalidArgument`] for a decimal constant that [`Literal::decimal`]
    /// would refuse; `Ok` for every other constant.
    pub(super) fn check(&self) -> FrameResult<()> {
        let Literal::Decimal {
            value,
            precision,
            scale,
        } = *self
        else {
            return Ok(());
        };
        let valid = (1..=MAX_PRECISION).contains(&precision)
            && scale <= precision as i8
            && fits_precision(value, precision);
        match valid {
            true => Ok(()),
            false => Err(FrameError::InvalidArgument(format!(
                "decimal constant {value} (unscaled) of precision {precision} and scale {scale}: \
                 the precision must be 1 to {MAX_PRECISION}, the scale at most the precision, \
                 and the value at most that many digits"
            ))),
        }
    }
}

/// The shortest decimal spelling of `v` (Rust's `Display`, which reads back to `v`) as an
/// unscaled value and its type; `None` for NaN, the infinities and spellings past 38 digits.
pub(crate) fn float_decimal(v: f64) -> Option<(i128, Dec)> {
    if !v.is_finite() {
        return None;
    }
    let text = v.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let scale = i8::try_from(frac.len()).ok()?;
    let value: i128 = format!("{int}{frac}").parse().ok()?;
    let dec = Dec::digits_of(value, scale);
    (dec.precision <= MAX_PRECISION && scale <= MAX_PRECISION as i8).then_some((value, dec))
}

/// Unscaled `value` of scale `from` at scale `to`, where that is exact and fits an `i128`.
pub(crate) fn rescale(value: i128, from: i8, to: i8) -> Option<i128> {
    let shift = u32::from((i16::from(to) - i16::from(from)).unsigned_abs());
    let factor = 10i128.checked_pow(shift)?;
    match to >= from {
        true => value.checked_mul(factor),
        false => (value % factor == 0).then(|| value / factor),
    }
}

/// Whether unscaled `value` has at most `precision` digits.
fn fits_precision(value: i128, precision: u8) -> bool {
    precision <= MAX_PRECISION && Decimal128Type::is_valid_decimal_precision(value, precision)
}

/// Orders two exact decimals, unscaled values with their scales (scales of at most 38 and
/// values of at most 38 digits meet in an `i256` without overflow).
pub(crate) fn compare_decimals(a: (i128, i8), b: (i128, i8)) -> Option<Ordering> {
    let scale = a.1.max(b.1);
    let widen = |(v, s): (i128, i8)| {
        let shift = u32::try_from(i16::from(scale) - i16::from(s)).ok()?;
        i256::from_i128(v).checked_mul(i256::from_i128(10).checked_pow(shift)?)
    };
    Some(widen(a)?.cmp(&widen(b)?))
}

/// Decimal array `a` (a `Decimal128`) as type `out` (`Decimal128(p, s)` of `a`'s scale),
/// or a [`FrameError::Overflow`] where a value has more than `p` digits; `checked: false`
/// where every value is known to fit (see [`Dec::always_fits`]).
pub(super) fn fit(a: &ArrayRef, out: &DataType, checked: bool) -> FrameResult<ArrayRef> {
    let (Some(dec), Some(values)) = (Dec::of(out), a.as_primitive_opt::<Decimal128Type>()) else {
        return Err(FrameError::TypeMismatch(format!(
            "expected a Decimal128 result, got {}",
            a.data_type()
        )));
    };
    if values.scale() != dec.scale {
        return Err(FrameError::TypeMismatch(format!(
            "a decimal result of type {}, expected scale {}",
            a.data_type(),
            dec.scale
        )));
    }
    let typed = values
        .clone()
        .with_precision_and_scale(dec.precision, dec.scale)?;
    if checked && typed.validate_decimal_precision(dec.precision).is_err() {
        let first = first_invalid(&typed, dec.precision);
        return Err(FrameError::Overflow(format!(
            "{first} does not fit {out} (more than {} digits)",
            dec.precision
        )));
    }
    Ok(std::sync::Arc::new(typed))
}

/// `a * b` exactly, `None` past `i128`: one widening multiply where both fit an `i64` (as
/// the unscaled values of decimals of up to 18 digits do).
pub(super) fn mul_exact(a: i128, b: i128) -> Option<i128> {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) => Some(i128::from(a) * i128::from(b)),
        _ => a.checked_mul(b),
    }
}

/// The first valid value of `a` past `precision` digits, as text.
fn first_invalid(a: &PrimitiveArray<Decimal128Type>, precision: u8) -> String {
    a.iter()
        .flatten()
        .find(|&v| !Decimal128Type::is_valid_decimal_precision(v, precision))
        .map(|v| Decimal128Type::format_decimal(v, precision, a.scale()))
        .unwrap_or_default()
}
