//! What a launch of a generated kernel needs besides the GPU, as pure functions a machine
//! without one runs and tests: the grid and the number of partial records
//! ([`launch_shape`]), the check of a task's inputs against the kernel's parameters
//! ([`input_buffers`]), the chunk the copied-back outputs make ([`assemble`]), and counts
//! as the kernels' `long long` ([`i64_of`]).
//! [`super::gpu::Gpu`] puts them together with the CUDA calls.

use super::codegen::{CudaKernel, ParamKind};
use std::sync::Arc;
use tessera_kernels::chunk::ChunkData;
use tessera_kernels::cpu::reduce::Accumulator;
use tessera_kernels::expr::FusedKernel;
use tessera_kernels::tensor::{Buffer, HostTensor};
use tessera_kernels::KernelError;

/// Blocks per multiprocessor a launch aims for: 2,048 resident threads per SM on Hopper
/// and Ampere over the generated kernels' 256 threads per block.
pub const BLOCKS_PER_SM: u32 = 8;

/// Fewest elements one partial record reduces: below this, a block's threads would spend
/// more time merging than folding.
pub const MIN_RECORD_ELEMENTS: usize = 4_096;

/// How one kernel is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks in the grid (every generated loop is grid-stride, so any count is right).
    pub grid: u32,
    /// Partial records per output slot (1 for kernels without a reduction).
    pub splits: usize,
}

/// A count (elements, rows, records) as a kernel's `long long`.
pub fn i64_of(n: usize) -> Result<i64, KernelError> {
    i64::try_from(n).map_err(|_| KernelError::SizeOverflow(format!("a count of {n}")))
}

/// The grid and record count for `kernel` on a device of `sms` multiprocessors: enough
/// blocks to fill it, no more than the work has, and records no smaller than
/// [`MIN_RECORD_ELEMENTS`] (nor more than the kernel's contract, `1..=per_slot`).
pub fn launch_shape(kernel: &CudaKernel, sms: u32) -> LaunchShape {
    let fill = u64::from(sms.max(1)) * u64::from(BLOCKS_PER_SM);
    let block = u64::from(kernel.block_dim.max(1));
    let clamp = |blocks: u64| u32::try_from(blocks.clamp(1, fill)).unwrap_or(u32::MAX);
    match &kernel.reduce {
        None => LaunchShape {
            grid: clamp((kernel.elements as u64).div_ceil(block)),
            splits: 1,
        },
        Some(r) => {
            let slots = r.slots.max(1) as u64;
            let wanted = fill.div_ceil(slots) as usize;
            let most = (r.per_slot / MIN_RECORD_ELEMENTS).max(1);
            let splits = wanted.clamp(1, most).min(r.per_slot.max(1));
            LaunchShape {
                grid: clamp(slots.saturating_mul(splits as u64)),
                splits,
            }
        }
    }
}

/// The task's input buffers in the kernel's parameter order, after checking that each
/// `Input` parameter's chunk is a tensor of the dtype and shape the kernel was generated
/// for (`BadInput` naming the slot otherwise).
pub fn input_buffers<'a>(
    kernel: &CudaKernel,
    inputs: &'a [Arc<ChunkData>],
) -> Result<Vec<&'a Buffer>, KernelError> {
    let mut out = Vec::new();
    for p in &kernel.params {
        let ParamKind::Input { slot, dtype, shape } = p else {
            continue;
        };
        let tensor = match inputs.get(*slot).map(|c| c.as_ref()) {
            Some(ChunkData::Tensor(t)) => t,
            Some(other) => {
                return Err(KernelError::BadInput(format!(
                    "{}: input {slot} is {}, not a tensor",
                    kernel.name,
                    other.kind_name()
                )))
            }
            None => {
                return Err(KernelError::BadInput(format!(
                    "{}: input {slot} is missing ({} given)",
                    kernel.name,
                    inputs.len()
                )))
            }
        };
        if tensor.dtype() != *dtype || tensor.shape() != shape.as_slice() {
            return Err(KernelError::BadInput(format!(
                "{}: input {slot} is {} {:?}, the kernel reads {dtype} {shape:?}",
                kernel.name,
                tensor.dtype(),
                tensor.shape()
            )));
        }
        out.push(tensor.data());
    }
    Ok(out)
}

/// Elements of each output parameter (`Values` and `Part`, in parameter order) for a
/// launch with `splits` records.
pub fn output_lengths(kernel: &CudaKernel, splits: usize) -> Vec<usize> {
    let slots = kernel.reduce.as_ref().map_or(1, |r| r.slots);
    kernel
        .params
        .iter()
        .filter_map(|p| match p {
            ParamKind::Values { len, .. } => Some(*len),
            ParamKind::Part { .. } => Some(splits * slots),
            _ => None,
        })
        .collect()
}

/// The chunk a launch of `fused`, generated as `cuda`, stands for: its outputs copied back
/// in parameter order, assembled ([`assemble`]), and a reduction finished where `fused`
/// asks (`ChunkReduce::finalize`, as the CPU evaluator finishes it).
pub fn chunk_of(
    fused: &FusedKernel,
    cuda: &CudaKernel,
    splits: usize,
    outputs: Vec<Buffer>,
) -> Result<ChunkData, KernelError> {
    let (root, _) = fused.root_instr()?;
    let data = assemble(cuda, &root.shape, splits, outputs)?;
    tessera_kernels::cpu::finish_reduction(fused.reduce.as_ref(), data)
}

/// The chunk a launch produced, from its outputs copied back in parameter order
/// ([`output_lengths`]): the root's values shaped `root_shape`, or, for a reducing
/// kernel, its `splits` partial records merged as the CPU's `Combine` merges them
/// (so the result equals the CPU evaluator's, up to the float accumulation order).
pub fn assemble(
    kernel: &CudaKernel,
    root_shape: &[usize],
    splits: usize,
    outputs: Vec<Buffer>,
) -> Result<ChunkData, KernelError> {
    let Some(layout) = &kernel.reduce else {
        let values = outputs
            .into_iter()
            .next()
            .ok_or_else(|| KernelError::BadInput(format!("{} wrote no values", kernel.name)))?;
        return Ok(ChunkData::Tensor(HostTensor::new(
            root_shape.to_vec(),
            values,
        )?));
    };
    if outputs.len() != layout.parts.len() {
        return Err(KernelError::BadInput(format!(
            "{}: {} outputs for a partial of {} parts",
            kernel.name,
            outputs.len(),
            layout.parts.len()
        )));
    }
    // Slot `s` of record `r` is element `r * slots + s` of every output; the records are
    // merged in place, without a partial each (a launch writes about a thousand).
    let records = splits.max(1);
    let need = records.saturating_mul(layout.slots);
    if let Some(short) = outputs.iter().find(|b| b.len() < need) {
        return Err(KernelError::BadInput(format!(
            "{}: an output of {} elements holds fewer than {records} records of {} slots",
            kernel.name,
            short.len(),
            layout.slots
        )));
    }
    let parts: Vec<&Buffer> = outputs.iter().collect();
    let mut acc = Accumulator::new(layout.op, layout.input_dtype, layout.slots)?;
    for r in 0..records {
        acc.merge_record(&parts, r * layout.slots)?;
    }
    Ok(ChunkData::Partial(acc.into_partial(&layout.out_shape)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::{fused_source, ReduceLayout};
    use crate::tests::corpus;
    use tessera_kernels::chunk::Partial;
    use tessera_kernels::dtype::DType;
    use tessera_kernels::expr::ReduceOp;

    fn reducing(per_slot: usize, slots: usize) -> CudaKernel {
        CudaKernel {
            name: "k".into(),
            source: String::new(),
            params: vec![
                ParamKind::Part {
                    part: 0,
                    dtype: DType::I64,
                },
                ParamKind::Splits,
                ParamKind::Faults,
            ],
            block_dim: 256,
            elements: per_slot * slots,
            reduce: Some(ReduceLayout {
                op: ReduceOp::Sum,
                input_dtype: DType::I64,
                out_shape: vec![slots],
                slots,
                per_slot,
                parts: vec![DType::I64],
            }),
        }
    }

    #[test]
    fn launches_fill_the_device_without_records_too_small_or_out_of_contract() {
        // One slot of 1e8: 132 SMs × 8 blocks, one record per block.
        let s = launch_shape(&reducing(100_000_000, 1), 132);
        assert_eq!(
            s,
            LaunchShape {
                grid: 1056,
                splits: 1056
            }
        );
        // Small reductions keep records of at least MIN_RECORD_ELEMENTS.
        assert_eq!(launch_shape(&reducing(10_000, 1), 132).splits, 2);
        assert_eq!(launch_shape(&reducing(100, 1), 132).splits, 1);
        // Many slots need one record each; the grid stops at the fill.
        let s = launch_shape(&reducing(50_000, 10_000), 132);
        assert_eq!(
            s,
            LaunchShape {
                grid: 1056,
                splits: 1
            }
        );
        // Elementwise: one thread per element up to the fill.
        let mut e = reducing(1, 1);
        e.reduce = None;
        e.elements = 1000;
        assert_eq!(launch_shape(&e, 132), LaunchShape { grid: 4, splits: 1 });
        e.elements = 1 << 30;
        assert_eq!(launch_shape(&e, 132).grid, 1056);
        assert_eq!(launch_shape(&e, 0).grid, 8);
    }

    #[test]
    fn records_merge_into_the_cpus_partial() {
        let k = reducing(6, 2);
        // Two records of two slots: slot sums 1+3 and 2+4.
        let out = assemble(&k, &[], 2, vec![Buffer::I64(vec![1, 2, 3, 4])]).unwrap();
        let ChunkData::Partial(p) = out else {
            panic!("{out:?}")
        };
        assert_eq!(p.parts[0].data(), &Buffer::I64(vec![4, 6]));
        assert_eq!(output_lengths(&k, 2), vec![4]);
        assert!(matches!(
            assemble(&k, &[], 2, vec![]),
            Err(KernelError::BadInput(_))
        ));
    }

    /// `n` values of `dtype`, varied, with ties, negative zeros and NaNs among the floats.
    fn record_values(dtype: DType, n: usize) -> Buffer {
        let f = |i: usize| match i % 11 {
            3 => f64::NAN,
            5 => -0.0,
            7 => 0.0,
            k => (k as f64 - 4.0) * 0.75,
        };
        match dtype {
            DType::Bool => Buffer::Bool((0..n).map(|i| i % 3 != 0).collect()),
            DType::U8 => Buffer::U8((0..n).map(|i| (i * 37 % 251) as u8).collect()),
            DType::I32 => Buffer::I32((0..n).map(|i| (i as i32 * 7919) % 13 - 6).collect()),
            // Counts (Mean's, Var's first part) stay positive.
            DType::I64 => Buffer::I64((0..n).map(|i| (i as i64 * 31) % 9 + 1).collect()),
            DType::F32 => Buffer::F32((0..n).map(|i| f(i) as f32).collect()),
            DType::F64 => Buffer::F64((0..n).map(f).collect()),
            other => Buffer::I64((0..n).map(|i| (i as i64 * 31) % 9 + 1).collect()).cast(other),
        }
    }

    #[test]
    fn records_merge_in_place_as_one_partial_per_record_merges() {
        let (slots, splits) = (5, 7);
        for op in corpus::REDUCE_OPS {
            for input in corpus::DTYPES {
                let parts = crate::codegen::reduce::part_dtypes(op, input);
                let mut k = reducing(64, slots);
                if let Some(r) = &mut k.reduce {
                    r.op = op;
                    r.input_dtype = input;
                    r.parts = parts.clone();
                }
                let outputs: Vec<Buffer> = parts
                    .iter()
                    .map(|&d| record_values(d, splits * slots))
                    .collect();
                // The reference: a partial per record, merged as the CPU's Combine does.
                let record = |r: usize| Partial {
                    op,
                    input_dtype: input,
                    parts: outputs
                        .iter()
                        .map(|b| {
                            let part = b.slice(r * slots..(r + 1) * slots).unwrap();
                            HostTensor::new(vec![slots], part).unwrap()
                        })
                        .collect(),
                };
                let mut want = Accumulator::from_partial(&record(0)).unwrap();
                for r in 1..splits {
                    want.merge(&record(r)).unwrap();
                }
                let want = want.into_partial(&[slots]).unwrap();
                let got = assemble(&k, &[], splits, outputs.clone()).unwrap();
                let ChunkData::Partial(got) = got else {
                    panic!("{got:?}")
                };
                assert_eq!((got.op, got.input_dtype), (op, input));
                for (g, w) in got.parts.iter().zip(&want.parts) {
                    assert_eq!(g.shape(), w.shape());
                    // Bit for bit, NaNs included.
                    let bits = |b: &Buffer| match b {
                        Buffer::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
                        Buffer::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
                        other => other
                            .to_f64_vec()
                            .iter()
                            .map(|x| x.to_bits())
                            .collect::<Vec<_>>(),
                    };
                    assert_eq!(bits(g.data()), bits(w.data()), "{op:?} over {input}");
                }
            }
        }
        // Outputs too short for the records: an error naming them, no panic.
        let k = reducing(6, 2);
        assert!(matches!(
            assemble(&k, &[], 3, vec![Buffer::I64(vec![1, 2, 3, 4])]),
            Err(KernelError::BadInput(m)) if m.contains("fewer than 3 records")
        ));
    }

    #[test]
    fn inputs_are_checked_against_the_kernels_parameters() {
        let case = corpus::cases()
            .into_iter()
            .find(|c| {
                fused_source(&c.kernel).is_ok_and(|k| {
                    k.params
                        .iter()
                        .any(|p| matches!(p, ParamKind::Input { .. }))
                })
            })
            .unwrap();
        let k = fused_source(&case.kernel).unwrap();
        let inputs = corpus::inputs_for(&case.kernel);
        assert!(!input_buffers(&k, &inputs).unwrap().is_empty());
        assert!(matches!(
            input_buffers(&k, &[]),
            Err(KernelError::BadInput(m)) if m.contains("missing")
        ));
        let wrong: Vec<_> = inputs
            .iter()
            .map(|_| {
                Arc::new(ChunkData::Tensor(HostTensor::scalar(
                    tessera_kernels::dtype::Scalar::F64(1.0),
                )))
            })
            .collect();
        assert!(matches!(
            input_buffers(&k, &wrong),
            Err(KernelError::BadInput(m)) if m.contains("the kernel reads")
        ));
    }
}
