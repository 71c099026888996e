//! Seeing a job: the Chrome trace holds one complete event per chunk task of the job, with
//! sane fields that add up to the job's statistics; the HTML report holds every panel and
//! the statistics' numbers, a failed job with its error (a frame job's stages together);
//! the recorder's cap bounds what a job keeps; bad paths are typed errors.

use crate::common::{builder, session, session_from, SpillParent, REPORT_PANELS};
use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera::dataframe::{from_arrow, Agg};
use tessera::{tensor, DType, DeviceBackend, Error, FaultInjector, FaultKind, JobStats, Tensor};

/// Monte Carlo pi over `n` points in chunks of `rows` rows: fused, reduced, combined.
fn pi(n: usize, rows: usize) -> Tensor {
    let data = tensor::random::default_rng(3)
        .uniform(-1.0, 1.0, &[n, 2])
        .rechunk(&[rows, 2]);
    let inside = (&data * &data).sum_axis(1).sqrt().lt(1.0).sum();
    inside.astype(DType::F64) * 4.0 / n as f64
}

/// The events of a trace file.
fn trace_events(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    trace["traceEvents"].as_array().unwrap().clone()
}

fn tasks(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .collect()
}

#[test]
fn the_trace_has_one_complete_event_per_chunk_task() {
    // The CPU pool's threads, whatever `TESSERA_BACKEND` the suite runs under.
    let s = session_from(builder().backend(DeviceBackend::Cpu));
    let spill = SpillParent::new("reports-trace");
    let path = spill.0.join("pi.json");
    let recording = s.trace(&path).unwrap();
    let (out, stats) = s.execute_with_stats(&pi(200_000, 10_000)).unwrap();
    assert!((out.item().unwrap().as_f64() - std::f64::consts::PI).abs() < 0.05);
    assert_eq!(recording.jobs(), 1);
    recording.finish().unwrap();

    let events = trace_events(&path);
    let tasks = tasks(&events);
    assert_eq!(
        tasks.len() as u64,
        stats.chunks_run,
        "one event per chunk task"
    );
    assert!(stats.chunks_run > 20, "{stats:?}");
    let mut per_op: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_thread: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
    let mut bytes_out = 0;
    for e in &tasks {
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        assert!(ts >= 0.0 && dur >= 0.0, "{e}");
        assert_eq!(e["pid"], 0, "the CPU pool is device 0");
        let tid = e["tid"].as_u64().unwrap();
        assert!(tid < 2, "two worker threads: {e}");
        let args = &e["args"];
        assert_eq!(
            (&args["ok"], &args["attempt"], &args["retry"]),
            (&Value::Bool(true), &Value::from(1), &Value::Bool(false))
        );
        bytes_out += args["bytes_out"].as_u64().unwrap();
        *per_op
            .entry(e["name"].as_str().unwrap().to_string())
            .or_default() += 1;
        by_thread.entry(tid).or_default().push((ts, ts + dur));
    }
    assert_eq!(
        per_op, stats.chunks_by_op,
        "ops as the statistics name them"
    );
    assert_eq!(bytes_out, stats.bytes_produced);
    // A worker thread runs one task at a time: its events never overlap.
    for spans in by_thread.values_mut() {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0 + 1e-3, "overlap on one thread: {w:?}");
        }
    }
    let named = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .count();
    assert_eq!(named, by_thread.len(), "every thread is named");
    assert_eq!(
        events[events.len() - 1]["ph"],
        "M",
        "metadata closes the list"
    );
}

/// The `data-stat` cells of job `job`'s table in `html`, by name.
fn stat_cells(html: &str, job: usize) -> BTreeMap<String, u64> {
    let table = html
        .split(&format!("id=\"job-{job}-stats\""))
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .unwrap_or_else(|| panic!("no table for job {job}"));
    table
        .split("<td data-stat=\"")
        .skip(1)
        .map(|cell| {
            let (name, rest) = cell.split_once("\">").unwrap();
            let value = rest.split('<').next().unwrap().parse().unwrap();
            (name.to_string(), value)
        })
        .collect()
}

fn expected_cells(stats: &JobStats) -> BTreeMap<String, u64> {
    let s = &stats.storage;
    let mut cells: BTreeMap<String, u64> = [
        ("chunks_run", stats.chunks_run),
        ("chunks_on_gpu", stats.chunks_on_gpu),
        ("bytes_produced", stats.bytes_produced),
        ("wall_time_ns", stats.wall_time.as_nanos() as u64),
        ("peak_stored_bytes", stats.peak_stored_bytes),
        ("peak_host_reserved", stats.peak_host_reserved),
        ("chunks_recomputed", stats.chunks_recomputed),
        ("retries", stats.retries),
        ("chunks_lost", stats.chunks_lost),
        ("restarts", stats.restarts),
        ("held_back", stats.held_back),
        ("storage.bytes_spilled", s.bytes_spilled),
        ("storage.bytes_read_back", s.bytes_read_back),
        ("storage.chunks_spilled", s.chunks_spilled),
        ("storage.spill_failures", s.spill_failures),
        ("storage.peak_disk_bytes", s.peak_disk_bytes),
        ("storage.chunks_dropped", s.chunks_dropped),
        ("storage.bytes_dropped", s.bytes_dropped),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (op, n) in &stats.chunks_by_op {
        cells.insert(format!("chunks_by_op.{op}"), *n);
    }
    cells
}

#[test]
fn the_report_holds_every_panel_and_the_job_statistics() {
    let spill = SpillParent::new("reports-html");
    // A host budget of a few 8 KiB chunks: the job spills and reads back.
    let s = session_from(
        builder()
            .chunk_bytes(8 << 10)
            .memory_budget(7 << 13)
            .disk_budget(16 << 20)
            .spill_dir(&spill.0),
    );
    let path = spill.0.join("report.html");
    let recording = s.performance_report(&path).unwrap();
    let x = tensor::arange_f64(0.0, 100_000.0, 1.0);
    let (out, first) = s.execute_with_stats(&(&x + &x)).unwrap();
    assert_eq!(out.as_slice::<f64>().unwrap()[99_999], 199_998.0);
    assert!(first.storage.chunks_spilled > 0, "{first:?}");
    let (_, second) = s.execute_with_stats(&pi(50_000, 5_000)).unwrap();
    recording.finish().unwrap();
    // Jobs after the recording are not in it.
    s.execute(&pi(1000, 100)).unwrap();

    let html = std::fs::read_to_string(&path).unwrap();
    for id in REPORT_PANELS {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "panel {id}"
        );
    }
    assert_eq!(stat_cells(&html, 0), expected_cells(&first));
    assert_eq!(stat_cells(&html, 1), expected_cells(&second));
    assert!(!html.contains("id=\"job-2-stats\""));
    // Self-contained: nothing to fetch, no script.
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("src=") && !html.contains("<script"));
    // The task stream drew the spills (red) and the memory panel a line per series.
    assert!(html.contains("spill chunk") || html.contains("spill ×"));
    assert!(html.contains("host memory reserved") && html.contains("read back (cumulative)"));
    let stream = &first.stream[0];
    assert!(stream
        .storage
        .events
        .iter()
        .any(|e| e.kind == tessera::StorageEventKind::Spill));
    let spilled: u64 = stream
        .storage
        .events
        .iter()
        .filter(|e| e.kind == tessera::StorageEventKind::Spill)
        .map(|e| e.bytes)
        .sum();
    assert_eq!(spilled, first.storage.bytes_spilled);
}

/// The text of job `job`'s failure paragraph in a report.
fn failure_paragraph(html: &str, job: usize) -> &str {
    html.split(&format!("data-failure=\"{job}\">"))
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .expect("the failure paragraph")
}

/// A job that fails goes into the report and the trace too: its heading says so with the
/// error, its statistics count the tasks that ran before (every combine fails here, after
/// the chunks' fused reductions ran), and the trace holds their runs.
#[test]
fn a_failed_job_is_in_the_report_with_its_error() {
    let spill = SpillParent::new("reports-failed");
    let faults = Arc::new(FaultInjector::new().on_nth(Some("combine"), 0, FaultKind::Error));
    let s = session_from(builder().chunk_bytes(8 << 10).faults(faults));
    let html_path = spill.0.join("failed.html");
    let trace_path = spill.0.join("failed.json");
    let report = s.performance_report(&html_path).unwrap();
    let trace = s.trace(&trace_path).unwrap();
    let err = s
        .execute(&pi(50_000, 5_000))
        .expect_err("every combine fails");
    assert!(err.to_string().contains("injected fault"), "{err}");
    report.finish().unwrap();
    trace.finish().unwrap();

    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("<h3>Job 0: failed</h3>"),
        "the failed job's heading"
    );
    let failure = failure_paragraph(&html, 0);
    assert!(
        failure.contains("combine") && failure.contains("injected fault"),
        "{failure}"
    );
    let cells = stat_cells(&html, 0);
    // The first combine runs once 8 partials exist (the tree's fan-in); the job may fail
    // before the other 2 of the 10 finish.
    assert!(cells["chunks_by_op.fused_reduce"] >= 8, "{cells:?}");
    assert!(
        !cells.contains_key("chunks_by_op.combine"),
        "no combine completed"
    );
    // The trace holds the fused reductions' runs (at least the 8 before the first
    // combine; the job may end before the other 2 finish) and the combine's failed
    // attempts.
    let events = trace_events(&trace_path);
    let ops: Vec<&str> = tasks(&events)
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        ops.iter().filter(|&&op| op == "fused_reduce").count() >= 8,
        "{ops:?}"
    );
    assert!(ops.contains(&"combine"), "{ops:?}");
    // The session goes on, and its next job is an ordinary one in a new report.
    s.execute(&tensor::arange(0, 5, 1)).unwrap();
}

/// A frame job whose later stage fails is one job in the report: the stage that ran
/// (the groupby's partials, handed on) and the failing one (its merges) together.
#[test]
fn a_multi_stage_frame_job_that_fails_is_in_the_report_with_every_stage() {
    let spill = SpillParent::new("reports-frame-failed");
    let faults = Arc::new(FaultInjector::new().on_nth(Some("group_merge"), 0, FaultKind::Error));
    // No broadcast or merge tree: the partials are handed on to a stage of merges.
    let s = session_from(builder().shuffle_rows(0).broadcast_bytes(0).faults(faults));
    let n = 20_000i64;
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 97)));
    let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
    let data = RecordBatch::try_from_iter([("k", k), ("a", a)]).unwrap();
    let sums = from_arrow(data, Some(1_000))
        .groupby(&["k"])
        .agg(&[("a", &[Agg::Sum])]);
    let html_path = spill.0.join("frame-failed.html");
    let report = s.performance_report(&html_path).unwrap();
    let err = sums.execute(&s).expect_err("every merge fails");
    assert!(err.to_string().contains("injected fault"), "{err}");
    report.finish().unwrap();

    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("<h3>Job 0: failed</h3>"), "one failed job");
    assert!(!html.contains("<h3>Job 1"), "the stages are one job");
    let cells = stat_cells(&html, 0);
    assert_eq!(
        cells.get("chunks_by_op.group_partial"),
        Some(&20),
        "the first stage's partials, one per chunk: {cells:?}"
    );
    let failure = failure_paragraph(&html, 0);
    assert!(failure.contains("group_merge"), "{failure}");
}

#[test]
fn the_cap_bounds_the_records_and_zero_switches_recording_off() {
    let capped = session_from(builder().task_stream(5));
    let (_, stats) = capped.execute_with_stats(&pi(100_000, 1000)).unwrap();
    let stream = &stats.stream[0];
    assert_eq!(stream.tasks.len(), 5);
    assert_eq!(stream.tasks_dropped, stats.chunks_run - 5);
    let summarised: u64 = stream.ops.iter().map(|o| o.tasks).sum();
    assert_eq!(
        summarised, stats.chunks_run,
        "every task is in the summaries"
    );

    let off = session_from(builder().task_stream(0));
    let spill = SpillParent::new("reports-off");
    let path = spill.0.join("off.html");
    let recording = off.performance_report(&path).unwrap();
    let (_, stats) = off.execute_with_stats(&pi(10_000, 1000)).unwrap();
    assert!(stats.stream.is_empty());
    drop(recording); // written on drop
    let html = std::fs::read_to_string(&path).unwrap();
    assert_eq!(stat_cells(&html, 0), expected_cells(&stats));
    assert!(html.contains("not recorded"));
}

#[test]
fn reports_to_paths_that_cannot_be_written_are_typed_errors() {
    let s = session();
    let missing = std::env::temp_dir().join("tessera-no-such-folder-for-reports/r.html");
    assert!(matches!(
        s.performance_report(&missing),
        Err(Error::Report { .. })
    ));
    assert!(matches!(s.trace(""), Err(Error::Report { .. })));
    // A folder where the file should go: the error comes when the file is written.
    let spill = SpillParent::new("reports-dir");
    let recording = s.trace(&spill.0).unwrap();
    let err = recording.finish().unwrap_err();
    assert!(
        matches!(&err, Error::Report { path, .. } if path.contains("reports-dir")),
        "{err}"
    );
}
