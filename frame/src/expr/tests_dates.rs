//! Unit tests of date, timestamp, duration and calendar-offset constants and arithmetic,
//! against day numbers computed by hand (1970-01-01 is day 0; 1995-01-01 is day
//! 25 * 365 + 6 leap days = 9131).

use super::*;
use arrow::array::{
    Date32Array, Date64Array, DurationSecondArray, TimestampMicrosecondArray,
    TimestampNanosecondArray, TimestampSecondArray,
};
use arrow::datatypes::{
    Date32Type, Date64Type, DurationMicrosecondType, DurationNanosecondType, DurationSecondType,
    TimestampMicrosecondType, TimestampNanosecondType, TimestampSecondType,
};
use chrono::{NaiveDate, TimeDelta};

const DAY_US: i64 = 86_400_000_000;
const DAY_NS: i64 = 86_400_000_000_000;

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

/// Evaluates `e`, checking the type `data_type` predicts and one value per row.
fn eval(e: &Expr, b: &RecordBatch) -> ArrayRef {
    let out = e.evaluate(b).unwrap();
    assert_eq!(
        &e.data_type(b.schema_ref()).unwrap(),
        out.data_type(),
        "{e}"
    );
    assert_eq!(out.len(), b.num_rows(), "{e}");
    out
}

fn bools(e: &Expr, b: &RecordBatch) -> Vec<Option<bool>> {
    eval(e, b).as_boolean().iter().collect()
}

fn days(e: &Expr, b: &RecordBatch) -> Vec<Option<i32>> {
    eval(e, b).as_primitive::<Date32Type>().iter().collect()
}

fn mismatch(e: &Expr, b: &RecordBatch, words: &[&str]) {
    let err = e.data_type(b.schema_ref()).unwrap_err();
    let FrameError::TypeMismatch(message) = &err else {
        panic!("{e}: expected a type mismatch, got {err:?}");
    };
    for w in words {
        assert!(message.contains(w), "{message:?} lacks {w:?}");
    }
    assert_eq!(e.evaluate(b).unwrap_err(), err, "{e}");
}

fn date(y: i32, m: u32, d: u32) -> Expr {
    lit(NaiveDate::from_ymd_opt(y, m, d).unwrap())
}

fn ts(value: i64, unit: TimeUnit, tz: Option<&str>) -> Expr {
    lit(Literal::Timestamp {
        value,
        unit,
        tz: tz.map(Arc::from),
    })
}

fn duration(value: i64, unit: TimeUnit) -> Expr {
    lit(Literal::Duration { value, unit })
}

fn months(months: i32, days: i32) -> Expr {
    lit(Literal::Interval { months, days })
}

/// d: Date32 [1994-01-01, 1994-12-31, 1995-01-01, 1996-02-29, null].
fn days_batch() -> RecordBatch {
    let d = Date32Array::from(vec![Some(8766), Some(9130), Some(9131), Some(9555), None]);
    batch(vec![("d", Arc::new(d) as ArrayRef)])
}

#[test]
fn date_constants_compare_with_date_columns() {
    let b = days_batch();
    assert_eq!(date(1995, 1, 1), lit(Literal::Date(9131)));
    let year = col("d")
        .ge(date(1994, 1, 1))
        .and_(col("d").lt(date(1995, 1, 1)));
    assert_eq!(
        bools(&year, &b),
        [Some(true), Some(true), Some(false), Some(false), None]
    );
    // The constant on the left, and a constant computed from constants.
    assert_eq!(
        bools(&date(1995, 1, 1).gt(col("d")), &b),
        [Some(true), Some(true), Some(false), Some(false), None]
    );
    let shipped = col("d").le(date(1996, 3, 30) - duration(30 * DAY_NS, TimeUnit::Nanosecond));
    assert_eq!(
        bools(&shipped, &b),
        [Some(true), Some(true), Some(true), Some(true), None]
    );
    let before = col("d").lt(date(1996, 3, 30) - duration(31 * DAY_NS, TimeUnit::Nanosecond));
    assert_eq!(
        bools(&before, &b),
        [Some(true), Some(true), Some(true), Some(false), None]
    );
    // A Date64 column reads the date in milliseconds.
    let ms: Vec<Option<i64>> = vec![Some(9130 * 86_400_000), Some(9131 * 86_400_000), None];
    let b64 = batch(vec![("d", Arc::new(Date64Array::from(ms)) as ArrayRef)]);
    assert_eq!(
        bools(&col("d").eq(date(1995, 1, 1)), &b64),
        [Some(false), Some(true), None]
    );
    // isin and between take date constants too.
    assert_eq!(
        bools(&col("d").isin(&[Literal::Date(9555), Literal::Date(1)]), &b),
        [
            Some(false),
            Some(false),
            Some(false),
            Some(true),
            Some(false)
        ]
    );
    assert_eq!(
        bools(&col("d").between(date(1994, 12, 31), date(1995, 1, 1)), &b),
        [Some(false), Some(true), Some(true), Some(false), None]
    );
}

#[test]
fn dates_compare_with_timestamps_as_instants() {
    let b = days_batch();
    let s = TimeUnit::Second;
    let midnight = ts(9131 * 86_400, s, None);
    let each = |e: Expr| bools(&e, &b);
    assert_eq!(
        each(col("d").lt(midnight.clone())),
        [Some(true), Some(true), Some(false), Some(false), None]
    );
    assert_eq!(
        each(col("d").le(midnight.clone())),
        [Some(true), Some(true), Some(true), Some(false), None]
    );
    assert_eq!(
        each(col("d").eq(midnight.clone())),
        [Some(false), Some(false), Some(true), Some(false), None]
    );
    // One nanosecond past midnight: 1995-01-01 (its midnight) is before it, never equal.
    let past = ts(9131 * DAY_NS + 1, TimeUnit::Nanosecond, None);
    let before = [Some(true), Some(true), Some(true), Some(false), None];
    let after = [Some(false), Some(false), Some(false), Some(true), None];
    assert_eq!(each(col("d").lt(past.clone())), before);
    assert_eq!(each(col("d").le(past.clone())), before);
    assert_eq!(each(col("d").gt(past.clone())), after);
    assert_eq!(each(col("d").ge(past.clone())), after);
    assert_eq!(each(past.clone().gt(col("d"))), before);
    assert_eq!(each(past.clone().le(col("d"))), after);
    assert_eq!(
        each(col("d").eq(past.clone())),
        [Some(false), Some(false), Some(false), Some(false), None]
    );
    assert_eq!(
        each(col("d").ne(past)),
        [Some(true), Some(true), Some(true), Some(true), None]
    );
    // Before 1970 the constant rounds down: 1969-12-31 12:00 is after 1969-12-31.
    let around = batch(vec![(
        "d",
        Arc::new(Date32Array::from(vec![-1, 0])) as ArrayRef,
    )]);
    let noon = ts(-43_200, s, None);
    assert_eq!(
        bools(&col("d").gt(noon.clone()), &around),
        [Some(false), Some(true)]
    );
    assert_eq!(
        bools(&col("d").le(noon), &around),
        [Some(true), Some(false)]
    );
}

#[test]
fn timestamps_compare_with_date_and_timestamp_constants() {
    let us =
        TimestampMicrosecondArray::from(vec![Some(9131 * DAY_US - 1), Some(9131 * DAY_US), None]);
    let b = batch(vec![("t", Arc::new(us) as ArrayRef)]);
    assert_eq!(
        bools(&col("t").ge(date(1995, 1, 1)), &b),
        [Some(false), Some(true), None]
    );
    assert_eq!(
        bools(&date(1995, 1, 1).gt(col("t")), &b),
        [Some(true), Some(false), None]
    );
    // A nanosecond constant read in microseconds, rounded down.
    let ns = ts(9131 * DAY_NS - 500, TimeUnit::Nanosecond, None);
    assert_eq!(
        bools(&col("t").lt(ns.clone()), &b),
        [Some(true), Some(false), None]
    );
    assert_eq!(
        bools(&col("t").eq(ns), &b),
        [Some(false), Some(false), None]
    );
    // A coarser constant is exact.
    let s = ts(9131 * 86_400, TimeUnit::Second, None);
    assert_eq!(bools(&col("t").eq(s), &b), [Some(false), Some(true), None]);
}

#[test]
fn zones_compare_as_instants_and_not_with_naive_values() {
    let utc = TimestampSecondArray::from(vec![Some(3_600), Some(7_200), None]).with_timezone("UTC");
    let b = batch(vec![
        ("utc", Arc::new(utc) as ArrayRef),
        ("d", Arc::new(Date32Array::from(vec![0, 1, 2])) as ArrayRef),
    ]);
    // 02:00 at +01:00 is 01:00 UTC.
    let paris = ts(3_600_000, TimeUnit::Millisecond, Some("+01:00"));
    assert_eq!(
        bools(&col("utc").eq(paris), &b),
        [Some(true), Some(false), None]
    );
    mismatch(
        &col("utc").lt(date(1970, 1, 1)),
        &b,
        &["tz-aware", "tz-naive"],
    );
    mismatch(
        &col("utc").lt(ts(0, TimeUnit::Second, None)),
        &b,
        &["tz-aware", "tz-naive"],
    );
    mismatch(
        &col("d").lt(ts(0, TimeUnit::Second, Some("UTC"))),
        &b,
        &["tz-aware", "Date32"],
    );
}

#[test]
fn date_plus_durations_of_whole_days_stays_a_date() {
    let b = days_batch();
    let ninety = duration(90 * DAY_NS, TimeUnit::Nanosecond);
    // 1998-12-01 (day 10561) less 90 days is 1998-09-02 (day 10471).
    assert_eq!(
        date(1998, 12, 1) - ninety.clone(),
        lit(Literal::Date(10471))
    );
    // A timestamp constant less a duration, and a failing sum left as it is (its error
    // reported when it is typed).
    assert_eq!(
        ts(0, TimeUnit::Second, Some("UTC")) - duration(1, TimeUnit::Millisecond),
        ts(-1, TimeUnit::Millisecond, Some("UTC"))
    );
    let max = lit(Literal::Date(i32::MAX)) + duration(DAY_NS, TimeUnit::Nanosecond);
    assert!(matches!(max, Expr::Binary { .. }), "{max}");
    assert!(max.evaluate(&b).is_err());
    assert_eq!(
        days(&(col("d") + ninety.clone()), &b),
        [Some(8856), Some(9220), Some(9221), Some(9645), None]
    );
    assert_eq!(
        days(&(ninety.clone() + col("d")), &b),
        [Some(8856), Some(9220), Some(9221), Some(9645), None]
    );
    // A negative duration, and a duration of whole days in seconds.
    let back = duration(-DAY_US, TimeUnit::Microsecond);
    assert_eq!(
        days(&(col("d") + back.clone()), &b),
        [Some(8765), Some(9129), Some(9130), Some(9554), None]
    );
    assert_eq!(
        days(&(col("d") - back), &b),
        days(&(col("d") + duration(86_400, TimeUnit::Second)), &b)
    );
    // Whole days on a Date64 stay a Date64.
    let b64 = batch(vec![(
        "d",
        Arc::new(Date64Array::from(vec![Some(0), None])) as ArrayRef,
    )]);
    let out = eval(&(col("d") - ninety.clone()), &b64);
    let out: Vec<_> = out.as_primitive::<Date64Type>().iter().collect();
    assert_eq!(out, [Some(-90 * 86_400_000), None]);
    mismatch(
        &(ninety - col("d")),
        &b,
        &["cannot apply", "Duration", "Date32"],
    );
}

#[test]
fn date_plus_part_of_a_day_is_a_timestamp() {
    let b = days_batch();
    let noon = duration(DAY_US / 2, TimeUnit::Microsecond);
    let out = eval(&(col("d") + noon.clone()), &b);
    assert_eq!(
        out.data_type(),
        &DataType::Timestamp(TimeUnit::Microsecond, None)
    );
    let out: Vec<_> = out
        .as_primitive::<TimestampMicrosecondType>()
        .iter()
        .collect();
    let want = |d: i64| Some(d * DAY_US + DAY_US / 2);
    assert_eq!(out, [want(8766), want(9130), want(9131), want(9555), None]);
    // Against a duration column, always a timestamp in the duration's unit.
    let gaps = DurationSecondArray::from(vec![Some(86_400), Some(-1), None, Some(0), Some(5)]);
    let b = batch(vec![
        ("d", b.column(0).clone()),
        ("gap", Arc::new(gaps) as ArrayRef),
    ]);
    let out = eval(&(col("d") - col("gap")), &b);
    let out: Vec<_> = out.as_primitive::<TimestampSecondType>().iter().collect();
    assert_eq!(
        out,
        [
            Some(8765 * 86_400),
            Some(9130 * 86_400 + 1),
            None,
            Some(9555 * 86_400),
            None
        ]
    );
    // Past the range of nanosecond timestamps (year 2262) the conversion is an error.
    let far = batch(vec![(
        "d",
        Arc::new(Date32Array::from(vec![400_000])) as ArrayRef,
    )]);
    let err = (col("d") + duration(1, TimeUnit::Nanosecond))
        .evaluate(&far)
        .unwrap_err();
    assert!(err.to_string().contains("Timestamp"), "{err}");
}

#[test]
fn calendar_offsets_clamp_to_the_end_of_the_month() {
    // 1995-01-31, 1996-01-31, 1996-02-29, 1995-03-31, null.
    let d = Date32Array::from(vec![Some(9161), Some(9526), Some(9555), Some(9220), None]);
    let b = batch(vec![("d", Arc::new(d) as ArrayRef)]);
    // + 1 month: 1995-02-28 (9189), 1996-02-29 (9555), 1996-03-29 (9555 + 29), 1995-04-30.
    assert_eq!(
        days(&(col("d") + months(1, 0)), &b),
        [Some(9189), Some(9555), Some(9584), Some(9250), None]
    );
    // + 1 year: 1996-01-31, 1997-01-31, 1997-02-28 (9920), 1996-03-31.
    assert_eq!(
        days(&(col("d") + months(12, 0)), &b),
        [Some(9526), Some(9892), Some(9920), Some(9586), None]
    );
    // - 1 month: 1994-12-31 (9130), 1995-12-31, 1996-01-29, 1995-02-28 (9189).
    assert_eq!(
        days(&(col("d") - months(1, 0)), &b),
        [Some(9130), Some(9495), Some(9524), Some(9189), None]
    );
    // Months first, then days (as pandas' DateOffset): Jan 31 + (1 month, 1 day) = Mar 1.
    assert_eq!(days(&(months(1, 1) + col("d")), &b)[0], Some(9190));
    // A constant offset of a constant date is that constant: 1994-01-01 + 1 year is
    // 1995-01-01, and 1995-03-31 - 1 month is 1995-02-28.
    assert_eq!(date(1994, 1, 1) + months(12, 0), date(1995, 1, 1));
    assert_eq!(date(1995, 3, 31) - months(1, 0), date(1995, 2, 28));
    assert_eq!(
        months(1, 0) + months(0, 7),
        lit(Literal::Interval { months: 1, days: 7 })
    );
    let year = col("d").lt(date(1994, 1, 1) + months(12, 0));
    assert_eq!(
        bools(&year, &b),
        [Some(false), Some(false), Some(false), Some(false), None]
    );
    // A timestamp keeps its unit and zone.
    let t = TimestampSecondArray::from(vec![9161 * 86_400 + 5]).with_timezone("UTC");
    let bt = batch(vec![("t", Arc::new(t) as ArrayRef)]);
    let out = eval(&(col("t") + months(1, 0)), &bt);
    assert_eq!(
        out.data_type(),
        &DataType::Timestamp(TimeUnit::Second, Some("UTC".into()))
    );
    assert_eq!(
        out.as_primitive::<TimestampSecondType>().value(0),
        9189 * 86_400 + 5
    );
    mismatch(&(months(1, 0) - col("d")), &b, &["cannot apply"]);
    mismatch(&col("d").lt(months(1, 0)), &b, &["calendar offsets"]);
}

#[test]
fn differences_of_dates_are_durations() {
    // TPC-H's l_commitdate and l_receiptdate.
    let commit = Date32Array::from(vec![Some(9131), Some(9555), None, Some(0)]);
    let receipt = Date32Array::from(vec![Some(9134), Some(9554), Some(1), Some(0)]);
    let b = batch(vec![
        ("commit", Arc::new(commit) as ArrayRef),
        ("receipt", Arc::new(receipt) as ArrayRef),
    ]);
    let late = col("receipt") - col("commit");
    let out = eval(&late, &b);
    let out: Vec<_> = out.as_primitive::<DurationSecondType>().iter().collect();
    assert_eq!(out, [Some(3 * 86_400), Some(-86_400), None, Some(0)]);
    // Against a duration constant of another unit, and two date columns compared.
    assert_eq!(
        bools(
            &late.clone().ge(duration(3 * DAY_NS, TimeUnit::Nanosecond)),
            &b
        ),
        [Some(true), Some(false), None, Some(false)]
    );
    assert_eq!(
        bools(
            &late.clone().gt(duration(DAY_NS / 2, TimeUnit::Nanosecond)),
            &b
        ),
        [Some(true), Some(false), None, Some(false)]
    );
    assert_eq!(
        bools(&col("commit").lt(col("receipt")), &b),
        [Some(true), Some(false), None, Some(false)]
    );
    // Durations add in the finer unit.
    let more = eval(&(late + duration(1, TimeUnit::Microsecond)), &b);
    let more: Vec<_> = more
        .as_primitive::<DurationMicrosecondType>()
        .iter()
        .collect();
    assert_eq!(more[0], Some(3 * DAY_US + 1));
    // Timestamps minus durations keep the finer unit.
    let t = TimestampMicrosecondArray::from(vec![Some(DAY_US), None]);
    let bt = batch(vec![("t", Arc::new(t) as ArrayRef)]);
    let out = eval(&(col("t") - duration(1, TimeUnit::Nanosecond)), &bt);
    let out: Vec<_> = out
        .as_primitive::<TimestampNanosecondType>()
        .iter()
        .collect();
    assert_eq!(out, [Some(DAY_NS - 1), None]);
    let d = eval(&(col("t") - ts(0, TimeUnit::Microsecond, None)), &bt);
    let d: Vec<_> = d.as_primitive::<DurationMicrosecondType>().iter().collect();
    assert_eq!(d, [Some(DAY_US), None]);
    // Of another unit: in the finer one.
    let d = eval(&(col("t") - ts(1, TimeUnit::Nanosecond, None)), &bt);
    let d: Vec<_> = d.as_primitive::<DurationNanosecondType>().iter().collect();
    assert_eq!(d, [Some(DAY_NS - 1), None]);
    mismatch(
        &(col("t") - ts(0, TimeUnit::Second, Some("UTC"))),
        &bt,
        &["cannot apply"],
    );
}

#[test]
fn bad_date_arithmetic_is_a_type_mismatch() {
    let b = days_batch();
    mismatch(
        &(col("d") + "1995-01-01"),
        &b,
        &["cannot apply", "Date32", "Utf8"],
    );
    mismatch(&(col("d") + 1), &b, &["cannot apply", "Date32", "Int64"]);
    mismatch(&(col("d") + col("d")), &b, &["cannot apply", "Date32"]);
    mismatch(
        &(col("d") * duration(1, TimeUnit::Second)),
        &b,
        &["cannot apply", "*"],
    );
    mismatch(
        &col("d").lt(duration(1, TimeUnit::Second)),
        &b,
        &["compare"],
    );
    mismatch(&col("d").lt(1.5), &b, &["compare"]);
}

#[test]
fn overflows_are_errors() {
    let b = batch(vec![(
        "d",
        Arc::new(Date32Array::from(vec![i32::MAX - 1])) as ArrayRef,
    )]);
    let err = (col("d") + duration(2 * DAY_NS, TimeUnit::Nanosecond))
        .evaluate(&b)
        .unwrap_err();
    assert!(err.to_string().contains("overflow"), "{err}");
    // A constant out of the column's range.
    let ns = TimestampNanosecondArray::from(vec![0]);
    let bn = batch(vec![("t", Arc::new(ns) as ArrayRef)]);
    mismatch(&col("t").lt(date(3000, 1, 1)), &bn, &["out of the range"]);
}

#[test]
fn temporal_constants_are_written_and_serialized() {
    let cases = [
        (Literal::Date(10561), "date(\"1998-12-01\")"),
        (
            Literal::Timestamp {
                value: 9131 * 86_400 + 3_600,
                unit: TimeUnit::Second,
                tz: None,
            },
            "timestamp(\"1995-01-01T01:00:00\", s)",
        ),
        (
            Literal::Timestamp {
                value: 0,
                unit: TimeUnit::Nanosecond,
                tz: Some("UTC".into()),
            },
            "timestamp(\"1970-01-01T00:00:00Z\", ns, \"UTC\")",
        ),
        (
            Literal::Duration {
                value: -5,
                unit: TimeUnit::Millisecond,
            },
            "duration(-5ms)",
        ),
        (
            Literal::Interval {
                months: 12,
                days: 7,
            },
            "offset(months=12, days=7)",
        ),
    ];
    for (l, text) in cases {
        assert_eq!(l.to_string(), text);
        let e = col("d").lt(lit(l.clone()));
        let back: Expr = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }
}

#[test]
fn chrono_values_convert_to_constants() {
    let d = NaiveDate::from_ymd_opt(1996, 2, 29).unwrap();
    assert_eq!(Literal::from(d), Literal::Date(9555));
    let t = d.and_hms_opt(1, 0, 0).unwrap();
    assert_eq!(
        Literal::from(t),
        Literal::Timestamp {
            value: 9555 * DAY_US + 3_600_000_000,
            unit: TimeUnit::Microsecond,
            tz: None
        }
    );
    let t = d.and_hms_nano_opt(0, 0, 0, 1).unwrap();
    assert_eq!(
        Literal::from(t),
        Literal::Timestamp {
            value: 9555 * DAY_NS + 1,
            unit: TimeUnit::Nanosecond,
            tz: None
        }
    );
    assert_eq!(
        Literal::from(TimeDelta::days(-3)),
        Literal::Duration {
            value: -3 * DAY_US,
            unit: TimeUnit::Microsecond
        }
    );
    assert_eq!(
        Literal::from(TimeDelta::nanoseconds(7)),
        Literal::Duration {
            value: 7,
            unit: TimeUnit::Nanosecond
        }
    );
}
