//! Link changes as the kernel announces them on rtnetlink's link group
//! (`RTMGRP_LINK`): the agent learns of a VF that came back to the host
//! without polling.

use std::os::fd::AsFd;

use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::link::LinkAttribute;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::wire::{messages, recv_datagram};
use crate::error::{Error, Result};

/// rtnetlink's multicast group of link changes.
const RTMGRP_LINK: u32 = 1;

/// A subscription in the namespace of the thread that made it.
pub struct LinkEvents {
    socket: Socket,
}

impl LinkEvents {
    pub fn subscribe() -> Result<Self> {
        let io = |e: std::io::Error| Error::os("cannot subscribe to link changes", &e);
        let mut socket = Socket::new(NETLINK_ROUTE).map_err(io)?;
        socket.bind(&SocketAddr::new(0, RTMGRP_LINK)).map_err(io)?;
        Ok(LinkEvents { socket })
    }

    /// Wait for the next datagram of events: the PCI devices behind the
    /// links it announces (new or changed), sorted, once each. An error
    /// means events may have been lost (ENOBUFS: the kernel dropped some;
    /// a message that does not decode, or the kernel's error): whoever
    /// watches should look at everything again.
    pub fn next(&self) -> Result<Vec<String>> {
        let datagram = recv_datagram(self.socket.as_fd())
            .map_err(|e| Error::os("link events were lost", &e))?;
        pci_devices_announced(&datagram)
    }
}

fn pci_devices_announced(datagram: &[u8]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for msg in messages::<RouteNetlinkMessage>(datagram) {
        let msg = msg.map_err(|e| Error::Netlink(format!("a link event does not decode: {e}")))?;
        match msg.payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => {
                out.extend(link.attributes.into_iter().find_map(|a| match a {
                    LinkAttribute::ParentDevName(p) => Some(p),
                    _ => None,
                }));
            }
            NetlinkPayload::Error(e) => {
                if let Some(code) = e.code {
                    return Err(Error::Kernel {
                        what: "the link event stream".into(),
                        errno: nix::errno::Errno::from_raw(-code.get()),
                        said: None,
                    });
                }
            }
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::LinkMessage;

    fn event(parent: Option<&str>) -> Vec<u8> {
        let mut link = LinkMessage::default();
        if let Some(p) = parent {
            link.attributes.push(LinkAttribute::ParentDevName(p.into()));
        }
        let new_link = RouteNetlinkMessage::NewLink(link);
        crate::net::wire::tests::message(NetlinkPayload::InnerMessage(new_link), 0, 0)
    }

    #[test]
    fn names_each_pci_device_once_and_fails_on_a_broken_message() {
        let datagram = [
            event(Some("0000:3b:02.1")),
            event(None),
            event(Some("0000:3b:02.0")),
            event(Some("0000:3b:02.1")),
        ]
        .concat();
        assert_eq!(
            pci_devices_announced(&datagram).unwrap(),
            ["0000:3b:02.0", "0000:3b:02.1"]
        );
        let mut broken = datagram.clone();
        broken.truncate(datagram.len() - 5);
        assert!(pci_devices_announced(&broken).is_err());
    }

    #[test]
    #[ignore = "root: network namespace; scripts/test.sh runs it"]
    fn a_subscription_sees_a_new_link() {
        // A veth pair made after subscribing is announced (no parent
        // device: none is named, but the datagram comes).
        let events = LinkEvents::subscribe().unwrap();
        let name = format!("le{}", std::process::id() % 100_000);
        let ip = |args: &[&str]| {
            std::process::Command::new("ip")
                .args(args)
                .status()
                .unwrap()
        };
        assert!(ip(&[
            "link",
            "add",
            &name,
            "type",
            "veth",
            "peer",
            "name",
            &format!("{name}p")
        ])
        .success());
        let got = events.next();
        ip(&["link", "del", &name]);
        assert!(got.is_ok(), "{got:?}");
    }
}
