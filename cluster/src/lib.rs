//! Tessera's distributed mode (docs/guide/cluster.md): one scheduler, many
//! workers, any number of clients.
//!
//! - [`auth`]: the shared secret every call carries off loopback.
//! - [`wire`]: a [`tessera_kernels::ChunkData`] as Flight messages (Arrow IPC) and back,
//!   bit-exact for every kind of chunk and dtype, optionally LZ4- or ZSTD-compressed.
//! - [`server`]: a worker's Flight service (`do_get` of the chunks it holds) over the
//!   [`ChunkSource`] / [`ChunkSink`] traits.
//! - [`client`]: [`fetch_chunk`] / [`put_chunk`] and a reusable [`ChunkClient`], with
//!   timeouts so that nothing hangs.
//! - [`scheduler`]: the scheduler's gRPC services over the actors' planner state, with
//!   the table of which worker holds which chunk ([`serve_scheduler`]).
//! - [`worker`]: the worker agent: its own actor system, registration, heartbeats, tasks
//!   run with inputs fetched from peers ([`run_worker`]).
//! - [`connect`]: a client's [`ClusterClient`], which runs graphs on the scheduler and
//!   gathers outputs from the workers.
//!
//! The binaries `tessera-scheduler` and `tessera-worker` wrap [`serve_scheduler`] and
//! [`run_worker`].

pub mod auth;
pub mod client;
pub mod connect;
pub mod error;
pub mod scheduler;
pub mod server;
pub mod wire;
pub mod worker;

pub use auth::{Secret, SECRET_ENV};
pub use client::{fetch_chunk, put_chunk, ChunkClient, ClientConfig, Connections};
pub use connect::{ClusterClient, ClusterInfo, WorkerInfo};
pub use error::{ClusterError, WireError};
pub use scheduler::{serve_scheduler, SchedulerConfig, WebListeners};
pub use server::{serve, ChunkFlightService, ChunkSink, ChunkSource, ServerConfig, SourceError};
pub use wire::{decode_chunk, decode_chunks, encode_chunk, Compression, WireOptions};
pub use worker::{run_worker, WorkerConfig};
