//! Unit tests of decimal aggregation, against sums computed by hand (unscaled `i128`s).

use super::*;
use crate::expr::{col, lit};
use arrow::array::{Decimal128Array, Decimal256Array, Int64Array, StringArray};
use arrow::datatypes::{i256, Decimal128Type};

fn dec(values: &[Option<i128>], p: u8, s: i8) -> ArrayRef {
    Arc::new(
        Decimal128Array::from(values.to_vec())
            .with_precision_and_scale(p, s)
            .unwrap(),
    )
}

/// k: [a, b, a, c, b, a, c, null]; price, disc, tax: Decimal128(15, 2); charge: TPC-H's
/// `price * (1 - disc) * (1 + tax)`, a Decimal128(38, 6) computed by the expression.
fn lineitems() -> RecordBatch {
    let keys = ["a", "b", "a", "c", "b", "a", "c"].map(Some);
    let k: StringArray = keys.into_iter().chain([None]).collect();
    let price = [110, 225, 0, -333, 1000, 5, 777, 999].map(Some);
    let mut price = price.to_vec();
    price[2] = None;
    let batch = RecordBatch::try_from_iter(vec![
        ("k", Arc::new(k) as ArrayRef),
        ("price", dec(&price, 15, 2)),
        ("disc", dec(&[5, 10, 7, 0, 4, 2, 10, 1].map(Some), 15, 2)),
        ("tax", dec(&[2, 8, 0, 4, 6, 1, 3, 5].map(Some), 15, 2)),
    ])
    .unwrap();
    let charge = col("price") * (lit(1) - col("disc")) * (lit(1) + col("tax"));
    let charge = charge.evaluate(&batch).unwrap();
    let mut columns = batch.columns().to_vec();
    columns.push(charge);
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("charge", DataType::Decimal128(38, 6), true));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn agg(column: &str, func: AggFunc) -> AggSpec {
    AggSpec {
        column: column.to_string(),
        func,
        output: format!("{column}_{}", func.name()),
    }
}

/// `spec` over `batch` cut into chunks of `rows` rows: a partial per chunk, merged, finalized.
fn run(spec: &GroupBySpec, batch: &RecordBatch, rows: usize) -> FrameResult<RecordBatch> {
    let parts = (0..batch.num_rows())
        .step_by(rows)
        .map(|s| partial(spec, &batch.slice(s, rows.min(batch.num_rows() - s))))
        .collect::<FrameResult<Vec<_>>>()?;
    finalize(spec, &merge(spec, &parts)?)
}

fn unscaled(a: &ArrayRef) -> Vec<Option<i128>> {
    a.as_primitive::<Decimal128Type>().iter().collect()
}

fn floats(a: &ArrayRef) -> Vec<f64> {
    a.as_primitive::<Float64Type>().values().to_vec()
}

#[test]
fn sums_are_exact_per_group_in_any_chunking() {
    let b = lineitems();
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs: vec![agg("charge", AggFunc::Sum), agg("price", AggFunc::Sum)],
    };
    for rows in [8, 3, 1] {
        let out = run(&spec, &b, rows).unwrap();
        let keys: Vec<_> = out.column(0).as_string::<i32>().iter().collect();
        assert_eq!(keys, [Some("a"), Some("b"), Some("c")]);
        // a: 1.10 * 0.95 * 1.02 + 0.05 * 0.98 * 1.01 = 1.065900 + 0.049490 (row 2's price
        // is null); b: 2.187000 + 10.176000; c: -3.463200 + 7.202790.
        assert_eq!(out.column(1).data_type(), &DataType::Decimal128(38, 6));
        assert_eq!(
            unscaled(out.column(1)),
            [Some(1_115_390), Some(12_363_000), Some(3_739_590)]
        );
        assert_eq!(out.column(2).data_type(), &DataType::Decimal128(38, 2));
        assert_eq!(unscaled(out.column(2)), [Some(115), Some(1225), Some(444)]);
    }
    // Without keys every row counts, the null key's too: + 9.99 * 0.99 * 1.05.
    let total = GroupBySpec {
        keys: vec![],
        aggs: vec![agg("charge", AggFunc::Sum)],
    };
    for rows in [8, 5] {
        let out = run(&total, &b, rows).unwrap();
        assert_eq!(unscaled(out.column(0)), [Some(27_602_585)]);
    }
}

#[test]
fn other_aggregations_of_decimals() {
    let b = lineitems();
    let funcs = [
        AggFunc::Mean,
        AggFunc::Min,
        AggFunc::Max,
        AggFunc::First,
        AggFunc::Last,
        AggFunc::Count,
        AggFunc::Var,
    ];
    let mut aggs: Vec<AggSpec> = funcs.iter().map(|&f| agg("price", f)).collect();
    aggs.push(agg("disc", AggFunc::NUnique));
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs,
    };
    let schema = spec.output_schema(b.schema_ref()).unwrap();
    let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
    let price = DataType::Decimal128(15, 2);
    assert_eq!(
        types,
        [
            &DataType::Utf8,
            &DataType::Float64,
            &price,
            &price,
            &price,
            &price,
            &DataType::Int64,
            &DataType::Float64,
            &DataType::Int64
        ]
    );
    for rows in [8, 2, 1] {
        let out = run(&spec, &b, rows).unwrap();
        assert_eq!(out.schema().as_ref(), &schema);
        // a: 1.10, null, 0.05; b: 2.25, 10.00; c: -3.33, 7.77.
        assert_eq!(floats(out.column(1)), [0.575, 6.125, 2.22]);
        assert_eq!(unscaled(out.column(2)), [Some(5), Some(225), Some(-333)]);
        assert_eq!(unscaled(out.column(3)), [Some(110), Some(1000), Some(777)]);
        assert_eq!(unscaled(out.column(4)), [Some(110), Some(225), Some(-333)]);
        assert_eq!(unscaled(out.column(5)), [Some(5), Some(1000), Some(777)]);
        let counts: Vec<i64> = out.column(6).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(counts, [2, 2, 2]);
        // Two values x, y: the sample variance is (x - y)^2 / 2.
        for (got, want) in floats(out.column(7))
            .iter()
            .zip([0.55125, 30.03125, 61.605])
        {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
        let distinct: Vec<i64> = out.column(8).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(distinct, [3, 2, 2]);
    }
}

#[test]
fn decimals_are_keys() {
    let b = lineitems();
    // A narrow decimal keys as its unscaled i64, a wide one as its text: the same groups.
    let wide = cast(b.column(2), &DataType::Decimal128(25, 2)).unwrap();
    let b = RecordBatch::try_from_iter(vec![
        ("disc", b.column(2).clone()),
        ("wide", wide),
        ("price", b.column(1).clone()),
    ])
    .unwrap();
    for (key, dt) in [
        ("disc", DataType::Decimal128(15, 2)),
        ("wide", DataType::Decimal128(25, 2)),
    ] {
        let spec = GroupBySpec {
            keys: vec![key.into()],
            aggs: vec![agg("price", AggFunc::Sum)],
        };
        for rows in [8, 3] {
            let out = run(&spec, &b, rows).unwrap();
            assert_eq!(out.column(0).data_type(), &dt);
            assert_eq!(
                unscaled(out.column(0)),
                [5, 10, 7, 0, 4, 2, 1].map(Some),
                "{key}"
            );
            // 0.10 holds 2.25 and 7.77; 0.07 a null price.
            assert_eq!(
                unscaled(out.column(1)),
                [110, 1002, 0, -333, 1000, 5, 999].map(Some),
                "{key}"
            );
        }
    }
}

#[test]
fn a_sum_past_38_digits_is_an_overflow() {
    let near = 10i128.pow(38) - 1;
    let b = RecordBatch::try_from_iter(vec![
        ("k", Arc::new(Int64Array::from(vec![1, 1, 2])) as ArrayRef),
        ("x", dec(&[Some(near), Some(1), Some(5)], 38, 0)),
    ])
    .unwrap();
    for keys in [vec![], vec!["k".to_string()]] {
        let spec = GroupBySpec {
            keys,
            aggs: vec![agg("x", AggFunc::Sum)],
        };
        // In one chunk, and across the merge of two.
        for rows in [3, 1] {
            let err = run(&spec, &b, rows).unwrap_err();
            assert!(matches!(err, FrameError::Overflow(_)), "{err:?}");
        }
    }
    // Past the i128 range within a chunk.
    let far =
        RecordBatch::try_from_iter(vec![("x", dec(&[Some(near), Some(near)], 38, 0))]).unwrap();
    let spec = GroupBySpec {
        keys: vec![],
        aggs: vec![agg("x", AggFunc::Sum)],
    };
    assert!(matches!(partial(&spec, &far), Err(FrameError::Overflow(_))));
}

/// Many rows in few groups, in runs (as sorted keys give): the sums (added in lanes) equal
/// sums by hand in every chunking, and a group whose sum passes the `i128` range is an
/// overflow there too.
#[test]
fn sums_of_runs_in_few_groups_are_exact() {
    let mut rng = crate::test_rng::Rng(42);
    let n = 5000;
    let keys: Vec<i64> = (0..n).map(|i| (i / 37 % 5) as i64).collect();
    let values: Vec<i128> = (0..n)
        .map(|_| (rng.next() % 2_000_000_000_000) as i128 - 1_000_000_000_000)
        .collect();
    let b = RecordBatch::try_from_iter(vec![
        ("k", Arc::new(Int64Array::from(keys.clone())) as ArrayRef),
        (
            "x",
            dec(&values.iter().map(|&v| Some(v)).collect::<Vec<_>>(), 15, 2),
        ),
    ])
    .unwrap();
    let mut expected = [0i128; 5];
    for (&k, &v) in keys.iter().zip(&values) {
        expected[k as usize] += v;
    }
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs: vec![agg("x", AggFunc::Sum)],
    };
    for rows in [n, 1000, 333] {
        let out = run(&spec, &b, rows).unwrap();
        let got: Vec<(i64, Option<i128>)> = out
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>()
            .values()
            .iter()
            .copied()
            .zip(unscaled(out.column(1)))
            .collect();
        let want: Vec<(i64, Option<i128>)> =
            (0..5).map(|k| (k, Some(expected[k as usize]))).collect();
        assert_eq!(got, want, "chunks of {rows} rows");
    }
    let near = 10i128.pow(38) - 1;
    let far = RecordBatch::try_from_iter(vec![
        ("k", Arc::new(Int64Array::from(vec![0i64; 64])) as ArrayRef),
        ("x", dec(&[Some(near); 64], 38, 0)),
    ])
    .unwrap();
    assert!(matches!(partial(&spec, &far), Err(FrameError::Overflow(_))));
}

#[test]
fn wide_decimals_are_refused_for_sums() {
    let b = RecordBatch::try_from_iter(vec![(
        "w",
        Arc::new(
            Decimal256Array::from(vec![i256::from_i128(5)])
                .with_precision_and_scale(60, 2)
                .unwrap(),
        ) as ArrayRef,
    )])
    .unwrap();
    for func in [AggFunc::Sum, AggFunc::Mean] {
        let spec = GroupBySpec {
            keys: vec![],
            aggs: vec![agg("w", func)],
        };
        assert!(matches!(
            spec.output_schema(b.schema_ref()),
            Err(FrameError::TypeMismatch(_))
        ));
    }
    // Its extremes keep the type.
    let spec = GroupBySpec {
        keys: vec![],
        aggs: vec![agg("w", AggFunc::Max)],
    };
    let out = run(&spec, &b, 1).unwrap();
    assert_eq!(out.column(0).data_type(), &DataType::Decimal256(60, 2));
}
