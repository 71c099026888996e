//! Stacking frames (pandas' `concat`): columns matched by name, missing ones filled with
//! nulls, and numeric columns of different types stacked under a common type.

use super::node::{FrameKind, FrameNode};
use super::{col, lit, DataFrame, Expr, FrameError, Literal};
use crate::error::{Error, Result};
use arrow::datatypes::DataType;

/// Stacks frames in order (pandas' `concat`, `join="outer"`). Columns are matched by name
/// and ordered as they first appear; a frame without a column contributes nulls to it.
/// A column whose frames disagree on its type takes a common type, as pandas does for
/// numbers: integers of different types become `Int64` (`Float64` if one is `UInt64`), and
/// integers with floats, or two float widths, become `Float64`; an all-null column takes
/// the other side's type. Any other disagreement
/// (a string against a number, a boolean against a number) is a `TypeMismatch` naming the
/// column and both types.
pub fn concat(frames: &[DataFrame]) -> DataFrame {
    DataFrame::build(|| {
        let nodes = frames
            .iter()
            .map(|f| f.node().cloned())
            .collect::<Result<Vec<_>>>()?;
        if nodes.is_empty() {
            return Err(
                FrameError::InvalidArgument("concat needs at least one frame".into()).into(),
            );
        }
        // The union of the columns, in order of first appearance, with their common types.
        let mut columns: Vec<(String, DataType)> = Vec::new();
        for node in &nodes {
            for field in node.schema.fields() {
                let t = field.data_type();
                match columns.iter_mut().find(|(n, _)| n == field.name()) {
                    Some((name, have)) => {
                        *have = common_type(have, t).ok_or_else(|| {
                            Error::Frame(FrameError::TypeMismatch(format!(
                                "concat: column {name:?} is {have} in one frame and {t} in another"
                            )))
                        })?;
                    }
                    None => columns.push((field.name().clone(), t.clone())),
                }
            }
        }
        let aligned = frames
            .iter()
            .zip(&nodes)
            .map(|(frame, node)| {
                let same = node.schema.fields().len() == columns.len()
                    && node
                        .schema
                        .fields()
                        .iter()
                        .zip(&columns)
                        .all(|(f, (n, t))| f.name() == n && f.data_type() == t);
                if same {
                    return frame.node().cloned();
                }
                let exprs: Vec<Expr> = columns
                    .iter()
                    .map(|(name, t)| match node.schema.field_with_name(name) {
                        Ok(f) if f.data_type() == t => col(name),
                        Ok(_) => col(name).cast(t.clone()).alias(name),
                        Err(_) => lit(Literal::Null).cast(t.clone()).alias(name),
                    })
                    .collect();
                frame.select_exprs(exprs).node().cloned()
            })
            .collect::<Result<Vec<_>>>()?;
        let schema = aligned[0].schema.clone();
        Ok(FrameNode::new(schema, FrameKind::Concat(aligned)))
    })
}

/// The type two columns of `a` and `b` stack under, if any.
fn common_type(a: &DataType, b: &DataType) -> Option<DataType> {
    match (a, b) {
        _ if a == b => return Some(a.clone()),
        (DataType::Null, t) | (t, DataType::Null) => return Some(t.clone()),
        _ => {}
    }
    let numeric = |t: &DataType| t.is_integer() || t.is_floating();
    if !numeric(a) || !numeric(b) {
        return None;
    }
    let needs_float = |t: &DataType| t.is_floating() || *t == DataType::UInt64;
    Some(if needs_float(a) || needs_float(b) {
        DataType::Float64
    } else {
        DataType::Int64
    })
}

#[cfg(test)]
mod tests {
    use super::common_type;
    use arrow::datatypes::DataType::*;

    #[test]
    fn common_types_follow_pandas_for_numbers_and_refuse_the_rest() {
        assert_eq!(common_type(&Int32, &Int32), Some(Int32));
        assert_eq!(common_type(&Int32, &Int64), Some(Int64));
        assert_eq!(common_type(&UInt8, &Int16), Some(Int64));
        assert_eq!(common_type(&UInt64, &Int64), Some(Float64));
        assert_eq!(common_type(&Int64, &Float32), Some(Float64));
        assert_eq!(common_type(&Float32, &Float64), Some(Float64));
        assert_eq!(common_type(&Utf8, &Int64), None);
        assert_eq!(common_type(&Boolean, &Int64), None);
        assert_eq!(common_type(&Null, &Utf8), Some(Utf8));
    }
}
