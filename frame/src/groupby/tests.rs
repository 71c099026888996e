//! Unit tests of the groupby kernels.

use super::*;
use arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
use arrow::datatypes::Int32Type;
use std::collections::HashMap;

use crate::test_rng::Rng;

/// A cell of a table, for the naive implementation and for comparing results.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum Val {
    Null,
    I(i64),
    F(f64),
    S(String),
    B(bool),
}

impl Val {
    fn is_null(&self) -> bool {
        matches!(self, Val::Null) || matches!(self, Val::F(f) if f.is_nan())
    }
    fn num(&self) -> f64 {
        match self {
            Val::I(i) => *i as f64,
            Val::F(f) => *f,
            Val::B(b) => f64::from(u8::from(*b)),
            _ => f64::NAN,
        }
    }
    /// A hashable identity of the value.
    fn id(&self) -> String {
        match self {
            Val::F(f) => format!("F{}", f.to_bits()),
            other => format!("{other:?}"),
        }
    }
}

/// The value of row `i` of `a`.
fn val_at(a: &ArrayRef, i: usize) -> Val {
    if a.is_null(i) {
        return Val::Null;
    }
    match a.data_type() {
        DataType::Int64 => Val::I(a.as_primitive::<Int64Type>().value(i)),
        DataType::Int32 => Val::I(a.as_primitive::<Int32Type>().value(i).into()),
        DataType::Float64 => Val::F(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => Val::B(a.as_boolean().value(i)),
        DataType::Utf8 => Val::S(a.as_string::<i32>().value(i).to_string()),
        _ => val_at(&cast(a, &DataType::Utf8).unwrap(), i),
    }
}

fn close(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::F(x), Val::F(y)) => {
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0) || (x.is_nan() && y.is_nan())
        }
        _ => a == b,
    }
}

/// pandas' result of `func` over one group's values (`int_sum`: the sum is an integer).
fn naive_agg(func: AggFunc, values: &[Val], int_sum: bool) -> Val {
    let present: Vec<&Val> = values.iter().filter(|v| !v.is_null()).collect();
    let n = present.len();
    let mean = present.iter().map(|v| v.num()).sum::<f64>() / n as f64;
    let var = present
        .iter()
        .map(|v| (v.num() - mean).powi(2))
        .sum::<f64>()
        / (n as f64 - 1.0);
    let extreme = |max: bool| {
        present
            .iter()
            .copied()
            .fold(None::<&Val>, |best, v| match best {
                Some(b) if (max && v <= b) || (!max && v >= b) => Some(b),
                _ => Some(v),
            })
            .cloned()
            .unwrap_or(Val::Null)
    };
    match func {
        AggFunc::Sum if int_sum => Val::I(present.iter().map(|v| v.num() as i64).sum()),
        AggFunc::Sum => Val::F(present.iter().map(|v| v.num()).sum()),
        AggFunc::Mean if n == 0 => Val::Null,
        AggFunc::Mean => Val::F(mean),
        AggFunc::Min => extreme(false),
        AggFunc::Max => extreme(true),
        AggFunc::Count => Val::I(n as i64),
        AggFunc::Size => Val::I(values.len() as i64),
        AggFunc::Var | AggFunc::Std if n < 2 => Val::Null,
        AggFunc::Var => Val::F(var),
        AggFunc::Std => Val::F(var.sqrt()),
        AggFunc::First => present.first().map_or(Val::Null, |v| (*v).clone()),
        AggFunc::Last => present.last().map_or(Val::Null, |v| (*v).clone()),
        AggFunc::FirstRow => values.first().map_or(Val::Null, |v| (*v).clone()),
        AggFunc::NUnique => {
            Val::I(present.iter().map(|v| v.id()).collect::<HashSet<_>>().len() as i64)
        }
    }
}

/// pandas' groupby over the rows of `batch`, as rows of values.
fn naive(spec: &GroupBySpec, batch: &RecordBatch) -> Vec<Vec<Val>> {
    let col = |name: &str| batch.column(column_index(batch.schema_ref(), name).unwrap());
    let mut order: Vec<Vec<Val>> = Vec::new();
    let mut groups: HashMap<Vec<String>, Vec<usize>> = HashMap::new();
    for i in 0..batch.num_rows() {
        let key: Vec<Val> = spec.keys.iter().map(|k| val_at(col(k), i)).collect();
        if key.iter().any(|v| v.is_null()) {
            continue;
        }
        let id: Vec<String> = key.iter().map(|v| v.id()).collect();
        if !groups.contains_key(&id) {
            order.push(key);
        }
        groups.entry(id).or_default().push(i);
    }
    if spec.keys.is_empty() {
        order = vec![vec![]];
        groups.insert(vec![], (0..batch.num_rows()).collect());
    }
    order
        .into_iter()
        .map(|key| {
            let rows = &groups[&key.iter().map(|v| v.id()).collect::<Vec<_>>()];
            let mut out = key.clone();
            for agg in &spec.aggs {
                let values: Vec<Val> = match agg.func {
                    AggFunc::Size => rows.iter().map(|_| Val::Null).collect(),
                    _ => rows.iter().map(|&i| val_at(col(&agg.column), i)).collect(),
                };
                let dt = col(&agg.column).data_type();
                out.push(naive_agg(agg.func, &values, !dt.is_floating()));
            }
            out
        })
        .collect()
}

fn assert_same(got: &RecordBatch, want: &[Vec<Val>], what: &str) {
    assert_eq!(got.num_rows(), want.len(), "{what}: rows");
    for (i, row) in want.iter().enumerate() {
        for (j, w) in row.iter().enumerate() {
            let g = val_at(got.column(j), i);
            assert!(
                close(&g, w),
                "{what}: row {i} column {j}: got {g:?}, want {w:?}"
            );
        }
    }
}

fn dict(values: Vec<Option<String>>) -> ArrayRef {
    let strings = StringArray::from(values);
    Arc::new(
        cast(
            &strings,
            &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        )
        .unwrap(),
    )
}

fn random_batch(rng: &mut Rng, n: usize) -> RecordBatch {
    let k_int: Int64Array = (0..n)
        .map(|_| rng.maybe(10, |r| r.below(6) as i64 - 2))
        .collect();
    let k_str: Vec<Option<String>> = (0..n)
        .map(|_| rng.maybe(10, |r| format!("k{}", r.below(5))))
        .collect();
    let k_dict = dict(
        (0..n)
            .map(|_| rng.maybe(12, |r| format!("d{}", r.below(4))))
            .collect(),
    );
    let k_f: Float64Array = (0..n)
        .map(|_| {
            rng.maybe(10, |r| match r.below(8) {
                0 => f64::NAN,
                x => x as f64 * 0.5 - 1.0,
            })
        })
        .collect();
    let v_int: Int64Array = (0..n)
        .map(|_| rng.maybe(4, |r| r.below(100) as i64 - 50))
        .collect();
    let v_i32: Int32Array = (0..n)
        .map(|_| rng.maybe(4, |r| r.below(7) as i32))
        .collect();
    let v_f: Float64Array = (0..n)
        .map(|_| {
            rng.maybe(4, |r| match r.below(20) {
                0 => f64::NAN,
                x => (x as f64 - 10.0) * 1.25 + 1e6,
            })
        })
        .collect();
    let v_str: Vec<Option<String>> = (0..n)
        .map(|_| rng.maybe(3, |r| format!("s{}", r.below(9))))
        .collect();
    let v_bool: BooleanArray = (0..n).map(|_| rng.maybe(3, |r| r.below(2) == 0)).collect();
    let v_dict = dict(
        (0..n)
            .map(|_| rng.maybe(3, |r| format!("v{}", r.below(6))))
            .collect(),
    );
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("k_int", Arc::new(k_int)),
        ("k_str", Arc::new(StringArray::from(k_str))),
        ("k_dict", k_dict),
        ("k_f", Arc::new(k_f)),
        ("v_int", Arc::new(v_int)),
        ("v_i32", Arc::new(v_i32)),
        ("v_f", Arc::new(v_f)),
        ("v_str", Arc::new(StringArray::from(v_str))),
        ("v_bool", Arc::new(v_bool)),
        ("v_dict", v_dict),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

const ALL: [AggFunc; 12] = [
    AggFunc::Sum,
    AggFunc::Mean,
    AggFunc::Min,
    AggFunc::Max,
    AggFunc::Count,
    AggFunc::Size,
    AggFunc::Std,
    AggFunc::Var,
    AggFunc::First,
    AggFunc::Last,
    AggFunc::FirstRow,
    AggFunc::NUnique,
];

/// Every aggregation that applies to each value column.
fn all_aggs() -> Vec<AggSpec> {
    let mut aggs = Vec::new();
    for column in ["v_int", "v_i32", "v_f", "v_str", "v_bool", "v_dict"] {
        for func in ALL {
            let numeric = !matches!(column, "v_str" | "v_dict");
            if !numeric
                && matches!(
                    func,
                    AggFunc::Sum | AggFunc::Mean | AggFunc::Std | AggFunc::Var
                )
            {
                continue;
            }
            aggs.push(AggSpec {
                column: column.to_string(),
                func,
                output: format!("{column}_{}", func.name()),
            });
        }
    }
    aggs
}

fn spec(keys: &[&str]) -> GroupBySpec {
    GroupBySpec {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        aggs: all_aggs(),
    }
}

const KEY_SETS: [&[&str]; 7] = [
    &[],
    &["k_int"],
    &["k_str"],
    &["k_dict"],
    &["k_f"],
    &["k_int", "k_str"],
    &["k_dict", "k_int", "k_str"],
];

/// One partial over the whole table, finalized, against the naive groupby; the schemas
/// match `output_schema` and `partial_schema`.
#[test]
fn whole_table_matches_naive() {
    let mut rng = Rng(1);
    for n in [1, 7, 300] {
        let batch = random_batch(&mut rng, n);
        for keys in KEY_SETS {
            let spec = spec(keys);
            let p = partial(&spec, &batch).unwrap();
            assert_eq!(
                p.schema().as_ref(),
                &spec.partial_schema(batch.schema_ref()).unwrap()
            );
            let out = finalize(&spec, &p).unwrap();
            assert_eq!(
                out.schema().as_ref(),
                &spec.output_schema(batch.schema_ref()).unwrap()
            );
            assert_same(&out, &naive(&spec, &batch), &format!("{keys:?} n={n}"));
        }
    }
    // Without keys, rows go through in blocks: several blocks and a partial one.
    let batch = random_batch(&mut rng, 2 * BLOCK_ROWS + 5);
    let spec = GroupBySpec {
        keys: Vec::new(),
        aggs: all_aggs()
            .into_iter()
            .filter(|a| matches!(a.column.as_str(), "v_int" | "v_f" | "v_str"))
            .collect(),
    };
    let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
    assert_same(&out, &naive(&spec, &batch), "no keys, blocks");
}

/// Null-free columns with many rows per group take the laned sum: sorted runs of keys
/// and random keys, a length not a multiple of the lane count, against sums by hand
/// (values are multiples of 1/4, so float sums are exact in any order).
#[test]
fn laned_sums_match_sequential_sums() {
    let mut rng = Rng(3);
    let n = 1003;
    for sorted in [true, false] {
        let keys: Vec<i64> = (0..n)
            .map(|i| if sorted { i / 50 } else { rng.below(7) as i64 })
            .collect();
        let ints: Vec<i64> = (0..n).map(|_| rng.below(1000) as i64 - 500).collect();
        let floats: Vec<f64> = ints.iter().map(|&v| v as f64 * 0.25).collect();
        let mut want: std::collections::BTreeMap<i64, (i64, f64, i64)> = Default::default();
        for ((&k, &i), &f) in keys.iter().zip(&ints).zip(&floats) {
            let e = want.entry(k).or_default();
            e.0 += i;
            e.1 += f;
            e.2 += 1;
        }
        let batch = RecordBatch::try_from_iter(vec![
            ("k", Arc::new(Int64Array::from(keys)) as ArrayRef),
            ("i", Arc::new(Int64Array::from(ints))),
            ("f", Arc::new(Float64Array::from(floats))),
        ])
        .unwrap();
        let spec = GroupBySpec {
            keys: vec!["k".into()],
            aggs: vec![agg("i", AggFunc::Sum), agg("f", AggFunc::Mean)],
        };
        let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
        let mut got = std::collections::BTreeMap::new();
        for r in 0..out.num_rows() {
            let k = out.column(0).as_primitive::<Int64Type>().value(r);
            let i = out.column(1).as_primitive::<Int64Type>().value(r);
            let m = out.column(2).as_primitive::<Float64Type>().value(r);
            got.insert(k, (i, m));
        }
        let want: std::collections::BTreeMap<i64, (i64, f64)> = want
            .into_iter()
            .map(|(k, (i, f, c))| (k, (i, f / c as f64)))
            .collect();
        assert_eq!(got, want, "sorted keys: {sorted}");
    }
}

/// Partials of any split of the rows, merged flat or as a tree, give the partial of the
/// whole (first/last across chunks included).
#[test]
fn merge_of_any_split_matches_naive() {
    let mut rng = Rng(2);
    for round in 0..6 {
        let n = 400;
        let batch = random_batch(&mut rng, n);
        let mut cuts: Vec<usize> = (0..round + 1)
            .map(|_| rng.below(n as u64) as usize)
            .collect();
        cuts.extend([0, n]);
        cuts.sort();
        for keys in KEY_SETS {
            let spec = spec(keys);
            let parts: Vec<RecordBatch> = cuts
                .windows(2)
                .map(|w| partial(&spec, &batch.slice(w[0], w[1] - w[0])).unwrap())
                .collect();
            let want = naive(&spec, &batch);
            let flat = merge(&spec, &parts).unwrap();
            assert_same(
                &finalize(&spec, &flat).unwrap(),
                &want,
                &format!("flat {keys:?}"),
            );
            let half = parts.len() / 2;
            let tree = [
                merge(&spec, &parts[..half.max(1)]).unwrap(),
                merge(&spec, &parts[half.max(1)..]).unwrap_or_else(|_| parts[0].slice(0, 0)),
            ];
            let tree = merge(&spec, &tree).unwrap();
            assert_same(
                &finalize(&spec, &tree).unwrap(),
                &want,
                &format!("tree {keys:?}"),
            );
        }
    }
}

#[test]
fn empty_batches() {
    let batch = random_batch(&mut Rng(3), 0);
    for keys in KEY_SETS {
        let spec = spec(keys);
        let p = partial(&spec, &batch).unwrap();
        let merged = merge(&spec, &[p.clone(), p]).unwrap();
        let out = finalize(&spec, &merged).unwrap();
        assert_same(&out, &naive(&spec, &batch), &format!("{keys:?}"));
        assert_eq!(out.num_rows(), usize::from(keys.is_empty()));
    }
    // Zero keys and zero aggregations: still one row.
    let spec = GroupBySpec {
        keys: vec![],
        aggs: vec![],
    };
    let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
    assert_eq!((out.num_rows(), out.num_columns()), (1, 0));
}

fn agg(column: &str, func: AggFunc) -> AggSpec {
    AggSpec {
        column: column.to_string(),
        func,
        output: func.name().to_string(),
    }
}

/// Hand-computed values: an all-null group, a one-value group, wrapping, NaN skipped.
#[test]
fn hand_computed_groups() {
    let k: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a"),
        Some("b"),
        Some("a"),
        None,
        Some("c"),
        Some("c"),
        Some("a"),
    ]));
    let v: ArrayRef = Arc::new(Float64Array::from(vec![
        None,
        Some(2.0),
        None,
        Some(100.0),
        Some(1.0),
        Some(f64::NAN),
        None,
    ]));
    let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
    let funcs = [
        AggFunc::Sum,
        AggFunc::Mean,
        AggFunc::Var,
        AggFunc::Std,
        AggFunc::Count,
        AggFunc::Size,
        AggFunc::Min,
        AggFunc::NUnique,
    ];
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs: funcs.iter().map(|&f| agg("v", f)).collect(),
    };
    let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
    use Val::*;
    let want = vec![
        vec![
            S("a".into()),
            F(0.0),
            Null,
            Null,
            Null,
            I(0),
            I(3),
            Null,
            I(0),
        ],
        vec![
            S("b".into()),
            F(2.0),
            F(2.0),
            Null,
            Null,
            I(1),
            I(1),
            F(2.0),
            I(1),
        ],
        vec![
            S("c".into()),
            F(1.0),
            F(1.0),
            Null,
            Null,
            I(1),
            I(2),
            F(1.0),
            I(1),
        ],
    ];
    assert_same(&out, &want, "hand");

    let v: ArrayRef = Arc::new(Int64Array::from(vec![i64::MAX, 1, 2, 4]));
    let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 2, 2]));
    let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs: vec![
            agg("v", AggFunc::Sum),
            agg("v", AggFunc::Var),
            agg("v", AggFunc::Std),
        ],
    };
    let out = finalize(&spec, &partial(&spec, &batch).unwrap()).unwrap();
    assert_same(
        &out,
        &[
            vec![
                I(1),
                I(i64::MIN),
                F(4.253529586511731e37),
                F(6.521908912666392e18),
            ],
            vec![I(2), I(6), F(2.0), F(2f64.sqrt())],
        ],
        "wrap",
    );
}

/// Var of values with a large mean and a tiny spread, merged from many partials: the
/// states keep it exact where sum-of-squares would not.
#[test]
fn var_is_numerically_stable() {
    let values: Vec<f64> = (0..1000).map(|i| 1e9 + (i % 10) as f64).collect();
    let v: ArrayRef = Arc::new(Float64Array::from(values.clone()));
    let batch = RecordBatch::try_from_iter([("v", v)]).unwrap();
    let spec = GroupBySpec {
        keys: vec![],
        aggs: vec![agg("v", AggFunc::Var)],
    };
    let parts: Vec<RecordBatch> = (0..10)
        .map(|i| partial(&spec, &batch.slice(i * 100, 100)).unwrap())
        .collect();
    let out = finalize(&spec, &merge(&spec, &parts).unwrap()).unwrap();
    let mean = values.iter().sum::<f64>() / 1000.0;
    let want = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 999.0;
    let got = out.column(0).as_primitive::<Float64Type>().value(0);
    assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
}

#[test]
fn typed_errors() {
    let batch = random_batch(&mut Rng(4), 10);
    let schema = batch.schema();
    let bad = |spec: GroupBySpec| {
        let e = spec.output_schema(&schema).unwrap_err();
        assert_eq!(partial(&spec, &batch).unwrap_err(), e);
        e
    };
    let e = bad(GroupBySpec {
        keys: vec!["nope".into()],
        aggs: vec![],
    });
    assert!(matches!(e, FrameError::ColumnNotFound { name, .. } if name == "nope"));
    let e = bad(GroupBySpec {
        keys: vec![],
        aggs: vec![agg("missing", AggFunc::Sum)],
    });
    assert!(matches!(e, FrameError::ColumnNotFound { .. }));
    for f in [AggFunc::Sum, AggFunc::Mean, AggFunc::Std, AggFunc::Var] {
        let e = bad(GroupBySpec {
            keys: vec![],
            aggs: vec![agg("v_str", f)],
        });
        assert!(matches!(e, FrameError::TypeMismatch(_)), "{f:?}");
    }
    let e = bad(GroupBySpec {
        keys: vec!["k_int".into()],
        aggs: vec![agg("v_int", AggFunc::Sum), agg("v_f", AggFunc::Sum)],
    });
    assert!(matches!(e, FrameError::InvalidArgument(_)));
    let e = bad(GroupBySpec {
        keys: vec!["k_int".into()],
        aggs: vec![AggSpec {
            column: "v_int".into(),
            func: AggFunc::Sum,
            output: "k_int".into(),
        }],
    });
    assert!(matches!(e, FrameError::InvalidArgument(_)));
    // Size ignores its column.
    let size = GroupBySpec {
        keys: vec![],
        aggs: vec![agg("whatever", AggFunc::Size)],
    };
    assert_eq!(
        finalize(&size, &partial(&size, &batch).unwrap())
            .unwrap()
            .column(0)
            .as_primitive::<Int64Type>()
            .value(0),
        10
    );
    // merge and finalize check the partial tables.
    let spec = spec(&["k_int"]);
    assert!(matches!(
        merge(&spec, &[]),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(matches!(
        finalize(&spec, &batch),
        Err(FrameError::InvalidArgument(_))
    ));
    let other = partial(&self::spec(&["k_str"]), &batch).unwrap();
    assert!(merge(&spec, &[partial(&spec, &batch).unwrap(), other]).is_err());
}

#[test]
fn names() {
    let names: Vec<&str> = ALL.iter().map(|f| f.name()).collect();
    assert_eq!(
        names,
        [
            "sum",
            "mean",
            "min",
            "max",
            "count",
            "size",
            "std",
            "var",
            "first",
            "last",
            "first_row",
            "nunique"
        ]
    );
}
