//! Tables shared by the CPU's tests and the CUDA crate's GPU suite (the `testing` feature),
//! so that both devices are checked on the same rows.

// Fixed columns of equal lengths: building their batch cannot fail.
#![allow(clippy::unwrap_used)]

use super::join::{JoinHow, JoinSpec};
use arrow::array::{
    ArrayRef, Float64Array, Int16Array, Int32Array, Int64Array, LargeStringArray, RecordBatch,
    StringArray, UInt8Array,
};
use std::sync::Arc;

/// A left and a right table of `n` and `m` rows keyed by `k` (an integer, Int32 on the
/// left and Int64 on the right) and `s` (a string, Utf8 on the left and LargeUtf8 on the
/// right, one per three values of `k`), with about `m / dups` distinct `k` on the right,
/// some left keys matching none; their values are `x` (Float64) and `w` (UInt8, every
/// fifth null) on the left, `y` (Int64) and `z` (Int16, every seventh null) on the right.
pub fn join_tables(n: usize, m: usize, dups: usize) -> (RecordBatch, RecordBatch) {
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
        (
            "w",
            Arc::new(UInt8Array::from_iter(
                (0..n).map(|i| (i % 5 != 0).then_some(i as u8)),
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
        (
            "z",
            Arc::new(Int16Array::from_iter(
                (0..m).map(|j| (j % 7 != 0).then_some(j as i16)),
            )),
        ),
    ])
    .unwrap();
    (left, right)
}

/// The specs the suites try: each key alone and both, inner and left.
pub fn join_specs() -> Vec<JoinSpec> {
    let on = |k: &[&str], how| {
        let k: Vec<String> = k.iter().map(|s| s.to_string()).collect();
        JoinSpec::new(k.clone(), k, how)
    };
    [JoinHow::Inner, JoinHow::Left]
        .into_iter()
        .flat_map(|how| [on(&["k"], how), on(&["s"], how), on(&["k", "s"], how)])
        .collect()
}
