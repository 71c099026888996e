//! The serde types of `tessera_core` (a `ChunkTask`, a `ChunkGraph`, `JobStats`) inside a
//! protobuf `bytes` field: bincode 2 with serde, standard configuration.
//!
//! bincode allocates a `Vec<u8>` or `String` of the length the bytes *claim* before
//! reading it, so ten hostile bytes could ask for exabytes. Here the bincode limit is set,
//! so such a claim is a typed error, and the encoded size is capped at
//! [`MAX_PAYLOAD_BYTES`] both ways.

use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// The largest payload encoded or decoded: 64 MiB. Chunk data never travels in an
/// envelope (it goes over Arrow Flight); tasks and graphs are metadata, far smaller.
pub const MAX_PAYLOAD_BYTES: usize = 64 << 20;

/// bincode's standard configuration, refusing to read more than the limit.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_PAYLOAD_BYTES>()
}

/// Why a payload could not be put into or taken out of an envelope.
#[derive(Debug, Error)]
pub enum EnvelopeError {
    /// The value cannot be encoded.
    #[error("cannot encode the payload: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    /// The bytes are not a valid payload of the expected type.
    #[error("malformed payload: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// The payload ended before the bytes did.
    #[error("malformed payload: {0} bytes left over after it")]
    TrailingBytes(usize),
    /// The encoded payload is larger than the limit.
    #[error("payload of {len} bytes is over the {max}-byte limit")]
    Oversized {
        /// Its length in bytes.
        len: usize,
        /// [`MAX_PAYLOAD_BYTES`].
        max: usize,
    },
}

/// Encodes `value` for a `bytes` field.
pub fn encode_payload<T: Serialize>(value: &T) -> Result<Vec<u8>, EnvelopeError> {
    let bytes = bincode::serde::encode_to_vec(value, config())?;
    check_size(bytes.len())?;
    Ok(bytes)
}

/// Decodes a value that fills `bytes` exactly.
pub fn decode_payload<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, EnvelopeError> {
    check_size(bytes.len())?;
    let (value, read) = bincode::serde::decode_from_slice(bytes, config())?;
    match bytes.len() - read {
        0 => Ok(value),
        left => Err(EnvelopeError::TrailingBytes(left)),
    }
}

fn check_size(len: usize) -> Result<(), EnvelopeError> {
    if len > MAX_PAYLOAD_BYTES {
        return Err(EnvelopeError::Oversized {
            len,
            max: MAX_PAYLOAD_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tessera_core::{ChunkKey, ChunkTask, JobId};
    use tessera_kernels::chunk::ChunkOp;

    #[test]
    fn chunk_task_round_trips_in_the_codec_format() {
        let task = ChunkTask {
            key: ChunkKey(9),
            op: ChunkOp::Literal(std::sync::Arc::new(
                tessera_kernels::chunk::ChunkData::Parts(vec![]),
            )),
            inputs: vec![ChunkKey(1), ChunkKey(1), ChunkKey(u64::MAX)],
            parts: vec![ChunkKey(2), ChunkKey(3)],
            device: Some(tessera_core::DeviceKind::Cuda),
        };
        let bytes = encode_payload(&task).unwrap();
        // Plain bincode (standard configuration) reads what the envelope writes.
        assert_eq!(
            bytes,
            bincode::serde::encode_to_vec(&task, bincode::config::standard()).unwrap()
        );
        let back: ChunkTask = decode_payload(&bytes).unwrap();
        assert_eq!(back, task);
        assert_eq!(
            decode_payload::<JobId>(&encode_payload(&JobId(4)).unwrap()).unwrap(),
            JobId(4)
        );
    }

    #[test]
    fn a_huge_claimed_length_is_an_error_not_an_allocation() {
        // bincode varint: 0xfd then a u64: a string that claims 2^62 bytes.
        let mut bytes = vec![0xfd];
        bytes.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(matches!(
            decode_payload::<String>(&bytes),
            Err(EnvelopeError::Decode(_))
        ));
        assert!(matches!(
            decode_payload::<Vec<u64>>(&bytes),
            Err(EnvelopeError::Decode(_))
        ));
    }

    #[test]
    fn malformed_trailing_and_oversized_are_typed_errors() {
        let mut bytes = encode_payload(&ChunkKey(7)).unwrap();
        bytes.push(0);
        assert!(matches!(
            decode_payload::<ChunkKey>(&bytes),
            Err(EnvelopeError::TrailingBytes(1))
        ));
        assert!(matches!(
            decode_payload::<ChunkTask>(&[0xff]),
            Err(EnvelopeError::Decode(_))
        ));
        let big = vec![0u8; MAX_PAYLOAD_BYTES + 1];
        let err = decode_payload::<Vec<u8>>(&big).unwrap_err();
        assert!(
            matches!(err, EnvelopeError::Oversized { len, max } if len == MAX_PAYLOAD_BYTES + 1 && max == MAX_PAYLOAD_BYTES)
        );
        assert!(matches!(
            encode_payload(&big),
            Err(EnvelopeError::Oversized { .. }) | Err(EnvelopeError::Encode(_))
        ));
    }
}
