//! `--kill-worker-at SECONDS`: SIGKILLs one worker of the local cluster that many seconds
//! into each timed run (the workers take turns), then starts it again after the run, so
//! every run begins with the whole cluster. The job must still give the same digest.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;
use tessera::LocalCluster;

/// The drill of one benchmark process.
#[derive(Debug)]
pub struct WorkerKiller {
    cluster: Arc<Mutex<LocalCluster>>,
    after: Duration,
    armed: Mutex<Option<Armed>>,
    runs: Mutex<usize>,
}

/// A kill waiting for its moment; a message on `cancel` calls it off.
#[derive(Debug)]
struct Armed {
    cancel: SyncSender<()>,
    thread: JoinHandle<Option<usize>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl WorkerKiller {
    /// Kills a worker of `cluster` `after` into each run.
    pub fn new(cluster: Arc<Mutex<LocalCluster>>, after: Duration) -> WorkerKiller {
        WorkerKiller {
            cluster,
            after,
            armed: Mutex::new(None),
            runs: Mutex::new(0),
        }
    }

    /// Called as a timed run starts: the kill waits for its moment on its own thread.
    pub fn arm(&self) {
        let victim = {
            let mut runs = lock(&self.runs);
            let workers = lock(&self.cluster).workers().max(1);
            let victim = *runs % workers;
            *runs += 1;
            victim
        };
        let (cancel, cancelled) = sync_channel::<()>(1);
        let cluster = Arc::clone(&self.cluster);
        let after = self.after;
        let thread = std::thread::spawn(move || {
            if cancelled.recv_timeout(after).is_ok() {
                return None;
            }
            lock(&cluster).kill_worker(victim).then_some(victim)
        });
        *lock(&self.armed) = Some(Armed { cancel, thread });
    }

    /// Called after the run (outside the timed region): calls off a kill that has not
    /// happened, starts the killed worker again, and says which one was killed.
    pub fn disarm(&self) -> Result<Option<usize>, String> {
        let Some(armed) = lock(&self.armed).take() else {
            return Ok(None);
        };
        let _ = armed.cancel.send(());
        let killed = armed
            .thread
            .join()
            .map_err(|_| "the worker-killing thread panicked".to_string())?;
        if let Some(i) = killed {
            lock(&self.cluster)
                .restart_worker(i)
                .map_err(|e| format!("restarting worker {i}: {e}"))?;
        }
        Ok(killed)
    }
}
