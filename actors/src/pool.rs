//! A small pool of named OS threads fed by a channel of boxed jobs. Dropping the pool
//! discards queued jobs, lets running ones finish and joins every thread, so no thread
//! outlives its owner.

use crossbeam_channel::{Receiver, Sender};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A unit of work for the pool.
pub type PoolJob = Box<dyn FnOnce() + Send + 'static>;

/// Worker threads that run [`PoolJob`]s in submission order.
#[derive(Debug)]
pub struct WorkerPool {
    jobs: Option<Sender<PoolJob>>,
    closing: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl WorkerPool {
    /// Starts `threads` workers named by `name(i)` (Linux keeps the first 15 bytes).
    pub fn new(threads: usize, name: impl Fn(usize) -> String) -> io::Result<WorkerPool> {
        let (tx, rx) = crossbeam_channel::unbounded::<PoolJob>();
        let mut pool = WorkerPool {
            jobs: Some(tx),
            closing: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(threads),
        };
        for i in 0..threads {
            let (rx, closing) = (rx.clone(), Arc::clone(&pool.closing));
            // On error, dropping `pool` joins the threads already started.
            let handle = std::thread::Builder::new()
                .name(name(i))
                .spawn(move || work(i, &rx, &closing))?;
            pool.threads.push(handle);
        }
        Ok(pool)
    }

    /// Queues a job; gives it back if no worker is left to run it.
    pub fn execute(&self, job: PoolJob) -> Result<(), PoolJob> {
        match &self.jobs {
            Some(tx) => tx.send(job).map_err(|e| e.into_inner()),
            None => Err(job),
        }
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
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

fn work(index: usize, jobs: &Receiver<PoolJob>, closing: &AtomicBool) {
    WORKER.with(|w| w.set(u32::try_from(index).unwrap_or(u32::MAX)));
    for job in jobs.iter() {
        if !closing.load(Ordering::Acquire) {
            job();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Release);
        self.jobs = None;
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
    use std::sync::atomic::AtomicUsize;
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
}
