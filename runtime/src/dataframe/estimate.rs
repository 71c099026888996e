//! Row-count estimates of a lazy frame's nodes, for the optimizer's choices (which side of a
//! join is worth reducing by the other's keys).
//!
//! Sources count their rows: a Parquet file's footer gives them per row group, tables in
//! memory are counted, CSV and persisted frames are their bytes over an estimated row
//! width. Above the sources the numbers are guesses, as every optimizer's are without
//! histograms: a filter keeps a fixed share of rows by the shape of its predicate
//! ([`selectivity`]: an equality a tenth, a range a third) — except an equality of a
//! column with a literal where a Parquet file records the column's distinct values (a
//! dictionary-encoded column: one over its dictionary's size) — and a key join of two tables
//! is taken to be a foreign-key join: the side with more rows before filtering (the fact
//! table) keeps the share of rows that survived on the other side (the dimension).
//!
//! Besides its rows, each estimate carries the share of its *base* rows kept (`kept`):
//! what fraction of the rows its sources had survived filters and joins. A frame that
//! keeps little of its base keeps little of the key values of its base too, which is what
//! makes reducing another frame by its keys pay.

use super::node::{FrameKind, FrameNode};
use std::collections::HashMap;
use tessera_kernels::frame::expr::{BinaryOperator, Expr, Function, StrFunction};
use tessera_kernels::frame::join::JoinHow;
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::parquet::distinct_values;

/// Share of rows an equality keeps.
const EQ: f64 = 0.1;
/// Share of rows a range comparison (`<`, `>=`, …) keeps.
const RANGE: f64 = 1.0 / 3.0;
/// Share of rows a predicate of unknown shape keeps.
const UNKNOWN: f64 = 0.5;
/// Share of rows a null test (`isna`) keeps.
const NULLS: f64 = 0.05;
/// Share of its input's rows a keyed groupby gives as groups.
const GROUPS: f64 = 0.25;

/// One node's estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Estimate {
    /// Rows it gives.
    pub rows: f64,
    /// The share of its base rows it keeps (1 for an unfiltered source), in `[0, 1]`.
    pub kept: f64,
}

impl Estimate {
    /// Its rows before filters and joins cut them: the size of its base table.
    fn base(&self) -> f64 {
        if self.kept > 0.0 {
            self.rows / self.kept
        } else {
            self.rows
        }
    }

    fn scaled(self, share: f64) -> Estimate {
        let share = share.clamp(0.0, 1.0);
        Estimate {
            rows: self.rows * share,
            kept: self.kept * share,
        }
    }
}

/// Estimates of the nodes of one plan, each computed once.
#[derive(Default)]
pub(super) struct Estimates {
    memo: HashMap<u64, Estimate>,
}

impl Estimates {
    /// The estimate of `node`.
    pub fn of(&mut self, node: &FrameNode) -> Estimate {
        if let Some(e) = self.memo.get(&node.id) {
            return *e;
        }
        let e = self.compute(node);
        self.memo.insert(node.id, e);
        e
    }

    fn compute(&mut self, node: &FrameNode) -> Estimate {
        let whole = |rows: f64| Estimate { rows, kept: 1.0 };
        match &node.kind {
            FrameKind::Parquet(source) => {
                let rows_of = |groups: &mut dyn Iterator<Item = usize>| -> f64 {
                    groups
                        .filter_map(|rg| source.info.row_groups.get(rg))
                        .map(|rg| rg.rows as f64)
                        .sum()
                };
                let rows = rows_of(&mut source.row_groups.iter().copied());
                let all = rows_of(&mut (0..source.info.row_groups.len()));
                Estimate {
                    rows,
                    kept: if all > 0.0 { rows / all } else { 1.0 },
                }
            }
            FrameKind::Batches(batches) => {
                whole(batches.iter().map(|b| b.num_rows()).sum::<usize>() as f64)
            }
            FrameKind::Csv(_) | FrameKind::Kept(_) => {
                whole(node.estimated_bytes() as f64 / super::node::row_width(&node.schema) as f64)
            }
            FrameKind::Map { input, steps } => {
                let mut share = 1.0;
                for (at, step) in steps.iter().enumerate() {
                    if let MapStep::Filter(pred) = step {
                        let mut equality = |column: &str| {
                            let distinct = source_distinct(input, &steps[..at], column)?;
                            Some(1.0 / distinct.max(1) as f64)
                        };
                        share *= selectivity(pred, &mut equality);
                    }
                }
                self.of(input).scaled(share)
            }
            FrameKind::GroupBy { input, spec, .. } => {
                let input = self.of(input);
                if spec.keys.is_empty() {
                    whole(1.0)
                } else {
                    // The groups of a filtered input are as filtered as its rows.
                    Estimate {
                        rows: (input.rows * GROUPS).max(1.0),
                        kept: input.kept,
                    }
                }
            }
            FrameKind::Join {
                left, right, spec, ..
            } => {
                let (l, r) = (self.of(left), self.of(right));
                join(l, r, spec.how)
            }
            FrameKind::Sort { input, limit, .. } => {
                let input = self.of(input);
                match limit {
                    Some(n) => limited(input, *n),
                    None => input,
                }
            }
            FrameKind::Head { input, n } => limited(self.of(input), *n),
            FrameKind::Concat(inputs) => whole(inputs.iter().map(|i| self.of(i).rows).sum::<f64>()),
        }
    }
}

/// At most `n` rows of `input`.
fn limited(input: Estimate, n: usize) -> Estimate {
    if input.rows <= n as f64 || input.rows <= 0.0 {
        return input;
    }
    input.scaled(n as f64 / input.rows)
}

/// A key join's estimate: a foreign-key join of the side with the larger base (the fact
/// table) with the other (its dimension), keeping the share of the dimension's rows that
/// survived.
fn join(l: Estimate, r: Estimate, how: JoinHow) -> Estimate {
    match how {
        JoinHow::Inner => {
            let (fact, dim) = if l.base() >= r.base() { (l, r) } else { (r, l) };
            fact.scaled(dim.kept)
        }
        JoinHow::LeftSemi => l.scaled(r.kept),
        JoinHow::LeftAnti => l.scaled(1.0 - r.kept),
        JoinHow::Left | JoinHow::LeftMark => l,
        JoinHow::Right => r,
        JoinHow::Outer => Estimate {
            rows: l.rows.max(r.rows),
            kept: 1.0,
        },
    }
}

/// The share of rows `pred` keeps, by its shape: conjuncts and disjuncts as independent;
/// an equality of a column with a literal as `equality(column)` says where it knows (one
/// over the column's distinct values), else [`EQ`].
fn selectivity(pred: &Expr, equality: &mut dyn FnMut(&str) -> Option<f64>) -> f64 {
    use BinaryOperator as Op;
    let mut eq = |left: &Expr, right: &Expr| match (left, right) {
        (Expr::Column(c), Expr::Literal(_)) | (Expr::Literal(_), Expr::Column(c)) => {
            equality(c).unwrap_or(EQ)
        }
        _ => EQ,
    };
    match pred {
        Expr::Binary { op, left, right } => match op {
            Op::And => selectivity(left, equality) * selectivity(right, equality),
            Op::Or => {
                let a = selectivity(left, equality);
                let b = selectivity(right, equality);
                a + b - a * b
            }
            Op::Eq => eq(left, right),
            Op::NotEq => 1.0 - eq(left, right),
            Op::Lt | Op::LtEq | Op::Gt | Op::GtEq => RANGE,
            _ => UNKNOWN,
        },
        Expr::Not(inner) => 1.0 - selectivity(inner, equality),
        Expr::IsNull(_) => NULLS,
        Expr::IsNotNull(_) => 1.0 - NULLS,
        Expr::FillNull { expr, .. } | Expr::Alias { expr, .. } => selectivity(expr, equality),
        // A pattern match is taken to be as selective as an equality.
        Expr::StrContains { .. } => EQ,
        Expr::Function {
            func:
                Function::Str(
                    StrFunction::StartsWith(_)
                    | StrFunction::EndsWith(_)
                    | StrFunction::Contains(_)
                    | StrFunction::Match(_)
                    | StrFunction::FullMatch(_)
                    | StrFunction::Like { .. },
                ),
            ..
        } => EQ,
        Expr::Literal(tessera_kernels::frame::expr::Literal::Bool(b)) => {
            if *b {
                1.0
            } else {
                0.0
            }
        }
        _ => UNKNOWN,
    }
}

/// The distinct values of `column` as the map steps `steps` over `node` see it, where a
/// Parquet source under it records them ([`distinct_values`]: its dictionary's size in
/// the first row group read), through maps that pass the column on unchanged (renamed or
/// selected); `None` past anything else (a computed column, a join, a groupby).
fn source_distinct(node: &FrameNode, steps: &[MapStep], column: &str) -> Option<u64> {
    let mut column = column.to_string();
    for step in steps.iter().rev() {
        match step {
            MapStep::WithColumn { name, .. } if *name == column => return None,
            MapStep::Rename(pairs) => {
                if let Some((old, _)) = pairs.iter().find(|(_, new)| *new == column) {
                    column = old.clone();
                }
            }
            MapStep::Select(exprs) => match exprs.iter().find(|e| e.output_name() == column)? {
                Expr::Column(c) => column = c.clone(),
                Expr::Alias { expr, .. } => match expr.as_ref() {
                    Expr::Column(c) => column = c.clone(),
                    _ => return None,
                },
                _ => return None,
            },
            _ => {}
        }
    }
    match &node.kind {
        FrameKind::Parquet(source) => {
            let row_group = *source.row_groups.first()?;
            distinct_values(&source.path, row_group, &column)
                .ok()
                .flatten()
        }
        FrameKind::Map { input, steps } => source_distinct(input, steps, &column),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataframe::testing::{left_chunked, right};
    use crate::dataframe::{col, lit, DataFrame, How};

    fn estimate(df: &DataFrame) -> Estimate {
        Estimates::default().of(df.node().expect("frame builds"))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn sources_count_rows_and_filters_guess_shares() {
        // 40 rows in chunks of 7: counted, whatever the chunking.
        let l = left_chunked(7);
        assert_eq!(
            estimate(&l),
            Estimate {
                rows: 40.0,
                kept: 1.0
            }
        );
        let f = l.filter(col("k").eq(lit(1)).and_(col("a").gt(lit(0))));
        let e = estimate(&f);
        assert!(
            close(e.kept, EQ * RANGE) && close(e.rows, 40.0 * EQ * RANGE),
            "{e:?}"
        );
        let ranged = l.filter(col("a").gt(lit(0)));
        let g = estimate(&ranged.groupby(&["k"]).sum());
        assert!(
            close(g.kept, RANGE) && close(g.rows, 40.0 * RANGE * GROUPS),
            "{g:?}"
        );
        assert_eq!(estimate(&l.head(5)).rows, 5.0);
    }

    #[test]
    fn a_join_keeps_the_filtered_share_of_the_fact_side() {
        // 40 left rows (the fact side: the larger base) against 10 right rows of which an
        // equality keeps a tenth.
        let small = right().filter(col("k").eq(lit(1)));
        for (a, b) in [
            (left_chunked(7), small.clone()),
            (small.clone(), left_chunked(7)),
        ] {
            let j = estimate(&a.merge(&b, &["k"], How::Inner));
            assert!(close(j.rows, 4.0) && close(j.kept, EQ), "{j:?}");
        }
        let semi = estimate(&left_chunked(7).semi_join(&small, &["k"], &["k"]));
        assert!(close(semi.rows, 4.0), "{semi:?}");
        let anti = estimate(&left_chunked(7).anti_join(&small, &["k"], &["k"]));
        assert!(close(anti.rows, 36.0), "{anti:?}");
    }

    #[test]
    fn predicate_shapes() {
        let guess = |pred: &Expr| selectivity(pred, &mut |_| None);
        let eq = col("a").eq(lit(1));
        assert!(close(guess(&eq.clone().or_(col("b").eq(lit(2)))), 0.19));
        assert!(close(guess(&eq.clone().not()), 0.9));
        assert_eq!(guess(&lit(false)), 0.0);
        assert_eq!(guess(&col("a")), UNKNOWN);
        assert!(close(guess(&col("s").like("forest%")), EQ));
        // An equality on a column whose distinct values are known keeps one over them,
        // with the literal on either side; others keep their guesses.
        let mut known = |c: &str| (c == "a").then_some(0.25);
        assert!(close(selectivity(&eq, &mut known), 0.25));
        assert!(close(selectivity(&lit(1).eq(col("a")), &mut known), 0.25));
        assert!(close(selectivity(&col("a").ne(lit(1)), &mut known), 0.75));
        assert!(close(selectivity(&col("b").eq(lit(1)), &mut known), EQ));
        assert!(close(selectivity(&col("a").eq(col("b")), &mut known), EQ));
    }

    #[test]
    fn an_equality_on_a_dictionary_encoded_parquet_column_keeps_one_over_its_values() {
        use arrow::array::{Int64Array, RecordBatch, StringArray};
        use std::sync::Arc;
        let dir = std::env::temp_dir().join(format!("tessera-est-ndv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        let kind: Vec<String> = (0..700).map(|i| format!("k{}", i % 7)).collect();
        let batch = RecordBatch::try_from_iter([
            ("kind", Arc::new(StringArray::from(kind)) as _),
            ("x", Arc::new(Int64Array::from_iter_values(0..700)) as _),
        ])
        .unwrap();
        let schema = batch.schema();
        tessera_kernels::frame::parquet::write(path.to_str().unwrap(), &schema, &[batch]).unwrap();
        let df = crate::dataframe::read_parquet(&path);
        let rows = |f: DataFrame| estimate(&f).rows;
        assert!(close(rows(df.filter(col("kind").eq(lit("k3")))), 100.0));
        // Through a rename and a selection the column is the same; a column computed
        // under the name is not, and gets the guess.
        let renamed = df.rename(&[("kind", "k")]).select(&["k", "x"]);
        assert!(close(rows(renamed.filter(col("k").ne(lit("k3")))), 600.0));
        let computed = df.with_column("kind", col("x"));
        assert!(close(
            rows(computed.filter(col("kind").eq(lit(3)))),
            700.0 * EQ
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
