//! The dashboard's HTTP server: axum (hyper underneath) on a thread of its own with a
//! one-thread tokio runtime, so it fits beside a session's actix threads or a scheduler's
//! tokio runtime and never runs on them. Pages are rendered on tokio's blocking pool,
//! because reading the program (its memory, a cluster's workers) may block.

use crate::board::{
    check, check_access, metrics_text, Board, DashboardError, DashboardOptions, View,
};
use crate::page;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::stream::{self, Stream};
use std::convert::Infallible;
use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// How often an open page is sent the live panels.
const TICK: Duration = Duration::from_millis(500);
/// How long closing the server waits for renders in flight.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// The running dashboard; dropping it stops the server and closes every open page.
#[derive(Debug)]
pub struct Server {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What every request handler shares.
struct App {
    board: Arc<Board>,
    view: Arc<dyn View>,
    token: Option<String>,
    /// The last jobs' panels and the board version they show.
    jobs_html: Mutex<Option<(u64, Arc<String>)>>,
}

impl Server {
    /// Binds `options.address` and serves the dashboard of `board` and `view`.
    pub fn start(
        options: &DashboardOptions,
        board: Arc<Board>,
        view: Arc<dyn View>,
    ) -> Result<Server, DashboardError> {
        let wanted = check(options)?;
        let listener = std::net::TcpListener::bind(wanted).map_err(|e| {
            DashboardError::Options(format!("the dashboard cannot listen at {wanted}: {e}"))
        })?;
        Server::serve(listener, options.token.clone(), board, view)
    }

    /// Serves the dashboard of `board` and `view` on a bound `listener`, every request
    /// carrying `token` if given (required off loopback).
    pub fn serve(
        listener: std::net::TcpListener,
        token: Option<String>,
        board: Arc<Board>,
        view: Arc<dyn View>,
    ) -> Result<Server, DashboardError> {
        let failed = |e: std::io::Error| DashboardError::Start(e.to_string());
        let address = listener.local_addr().map_err(failed)?;
        check_access(address, token.as_deref())?;
        listener.set_nonblocking(true).map_err(failed)?;
        let app = Arc::new(App {
            board,
            view,
            token,
            jobs_html: Mutex::new(None),
        });
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("tessera-dashboard".into())
            .spawn(move || serve(listener, app, stopped))
            .map_err(|e| DashboardError::Start(format!("starting its thread: {e}")))?;
        tracing::info!("dashboard at http://{address}/");
        Ok(Server {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address the dashboard listens at.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::warn!("the dashboard thread panicked");
            }
        }
    }
}

/// The server thread's body: serves until `stopped`, then drops every connection.
fn serve(listener: std::net::TcpListener, app: Arc<App>, stopped: oneshot::Receiver<()>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("the dashboard could not start its runtime: {e}");
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("the dashboard could not listen: {e}");
                return;
            }
        };
        let router = Router::new()
            .route("/", get(index))
            .route("/events", get(events))
            .route("/metrics", get(metrics))
            // Browsers ask for it; nothing to send (and no error on their console).
            .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
            .route_layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
            .with_state(app);
        let server = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .into_future();
        tokio::select! {
            result = server => if let Err(e) = result {
                tracing::warn!("the dashboard stopped: {e}");
            },
            _ = stopped => {}
        }
    });
    runtime.shutdown_timeout(CLOSE_WAIT);
}

/// Lets a request through to its page unless [`refused`].
async fn guard(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    match refused(&app, peer, request.uri(), request.headers()) {
        Some(no) => no,
        None => next.run(request).await,
    }
}

/// Refuses a request without the token (when there is one), or from another host (when
/// there is none, so the dashboard is on loopback).
fn refused(app: &App, peer: SocketAddr, uri: &Uri, headers: &HeaderMap) -> Option<Response> {
    match &app.token {
        None if peer.ip().is_loopback() => None,
        None => Some(
            (
                StatusCode::FORBIDDEN,
                "the dashboard serves this host only\n",
            )
                .into_response(),
        ),
        Some(token) => {
            let in_query = uri
                .query()
                .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("token=")));
            let in_header = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            let given = in_query.or(in_header).unwrap_or("");
            if same(given.as_bytes(), token.as_bytes()) {
                None
            } else {
                Some((StatusCode::UNAUTHORIZED, "the dashboard needs its token\n").into_response())
            }
        }
    }
}

/// Compares without stopping at the first difference (the time says nothing of the token).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Renders on the blocking pool (reading the session may block).
async fn render<T: Send + 'static>(
    app: &Arc<App>,
    f: impl FnOnce(&App) -> T + Send + 'static,
) -> Option<T> {
    let app = Arc::clone(app);
    tokio::task::spawn_blocking(move || f(&app)).await.ok()
}

impl App {
    /// The last jobs' panels at the board's version now, rendered once per version
    /// however many pages are open.
    fn jobs_panels(&self) -> (u64, Arc<String>) {
        let mut cache = self.jobs_html.lock().unwrap_or_else(|e| e.into_inner());
        match cache.as_ref() {
            // Every page asks each tick: the jobs are read and drawn only when they changed.
            Some((v, html)) if *v == self.board.version() => (*v, Arc::clone(html)),
            _ => {
                let (version, jobs) = self.board.last_jobs();
                let html = Arc::new(page::jobs(&jobs));
                *cache = Some((version, Arc::clone(&html)));
                (version, html)
            }
        }
    }
}

async fn index(State(app): State<Arc<App>>) -> Response {
    match render(&app, |a| {
        page::index(&a.board, a.view.as_ref(), &a.jobs_panels().1)
    })
    .await
    {
        Some(html) => Html(html).into_response(),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let text = render(&app, |a| metrics_text(&a.board, |e| a.view.metrics(e))).await;
    match text {
        Some(text) => (
            [(header::CONTENT_TYPE, tessera_core::Exposition::CONTENT_TYPE)],
            text,
        )
            .into_response(),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

async fn events(State(app): State<Arc<App>>) -> Response {
    Sse::new(live_events(app))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// One page's events: the live panels every [`TICK`], and the last jobs' panels whenever
/// another job has finished. A page that does not read only stalls its own stream.
fn live_events(app: Arc<App>) -> impl Stream<Item = std::result::Result<Event, Infallible>> {
    struct Feed {
        app: Arc<App>,
        seen: Option<u64>,
        pending: Option<String>,
        first: bool,
    }
    let feed = Feed {
        app,
        seen: None,
        pending: None,
        first: true,
    };
    stream::unfold(feed, |mut feed| async move {
        if let Some(jobs) = feed.pending.take() {
            return Some((Ok(Event::default().event("jobs").data(jobs)), feed));
        }
        if !feed.first {
            tokio::time::sleep(TICK).await;
        }
        feed.first = false;
        let rendered = render(&feed.app, |a| {
            (page::live(&a.board, a.view.as_ref()), a.jobs_panels())
        })
        .await;
        let (live, (version, jobs)) = rendered?;
        if feed.seen != Some(version) {
            feed.seen = Some(version);
            feed.pending = Some(jobs.as_str().to_owned());
        }
        Some((Ok(Event::default().event("live").data(live)), feed))
    })
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
        assert!(!same(b"", b"a"));
    }
}
