#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::scheduler::kernel_error;
use tessera_actors::{ActorSystem, ChunkId, ChunkKey, JobId, KeptOwner, SystemConfig};
use tessera_kernels::frame::ops::FrameOp;
use tessera_kernels::{ArrayOp, Buffer, HostTensor, ScanOp};

fn held() -> Held {
    let system = ActorSystem::start(SystemConfig {
        cpu_threads: 1,
        thread_prefix: "tdirect".into(),
        ..SystemConfig::default()
    })
    .unwrap();
    Held::new(Arc::new(system))
}

fn vector(values: &[i64]) -> HostTensor {
    HostTensor::new(vec![values.len()], Buffer::I64(values.to_vec())).unwrap()
}

fn chunk(values: &[i64]) -> Arc<ChunkData> {
    Arc::new(ChunkData::Tensor(vector(values)))
}

/// `values` kept in `held`'s storage, as a finished task's output is.
fn stored(held: &Held, values: &[i64]) -> Input {
    let kept = held.system().store(chunk(values)).unwrap();
    Input::Held(HeldChunk {
        attempt: 0,
        kept: Arc::new(kept),
    })
}

fn task(op: ChunkOp, inputs: Vec<Input>, parts: usize) -> DirectTask {
    DirectTask {
        job: 1,
        op,
        locations: vec![pb::ChunkLocation::default(); inputs.len()],
        inputs,
        parts,
        droppable: false,
        gpu: None,
    }
}

fn read(held: &Held, kept: &Arc<KeptChunk>) -> ChunkData {
    let mut read = held.system().read_kept(&[kept.as_ref()]).unwrap();
    read.pop().unwrap().as_ref().clone()
}

fn cumsum() -> ChunkOp {
    ChunkOp::Array(ArrayOp::Scan {
        op: ScanOp::Sum,
        axis: 0,
    })
}

#[test]
fn held_and_fetched_inputs_run_directly_and_the_output_is_kept() {
    let held = held();
    let kept = run(&held, task(cumsum(), vec![stored(&held, &[1, 2, 3])], 0)).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(read(&held, &kept[0]), ChunkData::Tensor(vector(&[1, 3, 6])));
    assert_eq!(kept[0].nbytes(), 24);

    // Two held inputs (one repeated) and a fetched one, in the op's order.
    let take = ChunkOp::Array(ArrayOp::Take {
        axis: 0,
        sources: vec![(0, 1), (1, 0), (2, 2), (3, 0)],
    });
    let a = stored(&held, &[7, 8, 9]);
    let inputs = vec![
        a.clone(),
        Input::Fetched(chunk(&[40])),
        a,
        stored(&held, &[-5]),
    ];
    let kept = run(&held, task(take, inputs, 0)).unwrap();
    assert_eq!(
        read(&held, &kept[0]),
        ChunkData::Tensor(vector(&[8, 40, 9, -5]))
    );
}

#[test]
fn a_kernel_error_is_typed_and_not_retried_when_the_inputs_determine_it() {
    let held = held();
    let op = ChunkOp::Array(ArrayOp::Scan {
        op: ScanOp::Sum,
        axis: 3,
    });
    let inputs = vec![Input::Fetched(chunk(&[1, 2]))];
    let expected = run_cpu_kernel(&op, &[chunk(&[1, 2])]).unwrap_err();
    assert!(!expected.is_retryable());
    let status = run(&held, task(op, inputs, 0)).unwrap_err();
    assert_eq!(status.state, TaskState::Failed as i32);
    assert!(!status.retryable);
    assert_eq!(status.error, expected.to_string());
    assert_eq!(kernel_error(&status.kernel_error), Some(expected));
}

#[test]
fn a_split_task_keeps_one_chunk_per_part_and_a_wrong_split_is_a_shape_error() {
    let held = held();
    let parts = Arc::new(ChunkData::Parts(vec![vector(&[1, 2]), vector(&[3])]));
    let split = task(ChunkOp::Literal(Arc::clone(&parts)), Vec::new(), 2);
    let kept = run(&held, split).unwrap();
    assert_eq!(kept.len(), 2);
    assert_eq!(read(&held, &kept[0]), ChunkData::Tensor(vector(&[1, 2])));
    assert_eq!(read(&held, &kept[1]), ChunkData::Tensor(vector(&[3])));
    assert_eq!((kept[0].nbytes(), kept[1].nbytes()), (16, 8));

    let status = run(&held, task(ChunkOp::Literal(parts), Vec::new(), 3)).unwrap_err();
    assert!(!status.retryable);
    match kernel_error(&status.kernel_error) {
        Some(KernelError::ShapeMismatch(m)) => assert!(m.contains("3 parts"), "{m}"),
        other => panic!("expected a shape mismatch, got {other:?}"),
    }
}

#[test]
fn a_task_of_a_job_cancelled_before_it_runs_is_not_run() {
    let held = held();
    held.cancel(1);
    let status = run(&held, task(cumsum(), vec![Input::Fetched(chunk(&[1]))], 0)).unwrap_err();
    assert_eq!(status.state, TaskState::Cancelled as i32);
    // Nothing was stored for it.
    assert_eq!(held.system().reserved_bytes(), 0);
    // Another job's task runs.
    let other = DirectTask {
        job: 2,
        ..task(cumsum(), vec![Input::Fetched(chunk(&[1, 1]))], 0)
    };
    let kept = run(&held, other).unwrap();
    assert_eq!(read(&held, &kept[0]), ChunkData::Tensor(vector(&[1, 2])));
}

struct Nobody;
impl KeptOwner for Nobody {
    fn unkeep(&self, _: ChunkId) {}
}

/// Where the scheduler said a held input is (as `RunTask.inputs` names it).
fn location(key: u64) -> pb::ChunkLocation {
    pb::ChunkLocation {
        job_id: 1,
        chunk_key: key,
        attempt: 4,
        flight_address: "http://here:1".into(),
        ..pb::ChunkLocation::default()
    }
}

#[test]
fn a_held_input_storage_lost_is_reported_missing_for_the_scheduler_to_recompute() {
    let held = held();
    let lost = KeptChunk::new(
        ChunkId {
            job: JobId(9),
            key: ChunkKey(9),
        },
        8,
        Arc::new(Nobody),
    );
    let input = Input::Held(HeldChunk {
        attempt: 0,
        kept: Arc::new(lost),
    });
    let fetched = Input::Fetched(chunk(&[1]));
    let reads_both = DirectTask {
        locations: vec![location(7), location(8)],
        ..task(cumsum(), vec![input, fetched], 0)
    };
    let status = run(&held, reads_both).unwrap_err();
    assert_eq!(status.state, TaskState::InputMissing as i32);
    assert_eq!(
        status.missing,
        vec![location(7)],
        "the held input, not the fetched one"
    );
    assert!(!status.dropped);
    assert!(
        status.error.contains("lost from storage"),
        "{}",
        status.error
    );
}

/// A worker's storage of 1,000 bytes holding a chunk it dropped (896 bytes, which its
/// owner can compute again in a nanosecond: a spill would cost more) and one it keeps
/// (200 bytes, whose arrival passed the budget), as held inputs.
fn with_a_dropped_chunk() -> (Held, Input, Input) {
    let system = ActorSystem::start(SystemConfig {
        cpu_threads: 1,
        host_memory_budget: 1000,
        thread_prefix: "tdropped".into(),
        ..SystemConfig::default()
    })
    .unwrap();
    let held = Held::new(Arc::new(system));
    let recompute = Some(std::time::Duration::from_nanos(1));
    let big = Arc::new(
        held.system()
            .store_with(chunk(&[3; 112]), recompute)
            .unwrap(),
    );
    let small = stored(&held, &[1; 25]);
    held.system().settle().unwrap();
    let dropped = Input::Held(HeldChunk {
        attempt: 4,
        kept: big,
    });
    (held, dropped, small)
}

#[test]
fn a_held_input_storage_dropped_is_reported_dropped() {
    let (held, input, small) = with_a_dropped_chunk();
    let reads_big = DirectTask {
        locations: vec![location(5)],
        ..task(cumsum(), vec![input], 0)
    };
    let status = run(&held, reads_big).unwrap_err();
    assert_eq!(status.state, TaskState::InputMissing as i32);
    assert_eq!(status.missing, vec![location(5)]);
    assert!(status.dropped, "{status:?}");
    // A chunk not offered for dropping stays readable.
    let kept = run(&held, task(cumsum(), vec![small], 0)).unwrap();
    let want: Vec<i64> = (1..=25).collect();
    assert_eq!(read(&held, &kept[0]), ChunkData::Tensor(vector(&want)));
}

#[test]
fn dropping_the_last_handle_gives_a_stored_chunk_up() {
    let held = held();
    let kept = run(&held, task(cumsum(), vec![Input::Fetched(chunk(&[5]))], 0)).unwrap();
    let chunk = HeldChunk {
        attempt: 0,
        kept: Arc::clone(&kept[0]),
    };
    drop(kept);
    // The read below is queued behind the unkeep: storage no longer has the chunk.
    let id = chunk.kept.id();
    drop(chunk.kept);
    let handle = KeptChunk::new(id, 8, Arc::new(Nobody));
    let error = held.system().read_kept(&[&handle]).unwrap_err();
    assert!(error.to_string().contains("lost from storage"), "{error}");
    assert_eq!(held.system().reserved_bytes(), 0);
}

#[test]
fn many_chunks_stored_at_once_are_all_kept_past_the_planners_mailbox() {
    let held = held();
    let kept: Vec<KeptChunk> = (0..500)
        .map(|i| held.system().store(chunk(&[i, -i])).unwrap())
        .collect();
    let read = held
        .system()
        .read_kept(&kept.iter().collect::<Vec<_>>())
        .unwrap();
    assert_eq!(read.len(), 500);
    for (i, data) in (0..500).zip(read) {
        assert_eq!(*data, ChunkData::Tensor(vector(&[i, -i])));
    }
    assert_eq!(held.system().reserved_bytes(), 500 * 16);
}

#[test]
fn a_direct_task_reserves_its_outputs_estimate_and_only_what_fits_runs_directly() {
    let system = ActorSystem::start(SystemConfig {
        cpu_threads: 1,
        host_memory_budget: 1000,
        thread_prefix: "tdroom".into(),
        ..SystemConfig::default()
    })
    .unwrap();
    let held = Held::new(Arc::new(system));
    // 40 and 24 bytes: the largest for a scan, both for a concatenation (it gathers).
    let (a, b) = (stored(&held, &[1, 2, 3, 4, 5]), stored(&held, &[6, 7, 8]));
    let fetched = Input::Fetched(chunk(&[9; 60]));
    assert_eq!(task_estimate(&cumsum(), &[a.clone(), b.clone()]), 40);
    assert_eq!(task_estimate(&cumsum(), &[a.clone(), fetched.clone()]), 480);
    // A sort also holds its inputs concatenated (and their order) while it runs.
    let sort = ChunkOp::Frame(FrameOp::Sort {
        by: vec![],
        limit: None,
    });
    assert_eq!(task_estimate(&sort, &[a.clone(), b.clone()]), 2 * (40 + 24));
    let concat = ChunkOp::Frame(FrameOp::Concat { limit: None });
    assert_eq!(task_estimate(&concat, &[a, b, fetched]), 40 + 24 + 480);
    assert_eq!(task_estimate(&ChunkOp::Literal(chunk(&[1])), &[]), 0);
    // A 480-byte and a 400-byte task fit the 1000-byte budget beside the 64 bytes held; a
    // third of 480 does not until one of them is done.
    let system = held.system();
    let first = system.try_reserve(480).expect("room for the first");
    let second = system.try_reserve(400).expect("room for the second");
    assert!(system.try_reserve(480).is_none());
    drop(first);
    assert!(system.try_reserve(480).is_some());
    drop(second);
}
