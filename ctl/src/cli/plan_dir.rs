//! This node's node file from the mounted `railcni-plan` ConfigMap (a
//! directory, one file per key): computed from the plan (`plan.json`, the
//! form `railcnictl plan --emit configmap` writes) or, from a ConfigMap of
//! an earlier release, read from the node's own `<node>.json` key. The
//! installer and the agent both write it through `refresh`, which keeps
//! the last good node file when the new one cannot be had or would move a
//! prefix pods still hold.

use std::path::Path;

use base::node_file::NodeFile;
use base::{files, Settings};

use crate::cli::outcome::Usage;
use crate::fabric::{emit::PLAN_KEY, Plan};

/// Where the node file goes, and the copy a DRA driver's container reads.
pub struct Targets<'a> {
    pub node_file: &'a Path,
    pub copy: Option<&'a Path>,
}

/// What `refresh` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Refreshed {
    Written,
    Unchanged,
}

/// Compute or read this node's node file, stamp it with this machine's id;
/// write it (and its copy) if it changed and moves no prefix that holds
/// leases.
pub fn refresh(
    dir: &Path,
    node: &str,
    to: &Targets,
    settings: &Settings,
) -> Result<Refreshed, Usage> {
    let planned = node_file_from(dir, node)?;
    let mut file = NodeFile::parse(planned.as_bytes())
        .map_err(|e| Usage(format!("the node file for {node} is not one: {e}")))?;
    // Stamped for this machine: a copy on another one is refused by ADD.
    file.machine_id = base::node_file::machine_id(&settings.machine_id_path);
    let text = file.to_text();
    if file.node_name.as_deref() != Some(node) {
        return Err(Usage(format!(
            "the plan's node file names node {:?}, not {node}",
            file.node_name
        )));
    }
    let old = std::fs::read_to_string(to.node_file).ok();
    let copy_current = to
        .copy
        .is_none_or(|c| std::fs::read_to_string(c).ok().as_deref() == Some(text.as_str()));
    if old.as_deref() == Some(text.as_str()) && copy_current {
        return Ok(Refreshed::Unchanged);
    }
    if let Some(old) = old
        .as_deref()
        .and_then(|t| NodeFile::parse(t.as_bytes()).ok())
    {
        no_leased_prefix_moves(&old, &file, settings)?;
    }
    for target in std::iter::once(to.node_file).chain(to.copy) {
        write(target, &text)?;
    }
    if file.machine_id.is_none() {
        eprintln!(
            "warning: no machine id in {}: the node file was written without a stamp \
             (mount the host's /etc/machine-id there, or set RAILCNI_MACHINE_ID_FILE)",
            settings.machine_id_path.display()
        );
    }
    Ok(Refreshed::Written)
}

/// A path argument where "" means none (`--node-file-copy ""`): clap's own
/// path parser refuses an empty value.
pub fn path_or_none(s: &str) -> Result<std::path::PathBuf, std::convert::Infallible> {
    Ok(std::path::PathBuf::from(s))
}

/// The node file text: from `plan.json` if the ConfigMap has it, else the
/// node's own key (the per-node form earlier releases wrote). `dir` may
/// also be the ConfigMap as `kubectl get -o yaml` writes it (a file).
pub fn node_file_from(dir: &Path, node: &str) -> Result<String, Usage> {
    if dir.is_file() {
        return node_file_from_manifest(dir, node);
    }
    let plan = dir.join(PLAN_KEY);
    match std::fs::read_to_string(&plan) {
        Ok(text) => Plan::parse(&text)
            .and_then(|p| p.resolve_for(Some(node)))
            .and_then(|r| r.node_file_text(node))
            .map_err(|e| {
                Usage(format!(
                    "the plan in {} gives node {node} no node file: {e}",
                    plan.display()
                ))
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = dir.join(format!("{node}.json"));
            std::fs::read_to_string(&key).map_err(|e| {
                Usage(format!(
                    "the plan has no entry for node {node} (neither {} nor {}: {e}); add the node to the plan \
                     and re-apply the ConfigMap",
                    plan.display(),
                    key.display()
                ))
            })
        }
        Err(e) => Err(Usage(format!("cannot read {}: {e}", plan.display()))),
    }
}

/// This node's node file from the ConfigMap as a manifest (`kubectl get
/// configmap railcni-plan -o yaml`, or `railcnictl plan --emit configmap`).
fn node_file_from_manifest(file: &Path, node: &str) -> Result<String, Usage> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Usage(format!("cannot read {}: {e}", file.display())))?;
    let manifest: serde_json::Value = serde_yaml_ng::from_str(&text).map_err(|e| {
        Usage(format!(
            "{} is not a ConfigMap manifest: {e}",
            file.display()
        ))
    })?;
    let plan = manifest.pointer(&format!("/data/{}", PLAN_KEY.replace('/', "~1")));
    let plan = plan.and_then(serde_json::Value::as_str).ok_or_else(|| {
        Usage(format!(
            "{} has no data.{PLAN_KEY}: is it the railcni-plan ConfigMap (`kubectl -n kube-system get configmap \
             railcni-plan -o yaml`)?",
            file.display()
        ))
    })?;
    Plan::parse(plan)
        .and_then(|p| p.resolve_for(Some(node)))
        .and_then(|r| r.node_file_text(node))
        .map_err(|e| {
            Usage(format!(
                "the plan in {} gives node {node} no node file: {e}",
                file.display()
            ))
        })
}

/// A rail whose prefix changes while pods hold leases on it would move
/// their addresses: refused, naming rail, prefixes and lease count.
fn no_leased_prefix_moves(
    old: &NodeFile,
    new: &NodeFile,
    settings: &Settings,
) -> Result<(), Usage> {
    let held = railcni_ipam::stores(settings);
    for (rail, was) in &old.networks {
        let was = &was.prefix;
        let now = new.networks.get(rail).map(|n| &n.prefix);
        let moved = now.is_none_or(|n| n.prefix != was.prefix || n.prefix6 != was.prefix6);
        let leases = (held.iter())
            .find(|v| &v.network == rail)
            .and_then(|v| v.leases.as_ref().ok())
            .map_or(0, |l| l.leases.len());
        if moved && leases > 0 {
            let to = now.map_or("nothing".to_string(), |n| n.prefix.to_string());
            return Err(Usage(format!(
                "not changing the node file: rail {rail}'s prefix would move from {} to {to} while {leases} \
                 pod(s) hold addresses in it; keep the node's index, or drain the node first",
                was.prefix
            )));
        }
    }
    Ok(())
}

fn write(target: &Path, text: &str) -> Result<(), Usage> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Usage(format!("cannot create {}: {e}", parent.display())))?;
    }
    files::write_atomic(target, text.as_bytes())
        .map_err(|e| Usage(format!("cannot write {}: {e}", target.display())))
}
