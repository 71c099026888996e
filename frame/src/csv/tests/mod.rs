//! Tests of the CSV reader and writer, one file per subject.

mod infer;
mod quotes;
mod read;
mod values;
mod write;

use super::*;
use arrow::array::RecordBatch;
use arrow::datatypes::Schema;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A temporary file removed on drop.
struct Tmp(String);

impl Tmp {
    fn new(content: &[u8]) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("h_csv_{}_{n}.csv", std::process::id()));
        std::fs::write(&path, content).unwrap();
        Tmp(path.to_str().unwrap().to_string())
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn file_len(path: &str) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn read_with(path: &str, o: &CsvOptions) -> FrameResult<RecordBatch> {
    let (schema, ds) = infer_schema(path, o)?;
    read_range(path, span(ds, file_len(path)), ds, &schema, None, o)
}

/// A range that starts outside quoted fields (as the data start does).
fn span(start: u64, end: u64) -> CsvRange {
    CsvRange {
        start,
        end,
        state: QuoteState::Outside,
    }
}

fn read(path: &str) -> RecordBatch {
    read_with(path, &CsvOptions::default()).unwrap()
}

/// Every cell as text ("∅" for null), row by row: an independent rendering.
fn cells(b: &RecordBatch) -> Vec<Vec<String>> {
    let fmts: Vec<_> = b
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &FormatOptions::default()).unwrap())
        .collect();
    (0..b.num_rows())
        .map(|r| {
            b.columns()
                .iter()
                .zip(&fmts)
                .map(|(c, f)| {
                    if c.is_null(r) {
                        "∅".to_string()
                    } else {
                        f.value(r).to_string()
                    }
                })
                .collect()
        })
        .collect()
}

fn types(s: &Schema) -> Vec<DataType> {
    s.fields().iter().map(|f| f.data_type().clone()).collect()
}

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, None)
}
