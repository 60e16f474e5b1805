//! Everything that touches the kernel: namespaces, rtnetlink, sysctl.
//!
//! A `Netlink` is a rtnetlink socket created inside one namespace (on a
//! thread of that namespace's own) and used from the caller's thread; the
//! socket stays bound to its namespace. Messages are built with rtnetlink's
//! builders and exchanged through `exchange`, which counts a request as done
//! only when the kernel answered it: an ACK, the end of a dump, a reply, or
//! an error. A socket that closes first is an error, never "nothing there".

pub mod link;
pub mod mac;
pub mod netns;
pub mod route;
pub mod sysctl;

use std::os::fd::{FromRawFd, IntoRawFd};

use futures_util::StreamExt;
use netlink_packet_core::{NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTIPART};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, TokioSocket};
use nix::errno::Errno;
use rtnetlink::Handle;

pub use link::Link;
pub use mac::Mac;
pub use netns::NetNs;

use crate::error::{Error, Result};

pub struct Netlink {
    handle: Handle,
}

/// Why a request did not succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The kernel refused it.
    Kernel(Errno),
    /// The socket closed (or the request could not be queued) before the
    /// kernel answered: nothing is known about the outcome.
    NoAnswer,
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
        let wants_ack = flags & NLM_F_ACK != 0;
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut replies = self
            .handle
            .clone()
            .request(request)
            .map_err(|_| Failure::NoAnswer)?;
        let mut out = Vec::new();
        while let Some(msg) = replies.next().await {
            let multipart = msg.header.flags & NLM_F_MULTIPART != 0;
            match msg.payload {
                NetlinkPayload::Error(e) => {
                    return match e.code {
                        None => Ok(out),
                        Some(code) => Err(Failure::Kernel(Errno::from_raw(code.get().abs()))),
                    }
                }
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::InnerMessage(m) => {
                    out.push(m);
                    if !multipart && !wants_ack && !dump {
                        return Ok(out);
                    }
                }
                NetlinkPayload::Overrun(_) => return Err(Failure::NoAnswer),
                _ => {}
            }
        }
        Err(Failure::NoAnswer)
    }
}

fn nl_err(what: impl std::fmt::Display, f: Failure) -> Error {
    match f {
        Failure::Kernel(errno) => Error::Netlink(format!("{what}: {}", errno.desc())),
        Failure::NoAnswer => Error::Netlink(format!(
            "{what}: the netlink socket closed before the kernel answered; the outcome is unknown"
        )),
    }
}
