//! Hash partitioning of one chunk on key columns, for shuffle joins and for groupby with many
//! groups: rows with equal keys (in any encoding of one key class) land in the same part.

use super::error::{FrameError, FrameResult};
use super::keys::hash_rows;
use super::schema::column;
use arrow::array::{make_array, Array, ArrayDataBuilder, ArrayRef, UInt32Array};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow::compute::take;
use arrow::datatypes::{i256, ArrowNativeType, DataType};
use arrow::record_batch::{RecordBatch, RecordBatchOptions};
use std::cell::OnceCell;

/// Splits `batch` into `n` batches by `hash_rows` of its key columns modulo `n`, keeping row order
/// within each part (n ≥ 1; ColumnNotFound for unknown keys, InvalidArgument for n = 0).
///
/// Part `i` holds the rows whose key hash is `i` modulo `n`; every part has `batch`'s schema
/// (empty parts have no rows). With `n = 1` the batch is returned as it is. Fixed-width columns
/// are scattered in one pass into buffers of their own for each part, so that a part stored,
/// spilled or dropped on its own frees its memory whatever becomes of the others.
pub fn hash_partition(
    batch: &RecordBatch,
    keys: &[String],
    n: usize,
) -> FrameResult<Vec<RecordBatch>> {
    if n == 0 {
        return Err(FrameError::InvalidArgument(
            "hash_partition needs at least one part (n = 0)".into(),
        ));
    }
    if keys.is_empty() {
        return Err(FrameError::InvalidArgument(
            "hash_partition needs at least one key column".into(),
        ));
    }
    let columns = keys
        .iter()
        .map(|k| column(batch, k).cloned())
        .collect::<FrameResult<Vec<ArrayRef>>>()?;
    if n == 1 {
        return Ok(vec![batch.clone()]);
    }
    let rows = batch.num_rows();
    let too_big = |what: &str, v: usize| {
        FrameError::InvalidArgument(format!(
            "hash_partition supports at most {} {what}, got {v}",
            u32::MAX
        ))
    };
    let n32 = u32::try_from(n).map_err(|_| too_big("parts", n))?;
    if u32::try_from(rows).is_err() {
        return Err(too_big("rows", rows));
    }
    let hashes = hash_rows(&columns)?;
    if hashes.len() != rows {
        return Err(FrameError::InvalidArgument(format!(
            "hash_rows returned {} hashes for {rows} rows",
            hashes.len()
        )));
    }
    let parts = part_ids(&hashes, n32);
    drop(hashes);
    let layout = Layout::new(parts, n);
    let mut part_columns: Vec<Vec<ArrayRef>> = vec![Vec::with_capacity(batch.num_columns()); n];
    for col in batch.columns() {
        for (out, piece) in part_columns.iter_mut().zip(layout.split(col)?) {
            out.push(piece);
        }
    }
    layout
        .offsets
        .windows(2)
        .zip(part_columns)
        .map(|(w, cols)| {
            let options = RecordBatchOptions::new().with_row_count(Some(w[1] - w[0]));
            Ok(RecordBatch::try_new_with_options(
                batch.schema(),
                cols,
                &options,
            )?)
        })
        .collect()
}

/// The part of each row: its hash modulo `n` (a mask when `n` is a power of two).
fn part_ids(hashes: &[u64], n: u32) -> Vec<u32> {
    let n = u64::from(n);
    if n.is_power_of_two() {
        let mask = n - 1;
        hashes.iter().map(|h| (h & mask) as u32).collect()
    } else {
        hashes.iter().map(|h| (h % n) as u32).collect()
    }
}

/// Where the rows go: grouped by part, in row order within a part.
struct Layout {
    /// `parts[row]`: the row's part.
    parts: Vec<u32>,
    /// Part `p` is positions `offsets[p]..offsets[p + 1]` of the grouped rows.
    offsets: Vec<usize>,
    /// `dest[row]`: the row's position in the grouped rows.
    dest: Vec<u32>,
    /// `order[pos]`: the row at a position (the inverse of `dest`), made when a column needs it.
    order: OnceCell<UInt32Array>,
}

impl Layout {
    /// A counting sort of the rows by part; every entry of `parts` is below `n`, and the row
    /// count fits u32 (checked by the caller).
    fn new(parts: Vec<u32>, n: usize) -> Layout {
        let mut offsets = vec![0usize; n + 1];
        for &p in &parts {
            offsets[p as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut next: Vec<u32> = offsets[..n].iter().map(|&o| o as u32).collect();
        let dest = parts
            .iter()
            .map(|&p| {
                let slot = &mut next[p as usize];
                *slot += 1;
                *slot - 1
            })
            .collect();
        Layout {
            parts,
            offsets,
            dest,
            order: OnceCell::new(),
        }
    }

    fn order(&self) -> &UInt32Array {
        self.order.get_or_init(|| {
            let mut order = vec![0u32; self.dest.len()];
            for (row, &d) in (0u32..).zip(&self.dest) {
                order[d as usize] = row;
            }
            UInt32Array::from(order)
        })
    }

    /// `col`'s rows of each part.
    fn split(&self, col: &ArrayRef) -> FrameResult<Vec<ArrayRef>> {
        let scattered = match col.data_type().primitive_width() {
            Some(1) if fixed_width(col.data_type()) => self.scatter::<u8>(col),
            Some(2) if fixed_width(col.data_type()) => self.scatter::<u16>(col),
            Some(4) if fixed_width(col.data_type()) => self.scatter::<u32>(col),
            Some(8) if fixed_width(col.data_type()) => self.scatter::<u64>(col),
            Some(16) if fixed_width(col.data_type()) => self.scatter::<i128>(col),
            Some(32) if fixed_width(col.data_type()) => self.scatter::<i256>(col),
            _ => None,
        };
        match scattered {
            Some(pieces) => pieces,
            None => {
                let order = self.order();
                self.ranges()
                    .map(|(start, len)| Ok(take(col.as_ref(), &order.slice(start, len), None)?))
                    .collect()
            }
        }
    }

    fn ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.offsets.windows(2).map(|w| (w[0], w[1] - w[0]))
    }

    /// Scatters a fixed-width column of `T`-sized values (values and validity) in one pass
    /// into a buffer per part; `None` when its buffer is not a whole, aligned `[T]`.
    fn scatter<T: ArrowNativeType>(&self, col: &ArrayRef) -> Option<FrameResult<Vec<ArrayRef>>> {
        let data = col.to_data();
        let buffer = data.buffers().first()?;
        let aligned = buffer.as_ptr().align_offset(std::mem::align_of::<T>()) == 0;
        if !aligned || buffer.len() % std::mem::size_of::<T>() != 0 {
            return None;
        }
        let values = data.buffer::<T>(0).get(..data.len())?;
        let mut outs: Vec<Vec<T>> = self
            .ranges()
            .map(|(_, len)| Vec::with_capacity(len))
            .collect();
        for (&v, &p) in values.iter().zip(&self.parts) {
            outs[p as usize].push(v);
        }
        let valid = col.nulls().filter(|n| n.null_count() > 0).map(|nulls| {
            let mut valid = vec![false; values.len()];
            for (ok, &d) in nulls.iter().zip(&self.dest) {
                valid[d as usize] = ok;
            }
            valid
        });
        let pieces = self.ranges().zip(outs).map(|((start, len), out)| {
            let nulls = valid
                .as_ref()
                .map(|v| NullBuffer::new(BooleanBuffer::collect_bool(len, |i| v[start + i])));
            let piece = ArrayDataBuilder::new(col.data_type().clone())
                .len(len)
                .add_buffer(Buffer::from_vec(out))
                .nulls(nulls)
                .build()?;
            Ok(make_array(piece))
        });
        Some(pieces.collect())
    }
}

/// Types whose arrays are one buffer of fixed-width values aligned to their width.
fn fixed_width(dt: &DataType) -> bool {
    use DataType::*;
    matches!(
        dt,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float16
            | Float32
            | Float64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Decimal32(_, _)
            | Decimal64(_, _)
            | Decimal128(_, _)
            | Decimal256(_, _)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, LargeStringArray, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn batch(k: Vec<Option<i64>>, s: Vec<Option<&str>>) -> RecordBatch {
        let row: Vec<i64> = (0..k.len() as i64).collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("k", DataType::Int64, true),
                Field::new("s", DataType::Utf8, true),
                Field::new("row", DataType::Int64, false),
            ])),
            vec![
                Arc::new(Int64Array::from(k)),
                Arc::new(StringArray::from(s)),
                Arc::new(Int64Array::from(row)),
            ],
        )
        .unwrap()
    }

    fn random_batch(rows: usize, seed: u64) -> RecordBatch {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let words = ["a", "bb", "ccc", "", "dd"];
        let k = (0..rows)
            .map(|_| match next() % 25 {
                0 => None,
                v => Some(v as i64 - 12),
            })
            .collect();
        let s = (0..rows)
            .map(|_| match next() % 6 {
                5 => None,
                v => Some(words[v as usize]),
            })
            .collect();
        batch(k, s)
    }

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn row_ids(b: &RecordBatch) -> Vec<i64> {
        let col = b.column_by_name("row").unwrap();
        col.as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec()
    }

    /// Adds a Float32 column with nulls, a Boolean column and a Decimal128 column with
    /// nulls, derived from the row ids.
    fn with_more_types(b: &RecordBatch) -> RecordBatch {
        let ids = row_ids(b);
        let f: arrow::array::Float32Array = ids
            .iter()
            .map(|&r| (r % 3 != 0).then_some(r as f32 * 0.5))
            .collect();
        let flag: arrow::array::BooleanArray = ids.iter().map(|&r| Some(r % 5 == 1)).collect();
        let d = ids
            .iter()
            .map(|&r| (r % 4 != 0).then_some(i128::from(r) * 1_000_000_000_007 - 5))
            .collect::<arrow::array::Decimal128Array>()
            .with_precision_and_scale(38, 2)
            .unwrap();
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("f", DataType::Float32, true));
        fields.push(Field::new("flag", DataType::Boolean, true));
        fields.push(Field::new("d", DataType::Decimal128(38, 2), true));
        let mut cols = b.columns().to_vec();
        cols.push(Arc::new(f));
        cols.push(Arc::new(flag));
        cols.push(Arc::new(d));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    /// Checks that the parts hold every row of `b` once, in order, with all its values, and
    /// that rows of equal keys share a part.
    fn check_parts(b: &RecordBatch, key: &[&str], parts: &[RecordBatch]) {
        let first = row_ids(b).first().copied().unwrap_or(0);
        let mut seen = vec![0; b.num_rows()];
        let mut home: HashMap<String, usize> = HashMap::new();
        let cell = |batch: &RecordBatch, c: &str, i: usize| {
            format!("{:?}", batch.column_by_name(c).unwrap().slice(i, 1))
        };
        for (i, p) in parts.iter().enumerate() {
            assert_eq!(p.schema(), b.schema());
            let rows = row_ids(p);
            assert!(rows.windows(2).all(|w| w[0] < w[1]), "order kept");
            for (j, &r) in rows.iter().enumerate() {
                let src = (r - first) as usize;
                seen[src] += 1;
                for f in b.schema().fields() {
                    assert_eq!(cell(p, f.name(), j), cell(b, f.name(), src), "{}", f.name());
                }
                let tuple: Vec<String> = key.iter().map(|c| cell(p, c, j)).collect();
                let at = *home.entry(tuple.join("|")).or_insert(i);
                assert_eq!(at, i, "key {tuple:?} in two parts");
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
    }

    #[test]
    fn every_row_once_in_order_and_equal_keys_together() {
        let whole = with_more_types(&random_batch(1200, 7));
        for b in [whole.slice(0, 1000), whole.slice(113, 1000)] {
            for n in [1, 2, 3, 5, 8] {
                for key in [&["k"][..], &["s"], &["k", "s"], &["f", "flag"], &["d"]] {
                    let parts = hash_partition(&b, &keys(key), n).unwrap();
                    assert_eq!(parts.len(), n);
                    check_parts(&b, key, &parts);
                }
            }
        }
    }

    #[test]
    fn parts_hold_buffers_of_their_own() {
        // Stored, spilled or dropped alone, a part must free its own rows' memory: no part
        // keeps a buffer of the whole column alive.
        let b = with_more_types(&random_batch(4000, 3));
        let parts = hash_partition(&b, &keys(&["k"]), 8).unwrap();
        for name in ["k", "row", "f", "d"] {
            let whole = b.column_by_name(name).unwrap().get_array_memory_size();
            let held: usize = parts
                .iter()
                .map(|p| p.column_by_name(name).unwrap().get_array_memory_size())
                .sum();
            assert!(
                held < 2 * whole,
                "{name}: parts hold {held} bytes of a {whole}-byte column"
            );
        }
    }

    #[test]
    fn string_encodings_route_alike() {
        let words = vec!["x", "yy", "zzz", "w", "", "v", "uu"];
        let utf8 = Arc::new(StringArray::from(words.clone())) as ArrayRef;
        let large = Arc::new(LargeStringArray::from(words.clone())) as ArrayRef;
        let schema = |dt| Arc::new(Schema::new(vec![Field::new("s", dt, false)]));
        let a = RecordBatch::try_new(schema(DataType::Utf8), vec![utf8]).unwrap();
        let b = RecordBatch::try_new(schema(DataType::LargeUtf8), vec![large]).unwrap();
        let pa = hash_partition(&a, &keys(&["s"]), 3).unwrap();
        let pb = hash_partition(&b, &keys(&["s"]), 3).unwrap();
        let lens = |p: &[RecordBatch]| p.iter().map(|b| b.num_rows()).collect::<Vec<_>>();
        assert_eq!(lens(&pa), lens(&pb));
        assert_eq!(lens(&pa).iter().sum::<usize>(), words.len());
    }

    #[test]
    fn empty_and_single_row() {
        let empty = batch(vec![], vec![]);
        let parts = hash_partition(&empty, &keys(&["k"]), 4).unwrap();
        assert_eq!(parts.len(), 4);
        assert!(parts.iter().all(|p| p.num_rows() == 0));
        let one = batch(vec![Some(3)], vec![None]);
        let parts = hash_partition(&one, &keys(&["k", "s"]), 4).unwrap();
        assert_eq!(parts.iter().map(|p| p.num_rows()).sum::<usize>(), 1);
        let same = hash_partition(&one, &keys(&["k"]), 1).unwrap();
        assert_eq!(same, vec![one]);
    }

    #[test]
    fn bad_arguments() {
        let b = batch(vec![Some(1)], vec![Some("a")]);
        assert!(matches!(
            hash_partition(&b, &keys(&["k"]), 0),
            Err(FrameError::InvalidArgument(_))
        ));
        assert!(matches!(
            hash_partition(&b, &[], 2),
            Err(FrameError::InvalidArgument(_))
        ));
        match hash_partition(&b, &keys(&["k", "nope"]), 2) {
            Err(FrameError::ColumnNotFound { name, .. }) => assert_eq!(name, "nope"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            hash_partition(&b, &keys(&["nope"]), 1),
            Err(FrameError::ColumnNotFound { .. })
        ));
    }
}
