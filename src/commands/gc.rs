//! GC: drop every attachment of this network the runtime no longer knows,
//! returning its VF home, then let IPAM release the same.

use std::path::Path;

use super::del::return_vf;
use super::Ctx;
use crate::cni::version::Version;
use crate::error::{Error, Result};
use crate::ipam::Ipam;
use crate::{log_info, log_warn};

pub async fn gc(ctx: &Ctx) -> Result<()> {
    ctx.conf.version.require(Version::V1_1, "GC")?;
    let valid = railcni_ipam::cni::valid_attachments(&ctx.conf.raw)
        .map_err(|e| Error::config("cni.dev/valid-attachments", e.to_string()))?;
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
        let netns = record
            .netns
            .as_deref()
            .filter(|_| record.netns_alive())
            .map(Path::new);
        match return_vf(ctx, &record.pci, Some(&record), netns, &record.ifname).await {
            Ok(()) => ctx.store.remove(&record.pci)?,
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
