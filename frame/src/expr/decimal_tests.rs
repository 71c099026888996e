//! Unit tests of decimal typing and evaluation, against values computed by hand (unscaled
//! `i128`s: 1.10 at scale 2 is 110).

use super::tests::{batch, bools, eval, floats, ints, mismatch};
use super::*;
use arrow::array::{Decimal256Array, Int32Array};
use arrow::datatypes::i256;

/// A `Decimal128(p, s)` column of unscaled values.
fn dec(values: &[Option<i128>], p: u8, s: i8) -> ArrayRef {
    Arc::new(
        Decimal128Array::from(values.to_vec())
            .with_precision_and_scale(p, s)
            .unwrap(),
    )
}

/// The result's type and unscaled values (a `Decimal128`).
fn decs(e: &Expr, b: &RecordBatch) -> (DataType, Vec<Option<i128>>) {
    let out = eval(e, b);
    let values = out.as_primitive::<Decimal128Type>().iter().collect();
    (out.data_type().clone(), values)
}

/// price: Decimal128(15, 2) [1.10, 2.25, null, -3.33]; disc, tax: Decimal128(15, 2)
/// [0.05, 0.10, 0.07, 0.00] and [0.02, 0.08, 0.00, 0.04]; qty: Int32 [1, 2, 3, 4];
/// f: Float64 [1.1, 2.0, 0.0, -3.33]; rate: Decimal128(10, 4) [1.1000, 2.2500, 1.0000, -3.3300].
fn lineitems() -> RecordBatch {
    batch(vec![
        (
            "price",
            dec(&[Some(110), Some(225), None, Some(-333)], 15, 2),
        ),
        ("disc", dec(&[Some(5), Some(10), Some(7), Some(0)], 15, 2)),
        ("tax", dec(&[Some(2), Some(8), Some(0), Some(4)], 15, 2)),
        ("qty", Arc::new(Int32Array::from(vec![1, 2, 3, 4]))),
        (
            "f",
            Arc::new(Float64Array::from(vec![1.1, 2.0, 0.0, -3.33])),
        ),
        (
            "rate",
            dec(
                &[Some(11000), Some(22500), Some(10000), Some(-33300)],
                10,
                4,
            ),
        ),
    ])
}

fn d128(p: u8, s: i8) -> DataType {
    DataType::Decimal128(p, s)
}

#[test]
fn sums_and_differences_take_the_larger_scale() {
    let b = lineitems();
    assert_eq!(
        decs(&(col("price") + col("tax")), &b),
        (d128(16, 2), vec![Some(112), Some(233), None, Some(-329)])
    );
    // max(13, 6) integer digits + 4 + 1.
    assert_eq!(
        decs(&(col("price") - col("rate")), &b),
        (d128(18, 4), vec![Some(0), Some(0), None, Some(0)])
    );
    // An Int32 column is Decimal(10, 0): max(13, 10) + 2 + 1.
    assert_eq!(
        decs(&(col("price") + col("qty")), &b),
        (d128(16, 2), vec![Some(210), Some(425), None, Some(67)])
    );
    // The constant 1 is Decimal(1, 0): 1 - disc is Decimal(16, 2), as DuckDB's.
    assert_eq!(
        decs(&(lit(1) - col("disc")), &b),
        (d128(16, 2), vec![Some(95), Some(90), Some(93), Some(100)])
    );
    // Precisions are capped at 38.
    let wide = batch(vec![("w", dec(&[Some(1), Some(-1)], 38, 2))]);
    assert_eq!(
        decs(&(col("w") + col("w")), &wide),
        (d128(38, 2), vec![Some(2), Some(-2)])
    );
}

#[test]
fn products_add_scales_and_the_tpch_charge_is_exact() {
    let b = lineitems();
    assert_eq!(
        decs(&(col("price") * col("disc")), &b),
        (d128(31, 4), vec![Some(550), Some(2250), None, Some(0)])
    );
    assert_eq!(
        decs(&(col("price") * 2), &b),
        (d128(17, 2), vec![Some(220), Some(450), None, Some(-666)])
    );
    // sum_charge's row: price * (1 - disc) * (1 + tax), Decimal(15 + 16 + 1, 4) then
    // Decimal(min(32 + 16 + 1, 38), 6): 1.10 * 0.95 * 1.02 = 1.065900.
    let charge = col("price") * (lit(1) - col("disc")) * (lit(1) + col("tax"));
    assert_eq!(
        decs(&charge, &b),
        (
            d128(38, 6),
            vec![Some(1_065_900), Some(2_187_000), None, Some(-3_463_200)]
        )
    );
    // A product's scale past 38 cannot be typed.
    let fine = batch(vec![("x", dec(&[Some(1)], 30, 20))]);
    mismatch(&(col("x") * col("x")), &fine, &["scale 40"]);
}

#[test]
fn modulo_is_floored_and_null_for_a_zero_divisor() {
    let b = lineitems();
    // 1.10 % 0.05 = 0, 2.25 % 0.10 = 0.05, null, -3.33 % 0.00 = null.
    assert_eq!(
        decs(&(col("price") % col("disc")), &b),
        (d128(15, 2), vec![Some(0), Some(5), None, None])
    );
    // Floored: -3.33 % 1 = 0.67, 3.33 % -1 = -0.67 (the divisor's sign); (1 - 0) + 2 digits.
    assert_eq!(
        decs(&(col("price") % lit(1)), &b),
        (d128(3, 2), vec![Some(10), Some(25), None, Some(67)])
    );
    assert_eq!(
        decs(&(-col("price") % lit(-1)), &b),
        (d128(3, 2), vec![Some(-10), Some(-25), None, Some(-67)])
    );
    assert_eq!(
        decs(&(col("price") % 0), &b).1,
        vec![None, None, None, None]
    );
}

#[test]
fn negation_keeps_the_type() {
    let b = lineitems();
    assert_eq!(
        decs(&(-col("price")), &b),
        (d128(15, 2), vec![Some(-110), Some(-225), None, Some(333)])
    );
    let neg = -lit(Literal::decimal(150, 3, 2).unwrap());
    assert_eq!(neg, lit(Literal::decimal(-150, 3, 2).unwrap()));
}

#[test]
fn division_and_floats_give_float64() {
    let b = lineitems();
    let close = |got: Vec<Option<f64>>, want: [Option<f64>; 4]| {
        for (g, w) in got.iter().zip(want) {
            match (g, w) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12 || g == &w, "{g} vs {w}"),
                (g, w) => assert_eq!(*g, w),
            }
        }
    };
    close(
        floats(&(col("price") / col("disc")), &b),
        [Some(22.0), Some(22.5), None, Some(f64::NEG_INFINITY)],
    );
    close(
        floats(&(col("price") + 0.5), &b),
        [Some(1.6), Some(2.75), None, Some(-2.83)],
    );
    close(
        floats(&(col("price") * col("f")), &b),
        [Some(1.21), Some(4.5), None, Some(11.0889)],
    );
}

#[test]
fn overflow_is_an_error_not_a_wrap() {
    let big = 10i128.pow(38) - 1;
    let b = batch(vec![
        ("m", dec(&[Some(big), None], 38, 0)),
        ("n", dec(&[Some(10i128.pow(19)), Some(1)], 20, 0)),
    ]);
    let err = (col("m") + 1).evaluate(&b).unwrap_err();
    let FrameError::Overflow(message) = &err else {
        panic!("expected an overflow, got {err:?}");
    };
    assert!(message.contains("col(\"m\")"), "{message}");
    // Past the i128 range.
    assert!(matches!(
        (col("m") * col("m")).evaluate(&b),
        Err(FrameError::Overflow(_))
    ));
    // 10^19 * 10^19 = 10^38 fits an i128 but not 38 digits.
    assert_eq!(
        (col("n") * col("n")).data_type(b.schema_ref()).unwrap(),
        d128(38, 0)
    );
    assert!(matches!(
        (col("n") * col("n")).evaluate(&b),
        Err(FrameError::Overflow(_))
    ));
    // Widening to the result's scale overflows too.
    let scaled = batch(vec![
        ("m", dec(&[Some(big)], 38, 0)),
        ("c", dec(&[Some(1)], 2, 2)),
    ]);
    assert!(matches!(
        (col("m") % col("c")).evaluate(&scaled),
        Err(FrameError::Overflow(_))
    ));
}

#[test]
fn values_are_checked_only_where_the_exact_result_could_pass_38_digits() {
    use crate::expr::decimal::Dec;
    let d = |precision, scale| Dec { precision, scale };
    let money = d(15, 2);
    // TPC-H's price * (1 - discount): 15 + 15 + 1 digits at most.
    assert!(money.always_fits(BinaryOperator::Mul, money));
    assert!(money.always_fits(BinaryOperator::Sub, d(1, 0)));
    // Capped at 38: the overflow test above must still find its overflows.
    assert!(!d(20, 0).always_fits(BinaryOperator::Mul, d(20, 0)));
    assert!(!d(38, 0).always_fits(BinaryOperator::Add, d(1, 0)));
    // A remainder is smaller than its divisor (its widening is checked on its own).
    assert!(d(38, 0).always_fits(BinaryOperator::Mod, d(2, 2)));
}

#[test]
fn comparisons_with_constants_are_exact() {
    let b = lineitems();
    // A stored 0.05 equals the constant 0.05 (the float 0.05 is not exactly 5/100).
    assert_eq!(
        bools(&col("disc").between(0.05, 0.07), &b),
        [Some(true), Some(false), Some(true), Some(false)]
    );
    assert_eq!(
        bools(&col("disc").eq(0.05), &b),
        [Some(true), Some(false), Some(false), Some(false)]
    );
    // 0.055 has three decimals: compared at scale 3.
    assert_eq!(
        bools(&col("disc").gt(0.055), &b),
        [Some(false), Some(true), Some(true), Some(false)]
    );
    let qty = batch(vec![(
        "q",
        dec(&[Some(2399), Some(2400), Some(2401), None], 15, 2),
    )]);
    assert_eq!(
        bools(&col("q").lt(24), &qty),
        [Some(true), Some(false), Some(false), None]
    );
    assert_eq!(
        bools(&lit(24).gt(col("q")), &qty),
        [Some(true), Some(false), Some(false), None]
    );
    // An integer constant past the column's precision still compares exactly.
    assert_eq!(
        bools(&col("q").lt(1_000_000_000_000_000_i64), &qty),
        [Some(true), Some(true), Some(true), None]
    );
    // A decimal constant of another scale; NaN compares as a float (never true).
    let d = Literal::decimal(24_000, 5, 3).unwrap();
    assert_eq!(
        bools(&col("q").ge(lit(d)), &qty),
        [Some(false), Some(true), Some(true), None]
    );
    assert_eq!(
        bools(&col("q").lt(f64::NAN), &qty),
        [Some(false), Some(false), Some(false), None]
    );
    // An integer column against a decimal constant that is an integer, and one that is not.
    let two = Literal::decimal(200, 3, 2).unwrap();
    assert_eq!(
        bools(&col("qty").eq(lit(two)), &b),
        [Some(false), Some(true), Some(false), Some(false)]
    );
    let half = Literal::decimal(25, 2, 1).unwrap();
    assert_eq!(
        bools(&col("qty").gt(lit(half)), &b),
        [Some(false), Some(false), Some(true), Some(true)]
    );
}

#[test]
fn comparisons_of_columns_meet_at_the_larger_scale() {
    let b = lineitems();
    assert_eq!(
        bools(&col("price").eq(col("rate")), &b),
        [Some(true), Some(true), None, Some(true)]
    );
    assert_eq!(
        bools(&col("price").gt(col("qty")), &b),
        [Some(true), Some(true), None, Some(false)]
    );
    // A float column compares as floats: 1.10 as a float is 1.1.
    assert_eq!(
        bools(&col("price").eq(col("f")), &b),
        [Some(true), Some(false), None, Some(true)]
    );
    // 38 integer digits against 38 decimals: compared in a Decimal256(76, 38).
    let far = batch(vec![
        ("i", dec(&[Some(0), Some(1), Some(10i128.pow(37))], 38, 0)),
        (
            "d",
            dec(&[Some(0), Some(10i128.pow(38) - 1), Some(1)], 38, 38),
        ),
    ]);
    assert_eq!(
        bools(&col("i").gt(col("d")), &far),
        [Some(false), Some(true), Some(true)]
    );
    let wide = batch(vec![(
        "w",
        Arc::new(
            Decimal256Array::from(vec![i256::from_i128(5)])
                .with_precision_and_scale(60, 2)
                .unwrap(),
        ) as ArrayRef,
    )]);
    assert_eq!(bools(&col("w").eq(0.05), &wide), [Some(true)]);
    mismatch(&(col("w") + 1), &wide, &["precision 60"]);
    mismatch(&col("price").eq("abc"), &b, &["compare"]);
}

#[test]
fn fill_null_and_if_else_meet_in_a_common_type() {
    let b = lineitems();
    assert_eq!(
        decs(&col("price").fill_null(0), &b),
        (d128(15, 2), vec![Some(110), Some(225), Some(0), Some(-333)])
    );
    // 0.5 is exactly a Decimal(15, 2) value; 0.125 is not, so the column becomes floats.
    assert_eq!(decs(&col("price").fill_null(0.5), &b).1[2], Some(50));
    assert_eq!(floats(&col("price").fill_null(0.125), &b)[2], Some(0.125));
    assert_eq!(
        decs(&col("price").fill_null(col("rate")), &b),
        (
            d128(17, 4),
            vec![Some(11000), Some(22500), Some(10000), Some(-33300)]
        )
    );
    let pick = when(col("qty").gt(2))
        .then(col("price"))
        .otherwise(col("qty"));
    assert_eq!(
        decs(&pick, &b),
        (d128(15, 2), vec![Some(100), Some(200), None, Some(-333)])
    );
    let mixed = when(col("qty").gt(2))
        .then(col("price"))
        .otherwise(col("f"));
    assert_eq!(floats(&mixed, &b)[0], Some(1.1));
    let null = when(col("qty").gt(2))
        .then(col("price"))
        .otherwise(Literal::Null);
    assert_eq!(
        decs(&null, &b),
        (d128(15, 2), vec![None, None, None, Some(-333)])
    );
    assert_eq!(
        bools(&col("price").is_null(), &b),
        [Some(false), Some(false), Some(true), Some(false)]
    );
}

#[test]
fn casts_go_both_ways() {
    let b = lineitems();
    assert_eq!(
        floats(&col("price").cast(DataType::Float64), &b),
        [Some(1.1), Some(2.25), None, Some(-3.33)]
    );
    // Truncated toward zero, as Python's int(Decimal).
    assert_eq!(
        ints(&col("price").cast(DataType::Int64), &b),
        [Some(1), Some(2), None, Some(-3)]
    );
    let text = eval(&col("price").cast(DataType::Utf8), &b);
    let text: Vec<Option<&str>> = text.as_string::<i32>().iter().collect();
    assert_eq!(text, [Some("1.10"), Some("2.25"), None, Some("-3.33")]);
    assert_eq!(
        decs(&col("qty").cast(d128(5, 1)), &b),
        (d128(5, 1), vec![Some(10), Some(20), Some(30), Some(40)])
    );
    assert_eq!(
        decs(&col("f").cast(d128(6, 2)), &b),
        (d128(6, 2), vec![Some(110), Some(200), Some(0), Some(-333)])
    );
    assert_eq!(
        decs(&col("rate").cast(d128(15, 2)), &b).1,
        vec![Some(110), Some(225), Some(100), Some(-333)]
    );
    assert_eq!(decs(&lit(0.07).cast(d128(15, 2)), &b).1, vec![Some(7); 4]);
    let strings = batch(vec![(
        "s",
        Arc::new(StringArray::from(vec!["1.10", "-0.05"])) as ArrayRef,
    )]);
    assert_eq!(
        decs(&col("s").cast(d128(15, 2)), &strings).1,
        vec![Some(110), Some(-5)]
    );
    // A value that does not fit is an error, not null.
    assert!(col("price").cast(d128(2, 2)).evaluate(&b).is_err());
}

#[test]
fn decimal_constants_are_checked_and_printed() {
    assert!(matches!(
        Literal::decimal(1000, 3, 2),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(Literal::decimal(1, 0, 0).is_err());
    assert!(Literal::decimal(1, 39, 2).is_err());
    assert!(Literal::decimal(1, 2, 3).is_err());
    let bad = Literal::Decimal {
        value: 1000,
        precision: 3,
        scale: 2,
    };
    let b = lineitems();
    assert!(matches!(
        lit(bad.clone()).data_type(b.schema_ref()),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(lit(bad).evaluate(&b).is_err());
    let price = Literal::decimal(-150, 3, 2).unwrap();
    assert_eq!(price.to_string(), "decimal(\"-1.50\", 3)");
    let e = col("price").gt(lit(price.clone())).alias("x");
    assert_eq!(
        e.to_string(),
        "(col(\"price\") > decimal(\"-1.50\", 3)).alias(\"x\")"
    );
    let big = lit(Literal::decimal(-(10i128.pow(38) - 1), 38, 0).unwrap()) + col("price");
    let json = serde_json::to_string(&big).unwrap();
    assert_eq!(serde_json::from_str::<Expr>(&json).unwrap(), big);
}

#[test]
fn float_constants_read_as_their_shortest_spelling() {
    // (float, its unscaled value, precision and scale)
    type Spelled = Option<(i128, u8, i8)>;
    let cases: [(f64, Spelled); 7] = [
        (0.05, Some((5, 2, 2))),
        (-0.07, Some((-7, 2, 2))),
        (24.0, Some((24, 2, 0))),
        (1e21, Some((10i128.pow(21), 22, 0))),
        (0.1 + 0.2, Some((30_000_000_000_000_004, 17, 17))),
        (f64::INFINITY, None),
        (1e-40, None),
    ];
    for (v, want) in cases {
        let got = decimal::float_decimal(v).map(|(x, d)| (x, d.precision, d.scale));
        assert_eq!(got, want, "{v}");
    }
}

/// `+ - *` of random decimal columns and constants (nulls, mixed scales, precisions whose
/// results are and are not checked, values near the precision's limit) against the exact
/// result in `i256`: each value equal where it fits the result's precision, an overflow
/// error exactly where one does not.
#[test]
fn arithmetic_equals_exact_wide_arithmetic() {
    use crate::test_rng::Rng;
    let mut rng = Rng(0x5eed_dec1);
    let pow10 = |e: u8| i256::from_i128(10).wrapping_pow(u32::from(e));
    let ops = [
        BinaryOperator::Add,
        BinaryOperator::Sub,
        BinaryOperator::Mul,
    ];
    let types = [
        (15, 2),
        (16, 2),
        (12, 4),
        (20, 0),
        (19, 3),
        (30, 5),
        (1, 0),
        (38, 2),
    ];
    for round in 0..300 {
        let (lp, ls) = types[rng.below(types.len() as u64) as usize];
        let (rp, rs) = types[rng.below(types.len() as u64) as usize];
        let op = ops[round % 3];
        // Mostly small values; one in four near its precision's limit.
        let value = |rng: &mut Rng, p: u8| {
            let limit = 10i128.pow(u32::from(p)) - 1;
            let v = match rng.below(4) {
                0 => limit - (rng.below(3) as i128),
                _ => (rng.next() % 1_000_000) as i128 % (limit + 1),
            };
            if rng.below(2) == 0 {
                -v
            } else {
                v
            }
        };
        let n = 40;
        let lv: Vec<Option<i128>> = (0..n).map(|_| rng.maybe(7, |r| value(r, lp))).collect();
        let rv: Vec<Option<i128>> = (0..n).map(|_| rng.maybe(7, |r| value(r, rp))).collect();
        let right_constant = rng.below(3) == 0 && rv[0].is_some();
        let b = batch(vec![("l", dec(&lv, lp, ls)), ("r", dec(&rv, rp, rs))]);
        let r_expr = match (right_constant, rv[0]) {
            (true, Some(v)) => Expr::Literal(Literal::decimal(v, rp, rs).unwrap()),
            _ => col("r"),
        };
        let e = Expr::Binary {
            op,
            left: Box::new(col("l")),
            right: Box::new(r_expr),
        };
        let DataType::Decimal128(op_p, os) = e.data_type(b.schema_ref()).unwrap() else {
            panic!("{e} is not a Decimal128");
        };
        let exact: Vec<Option<i256>> = (0..n)
            .map(|i| {
                let r = if right_constant { rv[0] } else { rv[i] };
                let (a, c) = (i256::from_i128(lv[i]?), i256::from_i128(r?));
                let up = |v: i256, s: i8| v * pow10((os - s) as u8);
                Some(match op {
                    BinaryOperator::Add => up(a, ls) + up(c, rs),
                    BinaryOperator::Sub => up(a, ls) - up(c, rs),
                    _ => a * c,
                })
            })
            .collect();
        let fits = |v: &i256| v.wrapping_abs() < pow10(op_p);
        let context = format!("round {round}: {e} on ({lp},{ls}) and ({rp},{rs})");
        match e.evaluate(&b) {
            Ok(out) => {
                let got: Vec<Option<i256>> = out
                    .as_primitive::<Decimal128Type>()
                    .iter()
                    .map(|v| v.map(i256::from_i128))
                    .collect();
                assert_eq!(got, exact, "{context}");
                assert!(
                    exact.iter().flatten().all(fits),
                    "{context}: no overflow reported"
                );
            }
            Err(FrameError::Overflow(_)) => {
                assert!(
                    !exact.iter().flatten().all(fits),
                    "{context}: overflow reported"
                )
            }
            Err(err) => panic!("{context}: {err}"),
        }
    }
}
