//! railcni-ipam as the IPAM of another plugin: Debian's reference host-device
//! moves a device into a pod and asks railcni-ipam for its address. Needs root.

use std::process::Command;

use serde_json::{json, Value};
use support::{require_root, run_with_stdin, sh};

const BIN: &str = env!("CARGO_BIN_EXE_railcni-ipam");

struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn host_device(
    command: &str,
    host: &str,
    pod: &str,
    plugins: &std::path::Path,
    state: &std::path::Path,
    conf: &Value,
) -> (bool, Value) {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", host, "/usr/lib/cni/host-device"])
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "hd1")
        .env("CNI_NETNS", format!("/var/run/netns/{pod}"))
        .env("CNI_IFNAME", "net1")
        .env("CNI_PATH", plugins)
        .env("RAILCNI_STATE_DIR", state)
        .env("RAILCNI_NODE_NAME", "gpu-1")
        .env("RAILCNI_NODE_CONFIG", state.join("none.json"));
    let r = run_with_stdin(cmd, conf);
    assert!(r.success || command != "DEL", "{}\n{}", r.stdout, r.stderr);
    (r.success, r.json)
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn debian_host_device_uses_railcni_ipam() {
    require_root();
    let tag = format!("hd{}", std::process::id());
    let (host, pod, leaf) = (
        format!("{tag}-host"),
        format!("{tag}-pod"),
        format!("{tag}-leaf"),
    );
    let _cleanup = Namespaces(vec![host.clone(), pod.clone(), leaf.clone()]);
    for ns in [&host, &pod, &leaf] {
        sh(&format!("ip netns add {ns}"));
    }
    sh(&format!(
        "ip -n {host} link add vf0 type veth peer name leaf0 netns {leaf}"
    ));

    let t = tempfile::tempdir().unwrap();
    let plugins = t.path().join("bin");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(BIN, plugins.join("railcni-ipam")).unwrap();
    let conf = json!({
        "cniVersion": "1.0.0", "name": "rail1", "type": "host-device", "device": "vf0",
        "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0", "gpu-1"],
                 "routes": [{"dst": "172.16.0.0/15"}]}
    });

    let (ok, result) = host_device("ADD", &host, &pod, &plugins, t.path(), &conf);
    assert!(ok, "{result}");
    assert_eq!(
        result["ips"][0]["address"], "172.16.0.2/31",
        "gpu-1 is node 1: prefix 1 of the cidr"
    );
    assert_eq!(result["ips"][0]["gateway"], "172.16.0.3");
    let addrs = Command::new("ip")
        .args(["-n", &pod, "-br", "addr", "show", "dev", "net1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&addrs.stdout).contains("172.16.0.2/31"));
    let leases = std::fs::read_to_string(t.path().join("ipam/rail1.leases.json")).unwrap();
    assert!(leases.contains("\"hd1\""));

    host_device("DEL", &host, &pod, &plugins, t.path(), &conf);
    let leases = std::fs::read_to_string(t.path().join("ipam/rail1.leases.json")).unwrap();
    assert!(!leases.contains("\"hd1\""), "lease released: {leases}");
}
