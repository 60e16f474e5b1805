//! Everything that touches the kernel: namespaces, rtnetlink, sysctl.
//!
//! A `Netlink` is a rtnetlink socket opened inside one namespace; the socket
//! stays bound to that namespace, so the thread only switches namespaces
//! briefly (socket creation, sysctl writes) through `NsGuard`.

pub mod link;
pub mod mac;
pub mod netns;
pub mod route;
pub mod sysctl;

use nix::errno::Errno;
use rtnetlink::Handle;

pub use link::Link;
pub use mac::Mac;
pub use netns::NetNs;

use crate::error::{Error, Result};

pub struct Netlink {
    handle: Handle,
}

impl Netlink {
    /// Open a socket in `ns`; the calling thread is back in its own namespace after.
    pub fn connect_in(ns: &NetNs) -> Result<Self> {
        let _guard = ns.enter()?;
        Self::connect_here()
    }

    fn connect_here() -> Result<Self> {
        let (connection, handle, _) = rtnetlink::new_connection()
            .map_err(|e| Error::Netlink(format!("cannot open rtnetlink socket: {e}")))?;
        tokio::spawn(connection);
        Ok(Netlink { handle })
    }
}

/// The errno of a netlink failure, if the kernel sent one.
pub fn errno(e: &rtnetlink::Error) -> Option<Errno> {
    match e {
        rtnetlink::Error::NetlinkError(m) => Some(Errno::from_raw(m.raw_code().abs())),
        _ => None,
    }
}

fn nl_err(what: impl std::fmt::Display, e: rtnetlink::Error) -> Error {
    let detail = match &e {
        rtnetlink::Error::NetlinkError(m) => Errno::from_raw(m.raw_code().abs()).desc().to_string(),
        other => other.to_string(),
    };
    Error::Netlink(format!("{what}: {detail}"))
}
