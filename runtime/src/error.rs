//! The error type of Tessera's public API.

use tessera_kernels::{DType, KernelError};
use thiserror::Error;

/// Why an operation or a job failed. Every variant names its cause.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// Shapes that cannot be combined (broadcasting, concatenation, reshape…).
    #[error("shape mismatch: {0}")]
    Shape(String),
    /// An axis outside `-ndim..ndim`.
    #[error("axis {axis} is out of range for a {ndim}-dimensional tensor")]
    AxisOutOfRange {
        /// The axis given.
        axis: isize,
        /// The tensor's number of dimensions.
        ndim: usize,
    },
    /// A negative size or a malformed shape.
    #[error("invalid size: {0}")]
    InvalidSize(String),
    /// A reduction without an identity (`min`, `max`, `argmin`, `argmax`) over no elements,
    /// as NumPy raises.
    #[error("zero-size array to reduction operation {op}, which has no identity")]
    EmptyReduction {
        /// The reduction's NumPy name.
        op: &'static str,
    },
    /// An index outside an axis (NumPy's `IndexError`).
    #[error("index {index} is out of bounds for axis {axis} with size {size}")]
    IndexOutOfRange {
        /// The index given.
        index: i64,
        /// The axis indexed.
        axis: usize,
        /// The axis' length.
        size: usize,
    },
    /// A chunk shape that does not fit the tensor.
    #[error("invalid chunk shape: {0}")]
    InvalidChunks(String),
    /// An operation that does not accept this element type.
    #[error("unsupported dtype {dtype} for {op}")]
    UnsupportedDType {
        /// The operation.
        op: String,
        /// The rejected element type.
        dtype: DType,
    },
    /// A size whose element or byte count overflows.
    #[error("size overflows: {0}")]
    Overflow(String),
    /// An argument outside what the operation accepts.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A chunk task failed while the job ran.
    #[error("chunk {key} ({op}) failed: {cause}")]
    ChunkFailed {
        /// The chunk's key in the job's graph.
        key: u64,
        /// The chunk op's name.
        op: String,
        /// What went wrong.
        cause: KernelError,
    },
    /// A chunk was lost (from memory or disk) more often than lineage recomputation allows.
    #[error("chunk {key} ({op}) was lost {losses} times; giving up (last cause: {cause})")]
    ChunkLost {
        /// The chunk's key in the job's graph.
        key: u64,
        /// The op producing it.
        op: String,
        /// How often it was lost.
        losses: u32,
        /// Why it was lost the last time.
        cause: String,
    },
    /// A device or the storage actor kept dying and was not restarted again.
    #[error("{actor} died and was restarted {restarts} times; giving up")]
    ActorLost {
        /// Which actor (`storage`, `device0`…).
        actor: String,
        /// Restarts made before giving up.
        restarts: u32,
    },
    /// The host memory budget and the disk budget were both full: nothing more could be
    /// spilled, so the job ended rather than grow past them.
    #[error(transparent)]
    OutOfMemory(#[from] crate::OutOfMemory),
    /// A dataframe operation or its data was invalid (unknown column, type mismatch,
    /// malformed file…); the error names the file, line and column where it applies.
    #[error(transparent)]
    Frame(#[from] tessera_kernels::frame::FrameError),
    /// A SQL text could not be translated (`Session::sql`): a parse error, an unknown
    /// table or column, or a construct that is not supported.
    #[error(transparent)]
    Sql(#[from] crate::sql::SqlError),
    /// The actor system could not start, or stopped while a job ran.
    #[error("runtime: {0}")]
    Runtime(String),
    /// The session was asked to compute on GPUs (the `cuda` backend) and none can be used:
    /// the cause names what is missing (driver, device, NVRTC) or what the driver said.
    #[error("the cuda backend cannot be used: {0}")]
    GpuUnavailable(String),
    /// A cluster could not be started, reached or used (the scheduler's or worker's
    /// address and complaint are named).
    #[error("cluster: {0}")]
    Cluster(String),
    /// A performance report or trace could not be written.
    #[error("cannot write {path}: {cause}")]
    Report {
        /// The file.
        path: String,
        /// The operating system's or the encoder's complaint.
        cause: String,
    },
}

impl From<tessera_cluster::ClusterError> for Error {
    fn from(e: tessera_cluster::ClusterError) -> Self {
        Error::Cluster(e.to_string())
    }
}

impl From<tessera_cuda::UnknownBackend> for Error {
    fn from(e: tessera_cuda::UnknownBackend) -> Error {
        Error::InvalidArgument(e.0)
    }
}

impl From<tessera_dashboard::DashboardError> for Error {
    fn from(e: tessera_dashboard::DashboardError) -> Error {
        match e {
            tessera_dashboard::DashboardError::Options(why) => Error::InvalidArgument(why),
            start => Error::Runtime(start.to_string()),
        }
    }
}

impl From<KernelError> for Error {
    fn from(e: KernelError) -> Self {
        match e {
            KernelError::ShapeMismatch(m) => Error::Shape(m),
            KernelError::UnsupportedDType { op, dtype } => Error::UnsupportedDType { op, dtype },
            KernelError::SizeOverflow(m) => Error::Overflow(m),
            KernelError::Frame(e) => Error::Frame(e),
            other => Error::Runtime(other.to_string()),
        }
    }
}

/// `Result` with Tessera's [`Error`](enum@Error).
pub type Result<T, E = Error> = std::result::Result<T, E>;
