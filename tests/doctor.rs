//! `railcnictl doctor` on the fake node: what the emulated node cannot
//! show (mlx5 RDMA devices and the RDMA namespace mode, InfiniBand PFs,
//! Multus), the report's shape and exit codes, and the plan as the
//! expectation. The links real drivers break are in
//! tests/vm/scenarios/doctor.sh. Needs root.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// A healthy two-rail node: IOMMU groups, the kernel command line, RDMA in
/// exclusive mode and persisted, an RDMA device per VF, both binaries.
struct Doctor {
    node: Node,
    root: PathBuf,
}

impl Doctor {
    fn new() -> Doctor {
        let node = Node::new(2, 2);
        let root = node.dir.path().join("doctor");
        for dir in ["bin", "net.d", "host/proc", "host/etc/modprobe.d"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::create_dir_all(node.sysfs().join("kernel/iommu_groups/0")).unwrap();
        std::fs::write(
            root.join("host/proc/cmdline"),
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt\n",
        )
        .unwrap();
        std::fs::write(
            root.join("host/etc/modprobe.d/ib_core.conf"),
            "options ib_core netns_mode=0\n",
        )
        .unwrap();
        let built = Path::new(PLUGIN).parent().unwrap();
        for b in ["railcni", "railcni-ipam"] {
            std::os::unix::fs::symlink(built.join(b), root.join("bin").join(b)).unwrap();
        }
        node.set_hardware(json!({"rdmaMode": "exclusive"}));
        for (i, vf) in node.vfs.iter().enumerate() {
            node.give_rdma_device(vf, &format!("mlx5_{i}"));
        }
        let d = Doctor { node, root };
        d.node_file(json!({
            "rail1": {"prefix": "172.16.0.0/31", "pf": "pf1", "mtu": 9000, "rdma": "required"},
            "rail2": {"prefix": "172.18.0.0/31", "pf": "pf2", "mtu": 9000},
        }));
        d
    }

    fn node_file(&self, networks: Value) {
        let file = json!({"version": 1, "nodeName": "gpu-0", "networks": networks});
        std::fs::write(self.root.join("node.json"), file.to_string()).unwrap();
    }

    fn args(&self) -> Vec<String> {
        let at = |p: &str| self.root.join(p).display().to_string();
        [
            "doctor",
            "--node-file",
            &at("node.json"),
            "--cni-bin-dir",
            &at("bin"),
            "--cni-conf-dir",
            &at("net.d"),
            "--host-root",
            &at("host"),
        ]
        .map(String::from)
        .to_vec()
    }

    /// Exit code and the JSON report.
    fn run(&self) -> (i32, Value) {
        let args = self.args();
        self.node
            .operator_json(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report:#}"))
}

fn first_broken(report: &Value) -> String {
    report["firstBroken"]["check"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_healthy_node_passes_every_link_in_chain_order() {
    let d = Doctor::new();
    let (code, report) = d.run();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["healthy"], true);
    assert_eq!(report["node"], "gpu-0");
    assert!(report["firstBroken"].is_null());
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n}: {names:?}"))
    };
    // Kernel, then each rail's NIC and VFs, then RDMA, then the CNI files.
    assert!(at("kernel/iommu") < at("rail1/pf"));
    assert!(at("rail1/pf") < at("rail1/pf-link") && at("rail1/pf-link") < at("rail1/vfs"));
    assert!(at("rail1/vf-drivers") < at("rail2/pf"));
    assert!(at("rail2/free-vfs") < at("rdma/netns-mode"));
    assert!(at("rdma/netns-mode") < at("cni/railcni"));
    assert!(at("cni/node-file") < at("multus/config"));
    assert!(check(&report, "kernel/iommu")["found"]
        .as_str()
        .unwrap()
        .contains("intel_iommu=on iommu=pt"));
    assert_eq!(check(&report, "rail1/rdma-devices")["result"], "ok");
    assert_eq!(
        check(&report, "rail1/free-vfs")["found"],
        "2 of 2 VFs free, 0 attached"
    );
    // Multus is reported, not required.
    assert_eq!(check(&report, "multus/config")["result"], "skipped");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn rdma_links_mlx5_cannot_show_on_igb() {
    let d = Doctor::new();
    // Shared mode with a rail that requires RDMA.
    d.node.set_hardware(json!({"rdmaMode": "shared"}));
    let (code, report) = d.run();
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "rdma/netns-mode"),
        "{report:#}"
    );
    assert!(report["firstBroken"]["fix"]
        .as_str()
        .unwrap()
        .contains("rdma system set netns exclusive"));

    // Exclusive now, but a reboot would bring shared back.
    d.node.set_hardware(json!({"rdmaMode": "exclusive"}));
    std::fs::remove_file(d.root.join("host/etc/modprobe.d/ib_core.conf")).unwrap();
    let (code, report) = d.run();
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "rdma/netns-mode-persisted")
    );
    assert!(report["firstBroken"]["fix"]
        .as_str()
        .unwrap()
        .contains("options ib_core netns_mode=0"));
    std::fs::write(
        d.root.join("host/etc/modprobe.d/rdma.conf"),
        "# railcni\noptions ib_core netns_mode=0\n",
    )
    .unwrap();

    // A VF without an RDMA device: broken where required, fine where auto.
    let vf = d.node.vfs.iter().find(|v| v.rail == 1).unwrap();
    let dev = d
        .node
        .sysfs()
        .join(format!("devices/pci0000:00/{}/infiniband", vf.pci));
    std::fs::remove_dir_all(&dev).unwrap();
    let (code, report) = d.run();
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "rail1/rdma-devices")
    );
    assert_eq!(
        report["firstBroken"]["found"],
        "1 of 2 VFs have one; rdma: required fails ADD on the others"
    );
    d.node_file(json!({
        "rail1": {"prefix": "172.16.0.0/31", "pf": "pf1"},
        "rail2": {"prefix": "172.18.0.0/31", "pf": "pf2", "rdma": "off"},
    }));
    let (code, report) = d.run();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        check(&report, "rail1/rdma-devices")["found"],
        "1 of 2 VFs have one"
    );

    // No RDMA anywhere and none required: the RDMA links do not apply.
    for vf in &d.node.vfs {
        let _ = std::fs::remove_dir_all(
            d.node
                .sysfs()
                .join(format!("devices/pci0000:00/{}/infiniband", vf.pci)),
        );
    }
    let (code, report) = d.run();
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(check(&report, "rdma/netns-mode")["result"], "skipped");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn an_infiniband_pf_multus_and_the_plan() {
    let d = Doctor::new();
    // An InfiniBand PF (ARPHRD_INFINIBAND) is a rail's PF like any other.
    let pf1 = d.node.sysfs().join("class/net/pf1");
    std::fs::write(pf1.join("type"), "32\n").unwrap();
    let (code, report) = d.run();
    assert_eq!(code, 0, "{report:#}");
    assert!(check(&report, "rail1/pf")["found"]
        .as_str()
        .unwrap()
        .contains("InfiniBand"));

    // Multus found, and its binDir without railcni: Multus could not run it.
    let empty = d.root.join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let multus = json!({"cniVersion": "0.3.1", "name": "multus-cni-network", "type": "multus-shim",
                        "binDir": empty.display().to_string()});
    std::fs::write(d.root.join("net.d/00-multus.conf"), multus.to_string()).unwrap();
    let (code, report) = d.run();
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "multus/bin-dir")
    );
    assert_eq!(check(&report, "multus/config")["result"], "ok");
    std::fs::remove_file(d.root.join("net.d/00-multus.conf")).unwrap();

    // The plan as the expectation: its rails' pf, MTU and rdma.
    let plan = d.root.join("plan.yaml");
    std::fs::write(
        &plan,
        "rails:\n  - {name: rail1, cidr: 172.16.0.0/15, pf: pf1, mtu: 9100}\n  - {name: rail2, cidr: 172.18.0.0/15, pf: pf2}\nnodes: [gpu-0]\n",
    )
    .unwrap();
    let mut args = d.args();
    args.splice(1..3, ["--plan".to_string(), plan.display().to_string()]);
    args.push("--json".into());
    let (code, out, err) = d
        .node
        .operator(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "rail1/pf-mtu"),
        "{report:#}"
    );
    assert!(report["checkedAgainst"]
        .as_str()
        .unwrap()
        .starts_with("plan "));
    assert_eq!(
        report["firstBroken"]["fix"],
        "ip link set pf1 mtu 9100 (and persist it in the node's network config)"
    );
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_human_report_names_the_first_broken_link_and_exits_1() {
    let d = Doctor::new();
    std::fs::remove_file(d.root.join("bin/railcni")).unwrap();
    let args = d.args();
    let (code, out, _) = d
        .node
        .operator(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("✓  kernel/iommu") || out.contains("✓ kernel/iommu"),
        "{out}"
    );
    assert!(out.contains("✗"), "{out}");
    assert!(out.contains("first broken link: cni/railcni:"), "{out}");
    assert!(out.contains("fix: railcnictl install"), "{out}");
    // Bad usage: 2.
    let (code, _, err) = d
        .node
        .operator(&["doctor", "--plan", "x", "--node-file", "y"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = d
        .node
        .operator(&["doctor", "--plan", "/nonexistent/plan.yaml"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_binary_that_never_answers_is_a_broken_link_not_a_hang() {
    let d = Doctor::new();
    let fake = d.root.join("bin/railcni");
    std::fs::remove_file(&fake).unwrap();
    std::fs::write(&fake, "#!/bin/sh\nexec sleep 600\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let (code, report) = d.run();
    // A guard against hanging, not a speed goal: the binary gets 5 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(
        (code, first_broken(&report).as_str()),
        (1, "cni/railcni"),
        "{report:#}"
    );
    assert!(report["firstBroken"]["found"]
        .as_str()
        .unwrap()
        .contains("does not say it is railcni"));
}

#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn no_iommu_is_advice_without_dpdk_rails_and_broken_with_one() {
    let d = Doctor::new();
    std::fs::remove_dir_all(d.node.sysfs().join("kernel/iommu_groups")).unwrap();
    std::fs::write(
        d.root.join("host/proc/cmdline"),
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1\n",
    )
    .unwrap();
    // Netdev rails only: pods attach without an IOMMU, so the node is healthy.
    let (code, report) = d.run();
    assert_eq!(code, 0, "{report:#}");
    let iommu = check(&report, "kernel/iommu");
    assert_eq!(iommu["result"], "skipped", "{iommu:#}");
    assert!(iommu["fix"].as_str().unwrap().contains("DPDK"), "{iommu:#}");
    // A DPDK (vfio-pci) rail needs it: now it is the first broken link.
    d.node_file(json!({
        "rail1": {"prefix": "172.16.0.0/31", "pf": "pf1", "mtu": 9000, "rdma": "required"},
        "rail2": {"prefix": "172.18.0.0/31", "pf": "pf2", "mtu": 9000, "dpdk": true},
    }));
    let (code, report) = d.run();
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(check(&report, "kernel/iommu")["result"], "broken");
    assert_eq!(first_broken(&report), "kernel/iommu");
}

/// A RoCE rail with `rdmaQoS`: the PF must trust its DSCP and keep that
/// DSCP's priority lossless. Each way it is not is named with the `dcb`
/// command that sets it; a PF without DCB says so.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_pf_half_of_a_rails_roce_qos() {
    let d = Doctor::new();
    d.node_file(json!({
        "rail1": {"prefix": "172.16.0.0/31", "pf": "pf1", "mtu": 9000, "rdma": "required",
                  "rdmaQoS": {"tos": 96, "tc": 96}},
        "rail2": {"prefix": "172.18.0.0/31", "pf": "pf2", "mtu": 9000},
    }));
    let run = |dcb: Value| {
        d.node
            .set_hardware(json!({"rdmaMode": "exclusive", "dcb": dcb}));
        let (code, report) = d.run();
        (code, check(&report, "rail1/roce-qos").clone(), report)
    };
    let (code, c, report) = run(json!({"pf1": {"pfc": [3], "dscpPrio": {"24": 3}}}));
    assert_eq!((code, &c["result"]), (0, &json!("ok")), "{report:#}");
    assert_eq!(c["found"], "PF pf1: DSCP 24 → priority 3, PFC on");
    assert!(
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["check"] != "rail2/roce-qos"),
        "a rail without rdmaQoS has nothing to check"
    );

    let (code, c, _) = run(json!({"pf1": {"pfc": [4], "dscpPrio": {"24": 3}}}));
    assert_eq!((code, &c["result"]), (1, &json!("broken")));
    assert_eq!(c["fix"], "dcb pfc set dev pf1 prio-pfc 3:on");

    let (code, c, _) = run(json!({"pf1": {"pfc": [3], "dscpPrio": {"26": 3}}}));
    assert_eq!((code, &c["result"]), (1, &json!("broken")));
    assert!(
        c["found"]
            .as_str()
            .unwrap()
            .contains("maps no priority to DSCP 24"),
        "{c}"
    );
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .starts_with("dcb app add dev pf1 dscp-prio 24:"),
        "{c}"
    );

    let (code, c, _) = run(json!({}));
    assert_eq!((code, &c["result"]), (1, &json!("broken")));
    assert!(c["found"].as_str().unwrap().contains("no DCB"), "{c}");
}

/// The DCB query against the real kernel (no fake): a veth's driver has
/// no DCB and answers EOPNOTSUPP, which the doctor names as such; a PF that
/// does not exist is ENODEV. (A reply with PFC and a DSCP map needs a DCB
/// driver, mlx5 or ixgbe; its decoding is tested on replies built as the
/// kernel builds them, `net::dcb`.)
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_dcb_query_reaches_the_kernel() {
    require_root();
    let ns = format!("rcdcb{}", std::process::id());
    let made = sh_ok(&format!(
        "ip netns add {ns} && ip -n {ns} link add pfd0 type veth peer name pfd1"
    ));
    let asked = dcb_errnos(&ns);
    sh_ok(&format!("ip netns del {ns}"));
    assert!(made, "could not make {ns}");
    let (veth, missing) = asked.unwrap();
    assert_eq!(veth, Some(nix::errno::Errno::EOPNOTSUPP));
    assert_eq!(missing, Some(nix::errno::Errno::ENODEV));
}

/// The errnos of `dcb::read` for a veth and for a name nothing has, asked
/// from inside `ns`.
type Errnos = (Option<nix::errno::Errno>, Option<nix::errno::Errno>);

fn dcb_errnos(ns: &str) -> Result<Errnos, String> {
    let netns = railcni::net::NetNs::open(Path::new(&format!("/var/run/netns/{ns}")))
        .map_err(|e| e.to_string())?;
    let errno = |name: &str| match netns.run(|| railcni::net::dcb::read(name)) {
        Ok(dcb) => Err(format!("{name} answered {dcb:?}")),
        Err(e) => Ok(e.errno()),
    };
    Ok((errno("pfd0")?, errno("nosuch0")?))
}

/// A railcni config in the node's CNI dir with a key one edit from one it
/// reads: the doctor names the file, the key and the likely one (advice,
/// not a broken link: railcni ignores the key, as CNI plugins do).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_near_miss_key_in_the_nodes_cni_files_is_named() {
    let d = Doctor::new();
    let (_, report) = d.run();
    assert_eq!(
        check(&report, "cni/config-keys")["result"],
        "skipped",
        "no railcni config yet"
    );
    let conflist = json!({"cniVersion": "1.1.0", "name": "rail1", "plugins": [
        {"type": "railcni", "deviceID": "0000:11:00.2", "mut": 9000,
         "ipam": {"type": "railcni-ipam", "cidr": "172.16.0.0/15"}}]});
    let path = d.root.join("net.d/10-rail1.conflist");
    std::fs::write(&path, conflist.to_string()).unwrap();
    let (code, report) = d.run();
    let found = check(&report, "cni/config-keys");
    let said = found["found"].as_str().unwrap_or("");
    assert!(
        said.contains("10-rail1.conflist") && said.contains("\"mut\" (did you mean \"mtu\"?)"),
        "{found}"
    );
    assert!(
        found["fix"]
            .as_str()
            .is_some_and(|f| f.contains("correct the key")),
        "{found}"
    );
    assert_eq!(code, 0, "advice is not a broken link: {report:#}");
}

/// A node file that names another node: the fix writes the file in use
/// (here --node-file's), not the default path.
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn the_node_files_fix_names_the_file_in_use() {
    let d = Doctor::new();
    let file = json!({"version": 1, "nodeName": "gpu-9", "networks": {}});
    std::fs::write(d.root.join("node.json"), file.to_string()).unwrap();
    let (_, report) = d.run();
    let finding = check(&report, "cni/node-file");
    assert_eq!(finding["result"], "broken", "{finding}");
    let fix = finding["fix"].as_str().unwrap_or("");
    let in_use = d.root.join("node.json").display().to_string();
    assert!(
        fix.ends_with(&format!("> {in_use}")) && fix.contains("--node gpu-0"),
        "{fix}"
    );
}

/// The rail PF's own RDMA port: not ACTIVE (the subnet manager has not
/// brought an InfiniBand port up) is a broken link with its fix (#60).
#[test]
#[ignore = "root: fake node; scripts/test.sh runs it"]
fn a_rail_pfs_rdma_port_that_is_not_active_is_broken() {
    let d = Doctor::new();
    let ports = d
        .node
        .sysfs()
        .join("devices/pci0000:00/0000:11:00.0/infiniband/mlx5_pf1/ports/1");
    std::fs::create_dir_all(&ports).unwrap();
    std::fs::write(ports.join("state"), "2: INIT\n").unwrap();
    let (code, report) = d.run();
    assert_eq!(code, 1, "{report:#}");
    let port = check(&report, "rail1/rdma-port");
    assert_eq!(port["result"], "broken", "{port}");
    assert!(
        port["found"]
            .as_str()
            .unwrap()
            .contains("mlx5_pf1 port 1 INIT"),
        "{port}"
    );
    assert!(
        port["fix"].as_str().unwrap().contains("subnet manager"),
        "{port}"
    );
    std::fs::write(ports.join("state"), "4: ACTIVE\n").unwrap();
    let (code, report) = d.run();
    assert_eq!(
        check(&report, "rail1/rdma-port")["result"],
        "ok",
        "{report:#}"
    );
    assert_eq!(code, 0, "{report:#}");
}
