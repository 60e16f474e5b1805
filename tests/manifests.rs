//! The shipped manifests hold what they say (#46): no container is
//! privileged or can gain privileges, every one drops ALL capabilities and
//! runs on a read-only root with the runtime's seccomp profile (that the
//! agent listens on loopback only, kube-rbac-proxy serves it over TLS and
//! the ServiceMonitor scrapes https with a token is tests/prometheus.rs's,
//! which also runs them). And every object of
//! deploy/*.yaml validates against the schema its consumer uses
//! (scripts/validate-k8s.py: the Kubernetes schemas, strict; upstream CRDs
//! in tests/fixtures/crds/), which refuses an unknown field, a wrong type
//! and a wrong kind.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn deploy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(name)
}

fn objects(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy(name)).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn daemonset_pod() -> Value {
    objects("daemonset.yaml")
        .into_iter()
        .find(|o| o["kind"] == "DaemonSet")
        .unwrap()["spec"]["template"]["spec"]
        .clone()
}

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
fn no_container_is_privileged_and_each_drops_every_capability() {
    let pod = daemonset_pod();
    let containers: Vec<&Value> = pod["initContainers"]
        .as_array()
        .unwrap()
        .iter()
        .chain(pod["containers"].as_array().unwrap())
        .collect();
    assert_eq!(containers.len(), 3, "install, agent, kube-rbac-proxy");
    for c in containers {
        let name = c["name"].as_str().unwrap();
        let sc = &c["securityContext"];
        assert_ne!(sc["privileged"], true, "{name} is privileged");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{name}");
        assert_eq!(
            sc["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{name}"
        );
        let added: Vec<&str> = sc["capabilities"]["add"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let allowed: &[&str] = match name {
            "agent" => &["NET_ADMIN", "SYS_ADMIN", "NET_RAW"],
            _ => &[],
        };
        assert_eq!(
            added, allowed,
            "{name} adds back more than it was shown to use"
        );
    }
}

#[test]
fn host_paths_are_read_only_where_nothing_writes_them() {
    let pod = daemonset_pod();
    let agent = pod["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "agent")
        .unwrap();
    // What the agent writes: state (records, leases, logs, counts), the
    // node file, a re-attached rail's sysctls, rdma_cm's ToS (configfs).
    // The pods' namespaces it only opens (setns needs no write).
    let written = ["state", "railcni-etc", "proc-sys-net", "configfs"];
    for m in agent["volumeMounts"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        if !written.contains(&name) {
            assert_eq!(m["readOnly"], true, "the agent mounts {name} writable");
        }
    }
    let volumes = pod["volumes"].as_array().unwrap();
    assert!(
        volumes
            .iter()
            .all(|v| v["hostPath"]["path"] != "/sys" && v["hostPath"]["path"] != "/dev"),
        "a host /sys or /dev is mounted: {volumes:?}"
    );
    assert_ne!(pod["hostPID"], true);
    assert_ne!(pod["hostIPC"], true);
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

const ONE_PLANE: &str = "rails:\n\
    - {name: rail0, cidr: 172.16.0.0/15, pf: ens1f0np0, mtu: 9000, resourceName: nvidia.com/rail_0}\n\
    - {name: rail1, cidr: 172.18.0.0/15, pf: ens2f0np0, mtu: 9000, cidr6: 'fd02:0001::/40', perNodePrefix6: 64}\n\
    - {name: storage0, cidr: 10.200.0.0/16, role: storage, pf: ens9f0np0}\n\
    nodes: [gpu-0, gpu-1, gpu-2]\n";

const TWO_PLANES: &str = "rails:\n\
    - {name: rail0, cidr: 172.16.0.0/15, planes: 2, pf: [eth_r0_p0, eth_r0_p1], mtu: 9000}\n\
    - {name: rail1, cidr: 172.18.0.0/15, planes: 2, pf: [eth_r1_p0, eth_r1_p1], mtu: 9000}\n\
    nodes: {gpu-0: 0, gpu-1: 1}\n";

/// `railcnictl plan` of `plan` with `args`: its stdout, written to `dir/name`.
fn emit(dir: &Path, name: &str, plan: &str, args: &[&str]) -> PathBuf {
    let plan_file = dir.join(format!("{name}.plan.yaml"));
    std::fs::write(&plan_file, plan).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, plan_emit(&plan_file, args)).unwrap();
    path
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

/// The CEL of every emitted claim names only attributes that exist: those
/// dra-driver-sriov publishes itself (HEAD cd9404f, pkg/consts/consts.go) or that an
/// emitted DeviceAttributes gives.
#[test]
fn claims_select_only_attributes_the_driver_or_the_emitted_attributes_give() {
    const PUBLISHED: [&str; 14] = [
        "sriovnetwork.k8snetworkplumbingwg.io/pciAddress",
        "sriovnetwork.k8snetworkplumbingwg.io/PFName",
        "sriovnetwork.k8snetworkplumbingwg.io/EswitchMode",
        "sriovnetwork.k8snetworkplumbingwg.io/vendor",
        "sriovnetwork.k8snetworkplumbingwg.io/deviceID",
        "sriovnetwork.k8snetworkplumbingwg.io/pfDeviceID",
        "sriovnetwork.k8snetworkplumbingwg.io/vfID",
        "sriovnetwork.k8snetworkplumbingwg.io/linkType",
        "sriovnetwork.k8snetworkplumbingwg.io/rdmaCapable",
        "sriovnetwork.k8snetworkplumbingwg.io/pfPciAddress",
        "k8s.cni.cncf.io/deviceID",
        "resource.kubernetes.io/pciBusID",
        "resource.kubernetes.io/pcieRoot",
        "dra.net/numaNode",
    ];
    let dir = tempfile::Builder::new()
        .prefix("railcni-cel-")
        .tempdir()
        .unwrap();
    for plan in [ONE_PLANE, TWO_PLANES] {
        let path = emit(dir.path(), "dra", plan, &["--emit", "dra", "--pair-gpus"]);
        let text = std::fs::read_to_string(path).unwrap();
        let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let given: Vec<String> = (docs.iter())
            .filter(|d| d["kind"] == "DeviceAttributes")
            .flat_map(|d| {
                d["spec"]["attributes"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut named = 0;
        for claim in docs.iter().filter(|d| d["kind"] == "ResourceClaimTemplate") {
            let devices = &claim["spec"]["spec"]["devices"];
            for request in devices["requests"].as_array().unwrap() {
                for selector in request["exactly"]["selectors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let cel = selector["cel"]["expression"].as_str().unwrap();
                    // device.attributes["DOMAIN"].NAME
                    for part in cel.split("device.attributes[\"").skip(1) {
                        let (domain, rest) = part.split_once("\"].").unwrap();
                        let name: String = rest
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric())
                            .collect();
                        let attribute = format!("{domain}/{name}");
                        assert!(
                            PUBLISHED.contains(&attribute.as_str()) || given.contains(&attribute),
                            "{cel} names {attribute}, which nothing publishes"
                        );
                        named += 1;
                    }
                }
            }
            for c in devices["constraints"].as_array().into_iter().flatten() {
                let attribute = c["matchAttribute"].as_str().unwrap();
                assert!(PUBLISHED.contains(&attribute), "{attribute}");
            }
        }
        assert!(named > 0, "no claim selected anything");
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
