//! Tessera's errors as Python exceptions.
//!
//! The exception classes live in `tessera/errors.py` (each derives from
//! `tessera.TesseraError` and the standard exception a NumPy or pandas user expects); this
//! module picks the class for an [`Error`] and raises it with the error's message.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use tessera::dataframe::FrameError;
use tessera::{Error, KernelError};

/// The name, in `tessera.errors`, of the class raised for `err`.
fn class_of(err: &Error) -> &'static str {
    match err {
        Error::Shape(_)
        | Error::InvalidSize(_)
        | Error::InvalidChunks(_)
        | Error::InvalidArgument(_)
        | Error::EmptyReduction { .. }
        | Error::Overflow(_) => "TesseraValueError",
        Error::AxisOutOfRange { .. } => "TesseraAxisError",
        Error::IndexOutOfRange { .. } => "TesseraIndexError",
        Error::UnsupportedDType { .. } => "TesseraTypeError",
        Error::OutOfMemory(_) => "TesseraMemoryError",
        Error::Frame(e) => class_of_frame(e),
        Error::ChunkFailed { cause, .. } => class_of_kernel(cause),
        Error::Cluster(_) => "ClusterError",
        Error::Sql(_) => "SqlError",
        Error::Report { .. } => "TesseraOSError",
        Error::ChunkLost { .. }
        | Error::ActorLost { .. }
        | Error::Runtime(_)
        | Error::GpuUnavailable(_) => "ComputeError",
    }
}

/// The class for a chunk task's failure: its cause's kind where it has one.
fn class_of_kernel(cause: &KernelError) -> &'static str {
    match cause {
        KernelError::Frame(e) => class_of_frame(e),
        KernelError::ShapeMismatch(_)
        | KernelError::InvalidValue(_)
        | KernelError::BadInput(_)
        | KernelError::SizeOverflow(_) => "TesseraValueError",
        KernelError::UnsupportedDType { .. } => "TesseraTypeError",
        _ => "ComputeError",
    }
}

/// The class for a dataframe error.
fn class_of_frame(err: &FrameError) -> &'static str {
    match err {
        FrameError::ColumnNotFound { .. } => "ColumnNotFoundError",
        FrameError::TypeMismatch(_) => "TesseraTypeError",
        // The reader keeps only the operating system's message: ENOENT's text is the one
        // sign of a missing file.
        FrameError::Io { message, .. } if is_not_found(message) => "TesseraFileNotFoundError",
        FrameError::Io { .. } => "TesseraOSError",
        FrameError::Parse { .. }
        | FrameError::FieldCount { .. }
        | FrameError::EmptyFile { .. }
        | FrameError::InvalidArgument(_)
        | FrameError::Pattern { .. } => "TesseraValueError",
        FrameError::Overflow(_) => "TesseraValueError",
        _ => "ComputeError",
    }
}

/// True when an I/O message is the operating system's "no such file" (`ENOENT`).
fn is_not_found(message: &str) -> bool {
    message.contains("No such file") || message.contains("os error 2)")
}

/// Raises the `tessera.errors` class `class` with `message`.
pub(crate) fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let class = py
            .import("tessera.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
        match class {
            Ok(class) => PyErr::from_type(class, message),
            Err(e) => PyRuntimeError::new_err(format!("{message} (and tessera.errors: {e})")),
        }
    })
}

/// `err` as the Python exception of its kind.
pub(crate) fn to_py(err: Error) -> PyErr {
    raise(class_of(&err), err.to_string())
}

/// A value of the wrong kind passed from Python (`TesseraTypeError`).
pub(crate) fn type_error(message: impl Into<String>) -> PyErr {
    raise("TesseraTypeError", message.into())
}

/// A value outside what an operation accepts (`TesseraValueError`).
pub(crate) fn value_error(message: impl Into<String>) -> PyErr {
    raise("TesseraValueError", message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_kind_of_error() {
        assert_eq!(class_of(&Error::Shape("x".into())), "TesseraValueError");
        assert_eq!(
            class_of(&Error::AxisOutOfRange { axis: 3, ndim: 1 }),
            "TesseraAxisError"
        );
        let missing = FrameError::Io {
            path: "a.csv".into(),
            message: "No such file or directory (os error 2)".into(),
        };
        assert_eq!(class_of(&Error::Frame(missing)), "TesseraFileNotFoundError");
        let column = FrameError::ColumnNotFound {
            name: "z".into(),
            available: vec!["a".into()],
        };
        let failed = Error::ChunkFailed {
            key: 1,
            op: "filter".into(),
            cause: KernelError::Frame(column),
        };
        assert_eq!(class_of(&failed), "ColumnNotFoundError");
        assert_eq!(class_of(&Error::Runtime("stopped".into())), "ComputeError");
    }
}
