//! Tessera's distributed mode, the data plane (docs/DISTRIBUTED.md, steps 2 and 3 of
//! issue 14): chunks move between workers and clients over Arrow Flight.
//!
//! - [`wire`]: a [`tessera_kernels::ChunkData`] as Flight messages (Arrow IPC) and back,
//!   bit-exact for every kind of chunk and dtype, optionally LZ4- or ZSTD-compressed.
//! - [`server`]: a worker's Flight service (`do_get` of the chunks it holds, `do_put` of a
//!   client's literals) over the [`ChunkSource`] / [`ChunkSink`] traits the actors side
//!   implements.
//! - [`client`]: [`fetch_chunk`] / [`put_chunk`] and a reusable [`ChunkClient`], with
//!   timeouts so that nothing hangs.
//!
//! Nothing here runs multi-process yet: the control plane, the worker agent and the
//! binaries are later steps.

pub mod client;
pub mod error;
pub mod server;
pub mod wire;

pub use client::{fetch_chunk, put_chunk, ChunkClient, ClientConfig};
pub use error::WireError;
pub use server::{serve, ChunkFlightService, ChunkSink, ChunkSource, ServerConfig, SourceError};
pub use wire::{decode_chunk, encode_chunk, Compression, WireOptions};
