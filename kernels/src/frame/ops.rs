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
    let filter = |e: &Expr, over: &RecordBatch, keep: &RecordBatch| device.filter(e, over, keep);
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
    Ok(match &p.sink {
        Sink::Table => ChunkData::Table(batch),
        Sink::GroupPartial(spec) | Sink::CountedPartial { spec, .. } => {
            return grouped(device.group_partial(spec, &batch)?, &p.sink)
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
    let morsels =
        parquet::read_batches(scan, morsel_rows)?.map(|m| apply_steps_with(&m?, &p.steps, &filter));
    match group_spec(&p.sink) {
        Some(spec) => match group_morsels(spec, morsels)? {
            Some(partial) => grouped(partial, &p.sink).map(Some),
            None => Ok(None),
        },
        None => Ok(Some(ChunkData::Table(concat_all(
            &morsels.collect::<Result<Vec<_>, _>>()?,
        )?))),
    }
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
mod tests {
    use super::*;
    use crate::frame::groupby::{AggFunc, AggSpec};
    use crate::frame::join::JoinHow;
    use crate::ChunkOp;
    use arrow::array::Array;
    use std::collections::BTreeMap;

    /// Column `i` of `b`, of Int64.
    fn ints(b: &RecordBatch, i: usize) -> Vec<i64> {
        let c = b
            .column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("Int64");
        (0..c.len()).map(|i| c.value(i)).collect()
    }

    /// `rows` rows of key `(7·i) mod keys` and value `i`.
    fn chunk(start: i64, rows: i64, keys: i64) -> Arc<ChunkData> {
        let k: Vec<i64> = (start..start + rows).map(|i| (7 * i) % keys).collect();
        let a: Vec<i64> = (start..start + rows).collect();
        let batch = RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
            ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
        ])
        .expect("batch");
        Arc::new(ChunkData::Table(batch))
    }

    #[test]
    fn working_memory_is_a_csv_range_s_text_and_a_keyed_op_s_inputs() {
        let spec = GroupBySpec {
            keys: vec!["k".into()],
            aggs: vec![],
        };
        let csv = |sink: Sink| {
            FrameOp::Pipeline(Pipeline {
                source: Source::Csv(CsvScan {
                    path: "f.csv".into(),
                    range: CsvRange {
                        start: 100,
                        end: 1_100,
                        state: Default::default(),
                    },
                    data_start: 10,
                    schema: Schema::empty(),
                    projection: None,
                    options: CsvOptions::default(),
                }),
                steps: vec![],
                sink,
            })
        };
        let input = |sink: Sink| {
            FrameOp::Pipeline(Pipeline {
                source: Source::Input,
                steps: vec![],
                sink,
            })
        };
        // Parsed rows that are the output: only the text besides them.
        assert_eq!(csv(Sink::Table).working_estimate(0), 1_000);
        // Rows parsed to be aggregated: the text and the rows.
        assert_eq!(
            csv(Sink::GroupPartial(spec.clone())).working_estimate(0),
            2_000
        );
        assert_eq!(input(Sink::Table).working_estimate(500), 0);
        assert_eq!(
            input(Sink::GroupPartial(spec.clone())).working_estimate(500),
            500
        );
        let merge = FrameOp::GroupMerge {
            spec,
            finalize: true,
        };
        assert_eq!(merge.working_estimate(700), 700);
        assert_eq!(FrameOp::Concat { limit: None }.working_estimate(700), 0);
        // Through the chunk op, from the inputs' sizes.
        let op = ChunkOp::Frame(merge);
        assert_eq!(op.working_estimate([300, 400]), 700);
        assert_eq!(op.output_estimate([300, 400]), Some(700));
    }

    /// `sum(a) by k`.
    fn sum_of_a_by_k() -> GroupBySpec {
        GroupBySpec {
            keys: vec!["k".into()],
            aggs: vec![AggSpec {
                column: "a".into(),
                func: AggFunc::Sum,
                output: "a_sum".into(),
            }],
        }
    }

    /// A device that takes a filter feeding a groupby (computing it on the CPU) and counts
    /// the times it did.
    struct Fusing(std::cell::Cell<usize>);

    impl FrameDevice for Fusing {
        fn group_partial(
            &self,
            spec: &GroupBySpec,
            batch: &RecordBatch,
        ) -> Result<RecordBatch, KernelError> {
            CpuFrames.group_partial(spec, batch)
        }

        fn filtered_group_partial(
            &self,
            spec: &GroupBySpec,
            predicate: &Expr,
            batch: &RecordBatch,
        ) -> Result<Option<RecordBatch>, KernelError> {
            self.0.set(self.0.get() + 1);
            let kept =
                super::super::map::apply_steps(batch, &[MapStep::Filter(predicate.clone())])?;
            Ok(Some(groupby::partial(spec, &kept)?))
        }
    }

    #[test]
    fn a_last_filter_feeding_a_groupby_is_offered_to_the_device_as_one_step() {
        use super::super::expr::{col, lit};
        let spec = sum_of_a_by_k();
        let with_b = MapStep::WithColumn {
            name: "b".into(),
            expr: col("a") * lit(3),
        };
        let on_b = MapStep::Filter((col("b") % lit(5)).ne(0));
        let on_a = MapStep::Filter(col("a").gt(700));
        let input = [chunk(0, 2_000, 37)];
        // The steps, and whether the device is offered the last filter with the groupby.
        for (steps, fused) in [
            (vec![with_b.clone(), on_b.clone()], 1),
            (vec![on_a.clone()], 1),
            (vec![with_b.clone(), on_b.clone(), with_b.clone()], 0),
            (vec![on_a.clone(), with_b.clone()], 0),
        ] {
            for sink in [
                Sink::GroupPartial(spec.clone()),
                Sink::CountedPartial {
                    spec: spec.clone(),
                    parts: 4,
                },
            ] {
                let op = FrameOp::Pipeline(Pipeline {
                    source: Source::Input,
                    steps: steps.clone(),
                    sink,
                });
                let device = Fusing(std::cell::Cell::new(0));
                let got = run_with(&op, &input, &device).unwrap();
                assert_eq!(got, run(&op, &input).unwrap(), "{steps:?}");
                assert_eq!(device.0.get(), fused, "{steps:?}");
            }
        }
    }

    /// A device that takes every chunk whole (no morsels), as a GPU does.
    struct Whole;

    impl FrameDevice for Whole {
        fn group_partial(
            &self,
            spec: &GroupBySpec,
            batch: &RecordBatch,
        ) -> Result<RecordBatch, KernelError> {
            CpuFrames.group_partial(spec, batch)
        }
    }

    /// A Parquet scan of more rows than a CPU morsel gives, morsel by morsel, the chunk that
    /// the scan taken whole gives: groupby partials (string keys in runs with nulls, every
    /// aggregation; float values small integers, so any order of addition is exact), counted
    /// partials, and filtered tables.
    #[test]
    fn a_scan_in_morsels_equals_the_scan_taken_whole() {
        use super::super::expr::{col, lit};
        use arrow::array::{Decimal128Array, Float64Array, StringArray};
        let dir = std::env::temp_dir().join(format!("tessera-morsels-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet").display().to_string();
        let batch = |from: i64, rows: i64| {
            let range = from..from + rows;
            let s: StringArray = range
                .clone()
                .map(|i| (i % 101 != 0).then(|| format!("s{}", i / 1000 % 7)))
                .collect();
            let k = Int64Array::from(range.clone().map(|i| i * 7 % 13).collect::<Vec<_>>());
            let a = Int64Array::from(range.clone().collect::<Vec<_>>());
            let d = Decimal128Array::from(
                range
                    .clone()
                    .map(|i| i as i128 * 37 % 100_000)
                    .collect::<Vec<_>>(),
            )
            .with_precision_and_scale(15, 2)
            .unwrap();
            let f = Float64Array::from(range.map(|i| (i % 17) as f64).collect::<Vec<_>>());
            RecordBatch::try_from_iter([
                ("s", Arc::new(s) as ArrayRef),
                ("k", Arc::new(k) as ArrayRef),
                ("a", Arc::new(a) as ArrayRef),
                ("d", Arc::new(d) as ArrayRef),
                ("f", Arc::new(f) as ArrayRef),
            ])
            .unwrap()
        };
        let batches = [batch(0, 20_000), batch(20_000, 25_000), batch(45_000, 3)];
        parquet::write(&path, &batches[0].schema(), &batches).unwrap();
        assert!(CpuFrames.morsel_rows().is_some_and(|m| m < 45_003));
        let scan = ParquetScan {
            path,
            row_groups: vec![0, 1, 2],
            columns: Some(["f", "d", "a", "k", "s"].map(String::from).to_vec()),
        };
        let agg = |column: &str, func: AggFunc| AggSpec {
            column: column.into(),
            func,
            output: format!("{column}_{}", func.name()),
        };
        let spec = GroupBySpec {
            keys: vec!["s".into(), "k".into()],
            aggs: vec![
                agg("b", AggFunc::Sum),
                agg("f", AggFunc::Mean),
                agg("d", AggFunc::Min),
                agg("a", AggFunc::First),
                agg("a", AggFunc::Last),
                agg("k", AggFunc::Size),
                agg("f", AggFunc::NUnique),
            ],
        };
        let steps = vec![
            MapStep::Filter((col("a") % lit(3)).ne(0)),
            MapStep::WithColumn {
                name: "b".into(),
                expr: col("d") * (lit(1) - col("d")),
            },
        ];
        for sink in [
            Sink::GroupPartial(spec.clone()),
            Sink::CountedPartial {
                spec: spec.clone(),
                parts: 3,
            },
            Sink::Table,
        ] {
            let op = FrameOp::Pipeline(Pipeline {
                source: Source::Parquet(scan.clone()),
                steps: steps.clone(),
                sink: sink.clone(),
            });
            let morsels = run(&op, &[]).unwrap();
            assert_eq!(morsels, run_with(&op, &[], &Whole).unwrap(), "{sink:?}");
            if let (Sink::Table, ChunkData::Table(t)) = (&sink, &morsels) {
                assert_eq!(t.num_rows(), 30_002, "{sink:?}");
            }
        }
        // A variance's state (count, mean, squared deviations) is combined per morsel: equal
        // to the whole scan's within rounding.
        let var = GroupBySpec {
            keys: vec!["s".into()],
            aggs: vec![agg("f", AggFunc::Var)],
        };
        let op = FrameOp::Pipeline(Pipeline {
            source: Source::Parquet(scan),
            steps,
            sink: Sink::GroupPartial(var),
        });
        let floats = |c: &ChunkData| match c {
            ChunkData::Table(t) => (2..=3)
                .flat_map(|i| {
                    let c = t
                        .column(i)
                        .as_any()
                        .downcast_ref::<arrow::array::Float64Array>();
                    c.expect("Float64").values().to_vec()
                })
                .collect::<Vec<f64>>(),
            other => panic!("{}", other.kind_name()),
        };
        let (m, w) = (run(&op, &[]).unwrap(), run_with(&op, &[], &Whole).unwrap());
        for (a, b) in floats(&m).iter().zip(floats(&w)) {
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} against {b}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A groupby of an input chunk through steps, in morsels, equals it taken whole.
    #[test]
    fn an_input_grouped_in_morsels_equals_it_taken_whole() {
        use super::super::expr::{col, lit};
        let rows = 3 * CPU_MORSEL_ROWS as i64 + 5;
        let input = [chunk(0, rows, 1009)];
        let steps = vec![
            MapStep::Filter((col("a") % lit(4)).ne(1)),
            MapStep::WithColumn {
                name: "a".into(),
                expr: col("a") * lit(3),
            },
        ];
        for sink in [
            Sink::GroupPartial(sum_of_a_by_k()),
            Sink::CountedPartial {
                spec: sum_of_a_by_k(),
                parts: 4,
            },
        ] {
            let op = FrameOp::Pipeline(Pipeline {
                source: Source::Input,
                steps: steps.clone(),
                sink,
            });
            let got = run(&op, &input).unwrap();
            assert_eq!(got, run_with(&op, &input, &Whole).unwrap());
            if let ChunkData::Table(t) = got {
                // Every key, and the sums by hand.
                assert_eq!(t.num_rows(), 1009);
                let by_hand: i64 = (0..rows).filter(|a| a % 4 != 1).map(|a| 3 * a).sum();
                assert_eq!(ints(&t, 1).iter().sum::<i64>(), by_hand);
            }
        }
    }

    #[test]
    fn a_counted_partial_is_cut_into_hash_parts_that_agree_across_chunks() {
        let spec = sum_of_a_by_k();
        let parts = 5;
        let op = FrameOp::Pipeline(Pipeline {
            source: Source::Input,
            steps: vec![],
            sink: Sink::CountedPartial {
                spec: spec.clone(),
                parts,
            },
        });
        // Sums by hand over both chunks, and the part each key went to.
        let mut want: BTreeMap<i64, i64> = BTreeMap::new();
        let mut part_of: BTreeMap<i64, usize> = BTreeMap::new();
        for (start, rows) in [(0, 3_000), (3_000, 1_234)] {
            let input = chunk(start, rows, 997);
            let ChunkData::Tables(out) = run(&op, &[input]).expect("runs") else {
                panic!("not parts")
            };
            assert_eq!(out.len(), parts + 1);
            let distinct: std::collections::BTreeSet<i64> =
                (start..start + rows).map(|i| (7 * i) % 997).collect();
            assert_eq!(ints(&out[parts], 0), [distinct.len() as i64]);
            let mut seen = 0;
            for (p, part) in out[..parts].iter().enumerate() {
                for (k, s) in ints(part, 0).into_iter().zip(ints(part, 1)) {
                    *want.entry(k).or_default() += s;
                    // A key lands in the same part from every chunk.
                    assert_eq!(*part_of.entry(k).or_insert(p), p, "key {k}");
                    seen += 1;
                }
            }
            assert_eq!(seen, distinct.len());
        }
        let mut by_hand: BTreeMap<i64, i64> = BTreeMap::new();
        for i in 0..4_234 {
            *by_hand.entry((7 * i) % 997).or_default() += i;
        }
        assert_eq!(want, by_hand);
        // The keys spread over every part.
        let used: std::collections::BTreeSet<usize> = part_of.values().copied().collect();
        assert_eq!(used.len(), parts);
    }

    #[test]
    fn a_join_probes_a_hashed_side_chunk_as_it_joins_its_tables() {
        // Right: keys (7·i) mod 40 over 0..100, each key 2 or 3 times, from two chunks.
        let right = [chunk(0, 60, 40), chunk(60, 40, 40)];
        let hash = FrameOp::HashSide {
            on: vec!["k".into()],
        };
        let hashed = Arc::new(run(&hash, &right).expect("hashes"));
        assert!(matches!(hashed.as_ref(), ChunkData::Hashed(_)));
        assert_eq!(hash.name(), "hash_side");
        let left = chunk(0, 30, 50);
        for how in [JoinHow::Inner, JoinHow::Left] {
            let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
            let op = FrameOp::join(spec.clone(), 1);
            let plain = run(&op, &[left.clone(), right[0].clone(), right[1].clone()]).unwrap();
            let probed = run(&op, &[left.clone(), hashed.clone()]).unwrap();
            assert_eq!(probed, plain, "{how:?}");
            // By hand: a left key below 40 has as many rows as 0..100 has i with 7·i ≡ k.
            let ChunkData::Table(t) = &probed else {
                panic!("not a table")
            };
            let matches = |k: i64| (0..100).filter(|i| (7 * i) % 40 == k).count();
            let want: usize = (0..30)
                .map(|i| (7 * i) % 50)
                .map(|k| match (matches(k), how) {
                    (0, JoinHow::Left) => 1,
                    (m, _) => m,
                })
                .sum();
            assert_eq!(t.num_rows(), want, "{how:?}");
        }
        // A semi, anti or mark join probes the right's distinct keys, hashed once. Every
        // key 0..40 is on the right (7 and 40 are coprime).
        let distinct = FrameOp::DistinctKeys {
            keys: vec!["k".into()],
        };
        let distinct = Arc::new(run(&distinct, &right).expect("hashes"));
        assert!(matches!(distinct.as_ref(), ChunkData::Hashed(_)));
        let found = (0..30).filter(|i| (7 * i) % 50 < 40).count();
        for (how, want) in [
            (JoinHow::LeftSemi, found),
            (JoinHow::LeftAnti, 30 - found),
            (JoinHow::LeftMark, 30),
        ] {
            let mut spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], how);
            if how == JoinHow::LeftMark {
                spec.indicator = Some("found".into());
            }
            let op = FrameOp::join(spec, 1);
            let plain = run(&op, &[left.clone(), right[0].clone(), right[1].clone()]).unwrap();
            let probed = run(&op, &[left.clone(), distinct.clone()]).unwrap();
            assert_eq!(probed, plain, "{how:?}");
            let ChunkData::Table(t) = &probed else {
                panic!("not a table")
            };
            assert_eq!(t.num_rows(), want, "{how:?}");
        }
        // The hashed side on the left of an inner join.
        let spec = JoinSpec::new(vec!["k".into()], vec!["k".into()], JoinHow::Inner);
        let op = FrameOp::join(spec, 1);
        let probed = run(&op, &[hashed.clone(), left.clone()]).unwrap();
        let ChunkData::Table(whole) = run(&FrameOp::Concat { limit: None }, &right).unwrap() else {
            panic!("not a table")
        };
        let plain = run(&op, &[Arc::new(ChunkData::Table(whole)), left]).unwrap();
        assert_eq!(probed, plain);
    }

    #[test]
    fn frame_ops_survive_serialization() {
        let op = FrameOp::DistinctKeys {
            keys: vec!["k".to_string()],
        };
        let op_back: FrameOp = serde_json::from_str(&serde_json::to_string(&op).unwrap()).unwrap();
        assert_eq!(op_back, op);
    }
}
