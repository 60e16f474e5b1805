//! ADD / CHECK / DEL against a fake SR-IOV node: a veth stand-in VF, a fake
//! sysfs tree, real namespaces. Needs root (CI is root).

mod common;

use common::*;
use serde_json::{json, Value};

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn add_check_del_round_trip_restores_the_vf() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    // Debian's host-local speaks up to 1.0.0, so this network is 1.0.0.
    let conf = node.rail1_conf(vf);
    let add = Req::new("ADD", "c1", &pod, "net1", conf.clone());

    let result = node.cni(&add).ok();
    assert_eq!(result["cniVersion"], "1.0.0");
    assert_eq!(result["interfaces"][0]["name"], "net1");
    assert_eq!(result["interfaces"][0]["mtu"], 9000);
    assert!(
        result["interfaces"][0].get("pciID").is_none(),
        "pciID is 1.1 only"
    );
    assert_eq!(result["interfaces"][0]["sandbox"], pod.as_str());
    assert_eq!(result["ips"][0]["interface"], 0);
    let address = result["ips"][0]["address"].as_str().unwrap().to_string();

    let ns = Node::ns_of(&pod);
    let inside = link_in(&ns, "net1").expect("net1 in the pod");
    assert_eq!((inside.mtu, inside.up), (9000, true));
    assert_eq!(inside.mac, before.mac);
    assert_eq!(addresses_in(&ns, "net1"), vec![address.clone()]);
    assert!(
        node.link(&node.host(), &vf.ifname).is_none(),
        "VF left the host"
    );
    assert!(node.record_exists(&vf.pci));
    // Set in the link message (IFLA_INET_CONF), read back from the kernel's files.
    for (key, value) in [
        ("rp_filter", "2"),
        ("arp_ignore", "2"),
        ("arp_announce", "2"),
        ("accept_local", "1"),
        ("arp_notify", "1"),
    ] {
        let path = format!("/proc/sys/net/ipv4/conf/net1/{key}");
        assert_eq!(
            out(&format!("ip netns exec {ns} cat {path}")).trim(),
            value,
            "{key} in the pod"
        );
    }

    node.cni(&add.cmd("CHECK").with_conf(with_prev(&conf, &result)))
        .ok();

    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(
        node.link(&node.host(), &vf.ifname),
        Some(before),
        "name, MTU, MAC restored"
    );
    assert!(link_in(&ns, "net1").is_none());
    assert!(!node.record_exists(&vf.pci));
    assert!(
        node.host_local_leases("rail1").is_empty(),
        "IPAM lease released"
    );

    // CHECK after DEL says what is missing.
    let e = node
        .cni(&add.cmd("CHECK").with_conf(with_prev(&conf, &result)))
        .err(107);
    assert!(e["details"]
        .as_str()
        .unwrap()
        .contains("no attachment record"));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn repeated_add_returns_the_same_result_without_moving_twice() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let add = Req::new("ADD", "c1", &pod, "net1", node.rail1_conf(vf));
    let first = node.cni(&add).ok();
    let second = node.cni(&add).ok();
    assert_eq!(first, second);
    assert_eq!(node.host_local_leases("rail1").len(), 1, "no second lease");
    assert!(link_in(&Node::ns_of(&pod), "net1").is_some());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn mac_from_runtime_config_and_restored_on_del() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    let mut c = conf("1.1.0", "rail1", &vf.pci, json!({}));
    c["mac"] = json!("02:00:00:00:00:33");
    c["runtimeConfig"] = json!({"mac": "02:00:00:00:00:11"});
    let mut add = Req::new("ADD", "c1", &pod, "net1", c);
    add.args = Some("IgnoreUnknown=true;MAC=02:00:00:00:00:22".into());
    let r = node.cni(&add).ok();
    assert_eq!(r["interfaces"][0]["mac"], "02:00:00:00:00:11");
    assert_eq!(r["interfaces"][0]["pciID"], vf.pci.as_str());
    assert_eq!(
        link_in(&Node::ns_of(&pod), "net1").unwrap().mac,
        "02:00:00:00:00:11"
    );
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(node.link(&node.host(), &vf.ifname).unwrap().mac, before.mac);
}

/// Every failed ADD leaves the host as it was: same link, no record. (Each
/// case checks its own IPAM's leases.)
fn assert_untouched(node: &Node, vf: &FakeVf, before: &LinkState) {
    assert_eq!(
        node.link(&node.host(), &vf.ifname).as_ref(),
        Some(before),
        "VF restored on the host"
    );
    assert!(!node.record_exists(&vf.pci), "no attachment record left");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn add_failing_at_each_step_leaves_the_host_as_before() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    let ns = Node::ns_of(&pod);
    let plugins = node.dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let plugins_s = plugins.display().to_string();

    // 1. MTU above the PF's (9000): a config error naming both values.
    let mut c = node.rail1_conf(vf);
    c["mtu"] = json!(9600);
    let e = node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err(7);
    let details = e["details"].as_str().unwrap();
    assert!(
        details.contains("mtu") && details.contains("9600") && details.contains("9000"),
        "{details}"
    );
    assert_untouched(&node, vf, &before);
    assert!(node.host_local_leases("rail1").is_empty());

    // 2. The IPAM plugin fails: its code is passed on.
    let err = json!({"cniVersion": "1.0.0", "code": 11, "msg": "pool busy"});
    let calls = fake_ipam(&plugins, "failing-ipam", &err, 1);
    let c = conf("1.0.0", "rail1", &vf.pci, json!({"type": "failing-ipam"}));
    let e = node
        .cni_with_path(&Req::new("ADD", "c1", &pod, "net1", c), &[&plugins_s])
        .err(11);
    assert!(e["details"].as_str().unwrap().contains("pool busy"));
    assert_untouched(&node, vf, &before);
    assert_eq!(
        std::fs::read_to_string(&calls)
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        ["ADD c1 net1"]
    );

    // 3. IPAM hands out a route the kernel refuses: fails after the move.
    let reply = json!({"cniVersion": "1.0.0", "ips": [{"address": "172.16.9.2/31"}],
                       "routes": [{"dst": "10.0.0.0/8", "gw": "192.0.2.1"}]});
    let calls = fake_ipam(&plugins, "bad-route-ipam", &reply, 0);
    let c = conf("1.0.0", "rail1", &vf.pci, json!({"type": "bad-route-ipam"}));
    let e = node
        .cni_with_path(&Req::new("ADD", "c1", &pod, "net1", c), &[&plugins_s])
        .err(104);
    assert!(e["details"].as_str().unwrap().contains("10.0.0.0/8"), "{e}");
    assert_untouched(&node, vf, &before);
    assert!(link_in(&ns, "net1").is_none(), "nothing left in the pod");
    assert_eq!(
        std::fs::read_to_string(&calls)
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        ["ADD c1 net1", "DEL c1 net1"],
        "IPAM released on rollback"
    );

    // 4. The interface name is already taken in the pod.
    sh(&format!(
        "ip -n {ns} link add net1 type veth peer name other"
    ));
    let c = node.rail1_conf(vf);
    let e = node.cni(&Req::new("ADD", "c1", &pod, "net1", c)).err(4);
    assert!(e["details"].as_str().unwrap().contains("net1"));
    assert_untouched(&node, vf, &before);
    assert!(node.host_local_leases("rail1").is_empty());

    // 5. The namespace does not exist: code 3.
    let c = node.rail1_conf(vf);
    node.cni(&Req::new(
        "ADD",
        "c1",
        "/var/run/netns/no-such-pod",
        "net1",
        c,
    ))
    .err(3);
    assert_untouched(&node, vf, &before);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn bad_input_is_refused_before_anything_changes() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname).unwrap();
    let pod = node.pod("pod");
    let pf = "0000:11:00.0";
    // A PF (no physfn) must never be moved.
    let e = node
        .cni(&Req::new(
            "ADD",
            "c1",
            &pod,
            "net1",
            conf("1.0.0", "r", pf, json!({})),
        ))
        .err(102);
    assert!(e["details"].as_str().unwrap().contains("not an SR-IOV VF"));
    // Undecodable stdin.
    let mut r = Req::new("ADD", "c1", &pod, "net1", json!("not an object"));
    node.cni(&r).err(6);
    // Unknown CNI_ARGS without IgnoreUnknown.
    r = Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("1.0.0", "r", &vf.pci, json!({})),
    );
    r.args = Some("FOO=bar".into());
    node.cni(&r).err(4);
    // Unsupported version.
    node.cni(&Req::new(
        "ADD",
        "c1",
        &pod,
        "net1",
        conf("0.2.0", "r", &vf.pci, json!({})),
    ))
    .err(1);
    assert_untouched(&node, vf, &before);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn del_converges_after_the_netns_is_gone() {
    for returned_as in ["net1", "dev{}"] {
        let node = Node::new(1, 1);
        let vf = &node.vfs[0];
        let before = node.link(&node.host(), &vf.ifname).unwrap();
        let pod = node.pod("pod");
        let ns = Node::ns_of(&pod);
        let add = Req::new("ADD", "c1", &pod, "net1", node.rail1_conf(vf));
        node.cni(&add).ok();

        // Play the kernel: a dying netns hands physical devices back, under
        // their pod name if free, else dev<ifindex>; sysfs follows the name.
        let idx = link_in(&ns, "net1").unwrap().ifindex;
        let name = returned_as.replace("{}", &idx.to_string());
        sh(&format!(
            "ip -n {ns} link set net1 netns {} name {name}",
            node.host()
        ));
        let net = node.sysfs().join(format!("bus/pci/devices/{}/net", vf.pci));
        std::fs::rename(net.join(&vf.ifname), net.join(&name)).unwrap();
        sh(&format!("ip netns del {ns}"));
        std::fs::rename(net.join(&name), net.join(&vf.ifname)).unwrap();

        node.cni(&add.cmd("DEL")).ok();
        assert_eq!(
            node.link(&node.host(), &vf.ifname),
            Some(before.clone()),
            "returned as {name}"
        );
        assert!(!node.record_exists(&vf.pci));
        assert!(node.host_local_leases("rail1").is_empty());
        // DEL again, and DEL with an empty netns path: still success.
        node.cni(&add.cmd("DEL")).ok();
        let mut no_ns = add.cmd("DEL");
        no_ns.netns = None;
        node.cni(&no_ns).ok();
    }
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn del_without_any_record_or_ipam_state_succeeds() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let del = Req::new("DEL", "never-added", &pod, "net1", node.rail1_conf(vf));
    node.cni(&del).ok();
    node.cni(&del).ok();
    assert!(
        node.link(&node.host(), &vf.ifname).is_some(),
        "an unrelated VF is not touched"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn two_pods_racing_for_one_vf_one_wins_the_other_is_told_why() {
    let node = Node::new(1, 1);
    let vf = node.vfs[0].clone();
    let pods = [node.pod("a"), node.pod("b")];
    let node = std::sync::Arc::new(node);
    let handles: Vec<_> = pods
        .iter()
        .enumerate()
        .map(|(i, pod)| {
            let node = node.clone();
            let req = Req::new("ADD", &format!("c{i}"), pod, "net1", node.rail1_conf(&vf));
            std::thread::spawn(move || node.cni(&req))
        })
        .collect();
    let replies: Vec<Reply> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<usize> = (0..2).filter(|&i| replies[i].success).collect();
    assert_eq!(winners.len(), 1, "{replies:?}");
    let loser = &replies[1 - winners[0]];
    assert_eq!(loser.code(), Some(101), "{loser:?}");
    let in_pods: Vec<bool> = pods
        .iter()
        .map(|p| link_in(&Node::ns_of(p), "net1").is_some())
        .collect();
    assert_eq!(in_pods.iter().filter(|b| **b).count(), 1);
    assert!(in_pods[winners[0]]);
    assert_eq!(
        node.host_local_leases("rail1").len(),
        1,
        "the loser holds no lease"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_dead_pods_record_does_not_block_the_next_pod() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let old = node.pod("old");
    let add_old = Req::new(
        "ADD",
        "old",
        &old,
        "net1",
        conf("1.0.0", "rail1", &vf.pci, json!({})),
    );
    node.cni(&add_old).ok();
    // The old pod dies without DEL; play the kernel returning the VF.
    let ns = Node::ns_of(&old);
    sh(&format!(
        "ip -n {ns} link set net1 netns {} name net1 && ip netns del {ns}",
        node.host()
    ));
    let net = node.sysfs().join(format!("bus/pci/devices/{}/net", vf.pci));
    std::fs::rename(net.join(&vf.ifname), net.join("net1")).unwrap();

    let new = node.pod("new");
    let add_new = Req::new(
        "ADD",
        "new",
        &new,
        "net1",
        conf("1.0.0", "rail1", &vf.pci, json!({})),
    );
    node.cni(&add_new).ok();
    assert!(link_in(&Node::ns_of(&new), "net1").is_some());
    // The old pod's late DEL must not take the VF from the new pod.
    node.cni(&add_old.cmd("DEL")).ok();
    assert!(link_in(&Node::ns_of(&new), "net1").is_some());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn multus_exact_invocation_at_0_3_1_and_1_0_0() {
    for version in ["0.3.1", "1.0.0"] {
        let node = Node::new(1, 1);
        let vf = &node.vfs[0];
        let pod = node.pod("pod");
        // Multus injects deviceID and pciBusID at the top level and runs
        // one plugin per network with its CNI_ARGS.
        let c = json!({
            "cniVersion": version, "name": "rail1", "type": "railcni",
            "deviceID": vf.pci, "pciBusID": vf.pci,
            "ipam": node.host_local("172.16.0.0/24")
        });
        let mut add = Req::new("ADD", "9f1c0ffee", &pod, "net1", c);
        add.args = Some(
            "IgnoreUnknown=true;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=9f1c0ffee;K8S_POD_UID=1b2c".to_string()
        );
        let r = node.cni(&add).ok();
        assert_eq!(r["cniVersion"], version);
        let iface = &r["interfaces"][0];
        assert_eq!(iface["name"], "net1");
        assert_eq!(iface["mtu"], 9000);
        assert_eq!(iface["sandbox"], pod.as_str());
        assert!(iface["mac"].as_str().unwrap().len() == 17);
        assert_eq!(r["ips"][0]["interface"], 0);
        assert_eq!(r["ips"][0].get("version").is_some(), version == "0.3.1");
        node.cni(&add.cmd("DEL")).ok();
        assert!(node.link(&node.host(), &vf.ifname).is_some());
    }
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn version_status_and_gc() {
    let node = Node::new(1, 2);
    let pod = node.pod("pod");
    let v = node
        .cni(&Req::new(
            "VERSION",
            "",
            "",
            "",
            json!({"cniVersion": "1.0.0"}),
        ))
        .ok();
    assert_eq!(
        v["supportedVersions"],
        json!(["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"])
    );

    let status = |c: Value| {
        node.cni(&Req {
            netns: None,
            ..Req::new("STATUS", "", "", "", c)
        })
    };
    status(json!({"cniVersion": "1.1.0", "name": "rail1", "type": "railcni"})).ok();
    status(json!({"cniVersion": "1.0.0", "name": "rail1", "type": "railcni"})).err(1);

    // GC drops the attachment not listed and returns its VF.
    let keep = Req::new(
        "ADD",
        "keep",
        &pod,
        "net1",
        conf("1.1.0", "rail1", &node.vfs[0].pci, json!({})),
    );
    let drop = Req::new(
        "ADD",
        "drop",
        &pod,
        "net2",
        conf("1.1.0", "rail1", &node.vfs[1].pci, json!({})),
    );
    node.cni(&keep).ok();
    node.cni(&drop).ok();
    let gc = json!({"cniVersion": "1.1.0", "name": "rail1", "type": "railcni",
                    "cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "net1"}]});
    let mut gc_req = Req::new("GC", "", "", "", gc);
    gc_req.netns = None;
    node.cni(&gc_req).ok();
    let ns = Node::ns_of(&pod);
    assert!(link_in(&ns, "net1").is_some());
    assert!(link_in(&ns, "net2").is_none());
    assert!(
        node.link(&node.host(), &node.vfs[1].ifname).is_some(),
        "dropped VF is home"
    );
    assert!(node.record_exists(&node.vfs[0].pci));
    assert!(!node.record_exists(&node.vfs[1].pci));
    // GC below 1.1.0 is refused.
    gc_req.conf["cniVersion"] = json!("1.0.0");
    node.cni(&gc_req).err(1);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn nothing_but_the_result_reaches_stdout() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let log = node.dir.path().join("logs/railcni.log");
    let mut c = conf("1.0.0", "rail1", &vf.pci, json!({}));
    c["logFile"] = json!("railcni.log");
    c["logLevel"] = json!("debug");
    let reply = node.cni(&Req::new("ADD", "c1", &pod, "net1", c.clone()));
    assert!(reply.success);
    assert_eq!(reply.stdout.trim().lines().count(), 1);
    assert!(reply.json.is_object());
    node.cni(&Req::new("DEL", "c1", &pod, "net1", c)).ok();
    let logged = std::fs::read_to_string(&log).unwrap();
    // The closing lines say where the time went (the move is the kernel's).
    for verb in ["attached VF", "detached VF"] {
        let line = logged.lines().find(|l| l.contains(verb)).unwrap_or("");
        assert!(
            line.contains("ms of it the kernel's namespace move)"),
            "{verb}: {logged}"
        );
    }
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn config_errors_reach_the_log_file() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let mut c = conf("1.0.0", "rail1", &vf.pci, json!({}));
    c["logFile"] = json!("errors.log");
    c["mtu"] = json!("big");
    let mut add = Req::new("ADD", "c1", &pod, "net1", c);
    add.args = Some("IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-0".into());
    node.cni(&add).err(7);
    let logged = std::fs::read_to_string(node.dir.path().join("logs/errors.log")).unwrap();
    assert!(
        logged.contains("mtu") && logged.contains("ml/trainer-0") && logged.contains(&vf.pci),
        "the failure line names the field, the pod and the VF: {logged}"
    );
    // The logging fields themselves are checked once, by the skeleton.
    for (field, value) in [("logLevel", json!("loud")), ("logFile", json!(7))] {
        let mut c = add.conf.clone();
        c[field] = value;
        let err = node.cni(&add.with_conf(c)).err(7);
        assert!(
            err["details"].as_str().unwrap_or("").contains(field),
            "{err}"
        );
    }
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_nad_cannot_make_root_write_outside_the_log_dir() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("pod");
    let victim = node.dir.path().join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    let link = node.dir.path().join("logs/link.log");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for (i, target) in [
        victim.display().to_string(),
        "../victim".to_string(),
        "link.log".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut c = conf("1.0.0", "rail\n1", &vf.pci, json!({}));
        c["logFile"] = json!(target);
        let add = Req::new("ADD", &format!("c{i}"), &pod, "net1", c);
        node.cni(&add).ok();
        node.cni(&add.cmd("DEL")).ok();
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    // The newline in the network name never starts a line of its own.
    let mut c = conf("1.0.0", "rail1\n* * * * * root evil", &vf.pci, json!({}));
    c["logFile"] = json!("ok.log");
    let add = Req::new("ADD", "c9", &pod, "net1", c);
    node.cni(&add).ok();
    let logged = std::fs::read_to_string(node.dir.path().join("logs/ok.log")).unwrap();
    assert!(
        logged.lines().all(|l| !l.starts_with("* * * * *")),
        "{logged}"
    );
    node.cni(&add.cmd("DEL")).ok();
}
