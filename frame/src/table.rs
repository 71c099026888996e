//! Table chunks: helpers over Arrow record batches, and their serde form (Arrow IPC).

use super::error::FrameResult;
use arrow::array::{
    new_empty_array, Array, ArrayRef, AsArray, GenericByteViewArray, RecordBatch,
    RecordBatchOptions,
};
use arrow::compute::concat_batches;
use arrow::datatypes::{ByteViewType, DataType, SchemaRef};
use arrow::error::ArrowError;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use std::sync::Arc;

/// Concatenates `batches` (all of `schema`) into one batch; one batch is returned as is
/// (record batches share their buffers, so this copies nothing).
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> FrameResult<RecordBatch> {
    match batches {
        [one] => Ok(one.clone()),
        _ => Ok(concat_batches(schema, batches)?),
    }
}

/// Concatenates `batches` (all of `schema`) into one batch as [`concat()`] does, a column at a
/// time, letting go of each column's parts once it is copied: where nothing else holds the
/// parts, the copy needs about one column's bytes beside them, not the whole table's.
pub fn concat_owned(schema: &SchemaRef, batches: Vec<RecordBatch>) -> FrameResult<RecordBatch> {
    if batches.len() == 1 {
        return concat(schema, &batches);
    }
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    let width = schema.fields().len();
    let mut parts: Vec<Vec<Option<ArrayRef>>> = Vec::with_capacity(batches.len());
    for batch in batches {
        if batch.num_columns() != width {
            return Err(ArrowError::InvalidArgumentError(format!(
                "concatenating a batch of {} columns into a table of {width}",
                batch.num_columns()
            ))
            .into());
        }
        parts.push(batch.columns().iter().cloned().map(Some).collect());
    }
    let mut columns = Vec::with_capacity(width);
    for i in 0..width {
        let column: Vec<ArrayRef> = parts.iter_mut().filter_map(|p| p[i].take()).collect();
        let arrays: Vec<&dyn Array> = column.iter().map(|a| a.as_ref()).collect();
        columns.push(match arrays.as_slice() {
            [] => new_empty_array(schema.field(i).data_type()),
            _ => arrow::compute::concat(&arrays)?,
        });
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}

/// Bytes of the buffers a batch uses. Counted per column over the part of each buffer the
/// column uses: Arrow's own `get_array_memory_size` counts a shared buffer once per column
/// or batch that slices it (the parts of a hash partition, every column of a table decoded
/// from one IPC message), which would charge a spilled-and-read-back table many times over.
pub fn batch_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

/// `batch` with each string or binary view column that points into data buffers more than
/// twice the bytes its values use copied into buffers of its own; `batch` itself where none
/// does. A filter's, take's or slice's output keeps every buffer of its input, and a view
/// column is charged for ([`batch_bytes`]), spilled with and sent with each buffer it points
/// into: a few joined rows over a table's strings would otherwise weigh the whole table.
pub fn compact_views(batch: RecordBatch) -> FrameResult<RecordBatch> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            DataType::Utf8View => compact(c.as_string_view()),
            DataType::BinaryView => compact(c.as_binary_view()),
            _ => None,
        })
        .zip(batch.columns())
        .map(|(compacted, c)| compacted.unwrap_or_else(|| c.clone()))
        .collect();
    if columns
        .iter()
        .zip(batch.columns())
        .all(|(a, b)| Arc::ptr_eq(a, b))
    {
        return Ok(batch);
    }
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The view array `a` in buffers of its own, if its buffers hold over twice what it uses
/// (and more than a block's worth of slack). A buffer is counted by its capacity, as
/// [`batch_bytes`] counts it: a reader's buffer reserved for a page of strings that all
/// turned out short enough to inline holds nothing and still pins its allocation.
fn compact<T: ByteViewType + ?Sized>(a: &GenericByteViewArray<T>) -> Option<ArrayRef> {
    const SLACK: usize = 64 << 10;
    let held: usize = a.data_buffers().iter().map(|b| b.capacity()).sum();
    let used = a.total_buffer_bytes_used();
    (held > used.saturating_mul(2).saturating_add(SLACK)).then(|| Arc::new(a.gc()) as ArrayRef)
}

/// Encodes batches as one Arrow IPC stream (the first batch's schema; none: an empty stream).
fn to_ipc(batches: &[RecordBatch]) -> Result<Vec<u8>, arrow::error::ArrowError> {
    let mut bytes = Vec::new();
    if let Some(first) = batches.first() {
        let mut writer = StreamWriter::try_new(&mut bytes, first.schema_ref())?;
        for b in batches {
            writer.write(b)?;
        }
        writer.finish()?;
    }
    Ok(bytes)
}

/// Decodes an Arrow IPC stream written by [`to_ipc`].
fn from_ipc(bytes: &[u8]) -> Result<Vec<RecordBatch>, arrow::error::ArrowError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    StreamReader::try_new(bytes, None)?.collect()
}

/// Serde for one record batch as Arrow IPC bytes (`#[serde(with = "ipc_one")]`).
pub mod ipc_one {
    use super::{from_ipc, to_ipc, RecordBatch};
    use serde::de::Error as _;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `batch` as IPC bytes.
    pub fn serialize<S: Serializer>(batch: &RecordBatch, s: S) -> Result<S::Ok, S::Error> {
        let bytes = to_ipc(std::slice::from_ref(batch)).map_err(S::Error::custom)?;
        s.serialize_bytes(&bytes)
    }

    /// Reads one batch from IPC bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RecordBatch, D::Error> {
        let bytes = Vec::<u8>::deserialize(d)?;
        let mut batches = from_ipc(&bytes).map_err(D::Error::custom)?;
        match (batches.pop(), batches.is_empty()) {
            (Some(b), true) => Ok(b),
            _ => Err(D::Error::custom("expected exactly one record batch")),
        }
    }
}

/// Serde for several record batches (one IPC stream per batch, since parts may differ in
/// schema only by being empty).
pub mod ipc_many {
    use super::RecordBatch;
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(serde::Serialize, serde::Deserialize)]
    struct One(#[serde(with = "super::ipc_one")] RecordBatch);

    /// Writes `batches` as a sequence of IPC byte strings.
    pub fn serialize<S: Serializer>(batches: &[RecordBatch], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(batches.len()))?;
        for b in batches {
            seq.serialize_element(&One(b.clone()))?;
        }
        seq.end()
    }

    /// Reads a sequence of batches.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RecordBatch>, D::Error> {
        Ok(Vec::<One>::deserialize(d)?
            .into_iter()
            .map(|o| o.0)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Float64Array, Int64Array, StringViewArray, UInt32Array};
    use std::sync::Arc;

    #[test]
    fn concatenating_owned_batches_equals_arrows_concatenation() {
        let batch = |ids: Vec<i64>, names: Vec<&str>| {
            let ids: ArrayRef = Arc::new(Int64Array::from(ids));
            let names: ArrayRef = Arc::new(StringViewArray::from_iter_values(names));
            RecordBatch::try_from_iter([("id", ids), ("name", names)]).unwrap()
        };
        let batches = vec![
            batch(vec![1, 2], vec!["a", "bb"]),
            batch(vec![], vec![]),
            batch(vec![3], vec!["a string longer than twelve bytes"]),
        ];
        let schema = batches[0].schema();
        let expected = concat_batches(&schema, &batches).unwrap();
        assert_eq!(concat_owned(&schema, batches.clone()).unwrap(), expected);
        assert_eq!(
            concat_owned(&schema, batches[..1].to_vec()).unwrap(),
            batches[0]
        );
        let none = concat_owned(&schema, Vec::new()).unwrap();
        assert_eq!((none.num_rows(), none.schema()), (0, schema.clone()));
        // A batch of another width is an error, not a panic.
        let narrow = RecordBatch::try_from_iter([("id", batches[0].column(0).clone())]).unwrap();
        let err = concat_owned(&schema, vec![batches[0].clone(), narrow]).unwrap_err();
        assert!(
            err.to_string().contains("1 columns into a table of 2"),
            "{err}"
        );
    }

    #[test]
    fn a_few_rows_taken_from_many_strings_get_buffers_of_their_own() {
        let strings: Vec<String> = (0..20_000)
            .map(|i| format!("a string longer than twelve {i}"))
            .collect();
        let all: ArrayRef = Arc::new(StringViewArray::from_iter_values(&strings));
        let short: ArrayRef = Arc::new(StringViewArray::from_iter_values(["ab", "cd", "ef"]));
        let ids = UInt32Array::from(vec![7, 19_999, 3]);
        let taken = arrow::compute::take(&all, &ids, None).unwrap();
        let batch = RecordBatch::try_from_iter([("s", taken), ("t", short.clone())]).unwrap();
        let before = batch_bytes(&batch);
        let out = compact_views(batch.clone()).unwrap();
        assert_eq!(out, batch, "the same values");
        assert!(
            batch_bytes(&out) * 100 < before,
            "{} bytes, {before} before",
            batch_bytes(&out)
        );
        assert!(
            Arc::ptr_eq(out.column(1), &short),
            "a tight column is kept as it is"
        );
        // Compacted once, it is tight: the batch comes back as it went in.
        let again = compact_views(out.clone()).unwrap();
        assert!(Arc::ptr_eq(again.column(0), out.column(0)));
        // The whole array uses its buffers: nothing to copy.
        let whole = RecordBatch::try_from_iter([("s", all.clone())]).unwrap();
        assert!(Arc::ptr_eq(compact_views(whole).unwrap().column(0), &all));
    }

    #[test]
    fn short_strings_taken_from_a_column_with_long_ones_keep_no_buffer() {
        let strings: Vec<String> = (0..20_000)
            .map(|i| match i % 2 {
                0 => "F".to_string(),
                _ => format!("a string longer than twelve {i}"),
            })
            .collect();
        let all: ArrayRef = Arc::new(StringViewArray::from_iter_values(&strings));
        let ids = UInt32Array::from_iter_values((0..20_000).step_by(2).take(3000));
        let taken = arrow::compute::take(&all, &ids, None).unwrap();
        let batch = RecordBatch::try_from_iter([("s", taken)]).unwrap();
        let parts: Vec<RecordBatch> = (0..3).map(|p| batch.slice(p * 1000, 1000)).collect();
        for part in parts {
            let out = compact_views(part.clone()).unwrap();
            assert_eq!(out, part);
            assert!(
                batch_bytes(&out) <= 16_000 + 1000,
                "{} bytes",
                batch_bytes(&out)
            );
        }
    }

    #[test]
    fn tables_decoded_from_one_buffer_and_partition_slices_are_counted_once() {
        let n = 10_000;
        let batch = RecordBatch::try_from_iter([
            (
                "a",
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "b",
                Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
            ),
            ("c", Arc::new(Int64Array::from_iter_values(0..n))),
        ])
        .unwrap();
        let own = batch_bytes(&batch);
        assert_eq!(own, 3 * 8 * n as usize);
        // Every column of a decoded batch slices the one message buffer.
        let decoded = from_ipc(&to_ipc(std::slice::from_ref(&batch)).unwrap()).unwrap();
        assert_eq!(batch_bytes(&decoded[0]), own);
        assert!(
            decoded[0].get_array_memory_size() >= 2 * own,
            "arrow counts it per column"
        );
        // Slices of one table add up to the table.
        let halves = [batch.slice(0, 4000), batch.slice(4000, 6000)];
        assert_eq!(halves.iter().map(batch_bytes).sum::<usize>(), own);
    }
}
