//! `railcnictl probe` on the fabric: two nodes, two rails, a pod on each node
//! with a VF on every rail, and the leaf between them. A healthy pod probes
//! clean, its peers on the other node included; a leaf port cut to MTU 1500
//! is named as an MTU black hole on that rail only; a gateway gone from the
//! leaf is named as such. Needs root.

mod common;

use common::fabric::Fabric;
use common::*;
use serde_json::Value;

fn probe(f: &Fabric, args: &[&str]) -> (i32, Value, String) {
    let mut all = vec!["probe"];
    all.extend_from_slice(args);
    let (code, _, err) = f.operator("gpu-0", &all);
    all.push("--json");
    let (json_code, out, _) = f.operator("gpu-0", &all);
    assert_eq!(
        code, json_code,
        "the table and --json agree on the exit code"
    );
    let (_, table, _) = f.operator("gpu-0", &all[..all.len() - 1]);
    (
        code,
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}")),
        table,
    )
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_healthy_pod_probes_clean_and_a_1500_hop_is_an_mtu_black_hole_on_that_rail_only() {
    let f = Fabric::up_with(2);
    let (pa, pb) = (f.pod("pa"), f.pod("pb"));
    for rail in 1..=2 {
        f.cni("ADD", "gpu-0", &pa, rail).ok();
        f.cni("ADD", "gpu-1", &pb, rail).ok();
    }
    let peers = format!("{},{}", f.vf("gpu-1", 1).address, f.vf("gpu-1", 2).address);
    let (code, report, table) = probe(&f, &[&pa, "--peers", &peers]);
    assert_eq!(code, 0, "{report}\n{table}");
    println!("{table}");
    let rails = report["rails"].as_array().unwrap();
    assert_eq!(rails.len(), 2);
    for (i, rail) in rails.iter().enumerate() {
        let n = i as u32 + 1;
        assert_eq!(rail["ifname"], format!("net{n}"));
        assert_eq!(
            (rail["up"].as_bool(), rail["mtu"].as_u64()),
            (Some(true), Some(9000))
        );
        let targets = rail["targets"].as_array().unwrap();
        assert_eq!(targets.len(), 2, "the gateway and this rail's peer: {rail}");
        assert_eq!(targets[0]["address"], f.vf("gpu-0", n).gateway.as_str());
        assert!(
            targets[0]["neighbour"]
                .as_str()
                .is_some_and(|m| m.len() == 17),
            "{rail}"
        );
        assert_eq!(
            targets[1]["address"],
            f.vf("gpu-1", n).address.as_str(),
            "the peer on its own rail"
        );
        for t in targets {
            assert_eq!(
                (t["df1500"].as_str(), t["full"].as_str()),
                (Some("ok"), Some("ok")),
                "{t}"
            );
            assert_eq!(t["size"], 9000);
        }
    }

    sh(&format!(
        "ip -n {} link set {} mtu 1500",
        f.leaf(),
        f.leaf_port("gpu-0", 2)
    ));
    let (code, report, table) = probe(&f, &[&pa, "--peers", &peers]);
    assert_eq!(code, 1, "{report}");
    println!("{table}");
    let problems: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let gw2 = &f.vf("gpu-0", 2).gateway;
    let want = format!(
        "rail2 net2: MTU black hole towards {gw2}: 1500-byte pings pass, 9000-byte don't-fragment pings get no answer (a hop on the path has a smaller MTU)"
    );
    assert!(problems.contains(&want.as_str()), "{problems:#?}");
    assert!(
        problems.iter().all(|p| p.starts_with("rail2 net2")),
        "rail1 is fine: {problems:#?}"
    );
    assert!(table.contains(&want), "the table says it too:\n{table}");
    sh(&format!(
        "ip -n {} link set {} mtu 9000",
        f.leaf(),
        f.leaf_port("gpu-0", 2)
    ));

    let gw1 = &f.vf("gpu-0", 1).gateway;
    sh(&format!(
        "ip -n {} addr del {gw1}/31 dev {}",
        f.leaf(),
        f.leaf_port("gpu-0", 1)
    ));
    let (code, report, _) = probe(&f, &[&pa]);
    assert_eq!(code, 1);
    let problems = report["problems"].to_string();
    assert!(
        problems.contains(&format!(
            "rail1 net1: gateway {gw1} does not answer ARP (cable, switch port or VLAN)"
        )),
        "{problems}"
    );
    assert_eq!(
        f.operator("gpu-0", &["probe", "no-such-pod"]).0,
        2,
        "bad usage"
    );
    for rail in 1..=2 {
        f.cni("DEL", "gpu-0", &pa, rail).ok();
        f.cni("DEL", "gpu-1", &pb, rail).ok();
    }
}
