//! The lease file as version 1 writes it, field for field and in this
//! order (the checksum is over the compact encoding of `data`). These types
//! are the file format; `Leases` in memory may change freely. A format
//! change adds `file_v2.rs`, a fixture directory under
//! `tests/fixtures/state/`, and a conversion from this one.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::leases::{Lease, Leases, PoolInfo};
use base::liveness::ProofV1;

pub const VERSION: u32 = 1;

/// `{"version":1,"checksum":"fnv1a64:…","data":{…}}`.
#[derive(Serialize, Deserialize)]
pub struct DocumentV1 {
    pub version: u32,
    pub checksum: String,
    pub data: LeasesV1,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeasesV1 {
    #[serde(default)]
    last_allocated: Option<IpAddr>,
    #[serde(default)]
    leases: Vec<LeaseV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pool: Option<PoolInfoV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_allocated6: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pool6: Option<PoolInfoV1>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeaseV1 {
    #[serde(rename = "containerID")]
    container_id: String,
    ifname: String,
    address: IpAddr,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    address6: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod_namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "podUID")]
    pod_uid: Option<String>,
    allocated_unix: u64,
    /// `netns`, `netnsId`, `bootId`.
    #[serde(flatten)]
    proof: ProofV1,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PoolInfoV1 {
    network: String,
    node: String,
    prefix: ipnet::IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gateway: Option<IpAddr>,
    capacity: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
}

impl From<&Leases> for LeasesV1 {
    fn from(d: &Leases) -> Self {
        LeasesV1 {
            last_allocated: d.last_allocated,
            leases: d.leases.iter().map(LeaseV1::from).collect(),
            pool: d.pool.as_ref().map(PoolInfoV1::from),
            last_allocated6: d.last_allocated6,
            pool6: d.pool6.as_ref().map(PoolInfoV1::from),
        }
    }
}

impl From<LeasesV1> for Leases {
    fn from(d: LeasesV1) -> Self {
        Leases {
            last_allocated: d.last_allocated,
            leases: d.leases.into_iter().map(Lease::from).collect(),
            pool: d.pool.map(PoolInfo::from),
            last_allocated6: d.last_allocated6,
            pool6: d.pool6.map(PoolInfo::from),
        }
    }
}

impl From<&Lease> for LeaseV1 {
    fn from(l: &Lease) -> Self {
        LeaseV1 {
            container_id: l.container_id.clone(),
            ifname: l.ifname.clone(),
            address: l.address,
            address6: l.address6,
            pod_namespace: l.pod_namespace.clone(),
            pod_name: l.pod_name.clone(),
            pod_uid: l.pod_uid.clone(),
            allocated_unix: l.allocated_unix,
            proof: ProofV1::from(&l.proof),
        }
    }
}

impl From<LeaseV1> for Lease {
    fn from(l: LeaseV1) -> Self {
        Lease {
            container_id: l.container_id,
            ifname: l.ifname,
            address: l.address,
            address6: l.address6,
            pod_namespace: l.pod_namespace,
            pod_name: l.pod_name,
            pod_uid: l.pod_uid,
            allocated_unix: l.allocated_unix,
            proof: l.proof.into(),
        }
    }
}

impl From<&PoolInfo> for PoolInfoV1 {
    fn from(p: &PoolInfo) -> Self {
        PoolInfoV1 {
            network: p.network.clone(),
            node: p.node.clone(),
            prefix: p.prefix,
            gateway: p.gateway,
            capacity: p.capacity,
            source: p.source.clone(),
        }
    }
}

impl From<PoolInfoV1> for PoolInfo {
    fn from(p: PoolInfoV1) -> Self {
        PoolInfo {
            network: p.network,
            node: p.node,
            prefix: p.prefix,
            gateway: p.gateway,
            capacity: p.capacity,
            source: p.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden v1 lease file, placeholders filled, its checksum recomputed.
    fn golden() -> Vec<u8> {
        let text = include_str!("../../../tests/fixtures/state/v1/rail1.leases.json.tmpl")
            .replace("@NETNS@", "/var/run/netns/pod")
            .replace("@NETNS_DEV@", "4")
            .replace("@NETNS_INO@", "4026532999");
        // The data's compact encoding, in the file's own field order.
        let data = &text[text.find("\"data\":").unwrap() + 7..text.rfind('}').unwrap()];
        let mut in_string = false;
        let compact: String = (data.chars())
            .filter(|c| {
                in_string ^= *c == '"';
                in_string || !c.is_whitespace()
            })
            .collect();
        let sum = format!("fnv1a64:{:016x}", base::fnv::fnv1a64(compact.as_bytes()));
        text.replace("@CHECKSUM@", &sum).into_bytes()
    }

    #[test]
    fn the_v1_fixture_reads_and_writes_back_unchanged() {
        let leases = super::super::decode(&golden()).unwrap();
        assert_eq!(leases.leases.len(), 1);
        let lease = &leases.leases[0];
        assert_eq!(lease.pod_uid.as_deref(), Some("1234"));
        assert_eq!(lease.proof.netns_id.map(|n| n.ino), Some(4026532999));
        assert_eq!(leases.pool.as_ref().map(|p| p.capacity), Some(1));
        let doc: DocumentV1 = serde_json::from_slice(&golden()).unwrap();
        let again = LeasesV1::from(&leases);
        assert_eq!(
            serde_json::to_value(again).unwrap(),
            serde_json::to_value(doc.data).unwrap()
        );
    }
}
