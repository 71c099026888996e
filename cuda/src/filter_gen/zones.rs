//! Time zones in generated filters: a timestamp's wall clock in a zone of one offset at
//! every instant ([`tessera_kernels::frame::expr::zone::fixed_offset`]), which a kernel reaches by
//! adding that offset. Zones whose offset changes (daylight saving time, a country's new
//! rules) need the zone database's transitions and stay the CPU's.

use super::{calendar_days, Gen};
use crate::codegen::cexpr::i64_lit;
use std::fmt::Write as _;

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

    /// A C condition: day `day` is in chrono's range of dates ([`calendar_days`]), and
    /// more than `margin` days inside it.
    pub(super) fn calendar(day: &str, margin: i64) -> String {
        let (first, last) = calendar_days();
        format!(
            "({day} >= {} && {day} <= {})",
            i64_lit(first + margin),
            i64_lit(last - margin)
        )
    }
}
