//! Dates, timestamps, durations and calendar offsets: their constants, how they compare
//! with temporal columns, and their arithmetic.
//!
//! Rules (as pandas, except where noted):
//! - A date or timestamp column compares with a date or timestamp constant as instants, a
//!   date standing for its midnight (as DuckDB; pandas raises on a `datetime64` column
//!   against a `datetime.date`). The constant is read in the column's type (days of a
//!   `Date32`, the unit of a `Timestamp`), so the column is never converted:
//!   `date < 1995-03-15 12:00` holds for 1995-03-15 itself, and `date == 1995-03-15 12:00`
//!   for no date. A duration column compares so with a duration constant of any unit.
//!   A tz-aware side against a tz-naive one (or a date) is a [`FrameError::TypeMismatch`],
//!   as pandas raises; two tz-aware sides compare as instants, whatever their zones.
//! - `date ± duration` is a date where the duration is a constant of whole days, else a
//!   timestamp (the date's midnight plus the duration, in the duration's unit);
//!   `timestamp ± duration` is a timestamp in the finer unit, in the timestamp's zone;
//!   `date - date` is a `Duration` (seconds for `Date32`, as Arrow); `duration ± duration`
//!   a duration in the finer unit.
//! - `date ± offset` and `timestamp ± offset` add calendar months, then days (a zoned
//!   timestamp on its wall clock), keeping the type; a month past the 31st ends on the
//!   month's last day, as pandas' `DateOffset`.
//! - An overflow (a value out of its type's range) is an error, never a wrapped value.

use super::eval::{as_primitive, compare, Plan, Value};
use super::zone::ticks_per_second;
use super::*;
use arrow::array::RecordBatchOptions;
use arrow::array::{
    make_array, Date32Array, Date64Array, IntervalMonthDayNanoArray, PrimitiveArray,
};
use arrow::datatypes::{
    Date32Type, Date64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

/// Nanoseconds in a day.
const DAY_NANOS: i128 = 86_400_000_000_000;

/// Nanoseconds in a tick of `unit`.
fn unit_nanos(unit: TimeUnit) -> i128 {
    1_000_000_000 / i128::from(ticks_per_second(unit))
}

/// The unit's short name, as NumPy writes it.
fn unit_name(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

/// What a temporal type's values measure: instants (in a zone, or none) or lengths of
/// time, and the nanoseconds of one tick.
enum Measure<'a> {
    Instant(i128, Option<&'a str>),
    Length(i128),
}

fn measure(dt: &DataType) -> Option<Measure<'_>> {
    Some(match dt {
        DataType::Date32 => Measure::Instant(DAY_NANOS, None),
        DataType::Date64 => Measure::Instant(1_000_000, None),
        DataType::Timestamp(unit, tz) => Measure::Instant(unit_nanos(*unit), tz.as_deref()),
        DataType::Duration(unit) => Measure::Length(unit_nanos(*unit)),
        _ => return None,
    })
}

impl Literal {
    /// The integer a date, timestamp or duration constant is stored as.
    pub fn time_value(&self) -> Option<i64> {
        match self {
            Literal::Date(d) => Some(i64::from(*d)),
            Literal::Timestamp { value, .. } | Literal::Duration { value, .. } => Some(*value),
            _ => None,
        }
    }

    /// A date, timestamp or duration constant read in ticks of temporal type `dt` (a
    /// `Date32`'s days, a `Date64`'s milliseconds, a timestamp's or duration's unit),
    /// rounded down, and whether that is exact. `None` where it is no such constant or `dt`
    /// is no type it compares with; an error message where one of them is tz-aware and the
    /// other not, or the value is out of `dt`'s range.
    pub fn ticks_in(&self, dt: &DataType) -> Option<Result<(i64, bool), String>> {
        let value = i128::from(self.time_value()?);
        let tick = match (measure(&self.data_type())?, measure(dt)?) {
            (Measure::Instant(mine, my_zone), Measure::Instant(tick, zone)) => {
                if my_zone.is_some() != zone.is_some() {
                    return Some(Err(format!(
                        "cannot compare {} with {dt}: tz-aware against tz-naive \
                         (localize or convert one side first)",
                        self.data_type()
                    )));
                }
                (mine, tick)
            }
            (Measure::Length(mine), Measure::Length(tick)) => (mine, tick),
            _ => return None,
        };
        let nanos = value * tick.0;
        let floor = nanos.div_euclid(tick.1);
        let fits = match dt {
            DataType::Date32 => i32::try_from(floor).is_ok(),
            _ => i64::try_from(floor).is_ok(),
        };
        match fits {
            true => Some(Ok((floor as i64, nanos.rem_euclid(tick.1) == 0))),
            false => Some(Err(format!("{self} is out of the range of {dt}"))),
        }
    }

    /// The whole days of a duration constant, if it is one of whole days.
    fn whole_days(&self) -> Option<i64> {
        let Literal::Duration { value, unit } = self else {
            return None;
        };
        let nanos = i128::from(*value) * unit_nanos(*unit);
        (nanos % DAY_NANOS == 0)
            .then(|| i64::try_from(nanos / DAY_NANOS).ok())
            .flatten()
    }

    /// A temporal constant as a one-row array.
    pub(super) fn time_array(&self) -> FrameResult<ArrayRef> {
        Ok(match self {
            Literal::Date(d) => Arc::new(Date32Array::from(vec![*d])),
            Literal::Interval { months, days } => Arc::new(IntervalMonthDayNanoArray::from(vec![
                IntervalMonthDayNano::new(*months, *days, 0),
            ])),
            l => {
                let value = l.time_value().unwrap_or_default();
                ticks_array(value, &l.data_type())?
            }
        })
    }

    /// Writes a temporal constant as `date("1998-12-01")`, `timestamp("…", unit[, zone])`,
    /// `duration(…)` or `offset(months=…, days=…)`.
    pub(super) fn fmt_time(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Date(d) => match arrow::temporal_conversions::date32_to_datetime(*d) {
                Some(t) => write!(f, "date(\"{}\")", t.date()),
                None => write!(f, "date({d} days)"),
            },
            Literal::Timestamp { value, unit, tz } => {
                let when = timestamp_text(*value, *unit);
                match tz {
                    Some(tz) => write!(f, "timestamp(\"{when}Z\", {}, {tz:?})", unit_name(*unit)),
                    None => write!(f, "timestamp(\"{when}\", {})", unit_name(*unit)),
                }
            }
            Literal::Duration { value, unit } => {
                write!(f, "duration({value}{})", unit_name(*unit))
            }
            Literal::Interval { months, days } => {
                write!(f, "offset(months={months}, days={days})")
            }
            // Only temporal constants come here.
            _ => Ok(()),
        }
    }
}

/// A timestamp's UTC wall clock, or its ticks where chrono cannot date it.
fn timestamp_text(value: i64, unit: TimeUnit) -> String {
    use arrow::temporal_conversions::{
        timestamp_ms_to_datetime, timestamp_ns_to_datetime, timestamp_s_to_datetime,
        timestamp_us_to_datetime,
    };
    let t = match unit {
        TimeUnit::Second => timestamp_s_to_datetime(value),
        TimeUnit::Millisecond => timestamp_ms_to_datetime(value),
        TimeUnit::Microsecond => timestamp_us_to_datetime(value),
        TimeUnit::Nanosecond => timestamp_ns_to_datetime(value),
    };
    t.map_or_else(|| format!("{value}"), |t| format!("{t:?}"))
}

/// The first value of date, timestamp, duration or offset array `a` as a constant (`None`
/// for a null, another type, or an offset with nanoseconds).
fn time_literal(a: &ArrayRef) -> Option<Literal> {
    if a.is_empty() || a.is_null(0) {
        return None;
    }
    let tick = |a: &ArrayRef| {
        let ticks = arrow::compute::cast(a, &DataType::Int64).ok()?;
        Some(ticks.as_primitive::<Int64Type>().value(0))
    };
    Some(match a.data_type() {
        DataType::Date32 => Literal::Date(a.as_primitive::<Date32Type>().value(0)),
        DataType::Timestamp(unit, tz) => Literal::Timestamp {
            value: tick(a)?,
            unit: *unit,
            tz: tz.clone(),
        },
        DataType::Duration(unit) => Literal::Duration {
            value: tick(a)?,
            unit: *unit,
        },
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = a.as_primitive::<IntervalMonthDayNanoType>().value(0);
            if v.nanoseconds != 0 {
                return None;
            }
            Literal::Interval {
                months: v.months,
                days: v.days,
            }
        }
        _ => return None,
    })
}

/// One-row array of `i64`-backed temporal type `dt` holding `value`.
fn ticks_array(value: i64, dt: &DataType) -> FrameResult<ArrayRef> {
    let data = Int64Array::from(vec![value]).into_data().into_builder();
    Ok(make_array(data.data_type(dt.clone()).build()?))
}

impl From<NaiveDate> for Literal {
    fn from(d: NaiveDate) -> Self {
        Literal::Date(Date32Type::from_naive_date(d))
    }
}

impl From<NaiveDateTime> for Literal {
    /// A tz-naive timestamp in microseconds, or in nanoseconds where it has a fraction of a
    /// microsecond (and is within 292 years of 1970, else rounded down to microseconds).
    fn from(t: NaiveDateTime) -> Self {
        let utc = t.and_utc();
        let nanos = utc.timestamp_nanos_opt().filter(|n| n % 1_000 != 0);
        let (value, unit) = match nanos {
            Some(n) => (n, TimeUnit::Nanosecond),
            None => (utc.timestamp_micros(), TimeUnit::Microsecond),
        };
        Literal::Timestamp {
            value,
            unit,
            tz: None,
        }
    }
}

impl From<TimeDelta> for Literal {
    /// A duration in microseconds, or nanoseconds where it has a fraction of a microsecond
    /// (and is under 292 years, else rounded toward zero to microseconds, and to
    /// milliseconds past 292,000 years).
    fn from(d: TimeDelta) -> Self {
        let nanos = d.num_nanoseconds().filter(|n| n % 1_000 != 0);
        let (value, unit) = match (nanos, d.num_microseconds()) {
            (Some(n), _) => (n, TimeUnit::Nanosecond),
            (None, Some(us)) => (us, TimeUnit::Microsecond),
            (None, None) => (d.num_milliseconds(), TimeUnit::Millisecond),
        };
        Literal::Duration { value, unit }
    }
}

macro_rules! expr_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Expr {
            fn from(v: $t) -> Self {
                Expr::Literal(Literal::from(v))
            }
        }
    )*};
}

expr_from!(NaiveDate, NaiveDateTime, TimeDelta);

impl Expr {
    /// This `±` of two constants, one of them a date, timestamp, duration or offset, as
    /// the constant it evaluates to; anything else (or an error, reported when it is
    /// typed) as it is.
    pub(super) fn fold_time_constants(self) -> Expr {
        let Expr::Binary {
            op: BinaryOperator::Add | BinaryOperator::Sub,
            left,
            right,
        } = &self
        else {
            return self;
        };
        let (Some(l), Some(r)) = (left.literal(), right.literal()) else {
            return self;
        };
        let timed = |l: &Literal| l.time_value().is_some() || matches!(l, Literal::Interval { .. });
        if !timed(l) && !timed(r) {
            return self;
        }
        let one_row = RecordBatchOptions::new().with_row_count(Some(1));
        let folded = RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &one_row)
            .ok()
            .and_then(|b| self.evaluate(&b).ok())
            .and_then(|a| time_literal(&a));
        match folded {
            Some(l) => Expr::Literal(l),
            None => self,
        }
    }

    /// A comparison of a temporal value with a date, timestamp or duration constant, read
    /// in the value's type (see the module docs); `None` where neither side is one.
    pub(super) fn plan_time_compare(
        &self,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> FrameResult<Option<Plan>> {
        let interval = |t: &DataType| matches!(t, DataType::Interval(_));
        if interval(l) || interval(r) {
            return Err(self.mismatch(format_args!(
                "cannot compare {l} with {r}: calendar offsets have no order"
            )));
        }
        for (lit, other, flip) in [(r_lit, l, false), (l_lit, r, true)] {
            if let Some(read) = lit.and_then(|lit| lit.ticks_in(other)) {
                let (value, exact) = read.map_err(|e| self.mismatch(e))?;
                return Ok(Some(Plan::TimeConstant { value, exact, flip }));
            }
        }
        Ok(None)
    }

    /// `l ± r` where an operand is a date, timestamp, duration or calendar offset (see the
    /// module docs); `None` where neither is.
    pub(super) fn plan_time_arithmetic(
        &self,
        op: BinaryOperator,
        l: &DataType,
        r: &DataType,
        l_lit: Option<&Literal>,
        r_lit: Option<&Literal>,
    ) -> Option<Plan> {
        use DataType::*;
        let sub = match op {
            BinaryOperator::Add => false,
            BinaryOperator::Sub => true,
            _ => return None,
        };
        let temporal = |t: &DataType| {
            matches!(
                t,
                Date32 | Date64 | Timestamp(..) | Duration(_) | Interval(_)
            )
        };
        if !temporal(l) && !temporal(r) {
            return None;
        }
        let month_day_nano = Interval(IntervalUnit::MonthDayNano);
        let same = |t: &DataType| Plan::Temporal {
            left: l.clone(),
            right: r.clone(),
            out: t.clone(),
        };
        match (l, r) {
            (Date32 | Date64, Duration(unit)) => Some(date_shift(l, *unit, r_lit, true, sub)),
            (Duration(unit), Date32 | Date64) if !sub => {
                Some(date_shift(r, *unit, l_lit, false, sub))
            }
            (Timestamp(tu, tz), Duration(du)) | (Duration(du), Timestamp(tu, tz))
                if !sub || matches!(l, Timestamp(..)) =>
            {
                let unit = typing::finer_unit(*tu, *du);
                let (ts, d) = (Timestamp(unit, tz.clone()), Duration(unit));
                let (left, right) = match l {
                    Timestamp(..) => (ts.clone(), d),
                    _ => (d, ts.clone()),
                };
                Some(Plan::Temporal {
                    left,
                    right,
                    out: ts,
                })
            }
            (Date32 | Date64 | Timestamp(..), i) if *i == month_day_nano => Some(same(l)),
            (i, Date32 | Date64 | Timestamp(..)) if *i == month_day_nano && !sub => Some(same(r)),
            // Timestamps of different units (the same type is `Plan::Arithmetic`'s).
            (Timestamp(a, ltz), Timestamp(b, rtz)) if sub && ltz.is_some() == rtz.is_some() => {
                let unit = typing::finer_unit(*a, *b);
                Some(Plan::Temporal {
                    left: Timestamp(unit, ltz.clone()),
                    right: Timestamp(unit, ltz.clone()),
                    out: Duration(unit),
                })
            }
            (Date32, Date32) if sub => Some(same(&Duration(TimeUnit::Second))),
            (Date32 | Date64, Date32 | Date64) if sub => Some(Plan::Temporal {
                left: Date64,
                right: Date64,
                out: Duration(TimeUnit::Millisecond),
            }),
            (Duration(a), Duration(b)) => {
                let d = Duration(typing::finer_unit(*a, *b));
                Some(Plan::Temporal {
                    left: d.clone(),
                    right: d.clone(),
                    out: d,
                })
            }
            (a, b) if *a == month_day_nano && a == b => Some(same(l)),
            _ => None,
        }
    }
}

/// `date ± duration` (`date_left`), or `duration + date`: a shift of the date by a constant
/// of whole days, else the date's midnight as a timestamp of the duration's unit plus it.
fn date_shift(
    date: &DataType,
    unit: TimeUnit,
    duration: Option<&Literal>,
    date_left: bool,
    sub: bool,
) -> Plan {
    if let Some(days) = duration.and_then(Literal::whole_days) {
        let days = if sub { -days } else { days };
        return Plan::DateShift {
            days,
            date: date.clone(),
            date_left,
        };
    }
    let (ts, d) = (DataType::Timestamp(unit, None), DataType::Duration(unit));
    let (left, right) = match date_left {
        true => (ts.clone(), d),
        false => (d, ts.clone()),
    };
    Plan::Temporal {
        left,
        right,
        out: ts,
    }
}

/// `v op c`, where `c` is a constant read in `v`'s ticks as `value`, rounded down, and
/// `exact` says whether that lost nothing: a `v` at a whole tick is below a `c` between
/// `value` and the next tick exactly where it is at most `value`, and never equal to it.
pub(super) fn compare_constant(
    op: BinaryOperator,
    v: Value,
    value: i64,
    exact: bool,
) -> FrameResult<Value> {
    use BinaryOperator::*;
    let op = match (op, exact) {
        (op, true) => op,
        (Lt | LtEq, false) => LtEq,
        (Gt | GtEq, false) => Gt,
        (op, false) => {
            // Equal nowhere, unequal everywhere (null stays null).
            return v.map(|a| {
                let bits = match op {
                    NotEq => BooleanBuffer::new_set(a.len()),
                    _ => BooleanBuffer::new_unset(a.len()),
                };
                Ok(Arc::new(BooleanArray::new(bits, a.logical_nulls())))
            });
        }
    };
    let c = match v.data_type() {
        DataType::Date32 => {
            let day = i32::try_from(value).map_err(|_| {
                FrameError::TypeMismatch(format!("day {value} is out of the range of Date32"))
            })?;
            Arc::new(Date32Array::from(vec![day])) as ArrayRef
        }
        DataType::Date64 => Arc::new(Date64Array::from(vec![value])),
        dt => ticks_array(value, dt)?,
    };
    compare(op, v, Value::Scalar(c))
}

/// Runs a `TimeConstant` comparison of `l` and `r` (the constant on the left if `flip`).
pub(super) fn run_time_constant(
    op: BinaryOperator,
    l: Value,
    r: Value,
    value: i64,
    exact: bool,
    flip: bool,
) -> FrameResult<Value> {
    match flip {
        true => compare_constant(op.swapped().unwrap_or(op), r, value, exact),
        false => compare_constant(op, l, value, exact),
    }
}

/// `l ± r` after strict casts to `left` and `right` (an overflow is an error).
pub(super) fn run_temporal(
    op: BinaryOperator,
    l: Value,
    r: Value,
    left: &DataType,
    right: &DataType,
) -> FrameResult<Value> {
    let (l, r) = (l.cast_strict(left)?, r.cast_strict(right)?);
    let out = match op {
        BinaryOperator::Add => numeric::add(&l, &r)?,
        _ => numeric::sub(&l, &r)?,
    };
    Ok(l.wrap(&r, out))
}

/// The dates of `v` moved by `days` (an overflow is an error).
pub(super) fn shift_days(v: Value, days: i64) -> FrameResult<Value> {
    let overflow =
        || arrow::error::ArrowError::ComputeError(format!("date overflow adding {days} days"));
    v.map(|a| match a.data_type() {
        DataType::Date32 => {
            let out: PrimitiveArray<Date32Type> =
                as_primitive::<Date32Type>(a)?.try_unary(|d| {
                    let day = i64::from(d).checked_add(days);
                    day.and_then(|d| i32::try_from(d).ok()).ok_or_else(overflow)
                })?;
            Ok(Arc::new(out) as ArrayRef)
        }
        _ => {
            let ms = days.checked_mul(86_400_000).ok_or_else(overflow)?;
            let out: PrimitiveArray<Date64Type> = as_primitive::<Date64Type>(a)?
                .try_unary(|d| d.checked_add(ms).ok_or_else(overflow))?;
            Ok(Arc::new(out) as ArrayRef)
        }
    })
}
