//! Parquet input and output: metadata (row groups with their statistics), reading row
//! groups with column projection, pruning row groups by a predicate, and writing.

mod decode;
mod pages;

use super::error::{FrameError, FrameResult};
use super::expr::decimal::compare_decimals;
use super::expr::{BinaryOperator, Expr, Literal};
use super::schema::is_decimal;
use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use decode::ColumnRead;
use pages::ScanRowGroups;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ArrowWriter, ProjectionMask};
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, RowGroupMetaData};
use parquet::file::properties::WriterProperties;
use parquet::file::serialized_reader::SerializedPageReader;
use parquet::file::statistics::Statistics;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fs::File;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::SystemTime;

/// What a Parquet file holds, read from its footer.
#[derive(Clone, Debug)]
pub struct ParquetInfo {
    /// The Arrow schema of the whole file.
    pub schema: SchemaRef,
    /// Its row groups, in file order.
    pub row_groups: Vec<RowGroupInfo>,
}

/// One row group: its size and, per column, the minimum and maximum where the file
/// records them.
#[derive(Clone, Debug)]
pub struct RowGroupInfo {
    /// Rows.
    pub rows: u64,
    /// Uncompressed bytes.
    pub bytes: u64,
    /// Per column of the Arrow schema (top-level columns only): (min, max).
    pub bounds: Vec<Option<(Literal, Literal)>>,
}

/// The row groups and columns of one file that one chunk reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParquetScan {
    /// The file.
    pub path: String,
    /// Row groups, in file order.
    pub row_groups: Vec<usize>,
    /// Columns to read, by name (all when `None`), in this order.
    pub columns: Option<Vec<String>>,
}

fn open(path: &str) -> FrameResult<File> {
    File::open(path).map_err(|e| FrameError::Io {
        path: path.to_string(),
        message: e.to_string(),
    })
}

fn parquet_error(path: &str, e: parquet::errors::ParquetError) -> FrameError {
    FrameError::Parquet(format!("{path}: {e}"))
}

/// A reader of `path` whose footer is parsed once per process ([`footer`]).
fn reader_builder(path: &str) -> FrameResult<ParquetRecordBatchReaderBuilder<File>> {
    let file = open(path)?;
    let metadata = footer(path, &file)?;
    Ok(ParquetRecordBatchReaderBuilder::new_with_metadata(
        file, metadata,
    ))
}

/// Entries kept by [`footer`] (footers) and [`distinct_values`] (dictionary sizes); past
/// this many a cache starts again.
const CACHE_KEPT: usize = 256;

/// A file as the process's caches know it: its path, length and modification time.
type FileKey = (String, u64, Option<SystemTime>);

fn file_key(path: &str, file: &File) -> FrameResult<FileKey> {
    let stat = file.metadata().map_err(|e| FrameError::Io {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    Ok((path.to_string(), stat.len(), stat.modified().ok()))
}

/// The value `cache` keeps under `key`, else `make`'s, kept (the cache starts again past
/// [`CACHE_KEPT`] entries). The lock is not held while `make` reads the file.
fn remembered<K: std::hash::Hash + Eq, V: Clone>(
    cache: &'static OnceLock<Mutex<HashMap<K, V>>>,
    key: K,
    make: impl FnOnce() -> FrameResult<V>,
) -> FrameResult<V> {
    let cache = cache.get_or_init(Mutex::default);
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(v) = lock().get(&key) {
        return Ok(v.clone());
    }
    let value = make()?;
    let mut kept = lock();
    if kept.len() >= CACHE_KEPT {
        kept.clear();
    }
    kept.insert(key, value.clone());
    Ok(value)
}

/// The footer of `path` (open as `file`), parsed once per process while the file keeps its
/// length and modification time: every chunk of a scan reads a few row groups of the same
/// file, and parsing a footer of hundreds of row groups for each cost a few percent of a
/// scan. Large (64-bit offset) strings and binaries are read as their 32-bit offset types,
/// which halve the offsets' memory: a chunk holds far less than the 2 GiB of string data
/// one such array can address (a chunk that does not is a `Parquet` error).
fn footer(path: &str, file: &File) -> FrameResult<ArrowReaderMetadata> {
    static FOOTERS: OnceLock<Mutex<HashMap<FileKey, ArrowReaderMetadata>>> = OnceLock::new();
    remembered(&FOOTERS, file_key(path, file)?, || parse_footer(path, file))
}

/// [`footer`] parsed from the file.
fn parse_footer(path: &str, file: &File) -> FrameResult<ArrowReaderMetadata> {
    let metadata = ArrowReaderMetadata::load(file, ArrowReaderOptions::new())
        .map_err(|e| parquet_error(path, e))?;
    let narrow = |f: &FieldRef| -> FieldRef {
        match f.data_type() {
            DataType::LargeUtf8 => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8)),
            DataType::LargeBinary => Arc::new(f.as_ref().clone().with_data_type(DataType::Binary)),
            _ => f.clone(),
        }
    };
    let schema = metadata.schema();
    match schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::LargeUtf8 | DataType::LargeBinary))
    {
        false => Ok(metadata),
        true => {
            let fields: Vec<FieldRef> = schema.fields().iter().map(narrow).collect();
            let narrowed = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
            let options = ArrowReaderOptions::new().with_schema(narrowed);
            ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
                .map_err(|e| parquet_error(path, e))
        }
    }
}

/// Reads the footer of `path`.
pub fn inspect(path: &str) -> FrameResult<ParquetInfo> {
    let builder = reader_builder(path)?;
    let schema = builder.schema().clone();
    let descr = builder.parquet_schema();
    // Top-level Arrow columns map to leaf columns one-to-one only for flat schemas; others
    // get no bounds.
    let flat = descr.num_columns() == schema.fields().len();
    let row_groups = builder
        .metadata()
        .row_groups()
        .iter()
        .map(|rg| RowGroupInfo {
            rows: rg.num_rows().max(0) as u64,
            bytes: rg.total_byte_size().max(0) as u64,
            bounds: if flat {
                column_bounds(rg, &schema)
            } else {
                vec![None; schema.fields().len()]
            },
        })
        .collect();
    Ok(ParquetInfo { schema, row_groups })
}

fn column_bounds(rg: &RowGroupMetaData, schema: &Schema) -> Vec<Option<(Literal, Literal)>> {
    rg.columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, field)| match (c.statistics()?, field.data_type()) {
            // A decimal's statistics are its unscaled values.
            (stats, DataType::Decimal128(p, s)) => {
                let (min, max) = decimal_bounds(stats)?;
                let bound = |value| Literal::decimal(value, *p, *s).ok();
                Some((bound(min)?, bound(max)?))
            }
            (_, dt) if is_decimal(dt) => None,
            (stats, _) => plain_bounds(stats),
        })
        .collect()
}

/// The unscaled bounds of a decimal column's statistics (integers, or big-endian two's
/// complement bytes of up to 16).
fn decimal_bounds(stats: &Statistics) -> Option<(i128, i128)> {
    let bytes = |b: &[u8]| -> Option<i128> {
        let first = *b.first()?;
        if b.len() > 16 {
            return None;
        }
        let fill = if first & 0x80 != 0 { 0xff } else { 0 };
        let mut word = [fill; 16];
        word[16 - b.len()..].copy_from_slice(b);
        Some(i128::from_be_bytes(word))
    };
    match stats {
        Statistics::Int32(s) => Some((i128::from(*s.min_opt()?), i128::from(*s.max_opt()?))),
        Statistics::Int64(s) => Some((i128::from(*s.min_opt()?), i128::from(*s.max_opt()?))),
        Statistics::FixedLenByteArray(s) if s.min_is_exact() && s.max_is_exact() => {
            Some((bytes(s.min_opt()?.data())?, bytes(s.max_opt()?.data())?))
        }
        Statistics::ByteArray(s) if s.min_is_exact() && s.max_is_exact() => {
            Some((bytes(s.min_opt()?.data())?, bytes(s.max_opt()?.data())?))
        }
        _ => None,
    }
}

/// The bounds of a column of another type from its statistics, where they are integers,
/// floats or exact strings.
fn plain_bounds(stats: &Statistics) -> Option<(Literal, Literal)> {
    match stats {
        Statistics::Int32(s) => Some((
            Literal::Int(i64::from(*s.min_opt()?)),
            Literal::Int(i64::from(*s.max_opt()?)),
        )),
        Statistics::Int64(s) => Some((Literal::Int(*s.min_opt()?), Literal::Int(*s.max_opt()?))),
        Statistics::Double(s) => {
            Some((Literal::Float(*s.min_opt()?), Literal::Float(*s.max_opt()?)))
        }
        Statistics::ByteArray(s) if s.min_is_exact() && s.max_is_exact() => Some((
            Literal::Str(std::str::from_utf8(s.min_opt()?.data()).ok()?.to_string()),
            Literal::Str(std::str::from_utf8(s.max_opt()?.data()).ok()?.to_string()),
        )),
        _ => None,
    }
}

/// Orders two literals of the same kind (ints and floats compare as numbers; a decimal with
/// an integer, a decimal, or a float constant by its shortest spelling, exactly, as the
/// filter compares them with a decimal column).
fn compare(a: &Literal, b: &Literal) -> Option<Ordering> {
    if matches!(a, Literal::Decimal { .. }) || matches!(b, Literal::Decimal { .. }) {
        let exact = |l: &Literal| l.decimal_value().map(|(v, d)| (v, d.scale));
        return compare_decimals(exact(a)?, exact(b)?);
    }
    match (a, b) {
        (Literal::Int(x), Literal::Int(y)) => Some(x.cmp(y)),
        (Literal::Str(x), Literal::Str(y)) => Some(x.cmp(y)),
        (Literal::Int(x), Literal::Float(y)) => (*x as f64).partial_cmp(y),
        (Literal::Float(x), Literal::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Literal::Float(x), Literal::Float(y)) => x.partial_cmp(y),
        _ => None,
    }
}

impl ParquetInfo {
    /// The row groups that may hold rows where `predicate` is true: a row group is skipped
    /// only when its statistics prove that a conjunct `column <op> literal` (or
    /// `literal <op> column`) is false for every row; anything else keeps it.
    pub fn prune(&self, predicate: &Expr) -> Vec<usize> {
        (0..self.row_groups.len())
            .filter(|&rg| self.may_match(rg, predicate))
            .collect()
    }

    fn may_match(&self, rg: usize, predicate: &Expr) -> bool {
        let Expr::Binary { op, left, right } = predicate else {
            return true;
        };
        if *op == BinaryOperator::And {
            return self.may_match(rg, left) && self.may_match(rg, right);
        }
        let (name, value, op) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(c), Expr::Literal(v)) => (c, v, *op),
            (Expr::Literal(v), Expr::Column(c)) => match op.swapped() {
                Some(op) => (c, v, op),
                None => return true,
            },
            _ => return true,
        };
        let Some((min, max)) = self
            .schema
            .index_of(name)
            .ok()
            .and_then(|i| self.row_groups.get(rg)?.bounds.get(i)?.as_ref())
        else {
            return true;
        };
        // A decimal constant meets a float column as a float (see `compare`).
        if matches!(value, Literal::Decimal { .. }) && matches!(min, Literal::Float(_)) {
            return true;
        }
        let (Some(lo), Some(hi)) = (compare(value, min), compare(value, max)) else {
            return true;
        };
        match op {
            BinaryOperator::Eq => lo.is_ge() && hi.is_le(),
            BinaryOperator::Lt => compare(min, value).is_some_and(Ordering::is_lt),
            BinaryOperator::LtEq => compare(min, value).is_some_and(Ordering::is_le),
            BinaryOperator::Gt => compare(max, value).is_some_and(Ordering::is_gt),
            BinaryOperator::GtEq => compare(max, value).is_some_and(Ordering::is_ge),
            _ => true,
        }
    }
}

/// Reads the row groups and columns of `scan` as one batch.
pub fn read(scan: &ParquetScan) -> FrameResult<RecordBatch> {
    Ok(read_with(scan, &[])?.0)
}

/// [`read`], with columns of `dictionaries` decoded as dictionaries where they can be (see
/// [`read_batches_with`]), and those columns with their types in the file.
pub fn read_with(
    scan: &ParquetScan,
    dictionaries: &[String],
) -> FrameResult<(RecordBatch, Decoded)> {
    let rows = scan_rows(scan)?;
    let (batches, decoded) = read_batches_with(scan, rows.max(1), dictionaries)?;
    let batches = batches.collect::<FrameResult<Vec<_>>>()?;
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => Arc::new(scan_schema(scan)?),
    };
    let batch = super::table::concat(&schema, &batches)?;
    drop(batches);
    // Decoding leaves spare capacity in the buffers; the chunk may be kept long.
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    drop(batch);
    for c in &mut columns {
        if let Some(a) = Arc::get_mut(c) {
            a.shrink_to_fit();
        }
    }
    Ok((RecordBatch::try_new(schema, columns)?, decoded))
}

/// The rows of the row groups `scan` reads.
pub fn scan_rows(scan: &ParquetScan) -> FrameResult<usize> {
    let path = scan.path.as_str();
    let file = open(path)?;
    group_rows(scan, &footer(path, &file)?)
}

/// The rows of the row groups `scan` reads in the file of footer `metadata`;
/// InvalidArgument for a row group the file does not have.
fn group_rows(scan: &ParquetScan, metadata: &ArrowReaderMetadata) -> FrameResult<usize> {
    let groups = metadata.metadata().row_groups();
    let rows: i64 = scan
        .row_groups
        .iter()
        .map(|&i| {
            groups
                .get(i)
                .map(RowGroupMetaData::num_rows)
                .ok_or_else(|| {
                    FrameError::InvalidArgument(format!("{} has no row group {i}", scan.path))
                })
        })
        .sum::<FrameResult<i64>>()?;
    Ok(rows.max(0) as usize)
}

/// The schema of the batches of `scan`: its columns in the order asked for.
fn scan_schema(scan: &ParquetScan) -> FrameResult<Schema> {
    let path = scan.path.as_str();
    let schema = footer(path, &open(path)?)?.schema().clone();
    match &scan.columns {
        None => Ok(schema.as_ref().clone()),
        Some(columns) => {
            let indices = columns
                .iter()
                .map(|c| super::schema::column_index(&schema, c))
                .collect::<FrameResult<Vec<_>>>()?;
            Ok(schema.project(&indices)?)
        }
    }
}

/// The rows of `scan` as they are decoded, `batch_rows` at a time (the last batch may be
/// shorter), with its columns in the order asked for.
pub fn read_batches(
    scan: &ParquetScan,
    batch_rows: usize,
) -> FrameResult<impl Iterator<Item = FrameResult<RecordBatch>>> {
    Ok(read_batches_with(scan, batch_rows, &[])?.0)
}

/// The columns a read decoded as dictionaries, with their types in the file.
pub type Decoded = Vec<(String, DataType)>;

/// [`read_batches`], with those of the string columns `dictionaries` whose every data page
/// in the scan's row groups is dictionary encoded decoded as dictionaries of their strings
/// (`Dictionary(Int32, Utf8)`): a predicate on one then runs once per distinct value, and
/// rows a filter drops are never made strings. Also the names of the columns so decoded.
pub fn read_batches_with(
    scan: &ParquetScan,
    batch_rows: usize,
    dictionaries: &[String],
) -> FrameResult<(impl Iterator<Item = FrameResult<RecordBatch>>, Decoded)> {
    let path = scan.path.clone();
    let file = open(&path)?;
    let mut metadata = footer(&path, &file)?;
    let rows = group_rows(scan, &metadata)?;
    let decoded = dictionary_encoded(&metadata, &scan.row_groups, dictionaries);
    let declared = declared_types(&metadata, &decoded);
    if !decoded.is_empty() {
        metadata = as_dictionaries(&path, metadata, &decoded)?;
    }
    let schema = metadata.schema().clone();
    let indices = match &scan.columns {
        Some(columns) => columns
            .iter()
            .map(|c| super::schema::column_index(&schema, c))
            .collect::<FrameResult<Vec<_>>>()?,
        None => (0..schema.fields().len()).collect(),
    };
    let file = Arc::new(file);
    // Flat required numeric columns are decoded by Tessera (`decode`), the rest by Arrow.
    let flat = metadata.parquet_schema().num_columns() == schema.fields().len();
    let mut own: Vec<Option<Box<dyn ColumnRead>>> = indices
        .iter()
        .map(|&i| {
            let field = schema.field(i);
            let groups = &scan.row_groups;
            flat.then(|| decode::reader(&file, metadata.metadata(), i, field, groups))
                .flatten()
        })
        .collect();
    // Arrow reads its columns in file order; `at` places each in the order asked for.
    let mut arrow_columns: Vec<usize> = (indices.iter().zip(&own))
        .filter(|(_, o)| o.is_none())
        .map(|(i, _)| *i)
        .collect();
    arrow_columns.sort_unstable();
    arrow_columns.dedup();
    let at: Vec<usize> = indices
        .iter()
        .map(|i| arrow_columns.binary_search(i).unwrap_or_default())
        .collect();
    let counted_only = arrow_columns.is_empty() && !own.is_empty();
    // Read in batches smaller than the scan, columns read as dictionaries get a reader a
    // row group: a batch across two would meet two dictionaries, and Arrow's reader then
    // makes that column's strings and hashes them into one dictionary again (8% of TPC-H
    // Q19 at SF10). A read in one batch takes the row groups together (pieces a row group
    // each, glued, measured slower: TPC-H Q21 9%).
    let batch_rows = batch_rows.max(1);
    let per_group = !decoded.is_empty() && rows > batch_rows;
    let hint = metadata.schema().fields().clone();
    let mask = ProjectionMask::roots(metadata.parquet_schema(), arrow_columns);
    let levels = parquet_to_arrow_field_levels(metadata.parquet_schema(), mask, Some(&hint))
        .map_err(|e| parquet_error(&path, e))?;
    let reader_path = path.clone();
    let reader = move |groups: Vec<usize>| -> FrameResult<ParquetRecordBatchReader> {
        let row_groups = ScanRowGroups {
            file: file.clone(),
            metadata: metadata.metadata().clone(),
            row_groups: groups,
        };
        ParquetRecordBatchReader::try_new_with_row_groups(&levels, &row_groups, batch_rows, None)
            .map_err(|e| parquet_error(&reader_path, e))
    };
    let readers = match (counted_only, per_group) {
        (true, _) => Vec::new(),
        (false, true) => scan.row_groups.iter().map(|&g| vec![g]).collect(),
        (false, false) => vec![scan.row_groups.clone()],
    };
    // Where Tessera decodes every column, batches of row counts alone pace its readers.
    let counted = if counted_only { rows } else { 0 };
    let counts = (0..counted).step_by(batch_rows).map(move |start| {
        let options = RecordBatchOptions::new().with_row_count(Some(batch_rows.min(rows - start)));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &options,
        )?)
    });
    let batches = readers
        .into_iter()
        .map(reader)
        .flat_map(|reader| {
            let (batches, failed) = match reader {
                Ok(batches) => (Some(batches), None),
                Err(e) => (None, Some(Err(e))),
            };
            batches.into_iter().flatten().map(|b| Ok(b?)).chain(failed)
        })
        .chain(counts)
        .map(move |batch: FrameResult<RecordBatch>| {
            let batch = batch?;
            if own.iter().all(Option::is_none) {
                return Ok(batch.project(&at)?);
            }
            let rows = batch.num_rows();
            let mut fields = Vec::with_capacity(at.len());
            let mut columns = Vec::with_capacity(at.len());
            for ((&i, &a), own) in indices.iter().zip(&at).zip(&mut own) {
                let (field, column) = match own {
                    Some(own) => (
                        schema.fields()[i].clone(),
                        own.read(rows).map_err(|e| parquet_error(&path, e))?,
                    ),
                    None => (batch.schema().fields()[a].clone(), batch.column(a).clone()),
                };
                fields.push(field);
                columns.push(column);
            }
            Ok(RecordBatch::try_new(
                Arc::new(Schema::new(fields)),
                columns,
            )?)
        });
    Ok((batches, declared))
}

/// Those of `names` that are string columns (not dictionaries already) of a flat schema
/// and whose every data page in `row_groups` is dictionary encoded.
fn dictionary_encoded(
    metadata: &ArrowReaderMetadata,
    row_groups: &[usize],
    names: &[String],
) -> Vec<String> {
    let schema = metadata.schema();
    if names.is_empty() || metadata.parquet_schema().num_columns() != schema.fields().len() {
        return Vec::new();
    }
    let all_dictionary = |column: usize| {
        row_groups.iter().all(|&g| {
            metadata
                .metadata()
                .row_groups()
                .get(g)
                .is_some_and(|g| dictionary_only(g.column(column)))
        })
    };
    names
        .iter()
        .filter(|name| {
            schema.index_of(name).is_ok_and(|i| {
                matches!(
                    schema.field(i).data_type(),
                    DataType::Utf8 | DataType::Utf8View
                ) && all_dictionary(i)
            })
        })
        .cloned()
        .collect()
}

/// True if every data page of column chunk `c` is dictionary encoded.
fn dictionary_only(c: &ColumnChunkMetaData) -> bool {
    let only = |m: &parquet::basic::EncodingMask| {
        m.is_only(Encoding::RLE_DICTIONARY) || m.is_only(Encoding::PLAIN_DICTIONARY)
    };
    c.dictionary_page_offset().is_some() && c.page_encoding_stats_mask().is_some_and(only)
}

/// The number of distinct values of column `name` in row group `row_group` of `path`,
/// where the file says every data page of that column chunk is dictionary encoded: its
/// dictionary page's size, read from the file once per process while the file keeps its
/// length and modification time (one page: such a dictionary stayed under the writer's
/// dictionary size limit). `None` where the chunk is not wholly dictionary encoded, or
/// the schema is not flat.
pub fn distinct_values(path: &str, row_group: usize, name: &str) -> FrameResult<Option<u64>> {
    type Sizes = HashMap<(FileKey, usize, String), Option<u64>>;
    static SIZES: OnceLock<Mutex<Sizes>> = OnceLock::new();
    let file = open(path)?;
    let key = (file_key(path, &file)?, row_group, name.to_string());
    remembered(&SIZES, key, || dictionary_size(path, file, row_group, name))
}

/// [`distinct_values`] read from the file (open as `file`).
fn dictionary_size(
    path: &str,
    file: File,
    row_group: usize,
    name: &str,
) -> FrameResult<Option<u64>> {
    let metadata = footer(path, &file)?;
    let schema = metadata.schema();
    if metadata.parquet_schema().num_columns() != schema.fields().len() {
        return Ok(None);
    }
    let (Ok(column), Some(group)) = (
        schema.index_of(name),
        metadata.metadata().row_groups().get(row_group),
    ) else {
        return Ok(None);
    };
    let chunk = group.column(column);
    if !dictionary_only(chunk) {
        return Ok(None);
    }
    let rows = usize::try_from(group.num_rows()).unwrap_or(0);
    let mut pages = SerializedPageReader::new(Arc::new(file), chunk, rows, None)
        .map_err(|e| parquet_error(path, e))?;
    match pages.get_next_page().map_err(|e| parquet_error(path, e))? {
        Some(Page::DictionaryPage { num_values, .. }) => Ok(Some(u64::from(num_values))),
        _ => Ok(None),
    }
}

/// `names` with their types in the file of `metadata`.
fn declared_types(metadata: &ArrowReaderMetadata, names: &[String]) -> Decoded {
    let schema = metadata.schema();
    names
        .iter()
        .filter_map(|n| {
            Some((
                n.clone(),
                schema.field_with_name(n).ok()?.data_type().clone(),
            ))
        })
        .collect()
}

/// `metadata` with the columns `names` read as `Dictionary(Int32, Utf8)`.
fn as_dictionaries(
    path: &str,
    metadata: ArrowReaderMetadata,
    names: &[String],
) -> FrameResult<ArrowReaderMetadata> {
    let schema = metadata.schema();
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| match names.contains(f.name()) {
            true => Arc::new(f.as_ref().clone().with_data_type(dictionary.clone())),
            false => f.clone(),
        })
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let options = ArrowReaderOptions::new().with_schema(schema);
    ArrowReaderMetadata::try_new(metadata.metadata().clone(), options)
        .map_err(|e| parquet_error(path, e))
}

/// Writes `batches` (all of `schema`) as one zstd-compressed Parquet file, one row group
/// per batch (a batch longer than the writer's row-group limit of 1M rows is split), so
/// that reading the file back gives the same chunks and row-group pruning can skip them.
pub fn write(path: &str, schema: &SchemaRef, batches: &[RecordBatch]) -> FrameResult<()> {
    let file = File::create(path).map_err(|e| FrameError::Io {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .build();
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
        .map_err(|e| parquet_error(path, e))?;
    for b in batches {
        writer.write(b).map_err(|e| parquet_error(path, e))?;
        writer.flush().map_err(|e| parquet_error(path, e))?;
    }
    writer.close().map_err(|e| parquet_error(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests;
