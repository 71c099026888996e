use super::*;
use crate::dataframe::plan::optimize;
use crate::dataframe::prune::postorder;
use crate::dataframe::testing::{ints, left, left_chunked, session};
use crate::dataframe::{col, lit, read_parquet_with, Agg, DataFrame, How, ReadParquet};
use arrow::array::RecordBatch;
use arrow::compute::{concat_batches, lexsort_to_indices, take_record_batch, SortColumn};
use std::path::PathBuf;

/// [`left_chunked`]`(rows)` written to a Parquet file of one row group per chunk, read
/// back in chunks of `chunk_bytes`.
fn scan(name: &str, rows: usize, chunk_bytes: u64) -> (DataFrame, PathBuf) {
    let path = std::env::temp_dir().join(format!(
        "tessera-unshare-{}-{name}-{rows}.parquet",
        std::process::id()
    ));
    left_chunked(rows)
        .to_parquet(&session(), &path, false)
        .expect("written");
    let options = ReadParquet {
        chunk_bytes: Some(chunk_bytes),
        ..ReadParquet::default()
    };
    (read_parquet_with(&path, options), path)
}

/// The Parquet sources under `node`, each with how many nodes read it.
fn sources(node: &Arc<FrameNode>) -> Vec<usize> {
    let readers = consumers(node);
    postorder(node)
        .iter()
        .filter(|n| matches!(n.kind, FrameKind::Parquet(_)))
        .map(|n| readers.get(&n.id).copied().unwrap_or(0))
        .collect()
}

/// `frame` computed, its rows sorted by `by`.
fn sorted(frame: &DataFrame, by: &[&str]) -> RecordBatch {
    let out = frame.execute(&session()).expect("runs");
    let out = concat_batches(&out.schema(), [&out]).expect("one batch");
    let columns: Vec<SortColumn> = by
        .iter()
        .map(|c| SortColumn {
            values: out.column_by_name(c).expect("column").clone(),
            options: None,
        })
        .collect();
    let order = lexsort_to_indices(&columns, None).expect("sorts");
    take_record_batch(&out, &order).expect("takes")
}

/// Each key's sum of `a`, beside its rows with `b > 110` (a range: a third by the estimate).
fn totals_beside_late(input: &DataFrame) -> DataFrame {
    let totals = input.groupby(&["k"]).agg_as(&[("total", "a", Agg::Sum)]);
    let late = input.filter(col("b").gt(lit(110i64))).select(&["k", "b"]);
    late.merge(&totals, &["k"], How::Inner)
}

#[test]
fn a_shared_scan_is_read_by_each_reader_with_the_same_answer() {
    for (rows, chunk_bytes) in [(1, 1), (7, 1), (7, 1 << 20), (40, 1 << 20)] {
        let (input, path) = scan("again", rows, chunk_bytes);
        let frame = totals_beside_late(&input);
        let plan = optimize(frame.node().expect("builds")).expect("optimizes");
        // Two sources, one reader each (the file was one node read by two).
        assert_eq!(sources(&plan), vec![1, 1], "{}", frame.explain().unwrap());
        let got = sorted(&frame, &["k", "b"]);
        // Key k's rows are a = k, k+10, k+20, k+30 (b = 100 + a); b > 110 keeps a > 10.
        let (mut k, mut b, mut total) = (Vec::new(), Vec::new(), Vec::new());
        for key in 0..10 {
            for a in [key + 10, key + 20, key + 30]
                .into_iter()
                .filter(|&a| a > 10)
            {
                k.push(key);
                b.push(100 + a);
                total.push(4 * key + 60);
            }
        }
        assert_eq!(ints(&got, "k"), k);
        assert_eq!(ints(&got, "b"), b);
        assert_eq!(ints(&got, "total"), total);
        // The same program on the frame in memory, whose chunks stay shared.
        assert_eq!(got, sorted(&totals_beside_late(&left()), &["k", "b"]));
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn a_scan_that_keeps_little_stays_shared() {
    let (input, path) = scan("shared", 7, 1);
    // An equality keeps a tenth by the estimate: its rows are kept once for both readers
    // (the groupby and the join; a row-wise reader would fuse the filter into its own
    // steps over the file).
    let two = input.filter(col("k").eq(lit(2i64)));
    let totals = two.groupby(&["k"]).agg_as(&[("total", "a", Agg::Sum)]);
    let frame = two.merge(&totals, &["k"], How::Inner);
    let plan = optimize(frame.node().expect("builds")).expect("optimizes");
    assert_eq!(sources(&plan), vec![1], "{}", frame.explain().unwrap());
    let readers = consumers(&plan);
    assert!(
        postorder(&plan)
            .iter()
            .any(|n| readers.get(&n.id) == Some(&2)),
        "{}",
        frame.explain().unwrap()
    );
    let got = sorted(&frame, &["b"]);
    assert_eq!(ints(&got, "b"), vec![102, 112, 122, 132]);
    assert_eq!(ints(&got, "total"), vec![68; 4]);
    let _ = std::fs::remove_file(path);
}
