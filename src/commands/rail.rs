//! Installing, removing and verifying a rail's routing plan inside the pod.

use std::net::IpAddr;

use crate::error::Result;
use crate::net::{sysctl, NetNs, Netlink};
use crate::routing::Plan;

const MAIN_TABLE: u32 = 254;

/// Tables and rule priorities already used in the pod, for choosing free
/// ones. Rules from one of `ours` (the addresses being attached) are stale
/// leftovers that `install` replaces, so they do not count.
pub async fn used_tables_and_priorities(nl: &Netlink, ours: &[IpAddr]) -> Result<Vec<u32>> {
    let mut used = Vec::new();
    for rule in nl.rules().await? {
        if rule.src.is_none_or(|src| !ours.contains(&src.addr())) {
            used.extend([rule.table, rule.priority]);
        }
    }
    used.extend(nl.routes().await?.iter().map(|r| r.table));
    Ok(used)
}

/// Sysctls, table routes (connected first), main routes, then the source
/// rules. Stale rules for the same source go first, so a retried ADD or a
/// reused address never meets an old rule.
pub async fn install(
    pod: &NetNs,
    nl: &Netlink,
    ifname: &str,
    index: u32,
    plan: &Plan,
) -> Result<()> {
    for s in &plan.sysctls {
        sysctl::write_in(pod, &s.key.path(ifname), &s.value)?;
    }
    for route in &plan.routes {
        nl.add_route(index, route).await?;
    }
    remove_rules(nl, plan).await?;
    for rule in &plan.rules {
        nl.add_rule(rule).await?;
    }
    Ok(())
}

/// Rules from the plan's source addresses: ours, or stale ones for the same
/// address. A rule of another attachment (another source) is never touched.
async fn remove_rules(nl: &Netlink, plan: &Plan) -> Result<()> {
    for rule in nl.rules().await? {
        let ours = plan.rules.iter().any(|spec| rule.src == Some(spec.src));
        if ours {
            nl.del_rule(&rule).await?;
        }
    }
    Ok(())
}

/// Remove the rules and the rail table's routes. Rules outlive the device,
/// so this runs even when the VF is already gone.
pub async fn remove(nl: &Netlink, plan: &Plan) -> Result<()> {
    remove_rules(nl, plan).await?;
    for route in nl.routes().await? {
        if route.table == plan.table {
            nl.del_route(&route).await?;
        }
    }
    Ok(())
}

/// What differs between the pod and the plan, in words.
pub async fn differences(
    pod: &NetNs,
    nl: &Netlink,
    ifname: &str,
    plan: &Plan,
) -> Result<Vec<String>> {
    let mut diffs = Vec::new();
    let rules = nl.rules().await?;
    for spec in &plan.rules {
        if !rules.iter().any(|r| r.matches(spec)) {
            diffs.push(format!(
                "rule from {} lookup {} priority {} is missing",
                spec.src, spec.table, spec.priority
            ));
        }
    }
    let routes = nl.routes().await?;
    for spec in &plan.routes {
        if !routes.iter().any(|r| r.matches(spec, MAIN_TABLE)) {
            let via = spec.gw.map(|g| format!(" via {g}")).unwrap_or_default();
            diffs.push(format!(
                "route {}{via} in table {} is missing",
                spec.dst,
                spec.table.unwrap_or(MAIN_TABLE)
            ));
        }
    }
    for s in &plan.sysctls {
        let path = s.key.path(ifname);
        let actual = sysctl::read_in(pod, &path)?;
        if actual != s.value {
            diffs.push(format!(
                "{} is {actual}, expected {}",
                path.display(),
                s.value
            ));
        }
    }
    Ok(diffs)
}
