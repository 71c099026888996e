//! Room in the worker's memory budget for a task, waited for as the planner waits.
//!
//! A task reserves its estimate ([`super::direct::task_estimate`]: its output and working
//! memory) before it runs on the pool, and holds it until storage has its output. One that
//! does not fit waits for room, one task at a time in arrival order (later tasks do not
//! overtake it): storage is asked to spill ahead for it ([`ActorSystem::make_room`]), and
//! it tries again each time a running task ends. With nothing running and storage having
//! spilled what it can, it is reserved past the budget (the job must progress), unless
//! what would be over the budget could not go to disk either: then it fails with the
//! planner's out-of-memory error ([`Reservation::past_budget`]). These are the planner's
//! rules (`tessera_core::planner_state`), kept here instead of running the task as a job on
//! a planner of the worker's own.

use super::direct::failed;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_actors::{ActorSystem, JobError, Reservation};
use tessera_proto::pb;
use tokio::sync::{Mutex, Notify};

/// How long a task waiting for room waits for a running task's end before it looks again
/// (memory also comes free when the scheduler releases chunks this worker holds).
const RECHECK: Duration = Duration::from_millis(20);

/// The tasks waiting for room and the tasks holding it.
#[derive(Debug, Default)]
pub(super) struct Room {
    /// Held by the task waiting for room: the others queue behind it.
    turn: Mutex<()>,
    /// Tasks running on the pool with a reservation.
    running: AtomicUsize,
    /// Notified when one of them ends.
    ended: Notify,
}

impl Room {
    /// `bytes` reserved now, if they fit and no task waits for room before this one.
    pub(super) fn try_reserve(&self, system: &ActorSystem, bytes: u64) -> Option<Reservation> {
        let _turn = self.turn.try_lock().ok()?;
        system.try_reserve(bytes)
    }

    /// `bytes` reserved once they fit (see the module's rules); the status of a task that
    /// cannot have them.
    pub(super) async fn reserve(
        &self,
        system: &Arc<ActorSystem>,
        bytes: u64,
    ) -> Result<Reservation, pb::TaskStatus> {
        let _turn = self.turn.lock().await;
        loop {
            if let Some(room) = system.try_reserve(bytes) {
                return Ok(room);
            }
            let idle = self.running.load(Ordering::Acquire) == 0;
            let ended = self.ended.notified();
            let asked = Arc::clone(system);
            let made = tokio::task::spawn_blocking(move || {
                asked.make_room(bytes).map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|made| made);
            if let Err(e) = made {
                return Err(failed(format!("making room for a task: {e}"), true));
            }
            if let Some(room) = system.try_reserve(bytes) {
                return Ok(room);
            }
            if idle {
                return Reservation::past_budget(system.pool().clone(), bytes)
                    .map_err(|out| failed(JobError::OutOfMemory(out).to_string(), true));
            }
            let _ = tokio::time::timeout(RECHECK, ended).await;
        }
    }

    /// A task with a reservation starts running.
    pub(super) fn started(&self) {
        self.running.fetch_add(1, Ordering::AcqRel);
    }

    /// A task that [`Room::started`] ended and gave its reservation back.
    pub(super) fn ended(&self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
        self.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use tessera_actors::SystemConfig;

    fn system(budget: u64, disk_budget: u64) -> Arc<ActorSystem> {
        Arc::new(
            ActorSystem::start(SystemConfig {
                cpu_threads: 1,
                host_memory_budget: budget,
                disk_budget,
                thread_prefix: "troom".into(),
                ..SystemConfig::default()
            })
            .unwrap(),
        )
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_waiting_task_gets_room_when_a_running_task_ends_and_later_tasks_queue_behind_it() {
        let system = system(1000, u64::MAX);
        let room = Arc::new(Room::default());
        let running = room.try_reserve(&system, 800).unwrap();
        room.started();
        runtime().block_on(async {
            let waiter = {
                let (room, system) = (Arc::clone(&room), Arc::clone(&system));
                tokio::spawn(async move { room.reserve(&system, 500).await })
            };
            // 800 + 500 is past the budget, and a task runs that will free memory: it waits.
            tokio::time::sleep(RECHECK * 5).await;
            assert!(!waiter.is_finished());
            // 100 more would fit, but a task waits for room before it.
            assert!(room.try_reserve(&system, 100).is_none());
            drop(running);
            room.ended();
            let got = waiter.await.unwrap().unwrap();
            assert_eq!(got.bytes(), 500);
            assert_eq!(system.reserved_bytes(), 500);
        });
        // Nobody waits now: what fits is reserved at once.
        assert!(room.try_reserve(&system, 100).is_some());
    }

    #[test]
    fn with_nothing_running_a_task_past_the_budget_is_reserved_past_it() {
        let system = system(100, u64::MAX);
        let room = Room::default();
        let got = runtime().block_on(room.reserve(&system, 500)).unwrap();
        assert_eq!(got.bytes(), 500);
        assert_eq!(system.reserved_bytes(), 500);
    }

    #[test]
    fn with_both_tiers_full_a_task_fails_out_of_memory_and_reserves_nothing() {
        let system = system(100, 0);
        let room = Room::default();
        let status = runtime().block_on(room.reserve(&system, 500)).unwrap_err();
        assert_eq!(status.state, pb::TaskState::Failed as i32);
        assert!(status.retryable);
        assert!(status.error.contains("out of memory"), "{}", status.error);
        assert!(status.error.contains("needs 500 bytes"), "{}", status.error);
        assert_eq!(system.reserved_bytes(), 0);
    }
}
