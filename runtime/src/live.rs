//! The live dashboard's view of a session (the `dashboard` feature): its memory, its
//! cluster's workers and its metrics, read when a page or `/metrics` is rendered.

use crate::session::SessionInner;
use crate::WorkerInfo;
use std::sync::{Arc, Weak};
use tessera_actors::Exposition;
use tessera_dashboard::{View, WorkerRow};

/// The dashboard's view of a session, which it does not keep alive.
pub(crate) struct SessionView(Weak<SessionInner>);

impl SessionView {
    /// The view of `inner`.
    pub(crate) fn new(inner: &Arc<SessionInner>) -> SessionView {
        SessionView(Arc::downgrade(inner))
    }
}

impl View for SessionView {
    fn memory(&self) -> (u64, u64) {
        match self.0.upgrade() {
            Some(inner) => (inner.reserved_bytes(), inner.config.memory_budget),
            None => (0, 0),
        }
    }

    fn workers(&self) -> Option<Vec<WorkerRow>> {
        let info = self.0.upgrade()?.cluster_info().ok().flatten()?;
        let row = |w: WorkerInfo| WorkerRow {
            name: w.name,
            address: w.flight_address,
            threads: w.nthreads,
            gpus: w.gpus,
            tasks_running: w.tasks_running,
            chunks_held: w.chunks_held,
            memory_used: w.memory_used,
            memory_limit: w.memory_limit,
        };
        Some(info.worker_list.into_iter().map(row).collect())
    }

    fn metrics(&self, e: &mut Exposition) {
        let (reserved, budget) = self.memory();
        e.metric(
            "host_reserved_bytes",
            "gauge",
            "Host memory reserved now.",
            reserved,
        );
        e.metric(
            "host_budget_bytes",
            "gauge",
            "The session's host memory budget.",
            budget,
        );
    }
}
