//! Name resolution: the tables a query's `FROM` binds, their columns' internal names, and
//! the enclosing queries a correlated subquery reads.
//!
//! Every column a `FROM` item brings in gets an internal name unique within the whole
//! translation: its own name where no other binding took it first, else
//! `binding.column` (then `binding.column#2`…). So `nation n1, nation n2`, or `lineitem`
//! read both outside and inside a subquery, resolve to distinct columns, and the columns an
//! expression reads tell which bindings (and which enclosing queries) it depends on.

use super::SqlError;
use crate::error::Result;
use sqlparser::ast::Ident;
use std::collections::HashSet;

/// A column of a binding: its SQL name and the frame column holding it.
#[derive(Clone, Debug)]
pub(super) struct Column {
    pub name: String,
    pub internal: String,
}

/// A table in scope under one name (its alias, or the table's name).
#[derive(Clone, Debug)]
pub(super) struct Binding {
    pub name: String,
    pub columns: Vec<Column>,
}

/// The bindings of one query level, and the level enclosing it.
pub(super) struct Scope<'a> {
    pub bindings: Vec<Binding>,
    pub outer: Option<&'a Scope<'a>>,
}

/// Whether identifier `ident` names `name` (unquoted identifiers ignore case).
pub(super) fn ident_is(ident: &Ident, name: &str) -> bool {
    match ident.quote_style {
        Some(_) => ident.value == name,
        None => ident.value.eq_ignore_ascii_case(name),
    }
}

impl<'a> Scope<'a> {
    /// The internal name of the column `parts` (`col` or `binding.col`) names, searched
    /// here first, then in the enclosing levels.
    pub fn resolve(&self, parts: &[Ident]) -> Result<String> {
        let written = || {
            parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join(".")
        };
        let (table, column) = match parts {
            [c] => (None, c),
            [t, c] => (Some(t), c),
            _ => return Err(SqlError::unsupported(format!("column name {}", written()))),
        };
        let mut level = Some(self);
        while let Some(scope) = level {
            let found: Vec<(&Binding, &Column)> = scope
                .bindings
                .iter()
                .filter(|b| table.is_none_or(|t| ident_is(t, &b.name)))
                .flat_map(|b| b.columns.iter().map(move |c| (b, c)))
                .filter(|(_, c)| ident_is(column, &c.name))
                .collect();
            match found.as_slice() {
                [(_, c)] => return Ok(c.internal.clone()),
                [] => level = scope.outer,
                many => {
                    let tables: Vec<&str> = many.iter().map(|(b, _)| b.name.as_str()).collect();
                    return Err(SqlError::AmbiguousColumn {
                        name: written(),
                        tables: tables.join(", "),
                    }
                    .into());
                }
            }
        }
        Err(SqlError::UnknownColumn(written()).into())
    }

    /// Whether `internal` is a column of this level (not of an enclosing one).
    pub fn has_internal(&self, internal: &str) -> bool {
        self.bindings
            .iter()
            .any(|b| b.columns.iter().any(|c| c.internal == internal))
    }
}

/// The internal names taken so far in one translation.
#[derive(Debug, Default)]
pub(super) struct Names {
    taken: HashSet<String>,
    hidden: usize,
}

impl Names {
    /// An internal name for column `column` of binding `binding`, not taken before.
    pub fn claim(&mut self, binding: &str, column: &str) -> String {
        let mut name = column.to_string();
        if self.taken.contains(&name) {
            name = format!("{binding}.{column}");
        }
        let base = name.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}#{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// A fresh name for a column the translation adds and drops (`\u{1f}` keeps it apart
    /// from any SQL name).
    pub fn hidden(&mut self, what: &str) -> String {
        self.hidden += 1;
        format!("\u{1f}{what}{}", self.hidden)
    }
}
