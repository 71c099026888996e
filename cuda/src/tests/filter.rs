//! The generated filter kernels (`filter_gen`) judged without a GPU: each predicate of a
//! set that covers every operator, type rule and null rule the generator takes is
//! compiled by the host's C++ compiler and run over a table of awkward values (integer
//! extremes, `2^53 + 1`, NaN, `-0.0`, infinities, empty and non-ASCII strings, nulls),
//! booleans, dates and timestamps, dictionaries with null keys and null entries), whole
//! and sliced at an odd row, and its flags must equal the CPU evaluator's mask; the
//! predicates it does not take give no kernel; every kernel compiles with NVRTC. The GPU
//! suite runs the same predicates on a device (`tests_gpu_frame`).

use super::codegen::nvrtc_or_skip;
use super::host_emu::{compile_and_run, SHIM};
use crate::filter_gen::{filter_source, FilterKernel, KernelCol, FILTER_PRELUDE, HELPERS};
use crate::frame_plan::{ColKind, ColPart};
use crate::nvrtc;
use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, TimeUnit};
use std::fmt::Write as _;
use tessera_kernels::frame::expr::{col, lit, Expr, Literal, Pattern, StrFunction};

mod tables;
pub(crate) use tables::{awkward_table, fault_table, SAFE_ROWS};

/// Predicates the generator takes, over [`awkward_table`].
pub(crate) fn predicates() -> Vec<Expr> {
    let null = || lit(Literal::Null);
    vec![
        col("a").gt(0),
        col("a").le(-1) | col("b").eq(3),
        col("c").eq(lit((1i64 << 53) + 1)),
        // An integral float constant against an integer column compares as integers, so
        // 2^53 + 1 is not equal to it (as floats they would be).
        col("c").eq(lit(9_007_199_254_740_992.0)),
        col("c").gt(lit(1.5)),
        col("c").lt(lit(-9.3e18)),
        col("f").gt(0.1),
        col("f").eq(0.5),
        col("f").ne(col("f")),
        col("g").eq(col("f")),
        col("g").lt(lit(2)),
        col("g").lt(col("c")),
        (col("b") + col("c")).gt(0),
        (col("c") * lit(3)).lt(0),
        (col("b") - col("a")).ge(lit(10)),
        (col("b") / col("a")).gt(1.0),
        (col("b") / col("a")).ne(col("b") / col("a")),
        (col("b") % col("a")).eq(1),
        (col("c") % lit(-7)).eq(lit(-3)),
        (col("c") % lit(-1)).eq(0),
        (col("g") % lit(0.75)).lt(0.3),
        (col("f") % col("g")).ge(0.0),
        (-col("a")).gt(0),
        (-col("d")).lt(-100),
        (-col("g")).gt(0.0),
        col("s").eq("abc"),
        col("s").lt("ab"),
        col("s").ge(col("t")),
        col("t").ne(""),
        col("s").str_contains("b"),
        col("t").str_contains(""),
        col("t").str_contains("é"),
        col("a").is_null() | col("g").is_not_null().not(),
        col("b").fill_null(0).eq(0),
        col("a").fill_null(lit(2.5)).gt(1.0),
        col("a").fill_null(lit(3.0)).eq(3),
        col("f").gt(0.0).and_(col("s").is_null()),
        col("f").gt(0.0).or_(col("b").lt(0)),
        null().eq(col("a")) | col("b").gt(40),
        col("a").gt(null()).not(),
        (col("a") + null()).is_null(),
        col("e").between(100, 40_000),
        col("e").gt(lit(1e3)),
        col("b").isin(&[Literal::Int(3), Literal::Int(-7), Literal::Null]),
        col("d").gt(lit(3_000_000_000i64)),
        lit(true),
        lit(false) & col("a").gt(0),
        (col("g") * col("f") + lit(1)).le(col("b").alias("bb")),
        // Booleans.
        col("flag"),
        col("flag").not() | col("a").gt(0),
        col("flag").eq(lit(false)),
        col("flag").lt(col("f").gt(0.0)),
        col("flag").fill_null(lit(true)),
        lit(true).eq(col("a").gt(0)),
        // Dates and timestamps against strings read as their type, and themselves.
        col("day").gt(lit("2019-05-01")),
        col("day").le(lit("2019-05-03")) & col("day").ne(lit("2019-04-20")),
        col("dday").is_null() | col("dday").lt(lit("2019-05-01")),
        col("ts").ge(lit("2021-01-02T03:00:00")),
        col("ts").lt(col("ts")) | col("ts").eq(col("ts")),
        col("tz").gt(lit("2021-01-01T00:00:00+02:00")),
        col("tz").le(lit("2020-12-25")),
        // Dates, timestamps and durations against constants of their kind, read in the
        // column's type: exactly, or rounded down (a nanosecond past midnight), either side.
        col("day").ge(lit(Literal::Date(18_005))) & col("day").lt(lit(Literal::Date(18_010))),
        col("day").lt(instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None)),
        col("day").ge(instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None)),
        instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None).gt(col("day")),
        instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None).le(col("day"))
            | col("day").eq(instant(18_012 * 86_400, TimeUnit::Second, None)),
        col("dday").le(lit(Literal::Date(18_020))),
        col("when").gt(instant(-43_200, TimeUnit::Second, None)),
        col("when").le(instant(-1, TimeUnit::Millisecond, None)),
        col("ts").ge(lit(Literal::Date(18_628))),
        col("ts").lt(instant(
            1_609_459_200_000_000_001,
            TimeUnit::Nanosecond,
            None,
        )),
        col("tz").gt(instant(
            1_609_459_200_000,
            TimeUnit::Millisecond,
            Some("UTC"),
        )),
        (col("ts") - col("ts")).eq(lit(Literal::Duration {
            value: 0,
            unit: TimeUnit::Second,
        })),
        (col("tz") - col("tz")).le(lit(Literal::Duration {
            value: 1,
            unit: TimeUnit::Nanosecond,
        })),
        // A constant computed from constants is one (folded when the expression is built).
        col("day").lt(lit(Literal::Date(18_005))
            + lit(Literal::Duration {
                value: 86_400,
                unit: TimeUnit::Second,
            })),
        col("ts").ge(lit(Literal::Date(18_628)) - lit(Literal::Interval { months: 1, days: 3 })),
        // Dictionaries of strings.
        col("cat").eq("b"),
        col("cat").ne("abc"),
        col("cat").lt("ab"),
        col("cat").ge(col("s")),
        col("cat").eq(col("lcat")),
        col("lcat").str_contains("a"),
        col("cat").str_contains("b"),
        col("cat").is_null(),
        col("cat").isin(&[Literal::Str("zz".into()), Literal::Str(String::new())]),
        // Casts that keep every value: to Int64, then arithmetic in its width; to Float64,
        // where 2^53 + 1 rounds to 2^53 (so this one is equal, unlike the integer compare
        // above); from Float32, booleans, a null, a column's own type.
        col("a").cast(DataType::Int64).gt(0),
        (col("a").cast(DataType::Int64) * lit(1i64 << 40)).gt(lit(1i64 << 44)),
        col("c")
            .cast(DataType::Float64)
            .eq(lit(9_007_199_254_740_992.0)),
        col("d").cast(DataType::Float64).gt(lit(1e9)),
        col("f").cast(DataType::Float64).lt(col("g")),
        col("flag").cast(DataType::Int64).eq(1),
        col("flag").cast(DataType::Float64).gt(0.5),
        col("g").cast(DataType::Float64).gt(0.0),
        lit(Literal::Null).cast(DataType::Int64).is_null() & col("b").gt(0),
        col("b").cast(DataType::Int64).fill_null(-1).lt(0),
        // Date parts: of days, milliseconds, seconds and nanoseconds, null outside the
        // calendar's range (but a timestamp's time of day and a Date32's is never).
        col("day").dt_month().eq(5) & col("day").dt_weekday().lt(5),
        col("dday").dt_quarter().eq(2) | col("dday").dt_dayofyear().gt(125),
        col("ts").dt_hour().ge(12) & col("ts").dt_day().eq(2),
        col("when").dt_year().gt(1969),
        col("when").dt_year().is_null(),
        col("when").dt_month().eq(2) | col("when").dt_day().eq(29),
        col("when").dt_dayofyear().ge(60),
        col("when").dt_dayofyear().eq(366) | col("when").dt_weekday().eq(0),
        col("when").dt_quarter().eq(1),
        col("when").dt_hour().eq(0),
        col("mday").dt_hour().eq(23) | col("mday").dt_second().eq(59),
        col("mday").dt_year().lt(1970) & col("mday").dt_minute().is_not_null(),
        col("mday").dt_day().eq(29),
        col("secs").dt_year().is_null(),
        col("secs").dt_minute().eq(59) | col("secs").dt_weekday().ge(5),
        col("secs").dt_second().lt(30) & col("secs").dt_month().is_null(),
        col("nanos").dt_second().eq(59),
        col("nanos").dt_year().eq(1969) | col("nanos").dt_dayofyear().eq(366),
        col("nanos").dt_day().eq(31) & col("nanos").dt_month().eq(12),
        col("nanos").dt_hour().lt(col("nanos").dt_minute()),
        lit(Literal::Null).dt_year().is_null() & col("b").lt(5),
        // Temporal values as the integers they are stored as.
        col("day").cast(DataType::Int64).gt(lit(18_030)),
        col("when").cast(DataType::Int32).lt(0) | col("when").cast(DataType::Int64).gt(11_000),
        col("ts")
            .cast(DataType::Int64)
            .ge(lit(1_609_459_200_000i64)),
        col("nanos").cast(DataType::Int64).lt(0) & col("secs").cast(DataType::Int64).gt(0),
        col("tz")
            .cast(DataType::Int64)
            .gt(col("mday").cast(DataType::Int64)),
        // Timestamps' differences, and casts that may fail (none does on these rows).
        (col("ts") - col("ts")).is_null(),
        (col("tz") - col("tz")).eq(col("tz") - col("tz")),
        col("a").cast(DataType::Float32).gt(0.0),
        col("c")
            .cast(DataType::Float32)
            .eq(lit(9_007_199_254_740_992.0)),
        col("g").cast(DataType::Float32).lt(col("f")),
        col("a").cast(DataType::Int16).eq(-128) | col("a").cast(DataType::Int32).eq(127),
        (-col("b").cast(DataType::Int8).fill_null(0)).gt(0) | col("b").is_null(),
        col("flag").cast(DataType::UInt8).eq(1),
        // Temporal casts: a timestamp's day (floored), other units (truncated toward
        // zero, or multiplied), days as milliseconds and back (truncated).
        col("ts").cast(DataType::Date32).gt(lit("2021-01-02")),
        col("nanos").cast(DataType::Date32).lt(lit("1970-01-01")),
        col("nanos")
            .cast(DataType::Timestamp(TimeUnit::Microsecond, None))
            .cast(DataType::Int64)
            .eq(lit(0)),
        col("ts")
            .cast(DataType::Timestamp(TimeUnit::Nanosecond, None))
            .ge(lit("2021-01-02T03:00:00")),
        col("tz")
            .cast(DataType::Timestamp(TimeUnit::Second, Some("+02:00".into())))
            .lt(lit("2021-01-01T00:00:00+02:00")),
        // Zones of one offset: date parts and days on their wall clocks (a day past
        // chrono's range there, where the instant is in it), zoneless values read as
        // their wall clocks, and constants read in the column's zone; a zone with summer
        // time against a constant (read on the host).
        col("tz").dt_year().gt(2020),
        col("tz").dt_hour().lt(6) & col("tz").dt_day().eq(1),
        col("zsec").dt_year().is_null() | col("zsec").dt_month().eq(12),
        col("zsec").dt_hour().eq(19) | col("zsec").dt_weekday().ge(5),
        col("zsec").dt_dayofyear().eq(366) | col("zsec").dt_quarter().eq(4),
        col("zsec").dt_minute().eq(59) & col("zsec").dt_second().lt(col("zsec").dt_day()),
        col("etc").dt_year().gt(2000) | col("etc").dt_day().eq(1),
        col("etc").dt_hour().eq(2) | col("etc").dt_second().eq(59),
        col("etc").dt_weekday().eq(0) | col("etc").dt_month().is_null(),
        col("tz").cast(DataType::Date32).gt(lit("2021-01-02")),
        col("ts")
            .cast(DataType::Timestamp(TimeUnit::Second, Some("+01:00".into())))
            .lt(lit("2021-01-02T00:00:00+01:00")),
        col("ts")
            .cast(DataType::Timestamp(
                TimeUnit::Microsecond,
                Some("Etc/GMT+5".into()),
            ))
            .ge(lit("2021-01-02T00:00:00")),
        col("etc").ge(lit("2000-02-29T12:00:00")),
        col("ny").ge(lit("2021-01-01")),
        col("day").cast(DataType::Date64).eq(col("dday")),
        col("dday").cast(DataType::Date32).ne(col("day")) | col("dday").is_null(),
        (col("ts") - col("ts")).cast(DataType::Int64).eq(0),
        // Past `Float32`'s range: infinity, as Rust's `as` gives it; non-finite constants.
        (col("g") * lit(1e290))
            .cast(DataType::Float32)
            .eq(lit(f64::INFINITY)),
        col("g").ne(lit(f64::NAN)) | col("f").lt(lit(f64::NEG_INFINITY)),
    ]
}

/// Predicates the CPU fails on from [`fault_table`]'s row [`SAFE_ROWS`] on: a timestamp
/// difference's overflow, and each strict cast the generator takes, at its bounds.
pub(crate) fn fault_predicates() -> Vec<Expr> {
    vec![
        (col("t1") - col("t2")).gt(col("t2") - col("t2")),
        (col("t1") - col("t2")).cast(DataType::Int64).lt(lit(5_000)),
        col("i8").cast(DataType::Int8).gt(0),
        col("u8").cast(DataType::UInt8).lt(lit(200)),
        col("w").cast(DataType::Int16).ne(0) | col("w").cast(DataType::UInt16).eq(0),
        col("w").cast(DataType::Int32).is_null(),
        col("w").cast(DataType::UInt32).gt(lit(3)),
        col("x").cast(DataType::Int8).lt(0),
        col("y").cast(DataType::UInt8).eq(255),
        col("z").cast(DataType::Int32).gt(lit(-2_147_483_648i64)),
        col("z64").cast(DataType::Int64).is_not_null(),
        col("h").cast(DataType::Int32).lt(0),
        col("h64").cast(DataType::Int64).lt(0),
        col("u").cast(DataType::Int32).gt(2),
        col("w16").cast(DataType::Int16).lt(0),
        col("w32").cast(DataType::Int32).gt(0),
        col("wu16").cast(DataType::UInt16).gt(lit(65_534)),
        col("wu32").cast(DataType::UInt32).lt(lit(5)),
        // Negated in its own width: -(-128) is -128 in `Int8`.
        (-col("i8").cast(DataType::Int8)).lt(0),
        col("t1")
            .cast(DataType::Timestamp(TimeUnit::Millisecond, None))
            .is_null(),
        col("t1").cast(DataType::Date32).is_not_null(),
        col("d64").cast(DataType::Date32).eq(lit("1970-01-01")),
        col("zt").cast(DataType::Date32).gt(lit("1970-01-01")),
        col("t1")
            .cast(DataType::Timestamp(TimeUnit::Second, Some("+05:00".into())))
            .is_null(),
        col("t1")
            .cast(DataType::Timestamp(
                TimeUnit::Millisecond,
                Some("Etc/GMT+5".into()),
            ))
            .is_not_null(),
        col("tn")
            .cast(DataType::Timestamp(
                TimeUnit::Nanosecond,
                Some("-05:00".into()),
            ))
            .is_not_null(),
        col("tw")
            .cast(DataType::Timestamp(TimeUnit::Second, Some("-05:00".into())))
            .is_null(),
        col("tw")
            .cast(DataType::Timestamp(
                TimeUnit::Millisecond,
                Some("Etc/GMT-5".into()),
            ))
            .is_not_null(),
    ]
}

/// Predicates the generator leaves to the CPU: `UInt64`, casts to it, casts of temporal
/// values but to their stored integers, temporal arithmetic but a timestamp minus its own
/// type, date parts and casts under a zone with summer time, and ones the CPU rejects (a
/// string plus a number, a string no date reads as, a boolean against a number, a date
/// against a number, a zone no database holds).
fn refused() -> Vec<Expr> {
    vec![
        col("big").gt(0),
        col("big").cast(DataType::Float64).gt(0.0),
        col("day").cast(DataType::Int8).gt(0),
        col("ts").cast(DataType::Int32).gt(0),
        col("ts").cast(DataType::Int8).gt(0),
        col("ny").cast(DataType::Date32).gt(lit("2021-01-02")),
        col("nowhere").cast(DataType::Date32).is_null(),
        col("ts")
            .cast(DataType::Timestamp(
                TimeUnit::Second,
                Some("America/New_York".into()),
            ))
            .is_null(),
        col("day")
            .cast(DataType::Timestamp(TimeUnit::Second, None))
            .is_null(),
        col("g").cast(DataType::UInt64).gt(0),
        (col("ts") - col("tz")).is_null(),
        (col("day") - col("day")).is_null(),
        (col("ts") + col("ts")).is_null(),
        col("s").fill_null("z").eq("z"),
        (col("s") + lit(1)).gt(0),
        col("day").gt(col("dday")),
        col("day").gt(lit("not a date")),
        col("flag").gt(1),
        col("day").gt(lit(18_000)),
        col("ny").dt_hour().eq(1),
        col("nowhere").dt_year().gt(2020),
        (col("nowhere") - col("nowhere")).is_null(),
        // A rounded constant under `==` and `!=`; calendar offsets and durations added
        // to columns; a tz-aware column against a date (the CPU rejects that).
        col("day").eq(instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None)),
        col("day").ne(instant(18_007 * DAY_NS + 1, TimeUnit::Nanosecond, None)),
        (col("day") + lit(Literal::Interval { months: 1, days: 0 })).gt(col("day")),
        (col("day")
            - lit(Literal::Duration {
                value: 86_400,
                unit: TimeUnit::Second,
            }))
        .lt(col("day")),
        col("tz").lt(lit(Literal::Date(18_628))),
        // String functions beyond a plain substring: the CPU's (LIKE `%text%` is one).
        col("s").like("a%"),
        col("s").like("%a%b%").not(),
        col("cat").like("a_c"),
        col("s").str(StrFunction::Contains(Pattern::regex("a.c"))),
        col("s").str(StrFunction::Contains(Pattern::plain("A").ignore_case(true))),
        col("s").str(StrFunction::Match(Pattern::regex("ab"))),
        col("t").str(StrFunction::FullMatch(Pattern::regex("é+"))),
        col("s")
            .str(StrFunction::Extract {
                pattern: Pattern::regex("(b)"),
                group: 1,
            })
            .is_null(),
        col("s")
            .str(StrFunction::ReplaceRegex {
                pattern: Pattern::regex("b"),
                repl: "c".into(),
            })
            .eq("acc"),
        col("s")
            .str(StrFunction::Slice {
                start: 0,
                stop: Some(2),
            })
            .eq("ab"),
    ]
}

/// Nanoseconds in a day.
const DAY_NS: i64 = 86_400_000_000_000;

/// A timestamp constant.
fn instant(value: i64, unit: TimeUnit, tz: Option<&str>) -> Expr {
    lit(Literal::Timestamp {
        value,
        unit,
        tz: tz.map(Into::into),
    })
}

/// The rows where the CPU evaluator finds `predicate` true, or `None` where it fails.
fn cpu_answer(predicate: &Expr, batch: &RecordBatch) -> Option<Vec<bool>> {
    let mask = predicate.evaluate(batch).ok()?;
    let mask = mask.as_boolean();
    Some(
        (0..mask.len())
            .map(|i| mask.is_valid(i) && mask.value(i))
            .collect(),
    )
}

/// `bytes` as a C initializer of an 8-byte aligned array named `name`.
fn bytes_decl(name: &str, bytes: &[u8]) -> String {
    let list: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!(
        "    alignas(8) static const unsigned char {name}[] = {{ {}{}0 }};\n",
        list.join(", "),
        if list.is_empty() { "" } else { ", " }
    )
}

/// The runner of case `k`: `batch`'s columns laid out as `gpu::frame` copies them in, as
/// the kernel's `ts_col` array; one thread runs the kernel (in namespace `ns`); prints its
/// faults word and the `rows + 1` flags.
fn runner(k: usize, ns: &str, kernel: &FilterKernel, batch: &RecordBatch) -> String {
    let mut s = format!("static void run_{k}() {{\n");
    let mut descs = Vec::new();
    for (j, KernelCol { name, part, kind }) in kernel.columns.iter().enumerate() {
        let column = batch.column_by_name(name).unwrap();
        let data = part.of(column).unwrap().to_data();
        let (offset, len) = (data.offset(), data.len());
        let offsets = match kind {
            ColKind::Utf8 => Some(4),
            ColKind::LargeUtf8 => Some(8),
            _ => None,
        };
        let (values, offs) = match offsets {
            Some(w) => (
                data.buffers()[1].as_slice().to_vec(),
                Some(data.buffers()[0].as_slice()[offset * w..(offset + len + 1) * w].to_vec()),
            ),
            None if *kind == ColKind::Bool => {
                let bits = data.buffers()[0].bit_slice(offset, len);
                (bits.as_slice().to_vec(), None)
            }
            None => {
                let w = data.data_type().primitive_width().unwrap();
                (
                    data.buffers()[0].as_slice()[offset * w..(offset + len) * w].to_vec(),
                    None,
                )
            }
        };
        s.push_str(&bytes_decl(&format!("d{j}"), &values));
        if let Some(o) = &offs {
            s.push_str(&bytes_decl(&format!("o{j}"), o));
        }
        let valid = data.nulls().filter(|n| n.null_count() > 0).map(|n| {
            s.push_str(&bytes_decl(&format!("v{j}"), n.inner().values()));
            n.offset()
        });
        descs.push(format!(
            "{{ {}, d{j}, {}, {}, {} }}",
            *kind as i64,
            if offs.is_some() {
                format!("o{j}")
            } else {
                "nullptr".into()
            },
            if valid.is_some() {
                format!("v{j}")
            } else {
                "nullptr".into()
            },
            valid.unwrap_or(0)
        ));
    }
    let rows = batch.num_rows();
    let _ = write!(
        s,
        "    static const ts_col cols[] = {{ {} }};\n    static unsigned flags[{}];\n    \
         memset(flags, 0xA5, sizeof(flags));\n    static int faults = 0;\n    threadIdx.x = 0; \
         blockIdx.x = 0; blockDim.x = 1; gridDim.x = 1;\n    {ns}::{}(cols, {rows}, flags, \
         &faults);\n    printf(\"F {k} %d\", faults);\n    for (int i = 0; i <= {rows}; ++i) \
         printf(\" %u\", flags[i]);\n    printf(\"\\n\");\n}}\n",
        if descs.is_empty() {
            "{}".to_string()
        } else {
            descs.join(", ")
        },
        rows + 1,
        kernel.name
    );
    s
}

/// Each predicate with the tables it is judged over: [`predicates`] over
/// [`awkward_table`], whole and sliced at an odd row; [`fault_predicates`] over
/// [`fault_table`], whole (the CPU fails), its safe rows (it does not), sliced within
/// them, and each failing row alone.
fn emulated_cases() -> Vec<(Expr, Vec<RecordBatch>)> {
    let table = awkward_table();
    let faults = fault_table();
    let mut cases: Vec<(Expr, Vec<RecordBatch>)> = predicates()
        .into_iter()
        .map(|p| (p, vec![table.clone(), table.slice(13, 37)]))
        .collect();
    for p in fault_predicates() {
        let mut over = vec![
            faults.clone(),
            faults.slice(0, SAFE_ROWS),
            faults.slice(1, 6),
        ];
        over.extend((SAFE_ROWS..faults.num_rows()).map(|row| faults.slice(row, 1)));
        // The table tests what it says: the CPU fails past the safe rows only.
        for batch in &over {
            let fails = batch.num_rows() != SAFE_ROWS && batch.num_rows() != 6;
            assert_eq!(cpu_answer(&p, batch).is_none(), fails, "{p} over {batch:?}");
        }
        cases.push((p, over));
    }
    cases
}

#[test]
#[allow(clippy::print_stderr)]
fn generated_filters_emulated_on_the_host_match_the_cpu() {
    let mut tu = String::from(SHIM);
    tu.push_str(FILTER_PRELUDE);
    tu.push_str(HELPERS);
    let mut runs = Vec::new();
    // Kernels are named by their source: two predicates may share one (`extern "C"`).
    let mut compiled = std::collections::HashMap::new();
    for (p, (predicate, batches)) in emulated_cases().iter().enumerate() {
        let kernel = filter_source(predicate, batches[0].schema_ref())
            .unwrap_or_else(|| panic!("no kernel for {predicate}"));
        let p = *compiled.entry(kernel.name.clone()).or_insert_with(|| {
            let own = kernel.source.strip_prefix(FILTER_PRELUDE).unwrap();
            let own = own.strip_prefix(HELPERS).unwrap();
            let _ = writeln!(tu, "namespace k{p} {{\n{own}}}");
            p
        });
        for batch in batches {
            tu.push_str(&runner(runs.len(), &format!("k{p}"), &kernel, batch));
            runs.push((predicate.clone(), batch.clone(), kernel.may_fault));
        }
    }
    tu.push_str("int main() {\n");
    for k in 0..runs.len() {
        let _ = writeln!(tu, "    run_{k}();");
    }
    tu.push_str("    return 0;\n}\n");
    let Some(out) = compile_and_run("filter", &tu) else {
        eprintln!("SKIPPED filter emulation: no C++ compiler (c++ or $CXX) was found");
        return;
    };
    let mut seen = 0;
    for line in out.lines() {
        let mut w = line.split_whitespace();
        assert_eq!(w.next(), Some("F"), "{line}");
        let k: usize = w.next().unwrap().parse().unwrap();
        let faulted = w.next().unwrap() != "0";
        let flags: Vec<u32> = w.map(|f| f.parse().unwrap()).collect();
        let (predicate, batch, may_fault) = &runs[k];
        let rows = batch.num_rows();
        assert_eq!(flags.len(), rows + 1, "{predicate}");
        let Some(want) = cpu_answer(predicate, batch) else {
            assert!(
                faulted,
                "{predicate} over {rows} rows: the CPU fails, the kernel did not"
            );
            assert!(*may_fault, "{predicate}: a fault where none may be");
            continue;
        };
        assert!(
            !faulted,
            "{predicate} over {rows} rows: a fault the CPU does not have"
        );
        assert_eq!(flags[rows], 0, "{predicate}: the last flag");
        let got: Vec<bool> = flags[..rows].iter().map(|&f| f == 1).collect();
        assert!(
            flags.iter().all(|&f| f <= 1),
            "{predicate}: flags {flags:?}"
        );
        assert_eq!(got, want, "{predicate} over {rows} rows");
        seen += 1;
    }
    let failing = runs
        .iter()
        .filter(|(p, b, _)| cpu_answer(p, b).is_none())
        .count();
    assert_eq!(seen + failing, runs.len());
    assert_eq!(out.lines().count(), runs.len());
}

#[test]
fn only_kernels_that_can_fail_read_their_faults_word() {
    let table = awkward_table();
    let quiet = [
        col("a").gt(0),
        col("ts").lt(col("ts")),
        col("c").cast(DataType::Float64).gt(0.0),
    ];
    for p in quiet {
        assert!(
            !filter_source(&p, table.schema_ref()).unwrap().may_fault,
            "{p}"
        );
    }
    let faults = fault_table();
    for p in fault_predicates() {
        assert!(
            filter_source(&p, faults.schema_ref()).unwrap().may_fault,
            "{p}"
        );
    }
    // A constant's cast is made once, so it fails even over no rows, where no row of a
    // kernel can fault: the device leaves an empty table with such a kernel to the CPU.
    let p = col("i8").gt(lit(300).cast(DataType::Int8));
    assert!(filter_source(&p, faults.schema_ref()).unwrap().may_fault);
    assert!(cpu_answer(&p, &faults.slice(0, 0)).is_none());
}

#[test]
fn predicates_the_generator_does_not_take_are_left_to_the_cpu() {
    let table = awkward_table();
    for predicate in refused() {
        assert!(
            filter_source(&predicate, table.schema_ref()).is_none(),
            "{predicate}"
        );
    }
    // A column it does not have is no kernel either (the CPU names the missing column).
    assert!(filter_source(&col("nope").gt(0), table.schema_ref()).is_none());
}

/// Decimals are the CPU's: a decimal column, a cast to a decimal or a decimal constant
/// gives no kernel (and no panic), so TPC-H's money filters run exactly on the CPU.
#[test]
fn decimal_predicates_are_left_to_the_cpu() {
    use arrow::array::{ArrayRef, Decimal128Array, Int64Array};
    use std::sync::Arc;
    let price = Decimal128Array::from(vec![Some(5), None, Some(7)])
        .with_precision_and_scale(15, 2)
        .unwrap();
    let table = RecordBatch::try_from_iter(vec![
        ("d", Arc::new(price) as ArrayRef),
        ("i", Arc::new(Int64Array::from(vec![1, 2, 3]))),
    ])
    .unwrap();
    let two = lit(Literal::decimal(200, 3, 2).unwrap());
    let refused = [
        col("d").between(0.05, 0.07),
        col("d").lt(24),
        (col("d") * (lit(1) - col("d"))).gt(0),
        col("d").cast(DataType::Float64).gt(0.0),
        col("d").is_null(),
        col("i").cast(DataType::Decimal128(5, 0)).gt(0),
        col("i").eq(two.clone()),
        col("i").gt(two.clone().cast(DataType::Int64)),
    ];
    for predicate in refused {
        // The CPU evaluates every one of them.
        assert!(predicate.evaluate(&table).is_ok(), "{predicate}");
        assert!(
            filter_source(&predicate, table.schema_ref()).is_none(),
            "{predicate}"
        );
    }
    assert!(!crate::filter_gen::may_take(
        &col("i").cast(DataType::Decimal128(5, 0)).gt(0)
    ));
}

#[test]
fn a_planner_sends_a_kept_filter_to_the_device_only_where_a_kernel_may_exist() {
    use tessera_kernels::frame::map::MapStep;
    use tessera_kernels::frame::ops::{FrameOp, Pipeline, Sink, Source};
    use tessera_kernels::ChunkOp;
    let table = awkward_table();
    let kept = |steps: Vec<MapStep>| {
        ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
            source: Source::Input,
            steps,
            sink: Sink::Table,
        }))
    };
    // Every predicate with a kernel has the shape; shapes are all a planner can check.
    for p in predicates() {
        assert!(crate::filter_gen::may_take(&p), "{p}");
        assert!(crate::Gpu::runs(&kept(vec![MapStep::Filter(p)])));
    }
    let cast = col("a").cast(DataType::Utf8).eq("1");
    assert!(!crate::filter_gen::may_take(&cast));
    for p in [col("s").like("PROMO%"), col("s").like("%a%b%").not()] {
        assert!(!crate::filter_gen::may_take(&p), "{p}");
        assert!(!crate::Gpu::runs(&kept(vec![MapStep::Filter(p)])));
    }
    assert!(crate::filter_gen::may_take(&col("s").like("%green%")));
    assert!(!crate::Gpu::runs(&kept(vec![MapStep::Filter(
        cast.clone()
    )])));
    // A `UInt64` column has the shape but no kernel: the device leaves it to the CPU.
    assert!(crate::filter_gen::may_take(&col("big").gt(0)));
    assert!(filter_source(&col("big").gt(0), table.schema_ref()).is_none());
    // A table without a filter stays the CPU's.
    let rename = MapStep::Rename(vec![("a".into(), "z".into())]);
    assert!(!crate::Gpu::runs(&kept(vec![rename.clone()])));
    assert!(crate::Gpu::runs(&kept(vec![
        rename,
        MapStep::Filter(cast),
        MapStep::Filter(col("a").gt(0))
    ])));
}

#[test]
fn a_filter_kernel_reads_each_column_once_and_is_named_by_its_source() {
    let table = awkward_table();
    let p = (col("b") + col("a")).gt(col("b")) & col("s").eq("x");
    let k = filter_source(&p, table.schema_ref()).unwrap();
    let read = |name: &str, part, kind| KernelCol {
        name: name.into(),
        part,
        kind,
    };
    assert_eq!(
        k.columns,
        [
            read("b", ColPart::Rows, ColKind::I32),
            read("a", ColPart::Rows, ColKind::I8),
            read("s", ColPart::Rows, ColKind::Utf8)
        ]
    );
    // A dictionary is read as its keys and its values; a date as its integers.
    let mixed = col("cat").eq("b") | col("cat").lt(col("lcat")) & col("day").gt(lit("2019-05-01"));
    assert_eq!(
        filter_source(&mixed, table.schema_ref()).unwrap().columns,
        [
            read("cat", ColPart::DictKeys, ColKind::I32),
            read("cat", ColPart::DictValues, ColKind::Utf8),
            read("lcat", ColPart::DictKeys, ColKind::U8),
            read("lcat", ColPart::DictValues, ColKind::LargeUtf8),
            read("day", ColPart::Rows, ColKind::I32),
        ]
    );
    assert!(k.name.starts_with("tessera_filter_"));
    assert!(k.source.contains(&format!("void {}(", k.name)));
    assert_eq!(filter_source(&p, table.schema_ref()), Some(k.clone()));
    let other = filter_source(&col("s").eq("y"), table.schema_ref()).unwrap();
    assert_ne!(other.name, k.name);
}

#[test]
fn cuda_every_generated_filter_compiles_with_nvrtc() {
    if nvrtc_or_skip("cuda_every_generated_filter_compiles_with_nvrtc").is_none() {
        return;
    }
    for (predicate, batches) in emulated_cases() {
        let k = filter_source(&predicate, batches[0].schema_ref()).unwrap();
        nvrtc::compile_source(&k.name, &k.source, "compute_90")
            .unwrap_or_else(|e| panic!("{predicate}: {e}"));
    }
}
