//! `railcnictl agent`: the node's metrics over HTTP for Prometheus
//! (`serve`), VFs a driver reload tore out of live pods put back (`watch`),
//! and optionally `railcnictl gc --apply` on an interval and a textfile for
//! node_exporter. Not on the CNI path: the plugin never waits for it, and
//! it reads state without taking the locks ADD and DEL hold (see `metrics`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod serve;
mod watch;

use cni::log::Level;
use cni::{files, Settings};

use super::node::NodeState;
use super::{doctor, gc, metrics, Outcome, Usage};
use crate::{log_info, log_warn};
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
}

/// The last doctor run: (check, result), shared with the scrapes.
pub type NodeChecks = Arc<Mutex<Vec<(String, &'static str)>>>;

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    cni::log::init(
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
        log_warn!("cannot watch the host's links, so VFs torn out of pods by a driver reload are not put back: {e}");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let checks = NodeChecks::default();
    let periodic = {
        let (settings, stop) = (settings.clone(), Arc::clone(&stop));
        let every = Every {
            gc: args.gc_interval,
            textfile: args.textfile.clone(),
            interval: args.interval,
            doctor: args.doctor_interval,
            checks: Arc::clone(&checks),
        };
        std::thread::spawn(move || periodic(&settings, &stop, &every))
    };
    let served = runtime.block_on(serve::serve(listener, settings.clone(), checks));
    stop.store(true, Ordering::Relaxed);
    let _ = periodic.join();
    log_info!("stopping");
    served.map_err(|e| Usage(format!("serving on {}: {e}", args.listen)))?;
    Ok(Outcome::Clean)
}

/// What the periodic thread does, and how often.
struct Every {
    gc: Option<Duration>,
    textfile: Option<PathBuf>,
    interval: Duration,
    doctor: Duration,
    checks: NodeChecks,
}

/// The doctor's checks, `--gc-interval` and `--textfile`, on a thread of
/// their own: blocking file and netlink work the server never waits for.
fn periodic(settings: &Settings, stop: &AtomicBool, every: &Every) {
    let mut next_gc = every.gc.map(|i| Instant::now() + i);
    let mut next_textfile = every.textfile.as_ref().map(|_| Instant::now());
    let mut next_doctor = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if Instant::now() >= next_doctor {
            run_doctor(settings, &every.checks);
            next_doctor = Instant::now() + every.doctor;
        }
        if next_gc.is_some_and(|t| Instant::now() >= t) {
            collect_garbage(settings);
            next_gc = every.gc.map(|i| Instant::now() + i);
        }
        if let (Some(dir), Some(t)) = (&every.textfile, next_textfile) {
            if Instant::now() >= t {
                write_textfile(settings, dir, &every.checks);
                next_textfile = Some(Instant::now() + every.interval);
            }
        }
        std::thread::sleep(TICK);
    }
}

/// `railcnictl doctor` with its defaults; the first broken link is logged.
fn run_doctor(settings: &Settings, shared: &NodeChecks) {
    let checks = doctor::checks(&doctor::Where::defaults(settings));
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

/// How often the periodic work looks at its clock.
const TICK: Duration = Duration::from_millis(100);

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

/// DIR/railcni.prom, replaced atomically, readable by node_exporter (in
/// the text format its textfile collector reads).
fn write_textfile(settings: &Settings, dir: &std::path::Path, checks: &NodeChecks) {
    let checks = checks.lock().map(|c| c.clone()).unwrap_or_default();
    let written = metrics::collect(settings, None, &checks)
        .map_err(|Usage(why)| why)
        .map(|text| metrics::exposition::text_format(&text))
        .and_then(|text| {
            files::write_atomic_mode(&dir.join("railcni.prom"), text.as_bytes(), 0o644)
                .map_err(|e| e.to_string())
        });
    if let Err(why) = written {
        log_warn!("cannot write {}/railcni.prom: {why}", dir.display());
    }
}
