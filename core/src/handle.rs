//! A submitted job as its submitter sees it ([`JobHandle`]: its events, its end, a way
//! to cancel it), wherever it runs: an actor system in this process or a cluster.

use crate::graph::GraphError;
use crate::job::{JobError, JobEvent, JobOutput};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::time::Duration;
use thiserror::Error;

/// Why the actor system cannot do what was asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ActorError {
    /// The configuration cannot work.
    #[error("invalid actor system configuration: {0}")]
    InvalidConfig(String),
    /// The actors could not be started.
    #[error("the actor system failed to start: {0}")]
    StartFailed(String),
    /// A submitted graph is malformed.
    #[error("invalid chunk graph: {0}")]
    InvalidGraph(#[from] GraphError),
    /// The actor system is no longer running.
    #[error("the actor system stopped: {0}")]
    Stopped(String),
    /// Shutting down took longer than allowed; the actor thread was left running.
    #[error("the actor system did not stop within {0:?}")]
    ShutdownTimedOut(Duration),
}

/// A submitted job, seen from any (non-actix) thread.
#[derive(Debug)]
pub struct JobHandle {
    events: Receiver<JobEvent>,
    /// How [`JobHandle::cancel`] reaches the job (none: it cannot be cancelled).
    cancel: Option<Canceller>,
}

/// How a job is cancelled: a hook of the component running it (the in-process planner,
/// a cluster client).
struct Canceller(Box<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Canceller")
    }
}

impl JobHandle {
    /// A handle reading a job's events from `events`, which [`JobHandle::cancel`] cannot
    /// stop.
    pub fn from_events(events: Receiver<JobEvent>) -> JobHandle {
        JobHandle {
            events,
            cancel: None,
        }
    }

    /// Like [`JobHandle::from_events`], with `cancel` called by [`JobHandle::cancel`]: it
    /// must end the job soon with [`JobError::SystemStopped`] ("cancelled …").
    pub fn from_events_with_cancel(
        events: Receiver<JobEvent>,
        cancel: impl Fn() + Send + Sync + 'static,
    ) -> JobHandle {
        JobHandle {
            events,
            cancel: Some(Canceller(Box::new(cancel))),
        }
    }

    /// Ends the job now through its hook (the in-process planner's cancel, or a cluster
    /// client's); it then finishes with [`JobError::SystemStopped`] ("cancelled …").
    /// Nothing for a job that already ended, nor for one read through
    /// [`JobHandle::from_events`].
    pub fn cancel(&self) {
        if let Some(Canceller(cancel)) = &self.cancel {
            cancel();
        }
    }

    /// The next event, or `None` after `timeout`. After [`JobEvent::Finished`] (or when the
    /// actor system has gone away) no event can come and this returns an error.
    pub fn recv_event(&self, timeout: Duration) -> Result<Option<JobEvent>, ActorError> {
        match self.events.recv_timeout(timeout) {
            Ok(event) => Ok(Some(event)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(ActorError::Stopped(
                "no more events: the job ended or the actor system stopped".into(),
            )),
        }
    }

    /// Blocks until the job ends, skipping progress events and a failed job's statistics.
    pub fn wait(self) -> Result<JobOutput, JobError> {
        loop {
            match self.events.recv() {
                Ok(JobEvent::Finished(result)) => return result,
                Ok(JobEvent::Progress { .. } | JobEvent::FailedStats(_)) => {}
                Err(_) => {
                    return Err(JobError::SystemStopped(
                        "the actor system stopped before the job finished".into(),
                    ))
                }
            }
        }
    }
}
