//! The fused-kernel IR: a small SSA program evaluated over one output chunk.
//!
//! A [`FusedKernel`] describes an elementwise expression (with broadcasting, slicing and
//! transposes already pushed down into its leaves) and, optionally, a reduction at its end.
//! Executors walk the chunk in cache-sized blocks, evaluating every instruction for one
//! block before moving on, so intermediates never reach main memory.

use crate::dtype::{DType, Scalar};
use crate::error::KernelError;
use crate::tensor::checked_numel;
use serde::{Deserialize, Serialize};

/// Elementwise functions of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    /// `-x` (numeric types).
    Neg,
    /// `|x|` (numeric types).
    Abs,
    /// Square root (floats).
    Sqrt,
    /// `e^x` (floats).
    Exp,
    /// Natural logarithm (floats).
    Log,
    /// Sine (floats).
    Sin,
    /// Cosine (floats).
    Cos,
    /// Logical not (bool).
    Not,
    /// Largest integer not above `x` (floats).
    Floor,
    /// Smallest integer not below `x` (floats).
    Ceil,
    /// Integer part, rounding toward zero (floats).
    Trunc,
    /// Nearest integer, halves to even (floats).
    Rint,
    /// Tangent (floats).
    Tan,
    /// Inverse sine (floats).
    Arcsin,
    /// Inverse cosine (floats).
    Arccos,
    /// Inverse tangent (floats).
    Arctan,
    /// Hyperbolic sine (floats).
    Sinh,
    /// Hyperbolic cosine (floats).
    Cosh,
    /// Hyperbolic tangent (floats).
    Tanh,
    /// Base-2 logarithm (floats).
    Log2,
    /// Base-10 logarithm (floats).
    Log10,
    /// `ln(1 + x)`, accurate near 0 (floats).
    Log1p,
    /// `e^x - 1`, accurate near 0 (floats).
    Expm1,
    /// `2^x` (floats).
    Exp2,
    /// Inverse hyperbolic sine (floats).
    Arcsinh,
    /// Inverse hyperbolic cosine (floats).
    Arccosh,
    /// Inverse hyperbolic tangent (floats).
    Arctanh,
    /// Bitwise not (integers).
    BitNot,
    /// The real part (complex types; a real type is its own real part).
    Real,
    /// The imaginary part (complex types).
    Imag,
    /// The complex conjugate (complex types).
    Conj,
}

impl UnaryOp {
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "negative",
            UnaryOp::Abs => "absolute",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Not => "logical_not",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Rint => "rint",
            UnaryOp::Tan => "tan",
            UnaryOp::Arcsin => "arcsin",
            UnaryOp::Arccos => "arccos",
            UnaryOp::Arctan => "arctan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Arcsinh => "arcsinh",
            UnaryOp::Arccosh => "arccosh",
            UnaryOp::Arctanh => "arctanh",
            UnaryOp::BitNot => "invert",
            UnaryOp::Real => "real",
            UnaryOp::Imag => "imag",
            UnaryOp::Conj => "conjugate",
        }
    }

    /// True for the functions that take and return floats (integers are cast to `f64`).
    pub fn is_float_fn(self) -> bool {
        matches!(
            self,
            UnaryOp::Sqrt
                | UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tan
                | UnaryOp::Arcsin
                | UnaryOp::Arccos
                | UnaryOp::Arctan
                | UnaryOp::Sinh
                | UnaryOp::Cosh
                | UnaryOp::Tanh
                | UnaryOp::Log2
                | UnaryOp::Log10
                | UnaryOp::Log1p
                | UnaryOp::Expm1
                | UnaryOp::Exp2
                | UnaryOp::Arcsinh
                | UnaryOp::Arccosh
                | UnaryOp::Arctanh
        )
    }

    /// True for the roundings (`floor ceil trunc rint`), which keep integer dtypes as they are.
    pub fn is_rounding(self) -> bool {
        matches!(
            self,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Rint
        )
    }
}

/// Elementwise functions of two operands of the same dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (floats: the graph casts integers first)
    Div,
    /// `a ** b`
    Pow,
    /// Elementwise maximum (NaN propagates)
    Maximum,
    /// Elementwise minimum (NaN propagates)
    Minimum,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// Logical and (bool)
    And,
    /// Logical or (bool)
    Or,
    /// `a // b`, rounding toward minus infinity (integers by zero give 0, as in NumPy)
    FloorDiv,
    /// `a % b` with the sign of `b` (NumPy's `remainder`; integers by zero give 0)
    Remainder,
    /// C's `fmod`: the remainder with the sign of `a` (integers by zero give 0)
    Fmod,
    /// Bitwise and (integers)
    BitAnd,
    /// Bitwise or (integers)
    BitOr,
    /// Bitwise exclusive or (integers)
    BitXor,
    /// `a << b` (integers; shifts past the width or negative give 0, as in NumPy)
    Shl,
    /// `a >> b`, arithmetic (integers; shifts past the width give 0, or -1 for negative `a`)
    Shr,
    /// `atan2(a, b)`: the angle of the point `(b, a)` (floats)
    Arctan2,
    /// `sqrt(a² + b²)` without undue overflow (floats)
    Hypot,
    /// The magnitude of `a` with the sign bit of `b` (floats)
    Copysign,
    /// The next representable value after `a` towards `b` (`b` if equal, NaN if either is
    /// NaN; floats, C's `nextafter`)
    Nextafter,
}

impl BinaryOp {
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "subtract",
            BinaryOp::Mul => "multiply",
            BinaryOp::Div => "true_divide",
            BinaryOp::Pow => "power",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Eq => "equal",
            BinaryOp::Ne => "not_equal",
            BinaryOp::Lt => "less",
            BinaryOp::Le => "less_equal",
            BinaryOp::Gt => "greater",
            BinaryOp::Ge => "greater_equal",
            BinaryOp::And => "logical_and",
            BinaryOp::Or => "logical_or",
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::Remainder => "remainder",
            BinaryOp::Fmod => "fmod",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
            BinaryOp::Shl => "left_shift",
            BinaryOp::Shr => "right_shift",
            BinaryOp::Arctan2 => "arctan2",
            BinaryOp::Hypot => "hypot",
            BinaryOp::Copysign => "copysign",
            BinaryOp::Nextafter => "nextafter",
        }
    }

    /// True for the comparisons, which return bool.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    /// True for the logical operations, which take and return bool.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }

    /// True for the bitwise operations and shifts, which take and return integers.
    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::Shl | BinaryOp::Shr
        )
    }
}

/// Reductions over one or more axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReduceOp {
    /// Sum (integers and bool accumulate in `i64`).
    Sum,
    /// Product (integers and bool accumulate in `i64`).
    Prod,
    /// Minimum (NaN propagates).
    Min,
    /// Maximum (NaN propagates).
    Max,
    /// Arithmetic mean.
    Mean,
    /// Variance with `ddof` delta degrees of freedom.
    Var {
        /// Delta degrees of freedom (NumPy's default is 0).
        ddof: u32,
    },
    /// Standard deviation with `ddof` delta degrees of freedom.
    Std {
        /// Delta degrees of freedom (NumPy's default is 0).
        ddof: u32,
    },
    /// True when every element is non-zero.
    All,
    /// True when some element is non-zero.
    Any,
    /// Number of non-zero elements.
    CountNonzero,
    /// Index of the first minimum (of the first NaN, if any).
    ArgMin,
    /// Index of the first maximum (of the first NaN, if any).
    ArgMax,
}

impl ReduceOp {
    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Mean => "mean",
            ReduceOp::Var { .. } => "var",
            ReduceOp::Std { .. } => "std",
            ReduceOp::All => "all",
            ReduceOp::Any => "any",
            ReduceOp::CountNonzero => "count_nonzero",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::ArgMax => "argmax",
        }
    }

    /// The dtype of the reduction's result for an input of `dtype`.
    pub fn result_dtype(self, dtype: DType) -> DType {
        match self {
            // The array API's (and NumPy's): signed in int64, unsigned in uint64.
            ReduceOp::Sum | ReduceOp::Prod => match dtype {
                d if d.is_inexact() => dtype,
                d if d.is_unsigned() => DType::U64,
                _ => DType::I64,
            },
            ReduceOp::Min | ReduceOp::Max => dtype,
            ReduceOp::Mean | ReduceOp::Var { .. } | ReduceOp::Std { .. } => dtype.float_result(),
            ReduceOp::All | ReduceOp::Any => DType::Bool,
            ReduceOp::CountNonzero | ReduceOp::ArgMin | ReduceOp::ArgMax => DType::I64,
        }
    }

    /// True for the reductions that can run inside a fused expression (no finalize step).
    pub fn is_simple(self) -> bool {
        matches!(
            self,
            ReduceOp::Sum
                | ReduceOp::Prod
                | ReduceOp::Min
                | ReduceOp::Max
                | ReduceOp::All
                | ReduceOp::Any
                | ReduceOp::CountNonzero
        )
    }
}

/// Counter-based random distributions. Element `i` of a random tensor is a pure function of
/// `(seed, i)`: see [`crate::cpu::philox`] for the exact stream definition.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Distribution {
    /// Uniform doubles in `[low, high)` from 53 random bits.
    Uniform {
        /// Lower bound (inclusive).
        low: f64,
        /// Upper bound (exclusive).
        high: f64,
    },
    /// Normal doubles by Box-Muller.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
    },
    /// Uniform integers in `[low, high)`.
    RandInt {
        /// Lower bound (inclusive).
        low: i64,
        /// Upper bound (exclusive); greater than `low`.
        high: i64,
    },
}

/// Maps a leaf's local multi-index to a flat index of a generated source:
/// `flat = base + Σ_k m[k] * strides[k]` (a stride of 0 broadcasts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlatMap {
    /// Flat index of the local origin.
    pub base: i64,
    /// Flat step per local axis.
    pub strides: Vec<i64>,
}

/// How one axis of a materialized source is indexed from the leaf's local multi-index:
/// `src = offset + step * m[local_axis]`, or just `offset` when `local_axis` is `None`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AxisMap {
    /// Source index at local index 0.
    pub offset: i64,
    /// Which local axis drives this source axis (`None`: fixed, e.g. broadcast or an index).
    pub local_axis: Option<usize>,
    /// Source step per local step (negative for reversed slices).
    pub step: i64,
}

/// One chunk of a materialized source handed to a kernel: its global box and input slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceChunk {
    /// Global start of the chunk, per axis.
    pub start: Vec<usize>,
    /// Chunk shape.
    pub shape: Vec<usize>,
    /// Index into the kernel's input list.
    pub input: usize,
}

/// Where a leaf's values come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LeafSource {
    /// A constant.
    Const(Scalar),
    /// A counter-based random stream (element = f(seed, flat index)).
    Random {
        /// The distribution.
        dist: Distribution,
        /// The generator's seed (Philox key).
        seed: u64,
        /// Which stream of that generator (successive draws of one generator differ).
        stream: u64,
        /// Local multi-index -> stream index.
        map: FlatMap,
    },
    /// `start + step * flat` (arange, linspace), computed in the type of `start` (`I64` or
    /// `F64`) and cast to the leaf's dtype.
    Ramp {
        /// Value at flat index 0 (`I64` or `F64`; `step` has the same type).
        start: Scalar,
        /// Increment per flat index.
        step: Scalar,
        /// `(flat, value)`: the element at this flat index is exactly `value` (linspace's end).
        pin: Option<(i64, f64)>,
        /// Local multi-index -> flat index.
        map: FlatMap,
    },
    /// Values gathered from chunks of a materialized tensor.
    Chunks {
        /// The chunks this task received (those overlapping what the leaf reads).
        chunks: Vec<SourceChunk>,
        /// Local multi-index -> source multi-index, one entry per source axis.
        axes: Vec<AxisMap>,
    },
}

/// What an instruction computes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum InstrKind {
    /// Values from outside the expression.
    Leaf(LeafSource),
    /// `op(x)`.
    Unary {
        /// The function.
        op: UnaryOp,
        /// Operand instruction.
        x: usize,
    },
    /// `op(a, b)`; both operands have the same shape and dtype.
    Binary {
        /// The function.
        op: BinaryOp,
        /// Left operand instruction.
        a: usize,
        /// Right operand instruction.
        b: usize,
    },
    /// `cond ? a : b`.
    Where {
        /// Bool condition instruction.
        cond: usize,
        /// Value where true.
        a: usize,
        /// Value where false.
        b: usize,
    },
    /// `x.astype(dtype)` where `dtype` is the instruction's dtype.
    Cast {
        /// Operand instruction.
        x: usize,
    },
    /// Reduces each run of `k` consecutive elements of `x` (its trailing axes) to one.
    ReduceTrailing {
        /// A simple reduction ([`ReduceOp::is_simple`]).
        op: ReduceOp,
        /// Operand instruction; its element count is `k` times this instruction's.
        x: usize,
        /// Elements per output element.
        k: usize,
    },
}

/// One SSA instruction: its local shape, dtype and computation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instr {
    /// Shape over which it is evaluated (the root's shape, or that times reduced trailing axes).
    pub shape: Vec<usize>,
    /// Element type of its values.
    pub dtype: DType,
    /// What it computes.
    pub kind: InstrKind,
}

/// The reduction at the end of a fused kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChunkReduce {
    /// The reduction.
    pub op: ReduceOp,
    /// Reduced axes of the root's shape (sorted, distinct).
    pub axes: Vec<usize>,
    /// Global start of this chunk along each root axis (for arg-reductions).
    pub global_start: Vec<usize>,
    /// Global shape of the reduced tensor (for arg-reductions' flat indices).
    pub global_shape: Vec<usize>,
    /// When set, the chunk is the reduction's final tensor of this shape, not a partial:
    /// the planner sets it where this chunk's partial is the only one of its output chunk,
    /// so that no task is spent combining one partial (as [`CombineSpec::finalize`]).
    pub finalize: Option<Vec<usize>>,
}

/// An elementwise program over one chunk, with an optional reduction at its end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FusedKernel {
    /// Instructions in evaluation order; operands refer to earlier instructions.
    pub instrs: Vec<Instr>,
    /// The instruction whose values are the result.
    pub root: usize,
    /// Reduce the root's values instead of returning them.
    pub reduce: Option<ChunkReduce>,
}

/// Merges partial reductions (and finishes them when `finalize` is set).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CombineSpec {
    /// The reduction whose partials are merged.
    pub op: ReduceOp,
    /// The dtype of the values that were reduced.
    pub input_dtype: DType,
    /// When set, produce the final tensor with this shape instead of a partial.
    pub finalize: Option<Vec<usize>>,
}

/// Gathers a C-order reshape of a materialized tensor into one output chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReshapeSpec {
    /// Shape of the source tensor.
    pub src_shape: Vec<usize>,
    /// The source chunks this task received.
    pub chunks: Vec<SourceChunk>,
    /// Shape of the reshaped tensor.
    pub dst_shape: Vec<usize>,
    /// Global start of the output chunk.
    pub out_start: Vec<usize>,
    /// Shape of the output chunk.
    pub out_shape: Vec<usize>,
}

impl FusedKernel {
    /// The root instruction and its element count: every evaluator's first check (the
    /// root exists and its chunk is not empty).
    pub fn root_instr(&self) -> Result<(&Instr, usize), KernelError> {
        let root = self.instrs.get(self.root).ok_or_else(|| {
            KernelError::BadInput(format!(
                "root {} of {} instructions",
                self.root,
                self.instrs.len()
            ))
        })?;
        let root_len = checked_numel(&root.shape)?;
        if root_len == 0 {
            return Err(KernelError::BadInput("empty chunk".into()));
        }
        Ok((root, root_len))
    }
}

impl Distribution {
    /// The dtype of the values drawn: `i64` for `RandInt` (whose bounds must satisfy
    /// `low < high`), `f64` otherwise.
    pub fn dtype(&self) -> Result<DType, KernelError> {
        match *self {
            Distribution::RandInt { low, high } if high > low => Ok(DType::I64),
            Distribution::RandInt { low, high } => Err(KernelError::InvalidValue(format!(
                "randint needs low < high, got [{low}, {high})"
            ))),
            _ => Ok(DType::F64),
        }
    }
}
