//! Tessera's cluster client and data plane (docs/guide/cluster.md): what a session needs
//! to run jobs on a cluster, and what the scheduler and workers (crate `tessera-server`)
//! share with it. No actor system and no web server are linked here.
//!
//! - [`auth`]: the shared secret every call carries off loopback.
//! - [`wire`]: a [`tessera_kernels::ChunkData`] as Flight messages (Arrow IPC) and back,
//!   bit-exact for every kind of chunk and dtype, optionally LZ4- or ZSTD-compressed.
//! - [`server`]: a worker's Flight service (`do_get` of the chunks it holds) over the
//!   [`ChunkSource`] / [`ChunkSink`] traits.
//! - [`client`]: [`fetch_chunk`] / [`put_chunk`] and a reusable [`ChunkClient`], with
//!   timeouts so that nothing hangs.
//! - [`connect`]: a client's [`ClusterClient`], which runs graphs on the scheduler and
//!   gathers outputs from the workers, and the scheduler's gRPC channel.
//! - [`convert`]: a job's errors and progress as control-plane messages and back.

pub mod auth;
pub mod client;
pub mod connect;
pub mod convert;
pub mod error;
pub mod server;
pub mod wire;

pub use auth::{Secret, SECRET_ENV};
pub use client::{fetch_chunk, put_chunk, ChunkClient, ClientConfig, Connections};
pub use connect::{ClusterClient, ClusterInfo, WorkerInfo};
pub use error::{ClusterError, WireError};
pub use server::{serve, ChunkFlightService, ChunkSink, ChunkSource, ServerConfig, SourceError};
pub use tessera_proto::{DEFAULT_HEARTBEAT_TTL, DEFAULT_NO_WORKER_GRACE};
pub use wire::{decode_chunk, decode_chunks, encode_chunk, Compression, WireOptions};
