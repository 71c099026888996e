//! Predicate pushdown: before a frame job is planned (and before its columns are pruned),
//! every filter moves as far down the lazy graph as the answer allows, so that joins,
//! shuffles and sorts only see the rows the answer keeps (pandas code merges whole tables
//! and filters the result; TPC-H Q19 written so joins all of lineitem with part).
//!
//! A filter is cut into its conjuncts (`a & b & c`), each moved on its own:
//! - through the row-wise steps before it, unless one of them makes a column it reads;
//! - through a join to the side whose columns it reads, where that side's rows are kept
//!   whole by the join (both sides of an inner join, the left of a left, semi, anti or mark
//!   join, the right of a right join; a conjunct on the other side of an outer join would
//!   turn its rows into unmatched ones, so it stays above);
//! - from a disjunction of conjunctions over both sides (`(p1 & l1) | (p2 & l2)`), a
//!   disjunction implied on one side (`p1 | p2`) goes down to it too, where every branch has
//!   a conjunct on that side, while the whole stays above the join;
//! - through a sort without a limit, into every input of a concat that has its columns,
//!   and through a groupby where it reads only the keys;
//! - onto a Parquet source, whose row groups that the footer's statistics rule out are
//!   then not read (the filter still runs on the rows that are).
//!
//! A node read by more than one consumer is not changed for one of them: a filter stops
//! above it, so shared work is still computed once. Nodes nothing was pushed into are
//! kept as they were (their ids too).

use super::node::{consumers, FrameKind, FrameNode, ParquetSource};
use crate::error::Result;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tessera_kernels::frame::expr::{BinaryOperator, Expr};
use tessera_kernels::frame::join::{ColumnOrigin, JoinHow};
use tessera_kernels::frame::map::MapStep;

/// `root` with its filters moved down the graph (the same answer).
pub(crate) fn push_filters(root: &Arc<FrameNode>) -> Result<Arc<FrameNode>> {
    let mut pass = Pushdown {
        consumers: consumers(root),
        shared: HashMap::new(),
    };
    pass.below(root, Vec::new())
}

struct Pushdown {
    consumers: HashMap<u64, usize>,
    /// Nodes read more than once, each rewritten once (with nothing pushed into it).
    shared: HashMap<u64, Arc<FrameNode>>,
}

/// A node rewritten, and the conjuncts it did not take: applied to its rows, they give
/// what the node with all the conjuncts gave.
type Rewritten = (Arc<FrameNode>, Vec<Expr>);

impl Pushdown {
    fn is_shared(&self, node: &FrameNode) -> bool {
        self.consumers.get(&node.id).copied().unwrap_or(0) > 1
    }

    /// `node` rewritten with the conjuncts `preds` (over its columns) applied to its rows,
    /// as far down as they go.
    fn below(&mut self, node: &Arc<FrameNode>, preds: Vec<Expr>) -> Result<Arc<FrameNode>> {
        let (node, rest) = self.rewrite(node, preds)?;
        Ok(self.filtered(node, rest))
    }

    /// `node` rewritten, taking what it can of `preds` into its inputs.
    fn rewrite(&mut self, node: &Arc<FrameNode>, preds: Vec<Expr>) -> Result<Rewritten> {
        if self.is_shared(node) {
            let rewritten = match self.shared.get(&node.id) {
                Some(done) => done.clone(),
                None => {
                    let (done, _) = self.rewrite_alone(node, Vec::new())?;
                    self.shared.insert(node.id, done.clone());
                    done
                }
            };
            return Ok((rewritten, preds));
        }
        self.rewrite_alone(node, preds)
    }

    /// [`Pushdown::rewrite`] of a node nothing else reads.
    fn rewrite_alone(&mut self, node: &Arc<FrameNode>, preds: Vec<Expr>) -> Result<Rewritten> {
        Ok(match &node.kind {
            FrameKind::Map { input, steps } => return self.map(node, input, steps, preds),
            FrameKind::Join { left, right, spec } => {
                let origins = spec.output_origins(&left.schema, &right.schema)?;
                let sides = Sides::of(spec.how);
                let (mut down_left, mut down_right, mut stay) =
                    (Vec::new(), Vec::new(), Vec::new());
                for pred in preds {
                    match side_of(&pred, &origins) {
                        Some(Side::Left(p)) if sides.left => down_left.push(p),
                        Some(Side::Right(p)) if sides.right => down_right.push(p),
                        _ => {
                            if sides.left {
                                down_left.extend(implied(&pred, &origins, true));
                            }
                            if sides.right {
                                down_right.extend(implied(&pred, &origins, false));
                            }
                            stay.push(pred);
                        }
                    }
                }
                let l = self.below(left, down_left)?;
                let r = self.below(right, down_right)?;
                (node.with_inputs(vec![l, r]), stay)
            }
            FrameKind::Sort {
                input, limit: None, ..
            } => {
                let input = self.below(input, preds)?;
                (node.with_inputs(vec![input]), Vec::new())
            }
            FrameKind::GroupBy { input, spec, .. } => {
                // Over keys only; never below a whole-frame aggregation, whose one row
                // comes out even from no rows (a constant `false` must stay above it).
                let keys: HashSet<&String> = spec.keys.iter().collect();
                let (down, stay): (Vec<Expr>, Vec<Expr>) = preds.into_iter().partition(|p| {
                    !keys.is_empty() && p.columns().iter().all(|c| keys.contains(c))
                });
                let input = self.below(input, down)?;
                (node.with_inputs(vec![input]), stay)
            }
            FrameKind::Concat(inputs) => {
                let all_have = |p: &Expr| {
                    let cols = p.columns();
                    inputs
                        .iter()
                        .all(|i| cols.iter().all(|c| i.schema.field_with_name(c).is_ok()))
                };
                let (down, stay): (Vec<Expr>, Vec<Expr>) = preds.into_iter().partition(all_have);
                let news = inputs
                    .iter()
                    .map(|i| self.below(i, down.clone()))
                    .collect::<Result<Vec<_>>>()?;
                (node.with_inputs(news), stay)
            }
            FrameKind::Parquet(source) => (pruned(node, source, &preds), preds),
            _ => {
                let news = node
                    .inputs()
                    .into_iter()
                    .map(|i| self.below(i, Vec::new()))
                    .collect::<Result<Vec<_>>>()?;
                (node.with_inputs(news), preds)
            }
        })
    }

    /// A map node: the conjuncts of its own filters that no step before them feeds, and
    /// the `preds` from above that no step feeds, go down to its input; the other steps
    /// stay, in order.
    fn map(
        &mut self,
        node: &Arc<FrameNode>,
        input: &Arc<FrameNode>,
        steps: &[MapStep],
        preds: Vec<Expr>,
    ) -> Result<Rewritten> {
        let mut made: HashSet<String> = HashSet::new();
        let mut down = Vec::new();
        // How many conjuncts of `down` each of the node's own filters gave.
        let mut groups = Vec::new();
        let mut rest = Vec::with_capacity(steps.len());
        for step in steps {
            match step {
                MapStep::Filter(e) => {
                    let mut conjuncts = Vec::new();
                    split(e, BinaryOperator::And, &mut conjuncts);
                    let (free, fed): (Vec<Expr>, Vec<Expr>) =
                        conjuncts.into_iter().partition(|c| reads_none(c, &made));
                    groups.push(free.len());
                    down.extend(free);
                    rest.extend(conjunction(fed).map(MapStep::Filter));
                }
                MapStep::Drop(_) => rest.push(step.clone()),
                MapStep::WithColumn { name, .. } => {
                    made.insert(name.clone());
                    rest.push(step.clone());
                }
                MapStep::Rename(pairs) => {
                    made.extend(pairs.iter().flat_map(|(a, b)| [a.clone(), b.clone()]));
                    rest.push(step.clone());
                }
                MapStep::Select(exprs) => {
                    made.extend(
                        exprs
                            .iter()
                            .filter(|e| !matches!(e, Expr::Column(_)))
                            .map(Expr::output_name),
                    );
                    rest.push(step.clone());
                }
            }
        }
        let (through, stay): (Vec<Expr>, Vec<Expr>) =
            preds.into_iter().partition(|p| reads_none(p, &made));
        if down.is_empty() && through.is_empty() {
            let new_input = self.below(input, Vec::new())?;
            return Ok((node.with_inputs(vec![new_input]), stay));
        }
        down.extend(through);
        let (new_input, back) = self.rewrite(input, down.clone())?;
        if Arc::ptr_eq(&new_input, input) && back == down {
            // The input took none: they go first among the node's steps, each filter's
            // conjuncts still a step of their own (a filter evaluates its conjunction on
            // every row, so a selective first filter is best kept apart), then those from
            // above.
            let mut back = back.into_iter();
            let mut new_steps: Vec<MapStep> = groups
                .iter()
                .chain([&usize::MAX])
                .filter_map(|&n| conjunction(back.by_ref().take(n).collect()))
                .map(MapStep::Filter)
                .collect();
            new_steps.extend(rest);
            if new_steps == steps {
                return Ok((node.clone(), stay));
            }
            let kind = FrameKind::Map {
                input: new_input,
                steps: new_steps,
            };
            return Ok((FrameNode::new(node.schema.clone(), kind), stay));
        }
        let new_input = self.filtered(new_input, back);
        if rest.is_empty() {
            return Ok((new_input, stay));
        }
        let kind = FrameKind::Map {
            input: new_input,
            steps: rest,
        };
        Ok((FrameNode::new(node.schema.clone(), kind), stay))
    }

    /// `node` with `preds` applied to its rows: itself when there are none; a map nothing
    /// else reads takes them as its last step, any other node gets a filter over it.
    fn filtered(&self, node: Arc<FrameNode>, preds: Vec<Expr>) -> Arc<FrameNode> {
        let Some(pred) = conjunction(preds) else {
            return node;
        };
        let kind = match &node.kind {
            FrameKind::Map { input, steps } if !self.is_shared(&node) => {
                let mut steps = steps.clone();
                steps.push(MapStep::Filter(pred));
                FrameKind::Map {
                    input: input.clone(),
                    steps,
                }
            }
            _ => FrameKind::Map {
                input: node.clone(),
                steps: vec![MapStep::Filter(pred)],
            },
        };
        FrameNode::new(node.schema.clone(), kind)
    }
}

/// `node`, a Parquet source, reading only the row groups whose statistics allow rows where
/// `preds` hold (the filter still runs on the rows read): itself where none is ruled out.
fn pruned(node: &Arc<FrameNode>, source: &ParquetSource, preds: &[Expr]) -> Arc<FrameNode> {
    let Some(pred) = conjunction(preds.to_vec()) else {
        return node.clone();
    };
    let may_match: HashSet<usize> = source.info.prune(&pred).into_iter().collect();
    let row_groups: Vec<usize> = source
        .row_groups
        .iter()
        .filter(|rg| may_match.contains(rg))
        .copied()
        .collect();
    if row_groups.len() == source.row_groups.len() {
        return node.clone();
    }
    let source = ParquetSource {
        row_groups,
        ..source.clone()
    };
    FrameNode::new(node.schema.clone(), FrameKind::Parquet(source))
}

/// Which sides of a join a filter may go down to: those whose rows it keeps whole.
struct Sides {
    left: bool,
    right: bool,
}

impl Sides {
    fn of(how: JoinHow) -> Sides {
        let (left, right) = match how {
            JoinHow::Inner => (true, true),
            JoinHow::Left | JoinHow::LeftSemi | JoinHow::LeftAnti | JoinHow::LeftMark => {
                (true, false)
            }
            JoinHow::Right => (false, true),
            JoinHow::Outer => (false, false),
        };
        Sides { left, right }
    }
}

/// A conjunct rewritten over one side's column names.
enum Side {
    Left(Expr),
    Right(Expr),
}

/// The side whose columns alone `pred` reads (rewritten with that side's names), if one.
fn side_of(pred: &Expr, origins: &[(String, ColumnOrigin)]) -> Option<Side> {
    let cols = pred.columns();
    let origin = |c: &String| origins.iter().find(|(n, _)| n == c).map(|(_, o)| o);
    let mut renames = HashMap::new();
    let mut side = None;
    for c in &cols {
        let (is_left, name) = match origin(c)? {
            ColumnOrigin::Left(n) => (true, n),
            ColumnOrigin::Right(n) => (false, n),
            ColumnOrigin::Either | ColumnOrigin::Made => return None,
        };
        if *side.get_or_insert(is_left) != is_left {
            return None;
        }
        if name != c {
            renames.insert(c.clone(), name.clone());
        }
    }
    let pred = renamed(pred, &renames);
    match side? {
        true => Some(Side::Left(pred)),
        false => Some(Side::Right(pred)),
    }
}

/// The disjunction implied on one side (`left` or the right) by `pred`, a disjunction of
/// conjunctions: each branch's conjuncts on that side, where every branch has some.
fn implied(pred: &Expr, origins: &[(String, ColumnOrigin)], left: bool) -> Option<Expr> {
    let mut branches = Vec::new();
    split(pred, BinaryOperator::Or, &mut branches);
    if branches.len() < 2 {
        return None;
    }
    let mut sided = Vec::with_capacity(branches.len());
    for branch in branches {
        let mut conjuncts = Vec::new();
        split(&branch, BinaryOperator::And, &mut conjuncts);
        let on_side: Vec<Expr> = conjuncts
            .iter()
            .filter_map(|c| match side_of(c, origins)? {
                Side::Left(e) if left => Some(e),
                Side::Right(e) if !left => Some(e),
                _ => None,
            })
            .collect();
        sided.push(conjunction(on_side)?);
    }
    sided.into_iter().reduce(|a, b| a.or_(b))
}

/// The operands of nested `op`s at the top of `e` (`e` itself if it is no such op).
fn split(e: &Expr, op: BinaryOperator, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary { op: o, left, right } if *o == op => {
            split(left, op, out);
            split(right, op, out);
        }
        other => out.push(other.clone()),
    }
}

fn reads_none(e: &Expr, made: &HashSet<String>) -> bool {
    made.is_empty() || e.columns().iter().all(|c| !made.contains(c))
}

/// `e` with the columns in `renames` renamed.
fn renamed(e: &Expr, renames: &HashMap<String, String>) -> Expr {
    if renames.is_empty() {
        return e.clone();
    }
    e.clone()
        .rename_columns(&|c| renames.get(c).cloned().unwrap_or_else(|| c.to_string()))
}

/// The conjunction of `preds` (`None` for none).
fn conjunction(preds: Vec<Expr>) -> Option<Expr> {
    preds.into_iter().reduce(|a, b| a.and_(b))
}

#[cfg(test)]
mod tests;
