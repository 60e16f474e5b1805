//! Rail probes: proving a rail before and after ADD (`checks` in the network config) and
//! on demand (`railcnictl probe`): ARP for the gateway and for a second holder
//! of our address, and ICMP echoes with don't-fragment at full size. All of
//! it through sockets opened in the pod's namespace: no external binary
//! (the installer image is `FROM scratch`), nothing in the pod changed.

pub mod arp;
pub mod conf;
pub mod icmp;
mod receive;

use std::net::{IpAddr, Ipv4Addr};

use cni::IpConfig;

pub use conf::{Mode, Probes};

use crate::error::{Error, Result};
use crate::log_warn;
use crate::net::{Mac, NetNs};
use arp::ArpSocket;

/// The rail interface being checked, as messages name it.
pub struct MovedVf<'a> {
    pub network: &'a str,
    pub ifname: &'a str,
    pub vf: &'a str,
    pub ns: &'a NetNs,
    pub ifindex: u32,
    pub mac: Mac,
}

impl MovedVf<'_> {
    fn verdict(&self, mode: Mode, what: String) -> Result<()> {
        let msg = format!(
            "network {}, {} (VF {}): {what}",
            self.network, self.ifname, self.vf
        );
        match mode {
            Mode::Require => Err(Error::RailCheck(msg)),
            Mode::Warn => {
                log_warn!("rail check: {msg}");
                Ok(())
            }
            Mode::Off => Ok(()),
        }
    }
}

fn v4(addresses: impl Iterator<Item = IpAddr>) -> Vec<Ipv4Addr> {
    addresses
        .filter_map(|a| match a {
            IpAddr::V4(a) => Some(a),
            IpAddr::V6(_) => None,
        })
        .collect()
}

/// Before the addresses go on: does anyone else answer for one of them?
pub fn address_conflict(checks: &Probes, rail: &MovedVf<'_>, ips: &[IpConfig]) -> Result<()> {
    if checks.address_conflict == Mode::Off {
        return Ok(());
    }
    let socket = ArpSocket::open(rail.ns, rail.ifindex, rail.mac)?;
    for ours in v4(ips.iter().map(|ip| ip.address.addr())) {
        if let Some(holder) = socket.conflict(ours, checks.retries, checks.per_try())? {
            rail.verdict(
                checks.address_conflict,
                format!(
                    "address {ours} is already in use by {holder}, which answered an RFC 5227 ARP probe; \
                     find the host with that MAC (a stale static address, another node's pool) and free it"
                ),
            )?;
        }
    }
    Ok(())
}

/// With the interface up and addressed: does each gateway answer ARP?
pub fn gateway(checks: &Probes, rail: &MovedVf<'_>, ips: &[IpConfig]) -> Result<()> {
    if checks.gateway == Mode::Off {
        return Ok(());
    }
    let socket = ArpSocket::open(rail.ns, rail.ifindex, rail.mac)?;
    for ip in ips {
        let (IpAddr::V4(ours), Some(IpAddr::V4(gw))) = (ip.address.addr(), ip.gateway) else {
            if ip.gateway.is_none() {
                rail.verdict(
                    checks.gateway,
                    format!("address {} has no gateway to check", ip.address),
                )?;
            }
            continue;
        };
        if socket
            .resolve(ours, gw, checks.retries, checks.per_try())?
            .is_none()
        {
            rail.verdict(
                checks.gateway,
                format!(
                    "gateway {gw} does not answer ARP from {ours} ({} tries in {} ms): check the cable, \
                     the switch port and its VLAN, and that the leaf holds {gw}",
                    checks.retries, checks.timeout_ms
                ),
            )?;
        }
    }
    Ok(())
}
