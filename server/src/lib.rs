//! Tessera's cluster servers: the scheduler and the worker agent, and the programs
//! `tessera-scheduler` and `tessera-worker` that wrap them (docs/guide/cluster.md).
//!
//! - [`scheduler`]: the scheduler's gRPC services over the planner's state machine
//!   (`tessera_core::PlannerState`), with the table of which worker holds which chunk
//!   ([`serve_scheduler`]), and its dashboard and metrics.
//! - [`worker`]: the worker agent: its storage (an actor system's), registration,
//!   heartbeats, tasks run with inputs fetched from peers ([`run_worker`]).
//!
//! - [`cli`]: the two programs' command lines, shared by the programs and the Python
//!   package's commands.
//!
//! What clients share with them (auth, the Flight data plane, the wire formats) is the
//! `tessera-cluster` crate's.

pub mod cli;
pub mod scheduler;
pub mod worker;

pub use scheduler::{serve_scheduler, SchedulerConfig, WebListeners};
pub use worker::{run_worker, GpuChoice, WorkerConfig};
