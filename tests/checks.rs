//! ADD's rail checks on the fabric (two nodes, a leaf holding the /31
//! gateways): a gateway that does not answer, an address someone else
//! holds, with `require` (error 108, nothing left behind) and `warn`.
//! `tests/probe.rs` covers `railcnictl probe`. Needs root.

mod common;

use common::fabric::Fabric;
use common::*;
use serde_json::{json, Value};

fn with_checks(f: &Fabric, checks: Value) -> Value {
    let mut c = f.conf("gpu-0", 1);
    c["checks"] = checks;
    c["logFile"] = json!("checks.log");
    c
}

fn leases(f: &Fabric) -> String {
    std::fs::read_to_string(f.state("gpu-0").join("ipam/rail1.leases.json")).unwrap_or_default()
}

/// Nothing of the attachment is left: VF home, no record, no lease, no rule.
fn nothing_left(f: &Fabric, pod: &str) {
    let vf = &f.vf("gpu-0", 1).vf;
    assert!(
        link_in(&f.host("gpu-0"), &vf.ifname).is_some(),
        "VF home as {}",
        vf.ifname
    );
    assert!(link_in(pod, "net1").is_none(), "no net1 in the pod");
    assert!(!f.record("gpu-0", 1).exists(), "no record");
    assert!(!leases(f).contains(pod), "no lease: {}", leases(f));
    let rules = String::from_utf8_lossy(&sh(&format!("ip -n {pod} rule")).stdout).into_owned();
    assert!(!rules.contains("172.16.0.0"), "no rule: {rules}");
}

fn log(f: &Fabric) -> String {
    std::fs::read_to_string(f.dir.path().join("logs/checks.log")).unwrap_or_default()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_silent_gateway_fails_a_required_check_and_warns_otherwise() {
    let f = Fabric::up_with(1);
    let pod = f.pod("pa");
    let gw = f.vf("gpu-0", 1).gateway.clone();
    sh(&format!(
        "ip -n {} addr del {gw}/31 dev {}",
        f.leaf(),
        f.leaf_port("gpu-0", 1)
    ));

    let conf = with_checks(
        &f,
        json!({"gateway": "require", "timeoutMs": 300, "retries": 3}),
    );
    // How long the check's budget takes is the bench's business
    // (scripts/bench-checks.sh); here: it fails, naming what it saw.
    let err = f.cni_with("ADD", "gpu-0", &pod, 1, &conf).err(108);
    let msg = err["details"].as_str().unwrap_or_default();
    let pci = &f.vf("gpu-0", 1).vf.pci;
    for part in [
        "network rail1",
        "net1",
        pci.as_str(),
        &format!("gateway {gw} does not answer ARP"),
    ] {
        assert!(msg.contains(part), "{part}: {msg}");
    }
    assert_eq!(err["msg"], "rail check failed");
    nothing_left(&f, &pod);

    let conf = with_checks(&f, json!({"gateway": "warn", "timeoutMs": 150}));
    f.cni_with("ADD", "gpu-0", &pod, 1, &conf).ok();
    assert!(
        log(&f)
            .lines()
            .any(|l| l.contains(" warning ")
                && l.contains(&format!("gateway {gw} does not answer ARP"))),
        "{}",
        log(&f)
    );
    f.cni_with("DEL", "gpu-0", &pod, 1, &conf).ok();

    // The gateway back: the required check passes.
    sh(&format!(
        "ip -n {} addr add {gw}/31 dev {}",
        f.leaf(),
        f.leaf_port("gpu-0", 1)
    ));
    let conf = with_checks(
        &f,
        json!({"gateway": "require", "addressConflict": "require"}),
    );
    f.cni_with("ADD", "gpu-0", &pod, 1, &conf).ok();
    f.cni_with("DEL", "gpu-0", &pod, 1, &conf).ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_address_held_elsewhere_fails_naming_the_mac_that_answered() {
    let f = Fabric::up_with(1);
    let pod = f.pod("pa");
    let ours = f.vf("gpu-0", 1).address.clone();
    let port = f.leaf_port("gpu-0", 1);
    sh(&format!("ip -n {} addr add {ours}/32 dev {port}", f.leaf()));
    let leaf_mac = link_in(&f.leaf(), &port).unwrap().mac;

    let conf = with_checks(&f, json!({"addressConflict": "require", "timeoutMs": 300}));
    let err = f.cni_with("ADD", "gpu-0", &pod, 1, &conf).err(108);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(
        msg.contains(&format!("address {ours} is already in use by {leaf_mac}")),
        "{msg}"
    );
    nothing_left(&f, &pod);

    let conf = with_checks(&f, json!({"addressConflict": "warn", "timeoutMs": 150}));
    f.cni_with("ADD", "gpu-0", &pod, 1, &conf).ok();
    assert!(
        log(&f).contains(&format!("already in use by {leaf_mac}")),
        "{}",
        log(&f)
    );
    f.cni_with("DEL", "gpu-0", &pod, 1, &conf).ok();
}

/// With both checks off (the default) ADD opens no packet socket at all;
/// with one on, it does (strace's view of the plugin).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn checks_off_open_no_socket() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    let trace = node.dir.path().join("sockets.trace");
    for (checks, packet_socket) in [
        (json!({}), false),
        (json!({"gateway": "warn", "timeoutMs": 30}), true),
    ] {
        let mut c = conf("1.1.0", "rail1", &vf.pci, Node::embedded_ipam(1));
        c["checks"] = checks;
        let mut add = Req::new("ADD", "c1", &pod, "net1", c);
        add.wrap = ["strace", "-f", "-qq", "-e", "trace=socket", "-o"]
            .iter()
            .map(|s| s.to_string())
            .chain([trace.display().to_string()])
            .collect();
        node.cni(&add).ok();
        let traced = std::fs::read_to_string(&trace).unwrap();
        assert_eq!(traced.contains("AF_PACKET"), packet_socket, "{traced}");
        let mut del = add.cmd("DEL");
        del.wrap.clear();
        node.cni(&del).ok();
    }
}
