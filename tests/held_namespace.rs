//! A lease goes only when its VF is home (#52): DEL through an empty
//! CNI_NETNS, a path removed while a process still holds the namespace, a
//! path that is no longer a namespace, and a namespace railcni cannot reach
//! at all. No two pods ever hold one address, every DEL answers, and gc
//! finishes what DEL had to leave held. On the fake node; needs root.

mod common;

use std::process::Command;

use common::*;
use serde_json::Value;

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_empty_netns_del_of_a_living_pod_brings_the_vf_home_before_its_address_goes() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let old = node.pod("old");
    let add = rail1("old", &old, vf);
    assert_eq!(address(&node.cni(&add).ok()), "172.16.0.0/31");

    let mut del = add.cmd("DEL");
    del.netns = None;
    node.cni(&del).ok();
    assert!(
        link_in(&Node::ns_of(&old), "net1").is_none(),
        "the VF left the old pod, found by the identity its record holds"
    );
    assert!(link_in(&node.host(), &vf.ifname).is_some(), "VF home");
    assert!(!leases(&node).contains("\"old\""), "{}", leases(&node));

    let new = node.pod("new");
    assert_eq!(
        address(&node.cni(&rail1("new", &new, vf)).ok()),
        "172.16.0.0/31"
    );
    assert!(
        addresses_in(&Node::ns_of(&old), "net1").is_empty(),
        "one address, one pod"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_del_whose_path_is_gone_takes_the_vf_back_from_the_process_still_in_it() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let old = node.pod("old");
    let add = rail1("old", &old, vf);
    node.cni(&add).ok();
    let holder = Holder::inside(&old);
    sh(&format!("ip netns del {}", Node::ns_of(&old)));

    let reply = node.cni(&add.cmd("DEL"));
    let log = reply.stderr.clone();
    reply.ok();
    assert!(
        log.contains(&format!("process {} is in it", holder.pid())),
        "{log}"
    );
    assert!(link_in(&node.host(), &vf.ifname).is_some(), "VF home");
    assert!(!node.record_exists(&vf.pci));
    assert!(!leases(&node).contains("\"old\""));
    let left = Command::new("nsenter")
        .args([
            &format!("--net=/proc/{}/ns/net", holder.pid()),
            "ip",
            "-o",
            "link",
        ])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains("net1"),
        "nothing of the VF stays in the held namespace"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_del_through_a_path_that_is_no_longer_a_namespace_converges_and_add_there_is_refused() {
    let node = Node::new(1, 2);
    let (vf, other) = (&node.vfs[0], &node.vfs[1]);
    let old = node.pod("old");
    let add = rail1("old", &old, vf);
    node.cni(&add).ok();
    let _holder = Holder::inside(&old);
    // The bind mount goes, its plain file stays: what a runtime that
    // cleaned up out of order leaves.
    sh(&format!("umount {old}"));
    assert!(std::path::Path::new(&old).is_file());

    node.cni(&add.cmd("DEL")).ok();
    assert!(link_in(&node.host(), &vf.ifname).is_some(), "VF home");
    assert!(!node.record_exists(&vf.pci));
    assert!(!leases(&node).contains("\"old\""));
    node.cni(&add.cmd("DEL")).ok();

    let before = node.link(&node.host(), &other.ifname);
    let refused = node.cni(&rail1("late", &old, other)).err(3);
    assert!(
        refused["details"]
            .as_str()
            .unwrap_or("")
            .contains("is not a network namespace"),
        "{refused}"
    );
    assert_eq!(
        node.link(&node.host(), &other.ifname),
        before,
        "nothing changed"
    );
    assert!(!node.record_exists(&other.pci));
    assert!(!leases(&node).contains("\"late\""));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_vf_out_of_reach_keeps_its_address_until_gc_finds_it_home() {
    let node = Node::new(1, 2);
    let (vf, other) = (&node.vfs[0], &node.vfs[1]);
    let old = node.pod("old");
    let add = rail1("old", &old, vf);
    node.cni(&add).ok();
    let holder = Holder::by_descriptor(&old);
    sh(&format!("ip netns del {}", Node::ns_of(&old)));

    // DEL answers (the runtime must not hang) but gives nothing away.
    let reply = node.cni(&add.cmd("DEL"));
    let log = reply.stderr.clone();
    reply.ok();
    assert!(
        log.contains("neither home nor in a namespace railcni can reach"),
        "{log}"
    );
    assert!(node.record_exists(&vf.pci), "the record is kept");
    assert!(
        leases(&node).contains("\"old\""),
        "the address stays leased"
    );

    // The rail's only address on this node is not handed out twice.
    let new = node.pod("new");
    let exhausted = node.cni(&rail1("new", &new, other)).err(110);
    assert!(
        exhausted["details"]
            .as_str()
            .unwrap_or("")
            .contains("1 of 1"),
        "{exhausted}"
    );

    let (code, status) = node.operator_json(&["status"]);
    assert_eq!(code, 1, "{status}");
    let kinds: Vec<&str> = status["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"netns-unreachable"), "{status}");

    // The namespace dies: the kernel hands the VF back (played here, as
    // the stand-in veth would otherwise die with it), and gc finishes.
    let fd = format!("/proc/{}/fd/0", holder.pid());
    sh(&format!(
        "nsenter --net={fd} ip link set net1 netns {} name {}",
        node.host(),
        vf.ifname
    ));
    drop(holder);
    let (code, out, err) = node.operator(&["gc", "--apply"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!node.record_exists(&vf.pci), "{out}");
    assert!(!leases(&node).contains("\"old\""), "{out}");
    assert_eq!(
        address(&node.cni(&rail1("new", &new, other)).ok()),
        "172.16.0.0/31"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_add_whose_namespace_goes_away_before_it_answers_leaves_nothing() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname);
    let pod = node.pod("p");
    // The lease lock is held while the ADD starts, so the namespace can be
    // deleted while that ADD (holding it open) waits.
    std::fs::create_dir_all(node.state_dir().join("ipam")).unwrap();
    let lock = std::fs::File::create(node.state_dir().join("ipam/rail1.lock")).unwrap();
    lock.lock().unwrap();
    let add = rail1("p", &pod, vf);
    let waiting = {
        let node_ref = &node;
        std::thread::scope(|s| {
            let call = s.spawn(|| node_ref.cni(&add));
            // Wait until the ADD holds the namespace (its VF lock is taken).
            std::thread::sleep(std::time::Duration::from_millis(400));
            sh(&format!("ip netns del {}", Node::ns_of(&pod)));
            lock.unlock().unwrap();
            call.join().unwrap()
        })
    };
    let err = waiting.err(3);
    assert!(
        err["details"]
            .as_str()
            .unwrap_or("")
            .contains("went away while ADD ran"),
        "{err}"
    );
    assert_eq!(
        node.link(&node.host(), &vf.ifname),
        before,
        "VF home as it was"
    );
    assert!(!node.record_exists(&vf.pci));
    assert!(!leases(&node).contains("\"p\""), "{}", leases(&node));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_lease_carries_the_identity_of_the_namespace_add_attached_into() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    node.cni(&rail1("p", &pod, vf)).ok();
    let file: Value = serde_json::from_str(&leases(&node)).unwrap();
    let lease = &file["data"]["leases"][0];
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&pod).unwrap());
    assert_eq!(lease["netnsId"]["ino"].as_u64(), Some(ino), "{file}");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_read_only_state_dir_does_not_fail_a_del_with_nothing_to_give_back() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let pod = node.pod("p");
    let state = node.state_dir();
    std::fs::create_dir_all(&state).unwrap();
    let del = rail1("never-added", &pod, vf)
        .cmd("DEL")
        .in_mount_namespace(&format!("mount -o bind,ro {0} {0}", state.display()));
    node.cni(&del).ok();
    assert!(link_in(&node.host(), &vf.ifname).is_some());
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_ifname_the_kernel_reads_as_a_template_is_refused_before_anything_changes() {
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let before = node.link(&node.host(), &vf.ifname);
    let pod = node.pod("p");
    let mut add = rail1("p", &pod, vf);
    add.ifname = "rail%d".into();
    let err = node.cni(&add).err(4);
    assert!(
        err["details"].as_str().unwrap_or("").contains("'%'"),
        "{err}"
    );
    assert_eq!(node.link(&node.host(), &vf.ifname), before);
    assert!(!node.record_exists(&vf.pci));
    assert!(!leases(&node).contains("\"p\""));
    node.cni(&add.cmd("DEL")).ok();
}
