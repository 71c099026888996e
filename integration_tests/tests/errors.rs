//! Every bad input gives a typed error naming its cause, the error passes through later
//! operations, and the session keeps working afterwards.

use crate::common::*;
use tessera::tensor::random::default_rng;
use tessera::{tensor, DType, Error, Session, Slice, Tensor};

/// A good job, run after each bad one: the session must still work.
fn good_job(s: &Session) {
    let h = run(s, &(tensor::arange(0, 100, 1).rechunk(&[7]) * 2i64).sum());
    assert_eq!(h.item().unwrap().as_i64(), 9900);
}

/// Checks the error `t` carries (see [`expect_carried_error`]), then runs a good job.
fn expect_err(
    s: &Session,
    what: &str,
    t: Tensor,
    pred: impl Fn(&Error) -> bool,
    mentions: &[&str],
) {
    expect_carried_error(s, what, &t, pred, mentions);
    good_job(s);
}

fn is_shape(e: &Error) -> bool {
    matches!(e, Error::Shape(_))
}
fn is_size(e: &Error) -> bool {
    matches!(e, Error::InvalidSize(_))
}
fn is_chunks(e: &Error) -> bool {
    matches!(e, Error::InvalidChunks(_))
}
fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Overflow(_))
}
fn is_arg(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument(_))
}

#[test]
fn shape_mismatches() {
    let s = session();
    let a = tensor::ones(&[3], DType::F64);
    let b = tensor::ones(&[4], DType::F64);
    expect_err(&s, "(3,) + (4,)", &a + &b, is_shape, &["[3]", "[4]"]);
    let m = tensor::ones(&[3, 4], DType::I64);
    expect_err(&s, "(3,4) * (3,)", &m * &a, is_shape, &["[3, 4]", "[3]"]);
    expect_err(
        &s,
        "(2,3) vs (3,2)",
        tensor::ones(&[2, 3], DType::F64).lt(tensor::ones(&[3, 2], DType::F64)),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "where with mismatched branches",
        tensor::where_(&m.gt(0i64), &a, &b),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "concatenate (2,3) with (2,4) on axis 0",
        tensor::concatenate(
            &[
                &tensor::ones(&[2, 3], DType::F64),
                &tensor::ones(&[2, 4], DType::F64),
            ],
            0,
        ),
        is_shape,
        &["[2, 4]", "[2, 3]"],
    );
    expect_err(
        &s,
        "concatenate of different ranks",
        tensor::concatenate(&[&a, &m], 0),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "reshape 12 into (5, -1)",
        tensor::arange(0, 12, 1).reshape(&[5, -1]),
        is_shape,
        &["12"],
    );
    expect_err(
        &s,
        "reshape 12 into (5, 3)",
        tensor::arange(0, 12, 1).reshape(&[5, 3]),
        is_shape,
        &["[5, 3]"],
    );
    expect_err(
        &s,
        "broadcast_to (3,) to (4,)",
        a.broadcast_to(&[4]),
        is_shape,
        &["[3]", "[4]"],
    );
    expect_err(
        &s,
        "broadcast_to (3,4) to (4,)",
        m.broadcast_to(&[4]),
        is_shape,
        &[],
    );
    expect_err(
        &s,
        "from_vec with too few values",
        tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[2, 2]),
        is_shape,
        &["3"],
    );
}

#[test]
fn axes_out_of_range() {
    let s = session();
    let m = tensor::ones(&[3, 4], DType::F64);
    for (what, t, axis) in [
        ("sum_axis(2)", m.sum_axis(2), 2),
        ("sum_axis(-3)", m.sum_axis(-3), -3),
        ("argmax_axis(5)", m.argmax_axis(5), 5),
        ("var_axis(-4)", m.var_axis(-4, 0), -4),
        (
            "reduce over [0, 2]",
            m.reduce(tessera::ReduceOp::Max, Some(&[0, 2]), true),
            2,
        ),
        ("permute [0, 2]", m.permute(&[0, 2]), 2),
        (
            "concatenate on axis 2",
            tensor::concatenate(&[&m, &m], 2),
            2,
        ),
        (
            "concatenate on axis -3",
            tensor::concatenate(&[&m, &m], -3),
            -3,
        ),
    ] {
        expect_err(
            &s,
            what,
            t,
            |e| matches!(e, Error::AxisOutOfRange { axis: a, ndim: 2 } if *a == axis),
            &[&axis.to_string()],
        );
    }
    // A 0-d tensor has no axis 0.
    expect_err(
        &s,
        "sum_axis(0) of a 0-d tensor",
        tensor::full(&[], 1.0f64).sum_axis(0),
        |e| matches!(e, Error::AxisOutOfRange { axis: 0, ndim: 0 }),
        &[],
    );
}

#[test]
fn negative_and_ambiguous_sizes() {
    // Zero extents are valid (see empty.rs); negative ones and ambiguous -1s are not.
    let s = session();
    expect_err(
        &s,
        "reshape with -2",
        tensor::arange(0, 6, 1).reshape(&[-2, -3]),
        is_size,
        &[],
    );
    expect_err(
        &s,
        "reshape with two -1",
        tensor::arange(0, 6, 1).reshape(&[-1, -1]),
        is_size,
        &[],
    );
    expect_err(
        &s,
        "reshape 6 elements into (0, 6)",
        tensor::arange(0, 6, 1).reshape(&[0, 6]),
        is_shape,
        &["[0, 6]"],
    );
    expect_err(
        &s,
        "broadcast (3,) to (0,)",
        tensor::ones(&[3], DType::F64).broadcast_to(&[0]),
        is_shape,
        &[],
    );
}

#[test]
fn invalid_chunk_shapes() {
    let s = session();
    let m = tensor::ones(&[4, 6], DType::F64);
    expect_err(
        &s,
        "rechunk with a zero",
        m.rechunk(&[0, 2]),
        is_chunks,
        &["[0, 2]"],
    );
    expect_err(
        &s,
        "rechunk of the wrong rank",
        m.rechunk(&[2]),
        is_chunks,
        &["[2]"],
    );
    expect_err(
        &s,
        "rechunk with too many axes",
        m.rechunk(&[2, 2, 2]),
        is_chunks,
        &[],
    );
    // A session whose chunks cannot hold one element.
    match Session::builder()
        .threads(2)
        .progress(tessera::Progress::Never)
        .chunk_bytes(4)
        .build()
    {
        Err(Error::InvalidChunks(m)) => assert!(m.contains('4'), "{m}"),
        other => panic!("chunk_bytes(4): expected InvalidChunks, got {other:?}"),
    }
    good_job(&s);
}

#[test]
fn unsupported_dtypes() {
    let s = session();
    let b = tensor::from_vec(vec![true, false], &[2]);
    let f = tensor::from_vec(vec![1.0f64, 2.0], &[2]);
    let ud = |e: &Error| {
        matches!(
            e,
            Error::UnsupportedDType {
                dtype: DType::Bool,
                ..
            }
        )
    };
    expect_err(&s, "bool + bool", &b + &b, ud, &["bool", "add"]);
    expect_err(&s, "bool - bool", &b - &b, ud, &["bool"]);
    expect_err(&s, "bool * bool", &b * &b, ud, &["bool"]);
    expect_err(&s, "-bool", -&b, ud, &["bool"]);
    expect_err(&s, "abs(bool)", b.abs(), ud, &["bool"]);
    expect_err(&s, "bool ** bool", b.pow(&b), ud, &["bool"]);
    let uf = |e: &Error| {
        matches!(
            e,
            Error::UnsupportedDType {
                dtype: DType::F64,
                ..
            }
        )
    };
    expect_err(
        &s,
        "logical_and of floats",
        f.logical_and(&b),
        uf,
        &["float64"],
    );
    expect_err(&s, "float | bool", &b | &f, uf, &["float64"]);
}

#[test]
fn overflowing_sizes() {
    let s = session();
    let big = usize::MAX / 2 + 1;
    expect_err(
        &s,
        "zeros (usize::MAX, 2)",
        tensor::zeros(&[usize::MAX, 2], DType::F64),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "ones (2^62, 4) of f64: elements overflow",
        tensor::ones(&[1 << 62, 4], DType::F64),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "ones (2^62, 2) of f64: bytes overflow",
        tensor::ones(&[1 << 62, 2], DType::F64),
        is_overflow,
        &["float64"],
    );
    expect_err(
        &s,
        "2^63 bytes of u8",
        tensor::zeros(&[1 << 63], DType::U8),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "u8 of 2^63 + more elements",
        tensor::zeros(&[big, 1 << 1], DType::U8),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "uniform of too many elements",
        default_rng(3).uniform(0.0, 1.0, &[1 << 40, 1 << 40]),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "randint of too many bytes",
        default_rng(3).randint(0, 2, &[1 << 61]),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "full of too many bytes",
        tensor::full(&[1 << 31, 1 << 31, 4], 1i32),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "arange over the whole i64 range",
        tensor::arange(i64::MIN, i64::MAX, 1),
        is_overflow,
        &[],
    );
    expect_err(
        &s,
        "broadcast_to too many bytes",
        tensor::ones(&[1], DType::F64).broadcast_to(&[1 << 32, 1 << 32]),
        is_overflow,
        &[],
    );
}

#[test]
fn invalid_arguments() {
    let s = session();
    let m = tensor::ones(&[3, 4], DType::F64);
    expect_err(
        &s,
        "arange step 0",
        tensor::arange(0, 10, 0),
        is_arg,
        &["step"],
    );
    expect_err(
        &s,
        "arange_f64 step 0",
        tensor::arange_f64(0.0, 1.0, 0.0),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "arange_f64 to infinity",
        tensor::arange_f64(0.0, f64::INFINITY, 1.0),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "slice step 0",
        m.slice(&[Slice::all().step(0)]),
        is_arg,
        &["step"],
    );
    expect_err(
        &s,
        "too many slices",
        m.slice(&[Slice::all(), Slice::all(), Slice::all()]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "uniform low > high",
        default_rng(1).uniform(2.0, 1.0, &[3]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "uniform NaN bound",
        default_rng(1).uniform(f64::NAN, 1.0, &[3]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "normal std < 0",
        default_rng(1).normal(0.0, -1.0, &[3]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "randint low == high",
        default_rng(1).randint(3, 3, &[3]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "repeated axis",
        m.reduce(tessera::ReduceOp::Sum, Some(&[1, -1]), false),
        is_arg,
        &["repeated"],
    );
    let t3 = tensor::ones(&[2, 3, 4], DType::F64);
    expect_err(
        &s,
        "argmax over two of three axes",
        t3.reduce(tessera::ReduceOp::ArgMax, Some(&[0, 1]), false),
        is_arg,
        &["argmax"],
    );
    expect_err(
        &s,
        "permute with a repeat",
        t3.permute(&[0, 0, 1]),
        is_arg,
        &[],
    );
    expect_err(
        &s,
        "permute of the wrong length",
        t3.permute(&[1, 0]),
        is_arg,
        &[],
    );
    match tensor::concatenate(&[], 0).error() {
        Some(Error::InvalidArgument(_)) => {}
        other => panic!("concatenate of nothing: {other:?}"),
    }
    match Session::builder()
        .threads(0)
        .progress(tessera::Progress::Never)
        .build()
    {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("thread"), "{m}"),
        other => panic!("threads(0): expected InvalidArgument, got {other:?}"),
    }
    good_job(&s);
}

#[test]
fn failing_kernel_gives_chunk_failed_and_the_session_recovers() {
    let s = session();
    let bad = tensor::arange(1, 5, 1).pow(-1i64);
    assert!(
        bad.error().is_none(),
        "the negative power is only found when the kernel runs"
    );
    match bad.execute(&s) {
        Err(Error::ChunkFailed { op, cause, .. }) => {
            let msg = cause.to_string();
            assert!(
                msg.contains("negative") && msg.contains("power"),
                "cause names the negative power: {msg}"
            );
            assert!(!op.is_empty());
            let full = Error::ChunkFailed {
                key: 0,
                op: op.clone(),
                cause,
            }
            .to_string();
            assert!(full.contains(&op), "{full}");
        }
        other => panic!("expected ChunkFailed, got {other:?}"),
    }
    good_job(&s);
    // In a multi-chunk job, inside a larger expression, and twice in a row.
    let bad = (tensor::arange(-20, 20, 1)
        .rechunk(&[3])
        .pow(tensor::arange(-1, 39, 1))
        + 1i64)
        .sum();
    for _ in 0..2 {
        assert!(matches!(bad.execute(&s), Err(Error::ChunkFailed { .. })));
        good_job(&s);
    }
    // Non-negative powers of the same values work.
    let ok = tensor::arange(1, 5, 1).pow(2i64);
    assert_eq!(i64s(&run(&s, &ok)), vec![1, 4, 9, 16]);
}
