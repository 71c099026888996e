//! Shared join inputs reduced once: a frame read by several readers, every one of which
//! keeps only its rows whose keys a selective frame has, drops the other rows below its
//! own joins, before they are joined.
//!
//! TPC-H Q2 joins partsupp with the suppliers of one region (1.6M of the 8M rows, each
//! with five supplier columns) and only then with the few parts of one size and type
//! (4,000 of 2M). The partsupp–supplier frame is read a second time, by the subquery's
//! minimum cost per part, which the groupby reduction ([`super::reduce`]) reads through a
//! semi join with that part join. Both readers keep only rows whose part key is among the
//! chosen parts, so partsupp is semi-joined with those parts before the supplier join:
//! 16,000 rows are joined with the suppliers instead of 8M, and both readers read the
//! reduced frame, computed once.
//!
//! The rule applies to a frame read by more than one edge where every reader is
//! - an inner join of it (on one side) with a frame that keeps at most a quarter of its
//!   base rows, on the same keys and with the same frame for every such reader, or
//! - a semi join of it on those keys with that frame or with one of those inner joins (on
//!   the join's key columns, through row-wise steps that keep them): the keys of its rows
//!   are among the frame's too.
//!
//! The frame is then reduced as far down as a walk reaches: through row-wise steps that
//! leave the key columns as they are and through inner joins — into the input that has
//! the key columns, into both where a key is that join's own key pair — to large frames
//! (at least 65,536 estimated rows) below at least one join, each read by its parent only.
//! Every reader then sees exactly the rows it kept before, in the same order (semi joins
//! keep their input's order).

use super::estimate::Estimates;
use super::node::{counted, readers, FrameKind, FrameNode};
use super::prune::{postorder, rebuild_up};
use super::reduce::{keeps, semi_join, MAX_KEPT, MIN_ROWS};
use arrow::datatypes::Schema;
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::frame::join::{ColumnOrigin, JoinHow, JoinSpec};

/// `root` with its shared frames reduced as [the rule](self) says.
pub(crate) fn reduce_shared(root: &Arc<FrameNode>) -> Arc<FrameNode> {
    reduce_with(root, MIN_ROWS)
}

/// [`reduce_shared`], reducing frames of at least `min_rows` estimated rows.
fn reduce_with(root: &Arc<FrameNode>, min_rows: f64) -> Arc<FrameNode> {
    let parents = readers(root);
    let mut estimates = Estimates::default();
    let mut plans: HashMap<u64, By> = postorder(root)
        .iter()
        .filter_map(|n| Some((n.id, common_reduction(n, &parents, &mut estimates)?)))
        .collect();
    // The frame a shared frame is reduced by is read as it is by the joins and the new semi
    // joins: it must not be rewritten itself (hold a frame that is reduced) nor read the
    // frame it reduces.
    let rewritten: Vec<u64> = plans.keys().copied().collect();
    plans.retain(|id, by| {
        postorder(&by.frame)
            .iter()
            .all(|n| n.id != *id && !rewritten.contains(&n.id))
    });
    if plans.is_empty() {
        return root.clone();
    }
    let mut walk = Walk {
        readers: counted(&parents),
        estimates,
        min_rows,
    };
    rebuild_up(root, |node, inputs| {
        let rebuilt = node.with_inputs(inputs);
        // A node rebuilt over rewritten inputs has the readers the node it replaces had.
        if let Some(&n) = walk.readers.get(&node.id) {
            walk.readers.insert(rebuilt.id, n);
        }
        match plans.get(&node.id) {
            Some(by) => walk
                .reduce(&rebuilt, &by.keys, by, false, true)
                .unwrap_or(rebuilt),
            None => rebuilt,
        }
    })
}

/// What a reader of a shared frame keeps of it: the rows whose `keys` occur among
/// `frame`'s `frame_keys`.
struct By {
    keys: Vec<String>,
    frame: Arc<FrameNode>,
    frame_keys: Vec<String>,
}

impl By {
    fn same(&self, other: &By) -> bool {
        self.keys == other.keys
            && self.frame.id == other.frame.id
            && self.frame_keys == other.frame_keys
    }
}

/// The reduction every reader of the shared `node` allows (see [the rule](self)); `None`
/// where a reader keeps rows it does not name, or the frame is not selective.
fn common_reduction(
    node: &Arc<FrameNode>,
    parents: &HashMap<u64, Vec<Arc<FrameNode>>>,
    estimates: &mut Estimates,
) -> Option<By> {
    let readers = parents.get(&node.id)?;
    if readers.len() < 2 {
        return None;
    }
    let mut by: Option<By> = None;
    let mut joins = Vec::new();
    for reader in readers {
        if let Some(b) = inner_join_by(reader, node) {
            match &by {
                Some(first) if !first.same(&b) => return None,
                _ => by = Some(b),
            }
            joins.push(reader.id);
        }
    }
    let by = by?;
    if estimates.of(&by.frame).kept > MAX_KEPT {
        return None;
    }
    readers
        .iter()
        .all(|r| joins.contains(&r.id) || semi_join_within(r, node, &by, &joins))
        .then_some(by)
}

/// What the inner join `reader` keeps of `node`, one of its inputs (not both).
fn inner_join_by(reader: &FrameNode, node: &FrameNode) -> Option<By> {
    let FrameKind::Join { left, right, spec } = &reader.kind else {
        return None;
    };
    if spec.how != JoinHow::Inner || spec.indicator.is_some() {
        return None;
    }
    let (keys, frame, frame_keys) = match (left.id == node.id, right.id == node.id) {
        (true, false) => (&spec.left_on, right, &spec.right_on),
        (false, true) => (&spec.right_on, left, &spec.left_on),
        _ => return None,
    };
    Some(By {
        keys: keys.clone(),
        frame: frame.clone(),
        frame_keys: frame_keys.clone(),
    })
}

/// Whether `reader` is a semi join of `node` on `by.keys` with `by.frame` or with one of
/// the inner joins `joins` (through row-wise steps keeping the keys), on that join's key
/// columns: it keeps no row whose keys `by.frame` lacks.
fn semi_join_within(reader: &FrameNode, node: &FrameNode, by: &By, joins: &[u64]) -> bool {
    let FrameKind::Join { left, right, spec } = &reader.kind else {
        return false;
    };
    if spec.how != JoinHow::LeftSemi || left.id != node.id || spec.left_on != by.keys {
        return false;
    }
    let mut side = right;
    while !joins.contains(&side.id) {
        if side.id == by.frame.id {
            return spec.right_on == by.frame_keys;
        }
        match &side.kind {
            FrameKind::Map { input, steps } if steps.iter().all(|s| keeps(s, &spec.right_on)) => {
                side = input;
            }
            _ => return false,
        }
    }
    let FrameKind::Join {
        left: join_left,
        right: join_right,
        spec: join,
    } = &side.kind
    else {
        return false;
    };
    let Ok(origins) = join.output_origins(&join_left.schema, &join_right.schema) else {
        return false;
    };
    let node_left = join_left.id == node.id;
    spec.right_on.iter().enumerate().all(|(i, name)| {
        // The join's column is the shared frame's key or the frame's key paired with it.
        let (key, frame_key) = (&by.keys[i], &by.frame_keys[i]);
        match origins.iter().find(|(n, _)| n == name).map(|(_, o)| o) {
            Some(ColumnOrigin::Left(c)) => c == if node_left { key } else { frame_key },
            Some(ColumnOrigin::Right(c)) => c == if node_left { frame_key } else { key },
            _ => false,
        }
    })
}

/// What the walks of one plan share.
struct Walk {
    readers: HashMap<u64, usize>,
    estimates: Estimates,
    min_rows: f64,
}

impl Walk {
    /// `node` with its rows whose `keys` do not occur in `by.frame` removed as far down as
    /// the walk reaches (see [the rule](self)); `None` where nothing is reduced.
    /// `below_join`: the walk has passed a join; `top`: `node` is the shared frame.
    fn reduce(
        &mut self,
        node: &Arc<FrameNode>,
        keys: &[String],
        by: &By,
        below_join: bool,
        top: bool,
    ) -> Option<Arc<FrameNode>> {
        // Read by another consumer too, it would have to keep every row for that one.
        if !top && self.readers.get(&node.id).copied().unwrap_or(0) > 1 {
            return None;
        }
        let descended = match &node.kind {
            FrameKind::Map { input, steps } if steps.iter().all(|s| keeps(s, keys)) => self
                .reduce(input, keys, by, below_join, false)
                .map(|input| node.with_inputs(vec![input])),
            FrameKind::Join { left, right, spec } if spec.how == JoinHow::Inner => {
                let (left_keys, right_keys) = key_sides(keys, spec, &left.schema, &right.schema)?;
                let l = left_keys.and_then(|k| self.reduce(left, &k, by, true, false));
                let r = right_keys.and_then(|k| self.reduce(right, &k, by, true, false));
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
            let reduced_already = matches!(&node.kind, FrameKind::Join { right, spec, .. }
                if spec.how == JoinHow::LeftSemi && right.id == by.frame.id);
            let (rows, by_rows) = (
                self.estimates.of(node).rows,
                self.estimates.of(&by.frame).rows,
            );
            (below_join && !reduced_already && rows >= self.min_rows && by_rows < rows)
                .then(|| semi_join(node, &by.frame, keys, &by.frame_keys))
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
