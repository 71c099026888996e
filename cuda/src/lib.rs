//! Tessera's CUDA device, loaded at run time: nothing of CUDA is needed to build, and a
//! machine without a driver runs CPU-only. This crate discovers devices ([`probe`]), generates
//! one CUDA C kernel per fused chunk task from the CPU's IR ([`codegen`]) and compiles it
//! with NVRTC ([`nvrtc`]), and runs it on a device ([`Gpu`], with the pure parts of a
//! launch in [`launch`]); dataframe groupby partials and join matching run as the fixed
//! hash kernels of `frame.cu` (planned and assembled by [`frame_plan`]). GPU device
//! actors build on these.

mod backend;
pub mod codegen;
pub mod filter_gen;
pub mod frame_plan;
mod gpu;
pub mod launch;
pub mod nvrtc;
pub mod workloads;

pub use backend::{DeviceBackend, UnknownBackend};
pub use gpu::{compile_frame_kernels, Gpu, GPU_MIN_ELEMENTS};

#[cfg(test)]
mod tests;

/// The environment variable that picks where work runs when the code does not: `cpu`,
/// `cuda` or `auto` (a session's backend, and the GPUs of a worker started without
/// `--gpus`).
pub const BACKEND_VAR: &str = "TESSERA_BACKEND";

/// What the CUDA probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuProbe {
    /// No CUDA driver library could be loaded.
    NoDriver,
    /// The driver loaded but could not be initialised or queried (the driver's message).
    DriverError(String),
    /// The driver reports this many devices.
    Devices(usize),
}

/// Looks for the CUDA driver and counts its devices, without panicking where none exists.
pub fn probe() -> GpuProbe {
    // SAFETY: only tries to open the shared library by name; no symbol is called.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return GpuProbe::NoDriver;
    }
    // cudarc panics if a symbol is missing from an unexpected driver: keep that contained.
    match std::panic::catch_unwind(cudarc::driver::CudaContext::device_count) {
        Ok(Ok(n)) => GpuProbe::Devices(usize::try_from(n).unwrap_or(0)),
        Ok(Err(e)) => GpuProbe::DriverError(format!("{e:?}")),
        Err(_) => GpuProbe::DriverError("the CUDA driver panicked while being queried".into()),
    }
}

/// Opens GPUs, each once per process ([`Gpu::shared`]): the devices `ordinals` names, or
/// every visible one for `None`. The error names the cause where there is no device (or
/// no such one), one fails to open, or NVRTC, which compiles the kernels, cannot be
/// loaded.
pub fn open_shared(ordinals: Option<&[usize]>) -> Result<Vec<std::sync::Arc<Gpu>>, String> {
    if ordinals.is_some_and(<[usize]>::is_empty) {
        return Ok(Vec::new());
    }
    let cause = |e: tessera_kernels::KernelError| match e {
        tessera_kernels::KernelError::DeviceUnavailable(m) => m,
        other => other.to_string(),
    };
    let first =
        Gpu::shared(ordinals.and_then(|o| o.first().copied()).unwrap_or(0)).map_err(cause)?;
    if !nvrtc::nvrtc_available() {
        return Err(
            "NVRTC (libnvrtc.so, which compiles the GPU kernels) cannot be loaded: \
             install the CUDA toolkit or the nvidia-cuda-nvrtc wheel and put its \
             library folder on LD_LIBRARY_PATH"
                .into(),
        );
    }
    let rest: Vec<usize> = match ordinals {
        Some(listed) => listed.iter().skip(1).copied().collect(),
        None => match probe() {
            GpuProbe::Devices(n) => (1..n).collect(),
            _ => Vec::new(),
        },
    };
    let mut gpus = vec![first];
    for ordinal in rest {
        gpus.push(Gpu::shared(ordinal).map_err(cause)?);
    }
    Ok(gpus)
}

#[cfg(test)]
mod probe_tests {
    use super::*;

    #[test]
    fn a_machine_without_the_nvidia_driver_reports_no_device() {
        let found = probe();
        if !std::path::Path::new("/proc/driver/nvidia").exists() {
            assert!(!matches!(found, GpuProbe::Devices(n) if n > 0), "{found:?}");
        }
    }
}
