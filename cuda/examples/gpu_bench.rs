//! Times the generated CUDA kernels of the benchmark workloads on GPU 0, the whole problem
//! as one chunk (no runtime around it: the floor the runtime's GPU path can reach), and
//! prints one JSON line per run in the format of `shared/peers` (engine
//! `tessera-cuda-kernel`), with the kernel's own time (CUDA events) beside the wall time
//! of the whole call (generation, copies in, launch, copy back, merge of the partial
//! records). Workloads with inputs run twice a run: on inputs new to the device, then on
//! inputs whose device copies it kept (engine `tessera-cuda-kernel-kept`: no copy in).
//!
//! ```text
//! cargo run --release -p tessera-cuda --example gpu_bench -- pi 1e10 5
//! cargo run --release -p tessera-cuda --example gpu_bench -- sincos 10000 5
//! cargo run --release -p tessera-cuda --example gpu_bench -- matmul 8192 5
//! cargo run --release -p tessera-cuda --example gpu_bench -- groupby_q1 1e8 5
//! cargo run --release -p tessera-cuda --example gpu_bench -- filter 1e8 5
//! cargo run --release -p tessera-cuda --example gpu_bench -- join 1e7 5
//! ```
//! `RUST_LOG=tessera_cuda=debug` logs the join's device time per phase.
//! Arguments: workload (`pi`, `sincos`, `matmul`: f64 `A @ B` of two generated `n × n`
//! matrices, copied back, or `groupby_q1`: the h2o query `sum(v1) by id1` as one groupby
//! partial of a generated table, `id1` strings `id001`..`id100` and `v1` in 1..5, whose
//! wall time includes copying the table in and whose kernel time is the device's alone;
//! or `join`: an inner join of two tables of `n` rows on an Int64 key drawn from
//! `0..n` (the peers' `join_self`), matched and its columns gathered on the device, whose
//! digest is `[rows, sum of the left values, sum of the right values]`; `join_str` the same
//! with a string column `id` on the left, `"id"` and the key, gathered too, whose bytes
//! end the digest); `filter`: the rows of the `groupby_q1` table (with a float column
//! `v3` in `[0, 1)`) where `v3 > 0.5 & id1 != "id042" & v1 % 2 == 1`, kept as a table,
//! digest `[rows, sum of v1]`; `filter_q1`: those rows' `sum(v1) by id1`, digest as
//! `groupby_q1`'s), size (points, the side of the square, or rows), runs. `qr`: the thin QR of one `n × 20` block of values in
//! `[-1, 1)` (a TSQR leaf of the peers' `svd_tall`), copied in and its Q and R copied back,
//! digest R's first entry. `gpu_bench pi_tasks 1e10 5 66666667 1 4 8` runs pi
//! in tasks of 66,666,667 points from 1, then 4, then 8 threads (see `pi_tasks`).

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line program

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tessera_cuda::{workloads, Gpu};
use tessera_kernels::frame::groupby::{AggFunc, AggSpec, GroupBySpec};
use tessera_kernels::frame::join::{JoinHow, JoinSpec};
use tessera_kernels::frame::ops::{FrameOp, Pipeline, Sink, Source};
use tessera_kernels::linalg::{InputRef, LinalgOp, MatOperand};
use tessera_kernels::{Buffer, ChunkData, ChunkOp, HostTensor};

fn size_arg(s: &str) -> Result<usize, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 1.0 && v.fract() == 0.0)
        .map(|v| v as usize)
        .ok_or_else(|| format!("size {s:?} is not a positive integer such as 1e10"))
}

/// The process's peak resident set so far (`VmHWM`), in MB; 0 where unreadable.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// splitmix64 of `i`: the benchmark tables' draws.
fn draw(i: u64) -> u64 {
    let mut z = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(42);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The h2o groupby table's `id1` and `v1` columns for `rows` rows (splitmix64 draws).
fn q1_table(rows: usize) -> Result<arrow::array::RecordBatch, String> {
    use arrow::array::{ArrayRef, Int64Array, LargeStringArray};
    // Every id is 5 bytes ("id001"), so the offsets are 5 i and the bytes one copy each.
    let ids: Vec<String> = (1..=100).map(|k| format!("id{k:03}")).collect();
    let mut bytes = Vec::with_capacity(rows * 5);
    for i in 0..rows as u64 {
        bytes.extend_from_slice(ids[(draw(i) % 100) as usize].as_bytes());
    }
    let offsets = arrow::buffer::OffsetBuffer::new((0..=rows as i64).map(|i| i * 5).collect());
    let id1 = LargeStringArray::try_new(offsets, bytes.into(), None).map_err(|e| e.to_string())?;
    let v1: Int64Array = (0..rows as u64)
        .map(|i| Some((draw(i ^ (1 << 63)) % 5 + 1) as i64))
        .collect();
    arrow::array::RecordBatch::try_from_iter(vec![
        ("id1", std::sync::Arc::new(id1) as ArrayRef),
        ("v1", std::sync::Arc::new(v1) as ArrayRef),
    ])
    .map_err(|e| e.to_string())
}

/// The `groupby_q1` table with a float column `v3` of draws in `[0, 1)`.
fn filter_table(rows: usize) -> Result<arrow::array::RecordBatch, String> {
    use arrow::array::{ArrayRef, Float64Array};
    let q1 = q1_table(rows)?;
    let v3 = Float64Array::from_iter_values(
        (0..rows as u64).map(|i| (draw(i ^ (1 << 60)) >> 11) as f64 / (1u64 << 53) as f64),
    );
    let mut columns: Vec<(String, ArrayRef)> = q1
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .zip(q1.columns().iter().cloned())
        .collect();
    columns.push(("v3".into(), Arc::new(v3)));
    arrow::array::RecordBatch::try_from_iter(columns).map_err(|e| e.to_string())
}

/// `filter`: the rows of the `filter_table` where `v3 > 0.5`, `id1 != "id042"` and `v1` is
/// odd, kept as a table; `filter_q1`: the same rows' `sum(v1) by id1` (a groupby partial).
fn filter_op(grouped: bool) -> ChunkOp {
    use tessera_kernels::frame::expr::{col, lit};
    use tessera_kernels::frame::map::MapStep;
    let predicate = col("v3").gt(0.5) & col("id1").ne("id042") & (col("v1") % lit(2)).eq(1);
    ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
        source: Source::Input,
        steps: vec![MapStep::Filter(predicate)],
        sink: if grouped {
            Sink::GroupPartial(q1_spec())
        } else {
            Sink::Table
        },
    }))
}

/// Two tables of `rows` rows, `k` drawn from `0..rows` and a value column (`x`, `y`); with
/// `strings`, the left table also has `id`, a string column (`"id"` and `k`, 3 to 11 bytes).
fn join_tables(rows: usize, strings: bool) -> Result<Vec<Arc<ChunkData>>, String> {
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    let side = |salt: u64, value: &str, strings: bool| {
        let k = Int64Array::from_iter_values(
            (0..rows as u64).map(|i| (draw(i ^ salt) % rows as u64) as i64),
        );
        let v = Int64Array::from_iter_values((0..rows as i64).map(|i| i % 1000));
        let mut columns = vec![
            ("k", Arc::new(k.clone()) as ArrayRef),
            (value, Arc::new(v) as ArrayRef),
        ];
        if strings {
            let id = StringArray::from_iter_values(k.values().iter().map(|k| format!("id{k}")));
            columns.push(("id", Arc::new(id)));
        }
        arrow::array::RecordBatch::try_from_iter(columns)
            .map(|b| Arc::new(ChunkData::Table(b)))
            .map_err(|e| e.to_string())
    };
    Ok(vec![
        side(1 << 62, "x", strings)?,
        side(1 << 61, "y", false)?,
    ])
}

/// Columns of the `qr` workload's block (the peers' `svd_tall` matrix is 2,000,000 × 20).
const QR_COLS: usize = 20;

/// A `rows × 20` block of values in `[-1, 1)` (splitmix64 draws).
fn qr_block(rows: usize) -> Result<Arc<ChunkData>, String> {
    let values = (0..(rows * QR_COLS) as u64)
        .map(|i| (draw(i) >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        .collect();
    HostTensor::new(vec![rows, QR_COLS], Buffer::F64(values))
        .map(|t| Arc::new(ChunkData::Tensor(t)))
        .map_err(|e| e.to_string())
}

/// An inner join of the two inputs on `k`.
fn join_op() -> ChunkOp {
    ChunkOp::Frame(FrameOp::join(
        JoinSpec::new(vec!["k".into()], vec!["k".into()], JoinHow::Inner),
        1,
    ))
}

/// `sum(v1) by id1` as one groupby partial of the task's input table.
fn q1_op() -> ChunkOp {
    ChunkOp::Frame(FrameOp::Pipeline(Pipeline {
        source: Source::Input,
        steps: vec![],
        sink: Sink::GroupPartial(q1_spec()),
    }))
}

/// `sum(v1) by id1`.
fn q1_spec() -> GroupBySpec {
    GroupBySpec {
        keys: vec!["id1".into()],
        aggs: vec![AggSpec {
            column: "v1".into(),
            func: AggFunc::Sum,
            output: "v1".into(),
        }],
    }
}

/// The digest of a workload's result: pi's estimate, sincos's boolean, the product's
/// first entry, the groupby's `[groups, sum of v1]`.
fn digest(workload: &str, points: usize, data: &ChunkData) -> Result<String, String> {
    if let (ChunkData::Table(t), "join" | "join_str") = (data, workload) {
        let sum = |name: &str| -> Result<i64, String> {
            let a = t
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<arrow::array::Int64Array>());
            Ok(a.ok_or("a join column is not Int64")?.values().iter().sum())
        };
        let (rows, x, y) = (t.num_rows(), sum("x")?, sum("y")?);
        return Ok(match t.column_by_name("id") {
            // The strings' bytes in all.
            Some(id) => {
                let id = id.as_any().downcast_ref::<arrow::array::StringArray>();
                let bytes = id.ok_or("id is not Utf8")?.value_data().len();
                format!("[{rows}, {x}, {y}, {bytes}]")
            }
            None => format!("[{rows}, {x}, {y}]"),
        });
    }
    if let ChunkData::Table(t) = data {
        let sums = t
            .column(1)
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .ok_or("the groupby's sums are not Int64")?;
        let total: i64 = sums.values().iter().sum();
        return Ok(format!("[{}, {total}]", t.num_rows()));
    }
    let first = match data {
        ChunkData::Partial(p) => p.parts.first(),
        // A QR's R: its first entry, the first column's norm.
        ChunkData::Parts(p) => p.get(1),
        ChunkData::Tensor(t) => Some(t),
        other => return Err(format!("{workload} gave {}", other.kind_name())),
    };
    let value = first
        .and_then(|t| t.data().get(0))
        .ok_or("an empty result")?
        .as_f64();
    Ok(match workload {
        "pi" => format!("{:.7}", 4.0 * value / points as f64),
        "sincos" => (value != 0.0).to_string(),
        _ => format!("{value:.7}"),
    })
}

/// `pi` over `points` in tasks of `chunk` points, run through `Gpu::execute` from each
/// count of `threads` in turn, each thread taking the next task until none is left, as
/// the runtime's GPU actor does but without the planner: one JSON line per run (untimed
/// launches, so no kernel time: `gpu_bench pi` gives the kernel's).
fn pi_tasks(points: usize, runs: usize, chunk: usize, threads: &[usize]) -> Result<(), String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
    let tasks = points.div_ceil(chunk);
    let op = ChunkOp::Fused(workloads::pi(chunk, 42));
    gpu.execute(&op, &[]).map_err(|e| e.to_string())?;
    for &t in threads {
        for run in 0..runs {
            let next = AtomicUsize::new(0);
            let inside = Mutex::new(Ok(0.0f64));
            let started = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..t {
                    s.spawn(|| {
                        while next.fetch_add(1, Ordering::Relaxed) < tasks {
                            // A task's digest with 4 points is its count inside the circle.
                            let got = gpu
                                .execute(&op, &[])
                                .map_err(|e| e.to_string())
                                .and_then(|d| digest("pi", 4, &d))
                                .and_then(|d| d.parse::<f64>().map_err(|e| e.to_string()));
                            let mut acc = inside.lock().unwrap_or_else(|e| e.into_inner());
                            *acc = acc.clone().and_then(|sum| got.map(|c| sum + c));
                        }
                    });
                }
            });
            let seconds = started.elapsed().as_secs_f64();
            let inside = inside.into_inner().unwrap_or_else(|e| e.into_inner())?;
            println!(
                "{{\"workload\": \"pi\", \"engine\": \"tessera-cuda-tasks-t{t}\", \"size\": \"{points}\", \
                 \"seconds\": {seconds:.6}, \"tasks\": {tasks}, \"chunk\": {chunk}, \
                 \"peak_rss_mb\": {:.1}, \"result_digest\": {:.7}, \"run\": {run}, \"device\": \"{}\"}}",
                peak_rss_mb(),
                4.0 * inside / (chunk * tasks) as f64,
                gpu.describe()
            );
        }
    }
    Ok(())
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [workload, size, runs, chunk, threads @ ..] = args.as_slice() {
        if workload == "pi_tasks" {
            let runs: usize = runs.parse().map_err(|_| format!("runs {runs:?}"))?;
            let threads = threads
                .iter()
                .map(|t| t.parse().map_err(|_| format!("threads {t:?}")))
                .collect::<Result<Vec<usize>, String>>()?;
            return pi_tasks(size_arg(size)?, runs, size_arg(chunk)?, &threads);
        }
    }
    let [workload, size, runs] = args.as_slice() else {
        return Err(
            "usage: gpu_bench <pi|sincos|matmul|groupby_q1|filter|filter_q1|join|join_str|qr> \
                    <size> <runs>, \
                    or gpu_bench pi_tasks <points> <runs> <chunk> <threads>..."
                .into(),
        );
    };
    let n = size_arg(size)?;
    let runs: usize = runs.parse().map_err(|_| format!("runs {runs:?}"))?;
    let op = match workload.as_str() {
        "pi" => ChunkOp::Fused(workloads::pi(n, 42)),
        "sincos" => ChunkOp::Fused(workloads::sincos(n, 42)),
        "matmul" => ChunkOp::Linalg(workloads::matmul(n, 42)),
        "groupby_q1" => q1_op(),
        "filter" => filter_op(false),
        "filter_q1" => filter_op(true),
        "join" | "join_str" => join_op(),
        "qr" => ChunkOp::Linalg(LinalgOp::Qr(MatOperand::Input(InputRef::whole(0)))),
        other => {
            return Err(format!(
                "unknown workload {other:?} (pi, sincos, matmul, groupby_q1, filter, filter_q1, \
                 join, join_str or qr)"
            ))
        }
    };
    let points = if workload == "pi" { n } else { n * n };
    let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
    let inputs: Vec<Arc<ChunkData>> = match workload.as_str() {
        "groupby_q1" => vec![Arc::new(ChunkData::Table(q1_table(n)?))],
        "filter" | "filter_q1" => vec![Arc::new(ChunkData::Table(filter_table(n)?))],
        "join" => join_tables(n, false)?,
        "join_str" => join_tables(n, true)?,
        "qr" => vec![qr_block(n)?],
        _ => Vec::new(),
    };
    // Warm-up: compilation, module load, the allocator's first pool.
    let first = gpu.execute(&op, &inputs).map_err(|e| e.to_string())?;
    let tables = ["groupby_q1", "filter", "filter_q1", "join", "join_str"];
    if (tables.contains(&workload.as_str()) || workload == "qr") && n <= 20_000_000 {
        // The CPU's answer for the same tables (one thread) must have the same digest.
        let started = Instant::now();
        let cpu = tessera_kernels::cpu::execute(&op, &inputs).map_err(|e| e.to_string())?;
        let (want, got) = (digest(workload, n, &cpu)?, digest(workload, n, &first)?);
        eprintln!(
            "{workload} on the CPU (one thread): {:.3} s, digest {want}",
            started.elapsed().as_secs_f64()
        );
        if want != got {
            return Err(format!(
                "the GPU's digest {got} differs from the CPU's {want}"
            ));
        }
    }
    let size_label = if workload == "pi" || tables.contains(&workload.as_str()) {
        size.clone()
    } else if workload == "qr" {
        format!("{n}x{QR_COLS}")
    } else {
        format!("{n}x{n}")
    };
    // Each run first on copies of the inputs in new chunks, which the device has not seen
    // (copied in, as at their first use), then on the inputs themselves, whose device
    // copies the device kept from the warm-up (engine suffix `-kept`).
    for run in 0..runs {
        let fresh: Vec<Arc<ChunkData>> = inputs.iter().map(|c| Arc::new((**c).clone())).collect();
        for (engine, inputs) in [
            ("tessera-cuda-kernel", &fresh),
            ("tessera-cuda-kernel-kept", &inputs),
        ] {
            if inputs.is_empty() && engine.ends_with("kept") {
                continue;
            }
            let started = Instant::now();
            let (data, kernel_time) = gpu.execute_timed(&op, inputs).map_err(|e| e.to_string())?;
            let seconds = started.elapsed().as_secs_f64();
            println!(
                "{{\"workload\": \"{workload}\", \"engine\": \"{engine}\", \"size\": \"{size_label}\", \
                 \"seconds\": {seconds:.6}, \"kernel_seconds\": {:.6}, \"peak_rss_mb\": {:.1}, \
                 \"result_digest\": {}, \"run\": {run}, \"device\": \"{}\"}}",
                kernel_time.as_secs_f64(),
                peak_rss_mb(),
                digest(workload, points, &data)?,
                gpu.describe()
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    // RUST_LOG=tessera_cuda=debug shows the device phases of the frame kernels.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
