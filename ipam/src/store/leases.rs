//! The leases of one network on this node, as the store holds them in
//! memory (`file_v1` is their form on disk).

use std::net::IpAddr;

use base::liveness::Proof;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub container_id: String,
    pub ifname: String,
    pub address: IpAddr,
    /// A dual-stack rail's IPv6 address, in the same lease.
    pub address6: Option<IpAddr>,
    pub pod_namespace: Option<String>,
    pub pod_name: Option<String>,
    pub pod_uid: Option<String>,
    pub allocated_unix: u64,
    /// What proves the holder alive: its netns and boot.
    pub proof: Proof,
}

impl Lease {
    pub fn is_for(&self, container_id: &str, ifname: &str) -> bool {
        self.container_id == container_id && self.ifname == ifname
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leases {
    /// Where round-robin allocation continues from.
    pub last_allocated: Option<IpAddr>,
    pub leases: Vec<Lease>,
    /// The pool these leases come from, as of the last allocation: what
    /// `railcnictl status` reports, and what a changed config is checked against.
    pub pool: Option<PoolInfo>,
    /// A dual-stack rail's IPv6 side: where its round-robin continues, its pool.
    pub last_allocated6: Option<IpAddr>,
    pub pool6: Option<PoolInfo>,
}

/// A network's pool on this node, as the store remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolInfo {
    pub network: String,
    pub node: String,
    pub prefix: ipnet::IpNet,
    pub gateway: Option<IpAddr>,
    /// Addresses that may be leased.
    pub capacity: usize,
    /// Where the prefix came from when it is not the config or node file
    /// (`pf <name>` for `matchMasterSubnet`). Absent in older files.
    pub source: Option<String>,
}
