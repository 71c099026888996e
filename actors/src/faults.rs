//! Fault injection, part of the product: make chosen executions of chunk ops fail or panic,
//! and count what fired, so tests (and users) can check that jobs survive them.
//!
//! ```
//! use tessera_actors::{FaultInjector, FaultKind};
//! // The 3rd execution of a "fused_reduce" chunk panics; the 1st "combine" returns an error.
//! let faults = FaultInjector::new()
//!     .on_nth(Some("fused_reduce"), 3, FaultKind::Panic)
//!     .on_nth(Some("combine"), 1, FaultKind::Error);
//! assert_eq!(faults.injected(), 0);
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tessera_kernels::KernelError;

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The kernel returns [`KernelError::Injected`].
    Error,
    /// The kernel panics (the device turns it into [`KernelError::Panicked`]).
    Panic,
}

/// When a fault fires: at the `nth` execution (1-based) of op `op` (`None`: of any op), or at
/// every execution when `nth` is 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRule {
    /// The op's name (`ChunkOp::name`), or `None` for any op.
    pub op: Option<String>,
    /// Which execution, counted from 1 over the system's life; 0 for every one.
    pub nth: u64,
    /// What happens.
    pub kind: FaultKind,
}

/// A set of fault rules shared by the devices of one actor system.
#[derive(Debug, Default)]
pub struct FaultInjector {
    rules: Vec<FaultRule>,
    /// Executions counted per op name (and under `""` for all ops).
    executions: Mutex<HashMap<String, u64>>,
    injected: AtomicU64,
}

impl FaultInjector {
    /// No rules yet.
    pub fn new() -> FaultInjector {
        FaultInjector::default()
    }

    /// Adds a rule: fault `kind` at the `nth` execution of `op` (`None`: any op; `nth` 0:
    /// every execution).
    pub fn on_nth(mut self, op: Option<&str>, nth: u64, kind: FaultKind) -> FaultInjector {
        self.rules.push(FaultRule {
            op: op.map(str::to_string),
            nth,
            kind,
        });
        self
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// Counts one execution of `op` and injects the fault a rule asks for, if any. Called by
    /// a device right before it runs a kernel.
    pub fn before_kernel(&self, op: &str) -> Result<(), KernelError> {
        if self.rules.is_empty() {
            return Ok(());
        }
        let (this_op, any_op) = match self.executions.lock() {
            Ok(mut counts) => {
                let this_op = {
                    let c = counts.entry(op.to_string()).or_insert(0);
                    *c += 1;
                    *c
                };
                let any = counts.entry(String::new()).or_insert(0);
                *any += 1;
                (this_op, *any)
            }
            Err(_) => return Ok(()),
        };
        let fired = self.rules.iter().find(|r| {
            let count = if r.op.is_some() { this_op } else { any_op };
            r.op.as_deref().is_none_or(|o| o == op) && (r.nth == 0 || r.nth == count)
        });
        let Some(rule) = fired else { return Ok(()) };
        self.injected.fetch_add(1, Ordering::Relaxed);
        let what = format!("execution {this_op} of {op}");
        match rule.kind {
            FaultKind::Error => Err(KernelError::Injected(what)),
            FaultKind::Panic => std::panic::panic_any(format!("injected panic at {what}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_fire_at_their_execution_and_are_counted() {
        let f = FaultInjector::new()
            .on_nth(Some("combine"), 2, FaultKind::Error)
            .on_nth(None, 5, FaultKind::Error);
        assert!(f.before_kernel("combine").is_ok()); // any: 1
        assert!(f.before_kernel("fused").is_ok()); // any: 2
        assert!(matches!(
            f.before_kernel("combine"),
            Err(KernelError::Injected(_))
        )); // combine: 2
        assert!(f.before_kernel("fused").is_ok()); // any: 4
        assert!(f.before_kernel("fused").is_err()); // any: 5
        assert!(f.before_kernel("fused").is_ok());
        assert_eq!(f.injected(), 2);
    }

    #[test]
    fn panics_unwind_with_a_message() {
        let f = FaultInjector::new().on_nth(None, 0, FaultKind::Panic);
        let caught = std::panic::catch_unwind(|| f.before_kernel("fused"));
        assert!(caught.is_err());
        assert_eq!(f.injected(), 1);
    }
}
