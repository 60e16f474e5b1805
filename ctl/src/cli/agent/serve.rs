//! The agent's HTTP side: `/metrics` and `/healthz` served by axum on
//! hyper and tokio. Anything that can reach the node's port can open
//! connections, so: idle connections cost a task each, never a thread; at
//! most `CONCURRENT` requests are answered at once, those waiting for a
//! pass included, which they share (more get 503 at once);
//! and every answer comes from the passes' one worker (`passes`), never
//! from work a request starts of its own.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::sync::Semaphore;

use super::passes::{Answer, Pass, Passes};
use crate::cli::metrics::exposition::{OPENMETRICS, TEXT_FORMAT};

/// Requests answered at once; more are refused with 503 until one ends.
pub const CONCURRENT: usize = 32;

#[derive(Clone)]
struct App {
    passes: Passes,
    slots: Arc<Semaphore>,
}

/// Serve until `stop` resolves; then return at once (in-flight requests
/// are cut: the agent has nothing to finish).
pub async fn serve(
    listener: tokio::net::TcpListener,
    passes: Passes,
    stop: impl std::future::Future<Output = ()>,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(scrape))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(App {
            passes,
            slots: Arc::new(Semaphore::new(CONCURRENT)),
        });
    let server = axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    );
    tokio::select! {
        served = server.into_future() => served,
        () = stop => Ok(()),
    }
}

/// Which format the reader asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Text,
}

/// OpenMetrics only when the Accept header offers it at least as gladly
/// as the text format (Prometheus does); the 0.0.4 text format otherwise
/// (curl, promtool, older scrapers).
pub fn negotiate(accept: Option<&str>) -> Format {
    let mut best = (0.0_f32, Format::Text);
    for offer in accept.unwrap_or("").split(',') {
        let mut parts = offer.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = (parts.filter_map(|p| p.strip_prefix("q=")))
            .find_map(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let format = match media.as_str() {
            "application/openmetrics-text" => Format::OpenMetrics,
            "text/plain" => Format::Text,
            _ => continue,
        };
        if q > best.0 || (q == best.0 && format == Format::OpenMetrics && q > 0.0) {
            best = (q, format);
        }
    }
    best.1
}

async fn scrape(State(app): State<App>, headers: HeaderMap) -> Response {
    let Ok(_slot) = app.slots.try_acquire() else {
        return busy();
    };
    let format = negotiate(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    match app.passes.get().await {
        Answer::Current(pass) => exposition(&pass, format, false),
        Answer::Stale(pass) => exposition(&pass, format, true),
        Answer::Nothing => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the first pass over the node's state has not finished; try again\n",
        )
            .into_response(),
    }
}

/// A pass as the reader's format; a stale one says how old it is
/// (`Warning: 110`, HTTP's "response is stale").
fn exposition(pass: &Pass, format: Format, stale: bool) -> Response {
    let e = match &pass.outcome {
        Ok(e) => Arc::clone(e),
        Err(why) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n")).into_response(),
    };
    let (kind, body) = match format {
        Format::OpenMetrics => (OPENMETRICS, e.openmetrics()),
        Format::Text => (TEXT_FORMAT, e.text_format()),
    };
    let mut response = ([(header::CONTENT_TYPE, kind)], body).into_response();
    if stale {
        let age = pass.ended.elapsed().as_secs();
        let warning = format!("110 railcni \"stale: the pass over the node's state is {age}s old; a newer one has not finished\"");
        if let Ok(v) = HeaderValue::from_str(&warning) {
            response.headers_mut().insert(header::WARNING, v);
        }
    }
    response
}

async fn healthz(State(app): State<App>) -> Response {
    let Ok(_slot) = app.slots.try_acquire() else {
        return busy();
    };
    match app.passes.get().await {
        Answer::Current(Pass { outcome: Ok(_), .. }) => "ok\n".into_response(),
        Answer::Current(Pass {
            outcome: Err(why), ..
        }) => (StatusCode::SERVICE_UNAVAILABLE, format!("{why}\n")).into_response(),
        Answer::Stale(_) | Answer::Nothing => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the pass over the node's state does not finish (a hung disk or namespace?)\n",
        )
            .into_response(),
    }
}

fn busy() -> Response {
    let mut r = (
        StatusCode::SERVICE_UNAVAILABLE,
        "too many requests at once; try again\n",
    )
        .into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_only_when_the_reader_offers_it() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,\
                          text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Text, "curl sends */*");
        assert_eq!(negotiate(Some("*/*")), Format::Text);
        assert_eq!(negotiate(Some("text/plain")), Format::Text);
        assert_eq!(
            negotiate(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::Text
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text; q=0")),
            Format::Text
        );
    }
}
