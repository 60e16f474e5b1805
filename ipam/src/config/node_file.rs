//! `/etc/cni/railcni/node.json`: this node's name and its prefix per
//! network, as provisioning wrote them. `NodeFileV1` is the file format
//! (`version` 1, or absent in files written before it was added); a format
//! change adds a `NodeFileV2` and a conversion from this one.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;
use serde::Deserialize;

use crate::error::IpamError;

/// The node file's version this build writes and reads.
pub const VERSION: u32 = 1;

/// What provisioning knows about this node's cabling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFile {
    pub node_name: Option<String>,
    pub networks: BTreeMap<String, NodeAllocation>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAllocation {
    pub prefix: IpNet,
    pub gateway: Option<IpAddr>,
    /// A dual-stack rail's IPv6 prefix and gateway for this node.
    pub prefix6: Option<IpNet>,
    pub gateway6: Option<IpAddr>,
    /// What the plan says the rail needs on this node, for `railcnictl
    /// doctor` (the IPAM reads none of it): the PF its VFs come from,
    pub pf: Option<String>,
    /// the rail's MTU,
    pub mtu: Option<u32>,
    /// its NAD's `rdma` (auto, required, off),
    pub rdma: Option<String>,
    /// and whether its VFs are DPDK ones (bound to vfio-pci).
    pub dpdk: bool,
    /// The most a NAD of this rail may ask of its VF (absent: no ceiling;
    /// the plugin enforces it, `railcni::policy`).
    pub allow: Option<Allow>,
    /// The rail's `rdmaQoS`, for `doctor`'s check of the PF's DCB.
    pub rdma_qos: Option<RailQos>,
}

/// A rail's `rdmaQoS` as the node file carries it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct RailQos {
    #[serde(default)]
    pub tos: Option<u8>,
    #[serde(default)]
    pub tc: Option<u8>,
}

/// A rail's ceiling on the VF settings its NADs may ask for: a NAD is a
/// namespaced object any namespace admin can write, the node file the
/// administrator's. What a present ceiling does not name is not allowed
/// (so a key this build does not know, or misspelt, allows nothing more).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
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
    #[serde(default)]
    pub max_tx_rate_mbps: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeFileV1 {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    networks: BTreeMap<String, NodeAllocationV1>,
}

#[derive(Deserialize)]
struct NodeAllocationV1 {
    prefix: IpNet,
    #[serde(default)]
    gateway: Option<IpAddr>,
    #[serde(default)]
    prefix6: Option<IpNet>,
    #[serde(default)]
    gateway6: Option<IpAddr>,
    // Optional additions to v1: a build that predates them ignores them.
    #[serde(default)]
    pf: Option<String>,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    rdma: Option<String>,
    #[serde(default)]
    dpdk: bool,
    #[serde(default)]
    allow: Option<Allow>,
    #[serde(default, rename = "rdmaQoS")]
    rdma_qos: Option<RailQos>,
}

impl From<NodeFileV1> for NodeFile {
    fn from(f: NodeFileV1) -> Self {
        let networks = (f.networks.into_iter())
            .map(|(name, a)| {
                let a = NodeAllocation {
                    prefix: a.prefix,
                    gateway: a.gateway,
                    prefix6: a.prefix6,
                    gateway6: a.gateway6,
                    pf: a.pf,
                    mtu: a.mtu,
                    rdma: a.rdma,
                    dpdk: a.dpdk,
                    allow: a.allow,
                    rdma_qos: a.rdma_qos,
                };
                (name, a)
            })
            .collect();
        NodeFile {
            node_name: f.node_name,
            networks,
        }
    }
}

impl NodeFile {
    /// The IPv6 side of a dual-stack node file: `prefix6`/`gateway6` as
    /// the prefixes of a file of its own.
    pub fn ipv6_side(&self) -> NodeFile {
        NodeFile {
            node_name: self.node_name.clone(),
            networks: self
                .networks
                .iter()
                .filter_map(|(n, a)| {
                    Some((
                        n.clone(),
                        NodeAllocation {
                            prefix: a.prefix6?,
                            gateway: a.gateway6,
                            ..NodeAllocation::default()
                        },
                    ))
                })
                .collect(),
        }
    }

    /// This node's name: RAILCNI_NODE_NAME, else the node file's
    /// `nodeName`, else NODE_NAME (a driver's pod knows its node from the
    /// downward API; its host name is the pod's), else the host name.
    pub fn node_name(&self, settings: &base::Settings) -> Option<String> {
        settings
            .node_name
            .clone()
            .or_else(|| self.node_name.clone())
            .or_else(|| settings.kube_node_name.clone())
            .or_else(|| nix::unistd::gethostname().ok()?.into_string().ok())
    }

    /// The file's text: version 1 (or none), else named as newer.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Versioned {
            version: Option<u32>,
        }
        let versioned: Versioned = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        match versioned.version.unwrap_or(VERSION) {
            VERSION => (serde_json::from_slice::<NodeFileV1>(bytes))
                .map(NodeFile::from)
                .map_err(|e| e.to_string()),
            other => Err(format!(
                "it is node file version {other}; this railcni {} reads version {VERSION}: \
                 upgrade railcni on this node or write the file with this release's `railcnictl plan`",
                env!("CARGO_PKG_VERSION")
            )),
        }
    }

    /// A missing file is empty.
    pub fn load(path: &Path) -> Result<Self, IpamError> {
        match std::fs::read(path) {
            Ok(bytes) => NodeFile::parse(&bytes).map_err(|e| {
                IpamError::config("node file", format!("{} is invalid: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(NodeFile::default()),
            Err(e) => Err(IpamError::io(
                format!("cannot read node config {}", path.display()),
                &e,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_a_version_is_version_1_and_a_newer_one_is_named() {
        let v1 = br#"{"nodeName":"gpu-0","networks":{"rail1":{"prefix":"172.16.0.0/31","gateway":"172.16.0.1"}}}"#;
        let file = NodeFile::parse(v1).unwrap();
        assert_eq!(file.node_name.as_deref(), Some("gpu-0"));
        assert_eq!(file.networks["rail1"].gateway, "172.16.0.1".parse().ok());
        let stamped = br#"{"version":1,"nodeName":"gpu-0","networks":{}}"#;
        assert!(NodeFile::parse(stamped).is_ok());
        let newer = NodeFile::parse(br#"{"version":2,"nodeName":"gpu-0"}"#).unwrap_err();
        assert!(newer.contains("node file version 2"), "{newer}");
    }
}
