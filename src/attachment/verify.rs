//! Record versus kernel, line by line: what CHECK fails on and what
//! `railcnictl inspect` prints. One comparison, so the two never disagree.

use ipnet::IpNet;
use serde::Serialize;

use crate::vf::home::is_vf_in_pod;
use cni::CniResult;

use crate::error::{Error, Result};
use crate::net::mac::format_hw_addr;
use crate::net::route::MAIN_TABLE;
use crate::net::{sysctl, NetNs, Netlink};
use crate::rdma_qos::{QosRecord, RoceAttr, RocePort};
use crate::state::Record;
use std::path::Path;

/// One thing railcni set, and whether the kernel still has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// In iproute2's words: `link`, `mtu`, `rule`, `route`, `sysctl` …
    pub what: String,
    pub expected: String,
    pub actual: String,
    pub ok: bool,
}

impl Comparison {
    fn new(what: &str, expected: impl ToString, actual: impl ToString) -> Self {
        let (expected, actual) = (expected.to_string(), actual.to_string());
        Comparison {
            what: what.to_string(),
            ok: expected == actual,
            expected,
            actual,
        }
    }

    fn present(what: String, ok: bool) -> Self {
        Comparison {
            what,
            expected: "present".into(),
            actual: if ok { "present" } else { "missing" }.into(),
            ok,
        }
    }
}

/// What the interface should look like: what ADD reported, as its record
/// keeps it. CHECK and `railcnictl inspect` both start from here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub ifname: String,
    pub mac: Option<String>,
    /// `None`: the result did not say (nothing to compare).
    pub mtu: Option<u32>,
    pub addresses: Vec<IpNet>,
    /// The RoCE v2 GID index ADD reported (`gidIndex`).
    pub gid_index: Option<u32>,
}

/// Where the RDMA device's settings are read (the node's sysfs and
/// configfs, through its hardware).
pub struct RdmaPlaces<'a> {
    pub sysfs: &'a crate::vf::Sysfs,
    pub configfs: &'a std::path::Path,
    pub hw: &'a dyn crate::hw::Hardware,
}

/// The state of the port that carries `record`'s VF on its RDMA device
/// (`ports/<p>/state`, read from the pod's view of sysfs when the device
/// moved there): what `inspect`, `status` and the metrics show. `None`:
/// no device, no port state, or the pod is gone.
pub fn rdma_port_state(
    sysfs: &crate::vf::Sysfs,
    record: &Record,
) -> Option<crate::net::ib_port::PortState> {
    let (device, _) = record.hca()?;
    let port = record.hca_port().unwrap_or(1);
    let pod = NetNs::open(Path::new(record.netns()?)).ok()?;
    let read = sysfs.with_rdma_device_dir(&pod, &record.pci, device, |dir| {
        dir.and_then(|d| crate::net::ib_port::read(&d.join("ports"), port))
    });
    read.ok().flatten()
}

impl<'a> RdmaPlaces<'a> {
    pub fn of(node: &'a crate::node::Node) -> Self {
        RdmaPlaces {
            sysfs: &node.sysfs,
            configfs: &node.settings.configfs_root,
            hw: node.hw.as_ref(),
        }
    }
}

impl Expected {
    pub fn from_record(record: &Record) -> Result<Self> {
        let value = record.result.as_ref().ok_or_else(|| {
            Error::CheckFailed(format!(
                "the ADD of {}/{} on VF {} has not finished (phase adding); DEL it and ADD again",
                record.container_id, record.ifname, record.pci
            ))
        })?;
        Ok(Self::from_result(&record.ifname, value))
    }

    fn from_result(ifname: &str, result: &CniResult) -> Self {
        let iface = result.interfaces.iter().find(|i| i.name == ifname);
        Expected {
            ifname: ifname.to_string(),
            mac: iface
                .and_then(|i| i.mac.as_deref())
                .map(str::to_ascii_lowercase),
            mtu: iface.and_then(|i| i.mtu),
            addresses: result.ips.iter().map(|ip| ip.address).collect(),
            gid_index: iface
                .and_then(|i| i.extra.get("gidIndex"))
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
        }
    }

    /// Where a runtime's prevResult says something else than ADD returned.
    pub fn disagreements(&self, prev: &CniResult) -> Vec<String> {
        let said = Self::from_result(&self.ifname, prev);
        let mut out = Vec::new();
        let (mut ours, mut theirs) = (self.addresses.clone(), said.addresses.clone());
        ours.sort();
        theirs.sort();
        if ours != theirs {
            out.push(format!(
                "prevResult lists addresses {theirs:?}, ADD assigned {ours:?}"
            ));
        }
        if said.mac.is_some() && said.mac != self.mac {
            out.push(format!(
                "prevResult says mac {}, ADD reported {}",
                said.mac.as_deref().unwrap_or("-"),
                self.mac.as_deref().unwrap_or("-")
            ));
        }
        out
    }
}

/// Compare one attachment in its pod with what was set up.
pub fn compare(
    pod: &NetNs,
    nl: &Netlink,
    record: &Record,
    expected: &Expected,
    places: &RdmaPlaces<'_>,
) -> Result<Vec<Comparison>> {
    let ifname = expected.ifname.as_str();
    let Some(link) = nl.link_by_name(ifname)? else {
        return Ok(vec![Comparison::present(format!("link {ifname}"), false)]);
    };
    if !is_vf_in_pod(&link, &record.pci, Some(record.saved_vf())) {
        return Ok(vec![Comparison::new(
            "link",
            format!("{ifname} is VF {}", record.pci),
            format!("{ifname} is another device"),
        )]);
    }
    let mut out = vec![Comparison::present(format!("link {ifname}"), true)];
    if let Some(mac) = &expected.mac {
        out.push(Comparison::new(
            "link/ether",
            mac,
            format_hw_addr(&link.mac),
        ));
    }
    if let Some(mtu) = expected.mtu {
        out.push(Comparison::new("mtu", mtu, link.mtu));
    }
    out.push(Comparison::new(
        "state",
        "UP",
        if link.up { "UP" } else { "DOWN" },
    ));
    let addresses = nl.addresses(link.index)?;
    for a in &expected.addresses {
        out.push(Comparison::present(
            format!("inet {a}"),
            addresses.contains(a),
        ));
    }
    if let Some(plan) = &record.routing {
        out.extend(compare_routing(pod, nl, ifname, plan)?);
    }
    out.extend(compare_rdma(pod, record, expected, places)?);
    Ok(out)
}

/// The RDMA device's traffic class and rdma_cm ToS as ADD set them, and
/// the RoCE v2 GID of each address at the index ADD reported.
fn compare_rdma(
    pod: &NetNs,
    record: &Record,
    expected: &Expected,
    places: &RdmaPlaces<'_>,
) -> Result<Vec<Comparison>> {
    let qos = record.rdma_qos.as_ref();
    let Some(device) = record
        .rdma_device
        .as_deref()
        .or(qos.map(|q| q.device.as_str()))
    else {
        return Ok(Vec::new());
    };
    let port = record.hca_port().unwrap_or(1);
    let addrs: Vec<_> = expected.addresses.iter().map(|a| a.addr()).collect();
    let want_gids = expected.gid_index.is_some();
    let asked = qos.map(QosRecord::asked).unwrap_or_default();
    let (mut out, table) = places
        .sysfs
        .with_rdma_device_dir(pod, &record.pci, device, |dir| {
            let at = RocePort::new(device, port, dir.map(Path::to_path_buf), places.configfs);
            let qos: Vec<_> = asked
                .attrs()
                .iter()
                .map(|want| compare_roce(places.hw, &at, want))
                .collect();
            let table = want_gids
                .then(|| dir.and_then(|d| crate::net::gid::read_port(&d.join("ports"), port)))
                .flatten();
            (qos, table)
        })?;
    if let Some(index) = expected.gid_index {
        out.extend(compare_gids(index, &addrs, &table.unwrap_or_default()));
    }
    Ok(out)
}

/// One RoCE setting ADD made, against what the device holds now.
fn compare_roce(hw: &dyn crate::hw::Hardware, at: &RocePort, want: &RoceAttr) -> Comparison {
    let actual = match hw.roce_state(at, want, crate::net::roce::Reading::Observe) {
        Ok(now) => now
            .get(want)
            .map_or_else(|| "unknown".into(), |a| a.value_text()),
        Err(e) if at.device_dir.is_none() => format!("device not found ({})", e.details()),
        Err(e) => e.details(),
    };
    Comparison::new(&want.file_of(&at.device), want.value_text(), actual)
}

/// The first address's RoCE v2 GID at the index ADD reported; the others'
/// present.
fn compare_gids(
    index: u32,
    addrs: &[std::net::IpAddr],
    table: &[crate::net::gid::Gid],
) -> Vec<Comparison> {
    let found = |addr: &std::net::IpAddr| crate::net::gid::roce_v2_index(table, *addr);
    let first = addrs.first().map(|addr| {
        Comparison::new(
            &format!("gid {addr} RoCE v2 index"),
            index,
            found(addr).map_or_else(|| "missing".to_string(), |n| n.to_string()),
        )
    });
    let rest = (addrs.iter().skip(1))
        .map(|addr| Comparison::present(format!("gid {addr} RoCE v2"), found(addr).is_some()));
    first.into_iter().chain(rest).collect()
}

/// The rail plan's rules, routes and sysctls against the pod's.
fn compare_routing(
    pod: &NetNs,
    nl: &Netlink,
    ifname: &str,
    plan: &crate::routing::RailRoutes,
) -> Result<Vec<Comparison>> {
    let mut out = Vec::new();
    let rules = nl.rules()?;
    for spec in &plan.rules {
        out.push(Comparison::present(
            format!(
                "rule from {} lookup {} prio {}",
                spec.src, spec.table, spec.priority
            ),
            rules.iter().any(|r| r.matches(spec)),
        ));
    }
    let routes = nl.routes()?;
    for spec in &plan.routes {
        let via = spec.gw.map(|g| format!(" via {g}")).unwrap_or_default();
        let table = spec.table.unwrap_or(MAIN_TABLE);
        let name = if table == MAIN_TABLE {
            "main".to_string()
        } else {
            table.to_string()
        };
        out.push(Comparison::present(
            format!("route {}{via} table {name}", spec.dst),
            routes.iter().any(|r| r.matches(spec, MAIN_TABLE)),
        ));
    }
    for s in &plan.sysctls {
        let actual = sysctl::read_in(pod, &s.key.path(ifname))?;
        out.push(Comparison::new(
            &format!("sysctl {}", s.key.to_string().replace("IFNAME", ifname)),
            &s.value,
            actual,
        ));
    }
    Ok(out)
}

/// The drifted lines, in words, for an error message.
pub fn drift(findings: &[Comparison]) -> Vec<String> {
    findings
        .iter()
        .filter(|f| !f.ok)
        .map(|f| {
            if f.expected == "present" {
                format!("{} is missing", f.what)
            } else {
                format!("{} is {}, expected {}", f.what, f.actual, f.expected)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_with(result: serde_json::Value) -> Record {
        let mut r = Record::sample();
        r.result = Some(CniResult::from_value(&result).unwrap());
        r
    }

    #[test]
    fn expected_comes_from_what_add_returned() {
        let r = record_with(serde_json::json!({
            "cniVersion": "1.1.0",
            "interfaces": [{"name": "net1", "mac": "02:AA:00:00:00:01", "mtu": 4092}],
            "ips": [{"address": "172.16.0.0/31", "interface": 0}]
        }));
        let e = Expected::from_record(&r).unwrap();
        assert_eq!(e.mtu, Some(4092), "the MTU ADD set, not a config default");
        assert_eq!(e.mac.as_deref(), Some("02:aa:00:00:00:01"));
        assert_eq!(e.addresses, ["172.16.0.0/31".parse::<IpNet>().unwrap()]);
    }

    #[test]
    fn an_unfinished_add_has_nothing_to_expect() {
        let e = Expected::from_record(&Record::sample()).unwrap_err();
        assert_eq!(e.code(), 107);
        assert!(e.details().contains("has not finished"), "{e}");
    }

    #[test]
    fn a_prev_result_that_differs_is_named() {
        let ours = record_with(serde_json::json!({
            "cniVersion": "1.1.0",
            "ips": [{"address": "172.16.0.0/31"}]
        }));
        let e = Expected::from_record(&ours).unwrap();
        let same = CniResult::from_value(
            &serde_json::json!({"cniVersion": "1.0.0", "ips": [{"address": "172.16.0.0/31"}]}),
        )
        .unwrap();
        assert!(e.disagreements(&same).is_empty());
        let other = CniResult::from_value(
            &serde_json::json!({"cniVersion": "1.0.0", "ips": [{"address": "172.16.0.2/31"}]}),
        )
        .unwrap();
        let d = e.disagreements(&other);
        assert_eq!(d.len(), 1);
        assert!(d[0].contains("172.16.0.2/31"), "{d:?}");
    }
}
