//! One attachment's record, in memory (`record_v1` is its form on disk).

use base::liveness::Proof;
use cni::CniResult;

use crate::vf::home::{HostLink, Saved};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Written before the host changes; the VF may be anywhere.
    Adding,
    /// ADD finished; `result` holds what was returned.
    Attached,
}

/// One attachment, as DEL, CHECK, GC and the operator commands need it
/// (on disk: `record_v1`).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub pci: String,
    pub network: String,
    pub container_id: String,
    pub ifname: String,
    /// The pod's namespace and boot, which prove the attachment alive.
    pub proof: Proof,
    pub host: HostLink,
    /// The VF's ifindex in the pod (it changes when the pod already uses it).
    pub pod_ifindex: Option<u32>,
    /// The network's `ipam.type`: a stale record of another network can
    /// still have its embedded lease released.
    pub ipam_type: Option<String>,
    /// An external IPAM plugin and the config ADD ran it with, so its lease
    /// can be released without the network config (the operator's `gc`).
    pub external_ipam: Option<crate::ipam::ExternalIpam>,
    /// `namespace/name` of the Kubernetes pod, when the runtime said.
    pub pod: Option<String>,
    /// An InfiniBand attachment's partition key (applied by the subnet manager).
    pub pkey: Option<u16>,
    /// A DPDK VF: nothing moved, only IPAM and PF-side settings.
    pub dpdk: bool,
    /// The PF-side VF attributes before ADD, for exactly the fields it set.
    pub vf_restore: Option<crate::vf::settings::VfSettings>,
    /// How often a driver reload tore the VF out of the pod and it was put
    /// back (`attachment::reattach`).
    pub reattached: u32,
    /// The PF-side VF attributes ADD set: set again when a driver reload
    /// brings the VF back with factory settings (absent in older records).
    pub vf_applied: Option<crate::vf::settings::VfSettings>,
    /// The RDMA device ADD moved into the pod.
    pub rdma_device: Option<String>,
    /// The VF's RDMA device left on the host, serving the pod from there
    /// (the RDMA subsystem's shared netns mode; absent in older records).
    pub rdma_shared: Option<String>,
    /// The port of the VF's RDMA device that carries the VF (absent in
    /// records before ports were matched: see `hca_port`).
    pub rdma_port: Option<u32>,
    /// The RDMA device's QoS ADD set, with what it found before.
    pub rdma_qos: Option<crate::rdma_qos::QosRecord>,
    /// The rail routing ADD installed (table, rules, routes, sysctls).
    pub routing: Option<crate::routing::RailRoutes>,
    pub phase: Phase,
    /// The ADD result, replayed for a repeated ADD.
    pub result: Option<CniResult>,
    pub created_unix: u64,
    /// A whole-NIC rail: the device is a PF moved into the pod itself.
    pub whole_nic: bool,
}

impl Record {
    /// The VF's RDMA device serving the pod: the one moved into it, else the
    /// one serving it from the host (shared netns mode); whether it is the
    /// latter.
    pub fn hca(&self) -> Option<(&str, bool)> {
        match (&self.rdma_device, &self.rdma_shared) {
            (Some(moved), _) => Some((moved, false)),
            (None, Some(shared)) => Some((shared, true)),
            (None, None) => None,
        }
    }

    /// The port of the VF's RDMA device: as ADD matched it, else (a record
    /// of an earlier release) the one its `rdmaQoS` was written to.
    pub fn hca_port(&self) -> Option<u32> {
        self.rdma_port.or(self.rdma_qos.as_ref().map(|q| q.port))
    }

    /// What this record says of its VF, for finding it and bringing it home.
    pub fn saved_vf(&self) -> Saved<'_> {
        Saved {
            host: &self.host,
            pod_ifname: &self.ifname,
            pod_ifindex: self.pod_ifindex,
        }
    }

    pub fn new(
        pci: &str,
        network: &str,
        container_id: &str,
        ifname: &str,
        proof: Proof,
        host: HostLink,
    ) -> Self {
        Record {
            pci: pci.to_string(),
            network: network.to_string(),
            container_id: container_id.to_string(),
            ifname: ifname.to_string(),
            proof,
            host,
            pod_ifindex: None,
            ipam_type: None,
            external_ipam: None,
            pod: None,
            pkey: None,
            dpdk: false,
            vf_restore: None,
            vf_applied: None,
            reattached: 0,
            rdma_device: None,
            rdma_shared: None,
            rdma_port: None,
            rdma_qos: None,
            routing: None,
            phase: Phase::Adding,
            result: None,
            whole_nic: false,
            created_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }

    pub fn is_for(&self, container_id: &str, ifname: &str) -> bool {
        self.container_id == container_id && self.ifname == ifname
    }

    /// A record of VF 0000:3b:02.0 attached as c1/net1 on rail1, for tests.
    #[cfg(test)]
    pub fn sample() -> Self {
        let host = HostLink {
            name: "pf1v0".into(),
            mac: None,
            mtu: 1500,
            ifindex: 7,
            up: None,
        };
        Record::new(
            "0000:3b:02.0",
            "rail1",
            "c1",
            "net1",
            Proof::default(),
            host,
        )
    }

    /// Is the pod namespace this record points at still the same live
    /// namespace, in this boot?
    pub fn netns_alive(&self, boot_id: Option<&str>) -> bool {
        self.proof.netns_id.is_some() && self.proof.gone(boot_id).is_none()
    }

    /// The pod namespace path, for messages.
    pub fn netns(&self) -> Option<&str> {
        self.proof.netns.as_deref()
    }
}
