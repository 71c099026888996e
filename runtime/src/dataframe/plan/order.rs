//! The order of a stage's tasks: each task that reads no chunk (a scan of a file, a table
//! in memory) just before the first task that reads its output, where that task waits for
//! another input too.
//!
//! The graph planner dispatches ready tasks in graph order, and a frame's tasks are
//! planned side by side: a broadcast join plans the scans of its probe side, then the
//! probes. A scan is ready at once and a probe only once the hashed side is, so every scan
//! ran before the first probe: TPC-H Q5 held 2.9 GB of lineitem chunks (all of them) before
//! probing one. With each scan placed before its probe, a probe whose inputs are there
//! runs before the scans after it, and each chunk is consumed soon after it is read. A
//! scan first read by a task of that chunk alone (a groupby's partial of a scan kept for
//! a second reader) keeps its place, as before: only the probe case was measured to pay.
//! Tasks that read chunks keep their order; a scan that nothing in the stage reads (an
//! output) keeps its place.

use std::collections::{HashMap, HashSet};
use tessera_actors::{ChunkKey, ChunkTask};

/// `tasks` (each after the tasks producing its inputs) with every task that has no input
/// moved to just before the first task reading its output (or one of its parts), where
/// that task reads another chunk too.
pub(super) fn sources_before_readers(tasks: Vec<ChunkTask>) -> Vec<ChunkTask> {
    let mut first_reader: HashMap<ChunkKey, usize> = HashMap::new();
    for (at, task) in tasks.iter().enumerate() {
        for &input in &task.inputs {
            first_reader.entry(input).or_insert(at);
        }
    }
    // Reader position -> the sources placed right before it, in their own order.
    let mut before: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut moved = HashSet::new();
    for (at, task) in tasks.iter().enumerate() {
        if !task.inputs.is_empty() {
            continue;
        }
        let reader = std::iter::once(&task.key)
            .chain(&task.parts)
            .filter_map(|k| first_reader.get(k).copied())
            .min();
        // Only before a reader that waits for another input too (a probe for its hashed
        // side): a reader of this chunk alone is as ready as the scans after it.
        if let Some(reader) = reader.filter(|&r| waits_for_more(&tasks[r])) {
            before.entry(reader).or_default().push(at);
            moved.insert(at);
        }
    }
    let mut slots: Vec<Option<ChunkTask>> = tasks.into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(slots.len());
    for at in 0..slots.len() {
        for source in before.remove(&at).unwrap_or_default() {
            ordered.extend(slots[source].take());
        }
        if !moved.contains(&at) {
            ordered.extend(slots[at].take());
        }
    }
    ordered
}

/// Whether `task` reads more than one distinct chunk.
fn waits_for_more(task: &ChunkTask) -> bool {
    task.inputs.iter().any(|&k| k != task.inputs[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::RecordBatch;
    use std::sync::Arc;
    use tessera_kernels::{ChunkData, ChunkOp};

    fn task(key: u64, inputs: &[u64]) -> ChunkTask {
        let inputs = inputs.iter().map(|&k| ChunkKey(k)).collect();
        let empty = RecordBatch::new_empty(Arc::new(arrow::datatypes::Schema::empty()));
        let op = ChunkOp::Literal(Arc::new(ChunkData::Table(empty)));
        ChunkTask::new(ChunkKey(key), op, inputs)
    }

    fn keys(tasks: &[ChunkTask]) -> Vec<u64> {
        tasks.iter().map(|t| t.key.0).collect()
    }

    #[test]
    fn scans_go_before_their_first_reader_and_readers_keep_their_order() {
        // A hashed side (0, 1 -> 2), three probe scans (3, 4, 5), their probes (6, 7, 8),
        // a join reading two probes (9), a scan nothing reads (10), and a scan (11) read
        // alone by 12.
        let tasks = vec![
            task(0, &[]),
            task(1, &[]),
            task(2, &[0, 1]),
            task(3, &[]),
            task(4, &[]),
            task(5, &[]),
            task(11, &[]),
            task(6, &[2, 3]),
            task(7, &[2, 4]),
            task(8, &[2, 5]),
            task(9, &[6, 8]),
            task(10, &[]),
            task(12, &[11]),
        ];
        let ordered = sources_before_readers(tasks);
        assert_eq!(
            keys(&ordered),
            vec![0, 1, 2, 11, 3, 6, 4, 7, 5, 8, 9, 10, 12]
        );
    }

    #[test]
    fn a_scan_cut_into_parts_goes_before_the_first_reader_of_any_part() {
        let mut split = task(0, &[]);
        split.parts = vec![ChunkKey(10), ChunkKey(11)];
        let tasks = vec![split, task(1, &[]), task(2, &[1]), task(3, &[11, 2])];
        let ordered = sources_before_readers(tasks);
        assert_eq!(keys(&ordered), vec![1, 2, 0, 3]);
    }
}
