//! Tests of key encoding: ids against a naive hash map, every key type and layout, and
//! routing hashes.

use super::*;
use arrow::array::{
    BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, LargeStringArray,
    StringArray, StringViewArray, TimestampMillisecondArray, UInt32Array,
};
use std::collections::HashMap;
use std::sync::Arc;

use crate::test_rng::Rng;

/// Ids in order of first appearance, by a hash map over the rows.
fn naive_ids<K: std::hash::Hash + Eq + Clone>(rows: &[K], seen: &mut HashMap<K, u32>) -> Vec<u32> {
    rows.iter()
        .map(|r| {
            let n = seen.len() as u32;
            *seen.entry(r.clone()).or_insert(n)
        })
        .collect()
}

fn arr(a: impl Array + 'static) -> ArrayRef {
    Arc::new(a)
}

fn ints(rng: &mut Rng, n: usize, lo: i64, span: u64, null_every: u64) -> Vec<Option<i64>> {
    (0..n)
        .map(|_| (rng.below(null_every) != 0).then(|| lo + rng.below(span) as i64))
        .collect()
}

#[test]
fn int_keys_in_order_of_first_appearance() {
    let mut e = KeyEncoder::new(&[DataType::Int64]).unwrap();
    let ids = e
        .encode(&[arr(Int64Array::from(vec![
            Some(7),
            None,
            Some(3),
            Some(7),
            None,
            Some(-2),
        ]))])
        .unwrap();
    assert_eq!(ids, vec![0, 1, 2, 0, 1, 3]);
    let ids = e
        .encode(&[arr(Int64Array::from(vec![Some(3), Some(100), Some(-50)]))])
        .unwrap();
    assert_eq!(ids, vec![2, 4, 5]);
    assert_eq!(e.len(), 6);
    let keys = e.keys().unwrap();
    let want = Int64Array::from(vec![Some(7), None, Some(3), Some(-2), Some(100), Some(-50)]);
    assert_eq!(keys[0].as_ref(), &want as &dyn Array);
    let found = e
        .lookup(&[arr(Int64Array::from(vec![
            Some(100),
            Some(5),
            None,
            Some(i64::MIN),
        ]))])
        .unwrap();
    assert_eq!(found, vec![Some(4), None, Some(1), None]);
}

/// Random batches whose ranges go from small (slot table) to huge (hash table), against
/// the naive ids; lookups of seen and unseen keys.
#[test]
fn int_keys_match_naive_across_modes() {
    let mut rng = Rng(42);
    for (spans, null_every) in [
        (vec![10u64, 20, 1000, 1 << 40, 5], 5u64),
        (vec![1 << 40, 10, 10], 1000),
        (vec![100_000, 100_000], 3),
        (vec![3, 3, 3], 2),
    ] {
        let mut e = KeyEncoder::new(&[DataType::Int32]).unwrap();
        let mut seen = HashMap::new();
        for (b, span) in spans.iter().enumerate() {
            let lo = if b % 2 == 0 { -5 } else { 1000 };
            let span = (*span).min(1 << 30);
            let rows: Vec<Option<i32>> = ints(&mut rng, 500, lo, span, null_every)
                .into_iter()
                .map(|v| v.map(|v| v as i32))
                .collect();
            let ids = e.encode(&[arr(Int32Array::from(rows.clone()))]).unwrap();
            assert_eq!(ids, naive_ids(&rows, &mut seen));
            // Lookup of a wider type of the same class.
            let probe: Vec<Option<i64>> = rows.iter().map(|v| v.map(|v| v as i64 + 1)).collect();
            let found = e.lookup(&[arr(Int64Array::from(probe.clone()))]).unwrap();
            for (p, f) in probe.iter().zip(found) {
                let want = seen.get(&p.map(|v| v as i32)).copied();
                assert_eq!(f, want, "probe {p:?}");
            }
        }
        let keys = e.keys().unwrap();
        let keys = keys[0].as_primitive::<Int32Type>();
        assert_eq!(keys.len(), seen.len());
        for (k, id) in &seen {
            let got = keys
                .is_valid(*id as usize)
                .then(|| keys.value(*id as usize));
            assert_eq!(got, *k);
        }
    }
}

/// A sealed encoder of keys in the hash table (ranges too wide for a slot table) looks
/// keys up in its index by value where the range allows one: lookups (nulls, keys inside
/// and outside the range, other probe types) equal the naive ids, and keys encoded after
/// the seal are found.
#[test]
fn sealed_lookups_match_naive() {
    let mut rng = Rng(7);
    // (lowest key, range, keys, whether an index is built: with ids to 64 bits a key,
    // a bitmap alone to 256)
    for (lo, span, n, bitmap) in [
        (1i64, 60_000_000u64, 1_500_000usize, true),
        (-3_000_000, 2_000_000, 13_000, true),
        (i64::MAX - 40_000_000, 40_000_000, 1_000_000, true),
        (1, 60_000_000, 400_000, true),
        (1, 60_000_000, 100_000, false),
        (0, 1 << 40, 20_000, false),
    ] {
        let rows = ints(&mut rng, n, lo, span, 50);
        let mut e = KeyEncoder::new(&[DataType::Int64]).unwrap();
        let mut seen = HashMap::new();
        let ids = e.encode(&[arr(Int64Array::from(rows.clone()))]).unwrap();
        assert_eq!(ids, naive_ids(&rows, &mut seen));
        e.seal();
        assert_eq!(e.sealed_bytes() > 0, bitmap, "span {span}, {n} keys");
        let check = |e: &KeyEncoder, seen: &HashMap<Option<i64>, u32>| {
            // Keys held, keys near them, keys beyond the range either side, nulls.
            let mut probe: Vec<Option<i64>> = rows.iter().take(5_000).copied().collect();
            probe.extend(
                rows.iter()
                    .take(5_000)
                    .map(|k| k.map(|k| k.wrapping_add(1))),
            );
            probe.extend([Some(lo - 1), Some(lo.wrapping_add(span as i64)), None]);
            probe.extend(ints(&mut Rng(9), 5_000, lo, span, 7));
            let found = e.lookup(&[arr(Int64Array::from(probe.clone()))]).unwrap();
            for (p, f) in probe.iter().zip(found) {
                assert_eq!(f, seen.get(p).copied(), "probe {p:?}");
            }
        };
        check(&e, &seen);
        // Keys encoded after the seal, inside and outside the range, are found.
        let more = vec![
            Some(lo - 17),
            rows[1].map(|k| k.wrapping_add(3)),
            Some(lo + 5),
        ];
        let ids = e.encode(&[arr(Int64Array::from(more.clone()))]).unwrap();
        assert_eq!(ids, naive_ids(&more, &mut seen));
        assert_eq!(e.sealed_bytes(), 0, "encoding drops the bitmap");
        check(&e, &seen);
    }
    // Unsigned keys with the top bit set, sealed; probes of a narrower type.
    let mut e = KeyEncoder::new(&[DataType::UInt64]).unwrap();
    let base = u64::MAX - 30_000_000;
    let keys: Vec<u64> = (0..100_000u64).map(|i| base + i * 50).collect();
    e.encode(&[arr(arrow::array::UInt64Array::from(keys.clone()))])
        .unwrap();
    e.seal();
    assert!(e.sealed_bytes() > 0);
    let probe = arrow::array::UInt64Array::from(vec![base, base + 1, base + 50, 5, u64::MAX]);
    let found = e.lookup(&[arr(probe)]).unwrap();
    assert_eq!(found, vec![Some(0), None, Some(1), None, None]);
    let small = e.lookup(&[arr(UInt32Array::from(vec![5u32]))]).unwrap();
    assert_eq!(small, vec![None]);
}

#[test]
fn extreme_integers_and_unsigned() {
    let mut e = KeyEncoder::new(&[DataType::Int64]).unwrap();
    let ids = e
        .encode(&[arr(Int64Array::from(vec![i64::MIN, i64::MAX, 0, i64::MIN]))])
        .unwrap();
    assert_eq!(ids, vec![0, 1, 2, 0]);
    let mut e = KeyEncoder::new(&[DataType::UInt64]).unwrap();
    let col = arr(arrow::array::UInt64Array::from(vec![
        u64::MAX,
        0,
        u64::MAX,
        1,
    ]));
    assert_eq!(
        e.encode(std::slice::from_ref(&col)).unwrap(),
        vec![0, 1, 0, 2]
    );
    let want = arrow::array::UInt64Array::from(vec![u64::MAX, 0, 1]);
    assert_eq!(e.keys().unwrap()[0].as_ref(), &want as &dyn Array);
}

#[test]
fn float_bool_and_temporal_keys() {
    let mut e = KeyEncoder::new(&[DataType::Float64]).unwrap();
    let col = Float64Array::from(vec![
        Some(0.0),
        Some(-0.0),
        Some(f64::NAN),
        Some(-f64::NAN),
        None,
        Some(1.5),
    ]);
    assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 0, 1, 1, 2, 3]);
    let keys = e.keys().unwrap();
    let keys = keys[0].as_primitive::<Float64Type>();
    assert!(keys.value(1).is_nan() && keys.is_null(2) && keys.value(3) == 1.5);

    let mut e = KeyEncoder::new(&[DataType::Boolean]).unwrap();
    let col = BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]);
    assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 1, 2, 0]);
    let want = BooleanArray::from(vec![Some(true), None, Some(false)]);
    assert_eq!(e.keys().unwrap()[0].as_ref(), &want as &dyn Array);

    let dt = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    let mut e = KeyEncoder::new(std::slice::from_ref(&dt)).unwrap();
    let col = TimestampMillisecondArray::from(vec![5, 9, 5]).with_timezone("UTC");
    assert_eq!(e.encode(&[arr(col)]).unwrap(), vec![0, 1, 0]);
    let keys = e.keys().unwrap();
    assert_eq!(keys[0].data_type(), &dt);
    assert_eq!(
        keys[0]
            .as_primitive::<TimestampMillisecondType>()
            .values()
            .as_ref(),
        &[5, 9]
    );
}

/// Decimals of every width key by value: narrow ones by their unscaled i64, wide ones by
/// their text; ids, keys (of the same type), lookups and routing hashes agree.
#[test]
fn decimal_keys_of_every_width() {
    let values = [
        Some(-105),
        Some(7),
        None,
        Some(-105),
        Some(99_999_999),
        Some(7),
    ];
    let as_decimal = |dt: &DataType| {
        let wide = PrimitiveArray::<Decimal128Type>::from(values.to_vec())
            .with_precision_and_scale(38, 2)
            .unwrap();
        arrow::compute::cast(&wide, dt).unwrap()
    };
    for dt in [
        DataType::Decimal32(9, 2),
        DataType::Decimal64(18, 2),
        DataType::Decimal128(15, 2),
        DataType::Decimal128(25, 2),
        DataType::Decimal256(10, 2),
        DataType::Decimal256(60, 2),
    ] {
        let col = as_decimal(&dt);
        let mut e = KeyEncoder::new(std::slice::from_ref(&dt)).unwrap();
        assert_eq!(
            e.encode(std::slice::from_ref(&col)).unwrap(),
            [0, 1, 2, 0, 3, 1],
            "{dt}"
        );
        let keys = e.keys().unwrap();
        assert_eq!(keys[0].data_type(), &dt);
        let distinct = arrow::compute::cast(&keys[0], &DataType::Utf8).unwrap();
        let distinct: Vec<_> = distinct.as_string::<i32>().iter().collect();
        assert_eq!(
            distinct,
            [Some("-1.05"), Some("0.07"), None, Some("999999.99")],
            "{dt}"
        );
        let probe = as_decimal(&dt).slice(3, 3);
        assert_eq!(
            e.lookup(&[probe]).unwrap(),
            [Some(0), Some(3), Some(1)],
            "{dt}"
        );
        let h = hash_rows(&[col]).unwrap();
        assert!(h[0] == h[3] && h[1] == h[5] && h[0] != h[1], "{dt}");
    }
}

fn strings(rng: &mut Rng, n: usize, distinct: u64, null_every: u64) -> Vec<Option<String>> {
    (0..n)
        .map(|_| (rng.below(null_every) != 0).then(|| format!("id{:03}", rng.below(distinct))))
        .collect()
}

fn dict(rows: &[Option<String>]) -> ArrayRef {
    // A dictionary with unused values first, so dictionary order differs from row order.
    let mut values: Vec<&str> = vec!["unused-a", "unused-b"];
    let mut index: HashMap<&str, i32> = HashMap::new();
    let keys: Vec<Option<i32>> = rows
        .iter()
        .map(|r| {
            r.as_deref().map(|s| {
                *index.entry(s).or_insert_with(|| {
                    values.push(s);
                    values.len() as i32 - 1
                })
            })
        })
        .collect();
    let values = StringArray::from(values);
    arr(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), Arc::new(values)).unwrap())
}

/// Every string layout, mixed in one encoder, against the naive ids; keys come back in the
/// encoder's type; unused dictionary values are not keys.
#[test]
fn string_keys_in_every_layout() {
    let dict_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    for dt in [
        DataType::Utf8,
        DataType::LargeUtf8,
        DataType::Utf8View,
        dict_type,
    ] {
        let mut rng = Rng(7);
        let mut e = KeyEncoder::new(std::slice::from_ref(&dt)).unwrap();
        let mut seen = HashMap::new();
        for layout in 0..4 {
            let rows = strings(&mut rng, 300, 40 + 20 * layout as u64, 6);
            let col: ArrayRef = match layout {
                0 => arr(StringArray::from(rows.clone())),
                1 => arr(LargeStringArray::from(rows.clone())),
                2 => arr(StringViewArray::from(rows.clone())),
                _ => dict(&rows),
            };
            let ids = e.encode(std::slice::from_ref(&col)).unwrap();
            assert_eq!(ids, naive_ids(&rows, &mut seen), "{dt} layout {layout}");
            let found = e.lookup(&[col]).unwrap();
            assert_eq!(found, ids.iter().map(|&i| Some(i)).collect::<Vec<_>>());
        }
        let keys = e.keys().unwrap();
        assert_eq!(keys[0].data_type(), &dt);
        let plain = arrow::compute::cast(&keys[0], &DataType::Utf8).unwrap();
        let plain = plain.as_string::<i32>();
        for (k, id) in &seen {
            let got = plain
                .is_valid(*id as usize)
                .then(|| plain.value(*id as usize).to_string());
            assert_eq!(&got, k);
        }
        let unseen = e
            .lookup(&[arr(StringArray::from(vec!["unused-a", "zzz"]))])
            .unwrap();
        assert_eq!(unseen, vec![None, None]);
    }
}

/// String views in runs (rows taken from a few values, so repeated rows share their view):
/// short and long strings, the same long string at two places, empty strings beside
/// nulls, over two batches, against the naive ids.
#[test]
fn string_view_runs_match_naive() {
    let long = "a long string past twelve bytes";
    let values: Vec<Option<String>> = [
        Some(""),
        None,
        Some("a"),
        Some("b"),
        Some(long),
        Some("another long one, also inline-free"),
        Some(long),
    ]
    .iter()
    .map(|v| v.map(str::to_string))
    .collect();
    let base = StringViewArray::from(values.clone());
    let mut rng = Rng(11);
    let mut e = KeyEncoder::new(&[DataType::Utf8View]).unwrap();
    let mut seen = HashMap::new();
    for _ in 0..2 {
        let mut picks = Vec::new();
        while picks.len() < 2000 {
            let v = rng.below(values.len() as u64) as u32;
            let run = 1 + rng.below(9) as usize;
            picks.extend(std::iter::repeat_n(v, run));
        }
        let rows: Vec<Option<String>> = picks.iter().map(|&i| values[i as usize].clone()).collect();
        let col = arrow::compute::take(&base, &UInt32Array::from(picks), None).unwrap();
        let ids = e.encode(std::slice::from_ref(&col)).unwrap();
        assert_eq!(ids, naive_ids(&rows, &mut seen));
    }
}

/// Two and three key columns (int, string, dictionary), growing past the grid into the
/// hash table, against the naive ids; keys() unpacks the tuples.
#[test]
fn several_key_columns_match_naive() {
    for (distinct, batches) in [(5u64, 3), (400, 4)] {
        let mut rng = Rng(99 + distinct);
        let dict_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let types = [DataType::Int64, DataType::Utf8, dict_type];
        let mut e2 = KeyEncoder::new(&types[..2]).unwrap();
        let mut e3 = KeyEncoder::new(&types).unwrap();
        let (mut seen2, mut seen3) = (HashMap::new(), HashMap::new());
        for _ in 0..batches {
            let a = ints(&mut rng, 2000, 0, distinct, 9);
            let b = strings(&mut rng, 2000, distinct, 9);
            let c = strings(&mut rng, 2000, 3, 9);
            let cols = [
                arr(Int64Array::from(a.clone())),
                arr(StringArray::from(b.clone())),
                dict(&c),
            ];
            let rows2: Vec<_> = a.iter().cloned().zip(b.iter().cloned()).collect();
            let rows3: Vec<_> = rows2.iter().cloned().zip(c.iter().cloned()).collect();
            assert_eq!(
                e2.encode(&cols[..2]).unwrap(),
                naive_ids(&rows2, &mut seen2)
            );
            assert_eq!(e3.encode(&cols).unwrap(), naive_ids(&rows3, &mut seen3));
            let found = e3.lookup(&cols).unwrap();
            assert!(found
                .iter()
                .zip(&rows3)
                .all(|(f, r)| *f == seen3.get(r).copied()));
        }
        assert_eq!(e3.len(), seen3.len());
        let keys = e3.keys().unwrap();
        let (ka, kb) = (
            keys[0].as_primitive::<Int64Type>(),
            keys[1].as_string::<i32>(),
        );
        let kc = arrow::compute::cast(&keys[2], &DataType::Utf8).unwrap();
        assert_eq!(keys[2].data_type(), &types[2]);
        let kc = kc.as_string::<i32>();
        for ((a, b), c) in seen3.keys() {
            let id = seen3[&((*a, b.clone()), c.clone())] as usize;
            assert_eq!(ka.is_valid(id).then(|| ka.value(id)), *a);
            assert_eq!(kb.is_valid(id).then(|| kb.value(id).to_string()), *b);
            assert_eq!(kc.is_valid(id).then(|| kc.value(id).to_string()), *c);
        }
        let probe = [
            arr(Int64Array::from(vec![Some(-1), None])),
            arr(StringArray::from(vec!["id000", "nope"])),
            dict(&[None, None]),
        ];
        assert_eq!(e3.lookup(&probe).unwrap(), vec![None, None]);
    }
}

/// Rows of a customer-like table: key `k`, then a name, a dictionary nation and a balance
/// (null for every seventh key) that `k` determines, except where `odd` renames a key.
type Customer = (Option<i64>, Option<String>, Option<String>, Option<i64>);

fn customers(
    rng: &mut Rng,
    n: usize,
    distinct: u64,
    odd: Option<i64>,
) -> (Vec<Customer>, Vec<ArrayRef>) {
    let rows: Vec<Customer> = ints(rng, n, 0, distinct, 50)
        .into_iter()
        .map(|k| {
            let name = k.map(|k| match odd == Some(k) && rng.below(2) == 0 {
                true => format!("renamed customer #{k}"),
                false => format!("customer #{k:09} of a long name"),
            });
            let nation = k.map(|k| format!("nation{}", k % 5));
            (k, name, nation, k.filter(|k| k % 7 != 0).map(|k| 3 * k))
        })
        .collect();
    let cols = vec![
        arr(Int64Array::from_iter(rows.iter().map(|r| r.0))),
        arr(StringViewArray::from_iter(rows.iter().map(|r| r.1.clone()))),
        dict(&rows.iter().map(|r| r.2.clone()).collect::<Vec<_>>()),
        arr(Int64Array::from_iter(rows.iter().map(|r| r.3))),
    ];
    (rows, cols)
}

/// Columns determined by the first (a name, a nation, a balance per customer key) are kept
/// as one value per key, and a batch where one key has two names interns them again:
/// ids, keys and lookups (also of other types) against the naive ids, across batchings.
#[test]
fn dependent_columns_match_naive() {
    let dict_type = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let types = [
        DataType::Int64,
        DataType::Utf8View,
        dict_type,
        DataType::Int64,
    ];
    for batch_rows in [3000, 700, 1] {
        let mut rng = Rng(5);
        let mut e = KeyEncoder::new(&types).unwrap();
        let mut seen = HashMap::new();
        let mut all_rows = Vec::new();
        // Four batches that keep the dependency, then one that breaks it, then one more.
        for odd in [None, None, None, None, Some(3), None] {
            let (rows, cols) = customers(&mut rng, 3000, 400, odd);
            for start in (0..rows.len()).step_by(batch_rows) {
                let len = batch_rows.min(rows.len() - start);
                let part: Vec<ArrayRef> = cols.iter().map(|c| c.slice(start, len)).collect();
                let ids = e.encode(&part).unwrap();
                assert_eq!(ids, naive_ids(&rows[start..start + len], &mut seen));
            }
            let found = e.lookup(&cols).unwrap();
            assert!(found
                .iter()
                .zip(&rows)
                .all(|(f, r)| *f == seen.get(r).copied()));
            all_rows.extend(rows);
        }
        let broken = matches!(e.rest[0], Step::Paired(..));
        assert!(broken, "the renamed key ends the name's dependency");
        assert!(
            matches!(e.rest[1], Step::Dependent(_)),
            "the nation still depends"
        );
        assert_eq!(e.len(), seen.len());
        let keys = e.keys().unwrap();
        for (k, dt) in keys.iter().zip(&types) {
            assert_eq!(k.data_type(), dt);
        }
        let ka = keys[0].as_primitive::<Int64Type>();
        let kb = keys[1].as_string_view();
        let kc = arrow::compute::cast(&keys[2], &DataType::Utf8).unwrap();
        let kc = kc.as_string::<i32>();
        let kd = keys[3].as_primitive::<Int64Type>();
        for (row, &id) in &seen {
            let id = id as usize;
            assert_eq!(ka.is_valid(id).then(|| ka.value(id)), row.0);
            assert_eq!(kb.is_valid(id).then(|| kb.value(id).to_string()), row.1);
            assert_eq!(kc.is_valid(id).then(|| kc.value(id).to_string()), row.2);
            assert_eq!(kd.is_valid(id).then(|| kd.value(id)), row.3);
        }
        // A probe of other types (Int32 keys and balances, plain strings) finds the same ids;
        // a known key with another nation or balance is not found.
        let probe_rows = &all_rows[..50];
        let mut probe: Vec<ArrayRef> = vec![
            arr(Int32Array::from_iter(
                probe_rows.iter().map(|r| r.0.map(|k| k as i32)),
            )),
            arr(StringArray::from_iter(
                probe_rows.iter().map(|r| r.1.clone()),
            )),
            arr(StringArray::from_iter(
                probe_rows.iter().map(|r| r.2.clone()),
            )),
            arr(Int32Array::from_iter(
                probe_rows.iter().map(|r| r.3.map(|v| v as i32)),
            )),
        ];
        let found = e.lookup(&probe).unwrap();
        assert!(found
            .iter()
            .zip(probe_rows)
            .all(|(f, r)| *f == seen.get(r).copied()));
        probe[3] = arr(Int64Array::from_iter(
            probe_rows.iter().map(|r| r.3.map(|v| v + 1)),
        ));
        let found = e.lookup(&probe).unwrap();
        let expected: Vec<Option<u32>> = probe_rows
            .iter()
            .map(|r| {
                let shifted = (r.0, r.1.clone(), r.2.clone(), r.3.map(|v| v + 1));
                seen.get(&shifted).copied()
            })
            .collect();
        assert_eq!(found, expected);
    }
}

#[test]
fn empty_input_and_errors() {
    let mut e = KeyEncoder::new(&[DataType::Utf8, DataType::Int32]).unwrap();
    let empty = [
        arr(StringArray::from(Vec::<&str>::new())),
        arr(Int32Array::from(Vec::<i32>::new())),
    ];
    assert!(e.encode(&empty).unwrap().is_empty());
    assert!(e.is_empty());
    let keys = e.keys().unwrap();
    assert_eq!((keys[0].len(), keys[0].data_type()), (0, &DataType::Utf8));
    assert!(matches!(
        KeyEncoder::new(&[]),
        Err(FrameError::InvalidArgument(_))
    ));
    let list = DataType::List(Arc::new(Field::new("x", DataType::Int32, true)));
    assert!(matches!(
        KeyEncoder::new(&[list]),
        Err(FrameError::TypeMismatch(_))
    ));
    assert!(matches!(
        e.encode(&empty[..1]),
        Err(FrameError::InvalidArgument(_))
    ));
    let swapped = [empty[1].clone(), empty[0].clone()];
    assert!(matches!(
        e.encode(&swapped),
        Err(FrameError::TypeMismatch(_))
    ));
    let uneven = [
        arr(StringArray::from(vec!["a"])),
        arr(Int32Array::from(Vec::<i32>::new())),
    ];
    assert!(matches!(
        e.lookup(&uneven),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(matches!(
        hash_rows(&uneven),
        Err(FrameError::InvalidArgument(_))
    ));
    assert!(hash_rows(&[]).is_err());
}

#[test]
fn small_dictionary_key_type_overflow_is_an_error() {
    let dt = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    let mut e = KeyEncoder::new(&[dt]).unwrap();
    let names: Vec<String> = (0..200).map(|i| format!("k{i}")).collect();
    e.encode(&[arr(StringArray::from(names))]).unwrap();
    assert!(matches!(e.keys(), Err(FrameError::InvalidArgument(_))));
}

#[test]
fn hash_rows_is_encoding_independent_and_fixed() {
    let s = ["a", "bb", "a", "id042"];
    let h_utf8 = hash_rows(&[arr(StringArray::from(s.to_vec()))]).unwrap();
    let h_large = hash_rows(&[arr(LargeStringArray::from(s.to_vec()))]).unwrap();
    let h_view = hash_rows(&[arr(StringViewArray::from(s.to_vec()))]).unwrap();
    let h_dict = hash_rows(&[dict(
        &s.iter().map(|v| Some(v.to_string())).collect::<Vec<_>>(),
    )])
    .unwrap();
    assert_eq!(h_utf8, h_large);
    assert_eq!(h_utf8, h_view);
    assert_eq!(h_utf8, h_dict);
    assert_eq!(h_utf8[0], h_utf8[2]);
    assert_ne!(h_utf8[0], h_utf8[1]);
    let i = [-3i64, 0, 7, 1 << 20];
    let h64 = hash_rows(&[arr(Int64Array::from(i.to_vec()))]).unwrap();
    let h32 = hash_rows(&[arr(Int32Array::from(
        i.iter().map(|&v| v as i32).collect::<Vec<_>>(),
    ))])
    .unwrap();
    assert_eq!(h64, h32);
    let hu = hash_rows(&[arr(UInt32Array::from(vec![0u32, 7]))]).unwrap();
    assert_eq!(hu, h64[1..3].to_vec());
    // Fixed across processes and runs: a snapshot.
    let two = hash_rows(&[
        arr(Int64Array::from(vec![Some(1), None])),
        arr(StringArray::from(vec![Some("x"), None])),
    ])
    .unwrap();
    assert_eq!(
        two,
        hash_rows(&[
            arr(Int32Array::from(vec![Some(1), None])),
            arr(LargeStringArray::from(vec![Some("x"), None]))
        ])
        .unwrap()
    );
    assert_ne!(two[0], two[1]);
    assert_eq!(h_utf8[3], 15164453906853595097);
    assert_eq!(h64[2], 4430848737621667117);
}
