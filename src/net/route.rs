//! Addresses, routes and policy rules on a link.

use std::net::IpAddr;

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
    RouteVia,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use nix::errno::Errno;

use super::{nl_err, Failure, Netlink};
use crate::error::{Error, Result};

/// The address family of `addr`, for a message header.
fn family_of(addr: IpAddr) -> AddressFamily {
    match addr {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

/// IPv4 or IPv6 (an AF_UNSPEC dump also carries other families).
fn is_ip(family: AddressFamily) -> bool {
    matches!(family, AddressFamily::Inet | AddressFamily::Inet6)
}

/// A rule as the kernel reports it.
#[derive(Debug, Clone)]
pub struct Rule {
    pub src: Option<IpNet>,
    pub table: u32,
    pub priority: u32,
    pub action: RuleAction,
    message: RuleMessage,
}

/// The main routing table's id.
pub const MAIN_TABLE: u32 = 254;

/// A route as the kernel reports it.
#[derive(Debug, Clone)]
pub struct InstalledRoute {
    pub dst: Option<IpNet>,
    pub gw: Option<IpAddr>,
    pub table: u32,
    /// The output interface's index.
    pub oif: Option<u32>,
}

const ADD: u16 = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE;
const DEL: u16 = NLM_F_REQUEST | NLM_F_ACK;
/// `ip rule add from <src> lookup <table> priority <priority>`: the rule a
/// rail plan asks for (kept in attachment records: its fields are a format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    pub src: IpNet,
    pub table: u32,
    pub priority: u32,
}

/// A route a rail plan asks for (kept in attachment records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub dst: IpNet,
    pub gw: Option<IpAddr>,
    /// None: the main table.
    pub table: Option<u32>,
    pub scope: u8,
    pub src: Option<IpAddr>,
}

const DUMP: u16 = NLM_F_REQUEST | NLM_F_DUMP;

/// What adding a route found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteAdded {
    Added,
    /// The very same route (destination, gateway, device, table) was there.
    AlreadyThere,
    /// Another route holds that destination in that table.
    Conflict(String),
}

/// `ip address add <addr> dev <index>`: the address as both IFA_ADDRESS
/// and IFA_LOCAL, an IPv4 broadcast below /31, and IPv6 without duplicate
/// detection (a rail address is the pool's to give, so nothing should hold
/// it tentative, and unusable, first).
fn address_message(index: u32, addr: IpNet) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.family = family_of(addr.addr());
    m.header.index = index;
    m.header.prefix_len = addr.prefix_len();
    let a = &mut m.attributes;
    a.push(AddressAttribute::Address(addr.addr()));
    a.push(AddressAttribute::Local(addr.addr()));
    match addr {
        IpNet::V4(v4) if v4.prefix_len() < 31 => {
            a.push(AddressAttribute::Broadcast(v4.broadcast()))
        }
        IpNet::V4(_) => {}
        IpNet::V6(_) => a.push(AddressAttribute::Flags(AddressFlags::Nodad)),
    }
    m
}

/// The parts of a route that cannot travel together.
#[derive(Debug, PartialEq, Eq)]
struct MixedFamilies(&'static str, IpAddr);

impl std::fmt::Display for MixedFamilies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} is of another address family than the destination",
            self.0, self.1
        )
    }
}

/// `ip route add <dst> [via <gw>] dev <index> [table T] [scope S] [src A]`
/// as a static unicast route (an IPv6 gateway of an IPv4 route as RTA_VIA;
/// a table above 255 only in RTA_TABLE).
fn route_message(index: u32, r: &RouteSpec) -> std::result::Result<RouteMessage, MixedFamilies> {
    let family = family_of(r.dst.addr());
    let mut m = RouteMessage::default();
    m.header.address_family = family;
    m.header.destination_prefix_length = r.dst.prefix_len();
    m.header.table = RouteHeader::RT_TABLE_MAIN;
    m.header.protocol = RouteProtocol::Static;
    m.header.scope = RouteScope::from(r.scope);
    m.header.kind = RouteType::Unicast;
    let a = &mut m.attributes;
    a.push(RouteAttribute::Destination(r.dst.addr().into()));
    a.push(RouteAttribute::Oif(index));
    match (r.gw, r.dst.addr()) {
        (None, _) => {}
        (Some(gw), dst) if gw.is_ipv4() == dst.is_ipv4() => {
            a.push(RouteAttribute::Gateway(gw.into()))
        }
        (Some(IpAddr::V6(gw)), IpAddr::V4(_)) => a.push(RouteAttribute::Via(RouteVia::Inet6(gw))),
        (Some(gw), _) => return Err(MixedFamilies("gateway", gw)),
    }
    if let Some(src) = r.src {
        if family_of(src) != family {
            return Err(MixedFamilies("preferred source", src));
        }
        a.push(RouteAttribute::PrefSource(src.into()));
    }
    if let Some(t) = r.table {
        match u8::try_from(t) {
            Ok(t) => m.header.table = t,
            Err(_) => a.push(RouteAttribute::Table(t)),
        }
    }
    Ok(m)
}

impl Netlink {
    pub fn add_address(&self, index: u32, addr: IpNet) -> Result<()> {
        let msg = address_message(index, addr);
        match self.exchange(RouteNetlinkMessage::NewAddress(msg), ADD) {
            Ok(_)
            | Err(Failure::Kernel {
                errno: Errno::EEXIST,
                ..
            }) => Ok(()),
            Err(f) => Err(nl_err(format!("add address {addr} on link #{index}"), f)),
        }
    }

    pub fn addresses(&self, index: u32) -> Result<Vec<IpNet>> {
        let replies = self
            .exchange(
                RouteNetlinkMessage::GetAddress(AddressMessage::default()),
                DUMP,
            )
            .map_err(|f| nl_err(format!("list addresses of link #{index}"), f))?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewAddress(m) if m.header.index == index => Some(m),
                _ => None,
            })
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
    /// A route already there counts only when it is the same one.
    pub fn add_route(&self, index: u32, r: &RouteSpec) -> Result<RouteAdded> {
        let via = r.gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let table = r.table.map(|t| format!(" table {t}")).unwrap_or_default();
        let what = format!("add route {}{via}{table} on link #{index}", r.dst);
        let msg = route_message(index, r).map_err(|e| Error::internal(format!("{what}: {e}")))?;
        match self.exchange(RouteNetlinkMessage::NewRoute(msg), ADD) {
            Ok(_) => Ok(RouteAdded::Added),
            Err(Failure::Kernel {
                errno: Errno::EEXIST,
                ..
            }) => {
                let table = r.table.unwrap_or(MAIN_TABLE);
                let holder = self
                    .routes()?
                    .into_iter()
                    .find(|x| x.dst == Some(r.dst) && x.table == table);
                Ok(match holder {
                    Some(x) if x.gw == r.gw && x.oif == Some(index) => RouteAdded::AlreadyThere,
                    Some(x) => RouteAdded::Conflict(x.describe()),
                    None => RouteAdded::Conflict(format!("{} in table {table}", r.dst)),
                })
            }
            Err(f) => Err(nl_err(what, f)),
        }
    }

    /// Every IPv4 and IPv6 route, in one dump (AF_UNSPEC: the kernel walks
    /// every family; multicast routing tables are left out).
    pub fn routes(&self) -> Result<Vec<InstalledRoute>> {
        let replies = self
            .exchange(RouteNetlinkMessage::GetRoute(RouteMessage::default()), DUMP)
            .map_err(|f| nl_err("dump routes", f))?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRoute(m) if is_ip(m.header.address_family) => {
                    Some(InstalledRoute::from_message(m))
                }
                _ => None,
            })
            .collect())
    }

    /// `ip rule add from <src> lookup <table> priority <p>`, as iproute2
    /// builds it: the table in the header when it fits a byte, else as an
    /// attribute (header table 0), and the action set explicitly.
    pub fn add_rule(&self, r: &RuleSpec) -> Result<()> {
        let mut msg = RuleMessage::default();
        msg.header.family = family_of(r.src.addr());
        msg.header.src_len = r.src.prefix_len();
        msg.header.action = RuleAction::ToTable;
        match u8::try_from(r.table) {
            Ok(t) => msg.header.table = t,
            Err(_) => msg.attributes.push(RuleAttribute::Table(r.table)),
        }
        msg.attributes.push(RuleAttribute::Priority(r.priority));
        msg.attributes.push(RuleAttribute::Source(r.src.addr()));
        match self.exchange(RouteNetlinkMessage::NewRule(msg), ADD) {
            Ok(_)
            | Err(Failure::Kernel {
                errno: Errno::EEXIST,
                ..
            }) => Ok(()),
            Err(f) => Err(nl_err(
                format!(
                    "add rule from {} lookup {} priority {}",
                    r.src, r.table, r.priority
                ),
                f,
            )),
        }
    }

    /// Every IPv4 and IPv6 rule, in one dump (AF_UNSPEC).
    pub fn rules(&self) -> Result<Vec<Rule>> {
        self.dump_rules(RuleMessage::default())
    }

    /// The rules of the families these addresses are of, only (one dump
    /// per family).
    pub fn rules_of_families(&self, addrs: impl IntoIterator<Item = IpAddr>) -> Result<Vec<Rule>> {
        let (mut v4, mut v6) = (false, false);
        for a in addrs {
            *(if a.is_ipv4() { &mut v4 } else { &mut v6 }) = true;
        }
        let mut out = Vec::new();
        for (wanted, family) in [(v4, AddressFamily::Inet), (v6, AddressFamily::Inet6)] {
            if wanted {
                let mut query = RuleMessage::default();
                query.header.family = family;
                out.extend(self.dump_rules(query)?);
            }
        }
        Ok(out)
    }

    fn dump_rules(&self, query: RuleMessage) -> Result<Vec<Rule>> {
        let replies = self
            .exchange(RouteNetlinkMessage::GetRule(query), DUMP)
            .map_err(|f| nl_err("dump rules", f))?;
        Ok(replies
            .into_iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewRule(m) if is_ip(m.header.family) => {
                    Some(Rule::from_message(m))
                }
                _ => None,
            })
            .collect())
    }

    pub fn del_rule(&self, r: &Rule) -> Result<()> {
        match self.exchange(RouteNetlinkMessage::DelRule(r.message.clone()), DEL) {
            Ok(_)
            | Err(Failure::Kernel {
                errno: Errno::ENOENT | Errno::ESRCH,
                ..
            }) => Ok(()),
            Err(f) => Err(nl_err(
                format!("delete rule from {:?} priority {}", r.src, r.priority),
                f,
            )),
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
        let (mut dst, mut gw, mut oif) = (None, None, None);
        for a in &m.attributes {
            match a {
                RouteAttribute::Table(t) => table = *t,
                RouteAttribute::Oif(i) => oif = Some(*i),
                RouteAttribute::Destination(d) => {
                    dst = route_addr(d)
                        .and_then(|ip| IpNet::new(ip, m.header.destination_prefix_length).ok())
                }
                RouteAttribute::Gateway(g) => gw = route_addr(g),
                _ => {}
            }
        }
        if dst.is_none() {
            let any = if m.header.address_family == AddressFamily::Inet6 {
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
            oif,
        }
    }

    /// In iproute2's words: `172.16.0.0/15 via 172.16.0.1 dev #7 table 1001`.
    pub fn describe(&self) -> String {
        let dst = self
            .dst
            .map_or_else(|| "default".to_string(), |d| d.to_string());
        let via = self.gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let dev = self.oif.map(|i| format!(" dev #{i}")).unwrap_or_default();
        format!("{dst}{via}{dev} table {}", self.table)
    }

    pub fn matches(&self, spec: &RouteSpec, main_table: u32) -> bool {
        self.dst == Some(spec.dst)
            && self.gw == spec.gw
            && self.table == spec.table.unwrap_or(main_table)
    }
}

fn route_addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each message as rtnetlink 0.24's builders made it (the release that
    /// used them, c79d173), byte for byte.
    #[test]
    fn addresses_are_the_bytes_they_always_were() {
        let cases = [
            ("172.16.0.0/31", "021f00000700000008000100ac10000008000200ac100000"),
            ("10.1.2.3/24", "0218000007000000080001000a010203080002000a010203080004000a0102ff"),
            ("fd00::1/64", "0a4000000700000014000100fd00000000000000000000000000000114000200fd0000000000000000000000000000010800080002000000"),
            ("172.16.0.1/32", "022000000700000008000100ac10000108000200ac100001"),
        ];
        for (addr, bytes) in cases {
            assert_eq!(
                crate::net::wire::hex_of(&address_message(7, addr.parse().unwrap())),
                bytes,
                "{addr}"
            );
        }
    }

    #[test]
    fn routes_are_the_bytes_they_always_were_and_mixed_families_are_refused() {
        let r = |dst: &str, gw: Option<&str>, table: Option<u32>, scope: u8, src: Option<&str>| {
            RouteSpec {
                dst: dst.parse().unwrap(),
                gw: gw.map(|g| g.parse().unwrap()),
                table,
                scope,
                src: src.map(|g| g.parse().unwrap()),
            }
        };
        let cases = [
            (r("172.16.0.0/31", None, Some(1001), 253, Some("172.16.0.0")), Some("021f0000fe04fd010000000008000100ac100000080004000700000008000700ac10000008000f00e9030000")),
            (r("172.16.0.0/12", Some("172.16.0.1"), Some(1001), 0, None), Some("020c0000fe0400010000000008000100ac100000080004000700000008000500ac10000108000f00e9030000")),
            (r("172.16.0.0/15", Some("172.16.0.1"), None, 0, None), Some("020f0000fe0400010000000008000100ac100000080004000700000008000500ac100001")),
            (r("172.16.0.0/15", Some("172.16.0.1"), Some(100), 0, None), Some("020f0000640400010000000008000100ac100000080004000700000008000500ac100001")),
            (r("fd00::/64", None, Some(1001), 253, Some("fd00::1")), Some("0a400000fe04fd010000000014000100fd000000000000000000000000000000080004000700000014000700fd00000000000000000000000000000108000f00e9030000")),
            (r("fd00::/40", Some("fd00::2"), Some(1001), 0, None), Some("0a280000fe0400010000000014000100fd000000000000000000000000000000080004000700000014000500fd00000000000000000000000000000208000f00e9030000")),
            // An IPv6 next hop for IPv4 (RFC 5549) travels as RTA_VIA.
            (r("10.0.0.0/8", Some("fe80::1"), Some(7), 0, None), Some("020800000704000100000000080001000a0000000800040007000000160012000a00fe8000000000000000000000000000010000")),
            (r("fd00::/40", Some("10.0.0.1"), Some(1001), 0, None), None),
            (r("fd00::/40", None, Some(1001), 0, Some("10.0.0.1")), None),
            (r("10.0.0.0/8", None, Some(1001), 0, Some("fd00::1")), None),
        ];
        for (spec, bytes) in cases {
            let got = route_message(7, &spec)
                .ok()
                .map(|m| crate::net::wire::hex_of(&m));
            assert_eq!(got.as_deref(), bytes, "{spec:?}");
        }
    }
}
