//! Tessera's CUDA device, loaded at run time: nothing of CUDA is needed to build, and a
//! machine without a driver runs CPU-only. This crate discovers devices ([`probe`]), generates
//! one CUDA C kernel per fused chunk task from the CPU's IR ([`codegen`]) and compiles it
//! with NVRTC ([`nvrtc`]), and runs it on a device ([`Gpu`], with the pure parts of a
//! launch in [`launch`]); dataframe groupby partials and join matching run as the fixed
//! hash kernels of `frame.cu` (planned and assembled by [`frame_plan`]). GPU device
//! actors build on these.

pub mod codegen;
pub mod filter_gen;
pub mod frame_plan;
mod gpu;
pub mod launch;
pub mod nvrtc;
pub mod workloads;

pub use gpu::{compile_frame_kernels, Gpu, GPU_MIN_ELEMENTS};

#[cfg(test)]
mod tests;

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
