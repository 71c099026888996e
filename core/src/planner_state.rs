//! The graph planner's state machine: running jobs, the ready queue, device slots, memory
//! reservations and in-flight tasks. Events go in (job submitted, device added or lost,
//! chunk done or failed, chunks lost, storage restarted), [`PlannerAction`]s come out; no
//! actor, clock or thread is involved (time is passed in).
//!
//! Policy: ready tasks run oldest job first, then lowest graph position (the runtime's
//! depth-first order); each device has a fixed number of slots; a task's output is
//! reserved in the host [`MemoryPool`] before it is dispatched, and when the reservation
//! is refused the task waits (back-pressure) and storage is asked to spill ahead to make
//! room for it (`room`); with nothing running, once storage has made what room it can, the
//! task passes the budget, so a job always progresses; but when nothing is running and the
//! disk tier's budget is full too (the store cannot spill), the job fails with
//! [`JobError::OutOfMemory`] instead of growing past both budgets. A chunk is released as soon as its last consumer has completed, except
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
//!
//! Files: this one holds the state and the events of a task's life; `dispatch` the
//! dispatch pass, `room` the room asked of storage, `placement` where a task runs, `losses`
//! failures and lost chunks, `job` one job's bookkeeping, `split` shuffle parts, `costs`
//! learnt run times.

use crate::graph::{ChunkGraph, ChunkKey, GraphIndex};
use crate::ids::ChunkId;
use crate::ids::{ActorName, DeviceId, DeviceKind};
use crate::job::{JobError, JobId, JobStats};
use crate::memory::{MemoryPool, Reservation};
use crate::recorder::{Recorder, RunSpan, TaskRecord, TaskStream};
use crate::storage::PutInfo;
use costs::RunCosts;
pub use placement::MOVE_BYTES;
use placement::{Placement, Waiting};
use room::{HeldBack, RoomAsk};
pub use split::split_parts;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Bound::{Excluded, Unbounded};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// The shortest time between two progress reports of one job.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Runs of one chunk task at most (the first and its retries) before its job fails.
pub const MAX_ATTEMPTS: u32 = 3;

/// A chunk lost this many times fails its job (it was recomputed after each earlier loss).
pub const MAX_LOSSES: u32 = 2;

/// A chunk storage dropped this many times is offered no more for dropping: it is
/// spilled, so that a job under memory pressure always progresses.
pub const MAX_DROPS: u32 = 3;

/// Why stored chunks are no longer in storage.
#[derive(Clone, Copy, Debug)]
pub enum Gone<'a> {
    /// Lost, for the reason given: counted against [`MAX_LOSSES`].
    Lost(&'a str),
    /// Dropped by storage, recomputing them being cheaper than a spill: no loss.
    Dropped,
}

/// What the planner's owner must do next, in order.
#[derive(Debug)]
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
        inputs: Vec<ChunkId>,
        /// A split task's part keys (its output is stored as one chunk per part).
        parts: Vec<ChunkKey>,
    },
    /// Put a produced chunk into storage.
    Store {
        /// The job.
        job: JobId,
        /// The chunk.
        key: ChunkKey,
        /// Its data.
        data: Arc<ChunkData>,
        /// Its op, next reader (`u64::MAX`: read only at delivery), sharing, and, where its
        /// task reads no other chunk and it is no output, what running the task took:
        /// storage may then drop it and have it computed again rather than spill it.
        info: PutInfo,
        /// Its bytes, reserved from the moment its task ended (its task's reservation is
        /// given back then) until storage holds it, so a chunk on its way to a busy
        /// storage thread still counts against the budget; `None` for shared data.
        reservation: Option<Reservation>,
    },
    /// Drop chunks from storage.
    Release {
        /// The job.
        job: JobId,
        /// The chunks.
        keys: Vec<ChunkKey>,
    },
    /// Give up the holds a job was given on kept chunks (stored inputs its last reader
    /// has read, or all it still holds when it ends), as dropping their handles would.
    Unkeep {
        /// The chunks.
        ids: Vec<ChunkId>,
    },
    /// Tell the job's owner how far it is.
    Progress {
        /// The job.
        job: JobId,
        /// Completed chunk tasks (and stored parts of split tasks).
        done: u64,
        /// All chunk tasks (and parts of split tasks).
        total: u64,
    },
    /// Every chunk is computed: take the outputs out of storage (or keep them there, with
    /// `keep`) and report back with [`PlannerState::on_delivered`] (or that some were lost).
    Deliver {
        /// The job.
        job: JobId,
        /// Output chunks, in `ChunkGraph::outputs` order.
        outputs: Vec<ChunkId>,
        /// Keep the outputs in storage for the caller rather than hand out their data.
        keep: bool,
        /// This delivery's number, echoed by its report.
        attempt: u64,
    },
    /// The job failed; drop whatever storage holds of it and report the error.
    JobFailed {
        /// The job.
        job: JobId,
        /// Why.
        error: JobError,
        /// What it did before (none for a job refused at submission).
        stats: Option<Box<JobStats>>,
    },
    /// A task is held back for memory (its reservation is in [`crate::HostPool::wanted`]):
    /// have storage spill ahead to make room for it, then call
    /// [`PlannerState::on_room_made`] with `ask`.
    MakeRoom {
        /// The ask's number.
        ask: u64,
    },
}

/// What a finished task produced.
#[derive(Debug)]
enum Produced {
    /// Its data, to be stored, and how long its kernel ran.
    Data(Arc<ChunkData>, Duration),
    /// Held by the device that ran it: its size, or for a split task each part's.
    Held(Vec<u64>),
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

/// What a graph position holds: a task to run, a chunk an earlier job kept, or a part of
/// a split task's output (stored when that task, named `op`, finishes; never run itself).
#[derive(Debug)]
enum Work {
    Run(Arc<ChunkOp>),
    Kept(ChunkId),
    Part { op: &'static str },
}

impl Work {
    fn name(&self) -> &'static str {
        match self {
            Work::Run(op) => op.name(),
            Work::Kept(_) => crate::kept::KEPT_OP,
            Work::Part { op } => op,
        }
    }
}

#[derive(Debug)]
struct Task {
    key: ChunkKey,
    work: Work,
    /// The kind of device its graph task asked for ([`crate::ChunkTask::device`]).
    device: Option<DeviceKind>,
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
    /// The dispatch attempt that produced the chunk stored now (0 for a kept chunk): a
    /// reader dispatched before it found an earlier copy missing, a loss counted already.
    made_by: u64,
    /// Times storage dropped its chunk to have it computed again.
    drops: u32,
    /// Times it was computed again from lineage.
    recomputes: u32,
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
    /// Keep the outputs in storage instead of handing them out.
    keep: bool,
    /// Positions of the stored inputs the submitter gave to the job
    /// ([`crate::graph::StoredInput::given`]) that it has not given up yet.
    given: BTreeSet<usize>,
    /// Positions of the given stored inputs it gave up after their last read.
    given_up: BTreeSet<usize>,
    stats: JobStats,
    /// What the recorder sees of the job (none while recording is off).
    stream: Option<TaskStream>,
}

/// A device's tasks: how many may be dispatched to it at once (`capacity`: those running
/// and those queued there), how many of them run at once (`threads`), and how many are
/// dispatched now.
#[derive(Clone, Copy, Debug)]
struct Slots {
    kind: DeviceKind,
    capacity: usize,
    threads: usize,
    used: usize,
}

/// A dispatched task: where it runs, which dispatch it is, its output's reservation, and
/// how long it is expected to run (`None`: its op has not been timed yet).
#[derive(Debug)]
struct InFlight {
    device: DeviceId,
    attempt: u64,
    expected: Option<Duration>,
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
    pool: Arc<dyn MemoryPool>,
    storage_up: bool,
    /// Set once an actor is gone for good: every job fails with it.
    gone: Option<JobError>,
    /// Which device holds a stored chunk, and its bytes: a task goes to the device that
    /// holds most of its input bytes unless that one is saturated. A cluster's scheduler
    /// fills it (each worker is a device); in one process it stays empty.
    locality: HashMap<ChunkId, (DeviceId, u64)>,
    /// Ops' run times, as reported: what placement weighs a move against.
    costs: RunCosts,
    /// Records jobs' task streams when set.
    recorder: Option<Arc<Recorder>>,
    /// What storage was asked to make room for (see [`room`]).
    room: RoomAsk,
    /// Asks for room made so far (numbering them).
    room_asks: u64,
    /// Which ops a GPU runs (none until a device crate says: see [`GpuOps`]).
    gpu_ops: GpuOps,
    /// Devices that share the memory of another (a cluster worker's GPUs: the worker's CPU
    /// device, which `locality` names as the holder of its chunks), by
    /// [`PlannerState::share_host`]; a device not here is its own host.
    hosts: HashMap<DeviceId, DeviceId>,
}

/// Which ops a GPU device runs, as its crate says (`tessera_cuda::Gpu::runs`,
/// `Gpu::pays` and `Gpu::shares`): the planner places by it and needs no GPU code of its
/// own.
#[derive(Clone, Copy, Debug)]
pub struct GpuOps {
    /// True for the ops a GPU has kernels for: a task pinned to a GPU runs there.
    pub runs: fn(&ChunkOp) -> bool,
    /// True for those that also pay for a GPU task's fixed cost: an unpinned task runs on
    /// a GPU only then.
    pub pays: fn(&ChunkOp) -> bool,
    /// True for those of them a CPU core runs in a time of the same order: an idle CPU
    /// device takes such a task when it is expected to finish it first (see `placement`).
    pub shares: fn(&ChunkOp) -> bool,
}

impl GpuOps {
    /// No op runs on a GPU.
    pub const NONE: GpuOps = GpuOps {
        runs: no_op_runs,
        pays: no_op_runs,
        shares: no_op_runs,
    };
}

fn no_op_runs(_: &ChunkOp) -> bool {
    false
}

impl PlannerState {
    /// A planner with no jobs and no devices, reserving task outputs in `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>) -> PlannerState {
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
            locality: HashMap::new(),
            costs: RunCosts::default(),
            recorder: None,
            room: RoomAsk::None,
            room_asks: 0,
            gpu_ops: GpuOps::NONE,
            hosts: HashMap::new(),
        }
    }

    /// Places tasks on GPU devices by `ops` (until then, every task runs on a CPU device).
    pub fn set_gpu_ops(&mut self, ops: GpuOps) {
        self.gpu_ops = ops;
    }

    /// Records the task stream of every job submitted from now on (while `recorder` is on):
    /// see [`Self::record_run`].
    pub fn set_recorder(&mut self, recorder: Arc<Recorder>) {
        self.recorder = Some(recorder);
    }

    /// Adds a CPU device (a CPU pool, or a cluster's worker) that runs up to `slots` tasks
    /// at once (or changes its slot count).
    pub fn add_device(&mut self, device: DeviceId, slots: usize) -> Vec<PlannerAction> {
        self.add_device_of(device, DeviceKind::Cpu, slots)
    }

    /// Adds a device of `kind` that runs up to `slots` tasks at once (or changes it); see
    /// the placement rules in `placement`.
    pub fn add_device_of(
        &mut self,
        device: DeviceId,
        kind: DeviceKind,
        slots: usize,
    ) -> Vec<PlannerAction> {
        self.set_slots(device, kind, slots, slots)
    }

    /// Adds a CPU device (a cluster's worker) that runs `threads` tasks at once and may
    /// have up to `capacity` dispatched to it, the rest queued there (or changes them).
    /// Queued tasks start without a round trip to the planner; a device whose threads
    /// are all busy steals no tiny task from another (`placement`).
    pub fn add_queued_device(
        &mut self,
        device: DeviceId,
        threads: usize,
        capacity: usize,
    ) -> Vec<PlannerAction> {
        self.set_slots(device, DeviceKind::Cpu, threads, capacity.max(threads))
    }

    /// Registers `device` with these slots. Its dispatches still in flight count as used
    /// even when it was removed (unreachable or down) and is added again: their reports
    /// may still come.
    fn set_slots(
        &mut self,
        device: DeviceId,
        kind: DeviceKind,
        threads: usize,
        capacity: usize,
    ) -> Vec<PlannerAction> {
        let used = self
            .in_flight
            .values()
            .filter(|f| f.device == device)
            .count();
        self.devices.insert(
            device,
            Slots {
                kind,
                capacity,
                threads,
                used,
            },
        );
        self.dispatch_ready()
    }

    /// `device` runs in the same process as `host` and reads the chunks held there without
    /// moving them (a cluster worker's GPU and the worker, whose id `locality` names as
    /// the holder): a task of `device`'s kind whose inputs `host` holds is drawn to it.
    pub fn share_host(&mut self, device: DeviceId, host: DeviceId) {
        self.hosts.insert(device, host);
    }

    /// True while `device` is registered (added, and neither unreachable nor down since).
    pub fn has_device(&self, device: DeviceId) -> bool {
        self.devices.contains_key(&device)
    }

    /// Starts a job; returns its id and what to do. An invalid graph finishes at once.
    pub fn submit(&mut self, graph: ChunkGraph, now: Instant) -> (JobId, Vec<PlannerAction>) {
        let id = JobId(self.next_job);
        self.next_job += 1;
        let given: Vec<ChunkId> = graph
            .stored
            .iter()
            .filter(|s| s.given)
            .map(|s| s.id)
            .collect();
        let refused = |error| {
            let stats = None;
            let failed = PlannerAction::JobFailed {
                job: id,
                error,
                stats,
            };
            let given_up = (!given.is_empty()).then(|| PlannerAction::Unkeep { ids: given });
            (id, given_up.into_iter().chain([failed]).collect())
        };
        let index = match graph.index() {
            Ok(index) => index,
            Err(e) => return refused(JobError::InvalidGraph(e)),
        };
        if let Some(error) = self.gone.clone() {
            return refused(error);
        }
        let outputs: HashSet<ChunkKey> = graph.outputs.iter().copied().collect();
        let kept = graph.stored.len();
        let task = |pos: usize, key: ChunkKey, work: Work, inputs: Vec<ChunkKey>| Task {
            is_output: outputs.contains(&key),
            key,
            work,
            device: None,
            inputs,
            // Kept chunks (the first positions) are stored already.
            waiting_on: index.inputs(pos).iter().filter(|&&i| i >= kept).count(),
            readers_left: index.consumers(pos).len(),
            status: Status::Pending,
            retries: 0,
            losses: 0,
            made_by: 0,
            drops: 0,
            recomputes: 0,
        };
        let mut tasks = Vec::with_capacity(kept + graph.tasks.len());
        for (pos, s) in graph.stored.iter().enumerate() {
            let mut t = task(pos, s.key, Work::Kept(s.id), Vec::new());
            t.status = Status::Stored(s.nbytes);
            tasks.push(t);
        }
        for t in graph.tasks {
            let pos = tasks.len();
            let op = t.op.name();
            let mut run = task(pos, t.key, Work::Run(Arc::new(t.op)), t.inputs);
            run.device = t.device;
            tasks.push(run);
            for part in t.parts {
                tasks.push(task(tasks.len(), part, Work::Part { op }, vec![t.key]));
            }
        }
        self.ready.extend(
            tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.waiting_on == 0 && t.status == Status::Pending)
                .map(|(pos, _)| (id, pos)),
        );
        let mut job = Job {
            tasks,
            index,
            outputs: graph.outputs,
            done: kept as u64,
            submitted: now,
            last_progress: now,
            stored_bytes: 0,
            delivering: None,
            keep: graph.keep_outputs,
            given: graph
                .stored
                .iter()
                .enumerate()
                .filter(|(_, s)| s.given)
                .map(|(pos, _)| pos)
                .collect(),
            given_up: BTreeSet::new(),
            stats: JobStats::default(),
            stream: self
                .recorder
                .as_ref()
                .filter(|r| r.enabled())
                .map(|r| TaskStream::new(id, r.since(now), r.capacity())),
        };
        // Given inputs that no task reads are given up at once.
        let mut given_up = Vec::new();
        for pos in 0..kept {
            job.give_up_if_read(pos, &mut given_up);
        }
        self.jobs.insert(id, job);
        let mut actions = Vec::new();
        if !given_up.is_empty() {
            actions.push(PlannerAction::Unkeep { ids: given_up });
        }
        actions.extend(self.deliver_if_done(id));
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
        took: Duration,
        now: Instant,
    ) -> Vec<PlannerAction> {
        self.chunk_done(job, key, attempt, Produced::Data(data, took), now)
    }

    /// Dispatch `attempt` of `key` of `job` computed its chunk and the device keeps it (a
    /// cluster worker holds the chunks it computes): `sizes` holds its size in bytes, or
    /// for a split task each part's. No [`PlannerAction::Store`] follows; the owner tracks
    /// where the chunks are.
    pub fn on_chunk_held(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        sizes: Vec<u64>,
        now: Instant,
    ) -> Vec<PlannerAction> {
        self.chunk_done(job, key, attempt, Produced::Held(sizes), now)
    }

    /// A task's chunk was computed.
    fn chunk_done(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        produced: Produced,
        now: Instant,
    ) -> Vec<PlannerAction> {
        let on_gpu = self.runs_on_gpu(job, key, attempt);
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        let mut actions = Vec::new();
        if let Some(state) = self.jobs.get_mut(&job) {
            state.stats.chunks_on_gpu += u64::from(on_gpu);
            if let Some(pos) = state.index.position(key) {
                if !state.index.parts(pos).is_empty() {
                    let (in_flight, ready) = (&self.in_flight, &mut self.ready);
                    let finished =
                        state.finish_split(job, pos, produced, in_flight, ready, &self.pool);
                    if let Err(error) = finished.map(|stores| actions.extend(stores)) {
                        actions.extend(self.fail(job, error));
                        actions.extend(self.dispatch_ready());
                        return actions;
                    }
                    state.made_by(pos, attempt);
                } else {
                    let nbytes = match produced {
                        Produced::Data(data, took) => {
                            let nbytes = data.nbytes() as u64;
                            let task = &state.tasks[pos];
                            let shared = matches!(&task.work, Work::Run(op) if matches!(op.as_ref(), ChunkOp::Literal(_)));
                            let info = PutInfo {
                                op: task.work.name(),
                                next_use: state.next_use(job, pos, &self.in_flight),
                                shared,
                                recompute: state.droppable(pos).then_some(took),
                            };
                            actions.push(PlannerAction::Store {
                                job,
                                key,
                                data,
                                info,
                                reservation: (!shared)
                                    .then(|| Reservation::new(Arc::clone(&self.pool), nbytes)),
                            });
                            nbytes
                        }
                        Produced::Held(sizes) => sizes.iter().sum(),
                    };
                    state.complete(job, pos, nbytes, &mut actions);
                    state.made_by(pos, attempt);
                    state.wake_readers(job, pos, &self.in_flight, &mut self.ready);
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
        self.storing(&actions);
        actions.extend(self.deliver_if_done(job));
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Delivery `attempt` of `job` took its outputs: the job is over; its statistics.
    pub fn on_delivered(&mut self, job: JobId, attempt: u64, now: Instant) -> Option<JobStats> {
        if self.jobs.get(&job)?.delivering != Some(attempt) {
            return None;
        }
        let state = self.jobs.remove(&job)?;
        Some(self.final_stats(state, now))
    }

    /// The statistics of a job that ended at `now`: its wall time, and its task stream
    /// closed.
    fn final_stats(&self, mut state: Job, now: Instant) -> JobStats {
        state.stats.wall_time = now.duration_since(state.submitted);
        if let (Some(mut stream), Some(recorder)) = (state.stream, &self.recorder) {
            stream.finished_ns = recorder.since(now);
            Arc::make_mut(&mut state.stats.stream).push(Arc::new(stream));
        }
        state.stats
    }

    /// Files a run of dispatch `attempt` of `key` of `job` that `span` timed and that
    /// produced `bytes_out` (`ok`) or failed, in the job's task stream, with the reserved
    /// memory now, and learns its op's run time from a timed run that succeeded (see
    /// `costs`). Call it before [`Self::on_chunk_done`] or [`Self::on_chunk_failed`]
    /// (while the dispatch is in flight); reports of other dispatches are ignored.
    pub fn record_run(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        span: RunSpan,
        bytes_out: u64,
        ok: bool,
    ) {
        let Some(state) = self.jobs.get_mut(&job) else {
            return;
        };
        let took = Duration::from_nanos(span.end_ns.saturating_sub(span.start_ns));
        if state.stream.is_none() && took.is_zero() {
            return; // neither recorded nor timed: nothing to look up
        }
        let Some(device) = self
            .in_flight
            .get(&(job, key))
            .filter(|f| f.attempt == attempt)
            .map(|f| f.device)
        else {
            return;
        };
        let Some(pos) = state.index.position(key) else {
            return;
        };
        let bytes_in = state.input_bytes(pos);
        let task = &state.tasks[pos];
        if let (true, Some(slots)) = (ok, self.devices.get(&device)) {
            self.costs
                .record(task.work.name(), slots.kind, bytes_in, took);
        }
        let Some(stream) = &mut state.stream else {
            return;
        };
        stream.record_task(TaskRecord {
            key,
            op: task.work.name(),
            device,
            span,
            bytes_in,
            bytes_out,
            attempt: task.retries + 1,
            retry: task.retries > 0,
            recompute: task.recomputes > 0,
            ok,
        });
        stream.sample_memory(span.end_ns, self.pool.used());
    }

    /// Delivery `attempt` of `job` failed: the outputs `lost` are recomputed (none: storage
    /// was unreachable and is being restarted) and delivered again later.
    pub fn on_delivery_failed(
        &mut self,
        job: JobId,
        attempt: u64,
        lost: &[ChunkKey],
        gone: Gone<'_>,
    ) -> Vec<PlannerAction> {
        match self.jobs.get_mut(&job) {
            Some(state) if state.delivering == Some(attempt) => state.delivering = None,
            _ => return Vec::new(),
        }
        let mut actions = self.lose_chunks(job, lost, gone, None);
        actions.extend(self.deliver_if_done(job));
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Ends every running job with `error` (a cluster without workers past its grace
    /// period).
    pub fn fail_all(&mut self, error: &JobError) -> Vec<PlannerAction> {
        let jobs: Vec<JobId> = self.jobs.keys().copied().collect();
        jobs.into_iter()
            .flat_map(|job| self.fail(job, error.clone()))
            .collect()
    }

    /// Ends `job` with `error` (cancelled by its owner); nothing if it is not running.
    pub fn cancel(&mut self, job: JobId, error: JobError) -> Vec<PlannerAction> {
        self.fail(job, error)
    }

    /// The running jobs, oldest first.
    pub fn jobs(&self) -> Vec<JobId> {
        self.jobs.keys().copied().collect()
    }

    /// The keys by which `job` names the stored chunks `ids` (its own and the kept chunks
    /// it reads); ids it does not read are left out.
    pub fn keys_of(&self, job: JobId, ids: &[ChunkId]) -> Vec<ChunkKey> {
        let Some(state) = self.jobs.get(&job) else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|&id| {
                if id.job == job {
                    return Some(id.key);
                }
                state.tasks.iter().find_map(|t| match t.work {
                    Work::Kept(kept) if kept == id => Some(t.key),
                    _ => None,
                })
            })
            .collect()
    }

    /// True while `job` is running.
    pub fn is_running(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// True if `key` is an output that `job` hands out (its outputs are not kept): its
    /// owner may send it on as soon as it is computed.
    pub fn hands_out(&self, job: JobId, key: ChunkKey) -> bool {
        self.jobs
            .get(&job)
            .filter(|state| !state.keep)
            .and_then(|state| state.index.position(key).map(|pos| &state.tasks[pos]))
            .is_some_and(|task| task.is_output)
    }

    /// True if the output of `key` of `job` may be dropped from memory by the storage that
    /// holds it, to be computed again when read ([`Gone::Dropped`]): a task with no inputs
    /// whose output is neither one of the job's results, nor a literal, nor split in parts,
    /// dropped fewer than [`MAX_DROPS`] times (the rule by which a local job's chunks are
    /// offered to storage). A cluster scheduler tells its workers so.
    pub fn droppable(&self, job: JobId, key: ChunkKey) -> bool {
        self.jobs
            .get(&job)
            .and_then(|state| Some((state, state.index.position(key)?)))
            .is_some_and(|(state, pos)| state.droppable(pos))
    }

    /// The attempt number of the dispatch of `key` of `job` in flight, if one is.
    pub fn dispatched(&self, job: JobId, key: ChunkKey) -> Option<u64> {
        self.in_flight.get(&(job, key)).map(|f| f.attempt)
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

    /// Ends `job` with `error`.
    fn fail(&mut self, job: JobId, error: JobError) -> Vec<PlannerAction> {
        let Some(mut state) = self.jobs.remove(&job) else {
            return Vec::new();
        };
        self.ready.retain(|&(j, _)| j != job);
        let given_up = state.give_up_all();
        let mut stats = self.final_stats(state, Instant::now());
        stats.failure = Some(error.to_string().into());
        let stats = Some(Box::new(stats));
        let failed = PlannerAction::JobFailed { job, error, stats };
        given_up.into_iter().chain([failed]).collect()
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
        let outputs = state
            .outputs
            .iter()
            .map(|&k| state.chunk_id(job, k))
            .collect();
        vec![PlannerAction::Deliver {
            job,
            outputs,
            keep: state.keep,
            attempt,
        }]
    }
}

mod costs;
mod dispatch;
mod job;
mod losses;
mod placement;
mod room;
mod split;
#[cfg(test)]
mod tests;
