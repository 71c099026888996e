//! cumsum/cumprod, diff, sort/argsort, take, isin, outer, unique and boolean masks, against
//! NumPy's answers (written beside each case) and plain Rust references, under several
//! chunkings, with their bad inputs.

use crate::common::*;
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, Error, Tensor};

/// Deterministic irregular values with repeats and both signs.
fn values(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| (i * 37 + 11) % 23 - 9).collect()
}

/// A (rows, cols) int64 matrix of `values`, cut into `c` x `c` chunks.
fn matrix(rows: usize, cols: usize, c: usize) -> Tensor {
    tensor::from_vec(values(rows * cols), &[rows, cols]).rechunk(&[c, c])
}

#[test]
fn cumulative_sums_and_products_carry_across_chunks() {
    let s = session();
    // np.cumsum([1, 2, 3, 4]) == [1, 3, 6, 10]; np.cumprod(...) == [1, 2, 6, 24]
    let small = tensor::from_slice(&[1i32, 2, 3, 4], &[4]).rechunk(&[3]);
    assert_eq!(i64s(&run(&s, &small.cumsum())), vec![1, 3, 6, 10]);
    assert_eq!(i64s(&run(&s, &small.cumprod())), vec![1, 2, 6, 24]);
    let (rows, cols) = (7, 9);
    let v = values(rows * cols);
    // Plain references along each axis.
    let mut along0 = v.clone();
    for r in 1..rows {
        for c in 0..cols {
            along0[r * cols + c] += along0[(r - 1) * cols + c];
        }
    }
    let mut along1 = v.clone();
    for r in 0..rows {
        for c in 1..cols {
            along1[r * cols + c] += along1[r * cols + c - 1];
        }
    }
    let flat: Vec<i64> = v
        .iter()
        .scan(0, |acc, &x| {
            *acc += x;
            Some(*acc)
        })
        .collect();
    for c in [1, 2, 4, 9] {
        let m = matrix(rows, cols, c);
        assert_eq!(i64s(&run(&s, &m.cumsum_axis(0))), along0, "chunks {c}");
        assert_eq!(i64s(&run(&s, &m.cumsum_axis(-1))), along1, "chunks {c}");
        assert_eq!(i64s(&run(&s, &m.cumsum())), flat, "chunks {c}");
        // Fused afterwards and reduced: the last running sum is the total.
        let last = (m.cumsum_axis(1) * 2i64).slice(&[
            tessera::Slice::all(),
            tessera::Slice::new(Some(-1), None, 1),
        ]);
        let want: Vec<i64> = (0..rows).map(|r| 2 * along1[r * cols + cols - 1]).collect();
        assert_eq!(i64s(&run(&s, &last)), want, "chunks {c}");
    }
    // Floats keep their dtype; products of a random float tensor match a sequential loop.
    let x = default_rng(4).uniform(0.5, 1.5, &[50]);
    let h = f64s(&run(&s, &x));
    let want: Vec<f64> = h
        .iter()
        .scan(1.0, |acc, &x| {
            *acc *= x;
            Some(*acc)
        })
        .collect();
    for c in [1, 7, 50] {
        let got = run(&s, &x.rechunk(&[c]).cumprod());
        assert_eq!(got.dtype(), DType::F64);
        for (g, w) in f64s(&got).iter().zip(&want) {
            assert!(close(*g, *w, 1e-12, 0.0), "{g} vs {w}");
        }
    }
    // Bools accumulate in int64: np.cumsum([True, False, True]) == [1, 1, 2]
    let b = tensor::from_slice(&[true, false, true], &[3]);
    assert_eq!(i64s(&run(&s, &b.cumsum())), vec![1, 1, 2]);
    expect_carried_error(
        &s,
        "cumsum axis 2 of a matrix",
        &matrix(2, 2, 1).cumsum_axis(2),
        |e| matches!(e, Error::AxisOutOfRange { axis: 2, ndim: 2 }),
        &[],
    );
}

#[test]
fn differences_of_any_order() {
    let s = session();
    // np.diff([1, 4, 9, 16, 25]) == [3, 5, 7, 9]; n=2 gives [2, 2, 2]; n=5 is empty.
    let sq = tensor::from_slice(&[1i64, 4, 9, 16, 25], &[5]).rechunk(&[2]);
    assert_eq!(i64s(&run(&s, &sq.diff(1, 0))), vec![3, 5, 7, 9]);
    assert_eq!(i64s(&run(&s, &sq.diff(2, -1))), vec![2, 2, 2]);
    assert_eq!(run(&s, &sq.diff(5, 0)).shape(), &[0]);
    assert_eq!(i64s(&run(&s, &sq.diff(0, 0))), vec![1, 4, 9, 16, 25]);
    // Along axis 0 of a matrix, under several chunkings.
    let (rows, cols) = (5, 4);
    let v = values(rows * cols);
    let want: Vec<i64> = (0..(rows - 1) * cols).map(|i| v[i + cols] - v[i]).collect();
    for c in [1, 2, 5] {
        let d = matrix(rows, cols, c).diff(1, 0);
        assert_eq!(run(&s, &d).shape(), &[rows - 1, cols]);
        assert_eq!(i64s(&run(&s, &d)), want, "chunks {c}");
    }
    // Bools: np.diff([True, True, False]) == [False, True]
    let b = tensor::from_slice(&[true, true, false], &[3]);
    assert_eq!(bools(&run(&s, &b.diff(1, 0))), vec![false, true]);
}

#[test]
fn sorts_and_argsorts_along_any_axis() {
    let s = session();
    // np.sort([3., nan, 1., 3., -2.]) == [-2, 1, 3, 3, nan];
    // np.argsort(..., kind="stable") == [4, 2, 0, 3, 1]
    let x = tensor::from_slice(&[3.0, f64::NAN, 1.0, 3.0, -2.0], &[5]).rechunk(&[2]);
    let sorted = f64s(&run(&s, &x.sort(0)));
    assert_eq!(&sorted[..4], &[-2.0, 1.0, 3.0, 3.0]);
    assert!(sorted[4].is_nan());
    assert_eq!(i64s(&run(&s, &x.argsort(0))), vec![4, 2, 0, 3, 1]);
    let (rows, cols) = (6, 7);
    let v = values(rows * cols);
    let mut by_row = v.clone();
    for r in 0..rows {
        by_row[r * cols..(r + 1) * cols].sort();
    }
    let mut by_col = v.clone();
    for c in 0..cols {
        let mut col: Vec<i64> = (0..rows).map(|r| v[r * cols + c]).collect();
        col.sort();
        for (r, x) in col.into_iter().enumerate() {
            by_col[r * cols + c] = x;
        }
    }
    for c in [1, 2, 3, 7] {
        let m = matrix(rows, cols, c);
        assert_eq!(i64s(&run(&s, &m.sort(-1))), by_row, "chunks {c}");
        assert_eq!(i64s(&run(&s, &m.sort(0))), by_col, "chunks {c}");
        // argsort then take along the row gives the sorted row; positions are stable.
        let order = i64s(&run(&s, &m.argsort(1)));
        for r in 0..rows {
            let row = &order[r * cols..(r + 1) * cols];
            let picked: Vec<i64> = row.iter().map(|&p| v[r * cols + p as usize]).collect();
            assert_eq!(picked, by_row[r * cols..(r + 1) * cols].to_vec());
            for w in row.windows(2) {
                let (a, b) = (v[r * cols + w[0] as usize], v[r * cols + w[1] as usize]);
                assert!(a < b || (a == b && w[0] < w[1]), "stable order");
            }
        }
    }
}

#[test]
fn take_by_index_along_an_axis() {
    let s = session();
    // np.take([10, 20, 30, 40, 50], [4, 0, -1, 2, 2]) == [50, 10, 50, 30, 30]
    let x = tensor::from_slice(&[10i64, 20, 30, 40, 50], &[5]);
    for c in [1, 2, 5] {
        let got = x.rechunk(&[c]).take(&[4, 0, -1, 2, 2]);
        assert_eq!(i64s(&run(&s, &got)), vec![50, 10, 50, 30, 30], "chunks {c}");
    }
    // Columns of a matrix in another order, repeated.
    let (rows, cols) = (4, 6);
    let v = values(rows * cols);
    let idx = [5i64, 0, 3, 3, -6, 1];
    let want: Vec<i64> = (0..rows)
        .flat_map(|r| {
            let v = &v;
            idx.iter()
                .map(move |&i| v[r * cols + i.rem_euclid(cols as i64) as usize])
        })
        .collect();
    for c in [1, 2, 4] {
        let got = matrix(rows, cols, c).take_axis(&idx, 1);
        assert_eq!(run(&s, &got).shape(), &[rows, idx.len()]);
        assert_eq!(i64s(&run(&s, &got)), want, "chunks {c}");
        // Fused with a later op.
        assert_eq!(
            i64s(&run(&s, &(got + 1i64))),
            want.iter().map(|x| x + 1).collect::<Vec<_>>()
        );
    }
    // np.take(x, [5]) raises IndexError: index 5 is out of bounds for axis 0 with size 5.
    expect_carried_error(
        &s,
        "take past the end",
        &x.take(&[1, 5]),
        |e| {
            matches!(
                e,
                Error::IndexOutOfRange {
                    index: 5,
                    axis: 0,
                    size: 5
                }
            )
        },
        &["out of bounds"],
    );
    expect_carried_error(
        &s,
        "take before the start",
        &x.take(&[-6]),
        |e| matches!(e, Error::IndexOutOfRange { index: -6, .. }),
        &[],
    );
}

#[test]
fn a_take_from_chunks_with_a_sliver_first_is_cut_like_its_longest() {
    // [0] ++ 1..1000 in chunks of 250: the first chunk holds one element. A permutation
    // of its 1000 positions is taken in chunks of 250 (it was one chunk per index).
    let s = session();
    let head = tensor::from_slice(&[0i64], &[1]);
    let tail = tensor::arange(1, 1000, 1).rechunk(&[250]);
    let x = tensor::concatenate(&[&head, &tail], 0);
    let perm: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1000).collect();
    let (out, stats) = s.execute_with_stats(&x.take(&perm)).unwrap();
    assert_eq!(i64s(&out), perm);
    let takes = stats.chunks_by_op.get("take").copied().unwrap_or(0);
    assert!((4..=5).contains(&takes), "{:?}", stats.chunks_by_op);
}

#[test]
fn isin_outer_unique_and_boolean_masks() {
    let s = session();
    // np.isin([1, 2, 3, 4], [2., 4.5, nan]) == [F, T, F, F]; invert gives the negation.
    let x = tensor::from_slice(&[1i64, 2, 3, 4], &[4]).rechunk(&[3]);
    let test = tensor::from_slice(&[2.0, 4.5, f64::NAN], &[3]);
    assert_eq!(
        bools(&run(&s, &x.isin(&test, false))),
        vec![false, true, false, false]
    );
    assert_eq!(
        bools(&run(&s, &x.isin(&test, true))),
        vec![true, false, true, true]
    );
    let v = values(60);
    let members = [-9i64, 0, 3, 13];
    for c in [1, 7, 60] {
        let t = tensor::from_vec(v.clone(), &[6, 10]).rechunk(&[c.min(6), c.min(10)]);
        let test = tensor::from_slice(&members, &[2, 2]);
        let want: Vec<bool> = v.iter().map(|x| members.contains(x)).collect();
        assert_eq!(bools(&run(&s, &t.isin(&test, false))), want, "chunks {c}");
    }
    // np.outer([1, 2, 3], [[1], [10]]) == [[1, 10], [2, 20], [3, 30]]
    let o = tensor::outer(
        &tensor::from_slice(&[1i64, 2, 3], &[3]),
        &tensor::from_slice(&[1i64, 10], &[2, 1]),
    );
    let h = run(&s, &o);
    assert_eq!(h.shape(), &[3, 2]);
    assert_eq!(i64s(&h), vec![1, 10, 2, 20, 3, 30]);
    // np.unique: sorted distinct values, NaNs as one.
    let mut want: Vec<i64> = v.clone();
    want.sort();
    want.dedup();
    for c in [1, 7, 60] {
        let t = tensor::from_vec(v.clone(), &[60]).rechunk(&[c]);
        let u = t.unique(&s).unwrap();
        assert_eq!(i64s(&run(&s, &u)), want, "chunks {c}");
        // The result is a tensor that later operations use.
        assert_eq!(
            item_f64(&run(&s, &u.sum())),
            want.iter().sum::<i64>() as f64
        );
    }
    let f = tensor::from_slice(&[2.0, f64::NAN, 1.0, f64::NAN, 2.0], &[5]).rechunk(&[2]);
    let u = f64s(&run(&s, &f.unique(&s).unwrap()));
    assert_eq!(&u[..2], &[1.0, 2.0]);
    assert!(u.len() == 3 && u[2].is_nan());
    // x[x > 0] keeps the positive values in C order.
    for c in [1, 7, 60] {
        let t = tensor::from_vec(v.clone(), &[6, 10]).rechunk(&[c.min(6), c.min(10)]);
        let picked = t.boolean_mask(&t.gt(0i64), &s).unwrap();
        let want: Vec<i64> = v.iter().copied().filter(|&x| x > 0).collect();
        assert_eq!(i64s(&run(&s, &picked)), want, "chunks {c}");
    }
    let t = tensor::from_vec(v.clone(), &[60]);
    let none = t.boolean_mask(&t.gt(100i64), &s).unwrap();
    assert_eq!(run(&s, &none).shape(), &[0]);
    // A mask of another shape or dtype is a typed error, and the session goes on.
    match t.boolean_mask(&t.reshape(&[6, 10]).gt(0i64), &s) {
        Err(Error::Shape(m)) => assert!(m.contains("[60]"), "{m}"),
        other => panic!("mask of the wrong shape: {other:?}"),
    }
    assert!(matches!(t.boolean_mask(&t, &s), Err(Error::Shape(_))));
    assert_eq!(item_f64(&run(&s, &t.sum())), v.iter().sum::<i64>() as f64);
}

#[test]
fn zero_dimensional_arrays_reshape_to_and_from_ones() {
    let s = session();
    // np.float64(2.5).reshape(1) == [2.5]; .reshape(1, 1, 1).shape == (1, 1, 1)
    let scalar = tensor::from_vec(vec![2.5f64], &[]);
    for shape in [vec![1isize], vec![1, 1], vec![1, 1, 1], vec![-1]] {
        let h = run(&s, &scalar.reshape(&shape));
        let want: Vec<usize> = shape.iter().map(|_| 1).collect();
        assert_eq!(h.shape(), want.as_slice(), "reshape{shape:?}");
        assert_eq!(item_f64(&h), 2.5, "reshape{shape:?}");
    }
    // np.array([[7]]).reshape(()) == 7, and back through a 0-d step to a vector.
    let one = tensor::from_vec(vec![7i64], &[1, 1]);
    let h = run(&s, &one.reshape(&[]));
    assert_eq!(h.shape(), &[] as &[usize]);
    assert_eq!(run(&s, &one.reshape(&[]).reshape(&[1])).shape(), &[1]);
    assert_eq!(i64s(&h), vec![7]);
}
