//! Link queries and changes over one namespace's rtnetlink socket.

use futures_util::TryStreamExt;
use rtnetlink::packet_route::link::{LinkAttribute, LinkFlags, LinkMessage, Prop};
use rtnetlink::LinkUnspec;

use nix::errno::Errno;

use super::{errno, nl_err, NetNs, Netlink};
use crate::error::Result;

/// What railcni needs to know about a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    pub index: u32,
    pub name: String,
    pub mac: Vec<u8>,
    pub mtu: u32,
    pub up: bool,
    /// The bus device behind the netdev (a VF's PCI address); None for virtual links.
    pub parent_dev: Option<String>,
    pub altnames: Vec<String>,
}

impl Link {
    fn from_message(m: LinkMessage) -> Self {
        let mut link = Link {
            index: m.header.index,
            name: String::new(),
            mac: Vec::new(),
            mtu: 0,
            up: m.header.flags.contains(LinkFlags::Up),
            parent_dev: None,
            altnames: Vec::new(),
        };
        for attr in m.attributes {
            match attr {
                LinkAttribute::IfName(n) => link.name = n,
                LinkAttribute::Address(a) => link.mac = a,
                LinkAttribute::Mtu(mtu) => link.mtu = mtu,
                LinkAttribute::ParentDevName(p) => link.parent_dev = Some(p),
                LinkAttribute::PropList(props) => {
                    link.altnames
                        .extend(props.into_iter().filter_map(|p| match p {
                            Prop::AltIfName(n) => Some(n),
                            _ => None,
                        }))
                }
                _ => {}
            }
        }
        link
    }
}

impl Netlink {
    pub async fn link_by_name(&self, name: &str) -> Result<Option<Link>> {
        let mut req = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        match req.try_next().await {
            Ok(m) => Ok(m.map(Link::from_message)),
            Err(e) if errno(&e) == Some(Errno::ENODEV) => Ok(None),
            Err(e) => Err(nl_err(format!("get link {name}"), e)),
        }
    }

    pub async fn link_by_index(&self, index: u32) -> Result<Option<Link>> {
        let mut req = self.handle.link().get().match_index(index).execute();
        match req.try_next().await {
            Ok(m) => Ok(m.map(Link::from_message)),
            Err(e) if errno(&e) == Some(Errno::ENODEV) => Ok(None),
            Err(e) => Err(nl_err(format!("get link #{index}"), e)),
        }
    }

    async fn change(
        &self,
        what: String,
        msg: LinkMessage,
    ) -> std::result::Result<(), (String, rtnetlink::Error)> {
        self.handle
            .link()
            .change(msg)
            .execute()
            .await
            .map_err(|e| (what, e))
    }

    async fn apply(&self, what: String, msg: LinkMessage) -> Result<()> {
        self.change(what, msg).await.map_err(|(w, e)| nl_err(w, e))
    }

    pub async fn set_up(&self, index: u32) -> Result<()> {
        self.apply(
            format!("set link #{index} up"),
            LinkUnspec::new_with_index(index).up().build(),
        )
        .await
    }

    pub async fn set_down(&self, index: u32) -> Result<()> {
        self.apply(
            format!("set link #{index} down"),
            LinkUnspec::new_with_index(index).down().build(),
        )
        .await
    }

    pub async fn set_mtu(&self, index: u32, mtu: u32) -> Result<()> {
        self.apply(
            format!("set link #{index} mtu {mtu}"),
            LinkUnspec::new_with_index(index).mtu(mtu).build(),
        )
        .await
    }

    pub async fn set_mac(&self, index: u32, mac: &[u8]) -> Result<()> {
        self.apply(
            format!(
                "set link #{index} address {}",
                super::mac::format_hw_addr(mac)
            ),
            LinkUnspec::new_with_index(index)
                .address(mac.to_vec())
                .build(),
        )
        .await
    }

    pub async fn rename(&self, index: u32, name: &str) -> Result<()> {
        self.apply(
            format!("rename link #{index} to {name}"),
            LinkUnspec::new_with_index(index)
                .name(name.to_string())
                .build(),
        )
        .await
    }

    /// Move a link to `target` and name it `name` there, in one message, so
    /// a name taken on either side never leaves it half-moved. Returns
    /// Ok(false) when the name is taken in the target (EEXIST).
    pub async fn move_to(&self, index: u32, target: &NetNs, name: &str) -> Result<bool> {
        let msg = LinkUnspec::new_with_index(index)
            .setns_by_fd(std::os::fd::AsRawFd::as_raw_fd(&target.fd()))
            .name(name.to_string())
            .build();
        match self
            .change(
                format!("move link #{index} to {} as {name}", target.label()),
                msg,
            )
            .await
        {
            Ok(()) => Ok(true),
            Err((_, e)) if errno(&e) == Some(Errno::EEXIST) => Ok(false),
            Err((w, e)) => Err(nl_err(w, e)),
        }
    }

    pub async fn del_altnames(&self, index: u32, names: &[String]) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        self.handle
            .link()
            .property_del(index)
            .alt_ifname(&refs)
            .execute()
            .await
            .map_err(|e| nl_err(format!("drop altnames {names:?} of link #{index}"), e))
    }
}
