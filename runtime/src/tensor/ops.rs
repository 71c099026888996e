//! Elementwise operations: arithmetic, comparisons, logic, math functions, `where` and
//! `astype`, with NumPy's broadcasting and type promotion.

use super::node::{Node, NodeKind};
use super::Tensor;
use crate::error::{Error, Result};
use std::sync::Arc;
use tessera_kernels::{BinaryOp, DType, Scalar, UnaryOp, C128, C64};

/// The right-hand side of an elementwise operation: a tensor or a Python-style scalar.
///
/// Scalars follow NumPy 2 (NEP 50): they take the tensor's dtype where it can hold them
/// (`u8 + 1` stays `u8`, `f32 * 2.0` stays `f32`), and a float scalar with an integer
/// tensor gives `float64`.
#[derive(Clone, Debug)]
pub enum Operand {
    /// A tensor operand.
    Tensor(Tensor),
    /// A scalar operand.
    Scalar(Scalar),
}

impl From<&Tensor> for Operand {
    fn from(t: &Tensor) -> Self {
        Operand::Tensor(t.clone())
    }
}

impl From<Tensor> for Operand {
    fn from(t: Tensor) -> Self {
        Operand::Tensor(t)
    }
}

macro_rules! operand_from_scalar {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand {
            fn from(v: $t) -> Self {
                Operand::Scalar(Scalar::from(v))
            }
        }
    )*};
}
operand_from_scalar!(bool, u8, i32, i64, f32, f64, C64, C128, Scalar);

/// The shape two shapes broadcast to.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| {
        if i < n - s.len() {
            1
        } else {
            s[i - (n - s.len())]
        }
    };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => Err(Error::Shape(format!(
                "operands could not be broadcast together with shapes {a:?} and {b:?} (axis {i}: {x} vs {y})"
            ))),
        })
        .collect()
}

/// `x` as a node of `dtype` (a cast node unless it already is).
pub(crate) fn cast_node(x: &Arc<Node>, dtype: DType) -> Arc<Node> {
    if x.dtype == dtype {
        x.clone()
    } else {
        Node::new(x.shape.clone(), dtype, NodeKind::Cast(x.clone()))
    }
}

/// The dtype a scalar takes next to a tensor of `dtype` (NEP 50 weak scalars).
fn scalar_dtype(tensor: DType, s: Scalar) -> DType {
    match (tensor, s.dtype()) {
        (t, DType::Bool) => t,
        (t, DType::F32 | DType::F64) if t.is_inexact() => t,
        (_, DType::F32 | DType::F64) => DType::F64,
        // A complex scalar beside a float32 tensor is complex64, as in NumPy.
        (t, DType::C64 | DType::C128) => t.complex(),
        (DType::Bool, _) => DType::I64,
        (t, _) => t,
    }
}

fn scalar_node(s: Scalar, dtype: DType) -> Arc<Node> {
    Node::new(Vec::new(), dtype, NodeKind::Full(s.cast(dtype)))
}

fn operand_node(lhs: &Arc<Node>, rhs: Operand) -> Result<Arc<Node>> {
    match rhs {
        Operand::Tensor(t) => t.node().cloned(),
        Operand::Scalar(s) => Ok(scalar_node(s, scalar_dtype(lhs.dtype, s))),
    }
}

fn unsupported(op: &str, dtype: DType) -> Error {
    Error::UnsupportedDType {
        op: op.to_string(),
        dtype,
    }
}

pub(crate) fn binary_nodes(op: BinaryOp, a: &Arc<Node>, b: &Arc<Node>) -> Result<Arc<Node>> {
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let common = DType::promote(a.dtype, b.dtype);
    let (operand, result) = match op {
        BinaryOp::And | BinaryOp::Or => {
            if let Some(bad) = [a.dtype, b.dtype].into_iter().find(|&d| d != DType::Bool) {
                return Err(unsupported(op.name(), bad));
            }
            (DType::Bool, DType::Bool)
        }
        _ if op.is_bitwise() => {
            if let Some(bad) = [a.dtype, b.dtype].into_iter().find(|d| d.is_inexact()) {
                return Err(unsupported(op.name(), bad));
            }
            if common == DType::Bool {
                // On bools NumPy's bitwise operators are the logical ones.
                let logical = match op {
                    BinaryOp::BitAnd => BinaryOp::And,
                    BinaryOp::BitOr => BinaryOp::Or,
                    BinaryOp::BitXor => BinaryOp::Ne,
                    _ => return Err(unsupported(op.name(), DType::Bool)),
                };
                return binary_nodes(logical, a, b);
            }
            (common, common)
        }
        _ if op.is_comparison() => (common, DType::Bool),
        // Defined on real values only (NumPy refuses them on complex ones too).
        BinaryOp::FloorDiv
        | BinaryOp::Remainder
        | BinaryOp::Fmod
        | BinaryOp::Arctan2
        | BinaryOp::Hypot
        | BinaryOp::Copysign
        | BinaryOp::Nextafter
            if common.is_complex() =>
        {
            return Err(unsupported(op.name(), common))
        }
        BinaryOp::Div
        | BinaryOp::Arctan2
        | BinaryOp::Hypot
        | BinaryOp::Copysign
        | BinaryOp::Nextafter => (common.float_result(), common.float_result()),
        BinaryOp::Maximum | BinaryOp::Minimum => (common, common),
        _ if common == DType::Bool => return Err(unsupported(op.name(), DType::Bool)),
        _ => (common, common),
    };
    Ok(Node::new(
        shape,
        result,
        NodeKind::Binary(op, cast_node(a, operand), cast_node(b, operand)),
    ))
}

impl Tensor {
    pub(super) fn binary(&self, op: BinaryOp, rhs: impl Into<Operand>) -> Tensor {
        let built = self.node().and_then(|a| {
            let b = operand_node(a, rhs.into())?;
            binary_nodes(op, a, &b)
        });
        match built {
            Ok(n) => Tensor::from_node(n),
            Err(e) => Tensor::failed(e),
        }
    }

    /// A scalar or tensor on the left: `lhs op self`.
    fn binary_rev(&self, op: BinaryOp, lhs: Scalar) -> Tensor {
        let built = self.node().and_then(|b| {
            let a = scalar_node(lhs, scalar_dtype(b.dtype, lhs));
            binary_nodes(op, &a, b)
        });
        match built {
            Ok(n) => Tensor::from_node(n),
            Err(e) => Tensor::failed(e),
        }
    }

    pub(super) fn unary(&self, op: UnaryOp) -> Tensor {
        let built = self.node().and_then(|x| {
            let complex = x.dtype.is_complex();
            match op {
                // Of a real value: itself, or zeros of its dtype (NumPy's real, imag, conj).
                UnaryOp::Real | UnaryOp::Conj if !complex => return Ok(x.clone()),
                UnaryOp::Imag if !complex => {
                    let zero = NodeKind::Full(Scalar::Bool(false).cast(x.dtype));
                    return Ok(Node::new(x.shape.clone(), x.dtype, zero));
                }
                UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::BitNot if complex => {
                    return Err(unsupported(op.name(), x.dtype))
                }
                _ => {}
            }
            // abs, real and imag of a complex value are its parts' type.
            let output = |input: DType| match op {
                UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag => input.real(),
                _ => input,
            };
            let input = match op {
                _ if op.is_float_fn() => x.dtype.float_result(),
                UnaryOp::Not => DType::Bool,
                UnaryOp::BitNot if x.dtype.is_float() => {
                    return Err(unsupported(op.name(), x.dtype))
                }
                UnaryOp::BitNot => x.dtype,
                _ if x.dtype == DType::Bool => return Err(unsupported(op.name(), DType::Bool)),
                _ => x.dtype,
            };
            Ok(Node::new(
                x.shape.clone(),
                output(input),
                NodeKind::Unary(op, cast_node(x, input)),
            ))
        });
        match built {
            Ok(n) => Tensor::from_node(n),
            Err(e) => Tensor::failed(e),
        }
    }

    /// `self + rhs`.
    pub fn add(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Add, rhs)
    }
    /// `self - rhs`.
    pub fn sub(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Sub, rhs)
    }
    /// `self * rhs`.
    pub fn mul(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Mul, rhs)
    }
    /// True division `self / rhs` (integers give `float64`).
    pub fn div(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Div, rhs)
    }
    /// `self ** rhs` (integers to negative integer powers fail when executed, as in NumPy).
    /// A scalar exponent of 2 becomes `self * self`, which gives the same values faster.
    pub fn pow(&self, rhs: impl Into<Operand>) -> Tensor {
        match rhs.into() {
            Operand::Scalar(s)
                if s.as_f64() == 2.0
                    && s.dtype() != DType::Bool
                    && self.dtype() != Ok(DType::Bool) =>
            {
                // An integer tensor to a float power is a float, as `x ** 2.0` is in NumPy.
                let base = match self.dtype() {
                    Ok(d) if s.dtype().is_float() && !d.is_float() => self.astype(DType::F64),
                    _ => self.clone(),
                };
                base.binary(BinaryOp::Mul, &base)
            }
            other => self.binary(BinaryOp::Pow, other),
        }
    }
    /// Elementwise maximum (NaN propagates).
    pub fn maximum(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Maximum, rhs)
    }
    /// Elementwise minimum (NaN propagates).
    pub fn minimum(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Minimum, rhs)
    }
    /// `self == rhs`.
    pub fn eq(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Eq, rhs)
    }
    /// `self != rhs`.
    pub fn ne(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Ne, rhs)
    }
    /// `self < rhs`.
    pub fn lt(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Lt, rhs)
    }
    /// `self <= rhs`.
    pub fn le(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Le, rhs)
    }
    /// `self > rhs`.
    pub fn gt(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Gt, rhs)
    }
    /// `self >= rhs`.
    pub fn ge(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Ge, rhs)
    }
    /// Logical and of two bool tensors.
    pub fn logical_and(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::And, rhs)
    }
    /// Logical or of two bool tensors.
    pub fn logical_or(&self, rhs: impl Into<Operand>) -> Tensor {
        self.binary(BinaryOp::Or, rhs)
    }
    /// Logical not (non-bool values: true where zero).
    pub fn logical_not(&self) -> Tensor {
        self.unary(UnaryOp::Not)
    }
    /// `-self`.
    pub fn neg(&self) -> Tensor {
        self.unary(UnaryOp::Neg)
    }
    /// `|self|` (of a complex value, its modulus, of the parts' type).
    pub fn abs(&self) -> Tensor {
        self.unary(UnaryOp::Abs)
    }
    /// The real part (a real tensor is its own real part).
    pub fn real(&self) -> Tensor {
        self.unary(UnaryOp::Real)
    }
    /// The imaginary part (zeros for a real tensor).
    pub fn imag(&self) -> Tensor {
        self.unary(UnaryOp::Imag)
    }
    /// The complex conjugate (a real tensor is its own).
    pub fn conj(&self) -> Tensor {
        self.unary(UnaryOp::Conj)
    }
    /// Square root (integers give `float64`).
    pub fn sqrt(&self) -> Tensor {
        self.unary(UnaryOp::Sqrt)
    }
    /// `e ** self`.
    pub fn exp(&self) -> Tensor {
        self.unary(UnaryOp::Exp)
    }
    /// Natural logarithm.
    pub fn log(&self) -> Tensor {
        self.unary(UnaryOp::Log)
    }
    /// Sine.
    pub fn sin(&self) -> Tensor {
        self.unary(UnaryOp::Sin)
    }
    /// Cosine.
    pub fn cos(&self) -> Tensor {
        self.unary(UnaryOp::Cos)
    }

    /// The values converted to `dtype` (floats truncate toward zero; non-zero is `true`).
    pub fn astype(&self, dtype: DType) -> Tensor {
        match self.node() {
            Ok(x) if x.dtype == dtype => self.clone(),
            Ok(x) => Tensor::from_node(cast_node(x, dtype)),
            Err(e) => Tensor::failed(e),
        }
    }
}

/// `cond ? a : b` elementwise, broadcasting all three (NumPy's `where`).
pub fn where_(cond: &Tensor, a: impl Into<Operand>, b: impl Into<Operand>) -> Tensor {
    let built = (|| {
        let c = cond.node()?;
        let c = cast_node(c, DType::Bool);
        let (a, b) = (a.into(), b.into());
        let tensor_dtype = [&a, &b].iter().find_map(|o| match o {
            Operand::Tensor(t) => t.dtype().ok(),
            Operand::Scalar(_) => None,
        });
        let node_of = |o: Operand| -> Result<Arc<Node>> {
            match o {
                Operand::Tensor(t) => t.node().cloned(),
                Operand::Scalar(s) => Ok(scalar_node(
                    s,
                    tensor_dtype.map_or(s.dtype(), |d| scalar_dtype(d, s)),
                )),
            }
        };
        let (a, b) = (node_of(a)?, node_of(b)?);
        let dtype = DType::promote(a.dtype, b.dtype);
        let shape = broadcast_shapes(&broadcast_shapes(&c.shape, &a.shape)?, &b.shape)?;
        Ok(Node::new(
            shape,
            dtype,
            NodeKind::Where(c, cast_node(&a, dtype), cast_node(&b, dtype)),
        ))
    })();
    match built {
        Ok(n) => Tensor::from_node(n),
        Err(e) => Tensor::failed(e),
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl std::ops::$trait<&Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary($op, rhs)
            }
        }
        impl std::ops::$trait<Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self.binary($op, rhs)
            }
        }
        impl std::ops::$trait<&Tensor> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                self.binary($op, rhs)
            }
        }
        impl std::ops::$trait<Tensor> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                self.binary($op, rhs)
            }
        }
        operator!(@scalars $trait, $method, $op, f64, i64);
    };
    (@scalars $trait:ident, $method:ident, $op:expr, $($t:ty),*) => {$(
        impl std::ops::$trait<$t> for &Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $t) -> Tensor {
                self.binary($op, rhs)
            }
        }
        impl std::ops::$trait<$t> for Tensor {
            type Output = Tensor;
            fn $method(self, rhs: $t) -> Tensor {
                self.binary($op, rhs)
            }
        }
        impl std::ops::$trait<&Tensor> for $t {
            type Output = Tensor;
            fn $method(self, rhs: &Tensor) -> Tensor {
                rhs.binary_rev($op, Scalar::from(self))
            }
        }
        impl std::ops::$trait<Tensor> for $t {
            type Output = Tensor;
            fn $method(self, rhs: Tensor) -> Tensor {
                rhs.binary_rev($op, Scalar::from(self))
            }
        }
    )*};
}
operator!(Add, add, BinaryOp::Add);
operator!(Sub, sub, BinaryOp::Sub);
operator!(Mul, mul, BinaryOp::Mul);
operator!(Div, div, BinaryOp::Div);
operator!(Rem, rem, BinaryOp::Remainder);
operator!(BitAnd, bitand, BinaryOp::BitAnd);
operator!(BitOr, bitor, BinaryOp::BitOr);
operator!(BitXor, bitxor, BinaryOp::BitXor);
operator!(Shl, shl, BinaryOp::Shl);
operator!(Shr, shr, BinaryOp::Shr);

impl std::ops::Neg for &Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.unary(UnaryOp::Neg)
    }
}

impl std::ops::Neg for Tensor {
    type Output = Tensor;
    fn neg(self) -> Tensor {
        self.unary(UnaryOp::Neg)
    }
}

/// `!x` is NumPy's `~x`: logical not of bools, bitwise not of integers (floats: an error).
impl std::ops::Not for &Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        self.bitwise_not()
    }
}

impl std::ops::Not for Tensor {
    type Output = Tensor;
    fn not(self) -> Tensor {
        self.bitwise_not()
    }
}
