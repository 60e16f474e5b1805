//! The attachment record as version 1 writes it, field for field. These
//! types are the file format: the in-memory `Record` and the types it holds
//! (routing plans, VF settings, results) may change freely; this may not.
//! A format change adds `record_v2.rs`, a fixture directory under
//! `tests/fixtures/state/`, and a conversion from this one.

use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{Phase, Record};
use crate::ipam::ExternalIpam;
use crate::net::route::{RouteSpec, RuleSpec};
use crate::net::Guid;
use crate::net::Mac;
use crate::rdma_qos::{QosRecord, RoceAttr, RoceSettings};
use crate::routing::conf::{Family, SysctlKey};
use crate::routing::plan::Sysctl;
use crate::routing::RailRoutes;
use crate::vf::home::HostLink;
use crate::vf::settings::{LinkState, Rate, VfAttr, VfSettings, Vlan, VlanProto};
use base::liveness::ProofV1;
use cni::CniResult;

pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordV1 {
    version: u32,
    pci: String,
    network: String,
    container_id: String,
    ifname: String,
    /// `netns`, `netnsId`, `bootId`.
    #[serde(flatten)]
    proof: ProofV1,
    host: HostLinkV1,
    #[serde(default)]
    pod_ifindex: Option<u32>,
    ipam_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    external_ipam: Option<ExternalIpamV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pkey: Option<u16>,
    #[serde(default)]
    dpdk: bool,
    #[serde(default)]
    vf_restore: Option<VfSettingsV1>,
    #[serde(default, skip_serializing_if = "is_zero")]
    reattached: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vf_applied: Option<VfSettingsV1>,
    #[serde(default)]
    rdma_device: Option<String>,
    /// Added to v1 with the port match (#53): absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdma_shared: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdma_port: Option<u32>,
    /// Absent in records of releases before rdmaQoS (and when none was set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdma_qos: Option<RdmaQosV1>,
    #[serde(default)]
    routing: Option<RoutingV1>,
    phase: PhaseV1,
    /// The ADD result in the CNI 1.1 shape (the spec's format, not ours):
    /// kept as the JSON it is, so a change to the `cni` crate's types
    /// never changes a record.
    result: Option<Value>,
    created_unix: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    whole_nic: bool,
}

/// `rdmaQos`: `{"device", "port", "trafficClass": {"value", "before"},
/// "tos": {...}, "tosGroupMade"}`; a class `before` of null is "no class
/// set"; `tosGroupMade`: railcni made the rdma_cm group and removes it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RdmaQosV1 {
    device: String,
    port: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traffic_class: Option<ChangeV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tos: Option<ChangeV1>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    tos_group_made: bool,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct ChangeV1 {
    value: u8,
    before: Option<u8>,
}

impl From<&QosRecord> for RdmaQosV1 {
    /// Each applied attribute to its field (a match over every kind, so a
    /// new one cannot be left off the disk unnoticed), with what it found.
    fn from(q: &QosRecord) -> Self {
        let mut v1 = RdmaQosV1 {
            device: q.device.clone(),
            port: q.port,
            traffic_class: None,
            tos: None,
            tos_group_made: false,
        };
        for attr in q.applied.attrs() {
            let before = q.restore.get(attr);
            match *attr {
                RoceAttr::TrafficClass(value) => {
                    v1.traffic_class = value.map(|value| ChangeV1 {
                        value,
                        before: before.and_then(|a| a.byte()),
                    });
                }
                RoceAttr::DefaultTos(value) => {
                    v1.tos = Some(ChangeV1 {
                        value,
                        before: before.and_then(|a| a.byte()),
                    });
                }
                RoceAttr::RdmaCmGroup(_) => {
                    v1.tos_group_made = before == Some(RoceAttr::RdmaCmGroup(false));
                }
            }
        }
        v1
    }
}

/// A ToS comes with rdma_cm's group: railcni's own (`tosGroupMade`,
/// removed on restore) or one that was there.
impl From<RdmaQosV1> for QosRecord {
    fn from(q: RdmaQosV1) -> Self {
        let mut restore = RoceSettings::default();
        let mut applied = RoceSettings::default();
        if let Some(c) = q.traffic_class {
            restore.set(RoceAttr::TrafficClass(c.before));
            applied.set(RoceAttr::TrafficClass(Some(c.value)));
        }
        if let Some(c) = q.tos {
            // 0: the kernel's own default (every record railcni writes has one).
            restore.set(RoceAttr::DefaultTos(c.before.unwrap_or(0)));
            restore.set(RoceAttr::RdmaCmGroup(!q.tos_group_made));
            applied.set(RoceAttr::DefaultTos(c.value));
            applied.set(RoceAttr::RdmaCmGroup(true));
        }
        QosRecord {
            device: q.device,
            port: q.port,
            restore,
            applied,
        }
    }
}

/// A MAC as v1 writes it: `02:00:00:00:00:01`, lower case.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
struct MacV1([u8; 6]);

impl TryFrom<String> for MacV1 {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        let bytes = hex_bytes(&s).filter(|b| b.len() == 6);
        let bytes = bytes.ok_or_else(|| format!("{s:?} is not a MAC (6 bytes)"))?;
        let mut mac = [0; 6];
        mac.copy_from_slice(&bytes);
        Ok(MacV1(mac))
    }
}

impl From<MacV1> for String {
    fn from(m: MacV1) -> String {
        hex_text(&m.0)
    }
}

/// An InfiniBand GUID as v1 writes it: `00:11:22:33:44:55:66:77`; all
/// zeros (a VF's GUID before one is set) is a value like any other.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
struct GuidV1(u64);

impl TryFrom<String> for GuidV1 {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        let bytes = hex_bytes(&s).filter(|b| b.len() == 8);
        let bytes = bytes.ok_or_else(|| format!("{s:?} is not a GUID (8 bytes)"))?;
        Ok(GuidV1(bytes.iter().fold(0, |v, b| v << 8 | u64::from(*b))))
    }
}

impl From<GuidV1> for String {
    fn from(g: GuidV1) -> String {
        hex_text(&g.0.to_be_bytes())
    }
}

/// `aa:bb:…` as bytes; `None` unless every part is two hex digits.
fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    s.split(':')
        .map(|p| {
            (p.len() == 2)
                .then(|| u8::from_str_radix(p, 16).ok())
                .flatten()
        })
        .collect()
}

fn hex_text(bytes: &[u8]) -> String {
    let parts: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

#[derive(Serialize, Deserialize)]
struct HostLinkV1 {
    name: String,
    mac: Option<MacV1>,
    mtu: u32,
    ifindex: u32,
    #[serde(default, rename = "adminUp", skip_serializing_if = "Option::is_none")]
    admin_up: Option<bool>,
}

#[derive(Serialize, Deserialize)]
struct ExternalIpamV1 {
    plugin: PathBuf,
    /// The network config the plugin was given: whatever the NAD held.
    conf: Value,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PhaseV1 {
    Adding,
    Attached,
}

/// A VF's settings as a v1 record holds them (`vfRestore`, `vfApplied`):
/// one JSON object whose keys are the attributes' tags, in apply order
/// (`{"vlan": {...}, "trust": false}`). Keys a later release may add are
/// passed over, as they always were.
struct VfSettingsV1(Vec<VfAttrV1>);

/// One VF attribute: its tag and its value as v1 writes them.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum VfAttrV1 {
    Mac(MacV1),
    Vlan(VlanV1),
    Spoofchk(bool),
    Trust(bool),
    LinkState(LinkStateV1),
    Rate(RateV1),
    IbGuid(GuidV1),
}

#[derive(Clone, Copy, Serialize, Deserialize)]
struct VlanV1 {
    id: u16,
    qos: u8,
    proto: VlanProtoV1,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
enum VlanProtoV1 {
    #[serde(rename = "802.1q")]
    Dot1Q,
    #[serde(rename = "802.1ad")]
    Dot1Ad,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum LinkStateV1 {
    Auto,
    Enable,
    Disable,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateV1 {
    min_mbps: u32,
    max_mbps: u32,
}

#[derive(Serialize, Deserialize)]
struct RoutingV1 {
    table: u32,
    priority: u32,
    rules: Vec<RuleV1>,
    routes: Vec<RouteV1>,
    sysctls: Vec<SysctlV1>,
}

#[derive(Serialize, Deserialize)]
struct RuleV1 {
    src: IpNet,
    table: u32,
    priority: u32,
}

#[derive(Serialize, Deserialize)]
struct RouteV1 {
    dst: IpNet,
    gw: Option<IpAddr>,
    table: Option<u32>,
    scope: u8,
    src: Option<IpAddr>,
}

#[derive(Serialize, Deserialize)]
struct SysctlV1 {
    family: FamilyV1,
    key: String,
    value: String,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum FamilyV1 {
    Ipv4,
    Ipv6,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TryFrom<&Record> for RecordV1 {
    type Error = serde_json::Error;
    fn try_from(r: &Record) -> serde_json::Result<Self> {
        Ok(RecordV1 {
            version: VERSION,
            pci: r.pci.clone(),
            network: r.network.clone(),
            container_id: r.container_id.clone(),
            ifname: r.ifname.clone(),
            proof: ProofV1::from(&r.proof),
            host: HostLinkV1 {
                name: r.host.name.clone(),
                mac: r.host.mac.map(|m| MacV1(m.0)),
                mtu: r.host.mtu,
                ifindex: r.host.ifindex,
                admin_up: r.host.up,
            },
            pod_ifindex: r.pod_ifindex,
            ipam_type: r.ipam_type.clone(),
            external_ipam: r.external_ipam.as_ref().map(|e| ExternalIpamV1 {
                plugin: e.plugin.clone(),
                conf: e.conf.clone(),
            }),
            pod: r.pod.clone(),
            pkey: r.pkey,
            dpdk: r.dpdk,
            vf_restore: r.vf_restore.as_ref().map(VfSettingsV1::from),
            reattached: r.reattached,
            vf_applied: r.vf_applied.as_ref().map(VfSettingsV1::from),
            rdma_device: r.rdma_device.clone(),
            rdma_shared: r.rdma_shared.clone(),
            rdma_port: r.rdma_port,
            rdma_qos: r.rdma_qos.as_ref().map(RdmaQosV1::from),
            routing: r.routing.as_ref().map(RoutingV1::from),
            phase: match r.phase {
                Phase::Adding => PhaseV1::Adding,
                Phase::Attached => PhaseV1::Attached,
            },
            result: r.result.as_ref().map(serde_json::to_value).transpose()?,
            created_unix: r.created_unix,
            whole_nic: r.whole_nic,
        })
    }
}

impl TryFrom<RecordV1> for Record {
    type Error = serde_json::Error;
    fn try_from(r: RecordV1) -> serde_json::Result<Self> {
        Ok(Record {
            pci: r.pci,
            network: r.network,
            container_id: r.container_id,
            ifname: r.ifname,
            proof: r.proof.into(),
            host: HostLink {
                name: r.host.name,
                mac: r.host.mac.map(|m| Mac(m.0)),
                mtu: r.host.mtu,
                ifindex: r.host.ifindex,
                up: r.host.admin_up,
            },
            pod_ifindex: r.pod_ifindex,
            ipam_type: r.ipam_type,
            external_ipam: r.external_ipam.map(|e| ExternalIpam {
                plugin: e.plugin,
                conf: e.conf,
            }),
            pod: r.pod,
            pkey: r.pkey,
            dpdk: r.dpdk,
            vf_restore: r.vf_restore.map(VfSettings::from),
            reattached: r.reattached,
            vf_applied: r.vf_applied.map(VfSettings::from),
            rdma_device: r.rdma_device,
            rdma_shared: r.rdma_shared,
            rdma_port: r.rdma_port,
            rdma_qos: r.rdma_qos.map(QosRecord::from),
            routing: r.routing.map(RailRoutes::from),
            phase: match r.phase {
                PhaseV1::Adding => Phase::Adding,
                PhaseV1::Attached => Phase::Attached,
            },
            result: r
                .result
                .map(serde_json::from_value::<CniResult>)
                .transpose()?,
            created_unix: r.created_unix,
            whole_nic: r.whole_nic,
        })
    }
}

impl From<&VfSettings> for VfSettingsV1 {
    fn from(s: &VfSettings) -> Self {
        VfSettingsV1(s.attrs().iter().map(VfAttrV1::from).collect())
    }
}

impl From<VfSettingsV1> for VfSettings {
    fn from(s: VfSettingsV1) -> Self {
        VfSettings::from_attrs(s.0.into_iter().map(VfAttr::from))
    }
}

impl From<&VfAttr> for VfAttrV1 {
    fn from(a: &VfAttr) -> Self {
        match *a {
            VfAttr::Mac(m) => VfAttrV1::Mac(MacV1(m.0)),
            VfAttr::Vlan(v) => VfAttrV1::Vlan(VlanV1 {
                id: v.id,
                qos: v.qos,
                proto: match v.proto {
                    VlanProto::Dot1Q => VlanProtoV1::Dot1Q,
                    VlanProto::Dot1Ad => VlanProtoV1::Dot1Ad,
                },
            }),
            VfAttr::Spoofchk(on) => VfAttrV1::Spoofchk(on),
            VfAttr::Trust(on) => VfAttrV1::Trust(on),
            VfAttr::LinkState(l) => VfAttrV1::LinkState(match l {
                LinkState::Auto => LinkStateV1::Auto,
                LinkState::Enable => LinkStateV1::Enable,
                LinkState::Disable => LinkStateV1::Disable,
            }),
            VfAttr::Rate(r) => VfAttrV1::Rate(RateV1 {
                min_mbps: r.min_mbps,
                max_mbps: r.max_mbps,
            }),
            VfAttr::IbGuid(g) => VfAttrV1::IbGuid(GuidV1(g.0)),
        }
    }
}

impl From<VfAttrV1> for VfAttr {
    fn from(a: VfAttrV1) -> Self {
        match a {
            VfAttrV1::Mac(m) => VfAttr::Mac(Mac(m.0)),
            VfAttrV1::Vlan(v) => VfAttr::Vlan(Vlan {
                id: v.id,
                qos: v.qos,
                proto: match v.proto {
                    VlanProtoV1::Dot1Q => VlanProto::Dot1Q,
                    VlanProtoV1::Dot1Ad => VlanProto::Dot1Ad,
                },
            }),
            VfAttrV1::Spoofchk(on) => VfAttr::Spoofchk(on),
            VfAttrV1::Trust(on) => VfAttr::Trust(on),
            VfAttrV1::LinkState(l) => VfAttr::LinkState(match l {
                LinkStateV1::Auto => LinkState::Auto,
                LinkStateV1::Enable => LinkState::Enable,
                LinkStateV1::Disable => LinkState::Disable,
            }),
            VfAttrV1::Rate(r) => VfAttr::Rate(Rate {
                min_mbps: r.min_mbps,
                max_mbps: r.max_mbps,
            }),
            VfAttrV1::IbGuid(g) => VfAttr::IbGuid(Guid(g.0)),
        }
    }
}

/// Each attribute is a one-key object as serde tags it; the record holds
/// their members side by side in one object, in apply order, each value's
/// text as serde wrote it (its fields in declared order).
impl Serialize for VfSettingsV1 {
    fn serialize<S: serde::Serializer>(&self, out: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut object = out.serialize_map(Some(self.0.len()))?;
        for attr in &self.0 {
            let text = serde_json::to_string(attr).map_err(S::Error::custom)?;
            let one: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
                serde_json::from_str(&text).map_err(S::Error::custom)?;
            for (tag, value) in &one {
                object.serialize_entry(tag, value)?;
            }
        }
        object.end()
    }
}

impl<'de> Deserialize<'de> for VfSettingsV1 {
    fn deserialize<D: serde::Deserializer<'de>>(input: D) -> std::result::Result<Self, D::Error> {
        let object = serde_json::Map::<String, Value>::deserialize(input)?;
        let mut attrs = Vec::with_capacity(object.len());
        for (tag, value) in object {
            let one = Value::Object(serde_json::Map::from_iter([(tag, value)]));
            match serde_json::from_value::<VfAttrV1>(one) {
                Ok(attr) => attrs.push(attr),
                // A tag this release does not know: passed over.
                Err(e) if e.to_string().starts_with("unknown variant") => {}
                Err(e) => return Err(serde::de::Error::custom(e)),
            }
        }
        Ok(VfSettingsV1(attrs))
    }
}

impl From<&RailRoutes> for RoutingV1 {
    fn from(r: &RailRoutes) -> Self {
        RoutingV1 {
            table: r.table,
            priority: r.priority,
            rules: (r.rules.iter())
                .map(|x| RuleV1 {
                    src: x.src,
                    table: x.table,
                    priority: x.priority,
                })
                .collect(),
            routes: (r.routes.iter())
                .map(|x| RouteV1 {
                    dst: x.dst,
                    gw: x.gw,
                    table: x.table,
                    scope: x.scope,
                    src: x.src,
                })
                .collect(),
            sysctls: (r.sysctls.iter())
                .map(|s| SysctlV1 {
                    family: match s.key.family {
                        Family::Ipv4 => FamilyV1::Ipv4,
                        Family::Ipv6 => FamilyV1::Ipv6,
                    },
                    key: s.key.key.clone(),
                    value: s.value.clone(),
                })
                .collect(),
        }
    }
}

impl From<RoutingV1> for RailRoutes {
    fn from(r: RoutingV1) -> Self {
        RailRoutes {
            table: r.table,
            priority: r.priority,
            rules: (r.rules.into_iter())
                .map(|x| RuleSpec {
                    src: x.src,
                    table: x.table,
                    priority: x.priority,
                })
                .collect(),
            routes: (r.routes.into_iter())
                .map(|x| RouteSpec {
                    dst: x.dst,
                    gw: x.gw,
                    table: x.table,
                    scope: x.scope,
                    src: x.src,
                })
                .collect(),
            sysctls: (r.sysctls.into_iter())
                .map(|s| Sysctl {
                    key: SysctlKey {
                        family: match s.family {
                            FamilyV1::Ipv4 => Family::Ipv4,
                            FamilyV1::Ipv6 => Family::Ipv6,
                        },
                        key: s.key,
                    },
                    value: s.value,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The golden v1 record, placeholders filled as a live one would have them.
    fn golden() -> Value {
        let text = include_str!("../../tests/fixtures/state/v1/attachment.json.tmpl")
            .replace("@NETNS@", "/var/run/netns/pod")
            .replace("@NETNS_DEV@", "4")
            .replace("@NETNS_INO@", "4026532999")
            .replace("@MAC@", "02:00:00:00:00:01")
            .replace("@IFINDEX@", "7")
            .replace("@POD_IFINDEX@", "3");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn the_v1_fixture_reads_and_writes_back_unchanged() {
        let on_disk: RecordV1 = serde_json::from_value(golden()).unwrap();
        let record = Record::try_from(on_disk).unwrap();
        assert_eq!(record.proof.boot_id.as_deref(), Some("boot-fixture"));
        let routing = record.routing.as_ref().unwrap();
        assert_eq!((routing.table, routing.routes.len()), (1001, 3));
        assert_eq!(record.result.as_ref().unwrap().ips.len(), 1);
        let written = serde_json::to_value(RecordV1::try_from(&record).unwrap()).unwrap();
        assert_eq!(written, golden());
    }

    #[test]
    fn macs_and_guids_keep_their_text_form_and_an_unset_guid_reads() {
        let mac: MacV1 = serde_json::from_str("\"02:0A:00:00:00:ff\"").unwrap();
        assert_eq!(
            serde_json::to_string(&mac).unwrap(),
            "\"02:0a:00:00:00:ff\""
        );
        let unset: GuidV1 = serde_json::from_str("\"00:00:00:00:00:00:00:00\"").unwrap();
        assert_eq!(unset.0, 0, "a VF's GUID before one is set is saved as such");
        for bad in [
            "\"02:00:00:00:00\"",
            "\"zz:00:00:00:00:00\"",
            "\"020000000001\"",
        ] {
            assert!(serde_json::from_str::<MacV1>(bad).is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<GuidV1>("\"00:11:22:33:44:55:66\"").is_err());
    }

    #[test]
    fn every_vf_setting_survives_the_round_trip() {
        let mut record = Record::sample();
        let settings = VfSettings::from_attrs(every_vf_attr());
        record.vf_restore = Some(VfSettings::default());
        record.vf_applied = Some(settings);
        record.reattached = 2;
        record.external_ipam = Some(ExternalIpam {
            plugin: "/opt/cni/bin/whereabouts".into(),
            conf: serde_json::json!({"name": "rail1"}),
        });
        let text = serde_json::to_string(&RecordV1::try_from(&record).unwrap()).unwrap();
        let back = Record::try_from(serde_json::from_str::<RecordV1>(&text).unwrap()).unwrap();
        assert_eq!(back, record);
    }

    fn every_vf_attr() -> [VfAttr; 7] {
        [
            VfAttr::Mac("02:00:00:00:00:09".parse().unwrap()),
            VfAttr::Vlan(Vlan {
                id: 100,
                qos: 3,
                proto: VlanProto::Dot1Ad,
            }),
            VfAttr::Spoofchk(false),
            VfAttr::Trust(true),
            VfAttr::LinkState(LinkState::Disable),
            VfAttr::Rate(Rate {
                min_mbps: 10,
                max_mbps: 100,
            }),
            VfAttr::IbGuid(Guid(0x0011_2233_4455_6677)),
        ]
    }

    /// `vfApplied` with every setting, byte for byte as the release before
    /// the settings became one keyed set (c79d173) wrote it.
    const EARLIER_RELEASE_SETTINGS: &str =
        include_str!("../../tests/fixtures/state/v1/vf-settings.json");

    #[test]
    fn settings_an_earlier_release_wrote_read_and_write_back_unchanged() {
        let on_disk: Value = serde_json::from_str(EARLIER_RELEASE_SETTINGS).unwrap();
        let read =
            VfSettings::from(serde_json::from_value::<VfSettingsV1>(on_disk.clone()).unwrap());
        assert_eq!(read.attrs(), every_vf_attr());
        let written = serde_json::to_string(&VfSettingsV1::from(&read)).unwrap();
        assert_eq!(written, EARLIER_RELEASE_SETTINGS.trim_end());
        // A tag this release does not know is passed over, as a field was.
        let mut later = on_disk;
        later["qosClass"] = serde_json::json!(3);
        let read_later = VfSettings::from(serde_json::from_value::<VfSettingsV1>(later).unwrap());
        assert_eq!(read_later, read);
    }

    /// `rdmaQos` as this build writes it (railcni's first with rdmaQoS):
    /// every later build reads it back and writes it unchanged.
    const RDMA_QOS: &str = include_str!("../../tests/fixtures/state/v1/rdma-qos.json");

    #[test]
    fn rdma_qos_reads_and_writes_back_unchanged() {
        let read = QosRecord::from(serde_json::from_str::<RdmaQosV1>(RDMA_QOS).unwrap());
        assert_eq!(read.device, "mlx5_2");
        assert_eq!(
            read.restore.attrs(),
            [
                RoceAttr::TrafficClass(None),
                RoceAttr::RdmaCmGroup(false),
                RoceAttr::DefaultTos(0)
            ],
            "null: no class was set; the group was railcni's"
        );
        assert_eq!((read.traffic_class(), read.tos()), (Some(96), Some(96)));
        let written = serde_json::to_string(&RdmaQosV1::from(&read)).unwrap();
        assert_eq!(written, RDMA_QOS.trim_end());
    }
}
