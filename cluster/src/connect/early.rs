//! Gathering a job's outputs while it runs: the scheduler announces each output as it is
//! computed (`JobEvent.chunk_finished` with its location), and [`EarlyGather`] fetches it
//! at once, one connection and one fetch at a time per worker, so that moving the outputs
//! overlaps the job's remaining tasks instead of following them.
//!
//! At the job's end the copies fetched are used where they are the copy the scheduler
//! names then (same holder, incarnation and attempt); an output recomputed since, or one
//! whose fetch failed, is fetched again from where it is now.

use crate::client::{ChunkClient, ClientConfig};
use std::collections::HashMap;
use std::sync::Arc;
use tessera_kernels::ChunkData;
use tessera_proto::pb::ChunkLocation;
use tessera_proto::ChunkTicket;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An output fetched: where from, and its data or why it could not be had.
struct Fetched {
    location: ChunkLocation,
    data: Result<Arc<ChunkData>, String>,
}

/// The outputs fetched early, by `(job, chunk key)`: where each copy came from, its data.
pub(super) type Gathered = HashMap<(u64, u64), (ChunkLocation, Arc<ChunkData>)>;

/// Fetches announced outputs in the background (see the module docs). Dropping it stops
/// the fetches.
pub(super) struct EarlyGather {
    config: Arc<ClientConfig>,
    /// Per worker (Flight address), the queue of its fetch loop.
    queues: HashMap<String, mpsc::UnboundedSender<ChunkLocation>>,
    /// Where the fetch loops send what they fetched (until `finish`).
    results: Option<mpsc::UnboundedSender<Fetched>>,
    received: mpsc::UnboundedReceiver<Fetched>,
    loops: Vec<JoinHandle<()>>,
}

impl EarlyGather {
    /// Nothing fetched yet; fetches will use `config`.
    pub fn new(config: Arc<ClientConfig>) -> EarlyGather {
        let (results, received) = mpsc::unbounded_channel();
        EarlyGather {
            config,
            queues: HashMap::new(),
            results: Some(results),
            received,
            loops: Vec::new(),
        }
    }

    /// Starts fetching the output at `location` (after the others of its worker).
    pub fn fetch(&mut self, location: ChunkLocation) {
        let Some(results) = &self.results else {
            return;
        };
        let address = location.flight_address.clone();
        let queue = self.queues.entry(address.clone()).or_insert_with(|| {
            let (queue, pending) = mpsc::unbounded_channel();
            let config = Arc::clone(&self.config);
            let fetch = fetch_loop(address, config, pending, results.clone());
            self.loops.push(tokio::spawn(fetch));
            queue
        });
        // The loop ends only once its queue is closed (in `finish`).
        let _ = queue.send(location);
    }

    /// Waits for every fetch started and returns the outputs that arrived.
    pub async fn finish(mut self) -> Gathered {
        // Closing the queues ends each loop after its last fetch; with the loops' copies
        // of `results` gone, `received` ends.
        self.queues.clear();
        self.results = None;
        let mut gathered = Gathered::new();
        while let Some(Fetched { location, data }) = self.received.recv().await {
            match data {
                Ok(data) => {
                    gathered.insert((location.job_id, location.chunk_key), (location, data));
                }
                Err(cause) => {
                    tracing::debug!(%cause, "an output fetched early will be fetched again");
                }
            }
        }
        gathered
    }
}

impl Drop for EarlyGather {
    fn drop(&mut self) {
        for fetch in &self.loops {
            fetch.abort();
        }
    }
}

/// True if `a` and `b` name the same copy of a chunk.
pub(super) fn same_copy(a: &ChunkLocation, b: &ChunkLocation) -> bool {
    (a.job_id, a.chunk_key, a.attempt, a.incarnation)
        == (b.job_id, b.chunk_key, b.attempt, b.incarnation)
        && a.flight_address == b.flight_address
}

/// Fetches the outputs queued for the worker at `address`, one after another on one
/// connection, until the queue is closed.
async fn fetch_loop(
    address: String,
    config: Arc<ClientConfig>,
    mut pending: mpsc::UnboundedReceiver<ChunkLocation>,
    results: mpsc::UnboundedSender<Fetched>,
) {
    let mut client: Option<ChunkClient> = None;
    while let Some(location) = pending.recv().await {
        let ticket = ChunkTicket::new(
            location.job_id,
            location.chunk_key,
            location.attempt,
            location.incarnation,
        );
        let data = match &mut client {
            Some(c) => c.fetch(&ticket).await.map_err(|e| e.to_string()),
            None => match ChunkClient::connect(&address, (*config).clone()).await {
                Ok(c) => client
                    .insert(c)
                    .fetch(&ticket)
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
        };
        let fetched = Fetched {
            location,
            data: data.map(Arc::new),
        };
        if results.send(fetched).is_err() {
            return;
        }
    }
}
