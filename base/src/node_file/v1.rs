//! The node file's format, version 1 (or no version: files written before
//! it was added). Its types own plain values and are converted both ways,
//! so the in-memory types may change without changing a file. Fields are
//! declared in the order the release before this type wrote them (by key),
//! so a file it wrote reads and writes back byte for byte.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::types::{Allow, NodeFile, NodePrefix, RailQos, RailRules, VERSION};
use crate::rdma_policy::RdmaPolicy;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeFileV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine_id: Option<String>,
    #[serde(default)]
    networks: BTreeMap<String, RailV1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
}

/// One network's entry. `pf` … `rdmaQoS` and `wholeNic` are optional
/// additions to v1: a build that predates them passes them over (and so
/// refuses the PF, as a VF-only build must).
#[derive(Serialize, Deserialize)]
struct RailV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allow: Option<AllowV1>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    dpdk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gateway: Option<std::net::IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gateway6: Option<std::net::IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pf: Option<String>,
    prefix: ipnet::IpNet,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix6: Option<ipnet::IpNet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rdma: Option<String>,
    #[serde(default, rename = "rdmaQoS", skip_serializing_if = "Option::is_none")]
    rdma_qos: Option<RailQosV1>,
    /// The rail is its PF itself, moved whole into the pod (`pf`).
    #[serde(
        default,
        rename = "wholeNic",
        skip_serializing_if = "std::ops::Not::not"
    )]
    whole_nic: bool,
}

/// `allow` on disk: unknown keys are passed over (they allow nothing).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AllowV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_tx_rate_mbps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespaces: Option<Vec<String>>,
    #[serde(default)]
    spoofchk_off: bool,
    #[serde(default)]
    trust: bool,
    #[serde(default)]
    vlans: Vec<u16>,
}

#[derive(Serialize, Deserialize)]
struct RailQosV1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tc: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tos: Option<u8>,
}

pub(super) fn parse(bytes: &[u8]) -> Result<NodeFile, String> {
    #[derive(Deserialize)]
    struct Versioned {
        version: Option<u32>,
    }
    let versioned: Versioned = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    match versioned.version.unwrap_or(VERSION) {
        VERSION => {
            let file: NodeFileV1 = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
            file.into_node_file()
        }
        other => Err(format!(
            "it is node file version {other}; this railcni {} reads version {VERSION}: \
             upgrade railcni on this node or write the file with this release's `railcnictl plan`",
            env!("CARGO_PKG_VERSION")
        )),
    }
}

pub(super) fn to_text(file: &NodeFile) -> String {
    let on_disk = NodeFileV1::from(file);
    // Plain structs of strings, numbers and addresses: serializing cannot fail.
    let mut text = serde_json::to_string_pretty(&on_disk).unwrap_or_default();
    text.push('\n');
    text
}

impl NodeFileV1 {
    fn into_node_file(self) -> Result<NodeFile, String> {
        let mut file = NodeFile {
            machine_id: self.machine_id,
            node_name: self.node_name,
            networks: BTreeMap::new(),
        };
        for (name, rail) in self.networks {
            let rdma = match rail.rdma.as_deref() {
                None => None,
                Some(word) => Some(
                    RdmaPolicy::from_word(word)
                        .map_err(|why| format!("networks.{name}.rdma: {why}"))?,
                ),
            };
            let prefix = NodePrefix {
                prefix: rail.prefix,
                gateway: rail.gateway,
                prefix6: rail.prefix6,
                gateway6: rail.gateway6,
            };
            let rules = RailRules {
                pf: rail.pf,
                mtu: rail.mtu,
                rdma,
                dpdk: rail.dpdk,
                allow: rail.allow.map(Allow::from),
                rdma_qos: rail.rdma_qos.map(|q| RailQos {
                    tos: q.tos,
                    tc: q.tc,
                }),
                whole_nic: rail.whole_nic,
            };
            file.insert(&name, prefix, rules);
        }
        Ok(file)
    }
}

impl From<&NodeFile> for NodeFileV1 {
    fn from(file: &NodeFile) -> Self {
        let networks = (file.networks.iter())
            .map(|(name, network)| {
                let (p, rules) = (&network.prefix, &network.rules);
                let rail = RailV1 {
                    allow: rules.allow.as_ref().map(AllowV1::from),
                    dpdk: rules.dpdk,
                    gateway: p.gateway,
                    gateway6: p.gateway6,
                    mtu: rules.mtu,
                    pf: rules.pf.clone(),
                    prefix: p.prefix,
                    prefix6: p.prefix6,
                    rdma: rules.rdma.map(|r| r.as_str().to_string()),
                    rdma_qos: rules.rdma_qos.map(|q| RailQosV1 {
                        tc: q.tc,
                        tos: q.tos,
                    }),
                    whole_nic: rules.whole_nic,
                };
                (name.clone(), rail)
            })
            .collect();
        NodeFileV1 {
            machine_id: file.machine_id.clone(),
            networks,
            node_name: file.node_name.clone(),
            version: Some(VERSION),
        }
    }
}

impl From<AllowV1> for Allow {
    fn from(a: AllowV1) -> Self {
        Allow {
            trust: a.trust,
            spoofchk_off: a.spoofchk_off,
            vlans: a.vlans,
            max_tx_rate_mbps: a.max_tx_rate_mbps,
            namespaces: a.namespaces,
        }
    }
}

impl From<&Allow> for AllowV1 {
    fn from(a: &Allow) -> Self {
        AllowV1 {
            max_tx_rate_mbps: a.max_tx_rate_mbps,
            namespaces: a.namespaces.clone(),
            spoofchk_off: a.spoofchk_off,
            trust: a.trust,
            vlans: a.vlans.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/state/v1");

    #[test]
    fn a_file_without_a_version_is_version_1_and_a_newer_one_is_named() {
        let v1 = br#"{"nodeName":"gpu-0","networks":{"rail1":{"prefix":"172.16.0.0/31","gateway":"172.16.0.1"}}}"#;
        let file = NodeFile::parse(v1).unwrap();
        assert_eq!(file.node_name.as_deref(), Some("gpu-0"));
        let rail1 = &file.networks["rail1"].prefix;
        assert_eq!(rail1.gateway, "172.16.0.1".parse().ok());
        assert_eq!(file.rules("rail1"), Some(&RailRules::default()));
        let stamped = br#"{"version":1,"nodeName":"gpu-0","networks":{}}"#;
        assert!(NodeFile::parse(stamped).is_ok());
        let newer = NodeFile::parse(br#"{"version":2,"nodeName":"gpu-0"}"#).unwrap_err();
        assert!(newer.contains("node file version 2"), "{newer}");
    }

    /// What the last release's planner wrote with every field a rail can
    /// carry (`node-full.plan.yaml`) reads, and writes back byte for byte.
    #[test]
    fn the_last_releases_full_node_file_reads_and_writes_back_unchanged() {
        let path = format!("{FIXTURES}/node-full.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let file = NodeFile::parse(text.as_bytes()).unwrap();
        let rail1 = file.rules("rail1").unwrap();
        assert_eq!(rail1.rdma, Some(RdmaPolicy::Required));
        assert_eq!(
            rail1.rdma_qos,
            Some(RailQos {
                tos: Some(106),
                tc: Some(106)
            })
        );
        let allow = rail1.allow.as_ref().unwrap();
        assert_eq!((allow.trust, &allow.vlans[..]), (true, &[100, 200][..]));
        assert_eq!(allow.namespaces, None);
        assert!(file.rules("dpdk1").unwrap().dpdk);
        let p1 = &file.networks["rail2-p1"].prefix;
        assert_eq!(p1.prefix6, "fd02:18:0:8000::2/127".parse().ok());
        assert_eq!(file.to_text(), text);
    }

    #[test]
    fn an_unknown_rdma_word_and_an_unknown_allow_key_are_told_apart() {
        let bad = br#"{"networks":{"r":{"prefix":"10.0.0.0/31","rdma":"sometimes"}}}"#;
        let e = NodeFile::parse(bad).unwrap_err();
        assert!(
            e.contains("networks.r.rdma") && e.contains("sometimes"),
            "{e}"
        );
        let newer_key =
            br#"{"networks":{"r":{"prefix":"10.0.0.0/31","allow":{"vlans":[5],"mtuAbove":1}}}}"#;
        let file = NodeFile::parse(newer_key).unwrap();
        let allow = file.rules("r").unwrap().allow.clone().unwrap();
        assert_eq!((allow.vlans, allow.trust), (vec![5], false));
    }

    /// Every network the file holds is written with its prefix and its
    /// rules, and the IPAM's view names the same networks.
    #[test]
    fn every_network_is_written_with_its_rules() {
        let mut file = NodeFile::default();
        for (name, pf) in [("rail1", "ens1f0"), ("rail2", "ens2f0")] {
            let rules = RailRules {
                pf: Some(pf.into()),
                whole_nic: name == "rail2",
                ..RailRules::default()
            };
            let prefix = NodePrefix::new("10.0.0.0/31".parse().unwrap(), None);
            file.insert(name, prefix, rules);
        }
        let read = NodeFile::parse(file.to_text().as_bytes()).unwrap();
        assert_eq!(read, file);
        assert_eq!(read.rules("rail2").map(|r| r.whole_nic), Some(true));
        let seen: Vec<_> = read.prefixes().networks.into_keys().collect();
        assert_eq!(seen, ["rail1", "rail2"]);
    }

    #[test]
    fn a_stamp_and_namespaces_survive_the_round_trip() {
        let mut file = NodeFile {
            machine_id: Some("0123456789abcdef0123456789abcdef".into()),
            ..NodeFile::default()
        };
        let allow = Allow {
            namespaces: Some(vec!["training".into()]),
            ..Allow::default()
        };
        let rules = RailRules {
            allow: Some(allow),
            ..RailRules::default()
        };
        let prefix = NodePrefix::new("10.0.0.0/31".parse().unwrap(), None);
        file.insert("rail1", prefix, rules);
        let text = file.to_text();
        assert!(
            text.contains("\"machineId\": \"0123456789abcdef0123456789abcdef\""),
            "{text}"
        );
        assert_eq!(NodeFile::parse(text.as_bytes()).unwrap(), file);
    }
}
