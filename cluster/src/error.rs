//! [`WireError`]: why a chunk could not be encoded, sent, fetched or decoded.

use arrow_flight::error::FlightError;
use std::time::Duration;
use tessera_proto::{EnvelopeError, TicketError};
use thiserror::Error;
use tonic::Code;

/// Why a chunk transfer failed.
#[derive(Debug, Error)]
pub enum WireError {
    /// The endpoint is not a valid URI.
    #[error("invalid Flight endpoint {endpoint:?}: {reason}")]
    InvalidEndpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No connection could be made.
    #[error("cannot connect to {endpoint}: {reason}")]
    Connect {
        /// The endpoint.
        endpoint: String,
        /// The transport's complaint.
        reason: String,
    },
    /// The transfer did not finish in time.
    #[error("chunk transfer with {endpoint} did not finish within {after:?}")]
    Timeout {
        /// The endpoint.
        endpoint: String,
        /// The limit.
        after: Duration,
    },
    /// The holder does not have the chunk (released, lost, or never computed there).
    #[error("chunk not found: {0}")]
    NotFound(String),
    /// The holder's storage dropped the chunk from memory, computing it again costing less
    /// than a spill (see `RunTask.droppable`): the reader reports it dropped, not lost.
    #[error("chunk dropped by its holder, to be computed again: {0}")]
    Dropped(String),
    /// The peer refused the request as invalid (a malformed or oversized ticket, a
    /// malformed chunk stream, an unknown compression).
    #[error("request refused as invalid: {0}")]
    InvalidRequest(String),
    /// The peer speaks another protocol version.
    #[error("protocol version mismatch: {0}")]
    VersionMismatch(String),
    /// A gRPC message was over a size limit (ours or the peer's).
    #[error("message over the size limit: {0}")]
    MessageTooLarge(String),
    /// The chunk's messages added up to more than the receiver accepts.
    #[error("chunk is over the {max}-byte limit of this receiver")]
    ChunkTooLarge {
        /// The limit in bytes.
        max: usize,
    },
    /// The peer answered with another gRPC error (or the connection broke).
    #[error("Flight call failed ({code:?}): {message}")]
    Status {
        /// The gRPC status code.
        code: Code,
        /// The status message.
        message: String,
    },
    /// The stream is not a well-formed chunk.
    #[error("malformed chunk stream: {0}")]
    Malformed(String),
    /// Arrow could not encode or decode a batch.
    #[error("Arrow IPC: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// A tensor's values do not fit its shape.
    #[error("bad tensor in chunk stream: {0}")]
    Tensor(#[from] tessera_kernels::KernelError),
    /// The chunk header could not be encoded or decoded.
    #[error("chunk header: {0}")]
    Header(#[from] EnvelopeError),
    /// A ticket could not be decoded.
    #[error(transparent)]
    Ticket(#[from] TicketError),
}

impl WireError {
    /// The error a gRPC status stands for.
    pub fn from_status(status: &tonic::Status) -> WireError {
        let message = status.message().to_string();
        match status.code() {
            Code::NotFound => WireError::NotFound(message),
            Code::Aborted => WireError::Dropped(message),
            Code::InvalidArgument => WireError::InvalidRequest(message),
            Code::FailedPrecondition => WireError::VersionMismatch(message),
            Code::OutOfRange | Code::ResourceExhausted
                if message.contains("message length too large") =>
            {
                WireError::MessageTooLarge(message)
            }
            code => WireError::Status { code, message },
        }
    }

    /// The error a Flight stream error stands for (a status, a decoding error, or a
    /// [`WireError`] raised inside the stream).
    pub fn from_flight(error: FlightError) -> WireError {
        match error {
            FlightError::Arrow(e) => WireError::Arrow(e),
            FlightError::Tonic(status) => WireError::from_status(&status),
            FlightError::ExternalError(e) => match e.downcast::<WireError>() {
                Ok(wire) => *wire,
                Err(other) => match other.downcast::<tonic::Status>() {
                    Ok(status) => WireError::from_status(&status),
                    Err(other) => WireError::Malformed(other.to_string()),
                },
            },
            other => WireError::Malformed(other.to_string()),
        }
    }

    /// The gRPC status a server answers with for this error.
    pub fn to_status(&self) -> tonic::Status {
        // The variants a client makes of a status carry the status's text: send that
        // text alone, so it is not prefixed twice.
        let message = match self {
            WireError::NotFound(m)
            | WireError::Dropped(m)
            | WireError::InvalidRequest(m)
            | WireError::VersionMismatch(m)
            | WireError::MessageTooLarge(m) => m.clone(),
            other => other.to_string(),
        };
        match self {
            WireError::NotFound(_) => tonic::Status::not_found(message),
            WireError::Dropped(_) => tonic::Status::aborted(message),
            WireError::Ticket(TicketError::WrongVersion { .. }) | WireError::VersionMismatch(_) => {
                tonic::Status::failed_precondition(message)
            }
            WireError::Ticket(_)
            | WireError::InvalidRequest(_)
            | WireError::Malformed(_)
            | WireError::Header(_)
            | WireError::Tensor(_)
            | WireError::Arrow(_) => tonic::Status::invalid_argument(message),
            WireError::ChunkTooLarge { .. } | WireError::MessageTooLarge(_) => {
                tonic::Status::resource_exhausted(message)
            }
            WireError::Timeout { .. } => tonic::Status::deadline_exceeded(message),
            WireError::Status { code, .. } => tonic::Status::new(*code, message),
            WireError::InvalidEndpoint { .. } | WireError::Connect { .. } => {
                tonic::Status::unavailable(message)
            }
        }
    }
}

/// Why a scheduler, worker or cluster client could not do its part.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// No connection to the scheduler could be made.
    #[error("cannot reach the scheduler at {address}: {reason}")]
    Unreachable {
        /// The scheduler's address as given.
        address: String,
        /// The transport's complaint.
        reason: String,
    },
    /// The scheduler refused this worker (another protocol version, no threads).
    #[error("the scheduler at {address} refused this worker: {reason}")]
    Refused {
        /// The scheduler's address.
        address: String,
        /// The scheduler's reason.
        reason: String,
    },
    /// The scheduler answered a request with an error.
    #[error("the scheduler at {address} answered {code:?}: {message}")]
    Scheduler {
        /// The scheduler's address.
        address: String,
        /// The gRPC status code.
        code: Code,
        /// The status message.
        message: String,
    },
    /// The connection to the scheduler was lost.
    #[error("lost the scheduler at {address}: {reason}")]
    SchedulerLost {
        /// The scheduler's address.
        address: String,
        /// What happened.
        reason: String,
    },
    /// The worker's resident memory grew by more than 1.5× its memory limit: it stops (and
    /// its nanny, if it has one, starts it again).
    #[error("resident memory grew by more than 1.5x the memory limit of {limit} bytes since the worker started: stopping")]
    ResidentMemoryExhausted {
        /// The worker's memory limit.
        limit: u64,
    },
    /// The GPUs a worker was asked to run on cannot be used (no driver, no such device,
    /// no NVRTC): the cause.
    #[error("the worker's GPUs cannot be used: {0}")]
    GpuUnavailable(String),
    /// The local actor system (a worker's devices and storage) failed.
    #[error("the worker's actor system: {0}")]
    Actors(String),
    /// A socket could not be opened or an async runtime started.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// A message's payload could not be encoded or decoded.
    #[error("payload: {0}")]
    Payload(#[from] EnvelopeError),
    /// Serving failed.
    #[error("serving: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The scheduler's dashboard could not start.
    #[error("the scheduler's dashboard: {0}")]
    Dashboard(String),
    /// A chunk transfer failed.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// A job's graph, with the data it carries (arrays and tables made in the client),
    /// is over the control plane's message limit.
    #[error(
        "the job's graph is {bytes} bytes, over the {limit}-byte limit of a cluster job: \
         data made in this process travels inside the graph; read large inputs on the \
         workers instead (read_csv, read_parquet, random generators), or persist them in \
         pieces"
    )]
    GraphTooLarge {
        /// The encoded graph's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The shared secret is missing where one is needed, unreadable or unfit.
    #[error("shared secret: {0}")]
    BadSecret(String),
}
