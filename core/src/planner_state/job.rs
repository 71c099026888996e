//! A job's bookkeeping: completing tasks and releasing what they freed, queueing, the next
//! use of a chunk, and recomputing lost chunks from lineage.

use super::{Gone, InFlight, Job, PlannerAction, Status, Work, MAX_DROPS, MAX_LOSSES};
use crate::graph::ChunkKey;
use crate::ids::ChunkId;
use crate::job::{JobError, JobId};
use crate::memory::task_estimate;
use std::collections::{BTreeSet, HashMap};
use tessera_kernels::ChunkOp;

/// The next use of a part that only a later stage reads: after every graph position of
/// this job, ordered by part number (see [`Job::next_use`]).
pub(super) const LATER_STAGE: u64 = u64::MAX / 2;

impl Job {
    /// True if storage may drop the output of the task at `pos` from memory, to be
    /// computed again when read ([`Gone::Dropped`]): a task with no inputs (generated
    /// data, a range of a file) whose output is neither one of the job's results, nor a
    /// literal (shared with the graph: dropping frees nothing), nor split in parts, and
    /// that was dropped fewer than [`MAX_DROPS`] times (then it is spilled, so that a job
    /// under memory pressure always progresses).
    pub(super) fn droppable(&self, pos: usize) -> bool {
        let task = &self.tasks[pos];
        let generated =
            matches!(&task.work, Work::Run(op) if !matches!(op.as_ref(), ChunkOp::Literal(_)));
        generated
            && !task.is_output
            && task.drops < MAX_DROPS
            && self.index.inputs(pos).is_empty()
            && self.index.parts(pos).is_empty()
    }

    /// Records that the task at `pos` produced `nbytes` (a split task: that its parts are
    /// coming; it stores nothing itself), and releases what that frees.
    pub(super) fn complete(
        &mut self,
        id: JobId,
        pos: usize,
        nbytes: u64,
        actions: &mut Vec<PlannerAction>,
    ) {
        let split = !self.index.parts(pos).is_empty();
        let task = &mut self.tasks[pos];
        task.status = if split {
            Status::Released
        } else {
            Status::Stored(nbytes)
        };
        self.done += 1;
        self.stored_bytes += nbytes;
        self.stats.bytes_produced += nbytes;
        self.stats.peak_stored_bytes = self.stats.peak_stored_bytes.max(self.stored_bytes);
        if !matches!(task.work, Work::Part { .. }) {
            self.stats.chunks_run += 1;
            *self
                .stats
                .chunks_by_op
                .entry(task.work.name().to_string())
                .or_default() += 1;
        }

        let mut released = Vec::new();
        let mut given_up = Vec::new();
        for i in 0..self.index.inputs(pos).len() {
            let input = self.index.inputs(pos)[i];
            self.tasks[input].readers_left -= 1;
            self.release_if_unneeded(input, &mut released);
            self.give_up_if_read(input, &mut given_up);
        }
        self.release_if_unneeded(pos, &mut released);
        if !released.is_empty() {
            actions.push(PlannerAction::Release {
                job: id,
                keys: released,
            });
        }
        if !given_up.is_empty() {
            actions.push(PlannerAction::Unkeep { ids: given_up });
        }
    }

    /// Gives up the stored input at `pos` if the submitter gave it to the job and no task
    /// is left to read it.
    pub(super) fn give_up_if_read(&mut self, pos: usize, given_up: &mut Vec<ChunkId>) {
        if let (0, Work::Kept(id)) = (self.tasks[pos].readers_left, &self.tasks[pos].work) {
            if self.given.remove(&pos) {
                self.given_up.insert(pos);
                given_up.push(*id);
            }
        }
    }

    /// Gives up every stored input given to the job that it still holds (the job ends).
    pub(super) fn give_up_all(&mut self) -> Option<PlannerAction> {
        let ids: Vec<ChunkId> = std::mem::take(&mut self.given)
            .into_iter()
            .filter_map(|pos| match self.tasks[pos].work {
                Work::Kept(id) => Some(id),
                _ => None,
            })
            .collect();
        (!ids.is_empty()).then_some(PlannerAction::Unkeep { ids })
    }

    /// The chunk at `pos` is stored: its queued readers wait for one input less.
    pub(super) fn wake_readers(
        &mut self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
        ready: &mut BTreeSet<(JobId, usize)>,
    ) {
        for i in 0..self.index.consumers(pos).len() {
            let consumer = self.index.consumers(pos)[i];
            if self.is_queued(id, consumer, in_flight) {
                self.tasks[consumer].waiting_on -= 1;
                if self.tasks[consumer].waiting_on == 0 {
                    ready.insert((id, consumer));
                }
            }
        }
    }

    pub(super) fn release_if_unneeded(&mut self, pos: usize, released: &mut Vec<ChunkKey>) {
        let task = &mut self.tasks[pos];
        if matches!(task.work, Work::Kept(_)) {
            return; // not this job's to drop
        }
        if let (0, false, Status::Stored(nbytes)) = (task.readers_left, task.is_output, task.status)
        {
            task.status = Status::Released;
            self.stored_bytes -= nbytes;
            released.push(task.key);
        }
    }

    /// True for a pending task that is waiting for inputs or ready (not running).
    pub(super) fn is_queued(
        &self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
    ) -> bool {
        let task = &self.tasks[pos];
        task.status == Status::Pending && !in_flight.contains_key(&(id, task.key))
    }

    /// Graph position of the first queued reader of the chunk at `pos`. A chunk no task of
    /// this job reads any more is needed by a later stage or the caller, after every
    /// queued task: [`LATER_STAGE`] plus its part number for a part of a split task (a
    /// later stage reads a shuffle's partitions in order: a groupby's merges, a join's
    /// partition pairs), else `u64::MAX`.
    pub(super) fn next_use(
        &self,
        id: JobId,
        pos: usize,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
    ) -> u64 {
        let queued = self
            .index
            .consumers(pos)
            .iter()
            .find(|&&c| self.is_queued(id, c, in_flight));
        if let Some(&reader) = queued {
            return reader as u64;
        }
        let part = self.index.inputs(pos).iter().find_map(|&task| {
            let parts = self.index.parts(task);
            parts.iter().position(|&p| p == pos)
        });
        part.map_or(u64::MAX, |n| LATER_STAGE + n as u64)
    }

    /// Puts a pending, not running task back in line: it waits for its inputs that are
    /// not stored, or is ready.
    pub(super) fn requeue(&mut self, id: JobId, pos: usize, ready: &mut BTreeSet<(JobId, usize)>) {
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
    pub(super) fn recompute(
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
        self.tasks[pos].recomputes += 1;
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

    /// Records that dispatch `attempt` produced the chunk at `pos` (and its parts, for a
    /// split task) now stored.
    pub(super) fn made_by(&mut self, pos: usize, attempt: u64) {
        for p in self.index.parts(pos).to_vec().into_iter().chain([pos]) {
            self.tasks[p].made_by = attempt;
        }
    }

    /// Recomputes the stored chunk at `pos`, which is gone from storage: a loss is counted,
    /// and is an error once the chunk has been lost [`MAX_LOSSES`] times; a chunk storage
    /// dropped is no loss. `reader`: the dispatch attempt of the task that found it gone,
    /// if one did; where that task was dispatched before the chunk stored now was made, it
    /// found an earlier copy gone, whose loss was counted and recomputed already.
    pub(super) fn lose(
        &mut self,
        id: JobId,
        pos: usize,
        gone: Gone<'_>,
        reader: Option<u64>,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
        ready: &mut BTreeSet<(JobId, usize)>,
    ) -> Result<(), JobError> {
        let task = &mut self.tasks[pos];
        let nbytes = match task.status {
            Status::Stored(_) if reader.is_some_and(|r| r < task.made_by) => return Ok(()),
            Status::Stored(nbytes) => nbytes,
            Status::Pending => return Ok(()), // already being recomputed
            Status::Released => {
                self.recompute(id, pos, in_flight, ready);
                return Ok(());
            }
        };
        if self.given_up.contains(&pos) {
            // Freed on purpose after its last read, and read again by a recompute: no
            // loss, but the caller must compute it again.
            return Err(JobError::ChunkLost {
                key: task.key,
                op: task.work.name().to_string(),
                losses: task.losses,
                cause: "given up after its last read, then needed to recompute a lost chunk"
                    .to_string(),
            });
        }
        let cause = match gone {
            Gone::Lost(cause) => {
                task.losses += 1;
                self.stats.chunks_lost += 1;
                cause
            }
            Gone::Dropped => {
                task.drops += 1;
                "dropped to be recomputed"
            }
        };
        let kept = matches!(task.work, Work::Kept(_));
        if kept || task.losses >= MAX_LOSSES {
            // A kept chunk's lineage is its owner's: the caller recomputes it.
            return Err(JobError::ChunkLost {
                key: task.key,
                op: task.work.name().to_string(),
                losses: task.losses,
                cause: cause.to_string(),
            });
        }
        match gone {
            Gone::Lost(_) => {
                tracing::warn!(job = %id, key = %task.key, op = task.work.name(), cause, "chunk lost; recomputing it from lineage")
            }
            Gone::Dropped => {
                tracing::debug!(job = %id, key = %task.key, op = task.work.name(), "chunk dropped by storage; recomputing it")
            }
        }
        if task.readers_left == 0 && !task.is_output {
            task.status = Status::Released;
            self.stored_bytes -= nbytes;
            return Ok(());
        }
        self.recompute(id, pos, in_flight, ready);
        Ok(())
    }

    /// The bytes of the task at `pos`'s inputs that are stored now.
    pub(super) fn input_bytes(&self, pos: usize) -> u64 {
        self.index
            .inputs(pos)
            .iter()
            .map(|&i| match self.tasks[i].status {
                Status::Stored(n) => n,
                _ => 0,
            })
            .sum()
    }

    /// Bytes to reserve for the task at `pos` while it runs ([`task_estimate`] of its op
    /// and stored inputs; the job's mean chunk so far for an output nothing estimates).
    pub(super) fn estimate(&self, pos: usize) -> u64 {
        let sizes: Vec<u64> = self
            .index
            .inputs(pos)
            .iter()
            .map(|&i| match self.tasks[i].status {
                Status::Stored(n) => n,
                _ => 0,
            })
            .collect();
        let op = match &self.tasks[pos].work {
            Work::Run(op) => Some(&**op),
            Work::Kept(_) | Work::Part { .. } => None,
        };
        let mean = self
            .stats
            .bytes_produced
            .checked_div(self.stats.chunks_run)
            .unwrap_or(0);
        task_estimate(op, &sizes, mean)
    }

    pub(super) fn total(&self) -> u64 {
        self.tasks.len() as u64
    }

    /// Where storage holds the chunk `key` of job `id`.
    pub(super) fn chunk_id(&self, id: JobId, key: ChunkKey) -> ChunkId {
        match self.index.position(key).map(|pos| &self.tasks[pos].work) {
            Some(Work::Kept(kept)) => *kept,
            _ => ChunkId { job: id, key },
        }
    }
}
