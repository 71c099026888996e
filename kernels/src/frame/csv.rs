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

use super::error::{FrameError, FrameResult};
use super::schema::column_index;
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, Date32Array, Float64Array,
    Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    DataType, Date32Type, Field, Float64Type, Int64Type, Schema, TimeUnit, TimestampMicrosecondType,
};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

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

// ---------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------

fn io_error(path: &str, e: std::io::Error) -> FrameError {
    FrameError::Io {
        path: path.to_string(),
        message: e.to_string(),
    }
}

fn open(path: &str) -> FrameResult<(File, u64)> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let len = file.metadata().map_err(|e| io_error(path, e))?.len();
    Ok((file, len))
}

/// Appends the `len` bytes at `offset` of `file` to `buf`.
fn read_append(
    mut file: &File,
    path: &str,
    offset: u64,
    len: u64,
    buf: &mut Vec<u8>,
) -> FrameResult<()> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_error(path, e))?;
    buf.reserve(usize::try_from(len).unwrap_or(usize::MAX));
    let n = file
        .take(len)
        .read_to_end(buf)
        .map_err(|e| io_error(path, e))?;
    if (n as u64) < len {
        return Err(FrameError::Io {
            path: path.to_string(),
            message: format!("file shrank while reading ({n} of {len} bytes at offset {offset})"),
        });
    }
    Ok(())
}

/// The end of the file's content: its length less the trailing `\r` and `\n` bytes.
fn content_end(file: &File, path: &str, file_len: u64) -> FrameResult<u64> {
    let mut end = file_len;
    let mut block = Vec::new();
    while end > 0 {
        let from = end.saturating_sub(4096);
        block.clear();
        read_append(file, path, from, end - from, &mut block)?;
        if let Some(p) = block.iter().rposition(|&b| b != b'\n' && b != b'\r') {
            return Ok(from + p as u64 + 1);
        }
        end = from;
    }
    Ok(0)
}

/// The 1-based line of the file at byte `offset` (1 + the '\n' bytes before it).
fn line_of(file: &File, path: &str, offset: u64) -> FrameResult<u64> {
    let mut lines = 1;
    let mut at = 0;
    let mut block = Vec::new();
    while at < offset {
        let len = (offset - at).min(1 << 20);
        block.clear();
        read_append(file, path, at, len, &mut block)?;
        lines += memchr::memchr_iter(b'\n', &block).count() as u64;
        at += len;
    }
    Ok(lines)
}

/// The byte at `i`, or '\n' past the end (buffers given to the row parser end with '\n').
#[inline(always)]
fn byte_at(buf: &[u8], i: usize) -> u8 {
    buf.get(i).copied().unwrap_or(b'\n')
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// Nonzero when `v` has a zero byte; then its lowest set bit is the high bit of the lowest
/// zero byte (the bits above may be wrong).
#[inline(always)]
fn lowest_zero_byte(v: u64) -> u64 {
    v.wrapping_sub(ONES) & !v & !LOW7
}

/// The position of the first delimiter or '\n' at or after `i` (or `buf.len()`), eight
/// bytes at a time.
#[inline(always)]
fn field_end(buf: &[u8], mut i: usize, delim: u8) -> usize {
    let (d, n) = (ONES * u64::from(delim), ONES * u64::from(b'\n'));
    while let Some(chunk) = buf.get(i..).and_then(|s| s.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*chunk);
        let m = lowest_zero_byte(w ^ d) | lowest_zero_byte(w ^ n);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = buf.get(i) {
        if b == delim || b == b'\n' {
            break;
        }
        i += 1;
    }
    i
}

/// `buf[start..end]` less a '\r' that precedes the '\n' (or buffer end) at `end`.
#[inline(always)]
fn field_text(buf: &[u8], start: usize, end: usize) -> &[u8] {
    let text = buf.get(start..end).unwrap_or_default();
    match text.split_last() {
        Some((b'\r', rest)) if byte_at(buf, end) == b'\n' => rest,
        _ => text,
    }
}

/// `end`, or `end - 1` when the field `buf[start..end]` ends with '\r' (before a '\n').
#[inline(always)]
fn trim_cr(buf: &[u8], start: usize, end: usize) -> usize {
    if end > start && byte_at(buf, end - 1) == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The position after a blank line starting at `pos` ("\n" or "\r\n"), if it is one.
#[inline(always)]
fn blank_line(buf: &[u8], pos: usize) -> Option<usize> {
    match byte_at(buf, pos) {
        b'\n' => Some(pos + 1),
        b'\r' if byte_at(buf, pos + 1) == b'\n' => Some(pos + 2),
        _ => None,
    }
}

/// The null texts, with a bit set of their lengths for a quick rejection.
#[derive(Debug)]
struct NullSet {
    values: Vec<Vec<u8>>,
    lengths: u64,
}

impl NullSet {
    fn new(values: &[String]) -> Self {
        let lengths = values
            .iter()
            .filter(|v| v.len() < 64)
            .fold(1, |m, v| m | (1u64 << v.len()));
        NullSet {
            values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
            lengths,
        }
    }

    /// True for an empty text or one of the null texts.
    #[inline(always)]
    fn contains(&self, text: &[u8]) -> bool {
        let n = text.len();
        if n < 64 && self.lengths >> n & 1 == 0 {
            return false;
        }
        n == 0 || self.values.iter().any(|v| v == text)
    }

    /// True when no null text looks like the start of a number (so numbers skip the check).
    fn numbers_never_null(&self) -> bool {
        self.values.iter().all(|v| {
            v.first()
                .is_none_or(|b| !(b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')))
        })
    }
}

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

// ---------------------------------------------------------------------------------------
// Field texts to values
// ---------------------------------------------------------------------------------------

fn parse_i64(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_f64(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_bool(text: &[u8]) -> Option<bool> {
    match text {
        b"true" | b"True" | b"TRUE" => Some(true),
        b"false" | b"False" | b"FALSE" => Some(false),
        _ => None,
    }
}

/// The value of a run of ASCII digits (None if any byte is not a digit).
fn digits(text: &[u8]) -> Option<u32> {
    text.iter().try_fold(0u32, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u32::from(b - b'0'))
    })
}

/// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The civil date (year, month, day) of a day count from 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        2 if (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// "YYYY-MM-DD" as days since 1970-01-01.
fn parse_date(text: &[u8]) -> Option<i32> {
    if text.len() != 10 || text.get(4) != Some(&b'-') || text.get(7) != Some(&b'-') {
        return None;
    }
    let y = digits(text.get(0..4)?)?;
    let m = digits(text.get(5..7)?)?;
    let d = digits(text.get(8..10)?)?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    i32::try_from(days_from_civil(y.into(), m.into(), d.into())).ok()
}

/// "YYYY-MM-DD[( |T)HH:MM:SS[.fraction]]" as microseconds since 1970-01-01 00:00:00
/// (the fraction, up to 9 digits, truncated to microseconds).
fn parse_timestamp(text: &[u8]) -> Option<i64> {
    let days = i64::from(parse_date(text.get(..10)?)?);
    let mut micros = days * 86_400_000_000;
    if text.len() == 10 {
        return Some(micros);
    }
    let time = text.get(10..19)?;
    if !matches!(time, [b' ' | b'T', _, _, b':', _, _, b':', _, _]) {
        return None;
    }
    let h = digits(time.get(1..3)?)?;
    let mi = digits(time.get(4..6)?)?;
    let s = digits(time.get(7..9)?)?;
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    micros += i64::from(h * 3600 + mi * 60 + s) * 1_000_000;
    match text.get(19..) {
        Some([]) => Some(micros),
        Some([b'.', frac @ ..]) if (1..=9).contains(&frac.len()) => {
            let six = frac.get(..frac.len().min(6))?;
            let scale = 10u32.pow(6 - six.len() as u32);
            digits(frac)?;
            Some(micros + i64::from(digits(six)? * scale))
        }
        _ => None,
    }
}

/// Powers of ten exactly representable as f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `text` less a leading sign: (negative, the rest).
#[inline(always)]
fn unsign(text: &[u8]) -> (bool, &[u8]) {
    match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    }
}

/// An integer of 1 to 18 digits with an optional sign (longer ones take `parse_i64`).
#[inline(always)]
fn fast_int(text: &[u8]) -> Option<i64> {
    let (neg, digits) = unsign(text);
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v = 0i64;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(if neg { -v } else { v })
}

/// A decimal without exponent whose digits fit 2^53, with at most 22 decimals. The
/// quotient of two exact doubles is correctly rounded (Clinger's fast path), so the result
/// is bit-identical to `str::parse::<f64>` (which takes the other texts).
#[inline(always)]
fn fast_float(text: &[u8]) -> Option<f64> {
    let (neg, body) = unsign(text);
    let mut m = 0u64;
    let mut point = None;
    for (i, &b) in body.iter().enumerate() {
        let d = b.wrapping_sub(b'0');
        if d <= 9 {
            m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        } else if b == b'.' && point.is_none() {
            point = Some(i);
        } else {
            return None;
        }
    }
    let decimals = point.map_or(0, |i| body.len() - i - 1);
    let n = body.len() - usize::from(point.is_some());
    if n == 0 || n > 19 || m > 1 << 53 {
        return None;
    }
    let v = m as f64 / *POW10.get(decimals)?;
    Some(if neg { -v } else { v })
}

const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The high bit of each byte of `v` that is zero.
#[inline(always)]
fn zero_byte_bits(v: u64) -> u64 {
    !(((v & LOW7).wrapping_add(LOW7)) | v) & !LOW7
}

/// One bit per byte (bit i for byte i) from the high bits of the bytes of `m`.
#[inline(always)]
fn gather(m: u64) -> u64 {
    (m >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// Bit i set where byte i of `chunk` is the delimiter (repeated in `delims`) or '\n'.
#[inline(always)]
fn separator_mask(chunk: &[u8; 64], delims: u64) -> u64 {
    let (words, _) = chunk.as_chunks::<8>();
    words.iter().enumerate().fold(0, |mask, (k, w)| {
        let w = u64::from_le_bytes(*w);
        let hits = zero_byte_bits(w ^ delims) | zero_byte_bits(w ^ (ONES * u64::from(b'\n')));
        mask | gather(hits) << (8 * k)
    })
}

/// The positions of the delimiters and '\n' bytes of a buffer (with no quotes) from a
/// start, in order, found 64 bytes at a time (a chain of field ends with no data dependency).
struct Separators<'a> {
    buf: &'a [u8],
    delims: u64,
    /// Buffer position of bit 0 of `mask`.
    base: usize,
    mask: u64,
}

impl<'a> Separators<'a> {
    fn new(buf: &'a [u8], from: usize, delim: u8) -> Self {
        Separators {
            buf,
            delims: ONES * u64::from(delim),
            base: from.wrapping_sub(64),
            mask: 0,
        }
    }

    /// The next separator's position (`buf.len()` when there are no more).
    #[inline(always)]
    fn next(&mut self) -> usize {
        while self.mask == 0 {
            self.base = self.base.wrapping_add(64);
            let Some(rest) = self.buf.get(self.base..).filter(|r| !r.is_empty()) else {
                self.base = self.buf.len();
                return self.buf.len();
            };
            self.mask = match rest.first_chunk::<64>() {
                Some(chunk) => separator_mask(chunk, self.delims),
                None => {
                    let mut chunk = [0u8; 64];
                    chunk.iter_mut().zip(rest).for_each(|(c, &b)| *c = b);
                    separator_mask(&chunk, self.delims) & ((1u64 << rest.len()) - 1)
                }
            };
        }
        let p = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        p
    }
}

// ---------------------------------------------------------------------------------------
// Records (general splitter for the header, inference and error reports)
// ---------------------------------------------------------------------------------------

/// The fields of one record: unquoted texts in `bytes`, with (start, end, quoted) per field.
#[derive(Default)]
struct Record {
    bytes: Vec<u8>,
    fields: Vec<(usize, usize, bool)>,
}

impl Record {
    fn text(&self, i: usize) -> &[u8] {
        self.fields
            .get(i)
            .and_then(|&(s, e, _)| self.bytes.get(s..e))
            .unwrap_or_default()
    }

    /// True for a record of one empty unquoted field (a blank line).
    fn is_blank(&self) -> bool {
        matches!(self.fields.as_slice(), [(s, e, false)] if s == e)
    }
}

/// Splits the record at `pos` into `rec`; returns the position after it, or None when the
/// record does not end within `buf` (and `at_eof` is false, or a quote is left open).
fn split_record(
    buf: &[u8],
    mut pos: usize,
    delim: u8,
    quote: u8,
    at_eof: bool,
    rec: &mut Record,
) -> Option<usize> {
    rec.bytes.clear();
    rec.fields.clear();
    loop {
        let start = rec.bytes.len();
        let quoted = buf.get(pos) == Some(&quote);
        if quoted {
            pos += 1;
            loop {
                let k = memchr::memchr(quote, buf.get(pos..)?)?;
                rec.bytes.extend_from_slice(buf.get(pos..pos + k)?);
                pos += k + 1;
                if buf.get(pos) != Some(&quote) {
                    break;
                }
                rec.bytes.push(quote);
                pos += 1;
            }
        }
        let end = field_end(buf, pos, delim);
        let at_delim = buf.get(end) == Some(&delim);
        if end == buf.len() && !at_eof {
            return None;
        }
        let text = if at_delim {
            buf.get(pos..end)?
        } else {
            field_text(buf, pos, end)
        };
        rec.bytes.extend_from_slice(text);
        rec.fields.push((start, rec.bytes.len(), quoted));
        pos = end + 1;
        if !at_delim {
            return Some(pos.min(buf.len()));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Schema inference
// ---------------------------------------------------------------------------------------

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

/// Cuts [data_start, file_len) into consecutive ranges of about `chunk_bytes` (at least one
/// range, even for a file with a header only). Pure arithmetic: alignment to rows is
/// [`read_range`]'s job.
pub fn split_ranges(data_start: u64, file_len: u64, chunk_bytes: u64) -> Vec<(u64, u64)> {
    let len = file_len.saturating_sub(data_start);
    let n = len.div_ceil(chunk_bytes.max(1)).max(1);
    let cut = |i: u64| data_start + (u128::from(len) * u128::from(i) / u128::from(n)) as u64;
    (0..n).map(|i| (cut(i), cut(i + 1))).collect()
}

// ---------------------------------------------------------------------------------------
// Column builders
// ---------------------------------------------------------------------------------------

/// A validity bitmap created at the first null.
#[derive(Default)]
struct Validity(Option<BooleanBufferBuilder>);

impl Validity {
    #[inline(always)]
    fn valid(&mut self) {
        if let Some(b) = &mut self.0 {
            b.append(true);
        }
    }

    /// Marks a null at row `len`.
    fn null(&mut self, len: usize) {
        let b = self.0.get_or_insert_with(|| {
            let mut b = BooleanBufferBuilder::new(len.max(1024));
            b.append_n(len, true);
            b
        });
        b.append(false);
    }

    fn truncate(&mut self, len: usize) {
        if let Some(b) = &mut self.0 {
            b.truncate(len);
        }
    }

    fn finish(self) -> Option<NullBuffer> {
        self.0.map(|mut b| NullBuffer::new(b.finish()))
    }
}

/// Values of a fixed-width column and their validity.
#[derive(Default)]
struct Prim<T> {
    values: Vec<T>,
    validity: Validity,
}

impl<T: Copy + Default> Prim<T> {
    #[inline(always)]
    fn push(&mut self, v: T) {
        self.values.push(v);
        self.validity.valid();
    }

    fn push_null(&mut self) {
        self.validity.null(self.values.len());
        self.values.push(T::default());
    }

    /// Pushes `text` parsed by `parse` (null texts are null).
    fn push_text(
        &mut self,
        text: &[u8],
        nulls: &NullSet,
        parse: fn(&[u8]) -> Option<T>,
        type_name: &str,
    ) -> Result<(), String> {
        if nulls.contains(text) {
            self.push_null();
            return Ok(());
        }
        let v = parse(text).ok_or_else(|| {
            format!(
                "cannot parse {:?} as {type_name}",
                String::from_utf8_lossy(text)
            )
        })?;
        self.push(v);
        Ok(())
    }

    fn truncate(&mut self, len: usize) {
        self.values.truncate(len);
        self.validity.truncate(len);
    }

    fn finish(self) -> (ScalarBuffer<T>, Option<NullBuffer>)
    where
        T: arrow::datatypes::ArrowNativeType,
    {
        (ScalarBuffer::from(self.values), self.validity.finish())
    }
}

fn check_utf8(text: &[u8]) -> Result<(), String> {
    match std::str::from_utf8(text) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("invalid UTF-8 ({e})")),
    }
}

/// A Utf8 column: offsets, value bytes and validity.
struct Utf8Col {
    offsets: Vec<i32>,
    bytes: Vec<u8>,
    validity: Validity,
}

impl Utf8Col {
    fn new() -> Self {
        Utf8Col {
            offsets: vec![0],
            bytes: Vec::new(),
            validity: Validity::default(),
        }
    }

    /// Pushes `text` (checked to be UTF-8).
    fn push(&mut self, text: &[u8]) -> Result<(), String> {
        check_utf8(text)?;
        self.bytes.extend_from_slice(text);
        self.end_value();
        Ok(())
    }

    /// Pushes the `len` bytes at `pos` of `buf`, known to be ASCII when `ascii`.
    #[inline(always)]
    fn push_from(&mut self, buf: &[u8], pos: usize, len: usize, ascii: bool) -> Result<(), String> {
        let text = buf.get(pos..pos + len).unwrap_or_default();
        if !ascii {
            check_utf8(text)?;
        }
        let old = self.bytes.len();
        match buf.get(pos..).and_then(|s| s.first_chunk::<16>()) {
            // A short value: copy a fixed 16 bytes (one move) and drop the excess.
            Some(chunk) if len <= 16 => {
                self.bytes.extend_from_slice(chunk);
                self.bytes.truncate(old + len);
            }
            _ => self.bytes.extend_from_slice(text),
        }
        self.end_value();
        Ok(())
    }

    #[inline(always)]
    fn end_value(&mut self) {
        self.offsets.push(self.bytes.len() as i32);
        self.validity.valid();
    }

    fn push_null(&mut self) {
        self.validity.null(self.offsets.len().saturating_sub(1));
        self.offsets.push(self.bytes.len() as i32);
    }

    fn truncate(&mut self, len: usize) {
        self.offsets.truncate(len + 1);
        let end = self.offsets.last().map_or(0, |&o| o as usize);
        self.bytes.truncate(end);
        self.validity.truncate(len);
    }

    fn finish(self) -> FrameResult<ArrayRef> {
        if self.bytes.len() > i32::MAX as usize {
            return Err(FrameError::InvalidArgument(format!(
                "a Utf8 column holds {} bytes in one range (over 2 GiB): read smaller ranges",
                self.bytes.len()
            )));
        }
        let offsets = OffsetBuffer::new(ScalarBuffer::from(self.offsets));
        let array = StringArray::try_new(
            offsets,
            Buffer::from_vec(self.bytes),
            self.validity.finish(),
        )?;
        Ok(Arc::new(array))
    }
}

/// One file column being parsed (or skipped).
enum Col {
    Skip,
    Int(Prim<i64>),
    Float(Prim<f64>),
    Bool(Prim<bool>),
    Date(Prim<i32>),
    Ts(Prim<i64>),
    Str(Utf8Col),
}

/// Applies `$body` to the builder of every parsed column kind but Utf8.
macro_rules! with_prim {
    ($col:expr, $b:ident => $body:expr, $str:ident => $str_body:expr, $skip:expr) => {
        match $col {
            Col::Int($b) | Col::Ts($b) => $body,
            Col::Float($b) => $body,
            Col::Bool($b) => $body,
            Col::Date($b) => $body,
            Col::Str($str) => $str_body,
            Col::Skip => $skip,
        }
    };
}

/// Parsing settings shared by every field.
struct Ctx {
    delim: u8,
    quote: u8,
    nulls: NullSet,
    /// Numbers are parsed in place without comparing them to the null texts.
    numbers_fast: bool,
}

impl Col {
    fn new(name: &str, dt: &DataType, selected: bool) -> FrameResult<Self> {
        Ok(match dt {
            _ if !selected => Col::Skip,
            DataType::Int64 => Col::Int(Prim::default()),
            DataType::Float64 => Col::Float(Prim::default()),
            DataType::Boolean => Col::Bool(Prim::default()),
            DataType::Date32 => Col::Date(Prim::default()),
            DataType::Timestamp(TimeUnit::Microsecond, None) => Col::Ts(Prim::default()),
            DataType::Utf8 => Col::Str(Utf8Col::new()),
            _ => return Err(unsupported(name, dt)),
        })
    }

    /// Pushes the unquoted field `buf[start..end]` (`ascii`: the buffer is known to be ASCII).
    #[inline(always)]
    fn read_known(
        &mut self,
        buf: &[u8],
        start: usize,
        end: usize,
        ctx: &Ctx,
        ascii: bool,
    ) -> Result<(), String> {
        let text = buf.get(start..end).unwrap_or_default();
        match self {
            Col::Skip => return Ok(()),
            Col::Int(b) if ctx.numbers_fast => {
                if let Some(v) = fast_int(text) {
                    b.push(v);
                    return Ok(());
                }
            }
            Col::Float(b) if ctx.numbers_fast => {
                if let Some(v) = fast_float(text) {
                    b.push(v);
                    return Ok(());
                }
            }
            Col::Str(s) => {
                if ctx.nulls.contains(text) {
                    s.push_null();
                    return Ok(());
                }
                return s.push_from(buf, start, text.len(), ascii);
            }
            _ => {}
        }
        self.push_text(text, false, ctx)
    }

    /// Pushes a field's text (`quoted`: it was quoted, so a Utf8 field is never null).
    fn push_text(&mut self, text: &[u8], quoted: bool, ctx: &Ctx) -> Result<(), String> {
        let nulls = &ctx.nulls;
        match self {
            Col::Skip => Ok(()),
            Col::Int(b) => b.push_text(text, nulls, parse_i64, "Int64"),
            Col::Float(b) => b.push_text(text, nulls, parse_f64, "Float64"),
            Col::Bool(b) => b.push_text(text, nulls, parse_bool, "Boolean"),
            Col::Date(b) => b.push_text(text, nulls, parse_date, "Date32 (YYYY-MM-DD)"),
            Col::Ts(b) => b.push_text(
                text,
                nulls,
                parse_timestamp,
                "Timestamp (YYYY-MM-DD HH:MM:SS[.fraction])",
            ),
            Col::Str(s) if !quoted && nulls.contains(text) => {
                s.push_null();
                Ok(())
            }
            Col::Str(s) => s.push(text),
        }
    }

    /// Sizes the buffers for `rows` more rows, given `parsed` rows so far.
    fn reserve(&mut self, rows: usize, parsed: usize) {
        with_prim!(self, b => {
            b.values.reserve(rows);
        }, s => {
            let per_row = s.bytes.len() / parsed.max(1) + 1;
            s.offsets.reserve(rows);
            s.bytes.reserve(rows.saturating_mul(per_row));
        }, ())
    }

    fn truncate(&mut self, len: usize) {
        with_prim!(self, b => b.truncate(len), s => s.truncate(len), ())
    }

    fn finish(self) -> FrameResult<Option<ArrayRef>> {
        Ok(Some(match self {
            Col::Skip => return Ok(None),
            Col::Int(b) => {
                let (v, n) = b.finish();
                Arc::new(Int64Array::new(v, n))
            }
            Col::Float(b) => {
                let (v, n) = b.finish();
                Arc::new(Float64Array::new(v, n))
            }
            Col::Bool(b) => {
                let values = BooleanBuffer::from_iter(b.values.iter().copied());
                Arc::new(BooleanArray::new(values, b.validity.finish()))
            }
            Col::Date(b) => {
                let (v, n) = b.finish();
                Arc::new(Date32Array::new(v, n))
            }
            Col::Ts(b) => {
                let (v, n) = b.finish();
                Arc::new(TimestampMicrosecondArray::new(v, n))
            }
            Col::Str(s) => s.finish()?,
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Range parsing
// ---------------------------------------------------------------------------------------

/// Why parsing stopped before a row's end.
#[derive(Debug)]
enum RowErr {
    /// A quoted field runs past the buffer: read more and parse the row at `.0` again.
    NeedMore(usize),
    /// The field at buffer position `pos` of column `col` is bad.
    Parse { pos: usize, col: usize, msg: String },
    /// The row at `row_start` has the wrong number of fields.
    FieldCount { row_start: usize },
}

/// Why a quoted field could not be read.
enum QuoteErr {
    NeedMore,
    Unterminated,
}

/// Reads the quoted field at `pos` (its opening quote) into `out`, unescaping doubled
/// quotes and keeping any bytes after the closing quote; returns its terminator position.
fn read_quoted(
    buf: &[u8],
    pos: usize,
    ctx: &Ctx,
    at_eof: bool,
    out: &mut Vec<u8>,
) -> Result<usize, QuoteErr> {
    out.clear();
    let missing = if at_eof {
        QuoteErr::Unterminated
    } else {
        QuoteErr::NeedMore
    };
    let mut i = pos + 1;
    loop {
        let rest = buf.get(i..).unwrap_or_default();
        let Some(k) = memchr::memchr(ctx.quote, rest) else {
            return Err(missing);
        };
        out.extend_from_slice(rest.get(..k).unwrap_or_default());
        i += k + 1;
        if byte_at(buf, i) != ctx.quote {
            break;
        }
        out.push(ctx.quote);
        i += 1;
    }
    let end = field_end(buf, i, ctx.delim);
    if end >= buf.len() {
        return Err(missing);
    }
    out.extend_from_slice(field_text(buf, i, end));
    Ok(end)
}

/// Parses rows into column builders.
struct RowParser {
    cols: Vec<Col>,
    ctx: Ctx,
    /// Unquoted text of a quoted field.
    scratch: Vec<u8>,
    rows: usize,
}

impl RowParser {
    /// Parses rows from `pos` while they start before `stop` and within `buf` (which ends
    /// with '\n'), at most until `max_rows` rows are held; returns where it stopped.
    /// On an error the builders are cut back to the rows before the bad one.
    fn parse_rows(
        &mut self,
        buf: &[u8],
        pos: usize,
        stop: usize,
        at_eof: bool,
        max_rows: usize,
    ) -> Result<usize, RowErr> {
        let rest = buf.get(pos..).unwrap_or_default();
        let ascii = rest.is_ascii();
        let limits = (stop, max_rows);
        let result = if memchr::memchr(self.ctx.quote, rest).is_none() {
            self.rows_unquoted(buf, pos, limits, ascii)
        } else {
            self.rows_quoted(buf, pos, limits, at_eof, ascii)
        };
        if result.is_err() {
            let rows = self.rows;
            self.cols.iter_mut().for_each(|c| c.truncate(rows));
        }
        result
    }

    /// [`Self::parse_rows`] for a buffer with no quote from `pos`: field ends come from
    /// [`Separators`].
    fn rows_unquoted(
        &mut self,
        buf: &[u8],
        mut pos: usize,
        (stop, max_rows): (usize, usize),
        ascii: bool,
    ) -> Result<usize, RowErr> {
        let RowParser {
            cols, ctx, rows, ..
        } = self;
        let last = cols.len().saturating_sub(1);
        let mut seps = Separators::new(buf, pos, ctx.delim);
        while pos < stop && pos < buf.len() && *rows < max_rows {
            if last > 0 {
                if let Some(next) = blank_line(buf, pos) {
                    seps.next();
                    pos = next;
                    continue;
                }
            }
            let row_start = pos;
            for (c, col) in cols.iter_mut().enumerate() {
                let end = seps.next();
                let expected = if c < last { ctx.delim } else { b'\n' };
                if byte_at(buf, end) != expected {
                    return Err(RowErr::FieldCount { row_start });
                }
                let text_end = if c == last {
                    trim_cr(buf, pos, end)
                } else {
                    end
                };
                col.read_known(buf, pos, text_end, ctx, ascii)
                    .map_err(|msg| RowErr::Parse { pos, col: c, msg })?;
                pos = end + 1;
            }
            *rows += 1;
        }
        Ok(pos)
    }

    /// [`Self::parse_rows`] for a buffer with quotes: fields are scanned one by one.
    fn rows_quoted(
        &mut self,
        buf: &[u8],
        mut pos: usize,
        (stop, max_rows): (usize, usize),
        at_eof: bool,
        ascii: bool,
    ) -> Result<usize, RowErr> {
        let multi = self.cols.len() > 1;
        while pos < stop && pos < buf.len() && self.rows < max_rows {
            if multi {
                if let Some(next) = blank_line(buf, pos) {
                    pos = next;
                    continue;
                }
            }
            pos = self.parse_row(buf, pos, at_eof, ascii)?;
            self.rows += 1;
        }
        Ok(pos)
    }

    /// Parses the row at `row_start` (fields may be quoted); returns the position after
    /// its '\n'.
    fn parse_row(
        &mut self,
        buf: &[u8],
        row_start: usize,
        at_eof: bool,
        ascii: bool,
    ) -> Result<usize, RowErr> {
        let RowParser {
            cols, ctx, scratch, ..
        } = self;
        let last = cols.len().saturating_sub(1);
        let mut pos = row_start;
        for (c, col) in cols.iter_mut().enumerate() {
            // The field's end must be a delimiter, or '\n' for the last column.
            let expected = if c < last { ctx.delim } else { b'\n' };
            let check = |end| {
                if byte_at(buf, end) == expected {
                    Ok(end)
                } else {
                    Err(RowErr::FieldCount { row_start })
                }
            };
            let bad = |msg| RowErr::Parse { pos, col: c, msg };
            let end = if byte_at(buf, pos) == ctx.quote {
                let end = match read_quoted(buf, pos, ctx, at_eof, scratch) {
                    Ok(end) => check(end)?,
                    Err(QuoteErr::NeedMore) => return Err(RowErr::NeedMore(row_start)),
                    Err(QuoteErr::Unterminated) => {
                        return Err(bad("unterminated quoted field".to_string()))
                    }
                };
                col.push_text(scratch, true, ctx).map_err(bad)?;
                end
            } else {
                let end = check(field_end(buf, pos, ctx.delim))?;
                let text_end = if c == last {
                    trim_cr(buf, pos, end)
                } else {
                    end
                };
                col.read_known(buf, pos, text_end, ctx, ascii)
                    .map_err(bad)?;
                end
            };
            pos = end + 1;
        }
        Ok(pos)
    }

    fn finish(self) -> FrameResult<Vec<Option<ArrayRef>>> {
        self.cols.into_iter().map(Col::finish).collect()
    }
}

/// The bytes of a range, read a block at a time: `buf` holds the file from `base`, up to
/// a '\n' (a synthetic one when the content ends without it).
struct Source<'a> {
    file: &'a File,
    path: &'a str,
    buf: Vec<u8>,
    base: u64,
    next: u64,
    limit: u64,
    eof: bool,
}

impl Source<'_> {
    /// Appends about `want` bytes (more if a line is longer), ending at a '\n'.
    fn fill(&mut self, mut want: u64) -> FrameResult<()> {
        let old_len = self.buf.len();
        while !self.eof {
            let to = self.next.saturating_add(want.max(1)).min(self.limit);
            read_append(
                self.file,
                self.path,
                self.next,
                to - self.next,
                &mut self.buf,
            )?;
            self.next = to;
            if to == self.limit {
                self.eof = true;
                if self.buf.last() != Some(&b'\n') {
                    self.buf.push(b'\n');
                }
            } else if let Some(p) =
                memchr::memrchr(b'\n', self.buf.get(old_len..).unwrap_or_default())
            {
                let keep = old_len + p + 1;
                self.next -= (self.buf.len() - keep) as u64;
                self.buf.truncate(keep);
                return Ok(());
            }
            want = want.saturating_mul(2);
        }
        Ok(())
    }

    /// Drops the first `n` bytes of the buffer (parsed rows).
    fn slide(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.drain(..n);
        self.base += n as u64;
    }
}

/// Parses the rows that start in [start, end) of the file: a row belongs to the range in
/// which its first byte lies (so the range first skips a partial row unless `start` is
/// `data_start` or follows a '\n', and it reads past `end` to finish its last row).
/// `file_schema` is what [`infer_schema`] returned; `projection` picks columns by index (in
/// that order), others are skipped without being converted. `data_start` is the offset
/// [`infer_schema`] returned.
///
/// Limitation: a quoted field may hold a newline only if it does not straddle a range
/// boundary (a range cannot tell a quoted newline from a row end); files with newlines
/// inside quoted fields must be read as one range (as Dask documents for its reader).
///
/// Errors (naming the path; lines are 1-based lines of the whole file): Io, FieldCount,
/// Parse (with the column name and the text that failed), InvalidArgument for a bad
/// projection or an unsupported column type.
pub fn read_range(
    path: &str,
    start: u64,
    end: u64,
    data_start: u64,
    file_schema: &Schema,
    projection: Option<&[usize]>,
    options: &CsvOptions,
) -> FrameResult<RecordBatch> {
    check_options(options)?;
    let ncols = file_schema.fields().len();
    if ncols == 0 {
        return Err(FrameError::InvalidArgument(
            "CSV schema has no columns".to_string(),
        ));
    }
    let all: Vec<usize> = (0..ncols).collect();
    let projection = projection.unwrap_or(&all);
    if let Some(&bad) = projection.iter().find(|&&i| i >= ncols) {
        return Err(FrameError::InvalidArgument(format!(
            "projection index {bad} out of range for {ncols} CSV columns"
        )));
    }
    let mut selected = vec![false; ncols];
    projection.iter().for_each(|&i| selected[i] = true);
    let cols = file_schema
        .fields()
        .iter()
        .zip(&selected)
        .map(|(f, &sel)| Col::new(f.name(), f.data_type(), sel))
        .collect::<FrameResult<Vec<_>>>()?;
    let nulls = NullSet::new(&options.null_values);
    let mut parser = RowParser {
        cols,
        ctx: Ctx {
            delim: options.delimiter,
            quote: options.quote,
            numbers_fast: nulls.numbers_never_null(),
            nulls,
        },
        scratch: Vec::new(),
        rows: 0,
    };
    let (file, file_len) = open(path)?;
    let limit = content_end(&file, path, file_len)?;
    let start = start.max(data_start);
    let end = end.min(limit);
    if start < end {
        let range = (start, end, data_start, limit);
        if let Some(e) = parse_range(&file, path, range, &mut parser)? {
            return Err(report(&file, path, file_schema, &parser.ctx, e)?);
        }
    }
    let rows = parser.rows;
    let arrays = parser.finish()?;
    let columns: Vec<ArrayRef> = projection
        .iter()
        .filter_map(|&i| arrays.get(i).cloned().flatten())
        .collect();
    let fields: Vec<Field> = projection
        .iter()
        .map(|&i| file_schema.field(i).clone())
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        file_schema.metadata().clone(),
    ));
    let batch_options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema,
        columns,
        &batch_options,
    )?)
}

/// A row error located in the file: the buffer, its file offset and the error.
struct Located {
    buf: Vec<u8>,
    base: u64,
    err: RowErr,
}

/// Reads and parses the rows starting in [start, end) (`range` is start, end, data_start and
/// the content's end, with start < end <= content end); returns the first bad row, if any.
fn parse_range(
    file: &File,
    path: &str,
    range: (u64, u64, u64, u64),
    parser: &mut RowParser,
) -> FrameResult<Option<Located>> {
    let (start, end, data_start, limit) = range;
    let from = if start > data_start { start - 1 } else { start };
    let mut src = Source {
        file,
        path,
        buf: Vec::new(),
        base: from,
        next: from,
        limit,
        eof: false,
    };
    src.fill(BLOCK.min(end - from + MARGIN))?;
    let mut pos = if start > data_start {
        memchr::memchr(b'\n', &src.buf).map_or(src.buf.len(), |p| p + 1)
    } else {
        0
    };
    let mut max_rows = SIZING_ROWS;
    loop {
        let first = pos;
        let stop = usize::try_from(end - src.base).unwrap_or(usize::MAX);
        match parser.parse_rows(&src.buf, pos, stop, src.eof, max_rows) {
            Ok(p) if parser.rows >= max_rows && p < stop => {
                // Size the columns for the whole range from the rows seen so far.
                let parsed = parser.rows;
                let per_row = (p - first) as f64 / parsed.max(1) as f64;
                let more = ((stop - p) as f64 / per_row.max(1.0) * 1.1) as usize + 16;
                parser.cols.iter_mut().for_each(|c| c.reserve(more, parsed));
                max_rows = usize::MAX;
                pos = p;
            }
            Ok(p) if p >= stop || src.eof => return Ok(None),
            Ok(p) => {
                // Every whole line of the block is parsed: read the next block.
                src.slide(p);
                pos = 0;
                src.fill(BLOCK.min(end - src.base + MARGIN))?;
            }
            Err(RowErr::NeedMore(row_start)) => {
                src.slide(row_start);
                pos = 0;
                src.fill((src.buf.len() as u64).max(BLOCK))?;
            }
            Err(err) => {
                return Ok(Some(Located {
                    buf: src.buf,
                    base: src.base,
                    err,
                }))
            }
        }
    }
}

/// The typed error for a row error, with its line number and column name.
fn report(
    file: &File,
    path: &str,
    schema: &Schema,
    ctx: &Ctx,
    e: Located,
) -> FrameResult<FrameError> {
    let Located { buf, base, err } = e;
    Ok(match err {
        RowErr::Parse { pos, col, msg } => FrameError::Parse {
            path: path.to_string(),
            line: line_of(file, path, base + pos as u64)?,
            column: schema
                .fields()
                .get(col)
                .map_or_else(String::new, |f| f.name().clone()),
            message: msg,
        },
        RowErr::FieldCount { row_start } => {
            let mut rec = Record::default();
            split_record(&buf, row_start, ctx.delim, ctx.quote, true, &mut rec);
            FrameError::FieldCount {
                path: path.to_string(),
                line: line_of(file, path, base + row_start as u64)?,
                expected: schema.fields().len(),
                found: rec.fields.len(),
            }
        }
        RowErr::NeedMore(_) => FrameError::Io {
            path: path.to_string(),
            message: "file ended inside a quoted field".to_string(),
        },
    })
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

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
/// [`read_range`] reads with the default [`CsvOptions`]: nulls are empty fields (`NA` in a
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::compute::concat_batches;
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
        read_range(path, ds, file_len(path), ds, &schema, None, o)
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

    #[test]
    fn infers_each_type() {
        let f = Tmp::new(
            b"i,f,b,d,t,s,n,m,x\n\
              1,1.5,true,2024-02-29,2024-02-29 12:00:00,a,,1,1\n\
              -7,2,False,1970-01-01,2024-03-01T00:00:01.5,b,NA,x,true\n\
              ,,,,2024-03-02,,,,\n",
        );
        let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
        assert_eq!(ds, 18);
        let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["i", "f", "b", "d", "t", "s", "n", "m", "x"]);
        use DataType::*;
        assert_eq!(
            types(&schema),
            [
                Int64,
                Float64,
                Boolean,
                Date32,
                ts(),
                Utf8,
                Utf8,
                Utf8,
                Utf8
            ]
        );
        let b = read(&f.0);
        assert_eq!(b.num_rows(), 3);
        let i = b.column(0).as_primitive::<Int64Type>();
        assert_eq!(i.iter().collect::<Vec<_>>(), [Some(1), Some(-7), None]);
        let fl = b.column(1).as_primitive::<Float64Type>();
        assert_eq!(fl.iter().collect::<Vec<_>>(), [Some(1.5), Some(2.0), None]);
        let bo = b.column(2).as_boolean();
        assert_eq!(
            bo.iter().collect::<Vec<_>>(),
            [Some(true), Some(false), None]
        );
        let d = b.column(3).as_primitive::<Date32Type>();
        assert_eq!(d.iter().collect::<Vec<_>>(), [Some(19782), Some(0), None]);
        let t = b.column(4).as_primitive::<TimestampMicrosecondType>();
        let day = 86_400_000_000i64;
        assert_eq!(
            t.iter().collect::<Vec<_>>(),
            [
                Some(19782 * day + 12 * 3_600_000_000),
                Some(19783 * day + 1_500_000),
                Some(19784 * day)
            ]
        );
        let s = b.column(5).as_string::<i32>();
        assert_eq!(s.iter().collect::<Vec<_>>(), [Some("a"), Some("b"), None]);
        assert_eq!(b.column(6).null_count(), 3);
    }

    #[test]
    fn only_first_infer_bytes_are_sampled() {
        let f = Tmp::new(b"a,b\n1,2\n3,x\n");
        let o = CsvOptions {
            infer_bytes: 5,
            ..CsvOptions::default()
        };
        let (schema, _) = infer_schema(&f.0, &o).unwrap();
        assert_eq!(types(&schema), [DataType::Int64, DataType::Int64]);
        let err = read_with(&f.0, &o).unwrap_err();
        assert_eq!(
            err,
            FrameError::Parse {
                path: f.0.clone(),
                line: 3,
                column: "b".into(),
                message: "cannot parse \"x\" as Int64".into()
            }
        );
        // A sample that cuts the first row extends to one whole row.
        let o = CsvOptions {
            infer_bytes: 2,
            ..CsvOptions::default()
        };
        let (schema, _) = infer_schema(&f.0, &o).unwrap();
        assert_eq!(types(&schema), [DataType::Int64, DataType::Int64]);
    }

    #[test]
    fn nulls_and_quotes() {
        let f = Tmp::new(
            b"s,n,q\n\
              NA,N/A,\"a,b\"\n\
              \"NA\",null,\"he said \"\"hi\"\"\"\n\
              \"\",\"\",\"\"\"\"\n\
              None,\"12\",x\"y\n",
        );
        let b = read(&f.0);
        assert_eq!(
            types(b.schema_ref()),
            [DataType::Utf8, DataType::Int64, DataType::Utf8]
        );
        assert_eq!(
            cells(&b),
            [
                ["∅", "∅", "a,b"],
                ["NA", "∅", "he said \"hi\""],
                ["", "∅", "\""],
                ["∅", "12", "x\"y"],
            ]
        );
    }

    #[test]
    fn custom_delimiter_quote_and_nulls() {
        let f = Tmp::new(b"a;b\n'x;y';-1\n'it''s';5\n");
        let o = CsvOptions {
            delimiter: b';',
            quote: b'\'',
            null_values: vec!["-1".into()],
            ..CsvOptions::default()
        };
        let b = read_with(&f.0, &o).unwrap();
        assert_eq!(cells(&b), [["x;y", "∅"], ["it's", "5"]]);
        assert!(!NullSet::new(&o.null_values).numbers_never_null());
    }

    #[test]
    fn crlf_no_final_newline_and_blank_lines() {
        let want = [["1", "x"], ["2", "y"], ["3", "z"]];
        for text in [
            &b"a,b\r\n1,x\r\n2,y\r\n3,z\r\n"[..],
            b"a,b\n1,x\n2,y\n3,z",
            b"a,b\r\n1,x\r\n2,y\r\n3,z",
            b"a,b\n1,x\n\n2,y\r\n\r\n3,z\n\n\r\n\n",
            b"\n\na,b\n1,x\n2,y\n3,z\n",
            b"\xEF\xBB\xBFa,b\n1,x\n2,y\n3,z\n",
        ] {
            let f = Tmp::new(text);
            let b = read(&f.0);
            assert_eq!(b.schema().field(0).name(), "a");
            assert_eq!(types(b.schema_ref()), [DataType::Int64, DataType::Utf8]);
            assert_eq!(cells(&b), want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn crlf_in_fast_paths() {
        let f = Tmp::new(b"a,b\r\n1,2.5\r\n-3,\r\n");
        let b = read(&f.0);
        assert_eq!(cells(&b), [["1", "2.5"], ["-3", "∅"]]);
    }

    #[test]
    fn single_column_blank_lines_are_nulls() {
        let f = Tmp::new(b"v\n1\n\n3\n\n\n");
        let b = read(&f.0);
        assert_eq!(cells(&b), [["1"], ["∅"], ["3"]]);
    }

    #[test]
    fn header_only_and_no_header() {
        for text in [&b"a,b\n"[..], b"a,b", b"a,b\r\n\r\n"] {
            let f = Tmp::new(text);
            let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
            assert_eq!(types(&schema), [DataType::Utf8, DataType::Utf8]);
            let ranges = split_ranges(ds, file_len(&f.0), 1 << 20);
            assert_eq!(ranges.len(), 1);
            let (s, e) = ranges[0];
            let b = read_range(&f.0, s, e, ds, &schema, None, &CsvOptions::default()).unwrap();
            assert_eq!((b.num_rows(), b.num_columns()), (0, 2));
        }
        let f = Tmp::new(b"1,x\n2,y\n");
        let o = CsvOptions {
            has_header: false,
            ..CsvOptions::default()
        };
        let (schema, ds) = infer_schema(&f.0, &o).unwrap();
        assert_eq!(ds, 0);
        assert_eq!(schema.field(1).name(), "column_2");
        let b = read_with(&f.0, &o).unwrap();
        assert_eq!(cells(&b), [["1", "x"], ["2", "y"]]);
        // An empty header name gets a positional name.
        let f = Tmp::new(b",b\n1,2\n");
        let (schema, _) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
        assert_eq!(schema.field(0).name(), "column_1");
    }

    #[test]
    fn projection_picks_columns_in_order() {
        let f = Tmp::new(b"a,b,c\n1,x,2.5\n2,\"y,z\",bad\n");
        let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
        let len = file_len(&f.0);
        let o = CsvOptions::default();
        let b = read_range(&f.0, ds, len, ds, &schema, Some(&[1, 0, 1]), &o).unwrap();
        let names: Vec<_> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["b", "a", "b"]);
        assert_eq!(cells(&b), [["x", "1", "x"], ["y,z", "2", "y,z"]]);
        let b = read_range(&f.0, ds, len, ds, &schema, Some(&[]), &o).unwrap();
        assert_eq!((b.num_rows(), b.num_columns()), (2, 0));
        let err = read_range(&f.0, ds, len, ds, &schema, Some(&[3]), &o).unwrap_err();
        assert!(matches!(err, FrameError::InvalidArgument(_)));
    }

    #[test]
    fn dtypes_override() {
        let f = Tmp::new(b"a,b,c\n1,2,2024-01-01\n3,4,2024-01-02\n");
        let o = CsvOptions {
            dtypes: vec![
                ("a".into(), DataType::Utf8),
                ("b".into(), DataType::Float64),
                ("c".into(), ts()),
            ],
            ..CsvOptions::default()
        };
        let b = read_with(&f.0, &o).unwrap();
        assert_eq!(
            types(b.schema_ref()),
            [DataType::Utf8, DataType::Float64, ts()]
        );
        assert_eq!(
            cells(&b),
            [
                ["1", "2.0", "2024-01-01T00:00:00"],
                ["3", "4.0", "2024-01-02T00:00:00"]
            ]
        );
        let o = CsvOptions {
            dtypes: vec![("zz".into(), DataType::Utf8)],
            ..CsvOptions::default()
        };
        assert_eq!(
            infer_schema(&f.0, &o).unwrap_err(),
            FrameError::ColumnNotFound {
                name: "zz".into(),
                available: vec!["a".into(), "b".into(), "c".into()]
            }
        );
        let o = CsvOptions {
            dtypes: vec![("a".into(), DataType::Int32)],
            ..CsvOptions::default()
        };
        assert!(matches!(
            infer_schema(&f.0, &o),
            Err(FrameError::InvalidArgument(_))
        ));
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(parse_date(b"1970-01-01"), Some(0));
        assert_eq!(parse_date(b"2000-03-01"), Some(11017));
        assert_eq!(parse_date(b"1969-12-31"), Some(-1));
        assert_eq!(parse_date(b"1900-03-01"), Some(-25508));
        assert_eq!(parse_date(b"2023-02-29"), None);
        assert_eq!(parse_date(b"2000-02-29"), Some(11016));
        assert_eq!(parse_date(b"1900-02-29"), None);
        assert_eq!(parse_date(b"2024-13-01"), None);
        assert_eq!(parse_date(b"2024-1-01"), None);
        let us = |d: i64, s: i64, f: i64| d * 86_400_000_000 + s * 1_000_000 + f;
        assert_eq!(
            parse_timestamp(b"2024-02-29T12:34:56.1234567"),
            Some(us(19782, 45296, 123456))
        );
        assert_eq!(
            parse_timestamp(b"2024-02-29 00:00:00.5"),
            Some(us(19782, 0, 500000))
        );
        assert_eq!(
            parse_timestamp(b"1969-12-31 23:59:59.999999999"),
            Some(us(-1, 86399, 999999))
        );
        assert_eq!(parse_timestamp(b"2024-02-29"), Some(us(19782, 0, 0)));
        for bad in [
            &b"2024-02-29 24:00:00"[..],
            b"2024-02-29 12:60:00",
            b"2024-02-29 12:00",
            b"2024-02-29 12:00:00.",
            b"2024-02-29 12:00:00.1234567890",
            b"2024-02-29 12:00:00.12x",
            b"2024-02-29X12:00:00",
        ] {
            assert_eq!(
                parse_timestamp(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        for z in [-800_000, -719_468, -1, 0, 1, 11016, 19782, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn fast_numbers_match_std() {
        // A linear congruential generator: many digit counts, decimal positions and signs.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        let mut checked = 0;
        for _ in 0..300_000 {
            let n = 1 + next() as usize % 20;
            let mut s: String = (0..n)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            if next() % 4 != 0 {
                let at = next() as usize % (n + 1);
                s.insert(at, '.');
            }
            if next() % 3 == 0 {
                s.insert(0, '-');
            }
            if let Some(v) = fast_float(s.as_bytes()) {
                let want: f64 = s.parse().unwrap();
                assert_eq!(v.to_bits(), want.to_bits(), "{s}");
                checked += 1;
            }
            if let Some(v) = fast_int(s.as_bytes()) {
                assert_eq!(Some(v), s.parse::<i64>().ok(), "{s}");
            }
        }
        assert!(checked > 100_000);
        for s in [
            "0.1",
            "9007199254740993",
            "0.30000000000000004",
            "-0.0",
            "5.",
            ".5",
            "1.2.3",
        ] {
            let got = fast_float(s.as_bytes()).map(f64::to_bits);
            assert!(
                got.is_none() || got == s.parse::<f64>().ok().map(f64::to_bits),
                "{s}"
            );
        }
        assert_eq!(fast_float(b"1.2.3"), None);
        assert_eq!(fast_float(b"-"), None);
        assert_eq!(fast_int(b"123456789012345678"), Some(123456789012345678));
        assert_eq!(fast_int(b"1234567890123456789"), None);
        assert_eq!(fast_int(b"12a"), None);
        assert_eq!(fast_int(b"-"), None);
    }

    #[test]
    fn separators_match_a_byte_scan() {
        let text: Vec<u8> = (0..1000u32)
            .map(|i| match (i * 7919) % 13 {
                0 => b',',
                1 => b'\n',
                2 => 0x80 | (i % 128) as u8,
                _ => b'a' + (i % 26) as u8,
            })
            .collect();
        for from in [0, 1, 63, 64, 65, 500, 999, 1000] {
            let mut seps = Separators::new(&text, from, b',');
            let want: Vec<usize> = (from..text.len())
                .filter(|&i| text[i] == b',' || text[i] == b'\n')
                .chain([text.len(), text.len()])
                .collect();
            let got: Vec<usize> = want.iter().map(|_| seps.next()).collect();
            assert_eq!(got, want, "from {from}");
            let mut i = from;
            for &w in want.iter().take(want.len() - 1) {
                assert_eq!(field_end(&text, i, b','), w);
                i = w + 1;
            }
        }
    }

    #[test]
    fn long_numbers_and_exponents_use_the_slow_path() {
        let f = Tmp::new(
            b"i,f\n9223372036854775807,1e300\n-9223372036854775808,0.1234567890123456789012\n",
        );
        let b = read(&f.0);
        let i = b.column(0).as_primitive::<Int64Type>();
        assert_eq!(i.values().to_vec(), [i64::MAX, i64::MIN]);
        let fl = b.column(1).as_primitive::<Float64Type>();
        let want: f64 = "0.1234567890123456789012".parse().unwrap();
        assert_eq!(fl.values().to_vec(), [1e300, want]);
    }

    /// A file exercising quotes, CRLF, blank lines and nulls, for the range tests.
    const MIXED: &[u8] = b"id,name,v,w\n\
        1,alpha,1.5,true\n\
        2,\"be,ta\",,false\r\n\
        \n\
        3,\"ga \"\"m\"\" ma\",-2.25,\n\
        4,,3,TRUE\n\
        5,NA,4e2,False\n\
        6,\"\",0.000001,true\n\
        7,omega,-0,false";

    #[test]
    fn every_range_split_gives_the_same_rows() {
        let f = Tmp::new(MIXED);
        let o = CsvOptions::default();
        let (schema, ds) = infer_schema(&f.0, &o).unwrap();
        let len = file_len(&f.0);
        let whole = read_range(&f.0, ds, len, ds, &schema, None, &o).unwrap();
        assert_eq!(whole.num_rows(), 7);
        let want = cells(&whole);
        for chunk in 1..=len {
            let ranges = split_ranges(ds, len, chunk);
            let batches: Vec<_> = ranges
                .iter()
                .map(|&(s, e)| read_range(&f.0, s, e, ds, &schema, None, &o).unwrap())
                .collect();
            let all = concat_batches(&Arc::new(schema.clone()), &batches).unwrap();
            assert_eq!(cells(&all), want, "chunk {chunk}");
        }
        for cut in 0..=len + 2 {
            let a = read_range(&f.0, ds, cut, ds, &schema, None, &o).unwrap();
            let b = read_range(&f.0, cut, len + 5, ds, &schema, None, &o).unwrap();
            let all = concat_batches(&Arc::new(schema.clone()), &[a, b]).unwrap();
            assert_eq!(cells(&all), want, "cut {cut}");
        }
    }

    #[test]
    fn quoted_newlines_in_one_range() {
        let f = Tmp::new(b"a,b\n1,\"x\ny\"\n2,\"\r\n\"\n");
        let b = read(&f.0);
        assert_eq!(cells(&b), [["1", "x\ny"], ["2", "\r\n"]]);
    }

    #[test]
    fn quoted_field_longer_than_a_block() {
        // Short rows first, so that the long field starts inside the first block.
        let short = "7,s\n".repeat(50_000);
        let long = "q".repeat(2 * BLOCK as usize) + "\n,\"\"";
        let text = format!("a,b\n{short}1,\"{}\"\n2,z\n", long.replace('"', "\"\""));
        let f = Tmp::new(text.as_bytes());
        let o = CsvOptions::default();
        let (schema, ds) = infer_schema(&f.0, &o).unwrap();
        let at = ds + short.len() as u64;
        let b = read_range(&f.0, at, at + 1, ds, &schema, None, &o).unwrap();
        assert_eq!(cells(&b), [["1".to_string(), long.clone()]]);
        let b = read_range(&f.0, ds, at + 1, ds, &schema, None, &o).unwrap();
        assert_eq!(b.num_rows(), 50_001);
        assert_eq!(cells(&b.slice(50_000, 1)), [["1".to_string(), long]]);
    }

    /// A file of several blocks with quoted rows here and there, CRLF line ends and nulls.
    #[test]
    fn many_rows_against_a_naive_sum() {
        let mut text = String::from("k,i,f\r\n");
        let (mut si, mut sf, mut nulls) = (0i64, 0i64, 0);
        let rows = 150_000i64;
        for r in 0..rows {
            let i = (r * 7919) % 100_003 - 50_000;
            let f = (r * 104_729) % 1_000_000_007;
            let key = if r % 5000 == 7 {
                "\"k,\"\"q\"\"\"".to_string()
            } else {
                format!("k{:05}", r % 97)
            };
            let int = if r % 3001 == 5 {
                nulls += 1;
                String::new()
            } else {
                si += i;
                i.to_string()
            };
            text += &format!("{key},{int},{}.{:06}\r\n", f / 1_000_000, f % 1_000_000);
            sf += f;
        }
        let f = Tmp::new(text.as_bytes());
        let o = CsvOptions::default();
        let (schema, ds) = infer_schema(&f.0, &o).unwrap();
        let len = file_len(&f.0);
        for chunk in [len, 1_500_007, 100_000, 65_536] {
            let (mut n, mut gi, mut gf, mut gnull, mut quoted) = (0, 0i64, 0i64, 0, 0);
            for (s, e) in split_ranges(ds, len, chunk) {
                let b = read_range(&f.0, s, e, ds, &schema, None, &o).unwrap();
                n += b.num_rows();
                let ints = b.column(1).as_primitive::<Int64Type>();
                gi += ints.iter().flatten().sum::<i64>();
                gnull += ints.null_count();
                let floats = b.column(2).as_primitive::<Float64Type>().values();
                gf += floats.iter().map(|v| (v * 1e6).round() as i64).sum::<i64>();
                let keys = b.column(0).as_string::<i32>();
                quoted += keys.iter().filter(|k| *k == Some("k,\"q\"")).count();
            }
            assert_eq!(
                (n, gi, gf, gnull),
                (rows as usize, si, sf, nulls),
                "chunk {chunk}"
            );
            assert_eq!(quoted, 30, "chunk {chunk}");
        }
    }

    #[test]
    fn errors_name_path_line_and_column() {
        let o = CsvOptions::default();
        let f = Tmp::new(b"a,b,c\n1,2,3\n4,5\n");
        let (schema, ds) = (
            Schema::new(vec![
                Field::new("a", DataType::Int64, true),
                Field::new("b", DataType::Int64, true),
                Field::new("c", DataType::Int64, true),
            ]),
            6,
        );
        let len = file_len(&f.0);
        let err = read_range(&f.0, ds, len, ds, &schema, None, &o).unwrap_err();
        let want = |line, found| FrameError::FieldCount {
            path: f.0.clone(),
            line,
            expected: 3,
            found,
        };
        assert_eq!(err, want(3, 2));
        assert_eq!(infer_schema(&f.0, &o).unwrap_err(), want(3, 2));
        let g = Tmp::new(b"a,b,c\n1,2,3\n\n7,8,9\n4,5,6,\"x,y\",7\n");
        let err = read_range(&g.0, 13, file_len(&g.0), ds, &schema, None, &o).unwrap_err();
        assert_eq!(
            err,
            FrameError::FieldCount {
                path: g.0.clone(),
                line: 5,
                expected: 3,
                found: 5
            }
        );
        let h = Tmp::new(b"a,b,c\n1,2,3\n4,x5,6\n");
        let err = read_range(&h.0, 8, file_len(&h.0), ds, &schema, None, &o).unwrap_err();
        assert_eq!(
            err,
            FrameError::Parse {
                path: h.0.clone(),
                line: 3,
                column: "b".into(),
                message: "cannot parse \"x5\" as Int64".into()
            }
        );
        let q = Tmp::new(b"a,b,c\n1,2,3\n4,5,\"6\n");
        let err = read_range(&q.0, ds, file_len(&q.0), ds, &schema, None, &o).unwrap_err();
        assert!(matches!(err, FrameError::Parse { line: 3, ref column, .. } if column == "c"));
        let missing = "/nonexistent/dir/x.csv";
        let err = infer_schema(missing, &o).unwrap_err();
        assert!(matches!(err, FrameError::Io { ref path, .. } if path == missing));
        let err = read_range(missing, 0, 1, 0, &schema, None, &o).unwrap_err();
        assert!(matches!(err, FrameError::Io { ref path, .. } if path == missing));
        for text in [&b""[..], b"\n\r\n\n"] {
            let e = Tmp::new(text);
            let err = infer_schema(&e.0, &o).unwrap_err();
            assert_eq!(err, FrameError::EmptyFile { path: e.0.clone() });
        }
        let bad = CsvOptions {
            quote: b',',
            ..CsvOptions::default()
        };
        assert!(matches!(
            infer_schema(&f.0, &bad),
            Err(FrameError::InvalidArgument(_))
        ));
    }

    #[test]
    fn dates_timestamps_bools_reject_bad_text() {
        let f = Tmp::new(b"d,t,b\n2024-01-01,2024-01-01 00:00:00,true\n2024-02-30,x,maybe\n");
        let o = CsvOptions {
            infer_bytes: 43,
            ..CsvOptions::default()
        };
        let (schema, _) = infer_schema(&f.0, &o).unwrap();
        assert_eq!(types(&schema), [DataType::Date32, ts(), DataType::Boolean]);
        let err = read_with(&f.0, &o).unwrap_err();
        assert!(
            matches!(err, FrameError::Parse { line: 3, ref column, ref message, .. }
            if column == "d" && message.contains("2024-02-30"))
        );
    }

    #[test]
    fn split_ranges_cover_the_data() {
        assert_eq!(split_ranges(10, 10, 4), [(10, 10)]);
        assert_eq!(split_ranges(10, 5, 4), [(10, 10)]);
        assert_eq!(split_ranges(0, 10, 4), [(0, 3), (3, 6), (6, 10)]);
        assert_eq!(split_ranges(2, 12, 0).len(), 10);
        let r = split_ranges(7, 1_000_003, 32 << 10);
        assert_eq!(r.first().unwrap().0, 7);
        assert_eq!(r.last().unwrap().1, 1_000_003);
        assert!(r.windows(2).all(|w| w[0].1 == w[1].0));
        assert!(r.iter().all(|(s, e)| e - s <= 32 << 10));
    }

    fn round_trip(batch: &RecordBatch) -> RecordBatch {
        let f = Tmp::new(b"");
        let (a, b) = (batch.slice(0, 1), batch.slice(1, batch.num_rows() - 1));
        write_csv(&f.0, &[a, b]).unwrap();
        let o = CsvOptions {
            dtypes: batch
                .schema()
                .fields()
                .iter()
                .map(|f| (f.name().clone(), f.data_type().clone()))
                .collect(),
            ..CsvOptions::default()
        };
        read_with(&f.0, &o).unwrap()
    }

    #[test]
    fn write_then_read_back() {
        let strs = [
            Some("plain"),
            Some(""),
            None,
            Some("NA"),
            Some("a,\"b\"\nc"),
            Some("é"),
        ];
        let batch = RecordBatch::try_from_iter([
            (
                "i",
                Arc::new(Int64Array::from(vec![
                    Some(i64::MIN),
                    Some(0),
                    None,
                    Some(-5),
                    Some(i64::MAX),
                    Some(7),
                ])) as ArrayRef,
            ),
            (
                "f",
                Arc::new(Float64Array::from(vec![
                    Some(0.1),
                    Some(1.0),
                    None,
                    Some(-0.0),
                    Some(1e-7),
                    Some(1e300),
                ])),
            ),
            ("s", Arc::new(StringArray::from(strs.to_vec()))),
            (
                "b",
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                    None,
                    Some(false),
                ])),
            ),
            (
                "d",
                Arc::new(Date32Array::from(vec![
                    Some(0),
                    Some(-1),
                    None,
                    Some(19782),
                    Some(-719468),
                    Some(2_932_896),
                ])),
            ),
            (
                "t, \"q\"",
                Arc::new(TimestampMicrosecondArray::from(vec![
                    Some(0),
                    Some(-1),
                    None,
                    Some(1_709_210_096_123_456),
                    Some(1_000_000),
                    Some(86_400_000_000 * 19782 + 500_000),
                ])),
            ),
        ])
        .unwrap();
        let back = round_trip(&batch);
        assert_eq!(back, batch);
        let f = back.column(1).as_primitive::<Float64Type>();
        assert!(f.value(3).is_sign_negative());
    }

    #[test]
    fn write_single_column_with_trailing_nulls() {
        let batch = RecordBatch::try_from_iter([(
            "v",
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3), None])) as ArrayRef,
        )])
        .unwrap();
        assert_eq!(round_trip(&batch), batch);
        let s = RecordBatch::try_from_iter([(
            "v",
            Arc::new(StringArray::from(vec![Some("x"), None, Some(""), None])) as ArrayRef,
        )])
        .unwrap();
        assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn write_other_types_and_errors() {
        let batch = RecordBatch::try_from_iter([
            (
                "a",
                Arc::new(arrow::array::Int32Array::from(vec![1, 2])) as ArrayRef,
            ),
            ("b", Arc::new(Int64Array::from(vec![3, 4]))),
        ])
        .unwrap();
        let f = Tmp::new(b"");
        write_csv(&f.0, std::slice::from_ref(&batch)).unwrap();
        assert_eq!(std::fs::read(&f.0).unwrap(), b"a,b\n1,3\n2,4\n");
        assert!(matches!(
            write_csv(&f.0, &[]),
            Err(FrameError::InvalidArgument(_))
        ));
        let other = batch.project(&[1, 0]).unwrap();
        assert!(matches!(
            write_csv(&f.0, &[batch.clone(), other]),
            Err(FrameError::InvalidArgument(_))
        ));
        let err = write_csv("/nonexistent/dir/out.csv", &[batch]).unwrap_err();
        assert!(matches!(err, FrameError::Io { .. }));
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let f = Tmp::new(b"a,b\nx,1\n\xff\xfe,2\n");
        let o = CsvOptions {
            infer_bytes: 8,
            ..CsvOptions::default()
        };
        let err = read_with(&f.0, &o).unwrap_err();
        assert!(matches!(err, FrameError::Parse { line: 3, ref column, .. } if column == "a"));
    }
}
