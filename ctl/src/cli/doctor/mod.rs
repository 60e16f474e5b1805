//! `railcnictl doctor`: the node checked link by link, in the order a pod's
//! rails depend on them (kernel, NICs and VFs, RDMA, the CNI binaries and
//! files, Multus, host settings), read-only. Each link is one `Finding`; the
//! first broken one is named with the one thing to do about it.

mod admitted;
mod cni_files;
mod finding;
mod host;
mod kernel;
mod place;
mod rails;
mod rdma;
mod roce_qos;

pub use finding::{Finding, Verdict};
pub use place::Where;
use place::{CNI_BIN_DIR, CNI_CONF_DIR, HOST_ROOT, HOST_ROOT_VAR};

use std::path::PathBuf;

use base::Settings;
use serde::Serialize;

use super::table;
use crate::cli::outcome::{emit, Outcome, Usage};

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

/// Every link, in chain order.
pub fn findings(w: &Where) -> Vec<Finding> {
    let rails = rails::expected(w);
    let mut out = vec![kernel::iommu(w, rails.iter().any(|r| r.dpdk))];
    // Read once for every rail's free VFs and its namespace rule.
    let records = railcni::state::AttachmentStore::new(&w.settings)
        .list()
        .unwrap_or_default();
    let held: Vec<String> = records.iter().map(|r| r.pci.clone()).collect();
    for rail in &rails {
        out.extend(rails::findings(w, rail, &held));
    }
    out.extend(rdma::findings(w, &rails));
    out.extend(roce_qos::findings(&rails));
    out.extend(admitted::findings(w, &records));
    out.push(kernel::netns_identity(&records));
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
