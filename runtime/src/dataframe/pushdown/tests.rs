use super::*;
use crate::dataframe::prune::postorder;
use crate::dataframe::testing::{ints, left, left_chunked, right, session};
use crate::dataframe::{DataFrame, How};
use tessera_kernels::frame::expr::{col, lit};

fn pushed(frame: &DataFrame) -> Arc<FrameNode> {
    push_filters(frame.node().unwrap()).unwrap()
}

/// The filters right above each source under `node` (sources in first-seen order; an
/// empty list where a source is read unfiltered).
fn source_filters(node: &Arc<FrameNode>) -> Vec<Vec<Expr>> {
    let nodes = postorder(node);
    nodes
        .iter()
        .filter(|n| n.inputs().is_empty())
        .map(|source| {
            nodes
                .iter()
                .filter_map(|n| match &n.kind {
                    FrameKind::Map { input, steps } if Arc::ptr_eq(input, source) => Some(steps),
                    _ => None,
                })
                .flatten()
                .filter_map(|s| match s {
                    MapStep::Filter(e) => Some(e.clone()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// The filters right above the (one) join under `node`.
fn filters_above_join(node: &Arc<FrameNode>) -> Vec<Expr> {
    postorder(node)
        .iter()
        .filter_map(|n| match &n.kind {
            FrameKind::Map { input, steps } if matches!(input.kind, FrameKind::Join { .. }) => {
                Some(steps.clone())
            }
            _ => None,
        })
        .flatten()
        .filter_map(|s| match s {
            MapStep::Filter(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// `frame`'s Int64 column `name`, its rows sorted by `by`.
fn column_sorted_by(frame: &DataFrame, by: &str, name: &str) -> Vec<i64> {
    let out = frame.sort_values(&[by], true).execute(&session()).unwrap();
    ints(&out, name)
}

#[test]
fn each_conjunct_goes_to_the_side_of_an_inner_join_it_reads() {
    let frame = |rows| {
        left_chunked(rows)
            .merge(&right(), &["k"], How::Inner)
            .filter(
                col("b")
                    .gt(lit(105i64))
                    .and_(col("c").lt(lit(50i64)))
                    .and_((col("b") + col("c")).gt(lit(140i64))),
            )
    };
    let node = pushed(&frame(7));
    assert_eq!(
        source_filters(&node),
        vec![
            vec![col("b").gt(lit(105i64))],
            vec![col("c").lt(lit(50i64))]
        ]
    );
    assert_eq!(
        filters_above_join(&node),
        vec![(col("b") + col("c")).gt(lit(140i64))],
        "what reads both sides stays above"
    );
    // By hand: left row i has k = i % 10, b = 100 + i; its match has c = 10 k.
    let want: Vec<i64> = (0..40)
        .filter(|&i| {
            let (b, c) = (100 + i, 10 * (i % 10));
            b > 105 && c < 50 && b + c > 140
        })
        .map(|i| 100 + i)
        .collect();
    assert!(!want.is_empty());
    for rows in [1, 7, 40] {
        assert_eq!(
            column_sorted_by(&frame(rows), "b", "b"),
            want,
            "{rows} rows a chunk"
        );
    }
}

#[test]
fn a_suffixed_column_goes_down_under_its_own_name() {
    // The right's `a` is `a_y` above the join.
    let frame = left()
        .merge(&right(), &["k"], How::Inner)
        .filter(col("a_y").ge(lit(1007i64)));
    let node = pushed(&frame);
    assert_eq!(
        source_filters(&node),
        vec![vec![], vec![col("a").ge(lit(1007i64))]]
    );
    let want: Vec<i64> = (0..40).filter(|i| i % 10 >= 7).map(|i| 100 + i).collect();
    assert_eq!(column_sorted_by(&frame, "b", "b"), want);
}

#[test]
fn only_the_preserved_side_of_a_left_join_is_filtered_below_it() {
    // Keys 5..10 have no right row: their `c` is null after the left join.
    let few = right().filter(col("k").lt(lit(5i64)));
    let frame = left()
        .merge(&few, &["k"], How::Left)
        .filter(col("c").is_null().and_(col("b").lt(lit(130i64))));
    let node = pushed(&frame);
    // The right's own filter stays; the `c` one does not join it (it would keep no right
    // row, and every left row would come out unmatched).
    assert_eq!(
        source_filters(&node),
        vec![vec![col("b").lt(lit(130i64))], vec![col("k").lt(lit(5i64))]]
    );
    assert_eq!(filters_above_join(&node), vec![col("c").is_null()]);
    let want: Vec<i64> = (0..30).filter(|i| i % 10 >= 5).map(|i| 100 + i).collect();
    assert_eq!(column_sorted_by(&frame, "b", "b"), want);
}

#[test]
fn a_disjunction_over_both_sides_implies_one_on_each() {
    // Q19's shape: (left_1 & right_1) | (left_2 & right_2).
    let pred = col("b")
        .lt(lit(105i64))
        .and_(col("c").eq(lit(0i64)))
        .or_(col("b").gt(lit(135i64)).and_(col("c").eq(lit(90i64))));
    let frame = |rows| {
        left_chunked(rows)
            .merge(&right(), &["k"], How::Inner)
            .filter(pred.clone())
    };
    let node = pushed(&frame(7));
    assert_eq!(
        source_filters(&node),
        vec![
            vec![col("b").lt(lit(105i64)).or_(col("b").gt(lit(135i64)))],
            vec![col("c").eq(lit(0i64)).or_(col("c").eq(lit(90i64)))]
        ]
    );
    assert_eq!(filters_above_join(&node), vec![pred.clone()]);
    // Rows 0 (b 100, k 0) and 39 (b 139, k 9).
    for rows in [1, 7, 40] {
        assert_eq!(column_sorted_by(&frame(rows), "b", "b"), vec![100, 139]);
    }
}

#[test]
fn a_filter_stays_above_a_column_it_reads_and_passes_others() {
    let frame = left()
        .with_column("d", col("a") * lit(2i64))
        .filter(col("d").gt(lit(40i64)).and_(col("a").lt(lit(30i64))));
    let node = pushed(&frame);
    let FrameKind::Map { input, steps } = &node.kind else {
        panic!("a map at the root: {node:?}")
    };
    // The conjunct on `a` goes before the step that makes `d`; the one on `d` stays after.
    assert_eq!(
        *steps,
        vec![
            MapStep::Filter(col("a").lt(lit(30i64))),
            MapStep::WithColumn {
                name: "d".into(),
                expr: col("a") * lit(2i64)
            },
            MapStep::Filter(col("d").gt(lit(40i64)))
        ]
    );
    assert!(input.inputs().is_empty(), "over the source");
    assert_eq!(
        column_sorted_by(&frame, "a", "a"),
        (21..30).collect::<Vec<_>>()
    );
}

#[test]
fn a_groupby_lets_a_filter_on_its_keys_through_and_keeps_one_on_its_results() {
    let sums = left()
        .groupby(&["k"])
        .agg(&[("a", &[crate::dataframe::Agg::Sum])]);
    let frame = sums.filter(col("k").ge(lit(8i64)).and_(col("a").gt(lit(75i64))));
    let node = pushed(&frame);
    assert_eq!(source_filters(&node), vec![vec![col("k").ge(lit(8i64))]]);
    // Key k sums a over k, k+10, k+20, k+30: 4k + 60 (> 75 for k 8 and 9).
    assert_eq!(column_sorted_by(&frame, "k", "a"), vec![92, 96]);
    // A whole-frame aggregation gives its row even from no rows: a constant stays above.
    let total = left().agg(&[("a", &[crate::dataframe::Agg::Sum])]);
    let none = total.filter(lit(false));
    assert_eq!(source_filters(&pushed(&none)), vec![Vec::<Expr>::new()]);
    assert_eq!(none.execute(&session()).unwrap().num_rows(), 0);
    let grouped_none = sums.filter(lit(false));
    assert_eq!(grouped_none.execute(&session()).unwrap().num_rows(), 0);
}

#[test]
fn a_node_read_twice_is_not_filtered_for_one_of_its_readers() {
    // The join `base` is read by the outer join's left side and by the select.
    let base = left().merge(&right(), &["k"], How::Inner);
    let frame = base
        .merge(&base.select(&["k", "c"]), &["k"], How::Inner)
        .filter(col("b").lt(lit(103i64)));
    let node = pushed(&frame);
    let shared = base.node().unwrap();
    let above_shared: Vec<Vec<MapStep>> = postorder(&node)
        .iter()
        .filter_map(|n| match &n.kind {
            FrameKind::Map { input, steps } if Arc::ptr_eq(input, shared) => Some(steps.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        above_shared,
        vec![
            vec![MapStep::Filter(col("b").lt(lit(103i64)))],
            vec![MapStep::Select(vec![col("k"), col("c")])]
        ],
        "the shared join is kept as it was, the filter over it on one reader's side"
    );
    // Rows b = 100, 101, 102, each joined with the 4 rows of its key.
    let out = frame.execute(&session()).unwrap();
    assert_eq!(out.num_rows(), 12);
}

#[test]
fn nothing_to_push_keeps_the_graph_as_it_was() {
    let frame = left()
        .merge(&right(), &["k"], How::Outer)
        .filter(col("c").gt(lit(1i64)));
    let node = pushed(&frame);
    assert!(Arc::ptr_eq(&node, frame.node().unwrap()));
}
