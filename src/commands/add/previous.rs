//! ADD's second phase: the VF already has a record. Replay a finished ADD
//! of the same attachment, refuse a VF held by another live pod, else give
//! back what is left (our own interrupted ADD, or a dead pod's) first.

use cni::CniResult;

use super::intent::Intent;
use super::system::Sockets;
use crate::attachment::detach::{detach, still_held, Attachment, Pod};
use crate::commands::ctx::Ctx;
use crate::error::{Error, Result};
use crate::net::Link;
use crate::state::{Phase, Record};
use crate::vf::home::find_in_host;
use crate::{log_info, log_warn};

pub enum Previous {
    Replay(CniResult),
    /// The old attachment was undone; the VF's host link, if found.
    Cleared(Option<Link>),
}

/// What to do about a record that already exists for the VF.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// The same attachment finished: return its result again.
    Replay,
    /// Another attachment in a live namespace holds the VF.
    Busy,
    /// Our own interrupted ADD (`same`) or a dead pod's: detach it first.
    Clear { same: bool },
}

fn judge(existing: &Record, container_id: &str, ifname: &str, netns_alive: bool) -> Verdict {
    let same = existing.is_for(container_id, ifname);
    if same && existing.phase == Phase::Attached && existing.result.is_some() {
        Verdict::Replay
    } else if !same && netns_alive {
        Verdict::Busy
    } else {
        Verdict::Clear { same }
    }
}

pub fn settle(
    ctx: &Ctx,
    intent: &Intent<'_>,
    sockets: &Sockets<'_>,
    existing: &Record,
) -> Result<Previous> {
    let alive = existing.netns_alive(ctx.node.settings.boot_id().as_deref());
    let same = match judge(existing, &ctx.env.container_id, &ctx.env.ifname, alive) {
        Verdict::Replay => {
            log_info!(
                "repeated ADD for {}/{}: returning the recorded result",
                existing.container_id,
                existing.ifname
            );
            let recorded = existing.result.clone().unwrap_or_default();
            return Ok(Previous::Replay(recorded));
        }
        Verdict::Busy => return Err(busy(existing)),
        Verdict::Clear { same } => same,
    };
    log_warn!(
        "clearing {} record of VF {} (container {}, {})",
        if same { "an interrupted" } else { "a stale" },
        existing.pci,
        existing.container_id,
        existing.ifname
    );
    let pod = if same {
        Pod::Socket(sockets.pod, sockets.pod_nl)
    } else {
        // Dead: never look inside whatever the path names now, only by
        // the identity the record holds.
        Pod::Unknown
    };
    let attachment = Attachment::of(existing);
    detach(&ctx.node, &attachment, &ctx.release(), pod)?;
    if let Some(ipam) = ctx.ipam() {
        // A missed DEL rarely comes alone (a reboot, a kubelet restart).
        let (node, network) = (&ctx.node, &ctx.conf.name);
        ipam.reclaim_dead(&|c, i| still_held(node, network, c, i))?;
    }
    if existing.dpdk {
        return Ok(Previous::Cleared(None));
    }
    let names = &intent.vf.netdevs;
    let link = find_in_host(
        sockets.host_nl,
        &existing.pci,
        names,
        Some(existing.saved_vf()),
    )?;
    Ok(Previous::Cleared(link))
}

fn busy(existing: &Record) -> Error {
    Error::DeviceBusy(format!(
        "VF {} is attached to container {} as {} in live namespace {}; DEL that attachment first",
        existing.pci,
        existing.container_id,
        existing.ifname,
        existing.netns().unwrap_or("?")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(phase: Phase, result: bool) -> Record {
        let mut r = Record::sample();
        r.phase = phase;
        r.result = result.then(CniResult::default);
        r
    }

    #[test]
    fn an_existing_record_is_replayed_refused_or_cleared() {
        let done = record(Phase::Attached, true);
        assert_eq!(judge(&done, "c1", "net1", true), Verdict::Replay);
        assert_eq!(judge(&done, "c2", "net1", true), Verdict::Busy);
        assert_eq!(
            judge(&done, "c2", "net1", false),
            Verdict::Clear { same: false },
            "a dead pod's record never blocks"
        );
        let interrupted = record(Phase::Adding, false);
        assert_eq!(
            judge(&interrupted, "c1", "net1", true),
            Verdict::Clear { same: true },
            "our own interrupted ADD is redone, not replayed"
        );
        assert_eq!(judge(&interrupted, "c1", "net2", true), Verdict::Busy);
    }
}
