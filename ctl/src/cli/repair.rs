//! `railcnictl ipam repair NETWORK`: rebuild a corrupt or missing lease file
//! from what is provably live: the attachment records of that network whose
//! pod namespace is alive, plus (when the old file still reads) its leases
//! whose holders are not gone. The damaged file is kept beside it.

use base::Settings;
use railcni_ipam::store::Lease;
use serde::Serialize;

use super::node::NodeState;
use super::records::{address_of, judged};
use crate::cli::outcome::{emit, Outcome, Usage};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub network: String,
    pub restored: Vec<Restored>,
    pub kept: Option<String>,
    pub error: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub address: String,
    pub container_id: String,
    pub ifname: String,
    pub pod: Option<String>,
    /// `record` or `lease file`.
    pub from: String,
}

pub fn run(settings: &Settings, network: &str, json: bool) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let (mut leases, mut restored) = from_records(&state, network);
    refuse_a_sound_file(&state, network, &leases)?;
    if let Some(Ok(old)) = state
        .stores
        .iter()
        .find(|v| v.network == network)
        .map(|v| &v.leases)
    {
        // Leases the file still holds that no record names, unless provably dead.
        for l in &old.leases {
            let known = leases
                .iter()
                .any(|k| k.address == l.address || k.is_for(&l.container_id, &l.ifname));
            if !known && judged(&l.proof, state.boot.as_deref()) != Some(false) {
                leases.push(l.clone());
                restored.push(Restored {
                    address: l.address.to_string(),
                    container_id: l.container_id.clone(),
                    ifname: l.ifname.clone(),
                    pod: super::records::pod_of(l.pod_namespace.as_deref(), l.pod_name.as_deref()),
                    from: "lease file".into(),
                });
            }
        }
    }
    let (kept, error) = match railcni_ipam::repair(settings, network, leases) {
        Ok(done) => (done.kept.map(|p| p.display().to_string()), None),
        Err(e) if cni::Reply::code(&e) == 11 => (
            None,
            Some(format!(
                "another railcni holds the lease store of {network}; nothing was changed, try again"
            )),
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    let report = Report {
        network: network.to_string(),
        restored,
        kept,
        error,
    };
    emit(&report, json, print);
    Ok(Outcome::found(report.error.is_some()))
}

/// A lease file that reads and verifies and already holds every live
/// record's lease has nothing to repair: rewriting it could only lose what
/// it holds. (A sound file missing a record's lease is completed.)
fn refuse_a_sound_file(
    state: &NodeState,
    network: &str,
    from_records: &[Lease],
) -> Result<(), Usage> {
    let view = state.stores.iter().find(|v| v.network == network);
    let Some(Ok(held)) = view.map(|v| &v.leases) else {
        return Ok(());
    };
    let holds = |l: &Lease| {
        held.leases
            .iter()
            .any(|h| h.address == l.address && h.is_for(&l.container_id, &l.ifname))
    };
    if !from_records.iter().all(holds) {
        return Ok(());
    }
    let path = view
        .map(|v| v.path.display().to_string())
        .unwrap_or_default();
    Err(Usage(format!(
        "{path} reads and verifies and holds the lease of every live attachment of {network}: nothing to repair, \
         and it was not rewritten (`railcnictl status` says what, if anything, is wrong)"
    )))
}

/// A lease for every live attachment record of `network` that has an address.
fn from_records(state: &NodeState, network: &str) -> (Vec<Lease>, Vec<Restored>) {
    let mut leases = Vec::new();
    let mut restored = Vec::new();
    let live = state
        .records
        .iter()
        .filter(|r| r.network == network && state.alive(r));
    for r in live {
        let Some(address) = address_of(r).and_then(|a| a.parse::<ipnet::IpNet>().ok()) else {
            continue;
        };
        let (ns, name) = r
            .pod
            .as_deref()
            .and_then(|p| p.split_once('/'))
            .map_or((None, None), |(n, p)| {
                (Some(n.to_string()), Some(p.to_string()))
            });
        // A dual-stack rail's record holds both addresses: one lease.
        let address6 = super::records::addresses_of(r)
            .into_iter()
            .find(|a| a.addr().is_ipv6() && address.addr().is_ipv4())
            .map(|a| a.addr());
        leases.push(Lease {
            container_id: r.container_id.clone(),
            ifname: r.ifname.clone(),
            address: address.addr(),
            address6,
            pod_namespace: ns,
            pod_name: name,
            pod_uid: None,
            allocated_unix: r.created_unix,
            proof: r.proof.clone(),
        });
        restored.push(Restored {
            address: address.addr().to_string(),
            container_id: r.container_id.clone(),
            ifname: r.ifname.clone(),
            pod: r.pod.clone(),
            from: "record".into(),
        });
    }
    (leases, restored)
}

fn print(r: &Report) {
    if let Some(e) = &r.error {
        eprintln!("railcnictl: repair of {} failed: {e}", r.network);
        return;
    }
    if let Some(k) = &r.kept {
        println!("kept the damaged file as {k}");
    }
    println!("restored {} lease(s) on {}:", r.restored.len(), r.network);
    let mut t = super::table::new(&["ADDRESS", "IF", "CONTAINER", "POD", "FROM"]);
    for l in &r.restored {
        t.add_row(vec![
            l.address.clone(),
            l.ifname.clone(),
            l.container_id.chars().take(12).collect(),
            super::table::or_dash(l.pod.as_ref()),
            l.from.clone(),
        ]);
    }
    println!("{t}");
}
