//! Unit tests of typing and evaluation.

use super::*;
use arrow::array::{
    Date32Array, Date64Array, DictionaryArray, Float32Array, Int32Array, Int8Array,
    LargeStringArray, ListArray, StringViewArray, TimestampMicrosecondArray,
    TimestampMillisecondArray, TimestampSecondArray, UInt8Array,
};
use arrow::datatypes::{Field, Int32Type};

pub(super) fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

/// Evaluates `e`, checking that the result has the type `data_type` predicts and one
/// value per row.
pub(super) fn eval(e: &Expr, b: &RecordBatch) -> ArrayRef {
    let out = e.evaluate(b).unwrap();
    assert_eq!(
        &e.data_type(b.schema_ref()).unwrap(),
        out.data_type(),
        "{e}"
    );
    assert_eq!(out.len(), b.num_rows(), "{e}");
    out
}

pub(super) fn ints(e: &Expr, b: &RecordBatch) -> Vec<Option<i64>> {
    let out = eval(e, b);
    assert_eq!(out.data_type(), &DataType::Int64, "{e}");
    out.as_primitive::<Int64Type>().iter().collect()
}

pub(super) fn floats(e: &Expr, b: &RecordBatch) -> Vec<Option<f64>> {
    let out = eval(e, b);
    assert_eq!(out.data_type(), &DataType::Float64, "{e}");
    out.as_primitive::<Float64Type>().iter().collect()
}

pub(super) fn bools(e: &Expr, b: &RecordBatch) -> Vec<Option<bool>> {
    eval(e, b).as_boolean().iter().collect()
}

fn int32s(e: &Expr, b: &RecordBatch) -> Vec<Option<i32>> {
    eval(e, b).as_primitive::<Int32Type>().iter().collect()
}

pub(super) fn mismatch(e: &Expr, b: &RecordBatch, words: &[&str]) {
    let err = e.data_type(b.schema_ref()).unwrap_err();
    let FrameError::TypeMismatch(message) = &err else {
        panic!("{e}: expected a type mismatch, got {err:?}");
    };
    for w in words {
        assert!(message.contains(w), "{message:?} lacks {w:?}");
    }
    assert_eq!(e.evaluate(b).unwrap_err(), err, "{e}");
}

/// a: Int32 [1, -7, 3, null], b: Int64 [2, 3, 0, 5], f: Float64 [1.5, -7.5, 0.0, NaN].
fn numbers() -> RecordBatch {
    batch(vec![
        (
            "a",
            Arc::new(Int32Array::from(vec![Some(1), Some(-7), Some(3), None])) as ArrayRef,
        ),
        ("b", Arc::new(Int64Array::from(vec![2, 3, 0, 5]))),
        (
            "f",
            Arc::new(Float64Array::from(vec![1.5, -7.5, 0.0, f64::NAN])),
        ),
    ])
}

#[test]
fn integer_arithmetic_widens_to_int64() {
    let b = numbers();
    assert_eq!(
        ints(&(col("a") + col("b")), &b),
        [Some(3), Some(-4), Some(3), None]
    );
    assert_eq!(
        ints(&(col("a") - col("b")), &b),
        [Some(-1), Some(-10), Some(3), None]
    );
    assert_eq!(
        ints(&(col("a") * col("b")), &b),
        [Some(2), Some(-21), Some(0), None]
    );
    // Floored modulo as Python; by zero is null.
    assert_eq!(
        ints(&(col("a") % col("b")), &b),
        [Some(1), Some(2), None, None]
    );
    assert_eq!(
        ints(&(col("a") % -3), &b),
        [Some(-2), Some(-1), Some(0), None]
    );
    assert_eq!(ints(&(col("a") % 0), &b), [None, None, None, None]);
    assert_eq!(
        ints(&(lit(-6) % col("b")), &b),
        [Some(0), Some(0), None, Some(4)]
    );
    // Literals on either side.
    assert_eq!(
        ints(&(lit(10) - col("a")), &b),
        [Some(9), Some(17), Some(7), None]
    );
    assert_eq!(
        ints(&(col("a") * 2), &b),
        [Some(2), Some(-14), Some(6), None]
    );
    // Wrapping.
    let max = batch(vec![(
        "m",
        Arc::new(Int64Array::from(vec![i64::MAX])) as ArrayRef,
    )]);
    assert_eq!(ints(&(col("m") + 1), &max), [Some(i64::MIN)]);
    assert_eq!(ints(&(col("m") * 2), &max), [Some(-2)]);
}

#[test]
fn division_is_true_division() {
    let b = numbers();
    let q = floats(&(col("a") / col("b")), &b);
    assert_eq!(q[0], Some(0.5));
    assert!((q[1].unwrap() + 7.0 / 3.0).abs() < 1e-15);
    assert_eq!(q[2], Some(f64::INFINITY));
    assert_eq!(q[3], None);
    let z = floats(&(col("f") / 0), &b);
    assert_eq!(&z[..2], [Some(f64::INFINITY), Some(f64::NEG_INFINITY)]);
    assert!(z[2].unwrap().is_nan() && z[3].unwrap().is_nan());
    assert_eq!(floats(&(lit(7) / lit(2)), &b), [Some(3.5); 4]);
}

#[test]
fn float_arithmetic_and_mixed_operands() {
    let b = numbers();
    let sum = floats(&(col("a") + col("f")), &b);
    assert_eq!(&sum[..3], [Some(2.5), Some(-14.5), Some(3.0)]);
    assert_eq!(sum[3], None);
    assert_eq!(
        floats(&(col("b") * 0.5), &b),
        [Some(1.0), Some(1.5), Some(0.0), Some(2.5)]
    );
    let m = floats(&(col("f") % 2.0), &b);
    assert_eq!(&m[..3], [Some(1.5), Some(0.5), Some(0.0)]);
    assert!(m[3].unwrap().is_nan());
    assert_eq!(floats(&(lit(7.5) % -2.0), &b), [Some(-0.5); 4]);
    let f32s = batch(vec![(
        "x",
        Arc::new(Float32Array::from(vec![0.5f32, 2.0])) as ArrayRef,
    )]);
    assert_eq!(floats(&(col("x") - 1), &f32s), [Some(-0.5), Some(1.0)]);
}

#[test]
fn negation() {
    let b = batch(vec![
        (
            "i",
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        ),
        ("u", Arc::new(UInt8Array::from(vec![200, 0]))),
    ]);
    let n = eval(&-col("i"), &b);
    assert_eq!(
        n.as_primitive::<Int32Type>().iter().collect::<Vec<_>>(),
        [Some(-1), None]
    );
    assert_eq!(ints(&-col("u"), &b), [Some(-200), Some(0)]);
    assert_eq!(-lit(5), lit(-5));
    assert_eq!(-lit(2.5), lit(-2.5));
    mismatch(&-lit("x"), &b, &["negate", "Utf8"]);
}

#[test]
fn null_literals_propagate() {
    let b = numbers();
    assert_eq!(ints(&(col("a") + lit(Literal::Null)), &b), [None; 4]);
    assert_eq!(floats(&(lit(Literal::Null) / col("b")), &b), [None; 4]);
    assert_eq!(bools(&col("a").gt(Literal::Null), &b), [None; 4]);
    assert_eq!(bools(&lit(Literal::Null).eq(col("f")), &b), [None; 4]);
    let n = eval(&(lit(Literal::Null) + lit(Literal::Null)), &b);
    assert_eq!(
        (n.data_type(), n.logical_null_count()),
        (&DataType::Null, 4)
    );
}

#[test]
fn numeric_comparisons() {
    let b = numbers();
    assert_eq!(
        bools(&col("a").lt(col("b")), &b),
        [Some(true), Some(true), Some(false), None]
    );
    assert_eq!(
        bools(&col("a").ge(1), &b),
        [Some(true), Some(false), Some(true), None]
    );
    assert_eq!(
        bools(&lit(2).le(col("b")), &b),
        [Some(true), Some(true), Some(false), Some(true)]
    );
    assert_eq!(
        bools(&col("a").ne(3), &b),
        [Some(true), Some(true), Some(false), None]
    );
    // Int against float compares as floats; NaN is unequal to everything; -0.0 == 0.
    assert_eq!(
        bools(&col("a").gt(col("f")), &b),
        [Some(false), Some(true), Some(true), None]
    );
    assert_eq!(
        bools(&col("f").gt(0), &b),
        [Some(true), Some(false), Some(false), Some(false)]
    );
    assert_eq!(
        bools(&col("f").eq(col("f")), &b),
        [Some(true), Some(true), Some(true), Some(false)]
    );
    assert_eq!(
        bools(&col("f").ne(-7.5), &b),
        [Some(true), Some(false), Some(true), Some(true)]
    );
    assert_eq!(
        bools(&col("f").eq(-0.0), &b),
        [Some(false), Some(false), Some(true), Some(false)]
    );
    assert_eq!(
        bools(&lit(0.25).lt(col("a")), &b),
        [Some(true), Some(false), Some(true), None]
    );
    // A literal outside the column's range widens the column instead of wrapping.
    let small = batch(vec![(
        "s",
        Arc::new(Int8Array::from(vec![-5, 100])) as ArrayRef,
    )]);
    assert_eq!(bools(&col("s").lt(300), &small), [Some(true), Some(true)]);
    assert_eq!(bools(&col("s").gt(-300), &small), [Some(true), Some(true)]);
    assert_eq!(
        bools(&col("s").eq(100.0), &small),
        [Some(false), Some(true)]
    );
    assert_eq!(bools(&col("s").lt(99.5), &small), [Some(true), Some(false)]);
    let f32s = batch(vec![(
        "x",
        Arc::new(Float32Array::from(vec![0.1f32])) as ArrayRef,
    )]);
    // 0.1f32 is 0.100000001490116..., above 0.1f64: compared in f64.
    assert_eq!(bools(&col("x").gt(0.1), &f32s), [Some(true)]);
    assert_eq!(bools(&col("x").eq(0.5), &f32s), [Some(false)]);
}

#[test]
fn float_comparisons_match_a_naive_loop() {
    // 200 values cycling through negatives, zeros of both signs, NaN, infinities and nulls,
    // sliced so that neither the offset nor the length is a multiple of 64.
    let pool = [-1.5, -0.0, 0.0, 2.0, f64::NAN, f64::INFINITY, 7.25];
    let l: Float64Array = (0..200)
        .map(|i| (i % 11 != 5).then(|| pool[i % pool.len()]))
        .collect();
    let r: Float64Array = (0..200)
        .map(|i| (i % 13 != 2).then(|| pool[(i * 3 + 1) % pool.len()]))
        .collect();
    let b = batch(vec![("l", Arc::new(l) as ArrayRef), ("r", Arc::new(r))]).slice(3, 130);
    let (lv, rv) = (
        b.column(0).as_primitive::<Float64Type>(),
        b.column(1).as_primitive::<Float64Type>(),
    );
    type Naive = fn(&f64, &f64) -> bool;
    type Build = fn(Expr, Expr) -> Expr;
    let ops: [(Build, Naive); 6] = [
        (Expr::eq, f64::eq),
        (Expr::ne, f64::ne),
        (Expr::lt, f64::lt),
        (Expr::le, f64::le),
        (Expr::gt, f64::gt),
        (Expr::ge, f64::ge),
    ];
    for (build, naive) in ops {
        let expect = |x: Option<f64>, y: Option<f64>| Some(naive(&x?, &y?));
        let want: Vec<_> = lv
            .iter()
            .zip(rv.iter())
            .map(|(x, y)| expect(x, y))
            .collect();
        assert_eq!(bools(&build(col("l"), col("r")), &b), want);
        let want: Vec<_> = lv.iter().map(|x| expect(x, Some(2.0))).collect();
        assert_eq!(bools(&build(col("l"), lit(2.0)), &b), want);
        let want: Vec<_> = rv.iter().map(|y| expect(Some(-0.0), y)).collect();
        assert_eq!(bools(&build(lit(-0.0), col("r")), &b), want);
    }
}

#[test]
fn modulo_matches_python() {
    let xs = [i64::MIN, -7, -6, -1, 0, 1, 5, 7, i64::MAX];
    let (l, r): (Vec<i64>, Vec<i64>) = xs
        .iter()
        .flat_map(|&x| xs.iter().map(move |&y| (x, y)))
        .unzip();
    let b = batch(vec![
        ("l", Arc::new(Int64Array::from(l.clone())) as ArrayRef),
        ("r", Arc::new(Int64Array::from(r.clone()))),
    ]);
    // Python's floored modulo, ((x % y) + y) % y, in i128 (no overflow).
    let python = |x: i64, y: i64| {
        let (x, y) = (i128::from(x), i128::from(y));
        (y != 0).then(|| (((x % y) + y) % y) as i64)
    };
    let want: Vec<_> = l.iter().zip(&r).map(|(&x, &y)| python(x, y)).collect();
    assert_eq!(ints(&(col("l") % col("r")), &b), want);
}

#[test]
fn kleene_logic() {
    let t = [Some(true), Some(false), None];
    let (l, r): (Vec<_>, Vec<_>) = t
        .iter()
        .flat_map(|&x| t.iter().map(move |&y| (x, y)))
        .unzip();
    let b = batch(vec![
        ("l", Arc::new(BooleanArray::from(l)) as ArrayRef),
        ("r", Arc::new(BooleanArray::from(r))),
    ]);
    let (tt, ff) = (Some(true), Some(false));
    assert_eq!(
        bools(&(col("l") & col("r")), &b),
        [tt, ff, None, ff, ff, ff, None, ff, None]
    );
    assert_eq!(
        bools(&(col("l") | col("r")), &b),
        [tt, tt, tt, tt, ff, None, tt, None, None]
    );
    // Rows 0, 3, 6 of `l` are true, false, null.
    let b = b.slice(0, 7);
    let every_third = |e: Expr| bools(&e, &b).into_iter().step_by(3).collect::<Vec<_>>();
    assert_eq!(every_third(col("l").and_(Literal::Null)), [None, ff, None]);
    assert_eq!(every_third(col("l").or_(Literal::Null)), [tt, None, None]);
    assert_eq!(every_third(lit(true) & col("l")), [tt, ff, None]);
    assert_eq!(every_third(lit(false) | col("l")), [tt, ff, None]);
    assert_eq!(every_third(!col("l")), [ff, tt, None]);
    assert_eq!(every_third(col("l").not()), [ff, tt, None]);
    assert_eq!(every_third(col("l").eq(true)), [tt, ff, None]);
    assert_eq!(bools(&(lit(true) | lit(false)), &b), [tt; 7]);
}

#[test]
fn null_tests_and_fill() {
    let b = numbers();
    assert_eq!(
        bools(&col("a").is_null(), &b),
        [Some(false), Some(false), Some(false), Some(true)]
    );
    // NaN is a value, not null.
    assert_eq!(bools(&col("f").is_not_null(), &b), [Some(true); 4]);
    assert_eq!(bools(&lit(Literal::Null).is_null(), &b), [Some(true); 4]);
    // A fitting literal keeps the column's type.
    let filled = eval(&col("a").fill_null(0), &b);
    assert_eq!(filled.data_type(), &DataType::Int32);
    let filled: Vec<_> = filled.as_primitive::<Int32Type>().iter().collect();
    assert_eq!(filled, [Some(1), Some(-7), Some(3), Some(0)]);
    assert_eq!(
        floats(&col("a").fill_null(0.5), &b),
        [Some(1.0), Some(-7.0), Some(3.0), Some(0.5)]
    );
    assert_eq!(
        ints(&col("a").fill_null(col("b")), &b),
        [Some(1), Some(-7), Some(3), Some(5)]
    );
    assert_eq!(
        ints(&(col("a") % col("b")).fill_null(-1), &b),
        [Some(1), Some(2), Some(-1), Some(-1)]
    );
    let same = eval(&col("a").fill_null(Literal::Null), &b);
    assert_eq!(same.null_count(), 1);
    mismatch(&col("a").fill_null("x"), &b, &["fill", "Int32", "Utf8"]);
}

fn strings() -> RecordBatch {
    let values = vec![Some("abc"), Some("xbz"), None, Some("b")];
    let dict: DictionaryArray<Int32Type> = values.iter().copied().collect();
    batch(vec![
        ("s", Arc::new(StringArray::from(values.clone())) as ArrayRef),
        (
            "l",
            Arc::new(LargeStringArray::from(vec![
                Some("abc"),
                Some("q"),
                Some("z"),
                Some("b"),
            ])),
        ),
        ("d", Arc::new(dict)),
        ("v", Arc::new(StringViewArray::from(values))),
    ])
}

#[test]
fn string_comparisons_over_every_encoding() {
    let b = strings();
    for c in ["s", "d", "v"] {
        assert_eq!(
            bools(&col(c).eq("xbz"), &b),
            [Some(false), Some(true), None, Some(false)],
            "{c}"
        );
        assert_eq!(
            bools(&lit("b").lt(col(c)), &b),
            [Some(false), Some(true), None, Some(false)],
            "{c}"
        );
        assert_eq!(
            bools(&col(c).str_contains("b"), &b),
            [Some(true), Some(true), None, Some(true)],
            "{c}"
        );
        assert_eq!(
            bools(&col(c).str_contains("bc"), &b),
            [Some(true), Some(false), None, Some(false)],
            "{c}"
        );
        assert_eq!(
            bools(&col(c).eq(col("l")), &b),
            [Some(true), Some(false), None, Some(true)],
            "{c}"
        );
    }
    assert_eq!(
        bools(&col("l").ne("q"), &b),
        [Some(true), Some(false), Some(true), Some(true)]
    );
    assert_eq!(bools(&col("l").str_contains(""), &b), [Some(true); 4]);
    assert_eq!(
        bools(&col("d").ge(col("s")), &b),
        [Some(true), Some(true), None, Some(true)]
    );
    assert_eq!(
        bools(&col("v").gt(col("d")), &b),
        [Some(false), Some(false), None, Some(false)]
    );
    let filled = eval(&col("d").fill_null("n"), &b);
    assert_eq!(filled.data_type(), &DataType::Utf8);
    let filled: Vec<_> = filled.as_string::<i32>().iter().collect();
    assert_eq!(filled, [Some("abc"), Some("xbz"), Some("n"), Some("b")]);
    let filled = eval(&col("l").fill_null(col("s")), &b);
    assert_eq!(filled.data_type(), &DataType::LargeUtf8);
}

/// d32: Date32 [2021-03-04, 2020-02-29, null]; d64: the same as Date64;
/// ts: Timestamp(µs) [2021-03-04 05:06:07, 1969-12-31 23:59:58, null].
fn dates() -> RecordBatch {
    let days = vec![Some(18690), Some(18321), None];
    let ms: Vec<_> = days
        .iter()
        .map(|d| d.map(|d: i32| i64::from(d) * 86_400_000))
        .collect();
    let ts = vec![Some(1_614_834_367_000_000), Some(-2_000_000), None];
    batch(vec![
        ("d32", Arc::new(Date32Array::from(days)) as ArrayRef),
        ("d64", Arc::new(Date64Array::from(ms))),
        ("ts", Arc::new(TimestampMicrosecondArray::from(ts))),
    ])
}

#[test]
fn date_parts() {
    let b = dates();
    let d = col("d32");
    assert_eq!(
        int32s(&d.clone().dt_year(), &b),
        [Some(2021), Some(2020), None]
    );
    assert_eq!(int32s(&d.clone().dt_month(), &b), [Some(3), Some(2), None]);
    assert_eq!(int32s(&d.clone().dt_day(), &b), [Some(4), Some(29), None]);
    assert_eq!(
        int32s(&d.clone().dt_weekday(), &b),
        [Some(3), Some(5), None]
    );
    assert_eq!(int32s(&d.clone().dt_hour(), &b), [Some(0), Some(0), None]);
    assert_eq!(int32s(&d.dt_second(), &b), [Some(0), Some(0), None]);
    assert_eq!(int32s(&col("d64").dt_day(), &b), [Some(4), Some(29), None]);
    assert_eq!(
        int32s(&col("d64").dt_minute(), &b),
        [Some(0), Some(0), None]
    );
    let t = col("ts");
    assert_eq!(
        int32s(&t.clone().dt_year(), &b),
        [Some(2021), Some(1969), None]
    );
    assert_eq!(int32s(&t.clone().dt_month(), &b), [Some(3), Some(12), None]);
    assert_eq!(int32s(&t.clone().dt_day(), &b), [Some(4), Some(31), None]);
    assert_eq!(int32s(&t.clone().dt_hour(), &b), [Some(5), Some(23), None]);
    assert_eq!(
        int32s(&t.clone().dt_minute(), &b),
        [Some(6), Some(59), None]
    );
    assert_eq!(
        int32s(&t.clone().dt_second(), &b),
        [Some(7), Some(58), None]
    );
    assert_eq!(int32s(&t.dt_weekday(), &b), [Some(3), Some(2), None]);
    assert_eq!(int32s(&lit(Literal::Null).dt_hour(), &b), [None; 3]);
}

/// Timestamps under named zones (the zone database, arrow's `chrono-tz`), as pandas and
/// Parquet files written from it hold them: date parts and days are the zone's wall clock,
/// across New York's change to summer time on 2021-03-14 at 02:00 (07:00 UTC).
#[test]
fn named_time_zones() {
    // 2021-03-14 06:59:59 UTC (01:59:59 EST), 07:00:00 UTC (03:00:00 EDT), 2021-01-01
    // 03:00 UTC (2020-12-31 22:00 EST), null.
    let secs = vec![
        Some(1_615_705_199),
        Some(1_615_705_200),
        Some(1_609_470_000),
        None,
    ];
    let zoned =
        |tz: &str| Arc::new(TimestampSecondArray::from(secs.clone()).with_timezone(tz)) as ArrayRef;
    let b = batch(vec![
        ("ny", zoned("America/New_York")),
        ("utc", zoned("UTC")),
        ("mars", zoned("Mars/Olympus_Mons")),
    ]);
    let ny = col("ny");
    assert_eq!(
        int32s(&ny.clone().dt_hour(), &b),
        [Some(1), Some(3), Some(22), None]
    );
    assert_eq!(
        int32s(&ny.clone().dt_year(), &b),
        [Some(2021), Some(2021), Some(2020), None]
    );
    assert_eq!(
        int32s(&ny.clone().dt_day(), &b),
        [Some(14), Some(14), Some(31), None]
    );
    assert_eq!(
        int32s(&col("utc").dt_hour(), &b),
        [Some(6), Some(7), Some(3), None]
    );
    let days = |e: &Expr| -> Vec<Option<i32>> {
        eval(e, &b)
            .as_primitive::<arrow::datatypes::Date32Type>()
            .iter()
            .collect()
    };
    assert_eq!(
        days(&ny.clone().cast(DataType::Date32)),
        [Some(18_700), Some(18_700), Some(18_627), None]
    );
    assert_eq!(
        days(&col("utc").cast(DataType::Date32)),
        [Some(18_700), Some(18_700), Some(18_628), None]
    );
    // A string without an offset is a wall-clock time in the column's zone.
    assert_eq!(
        bools(&ny.clone().ge("2021-03-14T03:00:00"), &b),
        [Some(false), Some(true), Some(false), None]
    );
    assert_eq!(
        bools(&ny.clone().eq(col("utc")), &b),
        [Some(true), Some(true), Some(true), None]
    );
    // A zone no database holds is the typed error that names it, not a panic.
    let err = col("mars").dt_hour().evaluate(&b).unwrap_err();
    assert!(err.to_string().contains("Mars/Olympus_Mons"), "{err}");
    assert_eq!(
        int32s(&ny.clone().dt_weekday(), &b),
        [Some(6), Some(6), Some(3), None]
    );
    // Floors on the wall clock, as pandas' `dt.floor`: New York's midnight of 2021-03-14
    // is 05:00 UTC, its 01:00 that day 06:00 UTC.
    let seconds = |e: &Expr| -> Vec<Option<i64>> {
        let out = eval(e, &b);
        let out = arrow::compute::cast(&out, &DataType::Int64).unwrap();
        out.as_primitive::<Int64Type>().iter().collect()
    };
    assert_eq!(
        seconds(&ny.clone().dt_floor(FloorUnit::Day)),
        [
            Some(1_615_698_000),
            Some(1_615_698_000),
            Some(1_609_390_800),
            None
        ]
    );
    assert_eq!(
        seconds(&ny.dt_floor(FloorUnit::Hour)),
        [
            Some(1_615_701_600),
            Some(1_615_705_200),
            Some(1_609_470_000),
            None
        ]
    );
    assert_eq!(
        seconds(&col("utc").dt_floor(FloorUnit::Day)),
        [
            Some(1_615_680_000),
            Some(1_615_680_000),
            Some(1_609_459_200),
            None
        ]
    );
    // A floor onto a wall-clock time the zone repeats (New York, 2021-11-07 01:00) or skips
    // (São Paulo's midnight of 2018-11-04) is an error, as pandas raises by default.
    let one = |secs: i64, tz: &str| {
        batch(vec![(
            "t",
            Arc::new(TimestampSecondArray::from(vec![secs]).with_timezone(tz)) as ArrayRef,
        )])
    };
    let repeated = one(1_636_263_000, "America/New_York");
    assert_eq!(
        eval(&col("t").dt_floor(FloorUnit::Day), &repeated)
            .as_primitive::<arrow::datatypes::TimestampSecondType>()
            .value(0),
        1_636_257_600
    );
    let err = col("t")
        .dt_floor(FloorUnit::Hour)
        .evaluate(&repeated)
        .unwrap_err();
    assert!(err.to_string().contains("occurs twice"), "{err}");
    let err = col("t")
        .dt_floor(FloorUnit::Day)
        .evaluate(&one(1_541_340_000, "America/Sao_Paulo"))
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    // A floor below `i64`'s range is an error, not a wrapped value.
    let low = batch(vec![(
        "t",
        Arc::new(arrow::array::TimestampNanosecondArray::from(vec![i64::MIN])) as ArrayRef,
    )]);
    let err = col("t")
        .dt_floor(FloorUnit::Day)
        .evaluate(&low)
        .unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

/// pandas' `dt.tz_localize` and `dt.tz_convert`, across New York's change to summer time.
#[test]
fn tz_localize_and_convert() {
    // Wall clocks: 2021-03-14 01:59:59 and 03:00:00 (either side of the skipped hour),
    // 2020-12-31 22:00, null.
    let walls = vec![
        Some(1_615_687_199),
        Some(1_615_690_800),
        Some(1_609_452_000),
        None,
    ];
    let instants = vec![
        Some(1_615_705_199),
        Some(1_615_705_200),
        Some(1_609_470_000),
        None,
    ];
    let b = batch(vec![
        (
            "wall",
            Arc::new(TimestampSecondArray::from(walls.clone())) as ArrayRef,
        ),
        (
            "ny",
            Arc::new(
                TimestampSecondArray::from(instants.clone()).with_timezone("America/New_York"),
            ),
        ),
    ]);
    let seconds = |e: &Expr, b: &RecordBatch| -> Vec<Option<i64>> {
        let out = eval(e, b);
        let out = arrow::compute::cast(&out, &DataType::Int64).unwrap();
        out.as_primitive::<Int64Type>().iter().collect()
    };
    let localized = col("wall").dt_tz_localize(Some("America/New_York"));
    assert_eq!(
        localized.data_type(b.schema_ref()).unwrap(),
        DataType::Timestamp(TimeUnit::Second, Some("America/New_York".into()))
    );
    assert_eq!(seconds(&localized, &b), instants);
    assert_eq!(seconds(&col("ny").dt_tz_localize(None), &b), walls);
    let utc = col("ny").dt_tz_convert("UTC");
    assert_eq!(seconds(&utc, &b), instants);
    assert_eq!(
        int32s(&utc.dt_hour(), &b),
        [Some(6), Some(7), Some(3), None]
    );
    // pandas' default: a wall-clock time skipped (02:30 that day) or repeated (01:30 on
    // 2021-11-07) is an error.
    for (wall, words) in [
        (1_615_689_000, "does not exist"),
        (1_636_248_600, "occurs twice"),
    ] {
        let one = batch(vec![(
            "wall",
            Arc::new(TimestampSecondArray::from(vec![wall])) as ArrayRef,
        )]);
        let err = localized.evaluate(&one).unwrap_err().to_string();
        assert!(err.contains(words) && err.contains("tz_localize"), "{err}");
    }
    // Typed mismatches, as pandas' TypeErrors: converting a zoneless timestamp,
    // localizing a zoned one, a zone the database lacks.
    for (e, words) in [
        (col("wall").dt_tz_convert("UTC"), "use dt.tz_localize"),
        (col("ny").dt_tz_localize(Some("UTC")), "use dt.tz_convert"),
        (
            col("wall").dt_tz_localize(Some("Mars/Tharsis")),
            "Mars/Tharsis",
        ),
        (col("ny").dt_tz_convert("Mars/Tharsis"), "Mars/Tharsis"),
    ] {
        let err = e.data_type(b.schema_ref()).unwrap_err().to_string();
        assert!(err.contains(words), "{err}");
    }
}

#[test]
fn temporal_comparisons_and_differences() {
    let b = dates();
    assert_eq!(
        bools(&col("d32").eq(col("d64")), &b),
        [Some(true), Some(true), None]
    );
    assert_eq!(
        bools(&col("d32").ge("2021-03-01"), &b),
        [Some(true), Some(false), None]
    );
    assert_eq!(
        bools(&lit("1970-01-01").gt(col("ts")), &b),
        [Some(false), Some(true), None]
    );
    assert_eq!(
        bools(&col("ts").lt("2021-03-04T05:06:08"), &b),
        [Some(true), Some(true), None]
    );
    mismatch(
        &col("d32").lt("yesterday"),
        &b,
        &["\"yesterday\"", "Date32"],
    );
    mismatch(
        &col("d32").lt(col("ts")),
        &b,
        &["compare", "Date32", "Timestamp"],
    );
    let ms = TimestampMillisecondArray::from(vec![1_614_834_367_000, 0, 0]);
    let mixed = batch(vec![
        ("ts", b.column(2).clone()),
        ("ms", Arc::new(ms) as ArrayRef),
    ]);
    assert_eq!(
        bools(&col("ts").eq(col("ms")), &mixed),
        [Some(true), Some(false), None]
    );
    let diff = eval(&(col("ts") - col("ts")), &b);
    assert_eq!(diff.data_type(), &DataType::Duration(TimeUnit::Microsecond));
    assert_eq!(diff.null_count(), 1);
    // A zoneless timestamp cast to a zone is read as that zone's wall clock, whose date
    // parts it keeps; a zone the database lacks is a mismatch before any row is read.
    let tz = DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into()));
    assert_eq!(
        int32s(&col("ts").cast(tz).dt_hour(), &b),
        [Some(5), Some(23), None]
    );
    let nowhere = DataType::Timestamp(TimeUnit::Microsecond, Some("Mars/Tharsis".into()));
    let e = col("ts").cast(nowhere).dt_hour();
    let err = e.data_type(b.schema_ref()).unwrap_err().to_string();
    assert!(
        err.contains("date parts") && err.contains("Mars/Tharsis"),
        "{err}"
    );
    let err = e.evaluate(&b).unwrap_err().to_string();
    assert!(err.contains("Mars/Tharsis"), "{err}");
}

#[test]
fn casts() {
    let b = numbers();
    let s = eval(&col("a").cast(DataType::Utf8), &b);
    let s: Vec<_> = s.as_string::<i32>().iter().collect();
    assert_eq!(s, [Some("1"), Some("-7"), Some("3"), None]);
    let text = batch(vec![(
        "t",
        Arc::new(StringArray::from(vec!["12", "-3"])) as ArrayRef,
    )]);
    assert_eq!(
        int32s(&col("t").cast(DataType::Int32), &text),
        [Some(12), Some(-3)]
    );
    assert_eq!(
        ints(
            &col("f").cast(DataType::Int64).fill_null(0),
            &numbers().slice(0, 3)
        ),
        [Some(1), Some(-7), Some(0)]
    );
    let bad = batch(vec![(
        "t",
        Arc::new(StringArray::from(vec!["12", "abc"])) as ArrayRef,
    )]);
    let err = col("t").cast(DataType::Int32).evaluate(&bad).unwrap_err();
    let FrameError::TypeMismatch(m) = err else {
        panic!("{err:?}")
    };
    assert!(m.contains("Utf8") && m.contains("Int32"), "{m}");
    mismatch(
        &lit(true).cast(DataType::Date32),
        &b,
        &["cast", "Boolean", "Date32"],
    );
}

#[test]
fn type_errors_name_the_types() {
    let b = numbers();
    let s = strings();
    let bd = batch(vec![
        ("s", s.column(0).clone()),
        ("n", b.column(1).clone()),
        (
            "t",
            Arc::new(BooleanArray::from(vec![true, false, true, false])) as ArrayRef,
        ),
    ]);
    mismatch(
        &(col("s") + col("n")),
        &bd,
        &["+", "Utf8", "Int64", "col(\"s\")"],
    );
    mismatch(&(col("t") * 2), &bd, &["*", "Boolean", "Int64"]);
    mismatch(&col("n").str_contains("x"), &bd, &["str_contains", "Int64"]);
    mismatch(&col("n").dt_hour(), &bd, &["date parts", "Int64"]);
    mismatch(&(col("n") & col("t")), &bd, &["&", "Int64", "Boolean"]);
    mismatch(&col("t").or_(1), &bd, &["|", "Boolean", "Int64"]);
    mismatch(&!col("n"), &bd, &["not", "Int64"]);
    mismatch(&col("s").gt(col("n")), &bd, &["compare", "Utf8", "Int64"]);
    mismatch(&col("s").eq(1), &bd, &["compare", "Utf8", "Int64"]);
    mismatch(&col("t").eq(1), &bd, &["compare", "Boolean", "Int64"]);
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1)])]);
    let lb = batch(vec![("x", Arc::new(list) as ArrayRef)]);
    mismatch(&col("x").eq(col("x")), &lb, &["compare", "List"]);
    let err = (col("nope") + 1).data_type(bd.schema_ref()).unwrap_err();
    assert!(
        matches!(err, FrameError::ColumnNotFound { ref name, .. } if name == "nope"),
        "{err:?}"
    );
    assert!(matches!(
        col("nope").evaluate(&bd),
        Err(FrameError::ColumnNotFound { .. })
    ));
}

#[test]
fn names_and_columns() {
    let e = (col("b") + col("a") * col("b")).alias("x");
    assert_eq!(e.output_name(), "x");
    assert_eq!(e.columns(), ["b", "a"]);
    assert_eq!((lit(1) + col("c")).output_name(), "c");
    assert_eq!((lit(1) + 2).output_name(), "literal");
    assert_eq!(col("a").fill_null(col("z")).columns(), ["a", "z"]);
    let shown = (col("tip").gt(0) & col("n").str_contains("a").not()).to_string();
    assert_eq!(
        shown,
        "((col(\"tip\") > 0) & !col(\"n\").str_contains(\"a\"))"
    );
}

#[test]
fn constants_broadcast_and_empty_batches() {
    let b = numbers();
    assert_eq!(ints(&(lit(1) + lit(2)), &b), [Some(3); 4]);
    let s = eval(&lit("x"), &b);
    assert_eq!(
        s.as_string::<i32>().iter().collect::<Vec<_>>(),
        [Some("x"); 4]
    );
    let empty = b.slice(0, 0);
    for e in [
        col("a") + col("b"),
        col("f").gt(0) & col("a").lt(col("b")),
        lit(1) + lit(2),
        col("a") % 0,
    ] {
        assert_eq!(eval(&e, &empty).len(), 0);
    }
    let strs = strings().slice(0, 0);
    assert_eq!(eval(&col("d").str_contains("a"), &strs).len(), 0);
    let one = b.slice(1, 1);
    assert_eq!(ints(&(col("a") % col("b")), &one), [Some(2)]);
    let none = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(2)),
    )
    .unwrap();
    assert_eq!(floats(&lit(1.5), &none), [Some(1.5); 2]);
}

#[test]
fn serde_round_trip() {
    let e = (col("a").cast(DataType::Float32) / 2 + lit(Literal::Null))
        .fill_null(0.5)
        .gt(col("t").dt_weekday())
        .or_(col("s").str_contains("x").not() & col("n").is_null())
        .alias("keep");
    let json = serde_json::to_string(&e).unwrap();
    assert_eq!(serde_json::from_str::<Expr>(&json).unwrap(), e);
    let schema = Schema::new(vec![
        Field::new("a", DataType::Int32, true),
        Field::new("t", DataType::Date32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("n", DataType::Float64, true),
    ]);
    assert_eq!(e.data_type(&schema).unwrap(), DataType::Boolean);
}
