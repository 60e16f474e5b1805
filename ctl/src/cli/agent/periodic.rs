//! The agent's periodic work, each on a timer of its own: the doctor's
//! checks (at start, then every --doctor-interval), gc (every
//! --gc-interval), the node file from the plan ConfigMap (every
//! --plan-interval) and the node_exporter textfile (every --interval). The
//! blocking work runs on the runtime's blocking threads, so a slow doctor
//! check never delays a scrape; the tasks end with the runtime, mid-work
//! included.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base::{files, Settings};
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::args::Args;
use super::jobs::{collect_garbage, run_doctor, NodeChecks};
use super::passes::{Answer, Passes};
use crate::cli::outcome::Usage;
use crate::cli::plan_dir::{self, Refreshed, Targets};
use crate::{log_info, log_warn};

pub fn start(settings: &Settings, args: &Args, passes: &Passes, checks: &NodeChecks) {
    let (s, c) = (settings.clone(), Arc::clone(checks));
    every(Instant::now(), args.doctor_interval, move || {
        let (s, c) = (s.clone(), Arc::clone(&c));
        async move { blocking(move || run_doctor(&s, &c)).await }
    });
    if let Some(period) = args.gc_interval {
        let s = settings.clone();
        every(Instant::now() + period, period, move || {
            let s = s.clone();
            async move { blocking(move || collect_garbage(&s)).await }
        });
    }
    if let Some(dir) = args.plan_dir.clone() {
        let (s, node) = (settings.clone(), args.node.clone());
        let (file, copy) = (args.node_file.clone(), args.node_file_copy.clone());
        every(Instant::now(), args.plan_interval, move || {
            let (s, dir, node, file, copy) = (
                s.clone(),
                dir.clone(),
                node.clone(),
                file.clone(),
                copy.clone(),
            );
            async move {
                blocking(move || refresh_node_file(&s, &dir, node.as_deref(), &file, &copy)).await
            }
        });
    }
    if let Some(dir) = args.textfile.clone() {
        let passes = passes.clone();
        every(Instant::now(), args.interval, move || {
            let (passes, dir) = (passes.clone(), dir.clone());
            async move { write_textfile(&passes, dir).await }
        });
    }
}

/// `work` at `first`, then every `period` (a late run delays the next; runs never pile up).
fn every<F, Fut>(first: Instant, period: Duration, work: F)
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut timer = interval_at(first, period);
        timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            work().await;
        }
    });
}

async fn blocking(work: impl FnOnce() + Send + 'static) {
    if let Err(e) = tokio::task::spawn_blocking(work).await {
        log_warn!("periodic work failed: {e}");
    }
}

/// This node's node file from the plan ConfigMap, when it changed; a plan
/// that gives this node none (or moves a prefix pods hold) is logged and
/// the last good node file kept.
fn refresh_node_file(
    settings: &Settings,
    dir: &Path,
    node: Option<&str>,
    file: &Path,
    copy: &Path,
) {
    let Some(node) = node else {
        return log_warn!("--plan-dir: which node is this? set NODE_NAME or --node");
    };
    let to = Targets {
        node_file: file,
        copy: (!copy.as_os_str().is_empty()).then_some(copy),
    };
    match plan_dir::refresh(dir, node, &to, settings) {
        Ok(Refreshed::Written) => log_info!(
            "wrote {} for node {node} from the plan in {}",
            file.display(),
            dir.display()
        ),
        Ok(Refreshed::Unchanged) => {}
        Err(Usage(why)) => log_warn!("{why}; keeping the node file there is"),
    }
}

/// DIR/railcni.prom from the last pass, replaced atomically, readable by
/// node_exporter (in the text format its textfile collector reads).
async fn write_textfile(passes: &Passes, dir: PathBuf) {
    let text = match passes.get().await {
        Answer::Current(pass) | Answer::Stale(pass) => pass.outcome.map(|e| e.text_format()),
        Answer::Nothing => Err("no pass over the node's state has finished".into()),
    };
    let path = dir.join("railcni.prom");
    let written = text.and_then(|text| {
        files::write_atomic_mode(&path, text.as_bytes(), 0o644).map_err(|e| e.to_string())
    });
    if let Err(why) = written {
        log_warn!("cannot write {}: {why}", path.display());
    }
}
