//! Where a task runs.
//!
//! First the kind of device: a task whose op has a GPU kernel (`Gpu::runs` in
//! `tessera-cuda`, given to the planner as its [`GpuOps`](super::GpuOps): today the
//! fused elementwise expressions with their trailing reductions, block products, the QR of
//! one block, groupby partials of tables in memory and the matching of inner and left
//! joins, which is where the time of a NumPy- or pandas-style job goes) runs on a CUDA
//! device whenever one is registered, unless it is too small to pay for a GPU task's fixed
//! cost (`Gpu::pays`: a fused kernel over fewer than 4,096 elements); every other op
//! (stacked QRs and SVDs of small factors, sorts, reads, combines of partials…) runs on a
//! CPU device. The dataframe ops among them (`Gpu::shares`) are shared: a CPU device with
//! a free slot takes one when it is expected to finish it before a GPU would.
//! A GPU being restarted is not registered, so its ops run on the CPU meanwhile (the CUDA
//! kernels return what the CPU ones do); a session without GPUs never sees the difference.
//! A task its graph pins to the CPU ([`crate::ChunkTask::device`], from `Tensor::on`) runs
//! there whatever its op; one pinned to CUDA is placed as any other (the session checks
//! that it has a GPU before it submits such a graph).
//!
//! Then the device of that kind: near its input bytes (a cluster's workers are devices,
//! and the scheduler says which holds which chunk) or, for a task whose inputs are held
//! nowhere, near its siblings; else the freest, unless moving costs more than waiting for
//! the device it is drawn to ([`costs`](super::costs) says how long each takes).

use super::costs::move_time;
use super::{Job, PlannerState, Work};
use crate::graph::ChunkKey;
use crate::ids::ChunkId;
use crate::ids::{DeviceId, DeviceKind};
use crate::job::JobId;
use std::cmp::Reverse;
use std::collections::HashMap;
use std::time::Duration;
use tessera_kernels::frame::ops::FrameOp;
use tessera_kernels::ChunkOp;

/// Input bytes over which a task waits for a busy device holding them rather than move
/// them to another busy device: about what a loopback transfer moves in a few
/// milliseconds. An idle device takes such a task only when the move pays: when moving
/// the inputs takes less than the work ahead of the task on their holder.
pub const MOVE_BYTES: u64 = 8 << 20;

/// Per device, the expected run time of the ready tasks a dispatch pass has passed over
/// to wait for it (`None` once one of them has no estimate).
pub(super) type Waiting = HashMap<DeviceId, Option<Duration>>;

/// Readers of more chunks than this do not draw their inputs together (see
/// [`PlannerState::affinity`]).
const SIBLING_FAN_IN: usize = 64;

/// A chunk of at most [`BROADCAST_BYTES`] read by more tasks of its job than this draws
/// none of them (see [`PlannerState::affinity`]).
const BROADCAST_READERS: usize = 8;

/// The largest chunk that counts as broadcast: small enough that each worker fetches it
/// once and keeps its copy (a cluster worker keeps a copy of a chunk its tasks read
/// again, up to a few MiB). A hashed join side counts at any size: it exists to be probed
/// by every chunk of the other side, and a worker keeps its copy from the first fetch.
const BROADCAST_BYTES: u64 = 1 << 20;

/// Where [`PlannerState::place`] puts a task.
pub(super) enum Placement {
    /// On this device.
    On(DeviceId),
    /// Nowhere yet: its inputs' holder (this device) is busy and moving them costs more
    /// than waiting.
    Wait(DeviceId),
    /// Nowhere: no device of the task's kind has a free slot.
    Full,
}

impl PlannerState {
    /// Chunk `id` (`nbytes` bytes) is held by `device`: its readers prefer that device.
    pub fn chunk_at(&mut self, id: ChunkId, device: DeviceId, nbytes: u64) {
        self.locality.insert(id, (device, nbytes));
    }

    /// Chunk `id` is held nowhere any more.
    pub fn chunk_gone(&mut self, id: ChunkId) {
        self.locality.remove(&id);
    }

    /// The kind of device the task at `pos` of `job` runs on (see the module docs).
    fn kind_for(&self, job: JobId, pos: usize) -> DeviceKind {
        let task = self.jobs.get(&job).map(|state| &state.tasks[pos]);
        if task.is_some_and(|t| t.device == Some(DeviceKind::Cpu)) {
            return DeviceKind::Cpu;
        }
        // A task pinned to a GPU runs there whenever it has a kernel; others only where
        // it pays for the GPU's fixed cost.
        let pinned = task.is_some_and(|t| t.device == Some(DeviceKind::Cuda));
        let gpu_op = task.is_some_and(|t| match &t.work {
            Work::Run(op) if pinned => (self.gpu_ops.runs)(op),
            Work::Run(op) => (self.gpu_ops.pays)(op),
            _ => false,
        });
        let gpu_up = self.devices.values().any(|s| s.kind == DeviceKind::Cuda);
        if gpu_op && gpu_up {
            DeviceKind::Cuda
        } else {
            DeviceKind::Cpu
        }
    }

    /// The kind of `device` (a CPU pool's if it is not registered).
    pub(super) fn kind_of(&self, device: DeviceId) -> DeviceKind {
        self.devices
            .get(&device)
            .map_or(DeviceKind::Cpu, |s| s.kind)
    }

    /// True while some device, of any kind, has a free slot.
    pub(super) fn has_free_slot(&self) -> bool {
        self.devices.values().any(|s| s.used < s.capacity)
    }

    /// True if dispatch `attempt` of `key` of `job` is in flight on a CUDA device (for
    /// [`crate::JobStats::chunks_on_gpu`], and a cluster worker's CPU queue depth, which
    /// its GPU tasks' run times do not tell).
    pub fn runs_on_gpu(&self, job: JobId, key: ChunkKey, attempt: u64) -> bool {
        self.in_flight
            .get(&(job, key))
            .filter(|f| f.attempt == attempt)
            .and_then(|f| self.devices.get(&f.device))
            .is_some_and(|s| s.kind == DeviceKind::Cuda)
    }

    /// Where the task at `pos` of `job` runs: among the devices of its kind
    /// ([`Self::kind_for`], [`Self::place_among`]), except that a GPU task a CPU core also
    /// runs well (`GpuOps::shares`: a dataframe task, whose host-side work runs on the
    /// GPU's host thread either way) goes to a CPU device with a free slot when that is
    /// expected to finish it first ([`Self::cpu_finishes_first`]): a GPU with a few host
    /// threads would otherwise queue a whole stage of joins while the CPU pool's cores idle.
    pub(super) fn place(&self, job: JobId, pos: usize, waiting: &Waiting) -> Placement {
        let kind = self.kind_for(job, pos);
        let placement = self.place_among(job, pos, kind, waiting);
        if kind == DeviceKind::Cuda && self.shared(job, pos) {
            if let Placement::On(cpu) = self.place_among(job, pos, DeviceKind::Cpu, waiting) {
                if self.cpu_finishes_first(job, pos, cpu, &placement, waiting) {
                    return Placement::On(cpu);
                }
            }
        }
        placement
    }

    /// True if the task at `pos` of `job` is not pinned to a device and its op is one a
    /// GPU shares with the CPU pool (`GpuOps::shares`).
    fn shared(&self, job: JobId, pos: usize) -> bool {
        self.jobs.get(&job).is_some_and(|state| {
            let task = &state.tasks[pos];
            task.device.is_none()
                && matches!(&task.work, Work::Run(op) if (self.gpu_ops.shares)(op))
        })
    }

    /// True if CPU device `cpu` is expected to finish the task at `pos` of `job` before
    /// the GPU `on_gpu` places it on would (or, full, the soonest of them): each device's
    /// work ahead ([`Self::work_ahead`]) plus its kind's run time for the task (Dask's
    /// scheduler likewise picks the worker with the earliest expected finish). Until
    /// both are known, the CPU takes it only when no GPU has an idle thread for it.
    fn cpu_finishes_first(
        &self,
        job: JobId,
        pos: usize,
        cpu: DeviceId,
        on_gpu: &Placement,
        waiting: &Waiting,
    ) -> bool {
        let finish = |device: DeviceId| {
            let ahead = self.work_ahead(device, waiting)?;
            Some(ahead + self.expected_run(job, pos, self.kind_of(device))?)
        };
        let gpus: Vec<DeviceId> = match on_gpu {
            Placement::On(gpu) | Placement::Wait(gpu) => vec![*gpu],
            Placement::Full => self
                .devices
                .iter()
                .filter(|(_, s)| s.kind == DeviceKind::Cuda)
                .map(|(&d, _)| d)
                .collect(),
        };
        // Unknown while any of them is (`None` is the least of the finishes).
        let gpu_finish = gpus.into_iter().map(finish).min().flatten();
        match (finish(cpu), gpu_finish) {
            (Some(cpu), Some(gpu)) => cpu < gpu,
            _ => !matches!(on_gpu, Placement::On(gpu)
                if self.devices.get(gpu).is_some_and(|s| s.used < s.threads)),
        }
    }

    /// Where the task at `pos` of `job` runs among the devices of `kind`. With one such
    /// device, there. With several, on the device its
    /// task is drawn to ([`Self::affinity`]: the one holding most of its input bytes, or
    /// for a task whose inputs are held nowhere, the one its siblings went to) if it has a
    /// free slot; else on the device with the most free slots (ties: the lowest id) —
    /// unless moving costs more than waiting, when the task waits for its device:
    /// - over [`MOVE_BYTES`] of inputs, while the other device is busy at all; and while
    ///   it is idle, unless moving the inputs (at [`MOVE_RATE`](super::costs::MOVE_RATE))
    ///   takes less than the work ahead of the task on its device — the tasks running or
    ///   queued there and those `waiting` for it ahead of this one, shared among its
    ///   threads — or that work's length is not known yet (Dask's work stealing weighs a
    ///   transfer against the victim's occupancy likewise);
    /// - fewer, while the other device's threads are all busy (tasks beyond them queue
    ///   there, see [`PlannerState::add_queued_device`]): a tiny task costs more to
    ///   fetch inputs for than to run, so only a device with idle threads steals it.
    fn place_among(
        &self,
        job: JobId,
        pos: usize,
        kind: DeviceKind,
        waiting: &Waiting,
    ) -> Placement {
        let Some(state) = self.jobs.get(&job) else {
            return Placement::Full;
        };
        let freest = self
            .devices
            .iter()
            .filter(|(_, s)| s.kind == kind && s.used < s.capacity)
            .max_by_key(|(id, s)| (s.capacity - s.used, Reverse(**id)));
        let Some((&freest, slots)) = freest else {
            return Placement::Full;
        };
        let Some((drawn, bytes)) = self.affinity(job, state, pos, kind) else {
            return Placement::On(freest);
        };
        let drawn_free = self
            .devices
            .get(&drawn)
            .is_some_and(|s| s.used < s.capacity);
        let busy = if bytes > MOVE_BYTES {
            slots.used > 0
                || self
                    .work_ahead(drawn, waiting)
                    .is_some_and(|ahead| move_time(bytes) >= ahead)
        } else {
            slots.used >= slots.threads
        };
        if drawn_free {
            Placement::On(drawn)
        } else if busy {
            Placement::Wait(drawn)
        } else {
            Placement::On(freest)
        }
    }

    /// How long the task at `pos` of `job` is expected to run on a device of `kind`
    /// (`None`: its op has not been timed there yet).
    pub(super) fn expected_run(
        &self,
        job: JobId,
        pos: usize,
        kind: DeviceKind,
    ) -> Option<Duration> {
        let state = self.jobs.get(&job)?;
        self.costs
            .estimate(state.tasks[pos].work.name(), kind, state.input_bytes(pos))
    }

    /// How long `device`'s threads are expected to be busy before they could start one
    /// more task: the expected run times of the tasks dispatched to it and of those
    /// `waiting` for it, shared among its threads (`None` if one of them has no estimate).
    fn work_ahead(&self, device: DeviceId, waiting: &Waiting) -> Option<Duration> {
        let threads = self.devices.get(&device)?.threads.max(1);
        let dispatched = self
            .in_flight
            .values()
            .filter(|f| f.device == device)
            .map(|f| f.expected)
            .sum::<Option<Duration>>()?;
        let waiting = waiting
            .get(&device)
            .copied()
            .unwrap_or(Some(Duration::ZERO))?;
        Some((dispatched + waiting) / threads as u32)
    }

    /// The device of `kind` the task at `pos` is drawn to, with the bytes of its inputs
    /// held there — `None` with fewer than two devices of the kind, or nothing drawing it.
    ///
    /// A task with inputs held somewhere goes where most of their bytes are, not counting
    /// broadcast inputs: a small chunk that many tasks of the job read (the stacked factor
    /// every block of a tall-skinny QR multiplies by, a projection matrix), or a hashed
    /// join side of any size that many probes read, would otherwise
    /// draw all its readers to its one holder, and they would queue there while the
    /// others idle; each device fetches it once instead. A task with none (a root: a
    /// creation, a read) goes where most of its siblings — the other
    /// inputs of its readers, broadcast ones left out — run or are held (with 0 bytes),
    /// so that a reduction's
    /// leaves gather on one device rather than alternate and make every combine fetch
    /// half its inputs (Dask's co-assignment of root tasks). Readers of more than
    /// [`SIBLING_FAN_IN`] chunks (a shuffle's merge, a concatenation) draw nothing: their
    /// inputs are meant to spread.
    fn affinity(
        &self,
        job: JobId,
        state: &Job,
        pos: usize,
        kind: DeviceKind,
    ) -> Option<(DeviceId, u64)> {
        let of_kind = |d: &DeviceId| self.devices.get(d).is_some_and(|s| s.kind == kind);
        if self.devices.keys().filter(|d| of_kind(d)).count() < 2 {
            return None;
        }
        let mut near: Vec<(DeviceId, u64)> = Vec::new();
        let add = |near: &mut Vec<(DeviceId, u64)>, device: DeviceId, bytes: u64| match near
            .iter_mut()
            .find(|(d, _)| *d == device)
        {
            Some((_, b)) => *b += bytes,
            None => near.push((device, bytes)),
        };
        let broadcast = |p: usize| {
            let hashed = matches!(&state.tasks[p].work,
                Work::Run(op) if matches!(**op, ChunkOp::Frame(FrameOp::HashSide { .. })));
            let small = || {
                let id = state.chunk_id(job, state.tasks[p].key);
                self.locality
                    .get(&id)
                    .is_some_and(|&(_, bytes)| bytes <= BROADCAST_BYTES)
            };
            state.index.consumers(p).len() > BROADCAST_READERS && (hashed || small())
        };
        for &input in &state.tasks[pos].inputs {
            if let Some(&(device, bytes)) = self.locality.get(&state.chunk_id(job, input)) {
                if !state.index.position(input).is_some_and(broadcast) {
                    add(&mut near, device, bytes);
                }
            }
        }
        let by_siblings = near.is_empty();
        if by_siblings {
            let readers = state.index.consumers(pos).iter();
            for &reader in readers.filter(|&&r| state.index.inputs(r).len() <= SIBLING_FAN_IN) {
                let others = state.index.inputs(reader).iter().copied();
                for sibling in others.filter(|&s| s != pos && !broadcast(s)) {
                    let key = state.tasks[sibling].key;
                    let at = self
                        .locality
                        .get(&state.chunk_id(job, key))
                        .map(|&(device, _)| device)
                        .or_else(|| self.in_flight.get(&(job, key)).map(|f| f.device));
                    if let Some(device) = at {
                        // Counted, not weighed: a running sibling's size is not known.
                        add(&mut near, device, 1);
                    }
                }
            }
        }
        let mut drawn: Vec<(DeviceId, u64)> = Vec::new();
        for (device, weight) in near {
            if let Some(device) = self.of_kind_beside(device, kind) {
                add(&mut drawn, device, weight);
            }
        }
        drawn
            .into_iter()
            .max_by_key(|&(d, weight)| (weight, Reverse(d)))
            .map(|(d, weight)| (d, if by_siblings { 0 } else { weight }))
    }

    /// The device of `kind` that reads what `device` holds without moving it: `device`
    /// itself if of that kind, else the one of that kind sharing its host (see
    /// [`PlannerState::share_host`]) with the most free slots (ties: the lowest id).
    fn of_kind_beside(&self, device: DeviceId, kind: DeviceKind) -> Option<DeviceId> {
        if self.devices.get(&device).is_some_and(|s| s.kind == kind) {
            return Some(device);
        }
        let host = |d: &DeviceId| *self.hosts.get(d).unwrap_or(d);
        let home = host(&device);
        self.devices
            .iter()
            .filter(|(d, s)| s.kind == kind && host(d) == home)
            .max_by_key(|(d, s)| (s.capacity.saturating_sub(s.used), Reverse(**d)))
            .map(|(&d, _)| d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::ChunkKey;
    use crate::ids::ActorName;
    use crate::ids::ChunkId;
    use crate::memory::UnboundedPool;
    use crate::planner_state::tests::{attempt, deliver, done, placed};
    use crate::planner_state::GpuOps;
    use crate::testing::chunk;
    use crate::testing::{const_op, graph};
    use crate::PlannerAction;
    use std::time::Duration;
    use std::time::Instant;
    use tessera_cuda::{Gpu, GPU_MIN_ELEMENTS};
    use tessera_kernels::frame::groupby::GroupBySpec;
    use tessera_kernels::frame::ops::{Pipeline, Sink, Source};
    use tessera_kernels::ChunkOp;

    const CPU: DeviceId = DeviceId(0);
    const GPU: DeviceId = DeviceId(1);

    /// Tasks 1, 2 and 4 fused (GPU kernels, large enough to pay), 3 a literal (CPU only);
    /// 5, fused, reads them all.
    fn mixed() -> crate::ChunkGraph {
        let mut g = graph(
            &[(1, &[]), (2, &[]), (3, &[]), (4, &[]), (5, &[1, 2, 3, 4])],
            &[5],
        );
        for t in &mut g.tasks {
            t.op = const_op(1, GPU_MIN_ELEMENTS);
        }
        g.tasks[2].op = ChunkOp::Literal(chunk(8));
        g
    }

    /// Task `key` of `job` is done, its 8-byte chunk held by `device`: what the planner does.
    fn held_at(p: &mut PlannerState, job: JobId, key: u64, device: DeviceId) -> Vec<PlannerAction> {
        let attempt = attempt(p, job, key);
        let id = ChunkId {
            job,
            key: ChunkKey(key),
        };
        p.chunk_at(id, device, 8);
        p.on_chunk_held(job, ChunkKey(key), attempt, vec![8], Instant::now())
    }

    /// Finishes the tasks `rest` of `job`, then `last`, its output: the job's runs, and
    /// those on a GPU.
    fn runs_when_done(p: &mut PlannerState, job: JobId, rest: &[u64], last: u64) -> (u64, u64) {
        for &key in rest {
            done(p, job, key, 8);
        }
        let actions = done(p, job, last, 8);
        let stats = deliver(p, job, &actions);
        (stats.chunks_run, stats.chunks_on_gpu)
    }

    /// A planner with a CPU pool of `cpu_slots` and, if `gpu_slots` is not 0, a GPU.
    fn planner(cpu_slots: usize, gpu_slots: usize) -> PlannerState {
        let mut p = PlannerState::new(UnboundedPool::new());
        p.set_gpu_ops(GpuOps {
            runs: Gpu::runs,
            pays: Gpu::pays,
            shares: Gpu::shares,
        });
        assert!(p.add_device(CPU, cpu_slots).is_empty());
        if gpu_slots > 0 {
            assert!(p.add_device_of(GPU, DeviceKind::Cuda, gpu_slots).is_empty());
        }
        p
    }

    #[test]
    fn gpu_ops_go_to_the_gpu_and_the_rest_to_the_cpu_pool() {
        let mut p = planner(4, 1);
        let (job, actions) = p.submit(mixed(), Instant::now());
        // 2 and 4 wait for the busy GPU, while the literal after them runs on the CPU.
        assert_eq!(placed(&actions), vec![(1, GPU), (3, CPU)]);
        assert_eq!(placed(&done(&mut p, job, 1, 8)), vec![(2, GPU)]);
        assert_eq!(placed(&done(&mut p, job, 3, 8)), vec![]);
        assert_eq!(placed(&done(&mut p, job, 2, 8)), vec![(4, GPU)]);
        // The last task is fused too.
        assert_eq!(placed(&done(&mut p, job, 4, 8)), vec![(5, GPU)]);
        assert_eq!(runs_when_done(&mut p, job, &[], 5), (5, 4));
    }

    /// A groupby partial of a table in memory: a dataframe op a GPU shares with the CPU.
    fn partial_op() -> ChunkOp {
        ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
            source: Source::Input,
            steps: vec![],
            sink: Sink::GroupPartial(GroupBySpec {
                keys: vec!["k".into()],
                aggs: vec![],
            }),
        }))
    }

    /// Tasks `1..=n`, groupby partials, then `n + 1` and `n + 2`, fused GPU kernels.
    fn partials_then_fused(n: u64) -> crate::ChunkGraph {
        let tasks: Vec<(u64, &[u64])> = (1..=n + 2).map(|k| (k, &[][..])).collect();
        let mut g = graph(&tasks, &(1..=n + 2).collect::<Vec<_>>());
        for (i, t) in g.tasks.iter_mut().enumerate() {
            t.op = if (i as u64) < n {
                partial_op()
            } else {
                const_op(1, GPU_MIN_ELEMENTS)
            };
        }
        g
    }

    #[test]
    fn dataframe_tasks_a_busy_gpu_has_no_slot_for_go_to_the_idle_cpu_pool() {
        assert!(Gpu::shares(&partial_op()));
        assert!(!Gpu::shares(&const_op(1, GPU_MIN_ELEMENTS)));
        let mut p = planner(3, 2);
        let mut g = partials_then_fused(5);
        g.tasks[4].device = Some(DeviceKind::Cuda);
        let (job, actions) = p.submit(g, Instant::now());
        // Nothing timed yet: the GPU takes partials while it has a slot, the CPU pool the
        // next ones; 5, pinned to the GPU, and the fused 6 and 7 wait for it.
        assert_eq!(
            placed(&actions),
            vec![(1, GPU), (2, GPU), (3, CPU), (4, CPU)]
        );
        assert_eq!(placed(&done(&mut p, job, 3, 8)), vec![]);
        assert_eq!(placed(&done(&mut p, job, 1, 8)), vec![(5, GPU)]);
        assert_eq!(placed(&done(&mut p, job, 2, 8)), vec![(6, GPU)]);
        assert_eq!(runs_when_done(&mut p, job, &[4, 5, 6], 7), (7, 5));
    }

    #[test]
    fn a_dataframe_task_goes_where_it_is_expected_to_finish_first() {
        let ms = Duration::from_millis;
        let first_placed = |cpu_took: Duration, gpu_took: Duration| {
            let mut p = planner(2, 2);
            let name = partial_op().name();
            p.costs.record(name, DeviceKind::Cpu, 0, cpu_took);
            p.costs.record(name, DeviceKind::Cuda, 0, gpu_took);
            placed(&p.submit(partials_then_fused(4), Instant::now()).1)
        };
        // A GPU ten times as fast: it takes two, and the others wait for it rather than run
        // on the CPU pool (each GPU slot is 2 ms from free, the CPU would take 10).
        assert_eq!(first_placed(ms(10), ms(1)), vec![(1, GPU), (2, GPU)]);
        // A CPU ten times as fast: it takes what it has slots for, the GPU the rest.
        assert_eq!(
            first_placed(ms(1), ms(10)),
            vec![(1, CPU), (2, CPU), (3, GPU), (4, GPU)]
        );
    }

    #[test]
    fn a_task_pinned_to_the_cpu_runs_there_though_a_gpu_is_free() {
        let mut p = planner(4, 4);
        let mut g = mixed();
        g.tasks[1].device = Some(DeviceKind::Cpu);
        g.tasks[3].device = Some(DeviceKind::Cuda);
        let (job, actions) = p.submit(g, Instant::now());
        // 2 is pinned to the CPU; 4, pinned to CUDA, goes there as the unpinned 1 does.
        assert_eq!(
            placed(&actions),
            vec![(1, GPU), (2, CPU), (3, CPU), (4, GPU)]
        );
        for key in [1, 2, 3] {
            assert_eq!(placed(&done(&mut p, job, key, 8)), vec![]);
        }
        assert_eq!(placed(&done(&mut p, job, 4, 8)), vec![(5, GPU)]);
        assert_eq!(runs_when_done(&mut p, job, &[], 5), (5, 3));
    }

    #[test]
    fn a_fused_task_too_small_to_pay_for_the_gpu_runs_on_the_cpu_unless_pinned_there() {
        let mut p = planner(4, 4);
        let mut g = mixed();
        // 1 and 2 evaluate one element short of paying, 2 pinned to CUDA; 4 pays.
        g.tasks[0].op = const_op(1, GPU_MIN_ELEMENTS - 1);
        g.tasks[1].op = const_op(1, GPU_MIN_ELEMENTS - 1);
        g.tasks[1].device = Some(DeviceKind::Cuda);
        let (job, actions) = p.submit(g, Instant::now());
        assert_eq!(
            placed(&actions),
            vec![(1, CPU), (2, GPU), (3, CPU), (4, GPU)]
        );
        assert_eq!(runs_when_done(&mut p, job, &[1, 2, 3, 4], 5), (5, 3));
    }

    #[test]
    fn without_a_gpu_every_op_runs_on_the_cpu_pool() {
        let mut p = planner(8, 0);
        let (_, actions) = p.submit(mixed(), Instant::now());
        let cpu = |k| (k, CPU);
        assert_eq!(placed(&actions), vec![cpu(1), cpu(2), cpu(3), cpu(4)]);
    }

    #[test]
    fn a_gpu_being_restarted_leaves_its_ops_to_the_cpu_pool() {
        let mut p = planner(8, 1);
        let (job, actions) = p.submit(mixed(), Instant::now());
        assert_eq!(placed(&actions), vec![(1, GPU), (3, CPU)]);
        // The GPU actor dies: its task and those waiting for it go to the CPU pool.
        let actions = p.on_actor_down(ActorName::Device(GPU), true, 1);
        assert_eq!(placed(&actions), vec![(1, CPU), (2, CPU), (4, CPU)]);
        // Back again, it takes the fused tasks that follow.
        for key in [1, 2, 3] {
            assert_eq!(placed(&done(&mut p, job, key, 8)), vec![]);
        }
        assert!(p.add_device_of(GPU, DeviceKind::Cuda, 1).is_empty());
        assert_eq!(placed(&done(&mut p, job, 4, 8)), vec![(5, GPU)]);
    }

    #[test]
    fn a_gpu_task_goes_to_the_gpu_beside_the_worker_holding_its_input() {
        // Workers a and b, each with a GPU sharing its memory.
        let (a, b, ga, gb) = (DeviceId(1), DeviceId(2), DeviceId(3), DeviceId(4));
        let mut p = PlannerState::new(UnboundedPool::new());
        p.set_gpu_ops(GpuOps {
            runs: Gpu::runs,
            pays: Gpu::pays,
            shares: Gpu::shares,
        });
        for (cpu, gpu) in [(a, ga), (b, gb)] {
            assert!(p.add_queued_device(cpu, 1, 1).is_empty());
            assert!(p.add_device_of(gpu, DeviceKind::Cuda, 4).is_empty());
            p.share_host(gpu, cpu);
        }
        // Literals 1 and 2 (CPU work); 3 reads 1 and 4 reads 2, both GPU work.
        let mut g = graph(&[(1, &[]), (2, &[]), (3, &[1]), (4, &[2])], &[3, 4]);
        for t in &mut g.tasks[..2] {
            t.op = ChunkOp::Literal(chunk(8));
        }
        for t in &mut g.tasks[2..] {
            t.op = const_op(1, GPU_MIN_ELEMENTS);
        }
        let (job, first) = p.submit(g, Instant::now());
        assert_eq!(placed(&first), vec![(1, a), (2, b)]);
        let held = |p: &mut PlannerState, key: u64, device: DeviceId| held_at(p, job, key, device);
        // b's chunk first: its reader goes to b's GPU, not to the freest (a's, lower id).
        assert_eq!(placed(&held(&mut p, 2, b)), vec![(4, gb)]);
        assert_eq!(placed(&held(&mut p, 1, a)), vec![(3, ga)]);
    }

    #[test]
    fn a_reductions_leaves_gather_on_one_worker_and_tiny_tasks_wait_for_it() {
        let (a, b) = (DeviceId(1), DeviceId(2));
        let mut p = PlannerState::new(UnboundedPool::new());
        // Two workers, each running one task and queuing one more.
        assert!(p.add_queued_device(a, 1, 2).is_empty());
        assert!(p.add_queued_device(b, 1, 2).is_empty());
        // Leaves 1-8; 9 sums 1-4, 10 sums 5-8, 11 sums 9 and 10.
        let leaves: Vec<(u64, &[u64])> = (1..=8).map(|k| (k, &[][..])).collect();
        let sums: [(u64, &[u64]); 3] = [(9, &[1, 2, 3, 4]), (10, &[5, 6, 7, 8]), (11, &[9, 10])];
        let tasks: Vec<(u64, &[u64])> = leaves.into_iter().chain(sums).collect();
        let (job, first) = p.submit(graph(&tasks, &[11]), Instant::now());
        // 1 and 2 fill a; 3 goes to b, whose thread is idle; 4 waits for a, where most of
        // its siblings are, now that b's thread is busy; 5 (no sibling placed yet) takes
        // b's last slot.
        assert_eq!(placed(&first), vec![(1, a), (2, a), (3, b), (5, b)]);
        let held = |p: &mut PlannerState, key: u64, device: DeviceId| held_at(p, job, key, device);
        // a finishes 1: 4 takes the slot; b finishes 3: 6 follows its sibling 5.
        assert_eq!(placed(&held(&mut p, 1, a)), vec![(4, a)]);
        assert_eq!(placed(&held(&mut p, 3, b)), vec![(6, b)]);
        // 7 and 8 wait for b, where their siblings are, while a's thread runs 4.
        assert_eq!(placed(&held(&mut p, 2, a)), vec![]);
        // a is idle: it steals 7; 9, whose inputs a holds three quarters of, runs there.
        assert_eq!(placed(&held(&mut p, 4, a)), vec![(7, a), (9, a)]);
        assert_eq!(placed(&held(&mut p, 5, b)), vec![(8, b)]);
    }

    /// Where the readers of a shared chunk go: leaves 1..=n of 8 bytes, split between
    /// workers a (the first half) and b, and a shared chunk 100 of `shared` bytes on a,
    /// made by `op`; reader 100 + i reads leaf i and the shared chunk.
    fn readers_of_a_shared_chunk(n: u64, shared: u64, op: ChunkOp) -> Vec<(u64, DeviceId)> {
        let (a, b) = (DeviceId(1), DeviceId(2));
        let mut p = PlannerState::new(UnboundedPool::new());
        assert!(p.add_queued_device(a, 4, 64).is_empty());
        assert!(p.add_queued_device(b, 4, 64).is_empty());
        let inputs: Vec<[u64; 2]> = (1..=n).map(|i| [i, 100]).collect();
        let mut tasks: Vec<(u64, &[u64])> = (1..=n).map(|i| (i, &[][..])).collect();
        tasks.push((100, &[]));
        tasks.extend((1..=n).map(|i| (100 + i, &inputs[i as usize - 1][..])));
        let outputs: Vec<u64> = (101..=100 + n).collect();
        let mut g = graph(&tasks, &outputs);
        g.tasks[n as usize].op = op;
        let (job, _) = p.submit(g, Instant::now());
        let mut readers = Vec::new();
        for (key, device, bytes) in (1..=n)
            .map(|i| (i, if i <= n / 2 { a } else { b }, 8))
            .chain([(100, a, shared)])
        {
            let attempt = attempt(&p, job, key);
            let id = ChunkId {
                job,
                key: ChunkKey(key),
            };
            p.chunk_at(id, device, bytes);
            let actions = p.on_chunk_held(job, ChunkKey(key), attempt, vec![bytes], Instant::now());
            readers.extend(placed(&actions));
        }
        readers.sort();
        readers
    }

    #[test]
    fn a_small_chunk_many_tasks_read_does_not_draw_them_all_to_its_holder() {
        let (a, b) = (DeviceId(1), DeviceId(2));
        let op = || const_op(1, 1);
        // Read by 8 tasks, the shared chunk's 64 bytes outweigh each leaf's 8: all go to a.
        let eight = readers_of_a_shared_chunk(8, 64, op());
        assert_eq!(eight, (101..=108).map(|k| (k, a)).collect::<Vec<_>>());
        // Read by 10, it is broadcast: each reader follows its own leaf.
        let ten = readers_of_a_shared_chunk(10, 64, op());
        let expected: Vec<_> = (101..=110)
            .map(|k| (k, if k <= 105 { a } else { b }))
            .collect();
        assert_eq!(ten, expected);
        // A large chunk is not broadcast: all 10 go to its holder.
        let large = readers_of_a_shared_chunk(10, 64 << 20, op());
        assert_eq!(large, (101..=110).map(|k| (k, a)).collect::<Vec<_>>());
        // A hashed join side is broadcast at any size.
        let hashed = FrameOp::HashSide {
            on: vec!["k".into()],
        };
        let side = readers_of_a_shared_chunk(10, 64 << 20, ChunkOp::Frame(hashed));
        assert_eq!(side, expected);
    }

    #[test]
    fn a_read_is_not_drawn_to_the_hashed_side_its_probe_reads() {
        let (a, b) = (DeviceId(1), DeviceId(2));
        let drawn_by = |op: ChunkOp| {
            let mut p = PlannerState::new(UnboundedPool::new());
            assert!(p.add_queued_device(a, 4, 64).is_empty());
            assert!(p.add_queued_device(b, 4, 64).is_empty());
            // Reads 1..=10, side 100, probes 101..=110 of read i and the side.
            let inputs: Vec<[u64; 2]> = (1..=10).map(|i| [i, 100]).collect();
            let mut tasks: Vec<(u64, &[u64])> = vec![(100, &[])];
            tasks.extend((1..=10).map(|i| (i, &[][..])));
            tasks.extend((1..=10).map(|i| (100 + i, &inputs[i as usize - 1][..])));
            let mut g = graph(&tasks, &(101..=110).collect::<Vec<_>>());
            g.tasks[0].op = op;
            let (job, _) = p.submit(g, Instant::now());
            let side = ChunkId {
                job,
                key: ChunkKey(100),
            };
            p.chunk_at(side, a, 64 << 20);
            let state = &p.jobs[&job];
            let read = state.index.position(ChunkKey(1)).unwrap();
            p.affinity(job, state, read, DeviceKind::Cpu)
        };
        // A large chunk of another kind draws the reads of its readers' other inputs.
        assert_eq!(drawn_by(const_op(1, 1)), Some((a, 0)));
        let hashed = FrameOp::HashSide {
            on: vec!["k".into()],
        };
        assert_eq!(drawn_by(ChunkOp::Frame(hashed)), None);
    }
}
