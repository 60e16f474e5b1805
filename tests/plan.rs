//! `railcnictl plan`: the checked-in examples are exactly what it generates,
//! an nv-ipam CIDRPool and the launch kit's configs import as written, bad
//! plans are refused naming the problem, and the plan-to-ADD table
//! (`common::plan_rows`) holds every layout and addressing key. Needs
//! nothing but the tree; its output on the fake fabric is
//! `tests/plan_on_fabric.rs`'s.

mod common;

use std::path::Path;
use std::process::Command;

use common::plan_rows::{From, ROWS, STATICS};
use common::*;
use serde_json::Value;

fn plan(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(ctl())
        .arg("plan")
        .args(args)
        .env_clear()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (success, out, err) = plan(args);
    assert!(success, "railcnictl plan {args:?}: {err}");
    out
}

#[test]
fn the_checked_in_examples_are_what_plan_generates() {
    for (emit, file) in [
        ("nads", "nads.yaml"),
        ("configmap", "configmap.yaml"),
        ("pod", "pod.yaml"),
        ("csv", "csv.csv"),
        ("dra", "dra.yaml"),
    ] {
        let generated = ok(&["cni-conf/plan.yaml", "--emit", emit]);
        let checked_in = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("cni-conf/generated")
                .join(file),
        )
        .unwrap();
        assert_eq!(
            generated, checked_in,
            "cni-conf/generated/{file} is stale: regenerate it with `railcnictl plan cni-conf/plan.yaml --emit {emit}`"
        );
    }
    let node = ok(&[
        "cni-conf/plan.yaml",
        "--emit",
        "node-file",
        "--node",
        "gpu-1",
    ]);
    let checked_in = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("cni-conf/generated/node-gpu-1.json"),
    )
    .unwrap();
    assert_eq!(node, checked_in);
    // NADs hold no pool: their size does not grow with the node count.
    let nads = ok(&["cni-conf/plan.yaml", "--emit", "nads"]);
    assert!(!nads.contains("gpu-"), "{nads}");
}

#[test]
fn an_nv_ipam_cidrpool_imports_without_renumbering() {
    let csv = ok(&[
        "--from-cidrpool",
        "cni-conf/nv-ipam-cidrpool.yaml",
        "--emit",
        "csv",
    ]);
    assert_eq!(csv.lines().count(), 65, "a header and 64 nodes");
    assert!(
        csv.contains("\nworker-gpu-0,rail1,172.16.0.0,172.16.0.1,172.16.0.0/31\n"),
        "{csv}"
    );
    assert!(
        csv.contains("\nworker-gpu-63,rail1,172.16.1.62,172.16.1.63,172.16.1.62/31\n"),
        "{csv}"
    );
    let node: Value = serde_json::from_str(&ok(&[
        "--from-cidrpool",
        "cni-conf/nv-ipam-cidrpool.yaml",
        "--emit",
        "node-file",
        "--node",
        "worker-gpu-63",
    ]))
    .unwrap();
    assert_eq!(node["networks"]["rail1"]["prefix"], "172.16.1.62/31");
    assert_eq!(node["networks"]["rail1"]["gateway"], "172.16.1.63");
}

#[test]
fn bad_plans_are_usage_errors_naming_the_problem() {
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.yaml");
    std::fs::write(&bad, "rails:\n  - {name: a, cidr: 172.16.0.0/15}\n  - {name: b, cidr: 172.16.0.0/16}\nnodes: [n]\n").unwrap();
    let out = Command::new(ctl())
        .args(["plan", bad.to_str().unwrap(), "--emit", "csv"])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("overlaps"));
    let (success, _, err) = plan(&["cni-conf/plan.yaml", "--emit", "node-file"]);
    assert!(!success && err.contains("--node"), "{err}");
}

const LAUNCH_KIT: &str = "tests/fixtures/launch-kit";

/// Each emit of the import of a launch-kit config is the same emit of the
/// plan a person would write by hand for the same fabric.
fn imports_as_written(config: &str, layout: &str, written: &str) {
    let all: [&[&str]; 6] = [
        &["--emit", "nads"],
        &["--emit", "configmap"],
        &["--emit", "csv"],
        &["--emit", "pod"],
        &["--emit", "dra"],
        &["--emit", "dra", "--pair-gpus"],
    ];
    imports_as_written_for(config, layout, written, &all);
}

/// As `imports_as_written`, for the emits given.
fn imports_as_written_for(config: &str, layout: &str, written: &str, emits: &[&[&str]]) {
    let config = format!("{LAUNCH_KIT}/{config}");
    let written = format!("{LAUNCH_KIT}/{written}");
    for emit in emits.iter().copied() {
        let mut imported_args = vec!["--from-launch-kit", config.as_str(), "--layout", layout];
        imported_args.extend_from_slice(emit);
        let mut written_args = vec![written.as_str()];
        written_args.extend_from_slice(emit);
        assert_eq!(
            ok(&imported_args),
            ok(&written_args),
            "{emit:?} of {config} is not what {written} gives"
        );
    }
    // And the one written out is that plan.
    let plan_out = ok(&[
        "--from-launch-kit",
        &config,
        "--layout",
        layout,
        "--emit",
        "plan",
    ]);
    let dir = tempfile::Builder::new()
        .prefix("railcni-imported-")
        .tempdir()
        .unwrap();
    let again = dir.path().join("plan.yaml");
    std::fs::write(&again, plan_out).unwrap();
    assert_eq!(
        ok(&[again.to_str().unwrap(), "--emit", "csv"]),
        ok(&[&written, "--emit", "csv"])
    );
}

#[test]
fn the_launch_kits_own_example_imports_as_a_hand_written_plan() {
    imports_as_written("cluster-config.yaml", "nv-ipam", "cluster-config.plan.yaml");
    let (_, _, err) = plan(&[
        "--from-launch-kit",
        &format!("{LAUNCH_KIT}/cluster-config.yaml"),
        "--emit",
        "csv",
    ]);
    // What the plan does not carry is named.
    for named in [
        "networkOperator",
        "docaDriver",
        "numVfs",
        "poolName",
        "machineType",
    ] {
        assert!(err.contains(named), "{named} is not named:\n{err}");
    }
    // NADs Multus can use: each names its rail's resource, and the pod asks for it.
    let config = format!("{LAUNCH_KIT}/cluster-config.yaml");
    let nads = ok(&["--from-launch-kit", &config, "--emit", "nads"]);
    for rail in [0, 1] {
        let annotation =
            format!("k8s.v1.cni.cncf.io/resourceName: nvidia.com/sriov_resource_rail_{rail}");
        assert!(nads.contains(&annotation), "{annotation}:\n{nads}");
    }
    let pod = ok(&["--from-launch-kit", &config, "--emit", "pod"]);
    assert!(
        pod.contains("nvidia.com/sriov_resource_rail_1: 1")
            || pod.contains("nvidia.com/sriov_resource_rail_1: '1'"),
        "{pod}"
    );
    assert!(!pod.contains("limits: {}"), "{pod}");
}

#[test]
fn a_two_plane_spectrum_x_config_imports_as_a_hand_written_plan() {
    // The launch kit names one resource for all of a multi-plane rail's
    // planes: no railcni plane's own, so NADs and pods are refused.
    let emits: [&[&str]; 4] = [
        &["--emit", "configmap"],
        &["--emit", "csv"],
        &["--emit", "dra"],
        &["--emit", "dra", "--pair-gpus"],
    ];
    imports_as_written_for(
        "spectrum-x-two-planes.yaml",
        "spectrum-x",
        "spectrum-x-two-planes.plan.yaml",
        &emits,
    );
    for emit in ["nads", "pod"] {
        let (success, _, err) = plan(&[
            "--from-launch-kit",
            &format!("{LAUNCH_KIT}/spectrum-x-two-planes.yaml"),
            "--layout",
            "spectrum-x",
            "--emit",
            emit,
        ]);
        assert!(
            !success && err.contains("no SR-IOV resource name") && err.contains("resourceName"),
            "{emit}: {err}"
        );
    }
    let (success, csv, err) = plan(&[
        "--from-launch-kit",
        &format!("{LAUNCH_KIT}/spectrum-x-two-planes.yaml"),
        "--layout",
        "spectrum-x",
        "--emit",
        "csv",
    ]);
    assert!(success, "{err}");
    // Rail 1, plane 1, the second node: 172.(16|1<<2).(1<<6).2/31, leaf .3.
    assert!(
        csv.contains("gb300-1,rail1-p1,172.20.64.2,172.20.64.3,172.20.64.2/31"),
        "{csv}"
    );
    assert!(
        err.contains("PF eth_ns0") && err.contains("north-south"),
        "{err}"
    );
    assert!(
        err.contains("--pair-gpus"),
        "connectedGPU is not pointed at pairing: {err}"
    );
    // IPv6: a /64 per node, host ::1, leaf ::2; plane 1 of rail 1 is fd02:1:100::/40.
    let csv6 = ok(&[
        "--from-launch-kit",
        &format!("{LAUNCH_KIT}/spectrum-x-two-planes.yaml"),
        "--layout",
        "spectrum-x-ipv6",
        "--emit",
        "csv",
    ]);
    assert!(
        csv6.contains("gb300-2,rail1-p1,fd02:1:100:2::1,fd02:1:100:2::2,fd02:1:100:2::/64"),
        "{csv6}"
    );
}

#[test]
fn a_launch_kit_config_that_cannot_be_a_plan_is_refused_naming_why() {
    let dir = tempfile::Builder::new()
        .prefix("railcni-launch-kit-")
        .tempdir()
        .unwrap();
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(LAUNCH_KIT)
            .join("cluster-config.yaml"),
    )
    .unwrap();
    let second_group = "  - identifier: other\n    linkType: Ethernet\n    pfs:\n      - {pciAddress: \"0000:05:00.0\", networkInterface: ens5f0np0, traffic: east-west, rail: 0}\n      - {pciAddress: \"0000:85:00.0\", networkInterface: ens133np0, traffic: east-west, rail: 1}\n    workerNodes: [cloud-dev-50]\n";
    for (name, text, layout, said) in [
        (
            "ib",
            base.replace("linkType: Ethernet", "linkType: InfiniBand"),
            "nv-ipam",
            "InfiniBand",
        ),
        (
            "no-ipam",
            base.replace("nvIpam:", "notNvIpam:"),
            "nv-ipam",
            "no nvIpam section",
        ),
        (
            "two-groups",
            format!("{base}{second_group}"),
            "spectrum-x",
            "the same netdev on every node",
        ),
        (
            "no-rails",
            base.replace("traffic: east-west", "traffic: north-south"),
            "nv-ipam",
            "no east-west PF",
        ),
    ] {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, text).unwrap();
        let (success, _, err) = plan(&[
            "--from-launch-kit",
            path.to_str().unwrap(),
            "--layout",
            layout,
            "--emit",
            "csv",
        ]);
        assert!(!success, "{name} was imported");
        assert!(err.contains(said), "{name}: {err}");
    }
}

/// The table holds every `--layout` the launch-kit import takes, and every
/// plan key that decides addresses is used by some hand-written row (the
/// others are named here as not deciding them).
#[test]
fn every_layout_and_addressing_key_is_in_the_table() {
    let help = ctl_in(repo(), &["plan", "--help"]);
    let layouts: Vec<&str> = help
        .split("--layout")
        .nth(1)
        .and_then(|rest| rest.split("[default:").next())
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert!(!layouts.is_empty(), "{help}");
    for layout in &layouts {
        for file in ["cluster-config.yaml", "spectrum-x-swplb"] {
            let listed = ROWS.iter().any(
                |r| matches!(r.from, From::LaunchKit(f, l) if f.contains(file) && l == *layout),
            );
            // nv-ipam needs the config's nvIpam section, which swplb has not.
            assert!(
                listed || (*layout == "nv-ipam" && file != "cluster-config.yaml"),
                "launch-kit layout {layout} of {file} is not in the table"
            );
        }
    }
    const NOT_ADDRESSING: &[&str] = &[
        "name",
        "cidr",
        "role",
        "resourceName",
        "mtu",
        "checks",
        "rdma",
        "pf",
        "dpdk",
        "rdmaQos",
        "planeCidrs",
        "perNodePrefix",
        "routes",
    ];
    let schema = std::fs::read_to_string(repo().join("ctl/src/fabric/schema.rs")).unwrap();
    let file = syn::parse_file(&schema).unwrap();
    let rail = file
        .items
        .iter()
        .find_map(|i| match i {
            syn::Item::Struct(s) if s.ident == "Rail" => Some(s),
            _ => None,
        })
        .unwrap();
    for field in &rail.fields {
        let skipped = field.attrs.iter().any(|a| {
            a.path().is_ident("serde")
                && quote_of(a).contains("skip")
                && !quote_of(a).contains("skip_serializing_if")
        });
        if skipped {
            continue;
        }
        let key = camel(&field.ident.as_ref().unwrap().to_string());
        let used = ROWS
            .iter()
            .any(|r| matches!(r.from, From::Plan(p) if p.contains(&format!("{key}:"))))
            || STATICS.contains(&format!("{key}:"));
        assert!(
            used || NOT_ADDRESSING.contains(&key.as_str()),
            "plan key {key} is in no row of the plan-to-ADD table: add a layout using it"
        );
    }
}

fn quote_of(a: &syn::Attribute) -> String {
    match &a.meta {
        syn::Meta::List(l) => l.tokens.to_string(),
        _ => String::new(),
    }
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// NADs without a resource name are what Multus cannot use (#59): an
/// import's are refused naming the key, a hand-written plan's are said on
/// stderr (dra-driver-sriov needs none).
#[test]
fn nads_that_lack_a_resource_name_are_said_or_refused() {
    let out = Command::new(ctl())
        .args([
            "plan",
            "--from-cidrpool",
            "cni-conf/nv-ipam-cidrpool.yaml",
            "--emit",
            "nads",
        ])
        .current_dir(repo())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rail1") && err.contains("resourceName"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let work = tempfile::tempdir().unwrap();
    let plan = work.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "rails:\n  - {name: rail1, cidr: 172.16.0.0/15}\nnodes: {gpu-0: 0}\n",
    )
    .unwrap();
    for emit in ["nads", "pod"] {
        let out = Command::new(ctl())
            .args(["plan", plan.to_str().unwrap(), "--emit", emit])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            err.contains("rails rail1 have no SR-IOV resource name")
                && err.contains("resourceName"),
            "{emit}: {err}"
        );
    }
}
