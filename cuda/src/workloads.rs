//! The fused kernels of two benchmark workloads, written as one chunk of the whole
//! problem, for measuring and checking generated code on a device without the runtime
//! around it (`examples/gpu_bench.rs`, the GPU suite). The runtime plans the same
//! expressions chunk by chunk.

use tessera_kernels::dtype::{DType, Scalar};
use tessera_kernels::expr::{
    BinaryOp, ChunkReduce, Distribution, FlatMap, FusedKernel, Instr, InstrKind, LeafSource,
    ReduceOp, UnaryOp,
};
use tessera_kernels::linalg::{LinalgOp, MatOperand};
use tessera_kernels::tensor::c_strides;

fn instr(shape: &[usize], dtype: DType, kind: InstrKind) -> Instr {
    Instr {
        shape: shape.to_vec(),
        dtype,
        kind,
    }
}

/// Uniform `f64` values in `[low, high)` of `shape` from stream 0 of generator `seed`.
pub fn uniform(shape: &[usize], low: f64, high: f64, seed: u64) -> Instr {
    instr(
        shape,
        DType::F64,
        InstrKind::Leaf(LeafSource::Random {
            dist: Distribution::Uniform { low, high },
            seed,
            stream: 0,
            map: FlatMap {
                base: 0,
                strides: c_strides(shape).into_iter().map(|s| s as i64).collect(),
            },
        }),
    )
}

/// A reduction of the root over every axis of `shape`.
pub fn reduce_all(shape: &[usize], op: ReduceOp) -> ChunkReduce {
    ChunkReduce {
        op,
        axes: (0..shape.len()).collect(),
        global_start: vec![0; shape.len()],
        global_shape: shape.to_vec(),
        finalize: None,
    }
}

/// Monte Carlo pi over `points` points (the expression of `examples/monte_carlo_pi.rs`):
/// the number of rows of a `(points, 2)` uniform `[-1, 1)` sample whose norm is below 1.
/// Its partial is an `i64` sum: pi ~ 4 * sum / points.
pub fn pi(points: usize, seed: u64) -> FusedKernel {
    let (pairs, rows) = ([points, 2], [points]);
    let instrs = vec![
        uniform(&pairs, -1.0, 1.0, seed),
        instr(
            &pairs,
            DType::F64,
            InstrKind::Binary {
                op: BinaryOp::Mul,
                a: 0,
                b: 0,
            },
        ),
        instr(
            &rows,
            DType::F64,
            InstrKind::ReduceTrailing {
                op: ReduceOp::Sum,
                x: 1,
                k: 2,
            },
        ),
        instr(
            &rows,
            DType::F64,
            InstrKind::Unary {
                op: UnaryOp::Sqrt,
                x: 2,
            },
        ),
        instr(
            &rows,
            DType::F64,
            InstrKind::Leaf(LeafSource::Const(Scalar::F64(1.0))),
        ),
        instr(
            &rows,
            DType::Bool,
            InstrKind::Binary {
                op: BinaryOp::Lt,
                a: 3,
                b: 4,
            },
        ),
    ];
    FusedKernel {
        root: 5,
        instrs,
        reduce: Some(reduce_all(&rows, ReduceOp::Sum)),
    }
}

/// `(sin(x)**2 + cos(x)**2 == 1).all()` over an `n × n` uniform `[0, 1)` sample (the
/// peers' `sincos` workload).
pub fn sincos(n: usize, seed: u64) -> FusedKernel {
    let shape = [n, n];
    let f = |kind| instr(&shape, DType::F64, kind);
    let unary = |op, x| f(InstrKind::Unary { op, x });
    let binary = |op, a, b| f(InstrKind::Binary { op, a, b });
    let instrs = vec![
        uniform(&shape, 0.0, 1.0, seed),
        unary(UnaryOp::Sin, 0),
        binary(BinaryOp::Mul, 1, 1),
        unary(UnaryOp::Cos, 0),
        binary(BinaryOp::Mul, 3, 3),
        binary(BinaryOp::Add, 2, 4),
        f(InstrKind::Leaf(LeafSource::Const(Scalar::F64(1.0)))),
        instr(
            &shape,
            DType::Bool,
            InstrKind::Binary {
                op: BinaryOp::Eq,
                a: 5,
                b: 6,
            },
        ),
    ];
    FusedKernel {
        root: 7,
        instrs,
        reduce: Some(reduce_all(&shape, ReduceOp::All)),
    }
}

/// `A @ B` of two `n × n` uniform `[0, 1)` matrices generated where the product runs
/// (seeds `seed` and `seed + 1`).
pub fn matmul(n: usize, seed: u64) -> LinalgOp {
    let operand = |seed| {
        MatOperand::Fused(Box::new(FusedKernel {
            root: 0,
            instrs: vec![uniform(&[n, n], 0.0, 1.0, seed)],
            reduce: None,
        }))
    };
    LinalgOp::MatMul {
        pairs: vec![(operand(seed), operand(seed.wrapping_add(1)))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_kernels::{cpu, ChunkData, ChunkOp};

    fn count(k: FusedKernel) -> i64 {
        match cpu::execute(&ChunkOp::Fused(k), &[]) {
            Ok(ChunkData::Partial(p)) => p.parts[0].data().get(0).unwrap().as_f64() as i64,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_workload_kernels_compute_their_expressions_on_the_cpu() {
        // pi: about pi/4 of the points fall inside the circle.
        let inside = count(pi(100_000, 42));
        let estimate = 4.0 * inside as f64 / 100_000.0;
        assert!((estimate - std::f64::consts::PI).abs() < 0.02, "{estimate}");
        // sincos: rounding makes some sum differ from 1, so `all` is false.
        match cpu::execute(&ChunkOp::Fused(sincos(300, 42)), &[]) {
            Ok(ChunkData::Partial(p)) => {
                assert_eq!(
                    p.parts[0].data(),
                    &tessera_kernels::Buffer::Bool(vec![false])
                )
            }
            other => panic!("{other:?}"),
        }
        // matmul: every entry of a product of uniform [0, 1) matrices is about n / 4.
        match cpu::execute(&ChunkOp::Linalg(matmul(64, 42)), &[]) {
            Ok(ChunkData::Tensor(t)) => {
                assert_eq!(t.shape(), &[64, 64]);
                let mean = t.to_f64_vec().iter().sum::<f64>() / 4096.0;
                assert!((mean - 16.0).abs() < 1.0, "{mean}");
            }
            other => panic!("{other:?}"),
        }
    }
}
