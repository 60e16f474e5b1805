//! ARP from inside the pod, on a packet socket bound to the rail
//! interface: who answers for the gateway, and whether anyone else holds
//! our address (an RFC 5227 probe: sender address 0.0.0.0, so no neighbour
//! table anywhere learns from it). Neither touches the pod's own tables.

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::net::{Mac, NetNs};

const ETH_P_ARP: u16 = 0x0806;
const REQUEST: u16 = 1;
const REPLY: u16 = 2;

/// An ARP packet for Ethernet and IPv4 (the link header is the kernel's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arp {
    op: u16,
    sender_mac: [u8; 6],
    sender_ip: Ipv4Addr,
    target_ip: Ipv4Addr,
}

impl Arp {
    fn encode(&self) -> [u8; 28] {
        let mut b = [0u8; 28];
        b[0..2].copy_from_slice(&1u16.to_be_bytes()); // Ethernet
        b[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4
        b[4] = 6;
        b[5] = 4;
        b[6..8].copy_from_slice(&self.op.to_be_bytes());
        b[8..14].copy_from_slice(&self.sender_mac);
        b[14..18].copy_from_slice(&self.sender_ip.octets());
        // The target MAC stays zero: it is what is asked.
        b[24..28].copy_from_slice(&self.target_ip.octets());
        b
    }

    fn decode(b: &[u8]) -> Option<Arp> {
        if b.len() < 28 || b[0..2] != [0, 1] || b[2..4] != [8, 0] || b[4] != 6 || b[5] != 4 {
            return None;
        }
        let ip = |at: usize| Ipv4Addr::new(b[at], b[at + 1], b[at + 2], b[at + 3]);
        let mut sender_mac = [0u8; 6];
        sender_mac.copy_from_slice(&b[8..14]);
        Some(Arp {
            op: u16::from_be_bytes([b[6], b[7]]),
            sender_mac,
            sender_ip: ip(14),
            target_ip: ip(24),
        })
    }
}

pub struct ArpSocket {
    fd: OwnedFd,
    ifindex: u32,
    mac: [u8; 6],
}

impl ArpSocket {
    /// A packet socket for ARP on interface `ifindex` (MAC `mac`) of `ns`.
    pub fn open(ns: &NetNs, ifindex: u32, mac: Mac) -> Result<Self> {
        let fd = ns.run(|| {
            // SAFETY: a plain socket(2) call; the descriptor is owned at once.
            let raw = unsafe {
                nix::libc::socket(
                    nix::libc::AF_PACKET,
                    nix::libc::SOCK_DGRAM | nix::libc::SOCK_CLOEXEC,
                    i32::from(ETH_P_ARP.to_be()),
                )
            };
            if raw < 0 {
                return Err(Error::os(
                    "cannot open an ARP socket",
                    &std::io::Error::last_os_error(),
                ));
            }
            // SAFETY: `raw` is a fresh descriptor nobody else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        })?;
        let socket = ArpSocket {
            fd,
            ifindex,
            mac: mac.0,
        };
        let addr = socket.link_addr();
        // SAFETY: `addr` is a valid sockaddr_ll of the size given.
        let bound = unsafe {
            nix::libc::bind(
                socket.fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast(),
                std::mem::size_of::<nix::libc::sockaddr_ll>() as u32,
            )
        };
        if bound < 0 {
            return Err(Error::os(
                format!("cannot bind the ARP socket to link #{ifindex}"),
                &std::io::Error::last_os_error(),
            ));
        }
        Ok(socket)
    }

    /// The interface, ARP, and the broadcast address as the destination.
    fn link_addr(&self) -> nix::libc::sockaddr_ll {
        let mut addr = nix::libc::sockaddr_ll {
            sll_family: nix::libc::AF_PACKET as u16,
            sll_protocol: ETH_P_ARP.to_be(),
            sll_ifindex: self.ifindex as i32,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 6,
            sll_addr: [0; 8],
        };
        addr.sll_addr[..6].copy_from_slice(&[0xff; 6]);
        addr
    }

    fn send(&self, arp: &Arp) -> Result<()> {
        let bytes = arp.encode();
        let addr = self.link_addr();
        // SAFETY: the buffer and `addr` are valid for the lengths given.
        let sent = unsafe {
            nix::libc::sendto(
                self.fd.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                0,
                std::ptr::from_ref(&addr).cast(),
                std::mem::size_of::<nix::libc::sockaddr_ll>() as u32,
            )
        };
        if sent < 0 {
            return Err(Error::os(
                "cannot send ARP",
                &std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Send `ask` up to `tries` times, each waiting `per_try` for a packet
    /// that `answers`; the MAC of the first that does.
    fn ask(
        &self,
        ask: &Arp,
        tries: u32,
        per_try: Duration,
        answers: impl Fn(&Arp) -> bool,
    ) -> Result<Option<Mac>> {
        let mut buf = [0u8; 1500];
        for _ in 0..tries.max(1) {
            self.send(ask)?;
            let mut found = None;
            let answered = super::receive::receive_until(
                self.fd.as_fd(),
                &mut buf,
                Instant::now() + per_try,
                |datagram| {
                    match Arp::decode(datagram) {
                        // Our own requests come back to a packet socket too.
                        Some(arp) if arp.sender_mac != self.mac && answers(&arp) => {
                            found = Some(Mac(arp.sender_mac));
                            true
                        }
                        _ => false,
                    }
                },
            );
            if answered {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// Who has `gateway`? Asked from `ours`; the MAC that answered.
    pub fn resolve(
        &self,
        ours: Ipv4Addr,
        gateway: Ipv4Addr,
        tries: u32,
        per_try: Duration,
    ) -> Result<Option<Mac>> {
        let ask = Arp {
            op: REQUEST,
            sender_mac: self.mac,
            sender_ip: ours,
            target_ip: gateway,
        };
        self.ask(&ask, tries, per_try, |a| {
            a.op == REPLY && a.sender_ip == gateway
        })
    }

    /// RFC 5227: does anyone answer for `ours`, or probe for it too? Its MAC.
    pub fn conflict(&self, ours: Ipv4Addr, tries: u32, per_try: Duration) -> Result<Option<Mac>> {
        let probe = Arp {
            op: REQUEST,
            sender_mac: self.mac,
            sender_ip: Ipv4Addr::UNSPECIFIED,
            target_ip: ours,
        };
        self.ask(&probe, tries, per_try, |a| {
            a.sender_ip == ours
                || (a.op == REQUEST && a.sender_ip.is_unspecified() && a.target_ip == ours)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_in_the_wire_layout() {
        let a = Arp {
            op: REQUEST,
            sender_mac: [2, 0, 0, 0, 0, 1],
            sender_ip: Ipv4Addr::new(172, 16, 0, 0),
            target_ip: Ipv4Addr::new(172, 16, 0, 1),
        };
        let b = a.encode();
        // htype 1, ptype 0x0800, hlen 6, plen 4, op 1 (as `arping` sends it)
        assert_eq!(&b[..8], &[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(&b[18..24], &[0; 6], "the asked-for MAC is zero");
        assert_eq!(Arp::decode(&b), Some(a));
        assert_eq!(Arp::decode(&b[..27]), None);
    }
}
