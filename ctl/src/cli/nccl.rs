//! `railcnictl nccl-env`: a pod's rails in rail order with their RDMA devices,
//! and the environment a training launcher needs. A rail without an RDMA
//! device would silently drop out of NCCL_IB_HCA, so it is a problem.

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::status::address_of;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub rails: Vec<RailRow>,
    /// Variable name → value, e.g. `NCCL_IB_HCA` → `mlx5_3,mlx5_7`.
    pub env: Vec<(String, String)>,
    pub problems: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RailRow {
    pub ifname: String,
    pub network: String,
    pub address: Option<String>,
    pub rdma_device: Option<String>,
}

pub fn run(
    settings: &Settings,
    target: &str,
    networks: &[String],
    json: bool,
) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let records = state.pod_records(target);
    if records.is_empty() {
        return Err(Usage(format!(
            "no railcni attachment has netns or container ID {target:?}; `railcnictl status` lists them"
        )));
    }
    if let Some(unknown) = networks
        .iter()
        .find(|n| !records.iter().any(|r| &r.network == *n))
    {
        return Err(Usage(format!(
            "the pod has no attachment on network {unknown:?}"
        )));
    }
    let rails: Vec<RailRow> = records
        .into_iter()
        .filter(|r| networks.is_empty() || networks.contains(&r.network))
        .map(|r| RailRow {
            ifname: r.ifname.clone(),
            network: r.network.clone(),
            address: address_of(r),
            rdma_device: r.rdma_device.clone(),
        })
        .collect();
    let problems = rails_without_rdma(&rails);
    let env = environment(&rails);
    let report = Report {
        rails,
        env,
        problems,
    };
    emit(&report, json, print);
    Ok(Outcome::found(!report.problems.is_empty()))
}

fn rails_without_rdma(rails: &[RailRow]) -> Vec<String> {
    rails
        .iter()
        .filter(|r| r.rdma_device.is_none())
        .map(|r| {
            format!(
                "{} ({}) has no RDMA device in the pod: NCCL would not use it; set `rdma: required` on {} to catch this at ADD",
                r.ifname, r.network, r.network
            )
        })
        .collect()
}

/// NCCL's and UCX's variables naming the rails' HCAs and netdevs, in rail order.
fn environment(rails: &[RailRow]) -> Vec<(String, String)> {
    let hcas: Vec<&str> = rails
        .iter()
        .filter_map(|r| r.rdma_device.as_deref())
        .collect();
    let ifnames: Vec<&str> = rails.iter().map(|r| r.ifname.as_str()).collect();
    let ucx: Vec<String> = hcas.iter().map(|h| format!("{h}:1")).collect();
    vec![
        ("NCCL_IB_HCA".to_string(), hcas.join(",")),
        ("NCCL_SOCKET_IFNAME".to_string(), ifnames.join(",")),
        ("UCX_NET_DEVICES".to_string(), ucx.join(",")),
    ]
}

fn print(r: &Report) {
    let mut t = table::new(&["IF", "NETWORK", "ADDRESS", "RDMA"]);
    for rail in &r.rails {
        t.add_row(vec![
            rail.ifname.clone(),
            rail.network.clone(),
            or_dash(rail.address.as_ref()),
            or_dash(rail.rdma_device.as_ref()),
        ]);
    }
    println!("{t}\n");
    for (k, v) in &r.env {
        println!("{k}={v}");
    }
    for p in &r.problems {
        eprintln!("railcni: {p}");
    }
}
