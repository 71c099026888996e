//! Vectorized `f64` math over slices: [`sin`], [`cos`], [`exp`] and [`ln`].
//!
//! These replace libm in the evaluator for `sin`, `cos`, `exp` and `log` on `f64`
//! blocks. Each function is written once as a branch-free per-lane function
//! (`#[inline(always)]`) and applied to the slice inside wrappers compiled with
//! `#[target_feature]` for AVX-512 (`avx512f,avx512dq,avx512vl,avx512bw`) and AVX2,
//! where LLVM autovectorizes the loop; plus a portable scalar wrapper. The level is
//! chosen at run time by CPU feature detection (cached in an atomic), never by build
//! flags.
//!
//! # Bit-identical results
//!
//! Only IEEE-exact basic operations (`+ - * /`, `sqrt`, comparisons, bit
//! manipulation) are used, never fused multiply-add, in the same order on every path,
//! so every level (and a vector main loop or its scalar tail) returns the same bits.
//! NaN payloads are not part of that promise (the result is NaN on every path).
//!
//! # Algorithms (after fdlibm; all below 1 ulp in theory, tested at <= 2 ulp against std)
//!
//! * `exp`: `x` is clamped to `[-746, 710]` (NaN kept); `n = round(x / ln 2)` (by the
//!   `1.5 * 2^52` trick); `r = (x - n ln2_hi) - n ln2_lo`; fdlibm's rational form
//!   `1 - ((lo - r c / (2 - c)) - hi)`; scaled by `2^(n >> 1)` then `2^(n - (n >> 1))`, so
//!   overflow gives `inf` and gradual underflow is rounded once.
//! * `ln`: subnormals are scaled by `2^54`; `x = 2^k m`, `m` in `[sqrt(2)/2, sqrt(2))`;
//!   `f = m - 1`, `s = f / (2 + f)` and fdlibm's `Lg1..Lg7` polynomial in `s^2`.
//!   `ln(0) = -inf`, `ln(x < 0) = NaN`, `ln(inf) = inf`, NaN stays NaN.
//! * `sin`, `cos`: Cody–Waite reduction by `pi/2` with fdlibm's 3-part split
//!   (33 + 33 + 53 bits), the reduced argument carried as a double-double `r + rr`,
//!   and fdlibm's `__kernel_sin` / `__kernel_cos` polynomials on `[-pi/4, pi/4]`.
//!   The reduction is used for `|x| < 2^17` (= 131072; there `n * pio2_1` and
//!   `n * pio2_2` are exact and the 119-bit `pi/2` keeps the error far below an ulp);
//!   elements with larger `|x|`, infinities and NaN fall back to `std`'s `sin`/`cos`
//!   (so `sin(+-inf) = NaN`). The random-number path only uses `[0, 2 pi)` and never
//!   takes the fallback.

// fdlibm's published coefficients are kept digit for digit.
#![allow(clippy::excessive_precision)]

use std::sync::atomic::{AtomicU8, Ordering};

/// SIMD instruction-set level a kernel runs at, chosen once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// Portable code (the compiler's baseline for the target).
    Scalar,
    /// x86-64 with AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// x86-64 with AVX-512 F, DQ, VL and BW.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

const LEVEL_UNKNOWN: u8 = u8::MAX;
static LEVEL: AtomicU8 = AtomicU8::new(LEVEL_UNKNOWN);

/// The best level this CPU supports (detected on first use, then cached).
pub(crate) fn level() -> Level {
    let mut v = LEVEL.load(Ordering::Relaxed);
    if v == LEVEL_UNKNOWN {
        v = detect();
        LEVEL.store(v, Ordering::Relaxed);
    }
    match v {
        #[cfg(target_arch = "x86_64")]
        2 => Level::Avx512,
        #[cfg(target_arch = "x86_64")]
        1 => Level::Avx2,
        _ => Level::Scalar,
    }
}

/// The CPU's level, capped by the environment variable `TESSERA_SIMD` (`avx512`, `avx2` or
/// `scalar`) so that the narrower paths can be measured and checked on a wider CPU; the
/// variable never raises the level.
fn detect() -> u8 {
    cap(detect_cpu(), std::env::var("TESSERA_SIMD").ok().as_deref())
}

/// `cpu` limited to the level named by `asked` (an unknown name limits nothing).
fn cap(cpu: u8, asked: Option<&str>) -> u8 {
    let limit = match asked.map(str::to_ascii_lowercase).as_deref() {
        Some("scalar") => 0,
        Some("avx2") => 1,
        _ => 2,
    };
    cpu.min(limit)
}

fn detect_cpu() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512bw")
        {
            return 2;
        }
        if is_x86_feature_detected!("avx2") {
            return 1;
        }
    }
    0
}

/// Every level this CPU can run, best last (for tests comparing paths).
#[cfg(test)]
pub(crate) fn supported_levels() -> Vec<Level> {
    #[allow(unused_mut)]
    let mut v = vec![Level::Scalar];
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx2") {
            v.push(Level::Avx2);
        }
        if detect_cpu() == 2 {
            v.push(Level::Avx512);
        }
    }
    v
}

// ---------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------

/// `1.5 * 2^52`: adding it rounds a double of magnitude < 2^51 to an integer.
const MAGIC: f64 = 6_755_399_441_055_744.0;
const MAGIC_BITS: u64 = 0x4338_0000_0000_0000;

const LOG2E: f64 = std::f64::consts::LOG2_E;
/// `ln 2` split: the high part has 32 significant bits, so `n * LN2_HI` is exact.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

// fdlibm e_exp.c
const EP1: f64 = 1.666_666_666_666_660_190_37e-01;
const EP2: f64 = -2.777_777_777_701_559_338_42e-03;
const EP3: f64 = 6.613_756_321_437_934_361_17e-05;
const EP4: f64 = -1.653_390_220_546_525_153_90e-06;
const EP5: f64 = 4.138_136_797_057_238_460_39e-08;

// fdlibm e_log.c
const LG1: f64 = 6.666_666_666_666_735_130e-01;
const LG2: f64 = 3.999_999_999_940_941_908e-01;
const LG3: f64 = 2.857_142_874_366_239_149e-01;
const LG4: f64 = 2.222_219_843_214_978_396e-01;
const LG5: f64 = 1.818_357_216_161_805_012e-01;
const LG6: f64 = 1.531_383_769_920_937_332e-01;
const LG7: f64 = 1.479_819_860_511_658_591e-01;

/// `2 / pi`.
const FRAC_2_PI: f64 = std::f64::consts::FRAC_2_PI;
/// `pi/2` in three parts (fdlibm `pio2_1`, `pio2_2`, `pio2_2t`).
const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
const PIO2_2T: f64 = f64::from_bits(0x3BA3_198A_2E03_7073);
/// Largest `|x|` (exclusive) reduced here; beyond it `sin`/`cos` use `std`.
pub(crate) const SINCOS_MAX: f64 = 131_072.0;

// fdlibm k_sin.c / k_cos.c
const S1: f64 = -1.666_666_666_666_663_243_48e-01;
const S2: f64 = 8.333_333_333_322_489_461_24e-03;
const S3: f64 = -1.984_126_982_985_794_931_34e-04;
const S4: f64 = 2.755_731_370_707_006_767_89e-06;
const S5: f64 = -2.505_076_025_340_686_341_95e-08;
const S6: f64 = 1.589_690_995_211_550_102_21e-10;
const C1: f64 = 4.166_666_666_666_660_190_37e-02;
const C2: f64 = -1.388_888_888_887_410_957_49e-03;
const C3: f64 = 2.480_158_728_947_672_941_78e-05;
const C4: f64 = -2.755_731_435_139_066_330_35e-07;
const C5: f64 = 2.087_572_321_298_174_827_90e-09;
const C6: f64 = -1.135_964_755_778_819_482_65e-11;

// ---------------------------------------------------------------------------
// Per-lane functions (branch-free; they autovectorize when inlined)
// ---------------------------------------------------------------------------

/// `e^x`.
#[inline(always)]
pub(crate) fn exp_lane(x: f64) -> f64 {
    // Clamp (NaN compares false and passes through, giving NaN below).
    let xc = if x > 710.0 { 710.0 } else { x };
    let xc = if xc < -746.0 { -746.0 } else { xc };
    let t = xc * LOG2E + MAGIC;
    let nf = t - MAGIC;
    let n = t.to_bits().wrapping_sub(MAGIC_BITS) as i64;
    let hi = xc - nf * LN2_HI;
    let lo = nf * LN2_LO;
    let r = hi - lo;
    let z = r * r;
    let c = r - z * (EP1 + z * (EP2 + z * (EP3 + z * (EP4 + z * EP5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let s1 = f64::from_bits((n1.wrapping_add(1023) as u64) << 52);
    let s2 = f64::from_bits((n2.wrapping_add(1023) as u64) << 52);
    y * s1 * s2
}

/// `ln x` for positive, normal, finite `x` (no special-value handling).
#[inline(always)]
pub(crate) fn ln_pos_normal(x: f64) -> f64 {
    ln_scaled(x, 0.0)
}

/// `ln x - kadj * ln 2`'s core: `x` positive normal finite, `kadj` subtracted from the
/// exponent before it is multiplied by `ln 2`.
#[inline(always)]
fn ln_scaled(x: f64, kadj: f64) -> f64 {
    // Move the mantissa into [sqrt(2)/2, sqrt(2)) and adjust the exponent (musl's trick).
    let u = x
        .to_bits()
        .wrapping_add((0x3FF0_0000_u64 - 0x3FE6_A09E_u64) << 32);
    let e = u >> 52;
    // Exact integer-to-double of the biased exponent, then unbias.
    let kf = (f64::from_bits(e | 0x4330_0000_0000_0000) - 4_503_599_627_371_519.0) - kadj;
    let m = f64::from_bits((u & 0x000F_FFFF_FFFF_FFFF) + (0x3FE6_A09E_u64 << 32));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (LG1 + z * (LG2 + z * (LG3 + z * (LG4 + z * (LG5 + z * (LG6 + z * LG7))))));
    kf * LN2_HI - ((hfsq - (s * (hfsq + r) + kf * LN2_LO)) - f)
}

/// Natural logarithm with all special values.
#[inline(always)]
pub(crate) fn ln_lane(x: f64) -> f64 {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2^54
    let kadj = if sub { 54.0 } else { 0.0 };
    let r = ln_scaled(xs, kadj);
    let r = if x == f64::INFINITY { x } else { r };
    let r = if x == 0.0 { f64::NEG_INFINITY } else { r };
    // x < 0 or NaN.
    if x >= 0.0 {
        r
    } else {
        f64::NAN
    }
}

/// Cody–Waite reduction: `x = n pi/2 + (r + rr)`; returns `(r, rr, q)`, `q & 3 = n mod 4`.
#[inline(always)]
fn reduce_pio2(x: f64) -> (f64, f64, u64) {
    let t = x * FRAC_2_PI + MAGIC;
    let nf = t - MAGIC;
    let q = t.to_bits();
    let t1 = x - nf * PIO2_1; // exact
    let p2 = nf * PIO2_2; // exact
    let t2 = t1 - p2;
    let e2 = (t1 - t2) - p2; // exact rounding error of t2
    let w = nf * PIO2_2T - e2;
    let r = t2 - w;
    let rr = (t2 - r) - w;
    (r, rr, q)
}

#[inline(always)]
fn kernel_sin(x: f64, y: f64) -> f64 {
    let z = x * x;
    let v = z * x;
    let r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
    x - ((z * (0.5 * y - v * r) - y) - v * S1)
}

#[inline(always)]
fn kernel_cos(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

/// `(sin x, cos x)` for finite `|x| < SINCOS_MAX` (no fallback; garbage outside).
#[inline(always)]
pub(crate) fn sincos_core(x: f64) -> (f64, f64) {
    let (r, rr, q) = reduce_pio2(x);
    let s = kernel_sin(r, rr);
    let c = kernel_cos(r, rr);
    let swap = q & 1 != 0;
    let sv = if swap { c } else { s };
    let cv = if swap { s } else { c };
    let sin = f64::from_bits(sv.to_bits() ^ ((q & 2) << 62));
    let cos = f64::from_bits(cv.to_bits() ^ ((q.wrapping_add(1) & 2) << 62));
    (sin, cos)
}

/// Whether `x` needs the `std` fallback in `sin`/`cos` (also true for NaN).
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN must count as out of range
fn sincos_out_of_range(x: f64) -> bool {
    !(x.abs() < SINCOS_MAX)
}

// ---------------------------------------------------------------------------
// Slice kernels
// ---------------------------------------------------------------------------

/// Elements per chunk of the `sin`/`cos` out-of-range check.
const CHUNK: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Sin,
    Cos,
    /// Sine into `out`, cosine into `out2`, from one reduction.
    SinCos,
    Exp,
    Ln,
}

/// `out = f(x)`; `out2` is written only by [`Func::SinCos`].
#[inline(always)]
fn apply_generic(f: Func, x: &[f64], out: &mut [f64], out2: &mut [f64]) {
    match f {
        Func::Exp => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = exp_lane(v);
            }
        }
        Func::Ln => {
            // Fast core per chunk; a chunk holding any zero, negative, subnormal, infinite
            // or NaN input is redone with the full lane function (same bits for the rest).
            for (xc, oc) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
                let mut special = 0u64;
                for (o, &v) in oc.iter_mut().zip(xc) {
                    *o = ln_pos_normal(v);
                    special |= u64::from(!(f64::MIN_POSITIVE..f64::INFINITY).contains(&v));
                }
                if special != 0 {
                    for (o, &v) in oc.iter_mut().zip(xc) {
                        *o = ln_lane(v);
                    }
                }
            }
        }
        Func::SinCos => {
            let chunks = x.chunks(CHUNK).zip(out.chunks_mut(CHUNK));
            for ((xc, sc), cc) in chunks.zip(out2.chunks_mut(CHUNK)) {
                let mut bad = 0u64;
                for ((s, c), &v) in sc.iter_mut().zip(cc.iter_mut()).zip(xc) {
                    (*s, *c) = sincos_core(v);
                    bad |= u64::from(sincos_out_of_range(v));
                }
                if bad != 0 {
                    fallback(true, xc, sc);
                    fallback(false, xc, cc);
                }
            }
        }
        Func::Sin | Func::Cos => {
            let want_sin = f == Func::Sin;
            for (xc, oc) in x.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
                let mut bad = 0u64;
                if want_sin {
                    for (o, &v) in oc.iter_mut().zip(xc) {
                        *o = sincos_core(v).0;
                        bad |= u64::from(sincos_out_of_range(v));
                    }
                } else {
                    for (o, &v) in oc.iter_mut().zip(xc) {
                        *o = sincos_core(v).1;
                        bad |= u64::from(sincos_out_of_range(v));
                    }
                }
                if bad != 0 {
                    fallback(want_sin, xc, oc);
                }
            }
        }
    }
}

#[cold]
#[inline(never)]
fn fallback(want_sin: bool, x: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(x) {
        if sincos_out_of_range(v) {
            *o = if want_sin { v.sin() } else { v.cos() };
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx512bw")]
fn apply_avx512(f: Func, x: &[f64], out: &mut [f64], out2: &mut [f64]) {
    apply_generic(f, x, out, out2);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn apply_avx2(f: Func, x: &[f64], out: &mut [f64], out2: &mut [f64]) {
    apply_generic(f, x, out, out2);
}

fn apply_at(level: Level, f: Func, x: &[f64], out: &mut [f64]) {
    apply2_at(level, f, x, out, &mut []);
}

fn apply2_at(level: Level, f: Func, x: &[f64], out: &mut [f64], out2: &mut [f64]) {
    debug_assert_eq!(x.len(), out.len(), "vmath: input and output lengths differ");
    let mut n = x.len().min(out.len());
    if f == Func::SinCos {
        n = n.min(out2.len());
    }
    let (x, out) = (&x[..n], &mut out[..n]);
    let n2 = n.min(out2.len());
    let out2 = &mut out2[..n2];
    match level {
        // SAFETY: these levels are only used when the CPU supports them.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { apply_avx512(f, x, out, out2) },
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { apply_avx2(f, x, out, out2) },
        Level::Scalar => apply_generic(f, x, out, out2),
    }
}

/// `out[i] = sin(x[i])` (lengths should match; the shorter one bounds the work).
pub fn sin(x: &[f64], out: &mut [f64]) {
    apply_at(level(), Func::Sin, x, out);
}

/// `out[i] = cos(x[i])` (lengths should match; the shorter one bounds the work).
pub fn cos(x: &[f64], out: &mut [f64]) {
    apply_at(level(), Func::Cos, x, out);
}

/// `sin_out[i] = sin(x[i])` and `cos_out[i] = cos(x[i])`, the same bits as [`sin`] and
/// [`cos`] at the cost of about one of them (one argument reduction, and both polynomials
/// are needed by either). The shortest of the three slices bounds the work.
pub fn sincos(x: &[f64], sin_out: &mut [f64], cos_out: &mut [f64]) {
    apply2_at(level(), Func::SinCos, x, sin_out, cos_out);
}

/// `out[i] = e^x[i]` (lengths should match; the shorter one bounds the work).
pub fn exp(x: &[f64], out: &mut [f64]) {
    apply_at(level(), Func::Exp, x, out);
}

/// `out[i] = ln(x[i])`, the natural logarithm (lengths should match; the shorter one
/// bounds the work).
pub fn ln(x: &[f64], out: &mut [f64]) {
    apply_at(level(), Func::Ln, x, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tessera_simd_caps_the_level_and_never_raises_it() {
        assert_eq!(cap(2, None), 2);
        assert_eq!(cap(2, Some("avx2")), 1);
        assert_eq!(cap(2, Some("SCALAR")), 0);
        assert_eq!(cap(1, Some("avx512")), 1);
        assert_eq!(cap(0, Some("avx2")), 0);
        assert_eq!(cap(2, Some("neon")), 2);
    }

    /// Deterministic test inputs (splitmix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
        }
        fn range(&mut self, lo: f64, hi: f64) -> f64 {
            lo + (hi - lo) * self.unit()
        }
    }

    const FUNCS: [Func; 4] = [Func::Sin, Func::Cos, Func::Exp, Func::Ln];

    fn std_f(f: Func, x: f64) -> f64 {
        match f {
            Func::Sin | Func::SinCos => x.sin(),
            Func::Cos => x.cos(),
            Func::Exp => x.exp(),
            Func::Ln => x.ln(),
        }
    }

    /// Distance in ulps (of `want`) between two finite values.
    fn ulps(got: f64, want: f64) -> f64 {
        if got == want || (got.is_nan() && want.is_nan()) {
            return 0.0;
        }
        if !got.is_finite() || !want.is_finite() {
            return f64::INFINITY;
        }
        let ulp = if want == 0.0 {
            f64::from_bits(1)
        } else {
            let b = want.abs().to_bits();
            f64::from_bits(b + 1) - f64::from_bits(b)
        };
        (got - want).abs() / ulp
    }

    fn run(level: Level, f: Func, x: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; x.len()];
        apply_at(level, f, x, &mut out);
        out
    }

    fn max_ulps(f: Func, x: &[f64]) -> (f64, f64) {
        let got = run(level(), f, x);
        let mut worst = (0.0, 0.0);
        for (&g, &v) in got.iter().zip(x) {
            let e = ulps(g, std_f(f, v));
            if e > worst.0 {
                worst = (e, v);
            }
        }
        worst
    }

    #[test]
    fn constants_are_the_decimal_values() {
        assert_eq!(PIO2_1, 1.570_796_326_734_125_614_17e+00);
        assert_eq!(PIO2_2, 6.077_100_506_303_965_976_60e-11);
        assert_eq!(PIO2_2T, 2.022_266_248_795_950_631_54e-21);
        assert_eq!(LN2_HI, 6.931_471_803_691_238_164_90e-01);
        assert_eq!(LN2_LO, 1.908_214_929_270_587_700_02e-10);
        assert_eq!(MAGIC.to_bits(), MAGIC_BITS);
        assert_eq!((PIO2_1 + PIO2_2) + PIO2_2T, std::f64::consts::FRAC_PI_2);
    }

    #[test]
    fn accuracy_against_std() {
        let mut rng = Rng(1);
        let n = 200_000;
        let mut cases: Vec<(Func, Vec<f64>)> = Vec::new();
        for (lo, hi) in [(-4.0, 4.0), (-100.0, 100.0), (-131_000.0, 131_000.0)] {
            let xs: Vec<f64> = (0..n).map(|_| rng.range(lo, hi)).collect();
            cases.push((Func::Sin, xs.clone()));
            cases.push((Func::Cos, xs));
        }
        // Tiny arguments and near multiples of pi/2.
        let xs: Vec<f64> = (0..n)
            .map(|_| (rng.range(-40.0, 0.0)).exp2() * if rng.next() & 1 == 0 { 1.0 } else { -1.0 })
            .collect();
        cases.push((Func::Sin, xs.clone()));
        cases.push((Func::Cos, xs));
        let xs: Vec<f64> = (1..80_000)
            .map(|k| f64::from(k) * std::f64::consts::FRAC_PI_2)
            .collect();
        cases.push((Func::Sin, xs.clone()));
        cases.push((Func::Cos, xs));
        for (lo, hi) in [(-1.0, 1.0), (-745.0, 709.7), (-30.0, 30.0)] {
            cases.push((Func::Exp, (0..n).map(|_| rng.range(lo, hi)).collect()));
        }
        cases.push((
            Func::Exp,
            (0..n).map(|_| rng.range(-745.13, -700.0)).collect(),
        ));
        cases.push((Func::Ln, (0..n).map(|_| rng.range(0.5, 2.0)).collect()));
        cases.push((Func::Ln, (0..n).map(|_| rng.range(0.999, 1.001)).collect()));
        cases.push((
            Func::Ln,
            (0..n)
                .map(|_| f64::from_bits(rng.next() >> 1))
                .filter(|v| v.is_finite())
                .collect(),
        ));
        cases.push((
            Func::Ln,
            (0..n).map(|_| f64::from_bits(rng.next() >> 12)).collect(),
        ));
        for (f, xs) in &cases {
            let (e, at) = max_ulps(*f, xs);
            assert!(e <= 2.0, "{f:?}: {e} ulp at {at:e}");
        }
    }

    #[test]
    fn special_values() {
        let inf = f64::INFINITY;
        let cases: [(Func, f64, f64); 16] = [
            (Func::Sin, inf, f64::NAN),
            (Func::Sin, -inf, f64::NAN),
            (Func::Cos, inf, f64::NAN),
            (Func::Sin, f64::NAN, f64::NAN),
            (Func::Cos, 0.0, 1.0),
            (Func::Exp, f64::NAN, f64::NAN),
            (Func::Exp, inf, inf),
            (Func::Exp, -inf, 0.0),
            (Func::Exp, 710.0, inf),
            (Func::Exp, -746.0, 0.0),
            (Func::Exp, 0.0, 1.0),
            (Func::Ln, 0.0, -inf),
            (Func::Ln, -0.0, -inf),
            (Func::Ln, -1.0, f64::NAN),
            (Func::Ln, inf, inf),
            (Func::Ln, 1.0, 0.0),
        ];
        for level in supported_levels() {
            for &(f, x, want) in &cases {
                let got = run(level, f, &[x])[0];
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{level:?} {f:?}({x}) = {got}, want {want}"
                );
            }
            assert_eq!(
                run(level, Func::Sin, &[-0.0])[0].to_bits(),
                (-0.0f64).to_bits()
            );
            assert!(run(level, Func::Ln, &[f64::NEG_INFINITY])[0].is_nan());
            assert_eq!(run(level, Func::Exp, &[709.78])[0], 709.78f64.exp());
            let tiny = f64::from_bits(1);
            assert_eq!(run(level, Func::Ln, &[tiny])[0], tiny.ln());
            assert_eq!(run(level, Func::Exp, &[-745.0])[0], (-745.0f64).exp());
            // Fallback beyond the reduction range.
            for x in [1e6, -3e9, 1e300, SINCOS_MAX] {
                assert_eq!(run(level, Func::Sin, &[x])[0], x.sin());
                assert_eq!(run(level, Func::Cos, &[x])[0], x.cos());
            }
        }
    }

    #[test]
    fn all_levels_bit_identical() {
        let mut rng = Rng(7);
        let mut xs: Vec<f64> = Vec::new();
        for _ in 0..3000 {
            xs.push(rng.range(-10.0, 10.0));
            xs.push(rng.range(-800.0, 800.0));
            xs.push(rng.range(-2e5, 2e5));
            xs.push(f64::from_bits(rng.next()));
            xs.push(f64::from_bits(rng.next() >> 12));
        }
        xs.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ]);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for f in FUNCS {
            let reference: Vec<f64> = run(Level::Scalar, f, &xs);
            // Element-wise (single-element calls: scalar tails) agrees too.
            for (i, &v) in xs.iter().enumerate().step_by(7) {
                assert!(same(run(Level::Scalar, f, &[v])[0], reference[i]));
            }
            for level in supported_levels() {
                for off in 0..5 {
                    for len in [0, 1, 3, 7, 8, 9, 31, 257, 1000, xs.len() - off] {
                        let len = len.min(xs.len() - off);
                        let got = run(level, f, &xs[off..off + len]);
                        for (k, (&g, &w)) in got.iter().zip(&reference[off..]).enumerate() {
                            assert!(
                                same(g, w),
                                "{level:?} {f:?}({:e}): {g:e} vs {w:e}",
                                xs[off + k]
                            );
                        }
                    }
                }
            }
        }
    }

    /// Special-free inputs take the fast chunk paths; they must equal the lane
    /// functions called one element at a time.
    #[test]
    fn fast_chunks_equal_lane_functions() {
        let mut rng = Rng(99);
        let pos: Vec<f64> = (0..5000).map(|_| rng.range(-990.0, 990.0).exp2()).collect();
        let trig: Vec<f64> = (0..5000).map(|_| rng.range(-1e5, 1e5)).collect();
        let lane = |f: Func, v: f64| match f {
            Func::Sin | Func::SinCos => sincos_core(v).0,
            Func::Cos => sincos_core(v).1,
            Func::Exp => exp_lane(v),
            Func::Ln => ln_lane(v),
        };
        for level in supported_levels() {
            for f in FUNCS {
                let xs = if f == Func::Ln { &pos } else { &trig };
                for off in [0, 3] {
                    let got = run(level, f, &xs[off..]);
                    for (&g, &v) in got.iter().zip(&xs[off..]) {
                        assert_eq!(g.to_bits(), lane(f, v).to_bits(), "{level:?} {f:?}({v:e})");
                    }
                }
            }
        }
    }

    /// `sincos` gives exactly `sin` and `cos` on every level, in range, out of range
    /// (the fallback) and at every tail length.
    #[test]
    fn sincos_equals_sin_and_cos() {
        let mut rng = Rng(5);
        let mut xs: Vec<f64> = (0..4000).map(|_| rng.range(-50.0, 50.0)).collect();
        xs.extend((0..500).map(|_| rng.range(-1e9, 1e9)));
        xs.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NAN,
            SINCOS_MAX,
            -1e300,
            1e-310,
        ]);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for level in supported_levels() {
            let want_s = run(level, Func::Sin, &xs);
            let want_c = run(level, Func::Cos, &xs);
            for off in [0, 1, 4001] {
                for len in [0, 1, 5, 255, 256, 257, xs.len() - off] {
                    let x = &xs[off..off + len];
                    let (mut s, mut c) = (vec![7.0; len], vec![7.0; len]);
                    apply2_at(level, Func::SinCos, x, &mut s, &mut c);
                    for k in 0..len {
                        assert!(same(s[k], want_s[off + k]), "{level:?} sin({:e})", x[k]);
                        assert!(same(c[k], want_c[off + k]), "{level:?} cos({:e})", x[k]);
                    }
                }
            }
        }
        // The public function; the shortest slice bounds the work.
        let (mut s, mut c) = (vec![0.0; xs.len()], vec![9.0; xs.len() + 3]);
        sincos(&xs, &mut s, &mut c[..xs.len() - 2]);
        assert_eq!(
            s[0].to_bits(),
            run(Level::Scalar, Func::Sin, &xs[..1])[0].to_bits()
        );
        assert!(s[xs.len() - 2] == 0.0 && c[xs.len() - 2] == 9.0);
        assert_eq!(
            c[3].to_bits(),
            run(Level::Scalar, Func::Cos, &xs[3..4])[0].to_bits()
        );
    }

    #[test]
    fn public_functions_match() {
        let xs: Vec<f64> = (0..1000).map(|i| f64::from(i) * 0.37 - 150.0).collect();
        let mut out = vec![0.0; xs.len()];
        for (f, g) in [
            (Func::Sin, sin as fn(&[f64], &mut [f64])),
            (Func::Cos, cos),
            (Func::Exp, exp),
            (Func::Ln, ln),
        ] {
            g(&xs, &mut out);
            let want = run(Level::Scalar, f, &xs);
            for (a, b) in out.iter().zip(&want) {
                assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
            }
        }
    }
}
