use super::*;

pub(crate) fn matrix_of(rows: usize, cols: usize, v: Vec<f64>) -> HostTensor {
    HostTensor::new(vec![rows, cols], Buffer::F64(v)).unwrap()
}

/// `n × cols` values from a fixed linear congruential sequence: small integers (every
/// distance exact in `float64`, so ties are real) or reals in [-1, 1).
pub(crate) fn data(n: usize, cols: usize, seed: u64, integers: bool) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n * cols)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            if integers {
                (u * 7.0).floor() - 3.0
            } else {
                2.0 * u - 1.0
            }
        })
        .collect()
}

/// The `k` nearest by the textbook sum of squared differences, ties to the lower row,
/// padded with (inf, -1).
fn naive(x: &[f64], q: &[f64], cols: usize, k: usize) -> (Vec<f64>, Vec<i64>) {
    let (n, m) = (x.len() / cols.max(1), q.len() / cols.max(1));
    let (mut dist, mut row) = (Vec::new(), Vec::new());
    for qi in 0..m {
        let mut all: Vec<(f64, i64)> = (0..n)
            .map(|r| {
                let d = (0..cols)
                    .map(|c| (q[qi * cols + c] - x[r * cols + c]).powi(2))
                    .sum::<f64>();
                (d, r as i64)
            })
            .filter(|p| p.0.is_finite())
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.resize(k.max(all.len()), (f64::INFINITY, -1));
        dist.extend(all[..k].iter().map(|p| p.0));
        row.extend(all[..k].iter().map(|p| p.1));
    }
    (dist, row)
}

fn split(out: ChunkData) -> (Vec<f64>, Vec<i64>) {
    let ChunkData::Parts(p) = out else {
        panic!("nearest gives parts")
    };
    (
        p[0].as_slice::<f64>().unwrap().to_vec(),
        p[1].as_slice::<i64>().unwrap().to_vec(),
    )
}

/// The rows cut into blocks at `cuts`, each block's neighbours found, merged in one step.
fn blocked(x: &[f64], q: &HostTensor, cols: usize, k: usize, cuts: &[usize]) -> ChunkData {
    let n = x.len() / cols;
    let bounds: Vec<usize> = [0].iter().chain(cuts).chain([n].iter()).copied().collect();
    let parts: Vec<Arc<ChunkData>> = bounds
        .windows(2)
        .map(|w| {
            let block = matrix_of(w[1] - w[0], cols, x[w[0] * cols..w[1] * cols].to_vec());
            Arc::new(nearest(&block, q, k, w[0] as u64).unwrap())
        })
        .collect();
    merge(&parts, k).unwrap()
}

/// Integer coordinates, so that the product's distances are exact and ties common: the
/// neighbours equal the textbook ones exactly, ties to the lower row, across query and
/// row blocks, and for k past the rows.
#[test]
fn nearest_rows_equal_the_textbook_ones_with_ties_to_the_lower_row() {
    let (n, m, cols) = (2500, 300, 7);
    let (x, q) = (data(n, cols, 1, true), data(m, cols, 2, true));
    let qt = matrix_of(m, cols, q.clone());
    for k in [1, 5, 40] {
        let got = split(nearest(&matrix_of(n, cols, x.clone()), &qt, k, 0).unwrap());
        assert_eq!(got, naive(&x, &q, cols, k), "k = {k}");
    }
    let few = split(nearest(&matrix_of(3, cols, x[..3 * cols].to_vec()), &qt, 5, 0).unwrap());
    assert_eq!(few, naive(&x[..3 * cols], &q, cols, 5));
    assert_eq!(few.1[3..5], [-1, -1], "two missing rows past the three");
}

/// Any cut of the rows into blocks, merged, gives the whole matrix's neighbours bit for
/// bit, and those are the textbook ones (real coordinates).
#[test]
fn neighbours_do_not_depend_on_how_the_rows_are_cut() {
    let (n, m, cols, k) = (3000, 70, 5, 10);
    let (x, q) = (data(n, cols, 3, false), data(m, cols, 4, false));
    let qt = matrix_of(m, cols, q.clone());
    let whole = split(nearest(&matrix_of(n, cols, x.clone()), &qt, k, 0).unwrap());
    for cuts in [
        vec![1],
        vec![7, 1500, 1501],
        vec![1024, 2048],
        vec![4, 9, 2999],
    ] {
        assert_eq!(
            split(blocked(&x, &qt, cols, k, &cuts)),
            whole,
            "cuts {cuts:?}"
        );
    }
    // The distances are the sums term by term, not the product's.
    assert_eq!(whole, naive(&x, &q, cols, k));
}

/// A row or query with NaN is at no finite distance; integer inputs are read as floats.
#[test]
fn nan_rows_are_never_neighbours_and_integers_are_read_as_floats() {
    let x = matrix_of(3, 2, vec![0.0, 0.0, f64::NAN, 1.0, 5.0, 5.0]);
    let q = matrix_of(2, 2, vec![0.0, 1.0, f64::NAN, 0.0]);
    let (dist, row) = split(nearest(&x, &q, 3, 10).unwrap());
    assert_eq!(row, vec![10, 12, -1, -1, -1, -1]);
    assert_eq!(dist[..2], [1.0, 41.0]);
    let xi = HostTensor::new(vec![2, 1], Buffer::I64(vec![4, -2])).unwrap();
    let qi = HostTensor::new(vec![1, 1], Buffer::I32(vec![1])).unwrap();
    assert_eq!(
        split(nearest(&xi, &qi, 2, 0).unwrap()),
        (vec![9.0, 9.0], vec![0, 1])
    );
}

#[test]
fn bad_shapes_are_refused() {
    let x = matrix_of(2, 3, vec![0.0; 6]);
    let q = matrix_of(1, 2, vec![0.0; 2]);
    assert!(matches!(
        nearest(&x, &q, 1, 0),
        Err(KernelError::ShapeMismatch(_))
    ));
    let flat = HostTensor::new(vec![6], Buffer::F64(vec![0.0; 6])).unwrap();
    assert!(matches!(
        nearest(&flat, &q, 1, 0),
        Err(KernelError::BadInput(_))
    ));
    let one = Arc::new(nearest(&x, &matrix_of(1, 3, vec![0.0; 3]), 2, 0).unwrap());
    let two = Arc::new(nearest(&x, &matrix_of(2, 3, vec![0.0; 6]), 2, 0).unwrap());
    assert!(matches!(
        merge(&[one.clone(), two], 2),
        Err(KernelError::ShapeMismatch(_))
    ));
    assert!(matches!(merge(&[one], 3), Err(KernelError::BadInput(_))));
    let table = Arc::new(ChunkData::Tensor(flat));
    assert!(matches!(merge(&[table], 1), Err(KernelError::BadInput(_))));
}
