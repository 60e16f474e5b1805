//! The real hardware: the PF's VF attributes and RDMA devices, through
//! `net::vf_info` and `net::rdma`; RoCE QoS through `net::roce::files`.

use std::os::fd::BorrowedFd;

use super::Hardware;
use crate::error::Result;
use crate::net::rdma::{self, RdmaNetnsMode};
use crate::net::roce::{self, RoceAttr, RocePort, RoceSettings};
use crate::net::vf_info::{self, VfAttr};
use crate::net::NetNs;

pub struct Kernel;

impl Hardware for Kernel {
    fn vf_state(&self, pf: &str, vf: u32) -> Result<Vec<VfAttr>> {
        vf_info::read(pf, vf)
    }

    fn set_vf(&self, pf: &str, vf: u32, attr: &VfAttr) -> Result<()> {
        vf_info::set(pf, vf, attr)
    }

    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode> {
        rdma::read_netns_mode()
    }

    fn move_rdma_device(&self, name: &str, from: &NetNs, to: BorrowedFd<'_>) -> Result<()> {
        // The socket and the task both in `from` (see the trait).
        from.run(|| rdma::move_device(name, to))
    }

    fn dcb(&self, pf: &str) -> Result<crate::net::dcb::Dcb> {
        crate::net::dcb::read(pf)
    }

    fn roce_state(
        &self,
        at: &RocePort,
        kind: &RoceAttr,
        how: roce::Reading,
    ) -> Result<RoceSettings> {
        roce::files::read(at, kind, how)
    }

    fn set_roce(&self, at: &RocePort, attr: &RoceAttr) -> Result<()> {
        roce::files::write(at, attr)
    }
}
