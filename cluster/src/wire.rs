//! [`ChunkData`] as a stream of Arrow Flight messages, and back.
//!
//! A chunk travels as *sections*, each an Arrow IPC stream of its own (a Schema message,
//! then record batches), preceded by a header:
//!
//! 1. a Schema message with no fields whose `app_metadata` is the `ChunkHeader` (what
//!    kind of chunk, how many sections, each tensor's dtype and shape, a partial's op);
//! 2. for each section, a Schema message whose `app_metadata` is the section's index,
//!    then its record batches (the encoder cuts a large batch into messages of about
//!    [`WireOptions::max_flight_data_size`] bytes; they are put back together).
//!
//! Sections by kind: a table is one section; the parts of a partitioned table are one
//! section each, in order, so an empty part (a schema and no rows) survives; a tensor is
//! one section holding a single column of its element type (`bool` as Arrow `Boolean`)
//! with one row per element, in C order, and its dtype and shape in the header; a
//! partial reduction and a multi-part tensor are one tensor section per part.
//!
//! Why a flat column and not Arrow's canonical fixed-shape tensor extension: that type
//! stores a *batch* of tensors, one per row of a `FixedSizeList`, so a chunk (one tensor)
//! would be one row that the Flight encoder cannot split, and a large chunk one gRPC
//! message over any sane size limit; a flat column splits into ~2 MiB messages, is built
//! from the tensor's vector without conversion, and any Arrow reader sees the values.
//! Zero-size and 0-d shapes need nothing special: the column has `numel` rows. Values are
//! copied byte for byte, so NaN payloads survive. A partial's op and input dtype are small
//! serde metadata and travel bincode-encoded in the header (one schema for all kinds).
//!
//! Dictionary columns keep their dictionary type (dictionaries are resent, not hydrated).
//! Compression (LZ4 frame or ZSTD) is the encoder's choice; the decoder reads either.

use crate::error::WireError;
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, GenericByteViewArray,
    PrimitiveArray, RecordBatch,
};
use arrow::datatypes::{ArrowPrimitiveType, ByteViewType, DataType, Field, Schema, SchemaRef};
use arrow::ipc::writer::IpcWriteOptions;
use arrow::ipc::CompressionType;
use arrow_flight::decode::{DecodedPayload, FlightDataDecoder};
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::error::FlightError;
use arrow_flight::{FlightData, FlightDescriptor};
use bytes::Bytes;
use futures::stream::{self, BoxStream, Stream, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tessera_kernels::expr::ReduceOp;
use tessera_kernels::frame::join::HashedSide;
use tessera_kernels::{Buffer, ChunkData, Complex, DType, HostTensor, Partial};
use tessera_proto::{decode_payload, encode_payload};

/// The version of the section layout above; a header of another version is refused.
pub const WIRE_FORMAT: u16 = 1;

/// Compression of IPC message bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// LZ4 frame: cheap, for fast networks.
    Lz4Frame,
    /// Zstandard: smaller, for slow links.
    Zstd,
}

impl Compression {
    /// The name used in request metadata (`lz4_frame`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4Frame => "lz4_frame",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses [`Compression::name`]; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "lz4_frame" => Some(Compression::Lz4Frame),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// How a chunk is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireOptions {
    /// Body compression, or none.
    pub compression: Option<Compression>,
    /// Target size of one Flight message; larger batches are cut into several.
    pub max_flight_data_size: usize,
}

impl Default for WireOptions {
    fn default() -> Self {
        WireOptions {
            compression: None,
            max_flight_data_size: arrow_flight::encode::GRPC_TARGET_MAX_FLIGHT_SIZE_BYTES,
        }
    }
}

/// A tensor's dtype and shape (its values are in its section).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct TensorMeta {
    dtype: DType,
    shape: Vec<u64>,
}

/// What the sections of a chunk make up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum ChunkKind {
    Tensor(TensorMeta),
    Partial {
        op: ReduceOp,
        input_dtype: DType,
        parts: Vec<TensorMeta>,
    },
    Parts(Vec<TensorMeta>),
    Table,
    Tables(u64),
    /// A hashed join side: its table, hashed on these key columns again where it arrives.
    Hashed(Vec<String>),
}

/// The first message's `app_metadata`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ChunkHeader {
    format: u16,
    kind: ChunkKind,
}

impl ChunkKind {
    fn sections(&self) -> u64 {
        match self {
            ChunkKind::Tensor(_) | ChunkKind::Table | ChunkKind::Hashed(_) => 1,
            ChunkKind::Partial { parts, .. } | ChunkKind::Parts(parts) => parts.len() as u64,
            ChunkKind::Tables(n) => *n,
        }
    }
}

fn tensor_meta(t: &HostTensor) -> TensorMeta {
    TensorMeta {
        dtype: t.dtype(),
        shape: t.shape().iter().map(|&d| d as u64).collect(),
    }
}

fn values_field(dtype: DType) -> Field {
    Field::new("values", dtype.arrow_type(), false)
}

/// A tensor as a one-column batch, one row per element.
fn tensor_batch(t: &HostTensor) -> Result<RecordBatch, WireError> {
    let column = t.data().to_arrow();
    let schema = Arc::new(Schema::new(vec![values_field(t.dtype())]));
    Ok(RecordBatch::try_new(schema, vec![column])?)
}

/// The header and the sections of a chunk.
fn split(chunk: &ChunkData) -> Result<(ChunkKind, Vec<RecordBatch>), WireError> {
    let tensors = |parts: &[HostTensor]| -> Result<_, WireError> {
        let meta = parts.iter().map(tensor_meta).collect();
        let batches = parts.iter().map(tensor_batch).collect::<Result<_, _>>()?;
        Ok((meta, batches))
    };
    Ok(match chunk {
        ChunkData::Tensor(t) => (ChunkKind::Tensor(tensor_meta(t)), vec![tensor_batch(t)?]),
        ChunkData::Partial(p) => {
            let (parts, batches) = tensors(&p.parts)?;
            let kind = ChunkKind::Partial {
                op: p.op,
                input_dtype: p.input_dtype,
                parts,
            };
            (kind, batches)
        }
        ChunkData::Parts(parts) => {
            let (meta, batches) = tensors(parts)?;
            (ChunkKind::Parts(meta), batches)
        }
        ChunkData::Table(batch) => (ChunkKind::Table, vec![batch.clone()]),
        ChunkData::Tables(parts) => (ChunkKind::Tables(parts.len() as u64), parts.clone()),
        ChunkData::Hashed(h) => (ChunkKind::Hashed(h.on().to_vec()), vec![h.table().clone()]),
    })
}

/// `batch` cut into pieces of rows of about `max_size` bytes whose view columns are
/// compacted to the strings they hold, where it has string or binary view columns (`None`
/// otherwise: the Flight encoder cuts it). The encoder slices a batch, and Arrow IPC
/// writes a sliced view column with all its data buffers, so every message of a 28 MB
/// column of views would carry the 28 MB.
fn pieces(batch: &RecordBatch, max_size: usize) -> Option<Vec<RecordBatch>> {
    let is_view = |t: &DataType| matches!(t, DataType::Utf8View | DataType::BinaryView);
    if !batch.columns().iter().any(|c| is_view(c.data_type())) || batch.num_rows() == 0 {
        return None;
    }
    let bytes: usize = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Utf8View => view_bytes(c.as_string_view()),
            DataType::BinaryView => view_bytes(c.as_binary_view()),
            _ => {
                let data = c.to_data();
                data.get_slice_memory_size()
                    .unwrap_or_else(|_| c.get_array_memory_size())
            }
        })
        .sum();
    let count = bytes.div_ceil(max_size.max(1)).max(1);
    let rows = batch.num_rows().div_ceil(count);
    let pieces = (0..batch.num_rows()).step_by(rows).map(|start| {
        let piece = batch.slice(start, rows.min(batch.num_rows() - start));
        let columns = piece
            .columns()
            .iter()
            .map(|c| match c.data_type() {
                DataType::Utf8View => Arc::new(c.as_string_view().gc()) as ArrayRef,
                DataType::BinaryView => Arc::new(c.as_binary_view().gc()) as ArrayRef,
                _ => Arc::clone(c),
            })
            .collect();
        // The same schema and row count: the rebuilt batch cannot fail.
        RecordBatch::try_new(piece.schema(), columns).unwrap_or(piece)
    });
    Some(pieces.collect())
}

/// The bytes a view column takes once compacted: its views and the strings they point to.
fn view_bytes<T: ByteViewType + ?Sized>(array: &GenericByteViewArray<T>) -> usize {
    array.len() * 16 + array.total_buffer_bytes_used()
}

fn ipc_options(compression: Option<Compression>) -> Result<IpcWriteOptions, WireError> {
    let codec = compression.map(|c| match c {
        Compression::Lz4Frame => CompressionType::LZ4_FRAME,
        Compression::Zstd => CompressionType::ZSTD,
    });
    Ok(IpcWriteOptions::default().try_with_compression(codec)?)
}

/// The Flight messages of `chunk`. `descriptor` goes into the first message (do_put
/// names its chunk there). The messages are produced as the stream is polled.
pub fn encode_chunk(
    chunk: &ChunkData,
    options: &WireOptions,
    descriptor: Option<FlightDescriptor>,
) -> Result<BoxStream<'static, Result<FlightData, FlightError>>, WireError> {
    let (kind, sections) = split(chunk)?;
    let header = encode_payload(&ChunkHeader {
        format: WIRE_FORMAT,
        kind,
    })?;
    let ipc = ipc_options(options.compression)?;
    let head = FlightDataEncoderBuilder::new()
        .with_schema(Arc::new(Schema::empty()))
        .with_metadata(Bytes::from(header))
        .with_flight_descriptor(descriptor)
        .build(stream::empty());
    let max_size = options.max_flight_data_size;
    let parts = sections.into_iter().enumerate().map(move |(index, batch)| {
        // Pieces cut here are sent as they are; the encoder cuts other batches.
        let (batches, max_size) = match pieces(&batch, max_size) {
            Some(pieces) => (pieces, usize::MAX),
            None => (vec![batch], max_size),
        };
        FlightDataEncoderBuilder::new()
            .with_schema(batches[0].schema())
            .with_metadata(Bytes::copy_from_slice(&(index as u64).to_le_bytes()))
            .with_options(ipc.clone())
            .with_max_flight_data_size(max_size)
            .with_dictionary_handling(DictionaryHandling::Resend)
            .build(stream::iter(batches.into_iter().map(Ok)))
    });
    Ok(head.chain(stream::iter(parts).flatten()).boxed())
}

/// One section as it arrives.
struct Section {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

/// Reads a chunk from Flight messages, refusing a stream whose messages add up to more
/// than `max_bytes` (counted before they are decoded).
pub async fn decode_chunk<S>(messages: S, max_bytes: usize) -> Result<ChunkData, WireError>
where
    S: Stream<Item = Result<FlightData, FlightError>> + Send + 'static,
{
    let mut chunks = decode_chunks(messages, 1, max_bytes).await?;
    chunks
        .pop()
        .ok_or_else(|| WireError::Malformed("empty chunk stream".into()))
}

/// Reads `count` chunks sent one after another in one stream (a do_get of several
/// chunks), refusing a stream whose messages add up to more than `max_bytes`.
///
/// Each chunk starts with its header, which says how many sections it has; once they
/// have all begun, the next schema message is the next chunk's header.
pub async fn decode_chunks<S>(
    messages: S,
    count: usize,
    max_bytes: usize,
) -> Result<Vec<ChunkData>, WireError>
where
    S: Stream<Item = Result<FlightData, FlightError>> + Send + 'static,
{
    let mut total = 0usize;
    let counted = messages.map(move |m| {
        let m = m?;
        total = total
            .saturating_add(m.data_header.len())
            .saturating_add(m.data_body.len())
            .saturating_add(m.app_metadata.len());
        if total > max_bytes {
            return Err(FlightError::ExternalError(Box::new(
                WireError::ChunkTooLarge { max: max_bytes },
            )));
        }
        Ok(m)
    });
    let mut decoder = FlightDataDecoder::new(counted);
    let mut chunks = Vec::with_capacity(count);
    // The chunk being read: its kind (from its header) and the sections begun so far.
    let mut current: Option<(ChunkKind, Vec<Section>)> = None;
    while let Some(message) = decoder.try_next().await.map_err(WireError::from_flight)? {
        let complete = current
            .as_ref()
            .is_none_or(|(kind, sections)| kind.sections() == sections.len() as u64);
        if complete && matches!(message.payload, DecodedPayload::Schema(_)) {
            if let Some((kind, sections)) = current.take() {
                chunks.push(assemble(kind, sections)?);
            }
            current = Some((chunk_header(&message.inner.app_metadata)?, Vec::new()));
            if chunks.len() >= count {
                return Err(WireError::Malformed(format!(
                    "stream of more than the {count} chunks asked for"
                )));
            }
            continue;
        }
        match (&message.payload, &mut current) {
            (_, None) => {
                return Err(WireError::Malformed(
                    "chunk stream does not start with its header".into(),
                ))
            }
            (DecodedPayload::Schema(schema), Some((_, sections))) => {
                let index = section_index(&message.inner.app_metadata)?;
                if index != sections.len() as u64 {
                    return Err(WireError::Malformed(format!(
                        "section {index} arrived where section {} was due",
                        sections.len()
                    )));
                }
                sections.push(Section {
                    schema: schema.clone(),
                    batches: Vec::new(),
                });
            }
            (DecodedPayload::RecordBatch(batch), Some((_, sections))) => {
                match sections.last_mut() {
                    Some(section) => section.batches.push(batch.clone()),
                    None => {
                        return Err(WireError::Malformed(
                            "record batch before the first section".into(),
                        ))
                    }
                }
            }
            (DecodedPayload::None, Some(_)) => {
                return Err(WireError::Malformed(
                    "message with neither schema nor batch".into(),
                ))
            }
        }
    }
    let (kind, sections) =
        current.ok_or_else(|| WireError::Malformed("empty chunk stream".into()))?;
    if kind.sections() != sections.len() as u64 {
        return Err(WireError::Malformed(format!(
            "chunk stream ended after {} of its {} sections",
            sections.len(),
            kind.sections()
        )));
    }
    chunks.push(assemble(kind, sections)?);
    if chunks.len() != count {
        return Err(WireError::Malformed(format!(
            "stream ended after {} of the {count} chunks asked for",
            chunks.len()
        )));
    }
    Ok(chunks)
}

/// A chunk's header, from its first message's `app_metadata`.
fn chunk_header(metadata: &[u8]) -> Result<ChunkKind, WireError> {
    let header: ChunkHeader = decode_payload(metadata)?;
    if header.format != WIRE_FORMAT {
        return Err(WireError::Malformed(format!(
            "chunk stream of wire format {}, this build reads format {WIRE_FORMAT}",
            header.format
        )));
    }
    Ok(header.kind)
}

fn section_index(metadata: &[u8]) -> Result<u64, WireError> {
    let bytes: [u8; 8] = metadata.try_into().map_err(|_| {
        WireError::Malformed(format!(
            "section marker of {} bytes, expected 8",
            metadata.len()
        ))
    })?;
    Ok(u64::from_le_bytes(bytes))
}

/// The chunk that the header and the sections describe.
fn assemble(kind: ChunkKind, sections: Vec<Section>) -> Result<ChunkData, WireError> {
    let tensors = |metas: Vec<TensorMeta>, sections: Vec<Section>| {
        metas
            .into_iter()
            .zip(sections)
            .map(|(meta, section)| section_tensor(meta, section))
            .collect::<Result<Vec<_>, _>>()
    };
    let tables = |sections: Vec<Section>| {
        sections
            .into_iter()
            .map(section_table)
            .collect::<Result<Vec<_>, _>>()
    };
    // The caller checked the section count against the kind.
    let missing = || WireError::Malformed("chunk stream without its section".into());
    Ok(match kind {
        ChunkKind::Tensor(meta) => {
            ChunkData::Tensor(tensors(vec![meta], sections)?.pop().ok_or_else(missing)?)
        }
        ChunkKind::Partial {
            op,
            input_dtype,
            parts,
        } => ChunkData::Partial(Partial {
            op,
            input_dtype,
            parts: tensors(parts, sections)?,
        }),
        ChunkKind::Parts(parts) => ChunkData::Parts(tensors(parts, sections)?),
        ChunkKind::Table => ChunkData::Table(tables(sections)?.pop().ok_or_else(missing)?),
        ChunkKind::Tables(_) => ChunkData::Tables(tables(sections)?),
        ChunkKind::Hashed(on) => {
            let table = tables(sections)?.pop().ok_or_else(missing)?;
            let hashed = HashedSide::new(&[table], on).map_err(|e| {
                WireError::Malformed(format!("cannot hash the join side received: {e}"))
            })?;
            ChunkData::Hashed(hashed)
        }
    })
}

/// A table section's batches as one batch (the encoder may have cut it).
fn section_table(section: Section) -> Result<RecordBatch, WireError> {
    let Section {
        schema,
        mut batches,
    } = section;
    Ok(match (batches.pop(), batches.is_empty()) {
        (None, _) => RecordBatch::new_empty(schema),
        (Some(only), true) => only,
        (Some(last), false) => {
            batches.push(last);
            arrow::compute::concat_batches(&schema, &batches)?
        }
    })
}

/// A tensor section's values, checked against the header's dtype and shape.
fn section_tensor(meta: TensorMeta, section: Section) -> Result<HostTensor, WireError> {
    let expected = values_field(meta.dtype);
    let fields = section.schema.fields();
    if fields.len() != 1 || fields.iter().any(|f| f.data_type() != expected.data_type()) {
        return Err(WireError::Malformed(format!(
            "tensor section of {} has schema {:?}, expected one {} column",
            meta.dtype,
            section.schema,
            expected.data_type()
        )));
    }
    let columns = section
        .batches
        .iter()
        .filter_map(|b| b.columns().first())
        .map(|c| c.as_ref());
    let data = match meta.dtype {
        DType::Bool => Buffer::Bool(bool_values(columns)?),
        DType::U8 => Buffer::U8(primitive_values::<arrow::datatypes::UInt8Type>(columns)?),
        DType::I32 => Buffer::I32(primitive_values::<arrow::datatypes::Int32Type>(columns)?),
        DType::I64 => Buffer::I64(primitive_values::<arrow::datatypes::Int64Type>(columns)?),
        DType::F32 => Buffer::F32(primitive_values::<arrow::datatypes::Float32Type>(columns)?),
        DType::F64 => Buffer::F64(primitive_values::<arrow::datatypes::Float64Type>(columns)?),
        DType::I8 => Buffer::I8(primitive_values::<arrow::datatypes::Int8Type>(columns)?),
        DType::I16 => Buffer::I16(primitive_values::<arrow::datatypes::Int16Type>(columns)?),
        DType::U16 => Buffer::U16(primitive_values::<arrow::datatypes::UInt16Type>(columns)?),
        DType::U32 => Buffer::U32(primitive_values::<arrow::datatypes::UInt32Type>(columns)?),
        DType::U64 => Buffer::U64(primitive_values::<arrow::datatypes::UInt64Type>(columns)?),
        DType::C64 => Buffer::C64(complex_values::<arrow::datatypes::Float32Type>(columns)?),
        DType::C128 => Buffer::C128(complex_values::<arrow::datatypes::Float64Type>(columns)?),
    };
    let shape = meta
        .shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| WireError::Malformed(format!("tensor shape {:?} overflows", meta.shape)))?;
    Ok(HostTensor::new(shape, data)?)
}

fn no_nulls(column: &dyn Array) -> Result<(), WireError> {
    match column.null_count() {
        0 => Ok(()),
        n => Err(WireError::Malformed(format!(
            "tensor column with {n} nulls"
        ))),
    }
}

/// The values of a tensor section's columns, end to end (allocated once at their total
/// length: growing by doubling copied a 64 MiB tensor about twice more).
fn primitive_values<'a, T: ArrowPrimitiveType>(
    columns: impl Iterator<Item = &'a dyn Array>,
) -> Result<Vec<T::Native>, WireError> {
    let columns: Vec<&dyn Array> = columns.collect();
    let mut out = Vec::with_capacity(columns.iter().map(|c| c.len()).sum());
    for column in columns {
        no_nulls(column)?;
        let array = column
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .ok_or_else(|| WireError::Malformed("tensor column of the wrong type".into()))?;
        out.extend_from_slice(array.values());
    }
    Ok(out)
}

/// [`primitive_values`] of complex values, each a two-element list of its parts.
fn complex_values<'a, T: ArrowPrimitiveType>(
    columns: impl Iterator<Item = &'a dyn Array>,
) -> Result<Vec<Complex<T::Native>>, WireError> {
    let columns: Vec<&dyn Array> = columns.collect();
    let mut out = Vec::with_capacity(columns.iter().map(|c| c.len()).sum());
    for column in columns {
        no_nulls(column)?;
        let wrong = || WireError::Malformed("tensor column of the wrong type".into());
        let list = column
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .filter(|l| l.value_length() == 2)
            .ok_or_else(wrong)?;
        let parts = list.values();
        let parts = parts
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .ok_or_else(wrong)?;
        let start = list.offset() * 2;
        let values = parts
            .values()
            .get(start..start + 2 * list.len())
            .ok_or_else(wrong)?;
        out.extend(values.chunks_exact(2).map(|p| Complex::new(p[0], p[1])));
    }
    Ok(out)
}

/// [`primitive_values`] of booleans.
fn bool_values<'a>(columns: impl Iterator<Item = &'a dyn Array>) -> Result<Vec<bool>, WireError> {
    let columns: Vec<&dyn Array> = columns.collect();
    let mut out = Vec::with_capacity(columns.iter().map(|c| c.len()).sum());
    for column in columns {
        no_nulls(column)?;
        let array = column
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| WireError::Malformed("tensor column of the wrong type".into()))?;
        out.extend(array.values().iter());
    }
    Ok(out)
}
