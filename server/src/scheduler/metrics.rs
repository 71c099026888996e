//! The scheduler's Prometheus endpoint (`tessera-scheduler --metrics HOST:PORT`): `GET
//! /metrics` answers with [`Core::metrics`](super::core::Core). axum serves it on the
//! scheduler's tokio runtime; rendering takes the scheduler's lock briefly, as a worker's
//! report does.
//!
//! Read-only, and guarded as the scheduler is: with the cluster's shared secret, every
//! request must carry it as `Authorization: Bearer <secret>` (Prometheus scrape configs
//! have `authorization: credentials`); without one the endpoint listens on loopback only
//! and serves only local callers.

use super::core::SharedCore;
use super::lock;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use tessera_cluster::auth::Secret;
use tessera_core::Exposition;
use tokio::net::TcpListener;

struct App {
    core: SharedCore,
    secret: Option<Secret>,
}

/// Serves `/metrics` on `listener` (until the task is aborted).
pub(super) async fn serve(listener: TcpListener, core: SharedCore, secret: Option<Secret>) {
    let app = Arc::new(App { core, secret });
    let router = Router::new()
        .route("/metrics", get(metrics))
        .with_state(app);
    let server = axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .into_future();
    if let Err(e) = server.await {
        tracing::warn!("the metrics endpoint stopped: {e}");
    }
}

async fn metrics(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&app, peer, &headers) {
        return refusal;
    }
    let text = lock(&app.core).metrics();
    ([(header::CONTENT_TYPE, Exposition::CONTENT_TYPE)], text).into_response()
}

/// Why a request is refused, if it is: no secret or a wrong one where the cluster has one;
/// a caller on another host where it has none.
fn refused(app: &App, peer: SocketAddr, headers: &HeaderMap) -> Option<Response> {
    let Some(secret) = &app.secret else {
        return (!peer.ip().is_loopback()).then(|| {
            let why = "the scheduler's metrics serve this host only\n";
            (StatusCode::FORBIDDEN, why).into_response()
        });
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if presented.is_some_and(|p| secret.matches(p.as_bytes())) {
        return None;
    }
    tracing::warn!(%peer, "metrics request refused: no or a wrong shared secret");
    let why = "the scheduler's metrics need the cluster's secret (Authorization: Bearer)\n";
    Some((StatusCode::UNAUTHORIZED, why).into_response())
}
