//! The `routing` object of the network config, validated.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The `routing` object of the network config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoutingConf {
    pub table: Option<u32>,
    pub rule_priority: Option<u32>,
    pub main_routes: bool,
    pub default_route: bool,
    /// The rail's own CIDR for the main table; defaults to the embedded IPAM's `cidr`.
    pub rail_cidr: Option<IpNet>,
    /// A dual-stack rail's IPv6 CIDR for the main table: the embedded IPAM's `ipv6.cidr`.
    pub rail_cidr6: Option<IpNet>,
    /// Per-interface overrides, from `net.ipv{4,6}.conf.IFNAME.<key>`.
    pub sysctl: BTreeMap<SysctlKey, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRouting {
    table: Option<u32>,
    rule_priority: Option<u32>,
    main_routes: Option<bool>,
    default_route: Option<bool>,
    rail_cidr: Option<IpNet>,
    #[serde(default)]
    sysctl: BTreeMap<String, Value>,
}

impl RoutingConf {
    /// `routing` (may be absent) plus the embedded IPAM's `cidr` as the rail CIDR default.
    pub fn parse(routing: Option<&Value>, ipam_cidr: Option<IpNet>) -> Result<Self> {
        let raw: RawRouting = match routing {
            None => {
                return Ok(RoutingConf {
                    main_routes: true,
                    rail_cidr: ipam_cidr,
                    ..RoutingConf::default()
                })
            }
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| Error::config("routing", e.to_string()))?,
        };
        if let Some(t) = raw.table {
            validate_table(t)?;
        }
        if raw.rule_priority == Some(0) {
            return Err(Error::config(
                "routing.rulePriority",
                "0 would sit before the local table's rule; use 1..32765",
            ));
        }
        let mut sysctl = BTreeMap::new();
        for (key, value) in raw.sysctl {
            let value = match value {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(Error::config(
                        &format!("routing.sysctl.{key}"),
                        format!("{other} must be a string or number"),
                    ))
                }
            };
            let field = format!("routing.sysctl.{key}");
            let parsed: SysctlKey = key.parse().map_err(|e: String| Error::config(&field, e))?;
            if value.is_empty() || value.chars().any(|c| c.is_control() || c == '/') {
                return Err(Error::config(
                    &field,
                    format!("{value:?} is not a sysctl value"),
                ));
            }
            sysctl.insert(parsed, value);
        }
        Ok(RoutingConf {
            table: raw.table,
            rule_priority: raw.rule_priority,
            main_routes: raw.main_routes.unwrap_or(true),
            default_route: raw.default_route.unwrap_or(false),
            rail_cidr: raw.rail_cidr.or(ipam_cidr).map(|c| c.trunc()),
            rail_cidr6: None,
            sysctl,
        })
    }
}

fn validate_table(t: u32) -> Result<()> {
    if t == 0 || (252..=255).contains(&t) {
        return Err(Error::config(
            "routing.table",
            format!("{t} is reserved (0, 252-255); pick another table"),
        ));
    }
    Ok(())
}

/// An address family, as sysctl paths name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Ipv4,
    Ipv6,
}

impl Family {
    fn as_str(self) -> &'static str {
        match self {
            Family::Ipv4 => "ipv4",
            Family::Ipv6 => "ipv6",
        }
    }
}

/// A per-interface sysctl: `net.<family>.conf.<ifname>.<key>`. A NAD may
/// tune its own interface and nothing else on the node or in the pod, so
/// this is the only shape it can name (`net.ipv4.conf.IFNAME.rp_filter`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SysctlKey {
    pub family: Family,
    pub key: String,
}

impl SysctlKey {
    pub fn ipv4(key: &str) -> Self {
        SysctlKey {
            family: Family::Ipv4,
            key: key.to_string(),
        }
    }

    pub fn ipv6(key: &str) -> Self {
        SysctlKey {
            family: Family::Ipv6,
            key: key.to_string(),
        }
    }

    /// `/proc/sys/net/<family>/conf/<ifname>/<key>`.
    pub fn path(&self, ifname: &str) -> PathBuf {
        self.path_in(
            std::path::Path::new(base::settings::DEFAULT_PROC_SYS_NET),
            ifname,
        )
    }

    /// `<proc_sys_net>/<family>/conf/<ifname>/<key>`: the same file where
    /// `/proc/sys/net` is mounted elsewhere (`Settings::proc_sys_net`).
    pub fn path_in(&self, proc_sys_net: &std::path::Path, ifname: &str) -> PathBuf {
        proc_sys_net
            .join(self.family.as_str())
            .join("conf")
            .join(ifname)
            .join(&self.key)
    }
}

impl FromStr for SysctlKey {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            "only net.ipv4.conf.IFNAME.<key> and net.ipv6.conf.IFNAME.<key> may be set".to_string()
        };
        let rest = s.strip_prefix("net.").ok_or_else(bad)?;
        let (family, rest) = rest.split_once(".conf.IFNAME.").ok_or_else(bad)?;
        let family = match family {
            "ipv4" => Family::Ipv4,
            "ipv6" => Family::Ipv6,
            _ => return Err(bad()),
        };
        let key_ok =
            !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(bad());
        }
        Ok(SysctlKey {
            family,
            key: rest.to_string(),
        })
    }
}

impl fmt::Display for SysctlKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "net.{}.conf.IFNAME.{}", self.family.as_str(), self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_keys_name_only_the_rail_interface() {
        let k: SysctlKey = "net.ipv6.conf.IFNAME.accept_ra".parse().unwrap();
        assert_eq!(k.family, Family::Ipv6);
        assert_eq!(
            k.path("net2"),
            PathBuf::from("/proc/sys/net/ipv6/conf/net2/accept_ra")
        );
        assert_eq!(k.to_string(), "net.ipv6.conf.IFNAME.accept_ra");
        for bad in [
            "net.ipv4.conf.all.rp_filter",
            "net.ipv4.conf.IFNAME.",
            "net.ipv4.conf.IFNAME.a/b",
            "net.ipv4.conf.IFNAME.a.b",
            "net.ipv5.conf.IFNAME.x",
            "kernel.conf.IFNAME.x",
        ] {
            assert!(bad.parse::<SysctlKey>().is_err(), "{bad}");
        }
    }
}
