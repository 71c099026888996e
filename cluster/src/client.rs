//! Fetching chunks from a worker (do_get) and sending chunks to one (do_put).
//!
//! Nothing waits forever: connecting has [`ClientConfig::connect_timeout`], and a whole
//! transfer (request, every message, decoding) has [`ClientConfig::request_timeout`];
//! HTTP/2 keep-alive pings notice a peer that vanished without closing its connection.

use crate::auth::{AddSecret, AuthedChannel, Secret};
use crate::error::WireError;
use crate::server::{
    COMPRESSION_HEADER, CONNECTION_WINDOW_BYTES, DEFAULT_MAX_CHUNK_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES, FRAME_BYTES, STREAM_WINDOW_BYTES,
};
use crate::wire::{decode_chunks, encode_chunk, Compression, WireOptions};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{FlightDescriptor, Ticket};
use futures::stream::{StreamExt, TryStreamExt};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tessera_kernels::ChunkData;
use tessera_proto::pb::ChunkLocation;
use tessera_proto::{encode_ticket, ChunkTicket, MAX_TICKET_CHUNKS};
use tonic::metadata::MetadataValue;
use tonic::transport::Endpoint;

/// Chunks of at most this many bytes are fetched together with their holder's other
/// small chunks ([`plan_fetches`]).
pub const SMALL_CHUNK_BYTES: u64 = 1 << 20;

/// The most bytes of small chunks one batch asks for.
pub const BATCH_BYTES: u64 = 8 << 20;

/// The requests that fetch the chunks at `locations`, each a list of positions in
/// `locations` on one holder: a holder's small chunks together, up to [`BATCH_BYTES`] and
/// [`MAX_TICKET_CHUNKS`] a request, each larger chunk alone.
///
/// One request per chunk cost a round trip each: a merge of 130 small parts on a peer
/// waited 35 ms for them one after another, 4 ms in batches.
pub fn plan_fetches(locations: &[&ChunkLocation]) -> Vec<Vec<usize>> {
    let mut requests = Vec::new();
    let mut small = SmallBatches::new();
    for (i, location) in locations.iter().enumerate() {
        if location.nbytes > SMALL_CHUNK_BYTES {
            requests.push(vec![i]);
            continue;
        }
        let holder = (location.flight_address.as_str(), location.incarnation);
        let batches = small.entry(holder).or_default();
        match batches.last_mut() {
            Some((batch, bytes))
                if batch.len() < MAX_TICKET_CHUNKS && *bytes + location.nbytes <= BATCH_BYTES =>
            {
                batch.push(i);
                *bytes += location.nbytes;
            }
            _ => batches.push((vec![i], location.nbytes)),
        }
    }
    requests.extend(small.into_values().flatten().map(|(batch, _)| batch));
    requests
}

/// Per holder (address and incarnation), its batches of small chunks so far: positions in
/// the plan's locations, and their bytes.
type SmallBatches<'a> = BTreeMap<(&'a str, u64), Vec<(Vec<usize>, u64)>>;

/// Timeouts and limits of a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long one whole transfer may take.
    pub request_timeout: Duration,
    /// The largest gRPC message decoded or encoded.
    pub max_message_bytes: usize,
    /// The largest chunk fetched.
    pub max_chunk_bytes: usize,
    /// Compression asked of the server (fetch) or applied (put).
    pub compression: Option<Compression>,
    /// The cluster's shared secret, sent with every call (see [`crate::auth`]).
    pub secret: Option<Secret>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(300),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            compression: None,
            secret: None,
        }
    }
}

impl ClientConfig {
    /// The default limits, connecting and transferring within `timeout`.
    pub fn within(timeout: Duration) -> ClientConfig {
        ClientConfig {
            connect_timeout: timeout,
            request_timeout: timeout,
            ..ClientConfig::default()
        }
    }
}

/// A connection to one worker's Flight service.
#[derive(Clone, Debug)]
pub struct ChunkClient {
    endpoint: String,
    client: FlightServiceClient<AuthedChannel>,
    config: ClientConfig,
}

impl ChunkClient {
    /// Connects to `endpoint` (`http://host:port`).
    pub async fn connect(endpoint: &str, config: ClientConfig) -> Result<ChunkClient, WireError> {
        let invalid = |reason: String| WireError::InvalidEndpoint {
            endpoint: endpoint.to_string(),
            reason,
        };
        let channel = Endpoint::from_shared(endpoint.to_string())
            .map_err(|e| invalid(e.to_string()))?
            .connect_timeout(config.connect_timeout)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(20))
            .keep_alive_while_idle(true)
            .max_frame_size(FRAME_BYTES)
            .initial_stream_window_size(STREAM_WINDOW_BYTES)
            .initial_connection_window_size(CONNECTION_WINDOW_BYTES);
        let channel = with_timeout(endpoint, config.connect_timeout, channel.connect())
            .await?
            .map_err(|e| WireError::Connect {
                endpoint: endpoint.to_string(),
                reason: source_chain(&e),
            })?;
        let client =
            FlightServiceClient::with_interceptor(channel, AddSecret::new(config.secret.as_ref()))
                .max_decoding_message_size(config.max_message_bytes)
                .max_encoding_message_size(config.max_message_bytes);
        Ok(ChunkClient {
            endpoint: endpoint.to_string(),
            client,
            config,
        })
    }

    /// Fetches the chunk `ticket` names.
    pub async fn fetch(&mut self, ticket: &ChunkTicket) -> Result<ChunkData, WireError> {
        let mut chunks = self.fetch_batch(ticket).await?;
        chunks
            .pop()
            .ok_or_else(|| WireError::Malformed(format!("no chunk in the answer to {ticket}")))
    }

    /// Fetches every chunk copy `ticket` names ([`ChunkTicket::batch`]) in one request,
    /// in order: a worker's small chunks cost one round trip together, not one each. The
    /// whole answer is held to [`ClientConfig::max_chunk_bytes`].
    pub async fn fetch_batch(&mut self, ticket: &ChunkTicket) -> Result<Vec<ChunkData>, WireError> {
        let mut request = tonic::Request::new(Ticket::new(encode_ticket(ticket)));
        if let Some(c) = self.config.compression {
            request
                .metadata_mut()
                .insert(COMPRESSION_HEADER, MetadataValue::from_static(c.name()));
        }
        let client = &mut self.client;
        let max_chunk = self.config.max_chunk_bytes;
        let count = ticket.more.len() + 1;
        let transfer = async move {
            let response = client
                .do_get(request)
                .await
                .map_err(|s| WireError::from_status(&s))?;
            let messages = response
                .into_inner()
                .map_err(|status| FlightError::Tonic(Box::new(status)));
            decode_chunks(messages, count, max_chunk).await
        };
        with_timeout(&self.endpoint, self.config.request_timeout, transfer).await?
    }

    /// Sends `data` to be stored under the chunk `ticket` names.
    pub async fn put(&mut self, ticket: &ChunkTicket, data: &ChunkData) -> Result<(), WireError> {
        let options = WireOptions {
            compression: self.config.compression,
            ..WireOptions::default()
        };
        let descriptor = FlightDescriptor::new_cmd(encode_ticket(ticket));
        let messages = encode_chunk(data, &options, Some(descriptor))?;
        // The first encoding error ends the upload; it is reported instead of the server's
        // answer to the truncated stream.
        let (error_tx, mut error_rx) = tokio::sync::oneshot::channel();
        let mut error_tx = Some(error_tx);
        let messages = messages
            .scan((), move |_, m| {
                futures::future::ready(match m {
                    Ok(m) => Some(m),
                    Err(e) => {
                        if let Some(tx) = error_tx.take() {
                            let _ = tx.send(e);
                        }
                        None
                    }
                })
            })
            .boxed();
        let client = &mut self.client;
        let transfer = async move {
            let outcome = client.do_put(messages).await;
            if let Ok(e) = error_rx.try_recv() {
                return Err(WireError::from_flight(e));
            }
            let mut results = outcome
                .map_err(|s| WireError::from_status(&s))?
                .into_inner();
            while results
                .message()
                .await
                .map_err(|s| WireError::from_status(&s))?
                .is_some()
            {}
            Ok(())
        };
        with_timeout(&self.endpoint, self.config.request_timeout, transfer).await?
    }
}

/// Flight connections to workers by address, made on first use and reused by every
/// request after: a connection is an HTTP/2 channel that requests share, and making one
/// costs a round trip or two of its own for each job that gathers outputs. A connection
/// whose request failed is forgotten, so the next request connects afresh.
#[derive(Clone, Debug)]
pub struct Connections {
    config: ClientConfig,
    open: Arc<Mutex<HashMap<String, ChunkClient>>>,
}

impl Connections {
    /// No connection yet; those made will use `config`.
    pub fn new(config: ClientConfig) -> Connections {
        Connections {
            config,
            open: Arc::default(),
        }
    }

    /// The connection to the worker at `address` (`http://host:port`).
    pub async fn client(&self, address: &str) -> Result<ChunkClient, WireError> {
        if let Some(client) = self.open().get(address) {
            return Ok(client.clone());
        }
        let client = ChunkClient::connect(address, self.config.clone()).await?;
        self.open().insert(address.to_string(), client.clone());
        Ok(client)
    }

    /// Forgets the connection to `address` (a request on it failed).
    pub fn forget(&self, address: &str) {
        self.open().remove(address);
    }

    fn open(&self) -> MutexGuard<'_, HashMap<String, ChunkClient>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Fetches one chunk from `endpoint` on a new connection, all within `timeout`.
pub async fn fetch_chunk(
    endpoint: &str,
    ticket: &ChunkTicket,
    timeout: Duration,
) -> Result<ChunkData, WireError> {
    ChunkClient::connect(endpoint, ClientConfig::within(timeout))
        .await?
        .fetch(ticket)
        .await
}

/// Sends one chunk to `endpoint` on a new connection, all within `timeout`.
pub async fn put_chunk(
    endpoint: &str,
    ticket: &ChunkTicket,
    data: &ChunkData,
    timeout: Duration,
) -> Result<(), WireError> {
    ChunkClient::connect(endpoint, ClientConfig::within(timeout))
        .await?
        .put(ticket, data)
        .await
}

async fn with_timeout<T>(
    endpoint: &str,
    after: Duration,
    future: impl Future<Output = T>,
) -> Result<T, WireError> {
    tokio::time::timeout(after, future)
        .await
        .map_err(|_| WireError::Timeout {
            endpoint: endpoint.to_string(),
            after,
        })
}

/// An error with its sources ("transport error: connection refused").
pub(crate) fn source_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(address: &str, incarnation: u64, nbytes: u64) -> ChunkLocation {
        ChunkLocation {
            flight_address: address.into(),
            incarnation,
            nbytes,
            ..ChunkLocation::default()
        }
    }

    #[test]
    fn small_chunks_of_a_holder_are_batched_within_the_limits_and_large_ones_go_alone() {
        let mut locations = vec![
            at("a", 1, 10),
            at("b", 2, 10),
            at("a", 1, SMALL_CHUNK_BYTES + 1),
            at("a", 1, 20),
            // A new incarnation at the same address is another holder.
            at("a", 3, 30),
            at("b", 2, SMALL_CHUNK_BYTES),
        ];
        let refs: Vec<&ChunkLocation> = locations.iter().collect();
        let mut plan = plan_fetches(&refs);
        plan.sort();
        assert_eq!(plan, vec![vec![0, 3], vec![1, 5], vec![2], vec![4]]);

        // Batches close at BATCH_BYTES, and at MAX_TICKET_CHUNKS chunks.
        locations = (0..9).map(|_| at("a", 1, SMALL_CHUNK_BYTES)).collect();
        let refs: Vec<&ChunkLocation> = locations.iter().collect();
        let per_batch = (BATCH_BYTES / SMALL_CHUNK_BYTES) as usize;
        let sizes: Vec<usize> = plan_fetches(&refs).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![per_batch, 9 - per_batch]);
        locations = (0..MAX_TICKET_CHUNKS + 5).map(|_| at("a", 1, 0)).collect();
        let refs: Vec<&ChunkLocation> = locations.iter().collect();
        let plan = plan_fetches(&refs);
        let sizes: Vec<usize> = plan.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![MAX_TICKET_CHUNKS, 5]);
        // Every chunk once, in order within its batch.
        assert_eq!(
            plan.concat(),
            (0..MAX_TICKET_CHUNKS + 5).collect::<Vec<_>>()
        );
    }
}
