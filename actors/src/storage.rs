//! `StorageActor`: the actix wrapper around [`ChunkStore`], on a thread of its own
//! (`{prefix}-store`, with its own actix system), so that spill writes and read-backs never
//! hold up the planner and the supervisor. An injected [`crate::FaultKind::KillStorage`]
//! stops it, losing every chunk it held; it then reports [`ActorDied`] to the supervisor,
//! which starts an empty one (on a new thread) in its place.

use crate::memory::MemoryPool;
use crate::messages::Shutdown;
use crate::messages::{
    ActorDied, ActorName, AllowDrop, ForgetJob, GetChunks, KeepOutputs, MakeRoom, PutChunk,
    ReadKept, ReadReply, ReleaseChunks, Settle, StoreKept, TakeOutputs, Unkeep,
};
use crate::recorder::StorageLog;
use crate::resident::{resident_bytes, ResidentControl, CHECK_EVERY};
use crate::store::{ChunkId, ChunkStore, PutOutcome, StorageError, StorageStats, StoreConfig};
use crate::trim::IDLE_RELEASE;
use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, Recipient, System};
use std::io;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera_kernels::ChunkData;

/// Holds chunk data for the other actors.
#[derive(Debug)]
pub struct StorageActor {
    store: ChunkStore,
    supervisor: Recipient<ActorDied>,
    killed: bool,
    /// Answers held back by an injected [`crate::FaultKind::StallRead`]: never
    /// sent, dropped with the actor.
    stalled: Vec<ReadReply>,
    /// The resident-memory control, where the budget limits the process's resident memory
    /// ([`StoreConfig::limit_resident`]).
    resident: Option<ResidentControl>,
}

/// The threads storage actors run on (a restart starts a new one), joined when the actor
/// system stops.
#[derive(Clone, Debug, Default)]
pub struct StorageThreads(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl StorageThreads {
    fn add(&self, thread: JoinHandle<()>) {
        if let Ok(mut threads) = self.0.lock() {
            threads.retain(|t| !t.is_finished());
            threads.push(thread);
        }
    }

    /// Waits until `deadline` for every storage thread to end (each drops its store, which
    /// removes the spill folder) and joins them; false if one is still running.
    pub fn join(&self, deadline: Instant) -> bool {
        let Ok(mut threads) = self.0.lock() else {
            return false;
        };
        while threads.iter().any(|t| !t.is_finished()) {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        for thread in threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a storage thread panicked");
            }
        }
        true
    }
}

impl StorageActor {
    /// Starts a storage actor on a new thread named `thread` (recorded in `threads`) that
    /// reports its death to `supervisor`.
    ///
    /// Its mailbox is unbounded: a bounded one can make `Addr::send` queue a request behind
    /// later `do_send`s, and the planner relies on storage seeing its puts, gets and
    /// releases in the order they were sent.
    pub fn launch(
        config: StoreConfig,
        supervisor: Recipient<ActorDied>,
        thread: String,
        threads: &StorageThreads,
    ) -> io::Result<Addr<StorageActor>> {
        let (started, addr) = crossbeam_channel::bounded(1);
        let handle = std::thread::Builder::new().name(thread).spawn(move || {
            let system = System::new();
            system.block_on(async {
                let resident = config
                    .limit_resident
                    .then(|| ResidentControl::new(config.pool.limit()))
                    .flatten();
                let addr = StorageActor::create(|ctx| {
                    ctx.set_mailbox_capacity(0);
                    StorageActor {
                        resident,
                        store: ChunkStore::new(config),
                        supervisor,
                        killed: false,
                        stalled: Vec::new(),
                    }
                });
                let _ = started.send(addr);
            });
            if let Err(e) = system.run() {
                tracing::error!(error = %e, "storage thread");
            }
        })?;
        threads.add(handle);
        addr.recv()
            .map_err(|_| io::Error::other("the storage thread exited before its actor started"))
    }
}

impl Handler<Shutdown> for StorageActor {
    type Result = ();

    /// The actor system is stopping: drop the store (and its spill folder) and end the
    /// thread.
    fn handle(&mut self, _: Shutdown, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// How often storage checks whether its spare spill segments can go.
const SPARE_CHECK: Duration = Duration::from_millis(250);
/// Spare spill segments are deleted once nothing has been spilled or read back for this
/// long.
const SPARE_IDLE: Duration = Duration::from_secs(1);
/// Spare spill segments deleted at most at each check (20–70 ms each on ext4).
const SPARES_PER_CHECK: usize = 2;

impl Actor for StorageActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(SPARE_CHECK, |act, ctx| {
            // The timer would keep an actor nobody can reach alive.
            if !ctx.connected() {
                ctx.stop();
                return;
            }
            act.store.drop_idle_spares(SPARE_IDLE, SPARES_PER_CHECK);
            act.store.release_memory_if_idle(IDLE_RELEASE);
        });
        if self.resident.is_some() {
            // The first check before any task: a job never starts on the full limit.
            self.control_resident();
            ctx.run_interval(CHECK_EVERY, |act, _| act.control_resident());
        }
    }

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
        // Ends the storage thread; its store drops as the system's runtime does.
        System::current().stop();
    }
}

impl StorageActor {
    /// Sets the reservations' budget from the process's resident size (giving freed
    /// memory back first where it is above the target), and spills if it fell.
    fn control_resident(&mut self) {
        let Some(control) = &mut self.resident else {
            return;
        };
        let Some(mut resident) = resident_bytes() else {
            return;
        };
        if control.release_first(resident) {
            self.store.release_freed_memory();
            resident = resident_bytes().unwrap_or(resident);
        }
        let pool = Arc::clone(self.store.pool());
        let before = pool.budget();
        let decision = control.decide(resident, pool.used());
        pool.set_budget(decision.budget);
        if decision.budget != before {
            tracing::debug!(
                resident,
                reserved = pool.used(),
                budget = decision.budget,
                paused = decision.paused,
                "resident memory: budget set"
            );
        }
        if decision.budget < before {
            self.store.make_room();
        }
        if decision.terminate && !pool.exhausted() {
            tracing::error!(
                resident,
                limit = pool.limit(),
                "resident memory grew by more than 1.5x the limit since storage started: the process should be restarted"
            );
            pool.set_exhausted();
        }
    }

    /// Carries out the injected fault a put of chunk `id` met, if any.
    fn after_put(&mut self, id: ChunkId, outcome: PutOutcome, ctx: &mut Context<Self>) {
        match outcome {
            PutOutcome::Stored => {}
            PutOutcome::Dropped => tracing::warn!(chunk = %id, "injected: chunk dropped"),
            PutOutcome::Kill => {
                tracing::warn!(chunk = %id, "injected: storage actor killed");
                self.killed = true;
                ctx.stop();
            }
        }
    }
}

impl Handler<PutChunk> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: PutChunk, ctx: &mut Self::Context) {
        let outcome = self
            .store
            .put_reserved(msg.id, msg.data, msg.info, msg.reservation);
        self.after_put(msg.id, outcome, ctx);
    }
}

impl Handler<GetChunks> for StorageActor {
    type Result = Result<Vec<Arc<ChunkData>>, StorageError>;

    fn handle(&mut self, msg: GetChunks, _: &mut Self::Context) -> Self::Result {
        self.store.get_for(Some(msg.reader), &msg.ids, msg.release)
    }
}

impl Handler<TakeOutputs> for StorageActor {
    type Result = Result<(Vec<Arc<ChunkData>>, StorageStats, StorageLog), StorageError>;

    fn handle(&mut self, msg: TakeOutputs, _: &mut Self::Context) -> Self::Result {
        let chunks = self.store.get(&msg.ids, true)?;
        let (stats, log) = self.store.forget_job(msg.job);
        Ok((chunks, stats, log))
    }
}

impl Handler<KeepOutputs> for StorageActor {
    type Result = Result<(Vec<u64>, StorageStats, StorageLog), StorageError>;

    fn handle(&mut self, msg: KeepOutputs, _: &mut Self::Context) -> Self::Result {
        let sizes = self.store.keep(&msg.ids)?;
        let (stats, log) = self.store.forget_job(msg.job);
        Ok((sizes, stats, log))
    }
}

impl Handler<StoreKept> for StorageActor {
    type Result = ();

    /// Stored with next use 0 (running jobs' chunks needed later are spilled first); one
    /// an injected fault dropped is not kept, and a read reports it lost.
    fn handle(&mut self, msg: StoreKept, ctx: &mut Self::Context) {
        let outcome = self
            .store
            .put_kept(msg.id, msg.data, msg.reservation, msg.recompute);
        self.after_put(msg.id, outcome, ctx);
    }
}

impl Handler<ReadKept> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: ReadKept, _: &mut Self::Context) {
        if self.store.read_stalls() {
            self.stalled.push(msg.reply);
            return;
        }
        // The caller may have stopped waiting.
        let _ = msg.reply.send(self.store.get(&msg.ids, false));
    }
}

impl Handler<Settle> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: Settle, _: &mut Self::Context) {
        // The caller may have stopped waiting.
        let _ = msg.reply.send(());
    }
}

impl Handler<MakeRoom> for StorageActor {
    type Result = ();

    fn handle(&mut self, _: MakeRoom, _: &mut Self::Context) {
        self.store.make_room();
    }
}

impl Handler<AllowDrop> for StorageActor {
    type Result = ();

    fn handle(&mut self, msg: AllowDrop, _: &mut Self::Context) {
        self.store.allow_drop(&msg.ids, msg.recompute);
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
