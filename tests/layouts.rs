//! Address layouts beyond per-node /31s, on the fabric: one subnet per rail
//! shared by every node (Spiderpool's "Solution 1"), its gateway held by
//! the leaf on a bridge joining the rail's links. Needs root.

mod common;

use common::fabric::Fabric;
use common::*;
use serde_json::{json, Value};

fn shared_conf(f: &Fabric, node: &str, shared: Value) -> Value {
    let mut c = f.conf(node, 1);
    c["ipam"] = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/16", "perNodePrefix": 27,
                       "sharedSubnet": shared, "nodes": {"gpu-0": 0, "gpu-1": 1},
                       "routes": [{"dst": "172.16.0.0/12"}]});
    c
}

/// The leaf joins rail 1's two links in one bridge holding the gateway.
fn bridge_rail1(f: &Fabric, gateway: &str) {
    let leaf = f.leaf();
    let (a, b) = (f.leaf_port("gpu-0", 1), f.leaf_port("gpu-1", 1));
    sh(&format!(
        "ip -n {leaf} addr flush dev {a} && ip -n {leaf} addr flush dev {b} && \
         ip -n {leaf} link add br-r1 type bridge && ip -n {leaf} link set br-r1 mtu 9000 && \
         ip -n {leaf} link set {a} master br-r1 && ip -n {leaf} link set {b} master br-r1 && \
         ip -n {leaf} link set br-r1 up && ip -n {leaf} addr add {gateway}/16 dev br-r1"
    ));
}

fn ping(pod: &str, to: &str) -> bool {
    sh(&format!(
        "ip netns exec {pod} ping -c 1 -W 2 -M do -s 8972 {to}"
    ))
    .status
    .success()
}

fn routes(pod: &str, table: &str) -> String {
    String::from_utf8_lossy(&sh(&format!("ip -n {pod} route show table {table}")).stdout)
        .into_owned()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_nodes_on_one_shared_rail_subnet_are_on_link() {
    let f = Fabric::up_with(1);
    let gw = "172.16.255.254";
    bridge_rail1(&f, gw);
    let (pa, pb) = (f.pod("pa"), f.pod("pb"));
    let shared = json!({"gateway": gw});
    let a = f
        .cni_with(
            "ADD",
            "gpu-0",
            &pa,
            1,
            &shared_conf(&f, "gpu-0", shared.clone()),
        )
        .ok();
    let b = f
        .cni_with(
            "ADD",
            "gpu-1",
            &pb,
            1,
            &shared_conf(&f, "gpu-1", shared.clone()),
        )
        .ok();
    assert_eq!(
        a["ips"][0]["address"], "172.16.0.1/16",
        "172.16.0.0 is the subnet's network address"
    );
    assert_eq!(
        b["ips"][0]["address"], "172.16.0.32/16",
        "gpu-1's /27 slice starts at .32"
    );
    assert_eq!(
        (
            a["ips"][0]["gateway"].as_str(),
            b["ips"][0]["gateway"].as_str()
        ),
        (Some(gw), Some(gw))
    );

    assert!(
        ping(&pa, "172.16.0.32"),
        "A reaches B on-link, jumbo, don't fragment"
    );
    assert!(ping(&pa, gw), "and the gateway");
    let neigh = String::from_utf8_lossy(&sh(&format!("ip -n {pa} neigh show 172.16.0.32")).stdout)
        .into_owned();
    assert!(
        neigh.contains("dev net1"),
        "B was resolved on the rail itself: {neigh}"
    );
    for table in ["main", "1001"] {
        let shown = routes(&pa, table);
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("172.16.0.0/16 dev net1") && l.contains("scope link")),
            "table {table}: {shown}"
        );
    }
    assert!(routes(&pa, "1001").contains(&format!("172.16.0.0/12 via {gw} dev net1")));
    f.cni_with(
        "DEL",
        "gpu-0",
        &pa,
        1,
        &shared_conf(&f, "gpu-0", shared.clone()),
    )
    .ok();
    f.cni_with("DEL", "gpu-1", &pb, 1, &shared_conf(&f, "gpu-1", shared))
        .ok();
    assert!(!f.record("gpu-0", 1).exists() && !f.record("gpu-1", 1).exists());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_shared_subnet_without_a_usable_gateway_is_a_config_error_naming_it() {
    let f = Fabric::up_with(1);
    let pa = f.pod("pa");
    for (shared, says) in [
        (json!({}), "ipam.sharedSubnet.gateway"),
        (
            json!({"gateway": "10.9.9.9"}),
            "10.9.9.9 is outside cidr 172.16.0.0/16",
        ),
        (
            json!({"gateway": "172.16.0.5"}),
            "172.16.0.5 lies in this node's prefix 172.16.0.0/27",
        ),
    ] {
        let err = f
            .cni_with("ADD", "gpu-0", &pa, 1, &shared_conf(&f, "gpu-0", shared))
            .err(7);
        assert!(
            err["details"].as_str().unwrap_or("").contains(says),
            "{says}: {err}"
        );
        assert!(!f.record("gpu-0", 1).exists(), "bad input changes nothing");
    }
}

/// Spiderpool's "Solution 2": the node's PF already holds an address of the
/// node's rail subnet; `matchMasterSubnet` leases the rest of that subnet.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn match_master_subnet_leases_the_pfs_subnet() {
    let node = Node::new(1, 2);
    let host = node.host();
    // The PF as the host sees it: a netdev named as sysfs names it, addressed.
    sh(&format!("ip -n {host} link add pf1 type veth peer name pf1peer && ip -n {host} addr add 172.16.1.34/27 dev pf1"));
    let fabric = node.fabric();
    sh(&format!(
        "ip -n {fabric} link add br-r1 type bridge && ip -n {fabric} link set br-r1 mtu 9000 && \
         ip -n {fabric} link set r1v0 master br-r1 && ip -n {fabric} link set r1v1 master br-r1 && \
         ip -n {fabric} link set br-r1 up && ip -n {fabric} addr add 172.16.1.33/27 dev br-r1"
    ));
    let ipam = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/16", "matchMasterSubnet": true,
                      "gatewayIndex": 1, "routes": [{"dst": "172.16.0.0/16"}]});
    let (pa, pb) = (node.pod("a"), node.pod("b"));
    let add_a = Req::new(
        "ADD",
        "a",
        &pa,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[0].pci, ipam.clone()),
    );
    let add_b = Req::new(
        "ADD",
        "b",
        &pb,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[1].pci, ipam.clone()),
    );
    let a = node.cni(&add_a).ok();
    assert_eq!(
        a["ips"][0]["address"], "172.16.1.35/27",
        "network, gateway and the PF's .34 are never leased"
    );
    assert_eq!(a["ips"][0]["gateway"], "172.16.1.33");
    let b = node.cni(&add_b).ok();
    assert_eq!(b["ips"][0]["address"], "172.16.1.36/27");
    assert!(sh_ok(&format!(
        "ip netns exec {} ping -c 1 -W 2 -M do -s 8972 172.16.1.33",
        Node::ns_of(&pa)
    )));
    let (_, status) = node.operator_json(&["status"]);
    assert_eq!(
        status["networks"][0]["prefix"], "172.16.1.32/27",
        "{status}"
    );
    assert_eq!(status["networks"][0]["source"], "pf pf1", "{status}");

    // The PF moved to another /27 while leases exist: refused, naming both.
    sh(&format!(
        "ip -n {host} addr flush dev pf1 && ip -n {host} addr add 172.16.2.66/27 dev pf1"
    ));
    let pc = node.pod("c");
    node.cni(&add_b.cmd("DEL")).ok();
    let err = node
        .cni(&Req::new("ADD", "c", &pc, "net1", add_b.conf.clone()))
        .err(7);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(
        msg.contains("172.16.1.32/27") && msg.contains("172.16.2.64/27"),
        "{msg}"
    );
    node.cni(&add_a.cmd("DEL")).ok();

    // A PF with no address inside cidr: 7, naming the PF and what it holds.
    sh(&format!(
        "ip -n {host} addr flush dev pf1 && ip -n {host} addr add 10.9.0.1/24 dev pf1"
    ));
    let err = node.cni(&add_a).err(7);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(
        msg.contains(
            "PF pf1 has no address inside cidr 172.16.0.0/16 (its addresses: 10.9.0.1/24)"
        ),
        "{msg}"
    );
    assert!(!node.record_exists(&node.vfs[0].pci), "nothing changed");
}

/// The leaf routes IPv6 too: forwarding, and `gw6` on each node's port.
fn leaf_ipv6(f: &Fabric, rail: u32, gateways: [&str; 2]) {
    let leaf = f.leaf();
    // A veth port loses carrier when its VF end moves, and the kernel then
    // re-runs duplicate detection on the port's own addresses: a real leaf
    // port sees no such flap, so the stand-in skips it.
    sh(&format!(
        "ip netns exec {leaf} sysctl -qw net.ipv6.conf.all.forwarding=1 net.ipv6.conf.all.accept_dad=0 \
         net.ipv6.conf.{a}.accept_dad=0 net.ipv6.conf.{b}.accept_dad=0",
        a = f.leaf_port("gpu-0", rail),
        b = f.leaf_port("gpu-1", rail)
    ));
    for (node, gw) in ["gpu-0", "gpu-1"].iter().zip(gateways) {
        sh(&format!(
            "ip -n {leaf} addr add {gw} dev {} nodad",
            f.leaf_port(node, rail)
        ));
    }
    // The leaf's ports just came up: a router answers neighbour
    // solicitations once its own link-local addresses are no longer tentative.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !String::from_utf8_lossy(&sh(&format!("ip -n {leaf} -6 addr show tentative")).stdout)
        .trim()
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the leaf's addresses stay tentative"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn ipv6_conf(f: &Fabric, node: &str) -> Value {
    let mut c = f.conf(node, 1);
    c["ipam"] = json!({"type": "railcni-ipam", "cidr": "fd00:16::/64", "nodes": {"gpu-0": 0, "gpu-1": 1},
                       "routes": [{"dst": "fd00::/16"}]});
    c
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_ipv6_only_rail_with_127s_attaches_pings_across_the_leaf_and_detaches_clean() {
    let f = Fabric::up_with(1);
    leaf_ipv6(&f, 1, ["fd00:16::1/127", "fd00:16::3/127"]);
    let (pa, pb) = (f.pod("pa"), f.pod("pb"));
    let a = f
        .cni_with("ADD", "gpu-0", &pa, 1, &ipv6_conf(&f, "gpu-0"))
        .ok();
    let b = f
        .cni_with("ADD", "gpu-1", &pb, 1, &ipv6_conf(&f, "gpu-1"))
        .ok();
    assert_eq!(
        (
            a["ips"][0]["address"].as_str(),
            a["ips"][0]["gateway"].as_str()
        ),
        (Some("fd00:16::/127"), Some("fd00:16::1"))
    );
    assert_eq!(b["ips"][0]["address"], "fd00:16::2/127");
    // Right after ADD: no tentative address, jumbo, don't fragment.
    assert!(
        sh_ok(&format!(
            "ip netns exec {pa} ping -6 -c 1 -W 2 -M do -s 8952 -I fd00:16:: fd00:16::2"
        )),
        "A -> B over IPv6 across the leaf"
    );
    let rules = String::from_utf8_lossy(&sh(&format!("ip -n {pa} -6 rule")).stdout).into_owned();
    assert!(rules.contains("from fd00:16:: lookup 1001"), "{rules}");
    let ra = sh(&format!(
        "ip netns exec {pa} sysctl -n net.ipv6.conf.net1.accept_dad net.ipv6.conf.net1.accept_ra net.ipv6.conf.net1.autoconf"
    ));
    assert_eq!(
        String::from_utf8_lossy(&ra.stdout),
        "0\n0\n0\n",
        "no DAD, router advertisements or SLAAC on a rail"
    );
    let tentative = sh(&format!("ip -n {pa} -6 addr show dev net1 tentative"));
    assert!(
        String::from_utf8_lossy(&tentative.stdout).trim().is_empty(),
        "nothing tentative after ADD"
    );
    f.cni_with("DEL", "gpu-0", &pa, 1, &ipv6_conf(&f, "gpu-0"))
        .ok();
    f.cni_with("DEL", "gpu-1", &pb, 1, &ipv6_conf(&f, "gpu-1"))
        .ok();
    let rules = String::from_utf8_lossy(&sh(&format!("ip -n {pa} -6 rule")).stdout).into_owned();
    assert!(!rules.contains("fd00:16"), "{rules}");
    assert!(link_in(&pa, "net1").is_none() && !f.record("gpu-0", 1).exists());
}

fn dual_conf(f: &Fabric, node: &str) -> Value {
    let mut c = f.conf(node, 1);
    c["ipam"] = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "routes": [{"dst": "172.16.0.0/12"}],
                       "ipv6": {"cidr": "fd00:16::/48", "perNodePrefix": 127, "gatewayIndex": 1, "routes": [{"dst": "fd00::/16"}]},
                       "nodes": {"gpu-0": 0, "gpu-1": 1}});
    c
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_dual_stack_rail_carries_both_families_from_the_moment_add_returns() {
    let f = Fabric::up_with(1);
    leaf_ipv6(&f, 1, ["fd00:16::1/127", "fd00:16::3/127"]);
    let (pa, pb) = (f.pod("pa"), f.pod("pb"));
    let a = f
        .cni_with("ADD", "gpu-0", &pa, 1, &dual_conf(&f, "gpu-0"))
        .ok();
    f.cni_with("ADD", "gpu-1", &pb, 1, &dual_conf(&f, "gpu-1"))
        .ok();
    let ips: Vec<&str> = a["ips"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|ip| ip["address"].as_str())
        .collect();
    assert_eq!(ips, ["172.16.0.0/31", "fd00:16::/127"]);
    assert!(
        sh_ok(&format!(
            "ip netns exec {pa} ping -c 1 -W 2 -M do -s 8972 -I 172.16.0.0 172.16.0.2"
        )),
        "IPv4 jumbo"
    );
    assert!(
        sh_ok(&format!(
            "ip netns exec {pa} ping -6 -c 1 -W 2 -M do -s 8952 -I fd00:16:: fd00:16::2"
        )),
        "IPv6 jumbo"
    );
    let (addr, rule4, rule6, table6) = (
        out(&format!("ip -n {pa} addr show dev net1")),
        out(&format!("ip -n {pa} rule")),
        out(&format!("ip -n {pa} -6 rule")),
        out(&format!("ip -n {pa} -6 route show table 1001")),
    );
    println!("ip addr:\n{addr}\nip rule:\n{rule4}\nip -6 rule:\n{rule6}\nip -6 route show table 1001:\n{table6}");
    assert!(
        rule4.contains("1001:\tfrom 172.16.0.0 lookup 1001"),
        "{rule4}"
    );
    assert!(
        rule6.contains("1001:\tfrom fd00:16:: lookup 1001"),
        "{rule6}"
    );
    assert!(
        table6.contains("fd00::/16 via fd00:16::1 dev net1"),
        "{table6}"
    );

    let conf = dual_conf(&f, "gpu-0");
    f.cni_with("CHECK", "gpu-0", &pa, 1, &with_prev(&conf, &a))
        .ok();
    sh(&format!("ip -n {pa} addr del fd00:16::/127 dev net1"));
    let err = f
        .cni_with("CHECK", "gpu-0", &pa, 1, &with_prev(&conf, &a))
        .err(107);
    assert!(
        err["details"]
            .as_str()
            .unwrap_or("")
            .contains("inet fd00:16::/127 is missing"),
        "{err}"
    );

    f.cni_with("DEL", "gpu-0", &pa, 1, &conf).ok();
    f.cni_with("DEL", "gpu-1", &pb, 1, &dual_conf(&f, "gpu-1"))
        .ok();
    assert!(!out(&format!("ip -n {pa} rule")).contains("172.16.0.0"));
    assert!(!out(&format!("ip -n {pa} -6 rule")).contains("fd00:16"));
    let leases: Value = serde_json::from_str(
        &std::fs::read_to_string(f.state("gpu-0").join("ipam/rail1.leases.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        leases["data"]["leases"],
        json!([]),
        "one lease held both addresses, and it is gone"
    );
}

/// NVIDIA's reference layout: a /64 per node per rail, host ::1, leaf ::2.
fn slash64_conf(f: &Fabric, node: &str, dual: bool) -> Value {
    let mut c = f.conf(node, 1);
    c["ipam"] = if dual {
        json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "routes": [{"dst": "172.16.0.0/12"}],
               "ipv6": {"cidr": "fd02:1::/40", "perNodePrefix": 64, "routes": [{"dst": "fd02::/16"}]},
               "nodes": {"gpu-0": 0, "gpu-1": 1}})
    } else {
        json!({"type": "railcni-ipam", "cidr": "fd02:1::/40", "perNodePrefix": 64,
               "nodes": {"gpu-0": 0, "gpu-1": 1}, "routes": [{"dst": "fd02::/16"}]})
    };
    c
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_ipv6_slash_64_rail_host_1_leaf_2_pings_across_the_leaf_and_detaches_clean() {
    for dual in [false, true] {
        let f = Fabric::up_with(1);
        leaf_ipv6(&f, 1, ["fd02:1::2/64", "fd02:1:0:1::2/64"]);
        let (pa, pb) = (f.pod("pa"), f.pod("pb"));
        let a = f
            .cni_with("ADD", "gpu-0", &pa, 1, &slash64_conf(&f, "gpu-0", dual))
            .ok();
        let b = f
            .cni_with("ADD", "gpu-1", &pb, 1, &slash64_conf(&f, "gpu-1", dual))
            .ok();
        let v6 = |r: &Value| {
            (r["ips"].as_array().unwrap().iter())
                .find(|ip| ip["address"].as_str().unwrap().contains(':'))
                .cloned()
                .unwrap()
        };
        assert_eq!(v6(&a)["address"], "fd02:1::1/64", "{a:#}");
        assert_eq!(v6(&a)["gateway"], "fd02:1::2");
        assert_eq!(v6(&b)["address"], "fd02:1:0:1::1/64");
        assert_eq!(a["ips"].as_array().unwrap().len(), if dual { 2 } else { 1 });
        assert!(
            sh_ok(&format!(
                "ip netns exec {pa} ping -6 -c 1 -W 2 -M do -s 8952 -I fd02:1::1 fd02:1:0:1::1"
            )),
            "A -> B over the /64s across the leaf, jumbo, don't fragment (dual {dual})"
        );
        if dual {
            assert!(sh_ok(&format!(
                "ip netns exec {pa} ping -c 1 -W 2 -M do -s 8972 -I 172.16.0.0 172.16.0.2"
            )));
        }
        let rules = out(&format!("ip -n {pa} -6 rule"));
        assert!(rules.contains("from fd02:1::1 lookup 1001"), "{rules}");
        let table = out(&format!("ip -n {pa} -6 route show table 1001"));
        assert!(table.contains("fd02::/16 via fd02:1::2"), "{table}");
        f.cni_with(
            "CHECK",
            "gpu-0",
            &pa,
            1,
            &with_prev(&slash64_conf(&f, "gpu-0", dual), &a),
        )
        .ok();
        f.cni_with("DEL", "gpu-0", &pa, 1, &slash64_conf(&f, "gpu-0", dual))
            .ok();
        f.cni_with("DEL", "gpu-1", &pb, 1, &slash64_conf(&f, "gpu-1", dual))
            .ok();
        assert!(!out(&format!("ip -n {pa} -6 rule")).contains("fd02:1"));
        assert!(link_in(&pa, "net1").is_none() && !f.record("gpu-0", 1).exists());
    }
}
