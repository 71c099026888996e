//! `sort_values` as pandas sorts: a direction per key, stable ties, NaN and null placed by
//! `na_position` in either direction, and the same rows whatever the chunking — checked
//! against Rust's own stable sort of the same rows.

use crate::common::session;
use arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use std::cmp::Ordering;
use std::sync::Arc;
use tessera::dataframe::{from_arrow, Ascending, FrameError, NaPosition};
use tessera::Error;

/// `n` rows: a string key with few values (and nulls), a float key with ties, NaN, -0.0
/// and nulls, and `id`, the input position.
fn rows(n: usize) -> RecordBatch {
    let mut state = 11u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let s: Vec<Option<&str>> = (0..n)
        .map(|_| [Some("b"), Some("a"), None, Some("c")][next() % 4])
        .collect();
    let x: Vec<Option<f64>> = (0..n)
        .map(|_| match next() % 7 {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            3 => Some(0.0),
            r => Some(r as f64 * 0.5),
        })
        .collect();
    let schema = Schema::new(vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("x", DataType::Float64, true),
        Field::new("id", DataType::Int64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from(s)),
            Arc::new(Float64Array::from(x)),
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
        ],
    )
    .unwrap()
}

/// The ids in the order a stable sort by (s, x) gives, directions `up`, missing values
/// (null, NaN) first or last in either direction.
fn by_hand(t: &RecordBatch, up: [bool; 2], na_first: bool) -> Vec<i64> {
    let s = t.column(0).as_string::<i32>();
    let x = t.column(1).as_primitive::<arrow::datatypes::Float64Type>();
    let key_s = |i: usize| s.is_valid(i).then(|| s.value(i).to_string());
    let key_x = |i: usize| Some(x.value(i)).filter(|v| x.is_valid(i) && !v.is_nan());
    fn cmp<T: PartialOrd>(a: Option<T>, b: Option<T>, up: bool, na_first: bool) -> Ordering {
        match (a, b) {
            (None, None) => Ordering::Equal,
            (None, _) if na_first => Ordering::Less,
            (None, _) => Ordering::Greater,
            (_, None) if na_first => Ordering::Greater,
            (_, None) => Ordering::Less,
            (Some(a), Some(b)) => {
                let o = a.partial_cmp(&b).unwrap();
                if up {
                    o
                } else {
                    o.reverse()
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..t.num_rows()).collect();
    order.sort_by(|&a, &b| {
        cmp(key_s(a), key_s(b), up[0], na_first).then(cmp(key_x(a), key_x(b), up[1], na_first))
    });
    order.into_iter().map(|i| i as i64).collect()
}

fn ids(t: &RecordBatch) -> Vec<i64> {
    let i = t.schema().index_of("id").unwrap();
    t.column(i).as_primitive::<Int64Type>().values().to_vec()
}

#[test]
fn each_key_has_its_direction_ties_stay_stable_under_any_chunking() {
    let s = session();
    let data = rows(6_000);
    for chunk in [None, Some(1000), Some(777), Some(1999)] {
        let df = from_arrow(data.clone(), chunk);
        for up in [[true, true], [false, true], [true, false], [false, false]] {
            for na in [NaPosition::Last, NaPosition::First] {
                let out = df
                    .sort_values_with(&["s", "x"], up, na)
                    .execute(&s)
                    .unwrap();
                assert_eq!(
                    ids(&out),
                    by_hand(&data, up, na == NaPosition::First),
                    "chunks {chunk:?}, ascending {up:?}, {na:?}"
                );
            }
        }
    }
    // One direction for all keys is the same as that direction per key.
    let df = from_arrow(data.clone(), Some(1000));
    let all = df.sort_values(&["s", "x"], false).execute(&s).unwrap();
    assert_eq!(ids(&all), by_hand(&data, [false, false], false));
}

#[test]
fn a_direction_list_of_another_length_is_an_invalid_argument() {
    let s = session();
    let df = from_arrow(rows(10), None);
    for bad in [Ascending::Each(vec![true]), Ascending::Each(vec![true; 3])] {
        let sorted = df.sort_values(&["s", "x"], bad);
        match sorted.execute(&s) {
            Err(Error::Frame(FrameError::InvalidArgument(m))) => {
                assert!(m.contains("length of ascending"), "{m}")
            }
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
    // The session and the frame stay usable.
    let ok = df
        .sort_values(&["s", "x"], [true, false])
        .execute(&s)
        .unwrap();
    assert_eq!(ok.num_rows(), 10);
}

#[test]
fn nlargest_and_nsmallest_keep_the_first_of_ties_and_put_missing_values_last() {
    let s = session();
    let data = rows(3_000);
    // By hand: the rows with values in stable order, then the missing ones in input order.
    let x = data
        .column(1)
        .as_primitive::<arrow::datatypes::Float64Type>();
    let present = |i: &i64| x.is_valid(*i as usize) && !x.value(*i as usize).is_nan();
    let order = |up: bool| -> Vec<i64> {
        let (mut ids, missing): (Vec<i64>, Vec<i64>) =
            (0..data.num_rows() as i64).partition(present);
        ids.sort_by(|&a, &b| {
            let o = x
                .value(a as usize)
                .partial_cmp(&x.value(b as usize))
                .unwrap();
            if up {
                o
            } else {
                o.reverse()
            }
        });
        ids.extend(missing);
        ids
    };
    for chunk in [None, Some(500), Some(333)] {
        let df = from_arrow(data.clone(), chunk);
        for n in [0, 1, 10, 2_999, 5_000] {
            let big = df.nlargest(n, &["x"]).execute(&s).unwrap();
            let want = order(false);
            assert_eq!(
                ids(&big),
                want[..n.min(want.len())],
                "nlargest {n} {chunk:?}"
            );
            let small = df.nsmallest(n, &["x"]).execute(&s).unwrap();
            let want = order(true);
            assert_eq!(
                ids(&small),
                want[..n.min(want.len())],
                "nsmallest {n} {chunk:?}"
            );
        }
    }
}
