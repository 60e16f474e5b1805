//! What railcni does to hardware that this VM cannot reach: VF attributes
//! on the PF (`IFLA_VFINFO_LIST`), RDMA devices, their RoCE QoS and the
//! PF's DCB. One small interface,
//! `Hardware`, with the kernel implementation (the messages are `net`'s)
//! and a recording fake that tests select with
//! `RAILCNI_FAKE_HARDWARE=<state file>`. The fake is compiled in only with
//! the `fake-hardware` feature (tests turn it on; the shipped binaries are
//! built without it), so a stray variable on a node cannot switch a real
//! plugin to it.

mod backend;
#[cfg(any(test, feature = "fake-hardware"))]
pub mod fake;
#[cfg(any(test, feature = "fake-hardware"))]
mod fake_ipoib;
pub mod kernel;

pub use backend::backend;

use std::os::fd::BorrowedFd;

use crate::error::Result;
use crate::net::rdma::RdmaNetnsMode;
use crate::net::roce::{Reading, RoceAttr, RocePort, RoceSettings};
use crate::net::vf_info::VfAttr;
use crate::net::NetNs;

/// `Send + Sync`: CHECK reads a moved device's settings from a thread in
/// the pod's view of sysfs.
pub trait Hardware: Send + Sync {
    /// Every attribute the PF reports for VF `vf`.
    fn vf_state(&self, pf_ifname: &str, vf: u32) -> Result<Vec<VfAttr>>;
    /// Set one attribute (one netlink request).
    fn set_vf(&self, pf_ifname: &str, vf: u32, attr: &VfAttr) -> Result<()>;
    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode>;
    /// Move the RDMA device `name` from the namespace `from`, which holds
    /// it, into the namespace behind `to`. In exclusive mode the kernel
    /// finds the device only from a socket and a task in its own namespace
    /// (nldev_set_doit looks the index up in the socket's, and
    /// rdma_dev_change_netns refuses ENODEV unless the caller's is the
    /// device's), so a device goes home from inside the pod, as rdma-cni's
    /// DEL does (cmd/rdma/main.go, moveRdmaDevFromNs, at 3ba2d20). A move
    /// to the namespace the device is in changes nothing.
    fn move_rdma_device(&self, name: &str, from: &NetNs, to: BorrowedFd<'_>) -> Result<()>;
    /// The PF's DCB (PFC, DSCP map); EOPNOTSUPP from a driver without it.
    fn dcb(&self, pf_ifname: &str) -> Result<crate::net::dcb::Dcb>;
    /// What an RDMA device's port holds now of `kind`'s kind, as the
    /// attributes that restore it; `UnsupportedDevice`: it cannot take it.
    /// `Reading::Observe` changes nothing on the node (CHECK, inspect).
    fn roce_state(&self, at: &RocePort, kind: &RoceAttr, how: Reading) -> Result<RoceSettings>;
    /// Set one RoCE attribute of an RDMA device's port.
    fn set_roce(&self, at: &RocePort, attr: &RoceAttr) -> Result<()>;
}
