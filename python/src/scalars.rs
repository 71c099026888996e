//! Python scalars beyond `None`, bool, int, float and str as frame literals: NumPy's
//! numbers, dates and times (`datetime.date`, `datetime.datetime` tz-naive or aware,
//! `datetime.timedelta`, NumPy's `datetime64` and `timedelta64` in their own unit, pandas'
//! `Timestamp` and `Timedelta`) and pandas' `DateOffset` of years, months, weeks and days.
//!
//! pandas and NumPy are looked up in `sys.modules`, never imported here: a value of theirs
//! exists only once they are.

use crate::errors::value_error;
use arrow::datatypes::TimeUnit;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use tessera::dataframe::Literal;

/// Days from 0001-01-01 (Python's ordinal 1) to 1970-01-01.
const EPOCH_ORDINAL: i64 = 719_163;

/// `obj` as a NumPy number, date, timestamp, duration or calendar-offset literal; `None`
/// where it is none of those.
pub(crate) fn literal(obj: &Bound<'_, PyAny>) -> PyResult<Option<Literal>> {
    let py = obj.py();
    let modules = py.import("sys")?.getattr("modules")?;
    let module = |name: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
        let m = modules.call_method1("get", (name,))?;
        Ok((!m.is_none()).then_some(m))
    };
    if let Some(pandas) = module("pandas")? {
        if let Some(l) = pandas_value(obj, &pandas)? {
            return Ok(Some(l));
        }
    }
    if let Some(numpy) = module("numpy")? {
        if obj.is_instance(&numpy.getattr("datetime64")?)? {
            return datetime64(obj, None).map(Some);
        }
        // Before `integer`: NumPy's `timedelta64` is a `signedinteger`.
        if obj.is_instance(&numpy.getattr("timedelta64")?)? {
            return timedelta64(obj).map(Some);
        }
        if obj.is_instance(&numpy.getattr("bool_")?)? {
            return Ok(Some(Literal::Bool(obj.is_truthy()?)));
        }
        if obj.is_instance(&numpy.getattr("integer")?)? {
            let v = obj
                .extract()
                .map_err(|_| value_error(format!("{obj} does not fit in int64")))?;
            return Ok(Some(Literal::Int(v)));
        }
        if obj.is_instance(&numpy.getattr("floating")?)? {
            return Ok(Some(Literal::Float(obj.extract()?)));
        }
    }
    let datetime = py.import("datetime")?;
    if obj.is_instance(&datetime.getattr("datetime")?)? {
        let tzinfo = obj.getattr("tzinfo")?;
        // The epoch, tz-aware where `obj` is, so that the difference is `obj`'s instant.
        let utc = match tzinfo.is_none() {
            true => tzinfo.clone(),
            false => datetime.getattr("timezone")?.getattr("utc")?,
        };
        let epoch = datetime
            .getattr("datetime")?
            .call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
        let value = micros(&obj.sub(epoch)?)?;
        return Ok(Some(Literal::Timestamp {
            value,
            unit: TimeUnit::Microsecond,
            tz: zone(&tzinfo)?,
        }));
    }
    if obj.is_instance(&datetime.getattr("date")?)? {
        let days = obj.call_method0("toordinal")?.extract::<i64>()? - EPOCH_ORDINAL;
        let days =
            i32::try_from(days).map_err(|_| value_error(format!("{obj} is out of range")))?;
        return Ok(Some(Literal::Date(days)));
    }
    if obj.is_instance(&datetime.getattr("timedelta")?)? {
        return Ok(Some(Literal::Duration {
            value: micros(obj)?,
            unit: TimeUnit::Microsecond,
        }));
    }
    Ok(None)
}

/// A pandas `Timestamp`, `Timedelta` or offset as a literal (`NaT` is an error).
fn pandas_value(obj: &Bound<'_, PyAny>, pandas: &Bound<'_, PyAny>) -> PyResult<Option<Literal>> {
    if obj.is(&pandas.getattr("NaT")?) {
        return Err(value_error(
            "pd.NaT cannot be compared with or computed from here (pandas' answers for it \
             differ by operator); use isna() or notna(), or None for a missing value",
        ));
    }
    if obj.is_instance(&pandas.getattr("Timestamp")?)? {
        // `asm8`: the instant (UTC for a tz-aware one) in the timestamp's own unit.
        let tz = zone(&obj.getattr("tz")?)?;
        return datetime64(&obj.getattr("asm8")?, tz).map(Some);
    }
    if obj.is_instance(&pandas.getattr("Timedelta")?)? {
        return timedelta64(&obj.getattr("asm8")?).map(Some);
    }
    if obj.is_instance(&pandas.getattr("offsets")?.getattr("BaseOffset")?)? {
        return date_offset(obj, pandas).map(Some);
    }
    Ok(None)
}

/// NumPy's unit name of `x`'s dtype, failing on `NaT`.
fn numpy_unit(x: &Bound<'_, PyAny>, numpy: &Bound<'_, PyAny>) -> PyResult<String> {
    if numpy.call_method1("isnat", (x,))?.is_truthy()? {
        return Err(value_error(format!(
            "{} is not a time; use None for a missing value",
            x.repr()?
        )));
    }
    let (unit, _count): (String, i64) = numpy
        .call_method1("datetime_data", (x.getattr("dtype")?,))?
        .extract()?;
    Ok(unit)
}

/// `x` (a NumPy `datetime64` or `timedelta64` scalar) in NumPy unit `unit`, as an `i64`.
fn ticks(x: &Bound<'_, PyAny>, kind: &str, unit: &str) -> PyResult<i64> {
    x.call_method1("astype", (format!("{kind}[{unit}]"),))?
        .call_method1("astype", ("int64",))?
        .extract()
}

/// Arrow's time unit of NumPy unit `unit`, if it has one.
fn arrow_unit(unit: &str) -> Option<TimeUnit> {
    Some(match unit {
        "s" => TimeUnit::Second,
        "ms" => TimeUnit::Millisecond,
        "us" => TimeUnit::Microsecond,
        "ns" => TimeUnit::Nanosecond,
        _ => return None,
    })
}

/// Units coarser than a second, which a number of seconds holds exactly.
const COARSE: [&str; 6] = ["Y", "M", "W", "D", "h", "m"];

/// A `datetime64` scalar as a date (unit `D`) or a timestamp of its unit (coarser ones in
/// seconds), in zone `tz`.
fn datetime64(x: &Bound<'_, PyAny>, tz: Option<Arc<str>>) -> PyResult<Literal> {
    let numpy = x.py().import("numpy")?;
    let unit = numpy_unit(x, &numpy)?;
    let kind = "datetime64";
    let same_dtype = x.getattr("dtype")?.eq(format!("{kind}[{unit}]"))?;
    if unit == "D" && same_dtype && tz.is_none() {
        let days = ticks(x, kind, "D")?;
        let days = i32::try_from(days).map_err(|_| value_error(format!("{x} is out of range")))?;
        return Ok(Literal::Date(days));
    }
    let (unit, name) = match arrow_unit(&unit) {
        Some(u) => (u, unit.as_str()),
        None if COARSE.contains(&unit.as_str()) => (TimeUnit::Second, "s"),
        None => return Err(finer_than_ns(x, &unit)),
    };
    Ok(Literal::Timestamp {
        value: ticks(x, kind, name)?,
        unit,
        tz,
    })
}

/// A `timedelta64` scalar as a duration of its unit (weeks, days, hours and minutes in
/// seconds); years and months, whose length varies, are an error.
fn timedelta64(x: &Bound<'_, PyAny>) -> PyResult<Literal> {
    let numpy = x.py().import("numpy")?;
    let unit = numpy_unit(x, &numpy)?;
    let (arrow, name) = match arrow_unit(&unit) {
        Some(u) => (u, unit.as_str()),
        None if matches!(unit.as_str(), "Y" | "M") => {
            return Err(value_error(format!(
                "{}: years and months have no fixed length; use pd.DateOffset(years=…, \
                 months=…)",
                x.repr()?
            )))
        }
        None if COARSE.contains(&unit.as_str()) => (TimeUnit::Second, "s"),
        None if unit == "generic" => return Err(value_error(format!("{} has no unit", x.repr()?))),
        None => return Err(finer_than_ns(x, &unit)),
    };
    Ok(Literal::Duration {
        value: ticks(x, "timedelta64", name)?,
        unit: arrow,
    })
}

fn finer_than_ns(x: &Bound<'_, PyAny>, unit: &str) -> PyErr {
    let shown = x.repr().map(|r| r.to_string()).unwrap_or_default();
    value_error(format!("{shown}: unit {unit:?} is finer than nanoseconds"))
}

/// The microseconds of a `datetime.timedelta`.
fn micros(delta: &Bound<'_, PyAny>) -> PyResult<i64> {
    let part = |name: &str| delta.getattr(name)?.extract::<i64>();
    let (days, seconds, us) = (part("days")?, part("seconds")?, part("microseconds")?);
    days.checked_mul(86_400_000_000)
        .and_then(|d| d.checked_add(seconds * 1_000_000 + us))
        .ok_or_else(|| value_error(format!("{delta} is out of the range of microseconds")))
}

/// The name Arrow knows a `tzinfo` by (`None` for none), as `dt.tz_localize` reads it.
fn zone(tzinfo: &Bound<'_, PyAny>) -> PyResult<Option<Arc<str>>> {
    if tzinfo.is_none() {
        return Ok(None);
    }
    let name = tzinfo
        .py()
        .import("tessera._accessors")?
        .getattr("_zone_name")?
        .call1((tzinfo,))?;
    Ok(name.extract::<Option<String>>()?.map(Arc::from))
}

/// A `pd.DateOffset` of years, months, weeks and days (times `n`) as a calendar offset;
/// any other offset, or other fields, are an error.
fn date_offset(obj: &Bound<'_, PyAny>, pandas: &Bound<'_, PyAny>) -> PyResult<Literal> {
    let usage = "use pd.DateOffset(years=, months=, weeks=, days=) or pd.Timedelta";
    if !obj.get_type().is(&pandas.getattr("DateOffset")?) {
        return Err(value_error(format!(
            "{} is not supported; {usage}",
            obj.repr()?
        )));
    }
    if obj.getattr("normalize")?.is_truthy()? {
        return Err(value_error(format!(
            "{}: normalize=True is not supported",
            obj.repr()?
        )));
    }
    let overflow = || value_error(format!("{obj} is out of range"));
    let n: i64 = obj.getattr("n")?.extract()?;
    let kwds = obj.getattr("kwds")?;
    let kwds = kwds.cast::<PyDict>()?;
    // No fields: one day, as pandas.
    let (mut months, mut days) = (0i64, i64::from(kwds.is_empty()));
    for (key, value) in kwds.iter() {
        let key: String = key.extract()?;
        let value: i64 = value.extract().map_err(|_| {
            value_error(format!(
                "DateOffset({key}={value}): a whole number is needed"
            ))
        })?;
        let (total, per) = match key.as_str() {
            "years" => (&mut months, 12),
            "months" => (&mut months, 1),
            "weeks" => (&mut days, 7),
            "days" => (&mut days, 1),
            _ => {
                return Err(value_error(format!(
                    "DateOffset({key}=…) is not supported; {usage}"
                )))
            }
        };
        *total = value
            .checked_mul(per)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(overflow)?;
    }
    let scaled = |v: i64| {
        v.checked_mul(n)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(overflow)
    };
    Ok(Literal::Interval {
        months: scaled(months)?,
        days: scaled(days)?,
    })
}
