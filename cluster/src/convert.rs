//! Job events between `tessera_core`'s types and the wire (the scheduler encodes, a
//! client decodes): a [`JobError`] as a `JobFailed`
//! message and back, progress as a `Progress` message.

use tessera_core::{JobError, JobId};
use tessera_kernels::KernelError;
use tessera_proto::pb::{self, job_event};
use tessera_proto::{decode_payload, encode_payload};

/// `error` as a payload that keeps its type across the wire; empty for the errors that
/// are about the cluster rather than the task (another worker's report, a lost worker).
pub fn kernel_error_payload(error: &KernelError) -> Vec<u8> {
    match error {
        KernelError::Remote { .. } | KernelError::DeviceUnavailable(_) => Vec::new(),
        typed => encode_payload(typed).unwrap_or_default(),
    }
}

/// The typed kernel error of a payload made by [`kernel_error_payload`], if any.
pub fn kernel_error(payload: &[u8]) -> Option<KernelError> {
    if payload.is_empty() {
        return None;
    }
    decode_payload(payload).ok()
}

/// The wire event of `job`'s progress.
pub fn progress_event(job: JobId, done: u64, total: u64) -> pb::JobEvent {
    pb::JobEvent {
        job_id: job.0,
        kind: Some(job_event::Kind::Progress(pb::Progress { done, total })),
    }
}

/// The wire event of `job`'s failure.
pub fn failed_event(job: JobId, error: &JobError) -> pb::JobEvent {
    let mut failed = pb::JobFailed {
        error: error.to_string(),
        ..Default::default()
    };
    match error {
        JobError::ChunkFailed { key, op, source } => {
            failed.kind = "chunk_failed".into();
            failed.chunk_key = key.0;
            failed.op = op.clone();
            failed.retryable = source.is_retryable();
            failed.kernel_error = kernel_error_payload(source);
            failed.killed_worker = matches!(source, KernelError::DeviceUnavailable(_));
            failed.cause = match source {
                KernelError::Remote { message, .. } | KernelError::DeviceUnavailable(message) => {
                    message.clone()
                }
                other => other.to_string(),
            };
        }
        JobError::ChunkLost {
            key,
            op,
            losses,
            cause,
        } => {
            failed.kind = "chunk_lost".into();
            failed.chunk_key = key.0;
            failed.op = op.clone();
            failed.losses = *losses;
            failed.cause = cause.clone();
        }
        JobError::ActorLost { actor, restarts } => {
            failed.kind = "actor_lost".into();
            failed.op = actor.clone();
            failed.losses = *restarts;
        }
        JobError::OutOfMemory(_) => failed.kind = "out_of_memory".into(),
        JobError::InvalidGraph(_) => failed.kind = "invalid_graph".into(),
        JobError::SystemStopped(why) => {
            failed.kind = "stopped".into();
            failed.cause = why.clone();
        }
    }
    pb::JobEvent {
        job_id: job.0,
        kind: Some(job_event::Kind::Failed(failed)),
    }
}

/// The [`JobError`] a `JobFailed` message describes (`scheduler` names the cluster in
/// errors that came from a worker).
pub fn job_error(failed: pb::JobFailed, scheduler: &str) -> JobError {
    let key = tessera_core::ChunkKey(failed.chunk_key);
    match failed.kind.as_str() {
        "chunk_failed" => {
            let source = if let Some(typed) = kernel_error(&failed.kernel_error) {
                typed
            } else if failed.killed_worker {
                KernelError::DeviceUnavailable(failed.cause)
            } else {
                KernelError::Remote {
                    worker: format!("a worker of {scheduler}"),
                    message: failed.cause,
                    retryable: failed.retryable,
                }
            };
            JobError::ChunkFailed {
                key,
                op: failed.op,
                source,
            }
        }
        "chunk_lost" => JobError::ChunkLost {
            key,
            op: failed.op,
            losses: failed.losses,
            cause: failed.cause,
        },
        "actor_lost" => JobError::ActorLost {
            actor: failed.op,
            restarts: failed.losses,
        },
        _ => JobError::SystemStopped(format!("on the cluster at {scheduler}: {}", failed.error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::ChunkKey;

    fn round_trip(error: &JobError) -> JobError {
        match failed_event(JobId(4), error).kind {
            Some(job_event::Kind::Failed(f)) => job_error(f, "s:1"),
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn typed_failures_survive_the_wire() {
        let lost = JobError::ChunkLost {
            key: ChunkKey(7),
            op: "persisted".into(),
            losses: 1,
            cause: "gone".into(),
        };
        assert_eq!(round_trip(&lost), lost);
        let actor = JobError::ActorLost {
            actor: "every worker".into(),
            restarts: 0,
        };
        assert_eq!(round_trip(&actor), actor);
        let killed = JobError::ChunkFailed {
            key: ChunkKey(3),
            op: "fused".into(),
            source: KernelError::DeviceUnavailable("worker w1 lost".into()),
        };
        assert_eq!(round_trip(&killed), killed);
        let remote = JobError::ChunkFailed {
            key: ChunkKey(3),
            op: "fused".into(),
            source: KernelError::Remote {
                worker: "w1".into(),
                message: "shape mismatch: 2 vs 3".into(),
                retryable: false,
            },
        };
        match round_trip(&remote) {
            JobError::ChunkFailed {
                key,
                source:
                    KernelError::Remote {
                        message, retryable, ..
                    },
                ..
            } => {
                assert_eq!(key, ChunkKey(3));
                assert_eq!(message, "shape mismatch: 2 vs 3");
                assert!(!retryable);
            }
            other => panic!("{other:?}"),
        }
        // A kernel's own error keeps its type: a parse error stays a parse error.
        let parse = JobError::ChunkFailed {
            key: ChunkKey(9),
            op: "read_csv".into(),
            source: KernelError::Frame(tessera_kernels::frame::FrameError::Parse {
                path: "/data/x.csv".into(),
                line: 4000,
                column: "b".into(),
                message: "cannot parse \"x4\" as Int64".into(),
            }),
        };
        assert_eq!(round_trip(&parse), parse);
        match round_trip(&JobError::SystemStopped("x".into())) {
            JobError::SystemStopped(m) => assert!(m.contains("s:1"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
