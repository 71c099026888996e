//! Writing CSV and reading it back.

use super::*;
use arrow::array::AsArray;
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Float64Array, Int64Array, StringArray,
    TimestampMicrosecondArray,
};
use arrow::datatypes::Float64Type;
use std::sync::Arc;

fn round_trip(batch: &RecordBatch) -> RecordBatch {
    let f = Tmp::new(b"");
    let (a, b) = (batch.slice(0, 1), batch.slice(1, batch.num_rows() - 1));
    write_csv(&f.0, &[a, b]).unwrap();
    let o = CsvOptions {
        dtypes: batch
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect(),
        ..CsvOptions::default()
    };
    read_with(&f.0, &o).unwrap()
}

#[test]
fn write_then_read_back() {
    let strs = [
        Some("plain"),
        Some(""),
        None,
        Some("NA"),
        Some("a,\"b\"\nc"),
        Some("é"),
    ];
    let batch = RecordBatch::try_from_iter([
        (
            "i",
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                Some(0),
                None,
                Some(-5),
                Some(i64::MAX),
                Some(7),
            ])) as ArrayRef,
        ),
        (
            "f",
            Arc::new(Float64Array::from(vec![
                Some(0.1),
                Some(1.0),
                None,
                Some(-0.0),
                Some(1e-7),
                Some(1e300),
            ])),
        ),
        ("s", Arc::new(StringArray::from(strs.to_vec()))),
        (
            "b",
            Arc::new(BooleanArray::from(vec![
                Some(true),
                None,
                Some(false),
                Some(true),
                None,
                Some(false),
            ])),
        ),
        (
            "d",
            Arc::new(Date32Array::from(vec![
                Some(0),
                Some(-1),
                None,
                Some(19782),
                Some(-719468),
                Some(2_932_896),
            ])),
        ),
        (
            "t, \"q\"",
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(0),
                Some(-1),
                None,
                Some(1_709_210_096_123_456),
                Some(1_000_000),
                Some(86_400_000_000 * 19782 + 500_000),
            ])),
        ),
    ])
    .unwrap();
    let back = round_trip(&batch);
    assert_eq!(back, batch);
    let f = back.column(1).as_primitive::<Float64Type>();
    assert!(f.value(3).is_sign_negative());
}

#[test]
fn write_single_column_with_trailing_nulls() {
    let batch = RecordBatch::try_from_iter([(
        "v",
        Arc::new(Int64Array::from(vec![Some(1), None, Some(3), None])) as ArrayRef,
    )])
    .unwrap();
    assert_eq!(round_trip(&batch), batch);
    let s = RecordBatch::try_from_iter([(
        "v",
        Arc::new(StringArray::from(vec![Some("x"), None, Some(""), None])) as ArrayRef,
    )])
    .unwrap();
    assert_eq!(round_trip(&s), s);
}

#[test]
fn write_other_types_and_errors() {
    let batch = RecordBatch::try_from_iter([
        (
            "a",
            Arc::new(arrow::array::Int32Array::from(vec![1, 2])) as ArrayRef,
        ),
        ("b", Arc::new(Int64Array::from(vec![3, 4]))),
    ])
    .unwrap();
    let f = Tmp::new(b"");
    write_csv(&f.0, std::slice::from_ref(&batch)).unwrap();
    assert_eq!(std::fs::read(&f.0).unwrap(), b"a,b\n1,3\n2,4\n");
    assert!(matches!(
        write_csv(&f.0, &[]),
        Err(FrameError::InvalidArgument(_))
    ));
    let other = batch.project(&[1, 0]).unwrap();
    assert!(matches!(
        write_csv(&f.0, &[batch.clone(), other]),
        Err(FrameError::InvalidArgument(_))
    ));
    let err = write_csv("/nonexistent/dir/out.csv", &[batch]).unwrap_err();
    assert!(matches!(err, FrameError::Io { .. }));
}
