//! Installing, removing and verifying a rail's routing plan inside the pod.

use std::net::IpAddr;

use crate::error::{Error, Result};
use crate::log_info;
use crate::net::route::{RouteAdded, MAIN_TABLE};
use crate::net::{sysctl, NetNs, Netlink};
use crate::routing::Plan;
use crate::routing::RouteSpec;

/// The tables and rule priorities a pod already uses, for choosing free ones.
pub struct InUse {
    /// (source, table, priority) of each rule.
    rules: Vec<(Option<IpAddr>, u32, u32)>,
    route_tables: Vec<u32>,
}

impl InUse {
    pub async fn read(nl: &Netlink) -> Result<Self> {
        Ok(InUse {
            rules: nl
                .rules()
                .await?
                .iter()
                .map(|r| (r.src.map(|s| s.addr()), r.table, r.priority))
                .collect(),
            route_tables: nl.routes().await?.iter().map(|r| r.table).collect(),
        })
    }

    /// Everything in use, except rules from one of `ours` (the addresses
    /// being attached): stale leftovers that `install` replaces.
    pub fn except(&self, ours: &[IpAddr]) -> Vec<u32> {
        let mut used: Vec<u32> = self
            .rules
            .iter()
            .filter(|(src, _, _)| src.is_none_or(|s| !ours.contains(&s)))
            .flat_map(|(_, table, priority)| [*table, *priority])
            .collect();
        used.extend(&self.route_tables);
        used
    }
}

/// Sysctls, table routes (connected first), main routes, then the source
/// rules. Stale rules for the same source go first, so a retried ADD or a
/// reused address never meets an old rule. A route another attachment
/// already holds fails the ADD, naming it, except a main-table route: a
/// second rail sharing the same prefix leaves it to the first. Returns the
/// routes left out that way, which the result must not claim.
pub async fn install(
    pod: &NetNs,
    nl: &Netlink,
    ifname: &str,
    index: u32,
    plan: &Plan,
) -> Result<Vec<RouteSpec>> {
    let writes: Vec<_> = plan
        .sysctls
        .iter()
        .map(|s| (s.key.path(ifname), s.value.as_str()))
        .collect();
    sysctl::write_all_in(pod, &writes)?;
    let mut left_out = Vec::new();
    for route in &plan.routes {
        match nl.add_route(index, route).await? {
            RouteAdded::Added | RouteAdded::AlreadyThere => {}
            RouteAdded::Conflict(holder) if route.table.is_none() => {
                log_info!(
                    "main-table route {} is already {holder}; {ifname} leaves it to that rail",
                    route.dst
                );
                left_out.push(route.clone());
            }
            RouteAdded::Conflict(holder) => {
                return Err(Error::Netlink(format!(
                    "cannot add route {} to table {} for {ifname}: the pod already has {holder}; \
                     give this rail another table (routing.table) or remove that route",
                    route.dst,
                    route.table.unwrap_or(MAIN_TABLE)
                )))
            }
        }
    }
    remove_rules(nl, plan).await?;
    for rule in &plan.rules {
        nl.add_rule(rule).await?;
    }
    Ok(left_out)
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
