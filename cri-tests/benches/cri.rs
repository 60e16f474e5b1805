//! RunPodSandbox and StopPodSandbox through containerd's CRI with railcni
//! (a fake VF, the embedded IPAM) beside Debian's bridge plugin with
//! host-local, on the same machine, taking turns: `cargo bench -p railcni-cri-tests --bench cri
//! [-- CYCLES]` (after `cargo build --release -p railcni --features fake-hardware`). As root. Prints p50/p95 in milliseconds.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../tests/cri/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::time::{Duration, Instant};

use common::Node;
use harness::Containerd;
use serde_json::json;

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

fn main() {
    let cycles: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20);
    let railcni_node = Node::new(1, 1);
    let vf = railcni_node.vfs[0].clone();
    let railcni = Containerd::start(
        &railcni_node,
        &json!({"cniVersion": "1.0.0", "name": "rail1", "plugins": [{
            "type": "railcni", "deviceID": vf.pci,
            "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15", "nodes": ["gpu-0"]}}]}),
    );
    let bridge_node = Node::new(1, 1);
    let bridge = Containerd::start(
        &bridge_node,
        &json!({"cniVersion": "1.0.0", "name": "bridge", "plugins": [{
            "type": "bridge", "bridge": "cni-bench0", "isGateway": true,
            "ipam": {"type": "host-local", "dataDir": bridge_node.dir.path().join("host-local"),
                     "ranges": [[{"subnet": "10.88.0.0/16"}]]}}]}),
    );
    let mut times = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
    for c in 0..cycles + 2 {
        for k in 0..2 {
            let which = (c + k) % 2;
            let ctr = if which == 0 { &railcni } else { &bridge };
            let t0 = Instant::now();
            let id = ctr
                .run(&format!("bench-{c}"))
                .unwrap_or_else(|e| panic!("{e}"));
            let run = t0.elapsed();
            let t1 = Instant::now();
            ctr.stop(&id).unwrap();
            let stop = t1.elapsed();
            ctr.remove(&id).unwrap();
            if c >= 2 {
                times[which].0.push(run);
                times[which].1.push(stop);
            }
        }
    }
    println!("containerd 1.6 CRI, {cycles} pods each, taking turns   p50 ms   p95 ms");
    for (label, (run, stop)) in [
        "railcni (fake VF, embedded IPAM)",
        "bridge + host-local (Debian)",
    ]
    .iter()
    .zip(times.iter_mut())
    {
        println!(
            "  RunPodSandbox  {label:<34} {:7.1}  {:7.1}",
            pct(run, 0.5),
            pct(run, 0.95)
        );
        println!(
            "  StopPodSandbox {label:<34} {:7.1}  {:7.1}",
            pct(stop, 0.5),
            pct(stop, 0.95)
        );
    }
}
