//! Gathering a job's outputs while it runs: the scheduler announces each output as it is
//! computed (`JobEvent.chunk_finished` with its location), and [`EarlyGather`] fetches it
//! at once, one fetch at a time per worker (over the client's connection to it), so that
//! moving the outputs overlaps the job's remaining tasks instead of following them.
//!
//! At the job's end the copies fetched are used where they are the copy the scheduler
//! names then (same holder, incarnation and attempt); an output recomputed since, or one
//! whose fetch failed, is fetched again from where it is now. Fetches from a worker the
//! job's end names no output on (one lost meanwhile, perhaps hung) are abandoned.

use crate::client::Connections;
use std::collections::{HashMap, HashSet};
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

/// One worker's fetch loop: its queue and its task.
struct FetchLoop {
    queue: mpsc::UnboundedSender<ChunkLocation>,
    task: JoinHandle<()>,
}

/// Fetches announced outputs in the background (see the module docs). Dropping it stops
/// the fetches.
pub(super) struct EarlyGather {
    connections: Connections,
    /// Per worker (Flight address), its fetch loop.
    loops: HashMap<String, FetchLoop>,
    /// Where the fetch loops send what they fetched (until `finish`).
    results: Option<mpsc::UnboundedSender<Fetched>>,
    received: mpsc::UnboundedReceiver<Fetched>,
}

impl EarlyGather {
    /// Nothing fetched yet; fetches will use `connections`.
    pub fn new(connections: Connections) -> EarlyGather {
        let (results, received) = mpsc::unbounded_channel();
        EarlyGather {
            connections,
            loops: HashMap::new(),
            results: Some(results),
            received,
        }
    }

    /// Starts fetching the output at `location` (after the others of its worker).
    pub fn fetch(&mut self, location: ChunkLocation) {
        let Some(results) = &self.results else {
            return;
        };
        let address = location.flight_address.clone();
        let fetcher = self.loops.entry(address.clone()).or_insert_with(|| {
            let (queue, pending) = mpsc::unbounded_channel();
            let connections = self.connections.clone();
            let task = tokio::spawn(fetch_loop(address, connections, pending, results.clone()));
            FetchLoop { queue, task }
        });
        // The loop ends only once its queue is closed (in `finish`).
        let _ = fetcher.queue.send(location);
    }

    /// Waits for the fetches started from the workers that `outputs` (the job's final
    /// locations) name, abandons the others, and returns the outputs that arrived.
    pub async fn finish(mut self, outputs: &[ChunkLocation]) -> Gathered {
        // Closing a queue ends its loop after its last fetch; with the loops' copies of
        // `results` gone (ended or aborted), `received` ends.
        let holders: HashSet<&str> = outputs.iter().map(|l| l.flight_address.as_str()).collect();
        for (address, fetcher) in self.loops.drain() {
            if !holders.contains(address.as_str()) {
                fetcher.task.abort();
            }
        }
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
        for fetcher in self.loops.values() {
            fetcher.task.abort();
        }
    }
}

/// True if `a` and `b` name the same copy of a chunk.
pub(super) fn same_copy(a: &ChunkLocation, b: &ChunkLocation) -> bool {
    (a.job_id, a.chunk_key, a.attempt, a.incarnation)
        == (b.job_id, b.chunk_key, b.attempt, b.incarnation)
        && a.flight_address == b.flight_address
}

/// Fetches the outputs queued for the worker at `address`, one after another, until the
/// queue is closed.
async fn fetch_loop(
    address: String,
    connections: Connections,
    mut pending: mpsc::UnboundedReceiver<ChunkLocation>,
    results: mpsc::UnboundedSender<Fetched>,
) {
    while let Some(location) = pending.recv().await {
        let ticket = ChunkTicket::for_copy(&location);
        let data = match connections.client(&address).await {
            Ok(mut client) => client.fetch(&ticket).await.map_err(|e| {
                connections.forget(&address);
                e.to_string()
            }),
            Err(e) => Err(e.to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientConfig;
    use crate::server::{serve, ChunkFlightService, ChunkSink, ChunkSource, ServerConfig};
    use crate::SourceError;
    use std::sync::Mutex;
    use std::time::Duration;
    use tessera_kernels::{Buffer, HostTensor};
    use tokio::net::TcpListener;

    /// Chunks by (job, key, attempt): what the test server serves.
    #[derive(Default)]
    struct Store(Mutex<HashMap<(u64, u64, u64), Arc<ChunkData>>>);

    impl ChunkSource for Store {
        fn chunk(&self, t: &ChunkTicket) -> Result<Option<Arc<ChunkData>>, SourceError> {
            let chunks = self.0.lock().unwrap_or_else(|e| e.into_inner());
            Ok(chunks.get(&(t.job_id, t.chunk_key, t.attempt)).cloned())
        }
    }

    impl ChunkSink for Store {
        fn put(&self, t: &ChunkTicket, data: ChunkData) -> Result<(), SourceError> {
            let mut chunks = self.0.lock().unwrap_or_else(|e| e.into_inner());
            chunks.insert((t.job_id, t.chunk_key, t.attempt), Arc::new(data));
            Ok(())
        }
    }

    fn values(v: &[f64]) -> ChunkData {
        let tensor = HostTensor::new(vec![v.len()], Buffer::F64(v.to_vec()));
        ChunkData::Tensor(tensor.expect("a valid tensor"))
    }

    fn location(address: &str, key: u64, attempt: u64) -> ChunkLocation {
        ChunkLocation {
            chunk_key: key,
            attempt,
            flight_address: address.to_string(),
            incarnation: 0,
            job_id: 7,
            nbytes: 16,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn copies_named_at_the_end_are_kept_and_fetches_from_other_holders_abandoned() {
        let store = Arc::new(Store::default());
        for (key, attempt, v) in [(1, 1, 1.0), (2, 1, 2.0), (2, 2, 22.0)] {
            let ticket = ChunkTicket::new(7, key, attempt, 0);
            store.put(&ticket, values(&[v, -v])).expect("stored");
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let live = format!("http://{}", listener.local_addr().expect("an address"));
        let service = ChunkFlightService::new(store.clone(), store, ServerConfig::default());
        let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, service, async {
            let _ = stopped.await;
        }));
        // A holder that accepts connections and never answers: its fetch would hang.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let silent = format!("http://{}", silent.local_addr().expect("an address"));
        // Patient enough that awaiting the silent holder would outlast the test's timeout.
        let config = ClientConfig {
            connect_timeout: Duration::from_secs(600),
            ..ClientConfig::within(Duration::from_secs(600))
        };
        let mut early = EarlyGather::new(Connections::new(config));
        early.fetch(location(&live, 1, 1));
        early.fetch(location(&live, 2, 1));
        early.fetch(location(&silent, 3, 1));
        // At the end, 2 was recomputed (attempt 2) and 3 moved to the live holder.
        let outputs = [
            location(&live, 1, 1),
            location(&live, 2, 2),
            location(&live, 3, 4),
        ];
        let gathered = tokio::time::timeout(Duration::from_secs(20), early.finish(&outputs))
            .await
            .expect("the silent holder's fetch is abandoned, not awaited");
        let (copy, one) = &gathered[&(7, 1)];
        assert!(same_copy(copy, &outputs[0]));
        assert_eq!(one.as_ref(), &values(&[1.0, -1.0]));
        let (copy, _) = &gathered[&(7, 2)];
        assert!(!same_copy(copy, &outputs[1]), "attempt 1 was fetched early");
        assert!(!gathered.contains_key(&(7, 3)));
    }
}
