//! Which devices work runs on: the CPU pool alone, or the CPU pool and the GPUs (Dask's
//! `array.backend`, Mars's `gpu=True`) — a session's backend, and the GPUs a cluster
//! worker started without `--gpus` opens, both named by [`BACKEND_VAR`].

use crate::BACKEND_VAR;
use std::ffi::OsStr;
use std::fmt;
use std::str::FromStr;

/// Where work runs.
///
/// The default is [`DeviceBackend::Cpu`], not `Auto`: the GPU path does not run on a GPU in
/// this project's CI, a GPU session compiles each new kernel with NVRTC on first use (a
/// fixed cost small jobs notice), and a session quietly changing device with the machine
/// it lands on would make timings and float sums of one program differ between hosts.
/// `Auto` is one word away (`TESSERA_BACKEND=auto`) for those who want it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceBackend {
    /// The CPU pool only.
    #[default]
    Cpu,
    /// The CPU pool and every visible CUDA GPU; an error naming the cause where none can
    /// be used.
    Cuda,
    /// The GPUs where they can be used, else the CPU pool alone (said in a log line).
    Auto,
}

/// A backend name that is not `cpu`, `cuda` (or `gpu`) or `auto`; the message names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnknownBackend(pub String);

impl DeviceBackend {
    /// The backend named by [`BACKEND_VAR`] (`None` when it is unset or empty).
    pub fn from_env() -> Result<Option<DeviceBackend>, UnknownBackend> {
        DeviceBackend::from_env_value(std::env::var_os(BACKEND_VAR).as_deref())
    }

    /// [`DeviceBackend::from_env`] for the value `value` (the variable's, if set).
    pub fn from_env_value(value: Option<&OsStr>) -> Result<Option<DeviceBackend>, UnknownBackend> {
        let Some(value) = value.filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        let text = value.to_str().ok_or_else(|| {
            UnknownBackend(format!("{BACKEND_VAR}={value:?} is not cpu, cuda or auto"))
        })?;
        text.parse()
            .map(Some)
            .map_err(|e| UnknownBackend(format!("{BACKEND_VAR}: {e}")))
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
    type Err = UnknownBackend;

    /// `cpu`, `cuda` (also `gpu`) or `auto`, in any case, surrounding spaces ignored.
    fn from_str(s: &str) -> Result<DeviceBackend, UnknownBackend> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(DeviceBackend::Cpu),
            "cuda" | "gpu" => Ok(DeviceBackend::Cuda),
            "auto" => Ok(DeviceBackend::Auto),
            _ => Err(UnknownBackend(format!(
                "unknown backend {s:?}: expected cpu, cuda or auto"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_in_any_case_and_unknown_ones_are_errors() {
        assert_eq!("cpu".parse::<DeviceBackend>(), Ok(DeviceBackend::Cpu));
        assert_eq!(" CUDA ".parse::<DeviceBackend>(), Ok(DeviceBackend::Cuda));
        assert_eq!("gpu".parse::<DeviceBackend>(), Ok(DeviceBackend::Cuda));
        assert_eq!("Auto".parse::<DeviceBackend>(), Ok(DeviceBackend::Auto));
        let UnknownBackend(m) = "tpu".parse::<DeviceBackend>().unwrap_err();
        assert!(m.contains("\"tpu\""), "{m}");
        for b in [DeviceBackend::Cpu, DeviceBackend::Cuda, DeviceBackend::Auto] {
            assert_eq!(b.to_string().parse::<DeviceBackend>(), Ok(b));
        }
    }

    #[test]
    fn the_environment_value_is_optional_and_checked() {
        assert_eq!(DeviceBackend::from_env_value(None), Ok(None));
        assert_eq!(
            DeviceBackend::from_env_value(Some(OsStr::new(""))),
            Ok(None)
        );
        assert_eq!(
            DeviceBackend::from_env_value(Some(OsStr::new("auto"))),
            Ok(Some(DeviceBackend::Auto))
        );
        let UnknownBackend(m) =
            DeviceBackend::from_env_value(Some(OsStr::new("cuda:1"))).unwrap_err();
        assert!(m.contains(BACKEND_VAR) && m.contains("cuda:1"), "{m}");
    }
}
