//! A small pool of named OS threads running boxed jobs in submission order. An idle
//! worker sleeps on a condition variable of its own, and a new job wakes the worker that
//! went idle *last*: a job arriving alone (a one-task job, the next task of a GPU session)
//! runs on the thread whose caches, allocator pages and CUDA state are warmest, not on the
//! one idle longest. A job that panics is logged and its worker goes on. Dropping the pool
//! discards queued jobs, lets running ones finish and joins every thread, so no thread
//! outlives its owner.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// A unit of work for the pool.
pub type PoolJob = Box<dyn FnOnce() + Send + 'static>;

/// Worker threads that run [`PoolJob`]s in submission order, the most recently idle
/// worker taking the next one.
#[derive(Debug)]
pub struct WorkerPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// What the pool's owner and its workers share.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Per worker: where it sleeps while idle.
    wake: Vec<Condvar>,
}

#[derive(Default)]
struct State {
    /// Jobs not yet taken, oldest first.
    queue: VecDeque<PoolJob>,
    /// Idle workers, the most recently idle last: each sleeps until a job (or closing)
    /// takes it off.
    idle: Vec<usize>,
    /// Set once by `Drop`: workers stop taking jobs.
    closing: bool,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("queued", &self.queue.len())
            .field("idle", &self.idle)
            .field("closing", &self.closing)
            .finish()
    }
}

impl Shared {
    /// The state; a poisoned lock is taken over (no code panics while holding it: jobs
    /// run outside it).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl WorkerPool {
    /// Starts `threads` workers named by `name(i)` (Linux keeps the first 15 bytes).
    pub fn new(threads: usize, name: impl Fn(usize) -> String) -> io::Result<WorkerPool> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: (0..threads).map(|_| Condvar::new()).collect(),
        });
        let mut pool = WorkerPool {
            shared,
            threads: Vec::with_capacity(threads),
        };
        for i in 0..threads {
            let shared = Arc::clone(&pool.shared);
            // On error, dropping `pool` joins the threads already started.
            let handle = std::thread::Builder::new()
                .name(name(i))
                .spawn(move || work(i, &shared))?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    /// Queues a job and wakes the most recently idle worker, if any is idle; gives the
    /// job back if the pool is closing.
    pub fn execute(&self, job: PoolJob) -> Result<(), PoolJob> {
        let mut state = self.shared.lock();
        if state.closing || self.threads.is_empty() {
            return Err(job);
        }
        state.queue.push_back(job);
        let woken = state.idle.pop();
        drop(state);
        // Outside the lock, so the woken worker does not wake only to wait for it.
        if let Some(w) = woken {
            self.shared.wake[w].notify_one();
        }
        Ok(())
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Workers asleep waiting for a job.
    #[cfg(test)]
    fn idle_workers(&self) -> usize {
        self.shared.lock().idle.len()
    }
}

thread_local! {
    /// The index of the pool worker running on this thread (0 on other threads).
    static WORKER: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The index of the pool worker this is called on (its `i` in the thread's name); 0 on a
/// thread that is not a pool worker.
pub fn worker_index() -> u32 {
    WORKER.with(std::cell::Cell::get)
}

fn work(index: usize, shared: &Shared) {
    WORKER.with(|w| w.set(u32::try_from(index).unwrap_or(u32::MAX)));
    let mut state = shared.lock();
    while !state.closing {
        if let Some(job) = state.queue.pop_front() {
            drop(state);
            // A panicking job must not take its worker with it: a pool whose workers had
            // all died would queue jobs that never run.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
                tracing::error!(worker = index, "a pool job panicked");
            }
            state = shared.lock();
            continue;
        }
        state.idle.push(index);
        while state.idle.contains(&index) && !state.closing {
            state = shared.wake[index]
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let discarded = {
            let mut state = self.shared.lock();
            state.closing = true;
            std::mem::take(&mut state.queue)
        };
        for wake in &self.shared.wake {
            wake.notify_one();
        }
        // Outside the lock: a job's captures may do anything when dropped.
        drop(discarded);
        for handle in self.threads.drain(..) {
            if handle.join().is_err() {
                tracing::error!("a worker thread panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn runs_jobs_on_named_threads_and_joins_on_drop() {
        let pool = WorkerPool::new(3, |i| format!("tp-{i}")).unwrap();
        assert_eq!(pool.threads(), 3);
        let (tx, rx) = crossbeam_channel::unbounded();
        for _ in 0..6 {
            let tx = tx.clone();
            pool.execute(Box::new(move || {
                let name = std::thread::current().name().map(str::to_string);
                tx.send((name, worker_index())).unwrap();
            }))
            .unwrap_or_else(|_| panic!("pool closed"));
        }
        for _ in 0..6 {
            let (name, index) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            let name = name.unwrap();
            assert_eq!(
                name,
                format!("tp-{index}"),
                "the worker index is the name's"
            );
        }
        drop(pool);
    }

    #[test]
    fn drop_discards_queued_jobs_and_waits_for_running_ones() {
        let pool = WorkerPool::new(1, |_| "tp-drop".into()).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let (started_tx, started) = crossbeam_channel::bounded(1);
        for _ in 0..5 {
            let (ran, started_tx) = (Arc::clone(&ran), started_tx.clone());
            pool.execute(Box::new(move || {
                let _ = started_tx.try_send(());
                std::thread::sleep(Duration::from_millis(50));
                ran.fetch_add(1, Ordering::SeqCst);
            }))
            .unwrap_or_else(|_| panic!("pool closed"));
        }
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        drop(pool);
        // The running job finished; most queued ones were discarded.
        let ran = ran.load(Ordering::SeqCst);
        assert!((1..5).contains(&ran), "ran {ran}");
    }

    /// Waits (at most 10 s) until every worker of `pool` is asleep.
    fn until_all_idle(pool: &WorkerPool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.idle_workers() < pool.threads() {
            assert!(
                std::time::Instant::now() < deadline,
                "workers never went idle"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_lone_job_runs_on_the_worker_idle_the_shortest_time() {
        let pool = WorkerPool::new(4, |i| format!("tp-lifo{i}")).unwrap();
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut ran_on = Vec::new();
        for _ in 0..8 {
            until_all_idle(&pool);
            let tx = tx.clone();
            pool.execute(Box::new(move || tx.send(worker_index()).unwrap()))
                .unwrap_or_else(|_| panic!("pool closed"));
            ran_on.push(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        }
        // The first job wakes the last worker to go idle; every later one, the worker
        // that ran the job before it (a pool waking the longest idle would rotate).
        assert!(
            ran_on.iter().all(|&w| w == ran_on[0]),
            "lone jobs ran on workers {ran_on:?}"
        );
    }

    #[test]
    fn a_burst_of_jobs_runs_on_every_worker_at_once() {
        let pool = WorkerPool::new(4, |i| format!("tp-burst{i}")).unwrap();
        until_all_idle(&pool);
        // Each job waits (at most 10 s) for all four to have started: only four workers
        // running at once see them all.
        let started = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = crossbeam_channel::unbounded();
        for _ in 0..4 {
            let (started, tx) = (Arc::clone(&started), tx.clone());
            pool.execute(Box::new(move || {
                started.fetch_add(1, Ordering::SeqCst);
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while started.load(Ordering::SeqCst) < 4 && std::time::Instant::now() < deadline {
                    std::thread::yield_now();
                }
                tx.send((worker_index(), started.load(Ordering::SeqCst)))
                    .unwrap();
            }))
            .unwrap_or_else(|_| panic!("pool closed"));
        }
        let mut ran_on: Vec<(u32, usize)> = (0..4)
            .map(|_| rx.recv_timeout(Duration::from_secs(20)).unwrap())
            .collect();
        ran_on.sort_unstable();
        assert_eq!(ran_on, [(0, 4), (1, 4), (2, 4), (3, 4)]);
    }

    #[test]
    fn a_panicking_job_leaves_its_worker_running_the_next() {
        let pool = WorkerPool::new(1, |_| "tp-panic".into()).unwrap();
        pool.execute(Box::new(|| panic!("injected")))
            .unwrap_or_else(|_| panic!("pool closed"));
        let (tx, rx) = crossbeam_channel::bounded(1);
        pool.execute(Box::new(move || tx.send(worker_index()).unwrap()))
            .unwrap_or_else(|_| panic!("pool closed"));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(0));
    }
}
