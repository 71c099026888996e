//! Dataframe kernels: chunks are Arrow `RecordBatch`es.
//!
//! Each module holds one family of per-chunk operations; [`ops`] is the
//! entry point the CPU device uses to run a [`ops::FrameOp`] on its inputs.

pub mod csv;
pub mod error;
pub mod expr;
pub mod groupby;
pub mod join;
#[cfg(test)]
pub(crate) mod join_matcher_tests;
pub mod keys;
pub mod map;
pub mod ops;
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
