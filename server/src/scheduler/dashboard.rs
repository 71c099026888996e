//! The scheduler's live dashboard (`tessera-scheduler --dashboard HOST:PORT`):
//! `tessera-dashboard`'s page over the cluster's jobs (the [`Board`](tessera_dashboard::Board)
//! the core feeds as jobs start, progress and end) and its workers, with `/metrics`
//! beside it. Guarded as the metrics endpoint is: with the cluster's shared secret, every
//! request carries it as the dashboard's token (`?token=…` in the page's URL, or
//! `Authorization: Bearer …`); without one, it listens on loopback and serves this host.

use super::core::SharedCore;
use super::lock;
use std::sync::Arc;
use tessera_cluster::auth::Secret;
use tessera_cluster::error::ClusterError;
use tessera_core::Exposition;
use tessera_dashboard::{Server, View, WorkerRow};

/// The dashboard's view of the scheduler: its workers, as their heartbeats said.
struct SchedulerView(SharedCore);

impl View for SchedulerView {
    fn memory(&self) -> (u64, u64) {
        lock(&self.0)
            .worker_rows()
            .iter()
            .fold((0, 0), |(used, limit), w| {
                (
                    used.saturating_add(w.memory_used),
                    limit.saturating_add(w.memory_limit),
                )
            })
    }

    fn workers(&self) -> Option<Vec<WorkerRow>> {
        Some(lock(&self.0).worker_rows())
    }

    fn metrics(&self, exposition: &mut Exposition) {
        lock(&self.0).worker_metrics(exposition);
    }
}

/// Serves the dashboard of `core` on `listener` until the returned server is dropped.
pub(super) fn start(
    listener: std::net::TcpListener,
    core: &SharedCore,
    secret: Option<&Secret>,
) -> Result<Server, ClusterError> {
    let board = lock(core).board();
    let token = secret.map(|s| s.text().to_string());
    let view = Arc::new(SchedulerView(Arc::clone(core)));
    Server::serve(listener, token, board, view).map_err(|e| ClusterError::Dashboard(e.to_string()))
}
