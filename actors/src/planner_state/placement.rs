//! Where a task runs.
//!
//! First the kind of device: a task whose op has a GPU kernel ([`Gpu::runs`]: today the
//! fused elementwise expressions with their trailing reductions, and block products,
//! which is where the time of a NumPy-style job goes) runs on a CUDA device whenever one
//! is registered; every other op (QR and SVD blocks, sort, dataframe kernels, combines of
//! partials…) runs on a CPU device.
//! A GPU being restarted is not registered, so its ops run on the CPU meanwhile (the CUDA
//! kernels return what the CPU ones do); a session without GPUs never sees the difference.
//!
//! Then the device of that kind: near its input bytes (a cluster's workers are devices,
//! and the scheduler says which holds which chunk), else the freest, unless moving large
//! inputs costs more than waiting for their holder.

use super::{PlannerState, Work};
use crate::graph::ChunkKey;
use crate::job::JobId;
use crate::messages::{DeviceId, DeviceKind};
use crate::store::ChunkId;
use std::cmp::Reverse;
use tessera_kernels::cuda::Gpu;

/// Input bytes over which a task waits for a busy device holding them rather than move
/// them to another (busy) device: about what a loopback transfer moves in a few
/// milliseconds. An idle device takes the task anyway.
pub const MOVE_BYTES: u64 = 8 << 20;

/// Where [`PlannerState::place`] puts a task.
pub(super) enum Placement {
    /// On this device.
    On(DeviceId),
    /// Nowhere yet: its inputs' holder is busy and moving them costs more than waiting.
    Wait,
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
        let gpu_op = self
            .jobs
            .get(&job)
            .is_some_and(|state| matches!(&state.tasks[pos].work, Work::Run(op) if Gpu::runs(op)));
        let gpu_up = self.devices.values().any(|s| s.kind == DeviceKind::Cuda);
        if gpu_op && gpu_up {
            DeviceKind::Cuda
        } else {
            DeviceKind::Cpu
        }
    }

    /// True while some device, of any kind, has a free slot.
    pub(super) fn has_free_slot(&self) -> bool {
        self.devices.values().any(|s| s.used < s.capacity)
    }

    /// True if dispatch `attempt` of `key` of `job` is in flight on a CUDA device (for
    /// [`crate::JobStats::chunks_on_gpu`]).
    pub(super) fn runs_on_gpu(&self, job: JobId, key: ChunkKey, attempt: u64) -> bool {
        self.in_flight
            .get(&(job, key))
            .filter(|f| f.attempt == attempt)
            .and_then(|f| self.devices.get(&f.device))
            .is_some_and(|s| s.kind == DeviceKind::Cuda)
    }

    /// Where the task at `pos` of `job` runs, among the devices of its kind
    /// ([`Self::kind_for`]): on the device holding most of its input bytes if it has a
    /// free slot; else on the device with the most free slots (ties: the lowest id) —
    /// unless moving the inputs costs more than waiting: over [`MOVE_BYTES`] held by a
    /// busy device while no other device is idle, the task waits for its holder.
    pub(super) fn place(&self, job: JobId, pos: usize) -> Placement {
        let kind = self.kind_for(job, pos);
        let candidates = || self.devices.iter().filter(move |(_, s)| s.kind == kind);
        let free = |d: &DeviceId| {
            self.devices
                .get(d)
                .is_some_and(|s| s.kind == kind && s.used < s.capacity)
        };
        let Some(state) = self.jobs.get(&job) else {
            return Placement::Full;
        };
        let mut near: Vec<(DeviceId, u64)> = Vec::new();
        if !self.locality.is_empty() {
            for &input in &state.tasks[pos].inputs {
                if let Some(&(device, bytes)) = self.locality.get(&state.chunk_id(job, input)) {
                    match near.iter_mut().find(|(d, _)| *d == device) {
                        Some((_, b)) => *b += bytes,
                        None => near.push((device, bytes)),
                    }
                }
            }
        }
        let nearest = near
            .into_iter()
            .filter(|(d, _)| self.devices.get(d).is_some_and(|s| s.kind == kind))
            .max_by_key(|&(d, bytes)| (bytes, Reverse(d)));
        if let Some((device, _)) = nearest.filter(|(d, _)| free(d)) {
            return Placement::On(device);
        }
        let freest = candidates()
            .filter(|(_, s)| s.used < s.capacity)
            .max_by_key(|(id, s)| (s.capacity - s.used, Reverse(**id)));
        match (freest, nearest) {
            (None, _) => Placement::Full,
            (Some((_, s)), Some((_, bytes))) if bytes > MOVE_BYTES && s.used > 0 => Placement::Wait,
            (Some((&id, _)), _) => Placement::On(id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::graph;
    use crate::memory::MemoryPool;
    use crate::messages::ActorName;
    use crate::planner_state::tests::{deliver, done, placed};
    use crate::store::tests::chunk;
    use std::time::Instant;
    use tessera_kernels::ChunkOp;

    const CPU: DeviceId = DeviceId(0);
    const GPU: DeviceId = DeviceId(1);

    /// Tasks 1, 2 and 4 fused (GPU kernels), 3 a literal (CPU only); 5 reads them all.
    fn mixed() -> crate::ChunkGraph {
        let mut g = graph(
            &[(1, &[]), (2, &[]), (3, &[]), (4, &[]), (5, &[1, 2, 3, 4])],
            &[5],
        );
        g.tasks[2].op = ChunkOp::Literal(chunk(8));
        g
    }

    /// A planner with a CPU pool of `cpu_slots` and, if `gpu_slots` is not 0, a GPU.
    fn planner(cpu_slots: usize, gpu_slots: usize) -> PlannerState {
        let mut p = PlannerState::new(MemoryPool::new(u64::MAX));
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
        let actions = done(&mut p, job, 5, 8);
        let stats = deliver(&mut p, job, &actions);
        assert_eq!((stats.chunks_run, stats.chunks_on_gpu), (5, 4));
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
}
