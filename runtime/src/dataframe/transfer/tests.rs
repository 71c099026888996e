use super::*;
use crate::dataframe::prune::postorder;
use crate::dataframe::testing::{ints, left_chunked, right, session};
use crate::dataframe::{col, lit, DataFrame, How};
use arrow::array::RecordBatch;

/// `frame`'s plan after the rule (reducing frames of any size).
fn reduced(frame: &DataFrame) -> Arc<FrameNode> {
    reduce_with(frame.node().expect("frame builds"), 0.0)
}

/// The left keys of the plan's semi joins, in the plan's order.
fn semis(node: &Arc<FrameNode>) -> Vec<Vec<String>> {
    postorder(node)
        .iter()
        .filter_map(|n| match &n.kind {
            FrameKind::Join { spec, .. } if spec.how == JoinHow::LeftSemi => {
                Some(spec.left_on.clone())
            }
            _ => None,
        })
        .collect()
}

fn run(node: Arc<FrameNode>) -> RecordBatch {
    DataFrame::build(|| Ok(node)).execute(&session()).unwrap()
}

/// The right's keys with `c == 20` (key 2): an equality keeps a tenth of it.
fn selective() -> DataFrame {
    right().filter(col("c").eq(lit(20i64))).select(&["k"])
}

/// Key 2 of the left (`a` 2, 12, 22, 32) with its `c` of 20, in the left's order.
fn check_key_2(out: &RecordBatch, key: &str) {
    assert_eq!(ints(out, key), vec![2; 4]);
    assert_eq!(ints(out, "a"), vec![2, 12, 22, 32]);
    assert_eq!(ints(out, "c"), vec![20; 4]);
}

#[test]
fn the_inputs_of_a_join_under_a_selective_join_are_reduced() {
    for rows in [1, 7, 40] {
        // The key pair of the join below (same name): both of its inputs are reduced.
        let dim = right().select(&["k", "c"]);
        let below = left_chunked(rows).merge(&dim, &["k"], How::Inner);
        let frame = below
            .filter(col("b").gt(lit(0i64)))
            .merge(&selective(), &["k"], How::Inner);
        let node = reduced(&frame);
        let explained = super::super::explain::explain(&node).unwrap();
        assert_eq!(semis(&node), vec![vec!["k".to_string()]; 2], "{explained}");
        check_key_2(&run(node), "k");
        // Keys of other names: the left's `fk` is paired with the right's `k` below.
        let renamed = left_chunked(rows).rename(&[("k", "fk")]);
        let below = renamed.merge_on(&dim, &["fk"], &["k"], How::Inner, ("_x", "_y"));
        let frame = below.merge(&selective(), &["k"], How::Inner);
        let node = reduced(&frame);
        let explained = super::super::explain::explain(&node).unwrap();
        let keys: Vec<Vec<String>> = vec![vec!["fk".into()], vec!["k".into()]];
        assert_eq!(semis(&node), keys, "{explained}");
        check_key_2(&run(node), "fk");
        // A key of one side only (`c`, the dimension's): that side alone.
        let by_c = right().filter(col("c").eq(lit(20i64))).select(&["c"]);
        let frame =
            left_chunked(rows)
                .merge(&dim, &["k"], How::Inner)
                .merge(&by_c, &["c"], How::Inner);
        let node = reduced(&frame);
        assert_eq!(semis(&node), vec![vec!["c".to_string()]]);
        check_key_2(&run(node), "k");
    }
}

#[test]
fn nothing_changes_where_the_rule_does_not_hold() {
    let unchanged = |frame: DataFrame| {
        let node = frame.node().unwrap().clone();
        assert!(
            Arc::ptr_eq(&reduced(&frame), &node),
            "{}",
            frame.explain().unwrap()
        );
    };
    let dim = right().select(&["k", "c"]);
    let below = left_chunked(7).merge(&dim, &["k"], How::Inner);
    // The other side keeps all its rows.
    unchanged(below.merge(&right().select(&["k"]), &["k"], How::Inner));
    // No join below: the join itself drops the rows.
    unchanged(left_chunked(7).merge(&selective(), &["k"], How::Inner));
    // A left join below keeps its unmatched rows; so does the left of a left join above.
    let left_below = left_chunked(7).merge(&dim, &["k"], How::Left);
    unchanged(left_below.merge(&selective(), &["k"], How::Inner));
    unchanged(below.merge(&selective(), &["k"], How::Left));
    // The join below read by another consumer too: it must keep every row for it.
    let both = below.merge(&selective(), &["k"], How::Inner);
    unchanged(crate::dataframe::concat(&[both, below.clone()]));
    // A key remade on the way.
    let remade = below.with_column("k", col("k") + lit(1i64));
    unchanged(remade.merge(&selective(), &["k"], How::Inner));
    // A key on both sides of the join below without being its key pair (renamed there).
    let clash = right()
        .select(&["k", "c"])
        .rename(&[("k", "j")])
        .with_column("k", col("j"));
    let below = left_chunked(7).merge_on(&clash, &["k"], &["j"], How::Inner, ("_x", "_y"));
    unchanged(below.merge(&selective().rename(&[("k", "k_x")]), &["k_x"], How::Inner));
}
