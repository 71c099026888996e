//! A client's connection to a cluster: runs chunk graphs on the scheduler and gathers
//! their outputs from the workers that hold them, reporting through the same
//! [`JobHandle`] events as a local actor system, so the runtime runs the same jobs on
//! either.
//!
//! Outputs handed out as data are fetched over Flight and then released on the workers;
//! kept outputs (persisted data) stay on their workers as [`KeptChunk`]s whose last drop
//! releases them through the scheduler.

use crate::client::{ChunkClient, ClientConfig};
use crate::error::ClusterError;
use crate::scheduler::{job_error, MAX_CONTROL_MESSAGE_BYTES};
use crate::worker::connect_scheduler;
use crossbeam_channel::Sender;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tessera_actors::{
    ChunkGraph, ChunkId, ChunkKey, JobError, JobEvent, JobHandle, JobId, JobOutput, JobStats,
    KeptChunk, KeptOwner,
};
use tessera_proto::pb::{self, job_event, jobs_client::JobsClient, ChunkLocation};
use tessera_proto::{decode_payload, encode_payload, ChunkTicket, PROTOCOL_VERSION};
use tokio::runtime::Runtime;
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// What a cluster has now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    /// Workers registered.
    pub workers: u32,
    /// Their threads in all.
    pub nthreads: u32,
    /// Their memory limits in all, in bytes.
    pub memory_limit: u64,
}

/// A connection to a scheduler. Send + Sync; owns a small tokio runtime.
pub struct ClusterClient {
    runtime: Runtime,
    jobs: JobsClient<Channel>,
    address: String,
    releaser: Arc<Releaser>,
}

impl std::fmt::Debug for ClusterClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterClient({})", self.address)
    }
}

impl ClusterClient {
    /// Connects to the scheduler at `address` (`HOST:PORT`) within `timeout`.
    pub fn connect(address: &str, timeout: Duration) -> Result<ClusterClient, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tessera-client")
            .enable_all()
            .build()?;
        let channel = runtime.block_on(connect_scheduler(address, timeout))?;
        let jobs = JobsClient::new(channel)
            .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES);
        let (tx, rx) = mpsc::unbounded_channel();
        runtime.spawn(release_loop(jobs.clone(), rx));
        Ok(ClusterClient {
            runtime,
            jobs,
            address: address.to_string(),
            releaser: Arc::new(Releaser { tx }),
        })
    }

    /// The scheduler's address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The workers registered now.
    pub fn info(&self) -> Result<ClusterInfo, ClusterError> {
        let mut jobs = self.jobs.clone();
        let reply = self
            .runtime
            .block_on(jobs.cluster_info(pb::ClusterInfoRequest {}))
            .map_err(|s| self.status_error(&s))?
            .into_inner();
        Ok(ClusterInfo {
            workers: reply.workers,
            nthreads: reply.nthreads,
            memory_limit: reply.memory_limit,
        })
    }

    /// Runs `graph` on the cluster; the handle receives its progress and result, with the
    /// outputs gathered (or kept on the workers, if the graph keeps them).
    pub fn submit(&self, graph: ChunkGraph) -> Result<JobHandle, ClusterError> {
        let request = pb::SubmitJobRequest {
            protocol_version: PROTOCOL_VERSION,
            graph: encode_payload(&graph)?,
        };
        let (events, rx) = crossbeam_channel::unbounded();
        let run = RunJob {
            jobs: self.jobs.clone(),
            address: self.address.clone(),
            releaser: Arc::clone(&self.releaser),
            keep: graph.keep_outputs,
            events,
        };
        self.runtime.spawn(run.drive(request));
        Ok(JobHandle::from_events(rx))
    }

    fn status_error(&self, status: &tonic::Status) -> ClusterError {
        ClusterError::Scheduler {
            address: self.address.clone(),
            code: status.code(),
            message: status.message().to_string(),
        }
    }
}

/// Releases chunks on the cluster, batched, off the caller's thread.
struct Releaser {
    tx: mpsc::UnboundedSender<ChunkId>,
}

impl KeptOwner for Releaser {
    fn unkeep(&self, id: ChunkId) {
        let _ = self.tx.send(id);
    }
}

/// Sends releases as they come, a batch at a time.
async fn release_loop(mut jobs: JobsClient<Channel>, mut rx: mpsc::UnboundedReceiver<ChunkId>) {
    while let Some(first) = rx.recv().await {
        let mut chunks = vec![chunk_ref(first)];
        while let Ok(more) = rx.try_recv() {
            chunks.push(chunk_ref(more));
        }
        if let Err(status) = jobs
            .release_chunks(pb::ReleaseChunksRequest { chunks })
            .await
        {
            tracing::debug!(%status, "releasing chunks on the cluster");
        }
    }
}

fn chunk_ref(id: ChunkId) -> pb::ChunkRef {
    pb::ChunkRef {
        job_id: id.job.0,
        chunk_key: id.key.0,
    }
}

/// One job's conversation with the scheduler.
struct RunJob {
    jobs: JobsClient<Channel>,
    address: String,
    releaser: Arc<Releaser>,
    keep: bool,
    events: Sender<JobEvent>,
}

impl RunJob {
    async fn drive(mut self, request: pb::SubmitJobRequest) {
        let result = self.run(request).await;
        let _ = self.events.send(JobEvent::Finished(result));
    }

    async fn run(&mut self, request: pb::SubmitJobRequest) -> Result<JobOutput, JobError> {
        let lost = |why: String| JobError::SystemStopped(why);
        let mut stream = self
            .jobs
            .run_job(request)
            .await
            .map_err(|s| {
                lost(format!(
                    "the scheduler at {}: {}",
                    self.address,
                    s.message()
                ))
            })?
            .into_inner();
        let mut job = None;
        loop {
            let event = stream
                .message()
                .await
                .map_err(|s| {
                    lost(format!(
                        "lost the scheduler at {}: {}",
                        self.address,
                        s.message()
                    ))
                })?
                .ok_or_else(|| {
                    lost(format!(
                        "the scheduler at {} ended the job's events",
                        self.address
                    ))
                })?;
            match event.kind {
                Some(job_event::Kind::Accepted(_)) => job = Some(JobId(event.job_id)),
                Some(job_event::Kind::Progress(p)) => {
                    let _ = self.events.send(JobEvent::Progress {
                        done: p.done,
                        total: p.total,
                    });
                }
                Some(job_event::Kind::Done(done)) => {
                    let job = job.unwrap_or(JobId(event.job_id));
                    return self.gather(job, done).await;
                }
                Some(job_event::Kind::Failed(failed)) => {
                    return Err(job_error(failed, &self.address))
                }
                Some(job_event::Kind::ChunkFinished(_)) | None => {}
            }
        }
    }

    /// The finished job's output: handles on kept outputs, or their data fetched from the
    /// workers (and then released there).
    async fn gather(&self, job: JobId, done: pb::JobDone) -> Result<JobOutput, JobError> {
        let stats: JobStats = decode_payload(&done.stats).unwrap_or_default();
        let id = |l: &ChunkLocation| ChunkId {
            job: JobId(l.job_id),
            key: ChunkKey(l.chunk_key),
        };
        if self.keep {
            let owner: Arc<dyn KeptOwner> = Arc::clone(&self.releaser) as _;
            let kept = done
                .outputs
                .iter()
                .map(|l| Arc::new(KeptChunk::new(id(l), l.nbytes, Arc::clone(&owner))))
                .collect();
            return Ok(JobOutput {
                outputs: Vec::new(),
                kept,
                stats,
            });
        }
        let fetched = fetch_all(&done.outputs).await;
        // Outputs of this job are gathered (or unreachable): the workers may drop them.
        for l in &done.outputs {
            if l.job_id == job.0 {
                self.releaser.unkeep(id(l));
            }
        }
        let chunks = fetched.map_err(|cause| JobError::ChunkLost {
            key: ChunkKey(0),
            op: "gather".into(),
            losses: 1,
            cause,
        })?;
        Ok(JobOutput {
            outputs: done
                .outputs
                .iter()
                .map(|l| ChunkKey(l.chunk_key))
                .zip(chunks)
                .collect(),
            kept: Vec::new(),
            stats,
        })
    }
}

/// Fetches every chunk, one connection per worker.
async fn fetch_all(
    outputs: &[ChunkLocation],
) -> Result<Vec<Arc<tessera_kernels::ChunkData>>, String> {
    let mut clients: HashMap<&str, ChunkClient> = HashMap::new();
    let mut chunks = Vec::with_capacity(outputs.len());
    for l in outputs {
        let address = l.flight_address.as_str();
        let client = match clients.get_mut(address) {
            Some(c) => c,
            None => {
                let c = ChunkClient::connect(address, ClientConfig::default())
                    .await
                    .map_err(|e| e.to_string())?;
                clients.entry(address).or_insert(c)
            }
        };
        let ticket = ChunkTicket::new(l.job_id, l.chunk_key, l.attempt, l.incarnation);
        let data = client
            .fetch(&ticket)
            .await
            .map_err(|e| format!("gathering {ticket} from {address}: {e}"))?;
        chunks.push(Arc::new(data));
    }
    Ok(chunks)
}
