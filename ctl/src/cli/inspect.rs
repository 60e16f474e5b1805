//! `railcnictl inspect`: what railcni set up inside one pod, record versus
//! kernel, each line OK or DRIFT. The comparison is CHECK's (`verify`).

use std::path::Path;

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};
use railcni::attachment::verify::{self, Comparison, Expected};
use railcni::net::{NetNs, Netlink};
use railcni::state::Record;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub target: String,
    pub interfaces: Vec<Interface>,
    pub drift: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    pub ifname: String,
    pub network: String,
    pub vf: String,
    /// A whole-NIC rail: `vf` is a PF moved into the pod itself.
    pub whole_nic: bool,
    pub netns: Option<String>,
    /// The VF's RDMA device: moved into the pod, or serving it from the
    /// host (shared netns mode: `rdmaShared`).
    pub rdma_device: Option<String>,
    pub rdma_shared: bool,
    /// Its port that carries the VF.
    pub rdma_port: Option<u32>,
    /// That port's state as sysfs words it (`ACTIVE`, `INIT`), with its
    /// partition keys: `ACTIVE, pkeys 0xffff 0x8001`.
    pub rdma_port_state: Option<String>,
    pub findings: Vec<Comparison>,
}

pub fn run(settings: &Settings, target: &str, json: bool) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let records = state.pod_records_of(target)?;
    let sysfs = railcni::vf::Sysfs::new(&settings.sysfs_root);
    let hw = railcni::hw::backend();
    let places = verify::RdmaPlaces {
        sysfs: &sysfs,
        configfs: &settings.configfs_root,
        hw: hw.as_ref(),
    };
    let interfaces: Vec<Interface> = records
        .into_iter()
        .map(|r| inspect_one(r, &places))
        .collect();
    let drift = interfaces.iter().any(|i| i.findings.iter().any(|f| !f.ok));
    let report = Report {
        target: target.to_string(),
        interfaces,
        drift,
    };
    emit(&report, json, print);
    Ok(Outcome::found(drift))
}

fn inspect_one(r: &Record, places: &verify::RdmaPlaces<'_>) -> Interface {
    let port = verify::rdma_port_state(places.sysfs, r);
    let findings = match findings(r, places) {
        Ok(mut f) => {
            f.extend(port.as_ref().map(port_finding));
            f
        }
        Err(e) => vec![Comparison {
            what: "netns".into(),
            expected: r.netns().unwrap_or("?").into(),
            actual: e.details(),
            ok: false,
        }],
    };
    Interface {
        ifname: r.ifname.clone(),
        network: r.network.clone(),
        vf: r.pci.clone(),
        whole_nic: r.whole_nic,
        netns: r.netns().map(str::to_string),
        rdma_device: r.hca().map(|(device, _)| device.to_string()),
        rdma_shared: r.hca().is_some_and(|(_, shared)| shared),
        rdma_port: r.hca_port(),
        rdma_port_state: port.map(|p| p.describe()),
        findings,
    }
}

fn findings(
    r: &Record,
    places: &verify::RdmaPlaces<'_>,
) -> railcni::error::Result<Vec<Comparison>> {
    if r.dpdk {
        return Ok(vec![Comparison {
            what: "dpdk".into(),
            expected: "bound to a userspace driver, not moved".into(),
            actual: "bound to a userspace driver, not moved".into(),
            ok: true,
        }]);
    }
    let expected = Expected::from_record(r)?;
    let path = r.netns().unwrap_or_default();
    let pod = NetNs::open(Path::new(path))?;
    let nl = Netlink::connect_in(&pod)?;
    verify::compare(&pod, &nl, r, &expected, places)
}

/// The RDMA port is up: the subnet manager brought an InfiniBand port to
/// ACTIVE (a RoCE port is ACTIVE with its link).
fn port_finding(state: &railcni::net::ib_port::PortState) -> Comparison {
    Comparison {
        what: "rdma port".into(),
        expected: "ACTIVE".into(),
        actual: state.describe(),
        ok: state.ready_for(None),
    }
}

/// `mlx5_3 port 3`, `(shared)` when it serves the pod from the host.
fn rdma_words(i: &Interface) -> String {
    let Some(device) = &i.rdma_device else {
        return "-".into();
    };
    let port = i
        .rdma_port
        .map(|p| format!(" port {p}"))
        .unwrap_or_default();
    let shared = if i.rdma_shared { " (shared)" } else { "" };
    format!("{device}{port}{shared}")
}

fn print(r: &Report) {
    for i in &r.interfaces {
        println!(
            "{} ({} {} {}) in {}  rdma {}",
            i.ifname,
            i.network,
            if i.whole_nic { "whole PF" } else { "VF" },
            i.vf,
            or_dash(i.netns.as_ref()),
            rdma_words(i)
        );
        let mut t = table::new(&["", "WHAT", "EXPECTED", "ACTUAL"]);
        for f in &i.findings {
            t.add_row(vec![
                if f.ok { "OK" } else { "DRIFT" }.to_string(),
                f.what.clone(),
                f.expected.clone(),
                f.actual.clone(),
            ]);
        }
        println!("{t}\n");
    }
    println!(
        "{}",
        if r.drift {
            "drift found"
        } else {
            "all as set up"
        }
    );
}
