//! Everything that touches the kernel: namespaces, rtnetlink, sysctl, and
//! every netlink message railcni builds or reads: links and addresses,
//! routes and rules, a link's IPv4 settings (`devconf`), a VF's attributes
//! on its PF (`vf_info`), RDMA devices (`rdma`) and their RoCE QoS files
//! (`roce`, sysfs and configfs rather than netlink), link events
//! (`link_events`), all over one wire (`wire`).
//!
//! A `Netlink` is a rtnetlink socket created inside one namespace (entered
//! from the caller's thread, see `NetNs::run`); the socket stays bound to
//! its namespace. Messages are built with netlink-packet-route's types (no
//! async builder crate: `link`, `route` fill them in) and exchanged through `exchange`: one blocking
//! send and read on the socket (`wire`, which the hardware layer shares),
//! since the kernel answers an rtnetlink request within the send. A request
//! is done only when the kernel answered it (`answer`); a socket that closes
//! first is an error, never "nothing there".
//!
//! Synchronous, like the whole plugin path: a CNI call is one short process
//! with nothing to wait on concurrently, so there is no async runtime (the
//! agent, which serves HTTP and watches link events, has one).

pub mod answer;
pub mod dcb;
pub mod devconf;
pub mod gid;
pub mod guid;
pub mod ib_port;
pub mod link;
pub mod link_events;
pub mod mac;
pub mod netns;
pub mod pod_sysfs;
pub mod rdma;
pub mod roce;
pub mod route;
pub mod sysctl;
pub mod vf_info;
pub mod wire;

use std::cell::Cell;
use std::os::fd::{AsFd, FromRawFd, IntoRawFd, OwnedFd};

use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket};

pub(crate) use answer::nl_err;
pub use answer::Failure;
pub use guid::Guid;
pub use link::{Arrival, Link};
pub use mac::Mac;
pub use netns::NetNs;

use crate::error::{Error, Result};

pub struct Netlink {
    socket: OwnedFd,
    /// The last request's sequence number.
    seq: Cell<u32>,
}

impl Netlink {
    /// Open a socket in `ns`.
    pub fn connect_in(ns: &NetNs) -> Result<Self> {
        let socket = ns.run(|| {
            let s = Socket::new(NETLINK_ROUTE)
                .map_err(|e| Error::os("cannot open an rtnetlink socket", &e))?;
            wire::ask_for_reasons(&s);
            Ok(s)
        })?;
        // SAFETY: the descriptor comes straight from a socket we own and give up here.
        let socket = unsafe { OwnedFd::from_raw_fd(socket.into_raw_fd()) };
        wire::with_deadline(socket.as_fd(), "rtnetlink")?;
        Ok(Netlink {
            socket,
            seq: Cell::new(0),
        })
    }

    /// The cookie of the namespace this socket was made in (Linux 5.14+):
    /// the identity the kernel never reuses within a boot.
    pub fn netns_cookie(&self) -> Option<u64> {
        base::netns_cookie::of_socket(self.socket.as_fd())
    }

    /// Send one request and collect its replies until the kernel's answer.
    fn exchange(
        &self,
        payload: RouteNetlinkMessage,
        flags: u16,
    ) -> std::result::Result<Vec<RouteNetlinkMessage>, Failure> {
        let seq = self.seq.get().wrapping_add(1);
        self.seq.set(seq);
        let request = wire::encode(payload, flags, seq);
        wire::exchange(self.socket.as_fd(), &request, seq, flags, "rtnetlink").unwrap_or_else(|e| {
            crate::log_warn!("{e}");
            Err(match e {
                Error::Kernel { errno, .. } => Failure::Socket(errno),
                _ => Failure::Undecodable,
            })
        })
    }
}
