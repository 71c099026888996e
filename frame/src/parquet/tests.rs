//! Tests of Parquet metadata, reads and dictionaries.

use super::*;
use arrow::array::{Array, AsArray, Int64Array, LargeStringArray};
use arrow::datatypes::{Field, Int64Type};

/// Large strings come back as 32-bit offset strings, projected in the order asked for,
/// from the row groups asked for (one per written batch).
#[test]
fn large_strings_read_narrowed_by_row_group_and_projection() {
    let dir = std::env::temp_dir().join(format!("tessera-pq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::LargeUtf8, true),
        Field::new("i", DataType::Int64, false),
    ]));
    let batch = |s: Vec<Option<&str>>, i: Vec<i64>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(LargeStringArray::from(s)) as ArrayRef,
                Arc::new(Int64Array::from(i)),
            ],
        )
        .unwrap()
    };
    let batches = [
        batch(vec![Some("a"), None], vec![1, 2]),
        batch(vec![Some("ccc")], vec![3]),
    ];
    write(&path, &schema, &batches).unwrap();

    let info = inspect(&path).unwrap();
    assert_eq!(info.row_groups.len(), 2);
    assert_eq!(info.schema.field(0).data_type(), &DataType::Utf8);
    let out = read(&ParquetScan {
        path: path.clone(),
        row_groups: vec![1],
        columns: Some(vec!["i".into(), "s".into()]),
    })
    .unwrap();
    assert_eq!(out.num_rows(), 1);
    assert_eq!(out.column(0).as_primitive::<Int64Type>().value(0), 3);
    assert_eq!(out.column(1).as_string::<i32>().value(0), "ccc");
    let all = read(&ParquetScan {
        path,
        row_groups: vec![0, 1],
        columns: None,
    })
    .unwrap();
    let s = all.column(0).as_string::<i32>();
    assert_eq!((s.value(0), s.is_null(1), s.value(2)), ("a", true, "ccc"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A wholly dictionary-encoded column chunk gives its distinct values per row group;
/// one written without a dictionary, an unknown column or row group gives none.
#[test]
fn distinct_values_are_the_dictionary_s_size() {
    let dir = std::env::temp_dir().join(format!("tessera-pq-ndv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("kind", DataType::Utf8, false),
        Field::new("u", DataType::Int64, false),
    ]));
    let batch = |rows: std::ops::Range<i64>, kinds: i64| {
        let kind: Vec<String> = rows.clone().map(|i| format!("k{}", i % kinds)).collect();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(arrow::array::StringArray::from(kind)) as ArrayRef,
                Arc::new(Int64Array::from_iter_values(rows)),
            ],
        )
        .unwrap()
    };
    let file = File::create(&path).unwrap();
    let props = WriterProperties::builder()
        .set_column_dictionary_enabled("u".into(), false)
        .build();
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
    for b in [batch(0..1000, 7), batch(1000..1500, 3)] {
        writer.write(&b).unwrap();
        writer.flush().unwrap();
    }
    writer.close().unwrap();

    assert_eq!(distinct_values(&path, 0, "kind").unwrap(), Some(7));
    assert_eq!(distinct_values(&path, 1, "kind").unwrap(), Some(3));
    assert_eq!(distinct_values(&path, 0, "u").unwrap(), None);
    assert_eq!(distinct_values(&path, 0, "nope").unwrap(), None);
    assert_eq!(distinct_values(&path, 2, "kind").unwrap(), None);
    assert!(matches!(
        distinct_values(&dir.join("missing").display().to_string(), 0, "kind"),
        Err(FrameError::Io { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Batches of any size across row groups hold the rows of [`read`], in the column order
/// asked for (a column asked for twice comes twice).
#[test]
fn batches_concatenate_to_the_whole_read() {
    let dir = std::env::temp_dir().join(format!("tessera-pq-batches-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Int64, false),
    ]));
    let batch = |from: i64, n: i64| {
        let a = Int64Array::from((from..from + n).collect::<Vec<_>>());
        let b = Int64Array::from((from..from + n).map(|v| v * 10).collect::<Vec<_>>());
        RecordBatch::try_new(schema.clone(), vec![Arc::new(a) as ArrayRef, Arc::new(b)]).unwrap()
    };
    write(&path, &schema, &[batch(0, 5), batch(5, 4), batch(9, 6)]).unwrap();
    let scan = ParquetScan {
        path: path.clone(),
        row_groups: vec![0, 2],
        columns: Some(vec!["b".into(), "a".into(), "b".into()]),
    };
    let whole = read(&scan).unwrap();
    assert_eq!(whole.num_rows(), 11);
    assert_eq!(scan_rows(&scan).unwrap(), 11);
    for rows in [1, 3, 4, 100] {
        let parts = read_batches(&scan, rows)
            .unwrap()
            .collect::<FrameResult<Vec<_>>>()
            .unwrap();
        assert!(parts.iter().all(|p| p.num_rows() <= rows));
        let joined = crate::table::concat(&whole.schema(), &parts).unwrap();
        assert_eq!(joined, whole, "batches of {rows}");
    }
    let first = whole
        .column(1)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec();
    assert_eq!(first, [0, 1, 2, 3, 4, 9, 10, 11, 12, 13, 14]);
    let names: Vec<_> = whole
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["b", "a", "b"]);
    // A row group the file does not have: a clear error from every reader.
    let missing = ParquetScan {
        row_groups: vec![0, 3],
        ..scan
    };
    let invalid =
        |r: FrameError| matches!(r, FrameError::InvalidArgument(m) if m.contains("no row group 3"));
    assert!(invalid(scan_rows(&missing).unwrap_err()));
    assert!(invalid(read(&missing).unwrap_err()));
    assert!(read_batches(&missing, 4).err().is_some_and(invalid));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file written again at the same path is read anew: its footer is not the one kept
/// from the first read.
#[test]
fn a_rewritten_file_is_read_with_its_new_footer() {
    let dir = std::env::temp_dir().join(format!("tessera-pq-again-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, false)]));
    let batch = |i: Vec<i64>| {
        RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(i)) as ArrayRef],
        )
        .unwrap()
    };
    let scan = |row_groups: Vec<usize>| ParquetScan {
        path: path.clone(),
        row_groups,
        columns: None,
    };
    write(&path, &schema, &[batch(vec![1, 2])]).unwrap();
    assert_eq!(read(&scan(vec![0])).unwrap().num_rows(), 2);
    assert!(read(&scan(vec![1])).is_err());
    write(&path, &schema, &[batch(vec![3]), batch(vec![4, 5, 6])]).unwrap();
    let out = read(&scan(vec![1])).unwrap();
    let values = out.column(0).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(values, [4, 5, 6]);
    assert_eq!(inspect(&path).unwrap().row_groups.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A decimal column's statistics are unscaled values (integers, or bytes past 18
/// digits): row groups are pruned by their decimal values, not by those integers.
#[test]
fn decimal_row_groups_prune_by_value() {
    use crate::expr::{col, lit};
    use arrow::array::{Decimal128Array, Float64Array};
    let dir = std::env::temp_dir().join(format!("tessera-pq-dec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let schema = Arc::new(Schema::new(vec![
        Field::new("q", DataType::Decimal128(15, 2), false),
        Field::new("w", DataType::Decimal128(25, 2), false),
        Field::new("f", DataType::Float64, false),
    ]));
    let batch = |v: Vec<i128>, f: Vec<f64>| {
        let d = |p| {
            Arc::new(
                Decimal128Array::from(v.clone())
                    .with_precision_and_scale(p, 2)
                    .unwrap(),
            ) as ArrayRef
        };
        RecordBatch::try_new(
            schema.clone(),
            vec![d(15), d(25), Arc::new(Float64Array::from(f))],
        )
        .unwrap()
    };
    let batches = [
        batch(vec![-500, 2399], vec![1.0, 2.0]),
        batch(vec![2400, 5000], vec![3.0, 4.0]),
    ];
    write(&path, &schema, &batches).unwrap();
    let info = inspect(&path).unwrap();
    for c in ["q", "w"] {
        // 50.00 is in the second group (whose unscaled bounds are 2400 and 5000).
        assert_eq!(info.prune(&col(c).eq(50)), [1], "{c}");
        assert_eq!(info.prune(&col(c).lt(24)), [0], "{c}");
        assert_eq!(info.prune(&col(c).ge(24)), [1], "{c}");
        assert_eq!(info.prune(&col(c).gt(23.99)), [1], "{c}");
        assert_eq!(info.prune(&col(c).le(-5)), [0], "{c}");
        assert!(info.prune(&col(c).lt(-6)).is_empty(), "{c}");
        assert!(info.prune(&col(c).eq(23.995)).is_empty(), "{c}");
    }
    // A decimal constant meets a float column as a float: kept.
    let half = lit(Literal::decimal(25, 2, 1).unwrap());
    assert_eq!(info.prune(&col("f").gt(half)), [0, 1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of a few-valued string column `mode` (with nulls), a many-valued one `note`
/// (past the writer's dictionary limit in the second row group) and `i`, in two row
/// groups of `rows` rows each.
fn modes_file(name: &str, rows: usize) -> String {
    let dir = std::env::temp_dir().join(format!("tessera-pq-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.parquet").display().to_string();
    let batch = |g: usize| {
        let modes = ["AIR", "MAIL", "SHIP"];
        let mode: Vec<Option<&str>> = (0..rows)
            .map(|r| (r % 11 != 0).then(|| modes[r % 3]))
            .collect();
        let note: Vec<String> = (0..rows)
            .map(|r| match g {
                0 => format!("note {}", r % 5),
                _ => format!("a note long enough to fill a dictionary page, number {r:08}"),
            })
            .collect();
        let i: Vec<i64> = (0..rows as i64).collect();
        RecordBatch::try_from_iter([
            (
                "mode",
                Arc::new(arrow::array::StringArray::from(mode)) as ArrayRef,
            ),
            (
                "note",
                Arc::new(arrow::array::StringArray::from(note)) as ArrayRef,
            ),
            ("i", Arc::new(Int64Array::from(i)) as ArrayRef),
        ])
        .unwrap()
    };
    let batches = [batch(0), batch(1)];
    write(&path, batches[0].schema_ref(), &batches).unwrap();
    path
}

/// Columns asked for as dictionaries come so where every data page of theirs is
/// dictionary encoded, with the same strings; not where a row group fell back to plain
/// pages, nor where a column is not a string.
#[test]
fn dictionary_encoded_strings_are_read_as_dictionaries() {
    let path = modes_file("dict", 40_000);
    let scan = |groups: Vec<usize>| ParquetScan {
        path: path.clone(),
        row_groups: groups,
        columns: Some(vec!["i".into(), "mode".into(), "note".into()]),
    };
    let asked = ["mode".to_string(), "note".to_string(), "i".to_string()];
    let (batch, decoded) = read_with(&scan(vec![0, 1]), &asked).unwrap();
    assert_eq!(decoded, vec![("mode".to_string(), DataType::Utf8)]);
    let mode = batch.column(1);
    assert!(matches!(mode.data_type(), DataType::Dictionary(..)));
    assert!(matches!(batch.column(2).data_type(), DataType::Utf8));
    let plain = read(&scan(vec![0, 1])).unwrap();
    let as_strings = arrow::compute::cast(mode, &DataType::Utf8).unwrap();
    assert_eq!(as_strings.as_ref(), plain.column(1).as_ref());
    assert_eq!(plain.column(1).null_count(), 2 * 40_000usize.div_ceil(11));
    // The first row group alone: both string columns are dictionaries there.
    let (batches, decoded) = read_batches_with(&scan(vec![0]), 10_000, &asked).unwrap();
    let names: Vec<&str> = decoded.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["mode", "note"]);
    let batches = batches.collect::<FrameResult<Vec<_>>>().unwrap();
    assert_eq!(batches.len(), 4);
    assert!(batches
        .iter()
        .all(|b| matches!(b.column(2).data_type(), DataType::Dictionary(..))));
    // A batch of a read with dictionaries ends with its row group (one across two would
    // meet two dictionaries); other reads' batches run across.
    let sizes = |asked: &[String]| {
        let (batches, _) = read_batches_with(&scan(vec![0, 1]), 30_000, asked).unwrap();
        let batches = batches.collect::<FrameResult<Vec<_>>>().unwrap();
        batches
            .iter()
            .map(RecordBatch::num_rows)
            .collect::<Vec<_>>()
    };
    assert_eq!(sizes(&asked), [30_000, 10_000, 30_000, 10_000]);
    assert_eq!(sizes(&[]), [30_000, 30_000, 20_000]);
    std::fs::remove_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
}
