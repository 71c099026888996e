//! `join::hash_join_with`: a device's matcher, stood in for by nested loops here, gives the
//! CPU's joined table; it is asked only for inner and left joins of keys without nulls,
//! and declining leaves the CPU's answer. The tables are shared with the GPU suite.

use super::join::{hash_join, hash_join_with, JoinHow, JoinSpec, Matches};
use super::FrameError;
use arrow::array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, LargeStringArray, RecordBatch,
    StringArray,
};
use arrow::util::display::array_value_to_string;
use std::cell::Cell;
use std::sync::Arc;

/// A left and a right table of `n` and `m` rows keyed by `k` (an integer, Int32 on the
/// left and Int64 on the right) and `s` (a string, Utf8 on the left and LargeUtf8 on the
/// right, one per three values of `k`), with about `m / dups` distinct `k` on the right,
/// some left keys matching none.
pub(crate) fn join_tables(n: usize, m: usize, dups: usize) -> (RecordBatch, RecordBatch) {
    let distinct = (m / dups.max(1)).max(1);
    let left_key = |i: usize| (i * 7919 + 3) % (distinct + distinct / 4 + 1);
    let right_key = |j: usize| (j * 104_729) % distinct;
    let left = RecordBatch::try_from_iter(vec![
        (
            "k",
            Arc::new(Int32Array::from_iter_values(
                (0..n).map(|i| left_key(i) as i32),
            )) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("s{}", left_key(i) / 3)),
            )),
        ),
        (
            "x",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 * 0.5),
            )),
        ),
    ])
    .unwrap();
    let right = RecordBatch::try_from_iter(vec![
        (
            "k",
            Arc::new(Int64Array::from_iter_values(
                (0..m).map(|j| right_key(j) as i64),
            )) as ArrayRef,
        ),
        (
            "s",
            Arc::new(LargeStringArray::from_iter_values(
                (0..m).map(|j| format!("s{}", right_key(j) / 3)),
            )),
        ),
        (
            "y",
            Arc::new(Int64Array::from_iter_values((0..m).map(|j| j as i64))),
        ),
    ])
    .unwrap();
    (left, right)
}

/// The specs the suites try: each key alone and both, inner and left.
pub(crate) fn join_specs() -> Vec<JoinSpec> {
    let on = |k: &[&str], how| {
        let k: Vec<String> = k.iter().map(|s| s.to_string()).collect();
        JoinSpec::new(k.clone(), k, how)
    };
    [JoinHow::Inner, JoinHow::Left]
        .into_iter()
        .flat_map(|how| [on(&["k"], how), on(&["s"], how), on(&["k", "s"], how)])
        .collect()
}

/// Every match by nested loops: probe rows in order, each one's build rows in order.
fn nested_loops(build: &[ArrayRef], probe: &[ArrayRef], keep_unmatched: bool) -> Matches {
    let key = |cols: &[ArrayRef], i: usize| -> Vec<String> {
        cols.iter()
            .map(|c| array_value_to_string(c, i).unwrap())
            .collect()
    };
    let (mut p, mut b) = (Vec::new(), Vec::new());
    for i in 0..probe[0].len() {
        let mut found = false;
        for j in 0..build[0].len() {
            if key(probe, i) == key(build, j) {
                p.push(i as u32);
                b.push(j as u32);
                found = true;
            }
        }
        if !found && keep_unmatched {
            p.push(i as u32);
            b.push(u32::MAX);
        }
    }
    (p, b)
}

#[test]
fn a_matcher_gives_the_cpus_joined_table() {
    for (n, m, dups) in [(50, 40, 1), (120, 90, 4), (7, 300, 30)] {
        let (left, right) = join_tables(n, m, dups);
        for spec in join_specs() {
            let asked = Cell::new(0);
            let matcher = |b: &[ArrayRef], p: &[ArrayRef], keep: bool| {
                asked.set(asked.get() + 1);
                Ok::<_, FrameError>(Some(nested_loops(b, p, keep)))
            };
            let got = hash_join_with(&spec, &left, &right, &matcher).unwrap();
            assert_eq!(got, hash_join(&spec, &left, &right).unwrap(), "{spec:?}");
            assert_eq!(asked.get(), 1);
        }
    }
}

#[test]
fn the_matcher_is_not_asked_for_null_keys_or_right_and_outer_joins() {
    let (left, right) = join_tables(30, 20, 2);
    let asked = Cell::new(0);
    let never = |_: &[ArrayRef], _: &[ArrayRef], _: bool| {
        asked.set(asked.get() + 1);
        Ok::<_, FrameError>(None)
    };
    for how in [JoinHow::Right, JoinHow::Outer] {
        let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
        let got = hash_join_with(&spec, &left, &right, &never).unwrap();
        assert_eq!(got, hash_join(&spec, &left, &right).unwrap());
    }
    let with_null = RecordBatch::try_from_iter(vec![(
        "k",
        Arc::new(Int64Array::from(vec![Some(1), None, Some(0)])) as ArrayRef,
    )])
    .unwrap();
    let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], JoinHow::Inner);
    let got = hash_join_with(&spec, &with_null, &right, &never).unwrap();
    assert_eq!(got, hash_join(&spec, &with_null, &right).unwrap());
    assert_eq!(asked.get(), 0);
    // A matcher that declines leaves the CPU's answer; one that fails stops the join.
    let got = hash_join_with(&spec, &left, &right, &never).unwrap();
    assert_eq!(got, hash_join(&spec, &left, &right).unwrap());
    let fails = |_: &[ArrayRef], _: &[ArrayRef], _: bool| {
        Err(FrameError::InvalidArgument("the device failed".into()))
    };
    assert!(hash_join_with(&spec, &left, &right, &fails).is_err());
}
