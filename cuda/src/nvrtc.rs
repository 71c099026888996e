//! Compiling generated kernels to PTX with NVRTC, loaded at run time.
//!
//! cudarc opens NVRTC through the dynamic loader under the names `libnvrtc.so`,
//! `libnvrtc.so.13` (this build's CUDA major version) and older ones, so a CUDA toolkit on
//! the loader's path, or `LD_LIBRARY_PATH` pointing at the `nvidia-cuda-nvrtc` wheel's
//! `nvidia/cu13/lib`, is enough; no GPU is needed to compile. cudarc panics when the
//! library or a symbol is missing: every call here checks for the library first and
//! contains panics.

use super::codegen::CudaKernel;
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use tessera_kernels::KernelError;

/// NVRTC's `(major, minor)` version, or `None` when the library cannot be loaded or
/// queried (looked up once per process).
pub fn nvrtc_version() -> Option<(i32, i32)> {
    static VERSION: OnceLock<Option<(i32, i32)>> = OnceLock::new();
    *VERSION.get_or_init(|| {
        // SAFETY: only tries to open the shared library by name; no symbol is called.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return None;
        }
        catch_unwind(|| {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: both pointers are valid for writes of one `c_int`.
            let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
            r.result().ok().map(|()| (major, minor))
        })
        .ok()
        .flatten()
    })
}

/// True when NVRTC can be loaded and answers (never panics).
pub fn nvrtc_available() -> bool {
    nvrtc_version().is_some()
}

/// The NVRTC options generated kernels are compiled with, for virtual architecture
/// `arch` (e.g. `compute_90`): IEEE division and square root, no denormal flushing and
/// no FMA contraction (the kernels' exactness does not depend on these, since they use
/// rounding intrinsics, but library calls honour them), C++17, device code by default.
pub fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-default-device".into(),
        "--std=c++17".into(),
        "--fmad=false".into(),
        "--ftz=false".into(),
        "--prec-div=true".into(),
        "--prec-sqrt=true".into(),
    ]
}

/// Compiles `kernel` to PTX for virtual architecture `arch` (`compute_` and a number,
/// such as `compute_90`); the PTX holds one entry point named [`CudaKernel::name`].
///
/// Errors: `BadInput` for another kind of `arch`; `DeviceUnavailable` when NVRTC cannot
/// be loaded; `DeviceCompile` when it rejects the source (the message carries NVRTC's log).
pub fn compile(kernel: &CudaKernel, arch: &str) -> Result<Ptx, KernelError> {
    compile_source(&kernel.name, &kernel.source, arch)
}

/// Compiles CUDA C++ `source` (named `name` in NVRTC's messages) to PTX for `arch`, with
/// the options and errors of [`compile`].
pub fn compile_source(name: &str, source: &str, arch: &str) -> Result<Ptx, KernelError> {
    let valid_arch = arch
        .strip_prefix("compute_")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()));
    if !valid_arch {
        return Err(KernelError::BadInput(format!(
            "NVRTC target {arch:?} is not a virtual architecture such as compute_90"
        )));
    }
    if !nvrtc_available() {
        return Err(KernelError::DeviceUnavailable(
            "NVRTC (libnvrtc.so) could not be loaded".into(),
        ));
    }
    let opts = CompileOptions {
        options: options(arch),
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    match catch_unwind(AssertUnwindSafe(|| {
        cudarc::nvrtc::compile_ptx_with_opts(source, opts)
    })) {
        Ok(Ok(ptx)) => Ok(ptx),
        Ok(Err(CompileError::CompileError { nvrtc, log, .. })) => {
            Err(KernelError::DeviceCompile(format!(
                "NVRTC could not compile {name} ({nvrtc:?}):\n{}",
                log.to_string_lossy()
            )))
        }
        Ok(Err(e)) => Err(KernelError::DeviceUnavailable(format!(
            "NVRTC failed on {name}: {e:?}"
        ))),
        Err(_) => Err(KernelError::DeviceUnavailable(format!(
            "NVRTC panicked while compiling {name}"
        ))),
    }
}
