//! DEL: give the attachment back (see `detach`). Converges from any state:
//! netns gone or empty, record missing, repeated DEL.

use super::Ctx;
use crate::attachment::detach::{detach, Attachment};
use crate::error::Result;
use crate::vf::normalize_pci;
use crate::{log_info, log_warn};

pub async fn del(ctx: &Ctx) -> Result<()> {
    let (cid, ifname) = (&ctx.env.container_id, &ctx.env.ifname);
    let pci = match (ctx.record()?, &ctx.conf.device_id) {
        (Some(r), _) => r.pci,
        (None, Some(d)) => normalize_pci(d)?,
        (None, None) => {
            log_warn!("no record and no deviceID for {cid}/{ifname}: nothing to return; releasing IPAM only");
            return release_own_lease(ctx);
        }
    };
    let _lock = ctx.node.store.lock_vf(&pci)?;
    // Re-read under the lock: another invocation may have changed it.
    let current = ctx.node.store.load(&pci)?;
    if current.as_ref().is_some_and(|r| !r.is_for(cid, ifname)) {
        log_info!("VF {pci} now belongs to another attachment; releasing only this one's IPAM");
        return release_own_lease(ctx);
    }
    let attachment = Attachment {
        pci: &pci,
        container_id: cid,
        ifname,
        record: current.as_ref(),
    };
    detach(
        &ctx.node,
        &attachment,
        &ctx.release(),
        ctx.env.netns.as_deref(),
        None,
    )
    .await?;
    let what = current.as_ref().map_or_else(
        || "no record".to_string(),
        |r| {
            let addresses = r
                .result
                .as_ref()
                .and_then(|v| cni::CniResult::from_value(v).ok())
                .map_or_else(
                    || "no address".into(),
                    |res| super::add::summary_addresses(&res),
                );
            let table = r
                .routing
                .as_ref()
                .map_or_else(|| "none".to_string(), |p| p.table.to_string());
            format!("{addresses}, table {table}")
        },
    );
    log_info!(
        "detached VF {pci} ({cid}/{ifname}): {what}; {}",
        crate::timing::summary()
    );
    Ok(())
}

fn release_own_lease(ctx: &Ctx) -> Result<()> {
    match ctx.ipam() {
        Some(ipam) => ipam.release(&ctx.env.container_id, &ctx.env.ifname),
        None => Ok(()),
    }
}
