//! Counter-based random tensors: ranges, moments, reproducibility, independence of draws,
//! and bitwise identity across chunkings and slices.

use crate::common::*;
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, Slice, Tensor};

/// (start, stop, step) of one axis.
type SliceSpec = (Option<isize>, Option<isize>, isize);

fn moments(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var)
}

#[test]
fn uniform_values_lie_in_range_with_the_right_moments() {
    let s = session();
    let n = 200_000;
    for (seed, low, high) in [(1u64, -1.0, 1.0), (2, 5.0, 5.5), (3, -100.0, 300.0)] {
        let h = run(&s, &default_rng(seed).uniform(low, high, &[n]));
        assert_eq!(h.shape(), &[n]);
        let v = f64s(&h);
        assert!(
            v.iter().all(|&x| x >= low && x < high),
            "uniform({low}, {high}) out of range"
        );
        let (m, var) = moments(&v);
        let w = high - low;
        // Standard error of the mean: w / sqrt(12 n); allow 6 of them.
        assert!(
            (m - (low + high) / 2.0).abs() < 6.0 * w / (12.0 * n as f64).sqrt(),
            "mean {m}"
        );
        assert!(
            (var - w * w / 12.0).abs() < 0.01 * w * w / 12.0,
            "variance {var}"
        );
        // Not degenerate: many distinct values.
        let distinct: std::collections::BTreeSet<u64> = v.iter().map(|x| x.to_bits()).collect();
        assert!(distinct.len() > n * 99 / 100);
    }
    let v = f64s(&run(&s, &default_rng(9).random(&[50_000])));
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    let (m, _) = moments(&v);
    assert!((m - 0.5).abs() < 0.01);
    // Both halves of the range are hit.
    assert!(v.iter().any(|&x| x < 0.01) && v.iter().any(|&x| x > 0.99));
}

#[test]
fn normal_has_the_right_mean_and_variance() {
    let s = session();
    let n = 200_000;
    for (seed, mean, std) in [(11u64, 0.0, 1.0), (12, 3.0, 0.5), (13, -20.0, 7.0)] {
        let v = f64s(&run(&s, &default_rng(seed).normal(mean, std, &[400, 500])));
        assert_eq!(v.len(), n);
        assert!(v.iter().all(|x| x.is_finite()));
        let (m, var) = moments(&v);
        assert!(
            (m - mean).abs() < 6.0 * std / (n as f64).sqrt(),
            "mean {m} for N({mean}, {std})"
        );
        assert!(
            (var / (std * std) - 1.0).abs() < 0.02,
            "variance {var} for N({mean}, {std})"
        );
        // About 68.3% within one standard deviation.
        let within = v.iter().filter(|&&x| (x - mean).abs() < std).count() as f64 / n as f64;
        assert!(
            (within - 0.6827).abs() < 0.01,
            "fraction within 1 sd: {within}"
        );
    }
    // std = 0 gives the mean exactly.
    let v = f64s(&run(&s, &default_rng(1).normal(2.5, 0.0, &[10])));
    assert_eq!(v, vec![2.5; 10]);
}

#[test]
fn randint_respects_its_bounds() {
    let s = session();
    let n = 100_000;
    for (seed, low, high) in [
        (21u64, 0i64, 6i64),
        (22, -5, 5),
        (23, 1_000_000_000_000, 1_000_000_000_003),
        (24, 7, 8),
    ] {
        let h = run(&s, &default_rng(seed).randint(low, high, &[n]));
        assert_eq!(h.dtype(), DType::I64);
        let v = i64s(&h);
        assert!(
            v.iter().all(|&x| x >= low && x < high),
            "randint({low}, {high}) out of range"
        );
        // Every value appears with about the same frequency.
        let k = (high - low) as usize;
        let mut counts = vec![0usize; k];
        for &x in &v {
            counts[(x - low) as usize] += 1;
        }
        let expect = n as f64 / k as f64;
        for (j, &c) in counts.iter().enumerate() {
            assert!(
                (c as f64 - expect).abs() < 6.0 * expect.sqrt() + 1.0,
                "randint({low}, {high}): value {} drawn {c} times, expected ~{expect}",
                low + j as i64
            );
        }
    }
    // A wide range: mean near the middle.
    let v = i64s(&run(
        &s,
        &default_rng(25).randint(-1_000_000, 1_000_000, &[n]),
    ));
    let m = v.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    assert!(m.abs() < 6.0 * 2e6 / (12.0 * n as f64).sqrt());
}

#[test]
fn same_seed_same_values_and_draws_differ() {
    let s = session();
    let g1 = default_rng(42);
    let g2 = default_rng(42);
    let (a1, b1) = (g1.uniform(0.0, 1.0, &[1000]), g1.uniform(0.0, 1.0, &[1000]));
    let (a2, b2) = (g2.uniform(0.0, 1.0, &[1000]), g2.uniform(0.0, 1.0, &[1000]));
    let (ha1, hb1, ha2, hb2) = (run(&s, &a1), run(&s, &b1), run(&s, &a2), run(&s, &b2));
    assert_bitwise(&ha1, &ha2);
    assert_bitwise(&hb1, &hb2);
    let (va, vb) = (f64s(&ha1), f64s(&hb1));
    assert!(
        va.iter().zip(&vb).filter(|(x, y)| x == y).count() < 5,
        "two draws from one generator should differ"
    );
    // Executing the same tensor twice gives the same values.
    assert_bitwise(&run(&s, &a1), &ha1);
    // Another seed differs.
    let vc = f64s(&run(&s, &default_rng(43).uniform(0.0, 1.0, &[1000])));
    assert!(va.iter().zip(&vc).filter(|(x, y)| x == y).count() < 5);
    // Same for randint and normal.
    let r1 = run(&s, &default_rng(7).randint(0, 1 << 40, &[500]));
    let r2 = run(&s, &default_rng(7).randint(0, 1 << 40, &[500]));
    assert_bitwise(&r1, &r2);
    let n1 = run(&s, &default_rng(7).normal(0.0, 1.0, &[500]));
    let n2 = run(&s, &default_rng(7).normal(0.0, 1.0, &[500]));
    assert_bitwise(&n1, &n2);
}

/// One random tensor of each kind, drawn once so every chunking sees the same node.
fn draws() -> Vec<Tensor> {
    let g = default_rng(2024);
    vec![
        g.uniform(-3.0, 3.0, &[37, 29]),
        g.normal(1.0, 2.0, &[37, 29]),
        g.randint(-50, 50, &[37, 29]),
        g.random(&[37, 29]),
    ]
}

#[test]
fn random_streams_are_identical_across_chunkings() {
    let base_session = session();
    let base: Vec<_> = draws().iter().map(|t| run(&base_session, t)).collect();
    drop(base_session);
    // Explicit chunk shapes.
    let s = session();
    for chunks in [
        vec![1, 1],
        vec![5, 7],
        vec![37, 1],
        vec![1, 29],
        vec![16, 16],
    ] {
        for (t, want) in draws().iter().zip(&base) {
            assert_bitwise(&run(&s, &t.rechunk(&chunks)), want);
        }
    }
    // Automatic chunking under several byte budgets, and the sequential reference executor.
    for chunk_bytes in [8, 64, 8 * 100, 1 << 20] {
        let s = session_with_chunks(chunk_bytes);
        for (t, want) in draws().iter().zip(&base) {
            assert_bitwise(&run(&s, t), want);
            assert_bitwise(
                &tessera::reference::execute_sequential(t, chunk_bytes).unwrap(),
                want,
            );
        }
    }
}

#[test]
fn slices_of_random_tensors_equal_the_corresponding_elements() {
    let s = session();
    for (k, t) in draws().into_iter().enumerate() {
        let full = run(&s, &t);
        let x = Arr::new(&[37, 29], full.to_f64_vec());
        let specs: Vec<Vec<SliceSpec>> = vec![
            vec![(Some(3), Some(20), 1), (Some(5), None, 1)],
            vec![(None, None, 3), (None, None, -2)],
            vec![(Some(-5), None, 1), (Some(-1), Some(-20), -4)],
            vec![(Some(36), None, 1), (Some(28), None, 1)],
        ];
        for spec in specs {
            let want = x.slice(&spec);
            let slices: Vec<Slice> = spec.iter().map(|&(a, b, c)| Slice::new(a, b, c)).collect();
            for tt in [t.clone(), t.rechunk(&[8, 8])] {
                let got = run(&s, &tt.slice(&slices));
                assert_eq!(got.shape(), &want.shape[..]);
                assert_eq!(got.dtype(), full.dtype());
                // Bitwise: compare f64 bits (i64 values are exact in f64 here).
                let gb: Vec<u64> = got.to_f64_vec().iter().map(|v| v.to_bits()).collect();
                let wb: Vec<u64> = want.data.iter().map(|v| v.to_bits()).collect();
                assert_eq!(gb, wb, "draw {k}, slice {spec:?}");
            }
        }
        // A reshaped random tensor has the same values in C order.
        let r = run(&s, &t.reshape(&[29, 37]).rechunk(&[10, 10]));
        assert_eq!(
            r.to_f64_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
            full.to_f64_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        );
        // A transposed random tensor.
        let tr = run(&s, &t.transpose());
        assert_eq!(tr.to_f64_vec(), x.permute(&[1, 0]).data);
    }
}

#[test]
fn random_expressions_are_identical_across_session_chunkings() {
    // Holds the guard against the eager test while the tensors are built.
    let _reader = session();
    let g = default_rng(77);
    let u = g.uniform(0.0, 1.0, &[3000]);
    let k = g.randint(0, 10, &[3000]);
    let expr_f = (&u * 2.0 - 1.0).abs().sqrt();
    let expr_i = (&k * 3i64 + 1i64).sum();
    let mut results = Vec::new();
    for chunk_bytes in [8 * 7, 8 * 500, 1 << 20] {
        let s = session_with_chunks(chunk_bytes);
        results.push((
            run(&s, &expr_f),
            run(&s, &expr_i),
            run(
                &s,
                &tensor::concatenate(&[&u, &u.slice(&[Slice::all().step(-1)])], 0),
            ),
        ));
    }
    for r in &results[1..] {
        assert_bitwise(&r.0, &results[0].0);
        assert_bitwise(&r.1, &results[0].1);
        assert_bitwise(&r.2, &results[0].2);
    }
}
