//! Which devices a session computes on: the CPU pool alone, or the CPU pool and every
//! visible GPU (Dask's `array.backend`, Mars's `gpu=True`).
//!
//! With GPUs, each gets a device actor; the ops that have GPU kernels (fused elementwise
//! expressions and their trailing reductions) run there and every other op on the CPU pool,
//! which a GPU session keeps (see `tessera_actors::planner_state::placement`). Results are
//! the CPU's: the generated kernels return the chunks the CPU evaluator returns (integers
//! and Philox random numbers bit for bit; float reductions within rounding of the order
//! they add in).

use crate::error::{Error, Result};
use std::sync::Arc;
use tessera_cuda::{probe, Gpu, GpuProbe};

/// Where a session's chunk tasks run (default: the CPU pool alone); building a session on
/// `Cuda` where no GPU can be used fails with [`Error::GpuUnavailable`] naming the cause.
pub use tessera_cuda::{DeviceBackend, UnknownBackend};

/// The environment variable that picks the backend when the code does not
/// ([`crate::SessionBuilder::backend`]): `cpu`, `cuda` or `auto`.
pub use tessera_cuda::BACKEND_VAR;

/// Opens the GPUs `backend` asks for: none for `Cpu`; every visible device for `Cuda` (an
/// error naming the cause where there is none, one fails to open, or NVRTC, which
/// compiles the kernels, cannot be loaded) and for `Auto` (none, with a log line saying
/// why, in those cases).
pub(crate) fn open_gpus(backend: DeviceBackend) -> Result<Vec<Arc<Gpu>>> {
    if backend == DeviceBackend::Cpu {
        if let GpuProbe::Devices(n @ 1..) = probe() {
            tracing::info!("{n} CUDA device(s) found; backend cpu ({BACKEND_VAR}=auto uses them)");
        }
        return Ok(Vec::new());
    }
    match tessera_cuda::open_shared(None) {
        Ok(gpus) => {
            for gpu in &gpus {
                tracing::info!(backend = %backend, "computing on {}", gpu.describe());
            }
            Ok(gpus)
        }
        Err(cause) if backend == DeviceBackend::Auto => {
            tracing::info!("backend auto: {cause}; computing on the CPU pool");
            Ok(Vec::new())
        }
        Err(cause) => Err(Error::GpuUnavailable(cause)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_opens_nothing() {
        assert!(open_gpus(DeviceBackend::Cpu).unwrap().is_empty());
    }

    #[test]
    fn an_unknown_backend_is_an_invalid_argument_naming_it() {
        let e = Error::from("tpu".parse::<DeviceBackend>().unwrap_err());
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("\"tpu\"")),
            "{e}"
        );
    }
}
