//! The agent's jobs that a day-2 command also does: the doctor's checks
//! (their results shared with the passes that export them) and gc.

use std::sync::{Arc, Mutex};

use base::Settings;
use railcni::node::Node;

use crate::cli::node::NodeState;
use crate::cli::outcome::Usage;
use crate::cli::{doctor, gc};
use crate::{log_info, log_warn};

/// The last doctor run: (check, result), shared with the passes.
pub type NodeChecks = Arc<Mutex<Vec<(String, &'static str)>>>;

/// `railcnictl doctor` with its defaults; the first broken link is logged.
pub(super) fn run_doctor(settings: &Settings, shared: &NodeChecks) {
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
pub(super) fn collect_garbage(settings: &Settings) {
    let done = NodeState::load(settings).and_then(|state| {
        let node = Node::new(settings.clone()).map_err(|e| Usage(e.to_string()))?;
        gc::reconcile(&state, &node, true)
    });
    match done {
        Ok(report) => {
            for a in &report.actions {
                let context = format!("gc {} {} {}", a.network, a.container_id, a.ifname);
                base::log::in_context(context, || {
                    log_info!("{} {}: {}", a.action, a.what, a.result)
                });
            }
        }
        Err(Usage(why)) => log_warn!("gc: {why}"),
    }
}
