//! Tests of semi, anti and mark joins, pandas' indicator and `distinct_keys`: hand-computed
//! rows, random keys with nulls and duplicates against nested loops, key casts, partitions,
//! schemas and errors.

use super::super::partition::hash_partition;
use super::tests::{
    col_names, dup_tables, ints, keyed_table, mixed_key_tables, names, random_keys, rows, spec,
    strs, table, Key,
};
use super::*;
use crate::test_rng::Rng;
use arrow::array::{AsArray, DictionaryArray, UInt64Array};
use arrow::datatypes::Int32Type;

const EXISTENCE: [JoinHow; 3] = [JoinHow::LeftSemi, JoinHow::LeftAnti, JoinHow::LeftMark];

/// A spec of `how` on `l` = `r`, a mark join's mark named `m`.
fn existence_spec(l: &[&str], r: &[&str], how: JoinHow) -> JoinSpec {
    let mut s = spec(l, r, how);
    if how == JoinHow::LeftMark {
        s.indicator = Some("m".into());
    }
    s
}

fn run(how: JoinHow, left: &RecordBatch, right: &RecordBatch) -> Vec<String> {
    let out = hash_join(&existence_spec(&["k"], &["k"], how), left, right).unwrap();
    rows(&out)
}

#[test]
fn semi_anti_and_mark_keep_each_left_row_at_most_once_in_left_order() {
    // Right keys 2 and null twice each: no left row is repeated, no right column shown.
    let (left, right) = dup_tables();
    assert_eq!(
        run(JoinHow::LeftSemi, &left, &right),
        ["1,a0", "2,a1", "2,a2", "∅,a4"]
    );
    assert_eq!(run(JoinHow::LeftAnti, &left, &right), ["3,a3"]);
    assert_eq!(
        run(JoinHow::LeftMark, &left, &right),
        [
            "1,a0,true",
            "2,a1,true",
            "2,a2,true",
            "3,a3,false",
            "∅,a4,true"
        ]
    );
    // A null left key matches a null right key (pandas), and nothing else.
    let no_null = table(vec![("k", ints(&[Some(2), Some(2), Some(1)]))]);
    assert_eq!(
        run(JoinHow::LeftSemi, &left, &no_null),
        ["1,a0", "2,a1", "2,a2"]
    );
    assert_eq!(run(JoinHow::LeftAnti, &left, &no_null), ["3,a3", "∅,a4"]);
    let out = hash_join(
        &existence_spec(&["k"], &["k"], JoinHow::LeftMark),
        &left,
        &no_null,
    )
    .unwrap();
    assert_eq!(col_names(&out), ["k", "a", "m"]);
    assert_eq!(out.column(2).null_count(), 0);
    assert_eq!(
        out.column(2)
            .as_boolean()
            .values()
            .iter()
            .collect::<Vec<_>>(),
        [true, true, true, false, false]
    );
}

#[test]
fn empty_sides() {
    let (left, right) = dup_tables();
    let (l0, r0) = (left.slice(0, 0), right.slice(0, 0));
    for how in EXISTENCE {
        let s = existence_spec(&["k"], &["k"], how);
        let schema = s.output_schema(&left.schema(), &right.schema()).unwrap();
        let none = hash_join(&s, &l0, &right).unwrap();
        assert_eq!((none.num_rows(), &*none.schema()), (0, &schema), "{how:?}");
        let kept = hash_join(&s, &left, &r0).unwrap().num_rows();
        let want = if how == JoinHow::LeftSemi { 0 } else { 5 };
        assert_eq!(kept, want, "{how:?}");
    }
}

/// The left rows (`lid`) a semi, anti or mark join keeps, by nested loops, with the mark.
fn naive(l: &[Key], r: &[Key], on: &[usize], how: JoinHow) -> Vec<(i64, Option<bool>)> {
    let eq = |a: &Key, b: &Key| {
        on.iter()
            .all(|&c| if c == 0 { a.0 == b.0 } else { a.1 == b.1 })
    };
    (0i64..)
        .zip(l)
        .filter_map(|(i, a)| {
            let found = r.iter().any(|b| eq(a, b));
            match how {
                JoinHow::LeftSemi => found.then_some((i, None)),
                JoinHow::LeftAnti => (!found).then_some((i, None)),
                _ => Some((i, Some(found))),
            }
        })
        .collect()
}

/// The `lid` of each output row, with its mark if it has one.
fn kept(out: &RecordBatch) -> Vec<(i64, Option<bool>)> {
    let lid = out
        .column_by_name("lid")
        .unwrap()
        .as_primitive::<arrow::datatypes::Int64Type>();
    let mark = out.column_by_name("m").map(|m| m.as_boolean().clone());
    (0..out.num_rows())
        .map(|i| (lid.value(i), mark.as_ref().map(|m| m.value(i))))
        .collect()
}

#[test]
fn random_keys_with_nulls_and_duplicates_match_nested_loops() {
    let mut rng = Rng(0x5e41_a471_0000_0001);
    for round in 0..12 {
        let (nl, nr) = (rng.next() % 120, rng.next() % 90);
        let range = [2, 6, 40][round % 3];
        let lk = random_keys(&mut rng, nl as usize, range);
        let rk = random_keys(&mut rng, nr as usize, range);
        let left = keyed_table(&lk, "lid", false);
        // Int32 and LargeUtf8 keys on the right every other round.
        let right = keyed_table(&rk, "rid", round % 2 == 1);
        for (on, cols) in [
            (&[0][..], &["k1"][..]),
            (&[1], &["k2"]),
            (&[0, 1], &["k1", "k2"]),
        ] {
            for how in EXISTENCE {
                let out = hash_join(&existence_spec(cols, cols, how), &left, &right).unwrap();
                assert_eq!(kept(&out), naive(&lk, &rk, on, how), "{how:?} on {cols:?}");
                let mut want = names(&["k1", "k2", "lid"]);
                if how == JoinHow::LeftMark {
                    want.push("m".into());
                }
                assert_eq!(col_names(&out), want);
            }
        }
    }
}

#[test]
fn partitioned_existence_joins_equal_the_whole_join() {
    let mut rng = Rng(0xfeed_5e41);
    let lk = random_keys(&mut rng, 400, 25);
    let rk = random_keys(&mut rng, 300, 25);
    let left = keyed_table(&lk, "lid", false);
    let right = keyed_table(&rk, "rid", true);
    let on = names(&["k1", "k2"]);
    for how in EXISTENCE {
        let s = existence_spec(&["k1", "k2"], &["k1", "k2"], how);
        let whole = kept(&hash_join(&s, &left, &right).unwrap());
        for n in [1, 2, 5] {
            let lp = hash_partition(&left, &on, n).unwrap();
            let rp = hash_partition(&right, &on, n).unwrap();
            let mut parts: Vec<_> = lp
                .iter()
                .zip(&rp)
                .flat_map(|(l, r)| kept(&hash_join(&s, l, r).unwrap()))
                .collect();
            parts.sort();
            assert_eq!(parts, whole, "{how:?} in {n} parts");
        }
    }
}

#[test]
fn unsigned_beyond_i64_matches_nothing_on_either_side() {
    let signed = table(vec![("k", ints(&[Some(-1), Some(5), None]))]);
    let big: ArrayRef = Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(5), None]));
    let unsigned = table(vec![("k", big)]);
    let mark = |l: &RecordBatch, r: &RecordBatch| {
        let out = hash_join(&existence_spec(&["k"], &["k"], JoinHow::LeftMark), l, r).unwrap();
        out.column(1)
            .as_boolean()
            .values()
            .iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(mark(&signed, &unsigned), [false, true, true]);
    assert_eq!(mark(&unsigned, &signed), [false, true, true]);
    // The right's only key is unrepresentable: it is no null key for the left's null.
    let only_big: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX]));
    assert_eq!(
        mark(&signed, &table(vec![("k", only_big)])),
        [false, false, false]
    );
    let s = existence_spec(&["k"], &["k"], JoinHow::LeftAnti);
    assert_eq!(
        rows(&hash_join(&s, &unsigned, &signed).unwrap()),
        ["18446744073709551615"]
    );
}

#[test]
fn string_encodings_and_int_widths_match() {
    let (left, right) = mixed_key_tables();
    let semi = |on: &str| {
        let out = hash_join(
            &existence_spec(&[on], &[on], JoinHow::LeftSemi),
            &left,
            &right,
        );
        rows(&out.unwrap())
    };
    assert_eq!(semi("k"), ["y,2", "∅,3"]);
    assert_eq!(semi("n"), ["x,1", "y,2"]);
}

#[test]
fn schemas_and_errors() {
    let (left, right) = dup_tables();
    let (ls, rs) = (left.schema(), right.schema());
    for how in [JoinHow::LeftSemi, JoinHow::LeftAnti] {
        let schema = spec(&["k"], &["k"], how).output_schema(&ls, &rs).unwrap();
        assert_eq!(schema, Schema::new(ls.fields().clone()), "{how:?}");
        // A name clash with the right's columns does not matter: they are not shown.
        let out = hash_join(&spec(&["k"], &["k"], how), &right, &right).unwrap();
        assert_eq!(col_names(&out), ["k", "b"]);
    }
    let schema = existence_spec(&["k"], &["k"], JoinHow::LeftMark)
        .output_schema(&ls, &rs)
        .unwrap();
    let m = schema.field(2);
    assert_eq!(
        (m.name().as_str(), m.data_type(), m.is_nullable()),
        ("m", &DataType::Boolean, false)
    );
    let invalid = |s: JoinSpec| {
        assert!(
            matches!(
                hash_join(&s, &left, &right),
                Err(FrameError::InvalidArgument(_))
            ),
            "{s:?}"
        )
    };
    invalid(spec(&["k"], &["k"], JoinHow::LeftMark));
    let mut taken = spec(&["k"], &["k"], JoinHow::LeftMark);
    taken.indicator = Some("a".into());
    invalid(taken);
    let mut semi = spec(&["k"], &["k"], JoinHow::LeftSemi);
    semi.indicator = Some("_merge".into());
    invalid(semi);
    invalid(existence_spec(&["k", "a"], &["k"], JoinHow::LeftAnti));
    assert!(matches!(
        hash_join(
            &existence_spec(&["a"], &["k"], JoinHow::LeftSemi),
            &left,
            &right
        ),
        Err(FrameError::TypeMismatch(_))
    ));
    assert!(matches!(
        hash_join(
            &existence_spec(&["k"], &["zz"], JoinHow::LeftMark),
            &left,
            &right
        ),
        Err(FrameError::ColumnNotFound { .. })
    ));
}

#[test]
fn indicator_says_where_each_row_comes_from() {
    let (left, right) = dup_tables();
    let with = |how| {
        let mut s = spec(&["k"], &["k"], how);
        s.indicator = Some("_merge".into());
        let out = hash_join(&s, &left, &right).unwrap();
        // The same rows as without the indicator, which comes last.
        let plain = hash_join(&spec(&["k"], &["k"], how), &left, &right).unwrap();
        assert_eq!(out.num_columns(), plain.num_columns() + 1);
        assert_eq!(out.project(&[0, 1, 2]).unwrap().columns(), plain.columns());
        let field = out.schema().field(3).clone();
        assert_eq!(
            (
                field.name().as_str(),
                field.data_type(),
                field.is_nullable()
            ),
            ("_merge", &indicator_type(), false)
        );
        rows(&out)
            .into_iter()
            .map(|r| r.rsplit(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let both = |n| vec!["both"; n];
    assert_eq!(with(JoinHow::Inner), both(7));
    let mut left_join = both(5);
    left_join.insert(5, "left_only");
    left_join.extend(both(2));
    assert_eq!(with(JoinHow::Left), left_join);
    let right_join = [
        "both",
        "both",
        "right_only",
        "both",
        "both",
        "both",
        "both",
        "both",
    ];
    assert_eq!(with(JoinHow::Right), right_join);
    let mut outer = left_join.clone();
    outer.push("right_only");
    assert_eq!(with(JoinHow::Outer), outer);
    // pandas' categories, in pandas' order, whatever the rows hold.
    let mut s = spec(&["k"], &["k"], JoinHow::Inner);
    s.indicator = Some("_merge".into());
    let out = hash_join(&s, &left, &right).unwrap();
    let dict = out.column(3).as_dictionary::<arrow::datatypes::Int8Type>();
    let values: Vec<_> = dict.values().as_string::<i32>().iter().flatten().collect();
    assert_eq!(values, INDICATOR_VALUES);
    // A clash with an output column.
    s.indicator = Some("b".into());
    assert!(matches!(
        hash_join(&s, &left, &right),
        Err(FrameError::InvalidArgument(_))
    ));
}

#[test]
fn distinct_keys_keeps_each_tuple_once_from_its_first_row() {
    let mut rng = Rng(0xd157_1ac7);
    let keys = random_keys(&mut rng, 300, 6);
    let whole = keyed_table(&keys, "id", false);
    // Three chunks of one frame.
    let chunks = [
        whole.slice(0, 100),
        whole.slice(100, 0),
        whole.slice(100, 200),
    ];
    for (on, cols) in [
        (&[0][..], &["k1"][..]),
        (&[1], &["k2"]),
        (&[0, 1], &["k1", "k2"]),
    ] {
        let out = distinct_keys(&names(cols), &chunks).unwrap();
        let mut want: Vec<String> = Vec::new();
        for k in &keys {
            let row = on
                .iter()
                .map(|&c| match c {
                    0 => k.0.map_or("∅".to_string(), |v| v.to_string()),
                    _ => k.1.map_or("∅".to_string(), str::to_string),
                })
                .collect::<Vec<_>>()
                .join(",");
            if !want.contains(&row) {
                want.push(row);
            }
        }
        assert_eq!(rows(&out), want, "{cols:?}");
        assert_eq!(col_names(&out), names(cols));
    }
    // Types are kept (a dictionary stays one).
    let dict: ArrayRef = Arc::new(
        vec![Some("b"), None, Some("b"), Some("a")]
            .into_iter()
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let t = table(vec![("d", dict.clone())]);
    let out = distinct_keys(&names(&["d"]), &[t]).unwrap();
    assert_eq!(out.column(0).data_type(), dict.data_type());
    assert_eq!(rows(&out), ["b", "∅", "a"]);
    // Errors.
    assert!(matches!(
        distinct_keys(&names(&["k1"]), &[]),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(matches!(
        distinct_keys(&names(&["nope"]), &chunks),
        Err(FrameError::ColumnNotFound { .. })
    ));
    assert!(matches!(
        distinct_keys(&[], &chunks),
        Err(FrameError::InvalidArgument(_))
    ));
    let other = table(vec![("k1", strs(&[Some("x")]))]);
    assert!(matches!(
        distinct_keys(&names(&["k1"]), &[chunks[0].clone(), other]),
        Err(FrameError::TypeMismatch(_))
    ));
}

#[test]
fn specs_survive_serialization_and_older_specs_have_no_indicator() {
    let mut s = spec(&["k"], &["k"], JoinHow::LeftMark);
    s.indicator = Some("m".into());
    let back: JoinSpec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let old = r#"{"left_on":["k"],"right_on":["k"],"how":"Inner","suffixes":["_x","_y"]}"#;
    let old: JoinSpec = serde_json::from_str(old).unwrap();
    assert_eq!(old, spec(&["k"], &["k"], JoinHow::Inner));
}
