//! Time zones: timestamps between their instants (UTC ticks since the epoch) and their
//! zone's wall clock, for date parts, `dt.floor`, `dt.tz_localize` and the GPU filters.
//!
//! A zone of one offset at every instant ([`fixed_offset`]) is plain arithmetic. A zone
//! whose offset changes is read from the zone database one day at a time: a day with the
//! same offset at its first and last second has no change inside it (the database has no
//! two changes of one zone within 24 hours, which Arrow's cast relies on too), so its
//! offset serves every value of that day; only a day with a change is read per value.

use super::{FrameError, FrameResult};
use arrow::array::temporal_conversions::as_datetime_with_timezone;
use arrow::array::timezone::{Tz, TzOffset};
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampSecondType};
use arrow::error::ArrowError;
use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone};
use std::cell::Cell;
use std::sync::{Arc, OnceLock};

/// The days since 1970-01-01 whose date Arrow's calendar conversions give (chrono's range
/// of years), as `(first, last)`: a date part of a day outside them is null on the CPU.
/// Found once, by bisection over `Date32` values with Arrow's own conversion.
pub fn calendar_days() -> (i64, i64) {
    static DAYS: OnceLock<(i64, i64)> = OnceLock::new();
    *DAYS.get_or_init(|| {
        let dated = |d: i64| {
            i32::try_from(d)
                .ok()
                .and_then(arrow::temporal_conversions::date32_to_datetime)
                .is_some()
        };
        // The edge between `(undated, dated)` days, either way from day 0 (dated).
        let edge = |mut undated: i64, mut dated_day: i64| {
            while (undated - dated_day).abs() > 1 {
                let mid = dated_day + (undated - dated_day) / 2;
                if dated(mid) {
                    dated_day = mid;
                } else {
                    undated = mid;
                }
            }
            dated_day
        };
        (
            edge(i64::from(i32::MIN) - 1, 0),
            edge(i64::from(i32::MAX) + 1, 0),
        )
    })
}

/// The names (after an optional `Etc/`) that the zone database defines as one offset
/// forever, besides `GMT+N` and `GMT-N`.
const FIXED_NAMES: [&str; 9] = [
    "UTC",
    "UCT",
    "GMT",
    "GMT0",
    "GMT+0",
    "GMT-0",
    "Universal",
    "Zulu",
    "Greenwich",
];

/// The seconds east of UTC of zone `tz` where it has that one offset at every instant: an
/// offset as Arrow reads one (`+05:30`, `-08`, `+0100`) or a zone of the database's `Etc`
/// family and its links (`UTC`, `GMT`, `Etc/GMT+5`, …); `None` for a zone whose offset
/// changes, and for one Arrow does not read (which the CPU reports).
pub fn fixed_offset(tz: &str) -> Option<i64> {
    let zone: Tz = tz.parse().ok()?;
    let name = tz.strip_prefix("Etc/").unwrap_or(tz);
    let gmt_hours = name
        .strip_prefix("GMT")
        .filter(|h| h.starts_with(['+', '-']) && h[1..].parse::<u8>().is_ok());
    let fixed = tz.starts_with(['+', '-']) || FIXED_NAMES.contains(&name) || gmt_hours.is_some();
    if !fixed {
        return None;
    }
    let epoch = as_datetime_with_timezone::<TimestampSecondType>(0, zone)?;
    Some((epoch.naive_local() - epoch.naive_utc()).num_seconds())
}

/// Seconds in a day.
const DAY: i64 = 86_400;

/// A timestamp column's clock: its ticks per second and its time zone.
pub(crate) struct WallClock {
    per_second: i64,
    /// The ticks chrono dates (their days are [`calendar_days`]), inclusive.
    dated: (i64, i64),
    zone: Zone,
}

/// The ticks of one day, inclusive, and the offset (seconds east of UTC) at all of them.
type Day = Cell<Option<(i64, i64, i64)>>;

/// How a [`WallClock`] reads its zone.
enum Zone {
    /// No zone: the instant is the wall clock.
    None,
    /// One offset (seconds east of UTC) at every instant.
    Fixed(i64),
    /// The zone database, with the last day found without a change of offset in each
    /// direction: a UTC day, and a wall-clock day.
    Named { tz: Tz, utc_day: Day, wall_day: Day },
}

impl WallClock {
    /// The clock of timestamps of `unit` in zone `tz` (`None`: zoneless); a zone Arrow
    /// does not read is its error.
    pub(crate) fn new(unit: &TimeUnit, tz: Option<&str>) -> FrameResult<WallClock> {
        let zone = match tz {
            None => Zone::None,
            Some(tz) => match fixed_offset(tz) {
                Some(east) => Zone::Fixed(east),
                None => Zone::Named {
                    tz: tz.parse()?,
                    utc_day: Cell::new(None),
                    wall_day: Cell::new(None),
                },
            },
        };
        let per_second = ticks_per_second(*unit);
        let (first, last) = calendar_days();
        Ok(WallClock {
            per_second,
            dated: (
                ticks(first * DAY, per_second),
                ticks((last + 1) * DAY, per_second).saturating_sub(1),
            ),
            zone,
        })
    }

    /// Ticks per second.
    pub(crate) fn per_second(&self) -> i64 {
        self.per_second
    }

    /// Instant `t` as ticks of its wall-clock time; `None` where chrono has no date for
    /// the instant (a zoned timestamp's date parts are null there) or the sum leaves `i64`.
    pub(crate) fn wall_of(&self, t: i64) -> Option<i64> {
        t.checked_add(self.east_at(t)? * self.per_second)
    }

    /// Whether chrono dates ticks `t`.
    fn is_dated(&self, t: i64) -> bool {
        (self.dated.0..=self.dated.1).contains(&t)
    }

    /// The ticks of the day of ticks `t`, inclusive.
    fn day_of(&self, t: i64) -> (i64, i64) {
        let start = t.div_euclid(self.per_second).div_euclid(DAY) * DAY;
        (
            ticks(start, self.per_second),
            ticks(start + DAY, self.per_second).saturating_sub(1),
        )
    }

    /// The zone's offset at instant `t`, in seconds east of UTC; `None` where chrono has
    /// no date for the instant.
    fn east_at(&self, t: i64) -> Option<i64> {
        match &self.zone {
            Zone::None => Some(0),
            Zone::Fixed(east) => self.is_dated(t).then_some(*east),
            Zone::Named { tz, utc_day, .. } => match utc_day.get() {
                Some((lo, hi, east)) if (lo..=hi).contains(&t) => Some(east),
                _ => {
                    let at = |t: i64| {
                        let utc = naive(t.div_euclid(self.per_second))?;
                        Some(east_of(tz.offset_from_utc_datetime(&utc)))
                    };
                    let east = at(t)?;
                    let (lo, hi) = self.day_of(t);
                    if at(lo) == Some(east) && at(hi) == Some(east) {
                        utc_day.set(Some((lo, hi, east)));
                    }
                    Some(east)
                }
            },
        }
    }

    /// The instant whose wall-clock time is `wall` (ticks): an error naming `what` where
    /// the zone skips or repeats that time, or chrono has no date for it.
    pub(crate) fn instant_of(&self, wall: i64, what: &str) -> FrameResult<i64> {
        let range = || out_of_range(what, wall);
        let east = match &self.zone {
            Zone::None => return Ok(wall),
            Zone::Fixed(east) => match self.is_dated(wall) {
                true => *east,
                false => return Err(range()),
            },
            Zone::Named { tz, wall_day, .. } => match wall_day.get() {
                Some((lo, hi, east)) if (lo..=hi).contains(&wall) => east,
                _ => {
                    let local = |w: i64| naive(w.div_euclid(self.per_second));
                    let clock = local(wall).ok_or_else(range)?;
                    let east = match tz.offset_from_local_datetime(&clock) {
                        LocalResult::Single(offset) => east_of(offset),
                        LocalResult::Ambiguous(..) => {
                            return Err(FrameError::InvalidArgument(format!(
                                "{what}: {clock} occurs twice in time zone {tz} (the clocks \
                                 go back)"
                            )))
                        }
                        LocalResult::None => {
                            return Err(FrameError::InvalidArgument(format!(
                                "{what}: {clock} does not exist in time zone {tz} (the \
                                 clocks go forward)"
                            )))
                        }
                    };
                    let single = |w: i64| match local(w).map(|l| tz.offset_from_local_datetime(&l))
                    {
                        Some(LocalResult::Single(offset)) => Some(east_of(offset)),
                        _ => None,
                    };
                    let (lo, hi) = self.day_of(wall);
                    if single(lo) == Some(east) && single(hi) == Some(east) {
                        wall_day.set(Some((lo, hi, east)));
                    }
                    east
                }
            },
        };
        wall.checked_sub(east * self.per_second).ok_or_else(range)
    }
}

/// Seconds `s` as ticks of `per_second`, clamped to `i64`.
fn ticks(s: i64, per_second: i64) -> i64 {
    let t = i128::from(s) * i128::from(per_second);
    i64::try_from(t).unwrap_or(if t < 0 { i64::MIN } else { i64::MAX })
}

/// A zoned timestamp array's wall-clock times, as zoneless timestamps of its unit (null
/// where chrono has no date for the instant, as a zoned date part is), whose date parts
/// are the zoned array's: `None` for a zoneless array, and where a wall-clock time leaves
/// chrono's calendar or `i64` (a day past chrono's range, which only Arrow's own reading
/// of the zone dates).
pub(crate) fn wall_clocks(a: &dyn Array) -> FrameResult<Option<ArrayRef>> {
    let DataType::Timestamp(unit, Some(tz)) = a.data_type() else {
        return Ok(None);
    };
    let clock = WallClock::new(unit, Some(tz))?;
    let leaves = Cell::new(false);
    let raw = cast(a, &DataType::Int64)?;
    let walls = raw
        .as_primitive::<Int64Type>()
        .unary_opt::<_, Int64Type>(|t| {
            let east = clock.east_at(t)?;
            match t.checked_add(east * clock.per_second) {
                Some(wall) if clock.is_dated(wall) => Some(wall),
                _ => {
                    leaves.set(true);
                    Some(0)
                }
            }
        });
    if leaves.get() {
        return Ok(None);
    }
    Ok(Some(cast(
        &(Arc::new(walls) as ArrayRef),
        &DataType::Timestamp(*unit, None),
    )?))
}

/// The days of chrono's range at each end that a cast into or out of a zone leaves out
/// (`check_zone_cast`; the GPU filters fault on the same values).
pub const ZONE_CAST_MARGIN: i64 = 1;

/// Whether Arrow reads the time zone of type `t`, if it has one (else Arrow's error).
pub(crate) fn zone_reads(t: &DataType) -> Result<(), ArrowError> {
    match t {
        DataType::Timestamp(_, Some(tz)) => tz.parse::<Tz>().map(|_| ()),
        _ => Ok(()),
    }
}

/// The error where Arrow's cast of `a` to `to` would panic: a zoned timestamp cast to a
/// date, or a zoneless one cast into a zone, whose zone's offset takes its date past
/// chrono's range. Checked with a day's margin: such a cast's values must lie more than a
/// day inside [`calendar_days`] (a typed error, at ±262,000 years, for the few Arrow could
/// have taken).
pub(crate) fn check_zone_cast(a: &dyn Array, to: &DataType) -> FrameResult<()> {
    let DataType::Timestamp(unit, from) = a.data_type() else {
        return Ok(());
    };
    let shifts = match (from, to) {
        (Some(_), DataType::Date32 | DataType::Date64) => true,
        (None, DataType::Timestamp(_, to)) => to.is_some(),
        _ => false,
    };
    if !shifts {
        return Ok(());
    }
    let per_second = ticks_per_second(*unit);
    let (first, last) = calendar_days();
    let inside = ticks((first + ZONE_CAST_MARGIN) * DAY, per_second)
        ..=ticks((last + 1 - ZONE_CAST_MARGIN) * DAY, per_second).saturating_sub(1);
    let raw = cast(a, &DataType::Int64)?;
    let outside = raw
        .as_primitive::<Int64Type>()
        .iter()
        .flatten()
        .find(|t| !inside.contains(t));
    match outside {
        None => Ok(()),
        Some(t) => Err(FrameError::InvalidArgument(format!(
            "cannot cast {} to {to}: timestamp {t} is within a day of the range of dates",
            a.data_type()
        ))),
    }
}

/// Ticks per second of `unit`.
pub fn ticks_per_second(unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

/// Second `s` since the epoch as a date and time, where chrono has one.
fn naive(s: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp(s, 0).map(|d| d.naive_utc())
}

/// `offset`'s seconds east of UTC.
fn east_of(offset: TzOffset) -> i64 {
    i64::from(offset.fix().local_minus_utc())
}

/// The error of `what` on timestamp ticks `t` whose result leaves the range of dates.
pub(crate) fn out_of_range(what: &str, t: i64) -> FrameError {
    FrameError::InvalidArgument(format!("{what}: timestamp {t} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, DatePart, Expr};
    use arrow::array::{PrimitiveArray, RecordBatch};
    use arrow::compute::kernels::temporal::date_part;
    use arrow::datatypes::{
        ArrowTimestampType, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType,
    };

    /// Whether chrono dates day `day` (since 1970-01-01).
    fn dated(day: i64) -> bool {
        let (first, last) = calendar_days();
        (first..=last).contains(&day)
    }

    /// Zones of every kind: summer time either side of the equator, a half-hour summer
    /// time (Lord Howe), offsets not whole hours, fixed names.
    const ZONES: [&str; 7] = [
        "America/New_York",
        "Australia/Lord_Howe",
        "Europe/London",
        "Asia/Kolkata",
        "+05:45",
        "UTC",
        "Etc/GMT+5",
    ];

    /// Seconds: every 17 minutes through 2021 (in order, so a day's offset is reused),
    /// then a scatter over 1800–2100 (out of order), then chrono's edges.
    fn seconds() -> Vec<i64> {
        let mut v: Vec<i64> = (0..31_000).map(|i| 1_609_459_200 + i * 1_020).collect();
        let mut x = 88_172_645_463_325_252u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(-5_364_662_400 + (x % 9_467_280_000) as i64);
        }
        let (first, last) = calendar_days();
        v.extend([
            first * DAY,
            first * DAY + DAY - 1,
            last * DAY,
            last * DAY + DAY - 1,
        ]);
        v
    }

    fn zoned<T: ArrowTimestampType>(per_second: i64, tz: &str) -> ArrayRef {
        let values = seconds()
            .into_iter()
            .filter_map(|s| s.checked_mul(per_second));
        Arc::new(PrimitiveArray::<T>::from_iter_values(values).with_timezone(tz))
    }

    #[test]
    fn zoned_date_parts_read_once_a_day_equal_arrows_own() {
        let parts = [
            DatePart::Year,
            DatePart::Month,
            DatePart::Day,
            DatePart::Hour,
            DatePart::Minute,
            DatePart::Second,
            DatePart::Weekday,
            DatePart::DayOfYear,
            DatePart::Quarter,
        ];
        for tz in ZONES {
            for array in [
                zoned::<TimestampSecondType>(1, tz),
                zoned::<TimestampMillisecondType>(1_000, tz),
                zoned::<TimestampMicrosecondType>(1_000_000, tz),
                zoned::<TimestampNanosecondType>(1_000_000_000, tz),
            ] {
                let batch = RecordBatch::try_from_iter([("t", array.clone())]).unwrap();
                for part in parts {
                    let e = Expr::DatePart {
                        expr: Box::new(col("t")),
                        part,
                    };
                    let got = e.evaluate(&batch).unwrap();
                    let want = date_part(array.as_ref(), part.to_arrow()).unwrap();
                    assert_eq!(&got, &want, "{tz} {} {part:?}", array.data_type());
                }
            }
        }
    }

    #[test]
    fn wall_clocks_read_once_a_day_equal_chronos_per_value() {
        for tz in ZONES {
            let clock = WallClock::new(&TimeUnit::Second, Some(tz)).unwrap();
            let zone: Tz = tz.parse().unwrap();
            for s in seconds() {
                let want = naive(s).map(|utc| s + east_of(zone.offset_from_utc_datetime(&utc)));
                assert_eq!(clock.wall_of(s), want, "{tz} {s}");
                // Wall clocks a day inside chrono's range (its edges are the casts' test).
                let day = s.div_euclid(DAY);
                let Some(local) = naive(s).filter(|_| dated(day - 1) && dated(day + 1)) else {
                    continue;
                };
                let got = clock.instant_of(s, "test");
                match zone.offset_from_local_datetime(&local) {
                    LocalResult::Single(o) => {
                        assert_eq!(got.ok(), Some(s - east_of(o)), "{tz} {s}")
                    }
                    _ => assert!(got.is_err(), "{tz} {s}: {got:?}"),
                }
            }
        }
    }

    #[test]
    fn casts_across_a_zone_at_the_calendar_edges_are_errors_not_panics() {
        let (first, last) = calendar_days();
        let batch = |s: i64, tz: Option<&str>| {
            let array = PrimitiveArray::<TimestampSecondType>::from(vec![s]);
            let array = match tz {
                Some(tz) => array.with_timezone(tz),
                None => array,
            };
            RecordBatch::try_from_iter([("t", Arc::new(array) as ArrayRef)]).unwrap()
        };
        let cases = [
            // The wall clock a day past chrono's last (Arrow's cast panics there).
            (
                batch(last * DAY + DAY - 1, Some("+05:00")),
                DataType::Date32,
            ),
            (batch(first * DAY, Some("-05:00")), DataType::Date64),
            // The instant of a wall clock before chrono's first.
            (
                batch(first * DAY, None),
                DataType::Timestamp(TimeUnit::Second, Some("-05:00".into())),
            ),
            (
                batch(last * DAY + DAY - 1, None),
                DataType::Timestamp(TimeUnit::Millisecond, Some("America/New_York".into())),
            ),
        ];
        for (b, to) in cases {
            let err = col("t").cast(to.clone()).evaluate(&b).unwrap_err();
            assert!(
                err.to_string().contains("within a day of the range"),
                "{to}: {err}"
            );
        }
        // A day further in, the same casts answer.
        let ok = batch((last - 1) * DAY + DAY - 1, Some("+05:00"));
        assert!(col("t").cast(DataType::Date32).evaluate(&ok).is_ok());
    }

    #[test]
    fn zones_of_one_offset_are_read_and_the_others_left_to_the_cpu() {
        for (tz, east) in [
            ("+05:30", 19_800),
            ("-08", -28_800),
            ("+0100", 3_600),
            ("UTC", 0),
            ("Etc/UTC", 0),
            ("GMT", 0),
            ("Zulu", 0),
            // POSIX signs: "Etc/GMT+5" is 5 hours west.
            ("Etc/GMT+5", -18_000),
            ("Etc/GMT-14", 50_400),
        ] {
            assert_eq!(fixed_offset(tz), Some(east), "{tz}");
        }
        // Summer time, a database without the name, a name of the wrong case, no offset.
        for tz in [
            "America/New_York",
            "Europe/London",
            "Mars/Olympus_Mons",
            "utc",
            "Etc/GMT+x",
        ] {
            assert_eq!(fixed_offset(tz), None, "{tz}");
        }
    }
}
