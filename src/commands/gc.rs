//! GC: drop every attachment of this network the runtime no longer knows,
//! returning its VF home, then let IPAM release the same.

use super::vf::Home;
use super::Ctx;
use crate::cni::version::Version;
use crate::error::{Error, Result};
use crate::ipam::Ipam;
use crate::net::{NetNs, Netlink};
use crate::{log_info, log_warn};

pub async fn gc(ctx: &Ctx) -> Result<()> {
    ctx.conf.version.require(Version::V1_1, "GC")?;
    let valid = railcni_ipam::cni::valid_attachments(&ctx.conf.raw)
        .map_err(|e| Error::config("cni.dev/valid-attachments", e.to_string()))?;
    let host_nl = Netlink::connect_in(&ctx.host)?;
    for record in ctx.store.list()? {
        let key = (record.container_id.clone(), record.ifname.clone());
        if record.network != ctx.conf.name || valid.contains(&key) {
            continue;
        }
        let _lock = ctx.store.lock_vf(&record.pci)?;
        log_info!(
            "GC: dropping attachment {}/{} of VF {}",
            key.0,
            key.1,
            record.pci
        );
        let pod = if record.netns_alive() {
            record
                .netns
                .as_deref()
                .and_then(|p| NetNs::open(p.as_ref()).ok())
        } else {
            None
        };
        let pod_nl = pod.as_ref().map(Netlink::connect_in).transpose()?;
        let sysfs_names = ctx
            .sysfs
            .resolve(&record.pci)
            .map(|vf| vf.netdevs)
            .unwrap_or_default();
        let home = Home {
            host: &ctx.host,
            host_nl: &host_nl,
            pci: &record.pci,
            sysfs_names: &sysfs_names,
        };
        match home
            .bring_back(pod_nl.as_ref(), &record.ifname, Some(&record))
            .await
        {
            Ok(_) => ctx.store.remove(&record.pci)?,
            Err(e) => log_warn!(
                "GC: cannot return VF {}: {e}; keeping its record",
                record.pci
            ),
        }
    }
    if let Some(ipam) = Ipam::new(&ctx.conf, &ctx.env) {
        ipam.gc(&valid)?;
    }
    Ok(())
}
