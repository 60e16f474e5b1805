//! An InfiniBand VF's IPoIB netdev after its RDMA device moved into a pod.
//! The netdev is a client of the device: the move unregistered it and the
//! kernel registered a new one, in the pod since the 2025 kernels and on
//! the host before (design.md §17). So it is found again by the VF's PCI
//! address wherever it is, and put in the pod under the attachment's name
//! with its MTU: ADD and the re-attach after a driver reload share this.

use super::home::{find_in_host, is_vf, Saved};
use crate::error::{Error, Result};
use crate::net::{Arrival, NetNs, Netlink};

/// Where the netdev may be: the host and the pod, each with a socket.
pub struct Sides<'a> {
    pub host_nl: &'a Netlink,
    pub pod: &'a NetNs,
    pub pod_nl: &'a Netlink,
}

/// The VF's netdev as ADD or the re-attach knows it before the move.
pub struct Known<'a> {
    pub pci: &'a str,
    /// The names sysfs lists for it on the host.
    pub sysfs_names: &'a [String],
    /// The record's word on it, for the host side.
    pub saved: Option<Saved<'a>>,
    /// Its ifindex before the move (a stand-in without a PCI parent is
    /// known by it; the kernel keeps it across a move when it is free).
    pub index: Option<u32>,
}

/// Put the VF's IPoIB netdev in the pod as `ifname`, settled with the
/// arrival `arrival` gives for its current MTU; false when `ifname` is
/// taken there (nothing moved).
pub fn place(
    sides: &Sides<'_>,
    vf: &Known<'_>,
    ifname: &str,
    arrival: impl Fn(u32) -> Arrival,
) -> Result<bool> {
    let in_pod = (sides.pod_nl.links()?.into_iter()).find(|l| is_vf(l, vf.pci, vf.index));
    if let Some(link) = in_pod {
        return sides.pod_nl.settle(link.index, ifname, &arrival(link.mtu));
    }
    // A stand-in has no PCI parent and fixed sysfs names: its ifindex.
    let by_index = |index: u32| -> Result<Option<crate::net::Link>> {
        let link = sides.host_nl.link_by_index(index)?;
        Ok(link.filter(|l| is_vf(l, vf.pci, Some(index))))
    };
    let host = match find_in_host(sides.host_nl, vf.pci, vf.sysfs_names, vf.saved)? {
        Some(link) => Some(link),
        None => vf.index.map(by_index).transpose()?.flatten(),
    };
    let link = host.ok_or_else(|| {
        Error::DeviceNotFound(format!(
            "InfiniBand VF {}'s IPoIB netdev is neither in the pod nor on the host after its \
             RDMA device moved",
            vf.pci
        ))
    })?;
    (sides.host_nl).move_to(link.index, sides.pod, ifname, &arrival(link.mtu))
}
