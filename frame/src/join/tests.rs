//! Tests of hash joins: every `how` against hand-computed rows and, on random tables,
//! against nested loops; key encodings, schemas and errors.

use super::super::partition::hash_partition;
use super::*;
use arrow::array::{
    DictionaryArray, Float64Array, Int32Array, Int64Array, LargeStringArray, StringArray,
    UInt64Array,
};
use arrow::datatypes::Int32Type;
use arrow::util::display::{ArrayFormatter, FormatOptions};

pub(super) fn ints(v: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(v.to_vec()))
}

pub(super) fn strs(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

pub(super) fn table(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = cols.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// Keys of other encodings and widths on each side: a left of Utf8 `k` and Int64 `n` (four
/// rows, one `k` null), a right of dictionary-encoded `k` and Int32 `n` (three rows, one
/// `k` null).
pub(super) fn mixed_key_tables() -> (RecordBatch, RecordBatch) {
    let left = table(vec![
        ("k", strs(&[Some("x"), Some("y"), None, Some("w")])),
        ("n", ints(&[Some(1), Some(2), Some(3), Some(4)])),
    ]);
    let dict: ArrayRef = Arc::new(
        vec![Some("y"), Some("z"), None]
            .into_iter()
            .collect::<arrow::array::DictionaryArray<Int32Type>>(),
    );
    let narrow: ArrayRef = Arc::new(arrow::array::Int32Array::from(vec![
        Some(2),
        Some(9),
        Some(1),
    ]));
    (left, table(vec![("k", dict), ("n", narrow)]))
}

pub(super) fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(super) fn spec(l: &[&str], r: &[&str], how: JoinHow) -> JoinSpec {
    JoinSpec::new(names(l), names(r), how)
}

fn fmt(a: &ArrayRef, i: usize) -> String {
    let options = FormatOptions::default().with_null("∅");
    ArrayFormatter::try_new(a.as_ref(), &options)
        .unwrap()
        .value(i)
        .to_string()
}

/// Each row as "v1,v2,..." (null as ∅).
pub(super) fn rows(b: &RecordBatch) -> Vec<String> {
    (0..b.num_rows())
        .map(|i| {
            let vals: Vec<String> = b.columns().iter().map(|c| fmt(c, i)).collect();
            vals.join(",")
        })
        .collect()
}

pub(super) fn col_names(b: &RecordBatch) -> Vec<String> {
    b.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

pub(super) fn dup_tables() -> (RecordBatch, RecordBatch) {
    let left = table(vec![
        ("k", ints(&[Some(1), Some(2), Some(2), Some(3), None])),
        (
            "a",
            strs(&[Some("a0"), Some("a1"), Some("a2"), Some("a3"), Some("a4")]),
        ),
    ]);
    let right = table(vec![
        ("k", ints(&[Some(2), Some(4), Some(2), None, Some(1), None])),
        (
            "b",
            ints(&[Some(10), Some(11), Some(12), Some(13), Some(14), Some(15)]),
        ),
    ]);
    (left, right)
}

#[test]
fn duplicates_and_null_keys_every_how() {
    let (left, right) = dup_tables();
    let run = |how| hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap();
    let inner = [
        "1,a0,14",
        "2,a1,10",
        "2,a1,12",
        "2,a2,10",
        "2,a2,12",
        "∅,a4,13",
        "∅,a4,15",
    ];
    assert_eq!(rows(&run(JoinHow::Inner)), inner);
    let left_rows = [
        "1,a0,14",
        "2,a1,10",
        "2,a1,12",
        "2,a2,10",
        "2,a2,12",
        "3,a3,∅",
        "∅,a4,13",
        "∅,a4,15",
    ];
    assert_eq!(rows(&run(JoinHow::Left)), left_rows);
    let right_rows = [
        "2,a1,10",
        "2,a2,10",
        "4,∅,11",
        "2,a1,12",
        "2,a2,12",
        "∅,a4,13",
        "1,a0,14",
        "∅,a4,15",
    ];
    assert_eq!(rows(&run(JoinHow::Right)), right_rows);
    let mut outer = left_rows.to_vec();
    outer.push("4,∅,11");
    let out = run(JoinHow::Outer);
    assert_eq!(rows(&out), outer);
    assert_eq!(col_names(&out), ["k", "a", "b"]);
}

#[test]
fn unique_right_keys() {
    let left = table(vec![
        (
            "k",
            strs(&[Some("x"), Some("y"), Some("q"), Some("x"), None]),
        ),
        ("v", ints(&[Some(1), Some(2), Some(3), Some(4), Some(5)])),
    ]);
    let right = table(vec![
        ("k", strs(&[Some("y"), Some("x"), Some("z")])),
        ("w", ints(&[Some(20), Some(10), Some(30)])),
    ]);
    let run = |how| rows(&hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap());
    assert_eq!(run(JoinHow::Inner), ["x,1,10", "y,2,20", "x,4,10"]);
    assert_eq!(
        run(JoinHow::Left),
        ["x,1,10", "y,2,20", "q,3,∅", "x,4,10", "∅,5,∅"]
    );
    assert_eq!(
        run(JoinHow::Right),
        ["y,2,20", "x,1,10", "x,4,10", "z,∅,30"]
    );
    assert_eq!(
        run(JoinHow::Outer),
        ["x,1,10", "y,2,20", "q,3,∅", "x,4,10", "∅,5,∅", "z,∅,30"]
    );
}

#[test]
fn no_matches() {
    let left = table(vec![
        ("k", ints(&[Some(1), Some(2)])),
        ("a", ints(&[Some(7), None])),
    ]);
    let right = table(vec![("k", ints(&[Some(3)])), ("b", ints(&[Some(9)]))]);
    let run = |how| rows(&hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap());
    assert!(run(JoinHow::Inner).is_empty());
    assert_eq!(run(JoinHow::Left), ["1,7,∅", "2,∅,∅"]);
    assert_eq!(run(JoinHow::Right), ["3,∅,9"]);
    assert_eq!(run(JoinHow::Outer), ["1,7,∅", "2,∅,∅", "3,∅,9"]);
}

#[test]
fn empty_sides() {
    let (left, right) = dup_tables();
    let (l0, r0) = (left.slice(0, 0), right.slice(0, 0));
    for how in [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::Right,
        JoinHow::Outer,
    ] {
        let s = spec(&["k"], &["k"], how);
        let expect_schema = s.output_schema(&left.schema(), &right.schema()).unwrap();
        let both = hash_join(&s, &l0, &r0).unwrap();
        assert_eq!(both.num_rows(), 0);
        assert_eq!(*both.schema(), expect_schema);
        let no_right = hash_join(&s, &left, &r0).unwrap();
        let no_left = hash_join(&s, &l0, &right).unwrap();
        let keeps_left = matches!(how, JoinHow::Left | JoinHow::Outer);
        let keeps_right = matches!(how, JoinHow::Right | JoinHow::Outer);
        assert_eq!(no_right.num_rows(), if keeps_left { 5 } else { 0 });
        assert_eq!(no_left.num_rows(), if keeps_right { 6 } else { 0 });
        if keeps_left {
            assert_eq!(rows(&no_right)[3], "3,a3,∅");
        }
        if keeps_right {
            assert_eq!(rows(&no_left)[1], "4,∅,11");
        }
    }
}

#[test]
fn single_rows() {
    let left = table(vec![("k", ints(&[Some(1)])), ("a", ints(&[Some(2)]))]);
    let right = table(vec![("k", ints(&[Some(1)])), ("b", ints(&[Some(3)]))]);
    for how in [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::Right,
        JoinHow::Outer,
    ] {
        let out = hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap();
        assert_eq!(rows(&out), ["1,2,3"]);
    }
}

#[test]
fn two_keys_and_value_suffixes() {
    let left = table(vec![
        ("k1", ints(&[Some(1), Some(1), Some(2), None])),
        ("k2", strs(&[Some("a"), Some("b"), Some("a"), Some("a")])),
        ("v", ints(&[Some(0), Some(1), Some(2), Some(3)])),
    ]);
    let right = table(vec![
        ("v", ints(&[Some(10), Some(11), Some(12), Some(13)])),
        ("k2", strs(&[Some("b"), Some("a"), Some("a"), Some("a")])),
        ("k1", ints(&[Some(1), Some(1), Some(3), None])),
    ]);
    let s = spec(&["k1", "k2"], &["k1", "k2"], JoinHow::Outer);
    let out = hash_join(&s, &left, &right).unwrap();
    assert_eq!(col_names(&out), ["k1", "k2", "v_x", "v_y"]);
    assert_eq!(
        rows(&out),
        ["1,a,0,11", "1,b,1,10", "2,a,2,∅", "∅,a,3,13", "3,a,∅,12"]
    );
    let inner = hash_join(
        &spec(&["k1", "k2"], &["k1", "k2"], JoinHow::Inner),
        &left,
        &right,
    );
    assert_eq!(rows(&inner.unwrap()), ["1,a,0,11", "1,b,1,10", "∅,a,3,13"]);
}

#[test]
fn differently_named_keys_are_both_kept() {
    let left = table(vec![
        ("a", ints(&[Some(1), Some(2)])),
        ("b", ints(&[Some(5), Some(6)])),
        ("v", ints(&[Some(7), Some(8)])),
    ]);
    let right = table(vec![
        ("b", ints(&[Some(2), Some(9)])),
        ("a", ints(&[Some(0), Some(0)])),
        ("v", ints(&[Some(3), Some(4)])),
    ]);
    let s = spec(&["a"], &["b"], JoinHow::Outer);
    let out = hash_join(&s, &left, &right).unwrap();
    assert_eq!(col_names(&out), ["a_x", "b_x", "v_x", "b_y", "a_y", "v_y"]);
    assert_eq!(rows(&out), ["1,5,7,∅,∅,∅", "2,6,8,2,0,3", "∅,∅,∅,9,0,4"]);
    let mut custom = spec(&["a"], &["b"], JoinHow::Inner);
    custom.suffixes = ("_l".into(), "".into());
    let out = hash_join(&custom, &left, &right).unwrap();
    assert_eq!(col_names(&out), ["a_l", "b_l", "v_l", "b", "a", "v"]);
}

#[test]
fn output_schema_nullability() {
    let f = |n: &str, dt, nullable| Field::new(n, dt, nullable);
    let left = Schema::new(vec![
        f("k", DataType::Int64, false),
        f("a", DataType::Utf8, false),
    ]);
    let right = Schema::new(vec![
        f("k", DataType::Int32, false),
        f("b", DataType::Float64, false),
    ]);
    let nullable = |how| {
        let s = spec(&["k"], &["k"], how)
            .output_schema(&left, &right)
            .unwrap();
        assert_eq!(s.field(0).data_type(), &DataType::Int64);
        s.fields()
            .iter()
            .map(|f| f.is_nullable())
            .collect::<Vec<bool>>()
    };
    assert_eq!(nullable(JoinHow::Inner), [false, false, false]);
    assert_eq!(nullable(JoinHow::Left), [false, false, true]);
    assert_eq!(nullable(JoinHow::Right), [false, true, false]);
    assert_eq!(nullable(JoinHow::Outer), [false, true, true]);
}

#[test]
fn output_origins_name_each_columns_side_and_source_name() {
    let f = |n: &str| Field::new(n, DataType::Int64, true);
    let left = Schema::new(vec![f("k"), f("a"), f("v")]);
    let right = Schema::new(vec![f("k"), f("v"), f("b")]);
    let origins = |how, indicator: Option<&str>| {
        let mut s = spec(&["k"], &["k"], how);
        s.indicator = indicator.map(str::to_string);
        s.output_origins(&left, &right).unwrap()
    };
    let l = |n: &str| ColumnOrigin::Left(n.into());
    let r = |n: &str| ColumnOrigin::Right(n.into());
    let named = |v: Vec<(&str, ColumnOrigin)>| {
        v.into_iter()
            .map(|(n, o)| (n.to_string(), o))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        origins(JoinHow::Inner, Some("_merge")),
        named(vec![
            ("k", l("k")),
            ("a", l("a")),
            ("v_x", l("v")),
            ("v_y", r("v")),
            ("b", r("b")),
            ("_merge", ColumnOrigin::Made)
        ])
    );
    // An outer join's shared key comes from either side.
    assert_eq!(
        origins(JoinHow::Outer, None)[0],
        ("k".into(), ColumnOrigin::Either)
    );
    assert_eq!(
        origins(JoinHow::LeftMark, Some("m")),
        named(vec![
            ("k", l("k")),
            ("a", l("a")),
            ("v", l("v")),
            ("m", ColumnOrigin::Made)
        ])
    );
}

#[test]
fn string_encodings_and_int_widths_match() {
    let left = table(vec![
        ("k", strs(&[Some("x"), Some("y"), None, Some("w")])),
        ("n", ints(&[Some(1), Some(2), Some(3), Some(4)])),
    ]);
    let large: ArrayRef = Arc::new(LargeStringArray::from(vec![Some("y"), Some("z"), None]));
    let dict: ArrayRef = Arc::new(
        vec![Some("y"), Some("z"), None]
            .into_iter()
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let narrow: ArrayRef = Arc::new(Int32Array::from(vec![Some(2), Some(9), Some(1)]));
    for rk in [large, dict] {
        let right = table(vec![("k", rk), ("n", narrow.clone())]);
        let out = hash_join(&spec(&["k"], &["k"], JoinHow::Outer), &left, &right).unwrap();
        assert_eq!(out.column(0).data_type(), &DataType::Utf8);
        assert_eq!(col_names(&out), ["k", "n_x", "n_y"]);
        assert_eq!(rows(&out), ["x,1,∅", "y,2,2", "∅,3,1", "w,4,∅", "z,∅,9"]);
        // Integer keys of different widths, output in the left type.
        let by_n = hash_join(&spec(&["n"], &["n"], JoinHow::Right), &right, &left).unwrap();
        assert_eq!(by_n.column(1).data_type(), &DataType::Int32);
        assert_eq!(col_names(&by_n), ["k_x", "n", "k_y"]);
        assert_eq!(rows(&by_n), ["∅,1,x", "y,2,y", "∅,3,∅", "∅,4,w"]);
    }
}

#[test]
fn dictionary_left_key_takes_right_values() {
    let dict: ArrayRef = Arc::new(
        vec![Some("b"), Some("a"), Some("b")]
            .into_iter()
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let left = table(vec![("k", dict), ("l", ints(&[Some(0), Some(1), Some(2)]))]);
    let right = table(vec![
        ("k", strs(&[Some("c"), Some("b"), None])),
        ("r", ints(&[Some(5), Some(6), Some(7)])),
    ]);
    let out = hash_join(&spec(&["k"], &["k"], JoinHow::Outer), &left, &right).unwrap();
    assert!(matches!(
        out.column(0).data_type(),
        DataType::Dictionary(_, _)
    ));
    assert_eq!(rows(&out), ["b,0,6", "a,1,∅", "b,2,6", "c,∅,5", "∅,∅,7"]);
    let out = hash_join(&spec(&["k"], &["k"], JoinHow::Right), &left, &right).unwrap();
    assert_eq!(rows(&out), ["c,∅,5", "b,0,6", "b,2,6", "∅,∅,7"]);
}

#[test]
fn aligned_one_to_one_join() {
    let ids = ints(&[Some(4), Some(1), Some(9)]);
    let left = table(vec![
        ("id", ids.clone()),
        ("a", ints(&[Some(0), Some(1), Some(2)])),
    ]);
    let right = table(vec![
        ("id", ids),
        ("b", strs(&[Some("x"), None, Some("z")])),
    ]);
    for how in ALL_HOWS {
        let out = hash_join(&spec(&["id"], &["id"], how), &left, &right).unwrap();
        assert_eq!(rows(&out), ["4,0,x", "1,1,∅", "9,2,z"]);
    }
}

#[test]
fn unsigned_beyond_i64_matches_nothing() {
    let left = table(vec![("k", ints(&[Some(-1), Some(5), None]))]);
    let big: ArrayRef = Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(5), None]));
    let right = table(vec![("k", big), ("r", ints(&[Some(0), Some(1), Some(2)]))]);
    let s = spec(&["k"], &["k"], JoinHow::Left);
    assert_eq!(
        rows(&hash_join(&s, &left, &right).unwrap()),
        ["-1,∅", "5,1", "∅,2"]
    );
    let s = spec(&["k"], &["k"], JoinHow::Inner);
    assert_eq!(rows(&hash_join(&s, &right, &left).unwrap()), ["5,1", "∅,2"]);
    // The unmatched right value cannot be shown in the left key's type.
    let s = spec(&["k"], &["k"], JoinHow::Outer);
    assert!(matches!(
        hash_join(&s, &left, &right),
        Err(FrameError::Arrow(_))
    ));
}

#[test]
fn errors() {
    let (left, right) = dup_tables();
    let err = |s: JoinSpec| hash_join(&s, &left, &right).unwrap_err();
    match err(spec(&["nope"], &["k"], JoinHow::Inner)) {
        FrameError::ColumnNotFound { name, .. } => assert_eq!(name, "nope"),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        err(spec(&["k"], &["zz"], JoinHow::Left)),
        FrameError::ColumnNotFound { .. }
    ));
    match err(spec(&["a"], &["k"], JoinHow::Inner)) {
        FrameError::TypeMismatch(m) => {
            assert!(m.contains("\"a\"") && m.contains("\"k\""), "{m}");
            assert!(m.contains("Utf8") && m.contains("Int64"), "{m}");
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        err(spec(&["k", "a"], &["k"], JoinHow::Inner)),
        FrameError::InvalidArgument(_)
    ));
    assert!(matches!(
        err(spec(&[], &[], JoinHow::Inner)),
        FrameError::InvalidArgument(_)
    ));
    let mut no_suffix = spec(&["a"], &["b"], JoinHow::Inner);
    no_suffix.suffixes = (String::new(), String::new());
    let l2 = table(vec![("a", ints(&[Some(1)])), ("x", ints(&[Some(1)]))]);
    let r2 = table(vec![("b", ints(&[Some(1)])), ("x", ints(&[Some(1)]))]);
    assert!(matches!(
        hash_join(&no_suffix, &l2, &r2),
        Err(FrameError::InvalidArgument(_))
    ));
    // A suffixed name clashing with an existing column.
    let l3 = table(vec![
        ("a", ints(&[Some(1)])),
        ("x", ints(&[Some(1)])),
        ("x_x", ints(&[Some(1)])),
    ]);
    let s = spec(&["a"], &["b"], JoinHow::Inner);
    assert!(matches!(
        hash_join(&s, &l3, &r2),
        Err(FrameError::InvalidArgument(_))
    ));
    let f64s: ArrayRef = Arc::new(Float64Array::from(vec![1.0]));
    let r4 = table(vec![("b", f64s)]);
    assert!(matches!(
        spec(&["a"], &["b"], JoinHow::Inner).output_schema(&l2.schema(), &r4.schema()),
        Err(FrameError::TypeMismatch(_))
    ));
}

// ---- random tables against a naive nested-loop join ----

use crate::test_rng::Rng;

pub(super) type Key = (Option<i64>, Option<&'static str>);

pub(super) fn random_keys(rng: &mut Rng, n: usize, range: u64) -> Vec<Key> {
    const WORDS: [&str; 4] = ["p", "qq", "", "rrr"];
    (0..n)
        .map(|_| {
            let k1 = match rng.next() % (range + 1) {
                0 => None,
                v => Some(v as i64 - 3),
            };
            let k2 = match rng.next() % 5 {
                4 => None,
                v => Some(WORDS[v as usize]),
            };
            (k1, k2)
        })
        .collect()
}

/// A table with key columns k1 (Int64 or Int32), k2 (Utf8 or LargeUtf8) and row ids `id`.
pub(super) fn keyed_table(keys: &[Key], id: &str, narrow: bool) -> RecordBatch {
    let k1: ArrayRef = if narrow {
        Arc::new(
            keys.iter()
                .map(|k| k.0.map(|v| v as i32))
                .collect::<Int32Array>(),
        )
    } else {
        Arc::new(keys.iter().map(|k| k.0).collect::<Int64Array>())
    };
    let k2: ArrayRef = if narrow {
        Arc::new(keys.iter().map(|k| k.1).collect::<LargeStringArray>())
    } else {
        Arc::new(keys.iter().map(|k| k.1).collect::<StringArray>())
    };
    let ids = ints(&(0..keys.len() as i64).map(Some).collect::<Vec<_>>());
    table(vec![("k1", k1), ("k2", k2), (id, ids)])
}

/// (left row, right row) pairs in the documented order.
fn naive(l: &[Key], r: &[Key], on: &[usize], how: JoinHow) -> Vec<(Option<i64>, Option<i64>)> {
    let eq = |a: &Key, b: &Key| {
        on.iter()
            .all(|&c| if c == 0 { a.0 == b.0 } else { a.1 == b.1 })
    };
    let mut out = Vec::new();
    let (outer, inner, flip) = match how {
        JoinHow::Right => (r, l, true),
        _ => (l, r, false),
    };
    for (i, a) in outer.iter().enumerate() {
        let mut any = false;
        for (j, b) in inner.iter().enumerate() {
            if eq(a, b) {
                any = true;
                out.push((Some(i as i64), Some(j as i64)));
            }
        }
        if !any && how != JoinHow::Inner {
            out.push((Some(i as i64), None));
        }
    }
    if flip {
        out = out.into_iter().map(|(a, b)| (b, a)).collect();
    }
    if how == JoinHow::Outer {
        for (j, b) in r.iter().enumerate() {
            if !l.iter().any(|a| eq(a, b)) {
                out.push((None, Some(j as i64)));
            }
        }
    }
    out
}

fn id_pairs(b: &RecordBatch) -> Vec<(Option<i64>, Option<i64>)> {
    let get = |n: &str| {
        let c = b.column_by_name(n).unwrap();
        c.as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .iter()
            .collect::<Vec<_>>()
    };
    get("lid").into_iter().zip(get("rid")).collect()
}

/// Shared key columns show the left key, or the right one where the left row is missing.
fn check_keys(out: &RecordBatch, l: &RecordBatch, r: &RecordBatch, on: &[&str]) {
    for (row, (li, ri)) in id_pairs(out).into_iter().enumerate() {
        for k in on {
            let got = fmt(out.column_by_name(k).unwrap(), row);
            let want = match (li, ri) {
                (Some(i), _) => fmt(l.column_by_name(k).unwrap(), i as usize),
                (None, Some(j)) => fmt(r.column_by_name(k).unwrap(), j as usize),
                (None, None) => panic!("row {row} has no side"),
            };
            assert_eq!(got, want);
        }
    }
}

const ALL_HOWS: [JoinHow; 4] = [
    JoinHow::Inner,
    JoinHow::Left,
    JoinHow::Right,
    JoinHow::Outer,
];

#[test]
fn random_tables_match_nested_loops() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for round in 0..12 {
        let (nl, nr) = (rng.next() % 120, rng.next() % 90);
        let range = [2, 6, 40][round % 3];
        let lk = random_keys(&mut rng, nl as usize, range);
        let rk = random_keys(&mut rng, nr as usize, range);
        let left = keyed_table(&lk, "lid", false);
        let right = keyed_table(&rk, "rid", round % 2 == 1);
        for (on, cols) in [
            (&[0][..], &["k1"][..]),
            (&[1], &["k2"]),
            (&[0, 1], &["k1", "k2"]),
        ] {
            for how in ALL_HOWS {
                let out = hash_join(&spec(cols, cols, how), &left, &right).unwrap();
                assert_eq!(
                    id_pairs(&out),
                    naive(&lk, &rk, on, how),
                    "{how:?} on {cols:?}"
                );
                check_keys(&out, &left, &right, cols);
            }
        }
    }
}

#[test]
fn unique_build_side_matches_nested_loops() {
    let mut rng = Rng(99);
    let lk = random_keys(&mut rng, 300, 30);
    let rk: Vec<Key> = (-3..30)
        .map(|v| (Some(v), Some("p")))
        .chain([(None, None)])
        .collect();
    let (left, right) = (
        keyed_table(&lk, "lid", false),
        keyed_table(&rk, "rid", false),
    );
    for how in ALL_HOWS {
        let out = hash_join(&spec(&["k1"], &["k1"], how), &left, &right).unwrap();
        assert_eq!(id_pairs(&out), naive(&lk, &rk, &[0], how), "{how:?}");
        check_keys(&out, &left, &right, &["k1"]);
    }
}

#[test]
fn an_inner_join_built_on_its_smaller_left_keeps_left_order() {
    let mut rng = Rng(0x5eed);
    for (nl, nr, range) in [(20, 400, 8), (30, 500, 60), (10, 1000, 3)] {
        // Duplicate keys on both sides, and (third) a left of mostly unique keys.
        let lk = random_keys(&mut rng, nl, range);
        let rk = random_keys(&mut rng, nr, range);
        let (left, right) = (
            keyed_table(&lk, "lid", false),
            keyed_table(&rk, "rid", false),
        );
        for (on, cols) in [(&[0][..], &["k1"][..]), (&[0, 1], &["k1", "k2"])] {
            let out = hash_join(&spec(cols, cols, JoinHow::Inner), &left, &right).unwrap();
            assert_eq!(
                id_pairs(&out),
                naive(&lk, &rk, on, JoinHow::Inner),
                "{nl}x{nr} on {cols:?}"
            );
            check_keys(&out, &left, &right, cols);
        }
    }
    // Each left row matching one right row, in order: the left side needs no gather.
    let lk: Vec<Key> = (0..10).map(|v| (Some(v), Some("p"))).collect();
    let rk: Vec<Key> = (0..100).map(|v| (Some(v % 10), Some("q"))).collect();
    let (left, right) = (
        keyed_table(&lk, "lid", false),
        keyed_table(&rk, "rid", false),
    );
    let out = hash_join(&spec(&["k1"], &["k1"], JoinHow::Inner), &left, &right).unwrap();
    assert_eq!(id_pairs(&out), naive(&lk, &rk, &[0], JoinHow::Inner));
}

#[test]
fn partitioned_join_equals_whole_join() {
    let mut rng = Rng(0xfeed_beef);
    let lk = random_keys(&mut rng, 400, 25);
    let rk = random_keys(&mut rng, 300, 25);
    let left = keyed_table(&lk, "lid", false);
    let right = keyed_table(&rk, "rid", true);
    let on = names(&["k1", "k2"]);
    for how in ALL_HOWS {
        let s = JoinSpec::new(on.clone(), on.clone(), how);
        let mut whole = id_pairs(&hash_join(&s, &left, &right).unwrap());
        whole.sort();
        for n in [1, 2, 5] {
            let lp = hash_partition(&left, &on, n).unwrap();
            let rp = hash_partition(&right, &on, n).unwrap();
            let mut parts: Vec<_> = lp
                .iter()
                .zip(&rp)
                .flat_map(|(l, r)| id_pairs(&hash_join(&s, l, r).unwrap()))
                .collect();
            parts.sort();
            assert_eq!(parts, whole, "{how:?} in {n} parts");
        }
    }
}

/// `table` cut into `pieces` pieces at random points, with empty pieces among them.
fn cut(rng: &mut Rng, table: &RecordBatch, pieces: usize) -> Vec<RecordBatch> {
    let mut at: Vec<usize> = (1..pieces)
        .map(|_| (rng.next() as usize) % (table.num_rows() + 1))
        .collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for end in at.into_iter().chain([table.num_rows()]) {
        out.push(table.slice(start, end - start));
        start = end;
    }
    out
}

#[test]
fn a_join_of_several_tables_equals_the_join_of_their_concatenation() {
    let mut rng = Rng(0x7ab1_e5e5);
    let existence = [JoinHow::LeftSemi, JoinHow::LeftAnti, JoinHow::LeftMark];
    for round in 0..8 {
        let lk = random_keys(&mut rng, 150 + round * 20, [3, 12, 60][round % 3]);
        let rk = random_keys(&mut rng, 90 + round * 10, [3, 12, 60][round % 3]);
        let left = keyed_table(&lk, "lid", round % 2 == 0);
        let right = keyed_table(&rk, "rid", false);
        for cols in [&["k1"][..], &["k2"], &["k1", "k2"]] {
            for how in ALL_HOWS.into_iter().chain(existence) {
                let mut s = spec(cols, cols, how);
                if how == JoinHow::LeftMark {
                    s.indicator = Some("found".into());
                }
                let whole = hash_join(&s, &left, &right).unwrap();
                for (nl, nr) in [(1, 4), (5, 1), (3, 7)] {
                    let (lp, rp) = (cut(&mut rng, &left, nl), cut(&mut rng, &right, nr));
                    let got = hash_join_tables::<FrameError>(
                        &s,
                        &lp,
                        &rp,
                        &|_: &[ArrayRef], _: &[ArrayRef], _: bool| Ok(None),
                    )
                    .unwrap();
                    assert_eq!(got, whole, "{how:?} on {cols:?}, {nl} and {nr} tables");
                }
            }
        }
    }
    // Every table empty, and no table at all.
    let (l0, r0) = (
        keyed_table(&[], "lid", false),
        keyed_table(&[], "rid", false),
    );
    let s = spec(&["k1"], &["k1"], JoinHow::Inner);
    let none = |_: &[ArrayRef], _: &[ArrayRef], _: bool| Ok(None);
    let out =
        hash_join_tables::<FrameError>(&s, &[l0.clone(), l0], std::slice::from_ref(&r0), &none);
    assert_eq!(out.unwrap().num_rows(), 0);
    let err = hash_join_tables::<FrameError>(&s, &[], &[r0], &none).unwrap_err();
    assert!(err.to_string().contains("no table"), "{err}");
}
