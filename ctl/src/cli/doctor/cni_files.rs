//! What the runtime and railcni read on this node: the two plugin
//! binaries (present, executable, this release), the node file (present,
//! naming this node), and the state (records and lease files loading, no
//! stale attachment).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::finding::Finding;
use super::place::Where;
use crate::cli::node::NodeState;
use railcni::state::AttachmentStore;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The CNI files' findings: both binaries and the node file.
pub fn findings(w: &Where) -> Vec<Finding> {
    vec![
        binary(w, "railcni"),
        binary(w, "railcni-ipam"),
        node_file(w),
        state(w),
        config_keys(w),
    ]
}

/// railcni's configs in the node's CNI conf dir (a conflist's plugins
/// included): keys it does not read but one edit from one it does, which
/// it ignores and logs at each ADD (`config::near_miss`).
fn config_keys(w: &Where) -> Finding {
    const ID: &str = "cni/config-keys";
    const EXPECTED: &str = "no key one edit from one railcni reads";
    let files = railcni::vf::sysfs::list_dir(&w.cni_conf_dir);
    let mut configs = 0;
    let mut misses = Vec::new();
    for name in files
        .iter()
        .filter(|f| f.ends_with(".conf") || f.ends_with(".conflist"))
    {
        let path = w.cni_conf_dir.join(name);
        let Some(v) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        else {
            continue;
        };
        let plugins = v["plugins"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![v.clone()]);
        for p in plugins.iter().filter(|p| p["type"] == "railcni") {
            configs += 1;
            let Some(object) = p.as_object() else {
                continue;
            };
            for (given, meant) in railcni::config::near_miss::near_misses(object) {
                misses.push(format!(
                    "{}: {given:?} (did you mean {meant:?}?)",
                    path.display()
                ));
            }
        }
    }
    match (configs, misses.is_empty()) {
        (0, _) => Finding::skipped(
            ID,
            format!("no railcni config in {}", w.cni_conf_dir.display()),
            EXPECTED,
        ),
        (n, true) => Finding::ok(
            ID,
            format!("{n} railcni config(s), none with a near-miss key"),
            EXPECTED,
        ),
        (_, false) => Finding::advice(
            ID,
            misses.join("; "),
            EXPECTED,
            "correct the key (railcni ignores it, as CNI plugins ignore keys they do not read)",
        ),
    }
}

/// Present, executable, and of this release (its first line says which).
fn binary(w: &Where, name: &str) -> Finding {
    let id = format!("cni/{name}");
    let expected = format!("{name} {VERSION}, executable");
    let path = w.cni_bin_dir.join(name);
    let install = format!(
        "railcnictl install (the installer DaemonSet does it), or copy {name} {VERSION} to {}",
        w.cni_bin_dir.display()
    );
    let mode = match std::fs::metadata(&path) {
        Ok(m) => m.permissions().mode(),
        Err(e) => {
            return Finding::broken(id, format!("{}: {e}", path.display()), &expected, install)
        }
    };
    if mode & 0o111 == 0 {
        return Finding::broken(
            id,
            format!(
                "{} is not executable (mode {:o})",
                path.display(),
                mode & 0o7777
            ),
            &expected,
            format!("chmod 755 {}", path.display()),
        );
    }
    // Run without CNI variables, it only says what it is.
    let said = first_words(&path);
    let version = said
        .split_whitespace()
        .skip_while(|w| *w != name)
        .nth(1)
        .map(|v| v.trim_end_matches(':').to_string());
    match version {
        Some(v) if v == VERSION => Finding::ok(id, format!("{} {v}", path.display()), &expected),
        Some(v) => Finding::broken(
            id,
            format!("{} is {name} {v}, railcnictl is {VERSION}", path.display()),
            &expected,
            install,
        ),
        None => Finding::broken(
            id,
            format!(
                "{} does not say it is {name} (a release before 0.1.0, or another program)",
                path.display()
            ),
            &expected,
            install,
        ),
    }
}

/// What a binary says of itself on stderr when run without CNI variables,
/// given a few seconds: whatever sits at that path must not hold up the
/// agent's checks.
fn first_words(path: &Path) -> String {
    const GIVEN: std::time::Duration = std::time::Duration::from_secs(5);
    let child = Command::new(path)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return String::new();
    };
    let deadline = std::time::Instant::now() + GIVEN;
    while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
    }
    child
        .wait_with_output()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .unwrap_or_default()
}

fn node_file(w: &Where) -> Finding {
    let expected = format!("present, naming {}", w.node);
    // The file in use (RAILCNI_NODE_CONFIG or --node-file), not the default's path.
    let fix = format!(
        "railcnictl install (it writes this node's entry of the plan ConfigMap), or \
         railcnictl plan PLAN --emit node-file --node {} > {}",
        w.node,
        w.settings.node_config.display()
    );
    match &w.expected {
        Err(why) => Finding::broken("cni/node-file", why.clone(), &expected, fix),
        Ok(file) => match (&file.node_name, entries_refused(file)) {
            // ADD's own check of each entry: a file it would refuse is broken here.
            (Some(name), Some(why)) if *name == w.node => Finding::broken(
                "cni/node-file",
                format!("{}: {why}", w.source),
                &expected,
                format!("fix the plan and write the file again: {fix}"),
            ),
            (Some(name), None) if *name == w.node => Finding::ok(
                "cni/node-file",
                format!(
                    "{}: node {name}, {} networks",
                    w.source,
                    file.networks.len()
                ),
                &expected,
            ),
            (named, _) => Finding::broken(
                "cni/node-file",
                format!(
                    "{} names node {}, this node is {} (RAILCNI_NODE_NAME or the host name)",
                    w.source,
                    named.as_deref().unwrap_or("(none)"),
                    w.node
                ),
                &expected,
                fix,
            ),
        },
    }
}

/// The first entry of the node file that ADD would refuse whatever the
/// NAD says (`railcni_ipam::pool::check_node_entry`), in its words.
fn entries_refused(file: &base::node_file::NodeFile) -> Option<String> {
    (file.networks.iter())
        .find_map(|(name, network)| {
            railcni_ipam::pool::check_node_entry(name, &network.prefix).err()
        })
        .map(|e| e.to_string())
}

/// Records and lease files load; nothing stale or orphaned (`status`'s problems).
fn state(w: &Where) -> Finding {
    const EXPECTED: &str = "all load, none stale";
    let store = AttachmentStore::new(&w.settings);
    let dir = w.settings.state_dir.join("attachments");
    for name in railcni::vf::sysfs::list_dir(&dir) {
        let Some(pci) = name.strip_suffix(".json") else {
            continue;
        };
        if let Err(e) = store.load(pci) {
            return Finding::broken(
                "cni/state",
                e.to_string(),
                EXPECTED,
                format!(
                    "inspect {}, give VF {pci} back by hand, then remove the file",
                    dir.join(&name).display()
                ),
            );
        }
    }
    let state = match NodeState::load(&w.settings) {
        Ok(state) => state,
        Err(crate::cli::outcome::Usage(why)) => {
            return Finding::broken(
                "cni/state",
                why,
                EXPECTED,
                format!(
                    "check {} (RAILCNI_STATE_DIR): it must be a readable directory",
                    w.settings.state_dir.display()
                ),
            )
        }
    };
    let report = crate::cli::status::build(&w.settings, &state, None);
    match report.problems.first() {
        None => Finding::ok(
            "cni/state",
            format!(
                "{} records, {} lease files, nothing stale",
                state.records.len(),
                state.stores.len()
            ),
            EXPECTED,
        ),
        Some(p) => Finding::broken(
            "cni/state",
            format!(
                "{} problem(s); first: {} ({})",
                report.problems.len(),
                p.kind,
                p.detail
            ),
            EXPECTED,
            p.fix.clone(),
        ),
    }
}
