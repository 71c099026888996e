//! `GraphPlannerActor`: the actix wrapper around [`PlannerState`]. It feeds the state
//! machine its events and carries out its actions: fetch a task's inputs from storage and
//! send it to a device, store and release chunks, take a finished job's outputs out of
//! storage, and report progress and results to the job's owner. Lost chunks, unreachable
//! storage and actor deaths go back into the state machine, which re-plans.

use crate::device::CUDA_OPS;
use crate::graph::ChunkKey;
use crate::job::{JobError, JobEvent, JobId, JobOutput};
use crate::kept::{KeptChunk, KeptOwner};
use crate::memory::MemoryPool;
use crate::messages::{
    ActorDown, ActorName, AddDevice, AllowDrop, CancelJob, ChunkFinished, DeviceId, ExecuteChunk,
    ForgetJob, GetChunks, KeepOutputs, MakeRoom, PutChunk, ReadKept, ReleaseChunks, Settle,
    StorageRestarted, StoreKept, SubmitJob, TakeOutputs, Unkeep, UnkeepRecipient,
};
use crate::planner_state::{Gone, PlannerAction, PlannerState};
use crate::recorder::{attach_storage, Recorder};
use crate::storage::StorageActor;
use crate::store::{ChunkId, StorageError};
use actix::{Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, Recipient, WrapFuture};
use crossbeam_channel::Sender;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;
use tessera_kernels::ChunkOp;

/// Plans and drives every submitted job.
#[derive(Debug)]
pub struct GraphPlannerActor {
    state: PlannerState,
    storage: Addr<StorageActor>,
    /// Counts storage restarts: a failed request to an older storage actor says nothing
    /// about the one in use.
    storage_epoch: u64,
    devices: BTreeMap<DeviceId, Recipient<ExecuteChunk>>,
    events: HashMap<JobId, Sender<JobEvent>>,
    /// The jobs running, by the token they were submitted with ([`CancelJob`]).
    tokens: HashMap<u64, JobId>,
}

impl GraphPlannerActor {
    /// A planner with no devices yet (see [`AddDevice`]), keeping chunks in `storage`,
    /// reserving task outputs in the host memory `pool` and recording jobs with `recorder`.
    pub fn new(
        storage: Addr<StorageActor>,
        pool: Arc<dyn MemoryPool>,
        recorder: Arc<Recorder>,
    ) -> GraphPlannerActor {
        let mut state = PlannerState::new(pool);
        state.set_recorder(recorder);
        // GPU devices join as their actors start; what they run is the CUDA crate's word.
        state.set_gpu_ops(CUDA_OPS);
        GraphPlannerActor {
            state,
            storage,
            storage_epoch: 0,
            devices: BTreeMap::new(),
            events: HashMap::new(),
            tokens: HashMap::new(),
        }
    }

    fn apply(&mut self, actions: Vec<PlannerAction>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                PlannerAction::Dispatch {
                    job,
                    key,
                    attempt,
                    device,
                    op,
                    inputs,
                    parts: _,
                } => self.dispatch(Task { job, key, attempt }, device, op, inputs, ctx),
                PlannerAction::Store {
                    job,
                    key,
                    data,
                    info,
                    reservation,
                } => {
                    let id = ChunkId { job, key };
                    self.storage.do_send(PutChunk {
                        id,
                        data,
                        info,
                        reservation,
                    });
                }
                PlannerAction::Release { job, keys } => {
                    let ids = chunk_ids(job, &keys);
                    self.storage.do_send(ReleaseChunks { ids });
                }
                PlannerAction::Unkeep { ids } => self.storage.do_send(Unkeep { ids }),
                PlannerAction::Progress { job, done, total } => {
                    self.report(job, JobEvent::Progress { done, total });
                }
                PlannerAction::Deliver {
                    job,
                    outputs,
                    keep: false,
                    attempt,
                } => self.deliver(job, outputs, attempt, ctx),
                PlannerAction::Deliver {
                    job,
                    outputs,
                    keep: true,
                    attempt,
                } => self.keep(job, outputs, attempt, ctx),
                PlannerAction::MakeRoom { ask } => {
                    let room = self.storage.send(MakeRoom).into_actor(self);
                    ctx.spawn(room.map(move |made, act, ctx| {
                        // Without storage there is no room to wait for: its restart
                        // dispatches again.
                        if made.is_ok() {
                            let actions = act.state.on_room_made(ask);
                            act.apply(actions, ctx);
                        }
                    }));
                }
                PlannerAction::JobFailed { job, error, stats } => {
                    tracing::debug!(%job, %error, "job failed");
                    // Reported once storage dropped the job's chunks (storage runs on its
                    // own thread): the caller's next job finds their memory free.
                    let events = self.events.remove(&job);
                    let forget = self.storage.send(ForgetJob { job }).into_actor(self);
                    ctx.spawn(forget.map(move |_, _, _| {
                        if let Some(events) = events {
                            if let Some(stats) = stats {
                                let _ = events.send(JobEvent::FailedStats(stats));
                            }
                            let _ = events.send(JobEvent::Finished(Err(error)));
                        }
                    }));
                }
            }
        }
    }

    /// Sends an event to the job's owner (who may have stopped listening).
    fn report(&self, job: JobId, event: JobEvent) {
        if let Some(events) = self.events.get(&job) {
            let _ = events.send(event);
        }
    }

    /// Fetches the task's inputs from storage, then hands the task to the device.
    fn dispatch(
        &mut self,
        task: Task,
        device: DeviceId,
        op: Arc<ChunkOp>,
        inputs: Vec<ChunkId>,
        ctx: &mut Context<Self>,
    ) {
        if inputs.is_empty() {
            return self.execute(task, device, op, Vec::new(), ctx);
        }
        let request = GetChunks {
            reader: task.job,
            ids: inputs,
            release: false,
        };
        let fetch = self.storage.send(request).into_actor(self);
        let epoch = self.storage_epoch;
        ctx.spawn(fetch.map(move |fetched, act, ctx| {
            let Task { job, key, attempt } = task;
            let actions = match fetched {
                Ok(Ok(inputs)) => return act.execute(task, device, op, inputs, ctx),
                Ok(Err(e)) => {
                    let gone_keys = act.state.keys_of(job, e.ids());
                    act.state
                        .on_inputs_gone(job, key, attempt, &gone_keys, gone(&e))
                }
                Err(_) => {
                    act.storage_unreachable(epoch);
                    act.state.on_storage_unreachable(job, key, attempt)
                }
            };
            act.apply(actions, ctx);
        }));
    }

    fn execute(
        &mut self,
        task: Task,
        device: DeviceId,
        op: Arc<ChunkOp>,
        inputs: Vec<Arc<tessera_kernels::ChunkData>>,
        ctx: &mut Context<Self>,
    ) {
        let Task { job, key, attempt } = task;
        let msg = ExecuteChunk {
            job,
            key,
            attempt,
            op,
            inputs,
            reply_to: ctx.address().recipient(),
        };
        match self.devices.get(&device) {
            // The device's mailbox takes every task the planner's slots allow.
            Some(addr) if addr.connected() => addr.do_send(msg),
            _ => {
                let actions = self.state.on_device_unreachable(job, key, attempt, device);
                self.apply(actions, ctx);
            }
        }
    }

    /// A request sent at storage `epoch` found no storage actor: if that is the one in use,
    /// the planner waits for its restart.
    fn storage_unreachable(&mut self, epoch: u64) {
        if epoch == self.storage_epoch {
            self.state.storage_gone();
        }
    }

    /// Takes a finished job's outputs out of storage and reports them; lost outputs go back
    /// to the state machine to be recomputed.
    fn deliver(
        &mut self,
        job: JobId,
        outputs: Vec<ChunkId>,
        attempt: u64,
        ctx: &mut Context<Self>,
    ) {
        let take = TakeOutputs {
            job,
            ids: outputs.clone(),
        };
        let fetch = self.storage.send(take).into_actor(self);
        let epoch = self.storage_epoch;
        ctx.spawn(fetch.map(move |fetched, act, ctx| {
            let actions = match fetched {
                Ok(Ok((chunks, storage, log))) => {
                    let Some(mut stats) = act.state.on_delivered(job, attempt, Instant::now())
                    else {
                        return; // superseded: the outputs are being recomputed
                    };
                    attach_storage(&mut stats, &storage, log);
                    let output = JobOutput {
                        outputs: outputs.iter().map(|id| id.key).zip(chunks).collect(),
                        kept: Vec::new(),
                        stats,
                    };
                    return act.finish(job, output);
                }
                Ok(Err(e)) => act.delivery_failed(job, attempt, &e),
                Err(_) => act.delivery_unreachable(job, attempt, epoch),
            };
            act.apply(actions, ctx);
        }));
    }

    /// Keeps a finished job's outputs in storage and reports handles on them; lost outputs
    /// go back to the state machine to be recomputed.
    fn keep(&mut self, job: JobId, outputs: Vec<ChunkId>, attempt: u64, ctx: &mut Context<Self>) {
        let keep = KeepOutputs {
            job,
            ids: outputs.clone(),
        };
        let fetch = self.storage.send(keep).into_actor(self);
        let epoch = self.storage_epoch;
        ctx.spawn(fetch.map(move |kept, act, ctx| {
            let actions = match kept {
                Ok(Ok((sizes, storage, log))) => {
                    let owner: Arc<dyn KeptOwner> =
                        Arc::new(UnkeepRecipient(ctx.address().recipient()));
                    let kept: Vec<Arc<KeptChunk>> = outputs
                        .iter()
                        .zip(sizes)
                        .map(|(&id, nbytes)| {
                            Arc::new(KeptChunk::new(id, nbytes, Arc::clone(&owner)))
                        })
                        .collect();
                    let Some(mut stats) = act.state.on_delivered(job, attempt, Instant::now())
                    else {
                        return; // superseded (the handles give the chunks up again)
                    };
                    attach_storage(&mut stats, &storage, log);
                    let output = JobOutput {
                        outputs: Vec::new(),
                        kept,
                        stats,
                    };
                    return act.finish(job, output);
                }
                Ok(Err(e)) => act.delivery_failed(job, attempt, &e),
                Err(_) => act.delivery_unreachable(job, attempt, epoch),
            };
            act.apply(actions, ctx);
        }));
    }

    /// Reports a delivered job's output to its owner.
    fn finish(&mut self, job: JobId, output: JobOutput) {
        if let Some(events) = self.events.remove(&job) {
            let _ = events.send(JobEvent::Finished(Ok(output)));
        }
    }

    /// A delivery found the outputs `error` names gone: they are recomputed.
    fn delivery_failed(
        &mut self,
        job: JobId,
        attempt: u64,
        error: &StorageError,
    ) -> Vec<PlannerAction> {
        let lost = self.state.keys_of(job, error.ids());
        self.state
            .on_delivery_failed(job, attempt, &lost, gone(error))
    }

    /// A delivery found no storage actor (sent at storage `epoch`).
    fn delivery_unreachable(&mut self, job: JobId, attempt: u64, epoch: u64) -> Vec<PlannerAction> {
        self.storage_unreachable(epoch);
        self.state
            .on_delivery_failed(job, attempt, &[], Gone::Lost("storage unreachable"))
    }
}

/// What storage's `error` says of the chunks it names.
fn gone(error: &StorageError) -> Gone<'_> {
    match error {
        StorageError::Lost { cause, .. } => Gone::Lost(cause),
        StorageError::Dropped { .. } => Gone::Dropped,
    }
}

/// One dispatch of a chunk task.
#[derive(Clone, Copy, Debug)]
struct Task {
    job: JobId,
    key: ChunkKey,
    attempt: u64,
}

fn chunk_ids(job: JobId, keys: &[ChunkKey]) -> Vec<ChunkId> {
    keys.iter().map(|&key| ChunkId { job, key }).collect()
}

impl Actor for GraphPlannerActor {
    type Context = Context<Self>;

    /// Jobs still running when the actor system stops end with an error.
    fn stopped(&mut self, _: &mut Self::Context) {
        for (_, events) in self.events.drain() {
            let error = JobError::SystemStopped("the actor system was shut down".into());
            let _ = events.send(JobEvent::Finished(Err(error)));
        }
    }
}

impl Handler<AddDevice> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: AddDevice, ctx: &mut Self::Context) {
        self.devices.insert(msg.id, msg.device);
        let actions = self.state.add_device_of(msg.id, msg.kind, msg.slots);
        self.apply(actions, ctx);
    }
}

impl Handler<SubmitJob> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: SubmitJob, ctx: &mut Self::Context) {
        let (job, actions) = self.state.submit(msg.graph, Instant::now());
        tracing::debug!(%job, "job submitted");
        self.events.insert(job, msg.events);
        let state = &self.state;
        self.tokens.retain(|_, j| state.is_running(*j));
        self.tokens.insert(msg.token, job);
        self.apply(actions, ctx);
    }
}

impl Handler<CancelJob> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: CancelJob, ctx: &mut Self::Context) {
        if let Some(job) = self.tokens.remove(&msg.token) {
            tracing::debug!(%job, "job cancelled");
            let error = JobError::SystemStopped("cancelled by its submitter".into());
            let actions = self.state.cancel(job, error);
            self.apply(actions, ctx);
        }
    }
}

impl Handler<ChunkFinished> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: ChunkFinished, ctx: &mut Self::Context) {
        let ChunkFinished {
            job,
            key,
            attempt,
            result,
            span,
            took,
        } = msg;
        let bytes_out = result.as_ref().map_or(0, |data| data.nbytes() as u64);
        self.state
            .record_run(job, key, attempt, span, bytes_out, result.is_ok());
        let actions = match result {
            Ok(data) => self
                .state
                .on_chunk_done(job, key, attempt, data, took, Instant::now()),
            Err(cause) => {
                tracing::debug!(%job, %key, %cause, "chunk failed");
                self.state.on_chunk_failed(job, key, attempt, cause)
            }
        };
        self.apply(actions, ctx);
    }
}

impl Handler<ActorDown> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: ActorDown, ctx: &mut Self::Context) {
        if let ActorName::Device(id) = msg.actor {
            self.devices.remove(&id);
        }
        let actions = self
            .state
            .on_actor_down(msg.actor, msg.restarting, msg.restarts);
        self.apply(actions, ctx);
    }
}

impl Handler<StoreKept> for GraphPlannerActor {
    type Result = ();

    /// Storage in use keeps the chunk (after everything the planner sent it before).
    fn handle(&mut self, msg: StoreKept, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<ReadKept> for GraphPlannerActor {
    type Result = ();

    /// Storage in use hands the chunks out (after everything the planner sent it before).
    fn handle(&mut self, msg: ReadKept, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<MakeRoom> for GraphPlannerActor {
    type Result = ();

    /// Storage in use spills ahead for a task held back outside the planner
    /// ([`crate::ActorSystem::make_room`]).
    fn handle(&mut self, msg: MakeRoom, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<Settle> for GraphPlannerActor {
    type Result = ();

    /// Storage in use answers after everything the planner sent it before.
    fn handle(&mut self, msg: Settle, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<AllowDrop> for GraphPlannerActor {
    type Result = ();

    /// Storage in use may drop the kept chunks (after everything the planner sent it
    /// before, so a chunk just stored is there).
    fn handle(&mut self, msg: AllowDrop, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<Unkeep> for GraphPlannerActor {
    type Result = ();

    /// A kept chunk's handle was dropped: storage (whichever actor is in use) gives it up.
    fn handle(&mut self, msg: Unkeep, _: &mut Self::Context) {
        self.storage.do_send(msg);
    }
}

impl Handler<StorageRestarted> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: StorageRestarted, ctx: &mut Self::Context) {
        self.storage = msg.storage;
        self.storage_epoch += 1;
        let actions = self.state.on_storage_restarted();
        self.apply(actions, ctx);
    }
}
