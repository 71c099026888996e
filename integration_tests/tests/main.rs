//! End-to-end tests of Tessera through its public API: every result is checked against a
//! plain Rust reference computation (see `common::Arr`), against itself under other
//! chunkings, or against the sequential reference executor.

mod common;
mod complex_dtypes;

mod array_ops;
mod budgets;
mod categorical;
mod chunking;
mod cluster;
mod cluster_drills;
mod creation;
mod dashboard;
mod dataframes;
mod elementwise;
mod empty;
mod errors;
mod faults;
mod fft;
mod frame_handover;
mod frame_semantics;
mod gpu_backend;
mod hashed_joins;
mod int_dtypes;
mod learn;
mod learn_estimators;
mod linalg;
mod numpy_ops;
mod persist;
mod random;
mod recovery;
mod reductions;
mod reports;
mod semijoin;
mod series;
mod sessions;
mod shape_ops;
mod shuffle;
mod sorting;
