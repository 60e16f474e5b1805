//! `railcnictl gc`: reconcile this node without a runtime's help. Attachments
//! whose pod is provably gone are detached (the same detach DEL uses);
//! leases whose holder is gone and that no attachment claims are released.
//! A VF a PF driver reload tore out of a live pod and that is back on the
//! host is re-attached to its pod (what the agent does by itself). Nothing
//! else whose namespace is alive is touched. Without `--apply` it only
//! says what it would do.

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::records::judged;
use crate::cli::outcome::{emit, Outcome, Usage};
use railcni::attachment::detach::{detach, Attachment, Pod, Release};
use railcni::attachment::reattach::{locate, reattach, Reattach};
use railcni::node::Node;
use railcni::state::Record;
use railcni_ipam::store::Lease;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub applied: bool,
    pub actions: Vec<Action>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// `detach`, `release` or `reattach`.
    pub action: String,
    pub network: String,
    pub container_id: String,
    pub ifname: String,
    pub what: String,
    /// `planned`, `done`, or the error.
    pub result: String,
}

pub fn run(settings: &Settings, apply: bool, json: bool) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let node = Node::new(settings.clone())
        .map_err(|e| Usage(format!("cannot open this node's network namespace: {e}")))?;
    let report = reconcile(&state, &node, apply)?;
    emit(&report, json, print);
    let unsettled = report.actions.iter().any(|a| a.result != "done");
    Ok(Outcome::found(unsettled))
}

/// What gc does (or, without `apply`, would do) on this node.
pub fn reconcile(state: &NodeState, node: &Node, apply: bool) -> Result<Report, Usage> {
    let dead: Vec<&Record> = state.records.iter().filter(|r| !state.alive(r)).collect();
    let mut actions: Vec<Action> = dead
        .iter()
        .map(|r| Action {
            action: "detach".into(),
            network: r.network.clone(),
            container_id: r.container_id.clone(),
            ifname: r.ifname.clone(),
            what: format!("VF {} from {}", r.pci, r.netns().unwrap_or("?")),
            result: if apply {
                detach_dead(node, r).map_or_else(|e| e, |()| "done".into())
            } else {
                "planned".into()
            },
        })
        .collect();
    actions.extend(reattachments(state, node, apply));
    actions.extend(orphaned_leases(state, &dead).map(|(network, l)| Action {
        action: "release".into(),
        network: network.to_string(),
        container_id: l.container_id.clone(),
        ifname: l.ifname.clone(),
        what: format!("{} (its holder is gone)", l.address),
        result: if apply {
            railcni_ipam::release_lease(&node.settings, network, &l.container_id, &l.ifname)
                .map_or_else(|e| e.to_string(), |_| "done".into())
        } else {
            "planned".into()
        },
    }));
    count_reclaimed(state, node, &actions);
    if apply {
        for a in &actions {
            let _ =
                base::stats::record_gc(&node.settings, &a.network, &a.action, a.result == "done");
        }
    }
    Ok(Report {
        applied: apply,
        actions,
    })
}

/// VFs a driver reload tore out of a live pod and that are back on the
/// host: re-attach it (what the agent does by itself).
fn reattachments(state: &NodeState, node: &Node, apply: bool) -> Vec<Action> {
    let mut actions = Vec::new();
    for r in state.records.iter().filter(|r| state.alive(r)) {
        if locate(node, r).ok() != Some(Reattach::Reattached) {
            continue;
        }
        actions.push(Action {
            action: "reattach".into(),
            network: r.network.clone(),
            container_id: r.container_id.clone(),
            ifname: r.ifname.clone(),
            what: format!(
                "VF {} into {} (a driver reload took it out)",
                r.pci,
                r.netns().unwrap_or("?")
            ),
            result: if apply {
                match reattach(node, &r.pci) {
                    Ok(done) => {
                        let _ =
                            base::stats::record_reattach(&node.settings, &r.network, done.name());
                        "done".into()
                    }
                    Err(e) => e.to_string(),
                }
            } else {
                "planned".into()
            },
        });
    }
    actions
}

/// Leases released (orphans, and the embedded leases of detached
/// attachments), for `railcni_reclaimed_leases_total`.
fn count_reclaimed(state: &NodeState, node: &Node, actions: &[Action]) {
    let mut by_network: std::collections::BTreeMap<&str, usize> = Default::default();
    for a in actions.iter().filter(|a| a.result == "done") {
        let leased = a.action == "release"
            || state.records.iter().any(|r| {
                r.network == a.network
                    && r.is_for(&a.container_id, &a.ifname)
                    && r.ipam_type.is_some()
            });
        if leased {
            *by_network.entry(a.network.as_str()).or_default() += 1;
        }
    }
    for (network, n) in by_network {
        railcni::ipam::count_reclaimed(&node.settings, network, n);
    }
}

/// Leases whose holder is provably gone and that no attachment claims
/// (a dead attachment's lease goes with its detach).
fn orphaned_leases<'s>(
    state: &'s NodeState,
    dead: &'s [&'s Record],
) -> impl Iterator<Item = (&'s str, &'s Lease)> + 's {
    let holds = |r: &Record, network: &str, l: &Lease| {
        r.network == network && r.is_for(&l.container_id, &l.ifname)
    };
    state.stores.iter().flat_map(move |view| {
        let leases = view
            .leases
            .as_ref()
            .map(|d| d.leases.as_slice())
            .unwrap_or(&[]);
        leases
            .iter()
            .filter(move |l| {
                let network = view.network.as_str();
                let claimed = state
                    .records
                    .iter()
                    .any(|r| holds(r, network, l) && state.alive(r));
                let detached = dead.iter().any(|r| holds(r, network, l));
                let gone = judged(&l.proof, state.boot.as_deref()) == Some(false);
                !claimed && !detached && gone
            })
            .map(move |l| (view.network.as_str(), l))
    })
}

/// The plugin's own detach of an attachment whose pod is gone, on this
/// node, releasing its lease as the record says.
fn detach_dead(node: &Node, r: &Record) -> Result<(), String> {
    let pod = r.pod.as_deref().unwrap_or(&r.container_id);
    let context = format!("gc {} {pod} {} {}", r.network, r.ifname, r.pci);
    base::log::in_context(context, || detach_dead_here(node, r))
}

fn detach_dead_here(node: &Node, r: &Record) -> Result<(), String> {
    let _lock = node.store.lock_vf(&r.pci).map_err(|e| e.to_string())?;
    // Act only on what is read under the lock.
    match node.store.load(&r.pci) {
        Ok(Some(now))
            if now.is_for(&r.container_id, &r.ifname)
                && !now.netns_alive(node.settings.boot_id().as_deref()) =>
        {
            detach(
                node,
                &Attachment::of(&now),
                &Release::Recorded,
                Pod::Unknown,
            )
            .map_err(|e| e.to_string())
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

fn print(r: &Report) {
    if r.actions.is_empty() {
        println!("nothing to do: every attachment and lease has a live holder");
        return;
    }
    let mut t = super::table::new(&["ACTION", "NETWORK", "IF", "CONTAINER", "WHAT", "RESULT"]);
    for a in &r.actions {
        t.add_row(vec![
            a.action.clone(),
            a.network.clone(),
            a.ifname.clone(),
            a.container_id.chars().take(12).collect(),
            a.what.clone(),
            a.result.clone(),
        ]);
    }
    println!("{t}");
    if !r.applied {
        println!("\ndry run: run `railcnictl gc --apply` to do this");
    }
}
