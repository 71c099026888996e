//! One side of a join given as several tables of one schema (a shuffle's parts, the chunks
//! of a broadcast side). Only the key columns are concatenated; the output's columns are
//! gathered from the tables themselves, so the rows the join drops are never copied.

use super::matching::RowIndex;
use crate::error::{FrameError, FrameResult};
use arrow::array::{Array, ArrayRef};
use arrow::compute::{concat as concat_arrays, concat_batches, interleave};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use std::cell::OnceCell;
use std::sync::Arc;

/// The tables of one join side.
pub(super) struct Tables<'a> {
    schema: SchemaRef,
    /// The tables that have rows (at least one table, to give the schema's columns).
    batches: Vec<&'a RecordBatch>,
    /// Where each table's rows start in the side's row numbering, and its end.
    starts: Vec<usize>,
}

impl<'a> Tables<'a> {
    /// The side made of `batches` (at least one; all of the first one's schema).
    pub(super) fn new(batches: &'a [RecordBatch]) -> FrameResult<Tables<'a>> {
        let first = batches
            .first()
            .ok_or_else(|| FrameError::InvalidArgument("a join side has no table".into()))?;
        let mut kept: Vec<&RecordBatch> = batches.iter().filter(|b| b.num_rows() > 0).collect();
        if kept.is_empty() {
            kept.push(first);
        }
        let mut starts = Vec::with_capacity(kept.len() + 1);
        let mut rows = 0usize;
        for b in &kept {
            starts.push(rows);
            rows += b.num_rows();
        }
        starts.push(rows);
        Ok(Tables {
            schema: first.schema(),
            batches: kept,
            starts,
        })
    }

    pub(super) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The side's rows.
    pub(super) fn rows(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// Column `i` of the whole side (its tables' pieces concatenated).
    pub(super) fn column(&self, i: usize) -> FrameResult<ArrayRef> {
        match self.batches[..] {
            [one] => Ok(Arc::clone(one.column(i))),
            _ => {
                let pieces: Vec<&dyn Array> =
                    self.batches.iter().map(|b| b.column(i).as_ref()).collect();
                Ok(concat_arrays(&pieces)?)
            }
        }
    }

    /// The whole side as one table.
    pub(super) fn concat(&self) -> FrameResult<RecordBatch> {
        match self.batches[..] {
            [one] => Ok(one.clone()),
            _ => Ok(concat_batches(&self.schema, self.batches.iter().copied())?),
        }
    }

    /// Each side row in `rows` as (table, row in that table).
    fn locate(&self, rows: &[u32]) -> Vec<(usize, usize)> {
        let mut table = 0usize;
        rows.iter()
            .map(|&r| {
                let r = r as usize;
                // Rows mostly come in order (a probe side's): try the last row's table first.
                if r < self.starts[table] || r >= self.starts[table + 1] {
                    table = self.starts.partition_point(|&s| s <= r).saturating_sub(1);
                    table = table.min(self.batches.len() - 1);
                }
                (table, r - self.starts[table])
            })
            .collect()
    }
}

/// The output rows of one join side, gathered column by column from that side's tables.
pub(super) struct Gather<'t, 'a> {
    tables: &'t Tables<'a>,
    rows: &'t RowIndex,
    /// The rows located in the tables, worked out for the first column that needs them.
    located: OnceCell<Vec<(usize, usize)>>,
}

impl<'t, 'a> Gather<'t, 'a> {
    pub(super) fn new(tables: &'t Tables<'a>, rows: &'t RowIndex) -> Self {
        Gather {
            tables,
            rows,
            located: OnceCell::new(),
        }
    }

    pub(super) fn rows(&self) -> &RowIndex {
        self.rows
    }

    /// Column `i`'s values at the output rows.
    pub(super) fn column(&self, i: usize) -> FrameResult<ArrayRef> {
        match (&self.tables.batches[..], self.rows) {
            ([one], rows) => rows.gather(one.column(i)),
            // Rows without nulls, from several tables: picked out of them, not copied
            // whole first.
            (batches, RowIndex::Take(idx)) if idx.null_count() == 0 => {
                let located = self
                    .located
                    .get_or_init(|| self.tables.locate(idx.values()));
                let pieces: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(i).as_ref()).collect();
                Ok(interleave(&pieces, located)?)
            }
            (_, rows) => rows.gather(&self.tables.column(i)?),
        }
    }
}
