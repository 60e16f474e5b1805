//! `railcnictl plan`'s output drives the plugin on the fake fabric: 8
//! rails × 2 nodes, every pod gets its planned address and jumbo frames
//! cross every rail; a two-plane rail attaches one VF per plane. Needs
//! root (the fabric's namespaces); `tests/plan.rs` holds the planner's
//! checks that need nothing.

mod common;

use common::fabric::Fabric;
use common::*;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// Where `node`'s node file is written (`install_node_file`).
fn node_file_of(fabric: &Fabric, node: &str) -> PathBuf {
    fabric.dir.path().join(format!("{node}.json"))
}

/// The installer's job: `node`'s node file from the plan, nodeName inside.
fn install_node_file(fabric: &Fabric, plan_file: &Path, node: &str) -> PathBuf {
    let path = node_file_of(fabric, node);
    let text = plan_emit(plan_file, &["--emit", "node-file", "--node", node]);
    std::fs::write(&path, text).unwrap();
    path
}

/// A NAD's network config with the fabric's VF of `rail` on `node` as its
/// device (what Multus passes as `deviceID`).
fn on_vf(conf: &Value, fabric: &Fabric, node: &str, rail: u32) -> Value {
    let mut conf = conf.clone();
    conf["deviceID"] = fabric.vf(node, rail).vf.pci.clone().into();
    conf
}

/// A 9000-byte don't-fragment ping from gpu-0's VF of `rail` (in `pod`) to
/// gpu-1's, across the leaf: whether it answered, and the hop.
fn jumbo_across(fabric: &Fabric, pod: &str, rail: u32) -> (bool, String) {
    let (a, b) = (
        &fabric.vf("gpu-0", rail).address,
        &fabric.vf("gpu-1", rail).address,
    );
    let ping = format!("ip netns exec {pod} ping -q -c 1 -W 2 -M do -s 8972 -I {a} {b}");
    (sh_ok(&ping), format!("{a} -> {b}"))
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn plan_output_drives_eight_rails_on_two_nodes_with_jumbo_frames() {
    let fabric = Fabric::up_with(8);
    // A plan for this fabric: its 8 rails, nodes gpu-0 and gpu-1.
    let plan_file = fabric.dir.path().join("plan.yaml");
    let rails: String = (1..=8)
        .map(|r| {
            format!(
                "  - {{name: rail{r}, cidr: 172.{}.0.0/15, routes: [172.16.0.0/12], mtu: 9000}}\n",
                14 + 2 * r
            )
        })
        .collect();
    std::fs::write(
        &plan_file,
        format!("rails:\n{rails}nodes: {{gpu-0: 0, gpu-1: 1}}\n"),
    )
    .unwrap();
    let nads = plan_emit(&plan_file, &["--emit", "nads"]);
    let configs = nad_configs(&nads);
    assert_eq!(configs.len(), 8);
    let planned: Vec<Value> =
        serde_json::from_str(&plan_emit(&plan_file, &["--emit", "json"])).unwrap();

    let pods = [("gpu-0", fabric.pod("pa")), ("gpu-1", fabric.pod("pb"))];
    for (node, pod) in &pods {
        let node_file = install_node_file(&fabric, &plan_file, node);
        for rail in 1..=8u32 {
            let conf = on_vf(&configs[rail as usize - 1], &fabric, node, rail);
            let r = fabric
                .cni_on("ADD", node, pod, rail, &conf, Some(&node_file))
                .ok();
            let want = planned
                .iter()
                .find(|a| a["node"] == *node && a["rail"] == format!("rail{rail}"))
                .unwrap();
            assert_eq!(r["ips"][0]["address"], want["prefix"], "{node} rail{rail}");
            assert_eq!(r["ips"][0]["gateway"], want["gateway"], "{node} rail{rail}");
        }
    }
    for rail in 1..=8u32 {
        let (ok, hop) = jumbo_across(&fabric, &pods[0].1, rail);
        assert!(ok, "rail{rail}: {hop} with 9000-byte frames");
    }
    for (node, pod) in &pods {
        let node_file = node_file_of(&fabric, node);
        for rail in (1..=8u32).rev() {
            let conf = on_vf(&configs[rail as usize - 1], &fabric, node, rail);
            fabric
                .cni_on("DEL", node, pod, rail, &conf, Some(&node_file))
                .ok();
        }
    }
}

/// A 2-plane rail: `railcnictl plan` makes `rail1-p0` and `rail1-p1`, each
/// with half of the rail's cidr, and their NADs and node files attach one
/// VF per plane (net1, net2: rail-major) on both nodes of the fabric, whose
/// leaf serves each plane's /31s; jumbo frames cross each plane.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_two_plane_rail_attaches_one_vf_per_plane() {
    let fabric = Fabric::up_with(2);
    let plan_file = fabric.dir.path().join("plan.yaml");
    std::fs::write(
        &plan_file,
        "rails:\n  - {name: rail1, cidr: 172.16.0.0/14, planes: 2, routes: [172.16.0.0/12], mtu: 9000, resourceName: nvidia.com/rail1}\n\
         nodes: {gpu-0: 0, gpu-1: 1}\n",
    )
    .unwrap();
    let nads = plan_emit(&plan_file, &["--emit", "nads"]);
    let docs: Vec<Value> = nads
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rail1-p0", "rail1-p1"]);
    let configs = nad_configs(&nads);
    assert_eq!(
        docs[1]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"],
        "nvidia.com/rail1-p1"
    );
    let pod: Value = serde_yaml_ng::from_str(
        plan_emit(&plan_file, &["--emit", "pod"]).trim_start_matches("---\n"),
    )
    .unwrap();
    let networks: Value = serde_json::from_str(
        pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        networks,
        json!([{"name": "rail1-p0", "interface": "net1"}, {"name": "rail1-p1", "interface": "net2"}])
    );
    let pods = [("gpu-0", fabric.pod("pa")), ("gpu-1", fabric.pod("pb"))];
    for (node, pod) in &pods {
        let node_file = install_node_file(&fabric, &plan_file, node);
        for plane in 0..2u32 {
            // The fabric's VF of "rail" plane+1 stands in for the NIC's plane port.
            let conf = on_vf(&configs[plane as usize], &fabric, node, plane + 1);
            let r = fabric
                .cni_on("ADD", node, pod, plane + 1, &conf, Some(&node_file))
                .ok();
            assert_eq!(
                r["ips"][0]["address"],
                format!("{}/31", fabric.vf(node, plane + 1).address),
                "{node} p{plane}"
            );
        }
    }
    for plane in 1..=2u32 {
        let (ok, hop) = jumbo_across(&fabric, &pods[0].1, plane);
        assert!(ok, "plane {plane}: {hop}");
    }
    for (node, pod) in &pods {
        let node_file = node_file_of(&fabric, node);
        for plane in (0..2u32).rev() {
            let conf = on_vf(&configs[plane as usize], &fabric, node, plane + 1);
            fabric
                .cni_on("DEL", node, pod, plane + 1, &conf, Some(&node_file))
                .ok();
        }
    }
}
