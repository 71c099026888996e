//! Tessera's dataframe kernels: chunks are Arrow `RecordBatch`es.
//!
//! Each module holds one family of per-chunk operations: reading CSV and Parquet, the
//! expression language and its types, maps and filters, groupby partials, joins, hash
//! partitions, sorts. The chunk op that runs them on a device's inputs is
//! `tessera_kernels::frame::ops::FrameOp`. This crate knows nothing of chunks of other
//! kinds, devices or actors.

pub mod csv;
pub mod error;
pub mod expr;
pub mod groupby;
pub mod join;
#[cfg(test)]
pub(crate) mod join_matcher_tests;
pub mod keys;
pub mod map;
pub mod parquet;
pub mod partition;
pub mod schema;
pub mod sort;
pub mod table;
#[cfg(test)]
mod test_rng;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use error::{FrameError, FrameResult};
