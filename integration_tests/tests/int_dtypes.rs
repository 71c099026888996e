//! The eight integer dtypes (int8 … uint64) end to end: arithmetic that wraps, NumPy's
//! integer division, shifts and bitwise operations, comparisons, reductions and scans
//! (unsigned ones in uint64), casts and promotion, each against a reference computed here
//! in `i128` and under several chunkings.

use crate::common::*;
use tessera::{tensor, DType, Element, HostTensor, Scalar, Tensor};

/// An integer element type with its values as `i128` (exact for every integer dtype).
trait Int: Element {
    fn wide(self) -> i128;
    /// `v` truncated to this type's width (NumPy's wrapping).
    fn wrap(v: i128) -> Self {
        Self::from_i64(v as i64)
    }
}
macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            fn wide(self) -> i128 {
                i128::from(self)
            }
        }
    )*};
}
int!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Values spread over `T`'s whole range: both extremes, zero, ±1 and scrambled ones.
fn values<T: Int>(n: usize, salt: u64) -> Vec<T> {
    let bits = 8 * T::DTYPE.size_bytes() as u32;
    (0..n as u64)
        .map(|i| {
            let h = (i ^ salt)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(17);
            match i % 7 {
                0 => T::wrap(0),
                1 => T::wrap(1),
                2 => T::wrap(-1),
                // The type's largest and smallest values (for unsigned: MAX and 0).
                3 => T::wrap(
                    (1i128 << (bits - 1)) - 1
                        + i128::from(!T::DTYPE.is_signed_int()) * (1i128 << (bits - 1)),
                ),
                4 => T::wrap(if T::DTYPE.is_signed_int() {
                    -(1i128 << (bits - 1))
                } else {
                    0
                }),
                5 => T::wrap(i128::from(h % 13) - 6),
                _ => T::wrap(i128::from(h)),
            }
        })
        .collect()
}

/// `floor(a / b)` (0 by zero), by Euclid's division rather than the kernels' correction.
fn floor_div(a: i128, b: i128) -> i128 {
    match b {
        0 => 0,
        b if b > 0 => a.div_euclid(b),
        b => (-a).div_euclid(-b),
    }
}

fn typed<T: Int>(h: &HostTensor) -> Vec<T> {
    assert_eq!(h.dtype(), T::DTYPE, "result dtype");
    h.as_slice::<T>().expect("typed values").to_vec()
}

/// `got` (a tensor of `a` op `b` over several chunkings) against `f` applied elementwise.
fn check_binary<T: Int>(
    s: &tessera::Session,
    what: &str,
    a: &[T],
    b: &[T],
    op: impl Fn(&Tensor, &Tensor) -> Tensor,
    f: impl Fn(i128, i128) -> i128,
) {
    let n = a.len();
    let want: Vec<T> = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| T::wrap(f(x.wide(), y.wide())))
        .collect();
    for (ca, cb) in [(n, n), (3, 5), (1, 4)] {
        let ta = tensor::from_slice(a, &[n]).rechunk(&[ca]);
        let tb = tensor::from_slice(b, &[n]).rechunk(&[cb]);
        let got = typed::<T>(&run(s, &op(&ta, &tb)));
        assert_eq!(got, want, "{what} of {} (chunks {ca}, {cb})", T::DTYPE);
    }
}

fn arithmetic<T: Int>(s: &tessera::Session) {
    let n = 29;
    let (a, b) = (values::<T>(n, 1), values::<T>(n, 2));
    check_binary(s, "add", &a, &b, |x, y| x + y, |x, y| x + y);
    check_binary(s, "sub", &a, &b, |x, y| x - y, |x, y| x - y);
    check_binary(s, "mul", &a, &b, |x, y| x * y, |x, y| x.wrapping_mul(y));
    check_binary(
        s,
        "floor_divide",
        &a,
        &b,
        |x, y| x.floor_divide(y),
        floor_div,
    );
    check_binary(
        s,
        "remainder",
        &a,
        &b,
        |x, y| x.remainder(y),
        |x, y| if y == 0 { 0 } else { x - y * floor_div(x, y) },
    );
    check_binary(
        s,
        "bitwise_xor",
        &a,
        &b,
        |x, y| x.bitwise_xor(y),
        |x, y| x ^ y,
    );
    check_binary(s, "maximum", &a, &b, |x, y| x.maximum(y), i128::max);
    // Shift counts within and past the width.
    let bits = 8 * T::DTYPE.size_bytes() as i128;
    let counts: Vec<T> = (0..n as i128)
        .map(|i| T::wrap(i * 3 % (bits + 4)))
        .collect();
    check_binary(
        s,
        "left_shift",
        &a,
        &counts,
        |x, y| x.left_shift(y),
        |x, c| if c < bits { x << c } else { 0 },
    );
    check_binary(
        s,
        "right_shift",
        &a,
        &counts,
        |x, y| x.right_shift(y),
        |x, c| {
            if c < bits {
                x >> c
            } else if x < 0 {
                -1
            } else {
                0
            }
        },
    );
    // Comparisons of the full range (uint64 above i64::MAX included).
    let ta = tensor::from_slice(&a, &[n]).rechunk(&[4]);
    let tb = tensor::from_slice(&b, &[n]).rechunk(&[6]);
    let less: Vec<bool> = a.iter().zip(&b).map(|(x, y)| x.wide() < y.wide()).collect();
    assert_eq!(bools(&run(s, &ta.lt(&tb))), less, "less of {}", T::DTYPE);
}

fn reductions<T: Int>(s: &tessera::Session) {
    let n = 37;
    let a = values::<T>(n, 3);
    let wide: Vec<i128> = a.iter().map(|v| v.wide()).collect();
    // Sums and products accumulate in int64 (signed) or uint64 (unsigned), wrapping.
    let acc = if T::DTYPE.is_signed_int() {
        DType::I64
    } else {
        DType::U64
    };
    let wrap64 = |v: i128| {
        if acc == DType::I64 {
            Scalar::I64(v as i64)
        } else {
            Scalar::U64(v as u64)
        }
    };
    let sum = wide.iter().fold(0i128, |s, v| (s + v) % (1 << 64));
    let prod = wide
        .iter()
        .filter(|&&v| v != 0)
        .fold(1i128, |p, &v| p.wrapping_mul(v) % (1 << 64));
    let nonzero: Vec<T> = a.iter().copied().filter(|v| v.wide() != 0).collect();
    for chunk in [n, 8, 3] {
        let t = tensor::from_slice(&a, &[n]).rechunk(&[chunk]);
        assert_eq!(
            item(&run(s, &t.sum())),
            wrap64(sum),
            "sum of {} ({chunk})",
            T::DTYPE
        );
        let tz = tensor::from_slice(&nonzero, &[nonzero.len()]).rechunk(&[chunk]);
        assert_eq!(
            item(&run(s, &tz.prod())),
            wrap64(prod),
            "prod of {} ({chunk})",
            T::DTYPE
        );
        let max = *wide.iter().max().expect("values");
        assert_eq!(
            item(&run(s, &t.max())),
            T::wrap(max).into(),
            "max of {}",
            T::DTYPE
        );
        let arg = wide.iter().position(|&v| v == max).expect("max") as i64;
        assert_eq!(
            item(&run(s, &t.argmax())),
            Scalar::I64(arg),
            "argmax of {}",
            T::DTYPE
        );
        // The running sum, in the accumulator's dtype.
        let running = run(s, &t.cumsum());
        assert_eq!(running.dtype(), acc, "cumsum dtype of {}", T::DTYPE);
        let mut total = 0i128;
        for (i, v) in wide.iter().enumerate() {
            total = (total + v) % (1 << 64);
            assert_eq!(
                running.data().get(i),
                Some(wrap64(total)),
                "cumsum[{i}] of {}",
                T::DTYPE
            );
        }
    }
}

/// Every cast between the eleven dtypes, as a scalar cast (NumPy's `astype`) predicts.
fn casts<T: Int>(s: &tessera::Session) {
    let a = values::<T>(23, 4);
    let t = tensor::from_slice(&a, &[a.len()]).rechunk(&[5]);
    for to in DType::ALL {
        let got = run(s, &t.astype(to));
        assert_eq!(got.dtype(), to);
        for (i, &v) in a.iter().enumerate() {
            let want = Into::<Scalar>::into(v).cast(to);
            assert_eq!(got.data().get(i), Some(want), "{} {v:?} as {to}", T::DTYPE);
        }
    }
}

fn every_int(f: &dyn Fn(&tessera::Session, &str)) {
    let s = session();
    for name in [
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    ] {
        f(&s, name);
    }
}

macro_rules! by_name {
    ($s:expr, $name:expr, $f:ident) => {
        match $name {
            "int8" => $f::<i8>($s),
            "int16" => $f::<i16>($s),
            "int32" => $f::<i32>($s),
            "int64" => $f::<i64>($s),
            "uint8" => $f::<u8>($s),
            "uint16" => $f::<u16>($s),
            "uint32" => $f::<u32>($s),
            _ => $f::<u64>($s),
        }
    };
}

#[test]
fn integer_arithmetic_wraps_and_divides_like_numpy() {
    every_int(&|s, name| by_name!(s, name, arithmetic));
}

#[test]
fn integer_reductions_accumulate_in_int64_or_uint64() {
    every_int(&|s, name| by_name!(s, name, reductions));
}

#[test]
fn integer_casts_match_scalar_casts() {
    every_int(&|s, name| by_name!(s, name, casts));
}

#[test]
fn mixed_integer_operands_promote_as_numpy_does() {
    let s = session();
    let i8s = tensor::from_slice(&[-128i8, -1, 0, 127], &[4]);
    let u8s = tensor::from_slice(&[255u8, 1, 0, 200], &[4]);
    let sum = run(&s, &(&i8s + &u8s));
    // uint8 with int8 is int16: no value of either is lost.
    assert_eq!(sum.dtype(), DType::I16);
    assert_eq!(sum.as_slice::<i16>(), Some(&[127i16, 0, 0, 327][..]));
    let u64s = tensor::from_slice(&[u64::MAX, 3, 0, 1 << 63], &[4]);
    let i64s = tensor::from_slice(&[-1i64, 2, 0, 5], &[4]);
    // uint64 with int64 is float64.
    let mixed = run(&s, &(&u64s + &i64s));
    assert_eq!(mixed.dtype(), DType::F64);
    assert_eq!(
        f64s(&mixed),
        vec![u64::MAX as f64 - 1.0, 5.0, 0.0, 2f64.powi(63) + 5.0]
    );
    // A Python-style weak scalar keeps the array's dtype (and wraps, as NumPy's does).
    let plus = run(&s, &(&i8s + 1i64));
    assert_eq!(plus.as_slice::<i8>(), Some(&[-127i8, 0, 1, -128][..]));
    // float32 holds int16 exactly, not int32.
    let f = tensor::from_slice(&[1.5f32], &[1]);
    let i16s = tensor::from_slice(&[2i16], &[1]);
    assert_eq!(run(&s, &(&f + &i16s)).dtype(), DType::F32);
    let u32s = tensor::from_slice(&[2u32], &[1]);
    assert_eq!(run(&s, &(&f + &u32s)).dtype(), DType::F64);
}

#[test]
fn negative_powers_of_small_integers_are_an_error() {
    let s = session();
    let base = tensor::from_slice(&[2i16, 3], &[2]);
    let exp = tensor::from_slice(&[1i16, -1], &[2]);
    assert!(base.pow(&exp).execute(&s).is_err());
    let ok = run(&s, &base.pow(tensor::from_slice(&[15i16, 2], &[2])));
    // 2**15 wraps in int16.
    assert_eq!(ok.as_slice::<i16>(), Some(&[i16::MIN, 9][..]));
}
