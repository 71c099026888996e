//! `join::hash_join_with`: a device's matcher, stood in for by nested loops here, gives the
//! CPU's joined table, whichever columns it gathers itself; it is asked only for inner and
//! left joins of keys without nulls, and declining leaves the CPU's answer. The tables are
//! shared with the GPU suite.

use super::join::{hash_join, hash_join_with, JoinHow, JoinMatches, JoinSpec, MatchSide, Matches};
use super::testing::{join_specs, join_tables};
use super::FrameError;
use arrow::array::{Array, ArrayRef, PrimitiveArray};
use arrow::datatypes::{DataType, Float64Type, Int16Type, Int64Type, UInt8Type};
use arrow::util::display::array_value_to_string;
use std::cell::Cell;
use std::sync::Arc;

/// Every match by nested loops: probe rows in order, each one's build rows in order.
fn nested_loops(build: &[ArrayRef], probe: &[ArrayRef], keep_unmatched: bool) -> Matches {
    let key = |cols: &[ArrayRef], i: usize| -> Vec<String> {
        cols.iter()
            .map(|c| array_value_to_string(c, i).unwrap())
            .collect()
    };
    let (mut p, mut b) = (Vec::new(), Vec::new());
    for i in 0..probe[0].len() {
        let mut found = false;
        for j in 0..build[0].len() {
            if key(probe, i) == key(build, j) {
                p.push(i as u32);
                b.push(j as u32);
                found = true;
            }
        }
        if !found && keep_unmatched {
            p.push(i as u32);
            b.push(u32::MAX);
        }
    }
    (p, b)
}

/// Host matches that gather some columns themselves, as a device does: Int64, Float64,
/// Int16 and UInt8 ones, row by row; the others are left to the CPU.
struct Gathering<'a> {
    pairs: Matches,
    /// Columns gathered so far.
    gathered: &'a Cell<usize>,
}

/// `col`'s values at `rows` (null at `u32::MAX` and at null values), row by row.
fn pick<T: arrow::datatypes::ArrowPrimitiveType>(col: &ArrayRef, rows: &[u32]) -> ArrayRef {
    let col = col.as_any().downcast_ref::<PrimitiveArray<T>>().unwrap();
    Arc::new(PrimitiveArray::<T>::from_iter(rows.iter().map(|&r| {
        (r != u32::MAX && col.is_valid(r as usize)).then(|| col.value(r as usize))
    })))
}

impl JoinMatches<FrameError> for Gathering<'_> {
    fn len(&self) -> usize {
        self.pairs.0.len()
    }

    fn gather(&self, side: MatchSide, col: &ArrayRef) -> Result<Option<ArrayRef>, FrameError> {
        let rows = match side {
            MatchSide::Probe => &self.pairs.0,
            MatchSide::Build => &self.pairs.1,
        };
        let got = match col.data_type() {
            DataType::Int64 => pick::<Int64Type>(col, rows),
            DataType::Float64 => pick::<Float64Type>(col, rows),
            DataType::Int16 => pick::<Int16Type>(col, rows),
            DataType::UInt8 => pick::<UInt8Type>(col, rows),
            _ => return Ok(None),
        };
        self.gathered.set(self.gathered.get() + 1);
        Ok(Some(got))
    }

    fn into_pairs(self: Box<Self>) -> Result<Matches, FrameError> {
        Ok(self.pairs)
    }
}

#[test]
fn a_matcher_gives_the_cpus_joined_table_whichever_columns_it_gathers() {
    for (n, m, dups) in [(50, 40, 1), (120, 90, 4), (7, 300, 30)] {
        let (left, right) = join_tables(n, m, dups);
        for spec in join_specs() {
            let want = hash_join(&spec, &left, &right).unwrap();
            let asked = Cell::new(0);
            let matcher = |b: &[ArrayRef], p: &[ArrayRef], keep: bool| {
                asked.set(asked.get() + 1);
                let m: Box<dyn JoinMatches<FrameError>> = Box::new(nested_loops(b, p, keep));
                Ok(Some(m))
            };
            let got = hash_join_with(&spec, &left, &right, &matcher).unwrap();
            assert_eq!(got, want, "{spec:?}");
            assert_eq!(asked.get(), 1);
            let gathered = Cell::new(0);
            let gathering = |b: &[ArrayRef], p: &[ArrayRef], keep: bool| {
                let m: Box<dyn JoinMatches<FrameError>> = Box::new(Gathering {
                    pairs: nested_loops(b, p, keep),
                    gathered: &gathered,
                });
                Ok(Some(m))
            };
            let got = hash_join_with(&spec, &left, &right, &gathering).unwrap();
            assert_eq!(got, want, "{spec:?}, some columns gathered by the matcher");
            // x, w, y and z at least (and the right's Int64 k where it is not a key).
            assert!(gathered.get() >= 4, "{spec:?}");
        }
    }
}

#[test]
fn indicators_come_from_the_matchers_rows_and_existence_joins_never_ask_it() {
    let (left, right) = join_tables(120, 90, 4);
    for mut spec in join_specs() {
        spec.indicator = Some("_merge".into());
        let want = hash_join(&spec, &left, &right).unwrap();
        let gathered = Cell::new(0);
        let gathering = |b: &[ArrayRef], p: &[ArrayRef], keep: bool| {
            let m: Box<dyn JoinMatches<FrameError>> = Box::new(Gathering {
                pairs: nested_loops(b, p, keep),
                gathered: &gathered,
            });
            Ok(Some(m))
        };
        let got = hash_join_with(&spec, &left, &right, &gathering).unwrap();
        assert_eq!(got, want, "{spec:?}");
        assert!(gathered.get() >= 4, "{spec:?}");
    }
    for how in [JoinHow::LeftSemi, JoinHow::LeftAnti, JoinHow::LeftMark] {
        let mut spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
        spec.indicator = (how == JoinHow::LeftMark).then(|| "m".into());
        let want = hash_join(&spec, &left, &right).unwrap();
        let refuse = |_: &[ArrayRef], _: &[ArrayRef], _: bool| {
            Err(FrameError::InvalidArgument("asked".into()))
        };
        assert_eq!(hash_join_with(&spec, &left, &right, &refuse).unwrap(), want);
    }
}
