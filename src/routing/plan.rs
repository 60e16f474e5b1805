//! The rail routing plan (pure): which table and rule priority a rail gets,
//! which routes go in its table and in main, and which sysctls it needs.
//! `commands/rail.rs` applies it.
//!
//! RoCE resolves next hops by a route lookup from the GID's source address,
//! so each rail gets `from <addr> lookup <table>` with an explicit priority
//! and its own table; only the rail's own CIDR goes in main (it cannot
//! collide across rails); the east-west supernet stays in the rail tables.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::conf::{RoutingConf, SysctlKey};

use cni::{CniResult, Route};

/// Tables for non-`net<N>` interfaces start here (sbr and Spiderpool use 100 up).
pub const FIRST_FREE_TABLE: u32 = 1100;
const NET_N_BASE: u32 = 1000;
/// Route scopes as the kernel numbers them (RT_SCOPE_*), as CNI 1.1 reports them.
pub const SCOPE_UNIVERSE: u8 = 0;
pub const SCOPE_LINK: u8 = 253;

/// Per-rail sysctls and their defaults: loose reverse-path filtering and
/// ARP answered only on the rail that owns the address (multi-rail hosts).
pub const DEFAULT_SYSCTLS: &[(&str, &str)] = &[
    ("rp_filter", "2"),
    ("arp_ignore", "2"),
    ("arp_announce", "2"),
    ("accept_local", "1"),
    ("arp_notify", "1"),
];

/// And on a rail with an IPv6 address: no router advertisements or SLAAC
/// addresses from the leaf (the pool gives the address and the routes).
/// Nor duplicate detection: the pool owns the addresses, and an address
/// (link-local included) held tentative delays the rail's first packets.
pub const DEFAULT_SYSCTLS6: &[(&str, &str)] =
    &[("accept_dad", "0"), ("accept_ra", "0"), ("autoconf", "0")];

/// One sysctl to write on the rail interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysctl {
    pub key: SysctlKey,
    pub value: String,
}

pub use crate::net::route::{RouteSpec, RuleSpec};

/// What one rail interface needs, computed before anything is touched; kept
/// in the attachment record so DEL and CHECK work from what ADD did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailRoutes {
    pub table: u32,
    pub priority: u32,
    pub rules: Vec<RuleSpec>,
    /// In install order: connected routes before gateway routes.
    pub routes: Vec<RouteSpec>,
    pub sysctls: Vec<Sysctl>,
}

/// The table and priority for `ifname`: `net<N>` (N < 100) → 1000+N, other
/// names the lowest table ≥ 1100; either way never one that `used` (tables
/// and rule priorities already in the pod) holds, so two rails can never
/// share a table or a rule priority. Priority is the table's number.
pub fn choose_table(ifname: &str, conf: &RoutingConf, used: &[u32]) -> (u32, u32) {
    let free = |t: &u32| !used.contains(t);
    let derived = ifname
        .strip_prefix("net")
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n < 100)
        .map(|n| NET_N_BASE + n)
        .filter(free)
        .or_else(|| (FIRST_FREE_TABLE..).find(free))
        .unwrap_or(FIRST_FREE_TABLE);
    let table = conf.table.unwrap_or(derived);
    (table, conf.rule_priority.unwrap_or(table))
}

pub fn plan(ipam: &CniResult, conf: &RoutingConf, table: u32, priority: u32) -> RailRoutes {
    let mut routes = connected_routes(ipam, table);
    for spec in gateway_routes(ipam, conf, table) {
        if !routes.contains(&spec) {
            routes.push(spec);
        }
    }
    routes.extend(main_routes(ipam, conf));
    RailRoutes {
        table,
        priority,
        rules: source_rules(ipam, table, priority),
        routes,
        sysctls: sysctls(ipam, conf),
    }
}

/// `from <address>/32 lookup <table>` for each address of the rail.
fn source_rules(ipam: &CniResult, table: u32, priority: u32) -> Vec<RuleSpec> {
    ipam.ips
        .iter()
        .map(|ip| {
            let addr = ip.address.addr();
            let host =
                IpNet::new(addr, if addr.is_ipv4() { 32 } else { 128 }).unwrap_or(ip.address);
            RuleSpec {
                src: host,
                table,
                priority,
            }
        })
        .collect()
}

/// Each address's own subnet, on-link in the rail table (first: a gateway
/// is validated in the route's own table).
fn connected_routes(ipam: &CniResult, table: u32) -> Vec<RouteSpec> {
    ipam.ips
        .iter()
        .map(|ip| RouteSpec {
            dst: ip.address.trunc(),
            gw: None,
            table: Some(table),
            scope: SCOPE_LINK,
            src: Some(ip.address.addr()),
        })
        .collect()
}

/// The gateway of the address family `dst` belongs to.
fn gateway_for(ipam: &CniResult, dst: &IpNet) -> Option<std::net::IpAddr> {
    ipam.ips
        .iter()
        .find(|ip| ip.address.addr().is_ipv4() == dst.addr().is_ipv4())
        .and_then(|ip| ip.gateway)
}

/// A destination an address's own subnet covers is on-link (a shared rail
/// subnet): its connected route already reaches it.
fn on_link(ipam: &CniResult, dst: &IpNet) -> bool {
    ipam.ips.iter().any(|ip| ip.address.trunc().contains(dst))
}

/// The IPAM's routes (and the default route when asked) via the gateway,
/// in the rail table.
fn gateway_routes(ipam: &CniResult, conf: &RoutingConf, table: u32) -> Vec<RouteSpec> {
    let mut dsts: Vec<IpNet> = ipam.routes.iter().map(|r| r.dst.trunc()).collect();
    if conf.default_route {
        for ip in &ipam.ips {
            let any = if ip.address.addr().is_ipv4() {
                "0.0.0.0/0"
            } else {
                "::/0"
            };
            dsts.extend(any.parse::<IpNet>().ok());
        }
    }
    dsts.into_iter()
        .filter(|d| !on_link(ipam, d))
        .map(|dst| {
            let gw = ipam
                .routes
                .iter()
                .find(|r| r.dst.trunc() == dst)
                .and_then(|r| r.gw)
                .or_else(|| gateway_for(ipam, &dst));
            RouteSpec {
                dst,
                gw,
                table: Some(table),
                scope: if gw.is_some() {
                    SCOPE_UNIVERSE
                } else {
                    SCOPE_LINK
                },
                src: None,
            }
        })
        .collect()
}

/// The rail's CIDRs via its gateway in the main table (`mainRoutes`).
fn main_routes(ipam: &CniResult, conf: &RoutingConf) -> Vec<RouteSpec> {
    let rail_cidrs = [conf.rail_cidr, conf.rail_cidr6].into_iter().flatten();
    rail_cidrs
        .filter(|c| conf.main_routes && !on_link(ipam, c))
        .filter_map(|cidr| {
            gateway_for(ipam, &cidr).map(|gw| RouteSpec {
                dst: cidr,
                gw: Some(gw),
                table: None,
                scope: SCOPE_UNIVERSE,
                src: None,
            })
        })
        .collect()
}

/// The defaults for each family the rail has, then the config's own.
fn sysctls(ipam: &CniResult, conf: &RoutingConf) -> Vec<Sysctl> {
    let mut sysctls: BTreeMap<SysctlKey, String> = DEFAULT_SYSCTLS
        .iter()
        .map(|(k, v)| (SysctlKey::ipv4(k), (*v).to_string()))
        .collect();
    if ipam.ips.iter().any(|ip| ip.address.addr().is_ipv6()) {
        sysctls.extend(
            DEFAULT_SYSCTLS6
                .iter()
                .map(|(k, v)| (SysctlKey::ipv6(k), (*v).to_string())),
        );
    }
    sysctls.extend(conf.sysctl.clone());
    sysctls
        .into_iter()
        .map(|(key, value)| Sysctl { key, value })
        .collect()
}

impl RailRoutes {
    /// The routes for the CNI result (1.1 carries table and scope).
    pub fn result_routes(&self) -> Vec<Route> {
        self.routes
            .iter()
            .map(|r| Route {
                table: r.table,
                scope: Some(r.scope),
                ..Route::via(r.dst, r.gw)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::IpConfig;
    use serde_json::json;

    fn ipam(addr: &str, gw: &str, routes: &[&str]) -> CniResult {
        CniResult {
            ips: vec![IpConfig {
                address: addr.parse().unwrap(),
                gateway: Some(gw.parse().unwrap()),
                interface: None,
            }],
            routes: routes
                .iter()
                .map(|d| Route::via(d.parse().unwrap(), None))
                .collect(),
            ..CniResult::default()
        }
    }

    fn default_conf(cidr: &str) -> RoutingConf {
        RoutingConf::parse(None, Some(cidr.parse().unwrap())).unwrap()
    }

    #[test]
    fn net_n_gets_table_and_priority_1000_plus_n() {
        let none = RoutingConf::default();
        assert_eq!(choose_table("net3", &none, &[]), (1003, 1003));
        assert_eq!(choose_table("rdma0", &none, &[1100, 1101]), (1102, 1102));
        let conf =
            RoutingConf::parse(Some(&json!({"table": 300, "rulePriority": 50})), None).unwrap();
        assert_eq!(choose_table("net1", &conf, &[]), (300, 50));
    }

    #[test]
    fn names_that_are_not_net_n_never_share_a_table() {
        let none = RoutingConf::default();
        let a = choose_table("net-a", &none, &[]);
        let b = choose_table("net-b", &none, &[a.0, a.1]);
        let c = choose_table("net100", &none, &[a.0, b.0]);
        assert_eq!((a.0, b.0, c.0), (1100, 1101, 1102));
        assert_eq!(
            choose_table("net1", &none, &[1001]),
            (1100, 1100),
            "a taken 1000+N falls back to a free table"
        );
    }

    #[test]
    fn on_a_shared_subnet_the_subnet_is_on_link_in_both_tables() {
        let p = plan(
            &ipam(
                "172.16.0.1/16",
                "172.16.255.254",
                &["172.16.0.0/16", "172.16.0.0/12"],
            ),
            &default_conf("172.16.0.0/16"),
            1001,
            1001,
        );
        let shown: Vec<String> = p
            .routes
            .iter()
            .map(|r| format!("{} {:?} {:?} {}", r.dst, r.gw, r.table, r.scope))
            .collect();
        assert_eq!(
            shown,
            [
                "172.16.0.0/16 None Some(1001) 253",
                "172.16.0.0/12 Some(172.16.255.254) Some(1001) 0",
            ],
            "no gateway route for the on-link subnet, and no main route (the kernel's connected one serves)"
        );
    }

    #[test]
    fn slash_31_rail_plan() {
        let p = plan(
            &ipam(
                "172.16.0.0/31",
                "172.16.0.1",
                &["172.16.0.0/15", "172.16.0.0/12"],
            ),
            &default_conf("172.16.0.0/15"),
            1001,
            1001,
        );
        assert_eq!(
            p.rules,
            vec![RuleSpec {
                src: "172.16.0.0/32".parse().unwrap(),
                table: 1001,
                priority: 1001
            }]
        );
        let shown: Vec<String> = p
            .routes
            .iter()
            .map(|r| {
                format!(
                    "{} {:?} {:?} {}",
                    r.dst,
                    r.gw.map(|g| g.to_string()),
                    r.table,
                    r.scope
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                "172.16.0.0/31 None Some(1001) 253",
                "172.16.0.0/15 Some(\"172.16.0.1\") Some(1001) 0",
                "172.16.0.0/12 Some(\"172.16.0.1\") Some(1001) 0",
                "172.16.0.0/15 Some(\"172.16.0.1\") None 0",
            ],
            "connected first, supernet only in the rail table, rail cidr in main"
        );
        assert!(
            !p.routes.iter().any(|r| r.dst.prefix_len() == 0),
            "no default route on a rail"
        );
    }

    #[test]
    fn default_route_and_main_routes_are_opt_in_and_out() {
        let conf = RoutingConf::parse(
            Some(&json!({"defaultRoute": true, "mainRoutes": false})),
            Some("172.16.0.0/15".parse().unwrap()),
        )
        .unwrap();
        let p = plan(&ipam("172.16.0.0/31", "172.16.0.1", &[]), &conf, 1001, 1001);
        assert!(p
            .routes
            .iter()
            .any(|r| r.dst.prefix_len() == 0 && r.table == Some(1001)));
        assert!(
            p.routes.iter().all(|r| r.table.is_some()),
            "nothing in main"
        );
    }

    #[test]
    fn ipv6_gets_a_slash_128_rule_and_its_own_routes() {
        let p = plan(
            &ipam("fd00:1::/127", "fd00:1::1", &["fd00::/48"]),
            &default_conf("fd00:1::/64"),
            1002,
            1002,
        );
        assert_eq!(p.rules[0].src.to_string(), "fd00:1::/128");
        assert_eq!(p.routes[0].dst.to_string(), "fd00:1::/127");
        assert_eq!(p.routes[1].gw, Some("fd00:1::1".parse().unwrap()));
        assert_eq!(p.routes.last().unwrap().dst.to_string(), "fd00:1::/64");
    }

    #[test]
    fn sysctl_defaults_and_overrides() {
        let conf = RoutingConf::parse(
            Some(&json!({"sysctl": {"net.ipv4.conf.IFNAME.rp_filter": 1, "net.ipv6.conf.IFNAME.accept_ra": "0"}})),
            None,
        )
        .unwrap();
        let p = plan(&ipam("172.16.0.0/31", "172.16.0.1", &[]), &conf, 1001, 1001);
        let find = |f: &str, k: &str| {
            p.sysctls
                .iter()
                .find(|s| s.key.to_string() == format!("net.{f}.conf.IFNAME.{k}"))
                .map(|s| s.value.as_str())
        };
        assert_eq!(find("ipv4", "rp_filter"), Some("1"));
        assert_eq!(find("ipv4", "arp_ignore"), Some("2"));
        assert_eq!(find("ipv4", "accept_local"), Some("1"));
        assert_eq!(find("ipv6", "accept_ra"), Some("0"));
    }

    #[test]
    fn only_interface_sysctls_and_sane_tables_are_accepted() {
        for bad in [
            json!({"sysctl": {"net.ipv4.ip_forward": "1"}}),
            json!({"sysctl": {"net.ipv4.conf.all.rp_filter": "0"}}),
            json!({"sysctl": {"net.ipv4.conf.IFNAME.../x": "0"}}),
            json!({"sysctl": {"kernel.panic": "1"}}),
            json!({"sysctl": {"net.ipv4.conf.IFNAME.rp_filter": "1\n"}}),
            json!({"table": 254}),
            json!({"table": 0}),
            json!({"rulePriority": 0}),
            json!({"tabel": 5}),
        ] {
            let e = RoutingConf::parse(Some(&bad), None).unwrap_err();
            assert_eq!(e.code(), 7, "{bad}");
            assert!(e.details().contains("routing"), "{bad}: {e}");
        }
    }
}
