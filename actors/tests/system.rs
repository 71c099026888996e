//! End-to-end tests of the actor system through its public API: real kernels on the CPU
//! pool, failure reporting, and that no thread outlives the system.
//!
//! Each test uses its own thread-name prefix: tests run on threads of one process.

// Helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_actors::{
    ActorError, ActorSystem, ChunkGraph, ChunkKey, ChunkTask, GraphError, JobError, JobEvent,
    JobHandle, SystemConfig,
};
use tessera_kernels::{
    AxisMap, BinaryOp, ChunkData, ChunkOp, DType, FusedKernel, Instr, InstrKind, LeafSource,
    Scalar, SourceChunk,
};

fn config(prefix: &str, cpu_threads: usize) -> SystemConfig {
    SystemConfig {
        cpu_threads,
        host_memory_budget: 1 << 30,
        thread_prefix: prefix.to_string(),
        ..SystemConfig::default()
    }
}

/// Live threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_string())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

fn leaf(value: i64) -> Instr {
    Instr {
        shape: vec![4],
        dtype: DType::I64,
        kind: InstrKind::Leaf(LeafSource::Const(Scalar::I64(value))),
    }
}

/// A `[4]` i64 chunk of `value`s.
fn const_op(value: i64) -> ChunkOp {
    ChunkOp::Fused(FusedKernel {
        instrs: vec![leaf(value)],
        root: 0,
        reduce: None,
    })
}

/// Input 0 (a `[4]` i64 chunk) plus `value`.
fn add_op(value: i64) -> ChunkOp {
    let input = Instr {
        shape: vec![4],
        dtype: DType::I64,
        kind: InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![SourceChunk {
                start: vec![0],
                shape: vec![4],
                input: 0,
            }],
            axes: vec![AxisMap {
                offset: 0,
                local_axis: Some(0),
                step: 1,
            }],
        }),
    };
    let sum = Instr {
        shape: vec![4],
        dtype: DType::I64,
        kind: InstrKind::Binary {
            op: BinaryOp::Add,
            a: 0,
            b: 1,
        },
    };
    ChunkOp::Fused(FusedKernel {
        instrs: vec![input, leaf(value), sum],
        root: 2,
        reduce: None,
    })
}

fn task(key: u64, op: ChunkOp, inputs: &[u64]) -> ChunkTask {
    ChunkTask::new(
        ChunkKey(key),
        op,
        inputs.iter().map(|&k| ChunkKey(k)).collect(),
    )
}

fn values(chunk: &ChunkData) -> Vec<i64> {
    chunk
        .as_tensor()
        .and_then(|t| t.as_slice::<i64>())
        .expect("an i64 tensor")
        .to_vec()
}

/// Waits for the job's end through `recv_event`, counting progress events.
fn finish(handle: &JobHandle) -> Result<tessera_actors::JobOutput, JobError> {
    loop {
        match handle.recv_event(Duration::from_secs(60)).unwrap() {
            Some(JobEvent::Finished(result)) => return result,
            Some(JobEvent::Progress { done, total }) => assert!(done < total),
            Some(JobEvent::FailedStats(stats)) => assert!(stats.failure.is_some()),
            None => panic!("no event within 60 s"),
        }
    }
}

/// Needs the CPU fused evaluator (`tessera_kernels::cpu::execute`).
#[test]
fn constant_chunk_runs_end_to_end_and_threads_are_joined() {
    let system = ActorSystem::start(config("tsconst", 2)).unwrap();
    // A new thread names itself once it runs: poll briefly.
    let expected = [
        "tsconst-actix",
        "tsconst-cpu0",
        "tsconst-cpu1",
        "tsconst-store",
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut names = threads_named("tsconst");
        names.sort();
        if names == expected || Instant::now() > deadline {
            assert_eq!(names, expected);
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }

    let graph = ChunkGraph {
        tasks: vec![task(1, const_op(3), &[])],
        outputs: vec![ChunkKey(1)],
        ..Default::default()
    };
    let output = system.submit(graph).unwrap().wait().unwrap();
    assert_eq!(output.outputs.len(), 1);
    assert_eq!(output.outputs[0].0, ChunkKey(1));
    assert_eq!(values(&output.outputs[0].1), [3, 3, 3, 3]);
    assert_eq!(output.stats.chunks_run, 1);
    assert_eq!(output.stats.bytes_produced, 32);
    assert_eq!(output.stats.chunks_by_op.get("fused"), Some(&1));

    system.shutdown().unwrap();
    assert_eq!(threads_named("tsconst"), Vec::<String>::new());
}

/// Needs the CPU fused evaluator. Chains of chunks read their inputs from storage; chunks
/// are released as their readers finish and outputs come back in the graph's order.
#[test]
fn chained_graph_delivers_outputs_in_order() {
    let system = ActorSystem::start(config("tschain", 2)).unwrap();
    // 20 chains: leaf (10·i) → +1 → +2 ; outputs: every chain's end, and chain 0's leaf.
    let mut tasks = Vec::new();
    let mut outputs = Vec::new();
    for i in 0..20u64 {
        let k = 100 * (i + 1);
        tasks.push(task(k, const_op(10 * i as i64), &[]));
        tasks.push(task(k + 1, add_op(1), &[k]));
        tasks.push(task(k + 2, add_op(2), &[k + 1]));
        outputs.push(ChunkKey(k + 2));
    }
    outputs.push(ChunkKey(100));
    let handle = system
        .submit(ChunkGraph {
            tasks,
            outputs: outputs.clone(),
            ..Default::default()
        })
        .unwrap();
    let output = finish(&handle).unwrap();
    let keys: Vec<ChunkKey> = output.outputs.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, outputs);
    for (i, (_, chunk)) in output.outputs[..20].iter().enumerate() {
        assert_eq!(values(chunk), [10 * i as i64 + 3; 4]);
    }
    assert_eq!(values(&output.outputs[20].1), [0; 4]);
    assert_eq!(output.stats.chunks_run, 60);
    assert!(
        output.stats.peak_stored_bytes < 60 * 32,
        "chunks were released early"
    );
    // After Finished no event can come.
    assert!(matches!(
        handle.recv_event(Duration::from_millis(10)),
        Err(ActorError::Stopped(_))
    ));
    system.shutdown().unwrap();
}

#[test]
fn failing_kernel_names_chunk_and_op_and_the_system_stays_usable() {
    let system = ActorSystem::start(config("tsfail", 1)).unwrap();
    let broken = ChunkOp::Fused(FusedKernel {
        instrs: vec![leaf(1)],
        root: 5,
        reduce: None,
    });
    let graph = ChunkGraph {
        tasks: vec![
            task(1, const_op(1), &[]),
            task(2, broken, &[1]),
            task(3, const_op(2), &[2]),
        ],
        outputs: vec![ChunkKey(3)],
        ..Default::default()
    };
    match system.submit(graph).unwrap().wait() {
        Err(JobError::ChunkFailed { key, op, source }) => {
            assert_eq!(key, ChunkKey(2));
            assert_eq!(op, "fused");
            assert!(!source.to_string().is_empty());
        }
        other => panic!("expected a chunk failure, got {other:?}"),
    }
    // A combine with no inputs fails too (an error or a caught panic, never a hang).
    let combine = ChunkOp::Combine(tessera_kernels::CombineSpec {
        op: tessera_kernels::ReduceOp::Sum,
        input_dtype: DType::I64,
        finalize: None,
    });
    let graph = ChunkGraph {
        tasks: vec![task(7, combine, &[])],
        outputs: vec![ChunkKey(7)],
        ..Default::default()
    };
    let err = system.submit(graph).unwrap().wait().unwrap_err();
    assert!(
        err.to_string().starts_with("chunk 7 (combine) failed: "),
        "{err}"
    );

    let graph = ChunkGraph {
        tasks: vec![task(1, const_op(5), &[])],
        outputs: vec![ChunkKey(1)],
        ..Default::default()
    };
    let output = system.submit(graph).unwrap().wait().unwrap();
    assert_eq!(values(&output.outputs[0].1), [5; 4]);
    system.shutdown().unwrap();
}

#[test]
fn invalid_graphs_are_refused_at_submit() {
    let system = ActorSystem::start(config("tsinval", 1)).unwrap();
    let graph = ChunkGraph {
        tasks: vec![task(1, const_op(1), &[9])],
        outputs: vec![ChunkKey(1)],
        ..Default::default()
    };
    assert_eq!(
        system.submit(graph).unwrap_err(),
        ActorError::InvalidGraph(GraphError::UndefinedInput {
            task: ChunkKey(1),
            input: ChunkKey(9)
        })
    );
    let empty = system
        .submit(ChunkGraph::default())
        .unwrap()
        .wait()
        .unwrap();
    assert!(empty.outputs.is_empty());
    system.shutdown().unwrap();
}

#[test]
fn bad_config_is_refused() {
    assert!(matches!(
        ActorSystem::start(config("tszero", 0)),
        Err(ActorError::InvalidConfig(_))
    ));
    assert_eq!(threads_named("tszero"), Vec::<String>::new());
}

#[test]
fn drop_stops_everything_and_handles_see_the_system_go() {
    let system = ActorSystem::start(config("tsdrop", 3)).unwrap();
    let handle = system
        .submit(ChunkGraph {
            tasks: vec![task(1, const_op(1), &[])],
            outputs: vec![ChunkKey(1)],
            ..Default::default()
        })
        .unwrap();
    drop(system);
    assert_eq!(threads_named("tsdrop"), Vec::<String>::new());
    // The job either finished before the drop or reports that the system stopped.
    match handle.wait() {
        Ok(output) => assert_eq!(values(&output.outputs[0].1), [1; 4]),
        Err(e) => assert!(matches!(e, JobError::SystemStopped(_)), "{e}"),
    }
}

#[test]
fn system_and_handles_can_be_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<ActorSystem>();
    send::<JobHandle>();
    let system = Arc::new(ActorSystem::start(config("tsshare", 2)).unwrap());
    let workers: Vec<_> = (0..4)
        .map(|i| {
            let system = Arc::clone(&system);
            std::thread::spawn(move || {
                let graph = ChunkGraph {
                    tasks: vec![task(1, const_op(i), &[]), task(2, add_op(100), &[1])],
                    outputs: vec![ChunkKey(2)],
                    ..Default::default()
                };
                let output = system.submit(graph).unwrap().wait().unwrap();
                values(&output.outputs[0].1)
            })
        })
        .collect();
    for (i, w) in workers.into_iter().enumerate() {
        assert_eq!(w.join().unwrap(), [100 + i as i64; 4]);
    }
    Arc::try_unwrap(system).unwrap().shutdown().unwrap();
    assert_eq!(threads_named("tsshare"), Vec::<String>::new());
}

/// A cancelled job ends at once with "cancelled", the rest of its chain never runs, and
/// the system runs the next job; cancelling a finished job does nothing.
#[test]
fn cancelled_job_ends_and_the_system_stays_usable() {
    let system = ActorSystem::start(config("tscancel", 1)).unwrap();
    // One chain of 5,000 tasks: far more than can run before the cancel arrives.
    let n = 5_000u64;
    let mut tasks = vec![task(0, const_op(0), &[])];
    tasks.extend((1..n).map(|k| task(k, add_op(1), &[k - 1])));
    let handle = system
        .submit(ChunkGraph {
            tasks,
            outputs: vec![ChunkKey(n - 1)],
            ..Default::default()
        })
        .unwrap();
    handle.cancel();
    match finish(&handle) {
        Err(JobError::SystemStopped(why)) => assert!(why.contains("cancelled"), "{why}"),
        other => panic!("expected a cancelled job, got {other:?}"),
    }
    let graph = ChunkGraph {
        tasks: vec![task(1, const_op(7), &[])],
        outputs: vec![ChunkKey(1)],
        ..Default::default()
    };
    let done = system.submit(graph).unwrap();
    let output = finish(&done).unwrap();
    assert_eq!(values(&output.outputs[0].1), [7; 4]);
    done.cancel(); // finished: nothing happens
    system.shutdown().unwrap();
}

#[test]
fn a_stalled_read_of_kept_chunks_times_out_and_the_next_read_is_answered() {
    use tessera_actors::{FaultInjector, FaultKind, ReadError};
    use tessera_kernels::{Buffer, HostTensor};
    let faults = Arc::new(FaultInjector::new().on_nth(None, 1, FaultKind::StallRead));
    let system = ActorSystem::start(SystemConfig {
        faults: Some(Arc::clone(&faults)),
        read_timeout: Duration::from_millis(300),
        ..config("tsstall", 1)
    })
    .unwrap();
    let data = ChunkData::Tensor(HostTensor::new(vec![3], Buffer::I64(vec![4, 5, 6])).unwrap());
    let kept = system.store(Arc::new(data.clone())).unwrap();
    match system.read_kept(&[&kept]) {
        Err(ReadError::TimedOut(after)) => assert_eq!(after, Duration::from_millis(300)),
        other => panic!("expected a timed-out read, got {other:?}"),
    }
    assert_eq!(faults.injected_of(FaultKind::StallRead), 1);
    // Only the first read stalls: the chunk is still kept and the next read gets it.
    let read = system.read_kept(&[&kept]).unwrap();
    assert_eq!(*read[0], data);
    drop(kept);
    system.shutdown().unwrap();
}

#[test]
fn a_chunk_handed_to_storage_counts_against_the_budget_before_storage_takes_it() {
    use tessera_kernels::{Buffer, HostTensor};
    let system = ActorSystem::start(config("tsresv", 1)).unwrap();
    let data = ChunkData::Tensor(HostTensor::new(vec![1000], Buffer::I64(vec![1; 1000])).unwrap());
    let nbytes = data.nbytes() as u64;
    let kept = system.store(Arc::new(data)).unwrap();
    // Counted from the hand-over, not from when the storage thread gets to the chunk.
    assert_eq!(system.reserved_bytes(), nbytes);
    system.settle().unwrap();
    assert_eq!(
        system.reserved_bytes(),
        nbytes,
        "taken over, not reserved twice"
    );
    drop(kept);
    system.settle().unwrap();
    assert_eq!(
        system.reserved_bytes(),
        0,
        "given back when the chunk is freed"
    );
    system.shutdown().unwrap();
}
