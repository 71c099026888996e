//! The dashboard's HTML: the page, its live panels (sent every tick) and the last jobs'
//! panels (the performance report's, sent when a job finishes). Drawn by the server as
//! HTML and inline SVG; the page's only script swaps in what the event stream sends.

use crate::board::{Board, View};
use crate::chart::esc;
use crate::fmt_bytes;
use crate::html::{panels, STYLE};
use std::fmt::Write as _;
use tessera_core::JobStats;

/// The page's own style, after the report's.
const DASHBOARD_STYLE: &str = ".bar{background:#eee;border-radius:3px;width:240px;height:12px}\
.bar div{background:#4c78a8;height:12px;border-radius:3px}\
#status{color:#666;font-size:12px}";

/// Swaps in the panels the server sends (`?token=…` travels on to the event stream). It
/// runs in the head, so the stream opens while the page is still being read.
/// Events that come before the body is read change nothing (the body already holds what
/// they carry; the live panels come again every tick).
const SCRIPT: &str = "const put=(id,f)=>{const e=document.getElementById(id);if(e){f(e);}};\
const es=new EventSource('events'+location.search);\
const live=()=>put('status',e=>{e.textContent='live';});\
es.onopen=live;\
es.onerror=()=>put('status',e=>{e.textContent='disconnected, retrying';});\
es.addEventListener('live',m=>{live();put('live',e=>{e.innerHTML=m.data;});});\
es.addEventListener('jobs',m=>put('jobs',e=>{e.innerHTML=m.data;}));";

/// The whole page, drawn with what is known now (the events then keep it current).
pub(super) fn index(board: &Board, view: &dyn View, jobs: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Tessera dashboard</title><style>{STYLE}{DASHBOARD_STYLE}</style>\
         <script>{SCRIPT}</script></head><body>\
         <h1>Tessera dashboard</h1><p id=\"status\">loading</p>\
         <div id=\"live\">{}</div><h2>Last jobs</h2><div id=\"jobs\">{jobs}</div>\
         </body></html>\n",
        live(board, view)
    )
}

/// A memory limit for people: `u64::MAX` (a worker without `--memory-limit`, or a sum
/// that includes one) is no limit.
fn fmt_limit(bytes: u64) -> String {
    if bytes == u64::MAX {
        "no limit".into()
    } else {
        fmt_bytes(bytes)
    }
}

/// A bar `done / total` wide.
fn bar(done: u64, total: u64) -> String {
    let pct = if total == 0 {
        0.0
    } else {
        (done as f64 / total as f64 * 100.0).min(100.0)
    };
    format!("<div class=\"bar\"><div style=\"width:{pct:.1}%\"></div></div>")
}

/// The panels that change while jobs run: running jobs, memory, workers and totals.
pub(super) fn live(board: &Board, view: &dyn View) -> String {
    let mut out = String::from("<section id=\"running\"><h2>Running jobs</h2>");
    let running = board.running();
    if running.is_empty() {
        out.push_str("<p class=\"note\">No job is running.</p>");
    } else {
        out.push_str(
            "<table class=\"stats\"><tr><th>run</th><th>running for</th><th>chunk tasks</th>\
             <th>progress</th></tr>",
        );
        for (id, seconds, done, total) in running {
            let _ = write!(
                out,
                "<tr data-run=\"{id}\"><td>{id}</td><td>{seconds:.1} s</td>\
                 <td data-stat=\"done\">{done} / {total}</td><td>{}</td></tr>",
                bar(done, total)
            );
        }
        out.push_str("</table>");
    }
    let (reserved, budget) = view.memory();
    let _ = write!(
        out,
        "</section><section id=\"memory-now\"><h2>Memory</h2><p>Memory reserved \
         <span data-stat=\"reserved\">{}</span> of <span data-stat=\"budget\">{}</span></p>{}\
         </section>",
        fmt_bytes(reserved),
        fmt_limit(budget),
        bar(reserved, budget)
    );
    out.push_str(&workers(view));
    out.push_str(&totals(board));
    out
}

/// The cluster's workers, or a line saying the jobs run in this process.
fn workers(view: &dyn View) -> String {
    let mut out = String::from("<section id=\"workers\"><h2>Workers</h2>");
    match view.workers() {
        None => out.push_str("<p class=\"note\">The jobs run in this process.</p>"),
        Some(rows) => {
            out.push_str(
                "<table class=\"stats\"><tr><th>worker</th><th>address</th><th>threads</th>\
                 <th>GPUs</th><th>tasks running</th><th>chunks held</th><th>memory</th>\
                 <th></th></tr>",
            );
            for w in &rows {
                let _ = write!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                     <td>{} of {}</td><td>{}</td></tr>",
                    esc(&w.name),
                    esc(&w.address),
                    w.threads,
                    w.gpus,
                    w.tasks_running,
                    w.chunks_held,
                    fmt_bytes(w.memory_used),
                    fmt_limit(w.memory_limit),
                    bar(w.memory_used, w.memory_limit)
                );
            }
            out.push_str("</table>");
        }
    }
    out.push_str("</section>");
    out
}

/// The running totals, each cell named as its `/metrics` counter.
fn totals(board: &Board) -> String {
    let t = board.totals();
    let rows = [
        ("jobs_finished_total", "jobs finished", t.jobs_finished),
        ("jobs_failed_total", "job runs failed", t.jobs_failed),
        ("tasks_run_total", "chunk tasks run", t.tasks_run),
        ("bytes_produced_total", "bytes produced", t.bytes_produced),
        ("bytes_spilled_total", "bytes spilled", t.bytes_spilled),
        (
            "bytes_read_back_total",
            "bytes read back",
            t.bytes_read_back,
        ),
        (
            "chunks_recomputed_total",
            "chunks recomputed",
            t.chunks_recomputed,
        ),
        ("chunks_lost_total", "chunks lost", t.chunks_lost),
        ("retries_total", "retries", t.retries),
        ("restarts_total", "actor restarts", t.restarts),
    ];
    let mut out = String::from("<section id=\"totals\"><h2>Totals</h2><table class=\"stats\">");
    for (metric, label, value) in rows {
        let _ = write!(
            out,
            "<tr><th>{label}</th><td data-metric=\"{metric}\">{value}</td></tr>"
        );
    }
    out.push_str("</table></section>");
    out
}

/// The report's panels for the last finished jobs.
pub(super) fn jobs(jobs: &[JobStats]) -> String {
    if jobs.is_empty() {
        return "<p class=\"note\">No job has finished yet.</p>".into();
    }
    panels(jobs)
}

#[cfg(test)]
mod tests {
    use super::{fmt_limit, workers};
    use crate::{View, WorkerRow};
    use tessera_core::Exposition;

    struct Cluster;

    impl View for Cluster {
        fn memory(&self) -> (u64, u64) {
            (0, 0)
        }
        fn workers(&self) -> Option<Vec<WorkerRow>> {
            Some(vec![WorkerRow {
                name: "w<1>".into(),
                address: "127.0.0.1:5".into(),
                threads: 8,
                gpus: 2,
                tasks_running: 3,
                chunks_held: 4,
                memory_used: 1 << 30,
                memory_limit: 4 << 30,
            }])
        }
        fn metrics(&self, _: &mut Exposition) {}
    }

    #[test]
    fn a_worker_s_row_shows_its_threads_gpus_tasks_chunks_and_memory() {
        let html = workers(&Cluster);
        assert!(html.contains("<th>threads</th><th>GPUs</th>"), "{html}");
        assert!(
            html.contains(
                "<tr><td>w&lt;1&gt;</td><td>127.0.0.1:5</td><td>8</td><td>2</td><td>3</td>\
                 <td>4</td><td>1.0 GiB of 4.0 GiB</td>"
            ),
            "{html}"
        );
    }

    #[test]
    fn the_largest_limit_is_no_limit() {
        assert_eq!(fmt_limit(u64::MAX), "no limit");
        assert_eq!(fmt_limit(3 << 30), "3.0 GiB");
    }
}
