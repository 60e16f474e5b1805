//! Concurrency soak: 8 VFs on 2 PFs, 8 pods, 8 workers (one per pod) doing
//! random ADD/DEL/CHECK at once, so pods race for VFs and addresses. At
//! quiescent points during the run: no address in two pods, no VF in two
//! places, every live attachment passes CHECK. At the end everything is
//! DELeted and nothing is left. Needs root.

mod common;

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use common::*;
use railcni_ipam::store::LeaseStore;
use serde_json::{json, Value};

const WORKERS: usize = 8;
const OPS_PER_WORKER: usize = 50;

/// xorshift: enough randomness for a schedule, reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn conf(vf: &FakeVf) -> Value {
    let mut ipam = Node::embedded_ipam(vf.rail);
    ipam["perNodePrefix"] = json!(28);
    common::conf("1.1.0", &format!("rail{}", vf.rail), &vf.pci, ipam)
}

fn ifname(v: usize) -> String {
    format!("net{}", v + 1)
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn eight_workers_racing_never_share_an_address_or_a_vf_and_leave_nothing() {
    let node = Node::new(2, 4);
    assert_eq!(node.vfs.len(), 8);
    let pods: Vec<String> = (0..WORKERS).map(|w| node.pod(&format!("s{w}"))).collect();
    let macs: Vec<String> = node
        .vfs
        .iter()
        .map(|vf| node.link(&node.host(), &vf.ifname).unwrap().mac)
        .collect();
    // Ops hold it shared; checkpoints take it exclusively to see a still node.
    let quiet = RwLock::new(());
    // (pod, vf) → ADD result, for CHECK.
    let live: Mutex<HashMap<(usize, usize), Value>> = Mutex::new(HashMap::new());
    // Each worker's schedule follows from the seed (the interleaving is the
    // kernel's): RAILCNI_TEST_SEED replays it.
    let seed =
        support::seed("eight_workers_racing_never_share_an_address_or_a_vf_and_leave_nothing");
    let counts = Mutex::new((0usize, 0usize, 0usize, 0usize)); // add ok, add busy/full, del, check

    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (node, pods, quiet, live, counts, macs) =
                (&node, &pods, &quiet, &live, &counts, &macs);
            s.spawn(move || {
                let mut rng = Rng(seed.wrapping_mul(w as u64 + 1) | 1);
                for op in 0..OPS_PER_WORKER {
                    let v = rng.next(node.vfs.len());
                    let vf = &node.vfs[v];
                    let req = Req::new("ADD", &format!("s{w}"), &pods[w], &ifname(v), conf(vf));
                    let _running = quiet.read().unwrap();
                    let held = live.lock().unwrap().get(&(w, v)).cloned();
                    match (rng.next(3), held) {
                        (0, None) | (1, None) => {
                            let r = node.cni(&req);
                            if r.success {
                                live.lock().unwrap().insert((w, v), r.json);
                                counts.lock().unwrap().0 += 1;
                            } else {
                                // Another pod holds the VF (101) or the lock was busy (11).
                                assert!(
                                    matches!(r.code(), Some(101 | 11)),
                                    "worker {w} op {op}: ADD {v}: {}\n{}",
                                    r.stdout,
                                    r.stderr
                                );
                                counts.lock().unwrap().1 += 1;
                            }
                        }
                        (2, Some(prev)) | (1, Some(prev)) => {
                            let check = req.cmd("CHECK").with_conf(with_prev(&req.conf, &prev));
                            let r = node.cni(&check);
                            assert!(r.success, "worker {w} op {op}: CHECK {v}: {}", r.stdout);
                            counts.lock().unwrap().3 += 1;
                        }
                        _ => {
                            let r = node.cni(&req.cmd("DEL"));
                            assert!(r.success, "worker {w} op {op}: DEL {v}: {}", r.stdout);
                            live.lock().unwrap().remove(&(w, v));
                            counts.lock().unwrap().2 += 1;
                        }
                    }
                    drop(_running);
                    if op % 10 == 9 {
                        let _still = quiet.write().unwrap();
                        checkpoint(node, pods, macs);
                    }
                }
            });
        }
    });
    checkpoint(&node, &pods, &macs);
    let (adds, refused, dels, checks) = *counts.lock().unwrap();
    eprintln!(
        "soak: {} ops: {adds} ADD ok, {refused} ADD refused (VF busy), {dels} DEL, {checks} CHECK",
        adds + refused + dels + checks
    );
    assert!(adds + refused + dels + checks >= 200);
    assert!(adds > 0 && refused > 0, "the pods really raced for VFs");

    // DEL everything, in any state: nothing is left.
    for (w, pod) in pods.iter().enumerate() {
        for (v, vf) in node.vfs.iter().enumerate() {
            let del = Req::new("DEL", &format!("s{w}"), pod, &ifname(v), conf(vf));
            node.cni(&del).ok();
        }
    }
    for vf in &node.vfs {
        assert!(
            link_in(&node.host(), &vf.ifname).is_some(),
            "{} home",
            vf.ifname
        );
        assert!(!node.record_exists(&vf.pci));
    }
    for rail in ["rail1", "rail2"] {
        let store = LeaseStore::new(
            &node.state_dir().join("ipam"),
            rail,
            std::time::Duration::from_secs(5),
        );
        assert!(
            store.read().unwrap().leases.is_empty(),
            "{rail} leases left"
        );
    }
    for pod in &pods {
        let ns = Node::ns_of(pod);
        let rules =
            String::from_utf8_lossy(&sh(&format!("ip -n {ns} rule show")).stdout).into_owned();
        assert!(!rules.contains("from 172."), "{rules}");
    }
}

/// A still node: every address in at most one pod, every VF in exactly one place.
fn checkpoint(node: &Node, pods: &[String], macs: &[String]) {
    let mut owners: HashMap<String, String> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut places = vec![node.host()];
    places.extend(pods.iter().map(|p| Node::ns_of(p)));
    for ns in &places {
        let out = sh(&format!("ip -n {ns} -j addr show"));
        let links: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        for link in links.as_array().into_iter().flatten() {
            if let Some(mac) = link["address"].as_str() {
                if macs.iter().any(|m| m == mac) {
                    *seen.entry(mac.to_string()).or_default() += 1;
                }
            }
            if ns == &node.host() {
                continue;
            }
            for a in link["addr_info"].as_array().into_iter().flatten() {
                let ip = a["local"].as_str().unwrap_or("").to_string();
                if ip.starts_with("172.") {
                    if let Some(other) = owners.insert(ip.clone(), ns.clone()) {
                        panic!("{ip} is in {other} and {ns}");
                    }
                }
            }
        }
    }
    for mac in macs {
        assert_eq!(
            seen.get(mac),
            Some(&1),
            "VF {mac} must be in exactly one place"
        );
    }
}
