//! Time zones in generated filters: a timestamp's wall clock in a zone of one offset at
//! every instant, which a kernel reaches by adding that offset. Zones whose offset changes
//! (daylight saving time, a country's new rules) need the zone database's transitions and
//! stay the CPU's.

use super::{calendar_days, Gen};
use crate::cuda::codegen::cexpr::i64_lit;
use arrow::array::temporal_conversions::as_datetime_with_timezone;
use arrow::array::timezone::Tz;
use arrow::datatypes::TimestampSecondType;
use std::fmt::Write as _;

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
pub(super) fn fixed_offset(tz: &str) -> Option<i64> {
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

/// The C variables [`Gen::wall_clock`] declares for one timestamp value.
pub(super) struct WallClock {
    /// Its UTC day (floored): chrono dates it where this is a calendar day.
    pub utc_day: String,
    /// Its day on the zone's wall clock.
    pub day: String,
    /// Its second of that day (0 to 86399).
    pub second: String,
}

impl Gen<'_> {
    /// Declares the UTC day, and the day and second of the day on the wall clock `offset`
    /// seconds east of UTC, of timestamp `x` counted in `1 / per_second` seconds (the
    /// floored second). Out of the calendar the values wrap (never undefined behaviour in
    /// C); a caller gates them on [`Self::calendar`].
    pub(super) fn wall_clock(&mut self, x: &str, per_second: i64, offset: i64) -> WallClock {
        let n = self.fresh();
        let _ = writeln!(
            self.body,
            "        const ts_i64 t{n} = ts_floor_div({x}, {per_second});\n        \
             const ts_i64 u{n} = ts_floor_div(t{n}, 86400);\n        \
             const ts_i64 l{n} = (ts_i64)((ts_u64)t{n} + (ts_u64){off});\n        \
             const ts_i64 z{n} = ts_floor_div(l{n}, 86400);\n        \
             const ts_i64 s{n} = (ts_i64)((ts_u64)l{n} - (ts_u64)z{n} * 86400ull);",
            off = i64_lit(offset)
        );
        WallClock {
            utc_day: format!("u{n}"),
            day: format!("z{n}"),
            second: format!("s{n}"),
        }
    }

    /// A C condition: day `day` is in chrono's range of dates ([`calendar_days`]).
    pub(super) fn calendar(day: &str) -> String {
        let (first, last) = calendar_days();
        format!(
            "({day} >= {} && {day} <= {})",
            i64_lit(first),
            i64_lit(last)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fixed_offset;

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
