//! [`ChunkTicket`]: the bytes of an Arrow Flight `Ticket` (do_get) or of a
//! `FlightDescriptor`'s `cmd` (do_put), naming one chunk copy on one worker.
//!
//! Decoding checks, in order: the size (a ticket is a few dozen bytes; anything larger is
//! refused before it is parsed), the protobuf encoding, and the protocol version.

use crate::pb::ChunkTicket;
use crate::PROTOCOL_VERSION;
use prost::Message;
use thiserror::Error;

/// The largest ticket accepted. A ticket holds five integers (at most 46 bytes encoded);
/// the margin leaves room for fields a later version adds.
pub const MAX_TICKET_BYTES: usize = 256;

/// Why ticket bytes were refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TicketError {
    /// The bytes are not a protobuf `ChunkTicket`.
    #[error("malformed chunk ticket ({len} bytes): {reason}")]
    Malformed {
        /// Length of the bytes.
        len: usize,
        /// The protobuf decoder's complaint.
        reason: String,
    },
    /// The ticket comes from a peer of another protocol version.
    #[error(
        "chunk ticket has protocol version {theirs}, this build speaks version {ours}: \
         client, scheduler and workers must run the same Tessera protocol"
    )]
    WrongVersion {
        /// The version in the ticket.
        theirs: u32,
        /// This build's [`PROTOCOL_VERSION`].
        ours: u32,
    },
    /// More bytes than any ticket has.
    #[error("chunk ticket of {len} bytes is over the {max}-byte limit")]
    Oversized {
        /// Length of the bytes.
        len: usize,
        /// [`MAX_TICKET_BYTES`].
        max: usize,
    },
}

impl ChunkTicket {
    /// A ticket of this build's protocol version.
    pub fn new(job_id: u64, chunk_key: u64, attempt: u64, incarnation: u64) -> Self {
        ChunkTicket {
            protocol_version: PROTOCOL_VERSION,
            job_id,
            chunk_key,
            attempt,
            incarnation,
        }
    }
}

impl std::fmt::Display for ChunkTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "chunk {} of job {} (attempt {}, incarnation {})",
            self.chunk_key, self.job_id, self.attempt, self.incarnation
        )
    }
}

/// The ticket's bytes.
pub fn encode_ticket(ticket: &ChunkTicket) -> Vec<u8> {
    ticket.encode_to_vec()
}

/// Parses and checks ticket bytes.
pub fn decode_ticket(bytes: &[u8]) -> Result<ChunkTicket, TicketError> {
    if bytes.len() > MAX_TICKET_BYTES {
        return Err(TicketError::Oversized {
            len: bytes.len(),
            max: MAX_TICKET_BYTES,
        });
    }
    let ticket = ChunkTicket::decode(bytes).map_err(|e| TicketError::Malformed {
        len: bytes.len(),
        reason: e.to_string(),
    })?;
    if ticket.protocol_version != PROTOCOL_VERSION {
        return Err(TicketError::WrongVersion {
            theirs: ticket.protocol_version,
            ours: PROTOCOL_VERSION,
        });
    }
    Ok(ticket)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_extreme_values() {
        for ticket in [
            ChunkTicket::new(0, 0, 0, 0),
            ChunkTicket::new(u64::MAX, u64::MAX, u64::MAX, u64::MAX),
            ChunkTicket::new(3, 1 << 40, 2, 17),
        ] {
            let bytes = encode_ticket(&ticket);
            assert!(bytes.len() <= 46, "{} bytes", bytes.len());
            assert_eq!(decode_ticket(&bytes).unwrap(), ticket);
        }
    }

    #[test]
    fn wire_format_is_plain_protobuf() {
        // Field 1 (varint) = 3 (the protocol version), field 2 = 5, field 3 = 300, field 4 = 2,
        // field 5 = 9:
        // hand-encoded, so the format cannot drift unnoticed.
        let bytes = [0x08, 3, 0x10, 5, 0x18, 0xac, 0x02, 0x20, 2, 0x28, 9];
        assert_eq!(encode_ticket(&ChunkTicket::new(5, 300, 2, 9)), bytes);
        assert_eq!(
            decode_ticket(&bytes).unwrap(),
            ChunkTicket::new(5, 300, 2, 9)
        );
    }

    #[test]
    fn malformed_bytes_are_refused() {
        // A varint that never ends, and a length-delimited field longer than the input.
        for bytes in [&[0x08, 0xff][..], &[0x12, 0x10, 1, 2][..], &[0xff][..]] {
            assert!(
                matches!(decode_ticket(bytes), Err(TicketError::Malformed { len, .. }) if len == bytes.len()),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn wrong_version_names_both_versions() {
        let mut ticket = ChunkTicket::new(1, 2, 0, 1);
        ticket.protocol_version = 7;
        let err = decode_ticket(&encode_ticket(&ticket)).unwrap_err();
        assert_eq!(
            err,
            TicketError::WrongVersion {
                theirs: 7,
                ours: PROTOCOL_VERSION
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("version 7") && text.contains(&format!("version {PROTOCOL_VERSION}"))
        );
        // No version at all (an empty ticket) is version 0, refused the same way.
        assert_eq!(
            decode_ticket(&[]).unwrap_err(),
            TicketError::WrongVersion {
                theirs: 0,
                ours: PROTOCOL_VERSION
            }
        );
    }

    #[test]
    fn oversized_ticket_is_refused_before_parsing() {
        let bytes = vec![0u8; MAX_TICKET_BYTES + 1];
        assert_eq!(
            decode_ticket(&bytes).unwrap_err(),
            TicketError::Oversized {
                len: MAX_TICKET_BYTES + 1,
                max: MAX_TICKET_BYTES
            }
        );
    }
}
