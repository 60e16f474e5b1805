//! Record versus kernel, line by line: what CHECK fails on and what
//! `railcni inspect` prints. One comparison, so the two never disagree.

use ipnet::IpNet;
use serde::Serialize;

use super::home::is_vf_in_pod;
use crate::error::Result;
use crate::net::mac::format_hw_addr;
use crate::net::route::MAIN_TABLE;
use crate::net::{sysctl, NetNs, Netlink};
use crate::state::Record;

/// One thing railcni set, and whether the kernel still has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// In iproute2's words: `link`, `mtu`, `rule`, `route`, `sysctl` …
    pub what: String,
    pub expected: String,
    pub actual: String,
    pub ok: bool,
}

impl Finding {
    fn new(what: &str, expected: impl ToString, actual: impl ToString) -> Self {
        let (expected, actual) = (expected.to_string(), actual.to_string());
        Finding {
            what: what.to_string(),
            ok: expected == actual,
            expected,
            actual,
        }
    }

    fn present(what: String, ok: bool) -> Self {
        Finding {
            what,
            expected: "present".into(),
            actual: if ok { "present" } else { "missing" }.into(),
            ok,
        }
    }
}

/// What the interface should look like.
pub struct Expected<'a> {
    pub ifname: &'a str,
    pub mac: Option<&'a str>,
    pub mtu: u32,
    pub addresses: Vec<IpNet>,
}

/// Compare one attachment in its pod with what was set up.
pub async fn compare(
    pod: &NetNs,
    nl: &Netlink,
    record: &Record,
    expected: &Expected<'_>,
) -> Result<Vec<Finding>> {
    let ifname = expected.ifname;
    let Some(link) = nl.link_by_name(ifname).await? else {
        return Ok(vec![Finding::present(format!("link {ifname}"), false)]);
    };
    if !is_vf_in_pod(&link, &record.pci, Some(record)) {
        return Ok(vec![Finding::new(
            "link",
            format!("{ifname} is VF {}", record.pci),
            format!("{ifname} is another device"),
        )]);
    }
    let mut out = vec![Finding::present(format!("link {ifname}"), true)];
    if let Some(mac) = expected.mac {
        out.push(Finding::new(
            "link/ether",
            mac.to_ascii_lowercase(),
            format_hw_addr(&link.mac),
        ));
    }
    out.push(Finding::new("mtu", expected.mtu, link.mtu));
    out.push(Finding::new(
        "state",
        "UP",
        if link.up { "UP" } else { "DOWN" },
    ));
    let addresses = nl.addresses(link.index).await?;
    for a in &expected.addresses {
        out.push(Finding::present(format!("inet {a}"), addresses.contains(a)));
    }
    if let Some(plan) = &record.routing {
        let rules = nl.rules().await?;
        for spec in &plan.rules {
            out.push(Finding::present(
                format!(
                    "rule from {} lookup {} prio {}",
                    spec.src, spec.table, spec.priority
                ),
                rules.iter().any(|r| r.matches(spec)),
            ));
        }
        let routes = nl.routes().await?;
        for spec in &plan.routes {
            let via = spec.gw.map(|g| format!(" via {g}")).unwrap_or_default();
            let table = spec.table.unwrap_or(MAIN_TABLE);
            let name = if table == MAIN_TABLE {
                "main".to_string()
            } else {
                table.to_string()
            };
            out.push(Finding::present(
                format!("route {}{via} table {name}", spec.dst),
                routes.iter().any(|r| r.matches(spec, MAIN_TABLE)),
            ));
        }
        for s in &plan.sysctls {
            let path = s.key.path(ifname);
            let actual = sysctl::read_in(pod, &path)?;
            out.push(Finding::new(
                &format!("sysctl {}", s.key.to_string().replace("IFNAME", ifname)),
                &s.value,
                actual,
            ));
        }
    }
    Ok(out)
}

/// The drifted lines, in words, for an error message.
pub fn drift(findings: &[Finding]) -> Vec<String> {
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

/// The addresses of a result, for `Expected`.
pub fn addresses(ips: &[cni::IpConfig]) -> Vec<IpNet> {
    ips.iter().map(|ip| ip.address).collect()
}
