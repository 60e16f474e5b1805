//! The plan's schema: rails (with their roles, PFs, ceilings and planes)
//! and nodes, as the administrator writes them (JSON or YAML), each key
//! checked; and what a rail's fields default to.

pub use base::node_file::Allow;
use base::rdma_policy::RdmaPolicy;
use ipnet::IpNet;
use railcni_ipam::config::{default_gateway_index, default_per_node_prefix};
pub use railcni_ipam::config::{Nodes, SharedSubnet};
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

pub(super) type Result<T> = std::result::Result<T, PlanError>;

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
    /// The leaf's address in each IPv6 prefix of a dual-stack rail, by
    /// index (as `gatewayIndex` for IPv4; default: the layout's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_index6: Option<u32>,
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
    /// A whole-NIC rail: its `pf` itself is moved into the pod, not a VF
    /// of it (the launch kit's host_device profile). Written into each
    /// node file, the only place a PF is granted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_nic: bool,
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

impl Plan {
    /// JSON or YAML (YAML is a superset; JSON is tried first for its errors).
    pub fn parse(text: &str) -> Result<Plan> {
        match serde_json::from_str(text) {
            Ok(p) => Ok(p),
            Err(_) => serde_yaml_ng::from_str(text)
                .map_err(|e| PlanError(format!("the plan does not read: {e}"))),
        }
    }
}

impl Rail {
    /// The `rdma` its NADs and node file entries carry: the plan's word,
    /// else `off` for a storage rail (TCP/NVMe-oF; its RDMA device stays
    /// put), else none (the VF's link type decides).
    pub fn rdma_policy(&self) -> Option<RdmaPolicy> {
        RdmaPolicy::for_planned_rail(self.rdma, self.role == Role::Storage)
    }

    /// The rail's per-node prefix length, as given or the IPAM's default.
    pub(super) fn per_node_prefix(&self) -> u8 {
        (self.per_node_prefix).unwrap_or(default_per_node_prefix(self.cidr.addr().is_ipv6()))
    }

    /// A dual-stack rail's per-node IPv6 prefix length (the IPAM's default: /127).
    pub(super) fn per_node_prefix6(&self) -> u8 {
        (self.per_node_prefix6).unwrap_or(default_per_node_prefix(true))
    }

    /// The IPAM's `ipv6` object of a dual-stack rail: prefixes of `cidr6`.
    pub fn ipv6_json(&self) -> Option<serde_json::Value> {
        let cidr6 = self.cidr6?;
        let routes: Vec<_> = (self.route_dsts6().iter())
            .map(|d| json!({"dst": d}))
            .collect();
        Some(
            json!({"cidr": cidr6, "perNodePrefix": self.per_node_prefix6(), "gatewayIndex": self.gateway_index6()?,
                    "routes": routes}),
        )
    }

    /// The gateway's index in each node's prefix: as given, else the odd
    /// address of a /31 (the first host of a larger IPv4 prefix) and `::2`
    /// of an IPv6 /64, so the host is `::1`.
    pub fn gateway_index(&self) -> u32 {
        (self.gateway_index)
            .unwrap_or_else(|| default_gateway_index(Some(self.cidr), self.per_node_prefix()))
    }

    /// The IPv6 side's gateway index (`None`: not dual stack).
    pub fn gateway_index6(&self) -> Option<u32> {
        let cidr6 = self.cidr6?;
        Some(
            (self.gateway_index6)
                .unwrap_or_else(|| default_gateway_index(Some(cidr6), self.per_node_prefix6())),
        )
    }

    /// The routes of the rail's own family (`cidr`'s): the ones listed,
    /// else the rail's cidr.
    pub fn route_dsts(&self) -> Vec<IpNet> {
        let v6 = self.cidr.addr().is_ipv6();
        let listed: Vec<IpNet> = (self.routes.iter())
            .filter(|r| r.addr().is_ipv6() == v6)
            .copied()
            .collect();
        if listed.is_empty() {
            vec![self.cidr]
        } else {
            listed
        }
    }

    /// A dual-stack rail's IPv6 routes (via its IPv6 gateway): the IPv6
    /// ones listed, else `cidr6`.
    pub fn route_dsts6(&self) -> Vec<IpNet> {
        let Some(cidr6) = self.cidr6 else {
            return Vec::new();
        };
        let listed: Vec<IpNet> = (self.routes.iter())
            .filter(|r| r.addr().is_ipv6() && !self.cidr.addr().is_ipv6())
            .copied()
            .collect();
        if listed.is_empty() {
            vec![cidr6]
        } else {
            listed
        }
    }
}
