//! `SELECT` queries: `WITH`, `FROM` and `WHERE` (the join tree is `from`'s), `GROUP BY`,
//! `HAVING`, the select list, `DISTINCT`, `ORDER BY` and `LIMIT`, each a call on the lazy
//! frames.

use super::expr::{has_aggregate, Aggs, Cx, Mode};
use super::from::factored_conjuncts;
use super::scope::{ident_is, Binding, Names, Scope};
use super::subquery::{Existence, ScalarJoin};
use super::SqlError;
use crate::dataframe::{col, DataFrame, Expr, SortKey};
use crate::error::Result;
use sqlparser::ast::{
    self, Expr as Sql, GroupByExpr, LimitClause, OrderBy, OrderByKind, Query, Select, SelectItem,
    SetExpr,
};
use std::collections::HashMap;

/// Translates one SQL text: the registered tables, the `WITH` tables in scope, and the
/// internal column names taken so far.
pub(super) struct Translator<'t> {
    pub(super) tables: &'t HashMap<String, DataFrame>,
    pub(super) ctes: Vec<(String, DataFrame)>,
    pub(super) names: Names,
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

    /// The order conditions are applied in (a stable sort keeps the text's order among
    /// equals): plain filters; then `EXISTS`/`IN` semi and anti joins, which only drop rows;
    /// then filters that compare with a scalar subquery, whose left join to the grouped
    /// subquery then reads fewer rows (TPC-H Q20's `ps_partkey IN (...)` before its
    /// `ps_availqty > (select 0.5 * sum(...))`); last, the rewrites through distinct outer
    /// rows, which read fewer of them after every other condition.
    fn rank(&self) -> u8 {
        match self {
            Condition::Filter(_, joins) if joins.is_empty() => 0,
            Condition::Exists(x) if !x.has_residual() => 1,
            Condition::Filter(..) => 2,
            Condition::Exists(_) => 3,
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
            // A rewrite through distinct outer rows (residual correlations) reads fewer
            // of them after the joins have filtered them.
            let through_distinct = matches!(&condition, Condition::Exists(x) if x.has_residual());
            match touched.as_slice() {
                [i] if !through_distinct => single.push((*i, condition)),
                _ => late.push(condition),
            }
        }
        // Cheapest and most reducing first (see `Condition::rank`).
        single.sort_by_key(|(_, c)| c.rank());
        for (i, condition) in &single {
            relations[*i].frame = condition.apply(&relations[*i].frame, &mut self.names);
        }
        late.sort_by_key(Condition::rank);
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
