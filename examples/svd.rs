//! Singular values of a large matrix: a seeded uniform [0, 1) random one, or one read from a
//! `.npy` file (2-D, C order, little-endian `float64` or `float32`).
//!
//! A tall-and-skinny or short-and-fat matrix (its small side at most
//! `linalg::MAX_TSQR_COLUMNS`) gets the exact thin SVD by TSQR (`linalg::svd`); a larger
//! one, or any matrix when `--k` is given, the randomized `linalg::svd_compressed(x, k, 0,
//! 10, seed)` (Dask's defaults).
//!
//! ```text
//! cargo run --release -p tessera-examples --example svd -- --rows 2000000 --cols 20
//! cargo run --release -p tessera-examples --example svd -- --rows 100000 --cols 5000 --k 10
//! cargo run --release -p tessera-examples --example svd -- --input matrix.npy --top 5
//! ```

/// Keeps freed chunk buffers instead of unmapping them (see tessera-bench).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use tessera::linalg::{self, MAX_TSQR_COLUMNS};
use tessera::{tensor, Progress, Session, Tensor, DEFAULT_CHUNK_BYTES};
use tessera_examples::{exit_code, init_logging, parse_count, print_job_summary, SightArgs};

/// Print the top singular values of a random or `.npy` matrix, computed by a chunked
/// Tessera SVD, and the time it took.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Rows of the random matrix [default: 2000000].
    #[arg(long, value_parser = parse_count, conflicts_with = "input")]
    rows: Option<usize>,
    /// Columns of the random matrix [default: 20].
    #[arg(long, value_parser = parse_count, conflicts_with = "input")]
    cols: Option<usize>,
    /// Read the matrix from this `.npy` file (NPY v1/v2, 2-D, C order, `<f8` or `<f4`)
    /// instead of generating one.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Compute only the top `k` singular values with the randomized SVD (`svd_compressed`),
    /// whatever the shape [default: the exact SVD where the shape allows it, else k = 10].
    #[arg(long, value_parser = parse_count)]
    k: Option<usize>,
    /// Power iterations of the randomized SVD.
    #[arg(long, default_value_t = 0)]
    power_iters: usize,
    /// Oversampling of the randomized SVD.
    #[arg(long, default_value_t = 10)]
    oversamples: usize,
    /// Seed of the random matrix and of the randomized SVD's projection.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// How many singular values to print.
    #[arg(long, default_value_t = 10, value_parser = parse_count)]
    top: usize,
    /// Chunk extent along the long side [default: chunks of about 32 MiB].
    #[arg(long, value_parser = parse_count)]
    chunk: Option<usize>,
    /// Worker threads [default: every core this process may use].
    #[arg(long, value_parser = parse_count)]
    threads: Option<usize>,
    /// Where to write a performance report and a trace of the run.
    #[command(flatten)]
    sight: SightArgs,
}

/// The element type of an `.npy` file this example reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NpyDType {
    F64,
    F32,
}

/// The parsed header of an `.npy` file: element type, shape and where the data starts.
#[derive(Debug, PartialEq, Eq)]
struct NpyHeader {
    dtype: NpyDType,
    rows: usize,
    cols: usize,
    data_offset: usize,
}

/// The value of `'key':` in the header's Python dict literal, up to the next top-level comma
/// or the closing brace (tuples kept whole).
fn dict_value<'a>(dict: &'a str, key: &str) -> Result<&'a str, String> {
    let pos = ["'", "\""]
        .iter()
        .find_map(|q| {
            dict.find(&format!("{q}{key}{q}"))
                .map(|p| p + key.len() + 2)
        })
        .ok_or_else(|| format!("the header has no '{key}' entry"))?;
    let rest = dict[pos..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("no ':' after '{key}' in the header"))?
        .trim_start();
    let mut depth = 0i32;
    for (i, ch) in rest.char_indices() {
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(format!("the '{key}' entry of the header is not terminated"))
}

/// Parses the NPY magic, version and header dict (format versions 1.0 and 2.0).
fn parse_npy_header(bytes: &[u8]) -> Result<NpyHeader, String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err("not an .npy file (no \\x93NUMPY magic)".into());
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (len, start): (usize, usize) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 => {
            if bytes.len() < 12 {
                return Err("truncated NPY 2.0 header".into());
            }
            let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
            (
                usize::try_from(len).map_err(|_| "header length overflows")?,
                12,
            )
        }
        _ => {
            return Err(format!(
                "NPY format version {major}.{minor} is not supported (only 1.0 and 2.0)"
            ))
        }
    };
    let end = start
        .checked_add(len)
        .filter(|&e| e <= bytes.len())
        .ok_or("truncated NPY header")?;
    let header =
        std::str::from_utf8(&bytes[start..end]).map_err(|_| "the NPY header is not ASCII")?;
    let dict = header.trim();
    if !(dict.starts_with('{') && dict.ends_with('}')) {
        return Err(format!("the NPY header is not a dict: {dict:?}"));
    }

    let descr = dict_value(dict, "descr")?;
    let dtype = match descr.trim_matches(|c| c == '\'' || c == '"') {
        "<f8" => NpyDType::F64,
        "<f4" => NpyDType::F32,
        other => {
            return Err(format!(
                "dtype {other:?} is not supported: only little-endian float64 ('<f8') or float32 ('<f4')"
            ))
        }
    };
    match dict_value(dict, "fortran_order")? {
        "False" => {}
        "True" => return Err("the array is in Fortran order; only C order is supported (save np.ascontiguousarray(a))".into()),
        other => return Err(format!("fortran_order is {other:?}, not True or False")),
    }
    let shape = dict_value(dict, "shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| format!("the shape {shape:?} is not a tuple"))?;
    let dims = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("shape {shape} has a bad extent {s:?}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let [rows, cols] = dims[..] else {
        return Err(format!(
            "the array has shape {shape}; a 2-D matrix is needed"
        ));
    };
    if rows == 0 || cols == 0 {
        return Err(format!("the matrix {shape} is empty"));
    }
    Ok(NpyHeader {
        dtype,
        rows,
        cols,
        data_offset: end,
    })
}

/// Reads a 2-D `float64` or `float32` `.npy` file into a tensor (one chunk).
fn read_npy(path: &Path) -> Result<Tensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let h = parse_npy_header(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let data = &bytes[h.data_offset..];
    let item = match h.dtype {
        NpyDType::F64 => 8,
        NpyDType::F32 => 4,
    };
    let want = h
        .rows
        .checked_mul(h.cols)
        .and_then(|n| n.checked_mul(item))
        .ok_or_else(|| {
            format!(
                "{}: shape ({}, {}) overflows",
                path.display(),
                h.rows,
                h.cols
            )
        })?;
    if data.len() != want {
        return Err(format!(
            "{}: a ({}, {}) {:?} array needs {want} bytes of data, the file has {}",
            path.display(),
            h.rows,
            h.cols,
            h.dtype,
            data.len()
        ));
    }
    let shape = [h.rows, h.cols];
    Ok(match h.dtype {
        NpyDType::F64 => {
            let v: Vec<f64> = data
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect();
            tensor::from_vec(v, &shape)
        }
        NpyDType::F32 => {
            let v: Vec<f32> = data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            tensor::from_vec(v, &shape)
        }
    })
}

fn run(args: &Args) -> Result<(), Box<dyn Error>> {
    let mut builder = Session::builder().progress(Progress::Auto);
    if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    let session = args.sight.configure(builder).build()?;
    let recordings = args.sight.start(&session)?;

    let loading = Instant::now();
    let (x, source) = match &args.input {
        Some(path) => (read_npy(path)?, path.display().to_string()),
        None => {
            let (m, n) = (args.rows.unwrap_or(2_000_000), args.cols.unwrap_or(20));
            let x = tensor::random::default_rng(args.seed).random(&[m, n]);
            (x, format!("uniform [0, 1) random, seed {}", args.seed))
        }
    };
    let load_seconds = loading.elapsed().as_secs_f64();
    let shape = x.shape()?;
    let (m, n) = (shape[0], shape[1]);
    // Cut the long side into chunks of about DEFAULT_CHUNK_BYTES (the TSQR's row blocks)
    // and keep the short side whole.
    let long_chunk = args
        .chunk
        .unwrap_or_else(|| (DEFAULT_CHUNK_BYTES / 8 / m.min(n)).max(1));
    let x = if m >= n {
        x.rechunk(&[long_chunk.min(m), n])
    } else {
        x.rechunk(&[m, long_chunk.min(n)])
    };

    let exact = args.k.is_none() && m.min(n) <= MAX_TSQR_COLUMNS;
    let (method, s) = if exact {
        (
            "exact thin SVD (TSQR, linalg::svd)".to_string(),
            linalg::svd(&x).1,
        )
    } else {
        let k = args.k.unwrap_or(10);
        if k > m.min(n) {
            return Err(format!(
                "--k {k} is larger than the matrix's smaller side {}",
                m.min(n)
            )
            .into());
        }
        (
            format!(
                "randomized SVD (linalg::svd_compressed, k = {k}, n_power_iter = {}, n_oversamples = {})",
                args.power_iters, args.oversamples
            ),
            linalg::svd_compressed(&x, k, args.power_iters, args.oversamples, args.seed).1,
        )
    };

    let started = Instant::now();
    let (values, stats) = session.execute_with_stats(&s)?;
    let elapsed = started.elapsed();
    let values = values.to_f64_vec();

    println!("matrix:   {m} x {n} ({source})");
    if args.input.is_some() {
        println!("load:     {load_seconds:.3} s");
    }
    println!("method:   {method}");
    println!("top {} singular values:", args.top.min(values.len()));
    for (i, v) in values.iter().take(args.top).enumerate() {
        println!("  s{:<4} {v:.6}", i + 1);
    }
    print_job_summary(elapsed, &stats, session.config().threads);
    recordings.finish()?;
    args.sight.hold(&session);
    Ok(())
}

fn main() -> ExitCode {
    tessera::keep_freed_memory();
    let args = Args::parse();
    init_logging();
    exit_code("svd", run(&args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(major: u8, dict: &str) -> Vec<u8> {
        let mut header = dict.to_string();
        let pre = if major == 1 { 10 } else { 12 };
        while !(pre + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY".to_vec();
        out.extend([major, 0]);
        if major == 1 {
            out.extend((header.len() as u16).to_le_bytes());
        } else {
            out.extend((header.len() as u32).to_le_bytes());
        }
        out.extend(header.as_bytes());
        out
    }

    #[test]
    fn headers_parse() {
        let b = npy(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
        );
        let h = parse_npy_header(&b).unwrap();
        assert_eq!(
            (h.dtype, h.rows, h.cols, h.data_offset),
            (NpyDType::F64, 3, 4, b.len())
        );
        let b = npy(
            2,
            "{'shape': (7, 2), 'fortran_order': False, 'descr': '<f4'}",
        );
        let h = parse_npy_header(&b).unwrap();
        assert_eq!(
            (h.dtype, h.rows, h.cols, h.data_offset),
            (NpyDType::F32, 7, 2, b.len())
        );
    }

    #[test]
    fn bad_headers_are_rejected() {
        for (dict, needle) in [
            (
                "{'descr': '>f8', 'fortran_order': False, 'shape': (3, 4), }",
                "dtype",
            ),
            (
                "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }",
                "dtype",
            ),
            (
                "{'descr': '<f8', 'fortran_order': True, 'shape': (3, 4), }",
                "Fortran",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (12,), }",
                "2-D",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }",
                "2-D",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4), }",
                "empty",
            ),
            ("{'descr': '<f8', 'fortran_order': False}", "shape"),
        ] {
            let e = parse_npy_header(&npy(1, dict)).unwrap_err();
            assert!(e.contains(needle), "{dict}: {e}");
        }
        assert!(parse_npy_header(b"PK\x03\x04 not npy")
            .unwrap_err()
            .contains("magic"));
        let mut v3 = npy(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }",
        );
        v3[6] = 3;
        assert!(parse_npy_header(&v3).unwrap_err().contains("3.0"));
    }

    #[test]
    fn files_read_and_sizes_are_checked() {
        let dir = std::env::temp_dir().join(format!("tessera-svd-example-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.npy");
        let mut b = npy(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
        );
        for v in [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0] {
            b.extend(v.to_le_bytes());
        }
        std::fs::write(&path, &b).unwrap();
        let t = read_npy(&path).unwrap();
        assert_eq!(t.shape().unwrap(), vec![2, 3]);
        b.pop();
        std::fs::write(&path, &b).unwrap();
        assert!(read_npy(&path).unwrap_err().contains("bytes"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
