//! Everything that touches the kernel: namespaces, rtnetlink, sysctl.
//!
//! A `Netlink` is a rtnetlink socket created inside one namespace (entered
//! from the caller's thread, see `NetNs::run`) and used from the caller's
//! thread; the socket stays bound to its namespace. Messages are built with
//! rtnetlink's builders and exchanged through `exchange`, which counts a
//! request as done only when the kernel answered it (`answer`). A socket
//! that closes first is an error, never "nothing there".

pub mod answer;
pub mod devconf;
pub mod link;
pub mod mac;
pub mod netns;
pub mod route;
pub mod sysctl;

use std::os::fd::{FromRawFd, IntoRawFd};

use futures_util::StreamExt;
use netlink_packet_core::NetlinkMessage;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, TokioSocket};
use rtnetlink::Handle;

use answer::Answer;
pub use answer::Failure;
pub use link::Link;
pub use mac::Mac;
pub use netns::NetNs;

use crate::error::{Error, Result};

pub struct Netlink {
    handle: Handle,
}

impl Netlink {
    /// Open a socket in `ns`.
    pub fn connect_in(ns: &NetNs) -> Result<Self> {
        let socket = ns.run(|| {
            Socket::new(NETLINK_ROUTE)
                .map_err(|e| Error::Netlink(format!("cannot open rtnetlink socket: {e}")))
        })?;
        socket
            .set_non_blocking(true)
            .map_err(|e| Error::Netlink(format!("cannot set up rtnetlink socket: {e}")))?;
        // SAFETY: the descriptor comes straight from a socket we own and give up here.
        let socket = unsafe { TokioSocket::from_raw_fd(socket.into_raw_fd()) };
        let (mut connection, handle, _) = rtnetlink::from_socket(socket);
        // Hand ACKs and DONEs to `exchange`, which requires one of them.
        connection.set_forward_ack(true);
        connection.set_forward_done(true);
        tokio::spawn(connection);
        Ok(Netlink { handle })
    }

    /// Send one request and collect its replies until the kernel's answer.
    async fn exchange(
        &self,
        payload: RouteNetlinkMessage,
        flags: u16,
    ) -> std::result::Result<Vec<RouteNetlinkMessage>, Failure> {
        let mut request = NetlinkMessage::from(payload);
        request.header.flags = flags;
        let mut replies = self
            .handle
            .clone()
            .request(request)
            .map_err(|_| Failure::NoAnswer)?;
        let mut answer = Answer::new(flags);
        while let Some(msg) = replies.next().await {
            if let Some(outcome) = answer.feed(msg) {
                return outcome;
            }
        }
        Err(Failure::NoAnswer)
    }
}

pub(crate) fn nl_err(what: impl std::fmt::Display, f: Failure) -> Error {
    match f {
        Failure::Kernel(errno) => Error::Netlink(format!("{what}: {}", errno.desc())),
        Failure::NoAnswer => Error::Netlink(format!(
            "{what}: the netlink socket closed before the kernel answered; the outcome is unknown"
        )),
    }
}
