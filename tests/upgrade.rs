//! A node's binaries are replaced while pods live: this build must read and
//! tear down what the previous release wrote. `tests/fixtures/state/<v>/`
//! keeps golden copies of each release's formats (see its README); a
//! format change adds a directory, never rewrites one. Needs root.
//!
//! The test attaches a VF with this build (so the kernel holds what that
//! release set up: the same plan), puts the old release's record and lease
//! file in place of this build's, with the live values (netns identity,
//! ifindex, MAC) filled in, and then CHECKs, lists, GCs and DELs with this
//! build.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state");

/// The old release's conf for the fixture's attachment.
fn fixture_conf(pci: &str) -> Value {
    json!({"cniVersion": "1.1.0", "name": "rail1", "type": "railcni", "deviceID": pci, "mtu": 9000,
           "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": {"gpu-0": 0},
                    "routes": [{"dst": "172.16.0.0/12"}]}})
}

/// Fill a fixture template with the live attachment's values.
fn fill(template: &str, live: &Value) -> String {
    template
        .replace("@NETNS@", live["netns"].as_str().unwrap())
        .replace("@NETNS_DEV@", &live["netnsId"]["dev"].to_string())
        .replace("@NETNS_INO@", &live["netnsId"]["ino"].to_string())
        .replace("@MAC@", live["host"]["mac"].as_str().unwrap())
        .replace("@IFINDEX@", &live["host"]["ifindex"].to_string())
        .replace("@POD_IFINDEX@", &live["podIfindex"].to_string())
}

/// Put release `v`'s record and lease file in place of this build's.
fn install_fixture(node: &Node, v: &str, pci: &str) -> Value {
    let record_path = node.state_dir().join(format!("attachments/{pci}.json"));
    let live: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    let dir = Path::new(FIXTURES).join(v);
    let record = fill(
        &std::fs::read_to_string(dir.join("attachment.json.tmpl")).unwrap(),
        &live,
    );
    std::fs::write(&record_path, &record).unwrap();
    let leases = fill(
        &std::fs::read_to_string(dir.join("rail1.leases.json.tmpl")).unwrap(),
        &live,
    );
    let data =
        &leases[leases.find("\"data\":").unwrap() + "\"data\":".len()..leases.rfind('}').unwrap()];
    let leases = leases.replace("@CHECKSUM@", &fnv1a64(minify(data).as_bytes()));
    std::fs::write(node.state_dir().join("ipam/rail1.leases.json"), leases).unwrap();
    serde_json::from_str(&record).unwrap()
}

/// The fixture's node: one VF, the boot the fixture was captured in, a pod.
fn fixture_node() -> (Node, FakeVf, String) {
    let node = Node::new(1, 1);
    node.reboot("boot-fixture");
    let vf = node.vfs[0].clone();
    let pod = node.pod("fixture");
    (node, vf, pod)
}

fn lease_file(node: &Node) -> PathBuf {
    node.state_dir().join("ipam/rail1.leases.json")
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn v1_state_is_read_checked_listed_gced_and_torn_down() {
    let (node, vf, pod) = fixture_node();
    let mut add = Req::new("ADD", "fixture-pod", &pod, "net1", fixture_conf(&vf.pci));
    add.args =
        Some("IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_UID=1234".into());
    node.cni(&add).ok();
    let record = install_fixture(&node, "v1", &vf.pci);

    // CHECK with the result the old release returned.
    let prev = record["result"].clone();
    node.cni(&add.cmd("CHECK").with_conf(with_prev(&add.conf, &prev)))
        .ok();
    // Listed, nothing wrong; GC (the runtime's and the operator's) keeps it.
    let (code, status) = node.operator_json(&["status"]);
    assert_eq!(code, 0, "{status}");
    assert_eq!(status["attachments"][0]["address"], "172.16.0.0/31");
    assert_eq!(status["attachments"][0]["pod"], "ml/trainer-0");
    assert_eq!(status["networks"][0]["leased"], 1);
    let mut gc = add.cmd("GC");
    gc.conf["cni.dev/valid-attachments"] =
        json!([{"containerID": "fixture-pod", "ifname": "net1"}]);
    node.cni(&gc).ok();
    assert!(
        node.record_exists(&vf.pci),
        "a valid attachment survives GC"
    );
    assert_eq!(node.operator(&["gc", "--apply"]).0, 0, "nothing to do");
    let (code, inspect) = node.operator_json(&["inspect", "fixture-pod"]);
    assert_eq!(code, 0, "{inspect}");

    // DEL with this build: everything back.
    node.cni(&add.cmd("DEL")).ok();
    assert!(!node.record_exists(&vf.pci));
    assert!(link_in(&node.host(), &vf.ifname).is_some_and(|l| l.mtu == 1500));
    assert!(!std::fs::read_to_string(lease_file(&node))
        .unwrap()
        .contains("fixture-pod"));
    let rules = String::from_utf8_lossy(&sh(&format!("ip -n {} rule", Node::ns_of(&pod))).stdout)
        .into_owned();
    assert!(!rules.contains("172.16.0.0"), "{rules}");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_v1_attachment_whose_pod_died_across_the_upgrade_is_given_back() {
    let (node, vf, pod) = fixture_node();
    let add = Req::new("ADD", "fixture-pod", &pod, "net1", fixture_conf(&vf.pci));
    node.cni(&add).ok();
    install_fixture(&node, "v1", &vf.pci);
    node.kill_pod(&pod, &[(&vf, "net1")]);
    let (code, done) = node.operator_json(&["gc", "--apply"]);
    assert_eq!(code, 0, "{done}");
    assert!(!node.record_exists(&vf.pci));
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "home under its name"
    );
    assert!(!std::fs::read_to_string(lease_file(&node))
        .unwrap()
        .contains("fixture-pod"));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn state_from_a_newer_release_is_refused_naming_both_versions() {
    let (node, vf, pod) = fixture_node();
    let add = Req::new("ADD", "fixture-pod", &pod, "net1", fixture_conf(&vf.pci));
    node.cni(&add).ok();
    let record_path = node
        .state_dir()
        .join(format!("attachments/{}.json", vf.pci));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["version"] = json!(2);
    std::fs::write(&record_path, record.to_string()).unwrap();
    let err = node.cni(&add.cmd("DEL")).err(106);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(
        msg.contains("record version 2") && msg.contains("reads up to version 1"),
        "{msg}"
    );
    assert!(node.record_exists(&vf.pci), "never misread, never removed");

    record["version"] = json!(1);
    std::fs::write(&record_path, record.to_string()).unwrap();
    let leases = std::fs::read_to_string(lease_file(&node)).unwrap();
    std::fs::write(
        lease_file(&node),
        leases.replacen("\"version\": 1", "\"version\": 2", 1),
    )
    .unwrap();
    // DEL converges (the VF comes home) and leaves the file it cannot read
    // untouched, saying why; an ADD that needs the pool is refused.
    let before = std::fs::read(lease_file(&node)).unwrap();
    let del = node.cni(&add.cmd("DEL"));
    assert!(
        del.stderr.contains("lease file version 2") && del.stderr.contains("reads up to version 1"),
        "{}",
        del.stderr
    );
    del.ok();
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "the VF is home"
    );
    assert_eq!(
        std::fs::read(lease_file(&node)).unwrap(),
        before,
        "never rewritten"
    );
    let err = node.cni(&add).err(111);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(
        msg.contains("lease file version 2") && msg.contains("reads up to version 1"),
        "{msg}"
    );
}
