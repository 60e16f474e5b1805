//! GC: detach every attachment of this network the runtime no longer
//! knows (see `detach`), then let IPAM release the same.

use std::path::Path;

use crate::attachment::detach::{detach, Attachment, Pod};
use crate::commands::ctx::Ctx;
use crate::error::Result;
use crate::{log_info, log_warn};

pub fn gc(ctx: &Ctx) -> Result<()> {
    let valid = cni::args::valid_attachments(&ctx.conf.raw)?;
    let boot = ctx.node.settings.boot_id();
    for listed in ctx.node.store.list()? {
        let key = (listed.container_id.clone(), listed.ifname.clone());
        if listed.network != ctx.conf.name || valid.contains(&key) {
            continue;
        }
        let _lock = ctx.node.store.lock_vf(&listed.pci)?;
        // Act only on what is read under the lock.
        let Some(record) = ctx.node.store.load(&listed.pci)? else {
            continue;
        };
        if !record.is_for(&key.0, &key.1) {
            continue;
        }
        log_info!(
            "GC: dropping attachment {}/{} of VF {}",
            key.0,
            key.1,
            record.pci
        );
        let pod = record
            .netns()
            .filter(|_| record.netns_alive(boot.as_deref()))
            .map_or(Pod::Unknown, |p| Pod::Path(Path::new(p)));
        if let Err(e) = detach(&ctx.node, &Attachment::of(&record), &ctx.release(), pod) {
            log_warn!("GC: {e}");
        }
    }
    if let Some(ipam) = ctx.ipam() {
        ipam.gc(&valid)?;
    }
    Ok(())
}
