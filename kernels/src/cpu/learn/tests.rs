use super::*;

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

/// The gradient and Hessian by hand, row by row.
fn by_hand(a: &[f64], y: &[f64], w: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let k = w.len();
    let (mut g, mut h) = (vec![0.0; k], vec![0.0; k * k]);
    for (row, &label) in a.chunks(k).zip(y) {
        let z: f64 = row.iter().zip(w).map(|(x, v)| x * v).sum();
        let p = 1.0 / (1.0 + (-z).exp());
        for i in 0..k {
            g[i] += (p - label) * row[i];
            for j in 0..k {
                h[i * k + j] += p * (1.0 - p) * row[i] * row[j];
            }
        }
    }
    (g, h)
}

#[test]
fn logistic_terms_equal_the_sums_by_hand_and_add_up_across_blocks() {
    let (n, k) = (57, 3);
    let a: Vec<f64> = (0..n * k)
        .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
        .collect();
    let y: Vec<f64> = (0..n).map(|i| (i % 3 == 0) as u8 as f64).collect();
    let w = vec![0.4, -0.2, 0.1];
    let (g, h) = by_hand(&a, &y, &w);
    let wt = tensor(&[k], w.clone());
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
