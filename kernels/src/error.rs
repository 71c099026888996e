//! Errors raised by chunk kernels.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a chunk kernel could not produce its output. Serializable, so that a cluster
/// worker's error reaches the client with its type.
#[derive(Debug, Error, Clone, PartialEq, Serialize, Deserialize)]
pub enum KernelError {
    /// Shapes that do not fit together.
    #[error("shape mismatch: {0}")]
    ShapeMismatch(String),
    /// An operation that does not accept this element type.
    #[error("unsupported dtype {dtype} for {op}")]
    UnsupportedDType {
        /// The operation.
        op: String,
        /// The rejected element type.
        dtype: crate::DType,
    },
    /// A size whose element or byte count does not fit in memory addressing.
    #[error("size overflows: {0}")]
    SizeOverflow(String),
    /// A kernel was handed inputs that do not match its description.
    #[error("bad kernel input: {0}")]
    BadInput(String),
    /// A value the operation cannot compute with (e.g. integer to a negative power).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// The kernel panicked; the message is the panic payload.
    #[error("kernel panicked: {0}")]
    Panicked(String),
    /// The operation needs a device that is not available.
    #[error("device unavailable: {0}")]
    DeviceUnavailable(String),
    /// A dataframe kernel failed (bad input data, unknown columns, I/O).
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    /// Generated device code was rejected by the device compiler (NVRTC's log): a bug in the
    /// code generator, which running again would repeat.
    #[error("device code did not compile: {0}")]
    DeviceCompile(String),
    /// A fault injected on purpose (see `tessera_actors::FaultInjector`).
    #[error("injected fault: {0}")]
    Injected(String),
    /// The task failed on another process (a cluster worker), which reported this.
    #[error("on worker {worker}: {message}")]
    Remote {
        /// The worker that ran the task.
        worker: String,
        /// Its error, as text.
        message: String,
        /// Whether running the task again may succeed.
        retryable: bool,
    },
}

impl KernelError {
    /// True for failures that running the same task again may not repeat (a panic, a lost
    /// device, an injected fault); false for errors the inputs determine (bad shapes or
    /// values), which would fail again.
    pub fn is_retryable(&self) -> bool {
        match self {
            KernelError::Remote { retryable, .. } => *retryable,
            other => matches!(
                other,
                KernelError::Panicked(_)
                    | KernelError::DeviceUnavailable(_)
                    | KernelError::Injected(_)
            ),
        }
    }
}
