//! Addresses, routes and policy rules on a link.

use std::net::IpAddr;

use futures_util::TryStreamExt;
use ipnet::IpNet;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::route::{RouteAttribute, RouteMessage, RouteScope};
use rtnetlink::packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use rtnetlink::{IpVersion, RouteMessageBuilder};

use nix::errno::Errno;

use super::{errno, nl_err, Netlink};
use crate::error::{Error, Result};
use crate::routing::{RouteSpec, RuleSpec};

/// A rule as the kernel reports it.
#[derive(Debug, Clone)]
pub struct Rule {
    pub src: Option<IpNet>,
    pub table: u32,
    pub priority: u32,
    pub action: RuleAction,
    message: RuleMessage,
}

/// A route as the kernel reports it.
#[derive(Debug, Clone)]
pub struct InstalledRoute {
    pub dst: Option<IpNet>,
    pub gw: Option<IpAddr>,
    pub table: u32,
    message: RouteMessage,
}

fn families() -> [IpVersion; 2] {
    [IpVersion::V4, IpVersion::V6]
}

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

    /// `ip route add <dst> [via <gw>] dev <index> [table T] [scope S] [src A]`.
    /// An identical route already there (a retried ADD) is fine.
    pub async fn add_route(&self, index: u32, r: &RouteSpec) -> Result<()> {
        let via = r.gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let table = r.table.map(|t| format!(" table {t}")).unwrap_or_default();
        let what = format!("add route {}{via}{table} on link #{index}", r.dst);
        let bad = |e: &dyn std::fmt::Display| Error::Netlink(format!("{what}: {e}"));
        let mut b = RouteMessageBuilder::<IpAddr>::new()
            .destination_prefix(r.dst.addr(), r.dst.prefix_len())
            .map_err(|e| bad(&e))?
            .output_interface(index)
            .scope(RouteScope::from(r.scope));
        if let Some(gw) = r.gw {
            b = b.gateway(gw).map_err(|e| bad(&e))?;
        }
        if let Some(src) = r.src {
            b = b.pref_source(src).map_err(|e| bad(&e))?;
        }
        if let Some(t) = r.table {
            b = b.table_id(t);
        }
        match self.handle.route().add(b.build()).execute().await {
            Err(e) if errno(&e) == Some(Errno::EEXIST) => Ok(()),
            other => other.map_err(|e| nl_err(what, e)),
        }
    }

    pub async fn routes(&self) -> Result<Vec<InstalledRoute>> {
        let mut out = Vec::new();
        for family in families() {
            let query = match family {
                IpVersion::V4 => RouteMessageBuilder::<std::net::Ipv4Addr>::new().build(),
                IpVersion::V6 => RouteMessageBuilder::<std::net::Ipv6Addr>::new().build(),
            };
            let msgs: Vec<RouteMessage> = self
                .handle
                .route()
                .get(query)
                .execute()
                .try_collect()
                .await
                .map_err(|e| nl_err("dump routes", e))?;
            out.extend(msgs.into_iter().map(InstalledRoute::from_message));
        }
        Ok(out)
    }

    pub async fn del_route(&self, r: &InstalledRoute) -> Result<()> {
        match self.handle.route().del(r.message.clone()).execute().await {
            Err(e) if matches!(errno(&e), Some(Errno::ESRCH | Errno::ENOENT)) => Ok(()),
            other => {
                other.map_err(|e| nl_err(format!("delete route {:?} table {}", r.dst, r.table), e))
            }
        }
    }

    /// `ip rule add from <src> lookup <table> priority <p>`, with the action
    /// set explicitly (rtnetlink defaults to Unspec, which breaks lookups).
    pub async fn add_rule(&self, r: &RuleSpec) -> Result<()> {
        let req = self
            .handle
            .rule()
            .add()
            .table_id(r.table)
            .priority(r.priority)
            .action(RuleAction::ToTable);
        let result = match r.src.addr() {
            IpAddr::V4(a) => {
                req.v4()
                    .source_prefix(a, r.src.prefix_len())
                    .execute()
                    .await
            }
            IpAddr::V6(a) => {
                req.v6()
                    .source_prefix(a, r.src.prefix_len())
                    .execute()
                    .await
            }
        };
        match result {
            Err(e) if errno(&e) == Some(Errno::EEXIST) => Ok(()),
            other => other.map_err(|e| {
                nl_err(
                    format!(
                        "add rule from {} lookup {} priority {}",
                        r.src, r.table, r.priority
                    ),
                    e,
                )
            }),
        }
    }

    pub async fn rules(&self) -> Result<Vec<Rule>> {
        let mut out = Vec::new();
        for family in families() {
            let msgs: Vec<RuleMessage> = self
                .handle
                .rule()
                .get(family)
                .execute()
                .try_collect()
                .await
                .map_err(|e| nl_err("dump rules", e))?;
            out.extend(msgs.into_iter().map(Rule::from_message));
        }
        Ok(out)
    }

    pub async fn del_rule(&self, r: &Rule) -> Result<()> {
        match self.handle.rule().del(r.message.clone()).execute().await {
            Err(e) if matches!(errno(&e), Some(Errno::ENOENT | Errno::ESRCH)) => Ok(()),
            other => other.map_err(|e| {
                nl_err(
                    format!("delete rule from {:?} priority {}", r.src, r.priority),
                    e,
                )
            }),
        }
    }
}

impl Rule {
    fn from_message(m: RuleMessage) -> Self {
        let mut table = u32::from(m.header.table);
        let mut priority = 0;
        let mut src = None;
        for a in &m.attributes {
            match a {
                RuleAttribute::Table(t) => table = *t,
                RuleAttribute::Priority(p) => priority = *p,
                RuleAttribute::Source(ip) => src = IpNet::new(*ip, m.header.src_len).ok(),
                _ => {}
            }
        }
        Rule {
            src,
            table,
            priority,
            action: m.header.action,
            message: m,
        }
    }

    /// Is this the rule `spec` describes (whatever else the kernel added)?
    pub fn matches(&self, spec: &RuleSpec) -> bool {
        self.src == Some(spec.src)
            && self.table == spec.table
            && self.priority == spec.priority
            && self.action == RuleAction::ToTable
    }
}

impl InstalledRoute {
    fn from_message(m: RouteMessage) -> Self {
        // Tables above 255 travel only in RTA_TABLE; the header says 252.
        let mut table = u32::from(m.header.table);
        let (mut dst, mut gw) = (None, None);
        for a in &m.attributes {
            match a {
                RouteAttribute::Table(t) => table = *t,
                RouteAttribute::Destination(d) => {
                    dst = route_addr(d)
                        .and_then(|ip| IpNet::new(ip, m.header.destination_prefix_length).ok())
                }
                RouteAttribute::Gateway(g) => gw = route_addr(g),
                _ => {}
            }
        }
        if dst.is_none() {
            let any = if m.header.address_family == rtnetlink::packet_route::AddressFamily::Inet6 {
                "::/0"
            } else {
                "0.0.0.0/0"
            };
            dst = any.parse().ok();
        }
        InstalledRoute {
            dst,
            gw,
            table,
            message: m,
        }
    }

    pub fn matches(&self, spec: &RouteSpec, main_table: u32) -> bool {
        self.dst == Some(spec.dst)
            && self.gw == spec.gw
            && self.table == spec.table.unwrap_or(main_table)
    }
}

fn route_addr(a: &rtnetlink::packet_route::route::RouteAddress) -> Option<IpAddr> {
    use rtnetlink::packet_route::route::RouteAddress;
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}
