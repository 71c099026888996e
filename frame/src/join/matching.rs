//! Matching the rows of a join: the build side's rows listed per key id ([`Csr`]), probed
//! by the other side's ids into [`Pairs`] of rows, and the [`RowIndex`] each side of the
//! output is gathered with.

use super::Side;
use crate::error::{FrameError, FrameResult};
use crate::keys::KeyEncoder;
use arrow::array::{Array, ArrayRef, UInt32Array};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use arrow::compute::take;
use arrow::datatypes::DataType;
use std::sync::Arc;

/// No row on this side (an unmatched row of the other side).
const NONE: u32 = u32::MAX;

/// The matched rows: for each output row, the probe row and the build row (`NONE` when missing).
pub(super) struct Pairs {
    /// `None` when the probe side is every probe row once, in order.
    pub(super) probe: Option<Vec<u32>>,
    pub(super) build: Vec<u32>,
    pub(super) probe_rows: usize,
    /// The build side's row count (set by `Index::probe`).
    pub(super) build_rows: usize,
}

impl Pairs {
    /// (probe rows, build rows).
    pub(super) fn into_sides(self) -> (RowIndex, RowIndex) {
        // Every build row once, in order (a one-to-one join of aligned tables): no gather.
        let in_order =
            self.build.len() == self.build_rows && (0u32..).zip(&self.build).all(|(i, &b)| i == b);
        let build = match in_order {
            true => RowIndex::All(self.build_rows),
            false => RowIndex::Take(index_array(self.build)),
        };
        let probe = match self.probe {
            None => RowIndex::All(self.probe_rows),
            Some(p) => RowIndex::Take(index_array(p)),
        };
        (probe, build)
    }

    /// (build rows, probe rows).
    pub(super) fn swap(self) -> (RowIndex, RowIndex) {
        let (probe, build) = self.into_sides();
        (build, probe)
    }

    /// (build rows, probe rows) in build row order, each build row's pairs in probe order:
    /// an inner join built on its left side gives its rows so in the order of one built on
    /// its right. Every pair must have a build row (a pair without one is dropped, its
    /// output slot left at the end without rows). A stable counting sort where the pairs
    /// are many beside the build rows; where they are few (a chunk probing a large hashed
    /// side: TPC-H Q5's lineitem chunks against two million orders), a sort of the pairs,
    /// which never touches the build rows no pair has.
    pub(super) fn in_build_order(self) -> (RowIndex, RowIndex) {
        let n = self.build.len();
        let sorting = (n as f64) * (n.max(2) as f64).log2() < self.build_rows as f64;
        let (build, probe) = match sorting {
            true => self.sorted_by_build(),
            false => self.counted_by_build(),
        };
        Pairs {
            probe: Some(probe),
            build,
            probe_rows: self.probe_rows,
            build_rows: self.build_rows,
        }
        .swap()
    }

    /// The probe row of pair `i`.
    fn probe_row(&self, i: usize) -> u32 {
        self.probe
            .as_ref()
            .map_or(Some(i as u32), |p| p.get(i).copied())
            .unwrap_or(NONE)
    }

    /// [`Self::in_build_order`]'s (build rows, probe rows) by a counting sort over the
    /// build rows.
    fn counted_by_build(&self) -> (Vec<u32>, Vec<u32>) {
        let mut starts = vec![0u32; self.build_rows + 1];
        for &b in &self.build {
            if let Some(c) = starts.get_mut(b as usize + 1) {
                *c += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let n = self.build.len();
        let (mut build, mut probe) = (vec![NONE; n], vec![NONE; n]);
        for (i, &b) in self.build.iter().enumerate() {
            // A pair without a build row is dropped (its slot stays at the end).
            let Some(slot) = starts
                .get_mut(b as usize)
                .filter(|_| (b as usize) < self.build_rows)
            else {
                continue;
            };
            let at = *slot as usize;
            *slot += 1;
            if let (Some(db), Some(dp)) = (build.get_mut(at), probe.get_mut(at)) {
                *db = b;
                *dp = self.probe_row(i);
            }
        }
        (build, probe)
    }

    /// [`Self::in_build_order`]'s (build rows, probe rows) by sorting the pairs on (build
    /// row, pair): the same order as [`Self::counted_by_build`].
    fn sorted_by_build(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.build.len();
        let mut order: Vec<u64> = (0u64..)
            .zip(&self.build)
            .filter(|&(_, &b)| (b as usize) < self.build_rows)
            .map(|(i, &b)| (u64::from(b) << 32) | i)
            .collect();
        order.sort_unstable();
        let (mut build, mut probe) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for &key in &order {
            build.push((key >> 32) as u32);
            probe.push(self.probe_row((key & u64::from(u32::MAX)) as usize));
        }
        build.resize(n, NONE);
        probe.resize(n, NONE);
        (build, probe)
    }
}

/// Rows of one side of the output.
pub(super) enum RowIndex {
    /// Every row of the side once, in order (no gather needed).
    All(usize),
    /// Row indices; null where the side has no row.
    Take(UInt32Array),
}

impl RowIndex {
    pub(super) fn len(&self) -> usize {
        match self {
            RowIndex::All(n) => *n,
            RowIndex::Take(a) => a.len(),
        }
    }

    pub(super) fn gather(&self, col: &ArrayRef) -> FrameResult<ArrayRef> {
        match self {
            RowIndex::All(_) => Ok(Arc::clone(col)),
            RowIndex::Take(idx) => Ok(take(col.as_ref(), idx, None)?),
        }
    }

    /// Where the side has a row, when it lacks some.
    pub(super) fn present(&self) -> Option<&NullBuffer> {
        match self {
            RowIndex::All(_) => None,
            RowIndex::Take(idx) => idx.nulls().filter(|n| n.null_count() > 0),
        }
    }
}

/// A UInt32 index array with nulls where `v` holds `NONE` (their values become 0).
fn index_array(mut v: Vec<u32>) -> UInt32Array {
    if !v.contains(&NONE) {
        return UInt32Array::from(v);
    }
    let valid = BooleanBuffer::collect_bool(v.len(), |i| v[i] != NONE);
    v.iter_mut().filter(|x| **x == NONE).for_each(|x| *x = 0);
    UInt32Array::new(v.into(), Some(NullBuffer::new(valid)))
}

/// Matches every probe row with the build rows of equal key.
///
/// `keep_unmatched`: a probe row without matches is output once with no build row.
/// `add_unmatched_build`: then the build rows that matched nothing follow, in build order.
pub(super) fn match_rows(
    build: &Side,
    probe: &Side,
    keep_unmatched: bool,
    add_unmatched_build: bool,
) -> FrameResult<Pairs> {
    let (index, build_ids) = Index::build(build)?;
    let mut pairs = index.probe(probe, keep_unmatched)?;
    if add_unmatched_build {
        let n_ids = index.encoder.len();
        append_unmatched_build(&mut pairs, &build_ids, n_ids, build.unmatchable.as_deref());
    }
    Ok(pairs)
}

/// A build side hashed for probing: its distinct keys' ids and the rows of each id.
pub(super) struct Index {
    encoder: KeyEncoder,
    /// The rows of each id; `None` where every build row has a key of its own (id = row).
    csr: Option<Csr>,
    rows: usize,
}

impl Index {
    /// The index of `build`, and the key id of each of its rows.
    pub(super) fn build(build: &Side) -> FrameResult<(Index, Vec<u32>)> {
        let types: Vec<DataType> = build.keys.iter().map(|k| k.data_type().clone()).collect();
        let mut encoder = KeyEncoder::new(&types)?;
        let ids = encoder.encode(&build.keys)?;
        if ids.len() != build.rows {
            return Err(FrameError::InvalidArgument(format!(
                "the key encoder returned {} ids for {} build rows",
                ids.len(),
                build.rows
            )));
        }
        encoder.seal();
        let n_ids = encoder.len();
        // Ids are given in row order: where every row has its own key, id = row.
        let csr = (build.unmatchable.is_some() || n_ids != build.rows)
            .then(|| Csr::new(&ids, n_ids, build.unmatchable.as_deref()));
        let index = Index {
            encoder,
            csr,
            rows: build.rows,
        };
        Ok((index, ids))
    }

    /// The pairs of each probe row with the build rows of its key (`keep_unmatched`: a
    /// probe row without any once with none). The probe side's keys must be of the build
    /// keys' classes.
    pub(super) fn probe(&self, probe: &Side, keep_unmatched: bool) -> FrameResult<Pairs> {
        let mut probe_ids = self.lookup(probe)?;
        if let Some(lost) = &probe.unmatchable {
            for (id, &l) in probe_ids.iter_mut().zip(lost) {
                if l {
                    *id = None;
                }
            }
        }
        let mut pairs = match &self.csr {
            None => probe_unique(&probe_ids, keep_unmatched),
            Some(csr) => csr.probe(&probe_ids, keep_unmatched),
        };
        pairs.build_rows = self.rows;
        Ok(pairs)
    }

    /// The id of each probe row's key among the build's keys (`None` where the build has
    /// no such key). The probe side's keys must be of the build keys' classes.
    pub(super) fn lookup(&self, probe: &Side) -> FrameResult<Vec<Option<u32>>> {
        let ids = self.encoder.lookup(&probe.keys)?;
        if ids.len() != probe.rows {
            return Err(FrameError::InvalidArgument(format!(
                "the key encoder returned {} ids for {} probe rows",
                ids.len(),
                probe.rows
            )));
        }
        Ok(ids)
    }

    /// Bytes held, about: the row lists, the encoder's tables taken at two words of slot
    /// and value per distinct key and key column, and its bitmap of keys.
    pub(super) fn bytes(&self, key_columns: usize) -> usize {
        let lists = self
            .csr
            .as_ref()
            .map_or(0, |c| 4 * (c.offsets.len() + c.rows.len()));
        lists + self.encoder.len() * 16 * key_columns.max(1) + self.encoder.sealed_bytes()
    }
}

/// Probing a build side whose rows all have distinct keys (row = id).
fn probe_unique(probe_ids: &[Option<u32>], keep_unmatched: bool) -> Pairs {
    let build: Vec<u32> = probe_ids.iter().map(|id| id.unwrap_or(NONE)).collect();
    if keep_unmatched || !build.contains(&NONE) {
        return Pairs {
            probe: None,
            build,
            probe_rows: probe_ids.len(),
            build_rows: 0,
        };
    }
    let (probe, build): (Vec<u32>, Vec<u32>) =
        (0u32..).zip(build).filter(|&(_, b)| b != NONE).unzip();
    Pairs {
        probe: Some(probe),
        build,
        probe_rows: probe_ids.len(),
        build_rows: 0,
    }
}

/// The build rows of each key id, in row order (a CSR list): `rows[offsets[id]..offsets[id + 1]]`.
struct Csr {
    offsets: Vec<u32>,
    rows: Vec<u32>,
}

impl Csr {
    /// Lists the rows per id, leaving out unmatchable rows. Every id is below `n_ids`.
    fn new(ids: &[u32], n_ids: usize, unmatchable: Option<&[bool]>) -> Csr {
        let skip = |row: usize| unmatchable.is_some_and(|u| u[row]);
        // offsets[id] = the end of id's rows (inclusive prefix sum of the counts) ...
        let mut offsets = vec![0u32; n_ids + 1];
        for (row, &id) in ids.iter().enumerate() {
            if !skip(row) {
                offsets[id as usize] += 1;
            }
        }
        let mut total = 0;
        for o in &mut offsets {
            total += *o;
            *o = total;
        }
        // ... then filled back to front, which leaves offsets[id] = the start of id's rows and
        // the rows of each id in increasing order. Row numbers fit u32 (checked in `key_sides`).
        let mut rows = vec![0u32; total as usize];
        for (row, &id) in ids.iter().enumerate().rev() {
            if !skip(row) {
                let slot = &mut offsets[id as usize];
                *slot -= 1;
                rows[*slot as usize] = row as u32;
            }
        }
        Csr { offsets, rows }
    }

    /// The start and count of key `id`'s rows (count 0 when none).
    #[inline(always)]
    fn span(&self, id: Option<u32>) -> (u32, u32) {
        let Some(id) = id else { return (0, 0) };
        let id = id as usize;
        match (self.offsets.get(id), self.offsets.get(id + 1)) {
            (Some(&s), Some(&e)) => (s, e - s),
            _ => (0, 0),
        }
    }

    fn probe(&self, probe_ids: &[Option<u32>], keep_unmatched: bool) -> Pairs {
        let n = probe_ids.len();
        // Pass 1 gathers each probe row's span (independent loads that overlap their cache
        // misses) and the output size; pass 2 reads the spans in order.
        let spans: Vec<(u32, u32)> = probe_ids.iter().map(|&id| self.span(id)).collect();
        let unmatched = usize::from(keep_unmatched);
        let total: usize = spans
            .iter()
            .map(|&(_, count)| match count {
                0 => unmatched,
                k => k as usize,
            })
            .sum();
        // Exact sizes, then plain stores: no per-row capacity checks or small memcpy calls.
        let mut probe = vec![0u32; total];
        let mut build = vec![0u32; total];
        let mut pos = 0;
        let mut dropped = false;
        for (&(at, count), p) in spans.iter().zip(0u32..) {
            match count {
                0 if keep_unmatched => {
                    probe[pos] = p;
                    build[pos] = NONE;
                    pos += 1;
                }
                0 => dropped = true,
                _ => {
                    let rows = &self.rows[at as usize..(at + count) as usize];
                    let end = pos + rows.len();
                    // One loop for both sides: a `copy_from_slice` of a few rows would be a
                    // memcpy call per probe row.
                    let out = probe[pos..end].iter_mut().zip(&mut build[pos..end]);
                    for ((dp, db), &r) in out.zip(rows) {
                        *dp = p;
                        *db = r;
                    }
                    pos = end;
                }
            }
        }
        // Each probe row gave at least one output row, and n in all: exactly one each.
        let identity = !dropped && total == n;
        Pairs {
            probe: (!identity).then_some(probe),
            build,
            probe_rows: n,
            build_rows: 0,
        }
    }
}

/// Appends the build rows that matched nothing (no probe row).
fn append_unmatched_build(
    pairs: &mut Pairs,
    build_ids: &[u32],
    n_ids: usize,
    unmatchable: Option<&[bool]>,
) {
    let mut hit = vec![false; n_ids];
    for &b in pairs.build.iter().filter(|&&b| b != NONE) {
        if let Some(&id) = build_ids.get(b as usize) {
            hit[id as usize] = true;
        }
    }
    let lost = |row: usize| unmatchable.is_some_and(|u| u[row]);
    let missing: Vec<u32> = (0u32..)
        .zip(build_ids)
        .enumerate()
        .filter(|&(row, (_, &id))| lost(row) || !hit[id as usize])
        .map(|(_, (r, _))| r)
        .collect();
    if missing.is_empty() {
        return;
    }
    let n = pairs.probe_rows as u32;
    let probe = pairs.probe.get_or_insert_with(|| (0..n).collect());
    probe.extend(std::iter::repeat_n(NONE, missing.len()));
    pairs.build.extend(missing);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pairs` in build order, counted and sorted.
    fn both(pairs: &Pairs) -> [(Vec<u32>, Vec<u32>); 2] {
        [pairs.counted_by_build(), pairs.sorted_by_build()]
    }

    /// The sort of few pairs and the count of many give the same order: by build row, then
    /// by pair; a pair whose build row is out of range leaves an empty slot at the end.
    #[test]
    fn pairs_sorted_or_counted_into_build_order_agree() {
        // Pair i: build row (i·37) mod 11, probe row 3·i (0..20), then a build row past the
        // side.
        let mut build: Vec<u32> = (0..20u32).map(|i| i * 37 % 11).collect();
        build.push(11);
        let probe: Vec<u32> = (0..21u32).map(|i| 3 * i).collect();
        let pairs = Pairs {
            probe: Some(probe),
            build: build.clone(),
            probe_rows: 63,
            build_rows: 11,
        };
        let [counted, sorted] = both(&pairs);
        assert_eq!(counted, sorted);
        // By hand: build rows ascending, each one's pairs in pair order.
        let mut want: Vec<(u32, u32)> = (0..20u32).map(|i| (i * 37 % 11, 3 * i)).collect();
        want.sort_by_key(|&(b, _)| b);
        want.push((NONE, NONE));
        let got: Vec<(u32, u32)> = sorted.0.into_iter().zip(sorted.1).collect();
        assert_eq!(got, want);
        // Every probe row once, in order (no probe list): pair i is probe row i.
        let pairs = Pairs {
            probe: None,
            build,
            probe_rows: 21,
            build_rows: 1_000_000,
        };
        let [counted, sorted] = both(&pairs);
        assert_eq!(counted, sorted);
        assert_eq!(
            sorted.1[..3],
            [0, 11, 3],
            "build row 0: pairs 0 and 11; row 1: pair 3"
        );
    }
}
