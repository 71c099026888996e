//! CUDA C for a dataframe filter's predicate: one `extern "C" __global__` kernel per
//! predicate and schema, which evaluates the [`Expr`] row by row in registers and writes a
//! flag per row (1 where the predicate is true, 0 where it is false or null; a last word 0,
//! so that the flags' exclusive prefix sum ends in the number of rows kept). `frame.cu`'s
//! scan and `ts_filter_place` then list the kept rows and its gathers copy the columns.
//!
//! # Values
//!
//! The CPU's ([`Expr::evaluate`]), value for value:
//! - integers of any width (not `UInt64`) are read as `i64`; `+ - *` wrap, `%` is floored
//!   and null for a zero divisor; floats (`Float32` widened exactly) are `f64` with IEEE
//!   `+ - * /` (`__d*_rn`, never contracted into FMA), `%` floored through `fmod`; `/` is
//!   always a float division; an integer meeting a float is converted as Arrow's cast does
//!   (`__ll2double_rn`, round to nearest);
//! - comparisons of numbers are IEEE for floats (NaN unequal to everything), in `i64`
//!   when both sides are integers or one side is a float literal with an integral value
//!   that fits (as the CPU then compares in the integer type), else in `f64`; strings
//!   (`Utf8`, `LargeUtf8`) compare byte by byte, a prefix first, as Arrow's kernels;
//! - booleans compare with booleans, `false` before `true`;
//! - a temporal column (`Date32`, `Date64`, `Timestamp`, `Time32`, `Time64`, `Duration`)
//!   is its integer, compared with a column of the same type or with a string constant,
//!   which is read as that type by Arrow's cast (as the CPU reads it) when the kernel is
//!   made, or with a date, timestamp or duration constant, read in the column's type as
//!   the CPU reads it (`Literal::ticks_in`; where that rounds, `==` and `!=` are left to
//!   the CPU); a timestamp minus a timestamp of its type is the `Duration` between them, in
//!   that unit (an overflow faults, as the CPU's checked subtraction fails), compared with
//!   durations of its unit; other temporal arithmetic is the CPU's;
//! - a dictionary of strings (integer keys, `Utf8` or `LargeUtf8` values) is the string
//!   its key names, null where the key or that value is;
//! - nulls propagate through arithmetic and comparisons; `&` and `|` are Kleene;
//!   `is_null`, `is_not_null`, `fill_null` (booleans, or numbers of the result type the
//!   CPU gives) and `str_contains` (a plain substring, which `like("%text%")` becomes) are
//!   supported; other string functions (regular expressions, other LIKE patterns) are not;
//! - casts as the CPU's strict cast does them: integers and booleans to every integer
//!   type but `UInt64` (a value out of range faults), floats to them (truncated; NaN,
//!   infinities and values out of range fault), numbers to `Float32` (rounded to nearest)
//!   and `Float64`, a temporal value to the integer it is stored as; a timestamp to its
//!   day (`Date32`), a timestamp to another unit (a zoneless one to a zone, too), a
//!   `Date32` to a `Date64` and back (values out of the target's range fault);
//! - date parts (`dt_year` … `dt_quarter`) of a `Date32`, `Date64` or `Timestamp` column,
//!   as Arrow's `date_part` gives them: the proleptic Gregorian calendar of the day
//!   (floored) since 1970-01-01, null outside chrono's range of years (which
//!   [`calendar_days`] reads from Arrow); a zoneless timestamp's hour, minute and second
//!   are defined for every value, a `Date32`'s are 0;
//! - a zoned timestamp's day and date parts are on its zone's wall clock, for a zone of
//!   one offset at every instant (an offset such as `+05:30`, or `UTC`, `Etc/GMT+5` and
//!   the database's other fixed zones: see `zones`);
//! - a row on which the CPU's evaluation fails (the faults above; nulls never fault, as
//!   the CPU checks valid values only) sets the kernel's faults word: the device then
//!   leaves the predicate to the CPU, which reports the error.
//!
//! Anything else — `UInt64` and decimal columns and constants, calendar offsets
//! (`Literal::Interval`), other casts, date parts and casts under zones whose
//! offset changes (summer time), functions, and any predicate the CPU would reject — has
//! no kernel ([`filter_source`] gives `None`), and the CPU evaluates the predicate.

use super::codegen::cexpr::{f64_lit, i64_lit};
use super::frame_plan::{ColKind, ColPart};
use arrow::array::timezone::Tz;
use arrow::array::{Array, StringArray};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Schema, TimeUnit};
use std::fmt::Write as _;
pub use tessera_kernels::frame::expr::zone::calendar_days;
use tessera_kernels::frame::expr::zone::{fixed_offset, ticks_per_second};
use tessera_kernels::frame::expr::{BinaryOperator, DatePart, Expr, Literal};
use tessera_kernels::frame::schema::column_index;
use twox_hash::XxHash3_64;

mod casts;
mod zones;
use casts::int_range;

/// The column readers every generated filter starts with (`frame_cols.cuh`).
pub const FILTER_PRELUDE: &str = include_str!("frame_cols.cuh");

/// Helpers of the generated predicates: floored modulo, byte-wise string order, substring.
pub(crate) const HELPERS: &str = r#"
static __device__ __forceinline__ ts_i64 ts_floor_mod(ts_i64 a, ts_i64 b) {
    if (b == 0 || b == -1) return 0;
    const ts_i64 m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}

static __device__ __forceinline__ double ts_floor_fmod(double a, double b) {
    const double m = fmod(a, b);
    return (m != 0.0 && ((m < 0.0) != (b < 0.0))) ? __dadd_rn(m, b) : m;
}

static __device__ int ts_str_cmp(const unsigned char* a, ts_i64 alen, const unsigned char* b, ts_i64 blen) {
    const ts_i64 n = alen < blen ? alen : blen;
    for (ts_i64 k = 0; k < n; ++k)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

// A double from its bits: how `f64_lit` writes NaN and the infinities.
static __device__ __forceinline__ double ts_bits_f64(ts_u64 b) { return __longlong_as_double((ts_i64)b); }

static __device__ __forceinline__ ts_i64 ts_floor_div(ts_i64 a, ts_i64 b) {
    const ts_i64 q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Part `part` (0 year, 1 month, 2 day, 3 hour, 4 minute, 5 second, 6 weekday from Monday,
// 7 day of the year, 8 quarter) of second `s` of day `z` since 1970-01-01, in the proleptic
// Gregorian calendar (Howard Hinnant's civil_from_days).
static __device__ ts_i64 ts_date_part(ts_i64 z, ts_i64 s, int part) {
    switch (part) {
    case 3: return s / 3600;
    case 4: return s / 60 % 60;
    case 5: return s % 60;
    case 6: { const ts_i64 w = (z + 3) % 7; return w < 0 ? w + 7 : w; }
    }
    const ts_i64 zz = z + 719468;
    const ts_i64 era = (zz >= 0 ? zz : zz - 146096) / 146097;
    const ts_i64 doe = zz - era * 146097;
    const ts_i64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const ts_i64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const ts_i64 mp = (5 * doy + 2) / 153;
    const ts_i64 m = mp < 10 ? mp + 3 : mp - 9;
    const ts_i64 y = yoe + era * 400 + (m <= 2);
    switch (part) {
    case 0: return y;
    case 1: return m;
    case 2: return doy - (153 * mp + 2) / 5 + 1;
    case 8: return (m - 1) / 3 + 1;
    }
    // The day of the year: `doy` counts from March 1.
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m >= 3 ? doy + 60 + leap : doy - 305;
}

static __device__ bool ts_str_has(const unsigned char* s, ts_i64 len, const unsigned char* p, ts_i64 plen) {
    for (ts_i64 at = 0; at + plen <= len; ++at) {
        ts_i64 k = 0;
        while (k < plen && s[at + k] == p[k]) ++k;
        if (k == plen) return true;
    }
    return false;
}
"#;

/// Threads per block of a filter kernel.
pub const FILTER_BLOCK: u32 = 256;

/// A generated predicate kernel: `NAME(const ts_col* cols, ts_i64 n, unsigned* flags,
/// int* faults)` writes `flags[0..=n]`, and ORs 1 into `*faults` (zero before the launch)
/// where a row makes the CPU's evaluation fail (an overflow, a value a strict cast cannot
/// take): the flags then stand for nothing, and the CPU evaluates the predicate, reporting
/// the error.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterKernel {
    /// The `extern "C"` symbol: `tessera_filter_` and the XXH3-64 of the source (hex).
    pub name: String,
    /// CUDA C++17 source for NVRTC: [`FILTER_PRELUDE`], then the kernel.
    pub source: String,
    /// The column parts the kernel reads, in the order of its `ts_col` array.
    pub columns: Vec<KernelCol>,
    /// Whether it may set its faults word (else the word stays 0 and need not be read).
    pub may_fault: bool,
}

/// A column part a generated kernel reads, and how it must be copied in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelCol {
    /// The table column's name.
    pub name: String,
    /// Which of its arrays.
    pub part: ColPart,
    /// The layout of that array on the device.
    pub kind: ColKind,
}

/// The kernel for `predicate` over a table of `schema`, or `None` where the predicate has a
/// part the generator does not take (see the module docs), which the CPU then evaluates.
pub fn filter_source(predicate: &Expr, schema: &Schema) -> Option<FilterKernel> {
    // What the CPU rejects (a type mismatch, a string no date reads as) the CPU reports.
    if !matches!(
        predicate.data_type(schema),
        Ok(DataType::Boolean | DataType::Null)
    ) {
        return None;
    }
    let mut g = Gen {
        schema,
        body: String::new(),
        consts: String::new(),
        next: 0,
        columns: Vec::new(),
        faults: Vec::new(),
    };
    let root = g.expr(predicate)?;
    if !matches!(root.cat, Cat::Bool | Cat::Null) {
        return None;
    }
    let mut text = String::from(FILTER_PRELUDE);
    text.push_str(HELPERS);
    text.push_str(&g.consts);
    let fault = match g.faults.is_empty() {
        true => String::new(),
        false => format!(
            "        if ({}) atomicOr(faults, 1);\n",
            g.faults.join(" || ")
        ),
    };
    let _ = write!(
        text,
        "\nextern \"C\" __global__ void TS_FILTER_NAME(const ts_col* __restrict__ c, ts_i64 n, \
         unsigned* __restrict__ flags, int* __restrict__ faults) {{\n    for (ts_i64 i = \
         blockIdx.x * (ts_i64)blockDim.x + threadIdx.x; i <= n; i += (ts_i64)gridDim.x * \
         blockDim.x) {{\n        if (i == n) {{ flags[n] = 0; continue; }}\n{}{fault}        \
         flags[i] = ({} && {}) ? 1u : 0u;\n    }}\n}}\n",
        g.body, root.ok, root.x
    );
    let name = format!(
        "tessera_filter_{:016x}",
        XxHash3_64::oneshot(text.as_bytes())
    );
    Some(FilterKernel {
        source: text.replace("TS_FILTER_NAME", &name),
        name,
        columns: g.columns,
        may_fault: !g.faults.is_empty(),
    })
}

/// Whether `predicate` is made only of the expressions the generator takes (columns and
/// constants under its operators), so that a kernel may exist for it once the column types
/// are known: what a planner can tell without the schema.
pub fn may_take(predicate: &Expr) -> bool {
    match predicate {
        Expr::Column(_) | Expr::Literal(_) => true,
        Expr::Binary { left, right, .. }
        | Expr::FillNull {
            expr: left,
            value: right,
        } => may_take(left) && may_take(right),
        Expr::Not(e)
        | Expr::Negate(e)
        | Expr::IsNull(e)
        | Expr::IsNotNull(e)
        | Expr::StrContains { expr: e, .. }
        | Expr::DatePart { expr: e, .. }
        | Expr::Alias { expr: e, .. } => may_take(e),
        Expr::Cast { expr, to } => {
            let number = matches!(to, DataType::Int64 | DataType::Float32 | DataType::Float64);
            let time = matches!(
                to,
                DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
            );
            (number || time || int_range(to).is_some()) && may_take(expr)
        }
        Expr::Function { .. } => false,
    }
}

/// What a generated value holds: the C types the generator computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cat {
    /// `ts_i64` (any integer type but `UInt64`).
    Int,
    /// `double` (`Float32` and `Float64`).
    Float,
    /// `bool`.
    Bool,
    /// A string's bytes (`const unsigned char*`) and length.
    Str,
    /// The null literal (every row null).
    Null,
}

/// A value in the kernel: C variables of its value (and length, for strings) and validity.
struct Val {
    cat: Cat,
    x: String,
    len: String,
    ok: String,
    /// The constant it is, if it is one.
    lit: Option<Literal>,
    /// The temporal type of an `Int` read from such a column.
    temporal: Option<DataType>,
}

/// The generator's state: statements of the loop body, constants, the columns read, and
/// the conditions under which a row makes the CPU fail.
struct Gen<'a> {
    schema: &'a Schema,
    body: String,
    consts: String,
    next: usize,
    columns: Vec<KernelCol>,
    faults: Vec<String>,
}

impl Gen<'_> {
    /// The `ts_col` slot of `part` of column `name`, read as `kind`.
    fn slot(&mut self, name: &str, part: ColPart, kind: ColKind) -> usize {
        let read = KernelCol {
            name: name.to_string(),
            part,
            kind,
        };
        match self.columns.iter().position(|c| *c == read) {
            Some(s) => s,
            None => {
                self.columns.push(read);
                self.columns.len() - 1
            }
        }
    }

    /// A fresh variable number.
    fn fresh(&mut self) -> usize {
        self.next += 1;
        self.next
    }

    /// Declares a value of `cat` computed by `x` with validity `ok`.
    fn define(&mut self, cat: Cat, x: &str, ok: &str) -> Val {
        let n = self.fresh();
        let ty = match cat {
            Cat::Int => "const ts_i64",
            Cat::Float => "const double",
            Cat::Bool | Cat::Null => "const bool",
            Cat::Str => "const unsigned char* const",
        };
        let _ = writeln!(
            self.body,
            "        {ty} x{n} = {x};\n        const bool ok{n} = {ok};"
        );
        Val {
            cat,
            x: format!("x{n}"),
            len: String::new(),
            ok: format!("ok{n}"),
            lit: None,
            temporal: None,
        }
    }

    /// A null of `cat` (every row).
    fn null(&mut self, cat: Cat) -> Val {
        let zero = match cat {
            Cat::Float => "0.0",
            Cat::Bool | Cat::Null => "false",
            Cat::Str => "nullptr",
            Cat::Int => "0",
        };
        let mut v = self.define(cat, zero, "false");
        if cat == Cat::Str {
            v.len = "0".into();
        }
        v
    }

    fn expr(&mut self, e: &Expr) -> Option<Val> {
        match e {
            Expr::Column(name) => self.column(name),
            Expr::Literal(l) => self.literal(l),
            Expr::Alias { expr, .. } => self.expr(expr),
            Expr::Binary { op, left, right } => {
                let (l, r) = (self.expr(left)?, self.expr(right)?);
                self.binary(*op, l, r)
            }
            Expr::Not(inner) => {
                let v = self.expr(inner)?;
                match v.cat {
                    Cat::Bool => Some(self.define(Cat::Bool, &format!("!{}", v.x), &v.ok)),
                    Cat::Null => Some(self.null(Cat::Bool)),
                    _ => None,
                }
            }
            Expr::Negate(inner) => {
                let v = self.expr(inner)?;
                if v.temporal.is_some() {
                    return None;
                }
                match v.cat {
                    Cat::Int => {
                        // A signed integer is negated in its own width, wrapping there (the
                        // CPU's `neg_wrapping` keeps the type); unsigned ones become `Int64`.
                        let width = match inner.data_type(self.schema).ok()? {
                            DataType::Int8 => "(signed char)",
                            DataType::Int16 => "(short)",
                            DataType::Int32 => "(int)",
                            _ => "",
                        };
                        let x = format!("(ts_i64){width}(0ULL - (ts_u64){})", v.x);
                        Some(self.define(Cat::Int, &x, &v.ok))
                    }
                    Cat::Float => Some(self.define(Cat::Float, &format!("-{}", v.x), &v.ok)),
                    Cat::Null => Some(self.null(Cat::Null)),
                    _ => None,
                }
            }
            Expr::IsNull(inner) => {
                let v = self.expr(inner)?;
                Some(self.define(Cat::Bool, &format!("!{}", v.ok), "true"))
            }
            Expr::IsNotNull(inner) => {
                let v = self.expr(inner)?;
                Some(self.define(Cat::Bool, &v.ok, "true"))
            }
            Expr::FillNull { expr, value } => {
                let out = cat_of(&e.data_type(self.schema).ok()?)?;
                let (a, b) = (self.expr(expr)?, self.expr(value)?);
                let (a, b) = (self.convert(a, out)?, self.convert(b, out)?);
                let x = format!("{} ? {} : {}", a.ok, a.x, b.x);
                Some(self.define(out, &x, &format!("{} || {}", a.ok, b.ok)))
            }
            Expr::StrContains { expr, pattern } => {
                let v = self.expr(expr)?;
                match v.cat {
                    Cat::Str => {
                        let p = self.bytes(pattern.as_bytes());
                        let x = format!(
                            "{} && ts_str_has({}, {}, {p}, {})",
                            v.ok,
                            v.x,
                            v.len,
                            pattern.len()
                        );
                        Some(self.define(Cat::Bool, &x, &v.ok))
                    }
                    Cat::Null => Some(self.null(Cat::Bool)),
                    _ => None,
                }
            }
            Expr::Cast { expr, to } => self.cast(expr, to),
            Expr::DatePart { expr, part } => self.date_part(expr, *part),
            Expr::Function { .. } => None,
        }
    }

    /// `part` of a `Date32`, `Date64` or `Timestamp` column's values, a timestamp's on
    /// its zone's wall clock where the zone has one offset (see the module docs); a null
    /// stays a null of the CPU's result type.
    fn date_part(&mut self, inner: &Expr, part: DatePart) -> Option<Val> {
        let v = self.expr(inner)?;
        if v.cat == Cat::Null {
            return Some(self.null(Cat::Int));
        }
        // Ticks per second (0: a Date32's days), and the zone's offset.
        let (per_second, zone) = match v.temporal.as_ref()? {
            DataType::Date32 => (0, None),
            DataType::Date64 => (1_000, None),
            DataType::Timestamp(unit, None) => (ticks_per_second(*unit), None),
            DataType::Timestamp(unit, Some(tz)) => {
                (ticks_per_second(*unit), Some(fixed_offset(tz)?))
            }
            _ => return None,
        };
        let code = match part {
            DatePart::Year => 0,
            DatePart::Month => 1,
            DatePart::Day => 2,
            DatePart::Hour => 3,
            DatePart::Minute => 4,
            DatePart::Second => 5,
            DatePart::Weekday => 6,
            DatePart::DayOfYear => 7,
            DatePart::Quarter => 8,
        };
        let time = matches!(part, DatePart::Hour | DatePart::Minute | DatePart::Second);
        if per_second == 0 {
            let ok = match time {
                true => v.ok.clone(),
                false => format!("{} && {}", v.ok, Self::calendar(&v.x, 0)),
            };
            let x = match time {
                true => "0".to_string(),
                false => format!("ts_date_part({}, 0, {code})", v.x),
            };
            return Some(self.define(Cat::Int, &x, &ok));
        }
        let clock = self.wall_clock(&v.x, per_second, zone.unwrap_or(0));
        // Arrow computes a zoneless timestamp's time of day without the calendar; a zoned
        // one's parts, and every other date part, through chrono, which dates the UTC
        // instants of a bounded range of days (the wall clock may be a day past them).
        let calendar_free = time && zone.is_none() && !matches!(v.temporal, Some(DataType::Date64));
        let ok = match calendar_free {
            true => v.ok.clone(),
            false => format!("{} && {}", v.ok, Self::calendar(&clock.utc_day, 0)),
        };
        let x = format!("ts_date_part({}, {}, {code})", clock.day, clock.second);
        Some(self.define(Cat::Int, &x, &ok))
    }

    /// A column's value at row `i`, read as its kind: the kind is known here, so the read
    /// goes through a pointer of its C type rather than `frame_cols.cuh`'s `ts_int_at` /
    /// `ts_float_at`, which switch on the kind at every row.
    fn column(&mut self, name: &str) -> Option<Val> {
        let field = self
            .schema
            .field(column_index(self.schema, name).ok()?)
            .clone();
        let dt = field.data_type();
        if let Some((keys, values)) = ColKind::dictionary(dt) {
            return Some(self.dictionary(name, keys, values));
        }
        let temporal = ColKind::temporal(dt);
        let kind = match dt {
            DataType::Boolean => ColKind::Bool,
            dt => temporal.or_else(|| ColKind::of(dt).filter(|k| *k != ColKind::U64))?,
        };
        let slot = self.slot(name, ColPart::Rows, kind);
        let ok = format!("ts_is_valid(c[{slot}], i)");
        let read = |ty: &str| format!("((const {ty}*)c[{slot}].data)[i]");
        Some(match kind {
            ColKind::Utf8 | ColKind::LargeUtf8 => {
                let n = self.fresh();
                let _ = writeln!(
                    self.body,
                    "        ts_i64 len{n};\n        const unsigned char* x{n} = \
                     ts_str_at(c[{slot}], i, &len{n});\n        const bool ok{n} = {ok};"
                );
                self.string(n)
            }
            ColKind::Bool => self.define(Cat::Bool, &format!("ts_bool_at(c[{slot}], i)"), &ok),
            ColKind::F32 => self.define(Cat::Float, &format!("(double){}", read("float")), &ok),
            ColKind::F64 => self.define(Cat::Float, &read("double"), &ok),
            int => {
                let mut v = self.define(Cat::Int, &format!("(ts_i64){}", read(c_int(int))), &ok);
                v.temporal = temporal.map(|_| dt.clone());
                v
            }
        })
    }

    /// A dictionary column's string at row `i`: its values' entry at its key, null where
    /// the key or that entry is (keys and values read as `keys` and `values`).
    fn dictionary(&mut self, name: &str, keys: ColKind, values: ColKind) -> Val {
        let ks = self.slot(name, ColPart::DictKeys, keys);
        let vs = self.slot(name, ColPart::DictValues, values);
        let n = self.fresh();
        let _ = writeln!(
            self.body,
            "        const ts_i64 k{n} = ts_is_valid(c[{ks}], i) ? (ts_i64)((const {}*)c[{ks}].data)[i] \
             : -1;\n        const bool ok{n} = k{n} >= 0 && ts_is_valid(c[{vs}], k{n});\n        \
             ts_i64 len{n} = 0;\n        const unsigned char* x{n} = ok{n} ? ts_str_at(c[{vs}], \
             k{n}, &len{n}) : nullptr;",
            c_int(keys)
        );
        self.string(n)
    }

    /// The string value declared as `x{n}`, `len{n}` and `ok{n}`.
    fn string(&self, n: usize) -> Val {
        Val {
            cat: Cat::Str,
            x: format!("x{n}"),
            len: format!("len{n}"),
            ok: format!("ok{n}"),
            lit: None,
            temporal: None,
        }
    }

    /// A constant's value.
    fn literal(&mut self, l: &Literal) -> Option<Val> {
        let mut v = match l {
            Literal::Null => self.null(Cat::Null),
            Literal::Bool(b) => self.define(Cat::Bool, if *b { "true" } else { "false" }, "true"),
            Literal::Int(i) => self.define(Cat::Int, &i64_lit(*i), "true"),
            Literal::Float(f) => self.define(Cat::Float, &f64_lit(*f), "true"),
            Literal::Str(s) => {
                let p = self.bytes(s.as_bytes());
                let mut v = self.define(Cat::Str, &p, "true");
                v.len = s.len().to_string();
                v
            }
            // Decimals are the CPU's (exact `i128` arithmetic).
            Literal::Decimal { .. } => return None,
            // Dates, timestamps and durations are the integers they are stored as.
            Literal::Date(_) | Literal::Timestamp { .. } | Literal::Duration { .. } => {
                let mut v = self.define(Cat::Int, &i64_lit(l.time_value()?), "true");
                v.temporal = Some(l.data_type());
                v
            }
            Literal::Interval { .. } => return None,
        };
        v.lit = Some(l.clone());
        Some(v)
    }

    /// A device constant holding `bytes`; its name.
    fn bytes(&mut self, bytes: &[u8]) -> String {
        let n = self.fresh();
        let list: Vec<String> = bytes.iter().map(u8::to_string).collect();
        // One byte more, so that an empty string is a valid array.
        let _ = writeln!(
            self.consts,
            "static __device__ const unsigned char ts_lit{n}[] = {{ {}{}0 }};",
            list.join(", "),
            if list.is_empty() { "" } else { ", " }
        );
        format!("ts_lit{n}")
    }

    /// `v` as a value of `to` (`Int` to `Float` rounds as Arrow's cast; a float constant
    /// becomes an integer only where its value is one), or `None` where it cannot be.
    fn convert(&mut self, v: Val, to: Cat) -> Option<Val> {
        match (v.cat, to) {
            (a, b) if a == b => Some(v),
            (Cat::Null, _) => Some(self.null(to)),
            (Cat::Int, Cat::Float) => {
                Some(self.define(Cat::Float, &format!("__ll2double_rn({})", v.x), &v.ok))
            }
            (Cat::Float, Cat::Int) => match v.lit {
                Some(Literal::Float(f)) if integral(f) => {
                    Some(self.define(Cat::Int, &i64_lit(f as i64), "true"))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// String constant `v` read as temporal type `dt` (as the CPU reads it, by Arrow's
    /// cast), as the integer it is; `None` where `v` is no string constant.
    fn time_constant(&mut self, v: &Val, dt: &DataType) -> Option<Val> {
        let Some(Literal::Str(text)) = &v.lit else {
            return None;
        };
        let strict = CastOptions {
            safe: false,
            ..CastOptions::default()
        };
        let read = cast_with_options(&StringArray::from(vec![text.as_str()]), dt, &strict).ok()?;
        let data = read.to_data();
        let bytes = data.buffers().first()?.as_slice();
        let value = match dt.primitive_width()? {
            4 => i64::from(i32::from_le_bytes(bytes.get(..4)?.try_into().ok()?)),
            8 => i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?),
            _ => return None,
        };
        let mut out = self.define(Cat::Int, &i64_lit(value), "true");
        out.temporal = Some(dt.clone());
        Some(out)
    }

    fn binary(&mut self, op: BinaryOperator, l: Val, r: Val) -> Option<Val> {
        use BinaryOperator::*;
        match op {
            Add | Sub | Mul | Div | Mod => self.arithmetic(op, l, r),
            Eq | NotEq | Lt | LtEq | Gt | GtEq => self.compare(op, l, r),
            And | Or => {
                let boolish = |v: &Val| matches!(v.cat, Cat::Bool | Cat::Null);
                if !boolish(&l) || !boolish(&r) {
                    return None;
                }
                // Kleene: a false (true for `|`) operand decides; else null if either is.
                let (x, ok) = if op == And {
                    (
                        format!("{} && {} && {} && {}", l.ok, l.x, r.ok, r.x),
                        format!(
                            "({} && {}) || ({} && !{}) || ({} && !{})",
                            l.ok, r.ok, l.ok, l.x, r.ok, r.x
                        ),
                    )
                } else {
                    (
                        format!("({} && {}) || ({} && {})", l.ok, l.x, r.ok, r.x),
                        format!(
                            "({} && {}) || ({} && {}) || ({} && {})",
                            l.ok, r.ok, l.ok, l.x, r.ok, r.x
                        ),
                    )
                };
                Some(self.define(Cat::Bool, &x, &ok))
            }
        }
    }

    fn arithmetic(&mut self, op: BinaryOperator, l: Val, r: Val) -> Option<Val> {
        if let (Some(DataType::Timestamp(unit, tz)), BinaryOperator::Sub) = (&l.temporal, op) {
            // Arrow reads the zone first, and fails on one it cannot (a name, in a build
            // without a zone database): that the CPU reports.
            let zone_reads = tz.as_deref().is_none_or(|tz| tz.parse::<Tz>().is_ok());
            if l.temporal == r.temporal && zone_reads {
                let unit = *unit;
                return Some(self.duration(l, r, unit));
            }
        }
        let number = |v: &Val| matches!(v.cat, Cat::Int | Cat::Float | Cat::Null);
        if !number(&l) || !number(&r) || l.temporal.is_some() || r.temporal.is_some() {
            return None;
        }
        if l.cat == Cat::Null && r.cat == Cat::Null {
            return Some(self.null(Cat::Null));
        }
        let float = op == BinaryOperator::Div || l.cat == Cat::Float || r.cat == Cat::Float;
        let cat = if float { Cat::Float } else { Cat::Int };
        let (a, b) = (self.convert(l, cat)?, self.convert(r, cat)?);
        let both = format!("{} && {}", a.ok, b.ok);
        let (x, ok) = match (cat, op) {
            (Cat::Int, BinaryOperator::Mod) => (
                format!("ts_floor_mod({}, {})", a.x, b.x),
                format!("{both} && {} != 0", b.x),
            ),
            (Cat::Int, op) => {
                let sign = match op {
                    BinaryOperator::Add => "+",
                    BinaryOperator::Sub => "-",
                    _ => "*",
                };
                (
                    format!("(ts_i64)((ts_u64){} {sign} (ts_u64){})", a.x, b.x),
                    both,
                )
            }
            (_, BinaryOperator::Mod) => (format!("ts_floor_fmod({}, {})", a.x, b.x), both),
            (_, op) => {
                let f = match op {
                    BinaryOperator::Add => "__dadd_rn",
                    BinaryOperator::Sub => "__dsub_rn",
                    BinaryOperator::Mul => "__dmul_rn",
                    _ => "__ddiv_rn",
                };
                (format!("{f}({}, {})", a.x, b.x), both)
            }
        };
        Some(self.define(cat, &x, &ok))
    }

    /// The `Duration` from timestamp `r` to timestamp `l` (both of `unit` and zone): the
    /// CPU's checked subtraction, which fails on an overflow in a row where both are valid.
    fn duration(&mut self, l: Val, r: Val, unit: TimeUnit) -> Val {
        let ok = format!("{} && {}", l.ok, r.ok);
        let mut v = self.define(
            Cat::Int,
            &format!("(ts_i64)((ts_u64){} - (ts_u64){})", l.x, r.x),
            &ok,
        );
        // Signed overflow: the operands' signs differ and the result's is not the left's.
        self.faults.push(format!(
            "({ok} && ((({a} ^ {b}) & ({a} ^ {d})) < 0))",
            a = l.x,
            b = r.x,
            d = v.x
        ));
        v.temporal = Some(DataType::Duration(unit));
        v
    }

    /// A date, timestamp or duration constant compared with a temporal value of another
    /// type, read in that type as the CPU reads it ([`Literal::ticks_in`]): rounded down,
    /// with `<` as `<=` and `>=` as `>` where that lost a fraction of a tick (and no kernel
    /// for `==` and `!=` then). The operands as they are where neither side is one.
    fn read_time_constant(
        &mut self,
        op: BinaryOperator,
        l: Val,
        r: Val,
    ) -> Option<(BinaryOperator, Val, Val)> {
        use BinaryOperator::*;
        // The CPU reads the right constant first, then the left one.
        let right = r.lit.as_ref().zip(l.temporal.as_ref());
        let left = l.lit.as_ref().zip(r.temporal.as_ref());
        let (read, dt, constant_right) = match (right, left) {
            (Some((c, dt)), _) if c.ticks_in(dt).is_some() => (c.ticks_in(dt)?, dt, true),
            (_, Some((c, dt))) if c.ticks_in(dt).is_some() => (c.ticks_in(dt)?, dt, false),
            _ => return Some((op, l, r)),
        };
        // A mismatch the CPU reports (`filter_source` rejects it before this).
        let (value, exact) = read.ok()?;
        let op = match (op, exact) {
            (op, true) => op,
            (Lt | LtEq, false) if constant_right => LtEq,
            (Gt | GtEq, false) if constant_right => Gt,
            // `c < v` is `v > c`: with `c` rounded down, `v > c` still.
            (Lt | LtEq, false) => Lt,
            (Gt | GtEq, false) => GtEq,
            _ => return None,
        };
        let dt = dt.clone();
        let mut c = self.define(Cat::Int, &i64_lit(value), "true");
        c.temporal = Some(dt);
        Some(match constant_right {
            true => (op, l, c),
            false => (op, c, r),
        })
    }

    fn compare(&mut self, op: BinaryOperator, l: Val, r: Val) -> Option<Val> {
        use BinaryOperator::*;
        if l.cat == Cat::Null || r.cat == Cat::Null {
            return Some(self.null(Cat::Bool));
        }
        let (op, l, r) = self.read_time_constant(op, l, r)?;
        let sign = match op {
            Eq => "==",
            NotEq => "!=",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            _ => ">=",
        };
        let (l, r) = match (&l.temporal, &r.temporal) {
            (None, None) => (l, r),
            (Some(a), Some(b)) if a == b => (l, r),
            (Some(dt), None) => {
                let dt = dt.clone();
                (l, self.time_constant(&r, &dt)?)
            }
            (None, Some(dt)) => {
                let dt = dt.clone();
                (self.time_constant(&l, &dt)?, r)
            }
            _ => return None,
        };
        let both = format!("{} && {}", l.ok, r.ok);
        let x = match (l.cat, r.cat) {
            (Cat::Bool, Cat::Bool) => format!("(int){} {sign} (int){}", l.x, r.x),
            (Cat::Str, Cat::Str) => format!(
                "ts_str_cmp({}, {}, {}, {}) {sign} 0",
                l.x, l.len, r.x, r.len
            ),
            (Cat::Int | Cat::Float, Cat::Int | Cat::Float) => {
                // In i64 when both are integers, or one is and the other a float constant
                // of an integral value (the CPU then compares in the integer type).
                let int_lit = |v: &Val| matches!(v.lit, Some(Literal::Float(f)) if integral(f));
                let ints = (l.cat == Cat::Int || int_lit(&l)) && (r.cat == Cat::Int || int_lit(&r));
                let cat = if ints { Cat::Int } else { Cat::Float };
                let (a, b) = (self.convert(l, cat)?, self.convert(r, cat)?);
                format!("{} {sign} {}", a.x, b.x)
            }
            _ => return None,
        };
        Some(self.define(Cat::Bool, &x, &both))
    }
}

/// The C type of an integer column kind's values.
fn c_int(kind: ColKind) -> &'static str {
    match kind {
        ColKind::I8 => "signed char",
        ColKind::I16 => "short",
        ColKind::I32 => "int",
        ColKind::U8 => "unsigned char",
        ColKind::U16 => "unsigned short",
        ColKind::U32 => "unsigned",
        ColKind::U64 => "unsigned long long",
        _ => "ts_i64",
    }
}

/// Whether a float constant converts to `i64` without loss, as the CPU's rule for
/// comparing it with an integer column (`Literal::fits`) requires.
fn integral(f: f64) -> bool {
    f.fract() == 0.0 && f.abs() < 9.2e18
}

/// The generator's value kind of an Arrow type (`None` for the ones it does not take).
fn cat_of(dt: &DataType) -> Option<Cat> {
    match dt {
        DataType::Boolean => Some(Cat::Bool),
        DataType::Null => Some(Cat::Null),
        DataType::Float32 | DataType::Float64 => Some(Cat::Float),
        DataType::UInt64 => None,
        dt if dt.is_integer() => Some(Cat::Int),
        _ => None,
    }
}
