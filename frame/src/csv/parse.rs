//! Range parsing: the row parser, the block reader of a range, and error reports.

use super::columns::{Col, Ctx};
use super::file::{content_end, line_of, open, read_append};
use super::quotes::{walk, CsvRange, QuoteState, Syntax};
use super::text::{
    blank_line, byte_at, field_end, field_text, split_record, trim_cr, Record, Separators,
};
use super::values::NullSet;
use super::{check_options, CsvOptions, BLOCK, MARGIN, SIZING_ROWS};
use crate::error::{FrameError, FrameResult};
use arrow::array::ArrayRef;
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use std::fs::File;
use std::sync::Arc;

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

    /// The buffer position of the first row that starts in the range, when the buffer's
    /// first byte is the one before the range (read in `state`) and the range ends at `end`;
    /// None when no row starts in the range. Reads on (a block at a time, keeping only the
    /// last byte) while a quoted field goes on.
    fn first_row(
        &mut self,
        end: u64,
        mut state: QuoteState,
        syntax: Syntax,
    ) -> FrameResult<Option<usize>> {
        // A line end just before the range, with the range outside quotes, was read
        // outside quotes (inside, it would have left the range inside): a row starts here.
        if state == QuoteState::Outside && self.buf.first() == Some(&b'\n') {
            return Ok(Some(1));
        }
        loop {
            let prev = self.buf.first().copied().unwrap_or(b'\n');
            let rest = self.buf.get(1..).unwrap_or_default();
            match walk(rest, state, prev, syntax, true) {
                (_, Some(p)) => return Ok((self.base + 1 + (p as u64) < end).then_some(p + 1)),
                (s, None) => {
                    if self.eof || self.base + self.buf.len() as u64 >= end {
                        return Ok(None);
                    }
                    state = s;
                    self.slide(self.buf.len().saturating_sub(1));
                    self.fill(BLOCK)?;
                }
            }
        }
    }

    /// Drops the first `n` bytes of the buffer (parsed rows).
    fn slide(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.drain(..n);
        self.base += n as u64;
    }
}

/// Parses the rows that start in [range.start, range.end) of the file: a row belongs to the
/// range in which its first byte lies, so the range first skips the rest of a row begun
/// before it (unless it starts at `data_start`) and reads past its end to finish its last
/// row. `range.state` says whether `range.start` lies inside a quoted field, which
/// [`quote_ranges`](super::quote_ranges) finds; with it, quoted fields may hold line ends
/// anywhere, whatever the range boundaries (a range that lies inside one quoted field owns
/// no rows).
/// `file_schema` is what [`infer_schema`](super::infer_schema) returned; `projection` picks
/// columns by index (in that order), others are skipped without being converted.
/// `data_start` is the offset [`infer_schema`](super::infer_schema) returned.
///
/// Errors (naming the path; lines are 1-based lines of the whole file): Io, FieldCount,
/// Parse (with the column name and the text that failed; an unterminated quoted field is
/// reported at its line), InvalidArgument for a bad projection or an unsupported column type.
pub fn read_range(
    path: &str,
    range: CsvRange,
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
    let range = if range.start <= data_start {
        CsvRange {
            start: data_start,
            state: QuoteState::Outside,
            ..range
        }
    } else {
        range
    };
    let range = CsvRange {
        end: range.end.min(limit),
        ..range
    };
    if range.start < range.end {
        if let Some(e) = parse_range(&file, path, (range, data_start, limit), &mut parser)? {
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

/// Reads and parses the rows starting in the range (`span` is the range, data_start and the
/// content's end, with start < end <= content end); returns the first bad row, if any.
fn parse_range(
    file: &File,
    path: &str,
    span: (CsvRange, u64, u64),
    parser: &mut RowParser,
) -> FrameResult<Option<Located>> {
    let (range, data_start, limit) = span;
    let (start, end) = (range.start, range.end);
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
    let mut pos = 0;
    if start > data_start {
        let syntax = Syntax {
            quote: parser.ctx.quote,
            delim: parser.ctx.delim,
        };
        match src.first_row(end, range.state, syntax)? {
            Some(p) => pos = p,
            None => return Ok(None),
        }
    }
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
