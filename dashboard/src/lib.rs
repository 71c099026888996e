//! Tessera's pages, drawn by the server as HTML and inline SVG (no network, no vendored
//! script): the performance report's panels ([`html`]) and the live dashboard ([`Server`]),
//! a read-only page that follows jobs while they run — running jobs' progress, memory
//! reserved, the workers, running totals and the last jobs' report panels — plus a
//! Prometheus `/metrics` endpoint.
//!
//! Two programs serve it: a session (`tessera::SessionBuilder::dashboard`) and the
//! cluster's scheduler (`tessera-scheduler --dashboard`). The server is the `server`
//! feature (on by default); without it a program links no HTTP server and keeps the
//! report panels. Each feeds a [`Board`] as its jobs
//! start, progress and end, and gives the server a [`View`] of what only it knows (its
//! memory, its workers, its own metrics).

mod board;
pub(crate) mod chart;
pub mod html;
#[cfg(feature = "server")]
mod page;
#[cfg(feature = "server")]
mod server;

pub use board::{
    check, check_access, metrics_text, Board, DashboardError, DashboardOptions, View, WorkerRow,
};
#[cfg(feature = "server")]
pub use server::Server;

/// Milliseconds from nanoseconds, for people.
pub(crate) fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Bytes in binary units for people (`512 B`, `32.0 MiB`, `1.5 GiB`).
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = bytes as f64;
    let mut unit = 0;
    while x >= 1024.0 && unit + 1 < UNITS.len() {
        x /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{x:.1} {}", UNITS[unit])
    }
}
