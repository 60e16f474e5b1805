//! `railcnictl agent`: the node's metrics over HTTP for Prometheus, and
//! optionally `railcnictl gc --apply` on an interval and a textfile for
//! node_exporter. Not on the CNI path: the plugin never waits for it, and
//! it reads state without taking the locks ADD and DEL hold (see `metrics`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod http;
mod watch;

use cni::log::Level;
use cni::{files, Settings};
use http::{Request, Server};

use super::node::NodeState;
use super::{gc, metrics, Outcome, Usage};
use crate::node::Node;
use crate::{log_info, log_warn};

#[derive(clap::Args)]
pub struct Args {
    /// Where to serve /metrics and /healthz, e.g. 0.0.0.0:9476.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: String,
    /// Run what `railcnictl gc --apply` does this often (e.g. 60s); off by default.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    gc_interval: Option<Duration>,
    /// Also write DIR/railcni.prom every --interval, for node_exporter's textfile collector.
    #[arg(long, value_name = "DIR")]
    textfile: Option<PathBuf>,
    /// How often the textfile is written.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    interval: Duration,
}

/// How long one wait for a request lasts: the bound on reacting to SIGTERM.
const TICK: Duration = Duration::from_millis(100);

const EXPOSITION: &str = "text/plain; version=0.0.4; charset=utf-8";

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    cni::log::init(
        "railcni",
        Level::Info,
        None,
        &settings.log_dir,
        "agent".into(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| Usage(format!("cannot handle signal {signal}: {e}")))?;
    }
    let server = Server::bind(&args.listen)
        .map_err(|e| Usage(format!("cannot listen on {}: {e}", args.listen)))?;
    log_info!("serving /metrics and /healthz on {}", args.listen);
    if let Err(e) = watch::start(settings) {
        log_warn!("cannot watch the host's links, so VFs torn out of pods by a driver reload are not put back: {e}");
    }
    let mut next_gc = args.gc_interval.map(|i| Instant::now() + i);
    let mut next_textfile = args.textfile.as_ref().map(|_| Instant::now());
    while !stop.load(Ordering::Relaxed) {
        match server.next(TICK) {
            Ok(Some(request)) => answer(settings, request),
            Ok(None) => {}
            Err(e) => log_warn!("cannot accept a request: {e}"),
        }
        if next_gc.is_some_and(|t| Instant::now() >= t) {
            collect_garbage(settings);
            next_gc = args.gc_interval.map(|i| Instant::now() + i);
        }
        if let (Some(dir), Some(t)) = (&args.textfile, next_textfile) {
            if Instant::now() >= t {
                write_textfile(settings, dir);
                next_textfile = Some(Instant::now() + args.interval);
            }
        }
    }
    log_info!("stopping");
    Ok(Outcome::Clean)
}

fn answer(settings: &Settings, request: Request) {
    let (status, body, content_type) = match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/metrics") => match metrics::collect(settings, None) {
            Ok(text) => (200, text, EXPOSITION),
            Err(Usage(why)) => (500, format!("{why}\n"), "text/plain"),
        },
        ("GET", "/healthz") => match NodeState::load(settings) {
            Ok(_) => (200, "ok\n".into(), "text/plain"),
            Err(Usage(why)) => (503, format!("{why}\n"), "text/plain"),
        },
        ("GET", _) => (
            404,
            "not found: try /metrics or /healthz\n".into(),
            "text/plain",
        ),
        _ => (405, "only GET\n".into(), "text/plain"),
    };
    if let Err(e) = request.respond(status, content_type, &body) {
        log_warn!("cannot answer a request: {e}");
    }
}

/// What `railcnictl gc --apply` does, logged.
fn collect_garbage(settings: &Settings) {
    let done = NodeState::load(settings).and_then(|state| {
        let node = Node::new(settings.clone()).map_err(|e| Usage(e.to_string()))?;
        gc::reconcile(&state, &node, true)
    });
    match done {
        Ok(report) => {
            for a in &report.actions {
                log_info!(
                    "gc: {} {} {} {}: {}",
                    a.action,
                    a.network,
                    a.ifname,
                    a.what,
                    a.result
                );
            }
        }
        Err(Usage(why)) => log_warn!("gc: {why}"),
    }
}

/// DIR/railcni.prom, replaced atomically, readable by node_exporter.
fn write_textfile(settings: &Settings, dir: &std::path::Path) {
    let written = metrics::collect(settings, None)
        .map_err(|Usage(why)| why)
        .and_then(|text| {
            files::write_atomic_mode(&dir.join("railcni.prom"), text.as_bytes(), 0o644)
                .map_err(|e| e.to_string())
        });
    if let Err(why) = written {
        log_warn!("cannot write {}/railcni.prom: {why}", dir.display());
    }
}
