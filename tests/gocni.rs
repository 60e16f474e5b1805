//! A second real runtime client: containerd's go-cni (Debian's package,
//! built offline) loads a conflist dir with 8 rail networks and sets a pod
//! up and removes it, as containerd's CRI plugin does. Needs root.

mod common;

use std::process::Command;

use common::*;
use serde_json::{json, Value};

#[test]
#[ignore = "root: Go CNI clients on the fake node; scripts/test.sh runs it"]
fn containerd_go_cni_sets_up_and_removes_an_eight_rail_pod() {
    let node = Node::new(8, 1);
    let driver = build_go_driver(node.dir.path(), "gocni");
    let pod = node.pod("pod");
    let before: Vec<_> = node
        .vfs
        .iter()
        .map(|vf| node.link(&node.host(), &vf.ifname).unwrap())
        .collect();
    let bin = node.dir.path().join("bin");
    let confs = node.dir.path().join("net.d");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&confs).unwrap();
    std::os::unix::fs::symlink(PLUGIN, bin.join("railcni")).unwrap();
    for vf in &node.vfs {
        let conflist = json!({
            "cniVersion": "1.0.0",
            "name": format!("rail{}", vf.rail),
            "plugins": [{"type": "railcni", "deviceID": vf.pci, "ipam": Node::embedded_ipam(vf.rail)}]
        });
        std::fs::write(
            confs.join(format!("{:02}-rail{}.conflist", vf.rail, vf.rail)),
            conflist.to_string(),
        )
        .unwrap();
    }
    let go_cni = |mode: &str| {
        Command::new("ip")
            .args(["netns", "exec", &node.host()])
            .arg(&driver)
            .args([
                mode,
                confs.to_str().unwrap(),
                bin.to_str().unwrap(),
                &pod,
                "gocni-c1",
            ])
            .env("RAILCNI_SYSFS_ROOT", node.sysfs())
            .env("RAILCNI_STATE_DIR", node.state_dir())
            .env("RAILCNI_NODE_NAME", "gpu-0")
            .env(
                "RAILCNI_NODE_CONFIG",
                node.dir.path().join("no-node-file.json"),
            )
            .output()
            .unwrap()
    };
    let out = go_cni("setup");
    assert!(
        out.status.success(),
        "go-cni setup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ns = Node::ns_of(&pod);
    for i in 0..8u32 {
        // go-cni names the interfaces net0..net7, in conflist order.
        let name = format!("net{i}");
        let iface = &result["interfaces"][&name];
        assert_eq!(iface["sandbox"], pod.as_str(), "{result}");
        let want = format!("172.{}.0.0", 14 + 2 * (i + 1));
        assert_eq!(iface["ips"][0], want.as_str(), "{name}: {result}");
        assert_eq!(addresses_in(&ns, &name), [format!("{want}/31")]);
    }
    let out = go_cni("remove");
    assert!(
        out.status.success(),
        "go-cni remove: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (vf, was) in node.vfs.iter().zip(&before) {
        assert_eq!(
            node.link(&node.host(), &vf.ifname).as_ref(),
            Some(was),
            "{} home",
            vf.ifname
        );
        assert!(!node.record_exists(&vf.pci));
    }
    let left = String::from_utf8_lossy(&sh(&format!("ip -n {ns} rule show")).stdout).into_owned();
    assert!(!left.contains("from 172."), "{left}");
}
