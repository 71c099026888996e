//! Split tasks (a shuffle's hash partition): the task's output, a chunk of several parts,
//! is stored as one chunk per part, so each part has its own next use, is spilled, read
//! back and released on its own, and a reader of one part never reads back the others.
//!
//! In the graph index a split task's consumers are its parts and each part's one input is
//! the task, so lineage needs nothing special: a lost part is recomputed by running the
//! task again (its released inputs first), and when the task finishes again only the
//! parts still pending (lost and still needed) are stored; the others are in storage
//! already or no longer needed.

use super::{InFlight, Job, PlannerAction, Produced, Status};
use crate::graph::ChunkKey;
use crate::job::{JobError, JobId};
use crate::memory::{MemoryPool, Reservation};
use crate::storage::PutInfo;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tessera_kernels::{ChunkData, KernelError};

impl Job {
    /// The split task at `pos` produced `data`: its pending parts are stored, each as a
    /// chunk of its own reserved in `pool` until storage holds it, and their readers
    /// woken; the actions that follow. An error (naming the task) when `data` is not a
    /// chunk of as many parts as the task has.
    pub(super) fn finish_split(
        &mut self,
        id: JobId,
        pos: usize,
        produced: Produced,
        in_flight: &HashMap<(JobId, ChunkKey), InFlight>,
        ready: &mut BTreeSet<(JobId, usize)>,
        pool: &Arc<dyn MemoryPool>,
    ) -> Result<Vec<PlannerAction>, JobError> {
        let op = self.tasks[pos].work.name();
        let parts = self.index.parts(pos).to_vec();
        let failed = |source| JobError::ChunkFailed {
            key: self.tasks[pos].key,
            op: op.to_string(),
            source,
        };
        let pieces: Vec<(u64, Option<Arc<ChunkData>>)> = match produced {
            Produced::Data(data, _) => split_parts(data, parts.len())
                .map_err(failed)?
                .into_iter()
                .map(|p| (p.nbytes() as u64, Some(p)))
                .collect(),
            // Parts held where they were computed, one size each.
            Produced::Held(sizes) if sizes.len() == parts.len() => {
                sizes.into_iter().map(|n| (n, None)).collect()
            }
            Produced::Held(sizes) => {
                return Err(failed(KernelError::ShapeMismatch(format!(
                    "a task split into {} parts was held as {} parts",
                    parts.len(),
                    sizes.len()
                ))))
            }
        };
        let mut actions = Vec::new();
        self.complete(id, pos, 0, &mut actions);
        for (part, (nbytes, piece)) in parts.into_iter().zip(pieces) {
            if self.tasks[part].status != Status::Pending {
                continue; // stored still, or no longer needed
            }
            if let Some(data) = piece {
                actions.push(PlannerAction::Store {
                    job: id,
                    key: self.tasks[part].key,
                    data,
                    info: PutInfo {
                        op,
                        next_use: self.next_use(id, part, in_flight),
                        shared: false,
                        recompute: None,
                    },
                    reservation: Some(Reservation::new(Arc::clone(pool), nbytes)),
                });
            }
            self.complete(id, part, nbytes, &mut actions);
            self.wake_readers(id, part, in_flight, ready);
        }
        Ok(actions)
    }
}

/// The `n` parts of a chunk of several parts: the tables of a partitioned table, the
/// tensors of a multi-part tensor chunk. An error when `data` is not a chunk of `n` parts.
pub fn split_parts(data: Arc<ChunkData>, n: usize) -> Result<Vec<Arc<ChunkData>>, KernelError> {
    let wrong = |what: String| {
        KernelError::ShapeMismatch(format!(
            "a task split into {n} parts produced {what}, not a chunk of {n} parts"
        ))
    };
    if !matches!(data.as_ref(), ChunkData::Tables(_) | ChunkData::Parts(_)) {
        return Err(wrong(format!("a {}", data.kind_name())));
    }
    // The planner holds the only handle on a finished task's output: no copy is made.
    let pieces: Vec<Arc<ChunkData>> =
        match Arc::try_unwrap(data).unwrap_or_else(|shared| (*shared).clone()) {
            ChunkData::Tables(tables) => tables
                .into_iter()
                .map(|t| Arc::new(ChunkData::Table(t)))
                .collect(),
            ChunkData::Parts(tensors) => tensors
                .into_iter()
                .map(|t| Arc::new(ChunkData::Tensor(t)))
                .collect(),
            other => return Err(wrong(format!("a {}", other.kind_name()))),
        };
    if pieces.len() != n {
        return Err(wrong(format!("{} parts", pieces.len())));
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::chunk;
    use arrow::array::{Int64Array, RecordBatch};
    use tessera_kernels::{Buffer, HostTensor};

    fn table(values: &[i64]) -> RecordBatch {
        RecordBatch::try_from_iter([(
            "k",
            Arc::new(Int64Array::from(values.to_vec())) as arrow::array::ArrayRef,
        )])
        .unwrap()
    }

    #[test]
    fn tables_and_tensors_split_into_their_parts_in_order() {
        let (a, b) = (table(&[1, 2]), table(&[]));
        let parts = split_parts(Arc::new(ChunkData::Tables(vec![a.clone(), b.clone()])), 2);
        assert_eq!(
            parts.unwrap(),
            vec![Arc::new(ChunkData::Table(a)), Arc::new(ChunkData::Table(b))]
        );
        let t = HostTensor::new(vec![2], Buffer::F64(vec![1.0, 2.0])).unwrap();
        let parts = split_parts(Arc::new(ChunkData::Parts(vec![t.clone()])), 1).unwrap();
        assert_eq!(parts, vec![Arc::new(ChunkData::Tensor(t))]);
    }

    #[test]
    fn a_chunk_of_the_wrong_kind_or_count_is_an_error_naming_both() {
        let err = split_parts(chunk(4), 3).unwrap_err().to_string();
        assert!(err.contains("3 parts") && err.contains("tensor"), "{err}");
        let two = Arc::new(ChunkData::Tables(vec![table(&[1]), table(&[2])]));
        let err = split_parts(two, 3).unwrap_err().to_string();
        assert!(err.contains("produced 2 parts"), "{err}");
    }
}
