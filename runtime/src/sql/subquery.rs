//! Subqueries rewritten into joins (decorrelation).
//!
//! A subquery is translated with the enclosing query's tables in scope; its `WHERE`
//! conditions that read enclosing columns are its *correlations*. Each is an equality
//! `outer_column = inner_expression` (a join key) or a *residual* condition.
//!
//! - `EXISTS` / `NOT EXISTS` with only equality correlations: a semi / anti join of the
//!   outer rows with the subquery's rows on the keys (null keys never match).
//! - `EXISTS` / `NOT EXISTS` with residual conditions (TPC-H Q21's
//!   `l2.l_suppkey <> l1.l_suppkey`): with C the outer columns the correlations read,
//!   `D = distinct(outer[C])`; `M = D` joined with the subquery's rows on the keys (a cross
//!   product without keys), filtered by the residual conditions, projected to C, distinct;
//!   then a semi / anti join of the outer rows with M on C. Outer rows equal on C all
//!   match or all do not, so this is exact under bag semantics. Outer rows with a null in
//!   C are taken as matching nothing.
//! - `x IN (subquery)`: uncorrelated, a semi join on `x` with the subquery's non-null
//!   values; correlated, `EXISTS` with the extra correlation `x = value`.
//! - `x NOT IN (subquery)` (uncorrelated only) keeps SQL's null semantics exactly: no row
//!   when the subquery yields a null, no row with a null `x` unless the subquery is empty,
//!   else an anti join. A correlated `NOT IN` is [`SqlError::Unsupported`].
//! - A scalar subquery (an aggregate without `GROUP BY`): uncorrelated, its one row is
//!   joined beside every row on a constant key; correlated by equalities only, it is grouped
//!   by its inner key columns and left-joined on them, so a missing group reads as null and
//!   a comparison with it is not true. `count` in a correlated scalar subquery (where a
//!   missing group should read 0) and residual correlations are unsupported.

use super::expr::{calls, has_aggregate, Cx};
use super::from::cross;
use super::scope::{Names, Scope};
use super::select::{is_grouped, plain_select, Translator};
use super::SqlError;
use crate::dataframe::{col, lit, BinaryOperator, DataFrame, Expr, How};
use crate::error::Result;
use sqlparser::ast::{Expr as Sql, InTarget, Query, SelectItem, UnaryOperator};
use tessera_kernels::frame::groupby::{AggFunc, AggSpec};

/// A scalar subquery's value, to be joined beside the rows that read it.
pub(super) struct ScalarJoin {
    /// The subquery's rows: its key columns, then its value.
    pub frame: DataFrame,
    /// The enclosing columns equal to the keys (none when uncorrelated).
    pub outer_keys: Vec<String>,
    /// The subquery's key columns.
    pub inner_keys: Vec<String>,
    /// The hidden column of the value.
    pub value: String,
}

impl ScalarJoin {
    /// `frame` with the value beside each row (null where its group is missing).
    pub fn apply(&self, frame: &DataFrame, names: &mut Names) -> DataFrame {
        if self.outer_keys.is_empty() {
            return cross(frame, &self.frame, names);
        }
        let outer: Vec<&str> = self.outer_keys.iter().map(String::as_str).collect();
        let inner: Vec<&str> = self.inner_keys.iter().map(String::as_str).collect();
        frame.merge_on(&self.frame, &outer, &inner, How::Left, ("_x", "_y"))
    }

    /// The columns [`ScalarJoin::apply`] adds.
    pub fn added(&self) -> Vec<String> {
        let mut added = self.inner_keys.clone();
        added.push(self.value.clone());
        added
    }
}

/// An `EXISTS`, `IN` or a negation of one, ready to filter the rows it reads.
pub(super) struct Existence {
    anti: bool,
    /// The subquery's rows.
    inner: DataFrame,
    /// `(outer column, inner column)` join keys.
    keys: Vec<(String, String)>,
    /// Conditions on outer and inner columns together.
    residual: Vec<Expr>,
    /// The outer columns read (C).
    pub reads: Vec<String>,
    /// An outer column computed first (`x` of `x IN (...)` when not a column), dropped
    /// after.
    computed: Option<(String, Expr)>,
    /// `NOT IN`: the subquery's column, whose nulls empty the answer.
    not_in: Option<String>,
}

/// The distinct rows of `frame`'s `columns` (nulls dropped).
fn distinct(frame: &DataFrame, columns: &[&str]) -> DataFrame {
    frame
        .select(columns)
        .groupby(columns)
        .sort(false)
        .agg_named(Vec::new())
}

/// The conjunction of `exprs` (true for none).
fn all(exprs: &[Expr]) -> Expr {
    exprs
        .iter()
        .cloned()
        .reduce(|a, b| a.and_(b))
        .unwrap_or_else(|| lit(true))
}

impl Existence {
    /// Whether it has residual correlations (and so joins distinct outer rows).
    pub fn has_residual(&self) -> bool {
        !self.residual.is_empty()
    }

    /// The rows of `frame` that the condition keeps.
    pub fn apply(&self, frame: &DataFrame, names: &mut Names) -> DataFrame {
        let mut outer = frame.clone();
        if let Some((name, e)) = &self.computed {
            outer = outer.with_column(name, e.clone());
        }
        let left: Vec<&str> = self.keys.iter().map(|(o, _)| o.as_str()).collect();
        let right: Vec<&str> = self.keys.iter().map(|(_, i)| i.as_str()).collect();
        let out = if !self.residual.is_empty() {
            let c: Vec<&str> = self.reads.iter().map(String::as_str).collect();
            let d = distinct(&outer, &c);
            let m = match self.keys.is_empty() {
                true => cross(&d, &self.inner, names),
                false => d.merge_on(&self.inner, &left, &right, How::Inner, ("_x", "_y")),
            };
            let m = distinct(&m.filter(all(&self.residual)), &c);
            match self.anti {
                true => outer.anti_join(&m, &c, &c),
                false => outer.semi_join(&m, &c, &c),
            }
        } else if self.keys.is_empty() {
            // Uncorrelated EXISTS: all rows or none, by the subquery's row count.
            let n = names.hidden("rows");
            let count = self.inner.groupby(&[]).agg_named(vec![AggSpec {
                column: String::new(),
                func: AggFunc::Size,
                output: n.clone(),
            }]);
            let keep = match self.anti {
                true => col(&n).eq(0),
                false => col(&n).gt(0),
            };
            cross(&outer, &count, names)
                .filter(keep)
                .drop(&[n.as_str()])
        } else {
            let not_null = all(&right
                .iter()
                .map(|k| col(k).is_not_null())
                .collect::<Vec<_>>());
            let inner = self.inner.filter(not_null);
            if let Some(y) = &self.not_in {
                outer = self.not_in_nulls(&outer, y, names);
            }
            match self.anti {
                true => outer.anti_join(&inner, &left, &right),
                false => outer.semi_join(&inner, &left, &right),
            }
        };
        match &self.computed {
            Some((name, _)) => out.drop(&[name.as_str()]),
            None => out,
        }
    }

    /// `NOT IN`'s nulls: no row where the subquery yields a null; no row with a null `x`
    /// unless the subquery is empty.
    fn not_in_nulls(&self, outer: &DataFrame, y: &str, names: &mut Names) -> DataFrame {
        let (rows, values) = (names.hidden("rows"), names.hidden("values"));
        let counts = self.inner.groupby(&[]).agg_named(vec![
            AggSpec {
                column: String::new(),
                func: AggFunc::Size,
                output: rows.clone(),
            },
            AggSpec {
                column: y.to_string(),
                func: AggFunc::Count,
                output: values.clone(),
            },
        ]);
        let x = &self.keys[0].0;
        let keep = col(&rows)
            .eq(col(&values))
            .and_(col(x).is_not_null().or_(col(&rows).eq(0)));
        cross(outer, &counts, names)
            .filter(keep)
            .drop(&[rows.as_str(), values.as_str()])
    }
}

/// `(outer column, inner expression)` when `e` is `outer = inner` (either way round)
/// with an outer column and an inner side that reads this level only.
fn correlation_key(e: &Expr, inner: &Scope) -> Option<(String, Expr)> {
    let Expr::Binary {
        op: BinaryOperator::Eq,
        left,
        right,
    } = e
    else {
        return None;
    };
    let is_inner = |x: &Expr| {
        let cols = x.columns();
        !cols.is_empty() && cols.iter().all(|c| inner.has_internal(c))
    };
    match (&**left, &**right) {
        (Expr::Column(o), i) if !inner.has_internal(o) && is_inner(i) => {
            Some((o.clone(), i.clone()))
        }
        (i, Expr::Column(o)) if !inner.has_internal(o) && is_inner(i) => {
            Some((o.clone(), i.clone()))
        }
        _ => None,
    }
}

/// `e` with `NOT` and parentheses peeled off: the expression and whether it is negated.
fn peel(e: &Sql) -> (&Sql, bool) {
    match e {
        Sql::Nested(inner) => peel(inner),
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => {
            let (inner, negated) = peel(expr);
            (inner, !negated)
        }
        other => (other, false),
    }
}

impl Translator<'_> {
    /// The `EXISTS` or `IN (subquery)` that condition `e` is (possibly under `NOT`), if it
    /// is one, translated with `scope` as its enclosing level.
    pub(super) fn existence(&mut self, e: &Sql, scope: &Scope) -> Result<Option<Existence>> {
        let (e, not) = peel(e);
        match e {
            Sql::Exists { subquery, negated } => {
                Ok(Some(self.exists(subquery, negated ^ not, None, scope)?))
            }
            Sql::In {
                expr,
                target: InTarget::Subquery(q),
                negated,
                ..
            } => Ok(Some(self.exists(q, negated ^ not, Some(expr), scope)?)),
            _ => Ok(None),
        }
    }

    /// `[NOT] EXISTS (q)`, or `x [NOT] IN (q)` when `x` is given.
    fn exists(
        &mut self,
        q: &Query,
        anti: bool,
        x: Option<&Sql>,
        scope: &Scope,
    ) -> Result<Existence> {
        // `x` is an outer expression: lowered in the enclosing level.
        let x = match x {
            Some(x) => {
                let mut cx = Cx::rows(scope);
                let e = self.lower(x, &mut cx)?;
                if !cx.joins.is_empty() {
                    return Err(SqlError::unsupported(format!("a subquery in {x} IN (...)")));
                }
                Some(e)
            }
            None => None,
        };
        let (computed, x_column) = match &x {
            Some(Expr::Column(c)) => (None, Some(c.clone())),
            Some(e) => {
                let name = self.names.hidden("in");
                (Some((name.clone(), e.clone())), Some(name))
            }
            None => (None, None),
        };
        let s = plain_select(q)?;
        let fw = self.rows_of(s, Some(scope))?;
        let inner_scope = Scope {
            bindings: fw.bindings.clone(),
            outer: Some(scope),
        };
        if fw.correlated.is_empty() {
            let mut reads = x.as_ref().map_or_else(Vec::new, Expr::columns);
            let Some(x_column) = x_column else {
                return Ok(Existence {
                    anti,
                    inner: fw.frame,
                    keys: Vec::new(),
                    residual: Vec::new(),
                    reads,
                    computed: None,
                    not_in: None,
                });
            };
            let frame = self.finish(fw.frame, &inner_scope, s, None, None, &[])?;
            let columns = frame.columns()?;
            let [y] = columns.as_slice() else {
                return Err(SqlError::invalid(format!(
                    "the subquery of IN returns {} columns, not one",
                    columns.len()
                )));
            };
            reads.dedup();
            return Ok(Existence {
                anti,
                keys: vec![(x_column, y.clone())],
                residual: Vec::new(),
                reads,
                computed,
                not_in: anti.then(|| y.clone()),
                inner: frame,
            });
        }
        if is_grouped(s)? {
            return Err(SqlError::unsupported(
                "a correlated subquery with GROUP BY or aggregates in EXISTS or IN",
            ));
        }
        let mut correlated = fw.correlated;
        let mut inner = fw.frame;
        if let Some(x) = x {
            if anti {
                return Err(SqlError::unsupported("NOT IN with a correlated subquery"));
            }
            let y = match s.projection.as_slice() {
                [SelectItem::UnnamedExpr(y) | SelectItem::ExprWithAlias { expr: y, .. }] => y,
                _ => {
                    return Err(SqlError::invalid(
                        "the subquery of IN must return one column",
                    ))
                }
            };
            let mut cx = Cx::rows(&inner_scope);
            let y = self.lower(y, &mut cx)?;
            if !cx.joins.is_empty() {
                return Err(SqlError::unsupported(
                    "a subquery in the select list of IN's subquery",
                ));
            }
            correlated.push(x.eq(y));
        }
        let (mut keys, mut residual, mut reads) = (Vec::new(), Vec::new(), Vec::new());
        for c in correlated {
            match correlation_key(&c, &inner_scope) {
                Some((outer, i)) => {
                    let name = self.inner_column(&mut inner, i);
                    reads.push(outer.clone());
                    keys.push((outer, name));
                }
                None => {
                    reads.extend(
                        c.columns()
                            .into_iter()
                            .filter(|n| !inner_scope.has_internal(n)),
                    );
                    residual.push(c);
                }
            }
        }
        let mut seen = Vec::new();
        reads.retain(|r| {
            let new = !seen.contains(r);
            seen.push(r.clone());
            new
        });
        Ok(Existence {
            anti,
            inner,
            keys,
            residual,
            reads,
            computed: None,
            not_in: None,
        })
    }

    /// The column of `frame` holding `e`: its own when a column, else a hidden one added.
    fn inner_column(&mut self, frame: &mut DataFrame, e: Expr) -> String {
        match e {
            Expr::Column(c) => c,
            other => {
                let name = self.names.hidden("key");
                *frame = frame.with_column(&name, other);
                name
            }
        }
    }

    /// A scalar subquery in an expression of `scope`'s level.
    pub(super) fn scalar_subquery(&mut self, q: &Query, scope: &Scope) -> Result<ScalarJoin> {
        let s = plain_select(q)?;
        let item = match s.projection.as_slice() {
            [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] => e,
            _ => {
                return Err(SqlError::invalid(
                    "a scalar subquery must return one column",
                ))
            }
        };
        let grouped_by =
            !matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(g, _) if g.is_empty());
        if grouped_by || !has_aggregate(item) {
            return Err(SqlError::unsupported(
                "a scalar subquery other than an aggregate without GROUP BY (it could return \
                 several rows)",
            ));
        }
        let fw = self.rows_of(s, Some(scope))?;
        let inner_scope = Scope {
            bindings: fw.bindings.clone(),
            outer: Some(scope),
        };
        let mut frame = fw.frame;
        let (mut outer_keys, mut inner_keys) = (Vec::new(), Vec::new());
        for c in &fw.correlated {
            let (outer, i) = correlation_key(c, &inner_scope).ok_or_else(|| {
                SqlError::unsupported(format!(
                    "a correlated scalar subquery whose correlation is not an equality: {c}"
                ))
            })?;
            outer_keys.push(outer);
            inner_keys.push(self.inner_column(&mut frame, i));
        }
        if !outer_keys.is_empty() && calls(item, &|name| name == "count") {
            return Err(SqlError::unsupported(
                "count in a correlated scalar subquery (a missing group would read null, not 0)",
            ));
        }
        let frame = self.finish(frame, &inner_scope, s, None, None, &inner_keys)?;
        let columns = frame.columns()?;
        let Some(output) = columns.last() else {
            return Err(SqlError::invalid(
                "a scalar subquery must return one column",
            ));
        };
        let value = self.names.hidden("scalar");
        Ok(ScalarJoin {
            frame: frame.rename(&[(output.as_str(), value.as_str())]),
            outer_keys,
            inner_keys,
            value,
        })
    }
}
