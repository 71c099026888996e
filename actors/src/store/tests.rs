//! The chunk store's tiers, spills, read-backs, kept chunks and faults.

use super::*;
use crate::graph::ChunkKey;
use tessera_core::testing::{chunk, info};

fn id(job: u64, key: u64) -> ChunkId {
    ChunkId {
        job: JobId(job),
        key: ChunkKey(key),
    }
}

pub(crate) fn store(budget: u64, faults: Option<FaultInjector>) -> ChunkStore {
    ChunkStore::new(StoreConfig {
        pool: HostPool::new(budget),
        spill_parent: std::env::temp_dir(),
        disk_budget: u64::MAX,
        faults: faults.map(Arc::new),
        limit_resident: false,
        recorder: Recorder::new(crate::recorder::DEFAULT_CAPACITY),
    })
}

#[test]
fn get_is_all_or_nothing_and_release_removes() {
    let mut store = store(u64::MAX, None);
    let a = chunk(3);
    store.put(id(0, 1), a.clone(), info("fused", 0, false));
    store.put(id(0, 2), chunk(1), info("fused", 0, false));
    let err = store.get(&[id(0, 1), id(0, 5)], true).unwrap_err();
    assert!(matches!(&err, StorageError::Lost { ids, .. } if ids == &[id(0, 5)]));
    assert_eq!(store.len(), 2);
    let got = store.get(&[id(0, 1), id(0, 1)], false).unwrap();
    assert!(Arc::ptr_eq(&got[0], &a) && Arc::ptr_eq(&got[1], &a));
    let taken = store.get(&[id(0, 1), id(0, 1), id(0, 2)], true).unwrap();
    assert_eq!(taken.len(), 3);
    assert!(store.is_empty());
    assert_eq!(store.config.pool.used(), 0, "reservations returned");
}

#[test]
fn a_chunk_its_producer_reserved_is_held_under_that_reservation() {
    let mut store = store(200, None); // room for two 80-byte chunks
    let pool = Arc::clone(&store.config.pool);
    let reserved = Reservation::new(pool.clone(), 80);
    store.put_reserved(id(0, 1), chunk(10), info("fused", 9, false), Some(reserved));
    assert_eq!(pool.used(), 80, "taken over, not reserved again");
    store.put(id(0, 2), chunk(10), info("fused", 1, false));
    assert_eq!(pool.used(), 160);
    // A third goes over the budget: the one needed last is spilled, and its reservation,
    // the producer's, goes with it.
    store.put_reserved(
        id(0, 3),
        chunk(10),
        info("fused", 2, false),
        Some(Reservation::new(pool.clone(), 80)),
    );
    assert_eq!(store.spilled(), 1);
    assert_eq!(pool.used(), 160);
    assert_eq!(store.release(&[id(0, 1), id(0, 2), id(0, 3)]), 3);
    assert_eq!(pool.used(), 0, "every reservation given back");
}

#[test]
fn over_budget_spills_the_chunk_needed_last_and_reads_it_back() {
    let mut store = store(200, None); // room for two 80-byte chunks
    store.put(id(0, 1), chunk(10), info("fused", 5, false));
    store.put(id(0, 2), chunk(10), info("fused", 9, false));
    assert_eq!(store.spilled(), 0);
    let held = chunk(10);
    store.put(id(0, 3), Arc::clone(&held), info("fused", 99, false)); // held elsewhere: pinned
    assert_eq!(store.spilled(), 1, "one chunk went to disk");
    assert!(store.config.pool.used() <= 200);
    let dir = store.spill_dir().unwrap().to_path_buf();
    assert!(dir.exists());
    // Chunk 2 (next use 9) went, not 3 (pinned) nor 1 (needed sooner).
    let back = store.get(&[id(0, 2)], false).unwrap();
    assert_eq!(*back[0], *chunk(10));
    // Reading 2 back pushed the pool over again: another unpinned chunk was spilled.
    assert_eq!(store.spilled(), 1);
    let (stats, _) = store.forget_job(JobId(0));
    assert_eq!((stats.chunks_spilled, stats.bytes_spilled), (2, 160));
    assert_eq!(stats.bytes_read_back, 80);
    assert!(stats.peak_disk_bytes > 80);
    assert!(store.is_empty() && store.disk_bytes() == 0);
    drop(back);
    drop(store);
    assert!(!dir.exists(), "the spill folder goes with the store");
}

#[test]
fn storage_makes_room_for_a_held_back_task_only_where_spilling_can() {
    let mut store = store(400, None); // room for five 80-byte chunks
    let pinned = chunk(10);
    store.put(id(0, 1), Arc::clone(&pinned), info("fused", 1, false)); // a running task's
    for (key, next_use) in [(2, 2), (3, 8), (4, 4)] {
        store.put(id(0, key), chunk(10), info("fused", next_use, false));
    }
    let pool = Arc::clone(&store.config.pool);
    let running = Reservation::new(pool.clone(), 80); // a running task's output
                                                      // Not over budget, so nothing goes until a task is held back.
    store.make_room();
    assert_eq!((store.spilled(), pool.used()), (0, 400));
    // A task wanting 150 bytes: the two chunks needed last go, in that order.
    pool.set_wanted(150);
    store.make_room();
    assert_eq!(store.spilled(), 2);
    assert!(pool.used() + 150 <= 400);
    let in_memory =
        |store: &ChunkStore, key| matches!(store.entries[&id(0, key)].place, Place::Memory { .. });
    assert!(!in_memory(&store, 3) && !in_memory(&store, 4));
    assert!(in_memory(&store, 2), "needed first: stayed");
    // Puts keep the room made.
    store.put(id(0, 5), chunk(10), info("fused", 5, false));
    assert!(pool.used() + 150 <= 400, "spilled to keep the room");
    // A task wanting 300 bytes cannot fit beside the pinned chunk and the running task
    // even with everything spilled: nothing more goes (the running task's end frees
    // the room).
    let spilled = store.spilled();
    pool.set_wanted(300);
    store.make_room();
    assert_eq!(store.spilled(), spilled, "spilling could not make the room");
    drop((running, pinned));
}

#[test]
fn kept_chunks_outlive_their_job_spill_and_go_with_their_last_hold() {
    let mut store = store(100, None);
    store.put(id(0, 1), chunk(10), info("fused", u64::MAX, false));
    store.put(id(0, 2), chunk(10), info("fused", u64::MAX, false));
    let lost = store.keep(&[id(0, 1), id(0, 9)]).unwrap_err();
    assert!(matches!(&lost, StorageError::Lost { ids, .. } if ids == &[id(0, 9)]));
    assert_eq!(store.kept(), 0, "all or nothing");
    assert_eq!(store.keep(&[id(0, 1), id(0, 2)]).unwrap(), vec![80, 80]);
    assert_eq!(store.keep(&[id(0, 1)]).unwrap(), vec![80], "a second hold");
    // Over a budget of 100 bytes, one of the two is on disk, its memory freed.
    assert_eq!(store.spilled(), 1);
    assert_eq!(store.config.pool.used(), 80);
    // Neither the job's end, nor a release, nor a taking get drops a kept chunk.
    store.forget_job(JobId(0));
    store.release(&[id(0, 1)]);
    let both = store.get(&[id(0, 1), id(0, 2)], true).unwrap();
    assert_eq!(both.len(), 2);
    drop(both);
    assert_eq!(store.len(), 2);
    store.unkeep(&[id(0, 1), id(0, 2)]);
    assert_eq!(store.len(), 1, "chunk 2's only hold is gone");
    store.unkeep(&[id(0, 1)]);
    assert!(store.is_empty());
    assert_eq!((store.disk_bytes(), store.config.pool.used()), (0, 0));
    store.unkeep(&[id(0, 1)]); // a hold given up twice changes nothing
    assert_eq!(store.kept(), 0);
}

#[test]
fn a_kept_chunk_spilled_after_its_job_counts_for_the_job_that_made_room() {
    let mut store = store(100, None);
    store.put(id(0, 1), chunk(10), info("fused", u64::MAX, false));
    store.keep(&[id(0, 1)]).unwrap();
    assert_eq!(store.forget_job(JobId(0)).0.chunks_spilled, 0);
    store.forget_job(JobId(7)); // no job presses now
    store.put(id(1, 2), chunk(1), info("fused", 0, false));
    store.release(&[id(1, 2)]);
    // Job 1's chunk does not fit beside it: the kept chunk (needed last) is spilled.
    store.put(id(1, 1), chunk(10), info("fused", 0, false));
    assert_eq!(store.spilled(), 1);
    let (stats, _) = store.forget_job(JobId(1));
    assert_eq!((stats.chunks_spilled, stats.bytes_spilled), (1, 80));
    // Job 2 reads it back: its counters have it.
    assert_eq!(
        store
            .get_for(Some(JobId(2)), &[id(0, 1)], false)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.forget_job(JobId(2)).0.bytes_read_back, 80);
}

#[test]
fn failed_spills_keep_chunks_in_memory() {
    let faults = FaultInjector::new().on_nth(None, 0, FaultKind::SpillWriteFails);
    let mut store = store(100, Some(faults));
    store.put(id(0, 1), chunk(10), info("fused", 0, false));
    store.put(id(0, 2), chunk(10), info("fused", 0, false));
    assert_eq!((store.spilled(), store.len()), (0, 2));
    assert_eq!(store.config.pool.used(), 160, "over budget, nothing lost");
    assert!(store.get(&[id(0, 1), id(0, 2)], true).is_ok());
    assert!(store.forget_job(JobId(0)).0.spill_failures >= 1);
}

#[test]
fn damaged_spill_files_are_reported_lost() {
    for kind in [FaultKind::CorruptSpill, FaultKind::DeleteSpill] {
        let faults = FaultInjector::new().on_nth(None, 1, kind);
        let mut store = store(100, Some(faults));
        store.put(id(0, 1), chunk(10), info("fused", 7, false));
        store.put(id(0, 2), chunk(10), info("fused", 1, false));
        assert_eq!(store.spilled(), 1);
        let err = store.get(&[id(0, 2), id(0, 1)], false).unwrap_err();
        assert!(
            matches!(&err, StorageError::Lost { ids, .. } if ids == &[id(0, 1)]),
            "{kind:?}: {err}"
        );
        assert_eq!(store.len(), 1, "{kind:?}: the lost chunk is forgotten");
        assert_eq!(store.get(&[id(0, 2)], true).unwrap().len(), 1);
    }
}

#[test]
fn put_faults_drop_chunks_or_kill_the_store() {
    let faults = FaultInjector::new()
        .on_nth(None, 1, FaultKind::DropChunk)
        .on_nth(None, 2, FaultKind::KillStorage);
    let mut store = store(u64::MAX, Some(faults));
    assert_eq!(
        store.put(id(0, 1), chunk(1), info("f", 0, false)),
        PutOutcome::Dropped
    );
    assert_eq!(
        store.put(id(0, 2), chunk(1), info("f", 0, false)),
        PutOutcome::Kill
    );
    assert_eq!(
        store.put(id(0, 3), chunk(1), info("f", 0, false)),
        PutOutcome::Stored
    );
    assert_eq!(store.len(), 1);
}

#[test]
fn a_chunk_read_back_is_spilled_again_without_rewriting_its_file() {
    let mut store = store(100, None);
    store.put(id(0, 1), chunk(10), info("fused", 9, false));
    store.put(id(0, 2), chunk(10), info("fused", 1, false)); // 1 goes to disk
    let back = store.get(&[id(0, 1)], false).unwrap(); // 2 goes to disk
    drop(back);
    let disk = store.disk_bytes();
    store.put(id(0, 3), chunk(10), info("fused", 5, false)); // 1 again: its file is reused
    assert_eq!(store.disk_bytes(), disk);
    assert_eq!(store.spilled(), 2);
    let (stats, _) = store.forget_job(JobId(0));
    assert_eq!((stats.chunks_spilled, stats.bytes_spilled), (2, 160));
    assert_eq!(store.disk_bytes(), 0);
}

#[test]
fn shared_user_data_is_neither_reserved_nor_spilled() {
    let mut store = store(100, None);
    let user = chunk(50); // 400 bytes, held by the user too
    store.put(id(0, 1), Arc::clone(&user), info("literal", 9, true));
    assert_eq!(store.config.pool.used(), 0);
    store.put(id(0, 2), chunk(10), info("fused", 1, false));
    assert_eq!((store.spilled(), store.config.pool.used()), (0, 80));
    drop(user);
    store.put(id(0, 3), chunk(10), info("fused", 2, false));
    assert_eq!(
        store.spilled(),
        1,
        "a reserved chunk went, never the shared one"
    );
    assert!(store.get(&[id(0, 1)], false).is_ok());
}

/// What is in memory past the pool's budget, against the room the store published:
/// `None` while the disk tier can take it all.
fn past_both(store: &ChunkStore) -> Option<u64> {
    store.config.pool.past_both_tiers(0)
}

/// A store of 100 bytes of memory and 150 of disk.
fn small_disk_store() -> ChunkStore {
    ChunkStore::new(StoreConfig {
        pool: HostPool::new(100),
        spill_parent: std::env::temp_dir(),
        disk_budget: 150,
        faults: None,
        limit_resident: false,
        recorder: Recorder::new(crate::recorder::DEFAULT_CAPACITY),
    })
}

#[test]
fn the_disk_budget_bounds_spilling() {
    let mut store = small_disk_store();
    assert_eq!(past_both(&store), None);
    for k in 0..4 {
        store.put(id(0, k), chunk(10), info("fused", k, false));
    }
    assert_eq!(
        store.spilled(),
        1,
        "only one 80-byte chunk (plus header) fits"
    );
    assert_eq!(store.len(), 4);
    let file = store.disk_bytes();
    assert!(file > 75 && file <= 150, "{file}");
    assert_eq!(
        past_both(&store),
        Some(150),
        "240 bytes in memory, 140 past the budget, {} bytes of room on disk",
        150 - file
    );
    // Releasing the spilled chunk frees the disk tier: spilling resumes.
    let on_disk: Vec<ChunkId> = (0..4)
        .map(|k| id(0, k))
        .filter(|i| matches!(store.entries[i].place, Place::Disk(_)))
        .collect();
    store.release(&on_disk);
    assert_eq!((store.spilled(), store.len()), (1, 3));
    assert_eq!(store.disk_bytes(), file);
    store.release(&[id(0, 0), id(0, 1), id(0, 2), id(0, 3)]);
    assert_eq!((store.config.pool.used(), store.disk_bytes()), (0, 0));
    assert_eq!(store.config.pool.past_both_tiers(250), None, "room again");
    assert_eq!(store.config.pool.past_both_tiers(251), Some(150));
}

#[test]
fn a_chunk_read_back_leaves_memory_again_without_disk_room() {
    let mut store = small_disk_store();
    store.put(id(0, 0), chunk(10), info("fused", 9, false));
    store.put(id(0, 1), chunk(10), info("fused", 1, false));
    assert_eq!(store.spilled(), 1, "chunk 0, needed last, went to disk");
    let file = store.disk_bytes();
    let data = store.get(&[id(0, 0)], false).expect("read back");
    assert_eq!((store.spilled(), store.disk_bytes()), (0, file));
    // 160 bytes in memory, 60 past the budget: chunk 0 can leave memory without a
    // write, so its 80 bytes count as room although its file fills the disk tier.
    assert_eq!(store.config.pool.past_both_tiers(0), None);
    assert_eq!(store.config.pool.past_both_tiers(150 - file + 20), None);
    assert_eq!(
        store.config.pool.past_both_tiers(150 - file + 21),
        Some(150)
    );
    drop(data);
    store.release(&[id(0, 0), id(0, 1)]);
    assert_eq!((store.disk_bytes(), store.config.pool.used()), (0, 0));
}

#[test]
fn a_chunk_cheaper_to_recompute_than_to_spill_is_dropped_and_reads_report_it() {
    // At the assumed 500 MB/s each way, spilling 80 bytes and reading them back costs
    // 320 ns: a chunk that took 1 ns to compute is dropped, one that took 1 s is spilled,
    // and one without a cost (it reads other chunks) is spilled.
    let cheap = PutInfo {
        recompute: Some(Duration::from_nanos(1)),
        ..info("fused", 50, false)
    };
    let dear = PutInfo {
        recompute: Some(Duration::from_secs(1)),
        ..info("fused", 40, false)
    };
    let mut store = store(200, None); // room for two 80-byte chunks
    store.put(id(0, 1), chunk(10), cheap);
    store.put(id(0, 2), chunk(10), dear);
    store.put(id(0, 3), chunk(10), info("fused", 1, false));
    // Chunk 1 (needed last) went, and wrote nothing.
    assert_eq!(store.spilled(), 0);
    assert_eq!(store.len(), 2);
    assert_eq!(store.disk_bytes(), 0);
    let err = store.get(&[id(0, 1), id(0, 3)], false).unwrap_err();
    assert_eq!(
        err,
        StorageError::Dropped {
            ids: vec![id(0, 1)]
        }
    );
    // A missing chunk that was never stored is lost, and that is reported first.
    let err = store.get(&[id(0, 1), id(0, 9)], false).unwrap_err();
    assert!(matches!(&err, StorageError::Lost { ids, .. } if ids == &[id(0, 9)]));
    // Over budget again: chunk 2 (next needed after 3) is spilled, not dropped.
    store.put(id(0, 4), chunk(10), info("fused", 2, false));
    assert_eq!(store.spilled(), 1);
    // Reading it back makes room again: chunk 4 (no cost known) is spilled.
    assert!(store.get(&[id(0, 2)], false).is_ok());
    assert_eq!(store.spilled(), 1);
    // Computed again, the dropped chunk is stored as any other.
    store.release(&[id(0, 3), id(0, 4)]);
    store.put(id(0, 1), chunk(10), cheap);
    assert_eq!(store.get(&[id(0, 1)], false).unwrap().len(), 1);
    let (stats, _) = store.forget_job(JobId(0));
    assert_eq!((stats.chunks_dropped, stats.bytes_dropped), (1, 80));
    assert_eq!(stats.chunks_spilled, 2);
    assert!(store.is_empty());
}

#[test]
fn kept_chunks_are_never_dropped() {
    let cheap = PutInfo {
        recompute: Some(Duration::from_nanos(1)),
        ..info("fused", 50, false)
    };
    let mut store = store(200, None);
    store.put(id(0, 1), chunk(10), cheap);
    store.keep(&[id(0, 1)]).unwrap();
    store.put(id(0, 2), chunk(10), info("fused", 1, false));
    store.put(id(0, 3), chunk(10), info("fused", 1, false));
    assert_eq!(
        store.spilled(),
        1,
        "the kept chunk was spilled, not dropped"
    );
    assert!(store.get(&[id(0, 1)], false).is_ok());
}

#[test]
fn kept_chunks_their_owner_can_recompute_are_dropped_and_reads_report_it() {
    let mut store = store(200, None); // room for two 80-byte chunks
    store.put(id(0, 1), chunk(10), info("fused", 50, false));
    store.put(id(0, 2), chunk(10), info("fused", 40, false));
    store.keep(&[id(0, 1), id(0, 2)]).unwrap();
    // Chunk 1's owner can compute it again cheaply; chunk 2's cannot; chunk 5 is not kept.
    store.allow_drop(&[id(0, 1), id(0, 5)], Duration::from_nanos(1));
    assert_eq!(
        store.recomputable.len(),
        1,
        "only a kept chunk in memory is marked"
    );
    store.put(id(0, 3), chunk(10), info("fused", 1, false));
    store.put(id(0, 4), chunk(10), info("fused", 1, false));
    // Chunk 1 (needed last) was dropped without a write, then chunk 2 spilled.
    assert_eq!(store.spilled(), 1);
    assert_eq!(store.len(), 3);
    assert_eq!(
        store.get(&[id(0, 1)], false).unwrap_err(),
        StorageError::Dropped {
            ids: vec![id(0, 1)]
        }
    );
    // A chunk already spilled is not marked: leaving memory again writes nothing.
    store.allow_drop(&[id(0, 2)], Duration::from_nanos(1));
    assert!(!store.recomputable.contains(&id(0, 2)));
    assert!(
        store.get(&[id(0, 2)], false).is_ok(),
        "spilled and read back"
    );
    // Its owner gives it up: nothing of it is left.
    store.unkeep(&[id(0, 1), id(0, 2)]);
    assert!(store.dropped.is_empty() && store.recomputable.is_empty());
    store.release(&[id(0, 3), id(0, 4)]);
    assert!(store.is_empty());
}

#[test]
fn a_kept_chunk_put_with_its_recompute_cost_may_be_dropped_by_its_own_arrival() {
    let mut store = store(100, None); // room for one 80-byte chunk
    let pool = Arc::clone(&store.config.pool);
    // Two arrive at once (both reserved by their senders, so the budget is passed before
    // storage takes either): the first one's owner can compute it again cheaply.
    let (first, second) = (
        Reservation::new(pool.clone(), 80),
        Reservation::new(pool.clone(), 80),
    );
    let cheap = Some(Duration::from_nanos(1));
    assert_eq!(
        store.put_kept(id(0, 1), chunk(10), first, cheap),
        PutOutcome::Stored
    );
    assert_eq!(store.spilled(), 0);
    assert_eq!(pool.used(), 80, "dropped as it arrived, not spilled");
    assert_eq!(
        store.get(&[id(0, 1)], false).unwrap_err(),
        StorageError::Dropped {
            ids: vec![id(0, 1)]
        }
    );
    assert_eq!(
        store.put_kept(id(0, 2), chunk(10), second, None),
        PutOutcome::Stored
    );
    assert_eq!(
        (store.spilled(), pool.used()),
        (0, 80),
        "kept within the budget"
    );
    assert_eq!(
        store.keep(&[id(0, 2)]).unwrap(),
        vec![80],
        "kept, as persisted data"
    );
    store.unkeep(&[id(0, 1), id(0, 2), id(0, 2)]);
    assert!(store.is_empty() && store.dropped.is_empty());
    assert_eq!(pool.used(), 0);
}

#[test]
fn a_chunk_read_back_is_spilled_again_for_free_rather_than_dropped() {
    let mut store = store(200, None);
    // Spilled, then read back: its file is still on disk.
    store.put(id(0, 1), chunk(10), info("fused", 50, false));
    store.put(id(0, 2), chunk(10), info("fused", 1, false));
    store.put(id(0, 3), chunk(10), info("fused", 1, false));
    assert_eq!(store.spilled(), 1);
    store.release(&[id(0, 3)]);
    assert!(store.get(&[id(0, 1)], false).is_ok());
    // However cheap computing it again, leaving memory again writes nothing: no drop.
    store.entries.get_mut(&id(0, 1)).unwrap().recompute = Some(Duration::from_nanos(1));
    assert!(!store.drop_cheaper(id(0, 1)));
    store.put(id(0, 4), chunk(10), info("fused", 1, false));
    assert_eq!(store.spilled(), 1, "chunk 1 went back to its file");
    assert!(store.get(&[id(0, 1)], false).is_ok());
    let (stats, _) = store.forget_job(JobId(0));
    assert_eq!(stats.chunks_dropped, 0);
}

#[test]
fn the_victim_order_follows_every_change_and_picks_as_a_full_walk_would() {
    let mut store = store(400, None); // room for five 80-byte chunks
    let mut state: u64 = 7;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let mut held = Vec::new(); // chunks handed out and still held: they cannot go
    for step in 0..600 {
        let k = next(12);
        match next(6) {
            0 | 1 => {
                let n = 5 + next(10) as usize;
                store.put(id(0, k), chunk(n), info("fused", next(20), false));
            }
            2 => {
                if let Ok(got) = store.get(&[id(0, k)], false) {
                    held.extend(got);
                }
            }
            3 => {
                store.release(&[id(0, k)]);
            }
            4 => {
                let _ = store.keep(&[id(0, k)]);
                store.allow_drop(&[id(0, k)], Duration::from_nanos(next(2)));
            }
            _ => {
                store.unkeep(&[id(0, k)]);
                held.truncate(next(3) as usize);
            }
        }
        assert!(store.victim_order_holds(), "step {step}");
        let walked = store
            .entries
            .iter()
            .filter(|(_, e)| e.can_go())
            .max_by_key(|(id, e)| (e.next_use, e.nbytes, **id))
            .map(|(id, _)| *id);
        assert_eq!(store.pick_victim(), walked, "step {step}");
    }
}

#[test]
fn emptied_spill_segments_stay_for_reuse_until_storage_is_idle() {
    let mut store = store(100, None);
    store.put(id(0, 1), chunk(10), info("fused", 9, false));
    store.put(id(0, 2), chunk(10), info("fused", 1, false)); // 1 goes to disk
    assert_eq!(store.spilled(), 1);
    let dir = store.spill_dir().unwrap().to_path_buf();
    let files = || std::fs::read_dir(&dir).unwrap().count() - 1; // less the lock file
    store.release(&[id(0, 1)]);
    assert_eq!(store.disk_bytes(), 0, "no chunk on disk");
    assert!(
        store.disk_footprint() > 0,
        "its segment kept, written over next"
    );
    assert_eq!(files(), 1);
    store.drop_idle_spares(Duration::from_secs(3600), usize::MAX);
    assert_eq!(files(), 1, "spilled moments ago: kept");
    store.put(id(0, 3), chunk(10), info("fused", 9, false)); // 2 or 3 goes to disk
    assert_eq!(
        (store.spilled(), files()),
        (1, 1),
        "written over, no file made"
    );
    let on_disk: Vec<ChunkId> = [id(0, 2), id(0, 3)]
        .into_iter()
        .filter(|i| matches!(store.entries[i].place, Place::Disk(_)))
        .collect();
    let back = store.get(&on_disk, false).unwrap();
    assert_eq!(*back[0], *chunk(10), "read back intact");
    drop(back);
    store.release(&[id(0, 2), id(0, 3)]);
    store.drop_idle_spares(Duration::ZERO, usize::MAX);
    assert_eq!((files(), store.disk_footprint()), (0, 0), "idle: deleted");
}

#[test]
fn a_spill_past_the_disk_budget_deletes_spare_segments_first() {
    let mut store = ChunkStore::new(StoreConfig {
        pool: HostPool::new(100),
        spill_parent: std::env::temp_dir(),
        disk_budget: 300,
        faults: None,
        limit_resident: false,
        recorder: Recorder::new(crate::recorder::DEFAULT_CAPACITY),
    });
    let segment_bytes = |store: &mut ChunkStore, bytes| {
        if let Some(dir) = &mut store.dir {
            dir.set_segment_bytes(bytes);
        }
    };
    store.put(id(0, 0), chunk(10), info("fused", 9, false)); // 0 goes to disk
    store.put(id(0, 1), chunk(10), info("fused", 1, false));
    segment_bytes(&mut store, 1); // its segment is full
    store.put(id(0, 2), chunk(10), info("fused", 8, false)); // 0 or 2 goes to a new one
    segment_bytes(&mut store, 1 << 30); // which stays open
    assert_eq!(store.spilled(), 2);
    let file = store.disk_bytes() / 2;
    // The first segment empties: a spare, beside the open one.
    store.release(&[id(0, 0)]);
    assert_eq!(store.disk_bytes(), file);
    assert!(store.disk_footprint() >= 2 * file);
    // The next spill goes to the open segment; with the spare it would pass the budget.
    store.put(id(0, 3), chunk(10), info("fused", 7, false));
    assert_eq!(store.spilled(), 2, "spilled");
    assert_eq!(store.disk_bytes(), 2 * file);
    assert!(
        store.disk_footprint() <= 300,
        "{} bytes on disk: the spare was deleted first",
        store.disk_footprint()
    );
}

#[test]
fn the_store_logs_spills_read_backs_and_drops_for_their_job() {
    let id = |key| id(4, key);
    // Room for one chunk of 80 bytes: the second put spills the one needed later.
    let mut store = store(100, None);
    store.put(id(1), chunk(10), info("fused", 9, false));
    store.put(id(2), chunk(10), info("fused", 1, false));
    assert_eq!(store.spilled(), 1);
    store.get(&[id(1)], false).unwrap();
    store.release(&[id(1), id(2)]);
    let (stats, log) = store.forget_job(JobId(4));
    let kinds: Vec<(StorageEventKind, u64, u64)> = log
        .events
        .iter()
        .map(|e| (e.kind, e.key.0, e.bytes))
        .collect();
    use StorageEventKind::{Drop, ReadBack, Spill};
    // Reading 1 back pushed the pool over again, so 2 was spilled in its turn.
    assert_eq!(
        kinds,
        vec![
            (Spill, 1, 80),
            (ReadBack, 1, 80),
            (Spill, 2, 80),
            (Drop, 1, 80),
            (Drop, 2, 80)
        ]
    );
    assert!(log.events.iter().all(|e| e.start_ns <= e.end_ns));
    assert!(log
        .events
        .windows(2)
        .all(|w| w[0].start_ns <= w[1].start_ns));
    let spilled: u64 = log
        .events
        .iter()
        .filter(|e| e.kind == Spill)
        .map(|e| e.bytes)
        .sum();
    assert_eq!(
        spilled, stats.bytes_spilled,
        "the events add up to the counters"
    );
    assert_eq!(log.dropped, 0);
}
