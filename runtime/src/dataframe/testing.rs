//! Small frames the optimizer passes' tests share.

use crate::dataframe::node::FrameNode;
use crate::dataframe::{from_arrow, DataFrame};
use crate::{Progress, Session};
use arrow::array::{Int64Array, RecordBatch, StringArray};
use std::sync::Arc;

/// `k, a, b, s`: 40 rows, keys 0..10 four times each, `s` a string nobody should read.
pub(crate) fn left() -> DataFrame {
    left_chunked(7)
}

/// [`left`] in chunks of `rows` rows.
pub(crate) fn left_chunked(rows: usize) -> DataFrame {
    let k: Vec<i64> = (0..40).map(|i| i % 10).collect();
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as _),
        ("a", Arc::new(Int64Array::from_iter_values(0..40)) as _),
        ("b", Arc::new(Int64Array::from_iter_values(100..140)) as _),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..40).map(|i| format!("row {i}")),
            )) as _,
        ),
    ])
    .unwrap();
    from_arrow(batch, Some(rows))
}

/// `k, c, a`: keys 0..10 once, `c = 10 k`, and an `a` that clashes with the left's.
pub(crate) fn right() -> DataFrame {
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from_iter_values(0..10)) as _),
        (
            "c",
            Arc::new(Int64Array::from_iter_values((0..10).map(|k| 10 * k))) as _,
        ),
        ("a", Arc::new(Int64Array::from_iter_values(1000..1010)) as _),
    ])
    .unwrap();
    from_arrow(batch, Some(3))
}

pub(crate) fn session() -> Session {
    Session::builder()
        .threads(2)
        .progress(Progress::Never)
        .build()
        .unwrap()
}

/// The values of the Int64 column `name`.
pub(crate) fn ints(batch: &RecordBatch, name: &str) -> Vec<i64> {
    let c = batch.column_by_name(name).unwrap();
    c.as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .values()
        .to_vec()
}

/// Asserts that the optimizer pass `pass` leaves `frame`'s plan as it is (the same node).
pub(crate) fn assert_unchanged(
    frame: &DataFrame,
    pass: impl Fn(&Arc<FrameNode>) -> Arc<FrameNode>,
) {
    let node = frame.node().expect("frame builds");
    assert!(
        Arc::ptr_eq(&pass(node), node),
        "{}",
        frame.explain().unwrap()
    );
}
