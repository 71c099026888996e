//! Tests of the CUDA path: the generator over a corpus of fused kernels (`corpus`), their
//! host emulation (`host_emu`, CUDA C compiled as C++ on the CPU), NVRTC compilation, and,
//! where a GPU exists, every kernel run on it beside the CPU (`gpu`, `gpu_frame`).

mod codegen;
mod compare;
pub(crate) mod corpus;
mod filter;
pub(crate) mod gpu;
mod gpu_frame;
mod host_emu;
