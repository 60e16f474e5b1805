//! Whole-NIC rails (#61): a PF the node file grants a network, moved into
//! the pod itself, with everything a VF rail has, and back home as it was.
//! The fake node's whole PF is one end of a veth (`fake-node.sh … 0`),
//! described in the fake sysfs with `sriov_numvfs` 0. Needs root.

mod common;

use common::*;
use serde_json::{json, Value};

/// The node file: rail1's PF `pf1` granted whole (`wholeNic`), or not.
fn node_file(node: &Node, whole: bool) -> String {
    let file = json!({"version": 1, "nodeName": "gpu-0", "networks": {"rail1": {
        "prefix": "172.16.0.0/31", "gateway": "172.16.0.1", "pf": "pf1", "wholeNic": whole}}});
    let path = node.dir.path().join("node.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path.display().to_string()
}

fn add(node: &Node, pod: &str, pci: &str, extra: Value, whole: bool) -> Req {
    let mut c = conf("1.1.0", "rail1", pci, Node::embedded_ipam(1));
    c["mtu"] = json!(9000);
    for (k, v) in extra.as_object().unwrap() {
        c[k] = v.clone();
    }
    let mut req = Req::new("ADD", "c1", pod, "net1", c);
    req.env
        .push(("RAILCNI_NODE_CONFIG".into(), node_file(node, whole)));
    req
}

/// The PF on the host as it was: its name, up, MTU 1500; no record.
fn assert_home(node: &Node, pf: &FakeVf, what: &str) {
    let l = node
        .link(&node.host(), &pf.ifname)
        .unwrap_or_else(|| panic!("{what}: pf1 home"));
    assert_eq!((l.mtu, l.up), (1500, true), "{what}: as it was");
    assert!(!node.record_exists(&pf.pci), "{what}: no record");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_granted_pf_attaches_whole_and_goes_home_as_it_was() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    // A persistent name udev gave the PF, which must come back with it.
    sh(&format!(
        "ip -n {} link property add dev pf1 altname enp17s0np0",
        node.host()
    ));
    let pod = node.pod("pod");
    let ns = Node::ns_of(&pod);
    let req = add(&node, &pod, &pf.pci, json!({}), true);
    let r = node.cni(&req).ok();
    assert_eq!(r["ips"][0]["address"], "172.16.0.0/31", "{r}");
    let net1 = link_in(&ns, "net1").expect("the PF in the pod as net1");
    assert_eq!((net1.mtu, net1.up), (9000, true));
    assert!(link_in(&node.host(), "pf1").is_none(), "gone from the host");
    assert!(out(&format!("ip -n {ns} rule")).contains("from 172.16.0.0 lookup"));
    let record: Value = serde_json::from_slice(
        &std::fs::read(
            node.state_dir()
                .join(format!("attachments/{}.json", pf.pci)),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(record["wholeNic"], true, "{record}");
    assert_eq!(record["host"]["adminUp"], true, "{record}");
    node.cni(&req.cmd("CHECK").with_conf(with_prev(&req.conf, &r)))
        .ok();
    let (_, text, _) = node.operator(&["status"]);
    assert!(text.contains("pf1 (whole PF)"), "{text}");
    let (_, metrics, _) = node.operator(&["metrics"]);
    assert!(
        (metrics.lines())
            .any(|l| l.starts_with("railcni_interface_whole_nic{") && l.ends_with(" 1")),
        "{metrics}"
    );

    node.cni(&req.cmd("DEL")).ok();
    assert_home(&node, &pf, "after DEL");
    let shown = out(&format!("ip -n {} link show pf1", node.host()));
    assert!(
        shown.contains("altname enp17s0np0"),
        "its altname back: {shown}"
    );
    assert!(link_in(&ns, "net1").is_none());
    // A second DEL: nothing left to give back.
    node.cni(&req.cmd("DEL")).ok();
    // And it attaches again.
    node.cni(&req).ok();
    node.cni(&req.cmd("DEL")).ok();
    assert_home(&node, &pf, "after the second round");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_pf_is_refused_unless_granted_and_fit_and_nothing_changes() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    let pod = node.pod("pod");
    let details = |e: &Value| e["details"].as_str().unwrap_or("").to_string();

    // Not granted: a PF is never a VF rail's device.
    let e = node
        .cni(&add(&node, &pod, &pf.pci, json!({}), false))
        .err(102);
    assert!(details(&e).contains("wholeNic"), "{e}");
    assert_home(&node, &pf, "not granted");

    // A VF setting made through a parent: a config error naming it.
    for (field, value) in [
        ("vlan", json!(100)),
        ("spoofchk", json!("off")),
        ("mac", json!("02:00:00:00:00:09")),
    ] {
        let e = node
            .cni(&add(&node, &pod, &pf.pci, json!({field: value}), true))
            .err(7);
        assert!(
            details(&e).contains(field) && details(&e).contains("whole PF"),
            "{field}: {e}"
        );
        assert_home(&node, &pf, field);
    }

    // The host uses it: an address, then a route through it.
    sh(&format!(
        "ip -n {} addr add 192.0.2.1/24 dev pf1",
        node.host()
    ));
    let e = node.cni(&add(&node, &pod, &pf.pci, json!({}), true)).err(7);
    assert!(details(&e).contains("192.0.2.1/24"), "{e}");
    sh(&format!("ip -n {} addr flush dev pf1", node.host()));
    sh(&format!(
        "ip -n {} route add 198.51.100.0/24 dev pf1",
        node.host()
    ));
    let e = node.cni(&add(&node, &pod, &pf.pci, json!({}), true)).err(7);
    assert!(details(&e).contains("198.51.100.0/24"), "{e}");
    sh(&format!("ip -n {} route flush dev pf1", node.host()));

    // VFs enabled on it.
    let numvfs = node
        .sysfs()
        .join(format!("bus/pci/devices/{}/sriov_numvfs", pf.pci));
    std::fs::write(&numvfs, "4\n").unwrap();
    let e = node.cni(&add(&node, &pod, &pf.pci, json!({}), true)).err(7);
    assert!(details(&e).contains("sriov_numvfs"), "{e}");
    std::fs::write(&numvfs, "0\n").unwrap();
    assert_home(&node, &pf, "refused");

    // Fit again: it attaches.
    let req = add(&node, &pod, &pf.pci, json!({}), true);
    node.cni(&req).ok();
    node.cni(&req.cmd("DEL")).ok();
    assert_home(&node, &pf, "attached and detached");
}

/// A crash after the move (the pod dies without DEL, the kernel hands the
/// PF back to the host under its pod name): `gc --apply` puts it back as
/// it was (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn gc_gives_a_dead_pods_pf_back_as_it_was() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    let pod = node.pod("pod");
    let req = add(&node, &pod, &pf.pci, json!({}), true);
    node.cni(&req).ok();
    node.kill_pod(&pod, &[(&pf, "net1")]);
    let (code, done) = node.operator_json(&["gc", "--apply"]);
    assert_eq!(code, 0, "{done}");
    assert_home(&node, &pf, "after gc");
}

/// `doctor` knows a whole-NIC rail: no VFs is what it wants there, VFs
/// enabled on the PF is the broken link (ADD would refuse it) (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn doctor_wants_a_whole_nic_rails_pf_without_vfs() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    let file = node_file(&node, true);
    let vfs = |node: &Node| {
        let (_, report) = node.operator_json(&["doctor", "--node-file", &file]);
        (report["checks"].as_array().unwrap().iter())
            .find(|c| c["check"] == "rail1/vfs")
            .cloned()
            .unwrap_or_else(|| panic!("{report:#}"))
    };
    assert_eq!(vfs(&node)["result"], "ok");
    let numvfs = node
        .sysfs()
        .join(format!("bus/pci/devices/{}/sriov_numvfs", pf.pci));
    std::fs::write(&numvfs, "4\n").unwrap();
    let broken = vfs(&node);
    assert_eq!(broken["result"], "broken", "{broken}");
    assert!(
        broken["fix"].as_str().unwrap().contains("echo 0 >"),
        "{broken}"
    );
}

/// Make rail `pf`'s whole PF an InfiniBand one (IPoIB, `type` 32, MTU 4092)
/// with the RDMA device `rdma`, its ifindex in sysfs as the fake kernel
/// finds the netdev to re-create.
fn infiniband_pf(node: &Node, pf: &FakeVf, rdma: &str) {
    let dev = node.sysfs().join(format!("devices/pci0000:00/{}", pf.pci));
    std::fs::write(dev.join(format!("net/{}/type", pf.ifname)), "32\n").unwrap();
    let index = out(&format!(
        "ip -n {} -o link show {} | cut -d: -f1",
        node.host(),
        pf.ifname
    ));
    std::fs::write(
        dev.join(format!("net/{}/ifindex", pf.ifname)),
        format!("{}\n", index.trim()),
    )
    .unwrap();
    std::fs::create_dir_all(dev.join(format!("infiniband/{rdma}"))).unwrap();
}

/// An InfiniBand PF on a whole-NIC rail, exclusive mode, for both kernel
/// generations: its RDMA device moves first and the IPoIB netdev the
/// kernel re-creates is found and named in the pod; the device-info file
/// names a PF (no `pf-pci-address`), `inspect` says "whole PF"; DEL brings
/// the device and the netdev home under its name (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_infiniband_pf_goes_whole_in_the_kernels_order() {
    for generation in ["host", "device"] {
        let node = Node::new(1, 0);
        let pf = node.vfs[0].clone();
        infiniband_pf(&node, &pf, "mlx5_0");
        node.set_hardware(json!({"rdmaMode": "exclusive", "ipoibNetns": generation}));
        let pod = node.pod("pod");
        let ns = Node::ns_of(&pod);
        let devinfo = node.dir.path().join("devinfo");
        let file = devinfo.join("rail1-c1-net1.json");
        let mut req = add(
            &node,
            &pod,
            &pf.pci,
            json!({"mtu": 4092,
            "runtimeConfig": {"CNIDeviceInfoFile": file.display().to_string()}}),
            true,
        );
        req.env
            .push(("RAILCNI_DEVINFO_DIR".into(), devinfo.display().to_string()));
        let r = node.cni(&req).ok();
        assert_eq!(
            r["interfaces"][0]["rdmaDevice"], "mlx5_0",
            "{generation}: {r}"
        );
        let net1 = link_in(&ns, "net1").unwrap_or_else(|| panic!("{generation}: net1"));
        assert_eq!(net1.mtu, 4092, "{generation}");
        assert_eq!(addresses_in(&ns, "net1"), ["172.16.0.0/31"], "{generation}");
        assert!(
            !out(&format!("ip -n {ns} -o link")).contains(" ib0"),
            "{generation}"
        );
        let info: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(info["pci"]["pci-address"], pf.pci.as_str(), "{info}");
        assert!(
            info["pci"].get("pf-pci-address").is_none(),
            "a PF has no parent: {info}"
        );
        let (_, text, _) = node.operator(&["inspect", "c1"]);
        assert!(text.contains("whole PF"), "{text}");
        let (_, env, _) = node.operator(&["nccl-env", "c1"]);
        assert!(
            env.lines().any(|l| l == "NCCL_IB_HCA==mlx5_0:1"),
            "{generation}: {env}"
        );
        node.cni(&req.cmd("DEL")).ok();
        let home = node.link(&node.host(), &pf.ifname);
        assert_eq!(
            home.map(|l| (l.mtu, l.up)),
            Some((1500, true)),
            "{generation}: home as it was"
        );
        assert!(!node.record_exists(&pf.pci), "{generation}");
    }
}

/// A driver reload under a live pod tears its whole PF out; it comes back
/// on the host as a new netdev. The re-attach (gc here) puts it back in its
/// pod with its address; DEL then brings it home as it was (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_whole_pf_is_reattached_after_a_driver_reload() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    let pod = node.pod("pod");
    let ns = Node::ns_of(&pod);
    let req = add(&node, &pod, &pf.pci, json!({}), true);
    node.cni(&req).ok();
    // The reload: the netdev back on the host under its name with a new
    // ifindex (the old one is taken, so the kernel renumbers it).
    node.reload_netdev(&pod, "net1", &pf.ifname);
    let (code, done) = node.operator_json(&["gc", "--apply"]);
    assert_eq!(code, 0, "{done}");
    let net1 = link_in(&ns, "net1").unwrap_or_else(|| panic!("re-attached: {done}"));
    assert_eq!(net1.mtu, 9000);
    assert_eq!(addresses_in(&ns, "net1"), ["172.16.0.0/31"]);
    node.cni(&req.cmd("DEL")).ok();
    let home = node.link(&node.host(), &pf.ifname);
    assert_eq!(
        home.map(|l| (l.mtu, l.up)),
        Some((1500, true)),
        "home as it was"
    );
    assert!(!node.record_exists(&pf.pci));
}

/// A whole PF bound to vfio-pci (DPDK) has no netdev: the node file grants
/// it by its PCI address. ADD addresses it and moves nothing (the pod's
/// DPDK application opens the device); DEL releases its address (#61).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_vfio_bound_pf_granted_by_its_pci_address_is_addressed_not_moved() {
    let node = Node::new(1, 0);
    let pf = node.vfs[0].clone();
    // Bound to vfio-pci: the driver link changes and the netdev is gone.
    let dev = node.sysfs().join(format!("devices/pci0000:00/{}", pf.pci));
    std::fs::remove_file(dev.join("driver")).unwrap();
    std::fs::create_dir_all(node.sysfs().join("bus/pci/drivers/vfio-pci")).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", dev.join("driver")).unwrap();
    std::fs::remove_dir_all(dev.join("net")).unwrap();
    sh(&format!("ip -n {} link del {}", node.host(), pf.ifname));
    let file = node.dir.path().join("node.json");
    let grant = json!({"version": 1, "nodeName": "gpu-0", "networks": {"rail1": {
        "prefix": "172.16.0.0/31", "gateway": "172.16.0.1", "pf": pf.pci, "wholeNic": true}}});
    std::fs::write(&file, grant.to_string()).unwrap();
    let pod = node.pod("pod");
    let mut req = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &pf.pci, Node::embedded_ipam(1)),
    );
    req.env
        .push(("RAILCNI_NODE_CONFIG".into(), file.display().to_string()));
    let r = node.cni(&req).ok();
    assert_eq!(r["ips"][0]["address"], "172.16.0.0/31", "{r}");
    assert_eq!(r["interfaces"][0]["pciID"], pf.pci.as_str());
    assert!(
        link_in(&Node::ns_of(&pod), "net1").is_none(),
        "nothing moved"
    );
    node.cni(&req.cmd("DEL")).ok();
    assert!(!leases_of(&node, "rail1").contains("\"c1\""), "released");
    assert!(!node.record_exists(&pf.pci));
    // Another PCI address is not the grant's.
    let other = conf("1.1.0", "rail1", "0000:12:00.0", Node::embedded_ipam(1));
    let mut refused = Req::new("ADD", "c2", &pod, "net1", other);
    refused
        .env
        .push(("RAILCNI_NODE_CONFIG".into(), file.display().to_string()));
    let e = node.cni(&refused).err(7);
    assert!(
        e["details"]
            .as_str()
            .unwrap_or("")
            .contains("networks.rail1.pf"),
        "{e}"
    );
}
