//! Key columns determined by the columns before them: `groupby(["custkey", "name",
//! "address"])` of a customer table, where one custkey has one name and one address.
//!
//! Such a column adds no distinct tuples, so [`Dependent`] does not intern its values: it
//! keeps one value per tuple id of the columns before it and checks, a batch at a time and
//! with vectorised gathers and comparisons, that each row's value is its tuple's. The tuple
//! ids pass through unchanged. The first row that differs ends this (the key encoder then
//! interns the column: see `KeyEncoder::encode`), so a column that is not determined costs
//! one check of a batch's first rows.

use super::{ColEncoder, MISSING};
use crate::error::FrameResult;
use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::kernels::cmp::not_distinct;
use arrow::compute::{cast, interleave, take};
use arrow::datatypes::DataType;
use std::sync::Arc;

/// Rows of a batch checked before the whole of it, so that a column that is not
/// determined is found out cheaply.
const SAMPLE_ROWS: usize = 256;

/// The value of a key column for each tuple id of the columns before it.
pub(super) struct Dependent {
    /// The type of the column given to the encoder (the type [`Dependent::values`] has).
    dt: DataType,
    /// Arrays of values, one per batch that added ids.
    pieces: Vec<ArrayRef>,
    /// Where the value of each tuple id is: (piece, row).
    locs: Vec<(usize, usize)>,
}

impl Dependent {
    pub(super) fn new(dt: &DataType) -> Self {
        Dependent {
            dt: dt.clone(),
            pieces: Vec::new(),
            locs: Vec::new(),
        }
    }

    /// Number of tuple ids with a value.
    pub(super) fn len(&self) -> usize {
        self.locs.len()
    }

    /// Checks that each row of `col` has the value of its tuple id `ids[row]` (ids from
    /// [`Self::len`] up to `n` are new in this batch: their first row gives their value)
    /// and records the new ids' values. `false`, recording nothing, where a row differs
    /// (or the comparison is not possible: a type other than the stored values').
    pub(super) fn extend(&mut self, ids: &[u32], n: usize, col: &ArrayRef) -> bool {
        let Some(col) = self.comparable(col) else {
            return false;
        };
        let sample = ids.len().min(SAMPLE_ROWS);
        if sample < ids.len()
            && self
                .first_rows(&ids[..sample], n, &col.slice(0, sample))
                .is_none()
        {
            return false;
        }
        let Some(first) = self.first_rows(ids, n, &col) else {
            return false;
        };
        if first.contains(&MISSING) {
            return false; // not the tuple ids of this batch (never so from the encoder)
        }
        if first.is_empty() {
            return true;
        }
        let Ok(values) = take(col.as_ref(), &UInt32Array::from(first), None).map(compact) else {
            return false;
        };
        let piece = self.pieces.len();
        self.locs.extend((0..values.len()).map(|row| (piece, row)));
        self.pieces.push(values);
        true
    }

    /// `col` as the stored values' type (dictionaries as their values), or `None` where
    /// it has another.
    fn comparable(&self, col: &ArrayRef) -> Option<ArrayRef> {
        let col = match col.data_type() {
            DataType::Dictionary(_, values) => cast(col, values).ok()?,
            _ => col.clone(),
        };
        let stored = self
            .pieces
            .first()
            .map_or(col.data_type(), |p| p.data_type());
        (stored == col.data_type()).then_some(col)
    }

    /// The first row of each id new in `ids` (those from `self.len()` up to `n`; `MISSING`
    /// for one not there), where every row of `col` equals its id's value; `None` where one
    /// does not.
    fn first_rows(&self, ids: &[u32], n: usize, col: &ArrayRef) -> Option<Vec<u32>> {
        let before = self.len();
        let mut first = vec![MISSING; n.saturating_sub(before)];
        let own = self.pieces.len();
        let mut at = Vec::with_capacity(ids.len());
        for (row, &id) in ids.iter().enumerate() {
            let id = id as usize;
            match id.checked_sub(before) {
                None => at.push(*self.locs.get(id)?),
                Some(new) => {
                    let f = first.get_mut(new)?;
                    if *f == MISSING {
                        *f = row as u32;
                    }
                    at.push((own, *f as usize));
                }
            }
        }
        let mut sources: Vec<&dyn Array> = self.pieces.iter().map(|p| p.as_ref()).collect();
        sources.push(col.as_ref());
        let expected = interleave(&sources, &at).ok()?;
        let same = not_distinct(col, &expected).ok()?;
        (same.true_count() == ids.len()).then_some(first)
    }

    /// The values of all tuple ids in id order, as the column's type.
    pub(super) fn values(&self) -> FrameResult<ArrayRef> {
        let Some(first) = self.pieces.first() else {
            return Ok(arrow::array::new_empty_array(&self.dt));
        };
        let sources: Vec<&dyn Array> = self.pieces.iter().map(|p| p.as_ref()).collect();
        let values = match sources.len() {
            1 => first.clone(),
            _ => interleave(&sources, &self.locs)?,
        };
        Ok(match values.data_type() == &self.dt {
            true => values,
            false => cast(&values, &self.dt)?,
        })
    }

    /// The tuple id `ids[row]` of each row of `col` whose value is that id's, `MISSING`
    /// elsewhere (a join's probe).
    pub(super) fn lookup(&self, ids: &[u32], col: &ArrayRef) -> FrameResult<Vec<u32>> {
        if self.locs.is_empty() {
            return Ok(vec![MISSING; ids.len()]);
        }
        if let Some(same) = self.comparable(col).and_then(|c| self.same_values(ids, &c)) {
            return Ok(ids
                .iter()
                .zip(same)
                .map(|(&id, same)| if same { id } else { MISSING })
                .collect());
        }
        // Another type (an Int32 probe of Int64 keys, say): each value's id in an encoder
        // of the stored values.
        let mut encoder = ColEncoder::new(&self.dt)?;
        let value_ids = encoder.encode(self.values()?.as_ref())?;
        let found = encoder.lookup(col.as_ref())?;
        Ok(ids
            .iter()
            .zip(found)
            .map(|(&id, f)| match value_ids.get(id as usize) {
                Some(&v) if f != MISSING && v == f => id,
                _ => MISSING,
            })
            .collect())
    }

    /// Whether each row of `col` (of the stored type) has the value of its id in `ids`.
    fn same_values(&self, ids: &[u32], col: &ArrayRef) -> Option<Vec<bool>> {
        let at: Vec<(usize, usize)> = ids
            .iter()
            .map(|&id| self.locs.get(id as usize).copied().unwrap_or((0, 0)))
            .collect();
        let sources: Vec<&dyn Array> = self.pieces.iter().map(|p| p.as_ref()).collect();
        let expected = interleave(&sources, &at).ok()?;
        let same = not_distinct(col, &expected).ok()?;
        Some(same.values().iter().collect())
    }
}

/// `a` with view arrays' buffers cut to the bytes its rows use: the values taken from a
/// batch must not hold the whole batch's strings.
fn compact(a: ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Utf8View => Arc::new(a.as_string_view().gc()),
        DataType::BinaryView => Arc::new(a.as_binary_view().gc()),
        _ => a,
    }
}
