//! The graph planner's state machine: running jobs, the ready queue, device slots and
//! in-flight tasks. Events go in (job submitted, device added, chunk done or failed),
//! [`PlannerAction`]s come out; no actor, clock or thread is involved (time is passed in).
//!
//! Policy: ready tasks run oldest job first, then lowest graph position (the runtime's
//! depth-first order); each device has a fixed number of slots; a chunk is released as
//! soon as its last consumer has completed, except output chunks, which stay until the
//! job is delivered; the first failed chunk fails its job. Completions of tasks that are
//! not in flight (unknown jobs or keys, replays) are ignored.

use crate::graph::{ChunkGraph, ChunkKey, GraphIndex};
use crate::job::{JobError, JobId, JobStats};
use crate::messages::DeviceId;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// The shortest time between two progress reports of one job.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Runs of one chunk task at most (the first and its retries) before its job fails.
pub const MAX_ATTEMPTS: u32 = 3;

/// What the planner's owner must do next, in order.
#[derive(Clone, Debug)]
pub enum PlannerAction {
    /// Run a chunk task on a device, with the stored chunks `inputs` as its inputs.
    Dispatch {
        /// The job.
        job: JobId,
        /// The chunk to compute.
        key: ChunkKey,
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
    /// The job ended; on success its output chunks are in storage, to be taken out and
    /// delivered.
    JobFinished {
        /// The job.
        job: JobId,
        /// The outputs to deliver, or why the job failed.
        result: Result<FinishedJob, JobError>,
    },
}

/// A successful job: the stored chunks to deliver, in `ChunkGraph::outputs` order.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedJob {
    /// Output keys (as listed by the graph).
    pub outputs: Vec<ChunkKey>,
    /// The job's statistics.
    pub stats: JobStats,
}

/// Where a task's chunk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Not computed yet (waiting, ready or running).
    Pending,
    /// In storage, with its size in bytes.
    Stored(u64),
    /// Dropped from storage.
    Released,
}

#[derive(Debug)]
struct Task {
    key: ChunkKey,
    op: Arc<ChunkOp>,
    inputs: Vec<ChunkKey>,
    /// Distinct inputs not yet computed.
    waiting_on: usize,
    /// Distinct consumers not yet completed.
    readers_left: usize,
    is_output: bool,
    status: Status,
    /// Times the task failed and was run again.
    retries: u32,
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

    /// Keys of the chunks still in storage.
    fn stored_keys(&self) -> Vec<ChunkKey> {
        self.tasks
            .iter()
            .filter(|t| matches!(t.status, Status::Stored(_)))
            .map(|t| t.key)
            .collect()
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

/// The graph planner's state (see the module docs).
#[derive(Debug, Default)]
pub struct PlannerState {
    next_job: u64,
    jobs: BTreeMap<JobId, Job>,
    /// `(job, task position)`: oldest job first, then graph order.
    ready: BTreeSet<(JobId, usize)>,
    devices: BTreeMap<DeviceId, Slots>,
    in_flight: HashMap<(JobId, ChunkKey), DeviceId>,
}

impl PlannerState {
    /// A planner with no jobs and no devices.
    pub fn new() -> PlannerState {
        PlannerState::default()
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
                let result = Err(JobError::InvalidGraph(e));
                return (id, vec![PlannerAction::JobFinished { job: id, result }]);
            }
        };
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
            stats: JobStats::default(),
        };
        let mut actions = Vec::new();
        if job.total() == 0 {
            actions.push(finished(id, job, now));
        } else {
            self.jobs.insert(id, job);
            actions = self.dispatch_ready();
        }
        (id, actions)
    }

    /// A device computed `key` of `job`.
    pub fn on_chunk_done(
        &mut self,
        job: JobId,
        key: ChunkKey,
        data: Arc<ChunkData>,
        now: Instant,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key) {
            return Vec::new();
        }
        let mut actions = Vec::new();
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                actions.push(PlannerAction::Store {
                    job,
                    key,
                    data: Arc::clone(&data),
                });
                state.complete(job, pos, data.nbytes() as u64, &mut actions);
                for i in 0..state.index.consumers(pos).len() {
                    let consumer = state.index.consumers(pos)[i];
                    state.tasks[consumer].waiting_on -= 1;
                    if state.tasks[consumer].waiting_on == 0 {
                        self.ready.insert((job, consumer));
                    }
                }
                if state.done == state.total() {
                    if let Some(state) = self.jobs.remove(&job) {
                        actions.push(finished(job, state, now));
                    }
                } else if now.duration_since(state.last_progress) >= PROGRESS_INTERVAL {
                    state.last_progress = now;
                    actions.push(PlannerAction::Progress {
                        job,
                        done: state.done,
                        total: state.total(),
                    });
                }
            }
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// A device's kernel failed on `key` of `job`. A retryable failure (a panic, a lost
    /// device, an injected fault) runs the task again, up to [`MAX_ATTEMPTS`] runs in all;
    /// otherwise the job fails with the chunk's key, op name and the cause.
    pub fn on_chunk_failed(
        &mut self,
        job: JobId,
        key: ChunkKey,
        cause: KernelError,
    ) -> Vec<PlannerAction> {
        let pos = self.jobs.get(&job).and_then(|s| s.index.position(key));
        let retry = match pos {
            Some(pos) if cause.is_retryable() && self.in_flight.contains_key(&(job, key)) => self
                .jobs
                .get(&job)
                .is_some_and(|s| s.tasks[pos].retries + 1 < MAX_ATTEMPTS),
            _ => false,
        };
        if let (true, Some(pos)) = (retry, pos) {
            self.take_in_flight(job, key);
            if let Some(state) = self.jobs.get_mut(&job) {
                state.tasks[pos].retries += 1;
                state.stats.retries += 1;
                tracing::warn!(%job, %key, %cause, attempt = state.tasks[pos].retries + 1, "retrying chunk");
            }
            self.ready.insert((job, pos));
            return self.dispatch_ready();
        }
        self.abort_task(job, key, |op| JobError::ChunkFailed {
            key,
            op: op.to_string(),
            source: cause,
        })
    }

    /// A dispatched task never reached its device (e.g. an input was missing from
    /// storage): the job fails with `error`.
    pub fn on_dispatch_failed(
        &mut self,
        job: JobId,
        key: ChunkKey,
        error: JobError,
    ) -> Vec<PlannerAction> {
        self.abort_task(job, key, |_| error)
    }

    /// True while `job` is running.
    pub fn is_running(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// Tasks dispatched and not yet reported back.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Frees the slot of an in-flight task; false (and a log line) if it was not in flight.
    fn take_in_flight(&mut self, job: JobId, key: ChunkKey) -> bool {
        let Some(device) = self.in_flight.remove(&(job, key)) else {
            tracing::debug!(%job, %key, "ignoring a report for a task not in flight");
            return false;
        };
        if let Some(slots) = self.devices.get_mut(&device) {
            slots.used -= 1;
        }
        true
    }

    fn abort_task(
        &mut self,
        job: JobId,
        key: ChunkKey,
        error: impl FnOnce(&'static str) -> JobError,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key) {
            return Vec::new();
        }
        let mut actions = Vec::new();
        let op = self
            .jobs
            .get(&job)
            .and_then(|s| s.index.position(key).map(|pos| s.tasks[pos].op.name()));
        if let (Some(op), Some(state)) = (op, self.jobs.remove(&job)) {
            self.ready.retain(|&(j, _)| j != job);
            let stored = state.stored_keys();
            if !stored.is_empty() {
                actions.push(PlannerAction::Release { job, keys: stored });
            }
            let result = Err(error(op));
            actions.push(PlannerAction::JobFinished { job, result });
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Dispatches ready tasks in priority order while a device has a free slot.
    fn dispatch_ready(&mut self) -> Vec<PlannerAction> {
        let mut actions = Vec::new();
        while let Some(&(job, pos)) = self.ready.first() {
            let Some((&device, slots)) = self
                .devices
                .iter_mut()
                .filter(|(_, s)| s.used < s.capacity)
                .max_by_key(|(id, s)| (s.capacity - s.used, Reverse(**id)))
            else {
                break;
            };
            self.ready.pop_first();
            let Some(task) = self.jobs.get(&job).map(|s| &s.tasks[pos]) else {
                continue;
            };
            slots.used += 1;
            self.in_flight.insert((job, task.key), device);
            actions.push(PlannerAction::Dispatch {
                job,
                key: task.key,
                device,
                op: Arc::clone(&task.op),
                inputs: task.inputs.clone(),
            });
        }
        actions
    }
}

fn finished(job: JobId, mut state: Job, now: Instant) -> PlannerAction {
    state.stats.wall_time = now.duration_since(state.submitted);
    PlannerAction::JobFinished {
        job,
        result: Ok(FinishedJob {
            outputs: state.outputs,
            stats: state.stats,
        }),
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

    fn finished_result(actions: &[PlannerAction]) -> Option<&Result<FinishedJob, JobError>> {
        actions.iter().find_map(|a| match a {
            PlannerAction::JobFinished { result, .. } => Some(result),
            _ => None,
        })
    }

    fn planner(slots: usize) -> PlannerState {
        let mut p = PlannerState::new();
        assert!(p.add_device(CPU, slots).is_empty());
        p
    }

    fn done(p: &mut PlannerState, job: JobId, key: u64, n: usize) -> Vec<PlannerAction> {
        p.on_chunk_done(job, ChunkKey(key), chunk(n), Instant::now())
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
        let result = finished_result(&a).unwrap().as_ref().unwrap();
        assert_eq!(result.outputs, keys(&[4, 1]));
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
        p.on_chunk_done(job, ChunkKey(1), chunk(10), t0);
        p.on_chunk_done(job, ChunkKey(2), chunk(20), t0);
        let a = p.on_chunk_done(job, ChunkKey(3), chunk(5), t0 + Duration::from_millis(7));
        let stats = &finished_result(&a).unwrap().as_ref().unwrap().stats;
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
        let a = p.on_chunk_failed(job, ChunkKey(2), cause.clone());
        assert_eq!(released(&a), vec![1]);
        let err = finished_result(&a).unwrap().clone().unwrap_err();
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
            let a = p.on_chunk_failed(
                job,
                ChunkKey(1),
                KernelError::Panicked(format!("try {attempt}")),
            );
            assert_eq!(dispatched(&a), vec![1], "attempt {attempt} is retried");
            assert!(finished_result(&a).is_none());
        }
        let a = p.on_chunk_failed(job, ChunkKey(1), KernelError::Injected("last".into()));
        let err = finished_result(&a).unwrap().clone().unwrap_err();
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
        let a = p.on_chunk_failed(
            job,
            ChunkKey(1),
            KernelError::DeviceUnavailable("gone".into()),
        );
        assert_eq!(dispatched(&a), vec![1]);
        let a = done(&mut p, job, 1, 8);
        let FinishedJob { stats, .. } = finished_result(&a).unwrap().clone().unwrap();
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
        assert!(p
            .on_chunk_failed(job, ChunkKey(2), KernelError::Panicked("x".into()))
            .is_empty());
        assert_eq!(dispatched(&done(&mut p, job, 1, 1)), vec![2]);
        assert!(done(&mut p, job, 1, 1).is_empty(), "replayed completion");
        let a = done(&mut p, job, 2, 1);
        assert!(finished_result(&a).unwrap().is_ok());
        assert!(
            done(&mut p, job, 2, 1).is_empty(),
            "completion after the job finished"
        );
        assert!(p
            .on_dispatch_failed(job, ChunkKey(2), JobError::ChunkLost(ChunkKey(1)))
            .is_empty());
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
        assert_eq!(
            finished_result(&acts).unwrap().as_ref().unwrap().outputs,
            keys(&[2])
        );
        assert!(
            matches!(acts.last(), Some(PlannerAction::Dispatch { job, key: ChunkKey(1), .. }) if *job == b)
        );
        assert_eq!(dispatched(&done(&mut p, b, 1, 1)), vec![5]);
        let acts = done(&mut p, b, 5, 1);
        assert_eq!(
            finished_result(&acts).unwrap().as_ref().unwrap().outputs,
            keys(&[1, 5])
        );
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
        assert_eq!(
            progress(&p.on_chunk_done(job, ChunkKey(1), chunk(1), t0 + ms(10))),
            None
        );
        assert_eq!(
            progress(&p.on_chunk_done(job, ChunkKey(2), chunk(1), t0 + ms(60))),
            Some((2, 4))
        );
        assert_eq!(
            progress(&p.on_chunk_done(job, ChunkKey(3), chunk(1), t0 + ms(70))),
            None
        );
        let a = p.on_chunk_done(job, ChunkKey(4), chunk(1), t0 + ms(200));
        assert_eq!(
            progress(&a),
            None,
            "the last chunk reports Finished instead"
        );
        assert!(finished_result(&a).is_some());
    }

    #[test]
    fn invalid_and_empty_graphs_finish_at_once() {
        let mut p = planner(1);
        let (_, a) = p.submit(graph(&[(1, &[2])], &[1]), Instant::now());
        assert!(matches!(
            finished_result(&a),
            Some(Err(JobError::InvalidGraph(_)))
        ));
        let (job, a) = p.submit(ChunkGraph::default(), Instant::now());
        assert!(finished_result(&a).unwrap().is_ok());
        assert!(!p.is_running(job));
    }

    #[test]
    fn dispatch_failure_fails_the_job_and_frees_the_slot() {
        let mut p = planner(1);
        let (a, _) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
        let (b, acts) = p.submit(graph(&[(1, &[])], &[1]), Instant::now());
        assert!(dispatched(&acts).is_empty());
        let acts = p.on_dispatch_failed(a, ChunkKey(1), JobError::ChunkLost(ChunkKey(1)));
        assert_eq!(
            finished_result(&acts),
            Some(&Err(JobError::ChunkLost(ChunkKey(1))))
        );
        assert!(matches!(acts.last(), Some(PlannerAction::Dispatch { job, .. }) if *job == b));
    }

    #[test]
    fn tasks_wait_for_a_device() {
        let mut p = PlannerState::new();
        let (_, acts) = p.submit(graph(&[(1, &[]), (2, &[])], &[1, 2]), Instant::now());
        assert!(acts.is_empty());
        assert_eq!(dispatched(&p.add_device(DeviceId(3), 1)), vec![1]);
        assert_eq!(dispatched(&p.add_device(DeviceId(4), 1)), vec![2]);
    }
}
