//! ICMP echo from inside the pod, from a rail's address (so the rail's
//! source rule picks the route), with don't-fragment set and the IP packet
//! exactly the size asked: the operator's `ping -M do -s <size - 28>`.

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::socket::{
    bind, sendto, socket, AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn,
};

use crate::error::{Error, Result};
use crate::net::NetNs;

/// IPv4 and ICMP headers: an IP packet of `size` carries `size - 28` bytes.
pub const HEADERS: usize = 28;

/// What one echo found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Echo {
    Reply(Duration),
    /// Nothing came back in time.
    NoAnswer,
    /// The pod's own route refused the size (EMSGSIZE): its MTU is smaller.
    TooBig,
}

pub struct Pinger {
    fd: OwnedFd,
    id: u16,
}

impl Pinger {
    /// A raw ICMP socket in `ns`, bound to `source`, never fragmenting.
    pub fn open(ns: &NetNs, source: Ipv4Addr) -> Result<Self> {
        let fd = ns.run(|| {
            socket(
                AddressFamily::Inet,
                SockType::Raw,
                SockFlag::SOCK_CLOEXEC,
                SockProtocol::Icmp,
            )
            .map_err(|errno| Error::Kernel {
                what: "cannot open an ICMP socket".into(),
                errno,
                said: None,
            })
        })?;
        bind(
            fd.as_raw_fd(),
            &SockaddrIn::from(std::net::SocketAddrV4::new(source, 0)),
        )
        .map_err(|errno| Error::Kernel {
            what: format!("cannot send from {source}"),
            errno,
            said: None,
        })?;
        let dont_fragment = nix::libc::IP_PMTUDISC_DO;
        // SAFETY: an int option of the size given, on a socket we own.
        let set = unsafe {
            nix::libc::setsockopt(
                fd.as_raw_fd(),
                nix::libc::IPPROTO_IP,
                nix::libc::IP_MTU_DISCOVER,
                std::ptr::from_ref(&dont_fragment).cast(),
                std::mem::size_of::<i32>() as u32,
            )
        };
        if set < 0 {
            return Err(Error::os(
                "cannot set don't-fragment",
                &std::io::Error::last_os_error(),
            ));
        }
        Ok(Pinger {
            fd,
            id: (std::process::id() & 0xffff) as u16,
        })
    }

    /// One echo of an IP packet of `size` bytes to `target`, waiting `wait`.
    pub fn echo(&self, target: Ipv4Addr, size: usize, seq: u16, wait: Duration) -> Result<Echo> {
        let packet = request(self.id, seq, size.saturating_sub(HEADERS));
        let to = SockaddrIn::from(std::net::SocketAddrV4::new(target, 0));
        let sent_at = Instant::now();
        match sendto(self.fd.as_raw_fd(), &packet, &to, MsgFlags::empty()) {
            Ok(_) => {}
            Err(Errno::EMSGSIZE) => return Ok(Echo::TooBig),
            Err(errno) => {
                return Err(Error::Kernel {
                    what: format!("cannot ping {target}"),
                    errno,
                    said: None,
                })
            }
        }
        let mut buf = vec![0u8; size + 64];
        let answered =
            super::receive::receive_until(self.fd.as_fd(), &mut buf, sent_at + wait, |ip| {
                is_reply(ip, target, self.id, seq)
            });
        Ok(if answered {
            Echo::Reply(sent_at.elapsed())
        } else {
            Echo::NoAnswer
        })
    }
}

/// An echo request with `payload` bytes.
fn request(id: u16, seq: u16, payload: usize) -> Vec<u8> {
    let mut p = vec![0u8; 8 + payload];
    p[0] = 8; // echo request
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in p[8..].iter_mut().enumerate() {
        *b = (i & 0xff) as u8;
    }
    let sum = checksum(&p);
    p[2..4].copy_from_slice(&sum.to_be_bytes());
    p
}

/// A raw socket hands over the IP header too: an echo reply from `from`
/// to our id and sequence?
fn is_reply(ip: &[u8], from: Ipv4Addr, id: u16, seq: u16) -> bool {
    let Some(&first) = ip.first() else {
        return false;
    };
    let header = usize::from(first & 0x0f) * 4;
    let Some(icmp) = ip.get(header..header + 8) else {
        return false;
    };
    ip.len() >= 20
        && ip[12..16] == from.octets()
        && icmp[0] == 0
        && icmp[4..6] == id.to_be_bytes()
        && icmp[6..8] == seq.to_be_bytes()
}

/// The Internet checksum (RFC 1071).
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_a_valid_checksum_and_the_asked_size() {
        let p = request(0x1234, 7, 8972);
        assert_eq!(
            p.len() + 20,
            9000,
            "with the IP header: the full 9000-byte packet"
        );
        assert_eq!((p[0], &p[4..8]), (8, &[0x12, 0x34, 0, 7][..]));
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to zero");
    }

    #[test]
    fn only_our_reply_from_the_target_counts() {
        let mut ip = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 1, 0, 0, 172, 16, 0, 1, 172, 16, 0, 0,
        ];
        ip.extend_from_slice(&[0, 0, 0, 0, 0x12, 0x34, 0, 7]);
        let gw = Ipv4Addr::new(172, 16, 0, 1);
        assert!(is_reply(&ip, gw, 0x1234, 7));
        assert!(!is_reply(&ip, gw, 0x1234, 8), "another sequence");
        assert!(
            !is_reply(&ip, Ipv4Addr::new(172, 16, 0, 3), 0x1234, 7),
            "another host"
        );
        ip[20] = 8;
        assert!(!is_reply(&ip, gw, 0x1234, 7), "a request, not a reply");
    }
}
