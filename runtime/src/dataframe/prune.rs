//! Column pruning: before a frame job is planned, every node of its lazy graph is narrowed
//! to the columns that something above it reads, so that a join, a shuffle or a sort never
//! materialises a column the answer does not use (pandas code merges whole tables and picks
//! its columns at the end; a TPC-H query written so reads 4 of lineitem's 16 columns).
//!
//! One pass from the root down finds each node's needed columns (the union over all of its
//! consumers, so a node read twice is still planned once); a second, from the sources up,
//! rebuilds the nodes over their narrowed inputs. Sources get a `Select` of their needed
//! columns, which the planner pushes into the CSV or Parquet reader; row-wise steps that
//! compute a column nobody reads are dropped; a join reads its keys and the columns its read
//! outputs come from; the columns only a filter or a join's match read are selected away
//! after it, in the same task. The root keeps its columns, in order.

use super::node::{FrameKind, FrameNode};
use crate::error::Result;
use arrow::datatypes::Schema;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tessera_kernels::frame::expr::{col, Expr};
use tessera_kernels::frame::groupby::{AggFunc, GroupBySpec};
use tessera_kernels::frame::map::{steps_schema, MapStep};

/// `root` with every node narrowed to the columns read above it (the same answer).
pub(crate) fn prune_columns(root: &Arc<FrameNode>) -> Result<Arc<FrameNode>> {
    let order = postorder(root);
    let mut needed: HashMap<u64, HashSet<String>> = HashMap::new();
    needed.insert(root.id, names(&root.schema));
    for node in order.iter().rev() {
        let want = needed.get(&node.id).cloned().unwrap_or_default();
        for (input, cols) in input_needs(node, &want)? {
            let has = names(&input.schema);
            let entry = needed.entry(input.id).or_default();
            entry.extend(cols.into_iter().filter(|c| has.contains(c)));
        }
    }
    let mut rebuilt: HashMap<u64, Arc<FrameNode>> = HashMap::new();
    for node in &order {
        let want = needed.get(&node.id).cloned().unwrap_or_default();
        let new = rebuild(node, &want, &rebuilt)?;
        let new = match node.kind {
            // Columns its steps or its join read and nothing above does (a filter's, a
            // join's keys) go before the rows move on: a select, which the planner fuses
            // into the task that computes them.
            FrameKind::Map { .. } | FrameKind::Join { .. } if node.id != root.id => {
                narrowed(new, &want)?
            }
            _ => new,
        };
        rebuilt.insert(node.id, new);
    }
    let new_root = rebuilt.remove(&root.id).unwrap_or_else(|| root.clone());
    let order: Vec<String> = root
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    reordered(new_root, &order)
}

/// Each node under `root` once, every node after the nodes it reads.
pub(super) fn postorder(root: &Arc<FrameNode>) -> Vec<Arc<FrameNode>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    // (node, inputs pushed): iterative, so a deep chain of nodes cannot overflow the stack.
    let mut stack = vec![(root.clone(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            out.push(node);
            continue;
        }
        if !seen.insert(node.id) {
            continue;
        }
        stack.push((node.clone(), true));
        for input in node.inputs().into_iter().rev() {
            if !seen.contains(&input.id) {
                stack.push((input.clone(), false));
            }
        }
    }
    out
}

/// `root` rebuilt from the bottom up: each node under it, once and after its inputs, is
/// given to `rebuild` with its inputs as they were rebuilt, and replaced by what it returns.
pub(super) fn rebuild_up(
    root: &Arc<FrameNode>,
    mut rebuild: impl FnMut(&Arc<FrameNode>, Vec<Arc<FrameNode>>) -> Arc<FrameNode>,
) -> Arc<FrameNode> {
    // Old node id -> the node rebuilt over rebuilt inputs.
    let mut done: HashMap<u64, Arc<FrameNode>> = HashMap::new();
    for node in postorder(root) {
        let inputs: Vec<Arc<FrameNode>> = node
            .inputs()
            .into_iter()
            .map(|i| done.get(&i.id).cloned().unwrap_or_else(|| i.clone()))
            .collect();
        let rebuilt = rebuild(&node, inputs);
        done.insert(node.id, rebuilt);
    }
    done.remove(&root.id).unwrap_or_else(|| root.clone())
}

fn names(schema: &Schema) -> HashSet<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// The columns each input of `node` must give for `want` of its output to be computed.
fn input_needs<'n>(
    node: &'n FrameNode,
    want: &HashSet<String>,
) -> Result<Vec<(&'n Arc<FrameNode>, HashSet<String>)>> {
    Ok(match &node.kind {
        FrameKind::Csv(_) | FrameKind::Parquet(_) | FrameKind::Batches(_) | FrameKind::Kept(_) => {
            Vec::new()
        }
        FrameKind::Map { input, steps } => vec![(input, narrow_steps(steps, want).1)],
        FrameKind::GroupBy { input, spec, .. } => vec![(input, groupby_reads(spec))],
        FrameKind::Join { left, right, spec } => {
            let (l, r) = spec.input_columns(&left.schema, &right.schema, want)?;
            vec![
                (left, l.into_iter().collect()),
                (right, r.into_iter().collect()),
            ]
        }
        FrameKind::Sort { input, by, .. } => {
            let mut cols = want.clone();
            cols.extend(by.iter().map(|k| k.column.clone()));
            vec![(input, cols)]
        }
        FrameKind::Head { input, .. } => vec![(input, want.clone())],
        FrameKind::Concat(inputs) => inputs.iter().map(|i| (i, want.clone())).collect(),
    })
}

/// The input columns a groupby reads: its keys and the columns it aggregates.
pub(crate) fn groupby_reads(spec: &GroupBySpec) -> HashSet<String> {
    let mut cols: HashSet<String> = spec.keys.iter().cloned().collect();
    cols.extend(
        spec.aggs
            .iter()
            .filter(|a| a.func != AggFunc::Size)
            .map(|a| a.column.clone()),
    );
    cols
}

/// The steps that compute `want` (a column added or a select's expression that nothing
/// reads later is left out), and the input columns they read.
fn narrow_steps(steps: &[MapStep], want: &HashSet<String>) -> (Vec<MapStep>, HashSet<String>) {
    let mut needed = want.clone();
    let mut kept = Vec::with_capacity(steps.len());
    for step in steps.iter().rev() {
        let step = match step {
            MapStep::Filter(e) => {
                needed.extend(e.columns());
                step.clone()
            }
            MapStep::WithColumn { name, expr } => {
                if !needed.contains(name) {
                    continue;
                }
                // A column it replaces stays read: the replacement keeps its place.
                needed.extend(expr.columns());
                step.clone()
            }
            MapStep::Select(exprs) => {
                let mut read: Vec<Expr> = exprs
                    .iter()
                    .filter(|e| needed.contains(&e.output_name()))
                    .cloned()
                    .collect();
                if read.is_empty() {
                    // Nothing above reads a column, only the rows: keep the cheapest one.
                    read.extend(exprs.first().cloned());
                }
                needed = read.iter().flat_map(|e| e.columns()).collect();
                MapStep::Select(read)
            }
            MapStep::Drop(_) => step.clone(),
            MapStep::Rename(pairs) => {
                needed = needed
                    .into_iter()
                    .map(|c| {
                        pairs
                            .iter()
                            .find(|(_, new)| *new == c)
                            .map_or(c, |(old, _)| old.clone())
                    })
                    .collect();
                step.clone()
            }
        };
        kept.push(step);
    }
    kept.reverse();
    (kept, needed)
}

/// The source columns (by index, in source order) that `steps` and then a sink reading
/// `sink` (every column the steps give when `None`) need, and the steps rewritten for a
/// source of only those columns: the planner's projection pushed into a reader.
pub(crate) fn project(
    names: &[String],
    steps: Vec<MapStep>,
    sink: Option<HashSet<String>>,
) -> (Vec<usize>, Vec<MapStep>) {
    let want = sink.unwrap_or_else(|| fit_steps(steps.clone(), names.iter().cloned().collect()).1);
    let (steps, needed) = narrow_steps(&steps, &want);
    let kept: Vec<usize> = (0..names.len())
        .filter(|&i| needed.contains(&names[i]))
        .collect();
    let present = kept.iter().map(|&i| names[i].clone()).collect();
    (kept, fit_steps(steps, present).0)
}

/// `steps` without the selects at their head that keep `input`'s columns as they are (a
/// narrowing select under the user's select of the same columns).
fn without_leading_identity(mut steps: Vec<MapStep>, input: &Schema) -> Vec<MapStep> {
    let identity = |step: &MapStep| match step {
        MapStep::Select(exprs) => {
            exprs.len() == input.fields().len()
                && exprs
                    .iter()
                    .zip(input.fields())
                    .all(|(e, f)| matches!(e, Expr::Column(c) if c == f.name()))
        }
        _ => false,
    };
    let leading = steps.iter().take_while(|s| identity(s)).count();
    steps.drain(..leading);
    steps
}

/// `steps` rewritten for an input of columns `present` (drops and renames of columns the
/// input does not have are left out), and the columns they give.
fn fit_steps(steps: Vec<MapStep>, mut present: HashSet<String>) -> (Vec<MapStep>, HashSet<String>) {
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        match step {
            MapStep::Drop(cols) => {
                let cols: Vec<String> = cols.into_iter().filter(|c| present.remove(c)).collect();
                if !cols.is_empty() {
                    out.push(MapStep::Drop(cols));
                }
            }
            MapStep::Rename(pairs) => {
                let pairs: Vec<(String, String)> = pairs
                    .into_iter()
                    .filter(|(old, _)| present.contains(old))
                    .collect();
                for (old, _) in &pairs {
                    present.remove(old);
                }
                present.extend(pairs.iter().map(|(_, new)| new.clone()));
                if !pairs.is_empty() {
                    out.push(MapStep::Rename(pairs));
                }
            }
            MapStep::WithColumn { name, expr } => {
                present.insert(name.clone());
                out.push(MapStep::WithColumn { name, expr });
            }
            MapStep::Select(exprs) => {
                present = exprs.iter().map(|e| e.output_name()).collect();
                out.push(MapStep::Select(exprs));
            }
            filter @ MapStep::Filter(_) => out.push(filter),
        }
    }
    (out, present)
}

/// `node` over its rebuilt inputs, narrowed to `want` where it is a source.
fn rebuild(
    node: &Arc<FrameNode>,
    want: &HashSet<String>,
    rebuilt: &HashMap<u64, Arc<FrameNode>>,
) -> Result<Arc<FrameNode>> {
    let new = |n: &Arc<FrameNode>| rebuilt.get(&n.id).cloned().unwrap_or_else(|| n.clone());
    let inputs = node.inputs();
    let unchanged = inputs.iter().all(|i| Arc::ptr_eq(i, &new(i)));
    Ok(match &node.kind {
        FrameKind::Csv(_) | FrameKind::Parquet(_) | FrameKind::Batches(_) | FrameKind::Kept(_) => {
            let names = node.schema.fields().iter().map(|f| f.name().clone());
            let cols: Vec<String> = names.clone().filter(|n| want.contains(n)).collect();
            match cols.len() {
                n if n == node.schema.fields().len() => node.clone(),
                // Nothing read but the rows: the first column carries them.
                0 => select(node.clone(), &names.take(1).collect::<Vec<_>>())?,
                _ => select(node.clone(), &cols)?,
            }
        }
        FrameKind::Map { input, steps } => {
            let input_new = new(input);
            let (kept, _) = narrow_steps(steps, want);
            let kept = fit_steps(kept, names(&input_new.schema)).0;
            let kept = without_leading_identity(kept, &input_new.schema);
            if unchanged && kept == *steps {
                return Ok(node.clone());
            }
            if kept.is_empty() {
                return Ok(input_new);
            }
            let schema = steps_schema(&input_new.schema, &kept)?;
            FrameNode::new(
                Arc::new(schema),
                FrameKind::Map {
                    input: input_new,
                    steps: kept,
                },
            )
        }
        _ if unchanged => node.clone(),
        FrameKind::GroupBy { input, spec, sort } => FrameNode::new(
            node.schema.clone(),
            FrameKind::GroupBy {
                input: new(input),
                spec: spec.clone(),
                sort: *sort,
            },
        ),
        FrameKind::Join { left, right, spec } => {
            let (l, r) = (new(left), new(right));
            let schema = spec.output_schema(&l.schema, &r.schema)?;
            FrameNode::new(
                Arc::new(schema),
                FrameKind::Join {
                    left: l,
                    right: r,
                    spec: spec.clone(),
                },
            )
        }
        FrameKind::Sort { input, by, limit } => {
            let input = new(input);
            let kind = FrameKind::Sort {
                input: input.clone(),
                by: by.clone(),
                limit: *limit,
            };
            FrameNode::new(input.schema.clone(), kind)
        }
        FrameKind::Head { input, n } => {
            let input = new(input);
            let kind = FrameKind::Head {
                input: input.clone(),
                n: *n,
            };
            FrameNode::new(input.schema.clone(), kind)
        }
        FrameKind::Concat(inputs) => {
            // Every input stacks in the concat's column order.
            let news: Vec<Arc<FrameNode>> = inputs.iter().map(new).collect();
            let order: Vec<String> = node
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .filter(|n| news.iter().all(|i| i.schema.field_with_name(n).is_ok()))
                .collect();
            let news = news
                .into_iter()
                .map(|i| reordered(i, &order))
                .collect::<Result<Vec<_>>>()?;
            let schema = news
                .first()
                .map_or_else(|| node.schema.clone(), |i| i.schema.clone());
            FrameNode::new(schema, FrameKind::Concat(news))
        }
    })
}

/// `node` without the columns not in `want` (itself where it has no other, or where `want`
/// names none of its columns: then only its rows are read).
fn narrowed(node: Arc<FrameNode>, want: &HashSet<String>) -> Result<Arc<FrameNode>> {
    let cols: Vec<String> = node
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| want.contains(n))
        .collect();
    match cols.is_empty() || cols.len() == node.schema.fields().len() {
        true => Ok(node),
        false => select(node, &cols),
    }
}

/// `node` with exactly the columns `order`, in that order (itself where it has them so).
fn reordered(node: Arc<FrameNode>, order: &[String]) -> Result<Arc<FrameNode>> {
    let has = node.schema.fields().iter().map(|f| f.name());
    if has.eq(order.iter()) {
        return Ok(node);
    }
    select(node, order)
}

/// A select of the columns `cols` of `node`.
fn select(node: Arc<FrameNode>, cols: &[String]) -> Result<Arc<FrameNode>> {
    let step = MapStep::Select(cols.iter().map(|c| col(c)).collect());
    let schema = steps_schema(&node.schema, std::slice::from_ref(&step))?;
    Ok(FrameNode::new(
        Arc::new(schema),
        FrameKind::Map {
            input: node,
            steps: vec![step],
        },
    ))
}

#[cfg(test)]
mod tests;
