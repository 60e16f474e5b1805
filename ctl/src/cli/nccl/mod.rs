//! `railcnictl nccl-env`: a pod's rails in rail order with their RDMA
//! devices and ports, and the environment a training launcher needs. A
//! rail without an RDMA device would silently drop out of NCCL_IB_HCA, so
//! it is a problem; no variable is ever printed empty (to NCCL an empty
//! list means every HCA).
//!
//! On RoCE rails it also names the class NCCL and UCX should use (NCCL
//! never goes through rdma_cm, so without `NCCL_IB_TC` its QPs carry class
//! 0 unless the device forces one) and how NCCL is to choose each HCA's GID
//! (`env`). A variable that is one value for every HCA is printed only
//! when the rails agree, and a disagreement is a problem.

mod env;

use std::net::IpAddr;

use base::Settings;
use serde::Serialize;

use super::node::NodeState;
use super::records::address_of;
use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};
use env::{Hca, NcclVersion};
use railcni::state::Record;

#[derive(clap::Args)]
pub struct Args {
    /// The pod's network namespace path, or its container ID.
    target: String,
    /// Only these networks (e.g. compute rails, not storage), comma-separated.
    #[arg(long, value_delimiter = ',')]
    networks: Vec<String>,
    /// Also print NCCL_IB_FIFO_TC (NCCL 2.22+: its control messages' class
    /// on RoCE): this class, or the rails' own when given no value.
    #[arg(long, num_args = 0..=1, value_name = "CLASS", value_parser = clap::value_parser!(u8))]
    fifo_tc: Option<Option<u8>>,
    /// Also print NCCL_IB_GID_INDEX, for NCCL before 2.21 (later releases
    /// choose each HCA's GID from NCCL_IB_ADDR_FAMILY, which is printed).
    #[arg(long)]
    gid_index: bool,
    /// The NCCL release the job runs (2.30 and later: each HCA with its rail
    /// and plane, and NCCL_NET_MERGE_POLICY=RAIL for multi-plane rails).
    #[arg(long, value_name = "VERSION")]
    nccl: Option<NcclVersion>,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub rails: Vec<RailRow>,
    /// Variable name → value, e.g. `NCCL_IB_HCA` → `=mlx5_3:1,mlx5_7:1`.
    pub env: Vec<(String, String)>,
    pub problems: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RailRow {
    pub ifname: String,
    pub network: String,
    pub address: Option<String>,
    /// The VF's RDMA device: moved into the pod (exclusive netns mode) or
    /// serving it from the host (shared mode; `rdmaShared`).
    pub rdma_device: Option<String>,
    /// The device stayed in the host's namespace (shared netns mode).
    pub rdma_shared: bool,
    /// The device's port whose netdev is the VF (1 for a record of a
    /// release before ports were recorded).
    pub port: Option<u32>,
    /// The rail's id for NCCL (railcni's rail order, from 0) and its plane.
    pub rail: usize,
    pub plane: u8,
    /// The class the rail's traffic should carry: `rdmaQoS.tc`, else its
    /// `tos` (on RoCE v2 both are the IP ToS byte).
    pub traffic_class: Option<u8>,
    /// The RoCE v2 GID index of the rail's first address, as ADD found it.
    pub gid_index: Option<u32>,
}

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    let state = NodeState::load(settings)?;
    let records = state.pod_records_of(&args.target)?;
    if let Some(unknown) =
        (args.networks.iter()).find(|n| !records.iter().any(|r| &r.network == *n))
    {
        return Err(Usage(format!(
            "the pod has no attachment on network {unknown:?}"
        )));
    }
    let chosen: Vec<&Record> = (records.into_iter())
        .filter(|r| args.networks.is_empty() || args.networks.contains(&r.network))
        .collect();
    let networks: Vec<&str> = chosen.iter().map(|r| r.network.as_str()).collect();
    let ids = env::rails_and_planes(&networks);
    let rails: Vec<RailRow> = chosen.iter().zip(ids).map(|(r, id)| row(r, id)).collect();
    let mut problems = rails_without_rdma(&rails);
    let mut env = environment(&rails, args.nccl, &mut problems);
    env.extend(qos_environment(&rails, args, &mut problems));
    let report = Report {
        rails,
        env,
        problems,
    };
    emit(&report, args.json, print);
    Ok(Outcome::found(!report.problems.is_empty()))
}

fn row(r: &Record, (rail, plane): (usize, u8)) -> RailRow {
    let hca = r.hca();
    RailRow {
        ifname: r.ifname.clone(),
        network: r.network.clone(),
        address: address_of(r),
        rdma_shared: hca.is_some_and(|(_, shared)| shared),
        port: hca.map(|_| r.hca_port().unwrap_or(1)),
        rdma_device: hca.map(|(device, _)| device.to_string()),
        rail,
        plane,
        traffic_class: class_of(r),
        gid_index: gid_index_of(r),
    }
}

fn class_of(r: &Record) -> Option<u8> {
    r.rdma_qos.as_ref()?.class()
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

/// NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS (and NCCL_IB_FIFO_TC when asked), and
/// NCCL_IB_GID_INDEX with `--gid-index`: each when the rails agree on it.
fn qos_environment(
    rails: &[RailRow],
    args: &Args,
    problems: &mut Vec<String>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    match agreed(rails, |r| r.traffic_class) {
        Ok(Some(class)) => {
            env.push(("NCCL_IB_TC".to_string(), class.to_string()));
            if let Some(fifo) = args.fifo_tc {
                env.push(("NCCL_IB_FIFO_TC".to_string(), fifo.unwrap_or(class).to_string()));
            }
            env.push(("UCX_IB_TRAFFIC_CLASS".to_string(), class.to_string()));
        }
        Ok(None) => {
            if let Some(Some(fifo)) = args.fifo_tc {
                env.push(("NCCL_IB_FIFO_TC".to_string(), fifo.to_string()));
            }
        }
        Err(values) => problems.push(format!(
            "the rails disagree on their traffic class ({values}); NCCL_IB_TC is one value for every HCA, \
             so it is left out: give every rail the same rdmaQoS, or pass --networks"
        )),
    }
    if !args.gid_index {
        return env;
    }
    match agreed(rails, |r| r.gid_index) {
        Ok(Some(index)) => env.push(("NCCL_IB_GID_INDEX".to_string(), index.to_string())),
        Ok(None) => {}
        Err(values) => problems.push(format!(
            "the rails' RoCE v2 GIDs are at different indexes ({values}); NCCL_IB_GID_INDEX is one value, \
             so it is left out (NCCL 2.21+ finds each HCA's GID itself from NCCL_IB_ADDR_FAMILY)"
        )),
    }
    env
}

fn rails_without_rdma(rails: &[RailRow]) -> Vec<String> {
    (rails.iter())
        .filter(|r| r.rdma_device.is_none())
        .map(|r| {
            format!(
                "{} ({}) has no RDMA device: NCCL will not use it; set `rdma: required` on {} to catch this at ADD",
                r.ifname, r.network, r.network
            )
        })
        .collect()
}

/// The variables naming the rails' HCAs, netdevs and address family, in
/// rail order; none printed empty.
fn environment(
    rails: &[RailRow],
    nccl: Option<NcclVersion>,
    problems: &mut Vec<String>,
) -> Vec<(String, String)> {
    let with_rails = nccl.is_some_and(NcclVersion::knows_rails);
    let hcas: Vec<Hca> = (rails.iter())
        .filter_map(|r| {
            Some(Hca {
                name: r.rdma_device.as_deref()?,
                port: r.port.unwrap_or(1),
                rail: r.rail,
                plane: r.plane,
            })
        })
        .collect();
    let ifnames: Vec<&str> = rails.iter().map(|r| r.ifname.as_str()).collect();
    let firsts: Vec<(&str, IpAddr)> = (rails.iter())
        .filter(|r| r.rdma_device.is_some())
        .filter_map(|r| Some((r.ifname.as_str(), address_ip(r.address.as_deref()?)?)))
        .collect();
    let mut out = Vec::new();
    let mut put = |k: &str, v: Option<String>| out.extend(v.map(|v| (k.to_string(), v)));
    put("NCCL_IB_HCA", env::ib_hca(&hcas, with_rails));
    put("NCCL_SOCKET_IFNAME", env::socket_ifname(&ifnames));
    put("UCX_NET_DEVICES", env::ucx_net_devices(&hcas));
    match env::addr_family(&firsts) {
        Ok(family) => put("NCCL_IB_ADDR_FAMILY", family.map(str::to_string)),
        Err(mixed) => problems.push(format!(
            "the rails' first addresses are of both families ({mixed}); NCCL_IB_ADDR_FAMILY is one value for \
             every HCA, so it is left out: pass --networks with the rails of one family"
        )),
    }
    put(
        "NCCL_IB_ROCE_VERSION_NUM",
        (!hcas.is_empty()).then(|| "2".to_string()),
    );
    let planes = rails.iter().any(|r| r.plane > 0);
    put(
        "NCCL_NET_MERGE_POLICY",
        (with_rails && planes).then(|| "RAIL".to_string()),
    );
    out
}

/// The address of `172.16.0.2/31`.
fn address_ip(cidr: &str) -> Option<IpAddr> {
    cidr.split('/').next()?.parse().ok()
}

fn print(r: &Report) {
    let mut t = table::new(&[
        "IF", "NETWORK", "ADDRESS", "RDMA", "PORT", "RAIL", "CLASS", "GID",
    ]);
    for rail in &r.rails {
        let rdma = (rail.rdma_device.as_ref()).map(|d| {
            if rail.rdma_shared {
                format!("{d} (shared)")
            } else {
                d.clone()
            }
        });
        t.add_row(vec![
            rail.ifname.clone(),
            rail.network.clone(),
            or_dash(rail.address.as_ref()),
            or_dash(rdma.as_ref()),
            or_dash(rail.port.as_ref()),
            format!("{}:{}", rail.rail, rail.plane),
            or_dash(rail.traffic_class.as_ref()),
            or_dash(rail.gid_index.as_ref()),
        ]);
    }
    println!("{t}\n");
    for (k, v) in &r.env {
        println!("{k}={v}");
    }
    for p in &r.problems {
        eprintln!("railcnictl: {p}");
    }
}
