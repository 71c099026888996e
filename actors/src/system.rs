//! The entry point the runtime uses: [`ActorSystem`] runs the supervisor, planner and device
//! actors on one thread named `{prefix}-actix`, the storage actor on `{prefix}-store` (the
//! CPU pool's workers are `{prefix}-cpu{i}`, GPU `n`'s host threads `{prefix}-g{n}.{i}`),
//! takes graphs from any
//! thread and returns a [`JobHandle`] per job; shutting down (or dropping it) stops the
//! actors and joins all of those threads, with bounded waits.

use crate::faults::FaultInjector;
use crate::graph::ChunkGraph;
use crate::graph::ChunkKey;
use crate::handle::{ActorError, JobHandle};
use crate::job::JobId;
use crate::kept::{KeptChunk, KeptOwner};
use crate::memory::{HostPool, MemoryPool, Reservation};
use crate::messages::{
    AllowDrop, CancelJob, MakeRoom, ReadKept, Settle, Shutdown, StoreKept, SubmitJob,
    UnkeepRecipient,
};
use crate::planner::GraphPlannerActor;
use crate::recorder::{Recorder, DEFAULT_CAPACITY};
use crate::storage::StorageThreads;
use crate::store::{ChunkId, StorageError};
use crate::supervisor::Supervisor;
use actix::{Addr, System};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tessera_cuda::Gpu;
use tessera_kernels::ChunkData;
use thiserror::Error;

/// How long [`ActorSystem::start`] waits for the actors to come up.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`ActorSystem::shutdown`] waits for running kernels and threads to finish.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The next job's token (see [`CancelJob`]): unique within the process.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(0);

/// The job id of chunks stored outside any job ([`ActorSystem::store`]); the planner
/// numbers its jobs from 0 up and never reaches it.
pub const STORED_JOB: JobId = JobId(u64::MAX);

/// How to build an actor system.
#[derive(Clone, Debug)]
pub struct SystemConfig {
    /// Worker threads of the CPU pool (at least 1).
    pub cpu_threads: usize,
    /// Bytes of chunk data (and running tasks' outputs) the host memory tier may hold;
    /// beyond it chunks are spilled to disk and new work waits.
    pub host_memory_budget: u64,
    /// Bytes the disk tier may hold.
    pub disk_budget: u64,
    /// Where the private spill folder is made (on first spill; removed at shutdown). Starting
    /// a system removes the spill folders here whose owning process is gone.
    pub spill_dir: PathBuf,
    /// Start of every thread name; keep it to 9 bytes so `-cpu{i}` fits Linux's 15.
    pub thread_prefix: String,
    /// Faults to inject (tests and fault drills).
    pub faults: Option<Arc<FaultInjector>>,
    /// GPUs opened for this system: each gets a device actor of its own, which runs the
    /// tasks whose ops have GPU kernels; the CPU pool runs the rest. Empty: CPU only.
    pub gpus: Vec<Arc<Gpu>>,
    /// How long [`ActorSystem::read_kept`] waits for storage before it gives up
    /// ([`ReadError::TimedOut`]): a hung disk fails the read instead of its reader.
    pub read_timeout: Duration,
    /// `host_memory_budget` limits the process's resident memory, not only the chunks
    /// reserved: storage reads the resident size and lowers the reservations' budget by
    /// what the process holds beyond them, spilling and holding tasks back as needed (see
    /// the `resident` module). For a process with one actor system (a worker); the resident
    /// size counts everything in the process.
    pub limit_resident: bool,
}

/// Default [`SystemConfig::read_timeout`]: far beyond reading back gigabytes from a
/// working disk.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for SystemConfig {
    /// All cores, no GPU, no memory or disk limit, spilling under the system's temporary
    /// folder, prefix `tessera`.
    fn default() -> SystemConfig {
        SystemConfig {
            cpu_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            host_memory_budget: u64::MAX,
            disk_budget: u64::MAX,
            spill_dir: std::env::temp_dir(),
            thread_prefix: "tessera".to_string(),
            faults: None,
            gpus: Vec::new(),
            read_timeout: DEFAULT_READ_TIMEOUT,
            limit_resident: false,
        }
    }
}

/// Why [`ActorSystem::read_kept`] returned no data.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ReadError {
    /// The actor system is not running.
    #[error(transparent)]
    Stopped(#[from] ActorError),
    /// Storage does not hold a chunk, or cannot read it back.
    #[error(transparent)]
    Lost(#[from] StorageError),
    /// The planner or the storage actor went away (killed, or stopping) before storage
    /// answered.
    #[error("the actors stopped before storage answered")]
    Unanswered,
    /// Storage did not answer within [`SystemConfig::read_timeout`] (a hung disk, say).
    #[error("storage did not answer a read of kept chunks within {0:?}")]
    TimedOut(Duration),
}

/// A running set of actors on their own thread. Send + Sync.
#[derive(Debug)]
pub struct ActorSystem {
    running: Option<Running>,
    pool: Arc<HostPool>,
    recorder: Arc<Recorder>,
    /// The key of the next chunk [`ActorSystem::store`] keeps.
    next_stored: AtomicU64,
    /// See [`SystemConfig::read_timeout`].
    read_timeout: Duration,
}

#[derive(Debug)]
struct Running {
    system: System,
    supervisor: Addr<Supervisor>,
    planner: Addr<GraphPlannerActor>,
    thread: JoinHandle<()>,
    storage_threads: StorageThreads,
}

/// What the actix thread hands back once its actors are up.
type Started = (System, Addr<Supervisor>, Addr<GraphPlannerActor>);

impl ActorSystem {
    /// Starts the actix thread with the supervisor, storage, CPU pool, GPUs and planner, and
    /// returns once they are up.
    pub fn start(config: SystemConfig) -> Result<ActorSystem, ActorError> {
        if config.cpu_threads == 0 {
            return Err(ActorError::InvalidConfig(
                "cpu_threads must be at least 1".into(),
            ));
        }
        let abandoned = crate::disk::remove_abandoned(&config.spill_dir);
        if abandoned > 0 {
            tracing::info!(
                folders = abandoned,
                parent = %config.spill_dir.display(),
                "removed spill folders left by processes that are gone"
            );
        }
        let (started_tx, started_rx) = crossbeam_channel::bounded(1);
        let pool = HostPool::new(config.host_memory_budget);
        let actors_pool = Arc::clone(&pool);
        let recorder = Recorder::new(DEFAULT_CAPACITY);
        let actors_recorder = Arc::clone(&recorder);
        let storage_threads = StorageThreads::default();
        let threads = storage_threads.clone();
        let read_timeout = config.read_timeout;
        let thread = std::thread::Builder::new()
            .name(format!("{}-actix", config.thread_prefix))
            .spawn(move || run_actors(config, actors_pool, actors_recorder, threads, &started_tx))
            .map_err(|e| ActorError::StartFailed(format!("cannot spawn the actor thread: {e}")))?;
        let (system, supervisor, planner) = match started_rx.recv_timeout(START_TIMEOUT) {
            Ok(Ok(started)) => started,
            Ok(Err(reason)) => {
                let _ = thread.join();
                return Err(ActorError::StartFailed(reason));
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(ActorError::StartFailed(format!(
                    "the actors did not start within {START_TIMEOUT:?}"
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
                return Err(ActorError::StartFailed("the actor thread exited".into()));
            }
        };
        Ok(ActorSystem {
            running: Some(Running {
                system,
                supervisor,
                planner,
                thread,
                storage_threads,
            }),
            pool,
            recorder,
            next_stored: AtomicU64::new(0),
            read_timeout,
        })
    }

    /// The recorder of this system's task streams (its clock, bound and on/off switch).
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }

    /// True once the process's resident memory grew by more than 1.5× the memory limit under
    /// [`SystemConfig::limit_resident`]: more than spilling and pausing can answer (a leak),
    /// and the process should end; a worker then exits for its nanny to start it again.
    pub fn resident_exhausted(&self) -> bool {
        self.pool.exhausted()
    }

    /// Host-memory bytes reserved now: chunks held in memory or on their way to storage, and
    /// running tasks' outputs and working memory.
    pub fn reserved_bytes(&self) -> u64 {
        self.pool.used()
    }

    /// Reserves `bytes` of the host memory budget if they fit now (for work run outside
    /// the planner, as a cluster worker's tasks); released when dropped.
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        Reservation::try_new(self.pool.clone(), bytes)
    }

    /// The host memory pool, for work run outside the planner that must wait for memory as
    /// the planner does (a cluster worker's tasks: see [`ActorSystem::make_room`]).
    pub fn pool(&self) -> &Arc<HostPool> {
        &self.pool
    }

    /// Asks storage to spill ahead until `bytes` more fit in the budget, as far as spilling
    /// can (the room a task held back for memory waits for), and waits (at most
    /// [`SystemConfig::read_timeout`]) until storage has done what it can.
    pub fn make_room(&self, bytes: u64) -> Result<(), ReadError> {
        let running = self.running()?;
        self.pool.set_wanted(bytes);
        running.planner.do_send(MakeRoom);
        let made = self.settle();
        self.pool.set_wanted(0);
        made
    }

    /// Validates `graph` and submits it; the handle receives its progress and result.
    pub fn submit(&self, graph: ChunkGraph) -> Result<JobHandle, ActorError> {
        graph.validate()?;
        let running = self.running()?;
        let (events, events_rx) = crossbeam_channel::unbounded();
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        running
            .planner
            .try_send(SubmitJob {
                graph,
                events,
                token,
            })
            .map_err(|_| ActorError::Stopped("the graph planner is not running".into()))?;
        let planner = running.planner.clone();
        // A stopped planner has ended the job already.
        Ok(JobHandle::from_events_with_cancel(events_rx, move || {
            let _ = planner.try_send(CancelJob { token });
        }))
    }

    /// Keeps `data` in storage outside any job, as a job keeps its outputs (under the
    /// host memory budget, spilled when memory is short), and returns the handle on it.
    /// Does not wait: storage takes the chunk after everything sent to it before, so a
    /// later [`Self::read_kept`] or graph reading it as a [`crate::StoredInput`] finds it.
    pub fn store(&self, data: Arc<ChunkData>) -> Result<KeptChunk, ActorError> {
        self.store_with(data, None)
    }

    /// [`Self::store`] of a chunk its caller can compute again in `recompute`, where that is
    /// `Some`: storage may drop it rather than spill it from the moment it arrives (see
    /// [`Self::allow_drop`]).
    pub fn store_with(
        &self,
        data: Arc<ChunkData>,
        recompute: Option<Duration>,
    ) -> Result<KeptChunk, ActorError> {
        let running = self.running()?;
        let id = ChunkId {
            job: STORED_JOB,
            key: ChunkKey(self.next_stored.fetch_add(1, Ordering::Relaxed)),
        };
        let nbytes = data.nbytes() as u64;
        if !running.planner.connected() {
            return Err(ActorError::Stopped(
                "the graph planner is not running".into(),
            ));
        }
        // Reserved now, not when storage gets to it: a chunk queued behind a busy storage
        // thread still counts against the budget.
        let reservation = Reservation::new(self.pool.clone(), nbytes);
        // Past the mailbox's capacity (a full mailbox is no error here: the caller does
        // not wait, and storage keeps the order of what the planner forwards).
        running.planner.do_send(StoreKept {
            id,
            data,
            reservation,
            recompute,
        });
        let owner: Arc<dyn KeptOwner> =
            Arc::new(UnkeepRecipient(running.planner.clone().recipient()));
        Ok(KeptChunk::new(id, nbytes, owner))
    }

    /// Lets storage drop the kept chunks `chunks` from memory instead of spilling them,
    /// where computing one again (`recompute`) costs less than a spill and a read back:
    /// the caller can compute them again. A later [`Self::read_kept`] of one dropped fails
    /// with [`StorageError::Dropped`]. Does not wait.
    pub fn allow_drop(&self, chunks: &[&KeptChunk], recompute: Duration) -> Result<(), ActorError> {
        let running = self.running()?;
        let ids = chunks.iter().map(|c| c.id()).collect();
        running.planner.do_send(AllowDrop { ids, recompute });
        Ok(())
    }

    /// The data of kept chunks, in order (read back from disk where spilled; they stay
    /// kept). Blocks until storage answers, at most [`SystemConfig::read_timeout`]: call it
    /// off the actors' threads.
    pub fn read_kept(&self, chunks: &[&KeptChunk]) -> Result<Vec<Arc<ChunkData>>, ReadError> {
        if chunks.is_empty() {
            return Ok(Vec::new());
        }
        let running = self.running()?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        let ids = chunks.iter().map(|c| c.id()).collect();
        // Past the mailbox's capacity; a planner that stops drops the reply channel.
        running.planner.do_send(ReadKept { ids, reply });
        Ok(self.storage_answer(&answer)??)
    }

    /// Waits (at most [`SystemConfig::read_timeout`]) until storage has handled every
    /// message sent to it before this call: kept chunks whose handles this thread dropped
    /// are freed, and their memory is no longer reserved.
    pub fn settle(&self) -> Result<(), ReadError> {
        let running = self.running()?;
        let (reply, answer) = crossbeam_channel::bounded(1);
        running.planner.do_send(Settle { reply });
        self.storage_answer(&answer)
    }

    /// Storage's answer on `answer`, waited for at most [`SystemConfig::read_timeout`]; a
    /// storage actor that is gone has dropped the sender ([`ReadError::Unanswered`]).
    fn storage_answer<T>(&self, answer: &Receiver<T>) -> Result<T, ReadError> {
        answer.recv_timeout(self.read_timeout).map_err(|e| match e {
            RecvTimeoutError::Timeout => ReadError::TimedOut(self.read_timeout),
            RecvTimeoutError::Disconnected => ReadError::Unanswered,
        })
    }

    fn running(&self) -> Result<&Running, ActorError> {
        self.running
            .as_ref()
            .ok_or_else(|| ActorError::Stopped("shut down".into()))
    }

    /// Stops the actors and joins the actor and worker threads. Running kernels are
    /// waited for (up to 30 s); queued ones are dropped, and unfinished jobs end with
    /// [`JobError::SystemStopped`](crate::JobError::SystemStopped).
    pub fn shutdown(mut self) -> Result<(), ActorError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), ActorError> {
        let Some(running) = self.running.take() else {
            return Ok(());
        };
        if running.supervisor.try_send(Shutdown).is_err() {
            running.system.stop();
        }
        let deadline = Instant::now() + SHUTDOWN_TIMEOUT;
        while !running.thread.is_finished() {
            if Instant::now() >= deadline {
                return Err(ActorError::ShutdownTimedOut(SHUTDOWN_TIMEOUT));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        running
            .thread
            .join()
            .map_err(|_| ActorError::Stopped("the actor thread panicked".into()))?;
        if running.storage_threads.join(deadline) {
            Ok(())
        } else {
            Err(ActorError::ShutdownTimedOut(SHUTDOWN_TIMEOUT))
        }
    }
}

impl Drop for ActorSystem {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::error!(error = %e, "stopping the actor system");
        }
    }
}

/// The actix thread: starts the actors, reports them, runs until stopped. Every actor is
/// dropped before this returns (the CPU pool joins its workers as it drops).
fn run_actors(
    config: SystemConfig,
    pool: Arc<HostPool>,
    recorder: Arc<Recorder>,
    storage_threads: StorageThreads,
    started: &Sender<Result<Started, String>>,
) {
    let runner = System::new();
    let up = runner.block_on(async {
        let (supervisor, planner) = Supervisor::launch(config, pool, recorder, storage_threads)?;
        Ok::<_, std::io::Error>((System::current(), supervisor, planner))
    });
    match up {
        Ok(up) => {
            if started.send(Ok(up)).is_ok() {
                if let Err(e) = runner.run() {
                    tracing::error!(error = %e, "actor system");
                }
            }
        }
        Err(e) => {
            let _ = started.send(Err(format!("cannot start the device actors: {e}")));
        }
    }
}
