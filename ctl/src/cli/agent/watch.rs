//! The agent's watch on the host namespace's links: a VF that a PF driver
//! reload tore out of a live pod comes back as a new netdev on the host,
//! announced by an `RTM_NEWLINK` on rtnetlink's link group (no polling);
//! its record says which pod held it, and `attachment::reattach` puts it
//! back (or, its pod gone, gives the attachment back). At start every
//! record is looked at once: a VF that came back while the agent was down
//! is re-attached too (dead pods stay `gc`'s business there).

use base::Settings;

use crate::{log_info, log_warn};
use railcni::attachment::reattach::{locate, reattach, Reattach};
use railcni::net::link_events::LinkEvents;
use railcni::node::Node;

/// Subscribe in the calling thread's namespace (the host's), then watch in
/// a thread of its own for as long as the agent runs.
pub fn start(settings: &Settings) -> std::io::Result<()> {
    let events = LinkEvents::subscribe().map_err(|e| std::io::Error::other(e.to_string()))?;
    let settings = settings.clone();
    std::thread::Builder::new()
        .name("link-watch".into())
        .spawn(move || {
            let Ok(node) = Node::new(settings) else {
                return log_warn!("link watch: cannot open the host namespace");
            };
            sweep(&node);
            watch(&node, &events);
        })?;
    Ok(())
}

/// Every record once: VFs that came back while nobody watched.
fn sweep(node: &Node) {
    match node.store.list() {
        Ok(records) => {
            for r in records {
                if locate(node, &r).ok() == Some(Reattach::Reattached) {
                    reattach_vf(node, &r.pci);
                }
            }
        }
        Err(e) => log_warn!("link watch: cannot list attachments: {e}"),
    }
}

fn watch(node: &Node, events: &LinkEvents) {
    log_info!("watching the host's links for VFs a driver reload tore out of their pods");
    loop {
        match events.next() {
            Ok(devices) => {
                for pci in devices {
                    if node.store.load(&pci).ok().flatten().is_some() {
                        reattach_vf(node, &pci);
                    }
                }
            }
            Err(e) => {
                // Events may be lost (ENOBUFS, an undecodable message): look
                // at every record again (and never spin on an error that stays).
                log_warn!("link watch: {e}; looking at every attachment again");
                sweep(node);
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        }
    }
}

fn reattach_vf(node: &Node, pci: &str) {
    let Ok(Some(record)) = node.store.load(pci) else {
        return;
    };
    let outcome = reattach(node, pci);
    let result = match outcome {
        Ok(done @ (Reattach::Reattached | Reattach::Released)) => done.name(),
        Ok(_) => return,
        Err(e) => {
            log_warn!(
                "VF {pci} of {}/{}: cannot re-attach it or, its pod gone, detach it: {e}",
                record.network,
                record.ifname
            );
            "error"
        }
    };
    if let Err(e) = base::stats::record_reattach(&node.settings, &record.network, result) {
        log_warn!("cannot count the re-attach for railcnictl metrics: {e}");
    }
    if result == Reattach::Released.name() && record.ipam_type.is_some() {
        railcni::ipam::count_reclaimed(&node.settings, &record.network, 1);
    }
}
