//! The worker's Arrow Flight service: `do_get` serves the chunks the worker holds (one,
//! or several a batch ticket names, one after another in one stream), `do_put` takes
//! chunks a client sends (its literals). Every other Flight method answers
//! UNIMPLEMENTED.
//!
//! The service reads chunks through [`ChunkSource`] and stores them through [`ChunkSink`],
//! which the actors side implements (a StorageActor handle). Both are blocking: a spilled
//! chunk is read from disk, so they run on tokio's blocking pool.
//!
//! Refusals are typed statuses, logged, never a crash: a malformed ticket is
//! INVALID_ARGUMENT, a ticket of another protocol version FAILED_PRECONDITION (naming both
//! versions), an unknown chunk NOT_FOUND (naming it), a gRPC message over the size limit
//! is refused by tonic before it is allocated, and a put whose messages add up to more
//! than [`ServerConfig::max_chunk_bytes`] RESOURCE_EXHAUSTED.

use crate::auth::{RequireSecret, Secret};
use crate::error::WireError;
use crate::wire::{decode_chunk, encode_chunk, Compression, WireOptions};
use arrow_flight::error::FlightError;
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightInfo, HandshakeRequest,
    HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tessera_kernels::ChunkData;
use tessera_proto::{decode_ticket, ChunkTicket};
use thiserror::Error;
use tokio::net::TcpListener;
use tonic::service::InterceptorLayer;
use tonic::{Request, Response, Status, Streaming};

/// The request metadata key by which a fetching peer asks for compressed bodies
/// (`lz4_frame` or `zstd`; absent: none).
pub const COMPRESSION_HEADER: &str = "tessera-ipc-compression";

/// The default limit of one gRPC message, both ways: 16 MiB. The encoder cuts batches
/// into messages of about 2 MiB, so only a single row over 16 MiB meets it.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 << 20;

/// The default limit of one chunk received with do_put (or fetched): 4 GiB.
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 4 << 30;

/// The largest HTTP/2 frame either side of a chunk transfer accepts (h2's default is
/// 16 KiB, which cut a 64 MiB chunk into 4,096 frames, each a wake-up of both sides).
pub const FRAME_BYTES: u32 = 1 << 20;

/// HTTP/2 flow-control windows of a chunk transfer, per stream and per connection: room
/// for a whole Flight message (2 MiB) several times over, so a sender does not wait for
/// a window update after each.
pub const STREAM_WINDOW_BYTES: u32 = 16 << 20;

/// See [`STREAM_WINDOW_BYTES`]; a connection carries several transfers at once.
pub const CONNECTION_WINDOW_BYTES: u32 = 64 << 20;

/// Why a [`ChunkSource`] or [`ChunkSink`] could not serve a request.
#[derive(Debug, Error)]
pub enum SourceError {
    /// The chunk exists but could not be read (a spill file unreadable or corrupt).
    #[error("cannot read {chunk}: {reason}")]
    Unreadable {
        /// The chunk, as the ticket names it.
        chunk: String,
        /// Why.
        reason: String,
    },
    /// The holder's storage dropped the chunk from memory, to be computed again by the
    /// scheduler (see [`WireError::Dropped`]).
    #[error("{chunk} was dropped from memory, to be computed again")]
    Dropped {
        /// The chunk, as the ticket names it.
        chunk: String,
    },
    /// The sink cannot take the chunk (over the memory budget after spilling, shutting
    /// down, unknown job).
    #[error("cannot store {chunk}: {reason}")]
    Refused {
        /// The chunk, as the ticket names it.
        chunk: String,
        /// Why.
        reason: String,
    },
}

/// Where the service finds the chunks it serves.
pub trait ChunkSource: Send + Sync + 'static {
    /// The chunk the ticket names, `None` if this worker does not hold it. May block
    /// (reading a spilled chunk back from disk).
    fn chunk(&self, ticket: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError>;

    /// The chunks `tickets` name, in order, `None` for each one not held. May block. By
    /// default one [`ChunkSource::chunk`] after another; a source that reads several at
    /// once (one trip to its storage for a batch) does so here.
    fn chunks(&self, tickets: &[ChunkTicket]) -> Result<Vec<Option<Arc<ChunkData>>>, SourceError> {
        tickets.iter().map(|t| self.chunk(t)).collect()
    }
}

/// Where the service stores the chunks clients send.
pub trait ChunkSink: Send + Sync + 'static {
    /// Stores `data` under the ticket's job, chunk and attempt. May block.
    fn put(&self, ticket: &ChunkTicket, data: ChunkData) -> Result<(), SourceError>;
}

/// Limits of the Flight service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The largest gRPC message decoded or encoded.
    pub max_message_bytes: usize,
    /// The largest chunk taken with do_put.
    pub max_chunk_bytes: usize,
    /// Target size of one Flight message served.
    pub max_flight_data_size: usize,
    /// This worker's incarnation, once registered: a ticket naming another one (an
    /// earlier life of this worker) names nothing here. `None` accepts any.
    pub incarnation: Option<u64>,
    /// The cluster's shared secret: calls without it are refused (see [`crate::auth`]).
    pub secret: Option<Secret>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
            max_flight_data_size: WireOptions::default().max_flight_data_size,
            incarnation: None,
            secret: None,
        }
    }
}

/// A worker's Flight service over a chunk source and sink.
pub struct ChunkFlightService {
    source: Arc<dyn ChunkSource>,
    sink: Arc<dyn ChunkSink>,
    config: ServerConfig,
}

impl ChunkFlightService {
    /// A service reading from `source` and storing into `sink`.
    pub fn new(
        source: Arc<dyn ChunkSource>,
        sink: Arc<dyn ChunkSink>,
        config: ServerConfig,
    ) -> Self {
        ChunkFlightService {
            source,
            sink,
            config,
        }
    }

    /// The ticket in `bytes`, if it is well-formed, of this protocol version, and for
    /// this worker's incarnation.
    fn check_ticket(&self, bytes: &[u8], method: &str) -> Result<ChunkTicket, Status> {
        let ticket = decode_ticket(bytes).map_err(|e| refuse(e.into(), method))?;
        match self.config.incarnation {
            Some(ours) if ours != ticket.incarnation => Err(refuse(
                WireError::NotFound(format!(
                    "{ticket} names another incarnation of this worker (now {ours})"
                )),
                method,
            )),
            _ => Ok(ticket),
        }
    }

    /// The tonic server for this service, with its message-size limits set.
    pub fn into_server(self) -> FlightServiceServer<ChunkFlightService> {
        let limit = self.config.max_message_bytes;
        FlightServiceServer::new(self)
            .max_decoding_message_size(limit)
            .max_encoding_message_size(limit)
    }
}

/// Serves `service` on `listener` until `shutdown` completes, refusing calls without the
/// service's secret if it has one. HTTP/2 keep-alive pings
/// find clients that vanished mid-transfer, so their requests end instead of waiting.
pub async fn serve(
    listener: TcpListener,
    service: ChunkFlightService,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let gate = RequireSecret::new(service.config.secret.clone(), "worker's Flight service");
    tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(10)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .max_frame_size(FRAME_BYTES)
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .layer(InterceptorLayer::new(gate))
        .add_service(service.into_server())
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
}

/// Logs a refusal and turns it into its status.
fn refuse(error: WireError, method: &str) -> Status {
    tracing::warn!(method, %error, "Flight request refused");
    error.to_status()
}

fn requested_compression<T>(request: &Request<T>) -> Result<Option<Compression>, Status> {
    let Some(value) = request.metadata().get(COMPRESSION_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(Compression::from_name)
        .map(Some)
        .ok_or_else(|| {
            refuse(
                WireError::InvalidRequest(format!(
                    "unknown {COMPRESSION_HEADER} {value:?} (expected lz4_frame or zstd)"
                )),
                "do_get",
            )
        })
}

fn unimplemented(method: &str) -> Status {
    tracing::warn!(method, "unimplemented Flight method called");
    Status::unimplemented(format!(
        "{method} is not served by a Tessera worker (only do_get and do_put)"
    ))
}

#[tonic::async_trait]
impl FlightService for ChunkFlightService {
    type HandshakeStream = BoxStream<'static, Result<HandshakeResponse, Status>>;
    type ListFlightsStream = BoxStream<'static, Result<FlightInfo, Status>>;
    type DoGetStream = BoxStream<'static, Result<FlightData, Status>>;
    type DoPutStream = BoxStream<'static, Result<PutResult, Status>>;
    type DoExchangeStream = BoxStream<'static, Result<FlightData, Status>>;
    type DoActionStream = BoxStream<'static, Result<arrow_flight::Result, Status>>;
    type ListActionsStream = BoxStream<'static, Result<ActionType, Status>>;

    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        let compression = requested_compression(&request)?;
        let ticket = self.check_ticket(&request.get_ref().ticket, "do_get")?;
        let copies = ticket.copies();
        let source = Arc::clone(&self.source);
        let found = tokio::task::spawn_blocking(move || {
            let found = source.chunks(&copies).map_err(|e| match e {
                // Expected under memory pressure: the reader reports it, the scheduler
                // computes the chunk again.
                SourceError::Dropped { chunk } => {
                    tracing::debug!(%chunk, "serving a dropped chunk: refused");
                    WireError::Dropped(chunk).to_status()
                }
                e => {
                    tracing::error!(%e, "chunk source failed");
                    Status::internal(e.to_string())
                }
            })?;
            if found.len() != copies.len() {
                return Err(Status::internal(format!(
                    "the chunk source answered {} of {} lookups",
                    found.len(),
                    copies.len()
                )));
            }
            copies
                .iter()
                .zip(found)
                .map(|(copy, chunk)| {
                    chunk.ok_or_else(|| {
                        refuse(
                            WireError::NotFound(format!("{copy} is not held by this worker")),
                            "do_get",
                        )
                    })
                })
                .collect::<Result<Vec<_>, Status>>()
        })
        .await
        .map_err(|e| Status::internal(format!("chunk lookup for {ticket} failed: {e}")))??;
        let options = WireOptions {
            compression,
            max_flight_data_size: self.config.max_flight_data_size,
        };
        let bytes: usize = found.iter().map(|c| c.nbytes()).sum();
        // One chunk after another, each encoded as the stream reaches it.
        let messages = found
            .into_iter()
            .map(|chunk| encode_chunk(&chunk, &options, None))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| refuse(e, "do_get"))?;
        tracing::debug!(%ticket, bytes, "serving chunks");
        Ok(Response::new(
            stream::iter(messages)
                .flatten()
                .map_err(|e| WireError::from_flight(e).to_status())
                .boxed(),
        ))
    }

    async fn do_put(
        &self,
        request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        let mut messages = request.into_inner();
        let first = messages
            .message()
            .await?
            .ok_or_else(|| refuse(WireError::Malformed("empty do_put".into()), "do_put"))?;
        let cmd = first
            .flight_descriptor
            .as_ref()
            .map(|d| d.cmd.clone())
            .unwrap_or_default();
        let ticket = self.check_ticket(&cmd, "do_put")?;
        if !ticket.more.is_empty() {
            return Err(refuse(
                WireError::InvalidRequest(format!("do_put of {ticket}: a put names one chunk")),
                "do_put",
            ));
        }
        let rest = messages.map_err(|status| FlightError::Tonic(Box::new(status)));
        let all = stream::once(async move { Ok(first) }).chain(rest);
        let chunk = decode_chunk(all, self.config.max_chunk_bytes)
            .await
            .map_err(|e| refuse(e, "do_put"))?;
        let sink = Arc::clone(&self.sink);
        let stored = ticket.clone();
        tokio::task::spawn_blocking(move || sink.put(&stored, chunk))
            .await
            .map_err(|e| Status::internal(format!("storing {ticket} failed: {e}")))?
            .map_err(|e| {
                tracing::warn!(%e, "chunk sink refused a put");
                Status::resource_exhausted(e.to_string())
            })?;
        tracing::debug!(%ticket, "stored chunk from do_put");
        Ok(Response::new(
            stream::iter([Ok(PutResult::default())]).boxed(),
        ))
    }

    async fn handshake(
        &self,
        _request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        Err(unimplemented("handshake"))
    }

    async fn list_flights(
        &self,
        _request: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        Err(unimplemented("list_flights"))
    }

    async fn get_flight_info(
        &self,
        _request: Request<arrow_flight::FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        Err(unimplemented("get_flight_info"))
    }

    async fn poll_flight_info(
        &self,
        _request: Request<arrow_flight::FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        Err(unimplemented("poll_flight_info"))
    }

    async fn get_schema(
        &self,
        _request: Request<arrow_flight::FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        Err(unimplemented("get_schema"))
    }

    async fn do_exchange(
        &self,
        _request: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        Err(unimplemented("do_exchange"))
    }

    async fn do_action(
        &self,
        _request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        Err(unimplemented("do_action"))
    }

    async fn list_actions(
        &self,
        _request: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        Err(unimplemented("list_actions"))
    }
}
