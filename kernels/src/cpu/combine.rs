//! Merging partial reductions (one level of a reduction tree) and finishing them.

use super::reduce::Accumulator;
use crate::chunk::{ChunkData, Partial};
use crate::expr::{ChunkReduce, CombineSpec};
use crate::KernelError;
use std::sync::Arc;

/// Merges the partials in `inputs`; finishes them into a tensor when `spec.finalize` is set.
pub(crate) fn run(spec: &CombineSpec, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    let (first, rest) = inputs
        .split_first()
        .ok_or_else(|| KernelError::BadInput("combine without inputs".into()))?;
    let first = partial(spec, first)?;
    let mut acc = Accumulator::from_partial(first)?;
    for c in rest {
        acc.merge(partial(spec, c)?)?;
    }
    match &spec.finalize {
        Some(shape) => Ok(ChunkData::Tensor(acc.finish(shape.clone())?)),
        None => {
            let shape = first
                .parts
                .first()
                .map(|t| t.shape().to_vec())
                .unwrap_or_default();
            Ok(ChunkData::Partial(acc.into_partial(&shape)?))
        }
    }
}

/// A fused kernel's chunk, `partial` (its output, CPU or GPU), finished into the final
/// tensor where its reduction's `finalize` asks: what a finalizing combine of this one
/// partial returns, bit for bit. A chunk of a kernel without a reduction, or of one left
/// unfinished, is returned as it is.
pub fn finish_reduction(
    reduce: Option<&ChunkReduce>,
    partial: ChunkData,
) -> Result<ChunkData, KernelError> {
    let Some(shape) = reduce.and_then(|r| r.finalize.as_ref()) else {
        return Ok(partial);
    };
    match partial {
        ChunkData::Partial(p) => Ok(ChunkData::Tensor(
            Accumulator::from_partial(&p)?.finish(shape.clone())?,
        )),
        _ => Err(KernelError::BadInput(
            "a finished reduction's kernel returned no partial".into(),
        )),
    }
}

fn partial<'a>(spec: &CombineSpec, c: &'a ChunkData) -> Result<&'a Partial, KernelError> {
    match c {
        ChunkData::Partial(p) if p.op == spec.op && p.input_dtype == spec.input_dtype => Ok(p),
        _ => Err(KernelError::BadInput(format!(
            "combine of {} got a chunk that is not its partial",
            spec.op.name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::expr::ReduceOp;
    use crate::tensor::{Buffer, HostTensor};

    #[test]
    fn a_finished_reduction_is_the_combine_of_its_one_partial() {
        // A mean's partial over two slots: their sums and counts.
        let partial = ChunkData::Partial(Partial {
            op: ReduceOp::Mean,
            input_dtype: DType::F64,
            parts: vec![
                HostTensor::new(vec![2], Buffer::F64(vec![3.0, 10.0])).unwrap(),
                HostTensor::new(vec![2], Buffer::I64(vec![2, 4])).unwrap(),
            ],
        });
        let reduce = ChunkReduce {
            op: ReduceOp::Mean,
            axes: vec![0],
            global_start: vec![0, 0],
            global_shape: vec![4, 2],
            finalize: Some(vec![2]),
        };
        let got = finish_reduction(Some(&reduce), partial.clone()).unwrap();
        let combined = run(
            &CombineSpec {
                op: ReduceOp::Mean,
                input_dtype: DType::F64,
                finalize: Some(vec![2]),
            },
            &[Arc::new(partial.clone())],
        )
        .unwrap();
        assert_eq!(got, combined);
        assert_eq!(
            got.as_tensor().map(HostTensor::data),
            Some(&Buffer::F64(vec![1.5, 2.5]))
        );
        // Unfinished, the partial is the chunk.
        let unfinished = ChunkReduce {
            finalize: None,
            ..reduce.clone()
        };
        assert_eq!(
            finish_reduction(Some(&unfinished), partial.clone()).unwrap(),
            partial
        );
        assert_eq!(finish_reduction(None, partial.clone()).unwrap(), partial);
        // A tensor where a partial belongs is refused.
        let tensor = ChunkData::Tensor(HostTensor::new(vec![1], Buffer::F64(vec![1.0])).unwrap());
        assert!(matches!(
            finish_reduction(Some(&reduce), tensor),
            Err(KernelError::BadInput(_))
        ));
    }
}
