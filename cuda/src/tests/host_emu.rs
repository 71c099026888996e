//! Runs generated kernels on the host, compiled by the system C++ compiler with the CUDA
//! intrinsics they use defined as their IEEE host equivalents (no FMA contraction), one
//! block of one thread, and compares every value with the CPU evaluator (tests only).
//!
//! This checks the generated C, not the GPU: the prelude's Philox, `vmath` ports, casts and
//! wrapping arithmetic, the leaves' index maps, the run folds, the faults, and the partial
//! records (merged by the CPU's `Combine`). On the host, `expf` / `pow`, `tan` / `hypot`
//! and the other libdevice names the generator emits are the same libm functions the
//! Rust code calls, so every value must be identical (no tolerance is honest here: any
//! difference is a generator bug); on a GPU the ulp bounds listed in `codegen`'s docs
//! apply.

use super::compare::{self, Judge};
use super::corpus::{self, inputs_for};
use crate::codegen::cexpr::ctype;
use crate::codegen::{fault_error, fused_source, CudaKernel, ParamKind, PRELUDE};
use crate::launch;
use std::fmt::Write as _;
use std::sync::Arc;
use tessera_kernels::chunk::ChunkData;
use tessera_kernels::dtype::DType;
use tessera_kernels::expr::FusedKernel;
use tessera_kernels::tensor::{Buffer, HostTensor};
use tessera_kernels::KernelError;

/// CUDA's device built-ins, as the host has them.
pub(crate) const SHIM: &str = r#"
#include <math.h>
#include <stdio.h>
#include <string.h>
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
struct ts_dim3 { unsigned x, y, z; };
static ts_dim3 threadIdx, blockIdx, blockDim, gridDim;
static inline void __syncthreads() {}
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int atomicOr(int* p, int v) { int o = *p; *p |= v; return o; }
template <class T> static inline T __shfl_down_sync(unsigned, T v, int) { return v; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline long long __double_as_longlong(double v) { long long r; memcpy(&r, &v, 8); return r; }
static inline double __longlong_as_double(long long v) { double r; memcpy(&r, &v, 8); return r; }
static inline float __int_as_float(int v) { float r; memcpy(&r, &v, 4); return r; }
static inline double __ll2double_rn(long long v) { return (double)v; }
static inline double __ull2double_rn(unsigned long long v) { return (double)v; }
static inline float __double2float_rn(double v) { return (float)v; }
static inline float __ll2float_rn(long long v) { return (float)v; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
"#;

/// Prints `n` values as their bits: `P <case> <part> <hex>...`; and `ts_garbage`, which
/// fills an output array with garbage before the launch, as the GPU launcher leaves its
/// outputs unset: an element the kernel failed to write would then differ from the CPU's.
const PRINT: &str = r#"
#define ts_garbage(a) memset((a), 0xA5, sizeof(a))
static unsigned long long ts_raw(bool v) { return v ? 1 : 0; }
static unsigned long long ts_raw(ts_u8 v) { return v; }
static unsigned long long ts_raw(ts_i32 v) { return (unsigned)v; }
static unsigned long long ts_raw(ts_i64 v) { return (unsigned long long)v; }
static unsigned long long ts_raw(float v) { unsigned r; memcpy(&r, &v, 4); return r; }
static unsigned long long ts_raw(double v) { unsigned long long r; memcpy(&r, &v, 8); return r; }
template <class T> static void ts_print(int c, int part, const T* p, long n) {
    printf("P %d %d", c, part);
    for (long i = 0; i < n; ++i) printf(" %llx", ts_raw(p[i]));
    printf("\n");
}
"#;

/// A C initializer of `b`'s values (exact bits).
fn init_list(b: &Buffer) -> String {
    let items: Vec<String> = match b {
        Buffer::Bool(v) => v.iter().map(|x| x.to_string()).collect(),
        Buffer::U8(v) => v.iter().map(|x| format!("(ts_u8){x}")).collect(),
        Buffer::F32(v) => v
            .iter()
            .map(|x| format!("__int_as_float((int)0x{:x}u)", x.to_bits()))
            .collect(),
        Buffer::F64(v) => v
            .iter()
            .map(|x| format!("__longlong_as_double((long long)0x{:x}ULL)", x.to_bits()))
            .collect(),
        // The other integers by their bits, truncated by the cast to their width.
        ints => {
            let t = ctype(ints.dtype());
            (0..ints.len())
                .filter_map(|i| ints.get(i))
                .map(|x| format!("({t})0x{:x}ULL", x.as_i64() as u64))
                .collect()
        }
    };
    format!("{{ {} }}", items.join(", "))
}

/// One case: the kernel, its inputs, and the records a reducing kernel writes.
struct Emulated {
    label: String,
    fused: FusedKernel,
    cuda: CudaKernel,
    inputs: Vec<Arc<ChunkData>>,
    splits: usize,
}

/// The runner of case `c`: declares every argument, launches one thread, prints outputs.
fn runner(c: usize, e: &Emulated) -> String {
    let mut s = format!("static void run_{c}() {{\n    int faults = 0;\n");
    let mut args = Vec::new();
    let mut prints = Vec::new();
    for (k, p) in e.cuda.params.iter().enumerate() {
        match p {
            ParamKind::Input { slot, dtype, .. } => {
                let data = e.inputs[*slot].as_tensor().map(HostTensor::data);
                let list = data.map_or_else(|| "{}".to_string(), init_list);
                let _ = writeln!(s, "    const {} a{k}[] = {list};", ctype(*dtype));
                args.push(format!("a{k}"));
            }
            ParamKind::Values { dtype, len } => {
                let _ = writeln!(s, "    static {} a{k}[{len}];", ctype(*dtype));
                let _ = writeln!(s, "    ts_garbage(a{k});");
                args.push(format!("a{k}"));
                prints.push(format!("ts_print({c}, 0, a{k}, {len});"));
            }
            ParamKind::Part { part, dtype } => {
                let n = e.splits * e.cuda.reduce.as_ref().map_or(1, |r| r.slots);
                let _ = writeln!(s, "    static {} a{k}[{n}];", ctype(*dtype));
                let _ = writeln!(s, "    ts_garbage(a{k});");
                args.push(format!("a{k}"));
                prints.push(format!("ts_print({c}, {part}, a{k}, {n});"));
            }
            ParamKind::Splits => args.push(format!("{}LL", e.splits)),
            ParamKind::I64(v) => args.push(format!("(ts_i64)0x{:x}ULL", *v as u64)),
            ParamKind::U64(v) => args.push(format!("0x{v:x}ULL")),
            ParamKind::F64(v) => args.push(format!(
                "__longlong_as_double((long long)0x{:x}ULL)",
                v.to_bits()
            )),
            ParamKind::Faults => args.push("&faults".into()),
        }
    }
    let _ = writeln!(
        s,
        "    threadIdx.x = 0; blockIdx.x = 0; blockDim.x = 1; gridDim.x = 1;\n    {}({});",
        e.cuda.name,
        args.join(", ")
    );
    let _ = writeln!(s, "    printf(\"F {c} %d\\n\", faults);");
    for p in prints {
        let _ = writeln!(s, "    {p}");
    }
    s.push_str("}\n");
    s
}

/// Values parsed from the emulator's output: per case, the fault word and the parts.
#[derive(Default, Clone)]
struct Output {
    faults: i32,
    parts: Vec<Vec<u64>>,
}

fn parse(stdout: &str, cases: usize) -> Vec<Output> {
    let mut out = vec![Output::default(); cases];
    for line in stdout.lines() {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("F") => {
                let c: usize = w.next().unwrap().parse().unwrap();
                out[c].faults = w.next().unwrap().parse().unwrap();
            }
            Some("P") => {
                let c: usize = w.next().unwrap().parse().unwrap();
                let part: usize = w.next().unwrap().parse().unwrap();
                let vals = w.map(|h| u64::from_str_radix(h, 16).unwrap()).collect();
                if out[c].parts.len() <= part {
                    out[c].parts.resize(part + 1, Vec::new());
                }
                out[c].parts[part] = vals;
            }
            _ => {}
        }
    }
    out
}

/// A buffer of `dtype` from printed bits.
fn buffer(dtype: DType, bits: &[u64]) -> Buffer {
    match dtype {
        DType::Bool => Buffer::Bool(bits.iter().map(|&b| b != 0).collect()),
        DType::F32 => Buffer::F32(bits.iter().map(|&b| f32::from_bits(b as u32)).collect()),
        DType::F64 => Buffer::F64(bits.iter().map(|&b| f64::from_bits(b)).collect()),
        // Integers: the low bits, as `as` truncates.
        ints => Buffer::U64(bits.to_vec()).cast(ints),
    }
}

/// The chunk (or the error) an emulated launch of `fused` (`e`'s kernel, or the same with
/// its reduction finished) stands for, made as the GPU launcher makes it.
fn device_result(
    e: &Emulated,
    fused: &FusedKernel,
    out: &Output,
) -> Result<ChunkData, KernelError> {
    if let Some(error) = fault_error(out.faults) {
        return Err(error);
    }
    let dtypes = e.cuda.params.iter().filter_map(|p| match p {
        ParamKind::Values { dtype, .. } | ParamKind::Part { dtype, .. } => Some(*dtype),
        _ => None,
    });
    let buffers = dtypes
        .enumerate()
        .map(|(k, d)| buffer(d, out.parts.get(k).map_or(&[][..], |v| v)))
        .collect();
    launch::chunk_of(fused, &e.cuda, e.splits, buffers)
}

/// Compiles and runs `cases` on the host; `None` when no C++ compiler is installed.
fn emulate(cases: &[Emulated]) -> Option<Vec<Output>> {
    let mut tu = String::from(SHIM);
    tu.push_str(PRELUDE);
    tu.push_str(PRINT);
    let mut defined = std::collections::HashSet::new();
    for (c, e) in cases.iter().enumerate() {
        // Equal IR up to what only a later Combine uses (ddof) gives equal kernels.
        if defined.insert(e.cuda.name.clone()) {
            tu.push_str(e.cuda.source.strip_prefix(PRELUDE).unwrap());
        }
        tu.push_str(&runner(c, e));
    }
    tu.push_str("int main() {\n");
    for c in 0..cases.len() {
        let _ = writeln!(tu, "    run_{c}();");
    }
    tu.push_str("    return 0;\n}\n");
    let stdout = compile_and_run("emu", &tu)?;
    Some(parse(&stdout, cases.len()))
}

/// Compiles the C++ translation unit `tu` (which starts with [`SHIM`]) with the system
/// compiler (`$CXX`, else `c++`) and runs it, returning what it printed; `None` when no
/// compiler is installed. Panics, with the compiler's messages, where it fails.
pub(crate) fn compile_and_run(name: &str, tu: &str) -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let dir = std::env::temp_dir().join(format!("tessera-cuda-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("emu.cpp");
    let bin = dir.join("emu");
    std::fs::write(&src, tu).unwrap();
    let built = std::process::Command::new(&cxx)
        .args([
            "-std=c++17",
            "-O1",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-w",
            "-o",
        ])
        .arg(&bin)
        .arg(&src)
        .output();
    let built = match built {
        Err(_) => return None,
        Ok(b) => b,
    };
    assert!(
        built.status.success(),
        "{cxx} failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let run = std::process::Command::new(&bin).output().unwrap();
    assert!(run.status.success(), "the emulator failed: {run:?}");
    let _ = std::fs::remove_dir_all(&dir);
    Some(String::from_utf8_lossy(&run.stdout).into_owned())
}

#[test]
#[allow(clippy::print_stderr)]
fn cuda_kernels_emulated_on_the_host_match_the_cpu() {
    let mut all: Vec<(String, FusedKernel)> = corpus::cases()
        .into_iter()
        .map(|c| (c.label, c.kernel))
        .collect();
    all.extend(compare::fault_cases());
    let cases: Vec<Emulated> = all
        .into_iter()
        .enumerate()
        .map(|(n, (label, fused))| {
            let cuda = fused_source(&fused).unwrap_or_else(|e| panic!("{label}: {e}"));
            let per_slot = cuda.reduce.as_ref().map_or(1, |r| r.per_slot);
            Emulated {
                label,
                inputs: inputs_for(&fused),
                splits: 1 + n % per_slot.min(3),
                fused,
                cuda,
            }
        })
        .collect();
    let Some(outputs) = emulate(&cases) else {
        eprintln!("SKIPPED cuda host emulation: no C++ compiler (c++ or $CXX) was found");
        return;
    };
    let failures: Vec<String> = cases
        .iter()
        .zip(&outputs)
        .flat_map(|(e, o)| {
            // A reduction's outputs are judged as its partial and, finished, as the
            // reduction's tensor (its one-chunk plan's task).
            let finished = corpus::finished(&e.fused).map(|f| (f, ", finished"));
            std::iter::once((e.fused.clone(), ""))
                .chain(finished)
                .filter_map(move |(f, how)| {
                    compare::check(&f, &e.inputs, device_result(e, &f, o), Judge::Host)
                        .err()
                        .map(|m| format!("{}{how}: {m}", e.label))
                })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} emulated kernels differ from the CPU:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
