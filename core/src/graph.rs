//! The chunk graph: chunk keys, chunk tasks (op plus input keys) and their lineage.
//!
//! A [`ChunkGraph`] lists its tasks in a topological order chosen by the runtime (depth
//! first, so chunks can be released early); a task's position is its scheduling priority,
//! lower first. [`ChunkGraph::index`] validates the graph and builds the position-based
//! adjacency the planner works with.

use crate::ids::ChunkId;
use crate::ids::DeviceKind;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use tessera_kernels::ChunkOp;
use thiserror::Error;

/// Names one chunk of a graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkKey(pub u64);

impl fmt::Display for ChunkKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One chunk task: the op that computes chunk `key` from the chunks `inputs` (in the
/// order the op expects them).
///
/// A task with `parts` (a shuffle's hash partition) produces a chunk of that many parts
/// (a partitioned table): the planner stores part `i` as a chunk of its own under
/// `parts[i]`, with its own reader count and release, and `key` names no stored chunk,
/// so tasks read the parts, never `key`. Recomputing a lost part runs the task again and
/// stores only the parts still needed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkTask {
    /// The chunk this task produces (the task's name when it is split into `parts`).
    pub key: ChunkKey,
    /// How to compute it.
    pub op: ChunkOp,
    /// The chunks it reads, in the op's input order (a key may repeat).
    pub inputs: Vec<ChunkKey>,
    /// The keys its output's parts are stored under, in part order (empty: the output is
    /// stored whole under `key`).
    pub parts: Vec<ChunkKey>,
    /// The kind of device the user asked this task to run on (`Tensor::on`); `None`: the
    /// planner's choice (see `PlannerState`'s placement).
    pub device: Option<DeviceKind>,
}

impl ChunkTask {
    /// A task storing its output whole under `key`.
    pub fn new(key: ChunkKey, op: ChunkOp, inputs: Vec<ChunkKey>) -> ChunkTask {
        ChunkTask {
            key,
            op,
            inputs,
            parts: Vec::new(),
            device: None,
        }
    }
}

/// A chunk an earlier job kept in storage (persisted data), read by this graph's tasks
/// under `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredInput {
    /// The key this graph's tasks name it by.
    pub key: ChunkKey,
    /// Where storage keeps it (see [`crate::KeptChunk`]); the submitter holds the handle
    /// while the job runs, unless it gave it to the job (`given`).
    pub id: ChunkId,
    /// Its size in bytes.
    pub nbytes: u64,
    /// The submitter gave its hold on the chunk to the job ([`crate::KeptChunk::give`]):
    /// the planner gives it up as soon as the job's last reader of it has run (or when the
    /// job ends first), so a stage frees what it has read while it runs, as Dask releases a
    /// key once its dependents are done. Never set on an output.
    pub given: bool,
}

/// A job's chunk tasks in topological order (position = priority) and its result chunks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkGraph {
    /// Chunks kept by earlier jobs that the tasks read (they come before every task).
    pub stored: Vec<StoredInput>,
    /// Every task, each after the tasks producing its inputs.
    pub tasks: Vec<ChunkTask>,
    /// The chunks delivered to the caller, in this order.
    pub outputs: Vec<ChunkKey>,
    /// Keep the outputs in storage for the caller (as [`crate::KeptChunk`]s, spillable)
    /// instead of handing out their data: Dask's `persist`.
    pub keep_outputs: bool,
}

/// Why a [`ChunkGraph`] is malformed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GraphError {
    /// Two tasks (or stored inputs) produce the same chunk.
    #[error("chunk {0} is produced by more than one task")]
    DuplicateKey(ChunkKey),
    /// A task reads a chunk that no earlier task produces.
    #[error("task {task} reads chunk {input}, which no earlier task produces")]
    UndefinedInput {
        /// The reading task.
        task: ChunkKey,
        /// The chunk it reads.
        input: ChunkKey,
    },
    /// An output names a chunk that no task produces.
    #[error("output chunk {0} is produced by no task")]
    MissingOutput(ChunkKey),
    /// A task (or an output) names a task split into parts, whose parts alone are stored.
    #[error("chunk {0} is split into parts: read its parts instead")]
    ReadsSplitChunk(ChunkKey),
    /// A stored input given to the job is also one of its outputs.
    #[error("stored chunk {0} is given up after its last read, so it cannot be an output")]
    GivenOutput(ChunkKey),
}

impl ChunkGraph {
    /// Checks that keys are unique, inputs are produced by earlier tasks and outputs exist.
    pub fn validate(&self) -> Result<(), GraphError> {
        self.index().map(drop)
    }

    /// The task producing `key` (or split into parts, one of which is `key`).
    pub fn task(&self, key: ChunkKey) -> Option<&ChunkTask> {
        self.tasks
            .iter()
            .find(|t| t.key == key || t.parts.contains(&key))
    }

    /// The inputs of the task producing `key` (its lineage one step up).
    pub fn inputs(&self, key: ChunkKey) -> Option<&[ChunkKey]> {
        self.task(key).map(|t| t.inputs.as_slice())
    }

    /// The tasks reading `key`, in graph order, each once.
    pub fn consumers(&self, key: ChunkKey) -> Vec<ChunkKey> {
        self.tasks
            .iter()
            .filter(|t| t.inputs.contains(&key))
            .map(|t| t.key)
            .collect()
    }

    /// Validates the graph and indexes it by position: the stored inputs first, then the
    /// tasks, each followed by the parts it is split into.
    pub fn index(&self) -> Result<GraphIndex, GraphError> {
        let k = self.stored.len();
        let n = k + self.tasks.iter().map(|t| 1 + t.parts.len()).sum::<usize>();
        let mut index = GraphIndex {
            position: HashMap::with_capacity(n),
            inputs: vec![Vec::new(); k],
            consumers: vec![Vec::new(); n],
            parts: vec![Vec::new(); k],
        };
        for (pos, stored) in self.stored.iter().enumerate() {
            if index.position.insert(stored.key, pos).is_some() {
                return Err(GraphError::DuplicateKey(stored.key));
            }
        }
        for task in &self.tasks {
            let pos = index.inputs.len();
            let mut inputs = Vec::with_capacity(task.inputs.len());
            for &input in &task.inputs {
                let Some(&from) = index.position.get(&input) else {
                    return Err(GraphError::UndefinedInput {
                        task: task.key,
                        input,
                    });
                };
                if !index.parts[from].is_empty() {
                    return Err(GraphError::ReadsSplitChunk(input));
                }
                if !inputs.contains(&from) {
                    inputs.push(from);
                    index.consumers[from].push(pos);
                }
            }
            index.add(task.key, inputs)?;
            let parts: Vec<usize> = (pos + 1..).take(task.parts.len()).collect();
            for &part in &task.parts {
                index.consumers[pos].push(index.inputs.len());
                index.add(part, vec![pos])?;
            }
            index.parts[pos] = parts;
        }
        for key in &self.outputs {
            match index.position.get(key) {
                None => return Err(GraphError::MissingOutput(*key)),
                Some(&pos) if !index.parts[pos].is_empty() => {
                    return Err(GraphError::ReadsSplitChunk(*key))
                }
                Some(&pos) if self.stored.get(pos).is_some_and(|s| s.given) => {
                    return Err(GraphError::GivenOutput(*key))
                }
                Some(_) => {}
            }
        }
        Ok(index)
    }
}

/// A validated graph's adjacency by position (stored inputs, then tasks, each followed by
/// its parts; a part's one input is its task, a split task's consumers are its parts).
#[derive(Clone, Debug)]
pub struct GraphIndex {
    position: HashMap<ChunkKey, usize>,
    inputs: Vec<Vec<usize>>,
    consumers: Vec<Vec<usize>>,
    parts: Vec<Vec<usize>>,
}

impl GraphIndex {
    /// Gives `key` the next position, reading `inputs`.
    fn add(&mut self, key: ChunkKey, inputs: Vec<usize>) -> Result<(), GraphError> {
        if self.position.insert(key, self.inputs.len()).is_some() {
            return Err(GraphError::DuplicateKey(key));
        }
        self.inputs.push(inputs);
        self.parts.push(Vec::new());
        Ok(())
    }

    /// Positions of the parts the task at `pos` is split into, in part order (empty for a
    /// task stored whole, a part or a stored input).
    pub fn parts(&self, pos: usize) -> &[usize] {
        &self.parts[pos]
    }

    /// The position of the task producing `key`.
    pub fn position(&self, key: ChunkKey) -> Option<usize> {
        self.position.get(&key).copied()
    }

    /// Positions of the distinct tasks whose chunks the task at `pos` reads.
    pub fn inputs(&self, pos: usize) -> &[usize] {
        &self.inputs[pos]
    }

    /// Positions of the distinct tasks reading the chunk of the task at `pos`, ascending.
    pub fn consumers(&self, pos: usize) -> &[usize] {
        &self.consumers[pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{graph, split};

    #[test]
    fn stored_inputs_come_first_and_are_read_like_tasks() {
        let mut g = graph(&[(1, &[9]), (2, &[1, 9])], &[2]);
        let stored = StoredInput {
            key: ChunkKey(9),
            id: ChunkId {
                job: crate::job::JobId(3),
                key: ChunkKey(0),
            },
            nbytes: 8,
            given: false,
        };
        g.stored = vec![stored];
        let index = g.index().unwrap();
        assert_eq!(index.position(ChunkKey(9)), Some(0));
        assert_eq!(index.position(ChunkKey(2)), Some(2));
        assert_eq!(index.consumers(0), &[1, 2]);
        assert_eq!(index.inputs(2), &[1, 0]);
        g.stored.push(stored);
        assert_eq!(g.validate(), Err(GraphError::DuplicateKey(ChunkKey(9))));
        g.stored.clear();
        assert!(matches!(
            g.validate(),
            Err(GraphError::UndefinedInput { input, .. }) if input == ChunkKey(9)
        ));
        // A chunk given up after its last read cannot also be delivered.
        g.stored = vec![StoredInput {
            given: true,
            ..stored
        }];
        assert_eq!(g.validate(), Ok(()));
        g.outputs.push(ChunkKey(9));
        assert_eq!(g.validate(), Err(GraphError::GivenOutput(ChunkKey(9))));
    }

    #[test]
    fn valid_graph_indexes_lineage() {
        // 1, 2 -> 3 (reads 1 twice) -> 4; 2 -> 4
        let g = graph(&[(1, &[]), (2, &[]), (3, &[1, 1, 2]), (4, &[3, 2])], &[4]);
        let index = g.index().unwrap();
        assert_eq!(index.position(ChunkKey(3)), Some(2));
        assert_eq!(index.inputs(2), &[0, 1]);
        assert_eq!(index.consumers(1), &[2, 3]);
        assert_eq!(index.consumers(3), &[] as &[usize]);
        assert_eq!(g.consumers(ChunkKey(1)), vec![ChunkKey(3)]);
        assert_eq!(g.consumers(ChunkKey(2)), vec![ChunkKey(3), ChunkKey(4)]);
        assert_eq!(g.inputs(ChunkKey(4)), Some(&[ChunkKey(3), ChunkKey(2)][..]));
        assert_eq!(g.inputs(ChunkKey(9)), None);
    }

    #[test]
    fn parts_follow_their_task_and_are_read_instead_of_it() {
        // 1 split into 11, 12; 2 reads 12; 3 reads 11 and 12.
        let g = split(
            graph(&[(1, &[]), (2, &[12]), (3, &[11, 12])], &[3]),
            1,
            &[11, 12],
        );
        let index = g.index().unwrap();
        assert_eq!(index.position(ChunkKey(11)), Some(1));
        assert_eq!(index.position(ChunkKey(12)), Some(2));
        assert_eq!(index.position(ChunkKey(2)), Some(3));
        assert_eq!(index.parts(0), &[1, 2]);
        assert_eq!(index.parts(1), &[] as &[usize]);
        assert_eq!(index.consumers(0), &[1, 2]);
        assert_eq!(index.inputs(2), &[0]);
        assert_eq!(index.consumers(2), &[3, 4]);
        assert_eq!(index.inputs(4), &[1, 2]);
        assert_eq!(g.task(ChunkKey(12)).map(|t| t.key), Some(ChunkKey(1)));
        assert_eq!(g.inputs(ChunkKey(12)), Some(&[][..]));

        let reads_whole = split(graph(&[(1, &[]), (2, &[1])], &[2]), 1, &[11]);
        assert_eq!(
            reads_whole.validate(),
            Err(GraphError::ReadsSplitChunk(ChunkKey(1)))
        );
        let outputs_whole = split(graph(&[(1, &[])], &[1]), 1, &[11]);
        assert_eq!(
            outputs_whole.validate(),
            Err(GraphError::ReadsSplitChunk(ChunkKey(1)))
        );
        let part_output = split(graph(&[(1, &[])], &[11]), 1, &[11]);
        assert_eq!(part_output.validate(), Ok(()));
        let dup_part = split(graph(&[(1, &[]), (2, &[])], &[2]), 1, &[11, 2]);
        assert_eq!(
            dup_part.validate(),
            Err(GraphError::DuplicateKey(ChunkKey(2)))
        );
        let twice = split(graph(&[(1, &[])], &[11]), 1, &[11, 11]);
        assert_eq!(
            twice.validate(),
            Err(GraphError::DuplicateKey(ChunkKey(11)))
        );
        let self_part = split(graph(&[(1, &[])], &[]), 1, &[1]);
        assert_eq!(
            self_part.validate(),
            Err(GraphError::DuplicateKey(ChunkKey(1)))
        );
        let early = split(graph(&[(2, &[11]), (1, &[])], &[2]), 1, &[11]);
        assert!(matches!(
            early.validate(),
            Err(GraphError::UndefinedInput { input, .. }) if input == ChunkKey(11)
        ));
    }

    #[test]
    fn invalid_graphs_are_named() {
        let dup = graph(&[(1, &[]), (1, &[])], &[]);
        assert_eq!(dup.validate(), Err(GraphError::DuplicateKey(ChunkKey(1))));
        let later = graph(&[(1, &[2]), (2, &[])], &[1]);
        assert_eq!(
            later.validate(),
            Err(GraphError::UndefinedInput {
                task: ChunkKey(1),
                input: ChunkKey(2)
            })
        );
        let self_loop = graph(&[(1, &[1])], &[1]);
        assert!(self_loop.validate().is_err());
        let no_output = graph(&[(1, &[])], &[7]);
        assert_eq!(
            no_output.validate(),
            Err(GraphError::MissingOutput(ChunkKey(7)))
        );
        assert_eq!(ChunkGraph::default().validate(), Ok(()));
    }
}
