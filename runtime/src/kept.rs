//! Persisted data: chunks a persist job kept in a session's storage (spillable, under the
//! memory budget, see [`tessera_actors::KeptChunk`]) together with the lazy node they are
//! the values of. When storage loses them (a storage actor that died, a damaged spill
//! file) or another session reads them, they are computed again from that node.

use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use tessera_actors::{ChunkKey, KeptChunk, StoredInput};

/// Most times one job recomputes the persisted data it reads after storage lost some.
pub(crate) const MAX_RESTORES: u32 = 2;

/// Key space of the stored inputs of a graph that are persisted data (far above any task
/// key; chunks handed between the stages of one job keep their task keys).
const STORED_KEYS: u64 = 1 << 62;

/// True when `key` names persisted data read by a graph (see [`StoredInputs::add`]), false
/// for a task's chunk (or one handed on from an earlier stage, [`StoredInputs::add_at`]).
pub(crate) fn is_persisted_key(key: u64) -> bool {
    key >= STORED_KEYS
}

/// Persisted chunks of a node of type `N` (a tensor or frame node) and its lineage.
#[derive(Debug)]
pub(crate) struct Kept<N> {
    /// What the chunks are the values of.
    pub lineage: Arc<N>,
    held: Mutex<Held>,
}

#[derive(Debug)]
struct Held {
    /// The session whose storage holds the chunks.
    session: u64,
    chunks: Vec<Arc<KeptChunk>>,
}

impl<N> Kept<N> {
    /// The chunks `chunks` kept in the storage of session `session`, computed by `lineage`.
    pub fn new(lineage: Arc<N>, session: u64, chunks: Vec<Arc<KeptChunk>>) -> Kept<N> {
        Kept {
            lineage,
            held: Mutex::new(Held { session, chunks }),
        }
    }

    fn held(&self) -> Result<MutexGuard<'_, Held>> {
        self.held
            .lock()
            .map_err(|_| Error::Runtime("persisted data's lock poisoned".into()))
    }

    /// The handles on the chunks, in order.
    pub fn chunks(&self) -> Result<Vec<Arc<KeptChunk>>> {
        Ok(self.held()?.chunks.clone())
    }

    /// True when session `session`'s storage holds the chunks.
    pub fn is_in(&self, session: u64) -> Result<bool> {
        Ok(self.held()?.session == session)
    }

    /// Replaces the chunks by `chunks`, computed again in session `session`.
    pub fn replace(&self, session: u64, chunks: Vec<Arc<KeptChunk>>) -> Result<()> {
        *self.held()? = Held { session, chunks };
        Ok(())
    }
}

/// A node of a lazy graph that may hold persisted data (tensor and frame nodes).
pub(crate) trait Lineage: Sized {
    /// Unique within the process.
    fn node_id(&self) -> u64;
    /// The nodes it reads.
    fn reads(&self) -> Vec<&Arc<Self>>;
    /// Its persisted chunks, if it is persisted data.
    fn kept(&self) -> Option<&Kept<Self>>;
}

/// Computes again, with `persist`, the persisted data `root` reads (directly, not through
/// other persisted data) and holds it in session `session`: all of it with `all`, else what
/// another session holds.
pub(crate) fn restore<N: Lineage>(
    root: &Arc<N>,
    session: u64,
    all: bool,
    persist: impl Fn(&Arc<N>) -> Result<Vec<Arc<KeptChunk>>>,
) -> Result<()> {
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if !seen.insert(n.node_id()) {
            continue;
        }
        match n.kept() {
            Some(kept) => {
                if all || !kept.is_in(session)? {
                    kept.replace(session, persist(&kept.lineage)?)?;
                }
            }
            None => stack.extend(n.reads()),
        }
    }
    Ok(())
}

/// The stored inputs of a graph being planned, and the handles that keep them in storage
/// while its job runs.
#[derive(Debug, Default)]
pub(crate) struct StoredInputs {
    inputs: Vec<StoredInput>,
    holds: Vec<Arc<KeptChunk>>,
    /// Persisted inputs added so far (numbers their keys).
    next: u64,
}

impl StoredInputs {
    /// The key under which the graph's tasks read the kept chunk `chunk` (persisted data).
    pub fn add(&mut self, chunk: &Arc<KeptChunk>) -> ChunkKey {
        // Counted, not taken from the length: inputs may be removed.
        let key = ChunkKey(STORED_KEYS + self.next);
        self.next += 1;
        self.add_at(key, chunk);
        key
    }

    /// Makes the kept chunk `chunk` the input `key` (below the persisted key space: a chunk
    /// an earlier stage of the same job kept, read under the key its task had).
    pub fn add_at(&mut self, key: ChunkKey, chunk: &Arc<KeptChunk>) {
        self.inputs.push(StoredInput {
            key,
            id: chunk.id(),
            nbytes: chunk.nbytes(),
            given: false,
        });
        self.holds.push(Arc::clone(chunk));
    }

    /// The inputs, for a graph about to be submitted, giving its job ([`KeptChunk::give`])
    /// each one for which `give` holds and whose handle nothing else shares: the job gives
    /// that chunk up after its last read, and its input and handle leave this set.
    pub fn give_to_job(&mut self, give: impl Fn(ChunkKey) -> bool) -> Vec<StoredInput> {
        let mut graph_inputs = Vec::with_capacity(self.inputs.len());
        let pairs = std::mem::take(&mut self.inputs)
            .into_iter()
            .zip(std::mem::take(&mut self.holds));
        for (input, hold) in pairs {
            let hold = match give(input.key) {
                true => match Arc::try_unwrap(hold) {
                    Ok(chunk) => {
                        graph_inputs.push(chunk.give(input.key));
                        continue;
                    }
                    Err(shared) => shared,
                },
                false => hold,
            };
            graph_inputs.push(input);
            self.inputs.push(input);
            self.holds.push(hold);
        }
        graph_inputs
    }

    /// Drops the inputs for which `drop` holds, and the handles on them (storage frees a
    /// chunk once no handle is left).
    pub fn remove(&mut self, drop: impl Fn(ChunkKey) -> bool) {
        let (inputs, holds) = std::mem::take(&mut self.inputs)
            .into_iter()
            .zip(std::mem::take(&mut self.holds))
            .filter(|(input, _)| !drop(input.key))
            .unzip();
        self.inputs = inputs;
        self.holds = holds;
    }

    /// The size of each input, by key.
    pub fn sizes(&self) -> HashMap<ChunkKey, u64> {
        self.inputs.iter().map(|i| (i.key, i.nbytes)).collect()
    }

    /// The inputs, for [`tessera_actors::ChunkGraph::stored`].
    pub fn inputs(&self) -> Vec<StoredInput> {
        self.inputs.clone()
    }

    /// The handles (held by the caller until the job ends).
    pub fn holds(&self) -> Vec<Arc<KeptChunk>> {
        self.holds.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_actors::{ChunkId, JobId, KeptOwner};

    /// Records the chunks given up by dropped handles.
    #[derive(Default)]
    struct Owner(Mutex<Vec<ChunkId>>);

    impl KeptOwner for Owner {
        fn unkeep(&self, id: ChunkId) {
            self.0.lock().unwrap().push(id);
        }
    }

    fn id(key: u64) -> ChunkId {
        ChunkId {
            job: JobId(1),
            key: ChunkKey(key),
        }
    }

    #[test]
    fn only_unshared_handles_are_given_and_a_given_one_gives_nothing_up_when_dropped() {
        let owner = Arc::new(Owner::default());
        let handle = |key| Arc::new(KeptChunk::new(id(key), 8, owner.clone() as _));
        let (alone, shared, kept) = (handle(1), handle(2), handle(3));
        let mut stored = StoredInputs::default();
        stored.add_at(ChunkKey(1), &alone);
        stored.add_at(ChunkKey(2), &shared);
        stored.add_at(ChunkKey(3), &kept);
        drop(alone);
        // Chunks 1 and 2 are read for the last time; a caller still holds 2.
        let inputs = stored.give_to_job(|k| k != ChunkKey(3));
        let given: Vec<(u64, bool)> = inputs.iter().map(|i| (i.key.0, i.given)).collect();
        assert_eq!(given, vec![(1, true), (2, false), (3, false)]);
        let left: Vec<u64> = stored.inputs().iter().map(|i| i.key.0).collect();
        assert_eq!(left, vec![2, 3], "the given input left the set");
        assert!(owner.0.lock().unwrap().is_empty(), "nothing given up yet");
        drop((stored, shared, kept));
        let mut unkept = owner.0.lock().unwrap().clone();
        unkept.sort_by_key(|i| i.key.0);
        assert_eq!(
            unkept,
            vec![id(2), id(3)],
            "the job gives chunk 1 up, not its handle"
        );
    }
}
