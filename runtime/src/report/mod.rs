//! Seeing what jobs did: the task streams the recorder keeps for every job
//! ([`tessera_actors::TaskStream`], in [`JobStats::stream`]) written out as a
//! self-contained HTML performance report ([`Session::performance_report`]) or as Chrome
//! trace-event JSON ([`Session::trace`]), which Perfetto and `chrome://tracing` open.
//!
//! Both are scoped like Dask's `with performance_report(...)`: a [`Recording`] collects
//! every job the session ends from its creation until [`Recording::finish`] (or its drop)
//! and then writes one file; a failed job is there with its error
//! ([`JobStats::failure`]) and the runs before it failed. The files show what the recorder saw and the jobs'
//! [`JobStats`], never numbers computed a second way.

mod trace;

use crate::error::{Error, Result};
use crate::session::Session;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use tessera_actors::JobStats;

/// What a [`Recording`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// One self-contained HTML page (charts drawn as inline SVG; no script, no network).
    Html,
    /// Chrome trace-event JSON (complete "X" events; pid = device, tid = worker thread).
    ChromeTrace,
}

/// The jobs ended (finished or failed) while a [`Recording`] is open, in the order they
/// ended.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    jobs: Mutex<Vec<JobStats>>,
}

/// The open recordings of one session, fed by every job that ends.
#[derive(Debug, Default)]
pub(crate) struct Collectors(Mutex<Vec<Weak<Collector>>>);

impl Collectors {
    /// Opens a new collector.
    fn open(&self) -> Arc<Collector> {
        let collector = Arc::new(Collector::default());
        if let Ok(mut open) = self.0.lock() {
            open.retain(|c| c.strong_count() > 0);
            open.push(Arc::downgrade(&collector));
        }
        collector
    }

    /// Hands an ended job's statistics (finished, or failed: `failure` set) to every open
    /// recording (a clone shares the task streams).
    pub(crate) fn job_ended(&self, stats: &JobStats) {
        let Ok(mut open) = self.0.lock() else {
            return;
        };
        open.retain(|c| c.strong_count() > 0);
        for collector in open.iter().filter_map(Weak::upgrade) {
            if let Ok(mut jobs) = collector.jobs.lock() {
                jobs.push(stats.clone());
            }
        }
    }
}

/// An open performance report or trace: every job the session finishes until
/// [`Recording::finish`] (or drop) goes into one file, written then.
#[derive(Debug)]
#[must_use = "a recording writes its file when finished or dropped"]
pub struct Recording {
    path: PathBuf,
    format: ReportFormat,
    collector: Arc<Collector>,
    written: bool,
}

impl Recording {
    /// Writes the file now and closes the recording.
    pub fn finish(mut self) -> Result<()> {
        self.write()
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The jobs recorded so far.
    pub fn jobs(&self) -> usize {
        self.collector.jobs.lock().map_or(0, |j| j.len())
    }

    fn write(&mut self) -> Result<()> {
        self.written = true;
        let jobs = self
            .collector
            .jobs
            .lock()
            .map(|j| j.clone())
            .map_err(|_| self.error("the recording's lock was poisoned"))?;
        let written = match self.format {
            ReportFormat::Html => {
                std::fs::write(&self.path, tessera_dashboard::html::document(&jobs))
            }
            ReportFormat::ChromeTrace => std::fs::File::create(&self.path)
                .and_then(|file| trace::write(&jobs, std::io::BufWriter::new(file))),
        };
        written.map_err(|e| self.error(e))
    }

    fn error(&self, cause: impl std::fmt::Display) -> Error {
        Error::Report {
            path: self.path.display().to_string(),
            cause: cause.to_string(),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if !self.written {
            if let Err(e) = self.write() {
                tracing::warn!("performance report: {e}");
            }
        }
    }
}

impl Session {
    /// Starts a performance report (Dask's `performance_report`): every job this session
    /// finishes until the returned [`Recording`] is finished or dropped goes into one
    /// self-contained HTML file at `path` — the task stream per worker thread coloured by
    /// op, progress per op, memory reserved, spilled and read back over time, the time per
    /// op, worker occupancy, each job's [`JobStats`] and its plan (ops per stage). The
    /// file's folder must exist; the file is written at the end.
    pub fn performance_report(&self, path: impl AsRef<Path>) -> Result<Recording> {
        self.recording(path.as_ref(), ReportFormat::Html)
    }

    /// Starts a trace: like [`Session::performance_report`], but the file is Chrome
    /// trace-event JSON (one complete event per chunk-task run, pid = device, tid = worker
    /// thread; storage events and the reserved memory too) for Perfetto or
    /// `chrome://tracing`.
    pub fn trace(&self, path: impl AsRef<Path>) -> Result<Recording> {
        self.recording(path.as_ref(), ReportFormat::ChromeTrace)
    }

    fn recording(&self, path: &Path, format: ReportFormat) -> Result<Recording> {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if path.file_name().is_none() || !folder.is_dir() {
            return Err(Error::Report {
                path: path.display().to_string(),
                cause: "not a file in an existing folder".into(),
            });
        }
        Ok(Recording {
            path: path.to_path_buf(),
            format,
            collector: self.inner.recordings.open(),
            written: false,
        })
    }
}
