//! Finding a VF's netdev by PCI address wherever it is, and moving it home.

use crate::error::Result;
use crate::net::{Arrival, Link, Mac, NetNs, Netlink};
use crate::{log_info, log_warn};

/// What the VF looked like on the host before railcni touched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLink {
    pub name: String,
    /// `None` for a VF without an Ethernet MAC (DPDK: no netdev).
    pub mac: Option<Mac>,
    pub mtu: u32,
    pub ifindex: u32,
    /// Up on the host before ADD (`None`: a record of a release that did
    /// not say; left down, as then).
    pub up: Option<bool>,
}

/// What an attachment's record says of its VF: enough to find it and
/// bring it home.
#[derive(Debug, Clone, Copy)]
pub struct Saved<'a> {
    pub host: &'a HostLink,
    /// Its name in the pod.
    pub pod_ifname: &'a str,
    /// Its ifindex in the pod, once the move was seen.
    pub pod_ifindex: Option<u32>,
}

/// Is `link` the VF at `pci`? The kernel names a netdev's bus device
/// (IFLA_PARENT_DEV_NAME); devices without one (test stand-ins) are
/// recognised by the ifindex the record saved for that side.
pub fn is_vf(link: &Link, pci: &str, expected_index: Option<u32>) -> bool {
    match &link.parent_dev {
        Some(parent) => parent == pci,
        None => expected_index == Some(link.index),
    }
}

/// Is `link`, found in the pod under the attachment's name, its VF? Without
/// a parent device (test stand-ins), the pod-side ifindex the record saved
/// decides; a record written before the move could not know it, so then the
/// VF's host ifindex (kept across a move unless taken) or MAC does.
pub fn is_vf_in_pod(link: &Link, pci: &str, saved: Option<Saved>) -> bool {
    if link.parent_dev.is_some() {
        return is_vf(link, pci, None);
    }
    let Some(r) = saved else { return false };
    match r.pod_ifindex {
        Some(index) => index == link.index,
        None => link.index == r.host.ifindex || r.host.mac.is_some_and(|m| link.mac == m.0),
    }
}

/// The VF in the host namespace: under a name sysfs lists for it (the
/// kernel's own word), else under its original name, its pod name (kept when
/// a dead netns returns the VF) or `dev<ifindex>` (the kernel's fallback), or
/// by the saved ifindex.
pub fn find_in_host(
    host: &Netlink,
    pci: &str,
    sysfs_names: &[String],
    saved: Option<Saved>,
) -> Result<Option<Link>> {
    for name in sysfs_names {
        if let Some(link) = host.link_by_name(name)? {
            if link.parent_dev.as_deref().is_none_or(|p| p == pci) {
                return Ok(Some(link));
            }
        }
    }
    let Some(r) = saved else { return Ok(None) };
    for name in [
        r.host.name.clone(),
        r.pod_ifname.to_string(),
        format!("dev{}", r.host.ifindex),
    ] {
        if let Some(link) = host.link_by_name(&name)? {
            if is_vf(&link, pci, Some(r.host.ifindex)) {
                return Ok(Some(link));
            }
        }
    }
    match host.link_by_index(r.host.ifindex)? {
        Some(link) if is_vf(&link, pci, Some(r.host.ifindex)) => Ok(Some(link)),
        _ => Ok(None),
    }
}

/// Move the VF from the pod back to the host under `name`, with `arrival`'s
/// settings. If the VF's own name or an altname is taken there, drop the
/// colliding altnames and retry, then fall back to `dev<ifindex>` like the
/// kernel; a move the kernel made but whose rename it refused is home.
fn move_home(
    pod: &Netlink,
    link: &Link,
    (host, host_nl): (&NetNs, &Netlink),
    name: &str,
    arrival: &Arrival,
) -> Result<()> {
    let fallback = format!("dev{}", link.index);
    if pod.move_to(link.index, host, name, arrival)? {
        return Ok(());
    }
    // EEXIST after the kernel moved the link but refused its new name (a
    // driver reload gave it to a new netdev): it is home under its pod name,
    // found there by its PCI address and renamed by `restore` if it can be.
    if pod.link_by_index(link.index)?.is_none() {
        log_warn!(
            "VF (link #{}) is home but kept the name {}",
            link.index,
            link.name
        );
        return Ok(());
    }
    let mut colliding = Vec::new();
    for alt in &link.altnames {
        if host_nl.link_by_name(alt)?.is_some() {
            colliding.push(alt.clone());
        }
    }
    if !colliding.is_empty() {
        pod.del_altnames(link.index, &colliding)?;
        if pod.move_to(link.index, host, name, arrival)? {
            return Ok(());
        }
    }
    log_warn!("name {name} is taken in the host namespace; moving VF home as {fallback}");
    if pod.move_to(link.index, host, &fallback, arrival)? {
        return Ok(());
    }
    Err(crate::error::Error::NameTaken(format!(
        "cannot move VF (link #{}) home to the host: both {name} and {fallback} are taken there",
        link.index
    )))
}

pub struct Home<'a> {
    pub host: &'a NetNs,
    pub host_nl: &'a Netlink,
    pub pci: &'a str,
    pub sysfs_names: &'a [String],
}

impl Home<'_> {
    /// Bring the VF back wherever it is, renamed and with the MTU the record
    /// says (the MAC is the caller's, after the PF-side settings), and return
    /// its host link. A VF that is nowhere to be found is
    /// logged, not an error: DEL must converge.
    pub fn bring_back(
        &self,
        pod: Option<&Netlink>,
        ifname: &str,
        saved: Option<Saved>,
    ) -> Result<Option<Link>> {
        let wanted = saved.map(|r| r.host.name.clone());
        if let Some(pod) = pod {
            if let Some(link) = self.find_in_pod(pod, ifname, saved)? {
                let name = wanted
                    .clone()
                    .unwrap_or_else(|| format!("dev{}", link.index));
                // The host MTU rides in the move's message.
                let arrival = Arrival {
                    mtu: saved
                        .map(|r| r.host.mtu)
                        .filter(|mtu| *mtu != 0 && *mtu != link.mtu),
                    ..Arrival::default()
                };
                let host = (self.host, self.host_nl);
                move_home(pod, &link, host, &name, &arrival)?;
                log_info!(
                    "moved VF {} home from the pod ({}) to the host as {name}",
                    self.pci,
                    link.name
                );
            }
        }
        let Some(link) = find_in_host(self.host_nl, self.pci, self.sysfs_names, saved)? else {
            log_warn!(
                "VF {} is neither in the pod as {ifname} nor in the host; nothing to move home",
                self.pci
            );
            return Ok(None);
        };
        let Some(saved) = saved else {
            return Ok(Some(link));
        };
        if self.restore(&link, saved.host)? {
            return self.host_nl.link_by_index(link.index);
        }
        Ok(Some(link))
    }

    /// The VF in the pod: under the attachment's name, else under any name
    /// by its PCI address (a move the kernel applied but whose rename it
    /// never reached leaves the VF there under its host name).
    fn find_in_pod(
        &self,
        pod: &Netlink,
        ifname: &str,
        saved: Option<Saved>,
    ) -> Result<Option<Link>> {
        if let Some(link) = pod.link_by_name(ifname)? {
            if is_vf_in_pod(&link, self.pci, saved) {
                return Ok(Some(link));
            }
        }
        let links = pod.links()?;
        Ok(links
            .into_iter()
            .find(|l| l.parent_dev.as_deref() == Some(self.pci)))
    }

    /// Rename and set the MTU where the link differs from the record;
    /// whether anything changed.
    fn restore(&self, link: &Link, host: &HostLink) -> Result<bool> {
        let nl = self.host_nl;
        let mut changed = false;
        if link.name != host.name {
            if nl.link_by_name(&host.name)?.is_some() {
                log_warn!(
                    "cannot rename VF {} back to {}: the name is taken; it stays {}",
                    self.pci,
                    host.name,
                    link.name
                );
            } else {
                nl.set_down(link.index)?;
                nl.rename(link.index, &host.name)?;
                changed = true;
            }
        }
        if link.mtu != host.mtu {
            nl.set_mtu(link.index, host.mtu)?;
            changed = true;
        }
        // A whole PF the host had up (its link to the fabric) comes back up.
        if host.up == Some(true) && (changed || !link.up) {
            nl.set_up(link.index)?;
            changed = true;
        }
        Ok(changed)
    }

    /// Restore the netdev MAC the record saved. Runs after the PF-side
    /// settings are restored: some drivers refuse a VF MAC change while the
    /// PF still holds an admin MAC for it.
    pub fn restore_mac(&self, link: &Link, host: &HostLink) -> Result<()> {
        if let Some(mac) = host.mac {
            if link.mac != mac.0 {
                self.host_nl.set_mac(link.index, &mac.0)?;
            }
        }
        Ok(())
    }
}
