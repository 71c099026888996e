//! Client sessions: which chunks each connected client owns on the workers, so that the
//! scheduler can release them when the client goes away.
//!
//! A client opens a session when it connects and holds its stream open while it lives.
//! The outputs of its jobs (persisted data, outputs not yet gathered) and the chunks it
//! places are recorded under the session. A client releases what it no longer needs as
//! it goes; but its last releases die with its process when it exits, and a crashed
//! client sends none, so the workers held such chunks until they stopped (a benchmark
//! process that persisted 800 MB left it on the cluster each time it ran). When the
//! session's stream ends, whatever it still owns is released, as Dask releases a
//! disconnected client's keys.

use std::collections::{HashMap, HashSet};
use tessera_core::{ChunkId, JobId};

/// The open sessions and the chunks each owns.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    owned: HashMap<u64, HashSet<ChunkId>>,
    next: u64,
}

impl Sessions {
    /// Opens a session; its id (never 0, which stands for no session).
    pub fn open(&mut self) -> u64 {
        self.next += 1;
        self.owned.insert(self.next, HashSet::new());
        self.next
    }

    /// Records `chunks` as owned by `session`, if it is open (0, or a session that has
    /// ended, owns nothing: such chunks stay held until released).
    pub fn own(&mut self, session: u64, chunks: impl IntoIterator<Item = ChunkId>) {
        if let Some(owned) = self.owned.get_mut(&session) {
            owned.extend(chunks);
        }
    }

    /// `chunk` was released: no session owns it any more.
    pub fn released(&mut self, chunk: ChunkId) {
        for owned in self.owned.values_mut() {
            owned.remove(&chunk);
        }
    }

    /// A failed or cancelled job's chunks are gone: no session owns them any more.
    pub fn forget_job(&mut self, job: JobId) {
        for owned in self.owned.values_mut() {
            owned.retain(|c| c.job != job);
        }
    }

    /// Ends `session`; the chunks it still owns, to release.
    pub fn close(&mut self, session: u64) -> Vec<ChunkId> {
        self.owned
            .remove(&session)
            .map(|owned| owned.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::ChunkKey;

    fn id(job: u64, key: u64) -> ChunkId {
        ChunkId {
            job: JobId(job),
            key: ChunkKey(key),
        }
    }

    #[test]
    fn a_closed_session_hands_back_what_it_still_owns_and_nothing_twice() {
        let mut s = Sessions::default();
        let (a, b) = (s.open(), s.open());
        assert!(a != 0 && b != 0 && a != b);
        s.own(a, [id(1, 1), id(1, 2), id(2, 1)]);
        s.own(b, [id(3, 1)]);
        // No session, or an unknown one: nothing recorded.
        s.own(0, [id(9, 9)]);
        s.own(77, [id(9, 8)]);
        s.released(id(1, 2));
        s.forget_job(JobId(2));
        let mut left = s.close(a);
        left.sort_by_key(|c| (c.job.0, c.key.0));
        assert_eq!(left, vec![id(1, 1)], "released and failed ones are not");
        assert!(s.close(a).is_empty(), "closed once");
        // A session that has ended owns nothing new.
        s.own(a, [id(4, 1)]);
        assert!(s.close(a).is_empty());
        assert_eq!(s.close(b), vec![id(3, 1)]);
    }
}
