//! A dead pod is told from a live one by an identity the kernel never
//! reuses (#58). nsfs inodes are handed out lowest-free, so a namespace
//! made after a pod's died gets the dead one's inode (design.md §17): each
//! case here makes that happen for real and checks the inode matched. On
//! the fake node; needs root.

mod common;

use common::*;
use serde_json::Value;

fn rules_in(path: &str) -> String {
    out(&format!("ip -n {} rule show", Node::ns_of(path)))
}

/// Strip the cookies from the node's record and lease files: what the
/// releases before it wrote (the lease file's checksum made again).
fn as_the_last_release_wrote(node: &Node) {
    for entry in std::fs::read_dir(node.state_dir().join("attachments")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_some_and(|e| e == "json") {
            let mut v: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            strip_cookies(&mut v);
            std::fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        }
    }
    // The lease file's checksum is over `data`'s text as written.
    let file = node.state_dir().join("ipam/rail1.leases.json");
    let text = without_cookies(&std::fs::read_to_string(&file).unwrap());
    let at = text.find("\"data\":").unwrap() + "\"data\":".len();
    let data = text[at..text.rfind('}').unwrap()].trim();
    let old = &text[text.find("fnv1a64:").unwrap()..][..8 + 16];
    let text = text.replace(old, &fnv1a64(minify(data).as_bytes()));
    std::fs::write(&file, text).unwrap();
}

/// `text` without its `"netnsCookie": N` members (and their commas).
fn without_cookies(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(at) = out.find("\"netnsCookie\":") {
        let value = at + "\"netnsCookie\":".len();
        let len = out[value..]
            .find(|c: char| !c.is_ascii_digit() && c != ' ')
            .unwrap();
        let (mut start, mut end) = (at, value + len);
        if out[end..].starts_with(',') {
            end += 1;
            end += out[end..].len() - out[end..].trim_start().len();
        } else {
            start = out[..start].trim_end().len();
            if out[..start].ends_with(',') {
                start -= 1;
            }
        }
        out.replace_range(start..end, "");
    }
    out
}

fn strip_cookies(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("netnsCookie");
            m.values_mut().for_each(strip_cookies);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cookies),
        _ => {}
    }
}

/// Every test here waits for the kernel to hand a dead namespace's inode
/// to a new one: namespaces made meanwhile by a test beside it would take
/// it first, so they run one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pod A attached to `vf`, then lost its DEL and died (its VF went home).
/// Its namespace's inode.
fn a_pod_that_lost_its_del(node: &Node, vf: &FakeVf) -> u64 {
    let a = node.pod("a");
    assert_eq!(
        address(&node.cni(&rail1("a", &a, vf)).ok()),
        "172.16.0.0/31"
    );
    let ino = Node::inode_of(&a);
    node.kill_pod(&a, &[(vf, "net1")]);
    ino
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_lost_del_does_not_block_the_rail_for_as_long_as_an_unrelated_pod_lives() {
    let _serial = serial();
    let node = Node::new(1, 2);
    let (vf, other) = (&node.vfs[0], &node.vfs[1]);
    let ino = a_pod_that_lost_its_del(&node, vf);
    // Any pod on the node, on any network: its sandbox gets A's inode.
    let d = node.pod_reusing_inode("d", ino);
    let sandbox = Holder::inside(&d);

    let (_, status) = node.operator_json(&["status"]);
    assert!(
        !status.to_string().contains(&sandbox.pid().to_string()),
        "status names no live pod's process as A's holder: {status}"
    );
    // The rail's one address on this node goes to the next pod.
    let n = node.pod("n");
    let add_n = rail1("n", &n, other);
    let result = node.cni(&add_n).ok();
    assert_eq!(address(&result), "172.16.0.0/31");
    // A's record is gone's to gc, never a repair that would lease its
    // address again while n holds it.
    let (_, status) = node.operator_json(&["status"]);
    let problems = status["problems"].to_string();
    assert!(problems.contains("netns-gone"), "{status}");
    assert!(!problems.contains("ipam repair"), "{status}");
    let (code, gc_out, err) = node.operator(&["gc", "--apply"]);
    assert_eq!(code, 0, "{gc_out}{err}");
    assert!(
        !node.record_exists(&vf.pci),
        "A's record given back: {gc_out}"
    );
    assert!(link_in(&node.host(), &vf.ifname).is_some(), "A's VF home");
    assert_eq!(
        out(&format!("ip -n {} -o link", Node::ns_of(&d)))
            .lines()
            .count(),
        1,
        "D's namespace untouched (lo only)"
    );
    node.cni(
        &add_n
            .cmd("CHECK")
            .with_conf(with_prev(&add_n.conf, &result)),
    )
    .ok();
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_dead_pods_del_and_gc_never_act_in_the_live_pod_that_took_its_inode() {
    let _serial = serial();
    let node = Node::new(1, 2);
    let (vf, other) = (&node.vfs[0], &node.vfs[1]);
    let ino = a_pod_that_lost_its_del(&node, vf);
    // containerd's order: the namespace, ADD, then the sandbox's process.
    let c = node.pod_reusing_inode("c", ino);
    let add_c = rail1("c", &c, other);
    let result = node.cni(&add_c).ok();
    assert_eq!(address(&result), "172.16.0.0/31", "A's lease reclaimed");
    let _sandbox = Holder::inside(&c);
    let rule = "from 172.16.0.0 lookup";
    assert!(rules_in(&c).contains(rule), "{}", rules_in(&c));

    // A's DEL arrives at last, with the namespace gone.
    let mut del_a = rail1("a", "", vf).cmd("DEL");
    del_a.netns = None;
    let reply = node.cni(&del_a);
    let log = reply.stderr.clone();
    reply.ok();
    assert!(!log.contains("found the pod's namespace"), "{log}");
    assert!(rules_in(&c).contains(rule), "C keeps its rule: {log}");
    assert!(addresses_in(&Node::ns_of(&c), "net1").contains(&"172.16.0.0/31".to_string()));
    node.cni(
        &add_c
            .cmd("CHECK")
            .with_conf(with_prev(&add_c.conf, &result)),
    )
    .ok();

    let (code, out, err) = node.operator(&["gc", "--apply"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(rules_in(&c).contains(rule), "gc left C's rule: {out}");
    node.cni(
        &add_c
            .cmd("CHECK")
            .with_conf(with_prev(&add_c.conf, &result)),
    )
    .ok();
    assert!(leases(&node).contains("\"c\""), "{}", leases(&node));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn records_without_a_cookie_count_a_reused_inode_as_the_pods_only_with_its_vf_in_it() {
    let _serial = serial();
    let node = Node::new(1, 2);
    let (vf, other) = (&node.vfs[0], &node.vfs[1]);

    // The pod's namespace still holds its VF, through a process: found.
    let held = node.pod("held");
    let add = rail1("held", &held, vf);
    node.cni(&add).ok();
    as_the_last_release_wrote(&node);
    let holder = Holder::inside(&held);
    sh(&format!("ip netns del {}", Node::ns_of(&held)));
    let reply = node.cni(&add.cmd("DEL"));
    let log = reply.stderr.clone();
    reply.ok();
    assert!(
        log.contains(&format!("process {} is in it", holder.pid())),
        "{log}"
    );
    assert!(link_in(&node.host(), &vf.ifname).is_some(), "VF home");
    drop(holder);

    // A dead pod's inode reused by a namespace without its VF: not the pod's.
    let ino = {
        let a = node.pod("a");
        node.cni(&rail1("a", &a, vf)).ok();
        as_the_last_release_wrote(&node);
        let ino = Node::inode_of(&a);
        node.kill_pod(&a, &[(vf, "net1")]);
        ino
    };
    let d = node.pod_reusing_inode("d", ino);
    let _sandbox = Holder::inside(&d);
    let n = node.pod("n");
    assert_eq!(
        address(&node.cni(&rail1("n", &n, other)).ok()),
        "172.16.0.0/31"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_del_naming_the_plugins_own_namespace_leaves_the_hosts_rules() {
    let _serial = serial();
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let p = node.pod("p");
    let add = rail1("p", &p, vf);
    node.cni(&add).ok();
    let host = node.host();
    sh(&format!(
        "ip -n {host} rule add from 172.16.0.0 lookup 5000 prio 777"
    ));
    let own = format!("/var/run/netns/{host}");
    let mut del = add.cmd("DEL");
    del.netns = Some(own);
    let reply = node.cni(&del);
    let log = reply.stderr.clone();
    reply.ok();
    assert!(log.contains("the plugin's own network namespace"), "{log}");
    assert!(
        out(&format!("ip -n {host} rule show")).contains("from 172.16.0.0 lookup 5000"),
        "the host's own rule stays"
    );
    assert!(
        link_in(&node.host(), &vf.ifname).is_some(),
        "VF home from its pod"
    );
    assert!(link_in(&Node::ns_of(&p), "net1").is_none());
    assert!(!node.record_exists(&vf.pci));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn records_and_leases_carry_the_namespace_cookie() {
    let _serial = serial();
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let p = node.pod("p");
    node.cni(&rail1("p", &p, vf)).ok();
    let lease: Value = serde_json::from_str(&leases(&node)).unwrap();
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(
            node.state_dir()
                .join(format!("attachments/{}.json", vf.pci)),
        )
        .unwrap(),
    )
    .unwrap();
    let from_lease = lease["data"]["leases"][0]["netnsCookie"].as_u64();
    assert!(from_lease.is_some_and(|c| c > 0), "{lease}");
    assert!(
        record
            .to_string()
            .contains(&format!("\"netnsCookie\":{}", from_lease.unwrap())),
        "the record names the same namespace: {record}"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn status_answers_0_for_a_full_per_node_slash_31() {
    let _serial = serial();
    let node = Node::new(1, 1);
    let vf = &node.vfs[0];
    let p = node.pod("p");
    node.cni(&rail1("p", &p, vf)).ok();
    let mut status = rail1("", "", vf).cmd("STATUS");
    status.netns = None;
    status.container_id = String::new();
    status.ifname = String::new();
    node.cni(&status).ok();
}
