//! `GraphPlannerActor`: the actix wrapper around [`PlannerState`]. It feeds the state
//! machine its events and carries out its actions: fetch a task's inputs from storage and
//! send it to a device, store and release chunks, and report progress and results to the
//! job's owner.

use crate::graph::ChunkKey;
use crate::job::{JobError, JobEvent, JobId, JobOutput};
use crate::messages::{
    AddDevice, ChunkFinished, DeviceId, ExecuteChunk, GetChunks, PutChunk, ReleaseChunks, SubmitJob,
};
use crate::planner_state::{FinishedJob, PlannerAction, PlannerState};
use crate::storage::StorageActor;
use crate::store::{ChunkId, StorageError};
use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, MailboxError, Recipient,
    WrapFuture,
};
use crossbeam_channel::Sender;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;
use tessera_kernels::{ChunkData, ChunkOp, KernelError};

/// Plans and drives every submitted job.
#[derive(Debug)]
pub struct GraphPlannerActor {
    state: PlannerState,
    storage: Addr<StorageActor>,
    devices: BTreeMap<DeviceId, Recipient<ExecuteChunk>>,
    events: HashMap<JobId, Sender<JobEvent>>,
}

impl GraphPlannerActor {
    /// A planner with no devices yet (see [`AddDevice`]), keeping chunks in `storage`.
    pub fn new(storage: Addr<StorageActor>) -> GraphPlannerActor {
        GraphPlannerActor {
            state: PlannerState::new(),
            storage,
            devices: BTreeMap::new(),
            events: HashMap::new(),
        }
    }

    fn apply(&mut self, actions: Vec<PlannerAction>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                PlannerAction::Dispatch {
                    job,
                    key,
                    device,
                    op,
                    inputs,
                } => self.dispatch(job, key, device, op, inputs, ctx),
                PlannerAction::Store { job, key, data } => {
                    let id = ChunkId { job, key };
                    self.storage.do_send(PutChunk { id, data });
                }
                PlannerAction::Release { job, keys } => {
                    let ids = chunk_ids(job, &keys);
                    self.storage.do_send(ReleaseChunks { ids });
                }
                PlannerAction::Progress { job, done, total } => {
                    self.report(job, JobEvent::Progress { done, total });
                }
                PlannerAction::JobFinished { job, result } => self.deliver(job, result, ctx),
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
        job: JobId,
        key: ChunkKey,
        device: DeviceId,
        op: Arc<ChunkOp>,
        inputs: Vec<ChunkKey>,
        ctx: &mut Context<Self>,
    ) {
        if inputs.is_empty() {
            return self.execute(job, key, device, op, Vec::new(), ctx);
        }
        let request = GetChunks {
            ids: chunk_ids(job, &inputs),
            release: false,
        };
        let fetch = self.storage.send(request).into_actor(self);
        ctx.spawn(
            fetch.map(move |fetched, act, ctx| match storage_result(fetched) {
                Ok(inputs) => act.execute(job, key, device, op, inputs, ctx),
                Err(error) => {
                    let actions = act.state.on_dispatch_failed(job, key, error);
                    act.apply(actions, ctx);
                }
            }),
        );
    }

    fn execute(
        &mut self,
        job: JobId,
        key: ChunkKey,
        device: DeviceId,
        op: Arc<ChunkOp>,
        inputs: Vec<Arc<ChunkData>>,
        ctx: &mut Context<Self>,
    ) {
        let reply_to = ctx.address().recipient();
        let msg = ExecuteChunk {
            job,
            key,
            op,
            inputs,
            reply_to,
        };
        let sent = match self.devices.get(&device) {
            Some(addr) => addr.try_send(msg).is_ok(),
            None => false,
        };
        if !sent {
            let cause = KernelError::DeviceUnavailable(format!("{device} is not running"));
            let actions = self.state.on_chunk_failed(job, key, cause);
            self.apply(actions, ctx);
        }
    }

    /// Reports a failed job, or takes a finished job's outputs out of storage and reports
    /// them.
    fn deliver(
        &mut self,
        job: JobId,
        result: Result<FinishedJob, JobError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(events) = self.events.remove(&job) else {
            return;
        };
        let FinishedJob { outputs, stats } = match result {
            Ok(finished) => finished,
            Err(error) => {
                let _ = events.send(JobEvent::Finished(Err(error)));
                return;
            }
        };
        let ids = chunk_ids(job, &outputs);
        let take = GetChunks {
            ids: ids.clone(),
            release: true,
        };
        let fetch = self.storage.send(take).into_actor(self);
        ctx.spawn(fetch.map(move |fetched, act, _| {
            let result = storage_result(fetched).map(|chunks| JobOutput {
                outputs: outputs.into_iter().zip(chunks).collect(),
                stats,
            });
            if result.is_err() {
                act.storage.do_send(ReleaseChunks { ids });
            }
            let _ = events.send(JobEvent::Finished(result));
        }));
    }
}

fn chunk_ids(job: JobId, keys: &[ChunkKey]) -> Vec<ChunkId> {
    keys.iter().map(|&key| ChunkId { job, key }).collect()
}

/// A storage reply as the job sees it.
fn storage_result(
    reply: Result<Result<Vec<Arc<ChunkData>>, StorageError>, MailboxError>,
) -> Result<Vec<Arc<ChunkData>>, JobError> {
    match reply {
        Ok(Ok(chunks)) => Ok(chunks),
        Ok(Err(StorageError::Missing(id))) => Err(JobError::ChunkLost(id.key)),
        Err(e) => Err(JobError::SystemStopped(format!("storage unreachable: {e}"))),
    }
}

impl Actor for GraphPlannerActor {
    type Context = Context<Self>;
}

impl Handler<AddDevice> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: AddDevice, ctx: &mut Self::Context) {
        self.devices.insert(msg.id, msg.device);
        let actions = self.state.add_device(msg.id, msg.slots);
        self.apply(actions, ctx);
    }
}

impl Handler<SubmitJob> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: SubmitJob, ctx: &mut Self::Context) {
        let (job, actions) = self.state.submit(msg.graph, Instant::now());
        tracing::debug!(%job, "job submitted");
        self.events.insert(job, msg.events);
        self.apply(actions, ctx);
    }
}

impl Handler<ChunkFinished> for GraphPlannerActor {
    type Result = ();

    fn handle(&mut self, msg: ChunkFinished, ctx: &mut Self::Context) {
        let ChunkFinished { job, key, result } = msg;
        let actions = match result {
            Ok(data) => self.state.on_chunk_done(job, key, data, Instant::now()),
            Err(cause) => {
                tracing::debug!(%job, %key, %cause, "chunk failed");
                self.state.on_chunk_failed(job, key, cause)
            }
        };
        self.apply(actions, ctx);
    }
}
