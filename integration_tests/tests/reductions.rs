//! Reductions over all axes and over each axis (negative axes too), keepdims, every dtype,
//! argmin/argmax ties and NaN, var/std against a two-pass reference.

use crate::common::*;
use tessera::{tensor, DType, ReduceOp, Scalar, Session, Tensor};

fn sum(g: &[f64]) -> f64 {
    g.iter().sum()
}
fn prod(g: &[f64]) -> f64 {
    g.iter().product()
}
fn mean(g: &[f64]) -> f64 {
    sum(g) / g.len() as f64
}
fn min(g: &[f64]) -> f64 {
    g.iter().copied().fold(f64::INFINITY, |a, v| {
        if v.is_nan() || a.is_nan() {
            f64::NAN
        } else {
            a.min(v)
        }
    })
}
fn max(g: &[f64]) -> f64 {
    g.iter().copied().fold(f64::NEG_INFINITY, |a, v| {
        if v.is_nan() || a.is_nan() {
            f64::NAN
        } else {
            a.max(v)
        }
    })
}
/// Two-pass variance: mean first, then the mean of squared deviations.
fn var(g: &[f64], ddof: u32) -> f64 {
    let m = mean(g);
    g.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (g.len() as f64 - f64::from(ddof))
}
fn all(g: &[f64]) -> f64 {
    f64::from(u8::from(g.iter().all(|&v| v != 0.0)))
}
fn any(g: &[f64]) -> f64 {
    f64::from(u8::from(g.iter().any(|&v| v != 0.0)))
}
fn count(g: &[f64]) -> f64 {
    g.iter().filter(|&&v| v != 0.0).count() as f64
}
/// First index of the minimum, or of the first NaN.
fn argmin(g: &[f64]) -> f64 {
    if let Some(i) = g.iter().position(|v| v.is_nan()) {
        return i as f64;
    }
    let mut best = 0;
    for (i, &v) in g.iter().enumerate() {
        if v < g[best] {
            best = i;
        }
    }
    best as f64
}
fn argmax(g: &[f64]) -> f64 {
    if let Some(i) = g.iter().position(|v| v.is_nan()) {
        return i as f64;
    }
    let mut best = 0;
    for (i, &v) in g.iter().enumerate() {
        if v > g[best] {
            best = i;
        }
    }
    best as f64
}

/// Every subset of axes to test for a tensor of `nd` dimensions, as given (possibly
/// negative) and normalized.
fn axis_sets(nd: usize) -> Vec<(Vec<isize>, Vec<usize>)> {
    let mut out = Vec::new();
    for d in 0..nd {
        out.push((vec![d as isize], vec![d]));
        out.push((vec![d as isize - nd as isize], vec![d]));
    }
    if nd >= 3 {
        out.push((vec![0, 2], vec![0, 2]));
        out.push((vec![-1, 0], vec![0, nd - 1]));
        out.push((vec![1, 2], vec![1, 2]));
    }
    if nd >= 2 {
        out.push(((0..nd as isize).collect(), (0..nd).collect()));
    }
    out
}

type RefFn = fn(&[f64]) -> f64;

/// Checks op over all axes and every axis set, with and without keepdims, on `x` cut into
/// the given chunkings.
#[allow(clippy::too_many_arguments)]
fn check_op(
    s: &Session,
    x: &Arr,
    tx: &Tensor,
    op: ReduceOp,
    dtype: DType,
    f: RefFn,
    rtol: f64,
    chunkings: &[Vec<usize>],
) {
    let nd = x.shape.len();
    for chunks in chunkings {
        let tx = tx.rechunk(chunks);
        // All axes.
        let want = Arr::new(&[], vec![f(&x.data)]);
        let got = run(s, &tx.reduce(op, None, false));
        assert_close(&got, &want, dtype, rtol, 1e-12);
        for keepdims in [false, true] {
            for (given, axes) in axis_sets(nd) {
                let want = x.reduce(&axes, keepdims, f);
                let got = run(s, &tx.reduce(op, Some(&given), keepdims));
                assert_eq!(
                    got.shape(),
                    &want.shape[..],
                    "{op:?} over {given:?} keepdims {keepdims}"
                );
                for (i, (g, w)) in got.to_f64_vec().into_iter().zip(&want.data).enumerate() {
                    assert!(
                        close(g, *w, rtol, 1e-12),
                        "{op:?} over {given:?} keepdims {keepdims} chunks {chunks:?}: element {i} got {g} expected {w}"
                    );
                }
                assert_eq!(got.dtype(), dtype, "{op:?} dtype");
            }
        }
        // keepdims over all axes keeps every axis as 1.
        let got = run(s, &tx.reduce(op, None, true));
        assert_eq!(got.shape(), &vec![1; nd][..]);
    }
}

fn sample3() -> Arr {
    // (3, 4, 5) with repeats and negative values, small enough for exact products.
    Arr::from_fn(&[3, 4, 5], |i| {
        ((i[0] * 7 + i[1] * 3 + i[2] * 5) % 9) as f64 - 4.0
    })
}

#[test]
fn float_reductions_over_every_axis() {
    let s = session();
    let x = sample3().map(|v| v * 0.5 + 0.125);
    let tx = tensor::from_slice(&x.data, &x.shape);
    let chunkings = [vec![3, 4, 5], vec![2, 3, 2], vec![1, 1, 1]];
    let f64_ops: [(ReduceOp, RefFn, f64); 12] = [
        (ReduceOp::Sum, sum, 1e-12),
        (ReduceOp::Mean, mean, 1e-12),
        (ReduceOp::Min, min, 0.0),
        (ReduceOp::Max, max, 0.0),
        (ReduceOp::Prod, prod, 1e-12),
        (ReduceOp::Var { ddof: 0 }, |g| var(g, 0), 1e-12),
        (ReduceOp::Var { ddof: 1 }, |g| var(g, 1), 1e-12),
        (ReduceOp::Std { ddof: 0 }, |g| var(g, 0).sqrt(), 1e-12),
        (ReduceOp::Std { ddof: 1 }, |g| var(g, 1).sqrt(), 1e-12),
        (ReduceOp::CountNonzero, count, 0.0),
        (ReduceOp::ArgMin, argmin, 0.0),
        (ReduceOp::ArgMax, argmax, 0.0),
    ];
    for (op, f, rtol) in f64_ops {
        let dtype = op.result_dtype(DType::F64);
        if matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
            check_argop(&s, &x, &tx, op, f, &chunkings);
        } else {
            check_op(&s, &x, &tx, op, dtype, f, rtol, &chunkings);
        }
    }
}

/// argmin/argmax take one axis or all of them: check both.
fn check_argop(
    s: &Session,
    x: &Arr,
    tx: &Tensor,
    op: ReduceOp,
    f: RefFn,
    chunkings: &[Vec<usize>],
) {
    let nd = x.shape.len();
    for chunks in chunkings {
        let tx = tx.rechunk(chunks);
        let got = run(s, &tx.reduce(op, None, false));
        assert_exact(&got, &Arr::new(&[], vec![f(&x.data)]), DType::I64);
        for d in 0..nd {
            for given in [d as isize, d as isize - nd as isize] {
                for keepdims in [false, true] {
                    let want = x.reduce(&[d], keepdims, f);
                    let got = run(s, &tx.reduce(op, Some(&[given]), keepdims));
                    assert_exact(&got, &want, DType::I64);
                }
            }
        }
    }
}

#[test]
fn integer_reductions_over_every_axis() {
    let s = session();
    let x = sample3();
    let chunkings = [vec![3, 4, 5], vec![2, 3, 2], vec![1, 2, 4]];
    let ti64 = tensor::from_vec(x.data.iter().map(|&v| v as i64).collect(), &x.shape);
    let ti32 = tensor::from_vec(x.data.iter().map(|&v| v as i32).collect(), &x.shape);
    for t in [&ti64, &ti32] {
        let dt = t.dtype().unwrap();
        check_op(&s, &x, t, ReduceOp::Sum, DType::I64, sum, 0.0, &chunkings);
        check_op(&s, &x, t, ReduceOp::Prod, DType::I64, prod, 0.0, &chunkings);
        check_op(&s, &x, t, ReduceOp::Min, dt, min, 0.0, &chunkings);
        check_op(&s, &x, t, ReduceOp::Max, dt, max, 0.0, &chunkings);
        check_op(
            &s,
            &x,
            t,
            ReduceOp::Mean,
            DType::F64,
            mean,
            1e-12,
            &chunkings,
        );
        check_op(
            &s,
            &x,
            t,
            ReduceOp::Var { ddof: 1 },
            DType::F64,
            |g| var(g, 1),
            1e-12,
            &chunkings,
        );
        check_op(&s, &x, t, ReduceOp::All, DType::Bool, all, 0.0, &chunkings);
        check_op(&s, &x, t, ReduceOp::Any, DType::Bool, any, 0.0, &chunkings);
        check_op(
            &s,
            &x,
            t,
            ReduceOp::CountNonzero,
            DType::I64,
            count,
            0.0,
            &chunkings,
        );
        check_argop(&s, &x, t, ReduceOp::ArgMin, argmin, &chunkings);
        check_argop(&s, &x, t, ReduceOp::ArgMax, argmax, &chunkings);
    }
}

#[test]
fn uint8_and_bool_reductions() {
    let s = session();
    let u: Vec<u8> = (0..60u32).map(|i| ((i * 37 + 11) % 256) as u8).collect();
    let x = Arr::new(&[6, 10], u.iter().map(|&v| f64::from(v)).collect());
    let tu = tensor::from_slice(&u, &[6, 10]);
    let chunkings = [vec![6, 10], vec![4, 3]];
    // Sums of uint8 accumulate in uint64 (NumPy's and the array API's): no wrap-around.
    check_op(&s, &x, &tu, ReduceOp::Sum, DType::U64, sum, 0.0, &chunkings);
    check_op(&s, &x, &tu, ReduceOp::Min, DType::U8, min, 0.0, &chunkings);
    check_op(&s, &x, &tu, ReduceOp::Max, DType::U8, max, 0.0, &chunkings);
    check_op(
        &s,
        &x,
        &tu,
        ReduceOp::Mean,
        DType::F64,
        mean,
        1e-12,
        &chunkings,
    );
    check_op(
        &s,
        &x,
        &tu,
        ReduceOp::CountNonzero,
        DType::I64,
        count,
        0.0,
        &chunkings,
    );
    check_argop(&s, &x, &tu, ReduceOp::ArgMax, argmax, &chunkings);
    assert_eq!(
        item(&run(
            &s,
            &tensor::from_vec(vec![200u8, 100, 255], &[3]).sum()
        )),
        Scalar::U64(555)
    );

    let b: Vec<bool> = (0..60u32).map(|i| (i * 7) % 5 < 2).collect();
    let xb = Arr::new(
        &[6, 10],
        b.iter().map(|&v| f64::from(u8::from(v))).collect(),
    );
    let tb = tensor::from_slice(&b, &[6, 10]);
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::All,
        DType::Bool,
        all,
        0.0,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::Any,
        DType::Bool,
        any,
        0.0,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::CountNonzero,
        DType::I64,
        count,
        0.0,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::Sum,
        DType::I64,
        sum,
        0.0,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::Mean,
        DType::F64,
        mean,
        1e-12,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::Max,
        DType::Bool,
        max,
        0.0,
        &chunkings,
    );
    check_op(
        &s,
        &xb,
        &tb,
        ReduceOp::Min,
        DType::Bool,
        min,
        0.0,
        &chunkings,
    );
    check_argop(&s, &xb, &tb, ReduceOp::ArgMax, argmax, &chunkings);
    check_argop(&s, &xb, &tb, ReduceOp::ArgMin, argmin, &chunkings);
    // all/any edge cases
    assert_eq!(
        item(&run(&s, &tensor::ones(&[7], DType::Bool).all())),
        Scalar::Bool(true)
    );
    assert_eq!(
        item(&run(&s, &tensor::zeros(&[7], DType::Bool).any())),
        Scalar::Bool(false)
    );
    assert_eq!(
        item(&run(&s, &tensor::zeros(&[7], DType::F64).all())),
        Scalar::Bool(false)
    );
}

#[test]
fn float32_reductions() {
    let s = session();
    let v: Vec<f32> = (0..1000)
        .map(|i| ((i * 13 % 97) as f32) * 0.25 - 10.0)
        .collect();
    let x = Arr::new(&[10, 100], v.iter().map(|&a| f64::from(a)).collect());
    let t = tensor::from_slice(&v, &[10, 100]).rechunk(&[3, 33]);
    assert_close(
        &run(&s, &t.sum()),
        &Arr::new(&[], vec![sum(&x.data)]),
        DType::F32,
        1e-5,
        1e-3,
    );
    assert_close(
        &run(&s, &t.mean_axis(1)),
        &x.reduce(&[1], false, mean),
        DType::F32,
        1e-5,
        1e-5,
    );
    assert_close(
        &run(&s, &t.std_axis(0, 1)),
        &x.reduce(&[0], false, |g| var(g, 1).sqrt()),
        DType::F32,
        1e-5,
        1e-5,
    );
    assert_exact(
        &run(&s, &t.max_axis(0)),
        &x.reduce(&[0], false, max),
        DType::F32,
    );
    assert_exact(
        &run(&s, &t.argmin_axis(1)),
        &x.reduce(&[1], false, argmin),
        DType::I64,
    );
}

#[test]
fn argmin_argmax_take_the_first_of_ties() {
    let s = session();
    let v = vec![3i64, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 9];
    for chunk in [12, 5, 2, 1] {
        let t = tensor::from_slice(&v, &[12]).rechunk(&[chunk]);
        assert_eq!(
            item(&run(&s, &t.argmax())),
            Scalar::I64(5),
            "chunks of {chunk}"
        );
        assert_eq!(
            item(&run(&s, &t.argmin())),
            Scalar::I64(1),
            "chunks of {chunk}"
        );
        let t2 = tensor::from_slice(&v, &[3, 4]).rechunk(&[chunk.min(3), 2]);
        // Rows: [3 1 4 1] [5 9 2 6] [5 3 5 9]
        assert_eq!(i64s(&run(&s, &t2.argmax_axis(1))), vec![2, 1, 3]);
        assert_eq!(i64s(&run(&s, &t2.argmin_axis(-1))), vec![1, 2, 1]);
        // Columns: [3 5 5] [1 9 3] [4 2 5] [1 6 9]
        assert_eq!(i64s(&run(&s, &t2.argmax_axis(0))), vec![1, 1, 2, 2]);
        assert_eq!(i64s(&run(&s, &t2.argmin_axis(-2))), vec![0, 0, 1, 0]);
        assert_eq!(item(&run(&s, &t2.argmax())), Scalar::I64(5));
    }
    // All equal: index 0.
    assert_eq!(
        item(&run(&s, &tensor::full(&[9], 2.0f64).rechunk(&[2]).argmax())),
        Scalar::I64(0)
    );
    assert_eq!(
        item(&run(&s, &tensor::full(&[9], 2.0f64).rechunk(&[2]).argmin())),
        Scalar::I64(0)
    );
}

#[test]
fn nan_handling_in_reductions() {
    let s = session();
    let v = vec![5.0f64, 1.0, 7.0, f64::NAN, 2.0, f64::NAN, -3.0, 9.0];
    for chunk in [8, 3, 2, 1] {
        let t = tensor::from_slice(&v, &[8]).rechunk(&[chunk]);
        assert_eq!(
            item(&run(&s, &t.argmin())),
            Scalar::I64(3),
            "argmin, chunks of {chunk}"
        );
        assert_eq!(
            item(&run(&s, &t.argmax())),
            Scalar::I64(3),
            "argmax, chunks of {chunk}"
        );
        assert!(
            item_f64(&run(&s, &t.min())).is_nan(),
            "min propagates NaN, chunks of {chunk}"
        );
        assert!(
            item_f64(&run(&s, &t.max())).is_nan(),
            "max propagates NaN, chunks of {chunk}"
        );
        assert!(item_f64(&run(&s, &t.sum())).is_nan());
        assert!(item_f64(&run(&s, &t.mean())).is_nan());
        assert!(item_f64(&run(&s, &t.var(0))).is_nan());
        assert_eq!(
            item(&run(&s, &t.count_nonzero())),
            Scalar::I64(8),
            "NaN is non-zero"
        );
    }
    // Per axis: the NaN only in some rows.
    let m = vec![1.0, f64::NAN, 3.0, 4.0, 0.5, 6.0, f64::NAN, 2.0, f64::NAN];
    let t = tensor::from_slice(&m, &[3, 3]).rechunk(&[2, 2]);
    let x = Arr::new(&[3, 3], m);
    assert_exact(
        &run(&s, &t.argmax_axis(1)),
        &x.reduce(&[1], false, argmax),
        DType::I64,
    );
    assert_exact(
        &run(&s, &t.argmin_axis(0)),
        &x.reduce(&[0], false, argmin),
        DType::I64,
    );
    assert_exact(
        &run(&s, &t.min_axis(1)),
        &x.reduce(&[1], false, min),
        DType::F64,
    );
    assert_exact(
        &run(&s, &t.max_axis(0)),
        &x.reduce(&[0], false, max),
        DType::F64,
    );
    // Row 1 has no NaN: its minimum is 0.5 at column 1.
    assert_eq!(f64s(&run(&s, &t.min_axis(1)))[1], 0.5);
    assert_eq!(i64s(&run(&s, &t.argmin_axis(1))), vec![1, 1, 0]);
}

#[test]
fn var_and_std_against_two_pass_reference() {
    let s = session();
    // A large offset makes a one-pass sum-of-squares formula lose precision.
    let n = 10_000;
    let x = Arr::new(
        &[100, 100],
        (0..n)
            .map(|i| 1e6 + ((i * 7919) % 1000) as f64 * 1e-3)
            .collect(),
    );
    let t = tensor::from_slice(&x.data, &x.shape);
    for chunks in [vec![100, 100], vec![33, 17], vec![7, 100]] {
        let t = t.rechunk(&chunks);
        for ddof in [0, 1] {
            let want = var(&x.data, ddof);
            assert_close(
                &run(&s, &t.var(ddof)),
                &Arr::new(&[], vec![want]),
                DType::F64,
                1e-8,
                0.0,
            );
            assert_close(
                &run(&s, &t.std(ddof)),
                &Arr::new(&[], vec![want.sqrt()]),
                DType::F64,
                1e-8,
                0.0,
            );
            for axis in [0isize, 1, -1] {
                let a = if axis < 0 { 1 } else { axis as usize };
                assert_close(
                    &run(&s, &t.var_axis(axis, ddof)),
                    &x.reduce(&[a], false, |g| var(g, ddof)),
                    DType::F64,
                    1e-8,
                    0.0,
                );
                assert_close(
                    &run(&s, &t.std_axis(axis, ddof)),
                    &x.reduce(&[a], false, |g| var(g, ddof).sqrt()),
                    DType::F64,
                    1e-8,
                    0.0,
                );
            }
        }
    }
    // Tiny exact case: var([1,2,3,4]) = 1.25, ddof 1: 5/3.
    let t = tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]).rechunk(&[3]);
    assert_close(
        &run(&s, &t.var(0)),
        &Arr::new(&[], vec![1.25]),
        DType::F64,
        1e-15,
        0.0,
    );
    assert_close(
        &run(&s, &t.var(1)),
        &Arr::new(&[], vec![5.0 / 3.0]),
        DType::F64,
        1e-15,
        0.0,
    );
}

#[test]
fn named_reductions_agree_with_reduce() {
    let s = session();
    let x = sample3();
    let t = tensor::from_slice(&x.data, &x.shape).rechunk(&[2, 2, 2]);
    type Reference = fn(&[f64]) -> f64;
    let cases: [(Tensor, usize, Reference, DType); 7] = [
        (t.sum_axis(1), 1, sum, DType::F64),
        (t.prod_axis(-1), 2, prod, DType::F64),
        (t.min_axis(0), 0, min, DType::F64),
        (t.max_axis(2), 2, max, DType::F64),
        (t.all_axis(1), 1, all, DType::Bool),
        (t.any_axis(0), 0, any, DType::Bool),
        (t.count_nonzero_axis(2), 2, count, DType::I64),
    ];
    for (got, axis, reference, dtype) in cases {
        assert_exact(&run(&s, &got), &x.reduce(&[axis], false, reference), dtype);
    }
    assert_close(
        &run(&s, &t.mean_axis(-2)),
        &x.reduce(&[1], false, mean),
        DType::F64,
        1e-15,
        1e-15,
    );
    assert_eq!(item_f64(&run(&s, &t.sum())), sum(&x.data));
    assert_eq!(item_f64(&run(&s, &t.max())), 4.0);
    assert_eq!(item_f64(&run(&s, &t.min())), -4.0);
    let keep = run(&s, &t.reduce(ReduceOp::Sum, Some(&[0, -1]), true));
    assert_exact(&keep, &x.reduce(&[0, 2], true, sum), DType::F64);
    assert_eq!(keep.shape(), &[1, 4, 1]);
}

#[test]
fn large_sum_and_mean() {
    let s = session_with_chunks(8 * 4096);
    let n = 200_000;
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 2654435761usize) % 10007) as f64 / 10007.0)
        .collect();
    let t = tensor::from_slice(&v, &[n]).rechunk(&[4096]);
    let mut want = 0.0;
    let mut comp = 0.0; // Kahan
    for &x in &v {
        let y = x - comp;
        let t = want + y;
        comp = (t - want) - y;
        want = t;
    }
    assert_close(
        &run(&s, &t.sum()),
        &Arr::new(&[], vec![want]),
        DType::F64,
        1e-12,
        0.0,
    );
    assert_close(
        &run(&s, &t.mean()),
        &Arr::new(&[], vec![want / n as f64]),
        DType::F64,
        1e-12,
        0.0,
    );
    let ints = tensor::arange(0, n as i64, 1).rechunk(&[3000]);
    assert_eq!(
        item(&run(&s, &ints.sum())),
        Scalar::I64((n as i64 - 1) * n as i64 / 2)
    );
}

#[test]
fn reduction_edge_cases() {
    let s = session();
    // ddof equal to the count divides by zero: NaN, as in NumPy.
    assert!(item_f64(&run(&s, &tensor::from_vec(vec![5.0f64], &[1]).var(1))).is_nan());
    assert!(item_f64(&run(&s, &tensor::from_vec(vec![5.0f64, 6.0], &[2]).std(2))).is_nan());
    // All NaN: index 0.
    let nan = tensor::from_vec(vec![f64::NAN, f64::NAN, f64::NAN], &[3]).rechunk(&[2]);
    assert_eq!(item(&run(&s, &nan.argmax())), Scalar::I64(0));
    assert_eq!(item(&run(&s, &nan.argmin())), Scalar::I64(0));
    // int64 sums wrap around, across chunks too.
    let w = tensor::from_vec(vec![i64::MAX, 1, 5], &[3]).rechunk(&[1]);
    assert_eq!(item(&run(&s, &w.sum())), Scalar::I64(i64::MIN + 5));
    // Integer means are computed in float64 (no wrap-around).
    let big = tensor::from_vec(vec![i64::MAX, i64::MAX, i64::MAX], &[3]).rechunk(&[2]);
    assert_close(
        &run(&s, &big.mean()),
        &Arr::new(&[], vec![i64::MAX as f64]),
        DType::F64,
        1e-15,
        0.0,
    );
    // Reducing over no axis returns the values (with the reduction's dtype).
    let x = tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]);
    let h = run(&s, &x.reduce(ReduceOp::Sum, Some(&[]), false));
    assert_eq!(h.shape(), &[2, 3]);
    assert_eq!(i64s(&h), vec![1, 2, 3, 4, 5, 6]);
    // 0-d input reductions.
    let z = tensor::full(&[], 3i32);
    assert_eq!(item(&run(&s, &z.sum())), Scalar::I64(3));
    assert_eq!(item(&run(&s, &z.argmax())), Scalar::I64(0));
    assert_eq!(item(&run(&s, &z.max())), Scalar::I32(3));
    // Reductions of a broadcast view and of a reshape of it.
    let b = tensor::from_vec(vec![1i64, 2, 3], &[3, 1]).broadcast_to(&[3, 4]);
    assert_eq!(
        i64s(&run(&s, &b.reshape(&[4, 3]))),
        vec![1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    );
    assert_eq!(
        i64s(&run(&s, &b.reshape(&[4, 3]).sum_axis(0))),
        // [[1 1 1] [1 2 2] [2 2 3] [3 3 3]]
        vec![7, 8, 9]
    );
    assert_eq!(i64s(&run(&s, &b.sum_axis(1))), vec![4, 8, 12]);
}
