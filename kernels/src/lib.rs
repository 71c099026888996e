//! Tessera's chunk-level data types and kernels.
//!
//! A chunk is one block of a tensor (a [`HostTensor`]) or a partial reduction
//! ([`Partial`]). A [`ChunkOp`] says how to compute one chunk from its inputs; the
//! CPU implementations live in [`cpu`] (arrays) and [`frame`] (dataframes); the CUDA
//! device, loaded at run time, is the `tessera-cuda` crate.
//! This crate knows nothing of actors, graphs or users.

pub mod array;
pub mod chunk;
pub mod complex;
pub mod cpu;
pub mod dtype;
pub mod error;
pub mod expr;
pub mod frame;
pub mod linalg;
pub mod spill;
pub mod tensor;

pub use array::{ArrayOp, ScanOp};
pub use chunk::{ChunkData, ChunkOp, Partial};
pub use complex::{Complex, C128, C64};
pub use dtype::{DType, Scalar};
pub use error::KernelError;
pub use expr::{
    AxisMap, BinaryOp, ChunkReduce, CombineSpec, Distribution, FlatMap, FusedKernel, Instr,
    InstrKind, LeafSource, ReduceOp, ReshapeSpec, SourceChunk, UnaryOp,
};
pub use linalg::{InputRef, LinalgOp, MatOperand};
pub use tensor::{c_strides, checked_numel, Buffer, Element, HostTensor};
