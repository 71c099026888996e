//! The live dashboard: `/metrics` equals the sums of the jobs' statistics, the page has
//! every panel, the event stream sends the live and the last jobs' panels, many pages and
//! one that never reads do not stop a job or the session's shutdown, and the token and
//! loopback rules hold; and a cluster scheduler's `/metrics` sums its jobs (and counts a
//! failed one), lists its workers and, with a shared secret, answers only a caller bearing
//! it; its dashboard page shows the same jobs and workers, behind the same secret.

use crate::common::{builder, session_from, REPORT_PANELS};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tessera::{tensor, DType, Error, JobStats, LocalCluster, Progress, Session, Tensor};

/// `GET path` with extra header lines; the status and the body (the connection closes).
fn get(address: SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let mut stream = request(address, path, &format!("{headers}Connection: close\r\n"));
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Reads an open event stream until every one of `wanted` has appeared in it.
fn read_events(stream: &mut TcpStream, wanted: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    let mut buf = [0u8; 65536];
    while !wanted.iter().all(|w| seen.contains(w)) {
        assert!(Instant::now() < deadline, "events so far: {seen:.2000}");
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the event stream closed; so far: {seen:.2000}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

fn open_events(address: SocketAddr) -> TcpStream {
    request(address, "/events", "Accept: text/event-stream\r\n")
}

/// A connection that has sent `GET path` with the header lines `headers`.
fn request(address: SocketAddr, path: &str, headers: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{headers}\r\n"
    )
    .unwrap();
    stream
}

/// The `/metrics` samples by name.
fn metrics(address: SocketAddr) -> BTreeMap<String, u64> {
    let (status, body) = get(address, "/metrics", "");
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// The `/metrics` samples once `n` workers have their streams open (a worker registers
/// before its stream opens, and `LocalCluster::start` waits for registration only).
fn metrics_with_workers(address: SocketAddr, n: u64) -> BTreeMap<String, u64> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = metrics(address);
        if m["tessera_workers"] == n {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "{n} workers never took tasks: {m:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sum 0 + 1 + … + (n − 1) in chunks of `chunk`.
fn arange_sum(n: usize, chunk: usize) -> Tensor {
    tensor::arange(0, n as i64, 1)
        .rechunk(&[chunk])
        .astype(DType::F64)
        .sum()
}

/// Runs two sums (checked against their closed forms) on `s`; their statistics summed.
fn two_sums(s: &Session) -> JobStats {
    let mut all = JobStats::default();
    for (n, chunk) in [(10_000, 1_000), (5_000, 70)] {
        let (out, stats) = s.execute_with_stats(&arange_sum(n, chunk)).unwrap();
        assert_eq!(out.to_f64_vec(), vec![(n * (n - 1) / 2) as f64]);
        all.absorb(&stats);
    }
    all
}

/// Asserts that `metrics` count the two jobs of [`two_sums`] (`all`) and `failed` failed
/// ones, none running.
fn assert_sums(metrics: &BTreeMap<String, u64>, all: &JobStats, failed: u64) {
    assert_eq!(metrics["tessera_jobs_finished_total"], 2);
    assert_eq!(metrics["tessera_jobs_failed_total"], failed);
    assert_eq!(metrics["tessera_jobs_running"], 0);
    assert_eq!(metrics["tessera_tasks_run_total"], all.chunks_run);
    assert_eq!(metrics["tessera_bytes_produced_total"], all.bytes_produced);
}

#[test]
fn metrics_are_the_sums_of_the_jobs_statistics() {
    let s = session_from(builder().dashboard("127.0.0.1:0"));
    let address = s.dashboard_address().expect("a dashboard address");
    assert!(address.ip().is_loopback() && address.port() != 0);
    let before = metrics(address);
    assert_eq!(before["tessera_jobs_finished_total"], 0);
    assert_eq!(before["tessera_tasks_run_total"], 0);
    // A job refused before it runs is not counted.
    let bad = tensor::arange(0, 10, 1).reshape(&[3, 3]);
    assert!(s.execute(&bad).is_err());
    let all = two_sums(&s);
    let after = metrics(address);
    assert_sums(&after, &all, 0);
    assert!(all.chunks_run > 80, "{}", all.chunks_run);
    assert_eq!(after["tessera_retries_total"], all.retries);
    assert_eq!(
        after["tessera_bytes_spilled_total"],
        all.storage.bytes_spilled
    );
    assert_eq!(after["tessera_host_budget_bytes"], s.config().memory_budget);
    let (page_status, page) = get(address, "/", "");
    assert_eq!(page_status, 200);
    // The totals panel shows the same numbers as /metrics.
    let cell = format!(
        "data-metric=\"tasks_run_total\">{}</td>",
        after["tessera_tasks_run_total"]
    );
    assert!(page.contains(&cell), "{page:.3000}");
}

#[test]
fn the_page_and_its_events_carry_every_panel() {
    let s = session_from(builder().dashboard("127.0.0.1:0"));
    let address = s.dashboard_address().unwrap();
    let (status, page) = get(address, "/", "");
    assert_eq!(status, 200);
    for id in [
        "running",
        "memory-now",
        "workers",
        "totals",
        "jobs",
        "status",
    ] {
        assert!(
            page.contains(&format!("id=\"{id}\"")),
            "no {id}: {page:.3000}"
        );
    }
    assert!(page.contains("No job has finished yet"));
    assert!(page.contains("new EventSource('events'+location.search)"));
    assert!(
        page.find("EventSource") < page.find("<body>"),
        "the stream opens from the head"
    );
    let mut events = open_events(address);
    let first = read_events(&mut events, &["event: live", "event: jobs"]);
    assert!(first.contains("text/event-stream"), "{first:.500}");
    s.execute(&arange_sum(4_000, 500)).unwrap();
    // After the job, the stream sends the report's panels for it.
    let later = read_events(&mut events, &["id=\"task-stream\"", "id=\"job-stats\""]);
    assert!(later.contains("event: jobs"));
    let (_, page) = get(address, "/", "");
    for id in REPORT_PANELS {
        assert!(page.contains(&format!("id=\"{id}\"")), "no {id}");
    }
}

#[test]
fn many_pages_and_one_that_never_reads_neither_stop_a_job_nor_shutdown() {
    let s = session_from(builder().dashboard("127.0.0.1:0"));
    let address = s.dashboard_address().unwrap();
    let mut pages: Vec<TcpStream> = (0..20).map(|_| open_events(address)).collect();
    for page in &mut pages {
        read_events(page, &["event: live"]);
    }
    // This one asks for events and never reads them: its socket buffers fill up.
    let _stalled = open_events(address);
    for round in 0..3 {
        let n = 20_000 + round;
        let out = s.execute(&arange_sum(n, 100)).unwrap();
        assert_eq!(out.to_f64_vec(), vec![(n * (n - 1) / 2) as f64]);
    }
    assert_eq!(metrics(address)["tessera_jobs_finished_total"], 3);
    // Shutdown closes every page, the stalled one included, and returns.
    s.shutdown().unwrap();
    let mut rest = Vec::new();
    let mut page = pages.swap_remove(0);
    page.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let _ = page.read_to_end(&mut rest); // ends: the server closed it
    assert!(TcpStream::connect(address).is_err() || get_refused(address));
}

/// True when a request to a stopped dashboard gets no HTTP answer.
fn get_refused(address: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return true;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    !response.starts_with("HTTP/1.1 200")
}

#[test]
fn a_token_is_required_once_set() {
    let s = session_from(
        builder()
            .dashboard("127.0.0.1:0")
            .dashboard_token("tessera-test.token_1"),
    );
    let address = s.dashboard_address().unwrap();
    for path in ["/", "/metrics", "/events"] {
        assert_eq!(get(address, path, "").0, 401, "{path}");
        assert_eq!(get(address, &format!("{path}?token=wrong"), "").0, 401);
        assert_eq!(get(address, path, "Authorization: Bearer wrong\r\n").0, 401);
    }
    assert_eq!(
        get(address, "/metrics?token=tessera-test.token_1", "").0,
        200
    );
    let bearer = "Authorization: Bearer tessera-test.token_1\r\n";
    assert_eq!(get(address, "/metrics", bearer).0, 200);
    let (status, page) = get(address, "/?token=tessera-test.token_1", "");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"totals\""));
}

#[test]
fn off_loopback_needs_a_token_and_bad_settings_are_typed_errors() {
    let refused = builder().dashboard("0.0.0.0:0").build().unwrap_err();
    assert!(
        matches!(&refused, Error::InvalidArgument(m) if m.contains("only with a token")),
        "{refused}"
    );
    let bad_token = builder()
        .dashboard("127.0.0.1:0")
        .dashboard_token("a b")
        .build()
        .unwrap_err();
    assert!(
        matches!(bad_token, Error::InvalidArgument(_)),
        "{bad_token}"
    );
    let bad_address = builder().dashboard("not an address").build().unwrap_err();
    assert!(
        matches!(bad_address, Error::InvalidArgument(_)),
        "{bad_address}"
    );
    // A port already taken is a typed error naming the address, not a panic.
    let first = session_from(builder().dashboard("127.0.0.1:0"));
    let taken = first.dashboard_address().unwrap();
    let second = builder().dashboard(&taken.to_string()).build().unwrap_err();
    assert!(
        matches!(&second, Error::InvalidArgument(m) if m.contains(&taken.to_string())),
        "{second}"
    );
}

/// Which web endpoint a test cluster's scheduler serves.
#[derive(Clone, Copy)]
enum Web {
    Metrics,
    Dashboard,
}

/// A local cluster of `workers` one-thread workers whose scheduler serves `web` (behind
/// `secret`, if given), and that endpoint's loopback address.
fn cluster_serving(workers: usize, secret: Option<&str>, web: Web) -> (LocalCluster, SocketAddr) {
    let mut b = LocalCluster::builder()
        .workers(workers)
        .threads_per_worker(1);
    if let Some(secret) = secret {
        b = b.secret(secret);
    }
    let c = match web {
        Web::Metrics => b.metrics(),
        Web::Dashboard => b.dashboard(),
    }
    .start()
    .expect("the local cluster starts");
    let address = match web {
        Web::Metrics => c.metrics_address(),
        Web::Dashboard => c.dashboard_address(),
    };
    let address: SocketAddr = address.expect("an address").parse().unwrap();
    assert!(address.ip().is_loopback() && address.port() != 0);
    (c, address)
}

#[test]
fn a_scheduler_s_metrics_sum_its_jobs_and_list_its_workers() {
    let (c, address) = cluster_serving(2, None, Web::Metrics);
    let before = metrics_with_workers(address, 2);
    assert_eq!(before["tessera_jobs_finished_total"], 0);
    let s = session_from(c.session_builder().progress(Progress::Never));
    let all = two_sums(&s);
    // A job a worker's kernel refuses (QR of NaNs) counts as failed, not finished.
    let (_, r) = tessera::linalg::qr(&tensor::full(&[64, 4], f64::NAN));
    let err = s.execute(&r).expect_err("QR of NaNs fails");
    assert!(err.to_string().contains("NaN"), "{err}");
    let after = metrics(address);
    assert_sums(&after, &all, 1);
    let workers: Vec<(&String, &u64)> = after
        .iter()
        .filter(|(name, _)| name.starts_with("tessera_worker_threads{worker="))
        .collect();
    assert_eq!(workers.len(), 2, "{after:?}");
    assert!(
        workers.iter().all(|(_, &threads)| threads == 1),
        "{after:?}"
    );
    // Each worker's GPUs, as it registered them (none but under TESSERA_BACKEND=cuda).
    let info = s.cluster_info().unwrap().expect("a cluster session");
    for w in &info.worker_list {
        let gauge = format!("tessera_worker_gpus{{worker=\"{}\"}}", w.name);
        assert_eq!(after.get(&gauge), Some(&u64::from(w.gpus)), "{after:?}");
    }

    // With a shared secret, only a caller bearing it is answered.
    let secret = "metrics-shared-s3cret";
    let (_guarded, address) = cluster_serving(1, Some(secret), Web::Metrics);
    assert_eq!(get(address, "/metrics", "").0, 401);
    let wrong = "Authorization: Bearer not-it\r\n";
    assert_eq!(get(address, "/metrics", wrong).0, 401);
    let bearer = format!("Authorization: Bearer {secret}\r\n");
    let (status, body) = get(address, "/metrics", &bearer);
    assert_eq!(status, 200);
    assert!(body.contains("\ntessera_jobs_finished_total 0\n"), "{body}");
}

/// The text of the page's element that carries `data-metric="name"`.
fn page_metric(page: &str, name: &str) -> u64 {
    let tag = format!("data-metric=\"{name}\">");
    let at = page
        .find(&tag)
        .unwrap_or_else(|| panic!("no {name} in {page:.3000}"))
        + tag.len();
    page[at..].split('<').next().unwrap().parse().unwrap()
}

#[test]
fn a_scheduler_s_dashboard_shows_its_jobs_and_workers() {
    let (c, address) = cluster_serving(2, None, Web::Dashboard);
    assert!(c.metrics_address().is_none());
    metrics_with_workers(address, 2);
    let (status, page) = get(address, "/", "");
    assert_eq!(status, 200);
    assert!(page.contains("No job has finished yet."), "{page:.3000}");
    let s = session_from(c.session_builder().progress(Progress::Never));
    let all = two_sums(&s);
    let (_, r) = tessera::linalg::qr(&tensor::full(&[64, 4], f64::NAN));
    s.execute(&r).expect_err("QR of NaNs fails");
    // The dashboard's /metrics: the board's sums, then the workers' gauges.
    let after = metrics(address);
    assert_sums(&after, &all, 1);
    assert_eq!(after["tessera_workers"], 2);
    // The page: the same totals, both workers, the last jobs' report panels.
    let (status, page) = get(address, "/", "");
    assert_eq!(status, 200);
    assert_eq!(page_metric(&page, "jobs_finished_total"), 2);
    assert_eq!(page_metric(&page, "jobs_failed_total"), 1);
    assert_eq!(page_metric(&page, "tasks_run_total"), all.chunks_run);
    let info = s.cluster_info().unwrap().expect("a cluster session");
    assert_eq!(info.worker_list.len(), 2);
    for w in &info.worker_list {
        assert!(
            page.contains(&format!("<td>{}</td>", w.name)),
            "{page:.4000}"
        );
    }
    assert!(page.contains("No job is running."), "{page:.3000}");
    for panel in REPORT_PANELS {
        assert!(page.contains(&format!("id=\"{panel}")), "no {panel}");
    }
    let mut events = open_events(address);
    read_events(
        &mut events,
        &["event: live", "event: jobs", "id=\"workers\""],
    );

    // With a shared secret, the page is served only with it as the token.
    let secret = "dashboard-shared-s3cret";
    let (_guarded, address) = cluster_serving(1, Some(secret), Web::Dashboard);
    assert_eq!(get(address, "/", "").0, 401);
    assert_eq!(get(address, "/?token=not-it", "").0, 401);
    let (status, page) = get(address, &format!("/?token={secret}"), "");
    assert_eq!(status, 200);
    assert!(page.contains("id=\"workers\""), "{page:.3000}");
}
