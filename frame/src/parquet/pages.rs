//! The pages of the column chunks a scan reads, cut and decompressed by Tessera and handed
//! to Arrow's decoders through [`RowGroups`].
//!
//! Each column chunk is read with one positioned read. Its page headers are read by a small
//! Thrift compact-protocol reader of the fields a page needs, and its pages decompressed into
//! buffers taken from a pool: Arrow's own page reader decompresses each page into a new
//! buffer it first fills with zeros, 6–7% of TPC-H Q3 and Q6 at SF10 (`perf`, 2026-12-01).
//! A pooled buffer is zeroed once, when it first grows, and returns to the pool when the
//! decoder drops the page.

use bytes::Bytes;
use parquet::arrow::arrow_reader::RowGroups;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

/// The row groups `row_groups` of a file (`file`, whose footer is `metadata`), whose
/// column chunks are read by [`ChunkPages`].
pub(super) struct ScanRowGroups {
    pub(super) file: Arc<File>,
    pub(super) metadata: Arc<ParquetMetaData>,
    pub(super) row_groups: Vec<usize>,
}

impl RowGroups for ScanRowGroups {
    fn num_rows(&self) -> usize {
        self.row_groups()
            .map(|g| usize::try_from(g.num_rows()).unwrap_or(0))
            .sum()
    }

    fn column_chunks(&self, i: usize) -> Result<Box<dyn PageIterator>> {
        Ok(Box::new(ColumnPages {
            file: self.file.clone(),
            metadata: self.metadata.clone(),
            column: i,
            row_groups: self.row_groups.clone().into_iter(),
        }))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(
            self.row_groups
                .iter()
                .filter_map(|&g| self.metadata.row_groups().get(g)),
        )
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// One leaf column's chunks in the scan's row groups, in turn.
struct ColumnPages {
    file: Arc<File>,
    metadata: Arc<ParquetMetaData>,
    column: usize,
    row_groups: std::vec::IntoIter<usize>,
}

impl Iterator for ColumnPages {
    type Item = Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        let group = self.row_groups.next()?;
        Some(
            self.chunk(group)
                .map(|c| Box::new(c) as Box<dyn PageReader>),
        )
    }
}

impl PageIterator for ColumnPages {}

impl ColumnPages {
    /// The pages of this column's chunk in row group `group`.
    fn chunk(&self, group: usize) -> Result<ChunkPages> {
        column_chunk(&self.file, &self.metadata, group, self.column)
    }
}

/// The pages of leaf column `column`'s chunk in row group `group` of `file` (whose footer
/// is `metadata`), read with one positioned read.
pub(super) fn column_chunk(
    file: &File,
    metadata: &ParquetMetaData,
    group: usize,
    column: usize,
) -> Result<ChunkPages> {
    let chunk = metadata
        .row_groups()
        .get(group)
        .and_then(|g| g.columns().get(column))
        .ok_or_else(|| ParquetError::General(format!("no column {column} in row group {group}")))?;
    let (start, length) = chunk.byte_range();
    let length = usize::try_from(length)
        .map_err(|_| ParquetError::EOF(format!("a column chunk of {length} bytes")))?;
    let bytes = read_at(file, start, length)?;
    ChunkPages::new(bytes, chunk.compression())
}

/// `length` bytes of `file` from `start`, or an end-of-file error. Read into the
/// buffer's spare capacity: zeroing it first cost as much as a tenth of the copy.
fn read_at(file: &File, start: u64, length: usize) -> Result<Bytes> {
    let mut buffer: Vec<u8> = Vec::with_capacity(length);
    #[cfg(unix)]
    while buffer.len() < length {
        use std::os::fd::AsRawFd;
        let done = buffer.len();
        let spare = buffer.spare_capacity_mut();
        let offset = i64::try_from(start + done as u64)
            .map_err(|_| ParquetError::EOF(format!("offset {start} past the file")))?;
        // SAFETY: `spare` is writable memory of `spare.len()` bytes that `pread` fills
        // (uninitialised `u8`s may be written to), and `set_len` only counts what it wrote.
        let read = unsafe {
            libc::pread(
                file.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                offset,
            )
        };
        match read {
            0 => return Err(ParquetError::EOF(format!("{length} bytes from {start}"))),
            // SAFETY: `pread` wrote `n` bytes after the `done` already there.
            n if n > 0 => unsafe { buffer.set_len(done + n as usize) },
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e.into());
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file.try_clone()?;
        file.seek(SeekFrom::Start(start))?;
        file.take(length as u64).read_to_end(&mut buffer)?;
        if buffer.len() < length {
            return Err(ParquetError::EOF(format!("{length} bytes from {start}")));
        }
    }
    Ok(buffer.into())
}

/// The pages of one column chunk held in memory.
pub(super) struct ChunkPages {
    bytes: Bytes,
    /// Where the next page's header starts.
    at: usize,
    codec: Codec,
    /// The next page's header and body, once [`PageReader::peek_next_page`] has read it.
    peeked: Option<(Header, Range<usize>)>,
}

/// The compression codecs a chunk's pages may have.
#[derive(Clone, Copy)]
enum Codec {
    None,
    Snappy,
    Zstd,
}

impl ChunkPages {
    /// The pages of a column chunk's `bytes`, compressed with `compression`.
    pub(super) fn new(bytes: Bytes, compression: Compression) -> Result<ChunkPages> {
        let codec = match compression {
            Compression::UNCOMPRESSED => Codec::None,
            Compression::SNAPPY => Codec::Snappy,
            Compression::ZSTD(_) => Codec::Zstd,
            other => {
                return Err(ParquetError::NYI(format!(
                    "Parquet pages compressed with {other}"
                )));
            }
        };
        Ok(ChunkPages {
            bytes,
            at: 0,
            codec,
            peeked: None,
        })
    }

    /// The next data or dictionary page's header and body (index pages are passed over).
    fn next_header(&mut self) -> Result<Option<(Header, Range<usize>)>> {
        if let Some(next) = self.peeked.take() {
            return Ok(Some(next));
        }
        while self.at < self.bytes.len() {
            let mut reader = Thrift::new(&self.bytes[self.at..]);
            let header = Header::read(&mut reader)?;
            let start = self.at + reader.at;
            let end = usize::try_from(header.compressed_size)
                .ok()
                .and_then(|n| start.checked_add(n))
                .filter(|&end| end <= self.bytes.len())
                .ok_or_else(|| {
                    ParquetError::EOF(format!(
                        "a page of {} bytes past its column chunk",
                        header.compressed_size
                    ))
                })?;
            self.at = end;
            if !matches!(header.kind, Kind::Index) {
                return Ok(Some((header, start..end)));
            }
        }
        Ok(None)
    }

    /// The page of `header` whose stored bytes are `body`.
    fn page(&self, header: Header, body: Range<usize>) -> Result<Page> {
        let stored = self.bytes.slice(body);
        let size = usize::try_from(header.uncompressed_size)
            .map_err(|_| general("a negative page size"))?;
        match header.kind {
            Kind::Dictionary {
                num_values,
                encoding,
            } => Ok(Page::DictionaryPage {
                buf: self.decompress(stored, 0, size, true)?,
                num_values: count(num_values)?,
                encoding: encoding_of(encoding)?,
                is_sorted: false,
            }),
            Kind::Data(v1) => Ok(Page::DataPage {
                buf: self.decompress(stored, 0, size, true)?,
                num_values: count(v1.num_values)?,
                encoding: encoding_of(v1.encoding)?,
                def_level_encoding: encoding_of(v1.def_level_encoding)?,
                rep_level_encoding: encoding_of(v1.rep_level_encoding)?,
                statistics: None,
            }),
            Kind::DataV2(v2) => {
                let (def_levels, rep_levels) =
                    (count(v2.def_levels_length)?, count(v2.rep_levels_length)?);
                let levels = def_levels as usize + rep_levels as usize;
                Ok(Page::DataPageV2 {
                    buf: self.decompress(stored, levels, size, v2.is_compressed)?,
                    num_values: count(v2.num_values)?,
                    encoding: encoding_of(v2.encoding)?,
                    num_nulls: count(v2.num_nulls)?,
                    num_rows: count(v2.num_rows)?,
                    def_levels_byte_len: def_levels,
                    rep_levels_byte_len: rep_levels,
                    // The levels are never compressed and the values are now not.
                    is_compressed: false,
                    statistics: None,
                })
            }
            Kind::Index => Err(general("an index page read as data")),
        }
    }

    /// The page `stored`, whose first `levels` bytes are stored as they are and the rest
    /// compressed with the chunk's codec where `compressed`, as `size` bytes.
    fn decompress(
        &self,
        stored: Bytes,
        levels: usize,
        size: usize,
        compressed: bool,
    ) -> Result<Bytes> {
        if matches!(self.codec, Codec::None) || !compressed || levels == size {
            return Ok(stored);
        }
        if levels > size || levels > stored.len() {
            return Err(general("page levels longer than the page"));
        }
        let input = &stored[levels..];
        let expected = match self.codec {
            Codec::Snappy => Some(
                snap::raw::decompress_len(input)
                    .map_err(|e| ParquetError::External(Box::new(e)))?,
            ),
            Codec::Zstd => zstd::zstd_safe::get_frame_content_size(input)
                .ok()
                .flatten()
                .and_then(|n| usize::try_from(n).ok()),
            Codec::None => None,
        };
        // A damaged header's size is caught before a buffer of that size is made.
        if expected.is_some_and(|n| levels + n != size) {
            return Err(general(&format!(
                "a page's values decompress to {} bytes, its header says {}",
                expected.unwrap_or_default(),
                size - levels
            )));
        }
        let mut buffer = PooledBuffer::take(size);
        let out = buffer.as_mut();
        out[..levels].copy_from_slice(&stored[..levels]);
        let output = &mut out[levels..];
        let written = match self.codec {
            Codec::Snappy => snap::raw::Decoder::new()
                .decompress(input, output)
                .map_err(|e| ParquetError::External(Box::new(e)))?,
            Codec::Zstd => zstd_decompress(input, output)?,
            Codec::None => 0,
        };
        if levels + written != size {
            return Err(general(&format!(
                "a page decompressed to {} bytes, its header says {size}",
                levels + written
            )));
        }
        Ok(Bytes::from_owner(buffer))
    }
}

/// `input`, a zstd frame, decompressed into `output`: the bytes written.
fn zstd_decompress(input: &[u8], output: &mut [u8]) -> Result<usize> {
    thread_local! {
        static CONTEXT: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { RefCell::new(None) };
    }
    CONTEXT.with(|context| {
        let mut context = context.borrow_mut();
        let decompressor = match context.as_mut() {
            Some(d) => d,
            None => context.insert(zstd::bulk::Decompressor::new()?),
        };
        Ok(decompressor.decompress_to_buffer(input, output)?)
    })
}

impl Iterator for ChunkPages {
    type Item = Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for ChunkPages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        match self.next_header()? {
            Some((header, body)) => self.page(header, body).map(Some),
            None => Ok(None),
        }
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        let next = self.next_header()?;
        let metadata = next.as_ref().map(|(header, _)| match &header.kind {
            Kind::Data(v1) => PageMetadata {
                num_rows: None,
                num_levels: usize::try_from(v1.num_values).ok(),
                is_dict: false,
            },
            Kind::DataV2(v2) => PageMetadata {
                num_rows: usize::try_from(v2.num_rows).ok(),
                num_levels: usize::try_from(v2.num_values).ok(),
                is_dict: false,
            },
            Kind::Dictionary { .. } | Kind::Index => PageMetadata {
                num_rows: None,
                num_levels: None,
                is_dict: true,
            },
        });
        self.peeked = next;
        Ok(metadata)
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.next_header().map(drop)
    }
}

fn general(message: &str) -> ParquetError {
    ParquetError::General(message.to_string())
}

/// A count from a page header, which must not be negative.
fn count(n: i32) -> Result<u32> {
    u32::try_from(n).map_err(|_| general(&format!("a page header's count of {n}")))
}

fn encoding_of(code: i32) -> Result<Encoding> {
    Encoding::VARIANTS
        .iter()
        .copied()
        .find(|e| *e as i32 == code)
        .ok_or_else(|| general(&format!("unknown Parquet encoding {code}")))
}

/// Decompressed pages' buffers, kept for the next page when a decoder drops one.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// The most buffers the pool keeps (a page is at most ~1 MiB as Arrow and most writers
/// write them; a scan's threads hold a page and a dictionary per column they read).
const POOL_BUFFERS: usize = 32;
/// Buffers over this size are not kept (so the pool holds at most 64 MiB).
const POOL_BUFFER_BYTES: usize = 2 << 20;

/// A buffer of the pool, holding `len` bytes of a page.
struct PooledBuffer {
    buffer: Vec<u8>,
    len: usize,
}

impl PooledBuffer {
    /// A buffer of `len` bytes (whatever they hold), from the pool where it has one.
    fn take(len: usize) -> PooledBuffer {
        let pooled = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let mut buffer = pooled.unwrap_or_default();
        if buffer.len() < len {
            buffer.resize(len, 0);
        }
        PooledBuffer { buffer, len }
    }
}

impl AsMut<[u8]> for PooledBuffer {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buffer[..self.len]
    }
}

impl AsRef<[u8]> for PooledBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.buffer[..self.len]
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if self.buffer.len() > POOL_BUFFER_BYTES {
            return;
        }
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOL_BUFFERS {
            pool.push(std::mem::take(&mut self.buffer));
        }
    }
}

/// What a page header says: its kind, with the kind's own fields, and its sizes.
struct Header {
    kind: Kind,
    uncompressed_size: i32,
    compressed_size: i32,
}

enum Kind {
    Data(DataV1),
    DataV2(DataV2),
    Dictionary { num_values: i32, encoding: i32 },
    Index,
}

#[derive(Default)]
struct DataV1 {
    num_values: i32,
    encoding: i32,
    def_level_encoding: i32,
    rep_level_encoding: i32,
}

struct DataV2 {
    num_values: i32,
    num_nulls: i32,
    num_rows: i32,
    encoding: i32,
    def_levels_length: i32,
    rep_levels_length: i32,
    is_compressed: bool,
}

impl Default for DataV2 {
    fn default() -> Self {
        DataV2 {
            num_values: 0,
            num_nulls: 0,
            num_rows: 0,
            encoding: 0,
            def_levels_length: 0,
            rep_levels_length: 0,
            // Parquet's default where the field is absent.
            is_compressed: true,
        }
    }
}

/// The page types of Parquet's `PageType`.
const DATA_PAGE: i32 = 0;
const INDEX_PAGE: i32 = 1;
const DICTIONARY_PAGE: i32 = 2;
const DATA_PAGE_V2: i32 = 3;

impl Header {
    /// A `PageHeader` struct read from `t` (statistics and unknown fields passed over).
    fn read(t: &mut Thrift) -> Result<Header> {
        let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
        let (mut v1, mut v2, mut dictionary) = (None, None, None);
        t.fields(|t, id, ty| {
            match (id, ty) {
                (1, I32) => kind = Some(t.i32()?),
                (2, I32) => uncompressed = Some(t.i32()?),
                (3, I32) => compressed = Some(t.i32()?),
                (5, STRUCT) => v1 = Some(DataV1::read(t)?),
                (7, STRUCT) => {
                    let (mut n, mut e) = (0, 0);
                    t.fields(|t, id, ty| {
                        match (id, ty) {
                            (1, I32) => n = t.i32()?,
                            (2, I32) => e = t.i32()?,
                            _ => t.skip(ty)?,
                        }
                        Ok(())
                    })?;
                    dictionary = Some((n, e));
                }
                (8, STRUCT) => v2 = Some(DataV2::read(t)?),
                _ => t.skip(ty)?,
            }
            Ok(())
        })?;
        let missing = |what: &str| general(&format!("a page header without its {what}"));
        let kind = match kind.ok_or_else(|| missing("type"))? {
            DATA_PAGE => Kind::Data(v1.ok_or_else(|| missing("data page header"))?),
            DATA_PAGE_V2 => Kind::DataV2(v2.ok_or_else(|| missing("data page v2 header"))?),
            DICTIONARY_PAGE => {
                let (num_values, encoding) =
                    dictionary.ok_or_else(|| missing("dictionary page header"))?;
                Kind::Dictionary {
                    num_values,
                    encoding,
                }
            }
            INDEX_PAGE => Kind::Index,
            other => return Err(general(&format!("unknown Parquet page type {other}"))),
        };
        Ok(Header {
            kind,
            uncompressed_size: uncompressed.ok_or_else(|| missing("uncompressed size"))?,
            compressed_size: compressed.ok_or_else(|| missing("compressed size"))?,
        })
    }
}

impl DataV1 {
    fn read(t: &mut Thrift) -> Result<DataV1> {
        let mut v = DataV1::default();
        t.fields(|t, id, ty| {
            match (id, ty) {
                (1, I32) => v.num_values = t.i32()?,
                (2, I32) => v.encoding = t.i32()?,
                (3, I32) => v.def_level_encoding = t.i32()?,
                (4, I32) => v.rep_level_encoding = t.i32()?,
                _ => t.skip(ty)?,
            }
            Ok(())
        })?;
        Ok(v)
    }
}

impl DataV2 {
    fn read(t: &mut Thrift) -> Result<DataV2> {
        let mut v = DataV2::default();
        t.fields(|t, id, ty| {
            match (id, ty) {
                (1, I32) => v.num_values = t.i32()?,
                (2, I32) => v.num_nulls = t.i32()?,
                (3, I32) => v.num_rows = t.i32()?,
                (4, I32) => v.encoding = t.i32()?,
                (5, I32) => v.def_levels_length = t.i32()?,
                (6, I32) => v.rep_levels_length = t.i32()?,
                (7, TRUE) => v.is_compressed = true,
                (7, FALSE) => v.is_compressed = false,
                _ => t.skip(ty)?,
            }
            Ok(())
        })?;
        Ok(v)
    }
}

/// Thrift compact-protocol type codes.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// How deep structs and containers may nest before a header is taken for corrupt.
const MAX_DEPTH: usize = 32;

/// A reader of Thrift's compact protocol over bytes.
struct Thrift<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Thrift<'a> {
    fn new(bytes: &'a [u8]) -> Thrift<'a> {
        Thrift {
            bytes,
            at: 0,
            depth: 0,
        }
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .bytes
            .get(self.at)
            .ok_or_else(|| ParquetError::EOF("a page header cut short".to_string()))?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(general("a page header's integer is too long"))
    }

    fn zigzag(&mut self) -> Result<i64> {
        let n = self.varint()?;
        Ok((n >> 1) as i64 ^ -((n & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32> {
        i32::try_from(self.zigzag()?).map_err(|_| general("a page header's i32 out of range"))
    }

    fn advance(&mut self, n: usize) -> Result<()> {
        match self
            .at
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len())
        {
            Some(end) => {
                self.at = end;
                Ok(())
            }
            None => Err(ParquetError::EOF("a page header cut short".to_string())),
        }
    }

    /// Calls `field(self, id, type)` for each field of the struct that starts here, up to
    /// its stop; `field` reads or skips the field's value.
    fn fields(&mut self, mut field: impl FnMut(&mut Self, i16, u8) -> Result<()>) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(general("a page header nested too deep"));
        }
        let mut last = 0i16;
        loop {
            let b = self.byte()?;
            if b == 0 {
                break;
            }
            let (delta, ty) = (b >> 4, b & 0x0f);
            let id = match delta {
                0 => i16::try_from(self.zigzag()?)
                    .map_err(|_| general("a page header's field id out of range"))?,
                d => last.wrapping_add(i16::from(d)),
            };
            last = id;
            field(self, id, ty)?;
        }
        self.depth -= 1;
        Ok(())
    }

    /// Passes over a value of type `ty`.
    fn skip(&mut self, ty: u8) -> Result<()> {
        match ty {
            TRUE | FALSE => Ok(()),
            BYTE => self.advance(1),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.advance(8),
            BINARY => {
                let n = self.varint()?;
                self.advance(usize::try_from(n).map_err(|_| general("a binary too long"))?)
            }
            LIST | SET => {
                let b = self.byte()?;
                let n = match b >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.skip_values(n, &[b & 0x0f])
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let b = self.byte()?;
                self.skip_values(n, &[b >> 4, b & 0x0f])
            }
            STRUCT => self.fields(|t, _, ty| t.skip(ty)),
            other => Err(general(&format!(
                "unknown Thrift type {other} in a page header"
            ))),
        }
    }

    /// Passes over `n` container elements of the types `types` each (a map's key and value).
    fn skip_values(&mut self, n: u64, types: &[u8]) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(general("a page header nested too deep"));
        }
        for _ in 0..n {
            for &ty in types {
                match ty {
                    // In a container a boolean is a byte of its own.
                    TRUE | FALSE => self.advance(1)?,
                    ty => self.skip(ty)?,
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet::{read_batches, ParquetScan};
    use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::basic::ZstdLevel;
    use parquet::file::properties::{WriterProperties, WriterVersion};

    /// 2,500 rows: unique integers, strings of 13 values with nulls, floats with nulls.
    fn table() -> RecordBatch {
        let n = 2500i64;
        let i = Int64Array::from((0..n).map(|v| v * 7919 % 10007).collect::<Vec<_>>());
        let s: StringArray = (0..n)
            .map(|v| (v % 11 != 3).then(|| format!("name {}", v % 13)))
            .collect();
        let f: Float64Array = (0..n)
            .map(|v| (v % 5 != 0).then_some(v as f64 / 8.0))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
        ]));
        let columns: Vec<ArrayRef> = vec![Arc::new(i), Arc::new(s), Arc::new(f)];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    /// A file in the temporary directory, named for this process (each test removes its own).
    fn path(name: &str) -> String {
        let file = format!("tessera-pq-pages-{}-{name}", std::process::id());
        std::env::temp_dir()
            .join(file)
            .to_str()
            .unwrap()
            .to_string()
    }

    /// `batch` written to `path` in row groups of 700 rows and pages of at most 100 rows.
    fn write(
        path: &str,
        batch: &RecordBatch,
        compression: Compression,
        version: WriterVersion,
        dictionary: bool,
    ) {
        let props = WriterProperties::builder()
            .set_compression(compression)
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_max_row_group_row_count(Some(700))
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(50)
            .build();
        let file = File::create(path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn every_codec_page_version_and_encoding_reads_back_what_was_written() {
        let batch = table();
        let codecs = [
            Compression::UNCOMPRESSED,
            Compression::SNAPPY,
            Compression::ZSTD(ZstdLevel::default()),
        ];
        let versions = [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0];
        for (k, (codec, (version, dictionary))) in codecs
            .iter()
            .flat_map(|c| {
                versions
                    .iter()
                    .flat_map(move |v| [(c, (v, true)), (c, (v, false))])
            })
            .enumerate()
        {
            let path = path(&format!("t{k}.parquet"));
            write(&path, &batch, *codec, *version, dictionary);
            let case = format!("{codec} {version:?} dictionary {dictionary}");
            // Every row group, the columns reordered, in batches across row groups.
            let scan = ParquetScan {
                path: path.clone(),
                row_groups: vec![0, 1, 2, 3],
                columns: Some(vec!["f".into(), "i".into(), "s".into()]),
            };
            let read: Vec<RecordBatch> = read_batches(&scan, 900)
                .unwrap()
                .collect::<crate::error::FrameResult<_>>()
                .unwrap();
            let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
            let expected = batch.project(&[2, 0, 1]).unwrap();
            assert_eq!(read.num_rows(), expected.num_rows(), "{case}");
            for c in 0..3 {
                assert_eq!(
                    read.column(c).to_data(),
                    expected.column(c).to_data(),
                    "{case}: column {c}"
                );
            }
            // Two row groups of the middle, one column.
            let scan = ParquetScan {
                path: path.clone(),
                row_groups: vec![1, 2],
                columns: Some(vec!["s".into()]),
            };
            let read: Vec<RecordBatch> = read_batches(&scan, 10_000)
                .unwrap()
                .collect::<crate::error::FrameResult<_>>()
                .unwrap();
            assert_eq!(read.len(), 1, "{case}");
            assert_eq!(
                read[0].column(0).to_data(),
                batch.column(1).slice(700, 1400).to_data(),
                "{case}"
            );
            std::fs::remove_file(&path).unwrap();
        }
    }

    /// Every page of `bytes` (a column chunk compressed with `codec`), or the first error.
    fn pages(bytes: Bytes, codec: Compression) -> Result<Vec<Page>> {
        ChunkPages::new(bytes, codec)?.collect()
    }

    #[test]
    fn a_damaged_column_chunk_reads_as_an_error_not_a_panic() {
        let batch = table();
        for (k, codec) in [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())]
            .into_iter()
            .enumerate()
        {
            let path = path(&format!("damaged{k}.parquet"));
            write(&path, &batch, codec, WriterVersion::PARQUET_2_0, true);
            let file = File::open(&path).unwrap();
            let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
                .parse_and_finish(&file)
                .unwrap();
            let (start, length) = metadata.row_group(0).column(1).byte_range();
            let chunk = read_at(&file, start, length as usize).unwrap();
            let whole = pages(chunk.clone(), codec).unwrap();
            // A dictionary page, then data pages of at most 100 rows for 700 rows.
            assert!(matches!(
                whole[0],
                Page::DictionaryPage { num_values: 13, .. }
            ));
            let values: u32 = whole[1..].iter().map(|p| p.num_values()).sum();
            assert_eq!(values, 700);
            // Cut short: an error, or (cut between pages) fewer values, never a panic.
            for cut in 0..chunk.len() {
                if let Ok(read) = pages(chunk.slice(..cut), codec) {
                    let values: u32 = read.iter().map(|p| p.num_values()).sum();
                    assert!(values < 700 + 13, "{codec} cut at {cut}");
                }
            }
            assert!(pages(chunk.slice(..chunk.len() - 1), codec).is_err());
            // Any byte changed: pages or an error, never a panic.
            for at in 0..chunk.len().min(400) {
                let mut bytes = chunk.to_vec();
                bytes[at] ^= 0x5a;
                let _ = pages(Bytes::from(bytes), codec);
            }
            std::fs::remove_file(&path).unwrap();
        }
        assert!(matches!(
            ChunkPages::new(Bytes::new(), Compression::LZ4_RAW),
            Err(ParquetError::NYI(_))
        ));
    }

    #[test]
    fn thrift_skips_what_a_page_header_does_not_need() {
        // A struct with a list of 3 booleans, a map of 1 binary → i64, a double and a
        // nested struct, then field 7, an i32 whose id is written in full.
        let bytes = [
            0x19, 0x31, 0x01, 0x02, 0x01, // field 1: list of 3 booleans
            0x1b, 0x01, 0x86, 0x01, b'k', 0x04, // field 2: map of 1 binary → i64
            0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // field 3: double 1.0
            0x1c, 0x15, 0x04, 0x00, // field 4: struct { 1: i32 2 }
            0x05, 0x0e, 0x54, // field 7 (long form): i32 42
            0x00,
        ];
        let mut t = Thrift::new(&bytes);
        let mut seen = Vec::new();
        t.fields(|t, id, ty| {
            match ty {
                I32 if id == 7 => seen.push(t.i32()?),
                ty => t.skip(ty)?,
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [42]);
        assert_eq!(t.at, bytes.len());
        // Nested without end: refused, not a stack overflow.
        let deep = vec![0x1c; 10_000];
        assert!(Thrift::new(&deep).fields(|t, _, ty| t.skip(ty)).is_err());
    }
}
