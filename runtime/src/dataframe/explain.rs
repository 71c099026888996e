//! `DataFrame::explain`: the plan a frame job runs, after the optimizer's passes (filters
//! pushed down, groupbys reduced, columns pruned), as an indented tree, one node a line
//! with its estimated rows (`super::estimate`), inputs below their reader (as Polars'
//! `explain` and DuckDB's `EXPLAIN` print theirs).

use super::estimate::Estimates;
use super::node::{FrameKind, FrameNode};
use super::plan::optimize;
use crate::error::Result;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;
use tessera_kernels::frame::map::MapStep;

/// The optimised plan of `root`, as text.
pub(crate) fn explain(root: &Arc<FrameNode>) -> Result<String> {
    let plan = optimize(root)?;
    let mut estimates = Estimates::default();
    let mut out = String::new();
    let mut shown: HashMap<u64, usize> = HashMap::new();
    // (node, depth), depth first, inputs in order.
    let mut stack = vec![(plan, 0usize)];
    while let Some((node, depth)) = stack.pop() {
        let indent = "  ".repeat(depth);
        if let Some(&n) = shown.get(&node.id) {
            let _ = writeln!(out, "{indent}[#{n}] again: computed once, read twice");
            continue;
        }
        let n = shown.len() + 1;
        shown.insert(node.id, n);
        let rows = estimates.of(&node).rows;
        let _ = writeln!(
            out,
            "{indent}[#{n}] {} ~{}",
            describe(&node),
            rows_text(rows)
        );
        for input in node.inputs().into_iter().rev() {
            stack.push((input.clone(), depth + 1));
        }
    }
    Ok(out)
}

/// An estimated row count, short: `4 rows`, `13.3k rows`, `6.0M rows`.
fn rows_text(rows: f64) -> String {
    match rows {
        r if r < 1e4 => format!("{} rows", r.round()),
        r if r < 1e6 => format!("{:.1}k rows", r / 1e3),
        r => format!("{:.1}M rows", r / 1e6),
    }
}

/// One node's line: what it computes and the columns it gives.
fn describe(node: &FrameNode) -> String {
    let what = match &node.kind {
        FrameKind::Csv(source) => {
            let first = source.files.first().map_or("", |f| f.path.as_str());
            format!("READ CSV {first:?} ({} files)", source.files.len())
        }
        FrameKind::Parquet(source) => format!(
            "READ PARQUET {:?} ({} row groups)",
            source.path,
            source.row_groups.len()
        ),
        FrameKind::Batches(batches) => format!(
            "TABLE in memory ({} chunks, {} rows)",
            batches.len(),
            batches.iter().map(|b| b.num_rows()).sum::<usize>()
        ),
        FrameKind::Kept(kept) => format!(
            "PERSISTED ({} chunks)",
            kept.chunks().map_or(0, |c| c.len())
        ),
        FrameKind::Map { steps, .. } => {
            let steps: Vec<String> = steps.iter().map(step).collect();
            format!("MAP {}", steps.join("; "))
        }
        FrameKind::GroupBy { spec, sort, .. } => {
            let aggs: Vec<String> = spec
                .aggs
                .iter()
                .map(|a| format!("{:?}({}) as {}", a.func, a.column, a.output))
                .collect();
            let order = if *sort { ", sorted by the keys" } else { "" };
            format!(
                "GROUPBY [{}] aggs [{}]{order}",
                spec.keys.join(", "),
                aggs.join(", ")
            )
        }
        FrameKind::Join { spec, .. } => {
            let on: Vec<String> = spec
                .left_on
                .iter()
                .zip(&spec.right_on)
                .map(|(l, r)| format!("{l} = {r}"))
                .collect();
            format!("JOIN {:?} on [{}]", spec.how, on.join(", "))
        }
        FrameKind::Sort { by, limit, .. } => {
            let keys: Vec<String> = by
                .iter()
                .map(|k| match k.descending {
                    true => format!("{} desc", k.column),
                    false => k.column.clone(),
                })
                .collect();
            let limit = limit.map_or(String::new(), |n| format!(" limit {n}"));
            format!("SORT by [{}]{limit}", keys.join(", "))
        }
        FrameKind::Concat(inputs) => format!("CONCAT {} frames", inputs.len()),
        FrameKind::Head { n, .. } => format!("HEAD {n}"),
    };
    let columns: Vec<&str> = node
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    format!("{what} -> [{}]", columns.join(", "))
}

fn step(step: &MapStep) -> String {
    match step {
        MapStep::Filter(e) => format!("filter {e}"),
        MapStep::WithColumn { name, expr } => format!("with_column {name} = {expr}"),
        MapStep::Select(exprs) => {
            let exprs: Vec<String> = exprs.iter().map(ToString::to_string).collect();
            format!("select [{}]", exprs.join(", "))
        }
        MapStep::Drop(cols) => format!("drop [{}]", cols.join(", ")),
        MapStep::Rename(pairs) => {
            let pairs: Vec<String> = pairs.iter().map(|(a, b)| format!("{a} -> {b}")).collect();
            format!("rename [{}]", pairs.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::dataframe::testing::{left, right};
    use crate::dataframe::How;
    use tessera_kernels::frame::expr::{col, lit};

    #[test]
    fn the_plan_shows_the_filters_where_the_optimizer_put_them() {
        let frame = left()
            .merge(&right(), &["k"], How::Inner)
            .filter(col("b").gt(lit(105i64)).and_(col("c").lt(lit(50i64))))
            .select(&["b", "c"]);
        let text = frame.explain().unwrap();
        // Each conjunct sits below the join, on the side whose columns it reads, over the
        // select column pruning put over the source.
        let want = "\
[#1] MAP select [col(\"b\"), col(\"c\")] -> [b, c] ~4 rows
  [#2] JOIN Inner on [k = k] -> [k, b, c] ~4 rows
    [#3] MAP filter (col(\"b\") > 105) -> [k, b] ~13 rows
      [#4] MAP select [col(\"k\"), col(\"b\")] -> [k, b] ~40 rows
        [#5] TABLE in memory (6 chunks, 40 rows) -> [k, a, b, s] ~40 rows
    [#6] MAP filter (col(\"c\") < 50) -> [k, c] ~3 rows
      [#7] MAP select [col(\"k\"), col(\"c\")] -> [k, c] ~10 rows
        [#8] TABLE in memory (4 chunks, 10 rows) -> [k, c, a] ~10 rows
";
        assert_eq!(text, want);
    }

    #[test]
    fn a_node_read_twice_is_shown_once() {
        let base = left().merge(&right(), &["k"], How::Inner);
        let frame = base.merge(&base.select(&["k", "c"]), &["k"], How::Inner);
        let text = frame.explain().unwrap();
        assert_eq!(text.matches("JOIN Inner").count(), 2, "{text}");
        assert_eq!(text.matches("again: computed once").count(), 1, "{text}");
    }

    #[test]
    fn a_frame_that_failed_to_build_explains_its_error() {
        let frame = left().select(&["nope"]);
        assert!(frame.explain().is_err());
    }
}
