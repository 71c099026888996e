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
mod logging;
mod session;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::install();
    m.add_class::<session::PySession>()?;
    m.add_class::<array::PyTensor>()?;
    create::register(m)?;
    frame::register(m)?;
    Ok(())
}
