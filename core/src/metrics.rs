//! Running totals over finished jobs and their Prometheus text exposition, shared by a
//! session's dashboard and the cluster scheduler's `/metrics` endpoint.

use crate::job::JobStats;
use std::fmt::Write as _;

/// Counters over every job finished (the sums of their [`JobStats`]) or failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Jobs finished.
    pub jobs_finished: u64,
    /// Job runs that ended in an error.
    pub jobs_failed: u64,
    /// Chunk tasks completed.
    pub tasks_run: u64,
    /// Bytes of chunks produced.
    pub bytes_produced: u64,
    /// Bytes spilled to disk.
    pub bytes_spilled: u64,
    /// Bytes read back from disk.
    pub bytes_read_back: u64,
    /// Chunks spilled to disk.
    pub chunks_spilled: u64,
    /// Chunks computed again (by plan or from lineage after a loss).
    pub chunks_recomputed: u64,
    /// Stored chunks lost.
    pub chunks_lost: u64,
    /// Chunk tasks run again after a failure.
    pub retries: u64,
    /// Actors restarted while jobs ran.
    pub restarts: u64,
}

impl Totals {
    /// Adds a finished job's statistics.
    pub fn add(&mut self, stats: &JobStats) {
        self.jobs_finished += 1;
        self.tasks_run += stats.chunks_run;
        self.bytes_produced += stats.bytes_produced;
        self.bytes_spilled += stats.storage.bytes_spilled;
        self.bytes_read_back += stats.storage.bytes_read_back;
        self.chunks_spilled += stats.storage.chunks_spilled;
        self.chunks_recomputed += stats.chunks_recomputed;
        self.chunks_lost += stats.chunks_lost;
        self.retries += stats.retries;
        self.restarts += stats.restarts;
    }
}

/// Prometheus text exposition (format 0.0.4), metric by metric; every name gets the
/// `tessera_` prefix.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// The content type the text is served with.
    pub const CONTENT_TYPE: &'static str = "text/plain; version=0.0.4; charset=utf-8";

    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// One sample of a metric without labels.
    pub fn metric(&mut self, name: &str, kind: &str, help: &str, value: u64) {
        self.family(name, kind, help, "", &[(String::new(), value)]);
    }

    /// A metric with one sample per value of the label `label` (none: one sample without
    /// labels, as [`Self::metric`]). Label values are escaped.
    pub fn family(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        label: &str,
        samples: &[(String, u64)],
    ) {
        let _ = writeln!(
            self.out,
            "# HELP tessera_{name} {help}\n# TYPE tessera_{name} {kind}"
        );
        for (value_of_label, value) in samples {
            if label.is_empty() {
                let _ = writeln!(self.out, "tessera_{name} {value}");
            } else {
                let escaped = value_of_label
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = writeln!(self.out, "tessera_{name}{{{label}=\"{escaped}\"}} {value}");
            }
        }
    }

    /// The counters of `totals`.
    pub fn totals(&mut self, t: &Totals) {
        let counters = [
            ("jobs_finished_total", "Jobs finished.", t.jobs_finished),
            (
                "jobs_failed_total",
                "Job runs that ended in an error.",
                t.jobs_failed,
            ),
            ("tasks_run_total", "Chunk tasks completed.", t.tasks_run),
            (
                "bytes_produced_total",
                "Bytes of chunks produced.",
                t.bytes_produced,
            ),
            (
                "bytes_spilled_total",
                "Bytes spilled to disk.",
                t.bytes_spilled,
            ),
            (
                "bytes_read_back_total",
                "Bytes read back from disk.",
                t.bytes_read_back,
            ),
            (
                "chunks_spilled_total",
                "Chunks spilled to disk.",
                t.chunks_spilled,
            ),
            (
                "chunks_recomputed_total",
                "Chunks computed again (by plan or from lineage after a loss).",
                t.chunks_recomputed,
            ),
            ("chunks_lost_total", "Stored chunks lost.", t.chunks_lost),
            (
                "retries_total",
                "Chunk tasks run again after a failure.",
                t.retries,
            ),
            (
                "restarts_total",
                "Actors restarted while jobs ran.",
                t.restarts,
            ),
        ];
        for (name, help, value) in counters {
            self.metric(name, "counter", help, value);
        }
    }

    /// The number of jobs in progress.
    pub fn jobs_running(&mut self, jobs: usize) {
        self.metric("jobs_running", "gauge", "Jobs in progress.", jobs as u64);
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_are_the_sums_of_the_finished_jobs() {
        let mut a = JobStats {
            chunks_run: 7,
            bytes_produced: 100,
            retries: 1,
            ..JobStats::default()
        };
        a.storage.bytes_spilled = 64;
        let b = JobStats {
            chunks_run: 5,
            chunks_recomputed: 2,
            restarts: 1,
            ..JobStats::default()
        };
        let mut t = Totals::default();
        t.add(&a);
        t.add(&b);
        assert_eq!(
            (t.jobs_finished, t.tasks_run, t.bytes_produced),
            (2, 12, 100)
        );
        assert_eq!(
            (t.bytes_spilled, t.retries, t.restarts, t.chunks_recomputed),
            (64, 1, 1, 2)
        );
    }

    #[test]
    fn the_exposition_is_prometheus_text_with_escaped_labels() {
        let mut e = Exposition::new();
        e.totals(&Totals {
            tasks_run: 42,
            ..Totals::default()
        });
        e.jobs_running(1);
        e.family(
            "worker_threads",
            "gauge",
            "Threads of each worker.",
            "worker",
            &[("a\"b\\c".into(), 2), ("d".into(), 4)],
        );
        let text = e.finish();
        assert!(
            text.contains("# TYPE tessera_tasks_run_total counter\ntessera_tasks_run_total 42\n")
        );
        assert!(text.contains("tessera_jobs_running 1\n"));
        assert!(text.contains("tessera_worker_threads{worker=\"a\\\"b\\\\c\"} 2\n"));
        assert!(text.contains("tessera_worker_threads{worker=\"d\"} 4\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').expect("name value");
            assert!(
                name.starts_with("tessera_") && value.parse::<u64>().is_ok(),
                "{line}"
            );
        }
    }
}
