//! Memory and disk budgets that hold: a job over both budgets ends with a typed error that
//! names them (never an OOM kill, never a hang), the same job within the disk budget spills
//! and gives the right answer, chunks cheaper to compute again than to spill are dropped
//! and computed again, and a new session removes the spill folders of processes that are
//! gone while leaving live ones alone.

use crate::common::{builder, session_from, SpillParent, TestSession};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera::{tensor, Error, FaultInjector, HostTensor, MemoryReading, SessionBuilder, Tensor};

/// Elements of the workload: 1.6 MB of f64 output, 200 chunks of 8 KiB.
const N: usize = 200_000;
/// The host budget: a few chunks (a multiple of 7, so a faked reading gives it exactly).
const HOST: u64 = 7 << 13;

/// `2·i` for `i` in `0..N`: an output much larger than the host budget, all of it kept
/// until delivery.
fn doubled() -> Tensor {
    let x = tensor::arange_f64(0.0, N as f64, 1.0);
    &x + &x
}

fn assert_doubled(out: &HostTensor) {
    let v = out.as_slice::<f64>().expect("f64 output");
    assert_eq!(v.len(), N);
    for (i, &x) in v.iter().enumerate() {
        assert_eq!(x, 2.0 * i as f64, "element {i}");
    }
}

/// A session spilling under `spill`, with 8 KiB chunks and a host budget of [`HOST`] (70%
/// of a faked memory reading, as a session sizes its default budget).
fn spilling(spill: &SpillParent, b: SessionBuilder) -> TestSession {
    let reading = MemoryReading {
        total: HOST / 7 * 10,
        available: HOST / 7 * 10,
    };
    let faults = Arc::new(FaultInjector::new().fake_memory(reading));
    session_from(b.chunk_bytes(8 << 10).faults(faults).spill_dir(&spill.0))
}

#[test]
fn over_both_budgets_a_job_ends_with_a_typed_error_naming_them() {
    let spill = SpillParent::new("budgets-oom");
    let disk = 96u64 << 10;
    let s = spilling(&spill, builder().disk_budget(disk));
    assert_eq!(
        s.config().memory_budget,
        HOST,
        "the budget follows the reading"
    );
    let err = doubled().execute(&s).unwrap_err();
    let Error::OutOfMemory(oom) = &err else {
        panic!("expected OutOfMemory, got {err:?}");
    };
    assert_eq!((oom.host_budget, oom.disk_budget), (HOST, disk));
    assert!(oom.reserved + oom.needed > HOST, "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("{HOST} bytes")) && text.contains(&format!("{disk} bytes")),
        "the message names both budgets: {text}"
    );
    // Nothing of the failed job stays reserved, and the session still works.
    let small = tensor::arange_f64(0.0, 4.0, 1.0).sum();
    assert_eq!(
        small.execute(&s).unwrap().to_f64_vec(),
        [6.0],
        "the session runs the next job"
    );
    assert_eq!(s.reserved_bytes(), 0);
}

#[test]
fn within_the_disk_budget_the_same_job_spills_and_is_right() {
    let spill = SpillParent::new("budgets-fits");
    let s = spilling(&spill, builder().disk_budget(16 << 20));
    let (out, stats) = s.execute_with_stats(&doubled()).unwrap();
    assert_doubled(&out);
    assert!(stats.storage.chunks_spilled > 0, "{stats:?}");
    assert!(stats.storage.peak_disk_bytes <= 16 << 20);
    assert_eq!(stats.storage.spill_failures, 0);
    // Under a loose host budget nothing spills, and the answer is the same.
    let loose = session_from(builder().chunk_bytes(8 << 10).spill_dir(&spill.0));
    let (plain, stats) = loose.execute_with_stats(&doubled()).unwrap();
    assert_eq!(plain, out);
    assert_eq!(stats.storage.chunks_spilled, 0);
}

#[test]
fn a_budget_on_resident_memory_far_below_the_process_still_finishes_jobs_right() {
    // This test process holds far more than 56 KB: the resident control lowers the budget
    // to its floor and holds new tasks back; a task still starts whenever none runs, so the
    // job ends, spilling, with the right answer, and the next job runs too.
    let spill = SpillParent::new("budgets-resident");
    let s = spilling(
        &spill,
        builder().disk_budget(16 << 20).limit_resident_memory(true),
    );
    assert!(s.config().limit_resident);
    let (out, stats) = s.execute_with_stats(&doubled()).unwrap();
    assert_doubled(&out);
    assert!(stats.storage.chunks_spilled > 0, "{stats:?}");
    // Reservations stayed far under the configured budget (a task or two at a time); with
    // the budget on reservations alone they fill it.
    assert!(stats.peak_host_reserved <= HOST / 2, "{stats:?}");
    let plain = spilling(&spill, builder().disk_budget(16 << 20));
    let (again, plain_stats) = plain.execute_with_stats(&doubled()).unwrap();
    assert_eq!(again, out);
    assert!(plain_stats.peak_host_reserved > HOST / 2, "{plain_stats:?}");
    let small = tensor::arange_f64(0.0, 4.0, 1.0).sum();
    assert_eq!(small.execute(&s).unwrap().to_f64_vec(), [6.0]);
    assert_eq!(s.reserved_bytes(), 0);
}

/// Makes a spill folder as a crashed process leaves it: a lock file nobody holds, data.
fn abandoned_folder(parent: &Path, name: &str) -> PathBuf {
    let dir = parent.join(name);
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("owner.lock"), "4194304\n").unwrap();
    fs::write(dir.join("job0-chunk3.spill"), vec![0u8; 8192]).unwrap();
    dir
}

#[test]
fn a_new_session_removes_dead_owners_spill_folders_and_never_a_live_one() {
    let spill = SpillParent::new("budgets-cleanup");
    // A live session that has spilled: its folder holds data it still needs.
    let live = spilling(&spill, builder());
    let (out, stats) = live.execute_with_stats(&doubled()).unwrap();
    assert_doubled(&out);
    assert!(stats.storage.chunks_spilled > 0);
    let live_folders = spill.entries();
    assert_eq!(live_folders.len(), 1, "{live_folders:?}");
    let dead = abandoned_folder(&spill.0, "tessera-spill-4194304-0");
    let unrelated = spill.0.join("notes");
    fs::write(&unrelated, b"kept").unwrap();

    let next = session_from(builder().spill_dir(&spill.0));
    assert!(!dead.exists(), "the dead owner's folder is removed");
    assert_eq!(
        spill.entries(),
        ["notes".to_string(), live_folders[0].clone()],
        "the live folder and unrelated files stay"
    );
    // The live session still runs a spilling job in its folder.
    let (again, _) = live.execute_with_stats(&doubled()).unwrap();
    assert_eq!(again, out);
    next.shutdown().unwrap();
    live.shutdown().unwrap();
    assert_eq!(
        spill.entries(),
        ["notes"],
        "shutdown removes the live folder"
    );
}

#[test]
fn generated_chunks_waiting_under_pressure_are_dropped_and_computed_again() {
    // A cumulative sum reads each generated chunk of `x` twice, far apart (its chunk sums
    // first, then the chunk again with the carry): under the small budget the chunks wait
    // in storage, and computing one again costs less than a spill and a read back.
    let job = tensor::arange_f64(0.0, N as f64, 1.0).cumsum();
    let spill = SpillParent::new("budgets-drop");
    let s = spilling(&spill, builder().disk_budget(64 << 20));
    let (out, stats) = s.execute_with_stats(&job).unwrap();
    let v = out.as_slice::<f64>().expect("f64 output");
    assert_eq!(v.len(), N);
    let mut sum = 0.0;
    for (i, &got) in v.iter().enumerate() {
        sum += i as f64;
        assert_eq!(got, sum, "element {i}");
    }
    assert!(stats.storage.chunks_dropped > 0, "{stats:?}");
    assert!(stats.chunks_recomputed > 0);
    assert_eq!(stats.chunks_lost, 0);
    // Without pressure nothing is dropped, and the answer is the same.
    let loose = session_from(builder().chunk_bytes(8 << 10).spill_dir(&spill.0));
    let (plain, stats) = loose.execute_with_stats(&job).unwrap();
    assert_eq!(plain, out);
    assert_eq!(stats.storage.chunks_dropped, 0);
}
