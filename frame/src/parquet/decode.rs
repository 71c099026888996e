//! Tessera's own decoding of flat, required numeric columns: INT32, INT64, FLOAT and DOUBLE
//! values stored PLAIN or dictionary encoded, written once, straight into the column's
//! Arrow buffer.
//!
//! Arrow's reader fills a column's values with zeros before it decodes into them, and
//! reads a decimal stored as INT64 into an `Int64Array` that it then casts to `Decimal128`:
//! a second pass over memory twice the size (together 8–10% of TPC-H Q5 at SF10, `perf`,
//! 2026-12-03). Here each value is widened as it is written, once.
//! Nullable and nested columns, other types and other encodings are left to Arrow's reader.

use super::pages::{column_chunk, ChunkPages};
use arrow::array::{ArrayRef, PrimitiveArray};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Decimal128Type, Field, Float32Type, Float64Type,
    Int32Type, Int64Type,
};
use bytes::Bytes;
use parquet::basic::{ConvertedType, Encoding, LogicalType, Type as PhysicalType};
use parquet::column::page::{Page, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ParquetMetaData;
use parquet::schema::types::ColumnDescriptor;
use std::fs::File;
use std::marker::PhantomData;
use std::sync::Arc;

/// One column of a scan, read a number of rows at a time.
pub(super) trait ColumnRead: Send {
    /// The column's next `n` values; an error where it has fewer left.
    fn read(&mut self, n: usize) -> Result<ArrayRef>;
}

/// A reader of leaf column `column` in the row groups `groups` (in this order) of `file`,
/// whose footer is `metadata`, as the Arrow field `field`, where Tessera decodes that
/// column itself: required and not nested, of a numeric type read without conversion (or
/// a decimal widened from INT32 or INT64), its chunks encoded PLAIN or with a dictionary.
/// `None` where Arrow's reader is to read it.
pub(super) fn reader(
    file: &Arc<File>,
    metadata: &Arc<ParquetMetaData>,
    column: usize,
    field: &Field,
    groups: &[usize],
) -> Option<Box<dyn ColumnRead>> {
    let schema = metadata.file_metadata().schema_descr();
    if column >= schema.num_columns() {
        return None;
    }
    let descr = schema.column(column);
    if descr.max_def_level() != 0 || descr.max_rep_level() != 0 {
        return None;
    }
    let supported = |e: Encoding| {
        matches!(
            e,
            Encoding::PLAIN
                | Encoding::PLAIN_DICTIONARY
                | Encoding::RLE_DICTIONARY
                // Levels' encoding, listed by writers even for a required column.
                | Encoding::RLE
        )
    };
    let encoded = groups.iter().all(|&g| {
        metadata
            .row_groups()
            .get(g)
            .and_then(|g| g.columns().get(column))
            .is_some_and(|c| c.encodings().all(supported))
    });
    if !encoded {
        return None;
    }
    let chunks = Chunks {
        file: file.clone(),
        metadata: metadata.clone(),
        column,
        groups: Vec::from(groups).into_iter(),
        pages: None,
    };
    let data_type = field.data_type().clone();
    Some(match (descr.physical_type(), field.data_type()) {
        (PhysicalType::INT32, DataType::Int32) if integer(&descr, 32) => {
            boxed::<i32, Int32Type>(chunks, data_type)
        }
        (PhysicalType::INT32, DataType::Date32) if date(&descr) => {
            boxed::<i32, Date32Type>(chunks, data_type)
        }
        (PhysicalType::INT32, DataType::Decimal128(_, s)) if decimal(&descr, *s) => {
            boxed::<i32, Decimal128Type>(chunks, data_type)
        }
        (PhysicalType::INT64, DataType::Int64) if integer(&descr, 64) => {
            boxed::<i64, Int64Type>(chunks, data_type)
        }
        (PhysicalType::INT64, DataType::Decimal128(_, s)) if decimal(&descr, *s) => {
            boxed::<i64, Decimal128Type>(chunks, data_type)
        }
        (PhysicalType::FLOAT, DataType::Float32) if unannotated(&descr) => {
            boxed::<f32, Float32Type>(chunks, data_type)
        }
        (PhysicalType::DOUBLE, DataType::Float64) if unannotated(&descr) => {
            boxed::<f64, Float64Type>(chunks, data_type)
        }
        _ => return None,
    })
}

fn unannotated(descr: &ColumnDescriptor) -> bool {
    descr.logical_type_ref().is_none() && descr.converted_type() == ConvertedType::NONE
}

/// A signed integer of `bits` bits, stored in a physical type of that width.
fn integer(descr: &ColumnDescriptor, bits: i8) -> bool {
    let converted = match bits {
        32 => ConvertedType::INT_32,
        _ => ConvertedType::INT_64,
    };
    match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => int.bit_width == bits && int.is_signed,
        Some(_) => false,
        None => [ConvertedType::NONE, converted].contains(&descr.converted_type()),
    }
}

fn date(descr: &ColumnDescriptor) -> bool {
    match descr.logical_type_ref() {
        Some(logical) => matches!(logical, LogicalType::Date),
        None => descr.converted_type() == ConvertedType::DATE,
    }
}

/// A decimal of scale `scale`.
fn decimal(descr: &ColumnDescriptor, scale: i8) -> bool {
    let annotated = match descr.logical_type_ref() {
        Some(logical) => matches!(logical, LogicalType::Decimal { .. }),
        None => descr.converted_type() == ConvertedType::DECIMAL,
    };
    annotated && descr.type_scale() == i32::from(scale)
}

fn boxed<P: Stored, T: ArrowPrimitiveType>(
    chunks: Chunks,
    data_type: DataType,
) -> Box<dyn ColumnRead>
where
    T::Native: From<P>,
{
    Box::new(Values::<P, T> {
        chunks,
        array: PhantomData,
        data_type,
        dictionary: Vec::new(),
        page: PageValues::Plain {
            buf: Bytes::new(),
            at: 0,
            left: 0,
        },
    })
}

/// A value type as Parquet stores it, little-endian.
trait Stored: Copy + Send + 'static {
    const SIZE: usize;
    /// The value of `bytes`, `SIZE` long.
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! stored {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
        }
    )*};
}
stored!(i32, i64, f32, f64);

/// A column's chunks in the scan's row groups, read in turn.
struct Chunks {
    file: Arc<File>,
    metadata: Arc<ParquetMetaData>,
    column: usize,
    groups: std::vec::IntoIter<usize>,
    pages: Option<ChunkPages>,
}

impl Chunks {
    /// The column's next page, and whether it starts a chunk; `None` past the last.
    fn next_page(&mut self) -> Result<Option<(Page, bool)>> {
        let mut first = false;
        loop {
            if let Some(pages) = &mut self.pages {
                if let Some(page) = pages.get_next_page()? {
                    return Ok(Some((page, first)));
                }
                self.pages = None;
            }
            let Some(group) = self.groups.next() else {
                return Ok(None);
            };
            self.pages = Some(column_chunk(
                &self.file,
                &self.metadata,
                group,
                self.column,
            )?);
            first = true;
        }
    }
}

/// Values of stored type `P` read into an array of `T`, each widened by `From`.
struct Values<P, T: ArrowPrimitiveType> {
    chunks: Chunks,
    array: PhantomData<fn() -> T>,
    data_type: DataType,
    /// The current chunk's dictionary, as stored (widened as it is read: a dictionary may
    /// be as long as its chunk, and widening it first cost more than it saved).
    dictionary: Vec<P>,
    page: PageValues,
}

/// What is left of the current data page.
enum PageValues {
    /// `left` values stored as they are, from byte `at` of `buf`.
    Plain { buf: Bytes, at: usize, left: usize },
    /// `left` dictionary indices.
    Indices { runs: Hybrid, left: usize },
}

impl PageValues {
    fn left(&self) -> usize {
        match self {
            PageValues::Plain { left, .. } | PageValues::Indices { left, .. } => *left,
        }
    }
}

impl<P: Stored, T: ArrowPrimitiveType> ColumnRead for Values<P, T>
where
    T::Native: From<P>,
{
    fn read(&mut self, n: usize) -> Result<ArrayRef> {
        // Written once, never zeroed first.
        let mut out: Vec<T::Native> = Vec::with_capacity(n);
        while out.len() < n {
            let k = (n - out.len()).min(self.page.left());
            if k == 0 {
                self.next_page()?;
                continue;
            }
            match &mut self.page {
                PageValues::Plain { buf, at, left } => {
                    let end = *at + k * P::SIZE;
                    let stored = buf[*at..end].chunks_exact(P::SIZE);
                    out.extend(stored.map(|b| T::Native::from(P::from_le(b))));
                    (*at, *left) = (end, *left - k);
                }
                PageValues::Indices { runs, left } => {
                    runs.take(k, &self.dictionary, &mut out)?;
                    *left -= k;
                }
            }
        }
        let values = PrimitiveArray::<T>::new(ScalarBuffer::from(out), None);
        Ok(Arc::new(values.with_data_type(self.data_type.clone())))
    }
}

impl<P: Stored, T: ArrowPrimitiveType> Values<P, T>
where
    T::Native: From<P>,
{
    /// Moves to the column's next data page (reading a chunk's dictionary on the way).
    fn next_page(&mut self) -> Result<()> {
        loop {
            let Some((page, first)) = self.chunks.next_page()? else {
                return Err(general("a column ended before the rows of its row groups"));
            };
            if first {
                self.dictionary.clear();
            }
            let (buf, n, encoding) = match page {
                Page::DictionaryPage {
                    buf,
                    num_values,
                    encoding,
                    ..
                } => {
                    if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                        return Err(general(&format!("a dictionary page encoded {encoding}")));
                    }
                    let values = plain::<P>(&buf, num_values as usize)?;
                    self.dictionary.clear();
                    self.dictionary
                        .extend(values.chunks_exact(P::SIZE).map(P::from_le));
                    continue;
                }
                Page::DataPage {
                    buf,
                    num_values,
                    encoding,
                    ..
                } => (buf, num_values as usize, encoding),
                Page::DataPageV2 {
                    buf,
                    num_values,
                    num_nulls,
                    encoding,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    ..
                } => {
                    let levels = def_levels_byte_len as usize + rep_levels_byte_len as usize;
                    if num_nulls != 0 || levels > buf.len() {
                        return Err(general("a required column's page with nulls or levels"));
                    }
                    (buf.slice(levels..), num_values as usize, encoding)
                }
            };
            self.page = match encoding {
                Encoding::PLAIN => {
                    plain::<P>(&buf, n)?;
                    PageValues::Plain {
                        buf,
                        at: 0,
                        left: n,
                    }
                }
                Encoding::RLE_DICTIONARY | Encoding::PLAIN_DICTIONARY => PageValues::Indices {
                    runs: Hybrid::new(buf)?,
                    left: n,
                },
                other => {
                    return Err(ParquetError::NYI(format!(
                        "a numeric data page encoded {other}"
                    )))
                }
            };
            return Ok(());
        }
    }
}

/// The first `n` values of type `P` of `buf`, or an error where it holds fewer.
fn plain<P: Stored>(buf: &[u8], n: usize) -> Result<&[u8]> {
    n.checked_mul(P::SIZE)
        .and_then(|bytes| buf.get(..bytes))
        .ok_or_else(|| {
            general(&format!(
                "a page of {} bytes holds fewer than {n} values",
                buf.len()
            ))
        })
}

fn general(message: &str) -> ParquetError {
    ParquetError::General(message.to_string())
}

/// Dictionary indices in Parquet's RLE / bit-packed hybrid encoding, after the byte that
/// gives their bit width.
struct Hybrid {
    buf: Bytes,
    width: usize,
    /// Where the next run's header starts.
    at: usize,
    run: Run,
}

/// The current run of a [`Hybrid`].
enum Run {
    /// `left` repeats of one index.
    Repeat { index: usize, left: usize },
    /// Indices packed from byte `start` on: `done` of them read, `left` to read.
    Packed {
        start: usize,
        done: usize,
        left: usize,
    },
}

/// The most indices unpacked at a time (into a buffer on the stack).
const BLOCK: usize = 512;

impl Hybrid {
    fn new(buf: Bytes) -> Result<Hybrid> {
        let width = usize::from(
            *buf.first()
                .ok_or_else(|| general("a dictionary-encoded page without a bit width"))?,
        );
        if width > 32 {
            return Err(general(&format!("dictionary indices of {width} bits")));
        }
        Ok(Hybrid {
            buf,
            width,
            at: 1,
            run: Run::Repeat { index: 0, left: 0 },
        })
    }

    /// The values of the next `n` indices of `dictionary`, appended to `out`; an error for
    /// an index past the dictionary or indices that end early.
    fn take<P: Copy, O: Copy + From<P> + Default>(
        &mut self,
        mut n: usize,
        dictionary: &[P],
        out: &mut Vec<O>,
    ) -> Result<()> {
        while n > 0 {
            match &mut self.run {
                Run::Repeat { left: 0, .. } | Run::Packed { left: 0, .. } => self.next_run()?,
                Run::Repeat { index, left } => {
                    let k = n.min(*left);
                    let value = *dictionary.get(*index).ok_or_else(|| past(*index))?;
                    out.extend(std::iter::repeat_n(O::from(value), k));
                    (*left, n) = (*left - k, n - k);
                }
                Run::Packed { start, done, left } => {
                    let k = n.min(*left).min(BLOCK);
                    let mut indices = [0u32; BLOCK];
                    let packed = self.buf.get(*start..).unwrap_or_default();
                    unpack(packed, self.width, *done, &mut indices[..k]);
                    gather(&indices[..k], dictionary, out)?;
                    (*done, *left, n) = (*done + k, *left - k, n - k);
                }
            }
        }
        Ok(())
    }

    /// Reads the next run's header (and a repeated run's index).
    fn next_run(&mut self) -> Result<()> {
        let header = self.uleb128()?;
        let count = usize::try_from(header >> 1)
            .map_err(|_| general("a run longer than memory can hold"))?;
        if header & 1 == 1 {
            // `count` groups of 8 indices; a page's last group may stop short of its bytes.
            let start = self.at;
            let stored = (self.buf.len() - start) * 8;
            let values = count.saturating_mul(8);
            let left = match self.width {
                0 => values,
                w => values.min(stored / w),
            };
            self.run = Run::Packed {
                start,
                done: 0,
                left,
            };
            self.at = start
                .saturating_add(count.saturating_mul(self.width))
                .min(self.buf.len());
        } else {
            let size = self.width.div_ceil(8);
            let bytes = self
                .buf
                .get(self.at..self.at + size)
                .ok_or_else(|| general("dictionary indices ended inside a run"))?;
            let mut word = [0u8; 4];
            word[..size].copy_from_slice(bytes);
            self.run = Run::Repeat {
                index: u32::from_le_bytes(word) as usize,
                left: count,
            };
            self.at += size;
        }
        Ok(())
    }

    /// An unsigned LEB128 varint at `at`, moving past it.
    fn uleb128(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .buf
                .get(self.at)
                .ok_or_else(|| general("dictionary indices ended before the page's values"))?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(general("a run header longer than 10 bytes"))
    }
}

fn past(index: usize) -> ParquetError {
    general(&format!("dictionary index {index} past the dictionary"))
}

/// The values of `dictionary` at `indices`, appended to `out`; an error for an index past it.
fn gather<P: Copy, O: From<P> + Default>(
    indices: &[u32],
    dictionary: &[P],
    out: &mut Vec<O>,
) -> Result<()> {
    let mut bad = None;
    out.extend(indices.iter().map(|&i| match dictionary.get(i as usize) {
        Some(&v) => O::from(v),
        None => {
            bad = Some(i as usize);
            O::default()
        }
    }));
    bad.map_or(Ok(()), |i| Err(past(i)))
}

/// Indices `first..first + out.len()` of a packed run of `width`-bit indices stored in
/// `packed`, into `out`: whole groups of 8 by [`groups`], the rest one at a time.
fn unpack(packed: &[u8], width: usize, first: usize, out: &mut [u32]) {
    let mask = (1u64 << width) - 1;
    let one = |i: usize| unpack_one(packed, i * width, mask);
    let mut i = 0;
    while i < out.len() && !(first + i).is_multiple_of(8) {
        out[i] = one(first + i);
        i += 1;
    }
    let whole = (out.len() - i) / 8;
    let from = (first + i) / 8 * width;
    if packed.len() >= from + whole * width {
        groups_of(width, &packed[from..], &mut out[i..i + whole * 8]);
        i += whole * 8;
    }
    while i < out.len() {
        out[i] = one(first + i);
        i += 1;
    }
}

/// The `mask`-wide value at bit `bit` of `bytes` (bits past the end read as zeros).
#[inline]
fn unpack_one(bytes: &[u8], bit: usize, mask: u64) -> u32 {
    let at = bit >> 3;
    let word = match bytes.get(at..at + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().unwrap_or_default()),
        None => {
            let mut word = [0u8; 8];
            let tail = bytes.get(at..).unwrap_or_default();
            word[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(word)
        }
    };
    ((word >> (bit & 7)) & mask) as u32
}

/// `out.len() / 8` whole groups of 8 indices of `width` bits (`width` bytes a group) from
/// the start of `bytes` into `out`, by a loop made for that width.
fn groups_of(width: usize, bytes: &[u8], out: &mut [u32]) {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                $($w => groups::<$w>(bytes, out),)*
                _ => out.fill(0),
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
}

/// Bytes read for one group: its `W` (at most 32) and the 8 a word read at its last
/// index's byte may reach.
const GROUP_READ: usize = 40;

/// [`groups_of`] for width `W`: with the width known, each group's shifts are constants,
/// and its words are read from the page where it has [`GROUP_READ`] bytes left (a copy of
/// the group only near the page's end).
fn groups<const W: usize>(bytes: &[u8], out: &mut [u32]) {
    let mask = (1u64 << W) - 1;
    for (g, out) in out.chunks_exact_mut(8).enumerate() {
        let start = g * W;
        let copy = |from: &[u8]| {
            let mut word = [0u8; GROUP_READ];
            let group = from.get(..W).unwrap_or_default();
            word[..group.len()].copy_from_slice(group);
            word
        };
        let copied;
        let word: &[u8; GROUP_READ] = match bytes
            .get(start..start + GROUP_READ)
            .and_then(|window| window.try_into().ok())
        {
            Some(window) => window,
            None => {
                copied = copy(bytes.get(start..).unwrap_or_default());
                &copied
            }
        };
        for (j, o) in out.iter_mut().enumerate() {
            let (at, shift) = (j * W / 8, j * W % 8);
            let v = u64::from_le_bytes(word[at..at + 8].try_into().unwrap_or_default());
            *o = ((v >> shift) & mask) as u32;
        }
    }
}

#[cfg(test)]
mod tests;
