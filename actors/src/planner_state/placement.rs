//! Where a task runs: near its input bytes (a cluster's workers are devices, and the
//! scheduler says which holds which chunk), else on the freest device, unless moving large
//! inputs costs more than waiting for their holder.

use super::PlannerState;
use crate::job::JobId;
use crate::messages::DeviceId;
use crate::store::ChunkId;
use std::cmp::Reverse;

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
    /// Nowhere: no device has a free slot.
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

    /// Where the task at `pos` of `job` runs: on the device holding most of its input
    /// bytes if it has a free slot; else on the device with the most free slots (ties: the
    /// lowest id) — unless moving the inputs costs more than waiting: over
    /// [`MOVE_BYTES`] held by a busy device while no other device is idle, the task waits
    /// for its holder.
    pub(super) fn place(&self, job: JobId, pos: usize) -> Placement {
        let free = |d: &DeviceId| self.devices.get(d).is_some_and(|s| s.used < s.capacity);
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
            .max_by_key(|&(d, bytes)| (bytes, Reverse(d)));
        if let Some((device, _)) = nearest.filter(|(d, _)| free(d)) {
            return Placement::On(device);
        }
        let freest = self
            .devices
            .iter()
            .filter(|(_, s)| s.used < s.capacity)
            .max_by_key(|(id, s)| (s.capacity - s.used, Reverse(**id)));
        match (freest, nearest) {
            (None, _) => Placement::Full,
            (Some((_, s)), Some((_, bytes))) if bytes > MOVE_BYTES && s.used > 0 => Placement::Wait,
            (Some((&id, _)), _) => Placement::On(id),
        }
    }
}
