//! Addresses and routes on a link.

use futures_util::TryStreamExt;
use ipnet::IpNet;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::RouteMessageBuilder;
use std::net::IpAddr;

use super::{nl_err, Netlink};
use crate::error::{Error, Result};

impl Netlink {
    pub async fn add_address(&self, index: u32, addr: IpNet) -> Result<()> {
        self.handle
            .address()
            .add(index, addr.addr(), addr.prefix_len())
            .execute()
            .await
            .map_err(|e| nl_err(format!("add address {addr} on link #{index}"), e))
    }

    pub async fn addresses(&self, index: u32) -> Result<Vec<IpNet>> {
        let msgs: Vec<AddressMessage> = self
            .handle
            .address()
            .get()
            .set_link_index_filter(index)
            .execute()
            .try_collect()
            .await
            .map_err(|e| nl_err(format!("list addresses of link #{index}"), e))?;
        Ok(msgs
            .into_iter()
            .filter_map(|m| {
                let prefix = m.header.prefix_len;
                m.attributes.into_iter().find_map(|a| match a {
                    AddressAttribute::Address(ip) => IpNet::new(ip, prefix).ok(),
                    _ => None,
                })
            })
            .collect())
    }

    /// `ip route add <dst> [via <gw>] dev <index>` in the main table.
    pub async fn add_route(&self, index: u32, dst: IpNet, gw: Option<IpAddr>) -> Result<()> {
        let via = gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let what = format!("add route {dst}{via} on link #{index}");
        let builder = RouteMessageBuilder::<IpAddr>::new()
            .destination_prefix(dst.addr(), dst.prefix_len())
            .map_err(|e| Error::Netlink(format!("{what}: {e}")))?
            .output_interface(index);
        let builder = match gw {
            Some(gw) => builder
                .gateway(gw)
                .map_err(|e| Error::Netlink(format!("{what}: {e}")))?,
            None => builder,
        };
        self.handle
            .route()
            .add(builder.build())
            .execute()
            .await
            .map_err(|e| nl_err(what, e))
    }
}
