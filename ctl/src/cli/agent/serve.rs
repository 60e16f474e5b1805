//! The agent's HTTP side: `/metrics` and `/healthz` served by axum on
//! hyper and tokio. A maintained server, and asynchronous because anything
//! that can reach the node's port can open connections: hundreds of idle
//! ones, or a client that never finishes its request, each cost a task
//! that waits, never a turn of a loop that every scrape waits behind.

use std::net::SocketAddr;

use axum::extract::State;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use cni::Settings;

use super::super::node::NodeState;
use super::super::{metrics, Usage};

use super::super::metrics::exposition::OPENMETRICS as EXPOSITION;
use super::NodeChecks;

/// Serve until SIGTERM or SIGINT.
pub async fn serve(
    listener: tokio::net::TcpListener,
    settings: Settings,
    checks: NodeChecks,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(App { settings, checks });
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(stopped())
    .await
}

async fn stopped() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Blocking work (files, netlink in pod namespaces) on a thread of its own,
/// so the server keeps answering meanwhile.
async fn off_thread<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.await.ok()
}

/// What every handler gets.
#[derive(Clone)]
struct App {
    settings: Settings,
    checks: NodeChecks,
}

async fn scrape(State(app): State<App>) -> Response {
    let checks = app.checks.lock().map(|c| c.clone()).unwrap_or_default();
    match off_thread(move || metrics::collect(&app.settings, None, &checks)).await {
        Some(Ok(text)) => ([(header::CONTENT_TYPE, EXPOSITION)], text).into_response(),
        Some(Err(Usage(why))) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n")).into_response()
        }
        None => (StatusCode::INTERNAL_SERVER_ERROR, "the scrape failed\n").into_response(),
    }
}

async fn healthz(State(app): State<App>) -> Response {
    match off_thread(move || NodeState::load(&app.settings).map(drop)).await {
        Some(Ok(())) => "ok\n".into_response(),
        Some(Err(Usage(why))) => {
            (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response()
        }
        None => (StatusCode::SERVICE_UNAVAILABLE, "the check failed\n").into_response(),
    }
}

async fn not_found(method: Method) -> Response {
    if method == Method::GET {
        (
            StatusCode::NOT_FOUND,
            "not found: try /metrics or /healthz\n",
        )
            .into_response()
    } else {
        (StatusCode::METHOD_NOT_ALLOWED, "only GET\n").into_response()
    }
}
