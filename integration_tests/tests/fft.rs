//! `fft` and `ifft` along an axis against the definition `X_k = Σ x_j e^(∓2πi jk/n)`
//! computed here, under several chunkings, with `n` cutting and padding, the three norms,
//! real and complex64 inputs, and a bad length.

use crate::common::*;
use tessera::tensor::FftNorm;
use tessera::{tensor, DType, Error, HostTensor, Tensor, C128, C64};

/// The transform of each lane along `axis` of a `rows × cols` matrix, by the definition,
/// the lanes cut or padded to `n`, divided by `scale`.
fn dft(
    x: &[C128],
    (rows, cols): (usize, usize),
    axis: usize,
    n: usize,
    inverse: bool,
) -> Vec<C128> {
    let sign = if inverse { 1.0 } else { -1.0 };
    let (out_rows, out_cols) = if axis == 0 { (n, cols) } else { (rows, n) };
    let have = if axis == 0 { rows } else { cols };
    let mut out = vec![C128::default(); out_rows * out_cols];
    for r in 0..out_rows {
        for c in 0..out_cols {
            let k = if axis == 0 { r } else { c };
            let mut acc = C128::default();
            for j in 0..n.min(have) {
                let xj = if axis == 0 {
                    x[j * cols + c]
                } else {
                    x[r * cols + j]
                };
                let w = sign * 2.0 * std::f64::consts::PI * (j * k % n) as f64 / n as f64;
                acc.re += xj.re * w.cos() - xj.im * w.sin();
                acc.im += xj.re * w.sin() + xj.im * w.cos();
            }
            out[r * out_cols + c] = acc;
        }
    }
    out
}

fn values(len: usize) -> Vec<C128> {
    (0..len)
        .map(|i| C128::new((i as f64 * 0.37).sin() * 3.0, (i as f64 * 0.91).cos()))
        .collect()
}

fn c128s(h: &HostTensor) -> Vec<C128> {
    assert_eq!(h.dtype(), DType::C128, "result dtype");
    h.as_slice::<C128>().expect("complex128").to_vec()
}

fn assert_close(got: &[C128], want: &[C128], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.re - w.re).abs() <= tol && (g.im - w.im).abs() <= tol;
        assert!(ok, "{what}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn transforms_match_the_definition_under_any_chunking() {
    let s = session();
    let (rows, cols) = (6, 7); // 7 is prime
    let x = values(rows * cols);
    for chunks in [[rows, cols], [2, 3], [1, 7], [5, 1]] {
        let t = tensor::from_slice(&x, &[rows, cols]).rechunk(&chunks);
        for (axis, n) in [(1, cols), (0, rows), (1, 4), (0, 9), (1, 12)] {
            for inverse in [false, true] {
                let want = dft(&x, (rows, cols), axis, n, inverse);
                let f = if inverse { Tensor::ifft } else { Tensor::fft };
                let got = c128s(&run(&s, &f(&t, Some(n), axis as isize, FftNorm::Forward)));
                // Under "forward" the inverse is unscaled and the forward divides by n.
                let want: Vec<C128> = if inverse {
                    want
                } else {
                    want.iter()
                        .map(|z| C128::new(z.re / n as f64, z.im / n as f64))
                        .collect()
                };
                let what = format!("chunks {chunks:?} axis {axis} n {n} inverse {inverse}");
                assert_close(&got, &want, 1e-12, &what);
            }
        }
    }
}

#[test]
fn round_trips_norms_and_input_types() {
    let s = session();
    let n = 32;
    let x = values(n);
    let t = tensor::from_slice(&x, &[n]).rechunk(&[5]);
    // ifft(fft(x)) = x under every norm.
    for norm in [FftNorm::Backward, FftNorm::Ortho, FftNorm::Forward] {
        let back = t.fft(None, -1, norm).ifft(None, -1, norm);
        assert_close(&c128s(&run(&s, &back)), &x, 1e-12, &format!("{norm:?}"));
    }
    // Parseval under "ortho": the transform keeps the sum of squared moduli.
    let energy = |v: &[C128]| v.iter().map(|z| z.re * z.re + z.im * z.im).sum::<f64>();
    let f = c128s(&run(&s, &t.fft(None, 0, FftNorm::Ortho)));
    assert!((energy(&f) - energy(&x)).abs() < 1e-9 * energy(&x));
    // A real input is transformed as complex: float64 in complex128, float32 in complex64.
    let re: Vec<f64> = x.iter().map(|z| z.re).collect();
    let got = c128s(&run(
        &s,
        &tensor::from_slice(&re, &[n]).fft(None, 0, FftNorm::Backward),
    ));
    let as_complex: Vec<C128> = re.iter().map(|&v| C128::new(v, 0.0)).collect();
    assert_close(
        &got,
        &dft(&as_complex, (1, n), 1, n, false),
        1e-12,
        "real input",
    );
    let f32s: Vec<f32> = re.iter().map(|&v| v as f32).collect();
    let t32 = tensor::from_slice(&f32s, &[n]).fft(None, 0, FftNorm::Backward);
    assert_eq!(t32.dtype().ok(), Some(DType::C64));
    let got = run(&s, &t32);
    let got = got.as_slice::<C64>().expect("complex64");
    for (g, w) in got.iter().zip(&dft(&as_complex, (1, n), 1, n, false)) {
        assert!((f64::from(g.re) - w.re).abs() < 1e-4 && (f64::from(g.im) - w.im).abs() < 1e-4);
    }
    let ints = tensor::from_slice(&[1i64, 2, 3], &[3]).fft(None, 0, FftNorm::Backward);
    assert_eq!(ints.dtype().ok(), Some(DType::C128));
}

#[test]
fn no_points_is_a_typed_error() {
    let t = tensor::from_slice(&[1.0f64, 2.0], &[2]);
    match t.fft(Some(0), 0, FftNorm::Backward).dtype() {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("at least one"), "{why}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert!(matches!(
        t.fft(None, 3, FftNorm::Backward).dtype(),
        Err(Error::AxisOutOfRange { .. })
    ));
}
