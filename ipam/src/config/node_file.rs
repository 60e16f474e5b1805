//! `/etc/cni/railcni/node.json`: this node's name and its prefix per
//! network, as provisioning wrote them.

use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;
use serde::Deserialize;

use crate::IpamError;

/// `/etc/cni/railcni/node.json`: what provisioning knows about this node's cabling.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFile {
    #[serde(default)]
    pub node_name: Option<String>,
    #[serde(default)]
    pub networks: std::collections::BTreeMap<String, NodeAllocation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NodeAllocation {
    pub prefix: IpNet,
    #[serde(default)]
    pub gateway: Option<IpAddr>,
    /// A dual-stack rail's IPv6 prefix and gateway for this node.
    #[serde(default)]
    pub prefix6: Option<IpNet>,
    #[serde(default)]
    pub gateway6: Option<IpAddr>,
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
                            prefix6: None,
                            gateway6: None,
                        },
                    ))
                })
                .collect(),
        }
    }

    /// This node's name: RAILCNI_NODE_NAME, else the node file's
    /// `nodeName`, else the host name.
    pub fn node_name(&self, settings: &cni::Settings) -> Option<String> {
        settings
            .node_name
            .clone()
            .or_else(|| self.node_name.clone())
            .or_else(|| nix::unistd::gethostname().ok()?.into_string().ok())
    }

    /// A missing file is empty.
    pub fn load(path: &Path) -> Result<Self, IpamError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                IpamError::config("node file", format!("{} is invalid: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(NodeFile::default()),
            Err(e) => Err(IpamError::io(format!(
                "cannot read node config {}: {e}",
                path.display()
            ))),
        }
    }
}
