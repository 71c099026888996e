//! The estimators of `tessera::learn` checked against independent computations in this
//! file (a Lloyd iteration by hand, closed-form 2 × 2 eigenvalues, normal equations solved
//! by Cramer's rule, the objective's gradient summed by hand), under several chunkings,
//! and for bad input.

use crate::common::{f64s, session};
use crate::learn::values;
use tessera::learn::{
    KMeans, KMeansInit, LeastSquares, LogisticRegression, Pca, PcaSolver, TruncatedSvd,
};
use tessera::{tensor, Error, HostTensor, Session, Tensor};

/// `per` points around each of `centres` (2-D), offsets in [-0.5, 0.5).
fn blobs(centres: &[[f64; 2]], per: usize) -> Vec<f64> {
    let noise = values(centres.len() * per, 2, 3);
    centres
        .iter()
        .flat_map(|c| std::iter::repeat_n(c, per))
        .zip(noise.chunks(2))
        .flat_map(|(c, e)| [c[0] + 0.5 * e[0], c[1] + 0.5 * e[1]])
        .collect()
}

/// `v` as a computed matrix of `cols` columns.
fn host(s: &Session, v: &[f64], cols: usize) -> HostTensor {
    matrix(v, cols, v.len() / cols).execute(s).unwrap()
}

fn matrix(v: &[f64], cols: usize, rows_per_chunk: usize) -> Tensor {
    tensor::from_vec(v.to_vec(), &[v.len() / cols, cols]).rechunk(&[rows_per_chunk, cols])
}

/// Lloyd iterations by hand from `centres`: each row to its nearest centre, each centre
/// to its rows' mean; then the inertia.
fn lloyd_by_hand(x: &[f64], mut centres: Vec<f64>, cols: usize, iters: usize) -> (Vec<f64>, f64) {
    let nearest = |row: &[f64], centres: &[f64]| {
        centres
            .chunks(cols)
            .map(|c| row.iter().zip(c).map(|(a, b)| (a - b).powi(2)).sum::<f64>())
            .enumerate()
            .fold(
                (0, f64::INFINITY),
                |m, (i, d)| if d < m.1 { (i, d) } else { m },
            )
    };
    for _ in 0..iters {
        let k = centres.len() / cols;
        let (mut sums, mut counts) = (vec![0.0; k * cols], vec![0.0; k]);
        for row in x.chunks(cols) {
            let (c, _) = nearest(row, &centres);
            counts[c] += 1.0;
            (0..cols).for_each(|j| sums[c * cols + j] += row[j]);
        }
        for c in (0..k).filter(|&c| counts[c] > 0.0) {
            (0..cols).for_each(|j| centres[c * cols + j] = sums[c * cols + j] / counts[c]);
        }
    }
    let inertia = x.chunks(cols).map(|row| nearest(row, &centres).1).sum();
    (centres, inertia)
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: {a:?} vs {b:?}"
        );
    }
}

#[test]
fn kmeans_finds_separated_clusters_alike_under_every_chunking() {
    let s = session();
    let truth = [[0.0, 0.0], [0.0, 10.0], [10.0, 0.0], [10.0, 10.0]];
    let x = blobs(&truth, 250);
    for init in [KMeansInit::Parallel, KMeansInit::Random] {
        let mut first: Option<Vec<f64>> = None;
        for rows in [1000, 333, 64] {
            let model = KMeans {
                init: init.clone(),
                n_init: 3,
                seed: 11,
                ..KMeans::new(4)
            };
            let fit = model.fit(&s, &matrix(&x, 2, rows)).unwrap();
            let mut centres: Vec<[f64; 2]> =
                f64s(&fit.centres).chunks(2).map(|c| [c[0], c[1]]).collect();
            // In the truth's order: by the rounded coordinates.
            centres.sort_by_key(|c| (c[0].round() as i64, c[1].round() as i64));
            // Each found centre is its blob's mean (within the noise's reach of the truth).
            for (c, t) in centres.iter().zip(&truth) {
                assert!(
                    (c[0] - t[0]).abs() < 0.1 && (c[1] - t[1]).abs() < 0.1,
                    "{centres:?}"
                );
            }
            // The inertia is that of the returned centres, summed by hand.
            let (_, inertia) = lloyd_by_hand(&x, f64s(&fit.centres), 2, 0);
            assert!(
                (fit.inertia - inertia).abs() <= 1e-9 * inertia,
                "{init:?} {rows}"
            );
            let flat: Vec<f64> = centres.concat();
            match &first {
                None => first = Some(flat),
                Some(f) => close(&flat, f, 1e-12, "centres across chunkings"),
            }
        }
    }
}

#[test]
fn kmeans_from_given_centres_equals_lloyd_by_hand() {
    let s = session();
    let x = values(600, 3, 21);
    let start = values(5, 3, 8);
    let (want, inertia) = lloyd_by_hand(&x, start.clone(), 3, 4);
    for rows in [600, 97] {
        let model = KMeans {
            init: KMeansInit::Centres(host(&s, &start, 3)),
            max_iter: 4,
            tol: 0.0,
            ..KMeans::new(5)
        };
        let fit = model.fit(&s, &matrix(&x, 3, rows)).unwrap();
        assert_eq!(fit.n_iter, 4);
        close(&f64s(&fit.centres), &want, 1e-12, "centres");
        assert!((fit.inertia - inertia).abs() <= 1e-9 * inertia);
    }
}

#[test]
fn least_squares_solve_the_normal_equations() {
    let s = session();
    let (n, noise) = (400, values(400, 1, 4));
    let x = values(n, 2, 6);
    // y = 3 x0 − 2 x1 + 5 + noise.
    let y: Vec<f64> = x
        .chunks(2)
        .zip(&noise)
        .map(|(r, e)| 3.0 * r[0] - 2.0 * r[1] + 5.0 + 0.1 * e)
        .collect();
    // By hand: centred 2 × 2 normal equations with a ridge, solved by Cramer's rule.
    let mean = |f: &dyn Fn(usize) -> f64| (0..n).map(f).sum::<f64>() / n as f64;
    let (m0, m1, my) = (
        mean(&|i| x[2 * i]),
        mean(&|i| x[2 * i + 1]),
        mean(&|i| y[i]),
    );
    let dot = |f: &dyn Fn(usize) -> f64| (0..n).map(f).sum::<f64>();
    let (a, b, d) = (
        dot(&|i| (x[2 * i] - m0).powi(2)),
        dot(&|i| (x[2 * i] - m0) * (x[2 * i + 1] - m1)),
        dot(&|i| (x[2 * i + 1] - m1).powi(2)),
    );
    let (u, v) = (
        dot(&|i| (x[2 * i] - m0) * (y[i] - my)),
        dot(&|i| (x[2 * i + 1] - m1) * (y[i] - my)),
    );
    for (alpha, rows) in [(0.0, 400), (0.0, 33), (7.5, 128)] {
        let (a, d) = (a + alpha, d + alpha);
        let det = a * d - b * b;
        let want = [(u * d - b * v) / det, (a * v - b * u) / det];
        let fit = LeastSquares {
            alpha,
            fit_intercept: true,
        }
        .fit(
            &s,
            &matrix(&x, 2, rows),
            &tensor::from_vec(y.clone(), &[n]).rechunk(&[rows]),
        )
        .unwrap();
        assert_eq!(fit.coef.shape(), &[1, 2]);
        close(&f64s(&fit.coef), &want, 1e-10, "coefficients");
        close(
            &fit.intercept,
            &[my - m0 * want[0] - m1 * want[1]],
            1e-10,
            "intercept",
        );
    }
    // Without an intercept and with two targets (the second twice the first).
    let y2: Vec<f64> = y.iter().flat_map(|v| [*v, 2.0 * v]).collect();
    let fit = LeastSquares {
        alpha: 0.0,
        fit_intercept: false,
    }
    .fit(&s, &matrix(&x, 2, 50), &matrix(&y2, 2, 50))
    .unwrap();
    let c = f64s(&fit.coef);
    close(&c[2..], &[2.0 * c[0], 2.0 * c[1]], 1e-10, "second target");
    assert_eq!(fit.intercept, vec![0.0, 0.0]);
}

#[test]
fn logistic_regression_reaches_the_penalised_optimum_under_any_chunking() {
    let s = session();
    let n = 500;
    let x = values(n, 3, 13);
    let noise = values(n, 1, 2);
    let labels: Vec<f64> = x
        .chunks(3)
        .zip(&noise)
        .map(|(r, e)| f64::from(2.0 * r[0] - r[1] + 0.5 * r[2] + 0.8 * e > 0.1))
        .collect();
    let model = LogisticRegression {
        c: 2.0,
        tol: 1e-10,
        ..LogisticRegression::default()
    };
    let mut first: Option<Vec<f64>> = None;
    for rows in [500, 128, 45] {
        let fit = model
            .fit(
                &s,
                &matrix(&x, 3, rows),
                &tensor::from_vec(labels.clone(), &[n]).rechunk(&[rows]),
            )
            .unwrap();
        // The objective's gradient, by hand, is zero at the fit: w + C Σ (p − y) x, and
        // Σ (p − y) for the unpenalised intercept.
        let mut grad = [fit.coef[0], fit.coef[1], fit.coef[2], 0.0];
        for (r, y) in x.chunks(3).zip(&labels) {
            let z = r.iter().zip(&fit.coef).map(|(a, w)| a * w).sum::<f64>() + fit.intercept;
            let p = 1.0 / (1.0 + (-z).exp());
            (0..3).for_each(|j| grad[j] += model.c * (p - y) * r[j]);
            grad[3] += model.c * (p - y);
        }
        assert!(grad.iter().all(|g| g.abs() < 1e-8), "gradient {grad:?}");
        assert!(fit.n_iter < 20, "Newton took {} steps", fit.n_iter);
        let w: Vec<f64> = fit.coef.iter().chain([&fit.intercept]).copied().collect();
        match &first {
            None => first = Some(w),
            Some(f) => close(&w, f, 1e-9, "weights across chunkings"),
        }
    }
}

#[test]
fn pca_and_truncated_svd_equal_the_eigen_decomposition_by_hand() {
    let s = session();
    let n = 300;
    let raw = values(n, 2, 17);
    // Stretched along (1, 1) and shifted, so the first component is ±(1, 1)/√2.
    let x: Vec<f64> = raw
        .chunks(2)
        .flat_map(|r| [3.0 * r[0] + 0.3 * r[1] + 4.0, 3.0 * r[0] - 0.3 * r[1] - 1.0])
        .collect();
    let col = |j: usize| x.iter().skip(j).step_by(2).copied().collect::<Vec<f64>>();
    let (c0, c1) = (col(0), col(1));
    let mean = [
        c0.iter().sum::<f64>() / n as f64,
        c1.iter().sum::<f64>() / n as f64,
    ];
    let cov = |a: &[f64], ma: f64, b: &[f64], mb: f64| {
        a.iter()
            .zip(b)
            .map(|(p, q)| (p - ma) * (q - mb))
            .sum::<f64>()
            / (n - 1) as f64
    };
    let (sxx, sxy, syy) = (
        cov(&c0, mean[0], &c0, mean[0]),
        cov(&c0, mean[0], &c1, mean[1]),
        cov(&c1, mean[1], &c1, mean[1]),
    );
    // The eigenvalues of [[sxx, sxy], [sxy, syy]] in closed form.
    let (half_trace, gap) = (
        (sxx + syy) / 2.0,
        (((sxx - syy) / 2.0).powi(2) + sxy * sxy).sqrt(),
    );
    let eig = [half_trace + gap, half_trace - gap];
    // The first eigenvector, signed with its largest entry positive.
    let (vx, vy) = (sxy, eig[0] - sxx);
    let norm = (vx * vx + vy * vy).sqrt();
    let sign = if vx.abs() >= vy.abs() {
        vx.signum()
    } else {
        vy.signum()
    };
    let first = [sign * vx / norm, sign * vy / norm];
    let solvers = [
        PcaSolver::Full,
        PcaSolver::Randomized {
            power_iters: 2,
            oversamples: 4,
            seed: 3,
        },
    ];
    for (solver, rows) in solvers.into_iter().zip([300, 41]) {
        let fit = Pca {
            n_components: None,
            solver,
        }
        .fit(&s, &matrix(&x, 2, rows))
        .unwrap();
        close(&fit.mean, &mean, 1e-12, "mean");
        let fit = fit.svd;
        close(&fit.explained_variance, &eig, 1e-9, "explained variance");
        close(
            &fit.explained_variance_ratio,
            &[eig[0] / (eig[0] + eig[1]), eig[1] / (eig[0] + eig[1])],
            1e-9,
            "ratio",
        );
        close(&f64s(&fit.components)[..2], &first, 1e-9, "first component");
    }
    // Not centred: the top singular value is √ of XᵀX's largest eigenvalue.
    let g = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let (a, b, d) = (g(&c0, &c0), g(&c0, &c1), g(&c1, &c1));
    let top = ((a + d) / 2.0 + (((a - d) / 2.0).powi(2) + b * b).sqrt()).sqrt();
    let svd = TruncatedSvd {
        n_components: 1,
        n_iter: 4,
        n_oversamples: 1,
        seed: 9,
    };
    let fit = svd.fit(&s, &matrix(&x, 2, 64)).unwrap();
    close(&fit.singular_values, &[top], 1e-9, "top singular value");
    assert_eq!(fit.components.shape(), &[1, 2]);
}

#[test]
fn estimators_refuse_bad_input_with_typed_errors() {
    let s = session();
    let x = matrix(&values(50, 2, 1), 2, 20);
    let vector = tensor::from_vec(values(50, 1, 1), &[50]);
    let invalid = |e: Error| assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let shape = |e: Error| assert!(matches!(e, Error::Shape(_)), "{e:?}");
    invalid(KMeans::new(0).fit(&s, &x).unwrap_err());
    invalid(KMeans::new(51).fit(&s, &x).unwrap_err());
    invalid(
        KMeans {
            max_iter: 0,
            ..KMeans::new(2)
        }
        .fit(&s, &x)
        .unwrap_err(),
    );
    let wrong = host(&s, &[0.0; 6], 2);
    invalid(
        KMeans {
            init: KMeansInit::Centres(wrong),
            ..KMeans::new(2)
        }
        .fit(&s, &x)
        .unwrap_err(),
    );
    shape(KMeans::new(2).fit(&s, &vector).unwrap_err());
    let nan = tensor::from_vec(vec![0.0, f64::NAN, 1.0, 2.0], &[2, 2]);
    invalid(KMeans::new(1).fit(&s, &nan).unwrap_err());
    let ls = LeastSquares {
        alpha: -1.0,
        fit_intercept: true,
    };
    invalid(ls.fit(&s, &x, &vector).unwrap_err());
    let short = tensor::from_vec(vec![1.0; 49], &[49]);
    shape(
        LeastSquares {
            alpha: 0.0,
            fit_intercept: true,
        }
        .fit(&s, &x, &short)
        .unwrap_err(),
    );
    shape(
        LogisticRegression::default()
            .fit(&s, &x, &short)
            .unwrap_err(),
    );
    let no_c = LogisticRegression {
        c: 0.0,
        ..LogisticRegression::default()
    };
    invalid(no_c.fit(&s, &x, &vector).unwrap_err());
    invalid(
        Pca {
            n_components: Some(3),
            solver: PcaSolver::Full,
        }
        .fit(&s, &x)
        .unwrap_err(),
    );
    shape(
        Pca {
            n_components: None,
            solver: PcaSolver::Full,
        }
        .fit(&s, &vector)
        .unwrap_err(),
    );
    let svd = TruncatedSvd {
        n_components: 0,
        n_iter: 1,
        n_oversamples: 1,
        seed: 0,
    };
    invalid(svd.fit(&s, &x).unwrap_err());
}
