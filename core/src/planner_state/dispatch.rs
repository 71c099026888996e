//! The dispatch pass: ready tasks in priority order to devices with free slots, each
//! under a memory reservation (see [`super::room`] for the task held back).

use super::*;

impl PlannerState {
    /// Dispatches ready tasks in priority order while a device has a free slot and the
    /// memory budget takes their outputs (or, once storage has made what room it can,
    /// nothing else is running). Storage is asked to make room for the first task held
    /// back for memory (see [`room`]).
    pub(super) fn dispatch_ready(&mut self) -> Vec<PlannerAction> {
        let mut actions = Vec::new();
        let mut held = None;
        // Tasks passed over (waiting for their inputs' holder) stay in line before this.
        let mut passed: Option<(JobId, usize)> = None;
        let mut waiting = Waiting::new();
        loop {
            let next = match passed {
                None => self.ready.first(),
                Some(p) => self.ready.range((Excluded(p), Unbounded)).next(),
            };
            let Some(&(job, pos)) = next else {
                break;
            };
            if !self.storage_up {
                break;
            }
            if !self.jobs.contains_key(&job) {
                self.ready.remove(&(job, pos));
                continue;
            }
            let device = match self.place(job, pos, &waiting) {
                Placement::On(device) => device,
                Placement::Wait(holder) => {
                    let expected = self.expected_run(job, pos, self.kind_of(holder));
                    let ahead = waiting.entry(holder).or_insert(Some(Duration::ZERO));
                    *ahead = ahead.zip(expected).map(|(a, e)| a + e);
                    passed = Some((job, pos));
                    continue;
                }
                // This task's kind of device is full; another kind may take later tasks.
                Placement::Full if self.has_free_slot() => {
                    passed = Some((job, pos));
                    continue;
                }
                Placement::Full => break,
            };
            let expected = self.expected_run(job, pos, self.kind_of(device));
            let (Some(state), Some(slots)) =
                (self.jobs.get_mut(&job), self.devices.get_mut(&device))
            else {
                break;
            };
            let estimate = state.estimate(pos);
            let reservation = match Reservation::try_new(Arc::clone(&self.pool), estimate) {
                Some(r) => r,
                None if !self.in_flight.is_empty() || !self.room.made_idle(estimate) => {
                    state.stats.held_back += 1;
                    let idle = self.in_flight.is_empty();
                    held = Some(HeldBack {
                        bytes: estimate,
                        idle,
                    });
                    break;
                }
                None => match Reservation::past_budget(Arc::clone(&self.pool), estimate) {
                    Ok(r) => r,
                    Err(out) => {
                        actions.extend(self.fail(job, JobError::OutOfMemory(out)));
                        continue;
                    }
                },
            };
            self.ready.remove(&(job, pos));
            let task = &state.tasks[pos];
            let Work::Run(op) = &task.work else {
                continue; // a kept chunk is never run
            };
            slots.used += 1;
            let attempt = self.next_attempt;
            self.next_attempt += 1;
            self.in_flight.insert(
                (job, task.key),
                InFlight {
                    device,
                    attempt,
                    expected,
                    _reservation: reservation,
                },
            );
            actions.push(PlannerAction::Dispatch {
                job,
                key: task.key,
                attempt,
                device,
                op: Arc::clone(op),
                inputs: task
                    .inputs
                    .iter()
                    .map(|&k| state.chunk_id(job, k))
                    .collect(),
                parts: state
                    .index
                    .parts(pos)
                    .iter()
                    .map(|&p| state.tasks[p].key)
                    .collect(),
            });
        }
        actions.extend(self.want_room(held));
        // A delivering job's peak is left alone: its outputs read back for the caller are
        // reserved while they are read, and that is the caller's copy, not the run's.
        let used = self.pool.used();
        for state in self.jobs.values_mut().filter(|s| s.delivering.is_none()) {
            state.stats.peak_host_reserved = state.stats.peak_host_reserved.max(used);
        }
        actions
    }
}
