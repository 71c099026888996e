//! `StorageActor`: the actix wrapper around [`ChunkStore`].

use crate::messages::{GetChunks, PutChunk, ReleaseChunks};
use crate::store::{ChunkStore, StorageError};
use actix::{Actor, Addr, Context, Handler};
use std::sync::Arc;
use tessera_kernels::ChunkData;

/// Holds chunk data for the other actors.
#[derive(Debug)]
pub struct StorageActor {
    store: ChunkStore,
}

impl StorageActor {
    /// Starts a storage actor with a host memory budget in bytes.
    ///
    /// Its mailbox is unbounded: a bounded one can make `Addr::send` queue a request behind
    /// later `do_send`s, and the planner relies on storage seeing its puts, gets and
    /// releases in the order they were sent.
    pub fn launch(host_memory_budget: u64) -> Addr<StorageActor> {
        StorageActor::create(|ctx| {
            ctx.set_mailbox_capacity(0);
            StorageActor {
                store: ChunkStore::new(host_memory_budget),
            }
        })
    }
}

impl Actor for StorageActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Self::Context) {
        tracing::debug!(
            peak_bytes = self.store.peak_bytes(),
            left = self.store.len(),
            "storage stopped"
        );
    }
}

impl Handler<PutChunk> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: PutChunk, _: &mut Self::Context) {
        self.store.put(msg.id, msg.data);
    }
}

impl Handler<GetChunks> for StorageActor {
    type Result = Result<Vec<Arc<ChunkData>>, StorageError>;

    fn handle(&mut self, msg: GetChunks, _: &mut Self::Context) -> Self::Result {
        self.store.get(&msg.ids, msg.release)
    }
}

impl Handler<ReleaseChunks> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: ReleaseChunks, _: &mut Self::Context) {
        self.store.release(&msg.ids);
    }
}
