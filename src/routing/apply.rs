//! Installing, removing and verifying a rail's routing plan inside the pod.

use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::log_info;
use crate::net::route::{RouteAdded, Rule, MAIN_TABLE};
use crate::net::{sysctl, NetNs, Netlink};
use crate::routing::plan::Sysctl;
use crate::routing::RailRoutes;
use crate::routing::RouteSpec;

/// What a pod already has: its rules (to choose a free table and priority,
/// and to find stale rules for our addresses) and the tables its routes use.
pub struct InUse {
    rules: Vec<Rule>,
    route_tables: Vec<u32>,
}

impl InUse {
    pub fn read(nl: &Netlink) -> Result<Self> {
        Ok(InUse {
            rules: nl.rules()?,
            route_tables: nl.routes()?.iter().map(|r| r.table).collect(),
        })
    }

    /// Everything in use, except rules from one of `ours` (the addresses
    /// being attached): stale leftovers that `install` replaces.
    pub fn except(&self, ours: &[IpAddr]) -> Vec<u32> {
        let mut used: Vec<u32> = self
            .rules
            .iter()
            .filter(|r| r.src.is_none_or(|s| !ours.contains(&s.addr())))
            .flat_map(|r| [r.table, r.priority])
            .collect();
        used.extend(&self.route_tables);
        used
    }
}

/// Per-interface sysctls the link message cannot carry (see
/// `devconf`), written before the interface comes up: with IPv6,
/// `accept_dad` 0 must be in place before the kernel makes the link-local
/// address, or that address (and the neighbour answers that need it)
/// waits out duplicate detection.
/// `proc_sys_net`: where `/proc/sys/net` is (`Settings::proc_sys_net`).
pub fn write_sysctls(
    pod: &NetNs,
    proc_sys_net: &std::path::Path,
    ifname: &str,
    sysctls: &[&Sysctl],
) -> Result<()> {
    let writes: Vec<_> = sysctls
        .iter()
        .map(|s| (s.key.path_in(proc_sys_net, ifname), s.value.as_str()))
        .collect();
    sysctl::write_all_in(pod, &writes)
}

/// Table routes (connected first), main routes, then the source
/// rules. Stale rules for the same source go first, so a retried ADD or a
/// reused address never meets an old rule. A route another attachment
/// already holds fails the ADD, naming it, except a main-table route: a
/// second rail sharing the same prefix leaves it to the first. Returns the
/// routes left out that way, which the result must not claim.
/// `known`: the pod's rules as read just before (saves a dump), if any.
pub fn install(
    nl: &Netlink,
    ifname: &str,
    index: u32,
    plan: &RailRoutes,
    known: Option<&InUse>,
) -> Result<Vec<RouteSpec>> {
    let mut left_out = Vec::new();
    for route in &plan.routes {
        match nl.add_route(index, route)? {
            RouteAdded::Added | RouteAdded::AlreadyThere => {}
            RouteAdded::Conflict(holder) if route.table.is_none() => {
                log_info!(
                    "main-table route {} is already {holder}; {ifname} leaves it to that rail",
                    route.dst
                );
                left_out.push(route.clone());
            }
            RouteAdded::Conflict(holder) => {
                return Err(Error::RouteConflict(format!(
                    "cannot add route {} to table {} for {ifname}: the pod already has {holder}; \
                     give this rail another table (routing.table) or remove that route",
                    route.dst,
                    route.table.unwrap_or(MAIN_TABLE)
                )))
            }
        }
    }
    let rules = match known {
        Some(k) => k.rules.clone(),
        None => nl.rules_of_families(sources(plan))?,
    };
    remove_rules(nl, plan, rules)?;
    for rule in &plan.rules {
        nl.add_rule(rule)?;
    }
    Ok(left_out)
}

/// Rules from the plan's source addresses: ours, or stale ones for the same
/// address. A rule of another attachment (another source) is never touched.
fn remove_rules(nl: &Netlink, plan: &RailRoutes, rules: Vec<Rule>) -> Result<()> {
    for rule in rules {
        if plan.rules.iter().any(|spec| rule.src == Some(spec.src)) {
            nl.del_rule(&rule)?;
        }
    }
    Ok(())
}

/// The source addresses of the plan's rules.
fn sources(plan: &RailRoutes) -> impl Iterator<Item = IpAddr> + '_ {
    plan.rules.iter().map(|r| r.src.addr())
}

/// Remove the rules, which outlive the device, so this runs even when the
/// VF is already gone. The rail table's routes all go through the VF: the
/// kernel flushes them when it leaves the namespace (or went with it).
pub fn remove(nl: &Netlink, plan: &RailRoutes) -> Result<()> {
    let rules = nl.rules_of_families(sources(plan))?;
    remove_rules(nl, plan, rules)
}
