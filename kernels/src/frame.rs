//! Dataframe kernels: the `tessera-frame` crate, re-exported, and the chunk op that runs
//! them on a device's inputs ([`ops::FrameOp`]).

pub mod ops;

pub use tessera_frame::*;
