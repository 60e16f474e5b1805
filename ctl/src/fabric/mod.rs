//! The fabric plan the network team and Kubernetes agree on: rails × nodes,
//! one prefix per node per rail, the switch port's address as gateway.
//! `railcnictl plan` reads it (JSON or YAML, or an nv-ipam CIDRPool to migrate
//! from) and emits small NADs, the ConfigMap that carries the plan (each
//! node computes its own node file from it), one node's node file, a pod
//! annotation, dra-driver-sriov's objects, and a CSV for the switch team.
//! Pure: files in, text out; the arithmetic is the IPAM crate's own.

pub mod cidrpool;
pub mod dra;
pub mod emit;
pub mod launch_kit;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;

pub use base::node_file::Allow;
use base::rdma_policy::RdmaPolicy;
use ipnet::IpNet;
use railcni_ipam::config::{
    default_gateway_index, default_per_node_prefix, prefixes_in, NodePrefixes, PoolConfig,
    PoolRequest, PoolRequest6, RouteConf, StaticAllocation,
};
pub use railcni_ipam::config::{Nodes, SharedSubnet};
use railcni_ipam::pool::{NodePool, Source};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A plan error, in words naming what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError(pub String);

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Result<T> = std::result::Result<T, PlanError>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Compute,
    Storage,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rail {
    pub name: String,
    pub cidr: IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node_prefix: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_index: Option<u32>,
    /// Destinations reached via the rail's gateway; default: the rail's cidr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<IpNet>,
    #[serde(default)]
    pub role: Role,
    /// The SR-IOV device plugin resource of this rail's VFs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Explicit allocations (node → prefix, gateway), e.g. from a CIDRPool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_allocations: Vec<railcni_ipam::config::StaticAllocation>,
    /// A dual-stack rail's IPv6 CIDR: each node gets a prefix of it too
    /// (`perNodePrefix6`, a /127 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr6: Option<IpNet>,
    /// The per-node IPv6 prefix of a dual-stack rail: /64 (host `::1`, leaf
    /// `::2`, the reference layout) to /128.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node_prefix6: Option<u8>,
    /// One subnet (`cidr`) shared by every node, with this gateway: each
    /// node still leases from its own `perNodePrefix` slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_subnet: Option<SharedSubnet>,
    /// Planes of a multi-plane NIC (ConnectX-8 class: 2 or 4 ports per
    /// rail NIC, each its own switch port): the rail becomes one network
    /// per plane, `<rail>-p<k>`, each with an equal part of `cidr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planes: Option<u8>,
    /// Each plane's own cidr, in plane order, where the fabric does not
    /// split `cidr` into equal parts (Spectrum-X's plane-aware layout puts
    /// each plane of a rail under its own plane supernet); each must lie in
    /// `cidr`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plane_cidrs: Vec<IpNet>,
    /// The rail's ADD checks (the network config's `checks`), copied into its NAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<serde_json::Value>,
    /// The NAD's `rdma` (auto, required, off); storage rails default to
    /// off (`Rail::rdma_policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaPolicy>,
    /// The PF netdev this rail's VFs come from, the same name on every node
    /// (for `railcnictl doctor`); with `planes`, one per plane in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pf: Option<Pf>,
    /// The rail's VFs are DPDK ones, bound to vfio-pci (for `railcnictl doctor`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpdk: bool,
    /// The most the rail's NADs may ask of a VF (`trust`, `spoofchkOff`,
    /// `vlans`, `maxTxRateMbps`), written into each node file, where the
    /// plugin enforces it; absent: no ceiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Allow>,
    /// The rail's RoCE QoS (`{tos, tc}`, NVIDIA's rdma-cni shape), copied
    /// into its NADs and its node file entries (where `doctor` checks the
    /// PF's DCB against it).
    #[serde(default, rename = "rdmaQoS", skip_serializing_if = "Option::is_none")]
    pub rdma_qos: Option<serde_json::Value>,
    /// For a plane's network: the rail it is a plane of (set when the plan
    /// is resolved; never read or written).
    #[serde(skip)]
    pub plane_of: Option<String>,
}

/// A rail's `pf`: one PF netdev, or a list with one per plane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Pf {
    One(String),
    PerPlane(Vec<String>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plan {
    pub rails: Vec<Rail>,
    #[serde(default)]
    pub nodes: Nodes,
    /// Namespace of the NADs.
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Namespace of the ConfigMap the installer reads.
    #[serde(default = "default_system_namespace")]
    pub config_map_namespace: String,
}

fn default_namespace() -> String {
    "default".into()
}

fn default_system_namespace() -> String {
    "kube-system".into()
}

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
    /// JSON or YAML (YAML is a superset; JSON is tried first for its errors).
    pub fn parse(text: &str) -> Result<Plan> {
        match serde_json::from_str(text) {
            Ok(p) => Ok(p),
            Err(_) => serde_yaml_ng::from_str(text)
                .map_err(|e| PlanError(format!("the plan does not read: {e}"))),
        }
    }

    fn node_indices(&self) -> Result<Vec<(String, usize)>> {
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
            let qos = railcni::rdma_qos::RdmaQos::parse(rail.rdma_qos.as_ref())
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

    fn validate_rails(&self) -> Result<()> {
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
    /// The `rdma` its NADs and node file entries carry: the plan's word,
    /// else `off` for a storage rail (TCP/NVMe-oF; its RDMA device stays
    /// put), else none (the VF's link type decides).
    pub fn rdma_policy(&self) -> Option<RdmaPolicy> {
        RdmaPolicy::for_planned_rail(self.rdma, self.role == Role::Storage)
    }

    /// `rdmaQoS` sets the class of the rail's RDMA device: its pods must use one.
    fn rdma_qos_fits(&self) -> Result<()> {
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
    fn allocations(
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
                // Imported pools need not cover every node on every rail.
                Err(_) if !self.static_allocations.is_empty() => {}
                Err(e) => return Err(PlanError(format!("rail {}, node {node}: {e}", self.name))),
            }
        }
        Ok(out)
    }

    /// `node`'s pool on one side (IPv4 or IPv6) of the rail, in the IPAM's
    /// order: its static allocation, else its index.
    fn node_pool(
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
            (None, Some(i)) if pool.static_allocations.is_empty() => {
                NodePool::at_index(&self.name, node, *i, pool)
            }
            _ => NodePool::resolve(&self.name, node, pool, &NodePrefixes::default()),
        }
    }

    /// Every node's index must have its prefix in the rail's cidr (and cidr6).
    fn validate_capacity(&self, indices: &[(String, usize)]) -> Result<()> {
        if !self.static_allocations.is_empty() {
            return Ok(());
        }
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
    fn pool_request(&self, indices: &[(String, usize)]) -> PoolRequest {
        let statics = !self.static_allocations.is_empty();
        PoolRequest {
            cidr: Some(self.cidr),
            per_node_prefix: self.per_node_prefix,
            gateway_index: Some(self.gateway_index()),
            shared_subnet: self.shared_subnet.clone(),
            ipv6: self.cidr6.map(|cidr6| PoolRequest6 {
                cidr: Some(cidr6),
                per_node_prefix: Some(self.per_node_prefix6()),
                gateway_index: Some(default_gateway_index(Some(cidr6), self.per_node_prefix6())),
                routes: vec![RouteConf { dst: cidr6 }],
                ..Default::default()
            }),
            nodes: Nodes::Map(match statics {
                true => BTreeMap::new(),
                false => indices.iter().cloned().collect(),
            }),
            static_allocations: match statics {
                true => (self.static_allocations.iter())
                    .map(|a| StaticAllocation {
                        prefix6: None,
                        gateway6: None,
                        ..a.clone()
                    })
                    .collect(),
                false => Vec::new(),
            },
            ..Default::default()
        }
    }

    /// The rail's per-node prefix length, as given or the IPAM's default.
    fn per_node_prefix(&self) -> u8 {
        (self.per_node_prefix).unwrap_or(default_per_node_prefix(self.cidr.addr().is_ipv6()))
    }

    /// A dual-stack rail's per-node IPv6 prefix length (the IPAM's default: /127).
    fn per_node_prefix6(&self) -> u8 {
        (self.per_node_prefix6).unwrap_or(default_per_node_prefix(true))
    }

    /// The rail, or one network per plane: `<name>-p<k>` with the k-th
    /// equal part of `cidr`, resource `<resourceName>-p<k>`, rail-major.
    /// A rail of one plane, as it is.
    fn one_plane(self) -> Result<Rail> {
        if matches!(self.pf, Some(Pf::PerPlane(_))) {
            return Err(PlanError(format!(
                "rail {}: pf lists one PF per plane, but the rail has no planes: name its one PF",
                self.name
            )));
        }
        if !self.plane_cidrs.is_empty() {
            return Err(PlanError(format!(
                "rail {}: planeCidrs without planes: give the rail `planes` or drop planeCidrs",
                self.name
            )));
        }
        Ok(Rail {
            planes: None,
            ..self
        })
    }

    /// Each plane's PF: `pf` lists one per plane, in plane order.
    fn plane_pfs(&self, n: u8) -> Result<Vec<Option<Pf>>> {
        match &self.pf {
            None => Ok(vec![None; usize::from(n)]),
            Some(Pf::PerPlane(list)) if list.len() == usize::from(n) => {
                Ok(list.iter().map(|p| Some(Pf::One(p.clone()))).collect())
            }
            Some(_) => Err(PlanError(format!(
                "rail {}: pf must list one PF per plane ({n}), in plane order",
                self.name
            ))),
        }
    }

    /// Each plane's cidr: `planeCidrs` as given (one per plane, each in
    /// `cidr`), else `cidr` in equal parts.
    fn plane_parts(&self, n: u8, bits: u8) -> Result<Vec<IpNet>> {
        if !self.plane_cidrs.is_empty() {
            if self.plane_cidrs.len() != usize::from(n) {
                return Err(PlanError(format!(
                    "rail {}: planeCidrs lists {} cidrs for {n} planes: list one per plane, in plane order",
                    self.name,
                    self.plane_cidrs.len()
                )));
            }
            if let Some(outside) = self.plane_cidrs.iter().find(|c| !self.cidr.contains(*c)) {
                return Err(PlanError(format!(
                    "rail {}: plane cidr {outside} is not in the rail's cidr {}",
                    self.name, self.cidr
                )));
            }
            return Ok(self.plane_cidrs.clone());
        }
        Ok(self
            .cidr
            .subnets(self.cidr.prefix_len() + bits)
            .map_err(|_| {
                PlanError(format!(
                    "rail {}: cidr {} is too small for {n} planes",
                    self.name, self.cidr
                ))
            })?
            .collect())
    }

    fn into_planes(self) -> Result<Vec<Rail>> {
        let n = match self.planes {
            None | Some(1) => return self.one_plane().map(|rail| vec![rail]),
            Some(n @ (2 | 4)) => n,
            Some(other) => {
                return Err(PlanError(format!(
                    "rail {}: planes {other} must be 1, 2 or 4",
                    self.name
                )))
            }
        };
        if !self.static_allocations.is_empty() {
            return Err(PlanError(format!(
                "rail {}: planes cannot be combined with staticAllocations; list each plane as a rail of its own",
                self.name
            )));
        }
        let pfs = self.plane_pfs(n)?;
        let bits = n.trailing_zeros() as u8;
        let parts = self.plane_parts(n, bits)?;
        Ok(parts
            .into_iter()
            .enumerate()
            .map(|(k, cidr)| Rail {
                name: format!("{}-p{k}", self.name),
                cidr,
                cidr6: self
                    .cidr6
                    .and_then(|c6| c6.subnets(c6.prefix_len() + bits).ok()?.nth(k)),
                // A plane's own part is what its gateway reaches by default.
                routes: if self.routes.is_empty() {
                    vec![cidr]
                } else {
                    self.routes.clone()
                },
                resource_name: self.resource_name.as_ref().map(|r| format!("{r}-p{k}")),
                planes: None,
                plane_cidrs: Vec::new(),
                pf: pfs[k].clone(),
                plane_of: Some(self.name.clone()),
                ..self.clone()
            })
            .collect())
    }

    /// The IPAM's `ipv6` object of a dual-stack rail: prefixes of `cidr6`.
    pub fn ipv6_json(&self) -> Option<serde_json::Value> {
        let cidr6 = self.cidr6?;
        let prefix = self.per_node_prefix6();
        Some(
            json!({"cidr": cidr6, "perNodePrefix": prefix, "gatewayIndex": default_gateway_index(Some(cidr6), prefix),
                    "routes": [{"dst": cidr6}]}),
        )
    }

    /// The gateway's index in each node's prefix: as given, else the odd
    /// address of a /31 (the first host of a larger IPv4 prefix) and `::2`
    /// of an IPv6 /64, so the host is `::1`.
    pub fn gateway_index(&self) -> u32 {
        (self.gateway_index)
            .unwrap_or_else(|| default_gateway_index(Some(self.cidr), self.per_node_prefix()))
    }

    pub fn route_dsts(&self) -> Vec<IpNet> {
        if self.routes.is_empty() {
            vec![self.cidr]
        } else {
            self.routes.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Result<Resolved> {
        Plan::parse(text)?.resolve()
    }

    #[test]
    fn plane_cidrs_give_each_plane_its_own_and_are_checked() {
        let base = "rails:\n- {name: r0, cidr: 172.16.0.0/12, planes: 2, perNodePrefix: 31, gatewayIndex: 1, PC}\nnodes: [a, b]\n";
        let r = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18, 172.20.0.0/18]")).unwrap();
        let b1: Vec<String> = (r.allocations.iter())
            .filter(|a| a.node == "b")
            .map(|a| format!("{} {}", a.rail, a.prefix))
            .collect();
        assert_eq!(b1, ["r0-p0 172.16.0.2/31", "r0-p1 172.20.0.2/31"]);
        let e = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18]"))
            .err()
            .unwrap();
        assert!(e.0.contains("1 cidrs for 2 planes"), "{e}");
        let e = plan(&base.replace("PC", "planeCidrs: [172.16.0.0/18, 10.0.0.0/18]"))
            .err()
            .unwrap();
        assert!(e.0.contains("10.0.0.0/18 is not in the rail's cidr"), "{e}");
        let e = plan(
            &base
                .replace("planes: 2, ", "")
                .replace("PC", "planeCidrs: [172.16.0.0/18]"),
        )
        .err()
        .unwrap();
        assert!(e.0.contains("planeCidrs without planes"), "{e}");
    }

    #[test]
    fn one_slash_31_per_node_per_rail_with_the_switch_port_as_gateway() {
        let r = plan(
            "rails:\n  - {name: rail1, cidr: 172.16.0.0/15}\n  - {name: rail2, cidr: 172.18.0.0/15}\nnodes: [gpu-0, gpu-1]\n",
        )
        .unwrap();
        let a = |node: &str, rail: &str| {
            r.allocations
                .iter()
                .find(|a| a.node == node && a.rail == rail)
                .map(|a| {
                    (
                        a.prefix.to_string(),
                        a.host.unwrap().to_string(),
                        a.gateway.unwrap().to_string(),
                    )
                })
                .unwrap()
        };
        assert_eq!(
            a("gpu-0", "rail1"),
            (
                "172.16.0.0/31".into(),
                "172.16.0.0".into(),
                "172.16.0.1".into()
            )
        );
        assert_eq!(
            a("gpu-1", "rail2"),
            (
                "172.18.0.2/31".into(),
                "172.18.0.2".into(),
                "172.18.0.3".into()
            )
        );
    }

    #[test]
    fn a_node_map_keeps_prefixes_when_nodes_leave() {
        let r = plan(
            r#"{"rails": [{"name": "rail1", "cidr": "172.16.0.0/15"}], "nodes": {"gpu-2": 2}}"#,
        )
        .unwrap();
        assert_eq!(r.allocations[0].prefix.to_string(), "172.16.0.4/31");
    }

    #[test]
    fn overlapping_rails_duplicate_nodes_and_misfits_are_refused() {
        for (text, words) in [
            ("rails: [{name: a, cidr: 172.16.0.0/15}, {name: b, cidr: 172.17.0.0/16}]\nnodes: [n]", "overlaps"),
            ("rails: [{name: a, cidr: 172.16.0.0/15}]\nnodes: [n, n]", "listed twice"),
            ("rails: [{name: a, cidr: 172.16.0.0/30}]\nnodes: [n0, n1, n2]", "holds 2"),
            ("rails: [{name: A_1, cidr: 172.16.0.0/15}]\nnodes: [n]", "Kubernetes name"),
            ("rails: [{name: a, cidr: 172.16.0.0/15, bogus: 1}]\nnodes: [n]", "bogus"),
            ("rails: []\nnodes: [n]", "no rails"),
        ] {
            let e = plan(text).err().unwrap_or_else(|| panic!("{text} was accepted"));
            assert!(e.0.contains(words), "{text}: {e}");
        }
    }
}
