//! Linear algebra on chunked matrices: products, norms, tall-and-skinny QR and SVD (TSQR),
//! and randomized SVD (Halko et al., with Dask's `svd_compressed` parameters).
//!
//! Inputs are computed as `float64`. A factorization needs a tall-and-skinny matrix (or,
//! for the SVD, a short-and-fat one): one whose small side fits in one chunk; for roughly
//! square matrices use [`svd_compressed`].

use crate::error::{Error, Result};
use crate::tensor::node::{next_id, FactorKind, Factorization, Node, NodeKind};
use crate::tensor::{random, Slice, Tensor};
use std::sync::Arc;
use tessera_kernels::{DType, Scalar, C128};

/// Dask's default number of power iterations for [`svd_compressed`].
pub const DEFAULT_N_POWER_ITER: usize = 0;
/// Dask's default oversampling for [`svd_compressed`].
pub const DEFAULT_N_OVERSAMPLES: usize = 10;

/// Largest small side of a matrix that TSQR factors (its R factor, n × n, is one chunk).
pub const MAX_TSQR_COLUMNS: usize = 4096;

/// `re + im·i` as `complex128`.
fn complex(re: &Tensor, im: &Tensor) -> Tensor {
    re.astype(DType::C128)
        .add(im.astype(DType::C128).mul(C128::new(0.0, 1.0)))
}

/// `t` as a `float64` matrix; a complex matrix is refused (its imaginary part would be lost).
fn matrix(t: &Tensor, what: &str) -> Result<Arc<Node>> {
    let node = t.node()?;
    if node.dtype.is_complex() {
        return Err(Error::UnsupportedDType {
            op: what.to_string(),
            dtype: node.dtype,
        });
    }
    if node.shape.len() != 2 {
        return Err(Error::Shape(format!(
            "{what} needs a 2-D matrix, got shape {:?}",
            node.shape
        )));
    }
    Ok(crate::tensor::ops_cast(node, DType::F64))
}

impl Tensor {
    /// The matrix product `self · other` (NumPy's `matmul` / `@` for 2-D operands; a 1-D
    /// operand is a row or column vector and that axis is dropped from the result).
    pub fn matmul(&self, other: &Tensor) -> Tensor {
        let built = (|| {
            let (a, b) = (self.node()?, other.node()?);
            let dtype = DType::promote(a.dtype, b.dtype);
            if dtype.is_complex() {
                // (a + bi)(c + di) = (ac - bd) + (ad + bc)i, from four real products.
                let (ar, ai, br, bi) = (self.real(), self.imag(), other.real(), other.imag());
                let re = ar.matmul(&br).sub(ai.matmul(&bi));
                let im = ar.matmul(&bi).add(ai.matmul(&br));
                return Ok(complex(&re, &im).astype(dtype));
            }
            let (a2, a_vec) = match a.shape.len() {
                1 => (self.reshape(&[1, -1]), true),
                _ => (self.clone(), false),
            };
            let (b2, b_vec) = match b.shape.len() {
                1 => (other.reshape(&[-1, 1]), true),
                _ => (other.clone(), false),
            };
            let (a2, b2) = (matrix(&a2, "matmul")?, matrix(&b2, "matmul")?);
            if a2.shape[1] != b2.shape[0] {
                return Err(Error::Shape(format!(
                    "matmul: inner dimensions differ ({:?} · {:?})",
                    a.shape, b.shape
                )));
            }
            let shape = vec![a2.shape[0], b2.shape[1]];
            // A sum over an empty inner axis is zero everywhere (NumPy's answer).
            let kind = match a2.shape[1] {
                0 => NodeKind::Full(Scalar::F64(0.0)),
                _ => NodeKind::MatMul(a2, b2),
            };
            let product = Tensor::from_node(Node::new(shape, DType::F64, kind));
            Ok(match (a_vec, b_vec) {
                (false, false) => product,
                (true, false) => product.reshape(&[-1]),
                (false, true) => product.reshape(&[-1]),
                (true, true) => product.reshape(&[1]).sum(),
            })
        })();
        built.unwrap_or_else(Tensor::failed)
    }

    /// The same as [`Tensor::matmul`] (NumPy's `dot` for 1-D and 2-D operands).
    pub fn dot(&self, other: &Tensor) -> Tensor {
        self.matmul(other)
    }
}

/// NumPy's `tensordot` for the common cases: `axes = 0` (outer product of vectors),
/// `1` (matrix product) and `2` (full contraction of two same-shaped matrices).
pub fn tensordot(a: &Tensor, b: &Tensor, axes: usize) -> Tensor {
    match axes {
        0 => a.reshape(&[-1, 1]).matmul(&b.reshape(&[1, -1])),
        1 => a.matmul(b),
        2 => match (a.shape(), b.shape()) {
            (Ok(x), Ok(y)) if x == y && x.len() == 2 => (a * b).astype(DType::F64).sum(),
            (Ok(x), Ok(y)) => Tensor::failed(Error::Shape(format!(
                "tensordot(axes=2) of {x:?} and {y:?}"
            ))),
            (Err(e), _) | (_, Err(e)) => Tensor::failed(e),
        },
        n => Tensor::failed(Error::InvalidArgument(format!(
            "tensordot supports axes 0, 1 or 2, not {n}"
        ))),
    }
}

/// The Frobenius norm of a matrix, the 2-norm of a vector (NumPy's `linalg.norm` default).
pub fn norm(x: &Tensor) -> Tensor {
    let x = x.astype(DType::F64);
    (&x * &x).sum().sqrt()
}

fn factor(x: &Tensor, kind: FactorKind, outputs: usize) -> Vec<Tensor> {
    let built = (|| {
        let node = matrix(x, "a TSQR factorization")?;
        let (m, n) = (node.shape[0], node.shape[1]);
        let shapes: Vec<Vec<usize>> = match &kind {
            FactorKind::Qr | FactorKind::Svd if n > MAX_TSQR_COLUMNS || m < n => {
                return Err(Error::InvalidArgument(format!(
                    "a {m} x {n} matrix is not tall-and-skinny (at most {MAX_TSQR_COLUMNS} columns and no more columns than rows); use linalg::svd_compressed for roughly square matrices"
                )));
            }
            FactorKind::Qr => vec![vec![m, n], vec![n, n]],
            FactorKind::Svd => vec![vec![m, n], vec![n], vec![n, n]],
            FactorKind::Range { omega } => {
                let l = omega.shape.get(1).copied().unwrap_or(0);
                if omega.shape != [n, l] || l > m || l > MAX_TSQR_COLUMNS {
                    return Err(Error::InvalidArgument(format!(
                        "the range of a {m} x {n} matrix needs a test matrix of {n} rows and at most min({m}, {MAX_TSQR_COLUMNS}) columns, got shape {:?}",
                        omega.shape
                    )));
                }
                vec![vec![m, l], vec![n, l]]
            }
        };
        let f = Arc::new(Factorization {
            id: next_id(),
            kind,
            x: node,
        });
        Ok(shapes
            .into_iter()
            .enumerate()
            .map(|(i, shape)| {
                Tensor::from_node(Node::new(shape, DType::F64, NodeKind::Factor(f.clone(), i)))
            })
            .collect())
    })();
    built.unwrap_or_else(|e| vec![Tensor::failed(e); outputs])
}

/// Thin QR of a tall-and-skinny matrix by TSQR: `(Q, R)`, Q (m × n) with orthonormal
/// columns, R (n × n) upper triangular with a non-negative diagonal.
pub fn qr(x: &Tensor) -> (Tensor, Tensor) {
    let mut f = factor(x, FactorKind::Qr, 2).into_iter();
    let q = f
        .next()
        .unwrap_or_else(|| Tensor::failed(Error::Runtime("qr: missing Q".into())));
    let r = f
        .next()
        .unwrap_or_else(|| Tensor::failed(Error::Runtime("qr: missing R".into())));
    (q, r)
}

/// Thin SVD of a tall-and-skinny or short-and-fat matrix: `(U, S, Vt)` with singular
/// values `S` descending (NumPy's `svd(full_matrices=False)`).
pub fn svd(x: &Tensor) -> (Tensor, Tensor, Tensor) {
    match x.shape() {
        Ok(s) if s.len() == 2 && s[0] < s[1] => {
            // x = (xᵀ)ᵀ = (U' S V'ᵀ)ᵀ = V' S U'ᵀ
            let (u, s, vt) = svd_tall(&x.transpose());
            (vt.transpose(), s, u.transpose())
        }
        _ => svd_tall(x),
    }
}

fn svd_tall(x: &Tensor) -> (Tensor, Tensor, Tensor) {
    let mut f = factor(x, FactorKind::Svd, 3).into_iter();
    let mut next = || {
        f.next()
            .unwrap_or_else(|| Tensor::failed(Error::Runtime("svd: missing output".into())))
    };
    (next(), next(), next())
}

/// Randomized SVD (Halko, Martinsson & Tropp), Dask's `svd_compressed`: the top `k`
/// singular triplets `(U (m × k), S (k), Vt (k × n))` from a random projection onto
/// `k + n_oversamples` dimensions refined by `n_power_iter` power iterations (Dask's
/// defaults: [`DEFAULT_N_POWER_ITER`], [`DEFAULT_N_OVERSAMPLES`]); the random projection is
/// drawn from `default_rng(seed)`.
///
/// Where the session computes on CPUs, the basis `Q` of `x Ω` and Dask's `B = Qᵀ x` come
/// from one pass over `x`: each row block's `x_i Ω` and `(x_i Ω)ᵀ x_i` while it is in
/// cache, then `Qᵀ x_i` from them where the block's R factor is well-conditioned, else
/// from a second read of the block; the result is within rounding of Dask's two passes.
/// Each power iteration is one such pass too (Dask's `xᵀ Q` is the `P = xᵀ Q` the pass
/// before already computed), so `n_power_iter` iterations read `x` `1 + n_power_iter`
/// times, not `2 + 2 n_power_iter`. With GPUs, or where the blocks are short beside
/// `k + n_oversamples`, each range takes Dask's two passes. A random input larger than
/// memory is generated again for each pass instead of being kept.
pub fn svd_compressed(
    x: &Tensor,
    k: usize,
    n_power_iter: usize,
    n_oversamples: usize,
    seed: u64,
) -> (Tensor, Tensor, Tensor) {
    let (m, n) = match x.shape() {
        Ok(s) if s.len() == 2 => (s[0], s[1]),
        Ok(s) => {
            let e = Error::Shape(format!(
                "svd_compressed needs a 2-D matrix, got shape {s:?}"
            ));
            return (
                Tensor::failed(e.clone()),
                Tensor::failed(e.clone()),
                Tensor::failed(e),
            );
        }
        Err(e) => {
            return (
                Tensor::failed(e.clone()),
                Tensor::failed(e.clone()),
                Tensor::failed(e),
            )
        }
    };
    if k == 0 || k > m.min(n) {
        let e = Error::InvalidArgument(format!(
            "svd_compressed: k = {k} must be between 1 and min({m}, {n})"
        ));
        return (
            Tensor::failed(e.clone()),
            Tensor::failed(e.clone()),
            Tensor::failed(e),
        );
    }
    let l = (k + n_oversamples).min(m.min(n));
    let x = x.astype(DType::F64);
    let omega = random::default_rng(seed).normal(0.0, 1.0, &[n, l]);
    // Q spans x · omega and P = xᵀ Q = Bᵀ for Dask's B = Qᵀ x. A power iteration is
    // Dask's `Q ← qr(x · qr(xᵀ Q))`: with P at hand, one more range (one pass on CPUs).
    let (mut q, mut p) = range(&x, &omega);
    for _ in 0..n_power_iter {
        let (w, _) = qr(&p);
        (q, p) = range(&x, &w);
    }
    // B's SVD is that of the tall P transposed: P = V' S U_Bᵀ gives B = U_B S V'ᵀ.
    let (v, s, ubt) = svd(&p);
    // The top k: U = Q U_B[:, :k] (sliced before the product, which then writes only k
    // columns), S[:k], Vt = V[:, :k]ᵀ.
    let top = Slice::new(None, Some(k as isize), 1);
    let ub = ubt.slice(&[top, Slice::all()]).transpose();
    (
        q.matmul(&ub),
        s.slice(&[top]),
        v.slice(&[Slice::all(), top]).transpose(),
    )
}

/// `(Q, P)`: an orthonormal basis `Q` of `x · omega` (Q's columns as those of a QR of it)
/// and `P = xᵀ · Q`, computed together ([`FactorKind::Range`]): in one pass over `x` where
/// the session computes on CPUs.
fn range(x: &Tensor, omega: &Tensor) -> (Tensor, Tensor) {
    let omega = match omega.node() {
        Ok(o) => o.clone(),
        Err(e) => return (Tensor::failed(e.clone()), Tensor::failed(e)),
    };
    let mut f = factor(x, FactorKind::Range { omega }, 2).into_iter();
    let mut next = || {
        f.next()
            .unwrap_or_else(|| Tensor::failed(Error::Runtime("range: missing output".into())))
    };
    (next(), next())
}
