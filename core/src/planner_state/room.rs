//! Room for a task held back for memory.
//!
//! When the first ready task does not fit the budget, the planner records its reservation
//! in the pool ([`crate::MemoryPool::set_wanted`]) and asks storage to make room
//! ([`PlannerAction::MakeRoom`]): storage spills ahead, while the running tasks go on, as
//! far as that can make the reservation fit. The ask is numbered, and the answer
//! ([`PlannerState::on_room_made`]) dispatches again.
//!
//! With nothing running, a task that still does not fit is reserved past the budget (the
//! job must progress), but only once storage has answered an ask made while nothing ran:
//! then all the room spilling can make is made, and the reservation goes past the budget
//! only by what it must.

use super::{PlannerAction, PlannerState};

/// What the planner asked storage for, for the task held back for memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum RoomAsk {
    /// Nothing is held back (or storage restarted since the ask).
    #[default]
    None,
    /// Ask number `ask` for `bytes` is on its way; `idle` when nothing was running.
    Asked { ask: u64, bytes: u64, idle: bool },
    /// Storage answered the ask for `bytes`; `idle` when nothing was running.
    Made { bytes: u64, idle: bool },
}

/// The task held back for memory in a dispatch pass: its reservation, and whether
/// nothing was running.
#[derive(Clone, Copy, Debug)]
pub(super) struct HeldBack {
    pub(super) bytes: u64,
    pub(super) idle: bool,
}

impl RoomAsk {
    /// True when storage answered an ask for `bytes` made while nothing ran: the task may
    /// be reserved past the budget.
    pub(super) fn made_idle(self, bytes: u64) -> bool {
        self == RoomAsk::Made { bytes, idle: true }
    }

    /// True when an ask made or answered covers `held`: one for the same bytes, made while
    /// nothing ran or while `held` is not idle either.
    fn covers(self, held: HeldBack) -> bool {
        match self {
            RoomAsk::Asked { bytes, idle, .. } | RoomAsk::Made { bytes, idle } => {
                bytes == held.bytes && (idle || !held.idle)
            }
            RoomAsk::None => false,
        }
    }
}

impl PlannerState {
    /// Storage answered ask `ask` ([`PlannerAction::MakeRoom`]): dispatches what fits now.
    pub fn on_room_made(&mut self, ask: u64) -> Vec<PlannerAction> {
        if let RoomAsk::Asked {
            ask: asked,
            bytes,
            idle,
        } = self.room
        {
            if asked == ask {
                self.room = RoomAsk::Made { bytes, idle };
            }
        }
        self.dispatch_ready()
    }

    /// Chunks reserved on their way to storage (`actions` store some): the room storage
    /// made before it takes them over no longer holds, so a task held back asks again;
    /// that ask reaches storage behind the chunks, and its answer comes once storage has
    /// made room for them too.
    pub(super) fn storing(&mut self, actions: &[PlannerAction]) {
        if actions.iter().any(|a| {
            matches!(
                a,
                PlannerAction::Store {
                    reservation: Some(_),
                    ..
                }
            )
        }) {
            self.room = RoomAsk::None;
        }
    }

    /// Records what the dispatch pass held back for memory (`None`: nothing) in the pool,
    /// and asks storage for room unless an ask covers it.
    pub(super) fn want_room(&mut self, held: Option<HeldBack>) -> Option<PlannerAction> {
        self.pool.set_wanted(held.map_or(0, |h| h.bytes));
        let Some(held) = held else {
            self.room = RoomAsk::None;
            return None;
        };
        if self.room.covers(held) {
            return None;
        }
        self.room_asks += 1;
        self.room = RoomAsk::Asked {
            ask: self.room_asks,
            bytes: held.bytes,
            idle: held.idle,
        };
        Some(PlannerAction::MakeRoom {
            ask: self.room_asks,
        })
    }
}
