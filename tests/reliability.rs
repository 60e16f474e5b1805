//! What a node lives through without DELs: pods that die (a kubelet restart,
//! a reboot) leave records and leases behind, and the next ADDs must clean
//! up by themselves, safely. Also: rails whose names or routes could collide.
//! On the fake node; needs root.

mod common;

use common::strace::{disk_use, DiskUse};
use common::*;
use serde_json::{json, Value};

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_missed_del_never_strands_the_address_of_the_same_vf() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let old = node.pod("old");
    let add_old = rail1("old", &old, vf);
    let first = node.cni(&add_old).ok();
    assert_eq!(address(&first), "172.16.0.0/31");
    node.kill_pod(&old, &[(vf, "net1")]);

    let new = node.pod("new");
    let add_new = rail1("new", &new, vf);
    let second = node.cni(&add_new).ok();
    assert_eq!(
        address(&second),
        "172.16.0.0/31",
        "the /31's only address, again"
    );
    assert_eq!(addresses_in(&Node::ns_of(&new), "net1"), ["172.16.0.0/31"]);
    let held = leases_of(&node, "rail1");
    assert!(
        held.contains("\"new\"") && !held.contains("\"old\""),
        "{held}"
    );

    // The dead pod's late DEL succeeds and takes nothing from the new one.
    node.cni(&add_old.cmd("DEL")).ok();
    assert!(link_in(&Node::ns_of(&new), "net1").is_some());
    assert!(leases_of(&node, "rail1").contains("\"new\""));
    node.cni(
        &add_new
            .cmd("CHECK")
            .with_conf(with_prev(&add_new.conf, &second)),
    )
    .ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_missed_del_never_strands_the_address_for_another_vf_of_the_pool() {
    let node = Node::new(1, 2);
    let (vf0, vf1) = (&node.vfs[0], &node.vfs[1]);
    let old = node.pod("old");
    let add_old = rail1("old", &old, vf0);
    node.cni(&add_old).ok();
    node.kill_pod(&old, &[(vf0, "net1")]);

    let new = node.pod("new");
    let add_new = rail1("new", &new, vf1);
    let reply = node.cni(&add_new);
    assert!(
        reply.stderr.contains("reclaimed")
            && reply.stderr.contains("172.16.0.0")
            && reply.stderr.contains("is gone"),
        "the reclaim is logged with the address and why: {}",
        reply.stderr
    );
    assert_eq!(address(&reply.ok()), "172.16.0.0/31");
    // The old record is still there (its VF was not asked for); its late
    // DEL brings that VF home and leaves the new lease alone.
    assert!(node.record_exists(&vf0.pci));
    node.cni(&add_old.cmd("DEL")).ok();
    assert!(!node.record_exists(&vf0.pci));
    assert!(link_in(&node.host(), &vf0.ifname).is_some(), "old VF home");
    assert!(leases_of(&node, "rail1").contains("\"new\""));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn after_a_reboot_the_old_boots_leases_are_reclaimed_even_if_a_path_survives() {
    let node = Node::new(1, 2);
    let (vf0, vf1) = (&node.vfs[0], &node.vfs[1]);
    let old = node.pod("old");
    let add_old = rail1("old", &old, vf0);
    node.cni(&add_old).ok();
    node.reboot("boot-2");

    let new = node.pod("new");
    let add_new = rail1("new", &new, vf1);
    let reply = node.cni(&add_new);
    assert!(
        reply.stderr.contains("reclaimed") && reply.stderr.contains("earlier boot"),
        "{}",
        reply.stderr
    );
    assert_eq!(address(&reply.ok()), "172.16.0.0/31");
    node.cni(&add_old.cmd("DEL")).ok();
    assert!(link_in(&node.host(), &vf0.ifname).is_some());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_live_pods_lease_is_never_taken() {
    let node = Node::new(1, 2);
    let (vf0, vf1) = (&node.vfs[0], &node.vfs[1]);
    let a = node.pod("a");
    node.cni(&rail1("a", &a, vf0)).ok();
    let b = node.pod("b");
    let e = node.cni(&rail1("b", &b, vf1)).err(110);
    assert!(
        e["details"].as_str().unwrap_or("").contains("exhausted"),
        "{e}"
    );
    assert!(leases_of(&node, "rail1").contains("\"a\""));
    assert!(
        link_in(&node.host(), &vf1.ifname).is_some(),
        "nothing moved"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn clearing_a_dead_pods_record_restores_its_vf_settings() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    node.set_hardware(
        json!({"vfs": {"pf1/0": {"vlan": {"id": 7, "qos": 0, "proto": "802.1q"}, "trust": false}}}),
    );
    let mut c = conf("1.0.0", "rail1", &vf.pci, Node::embedded_ipam(1));
    c["vlan"] = json!(100);
    c["trust"] = json!("on");
    let old = node.pod("old");
    node.cni(&Req::new("ADD", "old", &old, "net1", c)).ok();
    assert_eq!(node.hardware()["vfs"]["pf1/0"]["vlan"]["id"], 100);
    node.kill_pod(&old, &[(vf, "net1")]);

    let new = node.pod("new");
    let plain = conf("1.0.0", "rail1", &vf.pci, Node::embedded_ipam(1));
    node.cni(&Req::new("ADD", "new", &new, "net1", plain)).ok();
    let now = &node.hardware()["vfs"]["pf1/0"];
    assert_eq!(
        now["vlan"]["id"], 7,
        "the dead pod's VLAN did not stick: {now}"
    );
    assert_eq!(now["trust"], false);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rail_names_that_are_not_net_n_get_their_own_tables() {
    let node = Node::new(2, 1);
    let pod = node.pod("pod");
    let ns = Node::ns_of(&pod);
    for (vf, ifname) in [(&node.vfs[0], "net-a"), (&node.vfs[1], "net-b")] {
        let c = conf(
            "1.1.0",
            &format!("rail{}", vf.rail),
            &vf.pci,
            Node::embedded_ipam(vf.rail),
        );
        node.cni(&Req::new("ADD", "c1", &pod, ifname, c)).ok();
    }
    let rules = out(&format!("ip -n {ns} rule show"));
    let ours: Vec<&str> = rules.lines().filter(|l| l.contains("from 172.")).collect();
    assert_eq!(ours.len(), 2, "both rules survive: {rules}");
    let prio = |l: &str| l.split(':').next().unwrap_or("").to_string();
    assert_ne!(prio(ours[0]), prio(ours[1]), "{rules}");
    assert!(ours.iter().any(|l| l.contains("lookup 1100")), "{rules}");
    assert!(ours.iter().any(|l| l.contains("lookup 1101")), "{rules}");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_main_route_shared_by_two_rails_is_claimed_only_by_the_first() {
    let node = Node::new(2, 1);
    let pod = node.pod("pod");
    let mut results = Vec::new();
    for vf in &node.vfs {
        let mut c = conf(
            "1.1.0",
            &format!("rail{}", vf.rail),
            &vf.pci,
            Node::embedded_ipam(vf.rail),
        );
        c["routing"] = json!({"railCidr": "172.16.0.0/12"});
        let ifname = format!("net{}", vf.rail);
        let add = Req::new("ADD", "c1", &pod, &ifname, c.clone());
        let r = node.cni(&add).ok();
        node.cni(&add.cmd("CHECK").with_conf(with_prev(&c, &r)))
            .ok();
        results.push(r);
    }
    let in_main = |r: &Value| {
        r["routes"]
            .as_array()
            .map(|routes| {
                routes
                    .iter()
                    .filter(|x| x["dst"] == "172.16.0.0/12" && x.get("table").is_none())
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(in_main(&results[0]), 1, "{}", results[0]);
    assert_eq!(
        in_main(&results[1]),
        0,
        "never claimed twice: {}",
        results[1]
    );
}

/// `railcnictl gc --apply` releases a lease an external IPAM plugin made
/// (host-local here), by running that plugin's DEL with the config the
/// record kept from ADD, as DEL would have.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn gc_releases_the_lease_of_an_external_ipam_plugin() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("gone");
    let add = Req::new("ADD", "gone", &pod, "net1", node.rail1_conf(vf));
    let result = node.cni(&add).ok();
    assert_eq!(address(&result), "172.16.0.2/24", "host-local's first");
    assert_eq!(node.host_local_leases("rail1"), ["172.16.0.2"]);
    node.kill_pod(&pod, &[(vf, "net1")]);

    let (code, done) = node.operator_json(&["gc", "--apply"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(done["actions"][0]["result"], "done", "{done}");
    assert!(!node.record_exists(&vf.pci));
    assert!(
        node.host_local_leases("rail1").is_empty(),
        "host-local's lease file must be gone: {:?}",
        node.host_local_leases("rail1")
    );
}

/// A DEL that cannot take the lease lock in time answers 11 ("try again
/// later"), not a netlink error; the VF is home and the record kept, so the
/// runtime's retry finishes the job.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn del_behind_a_held_lease_lock_answers_try_again() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    let add = rail1("p", &pod, vf);
    node.cni(&add).ok();

    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .open(node.state_dir().join("ipam/rail1.lock"))
        .unwrap();
    lock.lock().unwrap();
    let mut del = add.cmd("DEL");
    del.env
        .push(("RAILCNI_LOCK_TIMEOUT_MS".into(), "300".into()));
    let err = node.cni(&del).err(11);
    let msg = err["details"].as_str().unwrap_or_default();
    assert!(msg.contains("release address"), "{err}");
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "the VF is home"
    );
    assert!(node.record_exists(&vf.pci), "kept for the retry");
    assert!(
        leases_of(&node, "rail1").contains("\"p\""),
        "the lease is still held"
    );

    lock.unlock().unwrap();
    node.cni(&del).ok();
    assert!(!node.record_exists(&vf.pci));
    assert!(!leases_of(&node, "rail1").contains("\"p\""));
}

/// One call run under strace, tracing only `filter` (an `-e` expression).
fn strace_of(node: &Node, req: &Req, filter: &str) -> (Reply, String) {
    let out = node
        .state_dir()
        .with_extension(format!("{}.strace", req.command));
    let mut traced = req.clone();
    traced.wrap = ["strace", "-f", "-qq", "-e", filter, "-o"]
        .iter()
        .map(|s| s.to_string())
        .chain([out.display().to_string()])
        .collect();
    let reply = node.cni(&traced);
    let trace = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    (reply, trace)
}

/// Run `req` under strace and say what it did to the disk.
fn traced(node: &Node, req: &Req) -> (Reply, DiskUse) {
    let filter = "trace=fsync,fdatasync,syncfs,sync,sync_file_range,rename,renameat,renameat2";
    let (reply, trace) = strace_of(node, req, filter);
    (reply, disk_use(&trace))
}

/// ADD and DEL wait for the disk nowhere and start no writeback: every
/// state file is replaced without a sync (see "No ADD or DEL waits for the
/// disk" in docs/architecture.md for why that is safe), existing ones by exchange.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_add_and_a_del_never_wait_for_the_disk_nor_start_writing_to_it() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    let add = rail1("p", &pod, vf);
    // The first ADD and DEL leave a lease file that the next ones replace.
    node.cni(&add).ok();
    node.cni(&add.cmd("DEL")).ok();
    let (reply, add_use) = traced(&node, &add);
    reply.ok();
    let (reply, del_use) = traced(&node, &add.cmd("DEL"));
    reply.ok();
    for (verb, usage) in [("ADD", &add_use), ("DEL", &del_use)] {
        assert_eq!(usage.syncs, 0, "{verb}: {usage:?}");
        assert_eq!(usage.renames_over_existing, 0, "{verb}: {usage:?}");
        assert!(
            usage.exchanges >= 1,
            "{verb} replaces the lease file: {usage:?}"
        );
    }
}

/// An OS crash ends every pod and may leave a record that never reached the
/// disk (empty). After the reboot the VF is attachable again, the old
/// boot's lease is reclaimed, and the torn record is kept aside, not fatal.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_record_torn_by_an_os_crash_is_set_aside_after_the_reboot() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let old = node.pod("old");
    let add_old = rail1("old", &old, vf);
    node.cni(&add_old).ok();
    node.kill_pod(&old, &[(vf, "net1")]);
    node.reboot("boot-2");
    let record = node
        .state_dir()
        .join(format!("attachments/{}.json", vf.pci));
    std::fs::write(&record, "").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&record)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
        .unwrap();

    let new = node.pod("new");
    let reply = node.cni(&rail1("new", &new, vf));
    assert!(
        reply.stderr.contains("an OS crash left it"),
        "{}",
        reply.stderr
    );
    assert_eq!(
        address(&reply.ok()),
        "172.16.0.0/31",
        "the old lease is reclaimed"
    );
    assert!(record.with_extension("json.crashed").exists());
    node.cni(&add_old.cmd("DEL")).ok();
    assert!(
        link_in(&Node::ns_of(&new), "net1").is_some(),
        "the old DEL leaves the new pod alone"
    );
}

/// The rail's MTU is the pod's as ADD answers, the link is up, and DEL
/// gives the VF back with its own MTU.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_rail_mtu_is_set_in_the_pod_and_the_host_mtu_restored() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    let host_mtu = link_in(&node.host(), &vf.ifname).map(|l| l.mtu);
    assert_ne!(
        host_mtu,
        Some(9000),
        "the stand-in starts below the rail MTU"
    );
    let add = rail1("p", &pod, vf);
    assert_eq!(node.cni(&add).ok()["interfaces"][0]["mtu"], 9000);
    let inside = link_in(&Node::ns_of(&pod), "net1").map(|l| (l.mtu, l.up));
    assert_eq!(inside, Some((9000, true)));
    node.cni(&add.cmd("DEL")).ok();
    assert_eq!(
        link_in(&node.host(), &vf.ifname).map(|l| l.mtu),
        host_mtu,
        "the VF is home with its own MTU"
    );
}

/// Each VF's index on its PF comes from its PCI address: a PF-side setting
/// of an ADD lands on that VF and no other.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn each_vfs_settings_land_on_its_own_index() {
    let node = Node::new(1, 6);
    let pod = node.pod("p");
    for (index, vf) in node.vfs.iter().enumerate() {
        let mut add = rail1("p", &pod, vf);
        add.conf["trust"] = serde_json::json!("on");
        node.cni(&add).ok();
        let vfs = node.hardware()["vfs"].clone();
        let trusted: Vec<&String> = vfs
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, v)| v["trust"] == true)
            .map(|(k, _)| k)
            .collect();
        assert_eq!(trusted, [&format!("pf1/{index}")], "VF {}", vf.pci);
        node.cni(&add.cmd("DEL")).ok();
    }
}

/// Without CAP_NET_ADMIN (or CAP_SYS_ADMIN) railcni refuses before it
/// changes anything, naming the capability, instead of failing deep inside
/// netlink with EPERM.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_missing_capability_is_named_before_anything_changes() {
    let node = Node::new(1, 1);
    let before = node.link(&node.host(), &node.vfs[0].ifname).unwrap();
    let pod = node.pod("p");
    let ipam =
        serde_json::json!({"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0"]});
    for cap in ["net_admin", "sys_admin"] {
        let mut add = Req::new(
            "ADD",
            "c1",
            &pod,
            "net1",
            conf("1.1.0", "rail1", &node.vfs[0].pci, ipam.clone()),
        );
        add.wrap = vec!["setpriv".into(), "--bounding-set".into(), format!("-{cap}")];
        let e = node.cni(&add).err(109);
        let details = e["details"].as_str().unwrap();
        assert!(
            details.contains(&format!("CAP_{}", cap.to_uppercase())),
            "{details}"
        );
        assert_eq!(
            node.link(&node.host(), &node.vfs[0].ifname),
            Some(before.clone())
        );
        assert!(!node.record_exists(&node.vfs[0].pci));
    }
}
