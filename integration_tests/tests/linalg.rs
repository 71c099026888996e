//! Linear algebra through the public API: products against a naive triple loop written
//! here, QR and SVD checked by their defining properties (orthonormal factors, triangular
//! or descending factors, the product giving the input back), singular values of matrices
//! built with known ones, the randomized SVD, its out-of-core path, and the errors.

use crate::common::*;
use tessera::linalg::{self, MAX_TSQR_COLUMNS};
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, Error, HostTensor, Session, Tensor};

/// A plain row-major matrix for the reference computations.
#[derive(Clone, Debug)]
struct Mat {
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Mat {
    fn zeros(rows: usize, cols: usize) -> Mat {
        Mat {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    fn identity(n: usize) -> Mat {
        let mut m = Mat::zeros(n, n);
        for i in 0..n {
            m.set(i, i, 1.0);
        }
        m
    }

    /// Values in `[-1, 1)` from a seeded splitmix64 stream.
    fn random(rows: usize, cols: usize, seed: u64) -> Mat {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xd1b5_4a32_d192_ed03;
        let data = (0..rows * cols)
            .map(|_| {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
            .collect();
        Mat { rows, cols, data }
    }

    /// The result of a job, which must be a `rows x cols` matrix of float64.
    fn from_host(h: &HostTensor) -> Mat {
        assert_eq!(h.dtype(), DType::F64, "dtype");
        assert_eq!(h.shape().len(), 2, "a matrix, got shape {:?}", h.shape());
        Mat {
            rows: h.shape()[0],
            cols: h.shape()[1],
            data: f64s(h),
        }
    }

    fn get(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.cols + j]
    }

    fn set(&mut self, i: usize, j: usize, v: f64) {
        self.data[i * self.cols + j] = v;
    }

    fn tensor(&self) -> Tensor {
        tensor::from_vec(self.data.clone(), &[self.rows, self.cols])
    }

    fn t(&self) -> Mat {
        let mut out = Mat::zeros(self.cols, self.rows);
        for i in 0..self.rows {
            for j in 0..self.cols {
                out.set(j, i, self.get(i, j));
            }
        }
        out
    }

    /// The naive triple loop.
    fn mul(&self, other: &Mat) -> Mat {
        assert_eq!(self.cols, other.rows, "reference product shapes");
        let mut out = Mat::zeros(self.rows, other.cols);
        for i in 0..self.rows {
            for j in 0..other.cols {
                let mut acc = 0.0;
                for k in 0..self.cols {
                    acc += self.get(i, k) * other.get(k, j);
                }
                out.set(i, j, acc);
            }
        }
        out
    }

    fn abs(&self) -> Mat {
        Mat {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|v| v.abs()).collect(),
        }
    }

    /// The first `n` columns.
    fn first_cols(&self, n: usize) -> Mat {
        let mut out = Mat::zeros(self.rows, n);
        for i in 0..self.rows {
            for j in 0..n {
                out.set(i, j, self.get(i, j));
            }
        }
        out
    }

    /// Each column scaled by `s[j]`.
    fn scale_cols(&self, s: &[f64]) -> Mat {
        assert_eq!(s.len(), self.cols);
        let mut out = self.clone();
        for i in 0..self.rows {
            for (j, &sj) in s.iter().enumerate() {
                out.set(i, j, self.get(i, j) * sj);
            }
        }
        out
    }

    fn max_abs_diff(&self, other: &Mat) -> f64 {
        assert_eq!((self.rows, self.cols), (other.rows, other.cols), "shapes");
        self.data
            .iter()
            .zip(&other.data)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max)
    }

    fn max_abs(&self) -> f64 {
        self.data.iter().fold(0.0, |m, v| m.max(v.abs()))
    }
}

/// The Householder reflection `I - 2 v vᵀ / (vᵀ v)` of a seeded random `v` (orthogonal).
fn householder(n: usize, seed: u64) -> Mat {
    let v = Mat::random(n, 1, seed).data;
    let vv: f64 = v.iter().map(|x| x * x).sum();
    let mut h = Mat::identity(n);
    for i in 0..n {
        for j in 0..n {
            h.set(i, j, h.get(i, j) - 2.0 * v[i] * v[j] / vv);
        }
    }
    h
}

/// An orthogonal `n x n` matrix: the product of two reflections (a rotation, so no column
/// or row is special).
fn orthogonal(n: usize, seed: u64) -> Mat {
    householder(n, seed).mul(&householder(n, seed + 1000))
}

/// `Q1[:, :n] · diag(s) · Q2ᵀ`, an `m x n` matrix (m >= n) whose singular values are `s`.
fn with_singular_values(m: usize, s: &[f64], seed: u64) -> Mat {
    let n = s.len();
    let q1 = orthogonal(m, seed).first_cols(n);
    let q2 = orthogonal(n, seed + 1);
    q1.scale_cols(s).mul(&q2.t())
}

/// Asserts `got == want` within `rtol` of the size of the terms of each product
/// (`|A|·|B|`), so that cancellation does not make the bound meaningless.
fn assert_product(got: &Mat, want: &Mat, scale: &Mat, rtol: f64, what: &str) {
    assert_eq!(
        (got.rows, got.cols),
        (want.rows, want.cols),
        "{what}: shape"
    );
    for i in 0..want.rows {
        for j in 0..want.cols {
            let (g, w) = (got.get(i, j), want.get(i, j));
            let tol = rtol * scale.get(i, j).max(f64::MIN_POSITIVE);
            assert!(
                (g - w).abs() <= tol,
                "{what}: [{i}, {j}] got {g}, expected {w} (tolerance {tol:e})"
            );
        }
    }
}

/// Asserts `QᵀQ = I` within `tol`.
fn assert_orthonormal_cols(q: &Mat, tol: f64, what: &str) {
    let err = q.t().mul(q).max_abs_diff(&Mat::identity(q.cols));
    assert!(err <= tol, "{what}: |QᵀQ - I| = {err:e} > {tol:e}");
}

fn exec_mat(s: &Session, t: &Tensor) -> Mat {
    Mat::from_host(&run(s, t))
}

#[test]
fn matmul_matches_the_naive_product_under_any_chunking() {
    let s = session();
    let (a, b) = (Mat::random(37, 23, 1), Mat::random(23, 19, 2));
    let want = a.mul(&b);
    let scale = a.abs().mul(&b.abs());
    // (chunks of a, chunks of b): the shared axis (23) split alike, differently, or not.
    type Chunks = Option<[usize; 2]>;
    let cases: [(Chunks, Chunks); 6] = [
        (None, None),
        (Some([10, 7]), Some([7, 19])),
        (Some([37, 5]), Some([23, 4])),
        (Some([8, 23]), Some([6, 5])),
        (Some([5, 4]), Some([9, 3])),
        (Some([1, 1]), Some([23, 19])),
    ];
    for (ca, cb) in cases {
        let (mut ta, mut tb) = (a.tensor(), b.tensor());
        if let Some(c) = ca {
            ta = ta.rechunk(&c);
        }
        if let Some(c) = cb {
            tb = tb.rechunk(&c);
        }
        let product = ta.matmul(&tb);
        assert_eq!(product.shape().unwrap(), vec![37, 19]);
        assert_eq!(product.dtype().unwrap(), DType::F64);
        let got = exec_mat(&s, &product);
        assert_product(&got, &want, &scale, 1e-12, &format!("{ca:?} · {cb:?}"));
        // `dot` is the same product, and `(A B)ᵀ = Bᵀ Aᵀ`.
        let got = exec_mat(&s, &ta.dot(&tb));
        assert_product(&got, &want, &scale, 1e-12, "dot");
        let got = exec_mat(&s, &tb.transpose().matmul(&ta.transpose()));
        assert_product(&got, &want.t(), &scale.t(), 1e-12, "Bᵀ · Aᵀ");
    }
    // Integer operands are computed as float64.
    let ia = tensor::arange(0, 12, 1).reshape(&[3, 4]).rechunk(&[2, 3]);
    let ib = tensor::arange(0, 8, 1).reshape(&[4, 2]);
    let got = exec_mat(&s, &ia.matmul(&ib));
    let want = Mat {
        rows: 3,
        cols: 4,
        data: (0..12).map(f64::from).collect(),
    }
    .mul(&Mat {
        rows: 4,
        cols: 2,
        data: (0..8).map(f64::from).collect(),
    });
    assert_eq!(got.data, want.data, "integer product");
}

#[test]
fn matmul_with_vector_operands() {
    let s = session();
    let a = Mat::random(13, 9, 3);
    let (v9, v13) = (Mat::random(9, 1, 4), Mat::random(13, 1, 5));
    let ta = a.tensor().rechunk(&[4, 5]);
    let tv9 = tensor::from_vec(v9.data.clone(), &[9]).rechunk(&[4]);
    let tv13 = tensor::from_vec(v13.data.clone(), &[13]).rechunk(&[6]);

    // matrix · vector: (13, 9) · (9,) -> (13,)
    let mv = ta.matmul(&tv9);
    assert_eq!(mv.shape().unwrap(), vec![13]);
    let want = a.mul(&v9);
    let scale = a.abs().mul(&v9.abs());
    let got = run(&s, &mv);
    assert_eq!(got.shape(), &[13]);
    let got = Mat {
        rows: 13,
        cols: 1,
        data: f64s(&got),
    };
    assert_product(&got, &want, &scale, 1e-12, "matrix · vector");

    // vector · matrix: (13,) · (13, 9) -> (9,)
    let vm = tv13.matmul(&ta);
    assert_eq!(vm.shape().unwrap(), vec![9]);
    let want = v13.t().mul(&a);
    let scale = v13.abs().t().mul(&a.abs());
    let got = run(&s, &vm);
    assert_eq!(got.shape(), &[9]);
    let got = Mat {
        rows: 1,
        cols: 9,
        data: f64s(&got),
    };
    assert_product(&got, &want, &scale, 1e-12, "vector · matrix");

    // vector · vector: a 0-d inner product
    let vv = tv9.dot(&tv9);
    assert_eq!(vv.shape().unwrap(), Vec::<usize>::new());
    let want: f64 = v9.data.iter().map(|x| x * x).sum();
    let got = item_f64(&run(&s, &vv));
    assert!(
        close(got, want, 1e-12, 0.0),
        "v · v = {got}, expected {want}"
    );
}

#[test]
fn tensordot_axes_0_1_2() {
    let s = session();
    // axes = 0: the outer product of two vectors.
    let (x, y) = (Mat::random(6, 1, 6), Mat::random(1, 4, 7));
    let tx = tensor::from_vec(x.data.clone(), &[6]).rechunk(&[4]);
    let ty = tensor::from_vec(y.data.clone(), &[4]);
    let outer = linalg::tensordot(&tx, &ty, 0);
    let got = exec_mat(&s, &outer);
    let want = x.mul(&y);
    assert_product(
        &got,
        &want,
        &x.abs().mul(&y.abs()),
        1e-12,
        "tensordot axes=0",
    );

    // axes = 1: the matrix product.
    let (a, b) = (Mat::random(7, 5, 8), Mat::random(5, 3, 9));
    let got = exec_mat(
        &s,
        &linalg::tensordot(
            &a.tensor().rechunk(&[3, 2]),
            &b.tensor().rechunk(&[3, 3]),
            1,
        ),
    );
    assert_product(
        &got,
        &a.mul(&b),
        &a.abs().mul(&b.abs()),
        1e-12,
        "tensordot axes=1",
    );

    // axes = 2: Σ a_ij b_ij.
    let c = Mat::random(7, 5, 10);
    let full = linalg::tensordot(&a.tensor().rechunk(&[2, 5]), &c.tensor(), 2);
    assert_eq!(full.shape().unwrap(), Vec::<usize>::new());
    let want: f64 = a.data.iter().zip(&c.data).map(|(p, q)| p * q).sum();
    let bound: f64 = a.data.iter().zip(&c.data).map(|(p, q)| (p * q).abs()).sum();
    let got = item_f64(&run(&s, &full));
    assert!(
        (got - want).abs() <= 1e-12 * bound,
        "tensordot axes=2: {got} vs {want}"
    );

    // Other axes, and mismatched shapes for axes = 2.
    assert!(matches!(
        linalg::tensordot(&a.tensor(), &c.tensor(), 3).error(),
        Some(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        linalg::tensordot(&a.tensor(), &b.tensor(), 2).error(),
        Some(Error::Shape(_))
    ));
}

#[test]
fn norm_of_matrices_and_vectors() {
    let s = session();
    let a = Mat::random(31, 17, 11);
    let want = a.data.iter().map(|x| x * x).sum::<f64>().sqrt();
    for chunks in [[31, 17], [8, 5], [1, 17]] {
        let got = item_f64(&run(&s, &linalg::norm(&a.tensor().rechunk(&chunks))));
        assert!(
            close(got, want, 1e-13, 0.0),
            "norm {chunks:?}: {got} vs {want}"
        );
    }
    // A vector's 2-norm; integers are computed as float64: |(3, 4)| = 5.
    let v = tensor::from_vec(vec![3i64, 4], &[2]);
    assert_eq!(item_f64(&run(&s, &linalg::norm(&v))), 5.0);
}

/// Computes Q and R of `a` cut into row blocks of `rows`, checks their properties and
/// returns R.
fn check_qr(s: &Session, a: &Mat, rows: usize) -> Mat {
    let (q, r) = linalg::qr(&a.tensor().rechunk(&[rows, a.cols]));
    assert_eq!(q.shape().unwrap(), vec![a.rows, a.cols]);
    assert_eq!(r.shape().unwrap(), vec![a.cols, a.cols]);
    let (q, r) = (exec_mat(s, &q), exec_mat(s, &r));
    let what = format!("qr with row chunks of {rows}");
    assert_orthonormal_cols(&q, 1e-10, &what);
    for i in 0..r.rows {
        assert!(
            r.get(i, i) >= 0.0,
            "{what}: R[{i},{i}] = {} < 0",
            r.get(i, i)
        );
        for j in 0..i {
            assert_eq!(r.get(i, j), 0.0, "{what}: R[{i},{j}] below the diagonal");
        }
    }
    let err = q.mul(&r).max_abs_diff(a);
    assert!(err <= 1e-10 * a.max_abs(), "{what}: |QR - A| = {err:e}");
    r
}

#[test]
fn qr_of_a_tall_matrix_under_several_chunkings() {
    let s = session();
    let a = Mat::random(500, 8, 12);
    let r0 = check_qr(&s, &a, 500);
    for rows in [64, 100, 7] {
        let r = check_qr(&s, &a, rows);
        let diff = r.max_abs_diff(&r0);
        assert!(
            diff <= 1e-10,
            "R with row chunks of {rows} differs by {diff:e}"
        );
    }
    // A square matrix is tall enough.
    check_qr(&s, &Mat::random(12, 12, 13), 5);
}

/// `Qᵀ X` of a TSQR factor, as `svd_compressed` computes it: right under any row chunking,
/// and the transposed blocks of Q are read by the product's tasks, not made by tasks of
/// their own.
#[test]
fn a_transposed_factor_is_read_by_its_product_without_a_task_of_its_own() {
    let s = session();
    let (a, x) = (Mat::random(300, 6, 21), Mat::random(300, 40, 22));
    for rows in [300, 64, 7] {
        let (q, _) = linalg::qr(&a.tensor().rechunk(&[rows, 6]));
        let product = q.transpose().matmul(&x.tensor().rechunk(&[rows, 40]));
        let (h, stats) = s.execute_with_stats(&product).unwrap();
        let qt = exec_mat(&s, &q).t();
        let what = format!("Qᵀ X with row chunks of {rows}");
        assert_product(
            &Mat::from_host(&h),
            &qt.mul(&x),
            &qt.abs().mul(&x.abs()),
            1e-12,
            &what,
        );
        // The same fused tasks as computing Q alone (its input's), none for Qᵀ.
        let fused = |stats: &tessera::JobStats| stats.chunks_by_op.get("fused").copied();
        let (_, alone) = s.execute_with_stats(&q).unwrap();
        assert_eq!(fused(&stats), fused(&alone), "{what}: {stats:?}");
    }
}

/// Runs the thin SVD of `a` (its tensor cut into `chunks`), checks U and V orthonormal, S
/// descending and non-negative, `U diag(S) Vt = A`, and returns S.
fn check_svd(s: &Session, a: &Mat, chunks: [usize; 2]) -> Vec<f64> {
    let r = a.rows.min(a.cols);
    let (u, sv, vt) = linalg::svd(&a.tensor().rechunk(&chunks));
    assert_eq!(u.shape().unwrap(), vec![a.rows, r]);
    assert_eq!(sv.shape().unwrap(), vec![r]);
    assert_eq!(vt.shape().unwrap(), vec![r, a.cols]);
    let what = format!("svd of {}x{} in chunks {chunks:?}", a.rows, a.cols);
    let (u, vt) = (exec_mat(s, &u), exec_mat(s, &vt));
    let sv = f64s(&run(s, &sv));
    assert_orthonormal_cols(&u, 1e-10, &format!("{what}: U"));
    assert_orthonormal_cols(&vt.t(), 1e-10, &format!("{what}: V"));
    assert!(
        sv.iter().all(|&x| x >= 0.0),
        "{what}: negative singular value {sv:?}"
    );
    assert!(
        sv.windows(2).all(|w| w[0] >= w[1]),
        "{what}: S not descending: {sv:?}"
    );
    let err = u.scale_cols(&sv).mul(&vt).max_abs_diff(a);
    assert!(err <= 1e-10 * a.max_abs(), "{what}: |U S Vt - A| = {err:e}");
    sv
}

#[test]
fn svd_of_tall_and_short_fat_matrices() {
    let s = session();
    let tall = Mat::random(300, 6, 14);
    let s0 = check_svd(&s, &tall, [300, 6]);
    for chunks in [[50, 6], [64, 6], [7, 3]] {
        let sv = check_svd(&s, &tall, chunks);
        for (x, y) in sv.iter().zip(&s0) {
            assert!(
                close(*x, *y, 1e-10, 0.0),
                "S under {chunks:?}: {sv:?} vs {s0:?}"
            );
        }
    }
    // The transpose has the same singular values.
    let wide = tall.t();
    for chunks in [[6, 300], [6, 50], [2, 41]] {
        let sv = check_svd(&s, &wide, chunks);
        for (x, y) in sv.iter().zip(&s0) {
            assert!(
                close(*x, *y, 1e-10, 0.0),
                "S of the transpose: {sv:?} vs {s0:?}"
            );
        }
    }
}

#[test]
fn svd_recovers_known_singular_values() {
    let s = session();
    // A rotated diagonal: A = Q1[:, :n] diag(s) Q2ᵀ.
    let want = [9.5, 7.25, 4.0, 2.5, 1.0, 0.125, 1e-3];
    let a = with_singular_values(120, &want, 15);
    for chunks in [[120, 7], [25, 7]] {
        let got = check_svd(&s, &a, chunks);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-10,
                "rotated diagonal {chunks:?}: {got:?} vs {want:?}"
            );
        }
        let got = check_svd(&s, &a.t(), [chunks[1], chunks[0]]);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 1e-10, "its transpose: {got:?} vs {want:?}");
        }
    }
    // A diagonal padded with zero rows, in row chunks that leave some blocks all zero.
    let diag = [0.5, 3.0, 2.0, 0.0, 1.0];
    let mut d = Mat::zeros(40, 5);
    for (i, &v) in diag.iter().enumerate() {
        d.set(i * 7, i, v);
    }
    let got = check_svd(&s, &d, [6, 5]);
    let mut sorted = diag.to_vec();
    sorted.sort_by(|x, y| y.total_cmp(x));
    for (g, w) in got.iter().zip(&sorted) {
        assert!(
            (g - w).abs() <= 1e-12,
            "padded diagonal: {got:?} vs {sorted:?}"
        );
    }
}

/// The top-k singular values from `svd_compressed`, checking the output shapes.
fn compressed_values(
    s: &Session,
    x: &Tensor,
    k: usize,
    iters: usize,
    over: usize,
    seed: u64,
) -> Vec<f64> {
    let (m, n) = {
        let shape = x.shape().unwrap();
        (shape[0], shape[1])
    };
    let (u, sv, vt) = linalg::svd_compressed(x, k, iters, over, seed);
    assert_eq!(u.shape().unwrap(), vec![m, k]);
    assert_eq!(sv.shape().unwrap(), vec![k]);
    assert_eq!(vt.shape().unwrap(), vec![k, n]);
    f64s(&run(s, &sv))
}

#[test]
fn svd_compressed_recovers_a_low_rank_matrix() {
    let s = session();
    let want = [40.0, 12.0, 3.0];
    let low = with_singular_values(
        200,
        &[want[0], want[1], want[2], 0.0, 0.0, 0.0, 0.0, 0.0],
        16,
    );
    // Pad to 200 x 64 columns with a random orthogonal mix, then add tiny noise.
    let mix = orthogonal(64, 17).first_cols(8).t(); // 8 x 64, orthonormal rows
    let mut a = low.mul(&mix);
    let noise = Mat::random(200, 64, 18);
    for (x, e) in a.data.iter_mut().zip(&noise.data) {
        *x += 1e-10 * e;
    }
    let x = a.tensor().rechunk(&[32, 64]);
    let got = compressed_values(&s, &x, 3, 0, 10, 19);
    for (g, w) in got.iter().zip(&want) {
        assert!(close(*g, *w, 1e-6, 0.0), "rank 3: {got:?} vs {want:?}");
    }
    // U and Vt of the compressed SVD are orthonormal and rebuild the matrix.
    let (u, sv, vt) = linalg::svd_compressed(&x, 3, 0, 10, 19);
    let (u, vt, sv) = (exec_mat(&s, &u), exec_mat(&s, &vt), f64s(&run(&s, &sv)));
    assert_orthonormal_cols(&u, 1e-10, "compressed U");
    assert_orthonormal_cols(&vt.t(), 1e-10, "compressed V");
    let err = u.scale_cols(&sv).mul(&vt).max_abs_diff(&a);
    assert!(err <= 1e-6, "compressed |U S Vt - A| = {err:e}");
}

/// `svd_compressed` against Dask's algorithm written with the public operations (the
/// same test matrix Ω; `Y = X Ω`; each power iteration `Y = X qr(Xᵀ qr(Y))`; `Q` from
/// `qr(Y)`; the SVD of `Qᵀ X`): equal to rounding under any row chunking, with and
/// without a power iteration, whether its single pass forms `Qᵀ X` from `(X Ω)ᵀ X` (a
/// well-conditioned matrix) or reads a block again (a nearly rank-deficient one). Blocks of
/// at least four times Ω's columns are read once per range (one `range_qr` task each);
/// shorter ones in two passes.
#[test]
fn svd_compressed_reads_its_input_once_and_agrees_with_two_passes() {
    let s = session();
    // The suite may run under `TESSERA_BACKEND=cuda` (scripts/gpu-check suite).
    let on_gpus = s.config().devices.iter().any(|d| d.starts_with("cuda:"));
    let (m, n, k, over, seed) = (240, 60, 4, 6, 31);
    let l = k + over;
    let mut spectrum = vec![0.0; n];
    spectrum[..3].copy_from_slice(&[40.0, 12.0, 3.0]);
    let mut nearly_rank_3 = with_singular_values(m, &spectrum, 33);
    let noise = Mat::random(m, n, 34);
    for (x, e) in nearly_rank_3.data.iter_mut().zip(&noise.data) {
        *x += 1e-9 * e;
    }
    for (name, a) in [
        ("uniform", Mat::random(m, n, 32)),
        ("nearly rank 3", nearly_rank_3),
    ] {
        let x = a.tensor();
        for iters in [0, 1] {
            let mut y = x.matmul(&default_rng(seed).normal(0.0, 1.0, &[n, l]));
            for _ in 0..iters {
                let (q, _) = linalg::qr(&y);
                let (w, _) = linalg::qr(&x.transpose().matmul(&q));
                y = x.matmul(&w);
            }
            let (q, _) = linalg::qr(&y);
            let (ub, sv, vt) = linalg::svd(&q.transpose().matmul(&x));
            let want_s = f64s(&run(&s, &sv))[..k].to_vec();
            let want_u = exec_mat(&s, &q.matmul(&ub)).first_cols(k);
            let want_vt = exec_mat(&s, &vt.transpose()).first_cols(k).t();
            let want = want_u.scale_cols(&want_s).mul(&want_vt);
            for rows in [240, 50, 40, 13, 7] {
                let what = format!("{name}, {iters} power iterations, row chunks of {rows}");
                let xc = x.rechunk(&[rows, n]);
                let (u, sv, vt) = linalg::svd_compressed(&xc, k, iters, over, seed);
                let (h, stats) = s.execute_with_stats(&sv).unwrap();
                let got_s = f64s(&h);
                for (g, w) in got_s.iter().zip(&want_s) {
                    assert!(
                        close(*g, *w, 1e-10, 1e-12 * want_s[0]),
                        "{what}: S {got_s:?} vs {want_s:?}"
                    );
                }
                let got = exec_mat(&s, &u).scale_cols(&got_s).mul(&exec_mat(&s, &vt));
                let err = got.max_abs_diff(&want);
                assert!(
                    err <= 1e-9 * want.max_abs(),
                    "{what}: |U S Vt - reference| = {err:e}"
                );
                // One pass a range: 1 + iters of them (a session with GPUs plans each
                // range as two passes of products instead, with no `range_qr`).
                let ranges = stats.chunks_by_op.get("range_qr").copied().unwrap_or(0);
                let one_pass = rows >= 4 * l && !on_gpus;
                let blocks = if one_pass { m.div_ceil(rows) } else { 0 };
                assert_eq!(ranges, ((1 + iters) * blocks) as u64, "{what}: {stats:?}");
            }
        }
    }
}

#[test]
fn power_iterations_improve_svd_compressed() {
    let s = session();
    // Slowly decaying spectrum 1/(i+1): a random projection alone misses part of it.
    let spectrum: Vec<f64> = (0..40).map(|i| 1.0 / (i as f64 + 1.0)).collect();
    let a = with_singular_values(160, &spectrum, 20);
    let x = a.tensor().rechunk(&[40, 40]);
    let k = 5;
    let error = |got: &[f64]| {
        got.iter()
            .zip(&spectrum)
            .map(|(g, w)| ((g - w) / w).abs())
            .fold(0.0, f64::max)
    };
    let e0 = error(&compressed_values(&s, &x, k, 0, 2, 21));
    let e2 = error(&compressed_values(&s, &x, k, 2, 2, 21));
    assert!(e2 < e0, "2 power iterations: error {e2:e}, none: {e0:e}");
    assert!(e2 < 0.05, "2 power iterations: error {e2:e}");
}

#[test]
fn svd_compressed_out_of_core_recomputes_and_agrees() {
    // 20000 x 50 float64 = 8 MB of random input, chunks of ~64 KiB.
    let (m, n, k) = (20_000, 50, 5);
    let chunk_bytes = 64 << 10;
    let input = || default_rng(23).random(&[m, n]);
    let values = |budget: u64| {
        let guard_session = session_from(builder().chunk_bytes(chunk_bytes).memory_budget(budget));
        let (_, sv, _) = linalg::svd_compressed(&input(), k, 1, 10, 24);
        let (h, stats) = match guard_session.execute_with_stats(&sv) {
            Ok(r) => r,
            Err(e) => panic!("svd_compressed with a budget of {budget} bytes: {e} ({e:?})"),
        };
        // The session still works after the job.
        let h2 = run(&guard_session, &(tensor::arange(0, 10, 1).sum()));
        assert_eq!(h2.item().unwrap().as_i64(), 45);
        (f64s(&h), stats)
    };
    let (small, small_stats) = values(2 << 20);
    let (large, large_stats) = values(1 << 30);
    assert!(
        small_stats.chunks_recomputed > 0,
        "a 2 MB budget under an 8 MB input recomputes chunks: {small_stats:?}"
    );
    assert_eq!(
        large_stats.chunks_recomputed, 0,
        "a 1 GB budget keeps every chunk: {large_stats:?}"
    );
    // Streaming never held the whole input; the large budget did.
    let input_bytes = (m * n * 8) as u64;
    assert!(
        small_stats.peak_stored_bytes < input_bytes,
        "the 2 MB budget held {} bytes of chunks at once",
        small_stats.peak_stored_bytes
    );
    assert!(
        large_stats.peak_stored_bytes >= input_bytes,
        "{large_stats:?}"
    );
    assert_eq!(small.len(), k);
    for (a, b) in small.iter().zip(&large) {
        assert!(
            close(*a, *b, 1e-9, 0.0),
            "budgets disagree: {small:?} vs {large:?}"
        );
    }
    // s1 of a uniform [0, 1) matrix is about sqrt(m n / 4).
    let s1 = ((m * n) as f64 / 4.0).sqrt();
    assert!(close(small[0], s1, 0.01, 0.0), "s1 = {} vs ~{s1}", small[0]);
}

/// Checks the error `t` carries (see [`expect_carried_error`]), then runs a good product.
fn expect_err(
    s: &Session,
    what: &str,
    t: &Tensor,
    pred: impl Fn(&Error) -> bool,
    mentions: &[&str],
) {
    expect_carried_error(s, what, t, pred, mentions);
    good_job(s);
}

fn good_job(s: &Session) {
    let a = Mat::random(9, 4, 30);
    let got = exec_mat(s, &a.tensor().rechunk(&[4, 4]).matmul(&a.t().tensor()));
    assert_product(
        &got,
        &a.mul(&a.t()),
        &a.abs().mul(&a.abs().t()),
        1e-12,
        "good job",
    );
}

fn is_shape(e: &Error) -> bool {
    matches!(e, Error::Shape(_))
}
fn is_arg(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(_))
}

#[test]
fn bad_linalg_inputs_give_typed_errors() {
    let s = session();
    let m34 = tensor::ones(&[3, 4], DType::F64);
    let m52 = tensor::ones(&[5, 2], DType::F64);
    expect_err(
        &s,
        "(3,4) · (5,2)",
        &m34.matmul(&m52),
        is_shape,
        &["[3, 4]", "[5, 2]"],
    );
    expect_err(
        &s,
        "(3,4) · (5,)",
        &m34.matmul(&tensor::ones(&[5], DType::F64)),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "(5,) · (3,4)",
        &tensor::ones(&[5], DType::F64).dot(&m34),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "(2,3,4) · (4,2)",
        &tensor::ones(&[2, 3, 4], DType::F64).matmul(&m52.transpose()),
        is_shape,
        &[],
    );

    // k out of range for svd_compressed.
    let tall = default_rng(31).random(&[50, 8]);
    for k in [0, 9, 100] {
        let (u, sv, vt) = linalg::svd_compressed(&tall, k, 0, 10, 1);
        for (name, t) in [("U", &u), ("S", &sv), ("Vt", &vt)] {
            expect_err(
                &s,
                &format!("svd_compressed k={k}: {name}"),
                t,
                is_arg,
                &[&k.to_string()],
            );
        }
    }

    // Factorizations need matrices.
    for shape in [vec![40], vec![4, 5, 6]] {
        let x = tensor::ones(&shape, DType::F64);
        let (q, r) = linalg::qr(&x);
        let (u, sv, vt) = linalg::svd(&x);
        let (cu, cs, cvt) = linalg::svd_compressed(&x, 1, 0, 10, 1);
        for (name, t) in [
            ("Q", q),
            ("R", r),
            ("U", u),
            ("S", sv),
            ("Vt", vt),
            ("cU", cu),
            ("cS", cs),
            ("cVt", cvt),
        ] {
            expect_err(&s, &format!("{name} of shape {shape:?}"), &t, is_shape, &[]);
        }
    }

    // Roughly square and too wide for TSQR: svd points at svd_compressed; so does qr, and
    // a wide matrix is not tall for qr.
    let n = MAX_TSQR_COLUMNS + 100;
    for shape in [[n, n], [n + 500, n], [n, n + 500]] {
        let x = default_rng(32).random(&shape);
        let (u, sv, vt) = linalg::svd(&x);
        for (name, t) in [("U", u), ("S", sv), ("Vt", vt)] {
            expect_err(
                &s,
                &format!("svd {name} of {shape:?}"),
                &t,
                is_arg,
                &["svd_compressed"],
            );
        }
    }
    let (q, _) = linalg::qr(&tensor::ones(&[4, 9], DType::F64));
    expect_err(&s, "qr of a wide matrix", &q, is_arg, &[]);

    // A NaN in the input fails the job with a cause that names it.
    let mut a = Mat::random(60, 4, 33);
    a.set(37, 2, f64::NAN);
    let (q, r) = linalg::qr(&a.tensor().rechunk(&[16, 4]));
    for (name, t) in [("Q", &q), ("R", &r)] {
        match t.execute(&s) {
            Err(Error::ChunkFailed { cause, .. }) => {
                let msg = cause.to_string();
                assert!(
                    msg.contains("NaN") || msg.contains("non-finite"),
                    "qr {name} of a NaN input: cause {msg:?}"
                );
            }
            other => panic!("qr {name} of a NaN input: expected ChunkFailed, got {other:?}"),
        }
        good_job(&s);
    }
    let (_, sv, _) = linalg::svd(&a.tensor().rechunk(&[16, 4]));
    assert!(
        matches!(sv.execute(&s), Err(Error::ChunkFailed { .. })),
        "svd of a NaN input"
    );
    good_job(&s);
}
