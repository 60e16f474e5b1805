//! Every object of deploy/*.yaml, of `railcnictl plan`'s emits and of the
//! examples validates against the schema its consumer uses
//! (scripts/validate-k8s.py: the Kubernetes schemas, strict; upstream CRDs
//! in tests/fixtures/crds/), which refuses an unknown field, a wrong type
//! and a wrong kind. Needs python3's kubernetes-validate, which
//! scripts/test.sh installs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::deploy::{deploy, emit, ONE_PLANE, TWO_PLANES};
use common::*;

/// validate-k8s.py over `files`: (passed, what it printed).
fn validate(files: &[&Path]) -> (bool, String) {
    let out = Command::new(script("validate-k8s.py"))
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
#[ignore = "Kubernetes schemas: python3 kubernetes-validate, which scripts/test.sh installs and runs it"]
fn every_shipped_object_validates_against_its_schema() {
    let files = ["daemonset.yaml", "rbac.yaml", "servicemonitor.yaml"].map(deploy);
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (ok, out) = validate(&refs);
    assert!(ok, "{out}");
    // Every object was checked, the ServiceMonitor against its CRD.
    assert_eq!(out.matches(": valid").count(), 8, "{out}");
}

/// The validator is strict: each kind of mistake in a copy of a shipped
/// manifest is refused, naming the field.
#[test]
#[ignore = "Kubernetes schemas: python3 kubernetes-validate, which scripts/test.sh installs and runs it"]
fn the_validator_refuses_an_unknown_field_a_wrong_type_and_a_wrong_kind() {
    let dir = tempfile::Builder::new()
        .prefix("railcni-manifests-")
        .tempdir()
        .unwrap();
    let ds = std::fs::read_to_string(deploy("daemonset.yaml")).unwrap();
    let sm = std::fs::read_to_string(deploy("servicemonitor.yaml")).unwrap();
    let cases = [
        (
            "unknown-field.yaml",
            ds.replacen(
                "      hostNetwork: true",
                "      hostNetwork: true\n      hostNetwrok: true",
                1,
            ),
            "hostNetwrok",
        ),
        (
            "wrong-type.yaml",
            ds.replacen("          image: railcni:latest", "          image: 7", 1),
            "image",
        ),
        (
            "wrong-kind.yaml",
            ds.replacen("kind: DaemonSet", "kind: DaemonSets", 1),
            "DaemonSets",
        ),
        (
            "crd-unknown-field.yaml",
            sm.replacen("scheme: https", "scheme: https\n      schem: https", 1),
            "schem",
        ),
        (
            "crd-wrong-type.yaml",
            sm.replacen("scheme: https", "scheme: [https]", 1),
            "scheme",
        ),
    ];
    for (file, text, named) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, &text).unwrap();
        let (ok, out) = validate(&[&path]);
        assert!(!ok, "{file} passed:\n{out}");
        assert!(
            out.lines()
                .any(|l| l.contains("INVALID") && l.contains(named)),
            "{file}: the refusal does not name {named}:\n{out}"
        );
    }
}

/// Everything `plan` emits as Kubernetes objects, for a one-plane, a
/// two-plane and a GPU-paired plan and the plans imported from the launch
/// kit's configs, validates against the schema its
/// consumer uses: the NADs and DRA objects against their CRDs.
#[test]
#[ignore = "Kubernetes schemas: python3 kubernetes-validate, which scripts/test.sh installs and runs it"]
fn every_emit_validates_against_its_consumers_schema() {
    let dir = tempfile::Builder::new()
        .prefix("railcni-emits-")
        .tempdir()
        .unwrap();
    let mut files = Vec::new();
    for (plan_name, plan) in [("one-plane", ONE_PLANE), ("two-planes", TWO_PLANES)] {
        for (emit_name, args) in [
            ("nads", &["--emit", "nads"][..]),
            ("configmap", &["--emit", "configmap"]),
            ("pod", &["--emit", "pod"]),
            ("dra", &["--emit", "dra"]),
            ("dra-gpu", &["--emit", "dra", "--pair-gpus"]),
        ] {
            files.push(emit(
                dir.path(),
                &format!("{plan_name}-{emit_name}"),
                plan,
                args,
            ));
        }
    }
    // And the plans imported from NVIDIA's launch kit configs.
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/launch-kit");
    for (config, layout) in [
        ("cluster-config.yaml", "nv-ipam"),
        ("spectrum-x-two-planes.yaml", "spectrum-x"),
        ("spectrum-x-two-planes.yaml", "spectrum-x-ipv6"),
    ] {
        // A multi-plane Spectrum-X rail has no resource of its own: its
        // NADs and pod are refused (tests/plan.rs), not emitted.
        let multi_plane = config.starts_with("spectrum-x-two-planes");
        let emits: &[&str] = if multi_plane {
            &["configmap", "dra"]
        } else {
            &["nads", "configmap", "pod", "dra"]
        };
        for emit in emits.iter().copied() {
            let out = Command::new(ctl())
                .args(["plan", "--from-launch-kit"])
                .arg(kit.join(config))
                .args(["--layout", layout, "--emit", emit])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let path = dir
                .path()
                .join(format!("kit-{config}-{layout}-{emit}.yaml"));
            std::fs::write(&path, &out.stdout).unwrap();
            files.push(path);
        }
    }
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (ok, out) = validate(&refs);
    assert!(ok, "{out}");
    for kind in [
        "NetworkAttachmentDefinition",
        "SriovResourcePolicy",
        "DeviceAttributes",
        "ResourceClaimTemplate",
        "ConfigMap",
        "Pod",
    ] {
        assert!(
            out.contains(&format!(": {kind} ")),
            "no {kind} was checked:\n{out}"
        );
    }
}

/// The examples the repository shows (cni-conf/, and cni-conf/generated/,
/// which tests/plan.rs holds to what `plan` writes) validate too.
#[test]
#[ignore = "Kubernetes schemas: python3 kubernetes-validate, which scripts/test.sh installs and runs it"]
fn the_example_objects_validate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cni-conf");
    let files: Vec<PathBuf> = [
        "rail1-nad.yaml",
        "nv-ipam-cidrpool.yaml",
        "generated/nads.yaml",
        "generated/configmap.yaml",
        "generated/pod.yaml",
        "generated/dra.yaml",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let (ok, out) = validate(&refs);
    assert!(ok, "{out}");
}
