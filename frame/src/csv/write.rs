//! CSV writing: cells formatted column by column, then interleaved into lines.

use super::file::io_error;
use super::values::{civil_from_days, NullSet};
use super::CsvOptions;
use crate::error::{FrameError, FrameResult};
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int64Type, TimeUnit, TimestampMicrosecondType,
};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use std::fs::File;
use std::io::{BufWriter, Write};

/// Rows formatted per block by [`write_csv`].
const WRITE_BLOCK: usize = 4096;

/// One column's cells of a block as text: cell `i` ends at `ends[i]` of `text`.
#[derive(Default)]
struct Cells {
    text: Vec<u8>,
    ends: Vec<usize>,
}

/// Appends the decimal text of `v`.
fn write_i64(out: &mut Vec<u8>, v: i64) {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(digits.get(i..).unwrap_or_default());
}

/// Appends `v` with at most `width` leading zeros (for dates and times).
fn write_padded(out: &mut Vec<u8>, v: i64, width: usize) {
    let start = out.len();
    write_i64(out, v);
    let len = out.len() - start;
    if v >= 0 && len < width {
        out.splice(start..start, std::iter::repeat_n(b'0', width - len));
    }
}

/// Appends the shortest text that parses back to `v` (with ".0" on whole numbers).
fn write_f64(out: &mut Vec<u8>, v: f64) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "{v:?}");
}

/// Appends a Date32 value as YYYY-MM-DD.
fn write_date(out: &mut Vec<u8>, days: i64) {
    let (y, m, d) = civil_from_days(days);
    write_padded(out, y, 4);
    out.push(b'-');
    write_padded(out, m, 2);
    out.push(b'-');
    write_padded(out, d, 2);
}

/// Appends a microsecond timestamp as "YYYY-MM-DD HH:MM:SS[.ffffff]".
fn write_timestamp(out: &mut Vec<u8>, micros: i64) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    write_date(out, secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    for (sep, v) in [(b' ', s / 3600), (b':', s / 60 % 60), (b':', s % 60)] {
        out.push(sep);
        write_padded(out, v, 2);
    }
    if frac != 0 {
        out.push(b'.');
        write_padded(out, frac, 6);
    }
}

/// Appends a string field, quoted when it would not read back as itself.
fn write_str(out: &mut Vec<u8>, s: &[u8], nulls: &NullSet) {
    let special = |b: &u8| matches!(b, b',' | b'"' | b'\n' | b'\r');
    if !nulls.contains(s) && !s.iter().any(special) {
        out.extend_from_slice(s);
        return;
    }
    out.push(b'"');
    for &b in s {
        if b == b'"' {
            out.push(b'"');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Formats the cells `rows` of a column: `is_null(i)` cells as `null_text`, others by `write`.
fn format_cells(
    rows: std::ops::Range<usize>,
    null_text: &[u8],
    cells: &mut Cells,
    is_null: impl Fn(usize) -> bool,
    mut write: impl FnMut(&mut Vec<u8>, usize),
) {
    for i in rows {
        if is_null(i) {
            cells.text.extend_from_slice(null_text);
        } else {
            write(&mut cells.text, i);
        }
        cells.ends.push(cells.text.len());
    }
}

/// Formats the cells `rows` of `array` into `cells`.
fn format_column(
    array: &dyn Array,
    rows: std::ops::Range<usize>,
    null_text: &[u8],
    nulls: &NullSet,
    cells: &mut Cells,
) -> FrameResult<()> {
    let is_null = |i| array.is_null(i);
    match array.data_type() {
        DataType::Int64 => {
            let a = array.as_primitive::<Int64Type>().values();
            format_cells(rows, null_text, cells, is_null, |o, i| write_i64(o, a[i]));
        }
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>().values();
            format_cells(rows, null_text, cells, is_null, |o, i| write_f64(o, a[i]));
        }
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>().values();
            format_cells(rows, null_text, cells, is_null, |o, i| {
                write_date(o, i64::from(a[i]))
            });
        }
        DataType::Timestamp(TimeUnit::Microsecond, None) => {
            let a = array.as_primitive::<TimestampMicrosecondType>().values();
            format_cells(rows, null_text, cells, is_null, |o, i| {
                write_timestamp(o, a[i])
            });
        }
        DataType::Boolean => {
            let a = array.as_boolean();
            format_cells(rows, null_text, cells, is_null, |o, i| {
                o.extend_from_slice(if a.value(i) { b"true" } else { b"false" })
            });
        }
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            format_cells(rows, null_text, cells, is_null, |o, i| {
                write_str(o, a.value(i).as_bytes(), nulls)
            });
        }
        _ => {
            let f = ArrayFormatter::try_new(array, &FormatOptions::default())?;
            let mut text = String::new();
            let mut failed = None;
            format_cells(rows, null_text, cells, is_null, |o, i| {
                text.clear();
                match f.value(i).write(&mut text) {
                    Ok(()) => write_str(o, text.as_bytes(), nulls),
                    Err(e) => failed = failed.take().or(Some(e)),
                }
            });
            if let Some(e) = failed {
                return Err(FrameError::Arrow(format!(
                    "cannot write a {} value as text: {e}",
                    array.data_type()
                )));
            }
        }
    }
    Ok(())
}

/// Writes `batches` (all of one schema) as one CSV file with a header line, in the form
/// [`read_range`](super::read_range) reads with the default [`CsvOptions`]: nulls are empty fields (`NA` in a
/// file of one column, where an empty line would be a blank line), strings are quoted when
/// empty, when they hold a delimiter, quote or line end, or when they equal a null text;
/// floats are written in their shortest round-trip form. Other column types are written
/// in Arrow's display format, quoted like strings.
/// Errors: InvalidArgument for no batches or batches of different schemas, Io.
pub fn write_csv(path: &str, batches: &[RecordBatch]) -> FrameResult<()> {
    let Some(first) = batches.first() else {
        return Err(FrameError::InvalidArgument(
            "write_csv needs at least one batch (for the header)".to_string(),
        ));
    };
    let schema = first.schema();
    let same = |b: &RecordBatch| {
        let fields = b.schema_ref().fields();
        fields.len() == schema.fields().len()
            && fields
                .iter()
                .zip(schema.fields())
                .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type())
    };
    if let Some(b) = batches.iter().find(|b| !same(b)) {
        return Err(FrameError::InvalidArgument(format!(
            "write_csv: batches of different schemas ({:?} and {:?})",
            schema.fields(),
            b.schema_ref().fields()
        )));
    }
    let nulls = NullSet::new(&CsvOptions::default().null_values);
    let null_text: &[u8] = if schema.fields().len() == 1 {
        b"NA"
    } else {
        b""
    };
    let file = File::create(path).map_err(|e| io_error(path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        write_str(&mut line, f.name().as_bytes(), &NullSet::new(&[]));
    }
    line.push(b'\n');
    let mut cells: Vec<Cells> = schema.fields().iter().map(|_| Cells::default()).collect();
    for batch in batches {
        for from in (0..batch.num_rows()).step_by(WRITE_BLOCK) {
            let rows = from..(from + WRITE_BLOCK).min(batch.num_rows());
            for (c, array) in cells.iter_mut().zip(batch.columns()) {
                c.text.clear();
                c.ends.clear();
                format_column(array.as_ref(), rows.clone(), null_text, &nulls, c)?;
            }
            interleave(&cells, rows.len(), &mut line);
            out.write_all(&line).map_err(|e| io_error(path, e))?;
            line.clear();
        }
    }
    out.write_all(&line).map_err(|e| io_error(path, e))?;
    out.flush().map_err(|e| io_error(path, e))
}

/// Appends `rows` CSV lines taking cell `r` of every column for line `r`.
fn interleave(cells: &[Cells], rows: usize, line: &mut Vec<u8>) {
    for r in 0..rows {
        for (c, col) in cells.iter().enumerate() {
            if c > 0 {
                line.push(b',');
            }
            let start = if r == 0 { 0 } else { col.ends[r - 1] };
            line.extend_from_slice(col.text.get(start..col.ends[r]).unwrap_or_default());
        }
        line.push(b'\n');
    }
}
