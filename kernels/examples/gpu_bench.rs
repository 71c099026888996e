//! Times the generated CUDA kernels of the benchmark workloads on GPU 0, the whole problem
//! as one chunk (no runtime around it: the floor the runtime's GPU path can reach), and
//! prints one JSON line per run in the format of `shared/peers` (engine
//! `tessera-cuda-kernel`), with the kernel's own time (CUDA events) beside the wall time
//! of the whole call (generation, launch, copy back, merge of the partial records).
//!
//! ```text
//! cargo run --release -p tessera-kernels --example gpu_bench -- pi 1e10 5
//! cargo run --release -p tessera-kernels --example gpu_bench -- sincos 10000 5
//! cargo run --release -p tessera-kernels --example gpu_bench -- matmul 8192 5
//! ```
//! Arguments: workload (`pi`, `sincos` or `matmul`: f64 `A @ B` of two generated `n × n`
//! matrices, copied back), size (points, or the side of the square), runs.

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line program

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tessera_kernels::cuda::{workloads, Gpu};
use tessera_kernels::{ChunkData, ChunkOp};

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

/// The digest of a workload's result: pi's estimate, sincos's boolean, the product's
/// first entry.
fn digest(workload: &str, points: usize, data: &ChunkData) -> Result<String, String> {
    let first = match data {
        ChunkData::Partial(p) => p.parts.first(),
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

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, size, runs] = args.as_slice() else {
        return Err("usage: gpu_bench <pi|sincos|matmul> <size> <runs>".into());
    };
    let n = size_arg(size)?;
    let runs: usize = runs.parse().map_err(|_| format!("runs {runs:?}"))?;
    let op = match workload.as_str() {
        "pi" => ChunkOp::Fused(workloads::pi(n, 42)),
        "sincos" => ChunkOp::Fused(workloads::sincos(n, 42)),
        "matmul" => ChunkOp::Linalg(workloads::matmul(n, 42)),
        other => return Err(format!("unknown workload {other:?} (pi, sincos or matmul)")),
    };
    let points = if workload == "pi" { n } else { n * n };
    let gpu = Gpu::open(0).map_err(|e| e.to_string())?;
    let inputs: Vec<Arc<ChunkData>> = Vec::new();
    // Warm-up: compilation, module load, the allocator's first pool.
    gpu.execute(&op, &inputs).map_err(|e| e.to_string())?;
    let size_label = if workload == "pi" {
        size.clone()
    } else {
        format!("{n}x{n}")
    };
    for run in 0..runs {
        let started = Instant::now();
        let (data, kernel_time) = gpu.execute_timed(&op, &inputs).map_err(|e| e.to_string())?;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{{\"workload\": \"{workload}\", \"engine\": \"tessera-cuda-kernel\", \"size\": \"{size_label}\", \
             \"seconds\": {seconds:.6}, \"kernel_seconds\": {:.6}, \"peak_rss_mb\": {:.1}, \
             \"result_digest\": {}, \"run\": {run}, \"device\": \"{}\"}}",
            kernel_time.as_secs_f64(),
            peak_rss_mb(),
            digest(workload, points, &data)?,
            gpu.describe()
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
