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
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use tessera_cuda::{probe, Gpu, GpuProbe};

/// The environment variable that picks the backend when the code does not
/// ([`crate::SessionBuilder::backend`]): `cpu`, `cuda` or `auto`.
pub use tessera_cuda::BACKEND_VAR;

/// Where a session's chunk tasks run.
///
/// The default is [`DeviceBackend::Cpu`], not `Auto`: the GPU path has not yet run on a
/// GPU in this project's CI, a GPU session compiles each new kernel with NVRTC on first
/// use (a fixed cost small jobs notice), and a session quietly changing device with the
/// machine it lands on would make timings and float sums of one program differ between
/// hosts. `Auto` is one word away (`TESSERA_BACKEND=auto`) for those who want it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceBackend {
    /// The CPU pool only (today's behaviour).
    #[default]
    Cpu,
    /// The CPU pool and every visible CUDA GPU; building the session fails with
    /// [`Error::GpuUnavailable`] (naming the cause) where none can be used.
    Cuda,
    /// The GPUs where they can be used, else the CPU pool alone (said in a log line).
    Auto,
}

impl DeviceBackend {
    /// The backend named by [`BACKEND_VAR`] (`None` when it is unset or empty); an
    /// unknown value is [`Error::InvalidArgument`] naming it.
    pub fn from_env() -> Result<Option<DeviceBackend>> {
        DeviceBackend::from_env_value(std::env::var_os(BACKEND_VAR).as_deref())
    }

    /// [`DeviceBackend::from_env`] for the value `value` (the variable's, if set).
    pub fn from_env_value(value: Option<&std::ffi::OsStr>) -> Result<Option<DeviceBackend>> {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let text = value.to_str().ok_or_else(|| {
            Error::InvalidArgument(format!("{BACKEND_VAR}={value:?} is not cpu, cuda or auto"))
        })?;
        text.parse()
            .map(Some)
            .map_err(|e| Error::InvalidArgument(format!("{BACKEND_VAR}: {e}")))
    }
}

impl fmt::Display for DeviceBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceBackend::Cpu => "cpu",
            DeviceBackend::Cuda => "cuda",
            DeviceBackend::Auto => "auto",
        })
    }
}

impl FromStr for DeviceBackend {
    type Err = Error;

    /// `cpu`, `cuda` (also `gpu`) or `auto`, in any case, surrounding spaces ignored.
    fn from_str(s: &str) -> Result<DeviceBackend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(DeviceBackend::Cpu),
            "cuda" | "gpu" => Ok(DeviceBackend::Cuda),
            "auto" => Ok(DeviceBackend::Auto),
            _ => Err(Error::InvalidArgument(format!(
                "unknown backend {s:?}: expected cpu, cuda or auto"
            ))),
        }
    }
}

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
    use std::ffi::OsStr;

    #[test]
    fn names_parse_in_any_case_and_unknown_ones_are_errors() {
        assert_eq!("cpu".parse::<DeviceBackend>().unwrap(), DeviceBackend::Cpu);
        assert_eq!(
            " CUDA ".parse::<DeviceBackend>().unwrap(),
            DeviceBackend::Cuda
        );
        assert_eq!("gpu".parse::<DeviceBackend>().unwrap(), DeviceBackend::Cuda);
        assert_eq!(
            "Auto".parse::<DeviceBackend>().unwrap(),
            DeviceBackend::Auto
        );
        let e = "tpu".parse::<DeviceBackend>().unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("\"tpu\"")),
            "{e}"
        );
        for b in [DeviceBackend::Cpu, DeviceBackend::Cuda, DeviceBackend::Auto] {
            assert_eq!(b.to_string().parse::<DeviceBackend>().unwrap(), b);
        }
    }

    #[test]
    fn the_environment_value_is_optional_and_checked() {
        assert_eq!(DeviceBackend::from_env_value(None).unwrap(), None);
        assert_eq!(
            DeviceBackend::from_env_value(Some(OsStr::new(""))).unwrap(),
            None
        );
        assert_eq!(
            DeviceBackend::from_env_value(Some(OsStr::new("auto"))).unwrap(),
            Some(DeviceBackend::Auto)
        );
        let e = DeviceBackend::from_env_value(Some(OsStr::new("cuda:1"))).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains(BACKEND_VAR) && m.contains("cuda:1")),
            "{e}"
        );
    }

    #[test]
    fn cpu_opens_nothing() {
        assert!(open_gpus(DeviceBackend::Cpu).unwrap().is_empty());
    }
}
