//! `SELECT` queries: `WITH`, `FROM` (the join tree), `WHERE`, `GROUP BY`, `HAVING`, the
//! select list, `DISTINCT`, `ORDER BY` and `LIMIT`, each a call on the lazy frames.
//!
//! The join tree of `FROM a, b, c`: each `WHERE` conjunct that reads one table filters
//! that table (the optimizer pushes it into the read); `x = y` between columns of two
//! tables is a join edge; the rest filters the joined rows. The tree starts from the table
//! with the most bytes (its estimate from file sizes, as the fact table of a star has) and
//! joins, one at a time, the largest table connected to what is joined so far, on every
//! edge between the two; a table connected to none is joined by a cross product. A
//! condition `(a and b) or (a and c)` first gives up its common conjuncts (`a`), so the
//! join edges of TPC-H Q19's disjunction are found.

use super::expr::{has_aggregate, Aggs, Cx, Mode};
use super::scope::{ident_is, Binding, Column, Names, Scope};
use super::subquery::{Existence, ScalarJoin};
use super::SqlError;
use crate::dataframe::{col, from_arrow, lit, DataFrame, Expr, How, SortKey};
use crate::error::Result;
use arrow::array::{Int64Array, RecordBatch};
use sqlparser::ast::{
    self, BinaryOperator as Op, Expr as Sql, GroupByExpr, JoinConstraint, JoinOperator,
    LimitClause, OrderBy, OrderByKind, Query, Select, SelectItem, SetExpr, TableFactor,
    TableWithJoins,
};
use std::collections::HashMap;
use std::sync::Arc;

/// Translates one SQL text: the registered tables, the `WITH` tables in scope, and the
/// internal column names taken so far.
pub(super) struct Translator<'t> {
    tables: &'t HashMap<String, DataFrame>,
    ctes: Vec<(String, DataFrame)>,
    pub(super) names: Names,
}

/// A `FROM` item: its frame and the tables it binds.
pub(super) struct Relation {
    pub frame: DataFrame,
    pub bindings: Vec<Binding>,
}

/// A query level after `FROM` and `WHERE`: one frame, its bindings, and the conditions
/// that read enclosing queries' columns (left for the subquery rewrite).
pub(super) struct FromWhere {
    pub frame: DataFrame,
    pub bindings: Vec<Binding>,
    pub correlated: Vec<Expr>,
}

/// A `WHERE` condition, lowered.
enum Condition {
    Filter(Expr, Vec<ScalarJoin>),
    Exists(Box<Existence>),
}

impl Condition {
    /// The internal columns it reads (of this level and enclosing ones).
    fn reads(&self) -> Vec<String> {
        match self {
            Condition::Filter(e, joins) => {
                let hidden: Vec<&String> = joins.iter().map(|j| &j.value).collect();
                let mut reads: Vec<String> = e
                    .columns()
                    .into_iter()
                    .filter(|c| !hidden.contains(&c))
                    .collect();
                reads.extend(joins.iter().flat_map(|j| j.outer_keys.iter().cloned()));
                reads
            }
            Condition::Exists(x) => x.reads.clone(),
        }
    }

    /// `frame` with the rows that meet the condition.
    fn apply(&self, frame: &DataFrame, names: &mut Names) -> DataFrame {
        match self {
            Condition::Filter(e, joins) => {
                with_scalars(frame, joins, names, |f| f.filter(e.clone()))
            }
            Condition::Exists(x) => x.apply(frame, names),
        }
    }
}

/// `frame` with the scalar subqueries' values beside each row, and the columns added.
fn join_scalars(
    frame: &DataFrame,
    joins: &[ScalarJoin],
    names: &mut Names,
) -> (DataFrame, Vec<String>) {
    let mut joined = frame.clone();
    let mut added = Vec::new();
    for j in joins {
        joined = j.apply(&joined, names);
        added.extend(j.added());
    }
    (joined, added)
}

/// `f` applied to `frame` with the scalar subqueries' values beside each row, which are
/// dropped again after.
fn with_scalars(
    frame: &DataFrame,
    joins: &[ScalarJoin],
    names: &mut Names,
    f: impl FnOnce(DataFrame) -> DataFrame,
) -> DataFrame {
    let (joined, added) = join_scalars(frame, joins, names);
    let out = f(joined);
    match added.is_empty() {
        true => out,
        false => out.drop(&added.iter().map(String::as_str).collect::<Vec<_>>()),
    }
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

/// The conjuncts of `e` (`a AND b AND c`), parentheses removed.
fn conjuncts(e: &Sql) -> Vec<Sql> {
    match e {
        Sql::BinaryOp {
            left,
            op: Op::And,
            right,
        } => {
            let mut out = conjuncts(left);
            out.extend(conjuncts(right));
            out
        }
        Sql::Nested(inner) => conjuncts(inner),
        other => vec![other.clone()],
    }
}

/// The disjuncts of `e` (`a OR b OR c`), parentheses removed.
fn disjuncts(e: &Sql) -> Vec<Sql> {
    match e {
        Sql::BinaryOp {
            left,
            op: Op::Or,
            right,
        } => {
            let mut out = disjuncts(left);
            out.extend(disjuncts(right));
            out
        }
        Sql::Nested(inner) => disjuncts(inner),
        other => vec![other.clone()],
    }
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
fn factored_conjuncts(e: &Sql) -> Vec<Sql> {
    let mut out = Vec::new();
    for c in conjuncts(e) {
        let branches: Vec<Vec<Sql>> = disjuncts(&c).iter().map(conjuncts).collect();
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

/// The value of `LIMIT n`, if any.
fn limit(q: &Query) -> Result<Option<usize>> {
    match &q.limit_clause {
        None => Ok(None),
        Some(LimitClause::LimitOffset {
            limit,
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match limit {
            None => Ok(None),
            Some(Sql::Value(v)) => match &v.value {
                ast::Value::Number(n, _) => n
                    .parse()
                    .map(Some)
                    .map_err(|_| SqlError::invalid(format!("LIMIT {n}"))),
                other => Err(SqlError::invalid(format!("LIMIT {other}"))),
            },
            Some(other) => Err(SqlError::unsupported(format!("LIMIT {other}"))),
        },
        Some(other) => Err(SqlError::unsupported(format!("{other} (OFFSET)"))),
    }
}

/// The `SELECT` of a query without `ORDER BY` or `LIMIT` (a subquery in an expression).
pub(super) fn plain_select(q: &Query) -> Result<&Select> {
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() {
        return Err(SqlError::unsupported(format!(
            "a subquery in an expression with WITH, ORDER BY or LIMIT: ({q})"
        )));
    }
    match &*q.body {
        SetExpr::Select(s) => Ok(s),
        SetExpr::Query(inner) => plain_select(inner),
        other => Err(SqlError::unsupported(format!("subquery {other}"))),
    }
}

/// The `GROUP BY` expressions.
fn group_by(s: &Select) -> Result<&[Sql]> {
    match &s.group_by {
        GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => Ok(exprs),
        other => Err(SqlError::unsupported(format!("{other}"))),
    }
}

/// Whether a `SELECT` aggregates (a `GROUP BY`, or an aggregate in its list or `HAVING`).
pub(super) fn is_grouped(s: &Select) -> Result<bool> {
    let in_items = s.projection.iter().any(|i| match i {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_aggregate(e),
        _ => false,
    });
    Ok(!group_by(s)?.is_empty() || in_items || s.having.is_some())
}

/// An item of the select list: an expression, or a column of a `*`.
enum Item<'q> {
    Sql(&'q Sql),
    Column(String),
}

impl<'t> Translator<'t> {
    pub(super) fn new(tables: &'t HashMap<String, DataFrame>) -> Translator<'t> {
        Translator {
            tables,
            ctes: Vec::new(),
            names: Names::default(),
        }
    }

    /// The frame of a query, its columns named by the select list.
    pub(super) fn query(&mut self, q: &Query, outer: Option<&Scope>) -> Result<DataFrame> {
        if q.fetch.is_some() || !q.locks.is_empty() || q.for_clause.is_some() {
            return Err(SqlError::unsupported(format!("{q}")));
        }
        if q.settings.is_some() || q.format_clause.is_some() || !q.pipe_operators.is_empty() {
            return Err(SqlError::unsupported(format!("{q}")));
        }
        let before = self.ctes.len();
        let out = self.query_with(q, outer);
        self.ctes.truncate(before);
        out
    }

    fn query_with(&mut self, q: &Query, outer: Option<&Scope>) -> Result<DataFrame> {
        if let Some(with) = &q.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE"));
            }
            for cte in &with.cte_tables {
                if !cte.alias.columns.is_empty() {
                    return Err(SqlError::unsupported(
                        "column names after a WITH table's name",
                    ));
                }
                let frame = self.query(&cte.query, outer)?;
                self.ctes.push((cte.alias.name.value.clone(), frame));
            }
        }
        match &*q.body {
            SetExpr::Select(s) => {
                let fw = self.rows_of(s, outer)?;
                if !fw.correlated.is_empty() {
                    return Err(SqlError::unsupported(
                        "a correlated subquery outside WHERE's EXISTS, IN or a scalar subquery",
                    ));
                }
                let scope = Scope {
                    bindings: fw.bindings.clone(),
                    outer,
                };
                self.finish(fw.frame, &scope, s, q.order_by.as_ref(), limit(q)?, &[])
            }
            SetExpr::Query(inner) if q.order_by.is_none() && q.limit_clause.is_none() => {
                self.query(inner, outer)
            }
            SetExpr::SetOperation { op, .. } => Err(SqlError::unsupported(format!("{op}"))),
            other => Err(SqlError::unsupported(format!("query {other}"))),
        }
    }

    /// `FROM` and `WHERE` of a `SELECT`: the joined, filtered rows.
    pub(super) fn rows_of(&mut self, s: &Select, outer: Option<&Scope>) -> Result<FromWhere> {
        let unsupported = s.top.is_some()
            || s.into.is_some()
            || !s.lateral_views.is_empty()
            || s.prewhere.is_some()
            || !s.connect_by.is_empty()
            || !s.cluster_by.is_empty()
            || !s.distribute_by.is_empty()
            || !s.sort_by.is_empty()
            || !s.named_window.is_empty()
            || s.qualify.is_some()
            || s.exclude.is_some()
            || s.value_table_mode.is_some()
            || matches!(s.distinct, Some(ast::Distinct::On(_)));
        if unsupported {
            return Err(SqlError::unsupported(format!("SELECT clause in {s}")));
        }
        let mut relations = Vec::with_capacity(s.from.len());
        for item in &s.from {
            relations.push(self.table_with_joins(item, outer)?);
        }
        if relations.is_empty() {
            relations.push(self.no_table()?);
        }
        let scope = Scope {
            bindings: relations.iter().flat_map(|r| r.bindings.clone()).collect(),
            outer,
        };
        let owner: HashMap<String, usize> = relations
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                r.bindings
                    .iter()
                    .flat_map(move |b| b.columns.iter().map(move |c| (c.internal.clone(), i)))
            })
            .collect();
        let mut correlated = Vec::new();
        let mut edges: Vec<(String, String)> = Vec::new();
        let mut late: Vec<Condition> = Vec::new();
        let mut single: Vec<(usize, Condition)> = Vec::new();
        for c in s.selection.iter().flat_map(factored_conjuncts) {
            let condition = match self.existence(&c, &scope)? {
                Some(x) => Condition::Exists(Box::new(x)),
                None => {
                    let mut cx = Cx::rows(&scope);
                    let e = self.lower(&c, &mut cx)?;
                    Condition::Filter(e, cx.joins)
                }
            };
            let reads = condition.reads();
            let mut touched: Vec<usize> =
                reads.iter().filter_map(|c| owner.get(c).copied()).collect();
            touched.sort_unstable();
            touched.dedup();
            if reads.iter().any(|c| !owner.contains_key(c)) {
                match condition {
                    Condition::Filter(e, joins) if joins.is_empty() => correlated.push(e),
                    _ => {
                        return Err(SqlError::unsupported(format!(
                            "a subquery in a correlated condition: {c}"
                        )))
                    }
                }
                continue;
            }
            if let Condition::Filter(
                Expr::Binary {
                    op: crate::dataframe::BinaryOperator::Eq,
                    left,
                    right,
                },
                joins,
            ) = &condition
            {
                if let (Expr::Column(a), Expr::Column(b), true) =
                    (&**left, &**right, joins.is_empty())
                {
                    if owner.get(a) != owner.get(b) {
                        edges.push((a.clone(), b.clone()));
                        continue;
                    }
                }
            }
            match touched.as_slice() {
                [i] => single.push((*i, condition)),
                _ => late.push(condition),
            }
        }
        // Filters first, then the subquery rewrites that read the filtered rows.
        single.sort_by_key(|(_, c)| matches!(c, Condition::Exists(_)));
        for (i, condition) in &single {
            relations[*i].frame = condition.apply(&relations[*i].frame, &mut self.names);
        }
        late.sort_by_key(|c| matches!(c, Condition::Exists(_)));
        let mut frame = self.join_tree(&relations, &owner, &edges);
        for condition in &late {
            frame = condition.apply(&frame, &mut self.names);
        }
        Ok(FromWhere {
            frame,
            bindings: scope.bindings,
            correlated,
        })
    }

    /// The relations joined along `edges`, largest first (see the module's docs).
    fn join_tree(
        &mut self,
        relations: &[Relation],
        owner: &HashMap<String, usize>,
        edges: &[(String, String)],
    ) -> DataFrame {
        let bytes: Vec<u64> = relations
            .iter()
            .map(|r| r.frame.estimated_bytes())
            .collect();
        // The largest, the first of equals.
        let largest = |candidates: &mut dyn Iterator<Item = usize>| {
            candidates.fold(None, |best: Option<usize>, i| match best {
                Some(b) if bytes[b] >= bytes[i] => Some(b),
                _ => Some(i),
            })
        };
        // `rows_of` gives at least one relation.
        let start = largest(&mut (0..relations.len())).unwrap_or(0);
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
            let next = largest(&mut (0..relations.len()).filter(|&i| connected(i)));
            let next = match next {
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
            frame = frame.merge_on(
                &relations[next].frame,
                &left_on,
                &right_on,
                How::Inner,
                ("_x", "_y"),
            );
            joined[next] = true;
        }
        frame
    }

    /// The one row a `SELECT` without `FROM` reads.
    fn no_table(&mut self) -> Result<Relation> {
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
    fn table_with_joins(
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
                left.frame.merge_on(&right_frame, &l, &r, how, ("_x", "_y"))
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

    /// Grouping, `HAVING`, the select list, `DISTINCT`, `ORDER BY` and `LIMIT` over the
    /// rows of `frame`. `keys` (internal names) are grouped by first and come first in the
    /// output, under their own names (a correlated scalar subquery's keys).
    pub(super) fn finish(
        &mut self,
        frame: DataFrame,
        scope: &Scope,
        s: &Select,
        order_by: Option<&OrderBy>,
        limit: Option<usize>,
        keys: &[String],
    ) -> Result<DataFrame> {
        let mut items: Vec<(Item, String)> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    let name = match e {
                        Sql::Identifier(i) => i.value.clone(),
                        Sql::CompoundIdentifier(parts) => parts
                            .last()
                            .map_or_else(|| e.to_string(), |p| p.value.clone()),
                        _ => e.to_string(),
                    };
                    items.push((Item::Sql(e), name));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    items.push((Item::Sql(expr), alias.value.clone()))
                }
                SelectItem::Wildcard(opts) if opts.opt_exclude.is_none() => {
                    for b in &scope.bindings {
                        for c in &b.columns {
                            items.push((Item::Column(c.internal.clone()), c.name.clone()));
                        }
                    }
                }
                SelectItem::QualifiedWildcard(
                    ast::SelectItemQualifiedWildcardKind::ObjectName(t),
                    _,
                ) => {
                    let table = t.to_string();
                    let b = scope
                        .bindings
                        .iter()
                        .find(|b| b.name.eq_ignore_ascii_case(&table))
                        .ok_or(SqlError::UnknownTable(table))?;
                    for c in &b.columns {
                        items.push((Item::Column(c.internal.clone()), c.name.clone()));
                    }
                }
                other => return Err(SqlError::unsupported(format!("select item {other}"))),
            }
        }
        for (i, (_, name)) in items.iter().enumerate() {
            if items[..i].iter().any(|(_, n)| n == name) || keys.contains(name) {
                return Err(SqlError::invalid(format!(
                    "output column {name:?} is named twice; give one an alias"
                )));
            }
        }
        let grouped = !keys.is_empty() || is_grouped(s)?;
        let mut aggs = Aggs {
            keys: keys.to_vec(),
            ..Aggs::default()
        };
        let mut frame = frame;
        if grouped {
            for g in group_by(s)? {
                let mut cx = Cx::rows(scope);
                let e = self.lower(g, &mut cx)?;
                if !cx.joins.is_empty() {
                    return Err(SqlError::unsupported(format!(
                        "a subquery in GROUP BY: {g}"
                    )));
                }
                let key = match e {
                    Expr::Column(c) => c,
                    other => {
                        let name = self.names.hidden("key");
                        frame = frame.with_column(&name, other);
                        name
                    }
                };
                aggs.group_exprs.push((g.clone(), key.clone()));
                aggs.keys.push(key);
            }
        }
        let mut cx = Cx {
            scope,
            mode: match grouped {
                true => Mode::Groups(&mut aggs),
                false => Mode::Rows,
            },
            joins: Vec::new(),
        };
        let mut outputs: Vec<Expr> = keys.iter().map(|k| col(k)).collect();
        let mut names: Vec<String> = keys.to_vec();
        for (item, name) in &items {
            let e = match item {
                Item::Sql(e) => self.lower(e, &mut cx)?,
                Item::Column(c) => match cx.mode {
                    Mode::Groups(_) => {
                        return Err(SqlError::invalid("SELECT * with GROUP BY or aggregates"))
                    }
                    Mode::Rows => col(c),
                },
            };
            outputs.push(e.alias(name));
            names.push(name.clone());
        }
        let having = match &s.having {
            Some(h) => Some(self.lower(h, &mut cx)?),
            None => None,
        };
        // ORDER BY: an output name or position, the same expression as an item, or an
        // expression computed beside the outputs and dropped after.
        let mut sort = Vec::new();
        let mut hidden = false;
        let order: &[ast::OrderByExpr] = match order_by.map(|o| &o.kind) {
            None => &[],
            Some(OrderByKind::Expressions(v)) => v,
            Some(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
        };
        for o in order {
            if o.with_fill.is_some() {
                return Err(SqlError::unsupported("ORDER BY ... WITH FILL"));
            }
            let position = match &o.expr {
                Sql::Identifier(i) => items.iter().position(|(_, n)| ident_is(i, n)),
                Sql::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => match n.parse::<usize>() {
                        Ok(p) if (1..=items.len()).contains(&p) => Some(p - 1),
                        _ => return Err(SqlError::invalid(format!("ORDER BY {n}"))),
                    },
                    _ => None,
                },
                e => items
                    .iter()
                    .position(|(i, _)| matches!(i, Item::Sql(x) if *x == e)),
            };
            let column = match position {
                Some(p) => items[p].1.clone(),
                None => {
                    let name = self.names.hidden("order");
                    outputs.push(self.lower(&o.expr, &mut cx)?.alias(&name));
                    hidden = true;
                    name
                }
            };
            let descending = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            if matches!(o.options.sort, Some(ast::OrderBySort::Using(_))) {
                return Err(SqlError::unsupported("ORDER BY ... USING"));
            }
            sort.push(SortKey {
                column,
                descending,
                nulls_first: o.options.nulls_first.unwrap_or(false),
            });
        }
        let joins = std::mem::take(&mut cx.joins);
        drop(cx);
        if grouped {
            for (name, e) in &aggs.pre {
                frame = frame.with_column(name, e.clone());
            }
            let keys: Vec<&str> = aggs.keys.iter().map(String::as_str).collect();
            frame = frame
                .groupby(&keys)
                .sort(false)
                .agg_named(aggs.specs.clone());
        }
        // The select list keeps none of the scalar subqueries' columns.
        let (mut out, _) = join_scalars(&frame, &joins, &mut self.names);
        if let Some(h) = having {
            out = out.filter(h);
        }
        out = out.select_exprs(outputs);
        if matches!(s.distinct, Some(ast::Distinct::Distinct)) {
            if hidden {
                return Err(SqlError::unsupported(
                    "SELECT DISTINCT ordered by an expression outside the select list",
                ));
            }
            out = out.drop_duplicates(None);
        }
        if !sort.is_empty() {
            out = out.sort_by(sort);
        }
        if let Some(n) = limit {
            out = out.head(n);
        }
        if hidden {
            out = out.select(&names.iter().map(String::as_str).collect::<Vec<_>>());
        }
        Ok(out)
    }
}
