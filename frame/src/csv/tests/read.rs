//! Reading ranges: quoting, line ends, projections, range splits and errors.

use super::*;
use crate::csv::tests::quotes::state_at;
use crate::csv::values::NullSet;
use crate::csv::BLOCK;
use arrow::array::{Array, AsArray};
use arrow::compute::concat_batches;
use arrow::datatypes::{Field, Float64Type, Int64Type};
use std::sync::Arc;

#[test]
fn nulls_and_quotes() {
    let f = Tmp::new(
        b"s,n,q\n\
          NA,N/A,\"a,b\"\n\
          \"NA\",null,\"he said \"\"hi\"\"\"\n\
          \"\",\"\",\"\"\"\"\n\
          None,\"12\",x\"y\n",
    );
    let b = read(&f.0);
    assert_eq!(
        types(b.schema_ref()),
        [DataType::Utf8, DataType::Int64, DataType::Utf8]
    );
    assert_eq!(
        cells(&b),
        [
            ["∅", "∅", "a,b"],
            ["NA", "∅", "he said \"hi\""],
            ["", "∅", "\""],
            ["∅", "12", "x\"y"],
        ]
    );
}

#[test]
fn custom_delimiter_quote_and_nulls() {
    let f = Tmp::new(b"a;b\n'x;y';-1\n'it''s';5\n");
    let o = CsvOptions {
        delimiter: b';',
        quote: b'\'',
        null_values: vec!["-1".into()],
        ..CsvOptions::default()
    };
    let b = read_with(&f.0, &o).unwrap();
    assert_eq!(cells(&b), [["x;y", "∅"], ["it's", "5"]]);
    assert!(!NullSet::new(&o.null_values).numbers_never_null());
}

#[test]
fn crlf_no_final_newline_and_blank_lines() {
    let want = [["1", "x"], ["2", "y"], ["3", "z"]];
    for text in [
        &b"a,b\r\n1,x\r\n2,y\r\n3,z\r\n"[..],
        b"a,b\n1,x\n2,y\n3,z",
        b"a,b\r\n1,x\r\n2,y\r\n3,z",
        b"a,b\n1,x\n\n2,y\r\n\r\n3,z\n\n\r\n\n",
        b"\n\na,b\n1,x\n2,y\n3,z\n",
        b"\xEF\xBB\xBFa,b\n1,x\n2,y\n3,z\n",
    ] {
        let f = Tmp::new(text);
        let b = read(&f.0);
        assert_eq!(b.schema().field(0).name(), "a");
        assert_eq!(types(b.schema_ref()), [DataType::Int64, DataType::Utf8]);
        assert_eq!(cells(&b), want, "{:?}", String::from_utf8_lossy(text));
    }
}

#[test]
fn crlf_in_fast_paths() {
    let f = Tmp::new(b"a,b\r\n1,2.5\r\n-3,\r\n");
    let b = read(&f.0);
    assert_eq!(cells(&b), [["1", "2.5"], ["-3", "∅"]]);
}

#[test]
fn single_column_blank_lines_are_nulls() {
    let f = Tmp::new(b"v\n1\n\n3\n\n\n");
    let b = read(&f.0);
    assert_eq!(cells(&b), [["1"], ["∅"], ["3"]]);
}

#[test]
fn projection_picks_columns_in_order() {
    let f = Tmp::new(b"a,b,c\n1,x,2.5\n2,\"y,z\",bad\n");
    let (schema, ds) = infer_schema(&f.0, &CsvOptions::default()).unwrap();
    let len = file_len(&f.0);
    let o = CsvOptions::default();
    let b = read_range(&f.0, span(ds, len), ds, &schema, Some(&[1, 0, 1]), &o).unwrap();
    let names: Vec<_> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["b", "a", "b"]);
    assert_eq!(cells(&b), [["x", "1", "x"], ["y,z", "2", "y,z"]]);
    let b = read_range(&f.0, span(ds, len), ds, &schema, Some(&[]), &o).unwrap();
    assert_eq!((b.num_rows(), b.num_columns()), (2, 0));
    let err = read_range(&f.0, span(ds, len), ds, &schema, Some(&[3]), &o).unwrap_err();
    assert!(matches!(err, FrameError::InvalidArgument(_)));
}

#[test]
fn long_numbers_and_exponents_use_the_slow_path() {
    let f = Tmp::new(
        b"i,f\n9223372036854775807,1e300\n-9223372036854775808,0.1234567890123456789012\n",
    );
    let b = read(&f.0);
    let i = b.column(0).as_primitive::<Int64Type>();
    assert_eq!(i.values().to_vec(), [i64::MAX, i64::MIN]);
    let fl = b.column(1).as_primitive::<Float64Type>();
    let want: f64 = "0.1234567890123456789012".parse().unwrap();
    assert_eq!(fl.values().to_vec(), [1e300, want]);
}

/// A file exercising quotes, CRLF, blank lines and nulls, for the range tests.
const MIXED: &[u8] = b"id,name,v,w\n\
    1,alpha,1.5,true\n\
    2,\"be,ta\",,false\r\n\
    \n\
    3,\"ga \"\"m\"\" ma\",-2.25,\n\
    4,,3,TRUE\n\
    5,NA,4e2,False\n\
    6,\"\",0.000001,true\n\
    7,omega,-0,false";

#[test]
fn every_range_split_gives_the_same_rows() {
    let f = Tmp::new(MIXED);
    let o = CsvOptions::default();
    let (schema, ds) = infer_schema(&f.0, &o).unwrap();
    let len = file_len(&f.0);
    let whole = read_range(&f.0, span(ds, len), ds, &schema, None, &o).unwrap();
    assert_eq!(whole.num_rows(), 7);
    let want = cells(&whole);
    for chunk in 1..=len {
        let ranges = quote_ranges(&f.0, ds, len, chunk, &o, 3).unwrap();
        let batches: Vec<_> = ranges
            .iter()
            .map(|&r| read_range(&f.0, r, ds, &schema, None, &o).unwrap())
            .collect();
        let all = concat_batches(&Arc::new(schema.clone()), &batches).unwrap();
        assert_eq!(cells(&all), want, "chunk {chunk}");
    }
    for cut in 0..=len + 2 {
        let a = read_range(&f.0, span(ds, cut), ds, &schema, None, &o).unwrap();
        let state = state_at(MIXED, ds, cut, &o);
        let rest = CsvRange {
            state,
            ..span(cut, len + 5)
        };
        let b = read_range(&f.0, rest, ds, &schema, None, &o).unwrap();
        let all = concat_batches(&Arc::new(schema.clone()), &[a, b]).unwrap();
        assert_eq!(cells(&all), want, "cut {cut}");
    }
}

#[test]
fn quoted_newlines_in_one_range() {
    let f = Tmp::new(b"a,b\n1,\"x\ny\"\n2,\"\r\n\"\n");
    let b = read(&f.0);
    assert_eq!(cells(&b), [["1", "x\ny"], ["2", "\r\n"]]);
}

#[test]
fn quoted_field_longer_than_a_block() {
    // Short rows first, so that the long field starts inside the first block.
    let short = "7,s\n".repeat(50_000);
    let long = "q".repeat(2 * BLOCK as usize) + "\n,\"\"";
    let text = format!("a,b\n{short}1,\"{}\"\n2,z\n", long.replace('"', "\"\""));
    let f = Tmp::new(text.as_bytes());
    let o = CsvOptions::default();
    let (schema, ds) = infer_schema(&f.0, &o).unwrap();
    let at = ds + short.len() as u64;
    let b = read_range(&f.0, span(at, at + 1), ds, &schema, None, &o).unwrap();
    assert_eq!(cells(&b), [["1".to_string(), long.clone()]]);
    let b = read_range(&f.0, span(ds, at + 1), ds, &schema, None, &o).unwrap();
    assert_eq!(b.num_rows(), 50_001);
    assert_eq!(cells(&b.slice(50_000, 1)), [["1".to_string(), long]]);
}

/// A file of several blocks with quoted rows here and there, CRLF line ends and nulls.
#[test]
fn many_rows_against_a_naive_sum() {
    let mut text = String::from("k,i,f\r\n");
    let (mut si, mut sf, mut nulls) = (0i64, 0i64, 0);
    let rows = 150_000i64;
    for r in 0..rows {
        let i = (r * 7919) % 100_003 - 50_000;
        let f = (r * 104_729) % 1_000_000_007;
        let key = if r % 5000 == 7 {
            "\"k,\"\"q\"\"\"".to_string()
        } else {
            format!("k{:05}", r % 97)
        };
        let int = if r % 3001 == 5 {
            nulls += 1;
            String::new()
        } else {
            si += i;
            i.to_string()
        };
        text += &format!("{key},{int},{}.{:06}\r\n", f / 1_000_000, f % 1_000_000);
        sf += f;
    }
    let f = Tmp::new(text.as_bytes());
    let o = CsvOptions::default();
    let (schema, ds) = infer_schema(&f.0, &o).unwrap();
    let len = file_len(&f.0);
    for chunk in [len, 1_500_007, 100_000, 65_536] {
        let (mut n, mut gi, mut gf, mut gnull, mut quoted) = (0, 0i64, 0i64, 0, 0);
        for r in quote_ranges(&f.0, ds, len, chunk, &o, 2).unwrap() {
            let b = read_range(&f.0, r, ds, &schema, None, &o).unwrap();
            n += b.num_rows();
            let ints = b.column(1).as_primitive::<Int64Type>();
            gi += ints.iter().flatten().sum::<i64>();
            gnull += ints.null_count();
            let floats = b.column(2).as_primitive::<Float64Type>().values();
            gf += floats.iter().map(|v| (v * 1e6).round() as i64).sum::<i64>();
            let keys = b.column(0).as_string::<i32>();
            quoted += keys.iter().filter(|k| *k == Some("k,\"q\"")).count();
        }
        assert_eq!(
            (n, gi, gf, gnull),
            (rows as usize, si, sf, nulls),
            "chunk {chunk}"
        );
        assert_eq!(quoted, 30, "chunk {chunk}");
    }
}

#[test]
fn errors_name_path_line_and_column() {
    let o = CsvOptions::default();
    let f = Tmp::new(b"a,b,c\n1,2,3\n4,5\n");
    let (schema, ds) = (
        Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
            Field::new("c", DataType::Int64, true),
        ]),
        6,
    );
    let len = file_len(&f.0);
    let err = read_range(&f.0, span(ds, len), ds, &schema, None, &o).unwrap_err();
    let want = |line, found| FrameError::FieldCount {
        path: f.0.clone(),
        line,
        expected: 3,
        found,
    };
    assert_eq!(err, want(3, 2));
    assert_eq!(infer_schema(&f.0, &o).unwrap_err(), want(3, 2));
    let g = Tmp::new(b"a,b,c\n1,2,3\n\n7,8,9\n4,5,6,\"x,y\",7\n");
    let err = read_range(&g.0, span(13, file_len(&g.0)), ds, &schema, None, &o).unwrap_err();
    assert_eq!(
        err,
        FrameError::FieldCount {
            path: g.0.clone(),
            line: 5,
            expected: 3,
            found: 5
        }
    );
    let h = Tmp::new(b"a,b,c\n1,2,3\n4,x5,6\n");
    let err = read_range(&h.0, span(8, file_len(&h.0)), ds, &schema, None, &o).unwrap_err();
    assert_eq!(
        err,
        FrameError::Parse {
            path: h.0.clone(),
            line: 3,
            column: "b".into(),
            message: "cannot parse \"x5\" as Int64".into()
        }
    );
    let q = Tmp::new(b"a,b,c\n1,2,3\n4,5,\"6\n");
    let err = read_range(&q.0, span(ds, file_len(&q.0)), ds, &schema, None, &o).unwrap_err();
    assert!(matches!(err, FrameError::Parse { line: 3, ref column, .. } if column == "c"));
    let missing = "/nonexistent/dir/x.csv";
    let err = infer_schema(missing, &o).unwrap_err();
    assert!(matches!(err, FrameError::Io { ref path, .. } if path == missing));
    let err = read_range(missing, span(0, 1), 0, &schema, None, &o).unwrap_err();
    assert!(matches!(err, FrameError::Io { ref path, .. } if path == missing));
    for text in [&b""[..], b"\n\r\n\n"] {
        let e = Tmp::new(text);
        let err = infer_schema(&e.0, &o).unwrap_err();
        assert_eq!(err, FrameError::EmptyFile { path: e.0.clone() });
    }
    let bad = CsvOptions {
        quote: b',',
        ..CsvOptions::default()
    };
    assert!(matches!(
        infer_schema(&f.0, &bad),
        Err(FrameError::InvalidArgument(_))
    ));
}

#[test]
fn dates_timestamps_bools_reject_bad_text() {
    let f = Tmp::new(b"d,t,b\n2024-01-01,2024-01-01 00:00:00,true\n2024-02-30,x,maybe\n");
    let o = CsvOptions {
        infer_bytes: 43,
        ..CsvOptions::default()
    };
    let (schema, _) = infer_schema(&f.0, &o).unwrap();
    assert_eq!(types(&schema), [DataType::Date32, ts(), DataType::Boolean]);
    let err = read_with(&f.0, &o).unwrap_err();
    assert!(
        matches!(err, FrameError::Parse { line: 3, ref column, ref message, .. }
        if column == "d" && message.contains("2024-02-30"))
    );
}

#[test]
fn split_ranges_cover_the_data() {
    assert_eq!(split_ranges(10, 10, 4), [(10, 10)]);
    assert_eq!(split_ranges(10, 5, 4), [(10, 10)]);
    assert_eq!(split_ranges(0, 10, 4), [(0, 3), (3, 6), (6, 10)]);
    assert_eq!(split_ranges(2, 12, 0).len(), 10);
    let r = split_ranges(7, 1_000_003, 32 << 10);
    assert_eq!(r.first().unwrap().0, 7);
    assert_eq!(r.last().unwrap().1, 1_000_003);
    assert!(r.windows(2).all(|w| w[0].1 == w[1].0));
    assert!(r.iter().all(|(s, e)| e - s <= 32 << 10));
}

#[test]
fn invalid_utf8_is_a_parse_error() {
    let f = Tmp::new(b"a,b\nx,1\n\xff\xfe,2\n");
    let o = CsvOptions {
        infer_bytes: 8,
        ..CsvOptions::default()
    };
    let err = read_with(&f.0, &o).unwrap_err();
    assert!(matches!(err, FrameError::Parse { line: 3, ref column, .. } if column == "a"));
}
