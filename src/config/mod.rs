//! The network config from stdin, validated into typed values.
//!
//! Everything that can be wrong with a NAD is found here, before any host
//! change, and reported with the field to fix.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

mod infiniband;
pub mod near_miss;
mod raw;
mod runtime;

use crate::error::{Error, Result};
use crate::net::Mac;
use crate::routing::RoutingConf;
use crate::vf::settings::nad;
use crate::vf::settings::VfSettings;
use cni::Env;
use infiniband::{ethernet_fields, parse_pkey, vf_fields};
use raw::RawConf;
use runtime::{pick_device, pick_guid, pick_mac};

pub use base::rdma_policy::RdmaPolicy;

pub const DEFAULT_MTU: u32 = 9000;
/// Smallest MTU an IPv4 interface may have.
const MIN_MTU: u32 = 68;

/// The `ipam.type` that runs in-process instead of from CNI_PATH.
pub const EMBEDDED_IPAM: &str = "railcni-ipam";

#[derive(Debug, Clone)]
pub struct IpamConf {
    /// `ipam.type`: the plugin's name.
    pub plugin: String,
}

impl IpamConf {
    pub fn is_embedded(&self) -> bool {
        self.plugin == EMBEDDED_IPAM
    }
}

#[derive(Debug)]
pub struct NetConf {
    pub name: String,
    /// The VF's PCI address: runtimeConfig.deviceID > deviceID > pciBusID.
    pub device_id: Option<String>,
    pub mtu: u32,
    /// runtimeConfig.mac > CNI_ARGS MAC= > config mac.
    pub mac: Option<Mac>,
    pub ipam: Option<IpamConf>,
    /// Addresses the runtime asked for: runtimeConfig.ips, args.cni.ips, CNI_ARGS IP=.
    pub requested_ips: Vec<IpAddr>,
    pub prev_result: Option<Value>,
    pub routing: RoutingConf,
    /// What ADD proves about the rail before it answers (the config's `checks`).
    pub probes: crate::probe::Probes,
    /// VF attributes to set on the PF (sriov-cni's fields; `mac` included).
    pub vf: VfSettings,
    /// `rdma` as given; absent: the VF's link type's default
    /// (`RdmaPolicy::or_default_for`).
    pub rdma: Option<RdmaPolicy>,
    /// `rdmaQoS`: the RDMA device's traffic class and rdma_cm ToS.
    pub rdma_qos: crate::rdma_qos::RoceSettings,
    /// Whether `mtu` was given (InfiniBand VFs default otherwise).
    pub mtu_given: bool,
    /// The subnet manager's partition key, recorded and reported, never applied.
    pub pkey: Option<u16>,
    /// The Ethernet-only fields this config sets (refused on InfiniBand VFs).
    pub ethernet_fields: Vec<&'static str>,
    /// The VF-setting fields it sets (refused on a whole-NIC rail).
    pub vf_fields: Vec<&'static str>,
    /// Where Multus wants the device-info file (runtimeConfig.CNIDeviceInfoFile).
    pub device_info_file: Option<PathBuf>,
    /// The config as received, handed unchanged to an external IPAM plugin.
    pub raw: Value,
    /// The embedded IPAM's `staticAllocations`, as the JSON text it came as
    /// (see `railcni_ipam::inline`).
    pub static_allocations: Option<cni::SetAside>,
}

impl NetConf {
    /// `raw` is the config object; the skeleton has already checked its
    /// `cniVersion`.
    pub fn parse(raw: Value, env: &Env) -> Result<Self> {
        // Straight from the parsed value: a NAD may carry 16k allocations.
        let conf = RawConf::deserialize(&raw).map_err(|e| wrong_type(&raw, &e))?;
        let name = conf
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Error::config("name", "is required"))?;
        if conf.kind.as_deref().unwrap_or("").is_empty() {
            return Err(Error::config("type", "is required"));
        }
        let mac = pick_mac(&conf, env)?;
        let no_fields = serde_json::Map::new();
        let object = raw.as_object().unwrap_or(&no_fields);
        let vf = nad::parse(object, mac, pick_guid(&conf, env)?)?;
        near_miss::log_near_misses(object);
        let ipam = ipam_conf(conf.ipam.as_ref())?;
        let device_id = pick_device(&conf)?;
        let mut routing =
            RoutingConf::parse(conf.routing.as_ref(), embedded_cidr(ipam.as_ref(), &raw)?)?;
        if ipam.as_ref().is_some_and(IpamConf::is_embedded) {
            // The IPAM validates it; here it only names the main table's IPv6 rail.
            routing.rail_cidr6 = raw
                .pointer("/ipam/ipv6/cidr")
                .and_then(Value::as_str)
                .and_then(|c| c.parse::<ipnet::IpNet>().ok())
                .map(|c| c.trunc());
        }
        let (rdma, rdma_qos) = rdma_and_qos(&conf)?;
        Ok(NetConf {
            mtu_given: conf.mtu.is_some(),
            mtu: parse_mtu(conf.mtu.as_ref())?,
            rdma,
            rdma_qos,
            pkey: parse_pkey(conf.pkey.as_deref())?,
            ethernet_fields: ethernet_fields(object, mac),
            vf_fields: vf_fields(object, mac, vf.ib_guid().is_some()),
            requested_ips: cni::args::requested_ips(&raw, &env.args)?,
            routing,
            probes: crate::probe::Probes::parse(conf.checks.as_ref())?,
            vf,
            device_info_file: conf
                .runtime_config
                .device_info_file
                .filter(|f| !f.is_empty())
                .map(PathBuf::from),
            name,
            device_id,
            mac,
            ipam,
            prev_result: conf.prev_result,
            raw,
            static_allocations: None,
        })
    }

    /// The `ipam.staticAllocations` the skeleton left unparsed: the embedded
    /// IPAM reads them as they are; an external plugin gets them back in
    /// its config, as it was sent.
    pub fn with_static_allocations(mut self, statics: Option<cni::SetAside>) -> Self {
        let Some(statics) = statics else { return self };
        if self.ipam.as_ref().is_some_and(IpamConf::is_embedded) {
            self.static_allocations = Some(statics);
        } else if let Some(ipam) = self.raw.get_mut("ipam").and_then(Value::as_object_mut) {
            let parsed = serde_json::from_str(statics.text()).unwrap_or(Value::Null);
            ipam.insert("staticAllocations".into(), parsed);
        }
        self
    }

    /// The PCI address, required by every command that touches a VF.
    pub fn require_device_id(&self) -> Result<&str> {
        self.device_id.as_deref().ok_or_else(|| {
            Error::config(
                "deviceID",
                "no VF PCI address: set runtimeConfig.deviceID (SR-IOV device plugin via Multus), deviceID or pciBusID; \
                 under Multus the usual cause is a NAD without the k8s.v1.cni.cncf.io/resourceName annotation, or a pod \
                 that does not request that resource",
            )
        })
    }
}

/// `ipam`: absent or `{}` for none; a plugin name, never a path.
fn ipam_conf(v: Option<&Value>) -> Result<Option<IpamConf>> {
    let Some(v) = v.filter(|v| !v.as_object().is_some_and(serde_json::Map::is_empty)) else {
        return Ok(None);
    };
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::config("ipam.type", "is required when ipam is set"))?;
    if kind.contains('/') || kind.starts_with('.') {
        return Err(Error::config(
            "ipam.type",
            format!("{kind:?} must be a plugin name, not a path"),
        ));
    }
    Ok(Some(IpamConf {
        plugin: kind.to_string(),
    }))
}

/// The embedded IPAM's `cidr`: the rail the main table routes to.
fn embedded_cidr(ipam: Option<&IpamConf>, raw: &Value) -> Result<Option<ipnet::IpNet>> {
    if !ipam.is_some_and(IpamConf::is_embedded) {
        return Ok(None);
    }
    match raw.pointer("/ipam/cidr") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => c.parse().map(Some).map_err(|_| {
            Error::config(
                "ipam.cidr",
                format!("{c:?} is not a prefix like 172.16.0.0/15"),
            )
        }),
        Some(other) => Err(Error::config(
            "ipam.cidr",
            format!("{other} must be a string such as \"172.16.0.0/15\""),
        )),
    }
}

/// `rdma` and `rdmaQoS`, refused together when QoS is asked of a rail
/// whose RDMA is off.
fn rdma_and_qos(conf: &RawConf) -> Result<(Option<RdmaPolicy>, crate::rdma_qos::RoceSettings)> {
    let rdma = parse_rdma(conf.rdma.as_deref())?;
    let qos = crate::rdma_qos::parse(conf.rdma_qos.as_ref())?;
    if !qos.is_empty() {
        let given = rdma.unwrap_or(RdmaPolicy::Auto);
        given
            .allows_qos()
            .map_err(|why| Error::config("rdmaQoS", why))?;
    }
    Ok((rdma, qos))
}

fn parse_rdma(v: Option<&str>) -> Result<Option<RdmaPolicy>> {
    let Some(word) = v else {
        return Ok(None);
    };
    RdmaPolicy::from_word(word)
        .map(Some)
        .map_err(|why| Error::config("rdma", why))
}

fn parse_mtu(v: Option<&Value>) -> Result<u32> {
    let Some(v) = v else { return Ok(DEFAULT_MTU) };
    let mtu = v
        .as_u64()
        .ok_or_else(|| Error::config("mtu", format!("{v} is not a whole number")))?;
    match u32::try_from(mtu) {
        Ok(mtu) if (MIN_MTU..=65535).contains(&mtu) => Ok(mtu),
        _ => Err(Error::config(
            "mtu",
            format!("{mtu} is outside {MIN_MTU}..65535"),
        )),
    }
}

/// serde's type errors do not say which field: find the top-level key that
/// fails on its own, so the operator is told what to fix.
fn wrong_type(raw: &Value, e: &serde_json::Error) -> Error {
    let culprit = raw.as_object().and_then(|fields| {
        fields.iter().find(|(key, value)| {
            let alone = serde_json::json!({ key.as_str(): value });
            serde_json::from_value::<RawConf>(alone).is_err()
        })
    });
    match culprit {
        Some((key, _)) => Error::config(key, format!("has the wrong type: {e}")),
        None => Error::decode(format!("network config has a field of the wrong type: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vf::settings::{LinkState, Rate, VfAttr, Vlan, VlanProto};
    use cni::skeleton::{config_version, parse_config};
    use cni::{CniArgs, Command};

    fn env_with_args(args: &str) -> Env {
        Env {
            command: Command::Add,
            container_id: "c1".into(),
            netns: Some("/run/netns/p".into()),
            ifname: "net1".into(),
            args: CniArgs::parse(args).unwrap(),
            path: vec![],
        }
    }

    /// As a runtime's stdin reaches it: through the skeleton's checks first.
    fn parse_with(json: &str, env: &Env) -> Result<NetConf> {
        let raw = parse_config(json.as_bytes())?;
        config_version(&raw)?;
        NetConf::parse(raw, env)
    }

    fn parse(json: &str) -> Result<NetConf> {
        parse_with(json, &env_with_args(""))
    }

    #[test]
    fn runtime_capabilities_in_any_case_and_a_pods_device_annotation() {
        // containerd/CRI-O pass Go field names through.
        let c = parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","runtimeConfig":{"DeviceID":"0000:3b:02.4","Mac":"02:00:00:00:00:09","portMappings":[{"HostPort":8080,"ContainerPort":80}]}}"#).unwrap();
        assert_eq!(c.device_id.as_deref(), Some("0000:3b:02.4"));
        assert_eq!(
            c.mac.map(|m| m.to_string()).as_deref(),
            Some("02:00:00:00:00:09")
        );
        // No deviceID anywhere: the pod's annotation names the VF.
        let annotated = |v: &str| {
            format!(
                r#"{{"cniVersion":"1.0.0","name":"r","type":"railcni","runtimeConfig":{{"io.kubernetes.cri.pod-annotations":{{"railcni.io/device-id":{v},"other":"x"}}}}}}"#
            )
        };
        assert_eq!(
            parse(&annotated(r#""0000:3b:02.1""#))
                .unwrap()
                .device_id
                .as_deref(),
            Some("0000:3b:02.1")
        );
        for bad in [r#""eth0""#, "7"] {
            let e = parse(&annotated(bad)).unwrap_err();
            assert_eq!(e.code(), 7);
            assert!(e.details().contains("railcni.io/device-id"), "{e}");
        }
        // An explicit deviceID wins over the annotation.
        let both = r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","deviceID":"0000:3b:02.2","runtimeConfig":{"io.kubernetes.cri.pod-annotations":{"railcni.io/device-id":"0000:3b:02.1"}}}"#;
        assert_eq!(
            parse(both).unwrap().device_id.as_deref(),
            Some("0000:3b:02.2")
        );
    }

    #[test]
    fn a_malformed_ipam_cidr_names_the_field() {
        for cidr in [r#""172.16.0.0/33""#, r#""rail-one""#, "17"] {
            let json = format!(
                r#"{{"cniVersion":"1.0.0","name":"r","type":"railcni","ipam":{{"type":"railcni-ipam","cidr":{cidr}}}}}"#
            );
            let e = parse(&json).unwrap_err();
            assert_eq!(e.code(), 7, "{cidr}: {e}");
            assert!(e.details().contains("ipam.cidr"), "{cidr}: {e}");
        }
        let ok = r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","ipam":{"type":"railcni-ipam","cidr":"172.16.0.0/15"}}"#;
        assert!(parse(ok).is_ok());
    }

    #[test]
    fn defaults_and_device_id_order() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"rail1","type":"railcni","pciBusID":"0000:3b:02.2","deviceID":"0000:3b:02.1"}"#).unwrap();
        assert_eq!(c.mtu, 9000);
        assert_eq!(c.device_id.as_deref(), Some("0000:3b:02.1"));
        let c = parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","deviceID":"0000:3b:02.1","runtimeConfig":{"deviceID":"0000:3b:02.0"}}"#).unwrap();
        assert_eq!(c.device_id.as_deref(), Some("0000:3b:02.0"));
        let c = parse(
            r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","pciBusID":"0000:3b:02.3"}"#,
        )
        .unwrap();
        assert_eq!(c.device_id.as_deref(), Some("0000:3b:02.3"));
    }

    #[test]
    fn mac_precedence_runtime_then_args_then_conf() {
        let json = r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","mac":"02:00:00:00:00:03","runtimeConfig":{"mac":"02:00:00:00:00:01"}}"#;
        let c = parse_with(json, &env_with_args("MAC=02:00:00:00:00:02")).unwrap();
        assert_eq!(c.mac, Some(Mac([2, 0, 0, 0, 0, 1])));
        let json =
            r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","mac":"02:00:00:00:00:03"}"#;
        let c = parse_with(json, &env_with_args("MAC=02:00:00:00:00:02")).unwrap();
        assert_eq!(c.mac, Some(Mac([2, 0, 0, 0, 0, 2])));
        let c = parse_with(json, &env_with_args("")).unwrap();
        assert_eq!(c.mac, Some(Mac([2, 0, 0, 0, 0, 3])));
    }

    #[test]
    fn errors_name_the_field_and_code() {
        let cases = [
            (r#"{"name":"r","type":"railcni"}"#, 7, "cniVersion"),
            (r#"{"cniVersion":"1.0.0","type":"railcni"}"#, 7, "name"),
            (
                r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","mtu":40}"#,
                7,
                "mtu",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","mtu":"big"}"#,
                7,
                "mtu",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","mac":"01:00:00:00:00:01"}"#,
                7,
                "mac",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","ipam":{"foo":1}}"#,
                7,
                "ipam.type",
            ),
            (
                r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","ipam":{"type":"../evil"}}"#,
                7,
                "ipam.type",
            ),
            (
                r#"{"cniVersion":"9.9.9","name":"r","type":"railcni"}"#,
                1,
                "9.9.9",
            ),
            (r#"{"cniVersion":"1.0.0""#, 6, "JSON"),
            (r#"[1,2]"#, 6, "object"),
        ];
        for (json, code, field) in cases {
            let e = parse(json).unwrap_err();
            assert_eq!(e.code(), code, "{json}: {e}");
            assert!(e.details().contains(field), "{json}: {e}");
        }
    }

    #[test]
    fn sriov_cni_vf_fields() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","vlan":100,"vlanQoS":5,"vlanProto":"802.1AD",
            "spoofchk":"off","trust":"on","link_state":"enable","min_tx_rate":100,"max_tx_rate":1000,"rdma":"required"}"#).unwrap();
        assert_eq!(
            c.vf.attrs(),
            [
                VfAttr::Vlan(Vlan {
                    id: 100,
                    qos: 5,
                    proto: VlanProto::Dot1Ad
                }),
                VfAttr::Spoofchk(false),
                VfAttr::Trust(true),
                VfAttr::LinkState(LinkState::Enable),
                VfAttr::Rate(Rate {
                    min_mbps: 100,
                    max_mbps: 1000
                }),
            ]
        );
        assert_eq!(c.rdma, Some(RdmaPolicy::Required));
        let c = parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","max_tx_rate":500}"#)
            .unwrap();
        assert_eq!(
            c.vf.attrs(),
            [VfAttr::Rate(Rate {
                min_mbps: 0,
                max_mbps: 500
            })]
        );
        assert!(
            parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni"}"#)
                .unwrap()
                .vf
                .is_empty()
        );
    }

    #[test]
    fn invalid_vf_combinations_name_the_field() {
        let cases = [
            (r#""vlan":4095"#, "vlan"),
            (r#""vlan":-1"#, "vlan"),
            (r#""vlanQoS":3"#, "vlanQoS"),
            (r#""vlan":0,"vlanQoS":3"#, "vlanQoS"),
            (r#""vlan":10,"vlanQoS":8"#, "vlanQoS"),
            (r#""vlanProto":"802.1ad""#, "vlanProto"),
            (r#""vlan":10,"vlanProto":"qinq""#, "vlanProto"),
            (r#""spoofchk":"yes""#, "spoofchk"),
            (r#""trust":true"#, "trust"),
            (r#""link_state":"up""#, "link_state"),
            (r#""min_tx_rate":100,"max_tx_rate":50"#, "max_tx_rate"),
            (r#""rdma":"maybe""#, "rdma"),
        ];
        for (fields, field) in cases {
            let json = format!(r#"{{"cniVersion":"1.0.0","name":"r","type":"railcni",{fields}}}"#);
            let e = parse(&json).unwrap_err();
            assert_eq!(e.code(), 7, "{fields}: {e}");
            assert!(e.details().contains(field), "{fields}: {e}");
        }
    }

    #[test]
    fn requested_ips_from_all_three_sources() {
        let json = r#"{"cniVersion":"1.0.0","name":"r","type":"railcni","runtimeConfig":{"ips":["172.16.0.2/31"]},"args":{"cni":{"ips":["172.16.0.4"]}}}"#;
        let c = parse_with(json, &env_with_args("IP=172.16.0.6")).unwrap();
        let got: Vec<String> = c.requested_ips.iter().map(|i| i.to_string()).collect();
        assert_eq!(got, ["172.16.0.2", "172.16.0.4", "172.16.0.6"]);
    }

    #[test]
    fn missing_device_id_is_a_config_error_naming_it() {
        let c = parse(r#"{"cniVersion":"1.0.0","name":"r","type":"railcni"}"#).unwrap();
        let e = c.require_device_id().unwrap_err();
        assert_eq!(e.code(), 7);
        assert!(e.details().contains("deviceID"));
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use cni::{CniArgs, Command};
    use proptest::prelude::*;

    fn env() -> Env {
        Env {
            command: Command::Add,
            container_id: "c1".into(),
            netns: Some("/run/netns/p".into()),
            ifname: "net1".into(),
            args: CniArgs::default(),
            path: vec![],
        }
    }

    proptest! {
        /// Any network config is a NetConf or an error with a spec code.
        #[test]
        fn any_config_parses_or_is_refused(v in support::arb_json()) {
            if let Err(e) = NetConf::parse(v, &env()) {
                prop_assert!(matches!(e.code(), 1..=7), "{e}");
            }
        }

        /// The same with the fields railcni reads most, at arbitrary values.
        #[test]
        fn any_values_of_known_fields_parse_or_are_refused(
            mtu in support::arb_json(), routing in support::arb_json(), ipam in support::arb_json(), vlan in support::arb_json(),
        ) {
            let conf = serde_json::json!({"cniVersion": "1.1.0", "name": "r", "type": "railcni",
                "mtu": mtu, "routing": routing, "ipam": ipam, "vlan": vlan});
            if let Err(e) = NetConf::parse(conf, &env()) {
                prop_assert!(matches!(e.code(), 1..=7), "{e}");
            }
        }
    }
}
