//! Scans read again rather than kept: a file scan (a Parquet or CSV source under row-wise
//! steps) that several readers share is given to each reader as a copy of its own.
//!
//! The planner computes a node that several readers share once and keeps its chunks for
//! them all. For a scan that keeps most of its rows that is the costly choice: the kept
//! copy is about as big as what was decoded (TPC-H Q21 kept four columns of all of
//! lineitem, 1.9 GB at SF10, because the groupby's semi join and the late lines both read
//! them), the readers cannot fuse their steps into the scan, and the column pruning that
//! follows this pass must give the shared node the union of its readers' columns. Read
//! again, each reader's scan decodes only the columns it needs, in morsels, into its own
//! steps — as DuckDB reads lineitem three times for Q21. A scan whose filters keep little
//! (under [`MIN_KEPT`] of its rows, by [the estimates](super::estimate)) stays shared: its
//! kept rows are few and decoding again would cost more than reading them.

use super::estimate::Estimates;
use super::node::{consumers, FrameKind, FrameNode};
use super::prune::rebuild_up;
use std::sync::Arc;

/// A shared scan is read again when its steps keep at least this share of its rows (a
/// range filter's estimate, so one range filter is read again and an equality is not).
const MIN_KEPT: f64 = 0.3;

/// `root` with each shared file scan that keeps at least [`MIN_KEPT`] of its rows copied
/// for each of its readers.
pub(crate) fn unshare_scans(root: &Arc<FrameNode>) -> Arc<FrameNode> {
    let readers = consumers(root);
    let mut estimates = Estimates::default();
    rebuild_up(root, |node, inputs| {
        let inputs = node
            .inputs()
            .into_iter()
            .zip(inputs)
            .map(|(old, rebuilt)| {
                let shared = readers.get(&old.id).copied().unwrap_or(0) > 1;
                match shared && reads_again(&rebuilt, &mut estimates) {
                    true => copy_scan(&rebuilt),
                    false => rebuilt,
                }
            })
            .collect();
        node.with_inputs(inputs)
    })
}

/// Whether `node` is a file scan whose steps keep at least [`MIN_KEPT`] of its rows.
fn reads_again(node: &Arc<FrameNode>, estimates: &mut Estimates) -> bool {
    let Some(source) = scan_source(node) else {
        return false;
    };
    let (from, to) = (estimates.of(source).rows, estimates.of(node).rows);
    from <= 0.0 || to >= MIN_KEPT * from
}

/// The file source under `node`'s row-wise steps, if that is all `node` is.
fn scan_source(node: &Arc<FrameNode>) -> Option<&Arc<FrameNode>> {
    let mut at = node;
    loop {
        match &at.kind {
            FrameKind::Parquet(_) | FrameKind::Csv(_) => return Some(at),
            FrameKind::Map { input, .. } => at = input,
            _ => return None,
        }
    }
}

/// A copy of the scan `node` (as [`scan_source`] finds one), every node of it new.
fn copy_scan(node: &Arc<FrameNode>) -> Arc<FrameNode> {
    // The chain from `node` down to its source, copied from the source up (iteratively:
    // a frame may have many steps).
    let mut chain = vec![node];
    while let Some(FrameKind::Map { input, .. }) = chain.last().copied().map(|n| &n.kind) {
        chain.push(input);
    }
    let mut copy: Option<Arc<FrameNode>> = None;
    for at in chain.into_iter().rev() {
        let kind = match (&at.kind, copy) {
            (FrameKind::Map { steps, .. }, Some(input)) => FrameKind::Map {
                input,
                steps: steps.clone(),
            },
            (other, _) => other.clone(),
        };
        copy = Some(FrameNode::new(at.schema.clone(), kind));
    }
    copy.unwrap_or_else(|| node.clone())
}

#[cfg(test)]
mod tests;
