//! [`LocalCluster`]: a scheduler and worker processes on 127.0.0.1, started in one call
//! and stopped when dropped, as Dask's `LocalCluster` does.
//!
//! The processes are the `tessera-scheduler` and `tessera-worker` programs (crate
//! `tessera-server`; `cargo build --bins` builds them). They are looked for in
//! `$TESSERA_BIN_DIR`, then started by the commands given to
//! [`LocalClusterBuilder::programs`] (the Python package's `python -m tessera.worker`),
//! then looked for next to the running program and one folder up (where cargo puts them
//! for tests and examples), then on `PATH`. Their logs go to files in a private folder,
//! removed with the cluster; an error at start quotes the end of the log.

use crate::accelerator::{DeviceBackend, BACKEND_VAR};
use crate::backend::CONNECT_TIMEOUT;
use crate::error::{Error, Result};
use crate::session::{Session, SessionBuilder};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tessera_cluster::{ClusterClient, ClusterInfo, Secret, SECRET_ENV};

/// How long starting a cluster may take.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A command that starts one of the cluster's programs: a program file and the arguments
/// that come before the program's own (`python3 -m tessera.worker`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    program: PathBuf,
    args: Vec<OsString>,
}

impl Launcher {
    /// `program` run with `args` before the cluster program's own arguments.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> Launcher {
        Launcher {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// A command line to which the program's own arguments are added.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        command
    }
}

impl std::fmt::Display for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

/// Settings of a [`LocalCluster`].
#[derive(Clone, Debug)]
pub struct LocalClusterBuilder {
    programs: Option<(Launcher, Launcher)>,
    workers: usize,
    threads_per_worker: Option<usize>,
    memory_limit: Option<u64>,
    gpus: Option<String>,
    backend: Option<DeviceBackend>,
    heartbeat_ttl: Duration,
    no_worker_grace: Duration,
    spill_dir: Option<PathBuf>,
    secret: Option<String>,
    metrics: bool,
    dashboard: bool,
}

impl LocalClusterBuilder {
    /// Serves the scheduler's Prometheus metrics on a free loopback port (see
    /// [`LocalCluster::metrics_address`]).
    pub fn metrics(mut self) -> Self {
        self.metrics = true;
        self
    }

    /// Serves the scheduler's live dashboard on a free loopback port (see
    /// [`LocalCluster::dashboard_address`]).
    pub fn dashboard(mut self) -> Self {
        self.dashboard = true;
        self
    }

    /// Number of worker processes (default 2).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Threads of each worker's CPU pool (default: the cores shared out, at least 1).
    pub fn threads_per_worker(mut self, n: usize) -> Self {
        self.threads_per_worker = Some(n);
        self
    }

    /// Bytes each worker holds in memory before spilling (default: no limit).
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// The GPUs each worker runs the tasks that have GPU kernels on (`tessera-worker
    /// --gpus`): `all`, `auto` (all, or none where none can be used), `none`, or ordinals
    /// such as `0,1` (default: by `$TESSERA_BACKEND`, as sessions choose: `cuda` all,
    /// `auto` auto, else none). Workers on one machine share the GPUs they name; a choice
    /// a worker cannot open fails the start, with the worker's log.
    pub fn gpus(mut self, gpus: &str) -> Self {
        self.gpus = Some(gpus.to_string());
        self
    }

    /// The backend the workers compute on, as a session's (their `$TESSERA_BACKEND`,
    /// whatever this process's is): `Cpu` opens no GPU, `Cuda` every GPU (a worker that
    /// can open none fails the start), `Auto` those that can be used. [`Self::gpus`],
    /// where also given, names the GPUs instead.
    pub fn backend(mut self, backend: DeviceBackend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// How long a silent worker may stay silent before it is lost (default 10 s).
    pub fn heartbeat_ttl(mut self, ttl: Duration) -> Self {
        self.heartbeat_ttl = ttl;
        self
    }

    /// How long running jobs wait when no worker is left (default 30 s).
    pub fn no_worker_grace(mut self, grace: Duration) -> Self {
        self.no_worker_grace = grace;
        self
    }

    /// Where workers make their spill folders (default: the cluster's private temporary
    /// folder). Each worker spills under a folder of its own there, removed when it stops.
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(dir.into());
        self
    }

    /// A shared secret that every call to the cluster must carry (default:
    /// `$TESSERA_SECRET` if set, else none: the cluster listens on loopback only).
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(secret.to_string());
        self
    }

    /// Starts the scheduler and the workers with these commands (to which their own
    /// arguments are added) rather than with the programs found next to this one or on
    /// `PATH`; `$TESSERA_BIN_DIR`, where set, still comes first. The Python package passes
    /// its interpreter's `-m tessera.scheduler` and `-m tessera.worker`, which run the
    /// servers in the extension module it was installed with.
    pub fn programs(mut self, scheduler: Launcher, worker: Launcher) -> Self {
        self.programs = Some((scheduler, worker));
        self
    }

    /// Starts the cluster, and a session on it that stops it when dropped.
    pub fn start_session(self) -> Result<Session> {
        let cluster = self.start()?;
        let session = cluster.session()?;
        session.inner.own_cluster(cluster);
        Ok(session)
    }

    /// Starts the scheduler and the workers and waits until every worker is registered.
    pub fn start(self) -> Result<LocalCluster> {
        if self.workers == 0 {
            return Err(Error::InvalidArgument(
                "a local cluster needs at least one worker".into(),
            ));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = self
            .threads_per_worker
            .unwrap_or((cores / self.workers).max(1));
        let secret = match &self.secret {
            Some(text) => Some(Secret::new(text)?),
            None => Secret::from_env()?,
        };
        let logs = tempdir()?;
        let (scheduler_program, worker) = match (self.programs, bin_dir()) {
            (Some(programs), None) => programs,
            (_, dir) => (
                find_program("tessera-scheduler", dir.as_deref())?,
                find_program("tessera-worker", dir.as_deref())?,
            ),
        };
        let log = logs.join("scheduler.log");
        let mut scheduler = scheduler_program.command();
        with_secret(&mut scheduler, secret.as_ref());
        let mut scheduler = scheduler
            .args(["--listen", "127.0.0.1:0"])
            .arg("--heartbeat-ttl-ms")
            .arg(self.heartbeat_ttl.as_millis().to_string())
            .arg("--heartbeat-interval-ms")
            .arg(
                (self.heartbeat_ttl.as_millis() / 10)
                    .clamp(10, 500)
                    .to_string(),
            )
            .arg("--no-worker-grace-s")
            .arg(self.no_worker_grace.as_secs().max(1).to_string())
            .args(
                self.metrics
                    .then_some(["--metrics", "127.0.0.1:0"])
                    .into_iter()
                    .flatten(),
            )
            .args(
                self.dashboard
                    .then_some(["--dashboard", "127.0.0.1:0"])
                    .into_iter()
                    .flatten(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file(&log)?)
            .spawn()
            .map_err(|e| start_error(&format!("{scheduler_program}: {e}"), &log))?;
        // What the scheduler prints, in its order: its address, then its web endpoints'.
        let mut expected = vec!["listening"];
        expected.extend(self.metrics.then_some("metrics"));
        expected.extend(self.dashboard.then_some("dashboard"));
        let mut addresses = match read_addresses(&mut scheduler, &expected) {
            Ok(a) => a,
            Err(e) => {
                let _ = scheduler.kill();
                let _ = scheduler.wait();
                return Err(start_error(&e, &log));
            }
        };
        let (mut dashboard_address, mut metrics_address) = (None, None);
        if self.dashboard {
            dashboard_address = addresses.pop();
        }
        if self.metrics {
            metrics_address = addresses.pop();
        }
        // `read_addresses` gives one address per expected line, the scheduler's first.
        let address = addresses.pop().unwrap_or_default();
        let mut cluster = LocalCluster {
            address,
            metrics_address,
            dashboard_address,
            scheduler,
            workers: Vec::new(),
            worker,
            threads,
            memory_limit: self.memory_limit,
            gpus: self.gpus,
            backend: self.backend,
            spill_dir: self.spill_dir,
            secret,
            logs,
            started: 0,
        };
        for _ in 0..self.workers {
            let worker = cluster.spawn_worker()?;
            cluster.workers.push(Some(worker));
        }
        cluster.wait_for_workers(self.workers)?;
        tracing::info!(address = %cluster.address, workers = self.workers, threads, "local cluster started");
        Ok(cluster)
    }
}

/// A worker process and the spill folder made for it.
#[derive(Debug)]
struct Worker {
    child: Child,
    spill: PathBuf,
}

impl Worker {
    /// Kills the process (SIGKILL) and removes what it spilled.
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.spill);
    }
}

/// A scheduler and worker processes on this machine. Dropping it stops them and removes
/// their logs and spill files.
#[derive(Debug)]
pub struct LocalCluster {
    address: String,
    metrics_address: Option<String>,
    dashboard_address: Option<String>,
    scheduler: Child,
    workers: Vec<Option<Worker>>,
    /// How a worker is started.
    worker: Launcher,
    threads: usize,
    memory_limit: Option<u64>,
    gpus: Option<String>,
    backend: Option<DeviceBackend>,
    spill_dir: Option<PathBuf>,
    secret: Option<Secret>,
    logs: PathBuf,
    started: usize,
}

impl LocalCluster {
    /// Settings for a local cluster (2 workers by default).
    pub fn builder() -> LocalClusterBuilder {
        LocalClusterBuilder {
            programs: None,
            workers: 2,
            threads_per_worker: None,
            memory_limit: None,
            gpus: None,
            backend: None,
            heartbeat_ttl: tessera_cluster::DEFAULT_HEARTBEAT_TTL,
            no_worker_grace: tessera_cluster::DEFAULT_NO_WORKER_GRACE,
            spill_dir: None,
            secret: None,
            metrics: false,
            dashboard: false,
        }
    }

    /// A scheduler and `workers` worker processes with default settings.
    pub fn start(workers: usize) -> Result<LocalCluster> {
        LocalCluster::builder().workers(workers).start()
    }

    /// The scheduler's address (`127.0.0.1:PORT`), for [`Session::connect`].
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Where the scheduler serves `GET /metrics` (`127.0.0.1:PORT`), when the cluster was
    /// built with [`LocalClusterBuilder::metrics`].
    pub fn metrics_address(&self) -> Option<&str> {
        self.metrics_address.as_deref()
    }

    /// Where the scheduler serves its live dashboard (`127.0.0.1:PORT`; the page is
    /// `http://ADDRESS/`), when the cluster was built with [`LocalClusterBuilder::dashboard`].
    pub fn dashboard_address(&self) -> Option<&str> {
        self.dashboard_address.as_deref()
    }

    /// A session on this cluster.
    pub fn session(&self) -> Result<Session> {
        self.session_builder().build()
    }

    /// A session builder aimed at this cluster, with its secret (for chunk sizes and
    /// other settings).
    pub fn session_builder(&self) -> SessionBuilder {
        let builder = Session::builder().scheduler(&self.address);
        match &self.secret {
            Some(secret) => builder.secret(secret.expose()),
            None => builder,
        }
    }

    /// The workers as the scheduler sees them now.
    pub fn info(&self) -> Result<ClusterInfo> {
        let client = ClusterClient::connect(&self.address, CONNECT_TIMEOUT, self.secret.as_ref())?;
        Ok(client.info()?)
    }

    /// The process id of worker `i`, if it runs (for signals of a drill: SIGSTOP, SIGCONT).
    pub fn worker_pid(&self, i: usize) -> Option<u32> {
        self.workers.get(i)?.as_ref().map(|w| w.child.id())
    }

    /// Worker processes running now (started and not killed).
    pub fn workers(&self) -> usize {
        self.workers.iter().filter(|w| w.is_some()).count()
    }

    /// Kills worker `i` at once (SIGKILL: it gets no chance to say goodbye), as a fault
    /// drill. False if there is no such running worker.
    pub fn kill_worker(&mut self, i: usize) -> bool {
        match self.workers.get_mut(i).and_then(Option::take) {
            Some(worker) => {
                worker.stop();
                true
            }
            None => false,
        }
    }

    /// Starts worker `i` again (a new process: a new incarnation with no chunks) and waits
    /// until the scheduler has it.
    pub fn restart_worker(&mut self, i: usize) -> Result<()> {
        if i >= self.workers.len() {
            return Err(Error::InvalidArgument(format!(
                "no worker {i}: the cluster has {}",
                self.workers.len()
            )));
        }
        self.kill_worker(i);
        let child = self.spawn_worker()?;
        self.workers[i] = Some(child);
        self.wait_for_workers(self.workers())
    }

    /// The scheduler's log and each worker's, as written so far (for diagnosing a test).
    pub fn logs(&self) -> String {
        let mut all = String::new();
        if let Ok(entries) = std::fs::read_dir(&self.logs) {
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for p in paths {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                all.push_str(&format!("==> {} <==\n{text}\n", p.display()));
            }
        }
        all
    }

    fn spawn_worker(&mut self) -> Result<Worker> {
        let n = self.started;
        self.started += 1;
        let log = self.logs.join(format!("worker-{n}.log"));
        // Its own spill parent, removed when it stops: a killed worker cannot clean up.
        let spill = self
            .spill_dir
            .clone()
            .unwrap_or_else(|| self.logs.clone())
            .join(format!("tessera-local-worker-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&spill)
            .map_err(|e| Error::Cluster(format!("cannot make {}: {e}", spill.display())))?;
        let mut command = self.worker.command();
        with_secret(&mut command, self.secret.as_ref());
        command
            .args(["--scheduler", &self.address, "--listen", "127.0.0.1:0"])
            .arg("--nthreads")
            .arg(self.threads.to_string())
            .arg("--name")
            .arg(format!("local-worker-{n}"));
        if let Some(bytes) = self.memory_limit {
            command.arg("--memory-limit").arg(bytes.to_string());
        }
        if let Some(gpus) = &self.gpus {
            command.arg("--gpus").arg(gpus);
        }
        if let Some(backend) = self.backend {
            command.env(BACKEND_VAR, backend.to_string());
        }
        command.arg("--spill-dir").arg(&spill);
        let spawned = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file(&log)?)
            .spawn();
        match spawned {
            Ok(child) => Ok(Worker { child, spill }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&spill);
                Err(start_error(&format!("{}: {e}", self.worker), &log))
            }
        }
    }

    /// Waits until `n` workers are registered.
    fn wait_for_workers(&mut self, n: usize) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let client = ClusterClient::connect(&self.address, CONNECT_TIMEOUT, self.secret.as_ref())?;
        loop {
            let info = client.info()?;
            if info.workers as usize >= n {
                return Ok(());
            }
            for (i, w) in self.workers.iter_mut().enumerate() {
                if let Some(Ok(Some(status))) = w.as_mut().map(|w| w.child.try_wait()) {
                    let log = self.logs.join(format!("worker-{i}.log"));
                    return Err(start_error(&format!("worker {i} exited ({status})"), &log));
                }
            }
            if Instant::now() > deadline {
                return Err(Error::Cluster(format!(
                    "{} of {n} workers registered within {START_TIMEOUT:?}; logs:\n{}",
                    info.workers,
                    self.logs()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for worker in self.workers.iter_mut().filter_map(Option::take) {
            worker.stop();
        }
        let _ = self.scheduler.kill();
        let _ = self.scheduler.wait();
        let _ = std::fs::remove_dir_all(&self.logs);
    }
}

impl Session {
    /// A session on the cluster whose scheduler listens at `address` (`HOST:PORT`), with
    /// default settings: it runs the same tensor, dataframe and linear-algebra jobs as a
    /// local session, on the cluster's workers.
    pub fn connect(address: &str) -> Result<Session> {
        Session::builder().scheduler(address).build()
    }

    /// A session on a [`LocalCluster`] of `workers` processes that it starts now and stops
    /// when the session is dropped.
    pub fn local_cluster(workers: usize) -> Result<Session> {
        LocalCluster::builder().workers(workers).start_session()
    }
}

/// The addresses in the scheduler's first lines of output, one `tessera-scheduler <what>
/// on ADDR` line for each of `expected` in order (`listening`, then its web endpoints).
fn read_addresses(
    scheduler: &mut Child,
    expected: &[&str],
) -> std::result::Result<Vec<String>, String> {
    let lines = expected.len();
    let stdout = scheduler
        .stdout
        .take()
        .ok_or_else(|| "the scheduler's output was not captured".to_string())?;
    let (tx, rx) = crossbeam_channel::bounded(lines);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..lines {
            let mut line = String::new();
            let read = reader.read_line(&mut line).map(|_| line);
            let _ = tx.send(read);
        }
        // Keep reading so the scheduler never blocks on a full pipe.
        let _ = std::io::copy(&mut reader.take(u64::MAX), &mut std::io::sink());
    });
    let deadline = Instant::now() + START_TIMEOUT;
    let mut addresses = Vec::with_capacity(lines);
    for what in expected {
        let wait = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(wait) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(format!("reading the scheduler's output: {e}")),
            Err(_) => {
                return Err(format!(
                    "the scheduler did not start within {START_TIMEOUT:?}"
                ))
            }
        };
        let address = line
            .trim()
            .strip_prefix(&format!("tessera-scheduler {what} on "))
            .ok_or_else(|| format!("unexpected line from the scheduler: {line:?}"))?;
        addresses.push(address.to_string());
    }
    Ok(addresses)
}

/// `$TESSERA_BIN_DIR`, where set.
fn bin_dir() -> Option<PathBuf> {
    std::env::var_os("TESSERA_BIN_DIR").map(PathBuf::from)
}

/// The program `name`: in `bin_dir`, next to this program or one folder up, or on `PATH`.
fn find_program(name: &str, bin_dir: Option<&Path>) -> Result<Launcher> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let mut dirs: Vec<PathBuf> = bin_dir.map(Path::to_path_buf).into_iter().collect();
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        let parent = exe_dir.parent().map(Path::to_path_buf);
        dirs.push(exe_dir);
        dirs.extend(parent);
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
        .map(|program| Launcher::new(program, Vec::<OsString>::new()))
        .ok_or_else(|| {
            Error::Cluster(format!(
                "cannot find the program {name}: install the Python package (`pip install \
                 tessera`, which provides it), build it with `cargo build --bins`, or set \
                 TESSERA_BIN_DIR to the folder holding it"
            ))
        })
}

/// Hands `secret` to a child through its environment (where no other user can read it),
/// or makes sure it has none.
fn with_secret(command: &mut Command, secret: Option<&Secret>) {
    match secret {
        Some(s) => command.env(SECRET_ENV, s.expose()),
        None => command.env_remove(SECRET_ENV),
    };
}

/// A new private folder for the cluster's logs.
fn tempdir() -> Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tessera-cluster-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Cluster(format!("cannot make {}: {e}", dir.display())))?;
    Ok(dir)
}

fn log_file(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| Error::Cluster(format!("cannot create {}: {e}", path.display())))
}

/// A start failure, quoting the end of the process's log.
fn start_error(what: &str, log: &Path) -> Error {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: String = text
        .lines()
        .rev()
        .take(20)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("\n");
    Error::Cluster(format!("starting the local cluster: {what}\n{tail}"))
}
