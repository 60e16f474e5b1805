//! The real hardware: rtnetlink to the PF and RDMA netlink, over plain
//! netlink-sys sockets. A PF with ~220+ VFs answers RTM_GETLINK with more
//! than 64 KiB, beyond rtnetlink's read buffer; `recv_from_full` sizes each
//! read to the datagram.

use std::os::fd::RawFd;

use netlink_packet_core::{NetlinkDeserializable, NetlinkMessage, NetlinkPayload, NLM_F_MULTIPART};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::{rdma, vf_settings, Hardware, RdmaNetnsMode, VfSettings};
use crate::error::{Error, Result};

pub struct Kernel;

fn open(protocol: isize, what: &str) -> Result<Socket> {
    let io = |e: std::io::Error| Error::Netlink(format!("{what}: {e}"));
    let mut s = Socket::new(protocol).map_err(io)?;
    s.bind_auto().map_err(io)?;
    s.connect(&SocketAddr::new(0, 0)).map_err(io)?;
    Ok(s)
}

/// Send one request; collect the replies until the ACK, DONE, or a single
/// (non-multipart) answer when no ACK was asked for.
fn transact<T>(sock: &Socket, request: &[u8], what: &str) -> Result<Vec<T>>
where
    T: NetlinkDeserializable + std::fmt::Debug,
{
    let io = |e: std::io::Error| Error::Netlink(format!("{what}: {e}"));
    sock.send(request, 0).map_err(io)?;
    let mut out = Vec::new();
    loop {
        let (buf, _) = sock.recv_from_full().map_err(io)?;
        let mut offset = 0;
        while offset < buf.len() {
            let msg = NetlinkMessage::<T>::deserialize(&buf[offset..])
                .map_err(|e| Error::Netlink(format!("{what}: undecodable reply: {e}")))?;
            let len = msg.header.length as usize;
            let multipart = msg.header.flags & NLM_F_MULTIPART != 0;
            match msg.payload {
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) if e.code.is_none() => return Ok(out),
                NetlinkPayload::Error(e) => {
                    let errno = std::io::Error::from_raw_os_error(e.raw_code().abs());
                    return Err(Error::Netlink(format!("{what}: {errno}")));
                }
                NetlinkPayload::InnerMessage(m) => {
                    out.push(m);
                    if !multipart && request_wants_no_ack(request) {
                        return Ok(out);
                    }
                }
                _ => {}
            }
            if len == 0 {
                break;
            }
            offset += (len + 3) & !3;
        }
    }
}

fn request_wants_no_ack(request: &[u8]) -> bool {
    let flags = u16::from_ne_bytes([request[6], request[7]]);
    flags & netlink_packet_core::NLM_F_ACK == 0
}

fn pf_index(pf: &str) -> Result<u32> {
    nix::net::if_::if_nametoindex(pf)
        .map_err(|e| Error::DeviceNotFound(format!("PF netdev {pf} not found: {e}")))
}

impl Hardware for Kernel {
    fn vf_state(&self, pf: &str, vf_index: u32) -> Result<VfSettings> {
        let what = format!("read VF {vf_index} of PF {pf}");
        let sock = open(NETLINK_ROUTE, &what)?;
        let request = vf_settings::encode(
            RouteNetlinkMessage::GetLink(vf_settings::get_request(pf_index(pf)?)),
            false,
            1,
        );
        let replies: Vec<RouteNetlinkMessage> = transact(&sock, &request, &what)?;
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
            let request =
                vf_settings::encode(RouteNetlinkMessage::NewLink(msg), true, seq as u32 + 1);
            transact::<RouteNetlinkMessage>(&sock, &request, &what)?;
        }
        Ok(())
    }

    fn rdma_netns_mode(&self) -> Result<RdmaNetnsMode> {
        let what = "query the RDMA netns mode (is ib_core loaded?)";
        let sock = open(rdma::NETLINK_RDMA, what)?;
        let replies: Vec<rdma::RdmaMessage> = transact(&sock, &rdma::sys_get(1), what)?;
        replies
            .iter()
            .find_map(rdma::netns_mode)
            .ok_or_else(|| Error::Netlink(format!("{what}: no netns mode in the reply")))
    }

    fn move_rdma_device(&self, name: &str, netns_fd: RawFd) -> Result<()> {
        let what = format!("move RDMA device {name}");
        let sock = open(rdma::NETLINK_RDMA, &what)?;
        let devices: Vec<rdma::RdmaMessage> = transact(&sock, &rdma::dump_devices(1), &what)?;
        let index = devices
            .iter()
            .filter_map(rdma::device)
            .find(|(_, n)| n == name)
            .map(|(i, _)| i)
            .ok_or_else(|| {
                Error::DeviceNotFound(format!("{what}: the RDMA subsystem has no device {name}"))
            })?;
        transact::<rdma::RdmaMessage>(&sock, &rdma::set_netns(index, netns_fd as u32, 2), &what)?;
        Ok(())
    }
}
