//! `railcni-ipam`: the railcni_ipam library as a CNI IPAM plugin, for
//! sriov-cni, host-device, macvlan and any other plugin that delegates IPAM.
//! Results are the IPAM kind: `ips`, `routes`, `dns`, no `interfaces`.

use std::io::{Read, Write};
use std::net::IpAddr;

use serde_json::{json, Value};

use railcni_ipam::cni::{valid_attachments, CniArgs, SUPPORTED_VERSIONS};
use railcni_ipam::{Allocation, Holder, Ipam, IpamEnv, IpamError, Released};

fn main() {
    let mut stdin = Vec::new();
    let read = std::io::stdin()
        .read_to_end(&mut stdin)
        .map_err(|e| IpamError::new(5, format!("cannot read stdin: {e}")));
    let conf: Value = serde_json::from_slice(&stdin).unwrap_or(Value::Null);
    let version = conf
        .get("cniVersion")
        .and_then(Value::as_str)
        .filter(|v| SUPPORTED_VERSIONS.contains(v))
        .unwrap_or("1.1.0")
        .to_string();
    let (out, code) = match read.and_then(|_| run(&stdin, &version)) {
        Ok(Some(v)) => (Some(v), 0),
        Ok(None) => (None, 0),
        Err(e) => {
            eprintln!("railcni-ipam: {e}");
            let msg = if e.code() == 7 {
                "invalid network config"
            } else {
                "railcni-ipam failed"
            };
            (
                Some(
                    json!({"cniVersion": version, "code": e.code(), "msg": msg, "details": e.to_string()}),
                ),
                1,
            )
        }
    };
    if let Some(v) = out {
        let _ = writeln!(std::io::stdout(), "{v}");
    }
    std::process::exit(code);
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

fn required(name: &str) -> Result<String, IpamError> {
    Some(env(name))
        .filter(|v| !v.is_empty())
        .ok_or_else(|| IpamError::new(4, format!("{name} is required")))
}

fn run(stdin: &[u8], version: &str) -> Result<Option<Value>, IpamError> {
    let command = env("CNI_COMMAND");
    if command == "VERSION" {
        return Ok(Some(
            json!({"cniVersion": version, "supportedVersions": SUPPORTED_VERSIONS}),
        ));
    }
    let conf: Value = serde_json::from_slice(stdin)
        .map_err(|e| IpamError::new(6, format!("stdin is not valid JSON: {e}")))?;
    let asked = conf.get("cniVersion").and_then(Value::as_str).unwrap_or("");
    if !SUPPORTED_VERSIONS.contains(&asked) {
        return Err(IpamError::new(
            1,
            format!("cniVersion {asked:?} is not one of {SUPPORTED_VERSIONS:?}"),
        ));
    }
    let at_least_1_1 = asked == "1.1.0";
    let network = conf
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| IpamError::new(7, "name: is required"))?;
    let ipam_conf = conf
        .get("ipam")
        .ok_or_else(|| IpamError::new(7, "ipam: is required"))?;
    let ipam = Ipam::load(network, ipam_conf, &IpamEnv::from_env())?;
    match command.as_str() {
        "ADD" => {
            let args = CniArgs::parse(&env("CNI_ARGS"))?;
            let holder = Holder {
                container_id: required("CNI_CONTAINERID")?,
                ifname: required("CNI_IFNAME")?,
                pod_namespace: args.pod_namespace,
                pod_name: args.pod_name,
                pod_uid: args.pod_uid,
            };
            let requested = requested_ips(&conf, &args.ips)?;
            Ok(Some(result_json(
                &ipam.allocate(&holder, &requested)?,
                version,
            )))
        }
        "DEL" => {
            match ipam.release(&required("CNI_CONTAINERID")?, &required("CNI_IFNAME")?)? {
                Released::StoreUnreadable(why) => {
                    eprintln!("railcni-ipam: DEL cannot release: {why}")
                }
                Released::Released(_) | Released::NotHeld => {}
            }
            Ok(None)
        }
        "CHECK" => ipam
            .check(&required("CNI_CONTAINERID")?, &required("CNI_IFNAME")?)
            .map(|_| None),
        "GC" if at_least_1_1 => ipam.gc(&valid_attachments(&conf)?).map(|_| None),
        "STATUS" if at_least_1_1 => ipam
            .status()
            .map(|_| None)
            .map_err(|e| IpamError::new(50, e.to_string())),
        "GC" | "STATUS" => Err(IpamError::new(
            1,
            format!("{command} needs cniVersion 1.1.0; the config says {asked}"),
        )),
        other => Err(IpamError::new(
            4,
            format!("CNI_COMMAND {other:?} is not supported"),
        )),
    }
}

/// runtimeConfig.ips, args.cni.ips, then CNI_ARGS IP=.
fn requested_ips(conf: &Value, from_args: &[IpAddr]) -> Result<Vec<IpAddr>, IpamError> {
    let listed = [
        conf.pointer("/runtimeConfig/ips"),
        conf.pointer("/args/cni/ips"),
    ];
    let mut ips = Vec::new();
    for ip in listed
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
    {
        let s = ip.as_str().unwrap_or("");
        let addr = s.split('/').next().unwrap_or(s);
        ips.push(
            addr.parse().map_err(|_| {
                IpamError::new(7, format!("requested ip {s:?} is not an IP address"))
            })?,
        );
    }
    ips.extend_from_slice(from_args);
    Ok(ips)
}

fn result_json(a: &Allocation, version: &str) -> Value {
    let with_family = version.starts_with("0.");
    let ips: Vec<Value> = a
        .ips
        .iter()
        .map(|ip| {
            let mut v = json!({"address": ip.address.to_string()});
            if let Some(gw) = ip.gateway {
                v["gateway"] = json!(gw.to_string());
            }
            if with_family {
                v["version"] = json!(if ip.address.addr().is_ipv4() {
                    "4"
                } else {
                    "6"
                });
            }
            v
        })
        .collect();
    let routes: Vec<Value> = a
        .routes
        .iter()
        .map(|r| match r.gw {
            Some(gw) => json!({"dst": r.dst.to_string(), "gw": gw.to_string()}),
            None => json!({"dst": r.dst.to_string()}),
        })
        .collect();
    json!({"cniVersion": version, "ips": ips, "routes": routes, "dns": {}})
}
