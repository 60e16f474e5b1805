//! Is a live namespace a record's pod? The one judgement DEL's search, ADD's
//! reclaim, gc, the agent and `status` make when a pod's path is gone.
//!
//! A record names its pod's namespace by nsfs device and inode, and (since
//! the release after fb9ecda) by its cookie. The kernel hands out inode
//! numbers lowest-free, so a namespace made after the pod's died usually
//! has the dead one's inode (design.md §17): an inode alone never proves a
//! namespace is the pod's. The cookie is never reused within a boot. A
//! namespace found by its inode is the pod's when its cookie matches the
//! record's; where there is no cookie to compare (a record an older railcni
//! wrote, a kernel before 5.14), only when the pod's VF is in it.

use crate::net::{NetNs, Netlink};
use crate::state::Record;
use crate::vf::home::is_vf_in_pod;
use crate::{log_debug, log_info, log_warn};

/// The rule a node judges namespaces by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Records carry the namespace's cookie (Linux 5.14+).
    Cookie,
    /// No cookies on this kernel: a namespace found by its inode is the
    /// pod's only while the pod's VF is in it.
    VfPresence,
}

impl Rule {
    /// The rule on this node's kernel.
    pub fn of_this_kernel() -> Rule {
        if base::netns_cookie::supported() {
            Rule::Cookie
        } else {
            Rule::VfPresence
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Rule::Cookie => {
                "a pod's namespace is confirmed by its netns cookie, never by its inode alone"
            }
            Rule::VfPresence => {
                "no netns cookies (kernel before 5.14): a namespace found by its inode is the \
                 pod's only while its VF is in it"
            }
        }
    }
}

/// How a namespace was confirmed as the record's pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmed {
    Cookie,
    HoldsVf,
}

/// Is `ns`, which has the inode `record` names, the record's pod?
pub fn confirm(ns: &NetNs, record: &Record) -> Option<Confirmed> {
    match (record.proof.netns_cookie, ns.cookie()) {
        (Some(want), Some(got)) => (want == got).then_some(Confirmed::Cookie),
        _ => holds_vf(ns, record).then_some(Confirmed::HoldsVf),
    }
}

/// Is the record's VF in `ns` (by its PCI device; see `is_vf_in_pod`)?
fn holds_vf(ns: &NetNs, record: &Record) -> bool {
    let links = Netlink::connect_in(ns).and_then(|nl| nl.links());
    match links {
        Ok(links) => links
            .iter()
            .any(|l| is_vf_in_pod(l, &record.pci, Some(record.saved_vf()))),
        Err(e) => {
            log_warn!("cannot list the links of {}: {}", ns.label(), e.details());
            false
        }
    }
}

/// The record's pod namespace through a process in a namespace with the
/// inode it names (its path gone), and that process: `None` when no
/// process is in such a namespace, or the one that is there is another
/// pod's (the inode was reused).
pub fn held_by_process(record: &Record) -> Option<(NetNs, u32)> {
    let (ns, pid) = NetNs::by_inode_through_process(record.proof.netns_id?)?;
    match confirm(&ns, record) {
        Some(how) => {
            log_debug!(
                "the pod namespace of {}/{} is still held by process {pid} (confirmed by {})",
                record.container_id,
                record.ifname,
                match how {
                    Confirmed::Cookie => "its cookie",
                    Confirmed::HoldsVf => "the VF in it",
                }
            );
            Some((ns, pid))
        }
        None => {
            log_info!(
                "process {pid} is in a namespace with the inode of {}/{}'s, but it is another \
                 pod's (the kernel reused the number): not the pod's",
                record.container_id,
                record.ifname
            );
            None
        }
    }
}
