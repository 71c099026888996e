//! The worker agent: a process's own actor system (CPU pool, storage with its memory
//! budget and spill folder) working for a scheduler.
//!
//! It registers (getting an incarnation), opens the one stream to the scheduler, sends
//! heartbeats, and runs each `RunTask` it receives: inputs it holds are read from its own
//! storage, the others are fetched from the peers that hold them over Flight; the task
//! then runs as a one-task graph on the local actors, which keep its output (see
//! [`held`]). Its Flight service serves what it holds to peers and clients. When the
//! scheduler's stream ends the worker stops: a scheduler that comes back starts from
//! nothing, and a new worker process registers as a new incarnation.

mod direct;
mod fetch;
mod held;
mod replicas;

use crate::auth::{check_listen_address, AddSecret, Secret};
use crate::client::{ClientConfig, Connections};
use crate::error::ClusterError;
use crate::scheduler::MAX_CONTROL_MESSAGE_BYTES;
use crate::server::{serve, ChunkFlightService, ServerConfig};
use direct::{cancelled, failed, kernel_failed, DirectTask, Ended, Input};
use fetch::LostPeers;
use held::{Held, HeldChunk};
use replicas::Replicas;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera_actors::{
    worker_index, ActorError, ActorSystem, ChunkGraph, ChunkKey, ChunkTask, JobError, KeptChunk,
    Reservation, StoredInput, SystemConfig, WorkerPool,
};
use tessera_kernels::ChunkOp;
use tessera_proto::pb::{
    self, scheduler_message, worker_control_client::WorkerControlClient, worker_message,
    ChunkLocation, TaskState, WorkerMessage,
};
use tessera_proto::{decode_payload, PROTOCOL_VERSION};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tonic::transport::{Channel, Endpoint};

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// The scheduler's address, `HOST:PORT` (or `http://HOST:PORT`).
    pub scheduler: String,
    /// Where the worker's Flight service listens (port 0: any free port).
    pub listen: SocketAddr,
    /// The `HOST:PORT` peers and clients reach that service at (default: the listen
    /// address, or this host's name when it listens on every interface).
    pub advertise: Option<String>,
    /// The worker's name in logs and errors.
    pub name: String,
    /// Threads of its CPU pool.
    pub nthreads: usize,
    /// Bytes of chunk data it holds in memory before spilling.
    pub memory_limit: u64,
    /// Bytes it may spill to disk.
    pub disk_budget: u64,
    /// Where it makes its spill folder.
    pub spill_dir: PathBuf,
    /// How long connecting to the scheduler may take.
    pub connect_timeout: Duration,
    /// The cluster's shared secret, sent to the scheduler and peers and required of
    /// callers of this worker's Flight service. Needed to listen off loopback.
    pub secret: Option<Secret>,
}

/// The scheduler address as a gRPC endpoint URI.
pub fn endpoint_uri(address: &str) -> String {
    if address.starts_with("http://") || address.starts_with("https://") {
        address.to_string()
    } else {
        format!("http://{address}")
    }
}

/// The address the worker's Flight service is announced at: `advertise` if given, else
/// the address it listens on (with this host's name for an unspecified IP).
fn advertised(listening: &SocketAddr, advertise: Option<&str>) -> Result<String, ClusterError> {
    if let Some(a) = advertise {
        return Ok(endpoint_uri(a));
    }
    if !listening.ip().is_unspecified() {
        return Ok(format!("http://{listening}"));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| {
            ClusterError::Io(std::io::Error::other(format!(
                "listening on {listening}, every interface, and this host's name is unknown: \
                 pass --advertise HOST:PORT (the address peers and clients reach)"
            )))
        })?;
    Ok(format!("http://{host}:{}", listening.port()))
}

/// Connects a channel to the scheduler at `address`.
pub(crate) async fn connect_scheduler(
    address: &str,
    timeout: Duration,
) -> Result<Channel, ClusterError> {
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

/// Runs a worker until the scheduler's stream ends (an error says how it ended).
pub async fn run_worker(config: WorkerConfig) -> Result<(), ClusterError> {
    check_listen_address("worker", config.listen, config.secret.as_ref())?;
    let address = config.scheduler.clone();
    let system = ActorSystem::start(SystemConfig {
        cpu_threads: config.nthreads.max(1),
        host_memory_budget: config.memory_limit,
        disk_budget: config.disk_budget,
        spill_dir: config.spill_dir.clone(),
        thread_prefix: "tw".to_string(),
        faults: None,
        // A worker's tasks run on its CPU pool: the scheduler places by CPU only so far.
        gpus: Vec::new(),
        ..SystemConfig::default()
    })
    .map_err(|e| ClusterError::Actors(e.to_string()))?;
    let held = Arc::new(Held::new(Arc::new(system)));
    let listener = TcpListener::bind(config.listen).await?;
    let flight_address = advertised(&listener.local_addr()?, config.advertise.as_deref())?;

    let channel = connect_scheduler(&address, config.connect_timeout).await?;
    let mut control =
        WorkerControlClient::with_interceptor(channel, AddSecret::new(config.secret.as_ref()))
            .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES);
    let scheduler_error = |status: tonic::Status| ClusterError::Scheduler {
        address: address.clone(),
        code: status.code(),
        message: status.message().to_string(),
    };
    let reply = control
        .register_worker(pb::RegisterWorkerRequest {
            protocol_version: PROTOCOL_VERSION,
            worker_name: config.name.clone(),
            flight_address: flight_address.clone(),
            nthreads: u32::try_from(config.nthreads).unwrap_or(u32::MAX),
            memory_limit: config.memory_limit,
            gpus: 0,
        })
        .await
        .map_err(scheduler_error)?
        .into_inner();
    if !reply.accepted {
        return Err(ClusterError::Refused {
            address,
            reason: reply.reason,
        });
    }
    let incarnation = reply.incarnation;
    tracing::info!(name = %config.name, incarnation, %flight_address, "registered with the scheduler at {address}");

    let service = ChunkFlightService::new(
        Arc::clone(&held) as _,
        Arc::clone(&held) as _,
        ServerConfig {
            incarnation: Some(incarnation),
            secret: config.secret.clone(),
            ..ServerConfig::default()
        },
    );
    let (stop_flight, flight_stopped) = tokio::sync::oneshot::channel::<()>();
    let flight = tokio::spawn(serve(listener, service, async {
        let _ = flight_stopped.await;
    }));

    let (up, up_rx) = mpsc::unbounded_channel::<WorkerMessage>();
    let open = worker_message::Kind::Open(pb::StreamOpen {
        protocol_version: PROTOCOL_VERSION,
        incarnation,
    });
    let _ = up.send(WorkerMessage { kind: Some(open) });
    let outbound =
        futures::stream::unfold(
            up_rx,
            |mut rx| async move { rx.recv().await.map(|m| (m, rx)) },
        );
    let mut inbound = control
        .worker_stream(outbound)
        .await
        .map_err(scheduler_error)?
        .into_inner();

    let agent = Agent {
        held: Arc::clone(&held),
        up: up.clone(),
        incarnation,
        name: config.name.clone(),
        connections: Connections::new(ClientConfig {
            secret: config.secret.clone(),
            ..ClientConfig::default()
        }),
        peers: Arc::new(LostPeers::new()),
        replicas: Arc::new(Mutex::new(Replicas::new(config.memory_limit))),
        running: Arc::new(AtomicU32::new(0)),
    };
    // The threads tasks run on directly (see [`direct`]); a task's closure does not hold
    // the pool, so the pool is never dropped (and joined) on one of its own threads.
    let pool = Arc::new(WorkerPool::new(config.nthreads.max(1), |i| {
        format!("tw-task{i}")
    })?);
    let interval = Duration::from_millis(u64::from(reply.heartbeat_interval_ms.max(10)));
    let heartbeat = tokio::spawn(heartbeats(agent.clone(), interval));

    let ended = loop {
        match inbound.message().await {
            Ok(Some(message)) => match message.kind {
                Some(scheduler_message::Kind::RunTask(task)) => agent.start(task, &pool),
                Some(scheduler_message::Kind::Release(r)) => {
                    held.release(r.job_id, r.chunk_key, r.attempt)
                }
                Some(scheduler_message::Kind::Cancel(c)) => {
                    held.cancel(c.job_id);
                    agent.replicas().forget_job(c.job_id);
                }
                Some(scheduler_message::Kind::PeerLost(p)) => {
                    tracing::info!(peer = %p.flight_address, incarnation = p.incarnation, "peer lost");
                    agent.peers.declare(p.incarnation);
                }
                None => {}
            },
            Ok(None) => break "the scheduler closed the stream".to_string(),
            Err(status) => break format!("the stream broke: {}", status.message()),
        }
    };
    heartbeat.abort();
    let _ = stop_flight.send(());
    let _ = flight.await;
    tracing::warn!(name = %config.name, "{ended}; stopping");
    Err(ClusterError::SchedulerLost {
        address,
        reason: ended,
    })
}

/// Sends a heartbeat every `interval`.
async fn heartbeats(agent: Agent, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    loop {
        ticks.tick().await;
        let beat = pb::Heartbeat {
            incarnation: agent.incarnation,
            memory_used: agent.held.system().reserved_bytes(),
            disk_used: 0,
            tasks_running: agent.running.load(Ordering::Relaxed),
        };
        let message = WorkerMessage {
            kind: Some(worker_message::Kind::Heartbeat(beat)),
        };
        if agent.up.send(message).is_err() {
            return;
        }
    }
}

/// What a task handler needs.
#[derive(Clone)]
struct Agent {
    held: Arc<Held>,
    up: mpsc::UnboundedSender<WorkerMessage>,
    incarnation: u64,
    name: String,
    /// Flight connections to peers (with the secret).
    connections: Connections,
    /// Peers the scheduler has declared lost.
    peers: Arc<LostPeers>,
    /// Peers' chunks fetched more than once, kept here (see [`replicas`]).
    replicas: Arc<Mutex<Replicas>>,
    running: Arc<AtomicU32>,
}

impl Agent {
    /// Starts one task. One whose inputs are all held here goes to the pool at once; one
    /// that must fetch an input from a peer (or wait for memory) runs as a tokio task.
    fn start(&self, task: pb::RunTask, pool: &Arc<WorkerPool>) {
        self.running.fetch_add(1, Ordering::Relaxed);
        let decoded = match decode_task(&task) {
            Ok(decoded) => decoded,
            Err(status) => return self.report(&task, *status),
        };
        let held: Option<Vec<Input>> = decoded
            .distinct
            .iter()
            .map(|&i| {
                let l = &task.inputs[i];
                self.held
                    .get(l.job_id, l.chunk_key, l.attempt)
                    .map(Input::Held)
            })
            .collect();
        if let Some(inputs) = held {
            if let Some(room) = self.room_for(&decoded.op, &inputs) {
                return self.run_direct(task, decoded.op, inputs, &decoded.keys, pool, room);
            }
        }
        let (agent, pool) = (self.clone(), Arc::clone(pool));
        tokio::spawn(async move { agent.run_task(task, decoded, &pool).await });
    }

    /// The reservation of a task of `op`'s estimate ([`direct::task_estimate`]: its output
    /// and working memory) in the worker's memory budget, if it fits now: the task may then
    /// run directly.
    fn room_for(&self, op: &ChunkOp, inputs: &[Input]) -> Option<Reservation> {
        self.held
            .system()
            .try_reserve(direct::task_estimate(op, inputs))
    }

    /// Runs one task and reports how it ended, fetching the inputs it does not hold:
    /// directly on the worker's pool when its output's estimate fits in the memory budget
    /// now, else as a one-task job on the local actors (which waits for memory).
    async fn run_task(self, task: pb::RunTask, decoded: Decoded, pool: &WorkerPool) {
        let Decoded { op, distinct, keys } = decoded;
        let inputs = match self.gather(&task, &distinct).await {
            Ok(inputs) => inputs,
            Err(status) => return self.report(&task, *status),
        };
        if let Some(room) = self.room_for(&op, &inputs) {
            return self.run_direct(task, op, inputs, &keys, pool, room);
        }
        let started = Instant::now();
        let locations = distinct.iter().map(|&i| task.inputs[i].clone()).collect();
        let status = match self.run_job(&task, op, inputs, locations, &keys).await {
            Ok(kept) => {
                if task.droppable {
                    // What the job took, its wait for memory included: dropped less often.
                    direct::offer_for_dropping(&self.held, &kept, started.elapsed());
                }
                self.hold(&task, kept)
            }
            Err(status) => *status,
        };
        self.report(&task, timed(status, started));
    }

    /// Hands the task to a pool thread, which runs it directly (see [`direct`]) and
    /// reports how it ended. `inputs` are the distinct inputs, `keys` each of the op's
    /// inputs' index among them; `room` holds the output's estimate in the memory budget
    /// until storage has the output.
    fn run_direct(
        &self,
        task: pb::RunTask,
        op: ChunkOp,
        inputs: Vec<Input>,
        keys: &[usize],
        pool: &WorkerPool,
        room: Reservation,
    ) {
        let direct = DirectTask {
            job: task.job_id,
            op,
            inputs: keys.iter().map(|&i| inputs[i].clone()).collect(),
            locations: task.inputs.clone(),
            parts: task.parts.len(),
            droppable: task.droppable,
        };
        let ids = pb::RunTask {
            job_id: task.job_id,
            chunk_key: task.chunk_key,
            attempt: task.attempt,
            ..pb::RunTask::default()
        };
        let agent = self.clone();
        let job = Box::new(move || {
            let started = Instant::now();
            let outcome = direct::run(&agent.held, direct);
            drop(room);
            let status = match outcome {
                Ok(kept) => agent.hold(&task, kept),
                Err(status) => *status,
            };
            agent.report(&task, timed(status, started));
        });
        if pool.execute(job).is_err() {
            let stopped = failed("the worker's task threads have stopped".into(), true);
            self.report(&ids, stopped);
        }
    }

    /// Sends the status of `task` up (`status` says how it ended) and counts it done.
    fn report(&self, task: &pb::RunTask, status: pb::TaskStatus) {
        self.running.fetch_sub(1, Ordering::Relaxed);
        let status = pb::TaskStatus {
            incarnation: self.incarnation,
            job_id: task.job_id,
            chunk_key: task.chunk_key,
            attempt: task.attempt,
            ..status
        };
        let _ = self.up.send(WorkerMessage {
            kind: Some(worker_message::Kind::TaskStatus(status)),
        });
    }

    /// The inputs of `task` at the positions `distinct`, fetching those not held here
    /// (see [`fetch`]).
    async fn gather(&self, task: &pb::RunTask, distinct: &[usize]) -> Result<Vec<Input>, Ended> {
        let locations: Vec<&ChunkLocation> = distinct.iter().map(|&i| &task.inputs[i]).collect();
        let gathered = self.gather_inputs(&locations).await;
        let mut inputs = Vec::with_capacity(gathered.len());
        for (location, input) in locations.into_iter().zip(gathered) {
            match input {
                Ok(input) => inputs.push(input),
                Err(missing) => {
                    let reason = &missing.reason;
                    if missing.dropped {
                        tracing::debug!(worker = %self.name, %reason, "input dropped");
                    } else {
                        tracing::warn!(worker = %self.name, %reason, "input missing");
                    }
                    return Err(Box::new(pb::TaskStatus {
                        state: TaskState::InputMissing as i32,
                        error: missing.reason,
                        missing: vec![location.clone()],
                        dropped: missing.dropped,
                        ..Default::default()
                    }));
                }
            }
        }
        Ok(inputs)
    }

    /// Runs the op as a one-task graph on the local actors, which keep its output (one
    /// chunk, or one per part of a split task). `inputs` are the distinct inputs and
    /// `locations` where the scheduler said they are; a held one that storage no longer
    /// has (dropped, or its spill file lost) ends the task with it missing.
    async fn run_job(
        &self,
        task: &pb::RunTask,
        op: ChunkOp,
        inputs: Vec<Input>,
        locations: Vec<ChunkLocation>,
        keys: &[usize],
    ) -> Result<Vec<Arc<KeptChunk>>, Ended> {
        // A split task's parts are the local job's outputs, kept one chunk each.
        let output = ChunkKey(inputs.len() as u64);
        let parts: Vec<ChunkKey> = (1..=task.parts.len() as u64)
            .map(|i| ChunkKey(output.0 + i))
            .collect();
        let mut graph = ChunkGraph {
            outputs: if parts.is_empty() {
                vec![output]
            } else {
                parts.clone()
            },
            keep_outputs: true,
            ..ChunkGraph::default()
        };
        for (i, input) in inputs.iter().enumerate() {
            let key = ChunkKey(i as u64);
            match input {
                Input::Held(h) => graph.stored.push(StoredInput {
                    key,
                    id: h.kept.id(),
                    nbytes: h.kept.nbytes(),
                }),
                Input::Fetched(data) => graph.tasks.push(ChunkTask::new(
                    key,
                    ChunkOp::Literal(Arc::clone(data)),
                    Vec::new(),
                )),
            }
        }
        graph.tasks.push(ChunkTask {
            key: output,
            op,
            inputs: keys.iter().map(|&i| ChunkKey(i as u64)).collect(),
            parts,
            device: None,
        });
        let system = Arc::clone(self.held.system());
        let ran = tokio::task::spawn_blocking(move || -> Result<_, Ended> {
            // The held inputs stay referenced until the local job is done.
            let stopped =
                |e: ActorError| failed(JobError::SystemStopped(e.to_string()).to_string(), true);
            let job = system.submit(graph).map_err(|e| Box::new(stopped(e)))?;
            let status = match job.wait() {
                Ok(output) => return Ok(output.kept),
                Err(e @ JobError::ChunkLost { key, .. }) => {
                    direct::held_input_gone(&system, key, &e, &inputs, &locations)
                }
                Err(JobError::ChunkFailed { source, .. }) => kernel_failed(&source),
                Err(e) => failed(e.to_string(), true),
            };
            Err(Box::new(status))
        })
        .await;
        ran.unwrap_or_else(|e| {
            Err(Box::new(failed(
                format!("the task's thread failed: {e}"),
                true,
            )))
        })
    }

    /// Holds the chunks a task kept (one, or one per part) under the scheduler's keys and
    /// says how the task ended.
    fn hold(&self, task: &pb::RunTask, kept: Vec<Arc<KeptChunk>>) -> pb::TaskStatus {
        let keys = if task.parts.is_empty() {
            vec![task.chunk_key]
        } else {
            task.parts.clone()
        };
        if kept.len() != keys.len() {
            return failed(
                format!("the task kept {} chunks, not {}", kept.len(), keys.len()),
                true,
            );
        }
        let sizes: Vec<u64> = kept.iter().map(|k| k.nbytes()).collect();
        for (key, kept) in keys.iter().zip(kept) {
            let chunk = HeldChunk {
                attempt: task.attempt,
                kept,
            };
            if !self.held.insert(task.job_id, *key, chunk) {
                return cancelled();
            }
        }
        pb::TaskStatus {
            state: TaskState::Done as i32,
            output_bytes: sizes.iter().sum(),
            part_bytes: if task.parts.is_empty() {
                Vec::new()
            } else {
                sizes
            },
            parts: task.parts.clone(),
            ..Default::default()
        }
    }
}

/// `status` with the time since `started` as the task's run time, and the pool thread it
/// ran on (0 off the pool: a task run as a job on the actors).
fn timed(status: pb::TaskStatus, started: Instant) -> pb::TaskStatus {
    pb::TaskStatus {
        run_micros: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        thread: worker_index(),
        ..status
    }
}

/// A task's op and inputs, decoded once.
struct Decoded {
    op: ChunkOp,
    /// Positions in `RunTask.inputs` of its distinct inputs (a chunk read twice is
    /// fetched once).
    distinct: Vec<usize>,
    /// For each of the op's inputs, its index in `distinct`.
    keys: Vec<usize>,
}

/// Decodes the op of `task` and its inputs (see [`Decoded`]).
fn decode_task(task: &pb::RunTask) -> Result<Decoded, Ended> {
    let op: ChunkOp = decode_payload(&task.task)
        .map_err(|e| Box::new(failed(format!("undecodable task: {e}"), false)))?;
    let id = |l: &ChunkLocation| (l.job_id, l.chunk_key);
    let mut distinct: Vec<usize> = Vec::new();
    let mut keys = Vec::with_capacity(task.inputs.len());
    for (pos, location) in task.inputs.iter().enumerate() {
        let index = match distinct
            .iter()
            .position(|&d| id(&task.inputs[d]) == id(location))
        {
            Some(i) => i,
            None => {
                distinct.push(pos);
                distinct.len() - 1
            }
        };
        keys.push(index);
    }
    Ok(Decoded { op, distinct, keys })
}
