//! One plan for the largest clusters: 16,384 nodes × 8 rails from one
//! ConfigMap that carries the plan, not its expansion; each node computes
//! its own node file from it, byte for byte what `--emit node-file` gives.
//! The installer reads the ConfigMap as its volume shows it (one file per
//! key), and still reads the per-node form of earlier releases; a plan
//! that does not validate, or a node it lacks, keeps the last good node
//! file. No root needed.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

/// `nodes` nodes (explicit indexes) × 8 rails of /15s, one /31 each.
fn plan_text(nodes: usize) -> String {
    let mut text = String::from("configMapNamespace: kube-system\nrails:\n");
    for r in 1..=8 {
        text.push_str(&format!(
            "- {{name: rail{r}, cidr: 172.{}.0.0/15, routes: [172.16.0.0/12], mtu: 9000, pf: ens{r}f0np0}}\n",
            14 + 2 * r
        ));
    }
    text.push_str("nodes:\n");
    for i in 0..nodes {
        text.push_str(&format!("  gpu-{i:05}: {i}\n"));
    }
    text
}

fn ctl_run(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(ctl())
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[track_caller]
fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The ConfigMap as its volume shows it: one file per data key.
fn mount_config_map(yaml: &str, dir: &Path) {
    let cm: Value = serde_yaml_ng::from_str(yaml.trim_start_matches("---\n")).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    for (key, value) in cm["data"].as_object().unwrap() {
        std::fs::write(dir.join(key), value.as_str().unwrap()).unwrap();
    }
}

/// `railcnictl install` as the DaemonSet runs it, binaries from the build.
fn install(t: &Path, plan_dir: &Path, node: &str) -> Output {
    let built = Path::new(PLUGIN).parent().unwrap().display().to_string();
    let (file, copy, bin) = (
        t.join("etc/node.json"),
        t.join("lib/node.json"),
        t.join("bin"),
    );
    let state = t.join("state").display().to_string();
    let machine_id = t.join("machine-id");
    std::fs::write(&machine_id, format!("{MACHINE_ID}\n")).unwrap();
    ctl_run(
        &[
            "install",
            "--from",
            &built,
            "--bin-dir",
            bin.to_str().unwrap(),
            "--plan-dir",
            plan_dir.to_str().unwrap(),
            "--node-file",
            file.to_str().unwrap(),
            "--node-file-copy",
            copy.to_str().unwrap(),
            "--json",
        ],
        &[
            ("NODE_NAME", node),
            ("RAILCNI_STATE_DIR", &state),
            ("RAILCNI_MACHINE_ID_FILE", machine_id.to_str().unwrap()),
        ],
    )
}

/// The machine `install` runs on here (its RAILCNI_MACHINE_ID_FILE).
const MACHINE_ID: &str = "5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e";

/// `plan --emit node-file`'s text as the installer writes it: stamped with
/// the machine it writes it on, first of the keys.
fn stamped(emitted: &str) -> String {
    emitted.replacen(
        "{\n",
        &format!("{{\n  \"machineId\": \"{MACHINE_ID}\",\n"),
        1,
    )
}

#[test]
fn sixteen_thousand_nodes_from_one_config_map_each_computing_its_own_file() {
    let t = tempfile::tempdir().unwrap();
    let plan = t.path().join("plan.yaml");
    std::fs::write(&plan, plan_text(16_384)).unwrap();
    let p = plan.to_str().unwrap();
    let cm = stdout_of(&ctl_run(&["plan", p, "--emit", "configmap"], &[]));
    assert!(
        cm.len() <= 512 * 1024,
        "the ConfigMap takes {} bytes",
        cm.len()
    );
    let volume = t.path().join("volume");
    mount_config_map(&cm, &volume);
    for node in ["gpu-00000", "gpu-16383", "gpu-07919"] {
        let expected = stamped(&stdout_of(&ctl_run(
            &["plan", p, "--emit", "node-file", "--node", node],
            &[],
        )));
        let out = install(t.path(), &volume, node);
        stdout_of(&out);
        let computed = std::fs::read_to_string(t.path().join("etc/node.json")).unwrap();
        assert_eq!(computed, expected, "{node}");
        assert_eq!(
            std::fs::read_to_string(t.path().join("lib/node.json")).unwrap(),
            expected
        );
    }
    // The last of them, gpu-07919: index 7919 on rail 1 is 172.16.61.222/31.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("etc/node.json")).unwrap())
            .unwrap();
    assert_eq!(file["networks"]["rail1"]["prefix"], "172.16.61.222/31");
    assert_eq!(file["networks"]["rail8"]["gateway"], "172.30.61.223");
}

/// A 4-node plan's ConfigMap as a volume, and gpu-00002 installed from it.
fn installed_gpu_2() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let plan = t.path().join("plan.yaml");
    std::fs::write(&plan, plan_text(4)).unwrap();
    let volume = t.path().join("volume");
    let cm = ctl_run(
        &["plan", plan.to_str().unwrap(), "--emit", "configmap"],
        &[],
    );
    mount_config_map(&stdout_of(&cm), &volume);
    stdout_of(&install(t.path(), &volume, "gpu-00002"));
    (t, volume)
}

#[test]
fn the_per_node_form_of_earlier_releases_still_installs() {
    let t = tempfile::tempdir().unwrap();
    let old = t.path().join("old");
    std::fs::create_dir_all(&old).unwrap();
    let file = r#"{"version":1,"nodeName":"gpu-1","networks":{"rail1":{"prefix":"172.16.0.2/31","gateway":"172.16.0.3"}}}"#;
    std::fs::write(old.join("gpu-1.json"), file).unwrap();
    stdout_of(&install(t.path(), &old, "gpu-1"));
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("etc/node.json")).unwrap())
            .unwrap();
    let mut expected: Value = serde_json::from_str(file).unwrap();
    expected["machineId"] = MACHINE_ID.into();
    assert_eq!(written, expected, "the same file, stamped for this machine");
}

#[test]
fn a_missing_node_or_a_broken_plan_keeps_the_last_good_node_file() {
    let (t, volume) = installed_gpu_2();
    let good = std::fs::read_to_string(t.path().join("etc/node.json")).unwrap();
    // A node the plan lacks: refused with its name; the file stays.
    let out = install(t.path(), &volume, "gpu-99999");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("gpu-99999"),
        "{out:?}"
    );
    // A plan that no longer validates (two rails overlap): refused, named.
    let broken = std::fs::read_to_string(volume.join("plan.json"))
        .unwrap()
        .replace("172.18.0.0/15", "172.16.0.0/15");
    std::fs::write(volume.join("plan.json"), broken).unwrap();
    let out = install(t.path(), &volume, "gpu-00002");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("overlaps"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path().join("etc/node.json")).unwrap(),
        good
    );
}

#[test]
fn a_prefix_that_pods_hold_does_not_move_under_them() {
    let (t, volume) = installed_gpu_2();
    let good = std::fs::read_to_string(t.path().join("etc/node.json")).unwrap();
    // A pod holds an address on rail 1: leased by railcni-ipam itself.
    let mut ipam = Command::new(Path::new(PLUGIN).with_file_name("railcni-ipam"));
    ipam.env_clear().envs([
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_NETNS", "/proc/1/ns/net"),
        ("CNI_IFNAME", "net1"),
        ("CNI_PATH", "/nonexistent"),
        (
            "RAILCNI_STATE_DIR",
            t.path().join("state").to_str().unwrap(),
        ),
        (
            "RAILCNI_NODE_CONFIG",
            t.path().join("etc/node.json").to_str().unwrap(),
        ),
        ("RAILCNI_LOG_DIR", t.path().join("logs").to_str().unwrap()),
        // The machine the installer stamped the node file for.
        (
            "RAILCNI_MACHINE_ID_FILE",
            t.path().join("machine-id").to_str().unwrap(),
        ),
    ]);
    let conf = serde_json::json!({"cniVersion": "1.0.0", "name": "rail1",
        "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15", "gatewayIndex": 1}});
    let leased = run_with_stdin(ipam, &conf).ok();
    assert_eq!(leased["ips"][0]["address"], "172.16.0.4/31");
    // The new plan gives gpu-00002 index 9: its rail-1 prefix would move.
    let moved = std::fs::read_to_string(volume.join("plan.json"))
        .unwrap()
        .replace("\"gpu-00002\":2", "\"gpu-00002\":9");
    std::fs::write(volume.join("plan.json"), moved).unwrap();
    let out = install(t.path(), &volume, "gpu-00002");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("rail rail1") && said.contains("1 pod"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path().join("etc/node.json")).unwrap(),
        good
    );
}

#[test]
fn plan_names_duplicate_indexes_capacity_and_moved_prefixes() {
    let t = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = t.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let err = |args: &[&str]| {
        let out = ctl_run(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let dup = write(
        "dup.yaml",
        &plan_text(3).replace("gpu-00002: 2", "gpu-00002: 1"),
    );
    let e = err(&["plan", &dup, "--emit", "configmap"]);
    assert!(
        e.contains("\"gpu-00001\" and \"gpu-00002\" share index 1"),
        "{e}"
    );
    let over = write(
        "over.yaml",
        &plan_text(3).replace("gpu-00002: 2", "gpu-00002: 65536"),
    );
    let e = err(&["plan", &over, "--emit", "csv"]);
    assert!(
        e.contains("index 65536, beyond rail rail1's capacity") && e.contains("65536 /31"),
        "{e}"
    );
    let overlap = write(
        "overlap.yaml",
        &plan_text(3).replace("172.18.0.0/15", "172.17.0.0/16"),
    );
    let e = err(&["plan", &overlap, "--emit", "nads"]);
    assert!(e.contains("overlaps"), "{e}");
    let previous = write("previous.yaml", &plan_text(3));
    let moved = write(
        "moved.yaml",
        &plan_text(3).replace("gpu-00001: 1", "gpu-00001: 7"),
    );
    let e = err(&[
        "plan",
        &moved,
        "--emit",
        "configmap",
        "--previous",
        &previous,
    ]);
    assert!(
        e.contains("gpu-00001 on rail1: 172.16.0.2/31 -> 172.16.0.14/31"),
        "{e}"
    );
    // Adding a node moves nobody.
    let grown = write("grown.yaml", &plan_text(4));
    stdout_of(&ctl_run(
        &[
            "plan",
            &grown,
            "--emit",
            "configmap",
            "--previous",
            &previous,
        ],
        &[],
    ));
}

/// The agent follows the mounted ConfigMap: a changed plan gives the node
/// its new file (no pod holds the old prefix); a broken one is logged and
/// the last good file kept.
#[test]
fn the_agent_recomputes_the_node_file_when_the_config_map_changes() {
    let (t, volume) = installed_gpu_2();
    let file = t.path().join("etc/node.json");
    let prefix = |f: &Path| -> String {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        v["networks"]["rail1"]["prefix"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(prefix(&file), "172.16.0.4/31");
    let state = t.path().join("state").display().to_string();
    let mut agent = Killed(Some(
        Command::new(ctl())
            .args([
                "agent",
                "--listen",
                "127.0.0.1:0",
                "--plan-dir",
                volume.to_str().unwrap(),
            ])
            .args([
                "--plan-interval",
                "100ms",
                "--doctor-interval",
                "1h",
                "--node",
                "gpu-00002",
            ])
            .args(["--node-file", file.to_str().unwrap()])
            .args([
                "--node-file-copy",
                t.path().join("lib/node.json").to_str().unwrap(),
            ])
            .env_clear()
            .envs([
                ("RAILCNI_STATE_DIR", state.as_str()),
                ("RAILCNI_LOG_DIR", state.as_str()),
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let plan = volume.join("plan.json");
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replace("\"gpu-00002\":2", "\"gpu-00002\":7")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while prefix(&file) != "172.16.0.14/31" {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent did not follow the plan"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(prefix(&t.path().join("lib/node.json")), "172.16.0.14/31");
    // A plan that no longer reads: the file stays as it is.
    std::fs::write(&plan, "{not a plan").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(prefix(&file), "172.16.0.14/31");
    agent.kill();
    let out = agent.take().wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("keeping the node file"), "{log}");
}

/// A child killed when dropped, a failed assertion included.
struct Killed(Option<std::process::Child>);

impl Killed {
    fn kill(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
        }
    }

    fn take(&mut self) -> std::process::Child {
        self.0.take().expect("the child")
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `railcnictl install` by hand: `--plan-dir` given the ConfigMap as
/// `kubectl get -o yaml` (or `plan --emit configmap`) writes it, and
/// `--node-file-copy ""` for no copy, as `--help` says.
#[test]
fn install_by_hand_from_the_config_map_manifest_without_a_copy() {
    let t = tempfile::tempdir().unwrap();
    let plan = t.path().join("plan.yaml");
    std::fs::write(&plan, plan_text(4)).unwrap();
    let manifest = t.path().join("railcni-plan.yaml");
    let cm = stdout_of(&ctl_run(
        &["plan", plan.to_str().unwrap(), "--emit", "configmap"],
        &[],
    ));
    std::fs::write(&manifest, &cm).unwrap();
    let built = Path::new(PLUGIN).parent().unwrap().display().to_string();
    let (file, bin) = (t.path().join("etc/node.json"), t.path().join("bin"));
    let machine_id = t.path().join("machine-id");
    std::fs::write(&machine_id, format!("{MACHINE_ID}\n")).unwrap();
    let state = t.path().join("state").display().to_string();
    let out = ctl_run(
        &[
            "install",
            "--from",
            &built,
            "--bin-dir",
            bin.to_str().unwrap(),
            "--plan-dir",
            manifest.to_str().unwrap(),
            "--node",
            "gpu-00001",
            "--node-file",
            file.to_str().unwrap(),
            "--node-file-copy",
            "",
        ],
        &[
            ("RAILCNI_STATE_DIR", &state),
            ("RAILCNI_MACHINE_ID_FILE", machine_id.to_str().unwrap()),
        ],
    );
    let said = stdout_of(&out);
    assert_eq!(
        said.matches("wrote ").count(),
        1,
        "one node file, no copy: {said}"
    );
    let expected = stamped(&stdout_of(&ctl_run(
        &[
            "plan",
            plan.to_str().unwrap(),
            "--emit",
            "node-file",
            "--node",
            "gpu-00001",
        ],
        &[],
    )));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    assert!(bin.join("railcni").exists());
    let v: Value = serde_json::from_str(&stdout_of(&ctl_run(
        &[
            "install",
            "--from",
            &built,
            "--bin-dir",
            bin.to_str().unwrap(),
            "--plan-dir",
            manifest.to_str().unwrap(),
            "--node",
            "gpu-00001",
            "--node-file",
            file.to_str().unwrap(),
            "--node-file-copy=",
            "--json",
        ],
        &[
            ("RAILCNI_STATE_DIR", &state),
            ("RAILCNI_MACHINE_ID_FILE", machine_id.to_str().unwrap()),
        ],
    )))
    .unwrap();
    assert_eq!(v["nodeFileCopy"], Value::Null, "no copy: {v}");
}
