//! How long tasks run, learnt from the timed runs reported (`PlannerState::record_run`: a
//! cluster's workers time every task; in one process runs are timed while a recorder is
//! on), and what moving their inputs costs:
//! [`PlannerState::place`](super::PlannerState) weighs moving a task's inputs to an idle
//! device against waiting for the busy device that holds them.
//!
//! A task's run time is modelled per op and kind of device as time per input byte, or as
//! time per task for a task without input bytes (a root, such as a random block; a fused
//! op may be either), a running mean over the recent runs of its kind; a move as its bytes
//! at [`MOVE_RATE`]. Placement also weighs a GPU's time for a dataframe task against a CPU
//! core's (see `placement`).

use crate::ids::DeviceKind;
use std::collections::HashMap;
use std::time::Duration;

/// Bytes per second a move of task inputs between devices is assumed to carry. Dask's
/// scheduler assumes 100 MB/s until it has measured; a loopback Flight transfer between
/// two workers carries about 1 GB/s when cores are free, and a few hundred MB/s when the
/// same cores also run both workers' tasks.
pub const MOVE_RATE: u64 = 250 << 20;

/// The weight of the newest run in an op's running mean.
const NEWEST_WEIGHT: f64 = 1.0 / 8.0;

/// The time moving `bytes` of inputs takes at [`MOVE_RATE`].
pub fn move_time(bytes: u64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / MOVE_RATE as f64)
}

/// Per op, kind of device and whether its tasks read input bytes, a running mean of
/// nanoseconds per input byte (per task, for tasks without input bytes).
#[derive(Debug, Default)]
pub(super) struct RunCosts {
    nanos_per_byte: HashMap<(&'static str, DeviceKind, bool), f64>,
}

impl RunCosts {
    /// A task of `op` that read `bytes_in` ran on a device of `kind` for `took` (zero: not
    /// measured, ignored).
    pub fn record(&mut self, op: &'static str, kind: DeviceKind, bytes_in: u64, took: Duration) {
        if took.is_zero() {
            return;
        }
        let newest = took.as_nanos() as f64 / bytes_in.max(1) as f64;
        self.nanos_per_byte
            .entry((op, kind, bytes_in > 0))
            .and_modify(|mean| *mean += NEWEST_WEIGHT * (newest - *mean))
            .or_insert(newest);
    }

    /// How long a task of `op` reading `bytes_in` is expected to run on a device of `kind`
    /// (`None` before any run of `op` there was reported).
    pub fn estimate(&self, op: &'static str, kind: DeviceKind, bytes_in: u64) -> Option<Duration> {
        let per_byte = self.nanos_per_byte.get(&(op, kind, bytes_in > 0))?;
        Some(Duration::from_nanos(
            (per_byte * bytes_in.max(1) as f64) as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_s_estimate_scales_with_its_input_and_follows_recent_runs() {
        const MB: u64 = 1_000_000;
        let ms = Duration::from_millis;
        let (cpu, gpu) = (DeviceKind::Cpu, DeviceKind::Cuda);
        let mut costs = RunCosts::default();
        assert_eq!(costs.estimate("matmul", cpu, MB), None, "nothing seen yet");
        costs.record("matmul", cpu, MB, Duration::ZERO);
        assert_eq!(
            costs.estimate("matmul", cpu, MB),
            None,
            "zero: not measured"
        );
        // 1 MB in 1 ms: 2 MB is expected to take 2 ms.
        costs.record("matmul", cpu, MB, ms(1));
        assert_eq!(costs.estimate("matmul", cpu, 2 * MB), Some(ms(2)));
        // A run 9 times as slow moves the mean an eighth of the way: 1 + 8/8 = 2 ns a byte.
        costs.record("matmul", cpu, MB, ms(9));
        assert_eq!(costs.estimate("matmul", cpu, 2 * MB), Some(ms(4)));
        // A task without input bytes is timed per task, apart from those with inputs.
        costs.record("matmul", cpu, 0, ms(3));
        assert_eq!(costs.estimate("matmul", cpu, 0), Some(ms(3)));
        assert_eq!(costs.estimate("matmul", cpu, 2 * MB), Some(ms(4)));
        assert_eq!(costs.estimate("qr", cpu, 1), None, "other ops stay unknown");
        // A GPU's runs of the op are its own.
        assert_eq!(costs.estimate("matmul", gpu, MB), None);
        costs.record("matmul", gpu, MB, Duration::from_micros(100));
        assert_eq!(
            costs.estimate("matmul", gpu, 2 * MB),
            Some(Duration::from_micros(200))
        );
        assert_eq!(costs.estimate("matmul", cpu, 2 * MB), Some(ms(4)));
    }

    #[test]
    fn a_move_takes_its_bytes_at_the_move_rate() {
        assert_eq!(move_time(MOVE_RATE), Duration::from_secs(1));
        assert_eq!(move_time(MOVE_RATE / 4), Duration::from_millis(250));
    }
}
