//! Hand-built fused kernels covering every op, dtype, leaf source, distribution and
//! reduction the CUDA generator supports, and IR it must refuse (tests only).
//!
//! [`cases`] walks the parts: elementwise ops and constants (`elementwise`), leaf sources
//! (`leaves`), the NumPy operators of issue 13 over edge values and in fused chains
//! (`numpy_ops`), run folds and trailing reductions (`reductions`); [`refused`] lists IR
//! the generator must reject; `values` fills the inputs.

mod elementwise;
mod leaves;
mod numpy_ops;
mod reductions;
mod refused;
mod values;

use tessera_kernels::dtype::{DType, Scalar};
use tessera_kernels::expr::{
    AxisMap, BinaryOp, ChunkReduce, Distribution, FlatMap, FusedKernel, Instr, InstrKind,
    LeafSource, ReduceOp, SourceChunk, UnaryOp,
};
use tessera_kernels::KernelError;

/// Every dtype.
pub const DTYPES: [DType; 6] = [
    DType::Bool,
    DType::U8,
    DType::I32,
    DType::I64,
    DType::F32,
    DType::F64,
];

/// Every reduction, two of them with `ddof`.
pub const REDUCE_OPS: [ReduceOp; 13] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Min,
    ReduceOp::Max,
    ReduceOp::Mean,
    ReduceOp::Var { ddof: 0 },
    ReduceOp::Std { ddof: 1 },
    ReduceOp::All,
    ReduceOp::Any,
    ReduceOp::CountNonzero,
    ReduceOp::ArgMin,
    ReduceOp::ArgMax,
    ReduceOp::Var { ddof: 1 },
];

/// A kernel the generator must accept.
pub struct Case {
    /// What it covers.
    pub label: String,
    /// The IR.
    pub kernel: FusedKernel,
}

/// A kernel the generator must refuse, with the error variant (the CPU's for the same IR).
pub struct Refused {
    /// What it covers.
    pub label: String,
    /// The IR.
    pub kernel: FusedKernel,
    /// An error of the expected variant.
    pub error: KernelError,
}

/// The shape most cases use: two axes, neither contiguous with a broadcast.
pub const SHAPE: [usize; 2] = [3, 5];

fn ins(shape: &[usize], dtype: DType, kind: InstrKind) -> Instr {
    Instr {
        shape: shape.to_vec(),
        dtype,
        kind,
    }
}

fn identity_axes(rank: usize) -> Vec<AxisMap> {
    (0..rank)
        .map(|d| AxisMap {
            offset: 0,
            local_axis: Some(d),
            step: 1,
        })
        .collect()
}

/// A leaf reading all of input `slot`, a chunk of `shape` at the origin.
pub fn chunk_leaf(shape: &[usize], dtype: DType, slot: usize) -> Instr {
    ins(
        shape,
        dtype,
        InstrKind::Leaf(LeafSource::Chunks {
            chunks: vec![SourceChunk {
                start: vec![0; shape.len()],
                shape: shape.to_vec(),
                input: slot,
            }],
            axes: identity_axes(shape.len()),
        }),
    )
}

fn kernel(instrs: Vec<Instr>, reduce: Option<ChunkReduce>) -> FusedKernel {
    FusedKernel {
        root: instrs.len() - 1,
        instrs,
        reduce,
    }
}

/// `kernel` with its reduction finished by the kernel's task (`ChunkReduce::finalize`: the
/// root's shape without the reduced axes), as the planner makes a one-chunk reduction;
/// `None` for a kernel without a reduction.
pub fn finished(kernel: &FusedKernel) -> Option<FusedKernel> {
    let root = kernel.instrs.get(kernel.root)?;
    let mut done = kernel.clone();
    let reduce = done.reduce.as_mut()?;
    let kept = root.shape.iter().enumerate();
    reduce.finalize = Some(
        kept.filter(|(d, _)| !reduce.axes.contains(d))
            .map(|(_, &n)| n)
            .collect(),
    );
    Some(done)
}

fn all_axes(shape: &[usize], op: ReduceOp) -> ChunkReduce {
    ChunkReduce {
        op,
        axes: (0..shape.len()).collect(),
        global_start: vec![0; shape.len()],
        global_shape: shape.to_vec(),
        finalize: None,
    }
}

fn c_strides(shape: &[usize]) -> Vec<i64> {
    tessera_kernels::tensor::c_strides(shape)
        .into_iter()
        .map(|s| s as i64)
        .collect()
}

/// A label-friendly name (`var(ddof=1)`).
pub fn op_label(op: ReduceOp) -> String {
    match op {
        ReduceOp::Var { ddof } | ReduceOp::Std { ddof } => format!("{}{ddof}", op.name()),
        _ => op.name().to_string(),
    }
}

/// Every kernel the generator must accept.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    elementwise::elementwise(&mut out);
    elementwise::constants(&mut out);
    leaves::random(&mut out);
    leaves::random_pairs(&mut out);
    leaves::ramps(&mut out);
    leaves::chunks(&mut out);
    numpy_ops::edges(&mut out);
    numpy_ops::compositions(&mut out);
    reductions::trailing(&mut out);
    reductions::reductions(&mut out);
    out
}

pub use refused::refused;
pub use values::inputs_for;
