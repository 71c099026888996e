//! The one place bincode appears: encoding of metadata and metadata messages (graphs,
//! tasks, ids, statistics) for crossing a process boundary. Chunk payloads are not
//! metadata and do not go through here.

use crate::graph::{ChunkGraph, ChunkKey, ChunkTask};
use crate::job::{JobId, JobStats};
use crate::messages::{DeviceId, GetChunks, ReleaseChunks, Shutdown};
use crate::store::ChunkId;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// Types that [`encode`] and [`decode`] accept: metadata, never chunk payloads.
pub trait Metadata: Serialize + DeserializeOwned {}

impl Metadata for ChunkGraph {}
impl Metadata for ChunkTask {}
impl Metadata for ChunkKey {}
impl Metadata for ChunkId {}
impl Metadata for JobId {}
impl Metadata for DeviceId {}
impl Metadata for JobStats {}
impl Metadata for GetChunks {}
impl Metadata for ReleaseChunks {}
impl Metadata for Shutdown {}

/// Why a message could not be encoded or decoded.
#[derive(Debug, Error)]
pub enum CodecError {
    /// Encoding failed.
    #[error("cannot encode: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    /// The bytes are not a valid message.
    #[error("cannot decode: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// The message ended before the bytes did.
    #[error("{0} bytes left over after the message")]
    TrailingBytes(usize),
}

/// Encodes `value` (bincode standard configuration).
pub fn encode<T: Metadata>(value: &T) -> Result<Vec<u8>, CodecError> {
    Ok(bincode::serde::encode_to_vec(
        value,
        bincode::config::standard(),
    )?)
}

/// Decodes a value that fills `bytes` exactly.
pub fn decode<T: Metadata>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, read) = bincode::serde::decode_from_slice(bytes, bincode::config::standard())?;
    match bytes.len() - read {
        0 => Ok(value),
        left => Err(CodecError::TrailingBytes(left)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{const_op, graph, split};
    use std::time::Duration;

    fn round_trip<T: Metadata + PartialEq + std::fmt::Debug>(value: T) {
        let bytes = encode(&value).unwrap();
        assert_eq!(decode::<T>(&bytes).unwrap(), value);
    }

    #[test]
    fn metadata_round_trips() {
        let mut g = graph(&[(1, &[]), (2, &[1, 1]), (3, &[]), (4, &[31])], &[2]);
        g.tasks[1].op = const_op(-5, 3);
        round_trip(g.tasks[1].clone());
        let g = split(g, 3, &[30, 31]);
        round_trip(g.tasks[2].clone());
        round_trip(g);
        let id = ChunkId {
            job: JobId(3),
            key: ChunkKey(u64::MAX),
        };
        round_trip(id);
        round_trip(DeviceId(2));
        let mut stats = JobStats {
            chunks_run: 4,
            wall_time: Duration::from_micros(1500),
            ..JobStats::default()
        };
        stats.chunks_by_op.insert("fused".into(), 4);
        round_trip(stats);
        let bytes = encode(&GetChunks {
            reader: JobId(3),
            ids: vec![id],
            release: true,
        })
        .unwrap();
        let back: GetChunks = decode(&bytes).unwrap();
        assert_eq!((back.ids, back.release), (vec![id], true));
    }

    #[test]
    fn malformed_bytes_are_errors() {
        let mut bytes = encode(&ChunkKey(7)).unwrap();
        bytes.push(0);
        assert!(matches!(
            decode::<ChunkKey>(&bytes),
            Err(CodecError::TrailingBytes(1))
        ));
        assert!(matches!(
            decode::<ChunkGraph>(&[0xff]),
            Err(CodecError::Decode(_))
        ));
    }
}
