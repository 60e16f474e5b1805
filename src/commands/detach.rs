//! The one way an attachment is given back. DEL, GC, the clearing of a
//! stale record during ADD, and ADD's rollback after the move all call
//! `detach`, so they cannot drift apart.
//!
//! Every step runs even when an earlier one failed, and every failure is
//! reported. The lease and the record are given up only when the VF is
//! really home: a VF left in a pod keeps both, so a later DEL can finish.

use std::path::Path;

use super::home::Home;
use super::rail;
use super::Ctx;
use crate::error::{Error, Result};
use crate::net::{NetNs, Netlink};
use crate::sriov::Vf;
use crate::state::Record;
use crate::{log_info, log_warn};

/// What is being given back: the VF at `pci`, attached under the CNI key
/// (`container_id`, `ifname`), with its record when there is one.
pub struct Attachment<'a> {
    pub pci: &'a str,
    pub container_id: &'a str,
    pub ifname: &'a str,
    pub record: Option<&'a Record>,
}

impl<'a> Attachment<'a> {
    pub fn of(record: &'a Record) -> Self {
        Attachment {
            pci: &record.pci,
            container_id: &record.container_id,
            ifname: &record.ifname,
            record: Some(record),
        }
    }
}

/// Give the attachment back: RDMA device home, rules and rail-table routes
/// removed, the VF home under its name and MTU, PF-side settings restored,
/// then the netdev MAC (some drivers refuse it while the PF holds an admin
/// MAC), the lease released and the record removed.
///
/// `netns` is where to look for the pod (a gone namespace is not an error);
/// `pod_nl` an already-open socket there, if the caller has one.
pub async fn detach(
    ctx: &Ctx,
    a: &Attachment<'_>,
    netns: Option<&Path>,
    pod_nl: Option<&Netlink>,
) -> Result<()> {
    let mut failures = Vec::new();
    let mut note = |step: &str, r: Result<()>| {
        if let Err(e) = r {
            log_warn!(
                "detach {} ({}/{}): {step}: {e}",
                a.pci,
                a.container_id,
                a.ifname
            );
            failures.push(format!("{step}: {}", e.details()));
            false
        } else {
            true
        }
    };
    let record = a.record;
    let vf = ctx.sysfs.resolve(a.pci).ok();

    if let Some(dev) = record.and_then(|r| r.rdma_device.as_deref()) {
        note(
            "return RDMA device",
            ctx.hw.move_rdma_device(dev, ctx.host.fd()),
        );
    }

    let mut vf_home = true;
    let moved = !record.is_some_and(|r| r.dpdk);
    if moved {
        let opened;
        let pod_nl = match pod_nl {
            Some(nl) => Some(nl),
            None => {
                opened = open_pod(netns);
                match &opened {
                    Ok(nl) => nl.as_ref(),
                    Err(e) => {
                        vf_home = note("open pod namespace", Err(e.clone()));
                        None
                    }
                }
            }
        };
        if let (Some(nl), Some(plan)) = (pod_nl, record.and_then(|r| r.routing.as_ref())) {
            note("remove rules and rail routes", rail::remove(nl, plan).await);
        }
        match Netlink::connect_in(&ctx.host) {
            Ok(host_nl) => {
                let sysfs_names = vf.as_ref().map(|v| v.netdevs.clone()).unwrap_or_default();
                let home = Home {
                    host: &ctx.host,
                    host_nl: &host_nl,
                    pci: a.pci,
                    sysfs_names: &sysfs_names,
                };
                let returned = home.bring_back(pod_nl, a.ifname, record).await;
                vf_home &= note(
                    "return VF",
                    returned.as_ref().map(drop).map_err(Clone::clone),
                );
                if let Some(vf) = &vf {
                    note_settings(&mut note, ctx, vf, record);
                }
                if let (Ok(Some(link)), Some(record)) = (&returned, record) {
                    note("restore MAC", home.restore_mac(link, record).await);
                }
            }
            Err(e) => vf_home = note("open host netlink", Err(e)),
        }
    } else if let Some(vf) = &vf {
        note_settings(&mut note, ctx, vf, record);
    }

    if vf_home {
        note("release address", release_lease(ctx, a));
        if record.is_some() {
            note("remove record", ctx.store.remove(a.pci));
        }
    } else {
        log_warn!(
            "VF {} is not home: keeping its record and lease so a later DEL can finish",
            a.pci
        );
    }

    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Netlink(format!(
            "giving back VF {} ({}/{}) left work undone: {}",
            a.pci,
            a.container_id,
            a.ifname,
            failures.join("; ")
        )))
    }
}

/// A socket in the pod's namespace; `None` when it is gone (or not given).
fn open_pod(netns: Option<&Path>) -> Result<Option<Netlink>> {
    let Some(path) = netns else { return Ok(None) };
    match NetNs::open(path) {
        Ok(ns) => Netlink::connect_in(&ns).map(Some),
        Err(e) if e.code() == 3 => {
            log_info!(
                "pod namespace {} is gone; looking for the VF on the host",
                path.display()
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// PF-side settings go back after the VF is home and before its MAC.
fn note_settings(
    note: &mut impl FnMut(&str, Result<()>) -> bool,
    ctx: &Ctx,
    vf: &Vf,
    record: Option<&Record>,
) {
    if let Some(record) = record {
        note("restore VF settings", restore_vf_settings(ctx, vf, record));
    }
}

/// Put back the PF-side VF attributes the record saved, and only those.
pub fn restore_vf_settings(ctx: &Ctx, vf: &Vf, record: &Record) -> Result<()> {
    match &record.vf_restore {
        Some(saved) if !saved.is_empty() => ctx.hw.set_vf(pf_netdev(vf)?, vf.index, saved),
        _ => Ok(()),
    }
}

pub fn pf_netdev(vf: &Vf) -> Result<&str> {
    vf.pf_netdev.as_deref().ok_or_else(|| {
        Error::DeviceNotFound(format!(
            "PF {} of VF {} has no netdev; VF settings are set through it",
            vf.pf_pci, vf.pci
        ))
    })
}

/// The attachment's lease: through this network's IPAM when the record is
/// of this network (or there is no record), else straight from the
/// embedded store of the record's network.
fn release_lease(ctx: &Ctx, a: &Attachment<'_>) -> Result<()> {
    let ours = a.record.is_none_or(|r| r.network == ctx.conf.name);
    if ours {
        return match ctx.ipam() {
            Some(ipam) => ipam.release(a.container_id, a.ifname),
            None => Ok(()),
        };
    }
    match a.record {
        Some(r) if r.ipam_type.as_deref() == Some(crate::config::EMBEDDED_IPAM) => {
            crate::ipam::release_embedded(&ctx.settings, &r.network, a.container_id, a.ifname)
        }
        Some(r) => {
            log_warn!(
                "attachment {}/{} belongs to network {}, whose IPAM ({}) this config cannot run; \
                 its address is left to that network's GC",
                a.container_id,
                a.ifname,
                r.network,
                r.ipam_type.as_deref().unwrap_or("none")
            );
            Ok(())
        }
        None => Ok(()),
    }
}
