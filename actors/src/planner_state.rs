//! The graph planner's state machine: running jobs, the ready queue, device slots, memory
//! reservations and in-flight tasks. Events go in (job submitted, device added or lost,
//! chunk done or failed, chunks lost, storage restarted), [`PlannerAction`]s come out; no
//! actor, clock or thread is involved (time is passed in).
//!
//! Policy: ready tasks run oldest job first, then lowest graph position (the runtime's
//! depth-first order); each device has a fixed number of slots; a task's output is
//! reserved in the host [`MemoryPool`] before it is dispatched, and when the reservation
//! is refused the task waits (back-pressure), unless nothing is running, so a job always
//! progresses; but when nothing is running and the disk tier's budget is full too (the
//! store cannot spill), the job fails with [`JobError::OutOfMemory`] instead of growing
//! past both budgets. A chunk is released as soon as its last consumer has completed, except
//! output chunks, which stay until the job is delivered.
//!
//! Recovery: a retryable task failure (a panic, an injected fault, a lost device) runs
//! the task again, up to [`MAX_ATTEMPTS`] runs in all. A stored chunk that is lost (not in
//! storage, unreadable from disk, or held by a storage actor that died) is computed again
//! from its lineage: its task, and recursively every input task whose chunk is no longer
//! stored, run again; a chunk lost [`MAX_LOSSES`] times fails its job. Every dispatch
//! carries an attempt number, so reports of a dispatch that was superseded (a task
//! re-queued after its device died, a delivery before a storage restart) are ignored, as
//! are reports for unknown jobs or keys and replays.

use crate::graph::{ChunkGraph, ChunkKey, GraphIndex};
use crate::job::{JobError, JobId, JobStats, OutOfMemory};
use crate::memory::{MemoryPool, Reservation};
use crate::messages::{ActorName, DeviceId};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// The shortest time between two progress reports of one job.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Runs of one chunk task at most (the first and its retries) before its job fails.
pub const MAX_ATTEMPTS: u32 = 3;

/// A chunk lost this many times fails its job (it was recomputed after each earlier loss).
pub const MAX_LOSSES: u32 = 2;

/// What the planner's owner must do next, in order.
#[derive(Clone, Debug)]
pub enum PlannerAction {
    /// Run a chunk task on a device, with the stored chunks `inputs` as its inputs.
    Dispatch {
        /// The job.
        job: JobId,
        /// The chunk to compute.
        key: ChunkKey,
        /// This dispatch's number, echoed by its reports.
        attempt: u64,
        /// Where to run it.
        device: DeviceId,
        /// The op.
        op: Arc<ChunkOp>,
        /// Its input chunks, in the op's order.
        inputs: Vec<ChunkKey>,
    },
    /// Put a produced chunk into storage.
    Store {
        /// The job.
        job: JobId,
        /// The chunk.
        key: ChunkKey,
        /// Its data.
        data: Arc<ChunkData>,
        /// The name of the op that produced it.
        op: &'static str,
        /// Graph position of its next reader (`u64::MAX`: read only at delivery).
        next_use: u64,
        /// The data is also held outside Tessera (a literal's user data): storing it costs
        /// no memory and spilling it would free none.
        shared: bool,
    },
    /// Drop chunks from storage.
    Release {
        /// The job.
        job: JobId,
        /// The chunks.
        keys: Vec<ChunkKey>,
    },
    /// Tell the job's owner how far it is.
    Progress {
        /// The job.
        job: JobId,
        /// Completed chunk tasks.
        done: u64,
        /// All chunk tasks.
        total: u64,
    },
    /// Every chunk is computed: take the outputs out of storage and report back with
    /// [`PlannerState::on_delivered`] (or that some were lost).
    Deliver {
        /// The job.
        job: JobId,
        /// Output keys, in `ChunkGraph::outputs` order.
        outputs: Vec<ChunkKey>,
        /// This delivery's number, echoed by its report.
        attempt: u64,
    },
    /// The job failed; drop whatever storage holds of it and report the error.
    JobFailed {
        /// The job.
        job: JobId,
        /// Why.
        error: JobError,
    },
}

/// Where a task's chunk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Not computed yet (waiting, ready or running).
    Pending,
    /// In storage, with its size in bytes.
    Stored(u64),
    /// Dropped from storage (or lost, and not needed).
    Released,
}

#[derive(Debug)]
struct Task {
    key: ChunkKey,
    op: Arc<ChunkOp>,
    inputs: Vec<ChunkKey>,
    /// Distinct inputs not stored yet (kept for tasks neither ready nor running).
    waiting_on: usize,
    /// Distinct consumers not yet completed.
    readers_left: usize,
    is_output: bool,
    status: Status,
    /// Times the task failed and was run again.
    retries: u32,
    /// Times its chunk was lost.
    losses: u32,
}

#[derive(Debug)]
struct Job {
    tasks: Vec<Task>,
    index: GraphIndex,
    outputs: Vec<ChunkKey>,
    done: u64,
    submitted: Instant,
    last_progress: Instant,
    stored_bytes: u64,
    /// The attempt number of the delivery under way, if one is.
    delivering: Option<u64>,
    stats: JobStats,
}

impl Job {
    /// Records that the task at `pos` produced `nbytes`, and releases what that frees.
    fn complete(&mut self, id: JobId, pos: usize, nbytes: u64, actions: &mut Vec<PlannerAction>) {
        let task = &mut self.tasks[pos];
        task.status = Status::Stored(nbytes);
        self.done += 1;
        self.stored_bytes += nbytes;
        self.stats.chunks_run += 1;
        self.stats.bytes_produced += nbytes;
        self.stats.peak_stored_bytes = self.stats.peak_stored_bytes.max(self.stored_bytes);
        *self
            .stats
            .chunks_by_op
            .entry(task.op.name().to_string())
            .or_default() += 1;

        let mut released = Vec::new();
        for i in 0..self.index.inputs(pos).len() {
            let input = self.index.inputs(pos)[i];
            self.tasks[input].readers_left -= 1;
            self.release_if_unneeded(input, &mut released);
        }
        self.release_if_unneeded(pos, &mut released);
        if !released.is_empty() {
            actions.push(PlannerAction::Release {
                job: id,
                keys: released,
            });
        }
    }

    fn release_if_unneeded(&mut self, pos: usize, released: &mut Vec<ChunkKey>) {
        let task = &mut self.tasks[pos];
        if let (0, false, Status::Stored(nbytes)) = (task.readers_left, task.is_output, task.status)
        {
            task.status = Status::Released;
            self.stored_bytes -= nbytes;
            released.push(task.key);
        }
    }

    /// True for a pending task that is waiting for inputs or ready (not running).
    fn is_queued(
        &self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
    ) -> bool {
        let task = &self.tasks[pos];
        task.status == Status::Pending && !in_flight.contains_key(&(id, task.key))
    }

    /// Graph position of the first queued reader of the chunk at `pos`.
    fn next_use(
        &self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
    ) -> u64 {
        self.index
            .consumers(pos)
            .iter()
            .find(|&&c| self.is_queued(id, c, in_flight))
            .map_or(u64::MAX, |&c| c as u64)
    }

    /// Puts a pending, not running task back in line: it waits for its inputs that are
    /// not stored, or is ready.
    fn requeue(&mut self, id: JobId, pos: usize, ready: &mut BTreeSet<(JobId, usize)>) {
        let waiting = self
            .index
            .inputs(pos)
            .iter()
            .filter(|&&i| !matches!(self.tasks[i].status, Status::Stored(_)))
            .count();
        self.tasks[pos].waiting_on = waiting;
        if waiting == 0 {
            ready.insert((id, pos));
        }
    }

    /// Computes the chunk at `pos` again (it was lost or released but is needed), and,
    /// first, every input chunk of it that is no longer stored.
    fn recompute(
        &mut self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
        ready: &mut BTreeSet<(JobId, usize)>,
    ) {
        match self.tasks[pos].status {
            Status::Pending => return,
            Status::Stored(nbytes) => self.stored_bytes -= nbytes,
            Status::Released => {}
        }
        self.tasks[pos].status = Status::Pending;
        self.done -= 1;
        self.stats.chunks_recomputed += 1;
        // Queued readers wait for it again (running ones already have it).
        for i in 0..self.index.consumers(pos).len() {
            let consumer = self.index.consumers(pos)[i];
            if self.is_queued(id, consumer, in_flight) {
                self.tasks[consumer].waiting_on += 1;
                ready.remove(&(id, consumer));
            }
        }
        for i in 0..self.index.inputs(pos).len() {
            let input = self.index.inputs(pos)[i];
            self.tasks[input].readers_left += 1;
            if self.tasks[input].status == Status::Released {
                self.recompute(id, input, in_flight, ready);
            }
        }
        self.requeue(id, pos, ready);
    }

    /// Counts a loss of the stored chunk at `pos` and recomputes it; an error once the
    /// chunk has been lost [`MAX_LOSSES`] times.
    fn lose(
        &mut self,
        id: JobId,
        pos: usize,
        cause: &str,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
        ready: &mut BTreeSet<(JobId, usize)>,
    ) -> Result<(), JobError> {
        let task = &mut self.tasks[pos];
        let nbytes = match task.status {
            Status::Stored(nbytes) => nbytes,
            Status::Pending => return Ok(()), // already being recomputed
            Status::Released => {
                self.recompute(id, pos, in_flight, ready);
                return Ok(());
            }
        };
        task.losses += 1;
        self.stats.chunks_lost += 1;
        tracing::warn!(job = %id, key = %task.key, op = task.op.name(), cause, "chunk lost; recomputing it from lineage");
        if task.losses >= MAX_LOSSES {
            return Err(JobError::ChunkLost {
                key: task.key,
                op: task.op.name().to_string(),
                losses: task.losses,
                cause: cause.to_string(),
            });
        }
        if task.readers_left == 0 && !task.is_output {
            task.status = Status::Released;
            self.stored_bytes -= nbytes;
            return Ok(());
        }
        self.recompute(id, pos, in_flight, ready);
        Ok(())
    }

    /// Bytes to reserve for the output of the task at `pos`: what its op says, else its
    /// largest input (elementwise ops and merges of partitions produce about a chunk;
    /// reductions less), else the job's mean chunk so far.
    fn estimate(&self, pos: usize) -> u64 {
        let task = &self.tasks[pos];
        if let Some(bytes) = task.op.output_bytes_hint() {
            return bytes;
        }
        let inputs = self.index.inputs(pos);
        if !inputs.is_empty() {
            return inputs
                .iter()
                .map(|&i| match self.tasks[i].status {
                    Status::Stored(n) => n,
                    _ => 0,
                })
                .max()
                .unwrap_or(0);
        }
        self.stats
            .bytes_produced
            .checked_div(self.stats.chunks_run)
            .unwrap_or(0)
    }

    fn total(&self) -> u64 {
        self.tasks.len() as u64
    }
}

#[derive(Clone, Copy, Debug)]
struct Slots {
    capacity: usize,
    used: usize,
}

/// A dispatched task: where it runs, which dispatch it is, and its output's reservation.
#[derive(Debug)]
struct InFlight {
    device: DeviceId,
    attempt: u64,
    _reservation: Reservation,
}

/// The graph planner's state (see the module docs).
#[derive(Debug)]
pub struct PlannerState {
    next_job: u64,
    next_attempt: u64,
    jobs: BTreeMap<JobId, Job>,
    /// `(job, task position)`: oldest job first, then graph order.
    ready: BTreeSet<(JobId, usize)>,
    devices: BTreeMap<DeviceId, Slots>,
    in_flight: HashMap<(JobId, ChunkKey), InFlight>,
    pool: Arc<MemoryPool>,
    storage_up: bool,
    /// Set once an actor is gone for good: every job fails with it.
    gone: Option<JobError>,
}

impl PlannerState {
    /// A planner with no jobs and no devices, reserving task outputs in `pool`.
    pub fn new(pool: Arc<MemoryPool>) -> PlannerState {
        PlannerState {
            next_job: 0,
            next_attempt: 0,
            jobs: BTreeMap::new(),
            ready: BTreeSet::new(),
            devices: BTreeMap::new(),
            in_flight: HashMap::new(),
            pool,
            storage_up: true,
            gone: None,
        }
    }

    /// Adds a device that runs up to `slots` tasks at once (or changes its slot count).
    pub fn add_device(&mut self, device: DeviceId, slots: usize) -> Vec<PlannerAction> {
        let used = self.devices.get(&device).map_or(0, |s| s.used);
        self.devices.insert(
            device,
            Slots {
                capacity: slots,
                used,
            },
        );
        self.dispatch_ready()
    }

    /// Starts a job; returns its id and what to do. An invalid graph finishes at once.
    pub fn submit(&mut self, graph: ChunkGraph, now: Instant) -> (JobId, Vec<PlannerAction>) {
        let id = JobId(self.next_job);
        self.next_job += 1;
        let index = match graph.index() {
            Ok(index) => index,
            Err(e) => {
                let error = JobError::InvalidGraph(e);
                return (id, vec![PlannerAction::JobFailed { job: id, error }]);
            }
        };
        if let Some(error) = self.gone.clone() {
            return (id, vec![PlannerAction::JobFailed { job: id, error }]);
        }
        let outputs: HashSet<ChunkKey> = graph.outputs.iter().copied().collect();
        let tasks = graph
            .tasks
            .into_iter()
            .enumerate()
            .map(|(pos, t)| Task {
                is_output: outputs.contains(&t.key),
                key: t.key,
                op: Arc::new(t.op),
                inputs: t.inputs,
                waiting_on: index.inputs(pos).len(),
                readers_left: index.consumers(pos).len(),
                status: Status::Pending,
                retries: 0,
                losses: 0,
            })
            .collect::<Vec<_>>();
        self.ready.extend(
            tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.waiting_on == 0)
                .map(|(pos, _)| (id, pos)),
        );
        let job = Job {
            tasks,
            index,
            outputs: graph.outputs,
            done: 0,
            submitted: now,
            last_progress: now,
            stored_bytes: 0,
            delivering: None,
            stats: JobStats::default(),
        };
        self.jobs.insert(id, job);
        let mut actions = self.deliver_if_done(id);
        actions.extend(self.dispatch_ready());
        (id, actions)
    }

    /// Dispatch `attempt` of `key` of `job` computed its chunk.
    pub fn on_chunk_done(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        data: Arc<ChunkData>,
        now: Instant,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        let mut actions = Vec::new();
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                actions.push(PlannerAction::Store {
                    job,
                    key,
                    data: Arc::clone(&data),
                    op: state.tasks[pos].op.name(),
                    next_use: state.next_use(job, pos, &self.in_flight),
                    shared: matches!(state.tasks[pos].op.as_ref(), ChunkOp::Literal(_)),
                });
                state.complete(job, pos, data.nbytes() as u64, &mut actions);
                for i in 0..state.index.consumers(pos).len() {
                    let consumer = state.index.consumers(pos)[i];
                    if state.is_queued(job, consumer, &self.in_flight) {
                        state.tasks[consumer].waiting_on -= 1;
                        if state.tasks[consumer].waiting_on == 0 {
                            self.ready.insert((job, consumer));
                        }
                    }
                }
                if state.done < state.total()
                    && now.duration_since(state.last_progress) >= PROGRESS_INTERVAL
                {
                    state.last_progress = now;
                    actions.push(PlannerAction::Progress {
                        job,
                        done: state.done,
                        total: state.total(),
                    });
                }
            }
        }
        actions.extend(self.deliver_if_done(job));
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Dispatch `attempt` of `key` of `job` failed. A retryable failure (a panic, a lost
    /// device, an injected fault) runs the task again, up to [`MAX_ATTEMPTS`] runs in all;
    /// otherwise the job fails with the chunk's key, op name and the cause.
    pub fn on_chunk_failed(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        cause: KernelError,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        let mut actions = self.retry_or_fail(job, key, cause);
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Dispatch `attempt` of `key` of `job` could not fetch its inputs `lost` (`cause`
    /// says why): they are recomputed from lineage and the task waits for them.
    pub fn on_inputs_lost(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        lost: &[ChunkKey],
        cause: &str,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        let mut actions = self.lose_chunks(job, lost, cause);
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                state.requeue(job, pos, &mut self.ready);
            }
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// The storage actor in use stopped answering (it died; the supervisor's
    /// [`Self::on_actor_down`] and a restart follow): nothing is dispatched or delivered
    /// until [`Self::on_storage_restarted`]. Retrying at once would spin on the dead actor
    /// and starve the supervisor, which shares the planner's thread.
    pub fn storage_gone(&mut self) {
        self.storage_up = false;
    }

    /// Dispatch `attempt` of `key` of `job` could not reach storage: the task waits in
    /// line (storage is being restarted; see [`Self::storage_gone`]).
    pub fn on_storage_unreachable(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                state.requeue(job, pos, &mut self.ready);
            }
        }
        self.dispatch_ready()
    }

    /// Dispatch `attempt` of `key` of `job` could not be handed to `device`, which has
    /// stopped: the task waits in line (no attempt is counted) and the device takes no
    /// more tasks until it is added again (the supervisor's [`Self::on_actor_down`] follows).
    pub fn on_device_unreachable(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        device: DeviceId,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        self.devices.remove(&device);
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                state.requeue(job, pos, &mut self.ready);
            }
        }
        self.dispatch_ready()
    }

    /// Delivery `attempt` of `job` took its outputs: the job is over; its statistics.
    pub fn on_delivered(&mut self, job: JobId, attempt: u64, now: Instant) -> Option<JobStats> {
        if self.jobs.get(&job)?.delivering != Some(attempt) {
            return None;
        }
        let mut state = self.jobs.remove(&job)?;
        state.stats.wall_time = now.duration_since(state.submitted);
        Some(state.stats)
    }

    /// Delivery `attempt` of `job` failed: the outputs `lost` are recomputed (none: storage
    /// was unreachable and is being restarted) and delivered again later.
    pub fn on_delivery_failed(
        &mut self,
        job: JobId,
        attempt: u64,
        lost: &[ChunkKey],
        cause: &str,
    ) -> Vec<PlannerAction> {
        match self.jobs.get_mut(&job) {
            Some(state) if state.delivering == Some(attempt) => state.delivering = None,
            _ => return Vec::new(),
        }
        let mut actions = self.lose_chunks(job, lost, cause);
        actions.extend(self.deliver_if_done(job));
        actions.extend(self.dispatch_ready());
        actions
    }

    /// An actor died. A device's running tasks are run again elsewhere (or once it is
    /// back); storage's death pauses dispatching until [`Self::on_storage_restarted`]. When
    /// the supervisor has given up (`restarting` false) every job fails.
    pub fn on_actor_down(
        &mut self,
        actor: ActorName,
        restarting: bool,
        restarts: u32,
    ) -> Vec<PlannerAction> {
        for state in self.jobs.values_mut() {
            state.stats.restarts += u64::from(restarting);
        }
        let mut actions = Vec::new();
        match actor {
            ActorName::Device(device) => {
                self.devices.remove(&device);
                let lost: Vec<(JobId, ChunkKey)> = self
                    .in_flight
                    .iter()
                    .filter(|(_, f)| f.device == device)
                    .map(|(&task, _)| task)
                    .collect();
                for (job, key) in lost {
                    self.in_flight.remove(&(job, key));
                    let cause = KernelError::DeviceUnavailable(format!("{device} died"));
                    actions.extend(self.retry_or_fail(job, key, cause));
                }
            }
            ActorName::Storage => self.storage_up = false,
        }
        if !restarting {
            let error = JobError::ActorLost {
                actor: actor.to_string(),
                restarts,
            };
            let gone = match actor {
                ActorName::Storage => true,
                ActorName::Device(_) => self.devices.is_empty(),
            };
            if gone {
                self.gone = Some(error.clone());
                let jobs: Vec<JobId> = self.jobs.keys().copied().collect();
                for job in jobs {
                    actions.extend(self.fail(job, error.clone()));
                }
            }
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// A new, empty storage actor replaced the one that died: every stored chunk was
    /// lost; those still needed are recomputed from lineage.
    pub fn on_storage_restarted(&mut self) -> Vec<PlannerAction> {
        self.storage_up = true;
        let mut actions = Vec::new();
        let jobs: Vec<JobId> = self.jobs.keys().copied().collect();
        for job in jobs {
            let Some(state) = self.jobs.get_mut(&job) else {
                continue;
            };
            state.delivering = None;
            let stored: Vec<ChunkKey> = state
                .tasks
                .iter()
                .filter(|t| matches!(t.status, Status::Stored(_)))
                .map(|t| t.key)
                .collect();
            actions.extend(self.lose_chunks(job, &stored, "the storage actor died"));
            actions.extend(self.deliver_if_done(job));
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// True while `job` is running.
    pub fn is_running(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// Tasks dispatched and not yet reported back.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Frees the slot and reservation of dispatch `attempt` of a task; false (and a log
    /// line) if that dispatch is not in flight.
    fn take_in_flight(&mut self, job: JobId, key: ChunkKey, attempt: u64) -> bool {
        match self.in_flight.get(&(job, key)) {
            Some(f) if f.attempt == attempt => {}
            _ => {
                tracing::debug!(%job, %key, attempt, "ignoring a report for a dispatch not in flight");
                return false;
            }
        }
        if let Some(f) = self.in_flight.remove(&(job, key)) {
            if let Some(slots) = self.devices.get_mut(&f.device) {
                slots.used -= 1;
            }
        }
        true
    }

    /// Runs a task that is no longer in flight again, or fails its job.
    fn retry_or_fail(
        &mut self,
        job: JobId,
        key: ChunkKey,
        cause: KernelError,
    ) -> Vec<PlannerAction> {
        let Some(state) = self.jobs.get_mut(&job) else {
            return Vec::new();
        };
        let Some(pos) = state.index.position(key) else {
            return Vec::new();
        };
        let task = &mut state.tasks[pos];
        if cause.is_retryable() && task.retries + 1 < MAX_ATTEMPTS {
            task.retries += 1;
            state.stats.retries += 1;
            tracing::warn!(%job, %key, %cause, attempt = task.retries + 1, "retrying chunk");
            state.requeue(job, pos, &mut self.ready);
            return Vec::new();
        }
        let error = JobError::ChunkFailed {
            key,
            op: task.op.name().to_string(),
            source: cause,
        };
        self.fail(job, error)
    }

    /// Counts losses of `job`'s stored chunks `lost` and recomputes them.
    fn lose_chunks(&mut self, job: JobId, lost: &[ChunkKey], cause: &str) -> Vec<PlannerAction> {
        let Some(state) = self.jobs.get_mut(&job) else {
            return Vec::new();
        };
        for &key in lost {
            let Some(pos) = state.index.position(key) else {
                continue;
            };
            if let Err(error) = state.lose(job, pos, cause, &self.in_flight, &mut self.ready) {
                return self.fail(job, error);
            }
        }
        Vec::new()
    }

    /// Ends `job` with `error`.
    fn fail(&mut self, job: JobId, error: JobError) -> Vec<PlannerAction> {
        if self.jobs.remove(&job).is_none() {
            return Vec::new();
        }
        self.ready.retain(|&(j, _)| j != job);
        vec![PlannerAction::JobFailed { job, error }]
    }

    /// Starts delivering `job` if all its chunks are computed and storage is up.
    fn deliver_if_done(&mut self, job: JobId) -> Vec<PlannerAction> {
        let Some(state) = self.jobs.get_mut(&job) else {
            return Vec::new();
        };
        if state.done < state.total() || state.delivering.is_some() || !self.storage_up {
            return Vec::new();
        }
        let attempt = self.next_attempt;
        self.next_attempt += 1;
        state.delivering = Some(attempt);
        vec![PlannerAction::Deliver {
            job,
            outputs: state.outputs.clone(),
            attempt,
        }]
    }

    /// Dispatches ready tasks in priority order while a device has a free slot and the
    /// memory budget takes their outputs (or nothing else is running).
    fn dispatch_ready(&mut self) -> Vec<PlannerAction> {
        let mut actions = Vec::new();
        while let Some(&(job, pos)) = self.ready.first() {
            if !self.storage_up {
                break;
            }
            let Some(state) = self.jobs.get_mut(&job) else {
                self.ready.pop_first();
                continue;
            };
            let Some((&device, slots)) = self
                .devices
                .iter_mut()
                .filter(|(_, s)| s.used < s.capacity)
                .max_by_key(|(id, s)| (s.capacity - s.used, Reverse(**id)))
            else {
                break;
            };
            let estimate = state.estimate(pos);
            let reservation = match self.pool.try_reserve(estimate) {
                Some(r) => r,
                None if !self.in_flight.is_empty() => {
                    state.stats.held_back += 1;
                    break;
                }
                None => match self.pool.disk_full() {
                    None => self.pool.reserve(estimate),
                    Some(disk_budget) => {
                        let error = JobError::OutOfMemory(OutOfMemory {
                            host_budget: self.pool.budget(),
                            disk_budget,
                            reserved: self.pool.used(),
                            needed: estimate,
                        });
                        actions.extend(self.fail(job, error));
                        continue;
                    }
                },
            };
            self.ready.pop_first();
            let task = &state.tasks[pos];
            slots.used += 1;
            let attempt = self.next_attempt;
            self.next_attempt += 1;
            self.in_flight.insert(
                (job, task.key),
                InFlight {
                    device,
                    attempt,
                    _reservation: reservation,
                },
            );
            actions.push(PlannerAction::Dispatch {
                job,
                key: task.key,
                attempt,
                device,
                op: Arc::clone(&task.op),
                inputs: task.inputs.clone(),
            });
        }
        let used = self.pool.used();
        for state in self.jobs.values_mut() {
            state.stats.peak_host_reserved = state.stats.peak_host_reserved.max(used);
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::graph;
    use crate::store::tests::chunk;

    const CPU: DeviceId = DeviceId(0);

    fn keys(ks: &[u64]) -> Vec<ChunkKey> {
        ks.iter().map(|&k| ChunkKey(k)).collect()
    }

    /// The keys dispatched by `actions`, in order.
    fn dispatched(actions: &[PlannerAction]) -> Vec<u64> {
        actions
            .iter()
            .filter_map(|a| match a {
                PlannerAction::Dispatch { key, .. } => Some(key.0),
                _ => None,
            })
            .collect()
    }

    /// The keys released by `actions`, in order.
    fn released(actions: &[PlannerAction]) -> Vec<u64> {
        actions
            .iter()
            .flat_map(|a| match a {
                PlannerAction::Release { keys, .. } => keys.iter().map(|k| k.0).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    fn planner(slots: usize) -> PlannerState {
        let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
        assert!(p.add_device(CPU, slots).is_empty());
        p
    }

    /// The attempt number of `key`'s dispatch in flight (an unused one if none is).
    fn attempt(p: &PlannerState, job: JobId, key: u64) -> u64 {
        p.in_flight
            .get(&(job, ChunkKey(key)))
            .map_or(u64::MAX, |f| f.attempt)
    }

    fn done(p: &mut PlannerState, job: JobId, key: u64, n: usize) -> Vec<PlannerAction> {
        let attempt = attempt(p, job, key);
        p.on_chunk_done(job, ChunkKey(key), attempt, chunk(n), Instant::now())
    }

    fn failed(
        p: &mut PlannerState,
        job: JobId,
        key: u64,
        cause: KernelError,
    ) -> Vec<PlannerAction> {
        let attempt = attempt(p, job, key);
        p.on_chunk_failed(job, ChunkKey(key), attempt, cause)
    }

    /// The delivery `actions` start, as (outputs, attempt).
    fn delivery(actions: &[PlannerAction]) -> Option<(Vec<u64>, u64)> {
        actions.iter().find_map(|a| match a {
            PlannerAction::Deliver {
                outputs, attempt, ..
            } => Some((outputs.iter().map(|k| k.0).collect(), *attempt)),
            _ => None,
        })
    }

    /// The error of the job failure in `actions`.
    fn failure(actions: &[PlannerAction]) -> Option<&JobError> {
        actions.iter().find_map(|a| match a {
            PlannerAction::JobFailed { error, .. } => Some(error),
            _ => None,
        })
    }

    /// Delivers `job` as the store would, returning its statistics.
    fn deliver(p: &mut PlannerState, job: JobId, actions: &[PlannerAction]) -> JobStats {
        let (_, attempt) = delivery(actions).expect("delivery starts");
        p.on_delivered(job, attempt, Instant::now())
            .expect("delivered")
    }

    #[test]
    fn dispatches_in_depth_first_priority_within_slots() {
        // a0 a1 -> s ; b0 b1 -> t ; s t -> r
        let g = graph(
            &[
                (10, &[]),
                (11, &[]),
                (12, &[10, 11]),
                (20, &[]),
                (21, &[]),
                (22, &[20, 21]),
                (30, &[12, 22]),
            ],
            &[30],
        );
        let mut p = planner(2);
        let (job, actions) = p.submit(g, Instant::now());
        assert_eq!(dispatched(&actions), vec![10, 11]);
        assert_eq!(dispatched(&done(&mut p, job, 10, 1)), vec![20]);
        // s (position 2) is now ready and goes before b1 (position 4).
        assert_eq!(dispatched(&done(&mut p, job, 11, 1)), vec![12]);
        assert_eq!(dispatched(&done(&mut p, job, 20, 1)), vec![21]);
        assert_eq!(dispatched(&done(&mut p, job, 12, 1)), Vec::<u64>::new());
        assert_eq!(dispatched(&done(&mut p, job, 21, 1)), vec![22]);
        assert_eq!(dispatched(&done(&mut p, job, 22, 1)), vec![30]);
        assert_eq!(p.in_flight(), 1);
    }

    #[test]
    fn releases_after_last_consumer_and_keeps_outputs() {
        // 1 -> 2, 1 -> 3 ; 2 3 -> 4 ; outputs: 4 and 1 (1 is also read).
        let g = graph(&[(1, &[]), (2, &[1]), (3, &[1]), (4, &[2, 3])], &[4, 1]);
        let mut p = planner(4);
        let (job, actions) = p.submit(g, Instant::now());
        assert_eq!(dispatched(&actions), vec![1]);
        let a = done(&mut p, job, 1, 1);
        assert!(matches!(
            a[0],
            PlannerAction::Store {
                key: ChunkKey(1),
                ..
            }
        ));
        assert_eq!(dispatched(&a), vec![2, 3]);
        assert_eq!(released(&done(&mut p, job, 2, 1)), Vec::<u64>::new());
        // 3 done: 1 has no readers left but is an output, so it stays.
        assert_eq!(released(&done(&mut p, job, 3, 1)), Vec::<u64>::new());
        let a = done(&mut p, job, 4, 1);
        assert_eq!(released(&a), vec![2, 3]);
        assert_eq!(delivery(&a).unwrap().0, vec![4, 1]);
        assert!(p.is_running(job), "running until delivered");
        deliver(&mut p, job, &a);
        assert!(!p.is_running(job));
    }

    #[test]
    fn unread_non_output_chunk_is_released_at_once() {
        let g = graph(&[(1, &[]), (2, &[])], &[2]);
        let mut p = planner(2);
        let (job, _) = p.submit(g, Instant::now());
        let a = done(&mut p, job, 1, 1);
        assert!(matches!(a[0], PlannerAction::Store { .. }));
        assert_eq!(released(&a), vec![1]);
    }

    #[test]
    fn statistics_count_chunks_bytes_ops_and_peak() {
        let g = graph(&[(1, &[]), (2, &[]), (3, &[1, 2])], &[3]);
        let mut p = planner(2);
        let t0 = Instant::now();
        let (job, _) = p.submit(g, t0);
        let a1 = attempt(&p, job, 1);
        p.on_chunk_done(job, ChunkKey(1), a1, chunk(10), t0);
        let a2 = attempt(&p, job, 2);
        p.on_chunk_done(job, ChunkKey(2), a2, chunk(20), t0);
        let a3 = attempt(&p, job, 3);
        let a = p.on_chunk_done(job, ChunkKey(3), a3, chunk(5), t0);
        let (_, delivery) = delivery(&a).unwrap();
        let stats = &p
            .on_delivered(job, delivery, t0 + Duration::from_millis(7))
            .unwrap();
        assert_eq!(stats.chunks_run, 3);
        assert_eq!(stats.bytes_produced, 8 * 35);
        // 1 and 2 are stored together with 3 before the release.
        assert_eq!(stats.peak_stored_bytes, 8 * 35);
        assert_eq!(stats.chunks_by_op.get("fused"), Some(&3));
        assert_eq!(stats.wall_time, Duration::from_millis(7));
    }

    #[test]
    fn failure_names_key_op_and_cause_and_releases_stored_chunks() {
        let g = graph(&[(1, &[]), (2, &[]), (3, &[]), (4, &[1, 2, 3])], &[4]);
        let mut p = planner(2);
        let (job, _) = p.submit(g, Instant::now());
        let a = done(&mut p, job, 1, 1);
        assert_eq!(dispatched(&a), vec![3]);
        let cause = KernelError::BadInput("boom".into());
        let a = failed(&mut p, job, 2, cause.clone());
        let err = failure(&a).unwrap().clone();
        assert_eq!(
            err,
            JobError::ChunkFailed {
                key: ChunkKey(2),
                op: "fused".into(),
                source: cause
            }
        );
        assert_eq!(
            err.to_string(),
            "chunk 2 (fused) failed: bad kernel input: boom"
        );
        assert!(!p.is_running(job));
        // The sibling still running reports later: ignored, its slot freed.
        assert!(done(&mut p, job, 3, 1).is_empty());
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn retryable_failures_run_the_task_again_until_the_attempt_limit() {
        let g = graph(&[(1, &[])], &[1]);
        let mut p = planner(1);
        let (job, a) = p.submit(g, Instant::now());
        assert_eq!(dispatched(&a), vec![1]);
        for attempt in 1..MAX_ATTEMPTS {
            let a = failed(
                &mut p,
                job,
                1,
                KernelError::Panicked(format!("try {attempt}")),
            );
            assert_eq!(dispatched(&a), vec![1], "attempt {attempt} is retried");
            assert!(failure(&a).is_none());
        }
        let a = failed(&mut p, job, 1, KernelError::Injected("last".into()));
        let err = failure(&a).unwrap().clone();
        assert!(matches!(
            err,
            JobError::ChunkFailed {
                source: KernelError::Injected(_),
                ..
            }
        ));
        assert!(!p.is_running(job));
        assert_eq!(p.in_flight(), 0);

        // One retry, then success: the statistics count it.
        let g = graph(&[(1, &[])], &[1]);
        let (job, _) = p.submit(g, Instant::now());
        let a = failed(
            &mut p,
            job,
            1,
            KernelError::DeviceUnavailable("gone".into()),
        );
        assert_eq!(dispatched(&a), vec![1]);
        let a = done(&mut p, job, 1, 8);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.retries, stats.chunks_run), (1, 1));
    }

    #[test]
    fn stale_and_replayed_reports_are_ignored() {
        let g = graph(&[(1, &[]), (2, &[1])], &[2]);
        let mut p = planner(1);
        let (job, _) = p.submit(g, Instant::now());
        assert!(done(&mut p, JobId(99), 1, 1).is_empty(), "unknown job");
        assert!(done(&mut p, job, 42, 1).is_empty(), "unknown key");
        assert!(done(&mut p, job, 2, 1).is_empty(), "not dispatched yet");
        assert!(failed(&mut p, job, 2, KernelError::Panicked("x".into())).is_empty());
        let a1 = attempt(&p, job, 1);
        assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
        assert!(
            p.on_chunk_done(job, ChunkKey(1), a1, chunk(1), Instant::now())
                .is_empty(),
            "replayed completion"
        );
        let a2 = attempt(&p, job, 2);
        assert!(
            p.on_chunk_done(job, ChunkKey(2), a2 + 1, chunk(1), Instant::now())
                .is_empty(),
            "a report of another dispatch"
        );
        let a = done(&mut p, job, 2, 1);
        deliver(&mut p, job, &a);
        assert!(
            p.on_chunk_done(job, ChunkKey(2), a2, chunk(1), Instant::now())
                .is_empty(),
            "completion after the job finished"
        );
        assert!(p
            .on_inputs_lost(job, ChunkKey(2), a2, &keys(&[1]), "gone")
            .is_empty());
        let (_, d) = delivery(&a).unwrap();
        assert!(
            p.on_delivered(job, d, Instant::now()).is_none(),
            "replayed delivery"
        );
    }

    #[test]
    fn concurrent_jobs_share_slots_oldest_first() {
        let mut p = planner(1);
        let (a, acts) = p.submit(graph(&[(1, &[]), (2, &[1])], &[2]), Instant::now());
        assert_eq!(dispatched(&acts), vec![1]);
        let (b, acts) = p.submit(graph(&[(1, &[]), (5, &[])], &[1, 5]), Instant::now());
        assert_ne!(a, b);
        assert!(dispatched(&acts).is_empty(), "no free slot");
        // a's chunk 2 becomes ready and wins over b's older-positioned tasks.
        let acts = done(&mut p, a, 1, 1);
        assert!(
            matches!(acts.last(), Some(PlannerAction::Dispatch { job, key: ChunkKey(2), .. }) if *job == a)
        );
        let acts = done(&mut p, a, 2, 1);
        assert_eq!(delivery(&acts).unwrap().0, vec![2]);
        assert!(
            matches!(acts.last(), Some(PlannerAction::Dispatch { job, key: ChunkKey(1), .. }) if *job == b)
        );
        assert_eq!(dispatched(&done(&mut p, b, 1, 1)), vec![5]);
        let acts = done(&mut p, b, 5, 1);
        assert_eq!(delivery(&acts).unwrap().0, vec![1, 5]);
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn progress_is_throttled() {
        let g = graph(&[(1, &[]), (2, &[]), (3, &[]), (4, &[])], &[4]);
        let mut p = planner(4);
        let t0 = Instant::now();
        let (job, _) = p.submit(g, t0);
        let progress = |a: &[PlannerAction]| {
            a.iter().find_map(|a| match a {
                PlannerAction::Progress { done, total, .. } => Some((*done, *total)),
                _ => None,
            })
        };
        let ms = Duration::from_millis;
        let at = |p: &mut PlannerState, key: u64, t: Duration| {
            let attempt = attempt(p, job, key);
            p.on_chunk_done(job, ChunkKey(key), attempt, chunk(1), t0 + t)
        };
        assert_eq!(progress(&at(&mut p, 1, ms(10))), None);
        assert_eq!(progress(&at(&mut p, 2, ms(60))), Some((2, 4)));
        assert_eq!(progress(&at(&mut p, 3, ms(70))), None);
        let a = at(&mut p, 4, ms(200));
        assert_eq!(progress(&a), None, "the last chunk starts delivery instead");
        assert!(delivery(&a).is_some());
    }

    #[test]
    fn invalid_and_empty_graphs_finish_at_once() {
        let mut p = planner(1);
        let (_, a) = p.submit(graph(&[(1, &[2])], &[1]), Instant::now());
        assert!(matches!(failure(&a), Some(JobError::InvalidGraph(_))));
        let (job, a) = p.submit(ChunkGraph::default(), Instant::now());
        assert_eq!(delivery(&a).unwrap().0, Vec::<u64>::new());
        deliver(&mut p, job, &a);
        assert!(!p.is_running(job));
    }

    #[test]
    fn tasks_wait_for_a_device() {
        let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
        let (_, acts) = p.submit(graph(&[(1, &[]), (2, &[])], &[1, 2]), Instant::now());
        assert!(acts.is_empty());
        assert_eq!(dispatched(&p.add_device(DeviceId(3), 1)), vec![1]);
        assert_eq!(dispatched(&p.add_device(DeviceId(4), 1)), vec![2]);
    }

    /// The chunk graph used by the recovery tests: 1 -> 2 -> 3 (output), 1 -> 3.
    fn chain(p: &mut PlannerState) -> JobId {
        let (job, a) = p.submit(
            graph(&[(1, &[]), (2, &[1]), (3, &[2, 1])], &[3]),
            Instant::now(),
        );
        assert_eq!(dispatched(&a), vec![1]);
        assert_eq!(dispatched(&done(p, job, 1, 2)), vec![2]);
        job
    }

    #[test]
    fn lost_inputs_are_recomputed_from_lineage() {
        let mut p = planner(2);
        let job = chain(&mut p);
        // 2 completes, so 3 is dispatched; then 3 finds 1 missing from storage.
        assert_eq!(dispatched(&done(&mut p, job, 2, 3)), vec![3]);
        let a3 = attempt(&p, job, 3);
        let a = p.on_inputs_lost(job, ChunkKey(3), a3, &keys(&[1]), "not in storage");
        assert_eq!(dispatched(&a), vec![1], "1 runs again; 3 waits for it");
        assert!(done(&mut p, job, 3, 1).is_empty(), "3 is not in flight now");
        assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![3]);
        let a = done(&mut p, job, 3, 4);
        assert_eq!(released(&a), vec![2, 1]);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 1));
        assert_eq!(stats.chunks_run, 4);
    }

    #[test]
    fn released_inputs_of_a_lost_chunk_are_recomputed_too() {
        // 1 -> 2 -> 3 -> 4 (output); 2 is released once 3 is done, then 3 is lost.
        let mut p = planner(1);
        let (job, _) = p.submit(
            graph(&[(1, &[]), (2, &[1]), (3, &[2]), (4, &[3])], &[4]),
            Instant::now(),
        );
        done(&mut p, job, 1, 1);
        done(&mut p, job, 2, 1);
        assert_eq!(released(&done(&mut p, job, 3, 1)), vec![2]);
        let a4 = attempt(&p, job, 4);
        let a = p.on_inputs_lost(job, ChunkKey(4), a4, &keys(&[3]), "corrupt spill file");
        // 1 was released too: the walk goes back to the source.
        assert_eq!(dispatched(&a), vec![1]);
        assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
        assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
        assert_eq!(dispatched(&done(&mut p, job, 3, 1)), vec![4]);
        let a = done(&mut p, job, 4, 1);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 3));
    }

    #[test]
    fn a_chunk_lost_twice_fails_its_job_naming_it() {
        let mut p = planner(1);
        let job = chain(&mut p);
        for round in 1..=MAX_LOSSES {
            let a2 = attempt(&p, job, 2);
            let a = p.on_inputs_lost(job, ChunkKey(2), a2, &keys(&[1]), "dropped");
            if round < MAX_LOSSES {
                assert_eq!(dispatched(&a), vec![1]);
                assert_eq!(dispatched(&done(&mut p, job, 1, 2)), vec![2]);
            } else {
                let err = failure(&a).unwrap();
                assert!(
                    matches!(err, JobError::ChunkLost { key: ChunkKey(1), losses, .. } if *losses == MAX_LOSSES)
                );
                assert!(err.to_string().contains("dropped"), "{err}");
            }
        }
        assert!(!p.is_running(job));
    }

    #[test]
    fn lost_outputs_are_recomputed_and_delivered_again() {
        let mut p = planner(1);
        let job = chain(&mut p);
        done(&mut p, job, 2, 1);
        let a = done(&mut p, job, 3, 1);
        let (_, first) = delivery(&a).unwrap();
        let a = p.on_delivery_failed(job, first, &keys(&[3]), "checksum mismatch");
        assert_eq!(
            dispatched(&a),
            vec![1],
            "3 and, back along its lineage, 2 and 1"
        );
        assert!(
            p.on_delivered(job, first, Instant::now()).is_none(),
            "stale delivery"
        );
        done(&mut p, job, 1, 1);
        done(&mut p, job, 2, 1);
        let a = done(&mut p, job, 3, 1);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.chunks_lost, stats.chunks_recomputed), (1, 3));
    }

    #[test]
    fn a_dead_device_s_tasks_run_again_and_its_late_reports_are_ignored() {
        let mut p = planner(2);
        let (job, a) = p.submit(
            graph(&[(1, &[]), (2, &[]), (3, &[1, 2])], &[3]),
            Instant::now(),
        );
        assert_eq!(dispatched(&a), vec![1, 2]);
        let old = attempt(&p, job, 1);
        let a = p.on_actor_down(ActorName::Device(CPU), true, 1);
        assert!(dispatched(&a).is_empty(), "no device until the restart");
        assert_eq!(p.in_flight(), 0);
        assert_eq!(dispatched(&p.add_device(CPU, 2)), vec![1, 2]);
        assert!(
            p.on_chunk_done(job, ChunkKey(1), old, chunk(1), Instant::now())
                .is_empty(),
            "a completion from before the restart"
        );
        done(&mut p, job, 1, 1);
        assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
        let a = done(&mut p, job, 3, 1);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.retries, stats.restarts, stats.chunks_run), (2, 1, 3));
    }

    #[test]
    fn a_storage_restart_recomputes_what_is_still_needed() {
        let mut p = planner(1);
        let job = chain(&mut p); // 1 stored, 2 running
        let a = p.on_actor_down(ActorName::Storage, true, 1);
        assert!(a.is_empty());
        // 2 finishes while storage is down: stored (to the dead actor), nothing dispatched.
        assert!(dispatched(&done(&mut p, job, 2, 1)).is_empty());
        let a = p.on_storage_restarted();
        // Both 1 and 2 were lost and are needed by 3.
        assert_eq!(dispatched(&a), vec![1]);
        assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
        assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
        let a = done(&mut p, job, 3, 1);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.chunks_lost, stats.restarts), (2, 1));
    }

    #[test]
    fn an_actor_given_up_on_fails_running_and_later_jobs() {
        let mut p = planner(1);
        let job = chain(&mut p);
        let a = p.on_actor_down(ActorName::Device(CPU), false, 3);
        let err = failure(&a).unwrap().clone();
        assert_eq!(
            err.to_string(),
            "device0 died and was restarted 3 times; giving up"
        );
        assert!(!p.is_running(job));
        let (_, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
        assert_eq!(failure(&a), Some(&err));
    }

    #[test]
    fn reservations_hold_back_work_beyond_the_budget() {
        // Four chunks of 80 bytes each; room for two at once.
        let pool = MemoryPool::new(160);
        let mut p = PlannerState::new(pool.clone());
        p.add_device(CPU, 4);
        let lit = |k: u64| crate::graph::ChunkTask {
            key: ChunkKey(k),
            op: crate::graph::tests::const_op(1, 10),
            inputs: Vec::new(),
        };
        let g = ChunkGraph {
            tasks: (1..=4).map(lit).collect(),
            outputs: keys(&[1, 2, 3, 4]),
        };
        let (job, a) = p.submit(g, Instant::now());
        assert_eq!(dispatched(&a), vec![1, 2], "two fit the budget");
        assert_eq!(pool.used(), 160);
        assert_eq!(dispatched(&done(&mut p, job, 1, 10)), vec![3]);
        // Nothing frees memory here (the store would spill); with one task running the
        // planner still waits, and once none runs it dispatches anyway.
        let _stored = pool.reserve(1000);
        assert!(dispatched(&done(&mut p, job, 2, 10)).is_empty());
        let a = done(&mut p, job, 3, 10);
        assert_eq!(
            dispatched(&a),
            vec![4],
            "nothing running: progress is forced"
        );
        let a = done(&mut p, job, 4, 10);
        let stats = deliver(&mut p, job, &a);
        assert!(stats.held_back >= 1);
        assert_eq!(stats.peak_host_reserved, 1080);
    }

    #[test]
    fn with_both_tiers_full_a_job_that_cannot_progress_fails_naming_both_budgets() {
        let pool = MemoryPool::new(100);
        let mut p = PlannerState::new(pool.clone());
        p.add_device(CPU, 1);
        let (job, a) = p.submit(graph(&[(1, &[]), (2, &[1])], &[2]), Instant::now());
        assert_eq!(dispatched(&a), vec![1]);
        // The stored chunks fill the host budget and the store found the disk budget full.
        let stored = pool.reserve(500);
        pool.set_disk_full(Some(64));
        let a = done(&mut p, job, 1, 10);
        assert!(dispatched(&a).is_empty(), "nothing over both budgets");
        let err = failure(&a).expect("the job fails at once");
        assert!(matches!(
            err,
            JobError::OutOfMemory(OutOfMemory {
                host_budget: 100,
                disk_budget: 64,
                reserved: 500..,
                ..
            })
        ));
        let text = err.to_string();
        assert!(
            text.contains("100 bytes") && text.contains("64 bytes"),
            "{text}"
        );
        assert!(!p.is_running(job));
        // Once the store can spill again, a new job is forced through as before.
        pool.set_disk_full(None);
        let (_, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
        assert_eq!(dispatched(&a), vec![1]);
        drop(stored);
    }

    #[test]
    fn an_unreachable_device_takes_no_tasks_until_it_is_back() {
        let mut p = planner(1);
        let (job, a) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
        assert_eq!(dispatched(&a), vec![1]);
        let first = attempt(&p, job, 1);
        // No attempt is counted, and nothing is dispatched to the stopped device.
        assert!(p
            .on_device_unreachable(job, ChunkKey(1), first, CPU)
            .is_empty());
        assert!(p.on_actor_down(ActorName::Device(CPU), true, 1).is_empty());
        assert_eq!(dispatched(&p.add_device(CPU, 1)), vec![1]);
        let a = done(&mut p, job, 1, 1);
        let stats = deliver(&mut p, job, &a);
        assert_eq!((stats.retries, stats.restarts), (0, 1));
    }

    #[test]
    fn nothing_is_dispatched_or_delivered_while_storage_is_gone() {
        let mut p = planner(2);
        let job = chain(&mut p); // 1 stored, 2 dispatched
        let a2 = attempt(&p, job, 2);
        p.storage_gone();
        assert!(
            p.on_storage_unreachable(job, ChunkKey(2), a2).is_empty(),
            "no spin"
        );
        let a = p.on_storage_restarted();
        // 1 was lost with the storage actor and is computed again first.
        assert_eq!(dispatched(&a), vec![1]);
        assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
        assert_eq!(dispatched(&done(&mut p, job, 2, 1)), vec![3]);
        let a = done(&mut p, job, 3, 1);
        let (_, d) = delivery(&a).unwrap();
        p.storage_gone();
        assert!(p
            .on_delivery_failed(job, d, &[], "storage unreachable")
            .is_empty());
        let a = p.on_storage_restarted();
        assert_eq!(dispatched(&a), vec![1], "the outputs died with storage");
    }
}
