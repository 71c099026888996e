//! The tables the filter tests judge predicates over: every column type a predicate may
//! read with awkward values ([`awkward_table`]), and the bounds and failing values of the
//! casts and arithmetic that may fail ([`fault_table`]).

use crate::filter_gen::calendar_days;
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Date64Array, DictionaryArray, Float32Array, Float64Array,
    Int32Array, Int64Array, Int8Array, LargeStringArray, RecordBatch, StringArray,
    TimestampMicrosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
    TimestampSecondArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::datatypes::{Int32Type, UInt8Type};
use std::sync::Arc;

/// Rows of [`awkward_table`].
const ROWS: usize = 61;

/// A table of every column type a predicate may read, with awkward values and nulls, plus
/// a `UInt64` column that the generator does not read.
pub(crate) fn awkward_table() -> RecordBatch {
    let n = ROWS;
    let nth = |i: usize, k: usize| i % k == k - 1;
    let a = Int8Array::from_iter(
        (0..n).map(|i| (!nth(i, 5)).then_some([-128i8, -3, -1, 0, 1, 2, 7, 127][i % 8])),
    );
    let b =
        Int32Array::from_iter((0..n).map(|i| (!nth(i, 7)).then_some(((i * 37) % 101) as i32 - 50)));
    let c = Int64Array::from_iter_values((0..n).map(|i| match i % 9 {
        0 => i64::MIN,
        1 => i64::MAX,
        2 => (1 << 53) + 1,
        3 => -(1 << 53) - 1,
        4 => 0,
        5 => 1 << 53,
        6 => -7 * i as i64,
        _ => i as i64 * 1_000_003,
    }));
    let d = UInt32Array::from_iter(
        (0..n).map(|i| (!nth(i, 11)).then_some((i as u32).wrapping_mul(2_654_435_761))),
    );
    let e = UInt16Array::from_iter_values((0..n).map(|i| ((i * 997) % 65_536) as u16));
    let f = Float32Array::from_iter((0..n).map(|i| {
        let v = [
            f32::NAN,
            -0.0,
            0.0,
            0.5,
            0.1,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e30,
        ][i % 8];
        (!nth(i, 6)).then_some(if i >= 40 { i as f32 / 3.0 - 10.0 } else { v })
    }));
    let g = Float64Array::from_iter((0..n).map(|i| {
        let v = [
            0.1,
            9_007_199_254_740_992.0,
            f64::NAN,
            -0.0,
            0.5,
            -2.25,
            0.3,
        ][i % 7];
        (!nth(i, 4)).then_some(if i >= 45 { i as f64 * 0.37 - 12.0 } else { v })
    }));
    let words = [
        "", "a", "ab", "abc", "b", "é", "id042", "x", "abd", "aa", "ab\u{0}",
    ];
    let s = StringArray::from_iter((0..n).map(|i| (!nth(i, 8)).then_some(words[i % 11])));
    let t =
        LargeStringArray::from_iter((0..n).map(|i| (!nth(i, 9)).then_some(words[(i + 3) % 11])));
    let flag = BooleanArray::from_iter((0..n).map(|i| (!nth(i, 3)).then_some(i % 2 == 0)));
    let big = UInt64Array::from_iter_values((0..n).map(|i| u64::MAX - i as u64));
    let day = Date32Array::from_iter_values((0..n).map(|i| 18_000 + i as i32));
    let dday = Date64Array::from_iter(
        (0..n).map(|i| (!nth(i, 5)).then_some((18_000 + i as i64) * 86_400_000)),
    );
    let hour = 3_600_000;
    let ts = TimestampMillisecondArray::from_iter(
        (0..n).map(|i| (!nth(i, 6)).then_some(1_609_459_200_000 + (i as i64 - 20) * 7 * hour)),
    );
    let tz = TimestampMicrosecondArray::from_iter_values(
        (0..n).map(|i| 1_609_459_200_000_000 + (i as i64 - 30) * 28_800_000_000 + 1),
    )
    .with_timezone("+02:00");
    // Keys null every tenth row; entry 2 is a null string.
    let entries = StringArray::from(vec![
        Some("b"),
        Some("abc"),
        None,
        Some(""),
        Some("ab"),
        Some("é"),
        Some("zz"),
    ]);
    let keys = Int32Array::from_iter((0..n).map(|i| (!nth(i, 10)).then_some((i * 5 % 7) as i32)));
    let cat = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(entries)).unwrap();
    // Days, milliseconds, seconds and nanoseconds at the calendar's edges: chrono's first
    // and last dates and one past them, leap days, the epoch and just before it, extremes.
    let (first, last) = calendar_days();
    let days = [
        i64::from(i32::MIN),
        first - 1,
        first,
        -719_162,
        -135_081,
        -25_509,
        -25_508,
        -1,
        0,
        11_016,
        11_322,
        47_541,
        2_932_896,
        last,
        last + 1,
        i64::from(i32::MAX),
    ];
    let when = Date32Array::from_iter(
        (0..n).map(|i| (!nth(i, 11)).then_some(days[i % days.len()] as i32)),
    );
    let day_ms = 86_400_000;
    let ms = [
        i64::MIN,
        first * day_ms - 1,
        first * day_ms,
        -86_400_001,
        -1,
        0,
        86_399_999,
        951_782_400_000,
        951_868_799_999,
        last * day_ms + day_ms - 1,
        (last + 1) * day_ms,
        i64::MAX,
    ];
    let mday = Date64Array::from_iter((0..n).map(|i| (!nth(i, 12)).then_some(ms[i % ms.len()])));
    let s_edges = [
        i64::MIN,
        -86_401,
        -1,
        0,
        59,
        951_868_799,
        first * 86_400,
        last * 86_400 + 86_399,
        (last + 1) * 86_400,
        i64::MAX,
    ];
    let secs = TimestampSecondArray::from_iter_values((0..n).map(|i| s_edges[i % s_edges.len()]));
    // The same instants on the wall clock 5 hours west (chrono's first instant there is
    // the day before its first date), and milliseconds 3 hours east ("Etc/GMT-3": the
    // database's sign is POSIX's), where the last instant is the day after its last date.
    let zsec = secs.clone().with_timezone("-05:00");
    let etc = TimestampMillisecondArray::from_iter_values((0..n).map(|i| ms[i % ms.len()]))
        .with_timezone("Etc/GMT-3");
    let ns_edges = [
        i64::MIN,
        -1,
        0,
        1,
        -999_999_999,
        951_868_799_999_999_999,
        978_220_799_000_000_000,
        i64::MAX,
    ];
    let nanos = TimestampNanosecondArray::from_iter(
        (0..n).map(|i| (!nth(i, 9)).then_some(ns_edges[i % ns_edges.len()].wrapping_sub(i as i64))),
    );
    let large = LargeStringArray::from(vec!["a", "id042", "ab", "x"]);
    let keys = UInt8Array::from_iter((0..n).map(|i| (!nth(i, 13)).then_some((i % 4) as u8)));
    let lcat = DictionaryArray::<UInt8Type>::try_new(keys, Arc::new(large)).unwrap();
    RecordBatch::try_from_iter([
        ("a", Arc::new(a) as ArrayRef),
        ("b", Arc::new(b)),
        ("c", Arc::new(c)),
        ("d", Arc::new(d)),
        ("e", Arc::new(e)),
        ("f", Arc::new(f)),
        ("g", Arc::new(g)),
        ("s", Arc::new(s)),
        ("t", Arc::new(t)),
        ("flag", Arc::new(flag)),
        ("big", Arc::new(big)),
        ("day", Arc::new(day)),
        ("dday", Arc::new(dday)),
        ("ts", Arc::new(ts)),
        ("tz", Arc::new(tz.clone())),
        ("when", Arc::new(when)),
        ("mday", Arc::new(mday)),
        ("secs", Arc::new(secs)),
        ("nanos", Arc::new(nanos)),
        ("zsec", Arc::new(zsec)),
        ("etc", Arc::new(etc)),
        ("ny", Arc::new(tz.clone().with_timezone("America/New_York"))),
        (
            "nowhere",
            Arc::new(TimestampSecondArray::from(vec![0; n]).with_timezone("Mars/Olympus_Mons")),
        ),
        ("cat", Arc::new(cat)),
        ("lcat", Arc::new(lcat)),
    ])
    .unwrap()
}

/// Rows before this in [`fault_table`] make no predicate of [`fault_predicates`] fail;
/// each row after does.
pub(crate) const SAFE_ROWS: usize = 8;

/// A table of ten rows, for [`fault_predicates`]: rows 0..[`SAFE_ROWS`] hold values each
/// predicate takes (the bounds of its cast among them) and, under nulls in rows 2 and 5,
/// values that would make it fail; the rows after hold values that make it fail (an
/// overflow, a value its strict cast cannot take).
pub(crate) fn fault_table() -> RecordBatch {
    use arrow::buffer::NullBuffer;
    let nulls = || Some(NullBuffer::from_iter((0..10).map(|i| i != 2 && i != 5)));
    let ints = |v: [i64; 10]| Arc::new(Int64Array::new(v.to_vec().into(), nulls())) as ArrayRef;
    let floats = |v: [f64; 10]| Arc::new(Float64Array::new(v.to_vec().into(), nulls())) as ArrayRef;
    let singles =
        |v: [f32; 10]| Arc::new(Float32Array::new(v.to_vec().into(), nulls())) as ArrayRef;
    let secs =
        |v: [i64; 10]| Arc::new(TimestampSecondArray::new(v.to_vec().into(), nulls())) as ArrayRef;
    let (max, min) = (i64::MAX, i64::MIN);
    let inf = f64::INFINITY;
    let two63 = 9_223_372_036_854_775_808.0;
    // chrono's first and last days, in seconds: a cast that moves a timestamp into or out
    // of a zone takes only values more than a day inside them (`zt`, `tw`; past the last
    // day, 5 hours east, Arrow's own cast would panic); and the last nanosecond from which
    // 5 hours on stays in `i64`.
    let (first, last) = calendar_days();
    let (first, last) = (first * 86_400, last * 86_400);
    let shifted = max - 18_000_000_000_000;
    RecordBatch::try_from_iter([
        (
            "t1",
            secs([0, 1_600_000_000, max, -5, 7, min, 12, 1 << 40, max, min]),
        ),
        (
            "t2",
            secs([0, 1_500_000_000, -1, 1 << 62, -7, 1, 13, 1 << 41, -2, 3]),
        ),
        (
            "i8",
            ints([0, -128, 1 << 40, 127, -5, min, 99, 1, 128, -129]),
        ),
        ("u8", ints([0, 255, -1, 1, 254, 256, 7, 0, 256, -1])),
        ("w", ints([0, 1, min, 32_767, 2, max, 3, 5, 1 << 40, min])),
        (
            "w16",
            ints([0, -32_768, max, 32_767, 1, min, -1, 2, 32_768, -32_769]),
        ),
        (
            "w32",
            ints([
                i32::MIN.into(),
                i32::MAX.into(),
                max,
                0,
                -1,
                min,
                1,
                2,
                1 << 31,
                -(1 << 31) - 1,
            ]),
        ),
        (
            "wu16",
            ints([0, 65_535, -1, 1, 2, 65_536, 3, 4, 65_536, -1]),
        ),
        (
            "wu32",
            ints([0, (1 << 32) - 1, -1, 1, 2, 1 << 32, 3, 4, 1 << 32, -1]),
        ),
        (
            "x",
            floats([
                1.5,
                -128.9,
                f64::NAN,
                127.99,
                -0.0,
                inf,
                0.999,
                -1.5,
                128.0,
                -129.0,
            ]),
        ),
        (
            "y",
            floats([0.5, 255.9, -5.0, -0.99, 1.0, 1e300, 3.0, 254.0, -1.0, 256.0]),
        ),
        (
            "z",
            floats([
                -2_147_483_648.5,
                2_147_483_647.9,
                inf,
                0.0,
                -0.0,
                f64::NAN,
                1e9,
                -1e9,
                2_147_483_648.0,
                -2_147_483_649.0,
            ]),
        ),
        (
            "z64",
            floats([
                -two63,
                9.2e18,
                f64::NAN,
                0.5,
                -0.5,
                inf,
                1.0,
                2.0,
                two63,
                f64::NAN,
            ]),
        ),
        (
            "h",
            singles([
                -2_147_483_648.0,
                2_147_483_520.0,
                f32::NAN,
                0.5,
                -0.9,
                1e30,
                3.5,
                1.0,
                2_147_483_648.0,
                f32::NAN,
            ]),
        ),
        (
            "h64",
            singles([
                9.223_371_5e18,
                -9.223_372e18,
                f32::INFINITY,
                0.0,
                1.0,
                f32::NAN,
                2.0,
                3.0,
                9.223_372e18,
                f32::NEG_INFINITY,
            ]),
        ),
        (
            "d64",
            Arc::new(Date64Array::new(
                [
                    0,
                    -1,
                    max,
                    86_400_000 * 5,
                    -86_399_999,
                    min,
                    7,
                    1 << 50,
                    max,
                    min,
                ]
                .to_vec()
                .into(),
                nulls(),
            )),
        ),
        (
            "zt",
            Arc::new(
                TimestampSecondArray::new(
                    [
                        0,
                        first + 86_400,
                        max,
                        last - 1,
                        -86_401,
                        min,
                        12,
                        1 << 40,
                        first + 86_399,
                        last + 86_399,
                    ]
                    .to_vec()
                    .into(),
                    nulls(),
                )
                .with_timezone("+05:00"),
            ),
        ),
        (
            "tw",
            secs([
                0,
                first + 86_400,
                max,
                last - 1,
                5,
                min,
                -86_401,
                1 << 40,
                first,
                last + 86_399,
            ]),
        ),
        (
            "tn",
            Arc::new(TimestampNanosecondArray::new(
                [0, shifted, max, min, -1, max, 5, min + 5, max, shifted + 1]
                    .to_vec()
                    .into(),
                nulls(),
            )),
        ),
        (
            "u",
            Arc::new(UInt32Array::new(
                [
                    0,
                    7,
                    u32::MAX,
                    2_147_483_647,
                    9,
                    u32::MAX,
                    2,
                    3,
                    2_147_483_648,
                    u32::MAX,
                ]
                .to_vec()
                .into(),
                nulls(),
            )),
        ),
    ])
    .unwrap()
}
