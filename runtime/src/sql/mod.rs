//! SQL over lazy dataframes: `SELECT` text translated into calls on [`DataFrame`], so the
//! optimizer (predicate pushdown, column pruning, Parquet row-group pruning) applies to it
//! as to frames built by hand, and nothing runs until `execute`.
//!
//! ```no_run
//! use tessera::dataframe::read_parquet;
//! use tessera::sql::SqlContext;
//! # fn main() -> tessera::Result<()> {
//! let session = tessera::Session::local()?;
//! let mut ctx = SqlContext::new();
//! ctx.register("lineitem", &read_parquet("lineitem.parquet"));
//! let frame = ctx.sql("select l_returnflag, sum(l_quantity) as qty from lineitem \
//!                      group by l_returnflag order by l_returnflag")?;
//! let answer = frame.execute(&session)?;
//! // The same, in one call:
//! let lineitem = read_parquet("lineitem.parquet");
//! let frame = session.sql("select count(*) as n from lineitem", &[("lineitem", &lineitem)])?;
//! # Ok(())
//! # }
//! ```
//!
//! What is translated (`docs/guide/sql.md` has the whole list): one `SELECT` query with
//! `WITH`, subqueries in `FROM`, comma joins (their join tree built from the equalities in
//! `WHERE`), `[INNER] JOIN`, `LEFT [OUTER] JOIN` and `CROSS JOIN`, `WHERE`, `GROUP BY`
//! with `sum avg min max count count(distinct)`, `HAVING`, `ORDER BY`, `LIMIT`, and
//! subqueries: `EXISTS`, `IN`, their negations and scalar subqueries, correlated or not,
//! rewritten into joins (the `subquery` module says how). Anything else is a
//! [`SqlError::Unsupported`] naming the construct.

mod expr;
mod from;
mod scope;
mod select;
mod subquery;
#[cfg(test)]
mod tests;

use crate::dataframe::DataFrame;
use crate::error::Result;
use sqlparser::ast::Statement;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use std::collections::HashMap;
use thiserror::Error;

/// Why a SQL text could not be translated into a frame.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SqlError {
    /// The text is not valid SQL (the parser's message, with the line and column).
    #[error("SQL parse error: {0}")]
    Parse(String),
    /// A table that was not registered (nor defined by `WITH`).
    #[error("unknown table {0:?}")]
    UnknownTable(String),
    /// A column that no table in scope has.
    #[error("unknown column {0:?}")]
    UnknownColumn(String),
    /// A column that several tables in scope have; qualify it (`t.col`).
    #[error("ambiguous column {name:?}: it is in {tables}")]
    AmbiguousColumn {
        /// The column as written.
        name: String,
        /// The tables that have it, comma-separated.
        tables: String,
    },
    /// SQL that Tessera does not translate (the construct is named).
    #[error("unsupported SQL: {0}")]
    Unsupported(String),
    /// SQL that is well-formed but wrong (a column neither grouped nor aggregated, an
    /// aggregate in `WHERE`, a duplicate output name…).
    #[error("invalid SQL: {0}")]
    Invalid(String),
}

impl SqlError {
    /// An [`SqlError::Unsupported`] naming `what`.
    pub(crate) fn unsupported(what: impl Into<String>) -> crate::Error {
        SqlError::Unsupported(what.into()).into()
    }

    /// An [`SqlError::Invalid`] saying `why`.
    pub(crate) fn invalid(why: impl Into<String>) -> crate::Error {
        SqlError::Invalid(why.into()).into()
    }
}

/// Named tables that SQL queries read ([`SqlContext::sql`]).
///
/// Names are matched case-insensitively, as unquoted SQL identifiers are.
#[derive(Clone, Debug, Default)]
pub struct SqlContext {
    tables: HashMap<String, DataFrame>,
}

impl SqlContext {
    /// A context with no tables.
    pub fn new() -> SqlContext {
        SqlContext::default()
    }

    /// Makes `frame` readable as table `name` (replacing a table of that name).
    pub fn register(&mut self, name: &str, frame: &DataFrame) -> &mut SqlContext {
        self.tables.insert(name.to_lowercase(), frame.clone());
        self
    }

    /// The lazy frame of one `SELECT` query over the registered tables: its columns are the
    /// query's output columns, named by their aliases (or the column, or the expression's
    /// text). Errors are [`SqlError`]s (wrapped in [`crate::Error::Sql`]) or, for types
    /// that do not combine, the dataframe's own errors.
    pub fn sql(&self, query: &str) -> Result<DataFrame> {
        let statements = Parser::parse_sql(&GenericDialect {}, query)
            .map_err(|e| SqlError::Parse(e.to_string()))?;
        let query = match statements.as_slice() {
            [Statement::Query(q)] => q,
            [] => return Err(SqlError::Parse("no statement".into()).into()),
            [_] => return Err(SqlError::unsupported("statements other than SELECT")),
            _ => return Err(SqlError::unsupported("more than one statement")),
        };
        let frame = select::Translator::new(&self.tables).query(query, None)?;
        // Building a frame checks its types: report that error now, not at `execute`.
        match frame.error() {
            Some(e) => Err(e.clone()),
            None => Ok(frame),
        }
    }
}
