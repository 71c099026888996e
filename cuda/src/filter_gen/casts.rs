//! The filter generator's casts: the CPU's strict casts between numbers, and Arrow's
//! casts between temporal types, with the rows on which the CPU fails as faults.

use super::{cat_of, fixed_offset, ticks_per_second, Cat, Gen, Val};
use crate::codegen::cexpr::{f64_lit, i64_lit};
use arrow::datatypes::{DataType, TimeUnit};
use std::fmt::Write as _;
use tessera_kernels::frame::expr::zone::ZONE_CAST_MARGIN;
use tessera_kernels::frame::expr::Expr;

impl Gen<'_> {
    /// `inner` cast to `to` as the CPU's strict cast does it: an integer or a boolean to
    /// any integer type but `UInt64` (a value out of the target's range faults), a float to
    /// one (truncated toward zero; NaN, infinities and values out of range fault, with
    /// `num-traits`' bounds, which Arrow's cast uses), anything numeric to `Float32`
    /// (rounded to nearest, as Rust's `as`) or `Float64` (`Int64` rounded to nearest), a
    /// value to its own type, a null to anything the generator computes in; a temporal
    /// value to the integer it is stored as (`Int32` for the 32-bit types, `Int64` for
    /// all), which Arrow's cast reads unchanged, or to a temporal type
    /// ([`Self::temporal_cast`]). `UInt64` stays on the CPU.
    pub(super) fn cast(&mut self, inner: &Expr, to: &DataType) -> Option<Val> {
        let from = inner.data_type(self.schema).ok()?;
        let v = self.expr(inner)?;
        if from == *to {
            return Some(v);
        }
        if let Some(temporal) = v.temporal.clone() {
            let narrow = matches!(temporal, DataType::Date32 | DataType::Time32(_));
            return match to {
                DataType::Int64 => Some(self.define(Cat::Int, &v.x, &v.ok)),
                DataType::Int32 if narrow => Some(self.define(Cat::Int, &v.x, &v.ok)),
                to => self.temporal_cast(v, &temporal, to),
            };
        }
        if from == DataType::UInt64 {
            return None;
        }
        let narrow = int_range(to);
        match (v.cat, to) {
            (Cat::Null, to) => Some(self.null(cat_of(to)?)),
            (Cat::Int, DataType::Int64) => Some(self.define(Cat::Int, &v.x, &v.ok)),
            (Cat::Int, _) if narrow.is_some() => {
                let (lo, hi) = narrow?;
                self.fault_outside(&v, lo, hi);
                Some(self.define(Cat::Int, &v.x, &v.ok))
            }
            (Cat::Bool, to) if to == &DataType::Int64 || narrow.is_some() => {
                Some(self.define(Cat::Int, &format!("(ts_i64)({})", v.x), &v.ok))
            }
            (Cat::Float, to) if to.is_integer() => self.float_to_int(v, to),
            (Cat::Int, DataType::Float64) => {
                Some(self.define(Cat::Float, &format!("__ll2double_rn({})", v.x), &v.ok))
            }
            (Cat::Int, DataType::Float32) => Some(self.define(
                Cat::Float,
                &format!("(double)__ll2float_rn({})", v.x),
                &v.ok,
            )),
            (Cat::Bool, DataType::Float64 | DataType::Float32) => {
                Some(self.define(Cat::Float, &format!("({} ? 1.0 : 0.0)", v.x), &v.ok))
            }
            (Cat::Float, DataType::Float64) => Some(self.define(Cat::Float, &v.x, &v.ok)),
            (Cat::Float, DataType::Float32) => Some(self.define(
                Cat::Float,
                &format!("(double)__double2float_rn({})", v.x),
                &v.ok,
            )),
            _ => None,
        }
    }

    /// Temporal `v` of type `from` cast to temporal type `to`, as Arrow's cast does it:
    /// - a zoneless timestamp to `Date32`: its day, floored (out of `Date32`'s range
    ///   faults);
    /// - a zoned timestamp to `Date32`, for a zone of one offset: its day on the zone's
    ///   wall clock (an instant not more than a day inside chrono's range of dates faults,
    ///   as the CPU checks before Arrow's cast);
    /// - a timestamp to another unit: a coarser one by truncating division, a finer one by
    ///   checked multiplication (overflow faults); from no zone to a zone of one offset,
    ///   the value then read as that zone's wall clock ([`Self::zone_shift`]);
    /// - `Date32` to `Date64`, and `Date64` to `Date32` (truncating division; out of
    ///   range faults).
    ///
    /// `None` for the others.
    fn temporal_cast(&mut self, v: Val, from: &DataType, to: &DataType) -> Option<Val> {
        use DataType::{Date32, Date64, Timestamp};
        const MS_PER_DAY: i64 = 86_400_000;
        // The value, and whether it must fit in `i32` (else it faults).
        let (x, narrow) = match (from, to) {
            (Timestamp(unit, None), Date32) => {
                let day = ticks_per_second(*unit) * 86_400;
                let coarse = matches!(unit, TimeUnit::Second | TimeUnit::Millisecond);
                (format!("ts_floor_div({}, {day})", v.x), coarse)
            }
            (Timestamp(unit, Some(tz)), Date32) => {
                let offset = fixed_offset(tz)?;
                let clock = self.wall_clock(&v.x, ticks_per_second(*unit), offset);
                // The CPU's check before Arrow's cast (`zone::check_zone_cast`).
                let inside = Self::calendar(&clock.utc_day, ZONE_CAST_MARGIN);
                self.faults.push(format!("({} && !{inside})", v.ok));
                (clock.day, false)
            }
            (Timestamp(from_unit, from_tz), Timestamp(to_unit, to_tz)) => {
                // The zone a zoneless value moves into, as its offset.
                let shift = match (from_tz, to_tz) {
                    (None, Some(tz)) => Some(fixed_offset(tz)?),
                    _ => None,
                };
                let (f, t) = (ticks_per_second(*from_unit), ticks_per_second(*to_unit));
                let x = if f == t {
                    v.x.clone()
                } else if f > t {
                    format!("{} / {}", v.x, f / t)
                } else {
                    let mul = t / f;
                    self.fault_outside(&v, i64::MIN / mul, i64::MAX / mul);
                    format!("(ts_i64)((ts_u64){} * (ts_u64){mul})", v.x)
                };
                match shift {
                    Some(offset) => (self.zone_shift(&v, f, &x, t, offset), false),
                    None => (x, false),
                }
            }
            (Date32, Date64) => (format!("{} * {MS_PER_DAY}", v.x), false),
            (Date64, Date32) => (format!("{} / {MS_PER_DAY}", v.x), true),
            _ => return None,
        };
        let mut out = self.define(Cat::Int, &x, &v.ok);
        if narrow {
            self.fault_outside(&out, i32::MIN.into(), i32::MAX.into());
        }
        out.temporal = Some(to.clone());
        Some(out)
    }

    /// Zoneless timestamp `v` (in `1 / from` seconds), converted to `x` (in `1 / per_second`
    /// seconds), read as the wall clock `offset` seconds east of UTC: `x` less the offset.
    /// It faults where the CPU fails: `v` not more than a day inside chrono's range of
    /// dates (the CPU's check before Arrow's cast, `zone::check_zone_cast`, within which
    /// chrono dates both the wall clock and its instant), or a result outside `i64`.
    fn zone_shift(&mut self, v: &Val, from: i64, x: &str, per_second: i64, offset: i64) -> String {
        let wall = self.define(Cat::Int, x, &v.ok);
        let shift = offset * per_second;
        let day = self.define(
            Cat::Int,
            &format!("ts_floor_div({}, {})", v.x, from * 86_400),
            &v.ok,
        );
        let overflow = match shift.cmp(&0) {
            std::cmp::Ordering::Greater => format!("{} < {}", wall.x, i64_lit(i64::MIN + shift)),
            std::cmp::Ordering::Less => format!("{} > {}", wall.x, i64_lit(i64::MAX + shift)),
            std::cmp::Ordering::Equal => "false".into(),
        };
        self.faults.push(format!(
            "({} && (!{} || {overflow}))",
            v.ok,
            Self::calendar(&day.x, ZONE_CAST_MARGIN),
        ));
        format!("(ts_i64)((ts_u64){} - (ts_u64){})", wall.x, i64_lit(shift))
    }

    /// A fault where integer `v` is valid and outside `lo..=hi`.
    fn fault_outside(&mut self, v: &Val, lo: i64, hi: i64) {
        self.faults.push(format!(
            "({} && ({x} < {} || {x} > {}))",
            v.ok,
            i64_lit(lo),
            i64_lit(hi),
            x = v.x
        ));
    }

    /// Float `v` cast to integer type `to`: truncated toward zero where `num-traits` (which
    /// Arrow's cast uses) takes the value, `x` in `(MIN - 1, MAX + 1)`, or `[MIN, MAX + 1)`
    /// for `Int64` (whose `MIN - 1` no float holds apart from `MIN`); a fault elsewhere.
    fn float_to_int(&mut self, v: Val, to: &DataType) -> Option<Val> {
        let (lo, hi, low) = match to {
            DataType::Int64 => (-(2f64.powi(63)), 2f64.powi(63), ">="),
            to => {
                let (lo, hi) = int_range(to)?;
                (lo as f64 - 1.0, hi as f64 + 1.0, ">")
            }
        };
        let n = self.fresh();
        let _ = writeln!(
            self.body,
            "        const bool in{n} = {x} {low} {} && {x} < {};",
            f64_lit(lo),
            f64_lit(hi),
            x = v.x
        );
        self.faults.push(format!("({} && !in{n})", v.ok));
        let x = format!("in{n} ? (ts_i64){} : 0", v.x);
        Some(self.define(Cat::Int, &x, &v.ok))
    }
}

/// The values of integer type `to` narrower than `Int64` (`None` for the others).
pub(super) fn int_range(to: &DataType) -> Option<(i64, i64)> {
    Some(match to {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DataType::UInt8 => (0, u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into()),
        DataType::UInt32 => (0, u32::MAX.into()),
        _ => return None,
    })
}
