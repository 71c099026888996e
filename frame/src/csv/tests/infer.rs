//! Schema inference: types, sampling, headers and type overrides.

use super::*;
use arrow::array::{Array, AsArray};
use arrow::datatypes::{Date32Type, Float64Type, Int64Type, TimestampMicrosecondType};

#[test]
fn infers_each_type() {
    let f = Tmp::new(
        b"i,f,b,d,t,s,n,m,x\n\
          1,1.5,true,2024-02-29,2024-02-29 12:00:00,a,,1,1\n\
          -7,2,False,1970-01-01,2024-03-01T00:00:01.5,b,NA,x,true\n\
          ,,,,2024-03-02,,,,\n",
    );
    let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
    assert_eq!(ds, 18);
    let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["i", "f", "b", "d", "t", "s", "n", "m", "x"]);
    use DataType::*;
    assert_eq!(
        types(&schema),
        [
            Int64,
            Float64,
            Boolean,
            Date32,
            ts(),
            Utf8,
            Utf8,
            Utf8,
            Utf8
        ]
    );
    let b = read(&f.0);
    assert_eq!(b.num_rows(), 3);
    let i = b.column(0).as_primitive::<Int64Type>();
    assert_eq!(i.iter().collect::<Vec<_>>(), [Some(1), Some(-7), None]);
    let fl = b.column(1).as_primitive::<Float64Type>();
    assert_eq!(fl.iter().collect::<Vec<_>>(), [Some(1.5), Some(2.0), None]);
    let bo = b.column(2).as_boolean();
    assert_eq!(
        bo.iter().collect::<Vec<_>>(),
        [Some(true), Some(false), None]
    );
    let d = b.column(3).as_primitive::<Date32Type>();
    assert_eq!(d.iter().collect::<Vec<_>>(), [Some(19782), Some(0), None]);
    let t = b.column(4).as_primitive::<TimestampMicrosecondType>();
    let day = 86_400_000_000i64;
    assert_eq!(
        t.iter().collect::<Vec<_>>(),
        [
            Some(19782 * day + 12 * 3_600_000_000),
            Some(19783 * day + 1_500_000),
            Some(19784 * day)
        ]
    );
    let s = b.column(5).as_string::<i32>();
    assert_eq!(s.iter().collect::<Vec<_>>(), [Some("a"), Some("b"), None]);
    assert_eq!(b.column(6).null_count(), 3);
}

#[test]
fn only_first_infer_bytes_are_sampled() {
    let f = Tmp::new(b"a,b\n1,2\n3,x\n");
    let o = CsvOptions {
        infer_bytes: 5,
        ..CsvOptions::default()
    };
    let (schema, _) = infer_schema(&f.0, &o).unwrap();
    assert_eq!(types(&schema), [DataType::Int64, DataType::Int64]);
    let err = read_with(&f.0, &o).unwrap_err();
    assert_eq!(
        err,
        FrameError::Parse {
            path: f.0.clone(),
            line: 3,
            column: "b".into(),
            message: "cannot parse \"x\" as Int64".into()
        }
    );
    // A sample that cuts the first row extends to one whole row.
    let o = CsvOptions {
        infer_bytes: 2,
        ..CsvOptions::default()
    };
    let (schema, _) = infer_schema(&f.0, &o).unwrap();
    assert_eq!(types(&schema), [DataType::Int64, DataType::Int64]);
}

#[test]
fn header_only_and_no_header() {
    for text in [&b"a,b\n"[..], b"a,b", b"a,b\r\n\r\n"] {
        let f = Tmp::new(text);
        let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
        assert_eq!(types(&schema), [DataType::Utf8, DataType::Utf8]);
        let ranges = split_ranges(ds, file_len(&f.0), 1 << 20);
        assert_eq!(ranges.len(), 1);
        let (s, e) = ranges[0];
        let b = read_range(&f.0, span(s, e), ds, &schema, None, &CsvOptions::default()).unwrap();
        assert_eq!((b.num_rows(), b.num_columns()), (0, 2));
    }
    let f = Tmp::new(b"1,x\n2,y\n");
    let o = CsvOptions {
        has_header: false,
        ..CsvOptions::default()
    };
    let (schema, ds) = infer_schema(&f.0, &o).unwrap();
    assert_eq!(ds, 0);
    assert_eq!(schema.field(1).name(), "column_2");
    let b = read_with(&f.0, &o).unwrap();
    assert_eq!(cells(&b), [["1", "x"], ["2", "y"]]);
    // An empty header name gets a positional name.
    let f = Tmp::new(b",b\n1,2\n");
    let (schema, _) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
    assert_eq!(schema.field(0).name(), "column_1");
}

#[test]
fn dtypes_override() {
    let f = Tmp::new(b"a,b,c\n1,2,2024-01-01\n3,4,2024-01-02\n");
    let o = CsvOptions {
        dtypes: vec![
            ("a".into(), DataType::Utf8),
            ("b".into(), DataType::Float64),
            ("c".into(), ts()),
        ],
        ..CsvOptions::default()
    };
    let b = read_with(&f.0, &o).unwrap();
    assert_eq!(
        types(b.schema_ref()),
        [DataType::Utf8, DataType::Float64, ts()]
    );
    assert_eq!(
        cells(&b),
        [
            ["1", "2.0", "2024-01-01T00:00:00"],
            ["3", "4.0", "2024-01-02T00:00:00"]
        ]
    );
    let o = CsvOptions {
        dtypes: vec![("zz".into(), DataType::Utf8)],
        ..CsvOptions::default()
    };
    assert_eq!(
        infer_schema(&f.0, &o).unwrap_err(),
        FrameError::ColumnNotFound {
            name: "zz".into(),
            available: vec!["a".into(), "b".into(), "c".into()]
        }
    );
    let o = CsvOptions {
        dtypes: vec![("a".into(), DataType::Int32)],
        ..CsvOptions::default()
    };
    assert!(matches!(
        infer_schema(&f.0, &o),
        Err(FrameError::InvalidArgument(_))
    ));
}
