//! Tests of the CPU linear-algebra kernels against naive products and factorizations.

use super::*;
use crate::expr::{FlatMap, FusedKernel, Instr, InstrKind, LeafSource};
use crate::{DType, Scalar};

/// A deterministic generator of values in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    fn mat(&mut self, rows: usize, cols: usize) -> HostTensor {
        let v = (0..rows * cols).map(|_| self.next()).collect();
        tensor(vec![rows, cols], v).unwrap()
    }
}

fn t(rows: usize, cols: usize, v: Vec<f64>) -> HostTensor {
    tensor(vec![rows, cols], v).unwrap()
}

fn vals(t: &HostTensor) -> &[f64] {
    t.as_slice::<f64>().unwrap()
}

fn dims(t: &HostTensor) -> (usize, usize) {
    (t.shape()[0], t.shape()[1])
}

fn naive(a: &HostTensor, b: &HostTensor) -> HostTensor {
    let ((m, k), (k2, n)) = (dims(a), dims(b));
    assert_eq!(k, k2);
    let (av, bv) = (vals(a), vals(b));
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|l| av[i * k + l] * bv[l * n + j]).sum();
        }
    }
    t(m, n, out)
}

fn transpose(a: &HostTensor) -> HostTensor {
    let (m, n) = dims(a);
    let av = vals(a);
    t(n, m, (0..n * m).map(|x| av[(x % m) * n + x / m]).collect())
}

fn rows(a: &HostTensor, start: usize, len: usize) -> HostTensor {
    let n = a.shape()[1];
    t(len, n, vals(a)[start * n..(start + len) * n].to_vec())
}

fn assert_close(a: &HostTensor, b: &HostTensor, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    for (i, (x, y)) in vals(a).iter().zip(vals(b)).enumerate() {
        assert!((x - y).abs() <= tol, "element {i}: {x} vs {y}");
    }
}

fn assert_orthonormal_cols(q: &HostTensor) {
    let r = q.shape()[1];
    let qtq = naive(&transpose(q), q);
    for i in 0..r {
        for j in 0..r {
            let want = if i == j { 1.0 } else { 0.0 };
            let got = vals(&qtq)[i * r + j];
            assert!((got - want).abs() < 1e-12, "QᵀQ[{i},{j}] = {got}");
        }
    }
}

fn inputs(ts: Vec<ChunkData>) -> Vec<Arc<ChunkData>> {
    ts.into_iter().map(Arc::new).collect()
}

fn tensors(ts: &[&HostTensor]) -> Vec<Arc<ChunkData>> {
    inputs(ts.iter().map(|t| ChunkData::Tensor((*t).clone())).collect())
}

fn input(i: usize) -> MatOperand {
    MatOperand::Input(InputRef::whole(i))
}

fn run_tensor(op: LinalgOp, ins: &[Arc<ChunkData>]) -> HostTensor {
    match run(&op, ins).unwrap() {
        ChunkData::Tensor(t) => t,
        other => panic!("expected a tensor, got {other:?}"),
    }
}

fn run_parts(op: LinalgOp, ins: &[Arc<ChunkData>]) -> Vec<HostTensor> {
    match run(&op, ins).unwrap() {
        ChunkData::Parts(p) => p,
        other => panic!("expected parts, got {other:?}"),
    }
}

#[test]
fn matmul_matches_naive_for_rectangular_shapes() {
    let mut g = Lcg(1);
    for &(m, k, n) in &[
        (1, 7, 5),
        (6, 7, 1),
        (1, 9, 1),
        (13, 1, 4),
        (17, 23, 11),
        (64, 3, 65),
        (40, 100, 30),
    ] {
        let (a, b) = (g.mat(m, k), g.mat(k, n));
        let got = run_tensor(
            LinalgOp::MatMul {
                pairs: vec![(input(0), input(1))],
            },
            &tensors(&[&a, &b]),
        );
        assert_close(&got, &naive(&a, &b), 1e-12);
    }
}

#[test]
fn matmul_sums_pairs_with_row_ranges_and_parts() {
    let mut g = Lcg(2);
    let (a0, b0) = (g.mat(5, 8), g.mat(8, 3));
    let (a1, b1) = (g.mat(5, 4), g.mat(10, 3));
    let (q, extra) = (g.mat(2, 2), g.mat(5, 6));
    let ins = inputs(vec![
        ChunkData::Tensor(a0.clone()),
        ChunkData::Tensor(b0.clone()),
        ChunkData::Tensor(a1.clone()),
        ChunkData::Parts(vec![q, b1.clone()]),
        ChunkData::Parts(vec![extra.clone()]),
    ]);
    let b1_rows = MatOperand::Input(InputRef {
        input: 3,
        part: Some(1),
        rows: Some((3, 4)),
    });
    let extra_rows = MatOperand::Input(InputRef {
        input: 4,
        part: Some(0),
        rows: Some((0, 5)),
    });
    let b0_rows = MatOperand::Input(InputRef {
        input: 1,
        part: None,
        rows: Some((2, 6)),
    });
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![
                (input(0), input(1)),
                (input(2), b1_rows),
                (extra_rows, b0_rows),
            ],
        },
        &ins,
    );
    let want = naive(&a0, &b0);
    let want2 = naive(&a1, &rows(&b1, 3, 4));
    let want3 = naive(&extra, &rows(&b0, 2, 6));
    let sum: Vec<f64> = (0..15)
        .map(|i| vals(&want)[i] + vals(&want2)[i] + vals(&want3)[i])
        .collect();
    assert_close(&got, &t(5, 3, sum), 1e-12);
}

#[test]
fn matmul_handles_empty_dimensions_and_propagates_nan() {
    let a = t(3, 0, vec![]);
    let b = t(0, 2, vec![]);
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![(input(0), input(1))],
        },
        &tensors(&[&a, &b]),
    );
    assert_eq!(got, t(3, 2, vec![0.0; 6]));
    let a = t(2, 2, vec![1.0, f64::NAN, 0.0, 1.0]);
    let b = t(2, 1, vec![1.0, 1.0]);
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![(input(0), input(1))],
        },
        &tensors(&[&a, &b]),
    );
    assert!(vals(&got)[0].is_nan());
    assert_eq!(vals(&got)[1], 1.0);
}

/// A `rows × cols` block computed in the task: the flat index times `1e-6`.
fn ramp(rows: usize, cols: usize) -> FusedKernel {
    FusedKernel {
        instrs: vec![Instr {
            shape: vec![rows, cols],
            dtype: DType::F64,
            kind: InstrKind::Leaf(LeafSource::Ramp {
                start: Scalar::F64(0.0),
                step: Scalar::F64(1e-6),
                pin: None,
                map: FlatMap {
                    base: 0,
                    strides: vec![cols as i64, 1],
                },
            }),
        }],
        root: 0,
        reduce: None,
    }
}

#[test]
fn generated_operands_are_multiplied_strip_by_strip_on_either_side() {
    // A ramp big enough for several strips: (3000 × 400), values flat * 1e-6.
    let (m, k) = (3000usize, 400usize);
    assert!(m > strip_rows(k), "the ramp must span several strips");
    let dense = t(m, k, (0..m * k).map(|i| i as f64 * 1e-6).collect());
    let right = Lcg(5).mat(k, 3);
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![(MatOperand::Fused(Box::new(ramp(m, k))), input(0))],
        },
        &tensors(&[&right]),
    );
    assert_close(&got, &naive(&dense, &right), 1e-9);
    let left = Lcg(6).mat(3, m);
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![(input(0), MatOperand::Fused(Box::new(ramp(m, k))))],
        },
        &tensors(&[&left]),
    );
    assert_close(&got, &naive(&left, &dense), 1e-9);
}

#[test]
fn matmul_with_a_fused_operand() {
    // Ramp over [2, 3]: 0..6 row-major.
    let kernel = FusedKernel {
        instrs: vec![Instr {
            shape: vec![2, 3],
            dtype: DType::F64,
            kind: InstrKind::Leaf(LeafSource::Ramp {
                start: Scalar::F64(0.0),
                step: Scalar::F64(1.0),
                pin: None,
                map: FlatMap {
                    base: 0,
                    strides: vec![3, 1],
                },
            }),
        }],
        root: 0,
        reduce: None,
    };
    let b = Lcg(3).mat(3, 4);
    let got = run_tensor(
        LinalgOp::MatMul {
            pairs: vec![(MatOperand::Fused(Box::new(kernel)), input(0))],
        },
        &tensors(&[&b]),
    );
    let a = t(2, 3, (0..6).map(f64::from).collect());
    assert_close(&got, &naive(&a, &b), 1e-12);
}

fn check_qr(a: &HostTensor, parts: &[HostTensor]) {
    let (m, n) = dims(a);
    let r = m.min(n);
    let [q, rr] = parts else {
        panic!("expected two parts")
    };
    assert_eq!(q.shape(), &[m, r]);
    assert_eq!(rr.shape(), &[r, n]);
    assert_orthonormal_cols(q);
    for i in 0..r {
        assert!(vals(rr)[i * n + i] >= 0.0);
        for j in 0..i.min(n) {
            assert_eq!(vals(rr)[i * n + j], 0.0);
        }
    }
    assert_close(&naive(q, rr), a, 1e-12);
}

#[test]
fn qr_of_tall_square_and_wide_blocks() {
    let mut g = Lcg(4);
    for &(m, n) in &[(50, 7), (9, 9), (1, 1), (1, 6), (4, 11), (300, 20), (5, 1)] {
        let a = g.mat(m, n);
        let parts = run_parts(LinalgOp::Qr(input(0)), &tensors(&[&a]));
        check_qr(&a, &parts);
    }
}

/// A block computed in the task (a centred block) factors as the same block read from an
/// input does, bit for bit.
#[test]
fn qr_of_a_computed_block_equals_qr_of_the_block_kept() {
    let (m, n) = (300, 5);
    let kept = t(m, n, (0..m * n).map(|i| i as f64 * 1e-6).collect());
    let computed = run_parts(LinalgOp::Qr(MatOperand::Fused(Box::new(ramp(m, n)))), &[]);
    check_qr(&kept, &computed);
    assert_eq!(
        computed,
        run_parts(LinalgOp::Qr(input(0)), &tensors(&[&kept]))
    );
}

#[test]
fn qr_of_a_row_range_of_a_part() {
    let a = Lcg(5).mat(30, 4);
    let ins = inputs(vec![ChunkData::Parts(vec![t(1, 1, vec![0.0]), a.clone()])]);
    let parts = run_parts(
        LinalgOp::Qr(MatOperand::Input(InputRef {
            input: 0,
            part: Some(1),
            rows: Some((10, 12)),
        })),
        &ins,
    );
    check_qr(&rows(&a, 10, 12), &parts);
}

#[test]
fn stacked_qr_equals_qr_of_the_stack() {
    let mut g = Lcg(6);
    let (a, b, c) = (g.mat(5, 5), g.mat(3, 5), g.mat(9, 5));
    let ins = inputs(vec![
        ChunkData::Tensor(a.clone()),
        ChunkData::Parts(vec![b.clone(), c.clone()]),
    ]);
    let refs = vec![
        InputRef::whole(0),
        InputRef::part(1, 0),
        InputRef {
            input: 1,
            part: Some(1),
            rows: Some((2, 6)),
        },
    ];
    let got = run_parts(LinalgOp::StackedQr(refs), &ins);
    let mut stack = vals(&a).to_vec();
    stack.extend_from_slice(vals(&b));
    stack.extend_from_slice(vals(&rows(&c, 2, 6)));
    let stack = t(14, 5, stack);
    check_qr(&stack, &got);
    let direct = run_parts(LinalgOp::Qr(input(0)), &tensors(&[&stack]));
    assert_close(&got[0], &direct[0], 1e-12);
    assert_close(&got[1], &direct[1], 1e-12);
    // A wide stack (fewer rows than columns in total).
    let (d, e) = (g.mat(2, 7), g.mat(3, 7));
    let got = run_parts(
        LinalgOp::StackedQr(vec![InputRef::whole(0), InputRef::whole(1)]),
        &tensors(&[&d, &e]),
    );
    let mut stack = vals(&d).to_vec();
    stack.extend_from_slice(vals(&e));
    check_qr(&t(5, 7, stack), &got);
}

#[test]
fn stacked_qr_rejects_mismatched_columns() {
    let mut g = Lcg(7);
    let (a, b) = (g.mat(3, 3), g.mat(3, 4));
    let err = run(
        &LinalgOp::StackedQr(vec![InputRef::whole(0), InputRef::whole(1)]),
        &tensors(&[&a, &b]),
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::ShapeMismatch(_)), "{err}");
}

fn check_svd(a: &HostTensor, parts: &[HostTensor]) {
    let (m, n) = dims(a);
    let r = m.min(n);
    let [u, s, vt] = parts else {
        panic!("expected three parts")
    };
    assert_eq!(u.shape(), &[m, r]);
    assert_eq!(s.shape(), &[r]);
    assert_eq!(vt.shape(), &[r, n]);
    assert_orthonormal_cols(u);
    assert_orthonormal_cols(&transpose(vt));
    let s = vals(s);
    assert!(s.iter().all(|&x| x >= 0.0));
    assert!(s.windows(2).all(|w| w[0] >= w[1]), "{s:?}");
    let us = t(m, r, (0..m * r).map(|x| vals(u)[x] * s[x % r]).collect());
    assert_close(&naive(&us, vt), a, 1e-12);
    for i in 0..r {
        let col: Vec<f64> = (0..m).map(|j| vals(u)[j * r + i]).collect();
        let mut best = 0;
        for (j, x) in col.iter().enumerate() {
            if x.abs() > col[best].abs() {
                best = j;
            }
        }
        assert!(col[best] > 0.0, "column {i} of U: {col:?}");
    }
}

#[test]
fn svd_of_tall_square_and_wide_blocks() {
    let mut g = Lcg(8);
    for &(m, n) in &[(40, 6), (8, 8), (1, 1), (1, 5), (5, 1), (6, 31)] {
        let a = g.mat(m, n);
        let parts = run_parts(LinalgOp::Svd(InputRef::whole(0)), &tensors(&[&a]));
        check_svd(&a, &parts);
    }
}

#[test]
fn svd_of_a_rotated_diagonal_is_exact() {
    // Q1 · diag(3, 2, 1) · Q2ᵀ with Q1, Q2 orthogonal (exactly representable).
    let q1 = t(3, 3, vec![0.6, 0.8, 0.0, -0.8, 0.6, 0.0, 0.0, 0.0, 1.0]);
    let q2 = t(3, 3, vec![1.0, 0.0, 0.0, 0.0, 0.28, 0.96, 0.0, -0.96, 0.28]);
    let d = t(3, 3, vec![3.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 1.0]);
    let a = naive(&naive(&q1, &d), &transpose(&q2));
    let parts = run_parts(LinalgOp::Svd(InputRef::whole(0)), &tensors(&[&a]));
    check_svd(&a, &parts);
    let s = vals(&parts[1]);
    for (got, want) in s.iter().zip([3.0, 2.0, 1.0]) {
        assert!((got - want).abs() < 1e-12, "{s:?}");
    }
}

#[test]
fn take_and_sum() {
    let mut g = Lcg(9);
    let (a, b) = (g.mat(6, 3), g.mat(4, 3));
    let v = tensor(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
    let ins = inputs(vec![
        ChunkData::Tensor(a.clone()),
        ChunkData::Parts(vec![b.clone(), v.clone()]),
    ]);
    let got = run_tensor(
        LinalgOp::Take(InputRef {
            input: 0,
            part: None,
            rows: Some((1, 4)),
        }),
        &ins,
    );
    assert_eq!(got, rows(&a, 1, 4));
    assert_eq!(run_tensor(LinalgOp::Take(InputRef::part(1, 1)), &ins), v);
    let got = run_tensor(
        LinalgOp::Sum(vec![
            InputRef {
                input: 0,
                part: None,
                rows: Some((2, 4)),
            },
            InputRef::part(1, 0),
        ]),
        &ins,
    );
    let want: Vec<f64> = (0..12).map(|i| vals(&a)[6 + i] + vals(&b)[i]).collect();
    assert_eq!(got, t(4, 3, want));
    let got = run_tensor(
        LinalgOp::Sum(vec![InputRef::part(1, 1), InputRef::part(1, 1)]),
        &ins,
    );
    assert_eq!(got, tensor(vec![3], vec![2.0, 4.0, 6.0]).unwrap());
}

#[test]
fn errors_are_reported_not_panicked() {
    let mut g = Lcg(10);
    let (a, b) = (g.mat(3, 4), g.mat(5, 2));
    let mut nan = g.mat(4, 3);
    let nan_data = vals(&nan).to_vec();
    let mut with_nan = nan_data.clone();
    with_nan[5] = f64::NAN;
    nan = t(4, 3, with_nan);
    let mut with_inf = nan_data;
    with_inf[0] = f64::INFINITY;
    let inf = t(4, 3, with_inf);
    let v = tensor(vec![3], vec![1.0, 2.0, 3.0]).unwrap();
    let ins = inputs(vec![
        ChunkData::Tensor(a.clone()),
        ChunkData::Tensor(b),
        ChunkData::Tensor(nan),
        ChunkData::Parts(vec![a.clone()]),
        ChunkData::Tensor(inf),
        ChunkData::Tensor(v),
        ChunkData::Tensor(HostTensor::new(vec![2, 2], Buffer::I64(vec![1, 2, 3, 4])).unwrap()),
    ]);
    let err = |op: LinalgOp| run(&op, &ins).unwrap_err();
    let invalid = |e: KernelError| {
        assert!(
            matches!(&e, KernelError::InvalidValue(m) if m.contains("NaN or infinite")),
            "{e}"
        )
    };
    invalid(err(LinalgOp::Qr(input(2))));
    invalid(err(LinalgOp::Svd(InputRef::whole(2))));
    invalid(err(LinalgOp::Svd(InputRef::whole(4))));
    invalid(err(LinalgOp::StackedQr(vec![
        InputRef::whole(2),
        InputRef::whole(4),
    ])));
    let shape = |e: KernelError| assert!(matches!(e, KernelError::ShapeMismatch(_)), "{e}");
    let badin = |e: KernelError| assert!(matches!(e, KernelError::BadInput(_)), "{e}");
    shape(err(LinalgOp::MatMul {
        pairs: vec![(input(0), input(1))],
    }));
    // Products of different shapes.
    shape(err(LinalgOp::MatMul {
        pairs: vec![(input(0), input(2)), (input(2), input(0))],
    }));
    badin(err(LinalgOp::MatMul { pairs: vec![] }));
    // Part missing, part of a tensor, a multi-part input as a tensor, input missing.
    badin(err(LinalgOp::Qr(MatOperand::Input(InputRef::part(3, 1)))));
    badin(err(LinalgOp::Qr(MatOperand::Input(InputRef::part(0, 0)))));
    badin(err(LinalgOp::Qr(input(3))));
    badin(err(LinalgOp::Take(InputRef::whole(9))));
    // Rows out of range, rows of a vector.
    badin(err(LinalgOp::Take(InputRef {
        input: 0,
        part: None,
        rows: Some((2, 2)),
    })));
    badin(err(LinalgOp::Take(InputRef {
        input: 0,
        part: None,
        rows: Some((usize::MAX, 2)),
    })));
    badin(err(LinalgOp::Take(InputRef {
        input: 5,
        part: None,
        rows: Some((0, 1)),
    })));
    // A vector where a matrix is expected; sums of different shapes; no operands.
    shape(err(LinalgOp::Svd(InputRef::whole(5))));
    shape(err(LinalgOp::Sum(vec![
        InputRef::whole(0),
        InputRef::whole(1),
    ])));
    badin(err(LinalgOp::Sum(vec![])));
    badin(err(LinalgOp::StackedQr(vec![])));
    badin(err(LinalgOp::Qr(input(6))));
}

#[test]
fn empty_factorizations() {
    let a = t(0, 3, vec![]);
    let parts = run_parts(LinalgOp::Qr(input(0)), &tensors(&[&a]));
    assert_eq!(parts[0].shape(), &[0, 0]);
    assert_eq!(parts[1].shape(), &[0, 3]);
    let parts = run_parts(LinalgOp::Svd(InputRef::whole(0)), &tensors(&[&a]));
    assert_eq!(parts[1].shape(), &[0]);
    assert_eq!(parts[2].shape(), &[0, 3]);
    let (b, c, d) = (t(2, 0, vec![]), t(3, 0, vec![]), Lcg(11).mat(2, 3));
    let ins = tensors(&[&b, &c, &a, &d]);
    let stacked = |i: usize, j: usize| {
        run_parts(
            LinalgOp::StackedQr(vec![InputRef::whole(i), InputRef::whole(j)]),
            &ins,
        )
    };
    let parts = stacked(0, 1);
    assert_eq!(parts[0].shape(), &[5, 0]);
    assert_eq!(parts[1].shape(), &[0, 0]);
    check_qr(&d, &stacked(2, 3));
}

/// `RangeQr` of `x` (m × n) and `omega` (n × l) read as `tuning` says, checked against
/// its definition: Q orthonormal, `Q R = x · omega` with R upper triangular and a
/// non-negative diagonal, `P = xᵀ Q`.
fn check_range_qr(x: &HostTensor, omega: &HostTensor, tuning: range::Tuning) {
    let ins = tensors(&[x, omega]);
    let parts = match range::range_qr_with(&input(0), &InputRef::whole(1), &ins, tuning) {
        Ok(ChunkData::Parts(p)) => p,
        other => panic!("expected parts, got {other:?}"),
    };
    let [q, r, p] = &parts[..] else {
        panic!("expected 3 parts, got {}", parts.len())
    };
    let ((m, _), l) = (dims(x), dims(omega).1);
    let rank = m.min(l);
    assert_eq!((dims(q), dims(r)), ((m, rank), (rank, l)), "{tuning:?}");
    assert_orthonormal_cols(q);
    for i in 0..rank {
        assert!(vals(r)[i * l + i] >= 0.0, "{tuning:?}: R[{i},{i}] < 0");
        for j in 0..i.min(l) {
            assert_eq!(vals(r)[i * l + j], 0.0, "{tuning:?}: R[{i},{j}]");
        }
    }
    assert_close(&naive(q, r), &naive(x, omega), 1e-9);
    assert_close(p, &naive(&transpose(x), q), 1e-9);
}

fn tuning(panel_rows: usize, max_condition: f64) -> range::Tuning {
    range::Tuning {
        panel_rows,
        max_condition,
    }
}

#[test]
fn range_qr_matches_its_definition_read_once_or_twice_under_any_panel_height() {
    let mut g = Lcg(41);
    for &(m, n, l) in &[(50, 30, 6), (7, 12, 9), (1, 5, 3), (40, 3, 3), (9, 9, 9)] {
        let (x, omega) = (g.mat(m, n), g.mat(n, l));
        for step in [1, 2, 3, 5, l, l + 1, 17, m, m + 4] {
            // From G = Yᵀx whatever R's condition (these are well-conditioned), from a
            // second read of x whatever it is, and as the default bound decides.
            for bound in [f64::INFINITY, 0.0, range::MAX_CONDITION] {
                check_range_qr(&x, &omega, tuning(step, bound));
            }
        }
    }
}

#[test]
fn range_qr_reads_x_again_where_x_omega_is_rank_deficient() {
    // x of rank 2, omega with 6 columns: R is singular, so R⁻ᵀ G is not an option; Q
    // still spans x's range and P = xᵀQ.
    let mut g = Lcg(43);
    let (a, b) = (g.mat(60, 2), g.mat(2, 25));
    let x = naive(&a, &b);
    let omega = g.mat(25, 6);
    for step in [4, 7, 60] {
        check_range_qr(&x, &omega, tuning(step, range::MAX_CONDITION));
    }
    // Nearly rank-deficient: rank 2 plus noise of 1e-9 (a condition number near 1e9).
    let noise = g.mat(60, 25);
    let v: Vec<f64> = vals(&x)
        .iter()
        .zip(vals(&noise))
        .map(|(x, e)| x + 1e-9 * e)
        .collect();
    check_range_qr(&t(60, 25, v), &omega, tuning(8, range::MAX_CONDITION));
    // A zero matrix: R is zero.
    check_range_qr(
        &t(10, 4, vec![0.0; 40]),
        &g.mat(4, 3),
        tuning(3, range::MAX_CONDITION),
    );
}

#[test]
fn range_qr_reads_a_generated_x_and_reports_bad_input() {
    // x generated by a ramp kernel, against the same values as an input.
    let (m, n) = (90usize, 12usize);
    let ramp = FusedKernel {
        instrs: vec![Instr {
            shape: vec![m, n],
            dtype: DType::F64,
            kind: InstrKind::Leaf(LeafSource::Ramp {
                start: Scalar::F64(1.0),
                step: Scalar::F64(0.25),
                pin: None,
                map: FlatMap {
                    base: 0,
                    strides: vec![n as i64, 1],
                },
            }),
        }],
        root: 0,
        reduce: None,
    };
    let dense = t(m, n, (0..m * n).map(|i| 1.0 + 0.25 * i as f64).collect());
    let omega = Lcg(47).mat(n, 4);
    let op = |x| LinalgOp::RangeQr {
        x,
        omega: InputRef::whole(0),
    };
    let generated = run_parts(op(MatOperand::Fused(Box::new(ramp))), &tensors(&[&omega]));
    let read = run_parts(
        op(MatOperand::Input(InputRef::whole(1))),
        &tensors(&[&omega, &dense]),
    );
    for (g, r) in generated.iter().zip(&read) {
        assert_close(g, r, 1e-9);
    }
    // omega's rows must match x's columns.
    let short = Lcg(48).mat(n - 1, 4);
    let err = run(&op(input(1)), &tensors(&[&short, &dense])).unwrap_err();
    assert!(matches!(err, KernelError::ShapeMismatch(_)), "{err}");
    // A NaN in x is an error, as for a QR.
    let mut v = vals(&dense).to_vec();
    v[5] = f64::NAN;
    let bad = t(m, n, v);
    let err = run(&op(input(1)), &tensors(&[&omega, &bad])).unwrap_err();
    assert!(
        matches!(&err, KernelError::InvalidValue(m) if m.contains("NaN")),
        "{err}"
    );
}

#[test]
fn a_range_qr_reservation_covers_its_output_and_buffers() {
    let (m, n, l) = (300usize, 40usize, 6usize);
    let (omega, x) = (Lcg(51).mat(n, l), Lcg(52).mat(m, n));
    let range = LinalgOp::RangeQr {
        x: input(1),
        omega: InputRef::whole(0),
    };
    let parts = run_parts(range.clone(), &tensors(&[&omega, &x]));
    let output: u64 = parts.iter().map(|p| (vals(p).len() * 8) as u64).sum();
    // G = Yᵀx and P, each l × n, live beside the output while it runs.
    let buffers = (2 * l * n * 8) as u64;
    let op = crate::ChunkOp::Linalg(range);
    // x stored (an input), or generated in the task (omega the only input).
    let stored = vec![(n * l * 8) as u64, (m * n * 8) as u64];
    for inputs in [stored.clone(), stored[..1].to_vec()] {
        let reserved =
            op.output_estimate(inputs.clone()).unwrap_or(0) + op.working_estimate(inputs.clone());
        assert!(
            reserved >= output + buffers,
            "{inputs:?}: {reserved} < {output} + {buffers}"
        );
    }
}
