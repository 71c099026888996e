//! Fault injection, part of the product: make chosen chunk executions fail or panic, kill
//! the device or storage actor, drop stored chunks, damage spill files, make the disk tier
//! refuse writes, stall reads of kept chunks, or report fake memory readings; count what
//! fired, so tests (and users running fault drills) can check that jobs survive.
//!
//! Each [`FaultKind`] fires at one [`FaultPoint`]: kernel executions, chunk puts into
//! storage, spill writes, or reads of kept chunks. A rule fires at the `nth` event of that point (counted from 1
//! over the actor system's life) whose chunk op is `op` (`None`: any op), or at every such
//! event when `nth` is 0.
//!
//! ```
//! use tessera_actors::{FaultInjector, FaultKind};
//! // The 3rd "fused_reduce" execution panics; the 1st "combine" kills the device actor;
//! // the 5th chunk put into storage kills the storage actor.
//! let faults = FaultInjector::new()
//!     .on_nth(Some("fused_reduce"), 3, FaultKind::Panic)
//!     .on_nth(Some("combine"), 1, FaultKind::KillDevice)
//!     .on_nth(None, 5, FaultKind::KillStorage);
//! assert_eq!(faults.injected(), 0);
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tessera_kernels::KernelError;

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The kernel returns [`KernelError::Injected`].
    Error,
    /// The kernel panics (the device turns it into [`KernelError::Panicked`]).
    Panic,
    /// The device actor dies instead of running the task (the supervisor restarts it).
    KillDevice,
    /// The storage actor dies instead of storing the chunk, losing every chunk it held
    /// (the supervisor restarts it; lineage recomputes what is still needed).
    KillStorage,
    /// Storage discards the chunk instead of keeping it (as if its memory were lost).
    DropChunk,
    /// The chunk's spill file is damaged right after it is written (one byte flipped).
    CorruptSpill,
    /// The chunk's spilled bytes are wiped (zeros in their place) right after they are
    /// written, as a lost disk block would be.
    DeleteSpill,
    /// Writing the spill file fails as on a full or unwritable disk.
    SpillWriteFails,
    /// Storage never answers a read of kept chunks, as on a hung disk: the reader's
    /// [`crate::SystemConfig::read_timeout`] ends its wait.
    StallRead,
}

/// Where a [`FaultKind`] is counted and fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// A device about to run a chunk task.
    Kernel,
    /// Storage receiving a produced chunk.
    Put,
    /// Storage writing a chunk to the disk tier.
    Spill,
    /// Storage asked for kept chunks' data (`ActorSystem::read_kept`; op `persisted`).
    Read,
}

impl FaultKind {
    /// The event at which this kind fires.
    pub fn point(self) -> FaultPoint {
        match self {
            FaultKind::Error | FaultKind::Panic | FaultKind::KillDevice => FaultPoint::Kernel,
            FaultKind::KillStorage | FaultKind::DropChunk => FaultPoint::Put,
            FaultKind::CorruptSpill | FaultKind::DeleteSpill | FaultKind::SpillWriteFails => {
                FaultPoint::Spill
            }
            FaultKind::StallRead => FaultPoint::Read,
        }
    }
}

/// When a fault fires (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The chunk op's name (`ChunkOp::name`), or `None` for any op.
    pub op: Option<String>,
    /// Which event of the kind's point, counted from 1; 0 for every one.
    pub nth: u64,
    /// What happens.
    pub kind: FaultKind,
}

/// Host memory as the session sees it when it sizes its default budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryReading {
    /// Bytes of memory the process may use.
    pub total: u64,
    /// Bytes free now.
    pub available: u64,
}

/// A set of fault rules shared by the actors of one actor system.
#[derive(Debug, Default)]
pub struct FaultInjector {
    rules: Vec<FaultRule>,
    fake_memory: Option<MemoryReading>,
    /// Events counted per point and op name (`""`: all ops).
    events: Mutex<HashMap<(FaultPoint, String), u64>>,
    injected: Mutex<HashMap<FaultKind, u64>>,
    total_injected: AtomicU64,
}

impl FaultInjector {
    /// No rules yet.
    pub fn new() -> FaultInjector {
        FaultInjector::default()
    }

    /// Adds a rule: fault `kind` at the `nth` event of its point whose op is `op` (`None`:
    /// any op; `nth` 0: every such event).
    pub fn on_nth(mut self, op: Option<&str>, nth: u64, kind: FaultKind) -> FaultInjector {
        self.rules.push(FaultRule {
            op: op.map(str::to_string),
            nth,
            kind,
        });
        self
    }

    /// Makes the session size its default memory budget from this reading instead of the
    /// machine's.
    pub fn fake_memory(mut self, reading: MemoryReading) -> FaultInjector {
        self.fake_memory = Some(reading);
        self
    }

    /// The fake memory reading, if one was set (counted as an injected fault when read).
    pub fn memory_reading(&self) -> Option<MemoryReading> {
        let reading = self.fake_memory?;
        self.total_injected.fetch_add(1, Ordering::Relaxed);
        Some(reading)
    }

    /// Faults injected so far, of every kind (a fake memory reading counts once per read).
    pub fn injected(&self) -> u64 {
        self.total_injected.load(Ordering::Relaxed)
    }

    /// Faults of `kind` injected so far.
    pub fn injected_of(&self, kind: FaultKind) -> u64 {
        self.injected
            .lock()
            .map_or(0, |m| m.get(&kind).copied().unwrap_or(0))
    }

    /// Events counted so far at `point`, of every op. Events are counted only while the
    /// injector has a rule: a drill can add one that never fires (`nth` = `u64::MAX`) to
    /// learn how many events a job has before choosing where to strike.
    pub fn events(&self, point: FaultPoint) -> u64 {
        self.events
            .lock()
            .map_or(0, |m| m.get(&(point, String::new())).copied().unwrap_or(0))
    }

    /// Starts counting events afresh, so every rule can fire again (injected totals are
    /// kept): a benchmark re-arms its drill before each timed run.
    pub fn rearm(&self) {
        if let Ok(mut m) = self.events.lock() {
            m.clear();
        }
    }

    /// Counts one event at `point` for a chunk of op `op` and returns the fault a rule
    /// asks for, if any (the first matching rule wins). Called by the actors.
    pub fn at(&self, point: FaultPoint, op: &str) -> Option<FaultKind> {
        if self.rules.is_empty() {
            return None;
        }
        let (this_op, any_op) = match self.events.lock() {
            Ok(mut counts) => {
                let mut bump = |name: &str| {
                    let c = counts.entry((point, name.to_string())).or_insert(0);
                    *c += 1;
                    *c
                };
                (bump(op), bump(""))
            }
            Err(_) => return None,
        };
        let rule = self.rules.iter().find(|r| {
            let count = if r.op.is_some() { this_op } else { any_op };
            r.kind.point() == point
                && r.op.as_deref().is_none_or(|o| o == op)
                && (r.nth == 0 || r.nth == count)
        })?;
        self.count(rule.kind);
        tracing::warn!(kind = ?rule.kind, op, event = this_op, "injecting a fault");
        Some(rule.kind)
    }

    fn count(&self, kind: FaultKind) {
        if let Ok(mut m) = self.injected.lock() {
            *m.entry(kind).or_default() += 1;
        }
        self.total_injected.fetch_add(1, Ordering::Relaxed);
    }

    /// Runs the kernel-level part of an injected fault: an error or a panic. Called by a
    /// device on the thread that would run the kernel.
    pub fn strike(kind: FaultKind, op: &str) -> Result<(), KernelError> {
        let what = format!("injected {kind:?} at {op}");
        match kind {
            FaultKind::Panic => std::panic::panic_any(what),
            _ => Err(KernelError::Injected(what)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_fire_at_their_event_and_are_counted() {
        let f = FaultInjector::new()
            .on_nth(Some("combine"), 2, FaultKind::Error)
            .on_nth(None, 5, FaultKind::KillDevice)
            .on_nth(None, 1, FaultKind::DropChunk);
        let k = FaultPoint::Kernel;
        assert_eq!(f.at(k, "combine"), None); // any: 1
        assert_eq!(f.at(k, "fused"), None); // any: 2
        assert_eq!(f.at(k, "combine"), Some(FaultKind::Error)); // combine: 2
        assert_eq!(f.at(k, "fused"), None); // any: 4
        assert_eq!(f.at(k, "fused"), Some(FaultKind::KillDevice)); // any: 5
        assert_eq!(f.at(k, "fused"), None);
        // Puts are counted apart from kernel executions.
        assert_eq!(f.at(FaultPoint::Put, "fused"), Some(FaultKind::DropChunk));
        assert_eq!(f.at(FaultPoint::Put, "fused"), None);
        assert_eq!(f.at(FaultPoint::Spill, "fused"), None);
        f.rearm();
        assert_eq!(f.at(FaultPoint::Put, "fused"), Some(FaultKind::DropChunk));
        assert_eq!(f.injected(), 4);
        assert_eq!(f.events(FaultPoint::Kernel), 0);
        assert_eq!(f.events(FaultPoint::Put), 1);
        assert_eq!(f.injected_of(FaultKind::KillDevice), 1);
        assert_eq!(f.injected_of(FaultKind::Panic), 0);
    }

    #[test]
    fn strikes_error_or_unwind_with_a_message() {
        assert!(matches!(
            FaultInjector::strike(FaultKind::Error, "fused"),
            Err(KernelError::Injected(_))
        ));
        let caught = std::panic::catch_unwind(|| FaultInjector::strike(FaultKind::Panic, "x"));
        assert!(caught.is_err());
    }

    #[test]
    fn fake_memory_readings_are_reported_and_counted() {
        let reading = MemoryReading {
            total: 1 << 20,
            available: 1 << 19,
        };
        let f = FaultInjector::new().fake_memory(reading);
        assert_eq!(f.memory_reading(), Some(reading));
        assert_eq!(f.injected(), 1);
        assert_eq!(FaultInjector::new().memory_reading(), None);
    }
}
