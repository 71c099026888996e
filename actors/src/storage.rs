//! `StorageActor`: the actix wrapper around [`ChunkStore`]. An injected
//! [`crate::FaultKind::KillStorage`] stops it, losing every chunk it held; it then reports
//! [`ActorDied`] to the supervisor, which starts an empty one in its place.

use crate::messages::{
    ActorDied, ActorName, ForgetJob, GetChunks, KeepOutputs, PutChunk, ReleaseChunks, TakeOutputs,
    Unkeep,
};
use crate::store::{ChunkStore, PutOutcome, StorageError, StorageStats, StoreConfig};
use actix::{Actor, ActorContext, Addr, Context, Handler, Recipient};
use std::sync::Arc;
use tessera_kernels::ChunkData;

/// Holds chunk data for the other actors.
#[derive(Debug)]
pub struct StorageActor {
    store: ChunkStore,
    supervisor: Recipient<ActorDied>,
    killed: bool,
}

impl StorageActor {
    /// Starts a storage actor that reports its death to `supervisor`.
    ///
    /// Its mailbox is unbounded: a bounded one can make `Addr::send` queue a request behind
    /// later `do_send`s, and the planner relies on storage seeing its puts, gets and
    /// releases in the order they were sent.
    pub fn launch(config: StoreConfig, supervisor: Recipient<ActorDied>) -> Addr<StorageActor> {
        StorageActor::create(|ctx| {
            ctx.set_mailbox_capacity(0);
            StorageActor {
                store: ChunkStore::new(config),
                supervisor,
                killed: false,
            }
        })
    }
}

impl Actor for StorageActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!(
            left = self.store.len(),
            spilled = self.store.spilled(),
            "storage stopped"
        );
        if self.killed {
            self.supervisor.do_send(ActorDied {
                actor: ActorName::Storage,
            });
        }
    }
}

impl Handler<PutChunk> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: PutChunk, ctx: &mut Self::Context) {
        match self
            .store
            .put(msg.id, msg.data, msg.op, msg.next_use, msg.shared)
        {
            PutOutcome::Stored => {}
            PutOutcome::Dropped => tracing::warn!(chunk = %msg.id, "injected: chunk dropped"),
            PutOutcome::Kill => {
                tracing::warn!(chunk = %msg.id, "injected: storage actor killed");
                self.killed = true;
                ctx.stop();
            }
        }
    }
}

impl Handler<GetChunks> for StorageActor {
    type Result = Result<Vec<Arc<ChunkData>>, StorageError>;

    fn handle(&mut self, msg: GetChunks, _: &mut Self::Context) -> Self::Result {
        self.store.get_for(Some(msg.reader), &msg.ids, msg.release)
    }
}

impl Handler<TakeOutputs> for StorageActor {
    type Result = Result<(Vec<Arc<ChunkData>>, StorageStats), StorageError>;

    fn handle(&mut self, msg: TakeOutputs, _: &mut Self::Context) -> Self::Result {
        let chunks = self.store.get(&msg.ids, true)?;
        Ok((chunks, self.store.forget_job(msg.job)))
    }
}

impl Handler<KeepOutputs> for StorageActor {
    type Result = Result<(Vec<u64>, StorageStats), StorageError>;

    fn handle(&mut self, msg: KeepOutputs, _: &mut Self::Context) -> Self::Result {
        let sizes = self.store.keep(&msg.ids)?;
        Ok((sizes, self.store.forget_job(msg.job)))
    }
}

impl Handler<Unkeep> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: Unkeep, _: &mut Self::Context) {
        self.store.unkeep(&msg.ids);
    }
}

impl Handler<ForgetJob> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: ForgetJob, _: &mut Self::Context) {
        self.store.forget_job(msg.job);
    }
}

impl Handler<ReleaseChunks> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: ReleaseChunks, _: &mut Self::Context) {
        self.store.release(&msg.ids);
    }
}
