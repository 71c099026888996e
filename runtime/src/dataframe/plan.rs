//! The frame planner: turns a lazy frame into chunk tasks, stage by stage.
//!
//! Row-wise steps fuse into the task that produces their chunk (a CSV range, Parquet row
//! groups or an earlier result), with column projection pushed into the reader. A groupby
//! runs its per-chunk partial aggregation as one stage, then looks at the partials it got
//! (their row counts) to choose the rest: a tree of merges when the groups are few, a hash
//! shuffle of the partials into parallel merges when they are many (under a memory budget,
//! a merge too big for its share of it merges in runs of partials first). A join hashes a
//! small side once, in one task, and broadcasts it to every chunk of the other side (a
//! semi, anti or mark join only the right's distinct keys, found by one task), and
//! otherwise hash-partitions both sides; where that choice rests on a guessed size, the
//! side is computed first and the choice made on its measured size ([`join`]). A
//! shuffle's partition task is split into one stored chunk per part, so the merge or join
//! of part `p` reads part `p` of each partition and nothing else.

use super::estimate::Estimates;
use super::io::runs_of_row_groups;
use super::limit::limit_sorts;
use super::node::{FrameKind, FrameNode};
use super::prune::{groupby_reads, project, prune_columns};
use super::pushdown::push_filters;
use super::reduce::reduce_groupbys;
use super::shared::reduce_shared;
use crate::error::{Error, Result};
use crate::kept::StoredInputs;
use crate::session::SessionInner;
use arrow::array::RecordBatch;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use tessera_actors::{ChunkGraph, ChunkKey, ChunkTask, JobOutput, JobStats, KeptChunk};
use tessera_kernels::frame::csv::quote_ranges;
use tessera_kernels::frame::groupby::GroupBySpec;
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::ops::{CsvScan, FileFormat, FrameOp, Pipeline, Sink, Source};
use tessera_kernels::frame::parquet::ParquetScan;
use tessera_kernels::{ChunkData, ChunkOp};

/// Partials merged per task in a merge tree.
const FAN_IN: usize = 8;
/// Partials holding at most this many rows in all, and no more than
/// [`ONE_MERGE_PARTIALS`] of them, merge in one task: a tree's extra level would cost a
/// dispatch (on a cluster, a round trip and a fetch) and save nothing.
const ONE_MERGE_ROWS: usize = 1 << 16;
/// See [`ONE_MERGE_ROWS`].
const ONE_MERGE_PARTIALS: usize = 64;
/// Estimated input bytes per groupby shuffle partition aimed at (partials are at most
/// their input's rows, so a part holds at most about this much input's groups).
const BYTES_PER_PART: u64 = 32 << 20;
/// The fewest estimated input bytes per groupby shuffle partition (see
/// [`FramePlanner::bytes_per_part`]).
const MIN_BYTES_PER_PART: u64 = 1 << 20;
mod join;
mod order;

/// Most partitions of a shuffle.
const MAX_PARTS: usize = 256;
/// A merge task holds about this many times its inputs' bytes while it runs: the inputs,
/// its output bound and its working memory (see `FrameOp::working_estimate`).
const MERGE_FOOTPRINT: u64 = 3;

/// A chunk not yet given a task: rows from a source, with steps still to apply.
#[derive(Clone, Debug)]
enum Pending {
    /// A chunk that has a task.
    Emitted(ChunkKey),
    /// Rows to read from `source` (for `Source::Input`, from the chunk in `inputs`; for
    /// `Source::Join`, joined from them) and the steps to apply to them.
    Open {
        source: Box<Source>,
        inputs: Vec<ChunkKey>,
        steps: Vec<MapStep>,
    },
}

/// The optimizer's passes over the lazy graph, in order: filters pushed down
/// ([`push_filters`]), groupbys reduced by the selective frames they are joined with
/// ([`reduce_groupbys`]), frames read by several joins reduced below their own joins
/// ([`reduce_shared`]), heads of sorts made their limits ([`limit_sorts`]), then columns
/// pruned ([`prune_columns`]).
pub(super) fn optimize(root: &Arc<FrameNode>) -> Result<Arc<FrameNode>> {
    let reduced = reduce_shared(&reduce_groupbys(&push_filters(root)?));
    prune_columns(&limit_sorts(&reduced))
}

/// Plans and runs one frame job.
pub(crate) struct FramePlanner<'s> {
    session: &'s SessionInner,
    chunk_bytes: u64,
    threads: usize,
    shuffle_rows: usize,
    broadcast_bytes: u64,
    /// Input bytes a shuffle's merge or join takes in one task (see
    /// [`FramePlanner::merge_bounded`] and [`FramePlanner::join`]).
    merge_bytes: u64,
    tasks: Vec<ChunkTask>,
    /// Kept chunks the tasks read: persisted data, and chunks earlier stages handed on.
    stored: StoredInputs,
    next_key: u64,
    /// Chunks of nodes read more than once, kept rather than recomputed.
    memo: HashMap<u64, Vec<ChunkKey>>,
    /// How many consumers each node has in the graph being planned.
    uses: HashMap<u64, usize>,
    /// Row estimates of its nodes (a join's choice of broadcast).
    estimates: Estimates,
    /// Sizes of the join sides computed before their join was chosen.
    measured: HashMap<u64, join::Size>,
    /// Right sides of existence joins made by reducing a right side by its left's keys
    /// (not reduced again).
    reduced: HashSet<u64>,
    /// Statistics of the stages run so far.
    pub stats: JobStats,
    /// Statistics of the stage that failed, if one did (reported with the stages before).
    pub failed: Option<JobStats>,
}

impl<'s> FramePlanner<'s> {
    pub fn new(session: &'s SessionInner) -> FramePlanner<'s> {
        FramePlanner {
            session,
            chunk_bytes: session.config.chunk_bytes.max(1) as u64,
            threads: session.config.threads.max(1),
            shuffle_rows: session.config.shuffle_rows,
            broadcast_bytes: session.config.broadcast_bytes,
            merge_bytes: merge_bytes(session.config.compute_memory, session.config.threads),
            tasks: Vec::new(),
            stored: StoredInputs::default(),
            next_key: 0,
            memo: HashMap::new(),
            uses: HashMap::new(),
            estimates: Estimates::default(),
            measured: HashMap::new(),
            reduced: HashSet::new(),
            stats: JobStats::default(),
            failed: None,
        }
    }

    /// Computes `root` and returns its chunks as tables, in order.
    pub fn execute(&mut self, root: &Arc<FrameNode>) -> Result<Vec<RecordBatch>> {
        let root = self.prepare(root)?;
        let keys = self.tables(&root)?;
        let chunks = self.run_last(keys)?;
        chunks
            .iter()
            .map(|c| match c.as_ref() {
                ChunkData::Table(t) => Ok(t.clone()),
                _ => Err(Error::Runtime(
                    "a frame job produced a non-table chunk".into(),
                )),
            })
            .collect()
    }

    /// Computes `root` keeping its chunks in the session's storage (Dask's `persist`) and
    /// returns handles on them, in order.
    pub fn persist(&mut self, root: &Arc<FrameNode>) -> Result<Vec<Arc<KeptChunk>>> {
        let root = self.prepare(root)?;
        let keys = self.tables(&root)?;
        let graph = self.graph(keys, true);
        Ok(self.run_stage(graph)?.kept)
    }

    /// Writes the chunks of `root` to one file each (`path` numbered by
    /// [`super::io::part_path`]) and returns the rows written.
    pub fn write(
        &mut self,
        root: &Arc<FrameNode>,
        path: &Path,
        format: FileFormat,
    ) -> Result<usize> {
        let root = self.prepare(root)?;
        let pending = self.pending(&root)?;
        let keys: Vec<ChunkKey> = pending
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let sink = Sink::Write {
                    path: super::io::part_path(path, i),
                    format,
                };
                self.emit(p, sink)
            })
            .collect();
        let counts = self.run_last(keys)?;
        Ok(counts.iter().map(|c| rows_column(c)).sum())
    }

    /// `root` [optimised](optimize), its nodes' consumers counted.
    fn prepare(&mut self, root: &Arc<FrameNode>) -> Result<Arc<FrameNode>> {
        let root = optimize(root)?;
        count_uses(&root, &mut self.uses, &mut HashSet::new());
        Ok(root)
    }

    fn new_key(&mut self) -> ChunkKey {
        let key = ChunkKey(self.next_key);
        self.next_key += 1;
        key
    }

    fn add(&mut self, op: ChunkOp, inputs: Vec<ChunkKey>) -> ChunkKey {
        let key = self.new_key();
        self.tasks.push(ChunkTask::new(key, op, inputs));
        key
    }

    fn frame(&mut self, op: FrameOp, inputs: Vec<ChunkKey>) -> ChunkKey {
        self.add(ChunkOp::Frame(op), inputs)
    }

    /// The graph of the tasks planned so far (taken), reading the stored inputs, with
    /// `outputs` delivered (or kept in storage, with `keep`).
    /// Chunks handed on from earlier stages that the planned tasks read for the last time
    /// (see [`Self::consumed`]) and that no output names are given to the job, which frees each after its last read.
    fn graph(&mut self, outputs: Vec<ChunkKey>, keep: bool) -> ChunkGraph {
        let consumed = self.consumed();
        let given = |k: ChunkKey| {
            !crate::kept::is_persisted_key(k.0) && consumed.contains(&k) && !outputs.contains(&k)
        };
        ChunkGraph {
            stored: self.stored.give_to_job(given),
            tasks: order::sources_before_readers(std::mem::take(&mut self.tasks)),
            outputs,
            keep_outputs: keep,
        }
    }

    /// Runs one stage; its statistics join the job's (a failed stage's are kept in
    /// [`Self::failed`], for the job's report).
    fn run_stage(&mut self, graph: ChunkGraph) -> Result<JobOutput> {
        let output = self
            .session
            .run_stage(graph, &mut self.failed)
            .map_err(frame_error)?;
        self.stats.absorb(&output.stats);
        Ok(output)
    }

    /// Runs a stage and returns the data of its outputs.
    fn run_for_data(&mut self, graph: ChunkGraph) -> Result<Vec<Arc<ChunkData>>> {
        let output = self.run_stage(graph)?;
        Ok(output.outputs.into_iter().map(|(_, c)| c).collect())
    }

    /// Runs the last stage: the tasks planned so far, returning the data of `wanted`.
    fn run_last(&mut self, wanted: Vec<ChunkKey>) -> Result<Vec<Arc<ChunkData>>> {
        let graph = self.graph(wanted, false);
        self.run_for_data(graph)
    }

    /// Runs the tasks planned so far as a stage whose chunks later stages read: `wanted`,
    /// every chunk the stage produced and did not consume, and every chunk of a node read
    /// more than once (its other readers may be planned already, waiting for a later stage)
    /// are kept in the session's storage (refcounted, spillable, under the memory budget)
    /// and read by later stages as stored inputs under the same keys, so plans made before
    /// the stage stay valid. Stored inputs the stage read for the last time are given up.
    fn hand_on(&mut self, wanted: &[ChunkKey]) -> Result<()> {
        let consumed = self.consumed();
        let mut outputs: Vec<ChunkKey> = wanted.to_vec();
        let wanted_set: HashSet<ChunkKey> = wanted.iter().copied().collect();
        // The stored chunks: a task's, or each part of a split task's.
        outputs.extend(
            self.tasks
                .iter()
                .flat_map(|t| match t.parts.is_empty() {
                    true => std::slice::from_ref(&t.key),
                    false => t.parts.as_slice(),
                })
                .copied()
                .filter(|k| !consumed.contains(k) && !wanted_set.contains(k)),
        );
        let graph = self.graph(outputs.clone(), true);
        let output = self.run_stage(graph)?;
        self.stored.remove(|k| consumed.contains(&k));
        for (key, chunk) in outputs.iter().zip(&output.kept) {
            self.stored.add_at(*key, chunk);
        }
        Ok(())
    }

    /// The chunks the tasks planned so far read for the last time: all they read but the
    /// chunks of nodes read more than once (a later stage may read those again).
    fn consumed(&self) -> HashSet<ChunkKey> {
        let shared: HashSet<ChunkKey> = self.memo.values().flatten().copied().collect();
        self.tasks
            .iter()
            .flat_map(|t| t.inputs.iter().copied())
            .filter(|k| !shared.contains(k))
            .collect()
    }

    /// Runs the tasks planned so far as a stage handing the groupby partials `partials` on
    /// ([`Self::hand_on`]) and returns their rows, read from `counts` (each partial's task
    /// counts its rows into a one-row table, a part of its own): only those tables are read
    /// back, in a job of their own, so no partial leaves storage to be counted.
    fn hand_on_counted(&mut self, partials: &[ChunkKey], counts: Vec<ChunkKey>) -> Result<usize> {
        let mut wanted = partials.to_vec();
        wanted.extend(&counts);
        self.hand_on(&wanted)?;
        let counted: HashSet<ChunkKey> = counts.iter().copied().collect();
        let graph = ChunkGraph {
            stored: self
                .stored
                .inputs()
                .into_iter()
                .filter(|i| counted.contains(&i.key))
                .collect(),
            tasks: Vec::new(),
            outputs: counts,
            keep_outputs: false,
        };
        let chunks = self.run_for_data(graph)?;
        self.stored.remove(|k| counted.contains(&k));
        Ok(chunks.iter().map(|c| rows_column(c)).sum())
    }

    /// The chunks of `node` as table tasks.
    fn tables(&mut self, node: &Arc<FrameNode>) -> Result<Vec<ChunkKey>> {
        let pending = self.pending(node)?;
        Ok(pending
            .into_iter()
            .map(|p| self.emit(p, Sink::Table))
            .collect())
    }

    /// The chunks of `node`, with row-wise work left open for fusion where possible.
    fn pending(&mut self, node: &Arc<FrameNode>) -> Result<Vec<Pending>> {
        if let Some(keys) = self.memo.get(&node.id) {
            return Ok(keys.iter().map(|&k| Pending::Emitted(k)).collect());
        }
        let mut pending = self.plan(node)?;
        if pending.is_empty() {
            // No chunks (every row group pruned, a header-only CSV): one empty table, so
            // that reductions and groupbys over it still have an input.
            let empty = RecordBatch::new_empty(node.schema.clone());
            let key = self.add(ChunkOp::Literal(Arc::new(ChunkData::Table(empty))), vec![]);
            pending.push(Pending::Emitted(key));
        }
        if self.uses.get(&node.id).copied().unwrap_or(0) > 1 {
            let keys: Vec<ChunkKey> = pending
                .into_iter()
                .map(|p| self.emit(p, Sink::Table))
                .collect();
            self.memo.insert(node.id, keys.clone());
            return Ok(keys.into_iter().map(Pending::Emitted).collect());
        }
        Ok(pending)
    }

    fn plan(&mut self, node: &Arc<FrameNode>) -> Result<Vec<Pending>> {
        Ok(match &node.kind {
            FrameKind::Csv(src) => {
                let chunk = src.chunk_bytes.unwrap_or(self.chunk_bytes);
                let mut out = Vec::new();
                for f in &src.files {
                    // Where each range starts with respect to quoted fields (one parallel
                    // pass over the file), so quoted line ends may straddle ranges.
                    let ranges = quote_ranges(
                        &f.path,
                        f.data_start,
                        f.len,
                        chunk,
                        &src.options,
                        self.threads,
                    )?;
                    for range in ranges {
                        out.push(Pending::Open {
                            source: Box::new(Source::Csv(CsvScan {
                                path: f.path.clone(),
                                range,
                                data_start: f.data_start,
                                schema: src.schema.clone(),
                                projection: None,
                                options: src.options.clone(),
                            })),
                            inputs: Vec::new(),
                            steps: Vec::new(),
                        });
                    }
                }
                out
            }
            FrameKind::Parquet(src) => {
                let columns: Vec<String> = node
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                let target = src.chunk_bytes.unwrap_or(self.chunk_bytes);
                runs_of_row_groups(&src.sized_row_groups(), target, self.threads)
                    .into_iter()
                    .map(|rgs| Pending::Open {
                        source: Box::new(Source::Parquet(ParquetScan {
                            path: src.path.clone(),
                            row_groups: rgs,
                            columns: Some(columns.clone()),
                        })),
                        inputs: Vec::new(),
                        steps: Vec::new(),
                    })
                    .collect()
            }
            FrameKind::Kept(kept) => kept
                .chunks()?
                .iter()
                .map(|c| Pending::Emitted(self.stored.add(c)))
                .collect(),
            FrameKind::Batches(batches) => batches
                .iter()
                .map(|b| {
                    Pending::Emitted(self.add(
                        ChunkOp::Literal(Arc::new(ChunkData::Table(b.clone()))),
                        vec![],
                    ))
                })
                .collect(),
            FrameKind::Map { input, steps } => self
                .pending(input)?
                .into_iter()
                .map(|p| match p {
                    Pending::Emitted(k) => Pending::Open {
                        source: Box::new(Source::Input),
                        inputs: vec![k],
                        steps: steps.clone(),
                    },
                    Pending::Open {
                        source,
                        inputs,
                        steps: mut s,
                    } => {
                        s.extend(steps.iter().cloned());
                        Pending::Open {
                            source,
                            inputs,
                            steps: s,
                        }
                    }
                })
                .collect(),
            FrameKind::GroupBy { input, spec, sort } => {
                let keys = self.groupby(input, spec)?;
                let keys = if *sort && !spec.keys.is_empty() {
                    let by = spec
                        .keys
                        .iter()
                        .map(|k| tessera_kernels::frame::sort::SortKey::ascending(k))
                        .collect();
                    vec![self.frame(FrameOp::Sort { by, limit: None }, keys)]
                } else {
                    keys
                };
                keys.into_iter().map(Pending::Emitted).collect()
            }
            FrameKind::Join { left, right, spec } => self.join(left, right, spec)?,
            FrameKind::Sort { input, by, limit } => {
                let keys = self.tables(input)?;
                vec![Pending::Emitted(self.frame(
                    FrameOp::Sort {
                        by: by.clone(),
                        limit: *limit,
                    },
                    keys,
                ))]
            }
            FrameKind::Concat(inputs) => {
                let mut out = Vec::new();
                for i in inputs {
                    out.extend(self.pending(i)?);
                }
                out
            }
            FrameKind::Head { input, n } => {
                let keys = self.tables(input)?;
                vec![Pending::Emitted(
                    self.frame(FrameOp::Concat { limit: Some(*n) }, keys),
                )]
            }
        })
    }

    /// Gives `pending` a task ending in `sink`, pushing the columns the steps and the sink
    /// need into the reader.
    fn emit(&mut self, pending: Pending, sink: Sink) -> ChunkKey {
        let (mut source, inputs, steps) = match pending {
            Pending::Emitted(k) if sink == Sink::Table => return k,
            Pending::Emitted(k) => (Box::new(Source::Input), vec![k], Vec::new()),
            Pending::Open {
                source,
                inputs,
                steps,
            } => (source, inputs, steps),
        };
        let sink_columns = match &sink {
            Sink::GroupPartial(spec) | Sink::CountedPartial { spec, .. } => {
                Some(groupby_reads(spec))
            }
            _ => None,
        };
        let steps = match source.as_mut() {
            Source::Csv(scan) => {
                let names: Vec<String> = scan
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                let (kept, steps) = project(&names, steps, sink_columns);
                scan.projection = Some(kept);
                steps
            }
            Source::Parquet(scan) => {
                let names = scan.columns.clone().unwrap_or_default();
                let (kept, steps) = project(&names, steps, sink_columns);
                scan.columns = Some(kept.iter().map(|&i| names[i].clone()).collect());
                steps
            }
            Source::Input | Source::Join { .. } => steps,
        };
        let op = FrameOp::Pipeline(Pipeline {
            source: *source,
            steps,
            sink,
        });
        self.frame(op, inputs)
    }

    /// Plans a groupby: partials, then (decided from their rows) one merge, a merge tree or
    /// a shuffle.
    ///
    /// Each partial task also cuts its partial into the shuffle's hash parts, each stored as
    /// a chunk of its own, so that a shuffle needs no task (and no spilled partial read
    /// back) between the partials and the merges; a merge tree reads all parts of its
    /// partials.
    fn groupby(&mut self, input: &Arc<FrameNode>, spec: &GroupBySpec) -> Result<Vec<ChunkKey>> {
        let pending = self.pending(input)?;
        if spec.keys.is_empty() || pending.len() <= 1 {
            // One group or one partial: nothing to decide, the partials merge (in a tree)
            // in the same job.
            let partials: Vec<Vec<ChunkKey>> = pending
                .into_iter()
                .map(|p| vec![self.emit(p, Sink::GroupPartial(spec.clone()))])
                .collect();
            return Ok(vec![self.merge_tree(spec, partials)]);
        }
        let parts = input
            .estimated_bytes()
            .div_ceil(self.bytes_per_part(spec, &input.schema)?)
            .max(self.threads as u64 * 2)
            .min(MAX_PARTS as u64) as usize;
        // Each partial's parts, and a count of its rows in a part of its own.
        let (split, counts): (Vec<Vec<ChunkKey>>, Vec<ChunkKey>) = pending
            .into_iter()
            .map(|p| {
                let sink = Sink::CountedPartial {
                    spec: spec.clone(),
                    parts,
                };
                let mut keys = self.split(p, sink, parts + 1);
                let count = keys.split_off(parts);
                (keys, count[0])
            })
            .unzip();
        let rows = self.hand_on_counted(&split.concat(), counts)?;
        if rows <= self.shuffle_rows {
            if rows <= ONE_MERGE_ROWS && split.len() <= ONE_MERGE_PARTIALS {
                tracing::debug!(partials = split.len(), rows, "groupby: one merge");
                return Ok(vec![self.merge(spec, split.concat(), true)]);
            }
            tracing::debug!(partials = split.len(), rows, "groupby: tree merge");
            return Ok(vec![self.merge_tree(spec, split)]);
        }
        tracing::debug!(partials = split.len(), rows, parts, "groupby: shuffle");
        let sizes = self.stored.sizes();
        Ok((0..parts)
            .map(|p| self.merge_bounded(spec, part_of_each(&split, p), &sizes))
            .collect())
    }

    /// Input bytes per shuffle part: [`BYTES_PER_PART`], or fewer where one part's
    /// partials would be more than a merge takes in one task ([`Self::merge_bytes`]),
    /// taking partials to be as many rows as their input (a groupby of many groups) in
    /// as many more columns as the partial has than the groupby reads.
    fn bytes_per_part(&self, spec: &GroupBySpec, input: &arrow::datatypes::Schema) -> Result<u64> {
        let partial_columns = spec.partial_schema(input)?.fields().len() as u64;
        let read_columns = groupby_reads(spec).len().max(1) as u64;
        let merge_input = self.merge_bytes / partial_columns.max(read_columns) * read_columns;
        Ok(merge_input.clamp(MIN_BYTES_PER_PART, BYTES_PER_PART))
    }

    /// Merges one partition's stored `parts` (in chunk order; `stored` their sizes) and
    /// finalizes them: in one task where their bytes fit [`Self::merge_bytes`], else first
    /// in runs of consecutive parts that do, then in a tree over the runs' results. Under
    /// a memory budget too small for the threads' merges to run side by side, this lets
    /// the runs' merges do so (and each one's hash table is smaller); with room, it is one
    /// task as before. The tree's merges are not bounded: where a run's groups are mostly
    /// its own (many groups), the root takes about the whole partition, as one merge did.
    fn merge_bounded(
        &mut self,
        spec: &GroupBySpec,
        parts: Vec<ChunkKey>,
        stored: &HashMap<ChunkKey, u64>,
    ) -> ChunkKey {
        let sizes: Vec<u64> = parts
            .iter()
            .map(|k| stored.get(k).copied().unwrap_or(0))
            .collect();
        let total: u64 = sizes.iter().sum();
        if total <= self.merge_bytes {
            return self.merge(spec, parts, true);
        }
        // As few runs as fit (no more than the parts), of about equal bytes: a part goes
        // to the run its middle byte falls in.
        let n_runs = total
            .div_ceil(self.merge_bytes.max(1))
            .clamp(1, parts.len().max(1) as u64);
        let mut runs: Vec<Vec<ChunkKey>> = vec![Vec::new(); n_runs as usize];
        let mut before = 0u128;
        for (&key, &bytes) in parts.iter().zip(&sizes) {
            let middle = before + u128::from(bytes / 2);
            let run = (middle * u128::from(n_runs) / u128::from(total)).min(u128::from(n_runs - 1));
            if let Some(run) = runs.get_mut(run as usize) {
                run.push(key);
            }
            before += u128::from(bytes);
        }
        runs.retain(|run| !run.is_empty());
        tracing::debug!(
            parts = parts.len(),
            runs = runs.len(),
            "groupby: merge in runs"
        );
        let merged = runs
            .into_iter()
            .map(|run| match run[..] {
                [one] => vec![one],
                _ => vec![self.merge(spec, run, false)],
            })
            .collect();
        self.merge_tree(spec, merged)
    }

    /// Gives `pending` a task hash-partitioning it on `keys` into `parts` parts, each
    /// stored as a chunk of its own, and returns the parts' keys.
    fn partition(&mut self, pending: Pending, keys: &[String], parts: usize) -> Vec<ChunkKey> {
        let sink = Sink::Partition {
            keys: keys.to_vec(),
            parts,
        };
        self.split(pending, sink, parts)
    }

    /// Gives `pending` a task ending in `sink`, which makes a chunk of `parts` parts, each
    /// stored as a chunk of its own, and returns the parts' keys.
    fn split(&mut self, pending: Pending, sink: Sink, parts: usize) -> Vec<ChunkKey> {
        let key = self.emit(pending, sink);
        let part_keys: Vec<ChunkKey> = (0..parts).map(|_| self.new_key()).collect();
        if let Some(task) = self.tasks.iter_mut().rev().find(|t| t.key == key) {
            task.parts = part_keys.clone();
        }
        part_keys
    }

    fn merge(&mut self, spec: &GroupBySpec, inputs: Vec<ChunkKey>, finalize: bool) -> ChunkKey {
        let op = FrameOp::GroupMerge {
            spec: spec.clone(),
            finalize,
        };
        self.frame(op, inputs)
    }

    /// Merges `partials` (each one table, or the parts of one) in a tree of fan-in
    /// [`FAN_IN`] partials, finalizing at its root.
    fn merge_tree(&mut self, spec: &GroupBySpec, mut level: Vec<Vec<ChunkKey>>) -> ChunkKey {
        while level.len() > FAN_IN {
            level = level
                .chunks(FAN_IN)
                .map(|group| vec![self.merge(spec, group.concat(), false)])
                .collect();
        }
        self.merge(spec, level.concat(), true)
    }
}

/// Counts the consumers of every node under `node`.
fn count_uses(node: &Arc<FrameNode>, uses: &mut HashMap<u64, usize>, seen: &mut HashSet<u64>) {
    if !seen.insert(node.id) {
        return;
    }
    for input in node.inputs() {
        *uses.entry(input.id).or_default() += 1;
        count_uses(input, uses, seen);
    }
}

/// The input bytes of one shuffle merge task where `threads` threads share `budget` bytes
/// of memory ([`crate::SessionConfig::compute_memory`]): one merge per thread fits half
/// of it (the other half holds the parts read back for the next merges and the chunks
/// still stored).
fn merge_bytes(budget: u64, threads: usize) -> u64 {
    budget / (2 * MERGE_FOOTPRINT * threads.max(1) as u64)
}

/// Part `p` of each split chunk in `split` (the parts' keys of each).
fn part_of_each(split: &[Vec<ChunkKey>], p: usize) -> Vec<ChunkKey> {
    split.iter().map(|parts| parts[p]).collect()
}

/// The rows a write task or a counted partial reports (its one-row `rows` table).
fn rows_column(c: &ChunkData) -> usize {
    let ChunkData::Table(t) = c else { return 0 };
    t.column_by_name("rows")
        .and_then(|a| a.as_any().downcast_ref::<arrow::array::Int64Array>())
        .map_or(0, |a| a.values().iter().map(|&v| v.max(0) as usize).sum())
}

/// Job errors of a frame job: a kernel's frame error is the error itself (it names the
/// file, line and column); others keep the chunk and op.
fn frame_error(e: Error) -> Error {
    match e {
        Error::ChunkFailed {
            cause: tessera_kernels::KernelError::Frame(f),
            ..
        } => Error::Frame(f),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataframe::{from_arrow, Agg};
    use crate::{Progress, Session};
    use arrow::array::Int64Array;

    /// Waits (up to a minute) until `done` holds; false if it never did.
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        done()
    }

    #[test]
    fn chunks_handed_on_between_stages_are_freed_by_the_stage_that_reads_them_last() {
        let session = Session::builder()
            .threads(1)
            .progress(Progress::Never)
            .shuffle_rows(0)
            .build()
            .unwrap();
        let k: Vec<i64> = (0..2000).map(|i| (i * 7) % 500).collect();
        let a: Vec<i64> = (0..2000).collect();
        let batch = RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from(k.clone())) as _),
            ("a", Arc::new(Int64Array::from(a.clone())) as _),
        ])
        .unwrap();
        let frame = from_arrow(batch, Some(100))
            .groupby(&["k"])
            .agg(&[("a", &[Agg::Sum])]);
        let mut planner = FramePlanner::new(&session.inner);
        let out = planner.execute(&frame.node.clone().unwrap()).unwrap();
        // Against sums by hand.
        let mut want: HashMap<i64, i64> = HashMap::new();
        for (k, a) in k.iter().zip(&a) {
            *want.entry(*k).or_default() += a;
        }
        let mut got: HashMap<i64, i64> = HashMap::new();
        for b in &out {
            let col = |i: usize| {
                let c = b.column(i).as_any().downcast_ref::<Int64Array>();
                c.unwrap().values().to_vec()
            };
            got.extend(col(0).into_iter().zip(col(1)));
        }
        assert_eq!(got, want);
        // The 20 partials went from the first stage to the second as kept chunks (with a
        // count of rows beside each), not as data. The second stage read each for the
        // last time, so the planner gave them to its job, which freed them after their
        // merges: nothing is held while the planner lives on.
        assert_eq!(planner.stats.chunks_by_op.get("group_partial"), Some(&20));
        let held = planner
            .stored
            .inputs()
            .iter()
            .filter(|i| !crate::kept::is_persisted_key(i.key.0))
            .count();
        assert_eq!(held, 0, "the partials left the planner with the last stage");
        assert!(
            eventually(|| session.reserved_bytes() == 0),
            "{} reserved with the planner still alive",
            session.reserved_bytes()
        );
        drop(planner);
    }

    /// Groups `k` by hand: sum, first and last of `a`, max of `b`.
    fn by_hand(k: &[i64], a: &[i64], b: &[i64]) -> HashMap<i64, [i64; 4]> {
        let mut want: HashMap<i64, [i64; 4]> = HashMap::new();
        for ((&k, &a), &b) in k.iter().zip(a).zip(b) {
            let e = want.entry(k).or_insert([0, a, a, b]);
            e[0] += a;
            e[2] = a;
            e[3] = e[3].max(b);
        }
        want
    }

    #[test]
    fn a_shuffle_merge_too_big_for_the_budget_runs_in_runs_and_gives_the_same_groups() {
        let n = 12_000;
        let k: Vec<i64> = (0..n).map(|i| (i * 7919) % 3000).collect();
        let a: Vec<i64> = (0..n).collect();
        let b: Vec<i64> = (0..n).map(|i| (i * 31) % 1013).collect();
        let want = by_hand(&k, &a, &b);
        let batch = RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from(k)) as _),
            ("a", Arc::new(Int64Array::from(a)) as _),
            ("b", Arc::new(Int64Array::from(b)) as _),
        ])
        .unwrap();
        for budget in [None, Some(256u64 << 10)] {
            let mut builder = Session::builder()
                .threads(2)
                .progress(Progress::Never)
                .shuffle_rows(0);
            if let Some(bytes) = budget {
                builder = builder.memory_budget(bytes);
            }
            let session = builder.build().unwrap();
            for chunk_rows in [500, 77] {
                let frame = from_arrow(batch.clone(), Some(chunk_rows))
                    .groupby(&["k"])
                    .agg(&[
                        ("a", &[Agg::Sum, Agg::First, Agg::Last]),
                        ("b", &[Agg::Max]),
                    ]);
                let mut planner = FramePlanner::new(&session.inner);
                let out = planner.execute(&frame.node.clone().unwrap()).unwrap();
                let mut got: HashMap<i64, [i64; 4]> = HashMap::new();
                for t in &out {
                    let col = |i: usize| {
                        let c = t.column(i).as_any().downcast_ref::<Int64Array>();
                        c.unwrap().values().to_vec()
                    };
                    let (keys, cols) = (col(0), [col(1), col(2), col(3), col(4)]);
                    for (row, key) in keys.into_iter().enumerate() {
                        got.insert(key, cols.each_ref().map(|c| c[row]));
                    }
                }
                let wrong = want.iter().filter(|(k, v)| got.get(k) != Some(v)).count();
                assert_eq!(
                    (got.len(), wrong),
                    (want.len(), 0),
                    "groups and wrong groups, budget {budget:?}, {chunk_rows} rows a chunk"
                );
                // 4 partitions (2 per thread): one merge each with room; under 256 KiB
                // (about 21 KB a merge), partitions of more partials' bytes merge in runs
                // first.
                let merges = planner.stats.chunks_by_op["group_merge"];
                match budget {
                    None => assert_eq!(merges, 4, "{chunk_rows} rows a chunk"),
                    Some(_) => assert!(merges > 8, "{merges} merges, {chunk_rows} rows a chunk"),
                }
            }
        }
    }

    #[test]
    fn an_unbounded_budget_sizes_parts_without_overflow() {
        // A default cluster's workers have no memory limit (u64::MAX in all): the part size
        // must not overflow for one thread and a groupby of many columns.
        let session = Session::builder()
            .threads(1)
            .memory_budget(u64::MAX)
            .progress(Progress::Never)
            .shuffle_rows(0)
            .build()
            .unwrap();
        // Seven columns read, so the old `merge_bytes * read_columns` overflowed.
        let names = ["k", "c1", "c2", "c3", "c4", "c5", "c6"];
        let batch = RecordBatch::try_from_iter(names.iter().enumerate().map(|(j, &name)| {
            let values = (0..400i64).map(move |i| if j == 0 { i % 50 } else { i * j as i64 });
            (name, Arc::new(Int64Array::from_iter_values(values)) as _)
        }))
        .unwrap();
        let aggs: Vec<(&str, &[Agg])> = names[1..].iter().map(|&c| (c, &[Agg::Sum][..])).collect();
        let frame = from_arrow(batch, Some(100)).groupby(&["k"]).agg(&aggs);
        let mut planner = FramePlanner::new(&session.inner);
        let out = planner.execute(&frame.node.clone().unwrap()).unwrap();
        assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 50);
        // Two partitions (two per thread), one merge each.
        assert_eq!(planner.stats.chunks_by_op.get("group_merge"), Some(&2));
    }
}
