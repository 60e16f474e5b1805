//! railcni as containerd's network, driven through CRI as kubelet drives
//! it: the pod lifecycles operators meet (README, "Container runtimes").
//! Needs root; containerd 1.6 from Debian.

#[path = "../common/mod.rs"]
mod common;
mod harness;

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
    let again = ctr.run("trainer-1").unwrap();
    assert_eq!(ctr.status(&again).1, "172.16.0.0", "the same address again");
    ctr.stop(&again).unwrap();
    ctr.remove(&again).unwrap();
    nothing_left(&node, &vf);
}
