//! Elementwise arithmetic, math functions, comparisons, logic, `where_` and `astype`, with
//! broadcasting and NumPy's type promotion, against plain Rust loops.

use crate::common::*;
use tessera::{tensor, DType, Error, Scalar, Tensor};

/// Deterministic, irregular test values in roughly [-4, 4] (no zeros).
fn vals(n: usize, salt: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let h = (i
                .wrapping_mul(2654435761)
                .wrapping_add(salt.wrapping_mul(40503)))
                % 1000;
            (h as f64 - 499.5) / 125.0
        })
        .collect()
}

fn t(a: &Arr) -> Tensor {
    tensor::from_slice(&a.data, &a.shape)
}

#[test]
fn arithmetic_broadcasts_like_numpy() {
    let s = session();
    let a31 = Arr::new(&[3, 1], vals(3, 1));
    let b14 = Arr::new(&[1, 4], vals(4, 2));
    let c4 = Arr::new(&[4], vals(4, 3));
    let d34 = Arr::new(&[3, 4], vals(12, 4));
    type F = fn(f64, f64) -> f64;
    let ops: [(&str, F); 4] = [
        ("+", |x, y| x + y),
        ("-", |x, y| x - y),
        ("*", |x, y| x * y),
        ("/", |x, y| x / y),
    ];
    let pairs = [
        (&a31, &b14),
        (&c4, &d34),
        (&d34, &c4),
        (&d34, &a31),
        (&b14, &d34),
    ];
    for (name, f) in ops {
        for (x, y) in pairs {
            let want = x.zip(y, f);
            let (tx, ty) = (t(x), t(y));
            let got = match name {
                "+" => &tx + &ty,
                "-" => &tx - &ty,
                "*" => &tx * &ty,
                _ => &tx / &ty,
            };
            assert_eq!(got.shape().unwrap(), want.shape);
            // Exactly rounded IEEE operations: bitwise equal to the reference.
            assert_exact(&run(&s, &got), &want, DType::F64);
            // Differently chunked operands.
            let tx = tx.rechunk(&vec![1; x.shape.len()]);
            let ty = ty.rechunk(&y.shape.iter().map(|&n| n.div_ceil(2)).collect::<Vec<_>>());
            let got = match name {
                "+" => tx.add(&ty),
                "-" => tx.sub(&ty),
                "*" => tx.mul(&ty),
                _ => tx.div(&ty),
            };
            assert_exact(&run(&s, &got), &want, DType::F64);
        }
    }
}

#[test]
fn scalars_on_either_side() {
    let s = session();
    let x = Arr::new(&[2, 5], vals(10, 9));
    let tx = t(&x).rechunk(&[1, 3]);
    let cases: Vec<(Tensor, Arr)> = vec![
        (2.0 * &tx, x.map(|v| 2.0 * v)),
        (&tx * 2.0, x.map(|v| v * 2.0)),
        (1.0 - &tx, x.map(|v| 1.0 - v)),
        (&tx - 1.0, x.map(|v| v - 1.0)),
        (10.0 / &tx, x.map(|v| 10.0 / v)),
        (&tx / 4.0, x.map(|v| v / 4.0)),
        (0.5 + &tx, x.map(|v| 0.5 + v)),
        (3i64 * &tx, x.map(|v| 3.0 * v)),
        (tx.add(1.25f64), x.map(|v| v + 1.25)),
        (-&tx, x.map(|v| -v)),
    ];
    for (got, want) in cases {
        assert_exact(&run(&s, &got), &want, DType::F64);
    }
}

#[test]
fn integer_arithmetic_wraps_like_numpy() {
    let s = session();
    let a = tensor::from_vec(vec![i32::MAX, i32::MIN, 5, -7], &[4]);
    assert_eq!(
        i32s(&run(&s, &(&a + 1i64))),
        vec![i32::MIN, i32::MIN + 1, 6, -6]
    );
    assert_eq!(
        i32s(&run(&s, &(&a - 1i64))),
        vec![i32::MAX - 1, i32::MAX, 4, -8]
    );
    assert_eq!(i32s(&run(&s, &(&a * 2i64))), vec![-2, 0, 10, -14]);
    assert_eq!(
        i32s(&run(&s, &a.neg())),
        vec![i32::MIN + 1, i32::MIN, -5, 7]
    );
    assert_eq!(i32s(&run(&s, &a.abs())), vec![i32::MAX, i32::MIN, 5, 7]);
    let b = tensor::from_vec(vec![i64::MAX, 3, -4], &[3]);
    assert_eq!(i64s(&run(&s, &(&b + &b))), vec![-2, 6, -8]);
    assert_eq!(i64s(&run(&s, &(&b * &b))), vec![1, 9, 16]);
}

#[test]
fn integer_and_float_powers() {
    let s = session();
    let base = tensor::arange(-3, 5, 1).rechunk(&[3]);
    let h = run(&s, &base.pow(3i64));
    assert_eq!(i64s(&h), (-3i64..5).map(|v| v.pow(3)).collect::<Vec<_>>());
    let exps = tensor::from_vec(vec![0i64, 1, 2, 3, 4, 5, 6, 7], &[8]);
    assert_eq!(
        i64s(&run(&s, &tensor::full(&[8], 2i64).pow(&exps))),
        (0..8).map(|e| 2i64.pow(e)).collect::<Vec<_>>()
    );
    assert_eq!(
        u8s(&run(&s, &tensor::full(&[2], 2u8).pow(9i64))),
        vec![0, 0],
        "2**9 wraps to 0 in uint8"
    );

    let x = Arr::new(&[3, 4], vals(12, 5).iter().map(|v| v.abs() + 0.1).collect());
    let y = Arr::new(&[4], vec![0.5, -1.0, 2.0, 3.7]);
    let want = x.zip(&y, f64::powf);
    assert_close(&run(&s, &t(&x).pow(t(&y))), &want, DType::F64, 1e-14, 0.0);
    assert_close(
        &run(&s, &t(&x).pow(2.0f64)),
        &x.map(|v| v.powf(2.0)),
        DType::F64,
        1e-15,
        0.0,
    );
    // An integer tensor to a float power is float64.
    let h = run(&s, &tensor::arange(1, 5, 1).pow(0.5f64));
    assert_close(
        &h,
        &Arr::new(&[4], (1..5).map(|v| (v as f64).sqrt()).collect()),
        DType::F64,
        1e-15,
        0.0,
    );
}

#[test]
fn math_functions_match_std() {
    let s = session();
    let x = Arr::new(&[4, 25], vals(100, 11));
    let pos = x.map(|v| v.abs() + 1e-3);
    let tx = t(&x).rechunk(&[3, 7]);
    let tp = t(&pos).rechunk(&[3, 7]);
    assert_exact(&run(&s, &tx.neg()), &x.map(|v| -v), DType::F64);
    assert_exact(&run(&s, &tx.abs()), &x.map(f64::abs), DType::F64);
    assert_close(
        &run(&s, &tp.sqrt()),
        &pos.map(f64::sqrt),
        DType::F64,
        1e-15,
        0.0,
    );
    assert_close(
        &run(&s, &tx.exp()),
        &x.map(f64::exp),
        DType::F64,
        1e-14,
        0.0,
    );
    assert_close(
        &run(&s, &tp.log()),
        &pos.map(f64::ln),
        DType::F64,
        1e-14,
        1e-15,
    );
    assert_close(
        &run(&s, &tx.sin()),
        &x.map(f64::sin),
        DType::F64,
        1e-14,
        1e-15,
    );
    assert_close(
        &run(&s, &tx.cos()),
        &x.map(f64::cos),
        DType::F64,
        1e-14,
        1e-15,
    );
    // Wider arguments for sin/cos.
    let w = Arr::new(
        &[1000],
        (0..1000).map(|i| (i as f64 - 500.0) * 0.731).collect(),
    );
    assert_close(
        &run(&s, &t(&w).sin()),
        &w.map(f64::sin),
        DType::F64,
        1e-13,
        1e-14,
    );
    assert_close(
        &run(&s, &t(&w).cos()),
        &w.map(f64::cos),
        DType::F64,
        1e-13,
        1e-14,
    );
    // Special values.
    let sp = tensor::from_vec(vec![0.0f64, -1.0, f64::INFINITY, f64::NAN], &[4]);
    let h = f64s(&run(&s, &sp.sqrt()));
    assert_eq!(&h[..1], &[0.0]);
    assert!(h[1].is_nan() && h[2] == f64::INFINITY && h[3].is_nan());
    let h = f64s(&run(&s, &sp.log()));
    assert!(h[0] == f64::NEG_INFINITY && h[1].is_nan() && h[2] == f64::INFINITY && h[3].is_nan());
    let h = f64s(&run(&s, &sp.exp()));
    assert!(
        h[0] == 1.0
            && (h[1] - (-1f64).exp()).abs() < 1e-16
            && h[2] == f64::INFINITY
            && h[3].is_nan()
    );
}

#[test]
fn float32_math_stays_float32() {
    let s = session();
    let v: Vec<f32> = vals(50, 21).iter().map(|&x| x as f32).collect();
    let x = tensor::from_slice(&v, &[50]).rechunk(&[16]);
    let check = |got: &tessera::HostTensor, f: &dyn Fn(f32) -> f32, tol: f32| {
        assert_eq!(got.dtype(), DType::F32);
        for (i, (&g, &x)) in f32s(got).iter().zip(&v).enumerate() {
            let w = f(x);
            assert!(
                (g - w).abs() <= tol * w.abs().max(1.0),
                "element {i}: f({x}) = {g}, std gives {w}"
            );
        }
    };
    check(&run(&s, &x.abs().sqrt()), &|x| x.abs().sqrt(), 1e-6);
    check(&run(&s, &x.exp()), &f32::exp, 1e-6);
    check(&run(&s, &x.sin()), &f32::sin, 1e-6);
    check(&run(&s, &x.cos()), &f32::cos, 1e-6);
    check(&run(&s, &(&x * 2.0)), &|x| x * 2.0, 0.0);
    check(&run(&s, &(&x + &x)), &|x| x + x, 0.0);
    check(&run(&s, &(&x / 3.0)), &|x| x / 3.0, 0.0);
}

#[test]
fn comparisons_give_bool_with_broadcasting() {
    let s = session();
    let a = Arr::new(
        &[3, 4],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 2.0, 2.0, 0.0, -1.0, 4.0, 3.0],
    );
    let b = Arr::new(&[4], vec![2.0, 2.0, 4.0, 3.0]);
    let (ta, tb) = (t(&a).rechunk(&[2, 3]), t(&b));
    type C = fn(f64, f64) -> f64;
    let b2f = |x: bool| f64::from(u8::from(x));
    let cases: Vec<(Tensor, C)> = vec![
        (ta.eq(&tb), |x, y| f64::from(u8::from(x == y))),
        (ta.ne(&tb), |x, y| f64::from(u8::from(x != y))),
        (ta.lt(&tb), |x, y| f64::from(u8::from(x < y))),
        (ta.le(&tb), |x, y| f64::from(u8::from(x <= y))),
        (ta.gt(&tb), |x, y| f64::from(u8::from(x > y))),
        (ta.ge(&tb), |x, y| f64::from(u8::from(x >= y))),
    ];
    for (got, f) in cases {
        assert_exact(&run(&s, &got), &a.zip(&b, f), DType::Bool);
    }
    assert_exact(
        &run(&s, &ta.lt(2.5f64)),
        &a.map(|v| b2f(v < 2.5)),
        DType::Bool,
    );
    assert_exact(
        &run(&s, &ta.ge(2i64)),
        &a.map(|v| b2f(v >= 2.0)),
        DType::Bool,
    );
    // Integer comparisons, mixed dtypes promote first.
    let i = tensor::from_vec(vec![1i32, 5, -3, 7], &[4]);
    let u = tensor::from_vec(vec![1u8, 200, 0, 6], &[4]);
    assert_eq!(bools(&run(&s, &i.lt(&u))), vec![false, true, true, false]);
    assert_eq!(bools(&run(&s, &i.eq(&u))), vec![true, false, false, false]);
    // NaN compares false except !=.
    let n = tensor::from_vec(vec![f64::NAN, 1.0], &[2]);
    assert_eq!(bools(&run(&s, &n.eq(&n))), vec![false, true]);
    assert_eq!(bools(&run(&s, &n.ne(&n))), vec![true, false]);
    assert_eq!(bools(&run(&s, &n.lt(2.0f64))), vec![false, true]);
}

#[test]
fn logical_operations() {
    let s = session();
    let p = vec![true, true, false, false, true, false];
    let q = vec![true, false, true, false];
    let tp = tensor::from_slice(&p, &[6, 1]);
    let tq = tensor::from_slice(&q, &[1, 4]);
    let and = run(&s, &(&tp & &tq));
    let or = run(&s, &tp.logical_or(&tq).rechunk(&[4, 3]));
    assert_eq!(and.shape(), &[6, 4]);
    let mut want_and = Vec::new();
    let mut want_or = Vec::new();
    for &x in &p {
        for &y in &q {
            want_and.push(x && y);
            want_or.push(x || y);
        }
    }
    assert_eq!(bools(&and), want_and);
    assert_eq!(bools(&or), want_or);
    assert_eq!(bools(&run(&s, &tp.logical_and(&tq))), want_and);
    assert_eq!(bools(&run(&s, &(&tp | &tq))), want_or);
    assert_eq!(
        bools(&run(&s, &!&tp)),
        p.iter().map(|x| !x).collect::<Vec<_>>()
    );
    assert_eq!(bools(&run(&s, &tp.logical_not().logical_not())), p);
    // logical_not of numbers: true where zero.
    let x = tensor::from_vec(vec![0.0f64, -0.0, 1.5, f64::NAN], &[4]);
    assert_eq!(
        bools(&run(&s, &x.logical_not())),
        vec![true, true, false, false]
    );
    let i = tensor::from_vec(vec![0i64, 3, -1, 0], &[4]);
    assert_eq!(
        bools(&run(&s, &i.logical_not())),
        vec![true, false, false, true]
    );
    // A bool scalar on the right.
    assert_eq!(bools(&run(&s, &tp.logical_and(true))), p);
    assert_eq!(bools(&run(&s, &tp.logical_or(true))), vec![true; 6]);
}

#[test]
fn where_selects_and_promotes() {
    let s = session();
    let x = Arr::new(&[3, 4], vals(12, 31));
    let tx = t(&x).rechunk(&[2, 2]);
    let want = x.map(|v| if v > 0.0 { v } else { 0.0 });
    assert_exact(
        &run(&s, &tensor::where_(&tx.gt(0.0f64), &tx, 0.0f64)),
        &want,
        DType::F64,
    );
    // Broadcast condition (4,) against (3,4) and two tensors.
    let c = tensor::from_vec(vec![true, false, false, true], &[4]);
    let y = Arr::new(&[3, 1], vec![10.0, 20.0, 30.0]);
    let cond = Arr::new(&[4], vec![1.0, 0.0, 0.0, 1.0]);
    let want = Arr::from_fn(&[3, 4], |i| {
        if cond.get(&[i[1]]) != 0.0 {
            x.get(i)
        } else {
            y.get(&[i[0], 0])
        }
    });
    assert_exact(&run(&s, &tensor::where_(&c, &tx, t(&y))), &want, DType::F64);
    // Integer tensors with a float scalar give float64; an i32 with an i64 tensor gives i64.
    let i = tensor::from_vec(vec![1i32, -2, 3, -4], &[4]);
    let h = run(&s, &tensor::where_(&i.gt(0i64), &i, 0.5f64));
    assert_exact(&h, &Arr::new(&[4], vec![1.0, 0.5, 3.0, 0.5]), DType::F64);
    let l = tensor::from_vec(vec![100i64, 200, 300, 400], &[4]);
    let h = run(&s, &tensor::where_(&c, &i, &l));
    assert_eq!(i64s(&h), vec![1, 200, 300, -4]);
    // float32 with int32 branches promote to float64; a NaN condition is true.
    let h = run(
        &s,
        &tensor::where_(
            &tensor::from_vec(vec![f64::NAN, 0.0], &[2]),
            tensor::from_vec(vec![1.5f32, 2.5], &[2]),
            tensor::from_vec(vec![7i32, 8], &[2]),
        ),
    );
    assert_eq!(f64s(&h), vec![1.5, 8.0]);
    // A numeric condition: non-zero is true.
    let h = run(
        &s,
        &tensor::where_(&tensor::from_vec(vec![0i64, 2, 0, -1], &[4]), 1i64, 0i64),
    );
    assert_eq!(i64s(&h), vec![0, 1, 0, 1]);
}

#[test]
fn astype_truncates_wraps_and_tests_nonzero() {
    let s = session();
    let f = tensor::from_vec(vec![-2.7f64, -0.5, 0.0, 0.5, 2.7, 1e3], &[6]).rechunk(&[4]);
    assert_eq!(
        i64s(&run(&s, &f.astype(DType::I64))),
        vec![-2, 0, 0, 0, 2, 1000]
    );
    assert_eq!(
        i32s(&run(&s, &f.astype(DType::I32))),
        vec![-2, 0, 0, 0, 2, 1000]
    );
    assert_eq!(
        bools(&run(&s, &f.astype(DType::Bool))),
        vec![true, true, false, true, true, true]
    );
    assert_eq!(
        f32s(&run(&s, &f.astype(DType::F32))),
        vec![-2.7f32, -0.5, 0.0, 0.5, 2.7, 1e3]
    );
    let i = tensor::from_vec(vec![0i64, 1, -1, 255, 256, 300, -3], &[7]);
    assert_eq!(
        bools(&run(&s, &i.astype(DType::Bool))),
        vec![false, true, true, true, true, true, true]
    );
    assert_eq!(
        u8s(&run(&s, &i.astype(DType::U8))),
        vec![0, 1, 255, 255, 0, 44, 253]
    );
    assert_eq!(
        f64s(&run(&s, &i.astype(DType::F64))),
        vec![0.0, 1.0, -1.0, 255.0, 256.0, 300.0, -3.0]
    );
    let b = tensor::from_vec(vec![true, false, true], &[3]);
    assert_eq!(f64s(&run(&s, &b.astype(DType::F64))), vec![1.0, 0.0, 1.0]);
    assert_eq!(i32s(&run(&s, &b.astype(DType::I32))), vec![1, 0, 1]);
    assert_eq!(u8s(&run(&s, &b.astype(DType::U8))), vec![1, 0, 1]);
    let u = tensor::from_vec(vec![0u8, 200, 255], &[3]);
    assert_eq!(i32s(&run(&s, &u.astype(DType::I32))), vec![0, 200, 255]);
    assert_eq!(
        f32s(&run(&s, &u.astype(DType::F32))),
        vec![0.0, 200.0, 255.0]
    );
}

#[test]
fn numpy_type_promotion() {
    let s = session();
    let i32t = tensor::from_vec(vec![1i32, -2, 3], &[3]);
    let f32t = tensor::from_vec(vec![0.5f32, 0.25, -1.0], &[3]);
    let i64t = tensor::from_vec(vec![7i64, 8, -9], &[3]);
    let u8t = tensor::from_vec(vec![250u8, 255, 3], &[3]);
    let boolt = tensor::from_vec(vec![true, false, true], &[3]);
    let f64t = tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]);

    // int32 + float32 -> float64
    let r = &i32t + &f32t;
    assert_eq!(r.dtype().unwrap(), DType::F64);
    assert_exact(
        &run(&s, &r),
        &Arr::new(&[3], vec![1.5, -1.75, 2.0]),
        DType::F64,
    );
    // uint8 + 1 stays uint8 and wraps
    let r = &u8t + 1i64;
    assert_eq!(r.dtype().unwrap(), DType::U8);
    assert_eq!(u8s(&run(&s, &r)), vec![251, 0, 4]);
    assert_eq!(u8s(&run(&s, &(&u8t * 2i64))), vec![244, 254, 6]);
    assert_eq!(u8s(&run(&s, &(&u8t + &u8t))), vec![244, 254, 6]);
    assert_eq!(u8s(&run(&s, &(1i64 - &u8t))), vec![7, 2, 254]);
    // int64 / int64 -> float64
    let r = &i64t / &tensor::from_vec(vec![2i64, 3, 0], &[3]);
    assert_eq!(r.dtype().unwrap(), DType::F64);
    let h = f64s(&run(&s, &r));
    assert_eq!(h[0], 3.5);
    assert_eq!(h[1], 8.0 / 3.0);
    assert_eq!(h[2], f64::NEG_INFINITY);
    // 0 / 0 between integers is NaN, as in NumPy.
    let z = tensor::from_vec(vec![0i64, 1, -1], &[3]);
    let h = f64s(&run(&s, &(&z / &tensor::zeros(&[3], DType::I64))));
    assert!(h[0].is_nan() && h[1] == f64::INFINITY && h[2] == f64::NEG_INFINITY);
    // int32 / int32 -> float64 as well; float32 / float32 stays float32
    assert_eq!((&i32t / &i32t).dtype().unwrap(), DType::F64);
    assert_eq!((&f32t / &f32t).dtype().unwrap(), DType::F32);
    // bool + bool is not supported
    let r = &boolt + &boolt;
    match r.error() {
        Some(Error::UnsupportedDType {
            dtype: DType::Bool,
            op,
        }) => assert!(op.contains("add"), "op named: {op}"),
        other => panic!("bool + bool: expected UnsupportedDType, got {other:?}"),
    }
    assert!(matches!(r.execute(&s), Err(Error::UnsupportedDType { .. })));
    // sqrt of an integer -> float64
    let r = tensor::from_vec(vec![4i64, 9, 2], &[3]).sqrt();
    assert_eq!(r.dtype().unwrap(), DType::F64);
    assert_close(
        &run(&s, &r),
        &Arr::new(&[3], vec![2.0, 3.0, 2f64.sqrt()]),
        DType::F64,
        1e-16,
        0.0,
    );
    assert_eq!(
        tensor::from_vec(vec![4u8], &[1]).exp().dtype().unwrap(),
        DType::F64
    );
    // mixed integer widths
    assert_eq!((&i32t + &i64t).dtype().unwrap(), DType::I64);
    assert_eq!(i64s(&run(&s, &(&i32t + &i64t))), vec![8, 6, -6]);
    let r = &u8t + &i32t;
    assert_eq!(r.dtype().unwrap(), DType::I32);
    assert_eq!(i32s(&run(&s, &r)), vec![251, 253, 6]);
    // float scalars: f32 * 2.0 stays f32, int * 2.5 is f64
    assert_eq!((&f32t * 2.0).dtype().unwrap(), DType::F32);
    let r = &i64t * 2.5;
    assert_eq!(r.dtype().unwrap(), DType::F64);
    assert_eq!(f64s(&run(&s, &r)), vec![17.5, 20.0, -22.5]);
    // bool with numbers: takes the number's type
    let r = &boolt + &i32t;
    assert_eq!(r.dtype().unwrap(), DType::I32);
    assert_eq!(i32s(&run(&s, &r)), vec![2, -2, 4]);
    let r = &boolt * &f64t;
    assert_eq!(r.dtype().unwrap(), DType::F64);
    assert_eq!(f64s(&run(&s, &r)), vec![1.0, 0.0, 3.0]);
    let r = &boolt + 1i64;
    assert_eq!(r.dtype().unwrap(), DType::I64);
    assert_eq!(i64s(&run(&s, &r)), vec![2, 1, 2]);
    // f32 with f64 is f64; u8 with f32 is f32
    assert_eq!((&f32t + &f64t).dtype().unwrap(), DType::F64);
    assert_eq!((&u8t + &f32t).dtype().unwrap(), DType::F32);
    assert_eq!(f32s(&run(&s, &(&u8t + &f32t))), vec![250.5, 255.25, 2.0]);
    // bool negation is unsupported, like NumPy
    assert!(matches!(
        boolt.neg().error(),
        Some(Error::UnsupportedDType {
            dtype: DType::Bool,
            ..
        })
    ));
    // Comparisons of bools are fine.
    assert_eq!(bools(&run(&s, &boolt.eq(true))), vec![true, false, true]);
    let _ = Scalar::Bool(true);
}

#[test]
fn maximum_and_minimum_propagate_nan() {
    let s = session();
    let a = tensor::from_vec(vec![1.0f64, f64::NAN, 3.0, -1.0], &[4]);
    let b = tensor::from_vec(vec![2.0f64, 0.0, f64::NAN, -2.0], &[4]);
    let mx = f64s(&run(&s, &a.maximum(&b)));
    let mn = f64s(&run(&s, &a.minimum(&b)));
    assert_eq!(mx[0], 2.0);
    assert!(mx[1].is_nan() && mx[2].is_nan());
    assert_eq!(mx[3], -1.0);
    assert_eq!(mn[0], 1.0);
    assert!(mn[1].is_nan() && mn[2].is_nan());
    assert_eq!(mn[3], -2.0);
    assert_eq!(
        i64s(&run(&s, &tensor::arange(0, 6, 1).maximum(3i64))),
        vec![3, 3, 3, 3, 4, 5]
    );
}
