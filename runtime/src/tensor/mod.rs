//! Lazy chunked tensors with NumPy's names.
//!
//! A [`Tensor`] is a handle on a node of a lazy graph: building one checks shapes and dtypes
//! at once (an invalid operation yields a tensor that carries the error, which every later
//! operation passes on and [`Tensor::execute`] returns), and nothing runs until `execute`
//! (or at once, in an eager session).

mod array;
mod create;
mod fft;
mod math;
mod nanreduce;
pub(crate) mod node;
mod ops;
pub mod random;
mod reduce;
mod shape;

pub use array::outer;
pub use create::{arange, arange_f64, from_slice, from_vec, full, linspace, ones, zeros};
pub use fft::FftNorm;
pub use nanreduce::NanOp;
pub(crate) use ops::cast_node as ops_cast;
pub use ops::{where_, Operand};
pub use shape::{concatenate, Slice};

use crate::accelerator::DeviceBackend;
use crate::error::{Error, Result};
use crate::kept::Kept;
use crate::session::Session;
use node::Node;
use std::sync::Arc;
use tessera_actors::DeviceKind;
use tessera_kernels::{DType, HostTensor};

/// A lazy, chunked n-dimensional array.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub(crate) node: Result<Arc<Node>>,
}

impl Tensor {
    /// Wraps a new node (and runs it at once in an eager session).
    pub(crate) fn from_node(node: Arc<Node>) -> Tensor {
        crate::eager::apply(Tensor { node: Ok(node) })
    }

    /// A tensor that carries `error`.
    pub(crate) fn failed(error: Error) -> Tensor {
        Tensor { node: Err(error) }
    }

    pub(crate) fn node(&self) -> Result<&Arc<Node>> {
        self.node.as_ref().map_err(Clone::clone)
    }

    /// The shape, or the error this tensor carries.
    pub fn shape(&self) -> Result<Vec<usize>> {
        Ok(self.node()?.shape.clone())
    }

    /// The element type, or the error this tensor carries.
    pub fn dtype(&self) -> Result<DType> {
        Ok(self.node()?.dtype)
    }

    /// Number of dimensions, or the error this tensor carries.
    pub fn ndim(&self) -> Result<usize> {
        Ok(self.node()?.shape.len())
    }

    /// Number of elements, or the error this tensor carries.
    pub fn size(&self) -> Result<usize> {
        Ok(self.node()?.numel())
    }

    /// The error this tensor carries, if building it failed.
    pub fn error(&self) -> Option<&Error> {
        self.node.as_ref().err()
    }

    /// The same values cut into chunks of `chunk_shape` (the last chunk along an axis may be
    /// smaller). Without this, chunks are sized automatically from the session's byte budget.
    pub fn rechunk(&self, chunk_shape: &[usize]) -> Tensor {
        let node = match self.node() {
            Ok(n) => n,
            Err(e) => return Tensor::failed(e),
        };
        if chunk_shape.len() != node.shape.len() || chunk_shape.contains(&0) {
            return Tensor::failed(Error::InvalidChunks(format!(
                "chunk shape {chunk_shape:?} for a tensor of shape {:?}: one positive extent per axis is needed",
                node.shape
            )));
        }
        let identity = shape::identity_view(&node.shape);
        let mut view = Node::new(
            node.shape.clone(),
            node.dtype,
            node::NodeKind::View(node.clone(), identity),
        );
        if let Some(v) = Arc::get_mut(&mut view) {
            v.chunks = Some(chunk_shape.to_vec());
        }
        Tensor::from_node(view)
    }

    /// The same values, computed on `backend`'s devices, as Dask's `Array.to_backend` and
    /// Mars's `to_gpu()`/`to_cpu()` (or `gpu=True` at creation) choose: with
    /// [`DeviceBackend::Cpu`] the tasks this tensor adds to a job run on the CPU pool even
    /// in a GPU session; with [`DeviceBackend::Cuda`] its ops that have GPU kernels run on
    /// a GPU (the others on the CPU, as in any GPU session), and a job that needs it in a
    /// session without a GPU fails with [`Error::GpuUnavailable`]; [`DeviceBackend::Auto`]
    /// leaves the choice to the session. What later operations do with the result is
    /// theirs to choose: `x.to_backend(Cpu) + 1` adds on the session's devices. Tasks made
    /// for this tensor earlier in the same job (a shared operand) keep where they were put.
    pub fn to_backend(&self, backend: DeviceBackend) -> Tensor {
        let node = match self.node() {
            Ok(n) => n,
            Err(e) => return Tensor::failed(e),
        };
        let device = match backend {
            DeviceBackend::Cpu => DeviceKind::Cpu,
            DeviceBackend::Cuda => DeviceKind::Cuda,
            DeviceBackend::Auto => return self.clone(),
        };
        Tensor::from_node(Node::new(
            node.shape.clone(),
            node.dtype,
            node::NodeKind::OnDevice {
                x: node.clone(),
                device,
            },
        ))
    }

    /// Computes the tensor on `session` and returns its values in host memory.
    pub fn execute(&self, session: &Session) -> Result<HostTensor> {
        session.execute(self)
    }

    /// Computes the tensor on `session` and returns a tensor over the computed chunks (Dask's
    /// `persist`): later expressions read them instead of computing them again. The chunks
    /// stay in the session's storage, under its memory budget and spilled to disk when
    /// memory is short; if storage loses them, or another session reads them, they are
    /// computed again from this tensor's expression. Dropping the tensor frees them.
    pub fn persist(&self, session: &Session) -> Result<Tensor> {
        let node = self.node()?;
        let inner = &session.inner;
        let (grid, chunks, _) = inner.persist(node)?;
        let kept = Kept::new(Arc::clone(node), inner.id, chunks);
        Ok(Tensor {
            node: Ok(Node::new(
                node.shape.clone(),
                node.dtype,
                node::NodeKind::Data(node::Stored {
                    grid,
                    chunks: node::StoredChunks::Kept(kept),
                }),
            )),
        })
    }
}
