//! `tessera._tessera.Session`: a Tessera session, and running its jobs from Python.
//!
//! A job runs on a thread of its own while the calling thread waits without the GIL,
//! waking every few milliseconds to let Python handle signals: Ctrl-C raises
//! `KeyboardInterrupt` at once and cancels the session's running jobs
//! ([`Session::cancel_jobs`]), which end within about 100 ms; the session stays usable.

use crate::errors::{raise, to_py};
use crate::frame::PyFrame;
use crate::logging;
use crossbeam_channel::{bounded, RecvTimeoutError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera::{DeviceBackend, Launcher, LocalCluster, Progress, Session};

/// How often a waiting job checks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// Runs `job` on its own thread, waiting without the GIL; `KeyboardInterrupt` (or any
/// exception a signal handler raises) ends the wait at once and cancels the jobs of
/// `session` (the session the job runs on; `None` while one is being built).
pub(crate) fn run_job<T: Send + 'static>(
    py: Python<'_>,
    session: Option<Arc<Session>>,
    job: impl FnOnce() -> tessera::Result<T> + Send + 'static,
) -> PyResult<T> {
    logging::follow_level(py)?;
    let (tx, rx) = bounded(1);
    std::thread::Builder::new()
        .name("tessera-py-job".into())
        .spawn(move || {
            // The receiver is gone when the caller was interrupted: nothing to tell.
            let _ = tx.send(job());
        })
        .map_err(|e| raise("ComputeError", format!("cannot start a job thread: {e}")))?;
    loop {
        let received = py.detach(|| rx.recv_timeout(SIGNAL_POLL));
        logging::deliver(py)?;
        match received {
            Ok(result) => return result.map_err(to_py),
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    tracing::info!("job interrupted ({e}); cancelling it");
                    if let Some(session) = session {
                        session.cancel_jobs();
                    }
                    return Err(e);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(raise(
                    "ComputeError",
                    "the job's thread ended without a result (it panicked)".into(),
                ))
            }
        }
    }
}

/// A Tessera session: an actor system with a CPU pool (or a connection to a cluster)
/// that computes arrays and frames.
#[pyclass(name = "Session", module = "tessera._tessera", frozen)]
pub struct PySession {
    session: Mutex<Option<Arc<Session>>>,
}

impl PySession {
    /// The running session, or `ComputeError` once it was closed.
    pub(crate) fn get(&self) -> PyResult<Arc<Session>> {
        self.session
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .ok_or_else(|| raise("ComputeError", "the session is closed".into()))
    }

    fn wrap(session: Session) -> PySession {
        PySession {
            session: Mutex::new(Some(Arc::new(session))),
        }
    }
}

/// The `progress=` spelling as the Rust mode.
fn progress_mode(progress: Option<bool>) -> Progress {
    match progress {
        None => Progress::Auto,
        Some(true) => Progress::Always,
        Some(false) => Progress::Never,
    }
}

#[pymethods]
impl PySession {
    /// Starts a session on this machine (or, with `scheduler="HOST:PORT"`, connects to a
    /// cluster). Every option left as `None` keeps the Rust builder's default.
    #[new]
    #[pyo3(signature = (*, threads=None, memory_budget=None, disk_budget=None, spill_dir=None,
        chunk_bytes=None, eager=false, progress=None, shuffle_rows=None, broadcast_bytes=None,
        scheduler=None, secret=None, dashboard=None, dashboard_token=None, backend=None,
        limit_resident_memory=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        threads: Option<usize>,
        memory_budget: Option<u64>,
        disk_budget: Option<u64>,
        spill_dir: Option<PathBuf>,
        chunk_bytes: Option<usize>,
        eager: bool,
        progress: Option<bool>,
        shuffle_rows: Option<usize>,
        broadcast_bytes: Option<u64>,
        scheduler: Option<String>,
        secret: Option<String>,
        dashboard: Option<String>,
        dashboard_token: Option<String>,
        backend: Option<String>,
        limit_resident_memory: bool,
    ) -> PyResult<PySession> {
        let mut b = Session::builder()
            .limit_resident_memory(limit_resident_memory)
            .eager(eager)
            .progress(progress_mode(progress));
        if let Some(n) = threads {
            b = b.threads(n);
        }
        if let Some(n) = memory_budget {
            b = b.memory_budget(n);
        }
        if let Some(n) = disk_budget {
            b = b.disk_budget(n);
        }
        if let Some(dir) = spill_dir {
            b = b.spill_dir(dir);
        }
        if let Some(n) = chunk_bytes {
            b = b.chunk_bytes(n);
        }
        if let Some(n) = shuffle_rows {
            b = b.shuffle_rows(n);
        }
        if let Some(n) = broadcast_bytes {
            b = b.broadcast_bytes(n);
        }
        if let Some(address) = scheduler {
            b = b.scheduler(&address);
        }
        if let Some(secret) = secret {
            b = b.secret(&secret);
        }
        if let Some(address) = dashboard {
            b = b.dashboard(&address);
        }
        if let Some(token) = dashboard_token {
            b = b.dashboard_token(&token);
        }
        if let Some(name) = backend {
            b = b.backend(name.parse::<DeviceBackend>().map_err(|e| to_py(e.into()))?);
        }
        run_job(py, None, move || b.build()).map(PySession::wrap)
    }

    /// A session on a local cluster of `workers` processes, started now and stopped when
    /// the session closes. With `python` (an interpreter with this package), the scheduler
    /// and workers are started as `python -m tessera.scheduler` / `-m tessera.worker`
    /// unless `$TESSERA_BIN_DIR` names the programs' folder.
    #[staticmethod]
    #[pyo3(signature = (workers, threads_per_worker=None, memory_limit=None, gpus=None, python=None))]
    fn local_cluster(
        py: Python<'_>,
        workers: usize,
        threads_per_worker: Option<usize>,
        memory_limit: Option<u64>,
        gpus: Option<String>,
        python: Option<PathBuf>,
    ) -> PyResult<PySession> {
        let mut b = LocalCluster::builder().workers(workers);
        if let Some(n) = threads_per_worker {
            b = b.threads_per_worker(n);
        }
        if let Some(bytes) = memory_limit {
            b = b.memory_limit(bytes);
        }
        if let Some(gpus) = gpus {
            b = b.gpus(&gpus);
        }
        if let Some(python) = python {
            let module = |name: &str| Launcher::new(&python, ["-m", name]);
            b = b.programs(module("tessera.scheduler"), module("tessera.worker"));
        }
        run_job(py, None, move || b.start_session()).map(PySession::wrap)
    }

    /// The session's settings as a dict.
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let session = self.get()?;
        let c = session.config();
        let d = PyDict::new(py);
        d.set_item("threads", c.threads)?;
        d.set_item("memory_budget", c.memory_budget)?;
        d.set_item("limit_resident_memory", c.limit_resident)?;
        d.set_item("disk_budget", c.disk_budget)?;
        d.set_item("spill_dir", c.spill_dir.clone())?;
        d.set_item("chunk_bytes", c.chunk_bytes)?;
        d.set_item("eager", c.eager)?;
        d.set_item("shuffle_rows", c.shuffle_rows)?;
        d.set_item("broadcast_bytes", c.broadcast_bytes)?;
        d.set_item("backend", c.backend.to_string())?;
        d.set_item("devices", c.devices.clone())?;
        Ok(d)
    }

    /// The live dashboard's page, `http://HOST:PORT/` (Dask's `Client.dashboard_link`),
    /// or `None` without one.
    #[getter]
    fn dashboard_link(&self) -> PyResult<Option<String>> {
        Ok(self
            .get()?
            .dashboard_address()
            .map(|a| format!("http://{a}/")))
    }

    /// Host-memory bytes the session holds reserved now.
    fn reserved_bytes(&self) -> PyResult<u64> {
        Ok(self.get()?.reserved_bytes())
    }

    /// The lazy frame of a SQL `SELECT` over `tables` (`(name, frame)` pairs); the
    /// translation runs nothing.
    fn sql(&self, query: &str, tables: Vec<(String, PyRef<'_, PyFrame>)>) -> PyResult<PyFrame> {
        let session = self.get()?;
        let named: Vec<(&str, &tessera::dataframe::DataFrame)> = tables
            .iter()
            .map(|(name, frame)| (name.as_str(), frame.frame()))
            .collect();
        PyFrame::wrap(session.sql(query, &named).map_err(to_py)?)
    }

    /// The cluster's workers as its scheduler sees them (a dict: `workers`, `nthreads`,
    /// `memory_limit`, `worker_list` of dicts), or None for a session in this process.
    fn cluster_info<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let session = self.get()?;
        let Some(info) = run_job(py, None, move || session.cluster_info())? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("workers", info.workers)?;
        d.set_item("nthreads", info.nthreads)?;
        d.set_item("memory_limit", info.memory_limit)?;
        let workers = info
            .worker_list
            .iter()
            .map(|w| {
                let x = PyDict::new(py);
                x.set_item("name", &w.name)?;
                x.set_item("address", &w.flight_address)?;
                x.set_item("incarnation", w.incarnation)?;
                x.set_item("nthreads", w.nthreads)?;
                x.set_item("memory_limit", w.memory_limit)?;
                x.set_item("chunks_held", w.chunks_held)?;
                x.set_item("gpus", w.gpus)?;
                Ok(x)
            })
            .collect::<PyResult<Vec<_>>>()?;
        d.set_item("worker_list", workers)?;
        Ok(Some(d))
    }

    /// True once `close` ran.
    #[getter]
    fn closed(&self) -> bool {
        self.session.lock().map(|s| s.is_none()).unwrap_or(true)
    }

    /// Stops the actor system (waiting, without the GIL, for its threads); later calls
    /// do nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.session.lock().ok().and_then(|mut s| s.take());
        if let Some(session) = taken {
            // A job cancelled by Ctrl-C may still hold the session for a moment; it then
            // shuts down when that job's thread drops it.
            if let Ok(session) = Arc::try_unwrap(session) {
                run_job(py, None, move || session.shutdown())?;
            }
        }
        Ok(())
    }
}
