//! What a dashboard shows: the [`Board`] its program feeds (a few counters behind one
//! short lock, touched at a job's start, at its progress events, about every 100 ms, and
//! at its end), the [`View`] of what only the program knows, and the options that say
//! where it listens and who may read it. The server thread only reads them. A page that
//! disconnects or never reads costs its own connection task, never a job. The server binds
//! to loopback unless given a token, and then every request must carry it (`?token=…` or
//! `Authorization: Bearer …`).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;
use tessera_core::{Exposition, JobStats, Totals};

/// Why a dashboard cannot start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DashboardError {
    /// The options are wrong (an address that does not parse or cannot be bound, a
    /// token, or no token off loopback).
    #[error("{0}")]
    Options(String),
    /// The server could not start (binding the address, its thread).
    #[error("the dashboard cannot start: {0}")]
    Start(String),
}

/// Finished jobs whose panels the dashboard shows.
const LAST_JOBS: usize = 5;

/// Where the dashboard listens and who may read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DashboardOptions {
    /// `HOST:PORT` to listen at (port 0: any free port; [`crate::Server::address`] says
    /// which).
    pub address: String,
    /// The token every request must carry; required to listen on a non-loopback address.
    pub token: Option<String>,
}

/// A job the program is running.
#[derive(Clone, Debug)]
struct Running {
    started: Instant,
    done: u64,
    total: u64,
}

#[derive(Debug, Default)]
struct State {
    next_run: u64,
    running: BTreeMap<u64, Running>,
    totals: Totals,
    last_jobs: VecDeque<JobStats>,
    /// Bumped with every finished job, so pages redraw the report panels only then.
    version: u64,
}

/// What a program tells its dashboard as its jobs run.
#[derive(Debug, Default)]
pub struct Board {
    state: Mutex<State>,
}

impl Board {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a page render panicked: the counters are still whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A graph run starts; returns its id for [`Board::progress`] and [`Board::run_ended`].
    pub fn run_started(&self) -> u64 {
        let mut s = self.state();
        s.next_run += 1;
        let id = s.next_run;
        s.running.insert(
            id,
            Running {
                started: Instant::now(),
                done: 0,
                total: 0,
            },
        );
        id
    }

    /// `done` of `total` chunk tasks of run `id` have finished.
    pub fn progress(&self, id: u64, done: u64, total: u64) {
        if let Some(r) = self.state().running.get_mut(&id) {
            r.done = done;
            r.total = total;
        }
    }

    /// Run `id` ended; `failed` when it gave an error.
    pub fn run_ended(&self, id: u64, failed: bool) {
        let mut s = self.state();
        s.running.remove(&id);
        if failed {
            s.totals.jobs_failed += 1;
        }
    }

    /// A user's job finished with `stats` (all its stages).
    pub fn job_finished(&self, stats: &JobStats) {
        let mut s = self.state();
        s.totals.add(stats);
        if s.last_jobs.len() == LAST_JOBS {
            s.last_jobs.pop_front();
        }
        s.last_jobs.push_back(stats.clone());
        s.version += 1;
    }

    /// The running totals.
    pub fn totals(&self) -> Totals {
        self.state().totals.clone()
    }

    /// Running jobs as `(id, seconds running, done, total)`, oldest first.
    pub(crate) fn running(&self) -> Vec<(u64, f64, u64, u64)> {
        self.state()
            .running
            .iter()
            .map(|(&id, r)| (id, r.started.elapsed().as_secs_f64(), r.done, r.total))
            .collect()
    }

    /// The version of the last jobs: bumped with every finished job.
    #[cfg(feature = "server")]
    pub(crate) fn version(&self) -> u64 {
        self.state().version
    }

    /// The last finished jobs and the version they are at.
    #[cfg(feature = "server")]
    pub(crate) fn last_jobs(&self) -> (u64, Vec<JobStats>) {
        let s = self.state();
        (s.version, s.last_jobs.iter().cloned().collect())
    }
}

/// One worker of a cluster, as the dashboard lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerRow {
    /// The worker's name.
    pub name: String,
    /// Where it serves its chunks.
    pub address: String,
    /// Its task threads.
    pub threads: u32,
    /// Its GPUs (`tessera-worker --gpus`), each run beside its CPU pool.
    pub gpus: u32,
    /// Tasks it runs now.
    pub tasks_running: u32,
    /// Chunks it holds.
    pub chunks_held: u64,
    /// Bytes its storage reserves.
    pub memory_used: u64,
    /// Its memory limit.
    pub memory_limit: u64,
}

/// What the server reads from its program besides the board (the program may be gone:
/// then zeros and nothing).
pub trait View: Send + Sync {
    /// Memory reserved now and the budget (a cluster: over its workers).
    fn memory(&self) -> (u64, u64);
    /// The cluster's workers; `None` where the jobs run in this process.
    fn workers(&self) -> Option<Vec<WorkerRow>>;
    /// Adds what only this program knows to the `/metrics` text, after the board's totals
    /// and running jobs.
    fn metrics(&self, exposition: &mut Exposition);
}

/// The Prometheus text exposition of the board's totals and running jobs, then what
/// `program` adds (a [`View`]'s own metrics).
pub fn metrics_text(board: &Board, program: impl FnOnce(&mut Exposition)) -> String {
    let mut e = Exposition::new();
    e.totals(&board.totals());
    e.jobs_running(board.running().len());
    program(&mut e);
    e.finish()
}

/// Checks `options` before anything listens: the address parses, and a non-loopback one
/// has a token ([`check_access`]).
pub fn check(options: &DashboardOptions) -> Result<SocketAddr, DashboardError> {
    let address: SocketAddr = options.address.parse().map_err(|e| {
        DashboardError::Options(format!(
            "dashboard address {:?} is not HOST:PORT with an IP host: {e}",
            options.address
        ))
    })?;
    check_access(address, options.token.as_deref())?;
    Ok(address)
}

/// Checks that a dashboard at `address` may serve with `token`: a token travels in URLs
/// (letters, digits and `- . _ ~` only), and off loopback there must be one.
pub fn check_access(address: SocketAddr, token: Option<&str>) -> Result<(), DashboardError> {
    match token {
        Some(token) => {
            let unreserved = |c: char| c.is_ascii_alphanumeric() || "-._~".contains(c);
            if token.is_empty() || !token.chars().all(unreserved) {
                return Err(DashboardError::Options(
                    "a dashboard token must be non-empty and only letters, digits and - . _ ~ \
                     (it travels in URLs)"
                        .into(),
                ));
            }
        }
        None if !address.ip().is_loopback() => {
            return Err(DashboardError::Options(format!(
                "the dashboard listens on {address}, off loopback, only with a token \
                 (a session's dashboard_token, a scheduler's shared secret)"
            )));
        }
        None => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_jobs_add_to_the_totals_and_the_last_ones_are_kept() {
        let board = Board::default();
        let a = JobStats {
            chunks_run: 7,
            ..JobStats::default()
        };
        for _ in 0..LAST_JOBS + 3 {
            board.job_finished(&a);
        }
        let t = board.totals();
        assert_eq!(
            (t.jobs_finished, t.tasks_run),
            (LAST_JOBS as u64 + 3, 7 * (LAST_JOBS as u64 + 3))
        );
        let (version, last) = board.last_jobs();
        assert_eq!((version, last.len()), (LAST_JOBS as u64 + 3, LAST_JOBS));
    }

    #[test]
    fn running_jobs_come_and_go_and_failures_count() {
        let board = Board::default();
        let one = board.run_started();
        let two = board.run_started();
        board.progress(two, 3, 9);
        let running = board.running();
        assert_eq!(running.len(), 2);
        assert_eq!((running[1].0, running[1].2, running[1].3), (two, 3, 9));
        board.run_ended(one, true);
        board.run_ended(two, false);
        assert!(board.running().is_empty());
        assert_eq!(board.totals().jobs_failed, 1);
    }

    struct Host;

    impl View for Host {
        fn memory(&self) -> (u64, u64) {
            (10, 20)
        }
        fn workers(&self) -> Option<Vec<WorkerRow>> {
            None
        }
        fn metrics(&self, e: &mut Exposition) {
            e.metric("host_reserved_bytes", "gauge", "Reserved.", 10);
        }
    }

    #[test]
    fn metrics_are_the_boards_then_the_views_in_prometheus_text() {
        let board = Board::default();
        for tasks in [40, 2] {
            board.job_finished(&JobStats {
                chunks_run: tasks,
                ..JobStats::default()
            });
        }
        board.run_started();
        let text = metrics_text(&board, |e| Host.metrics(e));
        assert!(
            text.contains("# TYPE tessera_tasks_run_total counter\ntessera_tasks_run_total 42\n")
        );
        assert!(text.contains("tessera_jobs_finished_total 2\n"), "{text}");
        assert!(text.contains("tessera_jobs_running 1\n"));
        assert!(text.contains("tessera_host_reserved_bytes 10\n"));
    }

    #[test]
    fn only_loopback_listens_without_a_token() {
        let opts = |a: &str, t: Option<&str>| DashboardOptions {
            address: a.into(),
            token: t.map(str::to_string),
        };
        assert!(check(&opts("127.0.0.1:0", None)).is_ok());
        assert!(check(&opts("[::1]:0", None)).is_ok());
        let off = check(&opts("0.0.0.0:8787", None)).unwrap_err().to_string();
        assert!(off.contains("only with a token"), "{off}");
        assert!(check(&opts("0.0.0.0:8787", Some("s3cret"))).is_ok());
        assert!(check(&opts("0.0.0.0:8787", Some("has space"))).is_err());
        assert!(check(&opts("localhost:8787", None)).is_err());
    }
}
