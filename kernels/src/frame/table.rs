//! Table chunks: helpers over Arrow record batches, and their serde form (Arrow IPC).

use super::error::FrameResult;
use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;

/// Concatenates `batches` (all of `schema`) into one batch; one batch is returned as is
/// (record batches share their buffers, so this copies nothing).
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> FrameResult<RecordBatch> {
    match batches {
        [one] => Ok(one.clone()),
        _ => Ok(concat_batches(schema, batches)?),
    }
}

/// Bytes held by a batch's buffers.
pub fn batch_bytes(batch: &RecordBatch) -> usize {
    batch.get_array_memory_size()
}

/// Bytes of the part of its buffers a batch uses: for slices of one shared table (the parts
/// of a hash partition), whose buffers [`batch_bytes`] would count once per slice.
pub fn slice_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

/// Encodes batches as one Arrow IPC stream (the first batch's schema; none: an empty stream).
fn to_ipc(batches: &[RecordBatch]) -> Result<Vec<u8>, arrow::error::ArrowError> {
    let mut bytes = Vec::new();
    if let Some(first) = batches.first() {
        let mut writer = StreamWriter::try_new(&mut bytes, first.schema_ref())?;
        for b in batches {
            writer.write(b)?;
        }
        writer.finish()?;
    }
    Ok(bytes)
}

/// Decodes an Arrow IPC stream written by [`to_ipc`].
fn from_ipc(bytes: &[u8]) -> Result<Vec<RecordBatch>, arrow::error::ArrowError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    StreamReader::try_new(bytes, None)?.collect()
}

/// Serde for one record batch as Arrow IPC bytes (`#[serde(with = "ipc_one")]`).
pub mod ipc_one {
    use super::{from_ipc, to_ipc, RecordBatch};
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `batch` as IPC bytes.
    pub fn serialize<S: Serializer>(batch: &RecordBatch, s: S) -> Result<S::Ok, S::Error> {
        let bytes = to_ipc(std::slice::from_ref(batch)).map_err(S::Error::custom)?;
        s.serialize_bytes(&bytes)
    }

    /// Reads one batch from IPC bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RecordBatch, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        let mut batches = from_ipc(&bytes).map_err(D::Error::custom)?;
        match (batches.pop(), batches.is_empty()) {
            (Some(b), true) => Ok(b),
            _ => Err(D::Error::custom("expected exactly one record batch")),
        }
    }
}

/// Serde for several record batches (one IPC stream per batch, since parts may differ in
/// schema only by being empty).
pub mod ipc_many {
    use super::RecordBatch;
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(serde::Serialize, serde::Deserialize)]
    struct One(#[serde(with = "super::ipc_one")] RecordBatch);

    /// Writes `batches` as a sequence of IPC byte strings.
    pub fn serialize<S: Serializer>(batches: &[RecordBatch], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(batches.len()))?;
        for b in batches {
            seq.serialize_element(&One(b.clone()))?;
        }
        seq.end()
    }

    /// Reads a sequence of batches.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RecordBatch>, D::Error> {
        Ok(Vec::<One>::deserialize(d)?
            .into_iter()
            .map(|o| o.0)
            .collect())
    }
}
