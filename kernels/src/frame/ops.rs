//! The dataframe chunk ops: what one chunk task of a frame job runs.
//!
//! Row-wise work on one chunk is one [`Pipeline`]: a source (the input chunk, or a byte
//! range of a CSV file, or row groups of a Parquet file), the fused [`MapStep`]s, and a sink
//! (keep the table, aggregate it into a groupby partial, cut it into hash partitions, or
//! write it out). Ops over several chunks — merging partials, joins, sorting, concatenation —
//! read whole tables; a shuffle's partitioned chunk is split into one stored table per part
//! by the graph planner, so its readers get the one part they need as a table.

use super::csv::{self, CsvOptions, CsvRange};
use super::error::{FrameError, FrameResult};
use super::expr::Expr;
use super::groupby::{self, GroupBySpec};
use super::join::{self, HashedSide, JoinInput, JoinSpec};
use super::map::{apply_steps_with, MapStep};
use super::parquet::{self, ParquetScan};
use super::partition::hash_partition;
use super::sort::{sort_batches, SortKey};
use super::table::{compact_views, concat};
use crate::{ChunkData, KernelError};
use arrow::array::{ArrayRef, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

/// A byte range of a CSV file (see [`csv::read_range`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CsvScan {
    /// The file.
    pub path: String,
    /// The byte range and the quoting state at its start.
    pub range: CsvRange,
    /// Where the data starts (after the header).
    pub data_start: u64,
    /// The whole file's schema.
    pub schema: Schema,
    /// Columns to parse, by index into `schema` (all when `None`).
    pub projection: Option<Vec<usize>>,
    /// Parsing options.
    pub options: CsvOptions,
}

/// Where a pipeline's rows come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Source {
    /// The task's one input chunk.
    Input,
    /// A byte range of a CSV file.
    Csv(CsvScan),
    /// Row groups of a Parquet file.
    Parquet(ParquetScan),
    /// The join of the task's first `n_left` input chunks (concatenated) with the rest: a
    /// join's output goes through the steps and the sink in the same task, never stored
    /// whole (a filter after it, the partition for the next join, a groupby's partial). A
    /// side that is one hashed chunk ([`FrameOp::HashSide`]) is probed, not hashed again.
    Join {
        /// The join.
        spec: JoinSpec,
        /// How many inputs belong to the left side.
        n_left: usize,
    },
}

/// What a pipeline does with its rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Sink {
    /// Keep them as the chunk.
    Table,
    /// Aggregate them into a groupby partial table.
    GroupPartial(GroupBySpec),
    /// Cut them into `parts` tables by the hash of `keys`.
    Partition {
        /// Key columns.
        keys: Vec<String>,
        /// Number of parts.
        parts: usize,
    },
    /// Aggregate them into a groupby partial table, cut it into `parts` tables by the hash
    /// of the groupby's keys, and count its rows: a chunk of `parts + 1` parts, the
    /// partial's parts and then a one-row table `rows` (see [`row_count_table`]), so that a
    /// planner may read the count without the partial and shuffle it without another task.
    CountedPartial {
        /// The groupby.
        spec: GroupBySpec,
        /// Number of hash parts of the partial.
        parts: usize,
    },
    /// Write them to a file; the chunk is a one-row table `rows`.
    Write {
        /// The file.
        path: String,
        /// Its format.
        format: FileFormat,
    },
}

/// A file format for output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileFormat {
    /// Comma-separated values with a header.
    Csv,
    /// Parquet, zstd-compressed.
    Parquet,
}

/// Source, fused row-wise steps, sink: the work of one chunk task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    /// Where rows come from.
    pub source: Source,
    /// Row-wise steps, in order.
    pub steps: Vec<MapStep>,
    /// What becomes of them.
    pub sink: Sink,
}

/// One chunk-level dataframe operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FrameOp {
    /// Row-wise work on one chunk.
    Pipeline(Pipeline),
    /// Merge groupby partials, finalizing the result when `finalize`.
    GroupMerge {
        /// The groupby.
        spec: GroupBySpec,
        /// Produce the result rather than a partial.
        finalize: bool,
    },
    /// The distinct tuples of the `keys` columns of the inputs (see
    /// [`join::distinct_keys`]), hashed on them (a [`ChunkData::Hashed`] chunk): the right
    /// side of a broadcast semi, anti or mark join, which each left chunk probes.
    DistinctKeys {
        /// Key columns.
        keys: Vec<String>,
    },
    /// Concatenate the inputs and hash them on the `on` columns, for joins to probe (a
    /// [`ChunkData::Hashed`] chunk): the small side of a broadcast join, hashed once.
    HashSide {
        /// Key columns.
        on: Vec<String>,
    },
    /// Concatenate the inputs and sort them, keeping the first `limit` rows when given.
    Sort {
        /// Sort keys.
        by: Vec<SortKey>,
        /// Rows to keep.
        limit: Option<usize>,
    },
    /// Concatenate the inputs, keeping the first `limit` rows when given.
    Concat {
        /// Rows to keep.
        limit: Option<usize>,
    },
}

impl FrameOp {
    /// The join of the first `n_left` inputs (concatenated) with the rest, kept as a table.
    pub fn join(spec: JoinSpec, n_left: usize) -> FrameOp {
        FrameOp::Pipeline(Pipeline {
            source: Source::Join { spec, n_left },
            steps: Vec::new(),
            sink: Sink::Table,
        })
    }

    /// A short name for logs, statistics and fault injection.
    pub fn name(&self) -> &'static str {
        match self {
            FrameOp::Pipeline(p) => match (&p.source, &p.sink) {
                (_, Sink::GroupPartial(_) | Sink::CountedPartial { .. }) => "group_partial",
                (_, Sink::Partition { .. }) => "partition",
                (_, Sink::Write { .. }) => "write",
                (Source::Csv(_), Sink::Table) => "read_csv",
                (Source::Parquet(_), Sink::Table) => "read_parquet",
                (Source::Input, Sink::Table) => "map",
                (Source::Join { .. }, Sink::Table) => "join",
            },
            FrameOp::GroupMerge { .. } => "group_merge",
            FrameOp::DistinctKeys { .. } => "distinct_keys",
            FrameOp::HashSide { .. } => "hash_side",
            FrameOp::Sort { .. } => "sort",
            FrameOp::Concat { .. } => "concat",
        }
    }

    /// The bytes this op holds while it runs beyond its inputs (`input_bytes` together)
    /// and its output: a CSV range's text, and the rows parsed from it unless they are the
    /// output; the hash tables, group states, index lists or concatenated inputs (a join
    /// concatenates only its keys) of a groupby partial, a partition, a merge, a join, a
    /// distinct, a sort or a hashed side (its index), taken at their inputs' size (a join's
    /// rows too, where its sink makes something else of them);
    /// nothing for a concatenation (its output is all it makes) or a Parquet scan (pages
    /// decode into the output).
    pub fn working_estimate(&self, input_bytes: u64) -> u64 {
        match self {
            FrameOp::Pipeline(p) => {
                let text = match &p.source {
                    Source::Csv(scan) => scan.range.end.saturating_sub(scan.range.start),
                    Source::Parquet(_) | Source::Input | Source::Join { .. } => 0,
                };
                let join = match p.source {
                    Source::Join { .. } => input_bytes,
                    _ => 0,
                };
                if matches!(p.sink, Sink::Table) {
                    text.saturating_add(join) // the parsed or joined rows are the output
                } else {
                    text.saturating_mul(2)
                        .saturating_add(input_bytes)
                        .saturating_add(join.saturating_mul(2))
                }
            }
            FrameOp::GroupMerge { .. }
            | FrameOp::DistinctKeys { .. }
            | FrameOp::HashSide { .. }
            | FrameOp::Sort { .. } => input_bytes,
            FrameOp::Concat { .. } => 0,
        }
    }
}

/// The tables of `inputs` (each must be a table; a hashed side gives its table).
fn tables(inputs: &[Arc<ChunkData>]) -> FrameResult<Vec<RecordBatch>> {
    inputs
        .iter()
        .map(|c| match c.as_ref() {
            ChunkData::Table(t) => Ok(t.clone()),
            ChunkData::Hashed(h) => Ok(h.table().clone()),
            other => Err(FrameError::InvalidArgument(format!(
                "a frame op was given a {} where it reads tables",
                other.kind_name()
            ))),
        })
        .collect()
}

/// Concatenates tables that share the first table's schema.
fn concat_all(batches: &[RecordBatch]) -> FrameResult<RecordBatch> {
    let schema = batches
        .first()
        .map(|b| b.schema())
        .ok_or_else(|| FrameError::InvalidArgument("no input tables".into()))?;
    concat(&schema, batches)
}

/// The parts of frame ops a device may compute instead of the CPU kernels.
pub trait FrameDevice {
    /// A groupby partial of `batch` (the CPU's: `groupby::partial`).
    fn group_partial(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, KernelError>;

    /// A join's matching rows (see [`join::MatchFn`]); `None` (the default) leaves them to
    /// the CPU.
    fn match_keys(
        &self,
        _build: &[ArrayRef],
        _probe: &[ArrayRef],
        _keep_unmatched: bool,
    ) -> Result<Option<Box<dyn join::JoinMatches<KernelError> + '_>>, KernelError> {
        Ok(None)
    }

    /// The groupby partial of the rows of `batch` where `predicate` is true, without
    /// materializing them; `None` (the default) leaves the filter and the groupby to
    /// [`Self::filter`] and [`Self::group_partial`].
    fn filtered_group_partial(
        &self,
        _spec: &GroupBySpec,
        _predicate: &Expr,
        _batch: &RecordBatch,
    ) -> Result<Option<RecordBatch>, KernelError> {
        Ok(None)
    }

    /// Rows per morsel where this device runs a pipeline a piece at a time: a Parquet
    /// scan's rows as they are decoded, or a join's output in slices, go through the steps
    /// into the sink one morsel at a time, whose columns stay in the CPU's caches between
    /// the decoder, the steps and the sink. `None` (the default) takes the chunk whole (a
    /// GPU wants its rows in as few launches as it can).
    fn morsel_rows(&self) -> Option<usize> {
        None
    }

    /// The rows of `keep` where `predicate`, evaluated over `over` (a table of the same
    /// rows), is true (see [`super::map::DeviceFilter`]); `None` (the default) leaves the
    /// filter to the CPU.
    fn filter(
        &self,
        _predicate: &Expr,
        _over: &RecordBatch,
        _keep: &RecordBatch,
    ) -> Result<Option<RecordBatch>, KernelError> {
        Ok(None)
    }
}

/// The CPU kernels, as a [`FrameDevice`].
pub struct CpuFrames;

/// Rows per morsel of a CPU scan (see [`FrameDevice::morsel_rows`]): a decimal column's
/// morsel is 256 KiB, so the columns a pipeline reads and computes stay in the L2 cache.
/// Measured on TPC-H SF10 (2-core VM): Q1 3.2 s whole, 2.3 s at 65536 rows, 1.9 s at
/// 16384, 1.8 s at 4096 (where Q6 was slower again).
pub const CPU_MORSEL_ROWS: usize = 1 << 14;

impl FrameDevice for CpuFrames {
    fn group_partial(
        &self,
        spec: &GroupBySpec,
        batch: &RecordBatch,
    ) -> Result<RecordBatch, KernelError> {
        Ok(groupby::partial(spec, batch)?)
    }

    fn morsel_rows(&self) -> Option<usize> {
        Some(CPU_MORSEL_ROWS)
    }
}

fn run_pipeline(
    p: &Pipeline,
    inputs: &[Arc<ChunkData>],
    device: &dyn FrameDevice,
) -> Result<ChunkData, KernelError> {
    if let (Source::Parquet(scan), Some(rows)) = (&p.source, device.morsel_rows()) {
        if let Some(out) = run_morsels(p, scan, rows, device)? {
            return Ok(out);
        }
    }
    let filter = |e: &Expr, over: &RecordBatch, keep: &RecordBatch| device.filter(e, over, keep);
    if let (Source::Parquet(scan), None) = (&p.source, group_spec(&p.sink)) {
        // Columns only filters read come as dictionaries, made strings after the filters.
        let (batch, decoded) = parquet::read_with(scan, &filter_only(scan, &p.steps))?;
        let batch = restore(apply_steps_with(&batch, &p.steps, &filter)?, &decoded)?;
        return sink(batch, &p.sink, device);
    }
    let batch = match &p.source {
        Source::Input => concat_all(&tables(inputs)?)?,
        Source::Csv(s) => csv::read_range(
            &s.path,
            s.range,
            s.data_start,
            &s.schema,
            s.projection.as_deref(),
            &s.options,
        )?,
        Source::Parquet(scan) => parquet::read(scan)?,
        Source::Join { spec, n_left } => {
            let (left, right) = inputs.split_at((*n_left).min(inputs.len()));
            let (left_tables, right_tables) = (tables(left)?, tables(right)?);
            let matcher =
                |b: &[ArrayRef], p: &[ArrayRef], keep: bool| device.match_keys(b, p, keep);
            join::hash_join_inputs(
                spec,
                join_input(left, &left_tables),
                join_input(right, &right_tables),
                &matcher,
            )?
        }
    };
    // A groupby of computed rows (a join's output through steps) takes them a morsel at a
    // time too, so the steps' results stay in cache.
    if let (Some(spec), Some(rows)) = (group_spec(&p.sink), device.morsel_rows()) {
        let n = batch.num_rows();
        if n > rows && !p.steps.is_empty() {
            let morsels = (0..n)
                .step_by(rows)
                .map(|s| apply_steps_with(&batch.slice(s, rows.min(n - s)), &p.steps, &filter));
            if let Some(partial) = group_morsels(spec, morsels)? {
                return grouped(partial, &p.sink);
            }
        }
    }
    let batch = match (p.steps.split_last(), group_spec(&p.sink)) {
        // A last filter feeding a groupby: offered to the device as one step.
        (Some((MapStep::Filter(predicate), before)), Some(spec)) => {
            let head = apply_steps_with(&batch, before, &filter)?;
            if let Some(partial) = device.filtered_group_partial(spec, predicate, &head)? {
                return grouped(partial, &p.sink);
            }
            apply_steps_with(&head, &p.steps[before.len()..], &filter)?
        }
        _ => apply_steps_with(&batch, &p.steps, &filter)?,
    };
    sink(batch, &p.sink, device)
}

/// `batch` (its steps applied) into `sink`.
fn sink(
    batch: RecordBatch,
    sink: &Sink,
    device: &dyn FrameDevice,
) -> Result<ChunkData, KernelError> {
    Ok(match sink {
        Sink::Table => ChunkData::Table(batch),
        Sink::GroupPartial(spec) | Sink::CountedPartial { spec, .. } => {
            return grouped(device.group_partial(spec, &batch)?, sink)
        }
        Sink::Partition { keys, parts } => ChunkData::Tables(hash_partition(&batch, keys, *parts)?),
        Sink::Write { path, format } => {
            match format {
                FileFormat::Csv => csv::write_csv(path, std::slice::from_ref(&batch))?,
                FileFormat::Parquet => {
                    parquet::write(path, batch.schema_ref(), std::slice::from_ref(&batch))?
                }
            }
            ChunkData::Table(row_count_table(batch.num_rows())?)
        }
    })
}

/// [`run_pipeline`] of a Parquet scan `morsel_rows` rows at a time: each morsel goes
/// through the steps into the sink as soon as it is decoded (a groupby's partial built
/// across them, a filtered table's morsels concatenated at the end). `None` where the
/// chunk is one morsel, for a table without a filter, and for a write and a partition:
/// cutting each morsel into a join's parts and gluing the parts again measured slower than
/// partitioning the chunk whole (TPC-H Q12 at SF10).
fn run_morsels(
    p: &Pipeline,
    scan: &ParquetScan,
    morsel_rows: usize,
    device: &dyn FrameDevice,
) -> Result<Option<ChunkData>, KernelError> {
    let whole = match p.sink {
        Sink::GroupPartial(_) | Sink::CountedPartial { .. } => false,
        // Pieces of a table are glued at the end: a copy that only a filter's smaller
        // output repays (TPC-H Q8 and Q9 scan lineitem unfiltered: 25% slower in morsels).
        Sink::Table => !p.steps.iter().any(|s| matches!(s, MapStep::Filter(_))),
        Sink::Partition { .. } | Sink::Write { .. } => true,
    };
    if whole || parquet::scan_rows(scan)? <= morsel_rows {
        return Ok(None);
    }
    let filter = |e: &Expr, over: &RecordBatch, keep: &RecordBatch| device.filter(e, over, keep);
    // A groupby's keys that the steps pass on as they are read go into its partial as
    // dictionaries too (the key encoder takes a dictionary's values once); the partial's
    // few keys are made strings.
    let keys = group_spec(&p.sink).map_or_else(Vec::new, |spec| {
        let aggregated: HashSet<&String> = spec.aggs.iter().map(|a| &a.column).collect();
        spec.keys
            .iter()
            .filter(|k| !aggregated.contains(k))
            .cloned()
            .collect::<Vec<_>>()
    });
    let (morsels, decoded) = parquet::read_batches_with(
        scan,
        morsel_rows,
        &dictionary_columns(scan, &p.steps, &keys),
    )?;
    let (as_keys, rest): (parquet::Decoded, parquet::Decoded) = decoded
        .iter()
        .cloned()
        .partition(|(name, _)| keys.contains(name));
    let morsels = morsels.map(|m| Ok(restore(apply_steps_with(&m?, &p.steps, &filter)?, &rest)?));
    match group_spec(&p.sink) {
        Some(spec) => match group_morsels(spec, morsels)? {
            Some(partial) => grouped(restore(partial, &as_keys)?, &p.sink).map(Some),
            None => Ok(None),
        },
        None => Ok(Some(ChunkData::Table(concat_all(
            &morsels.collect::<Result<Vec<_>, _>>()?,
        )?))),
    }
}

/// The columns of `scan` that only the filters among `steps` read (and selects pass on):
/// decoded as dictionaries where the file allows ([`parquet::read_batches_with`]), so that
/// the filters' predicates run once per distinct value, then [`restore`]d.
fn filter_only(scan: &ParquetScan, steps: &[MapStep]) -> Vec<String> {
    dictionary_columns(scan, steps, &[])
}

/// [`filter_only`], and the columns `passed` that no step but a filter reads (a groupby's
/// keys).
fn dictionary_columns(scan: &ParquetScan, steps: &[MapStep], passed: &[String]) -> Vec<String> {
    let Some(columns) = &scan.columns else {
        return Vec::new();
    };
    let (mut filtered, mut other) = (HashSet::new(), HashSet::new());
    for step in steps {
        match step {
            MapStep::Filter(e) => filtered.extend(e.columns()),
            MapStep::WithColumn { expr, .. } => other.extend(expr.columns()),
            // A select passes a bare column through under its own name.
            MapStep::Select(exprs) => exprs
                .iter()
                .filter(|e| !matches!(e, Expr::Column(_)))
                .for_each(|e| other.extend(e.columns())),
            MapStep::Rename(pairs) => other.extend(pairs.iter().map(|(old, _)| old.clone())),
            MapStep::Drop(_) => {}
        }
    }
    columns
        .iter()
        .filter(|c| (filtered.contains(*c) || passed.contains(*c)) && !other.contains(*c))
        .cloned()
        .collect()
}

/// `batch` with the columns `decoded` read as dictionaries (those the steps kept) cast back
/// to their types in the file: the pipeline's output has the types the planner expects.
fn restore(batch: RecordBatch, decoded: &[(String, DataType)]) -> FrameResult<RecordBatch> {
    if decoded.is_empty() {
        return Ok(batch); // the usual case, once per morsel
    }
    let schema = batch.schema();
    let cast_to = |name: &str| decoded.iter().find(|(n, _)| n == name).map(|(_, t)| t);
    let dictionaries = schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Dictionary(..)) && cast_to(f.name()).is_some());
    if !dictionaries {
        return Ok(batch);
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        match (f.data_type(), cast_to(f.name())) {
            (DataType::Dictionary(..), Some(to)) => {
                columns.push(arrow::compute::cast(c, to)?);
                fields.push(Arc::new(f.as_ref().clone().with_data_type(to.clone())));
            }
            _ => {
                columns.push(c.clone());
                fields.push(f.clone());
            }
        }
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// The groupby partial of `morsels` (`None` if there are none).
fn group_morsels(
    spec: &GroupBySpec,
    mut morsels: impl Iterator<Item = Result<RecordBatch, KernelError>>,
) -> Result<Option<RecordBatch>, KernelError> {
    let Some(first) = morsels.next().transpose()? else {
        return Ok(None);
    };
    let mut builder = groupby::PartialBuilder::new(spec, first.schema_ref())?;
    builder.push(&first)?;
    for m in morsels {
        builder.push(&m?)?;
    }
    Ok(Some(builder.finish()?))
}

/// A join side of `chunks`: one hashed side as it is, else the chunks' `tables`.
fn join_input<'a>(chunks: &'a [Arc<ChunkData>], tables: &'a [RecordBatch]) -> JoinInput<'a> {
    match chunks {
        [one] => match one.as_ref() {
            ChunkData::Hashed(h) => JoinInput::Hashed(h),
            _ => JoinInput::Tables(tables),
        },
        _ => JoinInput::Tables(tables),
    }
}

/// The groupby of a group partial sink.
fn group_spec(sink: &Sink) -> Option<&GroupBySpec> {
    match sink {
        Sink::GroupPartial(spec) | Sink::CountedPartial { spec, .. } => Some(spec),
        _ => None,
    }
}

/// A group partial sink's chunk from its partial: the table, or (counted) its hash parts
/// and then its row count.
fn grouped(partial: RecordBatch, sink: &Sink) -> Result<ChunkData, KernelError> {
    match sink {
        Sink::CountedPartial { spec, parts } => {
            let rows = row_count_table(partial.num_rows())?;
            let mut tables = hash_partition(&partial, &spec.keys, *parts)?;
            tables.push(rows);
            Ok(ChunkData::Tables(tables))
        }
        _ => Ok(ChunkData::Table(partial)),
    }
}

/// A one-row table holding `rows` in column `rows`.
pub fn row_count_table(rows: usize) -> FrameResult<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "rows",
        DataType::Int64,
        false,
    )]));
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from(vec![rows as i64]))],
    )?)
}

/// Runs one frame op on the calling thread.
pub fn run(op: &FrameOp, inputs: &[Arc<ChunkData>]) -> Result<ChunkData, KernelError> {
    run_with(op, inputs, &CpuFrames)
}

/// [`run`], with groupby partials and join matching computed by `device`. String and
/// binary view columns of the output that point into much larger buffers get their own
/// ([`compact_views`]).
pub fn run_with(
    op: &FrameOp,
    inputs: &[Arc<ChunkData>],
    device: &dyn FrameDevice,
) -> Result<ChunkData, KernelError> {
    Ok(match run_op(op, inputs, device)? {
        ChunkData::Table(t) => ChunkData::Table(compact_views(t)?),
        ChunkData::Tables(ts) => ChunkData::Tables(
            ts.into_iter()
                .map(compact_views)
                .collect::<FrameResult<Vec<_>>>()?,
        ),
        other => other,
    })
}

fn run_op(
    op: &FrameOp,
    inputs: &[Arc<ChunkData>],
    device: &dyn FrameDevice,
) -> Result<ChunkData, KernelError> {
    let out = match op {
        FrameOp::Pipeline(p) => return run_pipeline(p, inputs, device),
        FrameOp::GroupMerge { spec, finalize } => tables(inputs).and_then(|t| {
            let merged = groupby::merge(spec, &t)?;
            Ok(ChunkData::Table(if *finalize {
                groupby::finalize(spec, &merged)?
            } else {
                merged
            }))
        }),
        FrameOp::DistinctKeys { keys } => tables(inputs)
            .and_then(|t| join::distinct_keys(keys, &t))
            .and_then(|distinct| HashedSide::new(&[distinct], keys.clone()))
            .map(ChunkData::Hashed),
        FrameOp::HashSide { on } => tables(inputs)
            .and_then(|t| HashedSide::new(&t, on.clone()))
            .map(ChunkData::Hashed),
        FrameOp::Sort { by, limit } => tables(inputs).and_then(|t| {
            let schema = t
                .first()
                .map(|b| b.schema())
                .ok_or_else(|| FrameError::InvalidArgument("no input tables".into()))?;
            Ok(ChunkData::Table(sort_batches(&schema, &t, by, *limit)?))
        }),
        FrameOp::Concat { limit } => tables(inputs).and_then(|t| {
            let all = concat_all(&t)?;
            Ok(ChunkData::Table(match limit {
                Some(n) => all.slice(0, (*n).min(all.num_rows())),
                None => all,
            }))
        }),
    };
    out.map_err(KernelError::Frame)
}

#[cfg(test)]
mod tests;
