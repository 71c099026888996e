//! The accumulators: per-group aggregation state of each function, updated from input
//! chunks and merged from partials.

use super::decimal::{decimal_to_f64, DecimalSumAcc};
use super::*;
use arrow::datatypes::{Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type};

// ---------------------------------------------------------------------------------------------
// Typed loops

/// A primitive native value as an accumulator operand.
pub(super) trait Num: ArrowNativeType + PartialOrd {
    fn as_i64(self) -> i64;
    fn as_f64(self) -> f64;
    fn is_nan(self) -> bool;
}

macro_rules! num {
    ($($t:ty: $is_nan:expr),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn as_i64(self) -> i64 { self as i64 }
            #[inline(always)]
            fn as_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn is_nan(self) -> bool {
                let is_nan: fn($t) -> bool = $is_nan;
                is_nan(self)
            }
        }
    )*};
}
num!(i8: |_| false, i16: |_| false, i32: |_| false, i64: |_| false);
num!(u8: |_| false, u16: |_| false, u32: |_| false, u64: |_| false);
num!(f32: f32::is_nan, f64: f64::is_nan);

/// A sum accumulator: i64 (wrapping) or f64.
pub(super) trait AccNum: Num + Default {
    type Arrow: ArrowPrimitiveType<Native = Self>;
    fn from_num<N: Num>(n: N) -> Self;
    fn add(self, other: Self) -> Self;
}

impl AccNum for i64 {
    type Arrow = Int64Type;
    #[inline(always)]
    fn from_num<N: Num>(n: N) -> Self {
        n.as_i64()
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl AccNum for f64 {
    type Arrow = Float64Type;
    #[inline(always)]
    fn from_num<N: Num>(n: N) -> Self {
        n.as_f64()
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self + other
    }
}

/// Calls `f(group, value)` for each non-null row of `a`, row `i` being in group `ids[i]`.
#[inline(always)]
pub(super) fn for_each_valid<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    ids: &[u32],
    mut f: impl FnMut(usize, T::Native),
) {
    let values = a.values();
    match a.nulls().filter(|n| n.null_count() > 0) {
        None => ids
            .iter()
            .zip(values.iter())
            .for_each(|(&g, &v)| f(g as usize, v)),
        Some(nulls) => nulls.valid_indices().for_each(|i| {
            if let (Some(&g), Some(&v)) = (ids.get(i), values.get(i)) {
                f(g as usize, v)
            }
        }),
    }
}

/// The sum of `f` of the non-null values of `a`; in 8 independent lanes (which vectorize)
/// when there are no nulls.
pub(super) fn sum_lanes<T, A>(a: &PrimitiveArray<T>, f: impl Fn(T::Native) -> A) -> A
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    let values = a.values();
    if let Some(nulls) = a.nulls().filter(|n| n.null_count() > 0) {
        let valid = nulls.valid_indices().filter_map(|i| values.get(i));
        return valid.fold(A::default(), |s, &v| s.add(f(v)));
    }
    let chunks = values.chunks_exact(8);
    let rest = chunks
        .remainder()
        .iter()
        .fold(A::default(), |s, &v| s.add(f(v)));
    let lanes = chunks.fold([A::default(); 8], |mut lanes, chunk| {
        lanes
            .iter_mut()
            .zip(chunk)
            .for_each(|(l, &v)| *l = l.add(f(v)));
        lanes
    });
    lanes.into_iter().fold(rest, A::add)
}

/// Adds the non-null values of `a` into `acc[group]`.
fn add_into<T, A>(acc: &mut [A], rows: &Rows, a: &PrimitiveArray<T>)
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    if rows.single {
        if let Some(s) = acc.first_mut() {
            *s = s.add(sum_lanes(a, A::from_num));
        }
        return;
    }
    let no_nulls = a.nulls().is_none_or(|n| n.null_count() == 0);
    if no_nulls && rows.n_groups <= LANED_MAX_GROUPS && rows.n_groups * 8 <= rows.ids.len() {
        return add_laned(acc, rows, a);
    }
    for_each_valid(a, rows.ids, |g, v| {
        if let Some(s) = acc.get_mut(g) {
            *s = s.add(A::from_num(v));
        }
    });
}

/// Most groups for [`add_laned`]: its `LANES` copies of the sums stay in the L2 cache.
pub(super) const LANED_MAX_GROUPS: usize = 1 << 15;

/// [`add_into`] for a column without nulls and few groups (see [`add_laned_with`]).
fn add_laned<T, A>(acc: &mut [A], rows: &Rows, a: &PrimitiveArray<T>)
where
    T: ArrowPrimitiveType,
    T::Native: Num,
    A: AccNum,
{
    add_laned_with(acc, rows.ids, a.values(), A::from_num, A::add);
}

/// `acc[ids[i]] = add(acc[ids[i]], from(values[i]))` for every row, where row `i` adds into
/// copy `i % LANES` of its group's sum, so runs of rows of one group (sorted keys, few
/// groups) do not wait on each other's additions; the copies are then added in lane order
/// (deterministic). For few groups: see [`LANED_MAX_GROUPS`].
pub(super) fn add_laned_with<V: Copy, S: Copy + Default>(
    acc: &mut [S],
    ids: &[u32],
    values: &[V],
    from: impl Fn(V) -> S,
    add: impl Fn(S, S) -> S,
) {
    const LANES: usize = 4;
    let mut lanes = vec![S::default(); acc.len() * LANES];
    let id_chunks = ids.chunks_exact(LANES);
    let value_chunks = values.chunks_exact(LANES);
    let (id_tail, value_tail) = (id_chunks.remainder(), value_chunks.remainder());
    for (g, v) in id_chunks.zip(value_chunks) {
        for lane in 0..LANES {
            if let Some(s) = lanes.get_mut(g[lane] as usize * LANES + lane) {
                *s = add(*s, from(v[lane]));
            }
        }
    }
    for (&g, &v) in id_tail.iter().zip(value_tail) {
        if let Some(s) = lanes.get_mut(g as usize * LANES) {
            *s = add(*s, from(v));
        }
    }
    for (s, l) in acc.iter_mut().zip(lanes.chunks_exact(LANES)) {
        *s = l.iter().fold(*s, |s, &x| add(s, x));
    }
}

/// Runs `$body` with `$a` the `PrimitiveArray<T>` view of `$values`, for a numeric (or
/// temporal) array; a type error otherwise.
macro_rules! with_primitive_array {
    ($values:expr, $a:ident => $body:expr) => {{
        let values: &ArrayRef = $values;
        with_primitive_type!(values.data_type(), T => {
            let $a = values.as_primitive::<T>();
            $body
        }, other => return Err(FrameError::TypeMismatch(format!("unexpected column type {other}"))))
    }};
}

/// Booleans as 0/1 bytes with the same nulls; other arrays as they are.
pub(super) fn bool_to_u8(a: &ArrayRef) -> ArrayRef {
    match a.as_boolean_opt() {
        Some(b) => {
            let values: ScalarBuffer<u8> = b.values().iter().map(u8::from).collect();
            Arc::new(PrimitiveArray::<UInt8Type>::new(values, b.nulls().cloned()))
        }
        None => a.clone(),
    }
}

/// Float NaNs made nulls (pandas treats NaN as missing); other arrays as they are.
pub(super) fn nan_to_null(a: &ArrayRef) -> ArrayRef {
    fn go<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Option<ArrayRef>
    where
        T::Native: Num,
    {
        // Blocks folded without short-circuit vectorize; stop at the first block with a NaN.
        let has_nan = a.values().chunks(1024).any(|block| {
            block
                .iter()
                .fold(0u8, |seen, &v| seen | u8::from(v.is_nan()))
                != 0
        });
        if !has_nan {
            return None;
        }
        let valid: NullBuffer = a.values().iter().map(|v| !v.is_nan()).collect();
        let nulls = NullBuffer::union(a.nulls(), Some(&valid));
        Some(Arc::new(PrimitiveArray::<T>::new(
            a.values().clone(),
            nulls,
        )))
    }
    let converted = match a.data_type() {
        DataType::Float32 => go(a.as_primitive::<arrow::datatypes::Float32Type>()),
        DataType::Float64 => go(a.as_primitive::<Float64Type>()),
        _ => None,
    };
    converted.unwrap_or_else(|| a.clone())
}

/// The rows an accumulator is given: row `i` is in group `ids[i] < n_groups`.
pub(super) struct Rows<'a> {
    pub(super) ids: &'a [u32],
    pub(super) n_groups: usize,
    /// Every row is in group 0 (no key columns): reductions take their fast paths.
    pub(super) single: bool,
    /// Rows per group, computed when first asked.
    pub(super) sizes: OnceCell<Vec<i64>>,
}

impl Rows<'_> {
    fn sizes(&self) -> &[i64] {
        self.sizes.get_or_init(|| {
            let mut sizes = vec![0i64; self.n_groups];
            if self.single {
                sizes.fill(self.ids.len() as i64);
                return sizes;
            }
            for &g in self.ids {
                if let Some(s) = sizes.get_mut(g as usize) {
                    *s += 1;
                }
            }
            sizes
        })
    }
}

/// The per-group state of one aggregation.
pub(super) trait Accumulator {
    /// Adds the rows of one chunk; `values` is the aggregation's input column.
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()>;
    /// Adds the rows of one partial table; `states` are the aggregation's state columns.
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()>;
    /// The state columns, one row per group.
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>>;
}

pub(super) fn state_column(states: &[ArrayRef], i: usize) -> FrameResult<&ArrayRef> {
    states
        .get(i)
        .ok_or_else(|| FrameError::InvalidArgument("missing state column".to_string()))
}

/// The non-null values of state column `a` (of `A`'s type) added into `acc`.
fn add_state<A: AccNum>(acc: &mut [A], rows: &Rows, a: &ArrayRef) -> FrameResult<()> {
    match a.as_primitive_opt::<A::Arrow>() {
        Some(a) => {
            add_into(acc, rows, a);
            Ok(())
        }
        None => Err(FrameError::TypeMismatch(format!(
            "state column of type {}, expected {}",
            a.data_type(),
            A::Arrow::DATA_TYPE
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Accumulators

/// Sum into i64 (integers, booleans) or f64 (floats).
struct SumAcc<A> {
    sum: Vec<A>,
}

impl<A: AccNum> Accumulator for SumAcc<A> {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, A::default());
        let values = bool_to_u8(values);
        with_primitive_array!(&values, a => add_into(&mut self.sum, rows, a));
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.sum.resize(rows.n_groups, A::default());
        add_state(&mut self.sum, rows, state_column(states, 0)?)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let sum = std::mem::take(&mut self.sum);
        Ok(vec![Arc::new(PrimitiveArray::<A::Arrow>::new(
            sum.into(),
            None,
        ))])
    }
}

/// Count of non-null values (or of rows, for size).
struct CountAcc {
    count: Vec<i64>,
    /// Counts rows, nulls included.
    size: bool,
}

impl Accumulator for CountAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.count.resize(rows.n_groups, 0);
        match values
            .logical_nulls()
            .filter(|n| !self.size && n.null_count() > 0)
        {
            None => self
                .count
                .iter_mut()
                .zip(rows.sizes())
                .for_each(|(c, s)| *c += s),
            Some(nulls) => nulls.valid_indices().for_each(|i| {
                if let Some(c) = rows
                    .ids
                    .get(i)
                    .and_then(|&g| self.count.get_mut(g as usize))
                {
                    *c += 1;
                }
            }),
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.count.resize(rows.n_groups, 0);
        add_state(&mut self.count, rows, state_column(states, 0)?)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let count = std::mem::take(&mut self.count);
        Ok(vec![Arc::new(PrimitiveArray::<Int64Type>::from(count))])
    }
}

/// Sum (a float sum, or an exact decimal one) and count for the mean.
struct MeanAcc {
    sum: Box<dyn Accumulator>,
    count: CountAcc,
}

impl Accumulator for MeanAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.sum.update(values, rows)?;
        self.count.update(values, rows)
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.sum.merge(states.get(..1).unwrap_or_default(), rows)?;
        self.count.merge(states.get(1..).unwrap_or_default(), rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let mut out = self.sum.state()?;
        out.extend(self.count.state()?);
        Ok(out)
    }
}

/// Count, mean and sum of squared deviations (M2) per group, for var and std.
#[derive(Default)]
struct MomentsAcc {
    n: Vec<i64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl MomentsAcc {
    fn resize(&mut self, n: usize) {
        self.n.resize(n, 0);
        self.mean.resize(n, 0.0);
        self.m2.resize(n, 0.0);
    }

    /// Combines `(n, mean, m2)` of more values into group `g` (Chan et al.'s formula).
    #[inline(always)]
    fn combine(&mut self, g: usize, n_b: i64, mean_b: f64, m2_b: f64) {
        let (Some(n), Some(mean), Some(m2)) =
            (self.n.get_mut(g), self.mean.get_mut(g), self.m2.get_mut(g))
        else {
            return;
        };
        if n_b == 0 {
            return;
        }
        let n_a = *n as f64;
        let total = *n + n_b;
        let delta = mean_b - *mean;
        let share = n_b as f64 / total as f64;
        *mean += delta * share;
        *m2 += m2_b + delta * delta * n_a * share;
        *n = total;
    }
}

impl Accumulator for MomentsAcc {
    /// Two passes over the chunk (sums, then squared deviations from the chunk's group
    /// means), then one combination per group: stable, and no division per row.
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.resize(rows.n_groups);
        let values = bool_to_u8(&decimal_to_f64(values)?);
        let mut n = vec![0i64; rows.n_groups];
        let mut mean = vec![0f64; rows.n_groups];
        let mut m2 = vec![0f64; rows.n_groups];
        with_primitive_array!(&values, a => {
            if rows.single {
                let n = (a.len() - a.null_count()) as i64;
                let mean = sum_lanes(a, |v| v.as_f64()) / n.max(1) as f64;
                let m2 = sum_lanes(a, |v| (v.as_f64() - mean) * (v.as_f64() - mean));
                self.combine(0, n, mean, m2);
                return Ok(());
            }
            for_each_valid(a, rows.ids, |g, v| {
                if let (Some(n), Some(s)) = (n.get_mut(g), mean.get_mut(g)) {
                    *n += 1;
                    *s += v.as_f64();
                }
            });
            mean.iter_mut().zip(&n).for_each(|(m, &n)| *m /= n.max(1) as f64);
            for_each_valid(a, rows.ids, |g, v| {
                if let (Some(m), Some(q)) = (mean.get(g), m2.get_mut(g)) {
                    let d = v.as_f64() - m;
                    *q += d * d;
                }
            });
        });
        for (g, ((n, mean), m2)) in n.into_iter().zip(mean).zip(m2).enumerate() {
            self.combine(g, n, mean, m2);
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.resize(rows.n_groups);
        let typed = (
            state_column(states, 0)?.as_primitive_opt::<Int64Type>(),
            state_column(states, 1)?.as_primitive_opt::<Float64Type>(),
            state_column(states, 2)?.as_primitive_opt::<Float64Type>(),
        );
        let (Some(n), Some(mean), Some(m2)) = typed else {
            return Err(FrameError::TypeMismatch(
                "var/std states must be Int64, Float64, Float64".to_string(),
            ));
        };
        let rows_iter = rows
            .ids
            .iter()
            .zip(n.values())
            .zip(mean.values())
            .zip(m2.values());
        for (((&g, &n), &mean), &m2) in rows_iter {
            self.combine(g as usize, n, mean, m2);
        }
        Ok(())
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let MomentsAcc { n, mean, m2 } = std::mem::take(self);
        Ok(vec![
            Arc::new(PrimitiveArray::<Int64Type>::from(n)),
            Arc::new(PrimitiveArray::<Float64Type>::from(mean)),
            Arc::new(PrimitiveArray::<Float64Type>::from(m2)),
        ])
    }
}

/// The validity of groups whose flag is set.
fn valid_where(has: &[bool]) -> Option<NullBuffer> {
    has.contains(&false).then(|| has.iter().copied().collect())
}

/// Min or max of primitive values (booleans as 0/1), kept as native values.
struct MinMaxAcc<T: ArrowPrimitiveType, const MAX: bool> {
    best: Vec<T::Native>,
    has: Vec<bool>,
    /// The input (and result) type.
    out: DataType,
}

impl<T, const MAX: bool> Accumulator for MinMaxAcc<T, MAX>
where
    T: ArrowPrimitiveType,
    T::Native: PartialOrd,
{
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.best.resize(rows.n_groups, T::Native::default());
        self.has.resize(rows.n_groups, false);
        let values = bool_to_u8(values);
        let Some(a) = values.as_primitive_opt::<T>() else {
            return Err(FrameError::TypeMismatch(format!(
                "min/max of a column of type {}, expected {}",
                values.data_type(),
                self.out
            )));
        };
        let (best, has) = (&mut self.best, &mut self.has);
        for_each_valid(a, rows.ids, |g, v| {
            if let (Some(b), Some(h)) = (best.get_mut(g), has.get_mut(g)) {
                if !*h || (MAX && v > *b) || (!MAX && v < *b) {
                    *b = v;
                    *h = true;
                }
            }
        });
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let nulls = valid_where(&self.has);
        let best = ScalarBuffer::from(std::mem::take(&mut self.best));
        let array = PrimitiveArray::<T>::try_new(best, nulls)?;
        let out: ArrayRef = match self.out {
            DataType::Boolean => cast(&array, &DataType::Boolean)?,
            _ => Arc::new(array.with_data_type(self.out.clone())),
        };
        Ok(vec![out])
    }
}

/// Min or max of strings (byte order, which is code point order), kept in an arena.
struct StrMinMaxAcc<const MAX: bool> {
    arena: Vec<u8>,
    /// The arena range of each group's extreme, if any.
    best: Vec<Option<(usize, usize)>>,
    /// The input (and result) type.
    out: DataType,
}

impl<const MAX: bool> StrMinMaxAcc<MAX> {
    fn update_strings<O: OffsetSizeTrait>(&mut self, a: &GenericStringArray<O>, ids: &[u32]) {
        let (arena, best) = (&mut self.arena, &mut self.best);
        let mut visit = |i: usize| {
            let Some(b) = ids.get(i).and_then(|&g| best.get_mut(g as usize)) else {
                return;
            };
            let s = a.value(i).as_bytes();
            let better = match *b {
                None => true,
                Some((start, end)) => {
                    let cur = arena.get(start..end).unwrap_or_default();
                    if MAX {
                        s > cur
                    } else {
                        s < cur
                    }
                }
            };
            if better {
                let start = arena.len();
                arena.extend_from_slice(s);
                *b = Some((start, arena.len()));
            }
        };
        match a.nulls().filter(|n| n.null_count() > 0) {
            None => (0..a.len()).for_each(&mut visit),
            Some(nulls) => nulls.valid_indices().for_each(&mut visit),
        }
    }
}

impl<const MAX: bool> Accumulator for StrMinMaxAcc<MAX> {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.best.resize(rows.n_groups, None);
        match values.data_type() {
            DataType::Utf8 => self.update_strings(values.as_string::<i32>(), rows.ids),
            DataType::LargeUtf8 => self.update_strings(values.as_string::<i64>(), rows.ids),
            _ => {
                let large = cast(values, &DataType::LargeUtf8)?;
                self.update_strings(large.as_string::<i64>(), rows.ids)
            }
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let arena = &self.arena;
        let strings: LargeStringArray = self
            .best
            .iter()
            .map(|b| b.and_then(|(s, e)| std::str::from_utf8(arena.get(s..e)?).ok()))
            .collect();
        let strings: ArrayRef = Arc::new(strings);
        Ok(vec![match self.out {
            DataType::LargeUtf8 => strings,
            _ => cast(&strings, &self.out)?,
        }])
    }
}

/// No row picked yet.
const NO_ROW: (u32, u32) = (u32::MAX, u32::MAX);

/// First or last value of any type (non-null, or any with `nulls`): remembers (chunk, row)
/// and gathers at the end.
struct PickAcc {
    rows: Vec<(u32, u32)>,
    sources: Vec<ArrayRef>,
    last: bool,
    nulls: bool,
    /// The input (and result) type.
    out: DataType,
}

impl Accumulator for PickAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.rows.resize(rows.n_groups, NO_ROW);
        let chunk = u32::try_from(self.sources.len())
            .map_err(|_| FrameError::InvalidArgument("too many chunks".to_string()))?;
        self.sources.push(values.clone());
        let (picked, last) = (&mut self.rows, self.last);
        let mut visit = |i: usize| {
            if let Some(p) = rows.ids.get(i).and_then(|&g| picked.get_mut(g as usize)) {
                if last || *p == NO_ROW {
                    *p = (chunk, i as u32);
                }
            }
        };
        match values
            .logical_nulls()
            .filter(|n| n.null_count() > 0 && !self.nulls)
        {
            None => (0..values.len()).for_each(&mut visit),
            Some(nulls) => nulls.valid_indices().for_each(&mut visit),
        }
        Ok(())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.update(state_column(states, 0)?, rows)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let null = new_null_array(&self.out, 1);
        let mut sources: Vec<&dyn Array> = self.sources.iter().map(|s| s.as_ref()).collect();
        sources.push(null.as_ref());
        let null_at = (sources.len() - 1, 0);
        let indices: Vec<(usize, usize)> = self
            .rows
            .iter()
            .map(|&(c, r)| match (c, r) {
                NO_ROW => null_at,
                (c, r) => (c as usize, r as usize),
            })
            .collect();
        let out = interleave(&sources, &indices)?;
        self.sources.clear();
        Ok(vec![out])
    }
}

/// The distinct (group, value) pairs, for nunique.
struct NUniqueAcc {
    pairs: KeyEncoder,
    item: DataType,
    n_groups: usize,
}

impl NUniqueAcc {
    /// Adds `values`, value `i` in group `ids[i]` (nulls skipped).
    fn add(&mut self, values: &ArrayRef, ids: Vec<u32>) -> FrameResult<()> {
        let mut ids: ArrayRef = Arc::new(UInt32Array::from(ids));
        let mut values = values.clone();
        if let Some(nulls) = values.logical_nulls().filter(|n| n.null_count() > 0) {
            let keep = BooleanArray::new(nulls.inner().clone(), None);
            ids = arrow::compute::filter(&ids, &keep)?;
            values = arrow::compute::filter(&values, &keep)?;
        }
        self.pairs.encode(&[ids, values])?;
        Ok(())
    }
}

impl Accumulator for NUniqueAcc {
    fn update(&mut self, values: &ArrayRef, rows: &Rows) -> FrameResult<()> {
        self.n_groups = rows.n_groups;
        self.add(values, rows.ids.to_vec())
    }
    fn merge(&mut self, states: &[ArrayRef], rows: &Rows) -> FrameResult<()> {
        self.n_groups = rows.n_groups;
        let state = state_column(states, 0)?;
        let Some(lists) = state.as_list_opt::<i32>() else {
            return Err(FrameError::TypeMismatch(format!(
                "nunique state of type {}, not a list",
                state.data_type()
            )));
        };
        let offsets = lists.value_offsets();
        let (start, end) = match (offsets.first(), offsets.last()) {
            (Some(&s), Some(&e)) => (s.as_usize(), e.as_usize()),
            _ => return Ok(()),
        };
        let ids: Vec<u32> = offsets
            .windows(2)
            .zip(rows.ids)
            .flat_map(|(w, &g)| std::iter::repeat_n(g, (w[1] - w[0]).as_usize()))
            .collect();
        self.add(&lists.values().slice(start, end - start), ids)
    }
    fn state(&mut self) -> FrameResult<Vec<ArrayRef>> {
        let n = self.n_groups;
        let (groups, values) = match self.pairs.keys()?.as_slice() {
            [g, v] => (g.clone(), v.clone()),
            _ => return Err(FrameError::InvalidArgument("nunique keys".to_string())),
        };
        let groups = groups
            .as_primitive::<arrow::datatypes::UInt32Type>()
            .values();
        // Counting sort of the pairs by group.
        let mut offsets = vec![0usize; n + 1];
        for &g in groups.iter() {
            if let Some(o) = offsets.get_mut(g as usize + 1) {
                *o += 1;
            }
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next = offsets.clone();
        let mut order = vec![0u32; groups.len()];
        for (i, &g) in groups.iter().enumerate() {
            if let Some(at) = next.get_mut(g as usize) {
                if let Some(o) = order.get_mut(*at) {
                    *o = i as u32;
                }
                *at += 1;
            }
        }
        let values = take(&values, &UInt32Array::from(order), None)?;
        let offsets = offsets
            .into_iter()
            .map(i32::from_usize)
            .collect::<Option<ScalarBuffer<i32>>>()
            .ok_or_else(|| FrameError::InvalidArgument("too many distinct values".to_string()))?;
        let list = ListArray::try_new(
            list_item(&self.item),
            OffsetBuffer::new(offsets),
            values,
            None,
        )?;
        Ok(vec![Arc::new(list)])
    }
}

/// The accumulator of `func` over input values of type `dt`.
pub(super) fn accumulator(func: AggFunc, dt: &DataType) -> FrameResult<Box<dyn Accumulator>> {
    let count = |size| CountAcc {
        count: Vec::new(),
        size,
    };
    let pick = |last, nulls| PickAcc {
        rows: Vec::new(),
        sources: Vec::new(),
        last,
        nulls,
        out: dt.clone(),
    };
    let decimal = is_decimal(dt);
    Ok(match func {
        AggFunc::Sum if decimal => Box::new(DecimalSumAcc::new(dt)?),
        AggFunc::Sum if dt.is_floating() => Box::new(SumAcc::<f64> { sum: Vec::new() }),
        AggFunc::Sum => Box::new(SumAcc::<i64> { sum: Vec::new() }),
        AggFunc::Mean => Box::new(MeanAcc {
            sum: match decimal {
                true => Box::new(DecimalSumAcc::new(dt)?),
                false => Box::new(SumAcc::<f64> { sum: Vec::new() }),
            },
            count: count(false),
        }),
        AggFunc::Count => Box::new(count(false)),
        AggFunc::Size => Box::new(count(true)),
        AggFunc::Std | AggFunc::Var => Box::new(MomentsAcc::default()),
        AggFunc::Min => min_max::<false>(dt)?,
        AggFunc::Max => min_max::<true>(dt)?,
        AggFunc::First => Box::new(pick(false, false)),
        AggFunc::Last => Box::new(pick(true, false)),
        AggFunc::FirstRow => Box::new(pick(false, true)),
        AggFunc::NUnique => Box::new(NUniqueAcc {
            pairs: KeyEncoder::new(&[DataType::UInt32, dt.clone()])?,
            item: dt.clone(),
            n_groups: 0,
        }),
    })
}

fn min_max<const MAX: bool>(dt: &DataType) -> FrameResult<Box<dyn Accumulator>> {
    fn prim<T: ArrowPrimitiveType, const MAX: bool>(dt: &DataType) -> Box<dyn Accumulator>
    where
        T::Native: PartialOrd,
    {
        Box::new(MinMaxAcc::<T, MAX> {
            best: Vec::new(),
            has: Vec::new(),
            out: dt.clone(),
        })
    }
    if is_string(dt) {
        return Ok(Box::new(StrMinMaxAcc::<MAX> {
            arena: Vec::new(),
            best: Vec::new(),
            out: dt.clone(),
        }));
    }
    match dt {
        DataType::Boolean => return Ok(prim::<UInt8Type, MAX>(dt)),
        DataType::Decimal32(..) => return Ok(prim::<Decimal32Type, MAX>(dt)),
        DataType::Decimal64(..) => return Ok(prim::<Decimal64Type, MAX>(dt)),
        DataType::Decimal128(..) => return Ok(prim::<Decimal128Type, MAX>(dt)),
        DataType::Decimal256(..) => return Ok(prim::<Decimal256Type, MAX>(dt)),
        _ => {}
    }
    with_primitive_type!(dt, T => Ok(prim::<T, MAX>(dt)), other => Err(FrameError::TypeMismatch(format!("cannot compute min/max of type {other}"))))
}
