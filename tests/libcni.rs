//! A real CNI client: containernetworking's libcni (Go, Debian's
//! golang-github-appc-cni-dev, built offline) drives railcni from a conflist.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{json, Value};

#[test]
#[ignore = "root: Go CNI clients on the fake node; scripts/test.sh runs it"]
fn libcni_add_check_del_del_with_a_conflist() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    let driver = build_go_driver(node.dir.path(), "libcni");

    let plugins = node.dir.path().join("bin");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(PLUGIN, plugins.join("railcni")).unwrap();
    std::os::unix::fs::symlink(
        Path::new(REFERENCE_PLUGINS).join("host-local"),
        plugins.join("host-local"),
    )
    .unwrap();
    let conflist = json!({
        "cniVersion": "1.0.0",
        "cniVersions": ["1.0.0"],
        "name": "rail1",
        "plugins": [{"type": "railcni", "deviceID": vf.pci, "ipam": node.host_local("172.16.0.0/24")}]
    });
    let conflist_path = node.dir.path().join("rail1.conflist");
    std::fs::write(&conflist_path, conflist.to_string()).unwrap();

    let out = Command::new("ip")
        .args(["netns", "exec", &node.host()])
        .arg(&driver)
        .arg(&plugins)
        .arg(&conflist_path)
        .arg(&pod)
        .arg("libcni-c1")
        .env("RAILCNI_SYSFS_ROOT", node.sysfs())
        .env("RAILCNI_STATE_DIR", node.state_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "libcni: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["interfaces"][0]["name"], "net1");
    assert_eq!(result["interfaces"][0]["sandbox"], pod.as_str());
    assert!(result["ips"][0]["address"]
        .as_str()
        .unwrap()
        .starts_with("172.16.0."));

    // After ADD, CHECK, DEL, DEL: the VF is home as it was, nothing left over.
    assert_eq!(node.link(&node.host(), &vf.ifname), Some(before));
    assert!(!node.record_exists(&vf.pci));
    assert!(node.host_local_leases("rail1").is_empty());
}
