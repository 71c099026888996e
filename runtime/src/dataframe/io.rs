//! Reading frames from CSV and Parquet files and from Arrow or tensor data, and writing
//! them out.

use super::node::{CsvFile, CsvSource, FrameKind, FrameNode, ParquetSource};
use super::DataFrame;
use crate::error::{Error, Result};
use crate::session::Session;
use arrow::array::RecordBatch;
use arrow::datatypes::{Field, Schema};
use std::path::Path;
use std::sync::Arc;
use tessera_kernels::frame::csv::{infer_schema, CsvOptions};
use tessera_kernels::frame::expr::Expr;
use tessera_kernels::frame::ops::FileFormat;
use tessera_kernels::frame::parquet::inspect;
use tessera_kernels::frame::FrameError;
use tessera_kernels::HostTensor;

/// Options of [`read_csv_with`] beyond the parser's.
#[derive(Clone, Debug, Default)]
pub struct ReadCsv {
    /// Parsing options (delimiter, quoting, nulls, type overrides, inference sample).
    pub csv: CsvOptions,
    /// Bytes of file per chunk (default: the session's chunk size).
    pub chunk_bytes: Option<u64>,
}

/// Options of [`read_parquet_with`].
#[derive(Clone, Debug, Default)]
pub struct ReadParquet {
    /// Columns to read (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Rows to keep: row groups whose statistics rule the predicate out are not read, and
    /// the rest are filtered.
    pub filter: Option<Expr>,
    /// Uncompressed bytes of row groups per chunk at most (default: the session's chunk
    /// size); chunks are cut to about equal sizes, as many as the session's threads where
    /// that many fit (see `runs_of_row_groups`).
    pub chunk_bytes: Option<u64>,
}

/// Reads a CSV file lazily (a path, or a glob such as `data/part-*.csv` for many files of
/// one schema): the header and the first MiB are read now to know the schema; the rest is
/// cut into byte ranges parsed in parallel when the frame is executed. Quoted fields may
/// hold delimiters, doubled quotes and line ends (`\n` or `\r\n`) under any chunk size: when
/// the frame is executed, one parallel pass over the file finds which ranges start inside a
/// quoted field, and each range parses the rows that start in it.
pub fn read_csv(path: impl AsRef<Path>) -> DataFrame {
    read_csv_with(path, ReadCsv::default())
}

/// [`read_csv`] with options.
pub fn read_csv_with(path: impl AsRef<Path>, options: ReadCsv) -> DataFrame {
    DataFrame::build(|| {
        let paths = expand_glob(path.as_ref())?;
        let mut files = Vec::with_capacity(paths.len());
        let mut schema: Option<Schema> = None;
        for p in paths {
            let (s, data_start) = infer_schema(&p, &options.csv)?;
            let len = std::fs::metadata(&p)
                .map_err(|e| FrameError::Io {
                    path: p.clone(),
                    message: e.to_string(),
                })?
                .len();
            match &schema {
                Some(first) if first.fields() != s.fields() => {
                    return Err(Error::Frame(FrameError::TypeMismatch(format!(
                        "{p} has columns {s} but the first file has {first}"
                    ))))
                }
                Some(_) => {}
                None => schema = Some(s),
            }
            files.push(CsvFile {
                path: p,
                len,
                data_start,
            });
        }
        let schema = schema.ok_or_else(|| FrameError::Io {
            path: path.as_ref().display().to_string(),
            message: "no file matches".into(),
        })?;
        Ok(FrameNode::new(
            Arc::new(schema.clone()),
            FrameKind::Csv(CsvSource {
                files,
                schema,
                options: options.csv.clone(),
                chunk_bytes: options.chunk_bytes,
            }),
        ))
    })
}

/// A chunk holds at least this many bytes of row groups when the chunks are made more
/// numerous to give every thread work ([`runs_of_row_groups`]).
const MIN_SPLIT_BYTES: u64 = 1 << 20;

/// Row groups `(index, bytes)`, in file order, cut into runs that become chunks: none over
/// `target` bytes unless one row group is (it is then a run alone); the total over the
/// target runs (rounded up, and more where whole row groups do not fit them), rounded up
/// to a multiple of `threads` while each run still holds [`MIN_SPLIT_BYTES`]; and of about
/// equal bytes. Packing row groups greedily up to the
/// target left a remainder: the peers' `xy` file (81 row groups of 2 MB) became five
/// chunks of 16 and one of 1, and with two threads one of them read a third chunk while
/// the other idled.
pub(crate) fn runs_of_row_groups(
    groups: &[(usize, u64)],
    target: u64,
    threads: usize,
) -> Vec<Vec<usize>> {
    let target = target.max(1);
    let total: u64 = groups.iter().map(|&(_, b)| b).sum();
    let threads = threads.max(1) as u64;
    // `n` runs, rounded up to a multiple of the threads where each keeps enough bytes.
    let rounded = |n: u64| {
        let balanced = n.div_ceil(threads).saturating_mul(threads);
        if total / balanced >= MIN_SPLIT_BYTES {
            balanced
        } else {
            n
        }
    };
    let mut count = rounded(total.div_ceil(target).max(1));
    loop {
        let runs = equal_runs(groups, target, total, count);
        // Whole row groups may not fit `count` runs under the target: one more run.
        if runs.len() as u64 <= count || count >= groups.len() as u64 {
            return runs;
        }
        count = rounded(count + 1);
    }
}

/// Row groups in runs of about `total / count` bytes, a run ending early where the next
/// row group would take it over `target`.
fn equal_runs(groups: &[(usize, u64)], target: u64, total: u64, count: u64) -> Vec<Vec<usize>> {
    let mut runs: Vec<Vec<usize>> = Vec::new();
    let (mut closed, mut open) = (0u64, 0u64);
    for &(rg, b) in groups {
        // The open run (number `runs.len()`) ends once the bytes so far reach its share.
        let share_met =
            u128::from(closed + open) * u128::from(count) >= runs.len() as u128 * u128::from(total);
        match runs.last_mut() {
            Some(run) if !share_met && open + b <= target => run.push(rg),
            _ => {
                runs.push(vec![rg]);
                closed += open;
                open = 0;
            }
        }
        open += b;
    }
    runs
}

/// Reads a Parquet file lazily, one chunk per run of row groups; the footer is read now.
pub fn read_parquet(path: impl AsRef<Path>) -> DataFrame {
    read_parquet_with(path, ReadParquet::default())
}

/// [`read_parquet`] with column projection, a predicate pushed down to row groups, and the
/// chunk size.
pub fn read_parquet_with(path: impl AsRef<Path>, options: ReadParquet) -> DataFrame {
    let df = DataFrame::build(|| {
        let path = path.as_ref().display().to_string();
        let info = inspect(&path)?;
        let row_groups = match &options.filter {
            Some(f) => {
                f.data_type(&info.schema)?;
                info.prune(f)
            }
            None => (0..info.row_groups.len()).collect(),
        };
        Ok(FrameNode::new(
            info.schema.clone(),
            FrameKind::Parquet(ParquetSource {
                path,
                info: Arc::new(info),
                row_groups,
                chunk_bytes: options.chunk_bytes,
            }),
        ))
    });
    let df = match options.filter {
        Some(f) => df.filter(f),
        None => df,
    };
    match options.columns {
        Some(cols) => df.select(&cols.iter().map(String::as_str).collect::<Vec<_>>()),
        None => df,
    }
}

/// A frame over Arrow record batches already in memory, one chunk per batch.
pub fn from_batches(batches: Vec<RecordBatch>) -> DataFrame {
    DataFrame::build(|| {
        let schema = batches.first().map(RecordBatch::schema).ok_or_else(|| {
            FrameError::InvalidArgument("from_batches needs at least one batch".into())
        })?;
        if let Some(other) = batches
            .iter()
            .find(|b| b.schema().fields() != schema.fields())
        {
            return Err(Error::Frame(FrameError::TypeMismatch(format!(
                "batches of different schemas: {} and {}",
                schema,
                other.schema()
            ))));
        }
        Ok(FrameNode::new(schema, FrameKind::Batches(batches)))
    })
}

/// A frame over one Arrow record batch, cut into chunks of `rows_per_chunk` rows (one
/// chunk when `None`).
pub fn from_arrow(batch: RecordBatch, rows_per_chunk: Option<usize>) -> DataFrame {
    let n = batch.num_rows();
    let step = rows_per_chunk.unwrap_or(n).max(1);
    let batches = if n == 0 {
        vec![batch]
    } else {
        (0..n)
            .step_by(step)
            .map(|s| batch.slice(s, step.min(n - s)))
            .collect()
    };
    from_batches(batches)
}

/// A frame whose columns are 1-D tensors' values, one chunk of `rows_per_chunk` rows each.
pub fn from_columns(columns: Vec<(&str, HostTensor)>, rows_per_chunk: Option<usize>) -> DataFrame {
    let built = (|| -> Result<RecordBatch> {
        let mut fields = Vec::with_capacity(columns.len());
        let mut arrays = Vec::with_capacity(columns.len());
        for (name, t) in &columns {
            if t.shape().len() != 1 {
                return Err(Error::Shape(format!(
                    "column {name:?} must be 1-D, its shape is {:?}",
                    t.shape()
                )));
            }
            let array = t.data().to_arrow();
            fields.push(Field::new(*name, array.data_type().clone(), false));
            arrays.push(array);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| Error::Frame(e.into()))
    })();
    match built {
        Ok(batch) => from_arrow(batch, rows_per_chunk),
        Err(e) => DataFrame::failed(e),
    }
}

/// The files a path names: itself, or for a file name with `*` or `?`, the matching files
/// of its folder in name order.
fn expand_glob(path: &Path) -> Result<Vec<String>> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if !name.contains(['*', '?']) {
        return Ok(vec![path.display().to_string()]);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let io = |e: std::io::Error| FrameError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if let Some(n) = entry.file_name().to_str() {
            if glob_match(name.as_bytes(), n.as_bytes()) && entry.path().is_file() {
                out.push(entry.path().display().to_string());
            }
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(Error::Frame(FrameError::Io {
            path: path.display().to_string(),
            message: "no file matches".into(),
        }));
    }
    Ok(out)
}

/// Matches `name` against a pattern of literal bytes, `?` (one byte) and `*` (any run).
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|i| glob_match(rest, &name[i..])),
        Some((&p, rest)) => name
            .split_first()
            .is_some_and(|(&c, tail)| (p == b'?' || p == c) && glob_match(rest, tail)),
    }
}

impl DataFrame {
    /// Computes the frame and writes it to `path` as CSV: one file, or with `per_chunk`
    /// one file per chunk named `path` with `-00000`, `-00001`… before the extension
    /// (written in parallel). Returns the number of rows written.
    pub fn to_csv(
        &self,
        session: &Session,
        path: impl AsRef<Path>,
        per_chunk: bool,
    ) -> Result<usize> {
        self.write(session, path.as_ref(), FileFormat::Csv, per_chunk)
    }

    /// Computes the frame and writes it to `path` as zstd-compressed Parquet, one file (one
    /// row group per chunk) or one file per chunk (as [`DataFrame::to_csv`]). Returns the number of rows written.
    pub fn to_parquet(
        &self,
        session: &Session,
        path: impl AsRef<Path>,
        per_chunk: bool,
    ) -> Result<usize> {
        self.write(session, path.as_ref(), FileFormat::Parquet, per_chunk)
    }
}

/// `path` with `-NNNNN` inserted before its extension.
pub(crate) fn part_path(path: &Path, i: usize) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("part");
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{i:05}.{ext}"),
        None => format!("{stem}-{i:05}"),
    };
    path.with_file_name(name).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_literal_runs_and_single_bytes() {
        assert!(glob_match(b"part-*.csv", b"part-001.csv"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"a?c", b"abc"));
        assert!(!glob_match(b"a?c", b"ac"));
        assert!(!glob_match(b"part-*.csv", b"part-001.parquet"));
    }

    /// The run lengths, checking that the runs list every row group once, in order.
    fn lengths(groups: &[(usize, u64)], target: u64, threads: usize) -> Vec<usize> {
        let runs = runs_of_row_groups(groups, target, threads);
        let order: Vec<usize> = runs.iter().flatten().copied().collect();
        assert_eq!(order, groups.iter().map(|g| g.0).collect::<Vec<_>>());
        assert!(runs.iter().all(|r| !r.is_empty()));
        runs.iter().map(Vec::len).collect()
    }

    #[test]
    fn row_groups_make_about_equal_runs_a_multiple_of_the_threads_where_they_fit() {
        // The peers' xy file: 81 row groups of about 2 MB, 160 MB in all.
        let xy: Vec<(usize, u64)> = (0..81).map(|i| (i, 1_975_528)).collect();
        let mib32 = 32 << 20;
        // Greedy packing gave 16, 16, 16, 16, 16, 1; five runs at least (32 MiB each at
        // most), six for two threads.
        assert_eq!(lengths(&xy, mib32, 2), vec![14, 13, 14, 13, 14, 13]);
        // Five runs would need 17 row groups, over 32 MiB, in some: six then.
        assert_eq!(lengths(&xy, mib32, 1), vec![14, 13, 14, 13, 14, 13]);
        assert_eq!(lengths(&xy, mib32, 3), vec![14, 13, 14, 13, 14, 13]);
        // A GPU session's 1 GiB chunks on 16 threads: 16 runs of about 10 MB.
        let gpu = lengths(&xy, 1 << 30, 16);
        assert_eq!(gpu.len(), 16);
        assert!(gpu.iter().all(|&n| n == 5 || n == 6), "{gpu:?}");
        // Not split below 1 MiB a run: a small file stays one chunk.
        let small: Vec<(usize, u64)> = (0..4).map(|i| (i, 100_000)).collect();
        assert_eq!(lengths(&small, mib32, 2), vec![4]);
        // A target of a byte: one run per row group; a row group over the target alone.
        assert_eq!(lengths(&small, 1, 2), vec![1, 1, 1, 1]);
        // 530 bytes over a target of 100 ask for 6 runs; 4 row groups give 4.
        let skewed = [(0, 10), (1, 500), (2, 10), (3, 10)];
        assert_eq!(lengths(&skewed, 100, 1), vec![1, 1, 1, 1]);
        assert_eq!(lengths(&skewed, 1000, 1), vec![4]);
        // Pruned row groups keep their indices; nothing to read is no run.
        assert_eq!(
            runs_of_row_groups(&[(3, 5), (7, 5)], 1 << 20, 1),
            vec![vec![3, 7]]
        );
        assert!(runs_of_row_groups(&[], 1 << 20, 4).is_empty());
    }

    #[test]
    fn a_table_cut_into_chunks_is_estimated_at_its_own_size() {
        let n = 10_000;
        let batch = RecordBatch::try_from_iter([(
            "a",
            Arc::new(arrow::array::Int64Array::from_iter_values(0..n)) as _,
        )])
        .unwrap();
        let whole = from_arrow(batch.clone(), None)
            .node
            .unwrap()
            .estimated_bytes();
        assert_eq!(whole, 8 * n as u64);
        // 100 chunks slicing one buffer: each counts its own rows (it counted the whole
        // buffer, 100 times over).
        let cut = from_arrow(batch, Some(100)).node.unwrap().estimated_bytes();
        assert_eq!(cut, whole);
    }

    #[test]
    fn part_paths_number_before_the_extension() {
        assert_eq!(part_path(Path::new("/t/out.csv"), 3), "/t/out-00003.csv");
        assert_eq!(part_path(Path::new("out"), 12), "out-00012");
    }
}
