//! `FROM`: tables, `WITH` tables and subqueries bound under their names, explicit joins,
//! and the join tree of `FROM a, b, c`.
//!
//! The join tree: each `WHERE` conjunct that reads one table filters that table (the
//! optimizer pushes it into the read); `x = y` between columns of two tables is a join
//! edge; the rest filters the joined rows. The tree starts from the table with the most
//! estimated rows (the optimizer's estimates, `DataFrame::estimated_rows`: the fact table
//! of a star) and joins, one at a time, the table connected to what is joined so far whose
//! join gives the fewest estimated rows (a filtered dimension before an unfiltered one), on
//! every edge between the two; a table connected to none is joined by a cross product. A condition
//! `(a and b) or (a and c)` first gives up its common conjuncts (`a`), so the join edges
//! of TPC-H Q19's disjunction are found.

use super::expr::Cx;
use super::scope::{ident_is, Binding, Column, Names, Scope};
use super::select::Translator;
use super::SqlError;
use crate::dataframe::{col, from_arrow, lit, DataFrame, Expr, How};
use crate::error::Result;
use arrow::array::{Int64Array, RecordBatch};
use sqlparser::ast::{
    BinaryOperator as Op, Expr as Sql, JoinConstraint, JoinOperator, TableFactor, TableWithJoins,
};
use std::collections::HashMap;
use std::sync::Arc;

/// A `FROM` item: its frame and the tables it binds.
pub(super) struct Relation {
    pub frame: DataFrame,
    pub bindings: Vec<Binding>,
}

/// The join keys between the tables joined so far and table `next`: (their columns,
/// `next`'s columns), paired, from every edge between them.
fn keys_to<'e>(
    next: usize,
    joined: &[bool],
    owner: &HashMap<String, usize>,
    edges: &'e [(String, String)],
) -> (Vec<&'e str>, Vec<&'e str>) {
    let (mut left_on, mut right_on) = (Vec::new(), Vec::new());
    for (a, b) in edges {
        let (mine, theirs) = match (owner[a] == next, owner[b] == next) {
            (true, false) => (a, b),
            (false, true) => (b, a),
            _ => continue,
        };
        if joined[owner[theirs]] {
            left_on.push(theirs.as_str());
            right_on.push(mine.as_str());
        }
    }
    (left_on, right_on)
}

/// Every row of `left` beside every row of `right` (a cross product, on a constant key).
pub(super) fn cross(left: &DataFrame, right: &DataFrame, names: &mut Names) -> DataFrame {
    let key = names.hidden("one");
    left.with_column(&key, lit(1))
        .merge_on(
            &right.with_column(&key, lit(1)),
            &[key.as_str()],
            &[key.as_str()],
            How::Inner,
            ("_x", "_y"),
        )
        .drop(&[key.as_str()])
}

/// `frame` without the rows where one of `columns` that may hold nulls is null.
fn drop_null_keys(frame: &DataFrame, columns: &[&str]) -> DataFrame {
    let Ok(schema) = frame.schema() else {
        return frame.clone();
    };
    let nullable = columns
        .iter()
        .filter(|c| schema.field_with_name(c).is_ok_and(|f| f.is_nullable()))
        .map(|c| col(c).is_not_null())
        .reduce(|a, b| a.and_(b));
    match nullable {
        Some(keep) => frame.filter(keep),
        None => frame.clone(),
    }
}

/// `left` joined with `right` where `left_on` equals `right_on` (`how`: inner or left), as
/// SQL's `=`: a null key matches nothing (the frames' joins match null with null, as
/// pandas).
fn equi_join(
    left: &DataFrame,
    right: &DataFrame,
    left_on: &[&str],
    right_on: &[&str],
    how: How,
) -> DataFrame {
    let right = drop_null_keys(right, right_on);
    let left = match how {
        How::Inner => drop_null_keys(left, left_on),
        _ => left.clone(),
    };
    left.merge_on(&right, left_on, right_on, how, ("_x", "_y"))
}

/// The operands of `e` as a chain of `op` (`a AND b AND c` for `And`), parentheses
/// removed; `e` itself where it is not one.
fn split(e: &Sql, op: &Op) -> Vec<Sql> {
    match e {
        Sql::BinaryOp { left, op: o, right } if o == op => {
            let mut out = split(left, op);
            out.extend(split(right, op));
            out
        }
        Sql::Nested(inner) => split(inner, op),
        other => vec![other.clone()],
    }
}

/// The conjuncts of `e` (`a AND b AND c`), parentheses removed.
fn conjuncts(e: &Sql) -> Vec<Sql> {
    split(e, &Op::And)
}

/// `parts` joined by `op`, or `None` for no parts.
fn fold(parts: Vec<Sql>, op: Op) -> Option<Sql> {
    parts.into_iter().reduce(|a, b| Sql::BinaryOp {
        left: Box::new(a),
        op: op.clone(),
        right: Box::new(b),
    })
}

/// The conjuncts of `e`, each disjunction first giving up the conjuncts common to all its
/// branches: `(a AND b) OR (a AND c)` is `a`, `b OR c`.
pub(super) fn factored_conjuncts(e: &Sql) -> Vec<Sql> {
    let mut out = Vec::new();
    for c in conjuncts(e) {
        let branches: Vec<Vec<Sql>> = split(&c, &Op::Or).iter().map(conjuncts).collect();
        if branches.len() < 2 {
            out.push(c);
            continue;
        }
        let common: Vec<Sql> = branches[0]
            .iter()
            .filter(|x| branches[1..].iter().all(|b| b.contains(x)))
            .cloned()
            .collect();
        if common.is_empty() {
            out.push(c);
            continue;
        }
        let rest: Vec<Option<Sql>> = branches
            .into_iter()
            .map(|b| {
                fold(
                    b.into_iter().filter(|x| !common.contains(x)).collect(),
                    Op::And,
                )
            })
            .collect();
        out.extend(common);
        // A branch left with nothing is true, and so is the disjunction.
        if let Some(rest) = rest.into_iter().collect::<Option<Vec<Sql>>>() {
            out.extend(fold(rest, Op::Or));
        }
    }
    out
}

impl Translator<'_> {
    /// The relations joined along `edges`, in the order the module's docs give.
    pub(super) fn join_tree(
        &mut self,
        relations: &[Relation],
        owner: &HashMap<String, usize>,
        edges: &[(String, String)],
    ) -> DataFrame {
        // The most rows (the fact table of a star), the first of equals.
        let rows: Vec<f64> = relations.iter().map(|r| r.frame.estimated_rows()).collect();
        let start = (0..relations.len())
            .reduce(|best, i| if rows[i] > rows[best] { i } else { best })
            .unwrap_or(0);
        let mut joined = vec![false; relations.len()];
        joined[start] = true;
        let mut frame = relations[start].frame.clone();
        for _ in 1..relations.len() {
            let connected = |i: usize| {
                !joined[i]
                    && edges.iter().any(|(a, b)| {
                        (owner[a] == i && joined[owner[b]]) || (owner[b] == i && joined[owner[a]])
                    })
            };
            // The connected table whose join gives the fewest estimated rows (a filtered
            // dimension before an unfiltered one), the first of equals.
            let mut best: Option<(usize, f64)> = None;
            for i in (0..relations.len()).filter(|&i| connected(i)) {
                let (left_on, right_on) = keys_to(i, &joined, owner, edges);
                let rows = equi_join(&frame, &relations[i].frame, &left_on, &right_on, How::Inner)
                    .estimated_rows();
                if best.is_none_or(|(_, r)| rows < r) {
                    best = Some((i, rows));
                }
            }
            let next = match best.map(|(i, _)| i) {
                Some(n) => n,
                None => {
                    let Some(n) = (0..relations.len()).find(|&i| !joined[i]) else {
                        break;
                    };
                    tracing::debug!("SQL: no join condition reaches a table; cross product");
                    frame = cross(&frame, &relations[n].frame, &mut self.names);
                    joined[n] = true;
                    continue;
                }
            };
            let (left_on, right_on) = keys_to(next, &joined, owner, edges);
            frame = equi_join(
                &frame,
                &relations[next].frame,
                &left_on,
                &right_on,
                How::Inner,
            );
            joined[next] = true;
        }
        frame
    }

    /// The one row a `SELECT` without `FROM` reads.
    pub(super) fn no_table(&mut self) -> Result<Relation> {
        let name = self.names.hidden("row");
        let batch =
            RecordBatch::try_from_iter([(name.as_str(), Arc::new(Int64Array::from(vec![1])) as _)])
                .map_err(|e| crate::Error::Frame(e.into()))?;
        Ok(Relation {
            frame: from_arrow(batch, None),
            bindings: Vec::new(),
        })
    }

    /// A `FROM` item with its explicit joins, joined in the order written.
    pub(super) fn table_with_joins(
        &mut self,
        item: &TableWithJoins,
        outer: Option<&Scope>,
    ) -> Result<Relation> {
        let mut left = self.table_factor(&item.relation, outer)?;
        for join in &item.joins {
            let right = self.table_factor(&join.relation, outer)?;
            let (how, constraint) = match &join.join_operator {
                JoinOperator::Join(c) | JoinOperator::Inner(c) => (How::Inner, c),
                JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (How::Left, c),
                JoinOperator::CrossJoin(c) => (How::Inner, c),
                other => {
                    return Err(SqlError::unsupported(format!("join {other:?}")));
                }
            };
            left = match constraint {
                JoinConstraint::None => Relation {
                    frame: cross(&left.frame, &right.frame, &mut self.names),
                    bindings: [left.bindings, right.bindings].concat(),
                },
                JoinConstraint::On(on) => self.join_on(left, right, how, on, outer)?,
                _ => return Err(SqlError::unsupported("JOIN ... USING and NATURAL JOIN")),
            };
        }
        Ok(left)
    }

    /// `left JOIN right ON on` (inner or left outer): equalities between the two sides are
    /// the keys; for a left join, the other conditions must read the right side only and
    /// filter it before the join.
    fn join_on(
        &mut self,
        left: Relation,
        right: Relation,
        how: How,
        on: &Sql,
        outer: Option<&Scope>,
    ) -> Result<Relation> {
        let scope = Scope {
            bindings: [left.bindings.clone(), right.bindings.clone()].concat(),
            outer,
        };
        let right_scope = Scope {
            bindings: right.bindings.clone(),
            outer: None,
        };
        let (mut left_on, mut right_on, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        let mut right_frame = right.frame.clone();
        for c in factored_conjuncts(on) {
            let mut cx = Cx::rows(&scope);
            let e = self.lower(&c, &mut cx)?;
            if !cx.joins.is_empty() {
                return Err(SqlError::unsupported(format!(
                    "a subquery in JOIN ... ON: {c}"
                )));
            }
            let on_right = |n: &String| right_scope.has_internal(n);
            if let Expr::Binary {
                op: crate::dataframe::BinaryOperator::Eq,
                left: a,
                right: b,
            } = &e
            {
                if let (Expr::Column(a), Expr::Column(b)) = (&**a, &**b) {
                    match (on_right(a), on_right(b)) {
                        (false, true) => {
                            left_on.push(a.clone());
                            right_on.push(b.clone());
                            continue;
                        }
                        (true, false) => {
                            left_on.push(b.clone());
                            right_on.push(a.clone());
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            let cols = e.columns();
            if how == How::Left {
                if !cols.iter().all(on_right) {
                    return Err(SqlError::unsupported(format!(
                        "a LEFT JOIN condition that is neither an equality of the two sides \
                         nor a condition on the right side: {c}"
                    )));
                }
                right_frame = right_frame.filter(e);
            } else {
                rest.push(e);
            }
        }
        let mut frame = match left_on.is_empty() {
            true if how == How::Left => {
                return Err(SqlError::unsupported("a LEFT JOIN without an equality"));
            }
            true => cross(&left.frame, &right_frame, &mut self.names),
            false => {
                let l: Vec<&str> = left_on.iter().map(String::as_str).collect();
                let r: Vec<&str> = right_on.iter().map(String::as_str).collect();
                equi_join(&left.frame, &right_frame, &l, &r, how)
            }
        };
        for e in rest {
            frame = frame.filter(e);
        }
        Ok(Relation {
            frame,
            bindings: scope.bindings,
        })
    }

    /// A table, `WITH` table or subquery in `FROM`, bound under its alias.
    fn table_factor(&mut self, factor: &TableFactor, outer: Option<&Scope>) -> Result<Relation> {
        let (frame, name, alias) = match factor {
            TableFactor::Table {
                name,
                alias,
                args: None,
                with_hints,
                version: None,
                partitions,
                sample: None,
                ..
            } if with_hints.is_empty() && partitions.is_empty() => {
                let table = match name.0.as_slice() {
                    [part] => part
                        .as_ident()
                        .ok_or_else(|| SqlError::unsupported(format!("table {name}")))?,
                    _ => return Err(SqlError::unsupported(format!("qualified table {name}"))),
                };
                let frame = self
                    .ctes
                    .iter()
                    .rev()
                    .find(|(n, _)| ident_is(table, n))
                    .map(|(_, f)| f.clone())
                    .or_else(|| self.tables.get(&table.value.to_lowercase()).cloned())
                    .ok_or_else(|| SqlError::UnknownTable(table.value.clone()))?;
                (frame, table.value.clone(), alias)
            }
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                sample: None,
            } => (self.query(subquery, outer)?, "subquery".to_string(), alias),
            other => return Err(SqlError::unsupported(format!("FROM {other}"))),
        };
        if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
            return Err(SqlError::unsupported("column names in a table alias"));
        }
        let name = alias.as_ref().map_or(name, |a| a.name.value.clone());
        self.bind(frame, &name)
    }

    /// `frame` as binding `name`, its columns renamed to internal names.
    fn bind(&mut self, frame: DataFrame, name: &str) -> Result<Relation> {
        let mut columns = Vec::new();
        let mut renames = Vec::new();
        for c in frame.columns()? {
            let internal = self.names.claim(name, &c);
            if internal != c {
                renames.push((c.clone(), internal.clone()));
            }
            columns.push(Column { name: c, internal });
        }
        let frame = match renames.is_empty() {
            true => frame,
            false => frame.rename(
                &renames
                    .iter()
                    .map(|(a, b)| (a.as_str(), b.as_str()))
                    .collect::<Vec<_>>(),
            ),
        };
        Ok(Relation {
            frame,
            bindings: vec![Binding {
                name: name.to_string(),
                columns,
            }],
        })
    }
}
