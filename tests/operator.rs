//! Day-2 commands on the fake node, several pods and rails: `status`,
//! `inspect`, `gc`, `ipam repair`, `nccl-env`, and their exit codes and
//! `--json` schema (docs/operations.md). Needs root.

mod common;

use common::*;
use serde_json::{json, Value};

/// Two rails, two VFs each; pods A and B each get one VF per rail.
struct Cluster {
    node: Node,
    pods: Vec<String>,
    results: Vec<(Req, Value)>,
}

fn rail_conf(vf: &FakeVf) -> Value {
    let mut ipam = Node::embedded_ipam(vf.rail);
    ipam["perNodePrefix"] = json!(29);
    conf("1.1.0", &format!("rail{}", vf.rail), &vf.pci, ipam)
}

fn cluster() -> Cluster {
    let node = Node::new(2, 2);
    let mut pods = Vec::new();
    let mut results = Vec::new();
    for (p, name) in ["a", "b"].iter().enumerate() {
        let pod = node.pod(name);
        for rail in 1..=2 {
            let vf = node
                .vfs
                .iter()
                .filter(|v| v.rail == rail)
                .nth(p)
                .unwrap()
                .clone();
            let mut req = Req::new(
                "ADD",
                &format!("pod-{name}"),
                &pod,
                &format!("net{rail}"),
                rail_conf(&vf),
            );
            req.args = Some(format!(
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=ml;K8S_POD_NAME=trainer-{name}"
            ));
            let r = node.cni(&req).ok();
            results.push((req, r));
        }
        pods.push(pod);
    }
    Cluster {
        node,
        pods,
        results,
    }
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn status_lists_exactly_what_exists_in_the_documented_schema() {
    let c = cluster();
    let (code, s) = c.node.operator_json(&["status"]);
    assert_eq!(code, 0, "{s}");
    assert_eq!(s["node"], "gpu-0");
    let networks = s["networks"].as_array().unwrap();
    assert_eq!(networks.len(), 2);
    for n in networks {
        for key in [
            "name",
            "prefix",
            "gateway",
            "capacity",
            "leased",
            "free",
            "leaseFile",
            "leases",
        ] {
            assert!(n.get(key).is_some(), "network lacks {key}: {n}");
        }
        assert_eq!(n["leased"], 2);
        assert_eq!(
            n["capacity"], 5,
            "a /29 less network, broadcast and gateway"
        );
        assert_eq!(n["free"], 3);
        for l in n["leases"].as_array().unwrap() {
            assert_eq!(l["netnsAlive"], true);
            assert!(l["pod"].as_str().unwrap().starts_with("ml/trainer-"));
        }
    }
    let attachments = s["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 4);
    for a in attachments {
        for key in [
            "network",
            "vf",
            "pf",
            "hostName",
            "ifname",
            "containerId",
            "pod",
            "address",
            "netns",
            "netnsAlive",
            "table",
            "priority",
            "rdmaDevice",
            "vfSettings",
            "phase",
        ] {
            assert!(a.get(key).is_some(), "attachment lacks {key}: {a}");
        }
        assert_eq!(a["phase"], "attached");
    }
    assert_eq!(s["problems"], json!([]));
    // The human table names every attachment on one line each.
    let (code, text, _) = c.node.operator(&["status"]);
    assert_eq!(code, 0);
    assert_eq!(text.matches("ml/trainer-").count(), 4, "{text}");
    // --network narrows it.
    let (_, one) = c.node.operator_json(&["status", "--network", "rail2"]);
    assert_eq!(one["attachments"].as_array().unwrap().len(), 2);
    // Bad usage is 2.
    assert_eq!(c.node.operator(&["status", "--bogus"]).0, 2);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_pod_gone_without_del_is_reported_and_gc_brings_everything_home() {
    let c = cluster();
    let pod_a = &c.pods[0];
    let a_vfs: Vec<(FakeVf, String)> = c.results[..2]
        .iter()
        .map(|(req, _)| {
            let pci = req.conf["deviceID"].as_str().unwrap();
            (
                c.node.vfs.iter().find(|v| v.pci == pci).unwrap().clone(),
                req.ifname.clone(),
            )
        })
        .collect();
    let refs: Vec<(&FakeVf, &str)> = a_vfs.iter().map(|(v, i)| (v, i.as_str())).collect();
    c.node.kill_pod(pod_a, &refs);

    let (code, s) = c.node.operator_json(&["status"]);
    assert_eq!(code, 1, "a problem was found: {s}");
    let gone: Vec<&Value> = s["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "netns-gone")
        .collect();
    assert_eq!(gone.len(), 2, "{s}");
    assert_eq!(gone[0]["fix"], "railcnictl gc --apply");

    let state_before = snapshot(&c.node);
    let (code, dry) = c.node.operator_json(&["gc"]);
    assert_eq!(code, 1, "dry run found work: {dry}");
    assert_eq!(dry["applied"], false);
    assert_eq!(dry["actions"].as_array().unwrap().len(), 2);
    assert!(dry["actions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["result"] == "planned"));
    assert_eq!(snapshot(&c.node), state_before, "a dry run changes nothing");

    let (code, out, err) = c.node.operator(&["gc", "--apply", "--json"]);
    let done: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(code, 0, "{done}");
    // What gc's detach logs names the network, pod and VF it acts on.
    let (vf, _) = &a_vfs[0];
    let context = format!(
        "[gc rail{} ml/trainer-a net{} {}]",
        vf.rail, vf.rail, vf.pci
    );
    assert!(err.contains(&context), "{context} not in:\n{err}");
    assert!(!err.contains(" [] "), "a line without its context:\n{err}");
    assert!(done["actions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["result"] == "done"));
    for (vf, _) in &a_vfs {
        assert!(
            link_in(&c.node.host(), &vf.ifname).is_some(),
            "{} home under its name",
            vf.ifname
        );
        assert!(!c.node.record_exists(&vf.pci));
    }
    let (code, after) = c.node.operator_json(&["status"]);
    assert_eq!(code, 0, "{after}");
    assert_eq!(
        after["attachments"].as_array().unwrap().len(),
        2,
        "pod B untouched"
    );
    for n in after["networks"].as_array().unwrap() {
        assert_eq!(n["leased"], 1, "pod A's leases released: {n}");
    }
    assert!(link_in(&Node::ns_of(&c.pods[1]), "net1").is_some());
    assert_eq!(c.node.operator(&["gc"]).0, 0, "nothing left to do");
}

/// Records and lease files, as text: what a dry run must not change.
fn snapshot(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["attachments", "ipam"] {
        let mut files: Vec<_> = std::fs::read_dir(node.state_dir().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            out.push(std::fs::read_to_string(&f).unwrap_or_default());
        }
    }
    out
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn inspect_reports_drift_and_ok() {
    let c = cluster();
    let pod = &c.pods[0];
    let ns = Node::ns_of(pod);
    let (code, clean) = c.node.operator_json(&["inspect", pod]);
    assert_eq!(code, 0, "{clean}");
    assert_eq!(clean["drift"], false);
    assert_eq!(clean["interfaces"].as_array().unwrap().len(), 2);
    // By container ID too.
    assert_eq!(c.node.operator(&["inspect", "pod-a"]).0, 0);

    sh(&format!("ip -n {ns} link set net1 mtu 1500"));
    sh(&format!("ip -n {ns} rule del priority 1002"));
    sh(&format!(
        "ip netns exec {ns} sysctl -qw net.ipv4.conf.net1.rp_filter=0"
    ));
    let (code, text, _) = c.node.operator(&["inspect", pod]);
    assert_eq!(code, 1, "{text}");
    let drift: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("DRIFT"))
        .collect();
    assert_eq!(drift.len(), 3, "{text}");
    assert!(
        drift
            .iter()
            .any(|l| l.contains("mtu") && l.contains("1500")),
        "{text}"
    );
    assert!(
        drift
            .iter()
            .any(|l| l.contains("rule from") && l.contains("missing")),
        "{text}"
    );
    assert!(
        drift
            .iter()
            .any(|l| l.contains("rp_filter") && l.contains('0')),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("OK") && l.contains("mtu") && l.contains("9000")),
        "net2's MTU is still OK: {text}"
    );
    assert_eq!(c.node.operator(&["inspect", "no-such-pod"]).0, 2);
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn ipam_repair_restores_every_live_lease_and_add_works_again() {
    let c = cluster();
    let file = c.node.state_dir().join("ipam/rail1.leases.json");
    let mut bytes = std::fs::read(&file).unwrap();
    let i = bytes.iter().position(|b| *b == b'7').unwrap();
    bytes[i] = b'8';
    std::fs::write(&file, &bytes).unwrap();
    let (code, s) = c.node.operator_json(&["status"]);
    assert_eq!(code, 1);
    let unreadable = s["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["kind"] == "lease-file-unreadable")
        .unwrap();
    assert_eq!(unreadable["fix"], "railcnictl ipam repair rail1");
    // Refused while another railcni holds the store's lock.
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(c.node.state_dir().join("ipam/rail1.lock"))
        .unwrap();
    lock.lock().unwrap();
    let (code, _, err) = c.node.operator(&["ipam", "repair", "rail1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("holds the lease store"), "{err}");
    drop(lock);

    let (code, r) = c.node.operator_json(&["ipam", "repair", "rail1"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["restored"].as_array().unwrap().len(), 2, "{r}");
    let kept = r["kept"].as_str().unwrap();
    assert_eq!(
        std::fs::read(kept).unwrap(),
        bytes,
        "the damaged file is kept"
    );
    assert_eq!(c.node.operator(&["status"]).0, 0);
    // A sound, complete file is not rewritten: nothing to repair.
    let sound = std::fs::read(&file).unwrap();
    let (code, _, err) = c.node.operator(&["ipam", "repair", "rail1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("railcnictl: ") && err.contains("nothing to repair"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), sound, "not rewritten");

    // ADD works again and never hands out an address still held: pod A's
    // rail-1 VF goes to a new pod C, whose address must not be pod B's.
    let (a_req, _) = &c.results[0];
    c.node.cni(&a_req.cmd("DEL")).ok();
    let b_rail1 = c.results[2].1["ips"][0]["address"].clone();
    let pod = c.node.pod("c");
    let r = c
        .node
        .cni(&Req::new("ADD", "pod-c", &pod, "net1", a_req.conf.clone()))
        .ok();
    assert_ne!(r["ips"][0]["address"], b_rail1, "nothing leased twice");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn nccl_env_lists_the_pods_hcas_in_rail_order() {
    let node = Node::new(2, 1);
    node.set_hardware(json!({"rdmaMode": "exclusive"}));
    let pod = node.pod("p");
    for (vf, dev) in node.vfs.iter().zip(["mlx5_3", "mlx5_7"]) {
        node.give_rdma_device(vf, dev);
    }
    // Rail 2 first, to show the order comes from the rails, not the ADDs.
    for vf in node.vfs.iter().rev() {
        let mut c = rail_conf(vf);
        c["rdma"] = json!("required");
        node.cni(&Req::new(
            "ADD",
            "trainer",
            &pod,
            &format!("net{}", vf.rail),
            c,
        ))
        .ok();
    }
    let (code, text, _) = node.operator(&["nccl-env", &pod]);
    assert_eq!(code, 0, "{text}");
    // Exact names (NCCL's `=`), each HCA with its port, the address family
    // NCCL chooses each HCA's GID by.
    for line in [
        "NCCL_IB_HCA==mlx5_3:1,mlx5_7:1",
        "NCCL_SOCKET_IFNAME==net1,net2",
        "UCX_NET_DEVICES=mlx5_3:1,mlx5_7:1",
        "NCCL_IB_ADDR_FAMILY=AF_INET",
        "NCCL_IB_ROCE_VERSION_NUM=2",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
    let (code, only) = node.operator_json(&["nccl-env", "trainer", "--networks", "rail2"]);
    assert_eq!(code, 0);
    assert_eq!(only["env"][0], json!(["NCCL_IB_HCA", "=mlx5_7:1"]));
    assert_eq!(
        (
            only["rails"][0]["port"].clone(),
            only["rails"][0]["rail"].clone()
        ),
        (json!(1), json!(0))
    );
    // NCCL 2.30: each HCA's rail and plane (one plane each here, so no merge policy).
    let (_, text, _) = node.operator(&["nccl-env", &pod, "--nccl", "2.30"]);
    assert!(
        text.lines()
            .any(|l| l == "NCCL_IB_HCA==mlx5_3:1:0:0,mlx5_7:1:1:0"),
        "{text}"
    );
    assert!(!text.contains("NCCL_NET_MERGE_POLICY"), "{text}");
    assert_eq!(
        node.operator(&["nccl-env", "trainer", "--networks", "storage"])
            .0,
        2
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn nccl_env_flags_a_rail_without_rdma() {
    let node = Node::new(1, 1);
    let pod = node.pod("p");
    node.cni(&Req::new("ADD", "t", &pod, "net1", rail_conf(&node.vfs[0])))
        .ok();
    let (code, text, err) = node.operator(&["nccl-env", "t"]);
    assert_eq!(code, 1);
    assert!(err.contains("no RDMA device"), "{err}");
    // No variable printed empty: to NCCL an empty list means every HCA.
    assert!(text.lines().all(|l| !l.ends_with('=')), "{text}");
    assert!(
        !text.contains("NCCL_IB_HCA") && !text.contains("UCX_NET_DEVICES"),
        "{text}"
    );
}

/// Every path under `dir`, with each file's length.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            out.push(format!(
                "{} {}",
                path.display(),
                if meta.is_dir() { 0 } else { meta.len() }
            ));
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn read_only_commands_change_nothing_on_a_node_without_state() {
    let node = Node::new(1, 1);
    let _ = std::fs::remove_dir_all(node.state_dir());
    let plan = node.dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "rails:\n- {name: rail1, cidr: 172.16.0.0/15}\nnodes: [gpu-0, gpu-1]\n",
    )
    .unwrap();
    let plan = plan.display().to_string();
    let before = tree(node.dir.path());
    let pod = "/var/run/netns/no-such-pod-anywhere";
    for args in [
        vec!["doctor"],
        vec!["doctor", "--json"],
        vec!["status"],
        vec!["status", "--json"],
        vec!["inspect", pod],
        vec!["probe", pod],
        vec!["metrics"],
        vec!["nccl-env", pod],
        vec!["plan", &plan, "--emit", "nads"],
        vec!["plan", &plan, "--emit", "node-file", "--node", "gpu-1"],
    ] {
        let (code, _, err) = node.operator(&args);
        assert!(code <= 2, "{args:?}: {code} {err}");
        assert_eq!(
            tree(node.dir.path()),
            before,
            "railcnictl {args:?} changed the node's files"
        );
    }
    assert!(!node.state_dir().exists());
}
