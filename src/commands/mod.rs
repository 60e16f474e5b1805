//! The CNI verbs. Each takes the request on its node and returns a result
//! or a typed error; what they share with the day-2 commands lives in
//! `attachment`, `vf` and `routing`.

pub mod add;
pub mod check;
pub mod del;
pub mod gc;
pub mod ready;

use std::cell::OnceCell;

use cni::Env;

use crate::attachment::detach::Release;
use crate::config::NetConf;
use crate::ipam::Ipam;
use crate::node::Node;

/// One CNI call: the request, on its node.
pub struct Ctx {
    pub env: Env,
    pub conf: NetConf,
    pub node: Node,
    ipam_pool: OnceCell<railcni_ipam::Ipam>,
}

impl Ctx {
    pub fn new(env: Env, conf: NetConf, node: Node) -> Self {
        Ctx {
            env,
            conf,
            node,
            ipam_pool: OnceCell::new(),
        }
    }

    /// This attachment's IPAM, if the network has one.
    pub fn ipam(&self) -> Option<Ipam<'_>> {
        Ipam::new(&self.conf, &self.env, &self.node.settings, &self.ipam_pool)
    }

    /// How teardown releases leases in this call: through its IPAM.
    pub fn release(&self) -> Release<'_> {
        Release::Config(self.ipam())
    }
}
