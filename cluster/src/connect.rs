//! A client's connection to a cluster: runs chunk graphs on the scheduler and gathers
//! their outputs from the workers that hold them, reporting through the same
//! [`JobHandle`] events as a local actor system, so the runtime runs the same jobs on
//! either.
//!
//! Outputs handed out as data are fetched over Flight and then released on the workers;
//! kept outputs (persisted data) stay on their workers as [`KeptChunk`]s whose last drop
//! releases them through the scheduler.

use crate::auth::{AddSecret, AuthedChannel, Secret};
use crate::client::{plan_fetches, ClientConfig, Connections};
use crate::convert::job_error;
use crate::error::ClusterError;
use crate::error::WireError;
use crossbeam_channel::Sender;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tessera_core::{
    ChunkGraph, ChunkId, ChunkKey, ChunkTask, JobError, JobEvent, JobHandle, JobId, JobOutput,
    JobStats, KeptChunk, KeptOwner, StoredInput, TaskStream,
};
use tessera_kernels::{ChunkData, ChunkOp};
use tessera_proto::pb::{self, job_event, jobs_client::JobsClient, ChunkLocation};
use tessera_proto::{decode_payload, encode_payload, ChunkTicket, PROTOCOL_VERSION};
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, watch};
use tonic::transport::{Channel, Endpoint};

mod early;

use early::{same_copy, EarlyGather, Gathered};

/// The largest gRPC message the control plane takes (graphs with literals inside).
pub const MAX_CONTROL_MESSAGE_BYTES: usize = 64 << 20;

/// The scheduler address as a gRPC endpoint URI.
pub fn endpoint_uri(address: &str) -> String {
    if address.starts_with("http://") || address.starts_with("https://") {
        address.to_string()
    } else {
        format!("http://{address}")
    }
}

/// Connects a channel to the scheduler at `address`.
pub async fn connect_scheduler(address: &str, timeout: Duration) -> Result<Channel, ClusterError> {
    let unreachable = |reason: String| ClusterError::Unreachable {
        address: address.to_string(),
        reason,
    };
    let endpoint = Endpoint::from_shared(endpoint_uri(address))
        .map_err(|e| unreachable(e.to_string()))?
        .connect_timeout(timeout)
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    match tokio::time::timeout(timeout, endpoint.connect()).await {
        Ok(Ok(channel)) => Ok(channel),
        Ok(Err(e)) => Err(unreachable(crate::client::source_chain(&e))),
        Err(_) => Err(unreachable(format!("no connection within {timeout:?}"))),
    }
}

/// What a cluster has now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Workers registered.
    pub workers: u32,
    /// Their threads in all.
    pub nthreads: u32,
    /// Their memory limits in all, in bytes.
    pub memory_limit: u64,
    /// Each worker, in registration order.
    pub worker_list: Vec<WorkerInfo>,
}

/// One worker as the scheduler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Its name (`--name`).
    pub name: String,
    /// Its Flight service, `http://HOST:PORT`.
    pub flight_address: String,
    /// Its registration's incarnation.
    pub incarnation: u64,
    /// Threads of its CPU pool.
    pub nthreads: u32,
    /// Its memory limit, in bytes.
    pub memory_limit: u64,
    /// Bytes its actors had reserved at its last heartbeat.
    pub memory_used: u64,
    /// Tasks running on it at its last heartbeat.
    pub tasks_running: u32,
    /// Chunks it holds for running jobs and persisted data.
    pub chunks_held: u64,
    /// GPUs it runs tasks on (`tessera-worker --gpus`).
    pub gpus: u32,
}

impl From<pb::WorkerSummary> for WorkerInfo {
    fn from(w: pb::WorkerSummary) -> WorkerInfo {
        WorkerInfo {
            name: w.name,
            flight_address: w.flight_address,
            incarnation: w.incarnation,
            nthreads: w.nthreads,
            memory_limit: w.memory_limit,
            memory_used: w.memory_used,
            tasks_running: w.tasks_running,
            chunks_held: w.chunks_held,
            gpus: w.gpus,
        }
    }
}

/// A connection to a scheduler. Send + Sync; owns a small tokio runtime.
pub struct ClusterClient {
    runtime: Runtime,
    jobs: JobsClient<AuthedChannel>,
    address: String,
    releaser: Arc<Releaser>,
    /// Connections to the workers, to send literals and gather outputs.
    flight: Connections,
    /// This client's session on the scheduler (`Jobs.OpenSession`): what its jobs leave
    /// on the workers is released when the session's stream, held open by a task of
    /// `runtime`, ends with it.
    session: u64,
}

impl std::fmt::Debug for ClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterClient({})", self.address)
    }
}

impl ClusterClient {
    /// Connects to the scheduler at `address` (`HOST:PORT`) within `timeout`, sending
    /// `secret` (the cluster's shared secret, if it has one) with every call.
    pub fn connect(
        address: &str,
        timeout: Duration,
        secret: Option<&Secret>,
    ) -> Result<ClusterClient, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tessera-client")
            .enable_all()
            .build()?;
        let channel = runtime.block_on(connect_scheduler(address, timeout))?;
        let jobs = JobsClient::with_interceptor(channel, AddSecret::new(secret))
            .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES);
        let session = runtime
            .block_on(open_session(jobs.clone()))
            .map_err(|status| ClusterError::Scheduler {
                address: address.to_string(),
                code: status.code(),
                message: status.message().to_string(),
            })?;
        let (tx, rx) = mpsc::unbounded_channel();
        runtime.spawn(release_loop(jobs.clone(), rx));
        Ok(ClusterClient {
            runtime,
            jobs,
            address: address.to_string(),
            releaser: Arc::new(Releaser { tx }),
            flight: Connections::new(ClientConfig {
                secret: secret.cloned(),
                ..ClientConfig::default()
            }),
            session,
        })
    }

    /// The scheduler's address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The workers registered now.
    pub fn info(&self) -> Result<ClusterInfo, ClusterError> {
        let mut jobs = self.jobs.clone();
        let reply = self
            .runtime
            .block_on(jobs.cluster_info(pb::ClusterInfoRequest {}))
            .map_err(|s| self.status_error(&s))?
            .into_inner();
        Ok(ClusterInfo {
            workers: reply.workers,
            nthreads: reply.nthreads,
            memory_limit: reply.memory_limit,
            worker_list: reply
                .worker_list
                .into_iter()
                .map(WorkerInfo::from)
                .collect(),
        })
    }

    /// Runs `graph` on the cluster; the handle receives its progress and result, with the
    /// outputs gathered (or kept on the workers, if the graph keeps them).
    ///
    /// Literals (data made in this process, such as `from_vec` arrays and `from_arrow`
    /// tables) of [`PUT_LITERAL_BYTES`] or more in all are sent first, straight to the
    /// workers the scheduler names, with Flight `do_put`; the graph names them as stored
    /// inputs and they are released when the job ends. Fewer travel inside the graph.
    pub fn submit(&self, graph: ChunkGraph) -> Result<JobHandle, ClusterError> {
        let (graph, literals) = self.send_literals(graph)?;
        let request = pb::SubmitJobRequest {
            protocol_version: PROTOCOL_VERSION,
            graph: encode_payload(&graph)?,
            session_id: self.session,
        };
        // Leave room for the envelope around the graph.
        let limit = MAX_CONTROL_MESSAGE_BYTES - (64 << 10);
        if request.graph.len() > limit {
            return Err(ClusterError::GraphTooLarge {
                bytes: request.graph.len(),
                limit,
            });
        }
        let (events, rx) = crossbeam_channel::unbounded();
        let (cancel, cancelled) = watch::channel(false);
        let run = RunJob {
            jobs: self.jobs.clone(),
            address: self.address.clone(),
            releaser: Arc::clone(&self.releaser),
            flight: self.flight.clone(),
            keep: graph.keep_outputs,
            events,
            _literals: literals,
        };
        self.runtime.spawn(run.drive(request, cancelled));
        Ok(JobHandle::from_events_with_cancel(rx, move || {
            // The job has ended when nobody listens any more.
            let _ = cancel.send(true);
        }))
    }

    /// Sends the graph's literals, if they come to [`PUT_LITERAL_BYTES`] or more, to the
    /// workers the scheduler places them on and names them in the graph as stored inputs
    /// instead. The handles returned release them on the workers when dropped (also when
    /// a send fails: then every one placed is released).
    fn send_literals(
        &self,
        mut graph: ChunkGraph,
    ) -> Result<(ChunkGraph, Vec<Arc<KeptChunk>>), ClusterError> {
        let literal = |t: &ChunkTask| match &t.op {
            ChunkOp::Literal(data) if t.parts.is_empty() => Some(Arc::clone(data)),
            _ => None,
        };
        let total: usize = graph
            .tasks
            .iter()
            .filter_map(literal)
            .map(|d| d.nbytes())
            .sum();
        if total < PUT_LITERAL_BYTES {
            return Ok((graph, Vec::new()));
        }
        let (mut keys, mut data) = (Vec::new(), Vec::new());
        graph.tasks.retain(|t| match literal(t) {
            Some(d) => {
                keys.push(t.key);
                data.push(d);
                false
            }
            None => true,
        });
        let request = pb::PlaceChunksRequest {
            protocol_version: PROTOCOL_VERSION,
            nbytes: data.iter().map(|d| d.nbytes() as u64).collect(),
            session_id: self.session,
        };
        let mut jobs = self.jobs.clone();
        let locations = self
            .runtime
            .block_on(jobs.place_chunks(request))
            .map_err(|s| self.status_error(&s))?
            .into_inner()
            .locations;
        let owner: Arc<dyn KeptOwner> = Arc::clone(&self.releaser) as _;
        let handles: Vec<Arc<KeptChunk>> = locations
            .iter()
            .map(|l| {
                let id = ChunkId {
                    job: JobId(l.job_id),
                    key: ChunkKey(l.chunk_key),
                };
                Arc::new(KeptChunk::new(id, l.nbytes, Arc::clone(&owner)))
            })
            .collect();
        if locations.len() != data.len() {
            return Err(ClusterError::Wire(WireError::Malformed(format!(
                "the scheduler placed {} of {} chunks",
                locations.len(),
                data.len()
            ))));
        }
        self.runtime
            .block_on(put_all(&locations, &data, &self.flight))?;
        for (key, handle) in keys.iter().zip(&handles) {
            graph.stored.push(StoredInput {
                key: *key,
                id: handle.id(),
                nbytes: handle.nbytes(),
                given: false,
            });
        }
        Ok((graph, handles))
    }

    fn status_error(&self, status: &tonic::Status) -> ClusterError {
        ClusterError::Scheduler {
            address: self.address.clone(),
            code: status.code(),
            message: status.message().to_string(),
        }
    }
}

/// Releases chunks on the cluster, batched, off the caller's thread.
struct Releaser {
    tx: mpsc::UnboundedSender<ChunkId>,
}

impl KeptOwner for Releaser {
    fn unkeep(&self, id: ChunkId) {
        let _ = self.tx.send(id);
    }
}

/// Opens this client's session: its id, once the scheduler has named it. A task of the
/// calling runtime then holds the stream open until the runtime stops (the client is
/// dropped, or its process ends).
async fn open_session(mut jobs: JobsClient<AuthedChannel>) -> Result<u64, tonic::Status> {
    let request = pb::OpenSessionRequest {
        protocol_version: PROTOCOL_VERSION,
    };
    let mut events = jobs.open_session(request).await?.into_inner();
    let first = events
        .message()
        .await?
        .ok_or_else(|| tonic::Status::unavailable("the session stream closed at once"))?;
    tokio::spawn(async move { while let Ok(Some(_)) = events.message().await {} });
    Ok(first.session_id)
}

/// Sends releases as they come, a batch at a time.
async fn release_loop(
    mut jobs: JobsClient<AuthedChannel>,
    mut rx: mpsc::UnboundedReceiver<ChunkId>,
) {
    while let Some(first) = rx.recv().await {
        let mut chunks = vec![chunk_ref(first)];
        while let Ok(more) = rx.try_recv() {
            chunks.push(chunk_ref(more));
        }
        if let Err(status) = jobs
            .release_chunks(pb::ReleaseChunksRequest { chunks })
            .await
        {
            tracing::debug!(%status, "releasing chunks on the cluster");
        }
    }
}

fn chunk_ref(id: ChunkId) -> pb::ChunkRef {
    pb::ChunkRef {
        job_id: id.job.0,
        chunk_key: id.key.0,
    }
}

/// A graph whose literals come to this many bytes or more has them sent to workers with
/// do_put rather than inside it (see [`ClusterClient::submit`]).
pub const PUT_LITERAL_BYTES: usize = 1 << 20;

/// How often a job runs again because outputs were lost before they were gathered.
const MAX_GATHER_RERUNS: u64 = 3;

/// Why one run of a job gave no output.
enum RunFailure {
    /// The job failed: final, typed.
    Job(JobError),
    /// The job finished, but an output could not be fetched from its holder.
    Gather(String),
}

impl From<JobError> for RunFailure {
    fn from(e: JobError) -> RunFailure {
        RunFailure::Job(e)
    }
}

/// Returns once `cancelled` is true; never if its sender is gone without cancelling.
async fn until_cancelled(cancelled: &mut watch::Receiver<bool>) {
    if cancelled.wait_for(|&c| c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One job's conversation with the scheduler.
struct RunJob {
    jobs: JobsClient<AuthedChannel>,
    address: String,
    releaser: Arc<Releaser>,
    flight: Connections,
    keep: bool,
    events: Sender<JobEvent>,
    /// The job's literals sent with do_put: held on the workers until the job ends and
    /// this is dropped.
    _literals: Vec<Arc<KeptChunk>>,
}

impl RunJob {
    /// Runs the job, again if an output was lost before it could be gathered (a worker
    /// died after the job finished): the graph is a pure function of its inputs, so a
    /// rerun gives the same answer, and the lost gathers show in `chunks_lost`. When
    /// `cancelled` turns true the run is dropped with its event stream, which makes the
    /// scheduler cancel the job on every worker.
    async fn drive(mut self, request: pb::SubmitJobRequest, mut cancelled: watch::Receiver<bool>) {
        let mut lost_gathers = 0;
        let result = loop {
            let run = tokio::select! {
                run = self.run(request.clone()) => run,
                () = until_cancelled(&mut cancelled) => {
                    Err(JobError::SystemStopped("cancelled by its submitter".into()).into())
                }
            };
            match run {
                Ok(mut output) => {
                    output.stats.chunks_lost += lost_gathers;
                    break Ok(output);
                }
                Err(RunFailure::Job(e)) => break Err(e),
                Err(RunFailure::Gather(cause)) if lost_gathers < MAX_GATHER_RERUNS => {
                    tracing::warn!(%cause, "an output was lost before it was gathered; running the job again");
                    lost_gathers += 1;
                }
                Err(RunFailure::Gather(cause)) => {
                    break Err(JobError::ChunkLost {
                        key: ChunkKey(0),
                        op: "gather".into(),
                        losses: lost_gathers as u32 + 1,
                        cause,
                    })
                }
            }
        };
        let _ = self.events.send(JobEvent::Finished(result));
    }

    async fn run(&mut self, request: pb::SubmitJobRequest) -> Result<JobOutput, RunFailure> {
        let lost = |why: String| JobError::SystemStopped(why);
        let mut stream = self
            .jobs
            .run_job(request)
            .await
            .map_err(|s| {
                lost(format!(
                    "the scheduler at {}: {}",
                    self.address,
                    s.message()
                ))
            })?
            .into_inner();
        let mut job = None;
        let mut early = EarlyGather::new(self.flight.clone());
        loop {
            let event = stream
                .message()
                .await
                .map_err(|s| {
                    lost(format!(
                        "lost the scheduler at {}: {}",
                        self.address,
                        s.message()
                    ))
                })?
                .ok_or_else(|| {
                    lost(format!(
                        "the scheduler at {} ended the job's events",
                        self.address
                    ))
                })?;
            match event.kind {
                Some(job_event::Kind::Accepted(_)) => job = Some(JobId(event.job_id)),
                Some(job_event::Kind::Progress(p)) => {
                    let _ = self.events.send(JobEvent::Progress {
                        done: p.done,
                        total: p.total,
                    });
                }
                Some(job_event::Kind::Done(done)) => {
                    let job = job.unwrap_or(JobId(event.job_id));
                    let early = early.finish(&done.outputs).await;
                    return self.gather(job, done, early).await;
                }
                Some(job_event::Kind::Failed(failed)) => {
                    return Err(job_error(failed, &self.address).into())
                }
                Some(job_event::Kind::ChunkFinished(finished)) => {
                    if let (false, Some(location)) = (self.keep, finished.location) {
                        early.fetch(location);
                    }
                }
                None => {}
            }
        }
    }

    /// The finished job's output: handles on kept outputs, or their data — fetched while
    /// the job ran (`early`) where those are the copies `done` names, else fetched now —
    /// from the workers (and then released there).
    async fn gather(
        &self,
        job: JobId,
        done: pb::JobDone,
        mut early: Gathered,
    ) -> Result<JobOutput, RunFailure> {
        let mut stats: JobStats = decode_payload(&done.stats).unwrap_or_default();
        // The scheduler's task stream, for reports and traces (none if undecodable: the
        // result does not depend on it).
        if let Ok(stream) = decode_payload::<TaskStream>(&done.task_stream) {
            stats.stream = Arc::new(vec![Arc::new(stream)]);
        }
        let id = |l: &ChunkLocation| ChunkId {
            job: JobId(l.job_id),
            key: ChunkKey(l.chunk_key),
        };
        if self.keep {
            let owner: Arc<dyn KeptOwner> = Arc::clone(&self.releaser) as _;
            let kept = done
                .outputs
                .iter()
                .map(|l| Arc::new(KeptChunk::new(id(l), l.nbytes, Arc::clone(&owner))))
                .collect();
            return Ok(JobOutput {
                outputs: Vec::new(),
                kept,
                stats,
            });
        }
        let have = done
            .outputs
            .iter()
            .map(|l| {
                early
                    .remove(&(l.job_id, l.chunk_key))
                    .filter(|(copy, _)| same_copy(copy, l))
                    .map(|(_, data)| data)
            })
            .collect();
        let fetched = fetch_all(&done.outputs, have, &self.flight).await;
        // Outputs of this job are gathered (or unreachable): the workers may drop them.
        for l in &done.outputs {
            if l.job_id == job.0 {
                self.releaser.unkeep(id(l));
            }
        }
        let chunks = fetched.map_err(RunFailure::Gather)?;
        Ok(JobOutput {
            outputs: done
                .outputs
                .iter()
                .map(|l| ChunkKey(l.chunk_key))
                .zip(chunks)
                .collect(),
            kept: Vec::new(),
            stats,
        })
    }
}

/// The chunks `locations` name, by the worker holding them: each with its index.
fn by_worker(locations: &[ChunkLocation]) -> HashMap<&str, Vec<(usize, &ChunkLocation)>> {
    let mut workers: HashMap<&str, Vec<(usize, &ChunkLocation)>> = HashMap::new();
    for (i, l) in locations.iter().enumerate() {
        workers
            .entry(l.flight_address.as_str())
            .or_default()
            .push((i, l));
    }
    workers
}

/// Sends `data[i]` to where `locations[i]` says: the workers side by side, each worker's
/// chunks one after another.
async fn put_all(
    locations: &[ChunkLocation],
    data: &[Arc<ChunkData>],
    connections: &Connections,
) -> Result<(), WireError> {
    let per_worker = by_worker(locations)
        .into_iter()
        .map(|(address, chunks)| async move {
            let mut client = connections.client(address).await?;
            for (i, l) in chunks {
                let ticket = ChunkTicket::for_copy(l);
                if let Err(e) = client.put(&ticket, &data[i]).await {
                    connections.forget(address);
                    return Err(e);
                }
            }
            Ok::<_, WireError>(())
        });
    futures::future::try_join_all(per_worker).await.map(|_| ())
}

/// Every chunk of `outputs`, in their order: those `have` holds already, and the rest
/// fetched from the workers side by side, each worker's small chunks in batches
/// ([`plan_fetches`]), its requests one after another.
async fn fetch_all(
    outputs: &[ChunkLocation],
    mut have: Vec<Option<Arc<tessera_kernels::ChunkData>>>,
    connections: &Connections,
) -> Result<Vec<Arc<tessera_kernels::ChunkData>>, String> {
    let missing: Vec<usize> = (0..outputs.len())
        .filter(|&i| have.get(i).is_none_or(Option::is_none))
        .collect();
    let locations: Vec<&ChunkLocation> = missing.iter().map(|&i| &outputs[i]).collect();
    let mut requests: HashMap<&str, Vec<Vec<usize>>> = HashMap::new();
    for request in plan_fetches(&locations) {
        let address = locations[request[0]].flight_address.as_str();
        let request = request.into_iter().map(|r| missing[r]).collect();
        requests.entry(address).or_default().push(request);
    }
    let per_worker = requests.into_iter().map(|(address, requests)| async move {
        let mut client = connections
            .client(address)
            .await
            .map_err(|e| e.to_string())?;
        let mut fetched = Vec::new();
        for request in requests {
            let tickets: Vec<ChunkTicket> = request
                .iter()
                .map(|&i| ChunkTicket::for_copy(&outputs[i]))
                .collect();
            let Some(ticket) = ChunkTicket::batch(&tickets) else {
                continue;
            };
            let chunks = client.fetch_batch(&ticket).await.map_err(|e| {
                connections.forget(address);
                format!("gathering {ticket} from {address}: {e}")
            })?;
            fetched.extend(request.into_iter().zip(chunks.into_iter().map(Arc::new)));
        }
        Ok::<_, String>(fetched)
    });
    let fetched = futures::future::try_join_all(per_worker).await?;
    have.resize(outputs.len(), None);
    for (i, data) in fetched.into_iter().flatten() {
        have[i] = Some(data);
    }
    have.into_iter()
        .enumerate()
        .map(|(i, c)| c.ok_or_else(|| format!("output {i} was not gathered")))
        .collect()
}
