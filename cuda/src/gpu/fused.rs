//! Launching a generated fused kernel: inputs copied in, outputs allocated, parameters
//! pushed in the kernel's order, the `faults` word checked after the launch; the outputs
//! stay on the device ([`Launched`]) until the caller copies them back or uses them there.

use super::devbuf::DevBuf;
use super::resident::{Ran, WHOLE};
use super::{driver, Gpu, Lease, Timer};
use crate::codegen::{fault_error, fused_source, CudaKernel, ParamKind};
use crate::launch::{chunk_of, i64_of, input_buffers, launch_shape, output_lengths};
use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_kernels::expr::FusedKernel;
use tessera_kernels::{ChunkData, KernelError};

/// A finished launch whose outputs are still on the device.
pub(super) struct Launched {
    /// The kernel that ran.
    pub cuda: CudaKernel,
    /// Its outputs in parameter order (see `launch::output_lengths`).
    pub outputs: Vec<DevBuf>,
    /// Partial records per slot.
    pub splits: usize,
    /// The kernel's device time (zero when the launch was not timed).
    pub took: Duration,
}

impl Gpu {
    /// Runs `kernel` and copies its outputs back into the CPU evaluator's chunk, with its
    /// device time when `timed` (zero otherwise). An elementwise kernel's values are also
    /// handed on as its chunk's device copy (see `resident`).
    pub(super) fn run_fused(
        &self,
        lease: &mut Lease,
        kernel: &FusedKernel,
        inputs: &[Arc<ChunkData>],
        timed: bool,
    ) -> Result<Ran, KernelError> {
        let launched = self.launch_fused(&lease.stream, kernel, inputs, timed)?;
        let copying = Instant::now();
        let host = launched
            .outputs
            .iter()
            .map(|d| d.download(self, &lease.stream))
            .collect::<Result<Vec<_>, _>>()?;
        let data = chunk_of(kernel, &launched.cuda, launched.splits, host)?;
        tracing::trace!(
            kernel = %launched.cuda.name,
            back_us = copying.elapsed().as_micros(),
            "fused outputs copied back and assembled"
        );
        let mut ran = Ran::host(data, launched.took);
        if launched.cuda.reduce.is_none() {
            if let Ok([values]) = <[DevBuf; 1]>::try_from(launched.outputs) {
                ran.made.push((WHOLE, values));
            }
        }
        Ok(ran)
    }

    /// Generates, compiles (once per source) and launches `kernel` on `stream`, waits for
    /// it and checks its faults; the kernel is timed with CUDA events only when `timed`.
    pub(super) fn launch_fused(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &FusedKernel,
        inputs: &[Arc<ChunkData>],
        timed: bool,
    ) -> Result<Launched, KernelError> {
        let began = Instant::now();
        let cuda = fused_source(kernel)?;
        let generated = Instant::now();
        let host_inputs = input_buffers(&cuda, inputs)?;
        let function = self.function(&cuda)?;
        let shape = launch_shape(&cuda, self.sms);
        let looked_up = Instant::now();
        // Each input's device copy, kept between tasks (see `resident`).
        let slots = cuda.params.iter().filter_map(|p| match p {
            ParamKind::Input { slot, .. } => Some(*slot),
            _ => None,
        });
        let ins = slots
            .zip(&host_inputs)
            .map(|(slot, b)| {
                let chunk = inputs.get(slot).ok_or_else(|| {
                    KernelError::BadInput(format!("{}: input {slot} is missing", cuda.name))
                })?;
                self.resident(stream, chunk, WHOLE, || DevBuf::upload(self, stream, b))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let prepared = Instant::now();
        let out_dtypes = cuda.params.iter().filter_map(|p| match p {
            ParamKind::Values { dtype, .. } | ParamKind::Part { dtype, .. } => Some(*dtype),
            _ => None,
        });
        // SAFETY: the generated kernels write every element of their outputs before the
        // copy back reads them: the elementwise body stores `out[ix0]` for every
        // `ix0 < n`, `n` being the `Values` length, and the reducing body's grid-stride
        // loop visits every (slot, record) `w < S * splits` and stores record
        // `rec * S + slot` of every part, the `splits * slots` elements `output_lengths`
        // gives (see `codegen`). The one path that skips the stores, a launch against the
        // kernel's contract (`splits` out of range), sets the faults word, and a faulted
        // launch's outputs are never read. The host emulation runs every corpus kernel
        // with its outputs filled with garbage to check this.
        let outputs = out_dtypes
            .zip(output_lengths(&cuda, shape.splits))
            .map(|(d, n)| unsafe { DevBuf::alloc_unset(stream, d, n) })
            .collect::<Result<Vec<_>, _>>()
            .map_err(driver("allocation"))?;
        // The faults word is or-ed into: it must start at 0.
        let faults = stream.alloc_zeros::<i32>(1).map_err(driver("allocation"))?;
        let splits = i64_of(shape.splits)?;
        let timer = Timer::new(stream, timed)?;
        let allocated = Instant::now();
        {
            let mut args = stream.launch_builder(&function);
            let (mut i, mut o) = (ins.iter(), outputs.iter());
            for p in &cuda.params {
                let buf = match p {
                    ParamKind::Input { .. } => i.next().map(|c| &c.value),
                    ParamKind::Values { .. } | ParamKind::Part { .. } => o.next(),
                    ParamKind::Splits => {
                        args.arg(&splits);
                        continue;
                    }
                    ParamKind::I64(v) => {
                        args.arg(v);
                        continue;
                    }
                    ParamKind::U64(v) => {
                        args.arg(v);
                        continue;
                    }
                    ParamKind::F64(v) => {
                        args.arg(v);
                        continue;
                    }
                    ParamKind::Faults => {
                        args.arg(&faults);
                        continue;
                    }
                };
                buf.ok_or_else(|| {
                    KernelError::BadInput(format!(
                        "{}: a buffer parameter has no buffer",
                        cuda.name
                    ))
                })?
                .push(&mut args);
            }
            let config = LaunchConfig {
                grid_dim: (shape.grid, 1, 1),
                block_dim: (cuda.block_dim, 1, 1),
                shared_mem_bytes: 0,
            };
            timer.start(stream)?;
            // SAFETY: the parameters were pushed in the order and with the types the
            // generated signature declares (`CudaKernel::params`), every buffer holds the
            // elements the kernel indexes (inputs checked by `input_buffers`, outputs sized
            // by `output_lengths`), and all of them outlive the launch: the copy of the
            // faults word below waits for it.
            unsafe { args.launch(config) }.map_err(driver("launch"))?;
            timer.stop(stream)?;
        }
        let launched = Instant::now();
        let fault = stream.clone_dtoh(&faults).map_err(driver("kernel run"))?;
        let took = timer.elapsed()?;
        // Host-clock phases, for finding what a launch costs besides its kernel.
        tracing::trace!(
            kernel = %cuda.name,
            prepare_us = (prepared - began).as_micros(),
            codegen_us = (generated - began).as_micros(),
            lookup_us = (looked_up - generated).as_micros(),
            allocate_us = (allocated - prepared).as_micros(),
            launch_us = (launched - allocated).as_micros(),
            wait_us = launched.elapsed().as_micros(),
            "fused launch"
        );
        if let Some(e) = fault.first().copied().and_then(fault_error) {
            return Err(e);
        }
        Ok(Launched {
            cuda,
            outputs,
            splits: shape.splits,
            took,
        })
    }
}
