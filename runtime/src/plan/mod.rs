//! Tiling: a pure function from the lazy tensor graph to a [`ChunkGraph`].
//!
//! Elementwise operations, views (slices, transposes, broadcasts) and trailing-axis
//! reductions are fused into one kernel per output chunk ([`fuse`]); reductions become a
//! fused partial per input chunk plus a tree of combines; reshapes and concatenations
//! materialize their inputs ([`tile`]); scans, sorts, gathers, membership tests and
//! nearest neighbours are array ops per chunk ([`array`]).

mod array;
pub(crate) mod fuse;
pub(crate) mod grid;
mod linalg;
pub(crate) mod tile;

pub(crate) use array::{cluster_graph, logistic_graph, nearest_graph, unique_graph};
pub(crate) use tile::{tile, TileSettings, Tiled};
