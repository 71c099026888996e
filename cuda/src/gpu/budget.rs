//! Device memory reserved by the tasks running on one GPU at once.
//!
//! A GPU's host threads each run one task; a task's device allocations (its inputs copied
//! in, its working buffers, its output before the copy back) live while it runs (inputs
//! may be kept longer: see below).
//! Before it starts, a task reserves an estimate of them ([`device_estimate`]) in the GPU's
//! [`DevicePool`]; while others run, a task whose estimate does not fit in what they left
//! waits for them, so
//! tasks together do not exhaust the device (an allocation that fails sends its task to the
//! CPU kernels). A task larger than the whole budget runs alone. What stays on the device
//! between tasks, the kept copies of chunks (`resident`), has its own share of the
//! memory beside this budget and is freed, never spilled, when it needs room.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use tessera_core::{MemoryPool, Reservation};
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

/// One GPU's pool of device bytes for running tasks (a [`MemoryPool`]): it admits a
/// reservation that fits beside the running tasks', or any while none holds device bytes,
/// so that one task larger than the whole budget runs alone.
#[derive(Debug)]
pub(super) struct DevicePool {
    limit: u64,
    held: Mutex<Held>,
    freed: Condvar,
}

/// What the running tasks hold.
#[derive(Debug, Default)]
struct Held {
    bytes: u64,
    peak: u64,
    /// Reservations given back so far: a waiting task that saw this number waits until
    /// it changes.
    returns: u64,
}

impl DevicePool {
    /// A pool of `limit` bytes.
    pub(super) fn new(limit: u64) -> Arc<DevicePool> {
        Arc::new(DevicePool {
            limit,
            held: Mutex::default(),
            freed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `bytes` (at most the whole budget), waiting until the pool admits them.
    pub(super) fn reserve(self: &Arc<Self>, bytes: u64) -> Reservation {
        let bytes = bytes.min(self.limit);
        loop {
            let seen = self.lock().returns;
            if let Some(r) = Reservation::try_new(self.clone(), bytes) {
                return r;
            }
            let mut held = self.lock();
            tracing::debug!(
                bytes,
                held = held.bytes,
                limit = self.limit,
                "a GPU task waits for device memory"
            );
            while held.returns == seen {
                held = self
                    .freed
                    .wait(held)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        }
    }
}

impl MemoryPool for DevicePool {
    fn try_grow(&self, bytes: u64) -> bool {
        let mut held = self.lock();
        if held.bytes > 0 && held.bytes.saturating_add(bytes) > self.limit {
            return false;
        }
        held.bytes += bytes;
        held.peak = held.peak.max(held.bytes);
        true
    }

    fn grow(&self, bytes: u64) {
        let mut held = self.lock();
        held.bytes = held.bytes.saturating_add(bytes);
        held.peak = held.peak.max(held.bytes);
    }

    fn shrink(&self, bytes: u64) {
        let mut held = self.lock();
        held.bytes -= bytes;
        held.returns += 1;
        drop(held);
        self.freed.notify_all();
    }

    fn budget(&self) -> u64 {
        self.limit
    }

    fn used(&self) -> u64 {
        self.lock().bytes
    }

    fn peak(&self) -> u64 {
        self.lock().peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use tessera_kernels::frame::ops::FrameOp;
    use tessera_kernels::tensor::{Buffer, HostTensor};

    /// `bytes` (at most the whole budget) if the pool admits them now.
    fn try_reserve(pool: &Arc<DevicePool>, bytes: u64) -> Option<Reservation> {
        Reservation::try_new(pool.clone(), bytes.min(pool.limit))
    }

    #[test]
    fn tasks_share_the_budget_and_one_too_large_runs_alone() {
        let budget = DevicePool::new(100);
        let a = try_reserve(&budget, 60).unwrap();
        let b = try_reserve(&budget, 40).unwrap();
        assert_eq!(budget.used(), 100);
        assert!(try_reserve(&budget, 1).is_none());
        drop(b);
        assert!(try_reserve(&budget, 41).is_none());
        let c = try_reserve(&budget, 40).unwrap();
        drop((a, c));
        assert_eq!(budget.used(), 0);
        // Larger than the budget: it takes all of it, alone.
        let big = try_reserve(&budget, 1_000).unwrap();
        assert_eq!(budget.used(), 100);
        assert!(try_reserve(&budget, 0).is_some_and(|z| z.bytes() == 0));
        assert!(try_reserve(&budget, 1).is_none());
        drop(big);
        assert_eq!((budget.used(), budget.peak()), (0, 100));
    }

    #[test]
    fn a_waiting_task_starts_when_the_running_one_ends() {
        let budget = DevicePool::new(100);
        let first = try_reserve(&budget, 80).unwrap();
        let (tx, rx) = mpsc::channel();
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let r = budget.reserve(50);
                tx.send(r.bytes()).unwrap();
            })
        };
        // Whether or not its thread has run yet, it has not got its bytes: 80 are held.
        assert!(rx.try_recv().is_err());
        drop(first);
        assert_eq!(rx.recv().unwrap(), 50);
        waiter.join().unwrap();
        assert_eq!(budget.used(), 0);
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
