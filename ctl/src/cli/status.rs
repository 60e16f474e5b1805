//! `railcnictl status`: networks, leases and attachments on this node, joined,
//! and the problems an operator must act on, each with the command that fixes it.

use super::records::{address_of, judged, pod_of};
use std::collections::BTreeSet;

use base::node_file::NodeFile;
use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};
use railcni::attachment::detach::{holder_of, Holder};
use railcni::attachment::reattach::{locate, Reattach};
use railcni::state::Record;
use railcni_ipam::StoreView;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub node: String,
    pub networks: Vec<Network>,
    pub attachments: Vec<AttachmentRow>,
    pub problems: Vec<Problem>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    pub name: String,
    pub prefix: Option<String>,
    pub gateway: Option<String>,
    pub capacity: Option<usize>,
    /// `pf <name>` when the prefix is the PF's subnet (`matchMasterSubnet`).
    pub source: Option<String>,
    pub leased: usize,
    pub free: Option<usize>,
    pub lease_file: String,
    pub leases: Vec<LeaseRow>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRow {
    pub address: String,
    /// A dual-stack rail's IPv6 address, in the same lease.
    pub address6: Option<String>,
    pub pod: Option<String>,
    pub pod_uid: Option<String>,
    pub container_id: String,
    pub ifname: String,
    pub netns: Option<String>,
    /// `None` when the lease carries no proof to judge by.
    pub netns_alive: Option<bool>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentRow {
    pub network: String,
    pub vf: String,
    pub pf: Option<String>,
    /// A whole-NIC rail: `vf` is a PF moved into the pod itself.
    pub whole_nic: bool,
    pub host_name: String,
    pub ifname: String,
    pub container_id: String,
    pub pod: Option<String>,
    pub address: Option<String>,
    pub netns: Option<String>,
    pub netns_alive: bool,
    pub table: Option<u32>,
    pub priority: Option<u32>,
    pub rdma_device: Option<String>,
    /// The state of its port that carries the VF (`ACTIVE`, `INIT`).
    pub rdma_port_state: Option<String>,
    /// The PF-side settings ADD applied (the fields it saved originals of).
    pub vf_settings: Vec<String>,
    /// `adding` (interrupted or in progress) or `attached`.
    pub phase: String,
    /// Where the VF is: `in_place` (in its pod), `gone` (a driver reload
    /// took it and it has not come back), `reattached` (back on the host,
    /// waiting to be re-attached to its pod), `home` (on the host after a
    /// detach that has yet to finish), `released` (its pod is gone).
    pub vf_state: String,
    /// How often a driver reload tore the VF out and it was re-attached.
    pub reattached: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub kind: String,
    pub detail: String,
    pub fix: String,
}

pub fn run(settings: &Settings, network: Option<&str>, json: bool) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let report = build(settings, &state, network);
    emit(&report, json, print);
    Ok(Outcome::found(!report.problems.is_empty()))
}

pub fn build(settings: &Settings, state: &NodeState, only: Option<&str>) -> Report {
    let wanted = |n: &str| only.is_none_or(|o| o == n);
    let sysfs = railcni::vf::Sysfs::new(&settings.sysfs_root);
    let mut problems = Vec::new();
    let networks: Vec<Network> = state
        .stores
        .iter()
        .filter(|v| wanted(&v.network))
        .map(|view| network_row(state, view, &mut problems))
        .collect();
    let leased: BTreeSet<_> = networks
        .iter()
        .flat_map(|n| {
            n.leases
                .iter()
                .map(|l| key(&n.name, &l.container_id, &l.ifname))
        })
        .collect();
    let node = railcni::node::Node::new(settings.clone()).ok();
    let attachments = state
        .records
        .iter()
        .filter(|r| wanted(&r.network))
        .map(|r| {
            problems.extend(record_problems(state, node.as_ref(), r, &leased));
            let placed = node.as_ref().and_then(|node| locate(node, r).ok());
            problems.extend(placement_problem(r, placed));
            problems.extend(rule_problem(&state.node_file, r));
            let mut row = attachment_row(&sysfs, state, r);
            problems.extend(port_problem(&row));
            row.vf_state = placed.map_or("unknown", Reattach::name).to_string();
            row
        })
        .collect();
    problems.extend(unclaimed_leases(state, &networks));
    Report {
        node: state.node.clone(),
        networks,
        attachments,
        problems,
    }
}

type Key = (String, String, String);

fn key(network: &str, container_id: &str, ifname: &str) -> Key {
    (network.into(), container_id.into(), ifname.into())
}

/// One pool and its leases; an unreadable lease file is a problem.
fn network_row(state: &NodeState, view: &StoreView, problems: &mut Vec<Problem>) -> Network {
    let mut row = Network {
        name: view.network.clone(),
        prefix: None,
        gateway: None,
        capacity: None,
        source: None,
        leased: 0,
        free: None,
        lease_file: view.path.display().to_string(),
        leases: Vec::new(),
    };
    let data = match &view.leases {
        Ok(data) => data,
        Err(e) => {
            problems.push(Problem {
                kind: "lease-file-unreadable".into(),
                detail: format!("{}: {e}", view.network),
                fix: unreadable_fix(e, &view.network, &view.path),
            });
            return row;
        }
    };
    row.leases = data
        .leases
        .iter()
        .map(|l| LeaseRow {
            address: l.address.to_string(),
            address6: l.address6.map(|a| a.to_string()),
            pod: pod_of(l.pod_namespace.as_deref(), l.pod_name.as_deref()),
            pod_uid: l.pod_uid.clone(),
            container_id: l.container_id.clone(),
            ifname: l.ifname.clone(),
            netns: l.proof.netns.clone(),
            netns_alive: judged(&l.proof, state.boot.as_deref()),
        })
        .collect();
    if let Some(pool) = &data.pool {
        row.prefix = Some(pool.prefix.to_string());
        row.gateway = pool.gateway.map(|g| g.to_string());
        row.capacity = Some(pool.capacity);
        row.source = pool.source.clone();
        row.free = Some(pool.capacity.saturating_sub(row.leases.len()));
    }
    row.leased = row.leases.len();
    row
}

/// What to do about a lease file that cannot be read, by why: a file
/// that does not verify is rebuilt from the records; one the system will
/// not let railcni read is not damaged, and repair would overwrite it.
fn unreadable_fix(e: &railcni_ipam::IpamError, network: &str, path: &std::path::Path) -> String {
    use railcni_ipam::IpamError;
    match e {
        IpamError::Corrupt(_) => railcni_ipam::repair_command(network),
        IpamError::Spec(cni::Error::Io(io)) => match io.advice() {
            Some(advice) => format!(
                "{} ({}; nothing to repair: the file may be intact)",
                advice,
                path.display()
            ),
            None => format!("look at {} ({io})", path.display()),
        },
        _ => format!("look at {}", path.display()),
    }
}

/// A record whose pod is gone, or that holds no lease in the embedded store.
fn record_problems(
    state: &NodeState,
    node: Option<&railcni::node::Node>,
    r: &Record,
    leased: &BTreeSet<Key>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let alive = state.alive(r);
    if !alive {
        let holder = node.and_then(|n| holder_of(n, r).ok());
        out.push(gone_problem(r, holder.unwrap_or(Holder::Nobody)));
    }
    let embedded = r.ipam_type.as_deref() == Some(railcni::config::EMBEDDED_IPAM);
    let held = leased.contains(&key(&r.network, &r.container_id, &r.ifname));
    // A gone pod's lease may rightly have been reclaimed by a new pod: its
    // one fix is gc (said above), never a repair that would lease it again.
    if alive && embedded && !held && readable(state, &r.network) {
        let address = address_of(r)
            .map(|a| format!(" for {a}"))
            .unwrap_or_default();
        out.push(Problem {
            kind: "attachment-without-lease".into(),
            detail: format!(
                "VF {} ({} {} of {}) holds no lease{address}",
                r.pci, r.network, r.ifname, r.container_id
            ),
            fix: railcni_ipam::repair_command(&r.network),
        });
    }
    out
}

/// A record whose namespace path is gone, by who still holds its VF.
fn gone_problem(r: &Record, holder: Holder) -> Problem {
    let what = format!(
        "VF {} ({} {}) was attached to {}, which is gone",
        r.pci,
        r.network,
        r.ifname,
        r.netns().unwrap_or("?")
    );
    match holder {
        Holder::Nobody => Problem {
            kind: "netns-gone".into(),
            detail: what,
            fix: "railcnictl gc --apply".into(),
        },
        Holder::Process(pid) => Problem {
            kind: "netns-held".into(),
            detail: format!(
                "{what}, but process {pid} is still in its namespace, with the VF and its address"
            ),
            fix: format!(
                "let process {pid} end (or kill it), then railcnictl gc --apply; or railcnictl gc --apply now to take the VF back from it"
            ),
        },
        Holder::OutOfReach => Problem {
            kind: "netns-unreachable".into(),
            detail: format!(
                "{what}; the VF is not home: a namespace railcni cannot reach (an open descriptor or a bind mount elsewhere) still holds it, and its address stays leased"
            ),
            fix: "find what holds the namespace (lsns -t net; ls -l /proc/*/fd | grep net:) and end it; the agent's gc then gives the VF and its address back".into(),
        },
    }
}

/// An attachment the rail's namespace rule, added or changed since, would
/// refuse now.
fn rule_problem(node_file: &NodeFile, r: &Record) -> Option<Problem> {
    let why = railcni::policy::outside_namespace_rule(node_file, &r.network, r.pod.as_deref())?;
    Some(Problem {
        kind: "namespace-not-admitted".into(),
        detail: format!("VF {} ({} {}): {why}", r.pci, r.network, r.ifname),
        fix: format!(
            "it keeps working until its pod ends; move the pod to an admitted namespace, or add its namespace to \
             rail {}'s allow.namespaces in the plan",
            r.network
        ),
    })
}

/// A VF a driver reload tore out of its live pod.
fn placement_problem(r: &Record, placed: Option<Reattach>) -> Option<Problem> {
    let what = format!(
        "VF {} ({} {} of {})",
        r.pci,
        r.network,
        r.ifname,
        r.pod.as_deref().unwrap_or(&r.container_id)
    );
    match placed? {
        Reattach::Gone => Some(Problem {
            kind: "vf-gone".into(),
            detail: format!("{what} is no longer in its pod and not back on the host: its PF's driver was reloaded or the VF removed"),
            fix: "wait for the VF to come back (sriov_numvfs); railcnictl agent then re-attaches it".into(),
        }),
        Reattach::Reattached => Some(Problem {
            kind: "vf-out-of-pod".into(),
            detail: format!("{what} is back on the host after a driver reload, not in its pod"),
            fix: "railcnictl gc --apply (the agent does it by itself)".into(),
        }),
        _ => None,
    }
}

fn attachment_row(sysfs: &railcni::vf::Sysfs, state: &NodeState, r: &Record) -> AttachmentRow {
    AttachmentRow {
        network: r.network.clone(),
        vf: r.pci.clone(),
        pf: sysfs.resolve(&r.pci).ok().and_then(|v| v.pf_netdev),
        whole_nic: r.whole_nic,
        host_name: r.host.name.clone(),
        ifname: r.ifname.clone(),
        container_id: r.container_id.clone(),
        pod: r.pod.clone(),
        address: address_of(r),
        netns: r.netns().map(str::to_string),
        netns_alive: state.alive(r),
        table: r.routing.as_ref().map(|p| p.table),
        priority: r.routing.as_ref().map(|p| p.priority),
        rdma_device: r.rdma_device.clone(),
        rdma_port_state: state_alive_port(sysfs, state, r).map(|p| p.word),
        vf_settings: r
            .vf_restore
            .as_ref()
            .map(|s| s.field_names())
            .unwrap_or_default(),
        phase: format!("{:?}", r.phase).to_lowercase(),
        vf_state: String::new(),
        reattached: r.reattached,
    }
}

/// The port state of a live pod's RDMA device.
fn state_alive_port(
    sysfs: &railcni::vf::Sysfs,
    state: &NodeState,
    r: &Record,
) -> Option<railcni::net::ib_port::PortState> {
    state
        .alive(r)
        .then(|| railcni::attachment::verify::rdma_port_state(sysfs, r))
        .flatten()
}

/// A live pod's RDMA port that is not ACTIVE: its rail carries no RDMA.
fn port_problem(row: &AttachmentRow) -> Option<Problem> {
    let (device, state) = (row.rdma_device.as_ref()?, row.rdma_port_state.as_ref()?);
    (state != "ACTIVE").then(|| Problem {
        kind: "rdma-port-not-active".into(),
        detail: format!(
            "{} of {} on {}: RDMA device {device}'s port is {state}, not ACTIVE; NCCL's QP setup over \
             it fails",
            row.ifname, row.container_id, row.network
        ),
        fix: "InfiniBand: the subnet manager has not brought the port up (check `ibstat` and the SM's \
              log: a GUID it does not know, a partition it was not given); RoCE: the VF's link is down \
              (`ip link`, the switch port)"
            .into(),
    })
}

/// Leases no record claims. Leases of other plugins using railcni-ipam have
/// no record; they are flagged only when their holder is gone or railcni
/// attaches on that network.
fn unclaimed_leases(state: &NodeState, networks: &[Network]) -> Vec<Problem> {
    let attached: BTreeSet<Key> = state
        .records
        .iter()
        .map(|r| key(&r.network, &r.container_id, &r.ifname))
        .collect();
    let railcni_networks: BTreeSet<&str> =
        state.records.iter().map(|r| r.network.as_str()).collect();
    let mut out = Vec::new();
    for n in networks {
        for l in &n.leases {
            let suspicious =
                l.netns_alive == Some(false) || railcni_networks.contains(n.name.as_str());
            if attached.contains(&key(&n.name, &l.container_id, &l.ifname)) || !suspicious {
                continue;
            }
            let holder = match l.netns_alive {
                Some(false) => "its netns is gone",
                Some(true) => "its netns is alive",
                None => "no proof of its holder",
            };
            out.push(Problem {
                kind: "lease-without-attachment".into(),
                detail: format!(
                    "{} on {} is leased to {} {} ({holder}) with no attachment",
                    l.address, n.name, l.container_id, l.ifname
                ),
                fix: "railcnictl gc --apply".into(),
            });
        }
    }
    out
}

/// Whether the network's leases can be judged: its file reads, or it has
/// none (then a missing lease is a real finding, not a side effect of a
/// corrupt file, which is reported on its own).
fn readable(state: &NodeState, network: &str) -> bool {
    state
        .stores
        .iter()
        .find(|v| v.network == network)
        .is_none_or(|v| v.leases.is_ok())
}

fn print(r: &Report) {
    println!("node {}", r.node);
    let mut t = table::new(&["NETWORK", "PREFIX", "GATEWAY", "LEASED", "FREE", "CAPACITY"]);
    for n in &r.networks {
        let prefix = match (&n.prefix, &n.source) {
            (Some(p), Some(source)) => Some(format!("{p} ({source})")),
            (p, _) => p.clone(),
        };
        t.add_row(vec![
            n.name.clone(),
            or_dash(prefix.as_ref()),
            or_dash(n.gateway.as_ref()),
            n.leased.to_string(),
            or_dash(n.free),
            or_dash(n.capacity),
        ]);
    }
    println!("{t}");
    let t = attachments_table(r);
    if t.row_count() > 0 {
        println!("\n{t}");
    }
    if r.problems.is_empty() {
        println!("\nno problems");
    } else {
        println!("\nproblems:");
        for p in &r.problems {
            println!("  {}: {}\n    fix: {}", p.kind, p.detail, p.fix);
        }
    }
}

/// One row per attachment, with its lease; then leases no record claims.
fn attachments_table(r: &Report) -> comfy_table::Table {
    let mut t = table::new(&[
        "NETWORK", "IF", "ADDRESS", "POD", "VF", "DEV", "TABLE", "RDMA", "NETNS",
    ]);
    for a in &r.attachments {
        t.add_row(vec![
            a.network.clone(),
            a.ifname.clone(),
            or_dash(a.address.as_ref()),
            a.pod.clone().unwrap_or_else(|| short(&a.container_id)),
            a.vf.clone(),
            match a.whole_nic {
                true => format!("{} (whole PF)", a.host_name),
                false => format!("{}@{}", a.host_name, or_dash(a.pf.as_ref())),
            },
            or_dash(a.table),
            match (&a.rdma_device, &a.rdma_port_state) {
                (Some(d), Some(p)) => format!("{d} {p}"),
                (d, _) => or_dash(d.as_ref()),
            },
            if a.netns_alive { "alive" } else { "GONE" }.to_string(),
        ]);
    }
    for n in &r.networks {
        for l in &n.leases {
            let claimed = r.attachments.iter().any(|a| {
                a.network == n.name && a.container_id == l.container_id && a.ifname == l.ifname
            });
            if claimed {
                continue;
            }
            let alive = match l.netns_alive {
                Some(true) => "alive",
                Some(false) => "GONE",
                None => "?",
            };
            let pod = l.pod.clone().unwrap_or_else(|| short(&l.container_id));
            let mut row = vec![n.name.clone(), l.ifname.clone(), l.address.clone(), pod];
            row.extend(["-"; 4].map(String::from));
            row.push(alive.to_string());
            t.add_row(row);
        }
    }
    t
}

/// A container ID, shortened as runtimes print it.
fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fix follows the cause: a file the system will not let railcni
    /// read is not damaged, and repair would overwrite it.
    #[test]
    fn an_unreadable_lease_file_gets_the_fix_of_its_cause() {
        let path = std::path::Path::new("/var/lib/cni/railcni/ipam/rail1.leases.json");
        let denied = std::io::Error::from_raw_os_error(nix::libc::EACCES);
        let e = railcni_ipam::IpamError::io("cannot read lease file", &denied);
        let fix = unreadable_fix(&e, "rail1", path);
        assert!(
            fix.contains("permission denied") && fix.contains("owner and mode"),
            "{fix}"
        );
        assert!(!fix.contains("repair rail1"), "{fix}");
        let corrupt = railcni_ipam::IpamError::Corrupt("checksum".into());
        assert_eq!(
            unreadable_fix(&corrupt, "rail1", path),
            "railcnictl ipam repair rail1"
        );
    }
}
