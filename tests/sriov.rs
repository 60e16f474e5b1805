//! SR-IOV parity on the fake node: PF-side VF settings saved, applied and
//! restored (also on rollback), the RDMA device following the VF, DPDK VFs.
//! The PF and RDMA layer is the recording fake (RAILCNI_FAKE_HARDWARE);
//! its messages are proven against iproute2 in src/hw. Needs root.

mod common;

use common::*;
use serde_json::{json, Value};

const ORIGINAL: &str = r#"{"vfs": {"pf1/0": {"mac": "00:00:00:00:00:00", "vlan": {"id": 7, "qos": 0, "proto": "802.1q"},
    "spoofchk": true, "trust": false, "linkState": "auto", "rate": {"minMbps": 0, "maxMbps": 0}}}}"#;

fn vf_config(node: &Node, ipam: Value) -> Value {
    let mut c = conf("1.1.0", "rail1", &node.vfs[0].pci, ipam);
    for (k, v) in [
        ("mac", json!("02:00:00:00:00:42")),
        ("vlan", json!(100)),
        ("vlanQoS", json!(3)),
        ("vlanProto", json!("802.1ad")),
        ("spoofchk", json!("off")),
        ("trust", json!("on")),
        ("link_state", json!("enable")),
        ("min_tx_rate", json!(100)),
        ("max_tx_rate", json!(25000)),
    ] {
        c[k] = v;
    }
    c
}

fn pf1_vf0(node: &Node) -> Value {
    node.hardware()["vfs"]["pf1/0"].clone()
}

fn calls(node: &Node) -> Vec<String> {
    node.hardware()["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn vf_settings_are_applied_saved_and_restored() {
    let node = Node::new(1, 1);
    node.set_hardware(serde_json::from_str(ORIGINAL).unwrap());
    let original = pf1_vf0(&node);
    let pod = node.pod("pod");
    let add = Req::new("ADD", "c1", &pod, "net1", vf_config(&node, json!({})));
    let r = node.cni(&add).ok();
    assert_eq!(
        r["interfaces"][0]["mac"], "02:00:00:00:00:42",
        "the VF's effective MAC"
    );

    let now = pf1_vf0(&node);
    assert_eq!(
        now["mac"],
        json!("02:00:00:00:00:42"),
        "admin MAC on the PF"
    );
    assert_eq!(
        now["vlan"],
        json!({"id": 100, "qos": 3, "proto": "802.1ad"})
    );
    assert_eq!(
        (now["spoofchk"].clone(), now["trust"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(now["linkState"], "enable");
    assert_eq!(now["rate"], json!({"minMbps": 100, "maxMbps": 25000}));
    let record: Value = serde_json::from_slice(
        &std::fs::read(
            node.state_dir()
                .join(format!("attachments/{}.json", node.vfs[0].pci)),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["vfRestore"]["vlan"], original["vlan"],
        "originals saved in the record"
    );

    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(pf1_vf0(&node), original, "every attribute back as it was");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn only_the_attributes_the_config_sets_are_touched() {
    let node = Node::new(1, 1);
    let pod = node.pod("pod");
    let mut c = conf("1.1.0", "rail1", &node.vfs[0].pci, json!({}));
    c["trust"] = json!("on");
    let add = Req::new("ADD", "c1", &pod, "net1", c);
    node.cni(&add).ok();
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(
        calls(&node),
        [
            r#"set_vf pf1 0 {"trust":true}"#,
            r#"set_vf pf1 0 {"trust":false}"#
        ]
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rollback_restores_vf_settings_when_a_later_step_fails() {
    let node = Node::new(1, 1);
    node.set_hardware(serde_json::from_str(ORIGINAL).unwrap());
    let original = pf1_vf0(&node);
    let before = node.link(&node.host(), &node.vfs[0].ifname).unwrap();
    let pod = node.pod("pod");
    let plugins = node.dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let reply = json!({"cniVersion": "1.1.0", "ips": [{"address": "172.16.9.2/31"}], "routes": [{"dst": "10.0.0.0/8", "gw": "192.0.2.1"}]});
    fake_ipam(&plugins, "bad-route-ipam", &reply, 0);
    let req = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        vf_config(&node, json!({"type": "bad-route-ipam"})),
    );
    node.cni_with_path(&req, &[&plugins.display().to_string()])
        .err(104);
    assert_eq!(pf1_vf0(&node), original);
    // The drivers' order (igb): the admin MAC is cleared before trust goes
    // off, or the VF could not take its own MAC back.
    let calls = calls(&node);
    let at = |needle: &str| calls.iter().rposition(|c| c.contains(needle));
    assert!(
        at(r#"{"mac":"00:00:00:00:00:00"}"#) < at(r#"{"trust":false}"#),
        "{calls:?}"
    );
    assert_eq!(node.link(&node.host(), &node.vfs[0].ifname), Some(before));
    assert!(!node.record_exists(&node.vfs[0].pci));
}

/// A setting the PF's driver does not support (igb: `link_state`) is
/// answered with the setting, the driver and what to do; every setting that
/// took before it is put back, and no undo of it is logged as failed.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_refused_setting_is_named_with_its_driver_and_nothing_is_left_changed() {
    let node = Node::new(1, 1);
    let mut state: Value = serde_json::from_str(ORIGINAL).unwrap();
    state["refuse"] = json!({"linkState": "EOPNOTSUPP"});
    node.set_hardware(state);
    let original = pf1_vf0(&node);
    let before = node.link(&node.host(), &node.vfs[0].ifname).unwrap();
    let pod = node.pod("pod");
    let add = Req::new("ADD", "c1", &pod, "net1", vf_config(&node, json!({})));
    let reply = node.cni(&add);
    let stderr = reply.stderr.clone();
    let e = reply.err(2);
    let details = e["details"].as_str().unwrap();
    for part in [
        "link_state enable",
        "pf1",
        "mlx5_core",
        "EOPNOTSUPP",
        "remove it",
    ] {
        assert!(details.contains(part), "{part}: {details}");
    }
    assert_eq!(pf1_vf0(&node), original, "what took was put back");
    assert_eq!(node.link(&node.host(), &node.vfs[0].ifname), Some(before));
    assert!(!node.record_exists(&node.vfs[0].pci));
    assert!(!stderr.contains("undo step failed"), "{stderr}");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rdma_required_without_a_device_fails_and_leaves_nothing() {
    let node = Node::new(1, 1);
    let before = node.link(&node.host(), &node.vfs[0].ifname).unwrap();
    let pod = node.pod("pod");
    let mut c = conf("1.1.0", "rail1", &node.vfs[0].pci, json!({}));
    c["rdma"] = json!("required");
    c["trust"] = json!("on");
    let e = node
        .cni(&Req::new("ADD", "c1", &pod, "net1", c.clone()))
        .err(103);
    assert!(
        e["details"].as_str().unwrap().contains("no RDMA device"),
        "{e}"
    );
    assert_eq!(
        node.link(&node.host(), &node.vfs[0].ifname),
        Some(before.clone())
    );
    assert!(!node.record_exists(&node.vfs[0].pci));
    assert!(calls(&node).is_empty(), "no VF setting was touched");

    // A device, but the subsystem is in shared mode: required still fails.
    node.give_rdma_device(&node.vfs[0], "mlx5_2");
    node.set_hardware(json!({"rdmaMode": "shared"}));
    let e = node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err(103);
    assert!(e["details"].as_str().unwrap().contains("shared"), "{e}");
    assert_eq!(node.link(&node.host(), &node.vfs[0].ifname), Some(before));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rdma_device_follows_the_vf_in_exclusive_mode() {
    let node = Node::new(1, 1);
    node.give_rdma_device(&node.vfs[0], "mlx5_2");
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let pod = node.pod("pod");
    let devinfo = node.dir.path().join("devinfo");
    let mut c = conf("1.1.0", "rail1", &node.vfs[0].pci, json!({}));
    c["rdma"] = json!("required");
    c["runtimeConfig"] =
        json!({"CNIDeviceInfoFile": devinfo.join("rail1-c1-net1.json").display().to_string()});
    let mut add = Req::new("ADD", "c1", &pod, "net1", c);
    add.env
        .push(("RAILCNI_DEVINFO_DIR".into(), devinfo.display().to_string()));
    let r = node.cni(&add).ok();
    assert_eq!(r["interfaces"][0]["rdmaDevice"], "mlx5_2");
    assert_eq!(r["interfaces"][0]["pciID"], node.vfs[0].pci.as_str());
    assert_eq!(
        node.hardware()["rdmaDevices"]["mlx5_2"],
        Node::ns_inode(&pod)
    );
    let info: Value =
        serde_json::from_slice(&std::fs::read(devinfo.join("rail1-c1-net1.json")).unwrap())
            .unwrap();
    assert_eq!(info["pci"]["rdma-device"], "mlx5_2");
    assert_eq!(info["pci"]["pci-address"], node.vfs[0].pci.as_str());

    node.cni(&add.cmd("DEL")).ok();
    let host_ns = format!("/var/run/netns/{}", node.host());
    assert_eq!(
        node.hardware()["rdmaDevices"]["mlx5_2"],
        Node::ns_inode(&host_ns),
        "back in the host namespace"
    );
}

/// In exclusive mode the kernel shows a device only to a caller in its
/// namespace: DEL moves it home from inside the pod, and after the pod
/// died (the kernel moved its devices to the host: rdma_dev_exit_net) DEL
/// finds it home and answers 0. A second DEL changes nothing.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_exclusive_devices_del_works_from_the_pod_and_after_the_pod_died() {
    let node = Node::new(2, 1);
    let host_ns = format!("/var/run/netns/{}", node.host());
    for (i, vf) in node.vfs.iter().enumerate() {
        node.give_rdma_device(vf, &format!("mlx5_{i}"));
    }
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let mut adds = Vec::new();
    for (i, vf) in node.vfs.iter().enumerate() {
        let pod = node.pod(&format!("pod{i}"));
        let mut c = conf("1.1.0", &format!("rail{}", vf.rail), &vf.pci, json!({}));
        c["rdma"] = json!("required");
        let add = Req::new("ADD", &format!("c{i}"), &pod, "net1", c);
        node.cni(&add).ok();
        assert_eq!(
            node.hardware()["rdmaDevices"][format!("mlx5_{i}")],
            Node::ns_inode(&pod)
        );
        adds.push((pod, add));
    }
    // Pod 0: DEL from inside its namespace, twice.
    node.cni(&adds[0].1.cmd("DEL")).ok();
    assert_eq!(
        node.hardware()["rdmaDevices"]["mlx5_0"],
        Node::ns_inode(&host_ns)
    );
    node.cni(&adds[0].1.cmd("DEL")).ok();
    // Pod 1 dies first: its device is the host's again; DEL (no netns, as
    // a runtime sends after the sandbox is gone) finishes the rest.
    node.kill_pod(&adds[1].0, &[(&node.vfs[1], "net1")]);
    let moves = |h: &Value| h["calls"].as_array().map_or(0, |c| c.len());
    let before = moves(&node.hardware());
    let mut del = adds[1].1.cmd("DEL");
    del.netns = None;
    node.cni(&del).ok();
    assert!(!node.record_exists(&node.vfs[1].pci), "detached");
    assert_eq!(moves(&node.hardware()), before, "nothing left to move");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rdma_auto_carries_on_when_rdma_netlink_is_unavailable() {
    let node = Node::new(1, 1);
    node.give_rdma_device(&node.vfs[0], "mlx5_2");
    let pod = node.pod("pod");
    let r = node
        .cni(&Req::new(
            "ADD",
            "c1",
            &pod,
            "net1",
            conf("1.1.0", "rail1", &node.vfs[0].pci, json!({})),
        ))
        .ok();
    assert!(r["interfaces"][0].get("rdmaDevice").is_none());
    assert!(link_in(&Node::ns_of(&pod), "net1").is_some());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn dpdk_vf_is_addressed_not_moved_and_released_on_del() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    // Rebind to vfio-pci: the driver link changes and the netdev disappears.
    let dev = node.sysfs().join(format!("devices/pci0000:00/{}", vf.pci));
    std::fs::remove_file(dev.join("driver")).unwrap();
    std::fs::create_dir_all(node.sysfs().join("bus/pci/drivers/vfio-pci")).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", dev.join("driver")).unwrap();
    std::fs::remove_dir_all(dev.join("net")).unwrap();
    node.set_hardware(serde_json::from_str(ORIGINAL).unwrap());
    let original = pf1_vf0(&node);

    let pod = node.pod("pod");
    let ipam = json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
    let mut c = conf("1.1.0", "rail1", &vf.pci, ipam);
    c["vlan"] = json!(200);
    let mut add = Req::new("ADD", "c1", &pod, "net1", c);
    add.env.push(("RAILCNI_NODE_NAME".into(), "gpu-0".into()));
    add.env
        .push(("RAILCNI_NODE_CONFIG".into(), "/nonexistent".into()));
    let r = node.cni(&add).ok();
    assert_eq!(r["interfaces"][0]["name"], "net1");
    assert_eq!(r["interfaces"][0]["pciID"], vf.pci.as_str());
    assert!(r["interfaces"][0].get("mac").is_none());
    assert_eq!(r["ips"][0]["address"], "172.16.0.0/31");
    assert_eq!(r["ips"][0]["interface"], 0);
    assert!(
        link_in(&Node::ns_of(&pod), "net1").is_none(),
        "nothing moved"
    );
    assert_eq!(pf1_vf0(&node)["vlan"]["id"], 200, "VF settings still apply");
    assert!(
        std::fs::read_to_string(node.state_dir().join("ipam/rail1.leases.json"))
            .unwrap()
            .contains("\"c1\"")
    );

    let mut check = add.cmd("CHECK");
    check.conf["prevResult"] = r.clone();
    node.cni(&check).ok();

    node.cni(&add.cmd("DEL")).ok();
    assert!(
        !std::fs::read_to_string(node.state_dir().join("ipam/rail1.leases.json"))
            .unwrap()
            .contains("\"c1\""),
        "lease released"
    );
    assert!(!node.record_exists(&vf.pci));
    assert_eq!(pf1_vf0(&node), original);
    node.cni(&add.cmd("DEL")).ok();
    node.cni(&check).err(107);
}
