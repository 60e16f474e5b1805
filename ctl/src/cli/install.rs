//! `railcnictl install`: what the installer DaemonSet (and scripts/install.sh)
//! runs on each node. Copies the binaries into the host's CNI bin dir
//! without clobbering a running one (a new file renamed over the old: a
//! process still running the old binary keeps its inode), and writes this
//! node's node file, computed from the mounted plan ConfigMap
//! (`plan_dir`), `nodeName` included, so the plugin never guesses the node
//! from the host name.

use std::path::{Path, PathBuf};

use base::{files, Settings};
use serde::Serialize;

use super::plan_dir::{self, Targets};
use crate::cli::outcome::{emit, Outcome, Usage};

#[derive(clap::Args)]
pub struct Args {
    /// The host's CNI bin dir.
    #[arg(long, default_value = "/opt/cni/bin")]
    pub bin_dir: PathBuf,
    /// Where railcni and railcni-ipam are; default: beside this binary.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// The mounted plan ConfigMap: plan.json (this node's file is computed
    /// from it), or one <node>.json per node from an earlier release; or
    /// the ConfigMap as `kubectl get configmap railcni-plan -o yaml` writes it.
    #[arg(long)]
    pub plan_dir: Option<PathBuf>,
    /// This node; default: $NODE_NAME (downward API spec.nodeName).
    #[arg(long)]
    pub node: Option<String>,
    /// Where the node file goes.
    #[arg(long, default_value = "/etc/cni/railcni/node.json")]
    pub node_file: PathBuf,
    /// A second copy of the node file, where a CNI caller that sees only the
    /// host's /opt/cni/bin, /var/lib/cni and /var/run/netns finds it
    /// (dra-driver-sriov's container); "" for none.
    #[arg(long, default_value = "/var/lib/cni/railcni/node.json", value_parser = plan_dir::path_or_none)]
    pub node_file_copy: PathBuf,
    /// Stay running after installing (the DaemonSet's container).
    #[arg(long)]
    pub sleep: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    binaries: Vec<Installed>,
    node_file: Option<String>,
    node_file_copy: Option<String>,
    node: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Installed {
    path: String,
    /// `installed` or `unchanged`.
    action: String,
}

const BINARIES: &[&str] = &["railcni", "railcni-ipam"];

pub fn run(args: Args) -> Result<Outcome, Usage> {
    let from = match &args.from {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .ok_or_else(|| Usage("cannot tell where the binaries are; pass --from DIR".into()))?,
    };
    let binaries = install_binaries(&from, &args.bin_dir)?;
    let node = args
        .node
        .clone()
        .or_else(|| std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()));
    let settings = Settings::from_env();
    let copy =
        (!args.node_file_copy.as_os_str().is_empty()).then_some(args.node_file_copy.as_path());
    let refreshed = match &args.plan_dir {
        Some(dir) => {
            let node = node.as_deref().ok_or_else(|| {
                Usage("which node is this? set NODE_NAME (the downward API's spec.nodeName) or --node".into())
            })?;
            let to = Targets {
                node_file: &args.node_file,
                copy,
            };
            Some(plan_dir::refresh(dir, node, &to, &settings)?)
        }
        None => None,
    };
    let report = Report {
        binaries,
        node_file: refreshed
            .as_ref()
            .map(|_| args.node_file.display().to_string()),
        node_file_copy: refreshed.and(copy).map(|p| p.display().to_string()),
        node,
    };
    emit(&report, args.json, |r| {
        for b in &r.binaries {
            println!("{} {}", b.action, b.path);
        }
        for f in r.node_file.iter().chain(&r.node_file_copy) {
            println!("wrote {f} for node {}", r.node.as_deref().unwrap_or("?"));
        }
    });
    if args.sleep {
        // The DaemonSet's container stays up; a restart re-installs.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    Ok(Outcome::Clean)
}

/// Copy the binaries from `from` into `bin_dir`, atomically, skipping
/// those already identical.
fn install_binaries(from: &Path, bin_dir: &Path) -> Result<Vec<Installed>, Usage> {
    std::fs::create_dir_all(bin_dir)
        .map_err(|e| Usage(format!("cannot create {}: {e}", bin_dir.display())))?;
    let mut binaries = Vec::new();
    for name in BINARIES {
        let source = from.join(name);
        let bytes = std::fs::read(&source)
            .map_err(|e| Usage(format!("cannot read {}: {e}", source.display())))?;
        let target = bin_dir.join(name);
        let unchanged = std::fs::read(&target).is_ok_and(|old| old == bytes);
        if !unchanged {
            // Never in place without its execute bits, never half-written.
            files::write_atomic_mode(&target, &bytes, 0o755)
                .map_err(|e| Usage(format!("cannot install {}: {e}", target.display())))?;
        }
        binaries.push(Installed {
            path: target.display().to_string(),
            action: if unchanged { "unchanged" } else { "installed" }.into(),
        });
    }
    Ok(binaries)
}
