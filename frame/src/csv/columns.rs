//! Column builders: one per file column, filled field by field by the row parser.

use super::unsupported;
use super::values::{
    fast_float, fast_int, parse_bool, parse_date, parse_f64, parse_i64, parse_timestamp, NullSet,
};
use crate::error::{FrameError, FrameResult};
use arrow::array::{
    ArrayRef, BooleanArray, BooleanBufferBuilder, Date32Array, Float64Array, Int64Array,
    StringArray, TimestampMicrosecondArray,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, TimeUnit};
use std::sync::Arc;

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
pub(super) struct Prim<T> {
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
pub(super) struct Utf8Col {
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
pub(super) enum Col {
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
pub(super) struct Ctx {
    pub(super) delim: u8,
    pub(super) quote: u8,
    pub(super) nulls: NullSet,
    /// Numbers are parsed in place without comparing them to the null texts.
    pub(super) numbers_fast: bool,
}

impl Col {
    pub(super) fn new(name: &str, dt: &DataType, selected: bool) -> FrameResult<Self> {
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
    pub(super) fn read_known(
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
    pub(super) fn push_text(&mut self, text: &[u8], quoted: bool, ctx: &Ctx) -> Result<(), String> {
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
    pub(super) fn reserve(&mut self, rows: usize, parsed: usize) {
        with_prim!(self, b => {
            b.values.reserve(rows);
        }, s => {
            let per_row = s.bytes.len() / parsed.max(1) + 1;
            s.offsets.reserve(rows);
            s.bytes.reserve(rows.saturating_mul(per_row));
        }, ())
    }

    pub(super) fn truncate(&mut self, len: usize) {
        with_prim!(self, b => b.truncate(len), s => s.truncate(len), ())
    }

    pub(super) fn finish(self) -> FrameResult<Option<ArrayRef>> {
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
