//! `Ctx`: one CNI call, the request on its node, which every verb takes.

use std::cell::OnceCell;

use cni::Env;

use crate::attachment::detach::Release;
use crate::config::NetConf;
use crate::ipam::NetworkIpam;
use crate::node::Node;
use base::node_file::NodeFile;

/// One CNI call: the request, on its node.
pub struct Ctx {
    pub env: Env,
    pub conf: NetConf,
    pub node: Node,
    ipam_pool: OnceCell<railcni_ipam::Ipam>,
    node_file: OnceCell<NodeFile>,
}

impl Ctx {
    pub fn new(env: Env, conf: NetConf, node: Node) -> Self {
        Ctx {
            env,
            conf,
            node,
            ipam_pool: OnceCell::new(),
            node_file: OnceCell::new(),
        }
    }

    /// This attachment's IPAM, if the network has one.
    pub fn ipam(&self) -> Option<NetworkIpam<'_>> {
        NetworkIpam::new(
            &self.conf,
            &self.env,
            &self.node.settings,
            &self.ipam_pool,
            &self.node_file,
        )
    }

    /// The node file, read once per call (the policy check and the
    /// embedded IPAM share it).
    pub fn node_file(&self) -> crate::error::Result<&NodeFile> {
        crate::ipam::node_file(&self.node_file, &self.node.settings)
    }

    /// This attachment's record (by container and interface), the config's
    /// `deviceID` read first: one record file in the usual case.
    pub fn record(&self) -> crate::error::Result<Option<crate::state::Record>> {
        let likely = self
            .conf
            .device_id
            .as_deref()
            .and_then(|d| crate::pci::normalize(d).ok());
        self.node
            .store
            .find_likely(&self.env.container_id, &self.env.ifname, likely.as_deref())
    }

    /// How detach releases leases in this call: through its IPAM.
    pub fn release(&self) -> Release<'_> {
        Release::Config(self.ipam())
    }
}
