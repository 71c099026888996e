//! Index arithmetic: C expressions for affine maps of a C-order flat index.

use super::cexpr::i64_lit;

/// Axes of a C-order shape with one or more stride vectors, adjacent axes merged where
/// every stride vector allows it (as `cpu::runs::FlatRuns` does) and size-1 axes dropped.
pub(crate) struct Affine {
    /// `(size, strides)` per remaining axis, outermost first.
    dims: Vec<(usize, Vec<i64>)>,
    /// Number of stride vectors.
    count: usize,
}

impl Affine {
    /// `shape` with `strides[j][axis]` for each stride vector `j`.
    pub fn new(shape: &[usize], strides: &[Vec<i64>]) -> Affine {
        let mut dims: Vec<(usize, Vec<i64>)> = Vec::with_capacity(shape.len());
        for (axis, &n) in shape.iter().enumerate() {
            if n == 1 {
                continue;
            }
            let s: Vec<i64> = strides.iter().map(|v| v[axis]).collect();
            match dims.last_mut() {
                Some((pn, ps)) if ps.iter().zip(&s).all(|(&p, &q)| p == q * n as i64) => {
                    *pn *= n;
                    *ps = s;
                }
                _ => dims.push((n, s)),
            }
        }
        Affine {
            dims,
            count: strides.len(),
        }
    }

    /// For each stride vector, the C expression `Σ_axis m[axis] * stride[axis]` where `m`
    /// is the multi-index of flat index `var` (assumed within the shape).
    pub fn exprs(&self, var: &str) -> Vec<String> {
        let mut terms: Vec<Vec<String>> = vec![Vec::new(); self.count];
        let mut inner = 1usize;
        for (k, (n, strides)) in self.dims.iter().enumerate().rev() {
            let mut m = if inner == 1 {
                var.to_string()
            } else {
                format!("({var} / {})", i64_lit(inner as i64))
            };
            if k > 0 {
                m = format!("({m} % {})", i64_lit(*n as i64));
            }
            for (j, &s) in strides.iter().enumerate() {
                match s {
                    0 => {}
                    1 => terms[j].push(m.clone()),
                    _ => terms[j].push(format!("{m} * {}", i64_lit(s))),
                }
            }
            inner = inner.saturating_mul(*n);
        }
        terms
            .into_iter()
            .map(|t| {
                if t.is_empty() {
                    "0LL".to_string()
                } else {
                    format!("({})", t.join(" + "))
                }
            })
            .collect()
    }

    /// The single stride vector's expression (see [`Affine::exprs`]).
    pub fn expr(&self, var: &str) -> String {
        self.exprs(var)
            .into_iter()
            .next()
            .unwrap_or_else(|| "0LL".to_string())
    }
}

/// The C expression of local axis `k`'s index in the multi-index of flat index `var`
/// over `shape` (C order).
pub(crate) fn axis_index(var: &str, shape: &[usize], k: usize) -> String {
    if shape.get(k).copied().unwrap_or(1) == 1 {
        return "0LL".into();
    }
    let inner: usize = shape[k + 1..].iter().product();
    let m = if inner == 1 {
        var.to_string()
    } else {
        format!("({var} / {})", i64_lit(inner as i64))
    };
    if k > 0 {
        format!("({m} % {})", i64_lit(shape[k] as i64))
    } else {
        m
    }
}

/// C-order strides of `shape` as `i64`.
pub(crate) fn c_strides_i64(shape: &[usize]) -> Vec<i64> {
    tessera_kernels::tensor::c_strides(shape)
        .into_iter()
        .map(|s| s as i64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_axes_merge_and_broadcasts_vanish() {
        let a = Affine::new(&[2, 3, 4], &[vec![12, 4, 1]]);
        assert_eq!(a.expr("i"), "(i)");
        let b = Affine::new(&[2, 1, 4], &[vec![0, 7, 1]]);
        assert_eq!(b.expr("i"), "((i % 4LL))");
        let t = Affine::new(&[3, 5], &[vec![1, 3], vec![5, 1]]);
        assert_eq!(
            t.exprs("i"),
            vec![
                "((i % 5LL) * 3LL + (i / 5LL))",
                "((i % 5LL) + (i / 5LL) * 5LL)"
            ]
        );
        assert_eq!(Affine::new(&[], &[vec![]]).expr("i"), "0LL");
    }
}
