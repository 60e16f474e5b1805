//! `railcnictl gids DEVICE`: an RDMA device's GID table as sysfs shows it
//! (what `show_gids` prints), with the RoCE v2 entry of each address marked:
//! the index `NCCL_IB_GID_INDEX` must name for the rail to carry RDMA on
//! its address. Read from the host (the VF's own sysfs directory shows the
//! table whichever namespace holds the device). Exit 1 when the device has
//! no table on the port asked.

use std::path::PathBuf;

use base::Settings;
use railcni::net::gid::{read_table, Gid};
use serde::Serialize;

use super::table::{self, or_dash};
use crate::cli::outcome::{emit, Outcome, Usage};

#[derive(clap::Args)]
pub struct Args {
    /// The RDMA device (`rdma link` names it: mlx5_3, rxe0).
    device: String,
    /// Its port.
    #[arg(long, default_value_t = 1)]
    port: u32,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    device: String,
    port: u32,
    gids: Vec<Entry>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    index: u32,
    gid: String,
    /// The address it stands for (IPv4 for an IPv4-mapped GID).
    address: String,
    /// `RoCE v2`, `IB/RoCE v1`.
    #[serde(rename = "type")]
    kind: String,
    ndev: Option<String>,
}

pub fn run(settings: &Settings, args: &Args) -> Result<Outcome, Usage> {
    let ports = ports_dir(settings, &args.device)?;
    let table = read_table(&ports, args.port);
    let report = Report {
        device: args.device.clone(),
        port: args.port,
        gids: table.iter().map(entry).collect(),
    };
    emit(&report, args.json, |r| {
        let mut t = table::new(&["INDEX", "GID", "ADDRESS", "TYPE", "NETDEV"]);
        for g in &r.gids {
            t.add_row([
                g.index.to_string(),
                g.gid.clone(),
                g.address.clone(),
                g.kind.clone(),
                or_dash(g.ndev.as_ref()),
            ]);
        }
        println!("{t}");
    });
    Ok(if table.is_empty() {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

fn entry(g: &Gid) -> Entry {
    Entry {
        index: g.index,
        gid: g.gid.to_string(),
        address: g.address().to_string(),
        kind: g.kind.clone(),
        ndev: g.ndev.clone(),
    }
}

/// `class/infiniband/<dev>/ports` under the sysfs root.
fn ports_dir(settings: &Settings, device: &str) -> Result<PathBuf, Usage> {
    let sysfs = railcni::vf::Sysfs::new(&settings.sysfs_root);
    let dir = sysfs.class_rdma_device_dir(device).ok_or_else(|| {
        Usage(format!(
            "no RDMA device {device:?} in this namespace's {}; `rdma link` lists them",
            sysfs.rdma_class_dir().display()
        ))
    })?;
    Ok(dir.join("ports"))
}
