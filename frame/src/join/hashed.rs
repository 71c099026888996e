//! A join side hashed once and probed by many tasks: the small side of a broadcast join,
//! shared by the tasks of every chunk of the other side instead of hashed again in each.

use super::matching::Index;
use super::tables::Tables;
use super::{check_rows, names_to_indices, JoinHow, JoinSpec, Plan, Side};
use crate::error::FrameResult;
use crate::table::{batch_bytes, ipc_one};
use arrow::array::Array;
use arrow::datatypes::{DataType, Schema};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// One side of a join as one table, hashed on its key columns. Cloning shares the table
/// and the hash index. Its serde form is the table and the key names: the index is built
/// again where it is read back.
#[derive(Clone)]
pub struct HashedSide {
    table: RecordBatch,
    on: Vec<String>,
    index: Arc<Index>,
}

/// Which side of a join a [`HashedSide`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hashed {
    Left,
    Right,
}

impl HashedSide {
    /// `tables` (at least one, all of one schema) as one table, hashed on the columns `on`.
    ///
    /// ColumnNotFound for a key not in the tables; InvalidArgument for no table, no key, or
    /// more rows than a join side may have (`u32::MAX`).
    pub fn new(tables: &[RecordBatch], on: Vec<String>) -> FrameResult<HashedSide> {
        let table = Tables::new(tables)?.concat()?;
        check_rows("hashed", table.num_rows())?;
        let side = Side {
            keys: names_to_indices(table.schema_ref(), &on)?
                .into_iter()
                .map(|i| Arc::clone(table.column(i)))
                .collect(),
            rows: table.num_rows(),
            unmatchable: None,
        };
        let (index, _) = Index::build(&side)?;
        Ok(HashedSide {
            table,
            on,
            index: Arc::new(index),
        })
    }

    /// The side's rows.
    pub fn table(&self) -> &RecordBatch {
        &self.table
    }

    /// The key columns it is hashed on.
    pub fn on(&self) -> &[String] {
        &self.on
    }

    /// Bytes held: the table's, and the index's (about).
    pub fn nbytes(&self) -> usize {
        batch_bytes(&self.table) + self.index.bytes(self.on.len())
    }

    /// The index, where a join of `plan` with this side as its `side` can probe it: an
    /// inner join with either side hashed, a left, semi, anti or mark join with its right
    /// side hashed, on the keys it is hashed on, none of them cast for the other side's
    /// keys (a UInt64 key paired with a signed one; see `Side::push`). `None` otherwise:
    /// the join hashes the table again, as any other.
    pub(super) fn index_for(
        &self,
        spec: &JoinSpec,
        plan: &Plan,
        side: Hashed,
        other: &Schema,
    ) -> Option<&Index> {
        let (on, keys, other_keys) = match (side, spec.how) {
            (Hashed::Left, JoinHow::Inner) => (&spec.left_on, &plan.left_keys, &plan.right_keys),
            (
                Hashed::Right,
                JoinHow::Inner
                | JoinHow::Left
                | JoinHow::LeftSemi
                | JoinHow::LeftAnti
                | JoinHow::LeftMark,
            ) => (&spec.right_on, &plan.right_keys, &plan.left_keys),
            _ => return None,
        };
        let cast = keys.iter().zip(other_keys).any(|(&i, &j)| {
            *self.table.column(i).data_type() == DataType::UInt64
                && other.field(j).data_type().is_signed_integer()
        });
        (*on == self.on && !cast).then_some(self.index.as_ref())
    }
}

impl PartialEq for HashedSide {
    fn eq(&self, other: &Self) -> bool {
        self.on == other.on && self.table == other.table
    }
}

impl fmt::Debug for HashedSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashedSide")
            .field("rows", &self.table.num_rows())
            .field("on", &self.on)
            .finish()
    }
}

/// The serde form of a [`HashedSide`].
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(with = "ipc_one")]
    table: RecordBatch,
    on: Vec<String>,
}

impl Serialize for HashedSide {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let stored = Stored {
            table: self.table.clone(),
            on: self.on.clone(),
        };
        stored.serialize(s)
    }
}

impl<'de> Deserialize<'de> for HashedSide {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HashedSide, D::Error> {
        let Stored { table, on } = Stored::deserialize(d)?;
        HashedSide::new(std::slice::from_ref(&table), on).map_err(serde::de::Error::custom)
    }
}
