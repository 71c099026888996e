//! How many tasks the scheduler dispatches to a worker at once: one per thread running,
//! and more queued there, so that a worker finishing a task starts the next without a
//! round trip to the scheduler.
//!
//! The queue holds about [`QUEUED_WORK`] of work per thread, judged by how long the
//! worker's recent tasks on its CPU pool took (`TaskStatus.run_micros`; its GPUs' tasks
//! run on threads of their own and are not counted): two tasks per thread while that
//! is unknown or tasks are long (a queued task cannot move to an idle peer, so the queue
//! must stay short when tasks are), up to [`MAX_PER_THREAD`] for tiny tasks, where the
//! round trip would cost more than the task.

use std::time::Duration;

/// Work queued on a worker per thread, beyond the task each thread runs.
pub(super) const QUEUED_WORK: Duration = Duration::from_millis(2);

/// The most tasks dispatched to a worker per thread.
pub(super) const MAX_PER_THREAD: usize = 16;

/// Tasks dispatched per thread while the worker's run times are unknown.
pub(super) const DEFAULT_PER_THREAD: usize = 2;

/// The weight of the newest run time in the running mean.
const NEWEST_WEIGHT: f64 = 1.0 / 8.0;

/// A worker's recent task run times and the dispatch depth they call for.
#[derive(Debug, Default)]
pub(super) struct RunTimes {
    /// Running mean of run times, in microseconds (`None`: none reported yet).
    mean_micros: Option<f64>,
}

impl RunTimes {
    /// A task took `micros` (0: not reported, ignored).
    pub fn record(&mut self, micros: u64) {
        if micros == 0 {
            return;
        }
        let newest = micros as f64;
        self.mean_micros = Some(match self.mean_micros {
            None => newest,
            Some(mean) => mean + NEWEST_WEIGHT * (newest - mean),
        });
    }

    /// Tasks to dispatch per thread: the one running plus about [`QUEUED_WORK`] of
    /// queued ones, between [`DEFAULT_PER_THREAD`] and [`MAX_PER_THREAD`].
    pub fn per_thread(&self) -> usize {
        let Some(mean) = self.mean_micros else {
            return DEFAULT_PER_THREAD;
        };
        let queued = (QUEUED_WORK.as_micros() as f64 / mean.max(1.0)).ceil();
        // In range before the cast: the bound is small.
        1 + queued.clamp(1.0, (MAX_PER_THREAD - 1) as f64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_or_unknown_tasks_queue_one_more_per_thread_and_tiny_ones_up_to_the_cap() {
        let mut times = RunTimes::default();
        assert_eq!(times.per_thread(), DEFAULT_PER_THREAD);
        times.record(0);
        assert_eq!(
            times.per_thread(),
            DEFAULT_PER_THREAD,
            "0 means not reported"
        );
        times.record(50_000);
        assert_eq!(
            times.per_thread(),
            2,
            "a 50 ms task: one running, one queued"
        );
        let mut tiny = RunTimes::default();
        tiny.record(20);
        assert_eq!(tiny.per_thread(), MAX_PER_THREAD);
        let mut middling = RunTimes::default();
        middling.record(500);
        // 2 ms of 0.5 ms tasks queued, plus the running one.
        assert_eq!(middling.per_thread(), 5);
    }

    #[test]
    fn the_mean_follows_the_newest_run_times() {
        let mut times = RunTimes::default();
        times.record(20);
        for _ in 0..64 {
            times.record(10_000);
        }
        assert_eq!(times.per_thread(), 2, "tasks grew long: the queue shrinks");
        for _ in 0..64 {
            times.record(20);
        }
        assert_eq!(times.per_thread(), MAX_PER_THREAD);
    }
}
