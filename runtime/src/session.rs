//! Sessions: the embedded actor system that runs jobs, and its configuration.

use crate::accelerator::DeviceBackend;
use crate::assemble::assemble;
use crate::backend::Backend;
use crate::cluster::LocalCluster;
use crate::dataframe::node::FrameNode;
use crate::dataframe::plan::FramePlanner;
use crate::dataframe::DataFrame;
use crate::error::{Error, Result};
use crate::kept::{is_persisted_key, restore, MAX_RESTORES};
use crate::plan::{self, grid::Grid};
use crate::progress::{JobProgress, Progress};
use crate::report::Collectors;
use crate::tensor::node::Node;
use crate::tensor::Tensor;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_actors::{
    ActorSystem, ChunkGraph, DeviceKind, FaultInjector, JobError, JobEvent, JobOutput, JobStats,
    KeptChunk, MemoryReading, SystemConfig, KEPT_OP,
};
use tessera_cluster::ClusterInfo;
#[cfg(feature = "dashboard")]
use tessera_dashboard::Server;
use tessera_dashboard::{Board, DashboardOptions};
use tessera_kernels::frame::ops::FileFormat;
use tessera_kernels::{ChunkData, HostTensor};

/// Default bytes per chunk (as float64 elements) when the user gives no chunk shape.
pub const DEFAULT_CHUNK_BYTES: usize = 32 << 20;

/// [`DEFAULT_CHUNK_BYTES`] of a session computing on GPUs: each task costs the runtime
/// a fixed ~0.3 ms, which a GPU needs large chunks to hide (pi over 1e10 points on an H200
/// took 1.33 s in 32 MiB chunks, 0.083 s in 1.6 GB ones; `docs/log/gpu.md`). A fused chunk
/// that ends in a reduction is never materialized, so its size costs no memory.
pub const DEFAULT_GPU_CHUNK_BYTES: usize = 1 << 30;

/// How a session runs jobs.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionConfig {
    /// Worker threads of the CPU pool.
    pub threads: usize,
    /// Bytes of host memory the session may hold in chunks (and running tasks' outputs);
    /// beyond it chunks spill to disk and new work waits.
    pub memory_budget: u64,
    /// The memory budget bounds the process's resident memory, not only the chunks
    /// reserved (see [`SessionBuilder::limit_resident_memory`]).
    pub limit_resident: bool,
    /// Bytes of memory the threads that run tasks have in all: the memory budget, or on
    /// a cluster its workers' memory limits together (as they were when it connected).
    /// The frame planner sizes a shuffle's merges to it.
    pub compute_memory: u64,
    /// Bytes the disk tier may hold.
    pub disk_budget: u64,
    /// Where the private spill folder is made (on the first spill; removed at shutdown).
    pub spill_dir: PathBuf,
    /// Target bytes per chunk for automatic chunking (elements counted as 8 bytes).
    pub chunk_bytes: usize,
    /// When to draw a progress bar.
    pub progress: Progress,
    /// Run every operation at once (Mars's eager mode).
    pub eager: bool,
    /// Groupby partial rows (all chunks together) above which the merge is a hash shuffle
    /// rather than a tree.
    pub shuffle_rows: usize,
    /// Estimated bytes of a join's smaller side up to which it is hashed once and
    /// broadcast to every chunk of the other side rather than both sides shuffled.
    pub broadcast_bytes: u64,
    /// The backend asked for (in code, else by `TESSERA_BACKEND`, else `Cpu`).
    pub backend: DeviceBackend,
    /// The devices the session computes on, as the logs name them: `cpu (N threads)` and
    /// each GPU's `cuda:N (name, …)`; a cluster session's are its workers'.
    pub devices: Vec<String>,
}

/// Default [`SessionConfig::shuffle_rows`]: the partials' hash parts are cut in their own
/// tasks anyway, so past what one merge takes cheaply, merging them part by part on every
/// thread beats a tree, whose root merges about every group alone (TPC-H SF10 Q21: two
/// roots of 0.2 s each with the other core idle, at the earlier default of 2^20).
pub const DEFAULT_SHUFFLE_ROWS: usize = 1 << 16;

/// Builds a [`Session`] with non-default settings.
#[derive(Clone, Debug, Default)]
pub struct SessionBuilder {
    threads: Option<usize>,
    memory_budget: Option<u64>,
    disk_budget: Option<u64>,
    spill_dir: Option<PathBuf>,
    chunk_bytes: Option<usize>,
    progress: Progress,
    eager: bool,
    faults: Option<Arc<FaultInjector>>,
    shuffle_rows: Option<usize>,
    broadcast_bytes: Option<u64>,
    scheduler: Option<String>,
    secret: Option<String>,
    task_stream: Option<usize>,
    dashboard: Option<DashboardOptions>,
    backend: Option<DeviceBackend>,
    limit_resident: bool,
}

impl SessionBuilder {
    /// Runs the session's jobs on the cluster whose scheduler listens at `address`
    /// (`HOST:PORT`) instead of in this process (see [`Session::connect`]). Threads then
    /// default to the cluster's, and the memory budget is each worker's own.
    pub fn scheduler(mut self, address: &str) -> Self {
        self.scheduler = Some(address.to_string());
        self
    }

    /// The cluster's shared secret (at least 16 visible ASCII characters), sent with every
    /// call to its scheduler and workers (default: `$TESSERA_SECRET`, if set). A cluster
    /// listening off loopback refuses calls without it.
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(secret.to_string());
        self
    }

    /// Worker threads of the CPU pool (default: the cores this process may use).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }
    /// Host memory budget in bytes (default: 70% of the memory this process may use).
    ///
    /// It bounds the chunks held in memory plus the outputs of the tasks running, reserved
    /// on estimates before they run; past it, chunks spill to disk. The process's resident
    /// memory runs above it by what the running tasks hold while they compute (their
    /// inputs, hash tables and parse buffers: a few chunks per thread) and by what the
    /// allocator keeps of freed memory; on glibc the store hands that back after spilling.
    /// [`Self::limit_resident_memory`] makes it a limit on the resident memory instead.
    /// `docs/benchmarks.md` has measured figures, `docs/guide/memory.md` the rules.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = Some(bytes);
        self
    }

    /// Makes the memory budget a limit on the process's resident memory, as a worker's
    /// `--memory-limit` is (default: off, the budget bounds reserved chunks). Storage then
    /// reads the resident size ten times a second and lowers the reservations' budget by
    /// what the process holds beyond them (allocator retention, tasks' scratch memory,
    /// whatever else the program keeps), aiming the resident size at the budget: it spills
    /// sooner, and 10% above the budget no new task starts until the process is back under
    /// that (TPC-H SF10 under 2 GB: peak RSS 1.13× the budget, not 1.55×). For a
    /// process running one session: the resident size counts everything in it.
    pub fn limit_resident_memory(mut self, on: bool) -> Self {
        self.limit_resident = on;
        self
    }
    /// Bytes the disk tier may hold (default: half the free space where it spills).
    pub fn disk_budget(mut self, bytes: u64) -> Self {
        self.disk_budget = Some(bytes);
        self
    }
    /// Folder in which the session makes its private spill folder (default: the system's
    /// temporary folder).
    pub fn spill_dir(mut self, parent: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(parent.into());
        self
    }
    /// Target bytes per automatically sized chunk (default [`DEFAULT_CHUNK_BYTES`], or
    /// [`DEFAULT_GPU_CHUNK_BYTES`] when the session computes on GPUs).
    pub fn chunk_bytes(mut self, bytes: usize) -> Self {
        self.chunk_bytes = Some(bytes);
        self
    }
    /// When to draw a progress bar (default: when stderr is a terminal).
    pub fn progress(mut self, mode: Progress) -> Self {
        self.progress = mode;
        self
    }
    /// Run every operation at once while this session lives (default: lazy).
    pub fn eager(mut self, on: bool) -> Self {
        self.eager = on;
        self
    }

    /// Groupby partial rows above which merges go through a hash shuffle (default 2^16).
    pub fn shuffle_rows(mut self, rows: usize) -> Self {
        self.shuffle_rows = Some(rows);
        self
    }

    /// Largest estimated side of a join that is hashed once and broadcast (default: a
    /// 32nd of the memory budget, on a cluster of the smallest worker's memory limit,
    /// between the chunk size and 512 MiB).
    pub fn broadcast_bytes(mut self, bytes: u64) -> Self {
        self.broadcast_bytes = Some(bytes);
        self
    }

    /// Task runs (and storage events) each job's task stream keeps at most (default
    /// 100,000); past them only per-op summaries grow, so a job of a million tasks keeps
    /// bounded memory. 0 switches the recorder off (no kernel is timed; performance reports
    /// then show the jobs' statistics only) — to measure what recording costs.
    pub fn task_stream(mut self, capacity: usize) -> Self {
        self.task_stream = Some(capacity);
        self
    }

    /// Serves a live dashboard at `address` (`HOST:PORT`, as Dask's `127.0.0.1:8787`; port
    /// 0 takes any free port, see [`Session::dashboard_address`]): a page that follows the
    /// running jobs, memory, the cluster's workers, running totals and the performance
    /// report's panels for the last jobs, and a Prometheus `/metrics` endpoint. Read-only;
    /// it listens off loopback only with [`SessionBuilder::dashboard_token`].
    pub fn dashboard(mut self, address: &str) -> Self {
        let token = self.dashboard.take().and_then(|d| d.token);
        self.dashboard = Some(DashboardOptions {
            address: address.to_string(),
            token,
        });
        self
    }

    /// The token every dashboard request must then carry (`?token=…` in the page's URL, or
    /// `Authorization: Bearer …`): letters, digits and `-._~`. Needed to serve the
    /// dashboard on an address other than loopback.
    pub fn dashboard_token(mut self, token: &str) -> Self {
        let options = self.dashboard.get_or_insert_with(|| DashboardOptions {
            address: "127.0.0.1:8787".into(),
            token: None,
        });
        options.token = Some(token.to_string());
        self
    }

    /// Where chunk tasks run (default: `$TESSERA_BACKEND` if set, else
    /// [`DeviceBackend::Cpu`]; see there why not `Auto`). With GPUs, the ops that have GPU
    /// kernels (fused elementwise expressions and their trailing reductions) run on every
    /// visible GPU and the rest on the CPU pool. `Cuda` makes [`Self::build`] fail with
    /// [`Error::GpuUnavailable`] where no GPU can be used; `Auto` then falls back to the
    /// CPU pool. On a cluster the workers' GPUs (`tessera-worker --gpus`) run those ops
    /// whatever the session's backend; `Cuda` there makes [`Self::build`] fail with
    /// [`Error::GpuUnavailable`] where no worker runs a GPU.
    pub fn backend(mut self, backend: DeviceBackend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Injects `faults` (fault drills and tests): failing or panicking kernels, killed
    /// device or storage actors, dropped chunks, damaged spill files, a full disk, fake
    /// memory readings. The job retries a failed chunk task up to 3 runs in all, restarts
    /// dead actors up to 3 times, and recomputes lost chunks from lineage.
    pub fn faults(mut self, faults: Arc<FaultInjector>) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Starts the session's actor system (or connects to its cluster).
    pub fn build(self) -> Result<Session> {
        if let Some(options) = &self.dashboard {
            if cfg!(not(feature = "dashboard")) {
                return Err(Error::InvalidArgument(
                    "this build of tessera has no live dashboard: build it with the \
                     `dashboard` feature (on by default)"
                        .into(),
                ));
            }
            tessera_dashboard::check(options)?;
        }
        let backend = match self.backend {
            Some(backend) => backend,
            None => DeviceBackend::from_env()?.unwrap_or_default(),
        };
        let cluster = match &self.scheduler {
            Some(address) => {
                if self.faults.is_some() {
                    return Err(Error::InvalidArgument(
                        "fault injection runs in local sessions only".into(),
                    ));
                }
                let secret = match &self.secret {
                    Some(text) => Some(tessera_cluster::Secret::new(text)?),
                    None => tessera_cluster::Secret::from_env()?,
                };
                let backend = Backend::connect(address, secret.as_ref())?;
                let info = match &backend {
                    Backend::Cluster { client, .. } => Some(client.info()?),
                    Backend::Local(_) => None,
                };
                Some((backend, info))
            }
            None => None,
        };
        let cluster_threads = cluster
            .as_ref()
            .and_then(|(_, info)| info.as_ref().map(|i| i.nthreads as usize))
            .filter(|&n| n > 0);
        let threads = self
            .threads
            .or(cluster_threads)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        if threads == 0 {
            return Err(Error::InvalidArgument(
                "a session needs at least one thread".into(),
            ));
        }
        let gpus = match &cluster {
            Some(_) => Vec::new(),
            None => crate::accelerator::open_gpus(backend)?,
        };
        // The GPUs of the cluster's workers, which the scheduler places GPU work on.
        let cluster_gpus: u32 = cluster
            .as_ref()
            .and_then(|(_, info)| info.as_ref())
            .map_or(0, |i| i.worker_list.iter().map(|w| w.gpus).sum());
        if let (Some((_, Some(info))), DeviceBackend::Cuda) = (&cluster, backend) {
            if cluster_gpus == 0 {
                return Err(Error::GpuUnavailable(format!(
                    "none of the cluster's {} workers runs a GPU (start them with \
                     `tessera-worker --gpus all`)",
                    info.workers
                )));
            }
        }
        let has_gpu = !gpus.is_empty() || cluster_gpus > 0;
        let default_chunk = if !has_gpu {
            DEFAULT_CHUNK_BYTES
        } else {
            DEFAULT_GPU_CHUNK_BYTES
        };
        let chunk_bytes = self.chunk_bytes.unwrap_or(default_chunk);
        if chunk_bytes < 8 {
            return Err(Error::InvalidChunks(format!(
                "chunk_bytes {chunk_bytes} is below one element"
            )));
        }
        let mut devices = vec![format!("cpu ({threads} threads)")];
        devices.extend(gpus.iter().map(|g| g.describe()));
        if cluster_gpus > 0 {
            devices.push(format!(
                "cuda ({cluster_gpus} GPUs on the cluster's workers)"
            ));
        }
        let reading = self.faults.as_ref().and_then(|f| f.memory_reading());
        let spill_dir = self.spill_dir.unwrap_or_else(std::env::temp_dir);
        let memory_budget = self
            .memory_budget
            .unwrap_or_else(|| default_memory_budget(reading));
        let cluster_memory = cluster
            .as_ref()
            .and_then(|(_, info)| info.as_ref().map(|i| i.memory_limit))
            .filter(|&bytes| bytes > 0);
        let smallest_worker = cluster
            .as_ref()
            .and_then(|(_, info)| info.as_ref())
            .and_then(|i| i.worker_list.iter().map(|w| w.memory_limit).min())
            .filter(|&bytes| bytes > 0);
        let config = SessionConfig {
            threads,
            memory_budget,
            limit_resident: self.limit_resident,
            compute_memory: cluster_memory.unwrap_or(memory_budget),
            disk_budget: self
                .disk_budget
                .unwrap_or_else(|| default_disk_budget(&spill_dir)),
            spill_dir,
            chunk_bytes,
            progress: self.progress,
            eager: self.eager,
            shuffle_rows: self.shuffle_rows.unwrap_or(DEFAULT_SHUFFLE_ROWS),
            // On a cluster every worker holds a copy of a hashed side: the smallest
            // worker's limit bounds it.
            broadcast_bytes: self.broadcast_bytes.unwrap_or_else(|| {
                let memory = smallest_worker.unwrap_or(memory_budget);
                default_broadcast_bytes(memory, chunk_bytes as u64)
            }),
            backend,
            devices,
        };
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("ts{id}");
        let system = match cluster {
            Some((backend, _)) => backend,
            None => Backend::Local(
                ActorSystem::start(SystemConfig {
                    cpu_threads: threads,
                    host_memory_budget: config.memory_budget,
                    disk_budget: config.disk_budget,
                    spill_dir: config.spill_dir.clone(),
                    thread_prefix: prefix.clone(),
                    faults: self.faults,
                    gpus,
                    limit_resident: config.limit_resident,
                    ..SystemConfig::default()
                })
                .map_err(|e| Error::Runtime(format!("starting the actor system: {e}")))?,
            ),
        };
        if let (Some(capacity), Some(recorder)) = (self.task_stream, system.recorder()) {
            recorder.set_capacity(capacity);
            recorder.set_enabled(capacity > 0);
        }
        tracing::info!(
            threads,
            backend = %backend,
            devices = ?config.devices,
            budget = config.memory_budget,
            chunk_bytes,
            eager = config.eager,
            "session started ({prefix})"
        );
        let inner = Arc::new(SessionInner {
            id,
            system: Mutex::new(Some(system)),
            cluster: Mutex::new(None),
            config,
            prefix,
            last_stats: Mutex::new(None),
            cancels: AtomicU64::new(0),
            recordings: Collectors::default(),
            board: self.dashboard.as_ref().map(|_| Arc::default()),
            #[cfg(feature = "dashboard")]
            dashboard: Mutex::new(None),
            has_gpu,
        });
        #[cfg(feature = "dashboard")]
        if let (Some(options), Some(board)) = (&self.dashboard, &inner.board) {
            let view = Arc::new(crate::live::SessionView::new(&inner));
            let server = Server::start(options, Arc::clone(board), view)?;
            if let Ok(mut d) = inner.dashboard.lock() {
                *d = Some(server);
            }
        }
        if inner.config.eager {
            crate::eager::register(&inner);
        }
        Ok(Session { inner })
    }
}

/// 70% of the host memory this process may use (the container's limit where one is set),
/// or of `reading`'s where a fault drill fakes one.
fn default_memory_budget(reading: Option<MemoryReading>) -> u64 {
    let total = reading.map_or_else(
        || {
            let mut sys = sysinfo::System::new();
            sys.refresh_memory();
            match sys.cgroup_limits() {
                Some(c) if c.total_memory > 0 => c.total_memory.min(sys.total_memory()),
                _ => sys.total_memory(),
            }
        },
        |r| r.total,
    );
    total / 10 * 7
}

/// Default [`SessionConfig::broadcast_bytes`]: a 32nd of the memory budget (on a cluster,
/// of the smallest worker's memory limit: the hashed side stays in memory while the other
/// side's chunks probe it, and each worker keeps a copy), at least a chunk and at most
/// [`MAX_DEFAULT_BROADCAST`] (one task hashes it).
fn default_broadcast_bytes(memory_budget: u64, chunk_bytes: u64) -> u64 {
    (memory_budget / 32)
        .min(MAX_DEFAULT_BROADCAST)
        .max(chunk_bytes)
}

/// The largest default [`SessionConfig::broadcast_bytes`].
const MAX_DEFAULT_BROADCAST: u64 = 512 << 20;

/// Half the free space of the disk holding `dir` (unlimited where that is unknown).
fn default_disk_budget(dir: &Path) -> u64 {
    let disks = sysinfo::Disks::new_with_refreshed_list();
    disks
        .list()
        .iter()
        .filter(|d| dir.starts_with(d.mount_point()))
        .max_by_key(|d| d.mount_point().as_os_str().len())
        .map_or(u64::MAX, |d| d.available_space() / 2)
}

/// A running Tessera: an actor system with a CPU pool, plus settings. Dropping it shuts
/// the system down and joins every thread it started.
#[derive(Debug)]
pub struct Session {
    pub(crate) inner: Arc<SessionInner>,
}

#[derive(Debug)]
pub(crate) struct SessionInner {
    /// Unique within the process (persisted data names the session holding it).
    pub(crate) id: u64,
    system: Mutex<Option<Backend>>,
    /// The local cluster the session started and stops ([`Session::local_cluster`]).
    cluster: Mutex<Option<LocalCluster>>,
    pub(crate) config: SessionConfig,
    prefix: String,
    last_stats: Mutex<Option<JobStats>>,
    /// Bumped by [`Session::cancel_jobs`]: a job submitted before sees it change and
    /// cancels itself.
    cancels: AtomicU64,
    /// Open performance reports and traces, fed every finished job.
    pub(crate) recordings: Collectors,
    /// What the live dashboard shows, when there is one.
    board: Option<Arc<Board>>,
    /// The live dashboard's server (stopped first when the session stops).
    #[cfg(feature = "dashboard")]
    dashboard: Mutex<Option<Server>>,
    /// Whether the session computes on a GPU too (a local session's opened GPUs, or a
    /// cluster's workers' when it connected).
    has_gpu: bool,
}

impl Session {
    /// A session on this machine with default settings: every core, automatic chunks.
    pub fn local() -> Result<Session> {
        SessionBuilder::default().build()
    }

    /// A builder for a session with other settings.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// The session's settings.
    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }

    /// The lazy frame of a SQL `SELECT` over `tables` (`(name, frame)` pairs): a shortcut
    /// for registering them in a [`crate::sql::SqlContext`] and calling its `sql`. Nothing
    /// runs until the frame is executed.
    pub fn sql(&self, query: &str, tables: &[(&str, &DataFrame)]) -> Result<DataFrame> {
        let mut ctx = crate::sql::SqlContext::new();
        for (name, frame) in tables {
            ctx.register(name, frame);
        }
        ctx.sql(query)
    }

    /// The prefix of the names of every thread this session started.
    pub fn thread_prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Computes `t` and returns its values.
    pub fn execute(&self, t: &Tensor) -> Result<HostTensor> {
        self.execute_with_stats(t).map(|(values, _)| values)
    }

    /// Computes `t` and returns its values with the job's statistics.
    pub fn execute_with_stats(&self, t: &Tensor) -> Result<(HostTensor, JobStats)> {
        let node = t.node()?;
        let (grid, chunks, stats) = self.inner.run(node)?;
        Ok((assemble(&node.shape, node.dtype, &grid, chunks)?, stats))
    }

    /// Runs the chunk graph `plan` makes from the tensors `reads` (a job whose result shape
    /// depends on the data, such as `unique`, or that is not a tensor, such as nearest
    /// neighbours) and returns its output chunks; persisted data it reads is computed again
    /// where lost, as for every job.
    pub(crate) fn run_chunk_graph(
        &self,
        reads: &[&Arc<Node>],
        plan: impl Fn() -> Result<ChunkGraph>,
    ) -> Result<Vec<Arc<ChunkData>>> {
        let inner = &self.inner;
        let restore = |all: bool| {
            reads
                .iter()
                .try_for_each(|node| inner.restore_tensors(node, all))
        };
        restore(false)?;
        inner.with_restores(
            || {
                let (chunks, stats) = inner.run_graph(plan()?)?;
                inner.record(&stats);
                Ok(chunks)
            },
            |_| restore(true),
        )
    }

    /// Runs a frame's jobs and returns its chunks as tables, with the stages' statistics.
    pub(crate) fn run_frame(
        &self,
        node: &Arc<FrameNode>,
    ) -> Result<(Vec<arrow::array::RecordBatch>, JobStats)> {
        self.inner.frame_job(node, |planner| planner.execute(node))
    }

    /// Runs a frame's jobs keeping its chunks in the session's storage; returns handles on
    /// them with the stages' statistics.
    pub(crate) fn persist_frame(
        &self,
        node: &Arc<FrameNode>,
    ) -> Result<(Vec<Arc<KeptChunk>>, JobStats)> {
        self.inner.frame_job(node, |planner| planner.persist(node))
    }

    /// Writes a frame's chunks to one file each (in parallel) and returns the rows written.
    pub(crate) fn write_frame(
        &self,
        node: &Arc<FrameNode>,
        path: &std::path::Path,
        format: FileFormat,
    ) -> Result<usize> {
        let (rows, _) = self
            .inner
            .frame_job(node, |planner| planner.write(node, path, format))?;
        Ok(rows)
    }

    /// Host-memory bytes the session holds reserved now (chunks kept in memory and running
    /// tasks' outputs); 0 when no job runs.
    pub fn reserved_bytes(&self) -> u64 {
        self.inner.reserved_bytes()
    }

    /// The cluster's workers now, as its scheduler sees them (as Dask's
    /// `Client.scheduler_info()`); `None` for a session in this process.
    pub fn cluster_info(&self) -> Result<Option<ClusterInfo>> {
        self.inner.cluster_info()
    }

    /// The address the live dashboard listens at (`None` without
    /// [`SessionBuilder::dashboard`]); its page is `http://ADDRESS/`, its metrics
    /// `http://ADDRESS/metrics`.
    pub fn dashboard_address(&self) -> Option<SocketAddr> {
        #[cfg(feature = "dashboard")]
        return self
            .inner
            .dashboard
            .lock()
            .ok()
            .and_then(|d| d.as_ref().map(Server::address));
        #[cfg(not(feature = "dashboard"))]
        None
    }

    /// Statistics of the last job this session finished.
    pub fn last_job_stats(&self) -> Option<JobStats> {
        self.inner.last_stats.lock().ok().and_then(|s| s.clone())
    }

    /// Cancels every job this session is running now, from any thread (Ctrl-C in a
    /// front end): each ends within about 100 ms with an error saying "cancelled" (tasks
    /// already running finish unheeded), and the session runs later jobs as usual. On a
    /// cluster the client drops the job's event stream and the scheduler cancels the job
    /// on every worker.
    pub fn cancel_jobs(&self) {
        self.inner.cancels.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops the actor system and joins its threads (dropping the session does the same).
    pub fn shutdown(self) -> Result<()> {
        self.inner.stop()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.inner.stop() {
            tracing::warn!("session shutdown: {e}");
        }
    }
}

impl SessionInner {
    /// What tiling a tensor job takes from this session.
    pub(crate) fn tile_settings(&self) -> crate::plan::TileSettings {
        crate::plan::TileSettings {
            chunk_bytes: self.config.chunk_bytes,
            memory_budget: self.config.memory_budget,
            gpu_products: self.has_gpu,
        }
    }

    pub(crate) fn reserved_bytes(&self) -> u64 {
        self.system
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(Backend::reserved_bytes))
            .unwrap_or(0)
    }

    /// Waits until storage has freed the kept chunks given up before this call
    /// ([`Backend::settle`]). A storage that does not answer is logged: the caller's result
    /// stands.
    fn settle(&self) {
        let Ok(system) = self.system.lock() else {
            return;
        };
        if let Some(Err(e)) = system.as_ref().map(Backend::settle) {
            tracing::warn!("{e}");
        }
    }

    pub(crate) fn cluster_info(&self) -> Result<Option<ClusterInfo>> {
        let system = self
            .system
            .lock()
            .map_err(|_| Error::Runtime("session lock poisoned".into()))?;
        match system.as_ref() {
            Some(Backend::Cluster { client, .. }) => Ok(Some(client.info()?)),
            Some(Backend::Local(_)) => Ok(None),
            None => Err(Error::Runtime("the session is shut down".into())),
        }
    }

    /// Tiles `node`, runs the job and returns its output chunks on their grid.
    pub(crate) fn run(&self, node: &Arc<Node>) -> Result<(Grid, Vec<Arc<ChunkData>>, JobStats)> {
        let (grid, output) = self.run_tiled(node, false)?;
        let chunks = output.outputs.into_iter().map(|(_, c)| c).collect();
        Ok((grid, chunks, output.stats))
    }

    /// Tiles `node` and runs the job keeping its chunks in this session's storage (Dask's
    /// `persist`); returns handles on them, on their grid.
    pub(crate) fn persist(
        &self,
        node: &Arc<Node>,
    ) -> Result<(Grid, Vec<Arc<KeptChunk>>, JobStats)> {
        let (grid, output) = self.run_tiled(node, true)?;
        Ok((grid, output.kept, output.stats))
    }

    /// Runs `node`'s job (keeping its outputs in storage with `keep`). Persisted data it
    /// reads that another session holds, or that storage lost, is computed again first.
    fn run_tiled(&self, node: &Arc<Node>, keep: bool) -> Result<(Grid, JobOutput)> {
        self.restore_tensors(node, false)?;
        self.with_restores(
            || {
                let tiled = plan::tile(node, self.tile_settings())?;
                let span = tracing::info_span!("job", tasks = tiled.graph.tasks.len(), shape = ?node.shape);
                let _enter = span.enter();
                let mut graph = tiled.graph;
                graph.keep_outputs = keep;
                let _holds = tiled.holds;
                let mut output = self.run_graph_output(graph)?;
                output.stats.chunks_recomputed += tiled.recomputed;
                self.record(&output.stats);
                Ok((tiled.grid, output))
            },
            |_| self.restore_tensors(node, true),
        )
    }

    /// Computes again the persisted tensors `node` reads (directly, not through other
    /// persisted data): all of them with `all`, else those another session holds.
    pub(crate) fn restore_tensors(&self, node: &Arc<Node>, all: bool) -> Result<()> {
        restore(node, self.id, all, |n| Ok(self.persist(n)?.1))
    }

    /// Runs `job`; when it fails because storage lost a kept chunk it reads (key `key` in
    /// its graph), has `restore(key)` compute that data again and runs `job` again, up to
    /// [`MAX_RESTORES`] times.
    pub(crate) fn with_restores<T>(
        &self,
        mut job: impl FnMut() -> Result<T>,
        mut restore: impl FnMut(u64) -> Result<()>,
    ) -> Result<T> {
        let mut restores = 0;
        loop {
            match job() {
                Err(Error::ChunkLost { key, op, cause, .. })
                    if op == KEPT_OP && restores < MAX_RESTORES =>
                {
                    restores += 1;
                    tracing::warn!(%cause, restores, "kept data lost; computing it again");
                    restore(key)?;
                }
                result => return result,
            }
        }
    }

    /// Runs the frame job `run` over `node` with a fresh planner and returns its result with
    /// the stages' statistics; persisted frames it reads are computed again where another
    /// session holds them or storage lost them. When storage lost a chunk that one stage
    /// handed on to the next, the job runs again from its start (bounded with the rest); the
    /// statistics then count the failed attempts' work and losses too, and the lost chunk
    /// as computed again.
    pub(crate) fn frame_job<T>(
        &self,
        node: &Arc<FrameNode>,
        run: impl Fn(&mut FramePlanner) -> Result<T>,
    ) -> Result<(T, JobStats)> {
        self.restore_frames(node, false)?;
        let mut attempts = JobStats::default();
        self.with_restores(
            || {
                let mut planner = FramePlanner::new(self);
                let result = run(&mut planner);
                let stats = std::mem::take(&mut planner.stats);
                let failed = planner.failed.take();
                // The chunks handed on that no stage has freed yet are given up with the
                // planner: the job returns once storage has freed them.
                drop(planner);
                self.settle();
                match result {
                    Ok(result) => {
                        let mut all = std::mem::take(&mut attempts);
                        all.absorb(&stats);
                        all.failure = None;
                        self.record(&all);
                        Ok((result, all))
                    }
                    Err(e) => {
                        // A report shows the whole job: the stages that ran, then the one
                        // that failed.
                        let mut all = stats;
                        if let Some(failed) = failed {
                            all.absorb(&failed);
                            self.recordings.job_ended(&all);
                        }
                        attempts.absorb(&all);
                        if matches!(e, Error::ChunkLost { .. }) {
                            // The run again computes the lost chunk again.
                            attempts.chunks_recomputed += 1;
                        }
                        Err(e)
                    }
                }
            },
            |key| match is_persisted_key(key) {
                true => self.restore_frames(node, true),
                false => Ok(()),
            },
        )
    }

    /// Computes again the persisted frames `node` reads (directly, not through other
    /// persisted data): all of them with `all`, else those another session holds.
    fn restore_frames(&self, node: &Arc<FrameNode>, all: bool) -> Result<()> {
        restore(node, self.id, all, |n| {
            Ok(self.frame_job(n, |planner| planner.persist(n))?.0)
        })
    }

    /// Runs a chunk graph and returns its output chunks (in `graph.outputs` order).
    pub(crate) fn run_graph(&self, graph: ChunkGraph) -> Result<(Vec<Arc<ChunkData>>, JobStats)> {
        let output = self.run_graph_output(graph)?;
        let chunks = output.outputs.into_iter().map(|(_, c)| c).collect();
        Ok((chunks, output.stats))
    }

    /// Runs a chunk graph and returns what its job delivered; a failed job's statistics
    /// go into open performance reports.
    pub(crate) fn run_graph_output(&self, graph: ChunkGraph) -> Result<JobOutput> {
        let mut failed = None;
        let result = self.run_stage(graph, &mut failed);
        if let Some(stats) = failed {
            self.recordings.job_ended(&stats);
        }
        result
    }

    /// Runs a chunk graph as one stage of a job and returns what it delivered; if it
    /// fails, its statistics (with its task stream) are left in `failed`, for the caller
    /// to report with the stages before.
    pub(crate) fn run_stage(
        &self,
        graph: ChunkGraph,
        failed: &mut Option<JobStats>,
    ) -> Result<JobOutput> {
        if !self.has_gpu
            && graph
                .tasks
                .iter()
                .any(|t| t.device == Some(DeviceKind::Cuda))
        {
            return Err(Error::GpuUnavailable(
                "a tensor of this job asks for it (Tensor::to_backend), but this session computes \
                 on the CPU only (its backend is cpu, or auto without a usable GPU, or it runs on \
                 a cluster whose workers run none)"
                    .into(),
            ));
        }
        let cancels = self.cancels.load(Ordering::Relaxed);
        let handle = {
            let system = self
                .system
                .lock()
                .map_err(|_| Error::Runtime("session lock poisoned".into()))?;
            let system = system
                .as_ref()
                .ok_or_else(|| Error::Runtime("the session was shut down".into()))?;
            system.submit(graph)?
        };
        let mut progress = JobProgress::new(self.config.progress);
        let run = self.board.as_ref().map(|b| b.run_started());
        let mut cancelled = false;
        let result = loop {
            match handle.recv_event(Duration::from_millis(100)) {
                Ok(Some(JobEvent::Progress { done, total })) => {
                    progress.update(done, total);
                    if let (Some(board), Some(run)) = (&self.board, run) {
                        board.progress(run, done, total);
                    }
                }
                Ok(Some(JobEvent::FailedStats(stats))) => *failed = Some(*stats),
                Ok(Some(JobEvent::Finished(r))) => break r,
                Ok(None) => {}
                Err(e) => break Err(JobError::SystemStopped(e.to_string())),
            }
            if !cancelled && self.cancels.load(Ordering::Relaxed) != cancels {
                tracing::info!("job cancelled by the session's owner");
                handle.cancel();
                cancelled = true;
            }
        };
        progress.finish();
        if let (Some(board), Some(run)) = (&self.board, run) {
            board.run_ended(run, result.is_err());
        }
        let output = result.map_err(|e| match e {
            JobError::ChunkFailed { key, op, source } => Error::ChunkFailed {
                key: key.0,
                op,
                cause: source,
            },
            JobError::ChunkLost {
                key,
                op,
                losses,
                cause,
            } => Error::ChunkLost {
                key: key.0,
                op,
                losses,
                cause,
            },
            JobError::ActorLost { actor, restarts } => Error::ActorLost { actor, restarts },
            JobError::OutOfMemory(oom) => Error::OutOfMemory(oom),
            other => Error::Runtime(other.to_string()),
        })?;
        tracing::info!(chunks = output.stats.chunks_run, bytes = output.stats.bytes_produced, wall = ?output.stats.wall_time, "job finished");
        Ok(output)
    }

    /// Keeps `stats` as the statistics of the last job, and hands them to open recordings.
    pub(crate) fn record(&self, stats: &JobStats) {
        self.recordings.job_ended(stats);
        if let Some(board) = &self.board {
            board.job_finished(stats);
        }
        if let Ok(mut s) = self.last_stats.lock() {
            *s = Some(stats.clone());
        }
    }

    /// True once the session has been shut down.
    pub(crate) fn is_stopped(&self) -> bool {
        self.system.lock().map_or(true, |s| s.is_none())
    }

    fn stop(&self) -> Result<()> {
        // The dashboard first: its renders read the session.
        #[cfg(feature = "dashboard")]
        drop(self.dashboard.lock().ok().and_then(|mut d| d.take()));
        crate::eager::unregister(self);
        let system = self
            .system
            .lock()
            .map_err(|_| Error::Runtime("session lock poisoned".into()))?
            .take();
        let stopped = match system {
            Some(s) => s.shutdown(),
            None => Ok(()),
        };
        let cluster = self.cluster.lock().ok().and_then(|mut c| c.take());
        drop(cluster);
        stopped
    }

    /// Makes the session stop `cluster` when it stops.
    pub(crate) fn own_cluster(&self, cluster: LocalCluster) {
        if let Ok(mut c) = self.cluster.lock() {
            *c = Some(cluster);
        }
    }
}

#[cfg(all(test, not(feature = "dashboard")))]
mod tests {
    use super::*;

    #[test]
    fn without_the_dashboard_feature_a_dashboard_is_a_typed_error() {
        let built = Session::builder()
            .threads(1)
            .dashboard("127.0.0.1:0")
            .build();
        match built {
            Err(Error::InvalidArgument(why)) => assert!(why.contains("dashboard"), "{why}"),
            Err(other) => panic!("another error: {other}"),
            Ok(_) => panic!("a session without a dashboard server served one"),
        }
    }
}
