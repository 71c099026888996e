//! Slicing with steps, reshape, transpose/permute, broadcast_to, concatenate and rechunk,
//! and compositions of them, against index arithmetic on the reference array.

use crate::common::*;
use tessera::{tensor, DType, ReduceOp, Session, Slice, Tensor};

fn t(a: &Arr) -> Tensor {
    tensor::from_slice(&a.data, &a.shape)
}

type Sl = (Option<isize>, Option<isize>, isize);

fn to_slices(spec: &[Sl]) -> Vec<Slice> {
    spec.iter().map(|&(a, b, c)| Slice::new(a, b, c)).collect()
}

#[test]
fn slices_with_steps_and_negative_positions() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        slices_with_steps_and_negative_positions_on(&s);
    }
}

fn slices_with_steps_and_negative_positions_on(s: &Session) {
    let x = Arr::iota(&[5, 6]);
    let specs: Vec<Vec<Sl>> = vec![
        vec![(None, None, 2), (Some(1), Some(5), 1)],
        vec![(None, None, -1)],
        vec![(None, None, -2), (None, None, -1)],
        vec![(Some(-2), None, 1), (Some(-4), Some(-1), 1)],
        vec![(Some(4), Some(0), -1), (Some(5), Some(1), -3)],
        vec![(Some(1), Some(100), 3), (Some(-100), Some(3), 2)],
        vec![(Some(-1), Some(-6), -2), (Some(2), Some(3), 1)],
        vec![(Some(3), None, 1)],
        vec![],
    ];
    for spec in &specs {
        let want = x.slice(spec);
        for chunks in [vec![5, 6], vec![2, 4], vec![1, 1], vec![3, 5]] {
            let got = run(s, &t(&x).rechunk(&chunks).slice(&to_slices(spec)));
            assert_eq!(got.shape(), &want.shape[..], "slice {spec:?}");
            assert_exact(&got, &want, DType::F64);
        }
    }
    // Steps longer than the axis, and starts and stops far outside it.
    let a = tensor::arange(0, 5, 1);
    assert_eq!(
        i64s(&run(s, &a.slice(&[Slice::new(None, None, 100)]))),
        vec![0]
    );
    assert_eq!(
        i64s(&run(s, &a.slice(&[Slice::new(Some(100), Some(-100), -2)]))),
        vec![4, 2, 0]
    );
    assert_eq!(
        i64s(&run(s, &a.slice(&[Slice::new(Some(-100), Some(100), 2)]))),
        vec![0, 2, 4]
    );
    // The forms from the issue.
    let a = tensor::arange(0, 30, 1).reshape(&[5, 6]);
    let got = run(s, &a.slice(&[Slice::all().step(2), Slice::from(1..5)]));
    assert_eq!(got.shape(), &[3, 4]);
    assert_eq!(i64s(&got), vec![1, 2, 3, 4, 13, 14, 15, 16, 25, 26, 27, 28]);
    let got = run(s, &a.slice(&[Slice::from(-2..), Slice::from(..2)]));
    assert_eq!(i64s(&got), vec![18, 19, 24, 25]);
    let got = run(s, &a.slice(&[Slice::from(..), Slice::all().step(-5)]));
    assert_eq!(i64s(&got), vec![5, 0, 11, 6, 17, 12, 23, 18, 29, 24]);
}

#[test]
fn slices_of_slices_and_three_dimensions() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        slices_of_slices_and_three_dimensions_on(&s);
    }
}

fn slices_of_slices_and_three_dimensions_on(s: &Session) {
    let x = Arr::iota(&[4, 5, 6]);
    let first: Vec<Sl> = vec![(Some(1), None, 1), (None, None, -1), (Some(1), Some(6), 2)];
    let second: Vec<Sl> = vec![
        (None, None, -2),
        (Some(1), Some(4), 1),
        (Some(-1), None, -1),
    ];
    let want = x.slice(&first).slice(&second);
    for chunks in [vec![4, 5, 6], vec![2, 2, 2], vec![3, 1, 4]] {
        let got = run(
            s,
            &t(&x)
                .rechunk(&chunks)
                .slice(&to_slices(&first))
                .slice(&to_slices(&second)),
        );
        assert_exact(&got, &want, DType::F64);
    }
    // Single-element slices keep the axis with extent 1.
    let got = run(
        s,
        &t(&x).slice(&[Slice::from(2..3), Slice::from(4..5), Slice::from(5..6)]),
    );
    assert_eq!(got.shape(), &[1, 1, 1]);
    assert_eq!(item_f64(&got), x.get(&[2, 4, 5]));
}

#[test]
fn reshape_with_inferred_extent() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        reshape_with_inferred_extent_on(&s);
    }
}

fn reshape_with_inferred_extent_on(s: &Session) {
    let a = tensor::arange(0, 24, 1);
    for (shape, want) in [
        (vec![2isize, -1, 4], vec![2usize, 3, 4]),
        (vec![-1, 6], vec![4, 6]),
        (vec![24, -1], vec![24, 1]),
        (vec![1, 2, 3, 4], vec![1, 2, 3, 4]),
    ] {
        let r = a.reshape(&shape);
        assert_eq!(r.shape().unwrap(), want);
        let h = run(s, &r);
        assert_eq!(h.shape(), &want[..]);
        assert_eq!(i64s(&h), (0..24).collect::<Vec<_>>());
    }
    // Reshape of a computed tensor with chunks that do not line up with the new shape.
    let x = Arr::new(&[6, 4], (0..24).map(|v| (v * v) as f64).collect());
    let r = (t(&x).rechunk(&[4, 3]) + 1.0).reshape(&[4, -1]);
    let got = run(s, &r.rechunk(&[3, 5]));
    assert_exact(
        &got,
        &Arr::new(&[4, 6], x.data.iter().map(|v| v + 1.0).collect()),
        DType::F64,
    );
    let got = run(
        s,
        &t(&x).rechunk(&[5, 3]).reshape(&[2, 3, 4]).reshape(&[-1]),
    );
    assert_exact(&got, &Arr::new(&[24], x.data.clone()), DType::F64);
}

/// Reshapes that only add or drop axes of extent 1 (`x[:, None]`, a squeeze) are views:
/// the values as NumPy gives them under several chunkings, broadcast against a matrix, and
/// no reshape task in the job.
#[test]
fn unit_axis_reshapes_are_views_of_the_chunks() {
    let s = session();
    let x = Arr::new(&[6, 4], (0..24).map(|v| (v * 3 % 7) as f64).collect());
    for chunks in [vec![6, 4], vec![4, 3], vec![1, 1]] {
        let col = (t(&x).rechunk(&chunks) * 2.0).reduce(ReduceOp::Sum, Some(&[1]), false);
        let wide = col.reshape(&[6, 1]);
        let sums: Vec<f64> = (0..6)
            .map(|i| (0..4).map(|j| 2.0 * x.get(&[i, j])).sum())
            .collect();
        let (h, stats) = s.execute_with_stats(&(wide.clone() - t(&x))).unwrap();
        let want = Arr::from_fn(&[6, 4], |i| sums[i[0]] - x.get(i));
        assert_exact(&h, &want, DType::F64);
        assert_eq!(stats.chunks_by_op.get("reshape"), None, "chunks {chunks:?}");
        // Back again, and through extra unit axes.
        let back = wide.reshape(&[1, 6, 1]).reshape(&[-1]);
        assert_eq!(f64s(&run(&s, &back)), sums);
        let y = t(&x).rechunk(&chunks).reshape(&[6, 1, 4, 1]);
        assert_eq!(y.shape().unwrap(), vec![6, 1, 4, 1]);
        assert_exact(&run(&s, &y.reshape(&[6, 4])), &x, DType::F64);
    }
    s.shutdown().unwrap();
}

#[test]
fn transpose_and_permute() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        transpose_and_permute_on(&s);
    }
}

fn transpose_and_permute_on(s: &Session) {
    let x = Arr::iota(&[2, 3, 4]);
    for chunks in [vec![2, 3, 4], vec![1, 2, 3]] {
        let tx = t(&x).rechunk(&chunks);
        assert_exact(&run(s, &tx.transpose()), &x.permute(&[2, 1, 0]), DType::F64);
        assert_exact(
            &run(s, &tx.permute(&[1, 2, 0])),
            &x.permute(&[1, 2, 0]),
            DType::F64,
        );
        assert_exact(
            &run(s, &tx.permute(&[-1, 0, 1])),
            &x.permute(&[2, 0, 1]),
            DType::F64,
        );
        assert_exact(&run(s, &tx.permute(&[0, 1, 2])), &x, DType::F64);
        assert_exact(&run(s, &tx.transpose().transpose()), &x, DType::F64);
    }
    let m = tensor::arange(0, 12, 1).reshape(&[3, 4]);
    assert_eq!(
        i64s(&run(s, &m.transpose())),
        vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
    );
    // 1-d transpose is the identity.
    assert_eq!(
        i64s(&run(s, &tensor::arange(0, 3, 1).transpose())),
        vec![0, 1, 2]
    );
}

#[test]
fn reshape_of_a_transpose() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        reshape_of_a_transpose_on(&s);
    }
}

fn reshape_of_a_transpose_on(s: &Session) {
    let x = Arr::iota(&[3, 4]);
    let xt = x.permute(&[1, 0]);
    for chunks in [vec![3, 4], vec![2, 3], vec![1, 1]] {
        let got = run(s, &t(&x).rechunk(&chunks).transpose().reshape(&[2, 6]));
        assert_exact(&got, &Arr::new(&[2, 6], xt.data.clone()), DType::F64);
        let got = run(
            s,
            &tensor::arange(0, 12, 1)
                .reshape(&[3, 4])
                .rechunk(&chunks)
                .transpose()
                .reshape(&[-1]),
        );
        assert_eq!(i64s(&got), vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
    }
    let y = Arr::iota(&[2, 3, 4]);
    let want = y.permute(&[2, 0, 1]);
    let got = run(
        s,
        &t(&y)
            .rechunk(&[1, 2, 3])
            .permute(&[2, 0, 1])
            .reshape(&[4, 6])
            .transpose(),
    );
    assert_exact(
        &got,
        &Arr::new(&[4, 6], want.data).permute(&[1, 0]),
        DType::F64,
    );
}

#[test]
fn broadcast_to_shapes() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        broadcast_to_shapes_on(&s);
    }
}

fn broadcast_to_shapes_on(s: &Session) {
    let a = Arr::new(&[3, 1], vec![1.0, 2.0, 3.0]);
    let got = run(s, &t(&a).broadcast_to(&[2, 3, 4]).rechunk(&[1, 2, 3]));
    assert_exact(
        &got,
        &Arr::from_fn(&[2, 3, 4], |i| a.get(&[i[1], 0])),
        DType::F64,
    );
    let b = Arr::new(&[4], vec![1.0, -2.0, 3.5, 0.0]);
    let got = run(s, &t(&b).broadcast_to(&[3, 4]));
    assert_exact(&got, &Arr::from_fn(&[3, 4], |i| b.get(&[i[1]])), DType::F64);
    let got = run(s, &tensor::full(&[], 7i32).broadcast_to(&[2, 2]));
    assert_eq!(i32s(&got), vec![7; 4]);
    // A broadcast operand used in arithmetic and reductions.
    let got = run(s, &t(&b).broadcast_to(&[3, 4]).sum_axis(0));
    assert_exact(&got, &b.map(|v| 3.0 * v), DType::F64);
}

#[test]
fn concatenate_along_each_axis() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        concatenate_along_each_axis_on(&s);
    }
}

fn concatenate_along_each_axis_on(s: &Session) {
    let a = Arr::iota(&[2, 3, 4]);
    let b = a.map(|v| 100.0 + v);
    let c = a.map(|v| -v);
    for axis in 0..3usize {
        for given in [axis as isize, axis as isize - 3] {
            // Reference: concatenation by index arithmetic.
            let mut shape = a.shape.clone();
            shape[axis] *= 3;
            let n = a.shape[axis];
            let want = Arr::from_fn(&shape, |i| {
                let mut j = i.to_vec();
                let which = i[axis] / n;
                j[axis] = i[axis] % n;
                [&a, &b, &c][which].get(&j)
            });
            let got = run(
                s,
                &tensor::concatenate(
                    &[
                        &t(&a),
                        &t(&b).rechunk(&[1, 2, 3]),
                        &t(&c).rechunk(&[2, 1, 1]),
                    ],
                    given,
                ),
            );
            assert_exact(&got, &want, DType::F64);
        }
    }
    // Unequal extents along the axis.
    let p = tensor::arange(0, 6, 1).reshape(&[2, 3]);
    let q = tensor::arange(6, 10, 1).reshape(&[2, 2]);
    let got = run(s, &tensor::concatenate(&[&p, &q], 1));
    assert_eq!(got.shape(), &[2, 5]);
    assert_eq!(i64s(&got), vec![0, 1, 2, 6, 7, 3, 4, 5, 8, 9]);
}

#[test]
fn concatenate_promotes_mixed_dtypes() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        concatenate_promotes_mixed_dtypes_on(&s);
    }
}

fn concatenate_promotes_mixed_dtypes_on(s: &Session) {
    let i = tensor::from_vec(vec![1i32, 2], &[2]);
    let f = tensor::from_vec(vec![0.5f32], &[1]);
    let r = tensor::concatenate(&[&i, &f], 0);
    assert_eq!(r.dtype().unwrap(), DType::F64);
    assert_eq!(f64s(&run(s, &r)), vec![1.0, 2.0, 0.5]);
    let b = tensor::from_vec(vec![true, false], &[2]);
    let l = tensor::from_vec(vec![-7i64], &[1]);
    let r = tensor::concatenate(&[&b, &l, &i], 0);
    assert_eq!(r.dtype().unwrap(), DType::I64);
    assert_eq!(i64s(&run(s, &r)), vec![1, 0, -7, 1, 2]);
    let u = tensor::from_vec(vec![255u8], &[1]);
    let r = tensor::concatenate(&[&u, &b], 0);
    assert_eq!(r.dtype().unwrap(), DType::U8);
    assert_eq!(u8s(&run(s, &r)), vec![255, 1, 0]);
}

#[test]
fn rechunk_keeps_values() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        rechunk_keeps_values_on(&s);
    }
}

fn rechunk_keeps_values_on(s: &Session) {
    let x = Arr::new(&[7, 9], (0..63).map(|v| (v as f64).sin()).collect());
    for chunks in [
        vec![7, 9],
        vec![1, 9],
        vec![7, 1],
        vec![3, 4],
        vec![100, 100],
    ] {
        let got = run(s, &t(&x).rechunk(&chunks));
        assert_exact(&got, &x, DType::F64);
        let got = run(s, &t(&x).rechunk(&[2, 2]).rechunk(&chunks));
        assert_exact(&got, &x, DType::F64);
    }
    let r = tensor::arange(0, 10, 1).rechunk(&[3]);
    assert_eq!(r.shape().unwrap(), vec![10]);
    assert_eq!(i64s(&run(s, &r)), (0..10).collect::<Vec<_>>());
}

#[test]
fn compositions_of_slices_reductions_and_elementwise() {
    // Explicit chunks, and small automatic chunks from the session.
    for s in [session(), session_with_chunks(8 * 5)] {
        compositions_of_slices_reductions_and_elementwise_on(&s);
    }
}

fn compositions_of_slices_reductions_and_elementwise_on(s: &Session) {
    let x = Arr::from_fn(&[6, 8], |i| ((i[0] * 5 + i[1] * 3) % 7) as f64 - 3.0);
    let tx = t(&x).rechunk(&[4, 3]);
    // A slice of a reduction.
    let want = x
        .reduce(&[0], false, |g| g.iter().sum())
        .slice(&[(Some(1), None, 2)]);
    assert_exact(
        &run(s, &tx.sum_axis(0).slice(&[Slice::new(Some(1), None, 2)])),
        &want,
        DType::F64,
    );
    // A reduction of a slice.
    let sl: Vec<Sl> = vec![(Some(-1), None, -2), (Some(1), Some(7), 1)];
    let want = x.slice(&sl).reduce(&[1], false, |g| {
        g.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    });
    assert_exact(
        &run(s, &tx.slice(&to_slices(&sl)).max_axis(1)),
        &want,
        DType::F64,
    );
    // Elementwise between differently chunked operands, one of them a transposed slice.
    let y = Arr::from_fn(&[8, 6], |i| (i[0] * 6 + i[1]) as f64 * 0.5);
    let ty = t(&y).rechunk(&[3, 5]).transpose();
    let want = x.zip(&y.permute(&[1, 0]), |a, b| a * b - a);
    let got = run(s, &(&tx * &ty - &tx));
    assert_exact(&got, &want, DType::F64);
    // Reduce, broadcast back and subtract (centering by column means).
    let means = x.reduce(&[0], true, |g| g.iter().sum::<f64>() / g.len() as f64);
    let want = x.zip(&means, |a, m| a - m);
    let got = run(
        s,
        &(&tx - &tx.reduce(tessera::ReduceOp::Mean, Some(&[0]), true)),
    );
    assert_close(&got, &want, DType::F64, 1e-14, 1e-14);
    // Sum of the slice of an elementwise expression, as a 0-d value.
    let want: f64 = x
        .slice(&[(None, None, 3), (None, None, 2)])
        .data
        .iter()
        .map(|v| v * v)
        .sum();
    let got = run(
        s,
        &(&tx * &tx)
            .slice(&[Slice::all().step(3), Slice::all().step(2)])
            .sum(),
    );
    assert_eq!(got.shape(), &[] as &[usize]);
    assert_eq!(item_f64(&got), want);
    // Reduction of a transpose, and a reshape of a stepped slice.
    let want = x.permute(&[1, 0]).reduce(&[0], false, |g| g.iter().sum());
    assert_exact(&run(s, &tx.transpose().sum_axis(0)), &want, DType::F64);
    let want = x.slice(&[(None, None, 2), (Some(1), None, 3)]);
    let got = run(
        s,
        &tx.slice(&[Slice::all().step(2), Slice::new(Some(1), None, 3)])
            .reshape(&[-1]),
    );
    assert_exact(&got, &Arr::new(&[want.len()], want.data), DType::F64);
    // A 0-d operand broadcasts against anything.
    let zero_d = tensor::full(&[], 2.5f64);
    assert_exact(&run(s, &(&tx * &zero_d)), &x.map(|v| v * 2.5), DType::F64);
    assert_exact(&run(s, &(&zero_d - &tx)), &x.map(|v| 2.5 - v), DType::F64);
    assert_eq!(item_f64(&run(s, &zero_d.sum())), 2.5);
}
