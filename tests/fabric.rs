//! Rail routing proven with real packets: two fake GPU nodes, two rails, one
//! pod per node, and a leaf namespace holding every /31 gateway
//! (scripts/fabric.sh). Needs root (CI is root).

mod common;

use common::fabric::Fabric;
use common::*;

fn ping(ns: &str, args: &str, dst: &str) -> bool {
    sh_ok(&format!(
        "ip netns exec {ns} ping -q -c 1 -W 2 {args} {dst}"
    ))
}

fn rules_from(ns: &str, addr: &str) -> Vec<String> {
    out(&format!("ip -n {ns} rule show"))
        .lines()
        .filter(|l| l.contains(&format!("from {addr} ")))
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_nodes_two_rails_real_packets_through_the_leaf() {
    let f = Fabric::up();
    let (pa, pb) = (f.pod("pa"), f.pod("pb"));
    // The cluster network: eth0 with the pod's only default route.
    let cluster = f.pod("cluster");
    sh(&format!(
        "ip -n {pa} link add eth0 type veth peer name podA netns {cluster} && \
         ip -n {pa} addr add 10.99.0.2/24 dev eth0 && ip -n {pa} link set eth0 up && \
         ip -n {cluster} addr add 10.99.0.1/24 dev podA && ip -n {cluster} link set podA up && \
         ip -n {pa} route add default via 10.99.0.1"
    ));
    for (node, pod) in [("gpu-0", &pa), ("gpu-1", &pb)] {
        for rail in [1, 2] {
            let r = f.cni("ADD", node, pod, rail).ok();
            assert_eq!(r["interfaces"][0]["mtu"], 9000);
            let routes = r["routes"].as_array().unwrap();
            assert!(routes.iter().any(|rt| rt["table"] == 1000 + rail), "{r}");
            assert!(
                !routes
                    .iter()
                    .any(|rt| rt["dst"].as_str().unwrap().ends_with("/0")),
                "no default route on a rail"
            );
        }
    }
    let addr = |node: &str, rail: u32| f.vf(node, rail).address.clone();
    let gw = |node: &str, rail: u32| f.vf(node, rail).gateway.clone();

    // Jumbo, don't-fragment, same rail, every rail, both directions.
    for rail in [1, 2] {
        assert!(
            ping(
                &pa,
                &format!("-M do -s 8972 -I {}", addr("gpu-0", rail)),
                &addr("gpu-1", rail)
            ),
            "rail {rail} A->B"
        );
        assert!(
            ping(
                &pb,
                &format!("-M do -s 8972 -I {}", addr("gpu-1", rail)),
                &addr("gpu-0", rail)
            ),
            "rail {rail} B->A"
        );
    }
    // Cross-rail through the rail table's supernet route.
    assert!(ping(
        &pa,
        &format!("-M do -s 8972 -I {}", addr("gpu-0", 1)),
        &addr("gpu-1", 2)
    ));
    assert!(ping(
        &pa,
        &format!("-I {}", addr("gpu-0", 2)),
        &addr("gpu-1", 1)
    ));

    // Every (source rail, destination) pair leaves through the source rail.
    for src in [1, 2] {
        for dst in [1, 2] {
            let route = out(&format!(
                "ip -n {pa} route get {} from {}",
                addr("gpu-1", dst),
                addr("gpu-0", src)
            ));
            assert!(
                route.contains(&format!("via {} dev net{src}", gw("gpu-0", src))),
                "net{src}->rail{dst}: {route}"
            );
        }
    }
    // Unbound sockets reach same-rail peers through the rail, not eth0.
    for rail in [1, 2] {
        let route = out(&format!("ip -n {pa} route get {}", addr("gpu-1", rail)));
        assert!(
            route.contains(&format!("dev net{rail}")) && !route.contains("eth0"),
            "{route}"
        );
        assert!(ping(&pa, "", &addr("gpu-1", rail)));
    }
    // Rail-table lookups never fall through to eth0's default route.
    let via_rail_table = out(&format!("ip -n {pa} route show table 1001"));
    assert!(
        !via_rail_table.contains("default") && !via_rail_table.contains("eth0"),
        "{via_rail_table}"
    );

    // CHECK verifies rules, routes and sysctls, and says what differs.
    let prev = f.cni("ADD", "gpu-1", &pb, 1).ok();
    let check = |f: &Fabric| {
        let mut conf = f.conf("gpu-1", 1);
        conf["prevResult"] = prev.clone();
        f.cni_with("CHECK", "gpu-1", &pb, 1, &conf)
    };
    check(&f).ok();
    sh(&format!(
        "ip netns exec {pb} sh -c 'echo 0 > /proc/sys/net/ipv4/conf/net1/rp_filter'"
    ));
    let e = check(&f).err(107);
    assert!(
        e["details"]
            .as_str()
            .unwrap()
            .contains("rp_filter is 0, expected 2"),
        "{e}"
    );
    sh(&format!(
        "ip netns exec {pb} sh -c 'echo 2 > /proc/sys/net/ipv4/conf/net1/rp_filter'"
    ));
    sh(&format!("ip -n {pb} rule del priority 1001"));
    let e = check(&f).err(107);
    assert!(
        e["details"]
            .as_str()
            .unwrap()
            .contains("rule from 172.16.0.2/32 lookup 1001 prio 1001 is missing"),
        "{e}"
    );
    // A repeated ADD after a crash before ADD finished: no duplicate rules.
    let rec = std::fs::read_to_string(f.record("gpu-1", 1))
        .unwrap()
        .replace("\"attached\"", "\"adding\"");
    std::fs::write(f.record("gpu-1", 1), rec).unwrap();
    f.cni("ADD", "gpu-1", &pb, 1).ok();
    f.cni("ADD", "gpu-1", &pb, 1).ok();
    assert_eq!(
        rules_from(&pb, &addr("gpu-1", 1)).len(),
        1,
        "{:?}",
        rules_from(&pb, &addr("gpu-1", 1))
    );
    check(&f).ok();

    // DEL of pod A (its namespace still alive) leaves no rule and no table route.
    for rail in [1, 2] {
        f.cni("DEL", "gpu-0", &pa, rail).ok();
        assert!(rules_from(&pa, &addr("gpu-0", rail)).is_empty());
        assert_eq!(
            out(&format!("ip -n {pa} route show table {}", 1000 + rail)).trim(),
            ""
        );
        // Pod A's eth0 took ifindex 2, so the kernel renumbered the VF on the
        // way in; DEL must still recognise it and bring it home.
        assert!(
            link_in(&f.host("gpu-0"), &format!("pf{rail}v0")).is_some(),
            "VF of rail {rail} is home"
        );
    }
    let left = out(&format!("ip -n {pa} rule show"));
    assert!(
        left.lines()
            .all(|l| !l.contains("lookup 1001") && !l.contains("lookup 1002")),
        "no rail rule of any source is left in pod A: {left}"
    );
    // Pod B is unaffected.
    for rail in [1, 2] {
        assert_eq!(rules_from(&pb, &addr("gpu-1", rail)).len(), 1);
        assert!(ping(
            &pb,
            &format!("-M do -s 8972 -I {}", addr("gpu-1", rail)),
            &gw("gpu-1", rail)
        ));
    }

    // The address comes back to a new attachment in the same namespace and
    // meets a stale rule left there: ADD replaces it.
    sh(&format!(
        "ip -n {pa} rule add from {} lookup 777 priority 900",
        addr("gpu-0", 1)
    ));
    f.cni("ADD", "gpu-0", &pa, 1).ok();
    let rules = rules_from(&pa, &addr("gpu-0", 1));
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(rules[0].starts_with("1001:"), "{rules:?}");
    assert!(ping(
        &pa,
        &format!("-I {}", addr("gpu-0", 1)),
        &addr("gpu-1", 1)
    ));
}
