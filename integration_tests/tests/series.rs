//! pandas' Series on Tessera frames: arithmetic and comparisons, reductions, value_counts,
//! unique, isin, between, fillna, astype, map, the `str` and `dt` accessors, to_frame, and
//! `when(...).then(...).otherwise(...)` — against pandas' answers written beside each case,
//! under several chunkings.

use crate::common::session;
use crate::dataframes::{rows, sorted_rows, table};
use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema};
use std::sync::Arc;
use tessera::dataframe::{
    col, from_arrow, lit, when, where_, DataFrame, FloorUnit, FrameError, Literal, Pattern,
    SeriesOperand,
};
use tessera::Error;

/// A small frame: names with case and spaces, ints with a null, floats, timestamps.
fn frame(rows_per_chunk: usize) -> DataFrame {
    let ts = |s: &str| {
        // "2021-03-04T05:06:07" as microseconds since the epoch.
        let days = match &s[..10] {
            "2021-03-04" => 18690,
            "2021-12-31" => 18992,
            _ => 18628, // 2021-01-01
        };
        let h: i64 = s[11..13].parse().unwrap();
        let m: i64 = s[14..16].parse().unwrap();
        let sec: i64 = s[17..19].parse().unwrap();
        ((days * 24 + h) * 60 + m) * 60_000_000 + sec * 1_000_000
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "name",
            Arc::new(StringArray::from(vec![
                Some("  Alice "),
                Some("bob"),
                None,
                Some("CAROL"),
                Some("bob"),
            ])),
        ),
        (
            "x",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                None,
                Some(4),
                Some(2),
            ])),
        ),
        (
            "y",
            Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5, 4.5])),
        ),
        (
            "t",
            Arc::new(TimestampMicrosecondArray::from(vec![
                ts("2021-03-04T05:06:07"),
                ts("2021-12-31T23:59:59"),
                ts("2021-01-01T00:00:00"),
                ts("2021-03-04T18:30:00"),
                ts("2021-12-31T00:00:01"),
            ])),
        ),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    from_arrow(batch, Some(rows_per_chunk))
}

fn strings(a: &ArrayRef) -> Vec<Option<String>> {
    let s = arrow::compute::cast(a, &DataType::Utf8).unwrap();
    let s = s.as_any().downcast_ref::<StringArray>().unwrap();
    s.iter().map(|v| v.map(str::to_string)).collect()
}

fn ints(a: &ArrayRef) -> Vec<Option<i64>> {
    let s = arrow::compute::cast(a, &DataType::Int64).unwrap();
    s.as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .iter()
        .collect()
}

fn floats(a: &ArrayRef) -> Vec<Option<f64>> {
    a.as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .iter()
        .collect()
}

fn bools(a: &ArrayRef) -> Vec<Option<bool>> {
    a.as_any()
        .downcast_ref::<BooleanArray>()
        .unwrap()
        .iter()
        .collect()
}

fn owned(v: &[Option<&str>]) -> Vec<Option<String>> {
    v.iter().map(|s| s.map(str::to_string)).collect()
}

#[test]
fn arithmetic_comparisons_and_reductions() {
    let s = session();
    for per_chunk in [1, 2, 5] {
        let df = frame(per_chunk);
        let (x, y) = (df.column("x"), df.column("y"));
        // (df["x"] + df["y"]) * 2 == [3, 7, NaN, 15, 13]
        let z = (&x + &y) * 2.0;
        assert_eq!(
            floats(&z.execute(&s).unwrap()),
            vec![Some(3.0), Some(7.0), None, Some(15.0), Some(13.0)]
        );
        // df["y"] > 2 ; df["x"] == 2 ; ~(df["y"] > 2)
        assert_eq!(
            bools(&y.gt(2.0).execute(&s).unwrap()),
            vec![Some(false), Some(false), Some(true), Some(true), Some(true)]
        );
        assert_eq!(
            bools(&x.eq(2).execute(&s).unwrap()),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        assert_eq!(
            bools(&(!&y.gt(2.0)).execute(&s).unwrap()),
            vec![
                Some(true),
                Some(true),
                Some(false),
                Some(false),
                Some(false)
            ]
        );
        // df["x"].sum() == 9, .mean() == 2.25, .min() == 1, .max() == 4, .count() == 4,
        // .nunique() == 3, df["y"].std() == sqrt(2.5)
        assert_eq!(x.sum().item(&s).unwrap(), Literal::Int(9));
        assert_eq!(x.mean().item(&s).unwrap(), Literal::Float(2.25));
        assert_eq!(x.min().item(&s).unwrap(), Literal::Int(1));
        assert_eq!(x.max().item(&s).unwrap(), Literal::Int(4));
        assert_eq!(x.count().item(&s).unwrap(), Literal::Int(4));
        assert_eq!(x.nunique().item(&s).unwrap(), Literal::Int(3));
        match y.std().item(&s).unwrap() {
            Literal::Float(v) => assert!((v - 2.5f64.sqrt()).abs() < 1e-12, "{v}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(y.len(&s).unwrap(), 5);
        // A series used to filter its frame, and added to it.
        let big = df.filter(y.gt(2.0).expr()).with_column("z", z.expr());
        assert_eq!(big.len(&s).unwrap(), 3);
        // to_frame keeps the (new) name.
        let named = z.rename("z2").to_frame().execute(&s).unwrap();
        assert_eq!(named.schema().field(0).name(), "z2");
    }
}

#[test]
fn series_of_different_frames_and_unknown_columns_are_typed_errors() {
    let s = session();
    let (a, b) = (frame(2), frame(2));
    let mixed = &a.column("x") + &b.column("x");
    match mixed.execute(&s) {
        Err(Error::Frame(FrameError::InvalidArgument(m))) => {
            assert!(m.contains("different frames"), "{m}")
        }
        other => panic!("series of two frames: {other:?}"),
    }
    match a.column("nope").execute(&s) {
        Err(Error::Frame(FrameError::ColumnNotFound { .. })) => {}
        other => panic!("unknown column: {other:?}"),
    }
    // Strings in arithmetic: a typed error from the expression.
    assert!(matches!(
        (&a.column("name") + 1).execute(&s),
        Err(Error::Frame(FrameError::TypeMismatch(_)))
    ));
}

#[test]
fn value_counts_unique_isin_between_fillna_astype_and_map() {
    let s = session();
    for per_chunk in [1, 2, 5] {
        let df = frame(per_chunk);
        let x = df.column("x");
        // df["x"].value_counts(): 2 -> 2, 1 -> 1, 4 -> 1 (nulls dropped)
        let counts = x.value_counts().execute(&s).unwrap();
        assert_eq!(
            sorted_rows(&counts),
            table(&[&["1", "1"], &["2", "2"], &["4", "1"]])
        );
        assert_eq!(rows(&counts)[0], vec!["2", "2"], "most frequent first");
        // df["name"].unique(): 4 values, the null included (pandas keeps it)
        let mut names = strings(&df.column("name").unique().execute(&s).unwrap());
        names.sort();
        assert_eq!(
            names,
            owned(&[None, Some("  Alice "), Some("CAROL"), Some("bob")])
        );
        // df["x"].isin([2, 4]) == [F, T, F, T, T] (null is not in the list)
        let isin = x.isin(&[Literal::Int(2), Literal::Int(4)]);
        assert_eq!(
            bools(&isin.execute(&s).unwrap()),
            vec![Some(false), Some(true), Some(false), Some(true), Some(true)]
        );
        // df["y"].between(1.5, 3.5) == [F, T, T, T, F]
        assert_eq!(
            bools(&df.column("y").between(1.5, 3.5).execute(&s).unwrap()),
            vec![Some(false), Some(true), Some(true), Some(true), Some(false)]
        );
        // df["x"].fillna(0).astype("float64") == [1., 2., 0., 4., 2.]
        let filled = x.fillna(0).astype(DataType::Float64);
        assert_eq!(
            floats(&filled.execute(&s).unwrap()),
            vec![Some(1.0), Some(2.0), Some(0.0), Some(4.0), Some(2.0)]
        );
        // df["x"].map({1: "one", 2: "two"}) == ["one", "two", NaN, NaN, "two"]
        let mapped = x.map_values(&[
            (Literal::Int(1), Literal::Str("one".into())),
            (Literal::Int(2), Literal::Str("two".into())),
        ]);
        assert_eq!(
            strings(&mapped.execute(&s).unwrap()),
            owned(&[Some("one"), Some("two"), None, None, Some("two")])
        );
    }
}

#[test]
fn the_str_accessor() {
    let s = session();
    for per_chunk in [1, 3] {
        let name = frame(per_chunk).column("name");
        let run = |t: tessera::dataframe::Series| t.execute(&s).unwrap();
        // pandas: .str.lower(), .upper(), .strip(), .len(), .startswith("b"),
        // .endswith("L"), .contains("o"), .replace("b", "B"), .slice(-3, None), .slice(0, 2)
        assert_eq!(
            strings(&run(name.str().lower())),
            owned(&[
                Some("  alice "),
                Some("bob"),
                None,
                Some("carol"),
                Some("bob")
            ])
        );
        assert_eq!(
            strings(&run(name.str().upper())),
            owned(&[
                Some("  ALICE "),
                Some("BOB"),
                None,
                Some("CAROL"),
                Some("BOB")
            ])
        );
        assert_eq!(
            strings(&run(name.str().strip())),
            owned(&[Some("Alice"), Some("bob"), None, Some("CAROL"), Some("bob")])
        );
        assert_eq!(
            ints(&run(name.str().len())),
            vec![Some(8), Some(3), None, Some(5), Some(3)]
        );
        assert_eq!(
            bools(&run(name.str().startswith("b"))),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        assert_eq!(
            bools(&run(name.str().endswith("L"))),
            vec![Some(false), Some(false), None, Some(true), Some(false)]
        );
        assert_eq!(
            bools(&run(name.str().contains("o"))),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        assert_eq!(
            strings(&run(name.str().replace("b", "B"))),
            owned(&[
                Some("  Alice "),
                Some("BoB"),
                None,
                Some("CAROL"),
                Some("BoB")
            ])
        );
        assert_eq!(
            strings(&run(name.str().slice(-3, None))),
            owned(&[Some("ce "), Some("bob"), None, Some("ROL"), Some("bob")])
        );
        assert_eq!(
            strings(&run(name.str().slice(0, Some(2)))),
            owned(&[Some("  "), Some("bo"), None, Some("CA"), Some("bo")])
        );
    }
    // A str function of a number is a typed error.
    assert!(matches!(
        frame(2).column("x").str().lower().execute(&s),
        Err(Error::Frame(FrameError::TypeMismatch(_)))
    ));
}

#[test]
fn str_patterns_and_like() {
    let s = session();
    for per_chunk in [1, 3] {
        let df = frame(per_chunk);
        let name = df.column("name");
        let run = |t: tessera::dataframe::Series| t.execute(&s).unwrap();
        // pandas: .str.contains("^b.b$"), .contains("carol", case=False), .match("b"),
        // .fullmatch("[A-Z]+"), .replace(r"(b)(o)", r"\2\1", regex=True)
        assert_eq!(
            bools(&run(name.str().contains("^b.b$"))),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        let carol = Pattern::regex("carol").ignore_case(true);
        assert_eq!(
            bools(&run(name.str().contains(carol))),
            vec![Some(false), Some(false), None, Some(true), Some(false)]
        );
        assert_eq!(
            bools(&run(name.str().match_("b"))),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        assert_eq!(
            bools(&run(name.str().fullmatch("[A-Z]+"))),
            vec![Some(false), Some(false), None, Some(true), Some(false)]
        );
        assert_eq!(
            strings(&run(name.str().replace_regex("(b)(o)", r"\2\1"))),
            owned(&[
                Some("  Alice "),
                Some("obb"),
                None,
                Some("CAROL"),
                Some("obb")
            ])
        );
        // pandas: .str.extract("(?P<first>[a-zA-Z])", expand=False), a series named by
        // the group; .str.extract(r"(\w)(\w)$"), a frame of columns 0 and 1.
        let first = name.str().extract("(?P<first>[a-zA-Z])");
        assert_eq!(first.name(), "first");
        assert_eq!(
            strings(&run(first)),
            owned(&[Some("A"), Some("b"), None, Some("C"), Some("b")])
        );
        let pairs = name.str().extract_frame(r"(\w)(\w)$");
        assert_eq!(pairs.columns().unwrap(), ["0", "1"]);
        assert_eq!(
            rows(&pairs.execute(&s).unwrap()),
            [
                vec!["", ""],
                vec!["o", "b"],
                vec!["", ""],
                vec!["O", "L"],
                vec!["o", "b"]
            ]
        );
        // SQL LIKE and NOT LIKE, null for null.
        assert_eq!(
            bools(&run(name.str().like("_o_"))),
            vec![Some(false), Some(true), None, Some(false), Some(true)]
        );
        assert_eq!(
            bools(&run(!&name.str().like("C%"))),
            vec![Some(true), Some(true), None, Some(false), Some(true)]
        );
        let kept = df.filter(name.str().like("%o%").expr()).select(&["x"]);
        assert_eq!(rows(&kept.execute(&s).unwrap()), [["2"], ["2"]]);
    }
    // A pattern the engine cannot run is an error where the series is made, by name.
    let name = frame(2).column("name");
    let err = name.str().contains("(?=b)").error().cloned();
    assert!(
        matches!(&err, Some(Error::Frame(FrameError::Pattern { message, .. })) if message.contains("look-ahead")),
        "{err:?}"
    );
    let two = name.str().extract("(a)(b)").error().cloned();
    assert!(
        matches!(&two, Some(Error::Frame(FrameError::Pattern { message, .. })) if message.contains("extract_frame"))
    );
    assert!(name.str().like_escape("a!", '!').error().is_some());
}

#[test]
fn the_dt_accessor() {
    let s = session();
    for per_chunk in [1, 2] {
        let t = frame(per_chunk).column("t");
        let run = |x: tessera::dataframe::Series| ints(&x.execute(&s).unwrap());
        let all = |v: [i64; 5]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        // 2021-03-04 05:06:07, 2021-12-31 23:59:59, 2021-01-01 00:00:00,
        // 2021-03-04 18:30:00, 2021-12-31 00:00:01
        assert_eq!(run(t.dt().year()), all([2021; 5]));
        assert_eq!(run(t.dt().month()), all([3, 12, 1, 3, 12]));
        assert_eq!(run(t.dt().day()), all([4, 31, 1, 4, 31]));
        assert_eq!(run(t.dt().hour()), all([5, 23, 0, 18, 0]));
        assert_eq!(run(t.dt().minute()), all([6, 59, 0, 30, 0]));
        assert_eq!(run(t.dt().second()), all([7, 59, 0, 0, 1]));
        // 2021-03-04 was a Thursday (3), 2021-12-31 a Friday (4), 2021-01-01 a Friday.
        assert_eq!(run(t.dt().weekday()), all([3, 4, 4, 3, 4]));
        assert_eq!(run(t.dt().dayofyear()), all([63, 365, 1, 63, 365]));
        assert_eq!(run(t.dt().quarter()), all([1, 4, 1, 1, 4]));
        // .dt.floor("h") then .dt.hour/minute: minutes and seconds gone; floor("D") keeps
        // the day and zeroes the hour.
        let hourly = t.dt().floor(FloorUnit::Hour);
        assert_eq!(run(hourly.dt().hour()), all([5, 23, 0, 18, 0]));
        assert_eq!(run(hourly.dt().minute()), all([0; 5]));
        assert_eq!(run(hourly.dt().second()), all([0; 5]));
        let daily = t.dt().floor(FloorUnit::Day);
        assert_eq!(run(daily.dt().day()), all([4, 31, 1, 4, 31]));
        assert_eq!(run(daily.dt().hour()), all([0; 5]));
    }
}

#[test]
fn date_and_time_constants_and_arithmetic() {
    use arrow::datatypes::TimeUnit;
    let s = session();
    // 2021-01-01 is day 18628, 2021-03-04 day 18690, 2022-01-01 day 18993.
    let day = |d: i32| lit(Literal::Date(d));
    let month = lit(Literal::Interval { months: 1, days: 0 });
    for per_chunk in [1, 2, 5] {
        let df = frame(per_chunk);
        // Timestamps against dates, as their midnights: on or after 2021-03-04, and in
        // the month from then.
        let later = df.filter(col("t").ge(day(18690)));
        assert_eq!(later.len(&s).unwrap(), 4);
        let march = df.filter(col("t").ge(day(18690)) & col("t").lt(day(18690) + month.clone()));
        assert_eq!(march.len(&s).unwrap(), 2);
        // Seconds to 2022-01-01 (a reflected `-`): 303 days less 05:06:07, 1 s, 365 days,
        // 303 days less 18:30:00, 1 day less 1 s.
        let t = df.column("t");
        let new_year = Literal::Timestamp {
            value: 18993 * 86_400,
            unit: TimeUnit::Second,
            tz: None,
        };
        let left = t.reflected(new_year, |l, r| l - r);
        let want = [26_160_833i64, 1, 31_536_000, 26_112_600, 86_399];
        let want: Vec<_> = want.iter().map(|&x| Some(x * 1_000_000)).collect();
        assert_eq!(ints(&left.execute(&s).unwrap()), want);
        // Two months on: 2021-12-31 ends on 2022-02-28.
        let on = &t + Literal::Interval { months: 2, days: 0 };
        let days = |x: tessera::dataframe::Series| ints(&x.execute(&s).unwrap());
        let all = |v: [i64; 5]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        assert_eq!(days(on.dt().month()), all([5, 2, 3, 5, 2]));
        assert_eq!(days(on.dt().day()), all([4, 28, 1, 4, 28]));
    }
}

#[test]
fn when_then_otherwise_and_expression_isin_between() {
    let s = session();
    for per_chunk in [1, 2, 5] {
        let df = frame(per_chunk);
        // np.select([y < 1, y < 3], ["low", "mid"], "high")
        let band = when(col("y").lt(1.0))
            .then(lit("low"))
            .when(col("y").lt(3.0))
            .then(lit("mid"))
            .otherwise(lit("high"));
        let out = df.with_column("band", band).execute(&s).unwrap();
        let b = out.column_by_name("band").unwrap();
        assert_eq!(
            strings(b),
            owned(&[
                Some("low"),
                Some("mid"),
                Some("mid"),
                Some("high"),
                Some("high")
            ])
        );
        // np.where(x > 1, x, 0.5): int and float branches meet in float; a null condition
        // takes the otherwise branch.
        let w = when(col("x").gt(1)).then(col("x")).otherwise(lit(0.5));
        let out = df.select_exprs(vec![w.alias("w")]).execute(&s).unwrap();
        assert_eq!(
            floats(out.column(0)),
            vec![Some(0.5), Some(2.0), Some(0.5), Some(4.0), Some(2.0)]
        );
        // Expressions: x.isin([1, 4]) & y.between(0, 1)
        let e = col("x")
            .isin(&[Literal::Int(1), Literal::Int(4)])
            .and_(col("y").between(0.0, 1.0));
        assert_eq!(df.filter(e).len(&s).unwrap(), 1);
        // isin of nothing is false everywhere.
        assert_eq!(df.filter(col("x").isin(&[])).len(&s).unwrap(), 0);
    }
    // A non-boolean condition, or branches that do not meet, are typed errors at once.
    let df = frame(2);
    let bad = df.with_column("b", when(col("x")).then(lit(1)).otherwise(lit(2)));
    assert!(matches!(
        bad.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    let bad = df.with_column("b", when(col("y").gt(1.0)).then(lit("a")).otherwise(lit(2)));
    assert!(matches!(
        bad.error(),
        Some(Error::Frame(FrameError::TypeMismatch(_)))
    ));
    let _ = Int32Array::from(vec![1]);
}

#[test]
fn case_when_where_reflected_operators_and_missing_values_as_pandas() {
    let s = session();
    for rows in [1, 2, 5] {
        let df = frame(rows);
        let (x, y) = (df.column("x"), df.column("y"));
        // x: 1, 2, null, 4, 2; y: 0.5 … 4.5.
        let cases = x.case_when(vec![
            (y.gt(4.0), SeriesOperand::from(-1)),
            (x.eq(2), SeriesOperand::from(&x * 10)),
        ]);
        assert_eq!(
            ints(&cases.execute(&s).unwrap()),
            vec![Some(1), Some(20), None, Some(4), Some(-1)]
        );
        let picked = where_(&y.lt(2.0), &y, 0.0);
        assert_eq!(picked.name(), "y");
        assert_eq!(
            floats(&picked.execute(&s).unwrap()),
            vec![Some(0.5), Some(1.5), Some(0.0), Some(0.0), Some(0.0)]
        );
        let inv = y.reflected(1.0, |a, b| a / b);
        assert_eq!(
            floats(&inv.execute(&s).unwrap()),
            vec![
                Some(2.0),
                Some(1.0 / 1.5),
                Some(0.4),
                Some(1.0 / 3.5),
                Some(1.0 / 4.5)
            ]
        );
        let back = x.reflected(10, |a, b| a - b);
        assert_eq!(
            ints(&back.execute(&s).unwrap()),
            vec![Some(9), Some(8), None, Some(6), Some(8)]
        );
        assert_eq!(
            bools(&x.isna().execute(&s).unwrap()),
            vec![
                Some(false),
                Some(false),
                Some(true),
                Some(false),
                Some(false)
            ]
        );
        let r = (&y * -1.0).round(0).abs();
        assert_eq!(
            floats(&r.execute(&s).unwrap()),
            vec![Some(0.0), Some(2.0), Some(2.0), Some(4.0), Some(4.0)]
        );
        // A condition from another frame is refused, naming both series.
        let other = frame(rows).column("y");
        let bad = x.case_when(vec![(other.gt(1.0), SeriesOperand::from(0))]);
        assert!(matches!(
            bad.execute(&s),
            Err(Error::Frame(FrameError::InvalidArgument(_)))
        ));
    }
}

/// TPC-H's money columns (`Decimal128(15, 2)`): Q6's filter and revenue, Q1's charge summed
/// per group, reductions, a decimal key with a null, sorting — exact, under every chunking.
#[test]
fn decimal_columns_compute_exactly() {
    use arrow::array::{AsArray, Decimal128Array};
    use arrow::datatypes::Decimal128Type;
    use tessera::dataframe::Agg;
    let s = session();
    let dec = |v: Vec<Option<i128>>| {
        Arc::new(
            Decimal128Array::from(v)
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ) as ArrayRef
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "flag",
            Arc::new(StringArray::from(vec!["A", "B", "A", "B", "A"])),
        ),
        (
            "price",
            dec(vec![Some(110), Some(225), None, Some(1000), Some(5)]),
        ),
        (
            "disc",
            dec(vec![5, 10, 7, 6, 2].into_iter().map(Some).collect()),
        ),
        (
            "tax",
            dec(vec![2, 8, 0, 4, 1].into_iter().map(Some).collect()),
        ),
        (
            "qty",
            dec(vec![2300, 2400, 100, 550, 3000]
                .into_iter()
                .map(Some)
                .collect()),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let unscaled =
        |a: &ArrayRef| -> Vec<Option<i128>> { a.as_primitive::<Decimal128Type>().iter().collect() };
    for per_chunk in [1, 2, 5] {
        let df = from_arrow(batch.clone(), Some(per_chunk));
        // Q6: sum(price * disc) where 0.05 <= disc <= 0.07 and qty < 24: rows 0, 2 (null
        // price) and 3: 1.10 * 0.05 + 10.00 * 0.06 = 0.6550.
        let q6 = df
            .filter(col("disc").between(0.05, 0.07).and_(col("qty").lt(24)))
            .with_column("revenue", col("price") * col("disc"));
        assert_eq!(
            q6.column("revenue").sum().item(&s).unwrap(),
            Literal::Decimal {
                value: 6550,
                precision: 38,
                scale: 4
            }
        );
        // Q1: sum(price * (1 - disc) * (1 + tax)) per flag: A 1.065900 + 0.049490, B
        // 2.187000 + 9.776000.
        let charge = col("price") * (lit(1) - col("disc")) * (lit(1) + col("tax"));
        let q1 = df
            .with_column("charge", charge)
            .groupby(&["flag"])
            .agg(&[("charge", &[Agg::Sum]), ("price", &[Agg::Mean, Agg::Max])])
            .execute(&s)
            .unwrap();
        assert_eq!(strings(q1.column(0)), owned(&[Some("A"), Some("B")]));
        assert_eq!(
            unscaled(q1.column(1)),
            vec![Some(1_115_390), Some(11_963_000)]
        );
        assert_eq!(floats(q1.column(2)), vec![Some(0.575), Some(6.125)]);
        assert_eq!(unscaled(q1.column(3)), vec![Some(110), Some(1000)]);
        // df["price"].sum() == Decimal("13.40"), .nunique() == 4, .max() == Decimal("10.00").
        let price = df.column("price");
        assert_eq!(
            price.sum().item(&s).unwrap(),
            Literal::Decimal {
                value: 1340,
                precision: 38,
                scale: 2
            }
        );
        assert_eq!(price.nunique().item(&s).unwrap(), Literal::Int(4));
        assert_eq!(
            price.max().item(&s).unwrap(),
            Literal::Decimal {
                value: 1000,
                precision: 15,
                scale: 2
            }
        );
        // A null decimal key is kept by drop_duplicates (as pandas keeps NaN); sorted by
        // the decimal, nulls last.
        let distinct = df
            .select(&["price"])
            .drop_duplicates(None)
            .sort_values(&["price"], true)
            .execute(&s)
            .unwrap();
        assert_eq!(
            unscaled(distinct.column(0)),
            vec![Some(5), Some(110), Some(225), Some(1000), None]
        );
    }
}
