//! Resolution: the plan checked whole (names, overlaps, capacity, each
//! rail's rules) and every node's allocation on every rail worked out with
//! the IPAM crate's own arithmetic.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use base::rdma_policy::RdmaPolicy;
use ipnet::IpNet;
use railcni_ipam::config::{
    prefixes_in, NodePrefixes, PoolConfig, PoolRequest, PoolRequest6, RouteConf, StaticAllocation,
};
use railcni_ipam::pool::{NodePool, Source};
use serde::Serialize;

use super::schema::{Nodes, Plan, PlanError, Rail, Result};

/// One node's address on one rail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Allocation {
    pub node: String,
    pub rail: String,
    pub prefix: IpNet,
    pub gateway: Option<IpAddr>,
    /// The node's VF address (the first address the IPAM hands out).
    pub host: Option<IpAddr>,
}

/// A plan with every allocation worked out and checked.
pub struct Resolved {
    pub plan: Plan,
    pub nodes: Vec<String>,
    pub allocations: Vec<Allocation>,
}

impl Resolved {
    /// Every node of `previous` keeps its prefixes here: a node whose
    /// prefix on a rail would move (a changed index, cidr or per-node
    /// length; its pods' addresses would move) is named. Nodes added or
    /// removed are fine.
    pub fn keeps_prefixes_of(&self, previous: &Resolved) -> Result<()> {
        type Key<'a> = (&'a str, &'a str, bool);
        let now: HashMap<Key, IpNet> = (self.allocations.iter())
            .map(|a| {
                (
                    (a.node.as_str(), a.rail.as_str(), a.prefix.addr().is_ipv6()),
                    a.prefix,
                )
            })
            .collect();
        let moved: Vec<String> = (previous.allocations.iter())
            .filter_map(|a| {
                let new =
                    now.get(&(a.node.as_str(), a.rail.as_str(), a.prefix.addr().is_ipv6()))?;
                (*new != a.prefix)
                    .then(|| format!("{} on {}: {} -> {new}", a.node, a.rail, a.prefix))
            })
            .collect();
        if moved.is_empty() {
            return Ok(());
        }
        let shown: Vec<&str> = moved.iter().take(10).map(String::as_str).collect();
        Err(PlanError(format!(
            "{} prefixes would move, and their pods' addresses with them (keep those nodes' indexes, or \
             drain them first and plan again without --previous): {}{}",
            moved.len(),
            shown.join("; "),
            if moved.len() > shown.len() { "; …" } else { "" }
        )))
    }
}

impl Plan {
    pub(super) fn node_indices(&self) -> Result<Vec<(String, usize)>> {
        let pairs: Vec<(String, usize)> = match &self.nodes {
            Nodes::List(names) => names
                .iter()
                .cloned()
                .enumerate()
                .map(|(i, n)| (n, i))
                .collect(),
            Nodes::Map(map) => map.iter().map(|(n, i)| (n.clone(), *i)).collect(),
        };
        let mut seen = HashSet::new();
        let mut by_index: HashMap<usize, &str> = HashMap::new();
        for (n, i) in &pairs {
            if !seen.insert(n.as_str()) {
                return Err(PlanError(format!("node {n:?} is listed twice")));
            }
            if let Some(other) = by_index.insert(*i, n) {
                return Err(PlanError(format!(
                    "nodes {other:?} and {n:?} share index {i}: they would get the same prefix on every rail"
                )));
            }
        }
        Ok(pairs)
    }

    /// Work out and check every allocation.
    pub fn resolve(self) -> Result<Resolved> {
        self.resolve_for(None)
    }

    /// Work out and check the plan, and the allocations of `only` (one
    /// node, as a node computing its own node file needs: the same file
    /// `--emit node-file` writes) or of every node. Linear in the nodes.
    pub fn resolve_for(mut self, only: Option<&str>) -> Result<Resolved> {
        if self.rails.is_empty() {
            return Err(PlanError("the plan has no rails".into()));
        }
        self.rails = self
            .rails
            .into_iter()
            .map(Rail::into_planes)
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        self.validate_rails()?;
        for rail in &self.rails {
            railcni::probe::Probes::parse(rail.checks.as_ref())
                .map_err(|e| PlanError(format!("rail {}: {}", rail.name, e.details())))?;
            let qos = railcni::rdma_qos::parse(rail.rdma_qos.as_ref())
                .map_err(|e| PlanError(format!("rail {}: {}", rail.name, e.details())))?;
            if !qos.is_empty() {
                rail.rdma_qos_fits()?;
            }
        }
        let indices = self.node_indices()?;
        for rail in &self.rails {
            rail.validate_capacity(&indices)?;
        }
        let mut nodes: Vec<String> = indices.iter().map(|(n, _)| n.clone()).collect();
        let mut known: HashSet<String> = nodes.iter().cloned().collect();
        for rail in &self.rails {
            for a in &rail.static_allocations {
                if known.insert(a.node_name.clone()) {
                    nodes.push(a.node_name.clone());
                }
            }
        }
        if let Some(node) = only {
            if !known.contains(node) {
                return Err(PlanError(format!("node {node:?} is not in the plan")));
            }
            nodes = vec![node.to_string()];
        }
        let mut allocations = Vec::new();
        for rail in &self.rails {
            allocations.extend(rail.allocations(&indices, &nodes, only.is_some())?);
        }
        Ok(Resolved {
            plan: self,
            nodes,
            allocations,
        })
    }

    pub(super) fn validate_rails(&self) -> Result<()> {
        let mut names = std::collections::HashSet::new();
        for r in &self.rails {
            if !names.insert(r.name.as_str()) {
                return Err(PlanError(format!("rail {:?} is listed twice", r.name)));
            }
            let ok = !r.name.is_empty()
                && r.name.len() <= 63
                && r.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !ok {
                return Err(PlanError(format!(
                    "rail name {:?} must be a Kubernetes name (lowercase letters, digits, '-')",
                    r.name
                )));
            }
            r.validate_families()?;
            r.validate_whole_nic()?;
            if r.shared_subnet
                .as_ref()
                .is_some_and(|s| s.gateway.is_none())
            {
                return Err(PlanError(format!(
                    "rail {}: sharedSubnet needs its gateway (the leaves' anycast address)",
                    r.name
                )));
            }
        }
        let mut cidrs: Vec<(&IpNet, &str)> = self
            .rails
            .iter()
            .map(|r| (&r.cidr, r.name.as_str()))
            .collect();
        cidrs.sort_by_key(|(c, _)| (c.addr().is_ipv6(), c.network(), c.prefix_len()));
        for pair in cidrs.windows(2) {
            let ((a, na), (b, nb)) = (pair[0], pair[1]);
            if a.contains(&b.network()) || b.contains(&a.network()) {
                return Err(PlanError(format!(
                    "rail {na} ({a}) overlaps rail {nb} ({b})"
                )));
            }
        }
        Ok(())
    }
}

impl Rail {
    /// A whole-NIC rail names its one PF (the same netdev name on every
    /// node): that PF is what the node file grants. Planes split a PF's
    /// VFs, so a whole PF has none.
    pub(super) fn validate_whole_nic(&self) -> Result<()> {
        if !self.whole_nic {
            return Ok(());
        }
        if !matches!(self.pf, Some(super::Pf::One(_))) {
            return Err(PlanError(format!(
                "rail {}: wholeNic needs pf, the one PF netdev (the same name on every node) the \
                 rail moves into the pod whole",
                self.name
            )));
        }
        if self.planes.is_some_and(|p| p > 1) {
            return Err(PlanError(format!(
                "rail {}: wholeNic and planes do not go together (a whole PF has no VFs to split)",
                self.name
            )));
        }
        Ok(())
    }

    /// Routes of the other family than `cidr` belong to a dual-stack
    /// rail's IPv6 side (via its IPv6 gateway); without `cidr6` there is no
    /// gateway to route them by. `gatewayIndex6` needs `cidr6` too.
    pub(super) fn validate_families(&self) -> Result<()> {
        let v6 = self.cidr.addr().is_ipv6();
        let other = self.routes.iter().find(|r| r.addr().is_ipv6() != v6);
        match (other, self.cidr6) {
            (Some(r), _) if v6 => Err(PlanError(format!(
                "rail {}: route {r} is IPv4 but the rail's cidr {} is IPv6",
                self.name, self.cidr
            ))),
            (Some(r), None) => Err(PlanError(format!(
                "rail {}: route {r} is IPv6 but the rail has no cidr6 (give it cidr6 to route IPv6 \
                 via its IPv6 gateway)",
                self.name
            ))),
            _ if self.gateway_index6.is_some() && self.cidr6.is_none() => Err(PlanError(format!(
                "rail {}: gatewayIndex6 is the IPv6 side's, but the rail has no cidr6",
                self.name
            ))),
            _ => Ok(()),
        }
    }

    /// `rdmaQoS` sets the class of the rail's RDMA device: its pods must use one.
    pub(super) fn rdma_qos_fits(&self) -> Result<()> {
        let named = |why: &str| PlanError(format!("rail {}: rdmaQoS {why}", self.name));
        if self.dpdk {
            return Err(named(
                "sets the RDMA device's QoS, but a DPDK rail's pods use none; remove rdmaQoS",
            ));
        }
        let policy = self.rdma_policy().unwrap_or(RdmaPolicy::Auto);
        policy.allows_qos().map_err(named)
    }

    /// Each of `nodes`' prefix (and IPv6 prefix) on this rail: maps built
    /// once, so linear in the nodes. `one`: only `nodes` (one node) go into
    /// the pool, whose pool-wide checks the plan's own (unique indexes,
    /// each within the rail) stand for.
    pub(super) fn allocations(
        &self,
        indices: &[(String, usize)],
        nodes: &[String],
        one: bool,
    ) -> Result<Vec<Allocation>> {
        let in_pool: Vec<(String, usize)> = match one {
            true => indices
                .iter()
                .filter(|(n, _)| nodes.contains(n))
                .cloned()
                .collect(),
            false => indices.to_vec(),
        };
        let pool = PoolConfig::new(self.pool_request(&in_pool))
            .map_err(|e| PlanError(format!("rail {}: {e}", self.name)))?;
        let index: HashMap<&str, usize> = in_pool.iter().map(|(n, i)| (n.as_str(), *i)).collect();
        let sides: Vec<(&PoolConfig, HashMap<&str, &StaticAllocation>)> = std::iter::once(&pool)
            .chain(pool.ipv6.as_deref())
            .map(|p| {
                (
                    p,
                    p.static_allocations
                        .iter()
                        .map(|a| (a.node_name.as_str(), a))
                        .collect(),
                )
            })
            .collect();
        let mut out = Vec::new();
        for node in nodes {
            // A node with neither an index nor a static allocation here is
            // not on this rail (an imported pool need not cover every node).
            let statics = &sides[0].1;
            if !index.contains_key(node.as_str()) && !statics.contains_key(node.as_str()) {
                continue;
            }
            let pools: std::result::Result<Vec<NodePool>, _> = (sides.iter())
                .map(|(p, statics)| self.node_pool(node, p, statics, &index))
                .collect();
            match pools {
                Ok(pools) => out.extend(pools.into_iter().map(|p| Allocation {
                    node: node.clone(),
                    rail: self.name.clone(),
                    prefix: p.prefix,
                    gateway: p.gateway,
                    host: p.usable.iter().next(),
                })),
                Err(e) => return Err(PlanError(format!("rail {}, node {node}: {e}", self.name))),
            }
        }
        Ok(out)
    }

    /// `node`'s pool on one side (IPv4 or IPv6) of the rail, in the IPAM's
    /// order: its static allocation, else its index (statics sit beside
    /// index placement, as in a NAD's inline pool).
    pub(super) fn node_pool(
        &self,
        node: &str,
        pool: &PoolConfig,
        statics: &HashMap<&str, &StaticAllocation>,
        index: &HashMap<&str, usize>,
    ) -> std::result::Result<NodePool, railcni_ipam::IpamError> {
        match (statics.get(node), index.get(node)) {
            (Some(a), _) => NodePool::with_prefix(
                &self.name,
                node,
                pool,
                (a.prefix, a.gateway, Source::StaticAllocation),
            ),
            (None, Some(i)) => NodePool::at_index(&self.name, node, *i, pool),
            _ => NodePool::resolve(&self.name, node, pool, &NodePrefixes::default()),
        }
    }

    /// Every node's index must have its prefix in the rail's cidr (and cidr6).
    pub(super) fn validate_capacity(&self, indices: &[(String, usize)]) -> Result<()> {
        let Some((node, i)) = indices.iter().max_by_key(|(_, i)| *i) else {
            return Ok(());
        };
        let v4 = Some((self.cidr, self.per_node_prefix()));
        let v6 = self.cidr6.map(|c| (c, self.per_node_prefix6()));
        for (cidr, prefix) in v4.into_iter().chain(v6) {
            let slots = prefixes_in(cidr, prefix);
            if (*i as u128) >= slots {
                return Err(PlanError(format!(
                    "node {node:?} has index {i}, beyond rail {}'s capacity: {cidr} holds {slots} /{prefix} \
                     prefixes (indexes 0..{})",
                    self.name,
                    slots - 1
                )));
            }
        }
        Ok(())
    }

    /// The IPAM pool this rail is, for the IPAM's own arithmetic and checks.
    pub(super) fn pool_request(&self, indices: &[(String, usize)]) -> PoolRequest {
        PoolRequest {
            cidr: Some(self.cidr),
            per_node_prefix: self.per_node_prefix,
            gateway_index: Some(self.gateway_index()),
            shared_subnet: self.shared_subnet.clone(),
            ipv6: self.cidr6.map(|cidr6| PoolRequest6 {
                cidr: Some(cidr6),
                per_node_prefix: Some(self.per_node_prefix6()),
                gateway_index: self.gateway_index6(),
                routes: (self.route_dsts6().into_iter())
                    .map(|dst| RouteConf { dst })
                    .collect(),
                ..Default::default()
            }),
            nodes: Nodes::Map(indices.iter().cloned().collect()),
            static_allocations: self.static_allocations.clone(),
            ..Default::default()
        }
    }
}
