//! DEL: give the attachment back (see `detach`). Converges from any state:
//! netns gone or empty, record missing, repeated DEL.

use std::path::Path;

use crate::attachment::detach::{detach, Attachment, Pod, Release};
use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::node::Node;
use crate::pci;
use crate::{log_info, log_warn};

/// The attachment a DEL names, read without a validated config.
pub struct Named<'a> {
    pub container_id: &'a str,
    pub ifname: &'a str,
    pub netns: Option<&'a Path>,
    /// The config's deviceID, when it had a readable one: read first.
    pub device: Option<&'a str>,
}

/// DEL of an input ADD refuses (a config that no longer parses or
/// validates, an environment it rejects): nothing was attached unless a
/// record says so, and a record holds all detach needs. So detach what
/// the record says, changing nothing else, and log the input's problem
/// rather than fail: a failed DEL strands the sandbox (containerd retries
/// it forever). Only a detach that left something behind fails.
pub fn del_refused(node: &Node, named: &Named<'_>, why: &Error) -> Result<()> {
    let (cid, ifname) = (named.container_id, named.ifname);
    log_warn!(
        "DEL of {cid}/{ifname} with an input ADD would refuse ({}); detaching only what a record holds",
        why.details()
    );
    let likely = named.device.and_then(|d| pci::normalize(d).ok());
    let found = if cid.is_empty() || ifname.is_empty() {
        None
    } else {
        node.store.find_likely(cid, ifname, likely.as_deref())?
    };
    let Some(record) = found else {
        log_info!("no attachment of {cid}/{ifname} on this node: nothing to detach");
        return Ok(());
    };
    let _lock = node.store.lock_vf(&record.pci)?;
    let Some(current) = node
        .store
        .load(&record.pci)?
        .filter(|r| r.is_for(cid, ifname))
    else {
        return Ok(());
    };
    let pod = Pod::given(named.netns);
    if !answered(detach(
        node,
        &Attachment::of(&current),
        &Release::Recorded,
        pod,
    ))? {
        return Ok(());
    }
    log_info!(
        "detached VF {} ({cid}/{ifname}) as its record says",
        current.pci
    );
    Ok(())
}

pub fn del(ctx: &Ctx) -> Result<()> {
    let (cid, ifname) = (&ctx.env.container_id, &ctx.env.ifname);
    let recorded = ctx.record()?;
    let none_recorded = recorded.is_none();
    let pci = match (recorded, &ctx.conf.device_id) {
        (Some(r), _) => r.pci,
        (None, Some(d)) => match pci::normalize(d) {
            Ok(pci) => pci,
            // ADD refused it: nothing was attached under it.
            Err(e) => {
                log_warn!("no record for {cid}/{ifname} and deviceID {d:?} is not a PCI address ({}): nothing to detach", e.details());
                return release_own_lease(ctx);
            }
        },
        (None, None) => {
            log_warn!("no record and no deviceID for {cid}/{ifname}: nothing to detach; releasing IPAM only");
            return release_own_lease(ctx);
        }
    };
    let _lock = match ctx.node.store.lock_vf(&pci) {
        Ok(lock) => Some(lock),
        // No record of this attachment, and a store that cannot be
        // written (EROFS, EACCES) cannot be given one meanwhile: go on
        // without the lock rather than fail a DEL with nothing to detach.
        Err(e @ Error::State(_)) if none_recorded => {
            log_warn!(
                "{}; nothing recorded of {cid}/{ifname} to detach, going on without the lock",
                e.details()
            );
            None
        }
        Err(e) => return Err(e),
    };
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
    let pod = Pod::given(ctx.env.netns.as_deref());
    if !answered(detach(&ctx.node, &attachment, &ctx.release(), pod))? {
        return Ok(());
    }
    let what = current
        .as_ref()
        .map_or_else(|| "no record".to_string(), summary);
    log_info!(
        "detached VF {pci} ({cid}/{ifname}): {what}; {}",
        crate::timing::summary()
    );
    Ok(())
}

/// A detach's result as DEL answers it: a VF held by a namespace railcni
/// cannot reach is answered as done (the runtime must not hang on it), its
/// lease and record kept for gc; `Ok(false)` then.
fn answered(detached: Result<()>) -> Result<bool> {
    match detached {
        Ok(()) => Ok(true),
        Err(Error::HeldElsewhere(why)) => {
            log_warn!("{why}");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// What the record held, for DEL's closing log line.
fn summary(r: &crate::state::Record) -> String {
    let addresses = r
        .result
        .as_ref()
        .map_or_else(|| "no address".into(), super::add::summary_addresses);
    let table = r
        .routing
        .as_ref()
        .map_or_else(|| "none".to_string(), |p| p.table.to_string());
    format!("{addresses}, table {table}")
}

fn release_own_lease(ctx: &Ctx) -> Result<()> {
    match ctx.ipam() {
        Some(ipam) => ipam.release(&ctx.env.container_id, &ctx.env.ifname),
        None => Ok(()),
    }
}
