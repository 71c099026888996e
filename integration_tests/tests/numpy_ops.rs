//! NumPy's other elementwise operators and functions (floor division, remainder, fmod,
//! bitwise operations and shifts, roundings, sign, clip, NaN/inf classification, the
//! trigonometric, hyperbolic and logarithmic functions) and the NaN-skipping reductions,
//! against scalar Rust written out here, under several chunkings.

use crate::common::*;
use tessera::{tensor, DType, Error, Tensor};

/// Chunk shapes every 1-D case runs under (one element, uneven, whole).
const CHUNKS: [usize; 3] = [1, 3, 64];

fn chunked<T: tessera::Element>(data: &[T], chunk: usize) -> Tensor {
    tensor::from_slice(data, &[data.len()]).rechunk(&[chunk])
}

/// Python's floor division for integers small enough to be exact in `f64`.
fn py_floordiv(a: i64, b: i64) -> i64 {
    if b == 0 {
        0
    } else {
        (a as f64 / b as f64).floor() as i64
    }
}

#[test]
fn integer_floor_divide_remainder_fmod_follow_python_and_numpy() {
    let s = session();
    let a: Vec<i64> = vec![7, -7, 7, -7, 0, 5, -5, 13, -13, 100, 6, -6, 9];
    let b: Vec<i64> = vec![2, 2, -2, -2, 3, 0, 0, 5, 5, -7, 3, 3, 1];
    let want_q: Vec<i64> = a.iter().zip(&b).map(|(&x, &y)| py_floordiv(x, y)).collect();
    // Python's remainder: a - b * (a // b), 0 by zero (NumPy).
    let want_r: Vec<i64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| if y == 0 { 0 } else { x - y * py_floordiv(x, y) })
        .collect();
    // C's fmod: the sign of `a`.
    let want_f: Vec<i64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| {
            if y == 0 {
                0
            } else {
                (x as f64 % y as f64) as i64
            }
        })
        .collect();
    assert_eq!(&want_q[..4], &[3, -4, -4, 3], "hand-checked floor division");
    assert_eq!(&want_r[..4], &[1, 1, -1, -1], "hand-checked remainder");
    for c in CHUNKS {
        let (ta, tb) = (chunked(&a, c), chunked(&b, c.max(2) - 1));
        assert_eq!(i64s(&run(&s, &ta.floor_divide(&tb))), want_q, "chunks {c}");
        assert_eq!(i64s(&run(&s, &(&ta % &tb))), want_r, "chunks {c}");
        assert_eq!(i64s(&run(&s, &ta.fmod(&tb))), want_f, "chunks {c}");
        let (q, r) = ta.divmod(&tb);
        assert_eq!(i64s(&run(&s, &q)), want_q);
        assert_eq!(i64s(&run(&s, &r)), want_r);
    }
    // Narrower dtypes keep their dtype; i32::MIN // -1 wraps as in NumPy.
    let a32: Vec<i32> = vec![-7, 7, i32::MIN, 9, -9];
    let b32: Vec<i32> = vec![2, -2, -1, 0, 4];
    let q = run(&s, &chunked(&a32, 2).floor_divide(chunked(&b32, 3)));
    assert_eq!(q.dtype(), DType::I32);
    assert_eq!(i32s(&q), vec![-4, -4, i32::MIN, 0, -3]);
    let r = run(&s, &(chunked(&a32, 2) % chunked(&b32, 3)));
    assert_eq!(i32s(&r), vec![1, -1, 0, 0, 3]);
    let u: Vec<u8> = vec![250, 7, 0, 255];
    let r = run(&s, &(&chunked(&u, 3) % 7i64));
    assert_eq!(
        r.dtype(),
        DType::U8,
        "a Python int keeps the tensor's dtype (NEP 50)"
    );
    assert_eq!(u8s(&r), vec![5, 0, 0, 3]);
    let q = run(&s, &chunked(&u, 3).floor_divide(0i64));
    assert_eq!(u8s(&q), vec![0; 4], "integer division by zero gives 0");
    // i64::MIN // -1 wraps to MIN and leaves 0, as NumPy's int64 does.
    let m = chunked(&[i64::MIN, i64::MIN, i64::MAX], 2);
    assert_eq!(
        i64s(&run(&s, &m.floor_divide(-1i64))),
        vec![i64::MIN, i64::MIN, -i64::MAX]
    );
    assert_eq!(i64s(&run(&s, &m.remainder(-1i64))), vec![0, 0, 0]);
    assert_eq!(
        i64s(&run(&s, &(&m % 10i64))),
        vec![2, 2, 7],
        "Python: MIN % 10 == 2"
    );
    // Scalars on the left.
    let r = run(&s, &(17i64 % chunked(&[5i64, -5, 3], 2)));
    assert_eq!(i64s(&r), vec![2, -3, 2]);
}

#[test]
fn float_floor_divide_and_remainder_follow_numpy() {
    let s = session();
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    // (a, b, a // b, a % b, fmod(a, b)) as Python / NumPy give them.
    let cases: [(f64, f64, f64, f64, f64); 14] = [
        (7.0, 2.0, 3.0, 1.0, 1.0),
        (-7.0, 2.0, -4.0, 1.0, -1.0),
        (7.0, -2.0, -4.0, -1.0, 1.0),
        (-7.5, -2.0, 3.0, -1.5, -1.5),
        (1.0, 0.1, 9.0, 0.09999999999999995, 0.09999999999999995),
        (7.0, 0.0, inf, nan, nan),
        (-7.0, 0.0, -inf, nan, nan),
        (0.0, 0.0, nan, nan, nan),
        (inf, 2.0, nan, nan, nan),
        (1.0, inf, 0.0, 1.0, 1.0),
        (-1.0, inf, -1.0, inf, -1.0),
        (nan, 1.0, nan, nan, nan),
        (3.0, -3.0, -1.0, -0.0, 0.0),
        (-0.0, 3.0, -0.0, 0.0, -0.0),
    ];
    let a: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let b: Vec<f64> = cases.iter().map(|c| c.1).collect();
    for c in CHUNKS {
        let (ta, tb) = (chunked(&a, c), chunked(&b, c + 1));
        let q = f64s(&run(&s, &ta.floor_divide(&tb)));
        let r = f64s(&run(&s, &(&ta % &tb)));
        let f = f64s(&run(&s, &ta.fmod(&tb)));
        for (i, case) in cases.iter().enumerate() {
            for (what, got, want) in [
                ("//", q[i], case.2),
                ("%", r[i], case.3),
                ("fmod", f[i], case.4),
            ] {
                let same = (got.is_nan() && want.is_nan())
                    || (got == want && got.is_sign_negative() == want.is_sign_negative());
                assert!(same, "{} {what} {}: got {got}, want {want}", case.0, case.1);
            }
        }
    }
    // Exact operands: floor(a / b) and a - b * floor(a / b) are the answers.
    let xs: Vec<f64> = (0..40).map(|i| (i as f64 - 20.0) * 0.75).collect();
    let ys: Vec<f64> = (0..40).map(|i| [0.5, -1.25, 2.0, -4.0][i % 4]).collect();
    let tx = chunked(&xs, 7);
    let ty = chunked(&ys, 5);
    let q = f64s(&run(&s, &tx.floor_divide(&ty)));
    let r = f64s(&run(&s, &tx.remainder(&ty)));
    for i in 0..xs.len() {
        let wq = (xs[i] / ys[i]).floor();
        assert_eq!(q[i], wq, "{} // {}", xs[i], ys[i]);
        assert_eq!(r[i], xs[i] - ys[i] * wq, "{} % {}", xs[i], ys[i]);
    }
    // f32 stays f32; an integer tensor with a float scalar is float64.
    let h = run(&s, &(tensor::from_slice(&[5.5f32, -5.5], &[2]) % 2.0));
    assert_eq!(h.dtype(), DType::F32);
    assert_eq!(f32s(&h), vec![1.5, 0.5]);
    let h = run(&s, &(tensor::from_slice(&[5i64, -5], &[2]) % 2.0));
    assert_eq!(h.dtype(), DType::F64);
    assert_eq!(f64s(&h), vec![1.0, 1.0]);
}

fn shl_ref<T: Copy>(a: T, b: i64, shl: impl Fn(T, u32) -> Option<T>, zero: T) -> T {
    u32::try_from(b)
        .ok()
        .and_then(|b| shl(a, b))
        .unwrap_or(zero)
}

#[test]
fn bitwise_operations_and_shifts_on_integers() {
    let s = session();
    let a: Vec<i64> = vec![0b1100, -1, 5, i64::MIN, 12345, -8, 1, -1, 3, 77];
    let b: Vec<i64> = vec![0b1010, 0x0F0F, -6, 3, 1, 1, 63, 64, -1, 100];
    for c in CHUNKS {
        let (ta, tb) = (chunked(&a, c), chunked(&b, c.max(2) - 1));
        let zip = |f: fn(i64, i64) -> i64| -> Vec<i64> {
            a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect()
        };
        assert_eq!(i64s(&run(&s, &(&ta & &tb))), zip(|x, y| x & y));
        assert_eq!(i64s(&run(&s, &(&ta | &tb))), zip(|x, y| x | y));
        assert_eq!(i64s(&run(&s, &(&ta ^ &tb))), zip(|x, y| x ^ y));
        assert_eq!(
            i64s(&run(&s, &!&ta)),
            a.iter().map(|&x| !x).collect::<Vec<_>>()
        );
        assert_eq!(
            i64s(&run(&s, &(&ta << &tb))),
            zip(|x, y| shl_ref(x, y, i64::checked_shl, 0))
        );
        // Arithmetic right shift; by the width or more: -1 for negatives, else 0.
        let shr = |x: i64, y: i64| {
            u32::try_from(y)
                .ok()
                .and_then(|y| x.checked_shr(y))
                .unwrap_or(if x < 0 { -1 } else { 0 })
        };
        assert_eq!(i64s(&run(&s, &(&ta >> &tb))), zip(shr));
    }
    assert_eq!(
        1i64 << 63,
        i64::MIN,
        "the reference shifts within the width"
    );
    // i32 and u8 wrap in their own width.
    let a32: Vec<i32> = vec![1, -3, 0x4000_0000, 7];
    let h = run(&s, &(&chunked(&a32, 3) << 2i64));
    assert_eq!(h.dtype(), DType::I32);
    assert_eq!(i32s(&h), a32.iter().map(|&x| x << 2).collect::<Vec<_>>());
    let h = run(&s, &(&chunked(&a32, 3) >> 40i64));
    assert_eq!(i32s(&h), vec![0, -1, 0, 0]);
    let u: Vec<u8> = vec![200, 1, 0xF0, 255];
    let h = run(&s, &(&chunked(&u, 3) << 1i64));
    assert_eq!(u8s(&h), vec![144, 2, 0xE0, 254]);
    let h = run(&s, &!&chunked(&u, 3));
    assert_eq!(u8s(&h), vec![55, 254, 0x0F, 0]);
    let h = run(&s, &(&chunked(&u, 3) ^ &chunked(&[1i32, 2, 3, 4], 2)));
    assert_eq!(h.dtype(), DType::I32, "u8 ^ i32 promotes to i32");
    assert_eq!(i32s(&h), vec![201, 3, 0xF3, 251]);
    // Bools: the logical operations.
    let p = [true, true, false, false];
    let q = [true, false, true, false];
    let (tp, tq) = (chunked(&p, 3), chunked(&q, 2));
    assert_eq!(
        bools(&run(&s, &(&tp ^ &tq))),
        vec![false, true, true, false]
    );
    assert_eq!(
        bools(&run(&s, &tp.bitwise_and(&tq))),
        vec![true, false, false, false]
    );
    assert_eq!(
        bools(&run(&s, &tp.bitwise_or(&tq))),
        vec![true, true, true, false]
    );
    assert_eq!(
        bools(&run(&s, &tp.bitwise_not())),
        vec![false, false, true, true]
    );
}

#[test]
fn bitwise_operations_refuse_floats_with_a_typed_error() {
    let s = session();
    let f = tensor::from_slice(&[1.0f64, 2.0], &[2]);
    let i = tensor::from_slice(&[1i64, 2], &[2]);
    let uf = |e: &Error| {
        matches!(
            e,
            Error::UnsupportedDType {
                dtype: DType::F64,
                ..
            }
        )
    };
    expect_carried_error(&s, "f & i", &(&f & &i), uf, &["bitwise_and", "float64"]);
    expect_carried_error(&s, "i | f", &(&i | &f), uf, &["bitwise_or", "float64"]);
    expect_carried_error(&s, "f ^ 1", &(&f ^ 1i64), uf, &["bitwise_xor"]);
    expect_carried_error(&s, "f << 1", &(&f << 1i64), uf, &["left_shift"]);
    expect_carried_error(&s, "i >> 1.0", &(&i >> 1.0), uf, &["right_shift"]);
    expect_carried_error(&s, "!f", &!&f, uf, &["invert"]);
    let b = tensor::from_slice(&[true], &[1]);
    let ub = |e: &Error| {
        matches!(
            e,
            Error::UnsupportedDType {
                dtype: DType::Bool,
                ..
            }
        )
    };
    expect_carried_error(&s, "b << b", &(&b << &b), ub, &["left_shift"]);
    expect_carried_error(&s, "sign(b)", &b.sign(), ub, &["sign"]);
    expect_carried_error(&s, "floor(b)", &b.floor(), ub, &["floor"]);
    // The session still works.
    assert_eq!(i64s(&run(&s, &(&i & 3i64))), vec![1, 2]);
}

#[test]
fn roundings_sign_clip_and_classification() {
    let s = session();
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let x = vec![
        -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.7, 0.0, nan, inf, -inf, 1e300,
    ];
    for c in CHUNKS {
        let t = chunked(&x, c);
        let check = |got: Tensor, f: fn(f64) -> f64| {
            let want = Arr::new(&[x.len()], x.iter().map(|&v| f(v)).collect());
            assert_exact(&run(&s, &got), &want, DType::F64);
        };
        check(t.floor(), f64::floor);
        check(t.ceil(), f64::ceil);
        check(t.trunc(), f64::trunc);
        check(t.rint(), f64::round_ties_even);
        check(t.round(), f64::round_ties_even);
        assert_eq!(
            &f64s(&run(&s, &t.round()))[..6],
            &[-2.0, -2.0, -0.0, 0.0, 2.0, 2.0],
            "halves to even"
        );
        let sign = f64s(&run(&s, &t.sign()));
        let want = [
            -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, -1.0, 0.0, nan, 1.0, -1.0, 1.0,
        ];
        assert_eq!(sign.len(), want.len());
        for (g, w) in sign.iter().zip(want) {
            assert!(g == &w || (g.is_nan() && w.is_nan()), "sign: {g} vs {w}");
        }
        // np.sign(-0.0) is +0.0.
        let zeros = f64s(&run(&s, &chunked(&[-0.0, 0.0], c).sign()));
        assert_eq!(
            zeros.iter().map(|z| z.to_bits()).collect::<Vec<_>>(),
            vec![0, 0]
        );
        let clip = f64s(&run(&s, &t.clip(-1.0, 2.0)));
        for (g, &v) in clip.iter().zip(&x) {
            let w = if v.is_nan() { nan } else { v.clamp(-1.0, 2.0) };
            assert!(g == &w || (g.is_nan() && w.is_nan()), "clip {v}: {g}");
        }
        let cls = |got: Tensor, f: fn(f64) -> bool| {
            let h = run(&s, &got);
            assert_eq!(h.dtype(), DType::Bool);
            assert_eq!(bools(&h), x.iter().map(|&v| f(v)).collect::<Vec<_>>());
        };
        cls(t.isnan(), f64::is_nan);
        cls(t.isinf(), f64::is_infinite);
        cls(t.isfinite(), f64::is_finite);
    }
    // round(decimals): NumPy's rint(x * 10**d) / 10**d.
    let y = vec![1.2345, -1.2355, 2.675, 149.0, -150.0, 0.125];
    let t = chunked(&y, 4);
    for d in [-2i32, -1, 1, 2, 3] {
        let p = 10f64.powi(d.abs());
        let want: Vec<f64> = y
            .iter()
            .map(|&v| {
                if d > 0 {
                    (v * p).round_ties_even() / p
                } else {
                    (v / p).round_ties_even() * p
                }
            })
            .collect();
        assert_eq!(f64s(&run(&s, &t.round_decimals(d))), want, "decimals {d}");
    }
    // NumPy scales first: 2.675 * 100 is 267.5 in f64, so 2.68 (Python's `round` gives 2.67).
    assert_eq!(f64s(&run(&s, &t.round_decimals(2)))[2], 2.68);
    assert_eq!(f64s(&run(&s, &t.round_decimals(-2)))[3], 100.0);
    // Integers keep their dtype.
    let i = chunked(&[15i64, 25, -15, -7, 0], 2);
    for (got, want) in [
        (i.floor(), vec![15, 25, -15, -7, 0]),
        (i.ceil(), vec![15, 25, -15, -7, 0]),
        (i.round_decimals(-1), vec![20, 20, -20, -10, 0]),
        (i.sign(), vec![1, 1, -1, -1, 0]),
        (i.clip(-10i64, 20i64), vec![15, 20, -10, -7, 0]),
    ] {
        let h = run(&s, &got);
        assert_eq!(h.dtype(), DType::I64);
        assert_eq!(i64s(&h), want);
    }
    assert_eq!(bools(&run(&s, &i.isnan())), vec![false; 5]);
    assert_eq!(bools(&run(&s, &i.isinf())), vec![false; 5]);
    assert_eq!(bools(&run(&s, &i.isfinite())), vec![true; 5]);
    let f32s_in = chunked(&[1.5f32, f32::NAN, f32::INFINITY], 2);
    assert_eq!(
        bools(&run(&s, &f32s_in.isfinite())),
        vec![true, false, false]
    );
    let h = run(&s, &f32s_in.floor());
    assert_eq!(h.dtype(), DType::F32);
}

#[test]
fn transcendental_functions_match_std() {
    let s = session();
    let unit: Vec<f64> = (0..33).map(|i| (i as f64 - 16.0) / 16.5).collect();
    let wide: Vec<f64> = (0..41).map(|i| (i as f64 - 20.0) * 0.37).collect();
    let pos: Vec<f64> = (0..30).map(|i| (i as f64 + 0.5) * 1.7).collect();
    let from_one: Vec<f64> = pos.iter().map(|v| v + 0.15).collect();
    type Case<'a> = (fn(&Tensor) -> Tensor, fn(f64) -> f64, &'a [f64]);
    let cases: [Case; 15] = [
        (Tensor::tan, f64::tan, &wide),
        (Tensor::arcsin, f64::asin, &unit),
        (Tensor::arccos, f64::acos, &unit),
        (Tensor::arctan, f64::atan, &wide),
        (Tensor::sinh, f64::sinh, &wide),
        (Tensor::cosh, f64::cosh, &wide),
        (Tensor::tanh, f64::tanh, &wide),
        (Tensor::log2, f64::log2, &pos),
        (Tensor::log10, f64::log10, &pos),
        (Tensor::log1p, f64::ln_1p, &unit),
        (Tensor::expm1, f64::exp_m1, &wide),
        (Tensor::exp2, f64::exp2, &wide),
        (Tensor::arcsinh, f64::asinh, &wide),
        (Tensor::arccosh, f64::acosh, &from_one),
        (Tensor::arctanh, f64::atanh, &unit),
    ];
    for (f, reference, xs) in cases {
        let want = Arr::new(&[xs.len()], xs.iter().map(|&v| reference(v)).collect());
        for c in [1, 7, 64] {
            let got = run(&s, &f(&chunked(xs, c)));
            assert_close(&got, &want, DType::F64, 4.0 * f64::EPSILON, 0.0);
        }
        // f32 stays f32 (within f32 rounding of the f64 answer).
        let xs32: Vec<f32> = xs.iter().map(|&v| v as f32).collect();
        let want32 = Arr::new(
            &[xs.len()],
            xs32.iter().map(|&v| reference(f64::from(v))).collect(),
        );
        let got = run(&s, &f(&chunked(&xs32, 5)));
        assert_close(&got, &want32, DType::F32, 1e-6, 1e-6);
    }
    // Outside the domain: NaN; at the poles: infinities.
    let h = f64s(&run(&s, &chunked(&[2.0, -1.0, 0.0], 2).arcsin()));
    assert!(h[0].is_nan() && h[1] == -std::f64::consts::FRAC_PI_2 && h[2] == 0.0);
    // np.arccosh([0.5, 1.0, inf]) == [nan, 0.0, inf]; np.arctanh([1.0, -1.0, 2.0]) ==
    // [inf, -inf, nan]; np.arcsinh(-inf) == -inf.
    let h = f64s(&run(&s, &chunked(&[0.5, 1.0, f64::INFINITY], 2).arccosh()));
    assert!(h[0].is_nan() && h[1] == 0.0 && h[2] == f64::INFINITY);
    let h = f64s(&run(&s, &chunked(&[1.0, -1.0, 2.0], 2).arctanh()));
    assert!(h[0] == f64::INFINITY && h[1] == f64::NEG_INFINITY && h[2].is_nan());
    assert_eq!(
        f64s(&run(&s, &chunked(&[f64::NEG_INFINITY], 1).arcsinh())),
        vec![f64::NEG_INFINITY]
    );
    let h = f64s(&run(&s, &chunked(&[0.0, -1.0], 1).log10()));
    assert_eq!(h[0], f64::NEG_INFINITY);
    assert!(h[1].is_nan());
    let h = run(&s, &chunked(&[1i64, 8, 1024], 2).log2());
    assert_eq!(h.dtype(), DType::F64, "integers give float64");
    assert_eq!(f64s(&h), vec![0.0, 3.0, 10.0]);
    // arctan2 over the four quadrants and the signed zeros; hypot with infinities.
    let ys = vec![1.0, 1.0, -1.0, -1.0, 0.0, -0.0, 0.0, 3.0, f64::INFINITY];
    let xs = vec![1.0, -1.0, -1.0, 1.0, -0.0, -1.0, 0.0, 4.0, f64::NAN];
    for c in [1, 4, 16] {
        let (ty, tx) = (chunked(&ys, c), chunked(&xs, c + 2));
        let a = f64s(&run(&s, &ty.arctan2(&tx)));
        let h = f64s(&run(&s, &ty.hypot(&tx)));
        for i in 0..ys.len() {
            let wa = ys[i].atan2(xs[i]);
            assert!(a[i].to_bits() == wa.to_bits() || (a[i].is_nan() && wa.is_nan()));
            assert_eq!(h[i], ys[i].hypot(xs[i]), "hypot({}, {})", ys[i], xs[i]);
        }
    }
    assert_eq!(f64s(&run(&s, &chunked(&[3.0], 1).hypot(4.0))), vec![5.0]);
    assert_eq!(
        f64s(&run(&s, &chunked(&[1.0], 1).arctan2(-1.0))),
        vec![3.0 * std::f64::consts::FRAC_PI_4]
    );
    // copysign takes the sign bit: of -0.0 and of a negative NaN too (np.copysign).
    let mags = vec![1.5, -2.0, 0.0, f64::INFINITY, f64::NAN, -3.0];
    let signs = vec![-0.0, 1.0, -1.0, -f64::NAN, f64::NEG_INFINITY, 0.0];
    for c in [1, 4] {
        let got = f64s(&run(
            &s,
            &chunked(&mags, c).copysign(chunked(&signs, c + 1)),
        ));
        for i in 0..mags.len() {
            let want = mags[i].copysign(signs[i]);
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "copysign({}, {})",
                mags[i],
                signs[i]
            );
        }
    }
    let h = run(&s, &chunked(&[3i64, -4], 1).copysign(-1.0));
    assert_eq!(h.dtype(), DType::F64, "integers give float64");
    assert_eq!(f64s(&h), vec![-3.0, -4.0]);
    let h = run(&s, &chunked(&[2.0f32], 1).copysign(-1.0));
    assert_eq!(h.dtype(), DType::F32, "float32 stays float32");
    // nextafter, the neighbours written out by hand (C's nextafter, np.nextafter): the
    // least subnormal next to either zero, `to` itself where equal (-0.0 too), the largest
    // finite value next to infinity, NaN from a NaN.
    let tiny = f64::from_bits(1);
    let cases = [
        (1.0, 2.0, 1.0 + f64::EPSILON),
        (1.0, 0.0, 1.0 - f64::EPSILON / 2.0),
        (0.0, 1.0, tiny),
        (0.0, -1.0, -tiny),
        (-0.0, 1.0, tiny),
        (tiny, 0.0, 0.0),
        (2.0, 2.0, 2.0),
        (0.0, -0.0, -0.0),
        (f64::INFINITY, 0.0, f64::MAX),
        (f64::MAX, f64::INFINITY, f64::INFINITY),
        (-1.0, f64::NEG_INFINITY, -1.0 - f64::EPSILON),
        (f64::NAN, 1.0, f64::NAN),
        (1.0, f64::NAN, f64::NAN),
    ];
    let (from, to): (Vec<f64>, Vec<f64>) = cases.iter().map(|&(a, b, _)| (a, b)).unzip();
    for c in [1, 4, 16] {
        let got = f64s(&run(&s, &chunked(&from, c).nextafter(chunked(&to, c + 1))));
        for (g, &(a, b, want)) in got.iter().zip(&cases) {
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "nextafter({a}, {b}) = {g}, not {want}"
            );
        }
    }
    let h = run(&s, &chunked(&[1.0f32, 1.0], 1).nextafter(2.0));
    assert_eq!(h.dtype(), DType::F32, "float32 stays float32");
    assert_eq!(h.as_slice::<f32>().unwrap(), &[1.0 + f32::EPSILON; 2]);
    let h = run(&s, &chunked(&[3i64], 1).nextafter(0.0));
    assert_eq!(h.dtype(), DType::F64, "integers give float64");
    assert_eq!(f64s(&h), vec![3.0 - 2.0 * f64::EPSILON]);
    let z = chunked(&[1.0], 1).astype(DType::C128);
    assert!(
        matches!(
            z.nextafter(&z).execute(&s),
            Err(Error::UnsupportedDType { .. })
        ),
        "complex values are refused"
    );
}

#[test]
fn fused_chains_agree_across_chunkings() {
    let s = session();
    let n = 1000;
    let a: Vec<i64> = (0..n).map(|i| (i * 7919 % 2003) - 1001).collect();
    let want: Vec<i64> = a
        .iter()
        .map(|&x| {
            let q = py_floordiv(x, 7);
            let r = x - 5 * py_floordiv(x, 5);
            ((q ^ r) << 3) | ((x & 0xFF) >> 2)
        })
        .collect();
    let fx: Vec<f64> = a.iter().map(|&x| x as f64 / 97.0).collect();
    let want_f: f64 = fx
        .iter()
        .map(|&v| (v.tanh() * 10.0).floor() + v.hypot(2.0) + v.abs().ln_1p())
        .sum();
    for c in [1, 64, 333, 1000] {
        let t = chunked(&a, c);
        let chain = ((t.floor_divide(7i64) ^ (&t % 5i64)) << 3i64) | ((&t & 0xFFi64) >> 2i64);
        assert_eq!(i64s(&run(&s, &chain)), want, "chunks {c}");
        let f = t.astype(DType::F64) / 97.0;
        let total = ((f.tanh() * 10.0).floor() + f.hypot(2.0) + f.abs().log1p()).sum();
        let got = item_f64(&run(&s, &total));
        assert!(
            close(got, want_f, 1e-12, 0.0),
            "chunks {c}: {got} vs {want_f}"
        );
    }
}

/// The reference of a NaN-skipping reduction: `f` of the values that are not NaN.
fn nan_ref(a: &Arr, axes: &[usize], f: impl Fn(&[f64]) -> f64) -> Arr {
    a.reduce(axes, false, |vals| {
        let kept: Vec<f64> = vals.iter().copied().filter(|v| !v.is_nan()).collect();
        f(&kept)
    })
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn var(v: &[f64], ddof: usize) -> f64 {
    if v.len() <= ddof {
        return f64::NAN;
    }
    let m = mean(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - ddof) as f64
}

#[test]
fn nan_reductions_skip_nan_under_any_chunking() {
    let s = session();
    let nan = f64::NAN;
    // Row 1 is all NaN; row 2 has one value left.
    let a = Arr::new(
        &[4, 5],
        vec![
            1.0, nan, 3.0, -2.0, 8.0, //
            nan, nan, nan, nan, nan, //
            nan, 4.5, nan, nan, nan, //
            0.5, -1.0, 2.0, nan, 7.0,
        ],
    );
    type R = fn(&[f64]) -> f64;
    let refs: [(&str, R); 7] = [
        ("nansum", |v| v.iter().sum()),
        ("nanmean", |v| mean(v)),
        ("nanmin", |v| v.iter().copied().fold(f64::NAN, f64::min)),
        ("nanmax", |v| v.iter().copied().fold(f64::NAN, f64::max)),
        ("nanvar0", |v| var(v, 0)),
        ("nanvar1", |v| var(v, 1)),
        ("nanstd1", |v| var(v, 1).sqrt()),
    ];
    let apply = |t: &Tensor, name: &str, axis: Option<isize>| match (name, axis) {
        ("nansum", None) => t.nansum(),
        ("nansum", Some(ax)) => t.nansum_axis(ax),
        ("nanmean", None) => t.nanmean(),
        ("nanmean", Some(ax)) => t.nanmean_axis(ax),
        ("nanmin", None) => t.nanmin(),
        ("nanmin", Some(ax)) => t.nanmin_axis(ax),
        ("nanmax", None) => t.nanmax(),
        ("nanmax", Some(ax)) => t.nanmax_axis(ax),
        ("nanvar0", None) => t.nanvar(0),
        ("nanvar0", Some(ax)) => t.nanvar_axis(ax, 0),
        ("nanvar1", None) => t.nanvar(1),
        ("nanvar1", Some(ax)) => t.nanvar_axis(ax, 1),
        ("nanstd1", None) => t.nanstd(1),
        (_, Some(ax)) => t.nanstd_axis(ax, 1),
        _ => unreachable!(),
    };
    for chunk in [[1, 1], [3, 2], [4, 5]] {
        let t = tensor::from_slice(&a.data, &a.shape).rechunk(&chunk);
        for (name, f) in refs {
            for (axis, axes) in [(None, vec![0, 1]), (Some(1), vec![1]), (Some(-2), vec![0])] {
                let want = nan_ref(&a, &axes, f);
                let got = run(&s, &apply(&t, name, axis));
                assert_close(&got, &want, DType::F64, 1e-14, 1e-14);
            }
        }
    }
    // The all-NaN row, spelled out: sum 0, the others NaN.
    let t = tensor::from_slice(&a.data, &a.shape).rechunk(&[2, 2]);
    assert_eq!(f64s(&run(&s, &t.nansum_axis(1)))[1], 0.0);
    for got in [
        t.nanmean_axis(1),
        t.nanmin_axis(1),
        t.nanmax_axis(1),
        t.nanvar_axis(1, 0),
    ] {
        assert!(f64s(&run(&s, &got))[1].is_nan());
    }
    assert_eq!(f64s(&run(&s, &t.nanmin_axis(1)))[0], -2.0);
    assert_eq!(
        f64s(&run(&s, &t.nanvar_axis(1, 0)))[2],
        0.0,
        "one value: variance 0"
    );
    // f32 stays f32; integers have no NaN (mean and var in float64).
    let f = tensor::from_slice(&[1.0f32, f32::NAN, 4.0], &[3]).rechunk(&[2]);
    let h = run(&s, &f.nanmean());
    assert_eq!(h.dtype(), DType::F32);
    assert_eq!(f32s(&h), vec![2.5]);
    assert_eq!(f32s(&run(&s, &f.nanmax())), vec![4.0]);
    let i = tensor::from_slice(&[3i64, -1, 4, 1], &[4]).rechunk(&[3]);
    assert_eq!(i64s(&run(&s, &i.nansum())), vec![7]);
    assert_eq!(i64s(&run(&s, &i.nanmin())), vec![-1]);
    let h = run(&s, &i.nanmean());
    assert_eq!(h.dtype(), DType::F64);
    assert_eq!(f64s(&h), vec![1.75]);
    assert!(close(
        item_f64(&run(&s, &i.nanvar(0))),
        var(&[3.0, -1.0, 4.0, 1.0], 0),
        1e-15,
        0.0
    ));
}

#[test]
fn nanargmin_and_nanargmax_skip_nan_and_refuse_all_nan_slices() {
    let s = session();
    let nan = f64::NAN;
    // np.nanargmin([nan, 3, inf, nan, -1, -1]) == 4; np.nanargmax(...) == 2
    // np.nanargmax([nan, inf]) == 1 (a NaN is never taken for an infinity)
    let x = [nan, 3.0, f64::INFINITY, nan, -1.0, -1.0];
    for c in CHUNKS {
        let t = chunked(&x, c);
        assert_eq!(i64s(&run(&s, &t.nanargmin())), vec![4], "chunks {c}");
        assert_eq!(i64s(&run(&s, &t.nanargmax())), vec![2], "chunks {c}");
        let u = chunked(&[nan, f64::INFINITY], c);
        assert_eq!(i64s(&run(&s, &u.nanargmax())), vec![1], "chunks {c}");
    }
    // Along an axis: [[nan, 2, 1], [5, nan, 5]] -> nanargmin(axis=1) == [2, 0],
    // nanargmax(axis=1) == [1, 0], nanargmin(axis=0) == [1, 0, 0].
    let m = tensor::from_slice(&[nan, 2.0, 1.0, 5.0, nan, 5.0], &[2, 3]);
    for c in [1, 2, 3] {
        let t = m.rechunk(&[c.min(2), c]);
        assert_eq!(i64s(&run(&s, &t.nanargmin_axis(1))), vec![2, 0]);
        assert_eq!(i64s(&run(&s, &t.nanargmax_axis(-1))), vec![1, 0]);
        assert_eq!(i64s(&run(&s, &t.nanargmin_axis(0))), vec![1, 0, 0]);
    }
    // Integers have no NaN: the plain argmin. An all-NaN slice fails the job with NumPy's
    // message, and the session goes on.
    let ints = tensor::from_slice(&[4i64, 1, 1, 9], &[4]);
    assert_eq!(i64s(&run(&s, &ints.nanargmin())), vec![1]);
    let bad = tensor::from_slice(&[1.0, nan, 2.0, nan], &[2, 2]).nanargmax_axis(0);
    match bad.execute(&s) {
        Err(Error::ChunkFailed { cause, .. }) => {
            assert!(cause.to_string().contains("All-NaN slice"), "{cause}")
        }
        other => panic!("an all-NaN column: {other:?}"),
    }
    assert_eq!(i64s(&run(&s, &ints.argmax())), vec![3]);
}
