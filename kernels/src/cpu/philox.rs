//! Counter-based random numbers: Philox4x32-10 and Tessera's random streams.
//!
//! # Stream definition
//!
//! Every random value is a pure function of `(seed, stream, i)` where `i: u64` is the
//! element index; it does not depend on how the work is chunked, on the start offset or
//! stride of a call, or on the SIMD level (AVX-512, AVX2 or scalar, chosen at run time).
//!
//! * Generator: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11; Random123), see
//!   [`philox4x32_10`]: multipliers `0xD2511F53`, `0xCD9E8D57`, key bumps `0x9E3779B9`,
//!   `0xBB67AE85`, 10 rounds.
//! * Key `= [seed as u32, (seed >> 32) as u32]`.
//! * Element `i` lives in counter block `j = i >> 1`, lane `i & 1`; the counter is
//!   `[j as u32, (j >> 32) as u32, stream as u32, (stream >> 32) as u32]`. With output
//!   words `x0..x3`, lane 0 takes `(lo, hi) = (x0, x1)` and lane 1 takes `(x2, x3)`.
//!   The lane's 64 random bits are `b = (hi << 32) | lo`.
//! * 53-bit uniform in `[0, 1)`: `u = (b >> 11) as f64 * 2^-53` (exact).
//! * Uniform(low, high): `low + (high - low) * u`, in this order, no FMA.
//! * Normal(mean, std), Box–Muller over the block's two uniforms: `u1 = 1.0 - u(lane 0)`
//!   (in `(0, 1]`), `u2 = u(lane 1)`; `r = sqrt(-2.0 * ln(u1))`; `theta = 2pi * u2`
//!   (`2pi` the `f64` constant [`std::f64::consts::TAU`]); lane 0 gives `z = r * cos(theta)`,
//!   lane 1 gives `z = r * sin(theta)`; the value is `mean + std * z`. `ln`, `sin`, `cos`
//!   are Tessera's own [`super::vmath`] polynomials (never libm), so the value is the same
//!   on every path.
//! * RandInt(low, high), `high > low`: with `range = (high - low) as u64` (wrapping, so
//!   the full `i64` range works), the value is
//!   `low + ((b as u128 * range as u128) >> 64) as i64` (wrapping add), in `[low, high)`.
//!
//! Floating-point code uses only IEEE-exact basic operations (no fused multiply-add), in
//! the same order on every path, so all paths are bit-identical.
//!
//! # Calls
//!
//! The generators take `start` (first element index) and `stride`: element `k` of `out`
//! is element `start + k * stride` of the stream (the caller guarantees every index is
//! `>= 0`). `stride == 1` is the fast path (one Philox block gives two outputs);
//! `stride == 0` broadcasts one element; other strides compute one block per output,
//! still vectorized over an array of counters.

use super::vmath::{self, Level};

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;
const ROUNDS: usize = 10;
// The AVX2 core spells out rounds 1..10.
const _: () = assert!(ROUNDS == 10);

/// `2^-53`.
const TWO_POW_M53: f64 = 1.0 / 9_007_199_254_740_992.0;

/// Philox4x32-10: the 128-bit output block for counter `ctr` under key `key`.
#[inline]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut x0, mut x1, mut x2, mut x3] = ctr;
    let [mut k0, mut k1] = key;
    for r in 0..ROUNDS {
        if r > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(x0);
        let p1 = u64::from(M1) * u64::from(x2);
        (x0, x1, x2, x3) = (
            ((p1 >> 32) as u32) ^ x1 ^ k0,
            p1 as u32,
            ((p0 >> 32) as u32) ^ x3 ^ k1,
            p0 as u32,
        );
    }
    [x0, x1, x2, x3]
}

/// One `(seed, stream)` pair with everything the vector cores precompute.
#[derive(Clone, Copy, Debug)]
struct Stream {
    key: [u32; 2],
    ctr_hi: [u32; 2],
    /// Round keys of rounds 1..10 (`rk[r]` is the key of round `r`, 0-based).
    rk: [[u32; 2]; ROUNDS],
    /// Round 0 folded for the constant counter words: `x0' = j_hi ^ r0[0]`,
    /// `x1' = r0[1]`, `x2' = hi(M0 * j_lo) ^ r0[2]`, `x3' = lo(M0 * j_lo)`.
    r0: [u32; 3],
}

impl Stream {
    fn new(seed: u64, stream: u64) -> Self {
        let key = [seed as u32, (seed >> 32) as u32];
        let ctr_hi = [stream as u32, (stream >> 32) as u32];
        let mut rk = [[0u32; 2]; ROUNDS];
        let mut k = key;
        for slot in &mut rk {
            *slot = k;
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p1 = u64::from(M1) * u64::from(ctr_hi[0]);
        let r0 = [((p1 >> 32) as u32) ^ key[0], p1 as u32, ctr_hi[1] ^ key[1]];
        Self {
            key,
            ctr_hi,
            rk,
            r0,
        }
    }

    /// The 64 random bits of lane 0 and lane 1 of block `j`.
    #[inline(always)]
    fn block_bits(&self, j: u64) -> (u64, u64) {
        let x = philox4x32_10(
            [j as u32, (j >> 32) as u32, self.ctr_hi[0], self.ctr_hi[1]],
            self.key,
        );
        (
            (u64::from(x[1]) << 32) | u64::from(x[0]),
            (u64::from(x[3]) << 32) | u64::from(x[2]),
        )
    }
}

/// The 53-bit uniform in `[0, 1)` of a lane's 64 random bits.
#[inline(always)]
fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * TWO_POW_M53
}

// ---------------------------------------------------------------------------
// Distributions
// ---------------------------------------------------------------------------

/// A map from a block's two lanes of random bits to output values.
trait Dist: Copy {
    type Out: Copy + Default;
    /// Lane 0's and lane 1's values.
    fn pair(&self, a: u64, b: u64) -> (Self::Out, Self::Out);
    /// Fused stride-1 path: fills a prefix of `out` (even length) with the values of
    /// blocks `j0, j0 + 1, ...` and returns its length (0: not fused).
    ///
    /// # Safety
    /// The CPU must support `K`'s instruction set.
    #[inline(always)]
    unsafe fn fused_pairs<K: Core>(&self, st: &Stream, j0: u64, out: &mut [Self::Out]) -> usize {
        let _ = (st, j0, out);
        0
    }
    /// One lane's value.
    #[inline(always)]
    fn one(&self, a: u64, b: u64, lane1: bool) -> Self::Out {
        let (p, q) = self.pair(a, b);
        if lane1 {
            q
        } else {
            p
        }
    }
}

/// Uniform on `[0, 1)`: the same bits as `Uniform { low: 0.0, range: 1.0 }`
/// (`0.0 + 1.0 * u == u` for `u >= 0`), two operations cheaper.
#[derive(Clone, Copy)]
struct Unit;

impl Dist for Unit {
    type Out = f64;
    #[inline(always)]
    unsafe fn fused_pairs<K: Core>(&self, st: &Stream, j0: u64, out: &mut [f64]) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { K::uniform_pairs(st, j0, 0.0, 1.0, true, out) }
    }
    #[inline(always)]
    fn pair(&self, a: u64, b: u64) -> (f64, f64) {
        (unit(a), unit(b))
    }
    #[inline(always)]
    fn one(&self, a: u64, b: u64, lane1: bool) -> f64 {
        unit(if lane1 { b } else { a })
    }
}

#[derive(Clone, Copy)]
struct Uniform {
    low: f64,
    range: f64,
}

impl Uniform {
    #[inline(always)]
    fn map(&self, bits: u64) -> f64 {
        self.low + self.range * unit(bits)
    }
}

impl Dist for Uniform {
    type Out = f64;
    #[inline(always)]
    unsafe fn fused_pairs<K: Core>(&self, st: &Stream, j0: u64, out: &mut [f64]) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { K::uniform_pairs(st, j0, self.low, self.range, false, out) }
    }
    #[inline(always)]
    fn pair(&self, a: u64, b: u64) -> (f64, f64) {
        (self.map(a), self.map(b))
    }
    #[inline(always)]
    fn one(&self, a: u64, b: u64, lane1: bool) -> f64 {
        self.map(if lane1 { b } else { a })
    }
}

#[derive(Clone, Copy)]
struct Normal {
    mean: f64,
    std: f64,
}

impl Dist for Normal {
    type Out = f64;
    #[inline(always)]
    fn pair(&self, a: u64, b: u64) -> (f64, f64) {
        let u1 = 1.0 - unit(a);
        let u2 = unit(b);
        let r = (-2.0 * vmath::ln_pos_normal(u1)).sqrt();
        let (s, c) = vmath::sincos_core(std::f64::consts::TAU * u2);
        (
            self.mean + self.std * (r * c),
            self.mean + self.std * (r * s),
        )
    }
}

#[derive(Clone, Copy)]
struct RandInt {
    low: i64,
    range: u64,
}

impl RandInt {
    #[inline(always)]
    fn map(&self, bits: u64) -> i64 {
        self.low
            .wrapping_add(((u128::from(bits) * u128::from(self.range)) >> 64) as i64)
    }
}

impl Dist for RandInt {
    type Out = i64;
    #[inline(always)]
    fn pair(&self, a: u64, b: u64) -> (i64, i64) {
        (self.map(a), self.map(b))
    }
    #[inline(always)]
    fn one(&self, a: u64, b: u64, lane1: bool) -> i64 {
        self.map(if lane1 { b } else { a })
    }
}

/// Element `i` of the stream, computed alone.
#[inline(always)]
fn element<D: Dist>(st: &Stream, d: &D, i: u64) -> D::Out {
    let (a, b) = st.block_bits(i >> 1);
    d.one(a, b, i & 1 == 1)
}

// ---------------------------------------------------------------------------
// Block cores: Philox over an array of block indices
// ---------------------------------------------------------------------------

/// Blocks per batch (a multiple of 16, the vector cores' step).
const BATCH: usize = 64;

/// Computes the lane bits of blocks `j[..n]` into `a[..n]` (lane 0) and `b[..n]` (lane 1);
/// vector cores may also fill entries up to `n` rounded up to 16.
trait Core {
    /// # Safety
    /// The CPU must support the core's instruction set.
    unsafe fn words(
        st: &Stream,
        j: &[u64; BATCH],
        n: usize,
        a: &mut [u64; BATCH],
        b: &mut [u64; BATCH],
    );

    /// Fused stride-1 uniforms: fills a prefix of `out` (whose length is even) with
    /// `low + range * u` (just `u` if `plain`) of blocks `j0, j0 + 1, ...`, two values
    /// per block, and returns the prefix length (0 if not supported).
    ///
    /// # Safety
    /// The CPU must support the core's instruction set.
    #[inline(always)]
    unsafe fn uniform_pairs(
        st: &Stream,
        j0: u64,
        low: f64,
        range: f64,
        plain: bool,
        out: &mut [f64],
    ) -> usize {
        let _ = (st, j0, low, range, plain, out);
        0
    }
}

struct ScalarCore;

impl Core for ScalarCore {
    #[inline(always)]
    unsafe fn words(
        st: &Stream,
        j: &[u64; BATCH],
        n: usize,
        a: &mut [u64; BATCH],
        b: &mut [u64; BATCH],
    ) {
        for ((&jj, aa), bb) in j[..n].iter().zip(&mut a[..n]).zip(&mut b[..n]) {
            (*aa, *bb) = st.block_bits(jj);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86;

// ---------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------

/// Fills `out` with elements `start + k * stride` of the stream under distribution `d`.
///
/// # Safety
/// The CPU must support `K`'s instruction set.
#[inline(always)]
unsafe fn generate<K: Core, D: Dist>(
    st: &Stream,
    d: &D,
    start: u64,
    stride: i64,
    out: &mut [D::Out],
) {
    let len = out.len();
    if len == 0 {
        return;
    }
    if stride == 0 {
        out.fill(element(st, d, start));
        return;
    }
    let mut ja = [0u64; BATCH];
    let mut a = [0u64; BATCH];
    let mut b = [0u64; BATCH];
    if stride == 1 {
        let mut o = 0;
        let mut i = start;
        if i & 1 == 1 {
            out[0] = element(st, d, i);
            o = 1;
            i = i.wrapping_add(1);
        }
        let mut j = i >> 1;
        let even = (len - o) & !1;
        // SAFETY: forwarded from the caller.
        let done = unsafe { d.fused_pairs::<K>(st, j, &mut out[o..o + even]) };
        o += done;
        j = j.wrapping_add((done / 2) as u64);
        while len - o >= 2 {
            let n = ((len - o) / 2).min(BATCH);
            for (k, v) in ja.iter_mut().enumerate() {
                *v = j.wrapping_add(k as u64);
            }
            // SAFETY: forwarded from the caller.
            unsafe { K::words(st, &ja, n, &mut a, &mut b) };
            let dst = &mut out[o..o + 2 * n];
            for ((pair, &x), &y) in dst.chunks_exact_mut(2).zip(&a[..n]).zip(&b[..n]) {
                let (p, q) = d.pair(x, y);
                pair[0] = p;
                pair[1] = q;
            }
            o += 2 * n;
            j = j.wrapping_add(n as u64);
        }
        if o < len {
            out[o] = element(st, d, j << 1);
        }
    } else {
        let step = stride as u64;
        let mut ia = [0u64; BATCH];
        let mut o = 0;
        while o < len {
            let n = (len - o).min(BATCH);
            let base = start.wrapping_add((o as u64).wrapping_mul(step));
            for (k, (iv, jv)) in ia.iter_mut().zip(ja.iter_mut()).enumerate() {
                let i = base.wrapping_add((k as u64).wrapping_mul(step));
                *iv = i;
                *jv = i >> 1;
            }
            // SAFETY: forwarded from the caller.
            unsafe { K::words(st, &ja, n, &mut a, &mut b) };
            for (((dst, &x), &y), &i) in out[o..o + n]
                .iter_mut()
                .zip(&a[..n])
                .zip(&b[..n])
                .zip(&ia[..n])
            {
                *dst = d.one(x, y, i & 1 == 1);
            }
            o += n;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
unsafe fn generate_avx512<D: Dist>(
    st: &Stream,
    d: &D,
    start: u64,
    stride: i64,
    out: &mut [D::Out],
) {
    // SAFETY: AVX-512 is enabled here.
    unsafe { generate::<x86::Avx512Core, D>(st, d, start, stride, out) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn generate_avx2<D: Dist>(st: &Stream, d: &D, start: u64, stride: i64, out: &mut [D::Out]) {
    // SAFETY: AVX2 is enabled here.
    unsafe { generate::<x86::Avx2Core, D>(st, d, start, stride, out) }
}

fn generate_at<D: Dist>(
    level: Level,
    st: &Stream,
    d: &D,
    start: u64,
    stride: i64,
    out: &mut [D::Out],
) {
    match level {
        // SAFETY: a level is only used when the CPU supports it.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { generate_avx512(st, d, start, stride, out) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { generate_avx2(st, d, start, stride, out) },
        // SAFETY: the scalar core needs nothing.
        Level::Scalar => unsafe { generate::<ScalarCore, D>(st, d, start, stride, out) },
    }
}

#[allow(clippy::too_many_arguments)]
fn uniform_at(
    level: Level,
    seed: u64,
    stream: u64,
    low: f64,
    high: f64,
    start: u64,
    stride: i64,
    out: &mut [f64],
) {
    let st = Stream::new(seed, stream);
    if low == 0.0 && high == 1.0 {
        generate_at(level, &st, &Unit, start, stride, out);
    } else {
        generate_at(
            level,
            &st,
            &Uniform {
                low,
                range: high - low,
            },
            start,
            stride,
            out,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn normal_at(
    level: Level,
    seed: u64,
    stream: u64,
    mean: f64,
    std: f64,
    start: u64,
    stride: i64,
    out: &mut [f64],
) {
    generate_at(
        level,
        &Stream::new(seed, stream),
        &Normal { mean, std },
        start,
        stride,
        out,
    );
}

#[allow(clippy::too_many_arguments)]
fn randint_at(
    level: Level,
    seed: u64,
    stream: u64,
    low: i64,
    high: i64,
    start: u64,
    stride: i64,
    out: &mut [i64],
) {
    debug_assert!(high > low, "randint: empty range [{low}, {high})");
    let d = RandInt {
        low,
        range: high.wrapping_sub(low) as u64,
    };
    generate_at(level, &Stream::new(seed, stream), &d, start, stride, out);
}

/// Uniform doubles in `[low, high)`: `out[k]` is element `start + k * stride` of
/// `(seed, stream)`, `low + (high - low) * u` (see the module docs).
pub fn uniform_f64(
    seed: u64,
    stream: u64,
    low: f64,
    high: f64,
    start: u64,
    stride: i64,
    out: &mut [f64],
) {
    uniform_at(vmath::level(), seed, stream, low, high, start, stride, out);
}

/// Normal doubles (Box–Muller): `out[k]` is element `start + k * stride` of
/// `(seed, stream)`, `mean + std * z` (see the module docs).
pub fn normal_f64(
    seed: u64,
    stream: u64,
    mean: f64,
    std: f64,
    start: u64,
    stride: i64,
    out: &mut [f64],
) {
    normal_at(vmath::level(), seed, stream, mean, std, start, stride, out);
}

/// Integers in `[low, high)` (`high > low`): `out[k]` is element `start + k * stride`
/// of `(seed, stream)` (see the module docs).
pub fn randint_i64(
    seed: u64,
    stream: u64,
    low: i64,
    high: i64,
    start: u64,
    stride: i64,
    out: &mut [i64],
) {
    randint_at(vmath::level(), seed, stream, low, high, start, stride, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::vmath::supported_levels;

    #[test]
    fn known_answers_random123() {
        // Random123 kat_vectors, philox4x32_10.
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    // ---- The stream definition, written plainly ----

    fn ref_lane(seed: u64, stream: u64, i: u64) -> (u32, u32) {
        let j = i >> 1;
        let x = philox4x32_10(
            [
                j as u32,
                (j >> 32) as u32,
                stream as u32,
                (stream >> 32) as u32,
            ],
            [seed as u32, (seed >> 32) as u32],
        );
        if i & 1 == 0 {
            (x[0], x[1])
        } else {
            (x[2], x[3])
        }
    }

    fn ref_u(seed: u64, stream: u64, i: u64) -> f64 {
        let (lo, hi) = ref_lane(seed, stream, i);
        (f64::from(hi) * 2_097_152.0 + f64::from(lo >> 11)) * 2f64.powi(-53)
    }

    fn ref_uniform(seed: u64, stream: u64, low: f64, high: f64, i: u64) -> f64 {
        low + (high - low) * ref_u(seed, stream, i)
    }

    fn ref_normal(seed: u64, stream: u64, mean: f64, std: f64, i: u64) -> f64 {
        let j = i >> 1;
        let u1 = 1.0 - ref_u(seed, stream, 2 * j);
        let u2 = ref_u(seed, stream, 2 * j + 1);
        let r = (-2.0 * vmath::ln_lane(u1)).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        let (s, c) = vmath::sincos_core(theta);
        let z = if i & 1 == 0 { r * c } else { r * s };
        mean + std * z
    }

    fn ref_randint(seed: u64, stream: u64, low: i64, high: i64, i: u64) -> i64 {
        let (lo, hi) = ref_lane(seed, stream, i);
        let b = (u64::from(hi) << 32) | u64::from(lo);
        let range = high.wrapping_sub(low) as u64;
        low.wrapping_add(((u128::from(b) * u128::from(range)) >> 64) as i64)
    }

    fn index(start: u64, stride: i64, k: usize) -> u64 {
        (start as i128 + stride as i128 * k as i128) as u64
    }

    /// (start, stride, len) cases; every index stays >= 0.
    fn cases() -> Vec<(u64, i64, usize)> {
        let mut v = Vec::new();
        let starts = [
            0u64,
            1,
            2,
            3,
            5,
            1001,
            (1 << 33) - 7,
            (1 << 40) - 3,
            (1 << 40) + 1,
            5000,
        ];
        for &start in &starts {
            for stride in [0i64, 1, 2, 3, -1, -2, 7, 1000] {
                for len in [0usize, 1, 2, 3, 17, 33, 128, 129, 1000, 1234] {
                    if stride < 0 && (len as i64) * stride.abs() > start as i64 {
                        continue;
                    }
                    v.push((start, stride, len));
                }
            }
        }
        v
    }

    const KEYS: [(u64, u64); 3] = [
        (0, 0),
        (42, 7),
        (0xDEAD_BEEF_0123_4567, 0xFFFF_FFFF_0000_0001),
    ];

    #[test]
    fn uniform_matches_definition_on_every_path() {
        for level in supported_levels() {
            for &(seed, stream) in &KEYS {
                for (low, high) in [(0.0, 1.0), (-2.5, 7.25), (1e-3, 1e-3 + 1e-9)] {
                    for (start, stride, len) in cases() {
                        let mut out = vec![f64::NAN; len];
                        uniform_at(level, seed, stream, low, high, start, stride, &mut out);
                        for (k, &got) in out.iter().enumerate() {
                            let want =
                                ref_uniform(seed, stream, low, high, index(start, stride, k));
                            assert_eq!(
                                got.to_bits(),
                                want.to_bits(),
                                "{level:?} seed {seed} stream {stream} start {start} stride {stride} len {len} k {k}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn normal_matches_definition_on_every_path() {
        for level in supported_levels() {
            for &(seed, stream) in &KEYS {
                for (mean, std) in [(0.0, 1.0), (3.0, 0.5)] {
                    for (start, stride, len) in cases() {
                        let mut out = vec![f64::NAN; len];
                        normal_at(level, seed, stream, mean, std, start, stride, &mut out);
                        for (k, &got) in out.iter().enumerate() {
                            let want = ref_normal(seed, stream, mean, std, index(start, stride, k));
                            assert_eq!(
                                got.to_bits(),
                                want.to_bits(),
                                "{level:?} seed {seed} stream {stream} start {start} stride {stride} len {len} k {k}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn randint_matches_definition_on_every_path() {
        for level in supported_levels() {
            for &(seed, stream) in &KEYS {
                for (low, high) in [
                    (0, 10),
                    (-3, 4),
                    (i64::MIN, i64::MAX),
                    (5, 6),
                    (-1 << 40, 1 << 50),
                ] {
                    for (start, stride, len) in cases() {
                        let mut out = vec![i64::MIN; len];
                        randint_at(level, seed, stream, low, high, start, stride, &mut out);
                        for (k, &got) in out.iter().enumerate() {
                            let want =
                                ref_randint(seed, stream, low, high, index(start, stride, k));
                            assert_eq!(
                                got, want,
                                "{level:?} start {start} stride {stride} len {len} k {k}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn public_functions_use_the_same_stream() {
        let mut u = vec![0.0; 999];
        uniform_f64(9, 3, -1.0, 1.0, 77, 1, &mut u);
        let mut n = vec![0.0; 999];
        normal_f64(9, 3, 0.0, 2.0, 77, 3, &mut n);
        let mut r = vec![0i64; 999];
        randint_i64(9, 3, -5, 5, 77, -1, &mut r[..70]);
        for k in 0..999 {
            assert_eq!(
                u[k].to_bits(),
                ref_uniform(9, 3, -1.0, 1.0, 77 + k as u64).to_bits()
            );
            assert_eq!(
                n[k].to_bits(),
                ref_normal(9, 3, 0.0, 2.0, 77 + 3 * k as u64).to_bits()
            );
        }
        for (k, &v) in r[..70].iter().enumerate() {
            assert_eq!(v, ref_randint(9, 3, -5, 5, 77 - k as u64));
        }
    }

    #[test]
    fn uniform_statistics_and_bounds() {
        let n = 1_000_000;
        let mut out = vec![0.0; n];
        uniform_f64(1234, 0, 0.0, 1.0, 0, 1, &mut out);
        let mean = out.iter().sum::<f64>() / n as f64;
        let var = out.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 1.5e-3, "mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < 1e-3, "var {var}");
        assert!(out.iter().all(|&v| (0.0..1.0).contains(&v)));
        uniform_f64(99, 5, -3.0, -2.0, 11, 1, &mut out);
        assert!(out.iter().all(|&v| (-3.0..-2.0).contains(&v)));
        // Streams and seeds differ.
        let mut other = vec![0.0; 16];
        uniform_f64(99, 6, -3.0, -2.0, 11, 1, &mut other);
        assert_ne!(other[..], out[..16]);
    }

    #[test]
    fn normal_statistics() {
        let n = 1_000_000;
        let mut out = vec![0.0; n];
        normal_f64(77, 1, 0.0, 1.0, 3, 1, &mut out);
        let mean = out.iter().sum::<f64>() / n as f64;
        let var = out.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 5e-3, "mean {mean}");
        assert!((var - 1.0).abs() < 1e-2, "var {var}");
        assert!(out.iter().all(|v| v.is_finite()));
        let within1 = out.iter().filter(|v| v.abs() < 1.0).count() as f64 / n as f64;
        assert!((within1 - 0.682_689).abs() < 3e-3, "P(|z|<1) = {within1}");
        normal_f64(77, 1, 10.0, 3.0, 0, 2, &mut out);
        let mean = out.iter().sum::<f64>() / n as f64;
        let var = out.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        assert!((mean - 10.0).abs() < 0.015, "mean {mean}");
        assert!((var - 9.0).abs() < 0.1, "var {var}");
    }

    #[test]
    fn randint_bounds() {
        let mut out = vec![0i64; 100_000];
        randint_i64(5, 2, -3, 4, 1, 1, &mut out);
        assert!(out.iter().all(|&v| (-3..4).contains(&v)));
        for want in -3..4 {
            assert!(out.contains(&want), "{want} never drawn");
        }
        randint_i64(5, 2, 7, 8, 0, 3, &mut out);
        assert!(out.iter().all(|&v| v == 7));
        randint_i64(5, 2, i64::MIN, i64::MAX, 0, 1, &mut out);
        assert!(out.iter().any(|&v| v < -(1 << 62)) && out.iter().any(|&v| v > 1 << 62));
    }
}
