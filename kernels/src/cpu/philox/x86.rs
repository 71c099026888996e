//! Philox on AVX-512 and AVX2 vectors: the wide kernels the stream functions dispatch to
//! at run time (their results equal the scalar definition bit for bit).

use super::{Core, Stream, BATCH, M0, M1, ROUNDS};
use core::arch::x86_64::*;

/// Philox on `U` vectors of 8 blocks; a block index sits in each 64-bit lane.
/// Words live in the low 32 bits of 64-bit lanes; the high halves carry junk that
/// `vpmuludq` ignores and the final combine drops. Returns lane-0 and lane-1 bits.
#[inline(always)]
pub(super) unsafe fn philox_avx512<const U: usize>(
    st: &Stream,
    j: [__m512i; U],
) -> ([__m512i; U], [__m512i; U]) {
    unsafe {
        let m0 = _mm512_set1_epi64(i64::from(M0));
        let m1 = _mm512_set1_epi64(i64::from(M1));
        let c0 = _mm512_set1_epi64(i64::from(st.r0[0]));
        let c1 = _mm512_set1_epi64(i64::from(st.r0[1]));
        let c2 = _mm512_set1_epi64(i64::from(st.r0[2]));
        let mut x0 = j;
        let mut x1 = j;
        let mut x2 = j;
        let mut x3 = j;
        for u in 0..U {
            let p0 = _mm512_mul_epu32(j[u], m0);
            x0[u] = _mm512_xor_si512(_mm512_srli_epi64::<32>(j[u]), c0);
            x1[u] = c1;
            x2[u] = _mm512_xor_si512(_mm512_srli_epi64::<32>(p0), c2);
            x3[u] = p0;
        }
        for rk in &st.rk[1..ROUNDS] {
            let k0 = _mm512_set1_epi64(i64::from(rk[0]));
            let k1 = _mm512_set1_epi64(i64::from(rk[1]));
            for u in 0..U {
                let p0 = _mm512_mul_epu32(x0[u], m0);
                let p1 = _mm512_mul_epu32(x2[u], m1);
                x0[u] = _mm512_ternarylogic_epi64::<0x96>(_mm512_srli_epi64::<32>(p1), x1[u], k0);
                x2[u] = _mm512_ternarylogic_epi64::<0x96>(_mm512_srli_epi64::<32>(p0), x3[u], k1);
                x1[u] = p1;
                x3[u] = p0;
            }
        }
        let mut a = x0;
        let mut b = x2;
        for u in 0..U {
            // Odd dwords <- the low dword of x1 / x3: (hi << 32) | lo.
            a[u] = _mm512_mask_shuffle_epi32::<0xA0>(x0[u], 0xAAAA, x1[u]);
            b[u] = _mm512_mask_shuffle_epi32::<0xA0>(x2[u], 0xAAAA, x3[u]);
        }
        (a, b)
    }
}

/// One stream's constants for [`philox_avx2`], broadcast once per call.
pub(super) struct Avx2Keys {
    c0: __m256i,
    c2: __m256i,
    /// Keys of rounds 1..10; round 1's `k0` has round 0's constant `x1` folded in.
    k: [[__m256i; 2]; ROUNDS - 1],
}

impl Avx2Keys {
    /// # Safety
    /// The CPU must support AVX2.
    #[inline(always)]
    pub(super) unsafe fn new(st: &Stream) -> Self {
        // SAFETY: AVX2 is supported (the caller's promise).
        unsafe {
            let splat = |v: u32| _mm256_set1_epi64x(i64::from(v));
            let mut k = [[_mm256_setzero_si256(); 2]; ROUNDS - 1];
            for (slot, rk) in k.iter_mut().zip(&st.rk[1..]) {
                *slot = [splat(rk[0]), splat(rk[1])];
            }
            k[0][0] = splat(st.rk[1][0] ^ st.r0[1]);
            Self {
                c0: splat(st.r0[0]),
                c2: splat(st.r0[2]),
                k,
            }
        }
    }
}

/// AVX2 version of [`philox_avx512`]: `U` vectors of 4 blocks, the rounds unrolled.
#[inline(always)]
pub(super) unsafe fn philox_avx2<const U: usize>(
    keys: &Avx2Keys,
    j: [__m256i; U],
) -> ([__m256i; U], [__m256i; U]) {
    unsafe {
        let m0 = _mm256_set1_epi64x(i64::from(M0));
        let m1 = _mm256_set1_epi64x(i64::from(M1));
        let mut x0 = j;
        // Round 0's constant x1 lives in round 1's key.
        let mut x1 = [_mm256_setzero_si256(); U];
        let mut x2 = j;
        let mut x3 = j;
        for u in 0..U {
            let p0 = _mm256_mul_epu32(j[u], m0);
            x0[u] = _mm256_xor_si256(_mm256_srli_epi64::<32>(j[u]), keys.c0);
            x2[u] = _mm256_xor_si256(_mm256_srli_epi64::<32>(p0), keys.c2);
            x3[u] = p0;
        }
        macro_rules! round {
            ($r:expr) => {
                let [k0, k1] = keys.k[$r];
                for u in 0..U {
                    let p0 = _mm256_mul_epu32(x0[u], m0);
                    let p1 = _mm256_mul_epu32(x2[u], m1);
                    x0[u] =
                        _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64::<32>(p1), x1[u]), k0);
                    x2[u] =
                        _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64::<32>(p0), x3[u]), k1);
                    x1[u] = p1;
                    x3[u] = p0;
                }
            };
        }
        round!(0);
        round!(1);
        round!(2);
        round!(3);
        round!(4);
        round!(5);
        round!(6);
        round!(7);
        round!(8);
        let mut a = x0;
        let mut b = x2;
        for u in 0..U {
            a[u] = _mm256_blend_epi32::<0b1010_1010>(x0[u], _mm256_slli_epi64::<32>(x1[u]));
            b[u] = _mm256_blend_epi32::<0b1010_1010>(x2[u], _mm256_slli_epi64::<32>(x3[u]));
        }
        (a, b)
    }
}

/// Block offsets in the order that makes `unpacklo/hi_pd` of the lane-0 and lane-1
/// vectors come out as consecutive `(lane 0, lane 1)` pairs.
const PAIR_ORDER: [i64; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

pub(super) struct Avx512Core;

impl Core for Avx512Core {
    #[inline(always)]
    unsafe fn words(
        st: &Stream,
        j: &[u64; BATCH],
        n: usize,
        a: &mut [u64; BATCH],
        b: &mut [u64; BATCH],
    ) {
        let mut v = 0;
        while v < n {
            // SAFETY: v + 16 <= BATCH (BATCH is a multiple of 16); AVX-512 is enabled.
            unsafe {
                let jp = j.as_ptr().add(v).cast::<i64>();
                let jv = [_mm512_loadu_epi64(jp), _mm512_loadu_epi64(jp.add(8))];
                let (av, bv) = philox_avx512::<2>(st, jv);
                let ap = a.as_mut_ptr().add(v).cast::<i64>();
                let bp = b.as_mut_ptr().add(v).cast::<i64>();
                _mm512_storeu_epi64(ap, av[0]);
                _mm512_storeu_epi64(ap.add(8), av[1]);
                _mm512_storeu_epi64(bp, bv[0]);
                _mm512_storeu_epi64(bp.add(8), bv[1]);
            }
            v += 16;
        }
    }

    #[inline(always)]
    unsafe fn uniform_pairs(
        st: &Stream,
        j0: u64,
        low: f64,
        range: f64,
        plain: bool,
        out: &mut [f64],
    ) -> usize {
        const STEP: usize = 32; // doubles per iteration (16 blocks)
        let iters = out.len() / STEP;
        // SAFETY: AVX-512 is enabled; every store is within out[..iters * STEP].
        unsafe {
            let order = _mm512_loadu_epi64(PAIR_ORDER.as_ptr());
            let mut jv = _mm512_add_epi64(_mm512_set1_epi64(j0 as i64), order);
            let eight = _mm512_set1_epi64(8);
            let sixteen = _mm512_set1_epi64(16);
            let scale = _mm512_set1_pd(super::TWO_POW_M53);
            let lowv = _mm512_set1_pd(low);
            let rangev = _mm512_set1_pd(range);
            let mut p = out.as_mut_ptr();
            for _ in 0..iters {
                let (a, b) = philox_avx512::<2>(st, [jv, _mm512_add_epi64(jv, eight)]);
                for u in 0..2 {
                    let mut fa =
                        _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64::<11>(a[u])), scale);
                    let mut fb =
                        _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64::<11>(b[u])), scale);
                    if !plain {
                        fa = _mm512_add_pd(lowv, _mm512_mul_pd(rangev, fa));
                        fb = _mm512_add_pd(lowv, _mm512_mul_pd(rangev, fb));
                    }
                    _mm512_storeu_pd(p, _mm512_unpacklo_pd(fa, fb));
                    _mm512_storeu_pd(p.add(8), _mm512_unpackhi_pd(fa, fb));
                    p = p.add(16);
                }
                jv = _mm512_add_epi64(jv, sixteen);
            }
        }
        iters * STEP
    }
}

/// AVX2 `(a >> 11) as f64 * 2^-53`, exactly: the top 52 bits through the
/// `1.0 | mantissa` trick, plus bit 11 of `a` as `2^-53` (the sum is exact), picked by
/// `blendv` from the sign bit of `a << 52`.
#[inline(always)]
unsafe fn unit_avx2(a: __m256i) -> __m256d {
    unsafe {
        let one = _mm256_set1_epi64x(0x3FF0_0000_0000_0000);
        let v = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64::<12>(a), one)),
            _mm256_set1_pd(1.0),
        );
        let half_ulp = _mm256_blendv_pd(
            _mm256_setzero_pd(),
            _mm256_set1_pd(super::TWO_POW_M53),
            _mm256_castsi256_pd(_mm256_slli_epi64::<52>(a)),
        );
        _mm256_add_pd(v, half_ulp)
    }
}

pub(super) struct Avx2Core;

impl Core for Avx2Core {
    #[inline(always)]
    unsafe fn words(
        st: &Stream,
        j: &[u64; BATCH],
        n: usize,
        a: &mut [u64; BATCH],
        b: &mut [u64; BATCH],
    ) {
        // SAFETY: AVX2 is enabled.
        let keys = unsafe { Avx2Keys::new(st) };
        let mut v = 0;
        while v < n {
            // SAFETY: v + 16 <= BATCH (BATCH is a multiple of 16); AVX2 is enabled.
            unsafe {
                let jp = j.as_ptr().add(v).cast::<__m256i>();
                let ap = a.as_mut_ptr().add(v).cast::<__m256i>();
                let bp = b.as_mut_ptr().add(v).cast::<__m256i>();
                for h in [0, 2] {
                    let jv = [
                        _mm256_loadu_si256(jp.add(h)),
                        _mm256_loadu_si256(jp.add(h + 1)),
                    ];
                    let (av, bv) = philox_avx2::<2>(&keys, jv);
                    for u in 0..2 {
                        _mm256_storeu_si256(ap.add(h + u), av[u]);
                        _mm256_storeu_si256(bp.add(h + u), bv[u]);
                    }
                }
            }
            v += 16;
        }
    }

    #[inline(always)]
    unsafe fn uniform_pairs(
        st: &Stream,
        j0: u64,
        low: f64,
        range: f64,
        plain: bool,
        out: &mut [f64],
    ) -> usize {
        const STEP: usize = 32; // doubles per iteration (16 blocks)
        let iters = out.len() / STEP;
        // SAFETY: AVX2 is enabled; every store is within out[..iters * STEP].
        unsafe {
            // Per 4-block vector: offsets [0, 2, 1, 3] so unpacklo/hi give pairs.
            let order = _mm256_set_epi64x(3, 1, 2, 0);
            let base = _mm256_add_epi64(_mm256_set1_epi64x(j0 as i64), order);
            let lowv = _mm256_set1_pd(low);
            let rangev = _mm256_set1_pd(range);
            let keys = Avx2Keys::new(st);
            // Opaque, so the keys are read from memory (a load folded into each `vpxor`)
            // instead of broadcast again from scalars in every round.
            let keys = std::hint::black_box(&keys);
            let mut p = out.as_mut_ptr();
            for it in 0..iters {
                let jb = _mm256_add_epi64(base, _mm256_set1_epi64x((16 * it) as i64));
                for h in [0, 8] {
                    let jh = _mm256_add_epi64(jb, _mm256_set1_epi64x(h));
                    let jv = [jh, _mm256_add_epi64(jh, _mm256_set1_epi64x(4))];
                    let (a, b) = philox_avx2::<2>(keys, jv);
                    for u in 0..2 {
                        let mut fa = unit_avx2(a[u]);
                        let mut fb = unit_avx2(b[u]);
                        if !plain {
                            fa = _mm256_add_pd(lowv, _mm256_mul_pd(rangev, fa));
                            fb = _mm256_add_pd(lowv, _mm256_mul_pd(rangev, fb));
                        }
                        _mm256_storeu_pd(p, _mm256_unpacklo_pd(fa, fb));
                        _mm256_storeu_pd(p.add(4), _mm256_unpackhi_pd(fa, fb));
                        p = p.add(8);
                    }
                }
            }
        }
        iters * STEP
    }
}
