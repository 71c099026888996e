//! The disk tier's chunk format: one [`ChunkData`] as a checksummed byte stream.
//!
//! Layout (integers little-endian):
//!
//! | field            | bytes          |
//! |------------------|----------------|
//! | magic `TSRSPILL` | 8              |
//! | format version   | 2              |
//! | kind tag         | 1              |
//! | payload length   | 8              |
//! | payload checksum | 8              |
//! | payload          | payload length |
//!
//! The checksum is XXH3-64 of the payload seeded with the kind tag, so a changed tag is
//! caught as well. Payloads by kind (counts, lengths and dimensions are `u64`):
//!
//! - tensor: dtype tag (`u8`), ndim, dims, then the elements as raw little-endian bytes
//!   (`bool` as one byte, 0 or 1);
//! - partial reduction: op tag (`u8`, followed by `ddof` as `u32` for Var and Std),
//!   input dtype tag (`u8`), part count, tensors;
//! - parts: count, tensors;
//! - table: length, then an Arrow IPC stream holding one batch;
//! - tables: count, tables.
//!
//! Reading streams the payload: allocations grow with the bytes actually read, never with
//! a declared length alone, and Arrow only decodes tables once the checksum has matched.

use crate::chunk::{ChunkData, Partial};
use crate::complex::Complex;
use crate::dtype::DType;
use crate::expr::ReduceOp;
use crate::frame::join::HashedSide;
use crate::tensor::{checked_numel, Buffer, HostTensor};
use arrow::array::RecordBatch;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use std::hash::Hasher as _;
use std::io::{self, Read, Write};
use thiserror::Error;
use twox_hash::XxHash3_64;

/// Bytes before the payload: magic, version, kind tag, payload length and checksum.
pub const HEADER_LEN: u64 = 27;

const MAGIC: [u8; 8] = *b"TSRSPILL";
const VERSION: u16 = 1;
/// Bytes converted (written) or read per step when streaming tensor elements.
const BLOCK: usize = 256 * 1024;
/// The most bytes reserved ahead of reading them; larger buffers grow as data arrives.
const RESERVE_CAP: usize = 16 << 20;

/// Why a chunk could not be spilled or read back.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SpillError {
    /// Reading or writing failed (the I/O error's text).
    #[error("spill I/O failed: {0}")]
    Io(String),
    /// The bytes are not a chunk in this format: bad magic, version, tag, length or shape,
    /// truncated data or a checksum mismatch (the text says which).
    #[error("corrupt spilled chunk: {0}")]
    Corrupt(String),
    /// A table could not be encoded as an Arrow IPC stream.
    #[error("cannot encode table for spilling: {0}")]
    Encode(String),
}

fn corrupt(cause: impl Into<String>) -> SpillError {
    SpillError::Corrupt(cause.into())
}

fn io_error(e: io::Error) -> SpillError {
    SpillError::Io(e.to_string())
}

/// Writes `data` in the spill format; returns bytes written (header included).
pub fn write_chunk(data: &ChunkData, w: &mut impl Write) -> Result<u64, SpillError> {
    let kind = Kind::of(data);
    let pieces = layout(data)?;
    let mut sum = Checksum {
        hasher: XxHash3_64::with_seed(u64::from(kind.tag())),
        len: 0,
    };
    emit(&pieces, &mut sum)?;
    let header = Header {
        kind,
        len: sum.len,
        checksum: sum.hasher.finish(),
    };
    w.write_all(&header.encode()).map_err(io_error)?;
    emit(&pieces, &mut Out(w))?;
    w.flush().map_err(io_error)?;
    Ok(HEADER_LEN + header.len)
}

/// Reads a chunk written by [`write_chunk`], verifying magic, version, lengths and checksum.
pub fn read_chunk(r: &mut impl Read) -> Result<ChunkData, SpillError> {
    let header = Header::read(r)?;
    let mut payload = Payload {
        r,
        remaining: header.len,
        hasher: XxHash3_64::with_seed(u64::from(header.kind.tag())),
    };
    let raw = match header.kind {
        Kind::Tensor => Raw::Ready(ChunkData::Tensor(payload.tensor()?)),
        Kind::Partial => Raw::Ready(ChunkData::Partial(payload.partial()?)),
        Kind::Parts => Raw::Ready(ChunkData::Parts(payload.tensors()?)),
        Kind::Table => Raw::Table(payload.table()?),
        Kind::Tables => Raw::Tables(payload.tables()?),
        Kind::Hashed => {
            let on = payload.strings()?;
            Raw::Hashed(payload.table()?, on)
        }
    };
    payload.finish(header.checksum)?;
    raw.decode()
}

/// What a chunk is, as the header's kind tag says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tensor,
    Partial,
    Parts,
    Table,
    Tables,
    Hashed,
}

impl Kind {
    fn of(data: &ChunkData) -> Kind {
        match data {
            ChunkData::Tensor(_) => Kind::Tensor,
            ChunkData::Partial(_) => Kind::Partial,
            ChunkData::Parts(_) => Kind::Parts,
            ChunkData::Table(_) => Kind::Table,
            ChunkData::Tables(_) => Kind::Tables,
            ChunkData::Hashed(_) => Kind::Hashed,
        }
    }

    fn tag(self) -> u8 {
        match self {
            Kind::Tensor => 0,
            Kind::Partial => 1,
            Kind::Parts => 2,
            Kind::Table => 3,
            Kind::Tables => 4,
            Kind::Hashed => 5,
        }
    }

    fn from_tag(tag: u8) -> Result<Kind, SpillError> {
        Ok(match tag {
            0 => Kind::Tensor,
            1 => Kind::Partial,
            2 => Kind::Parts,
            3 => Kind::Table,
            4 => Kind::Tables,
            5 => Kind::Hashed,
            other => return Err(corrupt(format!("unknown chunk kind tag {other}"))),
        })
    }
}

fn dtype_tag(dtype: DType) -> u8 {
    match dtype {
        DType::Bool => 0,
        DType::U8 => 1,
        DType::I32 => 2,
        DType::I64 => 3,
        DType::F32 => 4,
        DType::F64 => 5,
        DType::I8 => 6,
        DType::I16 => 7,
        DType::U16 => 8,
        DType::U32 => 9,
        DType::U64 => 10,
        DType::C64 => 11,
        DType::C128 => 12,
    }
}

fn dtype_from_tag(tag: u8) -> Result<DType, SpillError> {
    Ok(match tag {
        0 => DType::Bool,
        1 => DType::U8,
        2 => DType::I32,
        3 => DType::I64,
        4 => DType::F32,
        5 => DType::F64,
        6 => DType::I8,
        7 => DType::I16,
        8 => DType::U16,
        9 => DType::U32,
        10 => DType::U64,
        11 => DType::C64,
        12 => DType::C128,
        other => return Err(corrupt(format!("unknown dtype tag {other}"))),
    })
}

/// The op's tag and, for Var and Std, its `ddof`.
fn reduce_op_tag(op: ReduceOp) -> (u8, Option<u32>) {
    match op {
        ReduceOp::Sum => (0, None),
        ReduceOp::Prod => (1, None),
        ReduceOp::Min => (2, None),
        ReduceOp::Max => (3, None),
        ReduceOp::Mean => (4, None),
        ReduceOp::Var { ddof } => (5, Some(ddof)),
        ReduceOp::Std { ddof } => (6, Some(ddof)),
        ReduceOp::All => (7, None),
        ReduceOp::Any => (8, None),
        ReduceOp::CountNonzero => (9, None),
        ReduceOp::ArgMin => (10, None),
        ReduceOp::ArgMax => (11, None),
    }
}

/// The fixed header before the payload.
struct Header {
    kind: Kind,
    len: u64,
    checksum: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[..8].copy_from_slice(&MAGIC);
        out[8..10].copy_from_slice(&VERSION.to_le_bytes());
        out[10] = self.kind.tag();
        out[11..19].copy_from_slice(&self.len.to_le_bytes());
        out[19..27].copy_from_slice(&self.checksum.to_le_bytes());
        out
    }

    fn read(r: &mut impl Read) -> Result<Header, SpillError> {
        let mut bytes = [0u8; HEADER_LEN as usize];
        r.read_exact(&mut bytes).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => corrupt("truncated: data ends inside the header"),
            _ => io_error(e),
        })?;
        let (magic, rest) = bytes.split_at(8);
        if magic != MAGIC {
            return Err(corrupt(format!("bad magic {magic:02x?}")));
        }
        let (version, rest) = rest.split_at(2);
        let version = u16::from_le_bytes([version[0], version[1]]);
        if version != VERSION {
            return Err(corrupt(format!(
                "unsupported format version {version} (expected {VERSION})"
            )));
        }
        let (tag, rest) = rest.split_at(1);
        let (len, checksum) = rest.split_at(8);
        Ok(Header {
            kind: Kind::from_tag(tag[0])?,
            len: u64_at(len),
            checksum: u64_at(checksum),
        })
    }
}

/// The little-endian `u64` in an 8-byte slice (of the header).
fn u64_at(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// One stretch of the payload: encoded bytes, or a tensor's elements (converted block by
/// block as they are emitted, never copied whole).
enum Piece<'a> {
    Bytes(Vec<u8>),
    Elems(&'a Buffer),
}

/// Builds the payload's pieces, gathering small fields into one piece.
#[derive(Default)]
struct Layout<'a> {
    pieces: Vec<Piece<'a>>,
    fields: Vec<u8>,
}

impl<'a> Layout<'a> {
    fn u64(&mut self, v: usize) {
        self.fields.extend_from_slice(&(v as u64).to_le_bytes());
    }

    fn piece(&mut self, piece: Piece<'a>) {
        if !self.fields.is_empty() {
            self.pieces
                .push(Piece::Bytes(std::mem::take(&mut self.fields)));
        }
        self.pieces.push(piece);
    }

    fn tensor(&mut self, t: &'a HostTensor) {
        self.fields.push(dtype_tag(t.dtype()));
        self.u64(t.shape().len());
        for &d in t.shape() {
            self.u64(d);
        }
        self.piece(Piece::Elems(t.data()));
    }

    fn tensors(&mut self, ts: &'a [HostTensor]) {
        self.u64(ts.len());
        for t in ts {
            self.tensor(t);
        }
    }

    fn partial(&mut self, p: &'a Partial) {
        let (tag, ddof) = reduce_op_tag(p.op);
        self.fields.push(tag);
        if let Some(ddof) = ddof {
            self.fields.extend_from_slice(&ddof.to_le_bytes());
        }
        self.fields.push(dtype_tag(p.input_dtype));
        self.tensors(&p.parts);
    }

    fn strings(&mut self, strings: &[String]) {
        self.u64(strings.len());
        for s in strings {
            self.u64(s.len());
            self.fields.extend_from_slice(s.as_bytes());
        }
    }

    fn table(&mut self, batch: &RecordBatch) -> Result<(), SpillError> {
        let ipc = encode_ipc(batch)?;
        self.u64(ipc.len());
        self.piece(Piece::Bytes(ipc));
        Ok(())
    }

    fn finish(mut self) -> Vec<Piece<'a>> {
        if !self.fields.is_empty() {
            self.pieces.push(Piece::Bytes(self.fields));
        }
        self.pieces
    }
}

fn layout(data: &ChunkData) -> Result<Vec<Piece<'_>>, SpillError> {
    let mut out = Layout::default();
    match data {
        ChunkData::Tensor(t) => out.tensor(t),
        ChunkData::Partial(p) => out.partial(p),
        ChunkData::Parts(ts) => out.tensors(ts),
        ChunkData::Table(b) => out.table(b)?,
        ChunkData::Tables(bs) => {
            out.u64(bs.len());
            for b in bs {
                out.table(b)?;
            }
        }
        // The table and its key names: the index is built again when it is read back.
        ChunkData::Hashed(h) => {
            out.strings(h.on());
            out.table(h.table())?;
        }
    }
    Ok(out.finish())
}

/// Bytes an IPC stream adds to a batch's buffers: its schema and batch messages, and the
/// padding of every buffer to 64 bytes (room for a few hundred columns; a wider table's
/// buffer grows as it is written).
const IPC_SLACK: usize = 64 << 10;

fn encode_ipc(batch: &RecordBatch) -> Result<Vec<u8>, SpillError> {
    let encode_error = |e: arrow::error::ArrowError| SpillError::Encode(e.to_string());
    // Sized for the whole stream up front: a buffer grown by doubling leaves a trail of
    // freed blocks of every size behind each spill, which the allocator keeps.
    let capacity = crate::frame::table::batch_bytes(batch) + IPC_SLACK;
    let mut writer = StreamWriter::try_new(Vec::with_capacity(capacity), batch.schema_ref())
        .map_err(encode_error)?;
    writer.write(batch).map_err(encode_error)?;
    writer.finish().map_err(encode_error)?;
    writer.into_inner().map_err(encode_error)
}

/// Where emitted payload bytes go.
trait Sink {
    fn put(&mut self, bytes: &[u8]) -> Result<(), SpillError>;
}

/// Counts and hashes the payload (the first pass, for the header).
struct Checksum {
    hasher: XxHash3_64,
    len: u64,
}

impl Sink for Checksum {
    fn put(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
        self.hasher.write(bytes);
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// Writes the payload out (the second pass).
struct Out<'w, W>(&'w mut W);

impl<W: Write> Sink for Out<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
        self.0.write_all(bytes).map_err(io_error)
    }
}

fn emit(pieces: &[Piece<'_>], sink: &mut impl Sink) -> Result<(), SpillError> {
    for piece in pieces {
        match piece {
            Piece::Bytes(bytes) => sink.put(bytes)?,
            Piece::Elems(Buffer::Bool(v)) => put_elems(v, |b| [u8::from(b)], sink)?,
            Piece::Elems(Buffer::U8(v)) => sink.put(v)?,
            Piece::Elems(Buffer::I32(v)) => put_elems(v, i32::to_le_bytes, sink)?,
            Piece::Elems(Buffer::I64(v)) => put_elems(v, i64::to_le_bytes, sink)?,
            Piece::Elems(Buffer::F32(v)) => put_elems(v, f32::to_le_bytes, sink)?,
            Piece::Elems(Buffer::F64(v)) => put_elems(v, f64::to_le_bytes, sink)?,
            Piece::Elems(Buffer::I8(v)) => put_elems(v, i8::to_le_bytes, sink)?,
            Piece::Elems(Buffer::I16(v)) => put_elems(v, i16::to_le_bytes, sink)?,
            Piece::Elems(Buffer::U16(v)) => put_elems(v, u16::to_le_bytes, sink)?,
            Piece::Elems(Buffer::U32(v)) => put_elems(v, u32::to_le_bytes, sink)?,
            Piece::Elems(Buffer::U64(v)) => put_elems(v, u64::to_le_bytes, sink)?,
            Piece::Elems(Buffer::C64(v)) => {
                put_elems(v, |z| parts_le::<_, 4, 8>(z.re, z.im), sink)?
            }
            Piece::Elems(Buffer::C128(v)) => {
                put_elems(v, |z| parts_le::<_, 8, 16>(z.re, z.im), sink)?
            }
        }
    }
    Ok(())
}

/// A complex value's bytes: its real part's little-endian bytes, then its imaginary part's.
fn parts_le<T: LeBytes<N>, const N: usize, const M: usize>(re: T, im: T) -> [u8; M] {
    let mut out = [0u8; M];
    out[..N].copy_from_slice(&re.le());
    out[N..].copy_from_slice(&im.le());
    out
}

/// The reverse of [`parts_le`].
fn parts_from_le<T: LeBytes<N>, const N: usize, const M: usize>(b: [u8; M]) -> Complex<T> {
    let mut re = [0u8; N];
    let mut im = [0u8; N];
    re.copy_from_slice(&b[..N]);
    im.copy_from_slice(&b[N..]);
    Complex::new(T::from_le(re), T::from_le(im))
}

/// The little-endian bytes of a complex value's part.
trait LeBytes<const N: usize>: Sized {
    fn le(self) -> [u8; N];
    fn from_le(b: [u8; N]) -> Self;
}
impl LeBytes<4> for f32 {
    fn le(self) -> [u8; 4] {
        self.to_le_bytes()
    }
    fn from_le(b: [u8; 4]) -> Self {
        f32::from_le_bytes(b)
    }
}
impl LeBytes<8> for f64 {
    fn le(self) -> [u8; 8] {
        self.to_le_bytes()
    }
    fn from_le(b: [u8; 8]) -> Self {
        f64::from_le_bytes(b)
    }
}

/// Emits `v` as little-endian bytes, [`BLOCK`] bytes at a time.
fn put_elems<T: Copy, const N: usize>(
    v: &[T],
    to_le: impl Fn(T) -> [u8; N],
    sink: &mut impl Sink,
) -> Result<(), SpillError> {
    let mut scratch = vec![[0u8; N]; v.len().min(BLOCK / N)];
    for block in v.chunks(BLOCK / N) {
        let out = &mut scratch[..block.len()];
        for (dst, &x) in out.iter_mut().zip(block) {
            *dst = to_le(x);
        }
        sink.put(out.as_flattened())?;
    }
    Ok(())
}

/// A chunk read from the payload whose tables are still IPC bytes: Arrow decodes them
/// only after the checksum has matched.
enum Raw {
    Ready(ChunkData),
    Table(Vec<u8>),
    Tables(Vec<Vec<u8>>),
    /// A hashed join side's table and key names.
    Hashed(Vec<u8>, Vec<String>),
}

impl Raw {
    fn decode(self) -> Result<ChunkData, SpillError> {
        Ok(match self {
            Raw::Ready(data) => data,
            Raw::Table(ipc) => ChunkData::Table(decode_ipc(&ipc)?),
            Raw::Tables(ipcs) => ChunkData::Tables(
                ipcs.iter()
                    .map(|ipc| decode_ipc(ipc))
                    .collect::<Result<_, _>>()?,
            ),
            Raw::Hashed(ipc, on) => ChunkData::Hashed(
                HashedSide::new(&[decode_ipc(&ipc)?], on)
                    .map_err(|e| corrupt(format!("cannot hash the join side read back: {e}")))?,
            ),
        })
    }
}

fn decode_ipc(bytes: &[u8]) -> Result<RecordBatch, SpillError> {
    let ipc_error = |e: arrow::error::ArrowError| corrupt(format!("bad Arrow IPC stream: {e}"));
    let mut reader = StreamReader::try_new(bytes, None).map_err(ipc_error)?;
    let batch = reader
        .next()
        .ok_or_else(|| corrupt("Arrow IPC stream holds no batch"))?
        .map_err(ipc_error)?;
    match reader.next() {
        None => Ok(batch),
        Some(_) => Err(corrupt("Arrow IPC stream holds more than one batch")),
    }
}

/// Reads the payload, hashing it and never reading past its declared length.
struct Payload<'r, R> {
    r: &'r mut R,
    remaining: u64,
    hasher: XxHash3_64,
}

impl<R: Read> Payload<'_, R> {
    /// Checks that `n` more bytes of `what` lie within the payload.
    fn need(&self, n: usize, what: &str) -> Result<(), SpillError> {
        if n as u64 > self.remaining {
            return Err(corrupt(format!(
                "{what} ({n} bytes) runs past the payload's end ({} bytes left)",
                self.remaining
            )));
        }
        Ok(())
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), SpillError> {
        self.need(buf.len(), what)?;
        self.r.read_exact(buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => corrupt(format!("truncated: data ends inside {what}")),
            _ => io_error(e),
        })?;
        self.hasher.write(buf);
        self.remaining -= buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], SpillError> {
        let mut bytes = [0u8; N];
        self.fill(&mut bytes, what)?;
        Ok(bytes)
    }

    fn u8(&mut self, what: &str) -> Result<u8, SpillError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A count, length or dimension.
    fn len(&mut self, what: &str) -> Result<usize, SpillError> {
        let v = u64::from_le_bytes(self.array(what)?);
        usize::try_from(v).map_err(|_| corrupt(format!("{what} {v} does not fit in memory")))
    }

    /// Reads `n` bytes in blocks of at most [`BLOCK`], handing each to `f`.
    fn blocks(
        &mut self,
        n: usize,
        what: &str,
        mut f: impl FnMut(&[u8]) -> Result<(), SpillError>,
    ) -> Result<(), SpillError> {
        self.need(n, what)?;
        let mut scratch = vec![0u8; n.min(BLOCK)];
        let mut left = n;
        while left > 0 {
            let block = &mut scratch[..left.min(BLOCK)];
            self.fill(block, what)?;
            f(block)?;
            left -= block.len();
        }
        Ok(())
    }

    fn bytes(&mut self, n: usize, what: &str) -> Result<Vec<u8>, SpillError> {
        let mut out = Vec::with_capacity(n.min(RESERVE_CAP));
        self.blocks(n, what, |b| {
            out.extend_from_slice(b);
            Ok(())
        })?;
        Ok(out)
    }

    /// `count` elements of `N` little-endian bytes each.
    fn elems<T, const N: usize>(
        &mut self,
        count: usize,
        from_le: impl Fn([u8; N]) -> T,
    ) -> Result<Vec<T>, SpillError> {
        let n = count
            .checked_mul(N)
            .ok_or_else(|| corrupt(format!("{count} tensor elements overflow a byte count")))?;
        let mut out = Vec::with_capacity(count.min(RESERVE_CAP / N));
        self.blocks(n, "tensor elements", |b| {
            // Every block is a whole number of elements: BLOCK and `n` are multiples of N.
            out.extend(b.as_chunks::<N>().0.iter().map(|&e| from_le(e)));
            Ok(())
        })?;
        Ok(out)
    }

    fn bools(&mut self, count: usize) -> Result<Vec<bool>, SpillError> {
        let mut out = Vec::with_capacity(count.min(RESERVE_CAP));
        self.blocks(count, "bool elements", |b| {
            match b.iter().find(|&&x| x > 1) {
                Some(x) => Err(corrupt(format!("bool element holds {x}, not 0 or 1"))),
                None => {
                    out.extend(b.iter().map(|&x| x == 1));
                    Ok(())
                }
            }
        })?;
        Ok(out)
    }

    fn buffer(&mut self, dtype: DType, count: usize) -> Result<Buffer, SpillError> {
        Ok(match dtype {
            DType::Bool => Buffer::Bool(self.bools(count)?),
            DType::U8 => Buffer::U8(self.bytes(count, "u8 elements")?),
            DType::I32 => Buffer::I32(self.elems(count, i32::from_le_bytes)?),
            DType::I64 => Buffer::I64(self.elems(count, i64::from_le_bytes)?),
            DType::F32 => Buffer::F32(self.elems(count, f32::from_le_bytes)?),
            DType::F64 => Buffer::F64(self.elems(count, f64::from_le_bytes)?),
            DType::I8 => Buffer::I8(self.elems(count, i8::from_le_bytes)?),
            DType::I16 => Buffer::I16(self.elems(count, i16::from_le_bytes)?),
            DType::U16 => Buffer::U16(self.elems(count, u16::from_le_bytes)?),
            DType::U32 => Buffer::U32(self.elems(count, u32::from_le_bytes)?),
            DType::U64 => Buffer::U64(self.elems(count, u64::from_le_bytes)?),
            DType::C64 => Buffer::C64(self.elems(count, parts_from_le::<f32, 4, 8>)?),
            DType::C128 => Buffer::C128(self.elems(count, parts_from_le::<f64, 8, 16>)?),
        })
    }

    fn tensor(&mut self) -> Result<HostTensor, SpillError> {
        let dtype = dtype_from_tag(self.u8("dtype tag")?)?;
        let ndim = self.len("ndim")?;
        self.need(ndim.saturating_mul(8), "tensor dimensions")?;
        let shape = (0..ndim)
            .map(|_| self.len("tensor dimension"))
            .collect::<Result<Vec<_>, _>>()?;
        let count = checked_numel(&shape).map_err(|e| corrupt(e.to_string()))?;
        let data = self.buffer(dtype, count)?;
        HostTensor::new(shape, data).map_err(|e| corrupt(e.to_string()))
    }

    fn tensors(&mut self) -> Result<Vec<HostTensor>, SpillError> {
        let count = self.len("tensor count")?;
        // No reservation: each tensor takes at least 9 bytes, so a false count fails early.
        (0..count).map(|_| self.tensor()).collect()
    }

    fn reduce_op(&mut self) -> Result<ReduceOp, SpillError> {
        Ok(match self.u8("reduce op tag")? {
            0 => ReduceOp::Sum,
            1 => ReduceOp::Prod,
            2 => ReduceOp::Min,
            3 => ReduceOp::Max,
            4 => ReduceOp::Mean,
            5 => ReduceOp::Var {
                ddof: u32::from_le_bytes(self.array("ddof")?),
            },
            6 => ReduceOp::Std {
                ddof: u32::from_le_bytes(self.array("ddof")?),
            },
            7 => ReduceOp::All,
            8 => ReduceOp::Any,
            9 => ReduceOp::CountNonzero,
            10 => ReduceOp::ArgMin,
            11 => ReduceOp::ArgMax,
            other => return Err(corrupt(format!("unknown reduce op tag {other}"))),
        })
    }

    fn partial(&mut self) -> Result<Partial, SpillError> {
        let op = self.reduce_op()?;
        let input_dtype = dtype_from_tag(self.u8("input dtype tag")?)?;
        let parts = self.tensors()?;
        Ok(Partial {
            op,
            input_dtype,
            parts,
        })
    }

    fn table(&mut self) -> Result<Vec<u8>, SpillError> {
        let len = self.len("table length")?;
        self.bytes(len, "table")
    }

    fn strings(&mut self) -> Result<Vec<String>, SpillError> {
        let count = self.len("string count")?;
        // No reservation: each string takes at least 8 bytes, so a false count fails early.
        (0..count)
            .map(|_| {
                let len = self.len("string length")?;
                String::from_utf8(self.bytes(len, "string")?)
                    .map_err(|_| corrupt("a key name is not UTF-8"))
            })
            .collect()
    }

    fn tables(&mut self) -> Result<Vec<Vec<u8>>, SpillError> {
        let count = self.len("table count")?;
        (0..count).map(|_| self.table()).collect()
    }

    /// Checks that the chunk filled the payload and that the payload matches its checksum.
    fn finish(self, checksum: u64) -> Result<(), SpillError> {
        if self.remaining != 0 {
            return Err(corrupt(format!(
                "{} payload bytes left over after the chunk",
                self.remaining
            )));
        }
        let actual = self.hasher.finish();
        if actual != checksum {
            return Err(corrupt(format!(
                "checksum mismatch: header says {checksum:016x}, payload hashes to {actual:016x}"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;
    use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn round_trip(data: &ChunkData) -> ChunkData {
        let mut bytes = Vec::new();
        let written = write_chunk(data, &mut bytes).unwrap();
        assert_eq!(written, bytes.len() as u64);
        let mut r = bytes.as_slice();
        let back = read_chunk(&mut r).unwrap();
        assert!(r.is_empty(), "reader left {} bytes", r.len());
        back
    }

    fn encoded(data: &ChunkData) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_chunk(data, &mut bytes).unwrap();
        bytes
    }

    fn read(bytes: &[u8]) -> Result<ChunkData, SpillError> {
        read_chunk(&mut &bytes[..])
    }

    fn tensor(shape: Vec<usize>, data: Buffer) -> HostTensor {
        HostTensor::new(shape, data).unwrap()
    }

    fn every_dtype() -> Vec<HostTensor> {
        vec![
            tensor(vec![2, 2], Buffer::Bool(vec![true, false, false, true])),
            tensor(vec![3], Buffer::U8(vec![0, 7, 255])),
            tensor(vec![1, 3], Buffer::I32(vec![i32::MIN, -1, i32::MAX])),
            tensor(vec![3, 1], Buffer::I64(vec![i64::MIN, 0, i64::MAX])),
            tensor(vec![2], Buffer::F32(vec![-1.5, f32::INFINITY])),
            tensor(vec![2, 1, 2], Buffer::F64(vec![0.1, -0.0, 1e300, -2.5])),
            tensor(vec![3], Buffer::I8(vec![i8::MIN, -1, i8::MAX])),
            tensor(vec![3], Buffer::I16(vec![i16::MIN, 2, i16::MAX])),
            tensor(vec![2], Buffer::U16(vec![0, u16::MAX])),
            tensor(vec![2], Buffer::U32(vec![7, u32::MAX])),
            tensor(vec![2], Buffer::U64(vec![1 << 63, u64::MAX])),
        ]
    }

    fn table() -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec![Some("a"), Some("ünïcode"), None])),
            Arc::new(Float64Array::from(vec![None, Some(2.5), Some(-1.0)])),
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ];
        RecordBatch::try_from_iter(["id", "name", "score", "flag"].into_iter().zip(columns))
            .unwrap()
    }

    fn empty_table() -> RecordBatch {
        RecordBatch::new_empty(Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Float64, true),
        ])))
    }

    fn samples() -> Vec<ChunkData> {
        vec![
            ChunkData::Tensor(every_dtype().remove(5)),
            ChunkData::Partial(Partial {
                op: ReduceOp::Var { ddof: 1 },
                input_dtype: DType::I32,
                parts: every_dtype(),
            }),
            ChunkData::Parts(every_dtype()),
            ChunkData::Table(table()),
            ChunkData::Tables(vec![table(), empty_table()]),
            ChunkData::Hashed(
                HashedSide::new(&[table(), table()], vec!["name".into(), "id".into()]).unwrap(),
            ),
        ]
    }

    #[test]
    fn every_dtype_round_trips_including_empty_and_0d_tensors() {
        for t in every_dtype() {
            let data = ChunkData::Tensor(t);
            assert_eq!(round_trip(&data), data);
        }
        for dtype in [
            DType::Bool,
            DType::U8,
            DType::I32,
            DType::I64,
            DType::F32,
            DType::F64,
        ] {
            for shape in [vec![0], vec![3, 0, 2]] {
                let data = ChunkData::Tensor(tensor(shape, Buffer::with_capacity(dtype, 0)));
                assert_eq!(round_trip(&data), data);
            }
            let scalar = ChunkData::Tensor(HostTensor::scalar(Scalar::I64(-7).cast(dtype)));
            assert_eq!(round_trip(&scalar), scalar);
        }
    }

    #[test]
    fn float_bits_survive_exactly() {
        let values = vec![f64::NAN, -f64::NAN, -0.0, f64::MIN_POSITIVE / 2.0, f64::MAX];
        let data = ChunkData::Tensor(tensor(vec![5], Buffer::F64(values.clone())));
        let back = round_trip(&data);
        let back = back.as_tensor().unwrap().as_slice::<f64>().unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(back), bits(&values));
    }

    #[test]
    fn tensors_larger_than_a_block_round_trip() {
        let n = BLOCK / 8 * 3 + 5;
        let data = ChunkData::Tensor(tensor(
            vec![n],
            Buffer::F64((0..n).map(|i| i as f64 * 0.5).collect()),
        ));
        assert_eq!(round_trip(&data), data);
        let bools = ChunkData::Tensor(tensor(
            vec![BLOCK + 3],
            Buffer::Bool((0..BLOCK + 3).map(|i| i % 3 == 0).collect()),
        ));
        assert_eq!(round_trip(&bools), bools);
    }

    #[test]
    fn every_variant_and_reduce_op_round_trips() {
        for data in samples() {
            assert_eq!(round_trip(&data), data);
        }
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Min,
            ReduceOp::Max,
            ReduceOp::Mean,
            ReduceOp::Var { ddof: 0 },
            ReduceOp::Std { ddof: u32::MAX },
            ReduceOp::All,
            ReduceOp::Any,
            ReduceOp::CountNonzero,
            ReduceOp::ArgMin,
            ReduceOp::ArgMax,
        ];
        for op in ops {
            let data = ChunkData::Partial(Partial {
                op,
                input_dtype: DType::F32,
                parts: vec![HostTensor::scalar(Scalar::F64(2.0))],
            });
            assert_eq!(round_trip(&data), data);
        }
        for data in [
            ChunkData::Parts(Vec::new()),
            ChunkData::Table(empty_table()),
            ChunkData::Tables(Vec::new()),
        ] {
            assert_eq!(round_trip(&data), data);
        }
    }

    #[test]
    fn a_flipped_payload_byte_is_corrupt() {
        for data in samples() {
            let bytes = encoded(&data);
            for at in HEADER_LEN as usize..bytes.len() {
                let mut bad = bytes.clone();
                bad[at] ^= 0x10;
                let err = read(&bad).unwrap_err();
                assert!(matches!(err, SpillError::Corrupt(_)), "byte {at}: {err:?}");
            }
        }
    }

    #[test]
    fn a_changed_kind_tag_is_corrupt() {
        let mut bytes = encoded(&ChunkData::Parts(every_dtype()));
        bytes[10] = Kind::Tables.tag();
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(_))));
        bytes[10] = 9;
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(m)) if m.contains("kind tag")));
    }

    #[test]
    fn truncated_data_is_an_error() {
        for data in samples() {
            let bytes = encoded(&data);
            for len in 0..bytes.len() {
                assert!(read(&bytes[..len]).is_err(), "truncated to {len}");
            }
        }
    }

    #[test]
    fn bad_magic_and_version_are_corrupt() {
        let bytes = encoded(&samples().remove(0));
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(matches!(read(&bad), Err(SpillError::Corrupt(m)) if m.contains("magic")));
        let mut bad = bytes;
        bad[8..10].copy_from_slice(&2u16.to_le_bytes());
        assert!(matches!(read(&bad), Err(SpillError::Corrupt(m)) if m.contains("version")));
    }

    #[test]
    fn bool_bytes_other_than_0_or_1_are_corrupt() {
        let mut bytes = encoded(&ChunkData::Tensor(tensor(
            vec![2],
            Buffer::Bool(vec![true, false]),
        )));
        let last = bytes.len() - 1;
        bytes[last] = 2;
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(m)) if m.contains("bool")));
    }

    /// A header declaring an absurd payload over a tensor declaring an absurd shape.
    fn absurd(len: u64, shape: &[u64]) -> Vec<u8> {
        let header = Header {
            kind: Kind::Tensor,
            len,
            checksum: 0,
        };
        let mut bytes = header.encode().to_vec();
        bytes.push(dtype_tag(DType::F64));
        bytes.extend_from_slice(&(shape.len() as u64).to_le_bytes());
        for d in shape {
            bytes.extend_from_slice(&d.to_le_bytes());
        }
        bytes.extend_from_slice(&[0; 64]);
        bytes
    }

    #[test]
    fn absurd_declared_lengths_fail_without_huge_allocations() {
        // A huge payload and element count, but only 64 bytes of data: fails on truncation
        // after reserving at most RESERVE_CAP.
        let bytes = absurd(u64::MAX, &[1 << 40]);
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(m)) if m.contains("truncated")));
        // Elements past the declared payload are refused before any read.
        let bytes = absurd(100, &[1 << 40]);
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(m)) if m.contains("runs past")));
        // A shape whose element count overflows.
        let bytes = absurd(u64::MAX, &[u64::MAX, u64::MAX]);
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(_))));
        // A huge ndim.
        let bytes = absurd(100, &[]);
        let mut huge_ndim = bytes.clone();
        huge_ndim[28..36].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(read(&huge_ndim), Err(SpillError::Corrupt(_))));
    }

    #[test]
    fn trailing_payload_bytes_are_corrupt() {
        let mut bytes = encoded(&samples().remove(0));
        let len = u64_at(&bytes[11..19]);
        bytes[11..19].copy_from_slice(&(len + 1).to_le_bytes());
        bytes.push(0);
        assert!(matches!(read(&bytes), Err(SpillError::Corrupt(m)) if m.contains("left over")));
    }
}
