//! The launch kit's cluster config as railcni reads it (k8s-launch-kit
//! `pkg/config/config.go` at 378fd36): the fields the import maps, the
//! rest kept to be named as not mapped.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde::{Deserialize, Deserializer};

pub(super) type Rest = BTreeMap<String, serde_yaml_ng::Value>;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LaunchKit {
    #[serde(default)]
    pub(super) cluster_config: Vec<Group>,
    #[serde(default)]
    pub(super) nv_ipam: Option<NvIpam>,
    #[serde(default)]
    pub(super) sriov: Option<Sriov>,
    #[serde(default)]
    pub(super) pod_namespace: Option<String>,
    #[serde(default)]
    pub(super) profile: Option<Profile>,
    /// The Host Device profile's resource and network names.
    #[serde(default)]
    pub(super) hostdev: Option<Hostdev>,
    #[serde(flatten)]
    pub(super) rest: Rest,
}

/// `hostdev`: the Host Device RDMA profile's SR-IOV device plugin resource
/// (`<resourceName>_rail_<N>` per rail, one PF each; the launch kit's
/// `profiles/host-device-rdma/30-hostdevicenetwork.yaml` at 396bc00).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Hostdev {
    #[serde(default)]
    pub(super) resource_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Group {
    #[serde(default)]
    pub(super) identifier: String,
    #[serde(default)]
    pub(super) link_type: Option<String>,
    #[serde(default)]
    pub(super) pfs: Vec<LaunchKitPf>,
    #[serde(default)]
    pub(super) worker_nodes: Vec<String>,
    /// The GPU product (`l8k discover`), from which the launch kit derives
    /// the doSPCX platform; read, not needed by a plan.
    #[serde(default)]
    pub(super) gpu_type: Option<String>,
    #[serde(default)]
    pub(super) spectrum_x: Option<GroupSpectrumX>,
    #[serde(flatten)]
    pub(super) rest: Rest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LaunchKitPf {
    pub(super) pci_address: String,
    pub(super) network_interface: String,
    #[serde(default)]
    pub(super) traffic: Option<String>,
    #[serde(default)]
    pub(super) rail: Option<u8>,
    #[serde(default, rename = "connectedGPU")]
    pub(super) connected_gpu: Option<String>,
    #[serde(flatten)]
    pub(super) rest: Rest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NvIpam {
    #[serde(default)]
    pub(super) per_node_block_size: Option<u32>,
    #[serde(default)]
    pub(super) starting_subnet: Option<Ipv4Addr>,
    #[serde(default)]
    pub(super) mask: Option<u8>,
    #[serde(default)]
    pub(super) offset: Option<u32>,
    #[serde(default)]
    pub(super) subnets: Vec<Subnet>,
    #[serde(flatten)]
    pub(super) rest: Rest,
}

#[derive(Deserialize)]
pub(super) struct Subnet {
    pub(super) subnet: IpNet,
    pub(super) gateway: IpAddr,
    #[serde(default)]
    pub(super) exclusions: Vec<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Sriov {
    #[serde(default)]
    pub(super) ethernet_mtu: Option<u32>,
    /// The SR-IOV device plugin resources' base name (`<name>_rail_<N>`).
    #[serde(default)]
    pub(super) resource_name: Option<String>,
    #[serde(flatten)]
    pub(super) rest: Rest,
}

/// Per-PF keys that describe hardware, not the fabric: read, not needed.
pub(super) const PF_DESCRIPTIVE: [&str; 8] = [
    "deviceID",
    "rdmaDevice",
    "psid",
    "partNumber",
    "model",
    "numaNode",
    "connectedGPUPCIAddress",
    "gpuProximity",
];

/// `profile`: which of the launch kit's deployments the config is for.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Profile {
    #[serde(default)]
    pub(super) spectrum_x: Option<ProfileSpectrumX>,
    /// The deployment `l8k discover` saved (`sriov`, `host_device`, …):
    /// `host_device` hands each rail's PF whole to the pod.
    #[serde(default)]
    pub(super) deployment: Option<String>,
}

/// `profile.spectrumX`: the Spectrum-X release and its multiplane mode
/// (`none`, `uniplane`, `swplb`, `hwplb`) with its number of planes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ProfileSpectrumX {
    #[serde(default)]
    pub(super) multiplane_mode: Option<String>,
    #[serde(default)]
    pub(super) number_of_planes: Option<u8>,
}

/// `clusterConfig[].spectrumX`: the derived doSPCX platform and, for
/// hwplb, each rail's software plane.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GroupSpectrumX {
    #[serde(default)]
    pub(super) platform_type: Option<String>,
    #[serde(default, deserialize_with = "unique_rail_keys")]
    pub(super) sw_plane_by_rail: BTreeMap<u8, u8>,
}

/// A rail → plane map whose rail keys are each given once, however they
/// are spelled (`0`, `00`, `0x0`, which the launch kit's YAML 1.1 reader
/// all reads as 0): the launch kit refuses a config that gives one twice
/// (its `DecodeInput`), and so does the import.
fn unique_rail_keys<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u8, u8>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = BTreeMap<u8, u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of rail to plane")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, plane)) = map.next_entry::<serde_yaml_ng::Value, u8>()? {
                let rail = yaml11_int(&key).ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "swPlaneByRail key {key:?} is not a rail number"
                    ))
                })?;
                if out.insert(rail, plane).is_some() {
                    return Err(serde::de::Error::custom(format!(
                        "duplicate swPlaneByRail rail key {rail}"
                    )));
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Visitor)
}

/// A YAML 1.1 integer as Go's yaml.v2 reads one: decimal, `0x` hex, `0b`
/// binary, a leading `0` octal.
fn yaml11_int(v: &serde_yaml_ng::Value) -> Option<u8> {
    let text = match v {
        serde_yaml_ng::Value::Number(n) => return n.as_u64().and_then(|n| u8::try_from(n).ok()),
        serde_yaml_ng::Value::String(s) => s.replace('_', ""),
        _ => return None,
    };
    let (digits, radix) = if let Some(hex) = text.strip_prefix("0x") {
        (hex, 16)
    } else if let Some(bin) = text.strip_prefix("0b") {
        (bin, 2)
    } else if text.len() > 1 && text.starts_with('0') {
        (&text[1..], 8)
    } else {
        (text.as_str(), 10)
    };
    u8::from_str_radix(digits, radix).ok()
}
