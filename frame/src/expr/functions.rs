//! Functions of columns beyond the operators: `if_else` (NumPy's `where` for columns, and
//! with it `when(...).then(...).otherwise(...)` and `map` by a dict), pandas' `str`
//! accessor, and `dt.floor`, `dt.tz_localize` and `dt.tz_convert` (timestamps on their time
//! zone's wall clock).

use super::decimal::Dec;
use super::math::MathFunction;
use super::typing::decimal_branches;
use super::zone::{out_of_range, zone_reads, WallClock};
use super::{is_string, Expr, FrameError, FrameResult, Pattern};
use arrow::array::timezone::Tz;
use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::compute::cast;
use arrow::compute::kernels::zip::zip;
use arrow::datatypes::{DataType, Int64Type};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A function of its argument expressions (see [`Expr::Function`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Function {
    /// `args[1]` where `args[0]` is true, else `args[2]` (a null condition counts as false);
    /// the branches meet in a common type.
    IfElse,
    /// A string function of `args[0]`.
    Str(StrFunction),
    /// `args[0]` (a timestamp) rounded down to a multiple of the unit (pandas' `dt.floor`).
    Floor(FloorUnit),
    /// pandas' `dt.tz_localize`: `args[0]`, a zoneless timestamp, read as the wall clock of
    /// the zone (a time the zone skips or repeats is an error, as pandas raises by
    /// default); with `None`, a zoned timestamp's wall clock without its zone.
    Localize(Option<String>),
    /// pandas' `dt.tz_convert`: `args[0]`, a zoned timestamp, the same instant in another
    /// zone (on that zone's wall clock).
    Convert(String),
    /// A numeric function of `args[0]` (`abs`, `round`, `isna`).
    Math(MathFunction),
}

/// pandas' `str` accessor functions; null stays null.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StrFunction {
    /// Lower case.
    Lower,
    /// Upper case.
    Upper,
    /// Length in characters (`Int64`).
    Len,
    /// Whether it starts with the prefix (`Boolean`).
    StartsWith(String),
    /// Whether it ends with the suffix (`Boolean`).
    EndsWith(String),
    /// Leading and trailing whitespace removed.
    Strip,
    /// Every occurrence of `from` replaced by `to` (plain text, not a regex; see
    /// [`StrFunction::ReplaceRegex`]).
    Replace {
        /// The text replaced.
        from: String,
        /// Its replacement.
        to: String,
    },
    /// Characters `start..stop` (Python slice bounds: negative counts from the end).
    Slice {
        /// First character (negative counts from the end).
        start: i64,
        /// One past the last character, or the end.
        stop: Option<i64>,
    },
    /// Whether the pattern matches anywhere in it (pandas' `str.contains`; `Boolean`).
    Contains(Pattern),
    /// Whether the pattern matches at its start (pandas' `str.match`; `Boolean`).
    Match(Pattern),
    /// Whether the pattern matches all of it (pandas' `str.fullmatch`; `Boolean`).
    FullMatch(Pattern),
    /// Capture group `group` (1 for the first) of the pattern's first match: null where it
    /// does not match or the group takes no part (pandas' `str.extract`).
    Extract {
        /// The regular expression.
        pattern: Pattern,
        /// The group, from 1.
        group: usize,
    },
    /// Every match of the pattern replaced by `repl`, a Python `re.sub` template (`\1`,
    /// `\g<1>`, `\g<name>`, `\n`…): pandas' `str.replace` with `regex=True` or
    /// `case=False`.
    ReplaceRegex {
        /// What is replaced.
        pattern: Pattern,
        /// The replacement template.
        repl: String,
    },
    /// SQL `LIKE` (`Boolean`): `%` any run of characters, `_` one character, and `escape`
    /// (none unless given) before `%`, `_` or itself makes it plain text.
    Like {
        /// The LIKE pattern.
        pattern: String,
        /// The escape character.
        escape: Option<char>,
    },
}

/// A unit to floor timestamps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FloorUnit {
    /// Whole days (of the timestamp's time zone, or of UTC without one).
    Day,
    /// Whole hours.
    Hour,
    /// Whole minutes.
    Minute,
    /// Whole seconds.
    Second,
}

impl FloorUnit {
    fn seconds(self) -> i64 {
        match self {
            FloorUnit::Day => 86_400,
            FloorUnit::Hour => 3_600,
            FloorUnit::Minute => 60,
            FloorUnit::Second => 1,
        }
    }
}

impl Function {
    /// The result type for arguments of types `args` (`TypeMismatch` naming `expr` where
    /// they do not fit).
    pub(super) fn data_type(&self, args: &[DataType], expr: &Expr) -> FrameResult<DataType> {
        let mismatch = |m: String| FrameError::TypeMismatch(format!("{m} in `{expr}`"));
        // The argument's own zone, where it has one, must read.
        let reads =
            |t: &DataType| zone_reads(t).map_err(|e| mismatch(format!("{self} of {t}: {e}")));
        let arg = |i: usize| {
            args.get(i)
                .ok_or_else(|| mismatch(format!("{self} needs {} arguments", i + 1)))
        };
        match self {
            Function::IfElse => {
                let cond = arg(0)?;
                if !matches!(cond, DataType::Boolean | DataType::Null) {
                    return Err(mismatch(format!("the condition is {cond}, not Boolean")));
                }
                branch_type(arg(1)?, arg(2)?).ok_or_else(|| {
                    mismatch(format!("branches of types {} and {}", args[1], args[2]))
                })
            }
            Function::Str(f) => {
                let t = arg(0)?;
                if !is_string(t) && *t != DataType::Null {
                    return Err(mismatch(format!("str.{} of {t}", f.name())));
                }
                f.check()?;
                Ok(f.output_type())
            }
            Function::Floor(_) => match arg(0)? {
                t @ (DataType::Timestamp(..) | DataType::Date32 | DataType::Date64) => {
                    reads(t)?;
                    Ok(t.clone())
                }
                t => Err(mismatch(format!("dt.floor of {t}"))),
            },
            Function::Localize(to) => match (arg(0)?, to) {
                (DataType::Timestamp(unit, None), Some(tz)) => {
                    tz.parse::<Tz>()
                        .map_err(|e| mismatch(format!("{self}: {e}")))?;
                    Ok(DataType::Timestamp(*unit, Some(tz.as_str().into())))
                }
                (t @ DataType::Timestamp(unit, _), None) => {
                    reads(t)?;
                    Ok(DataType::Timestamp(*unit, None))
                }
                (t @ DataType::Timestamp(_, Some(_)), Some(_)) => Err(mismatch(format!(
                    "{self} of {t}, which has a time zone already (use dt.tz_convert)"
                ))),
                (t, _) => Err(mismatch(format!("{self} of {t}"))),
            },
            Function::Convert(tz) => match arg(0)? {
                t @ DataType::Timestamp(unit, Some(_)) => {
                    reads(t)?;
                    tz.parse::<Tz>()
                        .map_err(|e| mismatch(format!("{self}: {e}")))?;
                    Ok(DataType::Timestamp(*unit, Some(tz.as_str().into())))
                }
                t @ DataType::Timestamp(_, None) => Err(mismatch(format!(
                    "{self} of {t}, which has no time zone (use dt.tz_localize)"
                ))),
                t => Err(mismatch(format!("{self} of {t}"))),
            },
            Function::Math(f) => f.data_type(arg(0)?, expr),
        }
    }

    /// Evaluates on argument columns of `rows` rows (already broadcast).
    pub(super) fn evaluate(&self, args: &[ArrayRef], out: &DataType) -> FrameResult<ArrayRef> {
        let arg = |i: usize| {
            args.get(i)
                .ok_or_else(|| FrameError::InvalidArgument(format!("{self}: missing argument {i}")))
        };
        match self {
            Function::IfElse => {
                let cond = arg(0)?;
                let cond = match cond.as_any().downcast_ref::<BooleanArray>() {
                    Some(c) if c.null_count() == 0 => c.clone(),
                    Some(c) => c.iter().map(|v| Some(v == Some(true))).collect(),
                    // A null literal condition: never true.
                    None => BooleanArray::from(vec![false; cond.len()]),
                };
                let (a, b) = (cast(arg(1)?, out)?, cast(arg(2)?, out)?);
                Ok(zip(&cond, &a, &b)?)
            }
            Function::Str(f) => f.evaluate(arg(0)?),
            Function::Floor(unit) => floor(arg(0)?, *unit),
            Function::Localize(_) => localize(arg(0)?, out),
            // The same instants: only the zone the values are read in changes.
            Function::Convert(_) => Ok(cast(arg(0)?, out)?),
            Function::Math(f) => f.evaluate(arg(0)?),
        }
    }
}

/// The type two branches of `if_else` meet in.
fn branch_type(a: &DataType, b: &DataType) -> Option<DataType> {
    let numeric = |t: &DataType| t.is_integer() || t.is_floating();
    match (a, b) {
        _ if a == b => Some(a.clone()),
        (DataType::Null, t) | (t, DataType::Null) => Some(t.clone()),
        _ if Dec::of(a).is_some() || Dec::of(b).is_some() => decimal_branches(a, b).ok(),
        _ if numeric(a) && numeric(b) => Some(if a.is_floating() || b.is_floating() {
            DataType::Float64
        } else {
            DataType::Int64
        }),
        _ if is_string(a) && is_string(b) => Some(DataType::Utf8),
        _ => None,
    }
}

/// `x`'s timestamps rounded down to a whole `unit`, as pandas' `dt.floor`: on the wall
/// clock of the column's time zone (a wall-clock time that zone skips or repeats, which
/// pandas refuses by default, is an error), or of UTC without one.
fn floor(x: &ArrayRef, unit: FloorUnit) -> FrameResult<ArrayRef> {
    let DataType::Timestamp(tu, tz) = x.data_type() else {
        // Dates have no time of day: already whole days.
        return Ok(x.clone());
    };
    let clock = WallClock::new(tu, tz.as_deref())?;
    let step = unit.seconds() * clock.per_second();
    map_ticks(x, x.data_type(), |t| {
        let down = clock
            .wall_of(t)
            .and_then(|wall| wall.div_euclid(step).checked_mul(step))
            .ok_or_else(|| out_of_range("dt.floor", t))?;
        clock.instant_of(down, "dt.floor")
    })
}

/// `x`'s timestamps moved between an instant and a wall clock ([`Function::Localize`]):
/// from no zone into `out`'s zone, or from `x`'s zone to no zone.
fn localize(x: &ArrayRef, out: &DataType) -> FrameResult<ArrayRef> {
    let (DataType::Timestamp(unit, from), DataType::Timestamp(_, to)) = (x.data_type(), out) else {
        return Err(FrameError::InvalidArgument(format!(
            "dt.tz_localize of {}",
            x.data_type()
        )));
    };
    match (from, to) {
        (None, Some(tz)) => {
            let clock = WallClock::new(unit, Some(tz))?;
            map_ticks(x, out, |t| clock.instant_of(t, "dt.tz_localize"))
        }
        (from, _) => {
            let clock = WallClock::new(unit, from.as_deref())?;
            map_ticks(x, out, |t| {
                clock
                    .wall_of(t)
                    .ok_or_else(|| out_of_range("dt.tz_localize", t))
            })
        }
    }
}

/// `f` of each of `x`'s valid timestamps' ticks (nulls stay null), as timestamps of type
/// `out`.
fn map_ticks(
    x: &ArrayRef,
    out: &DataType,
    f: impl Fn(i64) -> FrameResult<i64>,
) -> FrameResult<ArrayRef> {
    let raw = cast(x, &DataType::Int64)?;
    let mapped = raw
        .as_primitive::<Int64Type>()
        .try_unary::<_, Int64Type, _>(f)?;
    Ok(cast(&(Arc::new(mapped) as ArrayRef), out)?)
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Function::IfElse => write!(f, "if_else"),
            Function::Str(s) => write!(f, "str.{}", s.name()),
            Function::Floor(u) => write!(f, "dt.floor[{u:?}]"),
            Function::Localize(tz) => write!(f, "dt.tz_localize[{tz:?}]"),
            Function::Convert(tz) => write!(f, "dt.tz_convert[{tz:?}]"),
            Function::Math(m) => write!(f, "{m}"),
        }
    }
}
