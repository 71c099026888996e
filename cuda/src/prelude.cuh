// Tessera fused-kernel prelude (CUDA C++17, compiled by NVRTC with -default-device).
//
// Everything a generated kernel calls besides its own expression: fixed-width types,
// IEEE-exact arithmetic that is never contracted into FMA, NumPy `astype` conversions,
// Philox4x32-10 with Tessera's stream layout, and ports of Tessera's own f64 exp / ln /
// sin / cos (kernels/src/cpu/vmath.rs) and random distributions (kernels/src/cpu/philox.rs).
// Those ports use the same operations in the same order as the Rust code, through the
// `__d*_rn` intrinsics (which the compiler never fuses), so they return the same bits.

typedef unsigned char ts_u8;
typedef int ts_i32;
typedef unsigned int ts_u32;
typedef long long ts_i64;
typedef unsigned long long ts_u64;

// Fault bits a kernel ORs into its `faults` word (see `codegen::Fault`).
#define TS_FAULT_NEGATIVE_POWER 1
#define TS_FAULT_NO_CHUNK 2
#define TS_FAULT_BAD_LAUNCH 4

static __device__ __forceinline__ void ts_fault(int* faults, int bits) { atomicOr(faults, bits); }

// ---------------------------------------------------------------------------------------
// IEEE-exact basic operations (round to nearest even, never fused).
// ---------------------------------------------------------------------------------------

static __device__ __forceinline__ double ts_add(double a, double b) { return __dadd_rn(a, b); }
static __device__ __forceinline__ double ts_sub(double a, double b) { return __dsub_rn(a, b); }
static __device__ __forceinline__ double ts_mul(double a, double b) { return __dmul_rn(a, b); }
static __device__ __forceinline__ double ts_div(double a, double b) { return __ddiv_rn(a, b); }
static __device__ __forceinline__ double ts_sqrt(double a) { return __dsqrt_rn(a); }
static __device__ __forceinline__ float ts_add(float a, float b) { return __fadd_rn(a, b); }
static __device__ __forceinline__ float ts_sub(float a, float b) { return __fsub_rn(a, b); }
static __device__ __forceinline__ float ts_mul(float a, float b) { return __fmul_rn(a, b); }
static __device__ __forceinline__ float ts_div(float a, float b) { return __fdiv_rn(a, b); }
static __device__ __forceinline__ float ts_sqrt(float a) { return __fsqrt_rn(a); }

static __device__ __forceinline__ double ts_bits_f64(ts_u64 b) { return __longlong_as_double((ts_i64)b); }
static __device__ __forceinline__ ts_u64 ts_f64_bits(double v) { return (ts_u64)__double_as_longlong(v); }

// ---------------------------------------------------------------------------------------
// Conversions (Rust's `as`, which Tessera's `astype` uses).
// ---------------------------------------------------------------------------------------

// f64 -> i64: truncation toward zero, saturating, NaN -> 0.
static __device__ __forceinline__ ts_i64 ts_f64_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return 9223372036854775807LL;
    if (v <= -9223372036854775808.0) return -9223372036854775807LL - 1;
    return (ts_i64)v;
}
static __device__ __forceinline__ double ts_i64_to_f64(ts_i64 v) { return __ll2double_rn(v); }
static __device__ __forceinline__ float ts_f64_to_f32(double v) { return __double2float_rn(v); }

// Wrapping integer arithmetic through unsigned types.
static __device__ __forceinline__ ts_i64 ts_wadd(ts_i64 a, ts_i64 b) { return (ts_i64)((ts_u64)a + (ts_u64)b); }
static __device__ __forceinline__ ts_i64 ts_wsub(ts_i64 a, ts_i64 b) { return (ts_i64)((ts_u64)a - (ts_u64)b); }
static __device__ __forceinline__ ts_i64 ts_wmul(ts_i64 a, ts_i64 b) { return (ts_i64)((ts_u64)a * (ts_u64)b); }
static __device__ __forceinline__ ts_i32 ts_wadd(ts_i32 a, ts_i32 b) { return (ts_i32)((ts_u32)a + (ts_u32)b); }
static __device__ __forceinline__ ts_i32 ts_wsub(ts_i32 a, ts_i32 b) { return (ts_i32)((ts_u32)a - (ts_u32)b); }
static __device__ __forceinline__ ts_i32 ts_wmul(ts_i32 a, ts_i32 b) { return (ts_i32)((ts_u32)a * (ts_u32)b); }
static __device__ __forceinline__ ts_u8 ts_wadd(ts_u8 a, ts_u8 b) { return (ts_u8)(a + b); }
static __device__ __forceinline__ ts_u8 ts_wsub(ts_u8 a, ts_u8 b) { return (ts_u8)(a - b); }
static __device__ __forceinline__ ts_u8 ts_wmul(ts_u8 a, ts_u8 b) { return (ts_u8)((ts_u32)a * (ts_u32)b); }

// `base ** e` modulo 2^64 by squaring (Rust's `wrapping_pow`; the result modulo 2^n is the
// same for every algorithm, so truncating gives the narrower types' answers).
static __device__ __forceinline__ ts_u64 ts_upow(ts_u64 base, ts_u32 e) {
    ts_u64 r = 1;
    while (e != 0) {
        if (e & 1u) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}
// Integer power with NumPy's rule: a negative exponent faults (and gives 0); exponents
// above u32::MAX are clamped to it, as the CPU kernel does.
static __device__ __forceinline__ ts_i64 ts_ipow(ts_i64 a, ts_i64 b, int* faults) {
    if (b < 0) {
        ts_fault(faults, TS_FAULT_NEGATIVE_POWER);
        return 0;
    }
    ts_u32 e = b > 4294967295LL ? 4294967295u : (ts_u32)b;
    return (ts_i64)ts_upow((ts_u64)a, e);
}

// ---------------------------------------------------------------------------------------
// NumPy's integer division, remainders and shifts (cpu::elementwise::int_op), in i64:
// exact for every integer dtype once truncated back to it.
// ---------------------------------------------------------------------------------------

// `a // b` rounding toward minus infinity; by zero 0; `MIN // -1` wraps to MIN.
static __device__ __forceinline__ ts_i64 ts_ifloordiv(ts_i64 a, ts_i64 b) {
    if (b == 0) return 0;
    if (b == -1) return ts_wsub((ts_i64)0, a);
    ts_i64 q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
// C's `%` (the sign of `a`); by zero 0.
static __device__ __forceinline__ ts_i64 ts_ifmod(ts_i64 a, ts_i64 b) {
    return (b == 0 || b == -1) ? 0 : a % b;
}
// NumPy's `remainder` (the sign of `b`); by zero 0.
static __device__ __forceinline__ ts_i64 ts_iremainder(ts_i64 a, ts_i64 b) {
    ts_i64 r = ts_ifmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// `a << b` for a `bits`-wide type: 0 for counts outside `0..bits`.
static __device__ __forceinline__ ts_i64 ts_ishl(ts_i64 a, ts_i64 b, ts_i64 bits) {
    return (b >= 0 && b < bits) ? (ts_i64)((ts_u64)a << b) : 0;
}
// Arithmetic `a >> b`: for counts outside `0..bits`, -1 for negative `a`, else 0.
static __device__ __forceinline__ ts_i64 ts_ishr(ts_i64 a, ts_i64 b, ts_i64 bits) {
    if (b >= 0 && b < bits) return a >> b;
    return a < 0 ? -1 : 0;
}

// ---------------------------------------------------------------------------------------
// NumPy's float `divmod` (`npy_divmod`, cpu::elementwise::float_divmod): the floored
// quotient and the remainder with the sign of `b`; by zero `a / b` and `fmod(a, b)`.
// ---------------------------------------------------------------------------------------

static __device__ __forceinline__ double ts_fmod(double a, double b) { return fmod(a, b); }
static __device__ __forceinline__ float ts_fmod(float a, float b) { return fmodf(a, b); }
static __device__ __forceinline__ double ts_floor(double a) { return floor(a); }
static __device__ __forceinline__ float ts_floor(float a) { return floorf(a); }
static __device__ __forceinline__ double ts_copysign(double a, double b) { return copysign(a, b); }
static __device__ __forceinline__ float ts_copysign(float a, float b) { return copysignf(a, b); }

template <class T> struct ts_divmod_t { T q; T m; };
template <class T> static __device__ __forceinline__ ts_divmod_t<T> ts_divmod(T a, T b) {
    ts_divmod_t<T> r;
    T m = ts_fmod(a, b);
    if (b == (T)0) {
        r.q = ts_div(a, b);
        r.m = m;
        return r;
    }
    T div = ts_div(ts_sub(a, m), b);
    if (m != (T)0) {
        if ((b < (T)0) != (m < (T)0)) {
            m = ts_add(m, b);
            div = ts_sub(div, (T)1);
        }
    } else {
        m = ts_copysign((T)0, b);
    }
    if (div != (T)0) {
        T f = ts_floor(div);
        r.q = ts_sub(div, f) > (T)0.5 ? ts_add(f, (T)1) : f;
    } else {
        r.q = ts_copysign((T)0, ts_div(a, b));
    }
    r.m = m;
    return r;
}

// ---------------------------------------------------------------------------------------
// Tessera's f64 math (ports of kernels/src/cpu/vmath.rs, same operations, same order).
// ---------------------------------------------------------------------------------------

#define TS_MAGIC 6755399441055744.0
#define TS_MAGIC_BITS 0x4338000000000000ULL
#define TS_LOG2E ts_bits_f64(0x3FF71547652B82FEULL)
#define TS_LN2_HI ts_bits_f64(0x3FE62E42FEE00000ULL)
#define TS_LN2_LO ts_bits_f64(0x3DEA39EF35793C76ULL)
#define TS_FRAC_2_PI ts_bits_f64(0x3FE45F306DC9C883ULL)
#define TS_PIO2_1 ts_bits_f64(0x3FF921FB54400000ULL)
#define TS_PIO2_2 ts_bits_f64(0x3DD0B4611A600000ULL)
#define TS_PIO2_2T ts_bits_f64(0x3BA3198A2E037073ULL)
#define TS_TAU ts_bits_f64(0x401921FB54442D18ULL)
#define TS_MIN_POSITIVE ts_bits_f64(0x0010000000000000ULL)
#define TS_INF ts_bits_f64(0x7FF0000000000000ULL)
#define TS_NAN ts_bits_f64(0x7FF8000000000000ULL)
#define TS_SINCOS_MAX 131072.0

#define TS_EP1 1.66666666666666019037e-01
#define TS_EP2 (-2.77777777770155933842e-03)
#define TS_EP3 6.61375632143793436117e-05
#define TS_EP4 (-1.65339022054652515390e-06)
#define TS_EP5 4.13813679705723846039e-08

#define TS_LG1 6.666666666666735130e-01
#define TS_LG2 3.999999999940941908e-01
#define TS_LG3 2.857142874366239149e-01
#define TS_LG4 2.222219843214978396e-01
#define TS_LG5 1.818357216161805012e-01
#define TS_LG6 1.531383769920937332e-01
#define TS_LG7 1.479819860511658591e-01

#define TS_S1 (-1.66666666666666324348e-01)
#define TS_S2 8.33333333332248946124e-03
#define TS_S3 (-1.98412698298579493134e-04)
#define TS_S4 2.75573137070700676789e-06
#define TS_S5 (-2.50507602534068634195e-08)
#define TS_S6 1.58969099521155010221e-10
#define TS_C1 4.16666666666666019037e-02
#define TS_C2 (-1.38888888888741095749e-03)
#define TS_C3 2.48015872894767294178e-05
#define TS_C4 (-2.75573143513906633035e-07)
#define TS_C5 2.08757232129817482790e-09
#define TS_C6 (-1.13596475577881948265e-11)

// e^x (vmath::exp_lane).
static __device__ double ts_exp64(double x) {
    double xc = x > 710.0 ? 710.0 : x;
    xc = xc < -746.0 ? -746.0 : xc;
    double t = ts_add(ts_mul(xc, TS_LOG2E), TS_MAGIC);
    double nf = ts_sub(t, TS_MAGIC);
    ts_i64 n = (ts_i64)(ts_f64_bits(t) - TS_MAGIC_BITS);
    double hi = ts_sub(xc, ts_mul(nf, TS_LN2_HI));
    double lo = ts_mul(nf, TS_LN2_LO);
    double r = ts_sub(hi, lo);
    double z = ts_mul(r, r);
    double c = ts_sub(r, ts_mul(z, ts_add(TS_EP1, ts_mul(z, ts_add(TS_EP2, ts_mul(z,
                   ts_add(TS_EP3, ts_mul(z, ts_add(TS_EP4, ts_mul(z, TS_EP5))))))))));
    double y = ts_sub(1.0, ts_sub(ts_sub(lo, ts_div(ts_mul(r, c), ts_sub(2.0, c))), hi));
    ts_i64 n1 = n >> 1;
    ts_i64 n2 = ts_wsub(n, n1);
    double s1 = ts_bits_f64(((ts_u64)ts_wadd(n1, (ts_i64)1023)) << 52);
    double s2 = ts_bits_f64(((ts_u64)ts_wadd(n2, (ts_i64)1023)) << 52);
    return ts_mul(ts_mul(y, s1), s2);
}

// ln x - kadj ln 2 for positive normal finite x (vmath::ln_scaled).
static __device__ double ts_ln_scaled(double x, double kadj) {
    ts_u64 u = ts_f64_bits(x) + ((0x3FF00000ULL - 0x3FE6A09EULL) << 32);
    ts_u64 e = u >> 52;
    double kf = ts_sub(ts_sub(ts_bits_f64(e | 0x4330000000000000ULL), 4503599627371519.0), kadj);
    double m = ts_bits_f64((u & 0x000FFFFFFFFFFFFFULL) + (0x3FE6A09EULL << 32));
    double f = ts_sub(m, 1.0);
    double hfsq = ts_mul(ts_mul(0.5, f), f);
    double s = ts_div(f, ts_add(2.0, f));
    double z = ts_mul(s, s);
    double r = ts_mul(z, ts_add(TS_LG1, ts_mul(z, ts_add(TS_LG2, ts_mul(z, ts_add(TS_LG3,
                   ts_mul(z, ts_add(TS_LG4, ts_mul(z, ts_add(TS_LG5, ts_mul(z, ts_add(TS_LG6,
                   ts_mul(z, TS_LG7)))))))))))));
    return ts_sub(ts_mul(kf, TS_LN2_HI),
                  ts_sub(ts_sub(hfsq, ts_add(ts_mul(s, ts_add(hfsq, r)), ts_mul(kf, TS_LN2_LO))), f));
}

// Natural logarithm with every special value (vmath::ln_lane).
static __device__ double ts_ln64(double x) {
    bool sub = x < TS_MIN_POSITIVE;
    double xs = sub ? ts_mul(x, 18014398509481984.0) : x;
    double kadj = sub ? 54.0 : 0.0;
    double r = ts_ln_scaled(xs, kadj);
    r = x == TS_INF ? x : r;
    r = x == 0.0 ? -TS_INF : r;
    return x >= 0.0 ? r : TS_NAN;
}

static __device__ __forceinline__ double ts_kernel_sin(double x, double y) {
    double z = ts_mul(x, x);
    double v = ts_mul(z, x);
    double r = ts_add(TS_S2, ts_mul(z, ts_add(TS_S3, ts_mul(z, ts_add(TS_S4, ts_mul(z,
                   ts_add(TS_S5, ts_mul(z, TS_S6))))))));
    return ts_sub(x, ts_sub(ts_sub(ts_mul(z, ts_sub(ts_mul(0.5, y), ts_mul(v, r))), y),
                            ts_mul(v, TS_S1)));
}

static __device__ __forceinline__ double ts_kernel_cos(double x, double y) {
    double z = ts_mul(x, x);
    double w = ts_mul(z, z);
    double r = ts_add(ts_mul(z, ts_add(TS_C1, ts_mul(z, ts_add(TS_C2, ts_mul(z, TS_C3))))),
                      ts_mul(ts_mul(w, w), ts_add(TS_C4, ts_mul(z, ts_add(TS_C5, ts_mul(z, TS_C6))))));
    double hz = ts_mul(0.5, z);
    double w1 = ts_sub(1.0, hz);
    return ts_add(w1, ts_add(ts_sub(ts_sub(1.0, w1), hz), ts_sub(ts_mul(z, r), ts_mul(x, y))));
}

// (sin x, cos x) for finite |x| < 2^17 (vmath::sincos_core).
static __device__ void ts_sincos_core(double x, double* sin_out, double* cos_out) {
    double t = ts_add(ts_mul(x, TS_FRAC_2_PI), TS_MAGIC);
    double nf = ts_sub(t, TS_MAGIC);
    ts_u64 q = ts_f64_bits(t);
    double t1 = ts_sub(x, ts_mul(nf, TS_PIO2_1));
    double p2 = ts_mul(nf, TS_PIO2_2);
    double t2 = ts_sub(t1, p2);
    double e2 = ts_sub(ts_sub(t1, t2), p2);
    double w = ts_sub(ts_mul(nf, TS_PIO2_2T), e2);
    double r = ts_sub(t2, w);
    double rr = ts_sub(ts_sub(t2, r), w);
    double s = ts_kernel_sin(r, rr);
    double c = ts_kernel_cos(r, rr);
    bool swap = (q & 1ULL) != 0;
    double sv = swap ? c : s;
    double cv = swap ? s : c;
    *sin_out = ts_bits_f64(ts_f64_bits(sv) ^ ((q & 2ULL) << 62));
    *cos_out = ts_bits_f64(ts_f64_bits(cv) ^ (((q + 1ULL) & 2ULL) << 62));
}

// sin / cos: Tessera's reduction below 2^17, CUDA's libdevice beyond it, for infinities
// and NaN (where the CPU uses Rust's std; those results may differ in the last ulp).
static __device__ double ts_sin64(double x) {
    if (!(fabs(x) < TS_SINCOS_MAX)) return sin(x);
    double s, c;
    ts_sincos_core(x, &s, &c);
    return s;
}
static __device__ double ts_cos64(double x) {
    if (!(fabs(x) < TS_SINCOS_MAX)) return cos(x);
    double s, c;
    ts_sincos_core(x, &s, &c);
    return c;
}
// Both at once, with the values of ts_sin64 and ts_cos64 (one argument reduction).
static __device__ void ts_sincos64(double x, double* s, double* c) {
    if (!(fabs(x) < TS_SINCOS_MAX)) {
        *s = sin(x);
        *c = cos(x);
        return;
    }
    ts_sincos_core(x, s, c);
}

// ---------------------------------------------------------------------------------------
// Philox4x32-10 and Tessera's random streams (kernels/src/cpu/philox.rs).
// ---------------------------------------------------------------------------------------

// The two lanes' 64 random bits of element i's block: key = seed, counter =
// [j lo, j hi, stream lo, stream hi] with j = i >> 1; lane 0 = (x1 << 32) | x0,
// lane 1 = (x3 << 32) | x2.
static __device__ __forceinline__ void ts_philox_lanes(ts_u64 seed, ts_u64 stream, ts_u64 i,
                                                       ts_u64* lane0, ts_u64* lane1) {
    ts_u64 j = i >> 1;
    ts_u32 x0 = (ts_u32)j, x1 = (ts_u32)(j >> 32), x2 = (ts_u32)stream, x3 = (ts_u32)(stream >> 32);
    ts_u32 k0 = (ts_u32)seed, k1 = (ts_u32)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        ts_u32 hi0 = __umulhi(0xD2511F53u, x0), lo0 = 0xD2511F53u * x0;
        ts_u32 hi1 = __umulhi(0xCD9E8D57u, x2), lo1 = 0xCD9E8D57u * x2;
        ts_u32 n0 = hi1 ^ x1 ^ k0;
        ts_u32 n2 = hi0 ^ x3 ^ k1;
        x0 = n0;
        x1 = lo1;
        x2 = n2;
        x3 = lo0;
    }
    *lane0 = ((ts_u64)x1 << 32) | (ts_u64)x0;
    *lane1 = ((ts_u64)x3 << 32) | (ts_u64)x2;
}

// A thread's last Philox block of one random leaf (j = ~0: none yet; element indices are
// below 2^64, so j = i >> 1 never is).
struct ts_block_cache {
    ts_u64 j, a, b;
};

// Element i's block, computed unless it is the cached one.
static __device__ __forceinline__ void ts_lanes(ts_u64 seed, ts_u64 stream, ts_u64 i, ts_block_cache* c) {
    if ((i >> 1) != c->j) {
        ts_philox_lanes(seed, stream, i, &c->a, &c->b);
        c->j = i >> 1;
    }
}

// The block of an even element i, computed without the cache's check: the generator primes
// the cache so when a thread reads both elements of the block in a row (a point's two
// coordinates), then takes each element's value from its lane (the ts_*_lane functions).
static __device__ __forceinline__ void ts_prime(ts_u64 seed, ts_u64 stream, ts_u64 i, ts_block_cache* c) {
    ts_philox_lanes(seed, stream, i, &c->a, &c->b);
    c->j = i >> 1;
}

// The 53-bit uniform in [0, 1) of 64 random bits (exact).
static __device__ __forceinline__ double ts_unit(ts_u64 bits) {
    return ts_mul(__ull2double_rn(bits >> 11), 1.1102230246251565404236316680908203125e-16);
}

// Uniform(low, low + range) of the cached block's lane `odd`: `low + range * u`.
static __device__ __forceinline__ double ts_uniform_lane(const ts_block_cache* c, int odd, double low, double range) {
    return ts_add(low, ts_mul(range, ts_unit(odd ? c->b : c->a)));
}

static __device__ __forceinline__ double ts_uniform(ts_u64 seed, ts_u64 stream, ts_u64 i, double low,
                                                    double range, ts_block_cache* c) {
    ts_lanes(seed, stream, i, c);
    return ts_uniform_lane(c, (int)(i & 1ULL), low, range);
}

// Normal(mean, std) of lane `odd` by Box-Muller over the cached block's two uniforms.
static __device__ double ts_normal_lane(const ts_block_cache* block, int odd, double mean, double std_dev) {
    double u1 = ts_sub(1.0, ts_unit(block->a));
    double u2 = ts_unit(block->b);
    double r = ts_sqrt(ts_mul(-2.0, ts_ln_scaled(u1, 0.0)));
    double s, c;
    ts_sincos_core(ts_mul(TS_TAU, u2), &s, &c);
    double z = odd ? ts_mul(r, s) : ts_mul(r, c);
    return ts_add(mean, ts_mul(std_dev, z));
}

static __device__ double ts_normal(ts_u64 seed, ts_u64 stream, ts_u64 i, double mean, double std_dev,
                                   ts_block_cache* block) {
    ts_lanes(seed, stream, i, block);
    return ts_normal_lane(block, (int)(i & 1ULL), mean, std_dev);
}

// RandInt of lane `odd`: `low + ((bits * range) >> 64)` (wrapping), range = (high - low) as u64.
static __device__ __forceinline__ ts_i64 ts_randint_lane(const ts_block_cache* c, int odd, ts_i64 low, ts_u64 range) {
    return (ts_i64)((ts_u64)low + __umul64hi(odd ? c->b : c->a, range));
}

static __device__ __forceinline__ ts_i64 ts_randint(ts_u64 seed, ts_u64 stream, ts_u64 i, ts_i64 low,
                                                    ts_u64 range, ts_block_cache* c) {
    ts_lanes(seed, stream, i, c);
    return ts_randint_lane(c, (int)(i & 1ULL), low, range);
}

// ---------------------------------------------------------------------------------------
// Warp shuffles of every register type (bool and u8 travel as int).
// ---------------------------------------------------------------------------------------

static __device__ __forceinline__ double ts_shfl(double v, int o) { return __shfl_down_sync(0xFFFFFFFFu, v, o); }
static __device__ __forceinline__ float ts_shfl(float v, int o) { return __shfl_down_sync(0xFFFFFFFFu, v, o); }
static __device__ __forceinline__ ts_i64 ts_shfl(ts_i64 v, int o) { return __shfl_down_sync(0xFFFFFFFFu, v, o); }
static __device__ __forceinline__ ts_i32 ts_shfl(ts_i32 v, int o) { return __shfl_down_sync(0xFFFFFFFFu, v, o); }
static __device__ __forceinline__ ts_u8 ts_shfl(ts_u8 v, int o) { return (ts_u8)__shfl_down_sync(0xFFFFFFFFu, (int)v, o); }
static __device__ __forceinline__ bool ts_shfl(bool v, int o) { return __shfl_down_sync(0xFFFFFFFFu, (int)v, o) != 0; }
