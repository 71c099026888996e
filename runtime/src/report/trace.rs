//! Chrome trace-event JSON (the format Perfetto and `chrome://tracing` open): one complete
//! ("X") event per chunk-task run with pid = device and tid = worker thread, the storage
//! events on a process of their own, the reserved memory as a counter ("C"), and names for
//! processes and threads ("M"). Times are microseconds since the session started.
//!
//! Events are written one by one as they are made, so a job of a hundred thousand tasks
//! never holds its whole trace as a JSON tree.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{self, Write};
use tessera_actors::JobStats;

/// The pid of the storage tiers' events (devices use their own ids, from 0).
pub(super) const STORAGE_PID: u32 = 1000;

/// Microseconds from nanoseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Writes events to a JSON array, comma-separated.
struct Events<W: Write> {
    out: W,
    first: bool,
}

impl<W: Write> Events<W> {
    fn push(&mut self, event: Value) -> io::Result<()> {
        if !std::mem::replace(&mut self.first, false) {
            self.out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut self.out, &event).map_err(io::Error::from)
    }
}

/// Writes the trace of `jobs`' task streams to `out`, with each job's statistics under
/// `otherData`.
pub(super) fn write(jobs: &[JobStats], mut out: impl Write) -> io::Result<()> {
    out.write_all(b"{\"traceEvents\":[\n")?;
    let mut events = Events { out, first: true };
    let mut threads = BTreeSet::new();
    for (n, stats) in jobs.iter().enumerate() {
        for stream in stats.stream.iter() {
            let stage = stream.job.to_string();
            for r in &stream.tasks {
                threads.insert((r.device.0, r.span.thread));
                events.push(json!({
                    "name": r.op,
                    "cat": "task",
                    "ph": "X",
                    "ts": us(r.span.start_ns),
                    "dur": us(r.span.end_ns.saturating_sub(r.span.start_ns)),
                    "pid": r.device.0,
                    "tid": r.span.thread,
                    "args": {
                        "job": n,
                        "stage": stage,
                        "key": r.key.0,
                        "attempt": r.attempt,
                        "retry": r.retry,
                        "recompute": r.recompute,
                        "ok": r.ok,
                        "bytes_in": r.bytes_in,
                        "bytes_out": r.bytes_out,
                    },
                }))?;
            }
            for e in &stream.storage.events {
                events.push(json!({
                    "name": e.kind.name(),
                    "cat": "storage",
                    "ph": "X",
                    "ts": us(e.start_ns),
                    "dur": us(e.end_ns.saturating_sub(e.start_ns)),
                    "pid": STORAGE_PID,
                    "tid": 0,
                    "args": { "job": n, "stage": stage, "key": e.key.0, "bytes": e.bytes },
                }))?;
            }
            for m in &stream.memory {
                events.push(json!({
                    "name": "host memory reserved",
                    "ph": "C",
                    "ts": us(m.t_ns),
                    "pid": STORAGE_PID,
                    "args": { "bytes": m.reserved },
                }))?;
            }
        }
    }
    let devices: BTreeSet<u32> = threads.iter().map(|&(d, _)| d).collect();
    for d in devices {
        let name = format!("device{d} (cpu pool)");
        events.push(meta("process_name", d, None, &name))?;
    }
    for (d, t) in threads {
        events.push(meta("thread_name", d, Some(t), &format!("cpu{t}")))?;
    }
    events.push(meta("process_name", STORAGE_PID, None, "storage"))?;
    let mut out = events.out;
    out.write_all(b"],\n\"displayTimeUnit\":\"ms\",\"otherData\":")?;
    serde_json::to_writer(&mut out, &json!({ "jobs": jobs })).map_err(io::Error::from)?;
    out.write_all(b"}\n")?;
    out.flush()
}

/// A metadata event naming a process or a thread.
fn meta(what: &str, pid: u32, tid: Option<u32>, name: &str) -> Value {
    let mut event = json!({ "name": what, "ph": "M", "pid": pid, "args": { "name": name } });
    if let Some(tid) = tid {
        event["tid"] = json!(tid);
    }
    event
}
