//! The `ipam` object of a network config (the pool every node shares),
//! validated at load time so every mistake is named before an address is
//! handed out. The marks of validated configs are a submodule; the node
//! file is `base::node_file`, of which the IPAM reads `NodePrefixes`.

mod validated;

pub use base::node_file::{NodePrefix, NodePrefixes};

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::{IpAddrRange, IpNet, Ipv4AddrRange, Ipv6AddrRange};
use serde::Deserialize;
use serde_json::Value;

use crate::error::IpamError;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticAllocation {
    pub node_name: String,
    pub prefix: IpNet,
    #[serde(default)]
    pub gateway: Option<IpAddr>,
    /// A dual-stack rail's IPv6 prefix and gateway for the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix6: Option<IpNet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway6: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Exclusion {
    pub start: IpAddr,
    pub end: IpAddr,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RouteConf {
    pub dst: IpNet,
}

/// A pool as a config or a planner asks for it, before the checks: the
/// `ipam` object's fields, typed (`PoolConfig::new` validates it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolRequest {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub cidr: Option<IpNet>,
    pub per_node_prefix: Option<u8>,
    pub gateway_index: Option<u32>,
    #[serde(default)]
    pub static_allocations: Vec<StaticAllocation>,
    #[serde(default)]
    pub nodes: Nodes,
    #[serde(default)]
    pub exclusions: Vec<Exclusion>,
    #[serde(default)]
    pub routes: Vec<RouteConf>,
    pub shared_subnet: Option<SharedSubnet>,
    #[serde(default)]
    pub match_master_subnet: bool,
    pub ipv6: Option<PoolRequest6>,
}

/// `ipv6`: a dual-stack rail's IPv6 side, beside the IPv4 `cidr`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolRequest6 {
    pub cidr: Option<IpNet>,
    pub per_node_prefix: Option<u8>,
    pub gateway_index: Option<u32>,
    #[serde(default)]
    pub exclusions: Vec<Exclusion>,
    #[serde(default)]
    pub routes: Vec<RouteConf>,
}

/// `sharedSubnet`: the rail is one subnet (`cidr`) shared by all nodes.
/// The planner's plan spells it the same way (and requires the gateway).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SharedSubnet {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// `nodes`: a list (a node's index is its position, so removing one moves
/// the ones after it: the store's prefix guard catches that) or, better, an
/// explicit `{"gpu-0": 0, "gpu-7": 7}` map whose indices never move. The
/// planner's plan spells its nodes the same way.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum Nodes {
    List(Vec<String>),
    Map(std::collections::BTreeMap<String, usize>),
}

impl Default for Nodes {
    fn default() -> Self {
        Nodes::List(Vec::new())
    }
}

/// A validated pool description (the same on every node).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub cidr: Option<IpNet>,
    pub per_node_prefix: u8,
    /// Whether `perNodePrefix` or `cidr` fixed the family; otherwise each
    /// prefix's own family decides its default length (/31 or /127).
    pub family_fixed: bool,
    pub gateway_index: u32,
    pub static_allocations: Vec<StaticAllocation>,
    /// Node name → index (the prefix it takes from `cidr`).
    pub nodes: Vec<(String, usize)>,
    pub exclusions: Vec<Exclusion>,
    pub routes: Vec<RouteConf>,
    /// `sharedSubnet.gateway`: the rail is `cidr`, one subnet for every node,
    /// and this its one gateway (the leaves' anycast address).
    pub shared_gateway: Option<IpAddr>,
    /// `matchMasterSubnet`: the node's prefix is its PF's subnet in `cidr`.
    pub match_master_subnet: bool,
    /// A dual-stack rail's IPv6 pool (`ipv6`): the same nodes, its own cidr.
    pub ipv6: Option<Box<PoolConfig>>,
}

/// `perNodePrefix`, checked: within the family (the cidr's, else what the
/// length implies), at most 256 addresses a node on IPv4 and a /64 on IPv6,
/// no larger than the cidr.
fn per_node_prefix(cidr: Option<IpNet>, asked: Option<u8>) -> Result<u8, IpamError> {
    let max_len = match (cidr, asked) {
        (Some(IpNet::V6(_)), _) => 128,
        (None, Some(p)) if p > 32 => 128,
        _ => 32,
    };
    let per_node_prefix = asked.unwrap_or(default_per_node_prefix(max_len == 128));
    let shortest = max_len - max_host_bits(max_len == 128);
    if per_node_prefix > max_len || per_node_prefix < shortest {
        return Err(config_err(
            "perNodePrefix",
            format!(
                "{per_node_prefix} must be {shortest}..{max_len} ({})",
                PER_NODE_LIMITS
            ),
        ));
    }
    if let Some(c) = cidr {
        if per_node_prefix < c.prefix_len() {
            return Err(config_err(
                "perNodePrefix",
                format!("/{per_node_prefix} is larger than cidr {c}"),
            ));
        }
    }
    Ok(per_node_prefix)
}

fn config_err(field: &str, msg: impl std::fmt::Display) -> IpamError {
    IpamError::config(&format!("ipam.{field}"), msg)
}

/// An error of the IPv6 side, its field named under `ipam.ipv6`.
fn as_ipv6_field(e: IpamError) -> IpamError {
    match e {
        IpamError::Spec(cni::Error::InvalidConfig { field, msg }) => {
            IpamError::config(&field.replacen("ipam.", "ipam.ipv6.", 1), msg)
        }
        other => other,
    }
}

/// `sharedSubnet` checked: a gateway inside `cidr`, neither its network
/// nor its broadcast address.
fn shared_gateway(
    shared: Option<&SharedSubnet>,
    cidr: Option<IpNet>,
) -> Result<Option<IpAddr>, IpamError> {
    let Some(shared) = shared else {
        return Ok(None);
    };
    let cidr =
        cidr.ok_or_else(|| config_err("sharedSubnet", "needs ipam.cidr: the rail's one subnet"))?;
    let gw = shared.gateway.ok_or_else(|| {
        config_err(
            "sharedSubnet.gateway",
            "is required: the rail's gateway every node's pods use",
        )
    })?;
    if !cidr.contains(&gw) {
        return Err(config_err(
            "sharedSubnet.gateway",
            format!("{gw} is outside cidr {cidr}"),
        ));
    }
    if cidr.addr().is_ipv4()
        && cidr.prefix_len() < 31
        && (gw == cidr.network() || gw == cidr.broadcast())
    {
        return Err(config_err(
            "sharedSubnet.gateway",
            format!("{gw} is the network or broadcast address of {cidr}"),
        ));
    }
    Ok(Some(gw))
}

/// Largest per-node prefix: 8 host bits (256 addresses) per node per rail
/// on IPv4; a /64 on IPv6 (the host-leaf link of NVIDIA's reference
/// layout). Leasing never walks a prefix, so its size costs nothing.
fn max_host_bits(ipv6: bool) -> u8 {
    if ipv6 {
        64
    } else {
        8
    }
}

const PER_NODE_LIMITS: &str = "a node's prefix is IPv4 /24../32 or IPv6 /64../128";

/// `perNodePrefix` when the config gives none: a point-to-point link, /31
/// on IPv4 (RFC 3021), /127 on IPv6 (RFC 6164).
pub fn default_per_node_prefix(ipv6: bool) -> u8 {
    if ipv6 {
        127
    } else {
        31
    }
}

/// How many /`per_node_prefix` prefixes `cidr` holds (saturating: an IPv6
/// cidr of /64s may hold more than any index).
pub fn prefixes_in(cidr: IpNet, per_node_prefix: u8) -> u128 {
    let bits = per_node_prefix.saturating_sub(cidr.prefix_len());
    1u128.checked_shl(u32::from(bits)).unwrap_or(u128::MAX)
}

/// `gatewayIndex` when the config gives none: the odd address of an IPv4
/// /31 (or the first host), and on an IPv6 /64 `::2`, the leaf, so the
/// host is `::1` as the reference layout has it.
pub fn default_gateway_index(cidr: Option<IpNet>, per_node_prefix: u8) -> u32 {
    match cidr {
        Some(IpNet::V6(_)) if per_node_prefix <= 64 => 2,
        _ => 1,
    }
}

impl PoolConfig {
    pub fn parse(v: &Value) -> Result<Self, IpamError> {
        PoolConfig::parse_with(v, None, true)
    }

    fn parse_with(
        v: &Value,
        statics: Option<Vec<StaticAllocation>>,
        validate: bool,
    ) -> Result<Self, IpamError> {
        // Straight from the parsed value (no copy: a pool may hold 16k allocations).
        let mut raw = PoolRequest::deserialize(v).map_err(|e| IpamError::config("ipam", e))?;
        if let Some(statics) = statics {
            raw.static_allocations = statics;
        }
        PoolConfig::build(raw, validate)
    }

    /// The pool `raw` asks for, with every check a config gets.
    pub fn new(raw: PoolRequest) -> Result<Self, IpamError> {
        PoolConfig::build(raw, true)
    }

    fn build(raw: PoolRequest, validate: bool) -> Result<Self, IpamError> {
        let cidr = raw.cidr.map(|c| c.trunc());
        let per_node_prefix = per_node_prefix(cidr, raw.per_node_prefix)?;
        let pool = PoolConfig {
            cidr,
            per_node_prefix,
            family_fixed: cidr.is_some() || raw.per_node_prefix.is_some(),
            gateway_index: (raw.gateway_index)
                .unwrap_or_else(|| default_gateway_index(cidr, per_node_prefix)),
            static_allocations: raw.static_allocations,
            nodes: match raw.nodes {
                Nodes::List(names) => names.into_iter().enumerate().map(|(i, n)| (n, i)).collect(),
                Nodes::Map(map) => map.into_iter().collect(),
            },
            exclusions: raw.exclusions,
            routes: raw.routes,
            shared_gateway: shared_gateway(raw.shared_subnet.as_ref(), cidr)?,
            match_master_subnet: raw.match_master_subnet,
            ipv6: None,
        };
        if pool.match_master_subnet && pool.cidr.is_none() {
            return Err(config_err(
                "matchMasterSubnet",
                "needs ipam.cidr: the rail the PF's subnet lies in",
            ));
        }
        if validate {
            pool.validate()?;
        }
        let mut pool = pool;
        if let Some(raw6) = raw.ipv6 {
            pool.ipv6 = Some(Box::new(pool.ipv6_side(raw6)?));
        }
        Ok(pool)
    }

    /// The IPv6 side of a dual-stack rail: the nodes and static allocations'
    /// `prefix6`/`gateway6` with `ipv6`'s own cidr, prefix and routes.
    fn ipv6_side(&self, raw: PoolRequest6) -> Result<PoolConfig, IpamError> {
        if !self.cidr.is_some_and(|c| c.addr().is_ipv4()) {
            return Err(config_err(
                "ipv6",
                "is the IPv6 side of a dual-stack rail: it needs an IPv4 ipam.cidr",
            ));
        }
        let cidr = raw.cidr.map(|c| c.trunc());
        if !cidr.is_some_and(|c| c.addr().is_ipv6()) {
            return Err(config_err(
                "ipv6.cidr",
                "is required and must be an IPv6 prefix",
            ));
        }
        let per_node_prefix = per_node_prefix(cidr, raw.per_node_prefix).map_err(as_ipv6_field)?;
        let static_allocations = self
            .static_allocations
            .iter()
            .filter_map(|a| {
                Some(StaticAllocation {
                    node_name: a.node_name.clone(),
                    prefix: a.prefix6?,
                    gateway: a.gateway6,
                    prefix6: None,
                    gateway6: None,
                })
            })
            .collect();
        let side = PoolConfig {
            cidr,
            per_node_prefix,
            family_fixed: true,
            gateway_index: (raw.gateway_index)
                .unwrap_or_else(|| default_gateway_index(cidr, per_node_prefix)),
            static_allocations,
            nodes: self.nodes.clone(),
            exclusions: raw.exclusions,
            routes: raw.routes,
            shared_gateway: None,
            match_master_subnet: false,
            ipv6: None,
        };
        side.validate().map_err(as_ipv6_field)?;
        Ok(side)
    }

    /// The prefix length every address carries: `cidr`'s on a shared
    /// subnet, else the node's own prefix's.
    pub fn address_len(&self, node_prefix: &IpNet) -> u8 {
        match (self.shared_gateway, self.cidr) {
            (Some(_), Some(cidr)) => cidr.prefix_len(),
            _ => node_prefix.prefix_len(),
        }
    }

    fn validate(&self) -> Result<(), IpamError> {
        self.validate_nodes()?;
        let static_nodes = self.validate_static_allocations()?;
        self.validate_no_overlap(&static_nodes)?;
        for (i, e) in self.exclusions.iter().enumerate() {
            if e.start.is_ipv4() != e.end.is_ipv4() || e.start > e.end {
                return Err(config_err(
                    &format!("exclusions[{i}]"),
                    format!("{} .. {} is not a range", e.start, e.end),
                ));
            }
        }
        Ok(())
    }

    /// Each node once, each index once, every index inside the cidr.
    fn validate_nodes(&self) -> Result<(), IpamError> {
        let mut seen = HashSet::new();
        let mut indices = HashSet::new();
        for (n, i) in &self.nodes {
            if !seen.insert(n.as_str()) {
                return Err(config_err("nodes", format!("node {n:?} is listed twice")));
            }
            if !indices.insert(*i) {
                return Err(config_err(
                    "nodes",
                    format!("index {i} is given to two nodes"),
                ));
            }
        }
        if let Some(cidr) = self.cidr {
            let slots = prefixes_in(cidr, self.per_node_prefix);
            if let Some((n, i)) = self.nodes.iter().find(|(_, i)| *i as u128 >= slots) {
                return Err(config_err(
                    "nodes",
                    format!(
                        "node {n:?} has index {i}, but {cidr} holds {slots} /{} prefixes",
                        self.per_node_prefix
                    ),
                ));
            }
        }
        Ok(())
    }

    /// One allocation per node, each a valid prefix inside the cidr; the
    /// nodes that have one.
    fn validate_static_allocations(&self) -> Result<HashSet<&str>, IpamError> {
        let mut static_nodes = HashSet::new();
        for (i, a) in self.static_allocations.iter().enumerate() {
            let field = format!("staticAllocations[{i}]");
            if !static_nodes.insert(a.node_name.as_str()) {
                return Err(config_err(
                    &field,
                    format!("node {:?} has two allocations", a.node_name),
                ));
            }
            validate_allocation(&field, a.prefix, a.gateway, self)?;
            if let Some(cidr) = self.cidr {
                if !cidr.contains(&a.prefix) {
                    return Err(config_err(
                        &field,
                        format!("prefix {} is outside cidr {cidr}", a.prefix),
                    ));
                }
            }
        }
        Ok(static_nodes)
    }

    /// Every node's prefix, static or by index, must be its own. Sorted by
    /// start, two ranges overlap only if neighbours do: O(n log n).
    fn validate_no_overlap(&self, static_nodes: &HashSet<&str>) -> Result<(), IpamError> {
        let mut ranges: Vec<(IpAddr, IpAddr, &str, IpNet)> = self
            .static_allocations
            .iter()
            .map(|a| (a.node_name.as_str(), a.prefix))
            .chain(self.nodes.iter().filter_map(|(n, i)| {
                let p = self.indexed_prefix(*i)?;
                (!static_nodes.contains(n.as_str())).then_some((n.as_str(), p))
            }))
            .map(|(n, p)| (p.network(), p.broadcast(), n, p))
            .collect();
        ranges.sort_unstable_by_key(|r| (r.0, r.1));
        for pair in ranges.windows(2) {
            let ((_, a_end, na, pa), (b_start, _, nb, pb)) = (&pair[0], &pair[1]);
            if b_start <= a_end {
                return Err(config_err(
                    "staticAllocations",
                    format!("{pa} of node {na:?} overlaps {pb} of node {nb:?}"),
                ));
            }
        }
        Ok(())
    }

    /// Prefix number `i` of `cidr` at the per-node length (arithmetic: a
    /// /40 of /64s holds 2^24 of them, each 2^64 addresses).
    pub fn indexed_prefix(&self, i: usize) -> Option<IpNet> {
        let cidr = self.cidr?;
        let slots = u32::from(self.per_node_prefix.checked_sub(cidr.prefix_len())?);
        if slots < 64 && (i as u64) >> slots != 0 {
            return None;
        }
        let host_bits = u32::from(cidr.max_prefix_len() - self.per_node_prefix);
        let offset = (i as u128).checked_shl(host_bits)?;
        let addr = match cidr {
            IpNet::V4(n) => IpAddr::from(std::net::Ipv4Addr::from(
                u32::from(n.network()).checked_add(u32::try_from(offset).ok()?)?,
            )),
            IpNet::V6(n) => IpAddr::from(std::net::Ipv6Addr::from(
                u128::from(n.network()).checked_add(offset)?,
            )),
        };
        let net = IpNet::new(addr, self.per_node_prefix).ok()?;
        cidr.contains(&net).then_some(net)
    }
}

/// A node's prefix (static or from the node file): of the pool's family,
/// its per-node length, within the family's limits, no host bits, the
/// gateway inside (but a shared subnet's gateway, which lies outside every
/// node's slice: `pool::shared_gateway_of` checks it).
pub fn validate_allocation(
    field: &str,
    prefix: IpNet,
    gateway: Option<IpAddr>,
    pool: &PoolConfig,
) -> Result<(), IpamError> {
    let host_bits = host_bits(&prefix);
    if host_bits > max_host_bits(prefix.addr().is_ipv6()) {
        return Err(config_err(
            field,
            format!("prefix {prefix} would hold 2^{host_bits} addresses; {PER_NODE_LIMITS}"),
        ));
    }
    if let Some(cidr) = pool.cidr {
        if cidr.addr().is_ipv4() != prefix.addr().is_ipv4() {
            return Err(config_err(
                field,
                format!("prefix {prefix} is not of the family of cidr {cidr}"),
            ));
        }
    }
    let per_node_prefix = if pool.family_fixed {
        pool.per_node_prefix
    } else {
        default_per_node_prefix(prefix.addr().is_ipv6())
    };
    if prefix.prefix_len() != per_node_prefix {
        return Err(config_err(
            field,
            format!("prefix {prefix} is not a /{per_node_prefix} (perNodePrefix)"),
        ));
    }
    if prefix.trunc() != prefix {
        return Err(config_err(
            field,
            format!("prefix {prefix} has host bits set; use {}", prefix.trunc()),
        ));
    }
    if let Some(gw) = gateway.filter(|g| Some(*g) != pool.shared_gateway) {
        let host_route = host_bits == 0;
        if !host_route && !prefix.contains(&gw) {
            return Err(config_err(
                field,
                format!("gateway {gw} is outside prefix {prefix}"),
            ));
        }
    }
    Ok(())
}

/// How many address bits a prefix leaves to hosts.
pub fn host_bits(net: &IpNet) -> u8 {
    net.max_prefix_len() - net.prefix_len()
}

/// Every address of `net`, from its network address to its last.
pub fn addresses(net: &IpNet) -> IpAddrRange {
    match net {
        IpNet::V4(n) => IpAddrRange::V4(Ipv4AddrRange::new(n.network(), n.broadcast())),
        IpNet::V6(n) => IpAddrRange::V6(Ipv6AddrRange::new(n.network(), n.broadcast())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::Reply;
    use serde_json::json;

    #[test]
    fn nodes_as_a_map_never_move() {
        let p =
            PoolConfig::parse(&json!({"cidr": "172.16.0.0/15", "nodes": {"gpu-0": 0, "gpu-2": 2}}))
                .unwrap();
        let gpu2 = p.nodes.iter().find(|(n, _)| n == "gpu-2").unwrap().1;
        assert_eq!(
            p.indexed_prefix(gpu2),
            Some("172.16.0.4/31".parse().unwrap())
        );
        let e = PoolConfig::parse(&json!({"cidr": "172.16.0.0/15", "nodes": {"a": 1, "b": 1}}))
            .unwrap_err();
        assert!(e.to_string().contains("index 1"), "{e}");
        let e =
            PoolConfig::parse(&json!({"cidr": "172.16.0.0/30", "nodes": {"a": 2}})).unwrap_err();
        assert!(e.to_string().contains("holds 2"), "{e}");
    }

    #[test]
    fn sixteen_thousand_static_allocations_load_and_overlaps_are_found() {
        let allocations: Vec<_> = (0..16_384u32)
            .map(|i| json!({"nodeName": format!("gpu-{i}"), "prefix": format!("172.{}.{}.{}/31", 16 + (i >> 15), (i >> 7) & 0xff, (i << 1) & 0xff)}))
            .collect();
        let mut conf = json!({"cidr": "172.16.0.0/15", "staticAllocations": allocations});
        assert_eq!(
            PoolConfig::parse(&conf).unwrap().static_allocations.len(),
            16_384
        );
        conf["staticAllocations"][9000]["prefix"] = conf["staticAllocations"][3]["prefix"].clone();
        let e = PoolConfig::parse(&conf).unwrap_err();
        assert!(e.to_string().contains("overlaps"), "{e}");
    }

    #[test]
    fn defaults_to_slash_31_and_gateway_index_1() {
        let p =
            PoolConfig::parse(&json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15"})).unwrap();
        assert_eq!((p.per_node_prefix, p.gateway_index), (31, 1));
        assert_eq!(p.indexed_prefix(0), Some("172.16.0.0/31".parse().unwrap()));
        assert_eq!(p.indexed_prefix(3), Some("172.16.0.6/31".parse().unwrap()));
        assert_eq!(
            p.indexed_prefix(65535),
            Some("172.17.255.254/31".parse().unwrap())
        );
        assert_eq!(p.indexed_prefix(65536), None);
    }

    #[test]
    fn every_allowed_prefix_length() {
        for len in 24..=32u8 {
            let p =
                PoolConfig::parse(&json!({"cidr": "10.0.0.0/16", "perNodePrefix": len})).unwrap();
            let second = p.indexed_prefix(1).unwrap();
            assert_eq!(second.prefix_len(), len);
            assert_eq!(
                addresses(&"10.0.0.0/16".parse().unwrap()).position(|a| a == second.network()),
                Some(1 << (32 - len))
            );
        }
        for bad in [23u8, 33] {
            let e = PoolConfig::parse(&json!({"cidr": "10.0.0.0/16", "perNodePrefix": bad}))
                .unwrap_err();
            assert!(e.to_string().contains("perNodePrefix"), "{e}");
        }
        let no_cidr = |prefix: &str| {
            PoolConfig::parse(&json!({"staticAllocations": [{"nodeName": "a", "prefix": prefix}]}))
        };
        assert!(
            no_cidr("fd00::/127").is_ok(),
            "the family comes from the prefix"
        );
        assert!(no_cidr("172.16.0.0/31").is_ok());
        let e = no_cidr("fd00::/31").unwrap_err();
        assert_eq!(e.code(), 7);
        assert!(e.to_string().contains("2^97"), "{e}");
        assert!(PoolConfig::parse(&json!({"perNodePrefix": 120})).is_ok());
        let v6 = PoolConfig::parse(&json!({"cidr": "fd00::/64"})).unwrap();
        assert_eq!(v6.per_node_prefix, 127);
        assert_eq!(v6.indexed_prefix(1), Some("fd00::2/127".parse().unwrap()));
    }

    #[test]
    fn config_errors_are_named() {
        let cases = [
            (
                json!({"cidr": "172.16.0.0/15", "staticAllocations": [{"nodeName": "a", "prefix": "10.0.0.0/31"}]}),
                "outside cidr",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "staticAllocations": [{"nodeName": "a", "prefix": "172.16.0.0/30"}]}),
                "not a /31",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "nodes": ["a", "b", "a"]}),
                "listed twice",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "staticAllocations": [{"nodeName": "a", "prefix": "172.16.0.0/31", "gateway": "172.16.0.9"}]}),
                "outside prefix",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "nodes": ["a", "b"], "staticAllocations": [{"nodeName": "b", "prefix": "172.16.0.0/31"}]}),
                "overlaps",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "staticAllocations": [{"nodeName": "a", "prefix": "172.16.0.0/31"}, {"nodeName": "a", "prefix": "172.16.0.2/31"}]}),
                "two allocations",
            ),
            (
                json!({"cidr": "172.16.0.0/30", "nodes": ["a", "b", "c"]}),
                "holds 2 /31 prefixes",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "exclusions": [{"start": "172.16.0.9", "end": "172.16.0.8"}]}),
                "not a range",
            ),
            (
                json!({"cidr": "172.16.0.0/15", "bogus": 1}),
                "unknown field",
            ),
        ];
        for (conf, needle) in cases {
            let e = PoolConfig::parse(&conf).unwrap_err();
            assert_eq!(e.code(), 7);
            assert!(e.to_string().contains(needle), "{conf}: {e}");
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use crate::pool::NodePool;
    use proptest::prelude::*;

    proptest! {
        /// Any ipam object is a pool or a config error; a pool resolves for
        /// any node with bounded work (at most 256 usable addresses).
        #[test]
        fn any_ipam_config_is_bounded(v in support::arb_json(), node in "[a-z]{1,3}") {
            if let Ok(pool) = PoolConfig::parse(&v) {
                if let Ok(p) = NodePool::resolve("rail1", &node, &pool, &NodePrefixes::default()) {
                    prop_assert!(p.usable.count() <= 256);
                }
            }
        }
    }
}
