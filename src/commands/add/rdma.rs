//! ADD's RDMA steps, each with a typed result: what it does with the VF's
//! RDMA device, decided before anything changes (`RdmaPlan::prepare`: the
//! `rdma` policy, the device and its port, `rdmaQoS`), and the RoCE v2
//! GID wait once the VF is addressed (`wait_for_gids`: `Gids`).

use std::net::IpAddr;
use std::path::PathBuf;

use cni::CniResult;

use super::intent::Intent;
use crate::commands::ctx::Ctx;
use crate::config::RdmaPolicy;
use crate::error::{Error, Result};
use crate::net::rdma::RdmaNetnsMode;
use crate::net::NetNs;
use crate::net::{gid, ib_port};
use crate::probe::Mode;
use crate::rdma_qos::{self, QosRecord, RocePort};
use crate::{log_info, log_warn};

/// What ADD does with the VF's RDMA device.
#[derive(Debug, Default)]
pub struct RdmaPlan {
    /// The device that moves into the pod with the VF (exclusive netns mode).
    pub moves: Option<String>,
    /// The VF's RDMA device serving the pod, moved or not (`rdma` not off).
    pub device: Option<String>,
    /// Its port that carries the VF.
    pub port: Option<u32>,
    /// What `rdmaQoS` sets on it, with what it holds now.
    pub qos: Option<PlannedQos>,
}

/// `rdmaQoS` as ADD writes it: where (the device's files, found once
/// before any change) and what, with what was there.
#[derive(Debug)]
pub struct PlannedQos {
    pub at: RocePort,
    pub record: QosRecord,
}

impl RdmaPlan {
    /// Decide, changing nothing; `netdev`: the VF has one (not DPDK).
    pub fn prepare(ctx: &Ctx, intent: &Intent<'_>, netdev: bool) -> Result<Self> {
        let policy = RdmaPolicy::or_default_for(ctx.conf.rdma, intent.vf.link_type());
        let (moves, device) = if netdev {
            (
                rdma_to_move(ctx, intent, policy)?,
                rdma_device_of(intent, policy),
            )
        } else {
            (None, None)
        };
        let place = device.as_deref().map(|d| rdma_place(ctx, intent, d));
        let port = place.as_ref().map(|(_, port)| *port);
        let required = policy == RdmaPolicy::Required;
        let qos = qos_to_set(ctx, intent, device.as_deref(), place, required)?;
        Ok(RdmaPlan {
            moves,
            device,
            port,
            qos,
        })
    }

    /// The device left on the host, serving the pod from there (the RDMA
    /// subsystem's shared netns mode).
    pub fn shared(&self) -> Option<String> {
        self.device.clone().filter(|_| self.moves.is_none())
    }
}

/// Each address's RoCE v2 GID index, as the wait found them.
#[derive(Debug, Default)]
pub struct Gids(Vec<(IpAddr, u32)>);

impl Gids {
    /// The first address's (IPv4 first, as IPAM orders them): what an RDMA
    /// launcher is given.
    pub fn first_index(&self) -> Option<u32> {
        self.0.first().map(|(_, i)| *i)
    }
}

/// The RoCE v2 GID of each address on the VF's RDMA device (the kernel
/// adds them shortly after the address): an RDMA application that starts
/// before its GID is there cannot make a QP for it. Not for InfiniBand.
pub fn wait_for_gids(
    ctx: &Ctx,
    pod: &NetNs,
    intent: &Intent<'_>,
    plan: &RdmaPlan,
    result: &CniResult,
) -> Result<Gids> {
    let mode = ctx.conf.probes.roce_gid;
    let device = plan.device.as_deref().filter(|_| !intent.vf.infiniband);
    let Some(device) = device.filter(|_| mode != Mode::Off) else {
        return Ok(Gids::default());
    };
    let addrs: Vec<_> = result.ips.iter().map(|ip| ip.address.addr()).collect();
    if addrs.is_empty() {
        return Ok(Gids::default());
    }
    let timeout = std::time::Duration::from_millis(ctx.conf.probes.roce_gid_timeout_ms);
    let port = plan.port.unwrap_or(1);
    let waited = ctx
        .node
        .sysfs
        .with_rdma_device_dir(pod, &intent.vf.pci, device, |dir| {
            let Some(ports) = dir.map(|d| d.join("ports")) else {
                return gid::Wait::NoTable;
            };
            gid::wait_for(&addrs, timeout, || gid::read_port(&ports, port))
        });
    match waited {
        // The check is worth an ADD only where the table can be read.
        Err(e) => {
            log_warn!(
                "cannot read RDMA device {device}'s GID table ({e}); RoCE v2 GIDs not checked"
            );
            Ok(Gids::default())
        }
        Ok(gid::Wait::Found(found)) => Ok(Gids(found)),
        Ok(gid::Wait::NoTable) => {
            log_info!(
                "RDMA device {device} shows no GID table for port {port}; RoCE v2 GIDs not checked"
            );
            Ok(Gids::default())
        }
        Ok(gid::Wait::Missing { missing, table }) => {
            let msg = missing_gids(device, port, &missing, &table, timeout);
            if mode == Mode::Require {
                return Err(Error::RailCheck(format!("checks.roceGid: {msg}")));
            }
            log_warn!("{msg}");
            Ok(Gids::default())
        }
    }
}

/// An InfiniBand VF's port ACTIVE, and a member of the NAD's `pkey`,
/// before ADD answers (`checks.ibPort`): NCCL's QP setup fails on a port
/// the subnet manager has not brought up yet. The port's files are read
/// where the device is (the pod's sysfs once it moved), under the name it
/// has now (`moved`: a GUID's rebind may have renamed it).
pub fn wait_for_ib_port(
    ctx: &Ctx,
    pod: &NetNs,
    intent: &Intent<'_>,
    plan: &RdmaPlan,
    moved: Option<&str>,
) -> Result<()> {
    let mode = ctx.conf.probes.ib_port;
    let device = moved
        .or(plan.device.as_deref())
        .filter(|_| intent.vf.infiniband);
    let Some(device) = device.filter(|_| mode != Mode::Off) else {
        return Ok(());
    };
    let timeout = std::time::Duration::from_millis(ctx.conf.probes.ib_port_timeout_ms);
    let (port, pkey) = (plan.port.unwrap_or(1), ctx.conf.pkey);
    let waited = ctx
        .node
        .sysfs
        .with_rdma_device_dir(pod, &intent.vf.pci, device, |dir| {
            let Some(ports) = dir.map(|d| d.join("ports")) else {
                return ib_port::Wait::NoState;
            };
            ib_port::wait_for(pkey, timeout, || ib_port::read(&ports, port))
        });
    let state = match waited {
        Err(e) => {
            log_warn!(
                "cannot read InfiniBand port {port} of {device} ({e}); port state not checked"
            );
            return Ok(());
        }
        Ok(ib_port::Wait::NoState) => {
            log_info!(
                "RDMA device {device} shows no state for port {port}; port state not checked"
            );
            return Ok(());
        }
        Ok(ib_port::Wait::Ready(state)) => {
            log_info!("InfiniBand port {port} of {device}: {}", state.describe());
            return Ok(());
        }
        Ok(ib_port::Wait::NotReady(state)) => state,
    };
    let partition = pkey.map_or(String::new(), |k| {
        format!(" and a member of partition {k:#06x}")
    });
    let msg = format!(
        "InfiniBand port {port} of RDMA device {device} is {} after {} ms, not ACTIVE{partition}: \
         the subnet manager has not brought it up (a GUID it does not know, a partition it was not \
         given); RDMA over it would fail at QP setup",
        state.describe(),
        timeout.as_millis()
    );
    if mode == Mode::Require {
        return Err(Error::RailCheck(format!("checks.ibPort: {msg}")));
    }
    log_warn!("{msg}");
    Ok(())
}

/// What a RoCE v2 GID wait that ran out says: the addresses without one
/// and what the table holds.
fn missing_gids(
    device: &str,
    port: u32,
    missing: &[std::net::IpAddr],
    table: &[gid::Gid],
    timeout: std::time::Duration,
) -> String {
    let held: Vec<String> = table
        .iter()
        .map(|g| format!("{} {} {}", g.index, g.address(), g.kind))
        .collect();
    let missing: Vec<String> = missing.iter().map(ToString::to_string).collect();
    format!(
        "RDMA device {device} port {port} has no RoCE v2 GID for {} after {} ms \
         (its table holds: {}); RDMA to that address would fail",
        missing.join(", "),
        timeout.as_millis(),
        if held.is_empty() {
            "nothing".to_string()
        } else {
            held.join("; ")
        }
    )
}

/// Where `device` is in sysfs (read once for the port and `rdmaQoS`), and
/// its port that carries the VF: its GID table names the VF's netdev (host
/// or pod name), else the device's only or lowest port.
fn rdma_place(ctx: &Ctx, intent: &Intent<'_>, device: &str) -> (Option<PathBuf>, u32) {
    let vf = &intent.vf;
    let dir = ctx.node.sysfs.rdma_device_dir(&vf.pci, device);
    let port = crate::vf::sysfs::port_of(dir.as_deref(), &vf.netdev_names(&ctx.env.ifname));
    (dir, port)
}

/// The VF's RDMA device, whether or not it moves (`rdma` not off).
fn rdma_device_of(intent: &Intent<'_>, policy: RdmaPolicy) -> Option<String> {
    let off = policy == RdmaPolicy::Off;
    intent.vf.rdma_devices.first().filter(|_| !off).cloned()
}

/// What `rdmaQoS` will set on `device`, with what it holds now; checked
/// before anything changes (see `rdma_qos::prepare`).
fn qos_to_set(
    ctx: &Ctx,
    intent: &Intent<'_>,
    device: Option<&str>,
    place: Option<(Option<PathBuf>, u32)>,
    required: bool,
) -> Result<Option<PlannedQos>> {
    let asked = &ctx.conf.rdma_qos;
    if asked.is_empty() {
        return Ok(None);
    }
    let Some(device) = device else {
        let why = format!("rdmaQoS is set but VF {} has no RDMA device", intent.vf.pci);
        if required {
            return Err(Error::UnsupportedDevice(why));
        }
        log_warn!("{why}; nothing to set (rdma is auto)");
        return Ok(None);
    };
    let (device_dir, port) = place.unwrap_or((None, 1));
    let at = RocePort::new(device, port, device_dir, &ctx.node.settings.configfs_root);
    let record = rdma_qos::prepare(ctx.node.hw.as_ref(), &at, asked, required)?;
    Ok(record.map(|record| PlannedQos { at, record }))
}

/// `rdma: auto` moves the VF's RDMA device when there is one and the
/// subsystem is in exclusive netns mode, and logs otherwise; `required`
/// fails instead of logging. InfiniBand rails are RDMA rails: without its
/// device a VF is useless, so they default to `required`.
fn rdma_to_move(ctx: &Ctx, intent: &Intent<'_>, policy: RdmaPolicy) -> Result<Option<String>> {
    let vf = &intent.vf;
    if policy == RdmaPolicy::Off {
        return Ok(None);
    }
    let required = policy == RdmaPolicy::Required;
    let Some(dev) = vf.rdma_devices.first() else {
        if required {
            return Err(Error::UnsupportedDevice(format!(
                "rdma is required but VF {} has no RDMA device (no infiniband/ entry in sysfs)",
                vf.pci
            )));
        }
        log_info!(
            "VF {} has no RDMA device; attaching the netdev only",
            vf.pci
        );
        return Ok(None);
    };
    match ctx.node.hw.rdma_netns_mode() {
        Ok(RdmaNetnsMode::Exclusive) => Ok(Some(dev.clone())),
        Ok(RdmaNetnsMode::Shared) if required => Err(Error::UnsupportedDevice(format!(
            "rdma is required but the RDMA subsystem is in shared netns mode, so {dev} cannot follow the VF; \
             run `rdma system set netns exclusive` (ib_core netns_mode=0) or set rdma to auto"
        ))),
        Ok(RdmaNetnsMode::Shared) => {
            log_info!("RDMA netns mode is shared: {dev} stays visible everywhere, nothing to move");
            Ok(None)
        }
        Err(e) if required => Err(Error::UnsupportedDevice(format!(
            "rdma is required but the RDMA netns mode cannot be read ({}); load ib_core or set rdma to auto",
            e.details()
        ))),
        Err(e) => {
            log_warn!("cannot query the RDMA netns mode ({e}); not moving {dev}");
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_does_not_move_serves_the_pod_from_the_host() {
        let moved = RdmaPlan {
            moves: Some("mlx5_3".into()),
            device: Some("mlx5_3".into()),
            ..RdmaPlan::default()
        };
        assert_eq!(moved.shared(), None);
        let shared = RdmaPlan {
            device: Some("mlx5_3".into()),
            ..RdmaPlan::default()
        };
        assert_eq!(shared.shared().as_deref(), Some("mlx5_3"));
        assert_eq!(
            RdmaPlan::default().shared(),
            None,
            "no device, nothing shared"
        );
    }

    #[test]
    fn the_launchers_gid_index_is_the_first_addresss() {
        let v4: IpAddr = "172.16.0.0".parse().unwrap();
        let v6: IpAddr = "fd00::1".parse().unwrap();
        assert_eq!(Gids(vec![(v4, 3), (v6, 5)]).first_index(), Some(3));
        assert_eq!(Gids::default().first_index(), None);
    }
}
