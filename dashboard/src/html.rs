//! The HTML performance report: one self-contained page (inline style, charts as inline
//! SVG, no script, nothing fetched) with a panel per view — `task-stream`, `progress`,
//! `memory`, `time-per-op`, `occupancy`, `job-stats` and `plan` (the panels' element ids).
//! Every number comes from the recorder's streams or the jobs' [`JobStats`].

use crate::chart::{self, bars, colour, esc, lines, Bar, Series, TimeAxis};
use crate::{fmt_bytes, ms};
use std::collections::BTreeMap;
use tessera_core::{JobStats, StorageEventKind, TaskStream};

pub(crate) const STYLE: &str =
    "body{font:14px system-ui,sans-serif;margin:20px;color:#222;max-width:1200px}\
h1{font-size:22px}h2{font-size:17px;margin:0 0 8px}h3{font-size:14px;margin:10px 0 4px}\
section{border:1px solid #ddd;border-radius:6px;padding:12px;margin:14px 0}\
.grid{stroke:#eee}.tick{font-size:10px;fill:#666;text-anchor:middle}\
.label{font-size:11px;fill:#333;text-anchor:end}.value{font-size:11px;fill:#333}\
.legend{font-size:11px;fill:#333}.note{color:#666;font-size:12px}\
table.stats{border-collapse:collapse;margin:4px 0 10px}\
table.stats th,table.stats td{border:1px solid #ddd;padding:2px 8px;text-align:left;font-size:12px}\
td[data-stat]{font-family:monospace;text-align:right}.failure{color:#b00020}";

/// The page for `jobs` (in the order they finished).
pub fn document(jobs: &[JobStats]) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Tessera performance report</title><style>{STYLE}</style></head><body>\
         <h1>Tessera performance report</h1>{}</body></html>\n",
        panels(jobs)
    )
}

/// The report's summary line and panels for `jobs` (also the live dashboard's).
pub(crate) fn panels(jobs: &[JobStats]) -> String {
    let streams: Vec<(usize, &TaskStream)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.stream.iter().map(move |t| (i, t.as_ref())))
        .collect();
    let ops = op_colours(jobs);
    let t0 = streams
        .iter()
        .map(|(_, s)| s.submitted_ns)
        .min()
        .unwrap_or(0);
    let t1 = streams
        .iter()
        .map(|(_, s)| s.finished_ns)
        .max()
        .unwrap_or(0);
    let axis = TimeAxis::new(t0, t1);
    let runs: u64 = streams.iter().map(|(_, s)| s.runs()).sum();
    let summarised: u64 = streams.iter().map(|(_, s)| s.tasks_dropped).sum();
    let mut page = format!(
        "<p id=\"summary\">{} job(s), {} stage(s), {runs} task run(s) over {:.1} ms{}</p>",
        jobs.len(),
        streams.len(),
        ms(t1.saturating_sub(t0)),
        if summarised > 0 {
            format!(
                "; {summarised} run(s) past the recorder's cap are in the summaries only \
                 (time per op, progress, plan)"
            )
        } else {
            String::new()
        }
    );
    let panels = [
        (
            "task-stream",
            "Task stream",
            task_stream(&streams, axis, &ops),
        ),
        (
            "progress",
            "Progress per op",
            progress(jobs, &streams, &ops),
        ),
        ("memory", "Memory", memory(&streams, axis)),
        ("time-per-op", "Time per op", time_per_op(&streams, &ops)),
        ("occupancy", "Worker occupancy", occupancy(&streams, axis)),
        ("job-stats", "Job statistics", job_stats(jobs)),
        ("plan", "Plan: ops per stage", plan(jobs)),
    ];
    for (id, title, body) in panels {
        page.push_str(&format!(
            "<section id=\"{id}\"><h2>{title}</h2>{body}</section>"
        ));
    }
    page
}

/// Each op's colour, by the order in which the jobs first ran it.
fn op_colours(jobs: &[JobStats]) -> BTreeMap<String, &'static str> {
    let mut ops = BTreeMap::new();
    let names = jobs.iter().flat_map(|j| {
        let recorded = j.stream.iter().flat_map(|s| s.ops.iter().map(|o| o.op));
        recorded.chain(j.chunks_by_op.keys().map(String::as_str))
    });
    for name in names {
        let next = colour(ops.len());
        ops.entry(name.to_string()).or_insert(next);
    }
    ops
}

fn colour_of(ops: &BTreeMap<String, &'static str>, op: &str) -> &'static str {
    ops.get(op).copied().unwrap_or("#999")
}

/// One drawn piece of a lane: runs of one kind close together are merged into one.
struct Piece {
    start: u64,
    end: u64,
    kind: &'static str,
    colour: &'static str,
    count: u64,
    failed: bool,
    title: String,
}

/// Draws `pieces` (in start order) on the lane at `y`, merging neighbours of one kind that
/// are less than a unit apart, so a long job draws a bounded number of shapes.
fn lane(pieces: impl Iterator<Item = Piece>, axis: TimeAxis, y: f64) -> String {
    let gap = axis.ns_per_unit() as u64;
    let mut merged: Vec<Piece> = Vec::new();
    for p in pieces {
        match merged.last_mut() {
            Some(last) if last.kind == p.kind && p.start <= last.end + gap && !p.failed => {
                last.end = last.end.max(p.end);
                last.count += 1;
            }
            _ => merged.push(p),
        }
    }
    let mut out = String::new();
    for p in merged {
        let x = axis.x(p.start);
        let w = (axis.x(p.end) - x).max(0.5);
        let title = if p.count == 1 {
            p.title
        } else {
            format!("{} × {} ({:.3} ms)", p.kind, p.count, ms(p.end - p.start))
        };
        let stroke = if p.failed {
            " stroke=\"#d00\" stroke-width=\"1.5\""
        } else {
            ""
        };
        out.push_str(&format!(
            "<rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"12\" fill=\"{}\"{stroke}>\
             <title>{}</title></rect>",
            p.colour,
            esc(&title)
        ));
    }
    out
}

/// The Gantt chart: a lane per device worker thread, coloured by op, and one for storage.
fn task_stream(
    streams: &[(usize, &TaskStream)],
    axis: TimeAxis,
    ops: &BTreeMap<String, &'static str>,
) -> String {
    let mut threads: BTreeMap<(u32, u32), Vec<&tessera_core::TaskRecord>> = BTreeMap::new();
    for (_, s) in streams {
        for r in &s.tasks {
            threads
                .entry((r.device.0, r.span.thread))
                .or_default()
                .push(r);
        }
    }
    let mut storage: Vec<_> = streams
        .iter()
        .flat_map(|(_, s)| &s.storage.events)
        .collect();
    storage.sort_by_key(|e| e.start_ns);
    let height = 30.0 + 16.0 * (threads.len() + 1) as f64 + 20.0;
    let bottom = height - 20.0;
    let mut out = format!(
        "<svg viewBox=\"0 0 {} {height}\" width=\"100%\">{}",
        chart::WIDTH,
        axis.ticks(24.0, bottom)
    );
    for (i, (name, c)) in ops.iter().enumerate() {
        let x = chart::LABEL + 150.0 * i as f64;
        out.push_str(&format!(
            "<rect x=\"{x:.1}\" y=\"4\" width=\"10\" height=\"10\" fill=\"{c}\"/>\
             <text x=\"{:.1}\" y=\"13\" class=\"legend\">{}</text>",
            x + 14.0,
            esc(name)
        ));
    }
    for (row, ((device, thread), mut runs)) in threads.into_iter().enumerate() {
        let y = 26.0 + 16.0 * row as f64;
        runs.sort_by_key(|r| r.span.start_ns);
        out.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">device{device} cpu{thread}</text>",
            chart::LABEL - 6.0,
            y + 10.0
        ));
        let pieces = runs.into_iter().map(|r| Piece {
            start: r.span.start_ns,
            end: r.span.end_ns,
            kind: r.op,
            colour: colour_of(ops, r.op),
            count: 1,
            failed: !r.ok,
            title: format!(
                "{} chunk {} (attempt {}{}{}{}): {:.3} ms, {} in, {} out",
                r.op,
                r.key,
                r.attempt,
                if r.retry { ", retry" } else { "" },
                if r.recompute { ", recomputed" } else { "" },
                if r.ok { "" } else { ", failed" },
                ms(r.span.end_ns.saturating_sub(r.span.start_ns)),
                fmt_bytes(r.bytes_in),
                fmt_bytes(r.bytes_out)
            ),
        });
        out.push_str(&lane(pieces, axis, y));
    }
    let y = bottom - 14.0;
    out.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" class=\"label\">storage</text>",
        chart::LABEL - 6.0,
        y + 10.0
    ));
    let pieces = storage.into_iter().map(|e| Piece {
        start: e.start_ns,
        end: e.end_ns,
        kind: e.kind.name(),
        colour: storage_colour(e.kind),
        count: 1,
        failed: false,
        title: format!("{} chunk {}: {}", e.kind.name(), e.key, fmt_bytes(e.bytes)),
    });
    out.push_str(&lane(pieces, axis, y));
    out.push_str(
        "</svg><p class=\"note\">Hover a bar for its chunk, attempt and bytes; \
                  neighbouring runs of one op closer than a pixel are drawn as one. \
                  Storage: spill red, read back green, drop grey.</p>",
    );
    out
}

fn storage_colour(kind: StorageEventKind) -> &'static str {
    match kind {
        StorageEventKind::Spill => "#d62728",
        StorageEventKind::ReadBack => "#2ca02c",
        StorageEventKind::Drop => "#9e9e9e",
    }
}

/// Per op: the tasks the jobs completed, and the recorded runs that failed.
fn progress(
    jobs: &[JobStats],
    streams: &[(usize, &TaskStream)],
    ops: &BTreeMap<String, &'static str>,
) -> String {
    let mut done: BTreeMap<&str, u64> = BTreeMap::new();
    for j in jobs {
        for (op, n) in &j.chunks_by_op {
            *done.entry(op.as_str()).or_default() += n;
        }
    }
    let mut failed: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, s) in streams {
        for o in &s.ops {
            *failed.entry(o.op).or_default() += o.failed;
        }
    }
    let rows: Vec<Bar> = done
        .iter()
        .map(|(&op, &n)| {
            let f = failed.get(op).copied().unwrap_or(0);
            Bar {
                label: op.to_string(),
                value: n as f64,
                text: format!("{n} / {n} tasks done, {f} failed run(s)"),
                colour: colour_of(ops, op),
            }
        })
        .collect();
    bars(&rows, 0.0)
}

/// Reserved host memory over time, with the bytes spilled and read back so far.
fn memory(streams: &[(usize, &TaskStream)], axis: TimeAxis) -> String {
    let mut reserved: Vec<(u64, u64)> = streams
        .iter()
        .flat_map(|(_, s)| s.memory.iter().map(|m| (m.t_ns, m.reserved)))
        .collect();
    reserved.sort_unstable();
    let cumulative = |kind: StorageEventKind| {
        let mut events: Vec<(u64, u64)> = streams
            .iter()
            .flat_map(|(_, s)| &s.storage.events)
            .filter(|e| e.kind == kind)
            .map(|e| (e.end_ns, e.bytes))
            .collect();
        events.sort_unstable();
        let mut total = 0;
        let mut points = vec![(axis.start(), 0)];
        for (t, b) in events {
            total += b;
            points.push((t, total));
        }
        points.push((axis.end(), total));
        points
    };
    let series = [
        Series {
            name: "host memory reserved",
            colour: "#4e79a7",
            points: reserved,
        },
        Series {
            name: "spilled (cumulative)",
            colour: "#d62728",
            points: cumulative(StorageEventKind::Spill),
        },
        Series {
            name: "read back (cumulative)",
            colour: "#2ca02c",
            points: cumulative(StorageEventKind::ReadBack),
        },
    ];
    lines(&series, axis)
}

/// Busy time per op, summed over every run (past the recorder's cap too).
fn time_per_op(streams: &[(usize, &TaskStream)], ops: &BTreeMap<String, &'static str>) -> String {
    let mut per_op: BTreeMap<&str, (u64, u64, u64, u64)> = BTreeMap::new();
    for (_, s) in streams {
        for o in &s.ops {
            let e = per_op.entry(o.op).or_default();
            e.0 += o.busy_ns;
            e.1 += o.tasks + o.failed;
            e.2 += o.bytes_in;
            e.3 += o.bytes_out;
        }
    }
    let rows: Vec<Bar> = per_op
        .iter()
        .map(|(&op, &(busy, runs, bytes_in, bytes_out))| Bar {
            label: op.to_string(),
            value: busy as f64,
            text: format!(
                "{:.3} ms in {runs} run(s), {} in, {} out",
                ms(busy),
                fmt_bytes(bytes_in),
                fmt_bytes(bytes_out)
            ),
            colour: colour_of(ops, op),
        })
        .collect();
    bars(&rows, 0.0)
}

/// Per worker thread: the share of the recorded time it spent running tasks.
fn occupancy(streams: &[(usize, &TaskStream)], axis: TimeAxis) -> String {
    let mut busy: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for (_, s) in streams {
        for r in &s.tasks {
            *busy.entry((r.device.0, r.span.thread)).or_default() +=
                r.span.end_ns.saturating_sub(r.span.start_ns);
        }
    }
    let span = axis.end().saturating_sub(axis.start()).max(1);
    let rows: Vec<Bar> = busy
        .iter()
        .map(|(&(device, thread), &ns)| {
            let share = ns as f64 / span as f64;
            Bar {
                label: format!("device{device} cpu{thread}"),
                value: share,
                text: format!("{:.1}% busy ({:.3} ms)", share * 100.0, ms(ns)),
                colour: "#4e79a7",
            }
        })
        .collect();
    bars(&rows, 1.0)
}

/// A job's heading; a failed job's says so, with its error.
fn job_heading(i: usize, j: &JobStats) -> String {
    match &j.failure {
        None => format!("<h3>Job {i}</h3>"),
        Some(why) => format!(
            "<h3>Job {i}: failed</h3><p class=\"failure\" data-failure=\"{i}\">{}</p>",
            esc(why)
        ),
    }
}

/// Each job's statistics, one cell per number (`data-stat` names the field).
fn job_stats(jobs: &[JobStats]) -> String {
    let mut out = String::new();
    for (i, j) in jobs.iter().enumerate() {
        let s = &j.storage;
        let count = |name: &str, n: u64| (name.to_string(), n, String::new());
        let bytes = |name: &str, n: u64| (name.to_string(), n, fmt_bytes(n));
        let mut rows: Vec<(String, u64, String)> = vec![
            count("chunks_run", j.chunks_run),
            count("chunks_on_gpu", j.chunks_on_gpu),
            bytes("bytes_produced", j.bytes_produced),
            (
                "wall_time_ns".into(),
                u64::try_from(j.wall_time.as_nanos()).unwrap_or(u64::MAX),
                format!("{:.3} s", j.wall_time.as_secs_f64()),
            ),
            bytes("peak_stored_bytes", j.peak_stored_bytes),
            bytes("peak_host_reserved", j.peak_host_reserved),
            count("chunks_recomputed", j.chunks_recomputed),
            count("retries", j.retries),
            count("chunks_lost", j.chunks_lost),
            count("restarts", j.restarts),
            count("held_back", j.held_back),
            bytes("storage.bytes_spilled", s.bytes_spilled),
            bytes("storage.bytes_read_back", s.bytes_read_back),
            count("storage.chunks_spilled", s.chunks_spilled),
            count("storage.spill_failures", s.spill_failures),
            bytes("storage.peak_disk_bytes", s.peak_disk_bytes),
            count("storage.chunks_dropped", s.chunks_dropped),
            bytes("storage.bytes_dropped", s.bytes_dropped),
        ];
        for (op, n) in &j.chunks_by_op {
            rows.push((format!("chunks_by_op.{op}"), *n, String::new()));
        }
        out.push_str(&job_heading(i, j));
        out.push_str(&format!("<table class=\"stats\" id=\"job-{i}-stats\">"));
        for (name, value, human) in rows {
            let name = esc(&name);
            out.push_str(&format!(
                "<tr><th>{name}</th><td data-stat=\"{name}\">{value}</td><td>{}</td></tr>",
                esc(&human)
            ));
        }
        out.push_str("</table>");
    }
    out
}

/// Each job's stages and, per stage, its ops in the order they first ended.
fn plan(jobs: &[JobStats]) -> String {
    let mut out = String::new();
    for (i, j) in jobs.iter().enumerate() {
        out.push_str(&job_heading(i, j));
        if j.stream.is_empty() {
            out.push_str("<p class=\"note\">not recorded (recording off, or run on a cluster)</p>");
        }
        for (n, s) in j.stream.iter().enumerate() {
            out.push_str(&format!(
                "<p>stage {n} ({}): {:.3} ms</p><ol>",
                s.job,
                ms(s.finished_ns.saturating_sub(s.submitted_ns))
            ));
            for o in &s.ops {
                out.push_str(&format!(
                    "<li><b>{}</b>: {} task(s){}, {} in, {} out</li>",
                    esc(o.op),
                    o.tasks,
                    if o.failed > 0 {
                        format!(" and {} failed run(s)", o.failed)
                    } else {
                        String::new()
                    },
                    fmt_bytes(o.bytes_in),
                    fmt_bytes(o.bytes_out)
                ));
            }
            out.push_str("</ol>");
        }
    }
    out
}
