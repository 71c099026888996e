//! The GPU suite's dataframe part: groupby partials and join matching computed by
//! `frame.cu` on device 0, and filters by their generated predicate kernels, judged
//! against the CPU kernels (groupby keys and integer states exactly, float sums to
//! rounding; joined and filtered tables exactly) over key types, nulls, NaNs, many groups,
//! duplicate join keys, sliced tables, and through `Gpu::execute` as the runtime calls it;
//! a predicate whose evaluation fails on the CPU fails alike.
//! Skips as the rest of the suite does.

use super::filter::{awkward_table, fault_predicates, fault_table, predicates, SAFE_ROWS};
use super::gpu::{device, run, run_timed};
use crate::frame_plan::testing::{
    agg, assert_same, categories, sample_batch, sample_specs, with_cat,
};
use crate::Gpu;
use arrow::array::RecordBatch;
use std::sync::Arc;
use std::time::Duration;
use tessera_frame::testing::{join_specs, join_tables};
use tessera_kernels::frame::expr::{col, lit, Expr};
use tessera_kernels::frame::groupby::{partial, AggFunc, GroupBySpec};
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::ops::{FrameOp, Pipeline, Sink, Source};
use tessera_kernels::{cpu, ChunkData, ChunkOp};

/// Every sample spec's partial of `batch`, computed on the device, equals the CPU's.
fn check(gpu: &Gpu, batch: &RecordBatch, what: &str) {
    for spec in sample_specs() {
        let (got, took) = run_timed(
            gpu,
            &pipeline(&spec, false),
            &[Arc::new(ChunkData::Table(batch.clone()))],
        )
        .unwrap_or_else(|e| panic!("{what} by {:?}: {e}", spec.keys));
        assert!(
            took > Duration::ZERO,
            "{what} by {:?} ran on the CPU",
            spec.keys
        );
        let ChunkData::Table(got) = got else {
            panic!("{what}: not a table")
        };
        assert_same(&got, &partial(&spec, batch).unwrap());
    }
}

fn pipeline(spec: &GroupBySpec, counted: bool) -> ChunkOp {
    ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
        source: Source::Input,
        steps: vec![],
        sink: if counted {
            Sink::CountedPartial {
                spec: spec.clone(),
                parts: 3,
            }
        } else {
            Sink::GroupPartial(spec.clone())
        },
    }))
}

#[test]
fn gpu_groupby_partials_equal_the_cpus() {
    let Some(gpu) = device() else { return };
    for n in [1, 200, 5_000, 1_000_003] {
        check(&gpu, &sample_batch(n), &format!("{n} rows"));
    }
    // Offsets into every buffer (values, strings, validity bits).
    check(&gpu, &sample_batch(100_000).slice(37, 70_001), "a slice");
    // A dictionary naming one string twice, or with a null entry: its canonical keys.
    let repeated = categories(5_000, &["red", "blue", "red", "green"]);
    check(
        &gpu,
        &with_cat(&sample_batch(5_000), repeated),
        "repeated entries",
    );
    let values = Arc::new(arrow::array::StringArray::from(vec![
        Some("red"),
        None,
        Some("blue"),
        Some("red"),
    ]));
    let keys = arrow::array::Int16Array::from_iter_values((0..5_000).map(|i| (i * 7 % 4) as i16));
    let null_entry = Arc::new(arrow::array::DictionaryArray::try_new(keys, values).unwrap());
    check(
        &gpu,
        &with_cat(&sample_batch(5_000), null_entry),
        "a null entry",
    );
}

#[test]
fn gpu_groupby_runs_as_the_runtime_calls_it() {
    let Some(gpu) = device() else { return };
    let batch = Arc::new(ChunkData::Table(sample_batch(50_000)));
    for spec in sample_specs().into_iter().take(3) {
        for counted in [false, true] {
            let op = pipeline(&spec, counted);
            assert!(Gpu::runs(&op));
            let got = run(&gpu, &op, &[Arc::clone(&batch)]).unwrap();
            let want = cpu::execute(&op, &[Arc::clone(&batch)]).unwrap();
            match (got, want) {
                (ChunkData::Table(g), ChunkData::Table(w)) => assert_same(&g, &w),
                (ChunkData::Tables(g), ChunkData::Tables(w)) => {
                    assert_eq!(g.len(), w.len());
                    g.iter().zip(&w).for_each(|(g, w)| assert_same(g, w));
                }
                other => panic!("{other:?}"),
            }
        }
    }
    // A spec the kernels lack (std) and an empty table run on the CPU, with its answers.
    let std = GroupBySpec {
        keys: vec!["id".into()],
        aggs: vec![agg("f", AggFunc::Std)],
    };
    for input in [
        Arc::clone(&batch),
        Arc::new(ChunkData::Table(sample_batch(10).slice(0, 0))),
    ] {
        let got = run(&gpu, &pipeline(&std, false), &[Arc::clone(&input)]).unwrap();
        let want = cpu::execute(&pipeline(&std, false), &[input]).unwrap();
        assert_eq!(got, want);
    }
    // Bad input is the CPU's typed error.
    let missing = GroupBySpec {
        keys: vec!["nope".into()],
        aggs: vec![agg("v", AggFunc::Sum)],
    };
    assert!(run(&gpu, &pipeline(&missing, false), &[batch]).is_err());
}

#[test]
fn gpu_joins_equal_the_cpus() {
    let Some(gpu) = device() else { return };
    // (left rows, right rows, right rows per key); 2,000 per key is more than the device
    // lays out, so that case is matched by the CPU.
    for (n, m, dups, on_device) in [
        (1, 1, 1, true),
        (1_000, 800, 3, true),
        (300_000, 200_000, 5, true),
        (50, 4_000, 2_000, false),
    ] {
        let (left, right) = join_tables(n, m, dups);
        for (l, r) in [
            (left.clone(), right.clone()),
            (left.slice(n / 3, n - n / 3), right.slice(m / 5, m - m / 5)),
        ] {
            for spec in join_specs() {
                let op = ChunkOp::Frame(FrameOp::join(spec.clone(), 1));
                assert!(Gpu::runs(&op));
                let inputs = [
                    Arc::new(ChunkData::Table(l.clone())),
                    Arc::new(ChunkData::Table(r.clone())),
                ];
                let (got, took) = run_timed(&gpu, &op, &inputs).unwrap();
                assert_eq!(took > Duration::ZERO, on_device, "{n}x{m} by {spec:?}");
                let want = cpu::execute(&op, &inputs).unwrap();
                assert_eq!(got, want, "{n}x{m}, {dups} per key, by {spec:?}");
            }
        }
    }
}

/// A task that filters its input by `predicate` into `sink`.
fn filter_op(predicate: Expr, sink: Sink) -> ChunkOp {
    ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
        source: Source::Input,
        steps: vec![MapStep::Filter(predicate)],
        sink,
    }))
}

#[test]
fn gpu_filters_the_cpu_fails_on_fail_alike() {
    let Some(gpu) = device() else { return };
    let table = fault_table();
    let safe = [Arc::new(ChunkData::Table(table.slice(0, SAFE_ROWS)))];
    let all = [Arc::new(ChunkData::Table(table))];
    for predicate in fault_predicates() {
        let op = filter_op(predicate.clone(), Sink::Table);
        let (got, took) = run_timed(&gpu, &op, &safe).unwrap();
        assert!(took > Duration::ZERO, "{predicate} ran on the CPU");
        assert_eq!(got, cpu::execute(&op, &safe).unwrap(), "{predicate}");
        // A row faults: the CPU evaluates the predicate and reports its error.
        let want = cpu::execute(&op, &all).unwrap_err();
        let got = run_timed(&gpu, &op, &all).unwrap_err();
        assert_eq!(got.to_string(), want.to_string(), "{predicate}");
    }
    // A constant's cast fails on the CPU even over no rows: so it does here.
    let op = filter_op(
        col("i8").gt(lit(300).cast(arrow::datatypes::DataType::Int8)),
        Sink::Table,
    );
    let empty = [Arc::new(ChunkData::Table(fault_table().slice(0, 0)))];
    let want = cpu::execute(&op, &empty).unwrap_err();
    let got = run_timed(&gpu, &op, &empty).unwrap_err();
    assert_eq!(got.to_string(), want.to_string());
}

#[test]
fn gpu_filters_equal_the_cpus() {
    let Some(gpu) = device() else { return };
    let table = awkward_table();
    for batch in [table.clone(), table.slice(13, 37)] {
        let input = Arc::new(ChunkData::Table(batch.clone()));
        for predicate in predicates() {
            let op = filter_op(predicate.clone(), Sink::Table);
            assert!(Gpu::runs(&op));
            let want = cpu::execute(&op, &[Arc::clone(&input)]).unwrap();
            // Copied in for the task, then twice from the copies kept for the input.
            let fresh = Arc::new(ChunkData::Table(batch.clone()));
            for inputs in [fresh, Arc::clone(&input), Arc::clone(&input)] {
                let (got, took) = run_timed(&gpu, &op, &[inputs]).unwrap();
                assert!(took > Duration::ZERO, "{predicate} ran on the CPU");
                assert_eq!(got, want, "{predicate} over {} rows", batch.num_rows());
            }
        }
    }
    // A filter feeding a groupby: the flags leave rows out of the groups (no gather).
    let spec = GroupBySpec {
        keys: vec!["s".into(), "a".into()],
        aggs: vec![
            agg("b", AggFunc::Sum),
            agg("g", AggFunc::Max),
            agg("f", AggFunc::Mean),
            agg("c", AggFunc::Size),
        ],
    };
    let input = [Arc::new(ChunkData::Table(table.slice(3, 55)))];
    for predicate in predicates() {
        for sink in [
            Sink::GroupPartial(spec.clone()),
            Sink::CountedPartial {
                spec: spec.clone(),
                parts: 3,
            },
        ] {
            let op = filter_op(predicate.clone(), sink);
            let (got, took) = run_timed(&gpu, &op, &input).unwrap();
            assert!(took > Duration::ZERO, "{predicate} ran on the CPU");
            match (got, cpu::execute(&op, &input).unwrap()) {
                (ChunkData::Table(g), ChunkData::Table(w)) => assert_same(&g, &w),
                (ChunkData::Tables(g), ChunkData::Tables(w)) => {
                    assert_eq!(g.len(), w.len());
                    g.iter().zip(&w).for_each(|(g, w)| assert_same(g, w));
                }
                other => panic!("{predicate}: {other:?}"),
            }
        }
    }
    // Many tiles of the scan, strings, u64 and float columns gathered, nulls; then a
    // filter feeding a groupby partial on the device.
    let big = sample_batch(1_000_003).slice(5, 999_990);
    let input = [Arc::new(ChunkData::Table(big))];
    let predicate = (col("f").gt(-50.0) & col("id").ne(4)) | col("big").str_contains("xxxxxxxxxx");
    // (sink, whether it groups: a partial is compared to rounding, a table exactly)
    for (sink, groups) in [
        (Sink::Table, false),
        (
            Sink::GroupPartial(GroupBySpec {
                keys: vec!["name".into()],
                aggs: vec![agg("v", AggFunc::Sum), agg("f", AggFunc::Max)],
            }),
            true,
        ),
    ] {
        let op = filter_op(predicate.clone(), sink);
        let (got, took) = run_timed(&gpu, &op, &input).unwrap();
        assert!(took > Duration::ZERO);
        let want = cpu::execute(&op, &input).unwrap();
        match (&got, &want) {
            (ChunkData::Table(g), ChunkData::Table(w)) if groups => assert_same(g, w),
            _ => assert_eq!(got, want),
        }
    }
    // A spec the kernels lack (std): the filter on the device, the groupby on the CPU.
    let std = GroupBySpec {
        keys: vec!["name".into()],
        aggs: vec![agg("f", AggFunc::Std)],
    };
    let op = filter_op(predicate, Sink::GroupPartial(std));
    let (got, took) = run_timed(&gpu, &op, &input).unwrap();
    assert!(took > Duration::ZERO);
    match (got, cpu::execute(&op, &input).unwrap()) {
        (ChunkData::Table(g), ChunkData::Table(w)) => assert_same(&g, &w),
        other => panic!("{other:?}"),
    }
    // A predicate the generator does not take (a function; a cast that may fail is
    // generated since it faults where the CPU fails): kept as a table, the task stays the
    // CPU pool's; feeding a groupby, the device computes it on the CPU with its answer. Bad
    // input is the CPU's typed error.
    let function = col("a").abs().gt(lit(1));
    assert!(!Gpu::runs(&filter_op(function.clone(), Sink::Table)));
    let op = filter_op(function, Sink::GroupPartial(spec));
    let one = [Arc::new(ChunkData::Table(table.clone()))];
    match (
        run(&gpu, &op, &one).unwrap(),
        cpu::execute(&op, &one).unwrap(),
    ) {
        (ChunkData::Table(g), ChunkData::Table(w)) => assert_same(&g, &w),
        other => panic!("{other:?}"),
    }
    assert!(run(&gpu, &filter_op(col("nope").gt(0), Sink::Table), &one).is_err());
}
