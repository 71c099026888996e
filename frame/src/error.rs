//! Errors of the dataframe kernels.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a dataframe kernel (or the planning of one) failed. Every variant names its cause.
#[derive(Debug, Error, Clone, PartialEq, Serialize, Deserialize)]
pub enum FrameError {
    /// A file could not be opened, read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A CSV field that cannot be parsed as its column's type.
    #[error("{path}, line {line}, column {column:?}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The 1-based line number in the file (the header is line 1).
        line: u64,
        /// The column's name.
        column: String,
        /// What was wrong with the field.
        message: String,
    },
    /// A CSV row with the wrong number of fields.
    #[error("{path}, line {line}: expected {expected} fields, found {found}")]
    FieldCount {
        /// The file.
        path: String,
        /// The 1-based line number in the file.
        line: u64,
        /// Fields per row in the header.
        expected: usize,
        /// Fields in this row.
        found: usize,
    },
    /// A file with no header and no rows.
    #[error("{path}: the file is empty")]
    EmptyFile {
        /// The file.
        path: String,
    },
    /// A column name that the frame does not have.
    #[error("no column {name:?}; the columns are {available:?}")]
    ColumnNotFound {
        /// The name asked for.
        name: String,
        /// The frame's columns.
        available: Vec<String>,
    },
    /// Types that an expression, join or aggregation cannot combine.
    #[error("type mismatch: {0}")]
    TypeMismatch(String),
    /// An argument outside what the operation accepts.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A value past what its type holds (a decimal result with more digits than its
    /// precision, a decimal sum past 38 digits).
    #[error("overflow: {0}")]
    Overflow(String),
    /// A string pattern (a regular expression or a SQL `LIKE` pattern) that is malformed,
    /// or that uses a feature Tessera does not run (look-around, backreferences…), which
    /// `message` names.
    #[error("pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
    /// An error reported by Arrow.
    #[error("arrow: {0}")]
    Arrow(String),
    /// An error reported by the Parquet reader or writer.
    #[error("parquet: {0}")]
    Parquet(String),
}

impl From<arrow::error::ArrowError> for FrameError {
    fn from(e: arrow::error::ArrowError) -> Self {
        FrameError::Arrow(e.to_string())
    }
}

impl From<parquet::errors::ParquetError> for FrameError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        FrameError::Parquet(e.to_string())
    }
}

/// `Result` with [`FrameError`].
pub type FrameResult<T> = std::result::Result<T, FrameError>;
