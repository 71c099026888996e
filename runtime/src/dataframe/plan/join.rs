//! Join planning: a broadcast of a small side, hashed once, or a hash shuffle of both.
//!
//! The choice needs the sides' sizes. A source's are counted (Parquet footers), but above
//! filters, joins and groupbys the planner has only guesses ([`super::super::estimate`]),
//! which can be off by orders of magnitude (TPC-H Q18 keeps the ~600 orders whose
//! quantities sum over 300: the estimate is millions). So where the guess says shuffle but a
//! guessed side could be broadcast if it were smaller, that side is computed first, as a
//! stage of its own, and the choice is made again on what it really holds — a shuffle of
//! sixty million lineitem rows against six hundred is worth the stage. A semi, anti or
//! mark join whose small left would be shuffled with a large right — or whose right has many
//! times its rows, though the right's distinct keys could be broadcast — first reduces the
//! right to the rows whose keys the left has (Q4), which is then measured the same way.

use super::{part_of_each, FramePlanner, Pending, MAX_PARTS};
use crate::dataframe::node::{row_width, FrameKind, FrameNode};
use crate::dataframe::reduce::semi_join;
use crate::error::Result;
use std::collections::HashSet;
use std::sync::Arc;
use tessera_actors::ChunkKey;
use tessera_kernels::frame::join::{JoinHow, JoinSpec};
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::ops::{FrameOp, Source};

/// About how many times the cost of hash-partitioning a row hashing it into a join's
/// index costs, per key column (see [`FramePlanner::broadcasts`]).
const HASH_COST: f64 = 6.0;

/// How far (in rows) a guessed side may be from a broadcast for it to be computed first:
/// estimates above filters and joins are often off by this much, and computing a side
/// that is then shuffled costs a stage and a copy (TPC-H Q4's late lineitem rows, 72 times
/// too many by the estimate and five times by their measure, only cost more that way).
const GUESS_SLACK: f64 = 16.0;

/// How many times a semi, anti or mark join's left rows its right must have for the right
/// to be reduced by the left's keys before its own distinct keys are found, where these
/// could be broadcast as they are (TPC-H Q4 at SF1: a quarter's orders against the late
/// lineitem rows, 0.10 → 0.07 s).
const REDUCE_RATIO: f64 = 4.0;

/// The side of a broadcast join that is hashed once.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hashed {
    Left,
    Right,
}

/// A join side's size: estimated, or measured once the side was computed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Size {
    pub rows: f64,
    pub bytes: u64,
}

impl FramePlanner<'_> {
    /// Plans a join: a broadcast of a small side, hashed once by one task and probed by
    /// the task of every chunk of the other side (the right side of an inner or left
    /// join; the left side of an inner join where it is the smaller; for a semi, anti or
    /// mark join, the right's distinct keys), or a hash shuffle of both sides. Right and
    /// outer joins, which keep the right rows that match nothing, are always shuffled.
    /// Where the estimates say shuffle, a side whose size is a guess and that could be
    /// broadcast is computed first and the choice made on its measured size (see the
    /// [module](self)). Each join is left open: the steps after it and its reader's sink
    /// run in its task.
    pub(super) fn join(
        &mut self,
        left: &Arc<FrameNode>,
        right: &Arc<FrameNode>,
        spec: &JoinSpec,
    ) -> Result<Vec<Pending>> {
        let (mut l, mut r) = (self.size(left), self.size(right));
        let keys = spec.left_on.len();
        let mut broadcast = self.broadcast_side(spec.how, l, r, keys);
        tracing::debug!(
            left_bytes = l.bytes,
            right_bytes = r.bytes,
            "join: estimated sides"
        );
        if broadcast.is_none() {
            (broadcast, l, r) = self.measured_choice(left, right, spec, l, r)?;
        }
        // A semi, anti or mark join still to be shuffled whose left side is small beside
        // its right: only the right rows whose keys the left has can matter, so the right
        // is first reduced to them (the left's distinct keys broadcast to its chunks, which
        // are probed, not partitioned); the reduced right, a guessed side, is then
        // measured and, as a rule, broadcast.
        // The same where the right's distinct keys would be broadcast but the left has far
        // fewer rows: they would be found in one task over all the right's rows, where
        // probing the right's chunks with the left's keys runs on every thread.
        let right_heavy = match broadcast {
            None => true,
            Some(Hashed::Right) => l.rows * REDUCE_RATIO <= r.rows,
            Some(Hashed::Left) => false,
        };
        if right_heavy && spec.how.is_existence() && !self.reduced.contains(&right.id) {
            if self.worth_computing(left, l, r, keys) {
                l = self.computed(left)?;
            }
            if self.broadcasts(l, r, keys) {
                let reduced = semi_join(right, left, &spec.right_on, &spec.left_on);
                self.reduced.insert(reduced.id);
                tracing::debug!("join: the right side reduced by the left's keys");
                return self.join(left, &reduced, spec);
            }
        }
        match broadcast {
            Some(Hashed::Left) => {
                let built = self.hashed(left, &spec.left_on)?;
                let right_chunks = self.pending(right)?;
                tracing::debug!(
                    right = right_chunks.len(),
                    "join: broadcast of the left side"
                );
                return Ok(self.probe_each(spec, right_chunks, built, Hashed::Left));
            }
            Some(Hashed::Right) => {
                let left_chunks = self.pending(left)?;
                let built = if spec.how.is_existence() {
                    // Only whether a key occurs on the right matters: each left chunk gets
                    // the right's distinct keys.
                    let op = FrameOp::DistinctKeys {
                        keys: spec.right_on.clone(),
                    };
                    let right_keys = self.tables(right)?;
                    self.frame(op, right_keys)
                } else {
                    self.hashed(right, &spec.right_on)?
                };
                tracing::debug!(left = left_chunks.len(), "join: broadcast");
                return Ok(self.probe_each(spec, left_chunks, built, Hashed::Right));
            }
            None => {}
        }
        let left_chunks = self.pending(left)?;
        let right_chunks = self.pending(right)?;
        // As many parts as chunks, and enough that each part's join fits a task's share of
        // the memory budget (the inputs' estimate, in [`Self::merge_bytes`] per part).
        let by_bytes = l
            .bytes
            .saturating_add(r.bytes)
            .div_ceil(self.merge_bytes.max(1));
        let parts = left_chunks
            .len()
            .max(right_chunks.len())
            .max(self.threads * 2)
            .max(usize::try_from(by_bytes).unwrap_or(MAX_PARTS))
            .min(MAX_PARTS);
        tracing::debug!(parts, "join: shuffle");
        let mut side = |chunks: Vec<Pending>, keys: &[String]| -> Vec<Vec<ChunkKey>> {
            chunks
                .into_iter()
                .map(|p| self.partition(p, keys, parts))
                .collect()
        };
        let l = side(left_chunks, &spec.left_on);
        let r = side(right_chunks, &spec.right_on);
        Ok((0..parts)
            .map(|p| {
                let mut inputs = part_of_each(&l, p);
                inputs.extend(part_of_each(&r, p));
                joined(spec, l.len(), inputs)
            })
            .collect())
    }

    /// The broadcast choice of a join that the estimates `l` and `r` would shuffle, made
    /// again as its guessed sides that may be hashed are computed — the cheaper to compute
    /// (fewer source rows) first — until one broadcasts (the other is then its probe side,
    /// read as it is); with the sides' sizes as they then stand.
    fn measured_choice(
        &mut self,
        left: &Arc<FrameNode>,
        right: &Arc<FrameNode>,
        spec: &JoinSpec,
        mut l: Size,
        mut r: Size,
    ) -> Result<(Option<Hashed>, Size, Size)> {
        let keys = spec.left_on.len();
        let mut candidates: Vec<bool> = match spec.how {
            JoinHow::Right | JoinHow::Outer => vec![],
            JoinHow::Inner if self.source_rows(right) < self.source_rows(left) => {
                vec![false, true]
            }
            JoinHow::Inner => vec![true, false],
            _ => vec![false],
        };
        candidates.retain(|&is_left| match is_left {
            true => self.worth_computing(left, l, r, keys),
            false => self.worth_computing(right, r, l, keys),
        });
        let mut broadcast = None;
        for is_left in candidates {
            match is_left {
                true => l = self.computed(left)?,
                false => r = self.computed(right)?,
            }
            broadcast = self.broadcast_side(spec.how, l, r, keys);
            tracing::debug!(
                left_bytes = l.bytes,
                right_bytes = r.bytes,
                "join: measured sides"
            );
            if broadcast.is_some() {
                break;
            }
        }
        Ok((broadcast, l, r))
    }

    /// The side a join of sizes `left` and `right` hashes and broadcasts, if one.
    fn broadcast_side(&self, how: JoinHow, left: Size, right: Size, keys: usize) -> Option<Hashed> {
        match how {
            JoinHow::Right | JoinHow::Outer => None,
            JoinHow::Inner if left.bytes < right.bytes && self.broadcasts(left, right, keys) => {
                Some(Hashed::Left)
            }
            _ if self.broadcasts(right, left, keys) => Some(Hashed::Right),
            _ => None,
        }
    }

    /// Whether a join on `keys` key columns hashes its `build` side once, in one task, and
    /// broadcasts it to the chunks of its `probe` side, rather than shuffling both: where
    /// the side's bytes are at most `broadcast_bytes` and either at most a chunk or its
    /// rows few beside the other side's. While one task hashes it, the other threads have
    /// only the other side's reads to do; a shuffle would partition both sides on every
    /// thread and hash each part in parallel. Hashing a row costing about [`HASH_COST`]
    /// times partitioning one per key column, the broadcast pays where the side's rows,
    /// times that and the threads left waiting, are below the other side's.
    fn broadcasts(&self, build: Size, probe: Size, keys: usize) -> bool {
        if build.bytes > self.broadcast_bytes {
            return false;
        }
        build.bytes <= self.chunk_bytes || build.rows * self.hash_cost(keys) <= probe.rows
    }

    /// What hashing a row on `keys` key columns in the one task of a broadcast costs, in
    /// rows partitioned (see [`Self::broadcasts`]): [`HASH_COST`] per key column, times
    /// the threads left waiting.
    fn hash_cost(&self, keys: usize) -> f64 {
        let waiting = self.threads.saturating_sub(1).max(1) as f64;
        HASH_COST * keys.max(1) as f64 * waiting
    }

    /// The size of `node`: measured where it was computed, else estimated (a guessed
    /// node's bytes at most its estimated rows at [`row_width`], since its inputs' bytes
    /// know nothing of the rows its filters drop).
    fn size(&mut self, node: &Arc<FrameNode>) -> Size {
        if let Some(&size) = self.measured.get(&node.id) {
            return size;
        }
        let rows = self.estimates.of(node).rows;
        let bytes = match guessed(node) {
            true => node
                .estimated_bytes()
                .min((rows * row_width(&node.schema) as f64) as u64),
            false => node.estimated_bytes(),
        };
        Size { rows, bytes }
    }

    /// The rows of the sources under `node` (each once): what computing it reads.
    fn source_rows(&mut self, node: &Arc<FrameNode>) -> f64 {
        let mut rows = 0.0;
        let mut seen = HashSet::new();
        let mut stack = vec![node];
        while let Some(at) = stack.pop() {
            if !seen.insert(at.id) {
                continue;
            }
            match at.inputs() {
                inputs if inputs.is_empty() => rows += self.estimates.of(at).rows,
                inputs => stack.extend(inputs),
            }
        }
        rows
    }

    /// Whether `node`, of estimated `size`, is worth computing before its join with a side
    /// of size `other` on `keys` key columns is chosen: its size is a guess, not yet
    /// measured, small enough to broadcast, and no more than [`GUESS_SLACK`] times too
    /// many rows for it (any number, for a right side reduced by its left's keys: few of
    /// its rows are expected to be left).
    fn worth_computing(&self, node: &FrameNode, size: Size, other: Size, keys: usize) -> bool {
        guessed(node)
            && !self.measured.contains_key(&node.id)
            && size.bytes <= self.broadcast_bytes
            && (self.reduced.contains(&node.id)
                || size.rows * self.hash_cost(keys) <= other.rows * GUESS_SLACK)
    }

    /// Computes `node` in a stage of its own ([`Self::hand_on`]), its chunks kept for its
    /// readers, and returns its measured size (rows taken at [`row_width`]).
    fn computed(&mut self, node: &Arc<FrameNode>) -> Result<Size> {
        let keys = self.tables(node)?;
        self.hand_on(&keys)?;
        let stored = self.stored.sizes();
        let bytes: u64 = keys.iter().filter_map(|k| stored.get(k)).sum();
        let size = Size {
            rows: bytes as f64 / row_width(&node.schema) as f64,
            bytes,
        };
        self.memo.insert(node.id, keys);
        self.measured.insert(node.id, size);
        Ok(size)
    }

    /// The join of each of `chunks` with the broadcast chunk `built`, the join's `side`.
    fn probe_each(
        &mut self,
        spec: &JoinSpec,
        chunks: Vec<Pending>,
        built: ChunkKey,
        side: Hashed,
    ) -> Vec<Pending> {
        chunks
            .into_iter()
            .map(|p| {
                let probe = self.emit(p, super::Sink::Table);
                let inputs = match side {
                    Hashed::Left => vec![built, probe],
                    Hashed::Right => vec![probe, built],
                };
                joined(spec, 1, inputs)
            })
            .collect()
    }

    /// One task hashing the chunks of `node` on the columns `on` (a hashed join side).
    fn hashed(&mut self, node: &Arc<FrameNode>, on: &[String]) -> Result<ChunkKey> {
        let chunks = self.tables(node)?;
        Ok(self.frame(FrameOp::HashSide { on: on.to_vec() }, chunks))
    }
}

/// Whether the rows of `node` are a guess: anything but a source under row-wise steps
/// that filter nothing.
fn guessed(node: &FrameNode) -> bool {
    let mut at = node;
    loop {
        match &at.kind {
            FrameKind::Parquet(_)
            | FrameKind::Csv(_)
            | FrameKind::Batches(_)
            | FrameKind::Kept(_) => return false,
            FrameKind::Map { input, steps } => {
                if steps.iter().any(|s| matches!(s, MapStep::Filter(_))) {
                    return true;
                }
                at = input;
            }
            _ => return true,
        }
    }
}

/// The rows of a join of `inputs` (the first `n_left` its left side), not yet given a task.
fn joined(spec: &JoinSpec, n_left: usize, inputs: Vec<ChunkKey>) -> Pending {
    Pending::Open {
        source: Box::new(Source::Join {
            spec: spec.clone(),
            n_left,
        }),
        inputs,
        steps: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
