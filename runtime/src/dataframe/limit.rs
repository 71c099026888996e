//! Limits folded into sorts: `sort_values(...).head(n)` is a sort that keeps its first `n`
//! rows (a top-k), as `nlargest` is. The sort then selects its `n` rows before ordering
//! them and gathers only those (TPC-H Q10 sorted all 0.5 million of its groups, strings
//! and all, to keep 20), instead of ordering and gathering every row for the head to cut.
//!
//! A sort read by another consumer too keeps its rows: the head stays above it, so the
//! sort is still computed once.

use super::node::{consumers, FrameKind, FrameNode};
use super::prune::rebuild_up;
use std::sync::Arc;

/// `root` with every head of a sort that nothing else reads made that sort's limit.
pub(crate) fn limit_sorts(root: &Arc<FrameNode>) -> Arc<FrameNode> {
    let mut readers = consumers(root);
    rebuild_up(root, |node, inputs| {
        let rebuilt = node.with_inputs(inputs);
        // A node rebuilt over rewritten inputs has the readers the node it replaces had.
        if let Some(&n) = readers.get(&node.id) {
            readers.insert(rebuilt.id, n);
        }
        let FrameKind::Head { input, n } = &rebuilt.kind else {
            return rebuilt;
        };
        let FrameKind::Sort {
            input: rows,
            by,
            limit,
        } = &input.kind
        else {
            return rebuilt;
        };
        if readers.get(&input.id).copied().unwrap_or(0) > 1 {
            return rebuilt;
        }
        let limit = limit.map_or(*n, |l| l.min(*n));
        let sort = FrameNode::new(
            rebuilt.schema.clone(),
            FrameKind::Sort {
                input: rows.clone(),
                by: by.clone(),
                limit: Some(limit),
            },
        );
        if let Some(&n) = readers.get(&node.id) {
            readers.insert(sort.id, n);
        }
        sort
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataframe::testing::{assert_unchanged, ints, left_chunked, session};
    use crate::dataframe::{DataFrame, How};

    fn limited(frame: &DataFrame) -> Arc<FrameNode> {
        limit_sorts(frame.node().unwrap())
    }

    #[test]
    fn a_head_of_a_sort_is_its_limit_and_gives_the_same_rows() {
        for rows in [1, 3, 7, 40] {
            // Keys 0..10 four times each: ties broken by input order, whatever the chunks.
            let frame = left_chunked(rows)
                .sort_values(&["k", "b"], [false, true])
                .head(6);
            let node = limited(&frame);
            assert!(
                matches!(node.kind, FrameKind::Sort { limit: Some(6), .. }),
                "{}",
                frame.explain().unwrap()
            );
            let out = frame.execute(&session()).unwrap();
            assert_eq!(ints(&out, "k"), vec![9, 9, 9, 9, 8, 8], "chunks of {rows}");
            assert_eq!(ints(&out, "b"), vec![109, 119, 129, 139, 108, 118]);
        }
    }

    #[test]
    fn the_smaller_of_a_limit_and_a_head_is_kept() {
        let frame = left_chunked(7).nlargest(3, &["a"]).head(10);
        assert!(matches!(
            limited(&frame).kind,
            FrameKind::Sort { limit: Some(3), .. }
        ));
        let out = frame.execute(&session()).unwrap();
        assert_eq!(ints(&out, "a"), vec![39, 38, 37]);
        let frame = left_chunked(7).nlargest(5, &["a"]).head(2);
        assert!(matches!(
            limited(&frame).kind,
            FrameKind::Sort { limit: Some(2), .. }
        ));
        assert_eq!(ints(&frame.execute(&session()).unwrap(), "a"), vec![39, 38]);
    }

    #[test]
    fn a_sort_read_twice_or_a_head_of_something_else_is_left_alone() {
        let sorted = left_chunked(7).sort_values(&["a"], false);
        // The sort feeds the head and the join: both need all its rows once.
        let shared = sorted
            .head(3)
            .merge(&sorted, &["k"], How::Inner)
            .select(&["a_x"]);
        assert_unchanged(&shared, limit_sorts);
        let out = shared.execute(&session()).unwrap();
        // The top 3 rows (a = 39, 38, 37) each meet the 4 rows of their key.
        assert_eq!(ints(&out, "a_x").len(), 12, "{}", shared.explain().unwrap());
        assert_unchanged(&left_chunked(7).head(3), limit_sorts);
        assert_unchanged(
            &left_chunked(7).sort_values(&["a"], true).select(&["a"]),
            limit_sorts,
        );
    }
}
