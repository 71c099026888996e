//! The scheduler process's gRPC services: `WorkerControl` (registration and the one
//! long-lived stream per worker) and `Jobs` (clients run graphs, release gathered
//! chunks, ask what the cluster has), over the state in `core`.
//!
//! Every handler locks the state briefly and sends what it decided on unbounded channels,
//! so a slow worker or client never holds the lock. A worker whose stream breaks is lost
//! at once; a silent one after [`SchedulerConfig::heartbeat_ttl`]. A client that drops
//! its job's event stream cancels the job.

mod core;
mod dashboard;
mod metrics;

pub(crate) use tessera_cluster::convert::{kernel_error, kernel_error_payload};

use crate::scheduler::core::{Core, SharedCore};
use futures::{Stream, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tessera_cluster::auth::{check_listen_address, RequireSecret, Secret};
use tessera_cluster::connect::MAX_CONTROL_MESSAGE_BYTES;
use tessera_cluster::error::ClusterError;
use tessera_core::{ChunkGraph, JobId};
use tessera_proto::pb::{
    self, jobs_server::Jobs, jobs_server::JobsServer, worker_control_server::WorkerControl,
    worker_control_server::WorkerControlServer, worker_message, SchedulerMessage, WorkerMessage,
};
use tessera_proto::{
    decode_payload, DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_HEARTBEAT_TTL, DEFAULT_NO_WORKER_GRACE,
    PROTOCOL_VERSION,
};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tonic::service::InterceptorLayer;
use tonic::{Request, Response, Status, Streaming};

/// How long calls in flight may go on once the scheduler is told to stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Liveness and access settings of a scheduler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// How often workers send heartbeats (told at registration).
    pub heartbeat_interval: Duration,
    /// A worker silent this long is lost.
    pub heartbeat_ttl: Duration,
    /// Running jobs fail after this long without any worker.
    pub no_worker_grace: Duration,
    /// The cluster's shared secret: calls without it are refused (see [`tessera_cluster::auth`]).
    pub secret: Option<Secret>,
}

impl Default for SchedulerConfig {
    fn default() -> SchedulerConfig {
        SchedulerConfig {
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            heartbeat_ttl: DEFAULT_HEARTBEAT_TTL,
            no_worker_grace: DEFAULT_NO_WORKER_GRACE,
            secret: None,
        }
    }
}

/// The scheduler's web endpoints, each on a listener its caller bound (so it knows the
/// ports before serving starts).
#[derive(Debug, Default)]
pub struct WebListeners {
    /// Prometheus `GET /metrics` alone.
    pub metrics: Option<TcpListener>,
    /// The live dashboard: its page, its event stream and `/metrics`.
    pub dashboard: Option<std::net::TcpListener>,
}

/// Runs the scheduler's services on `listener` until `shutdown` completes (then calls in
/// flight get 2 s before every connection, workers' streams included, is closed), with the
/// web endpoints of `web` (each refused off loopback without a secret; the dashboard's token
/// is the secret, so it must then be letters, digits and `- . _ ~`).
pub async fn serve_scheduler(
    listener: TcpListener,
    web: WebListeners,
    config: SchedulerConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ClusterError> {
    check_listen_address("scheduler", listener.local_addr()?, config.secret.as_ref())?;
    if let Some(m) = &web.metrics {
        let address = m.local_addr()?;
        check_listen_address(
            "scheduler's metrics endpoint",
            address,
            config.secret.as_ref(),
        )?;
    }
    let core: SharedCore = Arc::new(Mutex::new(Core::new(config.clone())));
    // Dropped, at the end, it stops serving.
    let _dashboard = web
        .dashboard
        .map(|d| dashboard::start(d, &core, config.secret.as_ref()))
        .transpose()?;
    let watchdog = tokio::spawn(watch_liveness(Arc::clone(&core), config.heartbeat_ttl));
    let metrics = web
        .metrics
        .map(|m| tokio::spawn(metrics::serve(m, Arc::clone(&core), config.secret.clone())));
    let gate = RequireSecret::new(config.secret.clone(), "scheduler");
    let service = Service {
        core,
        config: Arc::new(config),
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let signalled = async move {
        shutdown.await;
        let _ = stop_tx.send(());
    };
    let serve = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(5)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .layer(InterceptorLayer::new(gate))
        .add_service(
            WorkerControlServer::new(service.clone())
                .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES),
        )
        .add_service(
            JobsServer::new(service)
                .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES),
        )
        .serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true)),
            signalled,
        );
    // tonic's graceful shutdown waits for every connection to close, and a worker's
    // stream never does: calls in flight get SHUTDOWN_GRACE, then the connections are
    // dropped (the workers see their scheduler gone and end).
    let result = tokio::select! {
        result = serve => result,
        () = async {
            let _ = stop_rx.await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => Ok(()),
    };
    watchdog.abort();
    if let Some(metrics) = metrics {
        metrics.abort();
    }
    Ok(result?)
}

/// Hands the worker of `incarnation`'s heartbeats and task reports to the scheduler until
/// its stream ends; returns how it ended.
async fn read_worker(
    mut inbound: Streaming<WorkerMessage>,
    core: SharedCore,
    incarnation: u64,
) -> String {
    loop {
        match inbound.next().await {
            Some(Ok(message)) => match message.kind {
                Some(worker_message::Kind::Heartbeat(beat)) if beat.incarnation == incarnation => {
                    lock(&core).heartbeat(&beat)
                }
                Some(worker_message::Kind::TaskStatus(status))
                    if status.incarnation == incarnation =>
                {
                    lock(&core).on_status(status)
                }
                _ => {}
            },
            Some(Err(status)) => return format!("stream broke: {}", status.message()),
            None => return "stream closed".to_string(),
        }
    }
}

/// Checks heartbeats a few times per TTL.
async fn watch_liveness(core: SharedCore, heartbeat_ttl: Duration) {
    let period = (heartbeat_ttl / 4).max(Duration::from_millis(50));
    let mut ticks = tokio::time::interval(period);
    loop {
        ticks.tick().await;
        lock(&core).check_liveness(Instant::now());
    }
}

/// The state, even if a handler panicked while holding it (its data is still consistent
/// enough to fail jobs with).
fn lock(core: &SharedCore) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Clone)]
struct Service {
    core: SharedCore,
    config: Arc<SchedulerConfig>,
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A stream of what arrives on `rx`.
fn channel_stream<T: Send + 'static>(
    rx: mpsc::UnboundedReceiver<Result<T, Status>>,
) -> BoxStream<T> {
    Box::pin(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

#[tonic::async_trait]
impl WorkerControl for Service {
    async fn register_worker(
        &self,
        request: Request<pb::RegisterWorkerRequest>,
    ) -> Result<Response<pb::RegisterWorkerReply>, Status> {
        let request = request.into_inner();
        let reply = match lock(&self.core).register(&request) {
            Ok(registered) => pb::RegisterWorkerReply {
                accepted: true,
                incarnation: registered.incarnation,
                reason: String::new(),
                protocol_version: PROTOCOL_VERSION,
                heartbeat_interval_ms: millis(self.config.heartbeat_interval),
                heartbeat_ttl_ms: millis(self.config.heartbeat_ttl),
            },
            Err(reason) => {
                tracing::warn!(worker = %request.worker_name, %reason, "registration refused");
                pb::RegisterWorkerReply {
                    accepted: false,
                    reason,
                    protocol_version: PROTOCOL_VERSION,
                    ..Default::default()
                }
            }
        };
        Ok(Response::new(reply))
    }

    type WorkerStreamStream = BoxStream<SchedulerMessage>;

    async fn worker_stream(
        &self,
        request: Request<Streaming<WorkerMessage>>,
    ) -> Result<Response<Self::WorkerStreamStream>, Status> {
        let mut inbound = request.into_inner();
        let first = inbound
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("the worker stream closed before opening"))?;
        let Some(worker_message::Kind::Open(open)) = first.kind else {
            return Err(Status::invalid_argument(
                "a worker stream must start with StreamOpen",
            ));
        };
        if open.protocol_version != PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "protocol version {} (scheduler: {PROTOCOL_VERSION})",
                open.protocol_version
            )));
        }
        let incarnation = open.incarnation;
        let (tx, rx) = mpsc::unbounded_channel();
        if lock(&self.core).open_stream(incarnation, tx).is_none() {
            return Err(Status::not_found(format!(
                "incarnation {incarnation} is not registered (lost or never registered): \
                 register again"
            )));
        }
        tracing::info!(incarnation, "worker stream open");
        let core = Arc::clone(&self.core);
        let reader = tokio::spawn(read_worker(inbound, Arc::clone(&core), incarnation));
        // The worker is lost when its stream ends, and also if handling one of its
        // messages failed (a panic): waiting for the heartbeat TTL would leave its tasks
        // unattended meanwhile.
        tokio::spawn(async move {
            let cause = match reader.await {
                Ok(cause) => cause,
                Err(e) => {
                    tracing::error!(incarnation, error = %e, "handling a worker's message failed");
                    format!("the scheduler failed handling its message: {e}")
                }
            };
            lock(&core).worker_lost(incarnation, &cause);
        });
        Ok(Response::new(channel_stream(rx)))
    }
}

#[tonic::async_trait]
impl Jobs for Service {
    type RunJobStream = BoxStream<pb::JobEvent>;

    async fn run_job(
        &self,
        request: Request<pb::SubmitJobRequest>,
    ) -> Result<Response<Self::RunJobStream>, Status> {
        let request = request.into_inner();
        check_client_version(request.protocol_version)?;
        let graph: ChunkGraph = decode_payload(&request.graph)
            .map_err(|e| Status::invalid_argument(format!("undecodable chunk graph: {e}")))?;
        graph
            .validate()
            .map_err(|e| Status::invalid_argument(format!("invalid chunk graph: {e}")))?;
        let (tx, rx) = mpsc::unbounded_channel();
        let job = lock(&self.core).submit(graph, tx.clone(), request.session_id);
        tracing::debug!(%job, "job submitted");
        // Cancel the job when the client drops its stream.
        let core = Arc::clone(&self.core);
        tokio::spawn(async move {
            tx.closed().await;
            lock(&core).cancel(job, "the client went away");
        });
        Ok(Response::new(channel_stream(rx)))
    }

    async fn cancel_job(
        &self,
        request: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobReply>, Status> {
        let job = JobId(request.into_inner().job_id);
        let cancelled = lock(&self.core).cancel(job, "the client asked");
        Ok(Response::new(pb::CancelJobReply { cancelled }))
    }

    async fn release_chunks(
        &self,
        request: Request<pb::ReleaseChunksRequest>,
    ) -> Result<Response<pb::ReleaseChunksReply>, Status> {
        let released = lock(&self.core).release(&request.into_inner().chunks);
        Ok(Response::new(pb::ReleaseChunksReply { released }))
    }

    async fn place_chunks(
        &self,
        request: Request<pb::PlaceChunksRequest>,
    ) -> Result<Response<pb::PlaceChunksReply>, Status> {
        let request = request.into_inner();
        check_client_version(request.protocol_version)?;
        let locations = lock(&self.core)
            .place_chunks(&request.nbytes, request.session_id)
            .map_err(Status::unavailable)?;
        Ok(Response::new(pb::PlaceChunksReply { locations }))
    }

    async fn cluster_info(
        &self,
        _: Request<pb::ClusterInfoRequest>,
    ) -> Result<Response<pb::ClusterInfoReply>, Status> {
        Ok(Response::new(lock(&self.core).info()))
    }

    type OpenSessionStream = BoxStream<pb::SessionEvent>;

    async fn open_session(
        &self,
        request: Request<pb::OpenSessionRequest>,
    ) -> Result<Response<Self::OpenSessionStream>, Status> {
        check_client_version(request.into_inner().protocol_version)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let session_id = lock(&self.core).open_session();
        let _ = tx.send(Ok(pb::SessionEvent { session_id }));
        tracing::debug!(session_id, "client session opened");
        // The client is gone when its stream is dropped.
        let core = Arc::clone(&self.core);
        tokio::spawn(async move {
            tx.closed().await;
            lock(&core).close_session(session_id);
        });
        Ok(Response::new(channel_stream(rx)))
    }
}

/// Refuses a client of another protocol version, naming both.
fn check_client_version(version: u32) -> Result<(), Status> {
    if version == PROTOCOL_VERSION {
        return Ok(());
    }
    Err(Status::failed_precondition(format!(
        "client protocol version {version} (scheduler: {PROTOCOL_VERSION})"
    )))
}

fn millis(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}
