//! Losing work: a failed task run again or its job failed, inputs or stored chunks lost
//! (recomputed from lineage), storage or a device unreachable, an actor down and
//! restarted.

use super::*;

impl PlannerState {
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
        self.on_inputs_gone(job, key, attempt, lost, Gone::Lost(cause))
    }

    /// [`Self::on_inputs_lost`] for inputs lost or dropped by storage (`gone`): a dropped
    /// chunk is computed again without counting a loss.
    pub fn on_inputs_gone(
        &mut self,
        job: JobId,
        key: ChunkKey,
        attempt: u64,
        gone_keys: &[ChunkKey],
        gone: Gone<'_>,
    ) -> Vec<PlannerAction> {
        if !self.take_in_flight(job, key, attempt) {
            return Vec::new();
        }
        let mut actions = self.lose_chunks(job, gone_keys, gone, Some(attempt));
        self.requeue(job, key);
        actions.extend(self.dispatch_ready());
        actions
    }

    /// A cluster worker's storage dropped a chunk of `job` of `nbytes` (see
    /// [`Self::droppable`]): counted in the job's storage statistics, as a local store
    /// counts its own drops.
    pub fn count_dropped(&mut self, job: JobId, nbytes: u64) {
        if let Some(state) = self.jobs.get_mut(&job) {
            state.stats.storage.chunks_dropped += 1;
            state.stats.storage.bytes_dropped += nbytes;
        }
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
        self.requeue(job, key);
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
        self.requeue(job, key);
        self.dispatch_ready()
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
        // An ask the dead actor took is never answered.
        self.room = RoomAsk::None;
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
            actions.extend(self.lose_chunks(
                job,
                &stored,
                Gone::Lost("the storage actor died"),
                None,
            ));
            actions.extend(self.deliver_if_done(job));
        }
        actions.extend(self.dispatch_ready());
        actions
    }

    /// The stored chunks `lost` of `job` are gone (their holder, a cluster worker, was
    /// lost; `cause` says how): they are recomputed from lineage, or the job fails (a kept
    /// chunk, or one lost [`MAX_LOSSES`] times).
    pub fn on_chunks_lost(
        &mut self,
        job: JobId,
        lost: &[ChunkKey],
        cause: &str,
    ) -> Vec<PlannerAction> {
        if let Some(state) = self.jobs.get_mut(&job) {
            state.delivering = None;
        }
        let mut actions = self.lose_chunks(job, lost, Gone::Lost(cause), None);
        actions.extend(self.deliver_if_done(job));
        actions.extend(self.dispatch_ready());
        actions
    }

    /// Puts the task `key` of `job`, no longer in flight, back in line.
    fn requeue(&mut self, job: JobId, key: ChunkKey) {
        if let Some(state) = self.jobs.get_mut(&job) {
            if let Some(pos) = state.index.position(key) {
                state.requeue(job, pos, &mut self.ready);
            }
        }
    }

    /// Runs a task that is no longer in flight again, or fails its job.
    pub(super) fn retry_or_fail(
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
            op: task.work.name().to_string(),
            source: cause,
        };
        self.fail(job, error)
    }

    /// Counts losses of `job`'s stored chunks `lost` and recomputes them (`reader`: the
    /// dispatch attempt that found them gone, if a task did; see [`Job::lose`]).
    pub(super) fn lose_chunks(
        &mut self,
        job: JobId,
        lost: &[ChunkKey],
        gone: Gone<'_>,
        reader: Option<u64>,
    ) -> Vec<PlannerAction> {
        let Some(state) = self.jobs.get_mut(&job) else {
            return Vec::new();
        };
        for &key in lost {
            let Some(pos) = state.index.position(key) else {
                continue;
            };
            if let Err(error) = state.lose(job, pos, gone, reader, &self.in_flight, &mut self.ready)
            {
                return self.fail(job, error);
            }
        }
        Vec::new()
    }
}
