use super::*;
use crate::cpu::nearest::tests::{data, matrix_of};

fn tensor(shape: &[usize], v: Vec<f64>) -> HostTensor {
    HostTensor::new(shape.to_vec(), Buffer::F64(v)).unwrap()
}

fn parts(c: ChunkData) -> Vec<Vec<f64>> {
    let ChunkData::Parts(p) = c else {
        panic!("parts expected")
    };
    p.iter()
        .map(|t| t.as_slice::<f64>().unwrap().to_vec())
        .collect()
}

/// The gradient and Hessian by hand, row by row, for rows of `k` columns: with one weight
/// more than columns, each row followed by a one (the intercept's column).
fn by_hand(a: &[f64], k: usize, y: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let kk = w.len();
    let (mut g, mut h) = (vec![0.0; kk], vec![0.0; kk * kk]);
    for (i, &label) in y.iter().enumerate() {
        let row = &a[i * k..(i + 1) * k];
        let row: Vec<f64> = row.iter().copied().chain([1.0]).take(kk).collect();
        let z: f64 = row.iter().zip(w).map(|(x, v)| x * v).sum();
        let p = 1.0 / (1.0 + (-z).exp());
        for i in 0..kk {
            g[i] += (p - label) * row[i];
            for j in 0..kk {
                h[i * kk + j] += p * (1.0 - p) * row[i] * row[j];
            }
        }
    }
    (g, h)
}

#[test]
fn logistic_terms_equal_the_sums_by_hand_and_add_up_across_blocks() {
    // Fewer rows than one of the kernel's blocks, several blocks and a part of one, and
    // no columns at all; without and with an intercept.
    for (n, k) in [(57, 3), (3 * LOGISTIC_BLOCK + 17, 5), (40, 0)] {
        for intercept in [false, true] {
            logistic_terms_by_hand(n, k, intercept);
        }
    }
}

fn logistic_terms_by_hand(n: usize, k: usize, intercept: bool) {
    let a: Vec<f64> = (0..n * k)
        .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
        .collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 3 == 0) as u8 as f64).collect();
    let kk = k + usize::from(intercept);
    let w: Vec<f64> = (0..kk)
        .map(|j| [0.4, -0.2, 0.1][j % 3] / (1 + j / 3) as f64)
        .collect();
    let (g, h) = by_hand(&a, k, &y, &w);
    let wt = tensor(&[kk], w.clone());
    let whole = parts(
        logistic_terms(
            &tensor(&[n, k], a.clone()),
            &tensor(&[n, 1], y.clone()),
            &wt,
        )
        .unwrap(),
    );
    for (got, want) in whole[0].iter().zip(&g).chain(whole[1].iter().zip(&h)) {
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{got} vs {want}"
        );
    }
    // Two blocks of rows, summed: the same terms.
    let blocks: Vec<Arc<ChunkData>> = [(0, 20), (20, n)]
        .iter()
        .map(|&(r0, r1)| {
            let rows = tensor(&[r1 - r0, k], a[r0 * k..r1 * k].to_vec());
            let labels = tensor(&[r1 - r0], y[r0..r1].to_vec());
            Arc::new(logistic_terms(&rows, &labels, &wt).unwrap())
        })
        .collect();
    let summed = parts(sum_parts(&blocks).unwrap());
    for (got, want) in summed.concat().iter().zip(whole.concat()) {
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{got} vs {want}"
        );
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let a = tensor(&[2, 2], vec![1.0; 4]);
    let short = tensor(&[1], vec![0.0]);
    let two = tensor(&[2], vec![0.0; 2]);
    assert!(matches!(
        logistic_terms(&a, &short, &two),
        Err(KernelError::ShapeMismatch(_))
    ));
    assert!(matches!(
        logistic_terms(&a, &two, &short),
        Err(KernelError::ShapeMismatch(_))
    ));
    // One weight beyond the intercept's.
    assert!(matches!(
        logistic_terms(&a, &two, &tensor(&[4], vec![0.0; 4])),
        Err(KernelError::ShapeMismatch(_))
    ));
    assert!(matches!(
        logistic_terms(&two, &two, &two),
        Err(KernelError::BadInput(_))
    ));
    let one = Arc::new(logistic_terms(&a, &two, &two).unwrap());
    let wider = Arc::new(
        logistic_terms(
            &tensor(&[1, 3], vec![0.0; 3]),
            &short,
            &tensor(&[3], vec![0.0; 3]),
        )
        .unwrap(),
    );
    assert!(matches!(
        sum_parts(&[one.clone(), wider]),
        Err(KernelError::ShapeMismatch(_))
    ));
    assert!(matches!(sum_parts(&[]), Err(KernelError::BadInput(_))));
    let table = Arc::new(ChunkData::Tensor(two));
    assert!(matches!(
        sum_parts(&[one, table]),
        Err(KernelError::BadInput(_))
    ));
}

fn stats(out: ChunkData) -> (Vec<f64>, Vec<f64>, f64) {
    let ChunkData::Parts(p) = out else {
        panic!("cluster stats give parts")
    };
    (
        p[0].as_slice::<f64>().unwrap().to_vec(),
        p[1].as_slice::<f64>().unwrap().to_vec(),
        p[2].as_slice::<f64>().unwrap()[0],
    )
}

/// Rows `x` assigned to their nearest of `c` by hand: (sums, counts, cost).
fn assigned_by_hand(x: &[f64], c: &[f64], cols: usize) -> (Vec<f64>, Vec<f64>, f64) {
    let k = c.len() / cols;
    let (mut sums, mut counts, mut cost) = (vec![0.0; k * cols], vec![0.0; k], 0.0);
    for row in x.chunks(cols) {
        let d: Vec<f64> = c
            .chunks(cols)
            .map(|ce| ce.iter().zip(row).map(|(a, b)| (a - b) * (a - b)).sum())
            .collect();
        let at = (0..k).fold(0, |best, j| if d[j] < d[best] { j } else { best });
        counts[at] += 1.0;
        cost += d[at];
        (0..cols).for_each(|i| sums[at * cols + i] += row[i]);
    }
    (sums, counts, cost)
}

/// Rows assigned to their nearest centre (ties to the lower one) as by hand: sums,
/// counts and cost, for fewer centres than a vector holds and more; cut into blocks and
/// merged, the same counts and (to rounding) sums.
#[test]
fn cluster_stats_assign_rows_as_by_hand_under_any_cut() {
    let (n, cols) = (900, 3);
    let x = data(n, cols, 7, true);
    // Centre 3 repeats centre 1: rows nearest to both go to 1.
    let mut c = data(3, cols, 8, true);
    c.extend_from_within(cols..2 * cols);
    let whole = stats(
        cluster_stats(
            &matrix_of(n, cols, x.clone()),
            &matrix_of(4, cols, c.clone()),
        )
        .unwrap(),
    );
    let (sums, counts, cost) = assigned_by_hand(&x, &c, cols);
    assert_eq!(whole, (sums.clone(), counts.clone(), cost));
    assert_eq!(whole.1[3], 0.0, "the repeated centre gets no row");
    let many = data(11, cols, 9, false);
    let got = stats(
        cluster_stats(
            &matrix_of(n, cols, x.clone()),
            &matrix_of(11, cols, many.clone()),
        )
        .unwrap(),
    );
    assert_eq!(got, assigned_by_hand(&x, &many, cols), "11 centres");
    let centres = matrix_of(4, cols, c);
    let parts: Vec<Arc<ChunkData>> = [0, 5, 400, 900]
        .windows(2)
        .map(|w| {
            let block = matrix_of(w[1] - w[0], cols, x[w[0] * cols..w[1] * cols].to_vec());
            Arc::new(cluster_stats(&block, &centres).unwrap())
        })
        .collect();
    let merged = stats(sum_parts(&parts).unwrap());
    assert_eq!(merged.1, counts);
    for (a, b) in merged.0.iter().zip(&sums) {
        assert!((a - b).abs() <= 1e-9, "{a} vs {b}");
    }
    assert!((merged.2 - cost).abs() <= 1e-9 * cost);
}

#[test]
fn cluster_stats_show_nan_rows_in_the_cost_and_refuse_bad_shapes() {
    let x = matrix_of(2, 2, vec![0.0, f64::NAN, 1.0, 1.0]);
    let c = matrix_of(1, 2, vec![0.0, 0.0]);
    assert!(stats(cluster_stats(&x, &c).unwrap()).2.is_nan());
    let narrow = matrix_of(1, 1, vec![0.0]);
    assert!(matches!(
        cluster_stats(&x, &narrow),
        Err(KernelError::ShapeMismatch(_))
    ));
    let none = matrix_of(0, 2, vec![]);
    assert!(matches!(
        cluster_stats(&x, &none),
        Err(KernelError::ShapeMismatch(_))
    ));
    let other = Arc::new(cluster_stats(&x, &matrix_of(2, 2, vec![0.0; 4])).unwrap());
    let one = Arc::new(cluster_stats(&x, &c).unwrap());
    assert!(matches!(
        sum_parts(&[one, other]),
        Err(KernelError::ShapeMismatch(_))
    ));
    assert!(matches!(sum_parts(&[]), Err(KernelError::BadInput(_))));
}
