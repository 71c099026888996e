//! The scheduler's state: the actors' [`PlannerState`] (jobs, lineage, retries) plus what
//! only a cluster has — the registered workers, and which worker holds which chunk.
//!
//! Each worker is one device of the planner (`DeviceId` = its worker id) that runs
//! `nthreads` tasks at once and has more queued, as many as its run times call for
//! ([`depth`]), and one more CUDA device per GPU it registered (ids numbered after its
//! own, sharing its host: the tasks that have GPU kernels go to them, each drawn to the
//! GPU beside the worker holding its inputs). A worker keeps the chunks it computes; the
//! planner learns only their sizes ([`PlannerState::on_chunk_held`]), and this table
//! records where they are, so a task's inputs are sent as locations and fetched peer to
//! peer. A lost worker is a lost device (its GPUs too) whose running tasks are requeued,
//! plus lost chunks that are recomputed from lineage ([`PlannerState::on_chunks_lost`]).

mod depth;
mod metrics;
mod sessions;

use crate::scheduler::{kernel_error, SchedulerConfig};
use depth::RunTimes;
use sessions::Sessions;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;
use tessera_actors::{CUDA_OPS, GPU_HOST_THREADS};
use tessera_cluster::convert::{failed_event, progress_event};
use tessera_core::ids::{DeviceId, DeviceKind};
use tessera_core::{
    ActorName, ChunkGraph, ChunkId, ChunkKey, Gone, JobError, JobId, PlannerAction, PlannerState,
    Recorder, RunSpan, UnboundedPool,
};
use tessera_dashboard::{Board, WorkerRow};
use tessera_kernels::{ChunkOp, KernelError};
use tessera_proto::pb::{
    self, job_event, scheduler_message, ChunkLocation, SchedulerMessage, TaskState, TaskStatus,
};
use tessera_proto::{encode_payload, PROTOCOL_VERSION};
use tokio::sync::mpsc::UnboundedSender;
use tonic::Status;

/// The job id of chunks clients send with do_put ([`Core::place_chunks`]): no job the
/// planner numbers (from 1 up) reaches it.
const CLIENT_DATA: JobId = JobId(u64::MAX);

/// The most GPUs one worker may register.
const MAX_WORKER_GPUS: u32 = 256;

/// Where a client's job events go.
pub(crate) type EventSender = UnboundedSender<Result<pb::JobEvent, Status>>;

/// One registered worker.
#[derive(Debug)]
struct Worker {
    name: String,
    flight_address: String,
    incarnation: u64,
    nthreads: u32,
    /// The planner devices of its GPUs, in its `--gpus` order (`RunTask.gpu` n names the
    /// nth).
    gpus: Vec<u32>,
    memory_limit: u64,
    /// Bytes reserved and tasks running, as its last heartbeat said.
    memory_used: u64,
    tasks_running: u32,
    /// Its stream's sending half, once the stream is open.
    stream: Option<UnboundedSender<Result<SchedulerMessage, Status>>>,
    last_seen: Instant,
    /// Its recent tasks' run times, and the tasks per thread dispatched to it now.
    run_times: RunTimes,
    per_thread: usize,
}

impl Worker {
    /// Registers the worker with the planner as a device, at its current depth.
    fn add_to(&self, id: u32, planner: &mut PlannerState) -> Vec<PlannerAction> {
        let threads = self.nthreads as usize;
        planner.add_queued_device(DeviceId(id), threads, threads * self.per_thread)
    }

    /// Registers its GPUs with the planner as CUDA devices sharing its host, each taking
    /// as many tasks at once as a GPU's device actor in one process.
    fn add_gpus_to(&self, id: u32, planner: &mut PlannerState) -> Vec<PlannerAction> {
        let mut actions = Vec::new();
        for &gpu in &self.gpus {
            planner.share_host(DeviceId(gpu), DeviceId(id));
            actions.extend(planner.add_device_of(
                DeviceId(gpu),
                DeviceKind::Cuda,
                GPU_HOST_THREADS,
            ));
        }
        actions
    }
}

/// Which worker holds a chunk, and which attempt produced that copy.
#[derive(Clone, Copy, Debug)]
struct Holder {
    worker: u32,
    attempt: u64,
    nbytes: u64,
}

/// The scheduler's state (see the module docs).
pub(crate) struct Core {
    planner: PlannerState,
    /// The clock of the jobs' task streams (see [`Self::record`]).
    recorder: Arc<Recorder>,
    config: SchedulerConfig,
    workers: BTreeMap<u32, Worker>,
    /// The next planner device id: a worker's, then its GPUs' (never reused).
    next_device: u32,
    next_incarnation: u64,
    /// Every chunk held by a worker: running jobs' chunks, delivered outputs not yet
    /// gathered, persisted data.
    holders: HashMap<ChunkId, Holder>,
    clients: HashMap<JobId, EventSender>,
    /// Since when no worker has been registered (while jobs wait).
    no_workers_since: Option<Instant>,
    /// The key of the next chunk a client sends ([`Core::place_chunks`]).
    next_data_key: u64,
    /// The jobs as the dashboard and `/metrics` show them: running ones (by their run on
    /// the board, in `runs`), totals over the finished and failed ones, the last few.
    board: Arc<Board>,
    runs: HashMap<JobId, u64>,
    /// The clients' sessions and the chunks each owns.
    sessions: Sessions,
}

/// A registration's outcome.
pub(crate) struct Registered {
    pub incarnation: u64,
}

impl Core {
    pub fn new(config: SchedulerConfig) -> Core {
        // Each worker budgets its own memory; the scheduler reserves nothing.
        let mut planner = PlannerState::new(UnboundedPool::new());
        let recorder = Recorder::new(tessera_core::DEFAULT_TASK_RECORDS);
        planner.set_recorder(Arc::clone(&recorder));
        planner.set_gpu_ops(CUDA_OPS);
        Core {
            planner,
            recorder,
            config,
            workers: BTreeMap::new(),
            next_device: 1,
            next_incarnation: 1,
            holders: HashMap::new(),
            clients: HashMap::new(),
            no_workers_since: Some(Instant::now()),
            next_data_key: 0,
            board: Arc::default(),
            runs: HashMap::new(),
            sessions: Sessions::default(),
        }
    }

    /// Registers a worker (its stream opens next). A worker of another protocol version is
    /// refused with both versions named.
    pub fn register(&mut self, request: &pb::RegisterWorkerRequest) -> Result<Registered, String> {
        if request.protocol_version != PROTOCOL_VERSION {
            return Err(format!(
                "worker {} speaks protocol version {}, this scheduler {}",
                request.worker_name, request.protocol_version, PROTOCOL_VERSION
            ));
        }
        if request.nthreads == 0 {
            return Err(format!("worker {} offers no threads", request.worker_name));
        }
        if request.gpus > MAX_WORKER_GPUS {
            return Err(format!(
                "worker {} offers {} GPUs, more than the {MAX_WORKER_GPUS} a worker may run",
                request.worker_name, request.gpus
            ));
        }
        let id = self.next_device;
        self.next_device = id.checked_add(1 + request.gpus).ok_or_else(|| {
            format!(
                "worker {}: the scheduler ran out of device ids",
                request.worker_name
            )
        })?;
        let gpus: Vec<u32> = (1..=request.gpus).map(|g| id + g).collect();
        let incarnation = self.next_incarnation;
        self.next_incarnation += 1;
        tracing::info!(worker = %request.worker_name, id, incarnation, address = %request.flight_address, "worker registered");
        self.workers.insert(
            id,
            Worker {
                name: request.worker_name.clone(),
                flight_address: request.flight_address.clone(),
                incarnation,
                nthreads: request.nthreads,
                gpus,
                memory_limit: request.memory_limit,
                memory_used: 0,
                tasks_running: 0,
                stream: None,
                last_seen: Instant::now(),
                run_times: RunTimes::default(),
                per_thread: depth::DEFAULT_PER_THREAD,
            },
        );
        Ok(Registered { incarnation })
    }

    /// The worker of `incarnation` opened its stream: it takes tasks from now on. `None`
    /// when that incarnation is not registered (or was declared lost).
    pub fn open_stream(
        &mut self,
        incarnation: u64,
        stream: UnboundedSender<Result<SchedulerMessage, Status>>,
    ) -> Option<()> {
        let (&id, worker) = self
            .workers
            .iter_mut()
            .find(|(_, w)| w.incarnation == incarnation)?;
        worker.stream = Some(stream);
        worker.last_seen = Instant::now();
        self.no_workers_since = None;
        let mut actions = worker.add_to(id, &mut self.planner);
        actions.extend(worker.add_gpus_to(id, &mut self.planner));
        self.apply(actions);
        Some(())
    }

    /// A heartbeat: the worker is alive, with this much memory and work.
    pub fn heartbeat(&mut self, beat: &pb::Heartbeat) {
        if let Some(w) = self
            .workers
            .values_mut()
            .find(|w| w.incarnation == beat.incarnation)
        {
            w.last_seen = Instant::now();
            w.memory_used = beat.memory_used;
            w.tasks_running = beat.tasks_running;
        }
    }

    /// The worker of `incarnation` is gone (`cause`): its running tasks run elsewhere and
    /// the chunks only it held are recomputed where still needed.
    pub fn worker_lost(&mut self, incarnation: u64, cause: &str) {
        let Some(id) = self
            .workers
            .iter()
            .find(|(_, w)| w.incarnation == incarnation)
            .map(|(&id, _)| id)
        else {
            return;
        };
        let Some(worker) = self.workers.remove(&id) else {
            return;
        };
        tracing::warn!(worker = %worker.name, incarnation, cause, "worker lost");
        if self.workers.is_empty() {
            self.no_workers_since = Some(Instant::now());
        }
        for device in std::iter::once(id).chain(worker.gpus.iter().copied()) {
            let actions = self
                .planner
                .on_actor_down(ActorName::Device(DeviceId(device)), true, 0);
            self.apply(actions);
        }
        let lost: Vec<ChunkId> = self
            .holders
            .iter()
            .filter(|(_, h)| h.worker == id)
            .map(|(&c, _)| c)
            .collect();
        for &c in &lost {
            self.unhold(c);
        }
        // Readers waiting on the lost worker's data stop waiting (a stopped process keeps
        // its connections open until keep-alive notices).
        self.send_all(&scheduler_message::Kind::PeerLost(pb::PeerLost {
            flight_address: worker.flight_address.clone(),
            incarnation,
        }));
        let cause = format!("worker {} was lost ({cause})", worker.name);
        for job in self.planner.jobs() {
            let keys = self.planner.keys_of(job, &lost);
            if !keys.is_empty() {
                let actions = self.planner.on_chunks_lost(job, &keys, &cause);
                self.apply(actions);
            }
        }
    }

    /// Declares lost every worker silent for longer than the heartbeat TTL, and fails the
    /// running jobs once no worker has been there for the grace period.
    pub fn check_liveness(&mut self, now: Instant) {
        let silent: Vec<u64> = self
            .workers
            .values()
            .filter(|w| now.duration_since(w.last_seen) > self.config.heartbeat_ttl)
            .map(|w| w.incarnation)
            .collect();
        for incarnation in silent {
            let ttl = self.config.heartbeat_ttl;
            self.worker_lost(incarnation, &format!("no heartbeat for {ttl:?}"));
        }
        if let Some(since) = self.no_workers_since {
            if now.duration_since(since) > self.config.no_worker_grace
                && !self.planner.jobs().is_empty()
            {
                let error = JobError::ActorLost {
                    actor: format!(
                        "every worker (none registered for {:?})",
                        self.config.no_worker_grace
                    ),
                    restarts: 0,
                };
                let actions = self.planner.fail_all(&error);
                self.apply(actions);
            }
        }
    }

    /// A client's graph: runs it, reporting to `events`; returns the job's id. Persisted
    /// inputs no worker holds any more fail the job when a task would read them
    /// (`ChunkLost` of a kept chunk), and the client computes them again. The client's
    /// `session` (0: none) owns the job's outputs until it releases them or ends.
    pub fn submit(&mut self, graph: ChunkGraph, events: EventSender, session: u64) -> JobId {
        let outputs = graph.outputs.clone();
        let (job, actions) = self.planner.submit(graph, Instant::now());
        self.sessions
            .own(session, outputs.into_iter().map(|key| ChunkId { job, key }));
        let accepted = pb::JobEvent {
            job_id: job.0,
            kind: Some(job_event::Kind::Accepted(pb::Accepted {})),
        };
        let _ = events.send(Ok(accepted));
        self.clients.insert(job, events);
        self.runs.insert(job, self.board.run_started());
        self.apply(actions);
        job
    }

    /// The client cancelled `job` (or went away).
    pub fn cancel(&mut self, job: JobId, why: &str) -> bool {
        let actions = self
            .planner
            .cancel(job, JobError::SystemStopped(format!("cancelled: {why}")));
        let cancelled = !actions.is_empty();
        self.apply(actions);
        cancelled
    }

    /// The client gives up chunks left on the workers; how many were held.
    pub fn release(&mut self, chunks: &[pb::ChunkRef]) -> u32 {
        let mut released = 0;
        for c in chunks {
            let id = ChunkId {
                job: JobId(c.job_id),
                key: ChunkKey(c.chunk_key),
            };
            if self.give_up(id) {
                released += 1;
            }
        }
        released
    }

    /// Gives up the client's hold on chunk `id` (released by the client, or by the job the
    /// client gave it to); true if a worker held it.
    fn give_up(&mut self, id: ChunkId) -> bool {
        self.sessions.released(id);
        self.drop_chunk(id).is_some()
    }

    /// Opens a client session (see [`sessions`]); its id.
    pub fn open_session(&mut self) -> u64 {
        self.sessions.open()
    }

    /// The client of `session` is gone: releases the chunks it still owned; how many
    /// were held.
    pub fn close_session(&mut self, session: u64) -> usize {
        let owned = self.sessions.close(session);
        let released = owned
            .into_iter()
            .filter(|&id| self.drop_chunk(id).is_some())
            .count();
        if released > 0 {
            tracing::info!(
                session,
                released,
                "released the chunks of a client that went away"
            );
        }
        released
    }

    /// Names a worker and a chunk id for each of the chunks (`nbytes` each) a client is
    /// about to send with do_put, and counts them held there from now on, as persisted
    /// data until released (see `PlaceChunks` in `tessera.proto`). Each goes to the worker
    /// with the fewest bytes in use and placed so far; an error without workers.
    pub fn place_chunks(
        &mut self,
        nbytes: &[u64],
        session: u64,
    ) -> Result<Vec<ChunkLocation>, String> {
        let mut load: Vec<(u32, u64)> = self
            .live_workers()
            .map(|(id, w)| (id, w.memory_used))
            .collect();
        if load.is_empty() {
            return Err("no worker is registered to take the job's data".into());
        }
        let mut locations = Vec::with_capacity(nbytes.len());
        for &n in nbytes {
            let Some(least) = load.iter_mut().min_by_key(|(id, used)| (*used, *id)) else {
                break;
            };
            least.1 = least.1.saturating_add(n);
            let id = ChunkId {
                job: CLIENT_DATA,
                key: ChunkKey(self.next_data_key),
            };
            self.next_data_key += 1;
            let holder = Holder {
                worker: least.0,
                attempt: 0,
                nbytes: n,
            };
            self.hold(id, holder);
            self.sessions.own(session, [id]);
            locations.extend(self.location(id));
        }
        Ok(locations)
    }

    /// The workers taking tasks (their stream is open), by id.
    fn live_workers(&self) -> impl Iterator<Item = (u32, &Worker)> {
        self.workers
            .iter()
            .filter(|(_, w)| w.stream.is_some())
            .map(|(&id, w)| (id, w))
    }

    /// How many chunks each worker holds, by worker id.
    fn chunks_held(&self) -> HashMap<u32, u64> {
        let mut held: HashMap<u32, u64> = HashMap::new();
        for h in self.holders.values() {
            *held.entry(h.worker).or_default() += 1;
        }
        held
    }

    /// The workers now: count, threads, memory limits.
    pub fn info(&self) -> pb::ClusterInfoReply {
        let held = self.chunks_held();
        let mut ids: Vec<&u32> = self.workers.keys().collect();
        ids.sort();
        let worker_list = ids
            .into_iter()
            .filter_map(|id| self.workers.get(id).map(|w| (id, w)))
            .map(|(id, w)| pb::WorkerSummary {
                name: w.name.clone(),
                flight_address: w.flight_address.clone(),
                incarnation: w.incarnation,
                nthreads: w.nthreads,
                memory_limit: w.memory_limit,
                memory_used: w.memory_used,
                tasks_running: w.tasks_running,
                chunks_held: held.get(id).copied().unwrap_or(0),
                gpus: w.gpus.len() as u32,
            })
            .collect();
        pb::ClusterInfoReply {
            worker_list,
            workers: self.workers.len() as u32,
            nthreads: self.workers.values().map(|w| w.nthreads).sum(),
            memory_limit: self
                .workers
                .values()
                .fold(0u64, |a, w| a.saturating_add(w.memory_limit)),
        }
    }

    /// A task report from the worker of `status.incarnation`.
    pub fn on_status(&mut self, status: TaskStatus) {
        let job = JobId(status.job_id);
        let key = ChunkKey(status.chunk_key);
        let attempt = status.attempt;
        // A GPU task's run time says nothing of how long the worker's CPU queue takes.
        let on_gpu = self.planner.runs_on_gpu(job, key, attempt);
        let Some((&worker, w)) = self
            .workers
            .iter_mut()
            .find(|(_, w)| w.incarnation == status.incarnation)
        else {
            tracing::debug!(
                incarnation = status.incarnation,
                "ignoring a report of a lost incarnation"
            );
            return;
        };
        w.last_seen = Instant::now();
        if !on_gpu {
            w.run_times.record(status.run_micros);
        }
        let deeper = w.run_times.per_thread();
        // Only a registered device is resized: one that could not be reached stays out
        // until its loss is declared (this may be a report it sent before it died).
        let registered = self.planner.has_device(DeviceId(worker));
        let deepened = (deeper != w.per_thread && registered).then(|| {
            w.per_thread = deeper;
            w.add_to(worker, &mut self.planner)
        });
        let name = w.name.clone();
        if let Some(actions) = deepened {
            self.apply(actions);
        }
        tracing::debug!(%job, %key, attempt, state = ?status.state(), "task status");
        self.record(&status);
        let actions = match status.state() {
            TaskState::Done => {
                let id = ChunkId { job, key };
                let current = self.planner.dispatched(job, key) == Some(attempt);
                if !current || !self.planner.is_running(job) {
                    // A superseded dispatch, or one of a job that ended: nobody will read
                    // its chunk or parts (the report still frees the dispatch's slot). Only
                    // this attempt's copies go: the worker may hold a newer one as well.
                    let keys = if status.parts.is_empty() {
                        vec![key.0]
                    } else {
                        status.parts.clone()
                    };
                    for chunk_key in keys {
                        let release = scheduler_message::Kind::Release(pb::Release {
                            job_id: job.0,
                            chunk_key,
                            attempt,
                        });
                        self.send_worker(worker, release);
                    }
                    let actions = self.planner.on_chunk_failed(job, key, attempt, cancelled());
                    return self.apply(actions);
                }
                // A split task's parts are held one by one; the task's own key names
                // nothing to fetch.
                let sizes = if status.parts.is_empty() {
                    let holder = Holder {
                        worker,
                        attempt,
                        nbytes: status.output_bytes,
                    };
                    self.hold(id, holder);
                    vec![status.output_bytes]
                } else {
                    for (&part, &nbytes) in status.parts.iter().zip(&status.part_bytes) {
                        let part = ChunkId {
                            job,
                            key: ChunkKey(part),
                        };
                        self.hold(
                            part,
                            Holder {
                                worker,
                                attempt,
                                nbytes,
                            },
                        );
                    }
                    status.part_bytes.clone()
                };
                let held = match status.parts.is_empty() {
                    true => vec![key],
                    false => status.parts.iter().map(|&p| ChunkKey(p)).collect(),
                };
                self.announce(job, &held);
                self.planner
                    .on_chunk_held(job, key, attempt, sizes, Instant::now())
            }
            TaskState::Failed => {
                let cause = kernel_error(&status.kernel_error).unwrap_or(KernelError::Remote {
                    worker: name,
                    message: status.error,
                    retryable: status.retryable,
                });
                self.planner.on_chunk_failed(job, key, attempt, cause)
            }
            TaskState::InputMissing => {
                // Only a copy the scheduler still counts on is lost, and only a reader
                // still in flight reports it (a stale report changes nothing). A report
                // naming an older copy (its holder was lost and the chunk recomputed since,
                // or is being) loses nothing more: the reader just runs again.
                let in_flight = self.planner.dispatched(job, key) == Some(attempt);
                let ids: Vec<ChunkId> = status
                    .missing
                    .iter()
                    .filter(|l| in_flight && self.is_current_copy(l))
                    .map(|l| ChunkId {
                        job: JobId(l.job_id),
                        key: ChunkKey(l.chunk_key),
                    })
                    .collect();
                // The holder lets its copy go (one dropped or unreadable is still listed).
                for &id in &ids {
                    if let Some(holder) = self.drop_chunk(id).filter(|_| status.dropped) {
                        self.planner.count_dropped(id.job, holder.nbytes);
                    }
                }
                let lost = self.planner.keys_of(job, &ids);
                // Dropped by the holder's storage to be computed again: no loss.
                let gone = if status.dropped {
                    Gone::Dropped
                } else {
                    Gone::Lost(&status.error)
                };
                self.planner.on_inputs_gone(job, key, attempt, &lost, gone)
            }
            TaskState::Cancelled => self.planner.on_chunk_failed(job, key, attempt, cancelled()),
            _ => Vec::new(),
        };
        self.apply(actions);
    }

    /// Files a finished or failed task in its job's task stream: on its worker and thread,
    /// ending now (when the scheduler hears of it) and starting the run time the worker
    /// measured before.
    fn record(&mut self, status: &TaskStatus) {
        let ok = match status.state() {
            TaskState::Done => true,
            TaskState::Failed => false,
            _ => return,
        };
        let end_ns = self.recorder.now();
        let span = RunSpan {
            start_ns: end_ns.saturating_sub(status.run_micros.saturating_mul(1000)),
            end_ns,
            thread: status.thread,
        };
        let (job, key) = (JobId(status.job_id), ChunkKey(status.chunk_key));
        self.planner
            .record_run(job, key, status.attempt, span, status.output_bytes, ok);
    }

    /// Carries out the planner's actions.
    fn apply(&mut self, actions: Vec<PlannerAction>) {
        for action in actions {
            match action {
                PlannerAction::Dispatch {
                    job,
                    key,
                    attempt,
                    device,
                    op,
                    inputs,
                    parts,
                } => self.dispatch((job, key, attempt), device, &op, &inputs, &parts),
                PlannerAction::Store { job, key, .. } => {
                    // Workers keep what they compute; nothing is stored here.
                    tracing::error!(%job, %key, "a cluster planner was asked to store a chunk");
                }
                PlannerAction::MakeRoom { .. } => {
                    // The cluster planner's pool is unlimited; workers budget their own.
                    tracing::error!("a cluster planner held a task back for memory");
                }
                PlannerAction::Release { job, keys } => {
                    for key in keys {
                        self.drop_chunk(ChunkId { job, key });
                    }
                }
                PlannerAction::Unkeep { ids } => {
                    // Holds a client gave its job: given up as the client's release would.
                    for id in ids {
                        self.give_up(id);
                    }
                }
                PlannerAction::Progress { job, done, total } => {
                    if let Some(&run) = self.runs.get(&job) {
                        self.board.progress(run, done, total);
                    }
                    self.report(job, progress_event(job, done, total));
                }
                PlannerAction::Deliver {
                    job,
                    outputs,
                    attempt,
                    ..
                } => self.deliver(job, &outputs, attempt),
                PlannerAction::JobFailed { job, error, .. } => {
                    tracing::debug!(%job, %error, "job failed");
                    self.end_run(job, true);
                    if let Some(events) = self.clients.remove(&job) {
                        let _ = events.send(Ok(failed_event(job, &error)));
                    }
                    self.forget_job(job);
                }
            }
        }
    }

    /// Sends a task to its worker with where each input is.
    fn dispatch(
        &mut self,
        (job, key, attempt): (JobId, ChunkKey, u64),
        device: DeviceId,
        op: &ChunkOp,
        inputs: &[ChunkId],
        parts: &[ChunkKey],
    ) {
        tracing::debug!(%job, %key, attempt, %device, "dispatch");
        let mut locations = Vec::with_capacity(inputs.len());
        let mut missing = Vec::new();
        for &id in inputs {
            match self.location(id) {
                Some(l) => locations.push(l),
                None => missing.push(id),
            }
        }
        let actions = if !missing.is_empty() {
            let lost = self.planner.keys_of(job, &missing);
            self.planner
                .on_inputs_lost(job, key, attempt, &lost, "no worker holds it any more")
        } else {
            match encode_payload(op) {
                Ok(task) => {
                    let (worker, gpu) = self.home_of(device);
                    let message = scheduler_message::Kind::RunTask(pb::RunTask {
                        job_id: job.0,
                        chunk_key: key.0,
                        attempt,
                        task,
                        inputs: locations,
                        parts: parts.iter().map(|p| p.0).collect(),
                        droppable: self.planner.droppable(job, key),
                        gpu,
                    });
                    if self.send_worker(worker, message) {
                        return;
                    }
                    self.planner
                        .on_device_unreachable(job, key, attempt, device)
                }
                Err(e) => self.planner.on_chunk_failed(
                    job,
                    key,
                    attempt,
                    KernelError::BadInput(format!("cannot encode the task: {e}")),
                ),
            }
        };
        self.apply(actions);
    }

    /// The worker a planner device is on, and which of its devices it is (`RunTask.gpu`: 0
    /// its CPU pool, n its nth GPU). A device no worker has now is named as a worker id,
    /// which the send to it then finds gone.
    fn home_of(&self, device: DeviceId) -> (u32, u32) {
        self.workers
            .iter()
            .find_map(|(&id, w)| {
                let nth = w.gpus.iter().position(|&g| g == device.0)?;
                Some((id, u32::try_from(nth + 1).unwrap_or(u32::MAX)))
            })
            .unwrap_or((device.0, 0))
    }

    /// Reports a finished job: its outputs stay on their workers until the client gathers
    /// and releases them (or, persisted, until their handles are dropped).
    fn deliver(&mut self, job: JobId, outputs: &[ChunkId], attempt: u64) {
        let mut locations = Vec::with_capacity(outputs.len());
        let mut lost = Vec::new();
        for &id in outputs {
            match self.location(id) {
                Some(l) => locations.push(l),
                None => lost.push(id),
            }
        }
        if !lost.is_empty() {
            let keys = self.planner.keys_of(job, &lost);
            let actions = self.planner.on_delivery_failed(
                job,
                attempt,
                &keys,
                Gone::Lost("its worker was lost"),
            );
            return self.apply(actions);
        }
        let Some(stats) = self.planner.on_delivered(job, attempt, Instant::now()) else {
            return;
        };
        self.board.job_finished(&stats);
        self.end_run(job, false);
        let task_stream = match stats.stream.first() {
            Some(stream) => encode_payload(&**stream).unwrap_or_default(),
            None => Vec::new(),
        };
        let stats = encode_payload(&stats).unwrap_or_default();
        let done = pb::JobEvent {
            job_id: job.0,
            kind: Some(job_event::Kind::Done(pb::JobDone {
                outputs: locations,
                stats,
                task_stream,
            })),
        };
        match self.clients.remove(&job) {
            Some(events) if events.send(Ok(done)).is_ok() => {}
            _ => {
                // Nobody gathers the outputs: give them up.
                for &id in outputs {
                    if id.job == job {
                        self.drop_chunk(id);
                    }
                }
            }
        }
    }

    /// Job `job` left the board's running jobs; `failed`: it counts as a failed run.
    fn end_run(&mut self, job: JobId, failed: bool) {
        if let Some(run) = self.runs.remove(&job) {
            self.board.run_ended(run, failed);
        }
    }

    /// What the dashboard shows of the jobs.
    pub fn board(&self) -> Arc<Board> {
        Arc::clone(&self.board)
    }

    /// The workers taking tasks as the dashboard lists them, by id.
    pub fn worker_rows(&self) -> Vec<WorkerRow> {
        let held = self.chunks_held();
        self.live_workers()
            .map(|(id, w)| WorkerRow {
                name: w.name.clone(),
                address: w.flight_address.clone(),
                threads: w.nthreads,
                gpus: u32::try_from(w.gpus.len()).unwrap_or(u32::MAX),
                tasks_running: w.tasks_running,
                chunks_held: held.get(&id).copied().unwrap_or(0),
                memory_used: w.memory_used,
                memory_limit: w.memory_limit,
            })
            .collect()
    }

    /// True if `location` names the copy of its chunk that the holders table has now.
    fn is_current_copy(&self, location: &ChunkLocation) -> bool {
        let id = ChunkId {
            job: JobId(location.job_id),
            key: ChunkKey(location.chunk_key),
        };
        self.holders.get(&id).is_some_and(|h| {
            h.attempt == location.attempt
                && self
                    .workers
                    .get(&h.worker)
                    .is_some_and(|w| w.incarnation == location.incarnation)
        })
    }

    /// Where chunk `id` can be fetched from.
    fn location(&self, id: ChunkId) -> Option<ChunkLocation> {
        let holder = self.holders.get(&id)?;
        let worker = self.workers.get(&holder.worker)?;
        Some(ChunkLocation {
            chunk_key: id.key.0,
            attempt: holder.attempt,
            flight_address: worker.flight_address.clone(),
            incarnation: worker.incarnation,
            job_id: id.job.0,
            nbytes: holder.nbytes,
        })
    }

    /// Records that `holder` has chunk `id` (its readers will prefer that worker).
    fn hold(&mut self, id: ChunkId, holder: Holder) {
        self.planner
            .chunk_at(id, DeviceId(holder.worker), holder.nbytes);
        self.holders.insert(id, holder);
    }

    /// Forgets where chunk `id` is.
    fn unhold(&mut self, id: ChunkId) -> Option<Holder> {
        self.planner.chunk_gone(id);
        self.holders.remove(&id)
    }

    /// Tells the holder of `id` to drop it; the holder, if one held it.
    fn drop_chunk(&mut self, id: ChunkId) -> Option<Holder> {
        let holder = self.unhold(id)?;
        let release = scheduler_message::Kind::Release(pb::Release {
            job_id: id.job.0,
            chunk_key: id.key.0,
            attempt: holder.attempt,
        });
        self.send_worker(holder.worker, release);
        Some(holder)
    }

    /// Drops every chunk of a failed or cancelled job and tells every worker.
    fn forget_job(&mut self, job: JobId) {
        let ids: Vec<ChunkId> = self
            .holders
            .keys()
            .filter(|id| id.job == job)
            .copied()
            .collect();
        for id in ids {
            self.unhold(id);
        }
        self.sessions.forget_job(job);
        self.send_all(&scheduler_message::Kind::Cancel(pb::Cancel {
            job_id: job.0,
        }));
    }

    /// Sends `kind` to every worker with an open stream.
    fn send_all(&mut self, kind: &scheduler_message::Kind) {
        let ids: Vec<u32> = self.workers.keys().copied().collect();
        for w in ids {
            self.send_worker(w, kind.clone());
        }
    }

    /// Tells `job`'s client where those of `chunks` that are outputs it gathers are, so
    /// that it fetches them while the job runs.
    fn announce(&mut self, job: JobId, chunks: &[ChunkKey]) {
        let events: Vec<pb::JobEvent> = chunks
            .iter()
            .filter(|&&key| self.planner.hands_out(job, key))
            .filter_map(|&key| self.location(ChunkId { job, key }))
            .map(|location| pb::JobEvent {
                job_id: job.0,
                kind: Some(job_event::Kind::ChunkFinished(pb::ChunkFinished {
                    chunk_key: location.chunk_key,
                    bytes: location.nbytes,
                    location: Some(location),
                })),
            })
            .collect();
        for event in events {
            self.report(job, event);
        }
    }

    fn report(&mut self, job: JobId, event: pb::JobEvent) {
        if let Some(events) = self.clients.get(&job) {
            if events.send(Ok(event)).is_err() {
                self.cancel(job, "the client went away");
            }
        }
    }

    /// Sends a message down worker `id`'s stream; false if it has none or it is closed.
    fn send_worker(&mut self, id: u32, kind: scheduler_message::Kind) -> bool {
        let Some(stream) = self.workers.get(&id).and_then(|w| w.stream.as_ref()) else {
            return false;
        };
        stream
            .send(Ok(SchedulerMessage { kind: Some(kind) }))
            .is_ok()
    }
}

/// The failure reported for a task whose job was cancelled on its worker.
fn cancelled() -> KernelError {
    KernelError::Remote {
        worker: String::new(),
        message: "its job was cancelled".into(),
        retryable: true,
    }
}

/// Shared handle on the state.
pub(crate) type SharedCore = Arc<std::sync::Mutex<Core>>;

#[cfg(test)]
mod tests;
