//! Nearest neighbours (`tessera::learn::kneighbors`) checked against a textbook search of
//! the same rows, under several chunkings, with data computed lazily and persisted, and
//! for bad input.

use crate::common::{f64s, i64s, session};
use tessera::learn::{cluster_stats, kneighbors, logistic_terms};
use tessera::{tensor, Error};

/// `n × cols` reals in [-1, 1) from a fixed sequence.
pub(crate) fn values(n: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut s = seed;
    (0..n * cols)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            2.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) - 1.0
        })
        .collect()
}

/// For each query, the `k` nearest rows (Euclidean, ties to the lower row) and their
/// distances, by sorting every row's distance.
fn by_hand(x: &[f64], q: &[f64], cols: usize, k: usize) -> (Vec<f64>, Vec<i64>) {
    let (mut dist, mut rows) = (Vec::new(), Vec::new());
    for query in q.chunks(cols) {
        let mut all: Vec<(f64, i64)> = x
            .chunks(cols)
            .zip(0..)
            .map(|(row, r)| {
                let d: f64 = query.iter().zip(row).map(|(a, b)| (a - b) * (a - b)).sum();
                (d.sqrt(), r)
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        dist.extend(all[..k].iter().map(|p| p.0));
        rows.extend(all[..k].iter().map(|p| p.1));
    }
    (dist, rows)
}

#[test]
fn nearest_neighbours_equal_a_textbook_search_under_any_chunking() {
    let s = session();
    let (n, m, cols, k) = (1500, 40, 6, 7);
    let (xv, qv) = (values(n, cols, 5), values(m, cols, 9));
    let (want_d, want_i) = by_hand(&xv, &qv, cols, k);
    let q = tensor::from_vec(qv.clone(), &[m, cols]).rechunk(&[7, 2]);
    let mut first = None;
    for rows in [1500, 700, 128, 37] {
        let x = tensor::from_vec(xv.clone(), &[n, cols]).rechunk(&[rows, 4]);
        let got = kneighbors(&s, &x, &q, k).unwrap();
        assert_eq!(got.distances.shape(), &[m, k]);
        assert_eq!(i64s(&got.indices), want_i, "rows per chunk {rows}");
        for (a, b) in f64s(&got.distances).iter().zip(&want_d) {
            assert!((a - b).abs() <= 1e-12, "{a} vs {b} ({rows} rows per chunk)");
        }
        // Bit for bit the same under every chunking.
        match &first {
            None => first = Some(got),
            Some(f) => assert_eq!(&got, f, "rows per chunk {rows}"),
        }
    }
    // Data computed lazily and kept in storage: the rows doubled, then halved again.
    let x = (tensor::from_vec(xv, &[n, cols]).rechunk(&[300, cols]) * 2.0)
        .persist(&s)
        .unwrap();
    let got = kneighbors(&s, &(x / 2.0), &q, k).unwrap();
    assert_eq!(i64s(&got.indices), want_i);
    s.shutdown().unwrap();
}

/// More queries than one block holds (16,384): the blocks' results come back in order.
#[test]
fn many_queries_are_searched_in_blocks_and_answered_in_order() {
    let s = session();
    let (n, m, cols, k) = (200, 16_500, 3, 2);
    let (xv, qv) = (values(n, cols, 21), values(m, cols, 22));
    let x = tensor::from_vec(xv.clone(), &[n, cols]).rechunk(&[64, cols]);
    let q = tensor::from_vec(qv.clone(), &[m, cols]).rechunk(&[5000, cols]);
    let got = kneighbors(&s, &x, &q, k).unwrap();
    let (want_d, want_i) = by_hand(&xv, &qv, cols, k);
    assert_eq!(i64s(&got.indices), want_i);
    assert_eq!(f64s(&got.distances), want_d);
    s.shutdown().unwrap();
}

#[test]
fn nearest_neighbours_refuse_bad_input_with_typed_errors() {
    let s = session();
    let x = tensor::from_vec(values(10, 3, 1), &[10, 3]);
    let q = tensor::from_vec(values(2, 3, 2), &[2, 3]);
    let narrow = tensor::from_vec(values(2, 2, 2), &[2, 2]);
    let flat = tensor::from_vec(values(6, 1, 2), &[6]);
    assert!(matches!(
        kneighbors(&s, &x, &narrow, 1),
        Err(Error::Shape(_))
    ));
    assert!(matches!(kneighbors(&s, &flat, &q, 1), Err(Error::Shape(_))));
    assert!(matches!(
        kneighbors(&s, &x, &q, 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        kneighbors(&s, &x, &q, 11),
        Err(Error::InvalidArgument(_))
    ));
    // Rows with NaN are at no distance: two such rows of three leave one neighbour.
    let nan = tensor::from_vec(vec![0.0, f64::NAN, 1.0, f64::NAN, 2.0, 2.0], &[3, 2]);
    let at = tensor::from_vec(vec![0.0, 0.0], &[1, 2]);
    let one = kneighbors(&s, &nan, &at, 1).unwrap();
    assert_eq!(i64s(&one.indices), vec![2]);
    assert_eq!(f64s(&one.distances), vec![8f64.sqrt()]);
    match kneighbors(&s, &nan, &at, 2) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains("finite"), "{why}"),
        other => panic!("expected a typed error, got {other:?}"),
    }
    // The session still runs jobs.
    assert_eq!(
        i64s(&kneighbors(&s, &x, &x, 1).unwrap().indices),
        (0..10).collect::<Vec<_>>()
    );
    s.shutdown().unwrap();
}

/// k-means' pass: rows assigned to their nearest centre as by hand, the same counts and
/// cost (to rounding) under every chunking; typed errors for bad shapes.
#[test]
fn cluster_stats_group_rows_by_their_nearest_centre_under_any_chunking() {
    let s = session();
    let (n, cols) = (1000, 3);
    let xv = values(n, cols, 31);
    let cv = values(5, cols, 32);
    let (mut sums, mut counts, mut cost) = (vec![0.0; 5 * cols], vec![0.0; 5], 0.0);
    for row in xv.chunks(cols) {
        let d: Vec<f64> = cv
            .chunks(cols)
            .map(|c| c.iter().zip(row).map(|(a, b)| (a - b) * (a - b)).sum())
            .collect();
        let at = (0..5).fold(0, |b, j| if d[j] < d[b] { j } else { b });
        counts[at] += 1.0;
        cost += d[at];
        (0..cols).for_each(|i| sums[at * cols + i] += row[i]);
    }
    let centres = tensor::from_vec(cv, &[5, cols]);
    for rows in [1000, 333, 64, 7] {
        let x = tensor::from_vec(xv.clone(), &[n, cols]).rechunk(&[rows, 2]);
        let got = cluster_stats(&s, &x, &centres).unwrap();
        assert_eq!(got.counts, counts, "rows per chunk {rows}");
        assert!((got.cost - cost).abs() <= 1e-12 * cost);
        for (a, b) in f64s(&got.sums).iter().zip(&sums) {
            assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
        }
    }
    let x = tensor::from_vec(xv, &[n, cols]);
    let flat = tensor::from_vec(vec![0.0; 3], &[3]);
    let narrow = tensor::from_vec(vec![0.0; 2], &[1, 2]);
    assert!(matches!(
        cluster_stats(&s, &x, &narrow),
        Err(Error::Shape(_))
    ));
    assert!(matches!(cluster_stats(&s, &x, &flat), Err(Error::Shape(_))));
    assert!(matches!(
        cluster_stats(&s, &flat, &narrow),
        Err(Error::Shape(_))
    ));
    let none = tensor::from_vec(Vec::<f64>::new(), &[0, cols]);
    assert!(matches!(
        cluster_stats(&s, &x, &none),
        Err(Error::InvalidArgument(_))
    ));
    s.shutdown().unwrap();
}

/// Logistic regression's gradient and Hessian as by hand, with and without an intercept
/// weight, under several chunkings of the rows and labels; typed errors for mismatched
/// shapes.
#[test]
fn logistic_terms_equal_the_sums_by_hand_under_any_chunking() {
    let s = session();
    let (n, k) = (500, 4);
    let av = values(n, k, 41);
    let yv: Vec<f64> = values(n, 1, 42)
        .iter()
        .map(|&v| (v > 0.0) as u8 as f64)
        .collect();
    for wv in [
        vec![0.5, -1.0, 0.25, 2.0],
        vec![0.5, -1.0, 0.25, 2.0, -0.75],
    ] {
        // With a fifth weight each row reads as if a one followed it.
        let kk = wv.len();
        let (mut g, mut h) = (vec![0.0; kk], vec![0.0; kk * kk]);
        for (row, &label) in av.chunks(k).zip(&yv) {
            let row: Vec<f64> = row.iter().copied().chain([1.0]).take(kk).collect();
            let z: f64 = row.iter().zip(&wv).map(|(x, v)| x * v).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            for i in 0..kk {
                g[i] += (p - label) * row[i];
                for j in 0..kk {
                    h[i * kk + j] += p * (1.0 - p) * row[i] * row[j];
                }
            }
        }
        let w = tensor::from_vec(wv, &[kk]);
        for (rows, label_rows) in [(500, 500), (120, 77), (9, 250)] {
            let a = tensor::from_vec(av.clone(), &[n, k]).rechunk(&[rows, 3]);
            let y = tensor::from_vec(yv.clone(), &[n, 1]).rechunk(&[label_rows, 1]);
            let got = logistic_terms(&s, &a, &y, &w).unwrap();
            assert_eq!(
                (got.gradient.len(), got.hessian.shape()),
                (kk, &[kk, kk][..])
            );
            let pairs = got.gradient.iter().zip(&g);
            for (a, b) in pairs.chain(f64s(&got.hessian).iter().zip(&h)) {
                assert!((a - b).abs() <= 1e-10, "{a} vs {b} ({rows} rows per chunk)");
            }
        }
    }
    let w = tensor::from_vec(vec![0.0; k], &[k]);
    let a = tensor::from_vec(av, &[n, k]);
    let y = tensor::from_vec(yv, &[n]);
    let short = tensor::from_vec(vec![0.0; 3], &[3]);
    let long = tensor::from_vec(vec![0.0; k + 2], &[k + 2]);
    for w in [&short, &long] {
        assert!(matches!(
            logistic_terms(&s, &a, &y, w),
            Err(Error::Shape(_))
        ));
    }
    assert!(matches!(
        logistic_terms(&s, &a, &short, &w),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        logistic_terms(&s, &y, &y, &w),
        Err(Error::Shape(_))
    ));
    s.shutdown().unwrap();
}
