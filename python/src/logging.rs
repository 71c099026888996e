//! Tessera's `tracing` events as records of Python's `logging`: an event of the Rust crate
//! `tessera_actors`, module `store`, goes to the logger `tessera.actors.store` (`tessera::session`
//! to `tessera.session`), so `logging.getLogger("tessera").setLevel(logging.INFO)` shows
//! what jobs do.
//!
//! Rust threads never take the GIL here: a thread holding it may be waiting for them. An
//! event at or above the level the `tessera` logger had when the last job started is
//! queued (at most [`QUEUED`] records; more are counted and reported as one warning), and
//! the thread that waits for a job empties the queue into `logging` while it waits and when
//! the job ends ([`deliver`]).

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use pyo3::prelude::*;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

/// Records waiting for a Python thread at most.
const QUEUED: usize = 10_000;

/// The most verbose level forwarded (a [`rank`]); 0 forwards nothing.
static LEVEL: AtomicU8 = AtomicU8::new(WARN_RANK);
/// Records not queued because the queue was full.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The queue between the Rust threads and Python.
static QUEUE: OnceLock<(Sender<Record>, Receiver<Record>)> = OnceLock::new();

const WARN_RANK: u8 = 2;

/// One event, formatted.
struct Record {
    rank: u8,
    logger: String,
    message: String,
}

/// 1 (error) to 5 (trace): larger is more verbose.
fn rank(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 1,
        Level::WARN => WARN_RANK,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

/// The `logging` level of a [`rank`].
fn python_level(rank: u8) -> u8 {
    match rank {
        1 => 40,
        2 => 30,
        3 => 20,
        4 => 10,
        _ => 5,
    }
}

/// The most verbose [`rank`] a logger of effective `logging` level `level` takes.
fn rank_of_python_level(level: i64) -> u8 {
    match level {
        l if l > 40 => 0,
        l if l > 30 => 1,
        l if l > 20 => WARN_RANK,
        l if l > 10 => 3,
        l if l > 5 => 4,
        _ => 5,
    }
}

/// `tessera_actors::store` → `tessera.actors.store`; `tessera::session` → `tessera.session`.
fn logger_name(target: &str) -> String {
    let dotted = target.replace("::", ".");
    match dotted.strip_prefix("tessera_") {
        Some(rest) => format!("tessera.{rest}"),
        None => dotted,
    }
}

/// The event's message, then its other fields as `name=value`.
#[derive(Default)]
struct Message(String, String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.1, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.1, " {}={value}", field.name());
        }
    }
}

/// Queues Tessera's events at the forwarded levels.
struct Forward;

impl Forward {
    fn wanted(metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("tessera")
            && rank(metadata.level()) <= LEVEL.load(Ordering::Relaxed)
    }
}

impl<S: Subscriber> Layer<S> for Forward {
    fn register_callsite(
        &self,
        metadata: &'static Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        match metadata.target().starts_with("tessera") {
            // Asked again at every event: the level follows the Python logger's.
            true => tracing::subscriber::Interest::sometimes(),
            false => tracing::subscriber::Interest::never(),
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        Forward::wanted(metadata)
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some((queue, _)) = QUEUE.get() else {
            return;
        };
        let metadata = event.metadata();
        let mut message = Message::default();
        event.record(&mut message);
        let record = Record {
            rank: rank(metadata.level()),
            logger: logger_name(metadata.target()),
            message: message.0 + &message.1,
        };
        if let Err(TrySendError::Full(_)) = queue.try_send(record) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Installs the forwarding as the process's `tracing` subscriber, unless the program
/// embedding Python (or a cluster program run in this process, `crate::programs`, which
/// logs to stderr) set one already. Done when the first job starts, not at import: a
/// process that runs a cluster program from the Python package never runs a job.
fn install() {
    if QUEUE.set(bounded(QUEUED)).is_ok() {
        // An error means another subscriber is in place: it keeps the events.
        let _ = tracing_subscriber::registry().with(Forward).try_init();
    }
}

/// Forwards events down to the current effective level of the `tessera` logger.
pub(crate) fn follow_level(py: Python<'_>) -> PyResult<()> {
    install();
    let logger = py
        .import("logging")?
        .call_method1("getLogger", ("tessera",))?;
    let level: i64 = logger.call_method0("getEffectiveLevel")?.extract()?;
    LEVEL.store(rank_of_python_level(level), Ordering::Relaxed);
    Ok(())
}

/// Hands the queued records to `logging` (on the calling, Python, thread).
pub(crate) fn deliver(py: Python<'_>) -> PyResult<()> {
    let Some((_, queue)) = QUEUE.get() else {
        return Ok(());
    };
    if queue.is_empty() && DROPPED.load(Ordering::Relaxed) == 0 {
        return Ok(());
    }
    let logging = py.import("logging")?;
    for record in queue.try_iter() {
        let logger = logging.call_method1("getLogger", (record.logger,))?;
        logger.call_method1("log", (python_level(record.rank), record.message))?;
    }
    let dropped = DROPPED.swap(0, Ordering::Relaxed);
    if dropped > 0 {
        let logger = logging.call_method1("getLogger", ("tessera",))?;
        let message = format!("{dropped} log records dropped: more came than Python took");
        logger.call_method1("warning", (message,))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_become_logger_names_and_levels_match_logging() {
        assert_eq!(logger_name("tessera_actors::store"), "tessera.actors.store");
        assert_eq!(logger_name("tessera::session"), "tessera.session");
        assert_eq!(logger_name("tessera"), "tessera");
        for (python, rank) in [(50, 0), (40, 1), (30, 2), (20, 3), (10, 4), (5, 5), (0, 5)] {
            assert_eq!(rank_of_python_level(python), rank, "logging level {python}");
        }
        for r in 1..=4 {
            assert_eq!(rank_of_python_level(i64::from(python_level(r))), r);
        }
    }
}
