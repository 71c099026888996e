//! Schema inference: the header, a sample of the first rows, and type narrowing.

use super::file::{open, read_append};
use super::text::{split_record, Record};
use super::values::{parse_bool, parse_date, parse_f64, parse_i64, parse_timestamp, NullSet};
use super::{check_options, supported, unsupported, CsvOptions, MARGIN};
use crate::error::{FrameError, FrameResult};
use crate::schema::column_index;
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use std::fs::File;

const INT: u8 = 1;
const FLOAT: u8 = 2;
const BOOL: u8 = 4;
const DATE: u8 = 8;
const TS: u8 = 16;

/// Whether a text parses as a type.
type Check = fn(&[u8]) -> bool;

/// The candidate types (bits) that `text` leaves of `cand`.
fn narrow(cand: u8, text: &[u8]) -> u8 {
    let checks: [(u8, Check); 5] = [
        (INT, |t| parse_i64(t).is_some()),
        (FLOAT, |t| parse_f64(t).is_some()),
        (BOOL, |t| parse_bool(t).is_some()),
        (DATE, |t| parse_date(t).is_some()),
        (TS, |t| parse_timestamp(t).is_some()),
    ];
    checks.iter().fold(cand, |m, &(bit, ok)| {
        if m & bit != 0 && !ok(text) {
            m & !bit
        } else {
            m
        }
    })
}

/// The type chosen from a column's remaining candidates (`None`: no non-null value seen).
fn chosen_type(cand: Option<u8>) -> DataType {
    match cand {
        Some(m) if m & INT != 0 => DataType::Int64,
        Some(m) if m & FLOAT != 0 => DataType::Float64,
        Some(m) if m & BOOL != 0 => DataType::Boolean,
        Some(m) if m & DATE != 0 => DataType::Date32,
        Some(m) if m & TS != 0 => DataType::Timestamp(TimeUnit::Microsecond, None),
        _ => DataType::Utf8,
    }
}

/// The first bytes of a file, read on demand.
struct Prefix<'a> {
    file: &'a File,
    path: &'a str,
    file_len: u64,
    buf: Vec<u8>,
}

impl Prefix<'_> {
    /// Makes the buffer hold the first `n` bytes (or the whole file).
    fn ensure(&mut self, n: usize) -> FrameResult<()> {
        let have = self.buf.len() as u64;
        let want = (n as u64).min(self.file_len);
        if want > have {
            read_append(self.file, self.path, have, want - have, &mut self.buf)?;
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.buf.len() as u64 == self.file_len
    }
}

/// The file's schema (names from the header, types inferred from the first `infer_bytes`
/// then overridden by `options.dtypes`) and the byte offset where the data starts (after the
/// header line). Inference: Int64 if every non-null sampled field parses as i64, else Float64,
/// Boolean, Date32, Timestamp(Microsecond) in that order, else Utf8 (also for a column with
/// only nulls in the sample).
/// Errors: Io (missing file, naming the path), EmptyFile, unknown column in `dtypes`
/// (ColumnNotFound), FieldCount for a sampled row of the wrong width.
pub fn infer_schema(path: &str, options: &CsvOptions) -> FrameResult<(Schema, u64)> {
    check_options(options)?;
    let (file, file_len) = open(path)?;
    let mut prefix = Prefix {
        file: &file,
        path,
        file_len,
        buf: Vec::new(),
    };
    prefix.ensure(options.infer_bytes.max(MARGIN as usize))?;
    let (first, first_end, rec) = first_record(&mut prefix, options)?;
    let ncols = rec.fields.len();
    let (names, data_start) = if options.has_header {
        let names: Vec<String> = (0..ncols)
            .map(|i| match String::from_utf8_lossy(rec.text(i)) {
                n if n.is_empty() => format!("column_{}", i + 1),
                n => n.into_owned(),
            })
            .collect();
        (names, first_end)
    } else {
        ((1..=ncols).map(|i| format!("column_{i}")).collect(), first)
    };
    let cands = sample_types(&mut prefix, data_start, ncols, options)?;
    let mut fields: Vec<Field> = names
        .into_iter()
        .zip(cands)
        .map(|(name, c)| Field::new(name, chosen_type(c), true))
        .collect();
    let mut schema = Schema::new(fields.clone());
    for (name, dt) in &options.dtypes {
        if !supported(dt) {
            return Err(unsupported(name, dt));
        }
        let i = column_index(&schema, name)?;
        if let Some(f) = fields.get_mut(i) {
            *f = f.clone().with_data_type(dt.clone());
        }
    }
    schema = Schema::new(fields);
    Ok((schema, data_start as u64))
}

/// The first non-blank record: its start, the position after it, and its fields.
fn first_record(prefix: &mut Prefix, options: &CsvOptions) -> FrameResult<(usize, usize, Record)> {
    let empty = || FrameError::EmptyFile {
        path: prefix.path.to_string(),
    };
    let mut pos = if prefix.buf.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut rec = Record::default();
    loop {
        while matches!(prefix.buf.get(pos), Some(b'\n' | b'\r')) {
            pos += 1;
        }
        let at_eof = prefix.complete();
        if pos >= prefix.buf.len() {
            if at_eof {
                return Err(empty());
            }
        } else if let Some(end) = split_record(
            &prefix.buf,
            pos,
            options.delimiter,
            options.quote,
            at_eof,
            &mut rec,
        ) {
            return Ok((pos, end, rec));
        } else if at_eof {
            return Err(FrameError::Parse {
                path: prefix.path.to_string(),
                line: 1 + memchr::memchr_iter(b'\n', prefix.buf.get(..pos).unwrap_or_default())
                    .count() as u64,
                column: String::new(),
                message: "unterminated quoted field".to_string(),
            });
        }
        let grow = prefix.buf.len() * 2;
        prefix.ensure(grow)?;
    }
}

/// The candidate type bits of each column over the sampled rows (None: only nulls seen).
fn sample_types(
    prefix: &mut Prefix,
    data_start: usize,
    ncols: usize,
    options: &CsvOptions,
) -> FrameResult<Vec<Option<u8>>> {
    let nulls = NullSet::new(&options.null_values);
    let mut window = options.infer_bytes;
    loop {
        prefix.ensure(data_start.saturating_add(window))?;
        let sample_end = prefix.buf.len().min(data_start.saturating_add(window));
        let at_eof = sample_end as u64 == prefix.file_len;
        let sample = prefix.buf.get(..sample_end).unwrap_or_default();
        let mut cands = vec![None; ncols];
        let mut rows = 0usize;
        let mut pos = data_start;
        let mut rec = Record::default();
        while pos < sample.len() {
            let Some(next) = split_record(
                sample,
                pos,
                options.delimiter,
                options.quote,
                at_eof,
                &mut rec,
            ) else {
                break;
            };
            if !(ncols > 1 && rec.is_blank()) {
                if rec.fields.len() != ncols {
                    return Err(FrameError::FieldCount {
                        path: prefix.path.to_string(),
                        line: 1 + memchr::memchr_iter(b'\n', sample.get(..pos).unwrap_or_default())
                            .count() as u64,
                        expected: ncols,
                        found: rec.fields.len(),
                    });
                }
                for (i, cand) in cands.iter_mut().enumerate() {
                    let text = rec.text(i);
                    if !nulls.contains(text) {
                        *cand = Some(narrow(cand.unwrap_or(INT | FLOAT | BOOL | DATE | TS), text));
                    }
                }
                rows += 1;
            }
            pos = next;
        }
        if rows > 0 || at_eof {
            return Ok(cands);
        }
        window = window.saturating_mul(2).max(1);
    }
}
