//! What a runtime passes beside the network config proper: `CNI_ARGS`, the
//! addresses it asks for, and GC's list of valid attachments.

use std::net::IpAddr;

use serde_json::Value;

use crate::error::{Error, Result};

fn env_err(msg: String) -> Error {
    Error::InvalidEnv(msg)
}

/// Addresses the runtime asked for: `runtimeConfig.ips`, `args.cni.ips`,
/// then `CNI_ARGS IP=`. A prefix length is allowed and ignored.
pub fn requested_ips(conf: &Value, cni_args: &CniArgs) -> Result<Vec<IpAddr>> {
    let mut ips = Vec::new();
    for (field, pointer) in [
        ("runtimeConfig.ips", "/runtimeConfig/ips"),
        ("args.cni.ips", "/args/cni/ips"),
    ] {
        let Some(listed) = conf.pointer(pointer) else {
            continue;
        };
        let items = listed
            .as_array()
            .ok_or_else(|| Error::config(field, "must be a list of addresses"))?;
        for item in items {
            let s = item.as_str().unwrap_or_default();
            let addr = s.split('/').next().unwrap_or(s);
            ips.push(
                addr.parse()
                    .map_err(|_| Error::config(field, format!("{item} is not an IP address")))?,
            );
        }
    }
    ips.extend_from_slice(&cni_args.ips);
    Ok(ips)
}

/// `cni.dev/valid-attachments` (spec 1.1), or the older `cni.dev/attachments`.
pub fn valid_attachments(conf: &Value) -> Result<Vec<(String, String)>> {
    let bad = |msg: String| Error::config("cni.dev/valid-attachments", msg);
    let list = conf
        .get("cni.dev/valid-attachments")
        .or_else(|| conf.get("cni.dev/attachments"))
        .ok_or_else(|| bad("GC needs the list of valid attachments".into()))?;
    let items = list
        .as_array()
        .ok_or_else(|| bad("must be a list".into()))?;
    items
        .iter()
        .map(|a| {
            let cid = a.get("containerID").and_then(Value::as_str);
            let ifname = a.get("ifname").and_then(Value::as_str);
            match (cid, ifname) {
                (Some(c), Some(i)) => Ok((c.to_string(), i.to_string())),
                _ => Err(bad(format!("entry {a} needs containerID and ifname"))),
            }
        })
        .collect()
}

/// `CNI_ARGS`: `KEY=VALUE;KEY=VALUE`, with the keys Multus and the spec use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pub pod_namespace: Option<String>,
    pub pod_name: Option<String>,
    pub pod_infra_container_id: Option<String>,
    pub pod_uid: Option<String>,
    pub mac: Option<String>,
    pub ips: Vec<IpAddr>,
    /// `infinibandGUID=`: the GUID for an InfiniBand VF.
    pub infiniband_guid: Option<String>,
}

impl CniArgs {
    /// `namespace/name` of the Kubernetes pod, when both were given.
    pub fn pod(&self) -> Option<String> {
        Some(format!(
            "{}/{}",
            self.pod_namespace.as_deref()?,
            self.pod_name.as_deref()?
        ))
    }

    /// Unknown keys are an error unless `IgnoreUnknown` is true, as the spec says.
    pub fn parse(raw: &str) -> Result<Self> {
        let pairs: Vec<(&str, &str)> = raw
            .split(';')
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.split_once('=')
                    .ok_or_else(|| env_err(format!("CNI_ARGS entry {p:?} is not KEY=VALUE")))
            })
            .collect::<Result<_>>()?;
        let ignore_unknown = pairs.iter().any(|(k, v)| {
            *k == "IgnoreUnknown" && matches!(v.to_ascii_lowercase().as_str(), "1" | "true")
        });
        let mut args = CniArgs::default();
        for (key, value) in pairs {
            let value = value.to_string();
            match key {
                "IgnoreUnknown" => {}
                "K8S_POD_NAMESPACE" => args.pod_namespace = Some(value),
                "K8S_POD_NAME" => args.pod_name = Some(value),
                "K8S_POD_INFRA_CONTAINER_ID" => args.pod_infra_container_id = Some(value),
                "K8S_POD_UID" => args.pod_uid = Some(value),
                "MAC" => args.mac = Some(value),
                "infinibandGUID" => args.infiniband_guid = Some(value),
                "IP" => {
                    for ip in value.split(',').filter(|s| !s.is_empty()) {
                        let ip = ip.split('/').next().unwrap_or(ip);
                        args.ips.push(ip.parse().map_err(|_| {
                            env_err(format!("CNI_ARGS IP={value:?} is not an IP address"))
                        })?);
                    }
                }
                other if ignore_unknown => {
                    let _ = other;
                }
                other => {
                    return Err(env_err(format!(
                    "CNI_ARGS has unknown key {other:?}; add IgnoreUnknown=true to pass extra keys"
                )))
                }
            }
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Reply;

    use serde_json::json;

    #[test]
    fn requested_ips_come_from_runtime_config_args_and_cni_args() {
        let conf = json!({"runtimeConfig": {"ips": ["10.0.0.4/31"]}, "args": {"cni": {"ips": ["10.0.0.6"]}}});
        let args = CniArgs::parse("IP=10.0.0.8").unwrap();
        let got: Vec<String> = requested_ips(&conf, &args)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, ["10.0.0.4", "10.0.0.6", "10.0.0.8"]);
        let bad = json!({"runtimeConfig": {"ips": ["nope"]}});
        let e = requested_ips(&bad, &CniArgs::default()).unwrap_err();
        assert_eq!(e.code(), 7);
        assert!(e.to_string().contains("runtimeConfig.ips"), "{e}");
        assert_eq!(
            requested_ips(&json!({"args": {"cni": {"ips": 5}}}), &CniArgs::default())
                .map_err(|e| e.code()),
            Err(7)
        );
    }

    #[test]
    fn reads_both_attachment_keys() {
        let a = json!({"cni.dev/valid-attachments":[{"containerID":"c1","ifname":"net1"}]});
        assert_eq!(
            valid_attachments(&a).unwrap(),
            vec![("c1".to_string(), "net1".to_string())]
        );
        let b = json!({"cni.dev/attachments":[{"containerID":"c2","ifname":"net2"}]});
        assert_eq!(
            valid_attachments(&b).unwrap(),
            vec![("c2".to_string(), "net2".to_string())]
        );
        assert_eq!(valid_attachments(&json!({})).unwrap_err().code(), 7);
        assert_eq!(
            valid_attachments(&json!({"cni.dev/attachments":[{"ifname":"x"}]}))
                .unwrap_err()
                .code(),
            7
        );
    }

    #[test]
    fn parses_the_multus_args() {
        let a = CniArgs::parse(
            "IgnoreUnknown=true;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;\
             K8S_POD_INFRA_CONTAINER_ID=abc;K8S_POD_UID=u-1;MAC=02:00:00:00:00:01;IP=172.16.0.4",
        )
        .unwrap();
        assert_eq!(a.pod_namespace.as_deref(), Some("ml"));
        assert_eq!(a.pod_name.as_deref(), Some("trainer-0"));
        assert_eq!(a.pod_uid.as_deref(), Some("u-1"));
        assert_eq!(a.mac.as_deref(), Some("02:00:00:00:00:01"));
        assert_eq!(a.ips, vec!["172.16.0.4".parse::<IpAddr>().unwrap()]);
    }

    #[test]
    fn unknown_keys_need_ignore_unknown() {
        assert_eq!(CniArgs::parse("FOO=bar").map_err(|e| e.code()), Err(4));
        assert!(CniArgs::parse("FOO=bar;IgnoreUnknown=1").is_ok());
        assert!(CniArgs::parse("IgnoreUnknown=false;FOO=bar").is_err());
    }

    #[test]
    fn malformed_entries_are_env_errors() {
        assert_eq!(CniArgs::parse("NOEQUALS").map_err(|e| e.code()), Err(4));
        assert_eq!(CniArgs::parse("IP=not-an-ip").map_err(|e| e.code()), Err(4));
        assert_eq!(CniArgs::parse("").unwrap(), CniArgs::default());
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any CNI_ARGS string is parsed or refused with code 4, never a panic.
        #[test]
        fn cni_args_never_panic(raw in ".{0,200}") {
            if let Err(e) = CniArgs::parse(&raw) {
                prop_assert_eq!(crate::error::Reply::code(&e), 4);
            }
        }

        #[test]
        fn well_formed_args_round_trip(ns in "[a-z0-9-]{1,20}", name in "[a-z0-9-]{1,40}") {
            let a = CniArgs::parse(&format!("IgnoreUnknown=1;K8S_POD_NAMESPACE={ns};K8S_POD_NAME={name};X=y")).unwrap();
            prop_assert_eq!(a.pod_namespace, Some(ns));
            prop_assert_eq!(a.pod_name, Some(name));
        }

        /// Requested addresses and GC lists from any config: a value or an error.
        #[test]
        fn runtime_lists_never_panic(conf in support::arb_json()) {
            let _ = requested_ips(&conf, &CniArgs::default());
            let _ = valid_attachments(&conf);
        }
    }
}
