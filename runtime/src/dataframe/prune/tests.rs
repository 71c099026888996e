use super::*;
use crate::dataframe::testing::{ints, left, right, session};
use crate::dataframe::{Agg, DataFrame, How};
use arrow::array::Array;
use tessera_kernels::frame::expr::lit;

/// The columns read from each in-memory source under `node`, sources in first-seen order.
fn source_columns(node: &Arc<FrameNode>) -> Vec<Vec<String>> {
    postorder(node)
        .into_iter()
        .filter(|n| n.inputs().is_empty())
        .map(|source| {
            // The select put over it, if any.
            postorder(node)
                .into_iter()
                .find(|n| matches!(&n.kind, FrameKind::Map { input, .. } if Arc::ptr_eq(input, &source)))
                .map_or_else(|| source.schema.clone(), |m| m.schema.clone())
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        })
        .collect()
}

fn pruned(frame: &DataFrame) -> Arc<FrameNode> {
    prune_columns(frame.node().unwrap()).unwrap()
}

#[test]
fn a_join_reads_its_keys_and_the_columns_read_above_it() {
    let frame = left()
        .filter(col("a").gt(lit(3i64)))
        .merge(&right(), &["k"], How::Inner)
        .select(&["k", "c", "b"]);
    let node = pruned(&frame);
    assert_eq!(
        source_columns(&node),
        vec![vec!["k", "a", "b"], vec!["k", "c"]],
        "the strings and the right's `a` are never read"
    );
    assert_eq!(
        node.schema,
        frame.schema().unwrap(),
        "the same columns come out"
    );
    // The filter's `a` goes right after the filter: the join never sees it.
    let join = postorder(&node)
        .into_iter()
        .find(|n| matches!(n.kind, FrameKind::Join { .. }))
        .unwrap();
    let FrameKind::Join { left, .. } = &join.kind else {
        unreachable!()
    };
    let left_names: Vec<&str> = left
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(left_names, ["k", "b"]);
    // And the same rows: a > 3 leaves rows 4..40, each joined to its key's one right row.
    let out = frame.sort_values(&["b"], true).execute(&session()).unwrap();
    assert_eq!(ints(&out, "b"), (104..140).collect::<Vec<_>>());
    let want_c: Vec<i64> = (4..40).map(|i| 10 * (i % 10)).collect();
    assert_eq!(ints(&out, "c"), want_c);
}

#[test]
fn both_copies_of_a_suffixed_name_are_read_where_one_is() {
    let frame = left().merge(&right(), &["k"], How::Inner).select(&["a_y"]);
    let node = pruned(&frame);
    assert_eq!(
        source_columns(&node),
        vec![vec!["k", "a"], vec!["k", "a"]],
        "a_y keeps its suffix only while the left's `a` is there"
    );
    let mut got = ints(&frame.execute(&session()).unwrap(), "a_y");
    got.sort_unstable();
    let mut want: Vec<i64> = (0..40).map(|i| 1000 + i % 10).collect();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn a_node_read_twice_reads_what_both_readers_need_and_is_planned_once() {
    let base = left().with_column("unused", col("s"));
    let sums = base.groupby(&["k"]).agg(&[("a", &[Agg::Sum])]);
    let frame = base
        .merge(&sums, &["k"], How::Inner)
        .select(&["k", "b", "a_y"]);
    let node = pruned(&frame);
    // One source, read once: the groupby's `k, a` and the join's `k, b`.
    assert_eq!(source_columns(&node), vec![vec!["k", "a", "b"]]);
    let shared: Vec<_> = postorder(&node)
        .into_iter()
        .filter(|n| matches!(n.kind, FrameKind::Map { .. }))
        .collect();
    assert!(
        shared
            .iter()
            .all(|m| !m.schema.fields().iter().any(|f| f.name() == "unused")),
        "the column nothing reads is not computed"
    );
    let out = frame.sort_values(&["b"], true).execute(&session()).unwrap();
    // Each key's sum of a: k + (k+10) + (k+20) + (k+30).
    let want: Vec<i64> = (0..40).map(|i| 4 * (i % 10) + 60).collect();
    assert_eq!(ints(&out, "a_y"), want);
}

#[test]
fn the_root_keeps_its_columns_in_order_through_replaced_renamed_and_dropped_columns() {
    let frame = left()
        .with_column("a", col("b") + lit(1i64))
        .merge(&right(), &["k"], How::Left)
        .rename(&[("c", "cc")])
        .drop(&["s", "a_y"]);
    let node = pruned(&frame);
    assert_eq!(node.schema, frame.schema().unwrap());
    assert_eq!(
        source_columns(&node),
        vec![vec!["k", "a", "b"], vec!["k", "c", "a"]]
    );
    let out = frame.sort_values(&["b"], true).execute(&session()).unwrap();
    assert_eq!(
        out.schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["k", "a_x", "b", "cc"]
    );
    assert_eq!(ints(&out, "a_x"), (101..141).collect::<Vec<_>>());
}

#[test]
fn a_count_of_rows_reads_one_column() {
    let frame = left().merge(&right(), &["k"], How::LeftSemi);
    let node = pruned(&frame.select(&["s"]));
    assert_eq!(source_columns(&node), vec![vec!["k", "s"], vec!["k"]]);
    assert_eq!(frame.len(&session()).unwrap(), 40);
    let counted = pruned(&left().agg(&[("k", &[Agg::Size])]));
    assert_eq!(source_columns(&counted), vec![vec!["k"]]);
    let rows = left()
        .agg(&[("k", &[Agg::Size])])
        .execute(&session())
        .unwrap();
    assert_eq!(rows.num_rows(), 1);
    assert_eq!(rows.column(0).len(), 1);
}
