//! Leaf sources: random streams, ramps and chunk reads.

use super::*;

pub(super) fn random(out: &mut Vec<Case>) {
    let s = &SHAPE;
    let dists = [
        (
            "uniform",
            Distribution::Uniform {
                low: -2.0,
                high: 3.5,
            },
        ),
        (
            "unit",
            Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
        ),
        (
            "normal",
            Distribution::Normal {
                mean: 1.5,
                std: 0.25,
            },
        ),
        ("randint", Distribution::RandInt { low: -5, high: 17 }),
        (
            "randint_full",
            Distribution::RandInt {
                low: i64::MIN,
                high: i64::MAX,
            },
        ),
    ];
    let maps = [
        (
            "contiguous",
            FlatMap {
                base: 7,
                strides: vec![5, 1],
            },
        ),
        (
            "transposed",
            FlatMap {
                base: 3,
                strides: vec![1, 3],
            },
        ),
        (
            "broadcast",
            FlatMap {
                base: 11,
                strides: vec![0, 1],
            },
        ),
        (
            "strided",
            FlatMap {
                base: 1_000_000_000_001,
                strides: vec![20, 2],
            },
        ),
    ];
    for (dn, dist) in dists {
        let dtype = match dist {
            Distribution::RandInt { .. } => DType::I64,
            _ => DType::F64,
        };
        for (mn, map) in &maps {
            out.push(Case {
                label: format!("random/{dn}/{mn}"),
                kernel: kernel(
                    vec![ins(
                        s,
                        dtype,
                        InstrKind::Leaf(LeafSource::Random {
                            dist,
                            seed: 0x0123_4567_89AB_CDEF,
                            stream: 0xFEDC_BA98_7654_3210,
                            map: map.clone(),
                        }),
                    )],
                    None,
                ),
            });
        }
    }
}

/// Random leaves of shape `(n, 2)` folded along their last axis, as pi's points are: the
/// generator computes each Philox block once for both coordinates where they share one
/// (`pairs`, `pairs_far`) and keeps the cached reads elsewhere (an odd base or row stride).
pub(super) fn random_pairs(out: &mut Vec<Case>) {
    let n = 9;
    let dists = [
        (
            "uniform",
            Distribution::Uniform {
                low: -1.0,
                high: 1.0,
            },
            ReduceOp::Max,
        ),
        (
            "normal",
            Distribution::Normal {
                mean: 0.5,
                std: 2.0,
            },
            ReduceOp::Sum,
        ),
        (
            "randint",
            Distribution::RandInt { low: -9, high: 40 },
            ReduceOp::Sum,
        ),
    ];
    let maps = [
        ("pairs", 6, vec![2, 1]),
        ("pairs_far", 1_000_000_000_000, vec![4, 1]),
        ("odd_base", 7, vec![2, 1]),
        ("odd_rows", 4, vec![3, 1]),
    ];
    for (dn, dist, op) in dists {
        let dtype = match dist {
            Distribution::RandInt { .. } => DType::I64,
            _ => DType::F64,
        };
        for (mn, base, strides) in &maps {
            let leaf = ins(
                &[n, 2],
                dtype,
                InstrKind::Leaf(LeafSource::Random {
                    dist,
                    seed: 0x0123_4567_89AB_CDEF,
                    stream: 3,
                    map: FlatMap {
                        base: *base,
                        strides: strides.clone(),
                    },
                }),
            );
            out.push(Case {
                label: format!("random_pairs/{dn}/{mn}"),
                kernel: kernel(
                    vec![
                        leaf,
                        ins(&[n], dtype, InstrKind::ReduceTrailing { op, x: 0, k: 2 }),
                    ],
                    None,
                ),
            });
        }
    }
}

pub(super) fn ramps(out: &mut Vec<Case>) {
    let s = &SHAPE;
    let map = FlatMap {
        base: 4,
        strides: vec![5, 1],
    };
    let ramps = [
        ("int", Scalar::I64(3), Scalar::I64(-2), None),
        (
            "int_wrapping",
            Scalar::I64(i64::MAX - 3),
            Scalar::I64(1),
            None,
        ),
        ("float", Scalar::F64(0.5), Scalar::F64(0.1), None),
        (
            "linspace",
            Scalar::F64(0.0),
            Scalar::F64(0.1),
            Some((18, 1.8)),
        ),
        ("mixed", Scalar::I64(2), Scalar::F64(0.25), None),
    ];
    for (name, start, step, pin) in ramps {
        for d in DTYPES {
            out.push(Case {
                label: format!("ramp/{name}/{d}"),
                kernel: kernel(
                    vec![ins(
                        s,
                        d,
                        InstrKind::Leaf(LeafSource::Ramp {
                            start,
                            step,
                            pin,
                            map: map.clone(),
                        }),
                    )],
                    None,
                ),
            });
        }
    }
}

/// Chunk leaves of [`SHAPE`] reading sources in every way the IR allows.
pub fn chunk_reads() -> Vec<(String, Instr)> {
    let s = &SHAPE;
    let one = |start: Vec<usize>, shape: Vec<usize>, axes: Vec<AxisMap>| {
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![SourceChunk {
                start,
                shape,
                input: 0,
            }],
            axes,
        })
    };
    let ax = |offset: i64, local_axis: Option<usize>, step: i64| AxisMap {
        offset,
        local_axis,
        step,
    };
    // A 2 x 2 grid of [3, 5] chunks over a [6, 10] source, slots 0..4.
    let grid: Vec<SourceChunk> = (0..4)
        .map(|c| SourceChunk {
            start: vec![(c / 2) * 3, (c % 2) * 5],
            shape: vec![3, 5],
            input: c,
        })
        .collect();
    let many = |axes: Vec<AxisMap>| {
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: grid.clone(),
            axes,
        })
    };
    let d = DType::F64;
    vec![
        (
            "offset".into(),
            ins(
                s,
                d,
                one(
                    vec![10, 20],
                    vec![4, 6],
                    vec![ax(11, Some(0), 1), ax(21, Some(1), 1)],
                ),
            ),
        ),
        (
            "transposed".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![5, 3],
                    vec![ax(0, Some(1), 1), ax(0, Some(0), 1)],
                ),
            ),
        ),
        (
            "reversed".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![3, 5],
                    vec![ax(0, Some(0), 1), ax(4, Some(1), -1)],
                ),
            ),
        ),
        (
            "broadcast".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0],
                    vec![1, 5],
                    vec![ax(0, None, 0), ax(0, Some(1), 1)],
                ),
            ),
        ),
        (
            "index_axis".into(),
            ins(
                s,
                d,
                one(
                    vec![0, 0, 0],
                    vec![3, 4, 5],
                    vec![ax(0, Some(0), 1), ax(2, None, 0), ax(0, Some(1), 1)],
                ),
            ),
        ),
        (
            "grid".into(),
            ins(s, d, many(vec![ax(2, Some(0), 1), ax(3, Some(1), 1)])),
        ),
        (
            "grid_strided_reversed".into(),
            ins(s, d, many(vec![ax(5, Some(0), -2), ax(1, Some(1), 2)])),
        ),
        (
            "grid_transposed".into(),
            ins(&[5, 3], d, many(vec![ax(1, Some(1), 2), ax(2, Some(0), 1)])),
        ),
        (
            "grid_broadcast".into(),
            ins(s, d, many(vec![ax(4, None, 0), ax(1, Some(1), 2)])),
        ),
    ]
}

pub(super) fn chunks(out: &mut Vec<Case>) {
    for (name, leaf) in chunk_reads() {
        out.push(Case {
            label: format!("chunks/{name}"),
            kernel: kernel(vec![leaf], None),
        });
    }
}
