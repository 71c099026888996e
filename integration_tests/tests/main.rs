//! End-to-end tests of Tessera through its public API: every result is checked against a
//! plain Rust reference computation (see `common::Arr`), against itself under other
//! chunkings, or against the sequential reference executor.

mod common;

mod budgets;
mod chunking;
mod creation;
mod dataframes;
mod elementwise;
mod errors;
mod faults;
mod frame_semantics;
mod linalg;
mod numpy_ops;
mod random;
mod recovery;
mod reductions;
mod sessions;
mod shape_ops;
