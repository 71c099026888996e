//! A worker's Flight service on 127.0.0.1:0 and the client, with the failures that must
//! be typed errors and never hangs.

use crate::samples::{assert_bit_exact, every_chunk, large_tensor};
use arrow_flight::flight_service_client::FlightServiceClient;
use arrow_flight::{Empty, Ticket};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_cluster::{
    fetch_chunk, put_chunk, serve, ChunkClient, ChunkFlightService, ChunkSink, ChunkSource,
    ClientConfig, Compression, Secret, ServerConfig, SourceError, WireError,
};
use tessera_kernels::ChunkData;
use tessera_proto::{encode_ticket, ChunkTicket, MAX_TICKET_BYTES, PROTOCOL_VERSION};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// Generous: reached only if something hangs, and then the test fails rather than hangs.
const PATIENCE: Duration = Duration::from_secs(60);

type Key = (u64, u64, u64);

fn key(t: &ChunkTicket) -> Key {
    (t.job_id, t.chunk_key, t.attempt)
}

/// Chunks in a map: the source and the sink of the tests.
#[derive(Default)]
struct Store(Mutex<HashMap<Key, Arc<ChunkData>>>);

impl ChunkSource for Store {
    fn chunk(&self, ticket: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError> {
        Ok(self.0.lock().unwrap().get(&key(ticket)).cloned())
    }
}

impl ChunkSink for Store {
    fn put(&self, ticket: &ChunkTicket, data: ChunkData) -> Result<(), SourceError> {
        self.0.lock().unwrap().insert(key(ticket), Arc::new(data));
        Ok(())
    }
}

struct Server {
    endpoint: String,
    store: Arc<Store>,
    _stop: oneshot::Sender<()>,
}

async fn start(config: ServerConfig) -> Server {
    let store = Arc::new(Store::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let service = ChunkFlightService::new(store.clone(), store.clone(), config);
    tokio::spawn(serve(listener, service, async {
        let _ = stopped.await;
    }));
    Server {
        endpoint,
        store,
        _stop: stop,
    }
}

/// A plain Flight client, to send what `ChunkClient` never would.
async fn raw_client(server: &Server) -> FlightServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(server.endpoint.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    FlightServiceClient::new(channel)
}

fn hold(server: &Server, ticket: &ChunkTicket, chunk: ChunkData) {
    server.store.put(ticket, chunk).unwrap();
}

fn config(compression: Option<Compression>) -> ClientConfig {
    ClientConfig {
        compression,
        ..ClientConfig::within(PATIENCE)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_chunk_is_served_bit_exactly_compressed_or_not() {
    let server = start(ServerConfig::default()).await;
    let chunks = every_chunk();
    for (i, (_, chunk)) in chunks.iter().enumerate() {
        hold(&server, &ChunkTicket::new(1, i as u64, 0, 1), chunk.clone());
    }
    for compression in [None, Some(Compression::Lz4Frame), Some(Compression::Zstd)] {
        let mut client = ChunkClient::connect(&server.endpoint, config(compression))
            .await
            .unwrap();
        for (i, (name, chunk)) in chunks.iter().enumerate() {
            let got = client
                .fetch(&ChunkTicket::new(1, i as u64, 0, 1))
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_bit_exact(&format!("{name} ({compression:?})"), &got, chunk);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_ticket_is_served_in_one_stream_and_refused_whole_if_one_chunk_is_missing() {
    let server = start(ServerConfig::default()).await;
    let chunks = every_chunk();
    let tickets: Vec<ChunkTicket> = (0..chunks.len() as u64)
        .map(|i| ChunkTicket::new(1, 100 - i, i % 3, 1))
        .collect();
    for (ticket, (_, chunk)) in tickets.iter().zip(&chunks) {
        hold(&server, ticket, chunk.clone());
    }
    let mut client = ChunkClient::connect(&server.endpoint, config(None))
        .await
        .unwrap();
    let got = client
        .fetch_batch(&ChunkTicket::batch(&tickets).unwrap())
        .await
        .unwrap();
    assert_eq!(got.len(), chunks.len());
    for ((name, chunk), got) in chunks.iter().zip(&got) {
        assert_bit_exact(name, got, chunk);
    }
    // One chunk of the batch is not held: the whole request is refused, naming it.
    let mut with_unknown = tickets.clone();
    with_unknown.insert(2, ChunkTicket::new(1, 7, 0, 1));
    match client
        .fetch_batch(&ChunkTicket::batch(&with_unknown).unwrap())
        .await
        .unwrap_err()
    {
        WireError::NotFound(message) => {
            assert!(message.contains("chunk 7 of job 1 (attempt 0"), "{message}")
        }
        other => panic!("{other}"),
    }
    // A put names one chunk.
    let err = put_chunk(
        &server.endpoint,
        &ChunkTicket::batch(&tickets[..2]).unwrap(),
        &large_tensor(8),
        PATIENCE,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, WireError::InvalidRequest(m) if m.contains("a put names one chunk")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_chunk_is_served_in_many_messages() {
    let server = start(ServerConfig {
        max_flight_data_size: 256 << 10,
        ..ServerConfig::default()
    })
    .await;
    let ticket = ChunkTicket::new(2, 1, 3, 1);
    let chunk = large_tensor(1 << 20); // 8 MiB
    hold(&server, &ticket, chunk.clone());
    let got = fetch_chunk(&server.endpoint, &ticket, PATIENCE)
        .await
        .unwrap();
    assert_bit_exact("8 MiB tensor", &got, &chunk);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn put_stores_what_fetch_then_serves() {
    let server = start(ServerConfig::default()).await;
    for (i, (name, chunk)) in every_chunk().into_iter().enumerate() {
        let ticket = ChunkTicket::new(5, i as u64, 1, 2);
        put_chunk(&server.endpoint, &ticket, &chunk, PATIENCE)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let stored = server.store.chunk(&ticket).unwrap().expect(&name);
        assert_bit_exact(&name, &stored, &chunk);
        let fetched = fetch_chunk(&server.endpoint, &ticket, PATIENCE)
            .await
            .unwrap();
        assert_bit_exact(&name, &fetched, &chunk);
    }
}

#[tokio::test]
async fn an_unknown_chunk_is_not_found_by_name() {
    let server = start(ServerConfig::default()).await;
    hold(&server, &ChunkTicket::new(1, 5, 0, 1), large_tensor(8));
    // Same chunk, another attempt: not the copy this worker holds.
    let err = fetch_chunk(&server.endpoint, &ChunkTicket::new(1, 5, 1, 1), PATIENCE)
        .await
        .unwrap_err();
    match err {
        WireError::NotFound(message) => {
            assert!(message.contains("chunk 5 of job 1 (attempt 1"), "{message}")
        }
        other => panic!("{other}"),
    }
}

/// A source whose storage dropped every chunk it is asked for.
struct Dropping;

impl ChunkSource for Dropping {
    fn chunk(&self, ticket: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError> {
        Err(SourceError::Dropped {
            chunk: ticket.to_string(),
        })
    }
}

#[tokio::test]
async fn a_chunk_the_holder_dropped_is_reported_dropped_not_lost() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let (_stop, stopped) = oneshot::channel::<()>();
    let sink = Arc::new(Store::default());
    let service = ChunkFlightService::new(Arc::new(Dropping), sink, ServerConfig::default());
    tokio::spawn(serve(listener, service, async {
        let _ = stopped.await;
    }));
    let err = fetch_chunk(&endpoint, &ChunkTicket::new(1, 5, 2, 1), PATIENCE)
        .await
        .unwrap_err();
    match err {
        WireError::Dropped(message) => {
            assert!(message.contains("chunk 5 of job 1 (attempt 2"), "{message}")
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_ticket_for_another_incarnation_names_nothing() {
    let server = start(ServerConfig {
        incarnation: Some(7),
        ..ServerConfig::default()
    })
    .await;
    let old = ChunkTicket::new(1, 5, 0, 6);
    hold(&server, &old, large_tensor(8));
    match fetch_chunk(&server.endpoint, &old, PATIENCE).await {
        Err(WireError::NotFound(message)) => {
            assert!(
                message.contains("incarnation 6") && message.contains("now 7"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    let err = put_chunk(&server.endpoint, &old, &large_tensor(8), PATIENCE)
        .await
        .unwrap_err();
    assert!(matches!(err, WireError::NotFound(_)), "{err}");
    let current = ChunkTicket::new(1, 5, 0, 7);
    put_chunk(&server.endpoint, &current, &large_tensor(8), PATIENCE)
        .await
        .unwrap();
    let got = fetch_chunk(&server.endpoint, &current, PATIENCE)
        .await
        .unwrap();
    assert_bit_exact("current incarnation", &got, &large_tensor(8));
}

#[tokio::test]
async fn a_ticket_of_another_protocol_version_is_refused_naming_both() {
    let server = start(ServerConfig::default()).await;
    let mut ticket = ChunkTicket::new(1, 5, 0, 1);
    ticket.protocol_version = PROTOCOL_VERSION + 41;
    hold(&server, &ticket, large_tensor(8));
    let err = fetch_chunk(&server.endpoint, &ticket, PATIENCE)
        .await
        .unwrap_err();
    match err {
        WireError::VersionMismatch(message) => {
            assert!(message.contains(&format!("version {}", PROTOCOL_VERSION + 41)));
            assert!(
                message.contains(&format!("version {PROTOCOL_VERSION}")),
                "{message}"
            );
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn malformed_and_oversized_tickets_are_invalid_arguments() {
    let server = start(ServerConfig::default()).await;
    let mut raw = raw_client(&server).await;
    for (bytes, says) in [
        (vec![0x08, 0xff], "malformed"),
        (vec![0xff], "malformed"),
        (
            vec![0u8; MAX_TICKET_BYTES + 1],
            &format!("over the {MAX_TICKET_BYTES}-byte limit"),
        ),
    ] {
        let status = raw.do_get(Ticket::new(bytes)).await.unwrap_err();
        match WireError::from_status(&status) {
            WireError::InvalidRequest(message) => assert!(message.contains(says), "{message}"),
            other => panic!("{other}"),
        }
    }
    // A put whose descriptor is not a ticket.
    let chunk = large_tensor(8);
    let mut client = ChunkClient::connect(&server.endpoint, config(None))
        .await
        .unwrap();
    let mut ticket = ChunkTicket::new(1, 1, 0, 1);
    ticket.protocol_version = 0;
    assert!(matches!(
        client.put(&ticket, &chunk).await,
        Err(WireError::VersionMismatch(_))
    ));
    // And an unknown compression name.
    let mut request =
        tonic::Request::new(Ticket::new(encode_ticket(&ChunkTicket::new(1, 1, 0, 1))));
    request
        .metadata_mut()
        .insert("tessera-ipc-compression", "brotli".parse().unwrap());
    let status = raw.do_get(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("brotli"));
}

#[tokio::test]
async fn other_flight_methods_are_unimplemented() {
    let server = start(ServerConfig::default()).await;
    let mut raw = raw_client(&server).await;
    let status = raw.list_actions(Empty {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    assert!(status.message().contains("list_actions"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_is_refused_not_allocated() {
    // The server sends ~1 MiB messages; this client accepts 64 KiB.
    let server = start(ServerConfig {
        max_flight_data_size: 1 << 20,
        ..ServerConfig::default()
    })
    .await;
    let ticket = ChunkTicket::new(1, 1, 0, 1);
    hold(&server, &ticket, large_tensor(1 << 18)); // 2 MiB
    let small = ClientConfig {
        max_message_bytes: 64 << 10,
        ..config(None)
    };
    let mut client = ChunkClient::connect(&server.endpoint, small).await.unwrap();
    assert!(matches!(
        client.fetch(&ticket).await,
        Err(WireError::MessageTooLarge(_))
    ));

    // The other way: a server that accepts 64 KiB messages refuses a 1 MiB one.
    let strict = start(ServerConfig {
        max_message_bytes: 64 << 10,
        ..ServerConfig::default()
    })
    .await;
    let err = put_chunk(&strict.endpoint, &ticket, &large_tensor(1 << 18), PATIENCE)
        .await
        .unwrap_err();
    assert!(matches!(err, WireError::MessageTooLarge(_)), "{err}");
    assert!(strict.store.0.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_over_the_chunk_limit_is_refused() {
    let server = start(ServerConfig {
        max_chunk_bytes: 100_000,
        ..ServerConfig::default()
    })
    .await;
    let ticket = ChunkTicket::new(1, 1, 0, 1);
    let err = put_chunk(&server.endpoint, &ticket, &large_tensor(1 << 16), PATIENCE)
        .await
        .unwrap_err();
    match err {
        WireError::Status { code, message } => {
            assert_eq!(code, tonic::Code::ResourceExhausted);
            assert!(message.contains("100000-byte limit"), "{message}");
        }
        other => panic!("{other}"),
    }
    assert!(server.store.0.lock().unwrap().is_empty());
}

/// A source that blocks until the test lets it go, telling the test it was called.
struct Stuck {
    called: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl ChunkSource for Stuck {
    fn chunk(&self, _ticket: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError> {
        if let Some(tx) = self.called.lock().unwrap().take() {
            let _ = tx.send(());
        }
        let _ = self.release.lock().unwrap().recv();
        Ok(None)
    }
}

impl ChunkSink for Stuck {
    fn put(&self, _ticket: &ChunkTicket, _data: ChunkData) -> Result<(), SourceError> {
        Ok(())
    }
}

#[test]
fn a_server_dropped_mid_request_is_an_error_not_a_hang() {
    // The server runs on its own runtime, which the test drops mid-request: its sockets
    // close as a dying worker process's would.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (called_tx, called_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    let stuck = Arc::new(Stuck {
        called: Mutex::new(Some(called_tx)),
        release: Mutex::new(release_rx),
    });
    let listener = server_rt
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let service = ChunkFlightService::new(stuck.clone(), stuck, ServerConfig::default());
    server_rt.spawn(serve(listener, service, std::future::pending()));

    let client_rt = tokio::runtime::Runtime::new().unwrap();
    let fetch = client_rt.spawn(async move {
        fetch_chunk(&endpoint, &ChunkTicket::new(1, 1, 0, 1), PATIENCE).await
    });
    called_rx.recv_timeout(PATIENCE).unwrap();
    server_rt.shutdown_background();
    let result = client_rt.block_on(fetch).unwrap();
    drop(release_tx);
    match result {
        Err(WireError::Timeout { .. }) => panic!("the broken connection went unnoticed"),
        Err(_) => {}
        Ok(chunk) => panic!("got a {} from a dead server", chunk.kind_name()),
    }
}

#[tokio::test]
async fn a_silent_peer_times_out_and_a_closed_port_is_a_connect_error() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let quick = Duration::from_millis(300);
    let err = fetch_chunk(&endpoint, &ChunkTicket::new(1, 1, 0, 1), quick)
        .await
        .unwrap_err();
    assert!(
        matches!(err, WireError::Timeout { after, .. } if after == quick),
        "{err}"
    );
    drop(listener);

    let err = fetch_chunk(&endpoint, &ChunkTicket::new(1, 1, 0, 1), PATIENCE)
        .await
        .unwrap_err();
    assert!(matches!(err, WireError::Connect { .. }), "{err}");
    assert!(matches!(
        fetch_chunk("not a uri", &ChunkTicket::new(1, 1, 0, 1), PATIENCE).await,
        Err(WireError::InvalidEndpoint { .. })
    ));
}

#[tokio::test]
async fn a_service_with_a_secret_serves_only_callers_that_have_it() {
    let secret = Secret::new("flight-test-secret-0123456789").unwrap();
    let server = start(ServerConfig {
        secret: Some(secret.clone()),
        ..ServerConfig::default()
    })
    .await;
    let ticket = ChunkTicket::new(1, 2, 0, 1);
    hold(&server, &ticket, large_tensor(4));
    let wrong = Secret::new("another-secret-0123456789").unwrap();
    for presented in [None, Some(wrong)] {
        let cfg = ClientConfig {
            secret: presented,
            ..config(None)
        };
        let mut client = ChunkClient::connect(&server.endpoint, cfg).await.unwrap();
        match client.fetch(&ticket).await {
            Err(WireError::Status { code, message }) => {
                assert_eq!(code, tonic::Code::Unauthenticated, "{message}");
                assert!(message.contains("shared secret"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    let cfg = ClientConfig {
        secret: Some(secret),
        ..config(None)
    };
    let mut client = ChunkClient::connect(&server.endpoint, cfg).await.unwrap();
    assert_bit_exact(
        "with the secret",
        &client.fetch(&ticket).await.unwrap(),
        &large_tensor(4),
    );
}
