//! complex64 and complex128 end to end: arithmetic, functions, reductions, casts,
//! promotion, matrix products and spilling, each against a reference written here from
//! the textbook formulas (pairs of floats), under several chunkings.

use crate::common::*;
use tessera::tensor::NanOp;
use tessera::{tensor, DType, Error, HostTensor, Scalar, Session, Tensor, C128, C64};

/// Scrambled values with both signs and a spread of magnitudes, no NaN or infinity.
fn values(n: usize, salt: u64) -> Vec<C128> {
    (0..n as u64)
        .map(|i| {
            let h = (i ^ salt)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(23);
            let re = ((h % 2001) as f64 - 1000.0) / 64.0;
            let im = (((h >> 20) % 2001) as f64 - 1000.0) / 128.0;
            C128::new(re, im)
        })
        .collect()
}

fn c128s(h: &HostTensor) -> Vec<C128> {
    assert_eq!(h.dtype(), DType::C128, "result dtype");
    h.as_slice::<C128>().expect("complex128 values").to_vec()
}

fn mul(a: C128, b: C128) -> C128 {
    C128::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

fn close(a: C128, b: C128, tol: f64) -> bool {
    let scale = 1.0 + b.re.abs().max(b.im.abs());
    (a.re - b.re).abs() <= tol * scale && (a.im - b.im).abs() <= tol * scale
}

fn assert_close(got: &[C128], want: &[C128], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(close(*g, *w, tol), "{what}[{i}]: got {g}, want {w}");
    }
}

/// `op(a, b)` over several chunkings against `f` elementwise.
fn check_binary(
    s: &Session,
    what: &str,
    (a, b): (&[C128], &[C128]),
    op: impl Fn(&Tensor, &Tensor) -> Tensor,
    f: impl Fn(C128, C128) -> C128,
) {
    let n = a.len();
    let want: Vec<C128> = a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
    for (ca, cb) in [(n, n), (7, 5), (1, 4)] {
        let ta = tensor::from_slice(a, &[n]).rechunk(&[ca]);
        let tb = tensor::from_slice(b, &[n]).rechunk(&[cb]);
        let got = c128s(&run(s, &op(&ta, &tb)));
        assert_close(&got, &want, 1e-12, &format!("{what} (chunks {ca}, {cb})"));
    }
}

#[test]
fn arithmetic_matches_the_textbook_formulas() {
    let s = session();
    let n = 41;
    let (a, b) = (values(n, 1), values(n, 2));
    check_binary(
        &s,
        "add",
        (&a, &b),
        |x, y| x + y,
        |x, y| C128::new(x.re + y.re, x.im + y.im),
    );
    check_binary(
        &s,
        "sub",
        (&a, &b),
        |x, y| x - y,
        |x, y| C128::new(x.re - y.re, x.im - y.im),
    );
    check_binary(&s, "mul", (&a, &b), |x, y| x * y, mul);
    // x / y = x · conj(y) / |y|²
    check_binary(
        &s,
        "div",
        (&a, &b),
        |x, y| x / y,
        |x, y| {
            let d = y.re * y.re + y.im * y.im;
            let p = mul(x, C128::new(y.re, -y.im));
            C128::new(p.re / d, p.im / d)
        },
    );
    // x ** 3 by repeated products; a complex scalar operand.
    let t = tensor::from_slice(&a, &[n]).rechunk(&[6]);
    let got = c128s(&run(&s, &t.pow(3i64)));
    let want: Vec<C128> = a.iter().map(|&x| mul(mul(x, x), x)).collect();
    assert_close(&got, &want, 1e-12, "x ** 3");
    let i = C128::new(0.0, 1.0);
    let got = c128s(&run(&s, &t.mul(i)));
    let want: Vec<C128> = a.iter().map(|&x| C128::new(-x.im, x.re)).collect();
    assert_close(&got, &want, 0.0, "x * 1j");
}

#[test]
fn parts_modulus_and_functions() {
    let s = session();
    let n = 23;
    let a = values(n, 3);
    let t = tensor::from_slice(&a, &[n]).rechunk(&[5]);
    let re = f64s(&run(&s, &t.real()));
    let im = f64s(&run(&s, &t.imag()));
    let abs = f64s(&run(&s, &t.abs()));
    for (k, z) in a.iter().enumerate() {
        assert_eq!((re[k], im[k]), (z.re, z.im), "real/imag [{k}]");
        let m = (z.re * z.re + z.im * z.im).sqrt();
        assert!(
            (abs[k] - m).abs() <= 1e-12 * m,
            "abs [{k}]: {} vs {m}",
            abs[k]
        );
    }
    let conj = c128s(&run(&s, &t.conj()));
    let want: Vec<C128> = a.iter().map(|z| C128::new(z.re, -z.im)).collect();
    assert_eq!(conj, want, "conj");
    // exp(x) = e^re (cos im + i sin im); sqrt(x)² = x; exp(log(x)) = x.
    let exp = c128s(&run(&s, &t.exp()));
    let want: Vec<C128> = a
        .iter()
        .map(|z| C128::new(z.re.exp() * z.im.cos(), z.re.exp() * z.im.sin()))
        .collect();
    assert_close(&exp, &want, 1e-12, "exp");
    let sq = c128s(&run(&s, &(t.sqrt() * t.sqrt())));
    assert_close(&sq, &a, 1e-12, "sqrt(x)²");
    let el = c128s(&run(&s, &t.log().exp()));
    assert_close(&el, &a, 1e-12, "exp(log(x))");
    // sin² + cos² = 1 holds for complex values too.
    let one = c128s(&run(&s, &(t.sin() * t.sin() + t.cos() * t.cos())));
    let ones = vec![C128::new(1.0, 0.0); n];
    let small = a.iter().all(|z| z.im.abs() < 8.0);
    assert!(small, "values keep sin and cos finite");
    assert_close(&one, &ones, 1e-9, "sin² + cos²");
    // A real tensor's parts: itself and zeros.
    let r = tensor::from_slice(&[1.5f64, -2.0], &[2]);
    assert_eq!(f64s(&run(&s, &r.real())), vec![1.5, -2.0]);
    assert_eq!(f64s(&run(&s, &r.imag())), vec![0.0, 0.0]);
}

#[test]
fn reductions_are_independent_of_chunking() {
    let s = session();
    let n = 37;
    let a = values(n, 4);
    let sum = a.iter().fold(C128::default(), |acc, z| {
        C128::new(acc.re + z.re, acc.im + z.im)
    });
    let small: Vec<C128> = a
        .iter()
        .map(|z| C128::new(z.re / 16.0, z.im / 16.0))
        .collect();
    let prod = small
        .iter()
        .fold(C128::new(1.0, 0.0), |acc, &z| mul(acc, z));
    // NumPy's order: by real part, then imaginary.
    let max = a
        .iter()
        .copied()
        .fold(a[0], |m, z| if (z.re, z.im) > (m.re, m.im) { z } else { m });
    let argmax = a.iter().position(|&z| z == max).expect("max is an element") as i64;
    for chunk in [n, 8, 3] {
        let t = tensor::from_slice(&a, &[n]).rechunk(&[chunk]);
        let got = |x: Tensor| item(&run(&s, &x));
        let Scalar::C128(g) = got(t.sum()) else {
            panic!("sum is complex128")
        };
        assert!(close(g, sum, 1e-12), "sum ({chunk}): {g} vs {sum}");
        let Scalar::C128(g) = got(t.mean()) else {
            panic!("mean is complex128")
        };
        let mean = C128::new(sum.re / n as f64, sum.im / n as f64);
        assert!(close(g, mean, 1e-12), "mean ({chunk}): {g} vs {mean}");
        let ts = tensor::from_slice(&small, &[n]).rechunk(&[chunk]);
        let Scalar::C128(g) = got(ts.prod()) else {
            panic!("prod is complex128")
        };
        assert!(close(g, prod, 1e-10), "prod ({chunk}): {g} vs {prod}");
        assert_eq!(got(t.max()), Scalar::C128(max), "max ({chunk})");
        assert_eq!(got(t.argmax()), Scalar::I64(argmax), "argmax ({chunk})");
    }
    // Running sums: complex, whatever the chunks.
    let mut run_sum = C128::default();
    let want: Vec<C128> = a
        .iter()
        .map(|z| {
            run_sum = C128::new(run_sum.re + z.re, run_sum.im + z.im);
            run_sum
        })
        .collect();
    for chunk in [n, 6] {
        let t = tensor::from_slice(&a, &[n]).rechunk(&[chunk]);
        let got = c128s(&run(&s, &t.cumsum()));
        assert_close(&got, &want, 1e-12, &format!("cumsum ({chunk})"));
    }
    // NaN-skipping sums and means skip a value with a NaN part.
    let mut with_nan = a.clone();
    with_nan[3] = C128::new(1.0, f64::NAN);
    let t = tensor::from_slice(&with_nan, &[n]).rechunk(&[4]);
    let skipped = C128::new(sum.re - a[3].re, sum.im - a[3].im);
    let Scalar::C128(g) = item(&run(&s, &t.nan_reduce(NanOp::Sum, None, false))) else {
        panic!("nansum is complex128")
    };
    assert!(close(g, skipped, 1e-12), "nansum: {g} vs {skipped}");
    // complex64 sums stay complex64.
    let a64: Vec<C64> = a
        .iter()
        .map(|z| C64::new(z.re as f32, z.im as f32))
        .collect();
    let t = tensor::from_slice(&a64, &[n]).rechunk(&[5]);
    let h = run(&s, &t.sum());
    assert_eq!(h.dtype(), DType::C64);
}

#[test]
fn promotion_and_casts_follow_numpy() {
    let s = session();
    let z = tensor::from_slice(&[C64::new(1.5, -2.0)], &[1]);
    let f32t = tensor::from_slice(&[2.0f32], &[1]);
    let f64t = tensor::from_slice(&[2.0f64], &[1]);
    let i32t = tensor::from_slice(&[2i32], &[1]);
    assert_eq!((&z + &f32t).dtype().ok(), Some(DType::C64));
    assert_eq!((&z + &f64t).dtype().ok(), Some(DType::C128));
    assert_eq!((&z + &i32t).dtype().ok(), Some(DType::C128));
    // A complex scalar beside a float32 tensor is complex64 (a weak scalar).
    assert_eq!(f32t.mul(C128::new(0.0, 1.0)).dtype().ok(), Some(DType::C64));
    assert_eq!(
        i32t.mul(C128::new(0.0, 1.0)).dtype().ok(),
        Some(DType::C128)
    );
    // Casts: to a real type keeps the real part; from one, a zero imaginary part.
    let h = run(&s, &z.astype(DType::I64));
    assert_eq!(i64s(&h), vec![1]);
    let h = run(&s, &f64t.astype(DType::C128));
    assert_eq!(c128s(&h), vec![C128::new(2.0, 0.0)]);
    let h = run(&s, &z.astype(DType::C128));
    assert_eq!(c128s(&h), vec![C128::new(1.5, -2.0)]);
    let h = run(&s, &z.astype(DType::Bool));
    assert_eq!(bools(&h), vec![true]);
}

#[test]
fn products_of_complex_matrices() {
    let s = session();
    let (m, k, n) = (6, 5, 4);
    let a = values(m * k, 5);
    let b = values(k * n, 6);
    let mut want = vec![C128::default(); m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).fold(C128::default(), |acc, l| {
                let p = mul(a[i * k + l], b[l * n + j]);
                C128::new(acc.re + p.re, acc.im + p.im)
            });
        }
    }
    for chunk in [[m, k], [2, 3]] {
        let ta = tensor::from_slice(&a, &[m, k]).rechunk(&chunk);
        let tb = tensor::from_slice(&b, &[k, n]).rechunk(&[chunk[1], 2]);
        let got = c128s(&run(&s, &ta.matmul(&tb)));
        assert_close(&got, &want, 1e-12, &format!("matmul (chunks {chunk:?})"));
    }
    // A complex64 product is complex64.
    let a64: Vec<C64> = a
        .iter()
        .map(|z| C64::new(z.re as f32, z.im as f32))
        .collect();
    let t = tensor::from_slice(&a64, &[m, k]);
    assert_eq!(t.matmul(&t.transpose()).dtype().ok(), Some(DType::C64));
}

#[test]
fn functions_complex_values_lack_are_typed_errors() {
    let s = session();
    let z = tensor::from_slice(&values(4, 7), &[4]);
    let unsupported = |t: Tensor, what: &str| match t.execute(&s) {
        Err(Error::UnsupportedDType { dtype, .. }) => assert!(dtype.is_complex(), "{what}"),
        other => panic!("{what}: expected UnsupportedDType, got {other:?}"),
    };
    unsupported(z.floor(), "floor");
    unsupported(z.floor_divide(&z), "floor_divide");
    unsupported(z.remainder(&z), "remainder");
    unsupported(z.bitwise_and(&z), "bitwise_and");
    unsupported(z.var(0), "var");
    unsupported(z.nan_reduce(NanOp::Var(0), None, false), "nanvar");
    unsupported(z.arctan2(&z), "arctan2");
}

/// Complex chunks spilled to disk under a small budget come back bit for bit.
#[test]
fn complex_chunks_survive_spilling() {
    let n = 100_000;
    let a = values(n, 8);
    let spill = SpillParent::new("complex-spill");
    let s = session_from(
        builder()
            .memory_budget(256 << 10)
            .chunk_bytes(16 << 10)
            .spill_dir(&spill.0),
    );
    let t = tensor::from_slice(&a, &[n]).rechunk(&[1000]);
    let (out, stats) = s.execute_with_stats(&t.conj().conj()).expect("job");
    assert!(stats.storage.chunks_spilled > 0, "{stats:?}");
    assert_eq!(c128s(&out), a);
}
