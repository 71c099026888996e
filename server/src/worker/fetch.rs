//! Gathering a task's inputs: those held here are read from storage, copies kept of
//! peers' chunks read more than once are taken from [`super::replicas`], the others are
//! fetched from the peers that hold them over Flight (a large one by one task at a time).
//!
//! A merge reads dozens of small parts from each peer, so small inputs on one peer travel
//! together in one do_get of a batch ticket, large ones alone ([`plan_fetches`]). Up to
//! [`FETCHES_AT_ONCE`] requests run at a time, over one cached connection per peer.
//!
//! A fetch gives up as soon as the scheduler declares its holder lost. A batch that fails
//! otherwise is fetched again chunk by chunk, so that the task's status names the chunk
//! that is missing.

use super::direct::Input;
use super::replicas::{CopyId, Replicas};
use super::Agent;
use futures::stream::{self, StreamExt};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tessera_cluster::client::{plan_fetches, SMALL_CHUNK_BYTES};
use tessera_cluster::error::WireError;
use tessera_proto::pb::ChunkLocation;
use tessera_proto::ChunkTicket;
use tokio::sync::broadcast;

/// Requests for one task's inputs in flight at once.
const FETCHES_AT_ONCE: usize = 16;

/// An input as the gather found it, or why it could not be had.
type Gathered = Result<Input, Missing>;

/// Why an input could not be had.
#[derive(Clone, Debug)]
pub(super) struct Missing {
    /// What went wrong, naming the chunk and its holder.
    pub reason: String,
    /// Its holder's storage dropped it, to be computed again (no loss).
    pub dropped: bool,
}

impl Missing {
    fn because(reason: impl Into<String>) -> Missing {
        Missing {
            reason: reason.into(),
            dropped: false,
        }
    }
}

impl Agent {
    /// The inputs at `locations`, in order; for each, the input, or why it is missing.
    pub(super) async fn gather_inputs(&self, locations: &[&ChunkLocation]) -> Vec<Gathered> {
        let mut gathered: Vec<Option<Gathered>> = locations
            .iter()
            .map(|l| {
                if let Some(h) = self.held.get(l.job_id, l.chunk_key, l.attempt) {
                    return Some(Ok(Input::Held(h)));
                }
                let copy = self.replicas().get(copy_id(l));
                copy.map(|data| Ok(Input::Fetched(data)))
            })
            .collect();
        let remote: Vec<usize> = (0..locations.len())
            .filter(|&i| gathered[i].is_none())
            .collect();
        let remote_locations: Vec<&ChunkLocation> = remote.iter().map(|&i| locations[i]).collect();
        let requests = plan_fetches(&remote_locations)
            .into_iter()
            .map(|request| request.into_iter().map(|r| remote[r]).collect::<Vec<_>>());
        let mut fetches = Vec::new();
        for request in requests {
            let batch: Vec<&ChunkLocation> = request.iter().map(|&i| locations[i]).collect();
            fetches.push(async move {
                let inputs = match batch[..] {
                    [one] if one.nbytes > SMALL_CHUNK_BYTES => self.fetch_in_turn(one).await,
                    _ => self.fetch_and_keep(&batch).await,
                };
                (request, inputs)
            });
        }
        let mut fetched = stream::iter(fetches).buffer_unordered(FETCHES_AT_ONCE);
        while let Some((request, inputs)) = fetched.next().await {
            for (i, input) in request.into_iter().zip(inputs) {
                gathered[i] = Some(input);
            }
        }
        gathered
            .into_iter()
            .map(|g| g.unwrap_or_else(|| Err(Missing::because("the input was never fetched"))))
            .collect()
    }

    /// The copies of peers' chunks kept here.
    pub(super) fn replicas(&self) -> MutexGuard<'_, Replicas> {
        self.replicas.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The large chunk at `location`, fetched while no other task of this worker fetches
    /// it: one that waited takes the copy the first kept, if it was kept (a hashed join
    /// side is fetched and hashed once, not by every probe queued here at once).
    async fn fetch_in_turn(&self, location: &ChunkLocation) -> Vec<Gathered> {
        let id = copy_id(location);
        let turn = self.replicas().turn(id);
        let inputs = {
            let _mine = turn.lock().await;
            let kept = self.replicas().get(id);
            match kept {
                Some(data) => vec![Ok(Input::Fetched(data))],
                None => self.fetch_and_keep(&[location]).await,
            }
        };
        self.replicas().end_turn(id, turn);
        inputs
    }

    /// The inputs at `locations`, all on one holder ([`Self::fetch_from_holder`]); those
    /// fetched are offered to the copies kept here.
    async fn fetch_and_keep(&self, locations: &[&ChunkLocation]) -> Vec<Gathered> {
        let inputs = self.fetch_from_holder(locations).await;
        for (location, input) in locations.iter().zip(&inputs) {
            if let Ok(Input::Fetched(data)) = input {
                self.replicas().fetched(copy_id(location), data);
            }
        }
        inputs
    }

    /// The inputs at `locations`, all on one holder, in one request; if that fails other
    /// than by the holder's loss, one request each, to say which is missing.
    async fn fetch_from_holder(&self, locations: &[&ChunkLocation]) -> Vec<Gathered> {
        let all = match self.fetch_batch(locations).await {
            Ok(inputs) => return inputs.into_iter().map(Ok).collect(),
            Err(failed) => failed,
        };
        if locations.len() == 1 || all.lost {
            return locations.iter().map(|_| Err(all.missing.clone())).collect();
        }
        let mut each = Vec::with_capacity(locations.len());
        for &location in locations {
            each.push(match self.fetch_batch(&[location]).await {
                Ok(mut one) => one
                    .pop()
                    .ok_or_else(|| Missing::because("no chunk fetched")),
                Err(e) => Err(e.missing),
            });
        }
        each
    }

    /// Fetches the chunks at `locations` (all on one holder) in one do_get, given up at
    /// once if the scheduler says the holder is lost.
    async fn fetch_batch(&self, locations: &[&ChunkLocation]) -> Result<Vec<Input>, Failed> {
        let tickets: Vec<ChunkTicket> =
            locations.iter().map(|l| ChunkTicket::for_copy(l)).collect();
        let (Some(first), Some(ticket)) = (locations.first(), ChunkTicket::batch(&tickets)) else {
            return Ok(Vec::new());
        };
        let address = &first.flight_address;
        let lost = || Failed {
            missing: Missing::because(format!(
                "{ticket} from {address}: the scheduler lost that worker"
            )),
            lost: true,
        };
        let mut notices = self.peers.lost_tx.subscribe();
        if self.peers.is_lost(first.incarnation) {
            return Err(lost());
        }
        let fetched = tokio::select! {
            fetched = self.fetch(address, &ticket) => fetched,
            () = wait_for_loss(&mut notices, first.incarnation) => return Err(lost()),
        };
        fetched.map_err(|missing| Failed {
            missing: Missing {
                reason: format!("{ticket} from {address}: {}", missing.reason),
                ..missing
            },
            lost: false,
        })
    }

    /// Fetches what `ticket` names from `address`, over a cached connection (given up
    /// after an error, unless the holder answered that it dropped a chunk).
    async fn fetch(&self, address: &str, ticket: &ChunkTicket) -> Result<Vec<Input>, Missing> {
        let mut client = self
            .connections
            .client(address)
            .await
            .map_err(|e| Missing::because(e.to_string()))?;
        match client.fetch_batch(ticket).await {
            Ok(chunks) => Ok(chunks
                .into_iter()
                .map(|data| Input::Fetched(Arc::new(data)))
                .collect()),
            Err(e) => {
                let dropped = matches!(e, WireError::Dropped(_));
                if !dropped {
                    self.connections.forget(address);
                }
                Err(Missing {
                    reason: e.to_string(),
                    dropped,
                })
            }
        }
    }
}

/// The copy a location names.
fn copy_id(location: &ChunkLocation) -> CopyId {
    (location.job_id, location.chunk_key, location.attempt)
}

/// Why a fetch failed, and whether because its holder was lost.
struct Failed {
    missing: Missing,
    lost: bool,
}

/// Workers the scheduler declared lost, by incarnation, and the signal that wakes fetches
/// waiting on one.
pub(super) struct LostPeers {
    lost: Mutex<HashSet<u64>>,
    lost_tx: broadcast::Sender<u64>,
}

impl LostPeers {
    pub(super) fn new() -> LostPeers {
        LostPeers {
            lost: Mutex::new(HashSet::new()),
            lost_tx: broadcast::channel(64).0,
        }
    }

    /// The worker of `incarnation` is gone.
    pub(super) fn declare(&self, incarnation: u64) {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(incarnation);
        let _ = self.lost_tx.send(incarnation);
    }

    fn is_lost(&self, incarnation: u64) -> bool {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&incarnation)
    }
}

/// Returns once `incarnation` is declared lost on `notices` (never, if the channel closes).
async fn wait_for_loss(notices: &mut broadcast::Receiver<u64>, incarnation: u64) {
    loop {
        match notices.recv().await {
            Ok(i) if i == incarnation => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}
