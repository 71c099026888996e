//! The storage actor's state: the host memory tier, chunk id → `Arc<ChunkData>`, with byte
//! accounting against a budget (current and peak bytes). Nothing is spilled or refused yet:
//! going over the budget is only reported.

use crate::graph::ChunkKey;
use crate::job::JobId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use tessera_kernels::ChunkData;
use thiserror::Error;

/// A stored chunk's id: chunk keys are only unique within one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkId {
    /// The job owning the chunk.
    pub job: JobId,
    /// The chunk within the job.
    pub key: ChunkKey,
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/chunk{}", self.job, self.key)
    }
}

/// Why storage could not serve a request.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// The chunk is not stored.
    #[error("chunk {0} is not in storage")]
    Missing(ChunkId),
}

/// Chunks held in host memory, with byte accounting.
#[derive(Debug)]
pub struct ChunkStore {
    chunks: HashMap<ChunkId, Arc<ChunkData>>,
    bytes: u64,
    peak_bytes: u64,
    budget: u64,
}

fn nbytes(data: &ChunkData) -> u64 {
    data.nbytes() as u64
}

impl ChunkStore {
    /// An empty store with a host memory budget in bytes.
    pub fn new(budget: u64) -> ChunkStore {
        ChunkStore {
            chunks: HashMap::new(),
            bytes: 0,
            peak_bytes: 0,
            budget,
        }
    }

    /// Stores a chunk (replacing one with the same id).
    pub fn put(&mut self, id: ChunkId, data: Arc<ChunkData>) {
        let before = self.bytes;
        self.bytes += nbytes(&data);
        if let Some(old) = self.chunks.insert(id, data) {
            self.bytes -= nbytes(&old);
        }
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        if before <= self.budget && self.bytes > self.budget {
            tracing::warn!(
                bytes = self.bytes,
                budget = self.budget,
                "host memory tier over budget (spilling is not implemented yet)"
            );
        }
    }

    /// The chunks `ids` in order (a repeated id yields the same chunk again); with
    /// `release`, they are removed afterwards. Nothing changes when one is missing.
    pub fn get(
        &mut self,
        ids: &[ChunkId],
        release: bool,
    ) -> Result<Vec<Arc<ChunkData>>, StorageError> {
        let found = ids
            .iter()
            .map(|id| {
                self.chunks
                    .get(id)
                    .cloned()
                    .ok_or(StorageError::Missing(*id))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if release {
            self.release(ids);
        }
        Ok(found)
    }

    /// Drops the chunks `ids` that are stored; returns how many were.
    pub fn release(&mut self, ids: &[ChunkId]) -> usize {
        let mut released = 0;
        for id in ids {
            if let Some(old) = self.chunks.remove(id) {
                self.bytes -= nbytes(&old);
                released += 1;
            }
        }
        released
    }

    /// Chunks stored.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Bytes stored now.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The most bytes stored at once.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    /// The host memory budget.
    pub fn budget(&self) -> u64 {
        self.budget
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use tessera_kernels::{Buffer, HostTensor};

    /// A chunk of `n` i64 values (8·n bytes).
    pub(crate) fn chunk(n: usize) -> Arc<ChunkData> {
        Arc::new(ChunkData::Tensor(
            HostTensor::new(vec![n], Buffer::I64(vec![7; n])).unwrap(),
        ))
    }

    fn id(job: u64, key: u64) -> ChunkId {
        ChunkId {
            job: JobId(job),
            key: ChunkKey(key),
        }
    }

    #[test]
    fn accounts_bytes_and_peak() {
        let mut store = ChunkStore::new(100);
        store.put(id(0, 1), chunk(4));
        store.put(id(0, 2), chunk(10));
        store.put(id(1, 1), chunk(2)); // same key, other job: a different chunk
        assert_eq!(
            (store.len(), store.bytes(), store.peak_bytes()),
            (3, 128, 128)
        );
        assert!(store.bytes() > store.budget(), "over budget is accepted");
        store.put(id(0, 2), chunk(1)); // replace
        assert_eq!(store.bytes(), 56);
        assert_eq!(store.release(&[id(0, 1), id(0, 9)]), 1);
        assert_eq!(
            (store.len(), store.bytes(), store.peak_bytes()),
            (2, 24, 128)
        );
    }

    #[test]
    fn get_is_all_or_nothing_and_release_removes() {
        let mut store = ChunkStore::new(u64::MAX);
        let a = chunk(3);
        store.put(id(0, 1), a.clone());
        store.put(id(0, 2), chunk(1));
        assert_eq!(
            store.get(&[id(0, 1), id(0, 5)], true),
            Err(StorageError::Missing(id(0, 5)))
        );
        assert_eq!(store.len(), 2);
        let got = store.get(&[id(0, 1), id(0, 1)], false).unwrap();
        assert!(Arc::ptr_eq(&got[0], &a) && Arc::ptr_eq(&got[1], &a));
        let taken = store.get(&[id(0, 1), id(0, 1), id(0, 2)], true).unwrap();
        assert_eq!(taken.len(), 3);
        assert!(store.is_empty());
        assert_eq!(store.bytes(), 0);
    }
}
