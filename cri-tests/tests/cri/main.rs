//! railcni as containerd's network, driven through CRI as kubelet drives
//! it: the pod lifecycles operators meet (README, "Container runtimes").
//! Needs root; containerd 1.6 from Debian.

#[path = "../../../tests/common/mod.rs"]
mod common;
mod harness;

use std::path::Path;

use common::*;
use harness::Containerd;
use serde_json::{json, Value};

/// A node-local conflist, as containerd loads it: railcni on one VF with
/// the embedded IPAM (gpu-0's /31 on rail 1: one address, 172.16.0.0).
fn conflist(vf: &FakeVf, version: &str) -> Value {
    json!({
        "cniVersion": version,
        "name": "rail1",
        "plugins": [{
            "type": "railcni",
            "deviceID": vf.pci,
            "logFile": "containerd.log",
            "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15",
                     "nodes": ["gpu-0"], "routes": [{"dst": "172.16.0.0/12"}]}
        }]
    })
}

/// The node as it was before the pod: VF home under its name and MTU, no
/// record, no lease.
fn nothing_left(node: &Node, vf: &FakeVf) {
    let link =
        link_in(&node.host(), &vf.ifname).unwrap_or_else(|| panic!("{} is not home", vf.ifname));
    assert_eq!(link.mtu, 1500, "the VF's own MTU is back");
    assert!(!node.record_exists(&vf.pci), "no record");
    let leases = std::fs::read_to_string(node.state_dir().join("ipam/rail1.leases.json"))
        .unwrap_or_default();
    let leases: Value = serde_json::from_str(&leases).unwrap_or(json!({}));
    assert!(
        leases["data"]["leases"]
            .as_array()
            .is_none_or(|l| l.is_empty()),
        "no lease: {leases}"
    );
}

#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn run_stop_remove_and_run_again_gets_the_same_address() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    let id = ctr
        .run("trainer-0")
        .unwrap_or_else(|e| panic!("{e}\n{}", ctr.log()));
    let (state, ip, netns) = ctr.status(&id);
    assert_eq!(state, 0, "READY");
    assert_eq!(ip, "172.16.0.0", "gpu-0's /31 (the leaf holds .1)");
    let ns = Node::ns_of(&netns);
    let eth0 = link_in(&ns, "eth0").expect("the VF is the pod's eth0");
    assert_eq!(eth0.mtu, 9000);
    assert_eq!(addresses_in(&ns, "eth0"), ["172.16.0.0/31"]);
    ctr.stop(&id).unwrap();
    nothing_left(&node, &vf);
    ctr.remove(&id).unwrap();
    nothing_left(&node, &vf);
    // Stop's DEL has the netns, Remove's has none and changes nothing.
    let calls = ctr.calls();
    println!(
        "CNI calls of one pod's life under containerd:\n{}",
        calls.join("\n")
    );
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(
        calls[0].starts_with(&format!("ADD netns={netns} ifname=eth0")),
        "{calls:?}"
    );
    assert!(
        calls[1].starts_with(&format!("DEL netns={netns} ifname=eth0")),
        "{calls:?}"
    );
    assert!(calls[2].starts_with("DEL netns= ifname=eth0"), "{calls:?}");
    let again = ctr.run("trainer-1").unwrap();
    assert_eq!(ctr.status(&again).1, "172.16.0.0", "the same address again");
    ctr.stop(&again).unwrap();
    ctr.remove(&again).unwrap();
    nothing_left(&node, &vf);
}

/// An ADD that fails (an MTU above the PF's) is rolled back by containerd's
/// own DEL; the sandbox is gone and the node is as before.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_failed_add_is_rolled_back_and_the_sandbox_is_gone() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let mut conf = conflist(&vf, "1.0.0");
    conf["plugins"][0]["mtu"] = json!(9100);
    let ctr = Containerd::start(&node, &conf);
    let err = ctr.run("trainer-0").unwrap_err();
    assert!(err.contains("9100 is above the MTU 9000"), "{err}");
    assert!(ctr.list().is_empty(), "no sandbox left: {:?}", ctr.list());
    let calls = ctr.calls();
    assert!(
        calls.first().is_some_and(|c| c.starts_with("ADD"))
            && calls.iter().any(|c| c.starts_with("DEL")),
        "{calls:?}"
    );
    nothing_left(&node, &vf);
}

/// A pod whose `railcni.io/device-id` annotation is malformed: ADD refuses
/// it (7), containerd tears the sandbox down with DEL and the same config,
/// and that DEL answers 0, so no sandbox is left listed and its network
/// namespace is gone (a DEL answering 7 again left it NOTREADY for good).
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_pod_refused_for_a_malformed_device_annotation_leaves_no_sandbox_or_netns() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let mut conf = conflist(&vf, "1.0.0");
    conf["plugins"][0]
        .as_object_mut()
        .unwrap()
        .remove("deviceID");
    conf["plugins"][0]["capabilities"] = json!({"io.kubernetes.cri.pod-annotations": true});
    let ctr = Containerd::start(&node, &conf);
    let err = ctr
        .run_annotated(
            "trainer-0",
            &[("railcni.io/device-id", "not-a-pci-address")],
        )
        .unwrap_err();
    assert!(err.contains("railcni.io/device-id"), "{err}");
    assert!(ctr.list().is_empty(), "no sandbox left: {:?}", ctr.list());
    let calls = ctr.calls();
    let add = calls
        .iter()
        .find(|c| c.starts_with("ADD"))
        .unwrap_or_else(|| panic!("{calls:?}"));
    let netns = add
        .trim_start_matches("ADD netns=")
        .split(' ')
        .next()
        .unwrap();
    assert!(
        !netns.is_empty() && !Path::new(netns).exists(),
        "the sandbox's netns {netns} is gone: {calls:?}"
    );
    assert!(calls.iter().any(|c| c.starts_with("DEL")), "{calls:?}");
    nothing_left(&node, &vf);
}

/// containerd killed (SIGKILL) and restarted while a pod lives: no CNI call
/// at all, the pod keeps its VF and address; stop and remove bring it home.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_containerd_crash_leaves_the_pod_attached_and_stop_still_cleans_up() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let mut ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    let id = ctr.run("trainer-0").unwrap();
    let (_, _, netns) = ctr.status(&id);
    ctr.kill();
    ctr.restart();
    assert_eq!(
        ctr.calls().len(),
        1,
        "a restart makes no CNI call: {:?}",
        ctr.calls()
    );
    assert_eq!(
        addresses_in(&Node::ns_of(&netns), "eth0"),
        ["172.16.0.0/31"],
        "the pod keeps its VF"
    );
    assert_eq!(ctr.status(&id).0, 0, "still READY");
    ctr.stop(&id).unwrap();
    ctr.remove(&id).unwrap();
    nothing_left(&node, &vf);
}

/// The pod's pause dies while containerd is down: after the restart the
/// sandbox is NOTREADY with its pinned netns; stop and remove bring the VF
/// home and the next pod gets the address.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_pause_that_died_while_containerd_was_down_is_cleaned_up_by_stop() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let mut ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    let id = ctr.run("trainer-0").unwrap();
    let ns = Node::ns_of(&ctr.status(&id).2);
    ctr.kill();
    // This pod's pause only (other tests' pods run beside it).
    let pids = String::from_utf8_lossy(&sh(&format!("ip netns pids {ns}")).stdout).into_owned();
    assert!(!pids.trim().is_empty(), "the pause runs in {ns}");
    for pid in pids.split_whitespace() {
        sh(&format!("kill -KILL {pid}"));
    }
    ctr.restart();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while ctr.status(&id).0 == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sandbox never became NOTREADY"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(ctr.status(&id).0, 1, "NOTREADY");
    ctr.stop(&id).unwrap();
    ctr.remove(&id).unwrap();
    nothing_left(&node, &vf);
    let next = ctr.run("trainer-1").unwrap();
    assert_eq!(ctr.status(&next).1, "172.16.0.0");
}

/// DEL runs with the conflist loaded now, not the one ADD ran with:
/// everything still comes back, from the record.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_conflist_edited_between_add_and_del_still_returns_everything() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    let id = ctr.run("trainer-0").unwrap();
    let mut edited = conflist(&vf, "1.0.0");
    edited["plugins"][0]["logLevel"] = json!("debug");
    edited["plugins"][0]["ipam"]["routes"] = json!([{"dst": "10.0.0.0/8"}]);
    ctr.set_conflist(&edited);
    std::thread::sleep(std::time::Duration::from_millis(300));
    ctr.stop(&id).unwrap();
    ctr.remove(&id).unwrap();
    nothing_left(&node, &vf);
}

/// Twenty pods run and removed in a loop: nothing leaks.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn twenty_sandboxes_in_a_row_leak_nothing() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    for i in 0..20 {
        let id = ctr
            .run(&format!("trainer-{i}"))
            .unwrap_or_else(|e| panic!("{i}: {e}"));
        assert_eq!(ctr.status(&id).1, "172.16.0.0", "pod {i}");
        ctr.stop(&id).unwrap();
        ctr.remove(&id).unwrap();
    }
    nothing_left(&node, &vf);
    assert!(std::fs::read_dir(node.state_dir().join("attachments"))
        .unwrap()
        .next()
        .is_none());
    let temps = sh(&format!(
        "find {} -name '*.tmp'",
        node.state_dir().display()
    ));
    assert!(
        String::from_utf8_lossy(&temps.stdout).trim().is_empty(),
        "no temp file left"
    );
}

/// containerd 1.6's libcni reads results up to 1.0.0: a 1.1.0 conflist's
/// result is refused, containerd rolls the ADD back with DEL, and the
/// node is as before. railcni's answer is the spec's (a 1.1.0 result).
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn a_1_1_0_conflist_is_refused_by_containerd_1_6_and_rolled_back() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let ctr = Containerd::start(&node, &conflist(&vf, "1.1.0"));
    let err = ctr.run("trainer-0").unwrap_err();
    println!("containerd 1.6 with a 1.1.0 conflist: {err}");
    assert!(err.contains("1.1.0"), "{err}");
    assert!(ctr.list().is_empty());
    nothing_left(&node, &vf);
}

/// What `scripts/demo-containerd.sh` shows: a pod sandbox through
/// containerd's CRI on a fake VF, `railcnictl status` and `inspect` while it
/// runs, jumbo don't-fragment pings to the leaf's gateway, then stop and
/// remove with nothing left.
#[test]
#[ignore = "root: containerd CRI; scripts/test.sh runs it"]
fn demo_a_pod_through_containerds_cri() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    sh(&format!(
        "ip -n {} addr add 172.16.0.1/31 dev r1v0",
        node.fabric()
    ));
    let ctr = Containerd::start(&node, &conflist(&vf, "1.0.0"));
    let started = std::time::Instant::now();
    let id = ctr.run("trainer-0").unwrap();
    println!("demo: RunPodSandbox {id} took {:?}", started.elapsed());
    let (state, ip, netns) = ctr.status(&id);
    println!("demo: PodSandboxStatus: state {state} (0 = READY), ip {ip}, netns {netns}");
    let (code, status, _) = node.operator(&["status"]);
    println!("demo: railcnictl status (exit {code}):\n{status}");
    assert_eq!(code, 0);
    assert!(status.contains("172.16.0.0/31"), "{status}");
    let (code, inspect, _) = node.operator(&["inspect", &netns]);
    println!("demo: railcnictl inspect {netns} (exit {code}):\n{inspect}");
    assert_eq!(code, 0);
    let ping = sh(&format!(
        "ip netns exec {} ping -c 3 -i 0.2 -M do -s 8972 172.16.0.1",
        Node::ns_of(&netns)
    ));
    println!(
        "demo: ping -M do -s 8972 172.16.0.1 from the pod:\n{}",
        String::from_utf8_lossy(&ping.stdout)
    );
    assert!(ping.status.success());
    let started = std::time::Instant::now();
    ctr.stop(&id).unwrap();
    println!("demo: StopPodSandbox took {:?}", started.elapsed());
    ctr.remove(&id).unwrap();
    nothing_left(&node, &vf);
    println!(
        "demo: CNI calls containerd made:\n{}",
        ctr.calls().join("\n")
    );
    println!("demo: {} is home, no record, no lease", vf.ifname);
}
