//! DEL: give the VF back to the host, release IPAM, forget the attachment.
//! Converges from any state: netns gone or empty, record missing, repeated DEL.

use super::add::restore_vf_settings;
use std::path::Path;

use super::rail;
use super::vf::Home;
use super::Ctx;
use crate::error::Result;
use crate::ipam::Ipam;
use crate::net::{NetNs, Netlink};
use crate::sriov::normalize_pci;
use crate::state::Record;
use crate::{log_info, log_warn};

pub async fn del(ctx: &Ctx) -> Result<()> {
    let (cid, ifname) = (&ctx.env.container_id, &ctx.env.ifname);
    let record = ctx.store.find(cid, ifname)?;
    let pci = match (&record, &ctx.conf.device_id) {
        (Some(r), _) => Some(r.pci.clone()),
        (None, Some(d)) => Some(normalize_pci(d)?),
        (None, None) => None,
    };
    match &pci {
        Some(pci) => {
            let _lock = ctx.store.lock_vf(pci)?;
            // Re-read under the lock: another invocation may have changed it.
            let current = ctx.store.load(pci)?;
            let other_owner = current.as_ref().is_some_and(|r| !r.is_for(cid, ifname));
            let record = current.filter(|r| r.is_for(cid, ifname));
            if other_owner {
                log_info!(
                    "VF {pci} now belongs to another attachment; releasing only this one's IPAM"
                );
            } else {
                return_vf(ctx, pci, record.as_ref(), ctx.env.netns.as_deref(), ifname).await?;
            }
            release_ipam(ctx)?;
            if record.is_some() {
                ctx.store.remove(pci)?;
            }
        }
        None => {
            log_warn!("no record and no deviceID for {cid}/{ifname}: nothing to return; releasing IPAM only");
            release_ipam(ctx)?;
        }
    }
    Ok(())
}

/// Undo what ADD did to the VF: RDMA device back, routing removed, netdev
/// home (not for DPDK VFs, which never moved), PF-side settings restored.
pub(super) async fn return_vf(
    ctx: &Ctx,
    pci: &str,
    record: Option<&Record>,
    netns: Option<&Path>,
    ifname: &str,
) -> Result<()> {
    // Fresh sysfs: the names help find a VF the kernel already returned.
    let vf = ctx.sysfs.resolve(pci).ok();
    let hw = crate::hw::from_env();
    if let Some(dev) = record.and_then(|r| r.rdma_device.as_deref()) {
        if let Err(e) = hw.move_rdma_device(dev, ctx.host.fd()) {
            log_warn!("cannot return RDMA device {dev} ({e}); a dying netns hands it back itself");
        }
    }
    if !record.is_some_and(|r| r.dpdk) {
        let sysfs_names = vf.as_ref().map(|v| v.netdevs.clone()).unwrap_or_default();
        let host_nl = Netlink::connect_in(&ctx.host)?;
        let pod = match netns.map(NetNs::open) {
            Some(Ok(ns)) => Some(ns),
            Some(Err(e)) => {
                log_info!("pod namespace is gone ({e}); looking for the VF on the host");
                None
            }
            None => None,
        };
        let pod_nl = pod.as_ref().map(Netlink::connect_in).transpose()?;
        if let (Some(nl), Some(plan)) = (&pod_nl, record.and_then(|r| r.routing.as_ref())) {
            rail::remove(nl, plan).await?;
        }
        let home = Home {
            host: &ctx.host,
            host_nl: &host_nl,
            pci,
            sysfs_names: &sysfs_names,
        };
        home.bring_back(pod_nl.as_ref(), ifname, record).await?;
    }
    if let (Some(record), Some(vf)) = (record, &vf) {
        restore_vf_settings(hw.as_ref(), vf, record)?;
    }
    Ok(())
}

fn release_ipam(ctx: &Ctx) -> Result<()> {
    match Ipam::new(&ctx.conf, &ctx.env) {
        Some(ipam) => ipam.del(),
        None => Ok(()),
    }
}
