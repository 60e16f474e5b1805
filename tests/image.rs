//! The installer image: static binaries built offline, `podman build` of
//! deploy/Containerfile (FROM scratch), and its entry point, `railcnictl
//! install`, run against a temp host tree with the plan ConfigMap mounted.
//! Needs root, podman and the static build (scripts/build-static.sh).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::Value;

const STATIC_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/target/x86_64-unknown-linux-gnu/release"
);

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
#[ignore = "root: podman image; scripts/test.sh runs it"]
fn the_installer_image_installs_binaries_and_the_node_file() {
    require_root();
    run(&mut Command::new(script("build-static.sh")));
    for b in ["railcni", "railcni-ipam", "railcnictl"] {
        let ldd = Command::new("ldd")
            .arg(Path::new(STATIC_DIR).join(b))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&ldd.stdout).to_string()
            + &String::from_utf8_lossy(&ldd.stderr);
        assert!(
            said.contains("statically linked") || said.contains("not a dynamic executable"),
            "{b}: {said}"
        );
        // The recording fake hardware is a test feature: no shipped binary
        // carries it, so RAILCNI_FAKE_HARDWARE on a node selects nothing.
        let bytes = std::fs::read(Path::new(STATIC_DIR).join(b)).unwrap();
        assert!(
            !bytes.windows(13).any(|w| w == b"fake hardware"),
            "{b} carries the fake hardware"
        );
    }

    // Short paths: podman waits 20 s per call with a long runroot.
    let t = tempfile::Builder::new()
        .prefix("rcpm")
        .tempdir_in("/tmp")
        .unwrap();
    let conf = t.path().join("containers.conf");
    std::fs::write(
        &conf,
        "[engine]\nevents_logger = \"file\"\ncgroup_manager = \"cgroupfs\"\n",
    )
    .unwrap();
    let podman = |args: &[&str]| {
        let mut c = Command::new("podman");
        c.arg("--root")
            .arg(t.path().join("root"))
            .arg("--runroot")
            .arg(t.path().join("rr"))
            .args(args)
            .env("CONTAINERS_CONF", &conf)
            .env("XDG_RUNTIME_DIR", t.path());
        c
    };
    let tag = format!("railcni-test:{}", std::process::id());
    let containerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Containerfile");
    run(&mut podman(&[
        "build",
        "-q",
        "-f",
        containerfile.to_str().unwrap(),
        "-t",
        &tag,
        STATIC_DIR,
    ]));
    let tar = t.path().join("image.tar");
    run(&mut podman(&["save", "-o", tar.to_str().unwrap(), &tag]));

    // Unpack the image as a runtime would see it: config and the one layer.
    let unpacked = t.path().join("image");
    std::fs::create_dir_all(&unpacked).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(&unpacked));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(unpacked.join("manifest.json")).unwrap()).unwrap();
    let config: Value = serde_json::from_slice(
        &std::fs::read(unpacked.join(manifest[0]["Config"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/railcnictl", "install"])
    );
    let layers = manifest[0]["Layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "FROM scratch: one layer, the binaries");
    let rootfs = t.path().join("rootfs");
    std::fs::create_dir_all(&rootfs).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(unpacked.join(layers[0].as_str().unwrap()))
        .arg("-C")
        .arg(&rootfs));
    let mut files: Vec<String> = std::fs::read_dir(&rootfs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["railcni", "railcni-ipam", "railcnictl"]);

    // The mounted ConfigMap: one <node>.json per key, from the example plan.
    let plan_dir = t.path().join("plan");
    std::fs::create_dir_all(&plan_dir).unwrap();
    let cm = run(Command::new(ctl())
        .args(["plan", "cni-conf/plan.yaml", "--emit", "configmap"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear());
    let cm: Value = serde_yaml_ng::from_str(cm.trim_start_matches("---\n")).unwrap();
    for (key, value) in cm["data"].as_object().unwrap() {
        std::fs::write(plan_dir.join(key), value.as_str().unwrap()).unwrap();
    }

    // The image's entry point with the DaemonSet's arguments, on a temp host.
    let host = t.path().join("host");
    let entry = rootfs.join("railcnictl");
    let install = |node: &str| {
        Command::new(&entry)
            .arg("install")
            .arg("--bin-dir")
            .arg(host.join("opt/cni/bin"))
            .arg("--plan-dir")
            .arg(&plan_dir)
            .arg("--node-file")
            .arg(host.join("etc/cni/railcni/node.json"))
            .arg("--node-file-copy")
            .arg(host.join("var/lib/cni/railcni/node.json"))
            .arg("--json")
            .env_clear()
            .env("NODE_NAME", node)
            .output()
            .unwrap()
    };
    let first = install("gpu-1");
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let report: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert!(report["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["action"] == "installed"));
    for b in ["railcni", "railcni-ipam"] {
        let installed = host.join("opt/cni/bin").join(b);
        assert_eq!(
            std::fs::read(&installed).unwrap(),
            std::fs::read(rootfs.join(b)).unwrap()
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&installed).unwrap().permissions(),
        );
        assert_eq!(mode & 0o111, 0o111, "{b} is executable");
    }
    let node_file: Value =
        serde_json::from_slice(&std::fs::read(host.join("etc/cni/railcni/node.json")).unwrap())
            .unwrap();
    assert_eq!(node_file["nodeName"], "gpu-1");
    assert_eq!(node_file["networks"]["rail1"]["prefix"], "172.16.0.2/31");
    // The copy a DRA driver's container (no host /etc) reads: the same file.
    assert_eq!(
        std::fs::read(host.join("var/lib/cni/railcni/node.json")).unwrap(),
        std::fs::read(host.join("etc/cni/railcni/node.json")).unwrap()
    );
    // Again: nothing rewritten. A node the plan lacks: bad usage, named.
    let again: Value = serde_json::from_slice(&install("gpu-1").stdout).unwrap();
    assert!(again["binaries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["action"] == "unchanged"));
    let missing = install("gpu-99");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("gpu-99"));
    let _ = podman(&["rmi", "-f", &tag]).output();
}
