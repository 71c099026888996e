use super::*;
use crate::dataframe::testing::{assert_unchanged, ints, left_chunked, right, session};
use crate::dataframe::{col, lit, Agg, DataFrame, How};
use arrow::array::RecordBatch;

/// `frame`'s plan after the rule (reducing frames of any size).
fn reduced(frame: &DataFrame) -> Arc<FrameNode> {
    reduce_with(frame.node().expect("frame builds"), 0.0)
}

/// How many semi joins of the plan read `by` as their right side.
fn semis_by(node: &Arc<FrameNode>, by: &Arc<FrameNode>) -> usize {
    postorder(node)
        .iter()
        .filter(|n| {
            matches!(&n.kind, FrameKind::Join { right, spec, .. }
                if spec.how == JoinHow::LeftSemi && right.id == by.id)
        })
        .count()
}

fn run(node: Arc<FrameNode>) -> RecordBatch {
    DataFrame::build(|| Ok(node)).execute(&session()).unwrap()
}

/// The right's keys with `c == 20` (key 2): an equality keeps a tenth of it.
fn selective() -> DataFrame {
    right().filter(col("c").eq(lit(20i64))).select(&["k"])
}

/// TPC-H Q2's shape: `below` (the left joined with a dimension on `k`) joined with
/// `chosen`, and per key the sum of `a` over the rows of `below` whose keys that join (or
/// `chosen` itself) has, as the groupby reduction leaves a subquery, joined back.
fn q2_shape(below: &DataFrame, chosen: &DataFrame, semi_with_join: bool) -> DataFrame {
    let joined = below.merge(chosen, &["k"], How::Inner);
    let within = if semi_with_join { &joined } else { chosen };
    let keys = ["k".to_string()];
    let semi = semi_join(below.node().unwrap(), within.node().unwrap(), &keys, &keys);
    let totals = DataFrame::build(|| Ok(semi))
        .groupby(&["k"])
        .agg_as(&[("total", "a", Agg::Sum)]);
    joined.merge(&totals, &["k"], How::Inner)
}

fn dimension() -> DataFrame {
    right().select(&["k", "c"])
}

#[test]
fn a_shared_join_input_is_reduced_below_its_joins_for_every_reader() {
    for rows in [1, 7, 40] {
        for semi_with_join in [true, false] {
            let below = left_chunked(rows).merge(&dimension(), &["k"], How::Inner);
            let chosen = selective();
            let frame = q2_shape(&below, &chosen, semi_with_join);
            let node = reduced(&frame);
            let explained = super::super::explain::explain(&node).unwrap();
            // Both inputs of the join below (`k` is its key pair), once each.
            let by = chosen.node().unwrap();
            assert_eq!(
                semis_by(&node, by),
                2 + usize::from(!semi_with_join),
                "{explained}"
            );
            let out = run(node);
            // Key 2's rows: `a` 2, 12, 22, 32 with their `c` of 20 and the total 68.
            assert_eq!(ints(&out, "k"), vec![2; 4]);
            assert_eq!(ints(&out, "a"), vec![2, 12, 22, 32]);
            assert_eq!(ints(&out, "c"), vec![20; 4]);
            assert_eq!(ints(&out, "total"), vec![68; 4]);
            // The plan as written gives the same table.
            assert_eq!(out, frame.execute(&session()).unwrap(), "{explained}");
        }
    }
}

#[test]
fn a_key_of_one_side_of_the_join_below_reduces_that_side() {
    // Joined on the dimension's `c` (20: key 2), which only the dimension has.
    let by_c = right().filter(col("c").eq(lit(20i64))).select(&["c"]);
    let below = left_chunked(7).merge(&dimension(), &["k"], How::Inner);
    let joined = below.merge(&by_c, &["c"], How::Inner);
    let keys = ["c".to_string()];
    let semi = semi_join(below.node().unwrap(), joined.node().unwrap(), &keys, &keys);
    let totals = DataFrame::build(|| Ok(semi))
        .groupby(&["c"])
        .agg_as(&[("total", "a", Agg::Sum)]);
    let frame = joined.merge(&totals, &["c"], How::Inner);
    let node = reduced(&frame);
    assert_eq!(semis_by(&node, by_c.node().unwrap()), 1);
    let out = run(node);
    assert_eq!(ints(&out, "a"), vec![2, 12, 22, 32]);
    assert_eq!(ints(&out, "total"), vec![68; 4]);
}

#[test]
fn nothing_changes_where_a_reader_keeps_other_rows_or_nothing_is_selective() {
    let unchanged = |frame: DataFrame| assert_unchanged(&frame, |n| reduce_with(n, 0.0));
    let below = left_chunked(7).merge(&dimension(), &["k"], How::Inner);
    // The other reader keeps every row.
    let joined = below.merge(&selective(), &["k"], How::Inner);
    let totals = below.groupby(&["k"]).agg_as(&[("total", "a", Agg::Sum)]);
    unchanged(joined.merge(&totals, &["k"], How::Inner));
    // A semi join with another frame (key 3).
    let other = right().filter(col("c").eq(lit(30i64))).select(&["k"]);
    let totals = below
        .semi_join(&other, &["k"], &["k"])
        .groupby(&["k"])
        .agg_as(&[("total", "a", Agg::Sum)]);
    unchanged(joined.merge(&totals, &["k"], How::Inner));
    // Two inner joins with different frames.
    let both = below
        .merge(&selective(), &["k"], How::Inner)
        .select(&["k", "a"]);
    let again = below.merge(&other, &["k"], How::Inner).select(&["k", "a"]);
    unchanged(crate::dataframe::concat(&[both, again]));
    // The frame keeps all its rows.
    let all = right().select(&["k"]);
    unchanged(q2_shape(&below, &all, true));
    // No join below the shared frame: its joins drop the rows themselves.
    unchanged(q2_shape(&left_chunked(7), &selective(), true));
    // A left join below keeps its unmatched rows.
    let left_below = left_chunked(7).merge(&dimension(), &["k"], How::Left);
    unchanged(q2_shape(&left_below, &selective(), true));
}
