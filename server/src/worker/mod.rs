//! The worker agent: a process working for a scheduler, with its own pool of task threads
//! and its own storage (an actor system's: the memory budget, the spill folder).
//!
//! It registers (getting an incarnation), opens the one stream to the scheduler, sends
//! heartbeats, and runs each `RunTask` it receives: inputs it holds are read from its own
//! storage, the others are fetched from the peers that hold them over Flight; the task
//! waits for room in the memory budget (`room`), then runs on a thread of the pool, and
//! its output goes into the worker's storage (see `direct`, `held`). Its Flight service
//! serves what it holds to peers and clients. When the scheduler's stream ends the worker
//! stops: a scheduler that comes back starts from nothing, and a new worker process
//! registers as a new incarnation.

mod direct;
mod fetch;
mod gpus;
mod held;
mod replicas;
mod room;

use direct::{cancelled, failed, DirectTask, Ended, Input};
use fetch::LostPeers;
pub use gpus::GpuChoice;
use gpus::{Pools, WorkerGpu};
use held::{Held, HeldChunk};
use replicas::Replicas;
use room::Room;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera_actors::{worker_index, ActorSystem, KeptChunk, Reservation, SystemConfig, WorkerPool};
use tessera_cluster::auth::{check_listen_address, AddSecret, Secret};
use tessera_cluster::client::{ClientConfig, Connections};
use tessera_cluster::connect::{connect_scheduler, endpoint_uri, MAX_CONTROL_MESSAGE_BYTES};
use tessera_cluster::error::ClusterError;
use tessera_cluster::server::{serve, ChunkFlightService, ServerConfig};
use tessera_kernels::ChunkOp;
use tessera_proto::pb::{
    self, scheduler_message, worker_control_client::WorkerControlClient, worker_message,
    ChunkLocation, TaskState, WorkerMessage,
};
use tessera_proto::{decode_payload, PROTOCOL_VERSION};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

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
    /// A fault drill: bytes every task leaks (allocated, written, never freed), so that
    /// the resident memory passes the limit; 0 in normal use.
    pub leak_per_task: usize,
    /// The GPUs it runs the tasks that have GPU kernels on (none: all on its CPU pool).
    pub gpus: GpuChoice,
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

/// Runs a worker until the scheduler's stream ends (an error says how it ended).
pub async fn run_worker(config: WorkerConfig) -> Result<(), ClusterError> {
    check_listen_address("worker", config.listen, config.secret.as_ref())?;
    let address = config.scheduler.clone();
    let gpus = config
        .gpus
        .open()?
        .into_iter()
        .map(WorkerGpu::start)
        .collect::<Result<Vec<_>, _>>()?;
    for g in &gpus {
        tracing::info!(name = %config.name, "computing on {}", g.gpu.describe());
    }
    // The actor system is the worker's storage (memory budget, spill folder, kept chunks):
    // tasks run on the worker's own pool, so its CPU device gets no work and one thread.
    let system = ActorSystem::start(SystemConfig {
        cpu_threads: 1,
        host_memory_budget: config.memory_limit,
        disk_budget: config.disk_budget,
        spill_dir: config.spill_dir.clone(),
        thread_prefix: "tw".to_string(),
        faults: None,
        // A worker's tasks run on its own pools (`direct`, `gpus`), not the system's devices.
        gpus: Vec::new(),
        // The worker is its process: --memory-limit bounds the process's resident memory.
        limit_resident: true,
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
            gpus: u32::try_from(gpus.len()).unwrap_or(u32::MAX),
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
        room: Arc::new(Room::default()),
        leak_per_task: config.leak_per_task,
    };
    // The threads tasks run on directly (see [`direct`]), the CPU pool's and each GPU's; a
    // task's closure does not hold them, so a pool is never dropped (and joined) on one of
    // its own threads.
    let pools = Arc::new(Pools {
        cpu: WorkerPool::new(config.nthreads.max(1), |i| format!("tw-task{i}"))?,
        gpus,
    });
    let interval = Duration::from_millis(u64::from(reply.heartbeat_interval_ms.max(10)));
    let heartbeat = tokio::spawn(heartbeats(agent.clone(), interval));

    let exhausted = exhausted(Arc::clone(&held), interval);
    tokio::pin!(exhausted);
    let ended = loop {
        let message = tokio::select! {
            message = inbound.message() => message,
            () = &mut exhausted => break None,
        };
        match message {
            Ok(Some(message)) => match message.kind {
                Some(scheduler_message::Kind::RunTask(task)) => agent.start(task, &pools),
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
            Ok(None) => break Some("the scheduler closed the stream".to_string()),
            Err(status) => break Some(format!("the stream broke: {}", status.message())),
        }
    };
    heartbeat.abort();
    let _ = stop_flight.send(());
    let _ = flight.await;
    let Some(ended) = ended else {
        tracing::error!(name = %config.name, limit = config.memory_limit, "resident memory grew by more than 1.5x the limit since the worker started; stopping");
        return Err(ClusterError::ResidentMemoryExhausted {
            limit: config.memory_limit,
        });
    };
    tracing::warn!(name = %config.name, "{ended}; stopping");
    Err(ClusterError::SchedulerLost {
        address,
        reason: ended,
    })
}

/// Completes once the worker's resident memory grew by more than 1.5× its limit (checked every
/// `interval`; see `tessera_actors::ActorSystem::resident_exhausted`).
async fn exhausted(held: Arc<Held>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    loop {
        ticks.tick().await;
        if held.system().resident_exhausted() {
            return;
        }
    }
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
    /// Room in the memory budget, and the tasks waiting for it.
    room: Arc<Room>,
    /// See [`WorkerConfig::leak_per_task`].
    leak_per_task: usize,
}

impl Agent {
    /// Starts one task. One whose inputs are all held here and whose estimate fits now goes
    /// to the pool at once; one that must fetch an input from a peer or wait for memory
    /// runs as a tokio task until it can.
    fn start(&self, task: pb::RunTask, pools: &Arc<Pools>) {
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
                return self.run_direct(task, decoded.op, inputs, &decoded.keys, pools, room);
            }
        }
        let (agent, pools) = (self.clone(), Arc::clone(pools));
        tokio::spawn(async move { agent.run_task(task, decoded, &pools).await });
    }

    /// The reservation of a task of `op`'s estimate ([`direct::task_estimate`]: its output
    /// and working memory) in the worker's memory budget, if it fits now and no task waits
    /// for room before it.
    fn room_for(&self, op: &ChunkOp, inputs: &[Input]) -> Option<Reservation> {
        self.room
            .try_reserve(self.held.system(), direct::task_estimate(op, inputs))
    }

    /// Runs one task and reports how it ended: fetches the inputs it does not hold, waits
    /// for room in the memory budget, then runs it on the pool.
    async fn run_task(self, task: pb::RunTask, decoded: Decoded, pools: &Pools) {
        let Decoded { op, distinct, keys } = decoded;
        let inputs = match self.gather(&task, &distinct).await {
            Ok(inputs) => inputs,
            Err(status) => return self.report(&task, *status),
        };
        let estimate = direct::task_estimate(&op, &inputs);
        match self.room.reserve(self.held.system(), estimate).await {
            Ok(room) => self.run_direct(task, op, inputs, &keys, pools, room),
            Err(status) => self.report(&task, status),
        }
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
        pools: &Pools,
        room: Reservation,
    ) {
        // The GPU the scheduler chose, with its own threads; a GPU this worker does not
        // have (a scheduler that knows more) leaves the task to the CPU pool.
        let gpu = usize::try_from(task.gpu)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| pools.gpus.get(i));
        let pool = gpu.map_or(&pools.cpu, |g| &g.pool);
        let direct = DirectTask {
            job: task.job_id,
            op,
            inputs: keys.iter().map(|&i| inputs[i].clone()).collect(),
            locations: task.inputs.clone(),
            parts: task.parts.len(),
            droppable: task.droppable,
            gpu: gpu.map(|g| Arc::clone(&g.gpu)),
        };
        let ids = pb::RunTask {
            job_id: task.job_id,
            chunk_key: task.chunk_key,
            attempt: task.attempt,
            ..pb::RunTask::default()
        };
        let agent = self.clone();
        self.room.started();
        let job = Box::new(move || {
            let started = Instant::now();
            if agent.leak_per_task > 0 {
                // The drill's leak: written so that it is resident, then forgotten.
                std::mem::forget(vec![1u8; agent.leak_per_task]);
            }
            let outcome = direct::run(&agent.held, direct);
            drop(room);
            agent.room.ended();
            let status = match outcome {
                Ok(kept) => agent.hold(&task, kept),
                Err(status) => *status,
            };
            agent.report(&task, timed(status, started));
        });
        if pool.execute(job).is_err() {
            self.room.ended();
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
/// ran on.
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
