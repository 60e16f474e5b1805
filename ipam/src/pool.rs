//! This node's prefix on one network and the addresses it may hand out (pure).

use std::net::IpAddr;

use ipnet::IpNet;

use crate::config::{addresses, host_bits, validate_allocation, NodePrefixes, PoolConfig};
use crate::error::IpamError;

/// Where this node's prefix came from, for error messages and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    NodeFile,
    StaticAllocation,
    NodeIndex(usize),
    /// `matchMasterSubnet`: the subnet of this PF's address.
    Pf(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePool {
    pub network: String,
    pub node: String,
    pub prefix: IpNet,
    pub gateway: Option<IpAddr>,
    pub source: Source,
    /// Addresses that may be leased, in allocation order.
    pub usable: Usable,
}

impl NodePool {
    /// The node's prefix: node file > staticAllocations > position in `nodes`.
    pub fn resolve(
        network: &str,
        node: &str,
        pool: &PoolConfig,
        prefixes: &NodePrefixes,
    ) -> Result<Self, IpamError> {
        let (prefix, explicit_gw, source) = if let Some(a) = prefixes.networks.get(network) {
            check_node_entry(network, a)?;
            validate_allocation(
                &format!("node file networks.{network}"),
                a.prefix,
                a.gateway,
                pool,
            )?;
            validate_inside_cidr(network, a.prefix, pool)?;
            (a.prefix, a.gateway, Source::NodeFile)
        } else if let Some(a) = pool.static_allocations.iter().find(|a| a.node_name == node) {
            (a.prefix, a.gateway, Source::StaticAllocation)
        } else if let Some(i) = pool.nodes.iter().find(|(n, _)| n == node).map(|(_, i)| *i) {
            return NodePool::at_index(network, node, i, pool);
        } else {
            return Err(IpamError::config(
                "ipam.nodes",
                format!(
                    "node {node:?} has no allocation on network {network}: add it to ipam.nodes or ipam.staticAllocations, \
                     or give it networks.{network} in the node file"
                ),
            ));
        };
        NodePool::with_prefix(network, node, pool, (prefix, explicit_gw, source))
    }

    /// Node `node`'s pool by its index in `cidr` (a planner that has the
    /// index at hand skips `resolve`'s search of the node list).
    pub fn at_index(
        network: &str,
        node: &str,
        i: usize,
        pool: &PoolConfig,
    ) -> Result<Self, IpamError> {
        let prefix = pool.indexed_prefix(i).ok_or_else(|| {
            let cidr = pool.cidr.map_or("no cidr".into(), |c| format!("cidr {c}"));
            IpamError::config(
                "ipam.cidr",
                format!(
                    "network {network} cannot give node {node:?} (index {i}) a /{} prefix: {cidr} holds fewer",
                    pool.per_node_prefix
                ),
            )
        })?;
        NodePool::with_prefix(network, node, pool, (prefix, None, Source::NodeIndex(i)))
    }

    /// The pool of a node whose prefix (and perhaps gateway) is known.
    pub fn with_prefix(
        network: &str,
        node: &str,
        pool: &PoolConfig,
        (prefix, explicit_gw, source): (IpNet, Option<IpAddr>, Source),
    ) -> Result<Self, IpamError> {
        let gateway = match (pool.shared_gateway, explicit_gw) {
            (Some(shared), given) => shared_gateway_of(network, prefix, shared, given)?,
            (None, Some(gw)) => Some(gw),
            (None, None) => gateway_at(prefix, pool.gateway_index, network)?,
        };
        if let Some(gw) = gateway {
            let field = match explicit_gw.or(pool.shared_gateway) {
                Some(_) => "gateway",
                None => "ipam.gatewayIndex",
            };
            no_host_can_hold(network, field, on_link_subnet(prefix, pool), gw)?;
        }
        let usable = usable_addresses(prefix, gateway, pool);
        Ok(NodePool {
            network: network.to_string(),
            node: node.to_string(),
            prefix,
            gateway,
            source,
            usable,
        })
    }

    /// `matchMasterSubnet`: the PF's subnet in `cidr`; every address of it
    /// but network and broadcast, the gateway (`gatewayIndex`), the PF's
    /// own addresses and `exclusions`.
    pub fn from_master(
        network: &str,
        node: &str,
        pool: &PoolConfig,
        prefixes: &NodePrefixes,
        master: &crate::master::Master,
    ) -> Result<Self, IpamError> {
        let cidr = pool
            .cidr
            .ok_or_else(|| IpamError::config("ipam.cidr", "matchMasterSubnet needs it"))?;
        let prefix = master.subnet_in(cidr)?;
        if let Some(a) = prefixes
            .networks
            .get(network)
            .filter(|a| a.prefix != prefix)
        {
            return Err(IpamError::config(
                &format!("node file networks.{network}"),
                format!(
                    "prefix {} disagrees with PF {}'s subnet {prefix} (matchMasterSubnet); fix one of them",
                    a.prefix, master.name
                ),
            ));
        }
        let host_bits = host_bits(&prefix);
        if host_bits > 8 {
            return Err(IpamError::config(
                "ipam.matchMasterSubnet",
                format!("PF {}'s subnet {prefix} holds 2^{host_bits} addresses; a node's pool holds at most 256", master.name),
            ));
        }
        let gateway = gateway_at(prefix, pool.gateway_index, network)?;
        let mut usable = usable_addresses(prefix, gateway, pool);
        usable.skip.extend(
            master
                .addresses
                .iter()
                .map(IpNet::addr)
                .filter(|ip| prefix.contains(ip)),
        );
        Ok(NodePool {
            network: network.to_string(),
            node: node.to_string(),
            prefix,
            gateway,
            source: Source::Pf(master.name.clone()),
            usable,
        })
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.prefix.contains(ip)
    }
}

/// On a shared subnet every node uses the one gateway: a node's own entry
/// may repeat it, not change it, and it must not lie in the node's slice
/// (the node would lease it).
/// The node file's prefix for `network` must lie inside the NAD's
/// `ipam.cidr`: a NAD of another rail (or a node file of another fabric)
/// would otherwise address this rail from the node file and route to the
/// other rail through this rail's gateway.
fn validate_inside_cidr(network: &str, prefix: IpNet, pool: &PoolConfig) -> Result<(), IpamError> {
    match pool.cidr {
        Some(cidr) if !cidr.contains(&prefix) => Err(IpamError::config(
            "ipam.cidr",
            format!(
                "network {network}'s ipam.cidr {cidr} does not contain this node's prefix {prefix} \
                 (node file networks.{network}): the NAD is another rail's, or the node file is not \
                 this fabric's; correct whichever is wrong"
            ),
        )),
        _ => Ok(()),
    }
}

fn shared_gateway_of(
    network: &str,
    prefix: IpNet,
    shared: IpAddr,
    given: Option<IpAddr>,
) -> Result<Option<IpAddr>, IpamError> {
    if let Some(gw) = given.filter(|g| *g != shared) {
        return Err(IpamError::config(
            "ipam.sharedSubnet.gateway",
            format!("network {network}: this node's entry names gateway {gw}, the shared subnet's is {shared}"),
        ));
    }
    if prefix.contains(&shared) {
        return Err(IpamError::config(
            "ipam.sharedSubnet.gateway",
            format!(
                "{shared} lies in this node's prefix {prefix} on network {network}, which would lease it; \
                 pick a gateway outside every node's slice (e.g. the subnet's last usable address)"
            ),
        ));
    }
    Ok(Some(shared))
}

/// The address `index` places above the prefix's network address; none on a
/// single-address prefix, whose gateway must be given explicitly.
fn gateway_at(prefix: IpNet, index: u32, network: &str) -> Result<Option<IpAddr>, IpamError> {
    let host_bits = host_bits(&prefix);
    if host_bits == 0 {
        return Ok(None);
    }
    let gateway = addresses(&prefix).nth(index as usize);
    if gateway.is_none() {
        return Err(IpamError::config(
            "ipam.gatewayIndex",
            format!(
                "{index} is outside {prefix} ({} addresses) on network {network}",
                1u128 << host_bits
            ),
        ));
    }
    Ok(gateway)
}

/// What a node file's entry must hold whatever the NAD's pool says (the
/// doctor has only the file; ADD runs the same first): each family's
/// prefix without host bits, and a gateway inside its prefix that a host
/// can hold. A gateway outside is a shared subnet's, checked with the pool.
pub fn check_node_entry(
    network: &str,
    entry: &base::node_file::NodePrefix,
) -> Result<(), IpamError> {
    let field = format!("node file networks.{network}");
    let sides = [
        (Some(entry.prefix), entry.gateway),
        (entry.prefix6, entry.gateway6),
    ];
    for (prefix, gateway) in sides {
        let Some(prefix) = prefix else { continue };
        if prefix.trunc() != prefix {
            return Err(IpamError::config(
                &field,
                format!("prefix {prefix} has host bits set; use {}", prefix.trunc()),
            ));
        }
        if let Some(gw) = gateway.filter(|g| prefix.contains(g)) {
            no_host_can_hold(network, &field, prefix, gw)?;
        }
    }
    Ok(())
}

/// The subnet a pod's address is on: the node's prefix, or on a shared
/// subnet the rail's whole cidr.
fn on_link_subnet(prefix: IpNet, pool: &PoolConfig) -> IpNet {
    match (pool.shared_gateway, pool.cidr) {
        (Some(_), Some(cidr)) => cidr,
        _ => prefix,
    }
}

/// A gateway must be an address a host (the leaf's port) can hold: never
/// the subnet's network or broadcast address (IPv4 larger than /31), nor
/// its subnet-router anycast address (IPv6 larger than /127), as nv-ipam
/// refuses them. The kernel refuses a route via a broadcast address
/// (EINVAL) only at ADD; this says so at plan and IPAM time.
fn no_host_can_hold(
    network: &str,
    field: &str,
    subnet: IpNet,
    gw: IpAddr,
) -> Result<(), IpamError> {
    let Some(which) = reserved_name(subnet, gw) else {
        return Ok(());
    };
    let last = (1u128 << host_bits(&subnet)) - if subnet.addr().is_ipv4() { 2 } else { 1 };
    Err(IpamError::config(
        field,
        format!(
            "gateway {gw} is the {which} of {subnet} on network {network}: no host can hold it; \
             the leaf's port needs one of the addresses 1..{last} above the network address"
        ),
    ))
}

/// What `ip` is of `subnet`, if it is an address `reserved` keeps from hosts.
fn reserved_name(subnet: IpNet, ip: IpAddr) -> Option<&'static str> {
    let [first, last] = reserved(subnet);
    match subnet {
        _ if first == Some(ip) && subnet.addr().is_ipv6() => Some("subnet-router anycast address"),
        _ if first == Some(ip) => Some("network address"),
        _ if last == Some(ip) => Some("broadcast address"),
        _ => None,
    }
}

/// /32 and /31 (RFC 3021) use every address; larger IPv4 prefixes lose the
/// network and broadcast addresses, larger IPv6 ones the subnet-router
/// anycast address. The gateway and exclusions are never handed out.
///
/// On a shared subnet the node's slice is not a subnet of its own: all of
/// it is usable but the shared subnet's own reserved addresses.
fn usable_addresses(prefix: IpNet, gateway: Option<IpAddr>, pool: &PoolConfig) -> Usable {
    let subnet = on_link_subnet(prefix, pool);
    let skip = (reserved(subnet).into_iter().chain([gateway]).flatten())
        .filter(|ip| prefix.contains(ip))
        .collect();
    Usable::new(prefix, skip, &pool.exclusions)
}

/// The addresses of a node's prefix that may be leased, in allocation
/// order, without listing them (a /64 holds 2^64): the prefix less a few
/// addresses (reserved, the gateway, the PF's own) and the exclusion ranges,
/// which are jumped over, never walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usable {
    prefix: IpNet,
    skip: Vec<IpAddr>,
    /// Exclusions clipped to the prefix, sorted and merged: (first, last).
    excluded: Vec<(u128, u128)>,
}

impl Usable {
    fn new(prefix: IpNet, skip: Vec<IpAddr>, exclusions: &[crate::config::Exclusion]) -> Self {
        let (lo, hi) = (number(prefix.network()), number(prefix.broadcast()));
        let mut ranges: Vec<(u128, u128)> = (exclusions.iter())
            .filter(|e| e.start.is_ipv4() == prefix.addr().is_ipv4())
            .map(|e| (number(e.start).max(lo), number(e.end).min(hi)))
            .filter(|(a, b)| a <= b)
            .collect();
        ranges.sort_unstable();
        let mut excluded: Vec<(u128, u128)> = Vec::new();
        for (a, b) in ranges {
            match excluded.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => excluded.push((a, b)),
            }
        }
        Usable {
            prefix,
            skip,
            excluded,
        }
    }

    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.prefix.contains(ip)
            && !self.skip.contains(ip)
            && self.exclusion_at(number(*ip)).is_none()
    }

    /// The last address of the exclusion holding `n`, if one does.
    fn exclusion_at(&self, n: u128) -> Option<u128> {
        self.excluded
            .iter()
            .find(|(a, b)| *a <= n && n <= *b)
            .map(|r| r.1)
    }

    /// The usable addresses from `from` (inclusive) to the prefix's end.
    pub fn from(&self, from: IpAddr) -> impl Iterator<Item = IpAddr> + '_ {
        let end = number(self.prefix.broadcast());
        let mut next = self.prefix.contains(&from).then(|| number(from));
        std::iter::from_fn(move || loop {
            let n = next.filter(|n| *n <= end)?;
            if let Some(last) = self.exclusion_at(n) {
                next = last.checked_add(1);
                continue;
            }
            next = n.checked_add(1);
            let ip = address(self.prefix, n);
            if !self.skip.contains(&ip) {
                return Some(ip);
            }
        })
    }

    /// Every usable address, in allocation order.
    pub fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.from(self.prefix.network())
    }

    /// How many there are, counted, not listed.
    pub fn count(&self) -> u128 {
        let size = 1u128 << host_bits(&self.prefix);
        let excluded: u128 = self.excluded.iter().map(|(a, b)| b - a + 1).sum();
        let mut skipped: Vec<&IpAddr> = (self.skip.iter())
            .filter(|ip| self.prefix.contains(*ip) && self.exclusion_at(number(**ip)).is_none())
            .collect();
        skipped.sort_unstable();
        skipped.dedup();
        size - excluded - skipped.len() as u128
    }
}

/// An address as a number, for arithmetic within its family.
fn number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address numbered `n` in `prefix`'s family (`n` lies in the prefix).
fn address(prefix: IpNet, n: u128) -> IpAddr {
    match prefix {
        IpNet::V4(_) => IpAddr::from(std::net::Ipv4Addr::from(n as u32)),
        IpNet::V6(_) => IpAddr::from(std::net::Ipv6Addr::from(n)),
    }
}

/// The addresses of `subnet` never handed out: IPv4's network and broadcast
/// addresses, IPv6's subnet-router anycast address (none on a /31, /32,
/// /127 or /128).
fn reserved(subnet: IpNet) -> [Option<IpAddr>; 2] {
    match (host_bits(&subnet), subnet) {
        (0 | 1, _) => [None, None],
        (_, IpNet::V4(n)) => [Some(n.network().into()), Some(n.broadcast().into())],
        (_, IpNet::V6(n)) => [Some(n.network().into()), None],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::Reply;
    use serde_json::json;

    fn pool(v: serde_json::Value) -> PoolConfig {
        PoolConfig::parse(&v).unwrap()
    }

    /// A node file's text as the IPAM sees it.
    fn node_prefixes(text: &[u8]) -> NodePrefixes {
        base::node_file::NodeFile::parse(text).unwrap().prefixes()
    }

    fn all(u: &Usable) -> Vec<IpAddr> {
        u.iter().collect()
    }

    fn ips(v: &[IpAddr]) -> Vec<String> {
        v.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_node_file_prefix_outside_the_nads_cidr_is_refused_naming_both() {
        let file = node_prefixes(br#"{"nodeName": "gpu-0", "networks": {"rail1": {"prefix": "172.18.0.0/31", "gateway": "172.18.0.1"}}}"#);
        let rail1 = pool(json!({"cidr": "172.16.0.0/15"}));
        let e = NodePool::resolve("rail1", "gpu-0", &rail1, &file).unwrap_err();
        assert_eq!(e.code(), 7);
        let d = e.details();
        assert!(
            d.contains("172.16.0.0/15") && d.contains("172.18.0.0/31"),
            "{d}"
        );
        let rail2 = pool(json!({"cidr": "172.18.0.0/15"}));
        assert!(NodePool::resolve("rail1", "gpu-0", &rail2, &file).is_ok());
    }

    #[test]
    fn a_shared_subnet_gives_each_node_its_slice_with_the_subnets_mask_and_gateway() {
        let shared = json!({"cidr": "172.16.0.0/16", "perNodePrefix": 27,
                            "sharedSubnet": {"gateway": "172.16.255.254"}, "nodes": {"gpu-0": 0, "gpu-1": 1}});
        let p = pool(shared.clone());
        let a = NodePool::resolve("rail1", "gpu-0", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(a.gateway, Some("172.16.255.254".parse().unwrap()));
        assert_eq!(
            all(&a.usable).len(),
            31,
            "the /16's network address is never leased"
        );
        assert_eq!(all(&a.usable)[0].to_string(), "172.16.0.1");
        let b = NodePool::resolve("rail1", "gpu-1", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(
            (all(&b.usable).len(), all(&b.usable)[0].to_string()),
            (32, "172.16.0.32".into()),
            "a whole /27 slice"
        );
        assert_eq!(
            p.address_len(&b.prefix),
            16,
            "every address carries the subnet's mask"
        );
        // The broadcast of the /16 is never leased either.
        let last = pool(json!({"cidr": "172.16.0.0/16", "perNodePrefix": 24,
                               "sharedSubnet": {"gateway": "172.16.0.1"}, "nodes": {"gpu-9": 255}}));
        let n = NodePool::resolve("rail1", "gpu-9", &last, &NodePrefixes::default()).unwrap();
        assert_eq!(all(&n.usable).last().unwrap().to_string(), "172.16.255.254");
        // A gateway in a node's slice would be leased there.
        let inside = pool(json!({"cidr": "172.16.0.0/16", "perNodePrefix": 27,
                                 "sharedSubnet": {"gateway": "172.16.0.33"}, "nodes": {"gpu-0": 0, "gpu-1": 1}}));
        let e = NodePool::resolve("rail1", "gpu-1", &inside, &NodePrefixes::default()).unwrap_err();
        assert!(
            e.to_string().contains("172.16.0.33") && e.to_string().contains("sharedSubnet.gateway"),
            "{e}"
        );
        assert!(NodePool::resolve("rail1", "gpu-0", &inside, &NodePrefixes::default()).is_ok());
    }

    #[test]
    fn a_shared_subnet_needs_a_gateway_inside_it() {
        for (v, field) in [
            (
                json!({"cidr": "172.16.0.0/16", "sharedSubnet": {}}),
                "ipam.sharedSubnet.gateway",
            ),
            (
                json!({"cidr": "172.16.0.0/16", "sharedSubnet": {"gateway": "10.0.0.1"}}),
                "ipam.sharedSubnet.gateway",
            ),
            (
                json!({"cidr": "172.16.0.0/16", "sharedSubnet": {"gateway": "172.16.255.255"}}),
                "ipam.sharedSubnet.gateway",
            ),
            (
                json!({"sharedSubnet": {"gateway": "172.16.0.1"}}),
                "ipam.sharedSubnet",
            ),
            (
                json!({"cidr": "172.16.0.0/16", "sharedSubnet": {"gw": "172.16.0.1"}}),
                "ipam",
            ),
        ] {
            let e = PoolConfig::parse(&v).unwrap_err();
            assert_eq!(e.code(), 7, "{v}");
            assert!(e.to_string().contains(field), "{v}: {e}");
        }
    }

    #[test]
    fn match_master_subnet_leases_the_pfs_subnet_but_its_own_addresses() {
        let p =
            pool(json!({"cidr": "172.16.0.0/16", "matchMasterSubnet": true, "gatewayIndex": 1}));
        let m = crate::master::Master {
            name: "ens1f0".into(),
            addresses: vec!["172.16.1.34/27".parse().unwrap()],
        };
        let n = NodePool::from_master("rail1", "gpu-0", &p, &NodePrefixes::default(), &m).unwrap();
        assert_eq!(n.prefix.to_string(), "172.16.1.32/27");
        assert_eq!(n.gateway, Some("172.16.1.33".parse().unwrap()));
        assert_eq!(
            ips(&all(&n.usable)[..2]),
            ["172.16.1.35", "172.16.1.36"],
            "network, gateway and the PF's .34 skipped"
        );
        assert_eq!(all(&n.usable).len(), 32 - 4);
        assert_eq!(n.source, Source::Pf("ens1f0".into()));
        let mut file = NodePrefixes::default();
        file.networks.insert(
            "rail1".into(),
            crate::config::NodePrefix::new("172.16.2.0/27".parse().unwrap(), None),
        );
        let e = NodePool::from_master("rail1", "gpu-0", &p, &file, &m).unwrap_err();
        assert!(
            e.to_string()
                .contains("172.16.2.0/27 disagrees with PF ens1f0's subnet 172.16.1.32/27"),
            "{e}"
        );
        assert!(
            PoolConfig::parse(&json!({"matchMasterSubnet": true})).is_err(),
            "cidr is required"
        );
    }

    #[test]
    fn slash_31_node_takes_even_leaf_takes_odd() {
        let p = pool(json!({"cidr": "172.16.0.0/15", "nodes": ["gpu-0", "gpu-1"]}));
        let n = NodePool::resolve("rail1", "gpu-1", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(n.prefix.to_string(), "172.16.0.2/31");
        assert_eq!(n.gateway, Some("172.16.0.3".parse().unwrap()));
        assert_eq!(ips(&all(&n.usable)), ["172.16.0.2"]);
        assert_eq!(n.source, Source::NodeIndex(1));
    }

    #[test]
    fn gateway_index_edges() {
        let p = pool(json!({"cidr": "172.16.0.0/15", "nodes": ["a"], "gatewayIndex": 0}));
        let n = NodePool::resolve("r", "a", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(
            (n.gateway.unwrap().to_string(), ips(&all(&n.usable))),
            ("172.16.0.0".into(), vec!["172.16.0.1".into()])
        );
        let p = pool(json!({"cidr": "172.16.0.0/15", "nodes": ["a"], "gatewayIndex": 2}));
        let e = NodePool::resolve("r", "a", &p, &NodePrefixes::default()).unwrap_err();
        assert!(e.to_string().contains("gatewayIndex"), "{e}");
        // /30: network and broadcast are lost, the gateway too: one left.
        let p = pool(json!({"cidr": "10.0.0.0/24", "perNodePrefix": 30, "nodes": ["a"]}));
        let n = NodePool::resolve("r", "a", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(ips(&all(&n.usable)), ["10.0.0.2"]);
        // /32: one address, no derived gateway.
        let p = pool(json!({"cidr": "10.0.0.0/24", "perNodePrefix": 32, "nodes": ["a", "b"]}));
        let n = NodePool::resolve("r", "b", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(
            (ips(&all(&n.usable)), n.gateway),
            (vec!["10.0.0.1".into()], None)
        );
        // /24: 254 hosts minus the gateway.
        let p = pool(json!({"cidr": "10.0.0.0/16", "perNodePrefix": 24, "nodes": ["a"]}));
        assert_eq!(
            NodePool::resolve("r", "a", &p, &NodePrefixes::default())
                .unwrap()
                .usable
                .count(),
            253
        );
    }

    #[test]
    fn exclusions_are_never_handed_out() {
        let p = pool(
            json!({"cidr": "10.0.0.0/16", "perNodePrefix": 28, "nodes": ["a"],
                            "exclusions": [{"start": "10.0.0.2", "end": "10.0.0.5"}]}),
        );
        let n = NodePool::resolve("r", "a", &p, &NodePrefixes::default()).unwrap();
        assert_eq!(
            ips(&all(&n.usable))[..3],
            ["10.0.0.6", "10.0.0.7", "10.0.0.8"]
        );
        assert_eq!(all(&n.usable).len(), 14 - 1 - 4);
    }

    #[test]
    fn resolution_order_node_file_then_static_then_index() {
        let p = pool(json!({"cidr": "172.16.0.0/15", "nodes": ["a"],
            "staticAllocations": [{"nodeName": "a", "prefix": "172.16.8.0/31", "gateway": "172.16.8.1"}]}));
        let file = node_prefixes(
            br#"{"networks": {"rail1": {"prefix": "172.16.9.0/31", "gateway": "172.16.9.1"}}}"#,
        );
        assert_eq!(
            NodePool::resolve("rail1", "a", &p, &file).unwrap().source,
            Source::NodeFile
        );
        assert_eq!(
            NodePool::resolve("rail2", "a", &p, &file)
                .unwrap()
                .prefix
                .to_string(),
            "172.16.8.0/31"
        );
        let p = pool(json!({"cidr": "172.16.0.0/15", "nodes": ["x", "a"]}));
        assert_eq!(
            NodePool::resolve("rail2", "a", &p, &file).unwrap().source,
            Source::NodeIndex(1)
        );
        let e = NodePool::resolve("rail2", "zz", &p, &file).unwrap_err();
        assert!(
            e.to_string().contains("\"zz\"") && e.to_string().contains("rail2"),
            "{e}"
        );
        let bad = node_prefixes(br#"{"networks": {"rail1": {"prefix": "172.16.9.0/30"}}}"#);
        assert_eq!(
            NodePool::resolve("rail1", "a", &p, &bad)
                .unwrap_err()
                .code(),
            7
        );
    }
}
