//! Tests of the frame ops: pipelines over each source into each sink, working memory.
use super::*;
use crate::frame::groupby::{AggFunc, AggSpec};
use crate::frame::join::JoinHow;
use crate::ChunkOp;
use arrow::array::Array;
use std::collections::BTreeMap;

/// Column `i` of `b`, of Int64.
fn ints(b: &RecordBatch, i: usize) -> Vec<i64> {
    let c = b
        .column(i)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("Int64");
    (0..c.len()).map(|i| c.value(i)).collect()
}

/// `rows` rows of key `(7·i) mod keys` and value `i`.
fn chunk(start: i64, rows: i64, keys: i64) -> Arc<ChunkData> {
    let k: Vec<i64> = (start..start + rows).map(|i| (7 * i) % keys).collect();
    let a: Vec<i64> = (start..start + rows).collect();
    let batch = RecordBatch::try_from_iter([
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
    ])
    .expect("batch");
    Arc::new(ChunkData::Table(batch))
}

#[test]
fn working_memory_is_a_csv_range_s_text_and_a_keyed_op_s_inputs() {
    let spec = GroupBySpec {
        keys: vec!["k".into()],
        aggs: vec![],
    };
    let csv = |sink: Sink| {
        FrameOp::Pipeline(Pipeline {
            source: Source::Csv(CsvScan {
                path: "f.csv".into(),
                range: CsvRange {
                    start: 100,
                    end: 1_100,
                    state: Default::default(),
                },
                data_start: 10,
                schema: Schema::empty(),
                projection: None,
                options: CsvOptions::default(),
            }),
            steps: vec![],
            sink,
        })
    };
    let input = |sink: Sink| {
        FrameOp::Pipeline(Pipeline {
            source: Source::Input,
            steps: vec![],
            sink,
        })
    };
    // Parsed rows that are the output: only the text besides them.
    assert_eq!(csv(Sink::Table).working_estimate(0), 1_000);
    // Rows parsed to be aggregated: the text and the rows.
    assert_eq!(
        csv(Sink::GroupPartial(spec.clone())).working_estimate(0),
        2_000
    );
    assert_eq!(input(Sink::Table).working_estimate(500), 0);
    assert_eq!(
        input(Sink::GroupPartial(spec.clone())).working_estimate(500),
        500
    );
    let merge = FrameOp::GroupMerge {
        spec,
        finalize: true,
    };
    assert_eq!(merge.working_estimate(700), 700);
    assert_eq!(FrameOp::Concat { limit: None }.working_estimate(700), 0);
    // Through the chunk op, from the inputs' sizes.
    let op = ChunkOp::Frame(merge);
    assert_eq!(op.working_estimate([300, 400]), 700);
    assert_eq!(op.output_estimate([300, 400]), Some(700));
}

/// `sum(a) by k`.
fn sum_of_a_by_k() -> GroupBySpec {
    GroupBySpec {
        keys: vec!["k".into()],
        aggs: vec![AggSpec {
            column: "a".into(),
            func: AggFunc::Sum,
            output: "a_sum".into(),
        }],
    }
}

/// A device that takes a filter feeding a groupby (computing it on the CPU) and counts
/// the times it did.
struct Fusing(std::cell::Cell<usize>);

impl FrameDevice for Fusing {
    fn group_partial(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, KernelError> {
        CpuFrames.group_partial(spec, batch)
    }

    fn filtered_group_partial(
        &self,
        spec: &GroupBySpec,
        predicate: &Expr,
        batch: &RecordBatch,
    ) -> Result<Option<RecordBatch>, KernelError> {
        self.0.set(self.0.get() + 1);
        let kept = super::super::map::apply_steps(batch, &[MapStep::Filter(predicate.clone())])?;
        Ok(Some(groupby::partial(spec, &kept)?))
    }
}

#[test]
fn a_last_filter_feeding_a_groupby_is_offered_to_the_device_as_one_step() {
    use super::super::expr::{col, lit};
    let spec = sum_of_a_by_k();
    let with_b = MapStep::WithColumn {
        name: "b".into(),
        expr: col("a") * lit(3),
    };
    let on_b = MapStep::Filter((col("b") % lit(5)).ne(0));
    let on_a = MapStep::Filter(col("a").gt(700));
    let input = [chunk(0, 2_000, 37)];
    // The steps, and whether the device is offered the last filter with the groupby.
    for (steps, fused) in [
        (vec![with_b.clone(), on_b.clone()], 1),
        (vec![on_a.clone()], 1),
        (vec![with_b.clone(), on_b.clone(), with_b.clone()], 0),
        (vec![on_a.clone(), with_b.clone()], 0),
    ] {
        for sink in [
            Sink::GroupPartial(spec.clone()),
            Sink::CountedPartial {
                spec: spec.clone(),
                parts: 4,
            },
        ] {
            let op = FrameOp::Pipeline(Pipeline {
                source: Source::Input,
                steps: steps.clone(),
                sink,
            });
            let device = Fusing(std::cell::Cell::new(0));
            let got = run_with(&op, &input, &device).unwrap();
            assert_eq!(got, run(&op, &input).unwrap(), "{steps:?}");
            assert_eq!(device.0.get(), fused, "{steps:?}");
        }
    }
}

/// A device that takes every chunk whole (no morsels), as a GPU does.
struct Whole;

impl FrameDevice for Whole {
    fn group_partial(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, KernelError> {
        CpuFrames.group_partial(spec, batch)
    }
}

/// A Parquet scan of more rows than a CPU morsel gives, morsel by morsel, the chunk that
/// the scan taken whole gives: groupby partials (string keys in runs with nulls, every
/// aggregation; float values small integers, so any order of addition is exact), counted
/// partials, and filtered tables.
#[test]
fn a_scan_in_morsels_equals_the_scan_taken_whole() {
    use super::super::expr::{col, lit};
    use arrow::array::{Decimal128Array, Float64Array, StringArray};
    let dir = std::env::temp_dir().join(format!("tessera-morsels-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let batch = |from: i64, rows: i64| {
        let range = from..from + rows;
        let s: StringArray = range
            .clone()
            .map(|i| (i % 101 != 0).then(|| format!("s{}", i / 1000 % 7)))
            .collect();
        let k = Int64Array::from(range.clone().map(|i| i * 7 % 13).collect::<Vec<_>>());
        let a = Int64Array::from(range.clone().collect::<Vec<_>>());
        let d = Decimal128Array::from(
            range
                .clone()
                .map(|i| i as i128 * 37 % 100_000)
                .collect::<Vec<_>>(),
        )
        .with_precision_and_scale(15, 2)
        .unwrap();
        let f = Float64Array::from(range.map(|i| (i % 17) as f64).collect::<Vec<_>>());
        RecordBatch::try_from_iter([
            ("s", Arc::new(s) as ArrayRef),
            ("k", Arc::new(k) as ArrayRef),
            ("a", Arc::new(a) as ArrayRef),
            ("d", Arc::new(d) as ArrayRef),
            ("f", Arc::new(f) as ArrayRef),
        ])
        .unwrap()
    };
    let batches = [batch(0, 20_000), batch(20_000, 25_000), batch(45_000, 3)];
    parquet::write(&path, &batches[0].schema(), &batches).unwrap();
    assert!(CpuFrames.morsel_rows().is_some_and(|m| m < 45_003));
    let scan = ParquetScan {
        path,
        row_groups: vec![0, 1, 2],
        columns: Some(["f", "d", "a", "k", "s"].map(String::from).to_vec()),
    };
    let agg = |column: &str, func: AggFunc| AggSpec {
        column: column.into(),
        func,
        output: format!("{column}_{}", func.name()),
    };
    let spec = GroupBySpec {
        keys: vec!["s".into(), "k".into()],
        aggs: vec![
            agg("b", AggFunc::Sum),
            agg("f", AggFunc::Mean),
            agg("d", AggFunc::Min),
            agg("a", AggFunc::First),
            agg("a", AggFunc::Last),
            agg("k", AggFunc::Size),
            agg("f", AggFunc::NUnique),
        ],
    };
    let steps = vec![
        MapStep::Filter((col("a") % lit(3)).ne(0)),
        MapStep::WithColumn {
            name: "b".into(),
            expr: col("d") * (lit(1) - col("d")),
        },
    ];
    for sink in [
        Sink::GroupPartial(spec.clone()),
        Sink::CountedPartial {
            spec: spec.clone(),
            parts: 3,
        },
        Sink::Table,
    ] {
        let op = FrameOp::Pipeline(Pipeline {
            source: Source::Parquet(scan.clone()),
            steps: steps.clone(),
            sink: sink.clone(),
        });
        let morsels = run(&op, &[]).unwrap();
        assert_eq!(morsels, run_with(&op, &[], &Whole).unwrap(), "{sink:?}");
        if let (Sink::Table, ChunkData::Table(t)) = (&sink, &morsels) {
            assert_eq!(t.num_rows(), 30_002, "{sink:?}");
        }
    }
    // A variance's state (count, mean, squared deviations) is combined per morsel: equal
    // to the whole scan's within rounding.
    let var = GroupBySpec {
        keys: vec!["s".into()],
        aggs: vec![agg("f", AggFunc::Var)],
    };
    let op = FrameOp::Pipeline(Pipeline {
        source: Source::Parquet(scan),
        steps,
        sink: Sink::GroupPartial(var),
    });
    let floats = |c: &ChunkData| match c {
        ChunkData::Table(t) => (2..=3)
            .flat_map(|i| {
                let c = t
                    .column(i)
                    .as_any()
                    .downcast_ref::<arrow::array::Float64Array>();
                c.expect("Float64").values().to_vec()
            })
            .collect::<Vec<f64>>(),
        other => panic!("{}", other.kind_name()),
    };
    let (m, w) = (run(&op, &[]).unwrap(), run_with(&op, &[], &Whole).unwrap());
    for (a, b) in floats(&m).iter().zip(floats(&w)) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} against {b}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A groupby of an input chunk through steps, in morsels, equals it taken whole.
#[test]
fn an_input_grouped_in_morsels_equals_it_taken_whole() {
    use super::super::expr::{col, lit};
    let rows = 3 * CPU_MORSEL_ROWS as i64 + 5;
    let input = [chunk(0, rows, 1009)];
    let steps = vec![
        MapStep::Filter((col("a") % lit(4)).ne(1)),
        MapStep::WithColumn {
            name: "a".into(),
            expr: col("a") * lit(3),
        },
    ];
    for sink in [
        Sink::GroupPartial(sum_of_a_by_k()),
        Sink::CountedPartial {
            spec: sum_of_a_by_k(),
            parts: 4,
        },
    ] {
        let op = FrameOp::Pipeline(Pipeline {
            source: Source::Input,
            steps: steps.clone(),
            sink,
        });
        let got = run(&op, &input).unwrap();
        assert_eq!(got, run_with(&op, &input, &Whole).unwrap());
        if let ChunkData::Table(t) = got {
            // Every key, and the sums by hand.
            assert_eq!(t.num_rows(), 1009);
            let by_hand: i64 = (0..rows).filter(|a| a % 4 != 1).map(|a| 3 * a).sum();
            assert_eq!(ints(&t, 1).iter().sum::<i64>(), by_hand);
        }
    }
}

#[test]
fn a_counted_partial_is_cut_into_hash_parts_that_agree_across_chunks() {
    let spec = sum_of_a_by_k();
    let parts = 5;
    let op = FrameOp::Pipeline(Pipeline {
        source: Source::Input,
        steps: vec![],
        sink: Sink::CountedPartial {
            spec: spec.clone(),
            parts,
        },
    });
    // Sums by hand over both chunks, and the part each key went to.
    let mut want: BTreeMap<i64, i64> = BTreeMap::new();
    let mut part_of: BTreeMap<i64, usize> = BTreeMap::new();
    for (start, rows) in [(0, 3_000), (3_000, 1_234)] {
        let input = chunk(start, rows, 997);
        let ChunkData::Tables(out) = run(&op, &[input]).expect("runs") else {
            panic!("not parts")
        };
        assert_eq!(out.len(), parts + 1);
        let distinct: std::collections::BTreeSet<i64> =
            (start..start + rows).map(|i| (7 * i) % 997).collect();
        assert_eq!(ints(&out[parts], 0), [distinct.len() as i64]);
        let mut seen = 0;
        for (p, part) in out[..parts].iter().enumerate() {
            for (k, s) in ints(part, 0).into_iter().zip(ints(part, 1)) {
                *want.entry(k).or_default() += s;
                // A key lands in the same part from every chunk.
                assert_eq!(*part_of.entry(k).or_insert(p), p, "key {k}");
                seen += 1;
            }
        }
        assert_eq!(seen, distinct.len());
    }
    let mut by_hand: BTreeMap<i64, i64> = BTreeMap::new();
    for i in 0..4_234 {
        *by_hand.entry((7 * i) % 997).or_default() += i;
    }
    assert_eq!(want, by_hand);
    // The keys spread over every part.
    let used: std::collections::BTreeSet<usize> = part_of.values().copied().collect();
    assert_eq!(used.len(), parts);
}

#[test]
fn a_join_probes_a_hashed_side_chunk_as_it_joins_its_tables() {
    // Right: keys (7·i) mod 40 over 0..100, each key 2 or 3 times, from two chunks.
    let right = [chunk(0, 60, 40), chunk(60, 40, 40)];
    let hash = FrameOp::HashSide {
        on: vec!["k".into()],
    };
    let hashed = Arc::new(run(&hash, &right).expect("hashes"));
    assert!(matches!(hashed.as_ref(), ChunkData::Hashed(_)));
    assert_eq!(hash.name(), "hash_side");
    let left = chunk(0, 30, 50);
    for how in [JoinHow::Inner, JoinHow::Left] {
        let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
        let op = FrameOp::join(spec.clone(), 1);
        let plain = run(&op, &[left.clone(), right[0].clone(), right[1].clone()]).unwrap();
        let probed = run(&op, &[left.clone(), hashed.clone()]).unwrap();
        assert_eq!(probed, plain, "{how:?}");
        // By hand: a left key below 40 has as many rows as 0..100 has i with 7·i ≡ k.
        let ChunkData::Table(t) = &probed else {
            panic!("not a table")
        };
        let matches = |k: i64| (0..100).filter(|i| (7 * i) % 40 == k).count();
        let want: usize = (0..30)
            .map(|i| (7 * i) % 50)
            .map(|k| match (matches(k), how) {
                (0, JoinHow::Left) => 1,
                (m, _) => m,
            })
            .sum();
        assert_eq!(t.num_rows(), want, "{how:?}");
    }
    // A semi, anti or mark join probes the right's distinct keys, hashed once. Every
    // key 0..40 is on the right (7 and 40 are coprime).
    let distinct = FrameOp::DistinctKeys {
        keys: vec!["k".into()],
    };
    let distinct = Arc::new(run(&distinct, &right).expect("hashes"));
    assert!(matches!(distinct.as_ref(), ChunkData::Hashed(_)));
    let found = (0..30).filter(|i| (7 * i) % 50 < 40).count();
    for (how, want) in [
        (JoinHow::LeftSemi, found),
        (JoinHow::LeftAnti, 30 - found),
        (JoinHow::LeftMark, 30),
    ] {
        let mut spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
        if how == JoinHow::LeftMark {
            spec.indicator = Some("found".into());
        }
        let op = FrameOp::join(spec, 1);
        let plain = run(&op, &[left.clone(), right[0].clone(), right[1].clone()]).unwrap();
        let probed = run(&op, &[left.clone(), distinct.clone()]).unwrap();
        assert_eq!(probed, plain, "{how:?}");
        let ChunkData::Table(t) = &probed else {
            panic!("not a table")
        };
        assert_eq!(t.num_rows(), want, "{how:?}");
    }
    // The hashed side on the left of an inner join.
    let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], JoinHow::Inner);
    let op = FrameOp::join(spec, 1);
    let probed = run(&op, &[hashed.clone(), left.clone()]).unwrap();
    let ChunkData::Table(whole) = run(&FrameOp::Concat { limit: None }, &right).unwrap() else {
        panic!("not a table")
    };
    let plain = run(&op, &[Arc::new(ChunkData::Table(whole)), left]).unwrap();
    assert_eq!(probed, plain);
}

#[test]
fn frame_ops_survive_serialization() {
    let op = FrameOp::DistinctKeys {
        keys: vec!["k".to_string()],
    };
    let op_back: FrameOp = serde_json::from_str(&serde_json::to_string(&op).unwrap()).unwrap();
    assert_eq!(op_back, op);
}

/// A Parquet file of `mode` (three strings and nulls, dictionary encoded) and `i`, in two
/// row groups of 40,000 rows (each more than a morsel).
fn modes_file(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("tessera-ops-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("t.parquet").display().to_string();
    let batches: Vec<RecordBatch> = [0i64, 40_000]
        .iter()
        .map(|&start| {
            let modes = ["AIR", "MAIL", "SHIP"];
            let i: Vec<i64> = (start..start + 40_000).collect();
            let mode: Vec<Option<&str>> = i
                .iter()
                .map(|&i| (i % 11 != 0).then(|| modes[i as usize % 3]))
                .collect();
            RecordBatch::try_from_iter([
                (
                    "mode",
                    Arc::new(arrow::array::StringArray::from(mode)) as ArrayRef,
                ),
                ("i", Arc::new(Int64Array::from(i)) as ArrayRef),
            ])
            .expect("batch")
        })
        .collect();
    parquet::write(&path, batches[0].schema_ref(), &batches).expect("write");
    path
}

/// Filters on a string column read as a dictionary give the rows and types of filters on
/// the strings: the column dropped after the filter, kept (made strings again), and
/// grouped by, in morsels and whole, into a table, a partition and a groupby partial; a
/// groupby key no filter reads goes into the partial as a dictionary, made strings after.
#[test]
fn filters_on_dictionary_columns_give_what_filters_on_strings_give() {
    use crate::frame::expr::{col, lit, Literal};
    let path = modes_file("dict-filter");
    let scan = ParquetScan {
        path: path.clone(),
        row_groups: vec![0, 1],
        columns: Some(vec!["mode".into(), "i".into()]),
    };
    let air_or_ship = col("mode")
        .isin(&[Literal::from("AIR"), Literal::from("SHIP")])
        .fill_null(false);
    let odd = (col("i") % lit(2i64)).eq(lit(1i64));
    let dropped = vec![
        MapStep::Filter(air_or_ship.clone().and_(odd.clone())),
        MapStep::Select(vec![col("i")]),
    ];
    // The planner's narrowing select in front passes the column on.
    let kept = vec![
        MapStep::Select(vec![col("i"), col("mode")]),
        MapStep::Filter(air_or_ship.clone()),
        MapStep::Filter(odd.clone()),
    ];
    // No filter reads `mode`: only a groupby's key passes it on as a dictionary.
    let passed = vec![MapStep::Filter(odd)];
    let spec = GroupBySpec {
        keys: vec!["mode".into()],
        aggs: vec![AggSpec {
            column: "i".into(),
            func: AggFunc::Count,
            output: "n".into(),
        }],
    };
    let sinks = [
        Sink::Table,
        Sink::Partition {
            keys: vec!["i".into()],
            parts: 3,
        },
        Sink::GroupPartial(spec),
    ];
    let plain = parquet::read(&scan).expect("read");
    let mode = "mode".to_string();
    assert!(!filter_only(&scan, &passed).contains(&mode));
    assert!(dictionary_columns(&scan, &passed, std::slice::from_ref(&mode)).contains(&mode));
    for steps in [dropped, kept, passed] {
        let want = crate::frame::map::apply_steps(&plain, &steps).expect("steps");
        for sink in &sinks {
            if matches!(sink, Sink::GroupPartial(_)) && want.schema().index_of("mode").is_err() {
                continue; // the groupby reads `mode`, which the select dropped
            }
            let op = FrameOp::Pipeline(Pipeline {
                source: Source::Parquet(scan.clone()),
                steps: steps.clone(),
                sink: sink.clone(),
            });
            let out = run(&op, &[]).expect("run");
            let tables = match out {
                ChunkData::Table(t) => vec![t],
                ChunkData::Tables(ts) => ts,
                _ => panic!("a table"),
            };
            let got = concat(tables[0].schema_ref(), &tables).expect("concat");
            match sink {
                Sink::GroupPartial(spec) => {
                    let want = groupby::partial(spec, &want).expect("partial");
                    assert_eq!(got.schema(), want.schema());
                    let counts = |b: &RecordBatch| {
                        let modes =
                            arrow::compute::cast(b.column(0), &DataType::Utf8).expect("cast");
                        let modes = modes
                            .as_any()
                            .downcast_ref::<arrow::array::StringArray>()
                            .expect("strings");
                        let n = ints(b, 1);
                        (0..b.num_rows())
                            .map(|r| (modes.is_valid(r).then(|| modes.value(r).to_string()), n[r]))
                            .collect::<BTreeMap<_, _>>()
                    };
                    assert_eq!(counts(&got), counts(&want));
                }
                _ => {
                    assert_eq!(got.schema(), want.schema(), "{sink:?}");
                    let i = |b: &RecordBatch| ints(b, b.schema().index_of("i").expect("i"));
                    let mut rows = i(&got);
                    rows.sort_unstable();
                    assert_eq!(rows, i(&want), "{sink:?}");
                }
            }
        }
    }
    std::fs::remove_dir_all(std::path::Path::new(&path).parent().expect("dir")).expect("rm");
}
