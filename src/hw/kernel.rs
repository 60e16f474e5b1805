//! The real hardware: rtnetlink to the PF and RDMA netlink, over the
//! sockets and the exchange of `net::wire` (it reads each reply whole: a
//! big PF's is above 64 KiB).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use netlink_packet_core::NLM_F_ACK;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::protocols::NETLINK_ROUTE;

use super::{rdma, vf_settings, Hardware, RdmaNetnsMode, VfSettings};
use crate::error::{Error, Result};
use crate::net::wire::{encode, open, transact};

pub struct Kernel;

fn pf_index(pf: &str) -> Result<u32> {
    nix::net::if_::if_nametoindex(pf)
        .map_err(|e| Error::DeviceNotFound(format!("PF netdev {pf} not found: {e}")))
}

impl Hardware for Kernel {
    fn vf_state(&self, pf: &str, vf_index: u32) -> Result<VfSettings> {
        let what = format!("read VF {vf_index} of PF {pf}");
        let sock = open(NETLINK_ROUTE, &what)?;
        let request = encode(
            RouteNetlinkMessage::GetLink(vf_settings::get_request(pf_index(pf)?)),
            0,
            1,
        );
        let replies: Vec<RouteNetlinkMessage> = transact(sock.as_fd(), &request, 1, false, &what)?;
        replies
            .iter()
            .find_map(|m| match m {
                RouteNetlinkMessage::NewLink(l) => vf_settings::vf_settings(l, vf_index),
                _ => None,
            })
            .ok_or_else(|| Error::DeviceNotFound(format!("PF {pf} reports no VF {vf_index}")))
    }

    fn set_vf(&self, pf: &str, vf_index: u32, settings: &VfSettings) -> Result<()> {
        let what = format!("set VF {vf_index} on PF {pf}");
        let sock = open(NETLINK_ROUTE, &what)?;
        let index = pf_index(pf)?;
        for (seq, msg) in vf_settings::set_messages(index, vf_index, settings)
            .into_iter()
            .enumerate()
        {
            let seq = seq as u32 + 1;
            let request = encode(RouteNetlinkMessage::NewLink(msg), NLM_F_ACK, seq);
            transact::<RouteNetlinkMessage>(sock.as_fd(), &request, seq, true, &what)?;
        }
        Ok(())
    }

    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode> {
        let what = "query the RDMA netns mode (is ib_core loaded?)";
        let sock = open(rdma::NETLINK_RDMA, what)?;
        let replies: Vec<rdma::RdmaMessage> =
            transact(sock.as_fd(), &rdma::sys_get(1), 1, true, what)?;
        replies
            .iter()
            .find_map(rdma::netns_mode)
            .ok_or_else(|| Error::Netlink(format!("{what}: no netns mode in the reply")))
    }

    fn move_rdma_device(&self, name: &str, netns: BorrowedFd<'_>) -> Result<()> {
        let what = format!("move RDMA device {name}");
        let sock = open(rdma::NETLINK_RDMA, &what)?;
        let devices: Vec<rdma::RdmaMessage> =
            transact(sock.as_fd(), &rdma::dump_devices(1), 1, true, &what)?;
        let index = devices
            .iter()
            .filter_map(rdma::device)
            .find(|(_, n)| n == name)
            .map(|(i, _)| i)
            .ok_or_else(|| {
                Error::DeviceNotFound(format!("{what}: the RDMA subsystem has no device {name}"))
            })?;
        let fd = u32::try_from(netns.as_raw_fd())
            .map_err(|_| Error::Netlink(format!("{what}: bad netns fd")))?;
        transact::<rdma::RdmaMessage>(
            sock.as_fd(),
            &rdma::set_netns(index, fd, 2),
            2,
            true,
            &what,
        )?;
        Ok(())
    }
}
