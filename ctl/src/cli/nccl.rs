//! `railcnictl nccl-env`: a pod's rails in rail order with their RDMA devices,
//! and the environment a training launcher needs. A rail without an RDMA
//! device would silently drop out of NCCL_IB_HCA, so it is a problem.
//!
//! On RoCE rails it also names the class and GID NCCL and UCX should use:
//! NCCL never goes through rdma_cm, so without `NCCL_IB_TC` its QPs carry
//! class 0 unless the device forces one. Each variable is one value for
//! every HCA, so it is printed only when the rails agree, and a
//! disagreement is a problem.

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::status::address_of;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};
use railcni::state::Record;

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
    /// The class the rail's traffic should carry: `rdmaQoS.tc`, else its
    /// `tos` (on RoCE v2 both are the IP ToS byte).
    pub traffic_class: Option<u8>,
    /// The RoCE v2 GID index of the rail's first address, as ADD found it.
    pub gid_index: Option<u32>,
}

pub fn run(
    settings: &Settings,
    target: &str,
    networks: &[String],
    fifo_tc: Option<Option<u8>>,
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
            traffic_class: class_of(r),
            gid_index: gid_index_of(r),
        })
        .collect();
    let mut problems = rails_without_rdma(&rails);
    let mut env = environment(&rails);
    env.extend(qos_environment(&rails, fifo_tc, &mut problems));
    let report = Report {
        rails,
        env,
        problems,
    };
    emit(&report, json, print);
    Ok(Outcome::found(!report.problems.is_empty()))
}

fn class_of(r: &Record) -> Option<u8> {
    let qos = r.rdma_qos.as_ref()?;
    qos.traffic_class.or(qos.tos).map(|c| c.value)
}

fn gid_index_of(r: &Record) -> Option<u32> {
    let result = r.result.as_ref()?;
    let iface = result.interfaces.iter().find(|i| i.name == r.ifname)?;
    let n = iface.extra.get("gidIndex")?.as_u64()?;
    u32::try_from(n).ok()
}

/// The one value every rail has, or the rails' values in words.
fn agreed<T: Copy + PartialEq + std::fmt::Display>(
    rails: &[RailRow],
    of: impl Fn(&RailRow) -> Option<T>,
) -> Result<Option<T>, String> {
    let values: Vec<Option<T>> = rails.iter().map(&of).collect();
    if values.iter().all(Option::is_none) {
        return Ok(None);
    }
    if values.windows(2).all(|w| w[0] == w[1]) {
        return Ok(values[0]);
    }
    Err(rails
        .iter()
        .zip(&values)
        .map(|(r, v)| {
            format!(
                "{} {}",
                r.ifname,
                v.map_or_else(|| "none".to_string(), |v| v.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(", "))
}

/// NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS (and NCCL_IB_FIFO_TC when asked),
/// NCCL_IB_GID_INDEX: each when the rails agree on it.
fn qos_environment(
    rails: &[RailRow],
    fifo_tc: Option<Option<u8>>,
    problems: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    match agreed(rails, |r| r.traffic_class) {
        Ok(Some(class)) => {
            env.push(("NCCL_IB_TC".to_string(), class.to_string()));
            if let Some(fifo) = fifo_tc {
                env.push(("NCCL_IB_FIFO_TC".to_string(), fifo.unwrap_or(class).to_string()));
            }
            env.push(("UCX_IB_TRAFFIC_CLASS".to_string(), class.to_string()));
        }
        Ok(None) => {
            if let Some(Some(fifo)) = fifo_tc {
                env.push(("NCCL_IB_FIFO_TC".to_string(), fifo.to_string()));
            }
        }
        Err(values) => problems.push(format!(
            "the rails disagree on their traffic class ({values}); NCCL_IB_TC is one value for every HCA, \
             so it is left out: give every rail the same rdmaQoS, or pass --networks"
        )),
    }
    match agreed(rails, |r| r.gid_index) {
        Ok(Some(index)) => env.push(("NCCL_IB_GID_INDEX".to_string(), index.to_string())),
        Ok(None) => {}
        Err(values) => problems.push(format!(
            "the rails' RoCE v2 GIDs are at different indexes ({values}); NCCL_IB_GID_INDEX is one value, \
             so it is left out (NCCL 2.21+ finds a RoCE v2 GID itself)"
        )),
    }
    env
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
    let mut t = table::new(&["IF", "NETWORK", "ADDRESS", "RDMA", "CLASS", "GID"]);
    for rail in &r.rails {
        t.add_row(vec![
            rail.ifname.clone(),
            rail.network.clone(),
            or_dash(rail.address.as_ref()),
            or_dash(rail.rdma_device.as_ref()),
            or_dash(rail.traffic_class.as_ref()),
            or_dash(rail.gid_index.as_ref()),
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
