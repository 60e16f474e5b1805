//! `railcnictl doctor`: the node checked link by link, in the order a pod's
//! rails depend on them (kernel, NICs and VFs, RDMA, the CNI binaries and
//! files, Multus, host settings), read-only. Each link is one `Finding`; the
//! first broken one is named with the one thing to do about it.

mod cni_files;
mod host;
mod kernel;
mod rails;
mod rdma;

use std::path::{Path, PathBuf};

use base::Settings;
use railcni_ipam::config::NodeFile;
use serde::Serialize;

use super::{emit, table, Outcome, Usage};

/// The doctor's defaults, for a person's run and the agent's alike.
const CNI_BIN_DIR: &str = "/opt/cni/bin";
const CNI_CONF_DIR: &str = "/etc/cni/net.d";
const HOST_ROOT_VAR: &str = "RAILCNI_HOST_ROOT";
const HOST_ROOT: &str = "/";

#[derive(clap::Args)]
pub struct Args {
    /// Check the node against this plan (JSON or YAML) instead of the node file.
    #[arg(long, conflicts_with = "node_file")]
    plan: Option<PathBuf>,
    /// The node file to check against (default: RAILCNI_NODE_CONFIG, /etc/cni/railcni/node.json).
    #[arg(long)]
    node_file: Option<PathBuf>,
    /// Where the CNI plugins are installed.
    #[arg(long, default_value = CNI_BIN_DIR, value_name = "DIR")]
    cni_bin_dir: PathBuf,
    /// Where the CNI network configs (Multus's) are.
    #[arg(long, default_value = CNI_CONF_DIR, value_name = "DIR")]
    cni_conf_dir: PathBuf,
    /// The host's root as this process sees it (`/host` in a container that
    /// mounts it): /proc/cmdline, /etc/modprobe.d and /proc/sys are read under it.
    #[arg(long, env = HOST_ROOT_VAR, default_value = HOST_ROOT, value_name = "DIR")]
    host_root: PathBuf,
    #[arg(long)]
    json: bool,
}

/// A link of the chain: holds, is broken, or does not apply here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Broken,
    Skipped,
}

impl Verdict {
    fn mark(self) -> &'static str {
        match self {
            Verdict::Ok => "✓",
            Verdict::Broken => "✗",
            Verdict::Skipped => "–",
        }
    }

    /// As the metric's `result` label says it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Broken => "broken",
            Verdict::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable name: `kernel/iommu`, `rail1/pf-link`, `cni/railcni`, ...
    pub check: String,
    pub result: Verdict,
    pub found: String,
    pub expected: String,
    /// For a broken link: the one thing to do, naming the command or file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub fn ok(check: impl Into<String>, found: impl Into<String>, expected: &str) -> Self {
        Finding::new(check, Verdict::Ok, found, expected, None)
    }

    pub fn skipped(check: impl Into<String>, found: impl Into<String>, expected: &str) -> Self {
        Finding::new(check, Verdict::Skipped, found, expected, None)
    }

    /// Not needed for pods to attach here, but worth knowing: shown as –,
    /// with what to do should it become needed.
    pub fn advice(
        check: impl Into<String>,
        found: impl Into<String>,
        expected: &str,
        fix: impl Into<String>,
    ) -> Self {
        Finding::new(check, Verdict::Skipped, found, expected, Some(fix.into()))
    }

    pub fn broken(
        check: impl Into<String>,
        found: impl Into<String>,
        expected: &str,
        fix: impl Into<String>,
    ) -> Self {
        Finding::new(check, Verdict::Broken, found, expected, Some(fix.into()))
    }

    fn new(
        check: impl Into<String>,
        result: Verdict,
        found: impl Into<String>,
        expected: &str,
        fix: Option<String>,
    ) -> Self {
        Finding {
            check: check.into(),
            result,
            found: found.into(),
            expected: expected.to_string(),
            fix,
        }
    }
}

/// Where the checks look.
pub struct Where {
    pub settings: Settings,
    pub sysfs: PathBuf,
    pub host_root: PathBuf,
    pub cni_bin_dir: PathBuf,
    pub cni_conf_dir: PathBuf,
    /// What the node is checked against, and where it came from.
    pub expected: Result<NodeFile, String>,
    pub source: String,
    pub node: String,
}

impl Where {
    /// The defaults the agent uses: the node file, the usual CNI dirs.
    pub fn defaults(settings: &Settings) -> Self {
        let host_root =
            std::env::var_os(HOST_ROOT_VAR).map_or_else(|| HOST_ROOT.into(), Into::into);
        Where::new(
            settings,
            None,
            None,
            CNI_BIN_DIR.into(),
            CNI_CONF_DIR.into(),
            host_root,
        )
    }

    fn new(
        settings: &Settings,
        plan: Option<&Path>,
        node_file: Option<PathBuf>,
        cni_bin_dir: PathBuf,
        cni_conf_dir: PathBuf,
        host_root: PathBuf,
    ) -> Self {
        let mut settings = settings.clone();
        if let Some(file) = node_file {
            settings.node_config = file;
        }
        let node = NodeFile::load(&settings.node_config)
            .unwrap_or_default()
            .node_name(&settings)
            .unwrap_or_else(|| "?".into());
        let (expected, source) = match plan {
            Some(plan) => (
                expected_from_plan(plan, &node),
                format!("plan {}", plan.display()),
            ),
            None => (
                cni_files::read_node_file(&settings.node_config),
                format!("node file {}", settings.node_config.display()),
            ),
        };
        Where {
            sysfs: settings.sysfs_root.clone(),
            settings,
            host_root,
            cni_bin_dir,
            cni_conf_dir,
            expected,
            source,
            node,
        }
    }

    /// A file of the host, under `--host-root`.
    pub fn host_path(&self, path: &str) -> PathBuf {
        self.host_root.join(path.trim_start_matches('/'))
    }
}

/// This node's node file as the plan would make it.
fn expected_from_plan(plan: &Path, node: &str) -> Result<NodeFile, String> {
    let text = std::fs::read_to_string(plan)
        .map_err(|e| format!("cannot read {}: {e}", plan.display()))?;
    let resolved = crate::fabric::Plan::parse(&text)
        .and_then(crate::fabric::Plan::resolve)
        .map_err(|e| e.to_string())?;
    let file = resolved.node_file(node).map_err(|e| e.to_string())?;
    NodeFile::parse(file.to_string().as_bytes())
}

/// Every link, in chain order.
pub fn findings(w: &Where) -> Vec<Finding> {
    let rails = rails::expected(w);
    let mut out = vec![kernel::iommu(w, rails.iter().any(|r| r.dpdk))];
    // Read once for every rail's free VFs.
    let held: Vec<String> = railcni::state::AttachmentStore::new(&w.settings)
        .list()
        .map(|records| records.into_iter().map(|r| r.pci).collect())
        .unwrap_or_default();
    for rail in &rails {
        out.extend(rails::check(w, rail, &held));
    }
    out.extend(rdma::findings(w, &rails));
    out.extend(cni_files::findings(w));
    out.extend(host::multus(w));
    for rail in &rails {
        out.extend(host::rp_filter(w, rail));
    }
    out
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    node: String,
    checked_against: String,
    healthy: bool,
    checks: Vec<Finding>,
    first_broken: Option<Finding>,
}

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    let w = Where::new(
        settings,
        args.plan.as_deref(),
        args.node_file.clone(),
        args.cni_bin_dir.clone(),
        args.cni_conf_dir.clone(),
        args.host_root.clone(),
    );
    if let (Some(plan), Err(why)) = (&args.plan, &w.expected) {
        return Err(Usage(format!("plan {}: {why}", plan.display())));
    }
    let checks = findings(&w);
    let first_broken = checks.iter().find(|c| c.result == Verdict::Broken).cloned();
    let report = Report {
        node: w.node.clone(),
        checked_against: w.source.clone(),
        healthy: first_broken.is_none(),
        checks,
        first_broken,
    };
    emit(&report, args.json, print);
    Ok(Outcome::found(!report.healthy))
}

fn print(r: &Report) {
    println!("node {}, checked against the {}", r.node, r.checked_against);
    let mut t = table::new(&["", "CHECK", "FOUND", "EXPECTED"]);
    for c in &r.checks {
        t.add_row([c.result.mark(), &c.check, &c.found, &c.expected]);
    }
    println!("{t}");
    match &r.first_broken {
        None => println!("\nevery link holds"),
        Some(c) => {
            println!("\nfirst broken link: {}: {}", c.check, c.found);
            if let Some(fix) = &c.fix {
                println!("fix: {fix}");
            }
        }
    }
}
