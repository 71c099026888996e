//! Creation functions: constants, ranges, linspace and host data, for every dtype.

use crate::common::*;
use tessera::{tensor, DType, Scalar};

#[test]
fn zeros_and_ones_for_every_dtype() {
    let s = session();
    let shape = [3, 5];
    for dtype in [
        DType::F64,
        DType::F32,
        DType::I64,
        DType::I32,
        DType::U8,
        DType::Bool,
    ] {
        for (t, v) in [
            (tensor::zeros(&shape, dtype), 0.0),
            (tensor::ones(&shape, dtype), 1.0),
        ] {
            assert_eq!(t.dtype().unwrap(), dtype);
            assert_eq!(t.shape().unwrap(), vec![3, 5]);
            let h = run(&s, &t.rechunk(&[2, 2]));
            assert_exact(&h, &Arr::new(&shape, vec![v; 15]), dtype);
        }
    }
    // Typed access matches the dtype.
    assert_eq!(
        bools(&run(&s, &tensor::ones(&[2], DType::Bool))),
        vec![true, true]
    );
    assert_eq!(u8s(&run(&s, &tensor::zeros(&[2], DType::U8))), vec![0u8, 0]);
}

#[test]
fn full_takes_the_dtype_of_its_value() {
    let s = session();
    let cases: Vec<(tessera::Tensor, DType, f64)> = vec![
        (tensor::full(&[2, 3], 2.5f64), DType::F64, 2.5),
        (tensor::full(&[2, 3], -1.5f32), DType::F32, -1.5),
        (tensor::full(&[2, 3], -7i64), DType::I64, -7.0),
        (tensor::full(&[2, 3], 123_456i32), DType::I32, 123_456.0),
        (tensor::full(&[2, 3], 255u8), DType::U8, 255.0),
        (tensor::full(&[2, 3], true), DType::Bool, 1.0),
    ];
    for (t, dtype, v) in cases {
        let h = run(&s, &t);
        assert_exact(&h, &Arr::new(&[2, 3], vec![v; 6]), dtype);
    }
    assert_eq!(
        i32s(&run(&s, &tensor::full(&[4], 9i32).rechunk(&[3]))),
        vec![9; 4]
    );
}

#[test]
fn zero_dimensional_tensors() {
    let s = session();
    let h = run(&s, &tensor::full(&[], 4.25f64));
    assert_eq!(h.shape(), &[] as &[usize]);
    assert_eq!(h.item(), Some(Scalar::F64(4.25)));
    let h = run(&s, &(tensor::full(&[], 3i64) * 2i64));
    assert_eq!(h.item(), Some(Scalar::I64(6)));
    // A full reduction is 0-d.
    let h = run(&s, &tensor::arange(1, 11, 1).sum());
    assert_eq!(h.shape(), &[] as &[usize]);
    assert_eq!(h.item(), Some(Scalar::I64(55)));
}

#[test]
fn arange_with_positive_and_negative_steps() {
    let s = session();
    let cases: [(i64, i64, i64); 6] = [
        (0, 10, 3),
        (10, 0, -3),
        (-5, 5, 1),
        (0, 1, 1),
        (7, -8, -5),
        (3, 100, 7),
    ];
    for (start, stop, step) in cases {
        let mut want = Vec::new();
        let mut v = start;
        while (step > 0 && v < stop) || (step < 0 && v > stop) {
            want.push(v);
            v += step;
        }
        let t = tensor::arange(start, stop, step);
        assert_eq!(t.dtype().unwrap(), DType::I64);
        assert_eq!(
            t.shape().unwrap(),
            vec![want.len()],
            "arange({start}, {stop}, {step})"
        );
        assert_eq!(i64s(&run(&s, &t)), want, "arange({start}, {stop}, {step})");
        assert_eq!(
            i64s(&run(&s, &t.rechunk(&[2]))),
            want,
            "arange({start}, {stop}, {step}) in chunks of 2"
        );
    }
}

#[test]
fn arange_f64_matches_start_plus_i_step() {
    let s = session();
    for (start, stop, step) in [
        (0.0f64, 1.0f64, 0.25f64),
        (1.0, 0.0, -0.3),
        (-2.0, 3.0, 0.7),
        (0.5, 100.0, 3.3),
    ] {
        let n = ((stop - start) / step).ceil() as usize;
        let want = Arr::new(&[n], (0..n).map(|i| start + i as f64 * step).collect());
        let h = run(&s, &tensor::arange_f64(start, stop, step).rechunk(&[3]));
        assert_close(&h, &want, DType::F64, 1e-15, 1e-15);
    }
    assert_eq!(
        f64s(&run(&s, &tensor::arange_f64(0.0, 1.0, 0.25))),
        vec![0.0, 0.25, 0.5, 0.75]
    );
}

#[test]
fn linspace_is_evenly_spaced_and_ends_exactly_at_stop() {
    let s = session();
    assert_eq!(
        f64s(&run(&s, &tensor::linspace(0.0, 1.0, 5))),
        vec![0.0, 0.25, 0.5, 0.75, 1.0]
    );
    assert_eq!(f64s(&run(&s, &tensor::linspace(2.0, 3.0, 1))), vec![2.0]);
    for (start, stop, num) in [
        (0.1, 0.7, 7),
        (0.0, 1.0, 1001),
        (-3.3, 17.9, 64),
        (5.0, -5.0, 11),
    ] {
        let step = (stop - start) / (num - 1) as f64;
        let want = Arr::new(&[num], (0..num).map(|i| start + i as f64 * step).collect());
        for chunk in [num, 7, 1] {
            let h = run(&s, &tensor::linspace(start, stop, num).rechunk(&[chunk]));
            assert_close(&h, &want, DType::F64, 1e-14, 1e-14);
            let v = f64s(&h);
            assert_eq!(
                v[0].to_bits(),
                start.to_bits(),
                "linspace starts exactly at start"
            );
            assert_eq!(
                v[num - 1].to_bits(),
                stop.to_bits(),
                "linspace({start}, {stop}, {num}) in chunks of {chunk} ends at {}",
                v[num - 1]
            );
        }
    }
    // A reshaped linspace keeps its exact end point.
    let h = run(
        &s,
        &tensor::linspace(0.1, 0.7, 12)
            .reshape(&[3, 4])
            .rechunk(&[2, 3]),
    );
    assert_eq!(h.shape(), &[3, 4]);
    assert_eq!(f64s(&h)[11], 0.7);
}

#[test]
fn from_vec_and_from_slice_round_trip_every_dtype() {
    let s = session();
    let f = vec![1.5f64, -2.0, 3.25, 0.0, 1e300, -1e-300];
    assert_eq!(f64s(&run(&s, &tensor::from_vec(f.clone(), &[2, 3]))), f);
    let f32v = vec![1.5f32, -2.0, 3.25, f32::MAX];
    assert_eq!(f32s(&run(&s, &tensor::from_slice(&f32v, &[4]))), f32v);
    let i = vec![i64::MIN, -1, 0, 1, i64::MAX, 42];
    assert_eq!(
        i64s(&run(
            &s,
            &tensor::from_vec(i.clone(), &[3, 2]).rechunk(&[2, 1])
        )),
        i
    );
    let i32v = vec![i32::MIN, -1, 0, i32::MAX];
    assert_eq!(
        i32s(&run(
            &s,
            &tensor::from_slice(&i32v, &[2, 2]).rechunk(&[1, 1])
        )),
        i32v
    );
    let u = vec![0u8, 1, 254, 255, 7];
    assert_eq!(
        u8s(&run(&s, &tensor::from_slice(&u, &[5]).rechunk(&[2]))),
        u
    );
    let b = vec![true, false, false, true, true, false];
    let h = run(
        &s,
        &tensor::from_vec(b.clone(), &[1, 2, 3]).rechunk(&[1, 1, 2]),
    );
    assert_eq!(h.shape(), &[1, 2, 3]);
    assert_eq!(h.dtype(), DType::Bool);
    assert_eq!(bools(&h), b);
    // get() by multi-index agrees with C order.
    let h = run(&s, &tensor::from_vec((0..24).collect(), &[2, 3, 4]));
    assert_eq!(h.get(&[1, 2, 3]), Some(Scalar::I32(23)));
    assert_eq!(h.get(&[1, 0, 2]), Some(Scalar::I32(14)));
}
