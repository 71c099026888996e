//! The cluster's programs run in this process: `tessera-scheduler` and `tessera-worker`,
//! as the Python package's commands (`tessera.scheduler`, `tessera.worker`) start them.
//! The servers are `tessera_server::cli`'s, the same code as the Rust programs, so a
//! `pip install` provides a cluster with no Rust toolchain and no second build.

use crate::errors::raise;
use pyo3::prelude::*;

/// Runs the program `program` (`"tessera-scheduler"` or `"tessera-worker"`) with the
/// command-line arguments `args` (after the program's name) until it stops, without the
/// GIL; returns its exit status. Logs go to stderr, filtered by `RUST_LOG` (default
/// `info`), as the Rust programs log.
#[pyfunction]
fn run_program(py: Python<'_>, program: &str, args: Vec<String>) -> PyResult<u8> {
    let run: fn(Vec<String>) -> u8 = match program {
        "tessera-scheduler" => tessera_server::cli::scheduler,
        "tessera-worker" => tessera_server::cli::worker,
        other => {
            return Err(raise(
                "TesseraValueError",
                format!("no program {other:?}: tessera-scheduler or tessera-worker"),
            ))
        }
    };
    let argv: Vec<String> = std::iter::once(program.to_string()).chain(args).collect();
    tessera_server::cli::log_to_stderr();
    Ok(py.detach(move || run(argv)))
}

/// Adds the programs' entry point to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_program, m)?)
}
