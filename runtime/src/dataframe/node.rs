//! The lazy graph of a dataframe: nodes with their schema, known when they are built.

use crate::kept::Kept;
use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_kernels::frame::csv::CsvOptions;
use tessera_kernels::frame::groupby::GroupBySpec;
use tessera_kernels::frame::join::JoinSpec;
use tessera_kernels::frame::map::MapStep;
use tessera_kernels::frame::parquet::ParquetInfo;
use tessera_kernels::frame::sort::SortKey;
use tessera_kernels::frame::table::batch_bytes;

/// One CSV file of a `read_csv`.
#[derive(Clone, Debug)]
pub(crate) struct CsvFile {
    pub path: String,
    pub len: u64,
    pub data_start: u64,
}

/// The files of a `read_csv`, all of one schema.
#[derive(Clone, Debug)]
pub(crate) struct CsvSource {
    pub files: Vec<CsvFile>,
    /// The files' full schema (before projection).
    pub schema: Schema,
    pub options: CsvOptions,
    /// Bytes per chunk; the session's chunk size when `None`.
    pub chunk_bytes: Option<u64>,
}

/// A Parquet file, cut into chunks of whole row groups when planned
/// (`io::runs_of_row_groups`, by the session's chunk size and threads).
#[derive(Clone, Debug)]
pub(crate) struct ParquetSource {
    pub path: String,
    /// The file's footer as read when the frame was built: schema and row-group
    /// statistics, so that pruning and estimates never read it again.
    pub info: Arc<ParquetInfo>,
    /// The row groups to read (after pruning by predicates), in file order.
    pub row_groups: Vec<usize>,
    /// Bytes per chunk; the session's chunk size when `None`.
    pub chunk_bytes: Option<u64>,
}

impl ParquetSource {
    /// The row groups read, with their uncompressed bytes.
    pub fn sized_row_groups(&self) -> Vec<(usize, u64)> {
        self.row_groups
            .iter()
            .map(|&rg| (rg, self.info.row_groups.get(rg).map_or(0, |r| r.bytes)))
            .collect()
    }
}

/// What a node computes.
#[derive(Clone, Debug)]
pub(crate) enum FrameKind {
    Csv(CsvSource),
    Parquet(ParquetSource),
    /// Tables in memory, one chunk each.
    Batches(Vec<RecordBatch>),
    /// Tables kept in a session's storage by `persist` (spillable), one chunk each.
    Kept(Arc<Kept<FrameNode>>),
    /// Row-wise steps, fused into the chunk tasks of the input.
    Map {
        input: Arc<FrameNode>,
        steps: Vec<MapStep>,
    },
    GroupBy {
        input: Arc<FrameNode>,
        spec: GroupBySpec,
        /// Sort the result by the keys.
        sort: bool,
    },
    Join {
        left: Arc<FrameNode>,
        right: Arc<FrameNode>,
        spec: JoinSpec,
    },
    Sort {
        input: Arc<FrameNode>,
        by: Vec<SortKey>,
        limit: Option<usize>,
    },
    Concat(Vec<Arc<FrameNode>>),
    Head {
        input: Arc<FrameNode>,
        n: usize,
    },
}

/// A node of the lazy graph.
#[derive(Debug)]
pub(crate) struct FrameNode {
    /// Unique within the process.
    pub id: u64,
    /// The schema of its rows.
    pub schema: SchemaRef,
    pub kind: FrameKind,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl FrameNode {
    pub fn new(schema: SchemaRef, kind: FrameKind) -> Arc<FrameNode> {
        Arc::new(FrameNode {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            schema,
            kind,
        })
    }

    /// `node` over `inputs` (its inputs, each with some rows filtered away: the schemas are
    /// the same): itself where every input is.
    pub fn with_inputs(self: &Arc<Self>, inputs: Vec<Arc<FrameNode>>) -> Arc<FrameNode> {
        let node = self;
        let old = node.inputs();
        if old.len() == inputs.len() && old.iter().zip(&inputs).all(|(a, b)| Arc::ptr_eq(a, b)) {
            return node.clone();
        }
        let kind = match (&node.kind, inputs.as_slice()) {
            (FrameKind::Map { steps, .. }, [input]) => FrameKind::Map {
                input: input.clone(),
                steps: steps.clone(),
            },
            (FrameKind::GroupBy { spec, sort, .. }, [input]) => FrameKind::GroupBy {
                input: input.clone(),
                spec: spec.clone(),
                sort: *sort,
            },
            (FrameKind::Join { spec, .. }, [left, right]) => FrameKind::Join {
                left: left.clone(),
                right: right.clone(),
                spec: spec.clone(),
            },
            (FrameKind::Sort { by, limit, .. }, [input]) => FrameKind::Sort {
                input: input.clone(),
                by: by.clone(),
                limit: *limit,
            },
            (FrameKind::Head { n, .. }, [input]) => FrameKind::Head {
                input: input.clone(),
                n: *n,
            },
            (FrameKind::Concat(_), news) => FrameKind::Concat(news.to_vec()),
            // A source, or inputs that do not match the node's: nothing to rebuild.
            _ => return node.clone(),
        };
        FrameNode::new(node.schema.clone(), kind)
    }

    /// The nodes this one reads.
    pub fn inputs(&self) -> Vec<&Arc<FrameNode>> {
        match &self.kind {
            FrameKind::Csv(_)
            | FrameKind::Parquet(_)
            | FrameKind::Batches(_)
            | FrameKind::Kept(_) => Vec::new(),
            FrameKind::Map { input, .. }
            | FrameKind::GroupBy { input, .. }
            | FrameKind::Sort { input, .. }
            | FrameKind::Head { input, .. } => vec![input],
            FrameKind::Join { left, right, .. } => vec![left, right],
            FrameKind::Concat(inputs) => inputs.iter().collect(),
        }
    }

    /// An upper bound of the bytes its rows take in memory, from file sizes and row-group
    /// metadata (used to choose between a broadcast and a shuffle join).
    pub fn estimated_bytes(&self) -> u64 {
        match &self.kind {
            FrameKind::Csv(s) => s.files.iter().map(|f| f.len).sum(),
            FrameKind::Parquet(p) => p.sized_row_groups().iter().map(|&(_, b)| b).sum(),
            // Slices of one batch share its buffers: each counts the part it uses.
            FrameKind::Batches(b) => b.iter().map(|b| batch_bytes(b) as u64).sum(),
            FrameKind::Kept(k) => k.chunks().map_or(0, |c| c.iter().map(|c| c.nbytes()).sum()),
            FrameKind::Join { left, right, .. } => left
                .estimated_bytes()
                .saturating_add(right.estimated_bytes()),
            // Fewer columns than the input (a select, as column pruning puts over a
            // source): the input's bytes in proportion to the row widths.
            FrameKind::Map { input, .. } => {
                let (from, to) = (row_width(&input.schema), row_width(&self.schema));
                let bytes = input.estimated_bytes();
                match to < from {
                    true => (u128::from(bytes) * u128::from(to) / u128::from(from)) as u64,
                    false => bytes,
                }
            }
            _ => self
                .inputs()
                .iter()
                .map(|n| n.estimated_bytes())
                .fold(0u64, u64::saturating_add),
        }
    }
}

/// How many edges read each node under `root` (a self-join reads its input twice).
pub(super) fn consumers(root: &Arc<FrameNode>) -> HashMap<u64, usize> {
    counted(&readers(root))
}

/// How many edges read each node, from its [`readers`].
pub(super) fn counted(readers: &HashMap<u64, Vec<Arc<FrameNode>>>) -> HashMap<u64, usize> {
    readers.iter().map(|(&id, r)| (id, r.len())).collect()
}

/// The nodes that read each node under `root`, one entry per edge (a self-join is listed
/// twice).
pub(super) fn readers(root: &Arc<FrameNode>) -> HashMap<u64, Vec<Arc<FrameNode>>> {
    let mut readers: HashMap<u64, Vec<Arc<FrameNode>>> = HashMap::new();
    let mut seen = HashSet::new();
    // Iterative, so a deep chain of nodes cannot overflow the stack.
    let mut stack = vec![root.clone()];
    while let Some(node) = stack.pop() {
        if !seen.insert(node.id) {
            continue;
        }
        for input in node.inputs() {
            readers.entry(input.id).or_default().push(node.clone());
            stack.push(input.clone());
        }
    }
    readers
}

/// About the bytes one row of `schema` takes: fixed widths as they are, strings and other
/// variable-width values at 32 bytes (a guess; only the ratio of two widths is used).
pub(super) fn row_width(schema: &Schema) -> u64 {
    schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Boolean => 1,
            t => t.primitive_width().map_or(32, |w| w as u64),
        })
        .sum::<u64>()
        .max(1)
}

impl crate::kept::Lineage for FrameNode {
    fn node_id(&self) -> u64 {
        self.id
    }
    fn reads(&self) -> Vec<&Arc<FrameNode>> {
        self.inputs()
    }
    fn kept(&self) -> Option<&Kept<FrameNode>> {
        match &self.kind {
            FrameKind::Kept(kept) => Some(kept),
            _ => None,
        }
    }
}
