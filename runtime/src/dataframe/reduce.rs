//! Semi-join reduction of groupbys: a keyed groupby whose result is joined on its keys with
//! a selective frame aggregates only the rows whose keys that frame has.
//!
//! An inner join drops the groups whose keys the other side lacks, so the groupby may as
//! well never see their rows: its input is semi-joined first with the other side's keys
//! (TPC-H Q21 counts the suppliers of every order of lineitem, then keeps the few orders a
//! filtered join produced; Q17 and Q20 are alike). The same holds for the right side of a
//! left join, the left of a right join and the left of a semi join. The other side is
//! then read twice (by the join and by the semi join) and computed once.
//!
//! It pays only when the other side keeps a small share of its base rows (its keys are
//! then few; see [`super::estimate`]) and the groupby's input is large enough for the
//! semi join's probe to cost less than the groupby it saves. Between the join and the
//! groupby there may be row-wise steps (filters, selects) that leave the key columns as
//! they are; every node on that path must have the join as its only reader, so that no
//! other consumer sees fewer rows.

use super::estimate::Estimates;
use super::node::{consumers, FrameKind, FrameNode};
use super::prune::rebuild_up;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::frame::expr::Expr;
use tessera_kernels::frame::join::{JoinHow, JoinSpec};
use tessera_kernels::frame::map::MapStep;

/// The other side must keep at most this share of its base rows.
pub(super) const MAX_KEPT: f64 = 0.25;
/// The frame reduced (a groupby's input, or a shared join input's large input) must have at
/// least this many estimated rows.
pub(super) const MIN_ROWS: f64 = (1 << 16) as f64;

/// `root` with the groupbys that [the rule](self) applies to reduced by the frames they
/// are joined with.
pub(crate) fn reduce_groupbys(root: &Arc<FrameNode>) -> Arc<FrameNode> {
    reduce_with(root, MIN_ROWS)
}

/// [`reduce_groupbys`], reducing inputs of at least `min_rows` estimated rows.
fn reduce_with(root: &Arc<FrameNode>, min_rows: f64) -> Arc<FrameNode> {
    let mut readers = consumers(root);
    let mut estimates = Estimates::default();
    rebuild_up(root, |node, inputs| {
        let mut rebuilt = node.with_inputs(inputs);
        // A node rebuilt over rewritten inputs has the readers the node it replaces had.
        if let Some(&n) = readers.get(&node.id) {
            readers.insert(rebuilt.id, n);
        }
        if let FrameKind::Join { left, right, spec } = &rebuilt.kind {
            if let Some(c) = Candidate::best(left, right, spec, &readers, &mut estimates, min_rows)
            {
                rebuilt = c.apply(&rebuilt);
            }
        }
        rebuilt
    })
}

/// One side of a join that can be reduced by the other.
struct Candidate {
    /// Reduce the left side (else the right).
    left: bool,
    /// The estimated rows of the groupby's input.
    rows: f64,
}

impl Candidate {
    /// The side worth reducing, the one whose groupby reads most rows where both are.
    fn best(
        left: &Arc<FrameNode>,
        right: &Arc<FrameNode>,
        spec: &JoinSpec,
        readers: &HashMap<u64, usize>,
        estimates: &mut Estimates,
        min_rows: f64,
    ) -> Option<Candidate> {
        let (left_may, right_may) = match spec.how {
            JoinHow::Inner => (true, true),
            JoinHow::LeftSemi | JoinHow::Right => (true, false),
            JoinHow::Left => (false, true),
            JoinHow::LeftAnti | JoinHow::LeftMark | JoinHow::Outer => (false, false),
        };
        let mut best: Option<Candidate> = None;
        for (is_left, may) in [(true, left_may), (false, right_may)] {
            let (side, other, keys) = if is_left {
                (left, right, &spec.left_on)
            } else {
                (right, left, &spec.right_on)
            };
            if !may {
                continue;
            }
            let Some(FrameKind::GroupBy { input, .. }) =
                reduced_groupby(side, keys, readers).map(|g| &g.kind)
            else {
                continue;
            };
            let (input, other) = (estimates.of(input), estimates.of(other));
            let pays = other.kept <= MAX_KEPT && input.rows >= min_rows && other.rows < input.rows;
            if pays && best.as_ref().is_none_or(|b| b.rows < input.rows) {
                best = Some(Candidate {
                    left: is_left,
                    rows: input.rows,
                });
            }
        }
        best
    }

    /// `join` with its chosen side's groupby reading only the rows whose keys the other
    /// side has.
    fn apply(&self, join: &Arc<FrameNode>) -> Arc<FrameNode> {
        let FrameKind::Join { left, right, spec } = &join.kind else {
            return join.clone();
        };
        let (side, other, keys, other_keys) = if self.left {
            (left, right, &spec.left_on, &spec.right_on)
        } else {
            (right, left, &spec.right_on, &spec.left_on)
        };
        let reduced = rebuild_path(side, &|input| semi_join(input, other, keys, other_keys));
        join.with_inputs(if self.left {
            vec![reduced, right.clone()]
        } else {
            vec![left.clone(), reduced]
        })
    }
}

/// The groupby under `side` that [the rule](self) may reduce by the join keys `keys`: the
/// first node below `side` through row-wise steps that keep `keys` unchanged, a groupby
/// with all of `keys` among its keys; every node on the way (`side` too) read only by its
/// parent.
fn reduced_groupby<'n>(
    side: &'n Arc<FrameNode>,
    keys: &[String],
    readers: &HashMap<u64, usize>,
) -> Option<&'n Arc<FrameNode>> {
    let mut node = side;
    loop {
        // Read by another consumer too, it would be computed twice: whole for that one,
        // reduced for the join.
        if readers.get(&node.id).copied().unwrap_or(0) > 1 {
            return None;
        }
        match &node.kind {
            FrameKind::Map { input, steps } if steps.iter().all(|s| keeps(s, keys)) => {
                node = input;
            }
            FrameKind::GroupBy { spec, .. } if keys.iter().all(|k| spec.keys.contains(k)) => {
                return Some(node);
            }
            _ => return None,
        }
    }
}

/// Whether the row-wise step `step` leaves the columns `keys` as they were.
pub(super) fn keeps(step: &MapStep, keys: &[String]) -> bool {
    match step {
        MapStep::Filter(_) => true,
        MapStep::WithColumn { name, .. } => !keys.contains(name),
        MapStep::Select(exprs) => keys
            .iter()
            .all(|k| exprs.iter().any(|e| matches!(e, Expr::Column(c) if c == k))),
        MapStep::Drop(cols) => !keys.iter().any(|k| cols.contains(k)),
        MapStep::Rename(pairs) => !pairs
            .iter()
            .any(|(from, to)| keys.contains(from) || keys.contains(to)),
    }
}

/// `side` rebuilt down to its groupby, whose input is replaced by `reduce(input)`.
fn rebuild_path(
    side: &Arc<FrameNode>,
    reduce: &dyn Fn(&Arc<FrameNode>) -> Arc<FrameNode>,
) -> Arc<FrameNode> {
    match &side.kind {
        FrameKind::Map { input, .. } => side.with_inputs(vec![rebuild_path(input, reduce)]),
        FrameKind::GroupBy { input, .. } => side.with_inputs(vec![reduce(input)]),
        _ => side.clone(),
    }
}

/// The rows of `input` whose `keys` occur among `other`'s `other_keys`.
pub(super) fn semi_join(
    input: &Arc<FrameNode>,
    other: &Arc<FrameNode>,
    keys: &[String],
    other_keys: &[String],
) -> Arc<FrameNode> {
    let spec = JoinSpec {
        left_on: keys.to_vec(),
        right_on: other_keys.to_vec(),
        how: JoinHow::LeftSemi,
        suffixes: ("_x".into(), "_y".into()),
        indicator: None,
    };
    FrameNode::new(
        input.schema.clone(),
        FrameKind::Join {
            left: input.clone(),
            right: other.clone(),
            spec,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataframe::prune::postorder;
    use crate::dataframe::testing::{assert_unchanged, ints, left_chunked, right, session};
    use crate::dataframe::{col, lit, Agg, DataFrame, How};

    /// `frame`'s plan after the reduction (of inputs of any size).
    fn reduced(frame: &DataFrame) -> Arc<FrameNode> {
        reduce_with(frame.node().expect("frame builds"), 0.0)
    }

    /// Whether a semi join reads what a groupby under `node` aggregates.
    fn groupby_reduced(node: &Arc<FrameNode>) -> bool {
        postorder(node).iter().any(|n| match &n.kind {
            FrameKind::GroupBy { input, .. } => {
                let mut below = input;
                while let FrameKind::Map { input, .. } = &below.kind {
                    below = input;
                }
                matches!(&below.kind, FrameKind::Join { spec, .. } if spec.how == JoinHow::LeftSemi)
            }
            _ => false,
        })
    }

    /// Per key of `left` (keys 0..10, four rows each), the sum of `a`, as a frame `k, total`.
    fn totals(rows: usize) -> DataFrame {
        left_chunked(rows)
            .groupby(&["k"])
            .agg_as(&[("total", "a", Agg::Sum)])
    }

    /// The right's row with `c == 20` (key 2): an equality keeps a tenth of it.
    fn selective() -> DataFrame {
        right().filter(col("c").eq(lit(20i64)))
    }

    #[test]
    fn a_groupby_joined_with_a_selective_frame_reads_only_its_keys() {
        for rows in [1, 7, 40] {
            // Through a filter and a select on the groupby's side, on either side of the join.
            let grouped = totals(rows)
                .filter(col("total").gt(lit(0i64)))
                .select(&["k", "total"]);
            for frame in [
                selective().merge(&grouped, &["k"], How::Inner),
                grouped.merge(&selective(), &["k"], How::Inner),
                selective().merge(&grouped, &["k"], How::Left),
                grouped.semi_join(&selective(), &["k"], &["k"]),
            ] {
                let node = reduced(&frame);
                assert!(
                    groupby_reduced(&node),
                    "{}",
                    super::super::explain::explain(&node).unwrap()
                );
                // Key 2's rows are a = 2, 12, 22, 32.
                let out = DataFrame::build(|| Ok(node)).execute(&session()).unwrap();
                assert_eq!(ints(&out, "k"), vec![2]);
                assert_eq!(ints(&out, "total"), vec![68]);
            }
        }
    }

    #[test]
    fn nothing_changes_where_the_rule_does_not_hold_or_pay() {
        let unchanged = |frame: DataFrame| assert_unchanged(&frame, |n| reduce_with(n, 0.0));
        // The other side keeps all its rows.
        unchanged(right().merge(&totals(7), &["k"], How::Inner));
        // An outer join keeps the groups the other side lacks; so does the left of a left
        // join, and an anti join keeps exactly those.
        unchanged(selective().merge(&totals(7), &["k"], How::Outer));
        unchanged(totals(7).merge(&selective(), &["k"], How::Left));
        unchanged(totals(7).anti_join(&selective(), &["k"], &["k"]));
        // Joined on an aggregate, not a key.
        let on_total = selective().rename(&[("k", "total")]);
        unchanged(totals(7).merge(&on_total, &["total"], How::Inner));
        // A key remade between the groupby and the join.
        let remade = totals(7).with_column("k", col("k") + lit(1i64));
        unchanged(remade.merge(&selective(), &["k"], How::Inner));
        // The groupby read by another consumer too: it must keep every group for it.
        let shared = totals(7);
        let both = shared
            .merge(&selective(), &["k"], How::Inner)
            .select(&["k", "total"]);
        unchanged(crate::dataframe::concat(&[both, shared]));
        // The same, where the shared groupby was rebuilt because a reduction below it
        // changed its input: only that reduction is made.
        let inner = selective().merge(&totals(7), &["k"], How::Inner);
        let shared = inner.groupby(&["k"]).agg_as(&[("n", "total", Agg::Sum)]);
        // (More selective than the inner join's estimate, so a reduction would pay.)
        let very = selective().filter(col("k").eq(lit(2i64)).and_(col("a").eq(lit(1002i64))));
        let both = shared.merge(&very, &["k"], How::Inner).select(&["k", "n"]);
        let node = reduced(&crate::dataframe::concat(&[both, shared]));
        let semis = postorder(&node)
            .iter()
            .filter(|n| matches!(&n.kind, FrameKind::Join { spec, .. } if spec.how == JoinHow::LeftSemi))
            .count();
        assert_eq!(
            semis,
            1,
            "{}",
            super::super::explain::explain(&node).unwrap()
        );
    }
}
