//! Pairs of ids: [`PairEncoder`] gives dense ids to the pairs of ids of two encoders (the
//! tuples of several key columns), in a dense [`Grid`] while it is small, by hash otherwise.

use super::prim::U64Table;
use super::{direct_ok, id_of, MISSING};
use crate::error::FrameResult;

/// Distinct pairs `(a, b)` of ids of two encoders.
pub(super) struct PairEncoder {
    /// The pair of each id, packed as `a << 32 | b`.
    pub(super) pairs: Vec<u64>,
    /// While `rows * stride` is small: `slots[a * stride + b]` is the id of pair `(a, b)`.
    grid: Option<Grid>,
    /// Ids by hash, once the grid is given up.
    table: U64Table,
    rows_seen: usize,
}

struct Grid {
    stride: usize,
    rows: usize,
    slots: Vec<u32>,
}

impl Grid {
    #[inline(always)]
    fn slot(&self, a: u32, b: u32) -> Option<usize> {
        let (a, b) = (a as usize, b as usize);
        (a < self.rows && b < self.stride).then_some(a * self.stride + b)
    }
}

impl PairEncoder {
    pub(super) fn new() -> Self {
        PairEncoder {
            pairs: Vec::new(),
            grid: Some(Grid {
                stride: 0,
                rows: 0,
                slots: Vec::new(),
            }),
            table: U64Table::default(),
            rows_seen: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Makes the grid cover ids `a < n_a`, `b < n_b`, or gives it up for the hash table.
    fn prepare(&mut self, n_a: usize, n_b: usize) {
        let Some(grid) = &self.grid else { return };
        if n_a <= grid.rows && n_b <= grid.stride {
            return;
        }
        let stride = n_b.max(grid.stride).next_power_of_two();
        let rows = n_a.max(grid.rows).max(1).next_power_of_two();
        let size = (stride as u64).saturating_mul(rows as u64);
        if !direct_ok(size, self.rows_seen) {
            self.grid = None;
            self.table = U64Table::build(&self.pairs, None);
            return;
        }
        let mut grid = Grid {
            stride,
            rows,
            slots: vec![MISSING; stride * rows],
        };
        for (id, &p) in self.pairs.iter().enumerate() {
            if let Some(s) = grid.slot((p >> 32) as u32, p as u32) {
                grid.slots[s] = id as u32;
            }
        }
        self.grid = Some(grid);
    }

    /// The pair ids of rows with ids `a` and `b` (all below `n_a`, `n_b`), adding new pairs.
    pub(super) fn encode(
        &mut self,
        a: &[u32],
        b: &[u32],
        n_a: usize,
        n_b: usize,
    ) -> FrameResult<Vec<u32>> {
        self.rows_seen += a.len();
        id_of(self.pairs.len() + a.len())?;
        self.prepare(n_a, n_b);
        let PairEncoder {
            pairs, grid, table, ..
        } = self;
        let pack = |x: u32, y: u32| (u64::from(x) << 32) | u64::from(y);
        let ids = match grid {
            Some(grid) => a
                .iter()
                .zip(b)
                .map(|(&x, &y)| {
                    let Some(slot) = grid.slot(x, y).and_then(|s| grid.slots.get_mut(s)) else {
                        return MISSING;
                    };
                    if *slot == MISSING {
                        *slot = pairs.len() as u32;
                        pairs.push(pack(x, y));
                    }
                    *slot
                })
                .collect(),
            None => a
                .iter()
                .zip(b)
                .map(|(&x, &y)| table.intern(pairs, pack(x, y)))
                .collect(),
        };
        Ok(ids)
    }

    pub(super) fn lookup(&self, a: &[u32], b: &[u32]) -> Vec<u32> {
        let pack = |x: u32, y: u32| (u64::from(x) << 32) | u64::from(y);
        a.iter()
            .zip(b)
            .map(
                |(&x, &y)| match (&self.grid, x == MISSING || y == MISSING) {
                    (_, true) => MISSING,
                    (Some(g), false) => g
                        .slot(x, y)
                        .and_then(|s| g.slots.get(s))
                        .copied()
                        .unwrap_or(MISSING),
                    (None, false) => self.table.find(pack(x, y)),
                },
            )
            .collect()
    }
}
