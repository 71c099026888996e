//! Eager mode (Mars's `eager_mode`): while an eager session lives, every tensor operation
//! runs at once and its result replaces the lazy node.

use crate::session::SessionInner;
use crate::tensor::node::{Node, NodeKind, Stored, StoredChunks};
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex, Weak};

static EAGER: Mutex<Option<Weak<SessionInner>>> = Mutex::new(None);

/// Makes `session` the one eager operations run on.
pub(crate) fn register(session: &Arc<SessionInner>) {
    if let Ok(mut slot) = EAGER.lock() {
        *slot = Some(Arc::downgrade(session));
    }
}

/// Stops eager execution if `session` is the registered one.
pub(crate) fn unregister(session: &SessionInner) {
    if let Ok(mut slot) = EAGER.lock() {
        if slot
            .as_ref()
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), session))
        {
            *slot = None;
        }
    }
}

/// Runs `t` at once when an eager session is registered; otherwise returns it unchanged.
pub(crate) fn apply(t: Tensor) -> Tensor {
    let Ok(node) = t.node() else { return t };
    if matches!(node.kind, NodeKind::Data(_)) {
        return t;
    }
    let session = EAGER
        .lock()
        .ok()
        .and_then(|s| s.as_ref().and_then(Weak::upgrade));
    let Some(session) = session else { return t };
    match session.run(node) {
        Ok((grid, chunks, _stats)) => Tensor {
            node: Ok(Node::new(
                node.shape.clone(),
                node.dtype,
                NodeKind::Data(Stored {
                    grid,
                    chunks: StoredChunks::Held(chunks),
                }),
            )),
        },
        // The eager session shut down while this ran: stay lazy rather than fail.
        Err(_) if session.is_stopped() => t,
        Err(e) => Tensor::failed(e),
    }
}
