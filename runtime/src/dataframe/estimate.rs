//! Row-count estimates of a lazy frame's nodes, for the optimizer's choices (which side of a
//! join is worth reducing by the other's keys).
//!
//! Sources count their rows: a Parquet file's footer gives them per row group, tables in
//! memory are counted, CSV and persisted frames are their bytes over an estimated row
//! width. Above the sources the numbers are guesses, as every optimizer's are without
//! histograms: a filter keeps a fixed share of rows by the shape of its predicate
//! ([`selectivity`]: an equality a tenth, a range a third), and a key join of two tables
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
                let share = steps
                    .iter()
                    .map(|s| match s {
                        MapStep::Filter(pred) => selectivity(pred),
                        _ => 1.0,
                    })
                    .product();
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

/// The share of rows `pred` keeps, by its shape: conjuncts and disjuncts as independent.
pub(super) fn selectivity(pred: &Expr) -> f64 {
    use BinaryOperator as Op;
    match pred {
        Expr::Binary { op, left, right } => match op {
            Op::And => selectivity(left) * selectivity(right),
            Op::Or => {
                let (a, b) = (selectivity(left), selectivity(right));
                a + b - a * b
            }
            Op::Eq => EQ,
            Op::NotEq => 1.0 - EQ,
            Op::Lt | Op::LtEq | Op::Gt | Op::GtEq => RANGE,
            _ => UNKNOWN,
        },
        Expr::Not(inner) => 1.0 - selectivity(inner),
        Expr::IsNull(_) => NULLS,
        Expr::IsNotNull(_) => 1.0 - NULLS,
        Expr::FillNull { expr, .. } | Expr::Alias { expr, .. } => selectivity(expr),
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
        let eq = col("a").eq(lit(1));
        assert!(close(
            selectivity(&eq.clone().or_(col("b").eq(lit(2)))),
            0.19
        ));
        assert!(close(selectivity(&eq.clone().not()), 0.9));
        assert_eq!(selectivity(&lit(false)), 0.0);
        assert_eq!(selectivity(&col("a")), UNKNOWN);
        assert!(close(selectivity(&col("s").like("forest%")), EQ));
    }
}
