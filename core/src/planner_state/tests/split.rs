//! Split tasks: a shuffle's parts stored apart, their next use, lost parts rerun.

use super::*;

/// A partitioned table whose parts have `rows[i]` rows of one i64 column (8 bytes a row).
fn partitioned(rows: &[i64]) -> Arc<ChunkData> {
    let table = |n: i64| {
        let col = arrow::array::Int64Array::from((0..n).collect::<Vec<i64>>());
        arrow::array::RecordBatch::try_from_iter([("k", Arc::new(col) as arrow::array::ArrayRef)])
            .unwrap()
    };
    Arc::new(ChunkData::Tables(rows.iter().map(|&n| table(n)).collect()))
}

fn done_with(
    p: &mut PlannerState,
    job: JobId,
    key: u64,
    data: Arc<ChunkData>,
) -> Vec<PlannerAction> {
    let attempt = attempt(p, job, key);
    p.on_chunk_done(
        job,
        ChunkKey(key),
        attempt,
        data,
        Duration::ZERO,
        Instant::now(),
    )
}

/// The chunks `actions` store, as (key, rows of its table, next use).
fn stored(actions: &[PlannerAction]) -> Vec<(u64, usize, u64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Store {
                key, data, info, ..
            } => match data.as_ref() {
                ChunkData::Table(t) => Some((key.0, t.num_rows(), info.next_use)),
                _ => Some((key.0, usize::MAX, info.next_use)),
            },
            _ => None,
        })
        .collect()
}

/// 1 -> 2, split into 21 22 23; 31 32 33 read one part each; 4 reads 31 32 33.
fn shuffle(p: &mut PlannerState) -> JobId {
    let g = graph(
        &[
            (1, &[]),
            (2, &[1]),
            (31, &[21]),
            (32, &[22]),
            (33, &[23]),
            (4, &[31, 32, 33]),
        ],
        &[4],
    );
    let (job, actions) = p.submit(crate::testing::split(g, 2, &[21, 22, 23]), Instant::now());
    assert_eq!(dispatched(&actions), vec![1]);
    assert_eq!(dispatched(&done(p, job, 1, 4)), vec![2]);
    job
}

#[test]
fn a_split_task_s_parts_are_stored_apart_and_each_released_after_its_reader() {
    let mut p = planner(4);
    let job = shuffle(&mut p);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    // Each part is a table of its own, with its reader's position (5, 6, 7) as next use.
    assert_eq!(stored(&a), vec![(21, 1, 5), (22, 2, 6), (23, 3, 7)]);
    assert_eq!(released(&a), vec![1]);
    assert_eq!(dispatched(&a), vec![31, 32, 33]);
    let inputs = |a: &[PlannerAction], k: u64| {
        a.iter().find_map(|a| match a {
            PlannerAction::Dispatch { key, inputs, .. } if key.0 == k => {
                Some(inputs.iter().map(|i| i.key.0).collect::<Vec<_>>())
            }
            _ => None,
        })
    };
    assert_eq!(inputs(&a, 32), Some(vec![22]));
    assert_eq!(released(&done(&mut p, job, 32, 1)), vec![22]);
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    let a = done(&mut p, job, 33, 1);
    assert_eq!(released(&a), vec![23]);
    assert_eq!(dispatched(&a), vec![4]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(released(&a), vec![31, 32, 33]);
    let stats = deliver(&mut p, job, &a);
    // The split task ran once; its parts are chunks, not runs.
    assert_eq!(stats.chunks_run, 6);
    assert_eq!(stats.bytes_produced, 4 * 8 + 6 * 8 + 3 * 8 + 8);
}

#[test]
fn each_part_stays_reserved_until_storage_holds_it() {
    let pool = HostPool::new(u64::MAX);
    let mut p = PlannerState::new(pool.clone());
    assert!(p.add_device(CPU, 4).is_empty());
    let job = shuffle(&mut p);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    let reserved: Vec<(u64, u64)> = a
        .iter()
        .filter_map(|a| match a {
            PlannerAction::Store {
                data, reservation, ..
            } => Some((
                data.nbytes() as u64,
                reservation.as_ref().map_or(0, |r| r.bytes()),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(reserved.len(), 3, "one store a part");
    for (nbytes, bytes) in &reserved {
        assert!(*nbytes > 0);
        assert_eq!(bytes, nbytes, "each part reserved at its size");
    }
    let before = pool.used();
    drop(a); // storage takes the parts over (here: nobody does)
    let parts: u64 = reserved.iter().map(|(n, _)| n).sum();
    assert_eq!(pool.used(), before - parts, "given back with the stores");
}

#[test]
fn parts_a_later_stage_reads_are_needed_in_part_order_after_this_stage() {
    // A stage ending in a shuffle hands its parts on: no task of its own reads them.
    let mut p = planner(4);
    let g = graph(&[(1, &[]), (2, &[1])], &[21, 22, 23]);
    let (job, a) = p.submit(crate::testing::split(g, 2, &[21, 22, 23]), Instant::now());
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    // The next stage reads them partition by partition: storage spills the last first.
    let later = super::job::LATER_STAGE;
    assert_eq!(
        stored(&a),
        vec![(21, 1, later), (22, 2, later + 1), (23, 3, later + 2)]
    );
    assert!(later + 2 < u64::MAX, "before chunks only the caller reads");
}

#[test]
fn a_lost_part_reruns_its_task_which_stores_only_the_parts_still_needed() {
    let mut p = planner(4);
    let job = shuffle(&mut p);
    done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    // 32 cannot read part 22: it, the split task and that task's released input run again.
    let attempt_32 = attempt(&p, job, 32);
    let a = p.on_inputs_lost(job, ChunkKey(32), attempt_32, &keys(&[22]), "gone");
    assert_eq!(dispatched(&a), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    // The task's output again has three parts: 21 was read and released, 23 is still
    // stored; only 22 is stored again.
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(stored(&a), vec![(22, 2, 6)]);
    assert_eq!(released(&a), vec![1]);
    assert_eq!(dispatched(&a), vec![32]);
    assert_eq!(released(&done(&mut p, job, 32, 1)), vec![22]);
    assert_eq!(released(&done(&mut p, job, 33, 1)), vec![23]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(delivery(&a).unwrap().0, vec![4]);
    let stats = deliver(&mut p, job, &a);
    assert_eq!(stats.chunks_lost, 1);
    assert_eq!(stats.chunks_recomputed, 3);
    assert_eq!(stats.chunks_run, 8);
}

#[test]
fn a_storage_restart_recomputes_the_lost_parts_with_one_run_of_their_task() {
    let mut p = planner(1);
    let job = shuffle(&mut p);
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    assert_eq!(dispatched(&a), vec![31]);
    assert_eq!(released(&done(&mut p, job, 31, 1)), vec![21]);
    // 22 and 23 are stored, 32 is running (it has its input); storage restarts empty.
    p.storage_gone();
    assert!(
        dispatched(&p.on_storage_restarted()).is_empty(),
        "the one slot is busy"
    );
    assert_eq!(dispatched(&done(&mut p, job, 32, 1)), vec![1]);
    assert_eq!(dispatched(&done(&mut p, job, 1, 4)), vec![2]);
    // 31's chunk was lost too: one run of the split task stores 21 for it and 23 for 33.
    let a = done_with(&mut p, job, 2, partitioned(&[1, 2, 3]));
    let keys: Vec<u64> = stored(&a).iter().map(|s| s.0).collect();
    assert!(keys.contains(&21) && keys.contains(&23), "{keys:?}");
    assert_eq!(dispatched(&a), vec![31]);
    assert_eq!(dispatched(&done(&mut p, job, 31, 1)), vec![33]);
    let a = done(&mut p, job, 33, 1);
    assert_eq!(dispatched(&a), vec![4]);
    let a = done(&mut p, job, 4, 1);
    assert_eq!(delivery(&a).unwrap().0, vec![4]);
}

#[test]
fn a_split_task_whose_output_has_the_wrong_parts_fails_its_job_naming_it() {
    for data in [chunk(4), partitioned(&[1, 2])] {
        let mut p = planner(4);
        let job = shuffle(&mut p);
        let a = done_with(&mut p, job, 2, data);
        match failure(&a) {
            Some(JobError::ChunkFailed { key, source, .. }) => {
                assert_eq!(*key, ChunkKey(2));
                assert!(source.to_string().contains("3 parts"), "{source}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!p.is_running(job));
    }
}
