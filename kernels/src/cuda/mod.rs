//! CUDA devices, loaded at run time: nothing of CUDA is needed to build or to run on a
//! machine without a GPU.
