//! Scalar expressions: SQL's operators, literals, `CASE`, `LIKE`, `IN (list)`, `BETWEEN`,
//! `EXTRACT`, `SUBSTRING`, casts and aggregate calls, lowered into frame [`Expr`]s.
//!
//! Numbers: `7` is an `Int64` constant, `0.06` an exact decimal constant (DuckDB reads them
//! the same way), `1e-3` a float. `IN (list)` and `NOT IN (list)` follow SQL's three-valued
//! logic (null when the value is null), as do the comparisons.

use super::scope::Scope;
use super::select::Translator;
use super::subquery::ScalarJoin;
use super::SqlError;
use crate::dataframe::{col, lit, when, Agg, DatePart, Expr, Literal, StrFunction};
use crate::error::Result;
use arrow::compute::kernels::cast_utils::Parser as _;
use arrow::datatypes::{DataType, Date32Type};
use sqlparser::ast::{
    self, BinaryOperator as Op, CastKind, DateTimeField, DuplicateTreatment, ExactNumberInfo,
    Expr as Sql, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value,
};
use tessera_kernels::frame::groupby::AggSpec;

/// The state of a grouped `SELECT`: its keys, the columns computed before grouping, and
/// the aggregations met so far.
#[derive(Debug, Default)]
pub(super) struct Aggs {
    /// Each `GROUP BY` expression and the frame column holding it.
    pub group_exprs: Vec<(Sql, String)>,
    /// The key columns (internal names) an expression may read after grouping.
    pub keys: Vec<String>,
    /// Columns added before grouping: aggregated expressions that are not plain columns.
    pub pre: Vec<(String, Expr)>,
    /// The aggregations, each to a hidden output column.
    pub specs: Vec<AggSpec>,
}

/// Where an expression is evaluated: on the rows (`WHERE`, `GROUP BY`, inside an
/// aggregate) or on the groups (`SELECT`, `HAVING`, `ORDER BY` of a grouped query).
pub(super) enum Mode<'m> {
    Rows,
    Groups(&'m mut Aggs),
}

/// What lowering an expression needs and collects.
pub(super) struct Cx<'s, 'm> {
    pub scope: &'s Scope<'s>,
    pub mode: Mode<'m>,
    /// Scalar subqueries met, to be joined to the frame before the expression is evaluated.
    pub joins: Vec<ScalarJoin>,
}

impl<'s, 'm> Cx<'s, 'm> {
    /// Lowering on the rows of `scope`.
    pub fn rows(scope: &'s Scope<'s>) -> Cx<'s, 'm> {
        Cx {
            scope,
            mode: Mode::Rows,
            joins: Vec::new(),
        }
    }
}

/// The aggregate function `name` stands for, if it is one.
fn aggregate(name: &str) -> Option<Agg> {
    Some(match name {
        "sum" => Agg::Sum,
        "avg" | "mean" => Agg::Mean,
        "min" => Agg::Min,
        "max" => Agg::Max,
        "count" => Agg::Count,
        "stddev" | "stddev_samp" => Agg::Std,
        "variance" | "var_samp" => Agg::Var,
        _ => return None,
    })
}

/// The lower-case name of a function call.
fn function_name(f: &ast::Function) -> String {
    f.name.to_string().to_lowercase()
}

/// Whether `e` calls an aggregate function outside any subquery.
pub(super) fn has_aggregate(e: &Sql) -> bool {
    calls(e, &|name| aggregate(name).is_some())
}

/// Whether `e` calls a function (not a window function) whose lower-case name `wanted`
/// accepts, outside any subquery.
pub(super) fn calls(e: &Sql, wanted: &dyn Fn(&str) -> bool) -> bool {
    use std::ops::ControlFlow;
    /// Finds a call at subquery depth 0.
    struct Finder<'w> {
        depth: usize,
        wanted: &'w dyn Fn(&str) -> bool,
    }
    impl ast::Visitor for Finder<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Sql) -> ControlFlow<()> {
            match e {
                Sql::Function(f)
                    if self.depth == 0 && f.over.is_none() && (self.wanted)(&function_name(f)) =>
                {
                    ControlFlow::Break(())
                }
                _ => ControlFlow::Continue(()),
            }
        }
    }
    ast::Visit::visit(e, &mut Finder { depth: 0, wanted }).is_break()
}

/// A numeric literal: an integer, an exact decimal (`0.06`), or a float (`1e-3`).
fn number(text: &str) -> Result<Literal> {
    let bad = || SqlError::invalid(format!("number {text}"));
    if text.contains(['e', 'E']) {
        return text.parse::<f64>().map(Literal::Float).map_err(|_| bad());
    }
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.is_empty() {
        if let Ok(v) = int.parse::<i64>() {
            return Ok(Literal::Int(v));
        }
    }
    let value: i128 = format!("{int}{frac}").parse().map_err(|_| bad())?;
    let scale = i8::try_from(frac.len()).map_err(|_| bad())?;
    let digits = value.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    let precision = u8::try_from(digits.max(frac.len() as u32)).map_err(|_| bad())?;
    Ok(Literal::decimal(value, precision, scale)?)
}

/// The text of a string literal.
fn string(e: &Sql) -> Option<&str> {
    match e {
        Sql::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The value of an integer literal (negative ones included).
fn integer(e: &Sql) -> Option<i64> {
    match e {
        Sql::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            Value::SingleQuotedString(s) => s.trim().parse().ok(),
            _ => None,
        },
        Sql::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => integer(expr).map(|v| -v),
        Sql::Nested(e) => integer(e),
        _ => None,
    }
}

/// A `DATE 'yyyy-mm-dd'` constant.
fn date(text: &str) -> Result<Literal> {
    Date32Type::parse(text)
        .map(Literal::Date)
        .ok_or_else(|| SqlError::invalid(format!("date {text:?}")))
}

/// `INTERVAL 'n' unit` (or `INTERVAL 'n unit'`) as a calendar offset.
fn interval(i: &ast::Interval) -> Result<Literal> {
    let bad = || SqlError::unsupported(format!("interval {i}"));
    let (n, unit) = match (&i.leading_field, string(&i.value)) {
        (Some(field), _) => (integer(&i.value).ok_or_else(bad)?, field.to_string()),
        (None, Some(text)) => {
            let (n, unit) = text.trim().split_once(' ').ok_or_else(bad)?;
            (
                n.trim().parse().map_err(|_| bad())?,
                unit.trim().to_string(),
            )
        }
        (None, None) => return Err(bad()),
    };
    let n = i32::try_from(n).map_err(|_| bad())?;
    let (months, days) = match unit.to_lowercase().trim_end_matches('s') {
        "year" => (n.checked_mul(12).ok_or_else(bad)?, 0),
        "month" => (n, 0),
        "week" => (0, n.checked_mul(7).ok_or_else(bad)?),
        "day" => (0, n),
        _ => return Err(bad()),
    };
    Ok(Literal::Interval { months, days })
}

/// The Arrow type of a SQL type name in a `CAST`.
fn data_type(t: &ast::DataType) -> Result<DataType> {
    use ast::DataType as T;
    Ok(match t {
        T::SmallInt(_) | T::Int(_) | T::Integer(_) => DataType::Int32,
        T::BigInt(_) => DataType::Int64,
        T::Real | T::Float(_) => DataType::Float32,
        T::Double(_) | T::DoublePrecision => DataType::Float64,
        T::Varchar(_) | T::Text | T::String(_) => DataType::Utf8,
        T::Date => DataType::Date32,
        T::Boolean | T::Bool => DataType::Boolean,
        T::Decimal(info) | T::Numeric(info) => match info {
            ExactNumberInfo::PrecisionAndScale(p, s) => DataType::Decimal128(
                u8::try_from(*p).map_err(|_| SqlError::invalid(format!("type {t}")))?,
                i8::try_from(*s).map_err(|_| SqlError::invalid(format!("type {t}")))?,
            ),
            ExactNumberInfo::Precision(p) => DataType::Decimal128(
                u8::try_from(*p).map_err(|_| SqlError::invalid(format!("type {t}")))?,
                0,
            ),
            ExactNumberInfo::None => DataType::Decimal128(18, 3),
        },
        other => return Err(SqlError::unsupported(format!("type {other}"))),
    })
}

/// A field of `EXTRACT`.
fn date_part(field: &DateTimeField) -> Result<DatePart> {
    Ok(match field {
        DateTimeField::Year | DateTimeField::Years => DatePart::Year,
        DateTimeField::Month | DateTimeField::Months => DatePart::Month,
        DateTimeField::Day | DateTimeField::Days => DatePart::Day,
        DateTimeField::Quarter => DatePart::Quarter,
        DateTimeField::DayOfYear | DateTimeField::Doy => DatePart::DayOfYear,
        DateTimeField::Hour | DateTimeField::Hours => DatePart::Hour,
        DateTimeField::Minute | DateTimeField::Minutes => DatePart::Minute,
        DateTimeField::Second | DateTimeField::Seconds => DatePart::Second,
        other => return Err(SqlError::unsupported(format!("EXTRACT({other})"))),
    })
}

/// `left op right` for a SQL binary operator.
fn binary(op: &Op, left: Expr, right: Expr) -> Result<Expr> {
    Ok(match op {
        Op::Plus => left + right,
        Op::Minus => left - right,
        Op::Multiply => left * right,
        Op::Divide => left / right,
        Op::Modulo => left % right,
        Op::Eq => left.eq(right),
        Op::NotEq => left.ne(right),
        Op::Lt => left.lt(right),
        Op::LtEq => left.le(right),
        Op::Gt => left.gt(right),
        Op::GtEq => left.ge(right),
        Op::And => left.and_(right),
        Op::Or => left.or_(right),
        other => return Err(SqlError::unsupported(format!("operator {other}"))),
    })
}

/// The unnamed arguments of a function call.
fn arguments(f: &ast::Function) -> Result<(Vec<&FunctionArgExpr>, bool)> {
    match &f.args {
        FunctionArguments::None => Ok((Vec::new(), false)),
        FunctionArguments::Subquery(_) => Err(SqlError::unsupported(format!("call {f}"))),
        FunctionArguments::List(list) => {
            if !list.clauses.is_empty() {
                return Err(SqlError::unsupported(format!("call {f}")));
            }
            let args = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(e) => Ok(e),
                    _ => Err(SqlError::unsupported(format!("named arguments in {f}"))),
                })
                .collect::<Result<Vec<_>>>()?;
            let distinct = matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct));
            Ok((args, distinct))
        }
    }
}

impl Translator<'_> {
    /// `e` as a frame expression, in `cx`'s scope and mode.
    pub(super) fn lower(&mut self, e: &Sql, cx: &mut Cx) -> Result<Expr> {
        if let Mode::Groups(aggs) = &cx.mode {
            if let Some((_, key)) = aggs.group_exprs.iter().find(|(g, _)| g == e) {
                return Ok(col(key));
            }
        }
        Ok(match e {
            Sql::Identifier(i) => self.column(std::slice::from_ref(i), cx)?,
            Sql::CompoundIdentifier(parts) => self.column(parts, cx)?,
            Sql::Value(v) => lit(match &v.value {
                Value::Number(n, _) => number(n)?,
                Value::SingleQuotedString(s) => Literal::Str(s.clone()),
                Value::Boolean(b) => Literal::Bool(*b),
                Value::Null => Literal::Null,
                other => return Err(SqlError::unsupported(format!("literal {other}"))),
            }),
            Sql::TypedString(t) => match (&t.data_type, string(&Sql::Value(t.value.clone()))) {
                (ast::DataType::Date, Some(text)) => lit(date(text)?),
                _ => return Err(SqlError::unsupported(format!("literal {e}"))),
            },
            Sql::Interval(i) => lit(interval(i)?),
            Sql::Nested(inner) => self.lower(inner, cx)?,
            Sql::BinaryOp { left, op, right } => {
                let (l, r) = (self.lower(left, cx)?, self.lower(right, cx)?);
                binary(op, l, r)?
            }
            Sql::UnaryOp { op, expr } => {
                let inner = self.lower(expr, cx)?;
                match op {
                    UnaryOperator::Not => inner.not(),
                    UnaryOperator::Minus => -inner,
                    UnaryOperator::Plus => inner,
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                }
            }
            Sql::IsNull(inner) => self.lower(inner, cx)?.is_null(),
            Sql::IsNotNull(inner) => self.lower(inner, cx)?.is_not_null(),
            Sql::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let v = self.lower(expr, cx)?;
                let (lo, hi) = (self.lower(low, cx)?, self.lower(high, cx)?);
                let between = v.clone().ge(lo).and_(v.le(hi));
                if *negated {
                    between.not()
                } else {
                    between
                }
            }
            Sql::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => {
                let v = self.lower(expr, cx)?;
                let mut any: Option<Expr> = None;
                for item in list {
                    let eq = v.clone().eq(self.lower(item, cx)?);
                    any = Some(match any {
                        Some(a) => a.or_(eq),
                        None => eq,
                    });
                }
                let any = any.ok_or_else(|| SqlError::invalid("IN () with no values"))?;
                if *negated {
                    any.not()
                } else {
                    any
                }
            }
            Sql::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => {
                let v = self.lower(expr, cx)?;
                let p = string(pattern).ok_or_else(|| {
                    SqlError::unsupported("LIKE with a pattern that is not a string literal")
                })?;
                let like = match escape_char.as_deref() {
                    None => v.like(p),
                    Some(esc) => match string(esc).map(|s| s.chars().collect::<Vec<_>>()) {
                        Some(c) if c.len() == 1 => v.like_escape(p, c[0]),
                        _ => return Err(SqlError::invalid(format!("ESCAPE in {e}"))),
                    },
                };
                if *negated {
                    like.not()
                } else {
                    like
                }
            }
            Sql::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(o) => Some(self.lower(o, cx)?),
                    None => None,
                };
                let otherwise = match else_result {
                    Some(x) => self.lower(x, cx)?,
                    None => lit(Literal::Null),
                };
                let mut branches = Vec::with_capacity(conditions.len());
                for w in conditions {
                    let mut condition = self.lower(&w.condition, cx)?;
                    if let Some(o) = &operand {
                        condition = o.clone().eq(condition);
                    }
                    branches.push((condition, self.lower(&w.result, cx)?));
                }
                branches
                    .into_iter()
                    .rev()
                    .fold(otherwise, |rest, (c, v)| when(c).then(v).otherwise(rest))
            }
            Sql::Extract { field, expr, .. } => Expr::DatePart {
                expr: Box::new(self.lower(expr, cx)?),
                part: date_part(field)?,
            },
            Sql::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let v = self.lower(expr, cx)?;
                substring(v, substring_from.as_deref(), substring_for.as_deref())?
            }
            Sql::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr,
                data_type: t,
                format: None,
            } => self.lower(expr, cx)?.cast(data_type(t)?),
            Sql::Function(f) => self.function(f, cx)?,
            Sql::Subquery(q) => {
                let join = self.scalar_subquery(q, cx.scope)?;
                let value = col(&join.value);
                cx.joins.push(join);
                value
            }
            Sql::Exists { .. } | Sql::In { .. } => {
                return Err(SqlError::unsupported(format!(
                    "{e}: EXISTS and IN with a subquery are translated only as a condition \
                     of WHERE joined by AND"
                )))
            }
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    /// A column reference; after grouping, only keys (and enclosing queries' columns).
    fn column(&mut self, parts: &[ast::Ident], cx: &mut Cx) -> Result<Expr> {
        let name = cx.scope.resolve(parts)?;
        if let Mode::Groups(aggs) = &cx.mode {
            if cx.scope.has_internal(&name) && !aggs.keys.contains(&name) {
                let written: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                return Err(SqlError::invalid(format!(
                    "column {} must appear in GROUP BY or be used in an aggregate function",
                    written.join(".")
                )));
            }
        }
        Ok(col(&name))
    }

    /// A function call: an aggregate (after grouping) or a scalar function.
    fn function(&mut self, f: &ast::Function, cx: &mut Cx) -> Result<Expr> {
        if f.over.is_some() {
            return Err(SqlError::unsupported("window functions are not supported"));
        }
        if f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
            return Err(SqlError::unsupported(format!("call {f}")));
        }
        let name = function_name(f);
        let (args, distinct) = arguments(f)?;
        if let Some(agg) = aggregate(&name) {
            return self.aggregate_call(f, agg, &args, distinct, cx);
        }
        if distinct {
            return Err(SqlError::unsupported(format!("DISTINCT in {f}")));
        }
        let mut lowered = Vec::with_capacity(args.len());
        for a in &args {
            match a {
                FunctionArgExpr::Expr(e) => lowered.push(self.lower(e, cx)?),
                _ => return Err(SqlError::unsupported(format!("call {f}"))),
            }
        }
        let wrong = || SqlError::invalid(format!("wrong arguments in {f}"));
        let int_arg = |i: usize| match args.get(i) {
            Some(FunctionArgExpr::Expr(e)) => integer(e),
            _ => None,
        };
        Ok(match (name.as_str(), lowered.as_slice()) {
            ("upper", [v]) => v.clone().str(StrFunction::Upper),
            ("lower", [v]) => v.clone().str(StrFunction::Lower),
            ("length" | "char_length" | "character_length", [v]) => v.clone().str(StrFunction::Len),
            ("trim", [v]) => v.clone().str(StrFunction::Strip),
            ("abs", [v]) => v.clone().abs(),
            ("round", [v]) => v.clone().round(0),
            ("round", [v, _]) => {
                let digits = int_arg(1).and_then(|d| i32::try_from(d).ok());
                v.clone().round(digits.ok_or_else(wrong)?)
            }
            ("coalesce", [first, rest @ ..]) => rest
                .iter()
                .fold(first.clone(), |acc, r| acc.fill_null(r.clone())),
            ("substring" | "substr", [v, ..]) if (2..=3).contains(&args.len()) => {
                let from = match args[1] {
                    FunctionArgExpr::Expr(e) => Some(e),
                    _ => None,
                };
                let length = match args.get(2) {
                    Some(FunctionArgExpr::Expr(e)) => Some(e),
                    _ => None,
                };
                substring(v.clone(), from, length)?
            }
            _ => return Err(SqlError::unsupported(format!("function {f}"))),
        })
    }

    /// An aggregate call: a hidden column of the grouping, which must be under way.
    fn aggregate_call(
        &mut self,
        f: &ast::Function,
        agg: Agg,
        args: &[&FunctionArgExpr],
        distinct: bool,
        cx: &mut Cx,
    ) -> Result<Expr> {
        let func = match (agg, distinct) {
            (Agg::Count, true) => Agg::NUnique,
            (_, true) => return Err(SqlError::unsupported(format!("DISTINCT in {f}"))),
            (func, false) => func,
        };
        // The aggregated values, lowered on the rows.
        let argument = match args {
            [FunctionArgExpr::Wildcard] if agg == Agg::Count && !distinct => None,
            [FunctionArgExpr::Expr(Sql::Value(v))]
                if agg == Agg::Count && !distinct && matches!(v.value, Value::Number(_, _)) =>
            {
                None
            }
            [FunctionArgExpr::Expr(e)] => {
                let mut rows = Cx::rows(cx.scope);
                let lowered = self.lower(e, &mut rows)?;
                if !rows.joins.is_empty() {
                    return Err(SqlError::unsupported(format!("a subquery inside {f}")));
                }
                Some(lowered)
            }
            _ => return Err(SqlError::invalid(format!("wrong arguments in {f}"))),
        };
        let Mode::Groups(aggs) = &mut cx.mode else {
            return Err(SqlError::invalid(format!(
                "aggregate {f} where rows are filtered or grouped (WHERE, GROUP BY, ON, or \
                 inside another aggregate)"
            )));
        };
        let (func, column) = match argument {
            None => (Agg::Size, String::new()),
            Some(Expr::Column(c)) => (func, c),
            Some(e) => match aggs.pre.iter().find(|(_, x)| *x == e) {
                Some((name, _)) => (func, name.clone()),
                None => {
                    let name = self.names.hidden("arg");
                    aggs.pre.push((name.clone(), e));
                    (func, name)
                }
            },
        };
        if let Some(s) = aggs
            .specs
            .iter()
            .find(|s| s.func == func && s.column == column)
        {
            return Ok(col(&s.output));
        }
        let output = self.names.hidden(func.name());
        aggs.specs.push(AggSpec {
            column,
            func,
            output: output.clone(),
        });
        Ok(col(&output))
    }
}

/// `SUBSTRING(v FROM from FOR length)`: `from` counts from 1; both constants.
fn substring(v: Expr, from: Option<&Sql>, length: Option<&Sql>) -> Result<Expr> {
    let start = match from {
        Some(e) => {
            integer(e).ok_or_else(|| SqlError::unsupported("SUBSTRING FROM a non-constant"))?
        }
        None => 1,
    };
    if start < 1 {
        return Err(SqlError::unsupported("SUBSTRING FROM a position below 1"));
    }
    let stop = match length {
        Some(e) => {
            let n =
                integer(e).ok_or_else(|| SqlError::unsupported("SUBSTRING FOR a non-constant"))?;
            if n < 0 {
                return Err(SqlError::invalid("SUBSTRING FOR a negative length"));
            }
            Some(start - 1 + n)
        }
        None => None,
    };
    Ok(v.str(StrFunction::Slice {
        start: start - 1,
        stop,
    }))
}
