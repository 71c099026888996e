//! Tests of joins probing a side hashed once ([`HashedSide`]): every `how`, either side
//! hashed, against the join of the tables themselves; the serde form; errors.

use super::tests::{ints, keyed_table, random_keys, spec, table};
use super::*;
use crate::test_rng::Rng;
use arrow::array::UInt64Array;

fn no_device(
    _: &[ArrayRef],
    _: &[ArrayRef],
    _: bool,
) -> FrameResult<Option<Box<dyn JoinMatches<FrameError>>>> {
    Ok(None)
}

fn join(spec: &JoinSpec, left: JoinInput<'_>, right: JoinInput<'_>) -> RecordBatch {
    hash_join_inputs::<FrameError>(spec, left, right, &no_device).unwrap()
}

/// `table` cut into `pieces` tables of about equal rows.
fn pieces(table: &RecordBatch, pieces: usize) -> Vec<RecordBatch> {
    let step = table.num_rows().div_ceil(pieces).max(1);
    (0..table.num_rows().max(1))
        .step_by(step)
        .map(|at| table.slice(at, step.min(table.num_rows() - at)))
        .collect()
}

#[test]
fn a_hashed_side_joins_as_its_tables_do() {
    let mut rng = Rng(0x4a5e_0001);
    let existence = [JoinHow::LeftSemi, JoinHow::LeftAnti, JoinHow::LeftMark];
    let hows = [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::Right,
        JoinHow::Outer,
    ];
    for round in 0..6 {
        let range = [3, 12, 60][round % 3];
        let lk = random_keys(&mut rng, 40 + round * 30, range);
        let rk = random_keys(&mut rng, 200 - round * 25, range);
        let left = keyed_table(&lk, "lid", round % 2 == 0);
        let right = keyed_table(&rk, "rid", false);
        for cols in [&["k1"][..], &["k2"], &["k1", "k2"]] {
            for how in hows.into_iter().chain(existence) {
                let mut s = spec(cols, cols, how);
                if how == JoinHow::LeftMark {
                    s.indicator = Some("found".into());
                }
                let whole = hash_join(&s, &left, &right).unwrap();
                let on = |side: &[&str]| side.iter().map(|c| c.to_string()).collect::<Vec<_>>();
                // The hashed side made of several tables, the other side too.
                let (lp, rp) = (pieces(&left, 3), pieces(&right, 2));
                let hashed_right = HashedSide::new(&rp, on(cols)).unwrap();
                let got = join(&s, JoinInput::Tables(&lp), JoinInput::Hashed(&hashed_right));
                assert_eq!(got, whole, "{how:?} on {cols:?}, right hashed");
                let hashed_left = HashedSide::new(&lp, on(cols)).unwrap();
                let got = join(&s, JoinInput::Hashed(&hashed_left), JoinInput::Tables(&rp));
                assert_eq!(got, whole, "{how:?} on {cols:?}, left hashed");
            }
        }
    }
}

#[test]
fn the_index_is_probed_only_where_the_join_can() {
    let mut rng = Rng(77);
    let keys = random_keys(&mut rng, 50, 10);
    let (left, right) = (
        keyed_table(&keys, "lid", false),
        keyed_table(&keys, "rid", false),
    );
    let hashed = HashedSide::new(std::slice::from_ref(&right), vec!["k1".into()]).unwrap();
    let probed = |how: JoinHow, side: Hashed, on: &[&str]| {
        let mut s = spec(on, on, how);
        if how == JoinHow::LeftMark {
            s.indicator = Some("found".into());
        }
        let plan = s.plan(&left.schema(), &right.schema()).unwrap();
        hashed.index_for(&s, &plan, side, &left.schema()).is_some()
    };
    for how in [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::LeftSemi,
        JoinHow::LeftAnti,
        JoinHow::LeftMark,
    ] {
        assert!(probed(how, Hashed::Right, &["k1"]), "{how:?}");
    }
    assert!(probed(JoinHow::Inner, Hashed::Left, &["k1"]));
    for how in [JoinHow::Right, JoinHow::Outer] {
        assert!(!probed(how, Hashed::Right, &["k1"]), "{how:?}");
    }
    for how in [JoinHow::Left, JoinHow::LeftSemi, JoinHow::LeftAnti] {
        assert!(!probed(how, Hashed::Left, &["k1"]), "{how:?}");
    }
    // Hashed on other keys than the join's: joined from its table instead.
    assert!(!probed(JoinHow::Inner, Hashed::Right, &["k1", "k2"]));
    let s = spec(&["k1", "k2"], &["k1", "k2"], JoinHow::Inner);
    let got = join(
        &s,
        JoinInput::Tables(std::slice::from_ref(&left)),
        JoinInput::Hashed(&hashed),
    );
    assert_eq!(got, hash_join(&s, &left, &right).unwrap());
}

#[test]
fn a_hashed_unsigned_key_beyond_i64_matches_no_signed_key() {
    // A UInt64 key paired with a signed one is cast for the join: the hashed index (of the
    // uncast values) is not probed, and u64::MAX still matches no -1.
    let left = table(vec![
        ("k", ints(&[Some(-1), Some(5), None])),
        ("a", ints(&[Some(1), Some(2), Some(3)])),
    ]);
    let k: ArrayRef = Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(5), None]));
    let right = table(vec![("k", k), ("b", ints(&[Some(10), Some(20), Some(30)]))]);
    let hashed = HashedSide::new(std::slice::from_ref(&right), vec!["k".into()]).unwrap();
    for how in [
        JoinHow::Inner,
        JoinHow::Left,
        JoinHow::LeftSemi,
        JoinHow::LeftAnti,
    ] {
        let s = spec(&["k"], &["k"], how);
        let got = join(
            &s,
            JoinInput::Tables(std::slice::from_ref(&left)),
            JoinInput::Hashed(&hashed),
        );
        assert_eq!(got, hash_join(&s, &left, &right).unwrap(), "{how:?}");
    }
    let inner = hash_join(&spec(&["k"], &["k"], JoinHow::Inner), &left, &right).unwrap();
    assert_eq!(inner.num_rows(), 2, "5 = 5 and null = null");
}

#[test]
fn the_serde_form_is_the_table_and_keys_and_hashes_again() {
    let mut rng = Rng(5);
    let keys = random_keys(&mut rng, 80, 9);
    let (left, right) = (
        keyed_table(&keys, "lid", true),
        keyed_table(&keys, "rid", false),
    );
    let on = vec!["k1".to_string(), "k2".to_string()];
    let hashed = HashedSide::new(std::slice::from_ref(&right), on.clone()).unwrap();
    let text = serde_json::to_string(&hashed).unwrap();
    let back: HashedSide = serde_json::from_str(&text).unwrap();
    assert_eq!(back, hashed);
    assert_eq!(back.on(), &on[..]);
    assert!(back.nbytes() > crate::table::batch_bytes(back.table()));
    let s = JoinSpec::new(on.clone(), on, JoinHow::Left);
    let got = join(
        &s,
        JoinInput::Tables(std::slice::from_ref(&left)),
        JoinInput::Hashed(&back),
    );
    assert_eq!(got, hash_join(&s, &left, &right).unwrap());
}

#[test]
fn bad_hashed_sides_are_typed_errors() {
    let t = keyed_table(&[], "rid", false);
    let err = HashedSide::new(&[], vec!["k1".into()]).unwrap_err();
    assert!(
        matches!(err, FrameError::InvalidArgument(_)) && err.to_string().contains("no table"),
        "{err}"
    );
    let err = HashedSide::new(std::slice::from_ref(&t), vec!["nope".into()]).unwrap_err();
    assert!(matches!(err, FrameError::ColumnNotFound { .. }), "{err}");
    let err = HashedSide::new(std::slice::from_ref(&t), vec![]).unwrap_err();
    assert!(matches!(err, FrameError::InvalidArgument(_)), "{err}");
    // An empty side hashes, and joins to nothing.
    let empty = HashedSide::new(std::slice::from_ref(&t), vec!["k1".into()]).unwrap();
    let left = keyed_table(&random_keys(&mut Rng(1), 20, 4), "lid", false);
    let s = spec(&["k1"], &["k1"], JoinHow::Inner);
    let got = join(
        &s,
        JoinInput::Tables(std::slice::from_ref(&left)),
        JoinInput::Hashed(&empty),
    );
    assert_eq!(got.num_rows(), 0);
}

#[test]
fn a_hashed_right_of_other_encodings_and_widths_finds_the_keys_its_table_does() {
    // Left: Utf8 and Int64 keys; right: dictionary strings and Int32, hashed as they are.
    let (left, right) = super::tests::mixed_key_tables();
    for (on, semi_rows) in [("k", 2), ("n", 2)] {
        let hashed = HashedSide::new(std::slice::from_ref(&right), vec![on.into()]).unwrap();
        for how in [JoinHow::LeftSemi, JoinHow::LeftAnti] {
            let s = spec(&[on], &[on], how);
            let got = join(
                &s,
                JoinInput::Tables(std::slice::from_ref(&left)),
                JoinInput::Hashed(&hashed),
            );
            assert_eq!(
                got,
                hash_join(&s, &left, &right).unwrap(),
                "{how:?} on {on}"
            );
            let want = match how {
                JoinHow::LeftSemi => semi_rows,
                _ => 4 - semi_rows,
            };
            assert_eq!(got.num_rows(), want, "{how:?} on {on}");
        }
    }
}

/// A large hashed left side probed by few right rows (its pairs sorted into left order,
/// not counted over every hashed row) joins as the tables do, in left order.
#[test]
fn few_rows_probing_a_large_hashed_left_side_come_in_left_order() {
    let mut rng = Rng(0x4a5e_0002);
    let left = keyed_table(&random_keys(&mut rng, 3_000, 2_000), "lid", true);
    let right = keyed_table(&random_keys(&mut rng, 12, 2_000), "rid", false);
    for cols in [&["k1"][..], &["k1", "k2"]] {
        let s = spec(cols, cols, JoinHow::Inner);
        let whole = hash_join(&s, &left, &right).unwrap();
        let on: Vec<String> = cols.iter().map(|c| c.to_string()).collect();
        let hashed_left = HashedSide::new(&pieces(&left, 4), on).unwrap();
        let got = join(
            &s,
            JoinInput::Hashed(&hashed_left),
            JoinInput::Tables(std::slice::from_ref(&right)),
        );
        assert_eq!(got, whole, "on {cols:?}");
        let lid = got
            .column(got.schema().index_of("lid").unwrap())
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .unwrap()
            .values()
            .to_vec();
        assert!(lid.len() >= 4, "{} rows matched", lid.len());
        assert!(lid.windows(2).all(|w| w[0] <= w[1]), "left order: {lid:?}");
    }
}
