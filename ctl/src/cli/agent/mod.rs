//! `railcnictl agent`: the node's metrics over HTTP for Prometheus
//! (`serve`), VFs a driver reload tore out of live pods re-attached (`watch`),
//! and optionally `railcnictl gc --apply` on an interval and a textfile for
//! node_exporter. Not on the CNI path: the plugin never waits for it, and
//! it reads state without taking the locks ADD and DEL hold (see `metrics`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod passes;
mod periodic;
mod serve;
mod watch;

use base::log::Level;
use base::Settings;

use super::node::NodeState;
use super::{doctor, gc, Outcome, Usage};
use crate::{log_info, log_warn};
use passes::Passes;
use railcni::node::Node;

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
    /// How often `railcnictl doctor`'s checks run again (they run at start),
    /// exported as railcni_node_check.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    doctor_interval: Duration,
    /// The mounted plan ConfigMap: this node's node file is computed from it
    /// at start and again whenever it changes (checked every --plan-interval).
    #[arg(long, value_name = "DIR")]
    plan_dir: Option<PathBuf>,
    /// How often the plan ConfigMap is looked at.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    plan_interval: Duration,
    /// This node, for --plan-dir; default: $NODE_NAME (downward API spec.nodeName).
    #[arg(long, env = "NODE_NAME")]
    node: Option<String>,
    /// Where --plan-dir's node file goes.
    #[arg(long, default_value = "/etc/cni/railcni/node.json")]
    node_file: PathBuf,
    /// Its copy for a CNI caller without the host's /etc (dra-driver-sriov); "" for none.
    #[arg(long, default_value = "/var/lib/cni/railcni/node.json")]
    node_file_copy: PathBuf,
}

/// The last doctor run: (check, result), shared with the passes.
pub type NodeChecks = Arc<Mutex<Vec<(String, &'static str)>>>;

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

/// `railcnictl doctor` with its defaults; the first broken link is logged.
fn run_doctor(settings: &Settings, shared: &NodeChecks) {
    let checks = doctor::findings(&doctor::Where::defaults(settings));
    if let Some(c) = checks.iter().find(|c| c.result == doctor::Verdict::Broken) {
        log_warn!(
            "doctor: first broken link: {}: {} (fix: {})",
            c.check,
            c.found,
            c.fix.as_deref().unwrap_or("-")
        );
    }
    let results = checks
        .into_iter()
        .map(|c| (c.check, c.result.word()))
        .collect();
    if let Ok(mut shared) = shared.lock() {
        *shared = results;
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
