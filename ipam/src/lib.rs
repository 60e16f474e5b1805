//! railcni's per-node rail IPAM: the interface the plugin calls in-process and
//! the `railcni-ipam` binary wraps.
//!
//! The allocator itself (pool arithmetic, lease file) lands with the "embedded
//! /31 IPAM" issue; until then every call reports clearly that it is missing.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;

/// An IPAM failure, carrying the CNI error code the caller should report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamError {
    code: u32,
    msg: String,
}

impl IpamError {
    pub fn new(code: u32, msg: impl Into<String>) -> Self {
        IpamError {
            code,
            msg: msg.into(),
        }
    }

    pub fn code(&self) -> u32 {
        self.code
    }
}

impl fmt::Display for IpamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for IpamError {}

/// Who holds an address: the CNI attachment key plus the pod, when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holder {
    pub container_id: String,
    pub ifname: String,
    pub pod_namespace: Option<String>,
    pub pod_name: Option<String>,
    pub pod_uid: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatedIp {
    pub address: IpNet,
    pub gateway: Option<IpAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub dst: IpNet,
    pub gw: Option<IpAddr>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allocation {
    pub ips: Vec<AllocatedIp>,
    pub routes: Vec<RouteSpec>,
}

/// Where the store lives and which node this is; from the environment only.
#[derive(Debug, Clone)]
pub struct IpamEnv {
    pub state_dir: PathBuf,
    pub node_name: Option<String>,
}

/// One network's pool on this node.
#[derive(Debug)]
pub struct Ipam {
    _network: String,
}

fn not_built() -> IpamError {
    IpamError::new(
        105,
        "the embedded railcni-ipam allocator is not available in this build; \
         use an external IPAM plugin (host-local, static, whereabouts, nv-ipam) in `ipam.type`",
    )
}

impl Ipam {
    pub fn load(
        network: &str,
        _ipam_conf: &serde_json::Value,
        _env: &IpamEnv,
    ) -> Result<Self, IpamError> {
        let _ = network;
        Err(not_built())
    }

    pub fn allocate(&self, _holder: &Holder, _requested: &[IpAddr]) -> Result<Allocation, IpamError> {
        Err(not_built())
    }

    pub fn release(&self, _container_id: &str, _ifname: &str) -> Result<(), IpamError> {
        Err(not_built())
    }

    pub fn check(&self, _container_id: &str, _ifname: &str) -> Result<Allocation, IpamError> {
        Err(not_built())
    }

    pub fn gc(&self, _valid: &[(String, String)]) -> Result<usize, IpamError> {
        Err(not_built())
    }

    pub fn status(&self) -> Result<(), IpamError> {
        Err(not_built())
    }
}
