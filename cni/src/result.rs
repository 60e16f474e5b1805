//! The CNI result, built once in the 1.1 shape and printed in the version asked for.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::version::Version;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    #[serde(default, rename = "pciID", skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<String>,
    /// Members a plugin adds beside the spec's (an RDMA device's name, an
    /// InfiniBand GUID), printed for 1.1 only.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    pub address: IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub dst: IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u8>,
}

impl Route {
    /// A route with no 1.1 extras.
    pub fn via(dst: IpNet, gw: Option<IpAddr>) -> Self {
        Route {
            dst,
            gw,
            mtu: None,
            advmss: None,
            priority: None,
            table: None,
            scope: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    fn is_empty(&self) -> bool {
        self == &Dns::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CniResult {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    #[serde(default, skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
}

impl CniResult {
    /// Read a result of any supported version (prevResult, an IPAM plugin's
    /// output, a stored record); fields of other versions are ignored.
    pub fn from_value(v: &Value) -> Result<Self> {
        serde_json::from_value(v.clone())
            .map_err(|e| Error::Decode(format!("cannot read CNI result: {e}")))
    }

    /// The JSON for `version`: 0.3.x/0.4.0 add `ips[].version`; 1.1's
    /// `pciID` and route extras are dropped below 1.1. The interface `mtu` is
    /// kept in every version: older decoders ignore it and Multus reports it.
    pub fn to_json(&self, version: Version) -> Value {
        let mut out = Map::new();
        out.insert("cniVersion".into(), json!(version.to_string()));
        let mut interfaces = self.interfaces.clone();
        let mut routes = self.routes.clone();
        if version < Version::V1_1 {
            for i in &mut interfaces {
                i.pci_id = None;
                i.extra.clear();
            }
            // Before 1.1 a route cannot name its table: report main-table routes only.
            routes.retain(|r| r.table.is_none());
            for r in &mut routes {
                *r = Route::via(r.dst, r.gw);
            }
        }
        if !interfaces.is_empty() {
            out.insert("interfaces".into(), json!(interfaces));
        }
        let ips: Vec<Value> = self
            .ips
            .iter()
            .map(|ip| {
                let mut v = json!(ip);
                if version < Version::V1_0 {
                    let family = if ip.address.addr().is_ipv4() {
                        "4"
                    } else {
                        "6"
                    };
                    v["version"] = json!(family);
                }
                v
            })
            .collect();
        if !ips.is_empty() {
            out.insert("ips".into(), Value::Array(ips));
        }
        if !routes.is_empty() {
            out.insert("routes".into(), json!(routes));
        }
        out.insert("dns".into(), json!(self.dns));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CniResult {
        CniResult {
            interfaces: vec![Interface {
                name: "net1".into(),
                mac: Some("02:00:00:00:00:01".into()),
                mtu: Some(9000),
                sandbox: Some("/var/run/netns/pod".into()),
                pci_id: Some("0000:3b:02.0".into()),
                extra: Map::from_iter([("rdmaDevice".into(), json!("mlx5_3"))]),
            }],
            ips: vec![IpConfig {
                address: "172.16.0.0/31".parse().unwrap(),
                gateway: Some("172.16.0.1".parse().unwrap()),
                interface: Some(0),
            }],
            routes: vec![Route {
                dst: "172.16.0.0/15".parse().unwrap(),
                gw: Some("172.16.0.1".parse().unwrap()),
                mtu: None,
                advmss: None,
                priority: None,
                table: Some(1001),
                scope: Some(0),
            }],
            dns: Dns::default(),
        }
    }

    #[test]
    fn v1_1_keeps_mtu_pciid_and_route_table() {
        let v = sample().to_json(Version::V1_1);
        assert_eq!(v["cniVersion"], "1.1.0");
        assert_eq!(v["interfaces"][0]["mtu"], 9000);
        assert_eq!(v["interfaces"][0]["pciID"], "0000:3b:02.0");
        assert_eq!(v["interfaces"][0]["rdmaDevice"], "mlx5_3");
        assert_eq!(v["routes"][0]["table"], 1001);
        assert!(v["ips"][0].get("version").is_none());
    }

    #[test]
    fn v1_0_drops_1_1_fields_but_keeps_mtu() {
        let mut r = sample();
        r.routes.push(Route {
            table: None,
            scope: None,
            ..r.routes[0].clone()
        });
        let v = r.to_json(Version::V1_0);
        assert_eq!(v["interfaces"][0]["mtu"], 9000);
        assert!(v["interfaces"][0].get("pciID").is_none());
        assert_eq!(
            v["routes"].as_array().unwrap().len(),
            1,
            "rail-table routes are 1.1 only"
        );
        assert!(v["routes"][0].get("table").is_none());
        assert!(v["ips"][0].get("version").is_none());
        assert_eq!(v["ips"][0]["interface"], 0);
    }

    #[test]
    fn v0_3_and_0_4_carry_ip_version() {
        for s in ["0.3.0", "0.3.1", "0.4.0"] {
            let v = sample().to_json(Version::parse(s).unwrap());
            assert_eq!(v["cniVersion"], s);
            assert_eq!(v["ips"][0]["version"], "4");
            assert_eq!(v["interfaces"][0]["sandbox"], "/var/run/netns/pod");
        }
    }

    #[test]
    fn reads_back_every_version_it_prints() {
        for s in super::super::version::SUPPORTED {
            let printed = sample().to_json(Version::parse(s).unwrap());
            let back = CniResult::from_value(&printed).unwrap();
            assert_eq!(back.ips, sample().ips, "{s}");
            assert_eq!(back.interfaces[0].name, "net1");
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any prevResult (or IPAM output) decodes or is refused; what decodes prints in every version.
        #[test]
        fn any_result_decodes_or_is_refused(v in support::arb_json()) {
            if let Ok(r) = CniResult::from_value(&v) {
                for version in crate::version::SUPPORTED {
                    let _ = r.to_json(Version::parse(version).unwrap());
                }
            }
        }
    }
}
