//! [`ChunkTicket`]: the bytes of an Arrow Flight `Ticket` (do_get) or of a
//! `FlightDescriptor`'s `cmd` (do_put), naming one chunk copy on one worker, or (do_get)
//! several on the same worker, fetched in one stream ([`ChunkTicket::batch`]).
//!
//! Decoding checks, in order: the size (a ticket is a few dozen bytes; anything larger is
//! refused before it is parsed), the protobuf encoding, and the protocol version.

use crate::pb::{ChunkCopy, ChunkLocation, ChunkTicket};
use crate::PROTOCOL_VERSION;
use prost::Message;
use thiserror::Error;

/// The most chunk copies one ticket names.
pub const MAX_TICKET_CHUNKS: usize = 1024;

/// The largest ticket accepted. A ticket holds five integers (at most 46 bytes encoded)
/// and three for each further copy (at most 33 bytes with its framing); the margin leaves
/// room for fields a later version adds.
pub const MAX_TICKET_BYTES: usize = 256 + 40 * MAX_TICKET_CHUNKS;

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
    /// More chunk copies than a ticket may name.
    #[error("chunk ticket names {count} chunks, over the {max}-chunk limit")]
    TooManyChunks {
        /// How many it names.
        count: usize,
        /// [`MAX_TICKET_CHUNKS`].
        max: usize,
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
            more: Vec::new(),
        }
    }

    /// The ticket of the copy `location` names.
    pub fn for_copy(location: &ChunkLocation) -> Self {
        ChunkTicket::new(
            location.job_id,
            location.chunk_key,
            location.attempt,
            location.incarnation,
        )
    }

    /// One ticket naming all of `tickets` (`None` if there are none), which must all be
    /// copies on one worker incarnation: the first's incarnation is the batch's.
    pub fn batch(tickets: &[ChunkTicket]) -> Option<ChunkTicket> {
        let (first, rest) = tickets.split_first()?;
        let more = rest
            .iter()
            .map(|t| ChunkCopy {
                job_id: t.job_id,
                chunk_key: t.chunk_key,
                attempt: t.attempt,
            })
            .collect();
        Some(ChunkTicket {
            more,
            ..first.single()
        })
    }

    /// Each chunk copy the ticket names, as a ticket of its own, in order.
    pub fn copies(&self) -> Vec<ChunkTicket> {
        let mut copies = vec![self.single()];
        copies.extend(self.more.iter().map(|c| ChunkTicket {
            job_id: c.job_id,
            chunk_key: c.chunk_key,
            attempt: c.attempt,
            ..self.single()
        }));
        copies
    }

    /// The first copy alone.
    fn single(&self) -> ChunkTicket {
        ChunkTicket::new(self.job_id, self.chunk_key, self.attempt, self.incarnation)
    }
}

impl std::fmt::Display for ChunkTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "chunk {} of job {} (attempt {}, incarnation {})",
            self.chunk_key, self.job_id, self.attempt, self.incarnation
        )?;
        if !self.more.is_empty() {
            write!(f, " and {} more", self.more.len())?;
        }
        Ok(())
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
    if ticket.more.len() >= MAX_TICKET_CHUNKS {
        return Err(TicketError::TooManyChunks {
            count: ticket.more.len() + 1,
            max: MAX_TICKET_CHUNKS,
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
        // Field 1 (varint) = 7 (the protocol version), field 2 = 5, field 3 = 300, field 4 = 2,
        // field 5 = 9:
        // hand-encoded, so the format cannot drift unnoticed.
        let bytes = [0x08, 7, 0x10, 5, 0x18, 0xac, 0x02, 0x20, 2, 0x28, 9];
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
        ticket.protocol_version = 8;
        let err = decode_ticket(&encode_ticket(&ticket)).unwrap_err();
        assert_eq!(
            err,
            TicketError::WrongVersion {
                theirs: 8,
                ours: PROTOCOL_VERSION
            }
        );
        let text = err.to_string();
        assert!(
            text.contains("version 8") && text.contains(&format!("version {PROTOCOL_VERSION}"))
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

    #[test]
    fn a_batch_names_its_copies_in_order_and_has_a_limit() {
        let tickets: Vec<ChunkTicket> = (0..MAX_TICKET_CHUNKS as u64)
            .map(|i| ChunkTicket::new(u64::MAX - i, u64::MAX - 2 * i, u64::MAX, 9))
            .collect();
        assert_eq!(ChunkTicket::batch(&[]), None);
        let batch = ChunkTicket::batch(&tickets).unwrap();
        assert_eq!(batch.copies(), tickets);
        assert_eq!(
            batch.to_string(),
            format!("{} and {} more", tickets[0], MAX_TICKET_CHUNKS - 1)
        );
        // The largest batch, with the largest values, fits within the byte limit.
        let bytes = encode_ticket(&batch);
        assert!(bytes.len() <= MAX_TICKET_BYTES, "{} bytes", bytes.len());
        assert_eq!(decode_ticket(&bytes).unwrap(), batch);
        let mut over = tickets;
        over.push(ChunkTicket::new(1, 1, 1, 9));
        assert_eq!(
            decode_ticket(&encode_ticket(&ChunkTicket::batch(&over).unwrap())).unwrap_err(),
            TicketError::TooManyChunks {
                count: MAX_TICKET_CHUNKS + 1,
                max: MAX_TICKET_CHUNKS
            }
        );
    }
}
