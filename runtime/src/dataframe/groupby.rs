//! `groupby(...).agg(...)`: the builder of grouped aggregations.

use super::node::{FrameKind, FrameNode};
use super::{Agg, DataFrame, Expr};
use std::sync::Arc;
use tessera_kernels::frame::expr::Expr as E;
use tessera_kernels::frame::groupby::{AggFunc, AggSpec, GroupBySpec};

/// Rows grouped by keys, waiting for aggregations (pandas' `DataFrameGroupBy`).
///
/// Rows with a null key are dropped (pandas' `dropna=True`). Result columns: the keys, in
/// the order given, then one column per aggregation in the order given. A column with one
/// aggregation keeps its name (pandas' `agg({"v1": "sum"})`); a column with several gets
/// one column per function, named `{column}_{function}` (`rating_sum`, `rating_mean`…),
/// where pandas would build a two-level header. Rows come sorted by the keys, as in
/// pandas, unless [`GroupBy::sort`] is given `false` (then their order is unspecified and
/// the job skips the sort).
#[derive(Clone, Debug)]
pub struct GroupBy {
    frame: DataFrame,
    keys: Vec<Expr>,
    sort: bool,
}

impl GroupBy {
    pub(super) fn new(frame: DataFrame, keys: Vec<Expr>) -> GroupBy {
        GroupBy {
            frame,
            keys,
            sort: true,
        }
    }

    /// Whether to sort the result by the keys (default true, as pandas).
    pub fn sort(mut self, sort: bool) -> GroupBy {
        self.sort = sort;
        self
    }

    /// Aggregates `(column, functions)` pairs (see the type's docs for the names).
    pub fn agg(&self, aggs: &[(&str, &[Agg])]) -> DataFrame {
        let specs = aggs
            .iter()
            .flat_map(|(column, funcs)| {
                funcs.iter().map(move |f| AggSpec {
                    column: column.to_string(),
                    func: *f,
                    output: if funcs.len() == 1 {
                        column.to_string()
                    } else {
                        format!("{column}_{}", f.name())
                    },
                })
            })
            .collect();
        self.agg_named(specs)
    }

    /// pandas' named aggregation (`agg(total=("x", "sum"))`): `(output, column, function)`
    /// triples, the outputs in this order after the keys.
    pub fn agg_as(&self, aggs: &[(&str, &str, Agg)]) -> DataFrame {
        self.agg_named(
            aggs.iter()
                .map(|(output, column, func)| AggSpec {
                    column: column.to_string(),
                    func: *func,
                    output: output.to_string(),
                })
                .collect(),
        )
    }

    /// Aggregations with explicit output names.
    pub fn agg_named(&self, aggs: Vec<AggSpec>) -> DataFrame {
        let keys = self.keys.clone();
        let sort = self.sort;
        // Computed keys become columns first.
        let mut frame = self.frame.clone();
        let mut names = Vec::with_capacity(keys.len());
        for k in keys {
            match k {
                E::Column(name) => names.push(name),
                other => {
                    let name = other.output_name();
                    frame = frame.with_column(&name, other);
                    names.push(name);
                }
            }
        }
        frame.derive(|node| {
            let spec = GroupBySpec { keys: names, aggs };
            let schema = spec.output_schema(&node.schema)?;
            Ok(FrameNode::new(
                Arc::new(schema),
                FrameKind::GroupBy {
                    input: node.clone(),
                    spec,
                    sort,
                },
            ))
        })
    }

    /// `func` over every column that is not a key (numeric ones for sum, mean, std, var).
    fn each(&self, func: AggFunc) -> DataFrame {
        let key_names: Vec<String> = self.keys.iter().map(E::output_name).collect();
        let aggs = self.frame.schema().map(|schema| {
            schema
                .fields()
                .iter()
                .filter(|f| !key_names.contains(f.name()))
                .filter(|f| {
                    !matches!(
                        func,
                        AggFunc::Sum | AggFunc::Mean | AggFunc::Std | AggFunc::Var
                    ) || tessera_kernels::frame::schema::is_numeric(f.data_type())
                })
                .map(|f| AggSpec {
                    column: f.name().clone(),
                    func,
                    output: f.name().clone(),
                })
                .collect::<Vec<_>>()
        });
        match aggs {
            Ok(aggs) => self.agg_named(aggs),
            Err(e) => DataFrame::failed(e),
        }
    }

    /// The sum of every numeric non-key column per group.
    pub fn sum(&self) -> DataFrame {
        self.each(AggFunc::Sum)
    }

    /// The mean of every numeric non-key column per group.
    pub fn mean(&self) -> DataFrame {
        self.each(AggFunc::Mean)
    }

    /// The minimum of every non-key column per group.
    pub fn min(&self) -> DataFrame {
        self.each(AggFunc::Min)
    }

    /// The maximum of every non-key column per group.
    pub fn max(&self) -> DataFrame {
        self.each(AggFunc::Max)
    }

    /// The non-null count of every non-key column per group.
    pub fn count(&self) -> DataFrame {
        self.each(AggFunc::Count)
    }

    /// Rows per group, in a column `size`.
    pub fn size(&self) -> DataFrame {
        self.agg_named(vec![AggSpec {
            column: String::new(),
            func: AggFunc::Size,
            output: "size".into(),
        }])
    }
}
