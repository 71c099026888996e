//! Device memory reserved by the tasks running on one GPU at once.
//!
//! A GPU's host threads each run one task; a task's device allocations (its inputs copied
//! in, its working buffers, its output before the copy back) live while it runs (inputs
//! may be kept longer: see below).
//! Before it starts, a task reserves an estimate of them ([`device_estimate`]); while
//! others run, a task whose estimate does not fit in what they left waits for them, so
//! tasks together do not exhaust the device (an allocation that fails sends its task to the
//! CPU kernels). A task larger than the whole budget runs alone. What stays on the device
//! between tasks, the kept copies of chunks (`resident`), has its own share of the
//! memory beside this budget and is freed, never spilled, when it needs room.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use tessera_kernels::linalg::LinalgOp;
use tessera_kernels::{ChunkData, ChunkOp};

/// Device bytes of a task of `op` on `inputs`: the inputs copied in, the output
/// ([`ChunkOp::output_estimate`]), and for a dataframe op (hash tables, row lists, the
/// matched pairs) or a QR (the block and Q transposed) twice the inputs again.
pub(super) fn device_estimate(op: &ChunkOp, inputs: &[Arc<ChunkData>]) -> u64 {
    let sizes = inputs.iter().map(|d| d.nbytes() as u64);
    let input: u64 = sizes.clone().sum();
    let output = op.output_estimate(sizes).unwrap_or(0);
    let working = match op {
        ChunkOp::Frame(_) | ChunkOp::Linalg(LinalgOp::Qr(_)) => input.saturating_mul(2),
        _ => 0,
    };
    input.saturating_add(output).saturating_add(working)
}

/// One GPU's budget of device bytes for running tasks.
#[derive(Debug)]
pub(super) struct DeviceBudget {
    limit: u64,
    held: Mutex<Held>,
    freed: Condvar,
}

/// What the running tasks hold.
#[derive(Debug, Default)]
struct Held {
    bytes: u64,
    tasks: usize,
}

/// A running task's bytes, given back when dropped.
#[derive(Debug)]
pub(super) struct DeviceReservation<'a> {
    budget: &'a DeviceBudget,
    bytes: u64,
}

impl DeviceBudget {
    /// A budget of `limit` bytes.
    pub(super) fn new(limit: u64) -> DeviceBudget {
        DeviceBudget {
            limit,
            held: Mutex::default(),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `bytes` (at most the whole budget) taken at once when they fit beside the running
    /// tasks' or none runs; `None` where [`DeviceBudget::reserve`] would wait.
    #[cfg(test)]
    fn try_reserve(&self, bytes: u64) -> Option<DeviceReservation<'_>> {
        let mut held = self.lock();
        self.take(&mut held, bytes)
    }

    /// `bytes` (at most the whole budget), waiting until they fit beside the running tasks'
    /// or none runs.
    pub(super) fn reserve(&self, bytes: u64) -> DeviceReservation<'_> {
        let mut held = self.lock();
        loop {
            if let Some(r) = self.take(&mut held, bytes) {
                return r;
            }
            tracing::debug!(
                bytes,
                held = held.bytes,
                limit = self.limit,
                "a GPU task waits for device memory"
            );
            held = self
                .freed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn take(&self, held: &mut Held, bytes: u64) -> Option<DeviceReservation<'_>> {
        let bytes = bytes.min(self.limit);
        if held.tasks > 0 && held.bytes.saturating_add(bytes) > self.limit {
            return None;
        }
        held.bytes += bytes;
        held.tasks += 1;
        Some(DeviceReservation {
            budget: self,
            bytes,
        })
    }

    /// Bytes the running tasks hold.
    #[cfg(test)]
    fn held(&self) -> u64 {
        self.lock().bytes
    }
}

impl Drop for DeviceReservation<'_> {
    fn drop(&mut self) {
        let mut held = self.budget.lock();
        held.bytes -= self.bytes;
        held.tasks -= 1;
        drop(held);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use tessera_kernels::frame::ops::FrameOp;
    use tessera_kernels::tensor::{Buffer, HostTensor};

    #[test]
    fn tasks_share_the_budget_and_one_too_large_runs_alone() {
        let budget = DeviceBudget::new(100);
        let a = budget.try_reserve(60).unwrap();
        let b = budget.try_reserve(40).unwrap();
        assert_eq!(budget.held(), 100);
        assert!(budget.try_reserve(1).is_none());
        drop(b);
        assert!(budget.try_reserve(41).is_none());
        let c = budget.try_reserve(40).unwrap();
        drop((a, c));
        assert_eq!(budget.held(), 0);
        // Larger than the budget: it takes all of it, alone.
        let big = budget.try_reserve(1_000).unwrap();
        assert_eq!(budget.held(), 100);
        assert!(budget.try_reserve(0).is_some_and(|z| z.bytes == 0));
        assert!(budget.try_reserve(1).is_none());
        drop(big);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_waiting_task_starts_when_the_running_one_ends() {
        let budget = Arc::new(DeviceBudget::new(100));
        let first = budget.try_reserve(80).unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let r = budget.reserve(50);
                tx.send(r.bytes).unwrap();
            })
        };
        // Whether or not its thread has run yet, it has not got its bytes: 80 are held.
        assert!(rx.try_recv().is_err());
        drop(first);
        assert_eq!(rx.recv().unwrap(), 50);
        waiter.join().unwrap();
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn the_estimate_counts_inputs_output_and_a_frame_ops_working_memory() {
        let chunk = |n: usize| {
            let t = HostTensor::new(vec![n], Buffer::F64(vec![1.0; n])).unwrap();
            Arc::new(ChunkData::Tensor(t))
        };
        let inputs = [chunk(10), chunk(30)];
        let concat = ChunkOp::Frame(FrameOp::Concat { limit: None });
        // Inputs 80 + 240 bytes; a frame op's output is their sum, its working memory twice it.
        assert_eq!(device_estimate(&concat, &inputs), 320 + 320 + 640);
        // Literal data allocates nothing new: the inputs alone.
        assert_eq!(device_estimate(&ChunkOp::Literal(chunk(1)), &inputs), 320);
    }
}
