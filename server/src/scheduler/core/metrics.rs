//! The scheduler's Prometheus metrics: totals over the cluster's jobs (from its dashboard
//! board), the jobs running, and each worker's threads, GPUs, memory and tasks as its last
//! heartbeat said.

use super::Core;
use tessera_core::Exposition;

impl Core {
    /// The Prometheus text exposition of the cluster now: the board's totals and running
    /// jobs (as the dashboard shows them), then the workers'.
    pub fn metrics(&self) -> String {
        tessera_dashboard::metrics_text(&self.board, |e| self.worker_metrics(e))
    }

    /// The workers' gauges: how many, and each one's threads, GPUs, tasks and memory.
    pub fn worker_metrics(&self, e: &mut Exposition) {
        let live: Vec<&super::Worker> = self.live_workers().map(|(_, w)| w).collect();
        e.metric(
            "workers",
            "gauge",
            "Workers registered with an open stream.",
            live.len() as u64,
        );
        let per_worker = |value: &dyn Fn(&super::Worker) -> u64| -> Vec<(String, u64)> {
            live.iter().map(|w| (w.name.clone(), value(w))).collect()
        };
        e.family(
            "worker_threads",
            "gauge",
            "Task threads of each worker.",
            "worker",
            &per_worker(&|w| u64::from(w.nthreads)),
        );
        e.family(
            "worker_gpus",
            "gauge",
            "GPUs of each worker (`--gpus`).",
            "worker",
            &per_worker(&|w| w.gpus.len() as u64),
        );
        e.family(
            "worker_tasks_running",
            "gauge",
            "Tasks running on each worker.",
            "worker",
            &per_worker(&|w| u64::from(w.tasks_running)),
        );
        e.family(
            "worker_memory_used_bytes",
            "gauge",
            "Bytes each worker's storage reserves.",
            "worker",
            &per_worker(&|w| w.memory_used),
        );
        e.family(
            "worker_memory_limit_bytes",
            "gauge",
            "Each worker's memory limit.",
            "worker",
            &per_worker(&|w| w.memory_limit),
        );
    }
}
