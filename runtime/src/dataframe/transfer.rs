//! Semi-join reduction through joins: an inner join with a selective frame drops the rows
//! whose keys that frame lacks, so the large inputs of the joins *below* it may drop them
//! first, before they are joined.
//!
//! TPC-H Q5 joins customers, orders, lineitems and suppliers, and only then the five
//! nations of one region: the key `s_nationkey` it joins on comes from the suppliers, and
//! the join below equates it with `c_nationkey`, so both the suppliers and the customers
//! are semi-joined with those nations before the big joins run (a fifth of the customers,
//! so a fifth of the orders and lineitems flow through them). The selective frame is read
//! by the join and by each semi join, and computed once.
//!
//! From the join, the rule walks down the other side through row-wise steps that leave the
//! key columns as they are and through inner joins — into the side that has the key
//! columns, and into both where the keys are that join's own key pairs (equal values on
//! both sides) — and reduces the frame where the walk stops, if it passed at least one join
//! (the join itself reduces what is right under it) and the frame is large. Every node on
//! the way must have its parent as its only reader, so that no other consumer sees fewer
//! rows. Removing rows whose keys the selective frame lacks removes exactly the rows the
//! join would drop, and semi joins keep their input's order, so the result is the same.
//! Outer, left and existence joins stop the walk: their unmatched rows are kept.

use super::estimate::Estimates;
use super::node::{consumers, FrameKind, FrameNode};
use super::prune::rebuild_up;
use super::reduce::{keeps, semi_join, MAX_KEPT, MIN_ROWS};
use arrow::datatypes::Schema;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::frame::join::{JoinHow, JoinSpec};

/// `root` with the inputs of the joins under selective inner joins reduced as [the
/// rule](self) says.
pub(crate) fn reduce_through_joins(root: &Arc<FrameNode>) -> Arc<FrameNode> {
    reduce_with(root, MIN_ROWS)
}

/// [`reduce_through_joins`], reducing frames of at least `min_rows` estimated rows.
fn reduce_with(root: &Arc<FrameNode>, min_rows: f64) -> Arc<FrameNode> {
    let mut walk = Walk {
        readers: consumers(root),
        estimates: Estimates::default(),
        min_rows,
    };
    rebuild_up(root, |node, inputs| {
        let mut rebuilt = node.with_inputs(inputs);
        // A node rebuilt over rewritten inputs has the readers the node it replaces had.
        if let Some(&n) = walk.readers.get(&node.id) {
            walk.readers.insert(rebuilt.id, n);
        }
        if let FrameKind::Join { left, right, spec } = &rebuilt.kind {
            if spec.how == JoinHow::Inner {
                if let Some(reduced) = walk.join(left, right, spec) {
                    rebuilt = rebuilt.with_inputs(reduced);
                }
            }
        }
        rebuilt
    })
}

/// What the walks of one plan share.
struct Walk {
    readers: HashMap<u64, usize>,
    estimates: Estimates,
    min_rows: f64,
}

/// The frame a walk reduces by: rows are kept where their keys occur among `frame`'s
/// `keys`.
struct By<'a> {
    frame: &'a Arc<FrameNode>,
    keys: &'a [String],
}

impl Walk {
    /// The inputs of the inner join of `left` and `right`, each reduced below by the other
    /// where that side is selective; `None` where neither changes.
    fn join(
        &mut self,
        left: &Arc<FrameNode>,
        right: &Arc<FrameNode>,
        spec: &JoinSpec,
    ) -> Option<Vec<Arc<FrameNode>>> {
        let mut sides = [left.clone(), right.clone()];
        let mut changed = false;
        for (side, other, keys, other_keys) in [
            (0, right, &spec.left_on, &spec.right_on),
            (1, left, &spec.right_on, &spec.left_on),
        ] {
            if self.estimates.of(other).kept > MAX_KEPT {
                continue;
            }
            let by = By {
                frame: other,
                keys: other_keys,
            };
            if let Some(reduced) = self.reduce(&sides[side], keys, &by, false) {
                sides[side] = reduced;
                changed = true;
            }
        }
        changed.then(|| sides.to_vec())
    }

    /// `node` with its rows whose `keys` do not occur in `by` removed as far down as the
    /// walk reaches (see [the rule](self)); `None` where nothing is reduced. `below_join`:
    /// the walk has passed a join.
    fn reduce(
        &mut self,
        node: &Arc<FrameNode>,
        keys: &[String],
        by: &By<'_>,
        below_join: bool,
    ) -> Option<Arc<FrameNode>> {
        // Read by another consumer too, it would have to keep every row for that one.
        if self.readers.get(&node.id).copied().unwrap_or(0) > 1 {
            return None;
        }
        let descended = match &node.kind {
            FrameKind::Map { input, steps } if steps.iter().all(|s| keeps(s, keys)) => self
                .reduce(input, keys, by, below_join)
                .map(|input| node.with_inputs(vec![input])),
            FrameKind::Join { left, right, spec } if spec.how == JoinHow::Inner => {
                let (left_keys, right_keys) = key_sides(keys, spec, &left.schema, &right.schema)?;
                let l = left_keys.and_then(|k| self.reduce(left, &k, by, true));
                let r = right_keys.and_then(|k| self.reduce(right, &k, by, true));
                (l.is_some() || r.is_some()).then(|| {
                    node.with_inputs(vec![
                        l.unwrap_or_else(|| left.clone()),
                        r.unwrap_or_else(|| right.clone()),
                    ])
                })
            }
            _ => None,
        };
        descended.or_else(|| {
            let (rows, by_rows) = (
                self.estimates.of(node).rows,
                self.estimates.of(by.frame).rows,
            );
            (below_join && rows >= self.min_rows && by_rows < rows)
                .then(|| semi_join(node, by.frame, keys, by.keys))
        })
    }
}

/// The names of some columns in a join's left and right input (`None`: not all of them
/// are on that side).
type Sides = (Option<Vec<String>>, Option<Vec<String>>);

/// The names `keys` (columns of an inner join's output) have in its left and its right
/// input: a key the join equates with the other side's key is on both sides; a column of
/// one side only is on that side. `None` where a key is on both sides without being a
/// key pair (the output then renames it) or on neither.
fn key_sides(keys: &[String], spec: &JoinSpec, left: &Schema, right: &Schema) -> Option<Sides> {
    let (mut l, mut r) = (Some(Vec::new()), Some(Vec::new()));
    for key in keys {
        let pair = spec
            .left_on
            .iter()
            .zip(&spec.right_on)
            .find(|(a, b)| *a == key || *b == key);
        let (in_left, in_right) = (
            left.field_with_name(key).is_ok(),
            right.field_with_name(key).is_ok(),
        );
        let (on_left, on_right) = match pair {
            // Equal values on both sides: the key is on each, by its name there.
            Some((a, b)) if (a == key || !in_left) && (b == key || !in_right) => {
                (Some(a.clone()), Some(b.clone()))
            }
            None if in_left != in_right => match in_left {
                true => (Some(key.clone()), None),
                false => (None, Some(key.clone())),
            },
            _ => return None,
        };
        l = l.zip(on_left).map(|(mut v, k)| {
            v.push(k);
            v
        });
        r = r.zip(on_right).map(|(mut v, k)| {
            v.push(k);
            v
        });
    }
    Some((l, r))
}

#[cfg(test)]
mod tests;
