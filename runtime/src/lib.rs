//! Tessera: NumPy-style tensors cut into chunks and computed in parallel by an actor
//! system (Supervisor, GraphPlanner, DeviceActor, StorageActor).
//!
//! ```no_run
//! use tessera::{tensor, DType, Session};
//! # fn main() -> tessera::Result<()> {
//! let session = Session::local()?;
//! let n = 10_000_000;
//! let rng = tensor::random::default_rng(7);
//! let data = rng.uniform(-1.0, 1.0, &[n, 2]);
//! let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
//! let pi = (inside.astype(DType::F64) * 4.0 / n as f64).execute(&session)?;
//! println!("{:?}", pi.item());
//! # Ok(())
//! # }
//! ```
//!
//! Building a tensor is lazy and checks shapes and dtypes at once; `execute` tiles the
//! graph into chunk tasks — fusing elementwise chains and the reductions at their end into
//! one kernel per chunk that streams through cache — and runs them on every core.
//!
//! A session holds chunks within a host memory budget ([`SessionBuilder::memory_budget`]),
//! spilling to a private disk folder beyond it and holding new work back when nothing can
//! spill; failed chunk tasks are retried, dead actors restarted, and lost chunks computed
//! again from lineage. [`FaultInjector`] drills all of it. Persisted tensors and frames
//! (`persist`) keep their chunks in the session's storage under the same budget, and are
//! computed again from their expression if storage loses them.
//!
//! To see what jobs did, [`Session::performance_report`] and [`Session::trace`] write the
//! recorded task streams as an HTML report or a Chrome trace; to watch them run,
//! [`SessionBuilder::dashboard`] serves a live page and Prometheus `/metrics`.

mod accelerator;
mod assemble;
mod backend;
mod cluster;
pub mod dataframe;
mod eager;
mod error;
mod kept;
pub mod learn;
pub mod linalg;
#[cfg(feature = "dashboard")]
mod live;
mod plan;
mod progress;
pub mod reference;
mod report;
mod session;
pub mod sql;
pub mod tensor;

pub use accelerator::{DeviceBackend, UnknownBackend, BACKEND_VAR};
pub use cluster::{Launcher, LocalCluster, LocalClusterBuilder};
pub use error::{Error, Result};
pub use progress::Progress;
pub use report::{Recording, ReportFormat};
pub use session::{
    Session, SessionBuilder, SessionConfig, DEFAULT_CHUNK_BYTES, DEFAULT_GPU_CHUNK_BYTES,
};
pub use tensor::{Slice, Tensor};
pub use tessera_actors::{keep_freed_memory, KEEP_FREED_MS};
pub use tessera_actors::{
    FaultInjector, FaultKind, FaultPoint, JobStats, MemoryReading, OpSummary, OutOfMemory,
    StorageEvent, StorageEventKind, StorageStats, TaskRecord, TaskStream,
};
pub use tessera_cluster::{ClusterInfo, WorkerInfo};
pub use tessera_dashboard::fmt_bytes;
pub use tessera_dashboard::DashboardOptions;
pub use tessera_kernels::{
    Complex, DType, Element, HostTensor, KernelError, ReduceOp, Scalar, C128, C64,
};
