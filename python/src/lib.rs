//! `tessera._tessera`: the native module of the Python package `tessera` (issue 15).
//!
//! A thin PyO3 layer over the `tessera` crate: Python objects hold the lazy Rust `Tensor`
//! and `DataFrame`, jobs run without the GIL (Ctrl-C interrupts the wait), results come
//! back as NumPy arrays that own the Rust buffers and as Arrow streams (the C data
//! interface, read by pyarrow). The NumPy- and pandas-style API is spelled in the
//! pure-Python package `tessera` over this module.

mod array;
mod convert;
mod create;
mod errors;
mod frame;
mod learn;
mod logging;
mod programs;
mod scalars;
mod session;

use pyo3::prelude::*;

/// The allocator of the extension's own (Rust) allocations, as in `tessera-bench`: freed
/// chunk buffers stay with mimalloc instead of going back to the kernel (glibc unmaps
/// every large buffer, and each unmap costs page faults and TLB shootdowns). Python's
/// objects keep Python's allocator; a buffer handed to NumPy or pyarrow is freed by the
/// Rust code that owns it (rust-numpy's container, the Arrow C interface's release
/// callback), so every allocation returns to the allocator it came from.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module.
#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    tessera::keep_freed_memory();
    m.add_class::<session::PySession>()?;
    m.add_class::<array::PyTensor>()?;
    create::register(m)?;
    frame::register(m)?;
    learn::register(m)?;
    programs::register(m)?;
    Ok(())
}
