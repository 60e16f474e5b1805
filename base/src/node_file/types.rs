//! The node file's in-memory types, which its readers and writers share.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use crate::rdma_policy::RdmaPolicy;
use crate::settings::Settings;

/// The node file's version this build writes and reads.
pub const VERSION: u32 = 1;

/// What provisioning knows about this node's cabling and rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFile {
    /// The machine the file was written for (`/etc/machine-id`), stamped
    /// by the installer; absent in files written before the stamp or by
    /// hand.
    pub machine_id: Option<String>,
    /// The node's name (`nodeName`), which the IPAM may take its own from.
    pub node_name: Option<String>,
    /// Per network, its prefix and its rules: one entry holds both, so no
    /// network has one without the other.
    pub networks: BTreeMap<String, NodeNetwork>,
}

/// One network of the node file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeNetwork {
    /// This node's prefix and gateway on it: all the IPAM reads.
    pub prefix: NodePrefix,
    /// What the administrator holds its NADs and VFs to.
    pub rules: RailRules,
}

/// The node's name and its prefix and gateway per network: the IPAM's view
/// of a node file (`NodeFile::prefixes`), or a file of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePrefixes {
    pub node_name: Option<String>,
    pub networks: BTreeMap<String, NodePrefix>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePrefix {
    pub prefix: IpNet,
    pub gateway: Option<IpAddr>,
    /// A dual-stack rail's IPv6 prefix and gateway for this node.
    pub prefix6: Option<IpNet>,
    pub gateway6: Option<IpAddr>,
}

/// What the plan says a rail needs and allows on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RailRules {
    /// The PF its VFs come from (the plugin refuses a VF of another).
    pub pf: Option<String>,
    /// The rail's MTU, for the doctor.
    pub mtu: Option<u32>,
    /// The rail's `rdma`; absent: its link type's default.
    pub rdma: Option<RdmaPolicy>,
    /// Its VFs are DPDK ones (bound to vfio-pci), for the doctor.
    pub dpdk: bool,
    /// The most a NAD of this rail may ask, and who may ask (absent: no
    /// ceiling; the plugin enforces it).
    pub allow: Option<Allow>,
    /// The rail's `rdmaQoS`, for the doctor's check of the PF's DCB.
    pub rdma_qos: Option<RailQos>,
    /// A whole-NIC rail: `pf` itself, not one of its VFs, is moved into the
    /// pod. Only the node file grants it (a NAD never can): ADD accepts
    /// that PF's PCI address for this network and no other non-VF device.
    pub whole_nic: bool,
}

/// A rail's `rdmaQoS` as the node file carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RailQos {
    pub tos: Option<u8>,
    pub tc: Option<u8>,
}

impl RailQos {
    /// The class the rail's RDMA traffic carries: `tc`, else `tos` (on
    /// RoCE v2 both are the IP ToS byte).
    pub fn class(&self) -> Option<u8> {
        self.tc.or(self.tos)
    }
}

/// A rail's ceiling: a NAD is a namespaced object any namespace admin can
/// write, the node file the administrator's. A present ceiling allows only
/// what it names. The plan spells it with these keys, each checked (a
/// misspelt key in the administrator's plan is an error); the node file's
/// reader passes over keys it does not know, so they allow nothing more.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Allow {
    /// `trust on` (the VF may change its MAC, promiscuous mode).
    #[serde(default)]
    pub trust: bool,
    /// `spoofchk off` (the VF may send as any MAC).
    #[serde(default)]
    pub spoofchk_off: bool,
    /// The VLANs a NAD may put the VF on (none: no VLAN).
    #[serde(default)]
    pub vlans: Vec<u16>,
    /// The highest `min_tx_rate` / `max_tx_rate` a NAD may set, in Mbps
    /// (absent: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tx_rate_mbps: Option<u32>,
    /// The Kubernetes namespaces whose pods may attach this rail (absent:
    /// any). ADD compares `K8S_POD_NAMESPACE`; DEL, CHECK and GC never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Vec<String>>,
}

/// Why a node file cannot be used.
#[derive(Debug)]
pub enum NodeFileError {
    Invalid {
        path: PathBuf,
        why: String,
    },
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Stamped for another machine: a copied disk or a cloned image.
    OtherMachine {
        path: PathBuf,
        stamped: String,
        this: String,
        id_file: PathBuf,
    },
}

impl std::fmt::Display for NodeFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeFileError::Invalid { path, why } => write!(f, "{} is invalid: {why}", path.display()),
            NodeFileError::Unreadable { path, error } => {
                write!(f, "cannot read node config {}: {error}", path.display())
            }
            NodeFileError::OtherMachine {
                path,
                stamped,
                this,
                id_file,
            } => write!(
                f,
                "{} was written for machine {stamped}, and this is machine {this} ({}): a node file \
                 copied from another node hands out that node's addresses; write this node's with \
                 `railcnictl install`",
                path.display(),
                id_file.display()
            ),
        }
    }
}

impl std::error::Error for NodeFileError {}

impl NodeFile {
    /// Adds a network: its prefix and its rules.
    pub fn insert(&mut self, network: &str, prefix: NodePrefix, rules: RailRules) {
        let network_entry = NodeNetwork { prefix, rules };
        self.networks.insert(network.to_string(), network_entry);
    }

    /// The rules of `network`, if the file names it.
    pub fn rules(&self, network: &str) -> Option<&RailRules> {
        self.networks.get(network).map(|n| &n.rules)
    }

    /// Each network's rules, by name.
    pub fn rails(&self) -> impl Iterator<Item = (&String, &RailRules)> {
        self.networks.iter().map(|(name, n)| (name, &n.rules))
    }

    /// The node's name and prefixes, as the IPAM reads them.
    pub fn prefixes(&self) -> NodePrefixes {
        NodePrefixes {
            node_name: self.node_name.clone(),
            networks: (self.networks.iter())
                .map(|(name, n)| (name.clone(), n.prefix.clone()))
                .collect(),
        }
    }

    /// The namespaces `network`'s rule admits, listed, when it does not
    /// admit `namespace` (none given counts as not admitted where the rail
    /// names namespaces); `None` when it does, or there is no rule.
    pub fn refusing_namespace(&self, network: &str, namespace: Option<&str>) -> Option<String> {
        let allow = self.rules(network)?.allow.as_ref()?;
        let names = allow
            .namespaces
            .as_deref()
            .filter(|_| !allow.admits(namespace))?;
        Some(names.join(", "))
    }

    /// ADD's refusal of a pod of `namespace` on `network` (the config
    /// error's message; its field is `K8S_POD_NAMESPACE`), for railcni and
    /// railcni-ipam alike, whichever main plugin calls the latter.
    pub fn namespace_refusal(&self, network: &str, namespace: Option<&str>) -> Option<String> {
        let listed = self.refusing_namespace(network, namespace)?;
        let who = match namespace {
            Some(ns) => format!("a pod of namespace {ns}"),
            None => "a caller that names no pod namespace (K8S_POD_NAMESPACE)".to_string(),
        };
        Some(format!(
            "{who} may not attach network {network}; it admits {listed} (node file rule \
             networks.{network}.allow.namespaces); nothing was changed"
        ))
    }
}

impl NodePrefixes {
    /// The IPv6 side of a dual-stack node file: `prefix6`/`gateway6` as
    /// the prefixes of a file of their own.
    pub fn ipv6_side(&self) -> NodePrefixes {
        let networks = (self.networks.iter())
            .filter_map(|(n, a)| {
                let side = NodePrefix {
                    prefix: a.prefix6?,
                    gateway: a.gateway6,
                    prefix6: None,
                    gateway6: None,
                };
                Some((n.clone(), side))
            })
            .collect();
        NodePrefixes {
            node_name: self.node_name.clone(),
            networks,
        }
    }

    /// This node's name: RAILCNI_NODE_NAME, else the node file's
    /// `nodeName`, else NODE_NAME (a driver's pod knows its node from the
    /// downward API; its host name is the pod's), else the host name.
    pub fn node_name(&self, settings: &Settings) -> Option<String> {
        settings
            .node_name
            .clone()
            .or_else(|| self.node_name.clone())
            .or_else(|| settings.kube_node_name.clone())
            .or_else(|| nix::unistd::gethostname().ok()?.into_string().ok())
    }
}

impl NodePrefix {
    /// An IPv4 (or IPv6-only) prefix and its gateway.
    pub fn new(prefix: IpNet, gateway: Option<IpAddr>) -> Self {
        NodePrefix {
            prefix,
            gateway,
            prefix6: None,
            gateway6: None,
        }
    }
}

impl Allow {
    /// Whether a pod of `namespace` may attach (`None`: the runtime named
    /// none, which a namespace rule does not admit).
    pub fn admits(&self, namespace: Option<&str>) -> bool {
        match (&self.namespaces, namespace) {
            (None, _) => true,
            (Some(list), Some(ns)) => list.iter().any(|n| n == ns),
            (Some(_), None) => false,
        }
    }
}
