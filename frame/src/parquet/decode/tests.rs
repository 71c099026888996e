//! Tests of Tessera's numeric column decoding: against Arrow's own reader on files of every
//! codec, page version and encoding a writer picks, and on hand-made dictionary indices.

use super::*;
use crate::error::FrameResult;
use crate::parquet::{read_batches, read_batches_with, ParquetScan};
use arrow::array::{
    Array, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use arrow::datatypes::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterVersion};

/// The number of rows of [`table`].
const ROWS: i64 = 2500;

/// Columns of every type Tessera decodes, with few and with many distinct values, and two
/// it leaves to Arrow: a decimal too wide for INT64 and a nullable integer; and strings.
fn table() -> RecordBatch {
    let v = 0..ROWS;
    let decimal = |values: Vec<i128>, p: u8, s: i8| {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(p, s)
                .unwrap(),
        ) as ArrayRef
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i32",
            Arc::new(Int32Array::from_iter_values(
                v.clone().map(|v| (v * 7919 % 10007) as i32 - 5000),
            )),
        ),
        (
            "i64",
            Arc::new(Int64Array::from_iter_values(
                v.clone().map(|v| v % 17 * 1_000_000_007 - 3),
            )),
        ),
        (
            "date",
            Arc::new(Date32Array::from_iter_values(
                v.clone().map(|v| 8000 + (v * 31 % 2526) as i32),
            )),
        ),
        (
            "dec7",
            decimal(
                v.clone()
                    .map(|v| i128::from(v * 37 % 100_000 - 50_000))
                    .collect(),
                7,
                2,
            ),
        ),
        (
            "dec15",
            decimal(
                v.clone()
                    .map(|v| i128::from(v * v * 13 % 1_000_000_000_000))
                    .collect(),
                15,
                2,
            ),
        ),
        (
            "dec30",
            decimal(
                v.clone()
                    .map(|v| i128::from(v) * 10i128.pow(20) - 7)
                    .collect(),
                30,
                3,
            ),
        ),
        (
            "f32",
            Arc::new(Float32Array::from_iter_values(
                v.clone().map(|v| (v % 100) as f32 / 4.0 - 3.0),
            )),
        ),
        (
            "f64",
            Arc::new(Float64Array::from_iter_values(
                v.clone().map(|v| v as f64 * 0.37),
            )),
        ),
        (
            "nullable",
            Arc::new(Int64Array::from_iter(
                v.clone().map(|v| (v % 9 != 0).then_some(v)),
            )),
        ),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                v.clone().map(|v| format!("s{}", v % 7)),
            )),
        ),
    ];
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, c)| Field::new(*name, c.data_type().clone(), c.null_count() > 0))
        .collect();
    let columns = columns.into_iter().map(|(_, c)| c).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// A file in the temporary directory, named for this process (each test removes its own).
fn path(name: &str) -> String {
    let file = format!("tessera-pq-decode-{}-{name}", std::process::id());
    std::env::temp_dir().join(file).display().to_string()
}

/// How a case writes [`table`]: row groups of 700 rows and small pages throughout.
struct Written {
    compression: Compression,
    version: WriterVersion,
    dictionary: bool,
    /// A dictionary page limit small enough that the many-valued columns' chunks fall back
    /// to plain pages part way through.
    small_dictionaries: bool,
}

fn write(path: &str, batch: &RecordBatch, how: &Written) {
    let mut props = WriterProperties::builder()
        .set_compression(how.compression)
        .set_writer_version(how.version)
        .set_dictionary_enabled(how.dictionary)
        .set_max_row_group_row_count(Some(700))
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(50);
    if how.small_dictionaries {
        props = props.set_dictionary_page_size_limit(256);
    }
    let file = File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props.build())).unwrap();
    writer.write(batch).unwrap();
    writer.close().unwrap();
}

fn cases() -> Vec<Written> {
    let mut cases = Vec::new();
    for compression in [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::ZSTD(ZstdLevel::default()),
    ] {
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for (dictionary, small_dictionaries) in [(true, false), (true, true), (false, false)] {
                cases.push(Written {
                    compression,
                    version,
                    dictionary,
                    small_dictionaries,
                });
            }
        }
    }
    cases
}

/// The columns Tessera decodes in a file written as `how`: every required numeric column
/// but the FIXED_LEN_BYTE_ARRAY decimal, except the integers a version 2 writer stores
/// without a dictionary, or falls back from one for (all but `i64`, of 17 values, under
/// the small limit): those it stores DELTA_BINARY_PACKED, which Arrow reads.
fn decoded_by_tessera(how: &Written) -> Vec<&'static str> {
    let v2 = how.version == WriterVersion::PARQUET_2_0;
    let delta = |c: &str| match c {
        "f32" | "f64" => false,
        "i64" => v2 && !how.dictionary,
        _ => v2 && (!how.dictionary || how.small_dictionaries),
    };
    ["i32", "i64", "date", "dec7", "dec15", "f32", "f64"]
        .into_iter()
        .filter(|c| !delta(c))
        .collect()
}

/// Every case: the columns [`reader`] takes are those expected, each reads what Arrow's own
/// reader reads, in pieces of every size, from every row group and from a middle pair; and
/// a scan mixing Tessera's and Arrow's columns, in batches across row groups, gives the
/// table back.
#[test]
fn numeric_columns_read_as_arrow_reads_them_in_every_case() {
    let batch = table();
    for (k, how) in cases().iter().enumerate() {
        let path = path(&format!("t{k}.parquet"));
        write(&path, &batch, how);
        let case = format!(
            "{} {:?} dictionary {} small {}",
            how.compression, how.version, how.dictionary, how.small_dictionaries
        );
        let reference = {
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                .unwrap()
                .build()
                .unwrap();
            let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
            arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
        };
        assert_eq!(reference, batch, "{case}: Arrow's reader");
        let file = Arc::new(File::open(&path).unwrap());
        let metadata = ArrowReaderMetadata::load(file.as_ref(), ArrowReaderOptions::new()).unwrap();
        let schema = metadata.schema().clone();
        let expected = decoded_by_tessera(how);
        for (column, field) in schema.fields().iter().enumerate() {
            let groups = [[0, 1, 2, 3].as_slice(), &[1, 2]];
            for (groups, rows) in groups.into_iter().zip([0..2500, 700..2100]) {
                let reader = reader(&file, metadata.metadata(), column, field, groups);
                assert_eq!(
                    reader.is_some(),
                    expected.contains(&field.name().as_str()),
                    "{case}: {}",
                    field.name()
                );
                let Some(mut reader) = reader else { continue };
                let mut at = rows.start;
                for piece in [1, 7, 100, 250, 613].into_iter().cycle() {
                    let n = piece.min(rows.end - at);
                    let got = reader.read(n as usize).unwrap();
                    let want = reference.column(column).slice(at as usize, n as usize);
                    assert_eq!(
                        got.to_data(),
                        want.to_data(),
                        "{case}: {} at {at}",
                        field.name()
                    );
                    at += n;
                    if at == rows.end {
                        break;
                    }
                }
                assert!(reader.read(1).is_err(), "{case}: a row past the end");
            }
        }
        // All columns, reordered, through the scan: Tessera's columns beside Arrow's.
        let names = ["s", "dec15", "nullable", "f64", "dec30", "i32", "date"];
        let scan = ParquetScan {
            path: path.clone(),
            row_groups: vec![0, 1, 2, 3],
            columns: Some(names.iter().map(|n| n.to_string()).collect()),
        };
        let indices: Vec<usize> = names.iter().map(|n| schema.index_of(n).unwrap()).collect();
        let want = batch.project(&indices).unwrap();
        for batch_rows in [900, 5000] {
            let read: Vec<RecordBatch> = read_batches(&scan, batch_rows)
                .unwrap()
                .collect::<FrameResult<_>>()
                .unwrap();
            let sizes: Vec<usize> = read.iter().map(RecordBatch::num_rows).collect();
            let expected_sizes = match batch_rows {
                900 => vec![900, 900, 700],
                _ => vec![2500],
            };
            assert_eq!(sizes, expected_sizes, "{case}");
            let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
            assert_eq!(read, want, "{case}: batches of {batch_rows}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// A scan of Tessera's columns alone comes in batches of the rows asked for; one beside a
/// string column read as a dictionary, a batch a row group.
#[test]
fn scans_of_numeric_columns_alone_and_beside_dictionaries() {
    let batch = table();
    let path = path("alone.parquet");
    write(
        &path,
        &batch,
        &Written {
            compression: Compression::SNAPPY,
            version: WriterVersion::PARQUET_1_0,
            dictionary: true,
            small_dictionaries: false,
        },
    );
    let scan = |columns: &[&str]| ParquetScan {
        path: path.clone(),
        row_groups: vec![1, 2, 3],
        columns: Some(columns.iter().map(|c| c.to_string()).collect()),
    };
    let project = |names: &[&str]| {
        let indices: Vec<usize> = names
            .iter()
            .map(|n| batch.schema().index_of(n).unwrap())
            .collect();
        batch.project(&indices).unwrap().slice(700, 1800)
    };
    let numeric = ["f32", "dec7", "i64"];
    let read: Vec<RecordBatch> = read_batches(&scan(&numeric), 800)
        .unwrap()
        .collect::<FrameResult<_>>()
        .unwrap();
    assert_eq!(
        read.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
        [800, 800, 200]
    );
    let read = arrow::compute::concat_batches(&read[0].schema(), &read).unwrap();
    assert_eq!(read, project(&numeric));

    let (read, decoded) = read_batches_with(&scan(&["s", "dec15"]), 1000, &["s".into()]).unwrap();
    assert_eq!(decoded, vec![("s".to_string(), DataType::Utf8)]);
    let read: Vec<RecordBatch> = read.collect::<FrameResult<_>>().unwrap();
    assert_eq!(
        read.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(),
        [700, 700, 400]
    );
    let strings: Vec<ArrayRef> = read
        .iter()
        .map(|b| arrow::compute::cast(b.column(0), &DataType::Utf8).unwrap())
        .collect();
    let strings: Vec<&dyn Array> = strings.iter().map(AsRef::as_ref).collect();
    let decimals: Vec<&dyn Array> = read.iter().map(|b| b.column(1).as_ref()).collect();
    let want = project(&["s", "dec15"]);
    assert_eq!(
        arrow::compute::concat(&strings).unwrap().as_ref(),
        want.column(0).as_ref()
    );
    assert_eq!(
        arrow::compute::concat(&decimals).unwrap().as_ref(),
        want.column(1).as_ref()
    );
    std::fs::remove_file(&path).unwrap();
}

/// `values` of `width` bits packed as Parquet packs them: least significant bit first.
fn pack(values: &[u32], width: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; (values.len() * width).div_ceil(8)];
    for (i, &v) in values.iter().enumerate() {
        for b in 0..width {
            if v >> b & 1 == 1 {
                let bit = i * width + b;
                bytes[bit / 8] |= 1 << (bit % 8);
            }
        }
    }
    bytes
}

/// Every width from 0 to 32, from every offset in a group, in pieces across groups.
#[test]
fn packed_indices_unpack_at_every_width_and_offset() {
    for width in 0..=32usize {
        let mask = if width == 32 {
            u32::MAX
        } else {
            (1u32 << width) - 1
        };
        let values: Vec<u32> = (0..203u32)
            .map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7) & mask)
            .collect();
        let packed = pack(&values, width);
        for first in 0..10 {
            for len in [0, 1, 5, 8, 9, 16, 31, 64, 193 - first] {
                let mut out = vec![u32::MAX; len];
                unpack(&packed, width, first, &mut out);
                assert_eq!(
                    out,
                    values[first..first + len],
                    "width {width} first {first}"
                );
            }
        }
    }
}

/// An RLE run and a bit-packed run of 3-bit indices read in pieces across the runs; an
/// index past the dictionary and indices that end before the page's values are errors.
#[test]
fn hybrid_runs_read_across_their_ends_and_bad_indices_are_errors() {
    let dictionary: Vec<i64> = (10..18).collect();
    let packed_values: Vec<u32> = (0..16).map(|i| (i * 5) % 8).collect();
    let mut page = vec![3u8, 5 << 1, 6, (2 << 1) | 1];
    page.extend(pack(&packed_values, 3));
    let mut want: Vec<i128> = vec![16; 5];
    want.extend(packed_values.iter().map(|&i| i128::from(i) + 10));
    let mut runs = Hybrid::new(Bytes::from(page.clone())).unwrap();
    let mut out: Vec<i128> = Vec::new();
    for n in [3, 7, 11] {
        runs.take(n, &dictionary, &mut out).unwrap();
    }
    assert_eq!(out, want);
    assert!(
        runs.take(1, &dictionary, &mut out).is_err(),
        "past the runs"
    );

    let short = &dictionary[..6];
    let mut runs = Hybrid::new(Bytes::from(page.clone())).unwrap();
    let err = runs.take(21, short, &mut Vec::<i64>::new()).unwrap_err();
    assert!(err.to_string().contains("past the dictionary"), "{err}");

    // The packed run says two groups; the page stops after the first group's 3 bytes.
    let mut runs = Hybrid::new(Bytes::from(page[..7].to_vec())).unwrap();
    assert!(runs.take(13, &dictionary, &mut Vec::<i64>::new()).is_ok());
    assert!(runs.take(1, &dictionary, &mut Vec::<i64>::new()).is_err());

    assert!(
        Hybrid::new(Bytes::from_static(&[33])).is_err(),
        "33-bit indices"
    );
    assert!(Hybrid::new(Bytes::new()).is_err(), "no bit width");
}
