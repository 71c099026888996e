//! CSV reading in byte ranges (one Arrow `RecordBatch` per range) and CSV writing.
//!
//! [`infer_schema`] reads the header and samples the start of the file for column types,
//! [`split_ranges`] cuts the data into byte ranges and [`read_range`] parses the rows that
//! start in one range. Ranges are independent, so a runtime can parse them in parallel.
//!
//! Text rules: fields may be quoted (a quote inside a quoted field is doubled); an empty
//! field, or an unquoted field equal to one of `null_values`, is null (a quoted field of a
//! Utf8 column is never null, so `""` is the empty string); `\r\n` line ends are accepted;
//! blank lines are skipped in files of more than one column, and trailing blank lines are
//! ignored in every file.

mod columns;
mod file;
mod infer;
mod parse;
mod quotes;
mod ranges;
#[cfg(test)]
mod tests;
mod text;
mod values;
mod write;

pub use infer::infer_schema;
pub use parse::read_range;
pub use quotes::{quote_ranges, CsvRange, QuoteState};
pub use ranges::split_ranges;
pub use write::write_csv;

use super::error::{FrameError, FrameResult};
use arrow::datatypes::{DataType, TimeUnit};
use serde::{Deserialize, Serialize};

/// How to read a CSV file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvOptions {
    /// Field separator (default b',').
    pub delimiter: u8,
    /// Quote character (default b'"'); a quote inside a quoted field is doubled.
    pub quote: u8,
    /// Whether line 1 holds the column names (default true; else columns are named "column_1", ...).
    pub has_header: bool,
    /// Field texts read as null (default: "", "NA", "N/A", "NaN", "null", "NULL", "nan", "None", as pandas).
    pub null_values: Vec<String>,
    /// Column types that replace the inferred ones (by column name).
    pub dtypes: Vec<(String, DataType)>,
    /// Bytes at the start of the file sampled for type inference (default 1 MiB).
    pub infer_bytes: usize,
}

impl Default for CsvOptions {
    fn default() -> Self {
        let nulls = ["", "NA", "N/A", "NaN", "null", "NULL", "nan", "None"];
        CsvOptions {
            delimiter: b',',
            quote: b'"',
            has_header: true,
            null_values: nulls.iter().map(|s| s.to_string()).collect(),
            dtypes: Vec::new(),
            infer_bytes: 1 << 20,
        }
    }
}

/// Bytes read past a range's end (and added at a time) to finish its last row.
const MARGIN: u64 = 64 << 10;
/// Bytes of a range read (and parsed) at a time.
const BLOCK: u64 = 1 << 20;
/// Rows parsed before the column buffers are sized for the whole range.
const SIZING_ROWS: usize = 256;

fn check_options(options: &CsvOptions) -> FrameResult<()> {
    let bad = |b: u8| b == b'\n' || b == b'\r';
    if bad(options.delimiter) || bad(options.quote) || options.delimiter == options.quote {
        return Err(FrameError::InvalidArgument(format!(
            "CSV delimiter {:?} and quote {:?} must differ and not be line ends",
            options.delimiter as char, options.quote as char
        )));
    }
    Ok(())
}

fn supported(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int64
            | DataType::Float64
            | DataType::Boolean
            | DataType::Utf8
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Microsecond, None)
    )
}

fn unsupported(name: &str, dt: &DataType) -> FrameError {
    FrameError::InvalidArgument(format!(
        "CSV column {name:?} has type {dt}; supported: Int64, Float64, Boolean, Utf8, Date32, \
         Timestamp(Microsecond, None)"
    ))
}
