//! `railcnictl agent`: the node's metrics over HTTP for Prometheus
//! (`serve`), VFs a driver reload tore out of live pods re-attached (`watch`),
//! and optionally `railcnictl gc --apply` on an interval and a textfile for
//! node_exporter. Not on the CNI path: the plugin never waits for it, and
//! it reads state without taking the locks ADD and DEL hold (see `metrics`).

use std::sync::Arc;
use std::time::Duration;

mod args;
mod jobs;
mod passes;
mod periodic;
mod serve;
mod watch;

use base::log::Level;
use base::Settings;

use crate::cli::outcome::{Outcome, Usage};
use crate::{log_info, log_warn};
pub use args::Args;
use jobs::NodeChecks;
use passes::Passes;

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    base::log::init(
        "railcni",
        Level::Info,
        None,
        &settings.log_dirs(),
        "agent".into(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Usage(format!("cannot start the agent's runtime: {e}")))?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(&args.listen))
        .map_err(|e| Usage(format!("cannot listen on {}: {e}", args.listen)))?;
    log_info!("serving /metrics and /healthz on {}", args.listen);
    if let Ok(addr) = listener.local_addr() {
        if !addr.ip().is_loopback() {
            log_warn!(
                "{addr} is not a loopback address: whoever reaches it reads every pod's name, namespace, \
                 rail addresses and VF on this node, unauthenticated; serve 127.0.0.1 behind kube-rbac-proxy \
                 (deploy/daemonset.yaml, docs/monitoring.md) unless the network in front of it is trusted"
            );
        }
    }
    if let Err(e) = watch::start(settings) {
        log_warn!("cannot watch the host's links, so VFs torn out of pods by a driver reload are not re-attached: {e}");
    }
    let checks = NodeChecks::default();
    let passes = Passes::start(settings.clone(), Arc::clone(&checks))
        .map_err(|e| Usage(format!("cannot start the agent's worker: {e}")))?;
    let served = runtime.block_on(async {
        periodic::start(settings, args, &passes, &checks);
        serve::serve(listener, passes, stopped()).await
    });
    // Whatever still runs (a doctor check, a gc pass, a pass over a hung
    // disk) is not waited for: SIGTERM ends the agent now.
    runtime.shutdown_timeout(Duration::from_millis(100));
    log_info!("stopping");
    served.map_err(|e| Usage(format!("serving on {}: {e}", args.listen)))?;
    Ok(Outcome::Clean)
}

/// SIGTERM or SIGINT.
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
