//! Zero-size tensors, with NumPy's answers written beside each case: creation, slices that
//! select nothing, reshape, broadcasting, concatenation, elementwise operations,
//! reductions (identities, NaN, and a typed error where NumPy raises), the matrix product,
//! persist and the sequential reference executor, under several chunkings.

use crate::common::*;
use tessera::tensor::random::default_rng;
use tessera::{linalg, reference, tensor, DType, Error, HostTensor, Session, Slice, Tensor};

/// Checks that `h` holds no element, with `shape` and `dtype`.
fn assert_empty(h: &HostTensor, shape: &[usize], dtype: DType, what: &str) {
    assert_eq!(h.shape(), shape, "{what}: shape");
    assert_eq!(h.dtype(), dtype, "{what}: dtype");
    assert_eq!(h.len(), 0, "{what}: elements");
    assert_eq!(h.item(), None, "{what}: item of nothing");
}

/// Runs `t` and checks it is empty with `shape` and `dtype`.
fn empty_result(s: &Session, t: &Tensor, shape: &[usize], dtype: DType, what: &str) {
    assert_eq!(t.shape().ok().as_deref(), Some(shape), "{what}: lazy shape");
    assert_empty(&run(s, t), shape, dtype, what);
}

fn is_empty_reduction(op: &'static str) -> impl Fn(&Error) -> bool {
    move |e| matches!(e, Error::EmptyReduction { op: o } if *o == op)
}

#[test]
fn creation_with_a_zero_extent() {
    let s = session();
    let cases: Vec<(&str, Tensor, Vec<usize>, DType)> = vec![
        // np.zeros((3, 0))
        (
            "zeros (3, 0)",
            tensor::zeros(&[3, 0], DType::F64),
            vec![3, 0],
            DType::F64,
        ),
        // np.ones(0, dtype=np.int32)
        (
            "ones (0,)",
            tensor::ones(&[0], DType::I32),
            vec![0],
            DType::I32,
        ),
        // np.full((0, 2), 1, dtype=np.uint8)
        (
            "full (0, 2)",
            tensor::full(&[0, 2], 1u8),
            vec![0, 2],
            DType::U8,
        ),
        (
            "from_vec of nothing",
            tensor::from_vec(Vec::<f64>::new(), &[0, 4]),
            vec![0, 4],
            DType::F64,
        ),
        // np.arange(5, 5), np.arange(5, 0, 1), np.arange(1, 0, 0.5), np.linspace(0, 1, 0)
        ("arange(5, 5)", tensor::arange(5, 5, 1), vec![0], DType::I64),
        (
            "arange(5, 0, 1)",
            tensor::arange(5, 0, 1),
            vec![0],
            DType::I64,
        ),
        (
            "arange(0, 5, -1)",
            tensor::arange(0, 5, -1),
            vec![0],
            DType::I64,
        ),
        (
            "arange_f64(1, 0, 0.5)",
            tensor::arange_f64(1.0, 0.0, 0.5),
            vec![0],
            DType::F64,
        ),
        (
            "linspace num 0",
            tensor::linspace(0.0, 1.0, 0),
            vec![0],
            DType::F64,
        ),
        (
            "uniform (2, 0)",
            default_rng(1).uniform(0.0, 1.0, &[2, 0]),
            vec![2, 0],
            DType::F64,
        ),
        (
            "randint (0,)",
            default_rng(1).randint(0, 3, &[0]),
            vec![0],
            DType::I64,
        ),
    ];
    for (what, t, shape, dtype) in cases {
        empty_result(&s, &t, &shape, dtype, what);
        // Persisting an empty tensor keeps it empty and usable.
        let p = t.persist(&s).expect("persist of an empty tensor");
        let plus = (&t + 1i64).dtype().expect("dtype of t + 1");
        empty_result(&s, &(&p + 1i64), &shape, plus, what);
    }
}

#[test]
fn slices_that_select_nothing() {
    let s = session();
    for c in [1, 2, 4, 10] {
        let x = tensor::arange(0, 10, 1).rechunk(&[c]);
        // x[5:5], x[10:2], x[1:3:-1], x[20:]
        for sl in [
            Slice::new(Some(5), Some(5), 1),
            Slice::new(Some(10), Some(2), 1),
            Slice::new(Some(1), Some(3), -1),
            Slice::new(Some(20), None, 1),
        ] {
            empty_result(&s, &x.slice(&[sl]), &[0], DType::I64, "1-D empty slice");
        }
        let m = tensor::arange(0, 24, 1)
            .reshape(&[4, 6])
            .rechunk(&[c.min(4), c]);
        // m[:, 3:3].shape == (4, 0); m[2:2].shape == (0, 6)
        let cols = m.slice(&[Slice::all(), Slice::new(Some(3), Some(3), 1)]);
        empty_result(&s, &cols, &[4, 0], DType::I64, "m[:, 3:3]");
        let rows = m.slice(&[Slice::new(Some(2), Some(2), 1)]);
        empty_result(&s, &rows, &[0, 6], DType::I64, "m[2:2]");
        // m[:, 3:3].sum(axis=1) == [0, 0, 0, 0]; m[2:2].sum(axis=0) == [0] * 6
        assert_eq!(i64s(&run(&s, &cols.sum_axis(1))), vec![0; 4], "chunks {c}");
        assert_eq!(i64s(&run(&s, &rows.sum_axis(0))), vec![0; 6], "chunks {c}");
        // m[2:2].max(axis=1) is empty (nothing to reduce into); m[2:2].max(axis=0) raises.
        empty_result(&s, &rows.max_axis(1), &[0], DType::I64, "max over axis 1");
        expect_carried_error(
            &s,
            "max over an empty axis",
            &rows.max_axis(0),
            is_empty_reduction("max"),
            &["max", "zero-size"],
        );
        // A slice of an empty slice stays empty.
        let again = rows.slice(&[Slice::all(), Slice::new(Some(1), Some(4), 1)]);
        empty_result(&s, &again, &[0, 3], DType::I64, "slice of empty");
    }
}

#[test]
fn reshape_transpose_and_broadcasting() {
    let s = session();
    let e = tensor::zeros(&[0, 3], DType::F64);
    // e.reshape(-1).shape == (0,); e.reshape(3, 0).shape == (3, 0); e.T.shape == (3, 0)
    empty_result(&s, &e.reshape(&[-1]), &[0], DType::F64, "reshape(-1)");
    empty_result(
        &s,
        &e.reshape(&[3, 0]),
        &[3, 0],
        DType::F64,
        "reshape(3, 0)",
    );
    empty_result(&s, &e.transpose(), &[3, 0], DType::F64, "transpose");
    // np.zeros(0).reshape(5, -1).shape == (5, 0)
    let v = tensor::arange(0, 0, 1);
    empty_result(
        &s,
        &v.reshape(&[5, -1]),
        &[5, 0],
        DType::I64,
        "reshape(5, -1)",
    );
    // np.zeros(0).reshape(0, -1) raises: -1 is ambiguous next to a zero extent.
    expect_carried_error(
        &s,
        "reshape(0, -1)",
        &v.reshape(&[0, -1]),
        |e| matches!(e, Error::Shape(_)),
        &["ambiguous"],
    );
    // np.arange(6).reshape(0, 6) raises: 6 elements do not fill (0, 6).
    expect_carried_error(
        &s,
        "reshape 6 elements to (0, 6)",
        &tensor::arange(0, 6, 1).reshape(&[0, 6]),
        |e| matches!(e, Error::Shape(_)),
        &["[0, 6]"],
    );
    // np.broadcast_to(np.ones((1, 3)), (0, 3)).shape == (0, 3)
    let row = tensor::ones(&[1, 3], DType::I32);
    empty_result(
        &s,
        &row.broadcast_to(&[0, 3]),
        &[0, 3],
        DType::I32,
        "broadcast_to",
    );
    // np.ones((0, 1)) + np.ones((1, 4)) has shape (0, 4); float + int promotes to float.
    let sum = &tensor::ones(&[0, 1], DType::F64) + &tensor::ones(&[1, 4], DType::I64);
    empty_result(&s, &sum, &[0, 4], DType::F64, "(0,1) + (1,4)");
    // np.ones(0) + np.ones(3) raises: 0 does not broadcast against 3.
    expect_carried_error(
        &s,
        "(0,) + (3,)",
        &(&tensor::ones(&[0], DType::F64) + &tensor::ones(&[3], DType::F64)),
        |e| matches!(e, Error::Shape(_)),
        &["[0]", "[3]"],
    );
    expect_carried_error(
        &s,
        "broadcast_to (3,) -> (0,)",
        &tensor::ones(&[3], DType::F64).broadcast_to(&[0]),
        |e| matches!(e, Error::Shape(_)),
        &[],
    );
}

#[test]
fn elementwise_on_empties_keeps_numpy_dtypes() {
    let s = session();
    let i = tensor::arange(3, 3, 1);
    // (np.arange(3, 3) + 1.5).dtype == float64; np.sqrt of int64 gives float64;
    // comparisons give bool; where broadcasts to the empty shape.
    empty_result(&s, &(&i + 1.5f64), &[0], DType::F64, "int + float");
    empty_result(&s, &i.sqrt(), &[0], DType::F64, "sqrt");
    empty_result(&s, &i.lt(2i64), &[0], DType::Bool, "lt");
    empty_result(&s, &i.astype(DType::F32), &[0], DType::F32, "astype");
    let w = tensor::where_(&i.gt(0i64), &i, tensor::ones(&[1], DType::F64));
    empty_result(&s, &w, &[0], DType::F64, "where");
    empty_result(&s, &(&i % 2i64), &[0], DType::I64, "remainder");
}

#[test]
fn concatenation_with_empty_pieces() {
    let s = session();
    for c in [1, 2, 5] {
        let a = tensor::arange(0, 3, 1).rechunk(&[c]);
        let b = tensor::arange(10, 12, 1).rechunk(&[c]);
        let none_i = tensor::arange(0, 0, 1);
        // np.concatenate([a, [], b]) == [0, 1, 2, 10, 11]
        let joined = tensor::concatenate(&[&a, &none_i, &b], 0);
        assert_eq!(i64s(&run(&s, &joined)), vec![0, 1, 2, 10, 11], "chunks {c}");
        // An empty float piece promotes the result to float64, as in NumPy.
        let none_f = tensor::zeros(&[0], DType::F64);
        let promoted = tensor::concatenate(&[&none_f, &a], 0);
        assert_eq!(f64s(&run(&s, &promoted)), vec![0.0, 1.0, 2.0], "chunks {c}");
        // Only empty pieces: empty.
        let nothing = tensor::concatenate(&[&none_i, &none_i], 0);
        empty_result(&s, &nothing, &[0], DType::I64, "all empty");
        // 2-D: (2, 0) and (2, 3) along axis 1 give the (2, 3) piece; (0, 3) and (2, 3)
        // along axis 0 too; (2, 0) and (3, 0) along axis 0 give (5, 0).
        let m = tensor::arange(0, 6, 1)
            .reshape(&[2, 3])
            .rechunk(&[1, c.min(3)]);
        let cols = tensor::concatenate(&[&tensor::zeros(&[2, 0], DType::I64), &m], 1);
        assert_eq!(i64s(&run(&s, &cols)), vec![0, 1, 2, 3, 4, 5]);
        let rows = tensor::concatenate(&[&m, &tensor::zeros(&[0, 3], DType::I64)], 0);
        assert_eq!(i64s(&run(&s, &rows)), vec![0, 1, 2, 3, 4, 5]);
        let tall = tensor::concatenate(
            &[
                &tensor::zeros(&[2, 0], DType::I64),
                &tensor::zeros(&[3, 0], DType::I64),
            ],
            0,
        );
        empty_result(&s, &tall, &[5, 0], DType::I64, "(2,0) ++ (3,0)");
    }
    // Other extents must still match: np.concatenate([np.zeros((0, 3)), np.zeros((0, 2))])
    // raises.
    expect_carried_error(
        &s,
        "(0,3) ++ (0,2)",
        &tensor::concatenate(
            &[
                &tensor::zeros(&[0, 3], DType::F64),
                &tensor::zeros(&[0, 2], DType::F64),
            ],
            0,
        ),
        |e| matches!(e, Error::Shape(_)),
        &[],
    );
}

#[test]
fn reductions_of_nothing_follow_numpy() {
    let s = session();
    for shape in [vec![0], vec![3, 0], vec![0, 5]] {
        for dtype in [DType::I64, DType::F64] {
            let e = tensor::zeros(&shape, dtype);
            let what = format!("{shape:?} {dtype}");
            // np.sum(e) == 0 (of the accumulating dtype); np.prod(e) == 1
            let sum = run(&s, &e.sum());
            assert_eq!(sum.dtype(), dtype, "{what}: sum dtype");
            assert_eq!(item_f64(&sum), 0.0, "{what}: sum");
            assert_eq!(item_f64(&run(&s, &e.prod())), 1.0, "{what}: prod");
            // np.any(e) is False, np.all(e) is True, np.count_nonzero(e) == 0
            assert_eq!(item(&run(&s, &e.any())), tessera::Scalar::Bool(false));
            assert_eq!(item(&run(&s, &e.all())), tessera::Scalar::Bool(true));
            assert_eq!(item_f64(&run(&s, &e.count_nonzero())), 0.0);
            // np.mean / np.var / np.std of nothing are nan (float64 for integers).
            for (name, t) in [("mean", e.mean()), ("var", e.var(0)), ("std", e.std(1))] {
                let h = run(&s, &t);
                assert_eq!(h.dtype(), DType::F64, "{what}: {name} dtype");
                assert!(item_f64(&h).is_nan(), "{what}: {name} of nothing");
            }
            // NaN-skipping: np.nansum(e) == 0, np.nanmean(e) is nan, np.nanmax(e) raises.
            assert_eq!(item_f64(&run(&s, &e.nansum())), 0.0, "{what}: nansum");
            assert!(item_f64(&run(&s, &e.nanmean())).is_nan(), "{what}");
            // np.min / max / argmin / argmax of nothing raise ValueError.
            for (name, t) in [
                ("min", e.min()),
                ("max", e.max()),
                ("argmin", e.argmin()),
                ("argmax", e.argmax()),
            ] {
                expect_carried_error(&s, &what, &t, is_empty_reduction(name), &[name]);
            }
            expect_carried_error(&s, &what, &e.nanmax(), is_empty_reduction("max"), &[]);
        }
    }
    // After all those errors the session still computes.
    assert_eq!(item_f64(&run(&s, &tensor::arange(0, 5, 1).sum())), 10.0);
}

#[test]
fn reductions_along_axes_of_empty_tensors() {
    let s = session();
    let e = tensor::zeros(&[0, 3], DType::F64);
    // e.sum(axis=0) == [0, 0, 0]; e.prod(axis=0) == [1, 1, 1]; e.mean(axis=0) is [nan] * 3
    assert_eq!(f64s(&run(&s, &e.sum_axis(0))), vec![0.0; 3]);
    assert_eq!(f64s(&run(&s, &e.prod_axis(0))), vec![1.0; 3]);
    assert!(f64s(&run(&s, &e.mean_axis(0))).iter().all(|v| v.is_nan()));
    // e.sum(axis=1).shape == (0,); e.argmax(axis=1).shape == (0,) (no error, as NumPy)
    empty_result(&s, &e.sum_axis(1), &[0], DType::F64, "sum axis 1");
    empty_result(&s, &e.argmax_axis(1), &[0], DType::I64, "argmax axis 1");
    // e.argmax(axis=0) raises.
    expect_carried_error(
        &s,
        "argmax over the empty axis",
        &e.argmax_axis(0),
        is_empty_reduction("argmax"),
        &[],
    );
    // np.ones((3, 0), bool).all(axis=1) == [True] * 3; .any(axis=1) == [False] * 3
    let b = tensor::ones(&[3, 0], DType::Bool);
    assert_eq!(bools(&run(&s, &b.all_axis(1))), vec![true; 3]);
    assert_eq!(bools(&run(&s, &b.any_axis(1))), vec![false; 3]);
    assert_eq!(i64s(&run(&s, &b.count_nonzero_axis(1))), vec![0; 3]);
    // keepdims: e.sum(axis=0, keepdims=True).shape == (1, 3)
    let k = run(&s, &e.reduce(tessera::ReduceOp::Sum, Some(&[0]), true));
    assert_eq!(k.shape(), &[1, 3]);
    assert_eq!(f64s(&k), vec![0.0; 3]);
    // e.sum(axis=(0, 1)) == 0.0
    let both = run(&s, &e.reduce(tessera::ReduceOp::Sum, Some(&[0, 1]), false));
    assert_eq!(both.shape(), &[] as &[usize]);
    assert_eq!(item_f64(&both), 0.0);
}

#[test]
fn matrix_products_and_factorizations_of_empties() {
    let s = session();
    // np.ones((3, 0)) @ np.ones((0, 4)) == np.zeros((3, 4))
    let p = tensor::ones(&[3, 0], DType::F64).matmul(&tensor::ones(&[0, 4], DType::F64));
    let h = run(&s, &p);
    assert_eq!(h.shape(), &[3, 4]);
    assert_eq!(f64s(&h), vec![0.0; 12]);
    // (0, 3) @ (3, 2) has shape (0, 2); np.zeros(0) @ np.zeros(0) == 0.0
    let q = tensor::ones(&[0, 3], DType::F64).matmul(&tensor::ones(&[3, 2], DType::F64));
    empty_result(&s, &q, &[0, 2], DType::F64, "(0,3) @ (3,2)");
    let v = tensor::zeros(&[0], DType::F64);
    assert_eq!(item_f64(&run(&s, &v.matmul(&v))), 0.0);
    // np.linalg.qr(np.zeros((5, 0))) gives Q (5, 0) and R (0, 0).
    let (qq, rr) = linalg::qr(&tensor::zeros(&[5, 0], DType::F64));
    empty_result(&s, &qq, &[5, 0], DType::F64, "Q");
    empty_result(&s, &rr, &[0, 0], DType::F64, "R");
}

#[test]
fn the_reference_executor_and_eager_mode_agree() {
    let e = tensor::arange(0, 12, 1)
        .reshape(&[3, 4])
        .slice(&[Slice::all(), Slice::new(Some(2), Some(2), 1)]);
    let h = reference::execute_sequential(&e, 64).expect("reference run");
    assert_empty(&h, &[3, 0], DType::I64, "reference");
    let sums = reference::execute_sequential(&e.sum_axis(1), 64).expect("reference sum");
    assert_eq!(i64s(&sums), vec![0; 3]);

    let _guard = exclusive();
    let s = builder().eager(true).build().expect("eager session");
    let x = tensor::zeros(&[2, 0], DType::F32);
    assert_empty(&run(&s, &x.sqrt()), &[2, 0], DType::F32, "eager");
    assert_eq!(f32s(&run(&s, &x.sum_axis(1))), vec![0.0f32; 2]);
    s.shutdown().expect("shutdown");
}
