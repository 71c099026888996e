//! The GPUs a worker runs tasks on (`tessera-worker --gpus`): which ones, opened, each with
//! host threads of its own, as a GPU's device actor has in one process. The scheduler
//! sends a task to one of them (`RunTask.gpu`) when its op has a GPU kernel worth the
//! GPU's fixed cost; the kernel falls back to the CPU's where the GPU itself fails.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use tessera_actors::{WorkerPool, GPU_HOST_THREADS};
use tessera_cluster::error::ClusterError;
use tessera_cuda::{DeviceBackend, Gpu};

/// Which GPUs a worker runs tasks on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GpuChoice {
    /// None: every task runs on the CPU pool.
    #[default]
    None,
    /// Every visible GPU; the worker does not start where none can be used.
    All,
    /// Every visible GPU, or none (said in a log line) where none can be used.
    Auto,
    /// These device ordinals, in this order (distinct).
    Listed(Vec<usize>),
}

impl FromStr for GpuChoice {
    type Err = String;

    /// `all`, `auto`, `none`, or ordinals separated by commas (`0,1`).
    fn from_str(s: &str) -> Result<GpuChoice, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => return Ok(GpuChoice::All),
            "auto" => return Ok(GpuChoice::Auto),
            "none" | "" => return Ok(GpuChoice::None),
            _ => {}
        }
        let mut listed = Vec::new();
        for part in s.split(',') {
            let ordinal: usize = part.trim().parse().map_err(|_| {
                format!(
                    "{part:?} is not a GPU ordinal: expected all, auto, none or a list such as 0,1"
                )
            })?;
            if listed.contains(&ordinal) {
                return Err(format!("GPU {ordinal} is listed twice"));
            }
            listed.push(ordinal);
        }
        Ok(GpuChoice::Listed(listed))
    }
}

impl fmt::Display for GpuChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuChoice::None => f.write_str("none"),
            GpuChoice::All => f.write_str("all"),
            GpuChoice::Auto => f.write_str("auto"),
            GpuChoice::Listed(l) => {
                let names: Vec<String> = l.iter().map(usize::to_string).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

impl From<DeviceBackend> for GpuChoice {
    /// The choice of a worker started without `--gpus`, by the backend its environment
    /// names (`DeviceBackend::from_env`): none for `cpu`, every GPU for `cuda`, `auto`
    /// for `auto`.
    fn from(backend: DeviceBackend) -> GpuChoice {
        match backend {
            DeviceBackend::Cpu => GpuChoice::None,
            DeviceBackend::Cuda => GpuChoice::All,
            DeviceBackend::Auto => GpuChoice::Auto,
        }
    }
}

impl GpuChoice {
    /// Opens the GPUs chosen (each once per process), or says why they cannot be used.
    pub fn open(&self) -> Result<Vec<Arc<Gpu>>, ClusterError> {
        let opened = match self {
            GpuChoice::None => return Ok(Vec::new()),
            GpuChoice::All => tessera_cuda::open_shared(None),
            GpuChoice::Listed(listed) => tessera_cuda::open_shared(Some(listed)),
            GpuChoice::Auto => {
                return Ok(tessera_cuda::open_shared(None).unwrap_or_else(|cause| {
                    tracing::info!("--gpus auto: {cause}; running every task on the CPU pool");
                    Vec::new()
                }))
            }
        };
        opened.map_err(ClusterError::GpuUnavailable)
    }
}

/// The threads a worker's tasks run on: its CPU pool, and each GPU's own.
pub(super) struct Pools {
    /// The CPU pool (`--nthreads`).
    pub cpu: WorkerPool,
    /// Its GPUs, in the order it registered them (`RunTask.gpu` n is the nth).
    pub gpus: Vec<WorkerGpu>,
}

/// One GPU of the worker and the host threads that drive it, named `tw-g{ordinal}.{i}`.
pub(super) struct WorkerGpu {
    /// The device.
    pub gpu: Arc<Gpu>,
    /// Its host threads (as many as a GPU's device actor has).
    pub pool: WorkerPool,
}

impl WorkerGpu {
    /// `gpu` with its host threads started.
    pub fn start(gpu: Arc<Gpu>) -> Result<WorkerGpu, ClusterError> {
        let ordinal = gpu.ordinal();
        let pool = WorkerPool::new(GPU_HOST_THREADS, |i| format!("tw-g{ordinal}.{i}"))?;
        Ok(WorkerGpu { gpu, pool })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_print_back() {
        for (text, choice) in [
            ("all", GpuChoice::All),
            (" ALL ", GpuChoice::All),
            ("auto", GpuChoice::Auto),
            ("none", GpuChoice::None),
            ("0", GpuChoice::Listed(vec![0])),
            ("2, 0,1", GpuChoice::Listed(vec![2, 0, 1])),
        ] {
            assert_eq!(text.parse::<GpuChoice>(), Ok(choice.clone()), "{text}");
            assert_eq!(choice.to_string().parse::<GpuChoice>(), Ok(choice));
        }
    }

    #[test]
    fn bad_choices_are_errors_naming_the_part() {
        let e = "0,x".parse::<GpuChoice>().unwrap_err();
        assert!(e.contains("\"x\""), "{e}");
        let e = "1,-1".parse::<GpuChoice>().unwrap_err();
        assert!(e.contains("\"-1\""), "{e}");
        let e = "0,1,0".parse::<GpuChoice>().unwrap_err();
        assert!(e.contains("GPU 0 is listed twice"), "{e}");
        assert!("0,,1".parse::<GpuChoice>().is_err());
    }

    #[test]
    fn without_the_flag_the_backend_chooses() {
        let choice = |b: &str| b.parse::<DeviceBackend>().map(GpuChoice::from);
        assert_eq!(choice("cpu"), Ok(GpuChoice::None));
        assert_eq!(choice("CUDA"), Ok(GpuChoice::All));
        assert_eq!(choice("gpu"), Ok(GpuChoice::All));
        assert_eq!(choice("auto"), Ok(GpuChoice::Auto));
        assert!(choice("tpu").is_err());
    }

    /// Opening: none needs no driver; `auto` never fails; a GPU asked for by name opens
    /// where there is one and is an error naming the cause where there is none.
    #[test]
    fn asked_for_gpus_open_or_say_why_not() {
        assert!(GpuChoice::None.open().is_ok_and(|g| g.is_empty()));
        let auto = GpuChoice::Auto.open().expect("auto never fails");
        match GpuChoice::Listed(vec![0]).open() {
            Ok(gpus) => {
                assert_eq!(gpus.len(), 1);
                assert_eq!(gpus[0].ordinal(), 0);
                assert!(!auto.is_empty(), "auto found none where device 0 opens");
            }
            Err(ClusterError::GpuUnavailable(cause)) => {
                assert!(!cause.is_empty());
                assert!(
                    auto.is_empty(),
                    "auto found GPUs where device 0 fails: {cause}"
                );
            }
            Err(e) => panic!("not a GPU error: {e}"),
        }
        let far = match GpuChoice::Listed(vec![4096]).open() {
            Ok(gpus) => panic!("{} GPUs opened as device 4096", gpus.len()),
            Err(e) => e,
        };
        assert!(
            matches!(&far, ClusterError::GpuUnavailable(c) if c.contains("4096") || c.contains("driver")),
            "{far}"
        );
    }
}
